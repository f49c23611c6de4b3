"""Registering a PointwiseDynamicFunction as a PyTorch custom op (torch.library).

The op's schema follows the function's: tensors, then scalars typed by `dtypes` (`Scalar`
where no type is given), returning one tensor or a tuple. The real implementation is the
function itself (one registration for every device); the fake implementation allocates
empty outputs with the shapes, strides and dtypes the same analysis computes, so
torch.compile traces through the op without running it and without a graph break.
Outputs are always allocated by the op (no `out0=`), as torch.compile needs a functional op.
"""

from __future__ import annotations

import torch

_SCALAR_SCHEMA = {float: "float", int: "int", bool: "bool", None: "Scalar"}
_libraries: dict = {}  # keeps each torch.library.Library alive


def op_schema(fn) -> str:
    schema = fn.schema
    params = []
    for i in range(schema.num_inputs()):
        kind = "Tensor" if schema.is_tensor(i) else _SCALAR_SCHEMA.get(schema.input_type(i), "Scalar")
        params.append(f"{kind} in{i}")
    n = schema.num_outputs()
    returns = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return f"({', '.join(params)}) -> {returns}"


def register(fn, qualname: str):
    namespace, sep, name = qualname.partition("::")
    if not sep or not namespace.isidentifier() or not name.isidentifier():
        raise ValueError(f"as_torch_op: qualname must look like 'namespace::name', got {qualname!r}")
    library = torch.library.Library(namespace, "FRAGMENT")
    library.define(name + op_schema(fn))
    library.impl(name, lambda *args: fn(*args), "CompositeExplicitAutograd")

    def fake(*args):
        device = fn.output_device(*args)  # the real call's own device rule
        outputs = [
            torch.empty_strided(shape, strides, dtype=dtype, device=device)
            for shape, strides, dtype in fn.output_meta(*args)
        ]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    torch.library.register_fake(qualname, fake, lib=library)
    _libraries[qualname] = library
    op = getattr(getattr(torch.ops, namespace), name)
    _register_sharding(fn, op.default)
    return op


def _register_sharding(fn, overload) -> None:
    """Give DTensor the op's sharding rule, derived from broadcasting (tritonwise/dtensor.py)."""
    if not torch.distributed.is_available():
        return
    from torch.distributed.tensor.experimental import register_sharding

    from .dtensor import sharding_strategies

    register_sharding(overload)(lambda *args: sharding_strategies(fn, args))

