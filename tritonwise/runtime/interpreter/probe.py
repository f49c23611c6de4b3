"""The dtypes of a payload's returned values, found by running it once on 0-d ones in Triton's
interpreter, as the generated kernel calls it: codegen leaves out needless casts, and the frontend
checks given outputs (FlagGems' frexp). Results are kept on disk (`remembered_value_dtypes`;
docs/decisions/probe-memo.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional, Sequence

import torch
import triton
import triton.language as tl

from ..._version import __version__
from ...codegen.spec import TRITON_DTYPES
from .. import cache, freeze
from ..arguments import int_class
from ..dispatch import INTERPRETER_LOCK
from .interpret import interpreted, interpreting


def value_dtypes(fn, inputs: Sequence[tuple]) -> Optional[tuple]:
    """The torch dtype of each value `fn` returns (None: cannot tell), for `inputs` as probe's callers give them."""
    try:
        with INTERPRETER_LOCK, interpreting():
            args = [_operand(value, dtype) for value, dtype in inputs]
            results = interpreted(fn)(*args)
    except Exception:
        return None
    results = results if isinstance(results, tuple) else (results,)
    torch_of = {getattr(tl, name): dtype for dtype, name in TRITON_DTYPES.items()}
    dtypes = tuple(torch_of.get(getattr(r, "dtype", None)) for r in results)
    return None if None in dtypes else dtypes


def _operand(value, dtype):
    """A 0-d probe value: 1 in a tensor input's dtype, else the scalar in `dtype` or as the kernel types it."""
    if isinstance(value, torch.dtype):
        value, dtype = 1, value
    if dtype is not None:
        return tl.full([], value, getattr(tl, TRITON_DTYPES[dtype]))
    if isinstance(value, bool):
        return tl.full([], value, tl.int1)
    if isinstance(value, int):
        return tl.full([], value, tl.int32 if int_class(value) is int else tl.int64)
    return tl.full([], value, tl.float32)


_UNKNOWN = object()


def remembered_value_dtypes(payload, inputs: tuple) -> Optional[tuple]:
    """value_dtypes(payload.fn, inputs), kept on disk per payload, inputs and versions (not frozen or interpreted)."""
    source_key = getattr(payload.jit, "cache_key", None)
    if source_key is None:
        return value_dtypes(payload.fn, inputs)
    described = repr(inputs)
    digest = hashlib.sha256(f"{source_key}|{described}|{triton.__version__}|{__version__}".encode())
    name = f"{cache.PROBES}/{digest.hexdigest()[:24]}.json"
    path = cache.find(name, Path.is_file)
    found = _read(path, described) if path is not None else _UNKNOWN
    if found is not _UNKNOWN:
        return found
    result = value_dtypes(payload.fn, inputs)
    if not freeze.is_frozen():
        dtypes = None if result is None else [str(d).removeprefix("torch.") for d in result]
        try:
            cache.write(name, json.dumps({"inputs": described, "dtypes": dtypes}))
        except OSError:
            pass  # nowhere to write: probe again in the next process
    return result


def _read(path: Path, described: str):
    """The remembered result, or _UNKNOWN for a file that is unreadable or for other inputs."""
    try:
        entry = json.loads(path.read_text())
        if entry["inputs"] != described:
            return _UNKNOWN
        if entry["dtypes"] is None:
            return None
        dtypes = tuple(getattr(torch, name) for name in entry["dtypes"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return _UNKNOWN
    return dtypes if all(isinstance(d, torch.dtype) for d in dtypes) else _UNKNOWN
