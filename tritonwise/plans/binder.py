"""Binder: a call's analyzed task -> its generated kernel and LaunchPlan (codegen, file, load).

The spec, verified file and loaded launcher depend only on the call class and the task's layout
class, so they are kept per pair: a new shape of a known pair builds, hashes and reads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ..analysis.plan import TaskPlan
from ..codegen.build import build_spec
from ..codegen.key import generator_digest
from ..codegen.render import identity_marks, payload_alias, render
from ..frontend.summary import summarize
from ..runtime import arguments as argcheck
from ..runtime.cache import ensure_file
from ..runtime.cache import location as cache_location
from ..runtime.dispatch import LaunchPlan, SplitLaunch
from ..runtime.freeze import FrozenError
from ..runtime.interpreter.interpret import runs_interpreted
from ..runtime.interpreter import probe as probing
from ..runtime.loader import load
from .derived_payloads import PayloadVariants
from .memo import remember


@dataclass
class KernelInfo:
    """A generated kernel as FlagGems' C++ integration reads it: the file, the @triton.jit
    kernel's name in it, the name of the function that launches it, and the task rank."""

    file_path: str
    kernel_name: str
    wrapper_name: str
    ndim: int


@dataclass(frozen=True)
class Kernel:
    """The generated kernel of a call class and layout class (see Binder.kernel)."""

    spec: object  # codegen.spec.KernelSpec
    path: object  # the verified file, None when nothing launches (numel 0, meta tensors)
    launch: object


class Binder:
    """Specs, files and loaded launchers of one function's calls, and their LaunchPlans."""

    def __init__(self, name: str, payload, schema, deterministic: bool, along_dims: bool):
        self.name, self.payload, self.schema = name, payload, schema
        self.deterministic, self.along_dims = deterministic, along_dims
        self.variants = PayloadVariants(payload)  # what kernels with several payload calls run
        self.kernel_infos: dict = {}  # task rank -> KernelInfo of the newest file generated for it
        self._kernels: dict = {}  # (call class, layout class, ...) -> Kernel
        self._probed: dict = {}  # payload value dtypes per probe inputs (codegen elides agreeing casts)

    def spec(self, args, outs, types, reductions, task: TaskPlan):
        call = summarize(self.schema, args, outs)
        return build_spec(self.payload, call, types, task, reductions, self.deterministic, self.probe)

    def probe(self, inputs: tuple):
        """The dtypes the payload returns for `inputs` (see runtime/interpreter/probe.py), once per input types."""
        if inputs not in self._probed:
            self._probed[inputs] = probing.remembered_value_dtypes(self.payload, inputs)
        return self._probed[inputs]

    def note_file(self, spec, task: TaskPlan):
        """Write `spec`'s file if missing and remember it as its rank's KernelInfo."""
        path = cached_file(spec)
        rank = len(task.task_shape)
        self.kernel_infos[rank] = KernelInfo(str(path), spec.kernel_name, "launch", rank)
        return path

    def kernel_info(self, ndim: int) -> KernelInfo:
        """The newest file generated for a rank-`ndim` task, as FlagGems' KernelInfo."""
        info = self.kernel_infos.get(ndim)
        if info is None:
            raise LookupError(
                f"{self.name}.get_kernel_info({ndim}): no rank-{ndim} kernel generated yet; tritonwise "
                "generates one per dtypes and layout, so pass example arguments: get_kernel_info(ndim, *args)"
            )
        return info

    def load(self, spec, path, backend: str):
        """The generated module at `path`, its payload (and variants) bound."""
        alias = payload_alias(spec.payload_name, spec.kernel_name)
        return load(path, spec.kernel_name, alias, self.payload, backend, self.variants.bindings(spec, alias))

    def kernel(self, call_class, args, outs, types, reductions, task: TaskPlan, interpreted, loads) -> Kernel:
        """A call's spec, verified file and loaded launcher, kept per call class (None: not kept) and layout class."""
        memo = (call_class, task.layout_class, interpreted, loads, generator_digest(), cache_location())
        kernel = self._kernels.get(memo) if call_class is not None else None
        if kernel is not None:
            return kernel
        spec = self.spec(args, outs, types, reductions, task)
        path = launch = None
        if loads:
            try:
                path = self.note_file(spec, task)
            except FrozenError as e:
                raise FrozenError(f"{self.name}({argcheck.describe_values(args)}): {e}") from None
            launch = self.load(spec, path, "interpreter" if interpreted else "gpu").launch
        kernel = Kernel(spec, path, launch)
        if call_class is not None:
            remember(self._kernels, memo, kernel)
        return kernel

    def bind(self, args, outs, types, reductions, task: TaskPlan, device, call_class=None) -> LaunchPlan:
        """The LaunchPlan of an analyzed call: its kernel and the values each launch passes."""
        meta = device.type == "meta"  # shapes and dtypes only: outputs are allocated, nothing runs
        interpreted = not meta and runs_interpreted(device)
        loads = bool(task.numel) and not meta
        kernel = self.kernel(call_class, args, outs, types, reductions, task, interpreted, loads)
        positions = tuple(i for i, a in enumerate(args) if argcheck.is_tensor_like(a))
        rows = self.along_dims
        out_shape, out_strides = output_layout(task, reductions, rows)
        given = not meta and any(o is not None and s is not None for o, s in zip(outs, out_strides))
        return LaunchPlan(
            name=self.name,
            launch=kernel.launch,
            index_args=kernel.spec.index_values(task),
            tensor_positions=positions,
            out_shape=out_shape,
            out_strides=out_strides,
            out_dtypes=tuple(r.result for r in reductions) if rows else types.results,
            device=device,
            to_device=tuple(i for i in positions if device.type != "cpu" and args[i].device != device),
            out_extents=_extents(out_shape, out_strides, outs) if given else (),  # read by the overlap check
            in_extents=tuple(argcheck.dense_extent(args[i].shape, args[i].stride()) for i in positions if given),
            reductions=reductions if any(reductions) and not rows else (),
            deterministic=kernel.spec.deterministic,
            path=kernel.path,
            task=task,
            spec=kernel.spec,
            interpreted=interpreted,
            empty_fill=0 if rows and not task.numel else None,  # a sum of nothing (max/min refused earlier)
            split=split_launch(task, reductions),
            default_dtype=_default_dtype_decided(args, types.results),
            **LaunchPlan.task_fields(task),
        )


def output_layout(task: TaskPlan, reductions: tuple, along_dims: bool) -> tuple:
    """(shape, strides per output) of a call's outputs: the task's shape, or a reduction along
    dims' result shape; strides None for an output a full reduction writes."""
    strides = iter(task.output_strides)
    out_strides = tuple(next(strides) if r is None or along_dims else None for r in reductions)
    return (reductions[0].result_shape(task.shape) if along_dims else task.shape), out_strides


def cached_file(spec):
    """`spec`'s generated file, written into the cache if missing."""
    return ensure_file(spec.file_name, lambda: render(spec), identity_marks(spec))


def _extents(shape: tuple, out_strides: tuple, outs: tuple) -> tuple:
    """The dense extent of each given output over the outputs' shape (None: not given, or fully reduced)."""
    return tuple(None if o is None or s is None else argcheck.dense_extent(shape, s) for o, s in zip(outs, out_strides))


def split_launch(task: TaskPlan, reductions: tuple) -> Optional[SplitLaunch]:
    """What the runtime needs to combine a split reduction's partial values (None: no split)."""
    split = task.split
    if split is None:
        return None
    kinds, accs = tuple(r.kind for r in reductions), tuple(r.acc for r in reductions)
    results = tuple(r.result for r in reductions)
    return SplitLaunch(split.parts, split.rows, split.out_row_strides, split.partial_strides, kinds, accs, results)


def _default_dtype_decided(args: tuple, results: tuple) -> Optional[torch.dtype]:
    """torch's default dtype where it may have decided a result dtype (one no sized tensor operand
    has); a false positive only costs the plan its fast path."""
    default = torch.get_default_dtype()
    sized = {a.dtype for a in args if argcheck.is_tensor_like(a) and a.ndim}
    return default if default in results and default not in sized else None
