"""Network builders for the deep-RL trainers: an actor-critic pair of tanh MLPs.

A model is a plain function ``model(params, obs)``; ``params`` a nested dict of arrays.
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import as_rng
from ..core.nn import mlp, mlp_init

__all__ = ["make_actor_critic", "actor_critic_model"]


def actor_critic_model(params: dict, obs):
    """``(logits [B, A], values [B])`` from separate ``params["actor"]`` and ``params["critic"]`` MLPs."""
    return mlp(params["actor"], obs), ad.reshape(mlp(params["critic"], obs), (-1,))


def make_actor_critic(obs_dim: int, num_actions: int, hidden=(64, 64), seed=0, dtype=np.float32):
    """``(model, params)``: separate tanh MLPs for actor and critic (no shared layers).

    Orthogonal init as in CleanRL/SB3: hidden layers gain sqrt(2), the actor's head 0.01 (so
    the first policy is close to uniform) and the critic's head 1.0. ``model`` is
    :func:`actor_critic_model`.
    """
    rng = as_rng(seed)
    sizes = [int(obs_dim), *[int(h) for h in hidden]]
    params = {
        "actor": mlp_init([*sizes, int(num_actions)], rng, out_scale=0.01, dtype=dtype),
        "critic": mlp_init([*sizes, 1], rng, out_scale=1.0, dtype=dtype),
    }
    return actor_critic_model, params
