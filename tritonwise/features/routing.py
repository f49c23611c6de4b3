"""Routing: calls that no launch plan serves, taken off the plan path before any analysis.

Foreign StridedBuffers, NumPy scalars, subclasses, autograd, complex operands, DTensors and negative
views each re-enter the function with plain arguments or run their own machinery through its public
protocol; their signatures never enter the plan cache.
"""

from __future__ import annotations

import torch

from ..frontend import validation
from . import foreign_buffers, own_ops

NO_ROUTE = object()  # route(): an ordinary call, for the plan path


def route(fn, args: tuple, outs: tuple):
    """The result of a call that one of the features serves, else NO_ROUTE."""
    if _recorded_plain_call(args) and not fn.along_dims:  # a training call: straight to autograd
        from . import autograd

        return autograd.call(fn, args, outs)
    if foreign_buffers.any_foreign((*args, *outs)):  # FlagGems' own StridedBuffers
        return foreign_buffers.call(fn, args, outs)
    scalars = validation.python_scalars(args)
    if fn.along_dims:
        _check_plain_call(fn.__name__, args, outs)
    if scalars is not args:  # NumPy scalars: plans are keyed on the python scalars torch reads
        return fn(*scalars, **validation.output_keywords(outs))
    subclass = validation.result_subclass(fn.__name__, (*args, *outs))
    if subclass is not None:  # run on plain views, give the results torch's subclass
        result = fn(*validation.plain(args), **validation.output_keywords(validation.plain(outs)))
        return validation.given_or(result, outs, lambda r: r.as_subclass(subclass))
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):  # recorded for autograd
        from . import autograd

        return autograd.call(fn, args, outs)
    if fn.complex_handler is not None and fn.complex_handler.applies(args, outs):
        return fn.complex_handler(fn, args, outs)
    if validation.has_dtensor(args, outs):
        from . import dtensor  # imports torch.distributed.tensor, which the caller has already

        return dtensor.call(fn, args, outs)
    resolved = own_ops.resolve_negative_views(fn.__name__, args, outs)
    if resolved is not None:
        return fn(*resolved, **validation.output_keywords(outs))
    return NO_ROUTE


_PYTHON_SCALARS = (int, float, bool)


def _recorded_plain_call(args: tuple) -> bool:
    """Whether every argument is a plain tensor or scalar and a tensor requires grad: no route
    applies before autograd's then, so the other checks are skipped."""
    tensors = [a for a in args if type(a) is torch.Tensor]
    if not any(t.requires_grad for t in tensors):
        return False
    return len(tensors) + sum(type(a) in _PYTHON_SCALARS for a in args) == len(args)


def _check_plain_call(name: str, args: tuple, outs: tuple) -> None:
    """Reductions along dims run plain calls only, for now."""
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        raise NotImplementedError(f"{name}: autograd through reductions along dims is not supported yet")
    if validation.has_dtensor(args, outs):
        raise NotImplementedError(f"{name}: DTensor arguments to reductions along dims: not supported yet")
