# %% [markdown]
# # 14 · GRPO with a verifier
#
# *Prerequisites:* 10, 12, 13
# *Time:* 50 minutes
# *You will build:* group-relative advantages, GRPO's clipped token loss with a k3 KL penalty, and a tiny LM that a verifier alone teaches to add.

# %% [markdown]
# Some answers can be checked by a program: a sum, a unit test, a proof checker. Then you need
# neither human preferences nor a learned reward model: sample answers, let the *verifier*
# score them 1 or 0, and reinforce the right ones. GRPO (Group Relative Policy Optimisation,
# from DeepSeekMath and DeepSeek-R1) is the policy-gradient method built for this setting: no
# critic, one advantage per answer, measured against the other answers to the same prompt.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

# %% [markdown]
# The task: one-digit addition, `"3+4="` answered by `"7"`, all 100 sums. The verifier is a
# few lines of Python; it is the only reward the model will ever get.

# %%
tok = rc.Tokenizer("0123456789+=")
prompts = [f"{a}+{b}=" for a in range(10) for b in range(10)]
answers = [str(a + b) for a in range(10) for b in range(10)]


def verifier(prompt, completion):
    """1.0 if the completion is exactly the sum, else 0.0."""
    a, b = prompt.rstrip("=").split("+")
    return float(completion == str(int(a) + int(b)))


print(verifier("3+4=", "7"), verifier("3+4=", "8"), verifier("9+9=", "18"), verifier("9+9=", "18+"))

# %% [markdown]
# The starting model is a *weak* supervised model: a window-MLP LM fine-tuned on the 100
# correct answers for only 100 steps, so it knows the format (digits, then EOS) but gets many
# sums wrong. Its verifier accuracy can be computed exactly: each prompt has one right answer,
# so the probability that a sample passes is $\pi(\text{answer}\mid\text{prompt})$, averaged
# over prompts.

# %%
answer_tokens, answer_mask, prompt_len = tok.encode_pairs(prompts, answers)
prompt_ids = tok.encode_prompts(prompts)
weak, _ = rc.sft(rc.lm_init(tok.vocab_size, context=5, dim=16, seed=SEED), answer_tokens,
                 answer_mask, steps=100, lr=3e-3, seed=SEED, batch=32)


def pass_probability(params):
    """Probability of passing the verifier, per prompt [100]: exact, no sampling."""
    return np.exp(rc.completion_log_prob(params, answer_tokens, answer_mask))


def reward_fn(tokens, mask):
    """The verifier on a batch of sampled sequences (prompt in the first prompt_len columns)."""
    return [verifier(tok.decode(row[:prompt_len]), tok.decode(row[prompt_len:])) for row in tokens]


weak_pass = pass_probability(weak)

# %% tags=["nbval-ignore-output"]
print(f"weak model: verifier accuracy {weak_pass.mean():.3f}")
samples, _ = rc.generate(weak, prompt_ids[[34, 57, 99]], 3, rng)
print("samples:", [(p, c) for p, c in zip(["3+4=", "5+7=", "9+9="], tok.decode_completions(samples, prompt_len))])

# %%
assert weak_pass.mean() < 0.5

# %% [markdown]
# ## The problem
#
# A policy gradient needs an advantage: how much better was this answer than expected? PPO
# (lesson 10) learns a critic for the "expected" part; RLHF-PPO on a language model (lesson 12)
# needs a value estimate per token. With a 0/1 reward at the end of the answer that is a lot of
# machinery, and the obvious shortcut, one baseline for the whole batch, is wrong in a way that
# matters: prompts differ in difficulty. Take the easiest and the hardest sum for the weak
# model, sample 8 answers to each, and subtract the batch mean:

# %%
easy, hard = int(np.argmax(weak_pass)), int(np.argmin(weak_pass))
group_tokens, group_mask = rc.generate(weak, np.repeat(prompt_ids[[easy, hard]], 8, axis=0), 3, rng)
rewards = np.array(reward_fn(group_tokens, group_mask))
batch_baseline = rewards - rewards.mean()
group_relative = rc.grpo_advantages(rewards, group_size=8)

# %% tags=["nbval-ignore-output"]
for name, rows in (("easy " + prompts[easy], slice(0, 8)), ("hard " + prompts[hard], slice(8, 16))):
    print(f"{name:10} rewards {rewards[rows].astype(int)}  batch-baseline adv "
          f"{np.round(batch_baseline[rows], 2)}")
    print(f"{'':10} group-relative adv {np.round(group_relative[rows], 2)}")

# %%
assert rewards[8:].max() == 0 and (group_relative[8:] == 0).all() and (batch_baseline[8:] < 0).all()

# %% [markdown]
# Look at the hard prompt first. When all 8 answers fail, as here, nothing tells you which
# answer would have been better, yet the batch baseline gives each one a negative advantage and
# pushes all of them down. And every advantage depends on which *other* prompts share the batch:
# mix in easier prompts and the baseline rises, so the same right answer to the same prompt
# looks less good. The prompt's difficulty leaks into the signal. Measuring each answer against
# the *other answers to the same prompt* removes it: the hard prompt's group gets exactly 0 (no
# signal, and no noise either), and the easy prompt's right answers go up and its wrong ones
# down by amounts that depend on that prompt alone.

# %% [markdown]
# ## The idea
#
# For each prompt $q$, sample a **group** of $G$ answers $o_1,\dots,o_G$ from the current policy
# $\pi_\text{old}$ and score them with the verifier, $r_1,\dots,r_G$. The advantage of every
# token of answer $i$ is the answer's standardised reward within its group:
# $$\hat A_i = \frac{r_i - \operatorname{mean}(r_{1..G})}{\operatorname{std}(r_{1..G}) + \epsilon}.$$
# (Here, as in TRL, std is the sample standard deviation, ddof=1, and $\epsilon = 10^{-4}$.) The
# group mean is a Monte Carlo estimate of the value of the prompt, which is what a critic would
# have learned. A group whose answers all got the same reward, all right or all wrong, has
# advantage 0: it says nothing about *which* answer is better.
#
# The loss is PPO's clipped surrogate on tokens, with $\rho_{i,t} = \pi(o_{i,t}\mid\ldots)/\pi_\text{old}(o_{i,t}\mid\ldots)$,
# plus a KL penalty to the frozen reference added *to the loss* (not to the reward, as RLHF did):
# $$\mathcal{L} = -\frac{1}{N}\sum_{i,t}\min\big(\rho_{i,t}\hat A_i,\ \operatorname{clip}(\rho_{i,t},1-\varepsilon,1+\varepsilon)\hat A_i\big) + \beta\,\frac{1}{N}\sum_{i,t}\Big(e^{d_{i,t}} - d_{i,t} - 1\Big),\qquad d_{i,t} = \log\pi_\text{ref}(o_{i,t}) - \log\pi(o_{i,t}).$$
# The KL term is the **k3** estimator: never negative, unbiased for $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$
# on tokens sampled from $\pi$, and its gradient pulls each token's log-prob towards the
# reference's. $\frac1N\sum_{i,t}$ is the **token mean**: one average over all answer tokens of
# the batch. The GRPO paper instead averages each answer's tokens first, then the answers (the
# **sequence mean**); the difference matters for long answers, as you will see.
#
# The smallest example: two prompts, groups of four.

# %%
example_rewards = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
print("rewards:   ", example_rewards)
print("advantages:", np.round(rc.grpo_advantages(example_rewards, group_size=4), 4))

# %% [markdown]
# ## Build it
#
# **Step 1: group-relative advantages.** Reshape to one row per group, standardise each row.

# %%
def my_grpo_advantages(rewards, group_size, eps=1e-4):
    groups = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    centred = groups - groups.mean(axis=1, keepdims=True)
    return (centred / (groups.std(axis=1, ddof=1, keepdims=True) + eps)).reshape(-1)


rollout_rewards = rng.integers(0, 2, size=32).astype(float)
print(np.round(my_grpo_advantages(rollout_rewards, 8)[:8], 4))
np.testing.assert_allclose(my_grpo_advantages(rollout_rewards, 8), rc.grpo_advantages(rollout_rewards, 8),
                           atol=1e-12)

# %% [markdown]
# **Step 2: per-token log-probs of a rollout.** Sample a group per prompt, then score every
# token with the sampling policy (`old_logp`) and the reference (`ref_logp`). Logits at
# position $t$ predict token $t+1$, so every per-token array is aligned with `tokens[:, 1:]` and
# goes with `mask[:, 1:]`, which is True on the answer tokens only.

# %%
rollout, rollout_mask = rc.generate(weak, np.repeat(prompt_ids[:4], 8, axis=0), 3, rng)
action = rollout_mask[:, 1:]
old_logp = rc.token_log_probs(rc.lm_logits(weak, rollout)[:, :-1], rollout)
ref_logp = old_logp.copy()  # the reference is the weak model itself, at the start
advantages = rc.grpo_advantages(reward_fn(rollout, rollout_mask), 8)
print("one row:   ", rollout[0].tolist(), "->", repr(tok.decode(rollout[0, prompt_len:])))
print("its action:", action[0].astype(int).tolist())

# %% [markdown]
# **Step 3: the k3 penalty**, averaged over answer tokens only.

# %%
def my_k3_penalty(logp, ref_logp, mask):
    d = np.where(mask, ref_logp - logp, 0.0)
    return float(np.sum(np.where(mask, np.exp(d) - d - 1, 0.0)) / mask.sum())


moved = old_logp + 0.3 * rng.normal(size=old_logp.shape)  # a policy a little away from the reference
print(f"k3 penalty: {my_k3_penalty(moved, ref_logp, action):.6f}")
np.testing.assert_allclose(my_k3_penalty(moved, ref_logp, action),
                           rc.grpo_loss(moved, old_logp, ref_logp, advantages, action).kl)

# %% [markdown]
# **Step 4: the clipped token loss** with one advantage per answer, token mean.

# %%
def my_clip_token_loss(logp, old_logp, advantages, mask, clip=0.2):
    ratio = np.exp(np.where(mask, logp - old_logp, 0.0))
    adv = advantages[:, None]
    objective = np.minimum(ratio * adv, np.clip(ratio, 1 - clip, 1 + clip) * adv)
    return float(-np.sum(np.where(mask, objective, 0.0)) / mask.sum())


print(f"clipped loss: {my_clip_token_loss(moved, old_logp, advantages, action):.6f}")
np.testing.assert_allclose(my_clip_token_loss(moved, old_logp, advantages, action),
                           rc.ppo_clip_loss(moved, old_logp, advantages, action).loss)

# %% [markdown]
# **Step 5: GRPO's loss** is the sum, with $\beta = 0.04$ (DeepSeekMath's value):

# %%
mine = my_clip_token_loss(moved, old_logp, advantages, action) + 0.04 * my_k3_penalty(moved, ref_logp, action)
print(f"mine {mine:.6f}   rc.grpo_loss {float(rc.grpo_loss(moved, old_logp, ref_logp, advantages, action).loss):.6f}")
np.testing.assert_allclose(mine, rc.grpo_loss(moved, old_logp, ref_logp, advantages, action, kl_coef=0.04).loss)

# %% [markdown]
# One whole iteration, as `rlcourse` runs it: sample a group per prompt, score, standardise
# within groups, then `epochs` gradient steps on `grpo_loss`.

# %%
print(inspect.getsource(rc.grpo_step))

# %% [markdown]
# ## Check it
#
# 1. Advantages sum to zero in every group; an all-equal group gives exact zeros, not NaN.
# 2. At the first step of an update the policy *is* the sampling policy: every ratio is 1,
#    nothing is clipped, and the gradient with respect to each answer token's log-prob is
#    $-\hat A_i/N$, plain REINFORCE with the group baseline.
# 3. The k3 penalty is never negative, and is 0 exactly where the policy equals the reference.
# 4. Prompt and padding positions get exactly zero gradient.
# 5. With a positive advantage, a token whose ratio is already above $1+\varepsilon$ gets no
#    gradient from the surrogate: the update stops pushing it.

# %%
adv = rc.grpo_advantages(np.concatenate([rollout_rewards, np.ones(8)]), 8)
np.testing.assert_allclose(adv.reshape(-1, 8).sum(axis=1), 0.0, atol=1e-12)
assert (adv[-8:] == 0).all() and np.isfinite(adv).all()

out = rc.grpo_loss(old_logp, old_logp, ref_logp, advantages, action)
assert out.clip_fraction == 0.0 and out.kl == 0.0
grad = rc.grad(lambda lp: rc.grpo_loss(lp, old_logp, ref_logp, advantages, action).loss)(old_logp)
np.testing.assert_allclose(grad, np.where(action, -advantages[:, None] / action.sum(), 0.0), atol=1e-12)
assert (grad[~action] == 0).all()

d = np.linspace(-5, 5, 101)
assert (np.exp(d) - d - 1 >= 0).all() and np.exp(0.0) - 0.0 - 1 == 0

pushed = old_logp + np.where(action, 0.5, 0.0)  # every ratio e^0.5 > 1.2
grad_pushed = rc.grad(lambda lp: rc.grpo_loss(lp, old_logp, ref_logp, np.abs(advantages) + 1, action,
                                              kl_coef=0.0).loss)(pushed)
assert (grad_pushed == 0).all()
print("all GRPO invariants hold")

# %% [markdown]
# ## Use it
#
# Train the weak model with GRPO for 200 iterations: 16 prompts per iteration, a group of 8
# answers each, one Adam step per batch (so the ratio starts at 1 on every batch, as in
# TRL's default), $\beta = 0.04$. The reference is the weak model.

# %%
history = rc.grpo_train(weak, weak, reward_fn, prompt_ids, iterations=200, group_size=8,
                        prompts_per_step=16, lr=5e-3, max_new=3, seed=SEED)
grpo_pass = pass_probability(history.params)
gain = grpo_pass.mean() - weak_pass.mean()

# %% tags=["nbval-ignore-output"]
print(f"verifier accuracy: weak {weak_pass.mean():.3f} -> GRPO {grpo_pass.mean():.3f} (+{100 * gain:.0f} points)")
print(f"sums the model passes more than half the time: {np.sum(weak_pass > 0.5)} -> {np.sum(grpo_pass > 0.5)} of 100")
print(f"KL from reference at the end: {history.kl[-20:].mean():.2f} nats per answer")
print(f"groups with any signal (not all equal): first 20 iterations {history.solved[:20].mean():.2f}, "
      f"last 20 {history.solved[-20:].mean():.2f}")

# %%
assert gain >= 0.30, "GRPO should add at least 30 points of verifier accuracy"
print("gain >= 30 points:", gain >= 0.30)

# %%
window = 10
smooth = np.convolve(history.reward, np.ones(window) / window, mode="valid")
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(np.arange(window - 1, len(history.reward)), smooth, label="mean verifier reward (sampled)")
ax.plot(history.kl, label="KL(pi || ref), nats per answer", alpha=0.7)
ax.set_xlabel("GRPO iteration")
ax.set_ylabel("reward / nats")
ax.set_title("Reward climbs; the policy pays for it in KL")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# A second look at `solved`: a group teaches something only if its answers disagree. When the
# model is weak on a prompt, all 8 answers are often wrong; when it masters one, all are right.
# Both give zero advantage. That is why group size matters (GRPO uses 8 to 64) and why
# training on prompts the model *sometimes* solves is most efficient.
#
# **Token mean or sequence mean?** Take one group of two answers: a short right one (2 tokens)
# and a long wrong one (6 tokens), and look at how hard each token is pushed, the gradient of
# the loss with respect to its log-prob:

# %%
mask_demo = np.array([[True, True, False, False, False, False], [True] * 6])
logp_demo = np.full((2, 6), -1.0)
adv_demo = rc.grpo_advantages(np.array([1.0, 0.0]), group_size=2)
for aggregate in ("token", "sequence"):
    def demo_loss(lp, aggregate=aggregate):
        return rc.grpo_loss(lp, logp_demo, logp_demo, adv_demo, mask_demo, kl_coef=0.0,
                            aggregate=aggregate).loss

    g = rc.grad(demo_loss)(logp_demo)
    print(f"{aggregate:8}: push per token, short right answer {-g[0, 0]:+.4f}, "
          f"long wrong answer {-g[1, 0]:+.4f} (ratio {g[1, 0] / g[0, 0]:+.2f}); "
          f"total push, long/short {g[1].sum() / g[0].sum():+.2f}")

# %% [markdown]
# With the **token mean** every token weighs the same: each token of the wrong answer is
# pushed down exactly as hard as each token of the right one is pushed up, and the long wrong
# answer receives 6/2 = 3 times the total correction (the last ratio printed above). With the
# **sequence mean** every *answer* weighs the same, so each token of the long wrong answer is
# pushed down only 2/6 = a third as hard (the per-token ratio printed above): long
# wrong answers are punished less per token, and the policy drifts towards long answers when
# it is wrong (the length bias that "Dr. GRPO" and DAPO removed by switching to token means).
# Symmetrically, a short right answer is rewarded more per token under the sequence mean.
#
# On this task the answers are short, so the two aggregations train alike:

# %%
history_seq = rc.grpo_train(weak, weak, reward_fn, prompt_ids, iterations=200, group_size=8,
                            prompts_per_step=16, lr=5e-3, max_new=3, seed=SEED, aggregate="sequence")
seq_pass = pass_probability(history_seq.params)

# %% tags=["nbval-ignore-output"]
for name, h, p in (("token mean", history, grpo_pass), ("sequence mean", history_seq, seq_pass)):
    print(f"{name:13}: verifier accuracy {p.mean():.3f}, mean answer length "
          f"{h.length[-20:].mean():.2f} tokens (EOS included)")

# %%
assert seq_pass.mean() - weak_pass.mean() >= 0.2
assert abs(seq_pass.mean() - grpo_pass.mean()) < 0.1, "short answers: the aggregations should train alike"

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | NaN loss on the first batch | a group with equal rewards divides 0 by a std of 0 | add $\epsilon$ to the std (or skip such groups) |
# | no learning, advantages all ~0 | the model solves none (or all) of the prompts: every group is constant | start from a stronger SFT model, pick prompts of the right difficulty, larger groups |
# | learning is noisy and slow | groups of 2-4 give a poor baseline | groups of 8-64 |
# | answers grow longer while accuracy stalls | sequence-mean aggregation punishes long wrong answers less per token | token-mean aggregation, a length limit |
# | advantage computed over the whole batch | easy and hard prompts mixed in one baseline | standardise within each prompt's group: consecutive rows, `group_size` of them |
# | prompt tokens change | the loss or KL was averaged over the whole sequence | mask: only answer tokens (`mask[:, 1:]`) enter the loss |
# | KL grows without limit, outputs degenerate | $\beta = 0$ and a verifier that can be gamed | keep a small k3 penalty, check the verifier (here `"18+"` must not pass `9+9=`) |
# | clip fraction always 0 | one gradient step per batch: the ratio is 1 when the loss is evaluated | expected with `epochs=1`; clipping matters once you reuse a batch for several steps |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: group-relative advantages.** `grpo_adv(rewards, group_size)` with the sample std
#    and $\epsilon = 10^{-4}$; a constant group must give zeros.
# 2. **Medium: the k3 penalty.** `k3_penalty(logp, ref_logp, mask)`: the mean over answer
#    tokens of $e^d - d - 1$, $d$ = `ref_logp - logp`; padding may hold `-inf`.
# 3. **Hard: the clipped token loss, both aggregations.**
#    `clip_loss(logp, old_logp, advantages, mask, aggregate)` with clip 0.2, advantages `[B]`,
#    `aggregate` `"token"` or `"sequence"`. Then change `grpo_train`'s `max_new` and the
#    verifier so that some answers can be long (say, sums written in words), and measure how
#    the two aggregations change the answer length.

# %% tags=["solution"]
def grpo_adv(rewards, group_size):
    groups = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    centred = groups - groups.mean(axis=1, keepdims=True)
    return (centred / (groups.std(axis=1, ddof=1, keepdims=True) + 1e-4)).reshape(-1)


# %%
assert rc.exercises.check("grpo_advantages", grpo_adv)

# %% tags=["solution"]
def k3_penalty(logp, ref_logp, mask):
    d = np.where(mask, ref_logp - logp, 0.0)
    return float(np.sum(np.where(mask, np.exp(d) - d - 1, 0.0)) / mask.sum())


# %%
assert rc.exercises.check("grpo_kl_penalty", k3_penalty)

# %% tags=["solution"]
def clip_loss(logp, old_logp, advantages, mask, aggregate):
    ratio = np.exp(np.where(mask, logp - old_logp, 0.0))
    adv = advantages[:, None]
    objective = np.where(mask, np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv), 0.0)
    if aggregate == "token":
        return float(-objective.sum() / mask.sum())
    return float(-np.mean(objective.sum(axis=1) / mask.sum(axis=1)))


# %%
assert rc.exercises.check("grpo_clip_loss", clip_loss)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | verifier | "the reward function" | a program that checks an answer (1 right, 0 wrong); it cannot be flattered the way a learned reward model can, but it can have loopholes |
# | group | "the G samples" | $G$ answers to one prompt from the current policy; consecutive rows of the batch |
# | group-relative advantage | "GRPO's baseline" | $(r_i - \text{mean})/(\text{std} + \epsilon)$ within the group: the group mean stands in for a critic's value of the prompt |
# | critic-free | "no value network" | the baseline comes from sampling, not from a learned $V$; costs $G$ samples per prompt instead of a second network |
# | k3 | "the KL penalty" | $e^d - d - 1$, $d = \log\pi_\text{ref} - \log\pi$ on sampled tokens: a non-negative, unbiased per-token estimate of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ |
# | token mean | "DAPO / Dr. GRPO loss" | one average over all answer tokens of the batch: every token weighs the same |
# | sequence mean | "the GRPO paper's loss" | average within each answer, then over answers: every answer weighs the same, so tokens of long answers weigh less |
# | RLVR | "RL with verifiable rewards" | RL on tasks whose answers a program can check: maths, code, puzzles |

# %% [markdown]
# ## Further reading
#
# - Shao et al. (2024), *DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open
#   Language Models*: introduces GRPO, the group baseline and the k3 KL term in the loss.
# - DeepSeek-AI (2025), *DeepSeek-R1: Incentivizing Reasoning Capability in LLMs via
#   Reinforcement Learning*: GRPO with rule-based verifiers at scale.
# - Liu et al. (2025), *Understanding R1-Zero-Like Training: A Critical Perspective* ("Dr.
#   GRPO"): the length and difficulty biases of sequence means and std normalisation.
# - Yu et al. (2025), *DAPO: An Open-Source LLM Reinforcement Learning System at Scale*: the
#   token-level loss, and why groups with equal rewards waste compute.
# - Schulman (2020), *Approximating KL Divergence* (blog note): the k1, k2 and k3 estimators.
# - Hugging Face TRL, `GRPOTrainer` documentation: the conventions followed here (sample std,
#   $\epsilon = 10^{-4}$, loss aggregation options).
