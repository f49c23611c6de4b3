"""`fn.instantiate(rank)`: FlagGems' manual instantiation, no broadcasting and no allocation."""

from __future__ import annotations

import torch

from ..plans.explanation import Explanation
from ..runtime import arguments as argcheck
from ..runtime.dispatch import PlanCache
from ..tracing.expression import status as traced_status
from . import routing


class InstantiatedFunction:
    """`fn.instantiate(rank)`: every operand exactly `rank` dims and one shape, outputs given."""

    def __init__(self, fn, rank: int):
        self._fn = fn
        self.rank = rank
        self._plans = PlanCache()
        self.__name__ = f"{fn.__name__}_rank{rank}"

    def __call__(self, *args, **kwargs):
        if torch.compiler.is_compiling():  # dynamo traces the payload's torch expression instead
            from ..tracing.hook import compiled_call

            self.check(args, self._fn.outputs(kwargs))
            return compiled_call(self._fn, self, args, kwargs)
        outs = self._fn.outputs(kwargs)
        key = argcheck.call_signature(args, outs)
        plan = self._plans.get(key)
        if plan is None:
            routed = routing.route(self, args, outs, routing.LAYOUT_RULES)
            if routed is not routing.NO_ROUTE:
                return routed
            self.check(args, outs)
            plan = self._fn.plan(args, outs, collapse=False)
            self._plans.put(key, plan)
        return plan.run(args, outs)

    def explain(self, *args, **kwargs) -> "Explanation":
        outs = self._fn.outputs(kwargs)
        self.check(args, outs)
        return Explanation.of(self._fn.plan(args, outs, collapse=False), torch_compile=traced_status(self._fn))

    def check(self, args: tuple, outs: tuple) -> None:
        """Every output given; every operand exactly `rank` dims, all of one shape."""
        inputs = self._fn.schema.num_inputs()
        if len(args) > inputs:
            raise TypeError(
                f"{self.__name__}: takes {inputs} input{'s' * (inputs != 1)} but {len(args)} were given; outputs are keyword "
                f"arguments ({', '.join(f'out{k}=' for k in range(len(outs)))})"
            )
        missing = [f"out{k}" for k, o in enumerate(outs) if o is None]
        if missing:
            raise TypeError(
                f"{self.__name__}: outputs {', '.join(missing)} must be given (instantiate allocates nothing)"
            )
        operands = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
        # a reduced output is 0-d whatever the rank; the planner checks it against ()
        operands += [(f"out{k}", o) for k, (o, r) in enumerate(zip(outs, self._fn.reduction_kinds)) if r is None]
        shape = tuple(operands[0][1].shape)
        for label, t in operands:
            if t.ndim != self.rank:
                raise ValueError(f"{self.__name__}: {label} has {t.ndim} dims, expected exactly {self.rank}")
            if tuple(t.shape) != shape:
                raise ValueError(
                    f"{self.__name__}: {label} has shape {tuple(t.shape)}, expected {shape} (no broadcasting)"
                )
