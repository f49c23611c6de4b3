"""The dtypes of a payload's returned values, found by running it once on 0-d values in Triton's
interpreter (on the host, whatever the device of the call).

Used only where a given output cannot hold its promotion's result under torch's casting rule:
FlagGems' frexp declares DEFAULT (float) for its int32 exponent output. The payload is called as
the generated kernel calls it -- tensors at their computation dtype, scalars as the kernel
receives them -- on ones. About a millisecond, once per launch plan, and only on that path.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from ..codegen.spec import TRITON_DTYPES
from .arguments import int_class
from .dispatch import INTERPRETER_LOCK
from .interpret import interpreted, interpreting


def value_dtypes(fn, inputs: Sequence[tuple]) -> Optional[tuple]:
    """The torch dtype of each value the plain Python payload `fn` returns, or None when it
    cannot be told (the payload fails on ones, returns a python number, a dtype torch lacks).
    `inputs`: per argument (torch dtype, None) for a tensor, (value, computation dtype or None)
    for a scalar."""
    import triton.language as tl

    try:
        with INTERPRETER_LOCK, interpreting():
            args = [_operand(tl, value, dtype) for value, dtype in inputs]
            results = interpreted(fn)(*args)
    except Exception:
        return None
    results = results if isinstance(results, tuple) else (results,)
    torch_of = {getattr(tl, name): dtype for dtype, name in TRITON_DTYPES.items()}
    dtypes = tuple(torch_of.get(getattr(r, "dtype", None)) for r in results)
    return None if None in dtypes else dtypes


def _operand(tl, value, dtype):
    if isinstance(value, torch.dtype):
        return tl.full([], 1, getattr(tl, TRITON_DTYPES[value]))
    if dtype is not None:
        return tl.full([], value, getattr(tl, TRITON_DTYPES[dtype]))
    if isinstance(value, bool):
        return tl.full([], value, tl.int1)
    if isinstance(value, int):
        return tl.full([], value, tl.int32 if int_class(value) is int else tl.int64)
    return tl.full([], value, tl.float32)
