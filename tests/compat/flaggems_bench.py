"""FlagGems' own benchmarks for its pointwise ops, with FlagGems' engine and with tritonwise's.

    python tests/compat/flaggems_bench.py --wheel flag_gems-5.0.2-py3-none-any.whl --tests FLAGGEMS \\
        [--rev v5.0.2] [--files test_unary_pointwise_perf.py,...] [--warm-jobs N] [--out DIR] \\
        [-- benchmark args]

FLAGGEMS holds `benchmark/` (a folder or a git repository read at REV). Each engine runs the files
in turn, never at once, in its own pytest process through the plugin flaggems_engine.py, with
FlagGems' `--record log`. Per op: the geometric mean over its dtypes and shapes of native latency /
tritonwise latency (above 1: tritonwise faster), and beside it torch's latency in each run as a
check that both runs saw the same machine. Only ops whose FlagGems function sits in a module with
a pointwise function are kept. Extra arguments go to FlagGems' harness (default: see
DEFAULT_ARGS; its own defaults, 1000 ms of warm-up per timing, take hours for these files).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flaggems_suite import environment, fetch_folder, unpack_wheel

DEFAULT_FILES = ("test_unary_pointwise_perf.py,test_binary_pointwise_perf.py,test_generic_pointwise_perf.py,"
                 "test_tensor_constructor_perf.py,test_distribution_perf.py")
# FlagGems' core shapes, each timing 5 ms of warm-up and 20 ms of runs (triton's do_bench), the
# out-of-place ops of its parametrized benchmarks only: in-place and out= variants run the same kernels
DEFAULT_ARGS = ["--level", "core", "--warmup", "5", "--iter", "20", "-k",
                "(general or generic_pointwise_benchmark or tensor_constructor_benchmark "
                "or distribution_benchmark or test_pow) and not inplace"]


def bench_command(root: Path, site: Path, engine: str, files: list, extra: list) -> tuple:
    """pytest over FlagGems' benchmark files on one engine: (command, environment). FlagGems names
    its record file after the command line, which must stay short: options go through
    PYTEST_ADDOPTS, which it does not see."""
    options = ["-q", "-p", "no:cacheprovider", "-p", "flaggems_engine", "-o", "addopts=", "--record", "log", *extra]
    env = dict(environment(site, engine, "cuda"), PYTEST_ADDOPTS=shlex.join(options))
    return [sys.executable, "-m", "pytest", *[f"benchmark/{name}" for name in files]], env


def warm(root: Path, site: Path, engines: list, files: list, extra: list, jobs: int, seconds: float) -> None:
    """Compile every case's kernels ahead, on both engines at once, `jobs` processes each sharing
    the cases out, one run per timing: the timed runs then load kernels from disk instead of
    compiling them one after another."""
    quick = list(extra)
    for flag in ("--warmup", "--iter"):
        if flag in quick:
            quick[quick.index(flag) + 1] = "1"
        else:
            quick += [flag, "1"]
    runs = []
    for engine in engines:
        command, env = bench_command(root, site, engine, files, quick)
        for index in range(jobs):
            shard = dict(env, TRITONWISE_FLAGGEMS_SHARD=f"{index}/{jobs}")
            runs.append(subprocess.Popen(command, cwd=root, env=shard, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + seconds
    for run in runs:
        try:
            run.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
    for old in root.glob("result_*.log"):
        old.unlink()


def run_engine(root: Path, site: Path, engine: str, files: list, extra: list, out: Path, seconds: float) -> list:
    """Run the files on one engine for at most `seconds`; FlagGems' records (one per op and dtype,
    written as each finishes, so a run cut short still yields its first ops) as dicts."""
    for old in root.glob("result_*.log"):
        old.unlink()
    command, env = bench_command(root, site, engine, files, extra)
    with open(out / f"bench_{engine}.log", "w") as log:
        try:
            subprocess.run(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=seconds)
        except subprocess.TimeoutExpired:
            log.write(f"\n[flaggems_bench] stopped after {seconds:.0f} s\n")
    for path in root.glob("result_*.log"):
        path.replace(out / f"bench_{engine}.records.log")
    return read_records(out, engine)


def latencies(records: list) -> dict:
    """{(op, dtype, shape): (torch ms, flag_gems ms)}"""
    found = {}
    for record in records:
        for metric in record["result"]:
            if metric.get("latency") and metric.get("latency_base"):
                key = (record["op_name"], record["dtype"], json.dumps(metric["shape_detail"]))
                found[key] = (metric["latency_base"], metric["latency"])
    return found


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def compare(native: dict, ours: dict, keep) -> tuple:
    rows, ratios = [], []
    for op in sorted({key[0] for key in native} & {key[0] for key in ours}):
        if not keep(op):
            continue
        keys = [k for k in native if k[0] == op and k in ours]
        ratio = geomean(native[k][1] / ours[k][1] for k in keys)
        torch_drift = geomean(ours[k][0] / native[k][0] for k in keys)
        us = geomean(ours[k][1] * 1000 for k in keys)
        rows.append((op, len(keys), geomean(native[k][1] * 1000 for k in keys), us, ratio, torch_drift))
        ratios.append(ratio)
    return rows, geomean(ratios)


def table(rows: list, mean: float) -> str:
    lines = ["| op | cases | FlagGems' engine µs | tritonwise µs | speed ratio (tritonwise / native) "
             "| torch's own ratio |", "|---|---|---|---|---|---|"]
    for op, cases, native_us, our_us, ratio, drift in rows:
        flag = " **" if ratio < 0.97 else ""
        lines.append(f"| {op} | {cases} | {native_us:.1f} | {our_us:.1f} | {ratio:.3f}{flag} | {drift:.3f} |")
    lines.append(f"\n{len(rows)} ops; geometric mean of the speed ratio: {mean:.3f}; "
                 f"below 0.97: {sum(r[4] < 0.97 for r in rows)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, type=Path)
    parser.add_argument("--tests", required=True, type=Path,
                        help="folder with FlagGems' benchmark/, or its git repository")
    parser.add_argument("--rev", default="v5.0.2")
    parser.add_argument("--files", default=DEFAULT_FILES)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=3600, help="time for both engines' timed runs")
    parser.add_argument("--warm-jobs", type=int, default=0,
                        help="first compile every case's kernels in this many processes per engine at once")
    parser.add_argument("--warm-seconds", type=float, default=600, help="time for compiling ahead")
    parser.add_argument("--engines", default="native,tritonwise",
                        help="run one engine now, the other in a later call on the same machine, then --records")
    parser.add_argument("--records", default=None,
                        help="comma-separated --out folders of earlier runs: compare their records, run nothing")
    parser.add_argument("bench_args", nargs="*", help="after --: passed to FlagGems' harness")
    options = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="flaggems_bench_"))
    out = options.out or work
    out.mkdir(parents=True, exist_ok=True)
    site, root = unpack_wheel(options.wheel, work), fetch_folder(options.tests.resolve(), options.rev, work, "benchmark")
    root = private_copy(root, work)
    files, extra = options.files.split(","), options.bench_args or DEFAULT_ARGS
    if options.records:
        folders = [Path(folder) for folder in options.records.split(",")]
        results = {engine: latencies([r for folder in folders for r in read_records(folder, engine)])
                   for engine in ("native", "tritonwise")}
    else:
        engines = options.engines.split(",")
        if options.warm_jobs:
            warm(root, site, engines, files, extra, options.warm_jobs, options.warm_seconds)
        results = {engine: latencies(run_engine(root, site, engine, files, extra, out, options.seconds / len(engines)))
                   for engine in engines}
        if len(results) < 2:
            print(f"{', '.join(results)}: {sum(len(r) for r in results.values())} timings; records in {out}")
            return 0
    kept = pointwise_ops(root, site, sorted({key[0] for key in results["native"]}))
    rows, mean = compare(results["native"], results["tritonwise"], kept.__contains__)
    print(table(rows, mean))
    return 0


def private_copy(root: Path, work: Path) -> Path:
    """`root`'s benchmark folder under `work`: FlagGems' harness writes its records into the folder
    it runs in, under a name taken from the command line, so two runs sharing one (an engine on
    each GPU) would mix their records."""
    if root.is_relative_to(work):
        return root
    copy = work / "flaggems"
    shutil.copytree(root / "benchmark", copy / "benchmark", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pytest.ini", "conftest.py"):
        if (root / name).is_file():
            shutil.copy(root / name, copy / name)
    return copy


def pointwise_ops(root: Path, site: Path, ops: list) -> set:
    """The benchmarked op names that FlagGems serves with a pointwise function, asked of a process
    with FlagGems imported: `flag_gems.<op>`, or a function named `<op>_...` (its overloads:
    `pow_tensor_scalar`, `where_self`, `div_mode`), sits in a module that holds a pointwise
    function (a prefix may also catch another op's function: `log_sigmoid` for `log`)."""
    script = ("import json, sys, flaggems_engine as e\n"
              "def ours(op):\n"
              "    names = [n for n in dir(e.flag_gems) if n == op or n.startswith(op + '_')]\n"
              "    return any(getattr(getattr(e.flag_gems, n), '__module__', None) in e.MODULES for n in names)\n"
              "print(json.dumps(sorted(op for op in sys.argv[1:] if ours(op))))")
    done = subprocess.run([sys.executable, "-c", script, *ops], cwd=root, capture_output=True, text=True,
                          env=environment(site, "native", os.environ.get("TRITONWISE_COMPAT_DEVICE", "cuda")),
                          check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def read_records(folder: Path, engine: str) -> list:
    """FlagGems' records in `bench_<engine>.records.log` under `folder`, as dicts."""
    path = folder / f"bench_{engine}.records.log"
    records = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        text = line.partition("] ")[2]
        if text.startswith("{") and '"op_name"' in text:
            records.append(json.loads(text))
    return records


if __name__ == "__main__":
    sys.exit(main())
