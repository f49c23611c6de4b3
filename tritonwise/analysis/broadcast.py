"""Broadcasting shapes and strides, as torch does it. Pure Python over tuples."""

from __future__ import annotations

from typing import Sequence


def broadcast_shapes(shapes: Sequence[tuple]) -> tuple:
    """The broadcast of `shapes`; a RuntimeError naming them when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    result = [1] * rank
    for shape in shapes:
        for i, size in enumerate(shape, start=rank - len(shape)):
            if size == result[i] or size == 1:
                continue
            if result[i] != 1:
                listed = ", ".join(str(tuple(s)) for s in shapes)
                raise RuntimeError(
                    f"shapes {listed} cannot be broadcast together (dimension {i}: {result[i]} vs {size})"
                )
            result[i] = size
    return tuple(result)


def broadcast_strides(shape: tuple, strides: tuple, task_shape: tuple) -> tuple:
    """Strides of an operand viewed as `task_shape`: 0 on leading dims and on size-1 dims the
    task broadcasts; a size-1 dim the task also has keeps its stride (torch orders dims by it)."""
    lead = len(task_shape) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 and t != 1 else s for n, s, t in zip(shape, strides, task_shape[lead:]))
