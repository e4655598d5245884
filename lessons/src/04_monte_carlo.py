# %% [markdown]
# # 04 · Monte Carlo methods
#
# *Prerequisites:* 02, 03
# *Time:* 70 minutes
# *You will build:* returns, first-visit Monte Carlo updates and on-policy Monte Carlo control with an epsilon schedule, learning from sampled episodes only.

# %% [markdown]
# Dynamic programming (lesson 03) computes values from the model $P$ and $R$. An agent in the
# world has no model: it acts and sees what happens. Monte Carlo methods learn values from
# that experience alone, by averaging the returns that actually followed each state.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
SEEDS = range(10)  # every learning claim below is measured on these ten runs

GAMMA = 0.9

# %% [markdown]
# ## The problem
#
# A 4x4 GridWorld where each move slips sideways with probability 0.2; the goal pays +1, every
# other move costs 0.01. You want $V^\pi$ of the uniformly random policy. Lesson 03 would
# read `env.P` and solve the Bellman equation; that is the answer you will grade against, the
# "truth" a learner never sees.

# %%
env = rc.GridWorld(size=4, slip=0.2)
S, A = env.num_states, env.num_actions
random_policy = np.full((S, A), 1.0 / A)
v_true = rc.policy_evaluation(env.P, env.R, random_policy, GAMMA, env.terminal)
live = ~env.terminal
print(env)
print("V of the random policy (from the model):")
print(np.round(v_true.reshape(4, 4), 3))

# %% [markdown]
# Without `P` all you can do is step. Here is one episode from the start; the environment
# only ever tells you the next state and a reward:

# %%
obs = env.reset(seed=SEED)
states, rewards = [int(obs[0])], []
while True:
    step = env.step(rng.integers(A, size=1))
    rewards.append(float(step.reward[0]))
    if step.done[0]:
        break
    states.append(int(step.obs[0]))
print(f"{len(rewards)} steps, first states {states[:8]}, last reward {rewards[-1]:.2f}, "
      f"final state {int(step.final_obs[0])}, next episode starts in {int(step.obs[0])}")

# %% [markdown]
# Note the last line: when an episode ends the environment resets *in the same step*, so
# `step.obs` is already the first state of the next episode and the state the episode ended in
# is `step.final_obs`. Mixing the two is a classic bug (lesson 05 comes back to it).

# %% [markdown]
# ## The idea
#
# $V^\pi(s) = \mathbb E_\pi[G_t \mid S_t = s]$ is an expectation, and an expectation can be
# estimated by an average of samples. Run episodes with $\pi$; for each visit to $s$ compute
# the return that followed,
# $$G_t = r_t + \gamma r_{t+1} + \dots + \gamma^{T-1-t} r_{T-1} = r_t + \gamma G_{t+1},
# \qquad G_T = 0,$$
# where $r_t$ is the reward of the step taken at time $t$ (`rewards[t]`, as in lesson 02) and
# the episode ends after $T$ steps. Compute it backwards from the episode's end, and average.
# Incrementally, after the $N(s)$-th return:
# $$V(s) \leftarrow V(s) + \frac{1}{N(s)}\big(G_t - V(s)\big).$$
#
# - **First-visit MC** uses only the return after the first visit to $s$ in each episode:
#   one sample per episode, independent of the others, so the average is unbiased and its
#   error shrinks like $\sigma/\sqrt{N}$, where $\sigma$ is the standard deviation of the return.
# - **Every-visit MC** uses every visit. Returns from the same episode overlap, so the samples
#   are correlated and the estimate is biased for small $N$; it converges too, and which of the
#   two has the smaller error on a given task is an empirical question. *Use it* measures it.
#
# No bootstrapping: an MC target is a real return, never built from other estimates. The price
# is variance: a return adds up the randomness of every action and transition until the end
# of the episode.
#
# **Control.** Without a model, $V$ alone does not tell you which action to take, so estimate
# $Q(s, a)$: the same averages, with (state, action) pairs as keys. Then improve: act greedily
# with respect to $Q$. Pure greedy stops trying the other actions, so their estimates never
# improve; keep the policy **$\varepsilon$-greedy**, which gives every action at least
# $\varepsilon/|A|$ (an *$\varepsilon$-soft* policy).
#
# What is known about this? Sutton & Barto (section 5.4) show that improving an $\varepsilon$-soft
# policy $\varepsilon$-greedily never makes it worse, so *policy iteration* among $\varepsilon$-soft
# policies, with each policy evaluated exactly, ends at the best $\varepsilon$-soft policy. The
# algorithm you will build is not that: it improves after every single episode from noisy
# averages of returns collected under ever-changing policies, and no general convergence
# guarantee covers it. So you will measure what it does, against two numbers DP can give you:
# $V^*$, and the value of the best $\varepsilon$-soft policy. The latter is the optimum of a
# modified MDP in which every chosen action is replaced by a uniformly random one with
# probability $\varepsilon$:
# $$P_\varepsilon(s' \mid s, a) = (1-\varepsilon)\,P(s' \mid s, a) + \varepsilon \tfrac{1}{|A|}
# \textstyle\sum_b P(s' \mid s, b).$$
# Decaying $\varepsilon$ towards 0 over the run (an *$\varepsilon$ schedule*) lets the policy you
# run become greedy in the end, so it can approach $V^*$ rather than the $\varepsilon$-soft optimum.

# %% [markdown]
# ## Build it
#
# **Step 1: returns.** Compute $G_t$ for every step of an episode, backwards. A time limit may
# cut an episode before it terminates; then the return after the last step is not 0 but the
# value of the state it stopped in, `final_value` (lessons 05 and 09 need this).

# %% tags=["solution"]
def my_returns(rewards, gamma, final_value=0.0):
    """G[t] = rewards[t] + gamma * G[t + 1] for every step t, with G[T] = final_value."""
    G = np.zeros(len(rewards))
    g = final_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        G[t] = g
    return G


# %%
assert rc.exercises.check("mc_returns", my_returns)

# %% [markdown]
# **Step 2: the first-visit update.** Given one episode's keys and rewards, update the table of
# averages and the visit counts, using each key's first visit only. Write it once for both uses:
# a key is a state (an int, to learn $V$) or a `(state, action)` tuple (to learn $Q$);
# `table[key]` indexes a 1-D or a 2-D array alike.

# %% tags=["solution"]
def my_first_visit_update(table, counts, keys, rewards, gamma):
    """Updated copies (table, counts) after one episode: keys[t] was visited at step t."""
    table, counts = np.array(table, dtype=float), np.array(counts, dtype=float)
    G = my_returns(rewards, gamma)
    seen = set()
    for key, g in zip(keys, G):
        key = tuple(int(k) for k in key) if np.ndim(key) else int(key)
        if key in seen:
            continue
        seen.add(key)
        counts[key] += 1
        table[key] += (g - table[key]) / counts[key]
    return table, counts


# %%
assert rc.exercises.check("first_visit_update", my_first_visit_update)

# %% [markdown]
# **Step 3: Monte Carlo control.** Play an episode with the $\varepsilon$-greedy policy of the
# current $Q$, remembering each `(state, action)` pair and reward; then update $Q$ with step 2;
# repeat. Episode $k$ explores with `epsilons[k]`, so a schedule is just an array. The checker
# replays your run exactly, so draw the random numbers as the docstring says: `rc.epsilon_greedy`
# uses two uniforms per choice and breaks ties among equal values at random. Time limits are out
# of scope here: every episode of this lesson's control runs (asserted in *Use it*) and of the
# checker's cases (asserted in the tests) ends in a terminal state, so the return after the last
# step is 0.

# %% tags=["solution"]
def my_mc_control(env, episodes, gamma, epsilons, seed):
    """On-policy first-visit MC control; returns Q [S, A].

    Draws: rng = np.random.default_rng(seed); reset the env once with env.reset(seed=seed);
    choose every action with rc.epsilon_greedy(Q[s], epsilons[k], rng) in episode k.
    """
    Q = np.zeros((env.num_states, env.num_actions))
    counts = np.zeros_like(Q)
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for k in range(episodes):
        pairs, rewards = [], []
        while True:
            a = rc.epsilon_greedy(Q[s], epsilons[k], rng)
            step = env.step(np.array([a]))
            pairs.append((s, a))
            rewards.append(float(step.reward[0]))
            if step.done[0]:
                break
            s = int(step.obs[0])
        Q, counts = my_first_visit_update(Q, counts, pairs, rewards, gamma)
        s = int(step.obs[0])  # the next episode's first state
    return Q


# %%
assert rc.exercises.check("mc_control", my_mc_control)

# %% [markdown]
# The reference, `rc.mc_control`, runs the same loop (it also handles constant step sizes and
# every-visit updates, and draws from its own generator seeded by `seed`). One line goes beyond
# your step 3: when a time limit cuts an episode, the return after its last step is not 0 but
# what the running policy expects from `final_obs`, $\sum_a \pi_\varepsilon(a \mid s)\,Q(s, a)$,
# step 1's `final_value`. `_bootstrap` sets it to 0 after a real termination. The two helpers
# are printed below the loop:

# %%
print(inspect.getsource(rc.tabular.control._mc_control))
print(inspect.getsource(rc.tabular.targets._bootstrap))
print(inspect.getsource(rc.tabular.exploration._epsilon_greedy_expectation))

# %% [markdown]
# The rest is plumbing: `_check_control` validates the arguments and turns `epsilon` into one
# value per episode, `_start` and `_step` reset and step the environment as your loop does, and
# `_visited` yields the first-visit (or every-visit) pairs with their returns, as your step 2.

# %% [markdown]
# ## Check it
#
# The invariants, asserted:
#
# 1. Returns satisfy $G_t = r_t + \gamma G_{t+1}$; cutting an episode with a final value $v$
#    raises every $G_t$ by exactly $\gamma^{T-t} v$.
# 2. First-visit and every-visit updates agree exactly when no state repeats in an episode,
#    and differ when states repeat.
# 3. The estimate converges to the DP answer: on every one of ten runs, its error falls as
#    episodes accumulate.
# 4. The same seed gives the same episodes: `rc.record_episodes` returns the episodes
#    `rc.mc_prediction` learned from, and averaging their first-visit returns by hand gives
#    its table.

# %%
G = rc.mc_returns(rewards, GAMMA)
assert np.allclose(G[:-1], np.array(rewards[:-1]) + GAMMA * G[1:]) and G[-1] == rewards[-1]
T = len(rewards)
cut = rc.mc_returns(rewards, GAMMA, final_value=0.7)
assert np.allclose(cut - G, GAMMA ** np.arange(T, 0, -1) * 0.7)

corridor = rc.GridWorld(layout=["S...G"], step_reward=-0.1)
always_right = np.tile(np.eye(4)[rc.RIGHT], (5, 1))
wander = np.tile([0.4, 0.0, 0.6, 0.0], (5, 1))  # left or right
for name, policy, same in [("always right", always_right, True), ("left or right", wander, False)]:
    first = rc.mc_prediction(corridor, policy, 50, GAMMA, first_visit=True, seed=1).V
    every = rc.mc_prediction(corridor, policy, 50, GAMMA, first_visit=False, seed=1).V
    print(f"corridor, {name:13s}: first- and every-visit tables equal: {np.array_equal(first, every)}")
    assert np.array_equal(first, every) == same

# %%
EPISODES = 200
errors = {}  # first/every -> RMS error against the truth [seeds, episodes]
for first_visit in (True, False):
    errors[first_visit] = np.array([
        np.sqrt(np.mean((rc.mc_prediction(env, random_policy, EPISODES, GAMMA,
                                          first_visit=first_visit, seed=seed).V_history
                         - v_true)[:, live] ** 2, axis=1))
        for seed in SEEDS])
first_err = errors[True]
for n in (10, 50, EPISODES):
    print(f"first-visit RMS error after {n:3d} episodes: median {np.median(first_err[:, n - 1]):.3f}, "
          f"range {first_err[:, n - 1].min():.3f}-{first_err[:, n - 1].max():.3f}")
assert (first_err[:, EPISODES - 1] < first_err[:, 9]).all()

# %%
episodes = rc.record_episodes(env, random_policy, 100, seed=2)
V, counts = np.zeros(S), np.zeros(S)
for ep in episodes:
    seen = set()
    for s, g in zip(ep.states[:-1].tolist(), rc.mc_returns(ep.rewards, GAMMA)):
        if s not in seen:
            seen.add(s)
            counts[s] += 1
            V[s] += (g - V[s]) / counts[s]
assert np.allclose(V, rc.mc_prediction(env, random_policy, 100, GAMMA, seed=2).V)
assert np.array_equal(rc.mc_prediction(env, random_policy, 100, GAMMA, seed=2).V,
                      rc.mc_prediction(env, random_policy, 100, GAMMA, seed=2).V)
print("record_episodes + first-visit averages == rc.mc_prediction; same seed, same table")

# %% [markdown]
# ## Use it
#
# **First-visit against every-visit.** The same ten runs as above, now with both estimators
# (each run's two estimators see the same episodes: same seed):

# %%
every_err = errors[False]
every_wins = int((every_err[:, -1] < first_err[:, -1]).sum())
print(f"after {EPISODES} episodes: first-visit median {np.median(first_err[:, -1]):.3f}, "
      f"every-visit median {np.median(every_err[:, -1]):.3f}; "
      f"every-visit lower on {every_wins} of {len(SEEDS)} runs")

n = np.arange(1, EPISODES + 1)
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for err, label, color in [(first_err, "first-visit", "C0"), (every_err, "every-visit", "C1")]:
    ax.loglog(n, np.median(err, axis=0), color=color, label=f"{label} (median of 10 runs)")
    ax.fill_between(n, err.min(axis=0), err.max(axis=0), color=color, alpha=0.2,
                    label=f"{label} (range)")
ax.set(xlabel="episodes", ylabel="RMS error of V vs DP",
       title="Both converge at about the same rate; neither wins on every run")
ax.legend(fontsize=9, loc="lower left", ncol=2)
plt.show()

# %% [markdown]
# The printed count is the honest summary: on this task neither estimator dominates, and
# a comparison made on one run could have pointed either way.
#
# **The variance of returns.** The start state's first-visit estimate after $N$ episodes is
# the mean of $N$ sampled returns $G_0$. Sample 1000 of them and look at their spread:

# %%
starts = rc.record_episodes(env, random_policy, 1000, seed=3)
start_returns = np.array([rc.mc_returns(ep.rewards, GAMMA)[0] for ep in starts])
sigma, mean = start_returns.std(), start_returns.mean()
standard_error = sigma / np.sqrt(len(start_returns))
z = (mean - v_true[0]) / standard_error
print(f"V(start) = {v_true[0]:.3f}; 1000 sampled returns: mean {mean:.3f}, std {sigma:.3f}, "
      f"from {start_returns.min():.3f} to {start_returns.max():.3f}")
print(f"the std is {sigma / abs(v_true[0]):.1f} times |V(start)|; the mean is {z:+.2f} standard "
      f"errors ({standard_error:.4f}) from V(start)")
assert abs(z) < 4  # a sample mean lands this far off only about once in 16,000 experiments

# %% [markdown]
# One return says almost nothing: its standard deviation is the multiple of $|V(\text{start})|$
# printed above. The mean of 1000 is close to $V(\text{start})$, and how close is measured in
# standard errors $\sigma/\sqrt{1000}$: a deviation of one or two of them is what chance gives.
# Now split the 1000 returns into 20 independent runs of 50 episodes and watch the spread of
# the running averages shrink like $\sigma / \sqrt N$:

# %%
runs = start_returns.reshape(20, 50)
running_means = np.cumsum(runs, axis=1) / np.arange(1, 51)
n = np.arange(1, 51)
spread = running_means.std(axis=0)
print(f"spread of the 20 estimates at N = 5, 50: {spread[4]:.3f}, {spread[49]:.3f} "
      f"(sigma/sqrt(N): {sigma / np.sqrt(5):.3f}, {sigma / np.sqrt(50):.3f})")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
axes[0].hist(start_returns, bins=40, color="C0")
axes[0].axvline(v_true[0], color="k", ls="--", label="V(start)")
axes[0].set(xlabel="return $G_0$ of one episode", ylabel="episodes",
            title="Single returns spread far wider than V")
axes[0].legend(fontsize=9)
axes[1].plot(n, running_means.T, color="C0", lw=0.6, alpha=0.6)
axes[1].plot([], [], color="C0", lw=0.6, label="20 runs' running means")
axes[1].plot(n, v_true[0] + sigma / np.sqrt(n), "k--", label="V ± σ/√N")
axes[1].plot(n, v_true[0] - sigma / np.sqrt(n), "k--")
axes[1].set(xlabel="episodes N", ylabel="estimate of V(start)",
            title="The spread shrinks like 1/√N")
axes[1].legend(fontsize=9)
plt.tight_layout()
plt.show()

# %% [markdown]
# To halve the error you need four times the episodes. Lesson 05's TD methods attack exactly
# this variance, by bootstrapping from the next state's estimate instead of waiting for the
# whole return.

# %% [markdown]
# **What exploring costs.** Before learning anything, DP tells you what is at stake. On
# FrozenLake, the best policy that keeps exploring with $\varepsilon = 0.1$ is the optimum of the
# modified MDP $P_\varepsilon$ of *The idea*:

# %%
EPSILON = 0.1


def epsilon_soft_optimum(P, R, gamma, terminal, epsilon):
    """V of the best epsilon-soft policy: optimal values of the MDP in which every action is
    replaced by a uniformly random one with probability epsilon."""
    P_eps = (1 - epsilon) * P + epsilon * P.mean(axis=1, keepdims=True)
    r = (P * R).sum(axis=2)  # expected reward of each (s, a)
    r_eps = (1 - epsilon) * r + epsilon * r.mean(axis=1, keepdims=True)
    return rc.value_iteration(P_eps, np.repeat(r_eps[:, :, None], len(P), axis=2), gamma,
                              terminal)[0]


GAMMA_LAKE = 0.95
for name, lake in [("slippery FrozenLake", rc.FrozenLake()),
                   ("deterministic FrozenLake", rc.FrozenLake(is_slippery=False))]:
    v_star = rc.value_iteration(lake.P, lake.R, GAMMA_LAKE, lake.terminal)[0]
    v_soft = epsilon_soft_optimum(lake.P, lake.R, GAMMA_LAKE, lake.terminal, EPSILON)
    print(f"{name:25s} V*(start) {v_star[0]:.3f}, best epsilon-soft {v_soft[0]:.3f} "
          f"({v_soft[0] / v_star[0]:.2f} of V*)")

# %% [markdown]
# How much exploring costs depends on the task: on the slippery lake the best exploring policy
# keeps a much smaller share of $V^*$ than on the deterministic one.
#
# **MC control with a constant and a decaying $\varepsilon$.** On the deterministic lake, ten runs
# of `rc.mc_control` (your step 3) with $\varepsilon = 0.1$ throughout, and ten with $\varepsilon$
# decaying linearly from 1 to 0 over the run, 1000 episodes each. After each run, DP evaluates
# two policies: the greedy policy of the learned $Q$, and the $\varepsilon$-greedy policy the run
# ended with (the one it was actually running):

# %%
lake = rc.FrozenLake(is_slippery=False)
P, R, terminal = lake.P, lake.R, lake.terminal
v_star, pi_star = rc.value_iteration(P, R, GAMMA_LAKE, terminal)
v_soft = epsilon_soft_optimum(P, R, GAMMA_LAKE, terminal, EPSILON)
LAKE_EPISODES = 1000
schedules = {"constant 0.1": np.full(LAKE_EPISODES, EPSILON),
             "1 -> 0": np.linspace(1.0, 0.0, LAKE_EPISODES)}
lake_runs, greedy_value, running_value = {}, {}, {}
for name, eps in schedules.items():
    lake_runs[name] = [rc.mc_control(lake, LAKE_EPISODES, gamma=GAMMA_LAKE, epsilon=eps, seed=seed)
                       for seed in SEEDS]
    greedy_value[name] = np.array([
        rc.policy_evaluation(P, R, np.eye(4)[run.policy], GAMMA_LAKE, terminal)[0]
        for run in lake_runs[name]]) / v_star[0]
    running_value[name] = np.array([
        rc.policy_evaluation(P, R, rc.epsilon_greedy_probs(run.Q, eps[-1]), GAMMA_LAKE,
                             terminal)[0] for run in lake_runs[name]]) / v_star[0]
print(f"V*(start) {v_star[0]:.3f}; best epsilon-soft: {v_soft[0] / v_star[0]:.3f} of V*")
print(f"{'schedule':13s} {'greedy policy / V* (median, range)':>36s} {'policy run at the end / V*':>30s}")
for name in schedules:
    g, b = greedy_value[name], running_value[name]
    print(f"{name:13s} {np.median(g):14.3f} ({g.min():.3f}-{g.max():.3f}) "
          f"{np.median(b):17.3f} ({b.min():.3f}-{b.max():.3f})")

# %%
longest = max(int(run.episode_lengths.max()) for runs_ in lake_runs.values() for run in runs_)
print(f"longest episode of the 20 runs: {longest} steps (time limit {lake.max_steps}: never cut)")
assert longest < lake.max_steps  # step 3 may ignore time limits (see Build it)
assert (greedy_value["constant 0.1"] > 0.999).sum() >= 8  # the greedy policy is optimal
assert np.abs(running_value["constant 0.1"] - v_soft[0] / v_star[0]).max() < 0.03

# %% [markdown]
# With a constant $\varepsilon$ the greedy policy you read off is optimal, but the policy the agent
# *runs* earns only about the best $\varepsilon$-soft value: it takes a random action on one step
# in ten (a *different* action from the greedy one on $\varepsilon(1 - 1/|A|)$ = 7.5% of steps).
# With $\varepsilon$ decaying to 0, the policy it runs at the end is the greedy one (the table's
# last column shows it; with $\varepsilon = 0$ the two policies coincide). What does decaying cost?
# Count the episodes that reached the goal (the lake pays 1 there and nothing else), early and
# late in each run:

# %%
half, last = LAKE_EPISODES // 2, 100
reached = {name: np.array([run.episode_returns for run in runs_]) for name, runs_ in lake_runs.items()}
for name, wins in reached.items():
    early, late = wins[:, :half].mean(axis=1), wins[:, -last:].mean(axis=1)
    print(f"epsilon {name:13s}: goal reached in episodes 1-{half}: median {np.median(early):.3f} "
          f"(range {early.min():.3f}-{early.max():.3f}); in the last {last}: median "
          f"{np.median(late):.3f} (range {late.min():.3f}-{late.max():.3f})")
early_gap = reached["constant 0.1"][:, :half].mean(axis=1) - reached["1 -> 0"][:, :half].mean(axis=1)
late_gap = reached["1 -> 0"][:, -last:].mean(axis=1) - reached["constant 0.1"][:, -last:].mean(axis=1)
print(f"paired runs (same seed): constant ahead early on {int((early_gap > 0).sum())} of 10; "
      f"decaying ahead in the last {last} on {int((late_gap > 0).sum())} of 10")
assert (early_gap > 0.3).all() and np.median(late_gap) > 0

# %% [markdown]
# The price of decaying is paid early: on every run, the decaying schedule reaches the goal far
# less often in the first half, while it still explores a lot. In the last episodes it reaches
# the goal more often than the constant schedule on most runs (the count above), whose random
# steps still end some episodes in a hole. The learning curves, in blocks of 50 episodes:

# %%
def success_curve(runs, block=50):
    """Fraction of episodes that reached the goal, per block of episodes [runs, blocks]."""
    wins = np.array([run.episode_returns for run in runs])
    return wins.reshape(len(runs), -1, block).mean(axis=2)


fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
blocks = np.arange(50, LAKE_EPISODES + 1, 50)
for (name, runs_), color in zip(lake_runs.items(), ["C0", "C1"]):
    curve = success_curve(runs_)
    ax.plot(blocks, np.median(curve, axis=0), color=color, marker="o", ms=3,
            label=f"epsilon {name} (median of 10)")
    ax.fill_between(blocks, curve.min(axis=0), curve.max(axis=0), color=color, alpha=0.2,
                    label=f"epsilon {name} (range)")
ax.set(xlabel="episode", ylabel="goal reached\n(fraction of 50 episodes)", ylim=(0, 1.05),
       title="Decaying ε explores more early, and stops paying for exploration at the end")
ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()

# %% [markdown]
# And what one run learned, next to the optimum (same colour scale):

# %%
run0 = lake_runs["constant 0.1"][0]
q_max = run0.Q.max(axis=1)
path, s = [], 0
while not terminal[s]:
    path.append(s)
    s = int(np.argmax(P[s, run0.policy[s]]))  # deterministic moves: follow the greedy arrows
off_path = [s for s in range(lake.num_states) if not terminal[s] and s not in path]
holes = np.flatnonzero(terminal & (lake.R.max(axis=(0, 1)) == 0))
into_hole = [s for s in off_path if P[s, run0.policy[s], holes].sum() > 0]
# Q of an epsilon-greedy learner estimates Q of its exploring policy: the greedy action now,
# then exploring. DP gives that for run 0's final epsilon-greedy policy:
v_explore = rc.policy_evaluation(P, R, rc.epsilon_greedy_probs(run0.Q, EPSILON), GAMMA_LAKE,
                                 terminal)
q_explore = rc.q_from_v(P, R, v_explore, GAMMA_LAKE, terminal)[np.arange(lake.num_states),
                                                                run0.policy]
print(f"greedy path {path}, means along it: V* - max_a Q {(v_star - q_max)[path].mean():.3f}; "
      f"V* - Q of the exploring policy (greedy action, then explore) "
      f"{(v_star - q_explore)[path].mean():.3f}; V* - V of the exploring policy "
      f"{(v_star - v_explore)[path].mean():.3f}")
print(f"the {len(off_path)} cells off the path: V* - max_a Q, mean {(v_star - q_max)[off_path].mean():.3f}; "
      f"greedy arrow into a hole in cell(s) {into_hole}")
assert (q_max[~terminal] <= v_star[~terminal] + 1e-9).all()

fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
rc.plot_grid(lake, q_max, run0.policy, ax=axes[0], annotate=False, vmin=0.0, vmax=1.0,
             label="max_a Q(s, a)", title="MC control (ε = 0.1): max Q, greedy arrows")
rc.plot_grid(lake, v_star, pi_star, ax=axes[1], annotate=False, vmin=0.0, vmax=1.0,
             label="V*(s)", title="Value iteration: V*, optimal arrows")
for ax in axes:  # one colour scale (0 to 1) for both panels
    ax.set(xlabel="column", ylabel="row")
    for label in ax.texts:  # the cell letters S, H, G: at the top of the cell, clear of arrows
        label.set_fontsize(10)
        label.set_y(label.get_position()[1] - 0.33)
plt.tight_layout()
plt.show()

# %% [markdown]
# $\max_a Q$ never exceeds $V^*$ here (a deterministic lake: no return can beat the optimal
# one). Along the greedy path it is lower, because $Q$ estimates the values of the exploring
# policy: for the greedy action, one greedy step and then exploring, which DP computes (the
# second printed mean, close to the first). A state's exploring value $V$ is lower still (the
# third mean), since it explores on the first step too. Off the path it is much
# lower, and an arrow can be plainly wrong: the agent goes there only when exploring, so those
# estimates rest on few returns, many of them from the first, poor episodes (exercise 1 is
# about how an average weighs old returns).
#
# **When exploring too little fails.** A 4x4 grid with four holes, a step cost of 0.01, and a
# hole worth 0: until the agent has found the goal a few times, falling into a hole early is
# the best outcome it knows. The same two schedules, ten runs each:

# %%
holes = rc.GridWorld(layout=["S..H", ".H..", "...H", "H..G"], slip=0.1, step_reward=-0.01)
v_holes = rc.value_iteration(holes.P, holes.R, GAMMA_LAKE, holes.terminal)[0]
hole_cells = np.array([cell == "H" for cell in "".join(holes.layout)])
falls_in = holes.P[:, :, hole_cells].sum(axis=2)  # reward 1 for entering a hole: then V is
                                                  # the probability of ending in one
holes_value, hole_prob = {}, {}
for name, eps in schedules.items():
    policies = [np.eye(4)[rc.mc_control(holes, LAKE_EPISODES, gamma=GAMMA_LAKE, epsilon=eps,
                                        seed=seed).policy] for seed in SEEDS]
    holes_value[name] = np.array([rc.policy_evaluation(holes.P, holes.R, pi, GAMMA_LAKE,
                                                       holes.terminal)[0]
                                  for pi in policies]) / v_holes[0]
    hole_prob[name] = np.array([rc.policy_evaluation(holes.P, falls_in[:, :, None] * np.ones(16),
                                                     pi, 0.999, holes.terminal)[0]
                                for pi in policies])
    good = int((holes_value[name] > 0.8).sum())
    print(f"epsilon {name:13s}: greedy policy / V* per run {np.round(holes_value[name], 2)}; "
          f"above 0.8 on {good} of 10; ends in a hole with probability above 0.5 on "
          f"{int((hole_prob[name] > 0.5).sum())} of 10")
print("\n".join(holes.layout))
assert (holes_value["1 -> 0"] > 0.8).sum() >= 8 > (holes_value["constant 0.1"] > 0.8).sum()

# %% [markdown]
# With ε = 0.1 from the first episode, most runs settle on a greedy policy worth about nothing:
# it walks into a hole. Starting with ε = 1 explores enough to find the goal on most runs (the
# count printed above; the assert asks for 8 of 10, since an unlucky run can still settle on a
# hole), and the schedule then narrows down to it. How much early exploration a task needs is the question GLIE
# schedules (greedy in the limit, infinite exploration) leave to you.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values far too large or small, growing with episode length | returns summed forwards ($G_t$ includes rewards *before* $t$) | compute $G_t = r_t + \gamma G_{t+1}$ backwards from the end |
# | a state's estimate mixes two episodes | the first state of the next episode (`obs` after `done`) was appended to the finished one | the finished episode ends at `final_obs`; start a new list |
# | MC control's greedy policy heads for a hole (or any early end) | a step cost makes ending early the best outcome seen, while the goal has rarely been found | explore more early: a schedule that starts at $\varepsilon = 1$ |
# | the policy you run never gets as good as the greedy one you read off | a constant $\varepsilon$: the running policy is at best the best $\varepsilon$-soft policy | decay $\varepsilon$ towards 0, and judge the greedy policy separately |
# | estimates still noisy after many episodes | high variance of long returns | more episodes ($\sigma/\sqrt N$), or TD (lesson 05) |
# | values biased low on a task with a time limit | truncated episodes treated as terminal (return completed with 0; lesson 05 shows the effect) | complete the return with $\gamma^k V(\text{final\_obs})$, as `rc.mc_prediction` does |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: how a constant step forgets.** MC control averages returns of a policy that keeps
#    changing, so old returns are stale. A constant step size $\alpha$ instead of $1/N$ forgets
#    them. Write `constant_alpha_weights(alpha, n)`: after $n$ updates
#    $V_k = V_{k-1} + \alpha (G_k - V_{k-1})$ from $V_0$, the weights of $V_0, G_1, \dots, G_n$
#    in $V_n$ (an array of $n + 1$ numbers, in that order).
#    Then answer: on the deterministic lake the best $\varepsilon$-soft policy ($\varepsilon = 0.1$)
#    keeps only part of $V^*$ (printed in *Use it*). Where does most of the loss go? Set
#    `exploring_loss` to one letter: (a) its greedy part is not the optimal policy; (b) random
#    actions that walk into a hole, ending the episode with nothing; (c) random detours that reach
#    the goal later, so $\gamma$ discounts the +1 more; (d) noise in the estimated $Q$.
# 2. **Medium: off-policy prediction with importance sampling.** You have episodes from a
#    *behaviour* policy $b$ and want $V$ of a different *target* policy $\pi$. Reweight each
#    return $G_t$ by $\rho_t = \prod_{k=t}^{T-1} \pi(A_k \mid S_k) / b(A_k \mid S_k)$, the
#    likelihood ratio of the actions that produced it. Write
#    `importance_sampling_mc(episodes, target, behaviour, num_states, gamma, weighted)`,
#    every-visit: *ordinary* IS averages $\rho_t G_t$ over the visits of a state; *weighted* IS
#    divides $\sum \rho_t G_t$ by $\sum \rho_t$ (0 where that sum is 0). `episodes` come from
#    `rc.record_episodes`. Then compare both with the truth on the 4x4 grid.
# 3. **Hard: off-policy Monte Carlo control** (Sutton & Barto, section 5.7). Learn the
#    *greedy* policy's $Q$ from the episodes of a fixed exploring behaviour policy: walk each
#    episode backwards with the return $G$ and the weight $W$ (start 1); at each step
#    $C(s, a) \mathrel{+}= W$, $Q(s, a) \mathrel{+}= \frac{W}{C(s, a)}(G - Q(s, a))$; stop the
#    episode if $A_t$ is not the greedy action of the updated $Q(S_t, \cdot)$ (lowest index among
#    ties); else $W \leftarrow W / b(A_t \mid S_t)$. Write
#    `off_policy_mc_control(episodes, behaviour, num_states, num_actions, gamma)` returning $Q$.
#    Then learn the deterministic lake from 3000 uniformly random episodes and evaluate the
#    greedy policy.

# %% tags=["solution"]
def constant_alpha_weights(alpha, n):
    return np.r_[(1 - alpha) ** n, alpha * (1 - alpha) ** np.arange(n - 1, -1, -1)]


exploring_loss = "b"

# %%
assert rc.exercises.check("constant_alpha_weights", constant_alpha_weights)
assert rc.exercises.check("where_exploring_loses", lambda: exploring_loss)

# %% [markdown]
# The split, by DP: the lake pays 1 at the goal and nothing else, so the exploring policy's
# $V/V^*$ is the probability that it reaches the goal times the average extra discount of the
# episodes that do.

# %%
P_eps = (1 - EPSILON) * P + EPSILON * P.mean(axis=1, keepdims=True)
r_sa = (P * R).sum(axis=2)
r_eps = (1 - EPSILON) * r_sa + EPSILON * r_sa.mean(axis=1, keepdims=True)
soft_pi = rc.value_iteration(P_eps, np.repeat(r_eps[:, :, None], len(P), axis=2), GAMMA_LAKE,
                             terminal)[1]
soft_probs = rc.epsilon_greedy_probs(np.eye(4)[soft_pi], EPSILON)
kept = rc.policy_evaluation(P, R, soft_probs, GAMMA_LAKE, terminal)[0] / v_star[0]
reach = rc.policy_evaluation(P, R, soft_probs, 1.0, terminal)[0]
print(f"best epsilon-soft policy: keeps {kept:.3f} of V*, reaches the goal with probability "
      f"{reach:.3f}; the episodes that reach it keep {kept / reach:.3f} of V*")
print(f"of the {1 - kept:.3f} lost: {1 - reach:.3f} to the holes, {reach - kept:.3f} to the "
      f"discounted detours")
assert abs(kept - v_soft[0] / v_star[0]) < 1e-6 and 1 - reach > 3 * (reach - kept)

# %% tags=["solution"]
def importance_sampling_mc(episodes, target, behaviour, num_states, gamma, weighted):
    total, weights, visits = np.zeros(num_states), np.zeros(num_states), np.zeros(num_states)
    for ep in episodes:
        s, a = ep.states[:-1], ep.actions
        rho = np.cumprod((target[s, a] / behaviour[s, a])[::-1])[::-1]
        for state, r, g in zip(s, rho, rc.mc_returns(ep.rewards, gamma)):
            total[state] += r * g
            weights[state] += r
            visits[state] += 1
    denominator = weights if weighted else visits
    return np.divide(total, denominator, out=np.zeros(num_states), where=denominator > 0)


grid_target = rc.epsilon_greedy_probs(np.eye(4)[rc.value_iteration(env.P, env.R, GAMMA,
                                                                   env.terminal)[1]], 0.2)
v_target = rc.policy_evaluation(env.P, env.R, grid_target, GAMMA, env.terminal)
data = rc.record_episodes(env, random_policy, 500, seed=4)
for weighted in (False, True):
    v_is = importance_sampling_mc(data, grid_target, random_policy, S, GAMMA, weighted)
    error = np.sqrt(np.mean((v_is - v_target)[live] ** 2))
    print(f"{'weighted' if weighted else 'ordinary':8s} IS, 500 random episodes: RMS error {error:.3f}")

# %%
assert rc.exercises.check("importance_sampling_mc", importance_sampling_mc)

# %% tags=["solution"]
def off_policy_mc_control(episodes, behaviour, num_states, num_actions, gamma):
    Q, C = np.zeros((num_states, num_actions)), np.zeros((num_states, num_actions))
    for ep in episodes:
        G, W = 0.0, 1.0
        for t in reversed(range(len(ep.rewards))):
            s, a = int(ep.states[t]), int(ep.actions[t])
            G = gamma * G + ep.rewards[t]
            C[s, a] += W
            Q[s, a] += W / C[s, a] * (G - Q[s, a])
            if a != int(np.argmax(Q[s])):
                break
            W /= behaviour[s, a]
    return Q


uniform4 = np.full((lake.num_states, 4), 0.25)
off_q = off_policy_mc_control(rc.record_episodes(lake, uniform4, 3000, seed=5), uniform4,
                              lake.num_states, 4, GAMMA_LAKE)
v_off = rc.policy_evaluation(P, R, np.eye(4)[off_q.argmax(axis=1)], GAMMA_LAKE, terminal)
print(f"greedy policy learned off-policy from random play: V(start) {v_off[0]:.3f} "
      f"(V* {v_star[0]:.3f})")

# %%
assert rc.exercises.check("off_policy_mc_control", off_policy_mc_control)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | Monte Carlo (MC) | "learn from complete episodes" | estimate a value by averaging sampled returns; update only once the episode has ended |
# | return $G_t$ | "the reward you got" | the discounted sum of the rewards from the step taken at time $t$ to the episode's end |
# | first-visit MC | "count each state once" | average the returns after each state's first visit per episode; unbiased |
# | every-visit MC | "use all the data" | average the returns after every visit; correlated samples, biased for small $N$, consistent |
# | bootstrapping | "using your own estimates" | building a target from other value estimates; MC does not, DP and TD do |
# | $\varepsilon$-soft policy | "keep exploring" | every action has probability at least $\varepsilon/|A|$ in every state |
# | best $\varepsilon$-soft policy | "optimal with exploration" | the optimum of the MDP in which each action is replaced by a random one with probability $\varepsilon$; its value can be far below $V^*$ |
# | $\varepsilon$ schedule | "decay epsilon" | a different $\varepsilon$ for each episode, e.g. decaying to 0 so that the policy you run becomes greedy |
# | on-policy / off-policy | "learn about what you do" / "about another policy" | the policy being evaluated or improved generates the data / a different (behaviour) policy does, corrected by importance sampling |
# | variance of the return | "MC is noisy" | the spread of $G_t$ around $V(s)$; the estimate's error falls only as $\sigma/\sqrt N$ |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 5:
#   first- and every-visit prediction, exploring starts (and why their convergence is an open
#   question), on-policy control with $\varepsilon$-soft policies (section 5.4), importance
#   sampling and off-policy MC control (sections 5.5-5.7).
# - Singh & Sutton (1996), *Reinforcement learning with replacing eligibility traces*, Machine
#   Learning 22: the bias and variance of first-visit and every-visit MC, and their link to
#   replacing and accumulating traces, which lesson 05 uses.
# - Singh, Jaakkola, Littman & Szepesvári (2000), *Convergence results for single-step
#   on-policy reinforcement-learning algorithms*, Machine Learning 38: the GLIE conditions
#   (greedy in the limit, infinite exploration) under which decaying exploration converges.
# - Precup, Sutton & Singh (2000), *Eligibility traces for off-policy policy evaluation*, ICML:
#   ordinary, weighted and per-decision importance sampling for off-policy prediction.
