# %% [markdown]
# # 08 · Policy gradients: REINFORCE
#
# *Prerequisites:* 00, 04, 07
# *Time:* 45 minutes
# *You will build:* the softmax score function, the reward-to-go, and REINFORCE with a baseline, with the gradient's variance measured, then train it on CartPole.

# %% [markdown]
# DQN learns values and acts greedily on them. Policy-gradient methods skip the detour: they
# adjust the policy $\pi_\theta(a|s)$ itself in the direction that raises the expected return.
# This lesson derives that direction, builds the estimator, and shows why the two standard
# tricks (reward-to-go and a baseline) matter.

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
# Sutton & Barto's *short corridor* (Example 13.1): three cells before a goal, reward $-1$ per
# step. In the middle cell the actions are reversed, but the agent cannot tell the cells apart:
# it sees the same observation everywhere, so any policy is "go right with probability $p$".
# A greedy policy from values is deterministic: $p = 0$ or $p = 1$. The value of the start for
# each $p$ solves a 3-by-3 linear system:

# %%
def corridor_value(p):
    """Expected return from the start of the short corridor for P(right) = p."""
    # V0 = -1 + p V1 + (1-p) V0;  V1 = -1 + p V0 + (1-p) V2;  V2 = -1 + p * 0 + (1-p) V1
    a = np.array([[p, -p, 0.0], [-p, 1.0, -(1 - p)], [0.0, -(1 - p), 1.0]])
    solution = np.linalg.lstsq(a, -np.ones(3), rcond=None)[0]
    return solution[0] if np.allclose(a @ solution, -np.ones(3)) else -np.inf


ps = np.linspace(0.01, 0.99, 99)
values = np.array([corridor_value(p) for p in ps])
print(f"p = 0: {corridor_value(0.0)}, p = 1: {corridor_value(1.0)}")
print(f"best p = {ps[values.argmax()]:.2f} with value {values.max():.2f}")

# %% [markdown]
# Both deterministic policies never reach the goal (value $-\infty$); the best policy is
# stochastic, going right with the probability printed above (Sutton & Barto report about 0.59). An epsilon-greedy policy from values can only
# reach $p = \epsilon/2$ or $1 - \epsilon/2$. To learn $p$ you want to optimise the policy's
# parameters directly, by gradient ascent on $J(\theta) = \mathbb{E}_{\tau\sim\pi_\theta}[R(\tau)]$.

# %% [markdown]
# ## The idea
#
# **The log-derivative trick.** $\nabla_\theta p_\theta(\tau) = p_\theta(\tau)\nabla_\theta\log p_\theta(\tau)$, so
#
# $$\nabla_\theta J = \nabla_\theta \sum_\tau p_\theta(\tau) R(\tau) = \mathbb{E}_\tau\big[R(\tau)\,\nabla_\theta \log p_\theta(\tau)\big].$$
#
# The environment's dynamics do not depend on $\theta$, so $\nabla\log p_\theta(\tau) = \sum_t \nabla\log\pi_\theta(a_t|s_t)$.
# This is the **policy-gradient theorem** in its simplest form: sample episodes, weight each
# step's score $\nabla\log\pi_\theta(a_t|s_t)$ by the return, average. No model of the
# environment, no values needed.
#
# **For a softmax policy** $\pi = \mathrm{softmax}(z)$ the score with respect to the logits is
# $\nabla_z \log\pi(a) = e_a - \pi$: push the taken action up, all actions down in proportion
# to their probability. It has mean zero under $\pi$, which is what the next two tricks use.
#
# **Reward-to-go.** Action $a_t$ cannot affect rewards before $t$; their terms have expectation 0
# and only add noise. Replace $R(\tau)$ by $G_t = \sum_{k\ge t}\gamma^{k-t} r_k$.
#
# **Baseline.** For any $b$ that does not depend on $a_t$,
# $\mathbb{E}[b\,\nabla\log\pi(a_t|s_t)] = b\sum_a \pi(a)\nabla\log\pi(a) = b\,\nabla\sum_a\pi(a) = 0$.
# So $G_t - b_t$ keeps the gradient unbiased; a $b_t$ close to $G_t$'s mean cuts its variance.
# `rlcourse` uses the mean of the *other* episodes' $G_t$ at the same time step $t$.
#
# The smallest example: a 3-armed bandit with mean rewards $(1, 2, 3)$ and softmax logits $z$.
# The exact gradient is $\sum_a \pi(a)\,\mu_a\,(e_a - \pi)$; the score-function estimate
# averages $r\,(e_a - \pi)$ over samples.

# %%
means = np.array([1.0, 2.0, 3.0])
z = np.array([0.5, 0.0, -0.5])
pi = rc.softmax(z)
exact = sum(pi[a] * means[a] * (np.eye(3)[a] - pi) for a in range(3))
actions = rc.categorical_sample(np.tile(z, (100_000, 1)), rng)
rewards = means[actions] + rng.normal(size=100_000)
estimate = (rewards[:, None] * (np.eye(3)[actions] - pi)).mean(axis=0)
print("exact gradient:   ", np.round(exact, 3))
print("sampled estimate: ", np.round(estimate, 3))

# %% [markdown]
# ## Build it
#
# **Step 1: the softmax score** $e_a - \pi$ for a batch of logits `[B, A]` and actions `[B]`.

# %%
def my_softmax_score(logits, actions):
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    onehot = np.eye(logits.shape[1])[actions]
    return onehot - probs


# %% [markdown]
# Check it against automatic differentiation of $\log\pi(a)$:

# %%
logits = rng.normal(size=(4, 3))
taken = np.array([0, 2, 1, 2])
autodiff_score = rc.grad(lambda p: rc.sum(rc.categorical_log_prob(p["z"], taken)))({"z": logits})["z"]
np.testing.assert_allclose(my_softmax_score(logits, taken), autodiff_score, atol=1e-12)
print("score rows sum to", np.round(my_softmax_score(logits, taken).sum(axis=1), 12) + 0.0)
assert rc.exercises.check("softmax_score", my_softmax_score)

# %% [markdown]
# **Step 2: the reward-to-go** of one episode, walking backwards.

# %%
def my_reward_to_go(rewards, gamma):
    out = np.zeros(len(rewards))
    following = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + gamma * following
        out[t] = following
    return out


# %%
print("reward-to-go of [1, 1, 1] with gamma 0.5:", my_reward_to_go(np.ones(3), 0.5))
assert rc.exercises.check("reward_to_go", my_reward_to_go)

# %% [markdown]
# **Step 3: the gradient estimate.** For a linear policy, logits $= s W$, the score for $W$ is
# the outer product $s\,(e_a - \pi)^\top$. Weighted by $\Psi_t$ and summed over an episode, that
# is one episode's REINFORCE estimate. Collect 300 episodes of a fixed random linear policy on
# CartPole (episodes are columns of `[T, N]` arrays, `mask` marks the real steps):

# %%
def linear_policy(params, obs):
    return rc.linear(params, obs)


W = rc.linear_init(4, 2, seed=SEED, scale=0.5, dtype=np.float64)
obs, acts, rews, mask, _ = rc.collect_episodes(rc.CartPole(n=300, seed=SEED), linear_policy, W, rng)
obs = obs.astype(np.float64)
print(f"{mask.shape[1]} episodes, mean length {mask.sum(axis=0).mean():.1f}, longest {mask.shape[0]}")


# %%
def my_episode_gradients(obs, actions, weights, mask, W):
    logits = obs @ W["w"] + W["b"]  # [T, N, 2]
    score = np.eye(2)[actions] - rc.softmax(logits)  # [T, N, 2]
    weighted = score * (weights * mask)[..., None]
    grad_w = np.einsum("tni,tnj->nij", obs, weighted)  # sum over time of s (e_a - pi) Psi
    grad_b = weighted.sum(axis=0)
    return np.concatenate([grad_w.reshape(len(grad_b), -1), grad_b], axis=1)  # [N, 10]


# %%
psi = rc.reinforce_weights(rews, mask, 0.99)
mine = my_episode_gradients(obs, acts, psi, mask, W)
reference = rc.policy_gradient_estimate(linear_policy, W, obs, acts, psi, mask, per_episode=True)
np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-10)
print("per-episode gradients match rc.policy_gradient_estimate:", mine.shape)
print(inspect.getsource(rc.reinforce_loss))

# %% [markdown]
# ## Check it
#
# Three weightings, the same 300 episodes: $R(\tau)$ on every step, the reward-to-go $G_t$,
# and $G_t$ minus the leave-one-out baseline. The paired differences of the per-episode
# estimates must have mean zero (no bias); the spread should fall.

# %%
settings = {"whole return": (False, False), "reward-to-go": (True, False), "reward-to-go - baseline": (True, True)}
grads = {}
for name, (to_go, base) in settings.items():
    w = rc.reinforce_weights(rews, mask, 0.99, reward_to_go=to_go, baseline=base)
    grads[name] = my_episode_gradients(obs, acts, w, mask, W)
    print(f"{name:24s} total variance {grads[name].var(axis=0).sum():10.1f}")
names = list(settings)
for a, b in zip(names[:-1], names[1:]):
    d = grads[a] - grads[b]
    z_max = np.max(np.abs(d.mean(axis=0)) / (d.std(axis=0, ddof=1) / np.sqrt(len(d))))
    print(f"{a} vs {b}: largest mean difference {z_max:.1f} standard errors")
    assert z_max < 4.5
variances = [grads[name].var(axis=0).sum() for name in names]
assert variances[0] > variances[1] > variances[2]

# %% [markdown]
# Same mean, several times less variance: with reward-to-go each step stops paying for the
# noise of earlier actions, and the baseline removes the part of $G_t$ every episode shares
# (here, mostly "how many steps are left"). A baseline that *peeks at the action* breaks this:
# $\Psi = G_t - 5 a_t$ gives a biased gradient, and the same test fires:

# %%
peeking = my_episode_gradients(obs, acts, rc.reinforce_weights(rews, mask, 0.99, baseline=False) - 5.0 * acts * mask, mask, W)
d = grads["reward-to-go"] - peeking
z_max = np.max(np.abs(d.mean(axis=0)) / (d.std(axis=0, ddof=1) / np.sqrt(len(d))))
print(f"action-dependent 'baseline': {z_max:.1f} standard errors off")
assert z_max > 4.5

# %% [markdown]
# ## Use it
#
# `rc.reinforce` runs 16 CartPole copies for one episode each, weights the steps with
# reward-to-go minus the baseline, and takes one Adam step per batch, until 200k environment
# steps have been learned from. The policy is a 4-32-2 tanh network with a small output layer (near-uniform start).

# %%
def policy_net(params, obs):
    return rc.mlp(params, obs, "tanh")


runs = {}
for name, base in (("with baseline", True), ("no baseline", False)):
    runs[name] = rc.reinforce(rc.CartPole(n=16), policy_net, rc.mlp_init([4, 32, 2], seed=SEED, out_scale=0.01),
                              200_000, lr=1e-2, baseline=base, seed=SEED)
last20 = runs["with baseline"].episode_returns[-20:].mean()

# %% tags=["nbval-ignore-output"]
for name, run in runs.items():
    print(f"{name}: mean of the last 20 episodes {run.episode_returns[-20:].mean():.1f}")

# %%
print(f"REINFORCE with a baseline solved CartPole (last 20 episodes >= 475): {last20 >= 475}")
assert last20 >= 475

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for name, run in runs.items():
    smooth = np.convolve(run.episode_returns, np.ones(20) / 20, mode="valid")
    ax.plot(np.arange(20, len(run.episode_returns) + 1), smooth, label=name)
ax.axhline(475, color="gray", ls="--", lw=1, label="solved mark (475)")
ax.set_xlabel("episode")
ax.set_ylabel("return (mean of last 20 episodes)")
ax.set_title("REINFORCE climbs to the solved mark")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# On CartPole the baseline helps less than the variance numbers suggest, because Adam rescales
# each step and 16 episodes per batch already average a lot of noise; it matters more with
# fewer episodes per update or plain SGD. Each run's curve depends on the seed: judge methods
# over several seeds.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | the loss goes down, the return does not | the loss is a surrogate, not the objective | watch returns; the loss value means nothing on its own |
# | learning is slow and erratic | whole-episode returns as weights | reward-to-go and a baseline |
# | gradient points the wrong way | minimising $+\log\pi\cdot G$ instead of $-\log\pi\cdot G$ | the loss is $-\sum \log\pi(a_t|s_t)\,\Psi_t$ |
# | gradient flows into the weights | returns or baseline computed from traced values | weights are constants (`stop_gradient`) |
# | biased gradient | a "baseline" that depends on the action taken | baselines may depend on the state and time, never on $a_t$ |
# | steps of one episode leak into another | reward-to-go computed across the boundary of a vector env | one column per episode, or cut the sum at `done` |
# | collapse after solving | one noisy step too large | smaller `lr`, more episodes per batch (or PPO, lesson 10) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: a bandit's exact policy gradient.** Write `bandit_policy_gradient(z, means)`:
#    $\nabla_z J = \sum_a \pi(a)\,\mu_a\,(e_a - \pi)$ for softmax logits `z [A]` and mean
#    rewards `means [A]`. Why is it 0 when every arm pays the same?
# 2. **Medium: the leave-one-out baseline.** Write `leave_one_out_weights(returns, mask)` for
#    reward-to-go `returns [T, N]` (one column per episode, `mask` True on real steps): at each
#    real step, $G_t$ minus the mean of the *other* episodes' $G_t$ still running at $t$ (0 if
#    none is), and 0 on padding. Compare with `rc.reinforce_weights`. Why leave the episode
#    itself out?
# 3. **Hard: solve the short corridor by gradient ascent.** With $p = \sigma(\theta)$ the score
#    is $\nabla_\theta \log\pi = 1 - p$ for "right" and $-p$ for "left". Write
#    `corridor_episode_gradient(went_right, p)`: one episode's estimate
#    $\sum_t \nabla_\theta\log\pi(a_t)\,G_t$ with reward $-1$ per step, $\gamma = 1$ and
#    reward-to-go. Then simulate the corridor and run 200 ascent steps of size 0.01 from
#    $\theta = 0$, 200 episodes per step. Do you land near the best $p$ from *The problem*?

# %% tags=["solution"]
def bandit_policy_gradient(z, means):
    pi = rc.softmax(z)
    return sum(pi[a] * means[a] * (np.eye(len(z))[a] - pi) for a in range(len(z)))


# %%
assert rc.exercises.check("bandit_policy_gradient", bandit_policy_gradient)

# %% tags=["solution"]
def leave_one_out_weights(returns, mask):
    g = np.where(mask, returns, 0.0)
    others = mask.sum(axis=1, keepdims=True) - mask
    b = np.divide(g.sum(axis=1, keepdims=True) - g, others, out=np.zeros_like(g), where=others > 0)
    return np.where(mask, g - b, 0.0)


np.testing.assert_allclose(leave_one_out_weights(rc.reinforce_weights(rews, mask, 0.99, baseline=False), mask),
                           rc.reinforce_weights(rews, mask, 0.99), atol=1e-9)
print("matches rc.reinforce_weights on the 300 CartPole episodes")

# %%
assert rc.exercises.check("leave_one_out_weights", leave_one_out_weights)

# %% tags=["solution"]
def corridor_episode_gradient(went_right, p):
    scores = np.where(went_right, 1 - p, -p)
    return float(np.sum(scores * my_reward_to_go(-np.ones(len(went_right)), 1.0)))


def corridor_episode(p, rng, max_steps=200):
    """Whether each action of one short-corridor episode went right (the middle cell reverses)."""
    cell, went_right = 0, []
    while cell < 3 and len(went_right) < max_steps:
        right = rng.random() < p
        went_right.append(right)
        step = 1 if right else -1
        cell = max(cell + (-step if cell == 1 else step), 0)
    return np.array(went_right)


def corridor_gradient_ascent(steps=200, episodes=200, lr=0.01, rng=rng):
    theta = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-theta))
        grad = np.mean([corridor_episode_gradient(corridor_episode(p, rng), p) for _ in range(episodes)])
        theta += lr * grad
    return 1 / (1 + np.exp(-theta))


p_learned = corridor_gradient_ascent()
best_p = ps[values.argmax()]
print(f"learned p within 0.1 of the best {best_p:.2f}: {abs(p_learned - best_p) < 0.1}")
assert abs(p_learned - best_p) < 0.1

# %%
assert rc.exercises.check("corridor_episode_gradient", corridor_episode_gradient)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | policy gradient | "train the policy directly" | $\nabla_\theta J = \mathbb{E}[\sum_t \nabla\log\pi_\theta(a_t|s_t)\,\Psi_t]$ |
# | score function | "grad log-prob" | $\nabla_\theta\log\pi_\theta(a|s)$; for softmax logits $e_a - \pi$; mean 0 under $\pi$ |
# | log-derivative trick | "REINFORCE trick" | $\nabla p = p\,\nabla\log p$: turns the gradient of an expectation into an expectation |
# | reward-to-go | "causality" | weight step $t$ by $G_t$, the rewards from $t$ on, not the whole return |
# | baseline | "subtract the average" | any $b(s_t, t)$ subtracted from $G_t$; unbiased because the score has mean 0 |
# | surrogate loss | "the REINFORCE loss" | $-\sum \log\pi\,\Psi / N$: its gradient is the estimate; its value is not $J$ |
# | on-policy | "fresh data every update" | the estimate is only valid for episodes from the current policy |

# %% [markdown]
# ## Further reading
#
# - Williams (1992), *Simple statistical gradient-following algorithms for connectionist
#   reinforcement learning*, Machine Learning: REINFORCE and baselines.
# - Sutton, McAllester, Singh & Mansour (2000), *Policy Gradient Methods for Reinforcement
#   Learning with Function Approximation*, NeurIPS: the policy-gradient theorem.
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 13: the
#   short corridor (Example 13.1) and REINFORCE with baseline.
# - Greensmith, Bartlett & Baxter (2004), *Variance Reduction Techniques for Gradient Estimates
#   in Reinforcement Learning*, JMLR: which baselines minimise variance.
# - OpenAI Spinning Up, *Part 3: Intro to Policy Optimization*: reward-to-go and baselines
#   derived step by step.
