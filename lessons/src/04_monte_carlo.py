# %% [markdown]
# # 04 · Monte Carlo methods
#
# *Prerequisites:* 02, 03
# *Time:* 40 minutes
# *You will build:* first-visit and every-visit Monte Carlo prediction from sampled episodes, and on-policy Monte Carlo control with an epsilon-soft policy.

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
# the episode ends after $T$ steps. Compute it backwards from the episode's end, and average. Incrementally, after the $N(s)$-th return:
# $$V(s) \leftarrow V(s) + \frac{1}{N(s)}\big(G_t - V(s)\big).$$
#
# - **First-visit MC** uses only the return after the first visit to $s$ in each episode:
#   the samples are independent, so the average is unbiased and its error shrinks like
#   $\sigma/\sqrt{N}$, where $\sigma$ is the standard deviation of the return.
# - **Every-visit MC** uses every visit. Returns from the same episode are correlated and the
#   estimate is slightly biased for small $N$, but it also converges.
#
# No bootstrapping: an MC target is a real return, never built from other estimates. The price
# is variance: a return adds up the randomness of every action and transition until the end
# of the episode.
#
# For **control**, estimate $Q(s, a)$ instead (without a model, $V$ alone does not tell you
# which action to take) and improve the policy greedily with respect to $Q$ after each episode.
# Pure greedy stops trying the other actions, so their estimates never improve. Keep the policy
# **$\varepsilon$-soft**: $\varepsilon$-greedy gives every action at least $\varepsilon/|A|$. This
# converges to the best $\varepsilon$-soft policy (Sutton & Barto, section 5.4), a little worse
# than the optimal one.

# %% [markdown]
# ## Build it
#
# **Step 1: returns.** Compute $G_t$ for every step of an episode, backwards.

# %%
def my_returns(rewards, gamma):
    G = np.zeros(len(rewards))
    g = 0.0
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        G[t] = g
    return G


G = my_returns(rewards, GAMMA)
print(f"episode of {len(rewards)} steps: G_0 = {G[0]:.4f}, G_(T-1) = {G[-1]:.4f}")
np.testing.assert_allclose(G, rc.mc_returns(rewards, GAMMA))

# %% [markdown]
# **Step 2: the first-visit update.** Given one episode's states and rewards, update the table
# of averages `V` and the visit counts `N`, using each state's first visit only.

# %%
def my_first_visit_update(V, N, states, rewards, gamma):
    V, N = np.array(V, dtype=float), np.array(N, dtype=float)
    G = my_returns(rewards, gamma)
    seen = set()
    for s, g in zip(states, G):
        if s in seen:
            continue
        seen.add(s)
        N[s] += 1
        V[s] += (g - V[s]) / N[s]
    return V, N


assert rc.exercises.check("first_visit_update", my_first_visit_update)

# %% [markdown]
# **Step 3: the loop.** Play episodes with the policy, recording the state *before* each step,
# and update after each episode. The environment's `final_obs` is not needed here: this
# GridWorld has no time limit, so every episode ends in a terminal state, whose return is 0.

# %%
def my_episode(env, policy, s, rng):
    """One episode from state s: its states, its rewards, and the next episode's first state."""
    states, rewards = [], []
    while True:
        a = rng.choice(policy.shape[1], p=policy[s])
        step = env.step(np.array([a]))
        states.append(s)
        rewards.append(float(step.reward[0]))
        if step.done[0]:
            return states, rewards, int(step.obs[0])
        s = int(step.obs[0])


def my_mc_prediction(env, policy, episodes, gamma, seed, rng):
    V, N = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    for _ in range(episodes):
        states, rewards, s = my_episode(env, policy, s, rng)
        V, N = my_first_visit_update(V, N, states, rewards, gamma)
    return V


v_mine = my_mc_prediction(env, random_policy, 300, GAMMA, 1, rng)
live = ~env.terminal
rms_mine = np.sqrt(np.mean((v_mine - v_true)[live] ** 2))
print(f"your first-visit MC, 300 episodes: RMS error {rms_mine:.3f}")

# %% [markdown]
# The reference does the same with an explicit seed (and also handles every-visit, constant
# step sizes and time limits). Its loop:

# %%
print(inspect.getsource(rc.mc_prediction))

# %%
ref = rc.mc_prediction(env, random_policy, 300, GAMMA, first_visit=True, seed=1)
rms_ref = np.sqrt(np.mean((ref.V - v_true)[live] ** 2))
print(f"rc.mc_prediction, 300 episodes: RMS error {rms_ref:.3f}")
assert rms_mine < 0.05 and rms_ref < 0.05

# %% [markdown]
# Different random episodes, so the two tables differ, but both land near the truth.

# %% [markdown]
# ## Check it
#
# The invariants, asserted:
#
# 1. Returns satisfy $G_t = r_t + \gamma G_{t+1}$ with $G_T = 0$ after a terminal state.
# 2. When no state repeats in an episode, first-visit and every-visit updates are identical.
# 3. The estimate converges to the DP answer: its error falls as episodes accumulate.
# 4. The same seed gives the same table, bit for bit.

# %%
G = rc.mc_returns(rewards, GAMMA)
assert np.allclose(G[:-1], np.array(rewards[:-1]) + GAMMA * G[1:]) and G[-1] == rewards[-1]

no_repeat_states, no_repeat_rewards = [0, 1, 2, 6], [-0.01, -0.01, -0.01, 1.0]
first, _ = my_first_visit_update(np.zeros(S), np.zeros(S), no_repeat_states, no_repeat_rewards,
                                 GAMMA)
every = np.zeros(S)  # every visit, by hand: one return per step, no state repeats here
for s, g in zip(no_repeat_states, rc.mc_returns(no_repeat_rewards, GAMMA)):
    every[s] = g
np.testing.assert_allclose(first, every)

long_run = rc.mc_prediction(env, random_policy, 1000, GAMMA, seed=2)
rms = np.sqrt(np.mean((long_run.V_history - v_true)[:, live] ** 2, axis=1))
print(f"RMS error after 10, 100, 1000 episodes: {rms[9]:.3f}, {rms[99]:.3f}, {rms[999]:.3f}")
assert rms[999] < rms[99] < rms[9]

again = rc.mc_prediction(env, random_policy, 1000, GAMMA, seed=2)
assert np.array_equal(again.V, long_run.V)
print("same seed, same table")

# %% [markdown]
# ## Use it
#
# **First-visit against every-visit.** Both on the same episodes (same seed), error against the
# DP answer as episodes accumulate:

# %%
every_run = rc.mc_prediction(env, random_policy, 1000, GAMMA, first_visit=False, seed=2)
rms_every = np.sqrt(np.mean((every_run.V_history - v_true)[:, live] ** 2, axis=1))
print(f"after 1000 episodes: first-visit {rms[-1]:.3f}, every-visit {rms_every[-1]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.loglog(np.arange(1, 1001), rms, label="first-visit")
ax.loglog(np.arange(1, 1001), rms_every, label="every-visit")
ax.set(xlabel="episodes", ylabel="RMS error vs DP",
       title="Both converge; every-visit uses more samples")
ax.legend()
plt.show()

# %% [markdown]
# **The variance of returns.** The start state's first-visit estimate after $N$ episodes is
# the mean of $N$ sampled returns $G_0$. Sample 1000 of them and look at their spread:

# %%
s = int(env.reset(seed=3)[0])
start_returns = []
for _ in range(1000):
    _, episode_rewards, s = my_episode(env, random_policy, s, rng)
    start_returns.append(my_returns(episode_rewards, GAMMA)[0])
start_returns = np.array(start_returns)
sigma = start_returns.std()
print(f"V(start) = {v_true[0]:.3f}; the sampled returns: mean {start_returns.mean():.3f}, "
      f"std {sigma:.3f}, from {start_returns.min():.3f} to {start_returns.max():.3f}")
print(f"the std is {sigma / abs(v_true[0]):.1f} times |V(start)|")

# %% [markdown]
# One return says almost nothing: its standard deviation is the multiple of $|V(\text{start})|$
# printed above. Split the 1000 returns into 20 independent runs of 50 episodes and watch the
# spread of the running averages shrink like $\sigma / \sqrt N$:

# %%
runs = start_returns.reshape(20, 50)
running_means = np.cumsum(runs, axis=1) / np.arange(1, 51)
n = np.arange(1, 51)

fig, axes = plt.subplots(1, 2, figsize=(9, 3), dpi=72)
axes[0].hist(start_returns, bins=40)
axes[0].axvline(v_true[0], color="k", ls="--", label="V(start)")
axes[0].set(xlabel="return G_0 of one episode", ylabel="episodes",
            title="Single returns are spread far wider than V")
axes[0].legend()
axes[1].plot(n, running_means.T, color="C0", lw=0.5, alpha=0.6)
axes[1].plot(n, v_true[0] + sigma / np.sqrt(n), "k--", label="V ± σ/√N")
axes[1].plot(n, v_true[0] - sigma / np.sqrt(n), "k--")
axes[1].set(xlabel="episodes N", ylabel="estimate of V(start)",
            title="20 MC runs: error shrinks like 1/√N")
axes[1].legend()
plt.show()

# %%
spread = running_means.std(axis=0)
print(f"spread of the 20 estimates at N = 5, 50: {spread[4]:.3f}, {spread[49]:.3f} "
      f"(sigma/sqrt(N): {sigma / np.sqrt(5):.3f}, {sigma / np.sqrt(50):.3f})")

# %% [markdown]
# To halve the error you need four times the episodes. Lesson 05's TD methods attack exactly
# this variance, by bootstrapping from the next state's estimate instead of waiting for the
# whole return.

# %% [markdown]
# **Control on FrozenLake.** Now no model at all: on-policy first-visit MC control with an
# $\varepsilon$-greedy policy learns $Q$ on the slippery 4x4 FrozenLake (reward 1 for reaching
# the goal, holes end the episode). To judge the greedy policy it ends with, the cell below
# evaluates it with the model, and compares with the optimum from value iteration.

# %%
lake = rc.FrozenLake()
v_star, _ = rc.value_iteration(lake.P, lake.R, 0.99, lake.terminal)
control = rc.mc_control(lake, 4000, gamma=0.99, epsilon=0.1, seed=SEED)
v_greedy = rc.policy_evaluation(lake.P, lake.R, control.policy, 0.99, lake.terminal)
print(f"success rate while learning, last 1000 episodes: {control.episode_returns[-1000:].mean():.2f}")
print(f"value of the start state: learned greedy policy {v_greedy[0]:.3f}, optimal {v_star[0]:.3f}")
assert v_greedy[0] > 0.9 * v_star[0]

# %%
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), dpi=72)
rc.plot_grid(lake, control.Q.max(axis=1), control.policy, ax=axes[0],
          title="MC control: max_a Q, below V*")
rc.plot_grid(lake, v_star, rc.value_iteration(lake.P, lake.R, 0.99, lake.terminal)[1], ax=axes[1],
          title="Value iteration: V*, optimal policy")
for ax in axes:
    ax.set(xlabel="column", ylabel="row")
plt.show()

# %% [markdown]
# The learned greedy policy comes close to optimal; its $Q$ values are lower than $V^*$ because
# they are the values of the *exploring* policy, whose random moves take it into holes more
# often. For the same reason the success rate while learning (printed above, undiscounted)
# measures the exploring policy, not the greedy one you keep at the end.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values far too large or small, growing with episode length | returns summed forwards ($G_t$ includes rewards *before* $t$) | compute $G_t = r_t + \gamma G_{t+1}$ backwards from the end |
# | a state's estimate mixes two episodes | the first state of the next episode (`obs` after `done`) was appended to the finished one | the finished episode ends at `final_obs`; start a new list |
# | MC control stops improving, some actions never tried | a greedy policy with ties broken by lowest index | an $\varepsilon$-soft policy, ties broken at random |
# | estimates still noisy after many episodes | high variance of long returns | more episodes ($\sigma/\sqrt N$), or TD (lesson 05) |
# | values biased low on a task with a time limit | truncated episodes treated as terminal (return completed with 0) | complete the return with $\gamma^k V(\text{final\_obs})$, as `rc.mc_prediction` does |
# | estimates never settle | a constant step size $\alpha$ keeps tracking noise | sample averages $1/N(s)$ for a fixed policy |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: returns of a cut episode.** Write `mc_returns(rewards, gamma, final_value=0.0)`:
#    the discounted returns $G_t$ of one episode, computed backwards from $G_T$ =
#    `final_value` (0 if the episode terminated, the estimate $V(\text{final\_obs})$ if a time
#    limit cut it).
# 2. **Medium: $\varepsilon$-greedy probabilities.** Write `epsilon_greedy_probs(q, epsilon)`
#    for `q [..., A]`: $\varepsilon/A$ for every action, plus $1-\varepsilon$ shared equally
#    among the tied greedy actions.
# 3. **Hard: how fast does MC converge?** Write `mc_spread_slope(returns, runs)`: split the
#    sampled returns into `runs` independent runs of equal length, take each run's running mean
#    after $N = 1, 2, \dots$ episodes, measure the spread (standard deviation across runs) at
#    each $N$, and return the least-squares slope of $\log(\text{spread})$ against $\log N$.
#    Theory says $-1/2$. The solution applies it to the 1000 start-state returns above, as 40
#    runs of 25 (more, shorter runs give a cleaner fit), and asserts the slope is within 0.15
#    of $-1/2$.

# %% tags=["solution"]
def mc_returns(rewards, gamma, final_value=0.0):
    G = np.zeros(len(rewards))
    g = final_value
    for t in reversed(range(len(rewards))):
        g = rewards[t] + gamma * g
        G[t] = g
    return G


# %%
assert rc.exercises.check("mc_returns", mc_returns)

# %% tags=["solution"]
def epsilon_greedy_probs(q, epsilon):
    q = np.asarray(q, dtype=float)
    best = q == q.max(axis=-1, keepdims=True)
    return epsilon / q.shape[-1] + (1 - epsilon) * best / best.sum(axis=-1, keepdims=True)


# %%
assert rc.exercises.check("epsilon_greedy_probs", epsilon_greedy_probs)

# %% tags=["solution"]
def mc_spread_slope(returns, runs):
    per_run = np.asarray(returns, dtype=float).reshape(runs, -1)
    N = np.arange(1, per_run.shape[1] + 1)
    spread = (np.cumsum(per_run, axis=1) / N).std(axis=0)
    return float(np.polyfit(np.log(N), np.log(spread), 1)[0])


slope = mc_spread_slope(start_returns, 40)
print(f"slope of log(spread) against log(N), 40 runs of 25: {slope:.2f}")
assert abs(slope + 0.5) < 0.15

# %%
assert rc.exercises.check("mc_spread_slope", mc_spread_slope)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | Monte Carlo (MC) | "learn from complete episodes" | estimate a value by averaging sampled returns; update only once the episode has ended |
# | return $G_t$ | "the reward you got" | the discounted sum of the rewards from the step taken at time $t$ to the episode's end |
# | first-visit MC | "count each state once" | average the returns after each state's first visit per episode; unbiased |
# | every-visit MC | "use all the data" | average the returns after every visit; correlated samples, consistent |
# | bootstrapping | "using your own estimates" | building a target from other value estimates; MC does not, DP and TD do |
# | $\varepsilon$-soft policy | "keep exploring" | every action has probability at least $\varepsilon/|A|$ in every state |
# | on-policy | "learn about what you do" | the policy being improved is the one generating the data |
# | variance of the return | "MC is noisy" | the spread of $G_t$ around $V(s)$; the estimate's error falls only as $\sigma/\sqrt N$ |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 5:
#   first- and every-visit prediction, exploring starts, on-policy control with
#   $\varepsilon$-soft policies (section 5.4) and off-policy MC with importance sampling.
# - Singh & Sutton (1996), *Reinforcement learning with replacing eligibility traces*, Machine
#   Learning 22: compares first-visit and every-visit MC (bias and variance) and links them to
#   replacing and accumulating traces, which lesson 05 uses.
