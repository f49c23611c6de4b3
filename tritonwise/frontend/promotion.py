"""Torch's elementwise type promotion, applied per output over the arguments it names."""

from __future__ import annotations

from numbers import Number
from typing import Sequence

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

__all__ = ["ELEMENTWISE_TYPE_PROMOTION_KIND", "parse_kind", "promote"]


def parse_kind(kind) -> ELEMENTWISE_TYPE_PROMOTION_KIND:
    """A promotion kind from its enum member or its name ("DEFAULT", "int_to_float", ...)."""
    if isinstance(kind, ELEMENTWISE_TYPE_PROMOTION_KIND):
        return kind
    if isinstance(kind, str):
        return ELEMENTWISE_TYPE_PROMOTION_KIND[kind.upper()]
    raise TypeError(f"expected a promotion kind name or member, got {kind!r}")


def _as_promotion_operand(arg):
    """Tensors and numbers go to torch as they are; other tensor-likes (StridedBuffer) as meta tensors."""
    if isinstance(arg, (torch.Tensor, Number)):
        return arg
    return torch.empty((1,) * arg.ndim, dtype=arg.dtype, device="meta")


def promote(method: tuple, args: Sequence) -> tuple:
    """(computation dtype, result dtype) of one output under torch's rules.

    `method` is a canonical `(i, j, ..., KIND)`; python scalars are weakly typed and 0-d
    tensors weaker than sized ones, exactly as `torch._prims_common.elementwise_dtypes`.
    """
    *indices, kind = method
    operands = [_as_promotion_operand(args[i]) for i in indices]
    return elementwise_dtypes(*operands, type_promotion_kind=kind)
