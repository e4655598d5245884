# %% [markdown]
# # 02 · MDPs and Bellman equations
#
# *Prerequisites:* 00, 01
# *Time:* 50 minutes
# *You will build:* the discounted return, the Markov chain a policy induces, the Bellman expectation equation solved exactly and by sweeps, and action values; then you will meet the optimal values V* and Q* on worked examples.

# %% [markdown]
# A bandit's actions only change the reward you get now. In most problems an action also
# changes the *situation* you are in next, and so every reward after it. This lesson gives
# that setting its name, the Markov decision process, and its central equation, which says
# how the value of a situation depends on the values of the ones that follow.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

GAMMA = 0.9
plt.rcParams.update({"font.size": 10, "legend.fontsize": 9, "figure.dpi": 100})

# %% [markdown]
# ## The problem
#
# A 5x5 GridWorld: you start top-left (`S`), the goal `G` bottom-right pays +1 and ends the
# episode, and every other move costs 0.01. Actions are LEFT, DOWN, RIGHT, UP (0-3).
# Try the bandit view: judge each action by its expected *immediate* reward.

# %%
grid = rc.GridWorld(size=5, step_reward=-0.01)
print(grid)
immediate = np.einsum("sat,sat->sa", grid.P, grid.R)  # sum_s' P[s,a,s'] R[s,a,s']
print("expected immediate reward of LEFT, DOWN, RIGHT, UP in the start state:",
      np.round(immediate[0], 3))
print("states where the four actions do not all pay the same:",
      np.flatnonzero(np.ptp(immediate, axis=1) > 0).tolist())

# %% [markdown]
# All four actions look the same in the start state: each costs 0.01. Only in the states
# printed last, the two cells next to the goal, does one action stand out. A method that looks one
# reward ahead cannot find its way here; you need the value of *where an action leads*, which
# depends on all the rewards after it.

# %% [markdown]
# ## The idea
#
# A **Markov decision process** is a tuple $(\mathcal S, \mathcal A, P, R, \gamma)$: states,
# actions, transition probabilities $P(s' \mid s, a)$ (`P[s, a, s']`), rewards $R(s, a, s')$
# (`R[s, a, s']`) and a discount $\gamma \in [0, 1]$. *Markov* means the next state and reward
# depend only on the current state and action, not on how you got there; that is what lets a
# table indexed by the state summarise the past. Some states are **terminal**: reaching one
# ends the episode, and nothing comes after it.
#
# The **return** from time $t$ is the discounted sum of the rewards that follow,
# $$G_t = r_t + \gamma r_{t+1} + \gamma^2 r_{t+2} + \dots = r_t + \gamma G_{t+1},$$
# where $r_t$ is the reward of the transition taken at time $t$, from $s_t$ with $a_t$ (the
# number `env.step(a_t)` returns, as in Gymnasium). Sutton & Barto call the same reward
# $R_{t+1}$ and write $G_t = R_{t+1} + \gamma R_{t+2} + \dots$: the same number with the index
# shifted by one. With $\gamma < 1$ a reward $k$ steps away counts $\gamma^k$ as much, so the
# effective horizon is about $1/(1-\gamma)$ steps.
#
# A **policy** $\pi(a \mid s)$ picks actions. Its **state value** is the expected return from
# $s$, $V^\pi(s) = \mathbb E_\pi[G_t \mid s_t = s]$, and its **action value** the expected return
# after taking $a$ first, $Q^\pi(s, a)$. Splitting off the first step of $G_t = r_t + \gamma
# G_{t+1}$ gives the **Bellman expectation equation**:
# $$Q^\pi(s, a) = \sum_{s'} P(s' \mid s, a)\big[R(s, a, s') + \gamma V^\pi(s')\big], \qquad
# V^\pi(s) = \sum_a \pi(a \mid s)\, Q^\pi(s, a),$$
# with $V^\pi(s) = 0$ at terminal states: they never *bootstrap*, because no reward follows
# them. With $P_\pi(s, s') = \sum_a \pi(a|s) P(s'|s,a)$ and $r_\pi(s)$ the expected immediate
# reward, it is a linear system, one equation per state:
# $$V^\pi = r_\pi + \gamma P_\pi V^\pi \quad\Longleftrightarrow\quad (I - \gamma P_\pi)V^\pi = r_\pi.$$
# You can solve it exactly, or apply the right-hand side again and again from $V = 0$: each
# application ("sweep") shrinks the largest error over states by at least a factor $\gamma$.
#
# **The best you can do.** The optimal values are the best any policy achieves, state by
# state: $V^*(s) = \max_\pi V^\pi(s)$ and $Q^*(s, a) = \max_\pi Q^\pi(s, a)$. They satisfy the
# **Bellman optimality equation**, the expectation equation with the policy's average over
# actions replaced by a max:
# $$Q^*(s, a) = \sum_{s'} P(s' \mid s, a)\big[R(s, a, s') + \gamma V^*(s')\big], \qquad
# V^*(s) = \max_a Q^*(s, a).$$
# A policy that is greedy with respect to $Q^*$, $\pi^*(s) = \arg\max_a Q^*(s, a)$, attains
# $V^*$ in *every* state at once, so one policy is best everywhere.
#
# **A worked example.** Three states, $\gamma = 0.9$. In state 0, action 0 pays 1 and ends
# the episode; action 1 pays 0 and moves to state 1. In state 1, action 0 pays 2 and ends;
# action 1 pays 0 and goes back to state 0. State 2 is terminal. By hand, from the back:
# $Q^*(1, 0) = 2$, and $Q^*(1, 1) = 0 + 0.9\, V^*(0) < 2$ as long as $V^*(0) < 2.2$, so
# $V^*(1) = 2$. Then $Q^*(0, 0) = 1$ and $Q^*(0, 1) = 0 + 0.9 \cdot 2 = 1.8$: the detour is
# worth more than the reward on offer now, and $V^*(0) = 1.8$. With $\gamma = 0.4$ the detour
# would be worth $0.8 < 1$ and you would take the 1. Check it by brute force: this MDP has
# only four deterministic policies; evaluate each exactly and take the best value in each
# state.

# %%
P3 = np.zeros((3, 2, 3))
R3 = np.zeros((3, 2, 3))
P3[0, 0, 2], R3[0, 0, 2] = 1.0, 1.0  # state 0, action 0: end now with reward 1
P3[0, 1, 1] = 1.0                    # state 0, action 1: to state 1, reward 0
P3[1, 0, 2], R3[1, 0, 2] = 1.0, 2.0  # state 1, action 0: end with reward 2
P3[1, 1, 0] = 1.0                    # state 1, action 1: back to state 0, reward 0
P3[2, :, 2] = 1.0                    # state 2: terminal
T3 = np.array([False, False, True])

for gamma in (0.9, 0.4):
    table = {(a0, a1): rc.policy_evaluation_exact(P3, R3, np.array([a0, a1, 0]), gamma, T3)
             for a0 in (0, 1) for a1 in (0, 1)}
    best = np.max(list(table.values()), axis=0)
    print(f"gamma {gamma}: " + "; ".join(f"policy {k}: V = {np.round(v[:2], 3)}"
                                         for k, v in table.items()))
    winner = [k for k, v in table.items() if np.allclose(v, best)]
    print(f"  best value in each state {np.round(best[:2], 3)}, reached by policy {winner} "
          f"in both states at once; Q*(0, .) = "
          f"{np.round(rc.q_from_v(P3, R3, best, gamma, T3)[0], 3)}")
    assert len(winner) == 1
V3_star = rc.policy_evaluation_exact(P3, R3, np.array([1, 0, 0]), 0.9, T3)
np.testing.assert_allclose(V3_star, [1.8, 2.0, 0.0])
assert np.allclose(rc.bellman_optimality_backup(P3, R3, V3_star, 0.9, T3), V3_star)

# %% [markdown]
# At $\gamma = 0.9$ one policy, (1, 0) (take the detour, then cash in), is best in both states,
# and its values satisfy the optimality equation. At $\gamma = 0.4$ the best policy takes the
# 1 at once. Brute force does not scale (a policy per combination of actions), and lesson 03
# computes $V^*$ without it. First, the tools for evaluating one policy.

# %% [markdown]
# ## Build it
#
# **Step 1: the return of an episode**, $G_0 = \sum_t \gamma^t r_t$, for a list of rewards.

# %% tags=["solution"]
def my_discounted_return(rewards, gamma):
    """G_0 = sum_t gamma^t rewards[t]."""
    rewards = np.asarray(rewards, dtype=float)
    return float(np.sum(gamma ** np.arange(rewards.size) * rewards))


# %%
assert rc.exercises.check("discounted_return", my_discounted_return)

# %% [markdown]
# **Step 2: the policy's own dynamics.** Average `P` and the expected rewards over the
# policy's action probabilities `policy [S, A]`, and cut the terminal states out: a terminal
# state pays nothing and is worth 0, so its row of $P_\pi$ and its $r_\pi$ are zero. The
# reward for *entering* a terminal state stays: it belongs to the state before. (Zeroing the
# terminal states' columns too is up to you: with $V = 0$ there it changes no value, and
# `rc.policy_dynamics` does it, so that a row's missing mass is the chance the episode ends.)

# %% tags=["solution"]
def my_policy_dynamics(P, R, policy, terminal):
    """P_pi [S, S] and r_pi [S] of a stochastic policy [S, A]; terminal rows zero."""
    P_pi = np.einsum("sa,sat->st", policy, P)
    r_pi = np.einsum("sa,sat,sat->s", policy, P, R)
    P_pi[terminal] = 0.0
    P_pi[:, terminal] = 0.0
    r_pi[terminal] = 0.0
    return P_pi, r_pi


# %%
assert rc.exercises.check("policy_dynamics", my_policy_dynamics)

# %% [markdown]
# **Step 3: solve the Bellman equation exactly**, $V = (I - \gamma P_\pi)^{-1} r_\pi$
# (with `np.linalg.solve`; never form the inverse).

# %% tags=["solution"]
def my_solve_bellman(P_pi, r_pi, gamma):
    """V^pi [S] from the policy's dynamics."""
    return np.linalg.solve(np.eye(len(r_pi)) - gamma * P_pi, r_pi)


# %%
assert rc.exercises.check("solve_bellman", my_solve_bellman)

# %% [markdown]
# **Step 4: solve it by sweeps.** Start from $V_0 = 0$ and apply $V_{k+1} = r_\pi + \gamma
# P_\pi V_k$ to the whole vector at once, `k` times; return $V_k$.

# %% tags=["solution"]
def my_evaluation_sweeps(P_pi, r_pi, gamma, k):
    """V_k after k synchronous sweeps from V_0 = 0."""
    V = np.zeros(len(r_pi))
    for _ in range(k):
        V = r_pi + gamma * P_pi @ V
    return V


# %%
assert rc.exercises.check("evaluation_sweeps", my_evaluation_sweeps)

# %% [markdown]
# **Step 5: action values.** One backup turns any $V$ into $Q$: for every state and action,
# the expected reward plus the discounted value of where it lands, with $V$ read as 0 at
# terminal states (whatever the array holds there) and $Q = 0$ on their rows.

# %% tags=["solution"]
def my_q_from_v(P, R, V, gamma, terminal):
    """Q [S, A] = sum_s' P[s, a, s'] (R[s, a, s'] + gamma V[s']); 0 on terminal rows."""
    V = np.where(terminal, 0.0, V)
    Q = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :])
    Q[terminal] = 0.0
    return Q


# %%
assert rc.exercises.check("q_from_v", my_q_from_v)

# %% [markdown]
# The reference holds the same steps; `rc.policy_dynamics` validates its input and calls this
# core, and `rc.policy_evaluation_exact` solves the system with it. One difference in the
# arguments: the core takes `r [S, A]`, the expected reward of each state and action,
# $r(s, a) = \sum_{s'} P(s'|s,a) R(s,a,s')$, which the reference computes once, when it
# checks the model, instead of your step 2's `R [S, A, S']`:

# %%
print(inspect.getsource(rc.tabular.dp._policy_dynamics))
print(inspect.getsource(rc.tabular.dp._solve))

# %% [markdown]
# ## Check it
#
# What must hold, in code, for the uniformly random policy on the 5x5 grid: the exact values
# satisfy the Bellman equation; terminal states are worth 0; $V^\pi$ is the policy-weighted
# average of $Q^\pi$; the sweeps converge to the exact values, each sweep's change at most
# $\gamma$ times the previous one's; and real sampled episodes agree with the equation.

# %%
S, A = grid.num_states, grid.num_actions
random_policy = np.full((S, A), 1 / A)
P_pi, r_pi = rc.policy_dynamics(grid.P, grid.R, random_policy, grid.terminal)
V_random = rc.policy_evaluation_exact(grid.P, grid.R, random_policy, GAMMA, grid.terminal)
Q_random = rc.q_from_v(grid.P, grid.R, V_random, GAMMA, grid.terminal)
V_sweeps, changes = rc.policy_evaluation(grid.P, grid.R, random_policy, GAMMA, grid.terminal,
                                         return_history=True)
residual = np.abs(V_random - (r_pi + GAMMA * P_pi @ V_random)).max()
print(f"V_random(start) = {V_random[0]:.4f}; Bellman residual below 1e-12: {residual < 1e-12}")
print(f"rows of P_pi sum to 1 except: {np.flatnonzero(~np.isclose(P_pi.sum(axis=1), 1)).tolist()}")
print(f"sweeps until no value changes by 1e-10: {len(changes)}; largest ratio of successive "
      f"changes: {(changes[1:] / changes[:-1]).max():.4f} (gamma = {GAMMA})")
assert residual < 1e-12
assert np.all(V_random[grid.terminal] == 0.0)
np.testing.assert_allclose((random_policy * Q_random).sum(axis=1), V_random, atol=1e-12)
np.testing.assert_allclose(V_sweeps, V_random, atol=1e-9)
assert np.all(changes[1:] <= GAMMA * changes[:-1] + 1e-15)

# %% [markdown]
# The rows of $P_\pi$ that do not sum to 1 are the goal's (no successor) and those of the two
# cells next to it, where part of the probability leaves the table into the terminal state:
# that missing mass is the chance that the episode ends.
#
# **Sampled episodes.** Play the random policy in 2000 copies of the grid at once and add up
# each copy's discounted rewards until its first episode ends. The mean is a Monte Carlo
# estimate of $V^\pi(\text{start})$, with a standard error that says how far it may stray.

# %%
n = 2000
sim = rc.GridWorld(size=5, step_reward=-0.01, n=n, seed=SEED)
sim.reset()
returns, discount = np.zeros(n), np.ones(n)
running = np.ones(n, dtype=bool)  # the copy is still in its first episode
while running.any():
    step = sim.step(rng.integers(4, size=n))
    returns += running * discount * step.reward  # G = r_0 + gamma r_1 + ..., built forwards
    discount *= GAMMA
    running &= ~step.done  # a finished episode adds nothing more (the copy has reset)
mc_value, mc_error = returns.mean(), returns.std(ddof=1) / np.sqrt(n)
print(f"Monte Carlo V_random(start) = {mc_value:.4f} +- {mc_error:.4f}; exact {V_random[0]:.4f}; "
      f"{abs(mc_value - V_random[0]) / mc_error:.1f} standard errors apart")
assert abs(mc_value - V_random[0]) < 4 * mc_error

# %% [markdown]
# If you forget to cut the terminal states out, the goal's self-loop makes it an ordinary
# state. Here its self-loop pays nothing, so the values happen to survive; give the terminal
# self-loop a reward (as a careless model might) and watch the values leak:

# %%
R_leaky = grid.R.copy()
R_leaky[24, :, 24] = 1.0  # a reward for "staying" in the goal, which no episode ever collects
V_masked = rc.policy_evaluation_exact(grid.P, R_leaky, random_policy, GAMMA, grid.terminal)
V_unmasked = rc.policy_evaluation_exact(grid.P, R_leaky, random_policy, GAMMA)  # no terminal mask
print(f"with the terminal mask:    V(goal) = {V_masked[24]:.4f}, V(start) = {V_masked[0]:+.4f}")
print(f"without the terminal mask: V(goal) = {V_unmasked[24]:.4f}, V(start) = {V_unmasked[0]:+.4f}")
assert np.allclose(V_masked, V_random)
assert np.isclose(V_unmasked[24], 1 / (1 - GAMMA)) and V_unmasked[0] > V_masked[0]

# %% [markdown]
# ## Use it
#
# **Two policies in a maze.** A GridWorld with walls (`W`) and a hole (`H`, terminal, entering
# it pays -1), and two policies: uniformly random, and one that heads for the goal, moving
# RIGHT or DOWN with equal probability. Where does each end up? The probability of ending in
# the hole is itself a value: the value, at $\gamma = 1$, of a reward of 1 for entering the
# hole and 0 for everything else. So the same solver answers it.

# %%
maze = rc.GridWorld(layout=["S....", ".WW..", "...H.", ".W...", "....G"], step_reward=-0.01,
                    hole_reward=-1.0)
S_maze = maze.num_states
cells = np.array(list("".join(maze.layout)))
right_down = np.zeros((S_maze, 4))
right_down[:, [rc.DOWN, rc.RIGHT]] = 0.5
policies = {"random": np.full((S_maze, 4), 0.25), "RIGHT or DOWN": right_down}


def absorption(policy, cell):
    """Probability that an episode from each state ends by entering a `cell` ('H' or 'G')."""
    indicator = np.zeros_like(maze.R)
    indicator[:, :, cells == cell] = 1.0
    return rc.policy_evaluation_exact(maze.P, indicator, policy, 1.0, maze.terminal)


values, ends = {}, {}
for name, pi in policies.items():
    values[name] = rc.policy_evaluation_exact(maze.P, maze.R, pi, GAMMA, maze.terminal)
    ends[name] = {c: absorption(pi, c)[0] for c in "HG"}
    print(f"{name:13s} from S: P(hole) = {ends[name]['H']:.3f}, P(goal) = {ends[name]['G']:.3f}, "
          f"V(start) = {values[name][0]:+.4f} at gamma {GAMMA}")
    assert np.isclose(ends[name]["H"] + ends[name]["G"], 1.0)  # every episode ends, in H or G
assert ends["random"]["H"] > 0.5 > ends["RIGHT or DOWN"]["H"]

# %%
low = min(v.min() for v in values.values())
high = max(v.max() for v in values.values())
fig, axes = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
for ax, (name, v) in zip(axes, values.items()):
    rc.plot_grid(maze, v, policies[name], ax=ax, vmin=low, vmax=high, colorbar=False,
                 title=f"{name}\nends in the hole {100 * ends[name]['H']:.0f}% of the time")
fig.colorbar(axes[0].images[0], ax=axes, label=f"V (discounted return, gamma {GAMMA})")
plt.show()

# %%
live_maze = ~maze.terminal
for name, v in values.items():
    print(f"{name:13s} cells with V < 0: {np.sum(v[live_maze] < 0)} of {live_maze.sum()}")
rd_values = np.where(live_maze, values["RIGHT or DOWN"], np.inf)
worst = np.argsort(rd_values)[:2]
into_hole = maze.P[:, :, cells == "H"].sum(axis=2)  # P(enter the hole next step) [S, A]
print("RIGHT or DOWN, lowest-valued cells (row, col):", [divmod(int(s), 5) for s in worst],
      "; chance that one move from them enters the hole:",
      [float(right_down[s] @ into_hole[s]) for s in worst])
assert np.sum(values["random"][live_maze] < 0) > 0.8 * live_maze.sum()
assert np.sum(values["RIGHT or DOWN"][live_maze] < 0) < 0.2 * live_maze.sum()
assert all(right_down[s] @ into_hole[s] > 0 for s in worst)

# %% [markdown]
# The two maps share one colour scale, so colours compare across them. The value of a cell is
# the expected *discounted* return from it: it mixes where the policy ends (hole or goal) with
# how soon, and with the small cost of every step on the way. The random policy's values are
# negative in most cells, since it mostly ends in the hole; the RIGHT-or-DOWN policy's are
# positive in most. Its two worst cells are the ones next to the hole, above it and left of it,
# where half of its moves go straight in.
#
# Discounting sets how far ahead the values look. With $\gamma = 0.5$ the goal is invisible
# from more than a few steps away; with $\gamma = 0.99$ the whole grid feels it.

# %%
gammas = (0.5, 0.9, 0.99)
by_gamma = {g: rc.policy_evaluation_exact(maze.P, maze.R, right_down, g, maze.terminal)
            for g in gammas}
low = min(v.min() for v in by_gamma.values())
high = max(v.max() for v in by_gamma.values())
fig, axes = plt.subplots(1, 3, figsize=(10, 3.6), layout="constrained")
for ax, (g, v) in zip(axes, by_gamma.items()):
    rc.plot_grid(maze, v, ax=ax, vmin=low, vmax=high, colorbar=False,
                 title=f"gamma {g}: V(S) = {v[0]:+.2f}")
fig.colorbar(axes[0].images[0], ax=axes, label="V of RIGHT-or-DOWN")
fig.suptitle("A larger gamma lets the goal's reward reach further back")
plt.show()

# %%
near_start = [by_gamma[g][0] for g in gammas]
print("V_right_down(start) for gamma 0.5, 0.9, 0.99:", [f"{v:+.4f}" for v in near_start])
assert near_start[0] < near_start[1] < near_start[2]

# %% [markdown]
# **The optimal values of the open grid, by hand.** Back to the 5x5 grid with no walls. Moves
# are deterministic, so the best you can do from a cell at Manhattan distance $d \ge 1$ from
# the goal is to walk straight there: $d - 1$ moves that cost 0.01 each, then the move into
# the goal that pays 1,
# $$V^*(s) = -0.01\,\big(1 + \gamma + \dots + \gamma^{d-2}\big) + \gamma^{d-1}
# = -0.01\,\frac{1 - \gamma^{d-1}}{1 - \gamma} + \gamma^{d-1}.$$
# A guess like this is confirmed by the Bellman optimality equation: if one backup with the
# max leaves it unchanged, it *is* $V^*$ (the equation has only one solution). Then
# $Q^* = $ `rc.q_from_v(V*)`, and every action that attains the max is optimal.

# %%
row, col = np.divmod(np.arange(S), 5)
distance = (4 - row) + (4 - col)
V_star = np.where(distance > 0,
                  -0.01 * (1 - GAMMA ** (distance - 1)) / (1 - GAMMA) + GAMMA ** (distance - 1),
                  0.0)
backed_up = rc.bellman_optimality_backup(grid.P, grid.R, V_star, GAMMA, grid.terminal)
Q_star = rc.q_from_v(grid.P, grid.R, V_star, GAMMA, grid.terminal)
optimal = Q_star >= Q_star.max(axis=1, keepdims=True) - 1e-12  # every best action
V_greedy = rc.policy_evaluation_exact(grid.P, grid.R, Q_star.argmax(axis=1), GAMMA, grid.terminal)
V_right_down = rc.policy_evaluation_exact(grid.P, grid.R, right_down, GAMMA, grid.terminal)
print(f"V*(start) = {V_star[0]:.4f}; one optimality backup changes no value by 1e-12: "
      f"{np.abs(backed_up - V_star).max() < 1e-12}")
print("Q*(start, LEFT/DOWN/RIGHT/UP):", np.round(Q_star[0], 4))
live = ~grid.terminal
for name, v in (("random", V_random), ("RIGHT or DOWN", V_right_down)):
    gap = (V_star - v)[live]
    print(f"V* - V of {name:13s} over the non-terminal cells: min {gap.min():.4f}, "
          f"max {gap.max():.4f}, zero in {np.sum(gap < 1e-12)} of {live.sum()}")
assert np.abs(backed_up - V_star).max() < 1e-12
np.testing.assert_allclose(V_greedy, V_star, atol=1e-12)
assert np.all(V_star >= V_random - 1e-12) and np.all(V_star >= V_right_down - 1e-12)

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
low, high = min(V_random.min(), V_star.min()), V_star.max()
rc.plot_grid(grid, V_random, random_policy, ax=axes[0], vmin=low, vmax=high, colorbar=False,
             title="random policy: V_random")
rc.plot_grid(grid, V_star, optimal / optimal.sum(axis=1, keepdims=True), ax=axes[1], vmin=low,
             vmax=high, colorbar=False, title="V* and every optimal action")
fig.colorbar(axes[0].images[0], ax=axes, label=f"value (gamma {GAMMA})")
plt.show()

# %% [markdown]
# Where DOWN and RIGHT are both shortest, both arrows are drawn: they tie exactly, and any
# policy that picks among them is optimal. No policy beats $V^*$ anywhere; the gaps printed
# above are all positive. The random policy falls far short. RIGHT-or-DOWN falls short too,
# by less: its moves are shortest until it reaches the bottom row or the right column, where
# half of them bump into the edge and waste a step, and every cell's value pays for those
# later steps. In the maze, walls and a hole make a hand formula awkward; lesson 03 computes
# $V^*$ for any finite MDP.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values at the goal are huge, or creep upward everywhere | terminal states bootstrap from their own self-loop | $V = 0$ at terminal states; zero their rows in $P_\pi$ |
# | the reward of reaching the goal is missing from $V$ | zeroing the reward of transitions *into* terminal states | keep the entering reward; only what happens *after* the terminal state is cut |
# | `LinAlgError: singular matrix` | $\gamma = 1$ and the policy can loop forever without terminating | use $\gamma < 1$, or a policy that surely terminates |
# | iterative values never settle | $\gamma$ close to 1: the error shrinks by only $\gamma$ per sweep | more sweeps, or the exact solve for small state spaces |
# | values too small by about a factor $\gamma$ | discounting the first reward ($\gamma^{t+1}$ instead of $\gamma^t$) | $G_t = r_t + \gamma r_{t+1} + \dots$ |
# | returns off by one step against a textbook | Sutton & Barto's $R_{t+1}$ is this lesson's $r_t$ | check which transition a reward index names |
# | Monte Carlo returns leak across episodes | summing rewards after a copy's episode ended (it has already reset) | stop accumulating at `done` |
# | a value map "shows where the policy ends up" | reading discounted returns as probabilities | compute absorption probabilities ($\gamma = 1$, reward 1 on entering the cell) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: how long does an episode last?** Write `expected_steps(P, policy, terminal)`
#    returning, for each state, the expected number of steps until the episode ends under a
#    stochastic policy `[S, A]` (0 at terminal states). Hint: it is a value function.
# 2. **Medium: $Q^\pi$ directly.** The lesson found $Q^\pi$ from $V^\pi$. Write
#    `q_evaluation(P, R, policy, gamma, terminal)` that solves for $Q^\pi$ `[S, A]` as one
#    linear system over state-action pairs, without computing $V^\pi$ first (the checker
#    refuses an answer that calls `rc.policy_evaluation_exact`, `rc.policy_evaluation`,
#    `rc.policy_dynamics` or `rc.q_from_v`).
# 3. **Hard: where does the time go?** The discounted occupancy of a policy from a start
#    distribution $\mu$ is $d(s) = \sum_{t \ge 0} \gamma^t \Pr(s_t = s)$ (not normalised; no
#    time is spent in terminal states). Write `discounted_occupancy(P, policy, terminal, start,
#    gamma)`. Then check that $\mu \cdot V^\pi = d \cdot r_\pi$: the value of the start is
#    the reward per step weighted by where the time goes (lesson 08's policy gradient leans on
#    this). Write `start_value_from_occupancy(P, R, policy, terminal, start, gamma)` returning
#    $\mu \cdot V^\pi$ computed as $d \cdot r_\pi$ from your occupancy; the checker compares
#    it with $\mu \cdot V^\pi$ solved the lesson's way, and refuses an answer that computes
#    $V^\pi$.
# 4. **Explain why**: every value map above shows $V(G) = 0$, although entering the goal pays
#    +1. Which is the reason? (a) a bug: the goal should be worth +1; (b) the +1 is paid by the
#    transition *into* G and counted in the values of the states before it, and $V(s)$ is what
#    is still to come from $s$; (c) $\gamma$ discounts the +1 to 0; (d) rewards are only paid on
#    leaving a state, and nobody leaves G. Set `goal_value_answer` to a letter.

# %% tags=["solution"]
def expected_steps(P, policy, terminal):
    P_pi, _ = rc.policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    ones = (~terminal).astype(float)  # every step before the end counts 1
    return np.linalg.solve(np.eye(len(ones)) - P_pi, ones)


# %%
assert rc.exercises.check("expected_steps", expected_steps)

# %% tags=["solution"]
def q_evaluation(P, R, policy, gamma, terminal):
    S, A = policy.shape
    r = np.einsum("sat,sat->sa", P, R) * ~terminal[:, None]
    live = P * ~terminal[None, None, :]  # nothing bootstraps through a terminal state
    M = np.einsum("sat,tb->satb", live, policy).reshape(S * A, S * A)  # (s, a) -> (s', a')
    Q = np.linalg.solve(np.eye(S * A) - gamma * M, r.ravel()).reshape(S, A)
    return Q * ~terminal[:, None]


# %%
assert rc.exercises.check("q_evaluation", q_evaluation)

# %% tags=["solution"]
def discounted_occupancy(P, policy, terminal, start, gamma):
    P_pi, _ = rc.policy_dynamics(P, np.zeros(P.shape[:2]), policy, terminal)
    start = np.where(terminal, 0.0, start)
    return np.linalg.solve(np.eye(len(start)) - gamma * P_pi.T, start)


# %%
assert rc.exercises.check("discounted_occupancy", discounted_occupancy)

# %% tags=["solution"]
def start_value_from_occupancy(P, R, policy, terminal, start, gamma):
    _, r_pi = rc.policy_dynamics(P, R, policy, terminal)
    return float(discounted_occupancy(P, policy, terminal, start, gamma) @ r_pi)


# %%
assert rc.exercises.check("start_value_from_occupancy", start_value_from_occupancy)

# %% tags=["solution"]
goal_value_answer = "b"

# %%
assert rc.exercises.check("goal_value_question", lambda: goal_value_answer)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | MDP | "the environment" | the tuple $(\mathcal S, \mathcal A, P, R, \gamma)$; here given as arrays `P [S, A, S]`, `R [S, A, S]` |
# | Markov property | "memoryless" | the next state and reward depend only on the current state and action |
# | terminal state | "the end" | a state that ends the episode; its value is 0 and nothing bootstraps from it |
# | return $G_t$ | "total reward" | the *discounted* sum of rewards from time $t$: $r_t + \gamma G_{t+1}$ ($r_t$ is Sutton & Barto's $R_{t+1}$) |
# | discount $\gamma$ | "how much the future matters" | weight $\gamma^k$ on a reward $k$ steps ahead; horizon about $1/(1-\gamma)$ |
# | policy $\pi$ | "the agent's strategy" | action probabilities $\pi(a \mid s)$ for each state (or one action per state) |
# | $V^\pi(s)$ | "how good the state is" | the expected discounted return from $s$ when following $\pi$ |
# | $Q^\pi(s, a)$ | "how good the action is" | the expected discounted return after taking $a$ in $s$, then following $\pi$ |
# | Bellman expectation equation | "the recursive definition of V" | $V^\pi = r_\pi + \gamma P_\pi V^\pi$: one linear equation per state |
# | $V^*$, $Q^*$ | "the optimal values" | the best value any policy reaches, state by state; one greedy policy reaches it in every state |
# | Bellman optimality equation | "the max version" | $V^*(s) = \max_a \sum_{s'} P(s' \mid s,a)[R + \gamma V^*(s')]$; its only solution is $V^*$ |
# | bootstrapping | "using your own estimates" | computing a value from the values of successor states |
# | policy evaluation | "computing V" | solving the Bellman expectation equation for a fixed policy |
# | absorption probability | "where it ends up" | the chance an episode ends in a given terminal state: a value with $\gamma = 1$ and reward 1 on entering it |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 3: the
#   agent-environment interface, returns, value functions and both Bellman equations (their
#   reward index is one ahead of this lesson's: $R_{t+1}$ for our $r_t$).
# - Bellman (1957), *Dynamic Programming*, Princeton University Press: where the principle of
#   optimality and the recursive value equation come from.
# - Puterman (1994), *Markov Decision Processes: Discrete Stochastic Dynamic Programming*,
#   Wiley: the rigorous treatment, including why the optimality equation has one solution and
#   when $\gamma = 1$ is allowed (proper policies).
# - Kemeny & Snell (1960), *Finite Markov Chains*, Van Nostrand: absorbing chains, the
#   fundamental matrix $(I - P)^{-1}$ behind absorption probabilities and expected episode
#   lengths.
