"""Per-call host cost of small pointwise calls: tritonwise vs torch eager vs torch.compile.

    python -m benchmarks.host_overhead [--out FILE] [--no-compile]

Every case and launch layer is checked against torch before anything is timed; a wrong answer
stops the run with a non-zero exit.

Each case runs many calls of a 1024-element op back to back and reports microseconds per
call (the GPU work is ~2 us, so the host dominates): the median of 9 rounds, tritonwise, eager
and torch.compile interleaved in each round. A breakdown times each layer of
tritonwise's hot path on its own, and the cold first call (analysis, render, write, load;
Triton's compile excluded) is timed against a fresh cache directory.

The ATen helpers (tritonwise/runtime/aten.py) are built before the first launch, so every
timed call uses them unless TRITONWISE_ATEN=0 is set; the breakdown times a whole add with them
on and off side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import torch

os.environ.setdefault("TRITONWISE_ATEN", "wait")  # read when the first plan launches
from benchmarks import launch_layers  # noqa: E402
from benchmarks.harness import check_against, gpu_us_per_kernel, median_call_us, median_us, report, torch_compiled  # noqa: E402
from benchmarks.payloads import add, add_alpha, polar, row_sum_of_squares, squared_error_sum  # noqa: E402
from tritonwise.runtime import aten, hit_path, native  # noqa: E402
from tritonwise.runtime.arguments import call_signature  # noqa: E402


def cases():
    """Issue 13's five cases, then two outputs (polar), a fused reduction, an in-place add (a
    given output, as FlagGems' add_ passes it) and two reductions along dims split in parts (a
    few rows, a vector): (name, tritonwise call, eager call, torch's answer without side effects)."""
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    p, q = torch.randn(4, 1, 64, device="cuda"), torch.randn(8, 1, device="cuda")
    x3, y3 = torch.randn(8, 16, 8, device="cuda"), torch.randn(16, 1, device="cuda")
    m, n = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    i8 = torch.randint(-100, 100, (1024,), device="cuda", dtype=torch.int8)
    c = torch.randn(1024, device="cuda")  # updated in place, by both sides (values drift; time does not)
    rows = [
        ("add 1024 fp32 + alpha", lambda: add_alpha(a, b, 0.5), lambda: torch.add(a, b, alpha=0.5)),
        ("broadcast (4,1,64) + (8,1) + alpha", lambda: add_alpha(p, q, 0.5), lambda: torch.add(p, q, alpha=0.5)),
        ("broadcast (8,16,8) + (16,1) + alpha", lambda: add_alpha(x3, y3, 0.5), lambda: torch.add(x3, y3, alpha=0.5)),
        ("64x64 + a transposed 64x64", lambda: add(m, n.t()), lambda: m + n.t()),
        ("int8 + fp32, 1024", lambda: add(i8, a), lambda: i8 + a),
        ("polar 1024 (two outputs)", lambda: polar(a, b), lambda: (a * torch.cos(b), a * torch.sin(b))),
        ("sum((x-y)**2) fused, 1024", lambda: squared_error_sum(a, b), lambda: ((a - b) ** 2).sum()),
    ]
    in_place = ("in place: x += 0.5 * y, 1024", lambda: add_alpha(c, b, 0.5, out0=c), lambda: c.add_(b, alpha=0.5))
    few_rows, vector = torch.randn(8, 2**16, device="cuda"), torch.randn(2**16, device="cuda")
    split = [
        ("sum(x*x, -1) of 8x2^16, split in parts", lambda: row_sum_of_squares(few_rows), lambda: (few_rows**2).sum(-1)),
        ("sum(x*x, -1) of a 2^16 vector, split", lambda: row_sum_of_squares(vector), lambda: (vector**2).sum(-1)),
    ]
    return [(*row, row[2]) for row in rows] + [(*in_place, lambda: c + 0.5 * b)] + [(*row, row[2]) for row in split]


def check_cases(chosen: list) -> None:
    """Each case's tritonwise call against torch's answer, taken before the call (the in-place
    case writes the operand that its answer reads)."""
    for name, ours, _, answer in chosen:
        expected = answer()
        check_against(expected, ours(), name)


def _graph_pair(ours, eager) -> str:
    try:
        return f"{gpu_us_per_kernel(ours):.2f} / {gpu_us_per_kernel(eager):.2f}"
    except Exception as e:  # report and go on: capture is not what this script is for
        return f"capture failed: {type(e).__name__}: {str(e)[:80]}"


def new_shape_us(shapes: int = 200) -> float:
    """Median µs of a whole add_alpha call on a 1-D length it has never seen (a plan miss of a
    known layout class), launch included (new_shape's timer)."""
    for n in (1000, 1024, 1001):  # open the class (aligned and not), checked against torch
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        check_against(x + 0.5 * y, add_alpha(x, y, 0.5), f"add_alpha of {n} elements")
    lengths = range(5000, 5000 + 7 * shapes, 7)
    operands = [(torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), 0.5) for n in lengths]
    torch.cuda.synchronize()
    return median_call_us(add_alpha, operands)


def _with_entry(entry, fn, *args):
    """fn(*args) with hit_path.entry set to `entry` (None: the Python path) for the call."""
    saved, hit_path.entry = hit_path.entry, entry
    try:
        return fn(*args)
    finally:
        hit_path.entry = saved


def _with_aten(module, helpers, restore, *args):
    """add(*args) with launch.c using the ATen helpers (`helpers`) or torch's Python API (None),
    then `restore`d."""
    aten.use(module, helpers)
    try:
        return add(*args)
    finally:
        aten.use(module, restore)


def breakdown() -> list:
    """Microseconds of each layer of a cached `add(a, b)` call, timed alone, then the launch
    layers of launch_layers.py (Triton's own launcher and torch's add among them)."""
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    launch_rows = launch_layers.layers(a, b)  # warms the plan up, checks each layer
    key = call_signature((a, b))
    rows = [
        ("call_signature (dtype, shape, stride, device, alignment)", lambda: call_signature((a, b))),
        ("plan cache lookup", lambda: add.plan_cache.get(key)),
        ("output allocation (torch.empty_strided)", lambda: torch.empty_strided((1024,), (1,), device="cuda")),
        *launch_rows,
    ]
    if hit_path.entry is not None:  # the C hit path: signature, lookup, allocation and launch in C
        whole = [
            ("whole add(a, b) in a wrapper, C hit path on", lambda: _with_entry(hit_path.entry, add, a, b)),
            ("whole add(a, b) in a wrapper, C hit path off", lambda: _with_entry(None, add, a, b)),
        ]
        if os.environ["TRITONWISE_ATEN"] != "0":
            module, helpers = native.launch_module(), aten.helpers()
            whole += [
                ("whole add(a, b) in a wrapper, ATen helpers on", lambda: _with_aten(module, helpers, helpers, a, b)),
                ("whole add(a, b) in a wrapper, ATen helpers off", lambda: _with_aten(module, None, helpers, a, b)),
            ]
        for name, call in whole:
            check_against(a + b, call(), name)
        rows += whole
    times = median_us([fn for _, fn in rows], rounds=5)
    return [(name, us) for (name, _), us in zip(rows, times)]


def cold_first_call_ms() -> float:
    """Analysis + render + atomic write + module load for a new signature in an empty cache."""
    os.environ["TRITONWISE_CACHE_DIR"] = tempfile.mkdtemp(prefix="tw-cold-")
    x = torch.randn(3, 5, 7, device="cuda")
    start = time.perf_counter()
    add_alpha.plan((x, x.transpose(0, 2).contiguous().transpose(0, 2), 2.0), (None,), collapse=True)
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_overhead needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = [
        "| case | tritonwise µs/call | torch eager | torch.compile | tritonwise / eager | GPU µs (CUDA graph) tw / eager |",
        "|---|---|---|---|---|---|",
    ]
    chosen = cases()
    check_cases(chosen)
    for name, ours, eager, _ in chosen:
        fns = [ours, eager]
        if not args.no_compile:
            fns.append(torch_compiled(eager))
            fns[-1]()
        t_ours, t_eager, *t_compiled = median_us(fns)
        t_compiled = t_compiled[0] if t_compiled else float("nan")
        lines.append(
            f"| {name} | {t_ours:.1f} | {t_eager:.1f} | {t_compiled:.1f} | {t_ours / t_eager:.2f}x | {_graph_pair(ours, eager)} |"
        )
        print(lines[-1], flush=True)
    lines += ["", "| layer of a cached add(a, b) | µs |", "|---|---|"]
    lines += [f"| {name} | {us:.2f} |" for name, us in breakdown()]
    lines += [
        "",
        f"A new shape of a known layout class (add_alpha, 1-D, whole call): {new_shape_us():.1f} µs",
        f"Cold first call (analysis + render + write + load, no Triton compile): {cold_first_call_ms():.1f} ms",
    ]
    report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
