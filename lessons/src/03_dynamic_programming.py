# %% [markdown]
# # 03 · Dynamic programming
#
# *Prerequisites:* 00, 02
# *Time:* 50 minutes
# *You will build:* the Bellman optimality backup, greedy improvement, policy iteration and value iteration, and watch the value and its greedy policy sweep by sweep.

# %% [markdown]
# Lesson 02 computed how good a *given* policy is, and what the optimal values $V^*$ and $Q^*$
# are. Now you want to compute them, and the best policy. When the model ($P$ and $R$) is known
# and the state space is small, dynamic programming does it exactly, with nothing more than the
# Bellman equation and a max.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

GAMMA = 0.99
plt.rcParams.update({"font.size": 10, "legend.fontsize": 9, "figure.dpi": 100})

# %% [markdown]
# ## The problem
#
# FrozenLake 4x4: walk from `S` to the goal `G` (reward 1) across slippery ice (you move where
# you meant with probability 1/3, and to each side with 1/3) without falling into a hole `H`.
# A deterministic policy picks one of 4 actions in each state where you act; what it does in a
# hole or at the goal does not matter.

# %%
lake = rc.FrozenLake("4x4")
print(lake)
S, A = lake.num_states, lake.num_actions
acting = int((~lake.terminal).sum())
print(f"states where you act: {acting} of {S}; deterministic policies: 4^{acting} = {A ** acting:,}")

# %% [markdown]
# You can evaluate any one policy (lesson 02), but not millions of them. Try a thousand at
# random and keep the best; and since one batch of a thousand is luck, do it five times:

# %%
def random_search(n=1000):
    """Best V(start) among n uniformly random deterministic policies (evaluated exactly)."""
    return max(rc.policy_evaluation_exact(lake.P, lake.R, rng.integers(A, size=S), GAMMA,
                                          lake.terminal)[0] for _ in range(n))


best_random = np.array([random_search() for _ in range(5)])
print("best V(start) of 1000 random policies, 5 batches:",
      ", ".join(f"{b:.3f}" for b in best_random), f"(median {np.median(best_random):.3f})")

# %% [markdown]
# Keep those numbers in mind: the batches disagree widely, because a good policy is a rare
# find. Random search has no sense of direction; you need a way to go from a policy to a
# *better* one, and to know when you are done.

# %% [markdown]
# ## The idea
#
# **Policy improvement.** Given $V^\pi$, compute $Q^\pi(s, a) = \sum_{s'} P(s'|s,a)[R(s,a,s') +
# \gamma V^\pi(s')]$ and act greedily, $\pi'(s) = \arg\max_a Q^\pi(s, a)$. The *policy improvement
# theorem* says $V^{\pi'} \ge V^\pi$ in every state, with equality everywhere only if $\pi$ was
# already optimal.
#
# How soon does greediness pay? Sutton & Barto's figure 4.1 answers on a 4x4 grid with two
# terminal corners, a reward of -1 per move and $\gamma = 1$: evaluate the *random* policy by
# sweeps, $V_{k+1} = r_\pi + P_\pi V_k$, and after each sweep look at the greedy policy of
# $V_k$. Every action that ties for the best is drawn.

# %%
# Two terminal corners (G); entering one costs -1 like every move. The layout needs a start
# cell (S), but here every state is evaluated, so it plays no part and is not drawn.
corners = rc.GridWorld(layout=["GS..", "....", "....", "...G"], step_reward=-1.0, goal_reward=-1.0)
uniform = np.full((16, 4), 0.25)
V_k = {0: np.zeros(16)}
for k in range(1, 1000):
    V_k[k] = rc.q_from_v(corners.P, corners.R, V_k[k - 1], 1.0, corners.terminal).mean(axis=1)
V_inf = rc.policy_evaluation_exact(corners.P, corners.R, uniform, 1.0, corners.terminal)
np.testing.assert_allclose(V_k[999], V_inf, atol=1e-9)
print("V of the random policy (Sutton & Barto's k = infinity):")
print(np.round(V_inf.reshape(4, 4), 1) + 0.0)
print("V* (computed by value iteration, introduced two cells down; the optimal policy walks "
      "straight to the nearest corner):")
print(np.round(rc.value_iteration(corners.P, corners.R, 1.0, corners.terminal)[0].reshape(4, 4), 1)
      + 0.0)


def greedy_ties(env, V, gamma):
    """Every best action of V's greedy policy, as probabilities [S, A] (ties shared)."""
    Q = rc.q_from_v(env.P, env.R, V, gamma, env.terminal)
    best = Q >= Q.max(axis=1, keepdims=True) - 1e-9
    return best / best.sum(axis=1, keepdims=True), best


# the optimal actions, from V* (value iteration again)
_, optimal_actions = greedy_ties(corners, rc.value_iteration(corners.P, corners.R, 1.0,
                                                             corners.terminal)[0], 1.0)
first_optimal = next(k for k in range(1000)
                     if np.all(optimal_actions[greedy_ties(corners, V_k[k], 1.0)[1]]))
settled = next(k for k in range(1000) if np.abs(V_k[k] - V_inf).max() < 0.01)
print(f"first sweep k whose greedy policy takes only optimal actions: {first_optimal}")
print(f"sweeps until V_k is within 0.01 of V_random everywhere: {settled}")
assert first_optimal < settled / 10
np.testing.assert_allclose(V_inf.reshape(4, 4)[0], [0, -14, -20, -22], atol=1e-9)

# %%
shown = [0, 1, 2, 3, 10, 999]
fig, axes = plt.subplots(2, 3, figsize=(9, 6.4), layout="constrained")
for ax, k in zip(axes.flat, shown):
    rc.plot_grid(corners, V_k[k], greedy_ties(corners, V_k[k], 1.0)[0], ax=ax, letters="G",
                 vmin=V_inf.min(), vmax=0, colorbar=False, fmt="{:.1f}",
                 title="k = infinity" if k == 999 else f"k = {k}")
fig.colorbar(axes[0, 0].images[0], ax=axes, label="V_k of the random policy", shrink=0.8)
fig.suptitle(f"Values of the random policy sweep by sweep (one colour scale for all panels); "
             f"from k = {first_optimal} its greedy policy is optimal")
plt.show()

# %% [markdown]
# One colour scale serves all six panels, so the first ones, with values between -3 and 0,
# look almost uniform: read their numbers and arrows. The values of the random policy are far
# from optimal (each is minus the number of moves the
# random walk needs, on average, to reach a corner), and they take the many sweeps printed
# above to settle (with $\gamma = 1$ they still converge, because the random walk surely
# reaches a corner). Yet the greedy policy of $V_k$ is optimal after only a few sweeps, long
# before $V_k$ converges: improvement needs the *ranking* of actions, not exact values. That is
# the opening for value iteration.
#
# **Policy iteration** alternates evaluation and improvement: evaluate, improve, evaluate, ...
# There are finitely many deterministic policies and each step is a strict improvement, so it
# stops, usually after a handful of steps, at a policy whose values satisfy the **Bellman
# optimality equation** of lesson 02,
# $$V^*(s) = \max_a \sum_{s'} P(s' \mid s, a)\big[R(s, a, s') + \gamma V^*(s')\big].$$
#
# **Value iteration** skips the full evaluation: it applies the optimality backup
# $V \leftarrow \max_a Q(V)$ to every state again and again from $V = 0$. The backup is a
# $\gamma$-contraction, so the error shrinks by at least a factor $\gamma$ per sweep: about
# $\log(\varepsilon)/\log(\gamma)$ sweeps for accuracy $\varepsilon$, which blows up as
# $\gamma \to 1$. Terminal states keep $V = 0$ throughout: they never bootstrap.
#
# The smallest example is lesson 02's three-state MDP, where by hand $V^* = [1.8, 2, 0]$ and
# state 0 takes the detour (action 1):

# %%
P3 = np.zeros((3, 2, 3))
R3 = np.zeros((3, 2, 3))
P3[0, 0, 2], R3[0, 0, 2] = 1.0, 1.0  # state 0, action 0: end now with reward 1
P3[0, 1, 1] = 1.0                    # state 0, action 1: to state 1, reward 0
P3[1, 0, 2], R3[1, 0, 2] = 1.0, 2.0  # state 1, action 0: end with reward 2
P3[1, 1, 0] = 1.0                    # state 1, action 1: back to state 0, reward 0
P3[2, :, 2] = 1.0                    # state 2: terminal
T3 = np.array([False, False, True])

# %% [markdown]
# ## Build it
#
# Four steps. In steps 1 and 2 you write the action values from the model yourself (the
# checker refuses `rc.q_from_v` there), so the terminal mask is yours to get right; in steps 3
# and 4 you may call the reference's lesson-02 tools, `rc.q_from_v` and
# `rc.policy_evaluation_exact`.
#
# **Step 1: the optimality backup**, one sweep of value iteration: $V_{new}(s) = \max_a
# \sum_{s'} P(s'|s,a)[R(s,a,s') + \gamma V(s')]$, where $V$ is read as 0 at terminal states
# and terminal states themselves stay at 0.

# %% tags=["solution"]
def my_bellman_backup(P, R, V, gamma, terminal):
    """V_new [S] = max_a Q(V)(s, a)."""
    V = np.where(terminal, 0.0, V)  # nothing is collected after the episode ends
    Q = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :])
    return np.where(terminal, 0.0, Q.max(axis=1))


# %%
assert rc.exercises.check("bellman_backup", my_bellman_backup)

# %% [markdown]
# **Step 2: the greedy policy** of a value function: one action per state, the best through
# the model (any of the best where they tie).

# %% tags=["solution"]
def my_greedy_policy(P, R, V, gamma, terminal):
    """Greedy actions [S] with respect to V."""
    V = np.where(terminal, 0.0, V)
    return np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :]).argmax(axis=1)


# %%
assert rc.exercises.check("greedy_policy", my_greedy_policy)

# %% [markdown]
# **Step 3: policy iteration**, from the policy that always takes action 0, returning
# `(V, policy)`. Change an action only if another is better by more than rounding noise
# (say $10^{-9}$): otherwise two tied actions can take turns forever. On FrozenLake 8x8 at
# $\gamma = 0.95$ and $0.99$ several actions tie up to rounding, and a loop that switches on
# any difference (plain `np.argmax`) never stops there; the checker includes those cases and
# stops any case that runs longer than a few seconds.

# %% tags=["solution"]
def my_policy_iteration(P, R, gamma, terminal):
    """Optimal (V, policy) by evaluate -> improve until the policy is stable."""
    S = P.shape[0]
    policy = np.zeros(S, dtype=int)
    while True:
        V = rc.policy_evaluation_exact(P, R, policy, gamma, terminal)
        Q = rc.q_from_v(P, R, V, gamma, terminal)
        better = Q.max(axis=1) > Q[np.arange(S), policy] + 1e-9
        if not better.any():
            return V, policy
        policy = np.where(better, Q.argmax(axis=1), policy)


# %%
assert rc.exercises.check("policy_iteration", my_policy_iteration)

# %% [markdown]
# **Step 4: value iteration.** Back up every state at once, from $V = 0$, until the largest
# change in a sweep is below $10^{-10}$; return `(V, policy)` with the greedy policy.

# %% tags=["solution"]
def my_value_iteration(P, R, gamma, terminal):
    """Optimal (V, policy) by repeated optimality backups."""
    V = np.zeros(P.shape[0])
    while True:
        V_new = rc.q_from_v(P, R, V, gamma, terminal).max(axis=1)
        if np.abs(V_new - V).max() < 1e-10:
            return V_new, rc.q_from_v(P, R, V_new, gamma, terminal).argmax(axis=1)
        V = V_new


# %%
assert rc.exercises.check("value_iteration", my_value_iteration)

# %% [markdown]
# The reference's value iteration, with a record of the largest change per sweep, and the
# backup it calls (`r` is the expected reward `[S, A]`, zero on terminal rows):

# %%
print(inspect.getsource(rc.value_iteration))
print(inspect.getsource(rc.tabular.dp._backup))

# %% [markdown]
# ## Check it
#
# What must hold: the three-state MDP's hand answer; $V^*$ is a fixed point of the optimality
# backup; policy iteration, value iteration and the exact evaluation of the greedy policy
# agree; terminal states are worth 0; no policy that policy iteration passes through beats
# $V^*$ in any state, and none gets worse from one step to the next; each value-iteration sweep
# changes the values by at most $\gamma$ times the previous sweep's change; and the best of the
# thousand random policies falls short of $V^*$ at the start.

# %%
V3, policy3 = rc.value_iteration(P3, R3, 0.9, T3)
np.testing.assert_allclose(V3, [1.8, 2.0, 0.0], atol=1e-9)
assert policy3[0] == 1
V_star, policy_star = rc.value_iteration(lake.P, lake.R, GAMMA, lake.terminal)
V_pi_ref, policy_pi_ref, history = rc.policy_iteration(lake.P, lake.R, GAMMA, lake.terminal,
                                                       return_history=True)
fixed_point_gap = np.abs(rc.bellman_optimality_backup(lake.P, lake.R, V_star, GAMMA, lake.terminal)
                         - V_star).max()
assert fixed_point_gap < 1e-9
np.testing.assert_allclose(V_star, V_pi_ref, atol=1e-7)
np.testing.assert_allclose(rc.policy_evaluation_exact(lake.P, lake.R, policy_star, GAMMA,
                                                      lake.terminal), V_star, atol=1e-7)
assert np.all(V_star[lake.terminal] == 0.0)
assert np.all(V_star[0] > best_random)
_, _, vi_changes = rc.value_iteration(lake.P, lake.R, GAMMA, lake.terminal, return_history=True)
assert np.all(vi_changes[1:] <= GAMMA * vi_changes[:-1] + 1e-15)  # the gamma-contraction
values_along_the_way = [rc.policy_evaluation_exact(lake.P, lake.R, p, GAMMA, lake.terminal)
                        for p in history]
assert all(np.all(b >= a - 1e-10) for a, b in zip(values_along_the_way, values_along_the_way[1:]))
# value iteration stops within about tol * gamma / (1 - gamma) = 1e-8 of V*, hence the 1e-7 margin
assert all(np.all(v <= V_star + 1e-7) for v in values_along_the_way)
print(f"fixed point holds; VI = PI; V*(start) = {V_star[0]:.4f} > the best random policies, "
      f"which reach {100 * best_random.min() / V_star[0]:.0f}% to {100 * best_random.max() / V_star[0]:.0f}% "
      f"of it (median {100 * np.median(best_random) / V_star[0]:.0f}%)")
print(f"policy iteration: {len(history) - 1} improvement steps, V(start) along the way:",
      [f"{v[0]:.3f}" for v in values_along_the_way])

# %% [markdown]
# Policy iteration reached the optimum in the few improvement steps printed above, and no state
# ever got worse on the way (a state can stay put: the start's value stays at 0 until the
# improvements, spreading back from the goal, reach it). The best of a thousand random
# policies reached the share of $V^*$ printed above: a few improvement steps beat thousands of
# blind guesses, and they end with a proof of optimality (the fixed point) that guessing never
# gives.
#
# The terminal mask matters: the three-state MDP again, but this time the model (carelessly)
# gives the terminal state's self-loop a reward of 5. With the mask it is ignored; without it
# state 2 is worth $5/(1-0.9) = 50$ and drags every other value up.

# %%
R_bad = R3.copy()
R_bad[2, :, 2] = 5.0
masked, unmasked = rc.value_iteration(P3, R_bad, 0.9, T3)[0], rc.value_iteration(P3, R_bad, 0.9)[0]
print("with terminal mask:   ", np.round(masked, 4) + 0.0)
print("without terminal mask:", np.round(unmasked, 4) + 0.0)
assert np.allclose(masked, [1.8, 2.0, 0.0]) and np.isclose(unmasked[2], 50.0)

# %% [markdown]
# ## Use it
#
# **The optimal FrozenLake policy**, as a value map with every optimal action drawn:

# %%
ties, best_actions = greedy_ties(lake, V_star, GAMMA)
Q_star = rc.q_from_v(lake.P, lake.R, V_star, GAMMA, lake.terminal)
fig, ax = plt.subplots(figsize=(5.5, 4.6), layout="constrained")
rc.plot_grid(lake, V_star, ties, ax=ax, label="V*", title=f"FrozenLake 4x4, gamma {GAMMA}: V* "
             "and every optimal action")
plt.show()
tied = np.flatnonzero(~lake.terminal & (best_actions.sum(axis=1) > 1))
for s in tied:
    print(f"state {s} (row {s // 4}, col {s % 4}): Q* for LEFT, DOWN, RIGHT, UP = "
          f"{np.round(Q_star[s], 4)}; rc.value_iteration's policy picks action {policy_star[s]}")

# %% [markdown]
# Some arrows look wrong at first. Look at the cells next to a hole: the ice moves you where you
# meant or to either *side*, never backwards, so the safe action is the one that points *away*
# from the hole, even when that is away from the goal. The table below gives, for every cell
# next to a hole, the chance of falling in on the very next step under each action:

# %%
into_hole = lake.P[:, :, np.array(list("".join(lake.layout))) == "H"].sum(axis=2)  # [S, A]
next_to_hole = [s for s in range(S) if not lake.terminal[s] and into_hole[s].max() > 0]
print("state  P(hole next) for LEFT, DOWN, RIGHT, UP   optimal action(s)")
for s in next_to_hole:
    print(f"{s:5d}  {np.round(into_hole[s], 3)}   {np.flatnonzero(best_actions[s]).tolist()}")
    assert np.isclose(into_hole[s][best_actions[s]].max(), into_hole[s].min())

# %% [markdown]
# In every one of them the optimal actions are among the safest next moves. In state 6 (row 1,
# column 2) there are holes on both sides: every action risks at least 1/3, LEFT and RIGHT tie
# exactly (printed above), and a policy must pick one. `rc.value_iteration` breaks ties by the
# lowest index, so its arrow there points LEFT, straight at a hole, and RIGHT would be just as
# good.
#
# **Is the value right?** Run the optimal policy in 10,000 copies of the real (sampled)
# environment and compare the success rate with $V^*(\text{start})$ at $\gamma = 1$, which *is*
# the probability of ever reaching the goal. Run it twice: without a time limit, and with the
# 100-step limit Gymnasium's FrozenLake imposes.

# %%
V_success, policy_success = rc.value_iteration(lake.P, lake.R, 1.0, lake.terminal)


def success_rate(max_steps, n=10_000):
    """Fraction of n copies whose first episode reaches the goal under policy_success."""
    runs = rc.FrozenLake("4x4", n=n, seed=SEED, max_steps=max_steps)
    obs = runs.reset()
    reached_goal = np.zeros(n, dtype=bool)
    first_episode = np.ones(n, dtype=bool)  # copies reset themselves: count only the first
    while first_episode.any():
        step = runs.step(policy_success[obs])
        reached_goal |= first_episode & (step.reward > 0)
        first_episode &= ~step.done
        obs = step.obs
    return reached_goal.mean()


unlimited, limited = success_rate(None), success_rate(100)
P_pi, r_pi = rc.policy_dynamics(lake.P, lake.R, policy_success, lake.terminal)
within = np.zeros(S)  # 100 sweeps at gamma 1 from V = 0: the chance of reaching G within 100 steps
for _ in range(100):
    within = r_pi + P_pi @ within
se = np.sqrt(V_success[0] * (1 - V_success[0]) / 10_000)
print(f"V*(start) at gamma 1 = {V_success[0]:.4f}, a probability (sampling SE {se:.4f})")
print(f"simulated success rate, no time limit: {unlimited:.4f}")
print(f"within 100 steps: exact {within[0]:.4f}, simulated with Gymnasium's limit {limited:.4f}")
assert abs(unlimited - V_success[0]) < 4 * se
assert abs(limited - within[0]) < 4 * se and within[0] < V_success[0] - 4 * se

# %% [markdown]
# Without a limit the simulation agrees with $V^*$ within sampling error (the two simulated
# rates share their episodes, so they err in the same direction). With the limit it falls
# short, and the exact chance of reaching the goal within 100 steps (100 sweeps of the
# policy's own evaluation at $\gamma = 1$, lesson 02) says by how much: the optimal policy is
# patient, happy to shuffle for many steps to avoid a hole, and some episodes need more than
# 100. Whether that is a flaw depends on the task. If the time limit is part of the task, the
# time left belongs in the state, and the best action can change as the clock runs down
# (exercise 3 computes that policy and measures how much of the shortfall it wins back: on
# this lake, only a small part; most of the loss is the limit itself). If the limit is only there to cut
# episodes short during training, it is not part of the MDP, and the stationary $V^*$ above is
# the right answer.
#
# **How many iterations?** The contraction argument predicts about
# $\log(10^{-10}) / \log\gamma$ value-iteration sweeps, exploding as $\gamma \to 1$. Policy
# iteration counts something else, improvement steps, each of which solves a linear system of
# $S$ equations; so the two are drawn on separate axes.

# %%
gammas = np.array([0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999])
big = rc.FrozenLake("8x8")
vi_sweeps, pi_steps, late, survival = [], [], [], []
for gamma in gammas:
    _, policy, changes = rc.value_iteration(big.P, big.R, gamma, big.terminal,
                                            return_history=True)
    _, _, visited = rc.policy_iteration(big.P, big.R, gamma, big.terminal, return_history=True)
    vi_sweeps.append(len(changes))
    pi_steps.append(len(visited) - 1)
    late.append(changes[-1] / changes[-2])  # how much the last sweep shrank the change
    P_pi, _ = rc.policy_dynamics(big.P, big.R, policy, big.terminal)
    survival.append(np.abs(np.linalg.eigvals(P_pi)).max())  # long-run P(still on the ice)
bound = np.log(1e-10) / np.log(gammas)
for gamma, v, b, p, f, rho in zip(gammas, vi_sweeps, bound, pi_steps, late, survival):
    print(f"gamma {gamma:5.3f}: value iteration {v:5d} sweeps (bound {b:6.0f}; last sweep's "
          f"factor {f:.4f}, gamma x rho {gamma * rho:.4f}); policy iteration {p:2d} steps")

# %%
horizon = 1 / (1 - gammas)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
axes[0].loglog(horizon, vi_sweeps, "o-", label="sweeps to converge")
axes[0].loglog(horizon, bound, "--", label=r"bound $\log 10^{-10} / \log\gamma$")
axes[0].set(xlabel=r"horizon $1/(1-\gamma)$", ylabel="value-iteration sweeps",
            title="Value iteration slows as gamma -> 1")
axes[0].legend(loc="upper left")
axes[1].semilogx(horizon, pi_steps, "s-", color="C2")
axes[1].set(xlabel=r"horizon $1/(1-\gamma)$", ylabel="policy-iteration improvement steps",
            ylim=(0, max(pi_steps) + 2),
            title=f"Policy iteration: {min(pi_steps)} to {max(pi_steps)} steps throughout")
fig.suptitle("FrozenLake 8x8 (each policy-iteration step solves 64 linear equations)")
plt.show()

# %%
assert all(a <= b for a, b in zip(vi_sweeps, vi_sweeps[1:]))
assert vi_sweeps[-1] > 10 * vi_sweeps[0] and max(pi_steps) < 30
assert all(v <= b for v, b in zip(vi_sweeps, bound))
assert all(abs(f - g * rho) < 2e-3 for f, g, rho in zip(late[3:], gammas[3:], survival[3:]))

# %% [markdown]
# Value iteration's count grows with the horizon $1/(1-\gamma)$ and stays under the bound
# everywhere; near $\gamma = 1$ it falls well under. The bound assumes each sweep shrinks the
# change by only $\gamma$. On the lake every episode ends, in a hole or at the goal: late in
# the run a sweep shrinks the change by $\gamma \rho$, where $\rho < 1$ is the rate at which
# the optimal policy's long episodes survive one more step (the largest eigenvalue of
# $P_{\pi^*}$), as the printed factors show from $\gamma = 0.9$ on. Policy iteration's count of
# improvement steps stays small across $\gamma$; each step costs a full evaluation, though.
#
# **The big lake.** Is $V^*$ simply "closer to the goal is better"?

# %%
V_big, policy_big = rc.value_iteration(big.P, big.R, GAMMA, big.terminal)
row, col = np.divmod(np.arange(64), 8)
distance = (7 - row) + (7 - col)
live = ~big.terminal
corr = np.corrcoef(distance[live], V_big[live])[0, 1]
below_start = np.flatnonzero(live & (V_big < V_big[0]))
near = below_start[np.argmin(distance[below_start])]
print(f"correlation of V* with the distance to G over the open cells: {corr:+.2f}")
print(f"the start, {distance[0]} steps from G, is worth {V_big[0]:.3f}; cell (row {near // 8}, col "
      f"{near % 8}), {distance[near]} steps from G, is worth {V_big[near]:.3f}")
edge_best = V_big.reshape(8, 8)[:7].argmax(axis=1)
print("in rows 0-6, the most valuable column:", edge_best.tolist())
assert abs(corr) < 0.5 and distance[near] < distance[0] / 2 and np.all(edge_best >= 6)

# %%
fig, ax = plt.subplots(figsize=(7, 6), layout="constrained")
rc.plot_grid(big, V_big, greedy_ties(big, V_big, GAMMA)[0], ax=ax, label="V*",
             title=f"FrozenLake 8x8, gamma {GAMMA}: holes, not distance, shape V*")
plt.show()

# %% [markdown]
# The value falls off near the holes, not with the distance to the goal: the distance explains
# little of it (the weak correlation above), and a cell a few steps from the goal, with holes
# around it, is worth less than the start, the farthest cell of all. In every row but the last
# the most valuable cells are at the right edge, where the path to the goal runs past no hole.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values grow without bound, or the goal's value is large | terminal states bootstrap (no mask) | keep $V = 0$ on terminal states and never update their rows |
# | policy iteration never stops | two actions tie and `argmax` flips between them on rounding noise | switch action only when another is better by more than a tolerance |
# | value iteration "converged" to the wrong values | stopping on a loose tolerance with $\gamma$ near 1: the error can be $\text{tol}\cdot\gamma/(1-\gamma)$ | a tighter tolerance, or finish with an exact evaluation of the greedy policy |
# | in-place updates give different numbers | Gauss-Seidel sweeps (updating `V` while reading it) | fine, it converges too (exercise 1), but to compare with a reference use synchronous sweeps |
# | $\gamma = 1$ hangs or raises `singular matrix` | some policy never reaches a terminal state | use $\gamma < 1$ or cap the iterations (the reference raises a clear error) |
# | the greedy policy walks into a hole | reading the policy from $V$ without the model: $\arg\max_{s'} V(s')$ | take $\arg\max_a Q(s, a)$, which includes the slip probabilities |
# | an arrow points at a hole | a tie broken by the lowest index | draw every best action; check $Q$ before blaming the solver |
# | a DP-optimal policy does worse under a time limit | the limit is not in the model, and some episodes need more steps | mostly the limit itself: expect the shortfall printed in Use it; if the limit is part of the task, put the time left in the state, which wins back only part of it (exercise 3 measures how much) |
# | DP is used where the model is unknown | $P$ and $R$ are not available in most problems | sample-based methods: Monte Carlo and TD (lessons 04-06) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: in-place sweeps.** Write `value_iteration_in_place(P, R, gamma, terminal,
#    tol=1e-10)`: the same backups, but sweeping the states in index order and writing each
#    new $V(s)$ into `V` at once, so the states after it in the sweep already use it. Stop after
#    the first sweep whose largest change is below `tol`; return `(V, sweeps)`. How many fewer
#    sweeps than synchronous value iteration does FrozenLake 8x8 need at $\gamma = 0.99$? Set
#    `in_place_saving` to that number.
# 2. **Medium: modified policy iteration.** Between value iteration (one sweep per policy) and
#    policy iteration (evaluate to convergence) lies a whole family. Write
#    `modified_policy_iteration(P, R, gamma, terminal, k, rounds)`: from $V = 0$, each round
#    takes the greedy policy of the current $V$ (with `rc.greedy(Q)`, which breaks ties, up to
#    rounding noise, by the lowest index, so that your policies match the checker's), then
#    applies $k$ synchronous sweeps of *that policy's* evaluation,
#    $V \leftarrow r_\pi + \gamma P_\pi V$, starting from the current $V$. Return $V$ after
#    `rounds` rounds. What is it for $k = 1$: (a) policy iteration, (b) value iteration,
#    (c) policy evaluation of the starting policy, (d) nothing that converges? Set
#    `mpi_k1_answer` to a letter.
# 3. **Hard: the clock in the state.** Under a time limit the best action depends on the time
#    left. Write `finite_horizon(P, R, terminal, horizon)` returning `(V, policy)`: `V [horizon
#    + 1, S]` with `V[h]` the best expected total reward (no discount) with `h` steps left, and
#    `policy [horizon, S]` with `policy[h - 1]` the best action with `h` steps left. How likely
#    is success on FrozenLake within Gymnasium's 100 steps if you play the time-aware policy,
#    against the stationary policy's exact rate computed above?

# %% tags=["solution"]
def value_iteration_in_place(P, R, gamma, terminal, tol=1e-10):
    r = np.einsum("sat,sat->sa", P, R)
    V = np.zeros(P.shape[0])
    sweeps = 0
    while True:
        sweeps += 1
        change = 0.0
        for s in np.flatnonzero(~terminal):
            new = np.max(r[s] + gamma * P[s] @ V)
            change = max(change, abs(new - V[s]))
            V[s] = new
        if change < tol:
            return V, sweeps


synchronous = len(rc.value_iteration(big.P, big.R, 0.99, big.terminal, return_history=True)[2])
in_place = value_iteration_in_place(big.P, big.R, 0.99, big.terminal)[1]
print(f"FrozenLake 8x8, gamma 0.99: {synchronous} synchronous sweeps, {in_place} in place")
in_place_saving = synchronous - in_place

# %%
assert rc.exercises.check("value_iteration_in_place", value_iteration_in_place)
assert rc.exercises.check("in_place_saving_question", in_place_saving)

# %% tags=["solution"]
def modified_policy_iteration(P, R, gamma, terminal, k, rounds):
    V = np.zeros(P.shape[0])
    for _ in range(rounds):
        policy = rc.greedy(rc.q_from_v(P, R, V, gamma, terminal))
        for _ in range(k):
            V = rc.q_from_v(P, R, V, gamma, terminal)[np.arange(P.shape[0]), policy]
    return V


mpi_k1_answer = "b"  # one sweep of the greedy policy of V is max_a Q(V): a value-iteration sweep

# %%
assert rc.exercises.check("modified_policy_iteration", modified_policy_iteration)
assert rc.exercises.check("mpi_k1_question", mpi_k1_answer)

# %% tags=["solution"]
def finite_horizon(P, R, terminal, horizon):
    V = np.zeros((horizon + 1, P.shape[0]))
    policy = np.zeros((horizon, P.shape[0]), dtype=int)
    for h in range(1, horizon + 1):
        Q = rc.q_from_v(P, R, V[h - 1], 1.0, terminal)
        V[h], policy[h - 1] = Q.max(axis=1), Q.argmax(axis=1)
    return V, policy


V_h = finite_horizon(lake.P, lake.R, lake.terminal, 100)[0]
print(f"success within 100 steps from the start: time-aware {V_h[100][0]:.4f}, "
      f"stationary {within[0]:.4f}")
print(f"the limit costs the stationary policy {V_success[0] - within[0]:.4f}; the clock in the "
      f"state wins back {V_h[100][0] - within[0]:.4f} of it")

# %%
assert rc.exercises.check("finite_horizon", finite_horizon)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | dynamic programming | "DP", "planning" | computing values and policies from a *known* model $P, R$ by Bellman backups |
# | Bellman optimality equation | "the max version" | $V^*(s) = \max_a \sum_{s'} P(s'|s,a)[R + \gamma V^*(s')]$ |
# | backup | "update" | replacing a state's value by the expectation over its successors (with a max for optimality) |
# | greedy policy | "act on the values" | $\pi(s) = \arg\max_a Q(s, a)$, with $Q$ computed through the model; ties need a rule |
# | policy improvement | "be greedy" | the greedy policy of $V^\pi$ is at least as good as $\pi$ in every state |
# | policy iteration | "evaluate, improve, repeat" | exact evaluation alternating with greedy improvement, until the policy stops changing |
# | value iteration | "repeated max backups" | applying the optimality backup from $V = 0$ until the values stop changing |
# | modified policy iteration | "truncated evaluation" | a few evaluation sweeps per improvement: $k = 1$ is value iteration, $k \to \infty$ policy iteration |
# | contraction | "it converges" | each backup shrinks the largest error by at least $\gamma$, so the fixed point is unique |
# | sweep | "an iteration" | one backup of every state; synchronous (from the old $V$) or in place |
# | finite horizon | "a time limit" | the optimal action depends on the steps left; $V_h$ computed backwards from $V_0 = 0$ |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 4:
#   policy evaluation (figure 4.1 is the picture above), the policy improvement theorem,
#   policy and value iteration, asynchronous DP and generalised policy iteration.
# - Bellman (1957), *Dynamic Programming*, Princeton University Press: the principle of
#   optimality and the functional equation behind every backup here.
# - Howard (1960), *Dynamic Programming and Markov Processes*, MIT Press: policy iteration, and
#   why it needs so few steps.
# - Puterman (1994), *Markov Decision Processes*, Wiley, chapter 6: convergence rates of value
#   and policy iteration, the contraction argument in full, and modified policy iteration
#   (Puterman & Shin 1978).
