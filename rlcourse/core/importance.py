"""Importance sampling: estimating what a target policy would earn from a behaviour policy's data.

A sample ``x`` drawn from the behaviour policy ``b`` and reweighted by ``w = pi(x) / b(x)`` has
``E_b[w f(x)] = E_pi[f(x)]``, provided ``b(x) > 0`` wherever ``pi(x) > 0`` (support). Along a
trajectory the weights of the steps multiply, which is why long-horizon weights explode; the
per-decision estimator weights each reward only by the steps before it. With a model of the
rewards, the direct method and the doubly robust estimator trade some or all of the weights'
variance for the model's bias; along trajectories, the step-wise doubly robust estimator applies
the model's correction at every step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (
    as_bool_array,
    as_float_array,
    as_int_array,
    check_distribution,
    check_probability,
    check_shape,
)

__all__ = ["importance_weights", "importance_estimate", "ImportanceEstimate", "effective_sample_size",
           "per_decision_estimate", "PerDecisionEstimate", "direct_method_estimate",
           "doubly_robust_estimate", "stepwise_doubly_robust_estimate", "StepwiseEstimate"]


def importance_weights(target_probs, behavior_probs, actions, clip: float | None = None) -> np.ndarray:
    """Per-sample weights ``pi(a) / b(a)``: shape of ``actions``.

    ``target_probs`` and ``behavior_probs`` ``[..., A]`` are probability rows (each sums to 1),
    one row per sample (``[n, A]`` with ``actions`` ``[n]``; ``[T, n, A]`` with ``[T, n]`` for
    the steps of trajectories) or a single row ``[A]`` shared by every sample.

    ``clip`` caps each weight at ``clip``: ``min(w, clip)``, truncated importance sampling. The
    capped weights no longer average to 1 under ``b``: the mass above ``clip`` is dropped, so
    the ordinary estimate of a non-negative return *underestimates* (by
    ``E_b[(w - clip)_+ G]``), while the weighted estimate, which renormalises, converges to the
    value of the policy proportional to ``min(pi, clip * b)``: ``b`` itself when ``clip`` is
    below every weight, ``pi`` when it is above every weight.

    Raises if the behaviour policy lacks support: an action with ``b = 0`` where ``pi > 0`` can
    never be sampled, so no amount of data corrects for it; and an observed action with
    ``b = 0`` means the data did not come from ``b``.
    """
    target = as_float_array("target_probs", target_probs)
    behavior = as_float_array("behavior_probs", behavior_probs)
    check_shape("behavior_probs", behavior, target.shape, "target_probs")
    if target.ndim == 0:
        raise ValueError("target_probs: expected probability rows [..., A], got a scalar")
    check_distribution("target_probs", target)
    check_distribution("behavior_probs", behavior)
    n_actions = target.shape[-1]
    actions = as_int_array("actions", actions, low=0, high=n_actions)
    if target.ndim > 1 and actions.shape != target.shape[:-1]:
        raise ValueError(
            f"actions: expected shape {target.shape[:-1]} (one per probability row), got {actions.shape}"
        )
    unsupported = (behavior == 0) & (target > 0)
    if unsupported.any():
        where = tuple(int(i) for i in np.argwhere(unsupported)[0])
        raise ValueError(
            f"behavior_probs: no support where the target acts: at {_name_row(where[:-1])}action "
            f"{where[-1]} the behaviour probability is 0 but the target's is {target[where]:.3g}; "
            "importance sampling cannot recover that action's value from this data"
        )
    if target.ndim == 1:
        pi_a, b_a = target[actions], behavior[actions]
    else:
        pi_a = np.take_along_axis(target, actions[..., None], axis=-1)[..., 0]
        b_a = np.take_along_axis(behavior, actions[..., None], axis=-1)[..., 0]
    if (b_a == 0).any():
        where = tuple(int(i) for i in np.argwhere(b_a == 0)[0])
        raise ValueError(
            f"actions: the logged action of sample {where[0] if len(where) == 1 else where} "
            "has behaviour probability 0, so these actions were not drawn from behavior_probs"
        )
    weights = pi_a / b_a
    if clip is not None:
        clip = float(clip)
        if not clip > 0:
            raise ValueError(f"clip: expected a number > 0 (or None), got {clip}")
        weights = np.minimum(weights, clip)
    return weights


def _name_row(lead: tuple) -> str:
    """The leading index of a probability row, named: '' (one shared row), 'sample 3, ' ([n, A])
    or 'row (2, 3), ' (more leading axes, e.g. [T, n, A])."""
    if not lead:
        return ""
    return f"sample {lead[0]}, " if len(lead) == 1 else f"row {lead}, "


def _out(x):
    """A 0-d result as a float, a batch of results as an array."""
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def effective_sample_size(weights):
    """``(sum w)^2 / sum w^2``: how many equally weighted samples the weighted ones are worth.

    ``weights`` ``[n]`` (a float comes back) or ``[..., n]``: leading axes are independent data
    sets, e.g. replicates (an array comes back). ``n`` when every weight is equal, 1 when a single
    sample carries all the weight. The ESS does not change when every weight is multiplied by
    the same number, so it is computed on ``w / max(w)``: weights like ``2**600`` (whose square
    overflows) or ``1e-200`` (whose square underflows to 0) give the right answer, not NaN.
    """
    w = as_float_array("weights", weights).astype(np.float64)
    if w.ndim == 0:
        raise ValueError("weights: expected an array [n] or [..., n], got a scalar")
    if w.shape[-1] == 0:
        raise ValueError("weights: expected at least one weight, got none")
    if (w < 0).any():
        raise ValueError(f"weights: expected weights >= 0, got {w.min()}")
    top = w.max(axis=-1, keepdims=True)
    if (top == 0).any():
        first = tuple(int(i) for i in np.argwhere(top[..., 0] == 0)[0])
        where = "" if w.ndim == 1 else f" in data set {first}"
        raise ValueError(f"weights: every weight is 0{where}; the target never takes the actions in the data")
    u = w / top
    return _out(u.sum(axis=-1) ** 2 / np.sum(u * u, axis=-1))


class ImportanceEstimate(NamedTuple):
    """``ordinary``: ``mean(w * G)``, unbiased, its variance grows with the weights' spread.
    ``weighted``: ``sum(w G) / sum(w)``, biased for finite n (consistent), stays within the range
    of the returns, often (not always) lower variance. ``ess``: effective sample size.
    Floats for one data set, arrays for a batch of them."""

    ordinary: float | np.ndarray
    weighted: float | np.ndarray
    ess: float | np.ndarray


def importance_estimate(returns, weights) -> ImportanceEstimate:
    """Estimate the target policy's expected return from ``returns`` ``[n]`` collected by the
    behaviour policy and their importance ``weights`` ``[n]`` (``importance_weights``, or their
    product over a trajectory's steps). ``[..., n]``: leading axes are independent data sets
    (replicates), each estimated on its own."""
    g = as_float_array("returns", returns)
    w = as_float_array("weights", weights)
    check_shape("weights", w, g.shape, "returns")
    if g.ndim == 0 or g.shape[-1] == 0:
        raise ValueError(f"returns: expected at least one sample [n] or [..., n], got shape {g.shape}")
    ess = effective_sample_size(w)
    ordinary = np.mean(w * g, axis=-1)
    weighted = np.sum(w * g, axis=-1) / np.sum(w, axis=-1)
    return ImportanceEstimate(_out(ordinary), _out(weighted), ess)


class PerDecisionEstimate(NamedTuple):
    """``ordinary``: per-decision IS, unbiased. ``weighted``: weighted per-decision IS, each
    step's weights normalised by their sum over episodes (biased for finite n, consistent).
    Floats for one data set, arrays for a batch of them."""

    ordinary: float | np.ndarray
    weighted: float | np.ndarray


def _check_logged_steps(rewards, ratios, gamma, mask, **models):
    """Checked float64 ``rewards``, ``ratios`` ``[..., n, T]``, ``gamma`` and then each model
    array of ``models`` (same shape), with every step after an episode's end (``mask`` False)
    made absorbing: reward 0, ratio 1, model values 0."""
    r = as_float_array("rewards", rewards).astype(np.float64)
    if r.ndim < 2:
        raise ValueError(f"rewards: expected [n, T] (or [..., n, T]), got shape {r.shape}")
    arrays = {"ratios": ratios, **models}
    arrays = {name: as_float_array(name, x).astype(np.float64) for name, x in arrays.items()}
    for name, x in arrays.items():
        check_shape(name, x, r.shape, "rewards")
    if r.shape[-2] == 0 or r.shape[-1] == 0:
        raise ValueError(f"rewards: expected at least one episode and one step, got shape {r.shape}")
    if (arrays["ratios"] < 0).any():
        raise ValueError(f"ratios: expected ratios >= 0, got {arrays['ratios'].min()}")
    gamma = check_probability("gamma", gamma)
    if mask is not None:
        m = as_bool_array("mask", mask)
        check_shape("mask", m, r.shape, "rewards")
        r = np.where(m, r, 0.0)
        arrays = {name: np.where(m, x, 1.0 if name == "ratios" else 0.0) for name, x in arrays.items()}
    return (r, arrays.pop("ratios"), gamma, *arrays.values())


def per_decision_estimate(rewards, ratios, gamma: float = 1.0, mask=None) -> PerDecisionEstimate:
    """Per-decision importance sampling (Precup, Sutton & Singh 2000) from ``n`` episodes.

    ``rewards`` ``[n, T]``: ``rewards[i, t]`` is the reward that followed action ``a_t`` of
    episode ``i``. ``ratios`` ``[n, T]``: ``pi(a_t | s_t) / b(a_t | s_t)`` of the same step.
    A reward can only depend on the actions before and at its step, so it is weighted by the
    product of those steps' ratios only, ``w[i, t] = ratios[i, 0] * ... * ratios[i, t]``:

    - ``ordinary = mean_i sum_t gamma^t w[i, t] rewards[i, t]``, unbiased for the target's
      expected discounted return;
    - ``weighted = sum_t gamma^t sum_i w[i, t] rewards[i, t] / sum_i w[i, t]``.

    ``[..., n, T]``: leading axes are independent data sets (replicates). ``mask`` (optional,
    the shape of ``rewards``) marks the steps each episode really had: an episode that ended
    early counts as staying in an absorbing state, reward 0 and ratio 1. The weighted estimate is
    computed from log-weights normalised per step, so long products that underflow float64
    (``0.1 ** 400``) still give it rather than 0/0; if the products overflow float64 the ordinary
    estimate has no value and the function raises.
    """
    r, rho, gamma = _check_logged_steps(rewards, ratios, gamma, mask)
    discount = gamma ** np.arange(r.shape[-1])
    with np.errstate(divide="ignore"):
        log_w = np.cumsum(np.log(rho), axis=-1)  # a ratio of 0 gives -inf: that prefix has weight 0
    top = log_w.max(axis=-2, keepdims=True)
    if np.isneginf(top).any():
        t = int(np.argwhere(np.isneginf(top))[0][-1])
        raise ValueError(f"ratios: at step {t} every episode has weight 0 (the target never takes "
                         "those actions), so the weighted estimate is undefined there")
    u = np.exp(log_w - top)  # per step, the largest weight is 1
    weighted = np.sum(discount * np.sum(u * r, axis=-2) / np.sum(u, axis=-2), axis=-1)
    with np.errstate(over="ignore"):
        w = np.exp(log_w)
    if not np.isfinite(w).all():
        raise ValueError("ratios: the products of the ratios overflow float64, so the ordinary "
                         "per-decision estimate has no value; use the weighted one")
    ordinary = np.mean(np.sum(discount * w * r, axis=-1), axis=-1)
    return PerDecisionEstimate(_out(ordinary), _out(weighted))


def _check_model(target_probs, q_hat) -> tuple[np.ndarray, np.ndarray]:
    pi = as_float_array("target_probs", target_probs).astype(np.float64)
    if pi.ndim < 2:
        raise ValueError(f"target_probs: expected [n, A] (or [..., n, A]), got shape {pi.shape}")
    check_distribution("target_probs", pi)
    q = as_float_array("q_hat", q_hat).astype(np.float64)
    check_shape("q_hat", q, pi.shape, "target_probs")
    if pi.shape[-2] == 0:
        raise ValueError("target_probs: expected at least one sample, got none")
    return pi, q


def direct_method_estimate(target_probs, q_hat):
    """The direct method: ``mean_i sum_a pi(a | x_i) q_hat(x_i, a)``.

    ``target_probs`` ``[n, A]``: the target policy's action probabilities in each logged
    context ``x_i``; ``q_hat`` ``[n, A]``: a model's predicted reward of every action there. It
    uses no weights, so its variance is small, but it is as biased as the model.
    ``[..., n, A]``: leading axes are independent data sets (an array comes back).
    """
    pi, q = _check_model(target_probs, q_hat)
    return _out(np.mean(np.sum(pi * q, axis=-1), axis=-1))


def doubly_robust_estimate(rewards, actions, propensities, target_probs, q_hat):
    """The doubly robust estimate (Dudik, Langford & Li 2011) of the target's expected reward.

    ``mean_i [ sum_a pi(a|x_i) q_hat(x_i, a) + w_i (r_i - q_hat(x_i, a_i)) ]`` with
    ``w_i = pi(a_i | x_i) / propensities[i]``: the direct method, corrected by the importance-
    weighted error of the model on the logged actions. Unbiased if the propensities are the
    behaviour's true ``b(a_i | x_i)`` (whatever the model), or if the model's ``q_hat`` is the
    true expected reward (whatever the propensities), provided the model was not fitted on the
    samples it is evaluated on.

    ``rewards`` ``[n]``; ``actions`` ``[n]`` the logged actions; ``propensities`` ``[n]`` the
    probability in ``(0, 1]`` with which the logging policy chose each of them (log it at the
    time); ``target_probs`` and ``q_hat`` ``[n, A]`` as in :func:`direct_method_estimate`.
    ``[..., n]`` and ``[..., n, A]``: leading axes are independent data sets.
    """
    pi, q = _check_model(target_probs, q_hat)
    batch = pi.shape[:-1]
    r = as_float_array("rewards", rewards).astype(np.float64)
    check_shape("rewards", r, batch, "target_probs[..., 0]")
    a = as_int_array("actions", actions, low=0, high=pi.shape[-1])
    check_shape("actions", a, batch, "target_probs[..., 0]")
    p = as_float_array("propensities", propensities).astype(np.float64)
    check_shape("propensities", p, batch, "target_probs[..., 0]")
    if (p <= 0).any() or (p > 1).any():
        bad = p[(p <= 0) | (p > 1)][0]
        raise ValueError(f"propensities: expected probabilities in (0, 1] (the logged action was "
                         f"taken, so its probability was > 0), got {bad}")
    pi_a = np.take_along_axis(pi, a[..., None], axis=-1)[..., 0]
    q_a = np.take_along_axis(q, a[..., None], axis=-1)[..., 0]
    return _out(np.mean(np.sum(pi * q, axis=-1) + pi_a / p * (r - q_a), axis=-1))


class StepwiseEstimate(NamedTuple):
    """``ordinary``: step-wise doubly robust, unbiased if the ratios are right. ``weighted``: its
    self-normalised version, each step's weights normalised by their sum over episodes (biased for
    finite n, consistent). Floats for one data set, arrays for a batch of them."""

    ordinary: float | np.ndarray
    weighted: float | np.ndarray


def stepwise_doubly_robust_estimate(rewards, ratios, q_hat, v_hat, gamma: float = 1.0,
                                    mask=None) -> StepwiseEstimate:
    """Step-wise doubly robust estimate (Jiang & Li 2016; the weighted version is Thomas &
    Brunskill's 2016 WDR) of the target's expected discounted return from ``n`` episodes.

    ``rewards`` and ``ratios`` ``[n, T]`` as in :func:`per_decision_estimate`. A model of the
    target's values: ``q_hat[i, t]`` its predicted discounted return from step ``t`` on after the
    logged action ``a_t`` (the target acting afterwards), and ``v_hat[i, t]`` its predicted value
    of the state ``s_t``, ``sum_a pi(a | s_t) Q_hat(s_t, a)``. With ``w[i, t]`` the per-decision
    weights and ``w[i, -1] = 1``:

    - ``ordinary = mean_i sum_t gamma^t (w[i, t] (rewards[i, t] - q_hat[i, t]) + w[i, t-1] v_hat[i, t])``:
      per-decision IS with the model's value added and its importance-weighted prediction
      subtracted at every step. Unbiased if the ratios are right, whatever the model (if the
      model did not see these episodes); with a perfect model and deterministic rewards every
      episode's term equals ``V(s_0)``, zero variance. With ``q_hat = v_hat = 0`` it is
      per-decision IS;
    - ``weighted``: the same with ``w[:, t] / n`` replaced by ``w[:, t] / sum_i w[i, t]``.

    ``[..., n, T]``: leading axes are independent data sets. ``mask`` as in
    :func:`per_decision_estimate`: after an episode's end, reward, ``q_hat`` and ``v_hat`` 0,
    ratio 1.
    """
    r, rho, gamma, q, v = _check_logged_steps(rewards, ratios, gamma, mask, q_hat=q_hat, v_hat=v_hat)
    discount = gamma ** np.arange(r.shape[-1])
    with np.errstate(divide="ignore"):
        log_w = np.cumsum(np.log(rho), axis=-1)  # w[i, t] in log space; -inf: weight 0
    log_prev = np.concatenate([np.zeros_like(log_w[..., :1]), log_w[..., :-1]], axis=-1)  # w[i, t-1]

    def normalised(lw):  # w[:, t] / sum_i w[i, t], computed in log space per step
        top = lw.max(axis=-2, keepdims=True)
        if np.isneginf(top).any():
            t = int(np.argwhere(np.isneginf(top))[0][-1])
            raise ValueError(f"ratios: at step {t} every episode has weight 0 (the target never takes "
                             "those actions), so the weighted estimate is undefined there")
        u = np.exp(lw - top)
        return u / u.sum(axis=-2, keepdims=True)

    weighted = np.sum(discount * np.sum(normalised(log_w) * (r - q) + normalised(log_prev) * v, axis=-2),
                      axis=-1)
    with np.errstate(over="ignore"):
        w, w_prev = np.exp(log_w), np.exp(log_prev)
    if not (np.isfinite(w).all() and np.isfinite(w_prev).all()):
        raise ValueError("ratios: the products of the ratios overflow float64, so the ordinary "
                         "estimate has no value; use the weighted one")
    ordinary = np.mean(np.sum(discount * (w * (r - q) + w_prev * v), axis=-1), axis=-1)
    return StepwiseEstimate(_out(ordinary), _out(weighted))
