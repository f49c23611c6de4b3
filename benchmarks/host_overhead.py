"""Per-call host cost of small pointwise calls: tritonwise vs torch eager vs torch.compile.

    python benchmarks/host_overhead.py [--out FILE] [--no-compile]

Each case runs many calls of a 1024-element op back to back and reports microseconds per
call (the GPU work is ~2 us, so the host dominates): the median of 9 rounds, tritonwise, eager
and torch.compile interleaved in each round. A breakdown times each layer of
tritonwise's hot path on its own, and the cold first call (analysis, render, write, load;
Triton's compile excluded) is timed against a fresh cache directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch

from tritonwise.runtime.arguments import call_signature
from tritonwise.runtime.launcher import triton_entry_launcher

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from payloads import add, add_alpha, neg, polar  # noqa: E402


def per_call_us(fn, calls: int = 2000) -> float:
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def median_us(fns: list, rounds: int = 9) -> list:
    """Median over `rounds` of per_call_us for each function, the functions interleaved in every
    round so that drift in the host's speed reaches all of them alike."""
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for times, fn in zip(samples, fns):
            times.append(per_call_us(fn))
    return [statistics.median(times) for times in samples]


def cases():
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    x3, y3 = torch.randn(8, 16, 8, device="cuda"), torch.randn(16, 1, device="cuda")
    return [
        ("add 1024 fp32", lambda: add(a, b), lambda: a + b),
        ("neg 1024 fp32 (unary)", lambda: neg(a), lambda: -a),
        ("polar 1024 (two outputs)", lambda: polar(a, b), lambda: (a * torch.cos(b), a * torch.sin(b))),
        ("3-D broadcast + scalar", lambda: add_alpha(x3, y3, 0.5), lambda: torch.add(x3, y3, alpha=0.5)),
    ]


def breakdown() -> list:
    """Microseconds of each layer of a cached `add(a, b)` call, timed alone, beside Triton's
    own launcher for the same compiled kernel and torch's add."""
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    add(a, b)
    add(a, b)
    key = call_signature((a, b))
    plan = add.plan_cache.get(key)
    out = torch.empty(1024, device="cuda")
    compiled = plan.launch(plan.grid, a, b, out, *plan.index_args)
    triton_entry = triton_entry_launcher(compiled, plan.grid, plan.index_args + plan.constexprs, 0)
    layers = [
        ("call_signature (dtype, shape, stride, device, alignment)", lambda: call_signature((a, b))),
        ("plan cache lookup", lambda: add.plan_cache.get(key)),
        ("output allocation (torch.empty_strided)", lambda: torch.empty_strided((1024,), (1,), device="cuda")),
        (f"launch ({plan.direct.__qualname__.split('.')[0]})", lambda: plan.direct((a, b), (out,))),
        ("whole call", lambda: add(a, b)),
        ("for comparison: Triton's C launcher, same kernel", lambda: triton_entry((a, b), (out,))),
        ("for comparison: torch eager a + b", lambda: a + b),
    ]
    times = median_us([fn for _, fn in layers], rounds=5)
    return [(name, us) for (name, _), us in zip(layers, times)]


def cold_first_call_ms() -> float:
    """Analysis + render + atomic write + module load for a new signature in an empty cache."""
    os.environ["TRITONWISE_CACHE_DIR"] = tempfile.mkdtemp(prefix="tw-cold-")
    x = torch.randn(3, 5, 7, device="cuda")
    start = time.perf_counter()
    add_alpha._prepare((x, x.transpose(0, 2).contiguous().transpose(0, 2), 2.0), (None,), collapse=True)
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_overhead.py needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = [
        "| case | tritonwise µs/call | torch eager | torch.compile | tritonwise / eager |",
        "|---|---|---|---|---|",
    ]
    for name, ours, eager in cases():
        fns = [ours, eager]
        if not args.no_compile:
            fns.append(torch.compile(eager))
            fns[-1]()
        t_ours, t_eager, *t_compiled = median_us(fns)
        torch.testing.assert_close(ours(), eager(), msg=f"{name}: tritonwise differs from torch")
        t_compiled = t_compiled[0] if t_compiled else float("nan")
        lines.append(f"| {name} | {t_ours:.1f} | {t_eager:.1f} | {t_compiled:.1f} | {t_ours / t_eager:.2f}x |")
        print(lines[-1], flush=True)
    lines += ["", "| layer of a cached add(a, b) | µs |", "|---|---|"]
    lines += [f"| {name} | {us:.2f} |" for name, us in breakdown()]
    lines += [
        "",
        f"Cold first call (analysis + render + write + load, no Triton compile): {cold_first_call_ms():.1f} ms",
    ]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
