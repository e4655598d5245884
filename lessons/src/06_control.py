# %% [markdown]
# # 06 · Control — Q-learning, SARSA and Expected SARSA on CliffWalking
#
# *Prerequisites:* 04, 05
# *Time:* 45 minutes
# *You will build:* Q-learning, SARSA and Expected SARSA, and the cliff experiment that shows the difference between learning off-policy and on-policy.

# %% [markdown]
# Lesson 05 learned the values of a *fixed* policy. Control learns which actions to take: it
# estimates action values $Q(s, a)$ from single steps and acts (mostly) greedily with respect
# to them, so the policy improves as the estimates do. The three methods here differ in one
# term of the TD target, and that term decides *which* policy's values you learn.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)

GAMMA, ALPHA, EPSILON, EPISODES = 1.0, 0.1, 0.1, 500

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
print(cliff)

v_star, optimal = rc.value_iteration(P, R, GAMMA, terminal)
q_star = rc.q_from_v(P, R, v_star, GAMMA, terminal)
rows, cols = np.divmod(np.arange(S), 12)
safe = np.where(cols == 11, rc.DOWN, np.where(rows == 0, rc.RIGHT, rc.UP))  # up, across, down


def value_of(actions, epsilon):
    """V(start) of following ``actions [S]`` with probability 1 - epsilon, else a random action."""
    probs = (1 - epsilon) * np.eye(A)[actions] + epsilon / A
    return rc.policy_evaluation_exact(P, R, probs, GAMMA, terminal)[START]


for name, actions in [("optimal (edge)", optimal), ("safe (top row)", safe)]:
    print(f"{name:15s} greedy: {value_of(actions, 0.0):7.2f}   "
          f"with epsilon = 0.1: {value_of(actions, EPSILON):7.2f}")

# %% [markdown]
# The optimal policy is the worst one to *follow while exploring*: one random step down from
# the edge costs 100. So "the best policy" depends on a question the algorithm must answer:
# the values of *which* policy are you learning, the greedy one you will deploy or the
# exploring one you are running?

# %% [markdown]
# ## The idea
#
# All three methods update $Q(S_t, A_t) \leftarrow Q(S_t, A_t) + \alpha\,[\text{target} -
# Q(S_t, A_t)]$ after each step, act $\varepsilon$-greedily, and differ in the target:
#
# | method | target | learns the values of |
# |---|---|---|
# | **Q-learning** | $R + \gamma \max_{a'} Q(S', a')$ | the greedy policy ($Q^*$), whatever the behaviour: *off-policy* |
# | **SARSA** | $R + \gamma Q(S', A')$, $A'$ the action it takes next | the $\varepsilon$-greedy policy it follows: *on-policy* |
# | **Expected SARSA** | $R + \gamma \sum_{a'} \pi(a' \mid S') Q(S', a')$ | the policy $\pi$ in the sum (here the $\varepsilon$-greedy one) |
#
# (SARSA is named after the quintuple $S, A, R, S', A'$ each update uses.) Expected SARSA
# takes the expectation SARSA samples: same values, less variance, so it tolerates larger
# step sizes; with a greedy $\pi$ it *is* Q-learning.
#
# With $\varepsilon = 0.1$ SARSA learns that cells next to the cliff are dangerous *for an
# exploring agent* and routes around them; Q-learning learns the edge path's true optimal
# values and walks it, falling off whenever exploration strikes.
#
# The rules of lesson 05 hold unchanged: after a termination the target is $R$ alone; after a
# time-limit truncation bootstrap from `final_obs`; the next episode's first state is `obs`.

# %% [markdown]
# ## Build it
#
# **Step 1: $\varepsilon$-greedy with random tie-breaking.** At the start every $Q$ is 0; if
# ties went to the lowest index, the agent would always try LEFT first.

# %%
def my_epsilon_greedy(q_row, epsilon, rng):
    if rng.random() < epsilon:
        return int(rng.integers(len(q_row)))
    best = np.flatnonzero(q_row == q_row.max())
    return int(rng.choice(best))


q_row = np.array([1.0, 3.0, 3.0, 0.0])
draws = np.bincount([my_epsilon_greedy(q_row, 0.2, rng) for _ in range(20_000)], minlength=4)
print("frequencies:", np.round(draws / draws.sum(), 3),
      " exact:", np.round(rc.epsilon_greedy_probs(q_row, 0.2), 3))
np.testing.assert_allclose(draws / draws.sum(), rc.epsilon_greedy_probs(q_row, 0.2), atol=0.015)

# %% [markdown]
# **Step 2: one loop, three targets.** Draw the next action first (SARSA needs it), then
# build the target from the state the step ended in.

# %%
def my_td_control(env, episodes, alpha, gamma, epsilon, method, seed, rng):
    Q = np.zeros((env.num_states, env.num_actions))
    returns = []
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        a = my_epsilon_greedy(Q[s], epsilon, rng)
        total = 0.0
        while True:
            step = env.step(np.array([a]))
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            a_next = my_epsilon_greedy(Q[s_final], epsilon, rng)
            if method == "q_learning":
                future = Q[s_final].max()
            elif method == "sarsa":
                future = Q[s_final, a_next]
            else:
                future = rc.epsilon_greedy_probs(Q[s_final], epsilon) @ Q[s_final]
            target = r if step.terminated[0] else r + gamma * future
            Q[s, a] += alpha * (target - Q[s, a])
            total += r
            if step.done[0]:
                break
            s, a = int(step.obs[0]), a_next
        s = int(step.obs[0])
        returns.append(total)
    return Q, np.array(returns)


def greedy_path(actions, limit=60):
    """States visited from the start following ``actions [S]`` (the cliff is deterministic)."""
    path = [START]
    while not terminal[path[-1]] and len(path) <= limit:
        path.append(int(np.argmax(P[path[-1], actions[path[-1]]])))
    return path


mine = {m: my_td_control(cliff, EPISODES, ALPHA, GAMMA, EPSILON, m, seed=1, rng=rng)
        for m in ("q_learning", "sarsa")}
for m, (Q, returns) in mine.items():
    print(f"your {m:10s}: greedy path {len(greedy_path(Q.argmax(axis=1))) - 1} steps, "
          f"mean reward per episode (last 400) {returns[100:].mean():.1f}")

# %% [markdown]
# Now the reference on the same task. Its random draws differ from yours (its own generator,
# seeded by `seed`), so compare the robust facts: the paths and the rewards while exploring.

# %%
ref_q = rc.q_learning(cliff, EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON, seed=1)
ref_sarsa = rc.sarsa(cliff, EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON, seed=1)
for m, ref in [("q_learning", ref_q), ("sarsa", ref_sarsa)]:
    print(f"rc.{m:10s}: greedy path {len(greedy_path(ref.policy)) - 1} steps, "
          f"mean reward per episode (last 400) {ref.episode_returns[100:].mean():.1f}")
assert greedy_path(mine["q_learning"][0].argmax(axis=1)) == greedy_path(ref_q.policy)
assert len(greedy_path(ref_q.policy)) - 1 == 13

# %% [markdown]
# The reference shares one loop between the three methods; they differ only in the function
# that values the next state:

# %%
print(inspect.getsource(rc.tabular.control._one_step_control))
print(inspect.getsource(rc.sarsa))

# %% [markdown]
# ## Check it
#
# 1. **Q-learning learns $Q^*$ while behaving $\varepsilon$-greedily** (off-policy): along its
#    greedy path its values equal the optimal ones from value iteration.
# 2. **A terminal state is never bootstrapped from**: start every $Q$ at $-5$, terminal row
#    included. The goal's row is never written, and the step into the goal is worth its reward
#    alone, $-1$; bootstrapping would make it $-6$.
# 3. **Same seed, same run**, bit for bit.

# %%
path = greedy_path(ref_q.policy)[:-1]
gap = np.abs(ref_q.Q[path, ref_q.policy[path]] - q_star[path, ref_q.policy[path]]).max()
print(f"largest |Q - Q*| along Q-learning's greedy path: {gap:.4f}")
assert gap < 0.01

pessimist = rc.q_learning(cliff, 200, alpha=0.5, gamma=GAMMA, epsilon=EPSILON, seed=2, init=-5.0)
above_goal = GOAL - 12
print(f"Q(goal row) = {np.round(pessimist.Q[GOAL], 2)}, "
      f"Q(above the goal, DOWN) = {pessimist.Q[above_goal, rc.DOWN]:.4f}")
assert np.all(pessimist.Q[GOAL] == -5.0) and abs(pessimist.Q[above_goal, rc.DOWN] + 1) < 1e-4

again = rc.q_learning(cliff, EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON, seed=1)
assert np.array_equal(again.Q, ref_q.Q)
print("same seed, same Q table")

# %% [markdown]
# ## Use it
#
# The cliff experiment: each method for 500 episodes with $\alpha = 0.1$, $\varepsilon = 0.1$,
# on 4 seeds. Reward per episode is what the agent earns *while exploring*.

# %%
methods = {"Q-learning": rc.q_learning, "SARSA": rc.sarsa, "Expected SARSA": rc.expected_sarsa}
SEEDS = range(4)
runs = {name: [learn(cliff, EPISODES, alpha=ALPHA, gamma=GAMMA, epsilon=EPSILON, seed=seed)
               for seed in SEEDS] for name, learn in methods.items()}


def smooth(x, width=10):
    return np.convolve(x, np.ones(width) / width, mode="valid")


fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for name, results in runs.items():
    mean_returns = np.mean([r.episode_returns for r in results], axis=0)
    ax.plot(np.arange(10, EPISODES + 1), smooth(mean_returns), label=name)
ax.set(xlabel="episode", ylabel="reward per episode\n(4 seeds, 10-episode mean)", ylim=(-100, 0),
       title="SARSA earns more while exploring")
ax.legend(loc="lower right")
plt.show()

# %%
print(f"{'method':15s} {'reward/episode (100-500)':>25s} {'greedy path length':>20s}")
summary = {}
for name, results in runs.items():
    earned = np.mean([r.episode_returns[100:].mean() for r in results])
    lengths = [len(greedy_path(r.policy)) - 1 for r in results]
    summary[name] = earned
    print(f"{name:15s} {earned:25.1f} {str(lengths):>20s}")

# %% [markdown]
# And the paths: the greedy policy of each method's first run, drawn over $\max_a Q$.

# %%
fig, axes = plt.subplots(3, 1, figsize=(6, 7.5), dpi=72)
for ax, (name, results) in zip(axes, runs.items()):
    res = results[0]
    values = res.Q.max(axis=1)
    values[START + 1:] = np.nan  # cliff and goal: never acted in, left blank
    rc.plot_grid(cliff, values, res.policy, ax=ax, annotate=False,
               title=f"{name}: greedy path ({len(greedy_path(res.policy)) - 1} steps)")
    ax.images[0].colorbar.set_label(r"$\max_a Q(s, a)$")
    ax.set(xlabel="column", ylabel="row")
    r, c = np.divmod(np.array(greedy_path(res.policy)), 12)
    ax.plot(c, r, color="red", lw=2)
fig.suptitle("Q-learning walks the cliff's edge; both SARSAs keep away from it")
plt.tight_layout()
plt.show()

# %% [markdown]
# The results the lesson claims, asserted for every seed:

# %%
edge = [START, *range(24, 36), GOAL]
for seed in SEEDS:
    assert greedy_path(runs["Q-learning"][seed].policy) == edge
    sarsa_path = greedy_path(runs["SARSA"][seed].policy)
    assert sarsa_path[-1] == GOAL and not any(24 < s < 35 for s in sarsa_path)
assert summary["SARSA"] > summary["Q-learning"] and summary["Expected SARSA"] > summary["Q-learning"]
print("Q-learning: the edge path on every seed; SARSA: a path that keeps off the edge; "
      "SARSA and Expected SARSA earn more while exploring")

# %% [markdown]
# Q-learning found the optimal policy and still earns least: it plans as if it will never
# explore, walks the edge, and pays 100 every time a random step takes it over. SARSA's values
# include its own exploration, so it learns that the edge is dangerous *for it* and takes
# the longer path, which earns more as long as $\varepsilon$ stays at 0.1. If $\varepsilon$ decays
# to 0, SARSA's policy converges to the optimal one too. Expected SARSA behaves like SARSA
# here with less noise in its updates.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | SARSA learns nothing useful, or behaves like Q-learning | $A'$ in the target is not the action actually taken next (a fresh draw, or the greedy one) | draw $A'$ once, use it in the target, then take it |
# | the agent always tries LEFT first and gets stuck | `argmax` breaks ties by the lowest index | break ties at random |
# | values around the goal are off by the terminal row's content | bootstrapping from the terminal state | target $= R$ alone when `terminated` |
# | Q-learning's reward during training looks bad though its policy is optimal | it is evaluated with exploration on the edge path | evaluate the greedy policy separately; or use SARSA if exploring is unavoidable |
# | learning never settles | constant $\varepsilon$ and $\alpha$ keep the agent and the values moving | decay $\varepsilon$ and/or $\alpha$, or read the greedy policy |
# | Expected SARSA's values do not match SARSA's | the expectation uses a different $\pi$ than the behaviour (another $\varepsilon$, or the greedy policy) | average under the behaviour policy's own probabilities |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: Q-learning target.** Write `q_learning_target(Q, r, s_next, terminated, gamma)`.
# 2. **Medium: SARSA update.** Write `sarsa_update(Q, s, a, r, s_next, a_next, terminated,
#    alpha, gamma)` returning an updated copy of `Q`.
# 3. **Hard: Expected SARSA target.** Write `expected_sarsa_target(Q, r, s_next, terminated,
#    gamma, epsilon)`: the expectation of $Q(S', \cdot)$ under the $\varepsilon$-greedy policy.
#    (Why does it not matter how tied greedy actions split the $1 - \varepsilon$?)

# %% tags=["solution"]
def q_learning_target(Q, r, s_next, terminated, gamma):
    return r if terminated else r + gamma * np.max(Q[s_next])


# %%
assert rc.exercises.check("q_learning_target", q_learning_target)

# %% tags=["solution"]
def sarsa_update(Q, s, a, r, s_next, a_next, terminated, alpha, gamma):
    Q = np.array(Q, dtype=float)
    target = r if terminated else r + gamma * Q[s_next, a_next]
    Q[s, a] += alpha * (target - Q[s, a])
    return Q


# %%
assert rc.exercises.check("sarsa_update", sarsa_update)

# %% tags=["solution"]
def expected_sarsa_target(Q, r, s_next, terminated, gamma, epsilon):
    if terminated:
        return r
    q = Q[s_next]
    best = q == q.max()
    probs = epsilon / q.size + (1 - epsilon) * best / best.sum()
    return r + gamma * probs @ q


# %%
assert rc.exercises.check("expected_sarsa_target", expected_sarsa_target)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | control | "learning to act" | finding a good policy, here by improving $\varepsilon$-greedily on learned $Q$ |
# | on-policy | "learn about what you do" | the target values the policy that generates the data (SARSA) |
# | off-policy | "learn about another policy" | the target values a different policy, e.g. the greedy one (Q-learning) |
# | Q-learning | "max over next actions" | TD control with target $R + \gamma\max_{a'}Q(S', a')$; learns $Q^*$ |
# | SARSA | "state, action, reward, state, action" | TD control with target $R + \gamma Q(S', A')$ for the action actually taken next |
# | Expected SARSA | "SARSA without the sampling" | target $R + \gamma \sum_{a'} \pi(a'|S')Q(S', a')$; lower variance |
# | $\varepsilon$-greedy | "mostly greedy" | a random action with probability $\varepsilon$, else greedy (ties at random) |
# | greedy path | "what the agent learned" | the route from the start following $\arg\max_a Q$, without exploration |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 6
#   (sections 6.4-6.6: SARSA, Q-learning, Expected SARSA, and the cliff of Example 6.6) and
#   chapter 7 (n-step SARSA).
# - Watkins (1989), *Learning from Delayed Rewards*, PhD thesis, Cambridge, and Watkins &
#   Dayan (1992), *Q-learning*, Machine Learning 8: Q-learning and its convergence proof.
# - Rummery & Niranjan (1994), *On-line Q-learning using connectionist systems*, Cambridge
#   tech. report CUED/F-INFENG/TR 166: the on-policy update later named SARSA.
# - van Seijen, van Hasselt, Whiteson & Wiering (2009), *A theoretical and empirical analysis
#   of Expected Sarsa*, IEEE ADPRL: why the expectation lowers variance and tolerates larger
#   step sizes.
