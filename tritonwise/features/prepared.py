"""FlagGems' manual-instantiation helpers, with FlagGems' meaning, over tritonwise's public surface:
`prepare_args` allocates outputs and wraps every tensor as a StridedBuffer over the task shape for
`instantiate(ndim)`, and `use_fast_path` flattens calls of one dense layout, so code written against
FlagGems' API runs unchanged.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from ..analysis.broadcast import broadcast_strides
from ..frontend import validation
from ..runtime.arguments import dense_extent
from ..strided_buffer import StridedBuffer


def use_fast_path(tensors: Sequence) -> bool:
    """FlagGems' rule: one shape, and either every tensor C-contiguous or all of the same
    strides over non-overlapping dense memory; such a call runs as one flat dimension."""
    tensors = list(tensors)
    shape = tuple(tensors[0].shape)
    if any(tuple(t.shape) != shape for t in tensors):
        return False
    if all(_c_contiguous(t) for t in tensors):
        return True
    strides = tuple(tensors[0].stride())
    same = all(tuple(t.stride()) == strides for t in tensors)
    return same and min(strides, default=0) >= 0 and dense_extent(shape, strides) is not None


def _c_contiguous(t) -> bool:
    expected = 1
    for n, s in reversed(list(zip(t.shape, t.stride()))):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def prepare_args(fn, args: tuple, kwargs: dict, skip_tensor_check: bool = False) -> tuple:
    """FlagGems' prepare_args: (ndim, args, kwargs) for `fn.instantiate(ndim)`, missing outputs
    allocated (like the first tensor of the task's shape) and every tensor a StridedBuffer."""
    schema = fn.schema
    if not skip_tensor_check:
        validation.check_kinds(fn.__name__, schema, validation.python_scalars(args))
    inputs = [a for i, a in enumerate(args) if schema.is_tensor(i)]
    outs = [kwargs.get(f"out{k}") for k in range(schema.num_outputs())]
    broadcast = tuple(torch.broadcast_shapes(*[t.shape for t in inputs])) if inputs else ()
    # as FlagGems: an output of another shape would be wrapped over this one, and written scrambled
    for k, (out, reduced) in enumerate(zip(outs, fn.reduction_kinds)):
        if inputs and out is not None and reduced is None and tuple(out.shape) != broadcast:
            raise RuntimeError(f"{fn.__name__}.prepare_args: out{k} has shape {tuple(out.shape)}, expected {broadcast}")
    missing = [k for k, o in enumerate(outs) if o is None]
    dtypes = [meta[2] for meta in fn.output_meta(*args)] if missing else []
    tensors = [o for o in outs if o is not None] + inputs
    if tensors and use_fast_path(tensors):
        task_shape = (math.prod(tensors[0].shape),)
        model = tensors[0]
        wrap = lambda t: StridedBuffer(t, task_shape, (1,))  # noqa: E731 (one layout for all)
    else:
        task_shape = broadcast
        model = next((t for t in tensors if tuple(t.shape) == task_shape), None)
        wrap = lambda t: StridedBuffer(t, task_shape, broadcast_strides(t.shape, t.stride(), task_shape))  # noqa: E731
    for k in missing:  # like `model` (its strides, torch.empty_like), else C-contiguous
        if isinstance(model, torch.Tensor):
            outs[k] = torch.empty_like(model, dtype=dtypes[k])
        else:
            shape = task_shape if model is None else model.shape
            outs[k] = torch.empty(shape, dtype=dtypes[k], device=tensors[0].device)
    wrapped = tuple(wrap(a) if schema.is_tensor(i) else a for i, a in enumerate(args))
    return len(task_shape), wrapped, {f"out{k}": wrap(t) for k, t in enumerate(outs)}
