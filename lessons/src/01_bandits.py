# %% [markdown]
# # 01 · Bandits — exploration vs exploitation
#
# *Prerequisites:* 00
# *Time:* 40 minutes
# *You will build:* sample-average action values, epsilon-greedy, optimistic initial values, UCB and the gradient bandit, run on 2000 bandit problems at once.

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

# %% [markdown]
# ## The problem
#
# `rc.Bandit(arms, n)` holds `n` independent 10-armed problems (Sutton & Barto's testbed): each
# arm's mean reward $q_*(a)$ is drawn from $N(0, 1)$ once, and pulling the arm pays $q_*(a)$
# plus $N(0, 1)$ noise. Averaging over many problems is how you judge a method, since one run
# is mostly luck.
#
# The obvious strategy is *greedy*: estimate each arm's value by the average of the rewards it
# paid, and always pull the arm with the highest estimate. Here it is on 2000 problems:

# %%
env = rc.Bandit(ARMS, n=RUNS)
greedy = rc.run_bandit(env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.0), STEPS, seed=SEED)
late = slice(STEPS - 100, STEPS)
print(f"greedy, last 100 steps: optimal arm pulled {100 * greedy.optimal[late].mean():.1f}% "
      f"of the time, mean reward {greedy.rewards[late].mean():.3f}")
print(f"best possible mean reward: {env.means.max(axis=1).mean():.3f}")

# %% [markdown]
# Greedy pulls the optimal arm only the fraction of the time printed above (roughly a third,
# as in Sutton & Barto's figure 2.2), and more steps do not help. Its estimates start at 0; the first arm that pays something positive beats every untried arm's 0 and is never
# questioned again. A bad estimate of an arm you stop pulling can never be corrected, because
# only pulling an arm produces data about it.

# %% [markdown]
# ## The idea
#
# Keep an estimate $Q(a)$ of each arm's value, the **sample average** of its rewards, updated
# incrementally after the $N(a)$-th pull:
#
# $$Q(a) \leftarrow Q(a) + \frac{1}{N(a)}\big(r - Q(a)\big).$$
#
# Then spend some pulls on arms that *might* be better. Four ways:
#
# - **$\varepsilon$-greedy**: with probability $\varepsilon$ pull a uniformly random arm,
#   otherwise the greedy one. Simple; keeps exploring at the same rate forever.
# - **Optimistic initial values**: start every $Q(a)$ far above any plausible reward (say 5).
#   Every pull disappoints, so the greedy choice rotates through all arms early on. Exploration
#   that fades by itself, but only at the start.
# - **Upper confidence bound (UCB)**: pull the arm whose value *could* be highest,
#   $$A_t = \arg\max_a \Big[ Q(a) + c\sqrt{\frac{\ln t}{N(a)}} \Big],$$
#   untried arms first. The bonus shrinks as an arm is pulled and grows slowly for arms left
#   alone, so exploration targets the arms you know least about.
# - **Gradient bandit**: learn preferences $H(a)$ and act by $\pi = \mathrm{softmax}(H)$. After
#   pulling $A$ and receiving $r$, with baseline $\bar r$ (the average reward so far):
#   $$H(a) \leftarrow H(a) + \alpha (r - \bar r)\big(\mathbb 1[a = A] - \pi(a)\big).$$
#   This is stochastic gradient ascent on the expected reward: the same score-function
#   gradient that policy gradients (lesson 08) use. The baseline does not bias it, but
#   without one every positive reward pushes the chosen arm up.

# %% [markdown]
# ## Build it
#
# Start with one bandit problem and write the incremental sample average. Copy the inputs, so
# the caller's arrays are not changed behind their back.

# %%
def sample_average_update(Q, N, action, reward):
    """Estimates ``Q [arms]`` and counts ``N [arms]`` after pulling ``action`` and receiving ``reward``."""
    Q, N = np.array(Q, dtype=float), np.array(N)
    N[action] += 1
    Q[action] += (reward - Q[action]) / N[action]
    return Q, N


Q, N = np.zeros(3), np.zeros(3, dtype=int)
for action, reward in [(0, 1.0), (1, 0.5), (0, 3.0), (0, -1.0)]:
    Q, N = sample_average_update(Q, N, action, reward)
print("Q =", np.round(Q, 3), " N =", N)
assert np.isclose(Q[0], np.mean([1.0, 3.0, -1.0]))

# %% [markdown]
# Now epsilon-greedy for `n` problems at once. Every array gets a leading axis of copies: `Q` is
# `[n, arms]`, and one step picks `n` actions with a handful of array operations, no loop over
# copies. Greedy ties are broken at random, otherwise the lowest-index arm would be favoured at
# the start, when all estimates are equal.

# %%
def epsilon_greedy_actions(Q, epsilon, rng):
    """Actions [n] for estimates Q [n, arms]."""
    n, arms = Q.shape
    is_best = Q == Q.max(axis=1, keepdims=True)
    greedy_arm = np.argmax(rng.random(Q.shape) * is_best, axis=1)  # random among the tied
    explore = rng.random(n) < epsilon
    return np.where(explore, rng.integers(arms, size=n), greedy_arm)


def run_epsilon_greedy(env, epsilon, steps, rng):
    """Rewards [steps, n] of epsilon-greedy with sample averages on every copy of env."""
    rows = np.arange(env.n)
    Q, N = np.zeros((env.n, env.num_actions)), np.zeros((env.n, env.num_actions))
    rewards = np.empty((steps, env.n))
    for t in range(steps):
        a = epsilon_greedy_actions(Q, epsilon, rng)
        rewards[t] = env.step(a)
        N[rows, a] += 1
        Q[rows, a] += (rewards[t] - Q[rows, a]) / N[rows, a]
    return rewards, Q


mine = rc.Bandit(ARMS, n=RUNS, seed=1)
my_rewards, _ = run_epsilon_greedy(mine, 0.1, STEPS, rng)
print(f"your epsilon = 0.1, last 100 steps: mean reward {my_rewards[late].mean():.3f}, "
      f"optimal arm {100 * mine.optimal_pulls.sum() / (RUNS * STEPS):.1f}% over all steps")

# %% [markdown]
# Compare with the reference: give `rc.EpsilonGreedy` the same actions and rewards and its
# estimates must equal yours. Here is the reference's update:

# %%
print(inspect.getsource(rc.EpsilonGreedy.update))

# %%
problems = rc.Bandit(ARMS, n=5, seed=2)
agent = rc.EpsilonGreedy(ARMS, n=5, epsilon=0.3)
Q_mine, N_mine = np.zeros((5, ARMS)), np.zeros((5, ARMS), dtype=int)
for _ in range(200):
    a = agent.act(rng)
    r = problems.step(a)
    agent.update(a, r)
    for i in range(5):
        Q_mine[i], N_mine[i] = sample_average_update(Q_mine[i], N_mine[i], a[i], r[i])
np.testing.assert_allclose(Q_mine, agent.Q, atol=1e-12)
print("your sample averages match rc.EpsilonGreedy on 5 problems x 200 steps")

# %% [markdown]
# UCB's score in numpy: an untried arm scores $+\infty$, so every arm is pulled once before
# any is pulled twice.

# %%
def my_ucb_scores(Q, N, t, c):
    tried = N > 0
    bonus = c * np.sqrt(np.log(t) / np.where(tried, N, 1))  # N = 1 only to avoid 0-division
    return np.where(tried, Q + bonus, np.inf)


Q_demo, N_demo = np.array([0.5, 1.0, 0.2, 0.0]), np.array([4, 1, 2, 0])
print("scores at t = 8:", np.round(my_ucb_scores(Q_demo, N_demo, 8, 2.0), 3))
np.testing.assert_allclose(my_ucb_scores(Q_demo, N_demo, 8, 2.0), rc.ucb_scores(Q_demo, N_demo, 8, 2.0))

# %% [markdown]
# Arm 1 has the highest estimate but was pulled once, so its bonus dwarfs arm 0's; arm 3 was
# never pulled and wins outright.

# %% [markdown]
# ## Check it
#
# The invariants of these agents, asserted on the reference: UCB pulls every arm exactly once
# in its first 10 steps; the gradient bandit's update sums to zero over arms (preferences only
# move relative to each other); and `run_bandit` is deterministic given its seed.

# %%
ucb = rc.UCB(ARMS, n=50, c=2.0)
probe = rc.Bandit(ARMS, n=50, seed=3)
first_sweep = []
for _ in range(ARMS):
    a = ucb.act()
    ucb.update(a, probe.step(a))
    first_sweep.append(a)
first_sweep = np.array(first_sweep)
assert all(sorted(first_sweep[:, i]) == list(range(ARMS)) for i in range(50))
print("UCB's first 10 pulls are the 10 arms, in all 50 problems")

gradient = rc.GradientBandit(ARMS, n=50, alpha=0.1)
for _ in range(100):
    a = gradient.act(rng)
    gradient.update(a, probe.step(a))
assert np.allclose(gradient.H.sum(axis=1), 0.0)
print("gradient bandit: the preferences of every problem still sum to 0")

again = rc.run_bandit(env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.0), STEPS, seed=SEED)
assert np.array_equal(again.rewards, greedy.rewards)
print("run_bandit with the same seed gives the same rewards, bit for bit")

# %% [markdown]
# ## Use it
#
# Now the testbed: 2000 problems, 1000 steps, every method. `rc.run_bandit` re-seeds the
# problems, so every agent faces the same 2000 bandits. For the gradient bandit you also see
# what the baseline is for: the rewards are shifted by +4 (so nearly every reward is positive)
# and the agent without a baseline pushes up whatever it just pulled. The optimistic agent uses
# a constant step size of 0.1 (as in Sutton & Barto's figure 2.3), so its optimism wears off
# over a few pulls of each arm rather than after the first.

# %%
class Shifted:
    """The same bandits with every reward raised by ``shift`` (the optimal arm is unchanged)."""

    def __init__(self, env, shift):
        self.env, self.shift = env, shift
        self.n, self.num_actions = env.n, env.num_actions

    @property
    def optimal_arm(self):
        return self.env.optimal_arm

    def reset(self, seed=None):
        return self.env.reset(seed)

    def step(self, actions):
        return self.env.step(actions) + self.shift


agents = {
    "greedy (eps = 0)": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.0)),
    "eps = 0.01": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.01)),
    "eps = 0.1": (env, rc.EpsilonGreedy(ARMS, RUNS, epsilon=0.1)),
    "optimistic Q0 = 5, eps = 0": (env, rc.EpsilonGreedy(ARMS, RUNS, 0.0, initial=5.0, step_size=0.1)),
    "UCB c = 2": (env, rc.UCB(ARMS, RUNS, c=2.0)),
    "gradient, baseline (+4)": (Shifted(env, 4.0), rc.GradientBandit(ARMS, RUNS, alpha=0.1)),
    "gradient, no baseline (+4)": (Shifted(env, 4.0),
                                   rc.GradientBandit(ARMS, RUNS, alpha=0.1, baseline=False)),
}
results = {name: rc.run_bandit(e, agent, STEPS, seed=SEED) for name, (e, agent) in agents.items()}
shift = {name: 4.0 if "+4" in name else 0.0 for name in agents}
print(f"{'method':28s} {'reward, last 100':>17s} {'% optimal, last 100':>20s}")
for name, res in results.items():
    print(f"{name:28s} {res.rewards[late].mean() - shift[name]:17.2f} "
          f"{100 * res.optimal[late].mean():20.1f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3), dpi=72)
for name, res in results.items():
    if "gradient" in name:
        continue
    axes[0].plot(res.rewards.mean(axis=1), label=name, lw=1)
    axes[1].plot(100 * res.optimal.mean(axis=1), label=name, lw=1)
axes[0].set(xlabel="step", ylabel="average reward", title="Exploring methods overtake greedy")
axes[1].set(xlabel="step", ylabel="% optimal action", title="Greedy stays stuck near 1/3")
axes[1].legend(fontsize=7)
plt.show()

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for name, res in results.items():
    if "gradient" in name:
        ax.plot(100 * res.optimal.mean(axis=1), label=name, lw=1)
ax.set(xlabel="step", ylabel="% optimal action",
       title="Without a baseline the gradient bandit learns slowly")
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# The key results, asserted so a regression in the agents shows up here too:

# %%
def late_optimal(name):
    return results[name].optimal[late].mean()


assert late_optimal("greedy (eps = 0)") < 0.45
assert late_optimal("eps = 0.1") > late_optimal("greedy (eps = 0)") + 0.3
assert late_optimal("UCB c = 2") > late_optimal("eps = 0.1")
assert late_optimal("optimistic Q0 = 5, eps = 0") > late_optimal("eps = 0.1")
assert late_optimal("gradient, baseline (+4)") > late_optimal("gradient, no baseline (+4)") + 0.2
print("greedy < eps-greedy < optimistic, UCB; baseline beats no baseline: as expected")

# %% [markdown]
# What to take away: some exploration beats none by a wide margin; $\varepsilon = 0.1$ finds
# the best arm faster than $0.01$ but keeps paying for exploring, so over a run much longer than
# the 1000 steps here the small $\varepsilon$ catches up (Sutton & Barto, section 2.3). Optimism and UCB explore *purposefully* and win on this stationary
# problem; optimism, though, only explores at the start, so it is useless if the arms drift.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | % optimal action stalls at about 1/3 | pure greedy with estimates starting at 0: locks onto the first arm that pays well | explore: $\varepsilon > 0$, optimism or UCB |
# | greedy always starts with arm 0 | `argmax` breaks ties by the lowest index | break ties at random |
# | estimates keep jittering and never settle on a stationary problem | a constant step size $\alpha$ weights every new reward by $\alpha$, however many came before | sample averages, step $1/N$ |
# | an estimate becomes `inf` or NaN on an arm's first pull | dividing by $N$ before incrementing it ($N = 0$) | count the pull first, then divide: the new reward is one of the $N$ |
# | sample averages never adapt when the arms drift | $1/N$ weights old rewards as much as new ones | a constant step size $\alpha$ (exponential recency weighting) |
# | UCB divides by zero or returns NaN | the bonus of an untried arm, $\sqrt{\ln t / 0}$ | score untried arms $+\infty$ (pull each once first) |
# | gradient bandit with positive rewards crawls | no baseline: every pull pushes its own arm up | subtract the average reward |
# | curves from one run disagree with the book | a single run is mostly noise | average over many runs (here 2000 copies at once) |
# | two runs with the same settings differ | a global `np.random` call somewhere | pass one seeded `rng` everywhere |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: sample average.** Write `sample_average_update(Q, N, action, reward)` returning
#    the new `(Q, N)` for one bandit, without changing the inputs.
# 2. **Medium: UCB scores.** Write `ucb_scores(Q, N, t, c)` for `Q`, `N` of shape `[arms]` or
#    `[n, arms]`: $Q + c\sqrt{\ln t / N}$, and $+\infty$ for arms with $N = 0$.
# 3. **Hard: gradient bandit step.** Write `gradient_bandit_update(H, action, reward, baseline,
#    alpha)` for one bandit's preferences `H [arms]`, returning the new preferences. Make the
#    softmax safe for large preferences.

# %% tags=["solution"]
def sample_average_update(Q, N, action, reward):
    Q, N = np.array(Q, dtype=float), np.array(N)
    N[action] += 1
    Q[action] += (reward - Q[action]) / N[action]
    return Q, N


# %%
assert rc.exercises.check("sample_average_update", sample_average_update)

# %% tags=["solution"]
def ucb_scores(Q, N, t, c):
    Q, N = np.asarray(Q, dtype=float), np.asarray(N)
    tried = N > 0
    return np.where(tried, Q + c * np.sqrt(np.log(t) / np.where(tried, N, 1)), np.inf)


# %%
assert rc.exercises.check("ucb_scores", ucb_scores)

# %% tags=["solution"]
def gradient_bandit_update(H, action, reward, baseline, alpha):
    H = np.asarray(H, dtype=float)
    pi = np.exp(H - H.max())
    pi /= pi.sum()
    onehot = np.eye(H.size)[action]
    return H + alpha * (reward - baseline) * (onehot - pi)


# %%
assert rc.exercises.check("gradient_bandit_update", gradient_bandit_update)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | arm | "an action" | one of the $k$ choices; each has a fixed unknown mean reward $q_*(a)$ |
# | action value $Q(a)$ | "how good the arm is" | an *estimate* of $q_*(a)$, here the average of the rewards the arm paid |
# | exploitation | "being greedy" | pulling the arm with the highest current estimate |
# | exploration | "trying things" | pulling another arm to improve its estimate, at a short-term cost |
# | $\varepsilon$-greedy | "mostly greedy" | with probability $\varepsilon$ a uniformly random arm, else the greedy one |
# | optimistic initial values | "optimism in the face of uncertainty" | start estimates high so that each pull disappoints and the greedy choice rotates |
# | UCB | "upper confidence bound" | pull the arm maximising $Q(a) + c\sqrt{\ln t / N(a)}$; untried arms first |
# | gradient bandit | "softmax bandit" | stochastic gradient ascent on expected reward over softmax preferences |
# | baseline | "subtract the average" | a reference reward subtracted in the update; lowers variance without biasing the gradient |
# | regret | "how much you lost" | $\sum_t \big(\max_a q_*(a) - q_*(A_t)\big)$: reward forgone by not always pulling the best arm |
# | stationary | "the arms don't change" | the $q_*(a)$ stay fixed; otherwise use a constant step size |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 2: the
#   10-armed testbed used here, incremental updates, optimism, UCB and gradient bandits, with
#   the derivation that the gradient bandit is stochastic gradient ascent.
# - Auer, Cesa-Bianchi & Fischer (2002), *Finite-time analysis of the multiarmed bandit
#   problem*, Machine Learning 47: UCB1 and the proof that its regret grows only
#   logarithmically in $t$.
# - Lattimore & Szepesvári (2020), *Bandit Algorithms*, Cambridge University Press: the modern
#   theory, for when you want the regret bounds and Thompson sampling.
