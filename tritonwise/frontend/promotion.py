"""Torch's elementwise type promotion, applied per output over the arguments it names.

`elementwise_dtypes` gives `torch._prims_common.elementwise_dtypes`' answer (a test compares the
two), computed as torch's own ops compute their result dtype (c10's ResultTypeState): sized
tensors, 0-d tensors and python numbers each promoted among themselves, then across those groups.
Restated because torch's imports sympy on its first call. torch.promote_types refuses the dtypes
torch promotes with no other (UNPROMOTABLE), as torch's ops do and the prims' rules do not.
"""

from __future__ import annotations

from numbers import Number
from typing import Sequence

import torch
from torch._prims_common import (
    ELEMENTWISE_TYPE_PROMOTION_KIND,
    corresponding_complex_dtype,
    corresponding_real_dtype,
    get_computation_dtype,
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
    try:
        return elementwise_dtypes([args[i] for i in indices], kind)
    except RuntimeError as refused:
        raise RuntimeError(f"inputs {', '.join(map(str, indices))}: {refused}") from None


# Dtypes torch promotes with no other dtype (torch.promote_types raises): its ops refuse them.
UNPROMOTABLE = (torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2,
                *(getattr(torch, n) for n in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu") if hasattr(torch, n)))  # fmt: skip


def elementwise_dtypes(operands: Sequence, kind: ELEMENTWISE_TYPE_PROMOTION_KIND) -> tuple:
    """(computation dtype, result dtype) over python numbers and anything with `.dtype` and `.ndim`;
    torch's RuntimeError where torch refuses to promote them."""
    return _apply_kind(_result_dtype(operands), kind)


def _result_dtype(operands: Sequence) -> torch.dtype:
    """torch.result_type's dtype: sized tensors, 0-d tensors and python numbers each promoted among
    themselves (torch.promote_types, which raises for a pair it does not promote), then across
    the groups, where the higher wins unless it is bool or the lower is floating (_across)."""
    groups = [None, None, None]  # sized tensors, 0-d tensors, python numbers
    for x in operands:
        group, dtype = (2, _number_dtype(x)) if isinstance(x, Number) else (int(x.ndim == 0), x.dtype)
        groups[group] = dtype if groups[group] is None else torch.promote_types(groups[group], dtype)
    return _across(groups[0], _across(groups[1], groups[2])) or torch.bool  # none at all: bool, as prims' rule


def _number_dtype(x: Number) -> torch.dtype:
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, int):
        return torch.long
    default = torch.get_default_dtype()
    return default if isinstance(x, float) else corresponding_complex_dtype(default)


def _across(higher, lower):
    """The dtype of two groups (None: an empty one), promoted only where torch promotes across them."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if is_complex_dtype(lower) and is_float_dtype(higher):
        if higher in UNPROMOTABLE:  # float8: no complex dtype holds it
            raise RuntimeError(f"Promotion of {higher} with {lower}: {higher} has no complex dtype")
        return corresponding_complex_dtype(higher)
    if is_complex_dtype(higher) or is_complex_dtype(lower) or is_float_dtype(higher):
        return lower if is_complex_dtype(lower) and not is_complex_dtype(higher) else higher
    return torch.promote_types(higher, lower) if higher == torch.bool or is_float_dtype(lower) else higher


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
