"""The read ceiling at sizes from 1 to 512 MiB: GB/s of a plain Triton kernel that reads a
tensor's bytes in memory order and sums each block (harness.read_ceiling, which checks its sums
against torch before timing), under do_bench and after a clean L2 flush. A reduction reads each
input once and writes almost nothing, so this, not a clone of 1 GiB, bounds what any reduction
of those bytes can reach under the same timer: a 64 MiB read under do_bench cannot reach the
1 GiB clone's rate.

    python -m benchmarks.read_ceiling

Then fits what each timer charges a kernel whatever its size (t = a + bytes / rate)."""

from __future__ import annotations

import sys

import torch

from benchmarks.harness import (
    do_bench_us,
    empty_kernel,
    gbps,
    gbps_after_clean_flush,
    header,
    read_ceiling,
    report,
    timed,
    us_after_clean_flush,
    us_at,
)


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
    if not torch.cuda.is_available():
        print("read_ceiling needs a CUDA GPU", file=sys.stderr)
        return 2
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
