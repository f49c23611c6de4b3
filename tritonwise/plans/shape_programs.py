"""Shape programs: what the analysis decided for one call, as data the C hit path evaluates for the
next shapes of its class (runtime/program.h), so a new shape launches from C with no plan.

Once a plan has launched through launch.c, `ShapePrograms.publish` reruns the planner's shape work
on symbolic sizes and strides (plans/symbolic.py); every comparison becomes a guard (and Triton's
specialization of the index values two more), so a call satisfying them runs this plan's kernel with
the values the program computes. Programs are kept per class in `programs`, the dict hit() reads, at
most MAX_PER_CLASS each; their guards exclude each other.
"""

from __future__ import annotations

import struct
from typing import Optional

from ..frontend import validation
from ..runtime import hit_path, native
from ..runtime.arguments import dense_extent
from ..runtime.kernels import Rebinding
from . import symbolic
from .binder import output_layout
from .memo import MEMO_LIMIT
from .symbolic import Tracer

# Programs per class: the shapes of one class differ in alignment, index width, blocks and
# Triton's specializations, each a program of its own; past this the Python path serves the rest.
MAX_PER_CLASS = 16


class ShapePrograms:
    """A pointwise function's shape programs: class -> [Program] (see the module docstring)."""

    def __init__(self, planner):
        self._planner = planner
        self.programs: dict = {}
        self._identities: dict = {}  # class -> (nodes, guards) of each of its programs

    def publish(self, key: tuple, args: tuple, outs: tuple, plan) -> None:
        """Trace `plan` (built and launched through launch.c for `key`) into a program of its class, unless there."""
        if plan.hit is None or plan.split is not None or plan.default_dtype is not None:
            return
        if not hit_path.serves_new_shapes():
            return
        module = native.launch_module()
        found = module.shape_class(key, len(args))
        if found is None:
            return
        cls, tensors = found
        kept = self._identities.get(cls, ())
        if len(kept) >= MAX_PER_CLASS:
            return
        positions = Rebinding(plan).value_positions()
        traced = None if positions is None else trace(self._planner, tensors, args, outs, plan, positions)
        if traced is None or traced[0] in kept:
            return
        identity, fields = traced
        try:
            program = module.program(**fields)
        except ValueError:  # past what program.h holds (nodes, parameters): the Python path serves it
            return
        if cls not in self.programs and len(self.programs) >= MEMO_LIMIT:
            self.programs.clear()  # hit() reads this dict: emptied, never replaced
            self._identities.clear()
        self._identities.setdefault(cls, []).append(identity)
        self.programs.setdefault(cls, []).append(program)

    def serve(self, key: tuple, n_args: int) -> bool:
        """Whether a program of its class would serve the call `key`, as hit() decides (for explain())."""
        if not self.programs or hit_path.entry is None:
            return False
        module = native.launch_module()
        found = module.shape_class(key, n_args)
        if found is None:
            return False
        cls, tensors = found
        leaves = tuple(n for sizes, strides in tensors for n in (*sizes, *strides))
        return any(module.evaluate(p, leaves) is not None for p in self.programs.get(cls, ()))


def trace(planner, tensors: list, args: tuple, outs: tuple, plan, positions: tuple) -> Optional[tuple]:
    """((nodes, guards), launch.c's program() fields) of `plan`, traced on `tensors` ((sizes,
    strides) per tensor input then given output), or None where it would not reproduce the plan's
    launch."""
    tracer = Tracer()
    operands, first = [], 0
    for sizes, strides in tensors:
        operands.append((tracer.leaves(sizes, first), tracer.leaves(strides, first + len(sizes))))
        first += 2 * len(sizes)
    n_inputs = sum(1 for a in args if validation.is_tensor_like(a))
    given = iter(operands[n_inputs:])
    layouts = [None if o is None else next(given) for o in outs]
    traced = planner.traced_task(args, outs, operands[:n_inputs], layouts)
    if traced is None:
        return None
    reductions, task = traced
    if task.split is not None:
        return None
    values = plan.spec.index_values(task)
    constexprs = task.constexprs  # values a task's rows decide (WHOLE_BLOCKS, REST_BLOCK, INNER_EXTENT) are guarded here
    out_shape, out_strides = output_layout(task, reductions, planner.along_dims)
    out_strides = [s for s in out_strides if s is not None]
    grid = task.grid[0]
    concrete = symbolic.value_of
    if (
        tuple(map(concrete, values)) != plan.index_args
        or tuple(map(concrete, out_shape)) != tuple(plan.out_shape)
        or [tuple(map(concrete, s)) for s in out_strides] != [tuple(s) for s in plan.out_strides if s is not None]
        or concrete(grid) != plan.grid[0]
        or tuple(map(concrete, constexprs)) != tuple(plan.constexprs)
        or len(plan.grid) != 1
    ):
        return None
    for k in positions:  # the classes Triton compiles the kernel for
        _ = values[k] % 16 == 0, values[k] == 1
    hit = plan.hit
    index_kind = "i" if task.index_bits == 32 else "l"
    scratch = len(hit.fixed) // 8 - len(values)
    if scratch < 0 or _packed(values, index_kind, scratch) != hit.fixed:
        return None
    extents = _extents(operands[:n_inputs], layouts)
    if hit_path.pack_extents([e and tuple(map(concrete, e)) for e in extents]) != hit.extents:
        return None
    node = tracer.node_of  # constants become nodes too: every node number before packing
    value_nodes, grid_node = [(node(v),) for v in values], node(grid)
    shape_nodes = [(node(n),) for n in out_shape]
    stride_nodes = [[(node(s),) for s in strides] for strides in out_strides]
    fields = dict(
        nodes=hit_path.pack_int64(tracer.nodes),
        guards=hit_path.pack_int64(tracer.guards),
        values=hit_path.pack_int64(value_nodes),
        grid=grid_node,
        out_shape=hit_path.pack_int64(shape_nodes),
        out_strides=tuple(hit_path.pack_int64(strides) for strides in stride_nodes),
        out_dtypes=tuple(dtype for _, dtype in hit.layouts),
        device=hit.device,
        device_index=hit.device_index,
        cu_launch=hit.cu_launch,
        function=hit.function,
        threads=hit.threads,
        shared=hit.shared,
        kinds=hit.kinds,
        index_kind=index_kind,
        scratch=scratch,
        extents=hit_path.pack_int64((node(lo), node(hi)) for lo, hi in (e or hit_path.NO_EXTENT for e in extents)),
    )
    return (tuple(tracer.nodes), tuple(tracer.guards)), fields


def _extents(inputs: list, layouts: list) -> list:
    """The dense extent of each tensor input then given output; nothing where the call gives no output."""
    if all(layout is None for layout in layouts):
        return []
    return [dense_extent(*op) for op in inputs] + [layout and dense_extent(*layout) for layout in layouts]


def _packed(values, index_kind: str, scratch: int) -> bytes:
    """The index values' slots as program.h packs them (what the plan's launch passes)."""
    code = "i4x" if index_kind == "i" else "q"
    return struct.pack("<" + code * len(values) + "8x" * scratch, *map(symbolic.value_of, values))
