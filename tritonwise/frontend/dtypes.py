"""Per-call dtypes: each output's result and computation dtype, and what each input converts to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from .promotion import ELEMENTWISE_TYPE_PROMOTION_KIND, promote
from .schema import FunctionSchema


@dataclass(frozen=True)
class CallTypes:
    results: tuple  # torch dtype of each output
    computes: tuple  # computation ("opmath") dtype of each output
    input_computes: tuple  # per input: the computation dtype it is converted to, or None

    def input_compute(self, i: int) -> Optional[torch.dtype]:
        return self.input_computes[i]


def resolve_types(schema: FunctionSchema, args: Sequence) -> CallTypes:
    """Torch's promotion for every output. An input is converted to the computation dtype of the
    outputs whose promotion names it; inputs no method names reach the payload as they are.
    When outputs disagree on an input's computation dtype (say INT_TO_FLOAT beside DEFAULT on
    ints), it is converted to one that holds every value of each: the wider of them, or float64
    when integers meet floats (exact for integers up to 2**53)."""
    pairs = [promote(schema.output_type(k), args) for k in range(schema.num_outputs())]
    wanted: dict = {}
    for k in range(schema.num_outputs()):
        for i in schema.output_type(k)[:-1]:
            wanted.setdefault(i, set()).add(pairs[k][0])
    input_computes = [None] * schema.num_inputs()
    for i, dtypes in wanted.items():
        input_computes[i] = _common(dtypes)
    return CallTypes(
        results=tuple(r for _, r in pairs),
        computes=tuple(c for c, _ in pairs),
        input_computes=tuple(input_computes),
    )


def _common(dtypes: set) -> torch.dtype:
    if len(dtypes) == 1:
        return next(iter(dtypes))
    if any(d.is_floating_point for d in dtypes) and not all(d.is_floating_point for d in dtypes):
        return torch.float64
    result = next(iter(dtypes))
    for d in dtypes:
        result = torch.promote_types(result, d)
    return result


def check_unsigned_scalars(name: str, schema: FunctionSchema, args: Sequence) -> None:
    """A python int in [2**63, 2**64) is a uint64 scalar to torch, and torch has no uint64
    promotion: where such a scalar decides the common dtype of a promotion that names it (a
    bool tensor beside it, say), torch raises instead of computing. So does this, before any
    launch. Beside integer or float operands the scalar is weak and wraps (or rounds) as in torch."""
    for k in range(schema.num_outputs()):
        indices = schema.output_type(k)[:-1]
        common = (*indices, ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)  # torch checks before applying the kind
        for i in indices:
            value = args[i]
            if type(value) is not int or value < 2**63:
                continue
            as_bool = [False if j == i else a for j, a in enumerate(args)]
            if promote(common, args)[1] != promote(common, as_bool)[1]:  # the scalar decides the dtype
                others = ", ".join(str(getattr(args[j], "dtype", type(args[j]).__name__)) for j in indices if j != i)
                raise RuntimeError(
                    f"{name}: argument {i} = {value} is a uint64 scalar (2**63 or above), and promoting it with "
                    f"({others or 'nothing else'}) would give uint64, which torch's type promotion does not support"
                )
