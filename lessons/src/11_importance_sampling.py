# %% [markdown]
# # 11 · Off-policy data and importance sampling
#
# *Prerequisites:* 01, 04, 08, 10
# *Time:* 90 minutes
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
# The log's average is within a few standard errors of the behaviour's value (the assert allows
# four), and many standard errors away from the target's: a naive off-policy estimate is simply
# wrong. Running the target for 1000 visits would answer the question, but that is the cost you
# want to avoid.

# %% [markdown]
# ## The idea
#
# Any expectation under $\pi$ can be rewritten as one under $b$, context by context:
# $$\mathbb{E}_{x,\,a\sim\pi}[r] = \sum_x p(x)\sum_a \pi(a|x)\,q(x,a)
#   = \sum_x p(x)\sum_a b(a|x)\frac{\pi(a|x)}{b(a|x)}\,q(x,a)
#   = \mathbb{E}_{x,\,a\sim b}\big[w\,r\big],\qquad w = \frac{\pi(a|x)}{b(a|x)},$$
# where $q(x, a)$ is the expected reward and the left-hand side is the target's true value,
# written $V^\pi$ from here on. Articles the target shows more often than the
# behaviour get weights above 1, the others below 1. The identity needs **support**:
# $b(a|x) > 0$ wherever $\pi(a|x) > 0$.
#
# From $n$ logged samples with returns $G_i$ and weights $w_i$:
# - **ordinary IS** $\hat V = \frac1n\sum_i w_i G_i$ is unbiased; its variance grows with the
#   spread of the weights;
# - **weighted IS** $\hat V = \sum_i w_i G_i / \sum_i w_i$ always lies within the range of the
#   returns, is biased for small $n$ and consistent as $n\to\infty$; whether and by how much it
#   lowers the variance you will measure;
# - the **effective sample size** $\text{ESS} = (\sum_i w_i)^2/\sum_i w_i^2$ is a rule of thumb
#   (Kong, 1992) for how many equally weighted samples the data is worth: $n$ if all weights are
#   equal, 1 if one sample carries all the weight. Check it measures how well it predicts each
#   estimator's spread. It does not change when every weight is multiplied by the same number,
#   which is how to compute it without overflow.
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
# weights. Either one right is enough, for a model fitted on other data (Check it shows what an
# in-sample fit can do).
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
# weighting can say how good it is. Raise `ValueError` then, in any row, whether or not such an
# action was logged. Also refuse a log whose logged action has behaviour probability 0 (even where
# the target's is 0 too): that log did not come from $b$.

# %% tags=["solution"]
def my_importance_weights(target_probs, behavior_probs, actions):
    """pi(a) / b(a) for each logged action. The probability arguments are one row [A] shared by
    every sample, or one row per sample [n, A]; actions [n]. Raises ValueError without support."""
    t, b, a = np.asarray(target_probs), np.asarray(behavior_probs), np.asarray(actions)
    if np.any((b == 0) & (t > 0)):
        raise ValueError("no support: the behaviour never takes an action that the target takes")
    rows = np.arange(len(a))
    t_a, b_a = (t[a], b[a]) if t.ndim == 1 else (t[rows, a], b[rows, a])
    if np.any(b_a == 0):
        raise ValueError("a logged action has behaviour probability 0: not the behaviour's data")
    return t_a / b_a


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
print(f"ordinary / weighted = {estimate.ordinary / estimate.weighted:.4f} = "
      f"mean weight {weights.mean():.4f}")
assert max(abs(estimate.ordinary - true_value), abs(estimate.weighted - true_value)) < abs(log_mean - true_value)

# %% [markdown]
# On this one log, both estimates landed closer to the target's value than the log's mean did,
# using data that never came from the target. The two differ by exactly one factor: ordinary =
# weighted $\times$ the log's mean weight (the second line), so they are close here only because
# this log's mean weight is close to 1; on a log whose weights average 0.9 they would differ by
# 10%. One log proves little: Check it repeats the experiment thousands of times.
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
# By the rule of thumb, the 1000 visits are worth about the printed ESS in equally weighted
# samples (Check it tests how well that holds), because a few visits carry a large share of the
# weight: article 3 shown to a kind-0 visitor, which the
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
# nor underflow. Its core, after the input checks (`r`, `rho` are your `rewards`, `ratios`):

# %%
source = inspect.getsource(rc.per_decision_estimate).splitlines()
start = next(i for i, line in enumerate(source) if "discount = gamma" in line)
end = next(i for i, line in enumerate(source) if "weighted = np.sum" in line)
skip = ("if np.isneginf", "t = int", "raise", '"')  # the all-weights-0 check, left out here
print("\n".join(line[4:] for line in source[start:end + 1] if not line.strip().startswith(skip)))

# %% [markdown]
# On 300 visits of 10 views, against the exact value. Over a whole visit of 10 views the full
# target is too far from the behaviour. Each view's ratio is independent given the kind, so a
# visit's weight $W$ has $\mathbb{E}_b[W^2] = \mathbb{E}_b[\rho^2]^{10}$ per kind, and as the log
# grows, ESS$/n$ tends to $\mathbb{E}_b[W]^2/\mathbb{E}_b[W^2] = 1/\mathbb{E}_b[W^2]$: printed
# below, with what it makes of 300 visits. So evaluate a target that has moved 30% of the way
# from the behaviour to it. A table of the fifteen ratios `visit_ratio[x, a]` turns each view's
# kind and article into its ratio:

# %%
def ess_per_visit(policy, horizon):
    """1 / E_b[W^2] for visits of `horizon` views (each view's ratio independent given the kind)."""
    second_moment = np.sum(policy**2 / behavior, axis=1)  # E_b[rho^2] for each kind
    return 1 / float(visitor_mix @ second_moment**horizon)


visit_target = 0.7 * behavior + 0.3 * target
for name, policy in (("the full target", target), ("30% of the way", visit_target)):
    print(f"{name:16s}: 1 / E_b[W^2] at T = 10 is {ess_per_visit(policy, 10):.2g}, "
          f"so 300 visits are worth about {300 * ess_per_visit(policy, 10):.2g}")
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
# Two models of the click rate, both fitted on a separate log of 1000 visits, not the log they
# correct (Check it shows why that matters): one per kind of visitor, and one *kind-blind* model that
# predicts each article's average click rate over all visitors. The site also has to know the
# propensities; a site that did not log them might estimate them the same kind-blind way, from
# how often each article was shown.

# %%
def fit_models(kinds, articles, clicks):
    """From training logs [R, m]: per-kind click model, kind-blind click model and kind-blind
    propensities, each [R, 3, 5] (kind-blind ones are equal across kinds)."""
    R = kinds.shape[0]
    # one counter per (log, kind, article): cell = log * 15 + kind * 5 + article. The per-kind
    # model is each cell's click count / show count; the kind-blind one pools the three kinds.
    cell = (np.arange(R)[:, None] * 15 + kinds * 5 + articles).ravel()
    count = np.bincount(cell, minlength=R * 15).reshape(R, 3, 5)
    hits = np.bincount(cell, weights=clicks.ravel(), minlength=R * 15).reshape(R, 3, 5)
    per_kind = hits / np.maximum(count, 1)
    blind = np.repeat((hits.sum(axis=1) / np.maximum(count.sum(axis=1), 1))[:, None, :], 3, axis=1)
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
print("   n | ordinary: bias +- s.e.   std   rmse | weighted: bias +- s.e.   std   rmse | std ratio wIS/oIS")
small_n = {}
for n in (2, 5, 20, 100):
    k, a, r = log_visits((repeats, n))
    est = rc.importance_estimate(r, rc.importance_weights(target[k], behavior[k], a))
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
# How many on-policy samples is each estimator worth at n = 100? The mean of m clicks drawn from
# the target itself has variance V(1 - V) / m, so an estimator with variance s^2 is worth
# V(1 - V) / s^2 of them. Compare with the ESS the logs report.
worth = {name: true_value * (1 - true_value) / rows[2] ** 2 for name, rows in zip(("ordinary", "weighted"),
                                                                                  small_n[100])}
median_ess = float(np.median(est.ess))
print(f"n = 100: median ESS {median_ess:.0f}; worth in on-policy samples: weighted IS "
      f"{worth['weighted']:.0f}, ordinary IS {worth['ordinary']:.0f}")

# %%
for n, (ordinary, weighted) in small_n.items():
    assert abs(ordinary[0]) < 4 * ordinary[1], n  # ordinary IS: unbiased at every n
    assert weighted[2] < ordinary[2] and weighted[3] < ordinary[3], n  # here: less spread, lower rmse
assert bias_w2 < -4 * small_n[2][1][1]  # weighted IS: clearly biased (low, here) with 2 samples
assert abs(small_n[20][1][0]) < abs(bias_w2) / 4  # ... and the bias shrinks as n grows
assert 0.6 < worth["weighted"] / median_ess < 1.25  # the ESS: roughly what weighted IS is worth
assert worth["ordinary"] < 0.85 * worth["weighted"]  # ordinary IS is worth less than its ESS says

# %% [markdown]
# Read the table: the ordinary estimator's bias stays within a few standard errors of 0 at every
# $n$. The weighted one is biased low here, by the printed fraction of the true value at $n = 2$,
# and the bias shrinks as $n$ grows. Its standard deviation is lower at every $n$ in this
# problem, by the ratio in the last column (weighted over ordinary): a large cut at tiny $n$, a
# modest one at $n = 100$; and its RMSE is lower too, bias included. "Much lower variance" is a
# property of the problem, not of the estimator; measure it on yours.
#
# The last line tests the ESS's promise. 100 logged visits with the printed median ESS give a
# weighted estimate about as precise as that many visits drawn from the target itself (the
# assert allows 0.6 to 1.25 times); the ordinary estimate is worth fewer. The ESS is a rule of
# thumb for the weighted estimator, not a guarantee for every estimator built on the weights.
#
# **Missing support cannot be fixed by any amount of data.** If the behaviour never shows
# article 3 to kind-0 visitors (the very article the target bets on for them), nothing in the log
# says how they would like it, and `rc.importance_weights` refuses:

# %% tags=["raises-exception"]
behavior_gap = behavior.copy()
behavior_gap[0] = [0.55, 0.25, 0.15, 0.00, 0.05]
rc.importance_weights(target[kinds], behavior_gap[kinds], articles)

# %% [markdown]
# The message names the first logged visit (sample) of kind 0, where the gap is, and the article.
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
assert abs(both_wrong - is_wrong) < 0.25 * abs(is_wrong)  # here: about as biased as IS with them

# %% [markdown]
# DR is unbiased in three of the four combinations: with the true propensities whatever the
# model, and with the per-kind model whatever the propensities. Only when both are kind-blind
# does it fail, and then, in this problem, about as badly as IS with the same wrong propensities
# (the assert allows 25%; nothing makes the two equal in general). Its standard deviation also
# sits below plain IS's with the same propensities: the model explains part of each click, and
# only the rest is reweighted.
#
# **The model must not see the visits it corrects.** DR's correction is the model's error on the
# logged visits. A model fitted on those very visits has already bent towards their clicks, so
# the correction sees less than the model's real error. How much less depends on how flexible
# the model is. Two models, each fitted on the 200 evaluation visits themselves, both used with
# the true propensities:
#
# - The per-kind table. Each cell's fitted rate is the mean click of that cell's visits, so the
#   residuals in every cell sum to zero and the correction vanishes exactly: DR equals DM. Here
#   that costs nothing, because a cell's mean click is itself an unbiased estimate of its rate.
# - A flexible model: the kind-blind article rates $m(a)$ plus one offset per visitor, the way a
#   recommender learns a bias per user, shrunk by an L2 penalty $\alpha$: $\theta_i = \lambda\,(r_i -
#   m(a_i))$ with $\lambda = 1/(1+\alpha)$. A visitor it has not seen gets offset 0. Put that into
#   DR's formula: visit $i$'s term becomes
#   $\sum_a \pi(a|x_i)\,m(a) + \big(\lambda + (1-\lambda)\,w_i\big)\big(r_i - m(a_i)\big)$, so a share
#   $\lambda$ of the correction has lost its weight. An unweighted residual averages the model's
#   error over the articles the *behaviour* shows, where a model fitted on the behaviour's data
#   is right on average: that share corrects nothing, and DR keeps the share $\lambda$ of the
#   kind-blind model's bias.
#
# *Cross-fitting* is the cure: fit on one half of the log, correct the other half, swap, average.

# %%
shown = visitor_mix[:, None] * behavior  # p(x) b(a|x): how often each (kind, article) is logged
blind_limit = (shown * click_rate).sum(axis=0) / shown.sum(axis=0)  # kind-blind model, endless data
blind_bias = float(visitor_mix @ np.sum(target * (blind_limit - click_rate), axis=1))
true_p = behavior[k, a]


def flexible_model(k, a, r, alpha):
    """Kind-blind article rates plus one offset per visitor (L2 penalty alpha), fitted on the
    visits (k, a, r) [R, m]; returns the model's predictions for those same visits [R, m, 5]."""
    rates = fit_models(k, a, r)[1][rep, k]
    offset = (r - np.take_along_axis(rates, a[..., None], axis=-1)[..., 0]) / (1 + alpha)
    return rates + offset[..., None]


in_sample = {"per-kind table, in-sample": fit_models(k, a, r)[0][rep, k]}
for alpha in (1.0, 0.0):
    in_sample[f"flexible (alpha {alpha:.0f}), in-sample"] = flexible_model(k, a, r, alpha)
dr_rows = {name: rc.doubly_robust_estimate(r, a, true_p, pi_rows, q) for name, q in in_sample.items()}
dr_equals_dm = np.allclose(dr_rows["per-kind table, in-sample"],
                           rc.direct_method_estimate(pi_rows, in_sample["per-kind table, in-sample"]))
half = n_eval // 2
cross = []
for fit, use in ((slice(None, half), slice(half, None)), (slice(half, None), slice(None, half))):
    # the other half's visitors are new to the model fitted here: their offsets are 0
    rates = fit_models(k[:, fit], a[:, fit], r[:, fit])[1][rep, k[:, use]]
    cross.append(rc.doubly_robust_estimate(r[:, use], a[:, use], true_p[:, use], pi_rows[:, use], rates))
dr_rows["flexible (alpha 0), cross-fitted"] = np.mean(cross, axis=0)
print(f"per-kind table in-sample: DR equals DM on all {repeats} logs: {dr_equals_dm}")
print(f"the kind-blind model's own bias (direct method, endless data): {blind_bias:+.4f}")
fit_z = {}
for name, est in dr_rows.items():
    bias, se = est.mean() - true_value, est.std() / np.sqrt(repeats)
    fit_z[name] = (bias, se)
    print(f"DR, model {name:34s} bias {bias:+.4f} +- {se:.4f}   std {est.std():.4f}")

# %%
assert abs(fit_z["per-kind table, in-sample"][0]) < 4 * fit_z["per-kind table, in-sample"][1]  # harmless here
for alpha, lam in ((1.0, 0.5), (0.0, 1.0)):  # the flexible model: DR keeps the share lambda of its bias
    bias, se = fit_z[f"flexible (alpha {alpha:.0f}), in-sample"]
    assert bias < -4 * se and abs(bias - lam * blind_bias) < 0.2 * abs(blind_bias), alpha
assert abs(fit_z["flexible (alpha 0), cross-fitted"][0]) < 4 * fit_z["flexible (alpha 0), cross-fitted"][1]
assert dr_rows["flexible (alpha 0), in-sample"].std() < 0.8 * dr_rows["flexible (alpha 0), cross-fitted"].std()

# %% [markdown]
# The per-kind table fitted in-sample turns DR into DM and stays unbiased here. The flexible model
# fitted in-sample drags DR to half of the kind-blind model's bias with $\alpha = 1$ and all of it
# with $\alpha = 0$, as the formula predicts, and its spread even shrinks: a biased estimate that
# looks more precise. Cross-fitted, the same model leaves DR unbiased. Whether in-sample fitting
# hurts depends on the model, and you rarely know in advance: cross-fit.

# %% [markdown]
# ## Use it
#
# **Truncation lowers the variance and drops mass.** Cap every weight at $c$ and estimate on
# 2000 logs of 50 visits. Both estimators' limits as $n \to \infty$ can be computed exactly.
# Write $(w - c)_+ = \max(w - c, 0)$ for the part of a weight above the cap, so that
# $\min(w, c) = w - (w - c)_+$. The ordinary estimator tends to
# $\mathbb{E}_b[\min(w, c)\,r] = V^\pi - \mathbb{E}_b[(w - c)_+\, r]$: the target's true value
# minus the reward carried by the part of each weight above $c$. The weighted one
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
behaviour_gap_to_truth = policy_value(behavior) - true_value
assert exact_o[0] < behaviour_gap_to_truth  # a tight cap lands below even the behaviour's own value
assert rmse_o.min() < rmse_o[-1]  # at n = 50 some cap still pays in mean squared error
exact_w = np.array([row[1] for row in sweep["weighted"]])
for name in sweep:  # in exchange, both spread less the tighter the cap
    assert np.all(np.diff([row[2] for row in sweep[name]]) > 0), name
assert np.all(np.abs(exact_w[:-1]) < np.abs(exact_o[:-1]))  # renormalising loses less
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
# The ordinary estimator's bias is the computed one (asserted within 4 standard errors at every
# cap). It is negative for every cap below the largest weight, and it must be: the formula says
# the bias is $-\mathbb{E}_b[(w - c)_+\, r]$, and clicks are never negative, so every bit of weight
# the cap removes is a click the estimate no longer counts. A tight cap even lands below the
# behaviour's own value. The same formula says that with negative rewards (costs) a cap would
# overestimate: the sign of the bias is the opposite of the sign of the rewards the cap drops.
# The weighted estimator
# renormalises the capped weights, so it loses less, and adds its small-$n$ bias. In exchange both
# spread less; at $n = 50$ some cap gives the ordinary estimator its lowest RMSE.
#
# **Long horizons.** Back to visits of $T$ views and the target that has moved 30% of the way
# from the behaviour to the new policy. For each horizon, 200 replicates of 100 visits;
# compare the errors of: ignoring the weights (the log's mean), full-trajectory IS (ordinary and
# weighted, the product of all $T$ ratios on the whole visit's clicks), per-decision IS and
# weighted per-decision IS. Errors are relative to the true value, which grows with $T$.
#
# Two more rows use a model, the step-wise doubly robust estimator (Jiang & Li, 2016; its weighted
# version is Thomas & Brunskill's WDR). It is DR applied at every step of the visit: with
# per-decision weights $w_t$ (and $w_{-1} = 1$), a model's value $\hat V(s_t)$ of the state and
# $\hat Q(s_t, a_t)$ of the logged action (the model's expected clicks from view $t$ to the end of
# the visit, the target acting after $t$),
# $$\hat V_{\text{SDR}} = \frac1n\sum_i\sum_t \gamma^t\Big[w_{i,t}\big(r_{i,t} - \hat Q(s_{i,t}, a_{i,t})\big)
#   + w_{i,t-1}\,\hat V(s_{i,t})\Big].$$
# Without a model ($\hat Q = \hat V = 0$) it is per-decision IS. The state of a view is the kind of
# visitor and the previous article. The model is a per-kind click table fitted on a separate log
# of 5000 single-view visits, plus the repeat rule; its values come from a backward pass over the
# views:

# %%
def visit_model_values(q_click, policy, horizon):
    """The model's Q[t, x, prev, a] and V[t, x, prev] of `policy` in visits of `horizon` views, from
    click rates q_click[x, a] and the repeat rule; prev = 5 means no previous view."""
    repeat = np.ones((6, 5))
    repeat[np.arange(5), np.arange(5)] = REPEAT_FACTOR  # showing the previous article again
    Q, V = np.zeros((horizon, 3, 6, 5)), np.zeros((horizon + 1, 3, 6))
    for t in range(horizon - 1, -1, -1):
        Q[t] = q_click[:, None, :] * repeat + V[t + 1][:, :5][:, None, :]  # next view's prev is a
        V[t] = np.sum(policy[:, None, :] * Q[t], axis=-1)
    return Q[..., :horizon, :, :, :], V[:horizon]


visit_model = fit_models(*log_visits((1, 5000)))[0][0]  # per-kind click table from other visits
horizons = [1, 2, 5, 10, 20, 50, 100]
repeats, n = 200, 100
names = ["log mean (no weights)", "full-trajectory IS", "weighted full-trajectory IS",
         "per-decision IS", "weighted per-decision IS", "step-wise DR", "weighted step-wise DR"]
rel_rmse = {name: [] for name in names}
rel_median = {name: [] for name in names}
z_pd, z_wpd, z_sdr, ess_fraction, mean_weight, pd_median_error = [], [], [], [], [], []
long_logs = {}
for horizon in horizons:
    k, a, r = log_visit_sequences((repeats, n), horizon)
    rho = visit_ratio[k[..., None], a]
    truth = visit_value(visit_target, horizon)
    full = rc.importance_estimate(r.sum(axis=-1), rho.prod(axis=-1))
    pd = rc.per_decision_estimate(r, rho)
    Q, V = visit_model_values(visit_model, visit_target, horizon)
    prev = np.concatenate([np.full((repeats, n, 1), 5), a[..., :-1]], axis=-1)
    steps = np.arange(horizon)
    sdr = rc.stepwise_doubly_robust_estimate(r, rho, Q[steps, k[..., None], prev, a], V[steps, k[..., None], prev])
    estimates = dict(zip(names, (r.sum(axis=-1).mean(axis=-1), full.ordinary, full.weighted,
                                 pd.ordinary, pd.weighted, sdr.ordinary, sdr.weighted)))
    for name, est in estimates.items():
        rel_rmse[name].append(np.sqrt(np.mean((est - truth) ** 2)) / truth)
        rel_median[name].append(np.median(np.abs(est - truth)) / truth)
    for z, est in ((z_pd, pd.ordinary), (z_wpd, pd.weighted), (z_sdr, sdr.ordinary)):
        z.append((est.mean() - truth) / (est.std() / np.sqrt(repeats)))
    pd_median_error.append(np.median(pd.ordinary - truth) / truth)
    ess_fraction.append(np.median(full.ess) / n)
    mean_weight.append(np.median(rho.prod(axis=-1).mean(axis=-1)))  # E_b[W] = 1
    top_share = {}
    for name, est in estimates.items():  # how much of the squared error the worst 5 logs carry
        sq = np.sort((est - truth) ** 2)[::-1]
        top_share[name] = sq[:5].sum() / sq.sum()
    if horizon in (50, 100):
        long_logs[horizon] = (r, rho, truth)  # kept for the error bars below and an exercise
ess_theory = np.array([ess_per_visit(visit_target, h) for h in horizons])  # 1 / E_b[W^2]
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
print(f"{'  median error / true value':34s}" + "".join(f"{v:+7.3f}" for v in pd_median_error))
print(f"{'weighted PD: bias / s.e.':34s}" + "".join(f"{v:+7.1f}" for v in z_wpd))
print(f"{'step-wise DR: bias / s.e.':34s}" + "".join(f"{v:+7.1f}" for v in z_sdr))
print("at T = 100, share of the squared error carried by the worst 5 of 200 logs:")
for name in names:
    print(f"  {name:32s} {top_share[name]:.0%}")

# %%
naive, full_is, full_w, pdis, wpdis, sdr_r, wsdr_r = (rel_rmse[name] for name in names)
naive_m, full_m, full_wm, pdis_m, wpdis_m, sdr_m, wsdr_m = (rel_median[name] for name in names)
assert np.all(np.diff(full_m[2:]) > 0) and full_m[-1] > 3 * full_m[2]  # full IS: grows from T = 5 on
assert np.all(pdis_m[2:] < full_m[2:])  # per-decision: smaller typical error from T = 5 on
assert np.all((0.3 < pdis_m[-2:] / full_m[-2:]) & (pdis_m[-2:] / full_m[-2:] < 0.7))  # about half
assert np.all(wpdis[2:] < np.minimum(pdis, full_is)[2:]) and np.all(wpdis_m[2:] < np.minimum(pdis_m, full_m)[2:])
assert np.all(wpdis[3:] < full_w[3:]) and np.all(wpdis_m[3:] < full_wm[3:])  # best without a model, T >= 10
assert naive_m[-1] < min(full_m[-1], pdis_m[-1])  # at T = 100 the ordinary ones lose to no weights
assert wpdis[-1] < 0.75 * naive[-1] and wpdis_m[-1] < 0.75 * naive_m[-1]
assert np.all(np.abs(z_pd[:5]) < 4)  # per-decision IS: unbiased (checked where its tails are mild)
assert np.all(np.array(pd_median_error[-2:]) < -0.1)  # ... but a typical log's estimate is low
assert z_wpd[-1] < -4  # weighted per-decision IS: biased at T = 100 (low, here)
assert np.all(np.abs(z_sdr) < 4)  # step-wise DR: no detectable bias at any horizon
assert np.all(np.maximum(sdr_m, wsdr_m)[5:] < wpdis_m[5:]) and sdr_m[-1] < 0.8 * wpdis_m[-1]  # from T = 50
assert np.all(wsdr_r[4:] < wpdis[4:])  # WDR's RMSE: below weighted PD's from T = 20
assert min(sdr_r[-1], pdis[-1]) > 2 * wsdr_r[-1]  # ordinary RMSEs: still ruled by the huge weights
assert ess_fraction[-1] < 0.1 < 0.8 < ess_fraction[0] and ess_fraction[-1] > ess_theory[-1]
no_weights_share = top_share["log mean (no weights)"]
assert min(top_share["full-trajectory IS"], top_share["per-decision IS"]) > 5 * no_weights_share
assert mean_weight[-1] < 0.7  # a typical log misses the big weights: its mean weight is far below 1

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4.2), dpi=100)
styles = ["k:", "C0o-", "C0s--", "C1o-", "C1s--", "C2o-", "C2s--"]
for name, style in zip(names, styles):
    ax1.loglog(horizons, rel_rmse[name], style, label=name)
    ax2.loglog(horizons, rel_median[name], style)
for ax in (ax1, ax2):
    ax.set_xlabel("horizon T (views per visit)")
    ax.set_xticks(horizons, [str(h) for h in horizons])
    ax.set_yticks([0.02, 0.05, 0.1, 0.2, 0.5, 1, 2], ["0.02", "0.05", "0.1", "0.2", "0.5", "1", "2"])
    ax.set_yticks([], minor=True)
ax1.set_ylabel("rmse / true value")
ax1.set_title("RMSE: a few huge weights rule at long T")
ax2.set_ylabel("median |error| / true value")
ax2.set_title("Median: per-step weights help, a model more")
fig.legend(loc="lower center", ncol=4, fontsize=9, frameon=False)
fig.tight_layout(rect=(0, 0.14, 1, 1))
plt.show()

# %% [markdown]
# Full-trajectory IS multiplies all $T$ ratios onto every click of the visit. Its typical error
# changes little up to $T = 5$ and grows from there on, as its ESS shrinks. The measured ESS stays
# above $1/\mathbb{E}_b[W^2]$ at long horizons because the rare huge weights that make the true
# variance so large are rarely drawn in 100 visits: a typical log's weights average far below
# their expectation of 1 (the "median of a log mean weight" row), so a small sample even hides how
# bad its weights are. The RMSE over 200 logs then rests on the few logs that did draw one: for
# the ordinary estimators the worst 5 logs carry many times the share of the squared error that
# they carry for the log mean. Read the long-horizon RMSE points on the left as rough, the
# medians on the right as the typical error.
#
# Per-decision IS weights each click only by the views up to it: its typical error is about half
# of full-trajectory IS's at long horizons. It is unbiased, and its average over the 200 logs
# stays within a few standard errors of the truth up to $T = 20$. At $T = 50$ and $100$ the
# typical log misses the huge weights too, so the median estimate lands well below the truth
# (the "median error" row, asserted below $-10\%$); the average over 200 logs then depends on
# whether a few of them happened to draw a huge weight (the worst 5 logs carry most of its
# squared error, printed last), so its bias/s.e. there is no reliable test either way. Weighted per-decision IS beats both ordinary estimators from $T = 5$ on and is the most
# accurate estimator without a model from $T = 10$ on, by both measures (at short horizons it
# ties with weighted full-trajectory IS, and at $T = 1$ the two are the same estimator), but its
# bias is no longer negligible at $T = 100$. Ignoring the weights has a fixed relative error, the
# gap between the two policies' values; at $T = 100$ both ordinary estimators typically do worse
# than that, and weighted per-decision IS beats it clearly.
#
# With a model fitted on 5000 other visits, step-wise DR shows no detectable bias at any horizon,
# and from $T = 50$ on its typical error, and WDR's, is clearly below weighted per-decision IS's
# (at $T = 20$ they are close, and which is ahead changes from run to run): the model predicts
# most of each click, and only its error is reweighted. Step-wise DR's RMSE, though, is ruled by
# the same few logs with huge weights as the other ordinary estimators (the worst 5 logs' share
# is printed last). Its weighted version, WDR, normalises those weights per step, and its RMSE
# is below weighted per-decision IS's from $T = 20$ on: the best estimator here. For longer horizons or policies further apart, off-policy RL uses a
# model this way, truncated traces (Retrace, V-trace; Exercise 1), or, as PPO does, stays close to
# the data's policy and clips the one-step ratio.
#
# **Error bars.** An estimate without an error bar cannot be compared with anything. The usual
# way to get one from a single log is the bootstrap: resample the log's visits with replacement,
# re-estimate, and read off the middle 90% of the re-estimates. Is that interval right? On many
# logs where the truth is known, count how often the 90% interval contains it: 400 one-step logs
# of 200 visits, and the 200 logs of 100 visits of 50 views above (full-trajectory and
# per-decision IS):

# %%
def bootstrap_interval(per_visit, n_boot=200, level=0.9):
    """Percentile bootstrap interval of the mean of per-visit values [R, n], one per log: [2, R]."""
    R, n = per_visit.shape
    picks = rng.integers(0, n, size=(R, n_boot, n))
    means = np.take_along_axis(per_visit[:, None, :], picks, axis=-1).mean(axis=-1)
    return np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=1)


r50, rho50, truth50 = long_logs[50]
k1, a1, r1 = log_visits((400, 200))
w1 = target[k1, a1] / behavior[k1, a1]
coverage_rows = {  # the ordinary estimators are means over visits, so the bootstrap is direct
    "one step, IS, n = 200": (w1 * r1, true_value),
    "T = 50, full-trajectory IS, n = 100": (rho50.prod(axis=-1) * r50.sum(axis=-1), truth50),
    "T = 50, per-decision IS, n = 100": (np.sum(np.cumprod(rho50, axis=-1) * r50, axis=-1), truth50),
}
coverage, misses_low = {}, {}
for name, (per_visit, truth) in coverage_rows.items():
    low, high = bootstrap_interval(per_visit)
    coverage[name] = np.mean((low <= truth) & (truth <= high))
    misses_low[name] = np.mean(high < truth) / max(1 - coverage[name], 1e-9)
    print(f"{name:37s} 90% intervals holding the truth: {coverage[name]:4.0%}; "
          f"of the misses, below it: {misses_low[name]:4.0%}")

# %%
assert 0.8 < coverage["one step, IS, n = 200"] < 0.97  # about honest where the weights are mild
for name in ("T = 50, full-trajectory IS, n = 100", "T = 50, per-decision IS, n = 100"):
    assert coverage[name] < 0.8 and misses_low[name] > 0.9, name  # too narrow, and too low
assert coverage["T = 50, full-trajectory IS, n = 100"] < 0.65

# %% [markdown]
# Where the weights are mild, the bootstrap interval holds the truth about as often as it claims.
# Where a typical log holds none of the rare huge weights, the resamples cannot show them either:
# far fewer than 90% of the intervals contain the truth, and nearly every miss lies below it. A
# bootstrap error bar on an importance-sampled estimate is only as good as the log's coverage of
# the weights' tail; with a small ESS, report the ESS next to it, or use bounds built for heavy
# tails (Thomas et al., 2015, *High-confidence off-policy evaluation*).

# %% [markdown]
# **Reusing one batch for many gradient steps.** Everything so far evaluated a fixed target. A
# policy-gradient method changes its policy after every step, so from the second step on, its
# batch came from an older policy: the same off-policy problem. Take a softmax policy over
# articles, logits $\theta[x, a]$, starting at the behaviour ($\theta = \log b$), one batch of
# 1000 logged visits with advantages $A_i = r_i - \bar r$, and 200 gradient steps on that one
# batch, three ways:
#
# - **no ratio**: ascend $\frac1n\sum_i A_i \log\pi_\theta(a_i|x_i)$, REINFORCE's on-policy
#   formula (lesson 08), as if the batch came from the current policy;
# - **ratio**: ascend $\frac1n\sum_i w_i A_i$ with $w_i = \pi_\theta(a_i|x_i)/b(a_i|x_i)$, whose
#   gradient $\frac1n\sum_i w_i A_i \nabla\log\pi_\theta(a_i|x_i)$ is the importance-weighted
#   estimate of the current policy's gradient;
# - **PPO's clip** (lesson 10): ascend $\frac1n\sum_i \min\big(w_i A_i,\ \text{clip}(w_i, 0.8, 1.2)\,A_i\big)$.
#
# Five batches (five seeds of the log), the same step size for all three, and the true value of
# the policy after each step:

# %%
def policy_values(policies):
    """Exact value of policies [..., 3, 5]."""
    return np.einsum("k,...ka,ka->...", visitor_mix, policies, click_rate)


methods = ["no ratio", "ratio", "PPO clip 0.2"]
batches, n, steps, step_size, eps = 5, 1000, 200, 1.5, 0.2
k, a, r = log_visits((batches, n))
logged_b = behavior[k, a]
kind_onehot, article_onehot = np.eye(3)[k], np.eye(5)[a]  # [batches, n, 3], [batches, n, 5]
advantage = r - r.mean(axis=1, keepdims=True)
theta = np.tile(np.log(behavior), (len(methods), batches, 1, 1))  # [method, batch, kind, article]
curves = []
for step in range(steps + 1):
    policy = np.exp(theta - theta.max(axis=-1, keepdims=True))
    policy /= policy.sum(axis=-1, keepdims=True)
    curves.append(policy_values(policy))
    if step == steps:
        break
    pi_rows = policy[:, np.arange(batches)[:, None], k]  # [method, batch, n, 5]
    w = np.sum(pi_rows * article_onehot, axis=-1) / logged_b
    spent = ((advantage > 0) & (w[2] > 1 + eps)) | ((advantage < 0) & (w[2] < 1 - eps))
    coef = np.stack([advantage, w[1] * advantage, np.where(spent, 0.0, w[2] * advantage)])
    grad_logits = coef[..., None] * (article_onehot - pi_rows)  # d/dlogits of each sample's term
    theta += step_size * np.matmul(kind_onehot.transpose(0, 2, 1), grad_logits) / n
curves = np.array(curves)  # [step, method, batch]
final_ess = w.sum(axis=-1) ** 2 / np.sum(w**2, axis=-1) / n  # [method, batch]
print(f"behaviour's value {policy_value(behavior):.3f}; best possible "
      f"{float(visitor_mix @ click_rate.max(axis=1)):.3f}")
print("true value after     20 steps              200 steps       | batch ESS / n at the end")
for m, name in enumerate(methods):
    line = f"{name:12s}"
    for s_ in (20, 200):
        line += f"  {np.median(curves[s_, m]):.3f} [{curves[s_, m].min():.3f}, {curves[s_, m].max():.3f}]"
    print(line + f"   | {np.median(final_ess[m]):.2f}")
ahead = curves[-1, 1] - curves[-1, 0]
print(f"after 200 steps the ratio is ahead of no ratio on {np.sum(ahead > 0)} of {batches} batches, "
      f"by a median of {np.median(ahead):.3f}")

# %%
assert np.sum(ahead > 0) >= 4 and np.median(ahead) > 0.015  # the ratio ends ahead of no ratio
assert np.all(curves[-1, 1] > policy_value(behavior) + 0.2)  # ... and gets far from the behaviour
assert np.all(curves[-1, 2] < policy_value(behavior) + 0.05)  # the clip stops early
assert np.all(final_ess[1] < 0.3) and np.all(final_ess[2] > 0.9)  # ... where the batch is still good

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for m, name in enumerate(methods):
    ax.plot(np.median(curves[:, m], axis=1), color=f"C{m}", label=f"{name} (median of 5 batches)")
    ax.fill_between(np.arange(steps + 1), curves[:, m].min(axis=1), curves[:, m].max(axis=1),
                    color=f"C{m}", alpha=0.2)
ax.axhline(float(visitor_mix @ click_rate.max(axis=1)), color="gray", ls=":", label="best possible policy")
ax.set_xlabel("gradient steps on the same batch of 1000 visits")
ax.set_ylabel("true value (clicks per visit)")
ax.set_title("With the ratio, one batch carries the policy far; the clip stops it early")
ax.set_ylim(top=0.56)  # room for the legend above the curves
ax.legend(fontsize=9, loc="upper left", ncol=2)
fig.tight_layout()
plt.show()

# %% [markdown]
# Without the ratio, every step after the first climbs the wrong objective: $\sum_i A_i
# \log\pi_\theta(a_i|x_i)$ counts each article as often as the behaviour showed it, so the policy
# is pulled towards articles the behaviour showed often and that did well, not simply the best
# ones; it ends lower than with the ratio (bands: the range over the 5 batches; the last printed
# line counts the batches). With the ratio, each step estimates the current policy's gradient,
# and one batch carries the policy most of the way to the best policy. But look where it ends:
# the batch's ESS for the final policy is a small fraction of its visits, so the estimates
# guiding the last steps rest on few effective samples. PPO's clip zeroes a sample's gradient
# once its ratio has left $[1 - \epsilon, 1 + \epsilon]$ in the direction its advantage pushes:
# the policy stops while the batch still describes it well (ESS near $n$), and PPO collects a
# fresh batch before going on.
# The same trade-off, how far to trust old data, is the whole of this lesson.

# %% [markdown]
# **Your "on-policy" LLM trainer is off-policy.** RL training of language models (GRPO, PPO,
# lessons 12-14) samples completions with a fast inference engine (vLLM, SGLang) and computes the
# gradient in a training framework (FSDP, Megatron). The two compute the same model's token
# probabilities with different kernels and precisions, and disagree slightly. The samples
# therefore come from the sampler's policy $\mu$, while the gradient is that of the trainer's
# $\pi$: $\mu$ is the behaviour policy, $\pi$ the target, and every token carries a ratio
# $\pi(y_t|y_{<t})/\mu(y_t|y_{<t})$, computed from the log-probabilities both sides return. Yao,
# Liu et al. (2025) showed the effect on real training runs and proposed truncated importance
# sampling (TIS) between the two. Two widely used trainers apply a correction:
#
# - TRL's GRPO trainer, when it samples with vLLM (`use_vllm=True`), applies it by default
#   (`vllm_importance_sampling_correction=True`). In the `trl/trainer/grpo_config.py` we read
#   (Hugging Face TRL, 2026) the default mode is `vllm_importance_sampling_mode="sequence_mask"`
#   with cap `vllm_importance_sampling_cap=3.0`: the trainer sums each completion's per-token log
#   ratios, exponentiates, and sets the sequence's ratio to 0, dropping the completion from the
#   loss, when it exceeds 3; below the cap the ratio multiplies the completion's token losses.
#   The other modes are `sequence_truncate` ($\min(w, 3)$), `token_truncate` and `token_mask`
#   (the same per token). Newer versions name the cap `vllm_importance_sampling_clip_max` (3.0).
# - verl (`algorithm.rollout_correction.rollout_is`, `token` or `sequence`) truncates the ratio at
#   `rollout_is_threshold`, 2.0 by default (its *Rollout correction* documentation).
#
# A small simulation of the mechanism: bigram language models over 64 tokens whose logits have
# the size a real model's have (around 20). The trainer computes the softmax in float64 from
# float32 logits; the sampler rounds the same logits to bfloat16 (8 significant bits) first. Real
# systems disagree for more reasons (kernels, reduction order and precision inside every layer);
# here rounding is the only one. The numbers depend on the model, so draw five random models and
# report the median and the range over them. (Each model's logits get a penalty of 3 on repeating
# the previous token, so that no draw collapses into a one-token loop, which makes sequences
# nearly deterministic and the two engines' disagreement vanish; the last column of the table
# shows the largest share any one token takes of a model's samples.)

# %%
def to_bfloat16(x):
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def sample_bigrams(logp, n, length):
    """n sequences of `length` tokens from each bigram table logp[model, previous, next],
    starting at token 0: [models, n, length + 1]."""
    models, vocab, _ = logp.shape
    cumulative = np.cumsum(np.exp(logp), axis=-1)
    cumulative[..., -1] = 1.0
    flat = (cumulative + np.arange(models * vocab).reshape(models, vocab, 1)).ravel()  # one sorted array
    tokens = np.zeros((models, n, length + 1), dtype=np.int64)
    row_base = (np.arange(models) * vocab)[:, None]
    for t in range(length):
        row = row_base + tokens[:, :, t]  # which row of `flat` each sequence samples from
        tokens[:, :, t + 1] = np.searchsorted(flat, row + rng.random((models, n)), side="right") - row * vocab
    return tokens


models, vocab, n_seq, cap = 5, 64, 600, 3.0
lm_logits = (18.0 + 3.0 * rng.standard_normal((models, vocab, vocab)) - 3.0 * np.eye(vocab)).astype(np.float32)
trainer_logp = rc.log_softmax(lm_logits.astype(np.float64))
sampler_logp = rc.log_softmax(to_bfloat16(lm_logits).astype(np.float64))
tokens = sample_bigrams(sampler_logp, n_seq, 1024)  # what the samplers generated
model_ix = np.arange(models)[:, None, None]
prev, nxt = tokens[..., :-1], tokens[..., 1:]
token_log_ratio = trainer_logp[model_ix, prev, nxt] - sampler_logp[model_ix, prev, nxt]  # log pi - log mu
top_share = np.array([np.bincount(tokens[m].ravel(), minlength=vocab).max() / tokens[m].size for m in range(models)])
lengths = [16, 64, 256, 1024]
llm = {key: np.zeros((len(lengths), models)) for key in ("ess", "masked", "mass masked", "mass truncated")}
for i, length in enumerate(lengths):
    seq_w = np.exp(token_log_ratio[..., :length].sum(axis=-1))  # each sequence's weight [models, n]
    llm["ess"][i] = rc.effective_sample_size(seq_w) / n_seq
    llm["masked"][i] = np.mean(seq_w > cap, axis=-1)  # dropped by sequence_mask
    llm["mass masked"][i] = np.mean(seq_w * (seq_w > cap), axis=-1)  # the weight they carried
    llm["mass truncated"][i] = np.mean(np.maximum(seq_w - cap, 0.0), axis=-1)  # what min(w, 3) drops


def spread(x, digits=3):
    """Median [min, max] over the model draws."""
    return f"{np.median(x):.{digits}f} [{np.min(x):.{digits}f}, {np.max(x):.{digits}f}]"


token_ratio_range = np.exp([token_log_ratio.min(), token_log_ratio.max()])
print(f"per token, over {models} models: median |log ratio| {spread(np.median(np.abs(token_log_ratio), axis=(1, 2)))}; "
      f"ratio range [{token_ratio_range[0]:.3f}, {token_ratio_range[1]:.3f}]")
print(f"KL(mu || pi) per token, mean of log mu - log pi (nats): {spread(-token_log_ratio.mean(axis=(1, 2)), 5)}")
print(f"largest share of one token in a model's samples: {spread(top_share)}")
print(f"median [min, max] over {models} models; sequence weights w, cap {cap:.0f}")
print(" length | ESS / n               | masked: w > 3         | weight masked         | min(w, 3) drops")
for i, length in enumerate(lengths):
    print(f"{length:7d} | " + " | ".join(spread(llm[key][i]) for key in llm))

# %%
assert token_ratio_range[1] < 1.5 and token_ratio_range[0] > 1 / 1.5  # no token ratio near the cap
assert np.all(np.diff(llm["ess"], axis=0) < 0) and np.all(llm["ess"][-1] < 0.8)  # every model: ESS falls
assert np.all(llm["masked"][0] == 0) and np.all(llm["masked"][-1] > 0.005)  # masking starts with length
assert np.all(llm["mass masked"][-1] > 0.1)  # ... and then drops a real share of the weight
assert np.all(top_share < 0.3)  # no draw collapsed into a one-token loop

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
ax1.hist(token_log_ratio[0].ravel(), bins=np.linspace(-0.15, 0.15, 31), density=True, histtype="step",
         lw=1.5, label="one token")
ax1.hist(token_log_ratio[0].sum(axis=-1), bins=np.linspace(-3.5, 3.5, 41), density=True, histtype="step",
         lw=1.5, label="a sequence of 1024 tokens")
ax1.axvline(np.log(cap), color="gray", ls=":", label="log 3: masked beyond")
ax1.set_yscale("log")
ax1.set_ylim(top=2000)  # room above the one-token spike for the legend
ax1.set_xlabel("log importance weight, $\\log\\pi - \\log\\mu$")
ax1.set_ylabel("density (log scale)")
ax1.set_title("Tiny per token, wide per sequence (model 1)")
ax1.legend(fontsize=9, loc="upper left")
for key, style in (("ess", "o-"), ("masked", "^-"), ("mass masked", "s--"), ("mass truncated", "d:")):
    label = {"ess": "ESS / n", "masked": "sequences masked (w > 3)", "mass masked": "weight masked",
             "mass truncated": "weight min(w, 3) drops"}[key]
    median = np.median(llm[key], axis=1)
    ax2.errorbar(lengths, median, yerr=[median - llm[key].min(axis=1), llm[key].max(axis=1) - median],
                 fmt=style, capsize=3, label=label)
ax2.set_xscale("log")
ax2.set_xticks(lengths, [str(x) for x in lengths])
ax2.set_xticks([], minor=True)
ax2.set_xlabel("sequence length (tokens)")
ax2.set_ylabel("fraction (median, range of 5 models)")
ax2.set_title("Sequence weights degrade with length")
ax2.legend(fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# Per token, the two engines agree to within the printed ratio range, and the KL between them is
# a few ten-thousandths of a nat. But a sequence's weight is a product over its tokens, the
# long-horizon problem of the previous section: over 1024 tokens the ESS falls to the printed
# fraction in every model. TRL's default, masking sequences whose weight exceeds 3, does nothing
# at 16 tokens; at 1024 it drops a few percent of the sequences (the "masked" column), but those
# carry a much larger share of the total weight, because each of them carries more than 3 times
# the average. Whatever a masked sequence's reward or gradient, it is gone, so the masked estimate
# loses that whole share of the weight, where truncation at the same cap loses only the part
# above 3 (the last column; the difference is 3 times the masked fraction, since truncation keeps
# a weight of 3 for each of those sequences). Masking discards the sequences on
# which the two engines disagree most; truncation keeps them with a bounded weight: a choice
# between a larger bias and trusting those sequences at all. A token-level cap of 2 or 3 does
# nothing here, because no single token's ratio comes near it; it bites on the rare tokens where
# the two engines disagree wildly, which Yao, Liu et al. report in real systems (tokens whose
# probability differs by up to 1 between engines). Which level and which cap is right depends on
# how large and how heavy-tailed the disagreement is: measure it (the ESS, the ratios' range, the
# masked fraction) before choosing, as the frameworks' diagnostics do. The policy gradient is an
# expectation of $A\,\nabla\log\pi$ instead of $r$, and the same weights multiply it, as in the
# batch-reuse experiment above.

# %% [markdown]
# ## Pitfalls
#
# - **Dividing the wrong way, or by stale probabilities.** $w = \pi/b$, target over behaviour,
#   with $b(a|x)$ of the action actually taken, at the time it was taken. $b/\pi$ still gives a
#   number, and so do propensities recomputed later from a policy that has since changed; both
#   are wrong. A free check: under the behaviour the weights average exactly 1, and wrong ones
#   do not (below, on the 1000-visit log of Build it). Estimating propensities without the
#   context (as the kind-blind ones did) biases IS too. In PPO: store `old_logp` during the
#   rollout; in LLM RL, use the log-probs the sampler returns, not the trainer's recomputation.

# %%
site_next_month = 0.5 * behavior + 0.5 * target  # the logging policy, a month after the log was written
candidate_weights = {
    "right: pi / b, logged propensities": target[kinds, articles] / propensities,
    "inverted: b / pi": propensities / target[kinds, articles],
    "stale: pi / b from next month's policy": target[kinds, articles] / site_next_month[kinds, articles],
}
weight_z = {}
for name, w in candidate_weights.items():
    weight_z[name] = (w.mean() - 1) / (w.std() / np.sqrt(w.size))
    print(f"{name:40s} mean weight {w.mean():.3f} ({weight_z[name]:+6.1f} s.e. from 1)   "
          f"IS estimate {np.mean(w * clicks):.3f} (true {true_value:.3f})")
assert abs(weight_z["right: pi / b, logged propensities"]) < 4
assert min(abs(weight_z["inverted: b / pi"]), abs(weight_z["stale: pi / b from next month's policy"])) > 4

# %% [markdown]
# - **No support.** A deterministic or epsilon-free behaviour policy never tries some actions; no
#   estimator can value them. Log with some exploration.
# - **Trusting a small ESS.** 1000 samples with ESS 5 give a weighted estimate worth roughly 5
#   on-policy samples (Check it measured the rule of thumb), and an ordinary one worth fewer;
#   report the ESS with the estimate.
# - **Error bars that ignore the tail.** A bootstrap interval cannot show weights the log never
#   drew: with long horizons far fewer than 90% of the 90% intervals held the truth, and the misses
#   were low. Report the ESS beside the interval.
# - **Long products.** Full-trajectory weights explode or vanish exponentially with the horizon;
#   use per-decision weights, a model (step-wise DR), truncation, or a target closer to the
#   behaviour.
# - **Truncation and masking are not free.** $\min(w, c)$ drops mass: with non-negative rewards the
#   ordinary estimate falls low, and a tight cap can fall below the behaviour's own value. Masking
#   (weight 0 above the cap) drops more: the whole weight of every masked sequence.
# - **Weighted estimators at small $n$.** Self-normalising cuts the spread but adds a bias that is
#   large for tiny samples (Check it measured it); weighted IS with all-zero weights is undefined
#   (the reference raises).
# - **Fitting the reward model on the evaluation log.** A flexible model fitted on the visits DR
#   corrects hides its own error there, and DR inherits part of its bias (Check it: half of it at
#   $\alpha = 1$, all of it at $\alpha = 0$); a model fitted on separate data, or cross-fitted (fit
#   on half, correct the other half, swap), kept DR unbiased.
# - **Reusing a batch without the ratio.** After the first step on a batch, the policy-gradient
#   formula needs $\pi_\theta/b$; without it the steps climb another objective. With it, the
#   policy walks to where the batch has few effective samples: clip, or collect fresh data.

# %% [markdown]
# ## Exercises
#
# 1. **Easy: truncated per-step ratios.** Retrace and V-trace (Further reading) keep long-horizon
#    off-policy learning stable by capping each step's ratio *before* multiplying: the reward at
#    step $t$ gets the weight $\prod_{s \le t} \min(\rho_s, c)$. Write
#    `truncated_per_decision(rewards, ratios, cap, gamma)` that returns this ordinary estimate from
#    `rewards` and `ratios` `[n, T]`. Then answer: with rewards $\ge 0$, compared with per-decision
#    IS on the same log, the truncated estimate is `"a"` never higher, so biased low unless no
#    ratio exceeds the cap; `"b"` unbiased, like per-decision IS; `"c"` sometimes higher,
#    sometimes lower; `"d"` never lower. Finally try it on the long-horizon logs of Use it
#    (`long_logs[100]` holds the rewards, the ratios and the true value at $T = 100$) with caps 1,
#    1.5 and 2: what happens to its typical error and to its bias, compared with per-decision IS?

# %% tags=["solution"]
def truncated_per_decision(rewards, ratios, cap, gamma):
    r, rho = np.asarray(rewards, dtype=float), np.asarray(ratios, dtype=float)
    w = np.cumprod(np.minimum(rho, cap), axis=1)  # each step's ratio capped, then multiplied
    return np.mean(np.sum(gamma ** np.arange(r.shape[1]) * w * r, axis=1))


truncated_answer = "a"
# On the T = 100 logs (a loop over the 200 logs; the reference per-decision IS for comparison):
r_long, rho_long, truth_long = long_logs[100]
for c in (1.0, 1.5, 2.0, np.inf):
    est = np.array([truncated_per_decision(r_long[i], rho_long[i], c, 1.0) for i in range(len(r_long))])
    print(f"cap {c:4}: median |error| / truth {np.median(np.abs(est - truth_long)) / truth_long:.3f}   "
          f"mean error / truth {(est.mean() - truth_long) / truth_long:+.3f}")
# Over 100 views the capped products shrink view after view, so late clicks nearly vanish: the
# estimate falls low, the further the tighter the cap (cap inf is per-decision IS). That is the
# bias of the question, large here. Truncated traces pay off when a value function fills in what
# the cut trace leaves out (Retrace, V-trace), not as a plain return estimate at long horizons.

# %%
assert rc.exercises.check("truncated_per_decision", truncated_per_decision)
assert rc.exercises.check("truncated_pd_question", lambda: truncated_answer)

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
# 3. **Hard: choose a softmax policy from the log.** The site's data scientists score each
#    (kind, article) pair, `scores[x, a]`, and would deploy
#    $\pi(a|x) \propto \exp(\text{scores}[x,a]/\tau)$ with a temperature $\tau$ still to choose.
#    (a) Write `softmax_policy_dr(scores, temperature, kinds, articles, clicks, propensities, q_table)`
#    that returns the doubly robust estimate of that policy's value from a log, with the model
#    `q_table[x, a]`; it must work for temperatures as small as 0.01 (nearly greedy) and for
#    kinds whose scores differ by hundreds. (b) As $\tau \to 0$ the policy becomes greedy; write
#    `greedy_weight_fraction(visitor_mix, behavior, scores)`: the expected fraction of a log's
#    visits that get a non-zero weight under the greedy policy. (c) On this lesson's log
#    (`kinds`, `articles`, `clicks`, `propensities`), with `per_kind_model` (fitted on a separate
#    log) as the model and `scores = np.log(click_rate + 0.01)`, estimate $\tau \in \{0.1, 0.3, 1,
#    3\}$ with a 90% bootstrap interval for each, and say which temperature you would deploy and
#    how far you trust its estimate. (Only (a) and (b) are checked; (c) is yours to argue.)

# %% tags=["solution"]
def softmax_policy_dr(scores, temperature, kinds, articles, clicks, propensities, q_table):
    z = np.asarray(scores, dtype=float) / temperature
    z = z - z.max(axis=1, keepdims=True)  # each kind's own max: exp never overflows, no row is all 0
    policy = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)  # [kind, article]
    q = np.asarray(q_table, dtype=float)[kinds]
    rows = np.arange(len(kinds))
    w = policy[kinds, articles] / propensities
    return np.mean(np.sum(policy[kinds] * q, axis=1) + w * (clicks - q[rows, articles]))


def greedy_weight_fraction(visitor_mix, behavior, scores):
    best = np.argmax(scores, axis=1)  # the greedy article of each kind
    return float(visitor_mix @ np.asarray(behavior)[np.arange(len(best)), best])


# One answer. The true values are printed only because this site is simulated.
scores = np.log(click_rate + 0.01)
print(f"the greedy policy uses {greedy_weight_fraction(visitor_mix, behavior, scores):.0%} of the visits")
lower_ends = {}
for tau in (0.1, 0.3, 1.0, 3.0):
    point = softmax_policy_dr(scores, tau, kinds, articles, clicks, propensities, per_kind_model)
    boot = []
    for _ in range(200):
        i = rng.integers(0, len(kinds), len(kinds))
        boot.append(softmax_policy_dr(scores, tau, kinds[i], articles[i], clicks[i], propensities[i],
                                      per_kind_model))
    lower_ends[tau], high = np.quantile(boot, [0.05, 0.95])
    z = scores / tau
    policy = np.exp(z - z.max(axis=1, keepdims=True))
    policy /= policy.sum(axis=1, keepdims=True)
    print(f"tau {tau:3.1f}: DR {point:.3f}  90% interval [{lower_ends[tau]:.3f}, {high:.3f}]  "
          f"ESS {rc.effective_sample_size(policy[kinds, articles] / propensities):4.0f} of {len(kinds)}"
          f"   (true {policy_value(policy):.3f})")
print(f"highest lower end of the interval: tau {max(lower_ends, key=lower_ends.get)}")
# Compare intervals, not point estimates: the cold policies' intervals overlap, and their
# estimates rest on the fewest effective visits. Deploying the temperature with the highest lower
# end is a cautious rule; the interval is trustworthy only as far as the ESS is large (Use it).

# %%
assert rc.exercises.check("softmax_policy_dr", softmax_policy_dr)
assert rc.exercises.check("greedy_weight_fraction", greedy_weight_fraction)

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
# | effective sample size | "ESS" | $(\sum w)^2/\sum w^2$, scale-free: a rule of thumb for how many on-policy samples the weighted estimate is worth (measured here: roughly; ordinary IS is worth fewer) |
# | support | "coverage" | $b(a\|x) > 0$ wherever $\pi(a\|x) > 0$; without it no estimator is consistent |
# | truncated IS | "clipping the weights" | $\min(w, c)$: less variance; drops the mass above $c$, so with non-negative rewards the ordinary estimate is too low |
# | per-decision IS | "only weight what came before" | a reward at step $t$ is weighted by the product of the ratios of steps $0..t$ only; unbiased |
# | direct method | "plug in a model" | the target's value under a reward model $\hat q$; as biased as the model |
# | doubly robust | "DR" | the direct method plus the importance-weighted model error; unbiased if either the propensities or the model are right, and the model did not see the samples it corrects |
# | cross-fitting | "fit on one half, evaluate on the other" | fit the model on one part of the log, correct the other part with it, swap and average: keeps an in-sample fit from hiding the model's error |
# | step-wise DR | "DR for trajectories" | per-decision IS plus a model's value at every step, minus its weighted prediction; unbiased with right ratios; WDR normalises the weights per step |
# | truncated / masked IS | "TIS", "sequence_mask" | weights capped at $c$ / set to 0 above $c$; both drop weight (masking more), trading bias for variance |
# | bootstrap interval | "error bar" | quantiles of the estimate over resampled logs; about right when the weights are mild, too narrow and too low when the log misses their tail |
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
# - Thomas, Theocharous, Ghavamzadeh (2015), *High-confidence off-policy evaluation*, AAAI: lower
#   bounds on a policy's value from importance-weighted data that hold with heavy-tailed weights,
#   where the bootstrap does not.
# - Chernozhukov et al. (2018), *Double/debiased machine learning for treatment and structural
#   parameters*, The Econometrics Journal: why a flexible model fitted on the same data biases a
#   doubly robust estimate, and cross-fitting as the fix.
# - Yao, Liu, Zhang, Dong, Shang, Gao (2025), *Your efficient RL framework secretly brings you
#   off-policy RL training* (fengyao.notion.site/off-policy-rl): the sampler-trainer mismatch in
#   LLM RL and truncated importance sampling between them.
# - The verl documentation, *Rollout correction* (`algorithm.rollout_correction`: `rollout_is`,
#   `rollout_is_threshold`, 2.0 by default), and Hugging Face TRL's `trl/trainer/grpo_config.py`
#   and `grpo_trainer.py` (`vllm_importance_sampling_correction=True`,
#   `vllm_importance_sampling_mode="sequence_mask"`, `vllm_importance_sampling_cap=3.0`, later
#   `vllm_importance_sampling_clip_max`): how two widely used trainers apply that correction.
