# %% [markdown]
# # 06 · Control — Q-learning, SARSA, Expected SARSA and Double Q-learning on CliffWalking
#
# *Prerequisites:* 04, 05
# *Time:* 80 minutes
# *You will build:* the updates of SARSA, Q-learning, Expected SARSA and Double Q-learning and the SARSA loop, then compare on-policy with off-policy learning on the cliff, over step sizes, and against the maximisation bias.

# %% [markdown]
# Lesson 05 learned the values of a *fixed* policy. Control learns which actions to take: it
# estimates action values $Q(s, a)$ from single steps and acts (mostly) greedily with respect
# to them, so the policy improves as the estimates do. The methods here differ in one term of
# the TD target, and that term decides *which* policy's values you learn.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
RUNS = 10  # every learning claim below is measured on 10 independent runs

GAMMA, ALPHA, EPSILON, EPISODES = 1.0, 0.5, 0.1, 500

# %% [markdown]
# ## The problem
#
# CliffWalking (Sutton & Barto, Example 6.6): a 4x12 grid, start `S` bottom-left, goal `G`
# bottom-right, the cliff `C` between them. Every step costs 1; stepping into the cliff costs
# 100 and sends you back to the start. Dynamic programming (lesson 03) finds the optimal
# policy: walk along the cliff's edge, 13 steps.
#
# But a learning agent keeps exploring, say $\varepsilon$-greedily with $\varepsilon = 0.1$.
# Compare, with the model, the optimal edge policy and a safe detour along the top row, each
# followed greedily and followed with exploration:

# %%
cliff = rc.CliffWalking()
P, R, terminal = cliff.P, cliff.R, cliff.terminal
S, A = cliff.num_states, cliff.num_actions
START, GOAL = 36, 47
EDGE = [START, *range(24, 36), GOAL]  # up, along the row beside the cliff, down
print(cliff)

v_star, optimal = rc.value_iteration(P, R, GAMMA, terminal)
q_star = rc.q_from_v(P, R, v_star, GAMMA, terminal)
rows, cols = np.divmod(np.arange(S), 12)
safe = np.where(cols == 11, rc.DOWN, np.where(rows == 0, rc.RIGHT, rc.UP))  # up, across, down


def value_of(actions, epsilon):
    """V(start) of following ``actions [S]`` with probability 1 - epsilon, else a random action."""
    probs = (1 - epsilon) * np.eye(A)[actions] + epsilon / A
    return rc.policy_evaluation_exact(P, R, probs, GAMMA, terminal)[START]


def greedy_path(actions, limit=60):
    """States visited from the start following ``actions [S]`` (moves are deterministic)."""
    path = [START]
    while not terminal[path[-1]] and len(path) <= limit:
        path.append(int(np.argmax(P[path[-1], actions[path[-1]]])))
    return path


def edge_cells(path):
    """How many cells of the row beside the cliff (row 2, columns 1-10) a path visits."""
    return sum(25 <= s <= 34 for s in path)


for name, actions in [("optimal (edge)", optimal), ("safe (top row)", safe)]:
    print(f"{name:15s} {len(greedy_path(actions)) - 1} steps;  V(start) greedy: "
          f"{value_of(actions, 0.0):7.2f}   with epsilon = 0.1: {value_of(actions, EPSILON):7.2f}")
assert greedy_path(optimal) == EDGE and value_of(optimal, EPSILON) < value_of(safe, EPSILON)

# %% [markdown]
# Of these two, the optimal policy is the one that earns less *while exploring*: one random
# step down from the edge costs 100. So "the best policy" depends on a question the algorithm
# must answer: the values of *which* policy are you learning, the greedy one you will deploy or
# the exploring one you are running?

# %% [markdown]
# ## The idea
#
# All these methods update $Q(S_t, A_t) \leftarrow Q(S_t, A_t) + \alpha\,[\text{target} -
# Q(S_t, A_t)]$ after each step, act $\varepsilon$-greedily, and differ in the target:
#
# | method | target | learns the values of |
# |---|---|---|
# | **Q-learning** | $R + \gamma \max_{a'} Q(S', a')$ | the greedy policy ($Q^*$), whatever the behaviour, as long as it keeps trying every pair: *off-policy* |
# | **SARSA** | $R + \gamma Q(S', A')$, $A'$ the action it takes next | the $\varepsilon$-greedy policy it follows: *on-policy* |
# | **Expected SARSA** | $R + \gamma \sum_{a'} \pi(a' \mid S') Q(S', a')$ | the policy $\pi$ in the sum (here the $\varepsilon$-greedy one) |
#
# (SARSA is named after the quintuple $S, A, R, S', A'$ each update uses.) Q-learning's
# guarantee (Watkins & Dayan, 1992) needs every (state, action) pair to keep being tried and step
# sizes that decay; with a constant α the estimates keep moving with the noise of the
# transitions, and settle on $Q^*$ only where, as on this deterministic cliff, there is none.
# Expected SARSA takes
# the expectation that SARSA samples: the same values in expectation, without the noise of
# drawing $A'$; with a greedy $\pi$ it *is* Q-learning.
#
# **The maximisation bias.** Q-learning's target takes a maximum over *estimates*. If several
# actions are really worth the same but their estimates are noisy, the largest estimate is
# likely one that happens to be too high: $\mathbb E[\max_a \hat Q(a)] \ge \max_a \mathbb E[\hat
# Q(a)]$. The target inherits that optimism, and bootstrapping passes it on.
# **Double Q-learning** (van Hasselt, 2010) keeps two independent tables; each step a coin picks
# the one that learns, and the target lets that table *choose* the next action and the other one
# *value* it:
# $$Q_1(S, A) \leftarrow Q_1(S, A) + \alpha\big[R + \gamma\, Q_2\big(S', \arg\max_{a'} Q_1(S',
# a')\big) - Q_1(S, A)\big].$$
# An action that looks good by luck in $Q_1$ is valued by $Q_2$, whose noise is independent.
# To act, Double Q-learning uses both tables: ε-greedy on their mean $(Q_1 + Q_2)/2$ (van Hasselt
# and Sutton & Barto use the sum, which has the same greedy action).
#
# The rules of lesson 05 hold unchanged: after a termination the target is $R$ alone; after a
# time-limit truncation bootstrap from `final_obs`; the next episode's first state is `obs`.

# %% [markdown]
# ## Build it
#
# **Step 1: the ε-greedy policy's probabilities**, for a row $Q(s, \cdot)$ or a whole table:
# with probability ε the action is uniform over all $A$ actions (the greedy one included);
# otherwise it is greedy, chosen uniformly among tied maxima. Sharing among ties matters:
# at the start every $Q$ is 0, and an `argmax` would always send the agent LEFT.

# %% tags=["solution"]
def my_epsilon_greedy_probs(q, epsilon):
    """Probabilities [..., A] of the epsilon-greedy policy of q [..., A]."""
    q = np.asarray(q, dtype=float)
    best = q == q.max(axis=-1, keepdims=True)
    return epsilon / q.shape[-1] + (1 - epsilon) * best / best.sum(axis=-1, keepdims=True)


# %%
assert rc.exercises.check("epsilon_greedy_probs", my_epsilon_greedy_probs)

# %% [markdown]
# Acting uses the same policy: `rc.epsilon_greedy(Q[s], epsilon, rng)` draws one action from it.

# %%
q_row = np.array([1.0, 3.0, 3.0, 0.0])
draws = np.bincount([rc.epsilon_greedy(q_row, 0.2, rng) for _ in range(20_000)], minlength=4)
exact = rc.epsilon_greedy_probs(q_row, 0.2)
print("frequencies:", np.round(draws / draws.sum(), 3), " exact:", np.round(exact, 3))
assert np.abs(draws / draws.sum() - exact).max() < 0.015  # about 4 standard errors

# %% [markdown]
# **Step 2: the SARSA update**, returning an updated copy of $Q$.

# %% tags=["solution"]
def my_sarsa_update(Q, s, a, r, s_next, a_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    target = r if terminated else r + gamma * Q[s_next, a_next]
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


# %%
assert rc.exercises.check("sarsa_update", my_sarsa_update)

# %% [markdown]
# **Step 3: Q-learning and Expected SARSA updates.** Same shape, other targets; Expected SARSA
# averages under step 1's probabilities.

# %% tags=["solution"]
def my_q_learning_update(Q, s, a, r, s_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    target = r if terminated else r + gamma * Q[s_next].max()
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


# %%
assert rc.exercises.check("q_learning_update", my_q_learning_update)

# %% tags=["solution"]
def my_expected_sarsa_update(Q, s, a, r, s_next, terminated, alpha, gamma, epsilon):
    Q = np.array(Q, dtype=float)
    expected = my_epsilon_greedy_probs(Q[s_next], epsilon) @ Q[s_next]
    target = r if terminated else r + gamma * expected
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


# %%
assert rc.exercises.check("expected_sarsa_update", my_expected_sarsa_update)

# %% [markdown]
# **Step 4: the SARSA loop.** On-policy means the $A'$ in the target is the action you then
# take: draw it once, at the state the step ended in, learn, and move on with it. The checker
# replays your run exactly, so draw as the docstring says.

# %% tags=["solution"]
def my_sarsa(env, episodes, alpha, gamma, epsilon, seed):
    """SARSA from Q = 0; returns Q [S, A].

    Draws: rng = np.random.default_rng(seed); reset the env once with env.reset(seed=seed);
    rc.epsilon_greedy(Q[s], epsilon, rng) for the first action of every episode, and for a'
    at step.final_obs after every step (before the update).
    """
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        a = rc.epsilon_greedy(Q[s], epsilon, rng)
        while True:
            step = env.step(np.array([a]))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            a_next = rc.epsilon_greedy(Q[s_final], epsilon, rng)
            Q = my_sarsa_update(Q, s, a, r, s_final, a_next, bool(step.terminated[0]), alpha,
                                gamma)
            s, a = int(step.obs[0]), a_next
            if step.done[0]:
                break
    return Q


# %%
assert rc.exercises.check("sarsa", my_sarsa)

# %% [markdown]
# **Step 5: the Double Q-learning update.** `update_first` is the coin: True, $Q_1$ learns
# (choosing with $Q_1$, valuing with $Q_2$); False, the roles swap. Return both tables.

# %% tags=["solution"]
def my_double_q_update(Q1, Q2, s, a, r, s_next, terminated, alpha, gamma, update_first):
    Q1, Q2 = np.array(Q1, dtype=float), np.array(Q2, dtype=float)
    learner, other = (Q1, Q2) if update_first else (Q2, Q1)
    target = r if terminated else r + gamma * other[s_next, learner[s_next].argmax()]
    learner[s, a] += alpha * (target - learner[s, a])
    return Q1, Q2


# %%
assert rc.exercises.check("double_q_update", my_double_q_update)

# %% [markdown]
# The reference runs all four methods in one loop; they differ only in `v_next` and in which
# table learns (`rc.q_learning`, `rc.sarsa`, `rc.expected_sarsa` and `rc.double_q_learning` call
# it, and an environment with `n` copies runs `n` independent learners side by side). `act`
# shows how Double Q-learning acts: ε-greedily on the mean of its two tables. The helpers with
# content are printed below it: Expected SARSA's expectation (your step 1's probabilities times
# $Q(s', \cdot)$, in closed form) and the target with its terminal mask. `_start` and `_step`
# reset and step the environment as your loop does.

# %%
print(inspect.getsource(rc.tabular.control._td_control_one))
print(inspect.getsource(rc.tabular.exploration._epsilon_greedy_expectation))
print(inspect.getsource(rc.tabular.targets._bootstrap))
print(inspect.getsource(rc.tabular.targets._td_target))

# %% [markdown]
# ## Check it
#
# Ten runs of each method, side by side (`rc.CliffWalking(n=RUNS)` holds ten independent copies,
# each with its own table), 500 episodes with α = 0.5 and ε = 0.1. Then:
#
# 1. **Q-learning learns $Q^*$ while behaving $\varepsilon$-greedily** (off-policy): along its
#    greedy path its values equal the optimal ones from value iteration, on every run.
# 2. **Expected SARSA learns the values of its own $\varepsilon$-greedy policy** (on-policy):
#    along its greedy path its values are close to $Q^{\pi}$, with $\pi$ the $\varepsilon$-greedy
#    policy of its own table (DP evaluates it), and far from $Q^*$.
# 3. **A terminal state is never bootstrapped from**: start every $Q$ at $-5$, terminal row
#    included. The goal's row is never written, and the step into the goal is worth its reward
#    alone, $-1$; bootstrapping would make it $-6$.

# %%
methods = {"Q-learning": rc.q_learning, "SARSA": rc.sarsa, "Expected SARSA": rc.expected_sarsa}
runs = {name: learn(rc.CliffWalking(n=RUNS), EPISODES, alpha=ALPHA, gamma=GAMMA,
                    epsilon=EPSILON, seed=SEED) for name, learn in methods.items()}


def on_path_gaps(Q, policy):
    """Mean |Q - Q*| and |Q - Q^pi| (pi: the epsilon-greedy policy of Q) along the greedy path."""
    path = greedy_path(policy)[:-1]
    q_pi = rc.q_from_v(P, R, rc.policy_evaluation_exact(P, R, rc.epsilon_greedy_probs(Q, EPSILON),
                                                        GAMMA, terminal), GAMMA, terminal)
    taken = policy[path]
    return (np.abs(Q[path, taken] - q_star[path, taken]).mean(),
            np.abs(Q[path, taken] - q_pi[path, taken]).mean())


gaps = {}
for name, res in runs.items():
    reaches = [greedy_path(p)[-1] == GOAL for p in res.policy]
    gaps[name] = np.array([on_path_gaps(Q, p) for Q, p, ok in zip(res.Q, res.policy, reaches)
                           if ok])
    to_star, to_pi = gaps[name].T
    print(f"{name:15s} along its greedy path, mean |Q - Q*|: median {np.median(to_star):6.3f} "
          f"(range {to_star.min():.3f}-{to_star.max():.3f});  |Q - Q^pi|: median "
          f"{np.median(to_pi):6.3f} (range {to_pi.min():.3f}-{to_pi.max():.3f})   "
          f"[{len(to_pi)} of {RUNS} runs reach the goal]")
assert all(greedy_path(p) == EDGE for p in runs["Q-learning"].policy)
assert gaps["Q-learning"][:, 0].max() < 0.01
assert gaps["Expected SARSA"][:, 1].max() < gaps["Expected SARSA"][:, 0].min()

# %%
pessimist = rc.q_learning(cliff, 200, alpha=0.5, gamma=GAMMA, epsilon=EPSILON, seed=2, init=-5.0)
above_goal = GOAL - 12
print(f"Q(goal row) = {np.round(pessimist.Q[GOAL], 2)}, "
      f"Q(above the goal, DOWN) = {pessimist.Q[above_goal, rc.DOWN]:.4f}")
assert np.all(pessimist.Q[GOAL] == -5.0) and abs(pessimist.Q[above_goal, rc.DOWN] + 1) < 1e-4

# %% [markdown]
# Q-learning's values along the edge are exactly $Q^*$, and far from what its own exploring
# policy earns there. Expected SARSA's values are those of its exploring policy, not $Q^*$.
# SARSA aims at the same values as Expected SARSA, but every target carries the noise of one
# drawn $A'$; with α = 0.5 its table is visibly noisier (the printed maxima), and on some runs
# its greedy path does not even reach the goal (counted above). *Use it* comes back to the step
# size.

# %% [markdown]
# ## Use it
#
# **The cliff experiment.** The same ten runs per method. Reward per episode is what the agent
# earns *while exploring*.

# %%
def smooth(x, width=10):
    return np.convolve(x, np.ones(width) / width, mode="valid")


fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
x = np.arange(10, EPISODES + 1)
for (name, res), color in zip(runs.items(), ["C3", "C0", "C2"]):
    curves = np.array([smooth(r) for r in res.episode_returns])
    ax.plot(x, np.median(curves, axis=0), color=color, label=f"{name} (median of 10)")
    ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.15,
                    label=f"{name} (range of 10)")
ax.set(xlabel="episode", ylabel="reward per episode\n(10-episode mean)", ylim=(-160, 0),
       title="While exploring, SARSA and Expected SARSA earn more than Q-learning")
ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.tight_layout()
plt.show()

# %%
print(f"{'method':15s} {'reward/episode, 101-500':>24s}   greedy path length (edge cells) per run")
earned = {}
for name, res in runs.items():
    earned[name] = res.episode_returns[:, 100:].mean(axis=1)
    paths = [greedy_path(p) for p in res.policy]
    lengths = " ".join(f"{len(p) - 1}({edge_cells(p)})" if p[-1] == GOAL else "loop"
                       for p in paths)
    print(f"{name:15s} {np.median(earned[name]):8.1f} ({earned[name].min():.1f} to "
          f"{earned[name].max():.1f})   {lengths}")
assert earned["SARSA"].min() > earned["Q-learning"].max()
assert earned["Expected SARSA"].min() > earned["Q-learning"].max()
for name in ("SARSA", "Expected SARSA"):
    assert all(edge_cells(path) <= 1 for path in map(greedy_path, runs[name].policy)
               if path[-1] == GOAL)

# %% [markdown]
# Q-learning finds the optimal path on every run and still earns least: it plans as if it will
# never explore, walks the edge, and pays 100 every time a random step takes it over. SARSA's and
# Expected SARSA's values include their own exploration, so they learn that the edge is dangerous
# *for them* and take longer paths that keep off it (at most one edge cell, on every run that
# reaches the goal), which earn more as long as ε stays at 0.1. A SARSA run whose greedy path
# loops shows the noise of its sampled $A'$ at α = 0.5; the step-size sweep below measures it.
#
# The paths of one run, drawn over $\max_a Q$ (one colour scale for the three panels):

# %%
fig, axes = plt.subplots(3, 1, figsize=(8, 8), dpi=100)
for ax, (name, res) in zip(axes, runs.items()):
    values = res.Q[0].max(axis=1)
    values[START + 1:] = np.nan  # cliff and goal: never acted in, left blank
    path = greedy_path(res.policy[0])
    rc.plot_grid(cliff, values, res.policy[0], ax=ax, annotate=False,
                 title=f"{name}, run 0: greedy path of {len(path) - 1} steps")
    ax.images[0].set_clim(-30, 0)
    ax.images[0].colorbar.set_label(r"$\max_a Q(s, a)$")
    ax.set(xlabel="column", ylabel="row")
    for label in ax.texts:
        label.set_fontsize(10)
    r, c = np.divmod(np.array(path), 12)
    ax.plot(c, r, color="red", lw=2)
fig.suptitle("Q-learning walks the cliff's edge; both SARSAs keep away from it")
plt.tight_layout()
plt.show()

# %% [markdown]
# And as the agents would walk them: one greedy episode of SARSA and of Q-learning from the
# start (single runs, seed 0), side by side. The summary line is compared by the tests; the
# player below it runs in the notebook.

# %%
sarsa = rc.sarsa(rc.CliffWalking(), EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON, seed=0)
qlearn = rc.q_learning(rc.CliffWalking(), EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON,
                       seed=0)
paths = rc.animate(rc.CliffWalking(), {"SARSA": sarsa.Q, "Q-learning": qlearn.Q})
print(paths)

# %%
paths

# %% [markdown]
# **Step sizes** (Sutton & Barto, Figure 6.3). Each method on ten runs for each of five step
# sizes, 150 episodes: the reward per episode over the first 100 episodes (how fast it learns)
# and over the next 50 (where it has got to). One call per method runs all 50 copies:

# %%
sweep_alphas = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
per_copy = np.repeat(sweep_alphas, RUNS)
sweep = {}
for name, learn in methods.items():
    res = learn(rc.CliffWalking(n=per_copy.size), 150, alpha=per_copy, gamma=GAMMA,
                epsilon=EPSILON, seed=SEED)
    returns = res.episode_returns.reshape(sweep_alphas.size, RUNS, 150)
    sweep[name] = {"episodes 1-100": returns[:, :, :100].mean(axis=2),
                   "episodes 101-150": returns[:, :, 100:].mean(axis=2)}

fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100, sharey=True)
for ax, part in zip(axes, ["episodes 1-100", "episodes 101-150"]):
    for (name, parts), color in zip(sweep.items(), ["C3", "C0", "C2"]):
        ax.plot(sweep_alphas, np.median(parts[part], axis=1), color=color, marker="o", ms=3,
                label=name)
        ax.fill_between(sweep_alphas, parts[part].min(axis=1), parts[part].max(axis=1),
                        color=color, alpha=0.15)
    ax.set(xlabel="step size α", title=part, ylim=(-160, 0))
axes[0].set_ylabel("reward per episode\n(median, range of 10 runs)")
axes[1].legend(fontsize=9, loc="lower left")
fig.suptitle("Expected SARSA does well at every α; SARSA degrades as α grows")
plt.tight_layout()
plt.show()

# %%
late = {name: np.median(parts["episodes 101-150"], axis=1) for name, parts in sweep.items()}
for name, values in late.items():
    print(f"{name:15s} episodes 101-150, median per alpha:", "  ".join(
        f"{a:.1f}: {v:6.1f}" for a, v in zip(sweep_alphas, values)))
assert (late["Expected SARSA"] > late["SARSA"]).all()
assert late["SARSA"][-1] < late["SARSA"].max() - 10  # SARSA at alpha 1 well below its best
assert late["Expected SARSA"][-1] > late["Expected SARSA"].max() - 5  # Expected SARSA holds up

# %% [markdown]
# With α = 1 the table simply copies each target. Expected SARSA's target involves no random
# draw on this deterministic grid (given the table, it is the same every time), so copying it
# is safe.
# SARSA's target also depends on the one $A'$ it drew, so at α = 1 each entry jumps to the
# value of a random action and the greedy policy chases that noise. Q-learning does not suffer
# from large steps either, but it walks the edge at every α and keeps paying for it.
#
# **Decaying ε.** If the agent stops exploring, does SARSA find the optimal path too? Ten SARSA
# runs with ε decaying linearly from 0.1 to 0 over the 500 episodes:

# %%
decaying = np.linspace(EPSILON, 0.0, EPISODES)
decay_run = rc.sarsa(rc.CliffWalking(n=RUNS), EPISODES, alpha=ALPHA, gamma=GAMMA,
                     epsilon=decaying, seed=SEED)
lengths = [len(greedy_path(p)) - 1 for p in decay_run.policy]
last_decaying = decay_run.episode_returns[:, -100:].mean(axis=1)
last_constant = runs["SARSA"].episode_returns[:, -100:].mean(axis=1)
print(f"SARSA, epsilon 0.1 -> 0: greedy path lengths {lengths}")
print(f"reward per episode over the last 100: median {np.median(last_decaying):.1f} "
      f"(constant epsilon: {np.median(last_constant):.1f})")
assert np.median(last_decaying) > np.median(last_constant)
assert sum(n > 13 for n in lengths) >= 8

# %% [markdown]
# The policy it runs earns more once ε is small, but its greedy path is still a detour (the
# printed lengths), not the 13-step edge. The theory says SARSA converges to the optimal policy
# if exploration decays slowly enough and every action keeps being tried infinitely often, with
# step sizes that decay too (Singh et al., 2000). Five hundred episodes are far from that
# limit; the exercises ask you why the detour survives.
#
# **The maximisation bias and Double Q-learning** (Sutton & Barto, Example 6.7). From state A,
# action 0 goes left to B and every other action goes right to the end, both with reward 0.
# Every action in B ends the episode with reward $+0.9$ or $-1.1$, equally likely: a mean of
# $-0.1$. Going left is worth $-0.1$, going right $0$; an ε-greedy agent that knows this goes left
# only when exploring picks it, $\varepsilon / 10 = 1\%$ of the time. (A has ten actions only
# because every state of a `TabularMDP` has the same number; nine of them mean "right".)

# %%
def max_bias_mdp(n):
    """A (0) -> B (1) by action 0, every other action -> end (2); B -> end with +0.9 (3) or
    -1.1 (4)."""
    P, R = np.zeros((5, 10, 5)), np.zeros((5, 10, 5))
    P[0, 0, 1] = 1.0
    P[0, 1:, 2] = 1.0
    P[1, :, 3] = P[1, :, 4] = 0.5
    R[1, :, 3], R[1, :, 4] = 0.9, -1.1
    for s in (2, 3, 4):
        P[s, :, s] = 1.0
    return rc.TabularMDP(P, R, np.array([False, False, True, True, True]),
                         np.array([1.0, 0, 0, 0, 0]), n=n)


BIAS_RUNS, BIAS_EPISODES = 1000, 300
left = {}
for name, learn in [("Q-learning", rc.q_learning), ("Double Q-learning", rc.double_q_learning)]:
    res = learn(max_bias_mdp(BIAS_RUNS), BIAS_EPISODES, alpha=0.1, gamma=1.0, epsilon=EPSILON,
                seed=SEED)
    left[name] = (res.episode_lengths == 2).mean(axis=0)  # two steps: it went left, through B
    print(f"{name:18s} went left in the most runs at episode {left[name].argmax() + 1}: "
          f"{100 * left[name].max():.1f}%; at episode {BIAS_EPISODES}: {100 * left[name][-1]:.1f}%; "
          f"Q(A, left) mean over runs {res.Q[:, 0, 0].mean():+.3f}")

fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for (name, frac), color in zip(left.items(), ["C3", "C0"]):
    ax.plot(np.arange(1, BIAS_EPISODES + 1), 100 * frac, color=color, label=name)
ax.axhline(100 * EPSILON / 10, color="k", ls="--", label="optimal with ε = 0.1 (1%)")
ax.set(xlabel="episode", ylabel="runs that went left (%)\n(of 1000)", ylim=(0, 100),
       title="A max over noisy estimates makes the worse action look better")
ax.legend(fontsize=9)
plt.show()
assert left["Q-learning"].max() > 0.5 and left["Double Q-learning"].max() < left["Q-learning"].max() / 2

# %% [markdown]
# Early on, each of B's ten estimates rests on a few rewards of ±1, and the largest of ten noisy
# estimates is well above −0.1. Q-learning bootstraps A's left value from that maximum, so for
# dozens of episodes most runs go left. Double Q-learning's choice and valuation come from
# different tables, so the lucky estimate is not confirmed; it goes left far less often, though
# more than 1%: an unbiased estimate of −0.1 is still above 0 now and then.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | SARSA walks the cliff's edge like Q-learning | the target uses the greedy next action (`max`) instead of the sampled $A'$ | draw $A'$ from the ε-greedy policy at `final_obs`, use it in the target, then take it |
# | values around the goal are off by the terminal row's content | bootstrapping from the terminal state | target $= R$ alone when `terminated` |
# | Q-learning's reward during training looks bad though its policy is optimal | its exploring policy falls off the edge path it learned | judge the greedy policy separately; or use (Expected) SARSA if exploring is unavoidable |
# | SARSA's greedy policy changes from episode to episode, or loops | a large α copies the noise of the sampled $A'$ into the table | a smaller α, or Expected SARSA |
# | actions that look good early turn out worse than their estimates said | maximisation bias: a max over noisy estimates | Double Q-learning (two tables) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the double estimator.** You have `samples [A, N]`: $N$ rewards of each of $A$
#    actions (N even). Write `max_estimators(samples)` returning `(single, double)`: the single
#    estimate of $\max_a \mathbb E[X_a]$ is the largest sample mean; the double estimate splits the
#    samples into halves 1 and 2 (the first and last $N/2$ columns) and averages two
#    cross-estimates: half 2's mean of the action half 1 finds best, and half 1's mean of the
#    action half 2 finds best. Then measure both estimators' bias when all ten actions have mean
#    $-0.1$ (B of the maximisation-bias example, with Gaussian rewards).
#    And answer: why does SARSA with ε decaying to 0 keep its detour? Set `why_detour` to one
#    letter: (a) SARSA can never learn the optimal policy; (b) the step size is too large for
#    the values to settle; (c) once ε is small, the agent rarely steps onto the edge, so the low
#    values it learned there while exploring are almost never corrected; (d) the edge path is
#    not optimal for the greedy policy.
# 2. **Medium: n-step SARSA** (Sutton & Barto, section 7.2). Write
#    `n_step_sarsa(env, episodes, n, alpha, gamma, epsilon, seed)`: lesson 05's n-step window
#    with `(state, action)` pairs and the target
#    $R_{t+1} + \dots + \gamma^{n-1} R_{t+n} + \gamma^n Q(S_{t+n}, A_{t+n})$, from $Q = 0$. Draw as
#    in step 4: the first action of each episode at its first state; after every step, $A'$ at
#    `final_obs` (used to bootstrap, and taken if the episode goes on); when the episode ends,
#    flush the pending pairs (no bootstrap after a termination; from $Q(\text{final\_obs}, A')$
#    after a truncation), then start the next episode. $n = 1$ must give SARSA.
# 3. **Hard: SARSA(λ)** with replacing traces (Sutton & Barto, section 12.7). Write
#    `sarsa_lambda(env, episodes, lam, alpha, gamma, epsilon, seed)`: step 4's loop and draws,
#    plus a trace $z(s, a)$ per pair: each step compute $\delta = R + \gamma Q(S', A') - Q(S, A)$
#    (no bootstrap after a termination), decay $z \leftarrow \gamma\lambda z$, set $z(S, A) = 1$,
#    then $Q \leftarrow Q + \alpha \delta z$; zero $z$ when an episode ends. λ = 0 must give
#    SARSA. Then compare how fast SARSA and SARSA(0.9) reach the goal in their first episodes.

# %% tags=["solution"]
def max_estimators(samples):
    x = np.asarray(samples, dtype=float)
    half = x.shape[1] // 2
    m1, m2 = x[:, :half].mean(axis=1), x[:, half:].mean(axis=1)
    single = x.mean(axis=1).max()
    double = 0.5 * (m2[m1.argmax()] + m1[m2.argmax()])
    return float(single), float(double)


draws = np.random.default_rng(1).normal(-0.1, 1.0, size=(2000, 10, 6))  # 2000 experiments
estimates = np.array([max_estimators(x) for x in draws])
print(f"true max -0.100; single estimator mean {estimates[:, 0].mean():+.3f}, "
      f"double estimator mean {estimates[:, 1].mean():+.3f}")
why_detour = "c"

# %%
assert rc.exercises.check("max_estimators", max_estimators)
assert rc.exercises.check("why_decaying_sarsa_stays_safe", lambda: why_detour)

# %% tags=["solution"]
def n_step_sarsa(env, episodes, n, alpha, gamma, epsilon, seed):
    Q = np.zeros((env.num_states, env.num_actions))
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        a = rc.epsilon_greedy(Q[s], epsilon, rng)
        states, actions, rewards = [s], [a], []
        while True:
            step = env.step(np.array([a]))
            rewards.append(float(step.reward[0]))
            s_final = int(step.final_obs[0])
            a = rc.epsilon_greedy(Q[s_final], epsilon, rng)
            states.append(s_final)
            actions.append(a)
            tau = len(rewards) - n
            if tau >= 0 and not step.done[0]:
                G = rc.n_step_target(rewards[tau:], Q[states[-1], actions[-1]], False, gamma)
                Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
            if step.done[0]:
                break
        T = len(rewards)
        for tau in range(max(T - n, 0), T):
            G = rc.n_step_target(rewards[tau:], Q[states[T], actions[T]],
                                 bool(step.terminated[0]), gamma)
            Q[states[tau], actions[tau]] += alpha * (G - Q[states[tau], actions[tau]])
        s = int(step.obs[0])
    return Q


# %%
assert rc.exercises.check("n_step_sarsa", n_step_sarsa)

# %% tags=["solution"]
def sarsa_lambda(env, episodes, lam, alpha, gamma, epsilon, seed):
    Q = np.zeros((env.num_states, env.num_actions))
    z = np.zeros_like(Q)
    rng = np.random.default_rng(seed)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        a = rc.epsilon_greedy(Q[s], epsilon, rng)
        while True:
            step = env.step(np.array([a]))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            a_next = rc.epsilon_greedy(Q[s_final], epsilon, rng)
            bootstrap = 0.0 if step.terminated[0] else Q[s_final, a_next]
            delta = r + gamma * bootstrap - Q[s, a]
            z *= gamma * lam
            z[s, a] = 1.0
            Q += alpha * delta * z
            s, a = int(step.obs[0]), a_next
            if step.done[0]:
                break
        z[:] = 0.0
    return Q


first_episodes = {}
for lam in (0.0, 0.9):
    env_lam = rc.CliffWalking()
    for seed in range(3):
        sarsa_lambda(env_lam, 10, lam, 0.5, 1.0, 0.1, seed)
    first_episodes[lam] = np.array(env_lam.episode_lengths).reshape(3, 10)
    print(f"lambda {lam}: steps of the first 10 episodes, median of 3 runs:",
          np.median(first_episodes[lam], axis=0).astype(int))

# %%
assert rc.exercises.check("sarsa_lambda", sarsa_lambda)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | control | "learning to act" | finding a good policy, here by improving $\varepsilon$-greedily on learned $Q$ |
# | on-policy | "learn about what you do" | the target values the policy that generates the data (SARSA, Expected SARSA with the behaviour's $\pi$) |
# | off-policy | "learn about another policy" | the target values a different policy, e.g. the greedy one (Q-learning) |
# | Q-learning | "max over next actions" | TD control with target $R + \gamma\max_{a'}Q(S', a')$; learns $Q^*$ if every pair keeps being tried and the step sizes decay (a constant α suffices only on deterministic tasks like the cliff) |
# | SARSA | "state, action, reward, state, action" | TD control with target $R + \gamma Q(S', A')$ for the action actually taken next |
# | Expected SARSA | "SARSA without the sampling" | target $R + \gamma \sum_{a'} \pi(a'|S')Q(S', a')$; no noise from drawing $A'$ |
# | maximisation bias | "Q-learning is optimistic" | $\mathbb E[\max_a \hat Q(a)] \ge \max_a \mathbb E[\hat Q(a)]$: a max over noisy estimates is biased upwards |
# | Double Q-learning | "two Q tables" | one table chooses the next action, the other values it; replaces the upward bias of the max by a much smaller one, which can point downward (van Hasselt, 2010); acts on the mean of the two tables |
# | $\varepsilon$-greedy | "mostly greedy" | a uniformly random action with probability $\varepsilon$, else greedy (ties at random) |
# | greedy path | "what the agent learned" | the route from the start following $\arg\max_a Q$, without exploration |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 6
#   (sections 6.4-6.7: SARSA, Q-learning, Expected SARSA, the cliff of Example 6.6, Figure 6.3's
#   step sizes, the maximisation bias of Example 6.7 and Double Q-learning), chapter 7 (n-step
#   SARSA) and chapter 12 (SARSA(λ)).
# - Watkins (1989), *Learning from Delayed Rewards*, PhD thesis, Cambridge, and Watkins &
#   Dayan (1992), *Q-learning*, Machine Learning 8: Q-learning and its convergence proof.
# - Rummery & Niranjan (1994), *On-line Q-learning using connectionist systems*, Cambridge
#   tech. report CUED/F-INFENG/TR 166: the on-policy update later named SARSA.
# - van Seijen, van Hasselt, Whiteson & Wiering (2009), *A theoretical and empirical analysis
#   of Expected Sarsa*, IEEE ADPRL: why the expectation lowers variance and tolerates larger
#   step sizes.
# - van Hasselt (2010), *Double Q-learning*, NeurIPS: the maximisation bias and the double
#   estimator; the idea behind Double DQN in lesson 07.
# - Singh, Jaakkola, Littman & Szepesvári (2000), *Convergence results for single-step
#   on-policy reinforcement-learning algorithms*, Machine Learning 38: when SARSA with decaying
#   exploration converges to the optimal policy.
