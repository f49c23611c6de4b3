"""A kernel's integer parameters, and their launch values: a plan miss computes launch values here
from the analysis, without importing jinja2 or generating anything."""

from __future__ import annotations

from ..schemes import get_scheme
from .spec import KernelSpec


def stride_classes(spec: KernelSpec) -> tuple:
    """(operand name, stride classes) per strided operand, in kernel order."""
    return tuple((op.name, op.strides) for op in spec.tensors)


def index_params(spec: KernelSpec) -> list:
    """The integer parameters after the operands: sizes, run-time strides, tile counts."""
    return get_scheme(spec.scheme).index_params(spec.rank, spec.m_dim, stride_classes(spec))


def index_arg_values(spec: KernelSpec, plan) -> tuple:
    """Values of index_params(spec) for one task plan, in order."""
    scheme = get_scheme(spec.scheme)
    tiling = plan.tiling
    return scheme.index_values(plan.task_shape, tiling.m_dim, tiling.block, stride_classes(spec), plan.strides)
