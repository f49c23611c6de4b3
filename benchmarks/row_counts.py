"""Row sums whose row length decides constexprs of the kernel (GPU): tritonwise as it plans them
(WHOLE_BLOCKS, a row's count of whole blocks, compiled in for 1 to 32; REST_BLOCK, the width its
masked last columns are read in, an eighth of a block where they fit one), the same file with
every last block whole, the same counting every row at run time too (as before, but for this
stop's unclamped one-row blocks and loop over the last columns), torch,
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

import contextlib
import sys
from unittest import mock

import torch

from benchmarks import row_sums
from benchmarks.row_sums import ident
from tritonwise.schemes import row_looped

CASES = {
    False: [
        ((128, 16384), torch.bfloat16),  # 8 blocks of (1, 2048) a row
        ((1024, 16384), torch.bfloat16),
        ((2048, 8192), torch.bfloat16),  # 4
        ((512, 65536), torch.bfloat16),  # 32, the most compiled in
        ((256, 32768), torch.float32),  # 16
        ((8192, 2048), torch.float32),  # 2 of (2, 1024) (several rows a block)
        ((4096, 3008), torch.float32),  # 2 of (2, 1024) and a rest
        ((8192, 1100), torch.bfloat16),  # unaligned rows, read from their start: 1 of (2, 1024), 76 more
        ((16384, 1025), torch.float32),
        ((8192, 2100), torch.bfloat16),
        ((8192, 1324), torch.float32),  # a rest of 300: read in a whole block
        ((256, 8208), torch.float32),  # 4 of (1, 2048) on 16 warps, 16 more read in a block of 256
        ((64, 131072), torch.float32),  # few long rows: 16 of the pipelined (1, 8192)
        ((128, 100000), torch.bfloat16),  # 12 of (1, 8192) and a rest
    ],
    True: [((3, 6160), torch.float32), ((300, 3008), torch.bfloat16), ((2, 70000), torch.float32)],
}


@contextlib.contextmanager
def last_block_whole():
    """Every row's masked last columns read in a whole block (REST_BLOCK = BLOCK_N): the same file."""
    with mock.patch.object(row_looped.RowLooped, "rest_block_fraction", 1):
        yield


@contextlib.contextmanager
def neither():
    """And every row's count of whole blocks taken at run time (WHOLE_BLOCKS 0)."""
    with last_block_whole(), mock.patch.object(row_looped.RowLooped, "max_compiled_blocks", 0):
        yield


FORMS = {"as generated": contextlib.nullcontext, "last block whole": last_block_whole, "neither": neither}
TIMERS = ("back to back", "after a clean flush", "do_bench")


def row_sum(x, form: str):
    """A fresh row-sum function planned for `x` under `form`, checked against torch on a poisoned
    output: (the function, its explanation)."""
    return row_sums.row_sum(x, form, FORMS[form], ident)


def case_row(x, rounds: int, compiled: bool) -> str:
    plans, cells = row_sums.timed_forms(x, FORMS, row_sum, rounds, compiled, flush=True)
    plan = plans["as generated"]
    row = f"{plan.block} on {plan.num_warps}, {plan.compiled_blocks}, {plan.rest_block}"
    return f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {row} | " + " | ".join(cells) + " |"


def _head(names) -> list:
    timed = " | ".join(f"{t} µs: " + " / ".join(names) for t in TIMERS)
    return ["| case | block, count compiled in, last block's width | " + timed + " |", "|---|---|---|---|---|"]


def main(argv=None) -> int:
    return row_sums.main(argv, __doc__, "row_counts", CASES, FORMS, row_sum, case_row, _head)


if __name__ == "__main__":
    sys.exit(main())
