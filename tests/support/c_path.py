"""launch.c's C path on the CPU: a stand-in for cuLaunchKernel that records what a launch passes,
the launch module configured to launch through it, and plans given the hit record the C launcher
would give them, and a table of shape programs traced from such plans. Shared by
runtime/test_shape_programs.py and analysis/test_index_width_margin.py."""

import ctypes
from types import SimpleNamespace

import pytest
import torch

from tritonwise.plans import shape_programs
from tritonwise.runtime import hit_path, native
from tritonwise.runtime.arguments import call_signature
from tritonwise.runtime.launcher import CLaunch

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
    """A stand-in kernel handle per constexprs (block, GRID_STRIDE) and specialization."""
    return 0x10000 + hash((plan.constexprs, plan.index_args)) % 0xFFFF


def _launched_through_c(plan, driver) -> None:
    """Give `plan` the hit record launch.c's launcher would give it (a stand-in kernel)."""
    fmt = "i" if plan.task.index_bits == 32 else "q"
    fixed = b"".join(
        int(v).to_bytes(4 if fmt == "i" else 8, "little", signed=True).ljust(8, b"\0") for v in plan.index_args
    )
    grid = (*plan.grid, 1, 1)[:3]
    launch = CLaunch(driver.address, _function_of(plan), grid, 32 * plan.num_warps, 0, 0, driver.kinds, fixed + bytes(16))
    layouts = tuple(zip(plan.out_strides, plan.out_dtypes))
    plan.hit = hit_path.record(plan.out_shape, layouts, plan.device, launch, plan.in_extents + plan.out_extents)


class Table:
    """A function's programs as publish keeps them, traced from plans given stand-in kernels."""

    def __init__(self, module, fn, driver):
        self.module, self.fn, self.driver, self.programs, self.plans = module, fn, driver, {}, []

    def add(self, args, outs=None):
        """Plan (args, outs) by the analysis, give it a stand-in launch, trace its program; the plan."""
        outs = outs or (None,) * len(self.fn._out_index)
        plan = self.fn.plan(args, outs, collapse=True)
        _launched_through_c(plan, self.driver)
        key = call_signature(args, outs if any(o is not None for o in outs) else ())
        found = self.module.shape_class(key, len(args))
        assert found is not None
        traced = shape_programs.trace(self.fn.planner, found[1], args, outs, plan, tuple(range(len(plan.index_args))))
        if traced is not None:
            self.programs.setdefault(found[0], []).append(self.module.program(**traced[1]))
            self.plans.append(plan)
        return plan

    def call(self, args, outs=None, expected=None):
        """hit() of the call with no plan: (its result, the launch, or None where it missed)."""
        self.driver.launches.clear()
        if expected is not None:
            self.driver.n_values = len(expected.index_args)
            self.driver.index_type = ctypes.c_int32 if expected.task.index_bits == 32 else ctypes.c_int64
        result = self.module.hit({}, args, hit_path.MISS, self.programs, outs)
        if type(result) is tuple and len(result) == 2 and result[0] is hit_path.MISS:
            assert self.driver.launches == []
            return result, None
        (launch,) = self.driver.launches
        return result, launch


def _same_kernel(a, b) -> bool:
    """Whether the analysis runs one compiled kernel for two plans: generated file, constexprs
    (block, GRID_STRIDE), and Triton's classes of each index value."""
    return (
        a.task.layout_class == b.task.layout_class
        and a.constexprs == b.constexprs
        and all((x % 16 == 0, x == 1) == (y % 16 == 0, y == 1) for x, y in zip(a.index_args, b.index_args))
    )


def check_launch(table, args, outs, expected):
    """Whether the call was served; where it was, as the analysis's plan `expected` says, by the
    kernel of a traced plan that runs the same kernel."""
    result, launch = table.call(args, outs, expected)
    if launch is None:
        return False
    assert expected is not None
    kernel, grid, threads, values = launch
    assert kernel in {_function_of(p) for p in table.plans if _same_kernel(p, expected)}
    assert grid == (*expected.grid, 1, 1)[:3]
    assert threads == 32 * expected.num_warps
    given = outs is not None and any(o is not None for o in outs)
    results = outs if given else (result if isinstance(result, tuple) else (result,))
    for o, strides, dtype in zip(results, expected.out_strides, expected.out_dtypes):
        assert (o.shape, o.stride(), o.dtype) == (expected.out_shape, strides, dtype)
    operands = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    assert values == [*operands, *(o.data_ptr() for o in results), *expected.index_args]
    return True
