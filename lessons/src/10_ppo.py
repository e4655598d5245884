# %% [markdown]
# # 10 · PPO
#
# *Prerequisites:* 08, 09
# *Time:* 50 minutes
# *You will build:* the probability ratio, PPO's clipped surrogate objective and its loss, then train CartPole to 500 and read the diagnostics that tell you when training goes wrong.

# %% [markdown]
# Actor-critic (lesson 09) uses each batch of experience for one gradient step and then throws
# it away. Experience is the expensive part, so you would like to take many steps on each
# batch. Proximal policy optimisation (PPO) is the small change to the objective that makes
# that safe, and it is the algorithm behind most applied RL today, from robot control to the
# RLHF fine-tuning of language models (lesson 12).

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
env = rc.CartPole(n=8, seed=SEED)
model, params0 = rc.make_actor_critic(4, 2, seed=SEED, dtype=np.float64)
batch = rc.collect_rollout(env, model, params0, env.reset(seed=SEED), 64, rng, dtype=np.float64)
adv, _ = rc.gae(batch.rewards, batch.values, batch.next_values, batch.terminated,
                batch.truncated, gamma=0.99, lam=0.95)
obs, actions = batch.obs.reshape(-1, 4), batch.actions.reshape(-1)
old_log_probs = batch.log_probs.reshape(-1)
adv = (adv.reshape(-1) - adv.mean()) / adv.std()
old_logits = model(params0, obs)[0]


def mean_exact_kl(params):
    """KL(pi_old || pi_new) of the full action distributions, averaged over the batch's states."""
    lp_old, lp_new = rc.log_softmax(old_logits), rc.log_softmax(model(params, obs)[0])
    return float(np.mean(np.sum(np.exp(lp_old) * (lp_old - lp_new), axis=1)))


def reuse_batch(objective, steps=60, lr=3e-3):
    """Take `steps` Adam steps maximising mean(objective(ratio, adv)): the KL after each step,
    and the final parameters."""
    params, opt = params0, rc.Adam(lr)
    state = opt.init(params)

    def loss(p):
        log_probs = rc.categorical_log_prob(model(p, obs)[0], actions)
        return -rc.mean(objective(rc.exp(log_probs - old_log_probs), adv))

    kls = []
    for _ in range(steps):
        _, grads = rc.value_and_grad(loss)(params)
        params, state = opt.step(params, grads, state)
        kls.append(mean_exact_kl(params))
    return np.array(kls), params


kl_plain, plain_params = reuse_batch(lambda ratio, a: ratio * a)
for k in (1, 10, 30, 60):
    print(f"after {k:2d} steps on one batch: KL(old || new) = {kl_plain[k - 1]:.3f}")
assert kl_plain[-1] > 1.0

# %% [markdown]
# The surrogate keeps rewarding the same moves: every step makes the good actions of this batch
# more likely, without limit, because nothing in $r A$ says "you have moved far enough". A KL
# of more than a nat, as printed after 60 steps, means the new policy has become far more
# certain on actions chosen from one batch of a random policy's noisy advantages, far outside the region where those advantages
# mean anything. The estimate was made for $\pi_\text{old}$; it is only trustworthy near it.

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
# The full loss adds a value regression and, optionally, an entropy bonus:
# $\mathcal{L} = -L^{\text{CLIP}} + c_v \tfrac{1}{2}\overline{(V(s) - G)^2} - c_e \overline{H[\pi(\cdot|s)]}$,
# with $G$ the GAE returns of lesson 09. Plot the objective of one sample against its ratio:

# %%
ratios = np.linspace(0.0, 2.0, 201)
fig, axes = plt.subplots(1, 2, figsize=(8, 3), dpi=72, sharey=True)
for ax, a in zip(axes, (1.0, -1.0)):
    ax.plot(ratios, ratios * a, "--", color="gray", label="unclipped $rA$")
    ax.plot(ratios, rc.ppo_clip_objective(ratios, np.full_like(ratios, a), 0.2), label="clipped")
    ax.axvspan(0.8, 1.2, alpha=0.1)
    ax.set_xlabel("probability ratio $r$")
    ax.set_title(f"A = {a:+.0f}: flat (no gradient) " + ("above 1.2" if a > 0 else "below 0.8"))
axes[0].set_ylabel("objective (to maximise)")
axes[0].legend(fontsize=8)
plt.show()

# %% [markdown]
# ## Build it
#
# **Step 1: the ratio.** Compute it from log-probabilities, $r = \exp(\log\pi_\theta(a|s) -
# \log\pi_\text{old}(a|s))$: a quotient of two small probabilities would lose precision. The
# old log-probabilities are the ones *stored at collection time*; recomputing them after an
# update would make every ratio 1.

# %%
def ratio_of(log_probs, old_log_probs):
    return np.exp(log_probs - old_log_probs)


new_log_probs = rc.categorical_log_prob(model(params0, obs)[0], actions)
print(f"ratios before any update: min {ratio_of(new_log_probs, old_log_probs).min():.6f}, "
      f"max {ratio_of(new_log_probs, old_log_probs).max():.6f}")

# %% [markdown]
# **Step 2: the clipped objective.** Write it for arrays of ratios and advantages, using
# `rc.minimum` and `rc.clip` so that it also runs on traced values inside `value_and_grad`.
# (Try it: replace `rc.minimum` with `rc.maximum`, rerun the next cell and read what the check
# says; then put it back.)

# %%
def clip_objective(ratio, advantages, eps):
    return rc.minimum(ratio * advantages, rc.clip(ratio, 1 - eps, 1 + eps) * advantages)


# %%
test_ratios = np.array([0.5, 0.9, 1.0, 1.1, 1.5])
for a in (2.0, -2.0):
    print(f"A = {a:+.0f}:", np.round(clip_objective(test_ratios, np.full(5, a), 0.2), 3))
np.testing.assert_allclose(clip_objective(test_ratios, np.full(5, 2.0), 0.2),
                           rc.ppo_clip_objective(test_ratios, np.full(5, 2.0), 0.2))
assert rc.exercises.check("ppo_clip_objective", clip_objective)

# %% [markdown]
# **Step 3: the loss on a minibatch.** One forward pass gives logits and values; the policy
# term uses your objective, the value term regresses on the GAE returns.

# %%
def my_ppo_loss(params, obs, actions, old_log_probs, advantages, returns, eps=0.2, vf_coef=0.5):
    logits, values = model(params, obs)
    ratio = rc.exp(rc.categorical_log_prob(logits, actions) - old_log_probs)
    policy_loss = -rc.mean(clip_objective(ratio, advantages, eps))
    value_loss = 0.5 * rc.mean(rc.square(values - returns))
    return policy_loss + vf_coef * value_loss


mb = rng.permutation(len(actions))[:64]
returns = rng.normal(size=len(actions))  # any targets will do for comparing two losses
shifted = rc.tree_map(lambda p: p.copy(), params0)
shifted["actor"][-1]["w"] *= 100.0  # a policy some way from the old one
mine = my_ppo_loss(shifted, obs[mb], actions[mb], old_log_probs[mb], adv[mb], returns[mb])
reference, stats = rc.ppo_loss(shifted, model, obs[mb], actions[mb], old_log_probs[mb], adv[mb],
                               returns[mb])
print(f"my loss {float(mine):.6f}, reference {float(reference):.6f}")
np.testing.assert_allclose(float(mine), float(reference), rtol=1e-10)

# %% [markdown]
# **Step 4: the algorithm.** Each update: collect `rollout` steps from the `n` copies with the
# current policy (storing log-probabilities and values), compute GAE, then `epochs` passes over
# the batch in shuffled minibatches, normalising each minibatch's advantages, clipping the
# global gradient norm, and annealing the learning rate. Here is the reference's loop:

# %%
print(inspect.getsource(rc.ppo))

# %% [markdown]
# Back to the problem: the same 60 steps on one batch, with the clipped objective.

# %%
kl_clipped, clipped_params = reuse_batch(lambda ratio, a: clip_objective(ratio, a, 0.2))
for k in (1, 10, 30, 60):
    print(f"after {k:2d} steps: KL plain {kl_plain[k - 1]:.3f}   KL clipped {kl_clipped[k - 1]:.4f}")
assert kl_clipped[-1] < kl_plain[-1] / 10

# %% [markdown]
# Once a sample's ratio has crossed the clip boundary its gradient is zero, so after a few
# steps hardly any sample still pushes, and the policy stops moving. The clip does not bound
# the KL exactly (nothing stops a sample that is still inside the range from dragging the
# others along), which is why PPO also limits the number of epochs and watches the KL.

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
    _, g = rc.value_and_grad(lambda p, adv=advantages: rc.sum(clip_objective(p["r"], adv, 0.2)))(
        {"r": grid.copy()})
    blocked = grid > 1.2 if a > 0 else grid < 0.8
    assert np.all(g["r"][blocked] == 0.0) and np.allclose(g["r"][~blocked], a)
    print(f"A = {a:+.1f}: gradient {np.round(g['r'], 2) + 0.0}")

# %% [markdown]
# **At the old policy PPO is the policy gradient.** When $\theta = \theta_\text{old}$ every
# ratio is 1, inside the clip range, so the gradient of $L^\text{CLIP}$ equals that of
# $\overline{\log\pi_\theta(a|s) A}$, the actor-critic gradient of lesson 09.

# %%
def pg_loss(params):
    return -rc.mean(rc.categorical_log_prob(model(params, obs)[0], actions) * adv)


def clip_loss(params):
    log_probs = rc.categorical_log_prob(model(params, obs)[0], actions)
    return -rc.mean(clip_objective(rc.exp(log_probs - old_log_probs), adv, 0.2))


g_pg = rc.grad(pg_loss)(params0)["actor"]
g_clip = rc.grad(clip_loss)(params0)["actor"]
for a, b in zip(rc.tree_leaves(g_pg), rc.tree_leaves(g_clip)):
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
print("PPO gradient at the old policy == policy gradient: True")

# %% [markdown]
# **The KL estimate is never negative.** PPO reports `approx_kl`, the per-sample estimate
# $(r - 1) - \log r$, which is $\ge 0$ for every $r > 0$ (unlike the plain log-ratio, which
# can be negative on a sample). Check it on the shifted policy from step 3:

# %%
print(f"approx KL {stats['approx_kl']:.5f}, clip fraction {stats['clip_fraction']:.3f}")
assert stats["approx_kl"] >= 0.0

# %% [markdown]
# ## Use it
#
# Train on CartPole with `rc.PPO_CARTPOLE`, the RL Zoo's tuned settings: 8 copies, rollouts of
# 32 steps, 20 epochs, learning rate $10^{-3}$ and clip range annealed to 0, GAE $\lambda = 0.8$,
# $\gamma = 0.98$, separate 64-64 tanh actor and critic, 50 000 environment steps.

# %%
print(rc.PPO_CARTPOLE)
model, params = rc.make_actor_critic(4, 2, hidden=(64, 64), seed=SEED)
result = rc.ppo(rc.CartPole(n=8, seed=SEED), model, params, seed=SEED, progress=False,
                **rc.PPO_CARTPOLE)
solved_at = result.history["steps"][np.argmax(result.history["mean_return"] >= 475)]
evaluation = rc.evaluate(rc.CartPole(n=1), rc.greedy_policy(model, result.params),
                         episodes=10, seed=SEED + 100)

# %% tags=["nbval-ignore-output"]
print(f"{result.updates} updates in {result.wall_time:.1f} s; mean of the last 20 training "
      f"episodes first >= 475 after {solved_at} steps; greedy evaluation {evaluation.mean:.1f}")

# %%
reached = bool(np.nanmax(result.history["mean_return"]) >= 475)
print(f"mean of 20 training episodes reached 475 within 50k steps: {reached}")
print(f"greedy policy, 10 evaluation episodes, mean return: {evaluation.mean:.0f}")
assert reached and evaluation.mean == 500.0
fifth = len(result.history["approx_kl"]) // 5
assert np.median(result.history["clip_fraction"]) < 0.5 and np.max(result.history["approx_kl"]) < 0.05
assert np.mean(result.history["approx_kl"][-fifth:]) < np.mean(result.history["approx_kl"][:fifth])

# %%
ax = rc.learning_curve(result, target=475)
ax.set_title("PPO on CartPole: the mean of 20 episodes climbs to 500")
plt.show()

# %% [markdown]
# **The diagnostics.** PPO logs, per update: `approx_kl` (how far each update moved the policy),
# `clip_fraction` (the share of samples whose ratio left the clip range; those on the side
# their advantage favours no longer push), `entropy` (how random the policy still is) and
# `explained_variance` $= 1 - \mathrm{Var}(G - V)/\mathrm{Var}(G)$ (how much of the returns the
# critic predicts: 1 is perfect, 0 is no better than a constant).

# %%
axes = rc.ppo_diagnostics(result)
axes[0, 0].set_title("KL stays small and shrinks as lr and clip anneal")
axes[0, 1].set_title("the clip holds back a minority of samples")
axes[1, 0].set_title("entropy falls: the policy commits")
axes[1, 1].set_title("the critic learns to predict returns")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Troubleshooting, demonstrated.** The first row of the table in *Pitfalls*: with a learning
# rate thirty times larger, each update moves the policy much further. Train both for 12 000 steps
# (no annealing, so the rates stay as set) and compare the diagnostics.

# %%
short = dict(rc.PPO_CARTPOLE, total_steps=12_000, anneal_lr=False, anneal_clip=False)
runs = {}
for lr in (1e-3, 3e-2):
    model, params = rc.make_actor_critic(4, 2, seed=SEED)
    runs[lr] = rc.ppo(rc.CartPole(n=8, seed=SEED), model, params, seed=SEED, progress=False,
                      **dict(short, lr=lr))

# %% tags=["nbval-ignore-output"]
for lr, r in runs.items():
    print(f"lr {lr:g}: median approx KL {np.median(r.history['approx_kl']):.4f}, "
          f"median clip fraction {np.median(r.history['clip_fraction']):.3f}, final entropy {r.history['entropy'][-1]:.3f}")

# %%
kl_ratio = np.median(runs[3e-2].history["approx_kl"]) / np.median(runs[1e-3].history["approx_kl"])
clip_ratio = np.median(runs[3e-2].history["clip_fraction"]) / np.median(runs[1e-3].history["clip_fraction"])
print(f"the large learning rate's median KL is more than 3x the preset's: {kl_ratio > 3}")
print(f"its median clip fraction more than 2x, its final entropy lower: {clip_ratio > 2}, "
      f"{runs[3e-2].history['entropy'][-1] < runs[1e-3].history['entropy'][-1]}")
assert kl_ratio > 3 and clip_ratio > 2 and runs[3e-2].history["entropy"][-1] < runs[1e-3].history["entropy"][-1]

# %%
axes = rc.ppo_diagnostics(list(runs.values()), labels=[f"lr {lr:g}" for lr in runs])
axes[0, 0].set_title("lr 3e-2: KL spikes")
axes[0, 1].set_title("and far more samples are clipped")
axes[1, 0].set_title("entropy collapses early")
axes[1, 1].set_title("explained variance does not flag it")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Pitfalls
#
# | symptom | likely cause | fix |
# |---|---|---|
# | approx KL and clip fraction spike (KL > 0.05, clip fraction > 0.3), returns collapse | learning rate too high, too many epochs, minibatches too small | lower `lr`, fewer `epochs`, anneal `lr`; stop an update early when KL passes a target |
# | entropy falls to ~0 in the first updates, returns plateau low | premature commitment | lower `lr`, add `ent_coef` (0.001-0.01) |
# | KL and clip fraction exactly 0, nothing learns | ratio always 1: old log-probs recomputed after the update, or the loss detached | store log-probs at collection time; check gradients are nonzero |
# | policy gets *worse* as epochs increase | `max` instead of `min`, or the clipped term used alone | `min(r A, clip(r) A)`; test the clip direction as in *Check it* |
# | explained variance near 0 or negative for long | critic not learning: returns scaled badly, wrong targets, value loss weight too small | check returns against a brute-force loop; normalise rewards; raise `vf_coef` |
# | learning stalls at the time limit (CartPole near 500) | truncation treated as termination (lesson 09) | bootstrap from $V(\text{final\_obs})$ on truncation |
# | runs differ wildly between seeds | unnormalised advantages, too-short rollouts | `norm_adv=True`, longer rollouts or more copies; always report several seeds |
# | maximising a loss | sign: PPO *maximises* $L^\text{CLIP}$ | minimise $-L^\text{CLIP}$ |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the clip fraction.** Write `clip_fraction(ratio, eps)`: the share of samples whose
#    ratio lies outside $[1-\epsilon, 1+\epsilon]$. Measure it, for $\epsilon = 0.2$, on the
#    batch of *The problem* after the 60 plain and the 60 clipped steps: how much of the batch
#    did each leave outside the range?
# 2. **Medium: an approximate KL.** Write `approx_kl(new_log_probs, old_log_probs)`: the mean
#    over samples of $(r - 1) - \log r$ with $r = \exp(\text{new} - \text{old})$.
# 3. **Hard: a clipped value loss.** Many PPO implementations (Huang et al., 2022) clip the critic
#    too: with $V_\text{old}$ the values stored at collection time,
#    $V_\text{clip} = V_\text{old} + \operatorname{clip}(V - V_\text{old}, -\epsilon, \epsilon)$ and the
#    loss is $\tfrac{1}{2}\overline{\max\big((V - G)^2, (V_\text{clip} - G)^2\big)}$. Write
#    `clipped_value_loss(values, old_values, returns, eps)`. Why a `max` here where
#    $L^\text{CLIP}$ has a `min`? Check on the batch of *The problem* that it is never below the
#    plain value loss. (The studies by Engstrom et al. and Andrychowicz et al. found it does not
#    reliably help, which is why `rc.ppo` leaves it out.)

# %% tags=["solution"]
def clip_fraction(ratio, eps):
    return float(np.mean(np.abs(np.asarray(ratio) - 1.0) > eps))


for name, p in (("plain", plain_params), ("clipped", clipped_params)):
    moved_log_probs = rc.categorical_log_prob(model(p, obs)[0], actions)
    print(f"after 60 {name} steps: clip fraction "
          f"{clip_fraction(ratio_of(moved_log_probs, old_log_probs), 0.2):.3f}")

# %%
assert rc.exercises.check("clip_fraction", clip_fraction)

# %% tags=["solution"]
def approx_kl(new_log_probs, old_log_probs):
    log_ratio = np.asarray(new_log_probs) - np.asarray(old_log_probs)
    return float(np.mean(np.expm1(log_ratio) - log_ratio))


# %%
assert rc.exercises.check("approx_kl", approx_kl)


# %% tags=["solution"]
def clipped_value_loss(values, old_values, returns, eps):
    clipped = old_values + np.clip(values - old_values, -eps, eps)
    return float(0.5 * np.mean(np.maximum((values - returns) ** 2, (clipped - returns) ** 2)))


_, batch_returns = rc.gae(batch.rewards, batch.values, batch.next_values, batch.terminated,
                          batch.truncated, gamma=0.99, lam=0.95)
old_values, batch_returns = batch.values.reshape(-1), batch_returns.reshape(-1)
for shift in (0.0, 0.1, 1.0, -3.0):
    moved = old_values + shift
    plain = 0.5 * np.mean((moved - batch_returns) ** 2)
    clipped_loss = clipped_value_loss(moved, old_values, batch_returns, 0.2)
    print(f"critic moved by {shift:+.1f}: plain value loss {plain:8.3f}, clipped {clipped_loss:8.3f}")
    assert clipped_loss >= plain


# %%
assert rc.exercises.check("clipped_value_loss", clipped_value_loss)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | probability ratio $r$ | "how much the policy changed" | $\pi_\theta(a\|s)/\pi_\text{old}(a\|s)$ for the action taken, from stored log-probs |
# | surrogate objective | "the PPO objective" | $\overline{r A}$: its gradient at $\theta_\text{old}$ is the policy gradient |
# | clipped surrogate | "PPO clip" | $\overline{\min(rA, \text{clip}(r, 1\pm\epsilon)A)}$: zero gradient once $r$ passes the bound in $A$'s direction |
# | clip range $\epsilon$ | "the trust region" | how far a ratio may move before its sample stops pushing (0.1-0.3) |
# | epochs, minibatches | "sample reuse" | passes over one on-policy batch; more passes, more drift |
# | approx KL | "the KL" | mean of $(r-1) - \log r$ over samples: an estimate of KL(old ‖ new), $\ge 0$ |
# | clip fraction | "how much got clipped" | share of samples with $\|r - 1\| > \epsilon$ |
# | explained variance | "critic quality" | $1 - \mathrm{Var}(G - V)/\mathrm{Var}(G)$ on the batch |

# %% [markdown]
# ## Further reading
#
# - Schulman, Wolski, Dhariwal, Radford & Klimov (2017), *Proximal Policy Optimization
#   Algorithms*, arXiv:1707.06347: the clipped objective and its experiments.
# - Schulman, Levine, Moritz, Jordan & Abbeel (2015), *Trust Region Policy Optimization*, ICML:
#   the KL-constrained update that PPO approximates with a clip.
# - Huang, Dossa, Raffin, Kanervisto & Wang (2022), *The 37 Implementation Details of Proximal
#   Policy Optimization*, ICLR blog track: the details (orthogonal init, Adam eps, advantage
#   normalisation, annealing) that separate a working PPO from a broken one.
# - Engstrom et al. (2020), *Implementation Matters in Deep Policy Gradients*, ICLR: how much of
#   PPO's performance comes from code-level choices rather than the clip.
# - Andrychowicz et al. (2021), *What Matters in On-Policy Reinforcement Learning?*, ICLR: a
#   large study of PPO's hyperparameters, with recommended defaults.
# - Raffin (2020), *RL Baselines3 Zoo*, GitHub repository (DLR-RM/rl-baselines3-zoo): the tuned
#   CartPole settings used by `PPO_CARTPOLE`.
