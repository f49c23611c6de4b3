"""Other libraries' StridedBuffers (FlagGems' flag_gems.utils.tensor_wrapper) run as tritonwise's
own: recognised by what they offer (no tensor; `unwrap()`, `shape`, `stride()`, `dtype`, `offset`),
run on a tritonwise StridedBuffer over the same memory; a given output comes back as the object
given.
"""

from __future__ import annotations

import torch

from ..frontend import validation
from ..strided_buffer import StridedBuffer

_FIELDS = ("shape", "stride", "dtype", "offset")


def is_foreign(obj) -> bool:
    if isinstance(obj, (torch.Tensor, StridedBuffer)) or not callable(getattr(obj, "unwrap", None)):
        return False
    return all(hasattr(obj, name) for name in _FIELDS)


def _own(obj):
    if not is_foreign(obj):
        return obj
    base = obj.unwrap()
    if not isinstance(base, torch.Tensor):
        raise TypeError(f"a {type(obj).__name__}'s unwrap() must give a torch.Tensor, got {type(base).__name__}")
    return StridedBuffer(base, tuple(obj.shape), tuple(obj.stride()), obj.dtype, obj.offset)


def call(function, args: tuple, outs: tuple):
    """`function(*args, out0=..., ...)` on tritonwise's own buffers; given outputs come back as the objects given."""
    result = function(*map(_own, args), **validation.output_keywords(tuple(map(_own, outs))))
    return validation.given_or(result, outs)
