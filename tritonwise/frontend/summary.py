"""CallSummary: the dtypes and scalar kinds codegen reads of a call, instead of its arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

INT32_RANGE = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class OperandSummary:
    """A tensor input (its dtype) or a scalar (its kind; `wide`: an int passed as 64-bit; `unsigned`: >= 2**63)."""

    is_tensor: bool
    dtype: Optional[torch.dtype] = None
    kind: Optional[type] = None
    wide: bool = False
    unsigned: bool = False


@dataclass(frozen=True)
class CallSummary:
    inputs: tuple  # OperandSummary per payload argument
    out_dtypes: tuple  # per output: a given output's dtype, None where tritonwise allocates it


def summarize(schema, args: Sequence, outs: Sequence) -> CallSummary:
    """The summary of a call whose kinds the frontend has checked (frontend/validation.py)."""
    inputs = tuple(_operand(a, schema.is_tensor(i)) for i, a in enumerate(args))
    return CallSummary(inputs, tuple(None if o is None else o.dtype for o in outs))


def _operand(arg, is_tensor: bool) -> OperandSummary:
    if is_tensor:
        return OperandSummary(True, dtype=arg.dtype)
    kind = type(arg)  # one of bool, int, float: validation.check_kinds said so
    wide = kind is int and not INT32_RANGE[0] <= arg <= INT32_RANGE[1]
    return OperandSummary(False, kind=kind, wide=wide, unsigned=kind is int and arg >= 2**63)
