"""launch.c's C path on the CPU: a stand-in for cuLaunchKernel that records what a launch passes,
the launch module configured to launch through it, and plans given the hit record the C launcher
would give them. Shared by runtime/test_layout_c_path.py and analysis/test_index_width_margin.py."""

import ctypes
from types import SimpleNamespace

import pytest
import torch

from tritonwise.runtime import hit_path, native
from tritonwise.runtime.arguments import call_signature

PARAMS = ctypes.POINTER(ctypes.c_void_p)
LAUNCH_KERNEL = ctypes.CFUNCTYPE(
    ctypes.c_int, *[ctypes.c_void_p] + [ctypes.c_uint] * 7, ctypes.c_void_p, PARAMS, ctypes.c_void_p
)


class Driver:
    """cuLaunchKernel's stand-in: reads a kernel's parameters as the driver would: the payload's
    operands and outputs as `kinds` says (launch.c's kinds: "p" a pointer, "f" an fp32 scalar),
    then `n_values` index arguments of `index_type`."""

    def __init__(self, kinds: bytes = b"ppfp"):
        self.launches, self.n_values, self.index_type, self.kinds = [], 0, ctypes.c_int32, kinds
        self.entry = LAUNCH_KERNEL(self._launch)
        self.address = ctypes.cast(self.entry, ctypes.c_void_p).value

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        types = [ctypes.c_uint64 if kind == ord("p") else ctypes.c_float for kind in self.kinds]
        types += [self.index_type] * self.n_values
        values = [ctypes.cast(params[k], ctypes.POINTER(t)).contents.value for k, t in enumerate(types)]
        self.launches.append((function, (gx, gy, gz), bx, values))
        return 0


@pytest.fixture(scope="module")
def module():
    module = native.launch_module()
    if module is None:
        pytest.skip("no C compiler or Python headers: launch.c cannot be built here")
    hooks = SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    hit_path.configure(module, raw_stream=lambda device: 0x5000, hooks=hooks, current_device=None)
    yield module
    if hit_path.entry is not None:  # a GPU process already serves hits: give back the real objects
        hit_path.configure(module)


def _function_of(plan) -> int:
    """A stand-in kernel handle per block and specialization."""
    return 0x10000 + hash((plan.task.tiling.block, plan.index_args)) % 0xFFFF


def _launched_through_c(plan, driver) -> None:
    """Give `plan` the hit record launch.c's launcher would give it (a stand-in kernel)."""
    fmt = "i" if plan.task.index_bits == 32 else "q"
    fixed = b"".join(
        int(v).to_bytes(4 if fmt == "i" else 8, "little", signed=True).ljust(8, b"\0") for v in plan.index_args
    )
    launch = (
        driver.address,
        _function_of(plan),
        *plan.grid,
        1,
        1,
        32 * plan.num_warps,
        0,
        0,
        driver.kinds,
        fixed + bytes(16),
    )
    layouts = tuple(zip(plan.out_strides, plan.out_dtypes))
    plan.hit = hit_path.record(plan.out_shape, layouts, plan.device, launch[:2] + launch[2:5] + launch[5:])


def _derive(fn, args):
    key, default = call_signature(args), torch.get_default_dtype()
    return fn.planner.new_shapes.layouts.derive(key, default)
