"""REINFORCE (Williams, 1992): the Monte Carlo policy gradient, with reward-to-go and a baseline.

The objective is the discounted return from the start, ``J = E[G_0]`` with
``G_0 = sum_t gamma^t r_t``. The likelihood-ratio identity gives
``grad J = E[G_0 * sum_t grad log pi(a_t | s_t)]``. A reward earned before ``t`` does not depend
on ``a_t``, so its terms have mean 0 and can be dropped, which leaves
``grad J = E[sum_t grad log pi(a_t | s_t) * gamma^t * G_t]`` with the reward-to-go
``G_t = sum_{k >= t} gamma^(k-t) r_k``; and anything ``b_t`` that does not depend on ``a_t`` may
be subtracted from ``G_t``. The weight ``Psi_t`` of each step's score:

- the whole return ``G_0`` on every step (``reward_to_go=False``): unbiased, the noisiest;
- ``gamma^t G_t`` (``reward_to_go=True, discount_steps=True``): unbiased, as in Sutton & Barto's
  REINFORCE (section 13.3);
- ``G_t`` (``reward_to_go=True``, the default): what deep-RL code usually does. It leaves out
  ``gamma^t``, so for ``gamma < 1`` it is *not* an unbiased estimate of ``grad J``: it weights a
  late step as much as an early one (as if every visited state were a start state). With
  ``gamma = 1`` the two coincide;
- any of these minus a baseline (``baseline=...``).

Two baselines. ``"leave_one_out"`` (``True``) needs no critic: ``b_t`` for episode ``i`` is the
mean of the other episodes' weights at the same time step ``t`` (among the batch's episodes
still running at ``t``). It depends on ``t`` -- CartPole's return-to-go falls as the episode goes
on -- but not on episode ``i``'s own actions, so it keeps the estimate's mean. ``"value"``: a
learned state value ``V(s_t)`` (a critic), fitted by regression on the returns ``G_t`` of
earlier batches; the weights use the critic as it was *before* it saw this batch.

Episodes are stored as columns: ``[T, N]`` arrays where column ``i`` is episode ``i`` from
row 0 and ``mask[t, i]`` says whether step ``t`` belongs to it (rows past its end are padding).
A time-limit truncation is treated as the episode's end: without a critic the tail after it is
counted as 0 (a Monte Carlo return of what was observed).
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import (
    agent_rng,
    as_bool_array,
    as_float_array,
    as_int_array,
    as_rng,
    check_count,
    check_flag,
    check_nonnegative,
    check_probability,
    check_shape,
    float_dtype,
)
from ..core.blas import single_thread_blas
from ..core.distributions import categorical_log_prob, categorical_sample
from ..core.optim import Adam
from ..core.returns import discounted_returns
from .rollout import _check_rng
from .trainer import CHECKED_BY_CALLER, Learner, TrainingLog, check_env, check_params, model_output

__all__ = [
    "reinforce", "reinforce_weights", "reinforce_loss", "softmax_score",
    "policy_gradient_estimate", "collect_episodes",
]


def _check_episode_batch(rewards, mask):
    rewards = as_float_array("rewards", rewards, ndim=2)
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, rewards.shape, against="rewards")
    if not mask[0].all():
        raise ValueError("mask: every episode (column) must start at row 0, but column "
                         f"{int(np.flatnonzero(~mask[0])[0])} is empty there")
    if (mask[1:] & ~mask[:-1]).any():
        raise ValueError("mask: each column must be one episode, True then False (no gaps)")
    return rewards, mask


def _baseline_kind(baseline) -> str | None:
    """``baseline`` as one of None, ``"leave_one_out"``, ``"value"`` (True means leave-one-out)."""
    if baseline is None or baseline is False:
        return None
    if baseline is True or baseline == "leave_one_out":
        return "leave_one_out"
    if baseline == "value":
        return "value"
    raise ValueError(f"baseline: expected True/'leave_one_out', 'value', or False/None, got {baseline!r}")


def reinforce_weights(rewards, mask, gamma: float = 0.99, reward_to_go: bool = True,
                      baseline=True, discount_steps: bool = False, values=None) -> np.ndarray:
    """The weight ``Psi[t, i]`` of ``grad log pi(a_t | s_t)`` for each step of each episode.

    ``rewards [T, N]`` and ``mask [T, N]``: column ``i`` is one episode from row 0, ``mask``
    True on its steps. ``reward_to_go`` chooses ``G_t`` (else ``G_0`` on every step);
    ``discount_steps`` multiplies step ``t``'s weight by ``gamma**t`` (with ``reward_to_go``:
    ``gamma^t G_t``, the unbiased estimate of the discounted objective's gradient; plain
    ``G_t`` is biased for ``gamma < 1``, see the module docstring). ``baseline``: True or
    ``"leave_one_out"`` subtracts the mean of the other episodes' weights at the same ``t`` (0
    where no other episode is running at ``t``); ``"value"`` subtracts ``values [T, N]``, a
    critic's ``V(s_t)`` (times ``gamma**t`` with ``discount_steps``); False/None subtracts
    nothing. Padding rows get weight 0.
    """
    rewards, mask = _check_episode_batch(rewards, mask)
    gamma = check_probability("gamma", gamma)
    kind = _baseline_kind(baseline)
    if discount_steps and not reward_to_go:
        raise ValueError("discount_steps: gamma^t multiplies the reward-to-go G_t; the whole "
                         "return G_0 (reward_to_go=False) is already unbiased without it")
    # each column is one whole episode: it terminates at its last real step, nothing is truncated
    last_step = mask & ~np.vstack([mask[1:], np.zeros((1, mask.shape[1]), dtype=bool)])
    returns = discounted_returns(np.where(mask, rewards, 0.0).astype(np.float64),
                                 terminated=last_step, truncated=np.zeros_like(mask), gamma=gamma)
    weights = returns if reward_to_go else np.broadcast_to(returns[0], returns.shape).copy()
    if kind == "value":
        if values is None:
            raise ValueError("values: baseline='value' needs the critic's values [T, N]")
        values = as_float_array("values", values, ndim=2)
        check_shape("values", values, rewards.shape, against="rewards")
        weights = weights - np.where(mask, values, 0.0)
    elif values is not None:
        raise ValueError(f"values: only used with baseline='value', got baseline={baseline!r}")
    if discount_steps:
        weights = weights * gamma ** np.arange(len(weights), dtype=np.float64)[:, None]
    weights = np.where(mask, weights, 0.0)
    if kind == "leave_one_out":
        count = mask.sum(axis=1, keepdims=True)
        total = weights.sum(axis=1, keepdims=True)
        others = count - mask
        b = np.divide(total - weights, others, out=np.zeros_like(weights), where=others > 0)
        weights = np.where(mask, weights - b, 0.0)
    return weights


def reinforce_loss(logits, actions, weights, mask=None):
    """Surrogate loss ``-sum_{t, i} mask * log pi(a | s) * Psi / N`` whose gradient is ``-grad J``.

    ``logits [T, N, A]`` (or ``[S, A]`` for steps already flattened, then ``N`` is 1),
    ``actions`` and ``weights`` (and ``mask``) of the leading shape. ``weights`` are constants:
    no gradient flows through them. Summing over time and averaging over the ``N`` episodes
    is the Monte Carlo estimate of the policy-gradient theorem's expectation.
    """
    weights = as_float_array("weights", ad.stop_gradient(weights))
    lead = np.shape(ad.stop_gradient(logits))[:-1]
    check_shape("weights", weights, lead, against="logits without its last axis")
    log_prob = categorical_log_prob(logits, actions)
    if mask is not None:
        mask = as_bool_array("mask", mask)
        check_shape("mask", mask, lead, against="logits without its last axis")
        weights = np.where(mask, weights, 0.0)
    episodes = lead[1] if len(lead) == 2 else 1
    return -ad.sum(log_prob * weights.astype(log_prob.dtype, copy=False)) / episodes


def softmax_score(logits, actions) -> np.ndarray:
    """``grad_logits log softmax(logits)[a] = e_a - pi``: ``[B, A]`` logits, ``[B]`` actions -> ``[B, A]``.

    The score of a softmax policy with respect to its logits: one-hot of the taken action minus
    the action probabilities. For a linear policy ``logits = s @ W`` the score for ``W`` is the
    outer product ``s (e_a - pi)``. Each row sums to 0.
    """
    logits = as_float_array("logits", logits, ndim=2)
    actions = as_int_array("actions", actions, 0, logits.shape[1])
    check_shape("actions", actions, logits.shape[:1], against="[B] for logits [B, A]")
    score = -ad.softmax(logits)
    score[np.arange(len(actions)), actions] += 1.0
    return score


def policy_gradient_estimate(model, params, obs, actions, weights, mask, per_episode: bool = False):
    """The REINFORCE estimate of ``grad J`` (ascent direction) from a batch of episodes.

    ``obs [T, N, ...]``, ``actions``, ``weights`` (from :func:`reinforce_weights`) and ``mask``
    ``[T, N]``; ``model(params, obs [B, ...]) -> logits [B, A]``. Returns a tree like ``params``
    (the batch mean), or with ``per_episode=True`` an array ``[N, P]`` of each episode's own
    estimate flattened in ``tree_leaves`` order, for measuring the estimator's variance.
    """
    weights = as_float_array("weights", weights, ndim=2)
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, weights.shape, against="weights")
    obs = as_float_array("obs", obs)
    check_shape("obs", obs, (*weights.shape, *obs.shape[2:]), against="[T, N, ...] like weights")
    actions = as_int_array("actions", actions, 0)
    check_shape("actions", actions, weights.shape, against="weights")
    check_flag("per_episode", per_episode)
    check_params("params", params, optional=True)

    def loss(p, o, a, w):
        return reinforce_loss(model_output(model, p, o, "logits"), a, w)

    grad_fn = ad.grad(loss)
    if not per_episode:
        grads = grad_fn(params, obs[mask], actions[mask], weights[mask] / weights.shape[1])
        return ad.tree_map(lambda g: -g, grads)
    rows = []
    for i in range(weights.shape[1]):
        steps = mask[:, i]
        grads = grad_fn(params, obs[steps, i], actions[steps, i], weights[steps, i])
        rows.append(-np.concatenate([np.ravel(g) for g in ad.tree_leaves(grads)]))
    return np.stack(rows)


def collect_episodes(env, model, params, rng: np.random.Generator, obs=None,
                     max_steps: int = 100_000):
    """Run every copy of ``env`` until each has finished one episode; sample from softmax logits.

    ``model(params, obs)`` returns logits ``[n, A]`` (or ``(logits, values)``: the values are
    ignored here).

    Returns ``(obs [T, n, ...], actions [T, n], rewards [T, n], mask [T, n], next_obs)`` with
    episodes as columns (see the module docstring) and ``next_obs`` the observation to continue
    from. Starts from ``obs`` if given (each copy must be at an episode start), else from
    ``env.reset()``. Copies that finish early keep stepping until the last one is done; those
    steps belong to their next episode and are masked out and discarded. An episode longer than
    ``max_steps`` steps raises (an environment with no time limit and a policy that never ends
    an episode would otherwise run forever).
    """
    max_steps = check_count("max_steps", max_steps)
    check_env(env)
    check_params("params", params, optional=True)
    _check_rng(rng)
    if obs is None:
        obs = env.reset()
    else:
        check_shape("obs", as_float_array("obs", obs), (env.n, *env.observation_shape),
                    against="[n, *env.observation_shape]")
    n = env.n
    running = np.ones(n, dtype=bool)
    all_obs, all_actions, all_rewards, all_mask = [], [], [], []
    while running.any():
        if len(all_obs) == max_steps:
            raise RuntimeError(f"collect_episodes: {int(running.sum())} of {n} episodes had not "
                               f"ended after max_steps={max_steps} steps; give the environment a "
                               "time limit (e.g. max_steps=...) or raise max_steps")
        logits = model_output(model, params, obs, "logits_or_pair", env.num_actions,
                              "env's observations")
        actions = categorical_sample(logits, rng)
        step = env.step(actions)
        all_obs.append(obs)
        all_actions.append(actions)
        all_rewards.append(step.reward)
        all_mask.append(running.copy())
        running &= ~(step.terminated | step.truncated)
        obs = step.obs
    # The copies finished at different times, so most are mid-episode now: start all afresh.
    return (np.stack(all_obs), np.stack(all_actions), np.stack(all_rewards), np.stack(all_mask),
            env.reset())


def _logits(out):
    """The logits of a model's output: the output itself, or the first of ``(logits, values)``."""
    return out[0] if isinstance(out, tuple) else out


def _loss(params, model, obs, actions, weights, episodes):
    return reinforce_loss(_logits(model(params, obs)), actions, weights) * (1.0 / episodes)


def _value_loss(params, model, obs, returns):
    values = model(params, obs)[1]
    return 0.5 * ad.mean(ad.square(values - returns))


@single_thread_blas()
def reinforce(env, model, params, total_steps: int, *, lr: float = 1e-2, gamma: float = 0.99,
              baseline=True, reward_to_go: bool = True, discount_steps: bool = False,
              value_lr: float = 1e-2, value_steps: int = 10, max_grad_norm: float | None = None,
              opt=None, dtype=np.float32, seed: int = 0, callback=None,
              progress: bool | None = None):
    """Train ``model(params, obs) -> logits [n, A]`` with REINFORCE on a vector env.

    The arguments and the result follow the trainer contract (:mod:`rlcourse.algos.trainer`).

    Args:
        total_steps: env steps of the episodes learned from. Each update runs every copy of
            ``env`` for one whole episode (``env.n`` episodes per update) and the run stops
            after the update in which ``total_steps`` is reached.
        lr: Adam's learning rate (ignored when ``opt`` is given).
        gamma: discount of the returns that weight the log-probabilities.
        baseline: True or ``"leave_one_out"``: the leave-one-out baseline of
            :func:`reinforce_weights`; ``"value"``: a learned critic (see below); False/None:
            none.
        reward_to_go: weight step ``t`` by ``G_t`` (else by the whole return ``G_0``).
        discount_steps: multiply step ``t``'s weight by ``gamma**t`` (unbiased for the
            discounted objective; the default leaves it out, as most code does).
        value_lr, value_steps: with ``baseline="value"``, the critic's own Adam learning rate
            and how many full-batch steps it takes on each batch.
        max_grad_norm: clip the global gradient norm to this (None: no clipping).
        opt, dtype, seed, callback, progress: as in the trainer contract (default ``opt``:
            ``Adam(lr)``).

    Each update takes one optimiser step on :func:`reinforce_loss` with the weights of
    :func:`reinforce_weights`. Copies that finish early keep stepping until the last one is
    done; those steps belong to their next episodes, are discarded and are not counted. The
    result's history holds ``loss`` and ``grad_norm`` (before clipping) per update.

    With ``baseline="value"`` the model returns ``(logits [n, A], values [n])`` and ``params``
    is ``{"actor": ..., "critic": ...}`` with no shared parameters (as
    :func:`~rlcourse.make_actor_critic` builds). Each batch is weighted with the critic as it
    was before the batch (so a step's baseline never saw that step's own return); then the
    critic takes ``value_steps`` Adam steps on ``0.5 * mean (V(s_t) - G_t)^2``. The history
    adds ``value_loss``: that error on the batch *before* the critic learned from it.
    """
    settings = _checked_settings(**{k: v for k, v in locals().items() if k not in _NOT_SETTINGS})
    run = _Run(env, model, params, settings, opt, callback, progress)
    obs = env.reset(seed=seed)
    run.check_model(obs)
    while run.log.steps < total_steps:
        b_obs, b_actions, b_rewards, mask, obs = collect_episodes(env, model, run.params, run.rng,
                                                                  obs)
        if not run.learn(b_obs, b_actions, b_rewards, mask):
            break
    return run.log.result(run.params)


class _Run:
    """One REINFORCE run's learning state: its learner (and critic), random stream and log.

    ``learn`` is one update on a batch of whole episodes, as :func:`reinforce` makes it;
    ``rc.reinforce_sweep`` drives several of these with one batched network pass.
    """

    def __init__(self, env, model, params, settings: dict, opt, callback, progress,
                 name: str = "reinforce"):
        self.model, self.settings = model, settings
        self.critic_baseline = _baseline_kind(settings["baseline"]) == "value"
        dtype, max_grad_norm = np.dtype(settings["dtype"]), settings["max_grad_norm"]
        if self.critic_baseline:
            if not isinstance(params, dict) or set(params) != {"actor", "critic"}:
                got = sorted(params) if isinstance(params, dict) else type(params).__name__
                raise ValueError(f"params: baseline='value' needs {{'actor': ..., 'critic': ...}} "
                                 f"(e.g. rc.make_actor_critic), got {got}")
            self.learner = Learner(params["actor"], opt or Adam(settings["lr"]), dtype,
                                   max_grad_norm, "params['actor']")
            self.critic = Learner(params["critic"], Adam(settings["value_lr"]), dtype,
                                  max_grad_norm, "params['critic']")
            self.params = {"actor": self.learner.params, "critic": self.critic.params}
            self.value_grad_fn = ad.value_and_grad(_value_loss)
        else:
            self.learner = Learner(params, opt or Adam(settings["lr"]), dtype, max_grad_norm)
            self.params = self.learner.params
        self.rng = agent_rng(settings["seed"])
        self.n, self.dtype = env.n, dtype
        self.log = TrainingLog(env, name, settings["total_steps"], progress, callback, settings)
        self.grad_fn = ad.value_and_grad(_loss)

    def check_model(self, obs, env_name: str = "env") -> None:
        """The model's output on the first observations fits the env (else a clear error)."""
        model_output(self.model, self.params, obs,
                     "actor_critic" if self.critic_baseline else "logits", self.log.env.num_actions,
                     f"{env_name}'s observations", "; REINFORCE's model returns logits only, or "
                     "(logits, values) with baseline='value'")

    def learn(self, b_obs, b_actions, b_rewards, mask) -> bool:
        """One update on ``[T, n]`` episode columns; False if the callback asked to stop."""
        s, dtype, current = self.settings, self.dtype, self.params
        self.log.record_episodes(np.where(mask, b_rewards, 0.0).sum(axis=0), mask.sum(axis=0))
        steps_obs = b_obs[mask].astype(dtype, copy=False)
        values, diagnostics = None, {}
        if self.critic_baseline:
            values = np.zeros(mask.shape)
            values[mask] = np.asarray(self.model(current, steps_obs)[1])
        weights = reinforce_weights(b_rewards, mask, s["gamma"], s["reward_to_go"], s["baseline"],
                                    s["discount_steps"], values)
        loss, grads = self.grad_fn(current, self.model, steps_obs, b_actions[mask],
                                   weights[mask].astype(dtype), self.n)
        grad_norm = self.learner.step(grads["actor"] if self.critic_baseline else grads)
        if self.critic_baseline:
            returns = reinforce_weights(b_rewards, mask, s["gamma"], True, False)[mask].astype(dtype)
            for k in range(s["value_steps"]):
                value_loss, value_grads = self.value_grad_fn(current, self.model, steps_obs,
                                                             returns)
                self.critic.step(value_grads["critic"])
                if k == 0:
                    diagnostics["value_loss"] = float(value_loss)
        return self.log.end_update(current, last=self.log.steps >= s["total_steps"], loss=loss,
                                   grad_norm=grad_norm, **diagnostics)


_NOT_SETTINGS = ("model", "params", "opt", "callback", "progress")


def _checked_settings(total_steps, lr, gamma, baseline, reward_to_go, discount_steps, value_lr,
                      value_steps, max_grad_norm, dtype, seed,
                      env=CHECKED_BY_CALLER) -> dict:
    """``reinforce``'s arguments, each checked once, as the ``settings`` of its result (``env``
    is checked, not recorded; the model, params, opt and callback are checked where used)."""
    check_env(env)
    check_count("total_steps", total_steps)
    check_probability("gamma", gamma)
    _baseline_kind(baseline)
    check_count("value_steps", value_steps, low=0)
    check_nonnegative("lr", lr)
    check_nonnegative("value_lr", value_lr)
    if max_grad_norm is not None:
        check_nonnegative("max_grad_norm", max_grad_norm, positive=True)
    check_flag("reward_to_go", reward_to_go)
    check_flag("discount_steps", discount_steps)
    as_rng(seed)
    dtype = float_dtype("dtype", dtype)
    if discount_steps and not reward_to_go:
        raise ValueError("discount_steps: gamma^t multiplies the reward-to-go G_t; the whole "
                         "return G_0 (reward_to_go=False) is already unbiased without it")
    return dict(total_steps=total_steps, lr=lr, gamma=gamma, baseline=baseline,
                reward_to_go=reward_to_go, discount_steps=discount_steps, value_lr=value_lr,
                value_steps=value_steps, max_grad_norm=max_grad_norm,
                dtype=np.dtype(dtype).name, seed=seed)
