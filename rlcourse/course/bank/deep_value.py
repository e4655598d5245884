"""Exercises of lessons 07-08: DQN targets, soft updates, the epsilon schedule, the deadly
triad's stable range, the reward-to-go, the softmax score, a bandit's policy gradient, the
leave-one-out baseline and the short corridor's episode gradient.

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms.
"""

import numpy as np

from ...algos.dqn import dqn_targets
from ...algos.reinforce import softmax_score
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _dqn_case(seed, double):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=6)
    terminated = np.array([False, False, True, False, False, True])
    return (rewards, terminated, rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), 0.9, double)


def _dqn_targets_cases():
    return [
        Case("Double DQN, terminals at indices 2 and 5", _dqn_case(0, True)),
        Case("plain DQN (double=False), terminals at indices 2 and 5", _dqn_case(1, False)),
        Case("gamma = 0: the target is the reward", (*_dqn_case(2, True)[:4], 0.0, True)),
    ]


def _dqn_targets_explain(case, got, expected):
    rewards, terminated, online, target, gamma, double = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    wrong = ~np.isclose(got, expected)
    if wrong.any() and wrong[terminated].all() and not wrong[~terminated].any():
        k = int(np.flatnonzero(terminated)[0])
        return (f"you bootstrapped from a terminal next state at index {k}: multiply the "
                "bootstrap by (1 - terminated)")
    best = np.argmax(online, axis=1)
    if double and np.allclose(got, dqn_targets(rewards, terminated, online, target, gamma, False)):
        return ("you took max_a Q_target(s', a); Double DQN picks a* = argmax Q_online(s') and "
                "evaluates Q_target(s', a*)")
    swapped = rewards + gamma * np.where(terminated, 0.0, online[np.arange(len(best)), np.argmax(target, 1)])
    if double and np.allclose(got, swapped):
        return "the roles are swapped: select the action with the online net, evaluate with the target net"
    return None


register(
    "dqn_targets", dqn_targets, _dqn_targets_cases, explain=_dqn_targets_explain,
    hint="r + gamma * (1 - terminated) * Q_target(s', argmax_a Q_online(s', a)); "
         "max_a Q_target(s', a) when not double",
)


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
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    if len(got) > 1 and np.allclose(got, expected[0]):
        return ("every step got the whole episode's return G_0: step t should only see the rewards "
                "from t on, since a_t cannot change what came before it")
    forward = np.array([sum(gamma**k * r for k, r in enumerate(rewards[: t + 1][::-1]))
                        for t in range(len(rewards))])
    if np.allclose(got, forward):
        return "you summed the rewards up to t (the past); the reward-to-go sums from t to the end"
    return None


register(
    "reward_to_go", _reward_to_go_reference, _reward_to_go_cases, explain=_reward_to_go_explain,
    hint="walk backwards: G = r[t] + gamma * G, storing G at every t",
)


def _softmax_score_cases():
    rng = np.random.default_rng(0)
    return [
        Case("uniform logits [1, 3]", (np.zeros((1, 3)), np.array([2]))),
        Case("random logits [5, 4]", (rng.normal(size=(5, 4)), rng.integers(0, 4, 5))),
        Case("large logits [2, 3]", (np.array([[800.0, 0.0, -800.0], [5.0, 5.0, 5.0]]), np.array([0, 1]))),
    ]


def _softmax_score_explain(case, got, expected):
    logits, actions = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    if np.isnan(got).any():
        return "NaN: exp overflowed; compute pi with a stable softmax (subtract the row max)"
    if np.allclose(got, -expected):
        return "the sign is flipped: the score is e_a - pi, so it pushes the taken action up"
    onehot = np.eye(logits.shape[1])[actions]
    if np.allclose(got, onehot):
        return "you returned e_a alone: subtract pi, the expected score, which is why each row sums to 0"
    if np.allclose(got, onehot - 1.0 / logits.shape[1]):
        return "you subtracted 1/A; subtract the policy's probabilities pi(.|s)"
    return None


register(
    "softmax_score", softmax_score, _softmax_score_cases, explain=_softmax_score_explain,
    hint="one-hot of the action minus softmax(logits), row by row",
)


# ------------------------------------------------------------------ lesson 07: soft_update


def _soft_update_reference(target, online, tau):
    return (1.0 - tau) * np.asarray(target, dtype=float) + tau * np.asarray(online, dtype=float)


def _soft_update_cases():
    rng = np.random.default_rng(0)
    target, online = rng.normal(size=5), rng.normal(size=5)
    return [
        Case("tau 0.005 (a small step towards online)", (target, online, 0.005)),
        Case("tau 1: a hard copy", (target, online, 1.0)),
        Case("tau 0: the target stays", (target, online, 0.0)),
    ]


def _soft_update_explain(case, got, expected):
    target, online, tau = case.args
    got = np.asarray(got, dtype=float)
    if got.shape == expected.shape and np.allclose(got, tau * target + (1 - tau) * online):
        return ("the weights are swapped: tau is the share of the *online* net, so a small tau "
                "moves the target only a little")
    return None


register(
    "soft_update", _soft_update_reference, _soft_update_cases, explain=_soft_update_explain,
    hint="(1 - tau) * target + tau * online",
)


# ------------------------------------------------------------------ lesson 07: epsilon_schedule


def _epsilon_reference(step, total_steps, start, end, fraction):
    duration = max(1, int(fraction * total_steps))
    return start + min(step / duration, 1.0) * (end - start)


def _epsilon_cases():
    return [
        Case("step 0", (0, 50_000, 1.0, 0.04, 0.16)),
        Case("halfway through the decay", (4_000, 50_000, 1.0, 0.04, 0.16)),
        Case("after the decay: the floor", (30_000, 50_000, 1.0, 0.04, 0.16)),
        Case("fraction 0.5, end 0.1", (2_500, 10_000, 1.0, 0.1, 0.5)),
    ]


def _epsilon_explain(case, got, expected):
    step, total, start, end, fraction = case.args
    if np.isclose(got, start + step / total * (end - start)):
        return ("you decayed over the whole run: epsilon reaches its floor after "
                "fraction * total_steps steps and then stays there")
    if np.isclose(got, start + step / (fraction * total) * (end - start)):
        return "epsilon kept falling past the end of the decay: stop at the floor `end`"
    return None


register(
    "epsilon_schedule", _epsilon_reference, _epsilon_cases, explain=_epsilon_explain,
    hint="start + min(step / (fraction * total_steps), 1) * (end - start)",
)


# ------------------------------------------------------------------ lesson 07: stable_gamma_range


def _stable_gamma_reference(alpha):
    return (max(0.0, 0.5 - 1.0 / alpha), 0.5)


def _stable_gamma_cases():
    return [
        Case("alpha 0.1 (the lesson's)", (0.1,)),
        Case("alpha 1", (1.0,)),
        Case("alpha 3: steps that overshoot", (3.0,)),
        Case("alpha 4", (4.0,)),
    ]


def _stable_gamma_explain(case, got, expected):
    (alpha,) = case.args
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (lowest gamma, highest gamma)"
    low, high = float(got[0]), float(got[1])
    if alpha > 2 and np.isclose(low, 0.0) and np.isclose(high, expected[1]):
        return ("with alpha > 2 the factor 1 + alpha (2 gamma - 1) drops below -1 for small gamma: "
                "w flips sign every update and grows, so small gammas diverge too")
    if abs(high - expected[1]) < 0.02 or abs(low - expected[0]) < 0.02:
        return ("close, but a grid only brackets the edges: solve |1 + alpha (2 gamma - 1)| <= 1 "
                "for gamma exactly")
    return None


register(
    "stable_gamma_range", _stable_gamma_reference, _stable_gamma_cases,
    explain=_stable_gamma_explain,
    hint="w is multiplied by 1 + alpha (2 gamma - 1) each update: bounded iff that lies in [-1, 1]",
)


# ------------------------------------------------------------------ lesson 08: bandit_policy_gradient


def _bandit_gradient_reference(z, means):
    z, means = np.asarray(z, dtype=float), np.asarray(means, dtype=float)
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    return pi * means - pi * (pi @ means)


def _bandit_gradient_cases():
    rng = np.random.default_rng(0)
    return [
        Case("the lesson's bandit", (np.array([0.5, 0.0, -0.5]), np.array([1.0, 2.0, 3.0]))),
        Case("uniform policy, 4 arms", (np.zeros(4), rng.normal(size=4))),
        Case("all arms pay the same: gradient 0", (rng.normal(size=3), np.full(3, 2.0))),
    ]


def _bandit_gradient_explain(case, got, expected):
    z, means = case.args
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    if np.allclose(got, -expected):
        return "the sign is flipped: the score e_a - pi pushes the arm you pulled *up*"
    if np.allclose(got, pi * means):
        return ("you used e_a as the score; the score of a softmax is e_a - pi, and the - pi "
                "part is what makes arms that pay the same give gradient 0")
    return None


register(
    "bandit_policy_gradient", _bandit_gradient_reference, _bandit_gradient_cases,
    explain=_bandit_gradient_explain,
    hint="pi = softmax(z); sum over a of pi[a] * means[a] * (onehot(a) - pi)",
)


# ------------------------------------------------------------------ lesson 08: leave_one_out_weights


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
    long_mask = np.arange(6)[:, None] < lengths[None, :]
    return [
        Case("3 episodes of lengths 3, 2, 1", (returns, mask)),
        Case("all running, 2 episodes", (np.array([[4.0, 2.0], [1.0, 3.0]]), np.ones((2, 2), bool))),
        Case("5 episodes of random lengths", (np.where(long_mask, rng.normal(size=(6, 5)), 0.0),
                                              long_mask)),
    ]


def _leave_one_out_explain(case, got, expected):
    returns, mask = case.args
    got = np.asarray(got, dtype=float)
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
    return None


register(
    "leave_one_out_weights", _leave_one_out_reference, _leave_one_out_cases,
    explain=_leave_one_out_explain,
    hint="b[t, i] = (sum of G[t] over running episodes - G[t, i]) / (running - 1), 0 if alone",
)


# ------------------------------------------------------------------ lesson 08: corridor_episode_gradient


def _corridor_reference(went_right, p):
    went_right = np.asarray(went_right, dtype=bool)
    scores = np.where(went_right, 1.0 - p, -p)
    to_go = -np.arange(len(went_right), 0, -1, dtype=float)  # reward -1 per step, gamma 1
    return float(np.sum(scores * to_go))


def _corridor_cases():
    return [
        Case("straight to the goal: right, left, right", (np.array([True, False, True]), 0.5)),
        Case("a detour, p = 0.59", (np.array([True, True, False, True, False, True]), 0.59)),
        Case("one step back at the wall, p = 0.3", (np.array([False, True, False, True]), 0.3)),
    ]


def _corridor_explain(case, got, expected):
    went_right, p = case.args
    scores = np.where(went_right, 1.0 - p, -p)
    if np.isclose(got, -len(went_right) * scores.sum()):
        return ("you weighted every step by the whole return -T: step t only pays for the steps "
                "from t on, G_t = -(T - t)")
    if np.isclose(got, -expected):
        return "the sign is flipped: the return is -1 per step, so G_t is negative"
    if np.isclose(got, float(np.sum(np.where(went_right, p, p - 1.0)
                                    * -np.arange(len(went_right), 0, -1)))):
        return "d log p / d theta = 1 - p for right and d log(1 - p) / d theta = -p for left"
    return None


register(
    "corridor_episode_gradient", _corridor_reference, _corridor_cases, explain=_corridor_explain,
    hint="scores = (1 - p) if right else -p; G_t = -(T - t); sum of scores * G_t",
)
