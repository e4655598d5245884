"""Bad-input specs for rlcourse.core.importance, rlcourse.core.kl, rlcourse.core.losses,
rlcourse.core.sampling, rlcourse.core.tokens, rlcourse.search.mcts, rlcourse.search.minimax,
rlcourse.envs.tictactoe.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.
"""

from __future__ import annotations

import math

import numpy as np  # noqa: F401
from bad_input_kinds import EXTRA, KINDS, RNG, SHORT, F, ints_below, uniform_rows, without  # noqa: F401

from rlcourse.envs.tictactoe import TicTacToe, TicTacToeState

# ---------------------------------------------------------------------------------------------
# Kinds of this layer


def plus(kind, *extra):
    """``kind`` and then ``extra(valid)`` pairs, each a function of the valid value."""
    maker = KINDS[kind] if isinstance(kind, str) else kind
    return lambda valid: maker(valid) + [pair for fn in extra for pair in fn(valid)]


def _all_false(valid):
    return [("all False (no action token)", np.zeros(np.shape(valid), bool))]


def _extra_axis(valid):
    return [(EXTRA, np.asarray(valid)[..., None])]


def _negative(valid):
    arr = np.array(valid, dtype=np.float64)
    arr.flat[0] = -0.5
    return [("a negative entry", arr)]


def _outside_0_1(valid):
    zero, big = np.array(valid, dtype=np.float64), np.array(valid, dtype=np.float64)
    zero.flat[0], big.flat[-1] = 0.0, 1.5
    return [("a zero", zero), ("above 1", big)]


def choice(valid):
    """A name out of a fixed set (a loss type, an estimator)."""
    return [("an unknown name", "no_such_name"), ("None", None), ("a number", 1),
            ("a list", [valid])]


def flag(valid):
    """True or False, nothing else (a string "False" is true)."""
    return [("a string", "False"), ("None", None), ("an array", np.array([True, False]))]


def open_unit(valid):
    """A number strictly between 0 and 1 (a clip range)."""
    return [("zero", 0.0), ("one", 1.0), ("negative", -0.1), ("NaN", math.nan), ("inf", math.inf),
            ("a string", "0.2")]


def top_p(valid):
    return KINDS["unit"](valid) + [("zero", 0.0)]


def count0(valid):
    """A count that may be 0 (a depth, a visit count, a token id)."""
    return [("negative", -1), ("a float", 2.5), ("a bool", True), ("a string", "3"),
            ("None", None)]


def visit_counts(valid):
    return [(label, bad) for label, bad in KINDS["floats"](valid) if label != EXTRA] + _negative(valid)


def generator(valid):
    return [("an int", 0), ("a string", "rng"), ("a legacy RandomState", np.random.RandomState(0))]


def mapping(valid):
    return [("a list", []), ("a string", "cache"), ("a tuple", ())]


# ---- games: the five arguments of mcts and minimax (plain functions over immutable states)

GAME = TicTacToe()


def position(*moves):
    state = GAME.initial_state()
    for a in moves:
        state = GAME.apply(state, a)
    return state


def game_state(valid):
    return [("a terminal state", position(0, 3, 1, 4, 2)), ("a string", "X.O......"),
            ("None", None), ("a board of 8 cells", TicTacToeState((0,) * 8, 1))]


def _not_a_function(valid):
    return [("a string", "fn"), ("None", None), ("the game object", GAME)]


def legal_actions_kind(valid):
    return _not_a_function(valid) + [
        ("returns None", lambda s: None),
        ("returns no actions", lambda s: []),
    ]


def apply_kind(valid):
    return _not_a_function(valid) + [
        ("returns None (changed the state in place)", lambda s, a: None),
        ("never ends (returns its input)", lambda s, a: s),
    ]


def is_terminal_kind(valid):
    return _not_a_function(valid) + [
        ("never True (a game without terminal states)", lambda s: False),
        ("returns a string", lambda s: "no"),
    ]


def reward_kind(valid):
    return _not_a_function(valid) + [
        ("returns NaN", lambda s: math.nan),
        ("returns inf", lambda s: math.inf if GAME.winner(s) else 0.0),
        ("returns a string", lambda s: "win"),
        ("returns an array", lambda s: np.array([1.0, 0.0])),
    ]


def prior_kind(valid):
    return [("a string", "prior"), ("a list of probabilities", [0.2] * 5),
            ("returns the wrong length", lambda s: [1.0]),
            ("returns a negative probability", lambda s: -np.ones(len(GAME.legal_actions(s)))),
            ("returns NaN", lambda s: np.full(len(GAME.legal_actions(s)), np.nan))]


GAME_KINDS = dict(state=game_state, legal_actions=legal_actions_kind, apply=apply_kind,
                  is_terminal=is_terminal_kind, reward=reward_kind)


def game_args(*moves):
    return dict(state=position(*moves), legal_actions=GAME.legal_actions, apply=GAME.apply,
                is_terminal=GAME.is_terminal, reward=GAME.reward)


# ---------------------------------------------------------------------------------------------
# Specs


def _logp(*shape, seed=0):
    return F(*shape, low=-3.0, high=-0.1, seed=seed)


MASK_KIND = plus("bools", _all_false)
SAMPLING_LOGITS = plus("logits", _extra_axis)

SPECS: dict[str, tuple] = {
    # core.importance
    "doubly_robust_estimate": (
        lambda: dict(rewards=F(4), actions=np.array([0, 2, 1, 1]),
                     propensities=np.array([0.5, 0.2, 0.3, 0.9]), target_probs=uniform_rows(4, 3),
                     q_hat=F(4, 3, seed=1)),
        dict(rewards="floats", actions=ints_below(3), propensities=plus("floats", _outside_0_1),
             target_probs="probs", q_hat="floats")),
    "stepwise_doubly_robust_estimate": (
        lambda: dict(rewards=F(3, 4), ratios=F(3, 4, low=0.5, high=2.0, seed=1),
                     q_hat=F(3, 4, seed=2), v_hat=F(3, 4, seed=3), gamma=0.9,
                     mask=np.ones((3, 4), bool)),
        dict(rewards="floats", ratios=plus("floats", _negative), q_hat="floats", v_hat="floats",
             gamma="unit", mask="bools")),
    # core.kl
    "sampled_log_ratio": (
        lambda: dict(policy_logits=F(2, 3, 5), ref_logits=F(2, 3, 5, seed=1),
                     actions=np.array([[1, 2, 3, 4], [0, 4, 2, 1]]), mask=np.ones((2, 4), bool)),
        dict(policy_logits="logits", ref_logits="logits", actions=ints_below(5), mask=MASK_KIND)),
    "kl_penalized_rewards": (
        lambda: dict(scores=F(2), logp=_logp(2, 3), ref_logp=_logp(2, 3, seed=1),
                     mask=np.ones((2, 3), bool), beta=0.05, kind="k3"),
        dict(scores="floats", logp="floats", ref_logp="floats", mask=MASK_KIND, beta="nonneg",
             kind=choice)),
    # core.losses
    "ppo_clip_loss": (
        lambda: dict(logp=_logp(2, 3), old_logp=_logp(2, 3, seed=1), advantages=F(2, 3, seed=2),
                     mask=np.ones((2, 3), bool), clip=0.2, aggregate="sequence"),
        dict(logp="floats", old_logp="floats", advantages="floats", mask=MASK_KIND, clip=open_unit,
             aggregate=choice)),
    "grpo_loss": (
        lambda: dict(logp=_logp(2, 3), old_logp=_logp(2, 3, seed=1), ref_logp=_logp(2, 3, seed=2),
                     advantages=F(2, seed=3), mask=np.ones((2, 3), bool), clip=0.2, kl_coef=0.04,
                     aggregate="dr_grpo", max_completion_length=3, kl_correction=True),
        dict(logp="floats", old_logp="floats", ref_logp="floats", advantages="floats",
             mask=MASK_KIND, clip=open_unit, kl_coef="nonneg", aggregate=choice,
             max_completion_length="count", kl_correction=flag)),
    "aggregate_token_loss": (
        lambda: dict(per_token=F(2, 3), mask=np.ones((2, 3), bool), loss_type="dr_grpo",
                     max_completion_length=3),
        dict(per_token="floats", mask=MASK_KIND, loss_type=choice, max_completion_length="count")),
    # core.sampling
    "top_k_filter": (lambda: dict(logits=F(2, 5), k=2), dict(logits=SAMPLING_LOGITS, k="count")),
    "top_p_filter": (lambda: dict(logits=F(2, 5), p=0.5), dict(logits=SAMPLING_LOGITS, p=top_p)),
    "filter_logits": (
        lambda: dict(logits=F(2, 5), temperature=0.7, top_k=3, top_p=0.9),
        dict(logits=SAMPLING_LOGITS, temperature="positive", top_k="count", top_p=top_p)),
    "sample_token": (
        lambda: dict(logits=F(2, 5), rng=RNG(0), temperature=0.7, top_k=3, top_p=0.9),
        dict(logits=SAMPLING_LOGITS, rng="rng", temperature="positive", top_k="count",
             top_p=top_p)),
    # core.tokens
    "completion_mask": (
        lambda: dict(tokens=np.array([[5, 6, 7, 2, 0], [5, 6, 2, 0, 0]]),
                     prompt_len=np.array([2, 1]), eos=2),
        dict(tokens=plus("ints", lambda v: [("one axis", v[0])]), prompt_len=ints_below(6),
             eos=count0)),
    # search.mcts
    "puct_score": (
        lambda: dict(mean_values=F(3), priors=np.array([0.2, 0.5, 0.3]), visits=np.array([1, 2, 0]),
                     parent_visits=4, c=2.0),
        dict(mean_values="floats", priors=plus("floats", _negative), visits=visit_counts,
             parent_visits=count0, c="nonneg")),
    "mcts": (
        lambda: dict(**game_args(0, 3, 1, 4), simulations=30, c=2.0, rollout_depth=None, seed=0,
                     two_player=True, prior=None, rollout_limit=1000),
        dict(**GAME_KINDS, simulations="count", c="nonneg", rollout_depth=without(count0, "None"),
             seed="seed", two_player=flag, prior=prior_kind, rollout_limit="count")),
    # search.minimax
    "minimax_values": (lambda: dict(**game_args(0, 4, 1, 2), cache={}, depth_limit=20),
                       dict(**GAME_KINDS, cache=mapping, depth_limit="count")),
    "minimax_value": (lambda: dict(**game_args(0, 4, 1, 2), cache={}, depth_limit=20),
                      dict(**GAME_KINDS, cache=mapping, depth_limit="count")),
    "perfect_action": (lambda: dict(**game_args(0, 4, 1, 2), rng=RNG(0), cache={}, depth_limit=20),
                       dict(**GAME_KINDS, rng=generator, cache=mapping, depth_limit="count")),
}

EXEMPT: dict[str, str] = {
    "TicTacToe": "the constructor takes no arguments; its methods' bad states and actions are "
                 "checked in tests/test_tictactoe.py, and as the game functions given to mcts and "
                 "minimax by this file's game kinds",
}
