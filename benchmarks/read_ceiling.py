"""The read ceiling at a given size: GB/s of a plain Triton kernel that reads a tensor's bytes in
memory order and sums each block (one partial per program), the best of a few blocks and warp
counts. A reduction reads each input once and writes almost nothing, so this, not a clone of
1 GiB, bounds what any reduction of those bytes can reach under the same timer: a 64 MiB read
under do_bench cannot reach the 1 GiB clone's rate (RESULTS.md, eighth session).

    python benchmarks/read_ceiling.py

times that read from 1 to 512 MiB and fits what each timer charges a kernel whatever its size."""

from __future__ import annotations

import os
import sys
from typing import Callable

import torch
import triton
import triton.language as tl

# (elements per program, warps): the best configs of a sweep of blocks 2048-8192, 1-32 blocks a
# program, 8 or 16 warps, pipelined or not, on 4, 64 and 256 MiB (H100, .gpu/exp37.py): one block
# a program, unpipelined, won at every size.
CONFIGS = ((2048, 16), (4096, 16), (4096, 8), (8192, 8), (8192, 16))


@triton.jit
def _read_blocks(x_ptr, partial_ptr, numel, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < numel, other=0, eviction_policy="evict_first")
    tl.store(partial_ptr + tl.program_id(0), tl.sum(x.to(tl.float32), 0))


@triton.jit
def _store_one(out_ptr):
    tl.store(out_ptr, 0.0)


def empty_kernel(device) -> Callable:
    """A launch of one program that stores one float: what any kernel costs under a timer before
    it reads a byte (H100, do_bench: 3.3-4.6 us; a read of N bytes took 6.5 us + N / 3117 GB/s
    over 16-512 MiB, RESULTS.md, ninth session)."""
    out = torch.empty(1, device=device)
    return lambda: _store_one[(1,)](out)


def read_ceiling(x: torch.Tensor, rate) -> float:
    """The best GB/s of _read_blocks over CONFIGS reading contiguous `x`, as `rate(nbytes, read,
    x)` times `read(t)`, a read of a tensor like `x` (`timed` makes such a rate of a timer of
    functions without arguments)."""
    flat = x.contiguous().view(-1)
    nbytes = flat.numel() * flat.element_size()
    best = 0.0
    for block, warps in CONFIGS:
        programs = triton.cdiv(flat.numel(), block)
        partial = torch.empty(programs, device=x.device)

        def read(t, programs=programs, partial=partial, block=block, warps=warps):
            _read_blocks[(programs,)](t.view(-1), partial, t.numel(), BLOCK=block, num_warps=warps)

        read(flat)
        torch.testing.assert_close(partial.sum(), flat.float().sum(), rtol=1e-3, atol=1e-2 * programs)
        best = max(best, rate(nbytes, read, flat))
    return best


def timed(gbps) -> Callable:
    """`rate(nbytes, call, x)` of `gbps(nbytes, fn)`, a timer of functions without arguments."""
    return lambda nbytes, call, x: gbps(nbytes, lambda: call(x))


def fit_fixed_cost(sizes_us: list) -> tuple:
    """Least squares of t = a + nbytes / rate over (nbytes, microseconds) pairs: (a in us, rate
    in GB/s). `a` is what every read pays whatever its size; 90% of `rate` is out of reach for
    any read shorter than 9 * a microseconds' worth of bytes."""
    n = len(sizes_us)
    mean_x = sum(x for x, _ in sizes_us) / n
    mean_t = sum(t for _, t in sizes_us) / n
    slope = sum((x - mean_x) * (t - mean_t) for x, t in sizes_us) / sum((x - mean_x) ** 2 for x, _ in sizes_us)
    return mean_t - slope * mean_x, 1e-3 / slope


def main() -> int:
    """The read ceiling from 1 to 512 MiB under do_bench and after a clean flush, with the fixed
    cost each timer charges (a fit over 16-512 MiB) and an empty kernel's time."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench import do_bench_us, gbps, header
    from timing import gbps_after_clean_flush, report, us_after_clean_flush, us_at

    lines = ["| MiB | do_bench µs | GB/s | clean flush µs | GB/s |", "|---|---|---|---|---|"]
    points = {"do_bench": [], "clean flush": []}
    for mib in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        x = torch.randn(mib * 2**18, device="cuda")
        rates = (read_ceiling(x, timed(gbps)), read_ceiling(x, timed(gbps_after_clean_flush)))
        nbytes = mib * 2**20
        cells = []
        for timer, rate in zip(points, rates):
            cells += [f"{us_at(nbytes, rate):.1f}", f"{rate:.0f}"]
            if mib >= 16:
                points[timer].append((nbytes, us_at(nbytes, rate)))
        lines.append(f"| {mib} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    empty = empty_kernel("cuda")
    empty()
    lines.append("")
    lines.append(
        f"Empty kernel: {do_bench_us(empty):.1f} µs under do_bench, {us_after_clean_flush(empty):.1f} after a clean flush."
    )
    for timer, pairs in points.items():
        fixed, rate = fit_fixed_cost(pairs)
        lines.append(f"Fit over 16-512 MiB, {timer}: t = {fixed:.2f} µs + bytes / {rate:.0f} GB/s.")
    report(header() + "\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
