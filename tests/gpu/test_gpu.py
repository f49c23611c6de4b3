"""GPU correctness of every scheme, the direct launch path and int64 indexing (marked `gpu`)."""

import pytest
import torch
import triton
import triton.language as tl

from tritonwise import StridedBuffer, pointwise_dynamic

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
@triton.jit
def add_alpha(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[(0, "NO_OPMATH")])
@triton.jit
def copy(x):
    return x


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


def _close(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want)


LAYOUTS = {
    "flat": lambda: (torch.randn(1000, 37, device="cuda"), torch.randn(1000, 37, device="cuda")),
    "nd": lambda: (torch.randn(300, 129, device="cuda"), torch.randn(129, device="cuda")),
    "tile2d": lambda: (torch.randn(257, 131, device="cuda"), torch.randn(131, 257, device="cuda").t()),
    "tile2d-batched": lambda: (torch.randn(5, 66, 70, device="cuda"), torch.randn(5, 70, 66, device="cuda").transpose(1, 2)),
    "nd-rank4": lambda: (torch.randn(3, 4, 5, 33, device="cuda")[:, :, ::2], torch.randn(4, 1, 33, device="cuda")),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_scheme_matches_torch(layout):
    x, y = LAYOUTS[layout]()
    assert add_alpha.explain(x, y, 0.25).scheme == layout.split("-")[0]
    for _ in range(3):  # first call through Triton, then the direct launch path
        _close(add_alpha(x, y, 0.25), x + y * 0.25)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.bool])
def test_dtypes_on_gpu(dtype):
    a = torch.randint(0, 5, (513, 67), device="cuda").to(dtype)
    out = torch.full((67, 513), 7, device="cuda").to(dtype)
    copy(a.t(), out0=out)
    assert torch.equal(out, a.t())


def test_fp64_scalar_keeps_precision():
    x = torch.randn(1000, device="cuda", dtype=torch.float64)
    # 0.1 rounded to fp32 would be off by ~1.5e-8 relative; fp64 (with an FMA) stays near 1e-16
    torch.testing.assert_close(add_alpha(x, x, 0.1), x + x * 0.1, rtol=1e-14, atol=0)


def test_misaligned_view_gets_its_own_plan():
    base = torch.randn(4097, device="cuda")
    aligned, shifted = base[:4096], base[1:]
    for view in (aligned, shifted, aligned, shifted):
        _close(add_alpha(view, view, 1.0), view + view)


def test_polar_two_outputs_and_flip():
    r, theta = torch.rand(10000, device="cuda"), torch.randn(10000, device="cuda")
    re, im = polar(r, theta)
    _close(re, r * torch.cos(theta))
    _close(im, r * torch.sin(theta))
    a = torch.randn(300, 200, device="cuda")
    out = torch.empty_like(a)
    copy.instantiate(2)(StridedBuffer(a, strides=(-200, 1), offset=299 * 200), out0=out)
    assert torch.equal(out, a.flip(0))


def test_second_device_launches_there():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    with torch.cuda.device(0):  # the current device is not the operands'
        for _ in range(3):  # first through Triton, then the plan's own launcher
            x = torch.randn(1000, device="cuda:1")
            _close(add_alpha(x, x, 2.0), x + x * 2.0)


def test_int64_indexing_beyond_2_31_elements():
    free, _ = torch.cuda.mem_get_info()
    n = 2**31 + 64
    if free < 3 * n:
        pytest.skip("needs ~6.5 GB of free GPU memory")
    x = torch.empty(2, n // 2, dtype=torch.int8, device="cuda")
    x.random_(-100, 100)
    out = torch.empty(n // 2, 2, dtype=torch.int8, device="cuda")
    plan = copy.explain(x.t(), out0=out)
    assert plan.index_bits == 64
    copy(x.t(), out0=out)
    assert torch.equal(out[-1000:], x.t()[-1000:]) and torch.equal(out[:1000], x.t()[:1000])
    del x, out
    torch.cuda.empty_cache()


def test_new_shape_of_same_class_reuses_the_compiled_kernel():
    from pathlib import Path

    from tritonwise.runtime import cache, inventory, kernels, loader

    x1, x2 = torch.randn(208, 304, device="cuda"), torch.randn(272, 400, device="cuda")
    _close(add_alpha(x1, x1.t().contiguous().t(), 1.0), x1 + x1)
    path = add_alpha.explain(x1, x1.t().contiguous().t(), 1.0).path
    _close(add_alpha(x2, x2.t().contiguous().t(), 1.0), x2 + x2)
    assert add_alpha.explain(x2, x2.t().contiguous().t(), 1.0).path == path
    if kernels.store_enabled():
        compiled = [p for p in inventory.kernels(cache.configured_dir()) if p.name.startswith(Path(path).stem + ".")]
    else:  # Triton's JIT compiled it
        kernel = getattr(loader._modules[(path, "gpu")], add_alpha.explain(x2, x2.t().contiguous().t(), 1.0).kernel)
        compiled = kernel.device_caches[torch.cuda.current_device()][0]
    assert len(compiled) == 1  # one binary serves both shapes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32, torch.int64])
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reductions_on_gpu(dtype, kind):
    @triton.jit
    def squared(x, y):
        return (x - y) * (x - y)

    fn = pointwise_dynamic(squared, promotion_methods=[(0, 1, "DEFAULT")], reductions=[kind])
    x = torch.randint(-50, 50, (1000, 257), device="cuda").to(dtype)
    y = torch.randint(-50, 50, (257,), device="cuda").to(dtype)
    elementwise = ((x.double() - y.double()) ** 2).to(dtype)
    want = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[kind](elementwise)
    got = fn(x, y)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.double(), want.double(), rtol=1e-3 if kind == "sum" else 0, atol=0)


def test_deterministic_sum_on_gpu_is_reproducible():
    @triton.jit
    def squared(x, y):
        return (x - y) * (x - y)

    fn = pointwise_dynamic(squared, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"], deterministic=True)
    x, y = torch.randn(2**22, device="cuda"), torch.randn(2**22, device="cuda")
    first = fn(x, y)
    assert all(torch.equal(fn(x, y), first) for _ in range(5))
    torch.testing.assert_close(first, ((x - y) ** 2).sum(), rtol=1e-4, atol=0)


def test_torch_op_under_inductor_and_cuda_graphs():
    op = add_alpha.as_torch_op("tritonwise_gpu_test::add_alpha")
    x, y = torch.randn(256, 300, device="cuda"), torch.randn(300, device="cuda")
    compiled = torch.compile(lambda a, b: op(a, b, 0.5).relu(), fullgraph=True)
    _close(compiled(x, y), (x + y * 0.5).relu())
    add_alpha(x, y, 0.5)  # warm-up: generate, compile, build the launch plan
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = add_alpha(x, y, 0.5)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    _close(static_out, x + y * 0.5)


def test_a_file_removed_after_its_check_compiles_from_the_text_checked(tmp_path, monkeypatch):
    """Triton compiles the kernel from the text the cache verified (given to linecache), not from
    the file read again: a `cache clear` between the check and the compile changes nothing."""
    import sys

    from tests.support.cache_races import remove_each_file_once_verified
    from tritonwise.plans import binder

    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITONWISE_KERNEL_STORE", "0")  # through Triton's JIT, which reads the source
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    remove_each_file_once_verified(monkeypatch, binder)
    fn = pointwise_dynamic(add_alpha.payload, is_tensor=[True, True, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
    x, y = torch.randn(37, 129, device="cuda"), torch.randn(129, device="cuda")
    _close(fn(x, y, 0.5), x + y * 0.5)
    assert not list(tmp_path.glob("*.py")) and not (tmp_path / "__pycache__").exists()
