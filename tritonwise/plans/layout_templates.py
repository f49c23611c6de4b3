"""New shapes of calls of any layout (broadcasting, transposed, permuted, strided views),
derived from a plan whose task has the same stride classes.

The tiling of a collapsed task (scheme, tiled dim, block choices) follows from its rank, the
stride class of each operand along each dim (0, 1, or a value passed at run time) and the
element size, and from nothing else: choose_scheme and Tile2d.tiled_dim read only those, and
the block choices the scheme, rank, element size and alignment. So once the first part of the
analysis (analysis.plan.geometry: broadcasting, dim order, collapse) has given a new shape's
task, an earlier plan of the same call whose task had the same stride classes is its template:
analysis.plan.retile picks the block again and checks the two things that can still move the
task to another layout class (alignment, index width), and the plan is the template's with what
the task changes. The tiling choice and the binding of a new plan are skipped; contiguous calls of
one shape (new_shapes.Templates) skip the geometry too: their task is always flat.

A call qualifies when its tensors, inputs and given outputs, are plain (plain_call: no subclass,
StridedBuffer, negative bit or grad) and the task is elementwise and non-empty; a given output
is checked as the frontend checks it (the broadcast shape, no internal overlap; its dtype and
device are part of the class), and its overlap with the inputs at launch, as for any plan.
The call's class here keeps each tensor's rank (a 0-d tensor promotes differently).
tests/runtime/test_layout_templates.py holds each derived plan equal to the analysis's own.

Once a derived plan of a class launches through launch.c, `publish` gives the C hit path
(runtime/layout.h) a record of its call class and stride classes: later new shapes of them are
launched from C with no plan, the geometry and the retiling done there in integers, wherever
the record holds the kernel of their block and specialization (tests/runtime/test_layout_c_path.py holds
every such launch to the plan Python derives).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

from ..analysis.broadcast import broadcast_shapes
from ..analysis.layout import c_strides
from ..analysis.plan import (
    MIN_PART_EXTENT,
    SPLIT_ALWAYS_ROWS,
    SPLIT_MAX_ROWS,
    SPLIT_MIN_COLS,
    SPLIT_TARGET_ROWS,
    geometry,
    retile,
    splittable,
)
from ..analysis.tiling import operand_classes
from ..codegen.params import index_arg_values, index_params
from ..frontend.validation import has_internal_overlap
from ..runtime import hit_path
from ..runtime.arguments import dense_extent
from ..runtime.kernels import Rebinding
from ..schemes import get_scheme
from ..schemes.base import SMALL_TASK_TILES
from ..schemes.column_looped import MIN_PROGRAMS
from ..schemes.row_looped import LONG_ROW, PIPELINED_BLOCKS
from ..schemes.row_persistent import max_persistent_cols

# The schemes layout.h retiles, by the code it knows them by.
C_SCHEMES = {"flat": 0, "nd": 1, "tile2d": 2, "row_persistent": 3, "row_looped": 4, "column_looped": 5}


class RowRule(NamedTuple):
    """What layout.h needs of a reduction along dims besides a record: the dims and keepdim of
    its Reductions (analysis.plan.analyze_rows builds the task from them) and the constants of
    the row schemes' choice and blocks and of the split rule (split_parts), so that C decides
    as Python does (a tuple to C, in this order)."""

    dims: tuple  # the reduced dims of the broadcast shape
    keepdim: bool
    persistent_cols: int  # row_persistent takes up to this many reduced elements, row_looped more
    long_row: int  # row_looped's wide block from this many reduced elements
    min_programs: int  # column_looped's widest tile making this many programs
    split: Optional[tuple]  # split_parts' constants (see row_rule); None where the call never splits
    pipelined: tuple  # row_looped's steps (at most rows, at least cols, block width) for few rows


def row_rule(reductions: tuple, config) -> RowRule:
    """The RowRule of a call's Reductions along dims (every output reduces the same dims)."""
    r = reductions[0]
    split = (SPLIT_MAX_ROWS, SPLIT_ALWAYS_ROWS, SPLIT_MIN_COLS, SPLIT_TARGET_ROWS, MIN_PART_EXTENT)
    return RowRule(
        dims=tuple(r.dims),
        keepdim=bool(r.keepdim),
        persistent_cols=max_persistent_cols(config),
        long_row=LONG_ROW,
        min_programs=MIN_PROGRAMS,
        split=split if splittable(reductions) else None,
        pipelined=PIPELINED_BLOCKS,
    )


class LayoutRecord(NamedTuple):
    """What layout.h's run_layout reads to launch new shapes of one call class and stride
    classes (a tuple to C, in this order; see layout.h)."""

    out_dtypes: tuple
    device: object
    cu_launch: int  # cuLaunchKernel's address
    device_index: int
    kinds: bytes  # the kernel's operand kinds, as launch.c packs them
    scheme: int  # a value of C_SCHEMES
    m_dim: int  # tile2d's tiled dim, a row scheme's split dim, else -1 (c_m_dim)
    choices: tuple  # the layout class's blocks
    small_task_tiles: int
    aligned: bool
    index_kind: str  # "i" (32-bit index arguments) or "l"
    max_grid: int
    codes: tuple  # what each index argument is (layout.h)
    scratch: int  # trailing 8-byte slots after the index arguments
    positions: tuple  # index arguments Triton specializes on their values
    kernels: dict  # (*block, classes at positions) -> (function, threads, shared)
    rows: Optional[RowRule]  # a reduction along dims' rule; None for elementwise calls

    @property
    def layout(self) -> tuple:
        """The layout class whose kernels the record holds (see c_layout)."""
        return self.scheme, self.m_dim, self.aligned, self.index_kind


def plain_operands(key: tuple) -> Optional[list]:
    """Per entry of a call signature (runtime/arguments.call_signature): (dtype, shape, strides,
    device, aligned) for a plain torch.Tensor, neither negative nor requiring grad; a scalar's
    entry as it is. None where any tensor entry is not such a tensor (a subclass, a
    StridedBuffer, a given output): calls that route elsewhere or check outputs."""
    operands = []
    for entry in key:
        if type(entry) is not tuple:
            operands.append(entry)
            continue
        if len(entry) != 7 or entry[5] or entry[6]:
            return None
        operands.append(entry[:5])
    return operands


def plain_call(key: tuple, n_inputs: int) -> Optional[tuple]:
    """(plain_operands of the first `n_inputs` entries, the outputs) of a call signature: per
    output (dtype, shape, strides, device, aligned) where a plain torch.Tensor, neither negative
    nor requiring grad, is given, None where none is; () where the call gives no outputs. None
    where an input or a given output is anything else."""
    operands = plain_operands(key[:n_inputs])
    if operands is None:
        return None
    outputs = []
    for entry in key[n_inputs:]:
        if entry is type(None):
            outputs.append(None)
        elif type(entry) is tuple and len(entry) == 8 and entry[0] is torch.Tensor and not entry[6] and not entry[7]:
            outputs.append(entry[1:6])
        else:
            return None
    return operands, tuple(outputs)


def contiguous_operands(key: tuple) -> Optional[list]:
    """plain_operands as (dtype, shape, device, aligned), where every tensor is C-contiguous
    over its own non-empty shape; None where one is not (or the call has no plain operands)."""
    operands = plain_operands(key)
    if operands is None:
        return None
    for i, op in enumerate(operands):
        if type(op) is tuple:
            dtype, shape, strides, device, aligned = op
            if not shape or c_strides(shape) != strides:
                return None
            operands[i] = (dtype, tuple(shape), device, aligned)
    return operands


# Layout classes kept per call class and stride classes: the shapes of one call differ in
# alignment (extents and strides multiples of 16 or not), rarely in index width, and a reduction
# along dims in its row scheme. The first plan of each is a template and a C record.
MAX_LAYOUTS = 4


class LayoutTemplates:
    """Per call class and stride classes of its task, one plan per layout class: the sources of
    derived plans."""

    def __init__(self, config, n_inputs: int):
        self._config = config
        self._n_inputs = n_inputs  # the payload's: where a signature's given outputs start
        self._templates: dict = {}  # call class -> {stride classes of the task: [plan]}
        # call class -> {stride classes: [record]}: what launch.c's hit() needs to launch new
        # shapes of them itself (layout.h's run_layout); filled by publish() as derived plans launch
        self.c_records: dict = {}

    def remember(self, key: tuple, plan) -> None:
        """Keep `plan` (just built for the call `key`) as a template, when it can be one and
        its call class and stride classes have none of its layout class."""
        task = plan.task
        if task is None or not plan.allocates_and_launches or plan.default_dtype is not None:
            return
        if task.split is not None or not plan.numel or plan.out_shape != task.shape:
            return  # a reduction along dims (its outputs are not over the task's shape), or empty
        found = plain_call(key, self._n_inputs)
        if found is None:
            return
        kept = self._templates.setdefault(_call_class(*found), {}).setdefault(task.stride_classes, [])
        if len(kept) < MAX_LAYOUTS and all(c_layout(t.task) != c_layout(task) for t in kept):
            kept.append(plan)

    def derive(self, key: tuple, default_dtype):
        """The plan of call `key` derived from a template, or None (no template of its class
        and stride classes, another layout class, shapes that do not broadcast, a given output
        the analysis must refuse, an empty task)."""
        found = plain_call(key, self._n_inputs) if self._templates else None
        templates = found and self._templates.get(_call_class(*found))
        if not templates:
            return None
        operands, outputs = found
        tensors = [(tuple(op[1]), op[2]) for op in operands if type(op) is tuple]
        given = [None if o is None else (tuple(o[1]), o[2]) for o in outputs]
        try:
            shape, out_strides, task_shape, strides = geometry(
                tensors, given or [None] * len(next(iter(templates.values()))[0].out_dtypes)
            )
        except RuntimeError:  # shapes that do not broadcast: the analysis names them
            return None
        if any(o is not None and (o[0] != shape or has_internal_overlap(*o)) for o in given):
            return None  # the analysis names what is wrong with the output
        if given and shape != broadcast_shapes([t[0] for t in tensors]):
            return None  # an output larger than the inputs' shape: the analysis refuses it
        if not math.prod(shape):
            return None
        for template in templates.get(operand_classes(strides), ()):
            if template.default_dtype not in (None, default_dtype):
                continue
            task = retile(template.task, shape, out_strides, task_shape, strides, self._config)
            if task is not None:
                break
        else:
            return None  # no template of its layout class
        changes = dict(out_shape=shape, out_strides=out_strides)
        if template.out_extents:  # what the launch checks given outputs' overlap with (see binder.py's Binder.bind)
            changes["out_extents"] = tuple(dense_extent(shape, s) for s in out_strides)
            changes["in_extents"] = tuple(dense_extent(*t) for t in tensors)
        return template.for_task(task, index_arg_values(template.spec, task), **changes)

    def publish(self, key: tuple, plan, rows: Optional[RowRule] = None) -> None:
        """Let the C hit path launch later new shapes of `key`'s call class and stride classes
        with `plan`'s kernel, once `plan` (derived for `key`, or for a reduction along dims with
        RowRule `rows` the analysis's) launches through launch.c (it has a hit record). A record
        serves one layout class (scheme, alignment, index width: c_layout), so a plan of another
        starts a record of its own, up to MAX_LAYOUTS per call class and stride classes."""
        found = plain_call(key, self._n_inputs)
        task = plan.task
        if found is None or plan.hit is None or task.tiling.scheme not in C_SCHEMES or not task.rank:
            return
        if not hit_path.serves_new_shapes() or (rows is not None and (task.split is not None or found[1])):
            return  # a split reduction combines partials in torch; a given output stays in Python
        call_class = _call_class(*found)
        records = self.c_records.get(call_class, {}).get(task.stride_classes, [])
        record = next((r for r in records if r.layout == c_layout(task)), None)
        if record is None:
            positions = Rebinding(plan).value_positions()
            if positions is None or len(records) >= MAX_LAYOUTS:
                return
            record = c_record(plan, positions, self._config, rows)
            if record is None:
                return
            self.c_records.setdefault(call_class, {}).setdefault(task.stride_classes, []).append(record)
        add_kernel(record, plan)


def add_kernel(record: LayoutRecord, plan) -> None:
    """Give `record` `plan`'s kernel, under its block and the classes (divisible by 16, equal to 1)
    of its value-specialized index arguments: the kernel Triton compiled for them."""
    hit = plan.hit
    classes = tuple((plan.index_args[k] % 16 == 0, plan.index_args[k] == 1) for k in record.positions)
    record.kernels.setdefault((*plan.task.tiling.block, classes), (hit.function, hit.threads, hit.shared))


def c_record(plan, positions: tuple, config, rows: Optional[RowRule] = None) -> Optional[LayoutRecord]:
    """The record of `plan` (a plan with a hit record; `rows` the RowRule of a reduction along
    dims) for layout.h's run_layout (see there), its kernels still to add; None where the
    record's codes would not give `plan`'s own index values. `positions`: the index arguments
    Triton specializes on their values (kernels.Rebinding.value_positions)."""
    task, names = plan.task, index_params(plan.spec)
    counts = get_scheme(task.tiling.scheme).count_params(task.rank)
    operands = {op.name: k for k, op in enumerate(plan.spec.tensors)}
    codes = []
    for name in names:
        if name.startswith("size"):
            codes.append((0, int(name[4:]), 0))
        elif name in counts:
            codes.append((2, counts.index(name), 0))
        else:
            operand, _, dim = name.rpartition("_stride")
            codes.append((1, operands[operand], int(dim)))
    codes = tuple(codes)
    if _values(codes, task) != plan.index_args:
        return None
    hit = plan.hit
    return LayoutRecord(
        out_dtypes=tuple(dtype for _, dtype in hit.layouts),
        device=hit.device,
        cu_launch=hit.cu_launch,
        device_index=hit.device_index,
        kinds=hit.kinds,
        scheme=C_SCHEMES[task.tiling.scheme],
        m_dim=c_m_dim(task),
        choices=task.tiling.choices,
        small_task_tiles=SMALL_TASK_TILES,
        aligned=task.aligned,
        index_kind=index_kind(task),
        max_grid=config.max_grid_size[0],
        codes=codes,
        scratch=len(hit.fixed) // 8 - len(names),
        positions=positions,
        kernels={},
        rows=rows,
    )


def _values(codes: tuple, task) -> tuple:
    """The index values `codes` give for `task` (what run_layout computes in C)."""
    tiling = task.tiling
    counts = list(get_scheme(tiling.scheme).counts(task.task_shape, tiling.m_dim, tiling.block).values())
    by_kind = (lambda a, b: task.task_shape[a], lambda a, b: task.strides[a][b], lambda a, b: counts[a])
    return tuple(by_kind[kind](a, b) for kind, a, b in codes)


def c_layout(task) -> tuple:
    """A task's layout class as a record holds it (scheme code, m_dim, aligned, index kind): with
    its call class and stride classes, what a record's kernels serve."""
    return C_SCHEMES[task.tiling.scheme], c_m_dim(task), task.aligned, index_kind(task)


def c_m_dim(task) -> int:
    """A task's tiled or split dim as layout.h reads it: -1 where the scheme has none."""
    m_dim = task.tiling.m_dim
    return -1 if m_dim is None else m_dim


def index_kind(task) -> str:
    """How the C paths pack a task's index arguments: "i" (int32) or "l" (int64)."""
    return "i" if task.index_bits == 32 else "l"


def _call_class(operands: list, outputs: tuple = ()) -> tuple:
    """plain_operands without shapes and strides, with each tensor's rank (what layout.h builds
    of a signature), then the same of each given output (None where not given; nothing where the
    call gives none)."""
    tensors = tuple((op[0], len(op[1]), op[3], op[4]) if type(op) is tuple else op for op in operands)
    return tensors + tuple(None if o is None else ("out", o[0], len(o[1]), o[3], o[4]) for o in outputs)
