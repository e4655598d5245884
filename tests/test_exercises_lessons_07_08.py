"""The exercises of lessons 07-08 (Build-it steps and exercises): each typical wrong answer is
rejected by its checker, with the diagnosis that names the mistake, and every explain branch is
reached. Right answers written another way pass. The registry's own sanity (reference passes,
a shifted answer fails) is in tests/test_exercises.py."""

import numpy as np
import pytest
from exercise_checks import accepted, rejected

from rlcourse.course import exercises


def _check_all(name, wrong, key, capsys):
    fn, diagnosis = wrong[key]
    out = rejected(name, fn, capsys)
    assert diagnosis in out, f"{name} / {key}: expected the diagnosis {diagnosis!r} in:\n{out}"


# ================================================================ lesson 07: DQN

def _targets(bootstrap, mask_reward=False, use_mask=True):
    """A DQN target whose bootstrap value is ``bootstrap(online, target, double) [B]``."""
    def targets(rewards, terminated, next_q_online, next_q_target, gamma, double=True):
        value = bootstrap(next_q_online, next_q_target, double)
        keep = 1.0 - terminated if use_mask else 1.0
        if mask_reward:
            return (1.0 - terminated) * (rewards + gamma * value)
        return rewards + gamma * keep * value
    return targets


def _rows(q):
    return np.arange(len(q))


def _double(o, t, double):
    return t[_rows(t), np.argmax(o, axis=1)] if double else t.max(axis=1)


DQN_TARGETS_WRONG = {
    "bootstraps through terminals": (_targets(_double, use_mask=False), "bootstrapped from a terminal"),
    "masks the reward too": (_targets(_double, mask_reward=True), "still earned its reward"),
    "max of the target net": (_targets(lambda o, t, d: t.max(axis=1)), "you took max_a Q_target"),
    "max of the online net": (_targets(lambda o, t, d: o.max(axis=1)), "online net's own max"),
    "plain DQN from the online net's max": (  # review 07f, G6: the message must not talk of Double
        _targets(lambda o, t, d: t[_rows(t), np.argmax(o, axis=1)] if d else o.max(axis=1)),
        "plain DQN (double=False) takes the target net's max"),
    "the target net's min": (  # review 07i, F1: passed while a* was always the target's min
        _targets(lambda o, t, d: t.min(axis=1) if d else t.max(axis=1)), "target net's smallest value"),
    "clipped double Q": (  # review 07j, F8
        _targets(lambda o, t, d: np.minimum(o, t)[_rows(t), np.argmax(o, axis=1)] if d else t.max(axis=1)),
        "clipped double Q"),
    "roles swapped": (_targets(lambda o, t, d: o[_rows(o), np.argmax(t, axis=1)] if d else t.max(1)),
                      "roles are swapped"),
    "always double": (_targets(lambda o, t, d: t[_rows(t), np.argmax(o, axis=1)]),
                      "with double=False"),
    "argmax over the batch": (
        lambda r, term, o, t, g, double=True: r[:o.shape[1]] + g * t.max(axis=0), "axis 1"),
    "gamma multiplies r too": (  # review 07h, F7
        lambda r, term, o, t, g, double=True: g * (r + (1.0 - term) * _double(o, t, double)),
        "gamma multiplies the reward too"),
    "gamma multiplies r too, seen at gamma 0": (
        lambda r, term, o, t, g, double=True: g * (r + (1.0 - term) * _double(o, t, double)),
        "with gamma = 0 the target is the reward r alone"),
    "terminal mask one row late": (
        lambda r, term, o, t, g, double=True: r + g * (1.0 - np.roll(term, 1)) * _double(o, t, double),
        "off by one row"),
}


@pytest.mark.parametrize("wrong", DQN_TARGETS_WRONG, ids=list(DQN_TARGETS_WRONG))
def test_dqn_targets_rejects(wrong, capsys):
    _check_all("dqn_targets", DQN_TARGETS_WRONG, wrong, capsys)


def test_dqn_targets_accepts_a_loop(capsys):
    def loop(rewards, terminated, online, target, gamma, double=True):
        out = []
        for r, done, o, t in zip(rewards, terminated, online, target):
            v = t[int(np.argmax(o))] if double else max(t)
            out.append(r if done else r + gamma * v)
        return np.array(out)
    accepted("dqn_targets", loop, capsys)


def _huber(inside, outside, test=np.abs):
    def huber(x, delta=1.0):
        return np.where(test(x) <= delta, inside(x, delta), outside(np.abs(x), delta))
    return huber


HUBER_WRONG = {
    "x**2 inside": (_huber(lambda x, d: x**2, lambda a, d: d * (a - 0.5 * d)), "x**2 / 2, not x**2"),
    "no offset outside": (_huber(lambda x, d: 0.5 * x**2, lambda a, d: d * a), "do not meet"),
    "delta missing outside": (_huber(lambda x, d: 0.5 * x**2, lambda a, d: a - 0.5 * d),
                              "multiplied by delta"),
    "smooth L1": (_huber(lambda x, d: 0.5 * x**2 / d, lambda a, d: a - 0.5 * d), "smooth L1"),
    "x <= delta": (_huber(lambda x, d: 0.5 * x**2, lambda a, d: d * (a - 0.5 * d), test=lambda x: x),
                   "not x <= delta"),
    "delta / 2 for delta**2 / 2": (_huber(lambda x, d: 0.5 * x**2, lambda a, d: d * a - 0.5 * d),  # 07h F7
                                   "constant is delta**2 / 2"),
    "switches at 1": (lambda x, delta=1.0: np.where(np.abs(x) <= 1.0, 0.5 * x**2,
                                                    delta * (np.abs(x) - 0.5 * delta)),
                      "not at |x| = 1"),
}


@pytest.mark.parametrize("wrong", HUBER_WRONG, ids=list(HUBER_WRONG))
def test_huber_rejects(wrong, capsys):
    _check_all("huber", HUBER_WRONG, wrong, capsys)


def test_huber_accepts_a_clipped_form(capsys):
    def clipped(x, delta=1.0):
        a = np.minimum(np.abs(x), delta)
        return 0.5 * a**2 + delta * (np.abs(x) - a)
    accepted("huber", clipped, capsys)


RING_WRONG = {
    "rows not wrapped": (lambda p, s, k, c: (p + np.arange(k), (p + k) % c, min(s + k, c)),
                         "wrap them with % capacity"),
    "position not wrapped": (lambda p, s, k, c: ((p + np.arange(k)) % c, p + k, min(s + k, c)),
                             "the position wraps too"),
    "off by one": (lambda p, s, k, c: ((p + np.arange(k)) % c, (p + k - 1) % c, min(s + k, c)),
                   "off by one"),
    "size not capped": (lambda p, s, k, c: ((p + np.arange(k)) % c, (p + k) % c, s + k),
                        "never exceeds the capacity"),
    "size is the position": (lambda p, s, k, c: ((p + np.arange(k)) % c, (p + k) % c, (p + k) % c),
                             "not the write position"),
    "starts over at 0": (lambda p, s, k, c: (np.arange(k) if p + k > c else p + np.arange(k),
                                             k if p + k > c else (p + k) % c, min(s + k, c)),
                         "started over at row 0"),
    "returns only the rows": (lambda p, s, k, c: (p + np.arange(k)) % c, "the triple"),
}


@pytest.mark.parametrize("wrong", RING_WRONG, ids=list(RING_WRONG))
def test_ring_write_rejects(wrong, capsys):
    _check_all("ring_write", RING_WRONG, wrong, capsys)


GAP_WRONG = {
    "max - min": (lambda q: q.max(axis=1) - q.min(axis=1), "second* best"),
    "signed first two": (lambda q: q[:, 1] - q[:, 0], "the gap is >= 0"),
    "first two only": (lambda q: np.abs(q[:, 0] - q[:, 1]), "first two actions only"),
    "max - mean": (lambda q: q.max(axis=1) - q.mean(axis=1), "max - mean"),
    "max Q": (lambda q: q.max(axis=1), "the state's value"),
    "sorted over states": (lambda q: np.sort(q, axis=0)[-1] - np.sort(q, axis=0)[-2], "axis 0"),
    "distinct values": (lambda q: np.array([np.unique(r)[-1] - np.unique(r)[-2] for r in q]),
                        "tied best actions"),
}


@pytest.mark.parametrize("wrong", GAP_WRONG, ids=list(GAP_WRONG))
def test_action_gap_rejects(wrong, capsys):
    _check_all("action_gap", GAP_WRONG, wrong, capsys)


def test_action_gap_accepts_partition(capsys):
    accepted("action_gap", lambda q: -np.diff(np.partition(q, -2, axis=1)[:, -2:], axis=1)[:, 0] * -1,
             capsys)


def _gap(q):
    s = np.sort(q, axis=1)
    return s[:, -1] - s[:, -2]


CHANGE_WRONG = {
    "change of max Q": (lambda b, a: np.abs(a.max(axis=1) - b.max(axis=1)), "max_a Q moved"),
    "largest single change": (lambda b, a: np.abs(a - b).max(axis=1), "single values moved"),
    "mean absolute change": (lambda b, a: np.abs(a - b).mean(axis=1), "single values moved"),
    "change of the gap": (lambda b, a: np.abs(_gap(a) - _gap(b)), "misses flips"),
    "signed": (lambda b, a: (a - b)[:, 1] - (a - b)[:, 0], "the change is a size"),
    # review 07h, F1: a move relative to one action passed while action 0 was always at an extreme
    "relative to action 0": (lambda b, a: np.abs((a - b) - (a - b)[:, :1]).max(axis=1), "*all* actions"),
    "relative to the last action": (lambda b, a: np.abs((a - b) - (a - b)[:, -1:]).max(axis=1),
                                    "*all* actions"),
    "relative to the greedy action": (
        lambda b, a: np.abs((a - b) - np.take_along_axis(a - b, b.argmax(1)[:, None], 1)).max(axis=1),
        "*all* actions"),
}


@pytest.mark.parametrize("wrong", CHANGE_WRONG, ids=list(CHANGE_WRONG))
def test_relative_change_rejects(wrong, capsys):
    _check_all("relative_change", CHANGE_WRONG, wrong, capsys)


def test_relative_change_accepts_ptp(capsys):
    accepted("relative_change", lambda b, a: np.ptp(a - b, axis=1), capsys)


POLYAK_LAG_WRONG = {
    "newest counted as age 1": (lambda tau: 1 / tau, "1 step old"),
    "half-life": (lambda tau: np.log(2) / -np.log1p(-tau), "half-life"),
    "ln 2 / tau": (lambda tau: np.log(2) / tau, "half-life"),
    "upside down": (lambda tau: tau / (1 - tau) if tau < 1 else 0.0, "upside down"),
    "sum cut at 1,000 terms": (lambda tau: sum(k * tau * (1 - tau) ** k for k in range(1_000)),
                               "stopped too early"),
    "not a number": (lambda tau: None, "one number"),
}


@pytest.mark.parametrize("wrong", POLYAK_LAG_WRONG, ids=list(POLYAK_LAG_WRONG))
def test_polyak_mean_lag_rejects(wrong, capsys):
    _check_all("polyak_mean_lag", POLYAK_LAG_WRONG, wrong, capsys)


def test_polyak_mean_lag_accepts_a_long_sum(capsys):
    accepted("polyak_mean_lag", lambda tau: sum(k * tau * (1 - tau) ** k for k in range(20_000)), capsys)


TAU_PERIOD_WRONG = {
    "tau = 1/N": (lambda n: 1 / n, "twice the hard copy's"),
    "mean lag N/2": (lambda n: 2 / n, "not N / 2"),
    "tau = 1/(N+1)": (lambda n: 1 / (n + 1), "a mean lag of N"),
    "tau = 2/(N-1)": (lambda n: 2 / (n - 1) if n > 1 else 1.0, "(N - 3) / 2"),
    "the lag, not tau": (lambda n: (n - 1) / 2, "a lag in steps"),
    "not a number": (lambda n: "2/(N+1)", "one number"),
}


@pytest.mark.parametrize("wrong", TAU_PERIOD_WRONG, ids=list(TAU_PERIOD_WRONG))
def test_tau_for_period_rejects(wrong, capsys):
    _check_all("tau_for_period", TAU_PERIOD_WRONG, wrong, capsys)


def test_tau_for_period_matches_a_simulated_drift():
    """The reference's tau gives the Polyak target the hard copy's mean lag on a drifting net."""
    tau_for = exercises.get("tau_for_period").reference
    for period in (4, 128):
        tau, steps = tau_for(period), 20 * period + 4_000
        polyak, hard, lags_polyak, lags_hard = 0.0, 0.0, [], []
        for t in range(1, steps + 1):  # the online weight is t after step t
            polyak = (1 - tau) * polyak + tau * t
            hard = t if t % period == 0 else hard
            lags_polyak.append(t - polyak)
            lags_hard.append(t - hard)
        assert abs(np.mean(lags_polyak[-period * 10:]) - np.mean(lags_hard[-period * 10:])) < 1e-6 * period


def _n_step(first=True, truncation="bootstrap", column="end", shift=1, end_reward=True,
            reward_shift=0, discount=True, terminal_boots=False, past_end=False, no_end_power=0,
            last_step_mask=False, truncation_wins=False, argmax_bug=False, mean=False,
            trunc_power_n=False):
    """A loop over the windows with one typical mistake switched on (none: the right answer)."""
    def targets(rewards, terminated, truncated, next_q, gamma):
        n = rewards.shape[1]
        out = []
        for r, te, tr, q in zip(rewards, terminated, truncated, next_q):
            ends = [k for k in range(n) if te[k] or (tr[k] and truncation != "ignore")]
            k_end = (ends[0] if first else ends[-1]) if ends else None
            stop = n - 1 if k_end is None or past_end else k_end
            total = 0.0
            for k in range(stop + 1):
                if k == k_end and not end_reward:
                    break
                total += (gamma ** (k + reward_shift) if discount else 1.0) * r[k]
            if last_step_mask:
                boot_at = None if te[-1] else n - 1
            elif k_end is None:
                boot_at = 0 if argmax_bug else n - 1
            elif te[k_end] and not (truncation_wins and tr[k_end]):
                boot_at = k_end if terminal_boots else None
            else:
                boot_at = k_end if truncation == "bootstrap" else None
            if boot_at is not None:
                power = n + no_end_power if k_end is None or last_step_mask else k_end + shift
                power = 1 if argmax_bug and k_end is None else n if trunc_power_n else power
                values = q[boot_at if column == "end" else n - 1]
                total += gamma ** power * (values.mean() if mean else values.max())
            out.append(total)
        return np.array(out)
    return targets


def _first(flags, n):
    """The first True step of a window, or its last step if there is none."""
    hits = np.flatnonzero(flags)
    return int(hits[0]) if hits.size else n - 1


N_STEP_WRONG = {
    "truncation as termination": (_n_step(truncation="terminal"), "a time limit is not a termination"),
    "truncation ignored": (_n_step(truncation="ignore"), "ends the episode too"),
    "bootstraps from the last column": (_n_step(column="last"), "not from the window's last column"),
    "truncation bootstrap gamma^k": (_n_step(shift=0), "gamma^(k+1), not gamma^k"),
    "stops at the last end": (_n_step(first=False), "*first* end"),  # review 07k, F6
    "bootstraps after a terminal": (_n_step(terminal_boots=True), "must not bootstrap"),
    "sums past the end": (_n_step(past_end=True), "belong to the next episode"),
    "drops the end step's reward": (_n_step(end_reward=False), "reward of the step that ended"),
    "undiscounted rewards": (_n_step(discount=False), "discounted by gamma^k"),  # review 07k, F7
    "first reward discounted": (_n_step(reward_shift=1), "not discounted"),
    "no-end bootstrap gamma^(n-1)": (_n_step(no_end_power=-1), "gamma^n, not gamma^2"),
    "masks the bootstrap by the last step only": (_n_step(last_step_mask=True), "at *any* step"),
    "max over the batch": (lambda r, te, tr, q, g: q.max(axis=(0, 2))[:len(r)], "one target per window"),
    # review 07l, F3 and F4
    "truncation wins over termination": (_n_step(truncation_wins=True), "the termination wins"),
    "argmax of a window with no end": (_n_step(argmax_bug=True), "argmax of a"),
    "mean over the actions": (_n_step(mean=True), "not the mean"),
    "truncation bootstrap gamma^n": (_n_step(trunc_power_n=True), "gamma^(k+1), not gamma^n"),
    "a time limit stops the bootstrap only": (  # review 07m, F3
        lambda r, te, tr, q, g: np.array([
            sum(g**k * r[b, k] for k in range(_first(te[b], r.shape[1]) + 1))
            + (0.0 if (te[b] | tr[b])[:_first(te[b], r.shape[1]) + 1].any()
               else g ** r.shape[1] * q[b, -1].max()) for b in range(len(r))]),
        "ends the reward sum too"),
}


@pytest.mark.parametrize("wrong", N_STEP_WRONG, ids=list(N_STEP_WRONG))
def test_n_step_dqn_targets_rejects(wrong, capsys):
    fn, diagnosis = N_STEP_WRONG[wrong]
    out = rejected("n_step_dqn_targets", fn, capsys)
    assert diagnosis is None or diagnosis in out, f"{wrong}: expected {diagnosis!r} in:\n{out}"


def test_n_step_dqn_targets_accepts_the_loop_without_mistakes(capsys):
    accepted("n_step_dqn_targets", _n_step(), capsys)


STABLE_WRONG = {
    "only the upper edge": (lambda a: (0.0, 0.5), "small gammas diverge too"),
    "swapped": (lambda a: (0.5, max(0.0, 0.5 - 1 / a)), "other way round"),
    "not clipped at 0": (lambda a: (0.5 - 1 / a, 0.5), "clip it at 0"),
    "factor 2": (lambda a: (max(0.0, 0.5 - 2 / a), 0.5), "exactly"),
    "a grid": (lambda a: (round(max(0.0, 0.5 - 1 / a) + 0.01, 2), 0.5), "close but not exact"),
    # review 07f, G6: at alpha <= 2 the lower end is the clip at 0, not the inequality
    "a strict lower end": (lambda a: (max(0.0, 0.5 - 1 / a) + 1e-3, 0.5), "the lower end is 0"),
    "a number": (lambda a: 0.5, "return the pair"),
    "symmetric around 1/2": (lambda a: (max(0.0, 0.5 - 1 / a), min(1.0, 0.5 + 1 / a)), "not symmetric"),
    "upper end 1": (lambda a: (max(0.0, 0.5 - 1 / a), 1.0), "exceeds 1 and w grows"),
    "upper end from a grid": (lambda a: (max(0.0, 0.5 - 1 / a), 0.49), "the upper end is close"),
    "upper end 0.4": (lambda a: (max(0.0, 0.5 - 1 / a), 0.4), "must not exceed 1"),
    "both ends wrong": (lambda a: (0.0, 1.0), "the lower end"),
}


def test_stable_gamma_range_accepts_a_numpy_pair(capsys):
    accepted("stable_gamma_range", lambda a: np.array([max(0.0, 0.5 - 1 / a), 0.5]), capsys)


@pytest.mark.parametrize("wrong", STABLE_WRONG, ids=list(STABLE_WRONG))
def test_stable_gamma_range_rejects(wrong, capsys):
    _check_all("stable_gamma_range", STABLE_WRONG, wrong, capsys)


@pytest.mark.parametrize("wrong", ["symmetric around 1/2", "upper end 1", "upper end from a grid",
                                   "upper end 0.4"])
def test_stable_gamma_range_blames_only_the_upper_end(wrong, capsys):
    """A right lower end with a wrong upper end: the diagnosis names the upper end only (review
    07d, F13: it used to blame the lower end)."""
    out = rejected("stable_gamma_range", STABLE_WRONG[wrong][0], capsys)
    assert "the upper end" in out and "lower end" not in out


def test_stable_gamma_range_names_both_ends_when_both_are_wrong(capsys):
    out = rejected("stable_gamma_range", STABLE_WRONG["both ends wrong"][0], capsys)
    assert "the lower end" in out and "the upper end" in out


@pytest.mark.parametrize("answer,diagnosis", [("A", "past it"), ("C", "size of the factor"),
                                              ("D", "features"), ("E", "one of the letters"),
                                              (None, "[todo]")])
def test_triad_overshoot_why_rejects(answer, diagnosis, capsys):
    out = rejected("triad_overshoot_why", answer, capsys)
    assert diagnosis in out


def test_triad_overshoot_why_accepts_b(capsys):
    accepted("triad_overshoot_why", " b", capsys)


# ================================================================ lesson 08: REINFORCE

def _pi(logits, axis=1):
    z = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def _onehot(logits, actions):
    return np.eye(logits.shape[1])[actions]


SCORE_WRONG = {
    "overflows": (lambda z, a: _onehot(z, a) - np.exp(z) / np.exp(z).sum(axis=1, keepdims=True), "NaN"),
    "sign": (lambda z, a: _pi(z) - _onehot(z, a), "sign is flipped"),
    "e_a alone": (lambda z, a: _onehot(z, a), "e_a alone"),
    "1/A": (lambda z, a: _onehot(z, a) - 1.0 / z.shape[1], "subtracted 1/A"),
    "-pi alone": (lambda z, a: -_pi(z), "one-hot e_a of the taken action is missing"),
    "softmax over the batch": (lambda z, a: _onehot(z, a) - _pi(z, axis=0), "not over the batch"),
    "log pi": (lambda z, a: np.log(np.maximum(_pi(z), 1e-300)), "that is log pi"),
}


@pytest.mark.parametrize("wrong", SCORE_WRONG, ids=list(SCORE_WRONG))
def test_softmax_score_rejects(wrong, capsys):
    _check_all("softmax_score", SCORE_WRONG, wrong, capsys)


def _rtg(rewards, gamma):
    out, g = np.zeros(len(rewards)), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


RTG_WRONG = {
    "whole return": (lambda r, g: np.full(len(r), _rtg(r, g)[0]), "whole episode's return"),
    "the past": (lambda r, g: np.array([sum(g**k * x for k, x in enumerate(r[:t + 1][::-1]))
                                        for t in range(len(r))]), "up to t (the past)"),
    "discounted from the start": (lambda r, g: g ** np.arange(len(r)) * _rtg(r, g), "restarts at t"),
    "no gamma": (lambda r, g: np.cumsum(r[::-1])[::-1], "gamma is missing"),
    "excludes r_t": (lambda r, g: _rtg(r, g) - r, "includes r_t"),
}


@pytest.mark.parametrize("wrong", RTG_WRONG, ids=list(RTG_WRONG))
def test_reward_to_go_rejects(wrong, capsys):
    _check_all("reward_to_go", RTG_WRONG, wrong, capsys)


def _grads(obs, actions, weights, mask, W, use_mask=True, sign=1.0, average=False):
    logits = obs @ W["w"] + W["b"]
    score = sign * (np.eye(logits.shape[-1])[actions] - _pi(logits, axis=-1))
    psi = np.where(mask, weights, 0.0) if use_mask else weights
    weighted = score * psi[..., None]
    w = np.einsum("tnd,tna->nda", obs, weighted)
    b = weighted.sum(axis=0)
    if average:
        lengths = mask.sum(axis=0)
        w, b = w / lengths[:, None, None], b / lengths[:, None]
    return {"w": w, "b": b}


GRADIENTS_WRONG = {
    "forgot the mask": (lambda *a: _grads(*a, use_mask=False), "padding steps"),
    "sign": (lambda *a: _grads(*a, sign=-1.0), "sign is flipped"),
    "averaged over steps": (lambda *a: _grads(*a, average=True), "averaged over each episode"),
    "transposed": (lambda *a: {"w": _grads(*a)["w"].transpose(0, 2, 1), "b": _grads(*a)["b"]},
                   "not its transpose"),
    "mean over episodes": (lambda *a: {"w": _grads(*a)["w"].mean(0), "b": _grads(*a)["b"].mean(0)},
                           "one estimate per episode"),
    "no bias gradient": (lambda *a: {"w": _grads(*a)["w"], "b": np.zeros_like(_grads(*a)["b"])},
                         "w is right"),
    "only w": (lambda *a: {"w": _grads(*a)["w"]}, "return a dict like W"),
}


@pytest.mark.parametrize("wrong", GRADIENTS_WRONG, ids=list(GRADIENTS_WRONG))
def test_episode_gradients_rejects(wrong, capsys):
    _check_all("episode_gradients", GRADIENTS_WRONG, wrong, capsys)


def test_episode_gradients_match_the_reference_estimator(capsys):
    import rlcourse as rc

    rng = np.random.default_rng(0)
    T, N = 4, 3
    mask = np.arange(T)[:, None] < np.array([4, 2, 3])[None, :]
    obs, actions = rng.normal(size=(T, N, 4)), rng.integers(0, 2, (T, N))
    weights = np.where(mask, rng.normal(size=(T, N)), 0.0)
    W = rc.linear_init(4, 2, seed=1, dtype=np.float64)
    ours = exercises.get("episode_gradients").reference(obs, actions, weights, mask, W)
    theirs = rc.policy_gradient_estimate(rc.linear, W, obs, actions, weights, mask, per_episode=True)
    flat = np.concatenate([ours[k].reshape(N, -1) for k in W], axis=1)  # W's own key order
    np.testing.assert_allclose(flat, theirs, rtol=1e-10, atol=1e-12)


def _loo(returns, mask, self_in=False, over_all=False, baseline_only=False, pad=0.0):
    g = np.where(mask, returns, 0.0)
    if self_in:
        b = g.sum(axis=1, keepdims=True) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    elif over_all:
        b = (g.sum(axis=1, keepdims=True) - g) / (g.shape[1] - 1)
    else:
        others = mask.sum(axis=1, keepdims=True) - mask
        b = np.divide(g.sum(axis=1, keepdims=True) - g, others, out=np.zeros_like(g),
                      where=others > 0)
    out = b if baseline_only else g - b
    return np.where(mask, out, pad)


LOO_WRONG = {
    "padding not 0": (lambda r, m: _loo(r, m, pad=1.0), "give them weight 0"),
    "includes itself": (lambda r, m: _loo(r, m, self_in=True), "own G_t"),
    "finished episodes too": (lambda r, m: _loo(r, m, over_all=True), "finished episodes too"),
    "returns the baseline": (lambda r, m: _loo(r, m, baseline_only=True), "that is the baseline"),
}


@pytest.mark.parametrize("wrong", LOO_WRONG, ids=list(LOO_WRONG))
def test_leave_one_out_weights_rejects(wrong, capsys):
    _check_all("leave_one_out_weights", LOO_WRONG, wrong, capsys)


def test_leave_one_out_weights_equal_the_reference_trainers(capsys):
    import rlcourse as rc

    rng = np.random.default_rng(2)
    mask = np.arange(5)[:, None] < np.array([5, 3, 1, 4])[None, :]
    rewards = np.where(mask, rng.normal(size=(5, 4)), 0.0)
    g = rc.reinforce_weights(rewards, mask, 0.9, baseline=False)
    ours = exercises.get("leave_one_out_weights").reference(g, mask)
    np.testing.assert_allclose(ours, rc.reinforce_weights(rewards, mask, 0.9), atol=1e-12)


BEST_BASELINE_WRONG = {
    "mean return": (lambda s, g: float(np.mean(g)), "usual choice, not the best"),
    "divided by N": (lambda s, g: float(np.mean(s * g)), "divide by the sum of the weights"),
    "not squared": (lambda s, g: float((np.sqrt(s) * g).sum() / np.sqrt(s).sum()), "squared norms"),
    "an array": (lambda s, g: s * g / s.sum(), "return one number"),
    # the covariance form with np.cov's N - 1 (review 08h, F11)
    "np.cov": (lambda s, g: float(np.mean(g) + np.cov(s, g)[0, 1] / np.mean(s)), "bias=True"),
}


@pytest.mark.parametrize("wrong", BEST_BASELINE_WRONG, ids=list(BEST_BASELINE_WRONG))
def test_best_constant_baseline_rejects(wrong, capsys):
    _check_all("best_constant_baseline", BEST_BASELINE_WRONG, wrong, capsys)


def _corridor(went_right, p, gamma, discount=True, whole=False, sign=1.0, score_flip=False,
              undiscounted_g=False):
    T = len(went_right)
    scores = np.where(went_right, p, p - 1.0) if score_flip else np.where(went_right, 1 - p, -p)
    G = _rtg(-np.ones(T), 1.0 if undiscounted_g else gamma)
    if whole:
        G = np.full(T, G[0])
    disc = gamma ** np.arange(T) if discount else 1.0
    return sign * float(np.sum(disc * scores * G))


CORRIDOR_WRONG = {
    "no gamma^t": (lambda w, p, g: _corridor(w, p, g, discount=False), "biased G_t form"),
    "whole return": (lambda w, p, g: _corridor(w, p, g, discount=False, whole=True), "whole return G_0"),
    "sign": (lambda w, p, g: _corridor(w, p, g, sign=-1.0), "sign is flipped"),
    "score flipped": (lambda w, p, g: _corridor(w, p, g, score_flip=True), "d log p / d theta"),
    "G_t not discounted": (lambda w, p, g: _corridor(w, p, g, undiscounted_g=True), "G_t is discounted too"),
    # review 08h, F14
    "G_t without r_t": (lambda w, p, g: _corridor(w, p, g) - float(np.sum(
        g ** np.arange(len(w)) * np.where(w, 1 - p, -p) * -1.0)), "includes r_t"),
    "mean over steps": (lambda w, p, g: _corridor(w, p, g) / len(w), "not the mean"),
    "gamma^t twice": (lambda w, p, g: float(np.sum(g ** (2 * np.arange(len(w))) * np.where(w, 1 - p, -p)
                                                   * _rtg(-np.ones(len(w)), g))), "gamma^t once"),
}


@pytest.mark.parametrize("wrong", CORRIDOR_WRONG, ids=list(CORRIDOR_WRONG))
def test_corridor_episode_gradient_rejects(wrong, capsys):
    _check_all("corridor_episode_gradient", CORRIDOR_WRONG, wrong, capsys)


def test_corridor_episode_gradient_accepts_a_loop(capsys):
    def loop(went_right, p, gamma):
        total, T = 0.0, len(went_right)
        for t in range(T):
            g = sum(-(gamma ** (k - t)) for k in range(t, T))
            score = (1 - p) if went_right[t] else -p
            total += gamma**t * g * score
        return total
    accepted("corridor_episode_gradient", loop, capsys)


def _exact(theta, gamma, true_visits=True, g_visits=False, factor=True):
    p = 1 / (1 + np.exp(-theta))
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 2] = P[1, 1, 0] = P[2, 0, 1] = 1.0
    P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
    V = np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))
    Q = -1 + gamma * P @ V
    inner = (p * (1 - p) if factor else 1.0) * (Q[:, 1] - Q[:, 0])
    disc = np.linalg.solve((np.eye(3) - gamma * P_pi).T, np.eye(3)[0])
    plain = np.linalg.solve((np.eye(3) - P_pi).T, np.eye(3)[0])
    return float((disc if true_visits else plain) @ inner), float((plain if not g_visits else disc) @ inner)


EXACT_WRONG = {
    "swapped": (lambda th, g: _exact(th, g)[::-1], "the two are swapped"),
    "plain visits for both": (lambda th, g: _exact(th, g, true_visits=False), "both use the plain"),
    "discounted for both": (lambda th, g: _exact(th, g, g_visits=True), "both use the discounted"),
    "no p(1-p)": (lambda th, g: _exact(th, g, factor=False), "missing the factor p (1 - p)"),
    "one number": (lambda th, g: _exact(th, g)[0], "return the pair"),
}


@pytest.mark.parametrize("wrong", EXACT_WRONG, ids=list(EXACT_WRONG))
def test_corridor_exact_gradients_rejects(wrong, capsys):
    _check_all("corridor_exact_gradients", EXACT_WRONG, wrong, capsys)


def test_corridor_exact_gradient_is_the_finite_difference_of_the_value():
    ref = exercises.get("corridor_exact_gradients").reference
    for theta, gamma in ((0.0, 0.9), (-1.0, 0.8), (0.7, 0.99)):
        def J(th, gamma=gamma):
            p = 1 / (1 + np.exp(-th))
            P = np.zeros((3, 2, 3))
            P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 2] = P[1, 1, 0] = P[2, 0, 1] = 1.0
            P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
            return np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))[0]
        fd = (J(theta + 1e-6) - J(theta - 1e-6)) / 2e-6
        true, biased = ref(theta, gamma)
        assert np.isclose(true, fd, rtol=1e-5) and not np.isclose(biased, fd, rtol=0.05)


@pytest.mark.parametrize("answer,diagnosis", [("A", "biases"), ("C", "counts it once"),
                                              ("D", "not the reason"), ("Z", "one of the letters")])
def test_leave_one_out_why_rejects(answer, diagnosis, capsys):
    out = rejected("leave_one_out_why", answer, capsys)
    assert diagnosis in out


def _corridor_episodes(p, n, rng):
    """Lesson 08's corridor_episodes: n episodes as columns, went_right [T, n], mask [T, n]."""
    cell, running = np.zeros(n, dtype=int), np.ones(n, dtype=bool)
    rights, masks = [], []
    while running.any() and len(rights) < 1_000:
        right = rng.random(n) < p
        move = np.where(right, 1, -1) * np.where(cell == 1, -1, 1)
        cell = np.where(running, np.maximum(cell + move, 0), cell)
        rights.append(right)
        masks.append(running.copy())
        running &= cell < 3
    return np.array(rights), np.array(masks)


def _ascent(sign=1.0, lr=0.4, discount=None, weight="gamma^t", steps=40, episodes=300,
            thetas=False, mask=True, own_episodes=False):
    """A corridor_ascent(gamma, sample) answer (p after each step): the right one, or with one
    planted mistake."""
    def one_episode(went_right, p, gamma):
        T = len(went_right)
        to_go = -(1 - gamma ** np.arange(T, 0, -1)) / (1 - gamma) if gamma < 1 else \
            -np.arange(T, 0, -1, dtype=float)
        w = {"gamma^t": gamma ** np.arange(T), "none": np.ones(T),
             "twice": gamma ** (2 * np.arange(T)), "mean": gamma ** np.arange(T) / T}[weight]
        return float(np.sum(w * np.where(went_right, 1 - p, -p) * to_go))

    def corridor_ascent(gamma, sample):
        gamma = gamma if discount is None else discount
        rng = np.random.default_rng(0)
        theta, run = 0.0, []
        for _ in range(steps):
            p = 1 / (1 + np.exp(-theta))
            right, m = _corridor_episodes(p, episodes, rng) if own_episodes else sample(p, episodes)
            theta += sign * lr * np.mean([one_episode(right[m[:, i], i] if mask else right[:, i], p, gamma)
                                          for i in range(episodes)])
            run.append(theta if thetas else 1 / (1 + np.exp(-theta)))
        return np.array(run)

    return corridor_ascent


_MADE_UP = np.r_[np.linspace(0.5, 0.597, 20), np.full(20, 0.597)]


def _made_up_after_sampling(gamma, sample):
    """Draws the batches, then returns numbers of its own (review 08h, F1)."""
    for _ in range(40):
        sample(0.5, 300)
    return np.full(40, 0.597) + 1e-6 * np.arange(40)


@pytest.mark.parametrize("answer,diagnosis", [
    (0.597, "which the check runs, not a value"),                   # copied from the printout
    (lambda gamma, sample: _MADE_UP, "draw one batch"),             # a made-up run (0708g, H1)
    (lambda gamma, sample: np.full(40, 0.5), "draw one batch"),
    (_made_up_after_sampling, "not numbers of your own"),           # (08h, F1)
    (_ascent(own_episodes=True), "draw one batch"),                 # episodes of its own
    (_ascent(thetas=True), "look like theta"),                      # theta returned, not p (H2)
    (_ascent(sign=-1.0), "went downhill"),                          # theta -= lr * gradient
    (_ascent(lr=40.0), "too large"),                                # a step size that runs p to 1
    (_ascent(lr=4.0), "too large"),                                 # past the optimum
    (_ascent(lr=0.002), "stops short"),                             # p barely leaves 0.5
    (_ascent(lr=0.02), "stops short"),                              # still climbing (08h, F2)
    (_ascent(weight="mean"), "mean over an episode's steps"),       # (08h, F2)
    (_ascent(weight="twice"), "gamma^t twice"),                     # (08h, F2)
    (_ascent(weight="none"), "biased G_t"),                         # (08h, F3)
    (_ascent(discount=1.0, lr=0.1), "gamma = 1"),                   # (08h, F3)
    (_ascent(mask=False), "after an episode's end"),                # the forgotten mask (08h, F4)
    (_ascent(episodes=3), "wanders"),                               # too few episodes per step
    (lambda gamma, sample: np.full(40, np.nan), "diverged"),        # (H4)
    (lambda gamma, sample: np.full((40, 1), 0.6), "1-D"),
    (lambda gamma, sample: np.full(5, 0.6), "at least 10"),
])
def test_corridor_learned_p_rejects(answer, diagnosis, capsys):
    out = rejected("corridor_learned_p", answer, capsys)
    assert diagnosis in out


@pytest.mark.parametrize("answer", [_ascent(), _ascent(lr=0.2, steps=60), _ascent(episodes=500)])
def test_corridor_learned_p_accepts_an_ascent_on_the_checkers_streams(answer, capsys):
    accepted("corridor_learned_p", answer, capsys)


def test_corridor_learned_p_tolerance_covers_a_correct_ascent_on_other_streams():
    """LEARNED_P_TOLERANCE comes from the spread of a correct ascent (the lesson's settings) over
    streams the check does not use; REACH from the exact-gradient ascent."""
    from rlcourse.course.bank import deep_value as dv

    best = dv._corridor_best_p(0.9)
    worst = 0.0
    for seed in range(16):
        sample = dv._RecordingSampler(seed)
        run = dv._learned_p_reference(0.9, sample)
        assert dv._ascent_trouble(run, sample.batches, 0.9) == pytest.approx(0.4)
        worst = max(worst, abs(run[-10:].mean() - best))
    print(f"largest distance of a correct ascent's last quarter from the best p: {worst:.3f}")
    assert worst < dv.LEARNED_P_TOLERANCE
    reached = {lr: abs(dv._exact_ascent_p(lr, 40, 0.9) - best) for lr in (0.4, 0.02)}
    assert reached[0.4] < dv.REACH < reached[0.02]


# ------------------------------------------------ review F11 / F19: answers that used to pass

def _exact_gradients(theta, gamma):
    """Lesson 08's corridor_exact_gradients (the check flags an answer that calls the grader)."""
    p = 1 / (1 + np.exp(-theta))
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = P[1, 0, 2] = P[1, 1, 0] = P[2, 0, 1] = 1.0
    P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
    V = np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))
    Q = -1.0 + gamma * P @ V
    inner = p * (1 - p) * (Q[:, 1] - Q[:, 0])
    start = np.eye(3)[0]
    discounted = np.linalg.solve((np.eye(3) - gamma * P_pi).T, start)
    visits = np.linalg.solve((np.eye(3) - P_pi).T, start)
    return float(discounted @ inner), float(visits @ inner)


def _bisect_zero(direction, gamma):
    lo, hi = -4.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if direction(_exact_gradients(mid, gamma)) > 0 else (lo, mid)
    return 1 / (1 + np.exp(-lo))


def _zero_of(which, gamma):
    return _bisect_zero(lambda g: g[which], gamma)


@pytest.mark.parametrize("answer,diagnosis", [
    # biased ascent: both "zeros" taken from the G_t direction (the review's F11)
    (lambda which, gamma: _zero_of(1, gamma), "biased ascent leads"),
    (lambda which, gamma: _zero_of(which, 1.0), "gamma = 1"),     # the gamma = 1 optimum
    (lambda which, gamma: _zero_of(1 - which, gamma), "swapped"),
    (lambda which, gamma: 0.5, "never moved"),
    (lambda which, gamma: float(np.log(_zero_of(which, gamma) / (1 - _zero_of(which, gamma)))),
     "look like theta"),                                           # (08h, F5)
    (lambda which, gamma: _zero_of(0, gamma) if which == 0 else _zero_of(1, 1.0), "G_t direction's is not"),
    ((0.631, 0.697), "not both right"),         # the printed pair typed in: right at 0.5 only (08h, F5)
])
def test_corridor_fixed_points_rejects(answer, diagnosis, capsys):
    out = rejected("corridor_fixed_points", answer, capsys)
    assert diagnosis in out
    assert "0.631" not in out.replace("(0.631, 0.697)", "") and "expected (" not in out


def test_corridor_fixed_points_accepts_the_bisection_and_separates_the_two(capsys):
    assert abs(_zero_of(0, 0.5) - 0.631) < 1e-3 and abs(_zero_of(1, 0.5) - 0.697) < 1e-3
    accepted("corridor_fixed_points", _zero_of, capsys)


def test_polyak_lag_diagnosis_of_one_over_tau_is_not_given_to_a_coincidence(capsys):
    """(1 - tau) / tau^2 equals 1/tau at tau = 1/2 only: it must not be told it counted the
    newest weights as 1 step old."""
    assert not exercises.check("polyak_mean_lag", lambda tau: (1 - tau) / tau**2)
    assert "newest online weights" not in capsys.readouterr().out


def test_triad_choice_c_is_rebutted_by_the_factor(capsys):
    assert not exercises.check("triad_overshoot_why", lambda: "C")
    assert "factor" in capsys.readouterr().out


def test_lesson_07_benchmark_scores_are_the_comment_above_dqn_cartpole():
    """The per-seed scores lesson 07 quotes (BENCHMARK_FINAL) are the ones recorded in the
    comment above DQN_CARTPOLE: one place of record, checked."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    lesson = (root / "lessons" / "src" / "07_dqn.py").read_text()
    quoted = re.search(r"BENCHMARK_FINAL = \[([^\]]*)\]", lesson).group(1)
    scores = " ".join(x.strip() for x in quoted.split(","))
    comment = " ".join((root / "rlcourse" / "algos" / "dqn.py").read_text().replace("#", " ").split())
    assert f"({scores})" in comment


@pytest.mark.parametrize("answer,diagnosis", [(63.5, "hard copy's"), (128, "N - 1, not N"),
                                              (127 * 128, "tau^2"), (1 / 128, "tau itself"),
                                              ("127", None), (None, None)])
def test_polyak_lag_one_over_n_rejects(answer, diagnosis, capsys):
    """Review 07f, G7: the question after the Polyak exercises is answered and checked."""
    assert not exercises.check("polyak_lag_one_over_n", answer)
    if diagnosis:
        assert diagnosis in capsys.readouterr().out


def test_polyak_lag_one_over_n_accepts_the_lag(capsys):
    accepted("polyak_lag_one_over_n", 127.0, capsys)
