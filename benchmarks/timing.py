"""Timers and output shared by the GPU benchmarks: host-side timers (host_overhead.py,
launch_layers.py), GPU time from a CUDA graph, and writing a report."""

from __future__ import annotations

import itertools
import statistics
import time
from typing import Callable

import torch


def per_call_us(fn, calls: int = 2000) -> float:
    """Back to back: `calls` calls, then a synchronize (the GPU's pace can enter)."""
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def host_only_us(fn, calls: int = 200, repeats: int = 5) -> float:
    """`calls` calls after a synchronize, the clock stopped before synchronizing, so the launch
    queue never fills and only host time counts; the median of `repeats`."""
    for _ in range(50):
        fn()
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def median_us(fns: list, rounds: int = 9, timer: Callable = per_call_us) -> list:
    """Median over `rounds` of `timer` for each function, the functions interleaved in every
    round so that drift in the host's speed reaches all of them alike."""
    samples = [[] for _ in fns]
    for _ in range(rounds):
        for times, fn in zip(samples, fns):
            times.append(timer(fn))
    return [statistics.median(times) for times in samples]


def gpu_us_per_kernel(fn, launches: int = 100) -> float:
    """GPU microseconds per call of `fn`: `launches` calls captured in one CUDA graph, replayed
    (the median of 10 replays), so that no host time enters."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        begin.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) * 1e3 / launches)
    return statistics.median(times)


def us_back_to_back(call, inputs: list, launches: int) -> float:
    """GPU microseconds per `call(t)`, `launches` calls back to back in one CUDA graph cycling
    through `inputs`: no host time, no flush between calls. Copies of one input that together
    exceed L2 make every call read DRAM, as in a model, where a kernel's input was written long
    before; and no dirty lines are left for the timed kernel to write back, unlike do_bench."""
    cycle = itertools.cycle(inputs)
    return gpu_us_per_kernel(lambda: call(next(cycle)), launches)


def us_after_clean_flush(fn, reps: int = 50, flush_bytes: int = 2**28) -> float:
    """Microseconds of one call of `fn` that starts with nothing useful in L2 and nothing dirty
    there either: `triton.testing.do_bench` empties L2 by writing a 256 MiB buffer, which leaves
    dirty lines that the timed kernel then writes back while it reads (a cost that grows as the
    timed kernel's own traffic shrinks). Here L2 is emptied by reading `flush_bytes` instead;
    otherwise as do_bench: CUDA events around each call, the median of `reps`."""
    buffer = torch.ones(flush_bytes // 4, device="cuda")
    sink = torch.empty((), device="cuda")
    fn()
    times = []
    for _ in range(reps):
        torch.sum(buffer, dim=0, out=sink)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        times.append((begin, end))
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) for b, e in times) * 1e3


def gbps_after_clean_flush(nbytes: int, fn) -> float:
    return nbytes / us_after_clean_flush(fn) / 1e3


def us_at(nbytes: int, gbps: float) -> float:
    """Microseconds that `nbytes` take at `gbps` GB/s."""
    return nbytes / gbps / 1e3


def report(text: str, path=None) -> None:
    """Print a benchmark's tables, and write them to `path` when one is given."""
    print("\n" + text)
    if path:
        with open(path, "w") as f:
            f.write(text)
