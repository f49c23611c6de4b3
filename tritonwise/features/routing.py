"""Routing: calls that no launch plan serves, taken off the plan path before any analysis.

Foreign StridedBuffers, NumPy scalars, subclasses, autograd, complex operands, DTensors and negative
views each re-enter the function with plain arguments or run their own machinery through its public
protocol; their signatures never enter the plan cache, except a recorded call's (autograd's
RecordingPlan, whose later calls C records).
"""

from __future__ import annotations

from typing import Optional

import torch

from ..frontend import validation
from . import autograd, foreign_buffers, own_ops

NO_ROUTE = object()  # route(): an ordinary call, for the plan path


def route(fn, args: tuple, outs: tuple, rules: Optional[tuple] = None):
    """The result of a call that one of the features (`rules`, default RULES) serves, else NO_ROUTE."""
    for _, applies, run in RULES if rules is None else rules:
        found = applies(fn, args, outs)
        if found:
            return run(fn, args, outs, found)
    return NO_ROUTE


def feature(fn, args: tuple, outs: tuple) -> Optional[str]:
    """The name of the feature that would take this call, running nothing; None for a plain call."""
    return next((name for name, applies, _ in RULES if applies(fn, args, outs)), None)


def _autograd(fn, args, outs, _):
    return autograd.call(fn, args, outs)


def _dtensor(fn, args, outs, _):
    from . import dtensor  # imports torch.distributed.tensor, which the caller has already

    return dtensor.call(fn, args, outs)


def _subclass(fn, args, outs, subclass):  # run on plain views, give the results torch's subclass
    result = fn(*validation.plain(args), **validation.output_keywords(validation.plain(outs)))
    return validation.given_or(result, outs, lambda r: r.as_subclass(subclass))


def _resolved(fn, args, outs, _):
    resolved = tuple(own_ops.resolved(a) if isinstance(a, torch.Tensor) and a.is_neg() else a for a in args)
    return fn(*resolved, **validation.output_keywords(outs))


def _detached_outputs(fn, args, outs, _):
    """Under no_grad: written through detached views, so that no plan for them serves a call with grad."""
    detached = tuple(o.detach() if isinstance(o, torch.Tensor) else o for o in outs)
    return validation.given_or(fn(*args, **validation.output_keywords(detached)), outs)


# (feature, applies(fn, args, outs) -> falsy, or what run needs, run(fn, args, outs, found)); each
# `applies` runs nothing and may raise for a call no route can take
_FOREIGN = ("FlagGems' StridedBuffer", lambda fn, args, outs: any(map(foreign_buffers.is_foreign, (*args, *outs))),
            lambda fn, args, outs, _: foreign_buffers.call(fn, args, outs))
_NUMPY = ("NumPy scalars", lambda fn, args, outs: _converted(validation.python_scalars(args), args),
          lambda fn, args, outs, scalars: fn(*scalars, **validation.output_keywords(outs)))
_OUTPUTS_WITH_GRAD = ("given outputs that require grad", lambda fn, args, outs: _outputs_need_grad(fn, outs),
                      _detached_outputs)
_NEGATIVE = ("negative views", lambda fn, args, outs: own_ops.has_negative_views(fn.__name__, args, outs), _resolved)
RULES = (  # in order
    ("autograd", lambda fn, args, outs: _recorded_plain_call(args) and not fn.along_dims, _autograd),
    _FOREIGN,
    ("reductions along dims", lambda fn, args, outs: _check_plain_call(fn, args, outs), None),
    _OUTPUTS_WITH_GRAD,
    _NUMPY,
    ("tensor subclass", lambda fn, args, outs: validation.result_subclass(fn.__name__, (*args, *outs)), _subclass),
    ("autograd", lambda fn, args, outs: any(isinstance(a, torch.Tensor) and a.requires_grad for a in args), _autograd),
    # before complex: a DTensor's shards may be complex, and the complex route takes plain tensors
    ("DTensor", lambda fn, args, outs: validation.has_dtensor(args, outs), _dtensor),
    ("complex", lambda fn, args, outs: fn.complex_handler is not None and fn.complex_handler.applies(args, outs),
     lambda fn, args, outs, _: fn.complex_handler(fn, args, outs)),
    _NEGATIVE,
)
# what `instantiate(rank)` routes: it plans the rest as given
LAYOUT_RULES = (_FOREIGN, _OUTPUTS_WITH_GRAD, _NUMPY, _NEGATIVE)


def _converted(converted: tuple, args: tuple):
    """The NumPy-free arguments where python_scalars changed any (it returns `args` itself otherwise)."""
    return converted if converted is not args else None


def _recorded_plain_call(args: tuple) -> bool:
    """Whether every argument is a plain tensor or scalar and a tensor requires grad: then no route
    applies before autograd's. One pass, as it runs first on every call routing sees."""
    grad = False
    for a in args:
        if type(a) is torch.Tensor:
            grad = grad or a.requires_grad
        elif type(a) not in (int, float, bool):
            return False
    return grad


def _outputs_need_grad(fn, outs: tuple) -> bool:
    """Whether a given output requires grad; refused while grad is enabled, as torch refuses `out=`
    there (written in place, it would keep no history of its values)."""
    for index, out in enumerate(outs):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            if torch.is_grad_enabled():
                raise RuntimeError(
                    f"{fn.__name__}: out{index}= requires grad, and given outputs do not support automatic "
                    "differentiation; pass one that does not, or call under torch.no_grad()"
                )
            return True
    return False


def _check_plain_call(fn, args: tuple, outs: tuple) -> None:
    """Reductions along dims run plain calls only, for now: a rule that only refuses."""
    if fn.along_dims and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        raise NotImplementedError(f"{fn.__name__}: autograd through reductions along dims is not supported yet")
    if fn.along_dims and validation.has_dtensor(args, outs):
        raise NotImplementedError(f"{fn.__name__}: DTensor arguments to reductions along dims: not supported yet")
