"""`fn.instantiate(rank)`: FlagGems' manual instantiation, no broadcasting and no allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import own_ops
from .explanation import Explanation
from .frontend import validation
from .runtime import arguments as argcheck
from .runtime.dispatch import PlanCache

if TYPE_CHECKING:
    from .function import PointwiseDynamicFunction


class InstantiatedFunction:
    """`fn.instantiate(rank)`: every operand exactly `rank` dims and one shape, outputs given."""

    def __init__(self, fn: PointwiseDynamicFunction, rank: int):
        self._fn = fn
        self.rank = rank
        self._plans = PlanCache()
        self.__name__ = f"{fn.__name__}_rank{rank}"

    def __call__(self, *args, **kwargs):
        outs = self._fn._outputs(kwargs)
        key = argcheck.call_signature(args, outs)
        plan = self._plans.get(key)
        if plan is None:
            scalars = validation.python_scalars(args)
            if scalars is not args:
                return self(*scalars, **kwargs)
            resolved = own_ops.resolve_negative_views(self.__name__, args, outs)
            if resolved is not None:
                return self(*resolved, **kwargs)
            self._check(args, outs)
            plan = self._fn._prepare(args, outs, collapse=False)
            self._plans.put(key, plan)
        return plan.run(args, outs)

    def explain(self, *args, **kwargs) -> "Explanation":
        outs = self._fn._outputs(kwargs)
        self._check(args, outs)
        return Explanation.of(self._fn._prepare(args, outs, collapse=False))

    def _check(self, args: tuple, outs: tuple) -> None:
        missing = [f"out{k}" for k, o in enumerate(outs) if o is None]
        if missing:
            raise TypeError(
                f"{self.__name__}: outputs {', '.join(missing)} must be given (instantiate allocates nothing)"
            )
        operands = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
        # a reduced output is 0-d whatever the rank; _analyze checks it against ()
        operands += [(f"out{k}", o) for k, (o, r) in enumerate(zip(outs, self._fn._reductions)) if r is None]
        shape = tuple(operands[0][1].shape)
        for label, t in operands:
            if t.ndim != self.rank:
                raise ValueError(f"{self.__name__}: {label} has {t.ndim} dims, expected exactly {self.rank}")
            if tuple(t.shape) != shape:
                raise ValueError(
                    f"{self.__name__}: {label} has shape {tuple(t.shape)}, expected {shape} (no broadcasting)"
                )
