"""Every public function survives bad input: a clear error naming the argument, never a hang, a
silent NaN or an obscure error from inside numpy.

Each public callable has a spec: a valid call, and the kind of each argument. The kinds expand
into the bad inputs a hostile user tries (NaN and inf, wrong shape, wrong dtype, complex,
booleans, strings, out-of-range values, non-positive counts, ...); each must raise ValueError or
TypeError whose message names the argument. The valid call itself must succeed, and
lists must be accepted wherever arrays are. A test enumerates ``rc.__all__``, so a new public
function without a spec fails.
"""

from __future__ import annotations

import importlib
import inspect
import re

import numpy as np
import pytest
from bad_input_kinds import EXTRA, KINDS, RNG, SHORT, F, ints_below, mdp2, uniform_rows, without

import rlcourse as rc

# The specs of the other modules live in one file per layer; this file holds the first ones
# and the tests.
GROUPS = [importlib.import_module(f"bad_input_{g}") for g in
          ("autodiff", "models", "core_search", "posttrain", "tabular", "algos", "viz")]

# ---------------------------------------------------------------------------------------------
# Specs: name -> (valid keyword arguments (a function, so arrays are fresh), kinds by argument)

SPECS: dict[str, tuple] = {
    # core.returns
    "discounted_returns": (lambda: dict(rewards=F(5, 2), terminated=np.zeros((5, 2), bool),
                                        truncated=np.zeros((5, 2), bool), gamma=0.9),
                           dict(rewards="floats", terminated="bools", truncated="bools",
                                gamma="unit")),
    "gae": (lambda: dict(rewards=F(5, 2), values=F(5, 2, seed=1), next_values=F(5, 2, seed=2),
                         terminated=np.zeros((5, 2), bool), truncated=np.zeros((5, 2), bool),
                         gamma=0.9, lam=0.9),
            dict(rewards="floats", values="floats", next_values="floats", terminated="bools",
                 truncated="bools", gamma="unit", lam="unit")),
    "n_step_return": (lambda: dict(rewards=F(4), values=F(5, seed=1), start=0, n=2, gamma=0.9),
                      dict(rewards="floats", values="floats", n="count", gamma="unit")),
    # core.distributions
    "categorical_sample": (lambda: dict(logits=F(3, 4), rng=RNG(0)),
                           dict(logits="logits", rng="rng")),
    "categorical_log_prob": (lambda: dict(logits=F(3, 4), actions=np.array([0, 3, 1])),
                             dict(logits="logits", actions=ints_below(4))),
    "categorical_entropy": (lambda: dict(logits=F(3, 4)), dict(logits="logits")),
    "categorical_probs": (lambda: dict(logits=F(3, 4)), dict(logits="logits")),
    "gaussian_log_prob": (lambda: dict(mean=F(3, 2), log_std=F(2), actions=F(3, 2, seed=1)),
                          dict(mean="floats", log_std=without("floats", SHORT, EXTRA),
                               actions="floats")),
    "gaussian_entropy": (lambda: dict(log_std=F(2)), dict(log_std=without("floats", SHORT, EXTRA))),
    # core.importance
    "importance_weights": (lambda: dict(target_probs=np.array([0.2, 0.8]),
                                        behavior_probs=np.array([0.5, 0.5]),
                                        actions=np.array([0, 1, 1])),
                           dict(target_probs="probs", behavior_probs="probs",
                                actions=ints_below(2, SHORT))),
    "importance_estimate": (lambda: dict(returns=F(4), weights=F(4, low=0.1, high=2.0)),
                            dict(returns="floats", weights="floats")),
    "effective_sample_size": (lambda: dict(weights=F(4, low=0.1, high=2.0)),
                              dict(weights=without("floats", SHORT, EXTRA))),
    # core.losses
    "ppo_clip_objective": (lambda: dict(ratio=F(4, low=0.5, high=1.5), advantages=F(4),
                                        clip=0.2),
                           dict(ratio="floats", advantages="floats", clip="unit")),
    "huber": (lambda: dict(x=F(4), delta=1.0),
              dict(x=without("floats", SHORT, EXTRA), delta="positive")),
    "preference_loss": (lambda: dict(r_chosen=F(4), r_rejected=F(4, seed=1)),
                        dict(r_chosen="floats", r_rejected="floats")),
    "dpo_loss": (lambda: dict(policy_chosen=F(4), policy_rejected=F(4, seed=1),
                              ref_chosen=F(4, seed=2), ref_rejected=F(4, seed=3), beta=0.1),
                 dict(policy_chosen="floats", policy_rejected="floats", ref_chosen="floats",
                      ref_rejected="floats", beta="positive")),
    "ipo_loss": (lambda: dict(policy_chosen=F(4), policy_rejected=F(4, seed=1),
                              ref_chosen=F(4, seed=2), ref_rejected=F(4, seed=3), tau=0.1),
                 dict(policy_chosen="floats", policy_rejected="floats", ref_chosen="floats",
                      ref_rejected="floats", tau="positive")),
    "grpo_advantages": (lambda: dict(rewards=F(6), group_size=3),
                        dict(rewards="floats", group_size="count")),
    "rloo_advantages": (lambda: dict(rewards=F(6), group_size=3),
                        dict(rewards="floats", group_size="count")),
    # core.nn and core.optim
    "orthogonal": (lambda: dict(shape=(3, 2), gain=1.0, seed=0), dict(gain="finite", seed="seed")),
    "linear_init": (lambda: dict(n_in=3, n_out=2, seed=0),
                    dict(n_in="count", n_out="count", seed="seed")),
    "mlp_init": (lambda: dict(sizes=[3, 4, 2], seed=0), dict(seed="seed")),
    "SGD": (lambda: dict(lr=0.1, momentum=0.5), dict(lr="nonneg", momentum="unit")),
    "Adam": (lambda: dict(lr=0.1, eps=1e-8), dict(lr="nonneg", eps="positive")),
    "clip_by_global_norm": (lambda: dict(grads={"w": F(3)}, max_norm=1.0),
                            dict(max_norm="positive")),
    "linear_schedule": (lambda: dict(start=1.0, end=0.0, duration=10),
                        dict(start="finite", end="finite", duration="positive")),
    # envs
    "CartPole": (lambda: dict(n=2, seed=0, max_steps=500),
                 dict(n="count", seed="seed", max_steps="count")),
    "Bandit": (lambda: dict(arms=3, n=2, seed=0), dict(arms="count", n="count", seed="seed")),
    "GridWorld": (lambda: dict(size=3, n=1, seed=0, slip=0.1),
                  dict(size="count", n="count", seed="seed", slip="unit")),
    "CliffWalking": (lambda: dict(n=1, seed=0, slip=0.0), dict(n="count", seed="seed", slip="unit")),
    # tabular
    "epsilon_greedy_probs": (lambda: dict(q=F(3, 4), epsilon=0.1),
                             dict(q=without("floats", SHORT, EXTRA), epsilon="unit")),
    "epsilon_greedy": (lambda: dict(q_row_or_table=F(3, 4), epsilon=0.1, rng=RNG(0)),
                       dict(q_row_or_table=without("floats", SHORT), epsilon="unit",
                            rng="rng")),
    "ucb_scores": (lambda: dict(Q=F(2, 3), N=np.ones((2, 3)), t=5, c=2.0),
                   dict(Q="floats", c="nonneg")),
    "td_target": (lambda: dict(reward=1.0, next_value=F(3), terminated=False, gamma=0.9),
                  dict(next_value=without("floats", SHORT, EXTRA), gamma="unit")),
    "n_step_target": (lambda: dict(rewards=F(3), bootstrap_value=0.5, terminated=False, gamma=0.9),
                      dict(rewards=without("floats", SHORT), gamma="unit")),
    "mc_returns": (lambda: dict(rewards=F(3), gamma=0.9),
                   dict(rewards=without("floats", SHORT), gamma="unit")),
    # search
    "uct_score": (lambda: dict(mean_values=F(3), visits=np.array([1, 2, 0]), parent_visits=3, c=2.0),
                  dict(mean_values="floats", c="nonneg")),
    # core.kl and core.tokens
    "kl_estimate": (lambda: dict(logp=F(3, 4, high=0.0), ref_logp=F(3, 4, seed=1, high=0.0),
                                 kind="k3"),
                    dict(logp="floats", ref_logp="floats")),
    "exact_kl": (lambda: dict(policy_logits=F(2, 3, 5), ref_logits=F(2, 3, 5, seed=1),
                              mask=np.ones((2, 4), bool)),
                 dict(policy_logits="logits", ref_logits="logits", mask="bools")),
    "token_log_probs": (lambda: dict(logits=F(2, 4, 5), tokens=np.array([[1, 2, 3, 4, 0]] * 2)),
                        dict(logits="logits", tokens=ints_below(5))),
    "sequence_log_prob": (lambda: dict(logits=F(2, 4, 5), tokens=np.array([[1, 2, 3, 4, 0]] * 2),
                                       mask=np.ones((2, 5), bool)),
                          dict(logits="logits", tokens=ints_below(5), mask="bools")),
    "reward_to_go": (lambda: dict(rewards=F(2, 3), mask=np.ones((2, 3), bool)),
                     dict(rewards="floats", mask="bools")),
    # core.importance
    "per_decision_estimate": (lambda: dict(rewards=F(4, 3), ratios=F(4, 3, low=0.5, high=2.0),
                                           gamma=0.9),
                              dict(rewards="floats", ratios="floats", gamma="unit")),
    "direct_method_estimate": (lambda: dict(target_probs=uniform_rows(4, 3), q_hat=F(4, 3)),
                               dict(target_probs="probs", q_hat="floats")),
    # tabular
    "lambda_returns": (lambda: dict(rewards=F(3), values=F(4, seed=1), terminated=True,
                                    gamma=0.9, lam=0.5),
                       dict(rewards="floats", values="floats", gamma="unit", lam="unit")),
    "expected_rewards": (lambda: dict(P=mdp2()[0], R=mdp2()[1]), dict(P="probs", R="floats")),
    "q_from_v": (lambda: dict(P=mdp2()[0], R=mdp2()[1], V=F(2), gamma=0.9),
                 dict(P="probs", R="floats", V="floats", gamma="unit")),
    "bellman_optimality_backup": (lambda: dict(P=mdp2()[0], R=mdp2()[1], V=F(2), gamma=0.9),
                                  dict(P="probs", R="floats", V="floats", gamma="unit")),
    "policy_evaluation_exact": (lambda: dict(P=mdp2()[0], R=mdp2()[1],
                                             policy=uniform_rows(2, 2), gamma=0.9),
                                dict(P="probs", R="floats", policy="probs", gamma="unit")),
    "value_iteration": (lambda: dict(P=mdp2()[0], R=mdp2()[1], gamma=0.9),
                        dict(P="probs", R="floats", gamma="unit")),
    "greedy": (lambda: dict(Q=F(2, 3)), dict(Q=without("floats", SHORT))),
    # algos
    "dqn_targets": (lambda: dict(rewards=F(4), terminated=np.zeros(4, bool),
                                 next_q_online=F(4, 2, seed=1), next_q_target=F(4, 2, seed=2),
                                 gamma=0.9),
                    dict(rewards="floats", terminated="bools", next_q_online="floats",
                         next_q_target="floats", gamma="unit")),
    "reinforce_weights": (lambda: dict(rewards=F(2, 3), mask=np.ones((2, 3), bool), gamma=0.9),
                          dict(rewards="floats", mask="bools", gamma="unit")),
    "explained_variance": (lambda: dict(values=F(5), returns=F(5, seed=1)),
                           dict(values="floats", returns="floats")),
    "softmax_score": (lambda: dict(logits=F(3, 4), actions=np.array([0, 3, 1])),
                      dict(logits="logits", actions=ints_below(4))),
    "dqn_sweep": (lambda: dict(envs=[rc.CartPole(), rc.CartPole()],
                               params=rc.mlp_init([4, 8, 2], seed=0), total_steps=24,
                               members=[dict(seed=0), dict(seed=1)], batch_size=4,
                               learning_starts=8, train_freq=8, gradient_steps=2),
                  dict(total_steps="count", batch_size="count", train_freq="count",
                       gradient_steps="count",
                       members=lambda valid: [("empty", []), ("no seed", [dict(lr=0.1)] * 2),
                                              ("a dict", dict(seed=0)),
                                              ("a bad gamma", [dict(seed=0, gamma=2.0)] * 2)],
                       envs=lambda valid: [("one env", rc.CartPole()),
                                           ("too few", [rc.CartPole()]),
                                           ("a string among them", [rc.CartPole(), "env"]),
                                           ("a tabular env", [rc.GridWorld(size=3)] * 2)],
                       params=lambda valid: [("another observation size", rc.mlp_init([3, 8, 2])),
                                             ("another number of actions", rc.mlp_init([4, 8, 3])),
                                             ("a string", "params"),
                                             ("NaN weights", [{"w": np.full((4, 2), np.nan),
                                                               "b": np.zeros(2)}])])),
    "reinforce_sweep": (lambda: dict(envs=[rc.CartPole(n=2, max_steps=6), rc.CartPole(n=2, max_steps=6)],
                                     params=rc.mlp_init([4, 8, 2], seed=0), total_steps=24,
                                     members=[dict(seed=0), dict(seed=1, baseline=False)],
                                     activation="tanh", max_steps=100, callbacks=None),
                        dict(total_steps="count", max_steps="count", callbacks=lambda valid: [
                                 ("one, not one per member", print), ("too few", [None])],
                             activation=lambda valid: [("an unknown name", "sigmoid"), ("None", None)],
                             members=lambda valid: [("empty", []), ("no seed", [dict(lr=0.1)] * 2),
                                                    ("a dict", dict(seed=0)),
                                                    ("a bad gamma", [dict(seed=0, gamma=2.0)] * 2),
                                                    ("a bad baseline", [dict(seed=0, baseline="mean")] * 2),
                                                    ("a critic baseline without a critic",
                                                     [dict(seed=0, baseline="value")] * 2)],
                             envs=lambda valid: [("one env", rc.CartPole(n=2)),
                                                 ("too few", [rc.CartPole(n=2)]),
                                                 ("a string among them", [rc.CartPole(n=2), "env"]),
                                                 ("different n", [rc.CartPole(n=2), rc.CartPole(n=3)]),
                                                 ("a tabular env", [rc.GridWorld(size=3, n=2)] * 2)],
                             params=lambda valid: [("another observation size", rc.mlp_init([3, 8, 2])),
                                                   ("another number of actions", rc.mlp_init([4, 8, 3])),
                                                   ("a string", "params"),
                                                   ("policies of different sizes",
                                                    [rc.mlp_init([4, 8, 2]), rc.mlp_init([4, 6, 2])]),
                                                   ("NaN weights", [{"w": np.full((4, 2), np.nan),
                                                                     "b": np.zeros(2)}])])),
    "action_gap": (lambda: dict(q=F(3, 4)), dict(q=without("floats", SHORT))),
    "value_ceiling": (lambda: dict(gamma=0.9, max_reward=1.0), dict(max_reward="finite")),
    # search
    "pass_at_k": (lambda: dict(n=10, c=np.array([0, 3, 10]), k=4),
                  dict(n="count", c=ints_below(11, SHORT), k="count")),
    # viz
    "moving_average": (lambda: dict(x=F(6), window=3),
                       dict(x=without("floats", SHORT), window="count")),
}

# Callables whose arguments are functions, environments, models or whole parameter trees, or
# which take no array input a user could get wrong: each is listed with why it has no spec here
# and where its input checks are tested instead.
EXEMPT: dict[str, str] = {
    "single_thread_blas": "a context manager with no arguments (tests/test_blas.py)",
    "keep_freed_memory": "takes no input a user could get wrong (tests/test_blas.py)",
}

def _merge(name):
    merged = dict(globals()[name])
    for group in GROUPS:
        part = getattr(group, name)
        overlap = set(merged) & set(part)
        assert not overlap, f"{group.__name__}.{name} repeats {sorted(overlap)}"
        merged.update(part)
    return merged


SPECS, EXEMPT = _merge("SPECS"), _merge("EXEMPT")


def public_callables() -> list[str]:
    names = []
    for name in rc.__all__:
        obj = getattr(rc, name)
        if not callable(obj):
            continue
        if inspect.isclass(obj) and (hasattr(obj, "_fields") or hasattr(obj, "__dataclass_fields__")):
            continue  # a result type: built by the library, not from user input
        names.append(name)
    return names


def bad_cases():
    for name, (make_valid, kinds) in sorted(SPECS.items()):
        for arg, kind in kinds.items():
            maker = KINDS[kind] if isinstance(kind, str) else kind
            for label, bad in maker(make_valid()[arg]):
                yield pytest.param(name, arg, bad, id=f"{name}-{arg}-{label}")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_valid_call_works_and_lists_are_accepted(name):
    make_valid, kinds = SPECS[name]
    getattr(rc, name)(**make_valid())
    as_lists = {k: (v.tolist() if isinstance(v, np.ndarray) and kinds.get(k) in
                    ("floats", "bools", "probs", "logits") else v) for k, v in make_valid().items()}
    getattr(rc, name)(**as_lists)


@pytest.mark.parametrize(("name", "arg", "bad"), list(bad_cases()))
def test_bad_input_raises_an_error_naming_the_argument(name, arg, bad):
    make_valid, _ = SPECS[name]
    kwargs = make_valid()
    kwargs[arg] = bad
    with np.errstate(all="raise"):
        with pytest.raises((ValueError, TypeError)) as err:
            getattr(rc, name)(**kwargs)
    assert re.search(rf"\b{re.escape(arg)}\b", str(err.value)), \
        f"{name}({arg}=...): the message does not name '{arg}': {err.value}"


def test_every_public_callable_has_bad_input_cases():
    missing = [n for n in public_callables() if n not in SPECS and n not in EXEMPT]
    assert not missing, f"public callables without a bad-input spec or an exemption: {missing}"


def test_every_spec_and_exemption_names_a_public_callable():
    public = set(public_callables())
    stale = sorted(n for n in set(SPECS) | set(EXEMPT) if n not in public)
    assert not stale, f"specs or exemptions of names that are not public callables: {stale}"
    assert not set(SPECS) & set(EXEMPT), "a name is both specified and exempt"
