"""A call over no elements launches nothing, on every path: the plan path (first call, cached
call, new shape), a plan that holds a GPU launcher (as one lent by an earlier plan of its kernel
does), launch.c's launch and the C hit path (stand-in driver, see test_hit_path.py). The CUDA
driver refuses a launch with an empty grid (`CUDA error 1: invalid argument`), so a launch that
happens is a failure even where the kernel would write nothing."""

import ctypes
from collections import OrderedDict

import pytest
import torch
import triton
import triton.language as tl

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.runtime import arguments, dispatch, hit_path, native
from tritonwise.runtime.launcher import CLaunch

SHAPES = [(0,), (4, 0), (2, 0, 3)]


@pytest.fixture
def launches(monkeypatch):
    """Every launch a LaunchPlan makes (the generated module's launch, in the interpreter)."""
    made = []
    original = dispatch.LaunchPlan._launch

    def counting(plan, inputs, outputs):
        made.append(plan.grid)
        return original(plan, inputs, outputs)

    monkeypatch.setattr(dispatch.LaunchPlan, "_launch", counting)
    return made


def _exp_and_mul():
    @pointwise_dynamic(promotion_methods=[(0, "INT_TO_FLOAT"), (0, 1, "DEFAULT")])
    @triton.jit
    def exp_and_mul(x, y):
        return tl.exp(x.to(tl.float32)), x * y

    return exp_and_mul


def _torch_exp_and_mul(x, y):
    return torch.exp(x), x * y


@pytest.mark.parametrize("given", [False, True], ids=["new outputs", "given outputs"])
def test_empty_shapes_launch_nothing_first_cached_and_after_other_shapes(launches, given):
    f = _exp_and_mul()
    for shape in SHAPES + [(5,)] + SHAPES + [(3, 4)] + SHAPES:  # first calls, new shapes, cached calls
        x, y = torch.randn(shape), torch.randn(shape)
        expected = _torch_exp_and_mul(x, y)
        before = len(launches)
        kwargs = {f"out{k}": poisoned_like(e) for k, e in enumerate(expected)} if given else {}
        got = f(x, y, **kwargs)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype and g.stride() == e.stride()
            torch.testing.assert_close(g, e)
        assert len(launches) == before + (0 if 0 in shape else 1), shape


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("given", [False, True], ids=["new outputs", "given outputs"])
def test_a_plan_holding_a_launcher_launches_nothing_for_no_elements(shape, given):
    """On the GPU a plan of no elements can hold a launcher (lent by an earlier plan of its
    kernel, siblings.Siblings); its calls must still launch nothing."""
    f = _exp_and_mul()
    x, y = torch.randn(shape), torch.randn(shape)
    f(x, y)
    plan = f.plan_cache.get(arguments.call_signature((x, y)))
    launched = []
    plan.use_launcher(lambda inputs, outputs: launched.append(len(outputs)))
    assert plan.fast is None and plan.hit is None  # no fast path and no C record to launch from
    kwargs = {"out0": torch.empty(shape), "out1": torch.empty(shape)} if given else {}
    got = f(x, y, **kwargs)
    assert [g.shape for g in got] == [torch.Size(shape)] * 2
    assert launched == []


def test_an_instantiated_function_launches_nothing_for_no_elements(launches):
    f = _exp_and_mul()
    x, y = torch.randn(2, 0, 3), torch.randn(2, 0, 3)
    out0, out1 = torch.empty(2, 0, 3), torch.empty(2, 0, 3)
    for _ in range(2):
        assert f.instantiate(3)(x, y, out0=out0, out1=out1) == (out0, out1)
    assert launches == []


LAUNCH_KERNEL = ctypes.CFUNCTYPE(
    ctypes.c_int, *[ctypes.c_void_p] + [ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)


class FakeDriver:
    """cuLaunchKernel as the driver answers a launch: CUDA_ERROR_INVALID_VALUE for an empty grid."""

    def __init__(self):
        self.grids = []
        self.cuLaunchKernel = LAUNCH_KERNEL(self._launch)
        self.address = ctypes.cast(self.cuLaunchKernel, ctypes.c_void_p).value

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.grids.append((gx, gy, gz))
        return 1 if 0 in (gx, gy, gz) else 0


@pytest.fixture
def module():
    module = native.launch_module()
    if module is None:
        pytest.skip("no C compiler or Python headers: launch.c cannot be built here")
    hit_path.configure(module, raw_stream=lambda device: 0, hooks=None, current_device=None)
    yield module
    if hit_path.entry is not None:  # a GPU process already serves hits: give back the real objects
        hit_path.configure(module)


FIXED = bytes(ctypes.c_int32(0)).ljust(8, b"\0") + bytes(16)


@pytest.mark.parametrize("grid", [(0, 1, 1), (4, 0, 1), (2, 3, 0)])
def test_launch_c_launches_nothing_on_an_empty_grid(module, grid):
    driver = FakeDriver()
    x, out = torch.empty(0), torch.empty(0)
    code = module.launch(driver.address, 0x1234, *grid, 128, 0, 0, b"pp", FIXED, (x,), (out,))
    assert code == 0 and driver.grids == []
    module.launch(driver.address, 0x1234, 1, 1, 1, 128, 0, 0, b"pp", FIXED, (x,), (out,))
    assert driver.grids == [(1, 1, 1)]  # the stand-in does count launches


@pytest.mark.parametrize("shape", SHAPES)
def test_the_c_hit_path_launches_nothing_for_a_record_of_no_elements(module, shape):
    driver = FakeDriver()
    x = torch.randn(shape)
    strides = torch.empty(shape).stride()
    launch = CLaunch(driver.address, 0x1234, (0, 1, 1), 128, 0, 0, b"pp", FIXED)
    record = hit_path.record(shape, ((strides, torch.float32),), torch.device("cpu"), launch)
    plans = OrderedDict({arguments.call_signature((x,)): type("Plan", (), {"hit": record})()})
    out = module.hit(plans, (x,), hit_path.MISS)
    assert isinstance(out, torch.Tensor) and out.shape == shape and out.dtype == torch.float32
    assert driver.grids == []
