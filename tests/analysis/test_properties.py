"""Property tests: tritonwise against torch on random shapes, layouts, dtypes and scalars.

Every example builds operands (ranks 0-6, sizes including 0 and 1, broadcasting, slices with
steps and storage offsets, permutes, expands, channels_last, python scalars, 0-d tensors), picks
per output a fused reduction or none, and runs one payload through tritonwise and its twin body
through torch. The CPU and the GPU tests draw from this one strategy (the GPU adds bfloat16). The torch side follows
tritonwise's documented semantics: each input is converted to the computation dtype of the
first output whose promotion method names it, the body runs, and each result is cast to the
output's result dtype (`torch._prims_common.elementwise_dtypes`). Outputs are poisoned first
(allocated ones too, by wrapping `torch.empty_strided`), and for given outputs the whole
underlying storage is compared afterwards, so a missed element and a stray write both fail.

Profiles (hypothesis settings registered here, applied per test, never loaded globally):
  ci    (default)  few examples per test, no deadline
  long             TRITONWISE_HYPOTHESIS_PROFILE=long  hundreds of examples per test
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from dataclasses import dataclass
from typing import Callable, Optional

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from torch._prims_common import elementwise_dtypes

from tests.support.poison import poisoned_like
from tritonwise import CodeGenConfig, StridedBuffer, pointwise_dynamic
from tritonwise.analysis.plan import analyze
from tritonwise.analysis.tiling import INT32_LIMIT

_COMMON = dict(
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.register_profile("ci", max_examples=20, **_COMMON)
settings.register_profile("long", max_examples=1000, **_COMMON)
PROFILE = os.environ.get("TRITONWISE_HYPOTHESIS_PROFILE", "ci")
SETTINGS = settings.get_profile(PROFILE)

# numpy (under Triton's interpreter) warns on integer wrap-around and float specials; torch does not.
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning",
    "ignore:invalid value encountered:RuntimeWarning",
    "ignore:divide by zero encountered:RuntimeWarning",
    "ignore:All-NaN slice encountered:RuntimeWarning",
)

CPU_DTYPES = [
    torch.bool,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.float16,
    torch.float32,
    torch.float64,
]
GPU_DTYPES = CPU_DTYPES + [torch.bfloat16]
MAX_NUMEL = 200
SIZES = [0, 1, 1, 2, 2, 3, 3, 4, 5, 7, 13]
CONFIGS = {
    "default": CodeGenConfig(),
    # tiles of at most 8 elements over at most 2 programs: many tiles, a grid-stride loop,
    # masks at every tile edge.
    "small": CodeGenConfig(max_tile_size=8, max_grid_size=(2,)),
}

# Result dtype -> output dtypes that hold every value of it exactly (torch.can_cast allows them).
WIDER = {
    torch.bool: CPU_DTYPES,
    torch.int8: [torch.int16, torch.int32, torch.int64, torch.float32, torch.float64],
    torch.uint8: [torch.int16, torch.int32, torch.int64, torch.float32],
    torch.int16: [torch.int32, torch.int64, torch.float32, torch.float64],
    torch.int32: [torch.int64, torch.float64],
    torch.int64: [],
    torch.float16: [torch.float32, torch.float64],
    torch.bfloat16: [torch.float32, torch.float64],
    torch.float32: [torch.float64],
    torch.float64: [],
}


# ---------------------------------------------------------------------------------------------
# Payloads, one per promotion kind, with their torch twins.


@triton.jit
def add(x, y):
    return x + y


ADD = pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")])


@triton.jit
def axpy(x, y, alpha):
    return x + y * alpha


@triton.jit
def select(c, x, y):
    return tl.where(c != 0, x, y)


@triton.jit
def ratio(x, y):
    return x / y


@triton.jit
def less(x, y):
    return x < y


@triton.jit
def distance(x, y):
    return tl.abs(x - y)


@triton.jit
def mul_add_self(x, y):
    return x * y + x


@triton.jit
def product_and_equal(x, y):
    return x * y, x == y


@triton.jit
def product_less_larger(x, y):
    return x * y, x < y, tl.where(x < y, y, x)


@dataclass(frozen=True)
class Case:
    """A payload, its torch twin and the schema pieces the tests vary."""

    name: str
    payload: object
    twin: Callable
    methods: tuple
    arity: int
    tensor_only: tuple = ()  # argument positions that are always tensors
    bool_compute_ok: bool = True  # False when the body's arithmetic on bools differs from torch's

    def __str__(self) -> str:
        return self.name




CASES = [
    Case("axpy-DEFAULT", axpy, lambda x, y, a: (x + y * a,), ((0, 1, 2, "DEFAULT"),), 3),
    Case("select-NO_OPMATH", select, lambda c, x, y: (torch.where(c != 0, x, y),), ((1, 2, "NO_OPMATH"),), 3, (0,)),
    Case("ratio-INT_TO_FLOAT", ratio, lambda x, y: (torch.div(x, y),), ((0, 1, "INT_TO_FLOAT"),), 2),
    Case("less-ALWAYS_BOOL", less, lambda x, y: (x < y,), ((0, 1, "ALWAYS_BOOL"),), 2),
    Case(
        "distance-COMPLEX_TO_FLOAT",
        distance,
        lambda x, y: (torch.abs(x - y),),
        ((0, 1, "COMPLEX_TO_FLOAT"),),
        2,
        bool_compute_ok=False,
    ),
    Case("mul_add_self-BOOL_TO_LONG", mul_add_self, lambda x, y: (x * y + x,), ((0, 1, "BOOL_TO_LONG"),), 2),
    Case(
        "two_outputs",
        product_and_equal,
        lambda x, y: (x * y, x == y),
        (((0, 1), "DEFAULT"), ((0, 1), "ALWAYS_BOOL")),
        2,
    ),
    Case(
        "three_outputs",
        product_less_larger,
        lambda x, y: (x * y, x < y, torch.where(x < y, y, x)),
        ((0, 1, "DEFAULT"), (0, 1, "ALWAYS_BOOL"), (0, 1, "NO_OPMATH")),
        2,
    ),
]


@functools.lru_cache(maxsize=None)
def function_for(case: Case, is_tensor: tuple, config_name: str, reductions: Optional[tuple] = None):
    """One PointwiseDynamicFunction per (payload, tensor/scalar pattern, config, reductions),
    reused across examples."""
    return pointwise_dynamic(
        case.payload,
        is_tensor=list(is_tensor),
        promotion_methods=list(case.methods),
        config=CONFIGS[config_name],
        reductions=None if reductions is None else list(reductions),
    )


def canonical(method) -> tuple:
    *indices, kind = method
    if len(indices) == 1 and isinstance(indices[0], (tuple, list)):
        indices = list(indices[0])
    return (*indices, kind)


# ---------------------------------------------------------------------------------------------
# Strategies: shapes, layouts, values, scalars.


@st.composite
def shapes(draw, min_rank=0, max_rank=6, max_numel=MAX_NUMEL):
    rank = draw(st.integers(min_rank, max_rank))
    shape, budget = [], max_numel
    for _ in range(rank):
        size = draw(st.sampled_from([s for s in SIZES if s <= max(budget, 1)]))
        shape.append(size)
        budget = budget // size if size else budget
    return tuple(shape)


@st.composite
def broadcast_operand_shape(draw, shape: tuple):
    """A shape that broadcasts to `shape`: leading dims dropped, some dims set to 1."""
    dropped = draw(st.integers(0, len(shape)))
    return tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in shape[dropped:])


@dataclass(frozen=True)
class Layout:
    """How a view of `shape` sits in its storage: memory order, steps, offset, expanded dims."""

    perm: tuple  # perm[k]: the logical dim stored k-th from the outside
    steps: tuple
    offset: int
    expand: tuple

    def source_shape(self, shape: tuple) -> tuple:
        return tuple(1 if e else n for n, e in zip(shape, self.expand))

    def storage_numel(self, shape: tuple) -> int:
        src = self.source_shape(shape)
        return self.offset + math.prod(src[p] * self.steps[p] for p in self.perm)

    def view(self, base: torch.Tensor, shape: tuple) -> torch.Tensor:
        src = self.source_shape(shape)
        stored = [src[p] * self.steps[p] for p in self.perm]
        v = base[self.offset : self.offset + math.prod(stored)].view(stored)
        v = v[tuple(slice(None, None, self.steps[p]) for p in self.perm)]
        inverse = [self.perm.index(d) for d in range(len(shape))]
        return v.permute(inverse).expand(shape)


@st.composite
def layouts(draw, shape: tuple, allow_expand: bool = True):
    rank = len(shape)
    kind = draw(st.sampled_from(["contiguous", "permuted", "channels_last", "strided"]))
    perm = tuple(range(rank))
    if kind == "permuted" or kind == "strided" and draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(rank))))
    if kind == "channels_last" and rank in (4, 5):
        perm = (0, *range(2, rank), 1)
    steps = tuple(draw(st.sampled_from([1, 2, 3])) if kind == "strided" else 1 for _ in range(rank))
    offset = draw(st.integers(0, 3)) if kind == "strided" else 0
    expand = tuple(allow_expand and n != 1 and draw(st.integers(0, 4)) == 0 for n in shape)
    layout = Layout(perm, steps, offset, expand)
    if layout.storage_numel(shape) > 4096:
        layout = Layout(perm, (1,) * rank, offset, expand)
    return layout


def random_values(numel: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Values across the dtype's range (ints: small and extreme; floats: with 0, -0, inf, nan)."""
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (numel,), generator=gen).bool()
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        small = torch.randint(max(info.min, -100), min(info.max, 100) + 1, (numel,), generator=gen, dtype=torch.int64)
        wide = torch.randint(info.min, info.max, (numel,), generator=gen, dtype=torch.int64)
        pick = torch.rand(numel, generator=gen) < 0.3
        return torch.where(pick, wide, small).to(dtype)
    values = torch.randn(numel, generator=gen, dtype=torch.float64) * 10.0
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0], dtype=torch.float64)
    pick = torch.rand(numel, generator=gen) < 0.15
    chosen = specials[torch.randint(0, len(specials), (numel,), generator=gen)]
    return torch.where(pick, chosen, values).to(dtype)


# Python scalars: ints beyond int32 (exact with int64 operands), any double (exact with fp64
# operands), specials.
scalars = st.one_of(
    st.booleans(),
    st.integers(-100, 100),
    st.sampled_from([2**33 + 1, -(2**40), 2**62]),
    st.floats(-1e4, 1e4),
    st.integers(-(10**7), 10**7).map(lambda k: k / 3072),  # mostly doubles fp32 cannot hold
    # -0.0 is left to test_negative_zero_scalar_keeps_its_sign, where it is a known failure
    st.sampled_from([0.0, 0.1, 1 / 3, float("inf"), float("-inf"), float("nan")]),
)


@dataclass
class Operand:
    """A tensor argument and the storage it lives in."""

    base: torch.Tensor
    layout: Layout
    shape: tuple

    @property
    def tensor(self) -> torch.Tensor:
        return self.layout.view(self.base, self.shape)


def make_operand(shape, dtype, layout: Layout, seed: int, device: str = "cpu") -> Operand:
    base = random_values(layout.storage_numel(shape), dtype, seed).to(device)
    return Operand(base, layout, shape)


def poison_fills(dtype: torch.dtype) -> list:
    if dtype == torch.bool:
        return [True, False]
    if dtype.is_floating_point:
        return [float("nan"), -1234.0]
    info = torch.iinfo(dtype)
    return [info.min, info.max, 77]


def make_output(shape, dtype, layout: Layout, fill, device: str = "cpu") -> Operand:
    base = poisoned_like(torch.empty(layout.storage_numel(shape), dtype=dtype, device=device), fill)
    return Operand(base, layout, shape)


@contextlib.contextmanager
def poisoned_allocations():
    """Every tensor torch.empty_strided allocates (tritonwise's allocated outputs) starts poisoned."""
    real = torch.empty_strided

    def poisoned(*args, **kwargs):
        return poisoned_like(real(*args, **kwargs))

    torch.empty_strided = poisoned
    try:
        yield
    finally:
        torch.empty_strided = real


# ---------------------------------------------------------------------------------------------
# The oracle.


def expected_outputs(case: Case, args: list, shape: tuple) -> list:
    """(result dtype, values) per output, computed by torch under tritonwise's documented rules
    (frontend/dtypes.py): each output on its own, its sized tensor operands rounded to the common
    dtype first (scalars and 0-d tensors too for ALWAYS_BOOL), then computed in the computation
    dtype; a bool computation is left to torch's bool arithmetic."""
    expected = []
    for k, method in enumerate(canonical(m) for m in case.methods):
        *named, kind = method
        compute, result = elementwise_dtypes(*[args[i] for i in named], type_promotion_kind=_kind(kind))
        common = result
        if _kind(kind) == _kind("ALWAYS_BOOL"):
            common = elementwise_dtypes(*[args[i] for i in named], type_promotion_kind=_kind("DEFAULT"))[1]
        converted = list(args)
        for i in named:
            sized = isinstance(args[i], torch.Tensor) and args[i].ndim > 0
            value = as_tensor(args[i])
            if sized or _kind(kind) == _kind("ALWAYS_BOOL"):
                value = value.to(common)
            converted[i] = value.to(compute)
        value = case.twin(*converted)[k]
        expected.append((result, torch.broadcast_to(torch.as_tensor(value), shape).to(result)))
    return expected


def as_tensor(value) -> torch.Tensor:
    """A python scalar as an exact 0-d tensor. The payload sees a scalar named by a promotion
    method as a value of the computation dtype, and so does torch here: torch's own scalar paths
    differ (`2 / t` is `t.reciprocal() * 2`; `False - t` is an error)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value, dtype={bool: torch.bool, int: torch.int64, float: torch.float64}[type(value)])


def computation_dtypes(case: Case, args: list) -> list:
    return [
        elementwise_dtypes(*[args[i] for i in canonical(m)[:-1]], type_promotion_kind=_kind(canonical(m)[-1]))[0]
        for m in case.methods
    ]


def _kind(name):
    from tritonwise import ELEMENTWISE_TYPE_PROMOTION_KIND

    return ELEMENTWISE_TYPE_PROMOTION_KIND[name] if isinstance(name, str) else name


def assert_equal(got: torch.Tensor, expected: torch.Tensor, exact: bool = True, what: str = "output"):
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    got, expected = got.cpu(), expected.cpu()
    if exact or not got.dtype.is_floating_point:
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")
    else:
        torch.testing.assert_close(got.double(), expected.double(), equal_nan=True, msg=lambda m: f"{what}: {m}",
                                   rtol=1e-2 if got.dtype in (torch.float16, torch.bfloat16) else 1e-5, atol=1e-5)


def expected_storage(out: Operand, value: torch.Tensor) -> torch.Tensor:
    """`out`'s storage as it must be after the call: poison everywhere but the view, `value` there."""
    storage = out.base.clone()
    out.layout.view(storage, out.shape).copy_(value)
    return storage


def torch_output_strides(tensors: list) -> Optional[tuple]:
    """The strides TensorIterator gives the output of an op over tensors laid out like `tensors`."""
    stand_ins = [_float_stand_in(t) for t in tensors]
    op = {1: torch.neg, 2: torch.add, 3: torch.addcmul}[len(stand_ins)]
    return op(*stand_ins).stride()


def _float_stand_in(t: torch.Tensor) -> torch.Tensor:
    extent = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n)
    return torch.zeros(extent).as_strided(t.shape, t.stride())


def assert_strides_like_torch(got: torch.Tensor, tensors: list):
    """Strides on dims of size > 1 (torch's strides on size-1 dims are arbitrary)."""
    if got.numel() == 0 or not tensors:
        return
    expected = torch_output_strides(tensors)
    for d, n in enumerate(got.shape):
        if n > 1:
            assert got.stride(d) == expected[d], f"allocated strides {got.stride()}, torch gives {expected}"


# ---------------------------------------------------------------------------------------------
# The main property: every payload, any shapes, layouts, dtypes and scalars.


def draw_call(data, case: Case, dtypes: list, device: str = "cpu"):
    """Draw one call of `case`: (function, args, operands (None for scalars), broadcast shape,
    reductions). The one strategy of the CPU and the GPU property tests: only the dtypes and the
    device differ."""
    pattern = [True] * case.arity
    for i in range(case.arity):
        if i not in case.tensor_only:
            pattern[i] = data.draw(st.integers(0, 2), label=f"scalar{i}?") != 0
    if not any(pattern):
        pattern[0] = True
    shape = data.draw(shapes(), label="shape")
    config = data.draw(st.sampled_from(sorted(CONFIGS)), label="config")
    reductions = tuple(
        data.draw(st.sampled_from(REDUCTIONS), label=f"out{k} reduction") for k in range(len(case.methods))
    )
    fn = function_for(case, tuple(pattern), config, reductions if any(reductions) else None)
    args, operands = [], []
    for i, is_tensor in enumerate(pattern):
        if not is_tensor:
            args.append(data.draw(scalars, label=f"arg{i}"))
            operands.append(None)
            continue
        op_shape = data.draw(broadcast_operand_shape(shape), label=f"arg{i} shape")
        dtype = data.draw(st.sampled_from(dtypes), label=f"arg{i} dtype")
        layout = data.draw(layouts(op_shape), label=f"arg{i} layout")
        operand = make_operand(op_shape, dtype, layout, data.draw(st.integers(0, 2**31), label="seed"), device)
        operands.append(operand)
        args.append(operand.tensor)
    shape = torch.broadcast_shapes(*[a.shape for a in args if isinstance(a, torch.Tensor)])
    return fn, args, operands, shape, reductions


# Per output: elementwise (None, twice as likely) or reduced over every element.
REDUCTIONS = [None, None, "sum", "max", "min"]




@dataclass(frozen=True)
class Expected:
    """One output as torch computes it: dtype and value; for a float sum also the sum of the
    terms' magnitudes (the summation order differs, so it is compared within a bound)."""

    dtype: torch.dtype
    value: torch.Tensor
    magnitude: Optional[float] = None


def reduced(kind: str, result: torch.dtype, value: torch.Tensor) -> Expected:
    """A fused reduction of an elementwise result, as documented: sums of bools and integers in
    int64 (torch's rule), 16-bit floats accumulated in float32, max/min ignoring NaN (Triton's
    semantics; all-NaN gives the identity, -inf for max)."""
    if kind == "sum":
        dtype = result if result.is_floating_point else torch.int64
        acc = torch.float32 if result in (torch.float16, torch.bfloat16) else dtype
        magnitude = value.double().abs().sum().item() if dtype.is_floating_point else None
        return Expected(dtype, value.to(acc).sum().to(dtype), magnitude)
    wide = value.double() if result.is_floating_point else value.to(torch.int64)
    if result.is_floating_point:
        wide = torch.where(wide.isnan(), float("-inf") if kind == "max" else float("inf"), wide)
    return Expected(result, (wide.max() if kind == "max" else wide.min()).to(result))


def assert_sum_close(got: torch.Tensor, expected: Expected, numel: int, exact: bool, what: str):
    """A float sum in another order: within the accumulation's rounding bound (terms times eps
    times the sum of magnitudes), plus the GPU's elementwise tolerance when `exact` is False."""
    assert got.dtype == expected.dtype and got.shape == (), f"{what}: {got.dtype} {tuple(got.shape)}"
    g, e = got.item(), expected.value.item()
    if math.isnan(e) or math.isinf(e):
        assert (math.isnan(g) and math.isnan(e)) or g == e, f"{what}: {g}, expected {e}"
        return
    acc = torch.float32 if got.dtype in (torch.float16, torch.bfloat16) else got.dtype
    bound = 4 * numel * torch.finfo(acc).eps * expected.magnitude + torch.finfo(got.dtype).eps * abs(e)
    if not exact:
        bound += (1e-2 if got.dtype in (torch.float16, torch.bfloat16) else 1e-5) * expected.magnitude
    assert abs(g - e) <= bound, f"{what}: {g}, expected {e} (bound {bound})"


def check_call(data, case: Case, dtypes: list, device: str = "cpu", exact: bool = True):
    fn, args, operands, shape, reductions = draw_call(data, case, dtypes, device)
    if not case.bool_compute_ok:
        assume(torch.bool not in computation_dtypes(case, args))
    if math.prod(shape) == 0 and any(kind in ("max", "min") for kind in reductions):
        with pytest.raises(RuntimeError, match="no identity"):  # as torch.amax of an empty tensor
            fn(*args)
        return
    elementwise = expected_outputs(case, [a.cpu() if isinstance(a, torch.Tensor) else a for a in args], shape)
    expected = [
        Expected(r, v) if kind is None else reduced(kind, r, v) for kind, (r, v) in zip(reductions, elementwise)
    ]
    outs = {}
    for k, exp in enumerate(expected):
        if not data.draw(st.booleans(), label=f"give out{k}?"):
            continue
        out_shape = shape if reductions[k] is None else ()
        choices = [exp.dtype] + [d for d in WIDER[exp.dtype] if d in dtypes]
        dtype = data.draw(st.sampled_from(choices), label=f"out{k} dtype")
        layout = data.draw(layouts(out_shape, allow_expand=False), label=f"out{k} layout")
        fill = data.draw(st.sampled_from(poison_fills(dtype)), label=f"out{k} poison")
        outs[k] = make_output(out_shape, dtype, layout, fill, device)
    before = [op.base.clone() if op else None for op in operands]

    with poisoned_allocations():
        got = fn(*args, **{f"out{k}": o.tensor for k, o in outs.items()})

    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for k, (exp, tensor) in enumerate(zip(expected, got)):
        value = exp.value
        if exp.magnitude is not None:  # checked within a bound; the storage around a given output exactly
            assert_sum_close(tensor.cpu().to(exp.dtype), exp, math.prod(shape), exact, f"out{k} sum")
            value = tensor.cpu().to(exp.dtype)
        if k in outs:
            assert tensor.data_ptr() == outs[k].tensor.data_ptr() and tensor.stride() == outs[k].tensor.stride()
            want = expected_storage(outs[k], value.to(outs[k].base.dtype))
            assert_equal(outs[k].base, want, exact, f"out{k} storage")
        else:
            assert_equal(tensor, value, exact, f"out{k}")
            if not outs and reductions[k] is None:  # a given output takes part in choosing the order
                assert_strides_like_torch(tensor, [a for a in args if isinstance(a, torch.Tensor)])
    for i, (op, old) in enumerate(zip(operands, before)):
        if op is not None:
            assert_equal(op.base, old, True, f"input {i} storage (must not change)")


@pytest.mark.parametrize("case", CASES, ids=str)
@SETTINGS
@given(data=st.data())
def test_matches_torch(case, data):
    check_call(data, case, CPU_DTYPES)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=str)
@SETTINGS
@given(data=st.data())
def test_matches_torch_on_gpu_with_bf16(case, data):
    check_call(data, case, GPU_DTYPES, device="cuda", exact=False)


# The corners a few random examples may miss, every one on both devices: fused reductions over
# tasks that collapse to rank 0 (0-d, all size-1 dims) or are empty, beside a tensor or a scalar.
EDGE_SHAPES = [(), (1,), (1, 1, 1), (0,), (2, 0), (3, 1)]
TWO_OUTPUTS = CASES[6]  # x * y (DEFAULT) and x == y (ALWAYS_BOOL)


def check_edge(shape, kind, dtype, second, device, exact):
    x = random_values(math.prod(shape), dtype, 7).view(shape)
    y = {"tensor": random_values(math.prod(shape), dtype, 8).view(shape), "scalar": 2.5, "bool": False}[second]
    fn = function_for(TWO_OUTPUTS, (True, second == "tensor"), "default", (kind, None))
    args = [x.to(device), y.to(device) if isinstance(y, torch.Tensor) else y]
    if math.prod(shape) == 0 and kind != "sum":
        with pytest.raises(RuntimeError, match="no identity"):
            fn(*args)
        return
    (result, value), (_, equal) = expected_outputs(TWO_OUTPUTS, [x, y], shape)
    expected = reduced(kind, result, value)
    got, got_equal = fn(*args)
    if expected.magnitude is None:
        assert_equal(got, expected.value, exact, f"{kind}")
    else:
        assert_sum_close(got.cpu(), expected, math.prod(shape), exact, f"{kind}")
    assert_equal(got_equal, equal, True, "x == y")


EDGE_CPU_DTYPES = [torch.bool, torch.int16, torch.int64, torch.float16, torch.float32]


@pytest.mark.parametrize("second", ["tensor", "scalar", "bool"])
@pytest.mark.parametrize("dtype", EDGE_CPU_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=str)
def test_reductions_over_edge_shapes(shape, kind, dtype, second):
    check_edge(shape, kind, dtype, second, "cpu", exact=True)


@pytest.mark.gpu
@pytest.mark.parametrize("second", ["tensor", "scalar", "bool"])
@pytest.mark.parametrize("dtype", GPU_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=str)
def test_reductions_over_edge_shapes_on_gpu(shape, kind, dtype, second):
    check_edge(shape, kind, dtype, second, "cuda", exact=False)


def test_given_zero_dim_output():
    """Regression: a given 0-d output once made the partial-overlap check index an empty extent."""
    x, y = torch.tensor(1.5), torch.tensor(2.0)
    out = poisoned_like(torch.empty(()))
    assert ADD(x, y, out0=out) is out
    assert_equal(out, x + y)


def test_allocated_strides_with_a_size_one_dim():
    """Regression: the strides of dims whose output size is 1 take part in TensorIterator's dim
    order (insertion sort with ambiguous comparisons); tritonwise once zeroed them."""
    a = torch.arange(2.0).as_strided((2, 1, 1), (1, 2, 2))
    b = torch.arange(2.0).as_strided((1, 2, 1), (1, 1, 1))
    expected = torch.add(a, b)
    got = ADD(a, b)
    assert_equal(got, expected)
    assert got.stride() == expected.stride() == (1, 2, 4)


@settings(SETTINGS, max_examples=SETTINGS.max_examples * 10)
@given(data=st.data())
def test_allocated_strides_match_tensoriterator(data):
    """The analysis alone (pure Python, so many more examples): the strides tritonwise allocates
    outputs with are the ones TensorIterator gives an op over the same operand layouts."""
    shape = data.draw(shapes(), label="shape")
    tensors = []
    for i in range(data.draw(st.integers(1, 3), label="operands")):
        op_shape = data.draw(broadcast_operand_shape(shape), label=f"arg{i} shape")
        layout = data.draw(layouts(op_shape), label=f"arg{i} layout")
        tensors.append(layout.view(torch.zeros(layout.storage_numel(op_shape)), op_shape))
    p = plan([(tuple(t.shape), tuple(t.stride())) for t in tensors])
    allocated = torch.empty_strided(p.shape, p.output_strides[0], device="meta")
    assert_strides_like_torch(allocated, tensors)


# ---------------------------------------------------------------------------------------------
# In place: the output is an input (the same object, or another view of exactly its memory).

AXPY_TTS = function_for(CASES[0], (True, True, False), "default")


@SETTINGS
@given(data=st.data())
def test_in_place_matches_torch(data):
    shape = data.draw(shapes(), label="shape")
    dtype = data.draw(st.sampled_from([d for d in CPU_DTYPES if d != torch.bool]), label="dtype")
    # y and alpha never promote past x's dtype, so the result can be written into x.
    y_dtype = data.draw(st.sampled_from([d for d in CPU_DTYPES if torch.promote_types(dtype, d) == dtype]))
    alpha = data.draw(st.integers(-3, 3) if not dtype.is_floating_point else st.floats(-4, 4, width=16))
    target = data.draw(st.sampled_from([0, 1]), label="in-place operand")
    shapes_ = [shape, data.draw(broadcast_operand_shape(shape))]
    if target == 1:
        shapes_.reverse()
    dtypes_ = [dtype, y_dtype] if target == 0 else [y_dtype, dtype]
    ops = [
        make_operand(s, d, data.draw(layouts(s, allow_expand=(i != target))), data.draw(st.integers(0, 2**31)))
        for i, (s, d) in enumerate(zip(shapes_, dtypes_))
    ]
    x, y = ops[0].tensor, ops[1].tensor
    assume(torch.broadcast_shapes(x.shape, y.shape) == tuple(ops[target].shape))
    ((result, expected),) = expected_outputs(CASES[0], [x.clone(), y.clone(), alpha], tuple(ops[target].shape))
    assume(result == dtype)
    out = ops[target].tensor
    if data.draw(st.booleans(), label="alias view"):
        out = out.as_strided(out.shape, out.stride(), out.storage_offset())
    result = AXPY_TTS(x, y, alpha, out0=out)
    assert result is out
    assert_equal(ops[target].tensor, expected)


# ---------------------------------------------------------------------------------------------
# Negative strides: StridedBuffer + instantiate(rank) against torch.flip.


def flipped_buffer(base: torch.Tensor, shape: tuple, order: tuple, flips: tuple) -> StridedBuffer:
    """A StridedBuffer over contiguous `base` (numel of `shape`), dims stored in `order` (outer
    first), reversed along `flips`: negative strides and an offset."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    offset = sum((shape[d] - 1) * strides[d] for d in flips if shape[d])
    signed = [-s if d in flips else s for d, s in enumerate(strides)]
    return StridedBuffer(base, shape, signed, offset=offset), tuple(strides)


def flipped_view(base: torch.Tensor, shape: tuple, strides: tuple, flips: tuple) -> torch.Tensor:
    """What `flipped_buffer` reads, as a torch tensor."""
    return base.as_strided(shape, strides, 0).flip(flips) if flips else base.as_strided(shape, strides, 0)


@st.composite
def flipped_layouts(draw, shape):
    rank = len(shape)
    order = tuple(draw(st.permutations(range(rank))))
    flips = tuple(d for d in range(rank) if draw(st.booleans()))
    return order, flips


@SETTINGS
@given(data=st.data())
def test_negative_strides_match_flip(data):
    shape = data.draw(shapes(), label="shape")
    rank = len(shape)
    fn = function_for(CASES[0], (True, True, False), data.draw(st.sampled_from(sorted(CONFIGS)), label="config"))
    numel = math.prod(shape)
    buffers, views = [], []
    for i in range(2):
        dtype = data.draw(st.sampled_from(CPU_DTYPES), label=f"arg{i} dtype")
        order, flips = data.draw(flipped_layouts(shape), label=f"arg{i} order, flips")
        base = random_values(numel, dtype, data.draw(st.integers(0, 2**31), label="seed"))
        buf, strides = flipped_buffer(base, shape, order, flips)
        buffers.append(buf)
        views.append(flipped_view(base, shape, strides, flips))
    alpha = data.draw(scalars, label="alpha")
    ((result, value),) = expected_outputs(CASES[0], [*views, alpha], shape)
    order, flips = data.draw(flipped_layouts(shape), label="out order, flips")
    fill = data.draw(st.sampled_from(poison_fills(result)), label="poison")
    out_base = poisoned_like(torch.empty(numel, dtype=result), fill)
    out, out_strides = flipped_buffer(out_base, shape, order, flips)

    got = fn.instantiate(rank)(*buffers, alpha, out0=out)

    assert got is out
    assert_equal(flipped_view(out_base, shape, out_strides, flips), value)


@pytest.mark.parametrize(
    "dtype, alpha",
    [
        (torch.float64, 0.1),
        (torch.float64, 1 / 3),
        (torch.float64, 1e-300),
        (torch.float64, 2**53 - 1),
        (torch.int64, 2**40 + 1),
        (torch.int64, -(2**62) - 3),
        (torch.int32, 2**31 + 5),  # wraps in int32, as torch does
    ],
    ids=str,
)
def test_python_scalars_keep_full_precision(dtype, alpha):
    x = random_values(6, dtype, 1)
    y = torch.tensor([1, -1, 2, 0, 3, -2], dtype=dtype)
    expected = x + y * alpha
    assert_equal(function_for(CASES[0], (True, True, False), "default")(x, y, alpha), expected)


@pytest.mark.xfail(strict=True, reason="Triton's interpreter, which runs CPU tensors in both modes, drops "
                   "the sign of a -0.0 float argument (a plain @triton.jit kernel too): 1 / -0.0 gives inf")
def test_negative_zero_scalar_keeps_its_sign():
    x = torch.tensor([1.0, -2.0, 0.5])
    case = next(c for c in CASES if c.name == "ratio-INT_TO_FLOAT")
    assert_equal(function_for(case, (True, False), "default")(x, -0.0), torch.div(x, -0.0))


# A double just above the midpoint of two fp16 neighbours: rounded once it goes up (109.1875);
# through fp32 first, as torch converts fp64 to fp16, it lands on the midpoint and ties to even
# (109.125).
FP16_DOUBLE_ROUNDING = 109.15625338510324


@pytest.mark.parametrize("where", ["input-converted", "output-stored"])
def test_fp64_to_fp16_rounds_like_torch(where):
    v = FP16_DOUBLE_ROUNDING
    if where == "input-converted":  # NO_OPMATH: a 0-d fp64 tensor beside a sized fp16 one computes in fp16
        cond, x, y = torch.tensor([True, False]), torch.tensor(v, dtype=torch.float64), torch.ones(2, dtype=torch.float16)
        expected = torch.where(cond, x, y)
        got = function_for(CASES[1], (True, True, True), "default")(cond, x, y)
    else:  # an fp64 result stored into a given fp16 output
        x, zero = torch.tensor([v, 1.0], dtype=torch.float64), torch.zeros(2, dtype=torch.float64)
        expected = torch.add(x, zero, out=torch.empty(2, dtype=torch.float16))
        got = ADD(x, zero, out0=poisoned_like(expected))
    assert expected[0].item() == 109.125
    assert_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# 0-d CPU tensors act as scalars (weaker than sized tensors in promotion, as in torch).

@pytest.mark.parametrize(
    "dtype, zero_d, value",
    [
        (torch.float16, torch.float32, 0.1),
        (torch.float16, torch.float64, 3.0),
        (torch.int8, torch.int64, 300),
        (torch.uint8, torch.int32, -5),
        (torch.int32, torch.float64, 2.5),
        (torch.bool, torch.float32, 1.5),
        (torch.bool, torch.int64, 7),
        (torch.float32, torch.float64, 1 / 3),
    ],
    ids=str,
)
@pytest.mark.parametrize("zero_d_first", [False, True])
def test_zero_dim_cpu_tensor_acts_as_a_scalar(dtype, zero_d, value, zero_d_first):
    x = random_values(12, dtype, 0).view(3, 4)
    s = torch.tensor(value, dtype=zero_d)
    args = (s, x) if zero_d_first else (x, s)
    expected = torch.add(*args)
    if zero_d.is_floating_point == dtype.is_floating_point and dtype != torch.bool:
        assert expected.dtype == dtype  # within a category the 0-d tensor does not promote the sized one
    assert_equal(ADD(*args), expected)


# ---------------------------------------------------------------------------------------------
# Index width near 2**31, per scheme, on shape/stride tuples (no big tensors).

CONFIG = CodeGenConfig()


def plan(inputs, outputs=(None,), collapse=True, itemsize=4):
    return analyze(list(inputs), list(outputs), itemsize, CONFIG, collapse)


def largest_offset(p) -> int:
    return max(sum((n - 1) * abs(s) for n, s in zip(p.task_shape, op)) for op in p.strides)


def assert_index_width_is_safe(p):
    """int32 only when every operand's farthest element fits, and so does numel plus one block (a
    flat tile's lane indices run up to that; nd and tile2d rows and columns stay below it)."""
    if p.index_bits == 32:
        assert largest_offset(p) <= INT32_LIMIT
        assert p.numel + math.prod(p.tiling.block) <= INT32_LIMIT


def test_flat_index_width_boundary():
    block = plan([((1024,), (1,))]).tiling.block[0]
    below = plan([((INT32_LIMIT - block,), (1,))])
    above = plan([((INT32_LIMIT - block + 1,), (1,))])
    assert (below.tiling.scheme, below.index_bits) == ("flat", 32)
    assert (above.tiling.scheme, above.index_bits) == ("flat", 64)
    assert_index_width_is_safe(below)


def test_flat_index_width_counts_strides_not_numel():
    """A rank-1 input with stride 2: the farthest element is at 2*(n-1), past int32 at n = 2**30 + 1."""
    n = 2**30
    fits = plan([((n,), (2,))])
    past = plan([((n + 1,), (2,))])
    assert (fits.tiling.scheme, fits.index_bits, largest_offset(fits)) == ("flat", 32, INT32_LIMIT - 1)
    assert (past.tiling.scheme, past.index_bits, largest_offset(past)) == ("flat", 64, INT32_LIMIT + 1)


@pytest.mark.parametrize("sign", [1, -1])
def test_nd_index_width_boundary_on_row_stride(sign):
    """Task (2, 8): the input's row stride S puts its farthest element at S + 7."""
    at = INT32_LIMIT - 7
    fits = plan([((2, 8), (sign * at, 1))], collapse=sign > 0)
    past = plan([((2, 8), (sign * (at + 1), 1))], collapse=sign > 0)
    assert (fits.tiling.scheme, fits.index_bits, largest_offset(fits)) == ("nd", 32, INT32_LIMIT)
    assert (past.tiling.scheme, past.index_bits, largest_offset(past)) == ("nd", 64, INT32_LIMIT + 1)


def test_nd_index_width_counts_a_given_output():
    at = INT32_LIMIT - 7
    fits = plan([((2, 8), (8, 1))], outputs=[((2, 8), (at, 1))])
    past = plan([((2, 8), (8, 1))], outputs=[((2, 8), (at + 1, 1))])
    assert (fits.tiling.scheme, fits.index_bits) == ("nd", 32)
    assert (past.tiling.scheme, past.index_bits) == ("nd", 64)


def test_nd_index_width_boundary_on_numel():
    """Rows of a broadcast row vector: no operand's offset is large, the tile arithmetic is."""
    rows = (INT32_LIMIT // 1024) - 2
    small = plan([((rows, 1024), (1024, 1)), ((1024,), (1,))])
    large = plan([((rows + 3, 1024), (1024, 1)), ((1024,), (1,))])
    assert small.index_bits == 32
    assert large.index_bits == 64
    assert_index_width_is_safe(small)


@pytest.mark.parametrize("sign", [1, -1])
def test_tile2d_index_width_boundary(sign):
    """A transposed input of task (8, 16): strides (1, S), farthest element at 7 + 15*S."""
    s = (INT32_LIMIT - 7) // 15
    assert 7 + 15 * s == INT32_LIMIT
    out = [((8, 16), (16, 1))]  # a given row-major output: the input walks dim 0 fastest
    fits = plan([((8, 16), (1, sign * s))], outputs=out, collapse=sign > 0)
    past = plan([((8, 16), (1, sign * (s + 1)))], outputs=out, collapse=sign > 0)
    assert (fits.tiling.scheme, fits.index_bits, largest_offset(fits)) == ("tile2d", 32, INT32_LIMIT)
    assert (past.tiling.scheme, past.index_bits) == ("tile2d", 64)
    assert largest_offset(past) > INT32_LIMIT


@SETTINGS
@given(
    shape=st.lists(st.integers(1, 2**17), min_size=1, max_size=4).map(tuple),
    strides=st.lists(st.integers(-(2**26), 2**26), min_size=4, max_size=4),
    collapse=st.booleans(),
)
def test_index_width_is_64_whenever_an_offset_passes_int32(shape, strides, collapse):
    strides = tuple(strides[: len(shape)])
    p = plan([(shape, strides)], collapse=collapse)
    assert_index_width_is_safe(p)
    reach = sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    if reach > INT32_LIMIT or math.prod(shape) > INT32_LIMIT:
        assert p.index_bits == 64
