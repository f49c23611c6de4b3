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

import contextlib
import sys
from unittest import mock

import torch

from benchmarks import row_sums
from benchmarks.harness import (
    own_cache_dir,
)
from benchmarks.row_sums import ident
from tritonwise.schemes import row_looped

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
    return row_sums.row_sum(x, form, FORMS[form], ident)


def case_row(x, rounds: int, compiled: bool) -> str:
    plans, cells = row_sums.timed_forms(x, FORMS, row_sum, rounds, compiled)
    tiles = "; ".join(f"{e.block} on {e.num_warps} warps{_split(e)}" for e in plans.values())
    return f"| {tuple(x.shape)} {str(x.dtype)[6:]} | {tiles} | {cells[0]} | {cells[1]} |"


def _split(explanation) -> str:
    """The blocks column's note of a split plan, else nothing."""
    return f", split in {explanation.split_note}" if explanation.split_note else ""


def _head(names) -> list:
    return [
        "| case | blocks: " + "; ".join(FORMS) + " | back to back µs: " + " / ".join(names) + " | do_bench µs: the same |",
        "|---|---|---|---|",
    ]


def main(argv=None) -> int:
    return row_sums.main(argv, __doc__, "odd_rows", CASES, FORMS, row_sum, case_row, _head)


if __name__ == "__main__":
    sys.exit(main())
