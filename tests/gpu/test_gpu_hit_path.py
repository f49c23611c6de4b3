"""The C hit path on the GPU (marked `gpu`): for every argument kind, a cached call served by
launch.c's hit() gives what the Python path gives, bit for bit, and what torch gives; calls the
C path must not serve (given outputs, reductions, 0-d CPU scalars, another signature) still
come out right; threads share it."""

import sys
import threading

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.support.layout_patterns import _inputs, patterns
from tritonwise import StridedBuffer, pointwise_dynamic
from tritonwise.runtime import hit_path
from tritonwise.runtime.arguments import call_signature

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.fixture(autouse=True, scope="module")
def aten_helpers_in_use():
    """The frame checks below count Python frames: until the ATen helpers (runtime/aten.py) are
    in use, launch.c keys each tensor through Python, as in a process whose background build has
    not finished. So they are built (or loaded) and handed over first."""
    from tritonwise.runtime import aten, native

    aten.use(native.launch_module(), aten.helpers())


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
@triton.jit
def squared_error_sum(x, y):
    d = x - y
    return d * d


@pytest.fixture(autouse=True)
def c_call_method():
    """The C __call__ whose frames these tests count, installed for each test: a process that
    compiled a tritonwise call on torch before 2.13 has the Python one back (tracing/__init__.py)."""
    before = hit_path.install_c_calls()
    yield
    hit_path.restore_calls(before)


def _served_by_c(fn, *args) -> bool:
    plan = fn.plan_cache.get(call_signature(args))
    return plan is not None and plan.hit is not None and hit_path.entry is not None


def _through_python(fn, *args):
    entry, hit_path.entry = hit_path.entry, None
    try:
        return fn(*args)
    finally:
        hit_path.entry = entry


def _cuda(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda").to(dtype)


def _python_frames(fn, *args, **kwargs):
    """fn(*args, **kwargs) and the names of the Python functions the call ran (none: served in C)."""
    frames = []
    sys.setprofile(lambda frame, event, arg: frames.append(frame.f_code.co_name) if event == "call" else None)
    try:
        return fn(*args, **kwargs), frames
    finally:
        sys.setprofile(None)


CASES = {
    "float alpha": lambda: (_cuda(1024), _cuda(1024), 0.5),
    "int alpha": lambda: (_cuda(64, 33), _cuda(33), 3),
    "wide int alpha": lambda: (_cuda(100), _cuda(100), 2**40),
    "bool alpha": lambda: (_cuda(8, 16, 8), _cuda(16, 1), True),
    "transposed": lambda: (_cuda(64, 64).t(), _cuda(64, 64), -1.25),
    "int8 + fp32": lambda: (torch.randint(-9, 9, (1024,), device="cuda", dtype=torch.int8), _cuda(1024), 2.0),
    "fp16": lambda: (_cuda(333, dtype=torch.float16), _cuda(333, dtype=torch.float16), 0.25),
    "misaligned view": lambda: (_cuda(1025)[1:], _cuda(1024), 1.5),
    "StridedBuffer": lambda: (StridedBuffer(BASE, (8, 8), (1, 8)), _cuda(8, 8), 0.5),
}
BASE = torch.randn(64, device="cuda") if torch.cuda.is_available() else None


def _reference(x, y, alpha):
    if isinstance(x, StridedBuffer):
        x = BASE.as_strided((8, 8), (1, 8))
    return x + y * alpha


@pytest.mark.parametrize("case", list(CASES))
def test_c_hits_equal_the_python_path_and_torch(case):
    args = CASES[case]()
    first = add_alpha(*args)  # builds and launches the plan
    again = add_alpha(*args)  # a hit
    assert _served_by_c(add_alpha, *args)
    python = _through_python(add_alpha, *args)
    torch.testing.assert_close(again, python, rtol=0, atol=0)
    torch.testing.assert_close(again, first, rtol=0, atol=0)
    torch.testing.assert_close(again, _reference(*args).to(again.dtype), rtol=1e-3, atol=1e-3)


def test_two_outputs():
    r, theta = _cuda(300, 7), _cuda(7)
    polar(r, theta)
    got = polar(r, theta)
    assert _served_by_c(polar, r, theta)
    torch.testing.assert_close(got, (r * torch.cos(theta), r * torch.sin(theta)))


def test_a_cached_call_runs_no_python_frame():
    r, theta = _cuda(300, 7), _cuda(7)
    polar(r, theta)  # the first call builds the plan (and enables the C path)
    hits = polar.plan_cache.hits
    got, frames = _python_frames(polar, r, theta)
    assert frames == [] and polar.plan_cache.hits == hits + 1
    torch.testing.assert_close(got, (r * torch.cos(theta), r * torch.sin(theta)))


ONE_CLASS = ((80, 96), (112, 144, 160, 208))  # sizes before, then timed: one block and alignment
# two shapes of each alignment planned (and traced), then new shapes of each
BOTH_ALIGNMENTS = ((80, 96, 100, 101), (112, 113, 128, 129))


@pytest.mark.parametrize(
    "make, sizes",
    [
        pytest.param(lambda n: (_cuda(4, n, 64), _cuda(n, 1)), ONE_CLASS, id="broadcast (nd)"),
        pytest.param(lambda n: (_cuda(n, 256), _cuda(256, n).t()), ONE_CLASS, id="transposed (tile2d)"),
        pytest.param(lambda n: (_cuda(2 * n, 64)[::2], _cuda(64)), ONE_CLASS, id="sliced rows (nd)"),
        pytest.param(lambda n: (_cuda(64, n).t(), _cuda(64, n).t()), ONE_CLASS, id="both transposed (flat)"),
        pytest.param(lambda n: (_cuda(n, 256), _cuda(256, n).t()), BOTH_ALIGNMENTS, id="transposed, either alignment"),
    ],
)
def test_new_shapes_of_a_layout_run_in_c_once_their_kernel_has(make, sizes):
    """The first shapes of a layout class are planned, launched and traced into a program of
    their class; later ones (same block, same specialization classes) are launched by that shape
    program with no plan and no Python frame, as explain() says beforehand. A length that is a
    multiple of 16 or not puts a transposed add in the aligned or the unaligned layout class:
    each gets its program."""
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    before, timed = sizes
    for n in before:
        fn(*make(n), 0.5)
    for n in timed:
        x, y = make(n)
        assert fn.explain(x, y, 0.5).rung == "shape program"
        misses = fn.plan_cache.misses
        got, frames = _python_frames(fn, x, y, 0.5)
        assert frames == [] and fn.plan_cache.misses == misses
        torch.testing.assert_close(got, x + 0.5 * y)
        assert got.stride() == (x + y).stride()


def test_new_shapes_stay_in_python_with_TRITONWISE_C_NEW_SHAPES_0(monkeypatch):
    monkeypatch.setenv("TRITONWISE_C_NEW_SHAPES", "0")
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    for make in (lambda n: (_cuda(n, 256), _cuda(256, n).t()), lambda n: (_cuda(64 * n),) * 2):
        for n in (80, 96):
            fn(*make(n), 0.5)
        for n in (112, 144):
            misses = fn.plan_cache.misses
            x, y = make(n)
            torch.testing.assert_close(fn(x, y, 0.5), x + 0.5 * y)
            assert fn.plan_cache.misses == misses + 1  # a plan of its own, in Python


@settings(max_examples=30, deadline=None)  # each example compiles its layout classes' kernels
@given(pattern=patterns, sizes=st.lists(st.lists(st.integers(2, 40), min_size=4, max_size=4), min_size=6, max_size=6))
def test_new_shapes_of_any_layout_give_torchs_results_whichever_path_launches_them(pattern, sizes):
    """Permuted, sliced, expanded and broadcasting operands in six shapes of one pattern: the
    first builds a plan, later ones are planned in Python or launched by a shape program; each result
    and its strides equal torch's."""
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    misses = fn.plan_cache.misses
    for size in sizes:
        inputs = _inputs(pattern, size, "cuda")
        x, y = inputs[0], inputs[-1]
        got = fn(x, y, 0.5)
        want = torch.add(x, y, alpha=0.5)  # one op, as ours: its output layout is TensorIterator's
        torch.testing.assert_close(got, want)
        assert [s for s, n in zip(got.stride(), got.shape) if n > 1] == [
            s for s, n in zip(want.stride(), want.shape) if n > 1
        ]
    event(f"{len(sizes) - (fn.plan_cache.misses - misses)} of {len(sizes)} served without a miss")


# Calls giving their output, as functions of a size n: (x, y, the output). In place, out= of
# another layout than the inputs', in place over a broadcast operand.
GIVEN_OUTPUTS = {
    "in place (flat)": lambda n: (lambda x: (x, _cuda(64 * n + 7), x))(_cuda(64 * n + 7)),
    "in place, += a transposed operand (tile2d)": lambda n: (lambda x: (x, _cuda(256, n).t(), x))(_cuda(n, 256)),
    "in place, += a broadcast bias (nd)": lambda n: (lambda x: (x, _cuda(n, 1), x))(_cuda(4, n, 64)),
    "out= transposed": lambda n: (_cuda(n, 256), _cuda(n, 256), torch.full((256, n), float("nan"), device="cuda").t()),
}


@pytest.mark.parametrize("make", list(GIVEN_OUTPUTS.values()), ids=list(GIVEN_OUTPUTS))
def test_given_outputs_are_served_in_c_for_cached_and_new_shapes(make):
    """out0= in C: a cached call and, once a plan of its class has launched, new shapes
    (a shape program), with no Python frame, the result written into the given output."""
    fn = pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(add_alpha.payload)
    for n in (80, 96):
        x, y, out = make(n)
        fn(x, y, 0.5, out0=out)
    for n in (96, 112, 144, 160, 208):  # 96: a cached plan; the others new shapes
        x, y, out = make(n)
        expected, misses = x + 0.5 * y, fn.plan_cache.misses
        got, frames = _python_frames(fn, x, y, 0.5, out0=out)
        assert got is out and frames == [] and fn.plan_cache.misses == misses
        torch.testing.assert_close(out, expected)


@triton.jit
def _square(x):
    return x * x


# (reductions entry, input of size n, torch's result) per row scheme; sizes keep block and alignment.
ROW_REDUCTIONS = {
    "row sums of squares (row_persistent)": (("sum", -1), lambda n: _cuda(n, 512), lambda x: (x * x).sum(-1)),
    "long rows (row_looped)": (("sum", -1), lambda n: _cuda(n, 4096), lambda x: (x * x).sum(-1)),
    # reduced extents past the widest tile's columns, so every shape takes the last block
    "column max (column_looped)": (("max", 0), lambda n: _cuda(n + 1024, 512), lambda x: (x * x).amax(0)),
    "sum over (0, 2), keepdim": (
        ("sum", (0, 2), True),
        lambda n: _cuda(8, n, 64),
        lambda x: (x * x).sum((0, 2), keepdim=True),
    ),
}


@pytest.mark.parametrize("case", list(ROW_REDUCTIONS))
def test_new_shapes_of_reductions_along_dims_run_in_c(case):
    """Each warm shape's plan publishes its shape program; later shapes that take the analysis's
    branches of one of them (row_looped's few-rows block compares the rows with 256 first) launch
    from it with no plan and no Python frame."""
    entry, make, reference = ROW_REDUCTIONS[case]
    fn = pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=[entry])(_square)
    for n in (80, 144):
        fn(make(n))
    for n in (96, 112, 160, 176):
        x = make(n)
        misses = fn.plan_cache.misses
        got, frames = _python_frames(fn, x)
        assert frames == [] and fn.plan_cache.misses == misses
        torch.testing.assert_close(got, reference(x), rtol=1e-4, atol=1e-3)


def test_a_row_of_another_count_of_whole_blocks_is_planned_not_served_by_a_program():
    """row_looped compiles a row's count of whole blocks into its kernel (WHOLE_BLOCKS, with the
    width its last columns are read in): the program traced on rows of three blocks of 2048 and
    16 columns launches rows of three and 32 from C, and rows of two and 16 (every other branch
    the same) miss to Python, which plans and compiles their kernel; every result torch's."""
    fn = pointwise_dynamic(promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])(_square)
    for _ in range(2):
        fn(_cuda(8, 6160))
    x = _cuda(24, 6176)
    misses = fn.plan_cache.misses
    got, frames = _python_frames(fn, x)
    assert frames == [] and fn.plan_cache.misses == misses
    torch.testing.assert_close(got, (x * x).sum(-1), rtol=1e-4, atol=1e-3)
    x = _cuda(8, 4112)
    got = fn(x)
    assert fn.plan_cache.misses == misses + 1 and fn.explain(x).compiled_blocks == 2
    torch.testing.assert_close(got, (x * x).sum(-1), rtol=1e-4, atol=1e-3)


def test_an_output_partially_overlapping_an_input_is_refused_though_its_plan_is_cached():
    base = _cuda(300)
    x, y = base[:100], _cuda(100)
    add_alpha(x, y, 0.5, out0=base[100:200])  # disjoint: a plan of this signature, served in C from now on
    got, frames = _python_frames(add_alpha, x, y, 0.5, out0=base[200:300])
    assert frames == []
    torch.testing.assert_close(got, x + 0.5 * y)
    with pytest.raises(RuntimeError, match="out0 partially overlaps input 0"):
        add_alpha(x, y, 0.5, out0=base[4:104])  # 16 bytes past x: the same signature


def test_calls_the_c_path_does_not_serve_still_come_out_right():
    x, y = _cuda(500), _cuda(500)
    for _ in range(2):
        torch.testing.assert_close(squared_error_sum(x, y), ((x - y) ** 2).sum(), rtol=1e-4, atol=1e-3)
        scalar = torch.tensor(2.0)  # a 0-d CPU tensor beside CUDA ones
        torch.testing.assert_close(add_alpha(x, scalar, 0.5), x + 1.0)
    assert not _served_by_c(squared_error_sum, x, y) and not _served_by_c(add_alpha, x, scalar, 0.5)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_with_several_gpus_the_c_path_serves_only_while_the_plans_device_is_current():
    x, y = _cuda(2048).to("cuda:1"), _cuda(2048).to("cuda:1")
    with torch.cuda.device(1):
        add_alpha(x, y, 0.5)
        current, in_python = _python_frames(add_alpha, x, y, 0.5)
    assert in_python == []  # served in C
    other, in_python = _python_frames(add_alpha, x, y, 0.5)  # cuda:0 current: Python switches devices
    assert "_call_missed" in in_python and torch.cuda.current_device() == 0
    assert current.device == other.device == x.device
    torch.testing.assert_close(other, current, rtol=0, atol=0)
    torch.testing.assert_close(current, x + 0.5 * y)


def test_a_plan_is_never_served_to_another_signature():
    x, y = _cuda(4, 300), _cuda(4, 300)
    add_alpha(x, y, 0.5)
    add_alpha(x, y, 0.5)
    others = [
        (x.double(), y, 0.5),
        (x.t(), y.t(), 0.5),
        (x[:, 1:], y[:, 1:], 0.5),
        (x, y, 2**40),
        (x[:2], y[:2], 0.5),
    ]
    for args in others:
        torch.testing.assert_close(add_alpha(*args), _reference(*args), rtol=1e-3, atol=1e-3)
    w = x.clone().requires_grad_()
    got = add_alpha(w, y, 0.5)
    assert got.requires_grad  # recorded for autograd, not served by the no-grad plan
    torch.testing.assert_close(got.detach(), x + 0.5 * y)


def test_threads_share_the_c_path():
    pairs = [(_cuda(4096), _cuda(4096)) for _ in range(8)]
    add_alpha(*pairs[0], 0.5)
    results, errors = {}, []

    def work(k):
        try:
            x, y = pairs[k]
            results[k] = [add_alpha(x, y, 0.5) for _ in range(100)]
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    assert not errors and _served_by_c(add_alpha, *pairs[0], 0.5)
    for k, (x, y) in enumerate(pairs):
        for got in results[k]:
            torch.testing.assert_close(got, x + 0.5 * y, rtol=0, atol=0)


def test_a_dispatch_mode_sees_the_c_paths_allocation():
    """Outside a dispatch mode the C path allocates from the CUDA caching allocator directly
    (aten.cpp); inside one, through torch's dispatcher, where the mode sees it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x, y = _cuda(64), _cuda(64)
    add_alpha(x, y, 0.5), add_alpha(x, y, 0.5)
    with Seen():
        out = add_alpha(x, y, 0.5)
    assert torch.ops.aten.empty_strided.default in seen
    torch.testing.assert_close(out, x + 0.5 * y)


def test_outputs_from_the_caching_allocator_are_the_callers_and_freed():
    x, y = _cuda(4096), _cuda(4096)
    add_alpha(x, y, 0.5)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    outs = [add_alpha(x, y, float(k)) for k in range(4)]
    out, frames = _python_frames(add_alpha, x, y, 0.5)
    assert frames == [] and out.device == x.device and out.untyped_storage().device == x.device
    assert torch.cuda.memory_allocated() == before + 5 * 4096 * 4
    for k in range(4):
        torch.testing.assert_close(outs[k], x + float(k) * y)
    del outs, out
    assert torch.cuda.memory_allocated() == before
