# %% [markdown]
# # 09 · Actor-critic, GAE, terminated vs truncated
#
# *Prerequisites:* 05, 08
# *Time:* 50 minutes
# *You will build:* TD-error advantages, generalised advantage estimation that respects episode boundaries, an advantage actor-critic (A2C) for CartPole, and the time-limit rule that keeps a critic honest.

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
# discounted return of each copy's first episode. Every start state is within $\pm 0.05$ of
# upright, so nearly all of the spread comes from the actions, not from where the episode began.

# %%
GAMMA = 0.99
walkers = rc.CartPole(n=500, seed=SEED)
walkers.reset(seed=SEED)
rewards, terminated, truncated = (np.zeros((200, 500)) for _ in range(3))
for t in range(200):
    step = walkers.step(rng.integers(0, 2, size=500))
    rewards[t], terminated[t], truncated[t] = step.reward, step.terminated, step.truncated
terminated, truncated = terminated.astype(bool), truncated.astype(bool)
mc_returns = rc.discounted_returns(rewards, terminated, truncated, GAMMA)[0]
print(f"return of the first episode: mean {mc_returns.mean():.2f}, std {mc_returns.std():.2f}, "
      f"min {mc_returns.min():.2f}, max {mc_returns.max():.2f}")
print(f"std / mean: {mc_returns.std() / mc_returns.mean():.2f}")

# %% [markdown]
# A policy gradient weighs $\nabla\log\pi(a_0|s_0)$ by one such number. Its standard deviation
# is the fraction of its mean printed above, and most of that noise comes from actions taken *after* $a_0$, which
# $a_0$ is not responsible for. You need many episodes before the signal about $a_0$ rises above
# that noise.

# %% [markdown]
# ## The idea
#
# Let a critic $V(s) \approx V^\pi(s)$ judge each action by what happened *next*, measured
# against what was expected. The **TD error** is a one-step advantage estimate:
#
# $$\delta_t = r_t + \gamma\,(1 - \text{terminated}_t)\,V(s_{t+1}) - V(s_t).$$
#
# It holds one reward's worth of noise, but it is biased whenever $V$ is wrong. The n-step
# versions trade between the two; **generalised advantage estimation** (GAE, Schulman et al.,
# 2016) averages all of them with weights $(\gamma\lambda)^k$:
#
# $$A_t^{\lambda} = \sum_{k \ge 0} (\gamma\lambda)^k\, \delta_{t+k} \quad\text{(the sum stops at the end of } t\text{'s episode)}.$$
#
# $\lambda = 0$ gives the TD error; $\lambda = 1$ gives the Monte Carlo return minus $V(s_t)$.
# The critic's regression target is $G^\lambda_t = A^\lambda_t + V(s_t)$. Computed backwards:
# $A_t = \delta_t + \gamma\lambda\,(1 - \text{done}_t)\,A_{t+1}$ with
# $\text{done} = \text{terminated} \lor \text{truncated}$.
#
# Bias and variance, shown: take the random-policy episodes above and a poor critic that says
# $V(s) = 40$ everywhere, well above the true value of the start states (the mean printed
# above). Compute $G^\lambda_0$ for each episode and compare with the Monte Carlo average:

# %%
poor_values = np.full(rewards.shape, 40.0)
print(f"the poor critic's V(start) is {40.0 / mc_returns.mean():.2f} times the true mean")
lambdas = [0.0, 0.5, 0.8, 0.9, 0.95, 1.0]
bias, spread = [], []
for lam in lambdas:
    _, targets = rc.gae(rewards, poor_values, poor_values, terminated, truncated, GAMMA, lam)
    bias.append(targets[0].mean() - mc_returns.mean())
    spread.append(targets[0].std())
    print(f"lambda {lam:4.2f}: bias {bias[-1]:+7.3f}   std {spread[-1]:6.3f}")

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(lambdas, np.abs(bias), "o-", label="|bias| of $G^\\lambda_0$")
ax.plot(lambdas, spread, "s-", label="std of $G^\\lambda_0$")
ax.set_xlabel("$\\lambda$")
ax.set_ylabel("discounted return units")
ax.set_title("lambda trades the critic's bias for the returns' noise")
ax.legend()
plt.show()

# %% [markdown]
# With $\lambda = 0$ every target is $1 + \gamma \cdot 40$: no noise at all, and as wrong as
# the critic. With $\lambda = 1$ the critic drops out: no bias, all the noise. In
# between, $\gamma\lambda$ sets how far you trust real rewards before falling back on $V$.
# Actor-critic methods use $\lambda \approx 0.9$-$0.95$ and let the critic improve, which
# shrinks the bias over training.

# %% [markdown]
# ## Build it
#
# **Step 1: TD errors.** Arrays are `[T, n]` (time first, `n` copies). `next_values[t]` is
# $V$ of the next state *of the same episode*; where `terminated[t]` the next state is
# terminal and its value is 0 whatever the critic says.

# %%
def td_errors(rewards, values, next_values, terminated, gamma):
    return rewards + gamma * np.where(terminated, 0.0, next_values) - values


# %%
r = np.array([[1.0], [1.0], [1.0]])
v = np.array([[5.0], [4.0], [3.0]])
nv = np.array([[4.0], [3.0], [9.0]])
term = np.array([[False], [False], [True]])
print("TD errors:", np.round(td_errors(r, v, nv, term, 0.9)[:, 0], 3))
assert rc.exercises.check("td_errors", td_errors)

# %% [markdown]
# **Step 2: GAE.** Loop backwards over time, all copies at once. The carry is cut where an
# episode ended: the vector environment has already started the next episode in the same
# column, and its TD errors are none of this episode's business. (Try it: delete `keep[t]`
# from the loop, rerun the next cell and read why the check fails; then put it back.)

# %%
def my_gae(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    deltas = td_errors(rewards, values, next_values, terminated, gamma)
    keep = 1.0 - (terminated | truncated)
    advantages = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        following = deltas[t] + gamma * lam * keep[t] * following
        advantages[t] = following
    return advantages, advantages + values


# %%
T, n = 12, 3
test_rewards, test_values, test_next = (rng.normal(size=(T, n)) for _ in range(3))
test_term, test_trunc = rng.random((T, n)) < 0.2, rng.random((T, n)) < 0.1
mine = my_gae(test_rewards, test_values, test_next, test_term, test_trunc, 0.9, 0.8)
reference = rc.gae(test_rewards, test_values, test_next, test_term, test_trunc, 0.9, 0.8)
np.testing.assert_allclose(mine[0], reference[0])
np.testing.assert_allclose(mine[1], reference[1])
print(f"my GAE matches rc.gae on a [{T}, {n}] rollout with "
      f"{int(test_term.sum())} terminations and {int(test_trunc.sum())} truncations")
assert rc.exercises.check("gae", my_gae)

# %% [markdown]
# **Step 3: the A2C loss.** One forward pass gives logits and values. The actor's term pushes
# up the log-probability of actions with positive advantage; the advantages are constants here
# (no gradient flows through them into the critic). The critic regresses on the GAE returns.

# %%
def my_a2c_loss(params, obs, actions, advantages, returns, vf_coef=0.5):
    logits, values = model(params, obs)
    policy_loss = -rc.mean(rc.categorical_log_prob(logits, actions) * advantages)
    value_loss = 0.5 * rc.mean(rc.square(values - returns))
    return policy_loss + vf_coef * value_loss


model, params = rc.make_actor_critic(4, 2, seed=SEED, dtype=np.float64)
obs = rng.normal(size=(16, 4)) * 0.05
actions, advantages, returns = rng.integers(0, 2, 16), rng.normal(size=16), rng.normal(size=16)
mine = my_a2c_loss(params, obs, actions, advantages, returns)
reference, _ = rc.actor_critic_loss(params, model, obs, actions, advantages, returns)
print(f"my A2C loss {float(mine):.6f}, reference {float(reference):.6f}")
np.testing.assert_allclose(float(mine), float(reference), rtol=1e-10)

# %% [markdown]
# **Step 4: the algorithm.** Collect `rollout` steps from each copy (one forward pass per step
# for all copies), compute GAE, take one gradient step, repeat. The rollout stores, for each
# step, `next_values`: $V(s_{t+1})$ normally, $V(\texttt{final\_obs})$ where the episode was
# truncated, 0 where it terminated. The reference:

# %%
print(inspect.getsource(rc.actor_critic))

# %% [markdown]
# ## Check it
#
# **Nothing crosses an episode boundary.** Change everything after a terminal step; the
# advantages up to and including that step must not move.

# %%
term_at_4 = np.zeros((10, 1), dtype=bool)
term_at_4[4] = True
r, v, nv = (rng.normal(size=(10, 1)) for _ in range(3))
before, _ = my_gae(r, v, nv, term_at_4, np.zeros_like(term_at_4), 0.99, 0.95)
r[5:] += 100.0
v[5:] -= 50.0
nv[4:] += 7.0
after, _ = my_gae(r, v, nv, term_at_4, np.zeros_like(term_at_4), 0.99, 0.95)
assert np.array_equal(before[:5], after[:5])
print("advantages up to the terminal step unchanged:", np.array_equal(before[:5], after[:5]))

# %% [markdown]
# **A truncated step bootstraps.** Where only `truncated` is set, one more unit of
# $V(\texttt{final\_obs})$ raises that step's advantage by exactly $\gamma$.

# %%
trunc_at_4 = term_at_4.copy()
bumped = nv.copy()
bumped[4] += 1.0
a0, _ = my_gae(r, v, nv, np.zeros_like(trunc_at_4), trunc_at_4, 0.99, 0.95)
a1, _ = my_gae(r, v, bumped, np.zeros_like(trunc_at_4), trunc_at_4, 0.99, 0.95)
print(f"change at the truncated step: {float(a1[4, 0] - a0[4, 0]):.4f} (gamma = 0.99)")
assert np.isclose(a1[4, 0] - a0[4, 0], 0.99)

# %% [markdown]
# **$\lambda = 1$ is Monte Carlo.** With a critic consistent inside each episode, the GAE
# returns at $\lambda = 1$ equal the discounted returns (bootstrapped only at the rollout's end
# and at truncations).

# %%
v = rng.normal(size=(10, 1))
nv = np.vstack([v[1:], [[0.3]]])
_, g_lambda1 = my_gae(r, v, nv, term_at_4, np.zeros_like(term_at_4), 0.9, 1.0)
np.testing.assert_allclose(g_lambda1, rc.discounted_returns(r, term_at_4, np.zeros_like(term_at_4), 0.9, nv))
print("lambda = 1 returns == discounted returns: True")

# %% [markdown]
# ## Use it
#
# A2C on CartPole with `rc.A2C_CARTPOLE`: 8 copies, rollouts of 8 steps, one Adam step per
# rollout, GAE $\lambda = 0.95$, $\gamma = 0.99$, separate 64-64 tanh actor and critic.

# %%
print(rc.A2C_CARTPOLE)
model, params = rc.make_actor_critic(4, 2, seed=SEED)
a2c = rc.actor_critic(rc.CartPole(n=8, seed=SEED), model, params, seed=SEED, progress=False,
                      **rc.A2C_CARTPOLE)
a2c_eval = rc.evaluate(rc.CartPole(n=1), rc.greedy_policy(model, a2c.params), episodes=10,
                       seed=SEED + 100)

# %% tags=["nbval-ignore-output"]
print(f"{a2c.updates} updates in {a2c.wall_time:.1f} s; best mean of 20 training episodes "
      f"{np.nanmax(a2c.history['mean_return']):.1f}; greedy evaluation {a2c_eval.mean:.1f}")

# %%
reached = bool(np.nanmax(a2c.history["mean_return"]) >= 475)
print(f"mean of 20 training episodes reached 475 (CartPole's solved mark): {reached}")
assert reached

# %%
ax = rc.learning_curve(a2c, target=475)
ax.set_title("A2C learns CartPole, noisily: one step per batch")
plt.show()

# %% [markdown]
# The curve is ragged: each batch is 64 correlated samples used for one step, and the policy
# can collapse for a while before recovering (with other seeds a run can even end in a
# collapse, below its best). PPO (lesson 10) reuses each batch for many
# careful steps.
#
# ### Terminated vs truncated
#
# CartPole ends in two ways. The pole falls: **terminated**, the state is terminal and is worth
# 0. Or 500 steps pass: **truncated**, the episode was *cut*, and the pole could have gone on
# balancing. The state the time limit interrupted is not worth 0; it is worth $V(\texttt{final\_obs})$.
#
# Watch what goes wrong otherwise. Fix the policy to a balancing controller that never drops
# the pole, set a short time limit of 50 steps, $\gamma = 0.95$, and train only a critic on
# GAE targets. Since the pole never falls, the true value of every state is
# $\sum_k \gamma^k = 1/(1-\gamma) = 20$. Train it twice: once correctly, once with truncation
# treated as termination.

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


def train_critic(truncation_is_termination, iterations=100, steps=32, copies=16):
    critic = rc.mlp_init([4, 64, 64, 1], seed=SEED)
    opt = rc.Adam(3e-3)
    state = opt.init(critic)
    env = rc.CartPole(n=copies, seed=SEED, max_steps=H)
    obs, local_rng = env.reset(seed=SEED), np.random.default_rng(SEED)
    history = []
    for _ in range(iterations):
        data = rc.collect_rollout(env, fixed_policy_model, critic, obs, steps, local_rng)
        obs = data.last_obs
        ends = data.terminated | data.truncated if truncation_is_termination else data.terminated
        _, targets = rc.gae(data.rewards, data.values, data.next_values, ends, data.truncated,
                            GAMMA_DEMO, 0.95)
        x, y = data.obs.reshape(-1, 4), targets.reshape(-1)
        for _ in range(4):
            _, grads = rc.value_and_grad(critic_loss)(critic, x, y)
            critic, state = opt.step(critic, grads, state)
        history.append(float(rc.mlp(critic, upright)[0, 0]))
    return np.array(history)


# Small matrices: one BLAS thread is faster (and avoids thread contention on a busy machine).
with rc.single_thread_blas():
    v_correct = train_critic(False)
    v_biased = train_critic(True)
print(f"V(upright) after training: correct {v_correct[-1]:.1f}, truncation-as-termination "
      f"{v_biased[-1]:.1f}, true value {1 / (1 - GAMMA_DEMO):.1f}")

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.plot(v_correct, label="bootstrap at truncation")
ax.plot(v_biased, label="truncation treated as terminal")
ax.axhline(1 / (1 - GAMMA_DEMO), ls="--", color="gray", lw=1, label="true value 1/(1-γ)")
ax.set_xlabel("critic update")
ax.set_ylabel("V(upright start state)")
ax.set_title("treating the time limit as terminal drags V down")
ax.legend(fontsize=8)
plt.show()

# %%
assert abs(v_correct[-1] - 20.0) < 2.0 and v_biased[-1] < 17.0

# %% [markdown]
# The biased critic learns the value of "some of the 50 steps are left". The observation does
# not contain the time, so the critic cannot tell a state at step 3 from one at step 48, and
# averages: roughly $\frac{1}{H}\sum_{k=1}^{H}\frac{1-\gamma^k}{1-\gamma}$ (exercise 3). In a
# policy-gradient method this bias becomes a wrong advantage: near the time limit states look
# worse than they are and the agent learns to fear the clock. The fix is the one line in GAE:
# `terminated` zeroes the bootstrap, `truncated` keeps it, using $V(\texttt{final\_obs})$,
# which the vector environment hands you because `obs` already belongs to the next episode.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | values shrink near a time limit; agent "fears the clock" | truncation treated as termination | `done = terminated \| truncated` stops the recursion; only `terminated` zeroes the bootstrap |
# | values near episode ends look like start states | bootstrapping from `obs` after an autoreset | bootstrap from `final_obs` where the episode ended |
# | advantages at the end of an episode include the next episode's rewards | the GAE carry not cut at `done` | multiply the carry by `1 - done[t]` |
# | critic never improves, actor learns nothing | gradient flowing from the actor loss into the critic through the advantages, or advantages computed after the update | treat advantages as constants, computed from the rollout's values |
# | learning collapses after looking solved | one noisy step per batch, learning rate too high | smaller `lr`, more copies or longer rollouts, or PPO |
# | value loss dominates the gradient | returns of hundreds vs log-probs of ~1 | `vf_coef`, separate networks, or normalised advantages |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: what to bootstrap from.** Write `bootstrap_values(v_next_obs, v_final_obs,
#    terminated, truncated)`, all `[T, n]`: the `next_values` a rollout stores, given the critic's
#    values of the `obs` each step returned and of its `final_obs`. Which one does a step that is
#    both terminated and truncated use?
# 2. **Medium: n-step advantages.** Write `n_step_advantages(rewards, values, next_values,
#    terminated, truncated, gamma, n)`: $\sum_{k=0}^{n-1}\gamma^k\delta_{t+k}$, cut at the end
#    of $t$'s episode and at the rollout's end. GAE is a weighted average of these. Then
#    measure the bias and spread of the n-step targets $G_0$ built on the poor critic of
#    *The idea* and compare them with the $\lambda$ table there: $n = 1$ and an $n$ longer than
#    any episode match $\lambda = 0$ and $\lambda = 1$. Why can an $n$ in between be noisier
#    than either, when no $\lambda$ is?
# 3. **Hard: the biased value, predicted.** Write `average_truncated_return(gamma, H)`, the mean
#    over the $H$ steps of an episode of the discounted return left if the episode is cut at
#    $H$ and the cut is treated as terminal: $\frac{1}{H}\sum_{k=1}^{H}\frac{1-\gamma^k}{1-\gamma}$.
#    Compare it with the biased critic's $V(\text{upright})$.

# %% tags=["solution"]
def bootstrap_values(v_next_obs, v_final_obs, terminated, truncated):
    return np.where(terminated, 0.0, np.where(truncated, v_final_obs, v_next_obs))


# %%
assert rc.exercises.check("bootstrap_values", bootstrap_values)


# %% tags=["solution"]
def n_step_advantages(rewards, values, next_values, terminated, truncated, gamma, n):
    deltas = td_errors(rewards, values, next_values, terminated, gamma)
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
# Whether the target includes gamma^n * 40 depends on whether the episode lasted n steps.
assert n_spread[20] > max(n_spread[1], n_spread[200]) and max(spread) <= spread[-1]


# %%
assert rc.exercises.check("n_step_advantages", n_step_advantages)


# %% tags=["solution"]
def average_truncated_return(gamma, H):
    steps_left = np.arange(1, H + 1)
    return float(np.mean((1 - gamma**steps_left) / (1 - gamma)))


predicted = average_truncated_return(GAMMA_DEMO, H)
print(f"predicted biased value {predicted:.2f}; the biased critic learned it within 20%: "
      f"{abs(v_biased[-1] - predicted) / predicted < 0.2}")
assert abs(v_biased[-1] - predicted) / predicted < 0.2


# %%
assert rc.exercises.check("average_truncated_return", average_truncated_return)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | critic | "the value network" | $V(s)$ trained to predict the return, used to build advantages |
# | advantage | "how good the action was" | an estimate of $Q(s,a) - V(s)$: here TD errors summed by GAE |
# | TD error $\delta_t$ | "one-step advantage" | $r_t + \gamma(1-\text{terminated}_t)V(s_{t+1}) - V(s_t)$ |
# | GAE($\lambda$) | "smoothed advantages" | $\sum_k(\gamma\lambda)^k\delta_{t+k}$ inside the episode; $\lambda$ trades bias for variance |
# | A2C | "actor-critic" | one gradient step of $-\overline{\log\pi\,A} + c_v\tfrac{1}{2}\overline{(V-G)^2}$ per batch from $n$ copies |
# | terminated | "game over" | the next state is terminal: worth 0, no bootstrap |
# | truncated | "time's up" | the episode was cut: bootstrap from $V(\texttt{final\_obs})$ |
# | `final_obs` | "the last observation" | the finished episode's last state; `obs` is already the next episode's first |

# %% [markdown]
# ## Further reading
#
# - Schulman, Moritz, Levine, Jordan & Abbeel (2016), *High-Dimensional Continuous Control Using
#   Generalized Advantage Estimation*, ICLR: GAE and its bias/variance analysis.
# - Mnih et al. (2016), *Asynchronous Methods for Deep Reinforcement Learning*, ICML: A3C, the
#   asynchronous original of A2C.
# - Pardo, Tavakoli, Levdik & Kormushev (2018), *Time Limits in Reinforcement Learning*, ICML:
#   why time-limit truncation must be bootstrapped (or the time added to the observation).
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 13
#   (actor-critic methods) and chapter 12 (λ-returns).
# - Towers et al. (2024), *Gymnasium: A Standard Interface for Reinforcement Learning
#   Environments*, arXiv:2407.17032: the API whose `terminated`/`truncated` split (made in 2022)
#   exists for exactly this reason.
