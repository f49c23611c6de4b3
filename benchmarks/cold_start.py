"""First call in a new process: plain Triton, tritonwise, torch.compile and FlagGems (GPU).

    python -m benchmarks.cold_start [--warm-runs 2] [--libraries triton,tritonwise,torch.compile,flaggems]

For each library, fresh processes (benchmarks/cold_start_child.py) with caches isolated in a
new directory (HOME, TRITON_CACHE_DIR, TRITONWISE_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR): one with
empty caches, then `--warm-runs` more over the caches it left (the median is reported). Each
times the first call of an already-decorated `add(x, y, alpha)` over 2^20 fp32 elements
(process start and imports excluded; they are reported apart), then the first call of another
length (2^20 + 1 elements) and of a second layout (one operand transposed; not for plain Triton,
whose flat kernel has none). Each result is checked against torch right after its first
call is timed (before it, the call would no longer be the first); a wrong answer in any run
makes the exit status 1. FlagGems is skipped where it cannot be imported. About a minute on an
H100 host.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ["triton", "tritonwise", "torch.compile", "flaggems"]
NAMES = {"triton": "plain Triton", "tritonwise": "tritonwise", "torch.compile": "torch.compile", "flaggems": "FlagGems"}


def isolated_env(directory: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    for name, sub in [
        ("HOME", "home"),
        ("TRITON_CACHE_DIR", "triton"),
        ("TRITONWISE_CACHE_DIR", "tritonwise"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
    ]:
        env[name] = str(directory / sub)
        (directory / sub).mkdir(parents=True, exist_ok=True)
    env.pop("TRITONWISE_CACHE_OVERLAY", None)
    return env


def run_child(library: str, env: dict, device: str) -> dict:
    command = [sys.executable, "-m", "benchmarks.cold_start_child", library, device]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return dict(error=result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed")
    return json.loads(result.stdout.strip().splitlines()[-1])


def importable(module: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([sys.executable, "-c", code]).returncode == 0


def measure(library: str, warm_runs: int, device: str) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"cold-start-{library}-") as directory:
        env = isolated_env(Path(directory))
        empty = run_child(library, env, device)
        warm = [run_child(library, env, device) for _ in range(warm_runs)]
    return dict(empty=empty, warm=warm)


def _median(rows: list, field: str):
    values = [r[field] for r in rows if field in r]
    return statistics.median(values) if values else None


def table(results: dict) -> str:
    libraries = list(results)
    header = "| first call | " + " | ".join(NAMES[lib] for lib in libraries) + " |"
    lines = [header, "|---|" + "---|" * len(libraries)]

    def row(label, cell):
        lines.append(f"| {label} | " + " | ".join(cell(results[lib]) for lib in libraries) + " |")

    def fmt(value, correct=True):
        return "—" if value is None else f"{value:.0f} ms" + ("" if correct else " (WRONG)")

    def warm_cell(field):
        return lambda r: fmt(_median(r["warm"], field), all(w.get("correct") for w in r["warm"]))

    row("empty caches", lambda r: fmt(r["empty"].get("first_ms"), r["empty"].get("correct", False)))
    row("warm disk caches", warm_cell("first_ms"))
    row("another length, empty caches", lambda r: fmt(r["empty"].get("length_ms"), r["empty"].get("correct")))
    row("a second layout, empty caches", lambda r: fmt(r["empty"].get("second_layout_ms"), r["empty"].get("correct")))
    row("a second layout, warm disk", warm_cell("second_layout_ms"))
    row("import beyond torch + triton", warm_cell("import_library_ms"))
    row("import torch / triton", lambda r: f"{_median(r['warm'], 'import_torch_ms') or 0:.0f} / {_median(r['warm'], 'import_triton_ms') or 0:.0f} ms")
    runs = [(lib, run) for lib in libraries for run in [results[lib]["empty"], *results[lib]["warm"]]]
    errors = [f"error: {NAMES[lib]}: {run['error']}" for lib, run in runs if "error" in run]
    wrong = [f"wrong answer: {run['wrong']}" for _, run in runs if "wrong" in run]
    return "\n".join(lines + [f"\n{line}" for line in errors + wrong])


def any_wrong(results: dict) -> bool:
    return any("wrong" in run for r in results.values() for run in [r["empty"], *r["warm"]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-runs", type=int, default=2)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--json", help="also write the raw results to this file")
    parser.add_argument("--device", default="cuda", help="cpu only smoke-tests the script (no plain Triton there)")
    args = parser.parse_args(argv)
    libraries = [lib for lib in args.libraries.split(",") if lib != "flaggems" or importable("flag_gems")]
    results = {}
    for library in libraries:
        print(f"{NAMES[library]} ...", file=sys.stderr, flush=True)
        results[library] = measure(library, args.warm_runs, args.device)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if any_wrong(results) else 0


if __name__ == "__main__":
    sys.exit(main())
