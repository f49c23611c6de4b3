"""Dimension order and collapsing, following TensorIterator. Pure Python over tuples.

Dims are ordered from the operands' strides (outputs first; a zero stride says nothing), allocated
outputs get dense strides in that order, and neighbours contiguous in every operand are merged. The
task is returned outer to inner.
"""

from __future__ import annotations

from typing import Sequence


def _compare(a: int, b: int, shape: tuple, operands: Sequence[tuple]) -> int:
    """1 if dim `a` (currently inner of the two) should move outside dim `b`; -1 to keep; 0 unknown."""
    for strides in operands:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            continue
        if abs(sa) != abs(sb):
            return 1 if abs(sa) > abs(sb) else -1
        if shape[a] > shape[b]:
            return 1
    return 0


def dim_order(shape: tuple, operands: Sequence[tuple]) -> list:
    """Dims from innermost to outermost (TensorIterator's insertion sort over stride order)."""
    perm = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(perm)):
        moving = i
        for j in range(i - 1, -1, -1):
            verdict = _compare(perm[j], perm[moving], shape, operands)
            if verdict > 0:
                perm[j], perm[moving] = perm[moving], perm[j]
                moving = j
            elif verdict < 0:
                break
    return perm


def dense_strides(shape: tuple, inner_to_outer: Sequence[int]) -> tuple:
    """Strides of a dense tensor of `shape` laid out in the given dim order."""
    strides = [0] * len(shape)
    step = 1
    for d in inner_to_outer:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def collapse(shape: tuple, operands: Sequence[tuple], inner_to_outer: Sequence[int]) -> tuple:
    """Merge dims contiguous in every operand; returns (shape, strides per operand), outer-to-inner."""
    dims = [d for d in inner_to_outer if shape[d] != 1]
    sizes: list = []
    strides: list = [[] for _ in operands]
    for d in dims:
        if sizes and all(s[-1] * sizes[-1] == op[d] for s, op in zip(strides, operands)):
            sizes[-1] *= shape[d]
            continue
        sizes.append(shape[d])
        for s, op in zip(strides, operands):
            s.append(op[d])
    return tuple(reversed(sizes)), tuple(tuple(reversed(s)) for s in strides)
