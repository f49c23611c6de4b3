"""One fresh process of benchmarks/cold_start.py: import, decorate, then time the first call.

    python benchmarks/cold_start_child.py LIBRARY [DEVICE]   (triton | tritonwise | torch.compile | flaggems)

Prints one JSON line: import times (torch; triton; the library beyond both), the first call of
an already-decorated `add(x, y, alpha)` over 2^20 fp32 elements on cuda:0 (synchronized), then
the first call of a second layout (2^20 + 1 elements: another specialization for every
library), and whether both match torch. Imports are at module level so that the kernels below
are ordinary module-level @triton.jit functions.
"""

from __future__ import annotations

import json
import os
import sys
import time

LIBRARY = sys.argv[1]
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cuda"  # "cpu" only to smoke-test this script
_start = time.perf_counter()
import torch  # noqa: E402

_torch_done = time.perf_counter()
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

_triton_done = time.perf_counter()
if LIBRARY == "tritonwise":
    import tritonwise  # noqa: E402
elif LIBRARY == "flaggems":
    import flag_gems  # noqa: E402
_library_done = time.perf_counter()

N = 1 << 20


@triton.jit
def triton_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y * alpha, mask=mask)


def triton_add(x, y, alpha):
    out = torch.empty_like(x)
    n = x.numel()
    triton_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out


@triton.jit
def payload_add(x, y, alpha):
    return x + y * alpha


def eager_add(x, y, alpha):
    return x + y * alpha


def decorated():
    """The library's add, decorated (not yet called)."""
    if LIBRARY == "triton":
        return triton_add
    if LIBRARY == "tritonwise":
        return tritonwise.pointwise_dynamic(
            payload_add, is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")]
        )
    if LIBRARY == "torch.compile":
        return torch.compile(eager_add)
    if LIBRARY == "flaggems":
        return lambda x, y, alpha: flag_gems.add(x, y, alpha=alpha)
    raise SystemExit(f"unknown library {LIBRARY!r}")


def synchronize() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def first_call_ms(fn, n: int, label: str) -> tuple:
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    synchronize()
    profiler = _profiler()
    start = time.perf_counter()
    out = fn(x, y, 0.5)
    synchronize()
    elapsed = (time.perf_counter() - start) * 1e3
    _report(profiler, f"{LIBRARY} {label}: {elapsed:.1f} ms")
    return elapsed, bool(torch.allclose(out, x + y * 0.5))


def _profiler():
    """A running cProfile when COLD_START_PROFILE names a file to append the report to."""
    if not os.environ.get("COLD_START_PROFILE"):
        return None
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    return profiler


def _report(profiler, title: str) -> None:
    if profiler is None:
        return
    import io
    import pstats

    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
    with open(os.environ["COLD_START_PROFILE"], "a") as f:
        f.write(f"\n===== {title} (HOME={os.environ.get('HOME')})\n{text.getvalue()}")


def main() -> None:
    torch.empty(1, device=DEVICE)  # the CUDA context exists before any timing
    synchronize()
    fn = decorated()
    first, first_ok = first_call_ms(fn, N, "first call")
    second, second_ok = first_call_ms(fn, N + 1, "second layout")
    ms = lambda a, b: round((b - a) * 1e3, 1)  # noqa: E731
    print(
        json.dumps(
            dict(
                library=LIBRARY,
                import_torch_ms=ms(_start, _torch_done),
                import_triton_ms=ms(_torch_done, _triton_done),
                import_library_ms=ms(_triton_done, _library_done),
                first_ms=round(first, 1),
                second_layout_ms=round(second, 1),
                correct=first_ok and second_ok,
            )
        )
    )


if __name__ == "__main__":
    main()
