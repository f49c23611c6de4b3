"""The per-call hot path: a cache of launch plans and the launch itself.

A LaunchPlan is built once per call signature and holds what a call needs that does not depend on
the data (output layouts, the loaded launcher, grid, index arguments); a hit allocates, checks given
outputs for overlap, and launches.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from ..errors import PayloadError
from . import hit_path
from .arguments import check_partial_overlap
from .freeze import FrozenError
from .interpreter.interpret import int64_scalars, interpreting
from .kernels import first_launch
from ..strided_buffer import StridedBuffer

# The Triton interpreter keeps global state (patched language functions, grid indices).
INTERPRETER_LOCK = threading.RLock()


_COMBINE = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}
# combine(kind, partials, rows): a split's partial values reduced along dim 0 into its output's
# rows in one kernel (features/own_ops.combine_partials, which registers itself: the runtime sits
# below the functions that build kernels); None: torch combines them
_combine_partials: Optional[Callable] = None


def combine_partials_with(combine: Callable) -> None:
    global _combine_partials
    _combine_partials = combine


@dataclass(frozen=True)
class SplitLaunch:
    """A split reduction (SplitRows): the kernel writes partials per output, combined into the outputs after it."""

    parts: int
    rows: tuple
    out_row_strides: tuple
    partial_strides: tuple  # the buffers' layout, as the analysis planned it (SplitRows)
    kinds: tuple
    accs: tuple
    results: tuple  # each output's result dtype, which a given output of another dtype receives converted

    def buffers(self, device) -> list:
        """Each output's (parts, *rows) buffer of partials."""
        shape, strides = (self.parts, *self.rows), self.partial_strides
        return [torch.empty_strided(shape, strides, dtype=acc, device=device) for acc in self.accs]

    def combine(self, partials, outputs) -> None:
        """Each output's rows from its buffer of partial values, as the unsplit kernel stores them
        (the accumulator rounded to the result dtype, then converted to the output's)."""
        for k, (out, buffer) in enumerate(zip(outputs, partials)):
            rows = self.rows_of(out, k)
            if self.own_combine(k, rows.dtype) and _combine_partials is not None:
                _combine_partials(self.kinds[k], buffer, rows)
            else:
                rows.copy_(_COMBINE[self.kinds[k]](buffer, 0).to(self.results[k]))

    def own_combine(self, k: int, out_dtype: torch.dtype) -> bool:
        """Whether output `k` takes tritonwise's own combine, one kernel that rounds once as it
        stores: where its dtype is the result's, or the result's is the partials' (nothing to
        round in between). Else torch's combine, rounded to the result, then converted (torch's
        `sum` into a narrower `out` would round the partials before adding them)."""
        return out_dtype == self.results[k] or self.results[k] == self.accs[k]

    def rows_of(self, out, k: int):
        """Output `k`'s rows: the (*rows) view of `out` (a tensor or StridedBuffer) the combine writes."""
        strides = self.out_row_strides[k]
        if isinstance(out, StridedBuffer):
            return StridedBuffer(out.unwrap(), self.rows, strides, dtype=out.dtype, offset=out.offset)
        return torch.as_strided(out, self.rows, strides, out.storage_offset())


@dataclass
class LaunchPlan:
    name: str
    launch: Optional[Callable]  # the generated module's launch(grid, *operands, *index_args, *constexprs, num_warps)
    grid: tuple
    index_args: tuple
    tensor_positions: tuple  # which payload arguments are tensors
    out_shape: tuple
    out_strides: tuple
    out_dtypes: tuple
    device: torch.device
    numel: int
    to_device: tuple  # payload positions of 0-d CPU tensors to move to the launch device
    out_extents: tuple  # dense extent of each given output's layout (None: not checked)
    in_extents: tuple  # dense extent of each tensor input
    reductions: tuple = ()  # per output: a Reduction, or None for an elementwise output
    deterministic: bool = False
    constexprs: tuple = ()  # values of the kernel's constexpr parameters (Scheme.constexpr_values)
    num_warps: int = 4
    direct: Optional[Callable] = None  # set by a GPU launch once launch.c is built (runtime/kernels.first_launch)
    fast: Optional[Callable] = None  # fast(args) for calls giving no outputs, once `direct` exists
    path: object = None
    task: object = None  # the analysis' TaskPlan, for explain()
    spec: object = None  # the KernelSpec of the generated file
    interpreted: bool = False  # runs in Triton's interpreter (runtime/interpreter/interpret.py), not compiled
    empty_fill: object = None  # a sum along dims of an empty extent: the outputs' value (nothing launches)
    # torch's default dtype when it decided a result dtype (int tensor * 2.5), else None: such a
    # plan serves only calls made under the same default (the signature does not hold it)
    default_dtype: Optional[torch.dtype] = None
    split: Optional["SplitLaunch"] = None  # a split reduction along dims: partials to combine
    hit: object = None  # launch.c's Record: what hit() reads to serve this plan (runtime/hit_path.py)

    def serves_default_dtype(self) -> bool:
        """Whether calls under torch's current default dtype may take this plan (see `default_dtype`)."""
        return self.default_dtype is None or self.default_dtype == torch.get_default_dtype()

    @property
    def allocates_and_launches(self) -> bool:
        """Whether a call is just allocation and one launch (no reductions, split or 0-d CPU scalars)."""
        return not (self.reductions or self.split is not None or self.to_device)

    @staticmethod
    def task_fields(task) -> dict:
        """What a plan takes from its TaskPlan besides the index arguments: grid, element count,
        constexprs and warps."""
        tiling = task.tiling
        return dict(grid=task.grid, numel=task.numel, constexprs=task.constexprs, num_warps=tiling.num_warps)

    def run(self, args: tuple, outs: list):
        if self.split is not None and self.numel:
            return self._run_split(args, outs)
        reductions = self.reductions
        if reductions:
            buffers = self._buffers(outs, reductions)
        else:  # the common call: no accumulators to build or finish
            buffers = [self._output(k, o) for k, o in enumerate(outs)]
        if self.numel:
            if self.out_extents:
                self._check_overlap(args, outs, buffers)
            self._launch(self._on_device(args), buffers)
        elif reductions and any(r is not None and r.kind != "sum" for r in reductions):
            raise RuntimeError(f"{self.name}: max/min of an empty task has no identity (numel() == 0)")
        elif self.empty_fill is not None:
            for buffer in buffers:
                buffer.fill_(self.empty_fill)
        if reductions:
            buffers = [b if r is None else self._finish(b, r, o) for b, r, o in zip(buffers, reductions, outs)]
        return buffers[0] if len(buffers) == 1 else tuple(buffers)

    def kernel_values(self, args: tuple, outs: tuple) -> tuple:
        """Every argument the kernel receives for a call: what ahead-of-time compiling specializes on."""
        if self.split is not None:
            buffers = self.split.buffers(self.device)
        else:
            buffers = self._buffers(outs, self.reductions or (None,) * len(outs))
        return (*self._on_device(args), *buffers, *self.index_args, *self.constexprs)

    def _buffers(self, outs, reductions) -> list:
        """Per output what the kernel writes: the output, or a reduced output's accumulator."""
        pairs = enumerate(zip(outs, reductions))
        return [self._output(k, o) if r is None else self._accumulator(r) for k, (o, r) in pairs]

    def _on_device(self, args: tuple):
        """The payload arguments, with 0-d CPU tensors (scalars beside device tensors) moved."""
        if not self.to_device:
            return args
        return [_moved(a, self.device) if i in self.to_device else a for i, a in enumerate(args)]

    def _run_split(self, args: tuple, outs: list):
        """A split reduction along dims: the kernel writes partial values, combined here."""
        outputs = [self._output(k, o) for k, o in enumerate(outs)]
        if self.out_extents:
            self._check_overlap(args, outs, outputs)
        partials = self.split.buffers(self.device)
        self._launch(self._on_device(args), partials)
        self.split.combine(partials, outputs)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _accumulator(self, reduction) -> torch.Tensor:
        if self.deterministic:
            return torch.empty(self.grid[0], dtype=reduction.acc, device=self.device)
        return torch.full((), reduction.identity_value, dtype=reduction.acc, device=self.device)

    def _finish(self, buffer: torch.Tensor, reduction, given):
        if self.deterministic:  # torch's own reductions are deterministic
            buffer = _COMBINE[reduction.kind](buffer)
        value = buffer.to(reduction.result)
        return value if given is None else given.copy_(value)

    def _output(self, k: int, given):
        if given is not None:
            return given
        return torch.empty_strided(self.out_shape, self.out_strides[k], dtype=self.out_dtypes[k], device=self.device)

    def _check_overlap(self, args, outs, outputs) -> None:
        inputs = [args[i] for i in self.tensor_positions]
        for k, (given, extent) in enumerate(zip(outs, self.out_extents)):
            if given is not None and extent is not None:
                check_partial_overlap(self.name, k, given, extent, inputs, self.in_extents)

    def _launch(self, inputs, outputs) -> None:
        if self.direct is not None:
            self.direct(inputs, outputs)
        elif self.interpreted:
            operands = [o.storage_view() if isinstance(o, StridedBuffer) else o for o in (*inputs, *outputs)]
            index_args = int64_scalars(self.index_args) if self.spec.index_bits == 64 else self.index_args
            with INTERPRETER_LOCK, interpreting(), self._payload_errors("run"):
                self.launch(self.grid, *operands, *index_args, *self.constexprs, self.num_warps)
        elif self.device.type != "meta":
            with torch.cuda.device(self.device.index), self._payload_errors("compile"):
                direct = first_launch(self, inputs, outputs)  # runtime/kernels.py
            if direct is not None or self.direct is None:  # another thread may have set one meanwhile
                self.use_launcher(direct)

    def use_launcher(self, direct: Optional[Callable]) -> None:
        """Launch through `direct(inputs, outputs)` from now on (and build the hit path on it); None:
        the next call launches the first way again (first_launch)."""
        self.direct = direct
        self.fast = self._fast_call()

    @contextlib.contextmanager
    def _payload_errors(self, action: str):
        """Re-raise Triton's errors about the generated kernel as one PayloadError naming payload, arity and file."""
        try:
            yield
        except FrozenError:
            raise
        except Exception as e:
            spec = self.spec
            count, calls = len(spec.outputs), len(spec.calls)
            per_dtype = (
                f"; it is called {calls} times, once per computation dtype of its outputs, and each "
                "call must run on its inputs' dtypes"
                if calls > 1
                else ""
            )
            raise PayloadError(
                f"{self.name}: payload {spec.payload_origin} failed to {action} in its generated kernel "
                f"{self.path} (it is called with {len(spec.inputs)} arguments and must return {count} "
                f"value{'s' if count != 1 else ''}{per_dtype}): {type(e).__name__}: {e}"
            ) from e

    def _fast_call(self) -> Optional[Callable]:
        """Allocate and launch, built once, for calls giving no outputs; None for a plan of no elements."""
        if self.direct is None or not self.numel or not self.allocates_and_launches or self.default_dtype is not None:
            return None
        direct, shape, device, empty = self.direct, self.out_shape, self.device, torch.empty_strided
        layouts = tuple(zip(self.out_strides, self.out_dtypes))
        c_record = getattr(direct, "c_record", None)
        if c_record is not None:
            hit_path.enable()
            self.hit = hit_path.record(shape, layouts, device, c_record, self.in_extents + self.out_extents)
        if len(layouts) == 1:
            ((strides, dtype),) = layouts

            def fast_one(args: tuple):
                out = empty(shape, strides, dtype=dtype, device=device)
                direct(args, (out,))
                return out

            return fast_one

        def fast_many(args: tuple):
            outs = tuple(empty(shape, strides, dtype=dtype, device=device) for strides, dtype in layouts)
            direct(args, outs)
            return outs

        return fast_many


def _moved(operand, device: torch.device) -> torch.Tensor:
    """A 0-d CPU operand copied to `device`; a StridedBuffer through a tensor of its one element."""
    if isinstance(operand, StridedBuffer):
        operand = operand.storage_view().view(())
    return operand.to(device)


class PlanCache:
    """A thread-safe LRU of launch plans, at most `capacity` (default 1024) per function.

    Once the C hit path serves the function, `c_tables` is its CallTables: C counts the calls it
    serves there, and holds a few recent calls' plans in front of `by_key` (its plan index,
    index.h), which each put empties, the plans it held counting as used."""

    def __init__(self, capacity: int = 1024):
        self.capacity = capacity
        self.by_key: OrderedDict = OrderedDict()  # launch.c's hit() reads it too (runtime/hit_path.py)
        self.c_tables = None
        self._lock = threading.Lock()
        self._hits = self.misses = 0

    @property
    def hits(self) -> int:
        """Calls a cached plan or shape program served, in Python or C."""
        return self._hits + (self.c_tables.hits if self.c_tables is not None else 0)

    def count_hit(self) -> None:
        self._hits += 1

    def get(self, key):
        plan = self.by_key.get(key)
        if plan is not None:
            self._hits += 1
            self._touch(key)
        return plan

    def put(self, key, plan) -> None:
        with self._lock:
            self.misses += 1
            for held in self.c_tables.forget() if self.c_tables is not None else ():
                self._touch(held)
            self.by_key[key] = plan
            if len(self.by_key) > self.capacity:
                self.by_key.popitem(last=False)

    def _touch(self, key) -> None:
        try:  # atomic under the GIL
            self.by_key.move_to_end(key)
        except KeyError:  # a concurrent eviction is harmless
            pass

    def __len__(self) -> int:
        return len(self.by_key)

    def newest_key(self):
        """The most recently used key (None when empty)."""
        try:
            return next(reversed(self.by_key))
        except (StopIteration, RuntimeError):
            return None
