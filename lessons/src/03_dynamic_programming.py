# %% [markdown]
# # 03 · Dynamic programming
#
# *Prerequisites:* 00, 02
# *Time:* 40 minutes
# *You will build:* policy evaluation, policy iteration and value iteration.

# %% [markdown]
# Lesson 02 computed how good a *given* policy is. Now you want the best policy. When the model
# ($P$ and $R$) is known and the state space is small, dynamic programming finds it exactly,
# with nothing more than the Bellman equation and a max.

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
# FrozenLake 4x4: walk from `S` to the goal `G` (reward 1) across slippery ice (you move where
# you meant with probability 1/3, and to each side with 1/3) without falling into a hole `H`.

# %%
lake = rc.FrozenLake("4x4")
print(lake)
S, A = lake.num_states, lake.num_actions
print(f"deterministic policies: 4^{S} = {A ** S:,}")

# %% [markdown]
# You can evaluate any one policy (lesson 02), but not four billion of them. Try a thousand at
# random and keep the best:

# %%
GAMMA = 0.99
best_random = max(
    rc.policy_evaluation_exact(lake.P, lake.R, rng.integers(A, size=S), GAMMA, lake.terminal)[0]
    for _ in range(1000)
)
print(f"best V(start) among 1000 random policies: {best_random:.4f}")

# %% [markdown]
# Keep that number in mind. Random search has no sense of direction; you need a way to go from
# a policy to a *better* one, and to know when you are done.

# %% [markdown]
# ## The idea
#
# **Policy improvement.** Given $V^\pi$, compute $Q^\pi(s, a) = \sum_{s'} P(s'|s,a)[R(s,a,s') +
# \gamma V^\pi(s')]$ and act greedily, $\pi'(s) = \arg\max_a Q^\pi(s, a)$. The *policy improvement
# theorem* says $V^{\pi'} \ge V^\pi$ in every state, with equality everywhere only if $\pi$ was
# already optimal.
#
# **Policy iteration** alternates the two: evaluate, improve, evaluate, ... There are finitely
# many deterministic policies and each step is a strict improvement, so it stops, usually after
# a handful of steps, at a policy whose values satisfy the **Bellman optimality equation**
# $$V^*(s) = \max_a \sum_{s'} P(s' \mid s, a)\big[R(s, a, s') + \gamma V^*(s')\big].$$
#
# **Value iteration** skips the full evaluation: it applies the optimality backup
# $V \leftarrow \max_a Q(V)$ again and again from $V = 0$. The backup is a $\gamma$-contraction,
# so the error shrinks by at least a factor $\gamma$ per sweep: about
# $\log(\varepsilon)/\log(\gamma)$ sweeps for accuracy $\varepsilon$, which blows up as
# $\gamma \to 1$. Terminal states keep $V = 0$ throughout: they never bootstrap.
#
# The smallest example that shows the point of looking ahead: three states, $\gamma = 0.9$.
# From state 0 you can take 1 now and end (action 0), or take 0 and move to state 1 (action 1),
# from which action 0 pays 2 and ends. State 2 is terminal. By hand,
# $V^*(1) = 2$ and $V^*(0) = \max(1,\ 0 + 0.9 \cdot 2) = 1.8$: the detour is worth more than
# the direct reward.

# %%
def three_state_mdp():
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2, 3))
    P[0, 0, 2], R[0, 0, 2] = 1.0, 1.0  # state 0, action 0: end now with reward 1
    P[0, 1, 1] = 1.0                   # state 0, action 1: go to state 1, reward 0
    P[1, 0, 2], R[1, 0, 2] = 1.0, 2.0  # state 1, action 0: end with reward 2
    P[1, 1, 0] = 1.0                   # state 1, action 1: back to state 0, reward 0
    P[2, :, 2] = 1.0                   # state 2: terminal (absorbing)
    return P, R, np.array([False, False, True])


P3, R3, T3 = three_state_mdp()

# %% [markdown]
# ## Build it
#
# **Step 1: the backup.** $Q(V)$ for every state and action at once, with terminal states
# read as 0 and left at 0.

# %%
def backup_q(P, R, V, gamma, terminal):
    V = np.where(terminal, 0.0, V)
    Q = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :])
    Q[terminal] = 0.0
    return Q


print("Q at V = 0:\n", np.round(backup_q(P3, R3, np.zeros(3), 0.9, T3), 3))

# %% [markdown]
# **Step 2: iterative policy evaluation** of a deterministic policy `[S]`: the same backup,
# but following the policy's action instead of the max.

# %%
def evaluate(P, R, policy, gamma, terminal, tol=1e-10):
    V = np.zeros(len(policy))
    while True:
        V_new = backup_q(P, R, V, gamma, terminal)[np.arange(len(policy)), policy]
        if np.abs(V_new - V).max() < tol:
            return V_new
        V = V_new


V_direct = evaluate(P3, R3, np.array([0, 0, 0]), 0.9, T3)
print("V of 'always action 0':", np.round(V_direct, 4))

# %% [markdown]
# **Step 3: policy iteration.** Improve greedily; change an action only if another is strictly
# better (by more than rounding noise), so the loop cannot cycle between equally good actions.

# %%
def policy_iteration(P, R, gamma, terminal):
    S = P.shape[0]
    policy = np.zeros(S, dtype=int)
    while True:
        V = evaluate(P, R, policy, gamma, terminal)
        Q = backup_q(P, R, V, gamma, terminal)
        better = Q.max(axis=1) > Q[np.arange(S), policy] + 1e-9
        if not better.any():
            return V, policy
        policy = np.where(better, Q.argmax(axis=1), policy)


V_pi, policy_pi = policy_iteration(P3, R3, 0.9, T3)
print("policy iteration:", np.round(V_pi, 4), "policy", policy_pi)

# %% [markdown]
# **Step 4: value iteration.** Back up with the max until the largest change is below the
# tolerance; then read off the greedy policy.

# %%
def value_iteration(P, R, gamma, terminal, tol=1e-10):
    V = np.zeros(P.shape[0])
    sweeps = 0
    while True:
        V_new = backup_q(P, R, V, gamma, terminal).max(axis=1)
        sweeps += 1
        if np.abs(V_new - V).max() < tol:
            return V_new, backup_q(P, R, V_new, gamma, terminal).argmax(axis=1), sweeps
        V = V_new


V_vi, policy_vi, sweeps = value_iteration(P3, R3, 0.9, T3)
print(f"value iteration: {np.round(V_vi, 4)} policy {policy_vi} after {sweeps} sweeps")

# %% [markdown]
# Both give $V^* = [1.8, 2.0, 0.0]$, and state 0 takes action 1: through state 1. Now compare
# with `rlcourse` on the three-state MDP and on FrozenLake. The reference's value iteration:

# %%
print(inspect.getsource(rc.value_iteration))

# %%
for name, (P, R, T, gamma) in {"three-state": (P3, R3, T3, 0.9),
                               "FrozenLake 4x4": (lake.P, lake.R, lake.terminal, GAMMA)}.items():
    V_ref, policy_ref = rc.value_iteration(P, R, gamma, T)
    np.testing.assert_allclose(value_iteration(P, R, gamma, T)[0], V_ref, atol=1e-8)
    np.testing.assert_allclose(policy_iteration(P, R, gamma, T)[0], V_ref, atol=1e-8)
    print(f"{name}: your value iteration and policy iteration match rc.value_iteration")

# %% [markdown]
# ## Check it
#
# What must hold: $V^*$ is a fixed point of the optimality backup; policy iteration,
# value iteration and the exact evaluation of the greedy policy agree; terminal states are
# worth 0; no policy that policy iteration passes through beats $V^*$ in any state, and none
# gets worse from one step to the next; and the best of the thousand random policies falls
# short of $V^*$ at the start.

# %%
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
assert V_star[0] > best_random
values_along_the_way = [rc.policy_evaluation_exact(lake.P, lake.R, p, GAMMA, lake.terminal)
                        for p in history]
assert all(np.all(b >= a - 1e-10) for a, b in zip(values_along_the_way, values_along_the_way[1:]))
# value iteration stops within about tol * gamma / (1 - gamma) = 1e-8 of V*, hence the 1e-7 margin
assert all(np.all(v <= V_star + 1e-7) for v in values_along_the_way)
print(f"fixed point holds; VI = PI; V*(start) = {V_star[0]:.4f} > best random {best_random:.4f}")
print(f"policy iteration: {len(history) - 1} improvement steps, V(start) along the way:",
      [f"{v[0]:.3f}" for v in values_along_the_way])

# %% [markdown]
# Policy iteration reached the optimum in the few improvement steps printed above, and no state
# ever got worse on the way (a state can stay put: the start's value stays at 0 until the
# improvements, spreading back from the goal, reach it). A thousand random policies did not
# come close.
#
# The terminal mask matters: the three-state MDP again, but this time the model (carelessly)
# gives the terminal state's self-loop a reward of 5. With the mask it is ignored; without it
# state 2 is worth $5/(1-0.9) = 50$ and drags every other value up.

# %%
R_bad = R3.copy()
R_bad[2, :, 2] = 5.0
print("with terminal mask:   ", np.round(rc.value_iteration(P3, R_bad, 0.9, T3)[0], 4))
print("without terminal mask:", np.round(rc.value_iteration(P3, R_bad, 0.9)[0], 4))

# %% [markdown]
# ## Use it
#
# The optimal FrozenLake policy, as a value map with arrows. Some arrows look wrong at first:
# next to a hole, the best move is often *away* from the goal, because the ice can only slip you
# sideways, never backwards.

# %%
fig, ax = plt.subplots(figsize=(5, 3.2), dpi=72)
rc.plot_grid(lake, values=V_star, policy=policy_star, ax=ax,
          title="FrozenLake 4x4, gamma 0.99: V* and the greedy policy")
ax.set(xlabel="column", ylabel="row")
plt.show()
print("greedy actions (0 LEFT, 1 DOWN, 2 RIGHT, 3 UP):")
print(policy_star.reshape(4, 4))

# %% [markdown]
# Is the value right? Run the optimal policy in 10,000 copies of the real (sampled) environment
# and compare the success rate with $V^*(\text{start})$ at $\gamma = 1$, which *is* the
# probability of ever reaching the goal. Run it twice: without a time limit, and with the
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
print(f"V*(start) at gamma 1 = {V_success[0]:.4f}")
print(f"simulated success rate, no time limit: {unlimited:.3f}; 100-step limit: {limited:.3f}")
assert abs(unlimited - V_success[0]) < 4 * np.sqrt(V_success[0] * (1 - V_success[0]) / 10_000)
assert limited < unlimited

# %% [markdown]
# Without a limit the simulation agrees with $V^*$ within sampling error. With the limit it
# falls short: at $\gamma = 1$ the optimal policy is patient, happy to shuffle for a hundred
# steps to avoid a hole, and the time limit is not part of the model DP optimised. A state that
# ignores time cannot know the clock is running out; put the time in the state, or discount.

# %% [markdown]
# How many sweeps does value iteration need? The contraction argument predicts about
# $\log(10^{-10}) / \log\gamma$, exploding as $\gamma \to 1$; policy iteration's count of
# improvement steps hardly moves (each step costs a full evaluation, though).

# %%
gammas = np.array([0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999])
big = rc.FrozenLake("8x8")
vi_sweeps, pi_steps = [], []
for gamma in gammas:
    _, _, changes = rc.value_iteration(big.P, big.R, gamma, big.terminal, return_history=True)
    _, _, visited = rc.policy_iteration(big.P, big.R, gamma, big.terminal, return_history=True)
    vi_sweeps.append(len(changes))
    pi_steps.append(len(visited) - 1)
for gamma, v, p in zip(gammas, vi_sweeps, pi_steps):
    print(f"gamma {gamma:5.3f}: value iteration {v:5d} sweeps, policy iteration {p:2d} steps")

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.loglog(1 / (1 - gammas), vi_sweeps, "o-", label="value iteration sweeps")
ax.loglog(1 / (1 - gammas), pi_steps, "s-", label="policy iteration steps")
ax.loglog(1 / (1 - gammas), np.log(1e-10) / np.log(gammas), "--", label=r"$\log 10^{-10} / \log\gamma$")
ax.set(xlabel=r"horizon $1/(1-\gamma)$", ylabel="iterations to converge",
       title="Value iteration slows as gamma -> 1")
ax.legend(fontsize=8)
plt.show()

# %%
assert all(a <= b for a, b in zip(vi_sweeps, vi_sweeps[1:]))
assert vi_sweeps[-1] > 10 * vi_sweeps[0] and max(pi_steps) < 30

# %% [markdown]
# Value iteration's count follows the horizon $1/(1-\gamma)$ until the lake's own structure
# (episodes end in holes or the goal) makes values settle sooner than the bound; policy
# iteration's count of improvement steps (printed above) barely changes across $\gamma$.

# %%
V_big, policy_big = rc.value_iteration(big.P, big.R, GAMMA, big.terminal)
fig, ax = plt.subplots(figsize=(5, 4), dpi=72)
rc.plot_grid(big, values=V_big, policy=policy_big, ax=ax, annotate=False,
         title="FrozenLake 8x8: value fades with distance from G")
ax.set(xlabel="column", ylabel="row")
plt.show()
print(f"FrozenLake 8x8, gamma {GAMMA}: V*(start) = {V_big[0]:.4f}")

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values grow without bound, or the goal's value is large | terminal states bootstrap (no mask) | keep $V = 0$ on terminal states and never update their rows |
# | policy iteration never stops | two actions tie and `argmax` flips between them on rounding noise | switch action only when another is better by more than a tolerance |
# | value iteration "converged" to the wrong values | stopping on a loose tolerance with $\gamma$ near 1: the error can be $\text{tol}\cdot\gamma/(1-\gamma)$ | a tighter tolerance, or finish with an exact evaluation of the greedy policy |
# | in-place updates give different numbers | Gauss-Seidel sweeps (updating `V` while reading it) | fine, it converges too, but to compare with a reference use synchronous sweeps |
# | $\gamma = 1$ hangs or raises `singular matrix` | some policy never reaches a terminal state | use $\gamma < 1$ or cap the iterations (the reference raises a clear error) |
# | the greedy policy walks into a hole | reading the policy from $V$ without the model: $\arg\max_{s'} V(s')$ | take $\arg\max_a Q(s, a)$, which includes the slip probabilities |
# | DP is used where the model is unknown | $P$ and $R$ are not available in most problems | sample-based methods: Monte Carlo and TD (lessons 04-06) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: greedy policy.** Write `greedy_policy(P, R, V, gamma, terminal)` returning the
#    greedy actions `[S]` with respect to `V` (any best action counts where actions tie).
# 2. **Medium: one Bellman optimality backup.** Write `bellman_backup(P, R, V, gamma, terminal)`
#    returning $V_{new}(s) = \max_a Q(s, a)$, with terminal states at 0.
# 3. **Hard: value iteration.** Write `value_iteration(P, R, gamma, terminal)` returning
#    `(V, policy)`, accurate to $10^{-6}$, with a greedy policy.

# %% tags=["solution"]
def greedy_policy(P, R, V, gamma, terminal):
    return backup_q(P, R, V, gamma, terminal).argmax(axis=1)


# %%
assert rc.exercises.check("greedy_policy", greedy_policy)

# %% tags=["solution"]
def bellman_backup(P, R, V, gamma, terminal):
    return backup_q(P, R, V, gamma, terminal).max(axis=1)


# %%
assert rc.exercises.check("bellman_backup", bellman_backup)

# %% tags=["solution"]
def value_iteration(P, R, gamma, terminal):
    V = np.zeros(P.shape[0])
    while True:
        V_new = bellman_backup(P, R, V, gamma, terminal)
        if np.abs(V_new - V).max() < 1e-10:
            return V_new, greedy_policy(P, R, V_new, gamma, terminal)
        V = V_new


# %%
assert rc.exercises.check("value_iteration", value_iteration)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | dynamic programming | "DP", "planning" | computing values and policies from a *known* model $P, R$ by Bellman backups |
# | Bellman optimality equation | "the max version" | $V^*(s) = \max_a \sum_{s'} P(s'|s,a)[R + \gamma V^*(s')]$ |
# | backup | "update" | replacing a state's value by the expectation over its successors (with a max for optimality) |
# | greedy policy | "act on the values" | $\pi(s) = \arg\max_a Q(s, a)$, with $Q$ computed through the model |
# | policy improvement | "be greedy" | the greedy policy of $V^\pi$ is at least as good as $\pi$ in every state |
# | policy iteration | "evaluate, improve, repeat" | exact evaluation alternating with greedy improvement, until the policy stops changing |
# | value iteration | "repeated max backups" | applying the optimality backup from $V = 0$ until the values stop changing |
# | contraction | "it converges" | each backup shrinks the largest error by at least $\gamma$, so the fixed point is unique |
# | sweep | "an iteration" | one backup of every state |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 4:
#   policy evaluation, the policy improvement theorem, policy and value iteration, asynchronous
#   DP and generalised policy iteration.
# - Bellman (1957), *Dynamic Programming*, Princeton University Press: the principle of
#   optimality and the functional equation behind every backup here.
# - Howard (1960), *Dynamic Programming and Markov Processes*, MIT Press: policy iteration, and
#   why it needs so few steps.
# - Puterman (1994), *Markov Decision Processes*, Wiley, chapter 6: convergence rates of value
#   and policy iteration and the contraction argument in full.
