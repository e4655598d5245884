"""Network builders for the deep-RL trainers: an actor-critic pair of tanh MLPs.

A model is a plain function ``model(params, obs)``; ``params`` a nested dict of arrays.
"""

from __future__ import annotations

import numpy as np

from ..core import autodiff as ad
from ..core._checks import as_float_array, as_rng, check_count, check_tree, float_dtype
from ..core.nn import mlp, mlp_init

__all__ = ["make_actor_critic", "actor_critic_model"]


def actor_critic_model(params: dict, obs):
    """``(logits [B, A], values [B])`` from separate ``params["actor"]`` and ``params["critic"]`` MLPs."""
    try:
        logits, values = mlp(params["actor"], obs), mlp(params["critic"], obs)
    except (KeyError, TypeError, ValueError, IndexError):
        _check_inputs(params, obs)  # names what does not fit: params or obs
        raise
    if _dtype(logits).kind != "f" or _dtype(values).kind != "f":  # complex params or obs
        _check_inputs(params, obs)
    return logits, ad.reshape(values, (-1,))


def _check_inputs(params, obs) -> None:
    """``params`` as make_actor_critic builds them (layers of finite real ``w``, ``b``) and
    ``obs`` finite real numbers whose last axis is the networks' input size."""
    if not isinstance(params, dict) or not {"actor", "critic"} <= set(params):
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params: expected {{'actor': [layers], 'critic': [layers]}} as "
                         f"make_actor_critic builds, got {got}")
    for net in ("actor", "critic"):
        layers = params[net]
        if not isinstance(layers, (list, tuple)) or not layers:
            raise ValueError(f"params[{net!r}]: expected a non-empty list of layers, got "
                             f"{type(layers).__name__}")
        for i, layer in enumerate(layers):
            if not isinstance(layer, dict) or not {"w", "b"} <= set(layer):
                raise ValueError(f"params[{net!r}][{i}]: expected a layer {{'w': ..., 'b': ...}}, "
                                 f"got {layer if not isinstance(layer, dict) else sorted(layer)}")
    check_tree("params", params, finite=True)  # real, finite leaves
    as_float_array("obs", obs)  # real and finite
    size = np.shape(ad.stop_gradient(params["actor"][0]["w"]))[0]
    if np.ndim(obs) < 1 or np.shape(obs)[-1] != size:
        raise ValueError(f"obs: expected [B, {size}] (the input size of params), got shape "
                         f"{np.shape(obs)}")


def _dtype(x) -> np.dtype:
    """The dtype of an array or a traced value (without converting it), else of ``asarray(x)``."""
    dtype = getattr(x, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else np.asarray(x).dtype


def make_actor_critic(obs_dim: int, num_actions: int, hidden=(64, 64), seed=0, dtype=np.float32):
    """``(model, params)``: separate tanh MLPs for actor and critic (no shared layers).

    Orthogonal init as in CleanRL/SB3: hidden layers gain sqrt(2), the actor's head 0.01 (so
    the first policy is close to uniform) and the critic's head 1.0. ``model`` is
    :func:`actor_critic_model`.
    """
    obs_dim, num_actions = check_count("obs_dim", obs_dim), check_count("num_actions", num_actions)
    if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
        raise TypeError(f"hidden: expected a sequence of layer widths such as (64, 64), got "
                        f"{type(hidden).__name__} {hidden!r}")
    hidden = [check_count(f"hidden[{i}]", h) for i, h in enumerate(hidden)]
    dtype = float_dtype("dtype", dtype)
    rng = as_rng(seed)
    sizes = [int(obs_dim), *[int(h) for h in hidden]]
    params = {
        "actor": mlp_init([*sizes, int(num_actions)], rng, out_scale=0.01, dtype=dtype),
        "critic": mlp_init([*sizes, 1], rng, out_scale=1.0, dtype=dtype),
    }
    return actor_critic_model, params
