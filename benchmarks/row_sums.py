"""The shared part of odd_rows.py and row_counts.py: a row sum planned under each of a
benchmark's forms and checked against torch, beside torch, torch.compile and a plain read of the
same bytes, timed in alternated rounds."""

from __future__ import annotations

import argparse
import statistics

import torch
import triton

from benchmarks.harness import (
    best_plain_read,
    check_against,
    do_bench_us,
    header,
    in_rounds,
    inputs_or_exit,
    nbytes,
    positive_int,
    report,
    smoke_arguments,
    torch_compiled,
    us_after_clean_flush,
    us_back_to_back,
)
from tritonwise import pointwise_dynamic


@triton.jit
def ident(x):
    return x


def row_sum(x, form: str, context, payload):
    """A fresh function summing `payload(x)` over the last dim, planned for `x` under `context`
    (the form's), checked against torch on a poisoned output: (the function, its explanation)."""
    with context():
        fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
        out = torch.full(x.shape[:-1], float("nan"), dtype=x.dtype, device=x.device)
        tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-4
        name = f"sum(x, -1) {tuple(x.shape)} {str(x.dtype)[6:]}, {form}"
        check_against(x.float().sum(-1), fn(x, out0=out).float(), name, rtol=tol, atol=100 * tol)
        fn(x)
        return fn, fn.explain(x)


def with_peers(x, fns: dict, compiled: bool) -> dict:
    """`fns` (form -> function), then torch, torch.compile (where `compiled`) and the fastest
    plain-read kernel of x's bytes: label -> call(t)."""
    calls = dict(fns)
    calls["torch"] = lambda t: t.sum(-1)
    if compiled:
        calls["torch.compile"] = torch_compiled(lambda t: t.sum(-1), dynamic=False)
        check_against(x.float().sum(-1), calls["torch.compile"](x).float(), "torch.compile", 2e-2, 2.0)
    calls["plain read"] = best_plain_read(x, lambda n, call, t: n / us_back_to_back(call, [t], 20))
    return calls


def timed_forms(x, forms, row_sum, rounds: int, compiled: bool, flush: bool = False) -> tuple:
    """Each form's function (`row_sum(x, form)`) beside its peers (with_peers), timed back to back
    over copies of x that fill 256 MiB, after a clean flush (where `flush`) and under do_bench:
    ({form: explanation}, one cell a timer)."""
    planned = {form: row_sum(x, form) for form in forms}
    calls = with_peers(x, {form: fn for form, (fn, _) in planned.items()}, compiled)
    copies = [x.clone() for _ in range(max(1, 2**28 // nbytes(x)))]
    timers = [lambda c: us_back_to_back(c, copies, 100), lambda c: do_bench_us(lambda: c(x))]
    if flush:
        timers.insert(1, lambda c: us_after_clean_flush(lambda: c(x)))
    return {form: e for form, (_, e) in planned.items()}, timed_cells(calls, timers, rounds)


def timed_cells(calls: dict, timers, rounds: int) -> list:
    """Per timer (timer(call) -> µs), the medians over `rounds` alternated rounds, " / "-joined."""
    cells = []
    for timer in timers:
        samples = in_rounds([lambda c=c: timer(c) for c in calls.values()], rounds)
        cells.append(" / ".join(f"{statistics.median(r[i] for r in samples):.2f}" for i in range(len(calls))))
    return cells


def main(argv, doc: str, script: str, cases: dict, forms: dict, row_sum, case_row, head) -> int:
    """A forms benchmark's command line (--rounds, --no-compile, --device, --smoke): every case's
    forms checked (`row_sum(x, form)`), then timed (`case_row(x, rounds, compiled)`, a table row
    under `head(names)`, the lines above it)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = parser.parse_args(argv)
    inputs = inputs_or_exit(args, script, cases, lambda x: [row_sum(x, form) for form in forms])
    if isinstance(inputs, int):
        return inputs
    names = list(forms) + ["torch"] + ([] if args.no_compile else ["torch.compile"]) + ["plain read"]
    lines = head(names) + [case_row(x, args.rounds, not args.no_compile) for x in inputs]
    report(header() + f"\nMedians of {args.rounds} alternated rounds a timer\n\n" + "\n".join(lines))
    return 0
