"""Block-shape sweep for the tiling heuristics (GPU): which (block, num_warps) each case wants.

    python benchmarks/sweep.py

Patches the analysis' tiling choice for one case at a time and prints GB/s per variant.
"""

from __future__ import annotations

import sys


import tritonwise.analysis.plan as plan_module
from tritonwise.analysis.tiling import Tiling, choose_tiling

sys.path.insert(0, "benchmarks")
import bench  # noqa: E402

VARIANTS = {
    "flat": [((b,), w) for b in (512, 1024, 2048, 4096, 8192) for w in (2, 4, 8, 16)],
    "tile2d": [
        ((bm, bn), w) for bm, bn in ((32, 32), (64, 64), (32, 128), (64, 128), (128, 64), (128, 128)) for w in (4, 8)
    ],
    "nd": [((bm, bn), w) for bm, bn in ((4, 1024), (8, 512), (16, 256), (2, 1024)) for w in (4, 8)],
}


def forced(block, warps):
    def choose(task_shape, strides, itemsize, config):
        t = choose_tiling(task_shape, strides, itemsize, config)
        if len(t.block) != len(block):
            raise LookupError("variant does not fit this scheme")
        return Tiling(t.scheme, t.m_dim, block, warps)

    return choose


TOP = 8


def _reset():
    for fn in (bench.add, bench.copy, bench.polar, bench.squared_error_sum):
        fn.plan_cache.clear()
        for inst in fn._instances.values():
            inst._plans.clear()


def main():
    names = sys.argv[1:] or [
        "add fp32 contiguous",
        "add bf16",
        "add fp16",
        "transpose copy 8191",
        "transpose copy 8192",
        "permuted copy",
        "row broadcast",
        "one transposed",
    ]
    variants = sorted({v for vs in VARIANTS.values() for v in vs})
    for case in bench.cases():
        if not any(n in case.name for n in names):
            continue
        results = []
        for block, warps in variants:
            plan_module.choose_tiling = forced(block, warps)
            _reset()
            try:
                results.append((bench.gbps(case.nbytes, case.ours), block, warps))
            except LookupError:
                pass
            except Exception as e:  # a variant the compiler rejects
                print(f"   {block} {warps}: {type(e).__name__}", file=sys.stderr)
        plan_module.choose_tiling = choose_tiling
        _reset()
        default = bench.gbps(case.nbytes, case.ours)
        print(f"== {case.name}: default {default:.0f} GB/s")
        for got, block, warps in sorted(results, reverse=True)[:TOP]:
            print(f"   {got:7.0f} GB/s  block {block} warps {warps}", flush=True)


if __name__ == "__main__":
    main()
