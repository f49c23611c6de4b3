"""The launch of a cached 1024-element add, layer by layer, timed without a GPU backlog.

    python -m benchmarks.launch_layers

Every layer's result is checked before anything is timed: a launch against torch's `a + b` (its
output poisoned first), the signature against call_signature's; a wrong answer stops the run
with a non-zero exit. The C layers: the signature alone, with the plan lookup, hit() (signature,
lookup, allocation, launch) with and without the output given, and the whole call, whose C
__call__ finds a repeated call in its plan index (runtime/index.h) without building the signature. "host only": 200 calls
after a synchronize, the clock stopped before synchronizing, so the GPU's pace cannot enter;
"back to back": 2000 calls then a synchronize (harness.py). Each figure is the median of 7
rounds, every layer timed in each round. The last line gives each kernel's own GPU time, from
replaying 100 launches captured in a CUDA graph.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys

import torch

os.environ.setdefault("TRITONWISE_ATEN", "wait")  # the C layers as a process with the helpers built runs them
from benchmarks.harness import (  # noqa: E402
    WrongAnswer,
    check_against,
    gpu_us_per_kernel,
    host_only_us,
    median_us,
    per_call_us,
)
from benchmarks.payloads import add  # noqa: E402
from tritonwise.runtime import cuda_driver, hit_path, native  # noqa: E402
from tritonwise.runtime.arguments import call_signature  # noqa: E402
from tritonwise.runtime.launcher import KernelParameters, triton_entry_launcher  # noqa: E402


def layers(a, b) -> list:
    """(name, call) of each layer of a cached add(a, b), each checked against torch."""
    add(a, b)
    add(a, b)
    plan = add.plan_cache.get(call_signature((a, b)))
    out = torch.empty(1024, device="cuda")
    compiled = plan.launch(plan.grid, a, b, out, *plan.index_args, *plan.constexprs, plan.num_warps)
    tail = plan.index_args + plan.constexprs
    parameters = KernelParameters(compiled, 2, len(tail))
    kinds, fixed = parameters.kinds(), parameters.fixed_slots(tail)
    cu_launch_kernel = ctypes.cast(cuda_driver.driver().cuLaunchKernel, ctypes.c_void_p).value
    c_launch, function, grid = native.launch_module().launch, compiled.function, plan.grid[0]
    threads, stream = 32 * compiled.metadata.num_warps, torch.cuda.current_stream().cuda_stream
    triton_launch = triton_entry_launcher(compiled, plan.grid, tail, 0)
    module, plans, key = native.launch_module(), add.plan_cache.by_key, call_signature((a, b))
    rows = [  # (name, call, the tensor the call writes; None: the call returns its result)
        ("launch.c alone (parameters packed, driver launch)",
         lambda: c_launch(cu_launch_kernel, function, grid, 1, 1, threads, 0, stream, kinds, fixed, (a, b), (out,)),
         out),
        ("own launcher (adds the hook check and the stream)", lambda: plan.direct((a, b), (out,)), out),
        ("Triton's C launcher", lambda: triton_launch((a, b), (out,)), out),
        ("C: hit() with the output given (no allocation)", lambda: module.hit(plans, (a, b), hit_path.MISS, {}, (out,)),
         out),
        ("C: hit() (signature, lookup, allocation, launch)", lambda: module.hit(plans, (a, b), hit_path.MISS), None),
        ("whole add(a, b) (C __call__: plan index, allocation, launch)", lambda: add(a, b), None),
        ("torch eager torch.add(a, b, out=out)", lambda: torch.add(a, b, out=out), out),
        ("torch eager a + b", lambda: a + b, None),
    ]  # fmt: skip
    add(a, b, out0=out), add(a, b, out0=out)  # the plan of a call given its output
    for name, call, written in rows:
        if written is not None:
            written.fill_(math.nan)
        result = call()
        check_against(a + b, result if written is None else written, name)
    keyed = [
        ("C: the signature alone", lambda: module.signature((a, b))),
        ("C: the signature and the plan lookup", lambda: plans.get(module.signature((a, b)))),
    ]
    if keyed[0][1]() != key or keyed[1][1]() is not plan:
        raise WrongAnswer("the C signature is not call_signature's, or finds another plan")
    rows = keyed + rows
    return [(row[0], row[1]) for row in rows]


def main() -> int:
    if not torch.cuda.is_available():
        print("launch_layers needs a CUDA GPU", file=sys.stderr)
        return 2
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    rows = layers(a, b)
    fns = [fn for _, fn in rows]
    host_only, back_to_back = median_us(fns, 7, host_only_us), median_us(fns, 7, per_call_us)
    print("| µs per call (median of 7 rounds) | host only | back to back |\n|---|---|---|")
    for (name, _), ho, bb in zip(rows, host_only, back_to_back):
        print(f"| {name} | {ho:.2f} | {bb:.2f} |")
    ours, eager = gpu_us_per_kernel(lambda: add(a, b)), gpu_us_per_kernel(lambda: a + b)
    print(f"\nGPU time per kernel (CUDA graph replay): tritonwise add {ours:.2f} µs, eager add {eager:.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
