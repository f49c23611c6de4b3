"""Two-GPU scaling of shard-local pointwise calls: `python benchmarks/dtensor_scaling.py [GiB]`.

Starts one rank per visible GPU (NCCL). Each case runs on a DTensor sharded over every GPU and,
for the baseline, on one GPU alone with the same per-GPU size; throughput is global bytes moved
per second. Scaling = throughput on all GPUs / throughput on one GPU (ideal: the GPU count).
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch
import torch.distributed as dist
import triton
from torch.distributed.tensor import Shard, distribute_tensor, init_device_mesh

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tritonwise import pointwise_dynamic  # noqa: E402


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def axpy(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def copy(x):
    return x


def seconds(fn, iters: int = 20) -> float:
    """Median seconds per call, every rank synchronized before and after."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if dist.is_initialized():
            dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    local = torch.tensor(sorted(times)[len(times) // 2], device="cuda")
    if dist.is_initialized():
        dist.all_reduce(local, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    return local.item()


def cases(rows: int, cols: int, sharded: bool, mesh=None):
    """(name, call, bytes moved) for the add and the transposed copy."""
    x, y = torch.randn(rows, cols, device="cuda"), torch.randn(rows, cols, device="cuda")
    t = torch.empty(cols, rows, device="cuda")  # contiguous: copy(x.t()) into it is a real transpose
    if sharded:
        x, y = distribute_tensor(x, mesh, [Shard(0)]), distribute_tensor(y, mesh, [Shard(0)])
        t = distribute_tensor(t, mesh, [Shard(1)])
    nbytes = x.numel() * 4
    return [
        ("add fp32", lambda: axpy(x, y, 0.5), 3 * nbytes),
        ("transposed copy fp32", lambda: copy(x.t(), out0=t), 2 * nbytes),
    ]


def run_rank(rank: int, world: int, port: int, gib: float) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    cols = 8192
    rows_per_gpu = int(gib * 2**30 / 4 / cols) // 64 * 64
    single = []
    if rank == 0:  # the baseline: one GPU, the same per-GPU size, before the group exists
        single = [(n, b / seconds(f)) for n, f, b in cases(rows_per_gpu, cols, False)]
        torch.cuda.empty_cache()
    dist.init_process_group("nccl", rank=rank, world_size=world)
    mesh = init_device_mesh("cuda", (world,))
    multi = [(n, b / seconds(f)) for n, f, b in cases(rows_per_gpu * world, cols, True, mesh)]
    if rank == 0:
        name = torch.cuda.get_device_name()
        print(f"{world} x {name}, torch {torch.__version__}, triton {triton.__version__}, "
              f"{rows_per_gpu}x{cols} fp32 per GPU per operand")
        print(f"| case | one GPU GB/s | {world} GPUs GB/s | scaling |\n|---|---|---|---|")
        for (n, one), (_, many) in zip(single, multi):
            print(f"| {n} | {one / 1e9:.0f} | {many / 1e9:.0f} | {many / one:.2f}x |")
    dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        run_rank(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
        sys.exit(0)
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 12.0
    world = torch.cuda.device_count()
    port = 29000 + os.getpid() % 1000
    procs = [
        subprocess.Popen([sys.executable, __file__, "--rank", str(r), str(world), str(port), str(gib)])
        for r in range(world)
    ]
    sys.exit(max(p.wait() for p in procs))
