"""Bandwidth of reductions along dims (issue 16's cases): tritonwise vs eager vs torch.compile.

    python benchmarks/axis_reductions.py [--out FILE] [--no-compile] [--sweep]

GB/s = bytes read (each input once; the reduced output is small and not counted) over the
median time of `triton.testing.do_bench`; the copy ceiling (clone of 1 GiB) is measured in the
same run. Each case also prints the scheme and block tritonwise chose (`explain()`) and the
GB/s of a clone of its input (the copy ceiling at that size: small inputs cannot reach the
1 GiB ceiling, whatever reads them). `--sweep` times every block of the case's layout class.

A second table says what 90% of the 1 GiB copy ceiling asks of each case in microseconds, beside
tritonwise's time, a plain read's, and an empty kernel's under do_bench: below about 120 MiB, no
kernel can finish a read that fast under that timer (RESULTS.md, ninth session).

Then each case under three timers, each with its own copy ceiling (the faster of a clone and a
negation of 1 GiB: a CUDA graph runs a clone as a slower copy node) and the read ceiling at the
case's size (a plain Triton kernel reading the same bytes in memory order, read_ceiling.py):
- do_bench, as above;
- after a clean L2 flush (timing.us_after_clean_flush): do_bench's flush writes 256 MiB and
  leaves dirty lines that the timed kernel writes back, which costs a 64 MiB read about a third
  of its bandwidth and the 1 GiB clone almost nothing;
- back to back in a CUDA graph on copies of the input that fill 256 MiB (timing.us_back_to_back):
  no host time, no flush, every call reading DRAM, as kernels run inside a model.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch
import triton

from tritonwise import pointwise_dynamic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Case, _nbytes, copy_ceiling, do_bench_us, gbps, header, table  # noqa: E402
from read_ceiling import empty_kernel, read_ceiling, timed  # noqa: E402
from timing import gbps_after_clean_flush, gpu_us_per_kernel, report, us_at, us_back_to_back  # noqa: E402


@triton.jit
def _square(x):
    return x * x


@triton.jit
def _identity(x):
    return x


def _reducer(payload, entry):
    fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")], reductions=[entry])
    fn.remake = lambda: _reducer(payload, entry)  # a fresh function (no plans yet), for --sweep
    return fn


sum_sq_last = _reducer(_square, ("sum", -1))
max_dim0 = _reducer(_identity, ("max", 0))
sum_last = _reducer(_identity, ("sum", -1))
sum_0_2 = _reducer(_identity, ("sum", (0, 2)))


def cases(device="cuda") -> list:
    """(Case, tritonwise function, its input, the torch expression of an input) for each of the
    issue's five shapes."""
    big = torch.randn(8192, 8192, device=device)
    tall = torch.randn(16384, 128, device=device, dtype=torch.bfloat16)
    wide = torch.randn(128, 16384, device=device, dtype=torch.bfloat16)
    cube = torch.randn(64, 4096, 64, device=device)
    table = [
        ("sum(x*x, -1) fp32 8192x8192", sum_sq_last, big, lambda x: (x * x).sum(-1)),
        ("amax(x, 0) fp32 8192x8192", max_dim0, big, lambda x: x.amax(0)),
        ("sum(x, -1) bf16 16384x128", sum_last, tall, lambda x: x.sum(-1)),
        ("sum(x, -1) bf16 128x16384", sum_last, wide, lambda x: x.sum(-1)),
        ("sum(x, (0, 2)) fp32 64x4096x64", sum_0_2, cube, lambda x: x.sum((0, 2))),
    ]
    return [
        (Case(name, _nbytes(x), lambda f=fn, x=x: f(x), lambda e=expr, x=x: e(x)), fn, x, expr)
        for name, fn, x, expr in table
    ]


def check(case: Case) -> str:
    got, want = case.ours(), case.eager()
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"MISMATCH {tuple(got.shape)} {got.dtype}"
    tol = 2e-2 if got.dtype == torch.bfloat16 else 1e-3
    return "ok" if torch.allclose(got.float(), want.float(), rtol=tol, atol=tol * 10) else "MISMATCH"


ROTATED_BYTES = 2**28  # copies of an input fill 256 MiB, five times the H100's 50 MiB of L2


def back_to_back_gbps(nbytes: int, call, x) -> float:
    """GB/s of `call` launched back to back in a CUDA graph on copies of `x` that together fill
    ROTATED_BYTES (at least two), each copy at least four times and 2 GiB read in all."""
    size = _nbytes(x)
    copies = max(2, math.ceil(ROTATED_BYTES / size))
    inputs = [x] + [x.clone() for _ in range(copies - 1)]
    launches = copies * max(4, math.ceil(2**31 / (copies * size)))
    return nbytes / us_back_to_back(call, inputs, launches) / 1e3


# Each timer as rate(nbytes, call, x): GB/s of call(x) counting nbytes.
TIMERS = {
    "do_bench": timed(gbps),
    "after a clean L2 flush": timed(gbps_after_clean_flush),
    "back to back in a CUDA graph, inputs rotated through 256 MiB": back_to_back_gbps,
}


def copy_ceiling_under(rate) -> float:
    """GB/s moved by the faster of a clone and a negation of 1 GiB (as bench.copy_ceiling): a
    contiguous clone is a cudaMemcpyAsync, which a CUDA graph runs as a copy node at 2417-2432
    GB/s on the H100, against 2950-3003 for the same clones launched on a stream (.gpu/exp45.py);
    the negation is an ATen kernel moving the same bytes under every timer."""
    x = torch.empty(2**28, device="cuda").uniform_()
    return max(rate(2 * _nbytes(x), torch.clone, x), rate(2 * _nbytes(x), torch.neg, x))


def _rate_or_nan(rate, nbytes, call, x) -> float:
    if call is None:
        return math.nan
    try:
        return rate(nbytes, call, x)
    except Exception as error:  # torch.compile's code under graph capture, should it refuse
        print(f"  not timed: {type(error).__name__}: {str(error)[:200]}", flush=True)
        return math.nan


def measured_under(rate, case: Case, fn, x, expr, compiled) -> tuple:
    """(tritonwise, torch eager, torch.compile, plain read) GB/s of one case by `rate`."""
    n = case.nbytes
    return (rate(n, fn, x), rate(n, expr, x), _rate_or_nan(rate, n, compiled, x), read_ceiling(x, rate))


def timer_table(timer: str, ceiling: float, rows: list) -> str:
    lines = [
        f"| case ({timer}) | tritonwise GB/s | plain read | tritonwise / plain read | / copy ceiling ({ceiling:.0f}) | torch eager | torch.compile |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, _, ours, eager, compiled, read in rows:
        lines.append(
            f"| {name} | {ours:.0f} | {read:.0f} | {ours / read:.0%} | {ours / ceiling:.0%} | {eager:.0f} | {compiled:.0f} |"
        )
    return "\n".join(lines)


def target_table(ceiling: float, rows: list) -> str:
    """Microseconds under do_bench: what reading at 90% of the copy ceiling allows each case,
    against what it took, what a plain read of its bytes took, and what an empty kernel takes
    under do_bench and back to back (the timers' floors)."""
    empty = empty_kernel("cuda")
    empty_us, graph_us = do_bench_us(empty), gpu_us_per_kernel(empty)
    lines = [
        "| case | MiB read | µs at 90% of the copy ceiling | tritonwise µs | plain read µs | empty kernel µs (back to back) |",
        "|---|---|---|---|---|---|",
    ]
    for name, nbytes, ours, _, _, read in rows:
        allowed, took, read_us = us_at(nbytes, 0.9 * ceiling), us_at(nbytes, ours), us_at(nbytes, read)
        lines.append(
            f"| {name} | {nbytes / 2**20:.0f} | {allowed:.1f} | {took:.1f} | {read_us:.1f} | {empty_us:.1f} ({graph_us:.1f}) |"
        )
    return "\n".join(lines)


def run(use_compile: bool) -> tuple:
    """The 1 GiB clone's GB/s and the headline rows (do_bench, with each check), the chosen
    schemes, and for each timer its copy ceiling and rows (name, bytes, tritonwise, eager,
    torch.compile, plain read)."""
    ceiling = copy_ceiling()
    ceilings = {timer: copy_ceiling_under(rate) for timer, rate in TIMERS.items()}
    by_timer = {timer: [] for timer in TIMERS}
    rows, chosen = [], []
    for case, fn, x, expr in cases():
        status = check(case)
        compiled = None
        if use_compile:
            compiled = torch.compile(expr)
            compiled(x)
        for timer, rate in TIMERS.items():
            by_timer[timer].append((case.name, case.nbytes, *measured_under(rate, case, fn, x, expr, compiled)))
        _, _, ours, eager, compiled_rate, _ = by_timer["do_bench"][-1]
        rows.append((case.name, ours, eager, compiled_rate, ours / ceiling, status))
        copy = gbps(2 * case.nbytes, lambda x=x: x.clone())
        chosen.append(f"- {case.name}: {_scheme_line(fn, x)}; a clone of the input moves {copy:.0f} GB/s")
        print(
            f"{case.name:<34} ours {ours:6.0f}  eager {eager:6.0f}  compile {compiled_rate:6.0f}  {status}", flush=True
        )
    return ceiling, rows, chosen, ceilings, by_timer


def _scheme_line(fn, x) -> str:
    """The lines of explain() that name the scheme and block."""
    text = str(fn.explain(x))
    return "; ".join(ln.strip() for ln in text.splitlines() if "scheme" in ln or "block" in ln.lower())[:300]


def sweep() -> list:
    """GB/s of each case with each block its layout class offers (the heuristic's evidence)."""
    from tritonwise.schemes import get_scheme

    lines = []
    for case, fn, x, _ in cases():
        plan = fn.explain(x)
        scheme = get_scheme(plan.scheme)
        for block in plan.block_choices:
            scheme.pick_block = lambda task_shape, m_dim, choices, block=block: block
            try:
                fresh = fn.remake()
                rate = gbps(case.nbytes, lambda: fresh(x))
                status = check(Case(case.name, case.nbytes, lambda: fresh(x), case.eager))
            finally:
                del scheme.pick_block
            # a persistent block narrower than the row is not a valid choice: it reads part of it
            lines.append(f"- {case.name} {plan.scheme} block {block}: {rate:.0f} GB/s ({status})")
            print(lines[-1], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("axis_reductions.py needs a CUDA GPU", file=sys.stderr)
        return 2
    ceiling, rows, chosen, ceilings, by_timer = run(not args.no_compile)
    timers = [timer_table(timer, ceilings[timer], by_timer[timer]) for timer in TIMERS]
    tables = (table(ceiling, rows), target_table(ceiling, by_timer["do_bench"]), *timers, "\n".join(chosen))
    text = header() + "\n\n" + "\n\n".join(tables) + "\n"
    if args.sweep:
        text += "\nEvery block of each case's layout class:\n" + "\n".join(sweep()) + "\n"
    report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
