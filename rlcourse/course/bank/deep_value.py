"""Exercises of lessons 07-08.

Lesson 07 (DQN). Build it: ``dqn_targets``, ``huber``, ``ring_write`` (the replay buffer's
index arithmetic), ``action_gap`` and ``relative_change`` (the diagnostics). Exercises:
``polyak_mean_lag`` and ``tau_for_period`` (Polyak targets against a hard copy),
``stable_gamma_range`` and ``triad_overshoot_why`` (the deadly triad's two ways to diverge) and
``n_step_dqn_targets`` (with terminations and time limits inside the windows).

Lesson 08 (REINFORCE). Build it: ``softmax_score``, ``reward_to_go``, ``episode_gradients``
(a linear-softmax policy's per-episode estimate) and ``leave_one_out_weights``. Exercises:
``best_constant_baseline``, ``corridor_episode_gradient`` (with ``gamma^t``),
``corridor_exact_gradients`` (the discounted and undiscounted occupancies) and
``leave_one_out_why``.

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms. ``tests/test_exercises_lessons_07_08.py``
submits each of those wrong answers.
"""

import numpy as np

from ...algos.dqn import dqn_targets
from ...algos.dqn_diagnostics import action_gap, relative_change
from ...algos.reinforce import softmax_score
from ..registry import Case, default_compare, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _same(got, candidate) -> bool:
    """True if ``got`` has ``candidate``'s shape and values (a wrong answer we recognise)."""
    try:
        got = np.asarray(got, dtype=float)
        candidate = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return got.shape == candidate.shape and bool(np.allclose(got, candidate, equal_nan=False))


def _choice(choices: dict):
    """A compare for a multiple-choice answer given as one letter of ``choices``."""
    def compare(got, expected):
        if got is None:
            return "not answered yet: set the answer to one letter"
        choice = str(got).strip().upper()
        if choice not in choices:
            return f"answer with one of the letters {', '.join(choices)}, got {got!r}"
        return None if choice == expected else "not this one"
    return compare


# ================================================================== lesson 07, Build it

# ------------------------------------------------------------------ step 1: dqn_targets


def _dqn_case(seed, double, gamma=0.9):
    """Six transitions, 3 actions, terminals at 2 and 5; the online and the target net disagree
    on the best next action in every row, so each mix-up of the two nets gives other numbers.
    The target's value at the online net's best action is the row's smallest in odd rows and
    lies strictly between the other two in even rows (review 07i, F1: with it always the
    smallest, "Double DQN = the target net's min" passed)."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=6)
    terminated = np.array([False, False, True, False, False, True])
    online = rng.normal(size=(6, 3))
    target = rng.normal(size=(6, 3))
    for i in range(6):
        a = int(np.argmax(online[i]))
        others = np.delete(target[i], a)
        if abs(others[0] - others[1]) < 0.2:  # room for a value strictly between them
            others[1] = others[0] + 1.0
            target[i, [b for b in range(3) if b != a]] = others
        target[i, a] = others.min() - 0.5 if i % 2 else others.mean()
    return (rewards, terminated, online, target, gamma, double)


def _dqn_targets_cases():
    return [
        Case("Double DQN, terminals at indices 2 and 5", _dqn_case(0, True)),
        Case("plain DQN (double=False), terminals at indices 2 and 5", _dqn_case(1, False)),
        Case("Double DQN, gamma 0.5", _dqn_case(3, True, 0.5)),
        Case("gamma = 0: the target is the reward", _dqn_case(2, True, 0.0)),
    ]


def _dqn_targets_explain(case, got, expected):
    rewards, terminated, online, target, gamma, double = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return (f"one target per transition, shape {expected.shape}: take the max / argmax over "
                "the actions (axis 1), not over the batch")
    rows = np.arange(len(rewards))
    boot = {
        "max_target": target.max(axis=1),
        "max_online": online.max(axis=1),
        "double": target[rows, np.argmax(online, axis=1)],
        "swapped": online[rows, np.argmax(target, axis=1)],
        "min_target": target.min(axis=1),
        "clipped": np.minimum(online, target)[rows, np.argmax(online, axis=1)],
    }
    live = ~terminated
    # which bootstrap the non-terminal rows used
    used = next((k for k, v in boot.items()
                 if np.allclose(got[live], rewards[live] + gamma * v[live])), None)
    mask = 1.0 - terminated
    if gamma != 0 and any(np.allclose(got, gamma * (rewards + mask * v)) for v in boot.values()):
        return ("gamma multiplies the reward too: the reward r arrives now, undiscounted; only "
                "the bootstrap is discounted, r + gamma * (1 - terminated) * value(s')")
    if gamma == 0 and np.allclose(got, 0.0) and not np.allclose(expected, 0.0):
        return ("with gamma = 0 the target is the reward r alone; yours is 0: gamma multiplies "
                "only the bootstrap, not r")
    shifted = [np.roll(terminated, 1), np.roll(terminated, -1)]
    if any(np.allclose(got, rewards + gamma * (1.0 - m) * v) for m in shifted for v in boot.values()):
        return ("the terminal mask is off by one row: terminated[i] says whether transition i's "
                "own next state s'_i ended the episode, so it masks row i's bootstrap")
    wrong = ~np.isclose(got, expected)
    if used is not None and wrong[terminated].any():
        if np.allclose(got[terminated], rewards[terminated] + gamma * boot[used][terminated]):
            k = int(np.flatnonzero(terminated)[0])
            return (f"you bootstrapped from a terminal next state (index {k}): multiply the "
                    "bootstrap by (1 - terminated), so a terminal target is the reward alone")
        if np.allclose(got[terminated], 0.0):
            return ("a terminal transition still earned its reward: (1 - terminated) multiplies "
                    "only the bootstrap, not r")
    if used == "max_target" and double:
        return ("you took max_a Q_target(s', a): Double DQN picks a* = argmax Q_online(s') and "
                "evaluates Q_target(s', a*)")
    if used == "max_online":
        if not double:
            return ("you bootstrapped from the online net's own max: plain DQN (double=False) "
                    "takes the target net's max, max_a Q_target(s', a)")
        return ("you bootstrapped from the online net's own max: the value must come from the "
                "target net (Double DQN: the online net only *selects* a*)")
    if used == "clipped":
        return ("you took min(Q_online(s', a*), Q_target(s', a*)): that is clipped double Q "
                "(TD3's); Double DQN takes the target net's value at a*, Q_target(s', a*)")
    if used == "min_target":
        return ("you took the target net's smallest value, min_a Q_target(s', a): Double DQN "
                "evaluates the online net's best action a* = argmax Q_online(s'), whatever rank "
                "Q_target(s', a*) has among the target's values")
    if used == "swapped":
        return ("the roles are swapped: select the action with the online net, evaluate it with "
                "the target net")
    if used == "double" and not double:
        return ("with double=False the target is r + gamma * max_a Q_target(s', a): no online "
                "selection")
    return None


register(
    "dqn_targets", dqn_targets, _dqn_targets_cases, explain=_dqn_targets_explain,
    hint="the target net gives the value of s'; Double DQN lets the online net choose which "
         "action's value to take; a terminal next state has no future",
)


# ------------------------------------------------------------------ step 2: huber


def _huber_reference(x, delta=1.0):
    x = np.asarray(x, dtype=float)
    return np.where(np.abs(x) <= delta, 0.5 * x**2, delta * (np.abs(x) - 0.5 * delta))


def _huber_cases():
    x = np.linspace(-3.0, 3.0, 13)
    return [
        Case("x from -3 to 3, delta 1", (x, 1.0)),
        Case("x from -3 to 3, delta 2", (x, 2.0)),
        Case("TD errors from -60 to 60, delta 0.5", (np.array([-60.0, -0.3, 0.0, 0.4, 2.0, 60.0]), 0.5)),
    ]


def _huber_explain(case, got, expected):
    x, delta = case.args
    ax = np.abs(x)
    small = ax <= delta
    if _same(got, np.where(small, x**2, delta * (ax - 0.5 * delta))) or \
            _same(got, np.where(small, x**2, 2 * delta * (ax - 0.5 * delta))):
        return "the quadratic part is x**2 / 2, not x**2 (its slope at delta must be delta)"
    if _same(got, np.where(small, 0.5 * x**2, delta * ax)):
        return ("the linear part is delta * (|x| - delta / 2): without the - delta / 2 the two "
                "parts do not meet at |x| = delta")
    if delta != 1 and _same(got, np.where(small, 0.5 * x**2, delta * ax - 0.5 * delta)):
        return ("the linear part's constant is delta**2 / 2: delta * (|x| - delta / 2) = "
                "delta * |x| - delta**2 / 2, not delta * |x| - delta / 2")
    if delta != 1 and _same(got, np.where(ax <= 1.0, 0.5 * x**2, delta * (ax - 0.5 * delta))):
        return ("the two pieces switch at |x| = delta, not at |x| = 1: test np.abs(x) <= delta "
                "(the cases use other deltas than 1)")
    if _same(got, np.where(small, 0.5 * x**2, ax - 0.5 * delta)) or \
            _same(got, np.where(small, 0.5 * x**2, ax - 0.5)):
        return "the linear part is multiplied by delta: delta * (|x| - delta / 2)"
    if _same(got, np.where(small, 0.5 * x**2 / delta, ax - 0.5 * delta)):
        return ("that is PyTorch's smooth L1 with beta = delta (the Huber loss divided by delta): "
                "here the loss is 0.5 x**2 inside and delta * (|x| - delta / 2) outside")
    if _same(got, np.where(x <= delta, 0.5 * x**2, delta * (ax - 0.5 * delta))):
        return "test |x| <= delta, not x <= delta: large negative errors must be linear too"
    return None


register(
    "huber", _huber_reference, _huber_cases, explain=_huber_explain,
    hint="two pieces that meet with the same value and slope at |x| = delta",
)


# ------------------------------------------------------------------ step 3: ring_write


def _ring_reference(pos, size, k, capacity):
    rows = (pos + np.arange(k)) % capacity
    return rows, (pos + k) % capacity, min(size + k, capacity)


def _ring_cases():
    return [
        Case("empty buffer of 8, write 3", (0, 0, 3, 8)),
        Case("pos 6 of 8, write 4: wraps around", (6, 6, 4, 8)),
        Case("pos 5 of 8, write 3: fills exactly to the end", (5, 5, 3, 8)),
        Case("full buffer of 8 at pos 3, write 2: overwrites the oldest", (3, 8, 2, 8)),
        Case("full buffer of 5 at pos 4, write 5", (4, 5, 5, 5)),
    ]


def _ring_explain(case, got, expected):
    pos, size, k, capacity = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "return the triple (rows, next_pos, next_size)"
    rows, next_pos, next_size = got
    rows = np.asarray(rows)
    e_rows, e_pos, e_size = expected
    if rows.shape == e_rows.shape and (rows >= capacity).any():
        return f"rows past the end of the buffer (>= {capacity}): wrap them with % capacity"
    if rows.shape == e_rows.shape and np.array_equal(rows, e_rows):
        if next_pos == pos + k and pos + k >= capacity:
            return (f"next_pos {next_pos} is past the last row: the position wraps too, "
                    f"(pos + k) % capacity")
        if next_pos == (pos + k - 1) % capacity:
            return "off by one: the next write goes to the row *after* the last one written"
        if next_pos == e_pos and next_size == size + k and size + k > capacity:
            return f"the size never exceeds the capacity {capacity}: min(size + k, capacity)"
        if next_pos == e_pos and next_size == e_pos:
            return "the size is how many rows hold data, not the write position: min(size + k, capacity)"
    if rows.shape == e_rows.shape and pos + k > capacity and np.array_equal(rows, np.arange(k)):
        return ("you started over at row 0 when the rows did not fit: continue at pos and wrap, "
                "so the oldest rows are overwritten first")
    return None


register(
    "ring_write", _ring_reference, _ring_cases, explain=_ring_explain,
    hint="a ring: the row after the last one is row 0, for the rows and for the next position",
)


# ------------------------------------------------------------------ step 4: action_gap


def _gap_cases():
    rng = np.random.default_rng(7)
    return [
        Case("2 actions", (np.array([[1.0, 3.0], [5.0, 4.5], [-2.0, -2.25]]),)),
        Case("4 actions, Q-values near 90", (90 + rng.normal(size=(6, 4)),)),
        Case("ties: two best actions have gap 0", (np.array([[2.0, 2.0, 1.0], [0.5, 3.0, 3.0],
                                                              [1.0, 2.0, 3.0]]),)),
    ]


def _gap_explain(case, got, expected):
    (q,) = case.args
    if _same(got, q.max(axis=1) - q.min(axis=1)):
        return ("max - min is the spread of all the actions; the gap is the best minus the "
                "*second* best (the same only for two actions)")
    if _same(got, q[:, 0] - q[:, 1]) or _same(got, q[:, 1] - q[:, 0]):
        return "the gap is >= 0: the best minus the second best, whichever actions those are"
    if _same(got, np.abs(q[:, 0] - q[:, 1])):
        return "you compared the first two actions only; take the best and the second best"
    if _same(got, q.max(axis=1) - q.mean(axis=1)):
        return "max - mean is not the gap: subtract the second-best value"
    if _same(got, q.max(axis=1)):
        return "that is max_a Q, the state's value; the gap is max_a Q minus the second best"
    ordered = np.sort(q, axis=0)
    if _same(got, ordered[-1] - ordered[-2]):
        return "you sorted over the states (axis 0); sort each state's actions (axis 1)"
    distinct = np.array([np.unique(row)[-1] - (np.unique(row)[-2] if len(np.unique(row)) > 1 else 0)
                         for row in q])
    if _same(got, distinct):
        return ("with tied best actions the gap is 0: the second best can equal the best (do "
                "not skip repeated values)")
    return None


register(
    "action_gap", action_gap, _gap_cases, explain=_gap_explain,
    hint="sort each state's action values; the gap is the top one minus the next one",
)


# ------------------------------------------------------------------ step 5: relative_change


def _change_cases():
    before = np.array([[80.0, 80.3], [90.0, 89.0], [50.0, 50.2]])
    shifted = before + np.array([[5.0], [-3.0], [0.1]])
    flipped = np.array([[80.0, 80.3], [90.0, 89.0]]), np.array([[80.4, 80.1], [90.5, 89.0]])
    rng = np.random.default_rng(3)
    three = 60 + rng.normal(size=(5, 3))
    # action 0's move lies between the others' in every row, so a move measured relative to one
    # action (rather than the spread over all of them) comes out smaller than the spread
    middle = np.array([[70.0, 70.5, 71.0], [40.0, 39.0, 41.0], [55.0, 55.0, 55.0]])
    return [
        Case("every action of a state moved alike: no change in the differences", (before, shifted)),
        Case("greedy actions flip", flipped),
        Case("3 actions", (three, three + rng.normal(scale=0.5, size=(5, 3)))),
        Case("3 actions, action 0 moved less than one and more than the other",
             (middle, middle + np.array([[0.0, 1.0, -1.0], [0.2, -0.3, 0.5], [-0.1, 0.4, -0.6]]))),
    ]


def _change_explain(case, got, expected):
    before, after = case.args
    d = after - before
    if _same(got, np.abs(after.max(axis=1) - before.max(axis=1))):
        return ("that is how far the state's value max_a Q moved; moving every action alike "
                "changes no decision: measure how much the *differences* between actions moved")
    if _same(got, np.abs(d).max(axis=1)) or _same(got, np.abs(d).mean(axis=1)):
        return ("that measures how far single values moved; a shift of all actions alike "
                "changes no decision: take max_a d - min_a d with d = q_after - q_before")
    if _same(got, np.abs(action_gap(after) - action_gap(before))):
        return ("the change of the gap misses flips: when two actions swap order the gap can "
                "stay the same while their difference moved by twice the gap")
    if _same(got, d[:, 1] - d[:, 0]) or (d.shape[1] == 2 and _same(got, d[:, 0] - d[:, 1])):
        return "the change is a size, >= 0: for two actions |change of (Q1 - Q0)|"
    rows = np.arange(len(d))
    anchors = [d[:, [a]] for a in range(d.shape[1])]
    anchors += [d[rows, np.argmax(before, axis=1)][:, None], d[rows, np.argmax(after, axis=1)][:, None]]
    if d.shape[1] > 2 and any(_same(got, np.abs(d - anchor).max(axis=1)) for anchor in anchors):
        return ("you measured how far the actions moved relative to one action; with 3 or more "
                "actions that misses two others moving apart: measure the spread of d over *all* "
                "actions, max - min")
    return None


register(
    "relative_change", relative_change, _change_cases, explain=_change_explain,
    hint="d = q_after - q_before; only differences between actions matter, so how far apart "
         "can d's entries of one state be?",
)


# ================================================================== lesson 07, Exercises

# ------------------------------------------------------------------ easy: Polyak lag


def _polyak_lag_reference(tau):
    return (1.0 - tau) / tau


def _number(got):
    """``got`` as a float, or None if it is not one number."""
    if got is None or isinstance(got, str):
        return None
    try:
        return float(np.asarray(got, dtype=float))
    except (TypeError, ValueError):
        return None


def _polyak_lag_explain(case, got, expected):
    (tau,) = case.args
    got = _number(got)
    if got is None:
        return "return one number: the mean age in steps"
    if tau != 0.5 and np.isclose(got, 1.0 / tau):  # at 0.5, 1/tau is also (1 - tau)/tau^2
        return ("you counted the newest online weights as 1 step old: they enter the target with "
                "age 0 (weight tau), so the mean of k under tau (1 - tau)^k is (1 - tau) / tau")
    if tau < 1 and np.isclose(got, np.log(2) / -np.log1p(-tau)):
        return ("that is the half-life, the age at which the weights have halved; the question "
                "asks for the weighted *mean* age")
    if tau < 1 and np.isclose(got, np.log(2) / tau):
        return ("that is about the half-life (ln 2 / tau); the question asks for the weighted "
                "*mean* age")
    if tau < 1 and np.isclose(got, tau / (1.0 - tau)):
        return "upside down: a small tau keeps old weights longer, so the lag must grow as tau shrinks"
    if 0.5 * expected < got < expected:
        return ("a little short: if you summed k tau (1 - tau)^k, the sum stopped too early (at a "
                "small tau, ages past a thousand steps still carry weight); sum far longer or "
                "find the closed form")
    return None


register(
    "polyak_mean_lag", _polyak_lag_reference,
    [Case("tau 1: a copy every step", (1.0,)), Case("tau 0.5", (0.5,)), Case("tau 0.01", (0.01,)),
     Case("tau 0.005 (SB3's default for SAC and TD3)", (0.005,))],
    explain=_polyak_lag_explain,
    hint="the weights tau (1 - tau)^k over the ages k = 0, 1, 2, ... sum to 1: their mean is the "
         "mean of a geometric distribution",
)


def _tau_for_period_reference(period):
    return 2.0 / (period + 1.0)


def _tau_for_period_explain(case, got, expected):
    (period,) = case.args
    got = _number(got)
    if got is None:
        return "return one number: tau"
    if period > 1 and np.isclose(got, 1.0 / period):
        return ("tau = 1/N gives a mean lag of N - 1, twice the hard copy's: a copy every N steps "
                "lags by 0, 1, ..., N - 1 steps, (N - 1) / 2 on average")
    if period > 1 and np.isclose(got, 2.0 / period):
        return ("a copy every N steps lags by 0, 1, ..., N - 1 steps: the mean is (N - 1) / 2, "
                "not N / 2")
    if period > 1 and np.isclose(got, 2.0 / (period - 1.0)):
        return ("that tau gives a mean lag of (N - 3) / 2: solve (1 - tau) / tau = (N - 1) / 2 "
                "again, (1 - tau) / tau = 1 / tau - 1")
    if period > 1 and np.isclose(got, 1.0 / (period + 1.0)):
        return ("that tau gives a mean lag of N, not the hard copy's (N - 1) / 2; solve "
                "(1 - tau) / tau = (N - 1) / 2")
    if np.isclose(got, (period - 1.0) / 2.0) or np.isclose(got, (period + 1.0) / 2.0):
        return "that is a lag in steps; the answer is tau, a weight between 0 and 1"
    return None


register(
    "tau_for_period", _tau_for_period_reference,
    [Case("N = 1: a copy every step", (1,)), Case("N = 10", (10,)),
     Case("N = 128 (the preset's target period)", (128,)), Case("N = 1000", (1000,))],
    explain=_tau_for_period_explain,
    hint="set the Polyak target's mean lag equal to the hard copy's (N - 1) / 2 and solve for tau",
)


# ------------------------------------------------------------------ hard: n_step_dqn_targets


def _n_step_target(rewards, terminated, truncated, next_q_target, gamma, *, stop="first",
                   truncation="bootstrap", boot_power=lambda k: k + 1, boot_column="end",
                   end_reward=True, reward_power=lambda k: k, terminal_bootstraps=False,
                   sum_past_end=False, last_step_mask=False, truncation_wins=False,
                   no_end_at_step_0=False, reduce="max"):
    """n-step targets, one window at a time; the keyword arguments other than their defaults
    each make one typical mistake (the reference is the defaults).

    A window's sum stops at its first end (``stop``): a termination adds no bootstrap, a
    truncation at step k bootstraps ``gamma^(k+1) max_a next_q_target[b, k]``; a window with no
    end bootstraps ``gamma^n max_a next_q_target[b, n - 1]``."""
    rewards = np.asarray(rewards, dtype=float)
    terminated = np.asarray(terminated, dtype=bool)
    truncated = np.asarray(truncated, dtype=bool)
    values = getattr(np.asarray(next_q_target, dtype=float), reduce)(axis=2)
    n = rewards.shape[1]
    out = np.zeros(len(rewards))
    for b in range(len(rewards)):
        ends = terminated[b] | (truncated[b] if truncation not in ("ignore", "no_stop") else False)
        where = np.flatnonzero(ends)
        k_end = None if stop == "none" or not where.size else int(where[0] if stop == "first" else where[-1])
        last = n - 1 if k_end is None else k_end
        total = 0.0
        for k in range(n if sum_past_end else last + 1):
            if k == k_end and not end_reward:
                break
            total += gamma ** reward_power(k) * rewards[b, k]
        if last_step_mask:  # the bootstrap decided by the window's last step alone
            if not terminated[b, -1]:
                total += gamma ** n * values[b, n - 1]
            out[b] = total
            continue
        if truncation == "no_stop":  # a time limit stops the bootstrap but not the sum
            if not (terminated[b, :last + 1] | truncated[b, :last + 1]).any():
                total += gamma ** n * values[b, n - 1]
            out[b] = total
            continue
        if k_end is None and no_end_at_step_0:  # argmax of a row with no end is 0
            out[b] = total + gamma * values[b, 0]
            continue
        if k_end is None:
            boot = True
        elif terminated[b, k_end] and not (truncation_wins and truncated[b, k_end]):
            boot = terminal_bootstraps
        else:
            boot = truncation == "bootstrap"
        if boot:
            column = last if boot_column == "end" else n - 1
            power = n if k_end is None or boot_power is None else boot_power(last)
            total += gamma ** power * values[b, column]
        out[b] = total
    return out


def _n_step_reference(rewards, terminated, truncated, next_q_target, gamma):
    return _n_step_target(rewards, terminated, truncated, next_q_target, gamma)


def _n_step_cases():
    rng = np.random.default_rng(11)
    rewards = rng.normal(size=(6, 3)) + 1.0
    none = np.zeros((6, 3), bool)
    terminated = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], bool)
    truncated = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0]], bool)
    next_q = rng.normal(size=(6, 3, 2)) + 5.0
    rewards5 = rng.normal(size=(3, 5)) + 1.0
    # two episode ends in one window: after the first, later steps belong to later episodes
    term5 = np.array([[0, 1, 0, 1, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 0]], bool)
    trunc5 = np.array([[0, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 1]], bool)
    next_q5 = rng.normal(size=(3, 5, 3)) + 5.0
    # a step that both terminated and hit the time limit: the termination wins
    both_term = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 0]], bool)
    both_trunc = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], bool)
    return [
        Case("n = 3, episodes terminating inside some windows, no time limit",
             (rewards, terminated, none, next_q, 0.9)),
        Case("n = 3, time limits and terminations inside windows",
             (rewards, terminated, truncated, next_q, 0.9)),
        Case("n = 5, two episode ends in one window", (rewards5, term5, trunc5, next_q5, 0.8)),
        Case("n = 3, steps both terminated and truncated", (rewards[:3], both_term, both_trunc,
                                                            next_q[:3], 0.9)),
        Case("n = 1: one-step targets", (rewards[:, :1], terminated[:, :1], truncated[:, :1],
                                         next_q[:, :1], 0.9)),
        Case("n = 3, gamma 0.5, no episode ends", (rewards, none, none, next_q, 0.5)),
    ]


_N_STEP_MISTAKES = [
    (dict(truncation="terminal"),
     "a time limit is not a termination: the episode was cut, the state after it still has a "
     "future, so a window that hits the limit at step k bootstraps gamma^(k+1) max_a Q(s_{t+k+1}, a)"),
    (dict(truncation="no_stop"),
     "a time limit ends the reward sum too, not only the bootstrap: rewards after it belong to "
     "the next episode"),
    (dict(truncation="ignore"),
     "a time-limit truncation ends the episode too: the sum stops there (later rewards belong to "
     "the next episode) and bootstraps from the state after the truncation"),
    (dict(truncation_wins=True),
     "a step can be both terminated and truncated; then the termination wins: the episode "
     "really ended, so nothing is bootstrapped"),
    (dict(no_end_at_step_0=True),
     "a window with no end bootstraps gamma^n from the state after its last step; argmax of a "
     "row with no True is 0, so ended.argmax(axis=1) alone points such windows at step 0"),
    (dict(reduce="mean"),
     "the bootstrap takes the best action's value, max over the actions, not the mean"),
    (dict(boot_column="last"),
     "after a truncation at step k, bootstrap from next_q_target[:, k] (the state after step k), "
     "not from the window's last column"),
    (dict(boot_power=lambda k: k),
     "a truncation at step k comes after k + 1 rewards: its bootstrap is discounted by "
     "gamma^(k+1), not gamma^k"),
    (dict(boot_power=None),
     "a truncation at step k comes after k + 1 rewards: its bootstrap is discounted by "
     "gamma^(k+1), not gamma^n"),
    (dict(stop="last"),
     "the sum stops at the *first* end in the window; steps after it belong to later episodes, "
     "even if one of those ends too"),
    (dict(stop="none"),
     "the episode's end is ignored: stop the sum at the first terminal or truncated step, and "
     "bootstrap only as that step allows"),
    (dict(sum_past_end=True),
     "rewards after an episode's end belong to the next episode: sum only up to and including "
     "the first end"),
    (dict(terminal_bootstraps=True),
     "a window in which the episode terminated must not bootstrap: there is no next state of "
     "this episode"),
    (dict(last_step_mask=True),
     "an episode that ended at *any* step of the window must not bootstrap from the window's "
     "end, not only one that ended at its last step"),
    (dict(end_reward=False),
     "the reward of the step that ended the episode is missing: it is the episode's last reward "
     "and belongs to the sum"),
    (dict(reward_power=lambda k: 0),
     "each reward r_{t+k} is discounted by gamma^k: the sum is r_t + gamma r_{t+1} + ..."),
    (dict(reward_power=lambda k: k + 1),
     "the first reward r_t is not discounted: weights 1, gamma, gamma^2, ..."),
]


def _n_step_explain(case, got, expected):
    rewards, terminated, truncated, next_q, gamma = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return f"one target per window, shape {expected.shape}: max over the actions (the last axis)"
    for flags, message in _N_STEP_MISTAKES:
        if _same(got, _n_step_target(*case.args, **flags)):
            return message
    n = rewards.shape[1]
    plain = _n_step_target(*case.args, stop="none", truncation="ignore")
    for power in (n - 1, n + 1):
        if not (terminated | truncated).any() and _same(got, plain - gamma**n * next_q[:, -1].max(axis=1)
                                                        + gamma**power * next_q[:, -1].max(axis=1)):
            return (f"a window with no end bootstraps after n rewards: gamma^n, not "
                    f"gamma^{power}")
    return None


register(
    "n_step_dqn_targets", _n_step_reference, _n_step_cases, explain=_n_step_explain,
    hint="walk each window up to its first end; a termination has no future, a time limit at "
         "step k does (from the state after step k, k + 1 rewards later); rewards after the end "
         "belong to the next episode",
)


# ------------------------------------------------------------------ medium: stable_gamma_range


def _lag_one_over_n_explain(case, got, expected):
    got = _number(got)
    if got is None:
        return "one number: the mean lag in steps"
    if np.isclose(got, 63.5):
        return "that is the hard copy's (N - 1) / 2; the question is the Polyak target's lag at tau = 1/N"
    if np.isclose(got, 128.0):
        return "(1 - tau) / tau at tau = 1/N is N - 1, not N: the newest weights are 0 steps old"
    if np.isclose(got, 127 * 128):
        return "(1 - tau) / tau^2 is not the mean lag: the weights' mean age is (1 - tau) / tau"
    if np.isclose(got, 1 / 128):
        return "that is tau itself; the question asks for the lag in steps"
    return None


register(
    "polyak_lag_one_over_n", lambda: 127.0, [Case("tau = 1/N, N = 128")],
    explain=_lag_one_over_n_explain,
    hint="your polyak_mean_lag at tau = 1/128",
)


def _stable_gamma_reference(alpha):
    return (max(0.0, 0.5 - 1.0 / alpha), 0.5)


def _stable_gamma_cases():
    return [
        Case("alpha 0.1 (the lesson's)", (0.1,)),
        Case("alpha 1", (1.0,)),
        Case("alpha 3: steps that overshoot", (3.0,)),
        Case("alpha 4", (4.0,)),
        Case("alpha 8", (8.0,)),
    ]


def _stable_low_reason(alpha, low, right):
    """Why the lower end ``low`` is wrong (``right`` is the true lower end)."""
    if alpha > 2 and np.isclose(low, 0.0):
        return ("the lower end: with alpha > 2 the factor 1 + alpha (2 gamma - 1) drops below -1 "
                "for small gamma: w flips sign every update and grows, so small gammas diverge too")
    if low < 0 and np.isclose(low, 0.5 - 1 / alpha):
        return "the lower end: discounts live in [0, 1]: clip it at 0"
    if np.isclose(low, max(0.0, 0.5 - 2 / alpha)) or np.isclose(low, max(0.0, 0.5 - 0.5 / alpha)):
        return ("the lower end: solve 1 + alpha (2 gamma - 1) >= -1 exactly: gamma >= 1/2 - "
                "1/alpha")
    if right == 0.0 and low > 0.0:
        return ("the lower end is 0: with alpha <= 2 the factor 1 + alpha (2 gamma - 1) stays at "
                "or above -1 for every gamma in [0, 1], so no small gamma overshoots")
    if abs(low - right) < 0.02:
        return ("the lower end is close but not exact: solve 1 + alpha (2 gamma - 1) >= -1 for "
                "gamma exactly (the end itself is included)")
    return ("the lower end is where the factor 1 + alpha (2 gamma - 1) reaches -1 (below it w "
            "overshoots further every update), clipped at 0")


def _stable_high_reason(alpha, high):
    """Why the upper end ``high`` is wrong (the true upper end is 1/2 for every alpha)."""
    if np.isclose(high, min(1.0, 0.5 + 1 / alpha)):
        return ("the upper end: the range is not symmetric around 1/2. Above 1/2 the factor "
                "1 + alpha (2 gamma - 1) is above 1 for every alpha > 0 (the target rises faster "
                "than the estimate), so the upper end is 1/2 whatever alpha")
    if np.isclose(high, 1.0):
        return ("the upper end: for gamma > 1/2 the factor 1 + alpha (2 gamma - 1) exceeds 1 and "
                "w grows without bound (the lesson's divergence at gamma 0.9)")
    if abs(high - 0.5) < 0.02:
        return ("the upper end is close but not exact: the factor must not exceed 1, so "
                "2 gamma - 1 <= 0, gamma <= 1/2 exactly (the end itself is included)")
    return ("the upper end: the factor 1 + alpha (2 gamma - 1) must not exceed 1, which needs "
            "2 gamma - 1 <= 0, gamma <= 1/2, for every alpha")


def _as_pair(got):
    """A numpy array of two numbers is a pair too (review 07i, F6)."""
    if isinstance(got, np.ndarray) and got.shape == (2,):
        return tuple(got.tolist())
    return got


def _stable_gamma_explain(case, got, expected):
    (alpha,) = case.args
    got = _as_pair(got)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (lowest gamma, highest gamma)"
    low, high = float(got[0]), float(got[1])
    if np.isclose(low, 0.5) and np.isclose(high, expected[0]) and not np.isclose(expected[0], 0.5):
        return "the pair is (lowest, highest): you returned them the other way round"
    reasons = []
    if not np.isclose(low, expected[0]):  # each end is checked on its own
        reasons.append(_stable_low_reason(alpha, low, expected[0]))
    if not np.isclose(high, expected[1]):
        reasons.append(_stable_high_reason(alpha, high))
    return "; ".join(reasons) or None


register(
    "stable_gamma_range", _stable_gamma_reference, _stable_gamma_cases,
    compare=lambda got, expected: default_compare(_as_pair(got), expected),
    explain=_stable_gamma_explain,
    hint="w is multiplied by the same factor at every update: when does a power of a number stay "
         "bounded?",
)


_TRIAD_CHOICES = {
    "A": "the target moves away faster than the estimate follows, as for large gamma",
    "B": "each update overshoots: the factor 1 + alpha (2 gamma - 1) is below -1, so w changes "
         "sign at every update and its size grows",
    "C": "a small gamma makes the TD target negative, and negative values diverge",
    "D": "the features 1 and 2 are too far apart for a large step",
}


def _triad_explain(case, got, expected):
    return {
        "A": ("no: for gamma < 1/2 the target 2 gamma w is *smaller* than w; the estimate "
              "chases it past it, from one side to the other"),
        "C": ("no: the sign of the target is not what grows; what decides is the size of the "
              "factor 1 + alpha (2 gamma - 1) that multiplies w at every update (a target that "
              "flips sign is what an overshoot looks like, not its cause)"),
        "D": ("no: the features fix the factor's form, but for gamma < 1/2 a small alpha is "
              "stable with the same features"),
    }.get(str(got).strip().upper() if got is not None else "")


register(
    "triad_overshoot_why", lambda: "B", [Case("your choice")], compare=_choice(_TRIAD_CHOICES),
    explain=_triad_explain,
    hint="print w for gamma 0.1 and alpha 3 after each of a few updates",
)


# ================================================================== lesson 08, Build it

# ------------------------------------------------------------------ step 1: softmax_score


def _softmax_score_cases():
    rng = np.random.default_rng(0)
    return [
        Case("uniform logits [1, 3]", (np.zeros((1, 3)), np.array([2]))),
        Case("random logits [5, 4]", (rng.normal(size=(5, 4)), rng.integers(0, 4, 5))),
        Case("large logits [2, 3]", (np.array([[800.0, 0.0, -800.0], [5.0, 5.0, 5.0]]), np.array([0, 1]))),
    ]


def _softmax_score_explain(case, got, expected):
    logits, actions = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return None
    if np.isnan(got).any():
        return "NaN: exp overflowed; compute pi with a stable softmax (subtract the row max)"
    if np.allclose(got, -expected):
        return "the sign is flipped: the score is e_a - pi, so it pushes the taken action up"
    onehot = np.eye(logits.shape[1])[actions]
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    pi = shifted / shifted.sum(axis=1, keepdims=True)
    if np.allclose(got, onehot):
        return "you returned e_a alone: subtract pi, the expected score, which is why each row sums to 0"
    if np.allclose(got, onehot - 1.0 / logits.shape[1]):
        return "you subtracted 1/A; subtract the policy's probabilities pi(.|s)"
    if np.allclose(got, -pi):
        return "the one-hot e_a of the taken action is missing: e_a - pi"
    with np.errstate(all="ignore"):
        by_column = np.exp(logits - logits.max(axis=0, keepdims=True))
        by_column = by_column / by_column.sum(axis=0, keepdims=True)
    if np.allclose(got, onehot - by_column, equal_nan=False):
        return "the softmax runs over each row's actions (axis 1), not over the batch (axis 0)"
    if np.allclose(got, np.log(np.maximum(pi, 1e-300))):
        return "that is log pi; the score is its gradient with respect to the logits, e_a - pi"
    return None


register(
    "softmax_score", softmax_score, _softmax_score_cases, explain=_softmax_score_explain,
    hint="differentiate log softmax(z)[a] = z_a - log sum_b exp(z_b) with respect to each z_b",
)


# ------------------------------------------------------------------ step 2: reward_to_go


def _reward_to_go_reference(rewards, gamma):
    out = np.zeros(len(rewards))
    following = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        following = rewards[t] + gamma * following
        out[t] = following
    return out


def _reward_to_go_cases():
    rng = np.random.default_rng(0)
    return [
        Case("rewards [1, 1, 1], gamma 0.5", (np.ones(3), 0.5)),
        Case("10 random rewards, gamma 0.9", (rng.normal(size=10), 0.9)),
        Case("one step", (np.array([2.0]), 0.99)),
    ]


def _reward_to_go_explain(case, got, expected):
    rewards, gamma = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return None
    T = len(rewards)
    if T > 1 and np.allclose(got, expected[0]):
        return ("every step got the whole episode's return G_0: step t should only see the rewards "
                "from t on, since a_t cannot change what came before it")
    forward = np.array([sum(gamma**k * r for k, r in enumerate(rewards[: t + 1][::-1]))
                        for t in range(T)])
    if T > 1 and np.allclose(got, forward):
        return "you summed the rewards up to t (the past); the reward-to-go sums from t to the end"
    if T > 1 and np.allclose(got, gamma ** np.arange(T) * expected):
        return ("you discounted from the start of the episode, sum_k gamma^k r_k = gamma^t G_t: "
                "in G_t the discount restarts at t, gamma^(k - t)")
    if gamma != 1 and np.allclose(got, np.cumsum(rewards[::-1])[::-1]):
        return "gamma is missing: G_t = r_t + gamma * G_{t+1}"
    if T > 1 and np.allclose(got, expected - rewards):
        return "G_t includes r_t, the reward of the step itself"
    return None


register(
    "reward_to_go", _reward_to_go_reference, _reward_to_go_cases, explain=_reward_to_go_explain,
    hint="G_t = r_t + gamma * G_{t+1}: which end of the episode do you know first?",
)


# ------------------------------------------------------------------ step 3: episode_gradients


def _episode_gradients_reference(obs, actions, weights, mask, W):
    obs = np.asarray(obs, dtype=float)
    logits = obs @ W["w"] + W["b"]  # [T, N, A]
    z = logits - logits.max(axis=-1, keepdims=True)
    pi = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    score = np.eye(logits.shape[-1])[actions] - pi
    weighted = score * np.where(mask, weights, 0.0)[..., None]
    return {"w": np.einsum("tnd,tna->nda", obs, weighted), "b": weighted.sum(axis=0)}


def _gradient_case(seed, T=5, N=4, D=3, A=2):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, T + 1, size=N)
    lengths[0] = T
    mask = np.arange(T)[:, None] < lengths[None, :]
    obs = rng.normal(size=(T, N, D))
    actions = rng.integers(0, A, size=(T, N))
    weights = rng.normal(size=(T, N)) + 1.0  # padding rows hold numbers too: mask them
    W = {"w": rng.normal(size=(D, A)), "b": rng.normal(size=A)}
    return (obs, actions, weights, mask, W)


def _gradients_cases():
    return [
        Case("4 episodes of lengths up to 5, 3 features, 2 actions (padding is not zero)",
             _gradient_case(0)),
        Case("6 episodes, 4 features, 3 actions", _gradient_case(1, T=6, N=6, D=4, A=3)),
    ]


def _gradients_explain(case, got, expected):
    obs, actions, weights, mask, W = case.args
    if not isinstance(got, dict) or set(got) != {"w", "b"}:
        return "return a dict like W: {'w': [N, D, A], 'b': [N, A]}, one gradient per episode"
    w = np.asarray(got["w"])
    if w.shape == expected["w"].shape[:1] + expected["w"].shape[1:][::-1]:
        return "each episode's gradient for w has W's shape [D, A]: s (e_a - pi)^T, not its transpose"
    if w.shape == expected["w"].shape[1:]:
        return "one estimate per episode: keep the episode axis, [N, D, A]"
    all_steps = _episode_gradients_reference(obs, actions, weights, np.ones_like(mask), W)
    if _same(got["w"], all_steps["w"]) and _same(got["b"], all_steps["b"]):
        return "the padding steps (mask False) entered the sum: weight them by 0"
    negated = {k: -v for k, v in expected.items()}
    if _same(got["w"], negated["w"]):
        return "the sign is flipped: the score is e_a - pi"
    lengths = mask.sum(axis=0)
    if _same(got["w"], expected["w"] / lengths[:, None, None]):
        return "you averaged over each episode's steps: the estimate *sums* them"
    if _same(got["w"], expected["w"]) and not _same(got["b"], expected["b"]):
        return "w is right; the bias's gradient is the weighted score summed over steps (its input is 1)"
    return None


register(
    "episode_gradients", _episode_gradients_reference, _gradients_cases,
    explain=_gradients_explain,
    hint="logits = s W + b, so d logits / d W pairs each feature with each action: an outer "
         "product per step, weighted and summed over the episode's real steps",
)


# ------------------------------------------------------------------ step 4: leave_one_out_weights


def _leave_one_out_reference(returns, mask):
    returns, mask = np.asarray(returns, dtype=float), np.asarray(mask, dtype=bool)
    g = np.where(mask, returns, 0.0)
    others = mask.sum(axis=1, keepdims=True) - mask
    b = np.divide(g.sum(axis=1, keepdims=True) - g, others, out=np.zeros_like(g), where=others > 0)
    return np.where(mask, g - b, 0.0)


def _leave_one_out_cases():
    mask = np.array([[True, True, True], [True, True, False], [True, False, False]])
    returns = np.where(mask, np.array([[3.0, 2.0, 1.0], [2.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), 0.0)
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 7, size=5)
    lengths[0] = 6
    long_mask = np.arange(6)[:, None] < lengths[None, :]
    return [
        Case("3 episodes of lengths 3, 2, 1", (returns, mask)),
        Case("all running, 2 episodes", (np.array([[4.0, 2.0], [1.0, 3.0]]), np.ones((2, 2), bool))),
        Case("5 episodes of random lengths (padding holds numbers)",
             (np.where(long_mask, rng.normal(size=(6, 5)), 7.0), long_mask)),
    ]


def _leave_one_out_explain(case, got, expected):
    returns, mask = case.args
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape != expected.shape:
        return None
    if np.any(got[~mask] != 0):
        return "padding steps (mask False) are not steps of any episode: give them weight 0"
    g = np.where(mask, returns, 0.0)
    running = mask.sum(axis=1, keepdims=True)
    with_self = np.where(mask, g - g.sum(axis=1, keepdims=True) / np.maximum(running, 1), 0.0)
    if np.allclose(got, with_self):
        return ("your baseline includes the episode's own G_t, so it depends on that episode's "
                "actions and biases the gradient: average the *other* episodes only")
    over_all = np.where(mask, g - (g.sum(axis=1, keepdims=True) - g) / (g.shape[1] - 1), 0.0)
    if np.allclose(got, over_all):
        return ("you averaged over finished episodes too (their padded zeros): average only the "
                "other episodes still running at t")
    baseline_only = np.where(mask, g - expected, 0.0)
    if np.allclose(got, baseline_only):
        return "that is the baseline b; return the weights G_t - b"
    return None


register(
    "leave_one_out_weights", _leave_one_out_reference, _leave_one_out_cases,
    explain=_leave_one_out_explain,
    hint="per row t: the sum and the count of the running episodes, each minus the episode's "
         "own share",
)


# ================================================================== lesson 08, Exercises

# ------------------------------------------------------------------ easy: best_constant_baseline


def _best_baseline_reference(sq_norms, returns):
    sq_norms, returns = np.asarray(sq_norms, dtype=float), np.asarray(returns, dtype=float)
    return float((sq_norms * returns).sum() / sq_norms.sum())


def _best_baseline_cases():
    rng = np.random.default_rng(5)
    return [
        Case("4 episodes", (np.array([1.0, 4.0, 0.5, 2.0]), np.array([10.0, 30.0, 5.0, 12.0]))),
        Case("50 episodes", (rng.gamma(2.0, size=50), rng.normal(20, 5, size=50))),
    ]


def _best_baseline_explain(case, got, expected):
    sq_norms, returns = case.args
    try:
        got = float(got)
    except (TypeError, ValueError):
        return "return one number"
    if np.isclose(got, returns.mean()):
        return ("the mean return is the usual choice, not the best one: episodes with a large "
                "score |S|^2 count more in the variance, so weight each G by |S|^2")
    if np.isclose(got, (sq_norms * returns).mean()):
        return "divide by the sum of the weights |S|^2, not by the number of episodes"
    if np.isclose(got, (np.sqrt(sq_norms) * returns).sum() / np.sqrt(sq_norms).sum()):
        return "the weights are the squared norms |S|^2 (you passed them in already squared)"
    if np.isclose(got, returns.mean() + np.cov(sq_norms, returns)[0, 1] / sq_norms.mean()):
        return ("the covariance form needs the covariance with 1/N, as the means in it: "
                "np.cov(..., bias=True); np.cov divides by N - 1")
    return None


register(
    "best_constant_baseline", _best_baseline_reference, _best_baseline_cases,
    explain=_best_baseline_explain,
    hint="the variance's b-dependent part is sum_i |S_i|^2 (G_i - b)^2: set its derivative to 0",
)


# ------------------------------------------------------------------ medium: corridor_episode_gradient


def _corridor_reference(went_right, p, gamma):
    went_right = np.asarray(went_right, dtype=bool)
    T = len(went_right)
    scores = np.where(went_right, 1.0 - p, -p)
    to_go = -(1 - gamma ** np.arange(T, 0, -1)) / (1 - gamma) if gamma < 1 else \
        -np.arange(T, 0, -1, dtype=float)
    return float(np.sum(gamma ** np.arange(T) * scores * to_go))


def _corridor_cases():
    return [
        Case("straight to the goal: right, left, right; p 0.5, gamma 1",
             (np.array([True, False, True]), 0.5, 1.0)),
        Case("a detour, p 0.59, gamma 0.9", (np.array([True, True, False, True, False, True]), 0.59, 0.9)),
        Case("back at the wall, p 0.3, gamma 0.8", (np.array([False, True, False, True, True, False, True]),
                                                    0.3, 0.8)),
    ]


def _corridor_explain(case, got, expected):
    went_right, p, gamma = case.args
    try:
        got = float(got)
    except (TypeError, ValueError):
        return "return one number"
    T = len(went_right)
    scores = np.where(went_right, 1.0 - p, -p)
    G = _reward_to_go_reference(-np.ones(T), gamma)
    disc = gamma ** np.arange(T)
    if gamma < 1 and np.isclose(got, np.sum(scores * G)):
        return ("without gamma^t this is the biased G_t form: the gradient of the discounted "
                "return weights step t by gamma^t G_t")
    if np.isclose(got, G[0] * scores.sum()):
        return ("you weighted every step by the whole return G_0: that is unbiased too but not "
                "this exercise's estimator; use gamma^t G_t")
    if np.isclose(got, -expected):
        return "the sign is flipped: the return is -1 per step, so G_t is negative"
    if np.isclose(got, float(np.sum(disc * np.where(went_right, p, p - 1.0) * G))):
        return "d log p / d theta = 1 - p for right and d log(1 - p) / d theta = -p for left"
    undiscounted = _reward_to_go_reference(-np.ones(T), 1.0)
    if gamma < 1 and np.isclose(got, float(np.sum(disc * scores * undiscounted))):
        return "G_t is discounted too: G_t = sum_k gamma^(k-t) r_k"
    after = np.append(G[1:], 0.0)  # G_{t+1}: the return without this step's reward
    if np.isclose(got, float(np.sum(disc * scores * gamma * after))) or \
            np.isclose(got, float(np.sum(disc * scores * after))):
        return "G_t includes r_t, this step's own reward: G_t = r_t + gamma G_(t+1)"
    if np.isclose(got, expected / T):
        return "sum over the episode's steps, not the mean"
    if gamma < 1 and np.isclose(got, float(np.sum(disc**2 * scores * G))):
        return "gamma^t once: gamma^t G_t = sum_(k>=t) gamma^k r_k already holds every discount"
    return None


register(
    "corridor_episode_gradient", _corridor_reference, _corridor_cases, explain=_corridor_explain,
    hint="p = sigmoid(theta): differentiate log p and log(1 - p) by theta; then weight step t by "
         "gamma^t G_t",
)


# ------------------------------------------------------------------ hard: corridor_exact_gradients


def _corridor_model():
    """P[s, a, s'] of the short corridor's non-terminal states 0, 1, 2 (a = 0 left, 1 right); the
    goal (state 3) is left out, so rows that reach it sum to less than 1."""
    P = np.zeros((3, 2, 3))
    P[0, 0, 0] = P[0, 1, 1] = 1.0  # left at the wall stays
    P[1, 0, 2] = P[1, 1, 0] = 1.0  # the middle cell reverses the actions
    P[2, 0, 1] = 1.0  # right from cell 2 reaches the goal
    return P


def _corridor_exact_reference(theta, gamma):
    p = 1.0 / (1.0 + np.exp(-theta))
    P = _corridor_model()
    P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
    V = np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))
    Q = -1.0 + gamma * P @ V  # [3, 2]
    inner = p * (1 - p) * (Q[:, 1] - Q[:, 0])  # sum_a pi(a) d log pi(a) / d theta Q(s, a)
    start = np.eye(3)[0]
    discounted = np.linalg.solve((np.eye(3) - gamma * P_pi).T, start)
    visits = np.linalg.solve((np.eye(3) - P_pi).T, start)
    return float(discounted @ inner), float(visits @ inner)


def _corridor_exact_cases():
    return [
        Case("theta 0, gamma 0.9", (0.0, 0.9)),
        Case("theta -1, gamma 0.8", (-1.0, 0.8)),
        Case("theta 1, gamma 1 (both the same)", (1.0, 1.0)),
    ]


def _corridor_exact_explain(case, got, expected):
    theta, gamma = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (gradient of J, mean of the G_t estimate)"
    g = [float(x) for x in got]
    if np.isclose(g[0], expected[1]) and np.isclose(g[1], expected[0]) and gamma < 1:
        return "the two are swapped: the true gradient weights states by their *discounted* visits"
    if gamma < 1 and np.isclose(g[0], expected[1]) and np.isclose(g[1], expected[1]):
        return ("both use the plain visit counts: the gradient of J weights each state by "
                "sum_t gamma^t P(s_t = s), the discounted occupancy")
    if gamma < 1 and np.isclose(g[0], expected[0]) and np.isclose(g[1], expected[0]):
        return ("both use the discounted occupancy; the G_t estimate sums over every visit with "
                "weight 1: the plain expected visit counts")
    p = 1 / (1 + np.exp(-theta))
    if np.allclose(g, [e / (p * (1 - p)) for e in expected]):
        return "missing the factor p (1 - p): sum_a pi(a) d log pi(a) / d theta Q(s, a)"
    return None


register(
    "corridor_exact_gradients", _corridor_exact_reference, _corridor_exact_cases,
    explain=_corridor_exact_explain,
    hint="both are sum_s (weight of s) * sum_a pi(a) d log pi(a)/d theta Q(s, a); the weights "
         "are occupancies you can get from one linear solve each, as V was",
)


_LOO_WHY_CHOICES = {
    "A": "leaving it out lowers the variance; the gradient's mean would be the same either way",
    "B": "its own G_t depends on its own action a_t, so a baseline that contains it is "
         "correlated with the score and shifts the gradient's mean",
    "C": "an episode's G_t would be counted twice in the loss",
    "D": "with only one episode running at t the mean would be 0",
}


def _loo_why_explain(case, got, expected):
    return {
        "A": ("no: including it *biases* the estimate. With all N episodes running at t, "
              "G_i - mean of all = (N-1)/N (G_i - mean of the others): the gradient is scaled by "
              "(N-1)/N, a 1/N shrink in the same direction, and where fewer episodes run at later t "
              "the steps are reweighted; mild, but not the gradient's mean"),
        "C": "no: the loss counts it once; the problem is what the baseline depends on",
        "D": "no: that case is handled by giving the baseline 0 there; it is not the reason",
    }.get(str(got).strip().upper() if got is not None else "")


register(
    "leave_one_out_why", lambda: "B", [Case("your choice")], compare=_choice(_LOO_WHY_CHOICES),
    explain=_loo_why_explain,
    hint="ask what an episode's own G_t depends on, and what the baseline may depend on",
)


# ------------------------------------------------------------------ medium: corridor_learned_p


def _corridor_best_p(gamma):
    """The P(right) that maximises the corridor's start value, on a grid of 0.001."""
    ps = np.linspace(0.001, 0.999, 999)
    P = _corridor_model()
    values = []
    for p in ps:
        P_pi = (1 - p) * P[:, 0] + p * P[:, 1]
        values.append(np.linalg.solve(np.eye(3) - gamma * P_pi, -np.ones(3))[0])
    return float(ps[int(np.argmax(values))])


# The reader's ascent draws its episodes from the checker's sampler, so the check sees every
# batch: each step must move theta by one constant lr times the mean of corridor_episode_gradient
# over that batch (which catches a made-up run, a forgotten mask, a mean over steps, gamma^t
# applied twice or left out, and a downhill step). Whether the reader's lr and number of steps
# reach the optimum is judged without noise: the same ascent on the exact gradient must end
# within REACH of the best p (lr 0.4, 40 steps: 0.0004, the grid's resolution; lr 0.02: 0.035
# short). The sampled run's last quarter must then lie within LEARNED_P_TOLERANCE of it: a
# correct ascent of 300 episodes per step wandered at most 0.050 from it over 66 streams, fewer
# episodes per step wander further.
REACH = 0.005
LEARNED_P_TOLERANCE = 0.08

_LEARNED_P_GAMMA = 0.9
_ASCENT_RTOL = 1e-4  # float32 arithmetic passes; every wrong estimator is off by far more


def _corridor_episodes(p, n, rng, max_steps=1_000):
    """Lesson 08's corridor_episodes: n episodes under P(right) = p, as columns: went_right
    [T, n], mask [T, n] (True on each episode's steps)."""
    cell, running = np.zeros(n, dtype=int), np.ones(n, dtype=bool)
    rights, masks = [], []
    while running.any() and len(rights) < max_steps:
        right = rng.random(n) < p
        move = np.where(right, 1, -1) * np.where(cell == 1, -1, 1)  # the middle cell reverses
        cell = np.where(running, np.maximum(cell + move, 0), cell)
        rights.append(right)
        masks.append(running.copy())
        running &= cell < 3
    return np.array(rights), np.array(masks)


class _RecordingSampler:
    """``sample(p, n)``: n corridor episodes at P(right) = p from the checker's own stream; keeps
    every batch it handed out."""

    def __init__(self, seed):
        self.rng, self.batches = np.random.default_rng(seed), []

    def __call__(self, p, n):
        p, n = float(p), int(n)
        if not (0.0 <= p <= 1.0 and n >= 1):
            raise ValueError(f"sample(p, n): expected a probability p and a count n >= 1, got "
                             f"p = {p}, n = {n}")
        right, mask = _corridor_episodes(p, n, self.rng)
        self.batches.append((p, right, mask))
        return right.copy(), mask.copy()


def _learned_p_cases():
    return [Case("gamma 0.9, on the checker's streams 8101 and 8102", (_LEARNED_P_GAMMA, 8_101, 8_102))]


def _learned_p_call(fn, gamma, *seeds):
    """The reader's ascent on each of the checker's streams: (run, the batches it drew)."""
    out = []
    for seed in seeds:
        sample = _RecordingSampler(seed)
        out.append((fn(gamma, sample), sample.batches))
    return tuple(out)


def _learned_p_reference(gamma, sample, steps=40, episodes=300, lr=0.4):
    """The lesson's ascent: theta from 0, lr times the mean episode gradient per step."""
    theta, run = 0.0, []
    for _ in range(steps):
        p = 1 / (1 + np.exp(-theta))
        right, mask = sample(p, episodes)
        theta += lr * np.mean([_corridor_reference(right[mask[:, i], i], p, gamma)
                               for i in range(episodes)])
        run.append(1 / (1 + np.exp(-theta)))
    return np.array(run)


def _run_trouble(run):
    """Why ``run`` is not an array of at least 10 probabilities after each step (None if it is)."""
    try:
        run = np.asarray(run, dtype=float)
    except (TypeError, ValueError):
        return "return the whole run: an array with p after each ascent step, not one value"
    if run.ndim != 1:
        return f"return a 1-D array (p after each step), got shape {run.shape}"
    if len(run) < 10:
        return f"run at least 10 ascent steps, got {len(run)}"
    if not np.isfinite(run).all():
        return "the run holds NaN or inf: the ascent diverged (a smaller step size)"
    return None


def _logit(p):
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def _batch_means(batches, gamma, estimator):
    """Each batch's mean of ``estimator(went_right, p, gamma)`` over its episodes."""
    return np.array([np.mean([estimator(right[mask[:, i], i], p, gamma) for i in range(right.shape[1])])
                     for p, right, mask in batches])


def _step_size(steps, means):
    """The lr > 0 with ``steps = lr * means`` (to _ASCENT_RTOL), or None if there is none."""
    used = np.abs(means) > 1e-12
    if not used.any():
        return None
    lr = float(np.median(steps[used] / means[used]))
    return lr if lr > 0 and np.allclose(steps, lr * means, rtol=_ASCENT_RTOL, atol=1e-9) else None


def _exact_ascent_p(lr, steps, gamma):
    """Where gradient ascent with step size lr ends after ``steps`` steps on the exact dJ/dtheta."""
    theta = 0.0
    with np.errstate(over="ignore"):
        for _ in range(steps):
            theta = float(np.clip(theta + lr * _corridor_exact_reference(theta, gamma)[0], -30, 30))
    return 1 / (1 + np.exp(-theta))


def _wrong_estimators():
    """Slips of the per-episode gradient, each as an estimator, with what to say about it."""
    def mean_over_steps(right, p, gamma):
        return _corridor_reference(right, p, gamma) / max(len(right), 1)

    def no_discount_weight(right, p, gamma):
        T = len(right)
        return float(np.sum(np.where(right, 1.0 - p, -p) * _reward_to_go_reference(-np.ones(T), gamma)))

    def gamma_twice(right, p, gamma):
        T = len(right)
        return float(np.sum(gamma ** (2 * np.arange(T)) * np.where(right, 1.0 - p, -p)
                            * _reward_to_go_reference(-np.ones(T), gamma)))

    return [
        (mean_over_steps, "your step follows the mean over an episode's steps: sum them "
                          "(corridor_episode_gradient's sum over t)"),
        (no_discount_weight, "your step follows the biased G_t direction (no gamma^t): weight step t "
                             "by gamma^t G_t, as in corridor_episode_gradient"),
        (gamma_twice, "your step applies gamma^t twice: gamma^t G_t once"),
        (lambda right, p, gamma: _corridor_reference(right, p, 1.0),
         "your step uses gamma = 1: use the gamma the check passes"),
        (lambda right, p, gamma: -_corridor_reference(right, p, gamma),
         "you went downhill: gradient ascent adds lr * gradient to theta"),
    ]


def _ascent_trouble(run, batches, gamma):
    """Why ``run`` is not gradient ascent on the batches it drew (a str), or its step size."""
    run = np.asarray(run, dtype=float)
    if len(batches) != len(run):
        return (f"draw one batch with sample(p, n) per ascent step and record p after each step: "
                f"{len(batches)} batches, {len(run)} values of p")
    drawn_at = np.array([p for p, _, _ in batches])
    if abs(drawn_at[0] - 0.5) > 1e-12:
        return f"start at theta = 0 (p = 0.5): your first batch was drawn at p = {drawn_at[0]:.3f}"
    if not np.allclose(drawn_at[1:], run[:-1], rtol=0, atol=1e-9):
        if np.allclose(drawn_at[1:], 1 / (1 + np.exp(-run[:-1])), rtol=0, atol=1e-9):
            return "these look like theta, not p: return p = sigmoid(theta) after each step"
        return ("the run must hold the p of each step's update, the p the next batch is drawn at "
                "(not numbers of your own)")
    if (np.minimum(run, 1 - run) < 1e-6).any():  # theta can no longer be read back from p
        return "p ran to 0 or 1: the step size is far too large"
    steps = _logit(run) - _logit(drawn_at)
    lr = _step_size(steps, _batch_means(batches, gamma, _corridor_reference))
    if lr is not None:
        return lr
    whole = [(p, right, np.ones_like(mask)) for p, right, mask in batches]
    if _step_size(steps, _batch_means(whole, gamma, _corridor_reference)):
        return ("your step includes the steps after an episode's end: pass only the episode's own "
                "steps, went_right[mask[:, i], i]")
    for estimator, why in _wrong_estimators():
        if _step_size(steps, _batch_means(batches, gamma, estimator)):
            return why
    return ("each step must move theta by one lr times the mean of corridor_episode_gradient over "
            "the batch's episodes (the same lr every step)")


def _learned_p_compare(got, expected):
    best = _corridor_best_p(_LEARNED_P_GAMMA)
    if not isinstance(got, tuple):
        return ("expected your function corridor_ascent(gamma, sample), which the check runs, not "
                f"a value: got {got!r}")
    for run, batches in got:
        trouble = _run_trouble(run)
        lr = None if trouble else _ascent_trouble(run, batches, _LEARNED_P_GAMMA)
        if trouble or isinstance(lr, str):
            return trouble or lr
        reached = _exact_ascent_p(lr, len(run), _LEARNED_P_GAMMA)
        if reached < best - REACH:
            return (f"your ascent is right but stops short: on the exact gradient, lr {lr:.3g} for "
                    f"{len(run)} steps ends at p = {reached:.3f}, the best p is {best:.3f} (more "
                    f"steps, or a larger step size)")
        if reached > best + REACH:
            return (f"your step size is too large: on the exact gradient, lr {lr:.3g} ends at "
                    f"p = {reached:.3f}, past the best p {best:.3f}")
        run = np.asarray(run, dtype=float)
        p = float(run[-(len(run) // 4):].mean())
        if abs(p - best) > LEARNED_P_TOLERANCE:
            return (f"the run wanders: the mean p of its last quarter is {p:.3f}, the best p "
                    f"{best:.3f} (average over more episodes per step)")
    return None


register(
    "corridor_learned_p", _learned_p_reference, _learned_p_cases,
    compare=_learned_p_compare, call=_learned_p_call,
    hint="start at theta = 0; each step, draw a few hundred episodes with sample(p, n), average "
         "corridor_episode_gradient over them, move theta uphill by lr times that mean, and record "
         "p = sigmoid(theta)",
)


# ------------------------------------------------------------------ hard: corridor_fixed_points


def _corridor_zero_p(which, gamma):
    """The P(right) at which the exact direction ``which`` (0: dJ/dtheta, 1: the mean of the G_t
    estimate) is zero, by bisection on theta (both are positive to its left on the corridor)."""
    lo, hi = -4.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _corridor_exact_reference(mid, gamma)[which] > 0 else (lo, mid)
    return float(1.0 / (1.0 + np.exp(-lo)))


def _fixed_points_reference(which, gamma):
    return _corridor_zero_p(which, gamma)


def _fixed_points_cases():
    # gamma 0.5 is the lesson's; 0.7 and 0.8 are printed nowhere, so only a function passes
    return [Case(f"gamma {gamma}", (gamma,)) for gamma in (0.5, 0.7, 0.8)]


def _fixed_points_call(fn, gamma):
    """The reader's zero_of for both directions: (zero of dJ/dtheta, zero of the G_t direction)."""
    return fn(0, gamma), fn(1, gamma)


def _fixed_points_compare(got, expected):
    try:
        got = [float(x) for x in got]
    except (TypeError, ValueError):
        return f"zero_of(which, gamma) must return one probability, got {got!r}"
    if not np.allclose(got, expected, atol=2e-3):
        # the expected values are not printed: they would be the answer to type in
        return f"zero_of(0, gamma), zero_of(1, gamma) = ({got[0]:.3f}, {got[1]:.3f}): not both right"
    return None


def _fixed_points_explain(case, got, expected):
    try:
        g = [float(x) for x in got]
    except (TypeError, ValueError):
        return None
    if np.allclose(g, expected[::-1], atol=2e-3):
        return ("the two are swapped: the *true* gradient (discounted visits) is zero at the best p; "
                "the G_t direction's zero is its own fixed point")
    if abs(g[0] - expected[1]) < 2e-3:
        return ("your zero of dJ/dtheta is where the G_t direction (no gamma^t) is zero: that is "
                "where biased ascent leads, not the optimum")
    if np.allclose(1 / (1 + np.exp(-np.array(g))), expected, atol=2e-3):
        return "these look like theta, not p: return p = sigmoid(theta) at the zero"
    if abs(g[0] - _corridor_best_p(1.0)) < 6e-3:
        return "that is the best p at gamma = 1 (Sutton & Barto's 0.59): use the gamma you are given"
    if abs(g[0] - 0.5) < 2e-3 or abs(g[1] - 0.5) < 2e-3:
        return "p = 0.5 is theta = 0, where the search starts: the bisection never moved"
    if abs(g[0] - expected[0]) < 2e-3:
        return ("your zero of dJ/dtheta is right, the G_t direction's is not (its weights are the "
                "plain expected visits, without gamma^t)")
    return None


register(
    "corridor_fixed_points", _fixed_points_reference, _fixed_points_cases,
    compare=_fixed_points_compare, explain=_fixed_points_explain, call=_fixed_points_call,
    hint="both directions are positive for small theta and negative for large: bisect on theta "
         "with corridor_exact_gradients(theta, gamma)[which], then p = sigmoid(theta)",
)
