"""Torch's elementwise type promotion, applied per output over the arguments it names.

`elementwise_dtypes` follows `torch._prims_common.elementwise_dtypes` rule for rule (a test compares
the two); restated because torch's imports sympy on its first call.
"""

from __future__ import annotations

from numbers import Number
from typing import Sequence

import torch
from torch._prims_common import (
    ELEMENTWISE_TYPE_PROMOTION_KIND,
    corresponding_complex_dtype,
    corresponding_real_dtype,
    dtype_to_type,
    get_computation_dtype,
    get_higher_dtype,
    get_higher_type,
    is_boolean_dtype,
    is_complex_dtype,
    is_float_dtype,
    is_integer_dtype,
)

__all__ = ["ELEMENTWISE_TYPE_PROMOTION_KIND", "elementwise_dtypes", "promote"]
KIND = ELEMENTWISE_TYPE_PROMOTION_KIND


def promote(method: tuple, args: Sequence) -> tuple:
    """(computation dtype, result dtype) of one output for a canonical `(i, j, ..., KIND)` `method`."""
    *indices, kind = method
    return elementwise_dtypes([args[i] for i in indices], kind)


def elementwise_dtypes(operands: Sequence, kind: ELEMENTWISE_TYPE_PROMOTION_KIND) -> tuple:
    """(computation dtype, result dtype) over python numbers and anything with `.dtype` and `.ndim`."""
    highest = bool
    for x in operands:
        highest = get_higher_type(highest, type(x) if isinstance(x, Number) else dtype_to_type(x.dtype))
    tensors = [x for x in operands if not isinstance(x, Number)]
    if highest is float:
        result = _highest_dtype(tensors, is_float_dtype) or torch.get_default_dtype()
    elif highest is complex:
        result = _highest_dtype(tensors, lambda d: is_float_dtype(d) or is_complex_dtype(d), as_complex=True)
        result = result or corresponding_complex_dtype(torch.get_default_dtype())
    elif highest is int:
        result = _highest_dtype(tensors, is_integer_dtype) or torch.long
    else:
        result = torch.bool
    return _apply_kind(result, kind)


def _highest_dtype(tensors: list, keep, as_complex: bool = False):
    """The highest dtype `keep` accepts among sized tensors, else among 0-d ones, else None."""
    zero_dim = sized = None
    for t in tensors:
        if keep(t.dtype):
            dtype = corresponding_complex_dtype(t.dtype) if as_complex and is_float_dtype(t.dtype) else t.dtype
            if t.ndim == 0:
                zero_dim = get_higher_dtype(zero_dim, dtype)
            else:
                sized = get_higher_dtype(sized, dtype)
    return sized if sized is not None else zero_dim


def _apply_kind(result: torch.dtype, kind) -> tuple:
    if kind is KIND.NO_OPMATH:
        return result, result
    if kind is KIND.INT_TO_FLOAT and (is_integer_dtype(result) or is_boolean_dtype(result)):
        result = torch.get_default_dtype()
    if kind is KIND.COMPLEX_TO_FLOAT:
        compute = get_computation_dtype(result)
        return compute, corresponding_real_dtype(result) if is_complex_dtype(result) else result
    if kind is KIND.BOOL_TO_LONG and is_boolean_dtype(result):
        return torch.long, torch.long
    if kind is KIND.ALWAYS_BOOL:
        return get_computation_dtype(result), torch.bool
    if kind in (KIND.DEFAULT, KIND.INT_TO_FLOAT, KIND.BOOL_TO_LONG):
        return get_computation_dtype(result), result
    raise ValueError(f"Unknown type promotion kind {kind}")
