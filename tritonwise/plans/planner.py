"""Planner: a call -> its LaunchPlan, through frontend -> analysis -> codegen -> bind.

What depends on the call class alone (the Frontend) and on it with the layout class (the Binder's
kernels) is kept, so a new shape of a known class generates and loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import torch

from ..analysis.broadcast import broadcast_shapes
from ..analysis.plan import TaskPlan, analyze, analyze_rows, splittable
from ..config import CodeGenConfig
from ..frontend import validation
from ..frontend.dtypes import check_unsigned_scalars, resolve_types
from ..frontend.reduction import AxisEntry, kind_of, reduction_of
from ..runtime import arguments as argcheck
from ..runtime.dispatch import LaunchPlan, PlanCache
from ..runtime.interpreter import probe
from ..runtime.kernels import compile_ahead
from .binder import Binder, cached_file, output_layout, split_launch
from .memo import remember
from .shape_programs import ShapePrograms
from .siblings import Siblings


@dataclass(frozen=True)
class Frontend:
    """The frontend's answers for one call class: the same for every shape and stride."""

    key: tuple  # the call class (call_class)
    types: object  # frontend.dtypes.CallTypes
    reductions: tuple
    device: torch.device


class Planner:
    """The plans of one pointwise function and every memo behind them: `plans`, `shape_programs`,
    `siblings`, the frontend per call class, Reductions per (class, rank), the Binder's kernels."""

    def __init__(self, name: str, payload, schema, config: CodeGenConfig, reductions: tuple, deterministic: bool):
        self.name, self.payload, self.schema, self.config = name, payload, schema, config
        self.reductions = reductions
        self.along_dims = any(isinstance(r, AxisEntry) for r in reductions)
        self.plans = PlanCache()
        self.shape_programs = ShapePrograms(self)
        self.siblings = Siblings()
        self.binder = Binder(name, payload, schema, deterministic, self.along_dims)
        self._frontends: dict = {}  # call class -> Frontend
        self._resolved: dict = {}  # (call class, rank) -> Reductions along dims

    def plan(self, args: tuple, outs: tuple, collapse: bool) -> LaunchPlan:
        """The LaunchPlan of a call (kept in `plans` by the caller, not here)."""
        args, front, reductions, task = self.analyze(args, outs, collapse)
        return self.binder.bind(args, outs, front.types, reductions, task, front.device, front.key)

    def rung(self, args: tuple, outs: tuple) -> str:
        """The ladder's rung that would serve a call now: "plan cache", "shape program" or "planner"."""
        key = argcheck.call_signature(args, outs)
        plan = self.plans.by_key.get(key)
        if plan is not None and plan.serves_default_dtype():
            return "plan cache"
        return "shape program" if self.shape_programs.serve(key, len(args)) else "planner"

    def analyze(self, args: tuple, outs: tuple, collapse: bool) -> tuple:
        """(args, Frontend, reductions, task plan) of a call: validated, promoted, analyzed (NumPy scalars
        in `args` read as torch reads them)."""
        args = validation.python_scalars(args)
        front = self.frontend(args, outs)
        task = self.task(args, outs, front, collapse)
        return args, front, self.reductions_for(front, task.shape), task

    def output_meta(self, args: tuple, outs: tuple) -> list:
        """(shape, strides, dtype) of each output a call with `args` allocates; nothing generated."""
        _, front, reductions, task = self.analyze(args, outs, True)
        shape, strides = output_layout(task, reductions, self.along_dims)
        dtypes = [front.types.results[k] if r is None else r.result for k, r in enumerate(reductions)]
        return [((), (), dtype) if s is None else (shape, s, dtype) for s, dtype in zip(strides, dtypes)]

    def split_launch(self, args: tuple, outs: tuple, collapse: bool):
        """A call's SplitLaunch (how its partial values are combined), None where it does not split."""
        _, _, reductions, task = self.analyze(args, outs, collapse)
        return split_launch(task, reductions)

    def write_file(self, args: tuple, outs: tuple, collapse: bool, note: bool = False):
        """The file a call needs, written if missing (`note`: kept as its rank's KernelInfo); nothing runs."""
        args, front, reductions, task = self.analyze(args, outs, collapse)
        spec = self.binder.spec(args, outs, front.types, reductions, task)
        return self.binder.note_file(spec, task) if note else cached_file(spec)

    def compile_ahead(self, args: tuple, outs: tuple, collapse: bool, targets):
        """The file a call needs, its kernel compiled for each of `targets` into the kernel store."""
        args, front, reductions, task = self.analyze(args, outs, collapse)
        plan = self.binder.bind(args, outs, front.types, reductions, task, front.device)
        if plan.path is not None:
            kernel = getattr(self.binder.load(plan.spec, plan.path, "gpu"), plan.spec.kernel_name)
            compile_ahead(plan.spec.file_name, kernel, plan.kernel_values(args, outs), plan.num_warps, targets)
        return plan.path

    def frontend(self, args: tuple, outs: tuple) -> Frontend:
        """Validation, device and promotion: functions of the call class, kept per class (failures: nothing)."""
        key = call_class(args, outs)
        front = self._frontends.get(key)
        if front is None:
            front = self._resolve(args, outs, key)
            remember(self._frontends, key, front)
        return front

    def _resolve(self, args: tuple, outs: tuple, key: tuple) -> Frontend:
        name, schema = self.name, self.schema
        if len(args) != schema.num_inputs():
            raise TypeError(f"{name}() takes {schema.num_inputs()} positional inputs but {len(args)} were given")
        validation.check_kinds(name, schema, args)
        check_unsigned_scalars(name, schema, args)
        for k, out in enumerate(outs):
            if out is not None and not argcheck.is_tensor_like(out):
                raise TypeError(f"{name}: out{k} must be a Tensor or StridedBuffer, got {type(out).__name__}")
        device = self.device(args, outs)
        types = resolve_types(schema, args, widen_bools=not self.payload.uses_invert)
        reductions = tuple(r and reduction_of(kind_of(r), types.results[k]) for k, r in enumerate(self.reductions))
        for k, (out, r) in enumerate(zip(outs, reductions)):
            copy = self.payload.copies_input(k)  # then any dtype, converted as copy_ (docs/flaggems_semantics.md)
            if out is not None and r is None and not copy and not torch.can_cast(types.results[k], out.dtype):
                types = self._payload_result(k, out.dtype, types, args)
        return Frontend(key, types, reductions, device)

    def device(self, args: tuple, outs: tuple):
        """The device a call runs on and allocates its outputs on."""
        labelled = [(f"argument {i}", a) for i, a in enumerate(args) if argcheck.is_tensor_like(a)]
        labelled += [(f"out{k}", o) for k, o in enumerate(outs) if o is not None]
        device = validation.launch_device(self.name, labelled)
        if device is None:
            raise TypeError(f"{self.name}: needs at least one tensor argument or output to know the device")
        return device

    def task(self, args: tuple, outs: tuple, front: Frontend, collapse: bool) -> TaskPlan:
        """The shape-dependent part: broadcasting, checks of given outputs, the task plan."""
        tensors = [a for a in args if argcheck.is_tensor_like(a)]
        inputs = [(tuple(t.shape), tuple(t.stride())) for t in tensors]
        layouts = [None if o is None else (tuple(o.shape), tuple(o.stride())) for o in outs]
        try:
            shape = self._task_shape(inputs, layouts)
        except RuntimeError as e:
            raise RuntimeError(f"{self.name}: {e}") from None
        reductions = self.reductions_for(front, shape)
        for k, (out, r) in enumerate(zip(outs, reductions)):
            if out is not None:
                dtype, expected = (front.types.results[k], shape) if r is None else (r.result, r.result_shape(shape))
                if r is None and self.payload.copies_input(k):
                    dtype = out.dtype  # a copy converts to any given dtype
                validation.check_output(self.name, k, out, expected, dtype, front.device)
        if self.along_dims and not inputs:
            raise TypeError(f"{self.name}: a reduction along dims needs at least one tensor input")
        return self._layout_task(inputs, layouts, shape, reductions, _itemsize(tensors, front.types), collapse)

    def traced_task(self, args: tuple, outs: tuple, inputs: list, layouts: list) -> Optional[tuple]:
        """(Reductions, task()) on symbolic (shape, strides) (plans/symbolic.py), given outputs'
        `layouts` checked as far as they go; None where one would be refused."""
        args = validation.python_scalars(args)
        front = self.frontend(args, outs)
        shape = self._task_shape(inputs, layouts)
        reductions = self.reductions_for(front, shape)
        for layout, r in zip(layouts, reductions):
            if layout is not None:
                expected = shape if r is None else r.result_shape(shape)
                if not validation.output_layout_fits(layout, expected):
                    return None
        itemsize = _itemsize([a for a in args if argcheck.is_tensor_like(a)], front.types)
        return reductions, self._layout_task(inputs, layouts, shape, reductions, itemsize, True)

    def _task_shape(self, inputs: list, layouts: list) -> tuple:
        """The broadcast shape of the inputs; without inputs, the first given elementwise output's."""
        if inputs:
            return broadcast_shapes([s for s, _ in inputs])
        given = [o for o, r in zip(layouts, self.reductions) if r is None and o is not None]
        return tuple(given[0][0]) if given else ()

    def _layout_task(self, inputs: list, layouts: list, shape: tuple, reductions: tuple, itemsize: int, collapse):
        """The analysis of a call's (shape, strides) tuples: integers, or symbolic ones."""
        if self.along_dims:
            r = reductions[0]
            empty = [d for d in r.dims if shape[d] == 0]
            extreme = next((e.kind for e in reductions if e is not None and e.kind != "sum"), None)
            if extreme and empty:  # torch refuses it even where the result is empty too
                raise IndexError(f"{self.name}: {extreme} along dim {empty[0]}, an empty extent, has no identity")
            return analyze_rows(inputs, layouts, r.dims, r.keepdim, itemsize, self.config, splittable(reductions))
        elementwise = [o for o, r in zip(layouts, self.reductions) if r is None]
        return analyze(inputs, elementwise, itemsize, self.config, collapse)

    def reductions_for(self, front: Frontend, shape: tuple) -> tuple:
        """The call's Reductions, those along dims resolved against the task's rank."""
        if not self.along_dims:
            return front.reductions
        key = (front.key, len(shape))
        resolved = self._resolved.get(key)
        if resolved is None:
            results = front.types.results
            resolved = tuple(
                reduction_of(r, results[k], len(shape), f"{self.name}: reductions[{k}]")
                for k, r in enumerate(self.reductions)
            )
            remember(self._resolved, key, resolved)
        return resolved

    def _payload_result(self, k: int, out_dtype, types, args):
        """A given output that cannot hold its promotion's result takes the payload's own value when
        that one can be cast (FlagGems' frexp declares DEFAULT for its int32 exponent)."""
        inputs = [
            (types.computed_as(k, i) or a.dtype, None) if argcheck.is_tensor_like(a) else (a, types.computed_as(k, i))
            for i, a in enumerate(args)
        ]
        values = probe.value_dtypes(self.payload.fn, inputs)
        if values is None or len(values) != len(types.results) or not torch.can_cast(values[k], out_dtype):
            return types
        return replace(types, results=types.results[:k] + (values[k],) + types.results[k + 1 :])


def call_class(args: tuple, outs: tuple) -> tuple:
    """What validation, device and promotion read of a call, nothing of shapes or strides: operand
    types, dtypes, 0-d-ness and devices, scalar kinds, given outputs, the default dtype."""
    return (
        torch.get_default_dtype(),
        tuple(_operand_class(a) for a in args),
        tuple(None if o is None else _operand_class(o) for o in outs),
    )


def _operand_class(a):
    if isinstance(a, argcheck.TENSOR_TYPES):
        return (type(a), a.dtype, a.ndim == 0, a.device)
    return argcheck.int_class(a) if type(a) is int else type(a)


def _itemsize(tensors, types) -> int:
    return max([t.dtype.itemsize for t in tensors] + [d.itemsize for d in types.results])
