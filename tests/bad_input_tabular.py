"""Bad-input specs for rlcourse.tabular.bandits, rlcourse.tabular.control, rlcourse.tabular.dp,
rlcourse.tabular.prediction, rlcourse.envs.gridworld, rlcourse.envs.gym_adapter,
rlcourse.envs.tabular.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

The learners take an environment, the bandit runner an agent, ``from_gymnasium`` a Gymnasium
env: their kinds are written here. Gymnasium is never imported: the Gymnasium envs are small
stand-ins with the attributes ``from_gymnasium`` reads.
"""

from __future__ import annotations

import math

import numpy as np  # noqa: F401
from bad_input_kinds import EXTRA, KINDS, RNG, SHORT, F, ints_below, mdp2, uniform_rows, without  # noqa: F401

import rlcourse as rc

# ---------------------------------------------------------------------------------------------
# Fixtures: a 2x2 grid (4 states, 4 actions, episodes of a few steps), the two-state MDP with its
# second state terminal.

S, A = 4, 4


def grid(**kw):
    return rc.GridWorld(size=2, seed=0, **kw)


def uniform_policy():
    return uniform_rows(S, A)


def terminal2():
    return np.array([False, True])


# ---------------------------------------------------------------------------------------------
# Kinds of this layer's arguments


def _not_an_env():
    return [("not an env", object()), ("a string", "GridWorld"), ("None", None),
            ("the class, not an instance", rc.GridWorld), ("an int", 3)]


def _tabular_env(copies_ok):
    """An environment a tabular learner needs: integer states (``num_states``); one copy unless
    the learner runs copies in lockstep."""
    def bads(valid):
        out = _not_an_env() + [("CartPole (no states to tabulate)", rc.CartPole(n=1, seed=0)),
                               ("a Bandit (no states)", rc.Bandit(arms=4, n=1, seed=0)),
                               ("a Gymnasium env (no states)", rc.from_gymnasium(_GymEnv()))]
        if not copies_ok:
            out.append(("n = 2 copies", grid(n=2)))
        return out
    return bads


ONE_COPY_ENV, COPIES_ENV = _tabular_env(False), _tabular_env(True)


def _step_sizes(valid):
    """``alpha``: a step size in (0, 1], or a 1-D array of them."""
    return [("None", None), ("zero", 0.0), ("negative", -0.1), ("above 1", 1.5),
            ("NaN", math.nan), ("inf", math.inf), ("a string", "0.1"), ("a bool", True),
            ("complex", 0.1 + 0j), ("2-D", np.full((1, 1), 0.1)), ("empty", np.zeros(0)),
            ("an array with NaN", np.array([0.1, math.nan]))]


def _copy_step_sizes(valid):
    """``alpha`` of TD control: a step size, or one per copy ``[n]`` of the environment."""
    return _step_sizes(valid) + [("three step sizes for one copy", np.full(3, 0.1))]


def _epsilon(valid):
    """``epsilon``: a number in [0, 1] or a schedule ``[episodes]``."""
    return KINDS["unit"](valid) + [
        ("a bool", True), ("inf", math.inf), ("complex", 0.1 + 0j), ("None", None),
        ("a schedule one episode short", np.full(1, 0.1)),
        ("a schedule with NaN", np.array([0.1, math.nan])),
        ("a schedule above 1", np.array([0.1, 1.5])),
        ("a schedule of bools", np.array([True, False]))]


def _scalar_unit(valid):
    """gamma, lam, slip: a number in [0, 1] (bools and arrays are not numbers)."""
    return KINDS["unit"](valid) + [("a bool", True), ("inf", math.inf), ("None", None),
                                   ("complex", 0.5 + 0j), ("an array", np.array([0.5, 0.5]))]


def _agent_seed(valid):
    """The seed of a learner's run: it also seeds the environment, so an int, not a Generator."""
    return KINDS["seed"](valid) + [("a bool", True), ("None", None), ("a Generator", RNG(0))]


def _flag(valid):
    """A yes/no setting: a bool (strings such as "False" would read as True)."""
    return [("a string", "False"), ("None", None), ("an int 2", 2), ("a float", 0.5),
            ("an array", np.array([True, False]))]


def _choice(*choices):
    def bads(valid):
        return [("unknown", "bogus"), ("None", None), ("an int", 1), ("a list", [choices[0]]),
                ("an array", np.array(list(choices))), ("wrong case", choices[0].upper())]
    return bads


def _max_steps(valid):
    """None (no limit) or a positive int."""
    return KINDS["count"](valid) + [("inf", math.inf)]


def _policy_table(valid):
    """``policy [S, A]`` probabilities of a learner, S and A from the env."""
    arr = np.asarray(valid, dtype=np.float64)
    return KINDS["probs"](valid) + [
        ("strings", arr.astype(str)), ("[S] actions", np.zeros(arr.shape[0], dtype=np.int64)),
        ("one row short", arr[:-1]), ("one action short", arr[:, :-1] / arr[:, :-1].sum(1, keepdims=True)),
        ("an extra axis", arr[..., None]), ("objects", np.array([object()] * arr.size, dtype=object)),
        ("+inf", np.where(np.arange(arr.size).reshape(arr.shape) == 0, np.inf, arr))]


def _dp_policy(valid):
    """``policy``: ``[S]`` actions or ``[S, A]`` probabilities (S, A from P)."""
    arr = np.asarray(valid, dtype=np.float64)
    S_, A_ = arr.shape
    return without(_policy_table, "[S] actions")(valid) + [
        ("[S] actions out of range", np.full(S_, A_)), ("[S] negative actions", np.full(S_, -1)),
        ("[S] float actions", np.full(S_, 0.5)), ("[S] actions one short", np.zeros(S_ - 1, int)),
        ("[S] bool actions", np.zeros(S_, bool))]


def _transitions(valid):
    """``P [S, A, S]``: probabilities, square in the states."""
    arr = np.asarray(valid, dtype=np.float64)
    return KINDS["probs"](valid) + [
        ("strings", arr.astype(str)), ("an extra axis", arr[..., None]),
        ("one row short", arr[:-1]), ("not square (one next state short)", arr[..., :1]),
        ("2-D", arr[0]), ("+inf", np.where(arr == arr.max(), np.inf, arr)),
        ("objects", np.array([object()] * arr.size, dtype=object)), ("no actions", arr[:, :0])]


def _rewards(valid):
    """``R [S, A, S]`` or ``[S, A]``, finite reals."""
    return KINDS["floats"](valid) + [("one action short", np.asarray(valid)[:, :-1])]


def _terminal(valid):
    return KINDS["bools"](valid) + [("one state too many", np.append(valid, False)),
                                    ("NaN", np.array([0.0, math.nan])), ("None-filled", [None, None])]


def _env_terminal(valid):
    """An environment's ``terminal [S]``: needed, and some state must not be terminal."""
    return _terminal(valid) + [("None", None), ("every state terminal", np.ones(2, bool))]


def _env_seed(valid):
    """An environment's seed: None or a non-negative int."""
    return KINDS["seed"](valid) + [("a bool", True), ("a Generator", RNG(0)), ("inf", math.inf)]


def _start(valid):
    """``start [S]``: a distribution over the non-terminal states."""
    arr = np.asarray(valid, dtype=np.float64)
    return KINDS["probs"](valid) + [
        ("mass on a terminal state", np.array([0.5, 0.5])), ("one state short", arr[:1]),
        ("an extra axis", arr[:, None]), ("strings", arr.astype(str)), ("inf", np.array([np.inf, 0]))]


def _bandit_env(valid):
    return _not_an_env() + [("a GridWorld", grid()), ("CartPole", rc.CartPole(n=2, seed=0)),
                            ("a Bandit with other arms", rc.Bandit(arms=4, n=2, seed=0)),
                            ("a Bandit with other copies", rc.Bandit(arms=3, n=3, seed=0))]


def _bandit_agent(valid):
    return [("not an agent", object()), ("a string", "EpsilonGreedy"), ("None", None),
            ("the class, not an instance", rc.EpsilonGreedy),
            ("an agent with other arms", rc.EpsilonGreedy(arms=4, n=2)),
            ("an agent with other copies", rc.UCB(arms=3, n=1))]


def _initial_value(valid):
    return KINDS["finite"](valid) + [("a bool", True), ("complex", 1j), ("an array", np.zeros(3)),
                                     ("None", None)]


def _step_size_or_none(valid):
    return [("zero", 0.0), ("negative", -0.1), ("above 1", 1.5), ("NaN", math.nan),
            ("a string", "0.1"), ("a bool", True)]


def _scalar_coefficient(kind):
    return lambda valid: KINDS[kind](valid) + [("a bool", True), ("None", None),
                                               ("an array", np.array([1.0, 2.0]))]


def _layout(valid):
    return [("empty", []), ("an empty row", [""]), ("ragged rows", ["SF", "F"]),
            ("an unknown cell", ["SX", "FG"]), ("no start", ["FF", "FG"]), ("an int", 3),
            ("a list of ints", [1, 2]), ("a dict", {"S": 1})]


def _map_name(valid):
    return [("unknown", "5x5"), ("None", None), ("an int", 4), ("a list", ["4x4"]),
            ("wrong case", "4X4")]


# --- Gymnasium stand-ins (gymnasium itself is optional and never imported here)


class _Space:
    def __init__(self, shape=(), n=None):
        self.shape = shape
        if n is not None:
            self.n = n


class _GymEnv:
    """The attributes of a ``gymnasium.Env`` that ``from_gymnasium`` reads."""

    def __init__(self, action_space=None, observation_space=None):
        self.action_space = _Space(n=2) if action_space is None else action_space
        self.observation_space = _Space((4,)) if observation_space is None else observation_space

    def reset(self, seed=None):
        return np.zeros(4), {}

    def step(self, action):
        return np.zeros(4), 1.0, True, False, {}


class _GymVectorEnv:
    """A ``gymnasium.vector.VectorEnv`` stand-in with next-step autoreset (Gymnasium's default)."""

    num_envs = 2
    metadata = {"autoreset_mode": "NEXT_STEP"}
    single_action_space = _Space(n=2)
    single_observation_space = _Space((4,))

    def reset(self, seed=None):
        return np.zeros((2, 4)), {}

    def step(self, actions):
        return np.zeros((2, 4)), np.ones(2), np.zeros(2, bool), np.zeros(2, bool), {}


def _vector_env(**attrs):
    """A same-step-autoreset vector env stand-in with ``attrs`` changed."""
    env = _GymVectorEnv()
    env.metadata = {"autoreset_mode": "SAME_STEP"}
    for k, v in attrs.items():
        setattr(env, k, v)
    return env


def _gym_env(valid):
    return _not_an_env() + [
        ("our own CartPole", rc.CartPole(n=1, seed=0)),
        ("a continuous action space", _GymEnv(action_space=_Space((1,)))),
        ("a vector env with next-step autoreset", _GymVectorEnv()),
        ("a vector env without metadata", _vector_env(metadata=None)),
        ("a vector env of 0 copies", _vector_env(num_envs=0)),
        ("a vector env with num_envs a string", _vector_env(num_envs="2")),
        ("an action space of 0 actions", _GymEnv(action_space=_Space(n=0))),
        ("no observation space", type("NoObs", (), {"action_space": _Space(n=2), "reset": None,
                                                    "step": None})())]


# ---------------------------------------------------------------------------------------------
# Specs

_LEARNER = dict(episodes="count", seed=_agent_seed)
_PREDICTION = dict(env=ONE_COPY_ENV, policy=_policy_table, gamma=_scalar_unit, **_LEARNER)
_TD_CONTROL = dict(env=COPIES_ENV, alpha=_copy_step_sizes, gamma=_scalar_unit, epsilon=_epsilon,
                   init="floats", **_LEARNER)


def _control_valid():
    return dict(env=grid(max_steps=50), episodes=2, alpha=0.5, gamma=0.9, epsilon=0.2, seed=0,
                init=F(S, A))


def _prediction_valid(**extra):
    return lambda: dict(env=grid(max_steps=50), policy=uniform_policy(), episodes=2, gamma=0.9,
                        seed=0, init=F(S), **extra)


def _dp_valid(**extra):
    return lambda: dict(P=mdp2()[0], R=mdp2()[1], terminal=terminal2(), **extra)


_DP_MODEL = dict(P=_transitions, R=_rewards, terminal=_terminal)

SPECS: dict[str, tuple] = {
    # bandits
    "EpsilonGreedy": (lambda: dict(arms=3, n=2, epsilon=0.1, initial=0.0, step_size=0.1),
                      dict(arms="count", n="count", epsilon=_scalar_unit, initial=_initial_value,
                           step_size=_step_size_or_none)),
    "UCB": (lambda: dict(arms=3, n=2, c=2.0),
            dict(arms="count", n="count", c=_scalar_coefficient("nonneg"))),
    "GradientBandit": (lambda: dict(arms=3, n=2, alpha=0.1, baseline=True),
                       dict(arms="count", n="count", alpha=_scalar_coefficient("positive"),
                            baseline=_flag)),
    "run_bandit": (lambda: dict(env=rc.Bandit(arms=3, n=2, seed=0), agent=rc.EpsilonGreedy(3, 2),
                                steps=3, seed=0),
                   dict(env=_bandit_env, agent=_bandit_agent, steps="count", seed=_agent_seed)),
    # control
    "mc_control": (lambda: dict(env=grid(max_steps=50), episodes=2, gamma=0.9, epsilon=0.2,
                                first_visit=True, seed=0, alpha=0.5, init=F(S, A)),
                   dict(env=ONE_COPY_ENV, gamma=_scalar_unit, epsilon=_epsilon,
                        first_visit=_flag, alpha=without(_copy_step_sizes, "None"),
                        init="floats", **_LEARNER)),
    "q_learning": (_control_valid, _TD_CONTROL),
    "sarsa": (_control_valid, _TD_CONTROL),
    "expected_sarsa": (_control_valid, _TD_CONTROL),
    "double_q_learning": (_control_valid, _TD_CONTROL),
    # prediction
    "mc_prediction": (_prediction_valid(first_visit=True, alpha=0.5),
                      dict(_PREDICTION, first_visit=_flag, alpha=without(_step_sizes, "None"),
                           init="floats")),
    "td0": (_prediction_valid(alpha=0.5),
            dict(_PREDICTION, alpha=_step_sizes, init="floats")),
    "n_step_td": (_prediction_valid(alpha=0.5, n=2),
                  dict(_PREDICTION, alpha=_step_sizes, n="count", init="floats")),
    "td_lambda": (_prediction_valid(alpha=0.5, lam=0.5, traces="replacing"),
                  dict(_PREDICTION, alpha=_step_sizes, lam=_scalar_unit, init="floats",
                       traces=_choice("accumulating", "replacing"))),
    "record_episodes": (lambda: dict(env=grid(max_steps=50), policy=uniform_policy(), episodes=2,
                                     seed=0),
                        dict(env=ONE_COPY_ENV, policy=_policy_table, **_LEARNER)),
    # dynamic programming
    "policy_dynamics": (_dp_valid(policy=uniform_rows(2, 2)),
                        dict(_DP_MODEL, policy=_dp_policy)),
    "policy_evaluation": (_dp_valid(policy=uniform_rows(2, 2), gamma=0.9, tol=1e-8, max_iters=500,
                                    method="iterative", return_history=True),
                          dict(_DP_MODEL, policy=_dp_policy, gamma=_scalar_unit,
                               tol=_scalar_coefficient("positive"), max_iters="count",
                               method=_choice("iterative", "linear"), return_history=_flag)),
    "policy_iteration": (_dp_valid(gamma=0.9, policy=np.array([1, 0]), max_iters=10,
                                   return_history=True),
                         dict(_DP_MODEL, gamma=_scalar_unit, policy=ints_below(2),
                              max_iters="count", return_history=_flag)),
    # environments
    "check_mdp": (_dp_valid(), _DP_MODEL),
    "TabularMDP": (_dp_valid(start=np.array([1.0, 0.0]), n=2, seed=0, max_steps=5),
                   dict(_DP_MODEL, terminal=_env_terminal, start=_start, n="count", seed=_env_seed,
                        max_steps=_max_steps)),
    "FrozenLake": (lambda: dict(map_name="4x4", is_slippery=True, n=1, seed=0, max_steps=10,
                                layout=None),
                   dict(map_name=_map_name, is_slippery=_flag, n="count", seed=_env_seed,
                        max_steps=_max_steps, layout=_layout)),
    "from_gymnasium": (lambda: dict(env=_GymEnv()), dict(env=_gym_env)),
}

EXEMPT: dict[str, str] = {}
