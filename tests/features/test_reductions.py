"""Fused full reductions (`reductions=[...]`) against torch: every kind, dtype class, scheme."""

import pytest
import torch
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic


def _squared_error(reduction, deterministic=False):
    @triton.jit
    def squared_error(x, y):
        d = x - y
        return d * d

    return pointwise_dynamic(
        squared_error, promotion_methods=[(0, 1, "DEFAULT")], reductions=[reduction], deterministic=deterministic
    )


SUM, MAX, MIN = (_squared_error(kind) for kind in ("sum", "max", "min"))
SUM_DET = _squared_error("sum", deterministic=True)
TORCH = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}


@triton.jit
def not_equal(x, y):
    return x != y


count_ne = pointwise_dynamic(not_equal, promotion_methods=[(0, 1, "ALWAYS_BOOL")], reductions=["sum"])


@triton.jit
def abs_diff_twice(x, y, scale):
    d = tl.abs(x - y) * scale
    return d, d


max_and_map = pointwise_dynamic(
    abs_diff_twice,
    is_tensor=[True, True, False],
    promotion_methods=[(0, 1, 2, "DEFAULT"), (0, 1, 2, "DEFAULT")],
    reductions=["max", None],
)


def _float_tolerance(numel: int, dtype: torch.dtype) -> float:
    """Relative error bound of a float sum: grows with the number of terms (documented in README)."""
    eps = torch.finfo(torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype).eps
    return max(numel * eps, torch.finfo(dtype).eps) * 4


LAYOUTS = {
    "flat": lambda dt: (torch.randn(300).to(dt), torch.randn(300).to(dt)),
    "nd": lambda dt: (torch.randn(17, 23).to(dt), torch.randn(23).to(dt)),
    "tile2d": lambda dt: (torch.randn(19, 21).to(dt), torch.randn(21, 19).to(dt).t()),
    "rank0": lambda dt: (torch.tensor(1.5).to(dt), torch.tensor(-0.25).to(dt)),
}


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_float_reductions_match_torch(kind, layout, dtype):
    x, y = LAYOUTS[layout](dtype)
    fn = {"sum": SUM, "max": MAX, "min": MIN}[kind]
    # the payload computes fp16 in fp32 and rounds once, as a fused torch.compile kernel would
    elementwise = ((x.double() - y.double()) ** 2).to(dtype) if dtype == torch.float16 else (x - y) * (x - y)
    got, want = fn(x, y), TORCH[kind](elementwise)
    assert got.shape == () and got.dtype == want.dtype
    rtol = _float_tolerance(x.numel(), dtype) if kind == "sum" else 0
    torch.testing.assert_close(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_integer_reductions_are_exact(dtype, kind):
    x = torch.randint(0, 11, (7, 29), dtype=dtype)
    y = torch.randint(0, 11, (29,), dtype=dtype)
    fn = {"sum": SUM, "max": MAX, "min": MIN}[kind]
    got, want = fn(x, y), TORCH[kind]((x - y) * (x - y))
    assert got.dtype == want.dtype  # integer sums are int64, as in torch
    assert torch.equal(got, want)


def test_bool_result_sum_counts_like_torch():
    a, b = torch.randint(0, 3, (40,)), torch.randint(0, 3, (5, 40))
    got = count_ne(a, b)
    assert got.dtype == torch.int64 and torch.equal(got, (a != b).sum())


def test_int64_sum_beyond_int32_is_exact():
    x = torch.full((64,), 2**40, dtype=torch.int64)
    assert torch.equal(SUM(x, torch.zeros(1, dtype=torch.int64)), ((x * x)).sum())


def test_reduction_beside_an_elementwise_output_with_a_scalar():
    x, y = torch.randn(9, 13), torch.randn(13, 9).t()
    out1 = torch.full((9, 13), float("nan"))
    top, mapped = max_and_map(x, y, 0.5, out1=out1)
    assert mapped is out1
    torch.testing.assert_close(mapped, (x - y).abs() * 0.5)
    torch.testing.assert_close(top, ((x - y).abs() * 0.5).amax())


def test_given_zero_dim_output_is_filled_and_returned():
    x, y = torch.randn(50), torch.randn(50)
    out = torch.full((), float("nan"), dtype=torch.float64)
    got = SUM(x, y, out0=out)
    assert got is out
    expected = ((x - y) ** 2).sum().double()  # the kernel accumulates the fp32 result in fp32
    torch.testing.assert_close(out, expected, rtol=_float_tolerance(50, torch.float32), atol=0)


def test_given_output_must_be_zero_dim():
    with pytest.raises(RuntimeError, match="out0"):
        SUM(torch.randn(4), torch.randn(4), out0=torch.empty(4))


def test_deterministic_sum_is_bit_identical_across_runs():
    x, y = torch.randn(3000), torch.randn(3000)
    first = SUM_DET(x, y)
    for _ in range(2):
        assert torch.equal(SUM_DET(x, y), first)
    torch.testing.assert_close(first, ((x - y) ** 2).sum(), rtol=_float_tolerance(3000, torch.float32), atol=0)
    assert "one partial per program" in open(SUM_DET.explain(x, y).path).read()


def test_empty_task_sum_is_zero_and_max_raises():
    e = torch.randn(0, 3)
    assert torch.equal(SUM(e, e), torch.tensor(0.0))
    with pytest.raises(RuntimeError, match="empty"):
        MAX(e, e)


def test_grid_stride_loop_accumulates_every_tile():
    from tritonwise import CodeGenConfig

    @triton.jit
    def identity(x):
        return x

    total = pointwise_dynamic(
        identity, promotion_methods=[(0, "DEFAULT")], reductions=["sum"], config=CodeGenConfig(max_tile_size=16, max_grid_size=(3, 1, 1))
    )
    x = torch.arange(200, dtype=torch.int32)
    assert torch.equal(total(x), x.sum())


def test_bad_reduction_names_are_rejected():
    with pytest.raises(ValueError, match="reductions"):
        _squared_error("mean")


@pytest.mark.parametrize("fn", [SUM, MAX, MIN, SUM_DET], ids=["sum", "max", "min", "sum-deterministic"])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)], ids=["0d", "size1", "size1x1"])
def test_a_task_collapsed_to_rank_0_compiles_for_the_gpu(fn, shape):
    """Size-1 operands collapse to a rank-0 task; its kernel has no tile to reduce. The CPU
    interpreter accepted `tl.sum` of a 0-d value, the GPU compiler does not: compile for sm_90."""
    from tests.support.sm90_compile import compile_for_sm90

    x, y = torch.randn(shape), torch.randn(shape)
    out = torch.full((), float("nan"))
    got = fn(x, y, out0=out)
    kind = {SUM: "sum", MAX: "max", MIN: "min", SUM_DET: "sum"}[fn]
    assert got is out
    torch.testing.assert_close(got, TORCH[kind]((x - y) ** 2))
    assert fn.explain(x, y).task_shape == ()
    assert "cubin" in compile_for_sm90(fn, x, y).asm


@pytest.mark.parametrize("fn", [SUM, MAX, MIN, SUM_DET], ids=["sum", "max", "min", "sum-deterministic"])
def test_a_flat_task_of_broadcast_operands_counts_every_element(fn):
    """Every operand broadcast: the payload's value is 0-d, and a whole (unmasked) tile must still
    count it once per element, on the CPU and in the kernel compiled for sm_90."""
    from tests.support.sm90_compile import compile_for_sm90

    x, y = torch.tensor(2.0).expand(3000), torch.tensor(0.5).expand(3000)
    kind = {SUM: "sum", MAX: "max", MIN: "min", SUM_DET: "sum"}[fn]
    assert fn.explain(x, y).scheme == "flat"
    out = torch.full((), float("nan"))
    assert fn(x, y, out0=out) is out
    torch.testing.assert_close(out, TORCH[kind]((x - y) ** 2))
    assert "cubin" in compile_for_sm90(fn, x, y).asm


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_instantiated_reductions_take_a_zero_dim_output_at_any_rank(rank):
    x, y = torch.randn((3,) * rank), torch.randn((3,) * rank)
    out = torch.full((), float("nan"))
    got = SUM.instantiate(rank)(x, y, out0=out)
    assert got is out
    torch.testing.assert_close(out, ((x - y) ** 2).sum())
    with pytest.raises(ValueError, match="argument 1"):
        SUM.instantiate(rank)(x, y[None], out0=out)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_rank_0_reductions_on_the_gpu(kind, shape):
    x, y = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
    fn = {"sum": SUM, "max": MAX, "min": MIN}[kind]
    torch.testing.assert_close(fn(x, y), TORCH[kind]((x - y) ** 2))


@triton.jit
def absolute(x):
    return tl.abs(x)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.int16])
def test_narrow_int_reductions_of_abs_match_torch(kind, dtype):
    """abs of the most negative value is itself, as in torch; tiles of 8/16-bit results are
    reduced in float so the GPU never widens a value ptxas thinks it knows (body.py, NARROW_SIGNED)."""
    fn = pointwise_dynamic(absolute, promotion_methods=[(0, "DEFAULT")], reductions=[kind])
    low = torch.iinfo(dtype).min
    x = torch.tensor([low, 5, -7, low + 1], dtype=dtype)
    want = TORCH[kind](torch.abs(x))
    out = torch.full((), 77, dtype=want.dtype)
    assert fn(x, out0=out) is out and torch.equal(out, want)
    assert ".to(tl.float" in open(fn.explain(x).path).read()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_int16_abs_reductions_on_the_gpu(kind):
    fn = pointwise_dynamic(absolute, promotion_methods=[(0, "DEFAULT")], reductions=[kind])
    x = torch.tensor([-32768, 5, -7], dtype=torch.int16, device="cuda")
    assert torch.equal(fn(x), TORCH[kind](torch.abs(x)))
    y = torch.randint(-32768, 32767, (5000,), dtype=torch.int16, device="cuda")
    y[::97] = -32768
    assert torch.equal(fn(y), TORCH[kind](torch.abs(y)))
