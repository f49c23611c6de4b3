"""KernelSpec: exactly what changes a generated file's source; its hash names the file."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Optional

import torch

from ..schemes import get_scheme

_SAME_NAMES = "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64".split()
TRITON_DTYPES = {  # torch dtype -> triton dtype name, for the dtypes this torch has
    getattr(torch, name): tl
    for name, tl in [("bool", "int1"), ("float8_e4m3fn", "float8e4nv"), ("float8_e5m2", "float8e5")]
    + [(n, n) for n in _SAME_NAMES]
    if hasattr(torch, name)
}

TRITON_ITEMSIZES = {name: dtype.itemsize for dtype, name in TRITON_DTYPES.items()}  # bytes of an element


DTYPE_TAGS = {
    "int1": "b1",
    "float8e4nv": "f8e4",
    "float8e5": "f8e5",
    **{f"{kind}{bits}": f"{kind[0]}{bits}" for kind in ("int", "uint", "float") for bits in (8, 16, 32, 64)},
    "bfloat16": "bf16",
}


def triton_dtype(dtype: torch.dtype, what: str) -> str:
    try:
        return TRITON_DTYPES[dtype]
    except KeyError:
        raise TypeError(f"{what}: dtype {dtype} is not supported by tritonwise kernels") from None


@dataclass(frozen=True)
class InputSpec:
    """One payload argument. Tensors carry stride classes; scalars an optional annotation."""

    name: str  # in0, in1, ... by position
    param: str  # the payload's own parameter name, for the header
    is_tensor: bool
    dtype: str  # triton dtype of a tensor, python type name of a scalar
    annotation: Optional[str] = None  # kernel parameter type of a scalar (e.g. "float64")
    strides: str = ""  # per task dim: '0' broadcast, '1' unit, 's' run-time stride


@dataclass(frozen=True)
class PayloadCall:
    """One call of the payload: the outputs it gives, and per input the triton dtypes its value is
    converted through first (empty: as loaded)."""

    outputs: tuple  # output names
    converts: tuple  # per input: a tuple of triton dtype names
    # runs the payload's variant computing only these outputs (autodiff/variants.py), bound as
    # `<payload alias>_<outputs>`; out of the key: the payload's source and `outputs` decide it
    variant: bool = field(default=False, repr=False, compare=False)

    def variant_alias(self, payload_alias: str) -> str:
        return f"{payload_alias}_{'_'.join(self.outputs)}"


@dataclass(frozen=True)
class OutputSpec:
    """An elementwise output (with stride classes), or a reduction accumulated in `acc` from
    `identity`: full (no strides) or along dims (strides over the task, '0' along reduced dims)."""

    name: str
    dtype: str  # the result dtype
    strides: str
    store: Optional[str] = None  # a given output's own dtype, when it differs from the result's
    reduction: Optional[str] = None  # "sum", "max", "min"
    acc: Optional[str] = None
    identity: Optional[str] = None
    value: Optional[str] = None  # the dtype the payload returns for it, when known: no cast if it is `dtype`
    partial: bool = False  # a split reduction's partial values: stored in `acc`, not rounded to `dtype`


# A split's last part (SplitRows): the columns it reads past the others', and the task's first row in it
SPLIT_TAIL_PARAMS = ("tail_cols", "tail_from")


@dataclass(frozen=True)
class KernelSpec:
    """Exactly what changes a generated file's text; `key` hashes all of it and names the file.

    Per operand: dtype, kind, conversions and stride classes ('0' broadcast, '1' contiguous, 's' any
    other, passed at run time); the task's rank, scheme, tiled dim, index width, alignment (every
    extent the vector accesses run along, Scheme.aligned_dims, and every run-time stride of the
    operands that count, Scheme.aligned_operands, a multiple of 16: Triton then vectorizes) and
    `blocks`. Never exact shapes, strides or the block a call picks:
    those are launch arguments, so one file serves every shape of its layout class."""

    payload_name: str
    payload_origin: str
    payload_hash: str
    inputs: tuple
    outputs: tuple
    calls: tuple  # PayloadCall per distinct set of input conversions
    rank: int
    scheme: str
    m_dim: Optional[int]
    blocks: tuple  # the block shapes (constexpr values) this file may be launched with
    index_bits: int
    aligned: bool
    version: str
    generator: str  # a hash of the templates and the code that writes the text (codegen/key.py)
    triton_version: str
    deterministic: bool = False  # reductions: one partial per program instead of atomics
    peel: Optional[int] = None  # the operand (of `tensors`) blocks of one row read rotated (Scheme.peel_operand)
    split_tail: bool = False  # a split whose last part reads columns past the others' (SplitRows.tail_cols)
    # what the payload's copy needs when the file runs alone: imports, constants, helpers
    payload_preamble: tuple = ()
    # the payload's source, copied into the file; out of repr (and so of the key's hashed text)
    # because payload_hash already stands for it
    payload_source: str = field(default="", repr=False, compare=False)

    @functools.cached_property
    def kernel_name(self) -> str:
        """`add_r2_tile2d_i32_f32`: payload, rank, scheme, index width, then the distinct dtypes of
        the tensor inputs and outputs (as stored), so kernels of other dtypes differ in a profiler."""
        dtypes = [i.dtype for i in self.inputs if i.is_tensor] + [o.store or o.dtype for o in self.outputs]
        tags = "_".join(DTYPE_TAGS.get(d, d) for d in dict.fromkeys(dtypes))
        return f"{self.payload_name}_r{self.rank}_{self.scheme}_i{self.index_bits}_{tags}"

    @functools.cached_property
    def key(self) -> str:
        """Hashed once per spec object (a new shape of a known class reuses the spec)."""
        return hashlib.sha256(repr(self).encode()).hexdigest()[:20]

    @functools.cached_property
    def file_name(self) -> str:
        return f"{self.kernel_name}_{self.key}.py"

    @property
    def tensors(self) -> tuple:
        """Strided operands in kernel order: tensor inputs, then elementwise outputs."""
        inputs = tuple(i for i in self.inputs if i.is_tensor)
        return inputs + tuple(o for o in self.outputs if o.reduction is None or o.strides)

    @property
    def elementwise_outputs(self) -> tuple:
        return tuple(o for o in self.outputs if o.reduction is None)

    @property
    def reduced_outputs(self) -> tuple:
        """Full reductions (to 0-d, through accumulators)."""
        return tuple(o for o in self.outputs if o.reduction is not None and not o.strides)

    @property
    def row_reduced_outputs(self) -> tuple:
        """Reductions along dims: strided over the task (0 along the reduced dims), one value a row."""
        return tuple(o for o in self.outputs if o.reduction is not None and o.strides)

    @property
    def strided_output_count(self) -> int:
        """How many of `tensors`, the last, are outputs."""
        return len(self.tensors) - sum(i.is_tensor for i in self.inputs)

    @property
    def stride_classes(self) -> tuple:
        """(operand name, stride classes) per strided operand, in kernel order."""
        return tuple((op.name, op.strides) for op in self.tensors)

    def index_params(self) -> list:
        """The integer parameters after the operands: sizes, run-time strides, tile counts, and a
        split's last part's extra columns and first row (SPLIT_TAIL_PARAMS) where it has them."""
        params = get_scheme(self.scheme).index_params(self.rank, self.m_dim, self.stride_classes)
        return params + list(SPLIT_TAIL_PARAMS) if self.split_tail else params

    def index_values(self, plan) -> tuple:
        """Values of index_params() for one TaskPlan, in order: what a plan miss computes to launch a
        known file, without importing jinja2 or generating anything."""
        tiling = plan.tiling
        scheme = get_scheme(self.scheme)
        values = scheme.index_values(plan.task_shape, tiling.m_dim, tiling.block, self.stride_classes, plan.strides)
        return (*values, plan.split.tail_cols, plan.split.tail_from) if self.split_tail else values
