"""PointwiseDynamicFunction: the object `pointwise_dynamic` returns.

A thin public object: a call is served by the C hit path (runtime/hit_path.py), else routed to a
feature (features/routing.py) or planned (plans/planner.py), cached and run. Features use only its
public protocol (docs/architecture.md).
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import torch

from .config import CodeGenConfig
from .features import autograd, own_ops, torch_op
from .features.complex import complex_handler
from .features.instantiate import InstantiatedFunction
from .features.prepared import prepare_args, use_fast_path
from .features.routing import NO_ROUTE, feature, route
from .frontend import validation
from .frontend.payload import inspect_payload
from .frontend.reduction import parse_reductions
from .frontend.schema import FunctionSchema
from .plans.binder import KernelInfo
from .plans.explanation import Explanation
from .plans.planner import Planner
from .runtime import arguments as argcheck
from .runtime import hit_path
from .runtime.dispatch import LaunchPlan, PlanCache
from .runtime.hit_path import MISS
from . import tracing
from .tracing.expression import status as traced_status

logger = logging.getLogger("tritonwise")


class PointwiseDynamicFunction:
    """A pointwise function over tensors, compiled from a scalar-style @triton.jit payload."""

    def __init__(
        self,
        payload,
        schema: FunctionSchema,
        config: Optional[CodeGenConfig] = None,
        reductions=None,
        deterministic: bool = False,
        backward=None,
    ):
        self._payload = inspect_payload(payload)
        self._schema = schema
        self._config = CodeGenConfig.of(config)
        self._reductions = parse_reductions(reductions, schema.num_outputs())
        self.__name__ = self._payload.name
        self.__qualname__ = self._payload.qualname
        self.__doc__ = self._payload.fn.__doc__
        planner = Planner(self.__name__, self._payload, schema, self._config, self._reductions, deterministic)
        self._planner, self._plans = planner, planner.plans
        self._out_index = {f"out{k}": k for k in range(schema.num_outputs())}
        self._c_tables = None  # what call.h's __call__ reads: a CallTables once the hit path is on
        self._no_outputs = (None,) * schema.num_outputs()
        self._instances: dict = {}
        self._complex = None  # a complex.ComplexHandler once register_complex is called
        self._backward_payload = backward  # a hand-written backward payload, else None (derived)
        self._backward = None  # an autograd.Backward, built on the first call that records
        self.trace_key = tracing.register(self)  # names this function to code dynamo runs for real

    # -- the public protocol the features use ------------------------------------------------

    @property
    def schema(self) -> FunctionSchema:
        return self._schema

    fx = schema  # the schema, by the name FlagGems' PointwiseDynamicFunction gives it

    @property
    def payload(self):
        """The @triton.jit payload."""
        return self._payload.jit

    @property
    def payload_info(self):
        """What frontend/payload.py read of the payload (its source, name, globals, ...)."""
        return self._payload

    @property
    def config(self) -> CodeGenConfig:
        return self._config

    @property
    def reduction_kinds(self) -> tuple:
        """Per output: None, a full reduction's kind ("sum", "max", "min"), or an AxisEntry for one along dims."""
        return self._reductions

    @property
    def along_dims(self) -> bool:
        """Whether the outputs reduce along dims (such functions run plain calls only)."""
        return self._planner.along_dims

    @property
    def complex_handler(self):
        """The features.complex handler register_complex installed, else None."""
        return self._complex

    @property
    def plan_cache(self) -> PlanCache:
        return self._plans

    @property
    def planner(self) -> Planner:
        """The Planner that builds this function's plans and keeps every memo behind them."""
        return self._planner

    def outputs(self, kwargs: dict) -> tuple:
        """The outputs keyword arguments give, one per output (None: not given). An unknown keyword
        with value None is ignored: FlagGems' wrappers pass `out=None` through."""
        outs = self._given_outputs(kwargs)
        if outs is None:
            name = next(n for n, v in kwargs.items() if n not in self._out_index and v is not None)
            expected = ", ".join(self._out_index)
            raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{name}' (outputs: {expected})")
        return outs

    def plan(self, args: tuple, outs: tuple = (), collapse: bool = True) -> LaunchPlan:
        """The LaunchPlan of a call, built now, not cached (`collapse=False`: every dim kept, as instantiate)."""
        return self._planner.plan(args, outs or self._no_outputs, collapse)

    def sibling(self, payload, schema: FunctionSchema, reductions=None) -> "PointwiseDynamicFunction":
        """A PointwiseDynamicFunction of this config over another payload (backward functions)."""
        return PointwiseDynamicFunction(payload, schema, self._config, reductions)

    # -- calls -----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"PointwiseDynamicFunction({self._payload.origin}, {self._schema})"

    def __call__(self, *args, **kwargs):
        """The call; once the hit path is on, call.h's C method takes this one's place."""
        if torch.compiler.is_compiling():  # dynamo traces the payload's torch expression instead
            from .tracing.hook import compiled_call

            return compiled_call(self, self, args, kwargs)
        entry, tables, key = hit_path.entry, self._c_tables, None
        outs = self._given_outputs(kwargs) if kwargs else None
        if entry is not None and tables is not None and (outs is not None or not kwargs):  # the C hit path
            result = entry(tables.plans, args, MISS, tables.programs, outs)
            if type(result) is tuple and len(result) == 2 and result[0] is MISS:
                key = result[1]  # a miss, with the signature hit() built
            elif result is not MISS:
                self._plans.count_hit()
                return result
        return self._call_missed(args, kwargs, key)

    def _given_outputs(self, kwargs: dict) -> Optional[tuple]:
        """The outputs keyword arguments give, as call.h reads them; None where a non-output keyword has a value."""
        outs = [None] * len(self._out_index)
        for name, value in kwargs.items():
            k = self._out_index.get(name)
            if k is None and value is not None:
                return None
            if k is not None:
                outs[k] = value
        return tuple(outs)

    def _call_missed(self, args: tuple, kwargs: dict, key: Optional[tuple]):
        """A call the C hit path did not serve; `key` is the signature it built, or None."""
        self._share_tables()
        outs = self.outputs(kwargs) if kwargs else ()
        if key is None:
            key = argcheck.call_signature(args, outs)
        plan = self._plans.get(key)
        if plan is not None and plan.fast is not None and not outs:
            return plan.fast(args)  # the steady state: allocate and launch, nothing else
        if plan is None or not plan.serves_default_dtype():  # another default dtype decided its result dtype
            return self._miss(key, args, outs)
        launching = getattr(plan, "direct", True) is None  # no launcher yet: launched while launch.c was built
        result = plan.run(args, outs or self._no_outputs)
        if launching and plan.direct is not None:  # it has just taken launch.c's launcher: trace it now
            self._planner.shape_programs.publish(key, args, outs or self._no_outputs, plan)
        return result

    def _miss(self, key: tuple, args: tuple, given: tuple):
        """A call no cached plan or shape program serves: routed to a feature, else planned, cached,
        run and traced into a shape program of its class."""
        outs = given or self._no_outputs
        routed = route(self, args, outs)
        if routed is not NO_ROUTE:
            return routed
        if logger.isEnabledFor(logging.DEBUG):
            reason = argcheck.miss_reason(key, self._plans.newest_key())
            logger.debug("tritonwise: %s: plan-cache miss (%s)", self.__name__, reason)
        plan = self._planner.plan(args, outs, collapse=True)
        self._planner.siblings.adopt(key, plan)  # an earlier plan's launcher, rebound, where sound
        self._plans.put(key, plan)
        result = plan.fast(args) if plan.fast is not None and not given else plan.run(args, outs)
        self._planner.shape_programs.publish(key, args, outs, plan)
        self._share_tables()  # launching may have turned the hit path on
        return result

    def _share_tables(self) -> None:
        """Hand call.h this function's plans, programs and output names once the hit path is on."""
        if self._c_tables is None and hit_path.entry is not None:
            self._c_tables = hit_path.call_tables(self._plans, self._planner.shape_programs.programs, self._out_index)

    # -- features --------------------------------------------------------------------------

    def register_complex(self, mode, cross_kernel=None, tensorize_scalars: bool = False, fallback_target=None):
        """Handle complex arguments by running real kernels on view_as_real data (features/complex.py)."""
        self._complex = complex_handler(self, mode, cross_kernel, tensorize_scalars, fallback_target)
        return self

    def register_backward(self, payload):
        """Use the @triton.jit `payload` as the backward: this function's arguments and a gradient
        per output (then each max/min output) in, each tensor input's gradient out."""
        self._backward_payload, self._backward = payload, None
        return self

    def backward_functions(self):
        """The autograd.Backward holding this function's backward functions (built once)."""
        if self._backward is None:
            self._backward = autograd.Backward(self, self._backward_payload)
        return self._backward

    def explain_backward(self, *args, wrt=None):
        """What the backward of a call runs, without launching (autograd.BackwardExplanation), for
        the inputs at `wrt` (default: every floating tensor input)."""
        return autograd.explain(self, args, wrt)

    def instantiate(self, rank: int) -> "InstantiatedFunction":
        """The rank-`rank` function: no broadcasting, no allocation, no dimension collapsing."""
        self._refuse_along_dims("instantiate")
        if not isinstance(rank, int) or rank < 0:
            raise ValueError(f"{self.__name__}.instantiate: rank must be a non-negative int, got {rank!r}")
        if rank not in self._instances:
            self._instances[rank] = InstantiatedFunction(self, rank)
        return self._instances[rank]

    def as_torch_op(self, qualname: str):
        """Register this function as the custom op `qualname` ("namespace::name") and return it."""
        self._refuse_along_dims("as_torch_op")
        return torch_op.register(self, qualname)

    def _refuse_along_dims(self, what: str) -> None:
        if self.along_dims:
            raise NotImplementedError(f"{self.__name__}.{what}: not supported yet for reductions along dims")

    use_fast_path = staticmethod(use_fast_path)

    def prepare_args(self, *args, _skip_tensor_check: bool = False, **kwargs) -> tuple:
        """FlagGems' (ndim, args, kwargs) for `self.instantiate(ndim)` (features/prepared.py)."""
        return prepare_args(self, args, kwargs, _skip_tensor_check)

    # -- planning without launching --------------------------------------------------------

    def get_kernel_info(self, ndim: int, *args, **kwargs) -> KernelInfo:
        """The generated file of a rank-`ndim` kernel, as FlagGems' KernelInfo: the one `args` (and
        given outputs) need, written if missing; without arguments, the newest rank-`ndim` file."""
        if args or kwargs:
            outs = self.outputs(kwargs)
            self.instantiate(ndim).check(args, outs)
            self._planner.write_file(args, outs, collapse=False, note=True)
        return self._planner.binder.kernel_info(ndim)

    def explain(self, *args, **kwargs) -> "Explanation":
        """The plan for these arguments, without launching, and the rung that would serve the call now
        ("routed: <feature>" where a feature takes it; the plan is then the plain call's)."""
        outs = self.outputs(kwargs)
        if self._complex is not None and self._complex.applies(args, outs):
            raise TypeError(
                f"{self.__name__}.explain: a complex call runs the real kernel over view_as_real data "
                "(see tritonwise/features/complex.py); explain that real call instead"
            )
        plan = self._planner.plan(args, outs, collapse=True)
        return Explanation.of(plan, traced_status(self), self.rung(args, outs))

    def rung(self, args: tuple, outs: tuple = ()) -> str:
        """What would serve a call now: "routed: <feature>", "plan cache", "shape program" or "planner"."""
        outs = outs or self._no_outputs
        routed = feature(self, args, outs)
        return f"routed: {routed}" if routed else self._planner.rung(args, outs)

    def output_meta(self, *args) -> list:
        """(shape, strides, dtype) of each output a call allocates, generating nothing (fake and meta tensors too)."""
        return self._planner.output_meta(args, self._no_outputs)

    def output_device(self, *args, **kwargs):
        """The device a call runs and allocates on, by the real call's rule (0-d CPU tensors act as scalars)."""
        return self._planner.device(validation.python_scalars(args), self.outputs(kwargs))

    def generate(self, *args, collapse: bool = True, targets: Sequence = (), **kwargs):
        """Write the file these arguments need, without launching, and its kernel compiled for each
        of `targets` into the kernel store (and so for the combine of a split reduction's
        partials); returns the file's path."""
        outs = self.outputs(kwargs)
        if not targets:
            path = self._planner.write_file(args, outs, collapse)
        else:
            path = self._planner.compile_ahead(args, outs, collapse, targets)
        split = self._planner.split_launch(args, outs, collapse)
        if split is not None:  # the reductions that combine its partials, which a frozen process needs too
            own_ops.generate_combines(split, outs, targets)
        return path


hit_path.serve_calls_of(PointwiseDynamicFunction, PointwiseDynamicFunction._call_missed)
own_ops.make_functions_with(PointwiseDynamicFunction)
