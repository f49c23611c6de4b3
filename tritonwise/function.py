"""PointwiseDynamicFunction: the object `pointwise_dynamic` returns.

It runs the pipeline once per call signature -- frontend (kinds, dtypes) -> analysis (task
plan) -> codegen (spec, rendered file) -> runtime (loaded module) -- and keeps the result as a
LaunchPlan, so later calls with the same signature go straight to the launch.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import torch

from .analysis.broadcast import broadcast_shapes
from .analysis.plan import TaskPlan, analyze, analyze_rows, splittable
from .codegen.build import build_spec
from .codegen.key import generator_digest
from .codegen.params import index_arg_values
from .codegen.render import identity_marks, payload_alias, render
from .config import CodeGenConfig
from .derived_payloads import PayloadVariants
from .explanation import Explanation
from .frontend import validation
from .frontend.dtypes import check_unsigned_scalars, resolve_types
from .frontend.payload import inspect_payload
from .frontend.reduction import AxisEntry, kind_of, parse_reductions, reduction_of
from .frontend.schema import FunctionSchema
from .frontend.summary import summarize
from .instantiate import InstantiatedFunction
from . import own_ops
from .layout_templates import RowRule, row_rule
from .new_shapes import NewShapes
from .prepared import KernelInfo, prepare_args, use_fast_path
from .runtime import arguments as argcheck
from .runtime import hit_path
from .runtime.cache import ensure_file
from .runtime.cache import location as cache_location
from .runtime.dispatch import LaunchPlan, PlanCache, SplitLaunch
from .runtime.freeze import FrozenError
from .runtime.hit_path import MISS
from .runtime.interpret import runs_interpreted
from .runtime.kernels import compile_ahead
from .runtime.loader import load

logger = logging.getLogger("tritonwise")
_NO_ROUTE = object()  # PointwiseDynamicFunction._route: an ordinary call, for the plan path


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
        self._config = config if config is not None else CodeGenConfig()
        self._reductions = parse_reductions(reductions, schema.num_outputs())
        self._along_dims = any(isinstance(r, AxisEntry) for r in self._reductions)
        self._deterministic = bool(deterministic)
        self._plans = PlanCache()
        # plans and launchers of new shapes without the analysis
        self._new_shapes = NewShapes(self._config, schema.num_inputs())
        self._out_index = {f"out{k}": k for k in range(schema.num_outputs())}
        # what hit() reads (and call.h's __call__, which counts its hits in the PlanCache and
        # reads given outputs by the names in _out_index)
        new = self._new_shapes
        self._c_tables = (
            self._plans,
            self._plans.by_key,
            new.contiguous.c_records,
            new.layouts.c_records,
            self._out_index,
        )
        self._frontends: dict = {}  # call class -> _Frontend (see _frontend)
        self._kernels: dict = {}  # (call class, layout class, ...) -> _Kernel (see _kernel)
        self._resolved: dict = {}  # (call class, rank) -> Reductions along dims (see _reductions_for)
        self._instances: dict = {}
        self._probed: dict = {}  # payload value dtypes per probe inputs (codegen elides agreeing casts)
        self._complex = None  # a complex.ComplexHandler once register_complex is called
        self._backward_payload = backward  # a hand-written backward payload, else None (derived)
        self._backward = None  # an autograd.Backward, built on the first call that records
        self._no_outputs = (None,) * schema.num_outputs()
        self._kernel_infos: dict = {}  # task rank -> KernelInfo of the newest file generated for it
        self._variants = PayloadVariants(self._payload)  # what kernels with several payload calls run
        self.__name__ = self._payload.name
        self.__qualname__ = self._payload.qualname
        self.__doc__ = self._payload.fn.__doc__

    @property
    def schema(self) -> FunctionSchema:
        return self._schema

    @property
    def fx(self) -> FunctionSchema:
        """The schema, by the name FlagGems' PointwiseDynamicFunction gives it."""
        return self._schema

    @property
    def payload(self):
        return self._payload.jit

    @property
    def reduction_kinds(self) -> tuple:
        """Per output: None, the kind of its full reduction ("sum", "max", "min"), or an AxisEntry
        (frontend/reduction.py) for a reduction along dims."""
        return self._reductions

    @property
    def plan_cache(self) -> PlanCache:
        return self._plans

    def __repr__(self) -> str:
        return f"PointwiseDynamicFunction({self._payload.origin}, {self._schema})"

    def __call__(self, *args, **kwargs):
        """The call. Once the C hit path is enabled, launch.c's method (runtime/call.h) takes
        this one's place: the same first part in C, then _call_missed."""
        entry, key = hit_path.entry, None
        outs = self._given_outputs(kwargs) if kwargs else None
        if entry is not None and (outs is not None or not kwargs):  # the C hit path
            _, plans, templates, layouts, _ = self._c_tables
            result = entry(plans, args, MISS, templates, layouts, outs)
            if type(result) is tuple and len(result) == 2 and result[0] is MISS:
                key = result[1]  # a miss, with the signature hit() built
            elif result is not MISS:
                self._plans.hits += 1
                return result
        return self._call_missed(args, kwargs, key)

    def _given_outputs(self, kwargs: dict) -> Optional[tuple]:
        """The outputs keyword arguments give, one per output (None: not given), as call.h reads
        them; None where a keyword that is not an output's name has a value (see _outputs)."""
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
        outs = self._outputs(kwargs) if kwargs else ()
        if key is None:
            key = argcheck.call_signature(args, outs)
        plan = self._plans.get(key)
        if plan is not None and plan.fast is not None and not outs:
            return plan.fast(args)  # the steady state: allocate and launch, nothing else
        if plan is not None and plan.default_dtype is not None and plan.default_dtype != torch.get_default_dtype():
            plan = None  # built under another default dtype, which decided its result dtype
        if plan is None:
            return self._miss(key, args, outs)
        return plan.run(args, outs or self._no_outputs)

    def _miss(self, key: tuple, args: tuple, given: tuple):
        """A call no cached plan serves: its plan derived from a template of its class
        (new_shapes.py), else routed elsewhere or built by the analysis; then cached and run."""
        outs = given or self._no_outputs
        # A template's class routes nowhere, as a cached plan's does: derive before routing.
        plan = self._new_shapes.derive(key, torch.get_default_dtype())
        if plan is None:
            routed = self._route(args, outs)
            if routed is not _NO_ROUTE:
                return routed
        if logger.isEnabledFor(logging.DEBUG):
            reason = argcheck.miss_reason(key, self._plans.newest_key())
            logger.debug("tritonwise: %s: plan-cache miss (%s)", self.__name__, reason)
        if plan is None:
            plan = self._prepare(args, outs, collapse=True)
            self._new_shapes.remember(key, plan, self._row_rule(args, outs, plan))
        self._plans.put(key, plan)
        if plan.fast is not None and not given:  # a derived plan, its launcher already rebound
            return plan.fast(args)
        return plan.run(args, outs)

    def _route(self, args: tuple, outs: tuple):
        """Calls that no launch plan serves, taken off the plan path before any analysis: each
        re-enters with plain arguments or runs its own machinery, and their signatures never
        enter the plan cache (they differ from plain calls' in type, requires_grad or the
        negative bit), so a later hit cannot skip this. _NO_ROUTE for an ordinary call."""
        scalars = validation.python_scalars(args)
        if self._along_dims:
            self._check_plain_call(args, outs)
        if scalars is not args:  # NumPy scalars: plans are keyed on the python scalars torch reads
            return self(*scalars, **validation.output_keywords(outs))
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):  # recorded for autograd
            from . import autograd

            return autograd.call(self, args, outs)
        if self._complex is not None and self._complex.applies(args, outs):
            return self._complex(self, args, outs)
        if validation.has_dtensor(args, outs):
            from . import dtensor  # imports torch.distributed.tensor, which the caller has already

            return dtensor.call(self, args, outs)
        resolved = own_ops.resolve_negative_views(self.__name__, args, outs)
        if resolved is not None:
            return self(*resolved, **validation.output_keywords(outs))
        return _NO_ROUTE

    def _check_plain_call(self, args: tuple, outs: tuple) -> None:
        """Reductions along dims run plain calls only, for now."""
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            raise NotImplementedError(f"{self.__name__}: autograd through reductions along dims is not supported yet")
        if validation.has_dtensor(args, outs):
            raise NotImplementedError(f"{self.__name__}: DTensor arguments to reductions along dims: not supported yet")

    def register_complex(self, mode, cross_kernel=None, tensorize_scalars: bool = False, fallback_target=None):
        """Handle complex arguments by running real kernels on view_as_real data (see complex.py);
        a registration that cannot work is an error here."""
        from .complex import complex_handler

        self._complex = complex_handler(self, mode, cross_kernel, tensorize_scalars, fallback_target)
        return self

    def register_backward(self, payload):
        """Use the @triton.jit `payload` as this function's backward instead of deriving one. It
        takes this function's arguments, then one gradient per output (then the reduced value of
        each max/min output) and returns the gradient of every tensor input, in order."""
        self._backward_payload, self._backward = payload, None
        return self

    def backward_functions(self):
        """The autograd.Backward holding this function's backward functions (built once)."""
        if self._backward is None:
            from .autograd import Backward

            self._backward = Backward(self, self._backward_payload)
        return self._backward

    def explain_backward(self, *args, wrt=None):
        """What the backward of a call with `args` runs, without launching: an
        autograd.BackwardExplanation with the derived payload's file (`payload_path`) and the
        Explanation of its kernel (`kernel`); gradients of the inputs at `wrt` (default: every
        floating tensor input)."""
        from . import autograd

        return autograd.explain(self, args, wrt)

    def instantiate(self, rank: int) -> "InstantiatedFunction":
        """The rank-`rank` function: no broadcasting, no allocation, no dimension collapsing."""
        self._refuse_along_dims("instantiate")
        if not isinstance(rank, int) or rank < 0:
            raise ValueError(f"{self.__name__}.instantiate: rank must be a non-negative int, got {rank!r}")
        if rank not in self._instances:
            self._instances[rank] = InstantiatedFunction(self, rank)
        return self._instances[rank]

    use_fast_path = staticmethod(use_fast_path)

    def prepare_args(self, *args, _skip_tensor_check: bool = False, **kwargs) -> tuple:
        """FlagGems' (ndim, args, kwargs) for `self.instantiate(ndim)(*args, **kwargs)`: outputs
        allocated, operands wrapped as StridedBuffers over the task shape (prepared.py)."""
        return prepare_args(self, args, kwargs, _skip_tensor_check)

    def get_kernel_info(self, ndim: int, *args, **kwargs) -> KernelInfo:
        """The generated file of a rank-`ndim` kernel, as FlagGems' KernelInfo. tritonwise
        generates one file per dtypes and layout class, so `args` (and given outputs) choose it:
        the file `self.instantiate(ndim)` runs for them, written if missing. Without arguments,
        the newest file this function has generated for a rank-`ndim` task."""
        if args or kwargs:
            outs = self._outputs(kwargs)
            self.instantiate(ndim)._check(args, outs)
            types, reductions, task, _ = self._analyze(args, outs, False)
            self._note_file(self._spec(args, outs, types, reductions, task), None, task)
        info = self._kernel_infos.get(ndim)
        if info is None:
            raise LookupError(
                f"{self.__name__}.get_kernel_info({ndim}): no rank-{ndim} kernel generated yet; tritonwise "
                "generates one per dtypes and layout, so pass example arguments: get_kernel_info(ndim, *args)"
            )
        return info

    def _note_file(self, spec, path, task: TaskPlan):
        """Remember `spec`'s file (written now when `path` is None) as its rank's KernelInfo."""
        path = path if path is not None else _cached_file(spec)
        rank = len(task.task_shape)
        self._kernel_infos[rank] = KernelInfo(str(path), spec.kernel_name, "launch", rank)
        return path

    def explain(self, *args, **kwargs) -> "Explanation":
        """The plan for these arguments, without launching."""
        outs = self._outputs(kwargs)
        if self._complex is not None and self._complex.applies(args, outs):
            raise TypeError(
                f"{self.__name__}.explain: a complex call runs the real kernel over view_as_real data "
                "(see tritonwise/complex.py); explain that real call instead"
            )
        return Explanation.of(self._prepare(args, outs, collapse=True))

    def _outputs(self, kwargs: dict) -> tuple:
        """The given outputs. An unknown keyword is an error unless its value is None: FlagGems'
        wrappers pass `out=None` through (e.g. its bitwise_left_shift), which asks for nothing."""
        outs = self._given_outputs(kwargs)
        if outs is None:
            name = next(n for n, v in kwargs.items() if n not in self._out_index and v is not None)
            expected = ", ".join(self._out_index)
            raise TypeError(f"{self.__name__}() got an unexpected keyword argument '{name}' (outputs: {expected})")
        return outs

    def _prepare(self, args: tuple, outs: tuple, collapse: bool) -> LaunchPlan:
        """The launch plan of a plan-cache miss. Only the analysis of shapes and strides and the
        launch values run per shape; what depends on the call class alone (_frontend) and on it
        with the layout class (_kernel) is kept, so a new shape of a known class generates,
        hashes, reads and loads nothing."""
        args = validation.python_scalars(args)
        front = self._frontend(args, outs)
        task = self._task(args, outs, front, collapse)
        reductions = self._reductions_for(front, task.shape)
        return self._bind(args, outs, front.types, reductions, task, front.device, front.key)

    def output_meta(self, *args) -> list:
        """(shape, strides, dtype) of each output a call with `args` allocates; no code is generated.
        Works on fake and meta tensors (torch.compile's fake implementation uses it)."""
        types, reductions, task, _ = self._analyze(args, self._no_outputs, True)
        strides = iter(task.output_strides)
        return [
            (task.shape, next(strides), types.results[k])
            if r is None
            else (r.result_shape(task.shape), next(strides), r.result)
            if r.along_dims
            else ((), (), r.result)
            for k, r in enumerate(reductions)
        ]

    def output_device(self, *args, **kwargs):
        """The device a call with these arguments (and given outputs) runs on and allocates its
        outputs on: the real call's own rule (0-d CPU tensors beside others act as scalars)."""
        return self._device(validation.python_scalars(args), self._outputs(kwargs))

    def _device(self, args: tuple, outs: tuple):
        labelled = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
        labelled += [(f"out{k}", o) for k, o in enumerate(outs) if o is not None]
        device = validation.launch_device(self.__name__, labelled)
        if device is None:
            raise TypeError(f"{self.__name__}: needs at least one tensor argument or output to know the device")
        return device

    def as_torch_op(self, qualname: str):
        """Register this function as the PyTorch custom op `qualname` ("namespace::name") and
        return it (`torch.ops.namespace.name`): usable in torch.compile(fullgraph=True)."""
        from .torch_op import register

        self._refuse_along_dims("as_torch_op")
        return register(self, qualname)

    def _refuse_along_dims(self, what: str) -> None:
        if self._along_dims:
            raise NotImplementedError(f"{self.__name__}.{what}: not supported yet for reductions along dims")

    def _analyze(self, args: tuple, outs: tuple, collapse: bool) -> tuple:
        """(types, reductions, task plan, device) of a call: validated, promoted, analyzed."""
        args = validation.python_scalars(args)
        front = self._frontend(args, outs)
        task = self._task(args, outs, front, collapse)
        return front.types, self._reductions_for(front, task.shape), task, front.device

    def _frontend(self, args: tuple, outs: tuple) -> "_Frontend":
        """Validation of kinds and scalars, the device and torch's promotion: functions of the
        call class alone (see _call_class), so they run once per class and are kept (the memo
        is emptied past _MEMO_LIMIT classes). A call that fails them stores nothing."""
        key = _call_class(args, outs)
        front = self._frontends.get(key)
        if front is None:
            front = self._resolve(args, outs, key)
            _remember(self._frontends, key, front)
        return front

    def _resolve(self, args: tuple, outs: tuple, key: tuple) -> "_Frontend":
        name, schema = self.__name__, self._schema
        if len(args) != schema.num_inputs():
            raise TypeError(f"{name}() takes {schema.num_inputs()} positional inputs but {len(args)} were given")
        validation.check_kinds(name, schema, args)
        check_unsigned_scalars(name, schema, args)
        for k, out in enumerate(outs):
            if out is not None and not argcheck.is_tensor_like(out):
                raise TypeError(f"{name}: out{k} must be a Tensor or StridedBuffer, got {type(out).__name__}")
        device = self._device(args, outs)
        types = resolve_types(schema, args, widen_bools=not self._payload.uses_invert)
        reductions = tuple(r and reduction_of(kind_of(r), types.results[k]) for k, r in enumerate(self._reductions))
        for k, (out, r) in enumerate(zip(outs, reductions)):
            if out is None or r is not None or self._copies(k):
                continue
            if not torch.can_cast(types.results[k], out.dtype):
                types = self._payload_result(k, out.dtype, types, args)
        return _Frontend(key, types, reductions, device)

    def _task(self, args: tuple, outs: tuple, front: "_Frontend", collapse: bool) -> TaskPlan:
        """The shape-dependent part: broadcasting, checks of given outputs, the task plan."""
        name, types = self.__name__, front.types
        tensors = [a for a in args if argcheck.is_tensor_like(a)]
        inputs = [(tuple(t.shape), tuple(t.stride())) for t in tensors]
        elementwise = [o for o, r in zip(outs, self._reductions) if r is None]
        try:
            shape = _task_shape(inputs, [o for o in elementwise if o is not None])
        except RuntimeError as e:
            raise RuntimeError(f"{name}: {e}") from None
        reductions = self._reductions_for(front, shape)
        for k, (out, r) in enumerate(zip(outs, reductions)):
            if out is not None:
                dtype, expected = (types.results[k], shape) if r is None else (r.result, r.result_shape(shape))
                if r is None and self._copies(k):
                    dtype = out.dtype  # a copy converts to any given dtype
                validation.check_output(name, k, out, expected, dtype, front.device)
        if self._along_dims:
            return self._analyze_rows(inputs, outs, reductions, shape, tensors, types)
        return analyze(inputs, [_layout(o) for o in elementwise], _itemsize(tensors, types), self._config, collapse)

    def _reductions_for(self, front: "_Frontend", shape: tuple) -> tuple:
        """The call's Reductions: those along dims resolve their dims against the task's rank
        (the frontend, kept per call class, knows no shapes)."""
        if not self._along_dims:
            return front.reductions
        key = (front.key, len(shape))
        resolved = self._resolved.get(key)
        if resolved is None:
            results, name = front.types.results, self.__name__
            resolved = tuple(
                reduction_of(r, results[k], len(shape), f"{name}: reductions[{k}]")
                for k, r in enumerate(self._reductions)
            )
            _remember(self._resolved, key, resolved)
        return resolved

    def _row_rule(self, args: tuple, outs: tuple, plan: LaunchPlan) -> Optional[RowRule]:
        """What the C hit path needs to launch new shapes of a reduction along dims (None: the
        call is not one): its dims, from the Reductions kept per call class and rank."""
        if not self._along_dims or plan.task is None:
            return None
        front = self._frontend(validation.python_scalars(args), outs)
        return row_rule(self._reductions_for(front, plan.task.shape), self._config)

    def _analyze_rows(self, inputs, outs, reductions, shape, tensors, types) -> TaskPlan:
        """The task of a reduction along dims (every output reduces the same dims)."""
        r = reductions[0]
        if not inputs:
            raise TypeError(f"{self.__name__}: a reduction along dims needs at least one tensor input")
        if r.kind != "sum" and any(shape[d] == 0 for d in r.dims) and math.prod(r.result_shape(shape)):
            raise RuntimeError(f"{self.__name__}: {r.kind} along dims {r.dims} of an empty extent has no identity")
        layouts = [_layout(o) for o in outs]
        itemsize = _itemsize(tensors, types)
        return analyze_rows(inputs, layouts, r.dims, r.keepdim, itemsize, self._config, splittable(reductions))

    def _copies(self, k: int) -> bool:
        """Whether output `k` is a copy (the payload returns one of its arguments unchanged): a
        given output of a copy takes any dtype, converted on store as torch's copy_ converts,
        where other outputs follow torch's out= rule, torch.can_cast (docs/flaggems_semantics.md).
        FlagGems' to_copy and copy_ rely on it."""
        return self._payload.copies_input(k)

    def _payload_result(self, k: int, out_dtype, types, args):
        """A given output that cannot hold its promotion's result (torch.can_cast) takes the
        payload's own value when that one can be cast: FlagGems' frexp declares DEFAULT for its
        int32 exponent. Otherwise the types are unchanged and check_output names the mismatch."""
        from .runtime.probe import value_dtypes

        inputs = [
            (types.computed_as(k, i) or a.dtype, None) if argcheck.is_tensor_like(a) else (a, types.computed_as(k, i))
            for i, a in enumerate(args)
        ]
        values = value_dtypes(self._payload.fn, inputs)
        if values is None or len(values) != len(types.results) or not torch.can_cast(values[k], out_dtype):
            return types
        return replace(types, results=types.results[:k] + (values[k],) + types.results[k + 1 :])

    def generate(self, *args, collapse: bool = True, targets: Sequence = (), **kwargs):
        """Write the generated file these arguments need into the cache, without launching it
        (ahead-of-time generation), and its kernel compiled for each of `targets` into the
        kernel store (targets as runtime.kernels.parse_target gives them; no GPU needed);
        returns the file's path."""
        outs = self._outputs(kwargs)
        types, reductions, task, device = self._analyze(args, outs, collapse)
        if not targets:
            return _cached_file(self._spec(args, outs, types, reductions, task))
        plan = self._bind(args, outs, types, reductions, task, device)
        if plan.path is not None:
            alias = payload_alias(plan.spec.payload_name, plan.spec.kernel_name)
            variants = self._variants.bindings(plan.spec, alias)
            module = load(plan.path, plan.spec.kernel_name, alias, self._payload, "gpu", variants)
            kernel = getattr(module, plan.spec.kernel_name)
            compile_ahead(plan.spec.file_name, kernel, plan.kernel_values(args, outs), plan.num_warps, targets)
        return plan.path

    def _kernel(self, call_class, args, outs, types, reductions, task: TaskPlan, interpreted, loads) -> "_Kernel":
        """The spec, verified file and loaded launcher of a call: once per call class and layout
        class (`call_class` None: not kept). The spec is a function of the two (build_spec reads
        the call's dtypes and scalar kinds, its types, and of the task only its layout_class),
        so every new shape of a known pair reuses them: no build_spec, no hashing, no file access.
        The generator's digest (memoized) and the cache's location are in the key too: an edited
        generator means new files, another cache directory its own copy of the file."""
        memo = None
        if call_class is not None:
            memo = (call_class, task.layout_class, interpreted, loads, generator_digest(), cache_location())
        kernel = self._kernels.get(memo) if memo is not None else None
        if kernel is not None:
            return kernel
        spec = self._spec(args, outs, types, reductions, task)
        path = launch = None
        if loads:
            try:
                path = self._note_file(spec, None, task)
            except FrozenError as e:
                raise FrozenError(f"{self.__name__}({argcheck.describe_values(args)}): {e}") from None
            alias = payload_alias(spec.payload_name, spec.kernel_name)
            backend = "interpreter" if interpreted else "gpu"
            launch = load(path, spec.kernel_name, alias, self._payload, backend, self._variants.bindings(spec, alias)).launch
        kernel = _Kernel(spec, path, launch)
        if memo is not None:
            _remember(self._kernels, memo, kernel)
        return kernel

    def _spec(self, args, outs, types, reductions, task: TaskPlan):
        call = summarize(self._schema, args, outs or self._no_outputs)
        return build_spec(self._payload, call, types, task, reductions, self._deterministic, self._probe)

    def _probe(self, inputs: tuple):
        """The dtypes the payload returns for `inputs` (see runtime/probe.py), once per input types."""
        if inputs not in self._probed:
            from .runtime.probe import remembered_value_dtypes

            self._probed[inputs] = remembered_value_dtypes(self._payload, inputs)
        return self._probed[inputs]

    def _bind(self, args, outs, types, reductions, task: TaskPlan, device, call_class=None) -> LaunchPlan:
        meta = device.type == "meta"  # shapes and dtypes only: outputs are allocated, nothing runs
        interpreted = not meta and runs_interpreted(device)
        loads = bool(task.numel) and not meta
        kernel = self._kernel(call_class, args, outs, types, reductions, task, interpreted, loads)
        spec, path, launch = kernel.spec, kernel.path, kernel.launch
        positions = tuple(i for i, a in enumerate(args) if argcheck.is_tensor_like(a))
        moved = tuple(i for i in positions if device.type != "cpu" and args[i].device != device)
        rows = self._along_dims
        strides = iter(task.output_strides)
        out_strides = tuple(next(strides) if r is None or rows else None for r in reductions)
        given = not meta and any(o is not None for o, r in zip(outs, reductions) if r is None)
        extents = (  # both only read by the overlap check of given outputs
            tuple(None if s is None else argcheck.dense_extent(task.shape, s) for s in out_strides) if given else ()
        )
        return LaunchPlan(
            name=self.__name__,
            launch=launch,
            index_args=index_arg_values(spec, task),
            tensor_positions=positions,
            out_shape=reductions[0].result_shape(task.shape) if rows else task.shape,
            out_strides=out_strides,
            out_dtypes=tuple(r.result for r in reductions) if rows else types.results,
            device=device,
            to_device=moved,
            out_extents=extents,
            in_extents=tuple(argcheck.dense_extent(args[i].shape, args[i].stride()) for i in positions if given),
            reductions=reductions if any(reductions) and not rows else (),
            deterministic=spec.deterministic,
            path=path,
            task=task,
            spec=spec,
            interpreted=interpreted,
            empty_fill=0 if rows and not task.numel else None,  # a sum of nothing (_analyze_rows refuses max/min)
            split=_split_launch(task, reductions),
            default_dtype=_default_dtype_decided(args, types.results),
            **LaunchPlan.task_fields(task),
        )


hit_path.serve_calls_of(PointwiseDynamicFunction, PointwiseDynamicFunction._call_missed)


def _split_launch(task: TaskPlan, reductions: tuple) -> Optional[SplitLaunch]:
    """What the runtime needs to combine a split reduction's partial values (None: no split)."""
    split = task.split
    if split is None:
        return None
    kinds, accs = tuple(r.kind for r in reductions), tuple(r.acc for r in reductions)
    return SplitLaunch(split.parts, split.rows, split.out_row_strides, kinds, accs)


def _default_dtype_decided(args: tuple, results: tuple) -> Optional[torch.dtype]:
    """torch's default dtype when it may have decided a result dtype: a result of that dtype that
    no sized tensor operand has (an int tensor times a python float, INT_TO_FLOAT on ints). A
    false positive only costs the plan its fast path."""
    default = torch.get_default_dtype()
    sized = {a.dtype for a in args if argcheck.is_tensor_like(a) and a.ndim}
    return default if default in results and default not in sized else None


_MEMO_LIMIT = 4096  # call classes (and class pairs) kept per function; past it the memo restarts


def _remember(memo: dict, key, value) -> None:
    """memo[key] = value, emptying the memo first once it holds _MEMO_LIMIT entries."""
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value


@dataclass(frozen=True)
class _Frontend:
    """The frontend's answers for one call class: the same for every shape and stride."""

    key: tuple  # the call class (_call_class)
    types: object  # frontend.dtypes.CallTypes
    reductions: tuple
    device: torch.device


@dataclass(frozen=True)
class _Kernel:
    """The generated kernel of a call class and layout class (see PointwiseDynamicFunction._kernel)."""

    spec: object  # codegen.spec.KernelSpec
    path: object  # the verified file, None when nothing launches (numel 0, meta tensors)
    launch: object


def _call_class(args: tuple, outs: tuple) -> tuple:
    """What validation, the device and promotion read of a call, and nothing of its shapes or
    strides: per operand its type, dtype, whether it is 0-d and its device; per scalar its type,
    and for an int the width class Triton passes it in (arguments.int_class, which also sets
    apart values validation rejects); which outputs are given; torch's default dtype (promotion
    of python floats reads it). Two calls of one class get the same _Frontend."""
    return (
        torch.get_default_dtype(),
        tuple(_operand_class(a) for a in args),
        tuple(None if o is None else _operand_class(o) for o in outs),
    )


def _operand_class(a):
    if isinstance(a, argcheck.TENSOR_TYPES):
        return (type(a), a.dtype, a.ndim == 0, a.device)
    return argcheck.int_class(a) if type(a) is int else type(a)


def _cached_file(spec):
    return ensure_file(spec.file_name, lambda: render(spec), identity_marks(spec))


def _task_shape(inputs: list, given: list) -> tuple:
    if inputs:
        return broadcast_shapes([s for s, _ in inputs])
    return tuple(given[0].shape) if given else ()


def _layout(out) -> Optional[tuple]:
    return None if out is None else (tuple(out.shape), tuple(out.stride()))


def _itemsize(tensors, types) -> int:
    return max([t.dtype.itemsize for t in tensors] + [d.itemsize for d in types.results])
