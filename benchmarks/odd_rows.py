"""Row sums of rows that start anywhere in memory (GPU): tritonwise as it plans them (each row read
from its first 16-byte boundary, rotated), the same with rows read from their start (the code
before), torch, torch.compile and a plain read of the same bytes; µs per call.

    python -m benchmarks.odd_rows [--rounds 3] [--no-compile]
    python -m benchmarks.odd_rows --device cpu   # both forms checked on small inputs, nothing timed

Rows of an odd length (or at odd strides) put the file in the unaligned class: rows need not
start on a 16-byte boundary, and Triton then loads one element a lane. Each case sums a contiguous (rows, cols) matrix over its last
dim. Each form is a fresh function, checked against torch on a poisoned output, then every call
is timed in alternated rounds: back to back in a CUDA graph over copies of the input that fill
256 MiB (no host time, every read from DRAM), and under do_bench. docs/decisions/row-peel.md reads
the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from unittest import mock

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
    own_cache_dir,
    positive_int,
    report,
    smoke_arguments,
    us_back_to_back,
)
from tritonwise import pointwise_dynamic
from tritonwise.schemes import row_looped


@triton.jit
def ident(x):
    return x


CASES = {
    False: [
        ((128, 100003), torch.bfloat16),  # few very long rows: one row of 2048 a program
        ((32, 262147), torch.float32),
        ((64, 65537), torch.float32),
        ((64, 65537), torch.bfloat16),
        ((128, 16383), torch.bfloat16),
        ((256, 16385), torch.bfloat16),
        ((4096, 16383), torch.bfloat16),  # many long rows
        ((2048, 8191), torch.float32),
        ((4096, 4097), torch.bfloat16),  # many rows of one to four blocks: two rows of 1024, not rotated
        ((32768, 2047), torch.bfloat16),
        ((8192, 1100), torch.bfloat16),
        ((16384, 1025), torch.float32),
        ((128, 100000), torch.bfloat16),  # the aligned class, for scale: both forms read it alike
    ],
    True: [((3, 4099), torch.bfloat16), ((300, 3001), torch.float32), ((2, 70001), torch.float32)],
}


@contextlib.contextmanager
def from_their_start():
    """Rows read from their start, with the pipelined (1, 8192) block for few very long rows
    (before rows were rotated). The form's files (of other keys: the peel is part of one) go to
    a directory of its own, removed after it."""
    with own_cache_dir("odd-rows-unrotated-"):
        with mock.patch.object(row_looped.RowLooped, "peels_rows", False):
            yield


FORMS = {"as generated": contextlib.nullcontext, "from their start": from_their_start}


def row_sum(x, form: str):
    """A fresh row-sum function planned for `x` under `form`, checked against torch on a poisoned
    output: (the function, its explanation)."""
    with FORMS[form]():
        fn = pointwise_dynamic(ident, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
        out = torch.full(x.shape[:-1], float("nan"), dtype=x.dtype, device=x.device)
        tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-4
        name = f"sum(x, -1) {tuple(x.shape)} {str(x.dtype)[6:]}, {form}"
        check_against(x.float().sum(-1), fn(x, out0=out).float(), name, rtol=tol, atol=100 * tol)
        fn(x)
        return fn, fn.explain(x)


def case_row(x, rounds: int, compiled: bool) -> str:
    forms = {form: row_sum(x, form) for form in FORMS}
    calls = {form: fn for form, (fn, _) in forms.items()}
    calls["torch"] = lambda t: t.sum(-1)
    if compiled:
        calls["torch.compile"] = torch.compile(lambda t: t.sum(-1), dynamic=False)
        check_against(x.float().sum(-1), calls["torch.compile"](x).float(), "torch.compile", 2e-2, 2.0)
    read = best_plain_read(x, lambda n, call, t: n / us_back_to_back(call, [t], 20))
    calls["plain read"] = read
    copies = [x.clone() for _ in range(max(1, 2**28 // nbytes(x)))]
    graph = in_rounds([lambda c=c: us_back_to_back(c, copies, 100) for c in calls.values()], rounds)
    bench = in_rounds([lambda c=c: do_bench_us(lambda: c(x)) for c in calls.values()], rounds)
    tiles = "; ".join(f"{e.block} on {e.num_warps} warps" for _, e in forms.values())
    cells = [" / ".join(f"{statistics.median(r[i] for r in samples):.2f}" for i in range(len(calls))) for samples in (graph, bench)]
    return f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {tiles} | {cells[0]} | {cells[1]} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = parser.parse_args(argv)
    inputs = inputs_or_exit(args, "odd_rows", CASES, lambda x: [row_sum(x, form) for form in FORMS])
    if isinstance(inputs, int):
        return inputs
    names = list(FORMS) + ["torch"] + ([] if args.no_compile else ["torch.compile"]) + ["plain read"]
    lines = [
        "| case | blocks: " + "; ".join(FORMS) + " | back to back µs: " + " / ".join(names) + " | do_bench µs: the same |",
        "|---|---|---|---|",
    ]
    lines += [case_row(x, args.rounds, not args.no_compile) for x in inputs]
    report(header() + f"\nMedians of {args.rounds} alternated rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
