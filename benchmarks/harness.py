"""The shared harness of the benchmarks: checking against torch, timers, ceilings and reports.

Every benchmark checks each case against torch before it times it (`check_against`, which
raises `WrongAnswer`, so a script with a wrong answer exits non-zero), then times it with
one of the timers here and prints its tables through `report`. Run a benchmark from the
repository root as a module: `python -m benchmarks.bench`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union
from unittest import mock

import torch
import triton
import triton.language as tl

# ---------------------------------------------------------------------------------------------
# Checking against torch


class WrongAnswer(AssertionError):
    """A benchmark case whose result is not torch's: it is not timed, and the script fails."""


def mismatch(expected, got, name: str, rtol: float = 1e-4, atol: float = 1e-3) -> Optional[str]:
    """None when `got` is `expected` (torch's answer): the same structure, shapes and dtypes,
    values within rtol/atol and NaN where torch has NaN; else a message naming the case."""
    try:
        torch.testing.assert_close(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    except (AssertionError, TypeError, ValueError) as error:
        return f"{name}: wrong answer against torch: {error}"
    return None


def check_against(expected, got, name: str, rtol: float = 1e-4, atol: float = 1e-3) -> None:
    """Raise WrongAnswer naming `name` unless `got` matches `expected` (see `mismatch`)."""
    message = mismatch(expected, got, name, rtol, atol)
    if message is not None:
        raise WrongAnswer(message)


def positive_int(text: str) -> int:
    """An argparse type: a count of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive count, got {text}")
    return value


def smoke_arguments(parser: argparse.ArgumentParser) -> None:
    """--device and --smoke: on small inputs, check every case against torch and time nothing
    (on CPU, always a smoke run, through Triton's interpreter)."""
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--smoke", action="store_true", help="small inputs, checks only (implied on CPU)")


def smoke_run(args: argparse.Namespace, script: str) -> Optional[bool]:
    """Whether this is a smoke run (see `smoke_arguments`); None, with a message, when the
    run asks for CUDA and there is none."""
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"{script} needs a CUDA GPU (or --device cpu for a check on small inputs)", file=sys.stderr)
        return None
    return args.smoke or args.device == "cpu"


def inputs_or_exit(args: argparse.Namespace, script: str, cases: dict, check: Callable) -> Union[list, int]:
    """For a benchmark timing forms of cases (`cases[smoke]`: (shape, dtype) pairs): the inputs
    to time, or the exit code where the run ends here: 2 without the GPU it asks for; 0 after a
    smoke run, which calls `check(x)` (raising on a wrong answer) on each small input."""
    smoke = smoke_run(args, script)
    if smoke is None:
        return 2
    inputs = [torch.randn(shape, device=args.device).to(dtype) for shape, dtype in cases[smoke]]
    if not smoke:
        return inputs
    for x in inputs:
        check(x)
    print(f"every form of {len(inputs)} cases checked: they give torch's answer")
    return 0


@contextlib.contextmanager
def own_cache_dir(prefix: str):
    """TRITONWISE_CACHE_DIR set to a fresh directory, removed after: the files a benchmark's form
    writes under a patched rule stay apart from the other forms'."""
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        with mock.patch.dict(os.environ, {"TRITONWISE_CACHE_DIR": directory}):
            yield


# ---------------------------------------------------------------------------------------------
# torch.compile, the peer

# A benchmark compiles one expression (one code object) for every case it times; Dynamo
# recompiles it per shape up to its limit (8 in torch 2.11), then runs the expression eagerly.
RECOMPILES = 64


def room_for_recompiles() -> None:
    """Let Dynamo compile one code object RECOMPILES times (the flag's name changed across releases)."""
    for flag in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, flag):
            setattr(torch._dynamo.config, flag, max(RECOMPILES, getattr(torch._dynamo.config, flag)))


def torch_compiled(fn: Callable, **options) -> Callable:
    """torch.compile(fn, **options), compiled for each new shape however many cases share `fn`'s code."""
    room_for_recompiles()
    return torch.compile(fn, **options)


# ---------------------------------------------------------------------------------------------
# Timers


def launcher_built() -> None:
    """Wait for launch.c, which a process with empty caches builds on a background thread while
    its first launches go through ctypes at tens of microseconds each (runtime/kernels.py,
    first_launch): the timers below measure the steady state, not that window."""
    if torch.cuda.is_available():
        from tritonwise.runtime import native

        native.launch_module()


def per_call_us(fn, calls: int = 2000) -> float:
    """Back to back: `calls` calls, then a synchronize (the GPU's pace can enter)."""
    launcher_built()
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
    launcher_built()
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


def whole_call_us(fn, args) -> float:
    """Microseconds of one call `fn(*args)`, the clock stopped before synchronizing."""
    start = time.perf_counter()
    fn(*args)
    elapsed = time.perf_counter() - start
    if args[0].device.type == "cuda":
        torch.cuda.synchronize()
    return elapsed * 1e6


def median_call_us(fn, operands: list, timer: Callable = whole_call_us) -> float:
    """Median microseconds of `timer(fn, args)` over operand tuples (each a new shape, say)."""
    launcher_built()
    return statistics.median(timer(fn, args) for args in operands)


def gpu_us_per_kernel(fn, launches: int = 100) -> float:
    """GPU microseconds per call of `fn`: `launches` calls captured in one CUDA graph, replayed
    (the median of 10 replays), so that no host time enters."""
    launcher_built()
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


@contextlib.contextmanager
def block_forced(scheme, block: tuple, warps: Optional[int] = None):
    """Plans made inside take `block` in `scheme` (on `warps`, where given) whatever its rules,
    in files that read rows rotated too (RowLooped.peeled_block)."""
    scheme.pick_block = lambda task_shape, m_dim, choices, itemsize: block
    scheme.peeled_block = lambda task_shape, m_dim, choices, chosen: block
    if warps is not None:
        scheme.task_warps = lambda chosen, task_shape, m_dim: warps
    try:
        yield
    finally:
        for name in ("pick_block", "peeled_block", "task_warps"):
            scheme.__dict__.pop(name, None)


def us_after_clean_flush(fn, reps: int = 50, flush_bytes: int = 2**28) -> float:
    """Microseconds of one call of `fn` that starts with nothing useful in L2 and nothing dirty
    there either: `triton.testing.do_bench` empties L2 by writing a 256 MiB buffer, which leaves
    dirty lines that the timed kernel then writes back while it reads (a cost that grows as the
    timed kernel's own traffic shrinks). Here L2 is emptied by reading `flush_bytes` instead;
    otherwise as do_bench: CUDA events around each call, the median of `reps`."""
    launcher_built()
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


def do_bench_us(fn: Callable) -> float:
    """The median microseconds of `fn` under triton.testing.do_bench (L2 flushed before each call)."""
    launcher_built()
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def gbps(nbytes: int, fn: Callable) -> float:
    """GB/s of `fn` moving `nbytes`, under do_bench."""
    return nbytes / do_bench_us(fn) / 1e3


def gbps_after_clean_flush(nbytes: int, fn) -> float:
    return nbytes / us_after_clean_flush(fn) / 1e3


def us_at(nbytes: int, gbps: float) -> float:
    """Microseconds that `nbytes` take at `gbps` GB/s."""
    return nbytes / gbps / 1e3


def nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


# ---------------------------------------------------------------------------------------------
# Ceilings: the GB/s no kernel moving the same bytes beats under the same timer


def copy_ceiling() -> float:
    """GB/s of a clone of 1 GiB under do_bench (bytes read and written)."""
    x = torch.empty(2**28, device="cuda")  # 1 GiB of fp32
    x.uniform_()
    return gbps(2 * nbytes(x), lambda: x.clone())


# (elements per program, warps): the best configs of a sweep of blocks 2048-8192, 1-32 blocks a
# program, 8 or 16 warps, pipelined or not, on 4, 64 and 256 MiB (H100): one block a program,
# unpipelined, won at every size.
READ_CONFIGS = ((2048, 16), (4096, 16), (4096, 8), (8192, 8), (8192, 16))


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
    it reads a byte."""
    out = torch.empty(1, device=device)
    return lambda: _store_one[(1,)](out)


def plain_reads(x: torch.Tensor) -> dict:
    """{(block, warps): read(t)} over READ_CONFIGS: a plain Triton read of a tensor like contiguous
    `x` in memory order (each block summed, one partial per program), each checked on `x` first."""
    flat = x.contiguous().view(-1)
    reads = {}
    for block, warps in READ_CONFIGS:
        programs = triton.cdiv(flat.numel(), block)
        partial = torch.empty(programs, device=x.device)

        def read(t, programs=programs, partial=partial, block=block, warps=warps):
            _read_blocks[(programs,)](t.view(-1), partial, t.numel(), BLOCK=block, num_warps=warps)

        read(flat)
        check_against(flat.float().sum(), partial.sum(), f"plain read, block {block}", 1e-3, 1e-2 * programs)
        reads[block, warps] = read
    return reads


def read_ceiling(x: torch.Tensor, rate) -> float:
    """The best GB/s of the plain reads of contiguous `x` over READ_CONFIGS, as `rate(nbytes,
    read, x)` times `read(t)`, a read of a tensor like `x` (`timed` makes such a rate of a timer
    of functions without arguments). A reduction reads each input once and writes almost nothing,
    so this bounds what any reduction of those bytes can reach under that timer."""
    flat = x.contiguous().view(-1)
    return max(rate(nbytes(flat), read, flat) for read in plain_reads(x).values())


def best_plain_read(x: torch.Tensor, rate, samples: int = 3) -> Callable:
    """The plain read of `x` (plain_reads) whose median of `samples` timings by `rate` is highest:
    one kernel to time beside another in rounds. read_ceiling's best of five single timings sits
    above a typical timing of any one of them where timings scatter (small inputs)."""
    flat = x.contiguous().view(-1)
    reads = plain_reads(x).values()
    return max(reads, key=lambda read: statistics.median(rate(nbytes(flat), read, flat) for _ in range(samples)))


def in_rounds(measures: Sequence[Callable[[], float]], rounds: int) -> list:
    """Each of `measures` taken once a round for `rounds` rounds (this host's figures drift within
    a run), each round starting one further along (a place in the order can favour whoever takes
    it): per round, the figures in the measures' own order."""
    count = len(measures)
    samples = []
    for start in range(rounds):
        taken = {k % count: measures[k % count]() for k in range(start, start + count)}
        samples.append([taken[index] for index in range(count)])
    return samples


def timed(gbps) -> Callable:
    """`rate(nbytes, call, x)` of `gbps(nbytes, fn)`, a timer of functions without arguments."""
    return lambda nbytes, call, x: gbps(nbytes, lambda: call(x))


# ---------------------------------------------------------------------------------------------
# Bandwidth cases and reports


@dataclass
class Case:
    """One bandwidth case: `ours` (tritonwise) against `eager` (torch), `nbytes` moved per call;
    `reference` gives torch's answer where `eager`'s result has another form; `writes` holds
    the outputs `ours` is given (poisoned before the check, so that a missed element fails it)."""

    name: str
    nbytes: int
    ours: Callable
    eager: Callable
    reference: Optional[Callable] = None
    rtol: float = 1e-4
    atol: float = 1e-3
    writes: tuple = ()

    def check(self) -> None:
        """Raise WrongAnswer unless `ours()` gives torch's answer."""
        expected = (self.reference or self.eager)()
        for out in self.writes:
            out.fill_(float("nan"))
        check_against(expected, self.ours(), self.name, self.rtol, self.atol)


def bandwidth_table(ceiling: float, rows: list) -> str:
    """Rows of (name, ours, eager, torch.compile, ours / ceiling), in GB/s."""
    lines = [
        "| case | tritonwise GB/s | torch eager | torch.compile | tritonwise / copy ceiling |",
        "|---|---|---|---|---|",
        f"| copy ceiling (clone, 1 GiB) | — | {ceiling:.0f} | — | 100% |",
    ]
    for name, ours, eager, compiled, ratio in rows:
        lines.append(f"| {name} | {ours:.0f} | {eager:.0f} | {compiled:.0f} | {ratio:.0%} |")
    return "\n".join(lines)


def header() -> str:
    """The device and versions a report was measured with."""
    import tritonwise  # here, not at the top: cold_start_child.py imports the harness for any library

    return (
        f"Device: {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}; "
        f"tritonwise {tritonwise.__version__}; {datetime.date.today().isoformat()}"
    )


def report(text: str, path=None) -> None:
    """Print a benchmark's tables, and write them to `path` when one is given."""
    print("\n" + text)
    if path:
        with open(path, "w") as f:
            f.write(text)
