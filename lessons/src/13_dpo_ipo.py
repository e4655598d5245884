# %% [markdown]
# # 13 · DPO and IPO
#
# *Prerequisites:* 00, 10, 12
# *Time:* 50 minutes
# *You will build:* the DPO and IPO losses from the KL-regularised objective, and a tiny language model that learns from preference pairs with no reward model and no sampling during training.

# %% [markdown]
# Lesson 12 aligned a language model in three stages: fit a reward model to preference pairs,
# then run PPO against it with a KL penalty to a frozen reference. That is a lot of machinery:
# a second network, sampling inside the training loop, a value function, four sets of weights in
# memory. This lesson shows that, for the same objective, the preference pairs are enough.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

# %% [markdown]
# The task: a prompt asks to *praise* or *roast* a film, its plot, cast or music; the answer is
# a few words. A hidden annotator prefers, for "praise", the answer with more positive and fewer
# negative words, and the opposite for "roast". `rc.review_task()` holds the vocabulary and this
# annotator (`task.score`), which the model never sees: it only sees which of two answers won.

# %%
task = rc.review_task()
tok = task.tokenizer
print(tok)
print("prompts:", task.prompts)
print("words:  ", task.words)
for prompt, answer in [("praise film", "great fun and"), ("roast film", "great fun and"),
                       ("roast plot", "dull and awful")]:
    print(f"  score({prompt!r}, {answer!r}) = {task.score(prompt, answer)}")

# %% [markdown]
# The *reference* model is a tiny LM (lesson 12's window MLP) fine-tuned on answers of three
# random words: it writes well-formed answers but does not care about tone. Preference pairs are
# two samples from it for the same prompt, labelled by the annotator (ties dropped). Held-out
# pairs, drawn the same way, measure whether what the model learned carries over to answers it
# never trained on.

# %%
def random_answers(n):
    prompts = [task.prompts[i] for i in rng.integers(len(task.prompts), size=n)]
    return prompts, [" ".join(rng.choice(task.words, size=3)) for _ in prompts]


sft_tokens, sft_mask, _ = tok.encode_pairs(*random_answers(400))
ref_params, sft_losses = rc.sft(rc.lm_init(tok.vocab_size, context=5, dim=16, seed=SEED),
                                sft_tokens, sft_mask, steps=150, lr=3e-3, seed=SEED)


def sample_answers(params, prompts, max_new=4):
    """Tokens, masks and texts of one sampled answer per prompt."""
    ids = tok.encode_prompts(prompts)
    tokens, mask = rc.generate(params, ids, max_new, rng)
    return tokens, mask, tok.decode_completions(tokens, ids.shape[1])


def sample_pairs(n):
    prompts = [task.prompts[i] for i in rng.integers(len(task.prompts), size=n)]
    a, mask_a, text_a = sample_answers(ref_params, prompts)
    b, mask_b, text_b = sample_answers(ref_params, prompts)
    score_a = [task.score(p, t) for p, t in zip(prompts, text_a)]
    score_b = [task.score(p, t) for p, t in zip(prompts, text_b)]
    return rc.make_preference_pairs(a, mask_a, b, mask_b, score_a, score_b)


train_pairs, held_out = sample_pairs(800), sample_pairs(400)
print(f"{len(train_pairs)} training pairs, {len(held_out)} held-out pairs (ties dropped)")
for i in range(3):
    print(f"  {tok.decode(train_pairs.chosen[i])!r:32} beats {tok.decode(train_pairs.rejected[i][3:])!r}")

# %% [markdown]
# ## The problem
#
# You have pairs, not rewards. The obvious move is to push the chosen answer's log-probability
# up and the rejected one's down: minimise $-(\log\pi(y_c\mid x) - \log\pi(y_r\mid x))$. Nothing
# stops this loss: a rejected answer's log-probability can fall forever, and the model is free to
# wander as far from the reference as it likes. Watch the loss and the KL divergence from the
# reference, estimated as the mean of $\log\pi(y\mid x) - \log\pi_\text{ref}(y\mid x)$ over
# answers $y$ sampled from $\pi$ (lesson 12's k1 estimator, summed over the answer's tokens):

# %%
eval_prompts = [p for p in task.prompts for _ in range(64)]


def kl_from_reference(params):
    """Sampled estimate of KL(pi || ref) per answer, in nats."""
    tokens, mask, _ = sample_answers(params, eval_prompts)
    return float(np.mean(rc.completion_log_prob(params, tokens, mask)
                         - rc.completion_log_prob(ref_params, tokens, mask)))


def naive_loss(params, rows):
    chosen, rejected = rc.pair_log_probs(params, train_pairs.take(rows))
    return -rc.mean(chosen - rejected)


naive, opt = ref_params, rc.Adam(lr=1e-3)
state, step = opt.init(naive), rc.value_and_grad(naive_loss)
naive_log = []
for i in range(1, 301):
    loss, grads = step(naive, rng.choice(len(train_pairs), size=64, replace=False))
    naive, state = opt.step(naive, grads, state)
    if i % 100 == 0:
        naive_log.append((i, loss, kl_from_reference(naive)))

# %% tags=["nbval-ignore-output"]
for i, loss, kl in naive_log:
    print(f"step {i:3d}: loss {loss:8.1f}   KL from reference {kl:6.1f} nats")
print("samples:", [sample_answers(naive, [p])[2][0] for p in ("praise cast", "roast music")])

# %%
assert naive_log[-1][1] < naive_log[1][1] < naive_log[0][1] < 0
assert naive_log[-1][2] > naive_log[0][2] > 1.0

# %% [markdown]
# The loss has no floor: it keeps falling, the model drifts further from the
# reference with every step, and its answers collapse onto a few repeated words. Nothing in the
# objective says "this is enough". What you wanted was the objective of RLHF: a higher
# reward, *but* at a price for every nat of KL from the reference. DPO optimises exactly that
# objective, using nothing but the pairs.

# %% [markdown]
# ## The idea
#
# **Step 1: the optimal policy of RLHF in closed form.** For one prompt $x$, maximise
# $$\mathbb{E}_{y\sim\pi}[r(x,y)] - \beta\,\mathrm{KL}(\pi(\cdot\mid x)\,\|\,\pi_\text{ref}(\cdot\mid x)).$$
# Over all distributions the maximiser is
# $$\pi^*(y\mid x) = \frac{1}{Z(x)}\,\pi_\text{ref}(y\mid x)\,e^{r(x,y)/\beta},\qquad Z(x) = \sum_y \pi_\text{ref}(y\mid x)\,e^{r(x,y)/\beta}.$$
# (The objective equals $-\beta\,\mathrm{KL}(\pi\,\|\,\pi^*) + \beta\log Z$, and a KL is smallest, zero, when the two match.)
#
# **Step 2: turn it around.** Take logs and solve for the reward:
# $$r(x,y) = \beta\log\frac{\pi^*(y\mid x)}{\pi_\text{ref}(y\mid x)} + \beta\log Z(x).$$
# Any policy $\pi$ defines an *implicit reward* $\hat r(x,y) = \beta\log\frac{\pi(y\mid x)}{\pi_\text{ref}(y\mid x)}$, up to a term that depends on the prompt only.
#
# **Step 3: plug it into Bradley-Terry.** The preference model of lesson 12 is
# $P(y_c \succ y_r) = \sigma(r(x,y_c) - r(x,y_r))$. The $\beta\log Z(x)$ terms cancel in the
# difference, so with $z = \log\frac{\pi(y_c)}{\pi_\text{ref}(y_c)} - \log\frac{\pi(y_r)}{\pi_\text{ref}(y_r)}$
# the likelihood of the labels is a function of the policy alone. Its negative log is the
# **DPO loss**
# $$\mathcal{L}_\text{DPO} = -\log\sigma(\beta z).$$
# Fitting it fits a Bradley-Terry reward model whose reward is $\beta\log(\pi/\pi_\text{ref})$,
# and the policy that goes with that reward is $\pi$ itself: the RL step is already done.
#
# Check steps 1 and 2 on the smallest case, one prompt with three possible answers:

# %%
ref_probs = np.array([0.5, 0.3, 0.2])
reward = np.array([1.0, 0.0, -1.0])
beta = 0.5
optimal = ref_probs * np.exp(reward / beta)
optimal /= optimal.sum()
implicit = beta * np.log(optimal / ref_probs)
print("optimal policy:         ", np.round(optimal, 4))
print("implicit reward:        ", np.round(implicit, 4))
print("implicit - true reward: ", np.round(implicit - reward, 4), "(one constant: -beta log Z)")
np.testing.assert_allclose(implicit - reward, -beta * np.log(np.sum(ref_probs * np.exp(reward / beta))))

# %% [markdown]
# **Why the reference matters.** $\beta$ sets the exchange rate between reward and KL: a large
# $\beta$ keeps $\pi$ near $\pi_\text{ref}$, a small one lets it move far.
#
# **IPO: a fix for overconfident preferences.** If $y_c$ *always* beats $y_r$, the
# Bradley-Terry probability that fits the data is 1, so DPO's loss keeps falling as
# $z \to \infty$: the margin grows without bound and the $\beta$ leash stops holding. IPO
# (Azar et al.) replaces the log-sigmoid by a square that pins the margin to a finite target:
# $$\mathcal{L}_\text{IPO} = \left(z' - \frac{1}{2\tau}\right)^2,$$
# where $z'$ is the same log-ratio margin computed from *length-averaged* log-probs (as in
# TRL). Smaller $\tau$ means a larger target, a looser leash.
#
# **Label smoothing for noisy labels.** If each label is flipped with probability
# $\varepsilon$, the likelihood of a label is a mixture; its negative log is
# $$-(1-\varepsilon)\log\sigma(\beta z) - \varepsilon\log\sigma(-\beta z),$$
# ("conservative DPO"), minimised at a finite margin $\beta z = \log\frac{1-\varepsilon}{\varepsilon}$.

# %% [markdown]
# ## Build it
#
# **Step 1: the sequence log-probs.** DPO's inputs are $\log\pi(y\mid x)$ of whole answers:
# the sum of the log-probs of the answer's tokens, *not* of the prompt's. The mask that
# `rc.generate` returns is True exactly on the answer tokens (EOS included):

# %%
pair = train_pairs.take(slice(0, 1))
print("tokens:", pair.chosen[0].tolist(), "=", [tok.symbols[t] for t in pair.chosen[0]])
print("mask:  ", pair.chosen_mask[0].astype(int).tolist())
logits = rc.lm_logits(ref_params, pair.chosen)[:, :-1]  # logits[:, t] predicts token t+1
per_token = rc.token_log_probs(logits, pair.chosen)
mine = float(np.sum(per_token[0][pair.chosen_mask[0, 1:]]))
print(f"sum over answer tokens: {mine:.4f}   rc.sequence_log_prob: "
      f"{float(rc.sequence_log_prob(logits, pair.chosen, pair.chosen_mask)[0]):.4f}")

# %% [markdown]
# **Step 2: the DPO loss.** Write it in plain numpy for four arrays of such log-probs, one entry
# per pair. Use `np.logaddexp(0, -x)` for $-\log\sigma(x)$: it never overflows.

# %%
def my_dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=0.1):
    chosen_ratio = policy_chosen - ref_chosen
    rejected_ratio = policy_rejected - ref_rejected
    z = chosen_ratio - rejected_ratio
    return float(np.mean(np.logaddexp(0, -beta * z)))


example = (np.array([-5.0, -3.0, -4.0]), np.array([-6.0, -2.0, -9.0]),
           np.array([-5.5, -3.0, -4.0]), np.array([-5.5, -2.5, -8.0]))
print(f"my loss {my_dpo_loss(*example, beta=0.5):.6f}   "
      f"rc.dpo_loss {float(rc.dpo_loss(*example, beta=0.5).loss):.6f}")
np.testing.assert_allclose(my_dpo_loss(*example, beta=0.5), rc.dpo_loss(*example, beta=0.5).loss)

# %% [markdown]
# **Step 3: the implicit rewards and their accuracy.** $\beta(\log\pi - \log\pi_\text{ref})$ of
# each answer; a pair counts as right when the chosen answer's reward is strictly larger.

# %%
def my_implicit_rewards(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta=0.1):
    chosen = beta * (policy_chosen - ref_chosen)
    rejected = beta * (policy_rejected - ref_rejected)
    return chosen, rejected, float(np.mean(chosen > rejected))


chosen_r, rejected_r, acc = my_implicit_rewards(*example, beta=0.5)
ref_out = rc.dpo_loss(*example, beta=0.5)
print("chosen rewards:", np.round(chosen_r, 3), " rejected:", np.round(rejected_r, 3),
      f" accuracy {acc:.3f}")
np.testing.assert_allclose(chosen_r, ref_out.chosen_rewards)
np.testing.assert_allclose(rejected_r, ref_out.rejected_rewards)
assert acc == ref_out.accuracy

# %% [markdown]
# **Step 4: IPO.** Divide each log-ratio by its answer's length before taking the margin, and
# regress the margin onto $1/(2\tau)$.

# %%
def my_ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths,
                rejected_lengths, tau=0.1):
    z = ((policy_chosen - ref_chosen) / chosen_lengths
         - (policy_rejected - ref_rejected) / rejected_lengths)
    return float(np.mean((z - 1 / (2 * tau)) ** 2))


lengths = np.array([2, 4, 3]), np.array([5, 1, 3])
print(f"my loss {my_ipo_loss(*example, *lengths, tau=0.25):.6f}   rc.ipo_loss "
      f"{float(rc.ipo_loss(*example, tau=0.25, chosen_lengths=lengths[0], rejected_lengths=lengths[1]).loss):.6f}")
np.testing.assert_allclose(
    my_ipo_loss(*example, *lengths, tau=0.25),
    rc.ipo_loss(*example, tau=0.25, chosen_lengths=lengths[0], rejected_lengths=lengths[1]).loss)

# %% [markdown]
# The reference implementation, with its input checks and label smoothing:

# %%
print(inspect.getsource(rc.dpo_loss))

# %% [markdown]
# ## Check it
#
# The invariants of DPO, asserted:
#
# 1. At the start, policy = reference: every margin is 0, the loss is $\log 2$ and no pair is
#    ranked right (a tie is not a win).
# 2. The loss depends on the policy only through log-ratio *differences*: adding a constant per
#    prompt to both log-ratios (the $\beta\log Z(x)$ of the derivation) changes nothing.
# 3. The gradient with respect to the chosen log-prob is $-\beta\,\sigma(-\beta z)/B$ (and
#    the opposite for the rejected one): a pair already won by a wide margin stops pulling. It
#    matches finite differences.
# 4. The reference gets no gradient, even if you pass it traced.
# 5. With label smoothing $\varepsilon$, one pair's loss is smallest at $\beta z = \log\frac{1-\varepsilon}{\varepsilon}$.

# %%
ref_c, ref_r = rc.pair_log_probs(ref_params, held_out)
start = rc.dpo_loss(ref_c, ref_r, ref_c, ref_r)
assert np.isclose(float(start.loss), np.log(2)) and start.accuracy == 0.0

shift = rng.normal(size=3)
np.testing.assert_allclose(rc.dpo_loss(*example).loss,
                           rc.dpo_loss(example[0] + shift, example[1] + shift, *example[2:]).loss)

beta = 0.5
z = (example[0] - example[2]) - (example[1] - example[3])
grad_c = rc.grad(lambda pc: rc.dpo_loss(pc, *example[1:], beta=beta).loss)(example[0])
np.testing.assert_allclose(grad_c, -beta * rc.sigmoid(-beta * z) / 3)
np.testing.assert_allclose(
    grad_c, rc.numerical_grad(lambda pc: float(rc.dpo_loss(pc, *example[1:], beta=beta).loss), example[0]),
    rtol=1e-6)
print("margins z:", np.round(z, 3), " pull on each chosen log-prob:", np.round(-grad_c, 4))

g_ref = rc.grad(lambda r: rc.dpo_loss(example[0], example[1], r, example[3]).loss)(example[2])
assert not g_ref.any()

eps = 0.2
grid = np.linspace(0.0, 4.0, 4001)
smoothed = [float(rc.dpo_loss(np.array([m]), np.zeros(1), np.zeros(1), np.zeros(1), beta=1.0,
                              label_smoothing=eps).loss) for m in grid]
print(f"label smoothing {eps}: best beta*z on the grid {grid[np.argmin(smoothed)]:.3f}, "
      f"log((1-e)/e) = {np.log((1 - eps) / eps):.3f}")
assert abs(grid[np.argmin(smoothed)] - np.log((1 - eps) / eps)) < 1e-3

# %% [markdown]
# ## Use it
#
# **DPO on the review task.** `rc.train_on_preferences` runs Adam on `rc.dpo_loss` over
# minibatches of pairs. This lesson uses $\beta = 0.5$, not TRL's default 0.1: an answer here is four
# tokens, and at $\beta = 0.1$ the loss only saturates once the log-ratio margin reaches tens of
# nats, far more drift per token than the same margin spread over a 500-token answer.
# `train_on_preferences` computes the reference's log-probs of every pair once, up front: the
# reference is frozen, so there is nothing to sample and no second model to step.

# %%
print(inspect.getsource(rc.train_on_preferences))

# %%
BETA = 0.5
dpo = rc.train_on_preferences(ref_params, train_pairs, beta=BETA, steps=150, lr=1e-3, seed=SEED)
after = rc.evaluate_pairs(dpo.params, ref_params, held_out, beta=BETA)
pol_c, pol_r = rc.pair_log_probs(dpo.params, held_out)

# %% tags=["nbval-ignore-output"]
print(f"held-out implicit-reward accuracy: {after.accuracy:.3f} (before training {start.accuracy:.3f})")
print(f"minibatch accuracy first reached 0.95 at step {int(np.argmax(dpo.accuracies >= 0.95)) + 1} of {len(dpo.accuracies)}")
print(f"mean log-prob change on held-out pairs: chosen {np.mean(pol_c - ref_c):+.2f}, "
      f"rejected {np.mean(pol_r - ref_r):+.2f} nats")
print(f"KL from reference: {kl_from_reference(dpo.params):.2f} nats per answer "
      f"(naive objective after {naive_log[-1][0]} steps: {naive_log[-1][2]:.1f})")
for prompt in ("praise cast", "roast music"):
    print(f"  {prompt!r}: before {sample_answers(ref_params, [prompt] * 3)[2]}, "
          f"after {sample_answers(dpo.params, [prompt] * 3)[2]}")

# %%
assert after.accuracy >= 0.85
print("held-out accuracy >= 0.85:", after.accuracy >= 0.85)

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(dpo.accuracies, label="minibatch accuracy")
ax.plot(dpo.margins / dpo.margins.max(), label="margin z (scaled to max 1)")
ax.set_xlabel("DPO step")
ax.set_ylabel("accuracy / scaled margin")
ax.set_title("Accuracy saturates early; the margin keeps growing")
ax.legend()
plt.show()

# %% [markdown]
# The accuracy is nearly perfect early on (the step printed above), yet the margin keeps climbing: the
# pairs are deterministic (the annotator never hesitates), so DPO can always lower its loss by
# pushing the margin further. Note also the log-prob changes above: DPO widens the *gap*, and
# it is common for the chosen answers' log-probs to fall too, only less than the rejected ones.
# The probability they lose has to go somewhere. If the samples after training contain words
# that no answer ever held (an instruction or a subject word), that is where it went: DPO scores
# only the answers in its pairs, and says nothing about answers no pair covered.
#
# **The effect of $\beta$.** Same data, same steps, different $\beta$:

# %%
betas = [0.1, 0.3, 1.0, 3.0]
beta_runs = {b: rc.train_on_preferences(ref_params, train_pairs, beta=b, steps=150, lr=1e-3,
                                        seed=SEED) for b in betas}
beta_table = [(b, rc.evaluate_pairs(run.params, ref_params, held_out, beta=b).accuracy,
               run.margins[-10:].mean(), kl_from_reference(run.params))
              for b, run in beta_runs.items()]

# %% tags=["nbval-ignore-output"]
print(" beta   held-out acc   final margin z   KL from ref (nats)")
for b, acc, margin, kl in beta_table:
    print(f"{b:5.2f}   {acc:12.3f}   {margin:14.1f}   {kl:18.2f}")

# %%
kls = [row[3] for row in beta_table]
assert kls[0] > kls[-1], "a smaller beta should let the policy drift further"
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(betas, kls, "o-")
ax.set_xscale("log")
ax.set_xlabel("beta (log scale)")
ax.set_ylabel("KL(pi || ref), nats per answer")
ax.set_title("Smaller beta, longer leash: the policy drifts further")
plt.show()

# %% [markdown]
# **IPO against overconfidence.** Train IPO with $\tau = 0.5$ (target margin 1 per token) and
# DPO with $\beta = 0.5$ on the same deterministic pairs, and follow each one's margin:

# %%
tau = 0.5
ipo = rc.train_on_preferences(ref_params, train_pairs, loss="ipo", tau=tau, steps=300, lr=1e-3,
                              seed=SEED)
dpo_long = rc.train_on_preferences(ref_params, train_pairs, beta=0.5, steps=300, lr=1e-3, seed=SEED)
ipo_acc = rc.evaluate_pairs(ipo.params, ref_params, held_out, loss="ipo", tau=tau).accuracy
answer_len = np.mean(np.concatenate([train_pairs.chosen_mask[:, 1:].sum(1),
                                     train_pairs.rejected_mask[:, 1:].sum(1)]))

# %% tags=["nbval-ignore-output"]
print(f"IPO: final per-token margin {ipo.margins[-10:].mean():.2f} (target 1/(2 tau) = {1 / (2 * tau):.2f}), "
      f"held-out accuracy {ipo_acc:.3f}")
print(f"DPO: final margin {dpo_long.margins[-10:].mean():.2f} summed, about "
      f"{dpo_long.margins[-10:].mean() / answer_len:.2f} per token")
print(f"KL from reference: IPO {kl_from_reference(ipo.params):.2f}, DPO {kl_from_reference(dpo_long.params):.2f} nats")

# %%
assert abs(ipo.margins[-10:].mean() - 1 / (2 * tau)) < 0.25 / (2 * tau)
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(dpo_long.margins / answer_len, label="DPO, beta=0.5 (summed / mean length)")
ax.plot(ipo.margins, label="IPO, tau=0.5 (length-averaged)")
ax.axhline(1 / (2 * tau), color="grey", ls="--", label="IPO target 1/(2 tau)")
ax.set_xlabel("step")
ax.set_ylabel("log-ratio margin per token (nats)")
ax.set_title("DPO's margin keeps rising; IPO's settles near its target")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Label smoothing for noisy labels.** Real annotators disagree. Flip the label of a random
# 30% of the training pairs, train DPO with and without label smoothing $\varepsilon = 0.3$,
# and score both on the clean held-out pairs:

# %%
flip = rng.random(len(train_pairs)) < 0.3
noisy = rc.PreferencePairs(
    np.where(flip[:, None], train_pairs.rejected, train_pairs.chosen),
    np.where(flip[:, None], train_pairs.rejected_mask, train_pairs.chosen_mask),
    np.where(flip[:, None], train_pairs.chosen, train_pairs.rejected),
    np.where(flip[:, None], train_pairs.chosen_mask, train_pairs.rejected_mask))
smoothing_runs = {}
for eps in (0.0, 0.3):
    run = rc.train_on_preferences(ref_params, noisy, beta=BETA, label_smoothing=eps, steps=150,
                                  lr=1e-3, seed=SEED)
    smoothing_runs[eps] = (rc.evaluate_pairs(run.params, ref_params, held_out).accuracy,
                           run.margins[-10:].mean(), kl_from_reference(run.params))

# %% tags=["nbval-ignore-output"]
print(f"flipped {flip.mean():.0%} of the training labels")
print("  e     held-out acc (clean)   final margin z   KL from ref")
for eps, (acc, margin, kl) in smoothing_runs.items():
    print(f"{eps:4.1f}   {acc:20.3f}   {margin:14.1f}   {kl:11.2f}")

# %%
assert smoothing_runs[0.3][2] < smoothing_runs[0.0][2], "smoothing should keep the policy closer"
assert smoothing_runs[0.3][1] < smoothing_runs[0.0][1], "smoothing should stop at a smaller margin"
assert max(acc for acc, _, _ in smoothing_runs.values()) < after.accuracy, "noise should cost accuracy"
assert min(acc for acc, _, _ in smoothing_runs.values()) > 0.6

# %% [markdown]
# Noise costs both runs accuracy against the clean run above: the flipped pairs pull the
# other way. Smoothing does *not* buy accuracy back here (compare the two accuracies). The model is too small to memorise
# individual flipped pairs, so plain DPO already averages the noise out. What smoothing changes
# is confidence: it assumes a label is wrong with probability $\varepsilon$, so it stops pushing
# once $\beta z$ reaches $\log\frac{1-\varepsilon}{\varepsilon}$, and the policy stays much
# closer to the reference (smaller margin and KL). With a large model that *can* memorise the
# flipped pairs, that restraint is what keeps it from learning them.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | the loss starts at $\log 2$ and never moves | the "reference" log-probs were computed with the policy inside the loss, so $z \equiv 0$ | compute the reference's log-probs once, from frozen parameters |
# | training is fine but samples degrade, KL grows without bound | $\beta$ too small, or deterministic preferences with plain DPO | raise $\beta$; try IPO or label smoothing; stop early on held-out accuracy |
# | chosen answers become *less* likely | DPO only widens the gap; both sides can fall | expected to a degree; watch the chosen log-prob and KL, mix in an SFT loss on chosen answers if it matters |
# | longer answers always win | summed log-probs grow with length and the annotator liked length | IPO's length averaging, or length-balanced pairs |
# | accuracy 100% on training pairs, poor on held-out ones | too many epochs over few pairs | held-out pairs, early stopping |
# | samples contain outputs no pair ever showed | pushing rejected answers down frees probability that lands on unscored answers | larger $\beta$, pairs sampled from the current policy (iterative / online DPO), an SFT term |
# | prompt tokens in the mask | the log-prob of the prompt is the same for both answers but adds noise and gradient to the prompt model | mask only the answer (and its EOS) |
# | pairs from a different model than the reference | the implicit reward is measured against a reference that never produced the data | SFT the reference on the same kind of data first |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the full DPO loss.** `dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta)`
#    returning `(loss, chosen_rewards, rejected_rewards, accuracy)`.
# 2. **Medium: IPO with lengths.** `ipo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths, rejected_lengths, tau)`
#    returning the loss.
# 3. **Hard: DPO's gradient by hand.** `dpo_grad(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta)`
#    returning the gradients of the (mean) DPO loss with respect to `policy_chosen` and
#    `policy_rejected`, with no autodiff. Then explain from the formula why a pair with a large
#    margin barely contributes.

# %% tags=["solution"]
def dpo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    chosen = beta * (policy_chosen - ref_chosen)
    rejected = beta * (policy_rejected - ref_rejected)
    loss = float(np.mean(np.logaddexp(0, -(chosen - rejected))))
    return loss, chosen, rejected, float(np.mean(chosen > rejected))


# %%
assert rc.exercises.check("dpo_loss", dpo)

# %% tags=["solution"]
def ipo(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths,
        rejected_lengths, tau):
    z = ((policy_chosen - ref_chosen) / chosen_lengths
         - (policy_rejected - ref_rejected) / rejected_lengths)
    return float(np.mean((z - 1 / (2 * tau)) ** 2))


# %%
assert rc.exercises.check("ipo_loss", ipo)

# %% tags=["solution"]
def dpo_grad(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    z = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    # d/dz of -log sigmoid(beta z) = -beta sigmoid(-beta z); the mean divides by B
    pull = beta * 0.5 * (1 - np.tanh(0.5 * beta * z)) / len(z)
    return -pull, pull


# %%
assert rc.exercises.check("dpo_gradient", dpo_grad)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | DPO | "RLHF without RL" | maximum likelihood of the preference labels under Bradley-Terry, with the reward written as $\beta\log(\pi/\pi_\text{ref})$; its optimum is the optimum of KL-regularised RLHF |
# | implicit reward | "the DPO reward" | $\beta\log\frac{\pi(y\mid x)}{\pi_\text{ref}(y\mid x)}$: defined up to a per-prompt constant, so only differences between answers to one prompt mean anything |
# | reward accuracy | "how often it prefers the chosen one" | the fraction of pairs whose chosen answer has the strictly larger implicit reward; 0 at the start, where every pair ties |
# | margin | "how sure the model is" | $z$, the difference of the two log-ratios; DPO drives it up without bound on deterministic pairs |
# | $\beta$ | "the KL coefficient" | the price of drift from the reference; small $\beta$ lets the policy move far |
# | reference model | "the frozen copy" | the SFT model the policy starts from and is measured against; never updated |
# | IPO | "DPO with a squared loss" | regresses the length-averaged margin onto $1/(2\tau)$, so it stays finite even when one answer always wins |
# | label smoothing / cDPO | "robust DPO" | assumes each label is flipped with probability $\varepsilon$; the margin stops at $\log\frac{1-\varepsilon}{\varepsilon}/\beta$ |

# %% [markdown]
# ## Further reading
#
# - Rafailov, Sharma, Mitchell, Ermon, Manning, Finn (2023), *Direct Preference Optimization:
#   Your Language Model is Secretly a Reward Model*: the derivation of this lesson, and the
#   controlled sentiment experiment our praise/roast task imitates.
# - Azar, Rowland, Piot, Guo, Calandriello, Valko, Munos (2023), *A General Theoretical
#   Paradigm to Understand Learning from Human Preferences*: why DPO overfits deterministic
#   preferences, and IPO.
# - Mitchell (2023), *A note on DPO with noisy preferences and relationship to IPO*: the
#   conservative (label-smoothed) DPO loss.
# - Hugging Face TRL, `DPOTrainer` documentation: the conventions followed here (summed
#   log-probs, reported rewards and accuracy, IPO on averaged log-probs).
# - Bradley and Terry (1952), *Rank Analysis of Incomplete Block Designs*: the preference model
#   under both RLHF and DPO.
