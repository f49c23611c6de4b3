"""Per-call dtypes: each output's result and computation dtype, and how each input reaches it.

As torch: operands are cast to the output's common dtype (python scalars and 0-d tensors skip this
for arithmetic, not for comparisons), the payload runs in the computation dtype (opmath: fp32 for
16-bit floats), and the result is rounded when stored. `conversions[k][i]`: the dtypes input i
passes through for output k; codegen calls the payload once per distinct set.

Where an output computes in bool, bool operands are widened to int32 and the result converted with
`!= 0` (True + True is True), unless the payload uses `~`, which is logical not on int1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from .promotion import KIND, promote
from .schema import FunctionSchema

BOOL_ARITHMETIC_DTYPE = torch.int32


@dataclass(frozen=True)
class CallTypes:
    results: tuple  # torch dtype of each output
    conversions: tuple  # per output, per input: the dtypes it is converted through, or None if not named

    def computed_as(self, k: int, i: int) -> Optional[torch.dtype]:
        """The dtype input `i` reaches the payload in for output `k` (None: as it comes)."""
        chain = self.conversions[k][i]
        return chain[-1] if chain else None


def resolve_types(schema: FunctionSchema, args: Sequence, widen_bools: bool = True) -> CallTypes:
    """Torch's promotion for every output, and the conversions of each input it names."""
    results, conversions = [], []
    for k in range(schema.num_outputs()):
        method = schema.output_type(k)
        compute, result = promote(method, args)
        # the dtype operands round to first: the result's, or for a comparison DEFAULT promotion's
        common = promote((*method[:-1], KIND.DEFAULT), args)[1] if method[-1] == KIND.ALWAYS_BOOL else result
        if widen_bools and compute == torch.bool:
            compute = BOOL_ARITHMETIC_DTYPE
        chains = [None] * schema.num_inputs()
        for i in method[:-1]:
            chains[i] = _chain(_dtype_of(args[i]), _rounds(args[i], method[-1]) and common, compute)
        _widen_alike(chains, args)
        results.append(result)
        conversions.append(tuple(chains))
    return CallTypes(tuple(results), tuple(conversions))


HALF_FLOATS = (torch.float16, torch.bfloat16)


def _widen_alike(chains: list, args: Sequence) -> None:
    """An unnamed 16-bit float input beside a named one of its dtype that computes in float32 is
    widened alike (FlagGems' angle names only `real`); other unnamed inputs come as they are."""
    widened = {_dtype_of(args[j]) for j, c in enumerate(chains) if c and c[-1] == torch.float32}
    for i, arg in enumerate(args):
        if chains[i] is None and isinstance(arg, torch.Tensor) and arg.dtype in HALF_FLOATS and arg.dtype in widened:
            chains[i] = (torch.float32,)


def _rounds(arg, kind) -> bool:
    """Whether the operand is cast to the common dtype before the computation (see the module doc)."""
    scalar_like = not isinstance(getattr(arg, "dtype", None), torch.dtype) or arg.ndim == 0
    return not scalar_like or kind == KIND.ALWAYS_BOOL


def _dtype_of(arg) -> Optional[torch.dtype]:
    """A tensor's dtype; for a python scalar, the dtype it reaches the kernel as (None: any)."""
    dtype = getattr(arg, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return dtype
    return torch.bool if isinstance(arg, bool) else None


def _chain(dtype: Optional[torch.dtype], common, compute: torch.dtype) -> tuple:
    """The conversions from `dtype` to `compute`, through `common` where that rounds the value."""
    steps = []
    if common and common != compute and common != dtype:
        steps.append(common)
    if compute != dtype or steps:
        steps.append(compute)
    return tuple(steps)


def check_unsigned_scalars(name: str, schema: FunctionSchema, args: Sequence) -> None:
    """Raise, as torch does, where a python int in [2**63, 2**64) (uint64, which torch cannot
    promote) decides a common dtype; beside numeric operands it wraps as in torch."""
    for k in range(schema.num_outputs()):
        indices = schema.output_type(k)[:-1]
        common = (*indices, KIND.DEFAULT)  # torch checks before applying the kind
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
