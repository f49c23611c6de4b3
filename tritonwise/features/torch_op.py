"""Registering a PointwiseDynamicFunction as a PyTorch custom op (torch.library).

The op takes tensors, then scalars typed by `dtypes` (`Scalar` where untyped), and always allocates
its outputs (a functional op). Its real implementation is the function; its fake one allocates what
the same analysis computes, so torch.compile traces through it. Its autograd formula calls the
backward as an op of its own (`name_backward`, `name_ties<k>`).
"""

from __future__ import annotations

import torch

from ..errors import NotDifferentiable
from .autograd import DOUBLE_BACKWARD, gradients, save_operands, saved_operands

_SCALAR_SCHEMA = {float: "float", int: "int", bool: "bool", None: "Scalar"}
_libraries: dict = {}  # keeps each torch.library.Library alive
_decomposable: dict = {}  # qualname -> (function, qualname) of the op and its backward ops (tracing/hook.py)


def op_schema(fn) -> str:
    schema = fn.schema
    params = []
    for i in range(schema.num_inputs()):
        kind = "Tensor" if schema.is_tensor(i) else _SCALAR_SCHEMA.get(schema.input_type(i), "Scalar")
        params.append(f"{kind} in{i}")
    n = schema.num_outputs()
    returns = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return f"({', '.join(params)}) -> {returns}"


def register(fn, qualname: str, differentiable: bool = True):
    namespace, sep, name = qualname.partition("::")
    if not sep or not namespace.isidentifier() or not name.isidentifier():
        raise ValueError(f"as_torch_op: qualname must look like 'namespace::name', got {qualname!r}")
    library = torch.library.Library(namespace, "FRAGMENT")
    library.define(name + op_schema(fn))
    library.impl(name, lambda *args: fn(*args), "CompositeExplicitAutograd")

    def fake(*args):
        if _tracing():  # dynamo met the op: Inductor may decompose it (and its backward)
            from ..tracing.hook import register_decompositions

            register_decompositions(_decomposable[qualname])
        device = fn.output_device(*args)  # the real call's own device rule
        outputs = [
            torch.empty_strided(shape, strides, dtype=dtype, device=device)
            for shape, strides, dtype in fn.output_meta(*args)
        ]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    torch.library.register_fake(qualname, fake, lib=library)
    _libraries[qualname] = library
    _decomposable[qualname] = [(fn, qualname)]
    if differentiable:
        _register_autograd(fn, qualname, library)
    else:
        torch.library.register_autograd(qualname, _no_double_backward, lib=library)
    op = getattr(getattr(torch.ops, namespace), name)
    _register_sharding(fn, op.default)
    return op


def _tracing() -> bool:
    """Whether a fake implementation runs for a compiler's trace (dynamo, export): torch before
    2.13 answers torch.compiler.is_compiling() False there, so its tracing context is asked too."""
    from torch._guards import TracingContext

    return torch.compiler.is_compiling() or TracingContext.try_get() is not None


def _register_sharding(fn, overload) -> None:
    """Give DTensor the op's sharding rule, derived from broadcasting (tritonwise/features/dtensor.py)."""
    if not torch.distributed.is_available():
        return
    from torch.distributed.tensor.experimental import register_sharding

    from .dtensor import sharding_strategies

    register_sharding(overload)(lambda *args: sharding_strategies(fn, args))


def _register_autograd(fn, qualname: str, library) -> None:
    schema, reductions = fn.schema, fn.reduction_kinds
    tensors = tuple(i for i in range(schema.num_inputs()) if schema.is_tensor(i))
    try:
        backward, failure = fn.backward_functions().for_inputs(tensors), None
    except NotDifferentiable as e:
        backward, failure = None, e
    run = backward and backward.function and register(backward.function, qualname + "_backward", False)
    computed = backward.wrt if backward else ()
    ties = {
        k: register(fn.backward_functions().ties(k), f"{qualname}_ties{k}", False)
        for k, r in enumerate(reductions)
        if r in ("max", "min") and failure is None
    }
    companions = [qualname + "_backward"] * bool(run) + [f"{qualname}_ties{k}" for k in ties]
    _decomposable[qualname] += [pair for q in companions for pair in _decomposable[q]]

    def setup_context(ctx, inputs, output):
        save_operands(ctx, inputs, output if isinstance(output, tuple) else (output,), reductions)

    def backward_formula(ctx, *grads):
        if failure is not None:
            raise failure
        args, extremes = saved_operands(ctx)
        wanted = tuple(i for i, need in enumerate(ctx.needs_input_grad) if need)
        return tuple(gradients(reductions, args, grads, extremes, wanted, run or None, computed, ties.get))

    torch.library.register_autograd(qualname, backward_formula, setup_context=setup_context, lib=library)


def _no_double_backward(ctx, *grads):
    raise RuntimeError(DOUBLE_BACKWARD)
