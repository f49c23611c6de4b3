"""Host cost of layout.h's run_layout on a machine without a GPU, through the stand-in for
cuLaunchKernel that tests/test_layout_c_path.py uses: per call of `module.hit`, a new shape
each call, then one shape again through a cached plan's record and through run_layout.

    python benchmarks/layout_c_path_cpu.py

Outputs are CPU tensors (a fresh one per new shape costs what CPU allocation costs), the stand-in
is a ctypes callback and the stream query a Python lambda: compare the columns with each other,
not with GPU-host figures.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from types import SimpleNamespace

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_layout_c_path import Driver, _derive, _launched_through_c  # noqa: E402
from test_layout_templates import add_alpha  # noqa: E402

from tritonwise.layout_templates import _call_class, add_kernel, c_record, plain_operands  # noqa: E402
from tritonwise.runtime import hit_path, native  # noqa: E402
from tritonwise.runtime.arguments import call_signature  # noqa: E402

CASES = {
    "tile2d (n, 256) + (256, n).t()": lambda n: (torch.randn(n, 256), torch.randn(256, n).t(), 0.5),
    "nd (4, n, 64) + (n, 1)": lambda n: (torch.randn(4, n, 64), torch.randn(n, 1), 0.5),
}


def median_us(call, rounds) -> float:
    times = []
    for args in rounds:
        start = time.perf_counter()
        call(args)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main() -> int:
    module = native.launch_module()
    if module is None:
        print("launch.c cannot be built here")
        return 1
    hooks = SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    hit_path.configure(module, raw_stream=lambda device: 0x5000, hooks=hooks, current_device=None)
    print("| case | new shape each call | the same shape: cached plan's record | the same shape: run_layout |")
    print("|---|---|---|---|")
    for name, make in CASES.items():
        fn, driver = add_alpha(), Driver()
        template = fn._prepare(make(80), (None,), collapse=True)
        fn._new_shapes.remember(call_signature(make(80)), template)
        seen = _derive(fn, make(96))
        _launched_through_c(seen, driver)
        record = c_record(seen, (), fn._config)  # the generated files specialize no index argument
        add_kernel(record, seen)
        records = {_call_class(plain_operands(call_signature(make(96)))): {seen.task.stride_classes: [record]}}
        driver.n_values = len(seen.index_args)
        shapes = [make(n) for n in range(112, 112 + 16 * 400, 16)]
        new = median_us(lambda a: module.hit({}, a, hit_path.MISS, {}, records), shapes)
        args = shapes[-1]
        plan = _derive(fn, args)
        _launched_through_c(plan, driver)
        plans = {call_signature(args): plan}
        cached = median_us(lambda a: module.hit(plans, a, hit_path.MISS, {}, {}), [args] * 400)
        layout = median_us(lambda a: module.hit({}, a, hit_path.MISS, {}, records), [args] * 400)
        assert len(driver.launches) == 1200, "a call was not served in C"
        print(f"| {name} | {new:.1f} | {cached:.1f} | {layout:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
