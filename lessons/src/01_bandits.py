# %% [markdown]
# # 01 · Bandits — exploration vs exploitation
#
# *Prerequisites:* 00
# *Time:* 50 minutes
# *You will build:* sample-average estimates, epsilon-greedy with random tie-breaking, UCB scores, the gradient-bandit update and cumulative regret, then run them on 2000 bandit problems at once, over 5000 steps and on arms that drift.

# %% [markdown]
# A bandit is reinforcement learning with the states taken away: one situation, repeated, and
# a choice among $k$ actions ("arms") whose rewards are random. There is no future to plan for,
# yet the central tension of the whole field is already here: to collect reward you must pick
# the arm you believe is best, and to find out which arm is best you must sometimes pick the
# others.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

ARMS, RUNS, STEPS = 10, 2000, 1000
plt.rcParams.update({"font.size": 10, "legend.fontsize": 9, "figure.dpi": 100})


def mean_se(x, axis=0):
    """Mean and standard error over independent runs (axis 0 of per-run numbers)."""
    x = np.asarray(x, dtype=float)
    return x.mean(axis), x.std(axis, ddof=1) / np.sqrt(x.shape[axis])


# %% [markdown]
# ## The problem
#
# `rc.Bandit(arms, n)` holds `n` independent 10-armed problems (Sutton & Barto's testbed): each
# arm's mean reward $q_*(a)$ is drawn from $N(0, 1)$ once, and pulling the arm pays $q_*(a)$
# plus $N(0, 1)$ noise. One run is mostly luck, so every number below is an average over many
# independent problems, with its standard error (SE) across them.
#
# The obvious strategy is *greedy*: estimate each arm's value by the average of the rewards it
# paid (starting from 0), and always pull the arm with the highest estimate, breaking ties at
# random. Here it is on 2000 problems for 1000 steps:

# %%
env = rc.Bandit(ARMS, n=RUNS)
greedy_agent = rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.0)
greedy = rc.run_bandit(env, greedy_agent, STEPS, seed=SEED)
late = slice(STEPS - 100, STEPS)
m, se = mean_se(greedy.optimal[late].mean(axis=0))
print(f"greedy, last 100 steps: optimal arm pulled {100 * m:.1f}% +- {100 * se:.1f}% of the time")
tried = np.array([np.unique(greedy.actions[:, i]).size for i in range(RUNS)])
found = (greedy.actions == env.optimal_arm).any(axis=0)
kept = greedy.actions[-1] == env.optimal_arm
print(f"arms greedy ever pulled: median {np.median(tried):.0f} of {ARMS} (range {tried.min()}-{tried.max()})")
never, dropped = ~found, found & ~kept
settled_Q = greedy_agent.Q[np.arange(RUNS), greedy.actions[-1]]  # estimate of the arm it ended on
print(f"runs that never pulled the optimal arm: {100 * never.mean():.1f}%; in "
      f"{100 * (settled_Q[never] > 0).mean():.1f}% of them the arm greedy ended on has an estimate "
      f"above 0, the estimate every untried arm keeps")
print(f"runs that pulled the optimal arm and then dropped it for good: {100 * dropped.mean():.1f}%")
switched = (greedy.actions[200:] != greedy.actions[199]).any(axis=0)
print(f"runs whose greedy arm changed at all after step 200: {100 * switched.mean():.1f}%")
assert never.mean() > 5 * dropped.mean() and (settled_Q[never] > 0).mean() > 0.95

# %% [markdown]
# Greedy finds the optimal arm in only about a third of the problems (Sutton & Barto's figure
# 2.2 shows the same). Look at why, in the counts above. Most runs never pull the optimal arm
# even once: every untried arm keeps its starting estimate of 0, and as soon as greedy pulls
# an arm whose average is positive, that arm beats all the untried ones, for ever (its
# average stays above 0 in nearly every such run, as printed). Greedy only moves on from an
# arm when that arm's average falls below another estimate, which is how it tries a couple of
# arms early on. A second, rarer way to fail: the optimal arm is tried, its first rewards
# happen to be low, its estimate falls below the others, and it is never pulled again, so the
# estimate is never corrected (only pulling an arm produces data about it). Within a couple of
# hundred steps the choice has frozen in almost every run, and more steps do not help (you
# will see that over 5000 steps below).

# %% [markdown]
# ## The idea
#
# Keep an estimate $Q(a)$ of each arm's value, the **sample average** of its rewards, updated
# incrementally when the arm is pulled for the $N(a)$-th time and pays $r$:
#
# $$Q(a) \leftarrow Q(a) + \frac{1}{N(a)}\big(r - Q(a)\big).$$
#
# Then spend some pulls on arms that *might* be better. Four ways:
#
# - **$\varepsilon$-greedy**: with probability $\varepsilon$ pull a uniformly random arm (the
#   greedy one included), otherwise the greedy one. It explores at the same rate forever.
# - **Optimistic initial values**: start every $Q(a)$ far above any plausible reward (say 5).
#   Every pull disappoints, so the greedy choice rotates through all arms early on.
# - **Upper confidence bound (UCB)**: at step $t$ (counting from 1) pull the arm whose value
#   *could* be highest,
#   $$A_t = \arg\max_a \Big[ Q(a) + c\sqrt{\frac{\ln t}{N(a)}} \Big],$$
#   untried arms first. The bonus shrinks as an arm is pulled and grows slowly for arms left
#   alone, so exploration goes to the arms you know least about.
# - **Gradient bandit**: learn preferences $H(a)$ and act by $\pi = \mathrm{softmax}(H)$. After
#   pulling $A$ and receiving $r$, with baseline $\bar r$ (the average reward so far):
#   $$H(a) \leftarrow H(a) + \alpha (r - \bar r)\big(\mathbb 1[a = A] - \pi(a)\big).$$
#   This is stochastic gradient ascent on the expected reward, the same score-function
#   gradient that policy gradients (lesson 08) use. The baseline does not bias it; without one,
#   every positive reward pushes the chosen arm up.
#
# How to score a method: the **regret** after $T$ steps is the reward lost against always
# pulling the best arm, $L_T = \sum_{t=1}^{T} \big(\max_a q_*(a) - q_*(A_t)\big)$, computed
# from the true means, so the reward noise does not enter it. A method that keeps exploring at
# a fixed rate loses about the same amount every step: its regret grows *linearly* in $T$.
# UCB's exploration fades as the estimates firm up. Auer et al. (2002) prove that for rewards
# in $[0, 1]$ and the bonus $\sqrt{2 \ln t / N}$ its expected regret grows at most
# *logarithmically* in $T$; the same holds, with other constants, for Gaussian-like
# (1-sub-Gaussian) rewards such as this lesson's (Lattimore & Szepesvári, chapter 7), and Lai &
# Robbins (1985) showed that no method can do better than logarithmic on every problem. These
# are statements about long horizons: with gaps between arms as small as here, the log form
# takes many thousands of steps to show (you will measure how far 5000 steps get).
#
# When the arms **drift** (their means change over time), an average over the whole past
# goes stale. A constant step size $\alpha$, $Q \leftarrow Q + \alpha (r - Q)$, keeps moving
# the estimate a fixed fraction of the way towards each new reward, so old rewards fade
# geometrically (exercise 1 works out their weights): the recent past counts most.

# %% [markdown]
# ## Build it
#
# Five small steps, each a function you write and check. Every array has a leading axis of
# copies where that helps: `Q` of `n` problems is `[n, arms]`, and one step picks `n` actions
# with a handful of array operations, no loop over copies.
#
# **Step 1: the sample average.** One bandit: the estimates `Q [arms]` and counts `N [arms]`
# after pulling `action` and receiving `reward`. Return new arrays (copy the inputs; the caller
# may still need the old ones, and the check fails an answer that changes them in place).

# %% tags=["solution"]
def my_sample_average_update(Q, N, action, reward):
    """New (Q, N) after one pull of ``action`` that paid ``reward``."""
    Q, N = np.array(Q, dtype=float), np.array(N)
    N[action] += 1
    Q[action] += (reward - Q[action]) / N[action]
    return Q, N


# %%
assert rc.exercises.check("sample_average_update", my_sample_average_update)

# %% [markdown]
# **Step 2: epsilon-greedy actions** for `n` problems at once: `Q [n, arms]` in, actions `[n]`
# out, each copy flipping its own coin. Break greedy ties at random: with `np.argmax` the
# lowest-index arm would win every tie, and at the start all estimates are tied. The check
# draws 20,000 actions per case and compares how often each arm comes up with the exact
# probabilities, so any correct use of `rng` passes.

# %% tags=["solution"]
def my_epsilon_greedy(Q, epsilon, rng):
    """Actions [n] for estimates Q [n, arms]: explore with probability epsilon, else greedy."""
    n, arms = Q.shape
    is_best = Q == Q.max(axis=1, keepdims=True)
    greedy_arm = np.argmax(rng.random(Q.shape) * is_best, axis=1)  # random among the tied
    explore = rng.random(n) < epsilon
    return np.where(explore, rng.integers(arms, size=n), greedy_arm)


# %%
assert rc.exercises.check("epsilon_greedy_actions", my_epsilon_greedy)

# %% [markdown]
# **Step 3: UCB scores** for `Q` and `N` of shape `[arms]` or `[n, arms]` at step `t`:
# $Q + c\sqrt{\ln t / N}$, and $+\infty$ for arms with $N = 0$ (without dividing by zero:
# the check runs your function with numpy's division warnings turned into errors, and
# includes the very first step, $t = 1$, where $\ln t / 0$ is $0/0$).

# %% tags=["solution"]
def my_ucb_scores(Q, N, t, c):
    """UCB scores, +inf for untried arms."""
    tried = N > 0
    bonus = c * np.sqrt(np.log(t) / np.where(tried, N, 1))  # N = 1 only to avoid 0-division
    return np.where(tried, Q + bonus, np.inf)


# %%
assert rc.exercises.check("ucb_scores", my_ucb_scores)

# %% [markdown]
# **Step 4: the gradient-bandit update** of one bandit's preferences `H [arms]`: return the
# new preferences and leave `H` as it was. Compute the softmax so that large preferences
# cannot overflow.

# %% tags=["solution"]
def my_gradient_bandit_update(H, action, reward, baseline, alpha):
    """New preferences after pulling ``action`` and receiving ``reward``."""
    H = np.asarray(H, dtype=float)
    pi = np.exp(H - H.max())
    pi /= pi.sum()
    onehot = np.eye(H.size)[action]
    return H + alpha * (reward - baseline) * (onehot - pi)


# %%
assert rc.exercises.check("gradient_bandit_update", my_gradient_bandit_update)

# %% [markdown]
# **Step 5: cumulative regret.** Given the true means `means [n, arms]` of `n` problems and the
# arms pulled, `actions [steps, n]`, return each run's regret so far, `[steps, n]`.

# %% tags=["solution"]
def my_cumulative_regret(means, actions):
    """Cumulative expected regret [steps, n]."""
    chosen = means[np.arange(means.shape[0]), actions]  # mean of the arm pulled, [steps, n]
    return np.cumsum(means.max(axis=1) - chosen, axis=0)


# %%
assert rc.exercises.check("cumulative_regret", my_cumulative_regret)

# %% [markdown]
# The reference agents in `rlcourse` hold the same lines, vectorised over copies. Here is
# epsilon-greedy's choice and update (`_random_argmax` is your step 2's tie-breaking, drawing
# random numbers only for the rows that hold a tie):

# %%
print(inspect.getsource(rc.EpsilonGreedy.act))
print(inspect.getsource(rc.EpsilonGreedy._apply))

# %% [markdown]
# ## Check it
#
# The invariants of these agents, asserted on the reference: the sample averages equal the
# mean reward of each arm; UCB, and greedy with optimistic estimates, pull every arm exactly
# once in their first 10 steps; the gradient bandit's preferences keep summing to zero (they
# only move relative to each other); one update of the agent follows the formula; with or
# without a baseline its expected update (computed exactly, from the agent's own updates)
# equals the gradient of the expected reward, and the baseline makes the agent blind to a
# constant added to every reward; the regret that `run_bandit` records agrees with the environment's own count;
# and a run is determined by its seed.

# %%
probe = rc.Bandit(ARMS, n=50, seed=3)
agent = rc.EpsilonGreedy(ARMS, n=50, epsilon=0.3)
pulls, paid = [], []
for _ in range(200):
    a = agent.act(rng)
    r = probe.step(a)
    agent.update(a, r)
    pulls.append(a)
    paid.append(r)
pulls, paid = np.array(pulls), np.array(paid)
for i in range(50):
    for arm in np.unique(pulls[:, i]):
        assert np.isclose(agent.Q[i, arm], paid[pulls[:, i] == arm, i].mean())
print("epsilon-greedy's Q is each arm's mean reward, in all 50 problems")

ucb = rc.run_bandit(rc.Bandit(ARMS, n=50), rc.UCB(ARMS, n=50, c=2.0), ARMS, seed=3)
assert all(sorted(ucb.actions[:, i]) == list(range(ARMS)) for i in range(50))
print("UCB's first 10 pulls are the 10 arms, in all 50 problems")
hopeful = rc.EpsilonGreedy(ARMS, n=50, epsilon=0.0, initial=5.0, step_size=0.1)
optimist = rc.run_bandit(rc.Bandit(ARMS, n=50), hopeful, ARMS, seed=3)
assert all(sorted(optimist.actions[:, i]) == list(range(ARMS)) for i in range(50))
print("greedy with optimistic estimates (Q0 = 5) also pulls the 10 arms first, in all 50")

gradient = rc.GradientBandit(ARMS, n=50, alpha=0.1)
for _ in range(100):
    a = gradient.act(rng)
    gradient.update(a, probe.step(a))
assert np.allclose(gradient.H.sum(axis=1), 0.0)
print("gradient bandit: the preferences of every problem still sum to 0")

# One update of the agent against the formula H + alpha (r - baseline) (1[a = A] - pi).
before_H, before_pi = gradient.H[0].copy(), gradient.probs[0].copy()
before_b = gradient.average_reward[0]  # the average of the rewards before this one
pulled = np.zeros(50, dtype=int) + 3
gradient.update(pulled, np.full(50, 2.0))
by_formula = before_H + 0.1 * (2.0 - before_b) * (np.eye(ARMS)[3] - before_pi)
assert np.allclose(gradient.H[0], by_formula)
print("one update of rc.GradientBandit equals H + alpha (r - baseline) (1[a = A] - pi)")

H, q = rng.normal(size=ARMS), rng.normal(size=ARMS)  # some preferences, some true means
pi = np.exp(H - H.max()) / np.exp(H - H.max()).sum()


def agent_update_moments(b):
    """Mean and total variance of one update of rc.GradientBandit (per unit alpha) from H, with
    baseline b, exactly: the arm A is drawn from pi and its reward is q[A] + noise. The update
    is linear in the reward, so noise of +1 or -1 with equal chance (mean 0, variance 1, like
    N(0, 1)) gives the exact first and second moments: one agent copy per (arm, sign)."""
    agent = rc.GradientBandit(ARMS, n=2 * ARMS, alpha=1.0)
    agent.H[:] = H
    agent.t, agent.average_reward[:] = 1, b  # as if one reward had set the baseline to b
    arms = np.tile(np.arange(ARMS), 2)
    agent.update(arms, q[arms] + np.repeat([1.0, -1.0], ARMS))
    updates, weight = agent.H - H, np.tile(pi, 2) / 2  # [2 * ARMS, ARMS], and their probabilities
    mean = weight @ updates
    return mean, weight @ (updates ** 2).sum(axis=1) - mean @ mean


def policy_value(H):
    """J(H) = sum_a softmax(H)_a q_a, the expected reward of the softmax policy."""
    p = np.exp(H - H.max())
    return p @ q / p.sum()


numerical = np.array([(policy_value(H + 1e-6 * e) - policy_value(H - 1e-6 * e)) / 2e-6
                      for e in np.eye(ARMS)])
spread = {}
for b in (0.0, 3.0):
    expected_update, spread[b] = agent_update_moments(b)
    print(f"baseline {b}: the agent's expected update {np.round(expected_update, 3) + 0.0}, "
          f"total variance {spread[b]:.3f}")
    assert np.allclose(expected_update, numerical, atol=1e-8)
assert spread[3.0] > spread[0.0]
print("with either baseline the agent's expected update is the gradient dJ/dH (central "
      "differences); the baseline changes only its variance")

plain = rc.run_bandit(rc.Bandit(ARMS, n=200), rc.GradientBandit(ARMS, 200), 300, seed=5)
shifted = rc.run_bandit(rc.Bandit(ARMS, n=200, mean=4.0), rc.GradientBandit(ARMS, 200), 300, seed=5)
assert np.array_equal(plain.actions, shifted.actions)
print("gradient bandit with baseline: the same 300 x 200 actions with every mean raised by 4")

regret_env = rc.Bandit(ARMS, n=RUNS)
run = rc.run_bandit(regret_env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.1), 50, seed=7)
assert np.allclose(run.regret.sum(axis=0), regret_env.regret) and (run.regret >= 0).all()
again = rc.run_bandit(regret_env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.1), 50, seed=7)
assert np.array_equal(again.rewards, run.rewards)
print("recorded regret = the environment's own; the same seed gives the same run, bit for bit")

# %% [markdown]
# ## Use it
#
# **The testbed.** 2000 problems, 1000 steps, every method with Sutton & Barto's settings.
# `rc.run_bandit` re-seeds the problems, so every agent faces the same 2000 bandits. The
# optimistic agent uses a constant step size of 0.1 (as in their figure 2.3), so its optimism
# fades geometrically with the pulls of each arm rather than vanishing at the first. To see
# what the gradient bandit's baseline is for, one more agent runs *without* a baseline on the
# same problems with every mean raised by 4, so nearly every reward is positive (with its
# baseline the agent cannot tell the difference, as Check it showed).

# %%
agents = {
    "greedy": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.0)),
    "eps = 0.01": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.01)),
    "eps = 0.1": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.1)),
    "optimistic Q0 = 5": (env, rc.EpsilonGreedy(ARMS, RUNS, 0.0, initial=5.0, step_size=0.1)),
    "UCB c = 2": (env, rc.UCB(ARMS, RUNS, c=2.0)),
    "gradient a = 0.1": (env, rc.GradientBandit(ARMS, RUNS, alpha=0.1)),
    "gradient, no baseline, +4": (rc.Bandit(ARMS, RUNS, mean=4.0),
                                  rc.GradientBandit(ARMS, RUNS, alpha=0.1, baseline=False)),
}
results = {name: rc.run_bandit(e, a, STEPS, seed=SEED) for name, (e, a) in agents.items()}
print(f"{'method':26s} {'% optimal, last 100':>22s} {'regret after 1000':>20s}")
for name, res in results.items():
    opt, opt_se = mean_se(100 * res.optimal[late].mean(axis=0))
    reg, reg_se = mean_se(res.regret.sum(axis=0))
    print(f"{name:26s} {opt:15.1f} +- {opt_se:3.1f} {reg:13.1f} +- {reg_se:4.1f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
for name, res in results.items():
    if "no baseline" in name:
        continue
    axes[0].plot(res.rewards.mean(axis=1), label=name, lw=1)
    axes[1].plot(100 * res.optimal.mean(axis=1), label=name, lw=1)
axes[0].set(xlabel="step", ylabel="average reward", title="Some exploration beats none")
axes[1].set(xlabel="step", ylabel="% runs on the optimal arm",
            title="Greedy stays near a third")
fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center")
plt.show()

# %% [markdown]
# Greedy ends on the optimal arm in about a third of the problems, every exploring method in
# far more. The differences, paired over the same 2000 problems, with their SE:

# %%
def late_optimal(name):
    """Per-run fraction of the last 100 steps spent on the optimal arm [RUNS]."""
    return results[name].optimal[late].mean(axis=0)


def total_regret(name):
    """Per-run regret after the 1000 steps [RUNS]."""
    return results[name].regret.sum(axis=0)


def gap(metric, a, b, scale=1.0):
    """Paired difference metric(a) - metric(b) over the same problems: mean and SE, printed."""
    m, se = mean_se(scale * (metric(a) - metric(b)))
    print(f"  {a} - {b}: {m:+.1f} +- {se:.1f}")
    return m, se


print("% optimal, last 100 steps:")
for a, b in [("eps = 0.1", "greedy"), ("UCB c = 2", "eps = 0.1"), ("optimistic Q0 = 5", "eps = 0.1"),
             ("gradient a = 0.1", "eps = 0.1"), ("gradient a = 0.1", "gradient, no baseline, +4")]:
    m, se = gap(late_optimal, a, b, 100)
    assert m > 3 * se, (a, b)
ties = [gap(late_optimal, a, b, 100) for a, b in [("UCB c = 2", "optimistic Q0 = 5"),
                                                  ("UCB c = 2", "gradient a = 0.1")]]
print("regret after 1000 steps:")
ordered = [gap(total_regret, a, b) for a, b in [("UCB c = 2", "gradient a = 0.1"),
                                                 ("gradient a = 0.1", "eps = 0.1")]]
close, _ = gap(total_regret, "optimistic Q0 = 5", "eps = 0.1")
assert all(m < -3 * se for m, se in ordered)
assert abs(close) < 0.1 * total_regret("eps = 0.1").mean()
assert all(abs(m) < 3.0 for m, _ in ties) and late_optimal("greedy").mean() < 0.45
for name in ("optimistic Q0 = 5", "eps = 0.1"):
    early, later = results[name].regret[:100].sum(axis=0), results[name].regret[-100:].sum(axis=0)
    print(f"{name}: regret in steps 1-100 {early.mean():.1f}, in steps 901-1000 {later.mean():.1f}")
print("gradient without baseline (+4) against greedy and eps = 0.01:")
above, above_se = gap(late_optimal, "gradient, no baseline, +4", "greedy", 100)
below, below_se = gap(late_optimal, "gradient, no baseline, +4", "eps = 0.01", 100)
assert above > 3 * above_se and below < -3 * below_se

# %% [markdown]
# In the share of late steps on the optimal arm, UCB, the optimistic start and the gradient
# bandit end within a few points of each other, gaps of the size of their SE that this
# experiment cannot resolve; all three are several points above $\varepsilon = 0.1$. Regret,
# which counts every step from the first, separates them: UCB loses least, then the gradient
# bandit, then $\varepsilon = 0.1$; optimism ends within 10% of $\varepsilon = 0.1$'s regret:
# its sweep through all ten disappointing arms costs it far more than $\varepsilon = 0.1$ loses
# in the first 100 steps, and it wins that back only slowly afterwards (printed above). Which
# method is "best" depends on the horizon and on each one's parameter (Sutton & Barto's figure
# 2.6 sweeps them). The baseline matters most of all here: without it, on rewards of about +4,
# the gradient bandit ends between greedy and $\varepsilon = 0.01$.

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
for name in ("gradient a = 0.1", "gradient, no baseline, +4"):
    ax.plot(100 * results[name].optimal.mean(axis=1), lw=1,
            label=name.replace("a = 0.1", "with baseline (same on +4)"))
ax.set(xlabel="step", ylabel="% runs on the optimal arm",
       title="Without a baseline, rewards of about +4 slow the gradient bandit down")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# **A long run.** Does $\varepsilon = 0.01$, slower to find the best arm, overtake
# $\varepsilon = 0.1$ later? Does greedy improve with more steps? Run 5000 steps on 300
# new problems, in three groups of 100 so that you can see how much the answer varies. The
# curves show the *expected* reward of the arm pulled, $q_*(A_t)$, which leaves out the reward
# noise, averaged over a sliding window of 500 steps.

# %%
LONG, LONG_RUNS, WINDOW = 5000, 300, 500
long_env = rc.Bandit(ARMS, n=LONG_RUNS)
long_agents = {"greedy": rc.EpsilonGreedy(ARMS, LONG_RUNS, epsilon=0.0),
               "eps = 0.01": rc.EpsilonGreedy(ARMS, LONG_RUNS, epsilon=0.01),
               "eps = 0.1": rc.EpsilonGreedy(ARMS, LONG_RUNS, epsilon=0.1),
               "UCB c = 2": rc.UCB(ARMS, LONG_RUNS, c=2.0)}
long = {name: rc.run_bandit(long_env, a, LONG, seed=SEED + 1) for name, a in long_agents.items()}
best_mean = long_env.means.max(axis=1)
groups = np.array_split(np.arange(LONG_RUNS), 3)


def window_mean(x):
    """Sliding-window mean over steps of x [steps]; entry j covers steps j .. j + WINDOW - 1."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    return (c[WINDOW:] - c[:-WINDOW]) / WINDOW


def expected_reward(name, runs=slice(None)):
    """Mean over the runs of q*(A_t), smoothed over the window [steps - WINDOW + 1]."""
    return window_mean((best_mean - long[name].regret)[:, runs].mean(axis=1))


crossings = []
for g in groups:
    ahead = expected_reward("eps = 0.01", g) > expected_reward("eps = 0.1", g)
    from_here = np.flatnonzero(~ahead)[-1] + 1  # ahead from this window to the end
    crossings.append(from_here + WINDOW)  # the window's last step
print("eps = 0.01 stays ahead of eps = 0.1 from step", [int(c) for c in crossings],
      "(three groups of 100 runs)")
for name in long:
    final, final_se = mean_se((best_mean - long[name].regret)[-1000:].mean(axis=0))
    print(f"{name:10s} expected reward, last 1000 steps: {final:.3f} +- {final_se:.3f}")
g_opt = long["greedy"].optimal
print(f"greedy on the optimal arm: steps 901-1000 {100 * g_opt[900:1000].mean():.1f}%, "
      f"steps {LONG - 99}-{LONG} {100 * g_opt[-100:].mean():.1f}%; runs whose arm changed after "
      f"step 1000: {(long['greedy'].actions[1000:] != long['greedy'].actions[999]).any(axis=0).sum()}")
assert all(1000 < c < 4000 for c in crossings)
assert (long["greedy"].actions[1000:] != long["greedy"].actions[999]).any(axis=0).sum() <= 3
assert np.isclose(g_opt[900:1000].mean(), g_opt[-100:].mean(), atol=0.02)

# %% [markdown]
# Why does the small $\varepsilon$ win in the end? Once both have found the best arm, an
# $\varepsilon$-greedy agent still pulls a uniformly random arm on a fraction $\varepsilon$ of
# the steps. On this testbed that caps its long-run expected reward at
# $(1-\varepsilon)\,\mathbb E[\max_a q_*(a)] + \varepsilon\, \mathbb E[\text{mean}_a\, q_*(a)]$:

# %%
for eps in (0.01, 0.1):
    cap = (1 - eps) * best_mean.mean() + eps * long_env.means.mean()
    print(f"eps = {eps}: ceiling {cap:.3f}")

# %% [markdown]
# $\varepsilon = 0.1$ sits close to its ceiling by the end, while $\varepsilon = 0.01$ has a
# higher ceiling but takes longer to get near it. Now the regret of the same runs, on log-log
# axes. A straight line of slope 1 there is linear growth, a fixed loss per step; a curve that
# flattens is growth slower than any power of $t$.

# %%
def regret_slope(name, runs=slice(None)):
    """Growth exponent of the mean cumulative regret over the last decade, steps 500 to 5000."""
    total = long[name].regret[:, runs].mean(axis=1).cumsum()
    return np.log10(total[-1] / total[LONG // 10 - 1])


for name in long:
    per_group = [regret_slope(name, g) for g in groups]
    print(f"{name:10s} regret grows like t^{regret_slope(name):.2f} from step 500 to 5000 "
          f"(groups: {', '.join(f'{s:.2f}' for s in per_group)})")
loss = long["eps = 0.1"].regret[-1000:].mean()
predicted = 0.1 * (best_mean.mean() - long_env.means.mean())
print(f"eps = 0.1 loses {loss:.3f} per step over the last 1000 steps; "
      f"eps x (mean best - mean arm) = {predicted:.3f}")
assert all(regret_slope("greedy", g) > 0.95 for g in groups)
assert all(regret_slope("UCB c = 2", g) < 0.5 for g in groups)
assert abs(loss - predicted) < 0.1 * predicted

# %%
steps = np.arange(1, LONG + 1)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
for name in ("greedy", "eps = 0.01", "eps = 0.1"):
    axes[0].plot(np.arange(WINDOW, LONG + 1), expected_reward(name), lw=1.2, label=name)
for c in crossings:
    axes[0].axvline(c, color="grey", lw=0.8, ls=":")
axes[0].set(xlabel="step (end of the 500-step window)", ylabel="expected reward of arm pulled",
            title="eps = 0.01 overtakes eps = 0.1 (dotted: 3 groups)")
for name in long:
    total = long[name].regret.cumsum(axis=0)
    mean, se = mean_se(total, axis=1)
    axes[1].loglog(steps, mean, lw=1.2, label=name)
    axes[1].fill_between(steps, mean - 2 * se, mean + 2 * se, alpha=0.25)
axes[1].loglog(steps, 0.15 * steps, "k--", lw=0.8, label="slope 1 (linear)")
axes[1].set(xlabel="step t", ylabel="cumulative regret (mean +- 2 SE)",
            title="Greedy's regret is linear; UCB's bends over")
axes[0].legend(loc="center right")
axes[1].legend(loc="upper left")
plt.show()

# %% [markdown]
# Greedy's curve is flat from step 1000 on (the runs whose arm changed are counted above) and
# its regret is a line of slope 1: it loses the same amount every step, for ever. A fixed
# $\varepsilon$ ends the same way at a lower level: once $\varepsilon = 0.1$ has found the
# best arm it loses $\varepsilon$ times the average gap on every step, which is what it loses
# over the last 1000 steps; its growth exponent, still below 1 here, climbs towards 1. With
# $\varepsilon = 0.01$ that linear phase starts later and at a tenth of the rate. UCB's regret
# bends over: its exponent over the last decade is far below 1, so over this horizon its
# regret is *sublinear*, far below greedy's and $\varepsilon$-greedy's.
#
# Is it already the *logarithmic* growth of the theory? A log law, $a + b \ln t$, gains the
# same amount each time $t$ doubles, and on an axis of $\ln t$ it is a straight line. Count
# UCB's gain per doubling, and draw its regret against $\ln t$:

# %%
ucb_total = long["UCB c = 2"].regret.cumsum(axis=0)  # [steps, runs]
doubling = [625, 1250, 2500, 5000]
gains = [mean_se(ucb_total[b - 1] - ucb_total[a - 1]) for a, b in zip(doubling, doubling[1:])]
print("UCB's regret gained per doubling of t (mean +- SE over 300 runs):")
for (a, b), (m, se) in zip(zip(doubling, doubling[1:]), gains):
    print(f"  t = {a:4d} -> {b:4d}: {m:5.1f} +- {se:.1f}")
growth, growth_se = mean_se((ucb_total[4999] - ucb_total[2499]) - (ucb_total[1249] - ucb_total[624]))
print(f"last doubling's gain minus the first's, paired over the runs: {growth:+.1f} +- {growth_se:.1f}")
assert growth > 2 * growth_se

# %%
mean, se = mean_se(ucb_total, axis=1)
fit = slice(99, 1000)  # a log law fitted to steps 100-1000, then extended
b_log, a_log = np.polyfit(np.log(steps[fit]), mean[fit], 1)
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
ax.semilogx(steps, mean, lw=1.2, label="UCB c = 2, mean of 300 runs")
ax.fill_between(steps, mean - 2 * se, mean + 2 * se, alpha=0.25, label="+- 2 SE")
ax.semilogx(steps[99:], a_log + b_log * np.log(steps[99:]), "k--", lw=0.8,
            label="a + b ln t fitted to steps 100-1000, extended")
ax.set(xlabel="step t (log scale)", ylabel="cumulative regret",
       title="Against ln t, UCB's regret still curves upwards at 5000 steps: not yet logarithmic")
ax.legend(loc="upper left")
plt.show()

# %% [markdown]
# The gain per doubling still grows (printed above, with the paired difference), and the
# regret climbs above the log law fitted to the first thousand steps: over 5000 steps UCB is
# sublinear, but not yet in its logarithmic regime. The logarithmic bound is the *asymptotic* guarantee; how soon it shows
# depends on the gaps between the arms' means, which here are small.
#
# **Arms that drift.** Now make the problems non-stationary: after every step each arm's mean
# takes a random-walk step of size $N(0, 0.01^2)$ (`rc.Bandit(..., drift=0.01)`, Sutton &
# Barto's exercise 2.5), so over 10,000 steps the means wander by about 1 and the best arm
# changes. Compare $\varepsilon$-greedy ($\varepsilon = 0.1$) with sample averages against the
# same agent with a constant step size $\alpha = 0.1$, 150 runs each, in three groups of 50.

# %%
DRIFT_STEPS, DRIFT_RUNS = 10_000, 150
drift_env = rc.Bandit(ARMS, n=DRIFT_RUNS, drift=0.01)
drift = {"sample average (1/N)": rc.run_bandit(drift_env, rc.EpsilonGreedy(ARMS, DRIFT_RUNS, 0.1),
                                              DRIFT_STEPS, seed=SEED + 2),
         "constant step 0.1": rc.run_bandit(drift_env, rc.EpsilonGreedy(ARMS, DRIFT_RUNS, 0.1,
                                                                        step_size=0.1),
                                            DRIFT_STEPS, seed=SEED + 2)}
drift_groups = np.array_split(np.arange(DRIFT_RUNS), 3)
for name, res in drift.items():
    per_group = [100 * res.optimal[-1000:, g].mean() for g in drift_groups]
    print(f"{name:21s} % on the (current) optimal arm, last 1000 steps: "
          f"{100 * res.optimal[-1000:].mean():.1f} (groups: {', '.join(f'{p:.1f}' for p in per_group)})")
assert all(drift["constant step 0.1"].optimal[-1000:, g].mean()
           > drift["sample average (1/N)"].optimal[-1000:, g].mean() + 0.1 for g in drift_groups)

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
for name, res in drift.items():
    ax.plot(np.arange(WINDOW, DRIFT_STEPS + 1), 100 * window_mean(res.optimal.mean(axis=1)), lw=1.2,
            label=name)
ax.set(xlabel="step (end of the 500-step window)", ylabel="% runs on the optimal arm",
       title="Drifting arms: sample averages fall behind, a constant step keeps up")
ax.legend(loc="center right")
plt.show()

# %% [markdown]
# With $1/N$ steps, the 5000th reward of an arm moves its estimate by 1/5000: after a few
# thousand steps the estimates stop following the arms. A constant step keeps weighting the
# recent rewards, so the estimates track the drift. The price, on a stationary problem: a
# constant step never settles, since every new reward still moves the estimate by $\alpha$
# times its surprise, noise included. On the stationary testbed, after 1000 steps of
# $\varepsilon = 0.1$, here is how far the estimate of each run's most-pulled arm is from that
# arm's true mean (500 problems, hundreds of pulls of that arm in each). For an arm pulled on
# every step, with reward noise of variance 1, a constant step $\alpha$ leaves an error of
# standard deviation $\sqrt{\alpha / (2 - \alpha)}$ however long it runs, while the sample
# average's shrinks like $1/\sqrt{N}$.

# %%
settle_env = rc.Bandit(ARMS, n=500)
settle = {"sample average (1/N)": rc.EpsilonGreedy(ARMS, 500, 0.1),
          "constant step 0.1": rc.EpsilonGreedy(ARMS, 500, 0.1, step_size=0.1)}
rms = {}
for name, agent in settle.items():
    pulled = rc.run_bandit(settle_env, agent, STEPS, seed=SEED + 3).actions
    most = np.array([np.bincount(pulled[:, i], minlength=ARMS).argmax() for i in range(500)])
    error = agent.Q[np.arange(500), most] - settle_env.means[np.arange(500), most]
    rms[name] = np.sqrt(np.mean(error ** 2))
    print(f"{name:21s} RMS error of the most-pulled arm's estimate after {STEPS} steps: "
          f"{rms[name]:.3f}")
floor = np.sqrt(0.1 / 1.9)
print(f"sqrt(alpha / (2 - alpha)) for alpha = 0.1: {floor:.3f}")
assert rms["constant step 0.1"] > 3 * rms["sample average (1/N)"]
assert floor / 2 < rms["constant step 0.1"] < 2 * floor

# %% [markdown]
# The constant step's error stays of the order of that floor (above it here: the arm is not
# pulled on every step, and which arm ends up most pulled depends on its noisy estimate), and
# several times the sample average's: on a stationary problem $1/N$ is the better choice.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | % optimal action stalls at about 1/3 | pure greedy with estimates starting at 0: an arm that starts badly is never tried again | explore: $\varepsilon > 0$, optimism, UCB or a gradient bandit |
# | greedy always starts with arm 0 | `argmax` breaks ties by the lowest index | break ties at random |
# | an estimate becomes `inf` or NaN on an arm's first pull | dividing by $N$ before counting the pull ($N = 0$) | count the pull first, then divide: the new reward is one of the $N$ |
# | estimates keep jittering on a stationary problem | a constant step size $\alpha$ weights every new reward by $\alpha$, however many came before | sample averages, step $1/N$ |
# | estimates stop following arms that drift | $1/N$ weights old rewards as much as new ones | a constant step size $\alpha$ (exponential recency weighting) |
# | UCB divides by zero or returns NaN | the bonus of an untried arm, $\sqrt{\ln t / 0}$ | score untried arms $+\infty$ (pull each once first) |
# | gradient bandit with positive rewards crawls | no baseline: every pull pushes its own arm up | subtract the average reward |
# | a method "wins" in one run and loses in the next | one run is mostly noise | average over many runs and report the standard error |
# | two runs with the same settings differ | a global `np.random` call somewhere | pass one seeded `rng` everywhere |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: recency weights.** With a constant step, $Q_{n+1} = Q_n + \alpha(R_n - Q_n)$ is
#    a weighted sum of the initial estimate $Q_1$ and the rewards $R_1, \dots, R_n$. Write
#    `recency_weights(alpha, n)` returning the `n + 1` weights, of $Q_1$ first, then of $R_1$
#    to $R_n$. (Check: they sum to 1.)
# 2. **Medium: a constant step without the initial bias.** A constant step never forgets $Q_1$
#    completely (its weight is $(1-\alpha)^n$), so an optimistic or a careless start lingers.
#    Sutton & Barto's exercise 2.7 fixes it: keep a trace $o$ per arm, starting at 0, and on
#    each pull of the arm set $o \leftarrow o + \alpha(1 - o)$, then step by
#    $\beta = \alpha / o$. Write `unbiased_step_update(Q, trace, action, reward, alpha)`
#    returning the new `(Q, trace)` for one bandit (new arrays; leave the inputs unchanged).
# 3. **Hard: Thompson sampling.** A Bayesian explores by *sampling*: keep a posterior over each
#    arm's mean, draw one value from each, pull the arm whose draw is highest. With rewards
#    $N(q, 1)$ and a prior $q \sim N(m_0, v_0)$, the posterior after $N$ pulls with reward sum
#    $S$ is normal. Write `thompson_actions(sums, counts, z, prior_mean=0.0, prior_var=1.0)`
#    for arrays `[n, arms]`, where `z` holds standard-normal draws (one per arm and copy): turn
#    each into a posterior sample and return the actions `[n]`. Derive the posterior first.

# %% tags=["solution"]
def recency_weights(alpha, n):
    i = np.arange(1, n + 1)
    return np.concatenate([[(1 - alpha) ** n], alpha * (1 - alpha) ** (n - i)])


# %%
assert rc.exercises.check("recency_weights", recency_weights)

# %% tags=["solution"]
def unbiased_step_update(Q, trace, action, reward, alpha):
    Q, trace = np.array(Q, dtype=float), np.array(trace, dtype=float)
    trace[action] += alpha * (1 - trace[action])
    Q[action] += alpha / trace[action] * (reward - Q[action])
    return Q, trace


# %%
assert rc.exercises.check("unbiased_step_update", unbiased_step_update)

# %% tags=["solution"]
def thompson_actions(sums, counts, z, prior_mean=0.0, prior_var=1.0):
    precision = 1.0 / prior_var + counts  # each pull adds 1 / (noise variance 1)
    mean = (prior_mean / prior_var + sums) / precision
    return np.argmax(mean + z / np.sqrt(precision), axis=-1)


# %%
assert rc.exercises.check("thompson_actions", thompson_actions)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | arm | "an action" | one of the $k$ choices; each has an unknown mean reward $q_*(a)$ |
# | action value $Q(a)$ | "how good the arm is" | an *estimate* of $q_*(a)$, here the average of the rewards the arm paid |
# | exploitation | "being greedy" | pulling the arm with the highest current estimate |
# | exploration | "trying things" | pulling another arm to improve its estimate, at a short-term cost |
# | $\varepsilon$-greedy | "mostly greedy" | with probability $\varepsilon$ a uniformly random arm, else the greedy one |
# | optimistic initial values | "optimism in the face of uncertainty" | start estimates high so that each pull disappoints and the greedy choice rotates |
# | UCB | "upper confidence bound" | pull the arm maximising $Q(a) + c\sqrt{\ln t / N(a)}$; untried arms first |
# | gradient bandit | "softmax bandit" | stochastic gradient ascent on expected reward over softmax preferences |
# | baseline | "subtract the average" | a reference reward subtracted in the update; leaves the expected gradient unchanged and makes the agent blind to a constant shift of the rewards |
# | regret | "how much you lost" | $\sum_t \big(\max_a q_*(a) - q_*(A_t)\big)$: expected reward forgone by not always pulling the best arm; linear in $t$ for a fixed $\varepsilon$; for UCB sublinear over this lesson's 5000 steps and logarithmic asymptotically (the bound of Auer et al.; Lai & Robbins' lower bound says no method beats log on every problem) |
# | stationary | "the arms don't change" | the $q_*(a)$ stay fixed; when they drift, use a constant step size |
# | Thompson sampling | "probability matching" | pull each arm with the posterior probability that it is the best, by sampling one value per arm from the posterior |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 2: the
#   10-armed testbed used here, incremental updates, optimism, UCB and gradient bandits, with
#   the derivation that the gradient bandit is stochastic gradient ascent, and the parameter
#   study (figure 2.6) that compares the methods at their best settings.
# - Auer, Cesa-Bianchi & Fischer (2002), *Finite-time analysis of the multiarmed bandit
#   problem*, Machine Learning 47: UCB1 and the proof that, for rewards in $[0, 1]$, its
#   regret grows at most logarithmically in $t$.
# - Lai & Robbins (1985), *Asymptotically efficient adaptive allocation rules*, Advances in
#   Applied Mathematics 6: the lower bound, regret of order $\log t$ at least, that makes
#   logarithmic the target.
# - Russo, Van Roy, Kazerouni, Osband & Wen (2018), *A Tutorial on Thompson Sampling*,
#   Foundations and Trends in ML: the posterior-sampling idea of exercise 3, and where it
#   beats UCB.
# - Lattimore & Szepesvári (2020), *Bandit Algorithms*, Cambridge University Press: the modern
#   theory, with regret lower bounds and non-stationary bandits.
