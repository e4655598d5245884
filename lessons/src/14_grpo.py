# %% [markdown]
# # 14 · GRPO with a verifier
#
# *Prerequisites:* 10, 12, 13
# *Time:* 75 minutes
# *You will build:* group-relative advantages with and without the standard deviation, the k1/k2/k3 KL estimators, TRL's three ways to average a token loss, and GRPO's clipped loss; then a one-layer transformer that a verifier alone teaches to reverse strings it never saw.

# %% [markdown]
# Some answers can be checked by a program: a sum, a unit test, a proof checker. Then you need
# neither human preferences nor a learned reward model: sample answers, let the *verifier* score
# them 1 or 0, and reinforce the right ones: RL with verifiable rewards (RLVR). GRPO (Group
# Relative Policy Optimisation), introduced with DeepSeekMath and used for DeepSeek-R1, is a
# policy-gradient method built for it: no critic, one advantage per answer, measured against the
# other answers to the same prompt.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

# %% [markdown]
# **The task: reverse a string.** The prompt `cabd>` is answered by `dbac`. The 625 words of four
# letters from `a`-`e` are split three ways, and no word is in two splits: 32 words *with* their
# answers for supervised fine-tuning (SFT), 393 RL prompts *without* answers (GRPO only ever sees
# the verifier's 1 or 0 on them) and 200 held-out test words that no training step sees. Passing
# on the test words needs the rule, since their answers were never shown (a few held-out words
# are palindromes or reversals of SFT words, counted below; harmless, since no training step
# ever pairs those prompts with their answers). The verifier
# compares text; the reward that training and evaluation use, `task.reward_fn`, checks the
# sampled *tokens* first, because decoding skips special tokens and a model can sample them:

# %%
task = rc.reversal_task()
print(task.tokenizer)
print(f"{len(task.sft) + len(task.rl) + len(task.test)} words: SFT (with answers) {len(task.sft)}, "
      f"RL prompts (no answers) {len(task.rl)}, held-out test words {len(task.test)}")
print("SFT examples:", [task.prompt(w) + task.answer(w) for w in task.sft[:4]])
print(inspect.getsource(rc.ReversalTask.verify))
print(inspect.getsource(rc.ReversalTask.reward_fn))
ids, _ = task.pairs(["cabd"])  # BOS c a b d > | d b a c EOS
prompt_part, (d, b, a, c, eos) = ids[0, :task.prompt_len], ids[0, task.prompt_len:]
candidates = {"d b a c EOS": [d, b, a, c, eos], "d PAD b a c EOS": [d, rc.PAD, b, a, c, eos],
              "d b a c PAD (no EOS)": [d, b, a, c, rc.PAD], "d b c a EOS": [d, b, c, a, eos]}
print(f"{'completion tokens':22} {'decoded':>8} {'verify':>7} {'reward_fn':>10}")
strict = {}
for name, completion in candidates.items():
    row = np.r_[prompt_part, completion][None, :]
    text = task.tokenizer.decode_completions(row, task.prompt_len)[0]
    strict[name] = (task.verify("cabd>", text), float(task.reward_fn(row)[0]))
    print(f"{name:22} {text:>8} {str(strict[name][0]):>7} {strict[name][1]:10.1f}")
assert [v[1] for v in strict.values()] == [1.0, 0.0, 0.0, 0.0]
assert strict["d PAD b a c EOS"][0] and strict["d b a c PAD (no EOS)"][0]
assert not (set(task.sft) & set(task.rl) or set(task.sft) & set(task.test) or set(task.rl) & set(task.test))
near = sum(w[::-1] in task.sft for w in task.test), sum(w == w[::-1] for w in task.test)
print(f"of the held-out words, {near[0]} are reversals of SFT words and {near[1]} are palindromes")

# %% [markdown]
# **The starting model** is a one-layer causal transformer (width 16, 4 heads), fine-tuned
# for 60 steps on the 32 SFT pairs: a *weak* model that has mostly learned
# the format but not yet the rule. Every prompt has exactly one right answer, so a model's
# probability of passing the verifier on a prompt is the probability it gives that answer,
# `exp(rc.completion_log_prob(...))`: pass@1 computed exactly, no sampling noise. Every
# training experiment below runs on three seeds (model initialisation, SFT batches, sampling);
# the measurements on the untrained model in "The problem" and "Check it" use seed 0's model.

# %%
SEEDS = [0, 1, 2]
MAX_NEW = task.length + 1  # four letters and EOS
sft_tokens, sft_mask = task.pairs(task.sft)
test_tokens, test_mask = task.pairs(task.test)
rl_tokens, rl_mask = task.pairs(task.rl)  # the answers only to *measure*; training never sees them
rl_prompts = task.prompt_ids(task.rl)


def sft_model(seed):
    """The weak start: a one-layer transformer after 60 SFT steps on the 32 SFT pairs."""
    init = rc.lm_init(task.tokenizer.vocab_size, context=11, dim=16, layers=1, seed=seed)
    return rc.sft(init, sft_tokens, sft_mask, steps=60, lr=3e-3, seed=seed, batch=32)[0]


def pass_prob(params, tokens=test_tokens, mask=test_mask):
    """Each prompt's exact probability of passing the verifier: [prompts]."""
    return np.exp(rc.completion_log_prob(params, tokens, mask))


weak = {seed: sft_model(seed) for seed in SEEDS}
samples, _ = rc.generate(weak[0], task.prompt_ids(task.test), MAX_NEW, rng)
completions = task.tokenizer.decode_completions(samples, task.prompt_len)
well_formed = np.mean([len(c) == task.length for c in completions])
print(f"parameters: {rc.count_params(weak[0])}")

# %% tags=["nbval-ignore-output"]
for seed in SEEDS:
    print(f"seed {seed}: pass@1 on the 32 SFT words {pass_prob(weak[seed], sft_tokens, sft_mask).mean():.3f}, "
          f"on the 200 held-out words {pass_prob(weak[seed]).mean():.3f}")
print("seed 0's samples:", [f"{task.prompt(w)}{c}" for w, c in zip(task.test[:6], completions)])
print(f"seed 0: {well_formed:.2f} of its samples are four letters, then EOS")

# %%
start = {seed: pass_prob(weak[seed]).mean() for seed in SEEDS}
assert all(0.01 < p < 0.2 for p in start.values()), start
assert well_formed > 0.6
print("on every seed the SFT model passes under 20% of the held-out words, and most samples "
      "have the right format")

# %% [markdown]
# ## The problem
#
# A policy gradient (lesson 08) pushes up the log-probability of each sampled answer in
# proportion to its *advantage*, its reward minus a **baseline**. Any baseline that does not
# depend on the answer itself keeps the gradient unbiased (the expected score
# $\mathbb{E}[\nabla\log\pi]$ is zero); a good one lowers its variance. PPO (lesson 10) learns a
# critic $V(s)$ for the baseline; for a language model that is a value for every token, and
# InstructGPT-style RLHF-PPO trains a value network, itself a language model, beside the policy.
# Lesson 12 did without one, with a baseline computed from the batch. Which baseline, then?
#
# Measure it on the weak model. Sample 32 batches of 8 RL prompts with 8 answers each, and
# compute the gradient estimate $-\frac1N\sum_i A_i\nabla\log\pi(o_i)$ with three baselines,
# each left out of its own sample so that all three are exactly unbiased: none ($A_i = r_i$),
# the mean of the *rest of the batch*, and the mean of the *rest of the same prompt's group*.
# Then repeat with a reward that has a part decided by the prompt alone (a bonus of one point per
# distinct letter of the word, as a reward model might rate some prompts higher whatever the
# answer). How much of the plain verifier reward the prompt decides is measured too: the
# variance of the prompts' exact pass rates against the average variance within a prompt.

# %%
def policy_gradient(params, tokens, mask, advantages):
    """-1/N sum_i A_i grad log pi(o_i | q_i), flattened into one vector."""
    action = mask[:, 1:]

    def surrogate(p):
        logp = rc.token_log_probs(rc.lm_logits(p, tokens)[:, :-1], tokens)
        return -rc.sum(rc.where(action, logp, 0.0) * advantages[:, None]) / len(advantages)

    return np.concatenate([g.ravel() for g in rc.tree_leaves(rc.grad(surrogate)(params))])


def leave_one_out_batch(r):
    return r - (r.sum() - r) / (len(r) - 1)


bonus = {w: float(len(set(w))) for w in task.rl}  # decided by the prompt alone: 1 to 4 points
grads = {key: [] for key in ("verifier: none", "verifier: batch", "verifier: group",
                             "+ bonus: none", "+ bonus: batch", "+ bonus: group")}
for _ in range(32):
    rows = rng.choice(len(task.rl), size=8, replace=False)
    tokens, mask = rc.generate(weak[0], np.repeat(rl_prompts[rows], 8, axis=0), MAX_NEW, rng)
    r = task.reward_fn(tokens, mask)
    r_bonus = r + np.repeat([bonus[task.rl[i]] for i in rows], 8)
    np.testing.assert_allclose(rc.rloo_advantages(r_bonus, 8), rc.rloo_advantages(r, 8), atol=1e-12)
    for name, reward in (("verifier", r), ("+ bonus", r_bonus)):
        grads[f"{name}: none"].append(policy_gradient(weak[0], tokens, mask, reward))
        grads[f"{name}: batch"].append(policy_gradient(weak[0], tokens, mask, leave_one_out_batch(reward)))
    grads["verifier: group"].append(policy_gradient(weak[0], tokens, mask, rc.rloo_advantages(r, 8)))
grads["+ bonus: group"] = grads["verifier: group"]  # the same advantages (to rounding), asserted above
p_rl = pass_prob(weak[0], rl_tokens, rl_mask)
prompt_share = p_rl.var() / (p_rl.var() + np.mean(p_rl * (1 - p_rl)))
variance = {k: float(np.mean(np.sum((np.array(g) - np.mean(g, axis=0)) ** 2, axis=1))) for k, g in grads.items()}
pooled = np.mean([np.mean(grads[f"verifier: {b}"], axis=0) for b in ("none", "batch", "group")], axis=0)
cosine = {k: float(np.mean(g, axis=0) @ pooled / np.linalg.norm(np.mean(g, axis=0)) / np.linalg.norm(pooled))
          for k, g in grads.items()}

# %% tags=["nbval-ignore-output"]
print(f"{'reward: baseline':18} {'variance (vs verifier, none)':>29} {'cos(mean, pooled mean)':>24}")
for k in grads:
    print(f"{k:18} {variance[k] / variance['verifier: none']:29.2f} {cosine[k]:24.3f}")
print(f"share of the verifier reward's variance that the prompt decides: {prompt_share:.3f}")

# %%
base = variance["verifier: none"]
assert variance["+ bonus: none"] > 5 * base and variance["+ bonus: batch"] > 2 * base
assert variance["verifier: group"] > 0.8 * min(variance["verifier: none"], variance["verifier: batch"])
assert min(cosine[f"verifier: {b}"] for b in ("none", "batch", "group")) > 0.9
assert prompt_share < 0.25
print("asserted: with the prompt-decided bonus, no baseline and the batch baseline have several "
      "times the variance; the group baseline's advantages do not change at all; on the plain "
      "verifier reward the group baseline is not lower than the others; the three means agree; "
      "the prompt decides under a quarter of the verifier reward's variance")

# %% [markdown]
# Two lessons in one table. First, the baselines are all unbiased (their mean gradients agree up
# to the noise of 32 batches); the argument between them is about variance only. A batch-wide
# baseline is not *wrong*, it is noisy when rewards carry something the prompt decides: a
# per-prompt baseline removes it exactly, the batch mean cannot. Second, on the plain 0/1
# verifier this model's rewards carry little that the prompt decides (the share printed last),
# and there the group baseline lowers the variance of the raw gradient no more than the batch
# one, or no baseline at all. (A baseline can even add variance: the variance-minimising
# constant is not the mean reward but a mean weighted by each sample's $\lVert\nabla\log\pi\rVert^2$;
# Greensmith et al. 2004.) So GRPO's group is not a free lunch for variance.
# What it gives is a critic's job without a critic: a per-prompt value estimate from $G$
# samples, an advantage that no prompt-level offset can disturb, and exact zeros for groups that
# carry no comparison. How much each part matters is measured in "Use it".

# %% [markdown]
# ## The idea
#
# For each prompt $q$, sample a **group** of $G$ answers $o_1,\dots,o_G$ from the current policy
# $\pi_\text{old}$ and score them with the verifier, $r_1,\dots,r_G$. Every token of answer $i$
# gets the same advantage, its reward against its group's:
# $$\hat A_i = \frac{r_i - \operatorname{mean}(r_{1..G})}{\operatorname{std}(r_{1..G}) + \epsilon}.$$
# Here, as in TRL, std is the sample standard deviation (ddof = 1) and $\epsilon = 10^{-4}$. A
# group whose answers all got the same reward, all right or all wrong, has advantage 0: it says
# nothing about *which* answer is better. The mean includes $r_i$ itself, so
# $r_i - \operatorname{mean}$ is a constant multiple of $r_i - \operatorname{mean}_{j\ne i} r_j$,
# the advantage with the unbiased leave-one-out baseline (exercise 1b asks for the multiple).
#
# The loss is PPO's clipped surrogate on tokens, with
# $\rho_{i,t} = \pi(o_{i,t}\mid q, o_{i,<t})/\pi_\text{old}(o_{i,t}\mid q, o_{i,<t})$, plus a
# KL term to the frozen reference $\pi_\text{ref}$ (the SFT model) added *to the loss*:
# $$\ell_{i,t} = -\min\big(\rho_{i,t}\hat A_i,\ \operatorname{clip}(\rho_{i,t},1-\varepsilon,1+\varepsilon)\hat A_i\big) + \beta\, k3_{i,t},\qquad k3 = e^{d} - d - 1,\quad d = \log\pi_\text{ref}(o_{i,t}) - \log\pi(o_{i,t}).$$
#
# **The variants, as TRL names them.** TRL's `GRPOTrainer` has one switch for the advantage
# (`scale_rewards`) and one for how the token losses $\ell_{i,t}$ become one number
# (`loss_type`, in `trl/trainer/grpo_trainer.py`); RLOO has its own trainer. With $|o_i|$ the
# length of answer $i$, $B$ the number of answers in the batch and $L$ the sampling limit
# (`max_completion_length`):
#
# | method | advantage | `loss_type`: the loss is |
# |---|---|---|
# | GRPO (DeepSeekMath) | $(r_i - \text{mean})/(\text{std}+\epsilon)$, `scale_rewards="group"` | `"grpo"`: $\frac1B\sum_i \frac{1}{\lvert o_i\rvert}\sum_t \ell_{i,t}$, the **sequence mean** |
# | DAPO's loss aggregation | the same | `"dapo"`: $\sum_{i,t}\ell_{i,t} \big/ \sum_i \lvert o_i\rvert$, the **token mean** (TRL's default) |
# | Dr. GRPO | $r_i - \text{mean}$, no std: `scale_rewards="none"` | `"dr_grpo"`: $\sum_{i,t}\ell_{i,t} \big/ (B\,L)$, a **constant** normaliser |
# | RLOO | $r_i - \frac{1}{G-1}\sum_{j\ne i} r_j$, leave-one-out | `RLOOTrainer`: the whole answer as one action, the KL in the reward |
#
# DAPO the *method* (Yu et al. 2025) is more than its `loss_type`: it also drops the KL term,
# clips asymmetrically ("clip-higher", $\varepsilon_\text{low} = 0.2$, $\varepsilon_\text{high} = 0.28$),
# refills each batch with groups that are not all right or all wrong ("dynamic sampling"; "Use
# it" counts how many groups carried no signal here) and shapes the reward of over-long answers.
# TRL also has `loss_type="bnpo"`, the token mean over the local batch of one device; on one
# process it is `"dapo"` (`rc.grpo_loss` accepts it as that).
#
# Dr. GRPO (Liu et al. 2025) removes two biases: the sequence mean's *length* bias (a long wrong
# answer is pushed down less per token) and the std's *difficulty* bias (groups that are almost
# all right or all wrong have a small std and get their advantages blown up). Dividing by the
# batch's own token count (DAPO) fixes the first only partly: the normaliser still changes with
# the lengths the batch happens to contain; Dr. GRPO's $B\,L$ does not. In `rlcourse`,
# `rc.grpo_advantages(rewards, G, scale=...)` and `rc.rloo_advantages` give the advantages and
# `rc.grpo_loss(..., aggregate=loss_type)` the loss.
#
# The smallest example: two prompts, groups of four.

# %%
example = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
print("rewards:             ", example)
print("GRPO (std):          ", np.round(rc.grpo_advantages(example, 4), 3))
print("Dr. GRPO (no std):   ", np.round(rc.grpo_advantages(example, 4, scale=False), 3))
print("RLOO (leave one out):", np.round(rc.rloo_advantages(example, 4), 3))

# %% [markdown]
# Both groups have one odd answer out: without the std, the hard prompt's one right answer and
# the easy prompt's one wrong answer get advantages of the same size and opposite signs. With
# the std both are divided by their group's std, here the same, so the symmetry stays; the
# difference appears between groups with *different* stds, which "Use it" measures. RLOO's
# advantages are Dr. GRPO's times a constant (exercise 1b asks which, for $G = 8$).
#
# **The aggregations**, on one group of two answers: a short right one (2 tokens) and a long
# wrong one (6 tokens). How hard is each token pushed, the gradient of the loss with respect to
# its log-probability (at the first step, where every ratio is 1)?

# %%
mask_demo = np.array([[True, True, False, False, False, False], [True] * 6])
logp_demo = np.full((2, 6), -1.0)
adv_demo = rc.grpo_advantages(np.array([1.0, 0.0]), group_size=2, scale=False)
print(f"{'loss_type':9} {'push per token, right':>22} {'push per token, wrong':>22} {'total push wrong / right':>25}")
push = {}
for loss_type in ("grpo", "dapo", "dr_grpo"):
    g = rc.grad(lambda lp, lt=loss_type: rc.grpo_loss(lp, logp_demo, logp_demo, adv_demo, mask_demo, kl_coef=0.0,
                                                      aggregate=lt, max_completion_length=8).loss)(logp_demo)
    push[loss_type] = -g
    print(f"{loss_type:9} {-g[0, 0]:22.4f} {-g[1, 0]:22.4f} {g[1].sum() / g[0].sum():25.2f}")
assert np.isclose(push["grpo"][1, 0] / push["grpo"][0, 0], -2 / 6)
assert np.isclose(push["dapo"][1, 0] / push["dapo"][0, 0], -1.0)
assert np.isclose(push["dr_grpo"][0, 0], 0.5 / (2 * 8))

# %% [markdown]
# With the **sequence mean** every *answer* weighs the same, so each token of the long wrong
# answer is pushed down less than a token of the short right one is pushed up, by the ratio of
# their lengths (asserted): wrong answers lose less per token by being long. With the **token
# mean** every token weighs the same, and the long wrong answer takes the larger total push, in
# proportion to its length. **Dr. GRPO** weighs tokens
# the same too, but its per-token push, $\hat A/(BL)$, does not depend on how many tokens this
# batch happened to hold.
#
# **What the KL term's gradient does.** The tokens were sampled from $\pi$; in the loss they are
# data, and only $\log\pi$ carries the gradient. Three estimators of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$
# per sampled token, with $d = \log\pi_\text{ref} - \log\pi$ (Schulman 2020):
# $k1 = -d$ (unbiased, can be negative), $k2 = d^2/2$ (biased, $\ge 0$), $k3 = e^d - d - 1$
# (unbiased, $\ge 0$). Their *values* estimate the KL; their *gradients*, as loss terms, are
# another matter. Since $\nabla d = -\nabla\log\pi$:
#
# - $\mathbb{E}_\pi[\nabla k1] = \mathbb{E}_\pi[\nabla\log\pi] = 0$: k1 in the loss does nothing but add noise;
# - $\mathbb{E}_\pi[\nabla k2] = \mathbb{E}_\pi[(\log\pi - \log\pi_\text{ref})\nabla\log\pi] = \nabla\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$;
# - $\mathbb{E}_\pi[\nabla k3] = \mathbb{E}_\pi[(1 - \pi_\text{ref}/\pi)\nabla\log\pi] = -\sum_x \pi_\text{ref}(x)\nabla\log\pi(x) = \nabla\mathrm{KL}(\pi_\text{ref}\,\|\,\pi)$:
#   GRPO's k3 term pulls towards the reference, but along the gradient of the *other*
#   divergence, the forward KL;
# - multiplying k3 by the ratio $\rho = \pi/\pi_\text{old}$ (with its gradient) restores
#   $\nabla\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$: $\nabla(\rho\,k3) = k3\,\nabla\log\pi + \nabla k3$ at $\rho = 1$, and
#   $\mathbb{E}_\pi[k3\,\nabla\log\pi + \nabla k3] = \nabla\mathbb{E}_\pi[k3] = \nabla\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$.
#   DeepSeek-V3.2 does this; TRL added it as `use_bias_correction_kl` (PR #4638, December 2025)
#   and made it the default (PR #6503, July 2026). Here it is `rc.grpo_loss(kl_correction=True)`.
#
# The KL can also go *into the reward*, as in lesson 12 and TRL's `RLOOTrainer`: $r \leftarrow r
# - \beta k$, a number with no gradient of its own, reaching the policy through $\nabla\log\pi$.
# Then k1 gives $\mathbb{E}[k1\,\nabla\log\pi] = \nabla\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ exactly, and k3 does
# not. "Check it" verifies all of this against exact gradients.

# %% [markdown]
# ## Build it
#
# Four steps, each graded by the cell after it.
#
# **Step 1: group advantages.** `my_group_advantages(rewards, group_size, scale=True)`: the
# rewards `[B]` come in groups of `group_size` consecutive rows (one prompt each); subtract each
# group's mean and, if `scale`, divide by the group's sample std plus $10^{-4}$. With
# `scale=False` it is Dr. GRPO's advantage.

# %% tags=["solution"]
def my_group_advantages(rewards, group_size, scale=True):
    groups = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    centred = groups - groups.mean(axis=1, keepdims=True)
    if scale:
        centred = centred / (groups.std(axis=1, ddof=1, keepdims=True) + 1e-4)
    return centred.reshape(-1)


# %%
assert rc.exercises.check("group_advantages", my_group_advantages)

# %% [markdown]
# **Step 2: the three KL estimators.** `my_kl_estimators(logp, ref_logp)` returns
# `(k1, k2, k3)`, each shaped like `logp`, from the per-token log-probs of the sampled tokens
# under the policy and under the reference.

# %% tags=["solution"]
def my_kl_estimators(logp, ref_logp):
    d = np.asarray(ref_logp) - np.asarray(logp)
    return -d, 0.5 * d * d, np.exp(d) - d - 1


# %%
assert rc.exercises.check("kl_estimators", my_kl_estimators)

# %% [markdown]
# **Step 3: TRL's aggregations.** `my_aggregate(per_token, mask, loss_type, max_completion_length=None)`
# turns a per-token loss `[B, T]` into one number, counting only entries where `mask` is True
# (padding may hold anything, even `-inf`): `"grpo"`, `"dapo"` or `"dr_grpo"` as in the table.

# %% tags=["solution"]
def my_aggregate(per_token, mask, loss_type, max_completion_length=None):
    x = np.where(mask, per_token, 0.0)
    if loss_type == "grpo":
        return float(np.mean(x.sum(axis=1) / mask.sum(axis=1)))
    if loss_type == "dapo":
        return float(x.sum() / mask.sum())
    return float(x.sum() / (len(mask) * max_completion_length))


# %%
assert rc.exercises.check("token_aggregation", my_aggregate)

# %% [markdown]
# **Step 4: GRPO's loss.** `my_grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip=0.2,
# beta=0.04, loss_type="dapo", max_completion_length=None, kl_correction=False)`: per action
# token the clipped surrogate plus `beta` times k3 (times the ratio with `kl_correction`), both
# aggregated with `loss_type`. `advantages` is `[B]`, one per answer; `ref_logp` holds `-inf` on
# padding.

# %% tags=["solution"]
def my_grpo_loss(logp, old_logp, ref_logp, advantages, mask, clip=0.2, beta=0.04, loss_type="dapo",
                 max_completion_length=None, kl_correction=False):
    ratio = np.exp(np.where(mask, logp - old_logp, 0.0))
    adv = np.asarray(advantages)[:, None]
    surrogate = -np.minimum(ratio * adv, np.clip(ratio, 1 - clip, 1 + clip) * adv)
    k3 = my_kl_estimators(np.where(mask, logp, 0.0), np.where(mask, ref_logp, 0.0))[2]
    if kl_correction:
        k3 = ratio * k3
    return (my_aggregate(surrogate, mask, loss_type, max_completion_length)
            + beta * my_aggregate(k3, mask, loss_type, max_completion_length))


# %%
assert rc.exercises.check("grpo_loss_value", my_grpo_loss)

# %% [markdown]
# `rlcourse` runs one GRPO iteration like this (`rc.grpo_train` repeats it, each time on
# `prompts_per_step` prompts drawn from the RL prompts); the loss is `rc.grpo_loss`, your step 4
# written with traced operations so that it can be differentiated. Its first line
# (`_check_grpo(...)`) only checks the arguments; the algorithm starts at
# `group = np.repeat(...)`, and `check_scores` checks that `reward_fn` gave one finite score per
# completion:

# %%
print(inspect.getsource(rc.grpo_step))

# %% [markdown]
# ## Check it
#
# 1. Advantages sum to zero in every group; an all-equal group gives exact zeros, not NaN; the
#    unscaled GRPO advantage is one constant multiple of RLOO's (the same constant for every
#    answer of every group).
# 2. At the first step of an update the policy *is* the sampling policy: every ratio is 1,
#    nothing is clipped, and the gradient with respect to each answer token's log-prob is
#    $-\hat A_i$ times the aggregation's weight: $1/\sum_j|o_j|$ (`"dapo"`),
#    $1/(B\,|o_i|)$ (`"grpo"`), $1/(B\,L)$ (`"dr_grpo"`).
# 3. k2 and k3 are never negative, k1 can be; all three are 0 where the policy equals the reference.
#    (`rc.kl_estimate` lifts a k3 that rounding leaves about 1e-16 below 0 up to 0, so the check
#    computes $e^d - d - 1$ itself, in float64: it must be >= -1e-12.)
# 4. Prompt and padding positions get exactly zero gradient.
# 5. With a positive advantage, a token whose ratio is already above $1+\varepsilon$ gets no
#    gradient from the surrogate.

# %%
rewards_check = rng.integers(0, 2, size=32).astype(float)
adv = rc.grpo_advantages(np.concatenate([rewards_check, np.ones(8)]), 8)
np.testing.assert_allclose(adv.reshape(-1, 8).sum(axis=1), 0.0, atol=1e-12)
assert (adv[-8:] == 0).all() and np.isfinite(adv).all()
nonzero = rc.rloo_advantages(rewards_check, 8) != 0
ratio_check = rc.grpo_advantages(rewards_check, 8, scale=False)[nonzero] / rc.rloo_advantages(rewards_check, 8)[nonzero]
assert nonzero.sum() > 8 and np.ptp(ratio_check) < 1e-12 and 0 < ratio_check[0] < 1

rollout, rollout_mask = rc.generate(weak[0], np.repeat(rl_prompts[:4], 8, axis=0), MAX_NEW, rng)
action = rollout_mask[:, 1:]
old_logp = rc.token_log_probs(rc.lm_logits(weak[0], rollout)[:, :-1], rollout)
ref_logp = rc.token_log_probs(rc.lm_logits(weak[1], rollout)[:, :-1], rollout)  # another model as reference
advantages = rc.grpo_advantages(task.reward_fn(rollout, rollout_mask) + rng.normal(0, 0.1, 32), 8)
lengths = action.sum(axis=1)
weights = {"dapo": np.full(32, 1 / lengths.sum()), "grpo": 1 / (32 * lengths), "dr_grpo": np.full(32, 1 / (32 * MAX_NEW))}
for loss_type, weight in weights.items():
    out = rc.grpo_loss(old_logp, old_logp, ref_logp, advantages, action, kl_coef=0.0, aggregate=loss_type,
                       max_completion_length=MAX_NEW)
    assert out.clip_fraction == 0.0
    g = rc.grad(lambda lp, lt=loss_type: rc.grpo_loss(lp, old_logp, ref_logp, advantages, action, kl_coef=0.0,
                                                      aggregate=lt, max_completion_length=MAX_NEW).loss)(old_logp)
    np.testing.assert_allclose(g, np.where(action, -(advantages * weight)[:, None], 0.0), atol=1e-7)

k1, k2, k3 = (rc.kl_estimate(np.where(action, old_logp, 0), np.where(action, ref_logp, 0), kind)[action]
              for kind in ("k1", "k2", "k3"))
d_check = (np.where(action, ref_logp, 0) - np.where(action, old_logp, 0)).astype(np.float64)[action]
k3_unlifted = np.exp(d_check) - d_check - 1  # k3 before kl_estimate's lift, in float64
assert (k2 >= 0).all() and (k3_unlifted >= -1e-12).all() and (k1 < 0).any()
assert np.allclose(k3, k3_unlifted, rtol=1e-4, atol=1e-6)  # the same quantity as rc's k3
assert all(not np.any(rc.kl_estimate(old_logp, old_logp, kind)) for kind in ("k1", "k2", "k3"))

g_full = rc.grad(lambda lp: rc.grpo_loss(lp, old_logp, ref_logp, advantages, action, kl_coef=0.5).loss)(old_logp)
assert (g_full[~action] == 0).all()

pushed = old_logp + np.where(action, 0.5, 0.0)  # every ratio e^0.5 > 1.2
g_pushed = rc.grad(lambda lp: rc.grpo_loss(lp, old_logp, ref_logp, np.abs(advantages) + 1, action,
                                           kl_coef=0.0).loss)(pushed)
assert (g_pushed == 0).all()
print("invariants 1-5 hold")

# %% [markdown]
# **6. What each KL term's gradient follows**, checked exactly on a small softmax policy
# $\pi = \operatorname{softmax}(\theta)$ over 6 tokens and a fixed reference. "In the loss": the
# expected gradient of the term over tokens drawn from $\pi$, $\sum_x \pi(x)\nabla_\theta k(x)$,
# with the sampling weights held fixed (that is what a loss on sampled tokens differentiates).
# "In the reward": $\sum_x \pi(x)\,k(x)\nabla_\theta\log\pi(x)$. Each is compared with the exact
# gradients of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ and $\mathrm{KL}(\pi_\text{ref}\,\|\,\pi)$, on
# five random $(\theta, \pi_\text{ref})$ pairs.

# %%
def kl_term_gradient(theta, ref_logp, kind, placement):
    """The exact expected gradient of a KL estimator used as a loss term or as a reward."""
    def expected(th):
        logp = rc.log_softmax(th)
        weight = rc.stop_gradient(rc.exp(logp))  # the sampling distribution: data, not a parameter
        d = ref_logp - logp
        k = {"k1": -d, "k2": 0.5 * d * d, "k3": rc.exp(d) - d - 1.0,
             "k3 x ratio": rc.exp(logp - rc.stop_gradient(logp)) * (rc.exp(d) - d - 1.0)}[kind]
        if placement == "reward":
            return rc.sum(weight * rc.stop_gradient(k) * logp)
        return rc.sum(weight * k)
    return rc.grad(expected)(theta)


def exact_kl_gradients(theta, ref_logp):
    forward = rc.grad(lambda th: rc.sum(rc.exp(ref_logp) * (ref_logp - rc.log_softmax(th))))(theta)
    reverse = rc.grad(lambda th: rc.sum(rc.softmax(th) * (rc.log_softmax(th) - ref_logp)))(theta)
    return reverse, forward


rows = [("k1", "loss"), ("k2", "loss"), ("k3", "loss"), ("k3 x ratio", "loss"), ("k1", "reward"), ("k3", "reward")]
follows = {row: set() for row in rows}
for _ in range(5):
    theta = rng.normal(0, 1.5, size=6)
    ref_lp = theta + rng.normal(0, 1.0, size=6)
    ref_lp = ref_lp - np.log(np.exp(ref_lp).sum())
    reverse, forward = exact_kl_gradients(theta, ref_lp)
    for kind, placement in rows:
        g = kl_term_gradient(theta, ref_lp, kind, placement)
        follows[(kind, placement)].add("KL(pi||ref)" if np.allclose(g, reverse, atol=1e-10) else
                                       "KL(ref||pi)" if np.allclose(g, forward, atol=1e-10) else
                                       "zero" if np.allclose(g, 0, atol=1e-12) else "neither")
for (kind, placement), found in follows.items():
    print(f"{kind:11} in the {placement:6}: expected gradient = gradient of {' / '.join(sorted(found))}")
assert follows == {("k1", "loss"): {"zero"}, ("k2", "loss"): {"KL(pi||ref)"}, ("k3", "loss"): {"KL(ref||pi)"},
                   ("k3 x ratio", "loss"): {"KL(pi||ref)"}, ("k1", "reward"): {"KL(pi||ref)"},
                   ("k3", "reward"): {"neither"}}

# %% [markdown]
# GRPO's objective is reward minus $\beta\,\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$; the plain k3
# loss term optimises $\mathrm{KL}(\pi_\text{ref}\,\|\,\pi)$ instead. Both are zero only at
# $\pi = \pi_\text{ref}$, so both pull towards the reference, but they disagree about where: the
# forward KL penalises $\pi$ for *missing* tokens the reference likes, the reverse KL for putting
# mass where the reference has little. The ratio correction, k2 in the loss, and k1 in the reward
# follow the objective's gradient.

# %% [markdown]
# ## Use it
#
# ### GRPO against two baselines and a control, on held-out words, over three seeds
#
# From each seed's weak SFT model, ways to spend the same budget of 100 gradient steps:
#
# - **GRPO**: 100 iterations, each on 8 RL prompts with a group of 8 samples (64 samples, one
#   Adam step), `scale="group"` and the token mean `"dapo"` (TRL's defaults), the k3 term with
#   DeepSeekMath's $\beta = 0.04$ (TRL's default is $\beta = 0$, not run here).
# - **RFT** (rejection-sampling fine-tuning): the same sampling procedure (64 samples per
#   iteration from the same RL prompts), the same verifier; one SFT step on the verified samples
#   (none if none passed). The same kind of information as GRPO, used without a baseline: wrong
#   answers are dropped rather than pushed down.
# - **more SFT**: 100 more SFT steps on the 32 labelled pairs, at the SFT rate. It needs
#   demonstrations; GRPO and RFT need only the verifier.
# - **random reward** (a negative control, 50 steps to save time): GRPO exactly as above, but
#   the verifier replaced by a coin that pays 1 with probability 0.15, whatever the answer. If
#   GRPO's gain came from "any RL updates" rather than from the verifier, this would gain too.
#
# **Each method at its own learning rate.** A comparison at one shared rate favours whichever
# method that rate suits. Both GRPO and RFT were run once, outside this notebook, with exactly
# the settings of this section at five rates and on seeds 0-5 (seeds 0-2 are this notebook's);
# the per-seed held-out pass@1 after 100 steps is recorded below. Each method gets the rate with
# the best *mean* over the six seeds (a collapsed seed counts against a rate, as it would in
# practice). The runs below reproduce the recorded numbers for seeds 0-2 (asserted). The grid
# was this loop, about a minute of CPU, with `GRPO` and `RFT` the settings defined below:
#
# ```python
# for lr in (1.5e-3, 2e-3, 3e-3, 4e-3, 6e-3):
#     for seed in range(6):
#         grpo = rc.grpo_train(sft_model(seed), sft_model(seed), task.reward_fn, rl_prompts, seed=seed, **{**GRPO, "lr": lr})
#         rft = rc.rft_train(sft_model(seed), task.reward_fn, rl_prompts, seed=seed, **{**RFT, "lr": lr})
#         record(lr, seed, pass_prob(grpo.params).mean(), pass_prob(rft.params).mean())
# ```
#
# Held-out pass@1 is recorded every 10 steps; so is the pass rate on the RL prompts (their
# answers are used only to measure).

# %%
LR_GRID = {  # held-out pass@1 after 100 steps, seeds 0-5, recorded with this section's settings
    "GRPO": {1.5e-3: [0.836, 0.653, 0.732, 0.804, 0.817, 0.870], 2e-3: [0.910, 0.740, 0.868, 0.885, 0.891, 0.923],
             3e-3: [0.944, 0.861, 0.844, 0.933, 0.938, 0.955], 4e-3: [0.954, 0.712, 0.942, 0.851, 0.952, 0.947],
             6e-3: [0.966, 0.123, 0.384, 0.950, 0.972, 0.971]},
    "RFT": {1.5e-3: [0.737, 0.577, 0.610, 0.685, 0.731, 0.788], 2e-3: [0.802, 0.602, 0.665, 0.774, 0.823, 0.841],
            3e-3: [0.852, 0.637, 0.803, 0.832, 0.803, 0.856], 4e-3: [0.729, 0.529, 0.614, 0.752, 0.910, 0.871],
            6e-3: [0.267, 0.004, 0.002, 0.007, 0.528, 0.008]},
}
LR = {m: max(grid, key=lambda lr, g=grid: np.mean(g[lr])) for m, grid in LR_GRID.items()}
print(f"{'lr':>7} " + " ".join(f"{m + ': mean, min over 6 seeds':>30}" for m in LR_GRID))
for lr in LR_GRID["GRPO"]:
    print(f"{lr:7.1e} " + " ".join(f"{np.mean(g[lr]):>20.3f}, {np.min(g[lr]):.3f}" + ("  <-" if LR[m] == lr else "    ")
                                   for m, g in LR_GRID.items()))
print(f"chosen: GRPO lr {LR['GRPO']:.1e}, RFT lr {LR['RFT']:.1e}")
for m, grid in LR_GRID.items():
    print(f"{m}: seeds that collapsed (held-out < 0.5) at each rate:",
          ", ".join(f"{lr:.1e}: {sum(x < 0.5 for x in v)}" for lr, v in grid.items()))

# %%
GRPO = dict(iterations=100, group_size=8, prompts_per_step=8, lr=LR["GRPO"], max_new=MAX_NEW, kl_coef=0.04)
RFT = {**{k: v for k, v in GRPO.items() if k != "kl_coef"}, "lr": LR["RFT"]}
EVERY = 10


def coin_reward(seed, p=0.15):
    """The negative control: 1 with probability p, whatever the completion."""
    coin = np.random.default_rng(1000 + seed)
    return lambda tokens, mask=None: (coin.random(len(tokens)) < p).astype(float)


def recorder(curve, snapshots=None, keep=()):
    """A callback that records held-out pass@1 every EVERY steps (and keeps some policies)."""
    def callback(info):
        step = info["iteration"] + 1
        if step % EVERY == 0:
            curve.append(pass_prob(info["params"]).mean())
        if snapshots is not None and step in keep:
            snapshots[step] = info["params"]
    return callback


curves = {m: {} for m in ("GRPO", "RFT", "more SFT", "random, 50 steps")}
final, early, groups_seen = {m: {} for m in curves}, {}, {}
for seed in SEEDS:
    early[seed], groups_seen[seed] = {}, []
    curves["GRPO"][seed] = [start[seed]]

    record = recorder(curves["GRPO"][seed], early[seed], keep=(20,))

    def grpo_callback(info, seed=seed, record=record):
        groups_seen[seed].append(info["rewards"].reshape(-1, 8).sum(axis=1))
        record(info)

    final["GRPO"][seed] = rc.grpo_train(weak[seed], weak[seed], task.reward_fn, rl_prompts, seed=seed,
                                        callback=grpo_callback, **GRPO)
    curves["RFT"][seed] = [start[seed]]
    final["RFT"][seed] = rc.rft_train(weak[seed], task.reward_fn, rl_prompts, seed=seed,
                                      callback=recorder(curves["RFT"][seed]), **RFT)
    curves["random, 50 steps"][seed] = [start[seed]]
    final["random, 50 steps"][seed] = rc.grpo_train(weak[seed], weak[seed], coin_reward(seed), rl_prompts,
                                                    seed=seed, callback=recorder(curves["random, 50 steps"][seed]),
                                                    **{**GRPO, "iterations": 50})
    more = weak[seed]
    curves["more SFT"][seed] = [start[seed]]
    for _ in range(GRPO["iterations"] // EVERY):
        more = rc.sft(more, sft_tokens, sft_mask, steps=EVERY, lr=3e-3, seed=seed + 100 * len(curves["more SFT"][seed]),
                      batch=32)[0]
        curves["more SFT"][seed].append(pass_prob(more).mean())
    final["more SFT"][seed] = more
params_of = {m: {s: (r if m == "more SFT" else r.params) for s, r in final[m].items()} for m in final}
held_out = {m: np.array([pass_prob(params_of[m][s]).mean() for s in SEEDS]) for m in final}
on_rl = {m: np.array([pass_prob(params_of[m][s], rl_tokens, rl_mask).mean() for s in SEEDS]) for m in final}
starts = np.array([start[s] for s in SEEDS])

# %% [markdown]
# (The "more SFT" run restarts Adam every 10 steps, so that its curve can be recorded; its 100
# steps are the same number as the others'.)

# %% tags=["nbval-ignore-output"]
print(f"{'':10} {'held-out pass@1, seeds ' + str(SEEDS):>36}   {'median':>6}   {'RL prompts (median)':>19}")
print(f"{'SFT start':10} {'  '.join(f'{x:.3f}' for x in starts):>36}   {np.median(starts):6.3f}   "
      f"{np.median([pass_prob(weak[s], rl_tokens, rl_mask).mean() for s in SEEDS]):19.3f}")
for m in final:
    print(f"{m:10} {'  '.join(f'{x:.3f}' for x in held_out[m]):>36}   {np.median(held_out[m]):6.3f}   "
          f"{np.median(on_rl[m]):19.3f}")
rft_steps = [int(final["RFT"][s].stepped.sum()) for s in SEEDS]
print(f"RFT took {rft_steps} gradient steps (an iteration where no sample passed takes none)")

# %%
gain = held_out["GRPO"] - starts
for m in ("GRPO", "RFT"):
    np.testing.assert_allclose(held_out[m], LR_GRID[m][LR[m]][:len(SEEDS)], atol=6e-4)
assert (gain > 0.5).all(), gain
assert (held_out["GRPO"] > held_out["RFT"]).all()
assert (np.array(LR_GRID["GRPO"][LR["GRPO"]]) > np.array(LR_GRID["RFT"][LR["RFT"]])).all()
assert (held_out["random, 50 steps"] < starts).all()
assert (held_out["more SFT"] > held_out["GRPO"]).all()
assert (np.abs(held_out["GRPO"] - on_rl["GRPO"]) < 0.05).all()
print("asserted: the runs reproduce the recorded grid; on every seed GRPO raised held-out pass@1 by "
      "more than 0.5 (from under 0.2); at each method's best rate GRPO ended above RFT on each of "
      "these 3 seeds and on each of the 6 grid seeds; the random reward ended below its start; "
      "GRPO's pass rate on the held-out words is within 0.05 of that on its own RL prompts; more SFT on "
      "the labelled words ended higher than GRPO")

# %%
steps = np.arange(0, GRPO["iterations"] + 1, EVERY)
fig, ax = plt.subplots(figsize=(9, 3.8), dpi=100)
styles = {seed: style for seed, style in zip(SEEDS, ("-", "--", ":"))}
for m, colour in (("GRPO", "C0"), ("RFT", "C1"), ("more SFT", "C2"), ("random, 50 steps", "C7")):
    for seed in SEEDS:
        ax.plot(steps[:len(curves[m][seed])], curves[m][seed], color=colour, ls=styles[seed], alpha=0.85, lw=1.6,
                label=(f"{m}, seed {seed}" if m == "GRPO" else m) if m == "GRPO" or seed == SEEDS[0] else None)
ax.set(xlabel="gradient steps after the SFT start", ylabel="held-out pass@1 (exact)",
       title=f"At each method's best lr (GRPO {LR['GRPO']:.0e}, RFT {LR['RFT']:.0e}), GRPO ends above RFT on each seed;\n"
             "a random reward unlearns (line style = seed)")
ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))
ax.grid(alpha=0.3)
plt.tight_layout()
plt.show()

# %% [markdown]
# What the lines say:
#
# - **A skill, not memorisation**: the words behind these curves were never trained on, and the
#   pass rate on them matches the pass rate on GRPO's own RL prompts. The model learned to
#   reverse, from a verifier's 0s and 1s: the same updates driven by a coin instead of the
#   verifier lost even the little the SFT model had (the grey lines).
# - **GRPO beat RFT**, each at its best learning rate from the grid, on every seed here and on
#   every one of the grid's six seeds, with the same number of samples from the same prompts and
#   at most the same number of steps (RFT skips an iteration where nothing passed). The samples
#   themselves differ after the first update, since each method samples from its own policy.
#   Both see verified answers; GRPO also pushes the wrong ones down, relative to their group,
#   and here that ended higher than imitating the right ones alone. It was not ahead all the
#   way (on one seed the RFT curve led for much of the run), and the final margin is of the same
#   size as RFT's own sensitivity to its rate (the grid): a result about tuned 100-step runs on
#   this task, not a large effect.
# - **Demonstrations are worth a lot**: 100 more SFT steps on the 32 labelled words ended higher
#   than GRPO on every seed (asserted), close to every word right. GRPO's case is not that it beats supervised learning,
#   but that it needs no labels: the RL prompts came without answers.
#
# ### pass@k: sharpening, or a new ability?
#
# pass@k is the chance that at least one of $k$ samples passes; with the exact per-prompt
# $p$, it is $1 - (1-p)^k$, averaged over the held-out words. If RL only *sharpens* what the
# model could already do, pass@k at large $k$ should not rise (Yue et al. 2025 found the base
# model's pass@k *overtaking* the RL model's at large $k$ on maths benchmarks).

# %%
KS = [1, 4, 16, 64, 256]


def pass_at(p, k):
    return float(np.mean(1 - (1 - p) ** k))


table = {"SFT start": [[pass_at(pass_prob(weak[s]), k) for k in KS] for s in SEEDS]}
table.update({m: [[pass_at(pass_prob(params_of[m][s]), k) for k in KS] for s in SEEDS] for m in final})
uniform = [1 - (1 - 1 / 5**task.length) ** k for k in KS]
rarely = {s: (1 - (1 - pass_prob(weak[s])) ** 16) < 0.25 for s in SEEDS}
learned = {s: int((pass_prob(params_of["GRPO"][s])[rarely[s]] > 0.5).sum()) for s in SEEDS}

# %% tags=["nbval-ignore-output"]
print(f"{'median over seeds':18} " + " ".join(f"{'pass@' + str(k):>9}" for k in KS))
for name, rows_ in table.items():
    print(f"{name:18} " + " ".join(f"{x:9.3f}" for x in np.median(rows_, axis=0)))
print(f"{'uniform guessing':18} " + " ".join(f"{x:9.3f}" for x in uniform))
for s in SEEDS:
    print(f"seed {s}: {int(rarely[s].sum())} held-out words had pass@16 < 0.25 at the start; "
          f"after GRPO {learned[s]} of them have pass@1 > 0.5")

# %%
med = {name: np.median(rows_, axis=0) for name, rows_ in table.items()}
assert med["SFT start"][KS.index(256)] > 0.9 and med["GRPO"][0] > 0.6
assert all(learned[s] >= 0.5 * rarely[s].sum() for s in SEEDS)
print("asserted: at k = 256 the SFT model already passes over 90% of the held-out words; GRPO's "
      "gain is at small k (median pass@1 above 0.6); on every seed, of the words the SFT model "
      "rarely solved, GRPO now solves at least half more often than not")

# %% [markdown]
# Read it honestly. At $k = 256$ the SFT model already reaches nearly every held-out word: this
# task's answer space is tiny (625 strings; even uniform guessing has the pass@256 printed
# above), so "could the model ever produce it" is almost always yes, and pass@k at large $k$
# cannot separate sharpening from new ability here. What GRPO changed is what the model does
# *first*: on most of the words it rarely solved at the start, pass@1 went above one half (the
# counts printed above). On this task RL turned a rule the SFT model followed now and then
# into the rule it mostly follows; whether RL can
# reach what sampling never finds needs a task with a large answer space, which is exactly
# where Yue et al.'s question is open.
#
# ### The KL to the reference, measured three ways
#
# Even with the KL term the policy drifted from its SFT reference. How well do k1, k2 and k3,
# computed on sampled tokens, estimate that drift? For each seed, 800 answers to
# the held-out prompts are sampled from the policy after 20 steps (close to the reference) and
# after 100 (far from it); each estimator's sum over an answer's tokens is compared with the
# exact KL over the whole vocabulary at the same positions (`rc.exact_kl`). The bias is the
# mean difference, with its standard error (the pairs are matched).

# %%
def kl_estimates(policy, ref, n_repeat=4):
    prompts = np.repeat(task.prompt_ids(task.test), n_repeat, axis=0)
    tokens, mask = rc.generate(policy, prompts, MAX_NEW, rng)
    pol_logits, ref_logits = rc.lm_logits(policy, tokens)[:, :-1], rc.lm_logits(ref, tokens)[:, :-1]
    exact = np.asarray(rc.exact_kl(pol_logits, ref_logits, mask), dtype=float)
    act = mask[:, 1:]
    lp = np.where(act, rc.token_log_probs(pol_logits, tokens), 0.0)
    rp = np.where(act, rc.token_log_probs(ref_logits, tokens), 0.0)
    out = {"exact": (exact.mean(), 0.0, exact.std())}
    for kind in ("k1", "k2", "k3"):
        est = np.where(act, rc.kl_estimate(lp, rp, kind), 0.0).sum(axis=1).astype(float)
        diff = est - exact
        out[kind] = (diff.mean(), diff.std(ddof=1) / np.sqrt(len(diff)), est.std())
    return out


kl_table = {(stage, s): kl_estimates(pol, weak[s]) for s in SEEDS
            for stage, pol in (("step 20", early[s][20]), ("step 100", params_of["GRPO"][s]))}

# %% tags=["nbval-ignore-output"]
print(f"{'':15} {'exact KL':>8}  " + "  ".join(f"{k + ': bias +- se, sd':>24}" for k in ("k1", "k2", "k3")))
for (stage, s), row in kl_table.items():
    print(f"{stage:8} seed {s} {row['exact'][0]:8.3f}  "
          + "  ".join(f"{row[k][0]:+8.3f} +- {row[k][1]:5.3f}, {row[k][2]:6.2f}" for k in ("k1", "k2", "k3")))

# %%
for (stage, s), row in kl_table.items():
    for kind in ("k1", "k3"):
        assert abs(row[kind][0]) < 4 * row[kind][1] + 1e-3, (stage, s, kind)
    if stage == "step 100":
        assert row["k2"][0] < -4 * row["k2"][1] and row["k3"][2] > 2 * row["k1"][2]
    else:
        assert row["k3"][2] < row["k1"][2]
print("asserted on every seed: k1 and k3 are unbiased (bias within 4 standard errors); at step 100 "
      "k2 underestimates by more than 4 standard errors and k3's spread is over twice k1's; at "
      "step 20 k3's spread is below k1's")

# %% [markdown]
# Near the reference (step 20), k3 does what Schulman (2020) found: unbiased, never negative,
# and with a smaller spread than k1. Far from it (step 100; see the exact KL column), the
# picture turns: $e^d$ explodes on the rare sampled token that the reference finds far likelier
# than the policy, and k3's spread grows to over twice k1's while its mean stays right; k2, a
# second-order approximation, is biased low. None of this is about gradients:
# "Check it" showed which *gradient* each gives as a loss term.

# %% [markdown]
# ### The std's difficulty bias, and Dr. GRPO
#
# With the std, a group's total push $\sum_i |\hat A_i|$ depends on how many of its $G = 8$
# answers were right, $k$. Without it (Dr. GRPO) the push is $2k(G-k)/G$; with it, the same
# divided by the group's std, which is smallest for $k$ near 0 or $G$:

# %%
k_right = np.arange(1, 8)
group_push = {name: np.array([np.abs(rc.grpo_advantages(np.r_[np.ones(k), np.zeros(8 - k)], 8, scale=scale)).sum()
                              for k in k_right]) for name, scale in (("std", True), ("no std", False))}
print("k right of 8:               ", k_right)
for name, w in group_push.items():
    print(f"total push, {name:6} (vs k=4): ", np.round(w / w[3], 2))
seen = np.concatenate([np.concatenate(groups_seen[s]) for s in SEEDS]).astype(int)
informative = seen[(seen > 0) & (seen < 8)]
hard_share = {name: w[informative - 1][informative <= 2].sum() / w[informative - 1].sum()
              for name, w in group_push.items()}

# %% tags=["nbval-ignore-output"]
print(f"in the three GRPO runs, {np.mean((seen > 0) & (seen < 8)):.2f} of all groups were informative; "
      f"{np.mean(informative <= 2):.2f} of those had 1 or 2 right answers (hard for the model)")
print(f"share of the total push on those hard groups: with the std {hard_share['std']:.2f}, "
      f"without {hard_share['no std']:.2f}")

# %% [markdown]
# Relative to a group split 4-4, the std multiplies the push on a 1-7 or 7-1 group: hard and
# easy prompts get a larger share of each update. The shares printed above are arithmetic on
# the groups the runs saw, not a test (with any hard groups at all, the std's share is the
# larger); they say *how much* weight moved, here. Is that bad? Dr. GRPO argues it
# biases the objective towards extreme prompts. Here is the full Dr. GRPO recipe,
# `scale_rewards="none"` and `loss_type="dr_grpo"`, on the same seeds, budget and $\beta$. (One
# caveat: without the std the advantages are smaller, while the KL term is not, so at the same
# $\beta$ Dr. GRPO is also relatively more regularised. This compares recipes, not the std alone.)

# %%
dr = {seed: rc.grpo_train(weak[seed], weak[seed], task.reward_fn, rl_prompts, seed=seed, scale=False,
                          aggregate="dr_grpo", **GRPO) for seed in SEEDS}
dr_held_out = np.array([pass_prob(dr[s].params).mean() for s in SEEDS])
dr_minus_grpo = dr_held_out - held_out["GRPO"]
seed_spread = np.ptp(held_out["GRPO"])

# %% tags=["nbval-ignore-output"]
print("held-out pass@1   GRPO:", np.round(held_out["GRPO"], 3), "  Dr. GRPO:", np.round(dr_held_out, 3))
print(f"Dr. GRPO - GRPO, seed by seed: {np.round(dr_minus_grpo, 3)}; GRPO's spread between seeds: {seed_spread:.3f}")

# %%
assert (dr_held_out - starts > 0.5).all()
assert (dr_minus_grpo > 0).any() and (dr_minus_grpo < 0).any(), dr_minus_grpo
assert (np.abs(dr_minus_grpo) < 0.15).all(), dr_minus_grpo
print("asserted: Dr. GRPO raised held-out pass@1 by more than 0.5 on every seed; against GRPO it was "
      "ahead on some seeds and behind on others, by less than 0.15 on each")

# %% [markdown]
# On this task, at this budget and at GRPO's learning rate, three seeds show no consistent
# winner: Dr. GRPO was ahead on some seeds and behind on others (the differences printed above,
# next to GRPO's own spread between seeds). Three seeds cannot separate a difference of that
# size from noise; they do rule out one recipe being far better here. Two reasons the std
# need not matter much.
# First, Adam divides each parameter's step by a running root-mean-square of its gradients, so
# multiplying every advantage by one constant barely changes the update (only the KL term's
# relative weight moves); what the std changes is the weighting *between* groups, and the
# hard groups' share of the push moved only by the amount printed above. Second, Dr. GRPO's
# length argument is about long answers, and ours are at most five tokens. Its difficulty
# argument is about what the objective converges to, which a 100-step run on a task that every
# method learns does not test. A measurement, on one small task, not a verdict.
#
# ### Group size
#
# At a fixed 64 samples per step, a larger group means fewer prompts per step but a better
# chance that a group mixes right and wrong answers and so carries a signal (for a prompt
# solved with probability $p$ the chance is $1 - p^G - (1-p)^G$, which grows with $G$; the
# printout only illustrates it). The chance is measured at each weak SFT model (2048 samples per seed and size, no training), then each size
# trains for 50 steps on three seeds ($G = 8$ is read off the main runs at step 50).

# %%
SIZES = [2, 8, 16]
informative_at_start = {G: [] for G in SIZES}
held_at_50 = {G: [] for G in SIZES}
for seed in SEEDS:
    for G in SIZES:
        rows = rng.choice(len(task.rl), size=2048 // G, replace=True)
        draws, _ = rc.generate(weak[seed], np.repeat(rl_prompts[rows], G, axis=0), MAX_NEW, rng)
        right = task.reward_fn(draws).reshape(-1, G).sum(axis=1)
        informative_at_start[G].append(np.mean((right > 0) & (right < G)))
        if G == 8:
            held_at_50[G].append(curves["GRPO"][seed][50 // EVERY])
        else:
            run = rc.grpo_train(weak[seed], weak[seed], task.reward_fn, rl_prompts, seed=seed,
                                **{**GRPO, "iterations": 50, "group_size": G, "prompts_per_step": 64 // G})
            held_at_50[G].append(pass_prob(run.params).mean())

# %% tags=["nbval-ignore-output"]
for G in SIZES:
    print(f"G = {G:2} ({64 // G:2} prompts/step): informative groups at the start "
          f"{np.round(informative_at_start[G], 2)}, held-out pass@1 at step 50 {np.round(held_at_50[G], 3)}")

# %%
lowest_at_2 = sum(held_at_50[2][i] == min(held_at_50[G][i] for G in SIZES) for i in range(len(SEEDS)))
assert lowest_at_2 >= 2, held_at_50
print(f"asserted: G = 2 had the lowest held-out pass@1 at step 50 on {lowest_at_2} of {len(SEEDS)} seeds "
      "(at least 2)")

# %% [markdown]
# With $G = 2$ most groups are two wrong answers and teach nothing, and a one-sample baseline is
# crude: on most seeds it learned least (asserted). Between $G = 8$ and $G = 16$ the trade-off
# (more informative groups, fewer prompts per step) gave no consistent order at this budget;
# compare the spread between seeds in the table.
# Groups of 8 to 64 are common in practice, where the answers are long and most of the cost is
# sampling them.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | NaN loss on the first batch | a group with equal rewards divides 0 by a std of 0 | add $\epsilon$ to the std, as `rc.grpo_advantages` does ("Check it" 1) |
# | no learning, advantages all 0 | every group is all-wrong (or all-right): the model solves none of the prompts | start from an SFT model that solves some; larger groups ("Use it": $G = 2$ had the fewest informative groups) |
# | advantages computed over the whole batch | one baseline for easy and hard prompts | unbiased, but noisy whenever rewards carry a prompt-level part ("The problem"); group consecutive rows |
# | wrong answers grow longer | `loss_type="grpo"` pushes a long wrong answer less per token | `"dapo"` or `"dr_grpo"` ("The idea") |
# | prompt tokens change | the loss or KL averaged over every position | only action tokens, `mask[:, 1:]` ("Check it" 4) |
# | the "KL" term does not regularise the KL you report | k3 in the loss follows $\nabla\mathrm{KL}(\pi_\text{ref}\,\|\,\pi)$; k1 in the loss follows nothing | `kl_correction=True` (TRL's `use_bias_correction_kl`), k2 in the loss or k1 in the reward ("Check it" 6) |
# | a KL estimate jumps around far from the reference | k3's $e^d$ is heavy-tailed when the policy has moved | log `rc.exact_kl` when you can; compare k1 ("Use it") |
# | clip fraction always 0 | one gradient step per batch: the ratio is 1 when the loss is evaluated | expected with `epochs=1`; clipping matters once a batch is reused |

# %% [markdown]
# ## Exercises
#
# **1. Easy: RLOO's advantage.** RLOO (Ahmadian et al. 2024; TRL's `RLOOTrainer`) uses, for
# answer $i$, the mean reward of the *other* $G-1$ answers to its prompt as the baseline, so
# that the baseline never depends on the answer it judges. Write
# `leave_one_out_advantages(rewards, group_size)` (groups of consecutive rows, as before).

# %% tags=["solution"]
def leave_one_out_advantages(rewards, group_size):
    groups = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    others = (groups.sum(axis=1, keepdims=True) - groups) / (group_size - 1)
    return (groups - others).reshape(-1)


# %%
assert rc.exercises.check("rloo_advantages", leave_one_out_advantages)

# %% [markdown]
# **1b.** RLOO's advantage is a constant multiple of Dr. GRPO's $r_i - \operatorname{mean}$.
# For $G = 8$, what is the multiple? Set `rloo_multiple` to the number.

# %% tags=["solution"]
rloo_multiple = 8 / 7

# %%
assert rc.exercises.check("rloo_factor", rloo_multiple)

# %% [markdown]
# **2. Medium: pass@k from samples.** Without exact probabilities you estimate pass@k from
# $n \ge k$ samples per prompt, $c$ of which passed. The plug-in $1 - (1 - c/n)^k$ is biased;
# Chen et al. (2021) give the unbiased $1 - \binom{n-c}{k}/\binom{n}{k}$: the chance that $k$
# samples drawn from the $n$ *without replacement* include a pass. Write
# `unbiased_pass_at_k(n, c, k)` for integers; it must also work for $n = 5000$, $k = 1000$,
# where $\binom{n}{k}$ does not fit in a float.

# %% tags=["solution"]
def unbiased_pass_at_k(n, c, k):
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


# %%
assert rc.exercises.check("pass_at_k", unbiased_pass_at_k)

# %% [markdown]
# With the reference `rc.pass_at_k`, here is the estimator on 16 samples per held-out word from
# seed 0's SFT model, next to the exact value the lesson used:

# %%
n_samples = 16
draws, _ = rc.generate(weak[0], np.repeat(task.prompt_ids(task.test), n_samples, axis=0), MAX_NEW, rng)
passed = task.reward_fn(draws).reshape(-1, n_samples).sum(axis=1).astype(int)
for k in (1, 4, 16):
    print(f"pass@{k:<2}  from 16 samples {rc.pass_at_k(n_samples, passed, k).mean():.3f}   "
          f"exact {pass_at(pass_prob(weak[0]), k):.3f}   plug-in {np.mean(1 - (1 - passed / n_samples) ** k):.3f}")

# %% [markdown]
# **3. Hard: GSPO's sequence ratio.** GSPO (Zheng et al. 2025; TRL's
# `importance_sampling_level="sequence"`) replaces the per-token ratio by one ratio per answer,
# the geometric mean of its token ratios,
# $s_i = \exp\big(\frac{1}{|o_i|}\sum_t (\log\pi - \log\pi_\text{old})\big)$, and clips that:
# $\mathcal{L} = -\frac1B\sum_i \min(s_i\hat A_i,\ \operatorname{clip}(s_i, 1-\varepsilon, 1+\varepsilon)\hat A_i)$.
# (A caveat if you combine it with the KL correction in TRL: with
# `importance_sampling_level="sequence"` and `use_bias_correction_kl=True`, the sequence ratio
# is broadcast onto the per-token k3 terms, which is not the token ratio the correction's
# derivation above needs; huggingface/trl issue #6586, open at the time of writing.)
# Write `gspo_sequence_loss(logp, old_logp, advantages, mask, clip=0.2)` with `rc` operations
# (`rc.where`, `rc.sum`, `rc.exp`, `rc.minimum`, `rc.clip`, `rc.mean`): it is graded through
# `rc.value_and_grad`, value and gradient.

# %% tags=["solution"]
def gspo_sequence_loss(logp, old_logp, advantages, mask, clip=0.2):
    log_ratio = rc.where(mask, logp - old_logp, 0.0)
    s = rc.exp(rc.sum(log_ratio, axis=1) / mask.sum(axis=1))
    return -rc.mean(rc.minimum(s * advantages, rc.clip(s, 1 - clip, 1 + clip) * advantages))


# %%
assert rc.exercises.check("gspo_loss", gspo_sequence_loss)

# %% [markdown]
# **3b.** Why the *mean* of the token log-ratios? Suppose GSPO used
# $s_i = \exp\big(\sum_t (\log\pi - \log\pi_\text{old})\big)$ instead. Which is right? Set
# `gspo_sum_answer` to the letter.
#
# - (a) nothing changes: the clip keeps every ratio inside $[1-\varepsilon, 1+\varepsilon]$ anyway;
# - (b) a long answer's ratio becomes a product of many token ratios, so tiny per-token changes
#   throw it outside $[1-\varepsilon, 1+\varepsilon]$, where the clip cuts its gradient (on the side
#   the advantage pushes towards): how far
#   an answer may move would depend on its length;
# - (c) long answers would get smaller ratios, so they would be pushed harder;
# - (d) only the loss's value changes, not its gradient.

# %% tags=["solution"]
gspo_sum_answer = "b"

# %%
assert rc.exercises.check("gspo_sum_question", gspo_sum_answer)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | verifier | "the reward function" | a program that checks an answer (1 right, 0 wrong); it cannot be flattered the way a learned reward model can, but it can have loopholes |
# | group | "the G samples" | $G$ answers to one prompt from the current policy; consecutive rows of the batch |
# | group-relative advantage | "GRPO's baseline" | $(r_i - \text{mean})/(\text{std} + \epsilon)$ within the group: a per-prompt value estimate from samples, no critic |
# | baseline | "it reduces variance" | anything subtracted from the reward that does not depend on the sample: the gradient stays unbiased; whether the variance drops depends on the rewards ("The problem") |
# | RLOO | "leave-one-out" | the baseline of answer $i$ is the mean of the other $G-1$: exactly unbiased; a constant multiple of Dr. GRPO's advantage (exercise 1b) |
# | `loss_type` | "how the loss is averaged" | TRL's name for the aggregation: `"grpo"` sequence mean, `"dapo"` token mean, `"dr_grpo"` sum over $B\,L$ |
# | Dr. GRPO | "GRPO done right" | no std in the advantage (`scale_rewards="none"`) and a constant normaliser (`loss_type="dr_grpo"`), against the difficulty and length biases |
# | k1, k2, k3 | "the KL penalty" | per-token estimates of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ from sampled tokens; k1 and k3 unbiased as values, k2 not; as loss terms their gradients differ (k3: $\mathrm{KL}(\pi_\text{ref}\,\|\,\pi)$) |
# | KL correction | "the unbiased KL" | k3 times the ratio $\pi/\pi_\text{old}$ in the loss (TRL's `use_bias_correction_kl`): its gradient is that of $\mathrm{KL}(\pi\,\|\,\pi_\text{ref})$ |
# | pass@k | "accuracy with k tries" | the chance that one of $k$ samples passes; with samples, Chen et al.'s unbiased estimator |
# | RFT | "rejection sampling" | fine-tune on the sampled answers the verifier accepted; no negative signal |
# | RLVR | "RL with verifiable rewards" | RL on tasks whose answers a program can check: maths, code, puzzles |

# %% [markdown]
# ## Further reading
#
# - Shao et al. (2024), *DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open
#   Language Models*: introduces GRPO, the group baseline and the k3 KL term in the loss.
# - DeepSeek-AI (2025), *DeepSeek-R1*: GRPO with rule-based verifiers at scale; and
#   *DeepSeek-V3.2* (2025): the ratio-corrected k3 term.
# - Liu et al. (2025), *Understanding R1-Zero-Like Training: A Critical Perspective* ("Dr.
#   GRPO"): the length and difficulty biases, and the constant normaliser.
# - Yu et al. (2025), *DAPO: An Open-Source LLM Reinforcement Learning System at Scale*: the
#   token-level loss, and why groups with equal rewards waste compute.
# - Ahmadian et al. (2024), *Back to Basics: Revisiting REINFORCE-Style Optimization for Learning
#   from Human Feedback in LLMs*: RLOO; Kool et al. (2019), *Buy 4 REINFORCE Samples, Get a
#   Baseline for Free!*.
# - Zheng et al. (2025), *Group Sequence Policy Optimization*: the sequence-level ratio of
#   exercise 3.
# - Schulman (2020), *Approximating KL Divergence* (blog note): k1, k2, k3 and their variance;
#   and the gradient side: huggingface/trl issue #4967 and PRs #4638, #6503, and Tang & Munos
#   (2025), *On a few pitfalls in KL divergence gradient estimation for RL*.
# - Yue et al. (2025), *Does Reinforcement Learning Really Incentivize Reasoning Capacity in LLMs
#   Beyond the Base Model?*: pass@k at large k before and after RL.
# - Chen et al. (2021), *Evaluating Large Language Models Trained on Code*: the unbiased pass@k.
# - Yuan et al. (2023), *Scaling Relationship on Learning Mathematical Reasoning with Large
#   Language Models*: rejection-sampling fine-tuning (RFT).
# - Hugging Face TRL, `trl/trainer/grpo_config.py` and `grpo_trainer.py` (`loss_type`,
#   `scale_rewards`, `use_bias_correction_kl`) and `rloo_trainer.py`: the conventions followed here.
