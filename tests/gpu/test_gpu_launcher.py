"""The plan's own launcher (cuLaunchKernel through ctypes) against torch, call after call
(marked `gpu`). Every test first proves the own launcher is the one in use."""

import ctypes
import threading

import pytest
import torch
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic
from tritonwise.strided_buffer import StridedBuffer
from tritonwise.runtime import cuda_driver
from tritonwise.runtime.arguments import call_signature

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pointwise_dynamic(is_tensor=[True, False, False, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
@triton.jit
def scaled_shift(x, n, s, flag):
    return tl.where(flag, x * s + n, x - n)


@pointwise_dynamic(promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
@triton.jit
def polar(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
@triton.jit
def squared_error_sum(x, y):
    d = x - y
    return d * d


def _launcher_of(fn, *args, **outs):
    key = call_signature(args, tuple(outs.get(f"out{k}") for k in range(fn.schema.num_outputs())))
    plan = fn.plan_cache.get(key)
    return getattr(plan.direct, "__qualname__", "")


def _own_launcher_in_use(fn, *args, **outs):
    assert _launcher_of(fn, *args, **outs).startswith("own_launcher"), _launcher_of(fn, *args, **outs)


@pytest.mark.parametrize("n", [3, -7, 2**40])
@pytest.mark.parametrize("flag", [True, False])
def test_scalars_of_every_kind_reach_the_kernel(n, flag):
    for s in (0.5, -2.25, 3.0):
        x = torch.randn(67, 33, device="cuda")[:, 1:]
        want = x * s + n if flag else x - n
        torch.testing.assert_close(scaled_shift(x, n, s, flag), want)
    _own_launcher_in_use(scaled_shift, x, n, s, flag)


def test_given_outputs_are_written_call_after_call():
    for _ in range(3):
        r, theta = torch.randn(300, 7, device="cuda"), torch.randn(7, device="cuda")
        out0 = torch.full((7, 300), float("nan"), device="cuda").t()
        out1 = torch.full((300, 7), float("nan"), device="cuda")
        polar(r, theta, out0=out0, out1=out1)
        torch.testing.assert_close(out0, r * torch.cos(theta))
        torch.testing.assert_close(out1, r * torch.sin(theta))
    _own_launcher_in_use(polar, r, theta, out0=out0, out1=out1)


def test_reduction_accumulates_afresh_each_call():
    for _ in range(3):
        x, y = torch.randn(4097, device="cuda"), torch.randn(4097, device="cuda")
        torch.testing.assert_close(squared_error_sum(x, y), ((x - y) ** 2).sum(), rtol=1e-5, atol=1e-3)
    _own_launcher_in_use(squared_error_sum, x, y)


def test_a_new_thread_launches_a_cached_plan():
    x = torch.randn(1000, device="cuda")
    scaled_shift(x, 1, 2.0, True)
    scaled_shift(x, 1, 2.0, True)
    _own_launcher_in_use(scaled_shift, x, 1, 2.0, True)
    results, errors = [], []

    def worker():
        try:
            cuda_driver.driver().cuCtxSetCurrent(ctypes.c_void_p(0))  # as a thread new to CUDA has it
            results.append(scaled_shift(x, 5, -1.5, True))
            torch.cuda.synchronize()
        except Exception as e:  # reported below
            errors.append(e)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert not errors, errors
    torch.testing.assert_close(results[0], x * -1.5 + 5)


def test_launch_hooks_still_see_every_launch():
    from triton import knobs

    x = torch.randn(1000, device="cuda")
    scaled_shift(x, 1, 2.0, False)
    scaled_shift(x, 1, 2.0, False)
    _own_launcher_in_use(scaled_shift, x, 1, 2.0, False)
    seen = []

    def hook(metadata):
        seen.append(metadata)

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        torch.testing.assert_close(scaled_shift(x, 4, 2.0, False), x - 4)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert len(seen) == 1


def test_a_0d_cpu_tensor_beside_cuda_tensors_acts_as_a_scalar_in_a_reduction():
    for _ in range(2):
        x, y = torch.randn(3000, device="cuda"), torch.tensor(0.5)
        torch.testing.assert_close(squared_error_sum(x, y), ((x - y.cuda()) ** 2).sum(), rtol=1e-5, atol=1e-3)


def _fresh(payload, **options):
    """A new pointwise function (no plans yet) of `payload`, so its first launch runs under the test."""
    return pointwise_dynamic(payload, **options)


def test_first_launches_while_launch_c_builds_go_through_ctypes_and_keep_no_launcher(monkeypatch):
    from tritonwise.runtime import native

    shift = _fresh(scaled_shift.payload, is_tensor=[True, False, False, False], promotion_methods=[(0, 1, 2, "DEFAULT")])
    two = _fresh(polar.payload, promotion_methods=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")])
    reduce = _fresh(squared_error_sum.payload, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])
    base, y, z = torch.randn(67, 33, device="cuda"), torch.randn(4097, device="cuda"), torch.randn(4097, device="cuda")
    x, buffer = base[:, 1:], StridedBuffer(base, (67, 32), (33, 1), offset=1)  # the same elements
    r, theta = torch.randn(300, 7, device="cuda"), torch.randn(7, device="cuda")
    out0 = torch.full((7, 300), float("nan"), device="cuda").t()

    def check():
        torch.testing.assert_close(shift(x, 2**40, -2.25, True), x * -2.25 + 2**40)
        torch.testing.assert_close(shift(x, -7, 0.5, False), x + 7)
        torch.testing.assert_close(shift(x, 0, 1e300, True), x * float("inf"))  # past fp32: inf, as launch.c passes it
        torch.testing.assert_close(shift(buffer, 1, 2.0, True), x * 2.0 + 1)
        out0.fill_(float("nan"))
        got = two(r, theta, out0=out0)
        torch.testing.assert_close(got[0], r * torch.cos(theta))
        torch.testing.assert_close(got[1], r * torch.sin(theta))
        torch.testing.assert_close(two(r, theta)[0], r * torch.cos(theta))
        torch.testing.assert_close(reduce(y, z), ((y - z) ** 2).sum(), rtol=1e-5, atol=1e-3)

    monkeypatch.setattr(native, "launch_build_pending", lambda: True)
    for _ in range(2):
        check()
    assert _launcher_of(shift, x, 2**40, -2.25, True) == ""  # no launcher kept: the next call asks again
    assert _launcher_of(two, r, theta, out0=out0) == ""
    monkeypatch.undo()  # launch.c built: the next call takes its launcher
    check()
    _own_launcher_in_use(shift, x, 2**40, -2.25, True)
    _own_launcher_in_use(two, r, theta, out0=out0)
    _own_launcher_in_use(reduce, y, z)
    # the plan first run in the window was traced once it took launch.c's launcher: a new shape of
    # its class runs as a shape program
    assert two.explain(torch.randn(301, 7, device="cuda"), theta).rung == "shape program"
