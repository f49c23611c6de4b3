"""Run FlagGems' own pointwise ops on tritonwise and compare them with torch.

    python tests/compat/flaggems_ops.py --flaggems PATH [--device cuda|cpu] [--jobs N] [--ops a,b]

PATH is a FlagGems checkout (or its bare git directory), an installed `flag_gems` package, or a
FlagGems wheel. Each op file of `src/flag_gems/ops/` named in flaggems_cases.py is imported as
FlagGems wrote it: its `flag_gems...` imports resolve through tests/compat/shim, which only
renames tritonwise (`flag_gems.utils.pointwise_dynamic` -> tritonwise, `tl_extra_shim` ->
tritonwise.libdevice). Each entry is called over dtypes and three layouts (contiguous,
broadcast, non-contiguous) and compared with the torch op; the table says per op whether it ran
unchanged, ran with a FlagGems helper the shim maps to tritonwise, failed (why) or was skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "shim"), str(HERE.parents[1]), str(HERE)]

import torch  # noqa: E402

from flaggems_cases import BOOL, CASES, T  # noqa: E402
from flaggems_source import install_ops, locate_ops  # noqa: E402

LAYOUTS = ("contiguous", "broadcast", "strided")
SHAPE = (5, 12)
HELPER_PATTERN = re.compile(r"tl_extra_shim\.(\w+)|triton_lang_extension import ([\w, ]+)")


@dataclass(frozen=True)
class Row:
    op: str
    status: str  # "unchanged", "shim helper", "failed", "skipped"
    helpers: tuple
    variants: int  # how many (entry, dtype, layout) combinations passed
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("unchanged", "shim helper")


def helpers_used(source: str) -> tuple:
    """The FlagGems helper names an op file calls (tl_extra_shim.X, triton_lang_extension's)."""
    names = set()
    for attribute, imported in HELPER_PATTERN.findall(source):
        names.update([attribute] if attribute else [n.strip().split(" as ")[0] for n in imported.split(",")])
    return tuple(sorted(names))


# ---- inputs -----------------------------------------------------------------------------------


def draw(domain: str, shape: tuple, dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Values of `domain` for `dtype`, made on CPU (the same on every device)."""
    if dtype == BOOL:
        return torch.rand(shape, generator=generator) < 0.5
    if not dtype.is_floating_point:
        low, high = {"positive": (1, 20), "shift": (0, 8), "ties": (-3, 4)}.get(domain, (-20, 21))
        values = torch.randint(low, high, shape, generator=generator)
        if domain == "nonzero":
            values = torch.where(values == 0, 7, values)
        return values.clamp(0, 255).to(dtype) if dtype == torch.uint8 else values.to(dtype)
    uniform = torch.rand(shape, generator=generator)
    values = {
        "positive": uniform * 3 + 0.1,
        "unit": uniform * 1.8 - 0.9,
        "nonzero": (uniform * 2 + 0.5) * torch.sign(torch.rand(shape, generator=generator) - 0.5),
        "ties": torch.randint(-3, 4, shape, generator=generator).float(),
    }.get(domain)
    if values is None:
        values = torch.randn(shape, generator=generator) * 2
    if domain == "special":
        specials = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0])
        pick = torch.randint(0, 10, shape, generator=generator)
        values = torch.where(pick < 5, specials[pick.clamp(max=4)], values)
    return values.to(dtype)


def lay_out(values: torch.Tensor, layout: str, position: int) -> torch.Tensor:
    """`values` (of SHAPE) as operand `position` of `layout`: contiguous; broadcast (a (1, n) or
    (m, 1) slice, the first operand expanded back to SHAPE, stride 0); strided (even positions a
    transposed, stepped view, odd ones contiguous, so operands disagree on their fastest dim)."""
    if layout == "broadcast":
        part = values[:1] if position % 2 == 0 else values[:, :1]
        return part if position > 0 else part.expand(values.shape)
    if layout == "strided" and position % 2 == 0:
        rows, cols = values.shape
        base = torch.zeros((cols, 2 * rows), dtype=values.dtype, device=values.device)
        base[:, ::2] = values.t()
        return base[:, ::2].t()
    return values


def build_args(call, dtype, layout, device, generator, default_domain):
    args, position = [], 0
    for spec in call.args:
        if isinstance(spec, T):
            values = draw(spec.domain or default_domain, SHAPE, spec.dtype or dtype, generator).to(device)
            args.append(lay_out(values, layout, position))
            position += 1
        else:
            args.append(spec)
    return args


# ---- comparing --------------------------------------------------------------------------------

TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2),
             torch.complex64: (1e-4, 1e-5)}


def compare(ours, expected) -> None:
    if not isinstance(ours, torch.Tensor):
        raise AssertionError(f"returned {type(ours).__name__}, expected a tensor")
    rtol, atol = TOLERANCE.get(expected.dtype, (0, 0))
    torch.testing.assert_close(ours.cpu(), expected.cpu(), rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda m: f"{m.splitlines()[0]} {m.splitlines()[-1]}")


def poisoned_output(expected: torch.Tensor, layout: str) -> torch.Tensor:
    """A given output for `out=`: every element a value no op writes (NaN, the dtype's minimum,
    True), strided in the strided layout."""
    dtype = expected.dtype
    fill = float("nan") if dtype.is_floating_point else True if dtype == BOOL else torch.iinfo(dtype).min
    return lay_out(torch.full_like(expected, fill), "strided" if layout == "strided" else "contiguous", 0)


def run_variant(module, call, dtype, layout, device, default_domain) -> None:
    generator = torch.Generator().manual_seed(0)
    args = build_args(call, dtype, layout, device, generator, default_domain)
    inputs = [(a, a.clone()) for a in args if isinstance(a, torch.Tensor)]
    expected = call.reference(*args, **call.kwargs)
    entry = getattr(module, call.entry)
    if call.out:
        given = poisoned_output(expected, layout)
        returned = entry(*args, **call.kwargs, **{call.out: given})
        if returned is not None and returned is not given:
            raise AssertionError(f"returned a new tensor, not the given {call.out}=")
        compare(given, expected)
    else:
        compare(entry(*args, **call.kwargs), expected)
    for after, before in inputs:
        torch.testing.assert_close(after, before, rtol=0, atol=0, equal_nan=True, msg="an input was changed")


# ---- CPU capabilities -------------------------------------------------------------------------


def cpu_capabilities() -> dict:
    """Whether tritonwise's CPU path computes libdevice calls today. Probed, not assumed, so the
    harness runs more ops on CPU as that path grows."""
    from flaggems_probes import libdevice_works

    return {"libdevice": libdevice_works()}


def variants(case, device: str):
    for call in case.calls:
        if device in call.devices:
            for dtype in case.dtypes:
                for layout in LAYOUTS:
                    yield call, dtype, layout


def why(error: BaseException) -> str:
    """The error, and the one at the bottom of its chain (a PayloadError's interpreter error)."""
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    text = f"{type(error).__name__}: {_first_line(error)}"
    if root is not error:
        text = f"{type(error).__name__} from {type(root).__name__}: {_first_line(root)}"
    return text[:240]


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


def run_case(case, device: str, capabilities: dict) -> Row:
    import importlib.util

    path = Path(importlib.util.find_spec(f"flag_gems.ops.{case.op}").origin)
    if not path.is_file():
        return Row(case.op, "skipped", (), 0, f"no {path.name} in this FlagGems")
    helpers = helpers_used(path.read_text())
    passed, label = 0, "import"
    try:
        module = importlib.import_module(f"flag_gems.ops.{case.op}")
        if helpers and not capabilities.get("libdevice", True):
            return Row(case.op, "skipped", helpers, 0, "imports; libdevice not computed by the CPU path yet")
        missing = sorted({c.entry for c in case.calls if not hasattr(module, c.entry)})
        if len(missing) == len({c.entry for c in case.calls}):
            return Row(case.op, "skipped", helpers, 0, f"none of {', '.join(missing)} in this FlagGems")
        for call, dtype, layout in variants(case, device):
            if call.entry in missing:
                continue
            label = f"{call.entry} {str(dtype).replace('torch.', '')} {layout}"
            run_variant(module, call, dtype, layout, device, case.domain)
            passed += 1
    except Exception as error:  # the row says why; FLAGGEMS_OPS_VERBOSE=1 prints the traceback
        if os.environ.get("FLAGGEMS_OPS_VERBOSE"):
            traceback.print_exc()
        known = f" (known on CPU: {case.cpu_issue})" if device == "cpu" and case.cpu_issue else ""
        return Row(case.op, "failed", helpers, passed, f"{label}: {why(error)}{known}")
    note = f"not in this FlagGems: {', '.join(missing)}" if missing else ""
    return Row(case.op, "shim helper" if helpers else "unchanged", helpers, passed, note)


# ---- driver -----------------------------------------------------------------------------------


_prepared: dict = {}


def prepare(flaggems: str, device: str) -> dict:
    """Put the shim and FlagGems' op files in place (once per process); the CPU capabilities."""
    if (flaggems, device) not in _prepared:
        os.environ["TRITONWISE_COMPAT_DEVICE"] = device
        # NumPy's divide-by-zero and log(0) warnings from Triton's interpreter: inf/nan are the point
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")
        install_ops(locate_ops(flaggems), [case.op for case in CASES])
        _prepared[flaggems, device] = cpu_capabilities() if device == "cpu" else {}
    return _prepared[flaggems, device]


def _worker(flaggems: str, device: str, op: str) -> Row:
    capabilities = prepare(flaggems, device)
    return run_case(next(c for c in CASES if c.op == op), device, capabilities)


def run_all(flaggems: str, device: str, ops=None, jobs: int = 1) -> list:
    cases = [c for c in CASES if ops is None or c.op in ops]
    if jobs <= 1:
        capabilities = prepare(flaggems, device)
        return [run_case(case, device, capabilities) for case in cases]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_worker, [flaggems] * len(cases), [device] * len(cases), [c.op for c in cases]))


def table(rows: list, device: str) -> str:
    lines = [f"FlagGems ops on tritonwise, device {device} (torch {torch.__version__})", "",
             "| op | result | FlagGems helpers (tritonwise.libdevice) | variants passed | note |",
             "|---|---|---|---|---|"]
    for row in rows:
        helpers = ", ".join(row.helpers) or "-"
        lines.append(f"| {row.op} | {row.status} | {helpers} | {row.variants} | {row.note} |")
    counts = {s: sum(r.status == s for r in rows) for s in ("unchanged", "shim helper", "failed", "skipped")}
    lines += ["", f"{counts['unchanged'] + counts['shim helper']} of {len(rows)} ops pass: "
              f"{counts['unchanged']} ran unchanged, {counts['shim helper']} needed a FlagGems helper "
              f"(served by tritonwise.libdevice); {counts['failed']} failed, {counts['skipped']} skipped."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flaggems", default=os.environ.get("TRITONWISE_FLAGGEMS"), required=False,
                        help="FlagGems checkout, bare git dir, installed package or wheel")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: up to 8 on cuda, 1 on cpu)")
    parser.add_argument("--ops", default=None, help="comma-separated op names (default: all)")
    options = parser.parse_args(argv)
    if not options.flaggems:
        parser.error("--flaggems PATH (or TRITONWISE_FLAGGEMS) is required")
    jobs = options.jobs or (min(8, os.cpu_count() or 1) if options.device == "cuda" else 1)
    ops = set(options.ops.split(",")) if options.ops else None
    unknown = sorted((ops or set()) - {case.op for case in CASES})
    if unknown:
        parser.error(f"--ops: unknown {', '.join(unknown)}; known: {', '.join(c.op for c in CASES)}")
    rows = run_all(options.flaggems, options.device, ops, jobs)
    print(table(rows, options.device))
    return 0 if all(r.ok or r.status == "skipped" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
