"""Bandwidth of reductions along dims (issue 16's cases): tritonwise vs eager vs torch.compile.

    python -m benchmarks.axis_reductions [--out FILE] [--no-compile | --dynamic] [--sweep] [--rounds N]
    python -m benchmarks.axis_reductions --device cpu   # every case checked on small inputs, nothing timed

Every case is checked against torch before anything is timed; a wrong answer stops the run
with a non-zero exit.

GB/s = bytes read (each input once; the reduced output is small and not counted) over the
median time of `triton.testing.do_bench`; the copy ceiling (clone of 1 GiB) is measured in the
same run. Each case also prints the scheme and block tritonwise chose (`explain()`) and the
GB/s of a clone of its input (the copy ceiling at that size: small inputs cannot reach the
1 GiB ceiling, whatever reads them). `--sweep` times every block of the case's layout class.

A second table says what 90% of the 1 GiB copy ceiling asks of each case in microseconds, beside
tritonwise's time, a plain read's, and an empty kernel's under do_bench: below about 120 MiB, no
kernel can finish a read that fast under that timer.

Then each case under three timers, each with its own copy ceiling (the faster of a clone and a
negation of 1 GiB: a CUDA graph runs a clone as a slower copy node) and the plain read at the
case's size (a plain Triton kernel reading the same bytes in memory order, in the configuration
harness.best_plain_read picks; beside it harness.read_ceiling's best of five configurations a round):
- do_bench, as above;
- after a clean L2 flush (harness.us_after_clean_flush): do_bench's flush writes 256 MiB and
  leaves dirty lines that the timed kernel writes back, which costs a 64 MiB read about a third
  of its bandwidth and the 1 GiB clone almost nothing;
- back to back in a CUDA graph on copies of the input that fill 256 MiB (harness.us_back_to_back):
  no host time, no flush, every call reading DRAM, as kernels run inside a model.
`--rounds N` times each case's calls in turn N times a timer and keeps the medians; torch.compile
is timed twice a round, three places apart, and the range of its other timing over its first (the
control) shows what difference this timer finds between two timings of one call.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys

import torch
import triton

from benchmarks.harness import (
    Case,
    bandwidth_table,
    best_plain_read,
    block_forced,
    copy_ceiling,
    do_bench_us,
    empty_kernel,
    gbps,
    gbps_after_clean_flush,
    gpu_us_per_kernel,
    header,
    in_rounds,
    mismatch,
    nbytes,
    positive_int,
    read_ceiling,
    report,
    smoke_arguments,
    smoke_run,
    timed,
    us_at,
    us_back_to_back,
)
from tritonwise import CodeGenConfig, pointwise_dynamic


@triton.jit
def _square(x):
    return x * x


@triton.jit
def _identity(x):
    return x


def _reducer(payload, entry, **settings):
    """`payload` reduced by `entry`, under CodeGenConfig(**settings)."""
    config = CodeGenConfig(**settings)
    fn = pointwise_dynamic(payload, promotion_methods=[(0, "DEFAULT")], reductions=[entry], config=config)
    fn.remake = lambda: _reducer(payload, entry, **settings)  # a fresh function (no plans yet), for --sweep
    return fn


sum_sq_last = _reducer(_square, ("sum", -1))
max_dim0 = _reducer(_identity, ("max", 0))
sum_last = _reducer(_identity, ("sum", -1))
sum_0_2 = _reducer(_identity, ("sum", (0, 2)))


# The five shapes, and small ones of the same kinds for a smoke run
SHAPES = {
    False: ((8192, 8192), (16384, 128), (128, 16384), (64, 4096, 64)),
    True: ((48, 40), (96, 16), (8, 1024), (4, 32, 8)),
}


def cases(device: str = "cuda", small: bool = False) -> list:
    """(Case, tritonwise function, its input, the torch expression of an input) for each case."""
    square, tall_shape, wide_shape, cube_shape = SHAPES[small]
    big = torch.randn(square, device=device)
    tall = torch.randn(tall_shape, device=device, dtype=torch.bfloat16)
    wide = torch.randn(wide_shape, device=device, dtype=torch.bfloat16)
    cube = torch.randn(cube_shape, device=device)
    name = lambda shape: "x".join(map(str, shape))  # noqa: E731
    table = [
        (f"sum(x*x, -1) fp32 {name(square)}", sum_sq_last, big, lambda x: (x * x).sum(-1)),
        (f"amax(x, 0) fp32 {name(square)}", max_dim0, big, lambda x: x.amax(0)),
        (f"sum(x, -1) bf16 {name(tall_shape)}", sum_last, tall, lambda x: x.sum(-1)),
        (f"sum(x, -1) bf16 {name(wide_shape)}", sum_last, wide, lambda x: x.sum(-1)),
        (f"sum(x, (0, 2)) fp32 {name(cube_shape)}", sum_0_2, cube, lambda x: x.sum((0, 2))),
    ]
    return [(reduction_case(name, fn, x, expr), fn, x, expr) for name, fn, x, expr in table]


def reduction_case(name: str, fn, x, expr) -> Case:
    """A Case of fn(x) against expr(x): bf16 results round to 8 bits, fp32 sums in another
    order; both tolerances stay far below a lost or doubled partial."""
    tol = 2e-2 if x.dtype == torch.bfloat16 else 1e-3
    return Case(name, nbytes(x), lambda: fn(x), lambda: expr(x), rtol=tol, atol=tol * 10)


ROTATED_BYTES = 2**28  # copies of an input fill 256 MiB, five times the H100's 50 MiB of L2


def back_to_back_gbps(moved: int, call, x) -> float:
    """GB/s of `call` (counting `moved` bytes a call) launched back to back in a CUDA graph on
    copies of `x` that together fill ROTATED_BYTES (at least two), each copy at least four times
    and 2 GiB read in all."""
    size = nbytes(x)
    copies = max(2, math.ceil(ROTATED_BYTES / size))
    inputs = [x] + [x.clone() for _ in range(copies - 1)]
    launches = copies * max(4, math.ceil(2**31 / (copies * size)))
    return moved / us_back_to_back(call, inputs, launches) / 1e3


# Each timer as rate(nbytes, call, x): GB/s of call(x) counting nbytes.
TIMERS = {
    "do_bench": timed(gbps),
    "after a clean L2 flush": timed(gbps_after_clean_flush),
    "back to back in a CUDA graph, inputs rotated through 256 MiB": back_to_back_gbps,
}


def median_rates(x, calls, rounds: int):
    """For each timer of TIMERS in turn: (its short name, the median GB/s of each of `calls` on x
    over `rounds` rounds of in_rounds), counting x's bytes."""
    for timer, rate in TIMERS.items():
        samples = in_rounds([lambda c=c: rate(nbytes(x), c, x) for c in calls], rounds)
        yield timer.split(",")[0], [statistics.median(s[k] for s in samples) for k in range(len(calls))]


def copy_ceiling_under(rate) -> float:
    """GB/s moved by the faster of a clone and a negation of 1 GiB (as harness.copy_ceiling): a
    contiguous clone is a cudaMemcpyAsync, which a CUDA graph runs as a copy node at 2417-2432
    GB/s on the H100, against 2950-3003 for the same clones launched on a stream;
    the negation is an ATen kernel moving the same bytes under every timer."""
    x = torch.empty(2**28, device="cuda").uniform_()
    return max(rate(2 * nbytes(x), torch.clone, x), rate(2 * nbytes(x), torch.neg, x))


def _rate_or_nan(rate, nbytes, call, x) -> float:
    if call is None:
        return math.nan
    try:
        return rate(nbytes, call, x)
    except Exception as error:  # torch.compile's code under graph capture, should it refuse
        print(f"  not timed: {type(error).__name__}: {str(error)[:200]}", flush=True)
        return math.nan


def measured_under(rate, case: Case, fn, x, expr, compiled, rounds: int = 1) -> tuple:
    """(tritonwise, torch eager, torch.compile, plain read, best plain read) GB/s of one case by
    `rate`: medians over `rounds` rounds, each timing the six measures in turn (this host's figures
    drift within a run), each round starting one further along (a place in the order can favour
    whoever takes it); then the lowest and highest of the rounds' tritonwise / torch.compile, which
    tell a lead or a gap that holds in every round from one the median alone shows; then the same
    range of torch.compile's other timing each round (the sixth measure, three places from its
    first, before it in rounds that start past it) over its first: the difference this timer finds
    between two timings of one call, against which to read the first range. The
    plain read is one kernel, the configuration best_plain_read picks before the rounds; the best
    plain read is read_ceiling's best of its five configurations each round, which sits above a
    typical timing of any one kernel where timings scatter (the 4 MiB cases)."""
    n, flat = case.nbytes, x.contiguous().view(-1)
    read = best_plain_read(x, rate)
    measures = (
        lambda: rate(n, fn, x),
        lambda: rate(n, expr, x),
        lambda: _rate_or_nan(rate, n, compiled, x),
        lambda: rate(nbytes(flat), read, flat),
        lambda: read_ceiling(x, rate),
        lambda: _rate_or_nan(rate, n, compiled, x),
    )
    samples = in_rounds(measures, rounds)
    ratios = [ours / first for ours, _, first, *_ in samples]
    control = [other / first for _, _, first, *_, other in samples]
    medians = [statistics.median(column) for column in zip(*samples)][:5]
    return (*medians, _range(ratios), _range(control))


def _range(values: list) -> tuple:
    return min(values), max(values)


def timer_table(timer: str, ceiling: float, rows: list) -> str:
    columns = [f"case ({timer})", "tritonwise GB/s", "plain read", "tritonwise / plain read",
               "best of five plain reads", f"/ copy ceiling ({ceiling:.0f})", "torch eager", "torch.compile",
               "tritonwise / torch.compile, rounds' range", "torch.compile's other timing / first (control)"]
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    for name, _, ours, eager, compiled, read, best, (low, high), (c_low, c_high) in rows:
        cells = [name, f"{ours:.0f}", f"{read:.0f}", f"{ours / read:.2f}", f"{best:.0f}", f"{ours / ceiling:.0%}",
                 f"{eager:.0f}", f"{compiled:.0f}", f"{low:.3f}–{high:.3f}", f"{c_low:.3f}–{c_high:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def target_table(ceiling: float, rows: list) -> str:
    """Microseconds under do_bench: what reading at 90% of the copy ceiling allows each case,
    against what it took, what a plain read of its bytes took, and what an empty kernel takes
    under do_bench and back to back (the timers' floors)."""
    empty = empty_kernel("cuda")
    empty_us, graph_us = do_bench_us(empty), gpu_us_per_kernel(empty)
    lines = [
        "| case | MiB read | µs at 90% of the copy ceiling | tritonwise µs | plain read µs | empty kernel µs (back to back) |",
        "|---|---|---|---|---|---|",
    ]
    for name, size, ours, _, _, read, *_ in rows:
        allowed, took, read_us = us_at(size, 0.9 * ceiling), us_at(size, ours), us_at(size, read)
        lines.append(
            f"| {name} | {size / 2**20:.0f} | {allowed:.1f} | {took:.1f} | {read_us:.1f} | {empty_us:.1f} ({graph_us:.1f}) |"
        )
    return "\n".join(lines)


def run(chosen_cases: list, use_compile: bool, dynamic: bool = False, rounds: int = 1) -> tuple:
    """The 1 GiB clone's GB/s and the headline rows (do_bench), the chosen schemes, and for
    each timer its copy ceiling and rows (name, bytes, tritonwise, eager, torch.compile, plain
    read, medians of `rounds`; the rounds' range of tritonwise / torch.compile, and of
    torch.compile's other timing over its first). `dynamic`: torch.compile(dynamic=True),
    shape-generic kernels as tritonwise's are."""
    ceiling = copy_ceiling()
    ceilings = {timer: copy_ceiling_under(rate) for timer, rate in TIMERS.items()}
    by_timer = {timer: [] for timer in TIMERS}
    rows, chosen = [], []
    for case, fn, x, expr in chosen_cases:
        compiled = None
        if use_compile:
            compiled = torch.compile(expr, dynamic=dynamic or None)
            compiled(x)
        for timer, rate in TIMERS.items():
            measured = measured_under(rate, case, fn, x, expr, compiled, rounds)
            by_timer[timer].append((case.name, case.nbytes, *measured))
        _, _, ours, eager, compiled_rate, *_ = by_timer["do_bench"][-1]
        rows.append((case.name, ours, eager, compiled_rate, ours / ceiling))
        copy = gbps(2 * case.nbytes, lambda x=x: x.clone())
        chosen.append(f"- {case.name}: {_scheme_line(fn, x)}; a clone of the input moves {copy:.0f} GB/s")
        print(f"{case.name:<34} ours {ours:6.0f}  eager {eager:6.0f}  compile {compiled_rate:6.0f}", flush=True)
    return ceiling, rows, chosen, ceilings, by_timer


def _scheme_line(fn, x) -> str:
    """The lines of explain() that name the scheme and block."""
    text = str(fn.explain(x))
    return "; ".join(ln.strip() for ln in text.splitlines() if "scheme" in ln or "block" in ln.lower())[:400]


def sweep(chosen_cases: list) -> list:
    """GB/s of each case with each block its layout class offers (the heuristic's evidence);
    a block whose answer is wrong is reported and not timed (a persistent block narrower than
    the row is not a valid choice: it reads part of it)."""
    from tritonwise.schemes import get_scheme

    lines = []
    for case, fn, x, expr in chosen_cases:
        plan = fn.explain(x)
        scheme = get_scheme(plan.scheme)
        for block in plan.block_choices:
            with block_forced(scheme, block):
                fresh = fn.remake()
                wrong = mismatch(expr(x), fresh(x), case.name, case.rtol, case.atol)
                result = "wrong answer, not timed" if wrong else f"{gbps(case.nbytes, lambda: fresh(x)):.0f} GB/s"
                warps = fresh.explain(x).num_warps
            lines.append(f"- {case.name} {plan.scheme} block {block} on {warps} warps: {result}")
            print(lines[-1], flush=True)
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--dynamic", action="store_true", help="torch.compile(dynamic=True), shape-generic")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--rounds", type=positive_int, default=1, help="medians of this many alternated rounds a timer")
    smoke_arguments(parser)
    args = parser.parse_args(argv)
    smoke = smoke_run(args, "axis_reductions")
    if smoke is None:
        return 2
    chosen_cases = cases(args.device, smoke)
    for case, *_ in chosen_cases:
        case.check()
    print(f"{len(chosen_cases)} cases give torch's answer", flush=True)
    if smoke:
        return 0
    ceiling, rows, chosen, ceilings, by_timer = run(chosen_cases, not args.no_compile, args.dynamic, args.rounds)
    timers = [timer_table(timer, ceilings[timer], by_timer[timer]) for timer in TIMERS]
    tables = (bandwidth_table(ceiling, rows), target_table(ceiling, by_timer["do_bench"]), *timers, "\n".join(chosen))
    rounds = f"\nMedians of {args.rounds} alternated rounds a timer.\n" if args.rounds > 1 else ""
    text = header() + "\n" + rounds + "\n" + "\n\n".join(tables) + "\n"
    if args.sweep:
        text += "\nEvery block of each case's layout class:\n" + "\n".join(sweep(chosen_cases)) + "\n"
    report(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
