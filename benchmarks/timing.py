"""Host-side timers shared by host_overhead.py and launch_layers.py (GPU)."""

from __future__ import annotations

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
