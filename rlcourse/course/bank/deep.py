"""Exercises of lessons 09-10: bootstrap values, TD errors, GAE, the A2C loss, n-step and V-trace
advantages, the truncation bias (lesson 09); the PPO ratio, clipped objective and loss, its
diagnostics, dual-clip, clipped value loss and the KL-penalty variant (lesson 10).

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms. ``tests/test_exercises_lessons_09_10.py``
submits every one of those mistakes and checks the diagnosis.
"""

import numpy as np

from ...algos.actor_critic import actor_critic_loss
from ...algos.models import make_actor_critic
from ...algos.ppo import ppo_loss
from ...core import autodiff as ad
from ...core.losses import ppo_clip_objective
from ...core.returns import _gae, gae
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _close(got, want) -> bool:
    got = np.asarray(ad.stop_gradient(got), dtype=float)
    want = np.asarray(want, dtype=float)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-6, atol=1e-8))


def _scalar(got) -> float | None:
    try:
        value = np.asarray(ad.stop_gradient(got), dtype=float)
    except (TypeError, ValueError):
        return None
    return float(value) if value.size == 1 else None


def _choice(name, answer, choices: dict, why_wrong: dict, hint: str):
    """A multiple-choice question: the reader's function returns one letter of ``choices``."""

    def reference():
        return answer

    def compare(got, expected):
        if not isinstance(got, str) or got.strip().lower() not in choices:
            return f"return one of the letters {', '.join(repr(c) for c in choices)}, got {got!r}"
        return None if got.strip().lower() == expected else f"{got.strip().lower()!r} is not it"

    def explain(case, got, expected):
        letter = got.strip().lower() if isinstance(got, str) else None
        return why_wrong.get(letter)

    register(name, reference, [Case("your answer")], compare=compare, explain=explain, hint=hint)


# ---------------------------------------------------------------- graded with a gradient

class _NoGradient:
    """Stands in for the gradient of an answer that ``value_and_grad`` could not trace."""

    def __init__(self, err: BaseException):
        self.err = err

    def __repr__(self):
        return f"<no gradient: {type(self.err).__name__}: {self.err}>"


_UNTRACEABLE = ("it works on plain arrays, but rc.value_and_grad cannot differentiate it ({err}). "
                "Use the rc.* functions ({which}), which work on plain and traced arrays alike "
                "(numpy's np.exp, np.minimum, np.clip, np.asarray and float() leave the graph)")


def _loss_with_gradient(fn, params, *rest):
    """Grade a loss by its value on plain arrays AND by its gradient with respect to ``params``:
    a loss written with numpy has the right value and no gradient, and one with a detached term
    has the right value and the wrong gradient."""
    value = fn(params, *rest)
    try:
        _, grads = ad.value_and_grad(lambda p: fn(p, *rest))(params)
    except Exception as err:  # noqa: BLE001 (any failure to trace is the diagnosis)
        grads = _NoGradient(err)
    return value, grads


def _objective_with_gradient(fn, ratio, *rest):
    """Grade an elementwise objective of the ratio by its values and by d sum / d ratio."""
    value = fn(ratio, *rest)
    try:
        _, grads = ad.value_and_grad(lambda p: ad.sum(fn(p["ratio"], *rest)))({"ratio": ratio})
        grads = grads["ratio"]
    except Exception as err:  # noqa: BLE001
        grads = _NoGradient(err)
    return value, grads


def _compare_with_gradient(which):
    def compare(got, expected):
        value, grads = got
        try:
            value = np.asarray(ad.stop_gradient(value), dtype=float)
        except (TypeError, ValueError):
            return f"return an array of numbers (got {type(value).__name__})"
        reason = default_compare(value, np.asarray(ad.stop_gradient(expected[0]), dtype=float))
        if reason:
            return reason
        if isinstance(grads, _NoGradient):
            err = f"{type(grads.err).__name__}: {str(grads.err).rstrip('.')}"
            return _UNTRACEABLE.format(err=err, which=which)
        leaves, want = ad.tree_leaves(grads), ad.tree_leaves(expected[1])
        if want and all(not np.any(g) for g in leaves):
            return ("the value is right, but rc.value_and_grad finds a gradient of 0: your "
                    "function returns a constant to it (a float() or np.asarray of a traced "
                    f"value, or numpy arithmetic); compute it with the rc.* functions ({which})")
        reason = default_compare(grads, expected[1], rtol=1e-5, atol=1e-9)
        if reason:
            part = ""
            if isinstance(expected[1], dict):
                part = ", ".join(k for k in expected[1]
                                 if default_compare(grads[k], expected[1][k], 1e-5, 1e-9))
                part = f" (wrong in {part!r})"
            return ("the value is right, but the gradient is not" + part + ": part of your "
                    "function does not reach the parameters as it should (a term detached with "
                    "stop_gradient or np.asarray, or a quantity that should be a constant, such "
                    "as the advantages, differentiated)")
        return None

    return compare


def _explain_value(explain):
    """Adapt a value-level ``explain`` to answers graded as (value, gradient)."""
    def wrapped(case, got, expected):
        if not (isinstance(got, tuple) and len(got) == 2):
            return None
        if _close(got[0], expected[0]):  # the value is right: the gradient is what is wrong
            return None
        return explain(case, got[0], expected[0])

    return wrapped


# ================================================================ lesson 09

def _rollout_case(seed, T=8, n=2):
    """A [T, n] rollout: copy 0 terminates at t=3, copy 1 is truncated at t=5.

    As in a real rollout (``rc.collect_rollout``), ``next_values[t]`` is ``values[t + 1]``
    while t's episode goes on: the same critic judged the same next state. Only after an
    episode's end (V(final_obs), or an ignored value at a terminal state) and at the rollout's
    end is it the value of a state the rollout does not hold. So a correct answer written with
    the values in between (the textbook n-step return, V-trace read literally) passes too.
    """
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, n))
    values = rng.normal(size=(T, n))
    terminated = np.zeros((T, n), dtype=bool)
    truncated = np.zeros((T, n), dtype=bool)
    terminated[3, 0] = True
    truncated[5, 1] = True
    next_values = np.vstack([values[1:], rng.normal(size=(1, n))])
    ends = terminated | truncated
    next_values[ends] = rng.normal(size=int(ends.sum()))
    return rewards, values, next_values, terminated, truncated


# ---------------------------------------------------------------- bootstrap values

def _bootstrap_values_reference(v_next_obs, v_final_obs, terminated, truncated):
    return np.where(terminated, 0.0, np.where(truncated, v_final_obs, v_next_obs))


def _bootstrap_cases():
    rng = np.random.default_rng(4)
    v_next, v_final = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    terminated = np.zeros((6, 3), dtype=bool)
    truncated = np.zeros((6, 3), dtype=bool)
    terminated[2, 0] = True
    truncated[4, 1] = True
    both_term, both_trunc = terminated.copy(), truncated.copy()
    both_term[5, 2] = both_trunc[5, 2] = True
    return [
        Case("no episode ends", (v_next, v_final, np.zeros((6, 3), bool), np.zeros((6, 3), bool))),
        Case("terminated at t=2, truncated at t=4", (v_next, v_final, terminated, truncated)),
        Case("the pole falls on the time limit's step (t=5)",
             (v_next, v_final, both_term, both_trunc)),
    ]


def _bootstrap_explain(case, got, expected):
    v_next, v_final, term, trunc = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    cut = trunc & ~term
    if np.any(got[term] != 0.0):
        return ("a terminated step's next state is terminal: its value is 0 whatever the critic "
                "says, even when the time limit strikes on the same step")
    if np.allclose(got[cut], v_next[cut]):
        return ("at the truncated step you bootstrap from V(obs), but after the autoreset obs is "
                "already the next episode's first state: use V(final_obs)")
    if np.allclose(got[cut], 0.0):
        return ("you zero the bootstrap at a truncated step: the time limit cut the episode, the "
                "state is not terminal, so it is worth V(final_obs)")
    return None


register(
    "bootstrap_values", _bootstrap_values_reference, _bootstrap_cases,
    explain=_bootstrap_explain,
    hint="three cases per step: the episode went on, it was cut by the clock, or it reached a "
         "terminal state; which observation belongs to the finished episode?",
)


# ---------------------------------------------------------------- TD errors

def _td_errors_reference(rewards, values, next_values, terminated, gamma):
    return rewards + gamma * np.where(terminated, 0.0, next_values) - values


def _td_cases():
    r, v, nv, term, _ = _rollout_case(0)
    running = np.vstack([v[1:, :1], nv[-1:, :1]])  # one episode: next_values[t] = values[t + 1]
    return [
        Case("no episode ends, gamma=0.9", (r[:, :1], v[:, :1], running,
                                            np.zeros((8, 1), bool), 0.9)),
        Case("terminal at t=3 in copy 0, gamma=0.99", (r, v, nv, term, 0.99)),
    ]


def _td_explain(case, got, expected):
    r, v, nv, term, gamma = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    if np.allclose(got, r + gamma * nv - v):
        return ("you bootstrap from the terminal state at t=3: a terminal state's value is 0, "
                "so multiply next_values by (1 - terminated)")
    if np.allclose(got, -expected):
        return "wrong sign: delta = r + gamma V(s') - V(s), what happened minus what was expected"
    if np.allclose(got, r + np.where(term, 0.0, nv) - v):
        return "you left out the discount: the next state's value is worth gamma * V(s')"
    if np.allclose(got, np.where(term, 0.0, r + gamma * nv) - v):
        return ("you dropped the reward of the terminating step: it was earned; only the "
                "bootstrap V(s') goes")
    return None


register(
    "td_errors_rollout", _td_errors_reference, _td_cases, explain=_td_explain,
    hint="what happened (a reward, then the discounted value of what came next) minus what the "
         "critic expected; a terminal next state is worth nothing",
)


# ---------------------------------------------------------------- GAE

def _gae_cases():
    r, v, nv, term, trunc = _rollout_case(1)
    running = np.vstack([v[1:, :1], nv[-1:, :1]])  # one episode: next_values[t] = values[t + 1]
    return [
        Case("one episode, gamma=0.99, lam=0.95", (r[:, :1], v[:, :1], running,
                                                   np.zeros((8, 1), bool), np.zeros((8, 1), bool),
                                                   0.99, 0.95)),
        Case("lam=0 is the TD error", (r, v, nv, term, trunc, 0.9, 0.0)),
        Case("terminated at t=3, truncated at t=5, gamma=0.9, lam=0.8",
             (r, v, nv, term, trunc, 0.9, 0.8)),
    ]


def _gae_recursion(r, v, nv, term, gamma, lam, stop, carry_gamma=True, late=False):
    deltas = r + gamma * np.where(term, 0.0, nv) - v
    adv = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        cut = (stop[t + 1] if t + 1 < len(deltas) else np.zeros_like(stop[t])) if late else stop[t]
        following = deltas[t] + (gamma if carry_gamma else 1.0) * lam * (1 - cut) * following
        adv[t] = following
    return adv


def _gae_explain(case, got, expected):
    r, v, nv, term, trunc, gamma, lam = case.args
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return "return a pair (advantages, returns)"
    adv = np.asarray(got[0], dtype=float)
    if adv.shape != expected[0].shape:
        return None
    never = np.zeros_like(term)
    if np.allclose(adv, expected[0]) and not np.allclose(got[1], expected[1]):
        if np.allclose(got[1], expected[0] + nv):
            return "the returns are advantages + values (V(s_t)), not + next_values"
        return "the advantages are right; the returns are advantages + values"
    if np.allclose(adv, _gae_recursion(r, v, nv, term, gamma, lam, never)):
        return ("your advantage at t=3 includes TD errors from the next episode: stop the "
                "recursion where terminated | truncated")
    if np.allclose(adv, _gae(r, v, nv, term, never, gamma, lam)[0]):
        return ("your advantage at t=5 runs on into the next episode: a truncated step ends the "
                "episode too, so stop the recursion there (and still bootstrap from next_values)")
    if np.allclose(adv, _gae(r, v, nv, term | trunc, trunc, gamma, lam)[0]):
        return ("you treat the time limit at t=5 as a terminal state: truncated steps still "
                "bootstrap from next_values (V(final_obs)); only terminated zeroes it")
    if np.allclose(adv, _gae(r, v, nv, never, term | trunc, gamma, lam)[0]):
        return ("you bootstrap from the terminal state at t=3: its value is 0, so delta there is "
                "r - V(s)")
    if np.allclose(adv, _gae_recursion(r, v, nv, term, gamma, lam, term | trunc, False)):
        return "the carry is gamma * lam * A[t+1]: you left out gamma"
    if np.allclose(adv, _gae_recursion(r, v, nv, term, gamma, lam, term | trunc, late=True)):
        return ("you cut the carry one step late: whether A[t+1] belongs to t's episode depends on "
                "done[t] (did the episode end at t?), not on done[t+1]")
    return None


register(
    "gae", gae, _gae_cases, explain=_gae_explain,
    hint="loop backwards in time, all copies at once: each advantage is its TD error plus "
         "gamma*lam times the next one, unless the episode ended at this step",
)


# ---------------------------------------------------------------- the A2C loss

def _a2c_reference(params, model, obs, actions, advantages, returns, vf_coef=0.5):
    return actor_critic_loss(params, model, obs, actions, advantages, returns, vf_coef, 0.0)[0]


def _loss_problem(seed, batch=24, far=False):
    """A small actor-critic, a batch, and (if ``far``) old log-probs of a distant policy."""
    model, params = make_actor_critic(4, 3, hidden=(8,), seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed)
    params["actor"][-1]["w"] *= 300.0  # confident policies: log-probs far from log(1/3)
    obs = rng.normal(size=(batch, 4))
    actions = rng.integers(0, 3, batch)
    advantages = rng.normal(size=batch) + (0.5 if seed % 2 else -0.5)
    returns = rng.normal(size=batch) * 5 + 3.0
    logits, _ = model(params, obs)
    log_probs = np.asarray(ad.log_softmax(logits))[np.arange(batch), actions]
    # far: every ratio at least exp(0.4) ~ 1.5 or at most exp(-0.4) ~ 0.67 from 1, either side
    shift = rng.choice([-1.0, 1.0], size=batch) * rng.uniform(0.4, 1.0, size=batch)
    old = log_probs + (shift if far else 0.0)
    return model, params, obs, actions, old, advantages, returns


def _a2c_cases():
    cases = []
    for seed, vf in ((0, 0.5), (1, 0.25)):
        model, params, obs, actions, _, adv, ret = _loss_problem(seed)
        cases.append(Case(f"batch of 24, vf_coef={vf}", (params, model, obs, actions, adv, ret, vf)))
    return cases


def _a2c_variant(params, model, obs, actions, adv, ret, vf, sign=1.0, half=0.5, use_logp=True,
                 use_vf=True, reduce=np.mean):
    logits, values = model(params, obs)
    log_p = np.asarray(ad.log_softmax(logits))[np.arange(len(actions)), actions]
    score = log_p if use_logp else np.exp(log_p)
    policy = -sign * reduce(score * adv)
    value = half * reduce((np.asarray(values) - ret) ** 2)
    return policy + (vf if use_vf else 1.0) * value


def _a2c_explain(case, got, expected):
    params, model, obs, actions, adv, ret, vf = case.args
    got = _scalar(got)
    if got is None:
        return "return the loss as one number"
    for kwargs, why in (
        (dict(sign=-1.0), "the policy term has the wrong sign: minimising -mean(log pi * A) "
                          "makes actions with A > 0 more likely"),
        (dict(half=1.0), "the value term is 1/2 the mean squared error (its gradient is then "
                         "V - G)"),
        (dict(use_logp=False), "the policy term uses log pi(a|s), not pi(a|s): the score "
                               "function is the gradient of the log-probability"),
        (dict(use_vf=False), "you ignore vf_coef: the value term is weighted by it"),
        (dict(reduce=np.sum), "you sum over the batch: take the mean, so the step size does not "
                              "grow with the batch"),
    ):
        if np.isclose(got, _a2c_variant(*case.args, **kwargs)):
            return why
    return None


_A2C_RC = "rc.categorical_log_prob, rc.mean, rc.square"

register(
    "a2c_loss", _a2c_reference, _a2c_cases, explain=_explain_value(_a2c_explain),
    call=_loss_with_gradient, compare=_compare_with_gradient(_A2C_RC),
    hint="the actor's term makes actions with positive advantage more likely (through their "
         "log-probability); the critic's term is half the squared error of V against the returns",
)


# ---------------------------------------------------------------- n-step advantages

def _n_step_reference(rewards, values, next_values, terminated, truncated, gamma, n,
                      stop=None, terms=None, discount=True):
    """Sum of ``terms`` (default n) TD errors from t, each weighted gamma^k, cut at ``stop``."""
    deltas = _td_errors_reference(rewards, values, next_values, terminated, gamma)
    stop = terminated | truncated if stop is None else stop
    terms = n if terms is None else terms
    advantages = np.zeros_like(deltas)
    for t in range(len(deltas)):
        running = np.ones(deltas.shape[1:])
        for k in range(min(terms, len(deltas) - t)):
            advantages[t] += running * (gamma**k if discount else 1.0) * deltas[t + k]
            running = running * (1.0 - stop[t + k])
    return advantages


def _n_step_cases():
    r, v, nv, term, trunc = _rollout_case(5)
    return [
        Case("n=1 is the TD error", (r, v, nv, term, trunc, 0.9, 1)),
        Case("n=3, terminated at t=3, truncated at t=5", (r, v, nv, term, trunc, 0.9, 3)),
        Case("n=8 covers the whole rollout (GAE with lam=1)", (r, v, nv, term, trunc, 0.9, 8)),
    ]


def _n_step_explain(case, got, expected):
    r, v, nv, term, trunc, gamma, n = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n,
                                          stop=np.zeros_like(term))):
        return ("your sum runs past the end of an episode (terminated at t=3 in copy 0, truncated "
                "at t=5 in copy 1) into the next episode's TD errors: stop after a done step")
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, stop=term)):
        return ("your sum for copy 1 runs past the time limit at t=5: a truncated step ends the "
                "episode too (its bootstrap is already in delta[5])")
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, terms=n + 1)):
        return "you sum n + 1 TD errors: the n-step advantage is delta_t + ... + gamma^(n-1) delta_(t+n-1)"
    if np.allclose(got, _n_step_reference(r, v, nv, term, trunc, gamma, n, discount=False)):
        return "weigh the k-th TD error by gamma^k, as GAE weighs it by (gamma lam)^k"
    if np.allclose(got, expected + v):
        return "that is the n-step return (the critic's target); the advantage subtracts V(s_t)"
    return None


register(
    "n_step_advantages", _n_step_reference, _n_step_cases, explain=_n_step_explain,
    hint="the n-step advantage is a discounted sum of the next n TD errors (the values in "
         "between cancel); an episode's end stops the sum, and so does the rollout's",
)

_choice(
    "why_intermediate_n_is_noisy", "b",
    choices={"a": "longer sums add up more rewards, each of them random",
             "b": "whether the target includes gamma^n V(s_n) depends on whether the episode "
                  "was still running at step n",
             "c": "discounting makes later rewards noisier",
             "d": "the n-step return is biased, and bias is a kind of noise"},
    why_wrong={"a": "every CartPole reward is exactly 1: the rewards themselves carry no noise, "
                    "only the episode's length does",
               "c": "discounting shrinks later rewards; it adds no randomness",
               "d": "bias is a shift of the mean, the same for every episode; the std measures "
                    "how targets differ between episodes"},
    hint="every reward is 1; compare the target of an episode that lasted 25 steps with one "
         "that lasted 15, for n = 20",
)


# ---------------------------------------------------------------- the biased critic's value

def _average_truncated_return_reference(gamma, H):
    steps_left = np.arange(1, H + 1)
    return float(np.mean((1 - gamma**steps_left) / (1 - gamma)))


def _average_truncated_cases():
    return [
        Case("the lesson's demo: gamma=0.95, H=50", (0.95, 50)),
        Case("a short limit: gamma=0.9, H=10", (0.9, 10)),
        Case("CartPole's limit: gamma=0.99, H=500", (0.99, 500)),
    ]


def _average_truncated_explain(case, got, expected):
    gamma, H = case.args
    got = _scalar(got)
    if got is None:
        return "return one number"
    left = (1 - gamma ** np.arange(0, H + 2)) / (1 - gamma)
    if np.isclose(got, left[:H].mean()):
        return ("you average over 0..H-1 steps left: on the episode's last step one reward is still "
                "to come, so the steps left run from 1 to H")
    if np.isclose(got, 1 / (1 - gamma)):
        return ("that is the true value, what a critic that bootstraps at the time limit learns; "
                "the biased critic treats the cut as terminal, so the return left shrinks as the "
                "clock runs")
    if np.isclose(got, left[H]):
        return ("that is the return left from the first step only; the critic cannot see the "
                "time, so it averages over all H steps of the episode")
    if np.isclose(got, left[1:H + 1].sum()):
        return "that is the sum over the H steps: divide by H for their mean"
    return None


register(
    "average_truncated_return", _average_truncated_return_reference, _average_truncated_cases,
    explain=_average_truncated_explain,
    hint="with k steps left before the cut, the discounted return of rewards 1 is a geometric "
         "sum; the critic cannot see k, so it learns the average over the episode's steps",
)


# ---------------------------------------------------------------- V-trace

def _vtrace_reference(rewards, values, next_values, terminated, truncated, log_rhos, gamma, lam,
                      rho_bar=1.0, c_bar=1.0):
    return _vtrace(rewards, values, next_values, terminated, truncated, log_rhos, gamma, lam,
                   rho_bar, c_bar)


def _vtrace(r, v, nv, term, trunc, log_rhos, gamma, lam, rho_bar, c_bar, clip_rho=True,
            c_from=None, with_lam=True, rho_on_delta=True, stop=None, shift_c=False):
    rho = np.exp(log_rhos)
    rho_t = np.minimum(rho_bar, rho) if clip_rho else rho
    c = np.minimum(c_bar if c_from is None else c_from, rho) * (lam if with_lam else 1.0)
    if shift_c:
        c = np.vstack([c[1:], np.ones_like(c[:1])])
    deltas = (rho_t if rho_on_delta else 1.0) * (r + gamma * np.where(term, 0.0, nv) - v)
    stop = term | trunc if stop is None else stop
    corr = np.zeros_like(deltas)
    following = np.zeros(deltas.shape[1:])
    for t in range(len(deltas) - 1, -1, -1):
        following = deltas[t] + gamma * c[t] * (1 - stop[t]) * following
        corr[t] = following
    return v + corr


def _vtrace_cases():
    r, v, nv, term, trunc = _rollout_case(8)
    rng = np.random.default_rng(9)
    log_rhos = rng.normal(scale=0.8, size=r.shape)
    zero = np.zeros_like(r)
    return [
        Case("on-policy (every ratio 1), lam=0.95: GAE's returns", (r, v, nv, term, trunc, zero,
                                                                     0.99, 0.95)),
        Case("off-policy ratios, rho_bar = c_bar = 1, lam=1", (r, v, nv, term, trunc, log_rhos,
                                                                0.9, 1.0)),
        Case("off-policy ratios, rho_bar=2, c_bar=0.5, lam=0.9",
             (r, v, nv, term, trunc, log_rhos, 0.9, 0.9, 2.0, 0.5)),
    ]


def _vtrace_explain(case, got, expected):
    r, v, nv, term, trunc, log_rhos, gamma, lam, *bars = case.args
    rho_bar, c_bar = bars if bars else (1.0, 1.0)
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    args = (r, v, nv, term, trunc, log_rhos, gamma, lam, rho_bar, c_bar)
    if np.allclose(got, expected - v):
        return "that is v_s - V(s), the correction; the targets are V(s) plus it"
    for kwargs, why in (
        (dict(clip_rho=False), "the ratio on each TD error must be truncated, min(rho_bar, "
                               "pi/mu): an untruncated ratio can be huge, and the targets with it"),
        (dict(c_from=rho_bar), "the traces c are truncated at c_bar, not rho_bar (here c_bar = "
                               "0.5, rho_bar = 2)"),
        (dict(with_lam=False), "the traces are c = lam * min(c_bar, pi/mu): with every ratio 1 "
                               "V-trace must give GAE's returns, so lam belongs in c"),
        (dict(rho_on_delta=False), "each TD error is weighted by its own truncated ratio rho_t "
                                   "(the traces c only carry later errors back)"),
        (dict(stop=np.zeros_like(term)), "the recursion crosses an episode's end (t=3 in copy 0, "
                                         "t=5 in copy 1): cut it where terminated | truncated"),
        (dict(shift_c=True), "the trace that carries A[t+1] back to t is c_t, the ratio of the "
                             "action at t, not c_(t+1)"),
    ):
        if np.allclose(got, _vtrace(*args, **kwargs)):
            return why
    return None


register(
    "vtrace_targets", _vtrace_reference, _vtrace_cases, explain=_vtrace_explain,
    hint="GAE's backward recursion with two truncated ratios: one weighting each TD error, one "
         "(times lam) carrying the later corrections back; check: with every ratio 1 you must "
         "get GAE's returns",
)


# ================================================================ lesson 10

# ---------------------------------------------------------------- the ratio

def _ratio_reference(log_probs, old_log_probs):
    return np.exp(np.asarray(log_probs, float) - np.asarray(old_log_probs, float))


def _ratio_cases():
    rng = np.random.default_rng(10)
    old = np.log(rng.uniform(0.05, 0.95, size=12))
    return [
        Case("the policy has not moved", (old.copy(), old)),
        Case("a moved policy", (old + rng.normal(scale=0.4, size=12), old)),
    ]


def _ratio_explain(case, got, expected):
    new, old = case.args
    got = np.asarray(ad.stop_gradient(got), dtype=float)
    if got.shape != expected.shape:
        return None
    if np.allclose(got, np.exp(old - new)):
        return "the ratio is upside down: pi_new / pi_old = exp(new - old)"
    if np.allclose(got, new - old):
        return "that is the log-ratio: exponentiate it"
    return None


register(
    "ppo_ratio", _ratio_reference, _ratio_cases, explain=_ratio_explain,
    hint="a quotient of probabilities, computed from the difference of their logarithms",
)


# ---------------------------------------------------------------- the clipped objective

def _clip_cases():
    ratio = np.array([0.5, 0.8, 0.95, 1.0, 1.1, 1.2, 1.5, 3.0])
    return [
        Case("positive advantages, eps=0.2", (ratio, np.full(8, 2.0), 0.2)),
        Case("negative advantages, eps=0.2", (ratio, np.full(8, -1.0), 0.2)),
        Case("mixed signs, eps=0.1", (ratio, np.array([1.0, -1.0] * 4), 0.1)),
    ]


def _clip_explain(case, got, expected):
    ratio, adv, eps = case.args
    got = np.asarray(ad.stop_gradient(got), dtype=float)
    if got.shape != expected.shape:
        return None
    clipped = np.clip(ratio, 1 - eps, 1 + eps) * adv
    if np.allclose(got, np.maximum(ratio * adv, clipped)):
        return ("you take the max: the objective is pessimistic, min(ratio*A, clip(ratio)*A), "
                "so a big ratio can never earn more than (1+eps)*A")
    if np.allclose(got, clipped):
        return ("you always clip: for A > 0 and ratio < 1 - eps (or A < 0 and ratio > 1 + eps) "
                "the unclipped term is smaller and must be used, so the policy can undo a bad move")
    if np.allclose(got, np.minimum(ratio, np.clip(ratio, 1 - eps, 1 + eps)) * adv):
        return ("you take the min of the ratios, then multiply by A: for A < 0 that flips which "
                "term is smaller; take the min of the two products")
    if np.allclose(got, ratio * adv):
        return "nothing is clipped: that is the plain surrogate r*A"
    return None


_CLIP_RC = "rc.minimum, rc.clip"

register(
    "ppo_clip_objective", ppo_clip_objective, _clip_cases, explain=_explain_value(_clip_explain),
    call=_objective_with_gradient, compare=_compare_with_gradient(_CLIP_RC),
    hint="take the pessimistic view of each sample: credit a ratio that moved past the clip "
         "range in the advantage's favour no further than the range's edge, but always charge "
         "the full amount for a move the wrong way",
)


# ---------------------------------------------------------------- the PPO loss

def _ppo_loss_reference(params, model, obs, actions, old_log_probs, advantages, returns,
                        eps=0.2, vf_coef=0.5):
    return ppo_loss(params, model, obs, actions, old_log_probs, advantages, returns, eps,
                    vf_coef, 0.0)[0]


def _ppo_loss_cases():
    cases = []
    for seed, eps, vf in ((2, 0.2, 0.5), (3, 0.1, 0.25)):
        model, params, obs, actions, old, adv, ret = _loss_problem(seed, far=True)
        cases.append(Case(f"a moved policy (clipped branch active for A of both signs), eps={eps},"
                          f" vf_coef={vf}", (params, model, obs, actions, old, adv, ret, eps, vf)))
    return cases


def _ppo_variant(params, model, obs, actions, old, adv, ret, eps, vf, sign=1.0, half=0.5,
                 objective="min", invert=False, use_vf=True, recomputed=False):
    logits, values = model(params, obs)
    logp = np.asarray(ad.log_softmax(logits))[np.arange(len(actions)), actions]
    ratio = np.exp(old - logp) if invert else np.exp(logp - old)
    ratio = np.ones_like(ratio) if recomputed else ratio
    clipped = np.clip(ratio, 1 - eps, 1 + eps) * adv
    pick = {"min": np.minimum(ratio * adv, clipped), "max": np.maximum(ratio * adv, clipped),
            "none": ratio * adv}[objective]
    return -sign * np.mean(pick) + (vf if use_vf else 1.0) * half * np.mean(
        (np.asarray(values) - ret) ** 2)


def _ppo_loss_explain(case, got, expected):
    got = _scalar(got)
    if got is None:
        return "return the loss as one number"
    for kwargs, why in (
        (dict(sign=-1.0), "the policy term has the wrong sign: the loss is -L^CLIP (PPO "
                          "maximises the clipped objective)"),
        (dict(objective="none"), "nothing is clipped: with this moved policy many ratios are "
                                 "outside [1 - eps, 1 + eps], so r*A and L^CLIP differ"),
        (dict(objective="max"), "max instead of min: the clipped objective is the pessimistic "
                                "one"),
        (dict(invert=True), "the ratio is upside down: pi_new / pi_old = exp(log pi - old_log_probs)"),
        (dict(half=1.0), "the value term is 1/2 the mean squared error"),
        (dict(use_vf=False), "you ignore vf_coef: the value term is weighted by it"),
        (dict(recomputed=True), "your ratios are all 1: the old log-probabilities must be the "
                                "ones stored at collection time (old_log_probs), not recomputed "
                                "from the current parameters"),
    ):
        if np.isclose(got, _ppo_variant(*case.args, **kwargs)):
            return why
    return None


_PPO_RC = "rc.categorical_log_prob, rc.exp, rc.minimum, rc.clip, rc.mean, rc.square"

register(
    "ppo_loss", _ppo_loss_reference, _ppo_loss_cases, explain=_explain_value(_ppo_loss_explain),
    call=_loss_with_gradient, compare=_compare_with_gradient(_PPO_RC),
    hint="one forward pass; the ratio from the new and the stored log-probabilities; minus the "
         "mean clipped objective, plus vf_coef times half the value's squared error",
)


# ---------------------------------------------------------------- diagnostics

def _approx_kl_reference(new_log_probs, old_log_probs):
    log_ratio = np.asarray(new_log_probs, float) - np.asarray(old_log_probs, float)
    return float(np.mean(np.expm1(log_ratio) - log_ratio))


def _approx_kl_cases():
    rng = np.random.default_rng(3)
    old = np.log(rng.uniform(0.05, 0.95, size=64))
    return [
        Case("the same policy", (old.copy(), old)),
        Case("a small step", (old + rng.normal(scale=0.05, size=64), old)),
        Case("a large step", (old + rng.normal(scale=0.5, size=64) - 0.2, old)),
    ]


def _approx_kl_explain(case, got, expected):
    new, old = case.args
    got = _scalar(got)
    if got is None:
        return "return one number, the mean over samples"
    log_ratio = new - old
    if np.isclose(got, np.mean(old - new)):
        return ("that is the k1 estimate mean(log pi_old - log pi_new): unbiased but it can be "
                "negative on a sample; use mean((r - 1) - log r), which is >= 0 per sample")
    if np.isclose(got, np.mean(np.expm1(-log_ratio) + log_ratio)):
        return ("your ratio is upside down (old / new): that estimates KL(new || old); PPO "
                "reports KL(old || new) with r = pi_new / pi_old")
    if np.isclose(got, np.mean(0.5 * log_ratio**2)):
        return ("that is the k2 estimate 0.5 (log r)^2; the lesson's approx_kl is k3, "
                "(r - 1) - log r")
    if got < 0:
        return "a KL estimate must be >= 0: check the sign of (r - 1) - log r"
    return None


register(
    "approx_kl", _approx_kl_reference, _approx_kl_cases, explain=_approx_kl_explain,
    hint="an estimate of KL(old || new) from the sampled actions alone, one term per sample: "
         "use the estimator that is unbiased and can never be negative on a sample (k3)",
)


def _clip_fraction_reference(ratio, eps):
    return float(np.mean(np.abs(np.asarray(ratio, float) - 1.0) > eps))


def _clip_fraction_cases():
    rng = np.random.default_rng(6)
    return [
        Case("every ratio inside the range", (np.exp(rng.normal(scale=0.02, size=50)), 0.2)),
        Case("ratios on both sides, clip 0.2", (np.exp(rng.normal(scale=0.3, size=200)), 0.2)),
        Case("ratios on both sides, clip 0.1", (np.exp(rng.normal(scale=0.3, size=200)), 0.1)),
    ]


def _clip_fraction_explain(case, got, expected):
    ratio, eps = case.args
    got = _scalar(got)
    if got is None:
        return "return one number, a share between 0 and 1"
    if np.isclose(got, np.mean(ratio > 1 + eps)):
        return ("you count only ratios above 1 + eps; a ratio below 1 - eps has left the clip "
                "range too")
    if np.isclose(got, np.mean(np.abs(ratio - 1.0) <= eps)):
        return "that is the share inside the range: the clip fraction counts the ratios outside it"
    if np.isclose(got, np.sum(np.abs(ratio - 1.0) > eps)):
        return "that is a count: divide by the number of samples for a share"
    if np.isclose(got, np.mean(np.abs(np.log(ratio)) > eps)):
        return "compare the ratio itself with 1 +- eps, not its logarithm"
    return None


register(
    "clip_fraction", _clip_fraction_reference, _clip_fraction_cases,
    explain=_clip_fraction_explain,
    hint="the share of samples whose ratio lies outside [1 - eps, 1 + eps], on either side",
)


# ---------------------------------------------------------------- dual-clip PPO

def _dual_clip_reference(ratio, advantages, eps, c=3.0):
    ratio, advantages = np.asarray(ratio, float), np.asarray(advantages, float)
    clipped = np.minimum(ratio * advantages, np.clip(ratio, 1 - eps, 1 + eps) * advantages)
    return np.where(advantages < 0, np.maximum(clipped, c * advantages), clipped)


def _dual_clip_cases():
    ratio = np.array([0.5, 0.9, 1.0, 1.3, 2.5, 3.5, 6.0, 10.0])
    return [
        Case("negative advantages, c=3", (ratio, np.full(8, -1.0), 0.2, 3.0)),
        Case("positive advantages, c=3", (ratio, np.full(8, 2.0), 0.2, 3.0)),
        Case("mixed signs, eps=0.1, c=2", (ratio, np.array([-1.0, 1.0] * 4), 0.1, 2.0)),
    ]


def _dual_clip_explain(case, got, expected):
    ratio, adv, eps, c = case.args
    got = np.asarray(ad.stop_gradient(got), dtype=float)
    if got.shape != expected.shape:
        return None
    plain = np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    if np.allclose(got, np.maximum(plain, c * adv)):
        return ("you bound the objective below for A > 0 too: there max(L, c*A) = c*A, a "
                "constant with no gradient; the lower bound is only for A < 0")
    if np.allclose(got, np.where(adv < 0, np.minimum(plain, c * adv), plain)):
        return "min instead of max: the bound stops the objective falling below c*A"
    if np.allclose(got, plain):
        return "that is the plain clipped objective: for A < 0, bound it below by c*A"
    if np.allclose(got, np.where(adv < 0, np.maximum(plain, -c * adv), plain)):
        return "the bound is c*A, which is negative for A < 0 (not -c*A)"
    return None


register(
    "dual_clip_objective", _dual_clip_reference, _dual_clip_cases, explain=_dual_clip_explain,
    hint="start from L^CLIP; where the advantage is negative, the objective may not fall below "
         "c times the advantage",
)


# ---------------------------------------------------------------- clipped value loss

def _clipped_value_loss_reference(values, old_values, returns, eps):
    clipped = old_values + np.clip(values - old_values, -eps, eps)
    return float(0.5 * np.mean(np.maximum((values - returns) ** 2, (clipped - returns) ** 2)))


def _clipped_value_cases():
    rng = np.random.default_rng(7)
    old, returns = rng.normal(size=40), rng.normal(size=40)
    return [
        Case("the critic has not moved", (old.copy(), old, returns, 0.2)),
        Case("small moves, all inside eps", (old + rng.uniform(-0.1, 0.1, 40), old, returns, 0.2)),
        Case("large moves, both towards and away from the targets",
             (old + rng.normal(scale=1.0, size=40), old, returns, 0.2)),
        Case("large moves, eps=0.5", (old + rng.normal(scale=1.0, size=40), old, returns, 0.5)),
    ]


def _clipped_value_explain(case, got, expected):
    v, old, g, eps = case.args
    got = _scalar(got)
    if got is None:
        return "return the loss as one number"
    unclipped = (v - g) ** 2
    clipped = (old + np.clip(v - old, -eps, eps) - g) ** 2
    if np.isclose(got, 0.5 * np.mean(np.minimum(unclipped, clipped))):
        return ("you take the min: a loss is minimised, so the pessimistic choice is the larger "
                "error (the mirror of the min in L^CLIP, which is maximised)")
    if np.isclose(got, 0.5 * np.mean(clipped)):
        return ("you use the clipped error alone: a value that moved more than eps the wrong way "
                "would no longer be penalised for it; take the max with the unclipped error")
    if np.isclose(got, 2 * expected):
        return "the value loss is 1/2 the mean squared error, as in the lesson's loss"
    return None


register(
    "clipped_value_loss", _clipped_value_loss_reference, _clipped_value_cases,
    explain=_clipped_value_explain,
    hint="a prediction may move at most eps from the stored value before it stops earning; of "
         "the plain and the clipped squared error take the pessimistic one (this is a loss)",
)

_choice(
    "why_max_in_value_loss", "c",
    choices={"a": "the value loss must be convex",
             "b": "a max makes the critic learn faster",
             "c": "both are pessimistic: L^CLIP is maximised, so its pessimistic choice is the "
                  "smaller; a loss is minimised, so its pessimistic choice is the larger",
             "d": "a min would let the value loss become negative"},
    why_wrong={"a": "a max of convex functions is convex, but so is the plain squared error; "
                    "convexity is not what the max is for",
               "b": "the max can only remove gradient (where the clipped error is larger and "
                    "flat), never speed up learning",
               "d": "both squared errors are >= 0, so their min is too"},
    hint="which direction does each quantity get optimised in, and which choice never flatters "
         "the update?",
)


# ---------------------------------------------------------------- KL-penalty PPO

_choice(
    "where_the_penalties_end", "b",
    choices={"a": "both penalties hold the KL well below the clip's",
             "b": "the fixed beta = 1 ends close to the clip's KL, while the adapted beta ends "
                  "several times above its target 0.01, above the fixed one",
             "c": "the adapted beta holds the KL at its target",
             "d": "without a clip both run away like the plain surrogate, past a nat"},
    why_wrong={"a": "compare your printed KLs with kl_clipped[-1]: the fixed penalty ends within a "
                    "factor 2 of it, and the adapted one above it",
               "c": "beta is changed only every 10 steps, by a factor 2, and only outside the "
                    "band: print the KL after the 60 steps and compare it with 0.01",
               "d": "a penalty grows with the KL, so the objective stops rewarding moves long "
                    "before a nat: print the KLs"},
    hint="run the 60 steps of The problem twice (beta fixed at 1; beta adapted every 10 steps "
         "towards 0.01) and print the exact KL from the old policy at the end of each, next to "
         "the clip's kl_clipped[-1]",
)


def _kl_objective_reference(logits, old_logits, actions, advantages, beta):
    logits, old_logits = np.asarray(logits, float), np.asarray(old_logits, float)
    lp, old_lp = ad.log_softmax(logits), ad.log_softmax(old_logits)
    picked = np.arange(len(actions)), actions
    ratio = np.exp(lp[picked] - old_lp[picked])
    kl = np.sum(np.exp(old_lp) * (old_lp - lp), axis=-1)
    return float(np.mean(ratio * advantages) - beta * np.mean(kl))


def _kl_objective_cases():
    rng = np.random.default_rng(11)
    old = rng.normal(size=(30, 3))
    new = old + rng.normal(scale=0.7, size=(30, 3))
    actions = rng.integers(0, 3, 30)
    adv = rng.normal(size=30) + 0.3
    return [
        Case("the old policy itself (KL 0), beta=1", (old.copy(), old, actions, adv, 1.0)),
        Case("a moved policy, beta=0.5", (new, old, actions, adv, 0.5)),
        Case("a moved policy, beta=3", (new, old, actions, adv, 3.0)),
    ]


def _kl_objective_explain(case, got, expected):
    logits, old_logits, actions, adv, beta = case.args
    got = _scalar(got)
    if got is None:
        return "return the objective as one number"
    lp, old_lp = np.asarray(ad.log_softmax(logits)), np.asarray(ad.log_softmax(old_logits))
    picked = np.arange(len(actions)), actions
    surrogate = np.mean(np.exp(lp[picked] - old_lp[picked]) * adv)
    kl_old_new = np.mean(np.sum(np.exp(old_lp) * (old_lp - lp), axis=-1))
    kl_new_old = np.mean(np.sum(np.exp(lp) * (lp - old_lp), axis=-1))
    sampled = np.mean(old_lp[picked] - lp[picked])
    if np.isclose(got, surrogate + beta * kl_old_new):
        return "the penalty is subtracted: moving away from the old policy must cost"
    if np.isclose(got, surrogate - beta * kl_new_old):
        return ("that is KL(new || old); the PPO paper penalises KL(old || new), the expectation "
                "under the policy that collected the data")
    if np.isclose(got, surrogate - beta * sampled):
        return ("you use the sampled log-ratio of the taken action, which can be negative; use "
                "the exact KL of the full distributions, sum over actions")
    if np.isclose(got, surrogate):
        return "the penalty is missing: subtract beta times the mean KL"
    return None


register(
    "kl_penalty_objective", _kl_objective_reference, _kl_objective_cases,
    explain=_kl_objective_explain,
    hint="instead of a clip, make moving away from the old policy cost something: the plain "
         "surrogate minus beta times how far the new action distributions are from the old "
         "ones (the exact KL in the direction PPO reports, over all actions)",
)


def _adapt_beta_reference(beta, kl, target):
    if kl < target / 1.5:
        return beta / 2
    if kl > target * 1.5:
        return beta * 2
    return beta


def _adapt_beta_cases():
    return [
        Case("KL far below the target", (1.0, 0.001, 0.01)),
        Case("KL far above the target", (1.0, 0.05, 0.01)),
        Case("KL near the target", (1.0, 0.012, 0.01)),
        Case("KL just below target / 1.5", (0.3, 0.0066, 0.01)),
        Case("KL just above target * 1.5", (0.3, 0.0151, 0.01)),
    ]


def _adapt_beta_explain(case, got, expected):
    beta, kl, target = case.args
    got = _scalar(got)
    if got is None:
        return "return the new beta as one number"
    if kl < target / 1.5 and np.isclose(got, 2 * beta):
        return ("the KL is below target: the policy moves too little, so the penalty must be "
                "weakened (halve beta), not strengthened")
    if kl > target * 1.5 and np.isclose(got, beta / 2):
        return "the KL is above target: strengthen the penalty (double beta)"
    if target / 1.5 <= kl <= target * 1.5 and not np.isclose(got, beta):
        return "within [target/1.5, target*1.5] beta stays as it is"
    if np.isclose(got, beta * 1.5) or np.isclose(got, beta / 1.5):
        return "1.5 is the width of the band around the target; beta changes by a factor 2"
    return None


register(
    "adapt_beta", _adapt_beta_reference, _adapt_beta_cases, explain=_adapt_beta_explain,
    hint="a thermostat: a KL well below the target means the penalty holds the policy back too "
         "much, well above means too little; inside a band around the target, leave it alone "
         "(the PPO paper's band and step are in the exercise's text)",
)
