"""Reductions along dims (`reductions=[(kind, dims, keepdim)]`) against torch: ranks 1-4, every
dim set, keepdim, permuted and broadcast inputs, given (poisoned, strided) outputs, both row
schemes (row_persistent: the reduced extent fits a block; row_looped: it does not)."""

import math
from pathlib import Path

import pytest
import torch
import triton
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.analysis import plan as plan_rules
from tritonwise.analysis import tiling

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
TORCH = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}
DTYPES = (torch.float32, torch.float16, torch.int32)


@triton.jit
def product(x, y):
    return x * y


@triton.jit
def products(x, y):
    return x * y, x * y


def _function(kind, dims, keepdim=None, deterministic=False):
    entry = (kind, dims) if keepdim is None else (kind, dims, keepdim)
    return pointwise_dynamic(
        product, promotion_methods=[(0, 1, "DEFAULT")], reductions=[entry], deterministic=deterministic
    )


def _expected(kind, x, y, dims, keepdim):
    """torch: the elementwise product in its result dtype, reduced (16-bit floats summed in fp32)."""
    value = x * y
    if kind == "sum" and value.dtype in (torch.float16, torch.bfloat16):
        return value.float().sum(dims, keepdim=keepdim).to(value.dtype)
    return TORCH[kind](value, dims, keepdim=keepdim)


def _check(got, kind, x, y, dims, keepdim=False):
    """`got` is torch's reduction of x * y over `dims` (a tuple; () for all): its dtype and shape,
    bit for bit where exact (integers, max, min), and a float sum within _sum_bound of the
    exact (fp64) sum of the products."""
    dims = dims or tuple(range((x * y).dim()))
    expected = _expected(kind, x, y, dims, keepdim)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if kind != "sum" or not got.dtype.is_floating_point:
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        return
    overflow = ~expected.isfinite()  # a 16-bit sum beyond the dtype's range: torch's inf
    assert torch.equal(got[overflow], expected[overflow])
    values = (x * y).double()
    exact = values.sum(dims, keepdim=keepdim)
    error, bound = (got.double() - exact).abs(), _sum_bound(values, dims, keepdim, exact, got.dtype)
    wrong = ~(error <= bound) & ~overflow  # NaN (an element left poisoned) is wrong too
    worst = torch.where(wrong, error / bound, 0).nan_to_num(nan=math.inf).argmax()
    assert not wrong.any(), (
        f"sum off by {error.flatten()[worst]:.6g} from the exact {exact.flatten()[worst]:.6g} "
        f"(got {got.flatten()[worst]:.6g}); at most {bound.flatten()[worst]:.6g} is rounding"
    )


def _sum_bound(values, dims, keepdim, exact, dtype):
    """How far a sum of `values` accumulated in fp32 in any order, then rounded to `dtype`, can
    be from their exact sum: each of the n additions rounds by at most eps32/2 of the running
    magnitude (at most n * eps32/2 * sum|v| in all), the result by eps/2 of its dtype; twice
    each. For the like-signed products below (x * x) it is a small fraction of one slice of a
    split's reduced extent, so a partial lost in combining cannot hide in it."""
    n = math.prod(values.shape[d] for d in dims)
    magnitude = values.abs().sum(dims, keepdim=keepdim)
    eps32, out = torch.finfo(torch.float32), torch.finfo(dtype)
    return n * eps32.eps * magnitude + out.eps * exact.abs() + out.tiny


def _operand(draw, shape, dtype):
    """A tensor of `shape`, maybe laid out permuted (its storage in another dim order)."""
    values = torch.randint(-5, 6, shape) if dtype == torch.int32 else torch.randn(shape) * 2
    order = draw(st.permutations(range(len(shape))))
    stored = values.permute(tuple(order)).contiguous().to(dtype)
    return stored.permute(tuple(order.index(d) for d in range(len(shape))))


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.sampled_from((1, 2, 3, 5, 8, 17))) for _ in range(rank))
    dtype = draw(st.sampled_from(DTYPES))
    x = _operand(draw, shape, dtype)
    y_shape = tuple(1 if draw(st.booleans()) else n for n in shape[draw(st.integers(0, rank)) :])
    y = _operand(draw, y_shape, dtype)
    dims = draw(st.sets(st.integers(0, rank - 1), min_size=1))
    dims = tuple(d - rank if draw(st.booleans()) else d for d in sorted(dims))
    entry_dims = dims[0] if len(dims) == 1 and draw(st.booleans()) else dims
    return x, y, entry_dims, draw(st.sampled_from((None, False, True))), draw(st.sampled_from(("sum", "max", "min")))


@SETTINGS
@given(case=cases(), give_output=st.booleans())
def test_along_dims_against_torch(case, give_output):
    x, y, dims, keepdim, kind = case
    dims_tuple = dims if isinstance(dims, tuple) else (dims,)
    expected = _expected(kind, x, y, dims_tuple or tuple(range((x * y).dim())), bool(keepdim))
    fn = _function(kind, dims, keepdim)
    if give_output:
        out = poisoned_like(torch.empty(expected.shape[::-1], dtype=expected.dtype)).permute(
            tuple(range(expected.dim() - 1, -1, -1))
        )
        got = fn(x, y, out0=out)
        assert got is out
    else:
        got = fn(x, y)
    _check(got, kind, x, y, dims_tuple, bool(keepdim))


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dims", [-1, 0])
def test_row_looped_long_rows(kind, dims):
    """A reduced extent beyond one block (1500 > 1024) loops; dim 0 of a row-major matrix takes
    column_looped's tall tiles (its kept dim is the contiguous one)."""
    x, y = torch.randn(3, 1500) if dims == -1 else torch.randn(1500, 3), torch.randn(3 if dims == 0 else 1500)
    fn = _function(kind, dims)
    assert fn.explain(x, y).scheme == ("row_looped" if dims == -1 else "column_looped")
    _check(fn(x, y), kind, x, y, (dims,))


@pytest.mark.parametrize(
    "rows, cols, block",
    [(40, 4100, (1, 2048)), (257, 4100, (2, 1024)), (40, 65600, (1, 8192)), (129, 65600, (1, 2048))],
)
def test_few_long_rows_take_one_row_a_program(rows, cols, block):
    """At most 256 rows of at least 4096 reduced elements take one row of 2048 per program, and
    at most 128 of at least 65536 one row of 8192, the block whose column loop is pipelined; more
    rows keep two rows of 1024. (None of these splits: split_parts cuts fewer rows or longer ones;
    two inputs vary along the rows, so none is read rotated.)"""
    x, y = torch.randn(rows, cols), torch.randn(cols)
    fn = _function("sum", -1)
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.block, plan.split_parts) == ("row_looped", block, 1)
    _check(fn(x, y), "sum", x, y, (-1,))


@pytest.mark.parametrize("shape", [(4, 301, 320), (2, 301, 600)], ids=["runs of 320", "runs of 600"])
def test_rows_reduced_over_two_dims_take_taller_tiles(shape):
    """A reduced extent of two dims divides each column index by a runtime extent; the tile then
    takes four rows of 512 on 4 warps, which share that division, whether the innermost reduced
    dim is narrower than 512 or wider. One dim of as many columns (1280, 1200) takes four rows of
    512 on 8 warps (SPARSE_ROWS_BLOCK), and of 1800, two rows of 1024."""
    fn = _function("sum", (0, 2))
    x, y = torch.randn(shape), torch.randn(301, 1)  # the last tile's one row clamps three more
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.block, plan.num_warps, plan.split_parts) == ("row_looped", (4, 512), 4, 1)
    out = poisoned_like(torch.empty(301))
    assert fn(x, y, out0=out) is out
    _check(out, "sum", x, y, (0, 2))
    x = torch.randn(300, shape[0] * shape[2])
    one_dim = _function("sum", -1).explain(x, x)
    assert (one_dim.block, one_dim.num_warps) == ((4, 512), 8)
    x = torch.randn(300, 1800)
    assert _function("sum", -1).explain(x, x).block == (2, 1024)


@pytest.mark.parametrize(
    "cols, block",
    [
        (1025, (2, 1024)),  # its rest of 1 in a block of 128: 1152 lanes against 1088
        (1100, (2, 1024)),
        (1153, (4, 512)),  # 2048 lanes against 1536
        (1324, (4, 512)),
        (1536, (4, 512)),
        (1600, (4, 512)),  # 1536 and a rest of 64: 1600 against 2048
        (1601, (2, 1024)),
        (1800, (2, 1024)),
        (2300, (2, 1024)),  # 2560 against 3072: more than 4/5
        (8000, (2, 1024)),
    ],
)
def test_many_rows_of_one_dim_take_the_block_reading_fewer_lanes(cols, block):
    """Many rows (no few-row or long-row rule applies) of one reduced dim take two rows of 1024,
    or four of 512 on 8 warps where those read at most 4/5 of the columns the first would, whole
    blocks and the last columns' block counted (RowLooped.lanes); every result torch's."""
    x, y = torch.randn(301, cols), torch.randn(301, 1)  # 301: the last block's rows clamp
    fn = _function("sum", -1)
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.block, plan.num_warps) == ("row_looped", block, 8)
    out = poisoned_like(torch.empty(301))
    assert fn(x, y, out0=out) is out
    _check(out, "sum", x, y, (-1,))


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize(
    "shape, dims", [((4, 6, 9, 5, 40), (0, 2, 4)), ((4, 3, 3, 2, 3, 2, 40), (0, 2, 4, 6))], ids=["three", "four"]
)
def test_rows_reduced_over_dims_between_kept_ones(kind, shape, dims, bits, monkeypatch):
    """Reduced dims that do not collapse: each column index is split once a dim past the first
    (nd.decompose, a quotient per level, unsigned of the index width), in the column loop and in
    its partial last block. int64 indices are forced by lowering the int32 limit below these sizes."""
    if bits == 64:
        monkeypatch.setattr(tiling, "INT32_LIMIT", 5000)
    x = torch.randn(shape)
    y = torch.randn(shape[dims[1] - 1 :])
    fn = _function(kind, dims)
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.split_parts, plan.index_bits) == ("row_looped", 1, bits)
    assert math.prod(shape[d] for d in dims) % plan.block[1]  # a partial last block
    kept = tuple(n for d, n in enumerate(shape) if d not in dims)
    out = poisoned_like(torch.empty(kept))
    assert fn(x, y, out0=out) is out
    _check(out, kind, x, y, dims)


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_rows_of_whole_blocks_only(kind):
    """Reduced extents a multiple of the block: the column loop alone, no partial last block."""
    x = torch.randint(-50, 50, (3, 2048), dtype=torch.int32)
    fn = _function(kind, -1)
    assert fn.explain(x, x).block == (2, 1024)
    out = poisoned_like(torch.empty(3, dtype=torch.int64 if kind == "sum" else torch.int32))  # torch's sum widens
    assert fn(x, x, out0=out) is out
    _check(out, kind, x, x, (-1,))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize(
    "shape, dims, scheme",
    [((40, 24), -1, "row_persistent"), ((9, 3000), -1, "row_looped"), ((3000, 100), 0, "column_looped")],
)
def test_a_capped_grid_strides_over_every_tile(device, shape, dims, scheme):
    """max_grid_size below the tile count: GRID_STRIDE set, each of 3 programs loops over tiles
    (templates/tile_loop.py.j2); every row reduced, none left poisoned."""
    from tritonwise import CodeGenConfig

    config = CodeGenConfig(max_tile_size=256, max_grid_size=(3,))
    fn = pointwise_dynamic(product, promotion_methods=[(0, 1, "DEFAULT")], reductions=[("sum", dims)], config=config)
    x = torch.randn(shape, device=device)
    plan = fn.explain(x, x)
    assert plan.scheme == scheme and plan.grid == (3,) and plan.num_tiles > 3
    assert f"each striding over the {plan.num_tiles} tiles" in str(plan)
    out = poisoned_like(torch.empty(shape[1 - dims] if dims == 0 else shape[0], device=device))
    assert fn(x, x, out0=out) is out
    _check(out, "sum", x, x, (dims,))


@triton.jit
def tile_step(x, y):  # the name of a kernel local in templates/tile_loop.py.j2
    return x * y


@triton.jit
def GRID_STRIDE(x, y):  # noqa: N802 (the name of a kernel parameter)
    return x * y


@triton.jit
def REST_BLOCK(x, y):  # noqa: N802 (row_looped's constexprs and a local of its last block)
    return x * y


@triton.jit
def WHOLE_BLOCKS(x, y):  # noqa: N802
    return x * y


@triton.jit
def last0(x, y):
    return x * y


PAYLOADS = {p.fn.__name__: p for p in (tile_step, GRID_STRIDE, REST_BLOCK, WHOLE_BLOCKS, last0)}


@pytest.mark.parametrize("name", list(PAYLOADS))
@pytest.mark.parametrize("grid", [(65535,), (3,)], ids=["uncapped", "capped"])
def test_a_payload_named_as_a_kernel_local_is_renamed(name, grid):
    """Rows of 24 (row_persistent) and of 528, whose last 16 columns take a narrow block (row_looped)."""
    from tritonwise import CodeGenConfig

    config = CodeGenConfig(max_tile_size=256, max_grid_size=grid)
    fn = pointwise_dynamic(PAYLOADS[name], promotion_methods=[(0, 1, "DEFAULT")], reductions=[("sum", -1)], config=config)
    for x in (torch.randn(40, 24), torch.randn(40, 528)):
        _check(fn(x, x), "sum", x, x, (-1,))
    assert fn.explain(x, x).scheme == "row_looped" and fn.explain(x, x).rest_block < fn.explain(x, x).block[1]


def test_persistent_scheme_and_results_per_row():
    x = torch.randn(40, 17)
    fn = _function("sum", 1)
    assert fn.explain(x, x).scheme == "row_persistent"
    _check(fn(x, x), "sum", x, x, (1,))


def test_integer_sum_is_int64_and_full_dims_give_0d():
    x = torch.randint(-3, 4, (4, 6), dtype=torch.int32)
    got = _function("sum", (0, 1))(x, x)
    assert got.dtype == torch.int64 and got.shape == () and got.item() == (x.long() * x).sum().item()
    torch.testing.assert_close(_function("sum", (), True)(x, x), (x.long() * x).sum((0, 1), keepdim=True))


def test_deterministic_is_bit_reproducible():
    x = torch.randn(64, 2000)
    fn = _function("sum", -1, deterministic=True)
    got = fn(x, x)
    assert torch.equal(got, fn(x, x))
    _check(got, "sum", x, x, (-1,))


def test_empty_extents():
    x = torch.randn(4, 0)
    torch.testing.assert_close(_function("sum", 1)(x, x), torch.zeros(4))
    assert _function("sum", 0)(x, x).shape == (0,)
    with pytest.raises(IndexError, match="dim 1, an empty extent"):
        _function("max", 1)(x, x)
    sum_then_max = pointwise_dynamic(
        products, promotion_methods=[(0, 1, "DEFAULT")] * 2, reductions=[("sum", 1), ("max", 1)]
    )
    with pytest.raises(IndexError, match="max along dim 1"):
        sum_then_max(x, x)


@pytest.mark.parametrize("shape, dim", [((4, 0), 1), ((0, 0), 1), ((0, 3), 0), ((0, 3), 1), ((2, 0, 0), -2)])
def test_max_along_dims_of_empty_extents_as_torch(shape, dim):
    """torch refuses a max along an empty extent whether or not the result is empty too."""
    x = torch.randn(shape)
    try:
        want = torch.amax(x * x, dim)
    except IndexError:
        with pytest.raises(IndexError, match="an empty extent"):
            _function("max", dim)(x, x)
    else:
        torch.testing.assert_close(_function("max", dim)(x, x), want)


def test_given_output_of_wider_dtype_gets_the_rounded_result():
    x = torch.randn(3, 50).half()
    out = torch.full((3,), float("nan"), dtype=torch.float32)
    _function("sum", 1)(x, x, out0=out)
    torch.testing.assert_close(out, (x * x).float().sum(1).half().float(), rtol=0, atol=0)


@pytest.mark.parametrize(
    "entry, message",
    [
        (("mean", 0), "kind"),
        (("sum", 0.5), "dims must be"),
        (("sum", 0, 1), "keepdim must be a bool"),
        (("sum", 0, False, 3), "kind"),
    ],
)
def test_bad_entries_name_the_argument(entry, message):
    with pytest.raises(ValueError, match=message):
        pointwise_dynamic(product, promotion_methods=[(0, 1, "DEFAULT")], reductions=[entry])


def test_dim_out_of_range_and_repeated():
    x = torch.randn(2, 3)
    with pytest.raises(IndexError, match="dim 2 is out of range"):
        _function("sum", 2)(x, x)
    with pytest.raises(RuntimeError, match="more than once"):
        _function("sum", (1, -1))(x, x)


def test_wrong_given_shape_is_named():
    x = torch.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"out0 has shape \(3,\), but the result has shape \(2,\)"):
        _function("sum", 1)(x, x, out0=torch.empty(3))


def test_autograd_instantiate_and_torch_op_are_refused_for_now():
    x = torch.randn(2, 3, requires_grad=True)
    fn = _function("sum", 1)
    with pytest.raises(NotImplementedError, match="autograd"):
        fn(x, x)
    with pytest.raises(NotImplementedError, match="instantiate"):
        fn.instantiate(2)
    with pytest.raises(NotImplementedError, match="as_torch_op"):
        fn.as_torch_op("tritonwise_test::axis_sum")


@triton.jit
def twice(x):
    return x, x


@pytest.mark.parametrize("entries", [[("sum", 0), None], [("sum", 0), "sum"], [("sum", 0), ("max", 1)]])
def test_mixed_entries_are_refused(entries):
    with pytest.raises(ValueError, match="same dims"):
        pointwise_dynamic(twice, promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")], reductions=entries)


def test_two_outputs_along_the_same_dims():
    methods = [(0, "DEFAULT"), (0, "DEFAULT")]
    fn = pointwise_dynamic(twice, promotion_methods=methods, reductions=[("max", 0), ("min", 0)])
    x = torch.randn(5, 3)
    hi, lo = fn(x)
    assert torch.equal(hi, x.amax(0)) and torch.equal(lo, x.amin(0))


def test_output_meta_has_the_reduced_shape():
    ((shape, strides, dtype),) = _function("max", (0, 2), True).output_meta(torch.randn(2, 3, 4), torch.randn(4))
    assert shape == (1, 3, 1) and dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, kind, dims, dtype",
    [
        ((8192, 8192), "sum", -1, torch.float32),
        ((8192, 8192), "max", 0, torch.float32),
        ((16384, 128), "sum", -1, torch.bfloat16),
        ((128, 16384), "sum", -1, torch.bfloat16),
        ((64, 4096, 64), "sum", (0, 2), torch.float32),
    ],
)
def test_gpu_along_dims_against_torch(shape, kind, dims, dtype):
    """The issue's benchmark shapes, checked on the GPU (compiled, not interpreted)."""
    x = torch.randn(shape, device="cuda").to(dtype)
    fn = _function(kind, dims, deterministic=True)
    got = fn(x, x)
    _check(got, kind, x, x, dims if isinstance(dims, tuple) else (dims,))
    assert torch.equal(got, fn(x, x))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "rows, cols, kind, dtype, block",
    [
        (200, 5000, "max", torch.float16, (1, 2048)),
        (256, 4099, "min", torch.int32, (1, 2048)),
        (40, 12345, "sum", torch.float32, (1, 2048)),
        (100, 65537, "sum", torch.bfloat16, (1, 8192)),
        (128, 65552, "max", torch.int32, (1, 8192)),
    ],
)
def test_gpu_few_long_rows_one_row_a_program(rows, cols, kind, dtype, block):
    """Few long rows' blocks compiled, the pipelined (1, 8192) among them: whole blocks, masked
    tails, integers, a poisoned given output."""
    make = (lambda *s: torch.randint(-50, 50, s, device="cuda", dtype=dtype)) if dtype == torch.int32 else None
    make = make or (lambda *s: torch.randn(s, device="cuda").to(dtype))
    x, y = make(rows, cols), make(cols)
    fn = _function(kind, -1)
    assert fn.explain(x, y).block == block
    out = poisoned_like(torch.empty(rows, device="cuda", dtype=dtype))
    assert fn(x, y, out0=out) is out
    _check(out, kind, x, y, (-1,))


def test_one_function_over_new_shapes_and_ranks():
    """Plans and kernels kept per class (function.py's memos) serve new shapes of a known class."""
    fn = _function("sum", -1, True)
    for shape in [(4, 7), (9, 7), (9, 13), (4, 1500), (6, 1500), (5, 3, 7), (2, 5, 3, 7)]:
        x = torch.randn(shape)
        out = poisoned_like(torch.empty(shape[:-1] + (1,)))
        assert fn(x, x, out0=out) is out
        _check(out, "sum", x, x, (-1,), True)
        _check(fn(x, x), "sum", x, x, (-1,), True)


SPLIT_LAYOUTS = {
    "row-major": lambda n: torch.randn(3, n),
    "transposed": lambda n: torch.randn(n, 3).t(),
    "rank 3, middle kept": lambda n: torch.randn(4, 2, n // 4).transpose(0, 1),
    "one row": lambda n: torch.randn(1, n),  # the row part's stride is a filler (plan._collapsed_group)
}


@pytest.fixture
def short_splits(monkeypatch):
    """Few rows split from a reduced extent of 4096 (the rule waits for 2**16), and columns
    whatever a tile's program reads, so that the split's mechanics run on small CPU tensors."""
    from tritonwise.analysis import plan

    monkeypatch.setattr(plan, "SPLIT_MIN_COLS_FEW", 4096)
    monkeypatch.setattr(plan, "COLUMN_UNSPLIT_ELEMENTS", 0)


@pytest.mark.parametrize("layout", list(SPLIT_LAYOUTS))
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_few_long_rows_split_the_reduced_extent(layout, kind, dtype, short_splits):
    """Few kept rows (here 1-3) and a long reduced extent: the kernel writes partial values
    over slices of the reduced extent, which a reduction along dim 0 combines; torch's results
    and dtypes, poisoned given outputs, and a keepdim output of another layout."""
    x = SPLIT_LAYOUTS[layout](4096).to(dtype)
    dims = tuple(range(1, x.dim()))
    fn = _function(kind, dims, keepdim=False, deterministic=True)
    plan = fn.explain(x, x)
    assert plan.split_parts > 1 and "split: the reduced extent" in str(plan)
    _check(fn(x, x), kind, x, x, dims)
    out = poisoned_like(torch.empty(2 * x.shape[0], dtype=dtype))[::2]
    assert fn(x, x, out0=out) is out
    _check(out, kind, x, x, dims)
    assert torch.equal(fn(x, x), fn(x, x))
    keep = _function(kind, dims, keepdim=True)
    _check(keep(x, x), kind, x, x, dims, True)


@pytest.mark.parametrize("layout", [(1, 64, 4), (48, 16, 1)], ids=["parts innermost", "parts outermost"])  # any layout
@pytest.mark.parametrize(
    "result, out_dtype, way",
    [
        (torch.float32, torch.float32, "own"),
        (torch.bfloat16, torch.bfloat16, "own"),  # rounded once, as the kernel stores
        (torch.float64, torch.float64, "own"),
        (torch.float32, torch.bfloat16, "own"),  # nothing to round before the conversion
        (torch.float16, torch.float32, "torch"),  # rounded to the result first, then widened
    ],
)
def test_a_split_combines_its_partials_rounded_once_to_the_result(result, out_dtype, way, layout, monkeypatch):
    """SplitLaunch.combine: tritonwise's own reduction along dim 0 (one kernel; torch's `sum` into
    a bf16 `out` would round each partial before adding), unless a result narrower than the
    partials goes into an output of another dtype: torch's sum, rounded to the result, then
    copied. Either way the output holds the partials' sum rounded to the result dtype, then
    converted. The partials are integers whose fp32 sums are exact, so the order of addition does
    not matter; the analysis lays partials out parts innermost, and the combine takes any layout."""
    from tritonwise.runtime import dispatch
    from tritonwise.runtime.dispatch import SplitLaunch

    taken = []
    own, torch_sum = dispatch._combine_partials, dispatch._COMBINE["sum"]
    monkeypatch.setattr(dispatch, "_combine_partials", lambda *a: taken.append("own") or own(*a))
    monkeypatch.setitem(dispatch._COMBINE, "sum", lambda *a, **k: taken.append("torch") or torch_sum(*a, **k))
    acc = torch.float64 if result == torch.float64 else torch.float32
    split = SplitLaunch(4, (3, 16), ((32, 2),), layout, ("sum",), (acc,), (result,))
    values = (torch.randn(4, 3, 16, generator=torch.Generator().manual_seed(0)) * 3000).round().to(acc)
    partials = split.buffers("cpu")[0].copy_(values)
    out = poisoned_like(torch.empty(3, 32, dtype=out_dtype))
    split.combine([partials], [out])
    assert taken == [way]
    assert torch.equal(out[:, ::2], values.double().sum(0).to(result).to(out_dtype))
    assert out[:, 1::2].isnan().all()  # nothing written between the rows


@pytest.mark.parametrize(
    "shape, dim", [((2**24,), 0), ((2**20, 16), 0), ((2**19, 1024), 0), ((4, 2**21), 1)], ids=str
)
def test_the_combine_of_a_split_does_not_split_in_turn(shape, dim):
    """The most partials the rule makes, a vector's, rows' and columns': their combine, a
    reduction along dims itself, reads them in one pass."""
    from tritonwise.features import own_ops

    x = torch.empty(shape, device="meta")
    split = _function("sum", dim).plan((x, x), (None,), collapse=True).split
    assert split is not None and split.parts > 1
    partials = split.buffers("meta")[0]
    assert own_ops._kernel("sum").explain(partials).split_parts == 1


def test_a_split_writes_into_a_strided_buffer_output():
    """A given output that is a StridedBuffer (a view torch cannot express): the combine writes
    its rows through the same kind of view."""
    from tritonwise import StridedBuffer

    x = torch.randn(2, 4096)
    fn = _function("sum", 1)
    with pytest.MonkeyPatch.context() as patch:
        from tritonwise.analysis import plan

        patch.setattr(plan, "SPLIT_MIN_COLS_FEW", 4096)
        assert fn.explain(x, x).split_parts > 1
        storage = poisoned_like(torch.empty(9))
        base = storage[1:]  # a storage offset of 1
        out = StridedBuffer(base, (2,), (-3,), offset=4)  # elements 5 and 2 of the storage, in that order
        fn(x, x, out0=out)
        _check(storage[[5, 2]], "sum", x, x, (1,))
        assert storage[[0, 1, 3, 4, 6, 7, 8]].isnan().all()
        halves = torch.zeros(4)[1:]  # bf16 values over fp32 storage, 2 bf16 elements of storage offset
        view = StridedBuffer(halves, (2,), (-1,), dtype=torch.bfloat16, offset=3)  # bf16 elements 4 and 3
        fn(x.bfloat16(), x.bfloat16(), out0=view)
        _check(view.values(), "sum", x.bfloat16(), x.bfloat16(), (1,))


def test_a_split_refuses_an_output_partly_overlapping_its_input(short_splits):
    """As an unsplit call does (docs/api.md): a split writes its output after reading, but the
    rule is the same whatever the plan."""
    storage = torch.randn(2 * 4096 + 1)
    x = storage[: 2 * 4096].view(2, 4096)
    fn = _function("sum", 1)
    assert fn.explain(x, x).split_parts > 1
    with pytest.raises(RuntimeError, match="partially overlaps input 0"):
        fn(x, x, out0=storage[4095:4097])


@pytest.mark.parametrize("rows", [3, 300], ids=["split", "unsplit"])
def test_a_wider_given_output_receives_the_result_rounded_to_its_dtype(rows, short_splits):
    """A float16 sum given a float32 output: split or not, the output holds the float16 result
    converted (what the kernel stores), not the wider accumulator."""
    x = torch.randn(rows, 4096).half()
    fn = _function("sum", (1,))
    assert (fn.explain(x, x).split_parts > 1) == (rows == 3)
    out = poisoned_like(torch.empty(rows))
    assert fn(x, x, out0=out) is out
    assert torch.equal(out, out.half().float())
    _check(out.half(), "sum", x, x, (1,))


def test_integer_and_many_row_reductions_do_not_split():
    ints = torch.randint(-3, 4, (3, 4096), dtype=torch.int32)
    assert _function("sum", -1).explain(ints, ints).split_parts == 1
    many = torch.randn(300, 4096, device="meta")
    assert _function("sum", -1).explain(many, many).split_parts == 1
    few = torch.randn(3, 1000)  # reduced extent too short to cut
    assert _function("sum", -1).explain(few, few).split_parts == 1


@pytest.mark.parametrize(
    "shape, dtype, splits",
    [
        ((8, 2**16), torch.float32, True),  # few rows: split from a reduced extent of 2**16
        ((31, 2**16), torch.float32, True),
        ((8, 2**15), torch.float32, False),  # shorter: one program a row reads it sooner than two kernels
        ((1, 2**15), torch.float32, False),
        ((1, 2**16), torch.float32, True),
        ((32, 2**16), torch.float32, False),  # from 32 rows, rows shorter than 2**17 read as fast unsplit
        ((32, 2**17), torch.float32, True),  # a column of 32 floats is 128 bytes: split from 2**17
        ((64, 2**17), torch.bfloat16, True),  # as is one of 64 bf16 elements
        ((64, 2**16), torch.bfloat16, False),
        ((33, 2**17), torch.float32, False),  # wider columns split from 2**19
        ((32, 2**17), torch.float64, False),
        ((64, 2**18), torch.float32, False),
        ((32, 2**19), torch.float64, True),
        ((64, 2**20), torch.float32, True),
        ((65, 2**20), torch.bfloat16, False),  # more than 64 rows: the unsplit loop keeps up
    ],
)
def test_the_split_rule_follows_the_rows_their_length_and_their_bytes(shape, dtype, splits):
    x = torch.empty(shape, device="meta", dtype=dtype)
    assert (_function("sum", -1).explain(x, x).split_parts > 1) == splits


@pytest.mark.parametrize(
    "shape, dtype, parts",
    [
        ((1, 2**24), torch.float32, 512),  # one row: SPLIT_TARGET_ROWS (512) parts
        ((8, 2**22), torch.float32, 64),  # 512 (row, part) pairs
        ((32, 2**18), torch.float32, 16),
        ((64, 2**17), torch.bfloat16, 16),  # 8 parts make 512 pairs: at least SPLIT_LEAST_ROW_PARTS
        ((48, 2**20), torch.float32, 16),
        ((1, 2**16), torch.float32, 64),  # parts of MIN_PART_EXTENT (1024) at most
        ((8, 2**16), torch.bfloat16, 64),
    ],
)
def test_rows_split_into_512_row_part_pairs_and_16_parts_at_least(shape, dtype, parts):
    """A row layout's split aims at SPLIT_TARGET_ROWS (row, part) pairs, in no fewer than
    SPLIT_LEAST_ROW_PARTS parts, each part at least MIN_PART_EXTENT long (a column layout aims
    at SPLIT_TARGET_TILES (tile, part) pairs: test_columns_split_by_the_tiles_of_kept_elements_they_make)."""
    x = torch.empty(shape, device="meta", dtype=dtype)
    assert _function("sum", -1).explain(x, x).split_parts == parts


@pytest.mark.parametrize("run, block_m", [(2, 2), (3, 4), (5, 8), (8, 8), (12, 16)])
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_a_column_reduction_of_a_short_run_takes_a_tile_no_wider_than_it(run, block_m, kind):
    """column_looped: kept runs shorter than 16 elements take the narrowest tile that covers
    them (wider ones mask lanes off); torch's results on a poisoned output."""
    x = torch.randn(96, run)
    fn = _function(kind, 0)
    assert fn.explain(x, x).block[0] == block_m
    out = poisoned_like(torch.empty(run))
    assert fn(x, x, out0=out) is out
    _check(out, kind, x, x, (0,))


@pytest.mark.parametrize(
    "shape, dtype, block_m",
    [
        ((1024, 16384), torch.bfloat16, 64),  # 128 wide: 128 programs, fewer than 192: halved
        ((1024, 16384), torch.float16, 64),
        ((1024, 16384), torch.float32, 128),  # 4-byte elements keep it
        ((1024, 16384), torch.int8, 128),  # and 1-byte ones
        ((16, 16384), torch.bfloat16, 128),  # 128 programs, but the tile covers the 16 reduced rows
        ((1024, 20480), torch.bfloat16, 64),  # 160 programs
        ((2048, 24576), torch.bfloat16, 128),  # 192 programs
        ((1024, 32768), torch.bfloat16, 128),  # 256 programs
        ((8192, 8192), torch.bfloat16, 64),  # 64 wide by MIN_PROGRAMS already: no narrower
        ((64, 4096), torch.bfloat16, 128),  # 32 programs: the tile covers the 64 reduced rows
        ((16384, 1024), torch.bfloat16, 64),  # split in 16 parts: 16 x 8 programs, halved
        ((32768, 1024), torch.bfloat16, 128),  # 32 parts: 256 programs
    ],
)
def test_column_tiles_of_two_byte_elements_halve_below_192_programs(shape, dtype, block_m):
    """column_looped takes the widest tile (128 kept elements) that makes MIN_PROGRAMS (128)
    programs; of 2-byte elements, one that makes fewer than TWO_BYTE_MIN_PROGRAMS (192) halves to
    64 wide (still whole 128-byte lines)."""
    x = torch.empty(shape, device="meta", dtype=dtype)
    assert _function("sum", 0).explain(x, x).block[0] == block_m


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_a_halved_two_byte_column_tile_gives_torchs_answer(kind):
    """The 64-wide tile 2-byte columns of 128 to 191 programs take, on a poisoned output."""
    x, y = torch.randn(65, 16384).to(torch.bfloat16), torch.randn(65, 16384).to(torch.bfloat16)  # 65 > 64 rows a tile
    fn = _function(kind, 0)
    assert fn.explain(x, y).block[0] == 64
    out = poisoned_like(torch.empty(16384, dtype=torch.bfloat16))
    assert fn(x, y, out0=out) is out
    _check(out, kind, x, y, (0,))


@pytest.mark.parametrize(
    "shape, parts",
    [
        ((2048, 8), 1),  # one tile of kept elements, whose program reads 2**14 of them: unsplit
        ((4096, 8), 4),  # more: any extent two parts can take
        ((2**15, 8), 32),
        ((8192, 2), 1),
        ((16384, 2), 16),
        ((2048, 15), 2),  # a run shorter than 16: any number of parts
        ((2048, 16), 1),  # 16 or longer: MIN_COLUMN_PARTS (8) parts or none
        ((4096, 16), 1),  # 4 parts
        ((8192, 16), 8),
        ((16384, 16), 16),
        ((32768, 32), 32),  # two tiles of 16
        ((16384, 128), 16),  # eight
        ((2**18, 256), 128),  # sixteen: SPLIT_TARGET_TILES (2048) (tile, part) pairs
        ((8192, 128), 8),
        ((2**16, 1024), 32),  # 64 tiles: from 2**14 reduced elements and 256 a tile (16384)
        ((2**17, 512), 64),  # 32 tiles of 16 floats
        ((16384, 512), 16),  # from 2**14 reduced elements
        ((8192, 512), 16),  # rows of 2 KiB: 16 parts from 8192 rows
        ((4096, 512), 1),
        ((8192, 1024), 1),  # rows of 4 KiB: from 2**14
        ((16384, 2048), 1),  # 128 tiles: from 256 a tile (32768)
        ((32768, 2048), 16),
        ((32768, 4096), 1),  # 256 tiles: programs enough
        ((2**19, 1024), 32),
        ((8192, 8192), 1),  # 512 tiles: programs enough
    ],
)
def test_columns_split_by_the_tiles_of_kept_elements_they_make(shape, parts):
    """Kept elements along unit stride (a column sum of a row-major matrix) share programs, 16 to
    a tile: the split rule counts those tiles as its rows, and fewer than 32 of them split once a
    tile's program would read more than COLUMN_UNSPLIT_ELEMENTS (2**14), at any extent two parts
    of MIN_PART_EXTENT can take; 32 to SPLIT_MAX_TILES (128) tiles of runs of 16 or more once the
    reduced extent reaches 2**14 and 256 a tile; into 8 parts or more where the run of kept
    elements is 16 or longer. The same sums laid out as rows count rows."""
    columns = torch.empty(shape, device="meta")
    assert _function("sum", 0).explain(columns, columns).split_parts == parts
    if shape[1] == 8:
        rows = torch.empty(shape[::-1], device="meta")
        assert _function("sum", 1).explain(rows, rows).split_parts == 1


@pytest.mark.parametrize(
    "shape, dtype, parts",
    [
        ((8192, 1024), torch.bfloat16, 16),  # 64 tiles, rows of 2 KiB
        ((8176, 1024), torch.bfloat16, 1),  # below 2**13 (16 parts of 511 rows would cut it)
        ((16000, 1024), torch.bfloat16, 16),  # parts of 1000 rows
        ((12288, 768), torch.bfloat16, 16),  # 48 tiles: sixteen parts of 768 rows
        ((9000, 512), torch.float32, 1),  # no sixteen equal parts (fewer are not taken)
        ((8192, 1040), torch.bfloat16, 1),  # rows past 2 KiB
        ((8192, 2048), torch.float8_e4m3fn, 16),  # 128 tiles of one-byte elements (not measured)
        ((16384, 2048), torch.float8_e4m3fn, 16),  # below 256 a tile (32768): still slim's 16 parts
        ((2**16, 512), torch.float32, 64),  # past 2**14 rows the tile bounds' parts
    ],
)
def test_slim_matrices_columns_split_in_sixteen_parts_from_8192_rows(shape, dtype, parts):
    """A matrix's columns in 32 to 128 tiles whose row is at most SLIM_ROW_BYTES (2 KiB)
    split from SLIM_SPLIT_EXTENT (2**13) rows, into exactly SLIM_SPLIT_PARTS (16) equal
    parts, until the reduced extent reaches the tile bounds (2**14 and 256 a tile)."""
    columns = torch.empty(shape, device="meta", dtype=dtype)
    assert _function("sum", 0).explain(columns, columns).split_parts == parts


@pytest.mark.parametrize(
    "x, dims",
    [
        (torch.empty(2, 8192, 256, device="meta"), (1,)),  # a batch of slim matrices: the row bounds
        (torch.empty(8, 1040, 512, device="meta")[:, :1024], (0, 1)),  # outer reduced dim of 8
    ],
    ids=["a batch", "two reduced dims"],
)
def test_slim_columns_split_only_a_matrix_whose_outer_reduced_dim_takes_sixteen_parts(x, dims):
    """The slim band takes a single run of kept elements (not a batch of them) and cuts the outer
    reduced dim, not the reduced extent as a whole."""
    assert _function("sum", dims).explain(x, x).split_parts == 1


@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("layout", ["32 tiles", "128 tiles", "transposed rows", "a batch", "slim rows, sooner"])
def test_a_matrixs_columns_of_32_to_128_tiles_split_and_give_torchs_answer(layout, kind, monkeypatch):
    """A matrix's columns in 32 to SPLIT_MAX_TILES tiles of 16 kept elements along unit stride
    split once the reduced extent is long enough (the bounds scaled down here from 2**14 and 256 a
    tile, and from 2**13 for rows of at most 2 KiB): each part's program reads its rows of every
    tile, the combine adds the parts. A batch of such runs keeps the row bounds and stays whole.
    torch's answer on a poisoned output, and the parts in the plan: each at least MIN_PART_EXTENT
    (64 here) long, but for the slim rows' sixteen (of 25 rows)."""
    from tritonwise.analysis import plan as plan_rules

    monkeypatch.setattr(plan_rules, "COLUMN_SPLIT_EXTENT", 512)
    monkeypatch.setattr(plan_rules, "COLUMN_SPLIT_EXTENT_PER_TILE", 8)
    monkeypatch.setattr(plan_rules, "MIN_PART_EXTENT", 64)
    monkeypatch.setattr(plan_rules, "SLIM_SPLIT_EXTENT", 128)  # 16 parts of 8 rows and more
    x, dims, parts = {
        "32 tiles": (torch.randn(512, 512), (0,), 8),
        "128 tiles": (torch.randn(1024, 2048), (0,), 16),
        "transposed rows": (torch.randn(1024, 520)[:, :512].t(), (1,), 16),  # the kept dim along unit stride
        "a batch": (torch.randn(4, 1024, 256), (1,), 1),  # 64 tiles, runs of 256
        "slim rows, sooner": (torch.randn(400, 512), (0,), 16),  # rows of 2 KiB, below 512 rows
    }[layout]
    y = torch.full_like(x, 2.0)
    fn = _function(kind, dims)
    expected = _expected(kind, x, y, dims, False)
    out = poisoned_like(torch.empty(expected.shape))
    assert fn(x, y, out0=out) is out
    _check(out, kind, x, y, dims)
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.split_parts) == ("column_looped", parts)


@pytest.mark.parametrize(
    "shape, parts",
    [
        ((64, 65536, 8), 32),  # 64 programs of a narrow tile (8 kept elements each): few
        ((64, 65536, 3), 32),  # runs of 3 take tiles of 4: 64 programs
        ((64, 2048, 8), 1),  # one program reads 2**14 elements: unsplit
        ((4, 2560, 5), 2),  # a tile of 8 spans two runs of 5: a program reads 8 x 2560 elements
        ((4, 2048, 5), 1),
        ((128, 16384, 4), 1),  # 128 programs: 32 tiles of 16, below 2**19 reduced elements
        ((128, 2**19, 8), 32),  # 128 programs: 64 tiles of 16, which split from 2**19
        ((32, 65536, 16), 1),  # 32 wide tiles of a batch: the row bounds (2**19), not a matrix's columns'
        ((32, 2**19, 16), 64),
        ((96, 2**19, 12), 1),  # runs of 12 make 72 tiles of 16: more than SPLIT_MAX_ROWS (64)
        ((32, 2**19, 16), 64),
    ],
)
def test_narrow_runs_of_a_batch_count_their_own_tiles(shape, parts):
    """A sum over the middle dim of (batch, rows, k) keeps batch runs of k elements: up to
    SPLIT_FEW_NARROW (64) programs of narrow tiles (k <= 8, kept_per_program) count as few
    rows, whatever tiles of 16 they make; more are counted as tiles of 16."""
    x = torch.empty(shape, device="meta")
    assert _function("sum", 1).explain(x, x).split_parts == parts


def test_rows_split_into_few_parts_whatever_their_count():
    """MIN_COLUMN_PARTS is a column layout's: 20 rows reducing (4, 16385), dims that do not
    collapse, split into 4 parts (8 would leave a last part of 12 slices against 0)."""
    x = torch.empty(20, 4, 16400, device="meta")[:, :, :16385]
    plan = _function("sum", (1, 2)).explain(x, x)
    assert (plan.split_parts, plan.split_tail) == (4, 0)


@pytest.mark.parametrize(
    "shape, parts, tail",
    [
        ((8, 2**16 + 1), 32, 1),  # 64 parts would be 1024 columns, which row_persistent reads: half as many
        ((32, 2**18 + 3), 16, 3),
        ((3, 100000), 64, 32),  # equal parts stop at 32 (2**5 divides 100000)
        ((4, 17, 4000), 2, 4000),  # (17, 4000) reduced, dims that do not collapse: 17 slices into 8 and 9
        ((4, 15, 4000), 1, 0),  # 15 into 7 and 8: the last part 1/7 longer, more than LAST_PART_SLACK allows
    ],
)
def test_a_row_layouts_last_part_reads_what_equal_parts_leave(shape, parts, tail):
    """split_parts cuts a row layout's outer reduced dim into power-of-two parts whether or not
    they divide it: the last part reads the rest too, where that is at most an eighth of a part;
    column layouts split into equal parts only."""
    x = torch.empty(shape, device="meta")
    dims = (1,)
    if len(shape) == 3:  # (kept, slices, columns) with padded rows, the slices outermost
        x, dims = torch.empty(*shape[:2], shape[2] + 16, device="meta")[..., : shape[2]].transpose(0, 1), (0, 2)
    plan = _function("sum", dims).explain(x, x)
    assert (plan.split_parts, plan.split_tail) == (parts, tail)
    if parts > 1:
        assert plan.scheme == "row_looped" and f"the last {tail} column" in str(plan)
    columns = torch.empty(2**19 + 16, 64, device="meta")  # 4 tiles of 16 kept elements
    assert _function("sum", 0).explain(columns, columns).split_tail == 0


LONGER_LAST = {  # x of a dtype, the parts, the columns the last reads past the others', its rows' blocks
    "one row a block, from its start": (lambda d: _ints(3, 16400, dtype=d)[:, :16387], 4, 3, "one row"),
    "one row a block, rotated": (lambda d: _ints(3, 16387, dtype=d), 4, 3, "one row, rotated"),
    "several rows a block, strided columns": (lambda d: _ints(3, 8195, 2, dtype=d)[..., 0], 2, 1, "several rows"),
    "several rows a block, in a file that rotates": (lambda d: _ints(3, 8200, dtype=d)[:, :8195], 2, 1, "several rows, rotating file"),
    "two reduced dims": (lambda d: _ints(17, 2, 600, dtype=d).transpose(0, 1), 2, 600, "several rows"),
    "one row": (lambda d: _ints(1, 16387, dtype=d), 4, 3, "one row"),  # its stride a filler: aligned
}


def _ints(*shape, dtype):
    """Integer values from 1 to 3: every sum of them is exact, and a column read twice or missed
    changes it."""
    return torch.randint(1, 4, shape).to(dtype)


@pytest.mark.parametrize("layout", list(LONGER_LAST))
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_a_split_whose_last_part_is_longer_reads_every_column_once(layout, kind, dtype, monkeypatch):
    """Few rows whose reduced extent no power of two divides: each part's program reads its
    slice, the last one's the rest too (row_looped.py.j2's split_tail), whether its rows take
    one-row blocks (from their start or rotated) or several a block; every result exactly
    torch's (integer values), on poisoned outputs, where the last columns, which only the last
    part reads, hold the extremes."""
    from tritonwise.analysis import plan as plan_rules
    from tritonwise.schemes import row_looped

    monkeypatch.setattr(plan_rules, "SPLIT_MIN_COLS_FEW", 4096)
    monkeypatch.setattr(plan_rules, "MIN_PART_EXTENT", 4096)
    make, parts, tail, blocks = LONGER_LAST[layout]
    if blocks.startswith("several rows"):  # few rows of 4096 or more columns would take one row of 2048
        monkeypatch.setattr(row_looped, "FEW_ROWS_MAX", 0)
    x = make(dtype)
    x.select(-1, -1).fill_(-100.0 if kind == "min" else 100.0)
    y = torch.full((x.shape[0],) + (1,) * (x.dim() - 1), 2.0, dtype=dtype)  # varies along the kept dim alone
    dims = tuple(range(1, x.dim()))
    fn = _function(kind, dims)
    out = poisoned_like(torch.empty(x.shape[0], dtype=dtype))
    assert fn(x, y, out0=out) is out
    assert torch.equal(out, _expected(kind, x, y, dims, False))
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.split_parts, plan.split_tail) == ("row_looped", parts, tail)
    assert (plan.block[0] == 1) == blocks.startswith("one row")
    assert _rotated(plan) == (blocks.endswith("rotated") or blocks.endswith("rotating file"))


def test_an_equal_split_and_a_longer_last_one_run_files_of_their_own(monkeypatch):
    """Rows of 16384 and of 16387 at one stride split alike but for the last part's extra
    columns: one function serves both, each from its own file (the layout class holds the
    form), each result exact."""
    from tritonwise.analysis import plan as plan_rules

    monkeypatch.setattr(plan_rules, "SPLIT_MIN_COLS_FEW", 4096)
    monkeypatch.setattr(plan_rules, "MIN_PART_EXTENT", 4096)
    fn, y, paths = _function("sum", (1,)), torch.ones(2, 1), []
    for cols in (16384, 16387):
        x = torch.ones(2, 16400)[:, :cols]
        assert torch.equal(fn(x, y), torch.full((2,), float(cols)))
        plan = fn.explain(x, y)
        assert plan.split_parts == 4 and plan.split_tail == cols - 16384
        paths.append(plan.path)
    assert paths[0] != paths[1]


def test_a_longer_last_part_is_refused_by_a_template_without_its_rest_loop():
    """Only row_looped's rest loop reads a split's last part past the others' end: a file of
    another scheme asked for one is refused, not written without it."""
    from dataclasses import replace

    from tritonwise.codegen.render import render

    x = torch.randn(3, 100)  # rows one block covers: row_persistent
    spec = _function("sum", -1).plan((x, x), (None,), collapse=True).spec
    assert spec.scheme == "row_persistent"
    with pytest.raises(AssertionError, match="longer last part"):
        render(replace(spec, split_tail=True))


def test_a_longer_last_part_counts_its_reach_in_the_index_width(monkeypatch):
    """The last part reads past the split task's extents: its index width follows the farthest
    element of the whole reduced extent (here 35 columns at stride 8 past the parts' reach,
    with the int32 limit scaled down to just below it)."""
    from tritonwise.analysis import tiling

    x = torch.empty(3, 100003 * 8, device="meta")[:, ::8]
    reach = (x.shape[0] - 1) * x.stride(0) + (x.shape[1] - 1) * x.stride(1)
    monkeypatch.setattr(tiling, "INT32_LIMIT", reach - 1)
    plan = _function("sum", (1,)).explain(x, x)
    assert (plan.split_parts, plan.split_tail, plan.index_bits) == (64, 35, 64)


PEEL_ROWS = 17  # with a row stride of 4103 (7 modulo 16) their starts fall at every offset modulo 16 elements


def _negative_rows(base):
    from tritonwise import StridedBuffer

    return StridedBuffer(base, (PEEL_ROWS, 4098), (-4103, 1), offset=(PEEL_ROWS - 1) * 4103 + 2)


ROTATED_LAYOUTS = {  # rows of 4098 over (17, 4103) elements
    "sliced": lambda base: base[:, 3:4101],  # the first row's start off 16 bytes too
    "from the start": lambda base: base[:, :4098],
    "negative row stride": _negative_rows,
    "two kept dims": lambda base: base[1:].view(2, 8, 4103)[:, :7, 5:],  # that do not collapse
}


def _rotated_operand(layout, dtype, device):
    base = torch.randint(-5, 6, (PEEL_ROWS, 4103)) if dtype == torch.int8 else torch.randn(PEEL_ROWS, 4103) * 2
    return ROTATED_LAYOUTS[layout](base.to(device, dtype))


@pytest.mark.parametrize("layout", list(ROTATED_LAYOUTS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int8])
@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_rows_starting_anywhere_are_read_rotated_from_their_boundary(device, kind, dtype, layout, checked_hints):
    """RowLooped.peel_operand: a block of one row, in a file of the unaligned class whose one
    varying input has unit stride, reads the row from its first 16-byte boundary, `head` columns
    in (a stated tl.multiple_of, checked on the CPU), the head last. Few rows of 4098 take one row
    of 2048 a program and leave 2050 columns past one whole block where the head is 3 or more (the
    rest loop runs twice), 2 or fewer past two; the first three layouts meet every head."""
    x = _rotated_operand(layout, dtype, device)
    y = torch.full(x.shape[:-1] + (1,), 3, dtype=dtype, device=device)  # varies along the rows alone
    fn = _function(kind, -1)
    expected = _expected(kind, _values(x), y, (-1,), False)
    out = poisoned_like(torch.empty(expected.shape[::-1], dtype=expected.dtype, device=device)).t()
    assert fn(x, y, out0=out) is out
    _check(out, kind, _values(x), y, (-1,))
    plan = fn.explain(x, y, out0=out)
    assert (plan.scheme, plan.block, plan.aligned, plan.split_parts) == ("row_looped", (1, 2048), False, 1)
    assert _rotated(plan) and (checked_hints or device == "cuda")


def _values(x):
    """A tensor of `x`'s values (a StridedBuffer's copied out)."""
    return x if isinstance(x, torch.Tensor) else x.values()


ROTATED_LAUNCHES = {  # name: (operand, function options, patches)
    "rows shorter than their head": (
        lambda: torch.randint(-5, 6, (19, 25), dtype=torch.int8)[:, 1:10], {"max_tile_size": 8}, {}
    ),
    "fp64 rows of a few blocks": (lambda: torch.randn(19, 45, dtype=torch.float64)[:, :40], {"max_tile_size": 8}, {}),
    "a capped grid": (lambda: torch.randn(PEEL_ROWS, 4103)[:, :4098], {"max_grid_size": (3,)}, {}),
    "int64 indices": (lambda: torch.randn(PEEL_ROWS, 4103)[:, :4098], {}, {(tiling, "INT32_LIMIT"): 5000}),
    "split in parts": (  # parts of 4096 columns, looped
        lambda: torch.randn(2, 16391)[:, :16384],
        {},
        {(plan_rules, "SPLIT_MIN_COLS_FEW"): 4096, (plan_rules, "MIN_PART_EXTENT"): 4096},
    ),
    "split in parts, the last longer": (  # the last part's rows 4099 columns long
        lambda: torch.randn(2, 16391)[:, :16387],
        {},
        {(plan_rules, "SPLIT_MIN_COLS_FEW"): 4096, (plan_rules, "MIN_PART_EXTENT"): 4096},
    ),
}


@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("launch", list(ROTATED_LAUNCHES))
def test_rotated_rows_under_every_launch_form(launch, kind, checked_hints, monkeypatch):
    """Rotated rows under blocks smaller than a row's head (no whole block: the rest reads the
    row rotated), rests of several blocks, a grid capped below the row count (GRID_STRIDE), int64
    indices and a split's (part, row) pairs; every stated tl.multiple_of holds."""
    from tritonwise import CodeGenConfig

    make, options, patches = ROTATED_LAUNCHES[launch]
    for (module, name), value in patches.items():
        monkeypatch.setattr(module, name, value)
    x = make()
    y = torch.full(x.shape[:-1] + (1,), 3, dtype=x.dtype)
    config = CodeGenConfig(**options)
    fn = pointwise_dynamic(product, promotion_methods=[(0, 1, "DEFAULT")], reductions=[(kind, -1)], config=config)
    _check(fn(x, y), kind, x, y, (-1,))
    plan = fn.explain(x, y)
    assert plan.scheme == "row_looped" and not plan.aligned and plan.block[0] == 1 and _rotated(plan) and checked_hints
    assert (plan.split_parts > 1) == launch.startswith("split in parts")
    assert (plan.split_tail > 0) == (launch == "split in parts, the last longer")
    assert (plan.grid[0] < plan.num_tiles) == (launch == "a capped grid")
    assert (plan.index_bits == 64) == (launch == "int64 indices")


def _rotated(plan) -> bool:
    """Whether the plan's file reads rows of one-row blocks rotated (row_looped.py.j2's `peel`)."""
    return "in0_row = tl.multiple_of(" in Path(plan.path).read_text()


@pytest.mark.parametrize(
    "x, y, rotated",
    [
        (lambda: torch.randn(17, 4103)[:, :4098], lambda: torch.randn(17, 1), True),
        (lambda: torch.randn(17, 4098), lambda: torch.randn(4098), False),  # two inputs vary along the rows
        (lambda: torch.randn(17, 4098), lambda: torch.randn(17, 4098), False),
        (lambda: torch.randn(17, 4112), lambda: torch.randn(17, 1), False),  # the aligned class
        (lambda: torch.randn(17, 2, 2100)[:, :, :2049], lambda: torch.randn(17, 1, 1), False),  # two reduced dims
        (lambda: torch.randn(17, 8203)[:, ::2], lambda: torch.randn(17, 1), False),  # columns at stride 2
        (lambda: torch.randn(4103)[:4098].expand(17, 4098), lambda: torch.randn(17, 1), False),  # rows broadcast
    ],
    ids=["one input", "a broadcast row", "two inputs", "aligned", "two reduced dims", "strided columns", "one row"],
)
def test_rows_are_rotated_where_one_input_varies_along_them(x, y, rotated):
    """The rule: one operand varying along the one reduced dim, with unit stride, rows at run-time
    strides, in the unaligned class; other files read each row from its start. A rotating file
    offers no pipelined block (few rows of 65536 take one row of 2048 there), and its blocks of
    several rows (many rows of 4098) read each row from its start too."""
    x, y = x(), y()
    dims = tuple(range(1, x.dim()))
    fn = _function("sum", dims)
    _check(fn(x, y), "sum", x, y, dims)
    plan = fn.explain(x, y)
    assert plan.scheme == "row_looped" and plan.split_parts == 1 and _rotated(plan) == rotated
    if rotated:
        assert all(block[1] < 8192 for block in plan.block_choices)
        many, scale = torch.randn(300, 4103)[:, :4098], torch.randn(300, 1)
        _check(fn(many, scale), "sum", many, scale, dims)
        assert fn.explain(many, scale).block == (2, 1024) and fn.explain(many, scale).path == plan.path


@pytest.mark.parametrize(
    "cols, inputs, block, warps",
    [
        (4110, 1, (2, 1024), 8),  # a head of up to 15 elements leaves one whole block of 2048
        (4111, 1, (1, 2048), 8),  # two whatever the head: one row a program, rotated
        (6001, 1, (1, 2048), 8),
        (6001, 2, (2, 1024), 8),  # two inputs vary along the rows: read from their start
        (1324, 1, (4, 512), 8),  # SPARSE_ROWS_BLOCK is kept
        (8193, 1, (1, 2048), 16),  # long rows take LONG_BLOCK on its own warps anyway
    ],
)
def test_many_rows_read_rotated_where_they_keep_two_whole_blocks(cols, inputs, block, warps):
    """In a file that reads rows rotated, many rows (no few-row rule applies) that would take two
    rows of 1024, read from their start one element a lane, take one row of 2048 on 8 warps, read
    rotated, where every head leaves two whole blocks of 2048; every result torch's."""
    x = torch.randn(300, cols + 5)[:, :cols]  # rows starting anywhere
    y = torch.randn(300, 1) if inputs == 1 else torch.randn(cols)
    fn = _function("sum", -1)
    plan = fn.explain(x, y)
    assert (plan.scheme, plan.block, plan.num_warps) == ("row_looped", block, warps)
    assert _rotated(plan) == (inputs == 1)
    out = poisoned_like(torch.empty(300))
    assert fn(x, y, out0=out) is out
    _check(out, "sum", x, y, (-1,))


COUNTED_ROWS = {  # x, block, whole blocks compiled in, the width the last columns are read in
    "whole blocks only": (lambda: torch.randn(5, 6144), (1, 2048), 3, 2048),
    "whole blocks and a rest": (lambda: torch.randn(5, 6160), (1, 2048), 3, 256),
    "several rows a block": (lambda: torch.randn(300, 4112), (2, 1024), 4, 128),
    "a rest of 128": (lambda: torch.randn(300, 1152), (2, 1024), 1, 128),
    "a rest of 129": (lambda: torch.randn(300, 1153), (4, 512), 2, 512),  # SPARSE_ROWS_BLOCK
    "a rest of 300": (lambda: torch.randn(300, 1324), (4, 512), 2, 512),
    "a rest of 600": (lambda: torch.randn(300, 1624), (2, 1024), 1, 1024),
    "two reduced dims": (lambda: torch.randn(300, 2, 2100)[:, :, :2064], (4, 512), 8, 64),
    "two reduced dims, no rest": (lambda: torch.randn(300, 2, 2100)[:, :, :2048], (4, 512), 8, 512),
    "the pipelined block": (lambda: torch.randn(65, 65552), (1, 8192), 0, 1024),  # 65 rows: not split
    "more than 32 blocks": (lambda: torch.randn(129, 2048 * 33 + 16), (1, 2048), 0, 256),  # 129: not pipelined
    "rows rotated": (lambda: torch.randn(5, 4103)[:, :4098], (1, 2048), 1, 2048),
    "rows rotated, a rest of two blocks at head 0": (lambda: torch.randn(5, 4103)[:, :4099], (1, 2048), 1, 2048),
    "rows rotated, a short rest in a whole block": (lambda: torch.randn(5, 4125)[:, :4120], (1, 2048), 2, 2048),
    "several rows from their start": (lambda: torch.randn(300, 4103)[:, :4098], (2, 1024), 4, 128),
}
ROW_FORMS = {
    "as planned": {},
    "every count at run time": {"max_compiled_blocks": 0},
    "every last block whole": {"rest_block_fraction": 1},
}


@pytest.mark.parametrize("kind", ["sum", "max"])
@pytest.mark.parametrize("form", list(ROW_FORMS))
@pytest.mark.parametrize("case", list(COUNTED_ROWS))
def test_a_rows_count_and_last_block_are_compiled_in(case, form, kind, monkeypatch):
    """row_looped compiles a row's count of whole blocks in (WHOLE_BLOCKS) where it is 1 to 32,
    except for pipelined blocks (rows read rotated: the count every head of fewer than 16 bytes
    keeps, so that rows whose head is short read up to two blocks in the rest loop), and reads
    its masked last columns in a block of an eighth of BLOCK_N where they fit one (a rotated
    row's rest, and any longer one, in whole blocks); the launch passes both. With the
    limit at 0 every count is taken at run time, with the fraction at 1 every last block is
    whole. Every form against torch."""
    from tritonwise.schemes import row_looped

    for name, value in ROW_FORMS[form].items():
        monkeypatch.setattr(row_looped.RowLooped, name, value)
    make, block, count, rest = COUNTED_ROWS[case]
    x = make()
    y = torch.full(x.shape[:1] + (1,) * (x.dim() - 1), 3.0)
    dims = tuple(range(1, x.dim()))
    fn = _function(kind, dims)
    out = poisoned_like(torch.empty(x.shape[0]))
    assert fn(x, y, out0=out) is out
    _check(out, kind, x, y, dims)
    plan = fn.explain(x, y)
    assert plan.scheme == "row_looped" and plan.block == block and plan.split_parts == 1
    assert plan.compiled_blocks == (0 if form == "every count at run time" else count)
    assert plan.rest_block == (block[1] if form == "every last block whole" else rest)
    block_m, block_n, *values = fn.plan((x, y), (out,), collapse=True).constexprs
    assert (block_m, block_n) == block and tuple(values[:2]) == (plan.compiled_blocks, plan.rest_block)


SPLIT_ROWS = {  # x, its reduced dims (not adjacent: their columns split), the INNER_EXTENT compiled in
    "innermost 16": (lambda: torch.randn(96, 300, 16), (0, 2), 16),
    "innermost 2, divided": (lambda: torch.randn(640, 300, 2), (0, 2), 0),
    "innermost 48, divided": (lambda: torch.randn(32, 300, 48), (0, 2), 0),
    "innermost 32, divided": (lambda: torch.randn(48, 300, 32), (0, 2), 0),
    "innermost 64, divided": (lambda: torch.randn(24, 300, 64), (0, 2), 0),
    "a view, innermost 8 of 10": (lambda: torch.randn(192, 300, 10)[:, :, :8], (0, 2), 8),
    "three reduced dims, innermost 4": (lambda: torch.randn(6, 300, 64, 6)[..., :4], (0, 2, 3), 4),
}


@pytest.mark.parametrize("form", ["as planned", "every split divided"])
@pytest.mark.parametrize("case", list(SPLIT_ROWS))
def test_the_innermost_split_of_several_reduced_dims_takes_its_extent_compiled_in(case, form, monkeypatch):
    """Over several reduced dims, row_looped compiles in the innermost reduced extent where that is
    4, 8 or 16 (INNER_EXTENT) and splits that dim by it; other extents, and the dims further
    out, divide by run-time extents. With none allowed every split divides at run time. Both
    forms against torch, into a poisoned output."""
    from tritonwise.schemes import row_looped

    if form == "every split divided":
        monkeypatch.setattr(row_looped.RowLooped, "compiled_inner_extents", ())
    make, dims, extent = SPLIT_ROWS[case]
    x = make()
    y = torch.full((1, x.shape[1]) + (1,) * (x.dim() - 2), 3.0)
    fn = _function("sum", dims)
    out = poisoned_like(torch.empty(x.shape[1]))
    assert fn(x, y, out0=out) is out
    _check(out, "sum", x, y, dims)
    plan = fn.explain(x, y)
    assert plan.scheme == "row_looped" and len(plan.task_shape) == len(dims) + 1
    assert plan.inner_extent == (0 if form == "every split divided" else extent)
    assert ("innermost reduced extent" in str(plan)) == bool(plan.inner_extent)
    assert not plan.inner_extent or f"its innermost reduced extent ({extent}) compiled in" in str(plan)


def test_one_file_serves_rows_of_every_count():
    """Rows of 2, 5, 32 and 40 whole blocks (the last counted at run time) run one file's
    kernels, each compiled for its block and count, every result torch's."""
    fn = _function("sum", -1)
    paths, counts = set(), []
    for width in (2096, 2048 * 5 + 48, 2048 * 32 + 48, 2048 * 40 + 48):
        x = torch.randn(129, width)  # 129 rows: none split or pipelined
        y = torch.full((129, 1), 0.5)
        _check(fn(x, y), "sum", x, y, (-1,))
        plan = fn.explain(x, y)
        counts.append((plan.block, plan.compiled_blocks))
        paths.add(plan.path)
    assert counts == [((2, 1024), 2), ((1, 2048), 5), ((1, 2048), 32), ((1, 2048), 0)] and len(paths) == 1
