# %% [markdown]
# # 12 · Reward models and RLHF
#
# *Prerequisites:* 08, 10, 11
# *Time:* 60 minutes
# *You will build:* a Bradley-Terry reward model from preference pairs, the token-level MDP of a language model with its action mask, KL-penalised per-token rewards, and PPO on tokens that improves a tiny LM without breaking it.

# %% [markdown]
# A language model fine-tuned on examples (supervised fine-tuning, SFT) imitates them, the good
# and the bad alike. People can rarely write down a reward for "a good answer", but they can
# say which of two answers they prefer. RLHF turns those comparisons into a reward model and
# then optimises the language model against it with PPO, on a leash: a KL penalty to the SFT
# model. This lesson builds every piece on a language model small enough to train in seconds.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

# %% [markdown]
# ## The problem
#
# The task: a prompt such as "the cat" is completed by a short sentence, "is very great .".
# The grammar is `VERB [ADVERB] ADJECTIVE .`; the *true quality* of a completion is the warmth
# of its adjective (great 1.0, good 0.7, fine 0.4, bad 0.0), and 0 if it breaks the grammar.
# The SFT data uses all adjectives equally, so the SFT model writes fluent but lukewarm text:

# %%
tok = rc.Tokenizer(rc.STYLE_WORDS)
print(tok)
prompts, completions = rc.style_data(1500, seed=SEED)
tokens, mask, prompt_len = tok.encode_pairs(prompts, completions)
print("an SFT example:", prompts[0], "->", completions[0])
print("tokens:", tokens[0], " mask:", mask[0].astype(int))

params = rc.lm_init(tok.vocab_size, context=6, dim=8, seed=SEED, hidden=64)
sft_params, sft_losses = rc.sft(params, tokens, mask, steps=200, lr=1e-2, seed=SEED, batch=64)

eval_prompts = tok.encode_prompts(rc.style_data(256, seed=1)[0])
width = eval_prompts.shape[1]


def true_quality(toks, m):
    return rc.style_quality(tok.decode_completions(toks, width))[0]


def fluency(toks, m):
    return rc.style_quality(tok.decode_completions(toks, width))[1]


sft_samples, sft_mask = rc.generate(sft_params, eval_prompts, 8, rng)
sft_quality, sft_fluency = true_quality(sft_samples, sft_mask).mean(), fluency(sft_samples, sft_mask).mean()
assert sft_fluency > 0.9 and 0.4 < sft_quality < 0.7

# %% tags=["nbval-ignore-output"]
print(f"SFT loss {sft_losses[0]:.2f} -> {sft_losses[-1]:.2f} nats per token")
print(f"SFT samples: fluent {sft_fluency:.0%}, mean true quality {sft_quality:.2f}")
for p, c in zip(eval_prompts[:4], tok.decode_completions(sft_samples[:4], width)):
    print(" ", tok.decode(p), "->", c)

# %% [markdown]
# You want warmer completions. You have no formula for "warm", only people who, shown two
# completions, pick one. How do you turn those picks into a better model?

# %% [markdown]
# ## The idea
#
# **1. A reward model from preferences.** The Bradley-Terry model says a person prefers $y_c$ to
# $y_r$ with probability $\sigma(r(y_c) - r(y_r))$. Fit $r_\phi$ by maximum likelihood on pairs
# (chosen, rejected):
# $$\mathcal{L}(\phi) = -\frac1N\sum_i \log\sigma\big(r_\phi(y^i_c) - r_\phi(y^i_r)\big).$$
# Only differences of rewards are identified: adding a constant changes nothing.
#
# **2. The token-level MDP.** The state is the prompt plus the tokens generated so far, an
# action is the next token, the policy is the LM, $\pi(a_t|s_t)$, and the episode ends at EOS
# or at the length limit. Only generated tokens are actions: the prompt and the padding are
# part of the input, and the **action mask** keeps them out of every loss. Logits at position
# $t$ predict token $t+1$, so the mask is read shifted by one: `mask[:, 1:]`.
#
# **3. The KL-penalised reward.** Maximising $r_\phi$ alone lets the policy drift wherever the
# reward model is wrong. RLHF maximises
# $\mathbb{E}_{y\sim\pi}[r_\phi(y)] - \beta\,\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ with the SFT
# model as $\pi_{\text{ref}}$, spread over tokens as
# $$r_t = -\beta\big(\log\pi(a_t|s_t) - \log\pi_{\text{ref}}(a_t|s_t)\big)
#   + [t = \text{last}]\; r_\phi(y).$$
# The sum of the penalties over a sampled completion is a one-sample estimate of the sequence KL.
#
# **4. PPO on tokens.** Each token's advantage here is its reward-to-go $G_t=\sum_{t'\ge t} r_{t'}$
# minus a baseline (the batch mean of $G$ at that position), normalised; real systems learn a
# value head instead. The clipped objective of lesson 10 then applies token by token.

# %% [markdown]
# ## Build it
#
# **Step 1: the Bradley-Terry loss.** Simulated people label pairs of SFT-style completions:
# the warmer one wins with probability $\sigma(4(q_1 - q_2))$, so close calls are noisy.

# %%
def my_preference_loss(r_chosen, r_rejected):
    return np.mean(np.logaddexp(0.0, -(r_chosen - r_rejected)))  # -log sigmoid(x) = log(1 + e^-x)


r_c, r_r = np.array([2.0, 0.5, -1.0]), np.array([1.0, 1.5, -1.0])
print(f"my loss {my_preference_loss(r_c, r_r):.4f}   rc {float(rc.preference_loss(r_c, r_r)):.4f}")
np.testing.assert_allclose(my_preference_loss(r_c, r_r), rc.preference_loss(r_c, r_r))

# %% [markdown]
# The reward model here is deliberately simple, and simple in the way real ones fail: a linear
# score of the word counts of the completion, $r_\phi(y) = \sum_v \phi_v\,\mathrm{count}_v(y)$.
# It cannot see word order or grammar.

# %%
pair_prompts, chosen, rejected = rc.style_preferences(800, seed=2)
print("a pair:", pair_prompts[0], "| chosen:", chosen[0], "| rejected:", rejected[0])
tc, mc, _ = tok.encode_pairs(pair_prompts, chosen)
tr, mr, _ = tok.encode_pairs(pair_prompts, rejected)
counts_c = rc.token_counts(tc, mc, tok.vocab_size)
counts_r = rc.token_counts(tr, mr, tok.vocab_size)


def rm_loss(phi):
    return rc.preference_loss(counts_c @ phi["w"], counts_r @ phi["w"])


phi = {"w": np.zeros(tok.vocab_size)}
opt = rc.Adam(lr=0.05)
opt_state = opt.init(phi)
for _ in range(200):
    loss, grads = rc.value_and_grad(rm_loss)(phi)
    phi, opt_state = opt.step(phi, grads, opt_state)


def reward_model(toks, m):
    return rc.token_counts(toks, m, tok.vocab_size) @ phi["w"]


held_p, held_c, held_r = rc.style_preferences(400, seed=3)
hc, hmc, _ = tok.encode_pairs(held_p, held_c)
hr, hmr, _ = tok.encode_pairs(held_p, held_r)
held_accuracy = np.mean(reward_model(hc, hmc) > reward_model(hr, hmr))
print(f"reward-model loss {loss:.3f}; held-out pairs ranked like the people: {held_accuracy:.0%}")
print("learned word rewards:", {w: round(float(phi["w"][tok.ids[w]]), 2)
                                for w in ["great", "good", "fine", "bad", "very", "is", "was", "."]})
assert held_accuracy > 0.7

# %% [markdown]
# The ranking of adjectives is right. Notice that "." gets no reward at all, and the two verbs
# get whatever small values the label noise left: every completion has exactly one "." and one
# verb, so the pairs can only say whether "is" beat "was", which the people never cared about.
# And nothing stops a completion from containing "great" five times.
#
# **Step 2: the action mask and sequence log-probs.** Sample completions from the SFT model; the
# mask marks the generated tokens (EOS included), nothing else.

# %%
batch_prompts = eval_prompts[:4]
sample_tokens, sample_mask = rc.generate(sft_params, batch_prompts, 8, rng)
assert not sample_mask[:, :width].any()  # the prompt is never an action

# %% tags=["nbval-ignore-output"]
print("prompt length:", width)
print("tokens:\n", sample_tokens)
print("action mask:\n", sample_mask.astype(int))

# %% [markdown]
# Now the log-prob of each completion, by hand: log-softmax, pick the *next* token, keep the
# masked positions.

# %%
def my_sequence_log_prob(logits, tokens, mask):
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]  # logits t -> token t+1
    return np.where(mask[:, 1:], picked, 0.0).sum(axis=1)


logits = np.asarray(rc.lm_logits(sft_params, sample_tokens), dtype=np.float64)[:, :-1]
mine = my_sequence_log_prob(logits, sample_tokens, sample_mask)
np.testing.assert_allclose(mine, rc.sequence_log_prob(logits, sample_tokens, sample_mask), rtol=1e-6)

# %% tags=["nbval-ignore-output"]
print("log pi(completion | prompt):", np.round(mine, 3))

# %% [markdown]
# **Step 3: KL-penalised per-token rewards.** Per-token arrays are aligned with `tokens[:, 1:]`
# and go with `mask[:, 1:]`. Take a policy that has drifted from the reference (here: the SFT
# model with noise added), score the samples, and spread the reward over the tokens.

# %%
def my_kl_penalized_rewards(scores, logp, ref_logp, mask, beta):
    rewards = np.where(mask, -beta * (logp - ref_logp), 0.0)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)  # last action token of each row
    rewards[np.arange(len(scores)), last] += scores
    return rewards


drifted = rc.tree_map(lambda p: p + 0.3 * rng.standard_normal(p.shape).astype(p.dtype), sft_params)
logp = rc.token_log_probs(np.asarray(rc.lm_logits(drifted, sample_tokens))[:, :-1], sample_tokens)
ref_logp = rc.token_log_probs(np.asarray(rc.lm_logits(sft_params, sample_tokens))[:, :-1], sample_tokens)
scores = reward_model(sample_tokens, sample_mask)
action = sample_mask[:, 1:]
mine = my_kl_penalized_rewards(scores, logp, ref_logp, action, beta=0.3)
np.testing.assert_allclose(mine, rc.kl_penalized_rewards(scores, logp, ref_logp, action, beta=0.3))

# %% tags=["nbval-ignore-output"]
print("scores:", np.round(scores, 2))
print("per-token rewards:\n", np.round(mine, 2))

# %% [markdown]
# **Step 4: advantages.** Each token's reward-to-go, minus the batch's mean reward-to-go at the
# same position, divided by the spread. A completion is one episode: the sum never runs past
# its last action token into the padding.

# %%
def my_advantages(rewards, mask):
    to_go = np.where(mask, np.cumsum(rewards[:, ::-1], axis=1)[:, ::-1], 0.0)
    baseline = to_go.sum(axis=0) / np.maximum(mask.sum(axis=0), 1)
    adv = np.where(mask, to_go - baseline, 0.0)
    return adv / adv[mask].std()


advantages = my_advantages(mine, action)
np.testing.assert_allclose(advantages, rc.rlhf_advantages(mine, action))
assert not advantages[~action].any()

# %% [markdown]
# **Step 5: PPO on tokens.** The clipped loss of lesson 10, `rc.ppo_clip_loss`, on the action
# tokens only, with the rollout's log-probs as `old_logp`. `rc.rlhf_step` puts the pieces
# together: sample, score, penalise, advantages, a few epochs of clipped updates.

# %%
print(inspect.getsource(rc.rlhf_step))

# %% [markdown]
# ## Check it
#
# **Prompt and padding never count.** Change the logits at every position the mask excludes:
# the sequence log-prob is identical and those positions get exactly zero gradient.

# %%
def total_log_prob(lg):
    return rc.sum(rc.sequence_log_prob(lg, sample_tokens, sample_mask))


value, grad = rc.value_and_grad(total_log_prob)(logits)
excluded = ~sample_mask[:, 1:]
perturbed = logits + 50.0 * excluded[..., None] * rng.standard_normal(logits.shape)
value2, grad2 = rc.value_and_grad(total_log_prob)(perturbed)
print(f"changed the logits at {int(excluded.sum())} excluded positions; log-prob unchanged: {value == value2}")
print(f"largest gradient at an excluded position: {np.abs(grad2[excluded]).max():.1f}")
assert value == value2 and not grad[excluded].any() and not grad2[excluded].any()

# %% [markdown]
# **Exact KL is never negative; a sampled log-ratio can be.** `rc.exact_kl` sums
# $\pi(v)(\log\pi(v) - \log\pi_{\text{ref}}(v))$ over the whole vocabulary at each position;
# `rc.sampled_log_ratio` only looks at the sampled token, which the reference may like more.

# %%
drifted_logits = np.asarray(rc.lm_logits(drifted, sample_tokens), dtype=np.float64)[:, :-1]
exact = rc.exact_kl(drifted_logits, logits, sample_mask)
sampled = rc.sampled_log_ratio(drifted_logits, logits, sample_tokens, sample_mask)
assert (exact >= 0).all()
k_draws = -rng.exponential(size=(2, 10_000))
k3 = rc.kl_estimate(k_draws[0], k_draws[1], "k3")
k1 = rc.kl_estimate(k_draws[0], k_draws[1], "k1")
print(f"k3 on random log-prob pairs: min {k3.min():.4f} (never < 0); k1: min {k1.min():.2f}")
assert (k3 >= 0).all() and (k1 < 0).any()

# %% tags=["nbval-ignore-output"]
print("exact KL per sequence:      ", np.round(exact, 3))
print("sampled log-ratio per seq.: ", np.round(sampled, 3))

# %% [markdown]
# These completions were sampled from the reference, not from the drifted policy, so their
# log-ratios are biased low: on average they estimate $-\mathrm{KL}(\pi_{\text{ref}}\,\|\,\pi)$,
# which is never positive. A sampled log-ratio estimates $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$
# only on tokens drawn from $\pi$ itself, which is why RLHF computes it on the policy's own
# rollouts, and why even then one sequence's value can be below zero.

# %% [markdown]
# ## Use it
#
# Start the policy at the SFT model, keep the SFT model frozen as the reference, and run
# 60 iterations of RLHF-PPO (64 prompts each, 4 epochs). The lesson's bound: the mean KL from
# the reference stays **below 3 nats per completion**. With $\beta = 0.3$:

# %%
KL_BOUND = 3.0
ITERATIONS = 60
kl_run = rc.rlhf_train(sft_params, sft_params, reward_model, eval_prompts, ITERATIONS, beta=0.3,
                       lr=3e-3, seed=SEED, batch=64, max_new=8, epochs=4, metric=true_quality)
out, out_mask = rc.generate(kl_run.params, eval_prompts, 8, rng)
kl_quality, kl_fluency = true_quality(out, out_mask).mean(), fluency(out, out_mask).mean()
print(f"reward-model score rose: {kl_run.score[-5:].mean() > kl_run.score[:3].mean() + 1.0}")
print(f"mean KL stayed below {KL_BOUND} nats: {kl_run.kl.max() < KL_BOUND}")
print(f"true quality rose above the SFT model's: {kl_quality > sft_quality + 0.2}")
assert kl_run.score[-5:].mean() > kl_run.score[:3].mean() + 1.0
assert kl_run.kl.max() < KL_BOUND
assert kl_quality > sft_quality + 0.2 and kl_fluency > 0.9

# %% tags=["nbval-ignore-output"]
print(f"score {kl_run.score[:3].mean():.2f} -> {kl_run.score[-5:].mean():.2f}; "
      f"largest mean KL {kl_run.kl.max():.2f} nats; "
      f"true quality {sft_quality:.2f} -> {kl_quality:.2f}; fluent {kl_fluency:.0%}")
for p, c in zip(eval_prompts[:4], tok.decode_completions(out[:4], width)):
    print(" ", tok.decode(p), "->", c)

# %% [markdown]
# Now remove the leash: $\beta = 0$, everything else the same.

# %%
hack_run = rc.rlhf_train(sft_params, sft_params, reward_model, eval_prompts, ITERATIONS, beta=0.0,
                         lr=3e-3, seed=SEED, batch=64, max_new=8, epochs=4, metric=true_quality)
out0, out0_mask = rc.generate(hack_run.params, eval_prompts, 8, rng)
hack_quality, hack_fluency = true_quality(out0, out0_mask).mean(), fluency(out0, out0_mask).mean()
fluent_tokens, fluent_mask, _ = tok.encode_pairs(*rc.style_data(400, seed=4))
best_fluent_score = reward_model(fluent_tokens, fluent_mask).max()
print(f"score beats every fluent completion's: {hack_run.score[-5:].mean() > best_fluent_score}")
print(f"true quality fell below the SFT model's: {hack_quality < sft_quality}")
print(f"mean KL went far past the bound (> 3x): {hack_run.kl[-5:].mean() > 3 * KL_BOUND}")
extra_score = hack_run.score[-5:].mean() - best_fluent_score
kl_cost = 0.3 * hack_run.kl[-5:].mean()
print(f"at beta = 0.3 its KL would cost more than its extra score: {kl_cost > extra_score}")
assert hack_run.score[-5:].mean() > best_fluent_score
assert hack_quality < sft_quality and hack_fluency < 0.5
assert hack_run.kl[-5:].mean() > 3 * KL_BOUND and kl_cost > extra_score

# %% tags=["nbval-ignore-output"]
print(f"score {hack_run.score[:3].mean():.2f} -> {hack_run.score[-5:].mean():.2f} "
      f"(best fluent completion: {best_fluent_score:.2f}); mean KL {hack_run.kl[-5:].mean():.1f} nats; "
      f"true quality {hack_quality:.2f}; fluent {hack_fluency:.0%}")
print(f"extra score over the best fluent completion {extra_score:.2f}; "
      f"its KL's cost at beta = 0.3: {kl_cost:.2f}")
for p, c in zip(eval_prompts[:4], tok.decode_completions(out0[:4], width)):
    print(" ", tok.decode(p), "->", c)

# %%
fig, axes = plt.subplots(1, 3, figsize=(9, 3), dpi=72)
for run, name in ((kl_run, "beta = 0.3"), (hack_run, "beta = 0")):
    axes[0].plot(run.score, label=name)
    axes[1].plot(run.kl, label=name)
    axes[2].plot(run.metric, label=name)
axes[1].axhline(KL_BOUND, color="k", ls="--", lw=1, label="bound")
axes[1].set_yscale("log")
for ax, title, ylabel in zip(axes, ["Reward-model score: both rise", "KL: the unleashed run leaves the bound",
                                    "True quality: the unleashed run collapses"],
                             ["mean score", "nats per completion", "mean true quality"]):
    ax.set_title(title)
    ax.set_xlabel("RLHF iteration")
    ax.set_ylabel(ylabel)
axes[0].legend()
axes[1].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Without the KL term the policy found what the reward model cannot see: word order. Repeating
# "great" earns more reward than any real sentence, and the completions stop being sentences.
# That is reward hacking, and the growing KL is its alarm. The leashed policy could not afford
# that detour: leaving the grammar means choosing tokens the reference all but rules out, and
# each costs $\beta$ times its log-ratio to the reference. At $\beta = 0.3$ the KL the hacked
# completions carry would cost more than the extra score they earn over the best fluent
# sentence (both printed above). So the leashed policy moved only as far as the reference made
# cheap, to its warmest fluent sentences.
#
# $\beta = 0.3$ is larger than the 0.01-0.05 typical of large models: what matters is $\beta$
# relative to the reward scale and to how sharply the reference rules out bad tokens. Choose
# it by watching the KL, not by copying a number.

# %% [markdown]
# ## Pitfalls
#
# - **Scoring the prompt.** Summing log-probs over the whole sequence makes the loss depend on
#   tokens the policy did not choose; use the action mask, read as `mask[:, 1:]`.
# - **Off by one.** `logits[:, t]` predicts `tokens[:, t+1]`. Scoring `tokens[:, t]` trains the
#   model to copy its input.
# - **The KL the wrong way round.** RLHF penalises $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ from
#   samples of $\pi$: $d = \log\pi_{\text{ref}} - \log\pi$, $k_3 = e^d - d - 1$. Flipping $d$
#   estimates nothing useful.
# - **Reporting a sampled log-ratio as "the KL".** A single sequence's log-ratio can be
#   negative; average many, or use the exact KL when you have the logits.
# - **$\beta$ too small or a reward model too narrow.** The symptom is the one above: the
#   score climbs, the KL climbs past a few nats, samples degrade. Stop early, raise $\beta$, or
#   add the exploited completions, labelled, to the preference data.
# - **Reward at every token.** The reward-model score belongs to the finished completion: add it
#   at the last action token only, not to every token (which would reward length).

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the k3 estimator.** `kl_estimate_k3(logp, ref_logp)` returns $e^d - d - 1$ with
#    $d = $ `ref_logp - logp`, elementwise.
# 2. **Medium: sequence log-probs.** `sequence_log_prob(logits, tokens, mask)` with logits
#    `[B, L-1, V]`, tokens and mask `[B, L]`: the log-prob of each completion.
# 3. **Hard: KL-penalised rewards.** `kl_penalized_rewards(scores, logp, ref_logp, mask, beta)`
#    with `[B, T]` per-token arrays: $-\beta(\log\pi - \log\pi_{\text{ref}})$ on action tokens,
#    the score added at each row's last action token, 0 elsewhere.

# %% tags=["solution"]
def kl_estimate_k3(logp, ref_logp):
    d = np.asarray(ref_logp) - np.asarray(logp)
    return np.exp(d) - d - 1


# %%
assert rc.exercises.check("kl_estimate_k3", kl_estimate_k3)

# %% tags=["solution"]
def sequence_log_prob(logits, tokens, mask):
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    picked = np.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
    return np.where(mask[:, 1:], picked, 0.0).sum(axis=1)


# %%
assert rc.exercises.check("sequence_log_prob", sequence_log_prob)

# %% tags=["solution"]
def kl_penalized_rewards(scores, logp, ref_logp, mask, beta):
    rewards = np.where(mask, -beta * (np.asarray(logp) - np.asarray(ref_logp)), 0.0)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    rewards[np.arange(len(scores)), last] += scores
    return rewards


# %%
assert rc.exercises.check("kl_penalized_rewards", kl_penalized_rewards)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | SFT | "instruction tuning" | maximum likelihood on example completions: masked next-token cross-entropy on the completion tokens |
# | preference pair | "chosen / rejected" | one prompt, two completions, and which one a person preferred |
# | Bradley-Terry | "the reward-model loss" | $P(y_c \succ y_r) = \sigma(r(y_c) - r(y_r))$, fitted by $-\log\sigma$ of the difference |
# | reward model | "RM" | a learned score of a completion; only its differences are identified, and it is wrong wherever the data never went |
# | token-level MDP | "the LM as a policy" | state = prompt + tokens so far, action = next token, reward at the end, episode ends at EOS |
# | action mask | "loss mask" | True on generated tokens only: prompt, padding and observations never enter a policy loss |
# | reference model | "the SFT anchor" | the frozen starting policy that the KL penalty measures drift from |
# | KL penalty | "the leash" | per token $-\beta(\log\pi - \log\pi_{\text{ref}})$: keeps the policy where the reward model is trustworthy |
# | reward hacking | "overoptimisation" | the proxy reward rises while the true goal falls; the KL from the reference grows |

# %% [markdown]
# ## Further reading
#
# - Christiano et al. (2017), *Deep reinforcement learning from human preferences*, NeurIPS:
#   reward models from pairwise comparisons, the start of RLHF.
# - Ziegler et al. (2019), *Fine-tuning language models from human preferences*: the
#   KL-penalised reward and PPO on a language model.
# - Stiennon et al. (2020), *Learning to summarize from human feedback*, NeurIPS: RLHF at scale,
#   and reward hacking when the KL grows.
# - Ouyang et al. (2022), *Training language models to follow instructions with human feedback*
#   (InstructGPT): the SFT -> reward model -> PPO pipeline.
# - Gao, Schulman, Hilton (2022), *Scaling laws for reward model overoptimization*: true reward
#   against KL, rising then falling.
# - Bradley & Terry (1952), *Rank analysis of incomplete block designs*, Biometrika: the
#   pairwise comparison model.
# - Schulman (2020), *Approximating KL divergence* (blog note): the k1, k2, k3 estimators.
# - Huang et al. (2024), *The N+ implementation details of RLHF with PPO*: masks, padding and
#   the many places real implementations differ.
