# %% [markdown]
# # 11 · Off-policy data and importance sampling
#
# *Prerequisites:* 01, 04, 08, 10
# *Time:* 75 minutes
# *You will build:* importance weights that refuse data without support, the ordinary and weighted estimators, a scale-free effective sample size, per-decision importance sampling for trajectories, and the doubly robust estimator.

# %% [markdown]
# Every policy-gradient method so far threw its data away after one update (REINFORCE) or a few
# epochs (PPO), because the gradient formula assumes the data came from the policy being
# improved. Collecting data is the expensive part: an environment step, a robot's movement, a
# language model generating an answer that a person then has to read. This lesson is about
# reusing data collected by *another* policy, and what that costs. Its last section shows that
# the RL trainers of today's language models face the same question even when they think they
# are on-policy.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
plt.rcParams.update({"font.size": 10})

# %% [markdown]
# ## The problem
#
# A news site shows one of five articles to each visitor. Visitors come in three kinds (0, 1, 2),
# which the site can tell apart. The log holds, for each visit, the visitor's kind $x$, the
# article $a$ that the current policy, the *behaviour* policy $b(a|x)$, chose, whether the visitor
# clicked ($r = 1$) or not, and the probability $b(a|x)$ with which that article was chosen (the
# *propensity*). You want to know how a new *target* policy $\pi(a|x)$ would do **before**
# deploying it. The click rates are unknown to the site (you know them here, so you can check):

# %%
visitor_mix = np.array([0.5, 0.3, 0.2])  # how often each kind of visitor comes
click_rate = np.array([[0.10, 0.30, 0.05, 0.60, 0.20],  # [kind, article]
                       [0.25, 0.10, 0.15, 0.10, 0.05],
                       [0.05, 0.40, 0.30, 0.45, 0.10]])
behavior = np.array([[0.50, 0.20, 0.15, 0.10, 0.05],  # b(a | x): the policy that wrote the log
                     [0.10, 0.10, 0.20, 0.50, 0.10],
                     [0.10, 0.10, 0.10, 0.10, 0.60]])
target = np.array([[0.05, 0.20, 0.05, 0.50, 0.20],  # pi(a | x): the policy you want to evaluate
                   [0.40, 0.05, 0.20, 0.30, 0.05],
                   [0.05, 0.20, 0.10, 0.25, 0.40]])


def policy_value(policy):
    """Exact expected click rate: sum over kinds and articles."""
    return float(visitor_mix @ np.sum(policy * click_rate, axis=1))


true_value = policy_value(target)
print(f"true value of the target policy:    {true_value:.3f}")
print(f"true value of the behaviour policy: {policy_value(behavior):.3f}")


def log_visits(shape, logging_policy=behavior):
    """Visits logged by `logging_policy`: kinds, articles and clicks, each of `shape`
    ((n,) for one log, (R, n) for R independent logs)."""
    kinds = rng.choice(3, size=shape, p=visitor_mix)
    articles = np.empty(shape, dtype=int)
    for k in range(3):
        here = kinds == k
        articles[here] = rng.choice(5, size=int(here.sum()), p=logging_policy[k])
    clicks = (rng.random(shape) < click_rate[kinds, articles]).astype(float)
    return kinds, articles, clicks


kinds, articles, clicks = log_visits(1000)
propensities = behavior[kinds, articles]  # logged with each visit
log_mean, log_se = clicks.mean(), clicks.std() / np.sqrt(clicks.size)
print(f"mean click in the log: {log_mean:.3f} +- {log_se:.3f} (one standard error)")
assert abs(log_mean - policy_value(behavior)) < 4 * log_se < abs(log_mean - true_value)

# %% [markdown]
# The log's average is, within its standard error, the behaviour's value, and many standard
# errors away from the target's: a naive off-policy estimate is simply wrong. Running the target
# for 1000 visits would answer the question, but that is the cost you want to avoid.

# %% [markdown]
# ## The idea
#
# Any expectation under $\pi$ can be rewritten as one under $b$, context by context:
# $$\mathbb{E}_{x,\,a\sim\pi}[r] = \sum_x p(x)\sum_a \pi(a|x)\,q(x,a)
#   = \sum_x p(x)\sum_a b(a|x)\frac{\pi(a|x)}{b(a|x)}\,q(x,a)
#   = \mathbb{E}_{x,\,a\sim b}\big[w\,r\big],\qquad w = \frac{\pi(a|x)}{b(a|x)},$$
# where $q(x, a)$ is the expected reward. Articles the target shows more often than the
# behaviour get weights above 1, the others below 1. The identity needs **support**:
# $b(a|x) > 0$ wherever $\pi(a|x) > 0$.
#
# From $n$ logged samples with returns $G_i$ and weights $w_i$:
# - **ordinary IS** $\hat V = \frac1n\sum_i w_i G_i$ is unbiased; its variance grows with the
#   spread of the weights;
# - **weighted IS** $\hat V = \sum_i w_i G_i / \sum_i w_i$ always lies within the range of the
#   returns, is biased for small $n$ and consistent as $n\to\infty$; whether and by how much it
#   lowers the variance you will measure;
# - the **effective sample size** $\text{ESS} = (\sum_i w_i)^2/\sum_i w_i^2$ says how many
#   equally weighted samples the data is worth: $n$ if all weights are equal, 1 if one sample
#   carries all the weight. It does not change when every weight is multiplied by the same
#   number, which is how to compute it without overflow.
#
# **Trajectories.** When an episode has $T$ steps with ratios $\rho_t = \pi(a_t|s_t)/b(a_t|s_t)$,
# the weight of the whole trajectory is the product $W = \prod_t \rho_t$: its mean stays 1, but
# when the steps' ratios are independent its second moment is
# $\mathbb{E}_b[W^2] = \big(\mathbb{E}_b[\rho^2]\big)^T$, exponential in the horizon. A reward
# $r_t$ cannot depend on the actions after step $t$, and the ratios of those later steps average
# to 1 ($\mathbb{E}_b[\rho] = \sum_a b\,\pi/b = 1$), so they only add noise. **Per-decision IS**
# (Precup et al., 2000) drops them:
# $$\hat V_{\text{PD}} = \frac1n\sum_i\sum_t \gamma^t\, w_{i,t}\, r_{i,t},\qquad
#   w_{i,t} = \rho_{i,0}\,\rho_{i,1}\cdots\rho_{i,t},$$
# still unbiased; **weighted per-decision IS** normalises each step's weights,
# $\sum_t \gamma^t \sum_i w_{i,t} r_{i,t} / \sum_i w_{i,t}$.
#
# **A model of the reward.** If you have a model $\hat q(x, a)$ of the expected reward (a
# regression fitted on other data), the **direct method** (DM) evaluates the target on it,
# $\frac1n\sum_i\sum_a \pi(a|x_i)\hat q(x_i,a)$: no weights, little variance, as biased as the
# model. The **doubly robust** estimator (DR; Dudík et al., 2011) adds the importance-weighted
# error of the model on the logged actions:
# $$\hat V_{\text{DR}} = \frac1n\sum_i\Big[\sum_a \pi(a|x_i)\,\hat q(x_i,a)
#   + w_i\big(r_i - \hat q(x_i,a_i)\big)\Big].$$
# If the weights are right, the correction's expectation is exactly the model's error, so the
# model's bias cancels; if the model is right, $r_i - \hat q(x_i, a_i)$ has mean 0 whatever the
# weights. Either one right is enough.
#
# **Truncation.** Capping each weight, $\min(w, c)$ (*truncated* IS), removes the rare huge
# weights; its price you will measure in Use it. PPO's ratio (lesson 10) is a one-step importance
# weight, and its clipped objective is another way of keeping such weights from running away.

# %% [markdown]
# ## Build it
#
# **Step 1: weights.** Pick each sample's action probability under both policies and divide.
# Before dividing, refuse data that cannot answer the question: if the behaviour gives
# probability 0 to an action that the target takes, that action never appears in the log, and no
# weighting can say how good it is. Raise `ValueError` then, whether or not such an action was
# logged (when it was, the data did not even come from $b$).

# %% tags=["solution"]
def my_importance_weights(target_probs, behavior_probs, actions):
    """pi(a) / b(a) for each logged action. The probability arguments are one row [A] shared by
    every sample, or one row per sample [n, A]; actions [n]. Raises ValueError without support."""
    t, b, a = np.asarray(target_probs), np.asarray(behavior_probs), np.asarray(actions)
    if np.any((b == 0) & (t > 0)):
        raise ValueError("no support: the behaviour never takes an action that the target takes")
    if t.ndim == 1:
        return t[a] / b[a]
    rows = np.arange(len(a))
    return t[rows, a] / b[rows, a]


# %%
assert rc.exercises.check("importance_weights", my_importance_weights)

# %% [markdown]
# The reference, on the log: each visit's rows are its kind's rows.

# %%
weights = rc.importance_weights(target[kinds], behavior[kinds], articles)
print("first weights:", np.round(weights[:6], 3))
weight_se = weights.std() / np.sqrt(weights.size)
print(f"mean weight: {weights.mean():.3f} +- {weight_se:.3f} (its expectation under b is exactly 1)")
assert abs(weights.mean() - 1) < 4 * weight_se

# %% [markdown]
# **Step 2: the two estimators.** Return `(ordinary, weighted)`. When every weight is 0 (the
# target takes none of the logged actions), the weighted estimate is 0/0: raise `ValueError`.

# %% tags=["solution"]
def my_is_estimates(returns, weights):
    """(ordinary, weighted) importance-sampling estimates from returns [n] and weights [n]."""
    g, w = np.asarray(returns, dtype=float), np.asarray(weights, dtype=float)
    if w.sum() == 0:
        raise ValueError("every weight is 0: the weighted estimate is undefined")
    return np.mean(w * g), np.sum(w * g) / np.sum(w)


# %%
assert rc.exercises.check("is_estimates", my_is_estimates)

# %%
estimate = rc.importance_estimate(clicks, weights)
print(f"ordinary {estimate.ordinary:.3f}   weighted {estimate.weighted:.3f}   "
      f"true {true_value:.3f}   log mean {log_mean:.3f}")
assert max(abs(estimate.ordinary - true_value), abs(estimate.weighted - true_value)) < abs(log_mean - true_value)

# %% [markdown]
# On this one log, both estimates landed closer to the target's value than the log's mean did,
# using data that never came from the target. One log proves little: Check it repeats the
# experiment thousands of times.
#
# **Step 3: the effective sample size**, computed so that it survives any scale of weights:
# `[2**600, 0, 1]` (whose squares overflow) and `[1e-200, 1e-200]` (whose squares underflow to 0)
# are in the checker. Raise `ValueError` if every weight is 0.

# %% tags=["solution"]
def my_effective_sample_size(weights):
    """(sum w)^2 / sum w^2, for weights of any scale."""
    w = np.asarray(weights, dtype=float)
    if w.max() == 0:
        raise ValueError("every weight is 0")
    u = w / w.max()  # the ESS is the same for w and w / max(w), whose squares cannot overflow
    return u.sum() ** 2 / np.sum(u * u)


# %%
assert rc.exercises.check("effective_sample_size", my_effective_sample_size)

# %%
ess = rc.effective_sample_size(weights)
print(f"ESS {ess:.0f} of n = {weights.size}")
largest = weights == weights.max()
print(f"the largest weight, {weights.max():.1f}: {largest.mean():.1%} of the visits, "
      f"{weights[largest].sum() / weights.sum():.1%} of the total weight")
assert ess < 0.6 * weights.size and weights[largest].sum() / weights.sum() > 3 * largest.mean()

# %% [markdown]
# The 1000 visits are worth about the ESS printed above in equally weighted samples, because a
# few visits carry a large share of the weight: article 3 shown to a kind-0 visitor, which the
# target shows five times as often as the behaviour.
#
# **Step 4: per-decision IS.** Now a visit lasts $T$ page views. Each view shows an article; the
# kind of visitor stays the same; showing the same article twice in a row halves its click rate,
# so a reward depends on the previous action too. The target's expected clicks per visit are
# computed exactly below. The data: `rewards[i, t]`, the click after view $t$ of visit $i$, and
# `ratios[i, t]` $= \pi(a_t|x_i)/b(a_t|x_i)$ of that view. Return `(ordinary, weighted)`
# per-decision estimates of $\mathbb{E}_\pi[\sum_t \gamma^t r_t]$.

# %%
REPEAT_FACTOR = 0.5  # the same article twice in a row: half the click rate


def visit_value(policy, horizon):
    """Exact expected clicks in a visit of `horizon` views: the first view cannot be a repeat;
    each later view repeats the previous article with probability policy(a|x)."""
    first = np.sum(policy * click_rate, axis=1)
    later = np.sum(policy * click_rate * (1 - (1 - REPEAT_FACTOR) * policy), axis=1)
    return float(visitor_mix @ (first + (horizon - 1) * later))


def log_visit_sequences(shape, horizon):
    """Visits of `horizon` views logged by the behaviour: kinds `shape`, articles and clicks
    `shape + (horizon,)`."""
    kinds = rng.choice(3, size=shape, p=visitor_mix)
    articles = np.empty(shape + (horizon,), dtype=int)
    for k in range(3):
        here = kinds == k
        articles[here] = rng.choice(5, size=(int(here.sum()), horizon), p=behavior[k])
    previous = np.concatenate([np.full(shape + (1,), -1), articles[..., :-1]], axis=-1)
    p_click = click_rate[kinds[..., None], articles] * np.where(articles == previous, REPEAT_FACTOR, 1.0)
    clicks = (rng.random(p_click.shape) < p_click).astype(float)
    return kinds, articles, clicks


# %% tags=["solution"]
def my_per_decision(rewards, ratios, gamma):
    """(ordinary, weighted) per-decision IS from rewards [n, T] and per-step ratios [n, T]."""
    r, rho = np.asarray(rewards, dtype=float), np.asarray(ratios, dtype=float)
    w = np.cumprod(rho, axis=1)  # w[i, t] = rho[i, 0] * ... * rho[i, t], within each episode
    discount = gamma ** np.arange(r.shape[1])
    ordinary = np.mean(np.sum(discount * w * r, axis=1))
    weighted = np.sum(discount * np.sum(w * r, axis=0) / np.sum(w, axis=0))
    return ordinary, weighted


# %%
assert rc.exercises.check("per_decision_is", my_per_decision)

# %% [markdown]
# The reference works with log-weights, so that products of hundreds of ratios neither overflow
# nor underflow:

# %%
print(inspect.getsource(rc.per_decision_estimate))

# %% [markdown]
# On 300 visits of 10 views, against the exact value. Over a whole visit the full target is too
# far from the behaviour for 300 visits (you will see why in Use it), so evaluate a target that
# has moved 30% of the way from the behaviour to it. A table of the fifteen ratios
# `visit_ratio[x, a]` turns each view's kind and article into its ratio:

# %%
visit_target = 0.7 * behavior + 0.3 * target
visit_ratio = visit_target / behavior
seq_kinds, seq_articles, seq_clicks = log_visit_sequences((300,), 10)
seq_ratios = visit_ratio[seq_kinds[:, None], seq_articles]
pd_estimate = rc.per_decision_estimate(seq_clicks, seq_ratios)
print(f"per-decision {pd_estimate.ordinary:.2f}   weighted per-decision {pd_estimate.weighted:.2f}   "
      f"true {visit_value(visit_target, 10):.2f}   log mean {seq_clicks.sum(axis=1).mean():.2f}")

# %% [markdown]
# One log again; Use it measures these estimators' errors over many logs and horizons.

# %% [markdown]
# **Step 5: doubly robust.** The arguments follow how logs and models are stored: `rewards`,
# `actions` and `propensities` $b(a_i|x_i)$ are `[n]`; `target_probs[i]` is $\pi(\cdot|x_i)$ and
# `q_hat[i]` the model's predicted reward of every action in context $x_i$, both `[n, A]`.

# %% tags=["solution"]
def my_doubly_robust(rewards, actions, propensities, target_probs, q_hat):
    """The doubly robust estimate of the target's expected reward."""
    r, a, p = np.asarray(rewards, dtype=float), np.asarray(actions), np.asarray(propensities, dtype=float)
    pi, q = np.asarray(target_probs, dtype=float), np.asarray(q_hat, dtype=float)
    rows = np.arange(len(r))
    model_value = np.sum(pi * q, axis=1)  # what the model says the target earns in each context
    w = pi[rows, a] / p
    return np.mean(model_value + w * (r - q[rows, a]))


# %%
assert rc.exercises.check("doubly_robust", my_doubly_robust)

# %% [markdown]
# Two models of the click rate, each fitted on a separate log of 1000 visits (a model must not be
# scored on the data it was fitted on): one per kind of visitor, and one *kind-blind* model that
# predicts each article's average click rate over all visitors. The site also has to know the
# propensities; a site that did not log them might estimate them the same kind-blind way, from
# how often each article was shown.

# %%
def fit_models(kinds, articles, clicks):
    """From training logs [R, m]: per-kind click model, kind-blind click model and kind-blind
    propensities, each [R, 3, 5] (kind-blind ones are equal across kinds)."""
    R = kinds.shape[0]
    cell = (np.arange(R)[:, None] * 15 + kinds * 5 + articles).ravel()
    count = np.bincount(cell, minlength=R * 15).reshape(R, 3, 5)
    hits = np.bincount(cell, weights=clicks.ravel(), minlength=R * 15).reshape(R, 3, 5)
    per_kind = hits / np.maximum(count, 1)
    blind = np.repeat((hits.sum(axis=1) / count.sum(axis=1))[:, None, :], 3, axis=1)
    blind_propensity = np.repeat((count.sum(axis=1) / count.sum(axis=(1, 2))[:, None])[:, None, :], 3, axis=1)
    return per_kind, blind, blind_propensity


per_kind_model, blind_model, blind_propensity = (m[0] for m in fit_models(*log_visits((1, 1000))))
print("per-kind model, kind 0: ", np.round(per_kind_model[0], 2), "  true:", click_rate[0])
print("kind-blind model:       ", np.round(blind_model[0], 2))
pi_logged = target[kinds]
for name, q in (("per-kind", per_kind_model), ("kind-blind", blind_model)):
    dm = rc.direct_method_estimate(pi_logged, q[kinds])
    dr = rc.doubly_robust_estimate(clicks, articles, propensities, pi_logged, q[kinds])
    print(f"{name:10s} model: direct method {dm:.3f}   doubly robust {dr:.3f}   (true {true_value:.3f})")
shows = visitor_mix * behavior[:, 3]
print("who sees article 3 (kinds 0, 1, 2):", np.round(shows / shows.sum(), 2))
assert blind_model[0, 3] < click_rate[0, 3] / 2 and np.argmax(shows) == 1

# %% [markdown]
# The kind-blind model learns article 3's click rate mostly from kind-1 visitors (the behaviour
# shows it to them half the time, and they rarely click), so it rates the article at less than
# half of its click rate for kind-0 visitors, whom the target shows it most. On one log every
# estimate is also noisy (the per-kind model saw article 3 on only about 50 kind-0 visits): which
# estimates are biased and which are merely noisy, one log cannot tell. Check it runs 500.

# %% [markdown]
# ## Check it
#
# **Unbiased, biased, and by how much.** Repeat the whole experiment on 4000 independent logs of
# each size $n$: ordinary IS must average to the truth; weighted IS need not.

# %%
repeats = 4000
print("   n | ordinary: bias +- s.e.   std   rmse | weighted: bias +- s.e.   std   rmse | std w/o")
small_n = {}
for n in (2, 5, 20, 100):
    k, a, r = log_visits((repeats, n))
    est = rc.importance_estimate(r, rc.importance_weights(target[k], behavior[k], a))
    assert np.all((est.weighted >= 0) & (est.weighted <= 1))  # within the range of the returns
    rows = []
    for values in (est.ordinary, est.weighted):
        bias, std = values.mean() - true_value, values.std()
        rows.append((bias, std / np.sqrt(repeats), std, np.sqrt(bias**2 + std**2)))
    small_n[n] = rows
    line = f"{n:4d} |"
    for bias, se, std, rmse in rows:
        line += f" {bias:+.4f} +- {se:.4f}  {std:.3f}  {rmse:.3f} |"
    print(line + f" {rows[1][2] / rows[0][2]:.2f}")
bias_w2 = small_n[2][1][0]
print(f"weighted IS at n = 2: bias {bias_w2 / true_value:+.0%} of the true value")

# %%
for n, (ordinary, weighted) in small_n.items():
    assert abs(ordinary[0]) < 4 * ordinary[1], n  # ordinary IS: unbiased at every n
    assert weighted[2] < ordinary[2] and weighted[3] < ordinary[3], n  # here: less spread, lower rmse
assert bias_w2 < -4 * small_n[2][1][1]  # weighted IS: clearly biased (low, here) with 2 samples
assert abs(small_n[20][1][0]) < abs(bias_w2) / 4  # ... and the bias shrinks as n grows

# %% [markdown]
# Read the table: the ordinary estimator's bias stays within a few standard errors of 0 at every
# $n$. The weighted one is biased low here, by the printed fraction of the true value at $n = 2$,
# and the bias shrinks as $n$ grows. Its standard deviation is lower at every $n$ in this
# problem, by the ratio in the last column: a large cut at tiny $n$, a modest one at $n = 100$;
# and its RMSE is lower too, bias included. "Much lower variance" is a property of the problem,
# not of the estimator; measure it on yours.
#
# **Missing support cannot be fixed by any amount of data.** If the behaviour never shows
# article 3 to kind-0 visitors (the very article the target bets on for them), nothing in the log
# says how they would like it, and `rc.importance_weights` refuses:

# %% tags=["raises-exception"]
behavior_gap = behavior.copy()
behavior_gap[0] = [0.55, 0.25, 0.15, 0.00, 0.05]
rc.importance_weights(target[kinds], behavior_gap[kinds], articles)

# %% [markdown]
# Computing the weights anyway silently estimates something else. Ordinary IS loses the target's
# probability mass on the missing article (kind 0, article 3); weighted IS renormalises over what
# is left. Neither is the target's value, however much data you collect:

# %%
k, a, r = log_visits(200_000, behavior_gap)
w = target[k, a] / behavior_gap[k, a]  # no check: exactly what the reference refuses to do
supported = np.where(behavior_gap > 0, target, 0.0)
kept_value = float(visitor_mix @ np.sum(supported * click_rate, axis=1))
kept_mass = float(visitor_mix @ np.sum(supported, axis=1))
print(f"ordinary IS from 200000 visits: {np.mean(w * r):.3f}   "
      f"(the target's value without the missing cell: {kept_value:.3f})")
print(f"weighted IS from 200000 visits: {np.sum(w * r) / np.sum(w):.3f}   "
      f"(the same, renormalised: {kept_value / kept_mass:.3f})")
print(f"true value of the target:       {true_value:.3f}")
for est in (np.mean(w * r), np.sum(w * r) / np.sum(w)):
    assert abs(est - true_value) > 10 * np.std(w * r) / np.sqrt(r.size)

# %% [markdown]
# **The ESS is scale-free.** The textbook formula, evaluated as written, fails on weights that
# long products produce; the reference does not:

# %%
for label, hard in (("[2**600, 0, 1]", [2.0**600, 0.0, 1.0]), ("[1e-200, 1e-200]", [1e-200, 1e-200])):
    w = np.array(hard)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.sum(w) ** 2 / np.sum(w**2)
    print(f"weights {label:17s}: textbook formula {naive:.3f}, "
          f"rc.effective_sample_size {rc.effective_sample_size(w):.3f}")
    assert np.isnan(naive)
assert rc.effective_sample_size([2.0**600, 0.0, 1.0]) == 1.0 and rc.effective_sample_size(w) == 2.0

# %% [markdown]
# **Doubly robust: one of two is enough.** Over 500 replicates, fit the two models and the
# kind-blind propensities on a fresh training log of 1000 visits, log 200 visits to evaluate on,
# and estimate the target's value with the direct method, IS and DR, with the right and the
# kind-blind versions of each ingredient:

# %%
repeats, n_eval = 500, 200
per_kind_models, blind_models, blind_props = fit_models(*log_visits((repeats, 1000)))
k, a, r = log_visits((repeats, n_eval))
rep = np.arange(repeats)[:, None]
pi_rows = target[k]
model = {"per-kind": per_kind_models[rep, k], "kind-blind": blind_models[rep, k]}
propensity = {"true": behavior[k, a], "kind-blind": blind_props[rep, k, a]}
pi_logged_rows = target[k, a]
results = {}
for name, q in model.items():
    results[f"DM  model {name:10s}"] = rc.direct_method_estimate(pi_rows, q)
for name, p in propensity.items():
    results[f"IS  propensities {name:10s}"] = np.mean(pi_logged_rows / p * r, axis=1)
    for model_name, q in model.items():
        results[f"DR  model {model_name:10s} propensities {name:10s}"] = rc.doubly_robust_estimate(r, a, p, pi_rows, q)
z_score = {}
for name, est in results.items():
    bias, se = est.mean() - true_value, est.std() / np.sqrt(repeats)
    z_score[name] = bias / se
    print(f"{name:48s} bias {bias:+.4f} +- {se:.4f}   std {est.std():.4f}")

# %%
biased = [name for name, z in z_score.items() if abs(z) > 4]
print("biased (more than 4 standard errors):", biased)
assert sorted(biased) == sorted(["DM  model kind-blind", "IS  propensities kind-blind",
                                 "DR  model kind-blind propensities kind-blind"]), biased
for name in propensity:  # DR spreads less than IS with the same propensities, whatever the model
    assert all(results[f"DR  model {m:10s} propensities {name:10s}"].std()
               < results[f"IS  propensities {name:10s}"].std() for m in model)
both_wrong = results["DR  model kind-blind propensities kind-blind"].mean() - true_value
is_wrong = results["IS  propensities kind-blind"].mean() - true_value
assert abs(both_wrong - is_wrong) < 0.25 * abs(is_wrong)  # about as biased as IS with those propensities

# %% [markdown]
# DR is unbiased in three of the four combinations: with the true propensities whatever the
# model, and with the per-kind model whatever the propensities. Only when both are kind-blind
# does it fail, and then about as badly as IS with the same wrong propensities. Its standard
# deviation also sits below plain IS's with the same propensities: the model explains part of
# each click, and only the rest is reweighted.
#
# The guarantee needs a model that did not see the evaluation log. Fit the per-kind model on the
# very visits DR then corrects, and each cell's residuals sum to zero there: the correction
# vanishes and DR silently becomes the direct method.

# %%
in_sample = fit_models(k, a, r)[0][rep, k]  # fitted on the 200 evaluation visits themselves
dr_in = rc.doubly_robust_estimate(r, a, propensity["kind-blind"], pi_rows, in_sample)
dm_in = rc.direct_method_estimate(pi_rows, in_sample)
print("with an in-sample model, DR equals DM on all 500 logs:", bool(np.allclose(dr_in, dm_in)))
assert np.allclose(dr_in, dm_in)

# %% [markdown]
# ## Use it
#
# **Truncation lowers the variance and drops mass.** Cap every weight at $c$ and estimate on
# 2000 logs of 50 visits. Both estimators' limits as $n \to \infty$ can be computed exactly:
# the ordinary one tends to $\mathbb{E}_b[\min(w, c)\,r] = V^\pi - \mathbb{E}_b[(w - c)_+\, r]$,
# the truth minus the reward carried by the part of each weight above $c$; the weighted one
# tends to $\mathbb{E}_b[\min(w, c)\,r] / \mathbb{E}_b[\min(w, c)]$, the mean click under yet
# another distribution of (kind, article) pairs, proportional to $p(x)\min(\pi(a|x), c\,b(a|x))$:
# not the target's, and the behaviour's once $c$ is below every weight.

# %%
repeats, n = 2000, 50
k, a, r = log_visits((repeats, n))
ratio_table = target / behavior
max_weight = ratio_table.max()
caps = [0.5, 1.0, 2.0, 3.0, 4.0, max_weight]
sweep = {"ordinary": [], "weighted": []}
print(f"largest weight: {max_weight:.1f}")
print("   c | ordinary: bias  (exact)   std   rmse | weighted: bias  (limit)   std   rmse")
for c in caps:
    est = rc.importance_estimate(r, rc.importance_weights(target[k], behavior[k], a, clip=c))
    capped = np.minimum(target, c * behavior)  # b * min(w, c), for every kind and article
    exact = {"ordinary": policy_value(capped) - true_value,  # E_b[min(w, c) r]
             "weighted": policy_value(capped) / float(visitor_mix @ capped.sum(axis=1)) - true_value}
    line = f"{c:4.1f} |"
    for name, values in (("ordinary", est.ordinary), ("weighted", est.weighted)):
        bias, std = values.mean() - true_value, values.std()
        sweep[name].append((bias, exact[name], std, np.sqrt(bias**2 + std**2), std / np.sqrt(repeats)))
        line += f" {bias:+.3f} ({exact[name]:+.3f})  {std:.3f}  {np.sqrt(bias**2 + std**2):.3f} |"
    print(line)

# %%
bias_o = np.array([row[0] for row in sweep["ordinary"]])
exact_o = np.array([row[1] for row in sweep["ordinary"]])
se_o = np.array([row[4] for row in sweep["ordinary"]])
rmse_o = np.array([row[3] for row in sweep["ordinary"]])
assert np.all(np.abs(bias_o - exact_o) < 4 * se_o)  # the measured bias is the exact one
assert np.all(exact_o[:-1] < 0) and abs(exact_o[-1]) < 1e-12  # every cap below the largest weight: too low
behaviour_gap_to_truth = policy_value(behavior) - true_value
assert exact_o[0] < behaviour_gap_to_truth  # a tight cap lands below even the behaviour's own value
assert rmse_o.min() < rmse_o[-1]  # at n = 50 some cap still pays in mean squared error
exact_w = np.array([row[1] for row in sweep["weighted"]])
for name in sweep:  # in exchange, both spread less the tighter the cap
    assert np.all(np.diff([row[2] for row in sweep[name]]) > 0), name
assert np.all(np.abs(exact_w[:-1]) < np.abs(exact_o[:-1]))  # renormalising loses less
negative_clicks = -click_rate  # the same cap on negative rewards: the estimate comes out too HIGH
capped = np.minimum(target, 1.0 * behavior)
assert float(visitor_mix @ np.sum(capped * negative_clicks, axis=1)) > -true_value
print(f"smallest ordinary rmse at c = {caps[int(np.argmin(rmse_o))]:.1f}: {rmse_o.min():.3f} "
      f"(no cap: {rmse_o[-1]:.3f})")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for name, color in (("ordinary", "C0"), ("weighted", "C1")):
    rows = np.array(sweep[name])
    ax1.plot(caps, rows[:, 1], "-", color=color, label=f"{name} (dots: n = 50, line: n → ∞)")
    ax1.plot(caps, rows[:, 0], "o", color=color)
    ax2.plot(caps, rows[:, 3], "o-", color=color, label=f"{name}: rmse")
    ax2.plot(caps, rows[:, 2], "s--", color=color, label=f"{name}: std")
ax1.axhline(behaviour_gap_to_truth, color="gray", ls=":", label="behaviour's value, as a bias")
ax1.axhline(0, color="black", lw=0.8)
ax1.set_xlabel("cap c (weights replaced by min(w, c))")
ax1.set_ylabel("bias of the estimate (clicks per visit)")
ax1.set_title("Capping drops mass: the estimates fall low")
ax1.legend(fontsize=9, loc="lower right")
ax2.set_xlabel("cap c (weights replaced by min(w, c))")
ax2.set_ylabel("rmse and std (clicks per visit)")
ax2.set_title("...in exchange for less spread")
ax2.legend(fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# The ordinary estimator's bias is exactly the computed one, negative for every cap below the
# largest weight: clicks are never negative, so every bit of weight the cap removes is a click
# the estimate no longer counts. A tight cap even lands below the behaviour's own value. (With
# negative rewards the same cap would overestimate: what the cap does is drop mass, and which way
# that moves the estimate depends on the sign of the rewards it drops.) The weighted estimator
# renormalises the capped weights, so it loses less, and adds its small-$n$ bias. In exchange both
# spread less; at $n = 50$ some cap gives the ordinary estimator its lowest RMSE.
#
# **Long horizons.** Back to visits of $T$ views and the target that has moved 30% of the way
# from the behaviour to the new policy. For each horizon, 200 replicates of 100 visits;
# compare the errors of: ignoring the weights (the log's mean), full-trajectory IS (ordinary and
# weighted, the product of all $T$ ratios on the whole visit's clicks), per-decision IS and
# weighted per-decision IS. Errors are relative to the true value, which grows with $T$.

# %%
horizons = [1, 2, 5, 10, 20, 50, 100]
repeats, n = 200, 100
names = ["log mean (no weights)", "full-trajectory IS", "weighted full-trajectory IS",
         "per-decision IS", "weighted per-decision IS"]
rel_rmse = {name: [] for name in names}
rel_median = {name: [] for name in names}
z_pd, z_wpd, ess_fraction, mean_weight = [], [], [], []
for horizon in horizons:
    k, a, r = log_visit_sequences((repeats, n), horizon)
    rho = visit_ratio[k[..., None], a]
    truth = visit_value(visit_target, horizon)
    full = rc.importance_estimate(r.sum(axis=-1), rho.prod(axis=-1))
    pd = rc.per_decision_estimate(r, rho)
    estimates = dict(zip(names, (r.sum(axis=-1).mean(axis=-1), full.ordinary, full.weighted,
                                 pd.ordinary, pd.weighted)))
    for name, est in estimates.items():
        rel_rmse[name].append(np.sqrt(np.mean((est - truth) ** 2)) / truth)
        rel_median[name].append(np.median(np.abs(est - truth)) / truth)
    z_pd.append((pd.ordinary.mean() - truth) / (pd.ordinary.std() / np.sqrt(repeats)))
    z_wpd.append((pd.weighted.mean() - truth) / (pd.weighted.std() / np.sqrt(repeats)))
    ess_fraction.append(np.median(full.ess) / n)
    mean_weight.append(np.median(rho.prod(axis=-1).mean(axis=-1)))  # E_b[W] = 1
    top_share = {}
    for name, est in estimates.items():  # how much of the squared error the worst 5 logs carry
        sq = np.sort((est - truth) ** 2)[::-1]
        top_share[name] = sq[:5].sum() / sq.sum()
second_moment = np.sum(visit_target**2 / behavior, axis=1)  # E_b[rho^2] for each kind
ess_theory = np.array([1 / float(visitor_mix @ second_moment**h) for h in horizons])  # 1 / E_b[W^2]
rel_rmse = {name: np.array(v) for name, v in rel_rmse.items()}
rel_median = {name: np.array(v) for name, v in rel_median.items()}
header = "".join(f"{h:>7d}" for h in horizons)
for title, table in (("rmse / true value", rel_rmse), ("median |error| / true value", rel_median)):
    print(f"{title:30s} T = {header}")
    for name in names:
        print(f"  {name:32s}" + "".join(f"{v:7.3f}" for v in table[name]))
print(f"{'full-trajectory ESS / n':34s}" + "".join(f"{v:7.3f}" for v in ess_fraction))
print(f"{'  1 / E_b[W^2]':34s}" + "".join(f"{v:7.0e}" if v < 1e-3 else f"{v:7.3f}" for v in ess_theory))
print(f"{'  median of a log mean weight':34s}" + "".join(f"{v:7.3f}" for v in mean_weight))
print(f"{'per-decision IS: bias / s.e.':34s}" + "".join(f"{v:+7.1f}" for v in z_pd))
print(f"{'weighted PD: bias / s.e.':34s}" + "".join(f"{v:+7.1f}" for v in z_wpd))
print("at T = 100, share of the squared error carried by the worst 5 of 200 logs:")
for name in names:
    print(f"  {name:32s} {top_share[name]:.0%}")

# %%
naive, full_is, full_w, pdis, wpdis = (rel_rmse[name] for name in names)
naive_m, full_m, full_wm, pdis_m, wpdis_m = (rel_median[name] for name in names)
assert full_m[-1] > 3 * full_m[0]  # full-trajectory IS: the typical error grows with the horizon
assert np.all(pdis_m[2:] < full_m[2:])  # per-decision: smaller typical error from T = 5 on
assert np.all((0.3 < pdis_m[-2:] / full_m[-2:]) & (pdis_m[-2:] / full_m[-2:] < 0.7))  # about half
assert np.all(wpdis[1:] < np.minimum(pdis, full_is)[1:]) and np.all(wpdis_m[1:] < np.minimum(pdis_m, full_m)[1:])
assert np.all(wpdis[3:] < full_w[3:]) and np.all(wpdis_m[3:] < full_wm[3:])  # best of all from T = 10
assert naive_m[-1] < min(full_m[-1], pdis_m[-1])  # at T = 100 the ordinary ones lose to no weights
assert wpdis[-1] < 0.75 * naive[-1] and wpdis_m[-1] < 0.75 * naive_m[-1]
assert np.all(np.abs(z_pd[:5]) < 4)  # per-decision IS: unbiased (checked where its tails are mild)
assert z_wpd[-1] < -4  # weighted per-decision IS: biased at T = 100 (low, here)
assert ess_fraction[-1] < 0.1 < 0.8 < ess_fraction[0] and ess_fraction[-1] > ess_theory[-1]
no_weights_share = top_share["log mean (no weights)"]
assert min(top_share["full-trajectory IS"], top_share["per-decision IS"]) > 5 * no_weights_share
assert mean_weight[-1] < 0.7  # a typical log misses the big weights: its mean weight is far below 1

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
styles = ["k:", "C0o-", "C0s--", "C1o-", "C1s--"]
for name, style in zip(names, styles):
    ax1.loglog(horizons, rel_rmse[name], style, label=name)
    ax2.loglog(horizons, rel_median[name], style, label=name)
for ax in (ax1, ax2):
    ax.set_xlabel("horizon T (views per visit)")
    ax.set_xticks(horizons, [str(h) for h in horizons])
    ax.set_yticks([0.1, 0.2, 0.5, 1, 2], ["0.1", "0.2", "0.5", "1", "2"])
    ax.set_yticks([], minor=True)
ax1.set_ylabel("rmse / true value")
ax1.set_title("RMSE: a few huge weights rule at long T")
ax2.set_ylabel("median |error| / true value")
ax2.set_title("Median: per-decision beats full-trajectory")
ax2.legend(fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# Full-trajectory IS multiplies all $T$ ratios onto every click of the visit, and its error grows
# with the horizon, as its ESS shrinks. The measured ESS stays above $1/\mathbb{E}_b[W^2]$ at long
# horizons because the rare huge weights that make the true variance so large are rarely drawn in
# 100 visits: a typical log's weights average far below their expectation of 1 (the "median of a
# log mean weight" row), so a small sample even hides how bad its weights are. The RMSE over
# 200 logs then rests on the few logs that did draw one: for the ordinary estimators the worst
# 5 logs carry many times the share of the squared error that they carry for the log mean. Read
# the long-horizon RMSE points on the left as rough, the medians on the right as the typical
# error.
# Per-decision IS weights each click only by the views up to it: its typical error is about half
# of full-trajectory IS's at long horizons. It is unbiased, and its average over the 200 logs
# stays within a few standard errors of the truth up to $T = 20$; beyond that, 200 logs rarely
# hold the huge weights that balance the many small ones, and the average can come out low.
# Weighted per-decision IS beats both ordinary estimators from $T = 2$ on and is the most
# accurate of all from $T = 10$ on, by both measures (at short horizons it ties with weighted
# full-trajectory IS, and at $T = 1$ the two are the same estimator), but its bias is no longer
# negligible at $T = 100$. Ignoring the weights has a fixed relative error, the gap between the
# two policies' values; at $T = 100$ both ordinary estimators typically do worse than that, and
# weighted per-decision IS beats it clearly. For longer horizons or
# policies further apart,
# off-policy RL uses a model (the doubly robust idea applied step by step; Jiang & Li, 2016),
# truncated traces (Retrace, V-trace), or, as PPO does, stays close to the data's policy and clips
# the one-step ratio.

# %% [markdown]
# **Your "on-policy" LLM trainer is off-policy.** RL training of language models (GRPO, PPO,
# lessons 12-14) samples completions with a fast inference engine (vLLM, SGLang) and computes the
# gradient in a training framework (FSDP, Megatron). The two compute the same model's token
# probabilities with different kernels and precisions, and disagree slightly. The samples
# therefore come from the sampler's policy $\mu$, while the gradient is that of the trainer's
# $\pi$: $\mu$ is the behaviour policy, $\pi$ the target, and every token carries a ratio
# $\pi(y_t|y_{<t})/\mu(y_t|y_{<t})$, computed from the log-probabilities both sides return. Yao,
# Liu et al. (2025) showed the effect on real training runs and proposed truncated importance
# sampling (TIS) between the two. verl (`algorithm.rollout_correction.rollout_is`, token or
# sequence level, capped at `rollout_is_threshold`) and TRL's GRPO trainer
# (`vllm_importance_sampling_correction`, with modes `token_truncate`, `token_mask`,
# `sequence_truncate`, `sequence_mask` and a cap `vllm_importance_sampling_cap`) offer it; in the
# TRL version we read, GRPO applies it by default whenever it samples with vLLM.
#
# A small simulation of the mechanism: a bigram language model over 64 tokens whose logits have
# the size a real model's have (around 20). The trainer computes the softmax in float64 from
# float32 logits; the sampler rounds the same logits to bfloat16 (8 significant bits) first. Real
# systems disagree for more reasons (kernels, reduction order and precision inside every layer);
# here rounding is the only one.

# %%
def to_bfloat16(x):
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def sample_bigram(logp, n, length):
    """n sequences of `length` tokens from a bigram table logp[previous, next], starting at 0."""
    vocab = logp.shape[0]
    cumulative = np.cumsum(np.exp(logp), axis=1)
    cumulative[:, -1] = 1.0
    flat = (cumulative + np.arange(vocab)[:, None]).ravel()  # row k shifted by k: one sorted array
    tokens = np.zeros((n, length + 1), dtype=np.int64)
    for t in range(length):
        prev = tokens[:, t]
        tokens[:, t + 1] = np.searchsorted(flat, prev + rng.random(n), side="right") - prev * vocab
    return tokens


vocab = 64
lm_logits = (18.0 + 3.0 * rng.standard_normal((vocab, vocab))).astype(np.float32)
trainer_logp = rc.log_softmax(lm_logits.astype(np.float64))
sampler_logp = rc.log_softmax(to_bfloat16(lm_logits).astype(np.float64))
tokens = sample_bigram(sampler_logp, 2000, 1024)  # what the sampler generated
prev, nxt = tokens[:, :-1], tokens[:, 1:]
token_log_ratio = trainer_logp[prev, nxt] - sampler_logp[prev, nxt]  # log pi - log mu per token
print(f"per-token ratio pi/mu: median |log ratio| {np.median(np.abs(token_log_ratio)):.4f}, "
      f"range [{np.exp(token_log_ratio.min()):.3f}, {np.exp(token_log_ratio.max()):.3f}]")
print(f"KL(mu || pi) per token, estimated as the mean of log mu - log pi: {-token_log_ratio.mean():.5f} nats")
cap = 2.0
lengths = [16, 64, 256, 1024]
llm_rows = []
for length in lengths:
    seq_w = np.exp(token_log_ratio[:, :length].sum(axis=1))  # the sequence's importance weight
    llm_rows.append((rc.effective_sample_size(seq_w) / seq_w.size, np.mean(seq_w > cap),
                     np.mean(np.maximum(seq_w - cap, 0.0)), seq_w.mean()))
print(f"tokens whose ratio exceeds the cap {cap:.0f}: {np.mean(np.exp(token_log_ratio) > cap):.4f}")
print(" length | ESS / n | sequences with w > 2 | mass min(w, 2) drops | mean w")
for length, (frac, over, dropped_mass, mean_w) in zip(lengths, llm_rows):
    print(f"{length:7d} | {frac:7.3f} | {over:20.3f} | {dropped_mass:20.3f} | {mean_w:.3f}")

# %%
ess_llm = [row[0] for row in llm_rows]
assert np.exp(np.abs(token_log_ratio).max()) < cap  # no token ratio reaches the cap
assert all(x > y for x, y in zip(ess_llm, ess_llm[1:])) and ess_llm[-1] < 0.7
assert llm_rows[-1][2] > 0.05  # sequence-level truncation drops several % of the mass at 1024

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
ax1.hist(token_log_ratio.ravel(), bins=np.linspace(-0.15, 0.15, 31), density=True, histtype="step",
         lw=1.5, label="one token")
ax1.hist(token_log_ratio.sum(axis=1), bins=np.linspace(-3, 3, 41), density=True, histtype="step",
         lw=1.5, label="a sequence of 1024 tokens")
ax1.set_yscale("log")
ax1.set_xlabel("log importance weight, $\\log\\pi - \\log\\mu$")
ax1.set_ylabel("density (log scale)")
ax1.set_title("Tiny per token, wide per sequence")
ax1.legend(fontsize=9, loc="upper right")
ax2.semilogx(lengths, ess_llm, "o-", label="ESS / n")
ax2.semilogx(lengths, [row[2] for row in llm_rows], "s--", label="mass dropped by min(w, 2)")
ax2.set_xticks(lengths, [str(x) for x in lengths])
ax2.set_xticks([], minor=True)
ax2.set_xlabel("sequence length (tokens)")
ax2.set_ylabel("fraction")
ax2.set_title("Sequence weights degrade with length")
ax2.legend(fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# Per token, the two engines agree to within the printed range, and the KL between them is a
# few ten-thousandths of a nat. But a sequence's weight is a product over its tokens, the
# long-horizon problem of the previous section: over 1024 tokens the ESS falls to the fraction
# printed, and a sequence-level cap of 2 drops the printed share of the probability mass. For a
# reward that does not depend on the weight, the truncated estimate is low by exactly that share
# in expectation:
# the truncation sweep's lesson again. A token-level cap of 2 does nothing
# here, because no single token's ratio comes near it; it bites on the rare tokens where the two
# engines disagree wildly, which Yao, Liu et al. report in real systems (tokens whose probability
# differs by up to 1 between engines). Which level and which cap is right depends on how large
# and how heavy-tailed the disagreement is: measure it (the ESS, the ratios' range) before
# choosing, as the frameworks' diagnostics do. The policy gradient is an expectation of
# $A\,\nabla\log\pi$ instead of $r$; the same weights multiply it.

# %% [markdown]
# ## Pitfalls
#
# - **Dividing the wrong way.** $w = \pi/b$, target over behaviour. $b/\pi$ gives a plausible
#   number and a wrong answer.
# - **Not logging the behaviour probabilities.** You need $b(a|x)$ of the action actually taken,
#   at the time it was taken. Recomputing it later from a model that has since changed gives wrong
#   weights; estimating it without the context (as the kind-blind propensities did) biases IS.
#   In PPO: store `old_logp` during the rollout; in LLM RL, use the log-probs the sampler
#   returns, not the trainer's recomputation.
# - **No support.** A deterministic or epsilon-free behaviour policy never tries some actions; no
#   estimator can value them. Log with some exploration.
# - **Trusting a small ESS.** An estimate from 1000 samples with ESS 5 is an estimate from 5
#   samples; report the ESS with it.
# - **Long products.** Full-trajectory weights explode or vanish exponentially with the horizon;
#   use per-decision weights, a model (DR), truncation, or a target closer to the behaviour.
# - **Truncation is not free.** $\min(w, c)$ drops mass: with non-negative rewards the ordinary
#   estimate falls low, and a tight cap can fall below the behaviour's own value.
# - **Weighted estimators at small $n$.** Self-normalising cuts the spread but adds a bias that is
#   large for tiny samples (Check it measured it); weighted IS with all-zero weights is undefined
#   (the reference raises).
# - **Fitting the reward model on the evaluation log.** DR's guarantee assumes the model did not
#   see the samples it corrects; fit it on separate data (or cross-fit: fit on half, evaluate on
#   the other half, and swap).

# %% [markdown]
# ## Exercises
#
# 1. **Easy: the ESS from log-weights.** A sequence's weight is $\exp(\sum_t \log\rho_t)$, and
#    for long sequences that exponential overflows or underflows before you can normalise it.
#    Write `ess_from_log_weights(log_weights)` that returns the ESS from log-weights `[n]`
#    (entries may be $-\infty$: weight 0) without ever forming an overflowing number. Then answer
#    a question: every weight in a batch is multiplied by 1000. Which change: `"a"` only the
#    ordinary estimate, `"b"` only the weighted estimate, `"c"` both estimates and the ESS, `"d"`
#    nothing?

# %% tags=["solution"]
def ess_from_log_weights(log_weights):
    lw = np.asarray(log_weights, dtype=float)
    u = np.exp(lw - lw.max())  # shifting every log-weight multiplies every weight: ESS unchanged
    return u.sum() ** 2 / np.sum(u * u)


scaling_answer = "a"

# %%
assert rc.exercises.check("ess_from_log_weights", ess_from_log_weights)
assert rc.exercises.check("is_scaling_question", lambda: scaling_answer)

# %% [markdown]
# 2. **Medium: self-normalised doubly robust.** Weighted IS divides by $\sum_i w_i$ instead of
#    $n$; do the same to DR's correction term:
#    $\frac1n\sum_i\sum_a\pi(a|x_i)\hat q(x_i,a) + \sum_i w_i(r_i - \hat q(x_i,a_i))/\sum_i w_i$.
#    Write `weighted_doubly_robust(rewards, actions, propensities, target_probs, q_hat)` with
#    `my_doubly_robust`'s arguments. Then answer: with the right propensities and a wrong model,
#    is it unbiased? `"a"` yes, exactly, for every $n$; `"b"` no: biased for finite $n$, and the
#    bias vanishes as $n$ grows; `"c"` no, and the bias stays as $n$ grows. (You can check your
#    answer by running it through the Check it experiment.)

# %% tags=["solution"]
def weighted_doubly_robust(rewards, actions, propensities, target_probs, q_hat):
    r, a, p = np.asarray(rewards, dtype=float), np.asarray(actions), np.asarray(propensities, dtype=float)
    pi, q = np.asarray(target_probs, dtype=float), np.asarray(q_hat, dtype=float)
    rows = np.arange(len(r))
    w = pi[rows, a] / p
    return np.mean(np.sum(pi * q, axis=1)) + np.sum(w * (r - q[rows, a])) / np.sum(w)


sndr_answer = "b"

# %%
assert rc.exercises.check("weighted_doubly_robust", weighted_doubly_robust)
assert rc.exercises.check("sndr_question", lambda: sndr_answer)

# %% [markdown]
# 3. **Hard: evaluate a softmax policy before deploying it.** The site's data scientists score
#    each (kind, article) pair, `scores[x, a]`, and would deploy
#    $\pi(a|x) \propto \exp(\text{scores}[x,a]/\tau)$ with a temperature $\tau$ still to choose.
#    Write `softmax_policy_dr(scores, temperature, kinds, articles, clicks, propensities, q_table)`
#    that returns the doubly robust estimate of that policy's value from a log, with the model
#    `q_table[x, a]`. It must work for temperatures as small as 0.01 (nearly greedy). Then, on
#    this lesson's log (`kinds`, `articles`, `clicks`, `propensities`) with `per_kind_model` as
#    the model and `scores = np.log(click_rate + 0.01)`, evaluate $\tau \in \{0.1, 0.3, 1, 3\}$,
#    print each policy's ESS, and say which temperature you would deploy and how far you trust
#    its estimate. (Only the function is checked; the choice is yours to argue.)

# %% tags=["solution"]
def softmax_policy_dr(scores, temperature, kinds, articles, clicks, propensities, q_table):
    z = np.asarray(scores, dtype=float) / temperature
    z = z - z.max(axis=1, keepdims=True)  # stable: exp never overflows
    policy = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)  # [kind, article]
    return my_doubly_robust(clicks, articles, propensities, policy[kinds], np.asarray(q_table)[kinds])


# %%
assert rc.exercises.check("softmax_policy_dr", softmax_policy_dr)

# %% tags=["solution"]
# One answer. The true values are printed only because this site is simulated.
scores = np.log(click_rate + 0.01)
for tau in (0.1, 0.3, 1.0, 3.0):
    z = scores / tau
    policy = np.exp(z - z.max(axis=1, keepdims=True))
    policy /= policy.sum(axis=1, keepdims=True)
    w_tau = policy[kinds, articles] / propensities
    print(f"tau {tau:3.1f}: DR {softmax_policy_dr(scores, tau, kinds, articles, clicks, propensities, per_kind_model):.3f}"
          f"   ESS {rc.effective_sample_size(w_tau):4.0f} of {len(w_tau)}   (true {policy_value(policy):.3f})")
# The coldest policy scores highest, but its estimate rests on the smallest ESS, so it is the
# least certain; tau 0.3 scores a little lower on more effective samples. To choose with
# confidence, bootstrap the log (resample its visits, re-estimate) for error bars on each.

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | on-policy | "learn from your own data" | the update assumes the data was drawn from the policy being improved |
# | off-policy | "learn from old or others' data" | data from a behaviour policy $b$ is used to evaluate or improve a different target $\pi$ |
# | importance weight | "the ratio" | $\pi(a\|x)/b(a\|x)$: how much more (or less) often the target takes the logged action |
# | propensity | "the logging probability" | $b(a\|x)$ of the action actually logged, recorded when it was chosen |
# | ordinary IS | "the unbiased one" | $\frac1n\sum w_i G_i$: unbiased, variance grows with the weights' spread |
# | weighted IS | "self-normalised IS" | $\sum w_i G_i/\sum w_i$: within the returns' range, biased at small $n$, consistent; less spread here, by a measured amount |
# | effective sample size | "ESS" | $(\sum w)^2/\sum w^2$: the number of equally weighted samples the weighted data is worth; scale-free |
# | support | "coverage" | $b(a\|x) > 0$ wherever $\pi(a\|x) > 0$; without it no estimator is consistent |
# | truncated IS | "clipping the weights" | $\min(w, c)$: less variance; drops the mass above $c$, so with non-negative rewards the ordinary estimate is too low |
# | per-decision IS | "only weight what came before" | a reward at step $t$ is weighted by the product of the ratios of steps $0..t$ only; unbiased |
# | direct method | "plug in a model" | the target's value under a reward model $\hat q$; as biased as the model |
# | doubly robust | "DR" | the direct method plus the importance-weighted model error; unbiased if either the propensities or the model are right |
# | training-inference mismatch | "vLLM and FSDP disagree" | the sampler's token probabilities $\mu$ differ from the trainer's $\pi$, so on-policy RL is off-policy by $\pi/\mu$ |

# %% [markdown]
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., sections 5.5-5.9:
#   ordinary and weighted importance sampling for Monte Carlo, the infinite-variance example, and
#   per-decision importance sampling.
# - Precup, Sutton, Singh (2000), *Eligibility traces for off-policy policy evaluation*, ICML:
#   per-decision importance sampling and why it has lower variance.
# - Kong (1992), *A note on importance sampling using standardized weights*, and Owen (2013),
#   *Monte Carlo theory, methods and examples*, chapter 9: the effective sample size and
#   self-normalised importance sampling's bias.
# - Dudík, Langford, Li (2011), *Doubly robust policy evaluation and learning*, ICML: the direct
#   method, IS and DR on logged bandit data, the recommender setting above.
# - Jiang & Li (2016), *Doubly robust off-policy value evaluation for reinforcement learning*,
#   ICML, and Thomas & Brunskill (2016), *Data-efficient off-policy policy evaluation*, ICML: DR
#   step by step along trajectories, and its weighted version.
# - Munos et al. (2016), *Safe and efficient off-policy reinforcement learning* (Retrace), and
#   Espeholt et al. (2018), *IMPALA* (V-trace): truncated per-step weights that keep long-horizon
#   off-policy learning stable.
# - Schulman et al. (2017), *Proximal policy optimization algorithms*: the clipped one-step
#   ratio as a way to reuse a rollout for several epochs.
# - Yao, Liu, Zhang, Dong, Shang, Gao (2025), *Your efficient RL framework secretly brings you
#   off-policy RL training* (fengyao.notion.site/off-policy-rl): the sampler-trainer mismatch in
#   LLM RL and truncated importance sampling between them.
# - The verl documentation, *Rollout correction* (`algorithm.rollout_correction`), and TRL's
#   `GRPOConfig` (`vllm_importance_sampling_correction`, `vllm_importance_sampling_mode`,
#   `vllm_importance_sampling_cap`): how two widely used trainers apply that correction.
