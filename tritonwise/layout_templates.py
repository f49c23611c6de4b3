"""New shapes of calls of any layout (transposed, permuted, strided views, broadcasting ones),
derived from a plan whose task has the same stride classes.

The tiling of a collapsed task (scheme, tiled dim, block choices) follows from its rank, the
stride class of each operand along each dim (0, 1, or a value passed at run time) and the
element size, and from nothing else: choose_scheme and Tile2d.tiled_dim read only those, and
the block choices the scheme, rank, element size and alignment. So once the first part of the
analysis (analysis.plan.geometry: broadcasting, dim order, collapse) has given a new shape's
task, an earlier plan of the same call whose task had the same stride classes is its template:
analysis.plan.retile picks the block again and checks the two things that can still move the
task to another layout class (alignment, index width), and the plan is the template's with what
the task changes. The tiling choice and the binding of a new plan are skipped; contiguous and
broadcasting calls (new_shapes.py, broadcast_templates.py) skip the geometry too, in closed form.

A call qualifies when its tensors are plain (broadcast_templates.plain_operands: no subclass,
StridedBuffer, given output, negative bit or grad) and the task is elementwise and non-empty.
The call's class here keeps each tensor's rank (a 0-d tensor promotes differently).
tests/test_layout_templates.py holds each derived plan equal to the analysis's own.
"""

from __future__ import annotations

import math

from .analysis.plan import geometry, retile
from .analysis.tiling import operand_classes
from .broadcast_templates import plain_operands
from .codegen.params import index_arg_values


class LayoutTemplates:
    """Per call class, one plan per stride classes of its task: the sources of derived plans."""

    def __init__(self, config):
        self._config = config
        self._templates: dict = {}  # call class -> {stride classes of the task: plan}

    def remember(self, key: tuple, plan) -> None:
        """Keep `plan` (just built for the call `key`) as a template, when it can be one."""
        operands = plain_operands(key)
        task = plan.task
        if operands is None or task is None or not plan.allocates_and_launches or plan.default_dtype is not None:
            return
        if task.split is not None or not plan.numel or plan.out_shape != task.shape:
            return  # a reduction along dims (its outputs are not over the task's shape), or empty
        self._templates.setdefault(_call_class(operands), {}).setdefault(task.stride_classes, plan)

    def derive(self, key: tuple, default_dtype):
        """The plan of call `key` derived from a template, or None (no template of its class
        and stride classes, another layout class, shapes that do not broadcast, an empty task)."""
        operands = plain_operands(key)
        templates = operands and self._templates.get(_call_class(operands))
        if not templates:
            return None
        tensors = [(tuple(op[1]), op[2]) for op in operands if type(op) is tuple]
        outputs = len(next(iter(templates.values())).out_dtypes)
        try:
            shape, out_strides, task_shape, strides = geometry(tensors, [None] * outputs)
        except RuntimeError:  # shapes that do not broadcast: the analysis names them
            return None
        template = templates.get(operand_classes(strides))
        if template is None or template.default_dtype not in (None, default_dtype) or not math.prod(shape):
            return None
        task = retile(template.task, shape, out_strides, task_shape, strides, self._config)
        if task is None:
            return None
        return template.for_task(task, index_arg_values(template.spec, task), out_shape=shape, out_strides=out_strides)


def _call_class(operands: list) -> tuple:
    """plain_operands without shapes and strides, with each tensor's rank."""
    return tuple((op[0], len(op[1]), op[3], op[4]) if type(op) is tuple else op for op in operands)
