"""The floor of an unaligned transpose: the fastest plain-Triton kernels we can write for it.

    python -m benchmarks.transpose_floor [--rows 8191] [--cols 8193]

The case is bench.py's `transpose copy ROWSxCOLS`: `out = x.t()` copied into a contiguous
(rows, cols) fp32 output from a contiguous (cols, rows) input, both row lengths odd, so no row
but the first starts 16-byte aligned. Two families of plain-Triton kernels, each over a sweep of
tiles and warps, give the floor tritonwise's kernel is held to:
- transpose: the kernel this case needs (a tile loaded along the input's rows, stored along the
  output's through tl.trans);
- row copy: the same rows copied without transposing (an input of the output's own layout):
  what moving these misaligned rows costs with no transpose at all.
Every variant is checked against torch before it is timed (do_bench median, bytes read once and
written once). The table ends with tritonwise's `copy(x.t(), out0=out)` against both floors.
"""

from __future__ import annotations

import argparse
import itertools
import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import check_against, copy_ceiling, gbps, header, nbytes, report
from benchmarks.payloads import copy

TILES = [(32, 32), (32, 64), (64, 32), (64, 64), (32, 128), (128, 32), (64, 128), (128, 64)]
WARPS = [4, 8]


@triton.jit
def _transpose(x_ptr, out_ptr, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    """out[r, c] = x[c, r]: out (rows, cols) and x (cols, rows), both row-major."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    tile = tl.load(x_ptr + c[:, None] * rows + r[None, :], mask=(c[:, None] < cols) & (r[None, :] < rows))
    tl.store(out_ptr + r[:, None] * cols + c[None, :], tl.trans(tile), mask=(r[:, None] < rows) & (c[None, :] < cols))


@triton.jit
def _row_copy(y_ptr, out_ptr, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    """out[r, c] = y[r, c], both (rows, cols) row-major, tiled as the transpose is."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    offsets = r[:, None] * cols + c[None, :]
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    tl.store(out_ptr + offsets, tl.load(y_ptr + offsets, mask=mask), mask=mask)


def best(kernel, source, out, expected, moved: int) -> tuple:
    """(GB/s, tile, warps) of the fastest configuration of `kernel`, each checked first."""
    rows, cols = out.shape
    found = (0.0, None, None)
    for (br, bc), warps in itertools.product(TILES, WARPS):
        grid = (triton.cdiv(rows, br), triton.cdiv(cols, bc))

        def run(br=br, bc=bc, warps=warps, grid=grid):
            kernel[grid](source, out, rows, cols, BR=br, BC=bc, num_warps=warps)

        out.fill_(float("nan"))
        run()
        check_against(expected, out, f"{kernel.fn.__name__} {br}x{bc}, {warps} warps")
        found = max(found, (gbps(moved, run), (br, bc), warps), key=lambda f: f[0])
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8191)
    parser.add_argument("--cols", type=int, default=8193)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("transpose_floor needs a CUDA GPU", file=sys.stderr)
        return 2
    rows, cols = args.rows, args.cols
    x = torch.randn(cols, rows, device="cuda")
    out = torch.empty(rows, cols, device="cuda")
    expected = x.t().contiguous()
    moved = 2 * nbytes(x)
    transpose = best(_transpose, x, out, expected, moved)
    row_copy = best(_row_copy, expected, out, expected, moved)
    out.fill_(float("nan"))
    check_against(expected, copy(x.t(), out0=out), "tritonwise copy(x.t(), out0=out)")
    ours = gbps(moved, lambda: copy(x.t(), out0=out))
    ceiling = copy_ceiling()
    lines = [
        header(),
        "",
        f"| transpose copy {rows}x{cols} fp32 | GB/s | of the copy ceiling | tritonwise / this |",
        "|---|---|---|---|",
        f"| copy ceiling (clone, 1 GiB) | {ceiling:.0f} | 100% | |",
    ]
    for name, (rate, tile, warps) in (("plain Triton transpose", transpose), ("plain Triton row copy", row_copy)):
        lines.append(f"| {name}, best: tile {tile[0]}x{tile[1]}, {warps} warps | {rate:.0f} | "
                     f"{rate / ceiling:.0%} | {ours / rate:.3f} |")
    lines.append(f"| tritonwise copy(x.t(), out0=out) | {ours:.0f} | {ours / ceiling:.0%} | |")
    report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
