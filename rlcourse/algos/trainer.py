"""The contract every deep-RL trainer keeps, and the plumbing that keeps it out of their bodies.

``ppo``, ``actor_critic``, ``reinforce`` and ``dqn`` have one shape::

    result = trainer(env, model, params, total_steps, *, <hyperparameters>,
                     opt=None, dtype=np.float32, seed=0, callback=None, progress=None)

- ``env``: a vector environment (``n`` copies, see :mod:`rlcourse.envs.base`), reset once with
  ``seed`` (copy ``i`` with ``seed + i``).
- ``model(params, obs)``: the network; ``params`` a nested dict/list of arrays, cast to
  ``dtype`` and updated in place of a flat copy (the caller's arrays are never written).
- ``total_steps``: the budget in environment transitions, all ``n`` copies counted. The run
  stops after the update in which it is reached (REINFORCE's last batch of whole episodes can
  overshoot; ``result.steps`` says exactly how many were taken).
- ``opt``: any optimiser with ``init(params)``, ``step(params, grads, state, lr=None)`` and an
  ``lr`` attribute (default: Adam with the trainer's ``lr``).
- ``seed``: the same seed gives the same result bit for bit. The agent's own draws (actions,
  exploration, minibatches) come from :func:`~rlcourse.core._checks.agent_rng`, a stream
  independent of the environment's copies.
- ``callback(info)`` runs after every update with a dict: ``update`` (0-based), ``steps`` (env
  transitions so far), ``params`` (a copy), ``mean_return`` (of the last 20 episodes, NaN
  before one ends), ``episode_returns`` (all so far), ``last`` (True on the final update) and
  the update's diagnostics (the keys of ``result.history``). Returning ``False`` stops the run.
- ``progress``: a status line on stderr; None shows it only on an interactive terminal, never
  in a notebook (so nbval never sees it).

Every trainer returns a :class:`TrainResult`. One *update* is one pass of the trainer's outer
loop: a rollout and its optimisation (PPO, A2C), a batch of whole episodes (REINFORCE), or
``train_freq`` environment steps followed by a training phase (DQN).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..core._checks import check_nonnegative, check_tree, float_dtype, real_scalar
from ..core.autodiff import stop_gradient, tree_leaves, tree_map
from ..core.heap import keep_freed_memory
from ..core.optim import clip_by_global_norm

# The result type is public; the plumbing the trainers share (Learner, TrainingLog, Progress,
# FlatParams, average, standardise, and the checks check_env, check_params, check_optimiser,
# model_output) is imported from this module by name, not re-exported.
__all__ = ["TrainResult"]

RECENT_EPISODES = 20  # ``mean_return`` averages this many of the latest training episodes


@dataclass
class TrainResult:
    """What every trainer returns.

    ``params``: the parameters after the last update (not a best checkpoint).
    ``episode_returns [E]``: the undiscounted return of every training episode, in the order
    they ended (exploration included); ``episode_end_steps [E]``: the env step at which each
    ended. ``steps``: environment transitions taken. ``history``: one array ``[U]`` per key,
    one entry per update; always ``"steps"`` (env steps after the update) and
    ``"mean_return"`` (mean of the last 20 episodes then, NaN before the first ends), plus the
    trainer's diagnostics (see each trainer's docstring). ``settings``: the arguments the run
    used. ``extras``: what only one trainer has (DQN's ``target_params``). ``wall_time`` in s.
    """

    params: object
    episode_returns: np.ndarray
    episode_end_steps: np.ndarray
    steps: int
    history: dict
    settings: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    wall_time: float = field(default=0.0, repr=False)

    @property
    def updates(self) -> int:
        """How many updates the run made."""
        return len(self.history["steps"])


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
                         f"mean return (last {RECENT_EPISODES}) {shown}  {now - self._start:6.1f} s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


class TrainingLog:
    """The bookkeeping of the contract: env steps, episodes, per-update history, progress and
    the callback. ``result(params, ...)`` builds the :class:`TrainResult`.

    Episode returns are read from ``env.episode_returns`` (the vector-env protocol appends one
    per finished episode), so a trainer only reports which steps ended episodes.
    """

    def __init__(self, env, name: str, total_steps: int, progress, callback, settings: dict):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback: expected a function info -> bool | None, got "
                            f"{type(callback).__name__}")
        if progress is not None and not isinstance(progress, (bool, np.bool_)):
            raise TypeError(f"progress: expected True, False or None (auto), got "
                            f"{type(progress).__name__} {progress!r}")
        self.env, self.callback, self.settings = env, callback, settings
        self._seen = len(env.episode_returns)
        self.returns: list[float] = []
        self.end_steps: list[int] = []
        self.steps = 0
        self.history: dict[str, list[float]] = {"steps": [], "mean_return": []}
        self.progress = Progress(name, total_steps, progress)
        self.start = time.perf_counter()

    def record_steps(self, terminated: np.ndarray, truncated: np.ndarray) -> None:
        """``T`` vector steps were taken (``[T, n]`` flags, or ``[n]`` for one step): count
        them, and take the returns of the episodes that ended from ``env.episode_returns``."""
        done = np.asarray(terminated) | np.asarray(truncated)
        if not done.any():  # the usual step: nothing ended
            self.steps += done.size
            return
        done = np.atleast_2d(done)
        ended = int(done.sum())
        if ended:
            n = done.shape[1]
            for t, count in enumerate(done.sum(axis=1).tolist()):
                self.end_steps.extend([self.steps + (t + 1) * n] * count)
            new = self.env.episode_returns[self._seen:]
            if len(new) != ended:
                raise RuntimeError(f"env: {ended} episodes ended but env.episode_returns grew by "
                                   f"{len(new)}; the vector-env protocol appends one per episode")
            self.returns.extend(float(r) for r in new)
            self._seen += ended
        self.steps += done.size

    def record_episodes(self, returns, lengths) -> None:
        """Whole episodes with these ``returns`` and ``lengths`` were used (REINFORCE, which
        collects whole episodes and discards the steps that overran them)."""
        for ret, length in zip(np.asarray(returns).tolist(), np.asarray(lengths).tolist()):
            self.steps += int(length)
            self.end_steps.append(self.steps)
            self.returns.append(float(ret))

    def episode_returns(self) -> np.ndarray:
        return np.asarray(self.returns, dtype=np.float64)

    def end_update(self, params, last: bool = False, **diagnostics: float) -> bool:
        """Record one update's diagnostics; returns False if the callback asked to stop."""
        recent = self.episode_returns()[-RECENT_EPISODES:]
        mean_return = float(recent.mean()) if recent.size else float("nan")
        row = len(self.history["steps"])
        for key, value in {"steps": self.steps, "mean_return": mean_return, **diagnostics}.items():
            # a diagnostic first reported at this update is NaN for the updates before it
            self.history.setdefault(key, [float("nan")] * row).append(float(value))
        self.progress.update(self.steps, mean_return)
        if self.callback is None:
            return True
        # a copy: the trainer updates its parameters in place, and a callback may keep these
        info = {"update": row, "steps": self.steps,
                "params": tree_map(np.copy, params), "mean_return": mean_return,
                "episode_returns": self.episode_returns(), "last": last, **diagnostics}
        return self.callback(info) is not False

    def result(self, params, **extras) -> TrainResult:
        self.progress.close()
        history = {key: np.asarray(v, dtype=np.float64) for key, v in self.history.items()}
        history["steps"] = history["steps"].astype(np.int64)
        return TrainResult(params=params, episode_returns=self.episode_returns(),
                           episode_end_steps=np.asarray(self.end_steps, dtype=np.int64),
                           steps=self.steps, history=history, settings=self.settings,
                           extras=extras, wall_time=time.perf_counter() - self.start)


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

    def flatten(self, tree) -> np.ndarray:
        return np.concatenate([np.ravel(leaf) for leaf in tree_leaves(tree)]).astype(self.dtype,
                                                                                   copy=False)

    def tree(self, vector: np.ndarray):
        views = iter([vector[start:end].reshape(shape) for start, end, shape
                      in zip([0, *self.ends[:-1]], self.ends, self.shapes)])
        return tree_map(lambda _: next(views), self.template)


class Learner:
    """The parameters a trainer updates, with their optimiser: ``learner.step(grads, lr)`` is one
    clipped optimiser step.

    The parameters are cast to ``dtype`` and packed into one flat vector; ``learner.params`` is
    the model's tree of views into it, so after a step the model sees the new values without
    rebuilding anything. ``max_grad_norm`` clips the global gradient norm (None: no clipping).
    """

    def __init__(self, params, opt, dtype=np.float32, max_grad_norm: float | None = None,
                 name: str = "params"):
        if max_grad_norm is not None:
            check_nonnegative("max_grad_norm", max_grad_norm, positive=True)
        check_optimiser(opt)
        check_params(name, params)
        dtype = float_dtype("dtype", dtype)
        keep_freed_memory()
        self.layout = FlatParams(tree_map(lambda p: np.asarray(p, dtype=dtype), params))
        self.theta = {"theta": self.layout.flatten(self.layout.template)}
        self.params = self.layout.tree(self.theta["theta"])
        self.opt, self.max_grad_norm = opt, max_grad_norm
        self.state = opt.init(self.theta)

    def step(self, grads, lr: float | None = None) -> float:
        """One optimiser step on ``grads`` (a tree like ``params``); returns the gradient's
        global norm before clipping."""
        flat = {"theta": self.layout.flatten(grads)}
        if self.max_grad_norm is not None:
            flat, norm = clip_by_global_norm(flat, self.max_grad_norm)
        else:
            norm = float(np.sqrt(np.sum(np.square(flat["theta"], dtype=np.float64))))
        new, self.state = self.opt.step(self.theta, flat, self.state, lr=lr)
        self.theta["theta"][...] = new["theta"]  # params are views of it: now updated
        return norm

    def snapshot(self):
        """A copy of the current parameters (the tree of views keeps changing)."""
        return tree_map(np.copy, self.params)


def check_optimiser(opt) -> None:
    """``opt`` must be an optimiser instance with ``init``, ``step`` and a numeric ``lr``."""
    if isinstance(opt, type) or not all(callable(getattr(opt, m, None)) for m in ("init", "step")):
        got = f"the class {opt.__name__} (create one: {opt.__name__}(lr=...))" \
            if isinstance(opt, type) else type(opt).__name__
        raise TypeError(f"opt: expected an optimiser with init(), step() and lr, got {got}")
    if not hasattr(opt, "lr"):
        raise TypeError(f"opt: expected an optimiser with an lr attribute (the trainers scale it "
                        f"by their schedules), got {type(opt).__name__} without one")
    real_scalar("opt.lr", opt.lr)


# The default ``env`` of the trainers' ``_checked_settings``: the sweeps, which check their
# envs themselves and have no single env per member, leave it out.
CHECKED_BY_CALLER = object()


def check_env(env, name: str = "env") -> None:
    """``env`` must be a vector environment instance: ``n``, ``observation_shape``,
    ``num_actions`` (discrete actions), ``reset``, ``step`` and ``episode_returns``."""
    if env is CHECKED_BY_CALLER:
        return
    if isinstance(env, type):
        raise TypeError(f"{name}: expected an environment, got the class {env.__name__} "
                        f"(create one: {env.__name__}(n=...))")
    missing = [a for a in ("n", "observation_shape", "num_actions", "reset", "step",
                           "episode_returns") if not hasattr(env, a)]
    if missing:
        raise TypeError(f"{name}: expected a vector environment (n, observation_shape, "
                        f"num_actions, reset, step, episode_returns), got {type(env).__name__} "
                        f"without {', '.join(missing)}")
    for attr in ("n", "num_actions"):
        value = getattr(env, attr)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                or value < 1:
            raise TypeError(f"{name}: expected a positive int {attr} (discrete actions, n copies), "
                            f"got {attr} = {value!r}")


def check_params(name: str, tree, optional: bool = False) -> None:
    """A parameter tree: an array or nested dicts/lists/tuples whose leaves are finite real
    arrays. ``optional``: ``None`` is accepted too (a model without parameters; where the
    params are only passed on to the model, not trained)."""
    if tree is None and optional:
        return
    check_tree(name, tree, finite=True)


_OUTPUTS = {"actor_critic": "(logits [B, A], values [B])", "logits": "logits [B, A]",
            "q": "Q-values [B, A]", "logits_or_pair": "logits [B, A] (or (logits, values))"}
_MODEL_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def model_output(model, params, obs, expect: str, num_actions: int | None = None,
                 source: str = "obs", hint: str = ""):
    """``model(params, obs)``, checked: a failure inside the model (params that do not fit the
    observations, a missing key) and an output of the wrong structure or shape raise an error
    naming ``model``, ``params`` and where the observations came from (``source``), rather
    than an internal name. ``expect`` is a key of ``_OUTPUTS``; ``num_actions`` (the env's)
    fixes ``A``; ``hint`` is added to an error about the output. Returns the output (for
    ``logits_or_pair``: the logits)."""
    if not callable(model):
        raise TypeError(f"model: expected a function (params, obs) -> {_OUTPUTS[expect]}, got "
                        f"{type(model).__name__}")
    try:
        out = model(params, obs)
    except _MODEL_ERRORS as err:
        named = str(err).startswith(("params", "obs"))  # the model's own check said which
        raise ValueError(f"model(params, obs) failed on {source} of shape {np.shape(obs)}: "
                         f"{type(err).__name__}: {err}"
                         f"{'' if named else f' (do params fit {source}?)'}") from err
    batch = np.shape(obs)[0] if np.ndim(obs) else None
    pair = isinstance(out, tuple)
    logits = out[0] if pair and expect == "logits_or_pair" else out
    if expect == "actor_critic":
        if not (pair and len(out) == 2):
            got = f"a tuple of {len(out)}" if pair else f"an array of shape {_shape(out)}"
            raise ValueError(f"model(params, obs): expected {_OUTPUTS[expect]}, got {got}{hint}")
        logits, values = out
        if _shape(values) != (batch,):
            raise ValueError(f"model(params, obs): expected values of shape {(batch,)} ([B] for "
                             f"{source} of shape {np.shape(obs)}), got {_shape(values)}")
    elif pair and expect != "logits_or_pair" or isinstance(logits, (tuple, list)):
        raise ValueError(f"model(params, obs): expected {_OUTPUTS[expect]}, got a tuple{hint}")
    kind = np.result_type(stop_gradient(logits)).kind
    if kind not in "biuf":
        raise TypeError(f"model(params, obs): expected real outputs, got dtype "
                        f"{np.result_type(stop_gradient(logits))} (are params or {source} complex?)")
    shape = _shape(logits)
    if len(shape) != 2 or shape[0] != batch or (num_actions is not None
                                                and shape[1] != num_actions):
        expected = f"({batch}, A)" if num_actions is None else str((batch, num_actions))
        of_env = "" if num_actions is None else f" (num_actions = {num_actions} of env)"
        raise ValueError(f"model(params, obs): expected {_OUTPUTS[expect]} with shape "
                         f"{expected}{of_env} for {source} of shape {np.shape(obs)}, got "
                         f"{shape}{hint}")
    return logits if expect == "logits_or_pair" else out


def _shape(x) -> tuple:
    return tuple(np.shape(stop_gradient(x)))


def average(stats: list[dict]) -> dict:
    """The mean of each key over a list of per-step stats dicts (the keys of the first one)."""
    return {key: float(np.mean([s[key] for s in stats])) for key in stats[0]}


def standardise(x: np.ndarray) -> np.ndarray:
    """Zero mean and unit standard deviation (a single value is left as it is)."""
    return (x - x.mean()) / (x.std() + 1e-8) if len(x) > 1 else x
