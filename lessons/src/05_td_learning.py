# %% [markdown]
# # 05 · TD learning — TD(0), n-step TD and TD(λ)
#
# *Prerequisites:* 02, 04
# *Time:* 50 minutes
# *You will build:* TD(0), n-step TD and TD(λ) with accumulating and replacing traces, with the rules for terminal states, time limits and episode boundaries that keep them correct.

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


def rms(V_history, truth):
    """RMS error over the non-terminal states, per episode (and per step size)."""
    return np.sqrt(np.mean((V_history[..., 1:-1] - truth[1:-1]) ** 2, axis=-1))


# %% [markdown]
# ## The problem
#
# The 5-state random walk (Sutton & Barto, Example 6.2): from the centre you drift left or right
# until you fall off an end; the right end pays 1, so $V(s)$ is the probability of leaving on
# the right, $1/6, \dots, 5/6$. Estimate it with constant-$\alpha$ Monte Carlo, 100 episodes,
# averaged over 20 runs, for several step sizes at once (`alpha` may be an array: with a fixed
# policy the episodes do not depend on the values, so one run serves every step size):

# %%
mc_alphas, td_alphas = np.array([0.01, 0.02, 0.04]), np.array([0.05, 0.1, 0.15])
init = np.full(7, 0.5)
mc_err = np.mean([rms(rc.mc_prediction(walk5, one_action5, 100, 1.0, alpha=mc_alphas, init=init,
                                       seed=run).V_history, truth5) for run in range(20)], axis=0)
for episode in (25, 100):
    print(f"constant-alpha MC, RMS error after {episode:3d} episodes:",
          ", ".join(f"alpha {a}: {e:.3f}" for a, e in zip(mc_alphas, mc_err[episode - 1])))

# %% [markdown]
# Small steps learn slowly: compare the α = 0.01 errors after 25 and 100 episodes above. Larger
# ones learn faster but stay noisy: every target is a full
# return, with all the randomness of the walk in it, and a constant step size never averages
# that noise away. *Use it* plots these curves against TD's.

# %% [markdown]
# ## The idea
#
# **TD(0)** replaces the return by one real reward plus the estimate of where you landed:
# $$V(S_t) \leftarrow V(S_t) + \alpha\big[\underbrace{R_{t+1} + \gamma V(S_{t+1})}_{\text{TD target}}
#  - V(S_t)\big].$$
# The bracket is the **TD error** $\delta_t$. Using an estimate inside the target is
# *bootstrapping*: it adds bias while the estimates are wrong, but the target depends on one
# random step instead of all of them, so its variance is far lower.
#
# **n-step TD** sits in between: $n$ real rewards, then the estimate,
# $$G_{t:t+n} = R_{t+1} + \gamma R_{t+2} + \dots + \gamma^{n-1}R_{t+n} + \gamma^n V(S_{t+n}).$$
# $n = 1$ is TD(0); $n \ge$ the rest of the episode is Monte Carlo. The update of $S_t$ waits
# until $R_{t+n}$ has arrived.
#
# **TD(λ)** aims at the average of all the n-step returns with weights $(1-\lambda)\lambda^{n-1}$
# (the λ-return), and approximates it online with an **eligibility trace** $e(s)$, a fading
# memory of visited states.
# Each step: decay all traces by $\gamma\lambda$, bump the current state's, then move *every*
# state by its share of the current TD error:
# $$e \leftarrow \gamma\lambda e;\quad e(S_t) \leftarrow e(S_t) + 1 \text{ (accumulating) or } 1
# \text{ (replacing)};\quad V \leftarrow V + \alpha\,\delta_t\, e.$$
# $\lambda = 0$ is TD(0); $\lambda = 1$ is, in effect, Monte Carlo.
#
# Three rules, the same for all of them:
#
# 1. **A terminal state is never bootstrapped from.** Nothing follows it, so its value is 0
#    and the target of the last step is the reward alone, whatever the table holds there.
# 2. **A time-limit truncation is bootstrapped from.** The episode was cut, the world was not:
#    the state it stopped in (`final_obs`) still has a future worth $V(\text{final\_obs})$.
#    And it must be `final_obs`: with same-step autoreset `obs` is already the next episode's
#    first state.
# 3. **Nothing crosses an episode boundary.** n-step windows end at the episode's end and
#    traces are reset to 0; otherwise the next episode's TD errors would update states of the
#    previous one, as if it had led there.

# %% [markdown]
# ## Build it
#
# **Step 1: TD(0).** The walk has one action, so the loop only steps and learns. Use
# `final_obs` for the target, `terminated` for the mask, and `obs` to continue.

# %%
def my_td0(env, episodes, alpha, gamma, seed, init=0.0):
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


v_td0 = my_td0(walk5, 100, 0.1, 1.0, seed=1, init=0.5)
print("your TD(0), 100 episodes:", np.round(v_td0[1:-1], 3))

# %% [markdown]
# The environment's randomness comes from its seed alone, so `rc.td0` with the same seed sees
# the same episodes and must produce the same table:

# %%
np.testing.assert_allclose(v_td0, rc.td0(walk5, one_action5, 100, 0.1, 1.0, seed=1, init=0.5).V,
                           rtol=0, atol=1e-12)
print("matches rc.td0")

# %% [markdown]
# **Step 2: n-step TD.** Keep the episode's states and rewards. After each step, the state
# visited $n$ steps ago can be updated; when the episode ends, update the ones still waiting
# with the rewards that are left (no bootstrap after a termination).

# %%
def my_n_step_target(rewards, bootstrap_value, terminated, gamma):
    G = sum(gamma**k * r for k, r in enumerate(rewards))
    return G if terminated else G + gamma ** len(rewards) * bootstrap_value


def my_n_step_td(env, episodes, n, alpha, gamma, seed, init=0.0):
    V = np.full(env.num_states, init, dtype=float)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        states, rewards = [s], []
        while True:
            step = env.step(action)
            rewards.append(float(step.reward[0]))
            done = bool(step.done[0])
            states.append(int(step.final_obs[0]))
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


v_n4 = my_n_step_td(walk19, 20, 4, 0.2, 1.0, seed=2)
ref_n4 = rc.n_step_td(walk19, one_action19, 20, 4, 0.2, 1.0, seed=2).V
np.testing.assert_allclose(v_n4, ref_n4, rtol=0, atol=1e-12)
print(f"your 4-step TD matches rc.n_step_td; RMS error after 20 episodes {rms(v_n4, truth19):.3f}")

# %% [markdown]
# **Step 3: TD(λ).** One trace per state; reset the traces when an episode ends.

# %%
def my_td_lambda(env, episodes, lam, alpha, gamma, seed, replacing=False, reset_traces=True):
    V = np.zeros(env.num_states)
    e = np.zeros(env.num_states)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    history = []
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
        if reset_traces:
            e[:] = 0.0
        history.append(V.copy())
    return np.array(history)


for replacing in (False, True):
    mine = my_td_lambda(walk19, 20, 0.8, 0.2, 1.0, seed=3, replacing=replacing)
    kind = "replacing" if replacing else "accumulating"
    ref = rc.td_lambda(walk19, one_action19, 20, 0.8, 0.2, 1.0, traces=kind, seed=3)
    np.testing.assert_allclose(mine, ref.V_history, rtol=0, atol=1e-12)
    print(f"your TD(0.8), {kind} traces, matches rc.td_lambda; RMS error {rms(mine[-1], truth19):.3f}")

# %% [markdown]
# The reference's TD(λ) loop, with the same three rules:

# %%
print(inspect.getsource(rc.td_lambda))

# %% [markdown]
# ## Check it
#
# **The family's ends.** TD(λ = 0) is TD(0) and n-step with $n = 1$ is TD(0), bit for bit; n-step
# with $n$ longer than any episode is constant-α every-visit Monte Carlo.

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
print("TD(lambda=0) == 1-step TD == TD(0); infinite-step TD == every-visit MC")

# %% [markdown]
# **Rules 1 and 2, by breaking them.** Below, TD(0) on the 5-state walk with a time limit of
# 4 steps (so most episodes are cut), values starting at 0.5 everywhere, terminal states
# included. The correct version and three buggy ones:

# %%
def td0_variant(env, episodes, alpha, bug, seed):
    V = np.full(env.num_states, 0.5)
    s = int(env.reset(seed=seed)[0])
    action = np.zeros(1, dtype=int)
    for _ in range(episodes):
        while True:
            step = env.step(action)
            r, s_final, s_obs = float(step.reward[0]), int(step.final_obs[0]), int(step.obs[0])
            if bug == "bootstraps from the terminal state":
                target = r + V[s_final]
            elif bug == "treats a time limit as terminal":
                target = r if step.done[0] else r + V[s_final]
            elif bug == "bootstraps from obs, not final_obs":
                target = r if step.terminated[0] else r + V[s_obs]
            else:
                target = r if step.terminated[0] else r + V[s_final]
            V[s] += alpha * (target - V[s])
            s = s_obs
            if step.done[0]:
                break
    return V


cut_walk5 = random_walk(5, 0.0, 1.0, max_steps=4)
variants = ["correct", "bootstraps from the terminal state", "treats a time limit as terminal",
            "bootstraps from obs, not final_obs"]
errors = {bug: rms(td0_variant(cut_walk5, 2000, 0.02, bug, seed=5), truth5) for bug in variants}
for bug, err in errors.items():
    print(f"{bug:36s} RMS error {err:.3f}")
assert errors["correct"] < 0.05
assert all(errors[bug] > 2 * errors["correct"] for bug in variants[1:])

# %% [markdown]
# Only the correct rule recovers $1/6, \dots, 5/6$. Bootstrapping from the terminal state
# pulls the end states towards the stale 0.5 stored there. Treating the time limit as terminal
# teaches that the walk is worth 0 whenever the clock runs out, which is a property of the
# clock, not of the state. Bootstrapping from `obs` uses the value of the *next episode's*
# start state, so every state near a cut drifts towards $V(\text{centre})$.

# %% [markdown]
# **Rule 3, by breaking it.** Two disjoint chains, `0 -> 1 -> 2 (end)` and `3 -> 4 -> 5 (end)`;
# each episode starts in one of them at random. An episode can only teach you about its own
# chain. Count the episodes whose update changed a state of the *other* chain:

# %%
P = np.zeros((6, 1, 6))
for s_from, s_to in [(0, 1), (1, 2), (2, 2), (3, 4), (4, 5), (5, 5)]:
    P[s_from, 0, s_to] = 1.0
chains = rc.TabularMDP(P, np.ones((6, 1, 6)), np.array([0, 0, 1, 0, 0, 1], dtype=bool),
                       np.array([0.5, 0, 0, 0.5, 0, 0]))


def crossings(history):
    """Episodes whose value changes touch both chains."""
    changed = np.diff(np.vstack([np.zeros(6), history]), axis=0) != 0
    return int(np.sum(changed[:, :3].any(axis=1) & changed[:, 3:].any(axis=1)))


kept = crossings(my_td_lambda(chains, 50, 0.9, 0.5, 0.9, seed=6, reset_traces=False))
reset = crossings(my_td_lambda(chains, 50, 0.9, 0.5, 0.9, seed=6))
ref = crossings(rc.td_lambda(chains, np.ones((6, 1)), 50, 0.9, 0.5, 0.9, seed=6).V_history)
print(f"episodes that updated the other chain: traces kept {kept}, traces reset {reset}, "
      f"rc.td_lambda {ref}")
assert kept > 0 and reset == 0 and ref == 0

# %% [markdown]
# ## Use it
#
# **TD against MC.** Back to the problem: the same 20 runs of 100 episodes with TD(0).

# %%
td_err = np.mean([rms(rc.td0(walk5, one_action5, 100, td_alphas, 1.0, init=init,
                             seed=run).V_history, truth5) for run in range(20)], axis=0)
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for i, a in enumerate(mc_alphas):
    ax.plot(mc_err[:, i], ls="--", label=f"MC α={a}")
for i, a in enumerate(td_alphas):
    ax.plot(td_err[:, i], label=f"TD(0) α={a}")
ax.set(xlabel="episodes", ylabel="RMS error (mean of 20 runs)", title="TD(0) learns faster than constant-α MC")
ax.legend(fontsize=7, ncol=2)
plt.show()
print(f"after 100 episodes: best MC {mc_err[-1].min():.3f}, best TD(0) {td_err[-1].min():.3f}")
assert td_err[-1].min() < mc_err[-1].min()

# %% [markdown]
# **The n and α trade-off** (Sutton & Barto, Figure 7.2). On the 19-state walk, measure the
# RMS error averaged over the first 10 episodes, for 20 step sizes at once and several $n$,
# averaged over 20 runs.

# %%
sweep_alphas = np.linspace(0.05, 1.0, 20)
ns = [1, 2, 4, 8, 16]
n_err = {n: np.mean([rms(rc.n_step_td(walk19, one_action19, 10, n, sweep_alphas, 1.0,
                                      seed=run).V_history, truth19).mean(axis=0)
                     for run in range(20)], axis=0)
         for n in ns}
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for n in ns:
    ax.plot(sweep_alphas, n_err[n], label=f"n={n}")
ax.set(xlabel="step size α", ylabel="RMS error, first 10 episodes", ylim=(0.2, 0.6),
       title="Intermediate n learns fastest")
ax.legend(fontsize=7)
plt.show()
for n in ns:
    best = n_err[n].argmin()
    print(f"n={n:2d}: best alpha {sweep_alphas[best]:.2f}, error {n_err[n][best]:.3f}")
best_error = {n: n_err[n].min() for n in ns}
assert min(best_error[2], best_error[4], best_error[8]) < min(best_error[1], best_error[16])

# %% [markdown]
# Two lessons in one plot. Larger $n$ wants a smaller α: its targets carry more real, random
# rewards, so each one must count for less. And the best $n$ is neither 1 (too much bias from
# the still-wrong estimates) nor large (too much variance from long stretches of the walk).

# %% [markdown]
# **Accumulating against replacing traces.** TD(λ = 0.9) on the same task:

# %%
trace_err = {kind: np.mean([rms(rc.td_lambda(walk19, one_action19, 10, 0.9, sweep_alphas, 1.0,
                                             traces=kind, seed=run).V_history, truth19).mean(axis=0)
                            for run in range(20)], axis=0)
             for kind in ("accumulating", "replacing")}
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
for kind, err in trace_err.items():
    ax.plot(sweep_alphas, np.minimum(err, 1.0), label=kind)
ax.set(xlabel="step size α", ylabel="RMS error, first 10 episodes\n(capped at 1)", ylim=(0.2, 1.02),
       title="Accumulating traces blow up at large α")
ax.legend()
plt.show()
for kind, err in trace_err.items():
    print(f"{kind:12s}: best alpha {sweep_alphas[err.argmin()]:.2f}, error {err.min():.3f}, "
          f"at alpha 1: {'above 1' if err[-1] > 1 else f'{err[-1]:.3f}'}")
assert trace_err["accumulating"][-1] > 1.0 > trace_err["replacing"][-1]

# %% [markdown]
# In a walk that revisits states, an accumulating trace can grow past 1 (up to
# $1/(1-\gamma\lambda) = 10$ here), so one TD error moves a state by more than α times the error
# and large step sizes overshoot and diverge. A replacing trace is capped at 1.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values near the ends drift to whatever the terminal entries hold | bootstrapping from a terminal state | mask: target = reward alone when `terminated` |
# | values biased towards 0 on a task with a time limit | truncation treated as termination | bootstrap from $V(\text{final\_obs})$ when only `truncated` |
# | values near a time limit pulled towards the start state's | bootstrapping from `obs` after an autoreset | use `final_obs` for the target, `obs` to continue |
# | states of the last episode move at the start of the next | traces not reset (or n-step window not flushed) at the episode end | zero the traces; flush the window with the rewards left |
# | n-step TD never updates the last $n-1$ states of an episode | no flush after `done` | update the pending states with the truncated window |
# | TD(λ) diverges at large α | accumulating traces above 1 | smaller α, or replacing traces |
# | a large n with a large α is very noisy | long targets carry much of the walk's randomness | smaller α for larger n |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: one TD(0) update.** Write `td0_update(V, s, r, s_next, terminated, alpha, gamma)`
#    returning an updated copy of `V`.
# 2. **Medium: n-step target.** Write `n_step_target(rewards, bootstrap_value, terminated,
#    gamma)` for a window of $m$ rewards: their discounted sum plus, unless the window ended in
#    a terminal state, $\gamma^m$ times `bootstrap_value`.
# 3. **Hard: one TD(λ) step.** Write `td_lambda_step(V, e, s, r, s_next, terminated, done,
#    alpha, gamma, lam, replacing)` returning `(V, e)` after one step: decay, bump, update,
#    and reset the traces if the episode is `done`.

# %% tags=["solution"]
def td0_update(V, s, r, s_next, terminated, alpha, gamma):
    V = np.array(V, dtype=float)
    target = r if terminated else r + gamma * V[s_next]
    V[s] += alpha * (target - V[s])
    return V


# %%
assert rc.exercises.check("td0_update", td0_update)

# %% tags=["solution"]
def n_step_target(rewards, bootstrap_value, terminated, gamma):
    G = sum(gamma**k * r for k, r in enumerate(rewards))
    return G if terminated else G + gamma ** len(rewards) * bootstrap_value


# %%
assert rc.exercises.check("n_step_target", n_step_target)

# %% tags=["solution"]
def td_lambda_step(V, e, s, r, s_next, terminated, done, alpha, gamma, lam, replacing):
    V, e = np.array(V, dtype=float), np.array(e, dtype=float)
    e *= gamma * lam
    e[s] = 1.0 if replacing else e[s] + 1.0
    target = r if terminated else r + gamma * V[s_next]
    V += alpha * (target - V[s]) * e
    if done:
        e[:] = 0.0
    return V, e


# %%
assert rc.exercises.check("td_lambda_step", td_lambda_step)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | TD error $\delta$ | "the surprise" | $r + \gamma V(s') - V(s)$, with $V(s') = 0$ if $s'$ is terminal |
# | bootstrapping | "learning a guess from a guess" | using current value estimates inside the target |
# | n-step return | "look n steps ahead" | $n$ real rewards then $\gamma^n V(S_{t+n})$; fewer if the episode ends first |
# | λ-return | "an average of all n" | $\sum_n (1-\lambda)\lambda^{n-1} G_{t:t+n}$; TD(λ) approximates it online |
# | eligibility trace | "credit to recent states" | per-state memory $e(s)$, decayed by $\gamma\lambda$, bumped on visits |
# | accumulating / replacing trace | "add one or set to one" | on a revisit, $e(s) \mathrel{+}= 1$ or $e(s) = 1$ |
# | terminated | "the episode is over" | the next state is terminal: value 0, no bootstrap |
# | truncated | "ran out of time" | the episode was cut by a time limit: bootstrap from $V(\text{final\_obs})$ |
# | `final_obs` | "the last observation" | the state the finished episode ended in; `obs` is already the next episode's |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 6 (TD
#   prediction, the random walk of Example 6.2), chapter 7 (n-step methods, Figure 7.2's n
#   and α trade-off) and chapter 12 (λ-returns, eligibility traces, TD(λ)).
# - Sutton (1988), *Learning to predict by the methods of temporal differences*, Machine
#   Learning 3: the paper that introduced TD(λ), with the random-walk experiments.
# - Singh & Sutton (1996), *Reinforcement learning with replacing eligibility traces*, Machine
#   Learning 22: why replacing traces behave better than accumulating ones on revisits.
# - Pardo, Tavakoli, Levdik & Kormushev (2018), *Time limits in reinforcement learning*, ICML:
#   why a time-limit truncation must be bootstrapped from, and what goes wrong otherwise.
