"""The classic RL bugs, planted into the reference one at a time.

Each case patches one mistake into `rlcourse` itself (not into a copy) and runs the invariant
tests that guard it, taken from the module's own test file. The case passes only if those tests
now fail: proof that the invariant tests would catch the bug if someone wrote it.
"""

import importlib

import numpy as np
import pytest
import test_dqn
import test_envs
import test_llm
import test_ppo
import test_returns
import test_tabular

import rlcourse as rc
from rlcourse.core import autodiff as ad
from rlcourse.envs import LEFT, RIGHT, UP

ppo_module = importlib.import_module("rlcourse.algos.ppo")
dqn_module = importlib.import_module("rlcourse.algos.dqn")
returns_module = importlib.import_module("rlcourse.core.returns")
tabular_step = importlib.import_module("rlcourse.tabular._episodes")._step
kl_module = importlib.import_module("rlcourse.core.kl")
grid_module = importlib.import_module("rlcourse.viz.grid")


def plant(monkeypatch, module, name, fn):
    """Replace ``module.name`` by ``fn``, and the top-level ``rc.name`` too when it is the same
    function (tests call the public name, the library calls the module's)."""
    if getattr(rc, name, None) is getattr(module, name):
        monkeypatch.setattr(rc, name, fn)
    monkeypatch.setattr(module, name, fn)


def flipped_clip_direction(monkeypatch):
    """max instead of min: the pessimistic bound becomes an optimistic one."""
    monkeypatch.setattr(ppo_module, "ppo_clip_objective", lambda ratio, adv, clip: ad.maximum(
        ratio * adv, ad.clip(ratio, 1 - clip, 1 + clip) * adv))
    return [lambda: test_ppo.check_clip_direction(ppo_module.ppo_clip_objective),
            test_ppo.test_loss_blocks_the_policy_gradient_where_clipped]


def dropped_terminal_mask(monkeypatch):
    """GAE bootstraps V(next) even after a terminal step."""
    real = returns_module._gae
    monkeypatch.setattr(returns_module, "_gae", lambda r, v, nv, term, trunc, gamma, lam: real(
        r, v, nv, np.zeros_like(term), term | trunc, gamma, lam))
    return [test_returns.test_gae_matches_brute_force]


def truncation_treated_as_termination(monkeypatch):
    """A time limit zeroes the bootstrap, as if the pole had fallen."""
    real_gae, real_step = returns_module._gae, tabular_step
    monkeypatch.setattr(returns_module, "_gae", lambda r, v, nv, term, trunc, gamma, lam: real_gae(
        r, v, nv, term | trunc, trunc, gamma, lam))

    def step(env, buffer, action):
        s_next, r, terminated, truncated, s_final = real_step(env, buffer, action)
        return s_next, r, terminated or truncated, truncated, s_final

    test_tabular.patch_tabular(monkeypatch, "_step", step)
    return [test_returns.test_gae_matches_brute_force,
            test_tabular.test_truncation_bootstraps_from_final_obs]


def bootstrapping_through_a_terminal(monkeypatch):
    """TD targets add gamma * V(terminal state) (tabular) or gamma * Q(s') (DQN) after the end."""
    test_tabular.patch_tabular(monkeypatch, "_bootstrap", lambda value, terminated: value)
    real = dqn_module.dqn_targets
    plant(monkeypatch, dqn_module, "dqn_targets", lambda r, term, q_on, q_tgt, gamma, double=True: real(
        r, np.zeros_like(term), q_on, q_tgt, gamma, double))
    return [test_tabular.test_terminal_never_bootstraps,
            test_dqn.test_terminal_never_bootstraps_truncation_does]


def reversed_kl(monkeypatch):
    """KL(ref || pi) for the exact KL and the k3 estimator of the wrong direction."""
    real_kl, real_estimate = kl_module.exact_kl, kl_module.kl_estimate
    plant(monkeypatch, kl_module, "exact_kl", lambda p, ref, mask: real_kl(ref, p, mask))
    plant(monkeypatch, kl_module, "kl_estimate",
          lambda logp, ref_logp, kind="k1": real_estimate(ref_logp, logp, kind))
    return [test_llm.test_exact_kl_by_hand_and_direction,
            test_llm.test_k3_is_unbiased_for_kl_pi_ref_and_the_flipped_sign_is_caught]


def trace_crossing_an_episode_boundary(monkeypatch):
    """Eligibility traces are not cleared when an episode ends."""
    test_tabular.patch_tabular(monkeypatch, "_clear_traces", lambda traces: None)
    return [lambda: test_tabular.test_traces_stop_at_episode_ends("accumulating"),
            lambda: test_tabular.test_traces_stop_at_episode_ends("replacing")]


def policy_arrows_drawn_upside_down(monkeypatch):
    """Arrows drawn in (x, y) with y up, while the grid's rows run down the screen."""
    real = grid_module._draw_arrows

    def upside_down(env, ax, policy):
        flipped = np.asarray(policy).copy()
        ups, downs = flipped == UP, flipped == rc.envs.DOWN
        flipped[ups], flipped[downs] = rc.envs.DOWN, UP
        real(env, ax, flipped)

    monkeypatch.setattr(grid_module, "_draw_arrows", upside_down)
    return [lambda: test_envs.test_plot_arrows_point_the_way_the_action_moves(UP, (0, 1))]


def policy_arrows_mirrored(monkeypatch):
    """LEFT and RIGHT swapped when turning actions into arrows."""
    real = grid_module._draw_arrows

    def mirrored(env, ax, policy):
        swapped = np.asarray(policy).copy()
        lefts, rights = swapped == LEFT, swapped == RIGHT
        swapped[lefts], swapped[rights] = RIGHT, LEFT
        real(env, ax, swapped)

    monkeypatch.setattr(grid_module, "_draw_arrows", mirrored)
    return [lambda: test_envs.test_plot_arrows_point_the_way_the_action_moves(LEFT, (-1, 0))]


BUGS = [flipped_clip_direction, dropped_terminal_mask, truncation_treated_as_termination,
        bootstrapping_through_a_terminal, reversed_kl, trace_crossing_an_episode_boundary,
        policy_arrows_drawn_upside_down, policy_arrows_mirrored]


@pytest.mark.parametrize("plant", BUGS, ids=[b.__name__ for b in BUGS])
def test_invariant_tests_pass_on_the_reference(plant):
    with pytest.MonkeyPatch.context() as mp:
        invariant_tests = plant(mp)
    for invariant_test in invariant_tests:
        invariant_test()


@pytest.mark.parametrize("plant", BUGS, ids=[b.__name__ for b in BUGS])
def test_each_invariant_test_catches_the_planted_bug(plant, monkeypatch):
    import matplotlib.pyplot as plt

    for invariant_test in plant(monkeypatch):
        with pytest.raises(AssertionError):
            invariant_test()
    plt.close("all")
