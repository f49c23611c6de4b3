"""The read ceiling at a given size: GB/s of a plain Triton kernel that reads a tensor's bytes in
memory order and sums each block (one partial per program), the best of a few blocks and warp
counts. A reduction reads each input once and writes almost nothing, so this, not a clone of
1 GiB, bounds what any reduction of those bytes can reach under the same timer: a 64 MiB read
under do_bench cannot reach the 1 GiB clone's rate (RESULTS.md, eighth session)."""

from __future__ import annotations

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


def read_ceiling(x: torch.Tensor, gbps) -> float:
    """The best GB/s (by `gbps(nbytes, fn)`) of _read_blocks over CONFIGS on contiguous `x`."""
    flat = x.contiguous().view(-1)
    nbytes = flat.numel() * flat.element_size()
    best = 0.0
    for block, warps in CONFIGS:
        programs = triton.cdiv(flat.numel(), block)
        partial = torch.empty(programs, device=x.device)
        launch = lambda: _read_blocks[(programs,)](flat, partial, flat.numel(), BLOCK=block, num_warps=warps)  # noqa: E731
        launch()
        torch.testing.assert_close(partial.sum(), flat.float().sum(), rtol=1e-3, atol=1e-2 * programs)
        best = max(best, gbps(nbytes, launch))
    return best
