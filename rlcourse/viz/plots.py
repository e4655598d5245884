"""Plot helpers for the lessons: learning curves and PPO's training diagnostics (matplotlib).

Each function draws into the axes it is given (or a new small figure) and returns them, so a
lesson can add a title that says what to notice and then call ``plt.show()``.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import as_float_array, check_count, check_finite, real_scalar
from ._inputs import check_axes, check_flag

__all__ = ["learning_curve", "ppo_diagnostics", "moving_average"]


def moving_average(x, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at each position (fewer at the start): ``[E] -> [E]``."""
    x = as_float_array("x", x, ndim=1).astype(np.float64)
    window = check_count("window", window)
    sums = np.cumsum(np.concatenate([[0.0], x]))
    counts = np.minimum(np.arange(1, len(x) + 1), window)
    return (sums[1:] - sums[np.arange(1, len(x) + 1) - counts]) / counts


def _axes(ax, figsize=(8, 3.5)):
    import matplotlib.pyplot as plt

    if ax is not None:
        return check_axes("ax", ax)
    _, ax = plt.subplots(figsize=figsize, dpi=100)
    return ax


def _curve(result) -> tuple:
    """``(end_steps, returns)`` of a training result or a pair, as 1-D finite float64 arrays."""
    if hasattr(result, "episode_returns") and hasattr(result, "episode_end_steps"):
        steps, returns = result.episode_end_steps, result.episode_returns
    elif isinstance(result, (tuple, list)):
        if len(result) != 2:
            raise ValueError(f"result: expected a pair (end_steps, returns), got {len(result)} items")
        steps, returns = result
    else:
        raise TypeError("result: expected a training result (with episode_returns and "
                        f"episode_end_steps) or a pair (end_steps, returns), got {type(result).__name__}")
    steps, returns = (as_float_array("result", a).astype(np.float64) for a in (steps, returns))
    if steps.ndim != 1 or steps.shape != returns.shape:
        raise ValueError(f"result: expected end steps and returns of one shape [E], got {steps.shape} "
                         f"and {returns.shape}")
    return steps, returns


def learning_curve(result, ax=None, window: int = 20, label: str | None = None,
                   target: float | None = None, raw: bool = True):
    """Episode returns against the env step at which each episode ended.

    ``result`` is a training result (with ``episode_returns`` and ``episode_end_steps``) or a
    pair ``(end_steps, returns)``. Draws the raw returns faintly (if ``raw``) and their moving
    average over ``window`` episodes; ``target`` adds a dashed line (e.g. 475 for CartPole).
    Steps and returns must be finite: a NaN or inf return is an error naming ``result``, not a
    gap, as one would spread through the moving average. Returns the axes.
    """
    steps, returns = _curve(result)
    window = check_count("window", window)
    raw = check_flag("raw", raw)
    if target is not None:
        target = real_scalar("target", target)
        check_finite("target", np.asarray(target))
    ax = _axes(ax)
    if returns.size:
        line, = ax.plot(steps, moving_average(returns, window), label=label)
        if raw:
            ax.plot(steps, returns, ".", ms=2, alpha=0.25, color=line.get_color())
    if target is not None:
        ax.axhline(target, ls="--", lw=1, color="gray")
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"episode return (mean of {window})")
    return ax


_PANELS = (
    ("approx_kl", "approx KL(old || new)"),
    ("clip_fraction", "clip fraction"),
    ("entropy", "policy entropy (nats)"),
    ("explained_variance", "explained variance"),
)


def ppo_diagnostics(results, labels=None, axes=None):
    """A 2 x 2 grid of per-update diagnostics against env steps: approx KL, clip fraction,
    entropy and the critic's explained variance. ``results`` is one training result or a list
    (drawn as separate lines, named by ``labels``: a list of one per result, or a string for one
    result); ``axes`` four matplotlib axes (e.g. ``plt.subplots(2, 2)[1]``). Each history key is
    drawn as it is: a NaN or inf entry (a diverged update) shows as a gap in its line, nothing
    is smoothed (``history["steps"]``, the x axis, must be finite). Returns the array of axes."""
    import matplotlib.pyplot as plt

    if not isinstance(results, (list, tuple)):
        results = [results]
    if not results:
        raise ValueError("results: expected a training result or a non-empty list of them, got none")
    curves = [_diagnostics(f"results[{j}]", r) for j, r in enumerate(results)]
    if isinstance(labels, str):
        labels = [labels]
    elif labels is not None and (isinstance(labels, bytes) or not hasattr(labels, "__iter__")):
        raise TypeError(f"labels: expected a list of {len(results)} labels, got {type(labels).__name__}")
    labels = list(labels) if labels is not None else [None] * len(results)
    if len(labels) != len(results):
        raise ValueError(f"labels: expected {len(results)} labels, got {len(labels)}")
    if axes is None:
        _, axes = plt.subplots(2, 2, figsize=(9, 5.5), dpi=100, sharex=True)
    else:
        check_axes("axes", axes, count=len(_PANELS))
    for (steps, series), label in zip(curves, labels):
        for ax, values in zip(np.ravel(axes), series):
            ax.plot(steps, values, label=label, lw=1)
    for ax, (_, name) in zip(np.ravel(axes), _PANELS):
        ax.set_ylabel(name)
    for ax in np.ravel(axes)[2:]:
        ax.set_xlabel("environment steps")
    if any(label is not None for label in labels):
        np.ravel(axes)[0].legend(fontsize=9)
    return axes


def _diagnostics(name: str, result) -> tuple:
    """``(steps, [one array per panel])`` of a PPO result's history, each ``[U]`` of real numbers
    (NaN and inf allowed: they are drawn as gaps)."""
    history = getattr(result, "history", None)
    if not isinstance(history, dict):
        raise TypeError(f"{name}: expected a PPO training result (with a history dict), got "
                        f"{type(result).__name__}")
    missing = [k for k in ("steps", *(key for key, _ in _PANELS)) if k not in history]
    if missing:
        raise ValueError(f"{name}: its history has no {missing} (is it a PPO result?); it has "
                         f"{sorted(history)}")
    steps = np.asarray(history["steps"])
    series = []
    for key in ("steps", *(key for key, _ in _PANELS)):
        arr = np.asarray(history[key])
        if arr.dtype == object or arr.dtype.kind not in "biuf" or arr.ndim != 1 \
                or arr.shape != steps.shape:
            raise ValueError(f"{name}: history[{key!r}] should be [U] real numbers, one per update as "
                             f"history['steps'] {steps.shape}, got shape {arr.shape} dtype {arr.dtype}")
        series.append(arr)
    check_finite(f"{name}: history['steps']", series[0])
    return series[0], series[1:]
