"""Bandwidth benchmark: tritonwise vs torch eager vs torch.compile, one GPU, one run.

    python benchmarks/bench.py [--out benchmarks/RESULTS.md] [--no-compile] [--only NAME]

GB/s counts the bytes that must move (each input read once, each output written once) over
the median time of `triton.testing.do_bench`. The copy ceiling is `clone` of 1 GiB.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
from dataclasses import dataclass
from typing import Callable

import torch
import triton

import tritonwise
from tritonwise import StridedBuffer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from payloads import add, copy, polar, squared_error_sum  # noqa: E402
from timing import report  # noqa: E402


@dataclass
class Case:
    name: str
    nbytes: int
    ours: Callable
    eager: Callable
    reference: Callable = None  # result to compare ours with (default: eager)


def _nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _flip0_view(x):
    s0 = x.stride(0)
    return StridedBuffer(x, strides=(-s0, *x.stride()[1:]), offset=(x.shape[0] - 1) * s0)


def cases(device="cuda") -> list:
    n, side = 2**26, 8192
    a, b = torch.randn(n, device=device), torch.randn(n, device=device)
    h = torch.randn(n, device=device, dtype=torch.float16)
    bf1, bf2 = (torch.randn(n, device=device, dtype=torch.bfloat16) for _ in range(2))
    m1, m2 = torch.randn(side, side, device=device), torch.randn(side, side, device=device)
    row = torch.randn(side, device=device)
    out_sq = torch.empty(side, side, device=device)
    flip = copy.instantiate(2)
    flipped = _flip0_view(m1)
    result = [
        Case("add fp32 contiguous 2^26", _nbytes(a, b, a), lambda: add(a, b), lambda: a + b),
        Case("add fp32 + row broadcast 8192^2", _nbytes(m1, row, m1), lambda: add(m1, row), lambda: m1 + row),
        Case("add fp32, one transposed 8192^2", _nbytes(m1, m2, m1), lambda: add(m1, m2.t()), lambda: m1 + m2.t()),
    ]
    for rows, cols in ((8192, 8192), (8191, 8193), (4096, 16384)):
        x = torch.randn(cols, rows, device=device)
        out = torch.empty(rows, cols, device=device)
        result.append(
            Case(
                f"transpose copy {rows}x{cols}",
                2 * _nbytes(x),
                lambda x=x, out=out: copy(x.t(), out0=out),
                lambda x=x: x.t().contiguous(),
            )
        )
    result += [
        Case("add fp16 + fp32 2^26", _nbytes(h, a, a), lambda: add(h, a), lambda: h + a),
        Case("add bf16 2^26", _nbytes(bf1, bf2, bf1), lambda: add(bf1, bf2), lambda: bf1 + bf2),
        Case(
            "flip dim 0 (StridedBuffer) 8192^2",
            2 * _nbytes(m1),
            lambda: flip(flipped, out0=out_sq),
            lambda: torch.flip(m1, [0]),
        ),
        Case(
            "polar, two outputs 2^26",
            2 * _nbytes(a, b),
            lambda: polar(a, b),
            lambda: torch.polar(a, b),
            lambda: torch.view_as_real(torch.polar(a, b)).unbind(-1),
        ),
    ]
    result.append(
        Case(
            "sum((x-y)**2) fused, 2^26 (bytes read)",
            _nbytes(a, b),
            lambda: squared_error_sum(a, b),
            lambda: ((a - b) ** 2).sum(),
        )
    )
    p5 = torch.randn(32, 64, 16, 64, 16, device=device)
    perm = (0, 2, 4, 1, 3)
    out5 = torch.empty(p5.permute(perm).shape, device=device)
    result.append(
        Case(
            "permuted copy rank 5 (0,2,4,1,3)",
            2 * _nbytes(p5),
            lambda: copy(p5.permute(perm), out0=out5),
            lambda: p5.permute(perm).contiguous(),
        )
    )
    return result


def do_bench_us(fn: Callable) -> float:
    """The median microseconds of `fn` under triton.testing.do_bench (L2 flushed before each call)."""
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def gbps(nbytes: int, fn: Callable) -> float:
    return nbytes / do_bench_us(fn) / 1e3


def check(case: Case) -> str:
    got = case.ours()
    want = (case.reference or case.eager)()
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    ok = all(torch.allclose(g.float(), w.float(), rtol=1e-4, atol=1e-3) for g, w in zip(got, want))
    return "ok" if ok else "MISMATCH"


def copy_ceiling() -> float:
    x = torch.empty(2**28, device="cuda")  # 1 GiB of fp32
    x.uniform_()
    return gbps(2 * _nbytes(x), lambda: x.clone())


def run(only: str, use_compile: bool) -> tuple:
    ceiling = copy_ceiling()
    rows = []
    for case in cases():
        if only and only not in case.name:
            continue
        status = check(case)
        ours = gbps(case.nbytes, case.ours)
        eager = gbps(case.nbytes, case.eager)
        compiled = math.nan
        if use_compile:
            try:
                fn = torch.compile(case.eager)
                fn()
                compiled = gbps(case.nbytes, fn)
            except Exception as e:  # report, keep benchmarking
                print(f"torch.compile failed on {case.name}: {type(e).__name__}: {e}", file=sys.stderr)
        rows.append((case.name, ours, eager, compiled, ours / ceiling, status))
        print(f"{case.name:<36} ours {ours:7.0f}  eager {eager:7.0f}  compile {compiled:7.0f}  {status}", flush=True)
    return ceiling, rows


def table(ceiling: float, rows: list) -> str:
    lines = [
        "| case | tritonwise GB/s | torch eager | torch.compile | tritonwise / copy ceiling | check |",
        "|---|---|---|---|---|---|",
        f"| copy ceiling (clone, 1 GiB) | — | {ceiling:.0f} | — | 100% | — |",
    ]
    for name, ours, eager, compiled, ratio, status in rows:
        lines.append(f"| {name} | {ours:.0f} | {eager:.0f} | {compiled:.0f} | {ratio:.0%} | {status} |")
    return "\n".join(lines)


def header() -> str:
    return (
        f"Device: {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}; "
        f"tritonwise {tritonwise.__version__}; {datetime.date.today().isoformat()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="write the table (markdown) here")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU", file=sys.stderr)
        return 2
    ceiling, rows = run(args.only, not args.no_compile)
    text = f"{header()}\n\n{table(ceiling, rows)}\n"
    report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
