"""Calls whose compiled-kernel identity package/test_kernel_store.py checks, in its own process and
in a child process (which imports this module): the payload, the calls and how a launch of each
is built on the CPU."""

import torch
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic
from tritonwise.codegen.render import payload_alias
from tritonwise.runtime import kernels, loader

SM90, SM100 = ("cuda", 90, 32), ("cuda", 100, 32)


@triton.jit
def store_axpby(x, y, a, n, flag):
    return tl.where(flag, x * a + y, y - n)


AXPBY_KINDS = [True, True, False, False, False]
AXPBY = pointwise_dynamic(store_axpby, is_tensor=AXPBY_KINDS, promotion_methods=[(0, 1, 2, "DEFAULT")])
CALLS = {
    "nd aligned": lambda: (torch.randn(64, 32), torch.randn(32), 2.0, 3, True),
    "flat, a misaligned pointer, an i64": lambda: (torch.randn(65)[1:], torch.randn(64), 2.0, 2**40, False),
    "tile2d, n == 1": lambda: (torch.randn(5, 7).t(), torch.randn(7, 5), 0.5, 1, True),
}


def launch_of(fn, *args, **outs):
    """(GPU-module kernel, every value a launch passes it, plan) for a call, built on the CPU."""
    outs = fn.outputs(outs)
    plan = fn.plan(args, outs, True)
    alias = payload_alias(plan.spec.payload_name, plan.spec.kernel_name)
    module = loader.load(plan.path, plan.spec.kernel_name, alias, fn.payload_info, "gpu")
    return getattr(module, plan.spec.kernel_name), plan.kernel_values(args, outs), plan


def identity_of(call: str, target=SM90):
    kernel, values, plan = launch_of(AXPBY, *CALLS[call]())
    return kernel, kernels.identity(plan.spec.file_name, kernel, values, plan.num_warps, target)
