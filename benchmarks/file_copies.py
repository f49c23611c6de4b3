"""Copies of a generated kernel file with one construct rewritten, checked and timed beside it.

The shared part of tile_loop.py and column_split.py: each launches the file tritonwise generated
for a case and copies of it whose text was edited (an `edit` maps the file's text to the copy's),
with the same arguments and grid. Triton reads a kernel's source from its file, so each copy is
written to a file of its own and loaded as tritonwise loads its files (runtime/loader.py), the
user's payload bound into it; on CPU the copies run in Triton's interpreter, as the file does.
"""

from __future__ import annotations

import hashlib
import statistics
import types
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from benchmarks.axis_reductions import TIMERS
from benchmarks.harness import check_against, nbytes
from tritonwise.runtime.dispatch import INTERPRETER_LOCK
from tritonwise.runtime.interpreter.interpret import interpreting
from tritonwise.runtime.loader import load


def load_copy(plan, text: str, tag: str, directory: Path):
    """The `launch` of a copy of `plan`'s file whose text is `text`, written to `directory` under a
    name of its text (the loader keeps a module per path)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    target = directory / f"{Path(plan.path).stem}_{tag}_{digest}.py"
    target.write_text(text)
    names = plan.launch.__globals__  # the generated module's
    layout = names["LAYOUT"]
    payload = types.SimpleNamespace(jit=names[layout["payload"]])
    backend = "interpreter" if plan.interpreted else "gpu"
    return load(target, layout["kernel"], layout["payload"], payload, backend, text=text).launch


def variants(fn, args: tuple, outs: dict, edits: dict, directory: Path) -> tuple:
    """(bytes moved, output, {label: call(x)}): the file as generated and a copy per edit
    ({label: edit(text) -> text}); call(x) runs one with x in place of the first input (the
    back-to-back timer rotates copies of it)."""
    given = fn.outputs(outs)
    plan = fn.plan(args, given, collapse=True)
    values = list(plan.kernel_values(args, given))
    result = values[len(args)]  # the first output (a reduction's along dims: its values in task order)
    moved = nbytes(*args) + (0 if plan.reductions or plan.spec.row_reduced_outputs else nbytes(result))
    capped = plan.grid[0] < plan.task.num_tiles
    scope = _interpreted if plan.interpreted else nullcontext

    def call_with(launch):
        def call(x):
            with scope():
                launch(plan.grid, x, *values[1:], plan.num_warps)
            return result

        return call

    text = Path(plan.path).read_text()
    calls = {f"as generated ({'capped' if capped else 'uncapped'})": call_with(plan.launch)}
    for label, edit in edits.items():
        tag = "".join(c if c.isalnum() else "_" for c in label)
        calls[label] = call_with(load_copy(plan, edit(text), tag, directory))
    return moved, result, calls


@contextmanager
def _interpreted():
    """As tritonwise runs an interpreted launch (runtime/dispatch.py)."""
    with INTERPRETER_LOCK, interpreting():
        yield


def check(name: str, calls: dict, result: torch.Tensor, x: torch.Tensor, want: torch.Tensor, rtol, atol) -> None:
    """Each call's output against torch's `want`, the output poisoned before each."""
    for label, call in calls.items():
        result.fill_(float("nan") if result.is_floating_point() else -1)
        check_against(want.float(), call(x).float().reshape(want.shape), f"{name}, {label}", rtol, atol)


def timed_rows(name: str, calls: dict, moved: int, x: torch.Tensor, rounds: int, back_to_back: bool = True) -> list:
    """A table row per timer of axis_reductions.py: the median GB/s of each call over `rounds`
    rounds, each round timing the calls in turn."""
    rows = []
    for timer, rate in TIMERS.items():
        if not back_to_back and timer.startswith("back"):
            continue
        times = {label: [] for label in calls}
        for _ in range(rounds):
            for label, call in calls.items():
                times[label].append(rate(moved, call, x))
        cells = " | ".join(f"{label} {statistics.median(v):.0f}" for label, v in times.items())
        rows.append(f"| {name} | {timer.split(',')[0]} | {cells} |")
        print(rows[-1], flush=True)
    return rows
