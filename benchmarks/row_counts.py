"""Row sums whose row length decides constexprs of the kernel (GPU): tritonwise as it plans them
(WHOLE_BLOCKS, a row's count of whole blocks, compiled in for 1 to 32; REST_BLOCK, the width its
masked last columns are read in, an eighth of a block where they fit one), the same file with
every last block whole, the same counting every row at run time too (the code before), torch,
torch.compile and a plain read of the same bytes; µs per call.

    python -m benchmarks.row_counts [--rounds 3] [--no-compile]
    python -m benchmarks.row_counts --device cpu   # every form checked on small inputs, nothing timed

Each case sums a contiguous (rows, cols) matrix over its last dim. Each form is a fresh function,
checked against torch on a poisoned output, then every call is timed in alternated rounds under
three timers: back to back in a CUDA graph over copies of the input that fill 256 MiB (no host
time, every read from DRAM), after a clean L2 flush, and under do_bench.
docs/decisions/row-looped-count.md and row-looped-rest.md read the figures.
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
    positive_int,
    report,
    smoke_arguments,
    us_after_clean_flush,
    us_back_to_back,
)
from tritonwise import pointwise_dynamic
from tritonwise.schemes import row_looped


@triton.jit
def ident(x):
    return x


CASES = {
    False: [
        ((128, 16384), torch.bfloat16),  # 8 blocks of (1, 2048) a row
        ((1024, 16384), torch.bfloat16),
        ((2048, 8192), torch.bfloat16),  # 4
        ((512, 65536), torch.bfloat16),  # 32, the most compiled in
        ((256, 32768), torch.float32),  # 16
        ((8192, 2048), torch.float32),  # 1 of (2, 1024) (several rows a block)
        ((4096, 3008), torch.float32),  # 2 of (2, 1024) and a rest
        ((8192, 1100), torch.bfloat16),  # unaligned rows, read from their start: 1 of (2, 1024), 76 more
        ((16384, 1025), torch.float32),
        ((8192, 2100), torch.bfloat16),
        ((8192, 1324), torch.float32),  # a rest of 300: read in a whole block
        ((64, 131072), torch.float32),  # few long rows: 16 of the pipelined (1, 8192)
        ((128, 100000), torch.bfloat16),  # 12 of (1, 8192) and a rest
    ],
    True: [((3, 6160), torch.float32), ((300, 3008), torch.bfloat16), ((2, 70000), torch.float32)],
}


@contextlib.contextmanager
def last_block_whole():
    """Every row's masked last columns read in a whole block (REST_BLOCK = BLOCK_N): the same file."""
    with mock.patch.object(row_looped, "NARROW_REST", 1):
        yield


@contextlib.contextmanager
def neither():
    """And every row's count of whole blocks taken at run time (WHOLE_BLOCKS 0): the code before."""
    with last_block_whole(), mock.patch.object(row_looped.RowLooped, "max_compiled_blocks", 0):
        yield


FORMS = {"as generated": contextlib.nullcontext, "last block whole": last_block_whole, "neither": neither}
TIMERS = ("back to back", "after a clean flush", "do_bench")


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
    calls["plain read"] = best_plain_read(x, lambda n, call, t: n / us_back_to_back(call, [t], 20))
    copies = [x.clone() for _ in range(max(1, 2**28 // nbytes(x)))]
    timers = (
        lambda c: us_back_to_back(c, copies, 100),
        lambda c: us_after_clean_flush(lambda: c(x)),
        lambda c: do_bench_us(lambda: c(x)),
    )
    cells = []
    for timer in timers:
        samples = in_rounds([lambda c=c: timer(c) for c in calls.values()], rounds)
        cells.append(" / ".join(f"{statistics.median(r[i] for r in samples):.2f}" for i in range(len(calls))))
    plan = forms["as generated"][1]
    row = f"{plan.block} on {plan.num_warps}, {plan.compiled_blocks}, {plan.rest_block}"
    return f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {row} | " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = parser.parse_args(argv)
    inputs = inputs_or_exit(args, "row_counts", CASES, lambda x: [row_sum(x, form) for form in FORMS])
    if isinstance(inputs, int):
        return inputs
    names = list(FORMS) + ["torch"] + ([] if args.no_compile else ["torch.compile"]) + ["plain read"]
    lines = [
        "| case | block, count compiled in, last block's width | " + " | ".join(f"{t} µs: " + " / ".join(names) for t in TIMERS) + " |",
        "|---|---|---|---|---|",
    ]
    lines += [case_row(x, args.rounds, not args.no_compile) for x in inputs]
    report(header() + f"\nMedians of {args.rounds} alternated rounds a timer\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
