"""How many of FlagGems' pointwise payloads have a torch expression (what torch.compile traces).

    python tests/compat/flaggems_torch_expr.py --flaggems GIT_DIR_OR_OPS_DIR [--rev v5.0.2] [--check]

Every op file of FlagGems' `src/flag_gems/ops/` is imported over tests/compat/shim (as
flaggems_ops.py does); each `pointwise_dynamic` function found in the imported modules is one
payload. Per payload the table says `traced` (tracing/expression.py translates it) or the
construct that stops it (the reason explain() gives). With --check, each traced payload also runs
once through its kernel (Triton's interpreter) and its torch expression on random float32
operands, and the table says whether the two agree. Files that do not import over the shim (not
pointwise, or needing FlagGems' runtime) are counted apart.
"""

from __future__ import annotations

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "shim"), str(HERE.parents[1]), str(HERE)]

import torch  # noqa: E402

from flaggems_source import install_ops, locate_ops  # noqa: E402
from tritonwise import PointwiseDynamicFunction  # noqa: E402
from tritonwise.tracing.expression import evaluate, expression_or_reason  # noqa: E402


def ops_dir_at(location: str, rev: str) -> Path:
    """FlagGems' op files at `rev` of a git directory (bare or not), else as locate_ops finds them."""
    git = Path(location)
    if not ((git / "HEAD").is_file() and (git / "objects").is_dir()):
        return locate_ops(location)
    target = Path(tempfile.mkdtemp(prefix="flaggems_ops_"))
    archive = subprocess.run(
        ["git", "--git-dir", str(git), "archive", rev, "src/flag_gems/ops"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "src" / "flag_gems" / "ops"


def payloads(ops: Path) -> tuple:
    """({'file.name': function}, [files that did not import])."""
    names = sorted(p.stem for p in ops.glob("*.py") if p.stem != "__init__")
    install_ops(ops, names)
    found, failed = {}, []
    for name in names:
        try:
            module = importlib.import_module(f"flag_gems.ops.{name}")
        except Exception:  # not importable over the shim: not counted as a payload
            failed.append(name)
            continue
        for attr, value in vars(module).items():
            if isinstance(value, PointwiseDynamicFunction) and value.__module__ != "tritonwise":
                found.setdefault(f"{name}.{attr}", value)
    return found, failed


def check(fn) -> str:
    """Kernel against torch expression on random float32 operands (scalars 0.75), else on int32
    ones (scalars 3) where the kernel takes no floats (bitwise ops)."""
    generator = torch.Generator().manual_seed(0)
    for make, scalar in ((lambda: torch.rand((3, 4), generator=generator) * 1.5 + 0.25, 0.75),
                         (lambda: torch.randint(1, 9, (3, 4), generator=generator, dtype=torch.int32), 3)):
        args = tuple(make() if fn.schema.is_tensor(i) else scalar for i in range(fn.schema.num_inputs()))
        try:
            expected = fn(*args)
        except Exception as e:  # the kernel takes no such operands: try the next kind
            refused = f"kernel refuses float32 and int32 ({type(e).__name__})"
            continue
        return _agree(evaluate(fn, args), expected)
    return refused


def _agree(got, expected) -> str:
    pairs = zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,))
    for g, e in pairs:
        if g.dtype != e.dtype:
            return f"MISMATCH dtype {g.dtype} vs {e.dtype}"
        try:
            torch.testing.assert_close(g, e, equal_nan=True)
        except AssertionError:
            return "MISMATCH values"
    return "agrees"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flaggems", required=True)
    parser.add_argument("--rev", default="v5.0.2")
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    found, failed = payloads(ops_dir_at(options.flaggems, options.rev))
    traced = agreed = 0
    for name, fn in sorted(found.items()):
        reason = expression_or_reason(fn)
        if isinstance(reason, str):
            print(f"{name:48} stopped: {reason}")
            continue
        traced += 1
        verdict = check(fn) if options.check else ""
        agreed += verdict == "agrees"
        print(f"{name:48} traced" + (f" ({verdict})" if verdict else ""))
    checked = f", {agreed} of them checked against their kernel and agreeing" if options.check else ""
    print(f"\n{traced} of {len(found)} pointwise payloads traced{checked}; ", end="")
    print(f"{len(failed)} op files did not import over the shim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
