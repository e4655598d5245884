"""Lessons 09-10's exercises: each typical wrong answer is rejected, with the right diagnosis.

Every wrong answer below is written the way a student would write it, submitted through
``rc.exercises.check``, and must fail with the explanation that names its mistake (read from
the printed output). Right answers written differently from the reference must pass.
"""

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.course import exercises

LESSON_09 = ["bootstrap_values", "td_errors_rollout", "gae", "a2c_loss", "n_step_advantages",
             "why_intermediate_n_is_noisy", "average_truncated_return", "vtrace_targets"]
LESSON_10 = ["ppo_ratio", "ppo_clip_objective", "ppo_loss", "approx_kl", "clip_fraction",
             "dual_clip_objective", "clipped_value_loss", "why_max_in_value_loss",
             "kl_penalty_objective", "adapt_beta", "where_the_penalties_end"]


def rejects(name, fn, diagnosis, capsys):
    """``fn`` fails exercise ``name`` and the output names ``diagnosis``."""
    capsys.readouterr()
    with np.errstate(all="ignore"):
        assert not exercises.check(name, fn), f"{name}: the wrong answer passed"
    out = capsys.readouterr().out
    assert diagnosis in out, f"{name}: expected the diagnosis {diagnosis!r}, got:\n{out}"


@pytest.mark.parametrize("name", LESSON_09 + LESSON_10)
def test_registered_and_reference_passes(name):
    assert exercises.check(name, exercises.get(name).reference, verbose=False)


def test_registry_refuses_a_duplicate_name():
    """Two lessons' banks once both registered "td_errors"; the later import silently replaced
    lesson 09's exercise and its check cell failed. ``register`` now refuses the second one."""
    from rlcourse.course.registry import _REGISTRY, Case, register

    before = _REGISTRY["td_errors_rollout"]
    with pytest.raises(ValueError, match="'td_errors_rollout' is already registered"):
        register("td_errors_rollout", lambda r: r, [Case("x", (1.0,))])
    assert _REGISTRY["td_errors_rollout"] is before
    # lesson 05's exercise keeps its own name and signature (rewards, values, terminated, gamma)
    assert "td_errors" in _REGISTRY and _REGISTRY["td_errors"] is not before


def test_every_register_call_in_the_bank_uses_its_own_name():
    """Catch a duplicate in the source too (a name registered under a condition, or twice)."""
    import collections
    import pathlib
    import re

    bank = pathlib.Path(exercises.__file__).parent / "bank"
    names = []
    for path in sorted(bank.glob("*.py")):
        text = path.read_text()
        names += re.findall(r"(?:\bregister|_choice)\(\s*\n?\s*\"([A-Za-z0-9_]+)\"", text)
    assert len(names) > 50, names
    assert not [n for n, k in collections.Counter(names).items() if k > 1]


# ================================================================ lesson 09

def _bootstrap(term_value=0.0, trunc_from="final", term_first=True):
    def fn(v_next_obs, v_final_obs, terminated, truncated):
        trunc_value = {"final": v_final_obs, "next": v_next_obs, "zero": 0.0}[trunc_from]
        if term_first:
            return np.where(terminated, term_value, np.where(truncated, trunc_value, v_next_obs))
        return np.where(truncated, trunc_value, np.where(terminated, term_value, v_next_obs))
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_bootstrap(trunc_from="next"), "use V(final_obs)"),
    (_bootstrap(trunc_from="zero"), "you zero the bootstrap at a truncated step"),
    (_bootstrap(term_first=False), "even when the time limit strikes on the same step"),
])
def test_bootstrap_values_wrong_answers(fn, diagnosis, capsys):
    rejects("bootstrap_values", fn, diagnosis, capsys)


def test_bootstrap_values_right_answer_written_differently():
    def masks(v_next_obs, v_final_obs, terminated, truncated):
        out = v_next_obs.copy()
        out[truncated] = v_final_obs[truncated]
        out[terminated] = 0.0
        return out

    assert exercises.check("bootstrap_values", masks, verbose=False)


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda r, v, nv, term, g: r + g * nv - v, "you bootstrap from the terminal state"),
    (lambda r, v, nv, term, g: v - r - g * np.where(term, 0, nv), "wrong sign"),
    (lambda r, v, nv, term, g: r + np.where(term, 0, nv) - v, "you left out the discount"),
    (lambda r, v, nv, term, g: (r + g * nv) * (1 - term) - v,
     "you dropped the reward of the terminating step"),
])
def test_td_errors_wrong_answers(fn, diagnosis, capsys):
    rejects("td_errors_rollout", fn, diagnosis, capsys)


def _gae(stop="done", zero="terminated", carry_gamma=True, returns="values", late=False):
    def fn(rewards, values, next_values, terminated, truncated, gamma, lam):
        zeroed = {"terminated": terminated, "done": terminated | truncated,
                  "nothing": np.zeros_like(terminated)}[zero]
        cut = {"done": terminated | truncated, "terminated": terminated,
               "nothing": np.zeros_like(terminated)}[stop]
        deltas = rewards + gamma * (1 - zeroed) * next_values - values
        adv = np.zeros_like(deltas)
        following = np.zeros(deltas.shape[1:])
        for t in reversed(range(len(deltas))):
            c = (cut[t + 1] if t + 1 < len(deltas) else 0) if late else cut[t]
            following = deltas[t] + (gamma if carry_gamma else 1) * lam * (1 - c) * following
            adv[t] = following
        return adv, adv + (values if returns == "values" else next_values)
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_gae(stop="nothing"), "includes TD errors from the next episode"),
    (_gae(stop="terminated"), "a truncated step ends the episode too"),
    (_gae(zero="done"), "you treat the time limit at t=5 as a terminal state"),
    (_gae(zero="nothing"), "you bootstrap from the terminal state at t=3"),
    (_gae(carry_gamma=False), "you left out gamma"),
    (_gae(returns="next"), "not + next_values"),
    (_gae(late=True), "you cut the carry one step late"),
    (lambda *args: _gae()(*args)[0], "return a pair (advantages, returns)"),
])
def test_gae_wrong_answers(fn, diagnosis, capsys):
    rejects("gae", fn, diagnosis, capsys)


def test_gae_right_answer_written_forwards():
    """The forward view: a (gamma lam)-weighted sum of TD errors within the episode."""
    def forward(rewards, values, next_values, terminated, truncated, gamma, lam):
        deltas = rewards + gamma * np.where(terminated, 0, next_values) - values
        done = terminated | truncated
        adv = np.zeros_like(deltas)
        for t in range(len(deltas)):
            weight = np.ones(deltas.shape[1:])
            for k in range(t, len(deltas)):
                adv[t] += weight * deltas[k]
                weight = weight * gamma * lam * (1 - done[k])
        return adv, adv + values

    assert exercises.check("gae", forward, verbose=False)


def _a2c(sign=1.0, half=0.5, use_logp=True, use_vf=True, reduce=rc.mean):
    def fn(params, model, obs, actions, advantages, returns, vf_coef=0.5):
        logits, values = model(params, obs)
        log_p = rc.categorical_log_prob(logits, actions)
        score = log_p if use_logp else rc.exp(log_p)
        policy = -sign * reduce(score * advantages)
        value = half * reduce(rc.square(values - returns))
        return policy + (vf_coef if use_vf else 1.0) * value
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_a2c(sign=-1.0), "the policy term has the wrong sign"),
    (_a2c(half=1.0), "the value term is 1/2 the mean squared error"),
    (_a2c(use_logp=False), "the policy term uses log pi(a|s)"),
    (_a2c(use_vf=False), "you ignore vf_coef"),
    (_a2c(reduce=rc.sum), "you sum over the batch"),
    (lambda *args, **kw: np.array([1.0, 2.0]), "return the loss as one number"),
])
def test_a2c_loss_wrong_answers(fn, diagnosis, capsys):
    rejects("a2c_loss", fn, diagnosis, capsys)


def test_a2c_loss_right_answer_passes():
    assert exercises.check("a2c_loss", _a2c(), verbose=False)


def _numpy_log_probs(logits, actions):
    logits = np.asarray(logits, dtype=float)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return log_p[np.arange(len(actions)), actions]


def _a2c_numpy(params, model, obs, actions, advantages, returns, vf_coef=0.5):
    """Review finding F5: the right number, computed in numpy, so nothing can be differentiated."""
    logits, values = model(params, obs)
    policy = -np.mean(_numpy_log_probs(logits, actions) * advantages)
    return float(policy + vf_coef * 0.5 * np.mean((np.asarray(values) - returns) ** 2))


def _a2c_detached_critic(params, model, obs, actions, advantages, returns, vf_coef=0.5):
    logits, values = model(params, obs)
    policy = -rc.mean(rc.categorical_log_prob(logits, actions) * advantages)
    return policy + vf_coef * 0.5 * rc.mean(rc.square(rc.stop_gradient(values) - returns))


@pytest.mark.parametrize("fn, diagnosis", [
    (_a2c_numpy, "rc.value_and_grad cannot differentiate it"),
    (_a2c_detached_critic, "the gradient is not (wrong in 'critic')"),
])
def test_a2c_loss_right_value_without_the_right_gradient(fn, diagnosis, capsys):
    rejects("a2c_loss", fn, diagnosis, capsys)


def _n_step(stop="done", extra=0, discount=True, add_values=False):
    def fn(rewards, values, next_values, terminated, truncated, gamma, n):
        deltas = rewards + gamma * np.where(terminated, 0, next_values) - values
        cut = {"done": terminated | truncated, "terminated": terminated,
               "nothing": np.zeros_like(terminated)}[stop]
        adv = np.zeros_like(deltas)
        for t in range(len(deltas)):
            alive = np.ones(deltas.shape[1:])
            for k in range(min(n + extra, len(deltas) - t)):
                adv[t] += alive * (gamma**k if discount else 1) * deltas[t + k]
                alive = alive * (1 - cut[t + k])
        return adv + values if add_values else adv
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_n_step(stop="nothing"), "into the next episode's TD errors"),
    (_n_step(stop="terminated"), "runs past the time limit at t=5"),
    (_n_step(extra=1), "you sum n + 1 TD errors"),
    (_n_step(discount=False), "weigh the k-th TD error by gamma^k"),
    (_n_step(add_values=True), "that is the n-step return"),
])
def test_n_step_advantages_wrong_answers(fn, diagnosis, capsys):
    rejects("n_step_advantages", fn, diagnosis, capsys)


def test_n_step_advantages_textbook_n_step_return_passes():
    """Review finding F4: the n-step return written from the rewards (S&B 7.1) minus V(s_t) is
    a right answer; the cases' next_values equal values[t + 1] inside an episode, as in a real
    rollout, so it passes."""
    def textbook(rewards, values, next_values, terminated, truncated, gamma, n):
        T = len(rewards)
        advantages = np.zeros_like(rewards)
        for t in range(T):
            for j in range(rewards.shape[1]):
                target, k = 0.0, 0
                while True:
                    target += gamma**k * rewards[t + k, j]
                    ended = terminated[t + k, j] or truncated[t + k, j]
                    if ended or k + 1 == n or t + k + 1 == T:
                        bootstrap = 0.0 if terminated[t + k, j] else next_values[t + k, j]
                        target += gamma ** (k + 1) * bootstrap
                        break
                    k += 1
                advantages[t, j] = target - values[t, j]
        return advantages

    assert exercises.check("n_step_advantages", textbook, verbose=False)


def test_rollout_cases_are_consistent_like_a_real_rollout():
    for name in ("td_errors_rollout", "gae", "n_step_advantages", "vtrace_targets"):
        for case in exercises.get(name).cases():
            r, v, nv, term = case.args[:4]
            if name == "td_errors_rollout":  # a TD error takes no truncated flag; the rollout
                trunc = np.zeros_like(term)      # behind it has copy 1 truncated at t=5
                trunc[5, 1:] = True
            else:
                trunc = case.args[4]
            inside = ~(term | trunc)[:-1]
            assert np.array_equal(nv[:-1][inside], v[1:][inside]), (name, case.label)


@pytest.mark.parametrize("letter, diagnosis", [
    ("a", "every CartPole reward is exactly 1"),
    ("c", "it adds no randomness"),
    ("d", "bias is a shift of the mean"),
    ("e", "return one of the letters"),
    (2, "return one of the letters"),
])
def test_why_intermediate_n_is_noisy_wrong_answers(letter, diagnosis, capsys):
    rejects("why_intermediate_n_is_noisy", lambda: letter, diagnosis, capsys)
    assert exercises.check("why_intermediate_n_is_noisy", lambda: " B ", verbose=False)


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda g, H: float(np.mean((1 - g ** np.arange(0, H)) / (1 - g))), "you average over 0..H-1"),
    (lambda g, H: 1 / (1 - g), "that is the true value"),
    (lambda g, H: (1 - g**H) / (1 - g), "from the first step only"),
    (lambda g, H: float(np.sum((1 - g ** np.arange(1, H + 1)) / (1 - g))), "divide by H"),
])
def test_average_truncated_return_wrong_answers(fn, diagnosis, capsys):
    rejects("average_truncated_return", fn, diagnosis, capsys)


def _vtrace(clip_rho=True, c_at="c_bar", with_lam=True, rho_on_delta=True, stop=True,
            shift=False, targets=True):
    def fn(rewards, values, next_values, terminated, truncated, log_rhos, gamma, lam,
           rho_bar=1.0, c_bar=1.0):
        ratio = np.exp(log_rhos)
        rho = np.minimum(rho_bar, ratio) if clip_rho else ratio
        c = np.minimum(c_bar if c_at == "c_bar" else rho_bar, ratio) * (lam if with_lam else 1)
        deltas = (rho if rho_on_delta else 1) * (
            rewards + gamma * np.where(terminated, 0, next_values) - values)
        done = terminated | truncated if stop else np.zeros_like(terminated)
        corr = np.zeros_like(deltas)
        following = np.zeros(deltas.shape[1:])
        for t in reversed(range(len(deltas))):
            trace = c[t + 1] if shift and t + 1 < len(c) else (1.0 if shift else c[t])
            following = deltas[t] + gamma * trace * (1 - done[t]) * following
            corr[t] = following
        return values + corr if targets else corr
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_vtrace(clip_rho=False), "an untruncated ratio can be huge"),
    (_vtrace(c_at="rho_bar"), "the traces c are truncated at c_bar"),
    (_vtrace(with_lam=False), "so lam belongs in c"),
    (_vtrace(rho_on_delta=False), "weighted by its own truncated ratio"),
    (_vtrace(stop=False), "the recursion crosses an episode's end"),
    (_vtrace(shift=True), "not c_(t+1)"),
    (_vtrace(targets=False), "that is v_s - V(s)"),
])
def test_vtrace_wrong_answers(fn, diagnosis, capsys):
    rejects("vtrace_targets", fn, diagnosis, capsys)


def test_vtrace_written_as_displayed_passes():
    """Review finding F4: the lesson's formula read literally, v_(t+1) - V(s_(t+1)) with
    V(s_(t+1)) = next_values[t], is a right answer on a consistent rollout."""
    def literal(rewards, values, next_values, terminated, truncated, log_rhos, gamma, lam,
                rho_bar=1.0, c_bar=1.0):
        ratios = np.exp(log_rhos)
        rho, c = np.minimum(rho_bar, ratios), lam * np.minimum(c_bar, ratios)
        done = terminated | truncated
        deltas = rewards + gamma * np.where(terminated, 0.0, next_values) - values
        targets = np.zeros_like(values)
        for t in range(len(rewards) - 1, -1, -1):
            later = targets[t + 1] - next_values[t] if t + 1 < len(rewards) else 0.0
            targets[t] = values[t] + rho[t] * deltas[t] + gamma * c[t] * (1 - done[t]) * later
        return targets

    assert exercises.check("vtrace_targets", literal, verbose=False)


def test_vtrace_with_every_ratio_one_is_gae():
    rng = np.random.default_rng(0)
    r, v, nv = (rng.normal(size=(9, 3)) for _ in range(3))
    term, trunc = rng.random((9, 3)) < 0.2, rng.random((9, 3)) < 0.1
    targets = exercises.get("vtrace_targets").reference(r, v, nv, term, trunc, np.zeros((9, 3)),
                                                        0.97, 0.9)
    np.testing.assert_allclose(targets, rc.gae(r, v, nv, term, trunc, 0.97, 0.9)[1])


# ================================================================ lesson 10

@pytest.mark.parametrize("fn, diagnosis", [
    (lambda new, old: np.exp(old - new), "the ratio is upside down"),
    (lambda new, old: new - old, "that is the log-ratio"),
])
def test_ppo_ratio_wrong_answers(fn, diagnosis, capsys):
    rejects("ppo_ratio", fn, diagnosis, capsys)


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda r, a, e: np.maximum(r * a, np.clip(r, 1 - e, 1 + e) * a), "you take the max"),
    (lambda r, a, e: np.clip(r, 1 - e, 1 + e) * a, "you always clip"),
    (lambda r, a, e: np.minimum(r, np.clip(r, 1 - e, 1 + e)) * a, "you take the min of the ratios"),
    (lambda r, a, e: r * a, "nothing is clipped"),
])
def test_ppo_clip_objective_wrong_answers(fn, diagnosis, capsys):
    rejects("ppo_clip_objective", fn, diagnosis, capsys)


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda r, a, e: np.minimum(r * a, np.clip(r, 1 - e, 1 + e) * a),
     "rc.value_and_grad cannot differentiate it"),
    (lambda r, a, e: rc.minimum(rc.stop_gradient(r) * a, rc.clip(r, 1 - e, 1 + e) * a),
     "finds a gradient of 0"),
])
def test_ppo_clip_objective_right_value_without_the_right_gradient(fn, diagnosis, capsys):
    """Review finding F5: numpy's minimum/clip give the right numbers and no gradient."""
    rejects("ppo_clip_objective", fn, diagnosis, capsys)


def _ppo_loss(sign=1.0, objective="min", invert=False, half=0.5, use_vf=True, recompute=False):
    def fn(params, model, obs, actions, old_log_probs, advantages, returns, eps=0.2, vf_coef=0.5):
        logits, values = model(params, obs)
        log_probs = rc.categorical_log_prob(logits, actions)
        if recompute:  # "old" log-probs from the current parameters
            old_log_probs = rc.categorical_log_prob(model(params, obs)[0], actions)
        ratio = rc.exp(old_log_probs - log_probs) if invert else rc.exp(log_probs - old_log_probs)
        clipped = rc.clip(ratio, 1 - eps, 1 + eps) * advantages
        chosen = {"min": rc.minimum(ratio * advantages, clipped),
                  "max": rc.maximum(ratio * advantages, clipped),
                  "none": ratio * advantages}[objective]
        value = half * rc.mean(rc.square(values - returns))
        return -sign * rc.mean(chosen) + (vf_coef if use_vf else 1.0) * value
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_ppo_loss(sign=-1.0), "the loss is -L^CLIP"),
    (_ppo_loss(objective="none"), "nothing is clipped"),
    (_ppo_loss(objective="max"), "max instead of min"),
    (_ppo_loss(invert=True), "the ratio is upside down"),
    (_ppo_loss(half=1.0), "the value term is 1/2"),
    (_ppo_loss(use_vf=False), "you ignore vf_coef"),
    (_ppo_loss(recompute=True), "your ratios are all 1"),
])
def test_ppo_loss_wrong_answers(fn, diagnosis, capsys):
    rejects("ppo_loss", fn, diagnosis, capsys)


def _ppo_loss_numpy(params, model, obs, actions, old_log_probs, advantages, returns, eps=0.2,
                    vf_coef=0.5):
    logits, values = model(params, obs)
    ratio = np.exp(_numpy_log_probs(logits, actions) - old_log_probs)
    clipped = np.clip(ratio, 1 - eps, 1 + eps) * advantages
    policy = -np.mean(np.minimum(ratio * advantages, clipped))
    return float(policy + vf_coef * 0.5 * np.mean((np.asarray(values) - returns) ** 2))


def _ppo_loss_detached_old(params, model, obs, actions, old_log_probs, advantages, returns,
                           eps=0.2, vf_coef=0.5):
    """The ratio's numerator detached: right value, no policy gradient."""
    logits, values = model(params, obs)
    log_probs = rc.stop_gradient(rc.categorical_log_prob(logits, actions))
    ratio = rc.exp(log_probs - old_log_probs)
    clipped = rc.clip(ratio, 1 - eps, 1 + eps) * advantages
    policy = -rc.mean(rc.minimum(ratio * advantages, clipped))
    return policy + vf_coef * 0.5 * rc.mean(rc.square(values - returns))


@pytest.mark.parametrize("fn, diagnosis", [
    (_ppo_loss_numpy, "rc.value_and_grad cannot differentiate it"),
    (_ppo_loss_detached_old, "the gradient is not (wrong in 'actor')"),
])
def test_ppo_loss_right_value_without_the_right_gradient(fn, diagnosis, capsys):
    rejects("ppo_loss", fn, diagnosis, capsys)


def test_ppo_loss_cases_exercise_the_clipped_branch_for_both_signs():
    """Review finding: a loss check at clip fraction 0 never tells min from the plain r*A."""
    for case in exercises.get("ppo_loss").cases():
        params, model, obs, actions, old, adv, ret, eps, vf = case.args
        logp = rc.categorical_log_prob(model(params, obs)[0], actions)
        ratio = np.exp(logp - old)
        assert np.any((ratio > 1 + eps) & (adv > 0)) and np.any((ratio < 1 - eps) & (adv < 0))
        assert np.mean(np.abs(ratio - 1) > eps) > 0.3


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda new, old: float(np.mean(old - new)), "that is the k1 estimate"),
    (lambda new, old: float(np.mean(np.exp(old - new) - 1 - (old - new))), "upside down"),
    (lambda new, old: float(np.mean(0.5 * (new - old) ** 2)), "that is the k2 estimate"),
    (lambda new, old: float(np.mean(np.log(np.exp(new - old)) - (np.exp(new - old) - 1))),
     "must be >= 0"),
])
def test_approx_kl_wrong_answers(fn, diagnosis, capsys):
    rejects("approx_kl", fn, diagnosis, capsys)


@pytest.mark.parametrize("fn, diagnosis", [
    (lambda r, e: float(np.mean(r > 1 + e)), "you count only ratios above 1 + eps"),
    (lambda r, e: float(np.mean(np.abs(r - 1) <= e)), "that is the share inside the range"),
    (lambda r, e: float(np.sum(np.abs(r - 1) > e)), "that is a count"),
    (lambda r, e: float(np.mean(np.abs(np.log(r)) > e)), "not its logarithm"),
])
def test_clip_fraction_wrong_answers(fn, diagnosis, capsys):
    rejects("clip_fraction", fn, diagnosis, capsys)


def _dual(bound="max", negative_only=True, sign=1.0):
    def fn(ratio, advantages, eps, c=3.0):
        plain = np.minimum(ratio * advantages, np.clip(ratio, 1 - eps, 1 + eps) * advantages)
        bounded = (np.maximum if bound == "max" else np.minimum)(plain, sign * c * advantages)
        return np.where(advantages < 0, bounded, plain) if negative_only else bounded
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_dual(negative_only=False), "the lower bound is only for A < 0"),
    (_dual(bound="min"), "min instead of max"),
    (lambda r, a, e, c=3.0: np.minimum(r * a, np.clip(r, 1 - e, 1 + e) * a),
     "that is the plain clipped objective"),
    (_dual(sign=-1.0), "(not -c*A)"),
])
def test_dual_clip_wrong_answers(fn, diagnosis, capsys):
    rejects("dual_clip_objective", fn, diagnosis, capsys)


def _clipped_value(pick=np.maximum, clipped_only=False, half=0.5, clip_values=False,
                   fixed_eps=None):
    def fn(values, old_values, returns, eps):
        eps = eps if fixed_eps is None else fixed_eps
        if clip_values:
            moved = np.clip(values, old_values - eps, old_values + eps)
        else:
            moved = old_values + np.clip(values - old_values, -eps, eps)
        clipped = (moved - returns) ** 2
        if clipped_only:
            return half * np.mean(clipped)
        return half * np.mean(pick((values - returns) ** 2, clipped))
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_clipped_value(pick=np.minimum), "you take the min"),
    (_clipped_value(clipped_only=True), "you use the clipped error alone"),
    (_clipped_value(half=1.0), "the value loss is 1/2 the mean squared error"),
    (_clipped_value(fixed_eps=0.2), "[fail] large moves, eps=0.5"),
])
def test_clipped_value_loss_wrong_answers(fn, diagnosis, capsys):
    rejects("clipped_value_loss", fn, diagnosis, capsys)


def test_clipped_value_loss_clipping_the_value_itself_is_the_same_thing():
    """clip(V, V_old - eps, V_old + eps) equals V_old + clip(V - V_old, -eps, eps)."""
    assert exercises.check("clipped_value_loss", _clipped_value(clip_values=True), verbose=False)


@pytest.mark.parametrize("letter, diagnosis", [
    ("a", "convexity is not what the max is for"),
    ("b", "never speed up learning"),
    ("d", "their min is too"),
])
def test_why_max_in_value_loss_wrong_answers(letter, diagnosis, capsys):
    rejects("why_max_in_value_loss", lambda: letter, diagnosis, capsys)


def _kl_objective(penalty_sign=-1.0, kl="old_new"):
    def fn(logits, old_logits, actions, advantages, beta):
        lp, old_lp = rc.log_softmax(logits), rc.log_softmax(old_logits)
        picked = np.arange(len(actions)), actions
        ratio = np.exp(lp[picked] - old_lp[picked])
        if kl == "old_new":
            div = np.sum(np.exp(old_lp) * (old_lp - lp), axis=-1)
        elif kl == "new_old":
            div = np.sum(np.exp(lp) * (lp - old_lp), axis=-1)
        else:
            div = old_lp[picked] - lp[picked]
        return float(np.mean(ratio * advantages) + penalty_sign * beta * np.mean(div))
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_kl_objective(penalty_sign=1.0), "the penalty is subtracted"),
    (_kl_objective(kl="new_old"), "that is KL(new || old)"),
    (_kl_objective(kl="sampled"), "you use the sampled log-ratio"),
    (_kl_objective(penalty_sign=0.0), "the penalty is missing"),
])
def test_kl_penalty_objective_wrong_answers(fn, diagnosis, capsys):
    rejects("kl_penalty_objective", fn, diagnosis, capsys)


def _adapt(low=1 / 1.5, high=1.5, factor=2.0, flip=False):
    def fn(beta, kl, target):
        if kl < target * low:
            return beta * factor if flip else beta / factor
        if kl > target * high:
            return beta / factor if flip else beta * factor
        return beta
    return fn


@pytest.mark.parametrize("fn, diagnosis", [
    (_adapt(flip=True), "the penalty must be weakened"),
    (_adapt(low=1.0, high=1.0), "beta stays as it is"),
    (_adapt(factor=1.5), "beta changes by a factor 2"),
])
def test_adapt_beta_wrong_answers(fn, diagnosis, capsys):
    rejects("adapt_beta", fn, diagnosis, capsys)


@pytest.mark.parametrize("letter, diagnosis", [
    ("a", "the fixed penalty ends within a factor 2"),
    ("c", "compare it with 0.01"),
    ("d", "long before a nat"),
])
def test_where_the_penalties_end_wrong_answers(letter, diagnosis, capsys):
    """Review finding F15: exercise 3's question now has a checked answer."""
    rejects("where_the_penalties_end", lambda: letter, diagnosis, capsys)
