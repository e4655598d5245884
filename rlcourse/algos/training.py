"""Plumbing shared by the trainers: the result type, episode and diagnostics bookkeeping, a
progress line and flat parameter vectors."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..autodiff import tree_leaves, tree_map

__all__ = ["TrainResult", "TrainingLog", "Progress", "FlatParams"]


@dataclass
class TrainResult:
    """What ``ppo`` and ``actor_critic`` return.

    ``params`` the trained parameters; ``episode_returns [E]`` the undiscounted return of every
    training episode in completion order and ``episode_end_steps [E]`` the env step (counting
    all ``n`` copies) at which each ended; ``steps [U]`` env steps after each update and
    ``mean_returns [U]`` the mean of the last (up to) 20 training episodes at that point (NaN
    before the first episode ends); ``updates`` the number of updates done. Per-update
    diagnostics ``[U]`` (means over the update's minibatches): ``approx_kl`` (the k3 estimate of
    KL(old || new)), ``clip_fraction`` (share of samples with ``|ratio - 1| > clip``),
    ``entropy``, ``value_loss``, ``policy_loss``, ``explained_variance`` (of the rollout's
    returns by the critic's values before the update).
    """

    params: object
    episode_returns: np.ndarray
    episode_end_steps: np.ndarray
    steps: np.ndarray
    mean_returns: np.ndarray
    updates: int
    approx_kl: np.ndarray
    clip_fraction: np.ndarray
    entropy: np.ndarray
    value_loss: np.ndarray
    policy_loss: np.ndarray
    explained_variance: np.ndarray
    wall_time: float = field(default=0.0, repr=False)


def _in_notebook() -> bool:
    return "ipykernel" in sys.modules


class Progress:
    """One overwritten status line on stderr for long runs.

    ``enabled=None`` (auto) shows it only when stderr is a terminal and the code is not running
    in a Jupyter kernel, so notebook outputs (compared by nbval) never contain it.
    """

    def __init__(self, name: str, total: int, enabled: bool | None = None, every: float = 0.5):
        if enabled is None:
            enabled = bool(getattr(sys.stderr, "isatty", lambda: False)()) and not _in_notebook()
        self.name, self.total, self.enabled, self.every = name, total, enabled, every
        self._start = self._last = time.perf_counter()

    def update(self, steps: int, mean_return: float) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < self.every and steps < self.total:
            return
        self._last = now
        shown = "  -  " if np.isnan(mean_return) else f"{mean_return:7.1f}"
        sys.stderr.write(f"\r{self.name}: {steps:>9,}/{self.total:,} steps  "
                         f"mean return (last 20) {shown}  {now - self._start:6.1f} s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


class TrainingLog:
    """Bookkeeping shared by the on-policy trainers: episodes, per-update diagnostics, progress,
    the user's callback; ``result(params)`` builds the :class:`TrainResult`."""

    def __init__(self, env, name: str, total_steps: int, progress, callback):
        self.env, self.callback = env, callback
        self.first_episode = len(env.episode_returns)
        self.end_steps: list[int] = []
        self.steps = 0
        self.history: dict[str, list[float]] = {key: [] for key in _DIAGNOSTICS + ("steps", "mean_returns")}
        self.progress = Progress(name, total_steps, progress)
        self.start = time.perf_counter()

    def episodes_ended(self, t: int, count: int) -> None:
        """``count`` episodes ended on vector step ``t`` of the rollout now being collected."""
        self.end_steps.extend([self.steps + (t + 1) * self.env.n] * count)

    def env_steps(self, count: int) -> None:
        self.steps += count

    def episode_returns(self) -> np.ndarray:
        return np.asarray(self.env.episode_returns[self.first_episode:], dtype=np.float64)

    def end_update(self, params, update: int, **diagnostics: float) -> bool:
        """Record one update; returns False if the callback asked to stop."""
        recent = self.episode_returns()[-20:]
        mean_return = float(recent.mean()) if recent.size else float("nan")
        for key in _DIAGNOSTICS:
            self.history[key].append(float(diagnostics.get(key, np.nan)))
        self.history["steps"].append(self.steps)
        self.history["mean_returns"].append(mean_return)
        self.progress.update(self.steps, mean_return)
        if self.callback is None:
            return True
        # a copy: the trainer updates its parameters in place, and a callback may keep these
        info = {"update": update, "steps": self.steps, "params": tree_map(np.copy, params),
                "mean_return": mean_return, "episode_returns": self.episode_returns(), **diagnostics}
        return self.callback(info) is not False

    def result(self, params) -> TrainResult:
        self.progress.close()
        h = {key: np.asarray(v, dtype=np.float64) for key, v in self.history.items()}
        return TrainResult(
            params=params,
            episode_returns=self.episode_returns(),
            episode_end_steps=np.asarray(self.end_steps, dtype=np.int64),
            steps=h["steps"].astype(np.int64),
            mean_returns=h["mean_returns"],
            updates=len(h["steps"]),
            **{key: h[key] for key in _DIAGNOSTICS},
            wall_time=time.perf_counter() - self.start,
        )


_DIAGNOSTICS = ("approx_kl", "clip_fraction", "entropy", "value_loss", "policy_loss",
                "explained_variance")


class FlatParams:
    """A parameter tree stored as one flat vector, with the tree's leaves as views into it.

    The optimiser and gradient clipping then work on a single array (a handful of numpy calls
    per step instead of a handful per layer), while the model still sees its nested dict.
    ``flatten(tree)`` packs a same-structured tree (e.g. gradients) into one vector;
    ``tree(vector)`` gives the parameter tree whose leaves view ``vector``.
    """

    def __init__(self, template):
        self.template = template
        leaves = tree_leaves(template)
        self.shapes = [np.shape(leaf) for leaf in leaves]
        self.ends = np.cumsum([int(np.prod(s)) for s in self.shapes]).tolist()
        self.dtype = np.result_type(*leaves)

    @classmethod
    def packed(cls, params, dtype):
        """``(layout, theta, params)``: ``params`` cast to ``dtype`` and packed into the single
        vector ``theta["theta"]`` (the tree an optimiser updates), with the returned ``params``
        rebuilt as views of it, so an in-place update of ``theta`` updates the model too."""
        layout = cls(tree_map(lambda p: np.asarray(p, dtype=dtype), params))
        theta = {"theta": layout.flatten(layout.template)}
        return layout, theta, layout.tree(theta["theta"])

    def flatten(self, tree) -> np.ndarray:
        return np.concatenate([np.ravel(leaf) for leaf in tree_leaves(tree)]).astype(self.dtype,
                                                                                   copy=False)

    def tree(self, vector: np.ndarray):
        views = iter([vector[start:end].reshape(shape) for start, end, shape
                      in zip([0, *self.ends[:-1]], self.ends, self.shapes)])
        return tree_map(lambda _: next(views), self.template)
