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
    """Torch's promotion for every output; an input takes the computation dtype of the first
    output whose promotion names it (inputs no method names are passed to the payload as they are)."""
    pairs = [promote(schema.output_type(k), args) for k in range(schema.num_outputs())]
    input_computes = [None] * schema.num_inputs()
    for k in reversed(range(schema.num_outputs())):
        for i in schema.output_type(k)[:-1]:
            input_computes[i] = pairs[k][0]
    return CallTypes(
        results=tuple(r for _, r in pairs),
        computes=tuple(c for c, _ in pairs),
        input_computes=tuple(input_computes),
    )
