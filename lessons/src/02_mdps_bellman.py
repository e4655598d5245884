# %% [markdown]
# # 02 · MDPs and Bellman equations
#
# *Prerequisites:* 00, 01
# *Time:* 45 minutes
# *You will build:* the return, the value functions V and Q of a policy, and the Bellman expectation equation solved exactly as a linear system and by iteration, on a GridWorld.

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

# %% [markdown]
# All four actions look the same: every one of them costs 0.01. Only from a cell next to the goal
# does one action stand out. A method that looks one reward ahead cannot find its way here;
# you need the value of *where an action leads*, which depends on all the rewards after it.

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
# where $r_t$ is the reward of the transition taken at time $t$. With $\gamma < 1$ a reward $k$
# steps away counts $\gamma^k$ as much, so the effective horizon is about $1/(1-\gamma)$ steps.
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
# You can solve it exactly, or apply the right-hand side again and again: each application
# shrinks the largest error over states by at least a factor $\gamma$.

# %% [markdown]
# ## Build it
#
# **Step 1: the return of an episode.** Sample episodes of the uniformly random policy in 2000
# GridWorld copies at once and compute each first episode's discounted return. Their mean is a
# Monte Carlo estimate of $V^\pi(\text{start})$, the number the equations should reproduce.

# %%
def discounted_return(rewards, gamma):
    """G_0 = sum_t gamma^t rewards[t]."""
    rewards = np.asarray(rewards, dtype=float)
    return float(np.sum(gamma ** np.arange(rewards.size) * rewards))


print(f"G_0 of [-0.01, -0.01, 1.0] at gamma 0.9: {discounted_return([-0.01, -0.01, 1.0], GAMMA):.4f}")

# %%
n = 2000
sim = rc.GridWorld(size=5, step_reward=-0.01, n=n, seed=SEED)
obs = sim.reset()
returns, discount = np.zeros(n), np.ones(n)
running = np.ones(n, dtype=bool)  # the copy is still in its first episode
while running.any():
    step = sim.step(rng.integers(4, size=n))
    returns += running * discount * step.reward  # G = r_0 + gamma r_1 + ... , built forwards
    discount *= GAMMA
    running &= ~step.done  # a finished episode adds nothing more (the copy has reset)
mc_value = returns.mean()
mc_error = returns.std() / np.sqrt(n)
print(f"Monte Carlo V_random(start) = {mc_value:.3f} +- {mc_error:.3f} (one standard error)")

# %% [markdown]
# **Step 2: the policy's own dynamics.** Average `P` and the expected rewards over the policy's
# action probabilities, then cut the terminal states out: a terminal state pays nothing and is
# worth 0, so its row is zero and nothing flows through it.

# %%
S, A = grid.num_states, grid.num_actions
random_policy = np.full((S, A), 1 / A)


def policy_dynamics(P, R, policy, terminal):
    """P_pi [S, S] and r_pi [S] of a stochastic policy [S, A]; terminal rows and columns zero."""
    P_pi = np.einsum("sa,sat->st", policy, P)
    r_pi = np.einsum("sa,sat,sat->s", policy, P, R)
    P_pi[terminal] = 0.0
    P_pi[:, terminal] = 0.0
    r_pi[terminal] = 0.0
    return P_pi, r_pi


P_pi, r_pi = policy_dynamics(grid.P, grid.R, random_policy, grid.terminal)
print("rows of P_pi sum to:", np.round(P_pi.sum(axis=1), 3))

# %% [markdown]
# Rows sum to 1 except the goal's (it has no successor), and the row of each cell next to the
# goal, where part of the probability leaves the table into the terminal state.
#
# **Step 3: solve the Bellman equation exactly.**

# %%
V_exact = np.linalg.solve(np.eye(S) - GAMMA * P_pi, r_pi)
print(f"V_random(start) from the linear system: {V_exact[0]:.4f}")
print(np.round(V_exact.reshape(5, 5), 3))

# %% [markdown]
# **Step 4: solve it by iteration.** Start from $V = 0$ and apply $V \leftarrow r_\pi +
# \gamma P_\pi V$ until nothing changes. Record the error against the exact answer.

# %%
V = np.zeros(S)
errors = []
for _ in range(500):
    V = r_pi + GAMMA * P_pi @ V
    errors.append(np.abs(V - V_exact).max())
    if errors[-1] < 1e-10:
        break
print(f"iterative evaluation reached the exact values (error < 1e-10) after {len(errors)} sweeps")

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.semilogy(np.arange(1, len(errors) + 1), errors, label="max |V_k - V|")
ax.semilogy(np.arange(1, len(errors) + 1), errors[0] * GAMMA ** np.arange(len(errors)), "--",
            label=r"$\gamma^k$ bound")
ax.set(xlabel="sweep k", ylabel="max error", title="Iteration converges at rate gamma (or faster)")
ax.legend()
plt.show()

# %% [markdown]
# **Step 5: compare with `rlcourse`.** `rc.policy_evaluation` does the same sweeps;
# `method="linear"` (or `rc.policy_evaluation_exact`) solves the system. Here is the reference:

# %%
print(inspect.getsource(rc.policy_evaluation_exact))
print(inspect.getsource(rc.tabular.dp._policy_dynamics))

# %%
np.testing.assert_allclose(V_exact, rc.policy_evaluation_exact(grid.P, grid.R, random_policy, GAMMA,
                                                               grid.terminal), atol=1e-10)
np.testing.assert_allclose(V, rc.policy_evaluation(grid.P, grid.R, random_policy, GAMMA,
                                                   grid.terminal), atol=1e-9)
print("your exact and iterative values match rc.policy_evaluation")

# %% [markdown]
# **Step 6: action values.** One backup turns $V^\pi$ into $Q^\pi$:

# %%
V0 = np.where(grid.terminal, 0.0, V_exact)  # a terminal state's value is 0 whatever V holds
Q = np.einsum("sat,sat->sa", grid.P, grid.R + GAMMA * V0[None, None, :])
Q[grid.terminal] = 0.0
print("Q_random(start, LEFT/DOWN/RIGHT/UP):", np.round(Q[0], 4))
np.testing.assert_allclose(Q, rc.q_from_v(grid.P, grid.R, V_exact, GAMMA, grid.terminal), atol=1e-12)

# %% [markdown]
# Now the start state's actions differ: LEFT and UP bump into the wall and waste a step, so
# they are worth less than DOWN and RIGHT. That is the information the immediate rewards lacked.

# %% [markdown]
# ## Check it
#
# What must hold, in code: the values satisfy the Bellman equation; terminal states are worth
# 0; $V^\pi$ is the policy-weighted average of $Q^\pi$; and the Monte Carlo estimate from real
# episodes agrees with the equation's answer within its statistical error.

# %%
residual = np.abs(V_exact - (r_pi + GAMMA * P_pi @ V_exact)).max()
assert residual < 1e-12
assert np.all(V_exact[grid.terminal] == 0.0)
np.testing.assert_allclose((random_policy * Q).sum(axis=1), V_exact, atol=1e-12)
assert abs(mc_value - V_exact[0]) < 4 * mc_error
print(f"Bellman residual < 1e-12; V(goal) = 0; V = sum pi Q; "
      f"Monte Carlo within {abs(mc_value - V_exact[0]) / mc_error:.1f} standard errors")

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
assert np.allclose(V_masked, V_exact)
assert np.isclose(V_unmasked[24], 1 / (1 - GAMMA)) and V_unmasked[0] > V_masked[0]

# %% [markdown]
# ## Use it
#
# A GridWorld with walls (`W`) and a hole (`H`, terminal, pays -1), and two policies: uniformly
# random, and a "careful" one that moves RIGHT or DOWN with equal probability. Their value maps
# show where each policy expects to end up.

# %%
maze = rc.GridWorld(layout=["S....", ".WW..", "...H.", ".W...", "....G"], step_reward=-0.01,
                    hole_reward=-1.0)
S_maze = maze.num_states
right_down = np.zeros((S_maze, 4))
right_down[:, [rc.DOWN, rc.RIGHT]] = 0.5
policies = {"uniformly random": np.full((S_maze, 4), 0.25), "RIGHT or DOWN": right_down}
values = {name: rc.policy_evaluation_exact(maze.P, maze.R, pi, GAMMA, maze.terminal)
          for name, pi in policies.items()}
for name, v in values.items():
    print(f"{name:17s} V(start) = {v[0]:+.4f}")

# %%
titles = {"uniformly random": "random: drifts into the hole", "RIGHT or DOWN": "RIGHT-or-DOWN: mostly reaches G"}
fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), dpi=72)
for ax, (name, v) in zip(axes, values.items()):
    rc.plot_grid(maze, values=v, ax=ax, title=f"V of {titles[name]}")
    ax.set(xlabel="column", ylabel="row")
fig.tight_layout()
plt.show()

# %% [markdown]
# Discounting sets how far ahead the values look. With $\gamma = 0.5$ the goal is invisible
# from more than a few steps away; with $\gamma = 0.99$ the whole grid feels it.

# %%
fig, axes = plt.subplots(1, 3, figsize=(9, 3), dpi=72)
for ax, gamma in zip(axes, (0.5, 0.9, 0.99)):
    v = rc.policy_evaluation_exact(maze.P, maze.R, right_down, gamma, maze.terminal)
    rc.plot_grid(maze, values=v, ax=ax)
    ax.set_title(f"gamma = {gamma}: V(start) {v[0]:+.3f}", fontsize=9)
    ax.set(xlabel="column")
axes[0].set(ylabel="row")
fig.suptitle("RIGHT-or-DOWN policy: a larger gamma lets the goal's reward reach further back",
             fontsize=10)
fig.tight_layout()
plt.show()

# %%
values_by_gamma = [rc.policy_evaluation_exact(maze.P, maze.R, right_down, g, maze.terminal)[0]
                   for g in (0.5, 0.9, 0.99)]
print("V_right_down(start) for gamma 0.5, 0.9, 0.99:", [f"{v:+.4f}" for v in values_by_gamma])
assert values["RIGHT or DOWN"][0] > values["uniformly random"][0]

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values at the goal are huge, or creep upward everywhere | terminal states bootstrap from their own self-loop | $V = 0$ at terminal states; zero their rows and columns in $P_\pi$ |
# | the reward of reaching the goal is missing from $V$ | zeroing the reward of transitions *into* terminal states | keep the entering reward; only what happens *after* the terminal state is cut |
# | `LinAlgError: singular matrix` | $\gamma = 1$ and the policy can loop forever without terminating | use $\gamma < 1$, or a policy that surely terminates |
# | iterative values never settle | $\gamma$ close to 1: the error shrinks by only $\gamma$ per sweep | more sweeps, or the exact solve for small state spaces |
# | values are off by a factor $\gamma$ | discounting the first reward ($\gamma^{t+1}$ instead of $\gamma^t$) | $G_t = r_t + \gamma r_{t+1} + \dots$ |
# | Monte Carlo returns leak across episodes | summing rewards after a copy's episode ended (it has already reset) | stop accumulating at `done` |
# | `Q.shape` is `[S, S]` | multiplied `P` by `V` along the wrong axis | `P @ V` contracts the last axis, $s'$ |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the return.** Write `discounted_return(rewards, gamma)` for a list of rewards,
#    $G_0 = \sum_t \gamma^t r_t$.
# 2. **Medium: action values.** Write `q_from_v(P, R, V, gamma, terminal)` returning `Q [S, A]`,
#    with $V$ read as 0 at terminal states and $Q = 0$ on their rows.
# 3. **Hard: policy evaluation.** Write `policy_evaluation(P, R, policy, gamma, terminal)` for a
#    stochastic policy `[S, A]`: build $P_\pi$ and $r_\pi$ with the terminal states cut out, and
#    solve the linear system (or iterate to $10^{-10}$).

# %% tags=["solution"]
def discounted_return(rewards, gamma):
    rewards = np.asarray(rewards, dtype=float)
    return float(np.sum(gamma ** np.arange(rewards.size) * rewards))


# %%
assert rc.exercises.check("discounted_return", discounted_return)

# %% tags=["solution"]
def q_from_v(P, R, V, gamma, terminal):
    V = np.where(terminal, 0.0, V)
    Q = np.einsum("sat,sat->sa", P, R + gamma * V[None, None, :])
    Q[terminal] = 0.0
    return Q


# %%
assert rc.exercises.check("q_from_v", q_from_v)

# %% tags=["solution"]
def policy_evaluation(P, R, policy, gamma, terminal):
    P_pi, r_pi = policy_dynamics(P, R, policy, terminal)
    return np.linalg.solve(np.eye(len(r_pi)) - gamma * P_pi, r_pi)


# %%
assert rc.exercises.check("policy_evaluation", policy_evaluation)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | MDP | "the environment" | the tuple $(\mathcal S, \mathcal A, P, R, \gamma)$; here given as arrays `P [S, A, S]`, `R [S, A, S]` |
# | Markov property | "memoryless" | the next state and reward depend only on the current state and action |
# | terminal state | "the end" | a state that ends the episode; its value is 0 and nothing bootstraps from it |
# | return $G_t$ | "total reward" | the *discounted* sum of rewards from time $t$: $r_t + \gamma G_{t+1}$ |
# | discount $\gamma$ | "how much the future matters" | weight $\gamma^k$ on a reward $k$ steps ahead; horizon about $1/(1-\gamma)$ |
# | policy $\pi$ | "the agent's strategy" | action probabilities $\pi(a \mid s)$ for each state (or one action per state) |
# | $V^\pi(s)$ | "how good the state is" | the expected return from $s$ when following $\pi$ |
# | $Q^\pi(s, a)$ | "how good the action is" | the expected return after taking $a$ in $s$, then following $\pi$ |
# | Bellman expectation equation | "the recursive definition of V" | $V^\pi = r_\pi + \gamma P_\pi V^\pi$: one linear equation per state |
# | bootstrapping | "using your own estimates" | computing a value from the values of successor states |
# | policy evaluation | "computing V" | solving the Bellman expectation equation for a fixed policy |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 3: the
#   agent-environment interface, returns, episodes, value functions and the Bellman equations,
#   in the notation used here.
# - Bellman (1957), *Dynamic Programming*, Princeton University Press: where the principle of
#   optimality and the recursive value equation come from.
# - Puterman (1994), *Markov Decision Processes: Discrete Stochastic Dynamic Programming*,
#   Wiley: the rigorous treatment, including when $\gamma = 1$ is allowed (proper policies).
