"""Importance sampling: estimating what a target policy would earn from a behaviour policy's data.

A sample ``x`` drawn from the behaviour policy ``b`` and reweighted by ``w = pi(x) / b(x)`` has
``E_b[w f(x)] = E_pi[f(x)]``, provided ``b(x) > 0`` wherever ``pi(x) > 0`` (support). Along a
trajectory the weights of the steps multiply, which is why long-horizon weights explode.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_float_array, as_int_array, check_distribution, check_shape

__all__ = ["importance_weights", "importance_estimate", "ImportanceEstimate", "effective_sample_size"]


def importance_weights(target_probs, behavior_probs, actions, clip: float | None = None) -> np.ndarray:
    """Per-sample weights ``pi(a) / b(a)``: shape of ``actions``.

    ``target_probs`` and ``behavior_probs`` ``[..., A]`` are probability rows (each sums to 1),
    one row per sample (``[n, A]`` with ``actions`` ``[n]``; ``[T, n, A]`` with ``[T, n]`` for
    the steps of trajectories) or a single row ``[A]`` shared by every sample. ``clip`` caps each
    weight at ``clip`` (truncated importance sampling: less variance, some bias).

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
            f"behavior_probs: no support where the target acts: at {where} the behaviour probability "
            f"is 0 but the target's is {target[where]:.3g}; importance sampling cannot recover that "
            "action's value from this data"
        )
    if target.ndim == 1:
        pi_a, b_a = target[actions], behavior[actions]
    else:
        pi_a = np.take_along_axis(target, actions[..., None], axis=-1)[..., 0]
        b_a = np.take_along_axis(behavior, actions[..., None], axis=-1)[..., 0]
    if (b_a == 0).any():
        where = tuple(int(i) for i in np.argwhere(b_a == 0)[0])
        raise ValueError(
            f"actions: the action at {where} has behaviour probability 0, so these actions were "
            "not drawn from behavior_probs"
        )
    weights = pi_a / b_a
    if clip is not None:
        clip = float(clip)
        if not clip > 0:
            raise ValueError(f"clip: expected a number > 0 (or None), got {clip}")
        weights = np.minimum(weights, clip)
    return weights


def effective_sample_size(weights) -> float:
    """``(sum w)^2 / sum w^2``: how many equally weighted samples the weighted ones are worth.

    ``n`` when every weight is equal, 1 when a single sample carries all the weight.
    """
    w = as_float_array("weights", weights, ndim=1)
    if (w < 0).any():
        raise ValueError(f"weights: expected weights >= 0, got {w.min()}")
    total = w.sum()
    if total == 0:
        raise ValueError("weights: every weight is 0; the target never takes the actions in the data")
    return float(total**2 / np.sum(w * w))


class ImportanceEstimate(NamedTuple):
    """``ordinary``: ``mean(w * G)``, unbiased, high variance. ``weighted``: ``sum(w G) / sum(w)``,
    biased for finite n (consistent), far lower variance. ``ess``: effective sample size."""

    ordinary: float
    weighted: float
    ess: float


def importance_estimate(returns, weights) -> ImportanceEstimate:
    """Estimate the target policy's expected return from ``returns`` ``[n]`` collected by the
    behaviour policy and their importance ``weights`` ``[n]`` (``importance_weights``, or their
    product over a trajectory's steps)."""
    g = as_float_array("returns", returns, ndim=1)
    w = as_float_array("weights", weights, ndim=1)
    check_shape("weights", w, g.shape, "returns")
    if g.size == 0:
        raise ValueError("returns: expected at least one sample, got none")
    ess = effective_sample_size(w)
    return ImportanceEstimate(float(np.mean(w * g)), float(np.sum(w * g) / np.sum(w)), ess)
