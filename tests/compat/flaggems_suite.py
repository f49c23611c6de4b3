"""FlagGems' own tests for its pointwise ops, on the real FlagGems package, per engine, side by side.

    python tests/compat/flaggems_suite.py --wheel flag_gems-5.0.2-py3-none-any.whl \\
        --tests FLAGGEMS [--rev v5.0.2] [--device cuda|cpu] [--engines tritonwise,native] \\
        [--quick] [--files test_cosh.py,...] [--jobs N] [--seconds S] [--out DIR] [-- pytest args]

The wheel is unpacked into a temporary folder (its own needs, PyYAML and SQLAlchemy, must be
importable); FlagGems' test files come from FLAGGEMS, a folder holding `tests/` or a git repository
(bare or not) read at REV. Each engine runs in its own pytest process through the plugin
flaggems_engine.py, which swaps the generator before `flag_gems` is imported and proves the swap
took; each file is a process of its own, --jobs at a time per engine. By default the files are
those of ops built on pointwise_dynamic (the plugin chooses them).
On CPU only tritonwise runs: FlagGems' own engine needs a GPU, and `import flag_gems` fails under
TRITON_INTERPRET=1. Prints one table of per-file counts; --out keeps the logs and every test's outcome.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUTCOMES = ("passed", "failed", "skipped")
# `--files ci`: FlagGems' test files CI runs on CPU (--quick, about 2 minutes on 2 cores): files
# whose every op is pointwise, so none reaches a FlagGems kernel of its own (FlagGems' `where`
# refuses CPU tensors; its complex `div` and `allclose` launch Triton kernels that need a GPU);
# among them the negative-bit, dtype-converting copy and complex-input cases
CI_FILES = ("test_abs.py test_add.py test_addcmul.py test_angle.py test_atan2.py test_bitwise_left_shift.py "
            "test_copy.py test_cosh.py test_gelu.py test_lerp.py test_nan_to_num.py test_neg.py test_pow.py "
            "test_resolve_neg.py test_to_copy.py").split()


def unpack_wheel(wheel: Path, work: Path) -> Path:
    site = work / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def fetch_folder(flaggems: Path, rev: str, work: Path, folder: str) -> Path:
    """A folder holding FlagGems' `folder` (`tests`, `benchmark`) for this run: FLAGGEMS itself if
    it has one, else `folder` at `rev` of the git repository FLAGGEMS, unpacked under `work`."""
    if (flaggems / folder / "conftest.py").is_file():
        return flaggems
    archive = subprocess.run(["git", "-C", str(flaggems), "archive", rev, folder],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(work / "flaggems", filter="data")
    return work / "flaggems"


def environment(site: Path, engine: str, device: str, results: Path | None = None) -> dict:
    env = dict(os.environ, TRITONWISE_FLAGGEMS_ENGINE=engine, TRITONWISE_COMPAT_DEVICE=device,
               PYTHONPATH=os.pathsep.join([str(HERE), str(REPO), str(site), os.environ.get("PYTHONPATH", "")]))
    env.pop("TRITON_INTERPRET", None)
    if results:
        env["TRITONWISE_FLAGGEMS_RESULTS"] = str(results)
    return env


def choose(root: Path, site: Path, engine: str, device: str) -> dict:
    """The plugin's proof of the swap and its choice of files, from a process of its own."""
    done = subprocess.run([sys.executable, str(HERE / "flaggems_engine.py"), str(root / "tests")],
                          env=environment(site, engine, device), cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"engine {engine}: importing flag_gems failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start(root: Path, site: Path, engine: str, device: str, name: str, options, out: Path):
    """One pytest process over one test file (pytest-xdist does not fit: FlagGems' parametrizations
    differ from one process to the next, so its workers disagree on what they collected)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "flaggems_engine",
               "-o", "addopts=", "-W", "ignore::pytest.PytestUnknownMarkWarning", "--tb=line", "-rf",
               "--continue-on-collection-errors"]
    command += ["--quick"] if options.quick else []
    command += [f"tests/{name}"] + options.pytest_args
    env = environment(site, engine, device, out / f"{engine}.{name}.jsonl")
    with open(out / f"{engine}.{name}.log", "w") as log:  # the child keeps its own handle
        return subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)


def run_engines(root: Path, site: Path, files: list, options, out: Path) -> tuple:
    """Every engine over every file at the same time, --jobs pytest processes per engine, one file
    each, taken in the order given (put the largest first). After --seconds no file starts and the
    running ones are stopped. ({engine: {test id: outcome}}, {engine: files not finished})."""
    deadline = time.monotonic() + options.seconds
    queues = {engine: list(files) for engine in options.engines}
    running: dict = {engine: {} for engine in options.engines}
    unfinished = {engine: [] for engine in options.engines}
    try:
        while any(queues.values()) or any(running.values()):
            late = time.monotonic() > deadline
            for engine, runs in running.items():
                for name, run in list(runs.items()):
                    if late and run.poll() is None:
                        run.kill()
                        run.wait()
                        unfinished[engine].append(name)
                    if run.poll() is None:
                        continue
                    del runs[name]
                    if run.returncode not in (0, 1) and name not in unfinished[engine]:
                        # pytest: 0 all passed, 1 some failed; else it broke off, and its file is not counted
                        print(f"engine {engine}: pytest exited {run.returncode}, see {engine}.{name}.log", flush=True)
                        unfinished[engine].append(name)
                while queues[engine] and len(runs) < options.jobs:
                    name = queues[engine].pop(0)
                    if late:
                        unfinished[engine].append(name)
                    else:
                        runs[name] = start(root, site, engine, options.device, name, options, out)
            time.sleep(0.2)
    finally:
        for runs in running.values():
            for run in runs.values():
                run.kill()
                run.wait()
    outcomes = {engine: {} for engine in options.engines}
    for engine in options.engines:
        for name in files:
            path = out / f"{engine}.{name}.jsonl"
            for line in path.read_text().splitlines() if path.is_file() and name not in unfinished[engine] else []:
                nodeid, outcome = json.loads(line)
                outcomes[engine][nodeid] = outcome
    return outcomes, unfinished


def per_file(outcomes: dict) -> dict:
    counts: dict = {}
    for nodeid, outcome in outcomes.items():
        counts.setdefault(nodeid.split("::")[0].split("/")[-1], Counter())[outcome] += 1
    return counts


def table(results: dict, files: list) -> str:
    engines = list(results)
    head = "| file | " + " | ".join(f"{e} passed / failed / skipped" for e in engines) + " |"
    lines = [head, "|---" * (len(engines) + 1) + "|"]
    totals = {e: Counter() for e in engines}
    counts = {e: per_file(results[e]) for e in engines}
    for name in files:
        cells = []
        for e in engines:
            c = counts[e].get(name, Counter())
            totals[e].update(c)
            cells.append(" / ".join(str(c[o]) for o in OUTCOMES))
        differs = len({cell for cell in cells}) > 1
        lines.append(f"| {'**' + name + '**' if differs else name} | " + " | ".join(cells) + " |")
    lines.append("| total | " + " | ".join(" / ".join(str(totals[e][o]) for o in OUTCOMES) for e in engines) + " |")
    return "\n".join(lines)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, type=Path, help="flag_gems-*.whl")
    parser.add_argument("--tests", required=True, type=Path, help="folder with FlagGems' tests/, or its git repository")
    parser.add_argument("--rev", default="v5.0.2", help="revision of a git --tests (default v5.0.2)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--engines", default=None, help="comma-separated: tritonwise,native (cpu: tritonwise)")
    parser.add_argument("--quick", action="store_true", help="FlagGems' --quick parametrization")
    parser.add_argument("--files", default=None,
                        help="comma-separated test files, or `ci` (default: those of the pointwise ops)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes per engine")
    parser.add_argument("--seconds", type=float, default=float("inf"),
                        help="start no file after this, stop the running ones, report the finished")
    parser.add_argument("--out", type=Path, default=None, help="folder for logs and outcomes")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    options = parser.parse_args(argv)
    default = "tritonwise" if options.device == "cpu" else "tritonwise,native"
    options.engines = (options.engines or default).split(",")
    return options


def main(argv=None) -> int:
    options = parse(argv)
    work = Path(tempfile.mkdtemp(prefix="flaggems_suite_"))
    out = options.out or work
    out.mkdir(parents=True, exist_ok=True)
    site, root = unpack_wheel(options.wheel, work), fetch_folder(options.tests.resolve(), options.rev, work, "tests")
    proofs = {engine: choose(root, site, engine, options.device) for engine in options.engines}
    for engine, proof in proofs.items():
        print(f"engine {engine}: FlagGems {proof['version']}, pointwise functions {proof['functions']} "
              f"in {proof['modules']} modules", flush=True)
    files = (proofs[options.engines[0]]["files"] if options.files is None
             else CI_FILES if options.files == "ci" else options.files.split(","))
    print(f"{len(files)} test files: {' '.join(files)}", flush=True)
    results, unfinished = run_engines(root, site, files, options, out)
    (out / "outcomes.json").write_text(json.dumps(results, indent=1))
    print(f"--quick {options.quick}; device {options.device}\n")
    done = [name for name in files if not any(name in cut for cut in unfinished.values())]
    print(table(results, done))
    for engine, cut in unfinished.items():
        if cut:
            print(f"engine {engine}: not finished in {options.seconds:.0f} s, left out: {','.join(sorted(cut))}")
    if any(unfinished.values()):
        return 2  # a cut run is not a whole run, whatever its counts
    return 0 if all(not Counter(r.values())["failed"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
