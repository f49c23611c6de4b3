"""analyze(): from operand shapes and strides to a TaskPlan. Pure Python, no tensors."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..config import CodeGenConfig
from .broadcast import broadcast_shapes, broadcast_strides
from .layout import collapse, dense_strides, dim_order
from .tiling import Tiling, choose_tiling, index_bits, num_tiles, stride_class


@dataclass(frozen=True)
class TaskPlan:
    """How one call's operands map onto a kernel.

    `strides` holds, for tensor inputs then outputs, each operand's strides over `task_shape`
    (the collapsed task, outer-to-inner). `output_strides` are the strides the outputs have
    (given, or to allocate) over the broadcast `shape`.
    """

    shape: tuple
    output_strides: tuple
    task_shape: tuple
    strides: tuple
    tiling: Tiling
    index_bits: int
    aligned: bool
    num_tiles: int
    grid: tuple

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.task_shape)

    @property
    def stride_classes(self) -> tuple:
        return tuple("".join(stride_class(s) for s in op) for op in self.strides)

    @property
    def layout_class(self) -> tuple:
        """Every field of the task a generated file depends on (codegen's build_spec reads no
        other): rank, scheme, tiled dim, block choices, index width, alignment, stride classes.
        Tasks with equal classes share a file, so function.py keeps the loaded kernel per class."""
        tiling = self.tiling
        classes = self.stride_classes
        return (self.rank, tiling.scheme, tiling.m_dim, tiling.choices, self.index_bits, self.aligned, classes)


def analyze(
    inputs: Sequence[tuple],
    outputs: Sequence[Optional[tuple]],
    itemsize: int,
    config: CodeGenConfig,
    collapse_dims: bool = True,
) -> TaskPlan:
    """Plan a task over tensor `inputs` ((shape, strides) each) and `outputs`.

    An output is (shape, strides) when given, None when tritonwise allocates it. With
    `collapse_dims=False` (manual instantiation) dims keep their order and number.
    """
    if collapse_dims:
        contiguous = _contiguous_task(inputs, outputs)
        if contiguous is not None:
            return _tile(*contiguous, itemsize, config)
    given = [o for o in outputs if o is not None]
    shape = broadcast_shapes([s for s, _ in inputs] + [s for s, _ in given])
    in_strides = [broadcast_strides(s, st, shape) for s, st in inputs]
    given_strides = [broadcast_strides(s, st, shape) for s, st in given]
    order = dim_order(shape, given_strides + in_strides) if collapse_dims else list(range(len(shape) - 1, -1, -1))
    allocated = dense_strides(shape, order)
    out_strides = tuple(tuple(o[1]) if o is not None else allocated for o in outputs)
    operands = in_strides + [broadcast_strides(shape, st, shape) for st in out_strides]
    if collapse_dims:
        task_shape, strides = collapse(shape, operands, order)
    else:
        task_shape, strides = shape, tuple(operands)
    return _tile(shape, out_strides, task_shape, strides, itemsize, config)


def _contiguous_task(inputs: Sequence[tuple], outputs: Sequence[Optional[tuple]]) -> Optional[tuple]:
    """The common case without sorting or merging dims: every input of one shape with exactly
    C-contiguous strides, more than one element, outputs allocated. The general path orders such
    dims as they come (equal strides only pair a size-1 dim with its outer neighbour, which never
    moves it), allocates C-contiguous outputs and merges everything into one dim, as here (a
    property test compares the two). None when the call is not of this kind."""
    if not inputs or any(o is not None for o in outputs):
        return None
    shape = inputs[0][0]
    c_strides, step = [], 1
    for size in reversed(shape):
        if size < 1:
            return None
        c_strides.append(step)
        step *= size
    if step < 2:
        return None
    c_strides = tuple(reversed(c_strides))
    if any(s != shape or st != c_strides for s, st in inputs):
        return None
    unit = ((1,),) * (len(inputs) + len(outputs))
    return tuple(shape), (c_strides,) * len(outputs), (step,), unit


def _tile(shape, out_strides, task_shape, strides, itemsize, config) -> TaskPlan:
    tiling = choose_tiling(task_shape, strides, itemsize, config)
    tiles = num_tiles(task_shape, tiling) if math.prod(shape) else 0
    return TaskPlan(
        shape=shape,
        output_strides=out_strides,
        task_shape=task_shape,
        strides=strides,
        tiling=tiling,
        index_bits=index_bits(task_shape, strides, tiling.block),
        aligned=tiling.aligned,
        num_tiles=tiles,
        grid=(min(tiles, config.max_grid_size[0]),),
    )
