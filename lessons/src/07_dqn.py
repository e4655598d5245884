# %% [markdown]
# # 07 · Function approximation and DQN
#
# *Prerequisites:* 00, 05, 06
# *Time:* 50 minutes
# *You will build:* DQN's targets (terminal-aware, Double DQN) and Huber loss, then train DQN with a replay buffer and a target network on CartPole and measure the overestimation Double DQN removes.

# %% [markdown]
# Q-learning (lesson 06) keeps one number per state and action. This lesson replaces the table
# with a neural network $Q_\theta(s, a)$, sees why that makes Q-learning unstable, and adds the
# two pieces that made it work on Atari: a replay buffer and a target network.

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
# CartPole's state is four real numbers. To use a table you must cut each into bins. Run a
# random policy for 20,000 steps and count how many cells of the table it ever visits:

# %%
walker = rc.CartPole(n=1, seed=SEED)
obs = walker.reset(seed=SEED)
visited = []
for _ in range(20_000):
    visited.append(obs[0])
    obs = walker.step(rng.integers(0, 2, size=1)).obs
visited = np.array(visited)
scale = np.array([2.4, 3.0, 0.21, 3.5])  # rough ranges of x, x_dot, theta, theta_dot
for bins in (6, 10, 20):
    cells = np.clip(((visited / scale + 1) / 2 * bins).astype(int), 0, bins - 1)
    ids = np.ravel_multi_index(cells.T, (bins,) * 4)
    seen = len(np.unique(ids))
    print(f"{bins:2d} bins per dimension: {bins**4:7,d} cells, {seen:5,d} visited ({seen / bins**4:.1%})")

# %% [markdown]
# Coarse bins lump states that need different actions together; fine bins leave almost the
# whole table unvisited. The cell count grows as bins to the fourth power, and a policy that
# improves wanders into cells it has never seen, where the table knows nothing: what was
# learned in one cell says nothing about its neighbour. A table cannot
# *generalise*. A function $Q_\theta(s, a)$ with shared parameters can: a gradient step on
# one state moves the estimates of all similar states.

# %% [markdown]
# ## The idea
#
# **Semi-gradient Q-learning.** Fit $Q_\theta$ to the Q-learning target by gradient descent on
#
# $$L(\theta) = \tfrac12\big(y - Q_\theta(s, a)\big)^2, \qquad y = r + \gamma\,(1 - \text{terminated})\,\max_{a'} Q_{\theta}(s', a'),$$
#
# treating $y$ as a constant. It is not: $y$ depends on $\theta$. Ignoring that dependence is
# what "semi-gradient" means, and it is why the method can chase its own tail.
#
# **The deadly triad** (Sutton & Barto, ch. 11): function approximation, bootstrapping and
# off-policy updates together can make the estimates diverge even when each alone is safe.
# The smallest example: two states with one shared weight $w$, features 1 and 2, so
# $V = w$ and $V = 2w$; the first leads to the second with reward 0. Update only on that
# transition (off-policy: the data distribution is not the policy's):
# $w \leftarrow w + \alpha\,(\gamma\cdot 2w - w)\cdot 1$.

# %%
for gamma in (0.4, 0.9):
    w = 1.0
    for _ in range(50):
        w += 0.1 * (gamma * 2 * w - w)
    print(f"gamma {gamma}: w after 50 updates = {w:.3g}")

# %% [markdown]
# With $\gamma > 0.5$ every update raises the target faster than the estimate, and $w$ grows
# without bound although the true values are 0. DQN (Mnih et al., 2015) tames this with:
#
# - a **replay buffer**: store transitions and train on uniformly sampled minibatches, so
#   consecutive, correlated steps do not dominate an update;
# - a **target network** $\theta^-$, a copy of $\theta$ frozen for a while: $y$ uses
#   $Q_{\theta^-}$, so the target stops moving during many gradient steps;
# - the **Huber loss**: quadratic for small errors, linear for large ones, so one huge TD error
#   cannot produce a huge step.
#
# **Double DQN** (van Hasselt et al., 2016) fixes a bias of the max: $\max_{a'} Q(s', a')$ over
# *noisy* estimates is, on average, larger than the max of the true values. It picks the action
# with the online net and evaluates it with the target net:
# $y = r + \gamma\,(1-\text{terminated})\,Q_{\theta^-}\big(s', \arg\max_{a'} Q_\theta(s', a')\big)$.

# %% [markdown]
# ## Build it
#
# **Step 1: targets.** Batched: `rewards [B]`, `terminated [B]`, the two networks' Q-values at
# the next observation `[B, A]`. The next observation of a finished episode is `final_obs`
# (its last state), never the first state of the next episode. Only `terminated` stops the
# bootstrap: a time-limit truncation is passed as `terminated=False`.

# %%
def my_dqn_targets(rewards, terminated, next_q_online, next_q_target, gamma, double=True):
    if double:
        best = np.argmax(next_q_online, axis=1)
        next_value = next_q_target[np.arange(len(rewards)), best]
    else:
        next_value = next_q_target.max(axis=1)
    return rewards + gamma * (1.0 - terminated) * next_value


# %%
r = np.array([1.0, 1.0, 1.0])
done = np.array([False, False, True])
online = np.array([[1.0, 5.0], [3.0, 2.0], [9.0, 9.0]])
target = np.array([[10.0, 2.0], [-4.0, 7.0], [9.0, 9.0]])
print("Double DQN targets:", np.round(my_dqn_targets(r, done, online, target, 0.5), 3))
print("plain DQN targets: ", np.round(my_dqn_targets(r, done, online, target, 0.5, double=False), 3))
assert rc.exercises.check("dqn_targets", my_dqn_targets)

# %% [markdown]
# The first transition shows the difference: the online net prefers action 1, whose target
# value is 2, while the target net's own max is 10. The third is terminal: its target is the
# reward alone.
#
# **Step 2: Huber loss.** $\tfrac12 x^2$ for $|x| \le \delta$, else $\delta(|x| - \tfrac12\delta)$.
# Its gradient is $x$ clipped to $[-\delta, \delta]$.

# %%
def my_huber(x, delta=1.0):
    return np.where(np.abs(x) <= delta, 0.5 * x**2, delta * (np.abs(x) - 0.5 * delta))


# %%
x = np.linspace(-3, 3, 13)
np.testing.assert_allclose(my_huber(x), rc.huber(x))
grad = rc.grad(lambda p: rc.sum(rc.huber(p["x"])))({"x": x})["x"]
print("Huber gradient:", np.round(grad, 2))

# %% [markdown]
# **Step 3: the replay buffer** is a ring of preallocated arrays; once full, the newest
# transition overwrites the oldest. Here is a buffer of 4 rows after 6 transitions:

# %%
buffer = rc.ReplayBuffer(4, (1,))
for i in range(6):
    buffer.add(np.array([[i]]), np.array([i % 2]), np.array([1.0]), np.array([[i + 1]]), np.array([False]))
print("stored obs:", buffer.obs[:, 0].astype(int).tolist(), "next write at row", buffer.pos)

# %% [markdown]
# The reference puts these together. After checking its inputs, `rc.dqn_targets` computes
# the targets with this function, and `rc.dqn_loss` is the semi-gradient loss (the targets
# arrive as plain arrays, so no gradient reaches them):

# %%
print(inspect.getsource(rc.dqn_targets))
print(inspect.getsource(rc.dqn_loss))

# %% [markdown]
# ## Check it
#
# The invariants: a terminal transition never bootstraps, a truncated one does, and Double DQN
# takes the online argmax but the target's value.

# %%
next_q = np.array([[3.0, 8.0], [3.0, 8.0]])
y = rc.dqn_targets(np.zeros(2), np.array([True, False]), next_q, next_q, 0.9)
assert y[0] == 0.0, "terminal must not bootstrap"
assert y[1] == 0.9 * 8.0, "a truncated (non-terminal) transition bootstraps"
y = rc.dqn_targets(np.zeros(1), np.array([False]), np.array([[0.0, 1.0]]), np.array([[5.0, 2.0]]), 1.0)
assert y[0] == 2.0, "Double DQN: argmax from the online net, value from the target net"
print("invariants hold")

# %% [markdown]
# ## Use it
#
# Train on CartPole with `rc.DQN_CARTPOLE` (after the RL Zoo's settings: 256 steps of data
# then 128 gradient steps, the target frozen for each phase of 128 steps, epsilon from 1 to
# 0.04 over the first 16% of steps). From step 10,240 on, every 2,560 steps, the greedy policy
# is evaluated on 10 fresh episodes; training stops once it scores 475 (CartPole-v1's "solved"
# mark).

# %%
print(rc.DQN_CARTPOLE)


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


evals = []


def evaluate_every_2560(info):
    if info["steps"] % 2_560 == 0 and info["steps"] >= 10_240:
        score = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, info["params"]), 10, seed=1_000).mean
        evals.append((info["steps"], score))
        return score < 475
    return True


run = rc.dqn(rc.CartPole(), q_net, rc.mlp_init([4, 64, 64, 2], seed=SEED), 50_000,
             **rc.DQN_CARTPOLE, seed=SEED, callback=evaluate_every_2560)
best = max(score for _, score in evals)

# %% tags=["nbval-ignore-output"]
print(f"stopped after {run.steps} steps, {len(run.episode_returns)} episodes; "
      f"evaluations: {[int(s) for _, s in evals]}")

# %%
print(f"greedy policy reached 475 within 50k steps: {best >= 475}")
assert best >= 475

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(run.episode_end_steps, run.episode_returns, ".", ms=2, alpha=0.4, label="training episode")
ax.plot(*zip(*evals), "o-", label="greedy evaluation")
ax.axhline(475, color="gray", ls="--", lw=1, label="solved mark (475)")
ax.set_xlabel("environment steps")
ax.set_ylabel("return (steps balanced)")
ax.set_title("Exploring returns lag; the greedy policy jumps")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The evaluations (printed above) jump around: DQN on CartPole is known to reach 500 and then forget it for a
# while, because a near-perfect policy fills the buffer with only "upright" states. Evaluate
# the greedy policy, keep the best parameters, and do not read much into a single run:
# `rc.dqn(..., callback=rc.Checkpoints(rc.CartPole(n=10), q_net))` does the first two for you and
# keeps `best_params` next to the final `params`. Its `best_return` is the best of many noisy
# scores on the same episodes, so re-evaluate `best_params` on other seeds before you quote it.
#
# **Double DQN's fix, measured.** Take a state where every action is truly worth 0 and two
# independent noisy estimates (online and target) of each action's value. The max of one
# estimate is biased upward, the more so the more actions there are; Double DQN's
# "select with one, evaluate with the other" is not.

# %%
action_counts = [2, 4, 8, 16, 32]
plain_bias, double_bias = [], []
for count in action_counts:
    online_q, target_q = rng.normal(size=(2, 20_000, count))
    zeros = np.zeros(20_000)
    no_end = np.zeros(20_000, dtype=bool)
    plain_bias.append(rc.dqn_targets(zeros, no_end, online_q, target_q, 1.0, double=False).mean())
    double_bias.append(rc.dqn_targets(zeros, no_end, online_q, target_q, 1.0, double=True).mean())
    print(f"{count:2d} actions: max bias {plain_bias[-1]:+.2f}, Double DQN bias {double_bias[-1]:+.2f}")
assert min(plain_bias) > 0.5 and max(np.abs(double_bias)) < 0.05

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(action_counts, plain_bias, "o-", label="max over noisy Q")
ax.plot(action_counts, double_bias, "s-", label="Double DQN")
ax.set_xscale("log", base=2)
ax.set_xlabel("number of actions")
ax.set_ylabel("bias of the target (true value 0)")
ax.set_title("The max of noise is positive; Double DQN is not")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# In DQN this bias compounds: each target bootstraps from values that were themselves pushed
# up by a max, so the estimates can drift far above the returns the policy really collects.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | Q-values grow without bound | deadly triad; target updated every gradient step | a target network frozen for hundreds of gradient steps (or Polyak `tau` ~ 0.005) |
# | Q-values well above the returns | max over noisy estimates | Double DQN (the default here) |
# | values near the end of episodes too high | bootstrapping through `terminated` | multiply the bootstrap by `1 - terminated` |
# | values near the time limit too low | treating `truncated` as terminal | store `terminated` only; truncation bootstraps from `final_obs` |
# | next state is a fresh start state | storing `obs` after an autoreset | store `final_obs` as the next observation |
# | learning, then sudden collapse | buffer full of one kind of state; lr too high | evaluate often and keep the best (`rc.Checkpoints`); larger buffer; lower lr |
# | nothing learned for a long time | epsilon decays too slowly or learning starts late | decay epsilon over ~10-20% of training |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: Polyak averaging.** Instead of copying the online net into the target every so
#    many steps, many implementations move the target a little every step. Write
#    `soft_update(target, online, tau)` returning `(1 - tau) * target + tau * online` for
#    arrays. After $1/\tau$ updates towards a fixed `online`, how far has the target come?
# 2. **Medium: the exploration schedule.** Write `epsilon_schedule(step, total_steps, start,
#    end, fraction)`: epsilon falls linearly from `start` at step 0 to `end` at step
#    `fraction * total_steps`, then stays at `end` (what `rc.dqn` does with `DQN_CARTPOLE`).
# 3. **Hard: the deadly triad's stable range.** In the two-state example each update multiplies
#    $w$ by $1 + \alpha(2\gamma - 1)$. Write `stable_gamma_range(alpha)` returning the pair
#    `(lowest, highest)` of the discounts in $[0, 1]$ for which $w$ stays bounded, derived
#    exactly from that factor. Then confirm it by running the update. Why does a large step
#    size make *small* discounts diverge too?

# %% tags=["solution"]
def soft_update(target, online, tau):
    return (1 - tau) * target + tau * online


target_vec = np.zeros(3)
for _ in range(100):
    target_vec = soft_update(target_vec, np.ones(3), 0.01)
print(f"after 100 updates with tau = 0.01: {target_vec[0]:.3f} (1 - 1/e = {1 - np.exp(-1):.3f})")

# %%
assert rc.exercises.check("soft_update", soft_update)

# %% [markdown]
# The target has come $1 - (1-\tau)^{1/\tau} \approx 1 - e^{-1}$ of the way: a soft update with
# `tau` behaves roughly like a hard copy every $1/\tau$ steps, without the jump.

# %% tags=["solution"]
def epsilon_schedule(step, total_steps, start, end, fraction):
    duration = max(1, int(fraction * total_steps))
    return start + min(step / duration, 1.0) * (end - start)


# %%
assert rc.exercises.check("epsilon_schedule", epsilon_schedule)

# %% tags=["solution"]
def stable_gamma_range(alpha):
    # bounded iff -1 <= 1 + alpha (2 gamma - 1) <= 1, i.e. 1/2 - 1/alpha <= gamma <= 1/2
    return max(0.0, 0.5 - 1.0 / alpha), 0.5


def w_after(gamma, alpha, steps=200):
    w = 1.0
    for _ in range(steps):
        w += alpha * (gamma * 2 * w - w)
    return w


for alpha in (0.1, 3.0):
    low, high = stable_gamma_range(alpha)
    bounded = [g for g in np.linspace(0, 1, 101).tolist() if abs(w_after(g, alpha)) <= 1.0]
    print(f"alpha {alpha}: derived range [{low:.3f}, {high:.3f}], "
          f"bounded on a grid of 101 gammas: [{min(bounded):.2f}, {max(bounded):.2f}]")
    assert low - 0.01 <= min(bounded) <= low + 0.01 and abs(max(bounded) - high) < 1e-9

# %%
assert rc.exercises.check("stable_gamma_range", stable_gamma_range)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | function approximation | "a neural Q" | $Q_\theta(s,a)$ with shared parameters, so learning on one state changes others |
# | semi-gradient | "TD with a network" | the gradient of $\frac12(y - Q_\theta)^2$ with the target $y$ held constant |
# | deadly triad | "DQN is unstable" | approximation + bootstrapping + off-policy data can diverge together |
# | replay buffer | "experience replay" | a ring of past transitions sampled uniformly for each minibatch |
# | target network | "the frozen copy" | $\theta^-$, used only inside $y$, copied from $\theta$ every so many gradient steps |
# | Double DQN | "fixes overestimation" | select $a'$ with $Q_\theta$, evaluate it with $Q_{\theta^-}$ |
# | Huber loss | "smooth L1" | quadratic within $\delta$, linear outside: the TD error's gradient is clipped |
# | epsilon-greedy | "exploration" | a random action with probability $\epsilon$, decayed from 1 to a small floor |

# %% [markdown]
# ## Further reading
#
# - Mnih et al. (2015), *Human-level control through deep reinforcement learning*, Nature: DQN
#   with replay and a target network.
# - van Hasselt, Guez & Silver (2016), *Deep Reinforcement Learning with Double Q-learning*,
#   AAAI: the overestimation and the fix used here.
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapters 9-11:
#   semi-gradient methods and the deadly triad (the two-state example is from section 11.2).
# - Raffin et al. (2021), *Stable-Baselines3*, JMLR, and the RL Baselines3 Zoo: the CartPole
#   settings `DQN_CARTPOLE` follows.
