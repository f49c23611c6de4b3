"""A pointwise function as torch operations: its payload's translation, with our promotion.

`expression_of(fn)` translates the payload once and loads it as a Python function over torch values.
`CallRule` holds one call class's dtypes (frontend/dtypes.resolve_types) and `run` computes the call
as the generated kernel does (conversions, one payload call per set, casts, reductions, copy_ into
given outputs), all in torch operations torch.compile can trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

from ..frontend.dtypes import resolve_types
from ..frontend.reduction import reduction_of
from ..runtime.loader import run_source
from . import language
from .translate import UnsupportedConstruct, translate

_SCALAR_TYPES = {"bool": bool, "int": int, "float": float}
_KEPT = "_tritonwise_torch_expression"  # the attribute keeping a function's expression (or reason)


@dataclass(frozen=True)
class TorchExpression:
    """A payload's torch translation: `function` is it, loaded; `source` its text."""

    function: Callable
    source: str


@dataclass(frozen=True)
class CallRule:
    """What `run` needs of one call class (see `rule_of`)."""

    groups: tuple  # (output indices, per input its conversion chain or None), one payload call each
    results: tuple  # the dtype of each output's elementwise value
    reductions: tuple  # per output: None, or a frontend.reduction.Reduction (dims resolved)


def expression_of(fn) -> TorchExpression:
    """The torch expression of `fn`'s payload; raises UnsupportedConstruct naming what stops it."""
    schema, payload = fn.schema, fn.payload_info
    if payload.variadic:
        raise UnsupportedConstruct(f"payload {payload.qualname}: `*args` parameters have no torch translation")
    params = payload.fn.__code__.co_varnames[: payload.num_params]
    scalars = frozenset(p for i, p in enumerate(params) if i < schema.num_inputs() and not schema.is_tensor(i))
    translation = translate(payload.fn, scalars)
    # compiled under a file name of its own, for tracebacks and torch.compile logs
    namespace = {"tw": language.NAMESPACE, "torch": torch}
    run_source(f"<tritonwise torch expression of {payload.qualname}>", translation.source, namespace)
    return TorchExpression(namespace[translation.name], translation.source)


def signature(args: tuple, outs: tuple) -> Optional[tuple]:
    """A call class as constants: per argument (dtype, is 0-d) or its python type's name; per
    output its dtype or None. None for arguments the expression does not take."""
    described = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if a.dtype.is_complex:
                return None
            described.append((a.dtype, a.ndim == 0))
        else:  # a python scalar by its type's name (bool before int: a bool is an int too)
            described.append(next((name for name, t in _SCALAR_TYPES.items() if isinstance(a, t)), None))
            if described[-1] is None:
                return None
    return tuple(described), tuple(None if o is None else o.dtype for o in outs)


class _Operand:
    """A tensor as promotion reads it: its dtype and whether it is 0-d."""

    def __init__(self, dtype: torch.dtype, zero_dim: bool):
        self.dtype, self.ndim = dtype, 0 if zero_dim else 1


class OutputNotCastable(RuntimeError):
    """A given output's dtype cannot hold the promotion's result. The kernel may still take it,
    where the payload's own value fits (FlagGems' frexp): such a call runs opaque under compile."""


def rule_of(fn, call: tuple, rank: int) -> CallRule:
    """The CallRule of a call class (`signature`'s value) for a task of `rank` dims."""
    described, out_dtypes = call
    args = [_Operand(*d) if isinstance(d, tuple) else _SCALAR_TYPES[d](1) for d in described]
    types = resolve_types(fn.schema, args, widen_bools=not fn.payload_info.uses_invert)
    reductions = tuple(
        None if r is None else reduction_of(r, types.results[k], rank)
        for k, r in enumerate(fn.reduction_kinds)
    )
    for k, (out, r) in enumerate(zip(out_dtypes, reductions)):
        result = types.results[k] if r is None else r.result
        if out is not None and not torch.can_cast(result, out):
            raise OutputNotCastable(f"{fn.__name__}: result type {result} can't be cast to the desired output type {out}")
    groups: dict = {}
    for k, chains in enumerate(types.conversions):
        groups.setdefault(chains, []).append(k)
    return CallRule(tuple((tuple(ks), chains) for chains, ks in groups.items()), types.results, reductions)


def run(expression: TorchExpression, rule: CallRule, args: tuple, outs: tuple):
    """The call computed with torch operations (see the module doc)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    shape = torch.broadcast_shapes(*[t.shape for t in tensors])
    device = tensors[0].device
    values = [None] * len(rule.results)
    for outputs, chains in rule.groups:
        returned = expression.function(*[_convert(a, c) for a, c in zip(args, chains)])
        returned = returned if isinstance(returned, tuple) else (returned,)
        for k in outputs:
            values[k] = _finish(returned[k], rule.results[k], rule.reductions[k], shape, device)
    for k, out in enumerate(outs):
        if out is not None:
            values[k] = out.copy_(values[k])
    return values[0] if len(values) == 1 else tuple(values)


def _convert(arg, chain: Optional[tuple]):
    """An input as the payload receives it: along `chain`, as the kernel converts it."""
    if not chain:
        return arg
    if isinstance(arg, torch.Tensor):
        for dtype in chain:
            arg = language.to(arg, dtype)
        return arg
    last = chain[-1]
    return bool(arg) if last == torch.bool else float(arg) if last.is_floating_point else int(arg)


def _finish(value, dtype: torch.dtype, reduction, shape, device):
    """An output's value cast to its dtype and broadcast to the task shape, then reduced."""
    if isinstance(value, torch.Tensor):
        value = language.to(value, dtype)
        if value.shape != shape:
            value = value.expand(shape).clone()
    else:
        value = torch.full(shape, value, dtype=dtype, device=device)
    return value if reduction is None else _reduce(value, reduction)


def _reduce(value: torch.Tensor, reduction):
    acc = value.to(reduction.acc)
    if reduction.kind != "sum" and acc.is_floating_point():  # the kernels' max/min skip NaN (tl.max), torch's do not
        acc = torch.where(torch.isnan(acc), reduction.identity_value, acc)
    reduce = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[reduction.kind]
    dims = reduction.dims if reduction.dims is not None else tuple(range(value.ndim))
    return reduce(acc, dim=dims, keepdim=reduction.keepdim).to(reduction.result)


def expression_or_reason(fn):
    """`fn`'s TorchExpression (built once and kept on it), or the reason it has none."""
    found = fn.__dict__.get(_KEPT)
    if found is None:
        try:
            found = expression_of(fn)
        except UnsupportedConstruct as e:
            found = str(e)
        fn.__dict__[_KEPT] = found
    return found


def status(fn) -> str:
    """What torch.compile does with `fn`, as explain() says it."""
    found = expression_or_reason(fn)
    if isinstance(found, str):
        return f"an opaque call (unsupported construct: {found})"
    return "traced as its torch expression (fuses with neighbouring ops)"


def evaluate(fn, args: tuple, outs: tuple = ()):
    """`fn(*args, out0=...)` computed eagerly by its torch expression (what torch.compile traces)."""
    found = expression_or_reason(fn)
    if isinstance(found, str):
        raise UnsupportedConstruct(found)
    outs = tuple(outs) + (None,) * (fn.schema.num_outputs() - len(outs))
    call = signature(args, outs)
    if call is None:
        raise UnsupportedConstruct(f"{fn.__name__}: arguments other than tensors and python scalars")
    rank = max(a.ndim for a in args if isinstance(a, torch.Tensor))
    return run(found, rule_of(fn, call, rank), args, outs)
