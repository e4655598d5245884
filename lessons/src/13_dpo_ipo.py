# %% [markdown]
# # 13 · DPO and IPO
#
# *Prerequisites:* 00, 10, 12
# *Time:* 60 minutes
# *You will build:* the DPO and IPO losses from the KL-regularised objective, the KL of sampled answers, and a tiny transformer that learns from preference pairs with no reward model and no sampling during training, judged by what it then writes.

# %% [markdown]
# Lesson 12 aligned a language model in three stages: fit a reward model to preference pairs,
# then run PPO against it with a KL penalty to a frozen reference. That is a lot of machinery:
# a second network, sampling inside the training loop, a value function, four sets of weights in
# memory. This lesson shows that, for the same objective, the preference pairs are enough, and
# how to tell whether the result is any good: by what the model *writes*, not by how it ranks
# the pairs it was given.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
SEEDS = (0, 1, 2)  # every training claim below is checked on these three training seeds
rng = np.random.default_rng(SEED)

# %% [markdown]
# The task: a prompt asks to *praise* or *roast* a film, its plot, cast or music; the answer is
# three words followed by EOS. A hidden annotator scores an answer's tone: for "praise", the
# number of positive minus negative words (from -3 to +3), the opposite for "roast". Anything
# that is not three answer words and EOS ("", "plot plot plot", four words, a missing EOS) is
# *malformed* and scores -4, below every well-formed answer. `rc.review_task()` holds the
# vocabulary and this annotator (`task.score` for text, `task.rate` for sampled token rows),
# which the model never sees: it only sees which of two answers won.

# %%
task = rc.review_task()
tok = task.tokenizer
print(tok)
print("prompts:", task.prompts)
print("words:  ", task.words)
for prompt, answer in [("praise film", "great fun and"), ("roast film", "great fun and"),
                       ("roast plot", "dull and awful"), ("roast plot", "plot plot plot"),
                       ("praise cast", "")]:
    print(f"  score({prompt!r}, {answer!r}) = {task.score(prompt, answer):+.0f}")

# %% [markdown]
# The *reference* model is the course's tiny causal transformer (`rc.lm_init`), fine-tuned on
# answers of three random words: it mostly writes well-formed answers but does not care about
# tone. Preference pairs are two samples from it for the same prompt, labelled by the annotator
# (ties dropped). Held-out pairs, drawn the same way, measure whether a ranking carries over to
# pairs the model never trained on: the same eight prompts, and mostly answers that no
# training pair holds (the overlap is printed below).
#
# The figures that matter are about *samples*: `rc.rate_samples` draws one answer per prompt
# (64 per prompt here) and returns each answer's true score, whether it is well-formed, and its
# KL from the reference, $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ summed over the answer's
# positions (you build that KL in Build it).

# %% tags=["nbval-ignore-output"]
def random_answers(n):
    prompts = [task.prompts[i] for i in rng.integers(len(task.prompts), size=n)]
    return prompts, [" ".join(rng.choice(task.words, size=3)) for _ in prompts]


sft_tokens, sft_mask, _ = tok.encode_pairs(*random_answers(400))
ref_params, sft_losses = rc.sft(rc.lm_init(tok.vocab_size, context=8, dim=16, seed=SEED),
                                sft_tokens, sft_mask, steps=150, lr=3e-3, seed=SEED)


def sample_pairs(n):
    ids = tok.encode_prompts([task.prompts[i] for i in rng.integers(len(task.prompts), size=n)])
    a, mask_a = rc.generate(ref_params, ids, 4, rng)
    b, mask_b = rc.generate(ref_params, ids, 4, rng)
    (score_a, _), (score_b, _) = task.rate(a, ids.shape[1]), task.rate(b, ids.shape[1])
    return rc.make_preference_pairs(a, mask_a, b, mask_b, score_a, score_b)


def keys(tokens, mask):
    """One hashable key per row: its prompt and answer tokens (padding after EOS left out)."""
    ends = np.argmax(mask, axis=1) + mask.sum(axis=1)
    return [row[:end].tobytes() for row, end in zip(tokens, ends)]


train_pairs, held_out = sample_pairs(800), sample_pairs(400)
print(f"{len(train_pairs)} training pairs, {len(held_out)} held-out pairs (ties dropped)")
for i in range(3):
    print(f"  {tok.decode(train_pairs.chosen[i])!r:36} beats {tok.decode(train_pairs.rejected[i][3:])!r}")
seen = set(keys(train_pairs.chosen, train_pairs.chosen_mask) + keys(train_pairs.rejected, train_pairs.rejected_mask))
held_keys = set(keys(held_out.chosen, held_out.chosen_mask) + keys(held_out.rejected, held_out.rejected_mask))
print(f"held-out (prompt, answer) combinations also in a training pair: {len(held_keys & seen)} of "
      f"{len(held_keys)} ({len(held_keys & seen) / len(held_keys):.0%})")

eval_ids = tok.encode_prompts([p for p in task.prompts for _ in range(64)])


def judge(params):
    """(mean true score, well-formed rate, mean KL from the reference) of 512 sampled answers."""
    report = rc.rate_samples(params, ref_params, eval_ids, task.rate, rng)
    return float(report.scores.mean()), float(report.well_formed.mean()), float(report.kl.mean())


ref_score, ref_formed, ref_kl = judge(ref_params)
print(f"reference: true score {ref_score:+.2f}, well-formed {ref_formed:.0%}, KL {ref_kl:.2f} nats")
assert ref_kl == 0.0 and ref_formed > 0.8

# %% [markdown]
# ## The problem
#
# You have pairs, not rewards. The obvious move is to push the chosen answer's log-probability
# up and the rejected one's down: minimise $-(\log\pi(y_c\mid x) - \log\pi(y_r\mid x))$. Nothing
# stops this loss: a rejected answer's log-probability can fall forever, and the model is free
# to wander as far from the reference as it likes. Train it on three seeds for 150 steps of 32
# pairs (the budget every method in this lesson gets), and judge it at steps 25, 50, 100 and
# 150 two ways: by the *implicit-reward accuracy* on held-out pairs (does
# $\log\frac{\pi}{\pi_\text{ref}}$, summed over the answer, rank the chosen answer higher? the
# figure DPO trainers report), and by 512 samples.

# %%
CHECKPOINTS = (25, 50, 100, 150)
STEPS, BATCH, LR = CHECKPOINTS[-1], 32, 1e-3  # the budget of every setting compared below


def checkpoint_row(params, steps):
    """(step, held-out accuracy, true score, well-formed rate, KL) of one policy. The accuracy
    ranks summed log-ratios, the same statistic for every loss."""
    return (steps, float(rc.evaluate_pairs(params, ref_params, held_out).accuracy), *judge(params))


def naive_loss(params, batch):
    chosen, rejected = rc.pair_log_probs(params, batch)
    return -rc.mean(chosen - rejected)


naive_step = rc.value_and_grad(naive_loss)
naive_runs = []
for seed in SEEDS:  # minibatches drawn as rc.train_on_preferences draws them
    params, opt, order = ref_params, rc.Adam(lr=LR), np.random.default_rng(seed)
    state, losses, rows = opt.init(params), [], [(0, 0.0, ref_score, ref_formed, 0.0)]
    for i in range(STEPS):
        loss, grads = naive_step(params, train_pairs.take(order.choice(len(train_pairs), BATCH, replace=False)))
        params, state = opt.step(params, grads, state)
        losses.append(float(loss))
        if i + 1 in CHECKPOINTS:
            rows.append(checkpoint_row(params, i + 1))
    naive_runs.append((np.array(losses), np.array(rows)))
naive = params  # the last seed's model, for its samples
windows = np.array([[losses[a:a + 10].mean() for a in (40, 90, 140)] for losses, _ in naive_runs])
naive_end = np.array([rows[-1] for _, rows in naive_runs])  # [seed, column] at step 150

# %% tags=["nbval-ignore-output"]
print("seed   loss at 50 / 100 / 150    held-out accuracy   true score   well-formed   KL (nats)   (step 150)")
for seed, w, (_, acc, score, formed, kl) in zip(SEEDS, windows, naive_end):
    print(f"{seed:4d}   {w[0]:7.1f} {w[1]:7.1f} {w[2]:7.1f}   {acc:17.2f}   {score:+10.2f}   {formed:11.0%}   {kl:9.2f}")
print(f"reference                                           {ref_score:+10.2f}   {ref_formed:11.0%}")
ids = tok.encode_prompts(["praise cast"] * 4 + ["roast music"] * 4)
print("samples:", tok.decode_completions(rc.generate(naive, ids, 4, rng)[0], ids.shape[1]))

# %%
med_w, med_end = np.median(windows, axis=0), np.median(naive_end, axis=0)
assert med_w[2] < med_w[1] < med_w[0] < 0  # the median loss is still falling at step 150: no floor
assert med_end[1] > 0.75 and med_end[4] > 1.5 and med_end[3] < ref_formed - 0.1
print(f"median of 3 seeds at step 150: loss {med_w[0]:.1f} -> {med_w[1]:.1f} -> {med_w[2]:.1f} (steps 50, 100, 150), "
      f"held-out accuracy {med_end[1]:.2f} (range {naive_end[:, 1].min():.2f}-{naive_end[:, 1].max():.2f}), "
      f"KL {med_end[4]:.2f} nats, well-formed {med_end[3]:.0%} against the reference's {ref_formed:.0%} "
      f"(range {naive_end[:, 3].min():.0%}-{naive_end[:, 3].max():.0%})")

# %% [markdown]
# In the median over seeds the loss is still falling after 150 steps, the model has drifted
# from the reference, and it ranks most held-out pairs "right", yet far more of its answers
# are malformed than the reference's (look at the samples). Accuracy weighs every pair
# equally, and it only ever compares answers the reference wrote in pairs; where the
# probability taken from the rejected answers went is a question about the model's samples,
# which Use it answers. Two lessons follow. What you wanted was the objective of RLHF: a higher
# reward, *but* at a price for every nat of KL from the reference; DPO is derived from that
# objective, using nothing but the pairs. And a preference-trained model must be judged by what
# it generates, with a scorer it never saw.
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
# That is exact given the true preference probability of *every* pair of answers. With
# finitely many pairs, only the answers the pairs cover (and cover often) are constrained: the
# implicit reward of an answer in few pairs or none is nearly free, and DPO's minimisers include
# policies far from the RLHF optimum (Azar et al. 2023, section 4.2). Use it shows where that
# freedom goes.
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
# DPO's inputs are $\log\pi(y\mid x)$ of whole answers: the sum of the log-probs of the answer's
# tokens, *not* of the prompt's (lesson 12's `rc.sequence_log_prob`). The mask that
# `rc.generate` returns is True exactly on the answer tokens (EOS included), and
# `rc.pair_log_probs` returns the two sides' log-probs of a batch of pairs:

# %% tags=["nbval-ignore-output"]
pair = train_pairs.take(slice(0, 1))
print("tokens:", pair.chosen[0].tolist(), "=", [tok.symbols[t] for t in pair.chosen[0]])
print("mask:  ", pair.chosen_mask[0].astype(int).tolist())
chosen_lp, rejected_lp = rc.pair_log_probs(ref_params, pair)
print(f"log pi_ref(chosen) = {float(chosen_lp[0]):.4f}, log pi_ref(rejected) = {float(rejected_lp[0]):.4f}")

# %% [markdown]
# **Step 1: the DPO loss, its implicit rewards and their accuracy.** For arrays of such
# log-probs, one entry per pair, return the mean loss $-\log\sigma(\beta z)$, the implicit
# rewards $\beta(\log\pi - \log\pi_\text{ref})$ of the chosen and of the rejected answers, and
# the accuracy: the fraction of pairs whose chosen reward is *strictly* larger. Make the loss
# safe for a pair lost by a huge margin (`np.logaddexp` helps).

# %% tags=["solution"]
def my_dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    chosen = beta * (policy_chosen - ref_chosen)
    rejected = beta * (policy_rejected - ref_rejected)
    loss = float(np.mean(np.logaddexp(0.0, -(chosen - rejected))))
    return loss, chosen, rejected, float(np.mean(chosen > rejected))


# %%
assert rc.exercises.check("dpo_loss", my_dpo_loss)

# %% [markdown]
# **Step 2: the IPO loss.** Divide each answer's log-ratio by its own length before taking the
# margin $z'$, and regress the margin onto $1/(2\tau)$ with a mean squared error.

# %% tags=["solution"]
def my_ipo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths,
                rejected_lengths, tau):
    z = ((policy_chosen - ref_chosen) / chosen_lengths
         - (policy_rejected - ref_rejected) / rejected_lengths)
    return float(np.mean((z - 1 / (2 * tau)) ** 2))


# %%
assert rc.exercises.check("ipo_loss", my_ipo_loss)

# %% [markdown]
# **Step 3: how far a sampled answer is from the reference.** Given the policy's and the
# reference's logits on a batch of sampled rows (`[B, L-1, V]`, `logits[:, t]` predicting token
# `t+1`) and the answer mask `[B, L]`, return for each row the exact KL between the two
# next-token distributions, $\sum_v \pi(v)\,(\log\pi(v) - \log\pi_\text{ref}(v))$, summed over
# the positions that predict an answer token. Averaged over answers sampled from $\pi$, this is
# an unbiased estimate of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ per answer, with less variance
# than lesson 12's one-token k1 estimate. Make it safe for large logits.

# %% tags=["solution"]
def my_answer_kl(policy_logits, ref_logits, mask):
    def log_softmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))

    log_p, log_q = log_softmax(policy_logits), log_softmax(ref_logits)
    per_position = np.sum(np.exp(log_p) * (log_p - log_q), axis=-1)
    return np.sum(per_position * mask[:, 1:], axis=1)


# %%
assert rc.exercises.check("answer_kl", my_answer_kl)

# %% [markdown]
# The reference implementations, with their input checks (and DPO's label smoothing). In
# `exact_kl`, `_kl_terms(lp, lr)` is `exp(lp) * (lp - lr)` made exactly 0, in value and gradient,
# at a token the policy never takes (never `0 * inf`), and `_lift_rounding` lifts a total that
# floating-point rounding left about 1e-16 below 0 up to 0 (item 7 below checks the KL
# without that lift):

# %%
print(inspect.getsource(rc.dpo_loss))
print(inspect.getsource(rc.exact_kl))

# %% [markdown]
# ## Check it
#
# The invariants of DPO, asserted:
#
# 1. At the start, policy = reference: every margin is 0, the loss is $\log 2$ and no pair is
#    ranked right (a tie is not a win). This must hold *exactly* in training too: at step 0
#    `rc.train_on_preferences` must report accuracy 0. It computes the reference's log-probs
#    per minibatch, with the same code as the policy's, so the two agree bit for bit (in
#    float32, a log-prob computed in a different batch or by a different code path may differ
#    in its last bits, and a tie broken by rounding counts as a win or a loss at random).
# 2. The loss depends on the policy only through log-ratio *differences*: adding a constant per
#    prompt to both log-ratios (the $\beta\log Z(x)$ of the derivation) changes nothing.
# 3. The gradient with respect to the chosen log-prob is $-\beta\,\sigma(-\beta z)/B$ (and
#    the opposite for the rejected one): a pair already won by a wide margin stops pulling. It
#    matches finite differences.
# 4. The reference gets no gradient, even if you pass it traced.
# 5. With label smoothing $\varepsilon$, one pair's loss is smallest at $\beta z = \log\frac{1-\varepsilon}{\varepsilon}$.
# 6. IPO's loss is smallest at a finite margin, $1/(2\tau)$; DPO's keeps falling as the margin grows.
# 7. The answer KL is 0 for the reference itself and never negative (Gibbs' inequality).
#    `exact_kl`'s last line lifts a rounding of about -1e-16 to 0, so the check recomputes the
#    KL of the moved policy's answers in float64 without that lift: it must be >= -1e-12.

# %%
ref_c, ref_r = rc.pair_log_probs(ref_params, held_out)
start = rc.dpo_loss(ref_c, ref_r, ref_c, ref_r)
assert np.isclose(float(start.loss), np.log(2)) and start.accuracy == 0.0
first = rc.train_on_preferences(ref_params, train_pairs, beta=0.5, steps=1, batch=32, seed=SEED)
print(f"step 0 of training: accuracy {first.accuracies[0]:.3f}, mean margin {first.margins[0]:.3f}, "
      f"loss {first.losses[0]:.6f} (log 2 = {np.log(2):.6f})")
assert first.accuracies[0] == 0.0 and first.margins[0] == 0.0

example = (np.array([-5.0, -3.0, -4.0]), np.array([-6.0, -2.0, -9.0]),
           np.array([-5.5, -3.0, -4.0]), np.array([-5.5, -2.5, -8.0]))
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

margins = np.linspace(-2.0, 4.0, 6001)
ipo_curve = [float(rc.ipo_loss(np.array([m]), np.zeros(1), np.zeros(1), np.zeros(1), tau=0.5,
                               chosen_lengths=np.ones(1), rejected_lengths=np.ones(1)).loss) for m in margins]
dpo_curve = [float(rc.dpo_loss(np.array([m]), np.zeros(1), np.zeros(1), np.zeros(1), beta=0.5).loss)
             for m in margins]
print(f"IPO (tau=0.5) loss is smallest at margin {margins[np.argmin(ipo_curve)]:.3f} = 1/(2 tau); "
      f"DPO's still falls at margin {margins[-1]:.0f}: {dpo_curve[-2]:.6f} > {dpo_curve[-1]:.6f}")
assert abs(margins[np.argmin(ipo_curve)] - 1.0) < 1e-3 and np.all(np.diff(dpo_curve) < 0)

moved = rc.rate_samples(first.params, ref_params, eval_ids, task.rate, rng)
lp, lq = (rc.log_softmax(np.asarray(rc.lm_logits(p, moved.tokens), dtype=np.float64)[:, :-1], axis=-1)
          for p in (first.params, ref_params))
unlifted = np.sum(np.sum(np.exp(lp) * (lp - lq), axis=-1) * moved.mask[:, 1:], axis=1)  # no lift
assert ref_kl == 0.0 and unlifted.min() >= -1e-12 and moved.kl.mean() > 0.0
print("answer KL: exactly 0 for the reference; after one step, never negative and positive on average")

# %% [markdown]
# Item 1's pitfall, shown: precompute the reference's log-probs once for all pairs (one big
# batch), then compare them with the same model's log-probs computed per minibatch, as a
# trainer would at step 0. On exact arithmetic every pair would be a tie.

# %% tags=["nbval-ignore-output"]
pre_c, pre_r = rc.pair_log_probs(ref_params, train_pairs)
order = np.random.default_rng(SEED)
fake_acc = []
for _ in range(10):
    rows = order.choice(len(train_pairs), 32, replace=False)
    mb_c, mb_r = rc.pair_log_probs(ref_params, train_pairs.take(rows))
    fake_acc.append(np.mean((mb_c - pre_c[rows]) - (mb_r - pre_r[rows]) > 0))
print(f"step-0 accuracy with precomputed reference log-probs, 10 minibatches: mean {np.mean(fake_acc):.2f}, "
      f"range {min(fake_acc):.2f}-{max(fake_acc):.2f} (0 when computed per minibatch, asserted above); "
      "the size depends on the machine's float32 arithmetic")
# %% [markdown]
# ## Use it
#
# **DPO and IPO on the review task, judged by their samples.** `rc.train_on_preferences` runs
# Adam on `rc.dpo_loss` (or `rc.ipo_loss`) over minibatches of pairs; the reference is frozen,
# so there is nothing to sample and no second model to step. Its `callback` sees the policy
# after every update, which is where the samples are judged:

# %%
print(inspect.getsource(rc.train_on_preferences))

# %% [markdown]
# Three settings, each trained on the same pairs for the budget of the naive loss (150 steps
# of 32 pairs, lr $10^{-3}$, the same minibatches) on three seeds: DPO with $\beta = 0.5$, DPO
# with $\beta = 0.1$ (TRL's default), and IPO with $\tau = 0.5$. At steps 25, 50, 100 and 150
# each policy is judged by its held-out implicit-reward accuracy and by 512 sampled answers
# (true score, well-formed rate, KL); the naive loss of The problem is the fourth row.
# ($\beta = 0.5$ is not TRL's default because an answer here is four tokens: at $\beta = 0.1$
# the loss only saturates once the log-ratio margin reaches tens of nats, which is far more
# drift per token than the same margin spread over a 500-token answer.)

# %%
CONFIGS = {"DPO beta=0.5": {"beta": 0.5}, "DPO beta=0.1": {"beta": 0.1},
           "IPO tau=0.5": {"loss": "ipo", "tau": 0.5}}


def train_and_judge(pairs, seed, steps=STEPS, **config):
    """One run; rows (step, held-out accuracy, true score, well-formed rate, KL) from step 0."""
    rows = [(0, 0.0, ref_score, ref_formed, 0.0)]

    def at_checkpoint(info):
        if info["steps"] in CHECKPOINTS:
            rows.append(checkpoint_row(info["params"], info["steps"]))

    run = rc.train_on_preferences(ref_params, pairs, steps=steps, batch=BATCH, lr=LR,
                                  seed=seed, callback=at_checkpoint, **config)
    return run, np.array(rows)


runs = {name: [train_and_judge(train_pairs, seed, **config) for seed in SEEDS]
        for name, config in CONFIGS.items()}
curves = {name: np.stack([rows for _, rows in seed_runs]) for name, seed_runs in runs.items()}
curves["naive loss"] = np.stack([rows for _, rows in naive_runs])
STEP, ACC, SCORE, FORMED, KL = range(5)  # the columns of curves[name]: [seed, checkpoint, column]


def median(name, col, checkpoint=-1):
    """The median over seeds of one column at one checkpoint (default: the last)."""
    return float(np.median(curves[name][:, checkpoint, col]))

# %% tags=["nbval-ignore-output"]
print(f"after {STEPS} steps, per seed {SEEDS}:")
print("setting          train acc (last 10)   held-out acc        true score           well-formed         KL (nats)")
for name, c in curves.items():
    last = c[:, -1]
    train_acc = " ".join(f"{run.accuracies[-10:].mean():.2f}" for run, _ in runs[name]) if name in runs else "-"
    print(f"{name:15s}  {train_acc:19s}  "
          + "  ".join(" ".join(f"{v:+.2f}" if col == SCORE else f"{v:.2f}" for v in last[:, col]).ljust(19)
                      for col in (ACC, SCORE, FORMED, KL)))
print(f"reference        {'':19s}  {'':19s}  {ref_score:+.2f}{'':15s}  {ref_formed:.2f}")
print("medians: " + ", ".join(f"{n}: KL {median(n, KL):.1f}, true score {median(n, SCORE):+.2f}"
                              for n in curves))

# %%
for name in ("DPO beta=0.5", "IPO tau=0.5"):
    assert (curves[name][:, -1, ACC] > 0.85).all(), name
assert median("DPO beta=0.5", SCORE) > ref_score
assert (curves["IPO tau=0.5"][:, -1, SCORE] > ref_score + 0.8).all()  # every IPO seed writes better
small_beta = curves["DPO beta=0.1"][:, -1]
assert (small_beta[:, ACC] > 0.8).all() and (small_beta[:, FORMED] < ref_formed).all()
assert median("DPO beta=0.1", KL) > median("DPO beta=0.5", KL) > median("IPO tau=0.5", KL)
assert median("DPO beta=0.1", SCORE) < min(median("DPO beta=0.5", SCORE), median("IPO tau=0.5", SCORE))
for name in ("naive loss", "DPO beta=0.1"):
    assert median(name, KL) > median("DPO beta=0.5", KL) and median(name, FORMED) < ref_formed, name
weight = [float(rc.sigmoid(-0.1 * run.margins[-10:].mean())) for run, _ in runs["DPO beta=0.1"]]
assert min(weight) > 0.2
for k in (CHECKPOINTS.index(100) + 1, len(CHECKPOINTS)):  # beta=0.1 drifts about as far as the naive loss
    assert 0.5 < median("DPO beta=0.1", KL, k) / median("naive loss", KL, k) < 2.0
print(f"after {STEPS} steps: DPO beta=0.5 and IPO: held-out accuracy > 0.85 on every seed; median true "
      "score above the reference's (IPO: above reference + 0.8 on every seed)")
print("DPO beta=0.1: held-out accuracy > 0.8 on every seed, yet fewer well-formed answers than "
      "the reference on every seed")
print("median KL: DPO beta=0.1 > DPO beta=0.5 > IPO; median true score: DPO beta=0.1 lowest of the three")
print("naive loss and DPO beta=0.1: median KL above DPO beta=0.5's, median well-formed rate below the reference's; "
      "at steps 100 and 150 their median KLs within a factor 2 of each other")
print("DPO beta=0.1's weight sigmoid(-beta z) on the mean minibatch margin, last 10 steps, per seed: "
      + " ".join(f"{w:.2f}" for w in weight) + " (0.5 at step 0; the naive loss is weight 0.5 everywhere)")
print("median KL (nats) at steps " + ", ".join(str(s) for s in CHECKPOINTS) + ":")
for name in ("naive loss", "DPO beta=0.1", "DPO beta=0.5"):
    print(f"  {name:13s} " + " ".join(f"{median(name, KL, k):5.2f}" for k in range(1, len(CHECKPOINTS) + 1)))

# %% [markdown]
# Read the table and the asserts together. All settings rank the held-out pairs well, but they
# are not equally good. DPO with $\beta = 0.1$ has drifted furthest of the three DPO/IPO
# settings (median KL), writes fewer well-formed answers than the reference on every seed, and
# has the lowest median true score of the three. IPO improved on every seed; DPO with
# $\beta = 0.5$ only in the median. That is the price-per-nat reading of $\beta$.
#
# **DPO is not a fix by itself: the fix depends on $\beta$.** DPO's gradient is the naive
# loss's times $\beta\,\sigma(-\beta z)$ per pair, and Adam divides out a constant scale, so
# DPO starts out *exactly* like the naive loss, and differs only as far as the weight
# $\sigma(-\beta z)$ falls below its start, ½. With four-token answers and $\beta = 0.1$ it
# falls slowly (printed: still far from 0 at step 150), so DPO at TRL's default $\beta$ ends up
# about as far from the reference as the naive loss: at steps 100 and 150 their median KLs are
# within a factor 2 of each other (printed per checkpoint, and asserted; early on it can lag,
# and at step 150 it is below or above the naive loss depending on the reference model).
# With $\beta = 0.5$ the brake engages early. Which $\beta$ is "small"
# depends on how many nats a margin can reach, that is, on the answers' length.
#
# Which ranking of DPO $\beta = 0.5$ against IPO you see, and whether DPO $\beta = 0.5$ writes
# fewer well-formed answers than the reference, depends on the reference model: with other
# values of `SEED` (another reference and other pairs) both change, while the claims asserted
# above held on the three references we tried. One $\tau$ against one $\beta$ is no comparison
# of the two loss families.
#
# **Where did the probability go?** Take DPO with $\beta = 0.1$ after 150 steps: which
# malformed answers does it write, and are they answers no pair ever covered?

# %% tags=["nbval-ignore-output"]
train_rejected = keys(train_pairs.rejected, train_pairs.rejected_mask)
rejected_set, chosen_set = set(train_rejected), set(keys(train_pairs.chosen, train_pairs.chosen_mask))
in_pairs, pair_share = [], []
for seed, (run, _) in zip(SEEDS, runs["DPO beta=0.1"]):
    report = rc.rate_samples(run.params, ref_params, eval_ids, task.rate, rng)
    bad = [k for k, ok in zip(keys(report.tokens, report.mask), report.well_formed) if not ok]
    bad_set = set(bad)
    in_pairs.append(np.mean([k in rejected_set for k in bad]))
    pair_share.append(np.mean([k in bad_set for k in train_rejected]))
    assert not bad_set & chosen_set  # a malformed answer never wins a pair
    texts, counts = np.unique([tok.decode_completions(report.tokens[i:i + 1], 3)[0]
                               for i in np.flatnonzero(~report.well_formed)], return_counts=True)
    top = np.argsort(-counts)[:3]
    print(f"seed {seed}: {len(bad)} of {len(report.kl)} samples malformed; most frequent: "
          + ", ".join(f"{str(texts[i])!r} x{counts[i]}" for i in top))
    print(f"        {in_pairs[-1]:.0%} of the malformed samples are (prompt, answer) combinations that a "
          f"training pair REJECTED; those answers are the rejected side of {pair_share[-1]:.1%} of the pairs")

# %%
assert np.median(in_pairs) > 0.1 and np.median(pair_share) < 0.02
print(f"median over seeds: {np.median(in_pairs):.0%} of DPO beta=0.1's malformed samples were rejected in a "
      f"training pair (range {min(in_pairs):.0%}-{max(in_pairs):.0%}); those answers are the rejected side of "
      f"{np.median(pair_share):.1%} of the pairs (range {min(pair_share):.1%}-{max(pair_share):.1%})")

# %% [markdown]
# So the drift does not only go into answers that no pair covers: a sizable share of the
# malformed samples (printed; the share varies a lot with the seed and the reference model)
# are answers the pairs explicitly *rejected*, often the empty answer. What all of them have in
# common is that they are *rare* among the pairs: the rejected side of under two pairs in a
# hundred (asserted), or of none. Accuracy weighs every pair equally, so whether those few pairs
# are ranked right is a sliver of the accuracy, while how often the policy writes these answers
# is decided by everything else the loss pushed around. The implicit-reward accuracy did not see
# it; the samples did.

# %% [markdown]
# **Overfitting on few pairs.** DPO fits the pairs it is given; what it does to every other
# answer is only weakly constrained. With few pairs that shows: train the same DPO
# ($\beta = 0.5$, batch 32, lr $10^{-3}$) on only 64 pairs for 50 steps, three seeds, and
# compare it with the runs on all pairs at the same 50 steps.

# %%
few_pairs = train_pairs.take(np.arange(64))
few_runs = [train_and_judge(few_pairs, seed, steps=50, beta=0.5) for seed in SEEDS]
FEW = "DPO beta=0.5, 64 pairs, 50 steps"
curves[FEW] = np.stack([rows for _, rows in few_runs])
at_50 = CHECKPOINTS.index(50) + 1  # row 0 is step 0

# %% tags=["nbval-ignore-output"]
print("after 50 steps, per seed:    train acc (last 10)   held-out acc   true score        well-formed      KL")
for name, rows in (("all pairs", curves["DPO beta=0.5"][:, at_50]), ("64 pairs ", curves[FEW][:, -1])):
    train = (runs["DPO beta=0.5"] if name == "all pairs" else few_runs)
    train_acc = " ".join(f"{run.accuracies[40:50].mean():.2f}" for run, _ in train)
    print(f"DPO beta=0.5, {name}     {train_acc:19s}   " + "   ".join(
        " ".join(f"{v:+.2f}" if col == SCORE else f"{v:.2f}" for v in rows[:, col])
        for col in (ACC, SCORE, FORMED, KL)))

# %%
few = curves[FEW][:, -1]
few_train = [run.accuracies[40:50].mean() for run, _ in few_runs]
assert np.median(few_train) > 0.9  # it fits its 64 pairs (median of 3 seeds)
assert few[:, ACC].max() < median("DPO beta=0.5", ACC, at_50) and (few[:, SCORE] < ref_score).all()
assert (few[:, KL] > curves["DPO beta=0.5"][:, at_50, KL].max()).all()
assert (curves[FEW][:, 1:, SCORE].max(axis=1) < ref_score).all()  # no checkpoint of any seed improves
for name in ("DPO beta=0.5", "IPO tau=0.5"):  # on all pairs, still rising at the end
    assert median(name, SCORE, -1) > median(name, SCORE, -2), name
print(f"64 pairs: median training accuracy {np.median(few_train):.2f} (range {min(few_train):.2f}-"
      f"{max(few_train):.2f}); every seed: held-out accuracy below the all-pairs median, a true score below "
      "the reference's at every checkpoint, and more KL than any all-pairs run at the same step")

# %% [markdown]
# **The reward-vs-KL frontier.** Plot every run's true score against its KL at each checkpoint
# (thin lines: seeds; bold: the median of the KLs against the median of the scores, taken
# separately, so a bold point need not be any one run). Where a setting's curve lies higher at
# the same KL, it spends its drift better.

# %% tags=["nbval-ignore-output"]
colors = {"DPO beta=0.5": "C0", "DPO beta=0.1": "C3", "IPO tau=0.5": "C2", "naive loss": "C7", FEW: "C1"}
fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
for name, c in curves.items():
    for seed_rows in c:
        ax.plot(seed_rows[:, KL], seed_rows[:, SCORE], color=colors[name], alpha=0.25, lw=1)
    med = np.median(c, axis=0)
    ax.plot(med[:, KL], med[:, SCORE], "o-", color=colors[name], label=f"{name} (median of 3 seeds)")
    ax.annotate(f"step {int(med[-1, STEP])}", (med[-1, KL], med[-1, SCORE]), textcoords="offset points",
                xytext=(4, 4), fontsize=9, color=colors[name])
ax.axhline(3.0, color="grey", ls=":", label="best possible score")
ax.axhline(ref_score, color="grey", ls="--", label="reference")
ax.set_xlabel("KL(pi || ref) of sampled answers (nats per answer)")
ax.set_ylabel("true score of samples (malformed = -4)")
ax.set_title("Small beta (and the naive loss) drift further for less; 64 pairs never improve", fontsize=10)
ax.set_xlim(-0.1, 6.0)
ax.set_ylim(-2.6, 5.4)
ax.legend(fontsize=9, loc="upper center", ncol=2)
fig.tight_layout()
plt.show()

# %% tags=["nbval-ignore-output"]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100, sharex=True)
for name, c in curves.items():
    steps = c[0, :, STEP]
    for ax, col in zip(axes, (ACC, FORMED)):
        ax.plot(steps, np.median(c[:, :, col], axis=0), "o-", color=colors[name], label=name)
        ax.fill_between(steps, c[:, :, col].min(0), c[:, :, col].max(0), color=colors[name], alpha=0.15)
axes[1].axhline(ref_formed, color="grey", ls="--")
axes[1].text(75, ref_formed + 0.015, "reference", ha="center", va="bottom", fontsize=9, color="grey")
axes[0].set_ylabel("held-out implicit-reward accuracy")
axes[1].set_ylabel("well-formed samples (fraction)")
for ax in axes:
    ax.set_xlabel("training step")
    ax.set_ylim(0, 1.02)
axes[0].set_title("Held-out accuracy: every setting ranks most pairs right...", fontsize=10)
axes[1].set_title("...but not every one writes well (median; band: 3 seeds)", fontsize=10)
axes[0].legend(fontsize=8, loc="lower right")  # the same colours in both panels
fig.tight_layout()
plt.show()

# %% [markdown]
# The 64-pair runs fit their pairs (median training accuracy above 0.9) while their samples are
# *worse* than the reference's at every checkpoint, with more KL than any run on all pairs at
# the same step. That is overfitting from the first checkpoint: the true score never rises, so
# this is not the rise-then-fall curve of over-optimisation (Gao et al., 2023, for learned reward
# models; Rafailov et al., 2024 measure it for DPO and IPO at scale), which this lesson does not
# show. Lower held-out accuracy was the warning; the samples were the proof. On all the pairs,
# the median true score of DPO with $\beta = 0.5$ and of IPO was still rising at step 150
# (asserted above): this budget does not reach their peak.
#
# **IPO against overconfidence.** The pairs are deterministic (the annotator never hesitates),
# so DPO can always lower its loss by pushing the margin further. IPO's square has a minimum
# at a finite margin, $1/(2\tau)$ per token: follow the minibatch margins of the runs above, in
# windows of 25 steps.

# %% tags=["nbval-ignore-output"]
answer_len = np.mean(np.concatenate([train_pairs.chosen_mask[:, 1:].sum(1),
                                     train_pairs.rejected_mask[:, 1:].sum(1)]))
ipo_windows = np.array([run.margins.reshape(-1, 25).mean(1) for run, _ in runs["IPO tau=0.5"]])
dpo_windows = np.array([run.margins.reshape(-1, 25).mean(1) / answer_len for run, _ in runs["DPO beta=0.5"]])
print("minibatch margin per token (nats), mean of each 25-step window, per seed:")
for seed, w_ipo, w_dpo in zip(SEEDS, ipo_windows, dpo_windows):
    print(f"  seed {seed}  IPO tau=0.5: " + " ".join(f"{m:.2f}" for m in w_ipo)
          + "   DPO beta=0.5: " + " ".join(f"{m:.2f}" for m in w_dpo))
print(f"IPO's target 1/(2 tau) = {1 / (2 * 0.5):.2f}; DPO has none")

# %%
med_ipo = np.median(ipo_windows, axis=0)
assert med_ipo[-1] > med_ipo[-2] > med_ipo[-3]  # still climbing over the last 75 steps (median)
assert ipo_windows[:, -1].max() < 1 / (2 * 0.5)  # and below its target on every seed
print(f"IPO, median of 3 seeds, last three windows: {med_ipo[-3]:.2f} -> {med_ipo[-2]:.2f} -> {med_ipo[-1]:.2f}: "
      f"still rising, below the target {1 / (2 * 0.5):.2f} on every seed")

# %% [markdown]
# Within this budget IPO's margin is still climbing towards its target, and has not reached it
# on any seed: its finite minimum, the fix for overconfidence, never came into play in these
# runs, so they do not demonstrate IPO's bound (a longer run or a larger $\tau$ would). IPO's
# smaller KL here comes from how its square weighs the pairs on the way up, not from the
# target. Check it showed where each loss is smallest. DPO's margin has no target: its loss
# keeps falling as the margin grows, which is why, on deterministic pairs, $\beta$ and the
# number of steps are its only brakes.
# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | the loss starts at $\log 2$ and never moves | the "reference" log-probs were computed with the policy inside the loss, so $z \equiv 0$ | compute the reference's log-probs from frozen parameters, with no gradient |
# | accuracy at step 0 is not 0 (some pairs "right" before any update; Check it measures how many) | the reference's log-probs were computed in another batch or code path than the policy's, and float32 rounding breaks the ties at random | compute both with the same function on the same minibatch (as `rc.train_on_preferences` does) |
# | implicit-reward accuracy is high, yet samples are malformed or worse than before | accuracy weighs every pair equally; the answers the policy now writes are rare among the pairs or absent (even ones the pairs rejected), so ranking them costs little accuracy | judge samples with a scorer the model never saw: true score, well-formed rate, KL |
# | samples get worse the longer you train, with training accuracy near 1 | overfitting: few pairs fitted perfectly, the rest of the answer space barely constrained | more pairs, larger $\beta$ or IPO, and stop where the true score of samples stops rising |
# | KL grows without bound | $\beta$ too small, or deterministic preferences with plain DPO | raise $\beta$; IPO or label smoothing |
# | two settings compared, one "drifts less" | compared at different step counts | compare KL and score at equal budgets (same steps, batch, lr) |
# | chosen answers become *less* likely | DPO only widens the gap; both sides can fall | expected to a degree; watch the samples, mix in an SFT loss on chosen answers if it matters |
# | longer answers always win | summed log-probs grow with length and the annotator liked length | IPO's or SimPO's length averaging, or length-balanced pairs |
# | prompt tokens in the mask | the prompt's log-prob is the same for both answers but adds noise and gradient | mask only the answer (and its EOS) |
# | pairs from a different model than the reference | the implicit reward is measured against a reference that never produced the data | SFT the reference on the same kind of data first |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: SimPO, DPO without a reference.** SimPO (Meng, Xia, Chen, 2024) drops the
#    reference model: an answer's reward is the policy's own *average* log-prob per token,
#    scaled by $\beta$, and the chosen answer must win by a margin $\gamma$. Write
#    `simpo_loss(policy_chosen, policy_rejected, chosen_lengths, rejected_lengths, beta, gamma)`
#    returning the mean loss over pairs (summed log-probs in, as everywhere in this lesson).
#    With no reference in the loss, only $\beta$, $\gamma$ and the number of steps limit how
#    far the policy moves: judge it by its samples, as above.
# 2. **Medium: the exact frontier of one prompt.** For one prompt with a finite set of answers,
#    the maximiser of $\mathbb{E}_\pi[r] - \beta\,\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ is known
#    in closed form (The idea checked it on three answers). Write
#    `kl_regularised_optimum(ref_probs, reward, beta)` returning `(policy, expected_reward, kl)`
#    that also works where that check's code breaks: a tiny $\beta$ ($r/\beta$ in the
#    thousands) and answers the reference never writes. Sweeping $\beta$ traces, for that
#    prompt, the best expected score any policy can reach at each KL: the ceiling that a
#    measured frontier like the one above lies under.
# 3. **Hard: cDPO's gradient by hand.** Write `cdpo_gradient(policy_chosen, policy_rejected,
#    ref_chosen, ref_rejected, beta, eps)` returning the gradients of the mean label-smoothed
#    DPO loss (The idea) with respect to `policy_chosen` and `policy_rejected`, with no autodiff.
#    Read your formula: the gradient vanishes at $\beta z = \log\frac{1-\varepsilon}{\varepsilon}$
#    (one of the checker's cases sits there), and a pair won by a very wide margin, which plain
#    DPO leaves alone, is pulled *back* with a force that tends to $\beta\varepsilon/B$.
# 4. **Explain why** implicit-reward accuracy stayed high while DPO with $\beta = 0.1$ wrote
#    fewer well-formed answers than the reference. Use the printed evidence of "Where did the
#    probability go?", not the first option that sounds right. (a) the malformed answers it
#    writes appear in no pair, so accuracy cannot see them; (b) accuracy weighs every pair
#    equally, and the malformed answers it writes are rare among the pairs (the rejected side
#    of a few, or of none), so ranking those few pairs right says nothing about how often the
#    policy writes them;
#    (c) accuracy was measured on the training pairs, so it overfits; (d) float32 noise makes it
#    unreliable. Set `accuracy_answer` to a letter.

# %% tags=["solution"]
def simpo_loss(policy_chosen, policy_rejected, chosen_lengths, rejected_lengths, beta, gamma):
    margin = beta * (policy_chosen / chosen_lengths - policy_rejected / rejected_lengths) - gamma
    return float(np.mean(np.logaddexp(0.0, -margin)))


# %%
assert rc.exercises.check("simpo_loss", simpo_loss)

# %% tags=["solution"]
def kl_regularised_optimum(ref_probs, reward, beta):
    with np.errstate(divide="ignore"):
        log_w = np.log(ref_probs) + reward / beta
    w = np.exp(log_w - log_w.max())
    policy = w / w.sum()
    live = policy > 0
    kl = float(np.sum(policy[live] * np.log(policy[live] / ref_probs[live])))
    return policy, float(policy @ reward), kl


# %%
assert rc.exercises.check("kl_regularised_optimum", kl_regularised_optimum)

# %% tags=["solution"]
def cdpo_gradient(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, eps):
    z = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)
    win = 0.5 * (1 + np.tanh(0.5 * beta * z))  # sigmoid(beta z) with no overflow warning for huge |beta z|
    d_z = beta * (win - (1 - eps)) / len(z)
    return d_z, -d_z


# %%
assert rc.exercises.check("cdpo_gradient", cdpo_gradient)

# %% tags=["solution"]
accuracy_answer = "b"

# %%
assert rc.exercises.check("dpo_accuracy_question", lambda: accuracy_answer)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | DPO | "RLHF without RL" | maximum likelihood of the preference labels under Bradley-Terry, with the reward written as $\beta\log(\pi/\pi_\text{ref})$; its optimum is the optimum of KL-regularised RLHF when every pair of answers is covered, and only loosely tied to it with finitely many pairs |
# | implicit reward | "the DPO reward" | $\beta\log\frac{\pi(y\mid x)}{\pi_\text{ref}(y\mid x)}$: defined up to a per-prompt constant, so only differences between answers to one prompt mean anything |
# | reward accuracy | "how often it prefers the chosen one" | the fraction of pairs whose chosen answer has the strictly larger implicit reward; exactly 0 at the start, and high for a model whose samples are broken |
# | true score, well-formed rate | "the eval" | what the model's own samples are worth to a scorer it never saw; the figures that judge a preference-trained model |
# | margin | "how sure the model is" | $z$, the difference of the two log-ratios; DPO drives it up without bound on deterministic pairs |
# | $\beta$ | "the KL coefficient" | the price of drift from the reference; a small $\beta$ lets the policy drift further at the same budget |
# | reward-vs-KL frontier | "the trade-off curve" | true score of samples against their KL from the reference; compare settings at equal budgets |
# | over-optimisation | "reward hacking" | the implicit (or learned) reward keeps improving while the true score, after rising, falls (this lesson shows only the overfitting of few pairs, where it never rises) |
# | reference model | "the frozen copy" | the SFT model the policy starts from and is measured against; never updated |
# | IPO | "DPO with a squared loss" | regresses the length-averaged margin onto $1/(2\tau)$, so it stays finite even when one answer always wins |
# | label smoothing / cDPO | "robust DPO" | assumes each label is flipped with probability $\varepsilon$; the margin stops at $\log\frac{1-\varepsilon}{\varepsilon}/\beta$ |
# | SimPO | "reference-free DPO" | reward = $\beta$ times the average log-prob per token, with a target margin $\gamma$; no reference model in the loss |

# %% [markdown]
# ## Further reading
#
# - Rafailov, Sharma, Mitchell, Ermon, Manning, Finn (2023), *Direct Preference Optimization:
#   Your Language Model is Secretly a Reward Model*: the derivation of this lesson, and the
#   controlled sentiment experiment our praise/roast task imitates (judged, as here, by the
#   true reward of samples against their KL).
# - Azar, Rowland, Piot, Guo, Calandriello, Valko, Munos (2023), *A General Theoretical
#   Paradigm to Understand Learning from Human Preferences*: why DPO overfits deterministic
#   preferences, and IPO.
# - Rafailov, Chittepu, Park, Sikchi, Hejna, Knox, Finn, Niekum (2024), *Scaling Laws for
#   Reward Model Overoptimization in Direct Alignment Algorithms*: over-optimisation in DPO and
#   IPO, measured as true quality against KL.
# - Gao, Schulman, Hilton (2023), *Scaling Laws for Reward Model Overoptimization*: the
#   rise-then-fall of true reward with KL, for RLHF against a learned reward model.
# - Mitchell (2023), *A note on DPO with noisy preferences and relationship to IPO*: the
#   conservative (label-smoothed) DPO loss.
# - Meng, Xia, Chen (2024), *SimPO: Simple Preference Optimization with a Reference-Free
#   Reward*: the loss of exercise 1.
# - Hugging Face TRL, `DPOTrainer` documentation: the conventions followed here (summed
#   log-probs, reported rewards and accuracy, IPO on averaged log-probs, reference log-probs
#   computed per batch unless precomputed).
# - Bradley and Terry (1952), *Rank Analysis of Incomplete Block Designs*: the preference model
#   under both RLHF and DPO.
