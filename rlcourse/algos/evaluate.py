"""Evaluate a fixed policy on a vector environment: the mean undiscounted return of whole episodes.

Training curves mix exploration noise and a moving policy; an evaluation runs one frozen
``policy(obs) -> actions`` (usually the greedy one) from a fresh, seeded reset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core._checks import as_rng, check_count, check_flag
from .trainer import check_env, check_params

__all__ = ["EvalResult", "evaluate", "greedy_policy", "Checkpoints"]


@dataclass(frozen=True)
class EvalResult:
    """``mean`` of ``returns [episodes]``; ``lengths [episodes]`` are the episodes' step counts.

    Episodes are ordered by copy, then by completion within a copy (not by wall-clock order).
    """

    mean: float
    std: float
    returns: np.ndarray
    lengths: np.ndarray


def evaluate(env, policy, episodes: int = 10, seed: int = 0, max_steps: int = 1_000_000) -> EvalResult:
    """Run ``policy`` on ``env`` until ``episodes`` whole episodes have finished.

    ``env`` is reset with ``seed``, so only episodes that start at that reset or later count, and
    the result is a deterministic function of ``(policy, seed)``. ``policy(obs [n, ...])`` returns
    actions ``[n]``. Copy ``i`` of ``n`` contributes ``(episodes + i) // n`` episodes: a fixed
    quota per copy, because "the first ``episodes`` to finish" would over-sample short episodes.
    ``max_steps`` bounds the vector steps taken, so a policy that never ends an episode in an
    environment without a time limit raises instead of hanging.
    """
    episodes = check_count("episodes", episodes)
    max_steps = check_count("max_steps", max_steps)
    check_env(env)
    if not callable(policy):
        raise TypeError(f"policy: expected a function obs -> actions, got {type(policy).__name__}")
    n = env.n
    quota = np.array([(episodes + i) // n for i in range(n)])
    returns: list[list[float]] = [[] for _ in range(n)]
    lengths: list[list[int]] = [[] for _ in range(n)]
    running = np.zeros(n)
    steps = np.zeros(n, dtype=np.int64)
    obs = env.reset(seed=seed)
    for _ in range(max_steps):
        if all(len(r) >= q for r, q in zip(returns, quota)):
            break
        step = _step(env, policy, obs)
        running += step.reward
        steps += 1
        for i in np.flatnonzero(step.terminated | step.truncated).tolist():
            if len(returns[i]) < quota[i]:
                returns[i].append(float(running[i]))
                lengths[i].append(int(steps[i]))
            running[i] = 0.0
            steps[i] = 0
        obs = step.obs
    else:
        done = sum(len(r) for r in returns)
        raise RuntimeError(
            f"evaluate: only {done} of {episodes} episodes finished within max_steps={max_steps} "
            "vector steps; the policy may never end an episode"
        )
    flat_returns = np.array([r for per_copy in returns for r in per_copy])
    flat_lengths = np.array([n_ for per_copy in lengths for n_ in per_copy], dtype=np.int64)
    return EvalResult(float(flat_returns.mean()), float(flat_returns.std()), flat_returns, flat_lengths)


def _step(env, policy, obs):
    """``env.step(policy(obs))``; an error from either names ``policy`` and ``env``, since the
    policy's actions or its fit to the env's observations is the likely cause."""
    try:
        actions = policy(obs)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        raise ValueError(f"policy: failed on env's observations of shape {np.shape(obs)}: "
                         f"{type(err).__name__}: {err}") from err
    try:
        return env.step(actions)
    except (ValueError, TypeError) as err:
        raise type(err)(f"policy: env could not take its actions ({err})") from err


def greedy_policy(model, params):
    """``obs -> argmax_a model(params, obs)[:, a]``: greedy for a Q-network, the mode for logits.

    If ``model`` returns a tuple (``(logits, value)`` of an actor-critic), its first item is used.
    Ties go to the lowest action index (``np.argmax``).
    """
    if not callable(model):
        raise TypeError(f"model: expected a function (params, obs) -> scores, got "
                        f"{type(model).__name__}")
    check_params("params", params, optional=True)

    def policy(obs):
        out = model(params, obs)
        scores = out[0] if isinstance(out, tuple) else out
        return np.argmax(np.asarray(scores), axis=-1)

    return policy


class Checkpoints:
    """A trainer callback that scores the greedy policy during training and keeps the best.

    Pass it as any trainer's ``callback``. Every ``every`` env steps, and after the last update,
    it runs :func:`evaluate` on ``eval_env`` (a separate environment, never the training one)
    for ``episodes`` episodes from ``reset(seed=seed)``, so every checkpoint meets the same
    start states and the training run's random streams are untouched. It records ``steps``
    and ``returns`` (the mean return of each evaluation) and, with ``keep_best``, the
    parameters of the first evaluation that scored the best: ``best_params``, ``best_return``
    and ``best_step``. The best of many noisy scores is optimistic: evaluate ``best_params``
    on other seeds before quoting a figure.
    """

    def __init__(self, eval_env, model, every: int = 2_560, episodes: int = 10, seed: int = 1_000,
                 keep_best: bool = True):
        check_env(eval_env, "eval_env")
        if not callable(model):
            raise TypeError(f"model: expected a function (params, obs) -> scores, got "
                            f"{type(model).__name__}")
        self.eval_env, self.model = eval_env, model
        self.every, self.episodes = check_count("every", every), check_count("episodes", episodes)
        as_rng(seed)
        self.seed, self.keep_best = seed, check_flag("keep_best", keep_best)
        self.steps: list[int] = []
        self.returns: list[float] = []
        self.best_params, self.best_return, self.best_step = None, None, None
        self._next = self.every

    def __call__(self, info: dict) -> bool:
        if info["steps"] >= self._next or info["last"]:
            while self._next <= info["steps"]:
                self._next += self.every
            score = evaluate(self.eval_env, greedy_policy(self.model, info["params"]),
                             self.episodes, seed=self.seed).mean
            self.steps.append(int(info["steps"]))
            self.returns.append(score)
            # strictly better only: among equal scores the earliest checkpoint is kept
            if self.keep_best and (self.best_return is None or score > self.best_return):
                self.best_params, self.best_return, self.best_step = info["params"], score, info["steps"]
        return True
