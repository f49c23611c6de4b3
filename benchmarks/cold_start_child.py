"""One fresh process of benchmarks/cold_start.py: import, decorate, then time the first call.

    python -m benchmarks.cold_start_child LIBRARY [DEVICE]   (triton | tritonwise | torch.compile | flaggems)

Prints one JSON line: import times (torch; triton; the library beyond both), the first call of
an already-decorated `add(x, y, alpha)` over 2^20 fp32 elements on cuda:0 (synchronized), then
the first call of another length (2^20 + 1 elements: a new specialization of plain Triton's
kernel and torch.compile's graph; tritonwise's flat kernel serves every length), then of a second
layout (a transposed 1024 x 1024 operand: a new kernel for tritonwise and torch.compile; plain
Triton's flat kernel has none), and whether each matches torch (checked right after it is timed:
a check before it would make it no longer the first call). torch and triton are imported at
module level, so that the kernels below are ordinary module-level @triton.jit functions; the
library is imported, and timed, in main.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

_start = time.perf_counter()
import torch  # noqa: E402

_torch_done = time.perf_counter()
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

_triton_done = time.perf_counter()

MODULES = {"tritonwise": "tritonwise", "flaggems": "flag_gems"}  # the libraries beyond torch and triton
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


def decorated(library: str, module):
    """The library's add, decorated (not yet called); `module` is the library's, if any."""
    if library == "triton":
        return triton_add
    if library == "tritonwise":
        return module.pointwise_dynamic(
            payload_add, is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")]
        )
    if library == "torch.compile":
        return torch.compile(eager_add)
    if library == "flaggems":
        return lambda x, y, alpha: module.add(x, y, alpha=alpha)
    raise SystemExit(f"unknown library {library!r}")


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def first_call_ms(fn, shape: tuple, title: str, device: str, transposed: bool = False) -> tuple:
    """(milliseconds of the first call fn(x, y, 0.5) of `shape`, x transposed if asked, None or what was wrong)."""
    from benchmarks.harness import mismatch  # after the timed imports: it imports nothing they miss

    x, y = torch.randn(shape, device=device), torch.randn(shape, device=device)
    x = x.t() if transposed else x
    synchronize(device)
    profiler = _profiler()
    start = time.perf_counter()
    out = fn(x, y, 0.5)
    synchronize(device)
    elapsed = (time.perf_counter() - start) * 1e3
    _report(profiler, f"{title}: {elapsed:.1f} ms")
    return elapsed, mismatch(x + y * 0.5, out, title)


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


def main(argv: list) -> int:
    library, device = argv[0], argv[1] if len(argv) > 1 else "cuda"  # "cpu" only to smoke-test this script
    before = time.perf_counter()
    module = importlib.import_module(MODULES[library]) if library in MODULES else None
    library_done = time.perf_counter()
    torch.empty(1, device=device)  # the CUDA context exists before any timing
    synchronize(device)
    fn = decorated(library, module)
    first, first_wrong = first_call_ms(fn, (N,), f"{library} first call", device)
    length, length_wrong = first_call_ms(fn, (N + 1,), f"{library} another length", device)
    layout, layout_wrong = None, None
    if library != "triton":
        layout, layout_wrong = first_call_ms(fn, (1024, 1024), f"{library} second layout", device, transposed=True)
    wrong = first_wrong or length_wrong or layout_wrong
    ms = lambda a, b: round((b - a) * 1e3, 1)  # noqa: E731
    result = dict(
        library=library,
        import_torch_ms=ms(_start, _torch_done),
        import_triton_ms=ms(_torch_done, _triton_done),
        import_library_ms=ms(before, library_done),
        first_ms=round(first, 1),
        length_ms=round(length, 1),
        correct=not wrong,
    )
    if layout is not None:
        result["second_layout_ms"] = round(layout, 1)
    if wrong:
        result["wrong"] = wrong
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
