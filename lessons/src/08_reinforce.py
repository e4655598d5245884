# %% [markdown]
# # 08 · Policy gradients: REINFORCE
#
# *Prerequisites:* 00, 04, 07
# *Time:* 60 minutes
# *You will build:* the softmax score, the reward-to-go, a linear policy's per-episode gradient estimate and the leave-one-out baseline; then you test which weightings keep the gradient's mean (gamma^t G_t does, plain G_t does not) and train REINFORCE on CartPole without a baseline, with the leave-one-out baseline and with a learned critic.

# %% [markdown]
# DQN learns values and acts greedily on them. Policy-gradient methods skip the detour: they
# adjust the policy $\pi_\theta(a|s)$ itself in the direction that raises the expected return.
# This lesson derives that direction, builds the estimator, tests which of its textbook
# variants really keep its mean, and measures what the baseline buys on CartPole.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
plt.rcParams.update({"font.size": 10, "legend.fontsize": 9, "figure.dpi": 100})

# %% [markdown]
# ## The problem
#
# Sutton & Barto's *short corridor* (Example 13.1): three cells before a goal, reward $-1$ per
# step. In the middle cell the actions are reversed, but the agent cannot tell the cells apart:
# it sees the same observation everywhere, so any policy is "go right with probability $p$".
# The value of the start for each $p$ solves a 3-by-3 linear system (cell 0 is at a wall:
# going left there stays put):

# %%
def corridor_value(p, gamma=1.0):
    """Expected discounted return from the start of the short corridor for P(right) = p."""
    # V0 = -1 + g (p V1 + (1-p) V0);  V1 = -1 + g (p V0 + (1-p) V2);  V2 = -1 + g (p * 0 + (1-p) V1)
    a = np.array([[1 - gamma * (1 - p), -gamma * p, 0.0],
                  [-gamma * p, 1.0, -gamma * (1 - p)],
                  [0.0, -gamma * (1 - p), 1.0]])
    solution = np.linalg.lstsq(a, -np.ones(3), rcond=None)[0]
    return solution[0] if np.allclose(a @ solution, -np.ones(3)) else -np.inf


ps = np.linspace(0.001, 0.999, 999)
values = np.array([corridor_value(p) for p in ps])
best_p = ps[values.argmax()]
print(f"p = 0: {corridor_value(0.0)}, p = 1: {corridor_value(1.0)}")
print(f"best p = {best_p:.3f} with value {values.max():.2f}")
for p in (0.05, 0.95):
    print(f"epsilon-greedy with epsilon 0.1 can only reach p = {p}: value {corridor_value(p):.1f}")

# %% [markdown]
# Both deterministic policies never reach the goal (value $-\infty$); the best policy is
# stochastic, going right with the probability printed above (Sutton & Barto report about
# 0.59). A greedy policy from action values is deterministic, and epsilon-greedy can only mix
# it with uniform noise: with $\epsilon = 0.1$ it goes right with probability 0.05 or 0.95,
# far worse (printed). To learn $p$ itself you want to optimise the policy's parameters
# directly, by gradient ascent on $J(\theta) = \mathbb{E}_{\tau\sim\pi_\theta}[G_0]$, the
# expected (discounted) return from the start.

# %% [markdown]
# ## The idea
#
# **The likelihood-ratio identity.** $\nabla_\theta p_\theta(\tau) = p_\theta(\tau)\nabla_\theta\log p_\theta(\tau)$, so
#
# $$\nabla_\theta J = \nabla_\theta \sum_\tau p_\theta(\tau) G_0(\tau) = \mathbb{E}_\tau\big[G_0(\tau)\,\nabla_\theta \log p_\theta(\tau)\big],
# \qquad G_0 = \sum_{k \ge 0} \gamma^k r_k .$$
#
# The environment's dynamics do not depend on $\theta$, so $\nabla\log p_\theta(\tau) = \sum_t \nabla\log\pi_\theta(a_t|s_t)$:
# sample episodes, weight each step's **score** $\nabla_\theta\log\pi_\theta(a_t|s_t)$ by the
# return, average. No model of the environment, no values needed. This is the likelihood-ratio
# (score-function) identity, true of any expectation over samples. The *policy-gradient
# theorem* (Sutton et al., 2000) is a statement about state values that follows from it for an
# MDP: $\nabla J = \sum_s d_\gamma(s) \sum_a \nabla_\theta\pi_\theta(a|s)\,Q^\pi(s, a)$, with
# $d_\gamma(s) = \sum_t \gamma^t P(s_t = s)$ the *discounted* visits of $s$ (exercise 3).
#
# **Reward-to-go, with its discount.** Action $a_t$ cannot affect rewards before $t$: the terms
# $r_k \nabla\log\pi(a_t|s_t)$ with $k < t$ have mean 0 and only add noise. Dropping them leaves
#
# $$\nabla_\theta J = \mathbb{E}\Big[\sum_t \nabla_\theta\log\pi_\theta(a_t|s_t)\sum_{k\ge t}\gamma^k r_k\Big]
# = \mathbb{E}\Big[\sum_t \gamma^t\, G_t\,\nabla_\theta\log\pi_\theta(a_t|s_t)\Big],
# \qquad G_t = \sum_{k\ge t}\gamma^{k-t} r_k .$$
#
# Mind the $\gamma^t$: it is in Sutton & Barto's REINFORCE (section 13.3), and most deep-RL code
# leaves it out and weights step $t$ by $G_t$ alone (Nota & Thomas, 2020). For $\gamma < 1$ that
# is *not* an unbiased estimate of $\nabla J$: it counts a late step as much as an early one, as
# if every state visited were a start state. With $\gamma = 1$ the two agree. *Check it* measures
# the difference.
#
# **Baseline.** For any $b$ that does not depend on $a_t$,
# $\mathbb{E}[b\,\nabla\log\pi(a_t|s_t)] = b\sum_a \pi(a)\nabla\log\pi(a) = b\,\nabla\sum_a\pi(a) = 0$.
# So $G_t - b_t$ keeps the mean, and a $b_t$ close to $G_t$ cuts the variance. Two choices here:
# the **leave-one-out** baseline, the mean of the *other* episodes' $G_t$ at the same time step
# $t$ (no learning needed), and a **learned critic** $V_\phi(s_t)$, fitted to the returns.
#
# **For a softmax policy** $\pi = \mathrm{softmax}(z)$ the score with respect to the logits is
# $\nabla_z \log\pi(a) = e_a - \pi$: push the taken action up, all actions down in proportion
# to their probability. Its mean under $\pi$ is $\sum_a \pi(a)(e_a - \pi) = 0$, which is the
# baseline argument above.
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
samples = rewards[:, None] * (np.eye(3)[actions] - pi)
estimate, se = samples.mean(axis=0), samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
print("exact gradient:   ", np.round(exact, 3) + 0.0)
print("sampled estimate: ", np.round(estimate, 3) + 0.0, "+-", np.round(se, 3))
assert np.all(np.abs(estimate - exact) < 4 * se)

# %% [markdown]
# ## Build it
#
# Four steps, each a function you write and check. **Step 1: the softmax score** $e_a - \pi$
# for a batch of logits `[B, A]` and actions `[B]`, computed so that large logits cannot
# overflow.

# %% tags=["solution"]
def my_softmax_score(logits, actions):
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    onehot = np.eye(logits.shape[1])[actions]
    return onehot - probs


# %%
assert rc.exercises.check("softmax_score", my_softmax_score)

# %% [markdown]
# The reference agrees with automatic differentiation of $\log\pi(a)$, and each row sums to 0:

# %%
logits = rng.normal(size=(4, 3))
taken = np.array([0, 2, 1, 2])
autodiff_score = rc.grad(lambda p: rc.sum(rc.categorical_log_prob(p["z"], taken)))({"z": logits})["z"]
np.testing.assert_allclose(rc.softmax_score(logits, taken), autodiff_score, atol=1e-12)
print("score rows sum to", np.round(rc.softmax_score(logits, taken).sum(axis=1), 12) + 0.0)

# %% [markdown]
# **Step 2: the reward-to-go** $G_t$ of one episode's `rewards [T]`.

# %% tags=["solution"]
def my_reward_to_go(rewards, gamma):
    out = np.zeros(len(rewards))
    following = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + gamma * following
        out[t] = following
    return out


# %%
assert rc.exercises.check("reward_to_go", my_reward_to_go)

# %% [markdown]
# **Step 3: one episode's gradient estimate** for a linear-softmax policy, logits
# $= s\,W_w + W_b$. The score for $W_w$ is the outer product $s\,(e_a - \pi)^\top$ and for
# $W_b$ it is $e_a - \pi$; weighted by $\Psi_t$ and summed over an episode's steps, that is the
# episode's REINFORCE estimate. Episodes are the columns of `[T, N]` arrays (`obs` is
# `[T, N, D]`), and `mask` is True on real steps: the rows after an episode's end are padding,
# and hold numbers that must not count. Return `{"w": [N, D, A], "b": [N, A]}`.

# %% tags=["solution"]
def my_episode_gradients(obs, actions, weights, mask, W):
    logits = obs @ W["w"] + W["b"]  # [T, N, A]
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    score = np.eye(logits.shape[-1])[actions] - shifted / shifted.sum(axis=-1, keepdims=True)
    weighted = score * np.where(mask, weights, 0.0)[..., None]
    return {"w": np.einsum("tnd,tna->nda", obs, weighted), "b": weighted.sum(axis=0)}


# %%
assert rc.exercises.check("episode_gradients", my_episode_gradients)

# %% [markdown]
# **Step 4: the leave-one-out baseline.** Given the weights `returns [T, N]` of a batch (e.g.
# $G_t$) and `mask`, subtract from each real step the mean of the *other* episodes' weights at
# the same $t$, among those still running at $t$ (subtract nothing where no other episode is
# running); padding gets 0.

# %% tags=["solution"]
def my_leave_one_out_weights(returns, mask):
    g = np.where(mask, returns, 0.0)
    others = mask.sum(axis=1, keepdims=True) - mask
    b = np.divide(g.sum(axis=1, keepdims=True) - g, others, out=np.zeros_like(g), where=others > 0)
    return np.where(mask, g - b, 0.0)


# %%
assert rc.exercises.check("leave_one_out_weights", my_leave_one_out_weights)

# %% [markdown]
# The reference computes every weighting the lesson uses in one function, and the surrogate
# loss whose gradient is minus the estimate:

# %%
print(inspect.getsource(rc.reinforce_weights))
print(inspect.getsource(rc.reinforce_loss))

# %% [markdown]
# ## Check it
#
# **Which weightings keep the mean?** On the short corridor with $\gamma = 0.9$ the true
# gradient is known: $p = \sigma(\theta)$, $\partial\log\pi/\partial\theta$ is $1 - p$ for
# "right" and $-p$ for "left", and $dJ/d\theta$ is a finite difference of `corridor_value`.
# Sample 50,000 episodes at $\theta = 0$ and average each estimator over them:

# %%
def corridor_episodes(p, n, rng, max_steps=1_000):
    """n short-corridor episodes under P(right) = p, as columns: went_right [T, n], mask [T, n]."""
    cell, running = np.zeros(n, dtype=int), np.ones(n, dtype=bool)
    rights, masks = [], []
    while running.any() and len(rights) < max_steps:
        right = rng.random(n) < p
        move = np.where(right, 1, -1) * np.where(cell == 1, -1, 1)  # the middle cell reverses
        cell = np.where(running, np.maximum(cell + move, 0), cell)
        rights.append(right)
        masks.append(running.copy())
        running &= cell < 3
    return np.array(rights), np.array(masks)


CORRIDOR_GAMMA, THETA = 0.9, 0.0
p0 = 1 / (1 + np.exp(-THETA))
true_grad = (corridor_value(1 / (1 + np.exp(-THETA - 1e-6)), CORRIDOR_GAMMA)
             - corridor_value(1 / (1 + np.exp(-THETA + 1e-6)), CORRIDOR_GAMMA)) / 2e-6
went_right, c_mask = corridor_episodes(p0, 50_000, rng)
c_rewards = -1.0 * c_mask
c_score = np.where(went_right, 1 - p0, -p0)
weightings = {
    "whole return G_0": dict(reward_to_go=False, baseline=False),
    "gamma^t G_t": dict(baseline=False, discount_steps=True),
    "G_t (no gamma^t)": dict(baseline=False),
}
print(f"true dJ/dtheta at theta = 0, gamma = {CORRIDOR_GAMMA}: {true_grad:.3f}")
off_by = {}
for name, kind in weightings.items():
    psi = rc.reinforce_weights(c_rewards, c_mask, CORRIDOR_GAMMA, **kind)
    per_episode = (c_mask * c_score * psi).sum(axis=0)
    mean, se = per_episode.mean(), per_episode.std(ddof=1) / np.sqrt(per_episode.size)
    off_by[name] = (mean - true_grad) / se
    print(f"{name:17s}: mean {mean:.3f} +- {se:.3f}  ({off_by[name]:+.1f} standard errors from the truth)")
assert abs(off_by["whole return G_0"]) < 4 and abs(off_by["gamma^t G_t"]) < 4
assert off_by["G_t (no gamma^t)"] > 6

# %% [markdown]
# $G_0$ and $\gamma^t G_t$ estimate the gradient; $G_t$ estimates something about twice as
# large here, many standard errors away. It is not $\nabla J$, yet it still points uphill here,
# and on this corridor it leads almost to the same place: the $p$ at which the $G_t$ direction is
# zero is close to the best $p$ at this discount, and moves away from it as $\gamma$ falls
# (exercise 3 computes both directions exactly, and where each is zero at $\gamma = 0.9$ and at
# $\gamma = 0.5$). On this corridor, and on CartPole below (the $\gamma^t G_t$ variant of *Use
# it* against the $G_t$ ones), dropping $\gamma^t$ costs little; Nota & Thomas (2020) build
# problems where the $G_t$ direction's fixed point is badly wrong.
#
# **Less noise, same mean, on CartPole.** Collect 300 episodes of a fixed random linear policy
# and compute each episode's estimate (the reference's `per_episode=True`) with three unbiased
# weightings: $G_0$ on every step, $\gamma^t G_t$, and $\gamma^t G_t$ minus the leave-one-out
# baseline. The paired differences of the per-episode estimates must have mean zero; the
# spread should fall.

# %%
def linear_policy(params, obs):
    return rc.linear(params, obs)


W = rc.linear_init(4, 2, seed=SEED, scale=0.5, dtype=np.float64)
obs, acts, rews, mask, _ = rc.collect_episodes(rc.CartPole(n=300, seed=SEED), linear_policy, W, rng)
obs = obs.astype(np.float64)
print(f"{mask.shape[1]} episodes, mean length {mask.sum(axis=0).mean():.1f}, longest {mask.shape[0]}")

settings = {"whole return G_0": dict(reward_to_go=False, baseline=False),
            "gamma^t G_t": dict(baseline=False, discount_steps=True),
            "gamma^t G_t - baseline": dict(baseline=True, discount_steps=True)}
grads = {}
for name, kind in settings.items():
    psi = rc.reinforce_weights(rews, mask, 0.99, **kind)
    grads[name] = rc.policy_gradient_estimate(linear_policy, W, obs, acts, psi, mask, per_episode=True)
    print(f"{name:24s} total variance {grads[name].var(axis=0).sum():10.1f}")


def paired_z(a, b):
    """The largest |mean| / standard error over the components of the paired differences."""
    d = a - b
    return np.max(np.abs(d.mean(axis=0)) / (d.std(axis=0, ddof=1) / np.sqrt(len(d))))


names = list(settings)
for a, b in zip(names[:-1], names[1:]):
    z_max = paired_z(grads[a], grads[b])
    print(f"{a} vs {b}: largest mean difference {z_max:.1f} standard errors")
    assert z_max < 4.5
variances = [grads[name].var(axis=0).sum() for name in names]
print(f"variance ratios: G_0 / gamma^t G_t {variances[0] / variances[1]:.1f}; "
      f"gamma^t G_t / with the baseline {variances[1] / variances[2]:.2f}")
assert variances[0] > 2 * variances[1] and variances[1] > 1.2 * variances[2]

# %% [markdown]
# Same mean, less variance (the ratios are printed): reward-to-go cuts it several times, as
# each step stops paying for the noise of earlier actions; the baseline cuts it by a smaller
# further factor (asserted above 1.2 on this draw), removing the part of
# $G_t$ every episode shares. A baseline that *peeks at the action* breaks this:
# $\Psi = \gamma^t G_t - 5 a_t$ gives a biased gradient, and the same test fires:

# %%
peek = rc.reinforce_weights(rews, mask, 0.99, baseline=False, discount_steps=True) - 5.0 * acts * mask
peeking = rc.policy_gradient_estimate(linear_policy, W, obs, acts, peek, mask, per_episode=True)
z_peek = paired_z(grads["gamma^t G_t"], peeking)
print(f"action-dependent 'baseline': {z_peek:.1f} standard errors off")
assert z_peek > 4.5

# %% [markdown]
# ## Use it
#
# `rc.reinforce` runs 16 CartPole copies for one whole episode each, weights the steps, and
# takes one Adam step (lr 0.01) per batch, until 200,000 environment steps have been learned
# from. The policy is a 4-32-2 tanh network with a small output layer (near-uniform start).
# Four variants, each on seeds 0, 1 and 2 from the same initial policy. Three weight by $G_t$
# (what most code does): no baseline, the leave-one-out baseline (the default), and a learned
# critic (a 4-32-1 tanh network fitted to $G_t$ by 10 Adam steps on each batch, after the
# batch's weights were computed, so no step's baseline has seen its own return). The fourth
# weights by the unbiased $\gamma^t G_t$, with the leave-one-out baseline.
#
# Twelve runs one after another take about a minute (`python benchmarks/reinforce_lockstep.py
# --seeds 3 --steps 200000`: 56 s of CPU against 22 s for the sweep). `rc.reinforce_sweep` runs
# them side by side: at each step one batched pass of the twelve policies and one CartPole
# computation for their 192 copies, and each run learns as soon as its own 16 episodes have
# ended. Each keeps its own seed, random stream, optimiser and critic, so each is the run
# `rc.reinforce` makes, to the last bit; the cell checks that on two short runs
# (`tests/test_sweep.py` checks every baseline kind, both float types and both ways of stepping
# the environments). The sweep applies the policy itself, as `rc.mlp(params, obs, "tanh")`
# (`activation="tanh"`), or `rc.actor_critic_model` for the critic's tree: `policy_net` is what
# `rc.reinforce` is given, and changing it would not change the sweep.

# %%
def policy_net(params, obs):
    return rc.mlp(params, obs, "tanh")


VARIANTS = {"no baseline": dict(baseline=False), "leave-one-out": dict(baseline=True),
            "learned critic": dict(baseline="value"),
            "gamma^t G_t, leave-one-out": dict(baseline=True, discount_steps=True)}
RUN_SEEDS = (0, 1, 2)


def network(name, seed):
    if VARIANTS[name]["baseline"] == "value":  # the same actor as the others, plus a critic
        return rc.make_actor_critic(4, 2, hidden=(32,), seed=seed)
    return policy_net, rc.mlp_init([4, 32, 2], seed=seed, out_scale=0.01)


class StepSizes:
    """A callback: the size (norm) of each update's change of the parameters."""

    def __init__(self):
        self.previous, self.sizes = None, []

    def __call__(self, info):
        flat = np.concatenate([np.ravel(x) for x in rc.tree_leaves(info["params"])])
        if self.previous is not None:
            self.sizes.append(np.linalg.norm(flat - self.previous))
        self.previous = flat


def train(grid, steps, callbacks=None):
    """rc.reinforce_sweep: the runs of grid side by side, each the run rc.reinforce makes."""
    return rc.reinforce_sweep([rc.CartPole(n=16) for _ in grid], [network(*run)[1] for run in grid],
                              steps, [dict(seed=seed, **VARIANTS[name]) for name, seed in grid], lr=1e-2,
                              activation="tanh", callbacks=callbacks)


grid = [(name, seed) for name in VARIANTS for seed in RUN_SEEDS]
step_sizes = {run: StepSizes() for run in grid}
runs = {name: [] for name in VARIANTS}
for (name, _), result in zip(grid, train(grid, 200_000, [step_sizes[run] for run in grid])):
    runs[name].append(result)

# Is a sweep member rc.reinforce's run? Two of the twelve, short, both ways.
pair = [("learned critic", 1), ("no baseline", 2)]
alone = [rc.reinforce(rc.CartPole(n=16), *network(name, seed), 5_000, lr=1e-2, seed=seed, **VARIANTS[name])
         for name, seed in pair]
for (name, seed), a, b in zip(pair, alone, train(pair, 5_000)):
    same = (all(np.array_equal(x, y) for x, y in zip(rc.tree_leaves(a.params), rc.tree_leaves(b.params)))
            and np.array_equal(a.episode_returns, b.episode_returns))
    print(f"{name}, seed {seed}: rc.reinforce alone and in the sweep give identical params and "
          f"episode returns after {a.steps:,d} steps: {same}")
    assert same
start_same = all(np.array_equal(x, y) for seed in RUN_SEEDS
                 for x, y in zip(rc.tree_leaves(network("learned critic", seed)[1]["actor"]),
                                 rc.tree_leaves(network("no baseline", seed)[1])))
print(f"on every seed, the critic variant's actor starts from the same weights as the others: {start_same}")
assert start_same


def running_mean(returns, k=20):
    return np.convolve(returns, np.ones(k) / k, mode="valid")


def first_solved(run):
    """The first episode at which the mean of the 20 before it reached 475 (None: never)."""
    hit = np.flatnonzero(running_mean(run.episode_returns) >= 475)
    return int(hit[0]) + 20 if hit.size else None


# %% tags=["nbval-ignore-output"]
for name, results in runs.items():
    last100 = [r.episode_returns[-100:].mean() for r in results]
    print(f"{name:27s} last-100 mean per seed {[round(float(x), 1) for x in last100]}; "
          f"first episode at 475 {[first_solved(r) for r in results]}")

# %%
last100 = {name: np.array([r.episode_returns[-100:].mean() for r in results]) for name, results in runs.items()}
for name, values_ in last100.items():
    print(f"{name:27s} seeds with a last-100 mean >= 475: {int((values_ >= 475).sum())}/3")
assert all((last100[name] >= 475).all() for name in ("leave-one-out", "learned critic",
                                                      "gamma^t G_t, leave-one-out"))
assert np.median(last100["leave-one-out"]) > np.median(last100["no baseline"])

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
colours = {"no baseline": "C3", "leave-one-out": "C0", "learned critic": "C2",
           "gamma^t G_t, leave-one-out": "C4"}
labels = {**{name: name for name in VARIANTS}, "gamma^t G_t, leave-one-out": r"$\gamma^t G_t$, leave-one-out"}
for name in VARIANTS:
    curves = [running_mean(r.episode_returns) for r in runs[name]]
    length = min(len(c) for c in curves)
    stack = np.array([c[:length] for c in curves])
    episodes = np.arange(20, 20 + length)
    ax.plot(episodes, np.median(stack, axis=0), color=colours[name], lw=1.2, label=f"{labels[name]} (median)")
    ax.fill_between(episodes, stack.min(axis=0), stack.max(axis=0), color=colours[name], alpha=0.2)
ax.fill_between([], [], [], color="gray", alpha=0.2, label="band: range over the 3 seeds")
ax.axhline(475, color="gray", ls="--", lw=1, label="475")
ax.set(xlabel="episode", ylabel="mean return of the last 20 episodes",
       title="With a baseline every seed ends at the mark; without, the median ends lower")
ax.legend(loc="upper left")
plt.show()

# %% [markdown]
# The lines are the median over the three seeds, the bands their range; each variant's curves
# stop at the episode count of its shortest seed, so the right edge is not "the end" of every
# run (the last-100 means printed above are). Both baselines end
# every seed at the mark (asserted above); without a baseline the median ends lower. Over ten
# seeds (`python benchmarks/reinforce_cartpole.py --variants loo none value`) the mean of the
# last 100 episodes reached 475 on 10 of 10 seeds with the leave-one-out baseline, 10
# of 10 with the learned critic, and 3 of 10 without a baseline.
#
# On these budgets the learned critic buys about what the leave-one-out mean buys. They are
# different baselines: the leave-one-out mean is a function of the time step $t$, and a critic
# of the state alone cannot see $t$, although under a policy that balances, CartPole's
# return-to-go depends on how many of the 500 steps are left. The critic's error on each new
# batch, before it learned from it, early and late in training:

# %% tags=["nbval-ignore-output"]
for seed, r in zip(RUN_SEEDS, runs["learned critic"]):
    v = r.history["value_loss"]
    print(f"seed {seed}: critic's mean squared error / 2 on the next batch, first 10 updates "
          f"{np.mean(v[:10]):.0f}, last 10 updates {np.mean(v[-10:]):.0f}")

# %% [markdown]
# The error does not fall. One reason: what the critic must predict keeps moving, since the
# returns grow as the policy improves; an episode's discounted return-to-go is near 1 at its
# last step and, for a 500-step episode, near $1/(1-\gamma) = 100$ at its first. The other: it
# cannot see $t$ (above). This output does not tell the two apart. A baseline does not need to
# be accurate to keep the mean, only independent of the action; it cuts the variance by as much
# as it tracks $G_t$.

# %% [markdown]
# The fourth variant weights by the unbiased $\gamma^t G_t$ (with the leave-one-out baseline):
# it also ends every seed at the mark (asserted above). It shrinks the weight of late steps, so
# its gradient is smaller (the medians of `grad_norm` are printed below); but Adam divides each
# gradient by its running size, so the parameter steps are about as large as with $G_t$: what
# changes is how late steps weigh against early ones. Compare its first episode at 475 with the
# $G_t$ leave-one-out runs in the printout: three seeds cannot rank the two. On CartPole the
# biased $G_t$ costs nothing the last-100 means can see at this budget; `python
# benchmarks/reinforce_cartpole.py --variants discounted loo` compares them on more seeds.

# %%
grad_ratio, step_ratio = [], []
for i, seed in enumerate(RUN_SEEDS):
    plain, discounted = runs["leave-one-out"][i], runs["gamma^t G_t, leave-one-out"][i]
    grad_ratio.append(np.median(discounted.history["grad_norm"]) / np.median(plain.history["grad_norm"]))
    step_ratio.append(np.median(step_sizes["gamma^t G_t, leave-one-out", seed].sizes)
                      / np.median(step_sizes["leave-one-out", seed].sizes))
print("gamma^t G_t / G_t (both leave-one-out), medians over the updates, per seed:")
print(f"  gradient norm  {[round(float(r), 2) for r in grad_ratio]}")
print(f"  parameter step {[round(float(r), 2) for r in step_ratio]}")
assert max(grad_ratio) < 0.7 and min(step_ratio) > 0.8

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | the loss goes down, the return does not | the loss is a surrogate, not the objective | watch returns; the loss value means nothing on its own |
# | learning is slow and erratic | whole-episode returns as weights, no baseline | reward-to-go and a baseline |
# | gradient points the wrong way | minimising $+\log\pi\cdot\Psi$ instead of $-\log\pi\cdot\Psi$ | the loss is $-\sum \log\pi(a_t|s_t)\,\Psi_t$ |
# | "unbiased" claimed for $G_t$ weights with $\gamma < 1$ | $\gamma^t$ dropped from the derivation | $\gamma^t G_t$ is the gradient of the discounted return; $G_t$ alone is a different (common) direction |
# | gradient flows into the weights | returns or baseline computed from traced values | weights are constants (`stop_gradient`) |
# | biased gradient | a "baseline" that depends on the action taken, or on the episode's own return | baselines may depend on the state and time, never on $a_t$; leave the episode out (leaving it in shrinks the gradient by about $1/N$, which Adam's step hardly notices, and reweights late steps where fewer episodes run; an action-dependent one can point it elsewhere) |
# | a learned baseline that helps little | a critic of the state alone when the return depends on time | give it the time step, or use the leave-one-out mean per time step |
# | steps of one episode leak into another | reward-to-go computed across the boundary of a vector env | one column per episode, or cut the sum at `done` |
# | collapse after solving | one noisy step too large | smaller `lr`, more episodes per batch (or PPO, lesson 10) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the best constant baseline.** For the whole-return estimator of one episode,
#    $g = S\,(G_0 - b)$ with $S = \sum_t \nabla\log\pi(a_t|s_t)$, the part of the total
#    variance that depends on a constant $b$ is $\mathbb{E}\big[|S|^2 (G_0 - b)^2\big]$. Write
#    `best_constant_baseline(sq_norms, returns)`: the $b$ that minimises its sample version, from
#    `sq_norms [N]` ($|S_i|^2$) and `returns [N]` ($G_0$ of each episode). Then compare its
#    variance with that of the plain mean baseline on the 300 CartPole episodes.
# 2. **Medium: solve the corridor by gradient ascent.** With $p = \sigma(\theta)$, write
#    `corridor_episode_gradient(went_right, p, gamma)`: one episode's estimate
#    $\sum_t \gamma^t G_t\,\partial_\theta\log\pi(a_t)$ with reward $-1$ per step. Then write
#    `corridor_ascent(gamma, sample)`: gradient ascent from $\theta = 0$; each step, draw a few
#    hundred episodes with `sample(p, n)` (it returns `went_right, mask` as `corridor_episodes`
#    from *Check it* does), move $\theta$ by `lr` times the mean of your estimate over them, and
#    record $p = \sigma(\theta)$; return the array of those $p$. The check passes a `sample` of its
#    own, at $\gamma = 0.9$, on two random streams, and sees every batch it hands out. So it can
#    check the ascent itself: each step must move $\theta$ by one constant `lr` times the mean of
#    the right estimate over that batch (a made-up run, a forgotten mask, a mean over steps
#    instead of the sum, $\gamma^t$ left out or applied twice, or $\gamma = 1$ each get their own
#    message). Whether your `lr` and number of steps are enough is judged without noise: the same
#    ascent on the exact gradient must end within 0.005 of the best $p$. Last, the mean $p$ of the
#    last quarter of your sampled run must lie within 0.08 of it (a correct ascent of 300 episodes
#    per step wandered at most 0.050 from it over 66 streams; too few episodes per step wander
#    further). In the lesson, `sample` is `lambda p, n: corridor_episodes(p, n, rng)`.
# 3. **Hard: the two directions exactly.** Write `corridor_exact_gradients(theta, gamma)`
#    returning the pair ($dJ/d\theta$, the mean of the $G_t$-weighted estimate), both from the
#    corridor's model: each is $\sum_s w(s) \sum_a \pi(a)\,\partial_\theta\log\pi(a)\,Q(s, a)$
#    with $w$ the discounted visits $\sum_t\gamma^t P(s_t = s)$ for the first and the plain
#    expected visits for the second. One linear solve each, as for $V$: the visits from the start
#    solve the *transposed* system, $(I - \gamma P_\pi)^\top w = e_{\text{start}}$ (without the
#    transpose you get the discounted visits *to* the start from each state; the corridor's
#    $P_\pi$ is symmetric, so its check cannot catch that slip: mind it on other MDPs). Compare with the sampled
#    means in *Check it*. Then find where each direction leads: at $\gamma = 0.5$, the $p$ at
#    which each is zero: `zero_of(which, gamma)`, the $p$ where direction `which` (0: $dJ/d\theta$,
#    1: the $G_t$ direction) is zero (bisect on $\theta$; both are positive for small $\theta$).
#    The check runs it at $\gamma = 0.5$ and at two discounts the lesson never prints. A sampled
#    ascent separates the two directions at $\gamma = 0.5$ only slowly (its $dJ/d\theta$ is
#    nearly flat there); the exact directions locate both zeros.
# 4. **Explain why** the leave-one-out baseline leaves the episode itself out. Choose
#    (`loo_why`):
#    - A: leaving it out lowers the variance; the gradient's mean would be the same either way;
#    - B: its own $G_t$ depends on its own action $a_t$, so a baseline that contains it is correlated with the score and shifts the gradient's mean;
#    - C: an episode's $G_t$ would be counted twice in the loss;
#    - D: with only one episode running at $t$ the mean would be 0.

# %% tags=["solution"]
def best_constant_baseline(sq_norms, returns):
    return float(np.sum(sq_norms * returns) / np.sum(sq_norms))


whole = rc.reinforce_weights(rews, mask, 0.99, reward_to_go=False, baseline=False)[0]  # G_0 per episode
S = rc.policy_gradient_estimate(linear_policy, W, obs, acts, mask.astype(float), mask, per_episode=True)
b_best = best_constant_baseline((S**2).sum(axis=1), whole)
for label, b in (("mean of G_0", whole.mean()), ("best constant", b_best)):
    print(f"baseline {label:13s} = {b:6.2f}: total variance {(S * (whole - b)[:, None]).var(axis=0).sum():8.1f}")

# %%
assert rc.exercises.check("best_constant_baseline", best_constant_baseline)

# %% tags=["solution"]
def corridor_episode_gradient(went_right, p, gamma):
    T = len(went_right)
    scores = np.where(went_right, 1 - p, -p)
    to_go = np.zeros(T)
    following = 0.0
    for t in range(T - 1, -1, -1):
        following = -1.0 + gamma * following
        to_go[t] = following
    return float(np.sum(gamma ** np.arange(T) * to_go * scores))


def corridor_ascent(gamma, sample, steps=40, episodes=300, lr=0.4):
    """Gradient ascent on theta from 0; p = sigmoid(theta) after each step."""
    theta, run = 0.0, []
    for _ in range(steps):
        p = 1 / (1 + np.exp(-theta))
        right, m = sample(p, episodes)
        theta += lr * np.mean([corridor_episode_gradient(right[m[:, i], i], p, gamma)
                               for i in range(episodes)])
        run.append(1 / (1 + np.exp(-theta)))
    return np.array(run)


best_p_09 = ps[np.argmax([corridor_value(p, 0.9) for p in ps])]
run = corridor_ascent(0.9, lambda p, n: corridor_episodes(p, n, rng))
p_learned = run[-(len(run) // 4):].mean()
print(f"best p for gamma 0.9: {best_p_09:.3f}; learned (mean p of the last quarter) {p_learned:.3f}; "
      f"no learning (p = 0.5) would be {abs(0.5 - best_p_09):.3f} away")

# %%
assert rc.exercises.check("corridor_episode_gradient", corridor_episode_gradient)
assert rc.exercises.check("corridor_learned_p", corridor_ascent)

# %% tags=["solution"]
def corridor_exact_gradients(theta, gamma):
    p = 1 / (1 + np.exp(-theta))
    P = np.zeros((3, 2, 3))  # P[s, a, s'] over the non-terminal cells; a = 0 left, 1 right
    P[0, 0, 0] = P[0, 1, 1] = 1.0
    P[1, 0, 2] = P[1, 1, 0] = 1.0
    P[2, 0, 1] = 1.0  # right from cell 2 reaches the goal
    P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
    V = np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))
    Q = -1.0 + gamma * P @ V
    inner = p * (1 - p) * (Q[:, 1] - Q[:, 0])  # (1-p)(-p) Q(s, left) + p (1-p) Q(s, right)
    start = np.eye(3)[0]
    # visits *from* the start: the transposed system (the corridor's P_pi is symmetric, so the
    # untransposed solve gives the same numbers here, and the check cannot tell them apart)
    discounted = np.linalg.solve((np.eye(3) - gamma * P_pi).T, start)
    visits = np.linalg.solve((np.eye(3) - P_pi).T, start)
    return float(discounted @ inner), float(visits @ inner)


exact_true, exact_gt = corridor_exact_gradients(THETA, CORRIDOR_GAMMA)
print(f"exact dJ/dtheta {exact_true:.3f} (finite difference {true_grad:.3f}); "
      f"exact mean of the G_t estimate {exact_gt:.3f}")


def zero_of(which, gamma):
    lo, hi = -4.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if corridor_exact_gradients(mid, gamma)[which] > 0 else (lo, mid)
    return 1 / (1 + np.exp(-lo))


for disc in (0.9, 0.5):
    print(f"gamma {disc}: dJ/dtheta is zero at p = {zero_of(0, disc):.3f}, "
          f"the G_t direction at p = {zero_of(1, disc):.3f}")

# %%
assert rc.exercises.check("corridor_exact_gradients", corridor_exact_gradients)
assert rc.exercises.check("corridor_fixed_points", zero_of)

# %% tags=["solution"]
loo_why = "B"

# %%
assert rc.exercises.check("leave_one_out_why", loo_why)

# %% [markdown]
# **After exercise 1.** $b^* = \sum_i |S_i|^2 G_{0,i} / \sum_i |S_i|^2$ equals the plain mean when
# $|S|^2$ and $G_0$ are uncorrelated: $b^* - \bar G_0 = \mathrm{cov}(|S|^2, G_0) / \overline{|S|^2}$,
# with the covariance taken with $1/N$ like the means (`np.cov(..., bias=True)`; plain `np.cov`
# divides by $N - 1$). That
# is the point of Greensmith et al.: the variance-optimal constant moves away from the mean
# only as far as the score's size and the return move together. How far is that? The same
# 300-episode comparison on twelve more draws:

# %%
correlations, gains = [], []
for draw in range(1, 13):
    d_obs, d_acts, d_rews, d_mask, _ = rc.collect_episodes(rc.CartPole(n=300, seed=SEED + draw), linear_policy,
                                                           W, np.random.default_rng(SEED + draw))
    d_whole = rc.reinforce_weights(d_rews, d_mask, 0.99, reward_to_go=False, baseline=False)[0]
    d_S = rc.policy_gradient_estimate(linear_policy, W, d_obs, d_acts, d_mask.astype(float), d_mask,
                                      per_episode=True)
    d_sq = (d_S**2).sum(axis=1)
    b_draw = np.sum(d_sq * d_whole) / np.sum(d_sq)  # b*, as above
    var_mean, var_best = ((d_S * (d_whole - b)[:, None]).var(axis=0).sum() for b in (d_whole.mean(), b_draw))
    correlations.append(np.corrcoef(d_sq, d_whole)[0, 1])
    gains.append(var_mean / var_best)
    print(f"draw {draw}: corr(|S|^2, G_0) {correlations[-1]:5.2f}; mean of G_0 {d_whole.mean():5.1f}, "
          f"b* {b_draw:5.1f}; variance with the mean / with b* {gains[-1]:.3f}")
print(f"largest gain {max(gains):.3f}, at the largest |correlation| {max(np.abs(correlations)):.2f}")
assert np.argmax(np.abs(correlations)) == np.argmax(gains) and max(gains) < 1.10

# %% [markdown]
# On these draws the gain is at most about 6% (the largest is printed; below 10% asserted), and
# it is largest where the correlation is (asserted): the formula above says a draw whose long episodes also carry large scores
# would move $b^*$, and gain, more.

# %% [markdown]
# How large is the harm of leaving the episode *in*? Where $n_t$ episodes are still running at
# $t$, $G_i - \frac1{n_t}\sum_j G_j = \frac{n_t-1}{n_t}\big(G_i - \frac1{n_t-1}\sum_{j \ne i} G_j\big)$:
# the self-including mean scales the leave-one-out weight by $(n_t-1)/n_t$. The direction of each
# step's term is unchanged; the gradient shrinks by about $1/N$ where all $N$ episodes run, and
# less at late $t$ where fewer do, so late steps are reweighted a little. A biased estimate, but
# a mild one. On the 300 CartPole episodes of *Check it*, against the reference's leave-one-out
# weights:

# %%
G_t = rc.reinforce_weights(rews, mask, 0.99, baseline=False)
running_t = mask.sum(axis=1, keepdims=True)  # episodes still running at each t
with_self = np.where(mask, G_t - (G_t * mask).sum(axis=1, keepdims=True) / np.maximum(running_t, 1), 0.0)
left_out = rc.reinforce_weights(rews, mask, 0.99, baseline=True)
several = mask & (running_t >= 2)
factor = ((running_t - 1) / np.maximum(running_t, 1) * np.ones_like(G_t))[several]
print(f"self-included / leave-one-out weight = (n_t - 1) / n_t, from {factor.min():.3f} (few episodes "
      f"left) to {factor.max():.4f} (all 300); steps with fewer than 300 running: "
      f"{np.mean(running_t[:, 0][running_t[:, 0] > 0] < 300):.0%} of the time steps")
assert np.allclose(with_self[several], factor * left_out[several])

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | policy gradient | "train the policy directly" | $\nabla_\theta J = \mathbb{E}[\sum_t \nabla\log\pi_\theta(a_t|s_t)\,\Psi_t]$ for a weight $\Psi_t$ that keeps the mean |
# | likelihood-ratio identity | "the REINFORCE trick", "log-derivative trick" | $\nabla p = p\,\nabla\log p$: turns the gradient of an expectation into an expectation |
# | policy-gradient theorem | "the gradient formula" | $\nabla J = \sum_s d_\gamma(s)\sum_a \nabla\pi(a|s)\,Q^\pi(s,a)$, with $d_\gamma$ the discounted visits |
# | score function | "grad log-prob" | $\nabla_\theta\log\pi_\theta(a|s)$; for softmax logits $e_a - \pi$; mean 0 under $\pi$ |
# | reward-to-go | "causality" | weight step $t$ by the rewards from $t$ on: $\gamma^t G_t$ for the discounted objective; $G_t$ alone drops the $\gamma^t$ |
# | baseline | "subtract the average" | any $b(s_t, t)$ subtracted from the return; keeps the mean because the score has mean 0 |
# | leave-one-out baseline | "the batch mean" | the mean of the *other* episodes' weights at the same $t$; independent of the episode's own actions |
# | critic | "a value baseline" | a learned $V_\phi(s)$ subtracted from $G_t$; unbiased if fitted on other data than the step it weights |
# | surrogate loss | "the REINFORCE loss" | $-\sum \log\pi\,\Psi / N$: its gradient is *minus* the estimate (you minimise it); its value is not $J$ |
# | on-policy | "fresh data every update" | the estimate is only valid for episodes from the current policy |

# %% [markdown]
# ## Further reading
#
# - Williams (1992), *Simple statistical gradient-following algorithms for connectionist
#   reinforcement learning*, Machine Learning: REINFORCE and baselines.
# - Sutton, McAllester, Singh & Mansour (2000), *Policy Gradient Methods for Reinforcement
#   Learning with Function Approximation*, NeurIPS: the policy-gradient theorem.
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 13: the
#   short corridor (Example 13.1), REINFORCE with its $\gamma^t$ (section 13.3) and with a
#   baseline (13.4).
# - Nota & Thomas (2020), *Is the Policy Gradient a Gradient?*, AAMAS: the $\gamma^t$ that most
#   implementations drop, and what the resulting direction is.
# - Greensmith, Bartlett & Baxter (2004), *Variance Reduction Techniques for Gradient Estimates
#   in Reinforcement Learning*, JMLR: which baselines minimise variance (exercise 1).
# - OpenAI Spinning Up, *Part 3: Intro to Policy Optimization*: reward-to-go and baselines
#   derived step by step.
