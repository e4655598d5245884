"""Input checks shared by the post-training trainers: language models, prompts, reward
functions and optimisers, each error naming the argument the caller passed (``policy``,
``ref``, ``prompts``, ``reward_fn``, ``opt_state``), not an internal one."""

from __future__ import annotations

import numpy as np

from ..core._checks import (
    as_float_array,
    as_int_array,
    check_callable,
    check_choice,
    check_count,
    check_flag,
    check_nonnegative,
    check_shape,
)
from ..core.autodiff import tree_leaves
from ..core.tokenizer import PAD
from ..core.transformer import TransformerConfig, transformer_config

__all__ = ["check_model", "check_models", "check_token_ids", "check_prompts", "check_rng", "check_clip",
           "check_flag", "check_choice", "check_token_id", "check_optimizer", "check_scores",
           "call_scorer", "check_scorer", "check_callback"]


def check_model(name: str, params) -> TransformerConfig:
    """The sizes of the language model ``params`` (``lm_init``): its tree, shapes, dtypes and
    finiteness checked, the error naming ``name`` (``policy``, ``ref``, ...)."""
    try:
        return transformer_config(params)
    except (ValueError, TypeError) as err:
        if name == "params":
            raise
        raise type(err)(f"{name}: {err}") from None


def check_models(**models) -> dict:
    """``check_model`` of each ``name=params``; all must share the first one's vocabulary."""
    configs = {name: check_model(name, params) for name, params in models.items()}
    (first, config), *rest = configs.items()
    for name, other in rest:
        if other.vocab != config.vocab:
            raise ValueError(f"{name}: expected the vocabulary of {first} ({config.vocab} tokens), "
                             f"got a model of {other.vocab}")
    return configs


def check_token_ids(name: str, tokens, config: TransformerConfig, model: str) -> np.ndarray:
    """Token ids ``[N, L]`` (N, L >= 1) in the vocabulary of ``model``, whose sizes are ``config``."""
    tokens = as_int_array(name, tokens, low=0)
    if tokens.ndim != 2 or 0 in tokens.shape:
        raise ValueError(f"{name}: expected token ids [N, L] with N, L >= 1, got shape {tokens.shape}")
    if tokens.max() >= config.vocab:
        raise ValueError(f"{name}: expected ids below {config.vocab}, the vocabulary of {model}, "
                         f"got {tokens.max()}")
    return tokens


def check_prompts(prompts, max_new, configs: dict) -> tuple[np.ndarray, int]:
    """``(prompts, max_new)`` checked against every model in ``configs`` (name -> sizes): ids in
    the vocabulary, and the longest prompt plus ``max_new`` sampled tokens within each context."""
    (first, config), = list(configs.items())[:1]
    prompts = check_token_ids("prompts", prompts, config, first)
    max_new = check_count("max_new", max_new)
    need = int((prompts != PAD).sum(axis=1).max()) + max_new
    for name, cfg in configs.items():
        if need > cfg.context:
            raise ValueError(f"{name}: its context of {cfg.context} tokens cannot hold prompts of "
                             f"up to {need - max_new} real tokens plus max_new={max_new}")
    return prompts, max_new


def check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__} {rng!r}")
    return rng


def check_clip(clip) -> float:
    """PPO's clip range: a number in (0, 1)."""
    clip = check_nonnegative("clip", clip)
    if not 0.0 < clip < 1.0:
        raise ValueError(f"clip: expected a number in (0, 1), got {clip}")
    return clip






def check_token_id(name: str, value, vocab: int | None = None) -> int:
    """A token id: an int >= 0, below ``vocab`` when it is known."""
    value = check_count(name, value, low=0)
    if vocab is not None and value >= vocab:
        raise ValueError(f"{name}: expected a token id below the vocabulary's {vocab}, got {value}")
    return value


def check_optimizer(opt, opt_state, params, name: str = "policy") -> None:
    """``opt`` an optimiser instance (``init`` and ``step``) and ``opt_state`` what
    ``opt.init(params)`` returns: every parameter-shaped part of it matches ``params``."""
    if isinstance(opt, type) or not all(callable(getattr(opt, m, None)) for m in ("init", "step")):
        raise TypeError(f"opt: expected an optimiser such as rc.Adam(lr=...), got {opt!r}")
    if not isinstance(opt_state, dict) or not opt_state:
        raise TypeError(f"opt_state: expected the dict opt.init({name}) returns, got "
                        f"{type(opt_state).__name__} {opt_state!r:.60}")
    shapes = [np.shape(leaf) for leaf in tree_leaves(params)]
    for key, part in opt_state.items():
        if isinstance(part, (dict, list, tuple)) and [np.shape(x) for x in tree_leaves(part)] != shapes:
            raise ValueError(f"opt_state: opt_state[{key!r}] does not have the shapes of {name}'s "
                             f"parameters; make it with opt.init({name})")


def check_scores(name: str, scores, batch: int) -> np.ndarray:
    """``scores``, what ``name(tokens, mask)`` returned (a reward function's or a metric's),
    checked to be one finite number per row of the ``batch``: ``[batch]`` floats."""
    label = f"{name}(tokens, mask)"
    values = as_float_array(label, scores, ndim=1)
    check_shape(label, values, (batch,), "the batch")
    return values


def call_scorer(name: str, fn, tokens, mask) -> np.ndarray:
    """``fn(tokens, mask)`` checked by ``check_scores``; ``name`` is the argument that gave ``fn``."""
    return check_scores(name, fn(tokens, mask), len(tokens))


def check_scorer(name: str, fn) -> None:
    check_callable(name, fn, 2, "a function (tokens, mask) -> [B] scores")


def check_callback(callback) -> None:
    if callback is not None:
        check_callable("callback", callback, 1, "None or a function info -> bool | None")
