# %% [markdown]
# # 10 · PPO
#
# *Prerequisites:* 08, 09
# *Time:* 60 minutes
# *You will build:* the probability ratio, PPO's clipped surrogate objective, its loss and its two diagnostics, then train CartPole over seeds, read the diagnostics, and measure which implementation details matter.

# %% [markdown]
# Actor-critic (lesson 09) uses each batch of experience for one gradient step and then throws
# it away. Experience is the expensive part, so you would like to take many steps on each
# batch. Proximal policy optimisation (PPO) is the small change to the objective that makes
# that safer. It is also the algorithm lesson 12 uses to fine-tune a language model with RLHF.

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
# Collect one batch with a fresh policy: 8 CartPole copies, 64 steps each. Then take 60 Adam
# steps on that same batch with the natural objective for reusing old data, the importance-
# weighted surrogate $\frac{1}{B}\sum_i r_i A_i$ with $r_i = \pi_\theta(a_i|s_i) /
# \pi_{\text{old}}(a_i|s_i)$. Its gradient at $\theta_\text{old}$ is exactly the policy gradient
# of lessons 08-09. After each step, measure how far the policy has moved: the exact KL
# divergence between the old and new action distributions, averaged over the batch's states.

# %%
model = rc.make_actor_critic(4, 2, seed=SEED, dtype=np.float64)[0]  # the architecture


def one_batch(seed):
    """A fresh policy (parameters from `seed`) and the batch it collected: 8 copies x 64 steps,
    advantages (normalised) and returns by GAE."""
    env = rc.CartPole(n=8, seed=seed)
    params = rc.make_actor_critic(4, 2, seed=seed, dtype=np.float64)[1]
    collected = rc.collect_rollout(env, model, params, env.reset(seed=seed), 64,
                                   np.random.default_rng(seed), dtype=np.float64)
    advantages, returns = rc.gae(collected.rewards, collected.values, collected.next_values,
                                 collected.terminated, collected.truncated, gamma=0.99, lam=0.95)
    obs = collected.obs.reshape(-1, 4)
    advantages = advantages.reshape(-1)
    return dict(batch=collected, params0=params, obs=obs, actions=collected.actions.reshape(-1),
                old_log_probs=collected.log_probs.reshape(-1), returns=returns.reshape(-1),
                adv=(advantages - advantages.mean()) / advantages.std(),
                old_logits=model(params, obs)[0])


problem = one_batch(SEED)
batch, params0, obs, actions = (problem[k] for k in ("batch", "params0", "obs", "actions"))
old_log_probs, adv, old_logits = (problem[k] for k in ("old_log_probs", "adv", "old_logits"))
batch_returns = problem["returns"]


def mean_exact_kl(params, data=problem):
    """KL(pi_old || pi_new) of the full action distributions, averaged over the batch's states."""
    lp_old = rc.log_softmax(data["old_logits"])
    lp_new = rc.log_softmax(model(params, data["obs"])[0])
    return float(np.mean(np.sum(np.exp(lp_old) * (lp_old - lp_new), axis=1)))


def reuse_batch(objective, data=problem, steps=60, lr=3e-3):
    """Take `steps` Adam steps maximising mean(objective(ratio, adv)) on the batch: the KL and
    the actor's gradient norm after each step, and the final parameters."""
    params, opt = data["params0"], rc.Adam(lr)
    state = opt.init(params)

    def loss(p):
        log_probs = rc.categorical_log_prob(model(p, data["obs"])[0], data["actions"])
        return -rc.mean(objective(rc.exp(log_probs - data["old_log_probs"]), data["adv"]))

    kls, grad_norms = [], []
    for _ in range(steps):
        _, grads = rc.value_and_grad(loss)(params)
        grad_norms.append(np.sqrt(sum(np.sum(g**2) for g in rc.tree_leaves(grads["actor"]))))
        params, state = opt.step(params, grads, state)
        kls.append(mean_exact_kl(params, data))
    return np.array(kls), np.array(grad_norms), params


kl_plain, _, plain_params = reuse_batch(lambda ratio, a: ratio * a)
for k in (1, 10, 30, 60):
    print(f"after {k:2d} steps on one batch: KL(old || new) = {kl_plain[k - 1]:.3f}")
assert kl_plain[-1] > 1.0

# %% [markdown]
# The surrogate keeps rewarding the same moves: every step makes the good actions of this batch
# more likely, without limit, because nothing in $r A$ says "you have moved far enough". A KL
# of more than a nat means the new policy has become far more certain on actions chosen by a
# random policy from one batch of noisy advantages, far outside the region where those
# advantages mean anything. The estimate was made for $\pi_\text{old}$; it is only trustworthy
# near it.

# %% [markdown]
# ## The idea
#
# Keep the surrogate but stop rewarding a sample once its ratio has moved far enough in the
# direction its advantage favours. PPO's clipped objective (Schulman et al., 2017) is
#
# $$L^{\text{CLIP}}(\theta) = \frac{1}{B}\sum_i \min\big(r_i A_i,\ \operatorname{clip}(r_i, 1-\epsilon, 1+\epsilon)\, A_i\big).$$
#
# - $A > 0$ (a good action): raising $r$ helps until $r = 1 + \epsilon$; beyond that the
#   clipped term is the smaller one, it is flat, and the gradient is **zero**.
# - $A < 0$ (a bad action): lowering $r$ helps until $r = 1 - \epsilon$, then the gradient
#   is zero.
# - In the other direction nothing is clipped: if a step made a good action *less* likely
#   ($r < 1 - \epsilon$, $A > 0$), the full gradient pulls it back. The `min` makes the
#   objective a pessimistic bound: never more credit than the clipped term, always the full
#   blame.
#
# The clip only removes the gradient of samples that went too far; it does not hold the ratio
# inside $[1-\epsilon, 1+\epsilon]$. The full loss adds a value regression and, optionally, an
# entropy bonus:
# $\mathcal{L} = -L^{\text{CLIP}} + c_v \tfrac{1}{2}\overline{(V(s) - G)^2} - c_e \overline{H[\pi(\cdot|s)]}$,
# with $G$ the GAE returns of lesson 09. Plot the objective of one sample against its ratio:

# %%
ratios = np.linspace(0.0, 2.0, 201)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100, sharey=True)
for ax, a in zip(axes, (1.0, -1.0)):
    ax.plot(ratios, ratios * a, "--", color="gray", label="unclipped $rA$")
    ax.plot(ratios, rc.ppo_clip_objective(ratios, np.full_like(ratios, a), 0.2),
            label="clipped, $\\epsilon$ = 0.2")
    ax.axvspan(0.8, 1.2, alpha=0.1, label="$[1-\\epsilon, 1+\\epsilon]$")
    ax.set_xlabel("probability ratio $r$")
    ax.set_title(f"A = {a:+.0f}: flat (no gradient) " + ("above 1.2" if a > 0 else "below 0.8"))
axes[0].set_ylabel("objective of one sample (to maximise)")
axes[0].legend()
plt.show()

# %% [markdown]
# ## Build it
#
# Write each step in its cell; the check below grades it against `rlcourse` and names the
# mistake if there is one.
#
# **Step 1: the ratio.** Compute it from log-probabilities, $r = \exp(\log\pi_\theta(a|s) -
# \log\pi_\text{old}(a|s))$. The old log-probabilities are the ones *stored at collection
# time*; recomputing them after an update would make every ratio 1.

# %% tags=["solution"]
def my_ratio(log_probs, old_log_probs):
    return np.exp(log_probs - old_log_probs)


# %%
assert rc.exercises.check("ppo_ratio", my_ratio)

# %% [markdown]
# **Step 2: the clipped objective**, elementwise for arrays of ratios and advantages. Use
# `rc.minimum` and `rc.clip`, which also work on traced values inside `value_and_grad`.

# %% tags=["solution"]
def my_clip_objective(ratio, advantages, eps):
    return rc.minimum(ratio * advantages, rc.clip(ratio, 1 - eps, 1 + eps) * advantages)


# %%
assert rc.exercises.check("ppo_clip_objective", my_clip_objective)

# %% [markdown]
# **Step 3: the loss on a minibatch.** One forward pass gives logits and values; the policy
# term is $-L^\text{CLIP}$ with the ratio of the new to the stored log-probabilities; the value
# term is $c_v$ times half the squared error against the GAE returns. The check uses a policy
# that has moved far from the one that collected the data, so the clipped branch is active
# for advantages of both signs.

# %% tags=["solution"]
def my_ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, eps=0.2,
                vf_coef=0.5):
    logits, values = model(params, obs)
    ratio = rc.exp(rc.categorical_log_prob(logits, actions) - old_log_probs)
    clipped = rc.clip(ratio, 1 - eps, 1 + eps) * advantages
    policy_loss = -rc.mean(rc.minimum(ratio * advantages, clipped))
    value_loss = 0.5 * rc.mean(rc.square(values - returns))
    return policy_loss + vf_coef * value_loss


# %%
assert rc.exercises.check("ppo_loss", my_ppo_loss)

# %% [markdown]
# **Step 4: the two diagnostics.** PPO reports how far each update moved the policy and how
# much of the batch the clip held back. `my_approx_kl(new_log_probs, old_log_probs)`: the mean
# over samples of $(r - 1) - \log r$, an estimate of $\mathrm{KL}(\pi_\text{old}\,\|\,\pi_\theta)$
# (the "k3" estimator: unbiased, and $\ge 0$ on every sample, unlike the plain $-\log r$).
# `my_clip_fraction(ratio, eps)`: the share of samples with $|r - 1| > \epsilon$.

# %% tags=["solution"]
def my_approx_kl(new_log_probs, old_log_probs):
    log_ratio = np.asarray(new_log_probs) - np.asarray(old_log_probs)
    return float(np.mean(np.expm1(log_ratio) - log_ratio))


# %%
assert rc.exercises.check("approx_kl", my_approx_kl)


# %% tags=["solution"]
def my_clip_fraction(ratio, eps):
    return float(np.mean(np.abs(np.asarray(ratio) - 1.0) > eps))


# %%
assert rc.exercises.check("clip_fraction", my_clip_fraction)

# %% [markdown]
# **Step 5: the algorithm.** Each update: collect `rollout` steps from the `n` copies with the
# current policy (storing log-probabilities and values), compute GAE, then `epochs` passes over
# the batch in shuffled minibatches, normalising each minibatch's advantages, clipping the
# global gradient norm, and annealing the learning rate (and optionally the clip range); stop
# an update's epochs early if its KL passes `target_kl`. The reference, which the rest of the
# lesson uses:

# %%
print(inspect.getsource(rc.ppo))

# %% [markdown]
# Back to the problem: the same 60 steps on one batch, with the clipped objective.

# %%
def clipped_objective(ratio, a):
    return rc.ppo_clip_objective(ratio, a, 0.2)


kl_clipped, grad_norms, clipped_params = reuse_batch(clipped_objective)
for k in (1, 10, 30, 60):
    print(f"after {k:2d} steps: KL plain {kl_plain[k - 1]:.3f}   KL clipped {kl_clipped[k - 1]:.4f}")
assert kl_clipped[-1] < kl_plain[-1] / 10

# %% [markdown]
# One batch is one anecdote. The same 60 steps on the batches of two more fresh policies
# (seeds 1 and 2), next to this one:

# %%
def after_clipped_steps(data, params, grad_norms):
    """Share of samples the clip switched off (ratio past the bound in its advantage's
    direction) after the clipped steps, and the batch gradient's norm, first and last step."""
    log_probs = rc.categorical_log_prob(model(params, data["obs"])[0], data["actions"])
    moved = np.exp(log_probs - data["old_log_probs"])
    switched_off = (((moved > 1.2) & (data["adv"] > 0)) | ((moved < 0.8) & (data["adv"] < 0)))
    return moved, switched_off, grad_norms[0], grad_norms[-1]


reuse = {SEED: (kl_plain, kl_clipped, after_clipped_steps(problem, clipped_params, grad_norms))}
for seed in (1, 2):
    data = one_batch(seed)
    plain_curve = reuse_batch(lambda ratio, a: ratio * a, data)[0]
    clip_curve, norms, params_after = reuse_batch(clipped_objective, data)
    reuse[seed] = (plain_curve, clip_curve, after_clipped_steps(data, params_after, norms))
print("seed   KL plain at 30, 60   KL clipped at 30, 60   plain / clipped at 60   "
      "samples still pushing   gradient norm step 1 -> 60")
for seed, (kp, kc, (_, off, first, last)) in reuse.items():
    print(f"{seed:4d}   {kp[29]:7.3f} {kp[-1]:7.3f}   {kc[29]:9.4f} {kc[-1]:8.4f}   "
          f"{kp[-1] / kc[-1]:21.0f}   {1 - off.mean():21.0%}   {first:12.3f} -> {last:.3f}")
assert all(kp[-1] > 1.0 and kp[-1] > 100 * kc[-1] for kp, kc, _ in reuse.values())
assert all(kc[-1] - kc[29] < (kp[-1] - kp[29]) / 100 for kp, kc, _ in reuse.values())
assert all(1 - off.mean() > 0.5 and last < first / 2 for _, _, (_, off, first, last) in reuse.values())

# %% [markdown]
# On all three batches the plain surrogate's KL passes a nat and is still climbing at step
# 60, while the clipped one ends more than 100 times lower (the fourth column) and, from step
# 30 to 60, grows by less than a hundredth of what the plain one adds over the same steps. It
# does not stop: on one batch it nearly doubles. Why so slow? Not because every sample is
# clipped: most samples still push (the fifth column). The clip switched off the samples
# that had moved far enough in their advantage's direction, and the pushes of the rest
# largely cancel: the batch's gradient shrank to a fraction of the first step's (the last
# column). On seed 0's batch:

# %%
moved, switched_off = reuse[SEED][2][:2]
print(f"after 60 clipped steps: {np.mean(np.abs(moved - 1) > 0.2):.1%} of the ratios are outside "
      f"[0.8, 1.2], {switched_off.mean():.1%} of the samples have no gradient, "
      f"{1 - switched_off.mean():.1%} still push")

# %% [markdown]
# The clip bounds no KL (the ratios outside the range above were allowed to get there, and
# the KL keeps rising slowly). That is why PPO also limits the number of epochs, watches the
# KL, and can stop an update early when the KL passes a target (*Use it*).
#
# A bug that hides all of this: "old" log-probabilities recomputed, detached, from the
# current parameters instead of stored at collection time. Every ratio is then 1, so the
# logged KL and clip fraction read 0, while the gradient is the plain policy gradient, taken
# again at every step. Measured against the policy that collected the batch:

# %%
kl_recomputed = reuse_batch(lambda ratio, a: clipped_objective(ratio / rc.stop_gradient(ratio), a))[0]
print(f"ratio recomputed each step (always 1): KL from the collecting policy after 10, 30, 60 "
      f"steps {kl_recomputed[9]:.2f}, {kl_recomputed[29]:.2f}, {kl_recomputed[-1]:.2f} "
      f"(the plain surrogate's after 60: {kl_plain[-1]:.2f})")
assert kl_recomputed[-1] > 1.0 and kl_recomputed[-1] > 50 * kl_clipped[-1]

# %% [markdown]
# ## Check it
#
# **The clip direction.** Differentiate the objective with respect to the ratio: the gradient
# must be exactly zero where the clipped branch is active in the advantage's direction
# ($r > 1+\epsilon$ with $A > 0$, $r < 1-\epsilon$ with $A < 0$) and equal to $A$ everywhere
# else. A `max` in place of the `min`, or clipping every sample, breaks this assert.

# %%
grid = np.array([0.5, 0.79, 0.8, 0.81, 1.0, 1.19, 1.2, 1.21, 1.6])
for a in (1.5, -0.7):
    advantages = np.full(9, a)
    _, g = rc.value_and_grad(
        lambda p, adv=advantages: rc.sum(rc.ppo_clip_objective(p["r"], adv, 0.2)))({"r": grid.copy()})
    blocked = grid > 1.2 if a > 0 else grid < 0.8
    assert np.all(g["r"][blocked] == 0.0) and np.allclose(g["r"][~blocked], a)
    print(f"A = {a:+.1f}: gradient {np.round(g['r'], 2) + 0.0}")

# %% [markdown]
# **The loss sends no policy gradient through a clipped sample.** On the policy moved by the
# 60 clipped steps, take the gradient of `rc.ppo_loss` (value term off) with respect to each
# sample's logits: it must vanish exactly for the samples the clip switched off, and only for
# them.

# %%
logits_moved, values_moved = model(clipped_params, obs)


def loss_of_logits(p):
    """rc.ppo_loss with the logits as the only free parameters (value term weighted 0)."""
    def logits_as_model(_, o):
        return p["logits"], values_moved

    return rc.ppo_loss(None, logits_as_model, obs, actions, old_log_probs, adv,
                       batch_returns.reshape(-1), 0.2, 0.0)[0]


_, g = rc.value_and_grad(loss_of_logits)({"logits": logits_moved})
silent = np.all(g["logits"] == 0.0, axis=1)
print(f"samples without gradient: {silent.mean():.1%}, the clip's switched-off share: "
      f"{switched_off.mean():.1%}, the same samples: {np.array_equal(silent, switched_off)}")
assert np.array_equal(silent, switched_off)

# %% [markdown]
# **At the old policy PPO is the policy gradient.** When $\theta = \theta_\text{old}$ every
# ratio is 1, inside the clip range, so the gradient of $L^\text{CLIP}$ equals that of
# $\overline{\log\pi_\theta(a|s) A}$, the actor-critic gradient of lesson 09.

# %%
def pg_loss(params):
    return -rc.mean(rc.categorical_log_prob(model(params, obs)[0], actions) * adv)


def clip_loss(params):
    log_probs = rc.categorical_log_prob(model(params, obs)[0], actions)
    return -rc.mean(rc.ppo_clip_objective(rc.exp(log_probs - old_log_probs), adv, 0.2))


g_pg = rc.grad(pg_loss)(params0)["actor"]
g_clip = rc.grad(clip_loss)(params0)["actor"]
for a, b in zip(rc.tree_leaves(g_pg), rc.tree_leaves(g_clip)):
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
print("PPO gradient at the old policy == policy gradient: True")

# %% [markdown]
# ## Use it
#
# `rc.PPO_CARTPOLE` holds the RL Zoo's tuned PPO hyperparameters for CartPole: 8 copies,
# rollouts of 32 steps (batches of 256), 20 epochs per batch on one minibatch of 256,
# $\gamma = 0.98$, GAE $\lambda = 0.8$, clip 0.2, learning rate $10^{-3}$, both annealed
# linearly to 0, for 64-64 networks. Its budget, 50 000 steps, is half the Zoo's, so both
# schedules anneal twice as fast; `tests/test_ppo.py` measures it over five seeds.
#
# This lesson trains 27 runs, so it makes them cheaper: 16-16 networks, 10 epochs instead of
# 20, and a larger learning rate, $5 \times 10^{-3}$. That is a different configuration, so it
# has to earn its place here: three seeds below. `rc.ppo_sweep` trains runs side by side,
# one batched forward and backward pass for all of them per minibatch; each run is the one
# `rc.ppo` makes with the same seed and settings (`tests/test_sweep.py` checks it update by
# update; lesson 09 showed the same for A2C).

# %%
print(rc.PPO_CARTPOLE)
NET, SEEDS = (16, 16), (0, 1, 2)
LESSON_PPO = dict(rc.PPO_CARTPOLE, epochs=10, lr=5e-3)
SHARED = {k: LESSON_PPO[k] for k in ("rollout", "epochs", "minibatch")}
SETTINGS = {k: v for k, v in LESSON_PPO.items() if k not in ("total_steps", *SHARED)}
agent = rc.actor_critic_model


def side_by_side(configs, total_steps, inits=None):
    """Train every config (settings that differ from LESSON_PPO) with every seed in one sweep;
    returns {config name: [one result per seed]}. ``inits`` maps a config name to a function
    seed -> initial parameters (default: rc.make_actor_critic's orthogonal init)."""
    inits = inits or {}
    members, params = [], []
    for name, config in configs.items():
        for seed in SEEDS:
            members.append(dict(SETTINGS, seed=seed, **config))
            make = inits.get(name, lambda s: rc.make_actor_critic(4, 2, hidden=NET, seed=s)[1])
            params.append(make(seed))
    runs = rc.ppo_sweep(rc.CartPole(n=8 * len(members), seed=SEED), params, total_steps,
                        members, **SHARED)
    return {name: runs[k * len(SEEDS):(k + 1) * len(SEEDS)] for k, name in enumerate(configs)}


def greedy_score(result):
    return rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(agent, result.params), episodes=10,
                       seed=1_000).mean


trained = side_by_side({"lesson": {}}, LESSON_PPO["total_steps"])["lesson"]
scores = [greedy_score(run) for run in trained]

# %% tags=["nbval-ignore-output"]
print(f"3 runs of {LESSON_PPO['total_steps']:,} steps side by side in {trained[0].wall_time:.1f} s")
for seed, run, score in zip(SEEDS, trained, scores):
    curve = run.history["mean_return"]
    hit = np.flatnonzero(curve >= 475)
    first = f"{run.history['steps'][hit[0]]:,}" if hit.size else "never"
    print(f"seed {seed}: best mean of 20 episodes {np.nanmax(curve):5.1f} (>= 475 first at {first}),"
          f" last {curve[-1]:5.1f}; greedy policy {score:5.1f}")

# %%
best = [float(np.nanmax(run.history["mean_return"])) for run in trained]
print(f"every seed's mean of 20 training episodes passed 400: {min(best) > 400}")
print(f"every seed's greedy policy scores at least 450 of 500 over 10 episodes: {min(scores) >= 450}")
assert min(best) > 400 and min(scores) >= 450

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for seed, run in zip(SEEDS, trained):
    rc.learning_curve(run, ax=ax, label=f"seed {seed}", raw=False)
ax.axhline(475, ls="--", lw=1, color="gray", label="475 (CartPole's solved mark)")
ax.set_title("PPO on CartPole, 3 seeds: from about 20 to 400-500 in 50 000 steps")
ax.legend(loc="upper left")
plt.show()

# %%
def drawdown(run):
    """How far the mean of 20 episodes fell below its best so far, at worst."""
    curve = run.history["mean_return"]
    return float(np.nanmax(np.fmax.accumulate(curve) - curve))


fell_back = [run for run in trained if drawdown(run) > 100]
recovered = [run for run in fell_back
             if run.history["mean_return"][-1] > np.nanmax(run.history["mean_return"]) - 50]
print(f"runs whose mean of 20 fell more than 100 below its best so far: {len(fell_back)} of "
      f"{len(trained)}; of those, ending within 50 of their best: {len(recovered)}")
assert fell_back and recovered

# %% [markdown]
# The curves are not monotone: even with PPO's careful steps a run can fall back by more than
# 100 and climb back to near its best by the end (the printed counts). One curve is an
# anecdote; that is why this lesson runs three seeds and scores each greedy policy at the end.

# %% [markdown]
# Watch what that means: the same start, the policy before training and seed 0's after
# (greedy actions, 50 frames per second).

# %%
before = rc.greedy_policy(agent, rc.make_actor_critic(4, 2, hidden=NET, seed=SEEDS[0])[1])
after = rc.greedy_policy(agent, trained[0].params)
cartpole = rc.animate(rc.CartPole(), {"before training": before, "after PPO": after}, seed=0)
print(cartpole)

# %% tags=["nbval-ignore-output"]
cartpole

# %% [markdown]
# **The diagnostics.** PPO logs, per update: `approx_kl` (how far each update moved the
# policy), `clip_fraction` (the share of samples whose ratio left the clip range), `entropy`
# (how random the policy still is) and `explained_variance`
# $= 1 - \mathrm{Var}(G - V)/\mathrm{Var}(G)$ (how much of the returns' spread the critic
# predicts: 1 is perfect, 0 is no better than a constant).

# %%
axes = rc.ppo_diagnostics(trained, labels=[f"seed {s}" for s in SEEDS])
axes[0, 0].set_title("KL shrinks as lr and clip anneal")
axes[0, 1].set_title("the clip fraction does not")
axes[1, 0].set_title("entropy falls: the policy commits")
axes[1, 1].set_title("explained variance dives to 0 for long stretches")
plt.tight_layout()
plt.show()

# %% [markdown]
# Two things in these panels need explaining. The KL falls by orders of magnitude, yet the clip
# fraction stays roughly level although $\epsilon$ itself anneals towards 0: the learning rate
# anneals with it. For small moves $\mathrm{KL} \approx \overline{(r-1)^2}/2$, so
# $\sqrt{2\,\mathrm{KL}}$ is the typical $|r - 1|$; compare it with $\epsilon$ early and late:

# %%
print("medians of 3 seeds   clip eps   typical |r - 1|   typical / eps   clip fraction")
moves = {}
for part, rows in (("first fifth", slice(0, 39)), ("last fifth", slice(-39, None))):
    eps = np.median([run.history["clip"][rows].mean() for run in trained])
    typical = np.median([np.sqrt(2 * run.history["approx_kl"][rows]).mean() for run in trained])
    fraction = np.median([run.history["clip_fraction"][rows].mean() for run in trained])
    moves[part] = (eps, typical / eps, fraction)
    print(f"{part:18s}  {eps:9.3f}   {typical:15.3f}   {typical / eps:13.1f}   {fraction:13.2f}")
(eps_first, move_first, frac_first), (eps_last, move_last, frac_last) = moves.values()
assert eps_last < eps_first / 3, "the clip range anneals"
assert 2 / 3 < move_last / move_first < 3 / 2 and 1 / 2 < frac_last / frac_first < 2

# %% [markdown]
# The clip range shrank several times over, yet the typical move relative to it stayed within
# a factor 1.5 (asserted), and so the clip fraction stayed within a factor 2: the typical move
# shrinks in step with the clip range, so about the same share of samples crosses it. Second, explained variance dives to about 0 for long stretches in the middle and
# late part of training. A broken critic? Look at the value loss in those updates, next to its
# size at the start:

# %%
dips_ok = []
for seed, run in zip(SEEDS, trained):
    h, fifth = run.history, len(run.history["steps"]) // 5
    dips = (np.arange(len(h["steps"])) >= fifth) & (h["explained_variance"] < 0.2)
    early_loss = np.median(h["value_loss"][:fifth])
    dip_loss = np.median(h["value_loss"][dips]) if dips.any() else np.nan
    dips_ok.append(bool(dips.any() and dip_loss < 0.05 * early_loss))
    print(f"seed {seed}: later updates with explained variance < 0.2: {dips.sum() > 0}; their "
          f"median value loss under 5% of the first fifth's: {dips_ok[-1]}; the critic's RMS "
          f"error sqrt(2 x value loss) there {np.sqrt(2 * dip_loss):.3f}, in the first fifth "
          f"{np.sqrt(2 * early_loss):.2f}")

# %% [markdown]
# The dips come when the value loss is tiny. Explained variance
# $1 - \mathrm{Var}(G - V)/\mathrm{Var}(G)$ near 0 says $\mathrm{Var}(G) \approx
# \mathrm{Var}(G - V)$, which is at most the mean squared error $2 \times$ value loss: in those
# batches the returns themselves vary by no more than about the critic's small RMS error
# printed above. Why would the returns hardly vary? Look at two fresh batches, one from the
# untrained policy and one from seed 0's trained policy, each with its own critic:

# %% tags=["nbval-ignore-output"]
spread = {}
for label, p in (("untrained", rc.make_actor_critic(4, 2, hidden=NET, seed=SEEDS[0])[1]),
                 ("trained", trained[0].params)):
    probe = rc.CartPole(n=8, seed=SEED + 5)
    data = rc.collect_rollout(probe, agent, p, probe.reset(seed=SEED + 5), 128,
                              np.random.default_rng(SEED + 5))
    _, g = rc.gae(data.rewards, data.values, data.next_values, data.terminated, data.truncated,
                  LESSON_PPO["gamma"], LESSON_PPO["lam"])
    spread[label] = g.std()
    print(f"{label:9s}: returns {g.mean():6.2f} +- {g.std():7.4f}, critic's error "
          f"+- {(g - data.values).std():7.4f}, explained variance "
          f"{rc.explained_variance(data.values.ravel(), g.ravel()):6.3f}")

# %%
print(f"the trained policy's returns vary less than a tenth as much as the untrained one's: "
      f"{spread['trained'] < 0.1 * spread['untrained']}")
assert all(dips_ok) and spread["trained"] < 0.1 * spread["untrained"]

# %% [markdown]
# Once the pole stays up for hundreds of steps, every state's return is close to
# $1/(1-\gamma) = 50$: the returns hardly vary (less than a tenth of the untrained policy's
# spread, asserted), so a critic error that is tiny in absolute terms can be as large as their
# whole spread. Explained variance near 0 then means "no better than a constant", and a
# constant is nearly perfect. This final critic is not in a dip: on its probe it predicts
# most of even that small spread. Read explained variance next to the value loss: near 0 or
# negative *while the value loss is large* is a critic that does not learn.
#
# **Troubleshooting, demonstrated.** The first row of the table in *Pitfalls*: a learning rate
# 20 times larger ($0.1$), no annealing, against the lesson's rate without annealing, and
# early stopping: `rc.ppo(..., target_kl=0.02)` ends an update's epochs once an epoch's mean
# approx KL has passed 0.02. (This is a variant of the rule in Spinning Up's and
# Stable-Baselines3's PPO, which check the KL *before* each gradient step, per minibatch in
# SB3, and stop at $1.5 \times$ `target_kl`; `rc.ppo` checks after the epoch's steps, so an
# update can overshoot the target by one epoch.) In the same sweep, one run per seed for each of the "details" the
# *37 implementation details* write-up (Huang et al., 2022) lists, switched off (or on) one at
# a time: advantage normalisation, value clipping (off in `rc.ppo`, so here switched on),
# gradient clipping, orthogonal initialisation (replaced by PyTorch's default for linear
# layers, which also drops the 0.01 scale of the policy's last layer) and annealing. 24 runs of 25 000 steps, half the budget above, where the runs are
# still learning.

# %%
def pytorch_default_init(seed):
    """PyTorch's nn.Linear default: weights and biases uniform in +-1/sqrt(fan_in)."""
    init_rng = np.random.default_rng(seed)

    def mlp(sizes):
        return [{"w": (init_rng.uniform(-1, 1, (n_in, n_out)) / np.sqrt(n_in)).astype(np.float32),
                 "b": (init_rng.uniform(-1, 1, n_out) / np.sqrt(n_in)).astype(np.float32)}
                for n_in, n_out in zip(sizes[:-1], sizes[1:])]

    return {"actor": mlp([4, *NET, 2]), "critic": mlp([4, *NET, 1])}


HIGH_LR, TARGET_KL, SHORT = 0.1, 0.02, 25_000
no_annealing = dict(anneal_lr=False, anneal_clip=False)
experiments = side_by_side({
    "lr 5e-3, no annealing": no_annealing,
    f"lr {HIGH_LR:g}, no annealing": dict(no_annealing, lr=HIGH_LR),
    f"lr {HIGH_LR:g}, target_kl {TARGET_KL:g}": dict(no_annealing, lr=HIGH_LR, target_kl=TARGET_KL),
    "all details": {},
    "no advantage normalisation": dict(norm_adv=False),
    "with value clipping 0.2": dict(vf_clip=0.2),
    "no gradient clipping": dict(max_grad_norm=None),
    "PyTorch's default init": {},
}, SHORT, inits={"PyTorch's default init": pytorch_default_init})


def learning_speed(run):
    """Mean return of all the run's training episodes: higher = learned sooner."""
    return float(np.mean(run.episode_returns))


# %% tags=["nbval-ignore-output"]
print(f"{8 * len(SEEDS)} runs of {SHORT:,} steps side by side in {experiments['all details'][0].wall_time:.1f} s")
print("setting                       seed  mean training return  last mean of 20  median KL  "
      "clip fraction  epochs run")
for name, runs in experiments.items():
    for seed, run in zip(SEEDS, runs):
        h = run.history
        print(f"{name:29s} {seed:4d}  {learning_speed(run):20.1f}  {h['mean_return'][-1]:15.1f}  "
              f"{np.median(h['approx_kl']):9.4f}  {np.median(h['clip_fraction']):13.3f}  "
              f"{np.mean(h['epochs']):10.1f}")

# %% [markdown]
# The learning-rate demo, in returns and in the diagnostic that should have warned you:

# %%
lr_runs = {name: experiments[name] for name in list(experiments)[:3]}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for colour, (name, runs) in zip(("C0", "C3", "C2"), lr_runs.items()):
    for k, run in enumerate(runs):
        label = name if k == 0 else None
        axes[0].plot(run.history["steps"], run.history["mean_return"], color=colour, lw=1,
                     label=label)
        axes[1].plot(run.history["steps"], run.history["approx_kl"], color=colour, lw=1,
                     label=label)
axes[0].set_ylabel("mean return of the last 20 episodes")
axes[0].set_title("lr 0.1 falls back, target_kl or not")
axes[1].axhline(TARGET_KL, ls="--", lw=1, color="gray", label=f"target_kl {TARGET_KL:g}")
axes[1].set_yscale("log")
axes[1].set_ylabel("approx KL per update")
axes[1].set_title("its KL is far higher; target_kl holds it lower")
for ax in axes:
    ax.set_xlabel("environment steps")
axes[0].legend(fontsize=9)
axes[1].legend(fontsize=9)
plt.tight_layout()
plt.show()

# %%
def median_of(runs, fn):
    return float(np.median([fn(run) for run in runs]))


calm, wild, stopped = lr_runs.values()
kl = [median_of(runs, lambda r: np.median(r.history["approx_kl"])) for runs in lr_runs.values()]
kl_start = [median_of(runs, lambda r: np.median(r.history["approx_kl"][:10]))
            for runs in lr_runs.values()]
last = [median_of(runs, lambda r: r.history["mean_return"][-1]) for runs in lr_runs.values()]
epochs_run = median_of(stopped, lambda r: np.mean(r.history["epochs"]))
print(f"lr {HIGH_LR:g}: median KL more than 5x the calm rate's: {kl[1] > 5 * kl[0]}, already in "
      f"the first 10 updates: {kl_start[1] > 5 * kl_start[0]}")
print(f"lr {HIGH_LR:g}: median final mean of 20 below the calm rate's: {last[1] < last[0]}")
print(f"with target_kl {TARGET_KL:g}: fewer than half the epochs run: "
      f"{epochs_run < LESSON_PPO['epochs'] / 2}; median KL at most half of lr {HIGH_LR:g}'s "
      f"without it: {kl[2] <= kl[1] / 2}; median final mean of 20 still below the calm rate's: "
      f"{last[2] < last[0]}")
assert kl[1] > 5 * kl[0] and kl_start[1] > 5 * kl_start[0] and last[1] < last[0]
assert epochs_run < LESSON_PPO["epochs"] / 2 and kl[2] <= kl[1] / 2 and last[2] < last[0]

# %% [markdown]
# A learning rate that is too high shows in the KL from the first updates, while the returns
# still rise for a while (the red curves). Early stopping does what it says: it ends each
# update after a few epochs, once an epoch's KL passes the target. That keeps the *median*
# per-update KL near the target (the table's KL column); single updates still overshoot it
# well (the green curve on the right), since the check comes after an epoch's steps. It cannot undo what the epochs it did run have done: at this rate even
# the few epochs per update that remain keep the returns below the calm rate's. Lower the
# learning rate first; treat `target_kl` as a guard rail, not a fix.
#
# **The implementation details**, each ablated once with three seeds at the same budget:

# %%
details = ["all details", "no advantage normalisation", "with value clipping 0.2",
           "no gradient clipping", "PyTorch's default init", "lr 5e-3, no annealing"]
speeds = {name: [learning_speed(run) for run in experiments[name]] for name in details}
fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
for k, name in enumerate(details):
    ax.plot([k] * len(SEEDS), speeds[name], "o", color="C0" if k else "k", alpha=0.7,
            label="one run (seed)" if k == 1 else ("the baseline's runs" if k == 0 else None))
ax.axhspan(min(speeds["all details"]), max(speeds["all details"]), color="gray", alpha=0.15,
           label="the baseline's range")
ax.set_xticks(range(len(details)))
ax.set_xticklabels(["all details\n(the baseline)", "no advantage\nnormalisation",
                    "with value\nclipping 0.2", "no gradient\nclipping", "PyTorch's\ndefault init",
                    "no annealing\n(lr 5e-3)"], fontsize=9)
ax.set_ylabel("mean return of all training episodes")
ax.set_title("one detail at a time, 3 seeds each, 25 000 steps")
ax.legend(fontsize=9)
plt.tight_layout()
plt.show()

# %%
baseline_worst, baseline_best = min(speeds["all details"]), max(speeds["all details"])
for name in details[1:]:
    print(f"{name:27s}: all three runs below the baseline's worst: "
          f"{max(speeds[name]) < baseline_worst!s:5s}  all three above the baseline's best: "
          f"{min(speeds[name]) > baseline_best}")
widest = max(max(v) - min(v) for v in speeds.values())
medians = {name: np.median(v) for name, v in speeds.items()}
rank = sorted(medians, key=medians.get, reverse=True).index("all details") + 1
above = sum(run > baseline_best for name in details[1:] for run in speeds[name])
print(f"the baseline's median ranks {rank} of {len(details)}; {above} of "
      f"{3 * (len(details) - 1)} runs of the other settings lie above the baseline's best")
print(f"the widest spread of one setting's three runs is wider than the spread of the six "
      f"settings' medians: {widest > max(medians.values()) - min(medians.values())}")
assert all(max(speeds[name]) >= baseline_worst for name in details[1:])
assert widest > max(medians.values()) - min(medians.values())

# %% [markdown]
# Read the printed lines in both directions. Removing any one detail did not make all three
# runs worse than the baseline's worst. In the other direction the picture looks like the
# opposite of the write-up's advice: in this run the baseline with every detail has one of
# the lowest medians (its rank is printed), and most runs of the other settings lie above its
# best, some settings with all three runs. Does removing details help, then? Three seeds
# cannot say: the spread between the three runs of one setting is wider than the spread
# between the settings' medians, so other seeds reorder the settings. Do not read the order
# of the dots as a ranking, in either direction. On CartPole, none of these five is what
# makes PPO work. They were tuned on harder tasks (Atari, MuJoCo), where the studies in
# *Further reading* found some to matter a lot and others, such as value clipping, to help
# little or hurt. The lesson to take is the method, not the list: change one thing, run
# several seeds, compare at the same budget, and believe only differences larger than the
# spread.

# %% [markdown]
# ## Pitfalls
#
# | symptom | likely cause | fix |
# |---|---|---|
# | approx KL and clip fraction high (the learning-rate demo above), returns fall back | learning rate too high, too many epochs, minibatches too small | lower `lr`, fewer `epochs`, anneal `lr`; stop an update early when its KL passes `target_kl` (common targets 0.01-0.05) |
# | entropy falls to ~0 in the first updates, returns plateau low | premature commitment | lower `lr`, add `ent_coef` (0.001-0.01) |
# | logged KL and clip fraction exactly 0 while the policy changes fast (the clip never acts) | ratio always 1: "old" log-probs recomputed, detached, from the current parameters: the loss is then the unclipped policy gradient, taken again at every step (demonstrated after *Build it*) | store log-probs at collection time; measure the KL against the collecting policy |
# | KL and clip fraction exactly 0, nothing learns | the recomputed log-probs left in the graph (the ratio is identically 1, its gradient 0), or the whole loss detached | store log-probs at collection time; check gradients are nonzero |
# | policy gets *worse* as epochs increase | `max` instead of `min`, or the clipped term used alone | `min(r A, clip(r) A)`; test the clip direction as in *Check it* |
# | explained variance near 0 or negative for long | critic not learning: returns scaled badly, wrong targets, value loss weight too small | check returns against a brute-force loop; normalise rewards; raise `vf_coef` |
# | explained variance near 0 while the value loss is tiny | nothing wrong: the returns hardly vary any more (the diagnostics above) | read it next to the value loss |
# | learning stalls at the time limit (CartPole near 500) | truncation treated as termination (lesson 09) | bootstrap from $V(\text{final\_obs})$ on truncation |
# | one run looks great, the next fails | one seed is an anecdote | report several seeds (median and range), as this lesson does |
# | maximising a loss | sign: PPO *maximises* $L^\text{CLIP}$ | minimise $-L^\text{CLIP}$ |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: dual-clip PPO.** With $A < 0$ and a ratio far above $1 + \epsilon$ (an action the
#    new policy likes much more than the old one did, although it was bad), $r A$ is a huge
#    negative number and $L^\text{CLIP}$ follows it down without bound. Dual-clip PPO (Ye et
#    al., 2020) bounds the objective below by $c A$ for $A < 0$, with $c > 1$ (3 is common):
#    $\max(L^\text{CLIP}_i, c A_i)$ where $A_i < 0$. Write `dual_clip_objective(ratio,
#    advantages, eps, c=3.0)`. Beyond which ratio does a sample with $A < 0$ lose its gradient?
# 2. **Medium: a clipped value loss.** Many PPO implementations (OpenAI Baselines, CleanRL's
#    `clip_vloss`) clip the critic too: with $V_\text{old}$ the values stored at collection
#    time, $V_\text{clip} = V_\text{old} + \operatorname{clip}(V - V_\text{old}, -\epsilon,
#    \epsilon)$ and the loss is
#    $\tfrac{1}{2}\overline{\max\big((V - G)^2, (V_\text{clip} - G)^2\big)}$. Write
#    `clipped_value_loss(values, old_values, returns, eps)`, and check on the batch of *The
#    problem* that it is never below the plain value loss. Then answer in
#    `why_max_in_value_loss`: why a `max` here where $L^\text{CLIP}$ has a `min`? (a) the value
#    loss must be convex; (b) a max makes the critic learn faster; (c) both are pessimistic:
#    $L^\text{CLIP}$ is maximised, so its pessimistic choice is the smaller, and a loss is
#    minimised, so its pessimistic choice is the larger; (d) a min would let the value loss
#    become negative. (`rc.ppo(..., vf_clip=0.2)` has it; *Use it* measured what it does.)
# 3. **Hard: PPO with a KL penalty.** The PPO paper's other variant replaces the clip by a
#    penalty: maximise $\overline{r A} - \beta\,\overline{\mathrm{KL}(\pi_\text{old}(\cdot|s)\,\|\,
#    \pi_\theta(\cdot|s))}$ and adapt $\beta$ after each update: halve it if the KL came out
#    below $d_\text{targ}/1.5$, double it if above $1.5\,d_\text{targ}$. Write
#    `kl_penalty_objective(logits, old_logits, actions, advantages, beta)` (exact KL of the
#    full distributions, as in *The problem*) and `adapt_beta(beta, kl, target)`. Then rerun
#    the 60 steps of *The problem* with the penalty at $\beta = 1$ and with $\beta$ adapted
#    every 10 steps towards $d_\text{targ} = 0.01$, and answer in `where_the_penalties_end`:
#    where does each end up, next to the clip's KL? (a) both penalties hold the KL well below
#    the clip's; (b) the fixed $\beta = 1$ ends close to the clip's KL, while the adapted
#    $\beta$ ends several times above its target 0.01, above the fixed one; (c) the adapted
#    $\beta$ holds the KL at its target; (d) without a clip both run away like the plain
#    surrogate, past a nat.

# %% tags=["solution"]
def dual_clip_objective(ratio, advantages, eps, c=3.0):
    clipped = np.minimum(ratio * advantages, np.clip(ratio, 1 - eps, 1 + eps) * advantages)
    return np.where(advantages < 0, np.maximum(clipped, c * advantages), clipped)


ratio_grid = np.linspace(0.5, 5.0, 901)
slope = np.gradient(dual_clip_objective(ratio_grid, -np.ones_like(ratio_grid), 0.2, 3.0), ratio_grid)
flat = np.isclose(slope, 0.0)
print(f"A = -1, eps = 0.2, c = 3: no gradient below r = {ratio_grid[~flat].min():.2f} "
      f"and above r = {ratio_grid[~flat].max():.2f}")


# %%
assert rc.exercises.check("dual_clip_objective", dual_clip_objective)


# %% tags=["solution"]
def clipped_value_loss(values, old_values, returns, eps):
    clipped = old_values + np.clip(values - old_values, -eps, eps)
    return float(0.5 * np.mean(np.maximum((values - returns) ** 2, (clipped - returns) ** 2)))


old_values, targets = batch.values.reshape(-1), batch_returns.reshape(-1)
for shift in (0.0, 0.1, 1.0, -3.0):
    moved_values = old_values + shift
    plain = 0.5 * np.mean((moved_values - targets) ** 2)
    clipped_loss = clipped_value_loss(moved_values, old_values, targets, 0.2)
    print(f"critic moved by {shift:+.1f}: plain value loss {plain:8.3f}, clipped {clipped_loss:8.3f}")
    assert clipped_loss >= plain


# %%
assert rc.exercises.check("clipped_value_loss", clipped_value_loss)


# %% tags=["solution"]
def why_max_in_value_loss():
    return "c"


# %%
assert rc.exercises.check("why_max_in_value_loss", why_max_in_value_loss)


# %% tags=["solution"]
def kl_penalty_objective(logits, old_logits, actions, advantages, beta):
    log_p, old_log_p = rc.log_softmax(logits), rc.log_softmax(old_logits)
    picked = rc.take_along_axis(log_p, np.asarray(actions)[:, None], axis=1)
    old_picked = np.take_along_axis(np.asarray(old_log_p), np.asarray(actions)[:, None], axis=1)
    ratio = rc.exp(rc.reshape(picked, (-1,)) - old_picked[:, 0])
    kl = rc.sum(rc.exp(old_log_p) * (old_log_p - log_p), axis=1)
    return rc.mean(ratio * advantages) - beta * rc.mean(kl)


# %%
assert rc.exercises.check("kl_penalty_objective", kl_penalty_objective)


# %% tags=["solution"]
def adapt_beta(beta, kl, target):
    if kl < target / 1.5:
        return beta / 2
    if kl > target * 1.5:
        return beta * 2
    return beta


# %%
assert rc.exercises.check("adapt_beta", adapt_beta)


# %% tags=["solution"]
def reuse_batch_with_penalty(beta, target=None, steps=60, lr=3e-3):
    params, opt = params0, rc.Adam(lr)
    state = opt.init(params)
    for step in range(steps):
        _, grads = rc.value_and_grad(lambda p, beta=beta: -kl_penalty_objective(
            model(p, obs)[0], old_logits, actions, adv, beta))(params)
        params, state = opt.step(params, grads, state)
        if target is not None and step % 10 == 9:
            beta = adapt_beta(beta, mean_exact_kl(params), target)
    return mean_exact_kl(params), beta


penalty_kl = {}
for label, (beta0, target) in {"beta = 1, fixed": (1.0, None),
                               "beta adapted to KL 0.01": (1.0, 0.01)}.items():
    penalty_kl[label], beta_end = reuse_batch_with_penalty(beta0, target)
    print(f"{label:24s}: KL after 60 steps {penalty_kl[label]:.4f} (final beta {beta_end:g})")
print(f"{'the clip (eps = 0.2)':24s}: KL after 60 steps {kl_clipped[-1]:.4f}")
fixed_kl, adapted_kl = penalty_kl.values()
assert kl_clipped[-1] / 2 < fixed_kl < 2 * kl_clipped[-1] and adapted_kl > max(3 * 0.01, fixed_kl)


# %% tags=["solution"]
def where_the_penalties_end():
    return "b"


# %%
assert rc.exercises.check("where_the_penalties_end", where_the_penalties_end)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | probability ratio $r$ | "how much the policy changed" | $\pi_\theta(a\|s)/\pi_\text{old}(a\|s)$ for the action taken, from stored log-probs |
# | surrogate objective | "the PPO objective" | $\overline{r A}$: its gradient at $\theta_\text{old}$ is the policy gradient |
# | clipped surrogate | "PPO clip" | $\overline{\min(rA, \text{clip}(r, 1\pm\epsilon)A)}$: zero gradient once $r$ passes the bound in $A$'s direction; the ratio itself is not bounded |
# | clip range $\epsilon$ | "the trust region" | how far a ratio may move before its sample stops pushing (0.1-0.3) |
# | epochs, minibatches | "sample reuse" | passes over one on-policy batch; more passes, more drift |
# | approx KL | "the KL" | mean of $(r-1) - \log r$ over samples: an estimate of KL(old ‖ new), $\ge 0$ |
# | `target_kl` | "early stopping" | end an update's epochs once the approx KL passes it (`rc.ppo`: an epoch's mean, checked after the epoch; SB3 and Spinning Up: checked before each step, against $1.5\times$ the target) |
# | clip fraction | "how much got clipped" | share of samples with $\|r - 1\| > \epsilon$ |
# | explained variance | "critic quality" | $1 - \mathrm{Var}(G - V)/\mathrm{Var}(G)$ on the batch: relative to how much the returns vary |

# %% [markdown]
# ## Further reading
#
# - Schulman, Wolski, Dhariwal, Radford & Klimov (2017), *Proximal Policy Optimization
#   Algorithms*, arXiv:1707.06347: the clipped objective, the adaptive KL penalty (exercise 3)
#   and their experiments.
# - Schulman, Levine, Moritz, Jordan & Abbeel (2015), *Trust Region Policy Optimization*, ICML:
#   the KL-constrained update that PPO approximates with a clip.
# - Huang, Dossa, Raffin, Kanervisto & Wang (2022), *The 37 Implementation Details of Proximal
#   Policy Optimization*, ICLR blog track: the details (orthogonal init, Adam eps, advantage
#   normalisation, value clipping, annealing) that *Use it* ablates.
# - Engstrom et al. (2020), *Implementation Matters in Deep Policy Gradients*, ICLR: how much of
#   PPO's performance comes from code-level choices rather than the clip.
# - Andrychowicz et al. (2021), *What Matters in On-Policy Reinforcement Learning?*, ICLR: a
#   large study of PPO's hyperparameters, with recommended defaults.
# - Ye et al. (2020), *Mastering Complex Control in MOBA Games with Deep Reinforcement
#   Learning*, AAAI: dual-clip PPO (exercise 1).
# - Raffin (2020), *RL Baselines3 Zoo*, GitHub repository (DLR-RM/rl-baselines3-zoo): the tuned
#   CartPole hyperparameters of `PPO_CARTPOLE`.
