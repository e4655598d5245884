# %% [markdown]
# # 09 · Actor-critic, GAE, terminated vs truncated
#
# *Prerequisites:* 05, 08
# *Time:* 60 minutes
# *You will build:* the bootstrap values a rollout stores, TD errors, generalised advantage estimation that respects episode boundaries and the A2C loss, then run A2C on CartPole over seeds and values of lambda.

# %% [markdown]
# REINFORCE (lesson 08) credits every action with the return that followed it: an unbiased
# but very noisy signal. A *critic*, a learned value function $V(s)$, lets you replace that
# return by something much less noisy. This lesson builds the estimator the rest of the course
# uses (GAE), the simplest algorithm around it (A2C), and one rule about time limits that
# silently breaks critics when you get it wrong.

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
# Run the uniformly random policy on 500 CartPole copies for 200 steps and look at the
# discounted return ($\gamma = 0.99$) of each copy's first episode. A policy gradient weighs
# $\nabla\log\pi(a_0|s_0)$ by one such number.

# %%
GAMMA, COPIES, HORIZON = 0.99, 500, 200


def random_policy_episodes(env, rng):
    """HORIZON steps of the uniform random policy: rewards, terminated, truncated and the
    actions taken, all [T, n]."""
    rewards, terminated, truncated = (np.zeros((HORIZON, env.n)) for _ in range(3))
    actions = rng.integers(0, 2, size=(HORIZON, env.n))
    for t in range(HORIZON):
        step = env.step(actions[t])
        rewards[t], terminated[t], truncated[t] = step.reward, step.terminated, step.truncated
    return rewards, terminated.astype(bool), truncated.astype(bool), actions


walkers = rc.CartPole(n=COPIES, seed=SEED)
walkers.reset(seed=SEED)
rewards, terminated, truncated, random_actions = random_policy_episodes(walkers, rng)
returns_to_go = rc.discounted_returns(rewards, terminated, truncated, GAMMA)
mc_returns = returns_to_go[0]
print(f"return of the first episode: mean {mc_returns.mean():.2f}, std {mc_returns.std():.2f}, "
      f"min {mc_returns.min():.2f}, max {mc_returns.max():.2f}")
first_episode = np.cumprod(~(terminated | truncated), axis=0)  # 1 until the first episode ends
random_score = float(np.mean(first_episode.sum(axis=0) + 1))  # its length: reward 1 per step
print(f"undiscounted: a random policy balances the pole for {random_score:.1f} steps on average")

# %% [markdown]
# Where does that spread come from? Two measurements. First, split the episodes by their first
# action and see how much of the variance the split explains. Second, start all 500 copies
# from one and the same state and see whether the spread shrinks.

# %%
first_actions = random_actions[0]
between = sum(np.mean(first_actions == a) * (mc_returns[first_actions == a].mean()
                                             - mc_returns.mean()) ** 2 for a in (0, 1))
print(f"share of the variance explained by the first action: {between / mc_returns.var():.2%}")

same_start = rc.CartPole(n=COPIES, seed=SEED + 1)
same_start.reset(seed=SEED + 1)
same_start.state = np.tile(same_start.state[0], (COPIES, 1))
same_returns = rc.discounted_returns(*random_policy_episodes(same_start, rng)[:3], GAMMA)[0]
print(f"std of the return from one fixed start state: {same_returns.std():.2f} "
      f"(from random start states: {mc_returns.std():.2f})")
assert between / mc_returns.var() < 0.05 and same_returns.std() > 0.8 * mc_returns.std()

# %% [markdown]
# The first action explains almost none of the variance, and removing every difference in
# start state leaves most of it: the noise comes from the actions *after* $a_0$, which $a_0$
# is not responsible for. A policy gradient needs many episodes before the signal about $a_0$
# rises above it.

# %% [markdown]
# ## The idea
#
# Let a critic $V(s) \approx V^\pi(s)$ judge each action by what happened *next*, measured
# against what was expected. The **TD error** is a one-step advantage estimate:
#
# $$\delta_t = r_t + \gamma\,(1 - \text{terminated}_t)\,V(s_{t+1}) - V(s_t).$$
#
# It holds one reward's worth of noise, but it is biased whenever $V$ is wrong. The n-step
# versions $\sum_{k<n}\gamma^k\delta_{t+k}$ look further before trusting $V$; **generalised
# advantage estimation** (GAE, Schulman et al., 2016) averages all of them, with weights
# $(1-\lambda)\lambda^{n-1}$, which sums to
#
# $$A_t^{\lambda} = \sum_{k \ge 0} (\gamma\lambda)^k\, \delta_{t+k} \quad\text{(the sum stops at the end of } t\text{'s episode)}.$$
#
# $\lambda = 0$ gives the TD error; $\lambda = 1$ gives the Monte Carlo return minus $V(s_t)$.
# The critic's regression target is $G^\lambda_t = A^\lambda_t + V(s_t)$. Computed backwards:
# $A_t = \delta_t + \gamma\lambda\,(1 - \text{done}_t)\,A_{t+1}$ with
# $\text{done} = \text{terminated} \lor \text{truncated}$.
#
# Bias and variance, measured: take the random-policy episodes above and a poor critic that
# says $V(s) = 40$ everywhere, about twice the true value of the start states. Compute
# $G^\lambda_0$ for each episode and compare its mean with the Monte Carlo average and its
# spread across episodes:

# %%
POOR_V = 40.0
poor_values = np.full(rewards.shape, POOR_V)
print(f"the poor critic's V(start) is {POOR_V / mc_returns.mean():.2f} times the true mean")
lambdas = [0.0, 0.5, 0.8, 0.9, 0.95, 1.0]
bias, spread = [], []
for lam in lambdas:
    _, targets = rc.gae(rewards, poor_values, poor_values, terminated, truncated, GAMMA, lam)
    bias.append(targets[0].mean() - mc_returns.mean())
    spread.append(targets[0].std())
    print(f"lambda {lam:4.2f}: bias {bias[-1]:+7.3f}   std {spread[-1]:6.3f}")
assert all(np.diff(spread) > 0), "the spread grows with lambda"
assert bias[2] > bias[0] > bias[4], "the bias peaks in between (lambda 0.8 above 0 above 0.95)"

# %% [markdown]
# The spread grows with $\lambda$, as the textbook says. The bias does not simply fall: it
# *rises* up to $\lambda = 0.8$ and only drops near 1. Why? The n-step target bootstraps from
# $V(s_n)$ if the episode is still running at step $n$, so its bias is
# $\gamma^n \cdot P(\text{running at } n) \cdot \big(40 - \mathbb{E}[G_n \mid \text{running}]\big)$.
# Look at the three factors:

# %%
running = np.vstack([np.ones((1, COPIES)), first_episode[:-1]]).astype(bool)  # at step n
print(" n  still running  true return-to-go  bias of the n-step target")
n_step_bias = {}
for n in (1, 5, 10, 15, 20, 30):
    alive = running[n]
    to_go = returns_to_go[n][alive].mean()
    n_step_bias[n] = GAMMA**n * alive.mean() * (POOR_V - to_go)
    print(f"{n:2d}  {alive.mean():12.0%}  {to_go:16.2f}  {n_step_bias[n]:+24.2f}")
assert np.isclose(n_step_bias[1], bias[0]), "n = 1 is lambda = 0: the same bias"
assert n_step_bias[10] > n_step_bias[1] > n_step_bias[30]

# %% [markdown]
# A random policy's episodes get worse as they go on: a state 10 steps in is worth less than
# the start (the pole is already tipping), so the same wrong $V = 40$ is *more* wrong there,
# and a target that looks further ahead bootstraps from worse-judged states. Only when the
# look-ahead passes the end of most episodes (nothing is bootstrapped after a terminal state)
# does the bias fall. With $\lambda = 0.8$ the weights $(1-\lambda)\lambda^{n-1}$ sit mostly
# on $n \le 10$; with $\lambda = 0.95$ they spread past 20. "$\lambda$ trades bias for
# variance" is true at the two ends; in between, the bias depends on *where* the critic is
# wrong.

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
ax.plot(lambdas, np.abs(bias), "o-", label="|bias| of $G^\\lambda_0$")
ax.plot(lambdas, spread, "s-", label="std of $G^\\lambda_0$ across episodes")
ax.set_xlabel("$\\lambda$")
ax.set_ylabel("discounted return")
ax.set_title("with V = 40 everywhere: the noise grows with $\\lambda$, the bias falls only near 1")
ax.legend()
plt.show()

# %% [markdown]
# ## Build it
#
# Arrays are `[T, n]`: time first, `n` copies of the environment side by side. Write each step
# in its cell; the check below it grades it against `rlcourse` and names the mistake if there
# is one.
#
# **Step 1: what to bootstrap from.** A vector environment resets a finished copy in the same
# step: the `obs` it returns is already the *next* episode's first observation, and the
# finished episode's last one is in `final_obs`. Given the critic's values of both, return the
# `next_values` the rollout must store: $V$ of the next state *of the same episode*, which is
# $V(\texttt{obs})$ while the episode runs, $V(\texttt{final\_obs})$ where the time limit
# truncated it, and 0 where it terminated (a terminal state is worth nothing, whatever the
# critic says; a step can be both terminated and truncated).

# %% tags=["solution"]
def my_bootstrap_values(v_next_obs, v_final_obs, terminated, truncated):
    return np.where(terminated, 0.0, np.where(truncated, v_final_obs, v_next_obs))


# %%
assert rc.exercises.check("bootstrap_values", my_bootstrap_values)

# %% [markdown]
# **Step 2: TD errors**, $\delta_t = r_t + \gamma\,(1 - \text{terminated}_t)\,
# \texttt{next\_values}_t - V(s_t)$, for all steps and copies at once.

# %% tags=["solution"]
def my_td_errors(rewards, values, next_values, terminated, gamma):
    return rewards + gamma * np.where(terminated, 0.0, next_values) - values


# %%
assert rc.exercises.check("td_errors_rollout", my_td_errors)

# %% [markdown]
# **Step 3: GAE.** Loop backwards over time, all copies at once, and return
# `(advantages, returns)`. Cut the carry where an episode ended: the environment has already
# started the next episode in the same column, and its TD errors are none of this episode's
# business. A truncated step ends the episode too, but its own TD error keeps the bootstrap.

# %% tags=["solution"]
def my_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    deltas = rewards + gamma * np.where(terminated, 0.0, next_values) - values
    keep = 1.0 - (terminated | truncated)
    advantages = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        following = deltas[t] + gamma * lam * keep[t] * following
        advantages[t] = following
    return advantages, advantages + values


# %%
assert rc.exercises.check("gae", my_gae)

# %% [markdown]
# **Step 4: the A2C loss.** `model(params, obs)` gives logits `[B, A]` and values `[B]`. The
# actor's term pushes up the log-probability of actions with positive advantage (the
# advantages are constants: computed from the rollout, no gradient flows through them); the
# critic regresses on the GAE returns:
#
# $$\mathcal{L} = -\frac1B\sum_i \log\pi(a_i|s_i)\,A_i + c_v\,\frac12\,\frac1B\sum_i\big(V(s_i) - G_i\big)^2.$$
#
# Use `rc.categorical_log_prob`, `rc.mean` and `rc.square` (they work on plain and traced
# arrays alike, so `rc.value_and_grad` can differentiate your loss).

# %% tags=["solution"]
def my_a2c_loss(params, model, obs, actions, advantages, returns, vf_coef=0.5):
    logits, values = model(params, obs)
    policy_loss = -rc.mean(rc.categorical_log_prob(logits, actions) * advantages)
    value_loss = 0.5 * rc.mean(rc.square(values - returns))
    return policy_loss + vf_coef * value_loss


# %%
assert rc.exercises.check("a2c_loss", my_a2c_loss)

# %% [markdown]
# **Step 5: the algorithm.** Collect `rollout` steps from each copy (one forward pass per step
# for all copies, storing `next_values` as in step 1), compute GAE, take one gradient step on
# the loss, repeat. The step is an Adam step on the gradient *after clipping its global norm*
# (`max_grad_norm`, 0.5 in `rc.A2C_CARTPOLE`): a gradient longer than that is scaled down to
# that length, so one unlucky batch cannot throw the parameters far. The reference, which the
# rest of the lesson uses:

# %%
print(inspect.getsource(rc.actor_critic))

# %% [markdown]
# ## Check it
#
# The invariants of GAE, on `rc.gae` (your `my_gae` passed the same cases above).
#
# **Nothing crosses an episode boundary.** Change everything after a terminal step; the
# advantages up to and including that step must not move.

# %%
term_at_4 = np.zeros((10, 1), dtype=bool)
term_at_4[4] = True
no_flags = np.zeros_like(term_at_4)
r, v, nv = (rng.normal(size=(10, 1)) for _ in range(3))
before, _ = rc.gae(r, v, nv, term_at_4, no_flags, 0.99, 0.95)
r[5:] += 100.0
v[5:] -= 50.0
nv[4:] += 7.0  # from the terminal step's (ignored) bootstrap on
after, _ = rc.gae(r, v, nv, term_at_4, no_flags, 0.99, 0.95)
assert np.array_equal(before[:5], after[:5]) and not np.array_equal(before[5:], after[5:])
print("advantages up to the terminal step unchanged:", np.array_equal(before[:5], after[:5]))

# %% [markdown]
# **A truncated step bootstraps; a terminated one does not.** One more unit of
# $V(\texttt{final\_obs})$ at step 4 raises that step's advantage by exactly $\gamma$ if the
# episode was truncated there, and leaves it alone if it terminated.

# %%
bumped = nv.copy()
bumped[4] += 1.0
for flags, name in ((0, "truncated"), (1, "terminated")):
    term, trunc = (term_at_4, no_flags) if flags else (no_flags, term_at_4)
    a0, _ = rc.gae(r, v, nv, term, trunc, 0.99, 0.95)
    a1, _ = rc.gae(r, v, bumped, term, trunc, 0.99, 0.95)
    print(f"{name} at step 4: its advantage moves by {float(a1[4, 0] - a0[4, 0]):.4f}")
    assert np.isclose(a1[4, 0] - a0[4, 0], 0.0 if flags else 0.99)

# %% [markdown]
# **$\lambda = 1$ is Monte Carlo.** With a critic consistent inside each episode, the GAE
# returns at $\lambda = 1$ equal the discounted returns (bootstrapped only at the rollout's end
# and at truncations), whatever the values are.

# %%
v = rng.normal(size=(10, 1))
nv = np.vstack([v[1:], [[0.3]]])
_, g_lambda1 = rc.gae(r, v, nv, term_at_4, no_flags, 0.9, 1.0)
np.testing.assert_allclose(g_lambda1, rc.discounted_returns(r, term_at_4, no_flags, 0.9, nv))
print("lambda = 1 returns == discounted returns: True")

# %% [markdown]
# ## Use it
#
# A2C on CartPole with `rc.A2C_CARTPOLE`: 8 copies, rollouts of 8 steps, one Adam step per
# rollout, $\gamma = 0.99$, separate 64-64 tanh actor and critic. One run says little (A2C is
# noisy), so run three seeds, and at the same time measure what $\lambda$ does to *learning*,
# not just to one batch of targets: 5 values of $\lambda$ times 3 seeds, 15 runs.
#
# Run one after another, 15 small runs would spend most of their time in Python overhead.
# `rc.actor_critic_sweep` runs them side by side: one environment of $15 \times 8$ copies,
# one batched forward and backward pass of the 15 stacked networks per update. Each run keeps
# its own seed, parameters, optimiser and episodes. First, check that a run of the sweep is
# the run `rc.actor_critic` makes (two short runs, in float64 so that only rounding could
# differ):

# %%
print(rc.A2C_CARTPOLE)
A2C = {key: value for key, value in rc.A2C_CARTPOLE.items()
       if key not in ("total_steps", "rollout", "lam")}
side_by_side = rc.actor_critic_sweep(
    [rc.CartPole(n=8, seed=s) for s in (1, 2)],
    [rc.make_actor_critic(4, 2, seed=s, dtype=np.float64)[1] for s in (1, 2)], 3_200,
    [dict(seed=1, lam=0.95), dict(seed=2, lam=0.5)], rollout=8, dtype=np.float64, **A2C)
for run, (seed, lam) in zip(side_by_side, ((1, 0.95), (2, 0.5))):
    model, params = rc.make_actor_critic(4, 2, seed=seed, dtype=np.float64)
    alone = rc.actor_critic(rc.CartPole(n=8, seed=seed), model, params, 3_200, rollout=8,
                            lam=lam, seed=seed, dtype=np.float64, **A2C)
    gap = max(float(np.max(np.abs(a - b))) for a, b in
              zip(rc.tree_leaves(alone.params), rc.tree_leaves(run.params)))
    same = gap < 1e-9 and np.array_equal(alone.episode_returns, run.episode_returns)
    print(f"seed {seed}, lambda {lam}: same episodes and parameters (to 1e-9) as rc.actor_critic: "
          f"{same}")
    assert same

# %% [markdown]
# Now the experiment, 40 000 steps per run (the preset's own budget is 100 000):

# %%
STEPS, SWEEP_SEEDS, SWEEP_LAMBDAS = 40_000, (0, 1, 2), (0.0, 0.5, 0.8, 0.95, 1.0)
members = [dict(seed=s, lam=lam) for lam in SWEEP_LAMBDAS for s in SWEEP_SEEDS]
model = rc.actor_critic_model
a2c_runs = rc.actor_critic_sweep(
    rc.CartPole(n=8 * len(members), seed=SEED),
    [rc.make_actor_critic(4, 2, seed=m["seed"])[1] for m in members], STEPS, members,
    rollout=rc.A2C_CARTPOLE["rollout"], **A2C)
by_lambda = {lam: [run for run, m in zip(a2c_runs, members) if m["lam"] == lam]
             for lam in SWEEP_LAMBDAS}


def learning_speed(run):
    """Mean return of all the run's training episodes: higher = learned sooner."""
    return float(np.mean(run.episode_returns))


def drawdown(run):
    """How far the mean of 20 episodes fell below its best so far, at worst."""
    curve = run.history["mean_return"]
    return float(np.nanmax(np.fmax.accumulate(curve) - curve))


greedy = {lam: [rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(model, run.params),
                            episodes=10, seed=1_000).mean for run in runs]
          for lam, runs in by_lambda.items()}

# %% tags=["nbval-ignore-output"]
print(f"{len(a2c_runs)} runs of {STEPS:,} steps in {a2c_runs[0].wall_time:.1f} s")
print("lambda  seed  mean training return  best mean of 20  worst fall  greedy at the end")
for lam, runs in by_lambda.items():
    for seed, run, score in zip(SWEEP_SEEDS, runs, greedy[lam]):
        print(f"{lam:6.2f}  {seed:4d}  {learning_speed(run):20.1f}  "
              f"{np.nanmax(run.history['mean_return']):15.1f}  {drawdown(run):10.1f}  {score:16.1f}")

# %% [markdown]
# The robust summary (medians and ranges over the 3 seeds, rounded), against a random policy:

# %%
speed = {lam: [learning_speed(run) for run in runs] for lam, runs in by_lambda.items()}
for lam in SWEEP_LAMBDAS:
    print(f"lambda {lam:4.2f}: mean training return median {np.median(speed[lam]):4.0f}, "
          f"range {min(speed[lam]):4.0f} to {max(speed[lam]):4.0f}")
print(f"a random policy: {random_score:.0f}")
preset_lam = rc.A2C_CARTPOLE["lam"]
best = [float(np.nanmax(run.history["mean_return"])) for run in by_lambda[preset_lam]]
print(f"preset (lambda {preset_lam}): every run's mean of 20 episodes passed 150: {min(best) > 150}")
print(f"lambda 0 learned slower than lambda {preset_lam} on every seed: "
      f"{max(speed[0.0]) < min(speed[preset_lam])}")
print(f"lambda 0.95 and 1 overlap (no winner within 3 seeds): "
      f"{max(speed[0.95]) > min(speed[1.0]) and max(speed[1.0]) > min(speed[0.95])}")
medians = {lam: np.median(speed[lam]) for lam in SWEEP_LAMBDAS}
slowest, fastest = min(medians, key=medians.get), sorted(medians, key=medians.get)[-2:]
print(f"lowest median: lambda {slowest:g}; the two highest: lambda {sorted(fastest)}")
fell = sum(drawdown(run) > 100 for run in a2c_runs)
ended_low = sum(run.history["mean_return"][-1] < np.nanmax(run.history["mean_return"]) - 100
                for run in a2c_runs)
print(f"runs whose mean of 20 fell more than 100 below its best at some point: at least 3 of "
      f"{len(a2c_runs)}: {fell >= 3}; runs that ended more than 100 below their best: at least "
      f"2: {ended_low >= 2}")
assert min(best) > 150 and max(speed[0.0]) < min(speed[preset_lam])
assert slowest == 0.0 and sorted(fastest) == [0.95, 1.0]
assert fell >= 3 and ended_low >= 2

# %%
axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)[1]
colours = dict(zip(SWEEP_LAMBDAS, plt.cm.viridis(np.linspace(0, 0.9, len(SWEEP_LAMBDAS)))))
for lam in (0.0, 0.95):
    for k, run in enumerate(by_lambda[lam]):
        axes[0].plot(run.history["steps"], run.history["mean_return"], color=colours[lam], lw=1,
                     label=f"$\\lambda$ = {lam:g}" if k == 0 else None)
axes[0].set_xlabel("environment steps")
axes[0].set_ylabel("mean return of the last 20 episodes")
axes[0].set_title("3 seeds each: A2C is ragged; $\\lambda$ = 0 learns slowly")
axes[0].legend()
for lam in SWEEP_LAMBDAS:
    axes[1].plot([lam] * len(speed[lam]), speed[lam], "o", color=colours[lam], alpha=0.7,
                 label="one run (seed)" if lam == 0.0 else None)
axes[1].axhline(random_score, ls="--", color="gray", lw=1, label="random policy")
axes[1].plot(SWEEP_LAMBDAS, [np.median(speed[lam]) for lam in SWEEP_LAMBDAS], "k-", lw=1,
             label="median of 3 seeds")
axes[1].set_xlabel("$\\lambda$")
axes[1].set_ylabel("mean return of all training episodes")
axes[1].set_title("$\\lambda$ = 0 learns slowest, 0.95 and 1 fastest")
axes[1].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Two things to take from this. A2C learns CartPole: with the preset's $\lambda$ every seed's
# mean of 20 episodes climbed from a random policy's score past 150. And $\lambda$ matters
# for how fast: with a critic that starts out knowing nothing, $\lambda = 0$ judges every
# action by one reward plus that critic's opinion of what follows, and learns slowest; looking
# further ahead (0.95, 1) learns fastest, and between those two the seeds cannot tell. The
# extra spread of $\lambda = 1$'s targets (*The idea*) cost nothing measurable here.
#
# Second, A2C is *unstable*. Several runs fell far below their best and some ended there (the
# last printed line, and the curves on the left). Each batch is 64 correlated samples used for
# a single gradient step, so every step's direction rests on little data. PPO (lesson 10)
# reuses each batch for many careful steps.

# %% [markdown]
# ### Terminated vs truncated
#
# CartPole ends in two ways. The pole falls: **terminated**, the state is terminal and is worth
# 0. Or 500 steps pass: **truncated**, the episode was *cut*, and the pole could have gone on
# balancing. The state the time limit interrupted is not worth 0; it is worth
# $V(\texttt{final\_obs})$.
#
# Watch what goes wrong otherwise. Fix the policy to a balancing controller that never drops
# the pole, set a short time limit of 50 steps, $\gamma = 0.95$, and train only a critic on
# GAE targets with $\lambda = 1$ and rollouts of 50 steps, one episode each, so that the
# targets are the discounted returns themselves, with no bootstrapping inside the episode.
# Since the pole never falls, the true value of every state is
# $\sum_k \gamma^k = 1/(1-\gamma) = 20$. Train it twice: once correctly (bootstrap from
# $V(\texttt{final\_obs})$ at the limit), once with truncation treated as termination.

# %%
H, GAMMA_DEMO = 50, 0.95


def controller_logits(obs):
    """A hand-tuned linear controller pushing towards upright: near-certain actions."""
    x, x_dot, theta, theta_dot = np.asarray(obs, dtype=np.float64).T
    push_right = 0.05 * x + 0.3 * x_dot + 10.0 * theta + 2.0 * theta_dot
    return 100.0 * np.stack([-push_right, push_right], axis=1)


def fixed_policy_model(critic, obs):
    return controller_logits(obs), rc.reshape(rc.mlp(critic, obs), (-1,))


upright = np.zeros((1, 4), dtype=np.float32)


def critic_loss(critic, x, y):
    return rc.mean(rc.square(rc.reshape(rc.mlp(critic, x), (-1,)) - y))


def train_critic(truncation_is_termination, iterations=40, steps=H, copies=16):
    """V(upright) after each update, the number of falls, and the last rollout's advantages
    [step of the episode, copy] (every rollout is one whole episode: the pole never falls)."""
    critic = rc.mlp_init([4, 64, 64, 1], seed=SEED)
    opt = rc.Adam(3e-3)
    state = opt.init(critic)
    env = rc.CartPole(n=copies, seed=SEED, max_steps=H)
    obs, local_rng = env.reset(seed=SEED), np.random.default_rng(SEED)
    history, falls = [], 0
    for _ in range(iterations):
        data = rc.collect_rollout(env, fixed_policy_model, critic, obs, steps, local_rng)
        obs, falls = data.last_obs, falls + int(data.terminated.sum())
        ends = data.terminated | data.truncated if truncation_is_termination else data.terminated
        advantages, targets = rc.gae(data.rewards, data.values, data.next_values, ends,
                                     data.truncated, GAMMA_DEMO, 1.0)
        x, y = data.obs.reshape(-1, 4), targets.reshape(-1)
        for _ in range(4):
            _, grads = rc.value_and_grad(critic_loss)(critic, x, y)
            critic, state = opt.step(critic, grads, state)
        history.append(float(rc.mlp(critic, upright)[0, 0]))
    return np.array(history), falls, advantages


# Small matrices: one BLAS thread is faster (and avoids thread contention on a busy machine).
with rc.single_thread_blas():
    v_correct, falls_correct, adv_correct = train_critic(False)
    v_biased, falls_biased, adv_biased = train_critic(True)
v_correct_end, v_biased_end = v_correct[-20:].mean(), v_biased[-20:].mean()
print(f"the controller dropped the pole {falls_correct + falls_biased} times in "
      f"{2 * len(v_correct) * H * 16:,} steps")
print(f"V(upright), mean of the last 20 updates: correct {v_correct_end:.1f}, "
      f"truncation-as-termination {v_biased_end:.1f}, true value {1 / (1 - GAMMA_DEMO):.1f}")
assert falls_correct + falls_biased == 0
assert abs(v_correct_end - 20.0) < 1.0 and v_biased_end < 17.0
for name, a in (("correct", adv_correct), ("truncation-as-termination", adv_biased)):
    print(f"{name:25s}: mean advantage over the episode's first 5 steps {a[:5].mean():+6.2f}, "
          f"over its last 5 steps {a[-5:].mean():+6.2f}")
assert np.abs(adv_correct).max() < 2.0 and adv_biased[:5].mean() > 3 and adv_biased[-5:].mean() < -5

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
ax.plot(v_correct, label="bootstrap at truncation")
ax.plot(v_biased, label="truncation treated as terminal")
ax.axhline(1 / (1 - GAMMA_DEMO), ls="--", color="gray", lw=1, label="true value 1/(1-γ)")
ax.set_xlabel(f"critic update ({H} steps of 16 copies each)")
ax.set_ylabel("V(upright start state)")
ax.set_title("treating the time limit as terminal drags V down")
ax.legend()
plt.show()

# %% [markdown]
# The biased critic learns the value of "some of the 50 steps are left". The observation does
# not contain the time, so the critic cannot tell a state at step 3 from one at step 48: its
# targets are the returns left at every step of the episode, and it fits their average
# (exercise 1 asks you to predict the number). So $V$ is too low *everywhere*, not just near
# the limit. In a policy-gradient method this becomes a wrong advantage that depends on the
# clock, as the last lines printed: early in the episode the returns left exceed that average
# (advantages well above 0), and in the last steps before the limit, whose targets keep no
# bootstrap, they fall far below it (advantages very negative): the actions there are blamed
# for the clock. The correct critic's advantages stay near 0 throughout. The fix is the one
# line in GAE: `terminated` zeroes the bootstrap, `truncated` keeps it,
# using $V(\texttt{final\_obs})$, which the vector environment hands you because `obs` already
# belongs to the next episode.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | $V$ too low everywhere, and the advantages of the last steps before a time limit very negative (the demo above) | truncation treated as termination | `done = terminated \| truncated` stops the recursion; only `terminated` zeroes the bootstrap |
# | values near episode ends look like start states | bootstrapping from `obs` after an autoreset | bootstrap from `final_obs` where the episode ended (step 1) |
# | advantages at the end of an episode include the next episode's rewards | the GAE carry not cut at `done` | multiply the carry by `1 - done[t]` (step 3) |
# | the critic is pulled by the policy loss | gradient flowing from the actor's term into the critic through the advantages (a shared network, or advantages computed inside the loss) | treat advantages as constants, computed from the rollout's values |
# | learning collapses after looking solved (the table's worst falls) | one noisy step per batch | smaller `lr`, more copies or longer rollouts, several seeds, or PPO |
# | with $\lambda$ near 0 nothing is learned for a long time | advantages are the untrained critic's opinion | $\lambda$ 0.9-0.97 while the critic is poor |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the biased value, predicted.** Write `average_truncated_return(gamma, H)`: the
#    value the biased critic of *Terminated vs truncated* should learn. With $k$ steps left
#    before a cut treated as terminal, the return of rewards 1 is a geometric sum; the critic
#    cannot see $k$. Compare your number with the biased critic's $V(\text{upright})$.
# 2. **Medium: n-step advantages.** Write `n_step_advantages(rewards, values, next_values,
#    terminated, truncated, gamma, n)`: $\sum_{k=0}^{n-1}\gamma^k\delta_{t+k}$, cut at the end
#    of $t$'s episode and at the rollout's end. GAE is a weighted average of these. Measure the
#    bias and spread of the n-step targets $G_0$ on the poor critic of *The idea*, for
#    $n = 1, 5, 20, 200$, and compare with the $\lambda$ table there. Then answer in
#    `why_intermediate_n_is_noisy`: why can an $n$ in between be much noisier than both ends,
#    when no $\lambda$ is? (a) longer sums add up more rewards, each of them random; (b) whether
#    the target includes $\gamma^n V(s_n)$ depends on whether the episode was still running at
#    step $n$; (c) discounting makes later rewards noisier; (d) the n-step return is biased,
#    and bias is a kind of noise.
# 3. **Hard: V-trace, GAE for someone else's data.** GAE assumes the data came from the policy
#    you are improving. IMPALA's V-trace (Espeholt et al., 2018) corrects for a behaviour
#    policy $\mu$ with truncated importance ratios $\rho_t = \pi(a_t|s_t)/\mu(a_t|s_t)$:
#    $$v_t - V(s_t) = \bar\rho_t\,\delta_t + \gamma\,c_t\,(1 - \text{done}_t)\,\big(v_{t+1} - V(s_{t+1})\big),\quad \bar\rho_t = \min(\bar\rho, \rho_t),\ c_t = \lambda\min(\bar c, \rho_t).$$
#    Write `vtrace_targets(rewards, values, next_values, terminated, truncated, log_rhos, gamma,
#    lam, rho_bar=1.0, c_bar=1.0)` returning the targets $v_t$. Check that with every ratio 1
#    it gives GAE's returns. Then use it: the random episodes of *The problem* were collected
#    by $\mu$ = uniform; evaluate the policy $\pi$ = "push right with probability 0.7" from
#    them, on the poor critic, with and without truncation ($\bar\rho = \bar c = 1$ vs
#    $\bar\rho = \bar c = \infty$). What happens to the spread of $v_0$?

# %% tags=["solution"]
def average_truncated_return(gamma, H):
    steps_left = np.arange(1, H + 1)
    return float(np.mean((1 - gamma**steps_left) / (1 - gamma)))


predicted = average_truncated_return(GAMMA_DEMO, H)
print(f"predicted {predicted:.2f}; the biased critic learned {v_biased_end:.2f} "
      f"(off by {abs(v_biased_end - predicted) / predicted:.2%})")
assert abs(v_biased_end - predicted) / predicted < 0.02


# %%
assert rc.exercises.check("average_truncated_return", average_truncated_return)


# %% tags=["solution"]
def n_step_advantages(rewards, values, next_values, terminated, truncated, gamma, n):
    deltas = rewards + gamma * np.where(terminated, 0.0, next_values) - values
    done = terminated | truncated
    advantages = np.zeros_like(deltas)
    for t in range(len(deltas)):
        still_running = np.ones(deltas.shape[1:])
        for k in range(min(n, len(deltas) - t)):
            advantages[t] += still_running * gamma**k * deltas[t + k]
            still_running = still_running * (1.0 - done[t + k])
    return advantages


n_spread = {}
for n_steps in (1, 5, 20, 200):
    n_targets = n_step_advantages(rewards, poor_values, poor_values, terminated, truncated,
                                  GAMMA, n_steps) + poor_values
    n_spread[n_steps] = n_targets[0].std()
    print(f"n = {n_steps:3d}: bias {n_targets[0].mean() - mc_returns.mean():+7.3f}   "
          f"std {n_spread[n_steps]:6.3f}")
assert n_spread[20] > max(n_spread[1], n_spread[200], *spread)


# %%
assert rc.exercises.check("n_step_advantages", n_step_advantages)


# %% tags=["solution"]
def why_intermediate_n_is_noisy():
    return "b"


# %%
assert rc.exercises.check("why_intermediate_n_is_noisy", why_intermediate_n_is_noisy)


# %% tags=["solution"]
def vtrace_targets(rewards, values, next_values, terminated, truncated, log_rhos, gamma, lam,
                   rho_bar=1.0, c_bar=1.0):
    ratios = np.exp(log_rhos)
    rho, c = np.minimum(rho_bar, ratios), lam * np.minimum(c_bar, ratios)
    deltas = rho * (rewards + gamma * np.where(terminated, 0.0, next_values) - values)
    keep = 1.0 - (terminated | truncated)
    corrections = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        following = deltas[t] + gamma * c[t] * keep[t] * following
        corrections[t] = following
    return values + corrections


on_policy = vtrace_targets(rewards, poor_values, poor_values, terminated, truncated,
                           np.zeros_like(rewards), GAMMA, 0.95)
assert np.allclose(on_policy, rc.gae(rewards, poor_values, poor_values, terminated, truncated,
                                     GAMMA, 0.95)[1])
# pi(a|s) / mu(a|s) for the actions the random policy took: 0.7 / 0.5 or 0.3 / 0.5
log_rhos = np.log(np.where(random_actions == 1, 0.7, 0.3) / 0.5)
for bar in (1.0, np.inf):
    v0 = vtrace_targets(rewards, poor_values, poor_values, terminated, truncated, log_rhos,
                        GAMMA, 1.0, bar, bar)[0]
    print(f"rho_bar = c_bar = {bar}: mean of v_0 {v0.mean():7.2f}, std {v0.std():7.2f}")


# %%
assert rc.exercises.check("vtrace_targets", vtrace_targets)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | critic | "the value network" | $V(s)$ trained to predict the return, used to build advantages |
# | advantage | "how good the action was" | an estimate of $Q(s,a) - V(s)$: here TD errors summed by GAE |
# | TD error $\delta_t$ | "one-step advantage" | $r_t + \gamma(1-\text{terminated}_t)V(s_{t+1}) - V(s_t)$ |
# | GAE($\lambda$) | "smoothed advantages" | $\sum_k(\gamma\lambda)^k\delta_{t+k}$ inside the episode; $\lambda = 0$ the TD error, $\lambda = 1$ the Monte Carlo advantage |
# | A2C | "actor-critic" | one gradient step of $-\overline{\log\pi\,A} + c_v\tfrac{1}{2}\overline{(V-G)^2}$ per batch from $n$ copies (its gradient's global norm clipped, here to 0.5) |
# | terminated | "game over" | the next state is terminal: worth 0, no bootstrap |
# | truncated | "time's up" | the episode was cut: bootstrap from $V(\texttt{final\_obs})$ |
# | `final_obs` | "the last observation" | the finished episode's last state; `obs` is already the next episode's first |
# | V-trace | "off-policy GAE" | GAE's recursion with truncated importance ratios on the TD errors and the traces |

# %% [markdown]
# ## Further reading
#
# - Schulman, Moritz, Levine, Jordan & Abbeel (2016), *High-Dimensional Continuous Control Using
#   Generalized Advantage Estimation*, ICLR: GAE and its bias/variance analysis.
# - Mnih et al. (2016), *Asynchronous Methods for Deep Reinforcement Learning*, ICML: A3C, the
#   asynchronous original of A2C.
# - Pardo, Tavakoli, Levdik & Kormushev (2018), *Time Limits in Reinforcement Learning*, ICML:
#   why time-limit truncation must be bootstrapped (or the time added to the observation).
# - Espeholt et al. (2018), *IMPALA: Scalable Distributed Deep-RL with Importance Weighted
#   Actor-Learner Architectures*, ICML: V-trace (exercise 3).
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 13
#   (actor-critic methods) and chapter 12 (λ-returns).
# - Towers et al. (2024), *Gymnasium: A Standard Interface for Reinforcement Learning
#   Environments*, arXiv:2407.17032: the API whose `terminated`/`truncated` split (made in 2022)
#   exists for exactly this reason.
