"""Save a parameter tree to one ``.npz`` file and load it back exactly, with no pickle.

The file holds every leaf as a numeric array under a numbered key, plus ``__tree__``: the tree's
shape as JSON (dicts with their string keys, lists and tuples with their order, empty ones
included, and which leaves were Python or numpy scalars), so ``load_params(save_params(p))`` rebuilds
``p`` with the same containers, keys, shapes, dtypes and values. Anything that is not a nested
dict/list/tuple of numeric arrays and numbers is refused when saving, not pickled.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

__all__ = ["save_params", "load_params"]

_FORMAT = "rlcourse-params-1"
_SCALARS = {bool: "bool", int: "int", float: "float"}


def _npz_path(path) -> Path:
    """``path`` with the ``.npz`` suffix numpy adds on saving, so save and load agree."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)) \
            or Path(path).name in ("", ".", ".."):
        raise TypeError(f"path: expected a file name (a str or Path ending in a name), got "
                        f"{type(path).__name__} {path!r:.40}")
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


_CONTAINERS = {dict: "dict", list: "list", tuple: "tuple"}


def _describe(node, arrays: list, where: str, parents: tuple = ()):
    """The JSON description of ``node``; its leaves are appended to ``arrays``."""
    here = where or "the root"
    if isinstance(node, (dict, list, tuple)):
        kind = _CONTAINERS.get(type(node))
        if kind is None:  # an OrderedDict, a NamedTuple...: it would come back as another type
            raise TypeError(f"params: containers must be plain dicts, lists and tuples, got "
                            f"{type(node).__name__} at {here}")
        if id(node) in parents:
            raise ValueError(f"params: the tree contains itself at {here}")
        parents = (*parents, id(node))
        if kind == "dict":
            bad = [k for k in node if not isinstance(k, str)]
            if bad:
                raise TypeError(f"params: dict keys must be strings, got {bad[0]!r} at {here}")
            return {"dict": {k: _describe(v, arrays, f"{where}[{k!r}]", parents)
                             for k, v in node.items()}}
        return {kind: [_describe(v, arrays, f"{where}[{i}]", parents) for i, v in enumerate(node)]}
    scalar = _SCALARS.get(type(node))
    if scalar is None and not isinstance(node, (np.ndarray, np.generic)):
        raise TypeError(f"params: leaves must be numeric arrays or numbers, got "
                        f"{type(node).__name__} at {here} (checkpoints never pickle objects)")
    arr = np.asarray(node)
    if arr.dtype.kind not in "biuf":
        what = "an int too large for int64 or uint64" if scalar == "int" else f"an array of dtype {arr.dtype}"
        raise TypeError(f"params: leaves must be numeric arrays or numbers, got {what} at "
                        f"{here} (checkpoints never pickle objects)")
    arrays.append(arr)
    if scalar is None and isinstance(node, np.generic):
        scalar = "numpy"  # a numpy scalar (np.float32(1.5)) comes back as one, not as a 0-d array
    return {"array": str(len(arrays) - 1)} if scalar is None else {"scalar": scalar,
                                                                   "key": str(len(arrays) - 1)}


def save_params(path: str | Path, params) -> Path:
    """Write ``params`` to ``path`` (``.npz`` is added if missing) and return the path written.

    ``params``: nested plain dicts (string keys), lists and tuples of numeric arrays (0-d
    too), numpy scalars and Python numbers; anything else (an object or string leaf, an int
    beyond int64, an OrderedDict or NamedTuple, which would come back as another type, a tree
    that contains itself) raises before a file is written. The file is written whole or not at
    all (a temporary file, then renamed).
    """
    arrays: list[np.ndarray] = []
    tree = _describe(params, arrays, "")
    header = np.frombuffer(json.dumps({"format": _FORMAT, "tree": tree}).encode(), dtype=np.uint8)
    path = _npz_path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"path: the folder {path.parent} does not exist")
    # written whole to a temporary file first, so a failed save never leaves half a checkpoint
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial.npz")
    try:
        np.savez(partial, __tree__=header, **{str(i): a for i, a in enumerate(arrays)})
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _build(node, data):
    if "dict" in node:
        return {k: _build(v, data) for k, v in node["dict"].items()}
    if "list" in node:
        return [_build(v, data) for v in node["list"]]
    if "tuple" in node:
        return tuple(_build(v, data) for v in node["tuple"])
    if "scalar" in node:
        if node["scalar"] == "numpy":
            return data[node["key"]][()]
        kind = {v: k for k, v in _SCALARS.items()}[node["scalar"]]
        return kind(data[node["key"]].item())
    return data[node["array"]]


def load_params(path: str | Path):
    """Read a tree written by :func:`save_params` (the same ``path`` works for both).

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for a file that is not an
    ``rlcourse`` checkpoint or is damaged (truncated, empty, another format).
    """
    written = _npz_path(path)  # what save_params(path, ...) wrote
    given = Path(path)
    path = written if written.is_file() else given
    if given.is_dir() and not written.is_file():
        raise ValueError(f"path: {given} is a folder, not a checkpoint written by save_params")
    if not path.is_file():
        raise FileNotFoundError(f"path: no checkpoint at {written} (nor at {given})")
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["__tree__"].tobytes().decode())
            if not isinstance(header, dict) or header.get("format") != _FORMAT:
                raise ValueError("unknown format")
            return _build(header["tree"], {k: data[k] for k in data.files if k != "__tree__"})
    except Exception as err:  # whatever a damaged file makes numpy, zipfile or json raise
        # numpy's own messages can suggest allow_pickle=True, which a checkpoint never needs
        raise ValueError(f"path: {path} is not an rlcourse checkpoint written by save_params, "
                         f"or it is damaged ({type(err).__name__})") from None
