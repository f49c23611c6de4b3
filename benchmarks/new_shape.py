"""The cost of a new shape of a known layout class: a plan-cache miss that generates nothing.

    python -m benchmarks.new_shape [--shapes N] [--device cuda|cpu|meta]

Each case first calls a function on a few shapes (opening its layout classes: aligned and not,
every block), then on N shapes it has never seen, each call a plan-cache miss, and reports the
median microseconds per call. On CUDA (the default when present) a call is the whole call,
launch included (the clock stops before synchronizing). Elsewhere it measures the host part
only: `--device meta` times whole calls on meta tensors (allocation, no launch); `--device cpu`
times `fn.plan` (the miss without the interpreter's launch). The breakdown times the layers
of a planner's miss on the same shapes (`fn.planner`: frontend, task analysis, binding). "served without a plan-cache
miss" is the share of timed calls the C hit path launched with no plan (a shape program, on a
GPU, once a plan of the class has launched); the rest took a plan in Python. The ATen helpers
are built before the first call (TRITONWISE_ATEN=wait unless set: `=1` times whatever the
background build has reached, `=0` the C path without them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from benchmarks.harness import check_against, median_call_us, whole_call_us
from benchmarks.payloads import add, add_alpha, row_sum_of_squares

WARM = 40  # sizes each case sees before timing: every class and block of the sweep is open by then


class InPlace:
    """fn(x, y, 0.5, out0=x): a call with a given output. Whole calls only (no layers)."""

    def __init__(self, fn):
        self.fn, self.plan_cache = fn, fn.plan_cache

    def __call__(self, x, y):
        return self.fn(x, y, 0.5, out0=x)


def cases(device: str):
    """(name, function, operands for size n, torch's answer for those operands): each n a new
    shape of one family of classes."""
    return [
        ("add 1-D (flat)", add, lambda n: (torch.randn(64 * n + 7, device=device),) * 2, torch.add),
        (
            "3-D broadcast + scalar (nd)",
            add_alpha,
            lambda n: (torch.randn(4, n, 64, device=device), torch.randn(n, 1, device=device), 0.5),
            lambda x, y, alpha: x + y * alpha,
        ),
        (
            "2-D + transposed 2-D (tile2d)",
            add,
            lambda n: (torch.randn(n, 65, device=device), torch.randn(65, n, device=device).t()),
            torch.add,
        ),
        (
            "(n, 256) + transposed (256, n): n a multiple of 16 or not (two layout classes)",
            add,
            lambda n: (torch.randn(n, 256, device=device), torch.randn(256, n, device=device).t()),
            torch.add,
        ),
        (
            "in place: 2-D += 0.5 * transposed 2-D (a given output)",
            InPlace(add_alpha),
            lambda n: (torch.randn(n, 65, device=device), torch.randn(65, n, device=device).t()),
            lambda x, y: x + 0.5 * y,
        ),
        (
            "row sums of squares (n, 512) (a reduction along dims)",
            row_sum_of_squares,
            lambda n: (torch.randn(n, 512, device=device),),
            lambda x: (x * x).sum(-1),
        ),
    ]


CHECKED_SIZES = (1, 3, 16)  # small sizes of each case's classes (n = 16: aligned where n counts)


def check_cases(device: str) -> None:
    """Each case on CHECKED_SIZES against torch's answer (taken before the call: the in-place
    case writes its first operand). Meta tensors hold no values: those cases run on the CPU."""
    chosen = cases("cpu" if device == "meta" else device)
    for name, fn, make, answer in chosen:
        for n in CHECKED_SIZES:
            args = make(n)
            expected = answer(*args)
            check_against(expected, fn(*args), f"{name}, n = {n}")
    print(f"{len(chosen)} cases give torch's answer on {len(CHECKED_SIZES)} sizes each", flush=True)


def prepare_only(fn, args) -> float:
    start = time.perf_counter()
    fn.plan(args, (None,), collapse=True)
    return (time.perf_counter() - start) * 1e6


def layers(fn, operands: list) -> list:
    """Median microseconds of each layer of a miss: frontend (memoized per call class), task
    analysis (broadcast, collapse, tiling), and binding (kernel memo, launch values, the plan)."""
    planner = getattr(fn, "planner", None)  # InPlace wraps a function: no breakdown
    if planner is None:
        return []
    times: dict = {"frontend": [], "task analysis": [], "bind (kernel, launch values, plan)": []}
    for args in operands:
        outs = (None,)
        t0 = time.perf_counter()
        front = planner.frontend(args, outs)
        t1 = time.perf_counter()
        task = planner.task(args, outs, front, True)
        reductions = planner.reductions_for(front, task.shape)
        t2 = time.perf_counter()
        planner.binder.bind(args, outs, front.types, reductions, task, front.device, front.key)
        t3 = time.perf_counter()
        for key, value in zip(times, (t1 - t0, t2 - t1, t3 - t2)):
            times[key].append(value * 1e6)
    return [(name, statistics.median(values)) for name, values in times.items()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=int, default=300, help="new shapes timed per case")
    parser.add_argument("--device", choices=["cuda", "cpu", "meta"])
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "meta")
    if device == "cuda":
        os.environ.setdefault("TRITONWISE_ATEN", "wait")  # read at the first launch
    check_cases(device)
    timer = prepare_only if device == "cpu" else whole_call_us
    what = "fn.plan (host, no launch)" if device == "cpu" else f"whole call on {device} tensors"
    print(f"new shape of a known layout class, {what}: median µs over {args.shapes} new shapes")
    print(
        "| case | µs per new shape | served without a plan-cache miss | "
        + " | ".join(["frontend", "task analysis", "bind"])
        + " |"
    )
    print("|---|---|---|---|---|---|")
    for name, fn, make, _ in cases(device):
        if timer is prepare_only and not hasattr(fn, "_prepare"):
            continue
        for n in range(1, WARM + 1):
            fn(*make(n)) if device != "cpu" else fn.plan(make(n), (None,), collapse=True)
        operands = [make(n) for n in range(WARM + 1, WARM + 1 + args.shapes)]
        half = len(operands) // 2
        misses = fn.plan_cache.misses
        total = median_call_us(fn, operands[:half], timer)
        served = 1 - (fn.plan_cache.misses - misses) / half  # by the C hit path (hit.h, program.h) on a GPU
        parts = layers(fn, operands[half:])
        cells = " | ".join(f"{us:.1f}" for _, us in parts) if parts else "— | — | —"
        share = f"{served:.0%}" if timer is whole_call_us else "—"  # _prepare alone counts no misses
        print(f"| {name} | {total:.1f} | {share} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
