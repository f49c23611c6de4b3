"""Block-shape sweep for the tiling heuristics (GPU): which (block, num_warps) each case wants.

    python -m benchmarks.sweep [NAME ...]    # bench's cases whose name contains a NAME

Patches the analysis' tiling choice for one case at a time and prints GB/s per variant. Every
variant, and the default, is checked against torch before it is timed; a wrong answer stops
the run with a non-zero exit (a block changes how a kernel walks its task, never its result).
"""

from __future__ import annotations

import dataclasses
import sys

import torch

import tritonwise.analysis.plan as plan_module
from benchmarks.bench import cases
from benchmarks.harness import WrongAnswer, gbps
from benchmarks.payloads import functions
from tritonwise.analysis.tiling import choose_tiling

VARIANTS = {
    "flat": [((b,), w) for b in (512, 1024, 2048, 4096, 8192) for w in (2, 4, 8, 16)],
    "tile2d": [
        ((bm, bn), w) for bm, bn in ((32, 32), (64, 64), (32, 128), (64, 128), (128, 64), (128, 128)) for w in (4, 8)
    ],
    "nd": [((bm, bn), w) for bm, bn in ((4, 1024), (8, 512), (16, 256), (2, 1024)) for w in (4, 8)],
}
DEFAULT_NAMES = [
    "add fp32 contiguous",
    "add bf16",
    "add fp16",
    "transpose copy 8191",
    "transpose copy 8192",
    "permuted copy",
    "row broadcast",
    "one transposed",
]
TOP = 8


def forced(block, warps):
    def choose(*args, **kwargs):
        tiling = choose_tiling(*args, **kwargs)
        if len(tiling.block) != len(block):
            raise LookupError("variant does not fit this scheme")
        return dataclasses.replace(tiling, block=block, num_warps=warps)

    return choose


def variant_rates(name: str, variants: list) -> list:
    """(GB/s, block, warps) of the case called `name` under each variant that fits its scheme
    and compiles, each planned by new functions and checked against torch before it is timed."""
    results = []
    for block, warps in variants:
        plan_module.choose_tiling = forced(block, warps)
        try:
            case = case_named(name)
            case.check()
            results.append((gbps(case.nbytes, case.ours), block, warps))
        except LookupError:
            pass
        except WrongAnswer:
            raise
        except Exception as e:  # a variant the compiler rejects
            print(f"   {block} {warps}: {type(e).__name__}", file=sys.stderr)
        finally:
            plan_module.choose_tiling = choose_tiling
    return results


def case_named(name: str):
    """bench's case called `name`, of functions with no plans yet."""
    return next(case for case in cases(fns=functions()) if case.name == name)


def main(argv=None) -> int:
    if not torch.cuda.is_available():
        print("sweep needs a CUDA GPU", file=sys.stderr)
        return 2
    names = (sys.argv[1:] if argv is None else argv) or DEFAULT_NAMES
    variants = sorted({v for vs in VARIANTS.values() for v in vs})
    for case in cases():
        if not any(n in case.name for n in names):
            continue
        case.check()
        default = gbps(case.nbytes, case.ours)
        results = variant_rates(case.name, variants)
        print(f"== {case.name}: default {default:.0f} GB/s")
        for got, block, warps in sorted(results, reverse=True)[:TOP]:
            print(f"   {got:7.0f} GB/s  block {block} warps {warps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
