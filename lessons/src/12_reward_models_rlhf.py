# %% [markdown]
# # 12 · Reward models and RLHF
#
# *Prerequisites:* 08, 09, 10, 11
# *Time:* 90 minutes
# *You will build:* the Bradley-Terry loss of a reward model, sequence log-probs under the action mask, the missing-EOS penalty for completions cut at the length limit, KL-penalised per-token rewards, and the critic-free token advantages of RLHF-PPO.

# %% [markdown]
# A language model fine-tuned on examples (supervised fine-tuning, SFT) imitates them, the good
# and the bad alike. People can rarely write down a reward for "a good answer", but they can
# say which of two answers they prefer. RLHF turns those comparisons into a reward model, then
# optimises the language model against it with PPO, on a leash: a KL penalty to the SFT model.
# This lesson builds every piece on a small transformer language model, and then
# measures the trade-off the leash controls: how far the policy may move before the reward
# model's score stops meaning what it should.

# %%
import inspect
import itertools

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
# The SFT data uses all adjectives equally, so the SFT model writes fluent but lukewarm text.
# The model is a one-layer causal transformer (token and position embeddings, masked
# self-attention, an MLP block, an output head: `help(rc.lm_init)`); its context holds the
# prompt and up to 8 generated tokens.

# %%
tok = rc.Tokenizer(rc.STYLE_WORDS)
print(tok)
prompts, completions = rc.style_data(1500, seed=SEED)
tokens, mask, prompt_len = tok.encode_pairs(prompts, completions)
print("an SFT example:", prompts[0], "->", completions[0])
print("tokens:", tokens[0], " mask:", mask[0].astype(int))

MAX_NEW = 8  # the length limit: at most 8 generated tokens, EOS included
params = rc.lm_init(tok.vocab_size, context=3 + MAX_NEW, dim=16, layers=1, seed=SEED)
print(f"{rc.count_params(params)} parameters")
sft_params, sft_losses = rc.sft(params, tokens, mask, steps=200, lr=1e-2, seed=SEED, batch=64)

eval_prompts = tok.encode_prompts(rc.style_data(256, seed=1)[0])
width = eval_prompts.shape[1]


def true_quality(toks, m):
    return rc.style_quality(tok.decode_completions(toks, width))[0]


def fluency(toks, m):
    return rc.style_quality(tok.decode_completions(toks, width))[1]


sft_samples, sft_mask = rc.generate(sft_params, eval_prompts, MAX_NEW, rng)
sft_quality = true_quality(sft_samples, sft_mask).mean()
sft_fluency = fluency(sft_samples, sft_mask).mean()
print(f"SFT samples are fluent (> 90%): {sft_fluency > 0.9}; lukewarm (quality 0.45-0.75): "
      f"{0.45 < sft_quality < 0.75}")
assert sft_fluency > 0.9 and 0.45 < sft_quality < 0.75

# %% tags=["nbval-ignore-output"]
print(f"SFT loss {sft_losses[0]:.2f} -> {sft_losses[-1]:.2f} nats per token")
print(f"SFT samples: fluent {sft_fluency:.0%}, mean true quality {sft_quality:.2f}")
for p, c in zip(eval_prompts[:4], tok.decode_completions(sft_samples[:4], width)):
    print(" ", tok.decode(p), "->", c)

# %% [markdown]
# You want warmer completions. You have no formula for "warm", only people who, shown two
# completions, pick one. How do you turn those picks into a better model, and how far can you
# push it before it games the picks instead of getting warmer?

# %% [markdown]
# ## The idea
#
# **1. A reward model from preferences.** The Bradley-Terry model says a person prefers $y_c$ to
# $y_r$ with probability $\sigma(r(y_c) - r(y_r))$. Fit $r_\phi$ by maximum likelihood on pairs
# (chosen, rejected):
# $$\mathcal{L}(\phi) = -\frac1N\sum_i \log\sigma\big(r_\phi(y^i_c) - r_\phi(y^i_r)\big).$$
# Only differences of rewards are identified: adding a constant changes nothing. Labels are
# noisy: if a person prefers $y_1$ with probability $p$, no reward model can agree with more
# than $\max(p, 1-p)$ of such labels, so the best possible held-out accuracy is
# $\mathbb{E}[\max(p, 1-p)]$ over the pairs, the **ceiling** you judge a reward model against.
#
# **2. The token-level MDP.** The state is the prompt plus the tokens generated so far, an
# action is the next token, the policy is the LM, $\pi(a_t|s_t)$. Only generated tokens are
# actions: the prompt and the padding are part of the input, and the **action mask** keeps them
# out of every loss. Logits at position $t$ predict token $t+1$, so the mask is read shifted by
# one: `mask[:, 1:]`. An episode ends at EOS (a terminal state: the answer is finished) or at
# the length limit, which is a **truncation** (lesson 09): a completion cut there is not a
# finished answer, and scoring it as one treats the limit as an end.
#
# **3. The KL-penalised objective.** Maximising $r_\phi$ alone lets the policy drift wherever
# the reward model is wrong. RLHF maximises
# $$J(\pi) = \mathbb{E}_{y\sim\pi}[r_\phi(y)] - \beta\,\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$$
# with the SFT model as $\pi_{\text{ref}}$. Its maximiser over all distributions of completions
# is known in closed form, $\pi^*(y) \propto \pi_{\text{ref}}(y)\,e^{r_\phi(y)/\beta}$ (Gibbs:
# $J(\pi) = -\beta\,\mathrm{KL}(\pi\,\|\,\pi^*) + $ const). So for two completions,
# $$\log\frac{\pi^*(y)}{\pi^*(y')} = \log\frac{\pi_{\text{ref}}(y)}{\pi_{\text{ref}}(y')}
#   + \frac{r_\phi(y) - r_\phi(y')}{\beta}:$$
# a completion the reward model overrates wins at the optimum as soon as its extra reward,
# divided by $\beta$, exceeds what the reference charges for it in log-probability. You will
# compute both sides for this task.
#
# Spread over tokens, the objective gives each action token the reward
# $$r_t = -\beta\big(\log\pi(a_t|s_t) - \log\pi_{\text{ref}}(a_t|s_t)\big)
#   + [t = \text{last}]\; r_\phi(y),$$
# the KL estimator $k_1$ (the sampled log-ratio) **in the reward**. Summed over a completion
# sampled from $\pi$, the penalties are an unbiased estimate of $\beta\,\mathrm{KL}$, and (Check
# it shows this) their policy gradient is exactly $-\beta\,\nabla\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$.
#
# **4. PPO on tokens.** Each token's advantage is its reward-to-go $G_t=\sum_{t'\ge t} r_{t'}$
# minus a baseline: here the batch's mean $G$ at that position, normalised. Real systems learn a
# value head instead (exercise 3 builds the advantages it gives). The clipped objective of
# lesson 10 then applies token by token.

# %% [markdown]
# ## Build it
#
# Five steps, each a function you write and check: the reward model's loss, the log-prob of a
# completion, the score of a completion cut at the limit, the per-token rewards and the
# advantages. `rc.rlhf_step` then puts them together with lesson 10's clipped loss.
#
# **Step 1: the Bradley-Terry loss.** `r_chosen`, `r_rejected` `[N]` are the reward model's
# scores of the preferred and the other completion of each pair; return the mean of
# $-\log\sigma(r_c - r_r)$. Score gaps can be large: make it finite for any gap.

# %% tags=["solution"]
def my_preference_loss(r_chosen, r_rejected):
    """Mean over pairs of -log sigmoid(r_chosen - r_rejected)."""
    return np.mean(np.logaddexp(0.0, -(r_chosen - r_rejected)))  # log(1 + e^-x), never overflows


# %%
assert rc.exercises.check("preference_loss", my_preference_loss)

# %% [markdown]
# Simulated people label pairs of SFT-style completions: the warmer one wins with probability
# $\sigma(4(q_1 - q_2))$, so close calls are noisy. The reward model is deliberately simple,
# and simple in the way real ones fail: a linear score of the word counts of the completion,
# $r_\phi(y) = \sum_v \phi_v\,\mathrm{count}_v(y)$. It cannot see word order or grammar. It
# is fitted with the reference loss, `rc.preference_loss`, which is your step 1 on traced values.

# %%
SHARPNESS = 4.0  # the simulated annotator: P(first preferred) = sigmoid(4 (q_1 - q_2))
pair_prompts, chosen, rejected = rc.style_preferences(800, seed=2, sharpness=SHARPNESS)
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


word_reward = {w: float(phi["w"][tok.ids[w]]) for w in rc.STYLE_WORDS}
print(f"reward-model loss {float(loss):.3f}")
print("learned word rewards:", {w: round(word_reward[w], 2)
                                for w in ["great", "good", "fine", "bad", "very", "quite", "is", "was", "."]})
assert word_reward["great"] > word_reward["good"] > word_reward["fine"] > word_reward["bad"]

# %% [markdown]
# The ranking of adjectives is right. "." gets no reward at all (every completion has one, so
# the pairs say nothing about it), and the verbs get whatever small values the label noise
# left. And nothing stops a completion from containing "great" twice.
#
# **Step 2: the log-prob of each completion.** `logits` `[B, L-1, V]` (the model's logits
# without the last position), `tokens` and `mask` `[B, L]`: log-softmax over the vocabulary,
# pick the *next* token, sum where the shifted mask is True. Make the log-softmax safe for
# large logits.

# %% tags=["solution"]
def my_sequence_log_prob(logits, tokens, mask):
    """log pi(completion | prompt) per row: [B]."""
    top = logits.max(axis=-1, keepdims=True)
    logp = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]  # logits t -> token t+1
    return np.where(mask[:, 1:], picked, 0.0).sum(axis=1)


# %%
assert rc.exercises.check("sequence_log_prob", my_sequence_log_prob)

# %% [markdown]
# Here is what the mask looks like on completions sampled from the SFT model (`rc.generate`
# returns it): True on the generated tokens, EOS included, and nowhere else.

# %%
batch_prompts = eval_prompts[:4]
sample_tokens, sample_mask = rc.generate(sft_params, batch_prompts, MAX_NEW, rng)
assert not sample_mask[:, :width].any()  # the prompt is never an action

# %% tags=["nbval-ignore-output"]
print("prompt length:", width)
print("tokens:\n", sample_tokens)
print("action mask:\n", sample_mask.astype(int))

# %% [markdown]
# **Step 3: a completion cut at the limit.** `rc.generate` stops a row at EOS or after
# `max_new` tokens. A row without EOS among its sampled tokens was cut: it is not a finished
# answer, and the reward model, trained on finished answers, has no business scoring it as one.
# Hugging Face TRL's answer is `missing_eos_penalty`: subtract a fixed penalty from the score
# of every completion that holds no EOS. Write it: `scores` `[B]`, `tokens`, `mask` `[B, L]`
# (as `generate` returns them), `penalty > 0`.

# %% tags=["solution"]
def my_penalize_missing_eos(scores, tokens, mask, penalty):
    """scores minus penalty for each completion without EOS among its sampled tokens."""
    finished = ((tokens == tok.eos) & mask).any(axis=1)
    return np.where(finished, scores, scores - penalty)


# %%
assert rc.exercises.check("penalize_missing_eos", my_penalize_missing_eos)

# %% [markdown]
# **Step 4: KL-penalised per-token rewards.** Per-token arrays are aligned with
# `tokens[:, 1:]`: `logp` and `ref_logp` `[B, T]` are the sampled tokens' log-probs under the
# policy and the reference, and `mask` `[B, T]` is **already the shifted mask** (the caller
# passes `mask[:, 1:]`): use it as it is. Every action token pays
# $-\beta(\log\pi - \log\pi_{\text{ref}})$; the score is added at each row's last action token;
# everything else is 0.

# %% tags=["solution"]
def my_kl_penalized_rewards(scores, logp, ref_logp, mask, beta):
    """Per-token rewards [B, T]: -beta * log-ratio on action tokens, plus the score at the end."""
    rewards = np.where(mask, -beta * (logp - ref_logp), 0.0)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)  # last action token of each row
    rewards[np.arange(len(scores)), last] += scores
    return rewards


# %%
assert rc.exercises.check("kl_penalized_rewards", my_kl_penalized_rewards)

# %% [markdown]
# **Step 5: advantages.** `rewards` and `mask` `[B, T]` as in step 4 (the mask already
# shifted). Each token's reward-to-go within its own completion (a completion is
# one episode: the sum never runs into the padding or the next row; rewards outside the mask
# are not rewards), minus the mean reward-to-go of the completions that act at the same
# position, divided by the standard deviation over all action tokens.

# %% tags=["solution"]
def my_advantages(rewards, mask):
    """Critic-free token advantages [B, T] (0 outside the mask)."""
    rewards = np.where(mask, rewards, 0.0)
    to_go = np.where(mask, np.cumsum(rewards[:, ::-1], axis=1)[:, ::-1], 0.0)
    baseline = to_go.sum(axis=0) / np.maximum(mask.sum(axis=0), 1)
    adv = np.where(mask, to_go - baseline, 0.0)
    return adv / adv[mask].std()


# %%
assert rc.exercises.check("rlhf_advantages", my_advantages)

# %% [markdown]
# `rc.rlhf_step` puts the steps together: sample completions from the current policy, score
# them (step 3's penalty when `missing_eos_penalty` is set), turn the scores into per-token
# rewards (step 4) and advantages (step 5), then take a few epochs of lesson 10's clipped
# updates on the action tokens, with the rollout's log-probs as the "old" ones. Its first line
# (`_check_rlhf(...)`) only checks the arguments; the algorithm starts at
# `data = sample_rollout(...)`, and `check_scores` checks that `reward_fn` gave one finite
# score per completion.

# %%
print(inspect.getsource(rc.rlhf_step))

# %% [markdown]
# ## Check it
#
# **Prompt and padding never count.** Change the logits at every position the mask excludes:
# the sequence log-prob is identical and those positions get exactly zero gradient. (Your
# `my_sequence_log_prob` met the same test in its checker: its third case adds noise of size 50
# to the logits of every excluded position and expects the same answer.)

# %%
logits = np.asarray(rc.lm_logits(sft_params, sample_tokens), dtype=np.float64)[:, :-1]


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
# **Sampled KL estimates against the exact KL.** `rc.exact_kl` sums
# $\pi(v)(\log\pi(v) - \log\pi_{\text{ref}}(v))$ over the whole vocabulary at each position of
# a completion; the estimators look only at the sampled token $a$. With
# $d = \log\pi_{\text{ref}}(a) - \log\pi(a)$, Schulman's three are $k_1 = -d$ (the sampled
# log-ratio, `rc.sampled_log_ratio` per completion), $k_2 = d^2/2$ and $k_3 = e^d - d - 1$
# (`rc.kl_estimate(logp, ref_logp, kind)` per token). Which of them is right on average, and how
# noisy is each? Take policies that have drifted from the reference (the SFT model plus noise
# along one random direction in weight space, scaled up until the exact KL of its samples
# first reaches a target) by a little (at least 0.2 nats) and by a lot (at least 3 nats; the scale
# grows by 1.25 at a time, so the drift overshoots its target: the table prints the KL each
# reached), sample 1024 completions from
# each, and compare each estimator, summed over a completion, with the exact KL of the same
# completion's positions (whose mean is the sequence-level KL).

# %% tags=["nbval-ignore-output"]
def sample_with_kl(model, n):
    """n completions from model, their logits and the reference's, and the exact KL of each."""
    toks, m = rc.generate(model, eval_prompts[rng.integers(0, len(eval_prompts), n)], MAX_NEW, rng)
    lg = np.asarray(rc.lm_logits(model, toks), dtype=np.float64)[:, :-1]
    ref_lg = np.asarray(rc.lm_logits(sft_params, toks), dtype=np.float64)[:, :-1]
    return toks, m, lg, ref_lg, np.asarray(rc.exact_kl(lg, ref_lg, m))


def drift(target_kl):
    """The SFT model plus noise along one random direction (each weight's noise in units of its
    spread), scaled by 1.25 at a time until its samples' mean exact KL reaches target_kl."""
    direction = rc.tree_map(lambda p: p.std() * rng.standard_normal(p.shape).astype(p.dtype), sft_params)
    for scale in 0.15 * 1.25 ** np.arange(30):
        model = rc.tree_map(lambda p, d, s=scale: p + s * d, sft_params, direction)
        if sample_with_kl(model, 256)[-1].mean() >= target_kl:
            return model
    raise RuntimeError("no scale reached the target KL")


def token_log_probs(logits, toks):
    """log-probs [B, L-1] of the tokens that follow each position."""
    lp = logits - logits.max(axis=-1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=-1, keepdims=True))
    return np.take_along_axis(lp, toks[:, 1:, None], axis=-1)[..., 0]


estimates = {}
for label, target in (("near (target 0.2)", 0.2), ("far (target 3)", 3.0)):
    d_tokens, d_mask, d_logits, r_logits, exact = sample_with_kl(drift(target), 1024)
    acts = d_mask[:, 1:]
    lp, rp = (np.where(acts, token_log_probs(x, d_tokens), 0.0) for x in (d_logits, r_logits))
    lpv, rpv = (rc.log_softmax(x, axis=-1) for x in (d_logits, r_logits))  # full vocabulary
    row = {"exact": exact,  # and the same sum without exact_kl's lift of a ~1e-16 rounding to 0:
           "unlifted": np.sum(np.sum(np.exp(lpv) * (lpv - rpv), axis=-1) * acts, axis=1)}
    for kind in ("k1", "k2", "k3"):
        row[kind] = np.where(acts, np.asarray(rc.kl_estimate(lp, rp, kind)), 0.0).sum(axis=1)
    estimates[label] = row
    assert np.allclose(row["k1"], rc.sampled_log_ratio(d_logits, r_logits, d_tokens, d_mask))

print(f"{'drift':24s} {'exact KL':>9s} {'estimator':>10s} {'bias':>8s} {'(se)':>7s} {'sd':>7s} {'< 0':>6s}")
for label, row in estimates.items():
    print(f"{label:24s} {row['exact'].mean():9.3f}   (its smallest per completion: {row['exact'].min():.3f})")
    for kind in ("k1", "k2", "k3"):
        gap = row[kind] - row["exact"]
        print(f"{'':34s} {kind:>10s} {gap.mean():+8.3f} {gap.std() / np.sqrt(len(gap)):7.3f} "
              f"{row[kind].std():7.3f} {np.mean(row[kind] < 0):6.0%}")

# %% [markdown]
# First, is `rc.exact_kl` itself right? Check it against an independent enumeration on a model
# small enough to list every completion: two tokens from a vocabulary of 4 (16 completions).
# The sequence's $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ is the sum over all 16 of
# $\pi(y)(\log\pi(y) - \log\pi_{\text{ref}}(y))$; `rc.exact_kl` of each completion (the KL at
# its two positions, given its prefix), averaged with weights $\pi(y)$, must equal it.

# %%
V = 4
theta = {"first": rng.normal(size=V), "second": rng.normal(size=(V, V))}   # the policy's logits
ref_theta = {"first": rng.normal(size=V), "second": rng.normal(size=(V, V))}
first, second = np.divmod(np.arange(V * V), V)  # all 16 completions (token 1, token 2)


def toy_logits(p):
    """logits [16, 2, V]: position 0 predicts the first token, position 1 the second."""
    return np.stack([np.broadcast_to(p["first"], (V * V, V)), p["second"][first]], axis=1)


def toy_log_probs(p):
    lf = p["first"] - np.log(np.exp(p["first"]).sum())
    ls = p["second"] - np.log(np.exp(p["second"]).sum(axis=1, keepdims=True))
    return lf[first] + ls[first, second]  # log-prob of each whole completion [16]


toy_pi, toy_ref = toy_log_probs(theta), toy_log_probs(ref_theta)
enumerated = np.sum(np.exp(toy_pi) * (toy_pi - toy_ref))
toy_tokens = np.stack([np.ones(V * V, dtype=int), first, second], axis=1)  # BOS, token 1, token 2
toy_mask = np.array([[False, True, True]] * (V * V))
from_exact_kl = np.exp(toy_pi) @ np.asarray(rc.exact_kl(toy_logits(theta), toy_logits(ref_theta), toy_mask))
print(f"sequence KL by enumeration {enumerated:.6f}; E_pi[rc.exact_kl] {from_exact_kl:.6f}")
assert np.isclose(enumerated, from_exact_kl, rtol=1e-9)

# %% [markdown]
# The claims about the estimators, as asserts (bias measured as the mean of estimate minus
# exact, against its standard error). The first two lines are illustrations, not tests: the exact
# KL is never negative for any logits (Gibbs' inequality; `rc.exact_kl`'s last line lifts a
# rounding of about -1e-16 to 0, so the line checks the same sum computed without that lift,
# to -1e-12), and a drifted policy always has some completion the reference likes more.

# %%
def bias_in_se(row, kind):
    gap = row[kind] - row["exact"]
    return gap.mean() / (gap.std() / np.sqrt(len(gap)))


near, far = estimates.values()
kl_claims = {
    "(illustration) the exact KL is never negative": all(r["unlifted"].min() >= -1e-12 for r in (near, far)),
    "(illustration) k1 is negative on some completions": all((r["k1"] < 0).any() for r in (near, far)),
    "k1 and k3 unbiased: mean within 4 standard errors of the exact KL, both drifts":
        all(abs(bias_in_se(r, k)) < 4 for r in (near, far) for k in ("k1", "k3")),
    "k2 biased upwards far from the reference (by more than 4 standard errors)": bias_in_se(far, "k2") > 4,
    "near the reference, k3 has a smaller spread than k1": near["k3"].std() < near["k1"].std(),
}
for text, ok in kl_claims.items():
    print(f"{ok!s:5s}  {text}")
assert all(kl_claims.values())

# %% [markdown]
# $k_1$ is unbiased but noisy and often negative. $k_2$ is close when the policy is close (its
# bias is of third order in $d$) and overestimates when it is not. $k_3$ is unbiased and never
# negative, and near the reference it is much less noisy than $k_1$. Far from it, compare the
# `sd` column: $e^d$ explodes on a token the reference likes far more than the policy does, and
# $k_3$'s advantage in spread is gone (not asserted: how far it goes depends on the draw). Near
# the reference, where a penalised policy should stay, $k_3$ is the value to report or monitor.
# Whether it is the right thing to put in the reward or to differentiate is a different
# question.

# %% [markdown]
# **KL in the reward or KL in the loss: what each one optimises.** The penalty can enter
# training in two places. In the **reward** (this lesson, TRL's `PPOTrainer`): the per-token
# estimate is data, and the policy gradient pushes on it through $\nabla\log\pi$ times the
# reward-to-go. In the **loss** (GRPO, lesson 14): the estimate is computed from the traced
# log-probs of the sampled tokens and differentiated directly. The same number can mean
# different gradients. Check it exactly on a model small enough to enumerate: two tokens from a
# vocabulary of 4, so 16 possible completions (the toy above), with the expectation over them
# computed exactly.
# Three candidate targets: the gradient of the sequence's $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$;
# the same KL taken position by position at the sampled prefixes, prefixes held fixed
# ("per position"); and the per-position reverse direction, $\mathrm{KL}(\pi_{\text{ref}}\,\|\,\pi)$.

# %%
def token_logps(p):
    """log-probs [16, 2] of both tokens of every completion under the model p."""
    return rc.stack([rc.log_softmax(p["first"], axis=-1)[first],
                     rc.log_softmax(p["second"], axis=-1)[first, second]], axis=1)


old_lp = np.asarray(token_logps(theta))           # the sampling policy's log-probs (data)
ref_lp = np.asarray(token_logps(ref_theta))
weight = np.exp(old_lp.sum(axis=1))               # the exact probability of each completion


def expected_grad(per_completion):
    """E over completions of the gradient of per_completion(traced log-probs [16, 2]) -> [16]."""
    g = rc.grad(lambda p: rc.sum(weight * per_completion(token_logps(p))))(theta)
    return np.concatenate([g["first"].ravel(), g["second"].ravel()])


def kl_rows(p_from, p_to):
    """sum_v p_from (log p_from - log p_to) over the vocabulary, per row."""
    return rc.sum(rc.exp(p_from) * (p_from - p_to), axis=-1)


def targets(p):
    lf, ls = rc.log_softmax(p["first"], axis=-1), rc.log_softmax(p["second"], axis=-1)
    rf = rc.log_softmax(ref_theta["first"], axis=-1)
    rs = rc.log_softmax(ref_theta["second"], axis=-1)
    p_first = np.exp(np.asarray(rc.stop_gradient(lf)))  # prefixes held fixed
    seq = rc.sum(rc.exp(rc.sum(token_logps(p), axis=1)) * rc.sum(token_logps(p) - ref_lp, axis=1))
    fwd = kl_rows(lf, rf) + rc.sum(p_first * kl_rows(ls, rs))
    rev = kl_rows(rf, lf) + rc.sum(p_first * kl_rows(rs, ls))
    return seq, fwd, rev


target = {name: np.concatenate([g["first"].ravel(), g["second"].ravel()]) for name, g in zip(
    ("sequence KL(pi||ref)", "per position KL(pi||ref)", "per position KL(ref||pi)"),
    [rc.grad(lambda p, i=i: targets(p)[i])(theta) for i in range(3)])}


def to_go(k):
    return np.cumsum(k[:, ::-1], axis=1)[:, ::-1]


k1_data = rc.kl_estimate(old_lp, ref_lp, "k1")
k3_data = rc.kl_estimate(old_lp, ref_lp, "k3")
placements = {
    "k1 in the reward (this lesson)": lambda lp: rc.sum(lp * to_go(k1_data), axis=1),
    "k3 in the reward": lambda lp: rc.sum(lp * to_go(k3_data), axis=1),
    "k1 in the loss": lambda lp: rc.sum(rc.kl_estimate(lp, ref_lp, "k1"), axis=1),
    "k2 in the loss": lambda lp: rc.sum(rc.kl_estimate(lp, ref_lp, "k2"), axis=1),
    "k3 in the loss (GRPO paper)": lambda lp: rc.sum(rc.kl_estimate(lp, ref_lp, "k3"), axis=1),
    "ratio * k3 in the loss (TRL 2026)": lambda lp: rc.sum(
        rc.kl_estimate(lp, ref_lp, "k3", old_logp=old_lp), axis=1),  # the corrected k3 loss
}
print(f"{'relative distance to the gradient of:':38s}" + "".join(f"{n:>27s}" for n in target))
distance = {}
for name, surrogate in placements.items():
    g = expected_grad(surrogate)
    distance[name] = {t: np.linalg.norm(g - v) / np.linalg.norm(v) for t, v in target.items()}
    print(f"{name:38s}" + "".join(f"{d:27.3f}" for d in distance[name].values()))
seq_t, fwd_t, rev_t = target
assert distance["k1 in the reward (this lesson)"][seq_t] < 1e-6
assert all(distance["k1 in the loss"][t] > 0.999 for t in target)  # its expected gradient is 0
for name in ("k2 in the loss", "ratio * k3 in the loss (TRL 2026)"):
    assert distance[name][fwd_t] < 1e-6 and distance[name][seq_t] > 0.05
assert distance["k3 in the loss (GRPO paper)"][rev_t] < 1e-6
assert min(distance["k3 in the reward"].values()) > 0.5

# %% [markdown]
# Read the table by rows (0 means "is exactly this gradient"):
#
# - **$k_1$ in the reward** has exactly the gradient of the sequence's $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$:
#   the reward-to-go also charges a token for the KL of the tokens it leads to. This is why
#   this lesson puts $k_1$ there (and why TRL's `PPOTrainer` defaults to `kl_estimator="k1"`).
# - **$k_3$ in the reward** has the right expected *value* ($\mathbb{E}_\pi[k_3] = \mathrm{KL}$),
#   but not the right gradient: $k_3$ depends on $\pi$ through more than the sampling, and
#   the policy gradient only sees the sampling. Nothing it matches.
# - **$k_1$ in the loss** has expected gradient 0 ($\mathbb{E}_\pi[\nabla\log\pi] = 0$): it
#   enforces no KL at all.
# - **$k_3$ in the loss**, as GRPO's paper writes it, follows the per-position
#   $\mathrm{KL}(\pi_{\text{ref}}\,\|\,\pi)$: the other direction.
# - **$k_2$ in the loss** and **ratio $\cdot\,k_3$ in the loss**, the corrected $k_3$ loss
#   (`rc.kl_estimate(logp, ref_logp, "k3", old_logp=...)` multiplies $k_3$ by the importance
#   ratio $\pi/\pi_{\text{old}}$: DeepSeek-V3.2's correction, TRL's `use_bias_correction_kl`,
#   on by default since 2026) follow $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ per position, but miss the
#   part of the sequence gradient that flows through the prefix: what an early token does to
#   the KL of the tokens after it. Here that part is a sizeable share of the gradient (the
#   "sequence" column).
#
# So the estimator that is best as a *value* (the table before this one) is the wrong one in
# the reward and, differentiated as it stands, follows the other direction of the KL. Of the
# placements of $k_3$, only the corrected loss, $\frac{\pi}{\pi_{\text{old}}} k_3$, gets the
# direction right (as $k_2$ in the loss does, with the same row); only $k_1$ in the reward
# follows the whole sequence's gradient. Lesson 14 uses the corrected loss as an option of GRPO.

# %% [markdown]
# ## Use it
#
# **The reward model against its ceiling.** On 400 held-out pairs, how often does it rank the
# chosen completion first? Compare that with the best any model can do against these noisy
# labels: the annotator preferred the chosen completion with probability
# $p = \sigma(4(q_c - q_r))$, so the ceiling is the mean of $\max(p, 1-p)$. Ties count half.
#
# The accuracy on 400 labels has a standard error of about 0.02, wide enough to let a cruder
# reward model pass as "at the ceiling". Since the annotator is simulated, there is a measure
# without the label noise: the **expected agreement**, the probability that a fresh label of the
# same pair agrees with the model's ranking, $p$ where the model ranks the chosen one first and
# $1-p$ where it does not (averaged over the pairs). It reaches the ceiling only for a model that
# ranks every pair the way the annotator is likelier to. To see that it separates, score two
# models that are plainly cruder: one that knows only "great" = +1 and "bad" = -1, and the
# learned one with the weights of "good" and "fine" swapped.

# %%
held_p, held_c, held_r = rc.style_preferences(400, seed=3, sharpness=SHARPNESS)
hc, hmc, _ = tok.encode_pairs(held_p, held_c)
hr, hmr, _ = tok.encode_pairs(held_p, held_r)
q_c, q_r = rc.style_quality(held_c)[0], rc.style_quality(held_r)[0]
p_chosen = 1.0 / (1.0 + np.exp(-SHARPNESS * (q_c - q_r)))
ceiling = np.mean(np.maximum(p_chosen, 1 - p_chosen))
s_c, s_r = reward_model(hc, hmc), reward_model(hr, hmr)
agree = (s_c > s_r) + 0.5 * (s_c == s_r)
accuracy, accuracy_se = agree.mean(), agree.std() / np.sqrt(len(agree))
truth_ranker = np.mean((q_c > q_r) + 0.5 * (q_c == q_r))
print(f"reward model: {accuracy:.3f} +- {accuracy_se:.3f} of held-out labels; "
      f"ceiling {ceiling:.3f}; ranking by the true quality itself: {truth_ranker:.3f}")


def expected_agreement(w):
    """P(a fresh label agrees with the ranking by word weights w), averaged over the held-out pairs."""
    a = rc.token_counts(hc, hmc, tok.vocab_size) @ w
    b = rc.token_counts(hr, hmr, tok.vocab_size) @ w
    return np.mean(np.where(a > b, p_chosen, np.where(a < b, 1 - p_chosen, 0.5)))


crude = np.zeros(tok.vocab_size)
crude[tok.ids["great"]], crude[tok.ids["bad"]] = 1.0, -1.0
swapped = phi["w"].copy()
swapped[[tok.ids["good"], tok.ids["fine"]]] = swapped[[tok.ids["fine"], tok.ids["good"]]]
models = {"the learned reward model": phi["w"], "great/bad only": crude, "good and fine swapped": swapped}
agreement = {name: expected_agreement(w) for name, w in models.items()}
print(f"{'':26s} {'expected agreement':>19s}  {'accuracy on the 400 labels':>27s}")
for name, w in models.items():
    sc, sr = rc.token_counts(hc, hmc, tok.vocab_size) @ w, rc.token_counts(hr, hmr, tok.vocab_size) @ w
    print(f"{name:26s} {agreement[name]:19.3f}  {np.mean((sc > sr) + 0.5 * (sc == sr)):27.3f}")
print(f"the learned model within 0.005 of the ceiling: {abs(agreement['the learned reward model'] - ceiling) < 0.005}; "
      f"both cruder ones 0.02+ below it: {max(agreement['great/bad only'], agreement['good and fine swapped']) < ceiling - 0.02}")
assert abs(agreement["the learned reward model"] - ceiling) < 0.005
assert max(agreement["great/bad only"], agreement["good and fine swapped"]) < ceiling - 0.02

# %% [markdown]
# The reward model is as right as these labels allow, and the expected agreement tells it apart
# from the cruder ones, which the accuracy on 400 labels (a ±0.02 standard error) does not
# reliably do. About a quarter of the labels go against the warmer completion, and no model can
# predict which. Accuracy on held-out pairs says nothing
# about completions no pair contains, though. Score a few:

# %%
probe = ["is quite great .", "is great .", "great great .", "is great great .",
         "great great great great great great .", "great great great great great great great great"]
probe_tokens, probe_mask, _ = tok.encode_pairs(["the cat"] * len(probe), probe)
probe_mask[-1, -1] = False  # the last one is cut at the limit: 8 tokens, no EOS
probe_tokens[-1, -1] = 0
probe_scores = reward_model(probe_tokens, probe_mask)
best_fluent_score = probe_scores[0]
for text, s, q in zip(probe, probe_scores, rc.style_quality(probe)[0]):
    print(f"  {text:52s} reward {s:6.2f}   true quality {q:.1f}")
assert np.isclose(probe_scores[0], max(reward_model(*tok.encode_pairs(*rc.style_data(400, seed=4))[:2])))
assert (probe_scores[2:] > best_fluent_score).all()

# %% [markdown]
# "is quite great ." is the best any fluent completion scores (checked against 400 fluent
# ones). Every hack above beats it, and a completion cut at the limit scores highest of all:
# without step 3, running into the limit pays. (The cut row above has 8 generated tokens and no
# EOS, exactly what `rc.generate` returns when it stops a row at `max_new`.)
#
# **What the optimum does with this reward model, for each $\beta$.** The idea's formula
# compares two completions at the optimum: the hack wins when its extra reward over $\beta$
# beats the log-probability the reference charges for it. Measure the charge for the two cheapest
# hacks: one extra "great" ("is great great ." against "is great .") and "great" in place of the
# verb ("great great ." against "is great ."), on the three prompts.

# %%
nouns = ["cat", "dog", "bird"]


def ref_log_prob(texts, noun):
    t, m, _ = tok.encode_pairs([f"the {noun}"] * len(texts), texts)
    return np.asarray(rc.completion_log_prob(sft_params, t, m), dtype=np.float64), reward_model(t, m)


hacks = {"one extra great": (["is great .", "was great .", "is very great .", "is quite great ."],
                             ["is great great .", "was great great .", "is very great great .",
                              "is quite great great ."]),
         "great for the verb": (["is great ."], ["great great ."])}
break_even = {}
for name, (base, hacked) in hacks.items():
    charge, extra = [], []
    for noun in nouns:
        lb, rb = ref_log_prob(base, noun)
        lh, rh = ref_log_prob(hacked, noun)
        charge.append(lb - lh)
        extra.append(rh - rb)
    charge, extra = np.concatenate(charge), np.concatenate(extra)
    break_even[name] = extra.mean() / charge.mean()
    print(f"{name:20s}: the reference charges {charge.mean():5.2f} nats "
          f"({charge.min():.2f}-{charge.max():.2f}); extra reward {extra.mean():.2f}; "
          f"break-even beta = {break_even[name]:.3f}")
beta_star = max(break_even.values())
print(f"below beta* = {beta_star:.2f} the optimum prefers these hacks to fluent text")
assert 0.1 < beta_star < 0.5  # the sweep below brackets it
piled = [" ".join(["is"] + ["great"] * k + ["."]) for k in range(1, 6)]  # "is great ." ... 5 greats
step_charge, step_extra = [], []
for noun in nouns:
    lp, r = ref_log_prob(piled, noun)
    step_charge.append(-np.diff(lp))
    step_extra.append(np.diff(r))
step_charge, step_extra = np.mean(step_charge, axis=0), np.mean(step_extra, axis=0)
step_break_even = step_extra / step_charge
print("each further 'great' (2nd to 5th):")
print("  the reference charges (nats):", "  ".join(f"{c:5.2f}" for c in step_charge))
print("  break-even beta:             ", "  ".join(f"{b:5.3f}" for b in step_break_even))
assert (step_break_even < 0.5).all()

# %% [markdown]
# A hack that wins once wins again: every further "great" earns the same reward and the
# reference charges about as much (the last two rows), so below every step's break-even
# $\beta$ the optimum piles them up to the limit, and no step's break-even reaches 0.5.
# Above $\beta^*$ each hack loses odds, and the optimum stays (mostly) fluent. Among the 24
# fluent completions, it is exactly computable: how warm it is and how far it sits from the
# reference, for each $\beta$.

# %%
fluent = [" ".join(w for w in (v, a, j, ".") if w) for v, a, j in
          itertools.product(["is", "was"], ["", "very", "quite"], ["great", "good", "fine", "bad"])]
fluent_q = rc.style_quality(fluent)[0]
fluent_ref = [ref_log_prob(fluent, noun) for noun in nouns]
print(f"the reference puts {np.mean([np.exp(lr).sum() for lr, _ in fluent_ref]):.1%} of its mass "
      f"on these 24 completions")


def fluent_optimum(beta):
    """(true quality, KL from the reference) of the best fluent policy at beta, mean over prompts."""
    out = []
    for log_ref, r in fluent_ref:
        z = log_ref + r / beta
        p = np.exp(z - z.max())
        p /= p.sum()
        out.append((p @ fluent_q, p @ (np.log(p) - log_ref)))
    return np.mean(out, axis=0)


for beta in (0.1, 0.5, 1.0, 3.0):
    q_opt, kl_opt = fluent_optimum(beta)
    print(f"beta {beta:3.1f}: fluent optimum's true quality {q_opt:.3f}, KL {kl_opt:.2f} nats")
KL_PREDICTED = fluent_optimum(0.5)[1]
assert fluent_optimum(3.0)[0] < fluent_optimum(1.0)[0] < fluent_optimum(0.5)[0] - 0.05

# %% [markdown]
# That is the trade-off before any training: a large $\beta$ keeps the policy honest but also
# keeps it close to the lukewarm reference (compare the row of $\beta = 3$ with the SFT model's
# quality); a small $\beta$ lets it get warm, and below $\beta^*$ lets it get warm by gaming the
# reward model. Now train and watch it happen.
#
# **The sweep.** Start the policy at the SFT model, keep the SFT model frozen as the
# reference, and run RLHF-PPO for 80 iterations (32 prompts each, 2 epochs) at
# $\beta = 0$ (no leash), $0.1$ (below $\beta^*$) and $0.5$ (about twice $\beta^*$), three seeds each, with
# a missing-EOS penalty of five times the largest word reward (far more than one more word can
# earn, so ending with EOS one token early always beats being cut). A fourth arm repeats
# $\beta = 0$ without the penalty, which scores cut completions as finished. Every iteration records the true quality and the
# exact KL of the policy's own samples. (About 20 seconds.)

# %%
BETAS, SEEDS, ITERATIONS = (0.0, 0.1, 0.5), (0, 1, 2), 80
PENALTY = 5 * max(word_reward.values())
print(f"missing-EOS penalty: {PENALTY:.2f}")
settings = dict(lr=1.5e-3, batch=32, max_new=MAX_NEW, epochs=2, metric=true_quality)
runs = {(beta, seed): rc.rlhf_train(sft_params, sft_params, reward_model, eval_prompts, ITERATIONS,
                                    beta=beta, seed=seed, missing_eos_penalty=PENALTY, **settings)
        for beta in BETAS for seed in SEEDS}
unpenalised = {seed: rc.rlhf_train(sft_params, sft_params, reward_model, eval_prompts, ITERATIONS,
                                   beta=0.0, seed=seed, missing_eos_penalty=None, **settings)
               for seed in SEEDS}


def smooth(x, k=5):
    return np.convolve(x, np.ones(k) / k, mode="valid")


def summary(h):
    """peak (5-iteration mean) and final (last 10) true quality, final KL, cut fraction and final
    reward-model score (the proxy, before any missing-EOS penalty)."""
    return (smooth(h.metric).max(), h.metric[-10:].mean(), h.kl[-10:].mean(), h.truncated[-10:].mean(),
            h.score[-10:].mean())


HACK_MARGIN = 1.0  # no mix of fluent completions averages above best_fluent_score; half a "great" more


def verdict(final_quality, final_proxy):
    """'hacked': the truth fell and the proxy ended well above any fluent text's;
    'drifted': the truth fell without the proxy gaining; else 'fluent'."""
    if final_quality >= 0.5:
        return "fluent"
    return "hacked" if final_proxy > best_fluent_score + HACK_MARGIN else "drifted"


# %% tags=["nbval-ignore-output"]
print(f"best fluent completion's score: {best_fluent_score:.2f}")
print("beta  seed   peak quality  final quality  final KL  cut at the limit  final proxy  verdict   a final sample")
for label, h in [(f"{b:4.1f}  {s:4d}", h) for (b, s), h in runs.items()] + \
                [(f"0.0*  {s:4d}", h) for s, h in unpenalised.items()]:
    peak, final, kl, cut, proxy = summary(h)
    sample = tok.decode_completions(rc.generate(h.params, eval_prompts[:1], MAX_NEW, rng)[0], width)[0]
    print(f"{label}   {peak:12.2f}  {final:13.2f}  {kl:8.2f}  {cut:16.2f}  {proxy:11.2f}  {verdict(final, proxy):8s}  {sample}")
print("(* no EOS penalty)")
print("true quality over the 5 iterations before 10, 20, ..., median over the seeds (beta x iterations):")
print("beta   " + "".join(f"{i:>7d}" for i in (10, 20, 40, 60, 80)))
for beta in BETAS:
    grid = np.median([smooth(runs[beta, s].metric)[np.array([10, 20, 40, 60, 80]) - 5] for s in SEEDS], axis=0)
    print(f"{beta:4.1f}   " + "".join(f"{x:7.2f}" for x in grid))

# %% [markdown]
# The claims the sweep makes, each checked on every seed:

# %%
peak, final, final_kl, cut, proxy = (np.array([[summary(runs[b, s])[i] for s in SEEDS] for b in BETAS])
                                     for i in range(5))
nopen = np.array([summary(unpenalised[s]) for s in SEEDS])
verdicts = {beta: [verdict(final[i, j], proxy[i, j]) for j in range(len(SEEDS))] for i, beta in enumerate(BETAS)}
claims = {
    "beta 0: final quality below 0.2, every seed": bool((final[0] < 0.2).all()),
    "beta 0.1: hacked (quality < 0.5, proxy above the best fluent score + 1), every seed":
        verdicts[0.1].count("hacked") == len(SEEDS),
    "beta 0: not every collapse is a hack (some seed drifted, its proxy no better than fluent text's)":
        "drifted" in verdicts[0.0],
    "beta 0.5: final quality 0.9+, every seed": bool((final[2] > 0.9).all()),
    f"beta 0.5: final KL within 30% of the fluent optimum's {KL_PREDICTED:.2f} nats, every seed":
        bool((np.abs(final_kl[2] / KL_PREDICTED - 1) < 0.3).all()),
    "the leash: every beta 0.5 run ends with a smaller KL than every beta <= 0.1 run":
        bool(final_kl[2].max() < final_kl[:2].min()),
    "no EOS penalty: 90%+ of the final completions cut at the limit, every seed":
        bool((nopen[:, 3] > 0.9).all()),
    "with the penalty: under 10% cut, every run": bool((cut < 0.1).all()),
}
for text, ok in claims.items():
    print(f"{ok!s:5s}  {text}")
for beta in BETAS:
    print(f"beta {beta}: " + ", ".join(f"seed {s} {v}" for s, v in zip(SEEDS, verdicts[beta])))
fell = [int(np.argmax(smooth(runs[0.1, s].metric) < 0.5)) + 4 for s in SEEDS]  # a window's last iteration
print("beta 0.1: the 5-iteration mean quality first drops below 0.5 at iteration", ", ".join(map(str, fell)))
assert all(claims.values())

# %% [markdown]
# $\beta = 0.5$ settled where the fluent optimum says, near the reference and warm.
# $\beta = 0.1$ sits below $\beta^*$: the optimum is a hack, and every seed found one within
# the budget, each at its own time (in the figure below, the seeds' quality falls at different
# iterations), ending with a proxy score well above anything fluent text can earn.
# $\beta = 0$ lost the true quality on every seed, but the verdicts above show that not
# every such run gamed the reward model: a run marked "drifted" wandered, with no leash, into
# degenerate text (repeated adverbs) whose proxy score is no better than fluent text's. That is
# a different failure from over-optimisation, and true quality alone cannot tell the two apart:
# look at the proxy and at the samples. How warm $\beta = 0$ got on the way also varies from
# seed to seed (the "peak quality" column), so the rise-then-fall is checked on all the runs
# together, on the chart after the next one. Without the EOS penalty
# the unleashed policy games the length limit itself: its hacked completions are cut, not
# finished, and each earns the score of a finished answer.

# %% tags=["nbval-ignore-output"]
colors = {0.0: "C3", 0.1: "C1", 0.5: "C0"}
its = np.arange(ITERATIONS)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for beta in BETAS:
    q = np.array([runs[beta, s].metric for s in SEEDS])
    kl = np.array([runs[beta, s].kl for s in SEEDS])
    axes[0].plot(its, np.median(q, axis=0), color=colors[beta], label=f"beta = {beta}")
    axes[0].fill_between(its, q.min(axis=0), q.max(axis=0), color=colors[beta], alpha=0.2)
    axes[1].plot(its, np.median(kl, axis=0), color=colors[beta], label=f"beta = {beta}")
    axes[1].fill_between(its, kl.min(axis=0), kl.max(axis=0), color=colors[beta], alpha=0.2)
nq = np.array([unpenalised[s].metric for s in SEEDS])
nkl = np.array([unpenalised[s].kl for s in SEEDS])
for ax, x in zip(axes, (nq, nkl)):
    ax.plot(its, np.median(x, axis=0), color="k", ls="--", label="beta = 0, no EOS penalty")
    ax.fill_between(its, x.min(axis=0), x.max(axis=0), color="k", alpha=0.1)
axes[1].axhline(KL_PREDICTED, color="C0", ls=":", label="fluent optimum, beta 0.5")
axes[0].axhline(sft_quality, color="grey", lw=1, label="SFT")
axes[1].set_yscale("log")
axes[0].set_title("True quality: median and range of 3 seeds")
axes[1].set_title("KL from the reference: beta sets the leash")
axes[0].set_ylim(-0.05, 1.6)  # room above the curves for the legend
axes[0].set_yticks(np.linspace(0, 1, 6))
axes[0].legend(fontsize=9, loc="upper center", ncol=2, columnspacing=1.0)
axes[1].legend(fontsize=8, loc="lower right")
for ax, ylabel in zip(axes, ["mean true quality of the samples", "KL(pi || ref), nats per completion"]):
    ax.set_xlabel("RLHF iteration")
    ax.set_ylabel(ylabel)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Over-optimisation, as Gao et al. plot it.** Put every iteration of every penalised run on
# one chart: the true quality of its samples against their KL from the reference, and the
# reward model's score (the proxy) against the same KL. The black line joins the medians of the
# KL bins 0-0.5, 0.5-1, 1-2, ..., 16+ nats, each drawn at its bin's geometric centre (the open
# last bin at 32 nats, the first at 0.16).

# %%
all_kl = np.concatenate([h.kl for h in runs.values()])
all_q = np.concatenate([h.metric for h in runs.values()])
all_score = np.concatenate([h.score for h in runs.values()])
edges = np.array([0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, np.inf])
which = np.digitize(all_kl, edges) - 1
bins = [b for b in range(len(edges) - 1) if np.sum(which == b) >= 10]
q_bins = np.array([np.median(all_q[which == b]) for b in bins])
score_bins = np.array([np.median(all_score[which == b]) for b in bins])
top = int(np.argmax(q_bins))
shape = {
    "the proxy's median rises with every KL bin": bool(np.all(np.diff(score_bins) > 0)),
    "true quality rises by 0.2+ to a peak at an intermediate KL":
        bool(0 < top < len(bins) - 1 and q_bins[top] > q_bins[0] + 0.2),
    "and falls below 0.1 in the last bin": bool(q_bins[-1] < 0.1),
}
in_bin = {beta: np.concatenate([h.metric[(h.kl >= 1) & (h.kl < 2)] for (b, _), h in runs.items() if b == beta])
          for beta in BETAS}
same = [np.median(x) for x in in_bin.values() if len(x) >= 10]
shape["at 1-2 nats, every beta's median quality within 0.1 of the others'"] = bool(
    len(same) == len(BETAS) and np.ptp(same) < 0.1)
for text, ok in shape.items():
    print(f"{ok!s:5s}  {text}")
assert all(shape.values())

# %% tags=["nbval-ignore-output"]
centres = [f"{edges[b]:g}-{edges[b + 1]:g}" for b in bins]
print("KL bin (nats):  " + "".join(f"{c:>8s}" for c in centres))
print("true quality:   " + "".join(f"{x:8.2f}" for x in q_bins))
print("proxy score:    " + "".join(f"{x:8.2f}" for x in score_bins))
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for (beta, seed), h in runs.items():
    label = f"beta = {beta}" if seed == SEEDS[0] else None
    axes[0].scatter(h.kl, h.metric, s=5, alpha=0.4, color=colors[beta], label=label)
    axes[1].scatter(h.kl, h.score, s=5, alpha=0.4, color=colors[beta], label=label)
mid = np.sqrt([max(edges[b], 0.05) * min(edges[b + 1], 64.0) for b in bins])
axes[0].plot(mid, q_bins, "k-o", ms=4, label="median per KL bin")
axes[1].plot(mid, score_bins, "k-o", ms=4, label="median per KL bin")
axes[0].set_title("True quality rises, then falls")
axes[1].set_title("The median proxy score keeps rising")
for ax, ylabel in zip(axes, ["true quality of the samples", "reward-model score (proxy)"]):
    ax.set_xscale("log")
    ax.set_xlabel("KL(pi || ref), nats per completion")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=9, markerscale=2)
plt.tight_layout()
plt.show()

# %% [markdown]
# The proxy and the truth agree up to a few nats of KL, where the policy moves to the warmest
# fluent sentences, and part ways after: past the peak, each further KL bin's median has more
# proxy and less truth. Not every run follows the medians: the points of a $\beta = 0$ run
# marked "drifted" above sit far out in KL with a proxy no higher than fluent text's (low red
# points on the right). This is Gao et al.'s over-optimisation curve. Here the true-quality
# points of all three $\beta$ lie on the same curve (at 1-2 nats their medians agree, asserted
# above): $\beta$ decided how far along it a run went, which is why you choose
# $\beta$ by watching the KL (and the truth, when you have any), not by copying a number.
# $\beta = 0.5$ is larger than the 0.01-0.05 typical of large models; what matters is $\beta$
# against the reward's scale and against how sharply the reference rules out the hacks, which is
# exactly what $\beta^*$ measured.
#
# Samples from the seed-0 runs at the end of training:

# %% tags=["nbval-ignore-output"]
for label, h in (("beta 0.5", runs[0.5, 0]), ("beta 0", runs[0.0, 0]), ("beta 0, no penalty", unpenalised[0])):
    out, out_mask = rc.generate(h.params, eval_prompts[:3], MAX_NEW, rng)
    print(label)
    for p, c in zip(eval_prompts[:3], tok.decode_completions(out, width)):
        print("   ", tok.decode(p), "->", c)

# %% [markdown]
# ## Pitfalls
#
# - **Scoring the prompt.** Summing log-probs over the whole sequence makes the loss depend on
#   tokens the policy did not choose; use the action mask, read as `mask[:, 1:]`.
# - **Off by one.** `logits[:, t]` predicts `tokens[:, t+1]`. Scoring `tokens[:, t]` trains the
#   model to copy its input.
# - **Scoring a cut completion as finished.** The length limit is a truncation: without a
#   missing-EOS penalty (or a value to bootstrap from, exercise 3) the policy learns to run
#   into the limit whenever the reward model likes long text; above, every unpenalised run
#   ended with 90%+ of its completions cut.
# - **The KL in the wrong place.** Put $k_1$ in the reward, or differentiate a loss whose
#   expected gradient is the KL's: $k_1$ differentiated as a loss enforces nothing (expected
#   gradient 0), $k_3$ as a reward gives the wrong gradient (its value is unbiased), $k_3$
#   differentiated as a loss follows
#   $\mathrm{KL}(\pi_{\text{ref}}\,\|\,\pi)$; and any per-token loss misses what a token does to
#   the KL after it (Check it).
# - **The KL the wrong way round.** RLHF penalises $\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ from
#   samples of $\pi$, with the log-ratio $\log\pi - \log\pi_{\text{ref}}$; on samples from the
#   reference, the same average estimates $-\mathrm{KL}(\pi_{\text{ref}}\,\|\,\pi)$.
# - **Reporting a sampled log-ratio as "the KL".** A single completion's log-ratio can be
#   negative; average many, or use the exact KL when you have the logits.
# - **Trusting held-out accuracy.** A reward model at its accuracy ceiling (as here) can still be
#   gamed: accuracy is measured where the preference data went, and the policy goes elsewhere.
# - **$\beta$ below what the task needs.** The symptom is the sweep's: the score climbs, the KL
#   climbs past a few nats, the samples degrade. Stop early, raise $\beta$, or add the exploited
#   completions, labelled, to the preference data.
# - **Reward at every token.** The reward-model score belongs to the finished completion: add it
#   at the last action token only, not to every token (which would pay for length).

# %% [markdown]
# ## Exercises
#
# 1. **Easy: a length penalty.** A common patch for reward models that like long answers:
#    subtract $\alpha$ per generated token. Write `length_penalized_scores(scores, mask, alpha)`
#    (`mask` as `generate` returns it; the length counts every sampled token, EOS included).
#    Then score "is great ." and "great great ." with it (the cell after it prints their scores
#    and lengths) for a few values of $\alpha$ and
#    answer `length_penalty_question`: can any $\alpha$ make every fluent completion outscore
#    every hack? (a) yes, any $\alpha$ above the reward of one "great"; (b) no, "great great ."
#    is as long as "is great ." and the reward model scores it higher; (c) yes, the hacks are
#    longer, so a large enough $\alpha$ always wins; (d) no, a length penalty changes every score
#    by the same amount.
# 2. **Medium: a reward-model ensemble.** Coste et al. (2024) train several reward models and
#    penalise their disagreement. Write `ensemble_reward(member_scores, lam)` for scores
#    `[K, B]` of K members: the mean over members minus `lam` times their variance
#    (uncertainty-weighted optimisation). The cell after it trains 5 word-count reward models on
#    bootstrap resamples of the 800 pairs and scores "is quite great ." and "is great great .";
#    score them with your function for a few `lam`, and answer
#    `ensemble_question`: does the ensemble penalty put the fluent one first? (a) yes, the
#    members disagree most about the hack, so any `lam > 0` does; (b) not at any sensible
#    `lam`: every member rewards each "great", so they agree the hack is good; their variance is
#    a few hundredths per "great" while the mean gains about 2 per "great", so `lam` would have
#    to be in the tens; (c) no, an ensemble's mean is always a
#    single model's score; (d) yes, the hack has no verb, which every member punishes.
# 3. **Hard: advantages from a value head.** Real RLHF-PPO learns a value $V(s_t)$ per token
#    (TRL: $\gamma = 1$, GAE $\lambda = 0.95$) instead of this lesson's per-position baseline.
#    Write `token_gae(rewards, values, mask, finished, last_values, lam)`: `rewards`,
#    `values`, `mask` `[B, T]` aligned with `tokens[:, 1:]` (`values[b, t]` is the value of the
#    state in which action token t is chosen), `finished` `[B]` (the completion ended with EOS)
#    and `last_values` `[B]` (the value of the state after the last token, for completions cut
#    at the limit). Return GAE advantages with $\gamma = 1$ inside each completion: a finished
#    completion is terminal; a cut one is a truncation that bootstraps from `last_values`.

# %% tags=["solution"]
def length_penalized_scores(scores, mask, alpha):
    """scores [B] minus alpha times each completion's number of sampled tokens (mask [B, L]): [B]."""
    return scores - alpha * mask.sum(axis=1)


# %%
short_probe, short_mask, _ = tok.encode_pairs(["the cat"] * 2, ["is great .", "great great ."])
print("reward-model scores of 'is great .' and 'great great .':",
      np.round(reward_model(short_probe, short_mask), 2), " sampled tokens:", short_mask.sum(axis=1))

# %% tags=["solution"]
for alpha in (0.0, 1.0, 10.0):
    fluent_s, hack_s = length_penalized_scores(reward_model(short_probe, short_mask), short_mask, alpha)
    print(f"alpha {alpha:4.1f}: 'is great .' {fluent_s:6.2f}   'great great .' {hack_s:6.2f}")
length_penalty_answer = "b"

# %%
assert rc.exercises.check("length_penalized_scores", length_penalized_scores)
assert rc.exercises.check("length_penalty_question", length_penalty_answer)

# %% tags=["solution"]
def ensemble_reward(member_scores, lam):
    """member_scores [K, B] (K members, B completions): the members' mean minus lam times their
    variance, [B]."""
    return member_scores.mean(axis=0) - lam * member_scores.var(axis=0)


# %% [markdown]
# Five bootstrap members, trained as the reward model was, and their scores of the two
# completions (not graded: the graded part is your function and the answer after it):

# %%
boot = np.random.default_rng(SEED)
members = []
for _ in range(5):
    rows = boot.integers(0, len(counts_c), len(counts_c))
    w = {"w": np.zeros(tok.vocab_size)}
    adam = rc.Adam(lr=0.05)
    state = adam.init(w)
    bag_c, bag_r = counts_c[rows], counts_r[rows]

    def bag_loss(q, bag_c=bag_c, bag_r=bag_r):
        return rc.preference_loss(bag_c @ q["w"], bag_r @ q["w"])

    for _ in range(200):
        _, g = rc.value_and_grad(bag_loss)(w)
        w, state = adam.step(w, g, state)
    members.append(w["w"])
pair_tokens, pair_mask, _ = tok.encode_pairs(["the cat"] * 2, ["is quite great .", "is great great ."])
member_scores = np.array([rc.token_counts(pair_tokens, pair_mask, tok.vocab_size) @ m for m in members])
print("member scores [K = 5, 2] ('is quite great .', 'is great great .'):\n", np.round(member_scores, 2))

# %% tags=["solution"]
print("member variance: fluent {:.3f}, hack {:.3f}".format(*member_scores.var(axis=0)))
flip = (member_scores.mean(0)[1] - member_scores.mean(0)[0]) / np.diff(member_scores.var(axis=0))[0]
print(f"lam needed to put the fluent one first: {flip:.0f}")
for lam in (0.0, 1.0, 10.0):
    print(f"lam {lam:4.1f}: ensemble scores", np.round(ensemble_reward(member_scores, lam), 2))
ensemble_answer = "b"

# %%
assert rc.exercises.check("ensemble_reward", ensemble_reward)
assert rc.exercises.check("ensemble_question", ensemble_answer)

# %% tags=["solution"]
def token_gae(rewards, values, mask, finished, last_values, lam):
    """GAE advantages [B, T] with gamma = 1 within each completion (0 outside mask [B, T]);
    finished [B]: ended with EOS (terminal); otherwise bootstrap from last_values [B]."""
    adv = np.zeros(rewards.shape)
    for b in range(len(rewards)):
        cols = np.flatnonzero(mask[b])
        following = 0.0 if finished[b] else last_values[b]  # terminal vs truncation
        running = 0.0
        for t in cols[::-1]:
            running = rewards[b, t] + following - values[b, t] + lam * running
            adv[b, t] = running
            following = values[b, t]
    return adv


# %%
assert rc.exercises.check("token_gae", token_gae)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | SFT | "instruction tuning" | maximum likelihood on example completions: masked next-token cross-entropy on the completion tokens |
# | preference pair | "chosen / rejected" | one prompt, two completions, and which one a person preferred |
# | Bradley-Terry | "the reward-model loss" | $P(y_c \succ y_r) = \sigma(r(y_c) - r(y_r))$, fitted by $-\log\sigma$ of the difference |
# | accuracy ceiling | "the RM is 77% accurate" | the best agreement any model can reach with noisy labels, $\mathbb{E}[\max(p, 1-p)]$; judge an accuracy against it |
# | reward model | "RM" | a learned score of a completion; only its differences are identified, and it is wrong wherever the data never went |
# | token-level MDP | "the LM as a policy" | state = prompt + tokens so far, action = next token, reward at the end; EOS is terminal, the length limit a truncation |
# | action mask | "loss mask" | True on generated tokens only: prompt, padding and observations never enter a policy loss |
# | missing-EOS penalty | "length penalty" | TRL's `missing_eos_penalty`: a fixed amount off the score of a completion cut at the limit without EOS |
# | reference model | "the SFT anchor" | the frozen starting policy that the KL penalty measures drift from |
# | KL penalty | "the leash" | $-\beta(\log\pi - \log\pi_{\text{ref}})$ per token in the reward ($k_1$): its policy gradient is that of $-\beta\,\mathrm{KL}(\pi\,\|\,\pi_{\text{ref}})$ |
# | KL-regularised optimum | "what RLHF converges to" | $\pi^* \propto \pi_{\text{ref}}\, e^{r/\beta}$: a completion wins when its reward over $\beta$ beats the reference's charge for it |
# | $k_1$, $k_2$, $k_3$ | "the KL estimator" | per-token estimates of the KL from the sampled token: $k_1 = \log\pi - \log\pi_{\text{ref}}$ and $k_3$ are unbiased as values, $k_2$ is not; as a reward or a loss each has its own gradient, and only $k_1$ in the reward gives the sequence KL's |
# | break-even $\beta^*$ | "the right KL coefficient" | the $\beta$ below which a hack's extra reward over $\beta$ beats the log-probability the reference charges for it, so the KL-regularised optimum prefers the hack |
# | truncation vs termination | "the episode ended" | EOS terminates a completion (a finished answer, nothing follows); the length limit truncates it (not an answer: penalise it or bootstrap from a value) |
# | reward hacking | "overoptimisation" | the proxy reward rises while the true goal falls; here below $\beta^*$, past a few nats of KL |

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
#   against KL, rising then falling, the curve this lesson's sweep draws.
# - Coste et al. (2024), *Reward model ensembles help mitigate overoptimization*, ICLR: the
#   ensemble penalties of exercise 2.
# - Bradley & Terry (1952), *Rank analysis of incomplete block designs*, Biometrika: the
#   pairwise comparison model.
# - Schulman (2020), *Approximating KL divergence* (blog note): the k1, k2, k3 estimators as
#   values.
# - Tang & Munos (2025), *On a few pitfalls in KL divergence gradient estimation for RL*
#   (arXiv:2506.09477), and Shah et al. (2025), *A comedy of estimators: on KL regularization in
#   RL training of LLMs* (arXiv:2512.21852): the gradients behind Check it's table.
# - Hugging Face TRL: `PPOConfig` (`kl_estimator="k1"`, `missing_eos_penalty`, GAE with
#   $\gamma = 1$, $\lambda = 0.95$) and `GRPOConfig.use_bias_correction_kl`, whose default
#   became `True` in 2026 (pull request 6503: $k_3$ times the importance ratio, DeepSeek-V3.2's
#   correction).
# - Huang et al. (2024), *The N+ implementation details of RLHF with PPO*: masks, padding, EOS
#   handling and the many places real implementations differ.
