# %% [markdown]
# # 05 · TD learning — TD(0), n-step TD and TD(λ)
#
# *Prerequisites:* 02, 04
# *Time:* 80 minutes
# *You will build:* TD(0), n-step TD, TD(λ) with accumulating and replacing traces, and the forward-view λ-return, with the rules for terminal states, time limits and episode boundaries that keep them correct.

# %% [markdown]
# Monte Carlo waits for the end of an episode and then uses the whole, noisy return. Temporal
# difference (TD) learning updates after every step, using the next state's *estimate* in
# place of the rest of the return. This lesson builds the family between the two extremes and
# the three bookkeeping rules that every implementation must get right.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
RUNS = range(20)  # the 5-state walk's comparisons are measured on 20 independent runs
SWEEP_RUNS = range(10)  # the step-size sweeps on the 19-state walk on 10


def random_walk(k, left_reward, right_reward, max_steps=None):
    """Sutton & Barto's random walk as a TabularMDP: states 1..k in a row between the terminal
    states 0 and k + 1; one action, which moves left or right with probability 1/2; start in
    the middle; the rewards are paid on entering the two ends."""
    S = k + 2
    P, R = np.zeros((S, 1, S)), np.zeros((S, 1, S))
    for s in range(1, S - 1):
        P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[0, 0, 0] = P[S - 1, 0, S - 1] = 1.0
    R[1, 0, 0], R[S - 2, 0, S - 1] = left_reward, right_reward
    terminal = np.zeros(S, dtype=bool)
    terminal[[0, S - 1]] = True
    start = np.zeros(S)
    start[S // 2] = 1.0
    return rc.TabularMDP(P, R, terminal, start, max_steps=max_steps)


walk5 = random_walk(5, 0.0, 1.0)
walk19 = random_walk(19, -1.0, 1.0)
one_action5, one_action19 = np.ones((7, 1)), np.ones((21, 1))
truth5 = rc.policy_evaluation(walk5.P, walk5.R, one_action5, 1.0, walk5.terminal)
truth19 = rc.policy_evaluation(walk19.P, walk19.R, one_action19, 1.0, walk19.terminal)
print("true values, 5-state walk:", np.round(truth5[1:-1], 3))


def rms(V, truth):
    """RMS error over the non-terminal states (of every table in V [..., S])."""
    return np.sqrt(np.mean((V[..., 1:-1] - truth[1:-1]) ** 2, axis=-1))


def band(ax, x, errors, label, color, **style):
    """Median over runs (a line) and range (a shaded band) of errors [runs, len(x)]."""
    ax.plot(x, np.median(errors, axis=0), color=color, label=f"{label}", **style)
    ax.fill_between(x, errors.min(axis=0), errors.max(axis=0), color=color, alpha=0.15)


# %% [markdown]
# ## The problem
#
# The 5-state random walk (Sutton & Barto, Example 6.2): from the centre you drift left or right
# until you fall off an end; the right end pays 1, so $V(s)$ is the probability of leaving on
# the right, $1/6, \dots, 5/6$. Estimate it with constant-$\alpha$ Monte Carlo, 100 episodes,
# on 20 runs, for several step sizes at once (`alpha` may be an array: with a fixed policy the
# episodes do not depend on the values, so one run serves every step size):

# %%
mc_alphas, td_alphas = np.array([0.01, 0.02, 0.04, 0.06, 0.08]), np.array([0.05, 0.1, 0.15])
init = np.full(7, 0.5)
mc_err = np.array([rms(rc.mc_prediction(walk5, one_action5, 100, 1.0, alpha=mc_alphas, init=init,
                                        seed=run).V_history, truth5) for run in RUNS])
for episode in (25, 100):
    print(f"constant-alpha MC, RMS error after {episode:3d} episodes (median of 20 runs):",
          ", ".join(f"alpha {a}: {e:.3f}" for a, e in zip(mc_alphas,
                                                          np.median(mc_err[:, episode - 1], axis=0))))
mc_median = np.median(mc_err, axis=0)  # [episodes, step sizes]
assert mc_median[99, 0] < mc_median[24, 0]  # alpha 0.01 still improving
assert mc_median[24, -1] < mc_median[24, 2] and mc_median[99, -1] > mc_median[99, 2]

# %% [markdown]
# Small steps learn slowly: compare the α = 0.01 errors after 25 and 100 episodes. Larger
# ones learn faster but stay noisy: α = 0.08 is ahead of α = 0.04 after 25 episodes and behind
# it after 100 (asserted above). Every target is a full return, with all the randomness of the
# walk in it, and a constant step size never averages that noise away: the larger α, the higher
# the floor its error settles on. *Use it* plots these curves against TD's.

# %% [markdown]
# ## The idea
#
# **TD(0)** replaces the return by one real reward plus the estimate of where you landed:
# $$V(S_t) \leftarrow V(S_t) + \alpha\big[\underbrace{R_{t+1} + \gamma V(S_{t+1})}_{\text{TD target}}
#  - V(S_t)\big].$$
# (Sutton & Barto's $R_{t+1}$ is the reward of the step taken at $t$, our `rewards[t]`.) The
# bracket is the **TD error** $\delta_t$. Using an estimate inside the target is
# *bootstrapping*: it adds bias while the estimates are wrong, but the target depends on one
# random step instead of all of them, so its variance is lower (*Use it* measures by how much).
#
# **n-step TD** sits in between: $n$ real rewards, then the estimate,
# $$G_{t:t+n} = R_{t+1} + \gamma R_{t+2} + \dots + \gamma^{n-1}R_{t+n} + \gamma^n V(S_{t+n}).$$
# $n = 1$ is TD(0); $n \ge$ the rest of the episode is Monte Carlo. The update of $S_t$ waits
# until $R_{t+n}$ has arrived.
#
# **The λ-return** averages all the n-step returns, with weights $(1-\lambda)\lambda^{n-1}$; the
# full return (the episode's end, or the value where a time limit cut it) takes the weight that
# is left, so the weights sum to 1. Backwards, in one line:
# $$G^\lambda_t = R_{t+1} + \gamma\big[(1-\lambda)\,V(S_{t+1}) + \lambda\, G^\lambda_{t+1}\big].$$
# $\lambda = 0$ gives the TD(0) target, $\lambda = 1$ the Monte Carlo return. Updating towards it
# (the *forward view*) needs the episode's end. **TD(λ)** gets there online, with an
# **eligibility trace** $e(s)$, a fading memory of visited states: each step, decay all traces
# by $\gamma\lambda$, bump the current state's, then move *every* state by its share of the
# current TD error,
# $$e \leftarrow \gamma\lambda e;\quad e(S_t) \leftarrow e(S_t) + 1 \text{ (accumulating) or } 1
# \text{ (replacing)};\quad V \leftarrow V + \alpha\,\delta_t\, e.$$
# With the values held fixed during an episode, the sum of these updates *is* the sum of the
# forward-view updates (*Check it* verifies it); online, they drift apart as α grows.
#
# **Batch learning.** Given a fixed set of episodes, present them again and again until the
# values stop moving. Batch Monte Carlo then ends at the average return seen from each state.
# Batch TD(0) ends at the values of the Markov process that *fits the data best*: estimate the
# transition probabilities and rewards by counting, and solve that model exactly. This is the
# **certainty-equivalence** estimate (Sutton & Barto, section 6.3); *Use it* compares the two.
#
# Three rules, the same for all of them:
#
# 1. **A terminal state is never bootstrapped from.** Nothing follows it, so its value is 0
#    and the target of the last step is the reward alone, whatever the table holds there.
# 2. **A time-limit truncation is bootstrapped from, when the limit is not part of the task.**
#    If the state does not tell how much time is left (here it does not), the clock is not
#    part of the world: the episode was cut, the world was not, and the state it stopped in
#    (`final_obs`) still has a future worth $V(\text{final\_obs})$. (If the task really ends at
#    the limit and the state includes the time, the end is terminal, as lesson 03 says.) It
#    must be `final_obs`: with same-step autoreset `obs` is already the next episode's first
#    state.
# 3. **Nothing crosses an episode boundary.** n-step windows end at the episode's end and
#    traces are reset to 0; otherwise the next episode's TD errors would update states of the
#    previous one, as if it had led there.

# %% [markdown]
# ## Build it
#
# The walk has one action, so each loop below only steps (with action 0) and learns. The
# environment's randomness comes from its seed alone: reset it once with `env.reset(seed=seed)`
# and your loop sees the same episodes as the reference, which is how the checks compare you
# with `rc.td0`, `rc.n_step_td` and `rc.td_lambda` exactly.
#
# **Step 1: TD(0).** Use `final_obs` for the target, `terminated` for the mask, and `obs` to
# continue.

# %% tags=["solution"]
def my_td0(env, episodes, alpha, gamma, seed, init=0.0):
    """TD(0) values V [S] after `episodes` episodes of a one-action environment."""
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            target = r if step.terminated[0] else r + gamma * V[s_final]
            V[s] += alpha * (target - V[s])
            s = int(step.obs[0])
            if step.done[0]:
                break
    return V


# %%
assert rc.exercises.check("td0", my_td0)

# %% [markdown]
# **Step 2: n-step TD.** First the target of a window of $m \le n$ rewards (fewer when the
# episode ends inside the window): their discounted sum plus, unless the window ended in a
# terminal state, $\gamma^m$ times the value it bootstraps from.

# %% tags=["solution"]
def my_n_step_target(rewards, bootstrap_value, terminated, gamma):
    G = sum(gamma**k * r for k, r in enumerate(rewards))
    return G if terminated else G + gamma ** len(rewards) * bootstrap_value


# %%
assert rc.exercises.check("n_step_target", my_n_step_target)

# %% [markdown]
# Then the loop. Keep the episode's states and rewards. After each step, the state visited $n$
# steps ago can be updated; when the episode ends, update the ones still waiting with the
# rewards that are left.

# %% tags=["solution"]
def my_n_step_td(env, episodes, n, alpha, gamma, seed, init=0.0):
    """n-step TD values V [S] after `episodes` episodes of a one-action environment."""
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        states, rewards = [s], []
        while True:
            step = env.step(action)
            rewards.append(float(step.reward[0]))
            states.append(int(step.final_obs[0]))
            done = bool(step.done[0])
            tau = len(rewards) - n  # the state whose n rewards are now all known
            if tau >= 0 and not done:
                G = my_n_step_target(rewards[tau:], V[states[-1]], False, gamma)
                V[states[tau]] += alpha * (G - V[states[tau]])
            if done:
                break
        T, terminated = len(rewards), bool(step.terminated[0])
        for tau in range(max(T - n, 0), T):  # flush: windows cut by the episode's end
            G = my_n_step_target(rewards[tau:], V[states[T]], terminated, gamma)
            V[states[tau]] += alpha * (G - V[states[tau]])
        s = int(step.obs[0])
    return V


# %%
assert rc.exercises.check("n_step_td", my_n_step_td)

# %% [markdown]
# **Step 3: TD(λ).** One trace per state; decay, bump, update every state; reset the traces
# when an episode ends.

# %% tags=["solution"]
def my_td_lambda(env, episodes, lam, alpha, gamma, seed, replacing=False):
    """TD(lambda) values V [S] (from V = 0) after `episodes` episodes of a one-action env."""
    V, e = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            e *= gamma * lam
            e[s] = 1.0 if replacing else e[s] + 1.0
            target = r if step.terminated[0] else r + gamma * V[s_final]
            V += alpha * (target - V[s]) * e
            s = int(step.obs[0])
            if step.done[0]:
                break
        e[:] = 0.0
    return V


# %%
assert rc.exercises.check("td_lambda", my_td_lambda)

# %% [markdown]
# **Step 4: the λ-return** of every step of one episode, backwards. `values` holds
# $V(s_0), \dots, V(s_T)$ for the states the episode visited, $s_T$ the state it ended in
# (terminal, or where a time limit cut it).

# %% tags=["solution"]
def my_lambda_returns(rewards, values, terminated, gamma, lam):
    T = len(rewards)
    last = 0.0 if terminated else values[T]
    G, g = np.zeros(T), last
    for t in reversed(range(T)):
        next_value = last if t == T - 1 else values[t + 1]
        g = rewards[t] + gamma * ((1 - lam) * next_value + lam * g)
        G[t] = g
    return G


# %%
assert rc.exercises.check("lambda_returns", my_lambda_returns)

# %% [markdown]
# The reference's TD(λ) loop; the three rules live in the two small functions printed after
# it, which every learner of the package calls:

# %%
print(inspect.getsource(rc.td_lambda))
print(inspect.getsource(rc.tabular.targets._td_target))
print(inspect.getsource(rc.tabular.targets._bootstrap))

# %% [markdown]
# ## Check it
#
# **The family's ends.** TD(λ = 0) is TD(0) and n-step with $n = 1$ is TD(0), bit for bit; n-step
# with $n$ longer than any episode is constant-α every-visit Monte Carlo; the λ-return with
# λ = 1 is the Monte Carlo return.

# %%
alphas = np.array([0.1, 0.3])
td0_ref = rc.td0(walk19, one_action19, 20, alphas, 1.0, seed=4)
assert np.array_equal(td0_ref.V_history,
                      rc.td_lambda(walk19, one_action19, 20, 0.0, alphas, 1.0, seed=4).V_history)
assert np.array_equal(td0_ref.V_history,
                      rc.n_step_td(walk19, one_action19, 20, 1, alphas, 1.0, seed=4).V_history)
np.testing.assert_allclose(
    rc.n_step_td(walk19, one_action19, 20, 10_000, alphas, 1.0, seed=4).V_history,
    rc.mc_prediction(walk19, one_action19, 20, 1.0, first_visit=False, alpha=alphas, seed=4).V_history,
    atol=1e-12)
episode = rc.record_episodes(walk19, one_action19, 1, seed=4)[0]
values = np.linspace(-1, 1, 21)[episode.states]  # any values will do
np.testing.assert_allclose(rc.lambda_returns(episode.rewards, values, True, 1.0, 1.0),
                           rc.mc_returns(episode.rewards, 1.0))
print("TD(lambda=0) == 1-step TD == TD(0); infinite-step TD == every-visit MC; "
      "lambda-return(1) == MC return")

# %% [markdown]
# **The backward view adds up to the forward view.** Hold $V$ fixed through one episode of the
# 19-state walk. Add up TD(λ)'s updates $\delta_t\, e_t$ (accumulating traces), and separately the
# forward view's updates $G^\lambda_t - V(S_t)$ of each visited state: the two sums are equal.
# The loop below is written out in the cell, so this checks the identity, not `rc.td_lambda`;
# the second check runs the package: with a tiny α the values barely move within the episode,
# and its change in $V$, divided by α, is the forward view's sum up to a term of order α.

# %%
lam, V_fixed = 0.8, rng.normal(0.0, 0.3, size=21)
V_fixed[[0, 20]] = 0.0
s, r = episode.states, episode.rewards
backward, e = np.zeros(21), np.zeros(21)
for t in range(len(r)):
    e *= lam
    e[s[t]] += 1.0
    delta = r[t] + (0.0 if t == len(r) - 1 else V_fixed[s[t + 1]]) - V_fixed[s[t]]
    backward += delta * e
forward = np.zeros(21)
np.add.at(forward, s[:-1], rc.lambda_returns(r, V_fixed[s], True, 1.0, lam) - V_fixed[s[:-1]])
print(f"an episode of {len(r)} steps: largest |backward - forward| = "
      f"{np.abs(backward - forward).max():.1e} (largest update {np.abs(forward).max():.2f})")
np.testing.assert_allclose(backward, forward, atol=1e-9)

tiny = 1e-5  # rc.td_lambda from V = V_fixed (init), on the same episode (the same seed)
first = rc.record_episodes(walk19, one_action19, 1, seed=11)[0]
V_tiny = rc.td_lambda(walk19, one_action19, 1, lam, tiny, 1.0, init=V_fixed, seed=11).V
package = (V_tiny - V_fixed) / tiny
forward_first = np.zeros(21)
np.add.at(forward_first, first.states[:-1],
          rc.lambda_returns(first.rewards, V_fixed[first.states], True, 1.0, lam)
          - V_fixed[first.states[:-1]])
print(f"rc.td_lambda, alpha {tiny:g}, an episode of {len(first.rewards)} steps: largest "
      f"|change / alpha - forward sum| = {np.abs(package - forward_first).max():.1e} "
      f"(largest update {np.abs(forward_first).max():.2f})")
np.testing.assert_allclose(package, forward_first, atol=1e-2)

# %% [markdown]
# **Rules 1, 2 and 3, by breaking them.** `td_variant` below is TD(λ) (TD(0) with λ = 0) with one
# of four bugs planted, on purpose; values start at 0.5 everywhere, terminal entries included.
# For each bug you will see what it converges to, and why.

# %%
def td_variant(env, episodes, alpha, lam, bug, seed):
    """TD(lambda), gamma = 1, values from 0.5, with `bug` planted; the values after every
    episode [episodes, S]."""
    V, e = np.full(env.num_states, 0.5), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action, history = np.zeros(1, dtype=int), []
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final, s_obs = float(step.reward[0]), int(step.final_obs[0]), int(step.obs[0])
            ended = step.done[0] if bug == "time limit treated as terminal" else step.terminated[0]
            s_next = s_obs if bug == "bootstraps from obs" else s_final
            bootstrap = bug == "bootstraps from the terminal state" or not ended
            e *= lam
            e[s] += 1.0
            V += alpha * (r + V[s_next] * bootstrap - V[s]) * e
            s = s_obs
            if step.done[0]:
                break
        if bug != "traces kept across episodes":
            e[:] = 0.0
        history.append(V.copy())
    return np.array(history)


def settled(env, bug):
    """Mean of the values over the last 2000 of 3000 episodes (alpha 0.02)."""
    return td_variant(env, 3000, 0.02, 0.0, bug, seed=5)[1000:].mean(axis=0)


correct = settled(walk5, "correct")
leak = settled(walk5, "bootstraps from the terminal state")
print("truth                         ", np.round(truth5[1:-1], 3))
print("correct                       ", np.round(correct[1:-1], 3))
print("bootstraps from terminal state", np.round(leak[1:-1], 3),
      f" (minus the truth: {np.round(leak - truth5, 3)[1:-1]})")
assert np.abs(correct - truth5)[1:-1].max() < 0.04 and np.abs(leak - truth5 - 0.5)[1:-1].max() < 0.04

# %% [markdown]
# Bootstrapping from the terminal states adds their stale entry, 0.5, to every return: the
# walk now ends worth 0.5 on the left and 1.5 on the right, so every value is the truth plus
# 0.5.
#
# Now a time limit: the same walk cut after 4 steps, so most episodes end by the clock.

# %%
cut_walk5 = random_walk(5, 0.0, 1.0, max_steps=4)
cut = {bug: settled(cut_walk5, bug) for bug in
       ["correct", "time limit treated as terminal", "bootstraps from obs"]}
for bug, values in cut.items():
    print(f"{bug:31s}", np.round(values[1:-1], 3))
inner = slice(1, -1)
assert np.abs(cut["correct"] - truth5)[inner].max() < 0.04
assert (cut["time limit treated as terminal"] < truth5 - 0.05)[inner].all()
distance_to_half = {name: np.abs(v - 0.5)[[1, 2, 4, 5]].mean()
                    for name, v in [("truth", truth5), ("obs", cut["bootstraps from obs"])]}
print(f"mean distance from 0.5 (states 1, 2, 4, 5): truth {distance_to_half['truth']:.3f}, "
      f"bootstrapping from obs {distance_to_half['obs']:.3f}")
assert distance_to_half["obs"] < distance_to_half["truth"] - 0.03

# %% [markdown]
# Only the correct rule still recovers $1/6, \dots, 5/6$: the clock does not change what a
# state is worth. Treating the cut as terminal teaches that the walk is worth 0 whenever the
# clock runs out, so every value is too low. Bootstrapping from `obs` uses the value of the
# *next episode's* start, the centre, worth 0.5, so the values are pulled towards 0.5.
#
# **Rule 3.** Two disjoint chains, `0 -> 1 -> 2 (end)` and `3 -> 4 -> 5 (end)`; each episode
# starts in one of them at random, so an episode can only teach you about its own chain.
# Count the episodes whose updates changed a state of *both* chains:

# %%
P = np.zeros((6, 1, 6))
for s_from, s_to in [(0, 1), (1, 2), (2, 2), (3, 4), (4, 5), (5, 5)]:
    P[s_from, 0, s_to] = 1.0
chains = rc.TabularMDP(P, np.ones((6, 1, 6)), np.array([0, 0, 1, 0, 0, 1], dtype=bool),
                       np.array([0.5, 0, 0, 0.5, 0, 0]))


def crossings(history):
    """Episodes whose value changes touch both chains."""
    changed = np.diff(np.vstack([np.full(6, 0.5), history]), axis=0) != 0
    return int(np.sum(changed[:, :3].any(axis=1) & changed[:, 3:].any(axis=1)))


kept = crossings(td_variant(chains, 50, 0.5, 0.9, "traces kept across episodes", seed=6))
reset = crossings(td_variant(chains, 50, 0.5, 0.9, "correct", seed=6))
ref = crossings(rc.td_lambda(chains, np.ones((6, 1)), 50, 0.9, 0.5, 1.0, init=0.5, seed=6).V_history)
print(f"episodes (of 50) that updated the other chain: traces kept {kept}, traces reset {reset}, "
      f"rc.td_lambda {ref}")
assert kept > 0 and reset == 0 and ref == 0

# %% [markdown]
# ## Use it
#
# **TD against MC.** Back to the problem: the same 20 runs of 100 episodes with TD(0).

# %%
td_err = np.array([rms(rc.td0(walk5, one_action5, 100, td_alphas, 1.0, init=init,
                              seed=run).V_history, truth5) for run in RUNS])
episodes = np.arange(1, 101)
fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
for i, a in enumerate(mc_alphas):
    ax.plot(episodes, np.median(mc_err[:, :, i], axis=0), ls="--", color=f"C{i}", label=f"MC α={a}")
for i, a in enumerate(td_alphas):
    ax.plot(episodes, np.median(td_err[:, :, i], axis=0), color=f"C{i + 5}", label=f"TD(0) α={a}")
ax.set(xlabel="episodes", ylabel="RMS error\n(median of 20 runs)",
       title="On the 5-state walk, TD(0) learns faster than constant-α MC")
ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()
best_mc, best_td = mc_err[:, -1].min(axis=1), td_err[:, -1].min(axis=1)
print(f"after 100 episodes, best step size of each: MC median {np.median(best_mc):.3f} "
      f"(range {best_mc.min():.3f}-{best_mc.max():.3f}), TD(0) median {np.median(best_td):.3f} "
      f"(range {best_td.min():.3f}-{best_td.max():.3f}); TD(0) lower on "
      f"{int((best_td < best_mc).sum())} of 20 runs")
assert np.median(best_td) < np.median(best_mc) and (best_td < best_mc).sum() >= 14

# %% [markdown]
# **Why: the variance of the targets.** Take the true values and look at the targets each
# method would use from the centre state: MC's return (0 or 1) and TD's $R + V(S')$ (the value
# of one of the two neighbours). Sampled from 2000 episodes:

# %%
walks = rc.record_episodes(walk5, one_action5, 2000, seed=7)
mc_targets, td_targets = [], []
for ep in walks:
    returns = rc.mc_returns(ep.rewards, 1.0)
    for t in np.flatnonzero(ep.states[:-1] == 3):
        mc_targets.append(returns[t])
        td_targets.append(ep.rewards[t] + truth5[ep.states[t + 1]])  # truth5 is 0 at the ends
var_mc, var_td = np.var(mc_targets), np.var(td_targets)
print(f"{len(mc_targets)} visits to the centre: variance of the MC target {var_mc:.4f}, "
      f"of the TD target {var_td:.4f} ({var_mc / var_td:.1f} times smaller)")
assert var_td < var_mc / 5

# %% [markdown]
# One step of the walk decides the TD target; the whole rest of the walk decides the return.
# The TD target is biased while $V$ is wrong, but it is much less noisy, and on this task the
# trade pays.
#
# **Batch TD against batch MC: certainty equivalence.** Now give both methods unlimited
# passes over the episodes seen so far. Batch MC ends at each state's average return (every
# visit); batch TD(0) ends at the values of the Markov process estimated from the same episodes
# by counting. First, on 30 episodes, check that repeated batch TD(0) sweeps do end there:

# %%
def transitions(episodes):
    """Every step of the episodes as arrays: state, reward, next state, whether it ended."""
    s = np.concatenate([ep.states[:-1] for ep in episodes])
    s_next = np.concatenate([ep.states[1:] for ep in episodes])
    r = np.concatenate([ep.rewards for ep in episodes])
    end = np.concatenate([np.arange(len(ep.rewards)) == len(ep.rewards) - 1 for ep in episodes])
    return s, r, s_next, end


def certainty_equivalence(episodes, S, init):
    """V of the maximum-likelihood model of the episodes (terminal episodes, gamma 1); states
    never visited keep `init`."""
    s, r, s_next, end = transitions(episodes)
    visits = np.bincount(s, minlength=S)
    seen = np.flatnonzero(visits)
    P_hat = np.zeros((S, S))
    np.add.at(P_hat, (s, np.where(end, 0, s_next)), ~end)  # terminal successors contribute 0
    P_hat[seen] /= visits[seen, None]
    r_hat = np.bincount(s, weights=r, minlength=S)[seen] / visits[seen]
    V = init.copy()
    rest = np.setdiff1d(np.arange(S), seen)
    V[seen] = np.linalg.solve(np.eye(len(seen)) - P_hat[np.ix_(seen, seen)],
                              r_hat + P_hat[np.ix_(seen, rest)] @ init[rest])
    return V


def batch_mc(episodes, S, init):
    """Every-visit average of the returns seen from each state."""
    s = np.concatenate([ep.states[:-1] for ep in episodes])
    G = np.concatenate([rc.mc_returns(ep.rewards, 1.0) for ep in episodes])
    visits = np.bincount(s, minlength=S)
    return np.where(visits > 0, np.bincount(s, weights=G, minlength=S) / np.maximum(visits, 1),
                    init)


init_batch = np.r_[0.0, np.full(5, 0.5), 0.0]
batch = rc.record_episodes(walk5, one_action5, 30, seed=0)
s_b, r_b, next_b, end_b = transitions(batch)
V, sweeps, update = init_batch.copy(), 0, np.ones(7)
while np.abs(update).max() > 1e-10 and sweeps < 20_000:
    # batch TD(0): add up the TD errors of every step in the batch, then apply them
    delta = r_b + np.where(end_b, 0.0, V[next_b]) - V[s_b]
    update = np.bincount(s_b, weights=delta, minlength=7)
    V += 0.001 * update
    sweeps += 1
gap = np.abs(V - certainty_equivalence(batch, 7, init_batch)).max()
print(f"batch TD(0) after {sweeps} sweeps vs the certainty-equivalence values: largest gap {gap:.1e}")
assert gap < 1e-6

# %% [markdown]
# Now the comparison of Sutton & Barto's Figure 6.2, on our 20 runs: after 1, 2, ..., 10, 15,
# 20, ..., 100 episodes, both batch estimates from all the episodes so far.

# %%
seen = np.r_[1:10, 10:101:5]  # numbers of episodes after which both are computed
batch_err = {"batch MC": [], "batch TD(0)": []}
for run in RUNS:
    eps = rc.record_episodes(walk5, one_action5, 100, seed=run)
    batch_err["batch MC"].append([rms(batch_mc(eps[:k], 7, init_batch), truth5) for k in seen])
    batch_err["batch TD(0)"].append([rms(certainty_equivalence(eps[:k], 7, init_batch), truth5)
                                     for k in seen])
batch_err = {k: np.array(v) for k, v in batch_err.items()}
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for (name, err), color in zip(batch_err.items(), ["C0", "C3"]):
    band(ax, seen, err, f"{name} (median, range of 20 runs)", color)
ax.set(xlabel="episodes seen", ylabel="RMS error", ylim=(0, 0.3),
       title="Batch TD(0) (certainty equivalence) beats batch MC on the walk")
ax.legend(fontsize=9)
plt.show()
end_mc, end_td = batch_err["batch MC"][:, -1], batch_err["batch TD(0)"][:, -1]
print(f"after 100 episodes: batch MC median {np.median(end_mc):.3f}, batch TD(0) median "
      f"{np.median(end_td):.3f}; batch TD(0) lower on {int((end_td < end_mc).sum())} of 20 runs")
assert np.median(end_td) < np.median(end_mc)

# %% [markdown]
# Both use exactly the same data, and both are "right": batch MC minimises the error on the
# returns seen, batch TD(0) finds the values of the process most likely to have produced them.
# When the process is Markov, as here, the second uses the data better: a state's estimate
# benefits from every visit to the states after it, not only from the returns that happened
# to start there.

# %% [markdown]
# **The n and α trade-off** (Sutton & Barto, Figure 7.2). On the 19-state walk, the RMS error
# averaged over the first 10 episodes, for 20 step sizes at once and several $n$, on 10 runs.

# %%
sweep_alphas = np.linspace(0.05, 1.0, 20)
ns = [1, 2, 4, 8, 16]
n_err = {n: np.array([rms(rc.n_step_td(walk19, one_action19, 10, n, sweep_alphas, 1.0,
                                       seed=run).V_history, truth19).mean(axis=0)
                      for run in SWEEP_RUNS]) for n in ns}
fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
for i, n in enumerate(ns):
    band(ax, sweep_alphas, n_err[n], f"n={n}", f"C{i}")
ax.fill_between([], [], [], color="grey", alpha=0.15, label="range of 10 runs")
ax.set(xlabel="step size α", ylabel="RMS error, first 10 episodes\n(median of 10 runs)",
       ylim=(0.2, 0.6), title="Intermediate n learns fastest, and larger n wants a smaller α")
ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()
best_error = {}
for n in ns:
    median = np.median(n_err[n], axis=0)
    best_error[n] = median.min()
    print(f"n={n:2d}: best alpha {sweep_alphas[median.argmin()]:.2f}, median error {median.min():.3f}")
assert min(best_error[2], best_error[4], best_error[8]) < min(best_error[1], best_error[16])

# %% [markdown]
# Larger $n$ wants a smaller α: its targets span more of the walk's random transitions, so each
# one must count for less. And the best $n$ is neither 1 (too much bias from the still-wrong
# estimates) nor large (too much variance).
#
# **The λ-return against TD(λ).** The offline λ-return algorithm waits for the episode's end,
# computes every $G^\lambda_t$ from the values at the episode's start, and then moves each
# visited state towards it in turn. TD(λ) does its updates online. Sutton & Barto's Figures
# 12.3 and 12.6, on our 10 runs:

# %%
def offline_lambda_return(episodes, lam, alpha):
    """The offline lambda-return algorithm (gamma 1); mean RMS error over the episodes."""
    V, errors = np.zeros(21), []
    for ep in episodes:
        targets = rc.lambda_returns(ep.rewards, V[ep.states], ep.terminated, 1.0, lam)
        for s, g in zip(ep.states[:-1], targets):
            V[s] += alpha * (g - V[s])
        errors.append(rms(V, truth19))
    return np.mean(errors)


lam_alphas = np.array([0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0])
lams = [0.8, 0.95]
walk_runs = [rc.record_episodes(walk19, one_action19, 10, seed=run) for run in SWEEP_RUNS]
forward = {lam: np.array([[offline_lambda_return(eps, lam, a) for a in lam_alphas]
                          for eps in walk_runs]) for lam in lams}
online = {(lam, kind): np.array([rms(rc.td_lambda(walk19, one_action19, 10, lam, lam_alphas, 1.0,
                                                  traces=kind, seed=run).V_history,
                                     truth19).mean(axis=0) for run in SWEEP_RUNS])
          for lam in lams for kind in ("accumulating", "replacing")}

fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100, sharey=True)
for ax, lam in zip(axes, lams):
    band(ax, lam_alphas, forward[lam], "offline λ-return", "k", marker="o", ms=3)
    for kind, color in [("accumulating", "C3"), ("replacing", "C0")]:
        band(ax, lam_alphas, np.minimum(online[lam, kind], 1.0), f"TD(λ), {kind}", color,
             marker="o", ms=3)
    ax.fill_between([], [], [], color="grey", alpha=0.15, label="range of 10 runs")
    ax.set(xlabel="step size α", title=f"λ = {lam}", ylim=(0.2, 1.02))
axes[0].set_ylabel("RMS error, first 10 episodes\n(median of 10 runs, capped at 1)")
axes[0].legend(fontsize=9, loc="upper center")
fig.suptitle("TD(λ) tracks the λ-return at small α; accumulating traces blow up at large α")
plt.tight_layout()
plt.show()
for lam in lams:
    small = np.abs(np.median(online[lam, "accumulating"], 0) - np.median(forward[lam], 0))[:2]
    acc = np.median(online[lam, "accumulating"][:, -1])
    print(f"lambda {lam}: |TD(lambda) - lambda-return| at alpha 0.05, 0.1: {small.max():.3f}; "
          f"at alpha 1: lambda-return {np.median(forward[lam][:, -1]):.3f}, accumulating "
          f"{'above 1000 (diverged)' if acc > 1000 else f'{acc:.3f}'}, replacing "
          f"{np.median(online[lam, 'replacing'][:, -1]):.3f}")
    assert small.max() < 0.02
assert np.median(online[0.95, "accumulating"][:, -1]) > 1.0 > np.median(forward[0.95][:, -1])

# %% [markdown]
# At small α the online updates barely change $V$ within an episode, so TD(λ) does what the
# λ-return algorithm does. At large α, a state revisited many times in one episode piles up an
# accumulating trace larger than 1, so one TD error moves it by more than α times the error and
# the values overshoot. How large can a trace get? A walk can revisit a state at best every
# second step, so the trace is at most $1 + (\gamma\lambda)^2 + (\gamma\lambda)^4 + \dots =
# 1/(1-(\gamma\lambda)^2)$. The largest trace in the 100 episodes above:

# %%
lam = 0.95
largest = 0.0
for eps in walk_runs:
    for ep in eps:
        e = np.zeros(21)
        for s in ep.states[:-1]:
            e *= lam
            e[s] += 1.0
            largest = max(largest, e.max())
print(f"lambda {lam}: largest accumulating trace {largest:.2f}; bound 1/(1 - lambda^2) = "
      f"{1 / (1 - lam**2):.2f} (1/(1 - lambda) = {1 / (1 - lam):.0f} would need a visit every step)")
assert 1.0 < largest <= 1 / (1 - lam**2)

# %% [markdown]
# A replacing trace is capped at 1, and the λ-return never uses a state's error more than once
# per visit; both stay bounded. (Exercise 3 builds *true online* TD(λ), and checks that it
# matches the *online* λ-return algorithm, which redoes the λ-return updates at every step with
# the data seen so far, to rounding error.)

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | every value too high (or low) by what the terminal entries hold | bootstrapping from a terminal state | mask: target = reward alone when `terminated` |
# | values biased towards 0 on a task with a time limit | truncation treated as termination | bootstrap from $V(\text{final\_obs})$ when only `truncated` (and the state does not include the time) |
# | values near a time limit pulled towards the start state's | bootstrapping from `obs` after an autoreset | use `final_obs` for the target, `obs` to continue |
# | states of the last episode move at the start of the next | traces not reset (or n-step window not flushed) at the episode end | zero the traces; flush the window with the rewards left |
# | n-step TD never updates the last $n-1$ states of an episode | no flush after `done` | update the pending states with the truncated window |
# | TD(λ) diverges at large α | accumulating traces above 1 on revisited states | smaller α, replacing traces, or true online TD(λ) |
# | a large n with a large α is very noisy | long targets span many random transitions | smaller α for larger n |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: TD errors add up to the Monte Carlo error.** Write
#    `td_errors(rewards, values, terminated, gamma)`: the TD errors $\delta_t$ of every step of one
#    episode (`values` as in step 4). Then show, on a recorded episode of the 19-state walk with
#    any values, that $G_t - V(S_t) = \sum_{k \ge 0} \gamma^k \delta_{t+k}$ (Sutton & Barto, eq.
#    6.6): the Monte Carlo error is a discounted sum of TD errors.
# 2. **Medium: the λ-return from TD errors.** Show that $G^\lambda_t - V(S_t) = \delta_t +
#    \gamma\lambda\,(G^\lambda_{t+1} - V(S_{t+1}))$, and use it to write
#    `lambda_return_from_td_errors(rewards, values, terminated, gamma, lam)` that computes the
#    λ-returns from the TD errors alone. (Lesson 09 meets this sum again: the λ-return minus $V$
#    is the *generalised advantage estimate*, GAE.)
# 3. **Hard: true online TD(λ)** (van Seijen, Mahmood, Pilarski, Machado & Sutton, 2016). Write
#    `true_online_td_lambda(env, episodes, lam, alpha, gamma, seed)` (values from 0, one-action
#    environment, the draws of step 1). Each step, with $v = V(s)$ and $v' = V(s')$ (0 if
#    terminal, from `final_obs`): $\delta = r + \gamma v' - v$; Dutch trace
#    $e \leftarrow \gamma\lambda e$, then $e(s) \mathrel{+}= 1 - \alpha\gamma\lambda\, e_{\text{old}}(s)$
#    with $e_{\text{old}}(s)$ the trace before the decay; $V \leftarrow V + \alpha(\delta + v -
#    v_{\text{old}})\,e$ and then $V(s) \mathrel{-}= \alpha (v - v_{\text{old}})$; finally
#    $v_{\text{old}} \leftarrow v'$. At each episode's start, $e = 0$ (and $v_{\text{old}} = 0$,
#    which makes no difference: with $e = 0$ its terms cancel on the first step). Then check it
#    against its definition, the *online λ-return algorithm* (Sutton & Barto, section 12.4): at
#    every horizon $h = 1, \dots, T$ of an episode, restart from the episode's first values and
#    move each $V(S_t)$, $t < h$, towards the λ-return truncated at $h$, whose $n$-step returns
#    bootstrap from the values the horizon $t + n - 1$ ended with; the values after horizon $T$
#    are the episode's result. Finally compare it with accumulating TD(λ = 0.8) over step sizes
#    on the 19-state walk.

# %% tags=["solution"]
def td_errors(rewards, values, terminated, gamma):
    next_values = np.array(values[1:], dtype=float)
    if terminated:
        next_values[-1] = 0.0
    return np.asarray(rewards) + gamma * next_values - np.asarray(values[:-1])


ep19 = rc.record_episodes(walk19, one_action19, 1, seed=8)[0]
any_values = np.sin(np.arange(21.0))[ep19.states]
deltas = td_errors(ep19.rewards, any_values, True, 0.9)
mc_error = rc.mc_returns(ep19.rewards, 0.9) - any_values[:-1]
sum_of_deltas = np.array([np.sum(0.9 ** np.arange(len(deltas) - t) * deltas[t:])
                          for t in range(len(deltas))])
np.testing.assert_allclose(mc_error, sum_of_deltas, atol=1e-9)
print(f"episode of {len(deltas)} steps: G_t - V(S_t) equals the discounted sum of TD errors")

# %%
assert rc.exercises.check("td_errors", td_errors)

# %% tags=["solution"]
def lambda_return_from_td_errors(rewards, values, terminated, gamma, lam):
    delta = td_errors(rewards, values, terminated, gamma)
    advantage, acc = np.zeros(len(delta)), 0.0
    for t in reversed(range(len(delta))):
        acc = delta[t] + gamma * lam * acc
        advantage[t] = acc
    return advantage + np.asarray(values[:-1])


# %%
assert rc.exercises.check("lambda_return_from_td_errors", lambda_return_from_td_errors)

# %% tags=["solution"]
def true_online_td_lambda(env, episodes, lam, alpha, gamma, seed):
    V, e = np.zeros(env.num_states), np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        v_old = 0.0
        while True:
            step = env.step(action)
            r, s_final = float(step.reward[0]), int(step.final_obs[0])
            v, v_next = V[s], (0.0 if step.terminated[0] else V[s_final])
            delta = r + gamma * v_next - v
            e_s = e[s]
            e *= gamma * lam
            e[s] += 1.0 - alpha * gamma * lam * e_s
            V += alpha * (delta + v - v_old) * e
            V[s] -= alpha * (v - v_old)
            v_old = v_next
            s = int(step.obs[0])
            if step.done[0]:
                break
        e[:] = 0.0
    return V


def online_lambda_return(V, states, rewards, terminated, alpha, gamma, lam):
    """The online lambda-return algorithm on one episode, by its definition (O(T^3))."""
    T = len(rewards)
    start, W = np.array(V, dtype=float), np.array(V, dtype=float)
    boot = np.zeros(T + 1)  # boot[k]: V(S_k) as horizon k - 1 left it; 0 after a termination
    for h in range(1, T + 1):
        boot[h] = 0.0 if (h == T and terminated) else W[states[h]]
        W = start.copy()
        for t in range(h):
            n_step = (np.cumsum(gamma ** np.arange(h - t) * rewards[t:h])
                      + gamma ** np.arange(1, h - t + 1) * boot[t + 1:h + 1])
            weights = np.r_[(1 - lam) * lam ** np.arange(h - t - 1), lam ** (h - t - 1)]
            W[states[t]] += alpha * (weights @ n_step - W[states[t]])
    return W


V_def = np.zeros(21)
for ep in rc.record_episodes(walk19, one_action19, 3, seed=18):
    V_def = online_lambda_return(V_def, ep.states, ep.rewards, ep.terminated, 0.5, 1.0, 0.8)
gap = np.abs(true_online_td_lambda(walk19, 3, 0.8, 0.5, 1.0, 18) - V_def).max()
print(f"3 episodes, alpha 0.5: largest |true online TD(0.8) - online lambda-return| = {gap:.1e}")
assert gap < 1e-9

totd_alphas = np.array([0.1, 0.3, 0.5, 0.8, 1.0])
totd = np.array([[rms(true_online_td_lambda(walk19, 10, 0.8, a, 1.0, run), truth19)
                  for a in totd_alphas] for run in SWEEP_RUNS])
accumulating = np.array([rms(rc.td_lambda(walk19, one_action19, 10, 0.8, totd_alphas, 1.0,
                                          seed=run).V, truth19) for run in SWEEP_RUNS])
print("RMS error after 10 episodes (median of 10 runs); alpha", totd_alphas)
print("true online TD(0.8)      ", np.round(np.median(totd, axis=0), 3))
print("accumulating TD(0.8)     ", np.round(np.median(accumulating, axis=0), 3))

# %%
assert rc.exercises.check("true_online_td_lambda", true_online_td_lambda)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | TD error $\delta$ | "the surprise" | $r + \gamma V(s') - V(s)$, with $V(s') = 0$ if $s'$ is terminal |
# | bootstrapping | "learning a guess from a guess" | using current value estimates inside the target |
# | n-step return | "look n steps ahead" | $n$ real rewards then $\gamma^n V(S_{t+n})$; fewer if the episode ends first |
# | λ-return | "an average of all n" | $\sum_n (1-\lambda)\lambda^{n-1} G_{t:t+n}$, the full return taking the remaining weight; backwards $G^\lambda_t = R_{t+1} + \gamma[(1-\lambda)V(S_{t+1}) + \lambda G^\lambda_{t+1}]$ |
# | forward / backward view | "two ways to see TD(λ)" | updating towards λ-returns at the episode's end / online with eligibility traces; equal in sum when $V$ is held fixed |
# | eligibility trace | "credit to recent states" | per-state memory $e(s)$, decayed by $\gamma\lambda$, bumped on visits |
# | accumulating / replacing trace | "add one or set to one" | on a revisit, $e(s) \mathrel{+}= 1$ or $e(s) = 1$ |
# | batch updating | "replay the data until it converges" | present a fixed set of episodes repeatedly; MC ends at average returns, TD(0) at the certainty-equivalence values |
# | certainty equivalence | "trust the fitted model" | the values of the Markov process estimated from the data by counting, as if it were certain |
# | terminated | "the episode is over" | the next state is terminal: value 0, no bootstrap |
# | truncated | "ran out of time" | a time limit that is not part of the task cut the episode: bootstrap from $V(\text{final\_obs})$ |
# | `final_obs` | "the last observation" | the state the finished episode ended in; `obs` is already the next episode's |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 6 (TD
#   prediction, the random walk of Example 6.2, batch updating and certainty equivalence in
#   section 6.3), chapter 7 (n-step methods, Figure 7.2's n and α trade-off) and chapter 12
#   (λ-returns, the offline λ-return algorithm, eligibility traces, true online TD(λ)).
# - Sutton (1988), *Learning to predict by the methods of temporal differences*, Machine
#   Learning 3: the paper that introduced TD(λ), with the random-walk experiments.
# - Singh & Sutton (1996), *Reinforcement learning with replacing eligibility traces*, Machine
#   Learning 22: why replacing traces behave better than accumulating ones on revisits.
# - van Seijen, Mahmood, Pilarski, Machado & Sutton (2016), *True online temporal-difference
#   learning*, JMLR 17: Dutch traces and the exact online equivalence with the λ-return.
# - Pardo, Tavakoli, Levdik & Kormushev (2018), *Time limits in reinforcement learning*, ICML:
#   when a time-limit truncation must be bootstrapped from (and when the time belongs in the
#   state instead).
