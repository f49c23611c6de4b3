"""The own launcher (launch.c) on the CPU: a stand-in for cuLaunchKernel reads the parameter
block the way the driver does, for a kernel signature as Triton records it."""

import ctypes
from types import SimpleNamespace

import pytest
import torch

from tritonwise.runtime import cuda_driver, launcher, native

SIGNATURE = {
    "x_ptr": "*fp32",
    "n": "i64",
    "s": "fp32",
    "flag": "u1",
    "out0_ptr": "*fp16",
    "size0": "i32",
    "num_tiles": "i32",
    "BLOCK": "constexpr",
}
TAIL = (1000, 4, 1024)  # size0, num_tiles, BLOCK
# What the driver reports: the listed parameters without BLOCK, then two scratch pointers.
PARAM_SIZES = [8, 8, 4, 1, 8, 4, 4, 8, 8]
PARAM_TYPES = [ctypes.c_uint64, ctypes.c_int64, ctypes.c_float, ctypes.c_uint8, ctypes.c_uint64]
PARAM_TYPES += [ctypes.c_int32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64]

LAUNCH_KERNEL = ctypes.CFUNCTYPE(
    ctypes.c_int,
    *[ctypes.c_void_p] + [ctypes.c_uint] * 7,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.c_void_p,
)


class _FakeDriver:
    """cuLaunchKernel as a C-callable stand-in: records the launch configuration and reads
    each parameter through the pointer array, as the real driver would."""

    def __init__(self, result=0):
        self.launches, self.result = [], result
        self.cuLaunchKernel = LAUNCH_KERNEL(self._launch)

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values = [ctypes.cast(params[i], ctypes.POINTER(t)).contents.value for i, t in enumerate(PARAM_TYPES)]
        self.launches.append(((function, gx, gy, gz, bx, shared, stream), values))
        return self.result

    def cuGetErrorString(self, code, text):
        return 0


class _Pointer:
    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def _compiled(**changes):
    signature = dict(SIGNATURE, **changes)
    metadata = SimpleNamespace(num_warps=4, shared=0, num_ctas=1)
    return SimpleNamespace(src=SimpleNamespace(signature=signature), function=0x1234, name="k", metadata=metadata)


@pytest.fixture
def fake_driver(monkeypatch):
    if native.launch_module() is None:
        pytest.skip("no C compiler or Python headers: launch.c cannot be built here")
    fake = _FakeDriver()
    monkeypatch.setattr(cuda_driver, "driver", lambda: fake)
    monkeypatch.setattr(cuda_driver, "param_sizes", lambda function: PARAM_SIZES)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0x5000 + device, raising=False)
    return fake


def test_each_call_packs_its_own_operands(fake_driver):
    launch = launcher.own_launcher(_compiled(), (4,), TAIL, 0, 4, hooked=None)
    for k in range(2):
        launch((_Pointer(0x7F0000001000 + k), -(2**40) + k, 0.5 * k, bool(k)), [_Pointer(0x2000 + k)])
    assert fake_driver.launches == [
        ((0x1234, 4, 1, 1, 128, 0, 0x5000), [0x7F0000001000, -(2**40), 0.0, 0, 0x2000, 1000, 4, 0, 0]),
        ((0x1234, 4, 1, 1, 128, 0, 0x5000), [0x7F0000001001, -(2**40) + 1, 0.5, 1, 0x2001, 1000, 4, 0, 0]),
    ]


def test_a_rebound_launcher_runs_the_same_kernel_on_its_own_grid_and_tail(fake_driver):
    launch = launcher.own_launcher(_compiled(), (4,), TAIL, 0, 4, hooked=None)
    rebound = launch.rebind((9,), (2222, 9, 1024), None)
    operands = ((_Pointer(0x1000), 3, 1.5, True), [_Pointer(0x2000)])
    rebound(*operands)
    launch(*operands)
    assert fake_driver.launches == [
        ((0x1234, 9, 1, 1, 128, 0, 0x5000), [0x1000, 3, 1.5, 1, 0x2000, 2222, 9, 0, 0]),
        ((0x1234, 4, 1, 1, 128, 0, 0x5000), [0x1000, 3, 1.5, 1, 0x2000, 1000, 4, 0, 0]),
    ]
    assert rebound.c_record.grid == (9, 1, 1) and launch.c_record.grid == (4, 1, 1)


def test_an_index_value_that_does_not_fit_its_parameter_raises(fake_driver):
    launch = launcher.own_launcher(_compiled(), (4,), TAIL, 0, 4, hooked=None)
    with pytest.raises(ValueError, match="does not fit"):
        launch.rebind((4,), (2**31, 4, 1024), None)  # size0 is an int32


def test_a_value_that_does_not_fit_its_parameter_raises(fake_driver):
    launch = launcher.own_launcher(_compiled(flag="i8"), (4,), TAIL, 0, 4, hooked=None)
    with pytest.raises(OverflowError, match="parameter 3"):
        launch((_Pointer(16), 1, 1.0, 300), [_Pointer(32)])
    assert fake_driver.launches == []


def test_a_failed_launch_raises_naming_the_kernel(fake_driver):
    fake_driver.result = 700
    launch = launcher.own_launcher(_compiled(), (4,), TAIL, 0, 4, hooked=None)
    with pytest.raises(cuda_driver.CudaError, match="launching k: CUDA error 700"):
        launch((_Pointer(16), 1, 1.0, True), [_Pointer(32)])


@pytest.mark.parametrize(
    "sizes, why",
    [
        ([8, 8, 4, 1, 8, 4], "fewer parameters than the signature lists"),
        ([8, 8, 4, 1, 8, 4, 4, 4, 8], "an unlisted parameter that is not a pointer"),
        ([8, 4, 4, 1, 8, 4, 4, 8, 8], "a parameter of another size"),
        (None, "a driver that cannot list parameters"),
    ],
)
def test_a_kernel_the_layout_cannot_be_proven_for_is_left_to_triton(fake_driver, monkeypatch, sizes, why):
    monkeypatch.setattr(cuda_driver, "param_sizes", lambda function: sizes)
    assert launcher.own_launcher(_compiled(), (4,), TAIL, 0, 4, hooked=None) is None, why


@pytest.mark.parametrize("change", [{"s": "fp16"}, {"s": "constexpr"}])
def test_fp16_scalars_and_constexpr_operands_are_left_to_triton(fake_driver, change):
    assert launcher.own_launcher(_compiled(**change), (4,), TAIL, 0, 4, hooked=None) is None
