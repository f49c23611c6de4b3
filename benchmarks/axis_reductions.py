"""Bandwidth of reductions along dims (issue 16's cases): tritonwise vs eager vs torch.compile.

    python benchmarks/axis_reductions.py [--out FILE] [--no-compile] [--sweep]

GB/s = bytes read (each input once; the reduced output is small and not counted) over the
median time of `triton.testing.do_bench`; the copy ceiling (clone of 1 GiB) is measured in the
same run. Each case also prints the scheme and block tritonwise chose (`explain()`) and the
GB/s of a clone of its input (the copy ceiling at that size: small inputs cannot reach the
1 GiB ceiling, whatever reads them). `--sweep` times every block of the case's layout class.

A second table divides tritonwise's GB/s by the read ceiling at each case's size: a plain Triton
kernel reading the same bytes in memory order (read_ceiling.py), timed alike.

A third table says what 90% of the 1 GiB copy ceiling asks of each case in microseconds, beside
tritonwise's time, the plain read's, and an empty kernel's under the same timer: below about 120
MiB, no kernel can finish a read that fast (RESULTS.md, ninth session).

A fourth table times the same calls after a clean L2 flush (timing.us_after_clean_flush):
do_bench's flush writes 256 MiB and leaves dirty lines that the timed kernel writes back, which
costs a 64 MiB read about a third of its bandwidth and the 1 GiB clone almost nothing.
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
from bench import Case, _nbytes, copy_ceiling, gbps, header, table  # noqa: E402
from read_ceiling import empty_kernel, read_ceiling  # noqa: E402
from timing import report, us_after_clean_flush  # noqa: E402


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
    """(Case, tritonwise function, its inputs) for each of the issue's five shapes."""
    big = torch.randn(8192, 8192, device=device)
    tall = torch.randn(16384, 128, device=device, dtype=torch.bfloat16)
    wide = torch.randn(128, 16384, device=device, dtype=torch.bfloat16)
    cube = torch.randn(64, 4096, 64, device=device)
    table = [
        ("sum(x*x, -1) fp32 8192x8192", sum_sq_last, big, lambda: (big * big).sum(-1)),
        ("amax(x, 0) fp32 8192x8192", max_dim0, big, lambda: big.amax(0)),
        ("sum(x, -1) bf16 16384x128", sum_last, tall, lambda: tall.sum(-1)),
        ("sum(x, -1) bf16 128x16384", sum_last, wide, lambda: wide.sum(-1)),
        ("sum(x, (0, 2)) fp32 64x4096x64", sum_0_2, cube, lambda: cube.sum((0, 2))),
    ]
    return [(Case(name, _nbytes(x), lambda f=fn, x=x: f(x), eager), fn, x) for name, fn, x, eager in table]


def check(case: Case) -> str:
    got, want = case.ours(), case.eager()
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"MISMATCH {tuple(got.shape)} {got.dtype}"
    tol = 2e-2 if got.dtype == torch.bfloat16 else 1e-3
    return "ok" if torch.allclose(got.float(), want.float(), rtol=tol, atol=tol * 10) else "MISMATCH"


def clean_gbps(nbytes: int, fn) -> float:
    return nbytes / us_after_clean_flush(fn) / 1e3


def clean_copy_ceiling() -> float:
    x = torch.empty(2**28, device="cuda").uniform_()  # 1 GiB of fp32, as bench.copy_ceiling
    return clean_gbps(2 * _nbytes(x), x.clone)


def clean_table(rows: list) -> str:
    lines = [
        "| case (after a clean L2 flush) | tritonwise GB/s | torch eager | torch.compile | tritonwise / copy ceiling |",
        "|---|---|---|---|---|",
    ]
    ceiling = rows[0][1]
    for name, ours, eager, compiled in rows:
        lines.append(f"| {name} | {ours:.0f} | {eager:.0f} | {compiled:.0f} | {ours / ceiling:.0%} |")
    return "\n".join(lines)


def read_table(rows: list) -> str:
    lines = [
        "| case | tritonwise GB/s | plain Triton read of the same bytes | tritonwise / that read |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {ours:.0f} | {read:.0f} | {ours / read:.0%} |" for name, _, ours, read in rows]
    return "\n".join(lines)


def _us(nbytes: int, rate: float) -> float:
    return nbytes / rate / 1e3  # GB/s back to microseconds


def target_table(ceiling: float, reads: list) -> str:
    """Microseconds: what reading at 90% of the copy ceiling allows each case, against what it
    took, what a plain read of its bytes took, and what an empty kernel takes (the timer's floor)."""
    empty_us = _us(1, gbps(1, empty_kernel("cuda")))
    lines = [
        "| case | MiB read | µs at 90% of the copy ceiling | tritonwise µs | plain read µs | empty kernel µs |",
        "|---|---|---|---|---|---|",
    ]
    for name, nbytes, ours, read in reads:
        allowed, took, read_us = _us(nbytes, 0.9 * ceiling), _us(nbytes, ours), _us(nbytes, read)
        lines.append(f"| {name} | {nbytes / 2**20:.0f} | {allowed:.1f} | {took:.1f} | {read_us:.1f} | {empty_us:.1f} |")
    return "\n".join(lines)


def run(use_compile: bool) -> tuple:
    ceiling = copy_ceiling()
    clean = [("copy ceiling (clone, 1 GiB)", clean_copy_ceiling(), math.nan, math.nan)]
    rows, chosen, reads = [], [], []
    for case, fn, x in cases():
        status = check(case)
        ours, eager = gbps(case.nbytes, case.ours), gbps(case.nbytes, case.eager)
        compiled = compiled_clean = math.nan
        if use_compile:
            compiled_fn = torch.compile(case.eager)
            compiled_fn()
            compiled = gbps(case.nbytes, compiled_fn)
            compiled_clean = clean_gbps(case.nbytes, compiled_fn)
        rows.append((case.name, ours, eager, compiled, ours / ceiling, status))
        reads.append((case.name, case.nbytes, ours, read_ceiling(x, gbps)))
        clean.append(
            (case.name, clean_gbps(case.nbytes, case.ours), clean_gbps(case.nbytes, case.eager), compiled_clean)
        )
        copy = gbps(2 * case.nbytes, lambda x=x: x.clone())
        chosen.append(f"- {case.name}: {_scheme_line(fn, x)}; a clone of the input moves {copy:.0f} GB/s")
        print(f"{case.name:<34} ours {ours:6.0f}  eager {eager:6.0f}  compile {compiled:6.0f}  {status}", flush=True)
    return ceiling, rows, chosen, clean, reads


def _scheme_line(fn, x) -> str:
    """The lines of explain() that name the scheme and block."""
    text = str(fn.explain(x))
    return "; ".join(ln.strip() for ln in text.splitlines() if "scheme" in ln or "block" in ln.lower())[:300]


def sweep() -> list:
    """GB/s of each case with each block its layout class offers (the heuristic's evidence)."""
    from tritonwise.schemes import get_scheme

    lines = []
    for case, fn, x in cases():
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
    ceiling, rows, chosen, clean, reads = run(not args.no_compile)
    tables = (
        table(ceiling, rows),
        read_table(reads),
        target_table(ceiling, reads),
        clean_table(clean),
        "\n".join(chosen),
    )
    text = header() + "\n\n" + "\n\n".join(tables) + "\n"
    if args.sweep:
        text += "\nEvery block of each case's layout class:\n" + "\n".join(sweep()) + "\n"
    report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
