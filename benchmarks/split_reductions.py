"""Split against unsplit reductions along dims with few kept rows (GPU): GB/s read (median of
do_bench), the split as tritonwise chooses it, the unsplit by setting SPLIT_MAX_ROWS to 0.

    python benchmarks/split_reductions.py
"""

import sys

import torch
import triton
from triton.testing import do_bench

from tritonwise import pointwise_dynamic
from tritonwise.analysis import plan as plan_module


@triton.jit
def ident(x):
    return x


def rate(x, split):
    saved = plan_module.SPLIT_MAX_ROWS
    plan_module.SPLIT_MAX_ROWS = saved if split else 0
    try:
        fn = pointwise_dynamic(ident, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", -1)])
        got = fn(x)
        ok = torch.allclose(got.float(), x.float().sum(-1), rtol=2e-2, atol=1e-1)
        parts = fn.explain(x).split_parts
        ms = do_bench(lambda: fn(x), warmup=25, rep=100, return_mode="median")
    finally:
        plan_module.SPLIT_MAX_ROWS = saved
    return x.numel() * x.element_size() / (ms * 1e-3) / 1e9, parts, ok


CASES = [
    ((128, 16384), torch.bfloat16),
    ((64, 1 << 20), torch.float32),
    ((8, 1 << 22), torch.float32),
    ((256, 1 << 16), torch.float32),
    ((32, 1 << 16), torch.float32),
    ((128, 1 << 18), torch.bfloat16),
]


def main() -> int:
    if not torch.cuda.is_available():
        print("split_reductions.py needs a CUDA GPU", file=sys.stderr)
        return 2
    for shape, dtype in CASES:
        x = torch.randn(shape, device="cuda").to(dtype)
        (a, parts, ok_split), (b, _, ok_unsplit) = rate(x, True), rate(x, False)
        eager = x.numel() * x.element_size() / (do_bench(lambda: x.sum(-1), return_mode="median") * 1e-3) / 1e9
        row = f"| {shape} {str(dtype)[6:]} | split {parts}: {a:.0f} ({ok_split}) | unsplit: {b:.0f} ({ok_unsplit})"
        print(f"{row} | eager {eager:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
