"""Exercises of lessons 07-08: DQN targets, the reward-to-go, the softmax score.

Each ``explain`` recomputes the answer with one typical mistake and, if the reader's output
matches it, names that mistake in the lesson's terms.
"""

import numpy as np

from ..algos.dqn import dqn_targets
from ..algos.reinforce import softmax_score
from ..exercises import Case, register


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
