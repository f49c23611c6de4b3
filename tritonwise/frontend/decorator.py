"""`pointwise_dynamic`: FlagGems-compatible decorator turning a payload into a PointwiseDynamicFunction."""

from __future__ import annotations

from typing import Optional


def pointwise_dynamic(
    f=None,
    *,
    num_inputs: Optional[int] = None,
    is_tensor=None,
    dtypes=None,
    num_outputs: Optional[int] = None,
    promotion_methods=None,
    config=None,
):
    """Wrap a @triton.jit payload; use as `@pointwise_dynamic(...)` or `pointwise_dynamic(fn, ...)`.

    When none of num_inputs, is_tensor and dtypes is given, every payload argument is a tensor.
    """
    from ..function import PointwiseDynamicFunction
    from .payload import inspect_payload
    from .schema import FunctionSchema

    def decorate(payload):
        count = num_inputs
        if count is None and is_tensor is None and dtypes is None:
            count = inspect_payload(payload).num_params
        schema = FunctionSchema(
            num_inputs=count,
            is_tensor=is_tensor,
            dtypes=dtypes,
            num_outputs=num_outputs,
            promotion_methods=promotion_methods,
        )
        return PointwiseDynamicFunction(payload, schema, config)

    return decorate if f is None else decorate(f)
