"""Scaling of shard-local pointwise calls over every visible GPU (DTensor, NCCL).

    python -m benchmarks.dtensor_scaling [GiB]        # GiB per GPU per operand (default 8)
    python -m benchmarks.dtensor_scaling --device cpu  # two gloo ranks on the CPU: checks only

Starts one rank per GPU. Each rank builds only its own shards (DTensor.from_local), so a rank
holds three operands of GiB each and one output, whatever the GPU count: the default needs
about 33 GiB a GPU. Each case runs on DTensors sharded over every GPU and, for the baseline,
on one GPU alone with the same per-GPU size; every result is checked against torch on the
rank's shards before anything is timed, and a wrong answer on any rank stops every rank with
a non-zero exit. Throughput is global bytes moved per second; scaling = throughput on all GPUs
/ throughput on one GPU (ideal: the GPU count). A second table gives the host cost of one call:
the host time of a small add (launch-bound), torch's and tritonwise's, on local tensors and
on DTensors, so that what a DTensor call adds to the dispatch is read beside torch's own.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import triton
from torch.distributed.tensor import DTensor, Shard, init_device_mesh

from benchmarks.harness import WrongAnswer, host_only_us, mismatch
from tritonwise import pointwise_dynamic

COLS = 8192
CHECK_BYTES = 2**28  # the check compares this much of a result at a time (its temporaries stay small)
SMOKE_ROWS, SMOKE_COLS = 24, 40  # rows per rank and columns of a CPU smoke run
HOST_ROWS, HOST_COLS = 8, 128  # per rank: a launch-bound add, for the host cost of one call


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


@pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def axpy(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def copy(x):
    return x


def local(t):
    return t.to_local() if isinstance(t, DTensor) else t


def cases(rows: int, cols: int, device: str, mesh=None) -> list:
    """(name, call, bytes moved, answer, given output) for the add and the transposed copy on
    `rows` x `cols` operands of this rank (sharded along rows over `mesh` when given).
    `answer(result, rows)` gives (torch's answer, the call's) for a slice of this rank's rows;
    the given output (this rank's part, or None) is poisoned before the check."""
    x, y = torch.randn(rows, cols, device=device), torch.randn(rows, cols, device=device)
    t = torch.empty(cols, rows, device=device)  # contiguous: copy(x.t(), out0=t) is a real transpose
    if mesh is not None:
        x, y = (DTensor.from_local(v, mesh, [Shard(0)], run_check=False) for v in (x, y))
        t = DTensor.from_local(t, mesh, [Shard(1)], run_check=False)
    nbytes = x.numel() * 4
    x_l, y_l, t_l = local(x), local(y), local(t)
    return [
        ("add fp32", lambda: axpy(x, y, 0.5), 3 * nbytes, lambda out, s: (x_l[s] + y_l[s] * 0.5, local(out)[s]), None),
        ("transposed copy fp32", lambda: copy(x.t(), out0=t), 2 * nbytes, lambda _, s: (x_l[s].t(), t_l[:, s]), t_l),
    ]


def check(chosen: list, rows: int, cols: int, device: str) -> None:
    """Each case's result against torch on this rank's shards, a slice of rows at a time; with a
    process group, every rank learns whether any rank failed and raises WrongAnswer."""
    step = max(1, CHECK_BYTES // (4 * cols))
    failure = None
    for name, call, _, answer, given in chosen:
        if given is not None:
            given.fill_(math.nan)
        result = call()
        for start in range(0, rows, step):
            failure = failure or mismatch(*answer(result, slice(start, start + step)), f"{name}, rows {start}+")
    failed = torch.tensor([failure is not None], dtype=torch.int32, device=device)
    if dist.is_initialized():
        dist.all_reduce(failed, op=dist.ReduceOp.MAX)
    if failed.item():
        rank = dist.get_rank() if dist.is_initialized() else 0
        raise WrongAnswer(failure or f"rank {rank} is right, another rank got a wrong answer")


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
    median = torch.tensor(sorted(times)[len(times) // 2], device="cuda")
    if dist.is_initialized():
        dist.all_reduce(median, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    return median.item()


def checked_rates(rows: int, cols: int, device: str, mesh=None) -> list:
    """(name, bytes per second) of each case, checked first; none timed on the CPU."""
    chosen = cases(rows, cols, device, mesh)
    check(chosen, rows, cols, device)
    if device == "cpu":
        return []
    return [(name, nbytes / seconds(call)) for name, call, nbytes, *_ in chosen]


def host_costs(device: str, mesh, iters: int) -> list:
    """(name, µs per call) of a small add, host time only (harness.host_only_us): torch's and
    tritonwise's, on local tensors and on DTensors sharded over `mesh`. Checked against torch first."""
    x, y = torch.randn(HOST_ROWS, HOST_COLS, device=device), torch.randn(HOST_ROWS, HOST_COLS, device=device)
    dx, dy = (DTensor.from_local(v, mesh, [Shard(0)], run_check=False) for v in (x, y))
    failure = mismatch(x + y, local(add(dx, dy)), "add on DTensors")
    if failure:
        raise WrongAnswer(failure)
    calls = [("torch, local", lambda: x + y), ("tritonwise, local", lambda: add(x, y)),
             ("torch, DTensor", lambda: dx + dy), ("tritonwise, DTensor", lambda: add(dx, dy))]
    timer = (lambda call: host_only_us(call, calls=iters)) if device == "cuda" else _untimed
    costs = []
    for name, call in calls:
        dist.barrier()
        costs.append((name, timer(call)))
    return costs


def _untimed(call) -> float:
    """On CPU ranks each call runs once, as a check: the interpreter's time says nothing."""
    call()
    return math.nan


def run_rank(rank: int, world: int, port: int, gib: float, device: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if device == "cuda":
        torch.cuda.set_device(rank)
        cols = COLS
        rows = int(gib * 2**30 / 4 / cols) // 64 * 64
    else:
        cols, rows = SMOKE_COLS, SMOKE_ROWS
    single = []
    if rank == 0:  # the baseline: one device, the same per-rank size, before the group exists
        single = checked_rates(rows, cols, device)
        if device == "cuda":
            torch.cuda.empty_cache()
    dist.init_process_group("nccl" if device == "cuda" else "gloo", rank=rank, world_size=world)
    try:
        mesh = init_device_mesh(device, (world,))
        multi = checked_rates(rows, cols, device, mesh)
        costs = host_costs(device, mesh, 500 if device == "cuda" else 2)
        if rank == 0:
            print(summary(world, rows, cols, single, multi))
            print(host_table(world, costs, device))
    finally:
        dist.destroy_process_group()


def summary(world: int, rows: int, cols: int, single: list, multi: list) -> str:
    if not multi:
        return f"{world} ranks on the CPU, {rows}x{cols} fp32 per rank: every case gives torch's answer"
    lines = [
        f"{world} x {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
        f"{rows}x{cols} fp32 per GPU per operand",
        f"| case | one GPU GB/s | {world} GPUs GB/s | scaling |",
        "|---|---|---|---|",
    ]
    for (name, one), (_, many) in zip(single, multi):
        lines.append(f"| {name} | {one / 1e9:.0f} | {many / 1e9:.0f} | {many / one:.2f}x |")
    return "\n".join(lines)


def host_table(world: int, costs: list, device: str) -> str:
    if device == "cpu":
        return f"host cost: {', '.join(name for name, _ in costs)} ran and give torch's answer"
    base = dict(costs)
    lines = [f"\nhost cost of one call, {HOST_ROWS}x{HOST_COLS} fp32 per rank, {world} ranks, rank 0",
             "| call | µs | / torch's on the same tensors |", "|---|---|---|"]
    for name, us in costs:
        torch_us = base[name.replace("tritonwise", "torch")]
        lines.append(f"| add, {name} | {us:.1f} | {us / torch_us:.2f}x |")
    return "\n".join(lines)


def fits(gib: float) -> bool:
    """Whether every GPU has room for three operands and an output of `gib` each, and 2 GiB more."""
    need = (4 * gib + 2) * 2**30
    short = [d for d in range(torch.cuda.device_count()) if torch.cuda.mem_get_info(d)[0] < need]
    if short:
        print(f"GPUs {short} have less than {need / 2**30:.0f} GiB free: pass a smaller size", file=sys.stderr)
    return not short


def launch(world: int, gib: float, device: str) -> int:
    """One process per rank (this module with --rank), the repository root on their path."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    port = 29000 + os.getpid() % 1000
    command = [sys.executable, "-m", "benchmarks.dtensor_scaling", "--device", device, "--rank"]
    procs = [subprocess.Popen([*command, str(r), str(world), str(port), str(gib)], env=env) for r in range(world)]
    return max(p.wait() for p in procs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gib", nargs="?", type=float, default=8.0, help="GiB per GPU per operand")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--rank", nargs=4, metavar=("RANK", "WORLD", "PORT", "GIB"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rank:
        rank, world, port, gib = args.rank
        run_rank(int(rank), int(world), int(port), float(gib), args.device)
        return 0
    if args.device == "cpu":
        return launch(2, args.gib, "cpu")
    if not torch.cuda.is_available():
        print("dtensor_scaling needs CUDA GPUs (or --device cpu for a check on small inputs)", file=sys.stderr)
        return 2
    return launch(torch.cuda.device_count(), args.gib, "cuda") if fits(args.gib) else 2


if __name__ == "__main__":
    sys.exit(main())
