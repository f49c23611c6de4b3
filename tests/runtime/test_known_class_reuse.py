"""A new shape of a known layout class: torch's results, no code generation, no file access, and
never a plan (or file) of another class. The memos this relies on are function.py's per call
class (_frontend) and per call class and layout class (_kernel), and cache.ensure_file's per file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import triton
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tritonwise.plans.binder as binder_module
from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.runtime import cache


@triton.jit
def _add_alpha(x, y, alpha):
    return x + y * alpha


def fresh():
    """A new function object: empty plan cache and empty memos."""
    return pointwise_dynamic(_add_alpha, is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])


def expected(x, y, alpha):
    return torch.add(x, y, alpha=alpha)


def check(fn, x, y, alpha=0.5):
    """The call with a poisoned given output, and without: both equal torch's."""
    want = expected(x, y, alpha)
    out = poisoned_like(want)
    assert fn(x, y, alpha, out0=out) is out
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
    got = fn(x, y, alpha)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert got.dtype == want.dtype and _strides(got) == _strides(want)


def _strides(t):
    """Strides of the dims that have more than one element (the others' are arbitrary)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


@pytest.fixture
def no_generation(monkeypatch):
    """After it is armed, building a spec or touching a cached file fails the test."""

    def forbidden(what):
        def fail(*args, **kwargs):
            raise AssertionError(f"a new shape of a known layout class ran {what}")

        return fail

    def arm(files=True):
        """`files=False` leaves file reads and writes allowed: on a GPU, a shape that takes a
        block of its class for the first time compiles that block's kernel once, and the
        compiled-kernel store writes it (as Triton's own cache would)."""
        monkeypatch.setattr(binder_module, "build_spec", forbidden("build_spec"))
        monkeypatch.setattr(binder_module, "ensure_file", forbidden("ensure_file"))
        if files:
            monkeypatch.setattr(cache, "verifies", forbidden("a file read"))
            monkeypatch.setattr(cache, "atomic_write", forbidden("a file write"))

    return arm


# One layout class per row: the first operands open it, the later ones are new shapes of it
# (no extent a multiple of 16: alignment is part of the class).
CLASSES = {
    "flat": [(lambda n: (torch.randn(n), torch.randn(n))), [20, 37, 5, 50]],
    "nd broadcast": [(lambda n: (torch.randn(3, n), torch.randn(n))), [5, 7, 9, 33]],
    "nd 3-D broadcast": [(lambda n: (torch.randn(n, 2, 5), torch.randn(2, 1))), [3, 4, 7]],
    "tile2d": [(lambda n: (torch.randn(n, n + 1), torch.randn(n + 1, n).t())), [9, 12, 5, 30]],
}


@pytest.mark.parametrize("make, sizes", list(CLASSES.values()), ids=list(CLASSES))
def test_new_shapes_of_a_known_class_give_torch_results_without_generating(make, sizes, no_generation):
    fn = fresh()
    check(fn, *make(sizes[0]))
    path = fn.explain(*make(sizes[0]), 0.5).path
    no_generation()
    for n in sizes[1:]:
        x, y = make(n)
        check(fn, x, y)
        assert fn.explain(x, y, 0.5).path == path


def test_changed_dtype_stride_class_or_alignment_never_reuses_a_plan_or_file():
    fn = fresh()
    base = torch.randn(6, 8), torch.randn(6, 8)
    variants = {
        "base": base,
        "dtype": (base[0].double(), base[1].double()),
        "mixed dtype": (base[0].to(torch.int32), base[1]),
        "broadcast stride": (base[0], torch.randn(8)),
        "transposed (tile2d)": (base[0], torch.randn(8, 6).t()),
        "run-time stride": (torch.randn(6, 16)[:, ::2], base[1]),
        "aligned extents": (torch.randn(16, 32), torch.randn(32, 16).t()),
        "unaligned extents": (torch.randn(17, 32), torch.randn(32, 17).t()),
        "0-d tensor": (base[0], torch.tensor(2.0)),
    }
    paths = {}
    for name, (x, y) in variants.items():
        check(fn, x, y)
        fresh_path = fresh().explain(x, y, 0.5).path  # computed with no memo at all
        assert fn.explain(x, y, 0.5).path == fresh_path, name
        paths[name] = fresh_path
    distinct = ["base", "dtype", "mixed dtype", "broadcast stride", "transposed (tile2d)", "run-time stride"]
    assert len({paths[name] for name in distinct}) == len(distinct), paths
    assert paths["aligned extents"] != paths["unaligned extents"]


def test_scalar_width_and_default_dtype_are_part_of_the_class():
    fn = pointwise_dynamic(_add_alpha, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
    ints = torch.arange(-6, 6, dtype=torch.int64)
    for alpha in (3, 2**40, 5, -(2**35)):  # int32 and int64 scalars, alternating
        torch.testing.assert_close(fn(ints, ints, alpha), ints + ints * alpha, rtol=0, atol=0)
    half = torch.arange(4, dtype=torch.int32)
    assert fn.output_meta(half, half, 2.5)[0][2] == torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:  # output_meta runs the frontend without the plan cache (whose key lacks the default dtype)
        assert fn.output_meta(half, half, 2.5)[0][2] == torch.float64 == (half + half * 2.5).dtype
    finally:
        torch.set_default_dtype(previous)
    assert fn.output_meta(half, half, 2.5)[0][2] == torch.float32


def test_index_width_is_part_of_the_class():
    fn = fresh()
    small = fn.explain(torch.empty(8, 8, device="meta"), torch.empty(8, device="meta"), 0.5)
    huge = fn.explain(torch.empty(2**16, 2**16, device="meta"), torch.empty(2**16, device="meta"), 0.5)
    again = fn.explain(torch.empty(9, 9, device="meta"), torch.empty(9, device="meta"), 0.5)
    assert (small.index_bits, huge.index_bits, again.index_bits) == (32, 64, 32)
    assert small.kernel == again.kernel != huge.kernel


def test_a_given_output_of_a_wrong_shape_is_still_rejected_on_a_known_class():
    fn = fresh()
    check(fn, torch.randn(3, 5), torch.randn(5))
    with pytest.raises(RuntimeError, match="out0 has shape"):
        fn(torch.randn(4, 5), torch.randn(5), 0.5, out0=torch.empty(3, 5))
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        fn(torch.randn(4, 5), torch.randn(6), 0.5)


def test_a_verified_file_is_not_read_or_counted_again_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    x, y = torch.randn(10), torch.randn(10)
    path = fresh().explain(x, y, 0.5).path
    counts = cache.read_stats(tmp_path)
    reads = []
    verified_text = cache._verified_text
    monkeypatch.setattr(cache, "_verified_text", lambda p, marks=(): reads.append(p) or verified_text(p, marks))
    for _ in range(3):  # new function objects: empty memos of their own, the process' file memo
        assert fresh().explain(x, y, 0.5).path == path
    assert reads == [] and cache.read_stats(tmp_path) == counts
    with open(path, "a") as f:  # an edit since: verified again, and rewritten
        f.write("# edited\n")
    assert fresh().explain(x, y, 0.5).path == path
    assert len(reads) == 1 and cache.verifies(Path(path))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    transpose=st.booleans(),
    broadcast=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_one_function_across_shapes_serves_what_a_fresh_one_would(rows, cols, transpose, broadcast, dtype):
    """One long-lived function sees every drawn call; each gives torch's result, and its plan
    names the same file, block and grid as a function with no memo would choose."""
    x = torch.randn(rows, cols, dtype=dtype)
    y = torch.randn(cols, dtype=dtype) if broadcast else torch.randn(cols, rows, dtype=dtype).t()
    y = y if transpose else y.contiguous()
    check(_LONG_LIVED, x, y)
    mine, theirs = _LONG_LIVED.explain(x, y, 0.5), fresh().explain(x, y, 0.5)
    assert (mine.path, mine.block, mine.grid, mine.strides) == (theirs.path, theirs.block, theirs.grid, theirs.strides)


_LONG_LIVED = fresh()


@triton.jit
def _squares(x):
    return x * x


def _row_sums():
    return pointwise_dynamic(_squares, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])


_LONG_LIVED_ROWS = _row_sums()


def _without_launch(plan) -> dict:
    """A plan's fields but its loaded launcher (each function loads the file for itself)."""
    return {k: v for k, v in vars(plan).items() if k != "launch"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple),
    transpose=st.booleans(),
    rows=st.booleans(),
)
def test_a_long_lived_function_binds_the_plan_a_fresh_one_binds(shape, transpose, rows):
    """With its memos filled by earlier calls of other shapes and ranks (the frontend, the
    kernels, the Reductions along dims resolved per rank), a function binds every field of the
    plan a function with no memo binds, and the call gives torch's result."""
    x = torch.randn(*shape)
    x = x.transpose(0, -1) if transpose else x
    if rows:
        long_lived, args, want = _LONG_LIVED_ROWS, (x,), (x * x).sum(-1)
    else:
        long_lived, args, want = _LONG_LIVED, (x, x[..., :1], 0.5), expected(x, x[..., :1], 0.5)
    outs = (None,)
    assert _without_launch(long_lived.plan(args, outs, collapse=True)) == _without_launch(
        (_row_sums() if rows else fresh()).plan(args, outs, collapse=True)
    )
    torch.testing.assert_close(long_lived(*args), want)


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple),
    operands=st.integers(1, 3),
    outputs=st.integers(1, 2),
    itemsize=st.sampled_from([1, 2, 4, 8]),
)
def test_contiguous_shortcut_of_the_analysis_equals_the_general_path(shape, operands, outputs, itemsize):
    """analysis.plan's shortcut for same-shape C-contiguous inputs gives the general path's plan."""
    from tritonwise.analysis import plan as plan_module
    from tritonwise.config import CodeGenConfig

    strides = tuple(torch.empty(shape).stride())
    inputs = [(shape, strides)] * operands
    config = CodeGenConfig()
    fast = plan_module.analyze(inputs, [None] * outputs, itemsize, config)
    shortcut = plan_module._contiguous_task
    plan_module._contiguous_task = lambda *a: None
    try:
        general = plan_module.analyze(inputs, [None] * outputs, itemsize, config)
    finally:
        plan_module._contiguous_task = shortcut
    assert fast == general


@pytest.mark.gpu
@pytest.mark.parametrize("make, sizes", list(CLASSES.values()), ids=list(CLASSES))
def test_new_shapes_of_a_known_class_on_the_gpu(make, sizes, no_generation):
    """The same on CUDA: each new shape generates no file (its block's kernel is compiled the
    first time the class takes that block) and gives torch's results with poisoned outputs."""
    fn = fresh()
    first = [t.cuda() for t in make(sizes[0])]
    check(fn, *first)
    no_generation(files=False)
    for n in sizes[1:]:
        check(fn, *[t.cuda() for t in make(n)])
