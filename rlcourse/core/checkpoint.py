"""Save a parameter tree to one ``.npz`` file and load it back exactly, with no pickle.

The file holds every leaf as a numeric array under a numbered key, plus ``__tree__``: the tree's
shape as JSON (dicts with their string keys, lists and tuples with their order, empty ones
included, and which leaves were Python scalars), so ``load_params(save_params(p))`` rebuilds
``p`` with the same containers, keys, shapes, dtypes and values. Anything that is not a nested
dict/list/tuple of numeric arrays and numbers is refused when saving, not pickled.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["save_params", "load_params"]

_FORMAT = "rlcourse-params-1"
_SCALARS = {bool: "bool", int: "int", float: "float"}


def _npz_path(path) -> Path:
    """``path`` with the ``.npz`` suffix numpy adds on saving, so save and load agree."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def _describe(node, arrays: list, where: str):
    if isinstance(node, dict):
        bad = [k for k in node if not isinstance(k, str)]
        if bad:
            raise TypeError(f"params: dict keys must be strings, got {bad[0]!r} at {where or 'the root'}")
        return {"dict": {k: _describe(v, arrays, f"{where}[{k!r}]") for k, v in node.items()}}
    if isinstance(node, (list, tuple)):
        kind = "list" if isinstance(node, list) else "tuple"
        return {kind: [_describe(v, arrays, f"{where}[{i}]") for i, v in enumerate(node)]}
    if type(node) in _SCALARS:
        arrays.append(np.asarray(node))
        return {"scalar": _SCALARS[type(node)], "key": str(len(arrays) - 1)}
    arr = np.asarray(node) if isinstance(node, (np.ndarray, np.generic)) else None
    if arr is None or arr.dtype.kind not in "biuf":
        what = type(node).__name__ if arr is None else f"an array of dtype {arr.dtype}"
        raise TypeError(f"params: leaves must be numeric arrays or numbers, got {what} at "
                        f"{where or 'the root'} (checkpoints never pickle objects)")
    arrays.append(arr)
    return {"array": str(len(arrays) - 1)}


def save_params(path: str | Path, params) -> Path:
    """Write ``params`` to ``path`` (``.npz`` is added if missing) and return the path written.

    ``params``: nested dicts (string keys), lists and tuples of numeric arrays and numbers;
    anything else raises ``TypeError`` before a file is written.
    """
    arrays: list[np.ndarray] = []
    tree = _describe(params, arrays, "")
    header = np.frombuffer(json.dumps({"format": _FORMAT, "tree": tree}).encode(), dtype=np.uint8)
    path = _npz_path(path)
    np.savez(path, __tree__=header, **{str(i): a for i, a in enumerate(arrays)})
    return path


def _build(node, data):
    if "dict" in node:
        return {k: _build(v, data) for k, v in node["dict"].items()}
    if "list" in node:
        return [_build(v, data) for v in node["list"]]
    if "tuple" in node:
        return tuple(_build(v, data) for v in node["tuple"])
    if "scalar" in node:
        kind = {v: k for k, v in _SCALARS.items()}[node["scalar"]]
        return kind(data[node["key"]].item())
    return data[node["array"]]


def load_params(path: str | Path):
    """Read a tree written by :func:`save_params` (the same ``path`` works for both).

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for a file that is not an
    ``rlcourse`` checkpoint or is damaged (truncated, empty, another format).
    """
    given = Path(path)
    path = given if given.is_file() else _npz_path(given)
    if not path.is_file():
        raise FileNotFoundError(f"path: no checkpoint at {given} (nor at {path})")
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["__tree__"].tobytes().decode())
            if not isinstance(header, dict) or header.get("format") != _FORMAT:
                raise ValueError("unknown format")
            return _build(header["tree"], {k: data[k] for k in data.files if k != "__tree__"})
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile,
            json.JSONDecodeError, UnicodeDecodeError) as err:
        # numpy's own messages can suggest allow_pickle=True, which a checkpoint never needs
        raise ValueError(f"path: {path} is not an rlcourse checkpoint written by save_params, "
                         f"or it is damaged ({type(err).__name__})") from None
