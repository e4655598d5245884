"""Plot helpers for the lessons: learning curves and PPO's training diagnostics (matplotlib).

Each function draws into the axes it is given (or a new small figure) and returns them, so a
lesson can add a title that says what to notice and then call ``plt.show()``.
"""

from __future__ import annotations

import numpy as np

from ..core._checks import check_count

__all__ = ["learning_curve", "ppo_diagnostics", "moving_average"]


def moving_average(x, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at each position (fewer at the start): ``[E] -> [E]``."""
    x = np.asarray(x, dtype=np.float64)
    window = check_count("window", window)
    sums = np.cumsum(np.concatenate([[0.0], x]))
    counts = np.minimum(np.arange(1, len(x) + 1), window)
    return (sums[1:] - sums[np.arange(1, len(x) + 1) - counts]) / counts


def _axes(ax, figsize=(5, 3)):
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, dpi=72)
    return ax


def learning_curve(result, ax=None, window: int = 20, label: str | None = None,
                   target: float | None = None, raw: bool = True):
    """Episode returns against the env step at which each episode ended.

    ``result`` is a training result (with ``episode_returns`` and ``episode_end_steps``) or a
    pair ``(end_steps, returns)``. Draws the raw returns faintly (if ``raw``) and their moving
    average over ``window`` episodes; ``target`` adds a dashed line (e.g. 475 for CartPole).
    Returns the axes.
    """
    if isinstance(result, tuple):
        steps, returns = (np.asarray(a, dtype=np.float64) for a in result)
    else:
        steps = np.asarray(result.episode_end_steps, dtype=np.float64)
        returns = np.asarray(result.episode_returns, dtype=np.float64)
    if steps.shape != returns.shape:
        raise ValueError(f"end steps and returns must have the same shape, got {steps.shape} "
                         f"and {returns.shape}")
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
    (drawn as separate lines, named by ``labels``). Returns the array of axes."""
    import matplotlib.pyplot as plt

    if not isinstance(results, (list, tuple)):
        results = [results]
    labels = list(labels) if labels is not None else [None] * len(results)
    if len(labels) != len(results):
        raise ValueError(f"labels: expected {len(results)} labels, got {len(labels)}")
    if axes is None:
        _, axes = plt.subplots(2, 2, figsize=(8, 5), dpi=72, sharex=True)
    for result, label in zip(results, labels):
        for ax, (key, _) in zip(np.ravel(axes), _PANELS):
            ax.plot(result.history["steps"], result.history[key], label=label, lw=1)
    for ax, (_, name) in zip(np.ravel(axes), _PANELS):
        ax.set_ylabel(name)
    for ax in np.ravel(axes)[2:]:
        ax.set_xlabel("environment steps")
    if any(label is not None for label in labels):
        np.ravel(axes)[0].legend(fontsize=8)
    return axes
