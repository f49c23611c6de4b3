"""`pointwise_dynamic`: the FlagGems-compatible decorator turning a payload into a PointwiseDynamicFunction."""

from __future__ import annotations

from typing import Optional

from .frontend.payload import inspect_payload
from .frontend.schema import FunctionSchema
from .function import PointwiseDynamicFunction


def pointwise_dynamic(
    f=None,
    *,
    num_inputs: Optional[int] = None,
    is_tensor=None,
    dtypes=None,
    num_outputs: Optional[int] = None,
    promotion_methods=None,
    config=None,
    reductions=None,
    deterministic: bool = False,
    backward=None,
):
    """Wrap a @triton.jit payload; use as `@pointwise_dynamic(...)` or `pointwise_dynamic(fn, ...)`.

    Without num_inputs, is_tensor and dtypes, every payload argument is a tensor. Ours: `reductions`
    (per output None, "sum", "max", "min" or along dims: frontend/reduction.py),
    `deterministic=True` (bit-reproducible float sums, no atomics) and `backward` (a payload used as
    the backward: PointwiseDynamicFunction.register_backward)."""
    def decorate(payload):
        info = inspect_payload(payload)
        given = {"num_inputs": num_inputs, "is_tensor": is_tensor, "dtypes": dtypes}  # what fixes the input count
        described = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)  # as the user wrote it
        schema = FunctionSchema(
            num_inputs=num_inputs if described else info.num_params,
            is_tensor=is_tensor,
            dtypes=dtypes,
            num_outputs=num_outputs,
            promotion_methods=promotion_methods,
        )
        if described:
            info.check_arity(schema.num_inputs(), described)
        return PointwiseDynamicFunction(payload, schema, config, reductions, deterministic, backward)

    return decorate if f is None else decorate(f)
