"""Under torch.compile, a pointwise function is its torch expression; eagerly, our kernel.

While dynamo traces `__call__`, `torch.compiler.is_compiling()` is true and the call returns the
torch expression's result (tracing/expression.py), which Inductor fuses; a payload or call that does
not translate runs as an opaque call (a graph break). `_prepared` runs for real under dynamo
(assume_constant_result). The C `__call__` gets a Python stand-in dynamo can trace
(`trace_c_calls`). An `as_torch_op` op stays one node, with the same expression registered as its
decomposition for Inductor.
"""

from __future__ import annotations

import inspect

import torch

from ..config import setting
from ..runtime import hit_path
from . import function_of, let_dynamo_trace_c_calls
from .expression import OutputNotCastable, expression_or_reason, rule_of, run, signature


def compiled_call(fn, call, args: tuple, kwargs: dict):
    """What dynamo traces for `call(*args, **kwargs)`: the torch expression, else the call outside the graph."""
    traced = traced_call(fn, args, kwargs)
    return _opaque(call, args, kwargs) if traced is NotImplemented else traced


@torch.compiler.disable(reason="tritonwise: this payload has no torch expression (see fn.explain(...))")
def _opaque(call, args: tuple, kwargs: dict):
    return call(*args, **kwargs)


def traced_call(fn, args: tuple, kwargs: dict):
    """The call as torch operations, or NotImplemented (as a decomposition: Inductor keeps the op)."""
    try:
        outs = fn.outputs(kwargs)
    except TypeError:  # a keyword no output has
        return NotImplemented
    if len(args) != fn.schema.num_inputs():
        return NotImplemented
    call = signature(args, outs)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if call is None or not tensors:
        return NotImplemented
    name = _prepared(fn.trace_key, call, max(t.ndim for t in tensors))
    if name is None:
        return NotImplemented
    return getattr(fn, name)(args, outs)


@torch.compiler.assume_constant_result
def _prepared(key: str, call: tuple, rank: int):
    """The name of the attribute of the function `key` names that holds (args, outs) -> the call's
    values, or None where the payload does not translate; a name, so dynamo can guard the read."""
    fn = function_of(key)
    if not _traced(fn):
        return None
    expression = expression_or_reason(fn)
    names = fn.__dict__.setdefault("_tritonwise_traced_names", {})  # (call, rank) -> attribute name
    if (call, rank) not in names:
        name = f"_tritonwise_traced_{len(names)}"
        try:
            rule = rule_of(fn, call, rank)
        except OutputNotCastable:  # the kernel decides: it takes the payload's own dtype, else refuses
            return None
        fn.__dict__[name] = lambda args, outs: run(expression, rule, args, outs)
        names[(call, rank)] = name
    return names[(call, rank)]


def _traced(fn) -> bool:
    """Whether torch.compile traces `fn`'s torch expression: it has one, and TRITONWISE_OPAQUE_UNDER_COMPILE=1
    (which keeps our kernels as opaque calls, to compare the two) is not set."""
    return not isinstance(expression_or_reason(fn), str) and setting("TRITONWISE_OPAQUE_UNDER_COMPILE", default="0") == "0"


def register_decompositions(ops: list) -> None:
    """Give Inductor each translatable function's torch expression as the decomposition of its
    (function, "namespace::name") op: an as_torch_op op and its backward ops, all at once when dynamo
    meets the op (its fake implementation calls this), before AOTAutograd traces the backward."""
    from torch._inductor import decomposition

    for fn, qualname in ops:
        namespace, _, name = qualname.partition("::")
        overload = getattr(getattr(torch.ops, namespace), name).default
        if _traced(fn) and overload not in decomposition.decompositions:
            decomposition.decompositions[overload] = lambda *args, fn=fn: traced_call(fn, args, {})
            cached = getattr(decomposition, "fast_random_decomps", None)  # a copy of the table, kept
            if hasattr(cached, "cache_clear"):  # from the process's first compile on
                cached.cache_clear()


_substituted: set = set()  # ids of the C __call__ methods given a polyfill


def trace_c_calls() -> None:
    """Give dynamo a traceable stand-in for each C `__call__` the hit path installed (filling its
    substitute tables as substitute_in_graph does); elsewhere such calls stay opaque. Called only where
    tracing.polyfills_methods() holds, so these tables exist."""
    try:  # private names: a torch that moved them leaves these calls opaque rather than failing
        from torch._dynamo.trace_rules import _polyfilled_function_ids
        from torch._dynamo.variables.functions import PolyfilledFunctionVariable
    except ImportError:  # pragma: no cover
        return

    for cls in hit_path.served_classes():
        method = cls.__dict__.get("__call__")
        if method is None or inspect.isfunction(method) or id(method) in _substituted:
            continue
        PolyfilledFunctionVariable._get_polyfill_handlers()[method] = _Polyfill
        _polyfilled_function_ids.add(id(method))
        _substituted.add(id(method))


class _Polyfill:
    """Dynamo's record of a polyfill: what it traces in place of the C method."""

    __torch_dynamo_polyfill__ = staticmethod(lambda self, *args, **kwargs: compiled_call(self, self, args, kwargs))


let_dynamo_trace_c_calls()
