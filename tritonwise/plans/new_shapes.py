"""New shapes of known calls: plans derived from a plan of the same class, launchers rebound.

The everyday new shape (a sequence length that changes) is a call whose tensors are all plain,
of one shape and C-contiguous: its task is always the flat one of `numel` elements, so its plan
differs from any earlier plan of the same class only in numel and the values that follow from
it (output shape and strides, tile count, grid, index arguments). A class here is the call
signature without shapes and strides, plus what the flat layout class reads of numel (whether it
is a multiple of 16, whether int32 indexes it). `Templates` keeps one plan per class; a miss of
such a class then skips the analysis and the binding of a new plan (plans/planner.py's Planner.plan). Once
the template has launched, the derived plan launches through the template's launcher rebound to
its grid and index values (kernels.Rebinding): one kernel, one specialization, nothing
looked up. Before that, or where the kernel could be specialized on those values, its first
launch is any plan's (kernels.first_launch).

New shapes of any other plain call (broadcasting, strided, transposed) take the first part of
the analysis only (layout_templates.py). `Siblings` gives such plans, and those the analysis
builds, the rebound launcher of an earlier plan of their call class and generated file, so they
skip the first launch too. Once a plan has launched, the C hit path launches the later new
shapes its shape program serves with no plan at all (shape_programs.py).
"""

from __future__ import annotations

import math
from typing import Optional

from ..analysis.layout import c_strides
from ..analysis.tiling import ALIGNMENT, index_bits
from ..codegen.params import stride_classes
from ..runtime.dispatch import copy_with
from ..runtime.kernels import Rebinding
from ..schemes import get_scheme
from .layout_templates import LayoutTemplates, contiguous_operands


def contiguous_class(key: tuple) -> Optional[tuple]:
    """(class, shape, numel) of a call signature whose tensors are all contiguous_operands of
    one shape of two or more elements; None for any other call. The class is the signature
    without shapes and strides."""
    operands = contiguous_operands(key) or ()
    shapes = {op[1] for op in operands if type(op) is tuple}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    numel = math.prod(shape)
    if numel < 2:
        return None
    return tuple(op[0:1] + op[2:] if type(op) is tuple else op for op in operands), shape, numel


class NewShapes:
    """Where a plan-cache miss of a known call gets its plan without the analysis (contiguous
    calls here, any other plain call with its tiling and binding skipped in
    layout_templates.py), and where any new plan gets its launcher without a first launch
    (Siblings)."""

    def __init__(self, config, n_inputs: int):
        self.contiguous = Templates(config)
        self.layouts = LayoutTemplates(config, n_inputs)
        self.siblings = Siblings()

    def derive(self, key: tuple, default_dtype):
        """The plan of call `key` derived from a template, or None (the analysis must run)."""
        plan = self.contiguous.derive(key, default_dtype)  # launcher rebound already, where sound
        if plan is None:
            plan = self.layouts.derive(key, default_dtype)
            if plan is not None:
                self.siblings.adopt(key, plan)
        return plan

    def remember(self, key: tuple, plan) -> None:
        """Learn from `plan`, which the analysis just built for the call `key`."""
        self.contiguous.remember(key, plan)
        self.layouts.remember(key, plan)
        self.siblings.adopt(key, plan)


class Templates:
    """One plan per contiguous call class (and alignment of numel), the source of derived plans."""

    def __init__(self, config):
        self._config = config
        self._templates: dict = {}

    def remember(self, key: tuple, plan) -> None:
        """Keep `plan` (just built for the call `key`) as its class's template, when it is one."""
        task = plan.task
        if task is None or not plan.allocates_and_launches or task.tiling.scheme != "flat":
            return
        found = contiguous_class(key)
        if found is None or task.task_shape != (found[2],):
            return
        self._templates.setdefault((found[0], task.aligned), _Template(plan, self._config))

    def derive(self, key: tuple, default_dtype):
        """The plan of call `key` derived from its class's template, or None (no template, or
        one whose index width or default dtype differs)."""
        found = contiguous_class(key) if self._templates else None
        if found is None:
            return None
        parts, shape, numel = found
        class_key = (parts, numel % ALIGNMENT == 0)
        template = self._templates.get(class_key)
        if template is None or template.index_bits(numel) != template.plan.task.index_bits:
            return None
        if template.plan.default_dtype not in (None, default_dtype):
            return None
        return template.derived(shape, numel)


class _Template:
    """A class's template plan, with what every plan derived from it reuses."""

    def __init__(self, plan, config):
        self.plan = plan
        self._scheme = get_scheme("flat")
        self._classes = stride_classes(plan.spec)  # codegen.params.stride_classes of its spec
        self._block = plan.task.tiling.block
        self._max_grid = config.max_grid_size[0]
        self._launched = _Launched(plan)

    def index_bits(self, numel: int) -> int:
        return index_bits((numel,), ((1,),), self._block)  # the flat task's: unit strides

    def derived(self, shape: tuple, numel: int):
        """The template for `numel` elements of `shape`: what the flat task and the plan change."""
        template, task, scheme, block = self.plan, self.plan.task, self._scheme, self._block
        tiles = scheme.num_tiles((numel,), None, block)
        grid = (min(tiles, self._max_grid),)
        out_strides = (c_strides(shape),) * len(template.out_strides)
        index_args = scheme.index_values((numel,), None, block, self._classes, task.strides)
        new_task = copy_with(
            task, shape=shape, output_strides=out_strides, task_shape=(numel,), num_tiles=tiles, grid=grid
        )
        plan = template.for_task(new_task, index_args, out_shape=shape, out_strides=out_strides)
        self._launched.lend(plan)
        return plan


class Siblings:
    """Plans the analysis builds (new shapes of classes no template serves: nd, tile2d, strided),
    grouped by call class (the signature without shapes and strides) and generated file. A later
    plan of a group runs the same kernel on operands of the same dtypes, alignment and scalar
    widths, so it launches through an earlier one's launcher rebound (kernels.Rebinding) instead
    of a first launch, wherever Triton gives it the same specialization. A group keeps the first
    plan of each specialization it has met (sizes divisible by 16 or not), up to PER_GROUP."""

    PER_GROUP = 8

    def __init__(self):
        self._groups: dict = {}

    def adopt(self, key: tuple, plan) -> None:
        """Give `plan` (just built for the call `key`) a rebound launcher, or keep it as the
        first of its specialization in its group."""
        if plan.device.type != "cuda" or plan.interpreted or plan.spec is None:
            return  # nothing launches through launch.c
        if not plan.allocates_and_launches:
            return
        group = self._groups.setdefault((shape_free_class(key), plan.spec.file_name), [])
        if not any(launched.lend(plan) for launched in group) and len(group) < self.PER_GROUP:
            group.append(_Launched(plan))


def shape_free_class(key: tuple) -> tuple:
    """A call signature (runtime/arguments.call_signature) without its shapes and strides."""
    return tuple(tuple(x for x in e if not isinstance(x, tuple)) if isinstance(e, tuple) else e for e in key)


class _Launched:
    """A plan whose launcher, once it has launched, later plans of its kernel take rebound."""

    def __init__(self, plan):
        self.plan = plan
        self._rebinding = None  # kernels.Rebinding, once the plan has launched

    def rebinding(self) -> Optional[Rebinding]:
        """The Rebinding of this plan's launcher, once it has launched."""
        if self._rebinding is None and self.plan.direct is not None:
            self._rebinding = Rebinding(self.plan)
        return self._rebinding

    def lend(self, plan) -> bool:
        """Give `plan` this plan's launcher rebound to its values, where that is sound."""
        rebinding = self.rebinding()
        direct = rebinding and rebinding.launcher(plan)
        if direct is not None:
            plan.use_launcher(direct)
        return direct is not None
