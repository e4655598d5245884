# %% [markdown]
# # 11 · Off-policy data and importance sampling
#
# *Prerequisites:* 01, 04, 08, 10
# *Time:* 40 minutes
# *You will build:* importance weights, the ordinary and weighted importance-sampling estimators and the effective sample size, and you will watch clipping, missing support and long horizons break them.

# %% [markdown]
# Every policy-gradient method so far threw its data away after one update (REINFORCE) or a few
# epochs (PPO), because the gradient formula assumes the data came from the policy being
# improved. Collecting data is the expensive part: an environment step, a robot's movement, a
# language model generating an answer that a person then has to read. This lesson is about
# reusing data collected by *another* policy, and what that costs.

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
# A recommender shows one of five articles to each visitor. The log holds what the current
# policy, the *behaviour* policy $b$, showed and whether the visitor clicked. You want to know
# how a new *target* policy $\pi$ would do **before** deploying it. The click rates are unknown
# to you (they are here, so you can check):

# %%
click_rate = np.array([0.10, 0.30, 0.05, 0.60, 0.20])
behavior = np.array([0.40, 0.25, 0.20, 0.10, 0.05])  # the logging policy favours article 0
target = np.array([0.05, 0.20, 0.05, 0.50, 0.20])  # the new policy favours article 3
true_value = float(target @ click_rate)
print(f"true value of the target policy:    {true_value:.3f}")
print(f"true value of the behaviour policy: {float(behavior @ click_rate):.3f}")


def log_data(n):
    """n logged visits: (articles shown by the behaviour policy, clicks)."""
    articles = rng.choice(5, size=n, p=behavior)
    clicks = (rng.random(n) < click_rate[articles]).astype(float)
    return articles, clicks


articles, clicks = log_data(1000)
print(f"mean click in the log (what the behaviour policy earned): {clicks.mean():.3f}")

# %% [markdown]
# The log's average estimates the behaviour policy's value, not the target's: a naive
# off-policy estimate is simply wrong. Running the target policy for 1000 more visits would
# answer the question, but that is exactly the cost you want to avoid.

# %% [markdown]
# ## The idea
#
# Any expectation under $\pi$ can be rewritten as one under $b$:
# $$\mathbb{E}_{a\sim\pi}[f(a)] = \sum_a \pi(a) f(a) = \sum_a b(a)\frac{\pi(a)}{b(a)} f(a)
#   = \mathbb{E}_{a\sim b}\big[w(a) f(a)\big],\qquad w(a) = \frac{\pi(a)}{b(a)}.$$
# Samples the target would take often but the behaviour rarely took get weights above 1; the
# others below 1. The identity needs **support**: $b(a) > 0$ wherever $\pi(a) > 0$.
#
# From $n$ logged samples with returns $G_i$ and weights $w_i$:
# - **ordinary IS** $\hat V = \frac1n\sum_i w_i G_i$ is unbiased, but its variance grows with
#   the spread of the weights;
# - **weighted IS** $\hat V = \sum_i w_i G_i / \sum_i w_i$ is biased for small $n$ (consistent
#   as $n\to\infty$) and has far lower variance; it always lies within the range of the returns;
# - the **effective sample size** $\text{ESS} = (\sum_i w_i)^2/\sum_i w_i^2$ says how many
#   equally weighted samples the data is worth: $n$ if all weights are equal, 1 if one sample
#   carries all the weight.
#
# Along a trajectory of $T$ steps the weight is a product,
# $w = \prod_{t} \pi(a_t|s_t)/b(a_t|s_t)$: its mean stays 1 but its variance grows like
# $\big(\mathbb{E}_b[w_t^2]\big)^T$, exponentially in the horizon. PPO's ratio
# $\pi_\theta/\pi_{\text{old}}$ is a one-step importance weight, and its clipping is one answer
# to that variance.

# %% [markdown]
# ## Build it
#
# **Step 1: weights.** Pick each sample's action probability under both policies.

# %%
def my_importance_weights(target_probs, behavior_probs, actions):
    target_probs, behavior_probs = np.asarray(target_probs), np.asarray(behavior_probs)
    return target_probs[actions] / behavior_probs[actions]


weights = my_importance_weights(target, behavior, articles)
print("first weights:", np.round(weights[:6], 3))
print(f"mean weight: {weights.mean():.3f} (its expectation under b is exactly 1)")
np.testing.assert_allclose(weights, rc.importance_weights(target, behavior, articles))

# %% [markdown]
# **Step 2: the two estimators and the effective sample size.**

# %%
def my_estimates(returns, weights):
    ordinary = np.mean(weights * returns)
    weighted = np.sum(weights * returns) / np.sum(weights)
    ess = np.sum(weights) ** 2 / np.sum(weights**2)
    return ordinary, weighted, ess


ordinary, weighted, ess = my_estimates(clicks, weights)
print(f"ordinary {ordinary:.3f}   weighted {weighted:.3f}   true {true_value:.3f}")
assert max(abs(ordinary - true_value), abs(weighted - true_value)) < abs(clicks.mean() - true_value)
print(f"ESS {ess:.1f} of n = {len(weights)}")
np.testing.assert_allclose((ordinary, weighted, ess), rc.importance_estimate(clicks, weights))

# %% [markdown]
# Compare both with the true value and with the log's own mean printed earlier: reweighting
# moved the estimate from the behaviour's value to the target's, using data that never came
# from the target policy. The ESS printed above says what that cost: the 1000 visits are worth
# far fewer on-policy ones, because a few large weights (article 3, which the target shows five
# times as often as the behaviour) carry much of the estimate.
# The reference:

# %%
print(inspect.getsource(rc.importance_estimate))

# %% [markdown]
# ## Check it
#
# Ordinary IS is unbiased: averaged over many independent logs, it converges to the true value.
# Weighted IS has lower variance. Repeat the whole experiment 2000 times with logs of 50 visits:

# %%
def repeat_estimates(n, repeats, clip=None):
    out = np.empty((repeats, 3))
    for i in range(repeats):
        a, r = log_data(n)
        w = rc.importance_weights(target, behavior, a, clip=clip)
        out[i] = rc.importance_estimate(r, w)
    return out


runs = repeat_estimates(50, 2000)
for name, col in (("ordinary", 0), ("weighted", 1)):
    est = runs[:, col]
    print(f"{name:8s}: mean {est.mean():.3f}  bias {est.mean() - true_value:+.3f}  std {est.std():.3f}")
print(f"mean ESS of 50 samples: {runs[:, 2].mean():.1f}")
standard_error = runs[:, 0].std() / np.sqrt(len(runs))
assert abs(runs[:, 0].mean() - true_value) < 4 * standard_error  # unbiased
assert runs[:, 1].std() < runs[:, 0].std()  # weighted: less variance

# %% [markdown]
# Missing support cannot be fixed by any amount of data. If the behaviour policy never shows
# article 4, nothing in the log says how good it is, and `rc.importance_weights` refuses:

# %% tags=["raises-exception"]
no_support = np.array([0.45, 0.25, 0.20, 0.10, 0.00])
rc.importance_weights(target, no_support, articles)

# %% [markdown]
# Computing the weights anyway silently estimates the value of a different policy. Ordinary IS
# values the target with article 4's probability mass simply lost; weighted IS values the target
# renormalised over articles 0-3. Neither is the target, however much data you collect:

# %%
a = rng.choice(5, size=200_000, p=no_support)
r = (rng.random(a.size) < click_rate[a]).astype(float)
w = target[a] / no_support[a]
print(f"ordinary IS with 200000 samples: {np.mean(w * r):.3f}   true value: {true_value:.3f}")
print(f"weighted IS with 200000 samples: {np.sum(w * r) / np.sum(w):.3f}")
print(f"target with article 4 dropped:   {target[:4] @ click_rate[:4]:.3f}, "
      f"renormalised: {target[:4] @ click_rate[:4] / target[:4].sum():.3f}")
assert abs(np.mean(w * r) - true_value) > 0.03

# %% [markdown]
# ## Use it
#
# **Clipping trades variance for bias.** Capping each weight at $c$ (truncated IS) removes the
# rare huge weights; the estimate is then biased towards the values of actions the behaviour
# takes often. Sweep $c$ on logs of 50 visits:

# %%
clips = [1.0, 2.0, 3.0, 4.5, np.inf]  # the largest weight is 0.50 / 0.10 = 5
rows = []
for c in clips:
    est = repeat_estimates(50, 1000, clip=None if np.isinf(c) else c)[:, 0]
    bias, std = est.mean() - true_value, est.std()
    rows.append((c, bias, std, np.sqrt(bias**2 + std**2)))
    print(f"clip {c:>4}: bias {bias:+.3f}  std {std:.3f}  rmse {rows[-1][3]:.3f}")
rmse = np.array([row[3] for row in rows])
assert rows[0][1] < -0.05  # clipping at 1 never up-weights: biased towards the behaviour
assert abs(rows[-1][1]) < 0.02  # no clipping: unbiased

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
labels = [str(c) for c in clips]
ax.plot(labels, [abs(row[1]) for row in rows], "o-", label="|bias|")
ax.plot(labels, [row[2] for row in rows], "s-", label="std")
ax.plot(labels, rmse, "^-", label="rmse")
ax.set_xlabel("clip c (weights capped at c)")
ax.set_ylabel("error of the ordinary estimate")
ax.set_title("Tight clipping: biased; none: noisy")
ax.legend()
plt.show()

# %% [markdown]
# **Long horizons.** Now each visitor sees $T$ articles in a row, and the target's return is
# the clicks it would collect over the whole visit. The trajectory's weight is the product of
# $T$ one-step weights. Here the target policy differs only mildly from the behaviour policy:

# %%
mild_target = 0.8 * behavior + 0.2 * target
step_second_moment = float(np.sum(mild_target**2 / behavior))
print(f"E_b[w_t^2] per step: {step_second_moment:.3f}")
horizons = [1, 5, 10, 20, 50, 100]
n = 2000
ess_fraction, max_share = [], []
for horizon in horizons:
    a = rng.choice(5, size=(horizon, n), p=behavior)
    w = rc.importance_weights(mild_target, behavior, a).prod(axis=0)
    ess_fraction.append(rc.effective_sample_size(w) / n)
    max_share.append(w.max() / w.sum())
    print(f"T = {horizon:3d}: ESS {ess_fraction[-1] * n:7.1f} of {n}, "
          f"largest weight carries {max_share[-1]:.1%} of the total")
assert ess_fraction[-1] < 0.1 < ess_fraction[0]
assert ess_fraction[-1] > step_second_moment ** -horizons[-1]  # the sample hides its worst weights

# %%
fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.semilogy(horizons, ess_fraction, "o-", label="ESS / n (measured)")
ax.semilogy(horizons, [step_second_moment ** (-h) for h in horizons], "--",
            label="$1/\\mathbb{E}[w_t^2]^T$")
ax.set_xlabel("horizon T (steps per trajectory)")
ax.set_ylabel("effective fraction of the data")
ax.set_title("Weight products: usable data shrinks exponentially")
ax.legend()
plt.show()

# %% [markdown]
# The measured ESS falls exponentially with the horizon. Over short horizons it follows the
# $1/\mathbb{E}[w_t^2]^T$ curve; over long ones it ends up far above it, because the rare huge
# weights that drive the variance up are rarely drawn in 2000 samples: a small sample even
# hides how bad its weights are. Either way, a
# policy that moves only a fifth of its probability mass leaves little usable data after a few
# dozen steps. This is why off-policy RL rarely
# uses full-trajectory importance weights: per-decision weights (only the steps before a
# reward), truncated traces (Retrace, V-trace), or, in PPO, staying close to the data's policy
# and clipping the one-step ratio.

# %% [markdown]
# ## Pitfalls
#
# - **Dividing the wrong way.** $w = \pi/b$, target over behaviour. $b/\pi$ gives a plausible
#   number and a wrong answer.
# - **Not logging the behaviour probabilities.** You need $b(a|s)$ of the action actually
#   taken, at the time it was taken. Recomputing it later from a model that has since been
#   updated gives wrong weights (in PPO: store `old_logp` during the rollout).
# - **No support.** A deterministic or epsilon-free behaviour policy never tries some actions;
#   no estimator can value them. Log with some exploration.
# - **Trusting a small ESS.** An estimate from 1000 samples with ESS 5 is an estimate from 5
#   samples; report the ESS with it.
# - **Long products.** Full-trajectory weights explode or vanish exponentially with the
#   horizon; use per-decision weights, truncation or clipping.
# - **Weighted IS with all-zero weights.** If the target never takes any logged action,
#   $\sum w = 0$ and the weighted estimate is undefined (the reference raises).

# %% [markdown]
# ## Exercises
#
# 1. **Easy: effective sample size.** `effective_sample_size(weights)` returns
#    $(\sum w)^2/\sum w^2$ as a float.
# 2. **Medium: importance weights.** `importance_weights(target_probs, behavior_probs, actions)`
#    for one shared probability row `[A]` or one row per sample `[n, A]`.
# 3. **Hard: the estimators.** `importance_estimate(returns, weights)` returning
#    `(ordinary, weighted, ess)`.

# %% tags=["solution"]
def effective_sample_size(weights):
    w = np.asarray(weights, dtype=float)
    return float(w.sum() ** 2 / np.sum(w**2))


# %%
assert rc.exercises.check("effective_sample_size", effective_sample_size)

# %% tags=["solution"]
def importance_weights(target_probs, behavior_probs, actions):
    t, b, a = np.asarray(target_probs), np.asarray(behavior_probs), np.asarray(actions)
    if t.ndim == 1:
        return t[a] / b[a]
    return np.take_along_axis(t, a[:, None], -1)[:, 0] / np.take_along_axis(b, a[:, None], -1)[:, 0]


# %%
assert rc.exercises.check("importance_weights", importance_weights)

# %% tags=["solution"]
def importance_estimate(returns, weights):
    g, w = np.asarray(returns, dtype=float), np.asarray(weights, dtype=float)
    return float(np.mean(w * g)), float(np.sum(w * g) / np.sum(w)), effective_sample_size(w)


# %%
assert rc.exercises.check("importance_estimate", importance_estimate)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | on-policy | "learn from your own data" | the update assumes the data was drawn from the policy being improved |
# | off-policy | "learn from old or others' data" | data from a behaviour policy $b$ is used to evaluate or improve a different target $\pi$ |
# | importance weight | "the ratio" | $\pi(a)/b(a)$: how much more (or less) often the target takes the logged action |
# | ordinary IS | "the unbiased one" | $\frac1n\sum w_i G_i$: unbiased, variance grows with the weights' spread |
# | weighted IS | "self-normalised IS" | $\sum w_i G_i/\sum w_i$: slightly biased, much lower variance, stays within the returns' range |
# | effective sample size | "ESS" | $(\sum w)^2/\sum w^2$: the number of equally weighted samples the weighted data is worth |
# | support | "coverage" | $b(a) > 0$ wherever $\pi(a) > 0$; without it no estimator is consistent |
# | truncated IS | "clipping the weights" | capping each weight at $c$: less variance, bias towards the behaviour policy |
# | per-decision IS | "only weight what came before" | a reward at step $t$ is weighted by the product of the first $t$ ratios only |

# %% [markdown]
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., sections 5.5-5.9:
#   ordinary and weighted importance sampling for Monte Carlo, with the infinite-variance example.
# - Precup, Sutton, Singh (2000), *Eligibility traces for off-policy policy evaluation*, ICML:
#   per-decision importance sampling and why it has lower variance.
# - Kong (1992), *A note on importance sampling using standardized weights*, and Owen (2013),
#   *Monte Carlo theory, methods and examples*, chapter 9: the effective sample size.
# - Munos et al. (2016), *Safe and efficient off-policy reinforcement learning* (Retrace), and
#   Espeholt et al. (2018), *IMPALA* (V-trace): truncated weights that keep long-horizon
#   off-policy learning stable.
# - Schulman et al. (2017), *Proximal policy optimization algorithms*: the clipped one-step
#   ratio as a way to reuse a rollout for several epochs.
# - Dudík, Langford, Li (2011), *Doubly robust policy evaluation and learning*, ICML: off-policy
#   evaluation of logged bandit data, the recommender setting above.
