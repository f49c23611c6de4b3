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
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from ..analysis.broadcast import broadcast_shapes
from ..analysis.layout import c_strides
from ..analysis.plan import geometry, retile
from ..analysis.tiling import operand_classes
from ..codegen.params import index_arg_values
from ..frontend.validation import output_layout_fits
from ..runtime.arguments import dense_extent


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
# alignment (extents and strides multiples of 16 or not), rarely in index width. The first plan
# of each is a template.
MAX_LAYOUTS = 4


class LayoutTemplates:
    """Per call class and stride classes of its task, one plan per layout class: the sources of
    derived plans."""

    def __init__(self, config, n_inputs: int):
        self._config = config
        self._n_inputs = n_inputs  # the payload's: where a signature's given outputs start
        self._templates: dict = {}  # call class -> {stride classes of the task: [plan]}

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
        if len(kept) < MAX_LAYOUTS and all(layout_of(t.task) != layout_of(task) for t in kept):
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
        if any(o is not None and not output_layout_fits(o, shape) for o in given):
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


def layout_of(task) -> tuple:
    """What sets the templates of one call class and stride classes apart: scheme, tiled dim,
    alignment and index width."""
    return task.tiling.scheme, task.tiling.m_dim, task.aligned, task.index_bits


def _call_class(operands: list, outputs: tuple = ()) -> tuple:
    """plain_operands without shapes and strides, with each tensor's rank, then the same of each
    given output (None where not given; nothing where the call gives none)."""
    tensors = tuple((op[0], len(op[1]), op[3], op[4]) if type(op) is tuple else op for op in operands)
    return tensors + tuple(None if o is None else ("out", o[0], len(o[1]), o[3], o[4]) for o in outputs)
