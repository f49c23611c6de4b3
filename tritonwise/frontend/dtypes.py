"""Per-call dtypes: each output's result and computation dtype, and what each input converts to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from .promotion import promote
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
