"""New shapes of broadcasting calls, derived from a plan of the same structure.

The next everyday new shape after the contiguous one (new_shapes.py): a bias or a scale broadcast
against activations whose sequence length changes, `(B, S, H) + (H,)`, `(4, n, 64) + (n, 1)`.
When every tensor of a call is plain and C-contiguous over its own shape and no output is
given, the analysis's decisions depend on which sizes are 1 and nothing else:

- TensorIterator's dim order keeps the dims as they come (a C-contiguous operand's inner dim
  never has the larger stride, and equal strides only pair a size-1 dim with a neighbour);
- outputs are allocated C-contiguous over the broadcast shape;
- two neighbouring dims of the broadcast shape (its size-1 dims dropped) merge exactly when every
  operand is broadcast along both or along neither.

So a *structure*, the call signature without shapes and strides plus each input's rank and
size-1 dims, fixes the collapsed task's dims, and its sizes and strides follow from the sizes
alone (`_collapsed`). The template's tiling holds but for the block, picked again
(`analysis.plan.retile`), and the plan is the template's with what the task changes, provided
the task falls in the template's layout class, which keeps the generated file. A property test compares every derived task and plan with the
analysis's own.
"""

from __future__ import annotations

from typing import Optional

from .analysis.layout import c_strides
from .analysis.plan import retile
from .codegen.params import index_arg_values


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


def structure(key: tuple) -> Optional[tuple]:
    """(structure, input shapes) of a call signature whose tensors are all contiguous_operands:
    the signature without sizes, with each tensor's size-1 dims; None for any other call."""
    operands = contiguous_operands(key) or ()
    shapes = [op[1] for op in operands if type(op) is tuple]
    if not shapes:
        return None
    parts = [(op[0], op[2], op[3], tuple(size == 1 for size in op[1])) if type(op) is tuple else op for op in operands]
    return tuple(parts), shapes


class BroadcastTemplates:
    """One plan per structure, the source of derived plans (see the module docstring)."""

    def __init__(self, config):
        self._config = config
        self._templates: dict = {}

    def remember(self, key: tuple, plan) -> None:
        """Keep `plan` (just built for the call `key`) as its structure's template, when it is one."""
        found = structure(key)
        if found is None or not plan.allocates_and_launches or plan.task is None:
            return
        n_out = len(plan.out_dtypes)
        if (
            plan.default_dtype is not None
            or not plan.numel
            or (plan.task.task_shape, plan.task.strides) != (_collapsed(found[1], n_out)[:2])
        ):
            return  # the closed form must agree with the analysis on the template itself
        self._templates.setdefault(found[0], plan)

    def derive(self, key: tuple, default_dtype):
        """The plan of call `key` derived from its structure's template, or None (no template, a
        task of another layout class, shapes that do not broadcast, an empty task)."""
        found = structure(key)
        template = found and self._templates.get(found[0])
        if template is None:
            return None
        if template.default_dtype not in (None, default_dtype):
            return None
        collapsed = _collapsed(found[1], len(template.out_dtypes))
        if collapsed is None:
            return None
        task_shape, strides, shape, allocated = collapsed
        out_strides = (allocated,) * len(template.out_strides)
        task = retile(template.task, shape, out_strides, task_shape, strides, self._config)
        if task is None:  # another layout class: another generated file
            return None
        return template.for_task(task, index_arg_values(template.spec, task), out_shape=shape, out_strides=out_strides)


def _collapsed(shapes: list, n_outputs: int) -> Optional[tuple]:
    """(task shape, strides per operand (inputs, then the outputs), broadcast shape and the
    outputs' strides over it) of C-contiguous inputs of `shapes` and C-contiguous outputs; None
    when they do not broadcast or the broadcast is empty. One pass from the inner dim out: each
    input's C-contiguous stride is the product of its sizes passed so far."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    steps, out_step = [1] * len(padded), 1
    shape, out_strides = [0] * rank, [0] * rank
    sizes, strides, status = [], [[] for _ in padded], None
    out_task: list = []
    for d in range(rank - 1, -1, -1):
        here = [p[d] for p in padded]
        extent = max(here)
        if extent == 0 or any(size != extent and size != 1 for size in here):
            return None
        shape[d], out_strides[d] = extent, out_step
        if extent != 1:  # the broadcast's size-1 dims are dropped
            broadcast = [size == 1 for size in here]
            if broadcast == status:
                sizes[-1] *= extent
            else:
                status = broadcast
                sizes.append(extent)
                out_task.append(out_step)
                for kept, b, step in zip(strides, broadcast, steps):
                    kept.append(0 if b else step)
        steps = [step * size for step, size in zip(steps, here)]
        out_step *= extent
    task_strides = [tuple(reversed(s)) for s in strides] + [tuple(reversed(out_task))] * n_outputs
    return tuple(reversed(sizes)), tuple(task_strides), tuple(shape), tuple(out_strides)
