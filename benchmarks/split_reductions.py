"""Split against unsplit reductions along dims with few kept rows (GPU): GB/s read (median of
do_bench), the split as tritonwise chooses it, the unsplit by setting SPLIT_MAX_ROWS to 0.

    python -m benchmarks.split_reductions
    python -m benchmarks.split_reductions --device cpu   # both forms checked on small inputs, nothing timed

Both forms of every case are checked against torch before anything is timed; a wrong answer
stops the run with a non-zero exit.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch
import triton

from benchmarks.harness import check_against, gbps, smoke_arguments, smoke_run
from tritonwise import pointwise_dynamic
from tritonwise.analysis import plan as plan_module


@triton.jit
def ident(x):
    return x


CASES = [
    ((128, 16384), torch.bfloat16),
    ((64, 1 << 20), torch.float32),
    ((8, 1 << 22), torch.float32),
    ((256, 1 << 16), torch.float32),
    ((32, 1 << 16), torch.float32),
    ((128, 1 << 18), torch.bfloat16),
]
SMOKE_CASES = [((8, 4096), torch.float32), ((4, 2048), torch.bfloat16)]  # few rows: split on CPU too


@contextlib.contextmanager
def splitting(split: bool):
    """Reductions planned inside split as tritonwise chooses (True) or never (False)."""
    saved = plan_module.SPLIT_MAX_ROWS
    plan_module.SPLIT_MAX_ROWS = saved if split else 0
    try:
        yield
    finally:
        plan_module.SPLIT_MAX_ROWS = saved


def row_sum(x, split: bool):
    """A fresh row-sum function planned for `x` split or not, checked against torch: (the
    function, how many parts the split cut the rows into)."""
    with splitting(split):
        fn = pointwise_dynamic(ident, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
        tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-3
        name = f"sum(x, -1) {tuple(x.shape)} {str(x.dtype)[6:]}, {'split' if split else 'unsplit'}"
        check_against(x.sum(-1), fn(x), name, rtol=tol, atol=10 * tol)
        return fn, fn.explain(x).split_parts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    args = parser.parse_args(argv)
    smoke = smoke_run(args, "split_reductions")
    if smoke is None:
        return 2
    inputs = [torch.randn(shape, device=args.device).to(dtype) for shape, dtype in (SMOKE_CASES if smoke else CASES)]
    checked = [(x, row_sum(x, True), row_sum(x, False)) for x in inputs]
    parts = ", ".join(f"{tuple(x.shape)} in {split[1]}" for x, split, _ in checked)
    print(f"{len(checked)} cases, split ({parts}) and unsplit, give torch's answer", flush=True)
    if smoke:
        return 0
    for x, (split_fn, parts), (unsplit_fn, _) in checked:
        read = x.numel() * x.element_size()
        with splitting(True):
            a = gbps(read, lambda: split_fn(x))
        with splitting(False):
            b = gbps(read, lambda: unsplit_fn(x))
        eager = gbps(read, lambda: x.sum(-1))
        row = f"| {tuple(x.shape)} {str(x.dtype)[6:]} | split {parts}: {a:.0f} | unsplit: {b:.0f}"
        print(f"{row} | eager {eager:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
