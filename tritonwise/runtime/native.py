"""Building and loading the C launcher (launch.c), once per machine and Python version, and the ATen
helpers it may call (aten.cpp), once per torch version.

A shared object goes to `<cache dir>/native/`, named by a hash of what its build depends on, written
under a temporary name and renamed into place. Where the launcher cannot be built, `launch_module()`
is None and kernels launch through Triton; a warning names the cause once per process
(`report_build_failure`).
"""

from __future__ import annotations

import concurrent.futures
import fcntl
import functools
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import warnings
from pathlib import Path

from . import cache
from .cache import cache_dir, find

logger = logging.getLogger("tritonwise")
SOURCE = Path(__file__).with_name("launch.c")
# #included by launch.c: part of the build's hash
INCLUDED = tuple(Path(__file__).with_name(name) for name in ("hit.h", "program.h", "index.h", "call.h"))
MODULE_NAME = "_tritonwise_launch"


BUILD_ERRORS = (OSError, ImportError, subprocess.SubprocessError)
_reported: set = set()


class BuildFailed(OSError):
    """The compiler exited non-zero; `cause` is the first error line of its output."""

    def __init__(self, command: list, output: str):
        self.cause = next((line for line in output.splitlines() if "error:" in line), output[-300:] or "no output")
        super().__init__(f"{' '.join(command)} failed: {output[-2000:]}")


def report_build_failure(what: str, fallback: str, error: BaseException) -> None:
    """Warn once per process that `what` could not be built, naming the compiler's first error line."""
    logger.debug("tritonwise: building %s failed: %s", what, error)
    if what in _reported:
        return
    _reported.add(what)
    cause = getattr(error, "cause", None) or str(error)
    warnings.warn(f"tritonwise: {what} could not be built ({cause}); {fallback}", RuntimeWarning, stacklevel=2)


def _launch_build() -> tuple:
    """built_module's arguments for launch.c."""
    return MODULE_NAME, [SOURCE, *INCLUDED], lambda: compiler("CC", "cc", "gcc"), []


_early_build: list = []  # the background build start_launch_build() began, if any
_early_lock = threading.Lock()


def start_launch_build() -> bool:
    """Begin compiling launch.c on a background thread, overlapping Triton's first compile;
    launch_module() waits for it and reports failures. False where launch.c cannot be there."""
    with _early_lock:
        if launch_module.cache_info().currsize:
            return launch_module() is not None
        if _early_build:
            return True
        name, sources, make, flags = _launch_build()
        if find(_file_name(name, sources, flags), Path.exists) is not None:
            return True  # built on an earlier run: nothing to overlap
        try:
            make()
        except OSError:
            return False
        _early_build.append(concurrent.futures.ThreadPoolExecutor(1).submit(build, *_launch_build()))
        return True


def launch_build_pending() -> bool:
    """Whether the background build start_launch_build() began is still running."""
    return bool(_early_build) and not _early_build[0].done()


@functools.lru_cache(maxsize=None)
def launch_module():
    """The compiled launcher module, or None where it cannot be built or loaded."""
    try:
        if _early_build:
            _early_build[0].result()  # raises what the background build raised, reported below
        return built_module(*_launch_build())
    except BUILD_ERRORS as e:
        report_build_failure("the C launcher (launch.c)", "launching through Triton", e)
        return None


def built_module(name: str, sources: list, compiler, flags: list, depends_on: bytes = b""):
    """Extension module `name` compiled from `sources` (the first; the rest are included) with
    `flags`, built once per content and loaded. Raises one of BUILD_ERRORS where it cannot be."""
    path = build(name, sources, compiler, flags, depends_on)
    try:
        return _load(name, path)
    except ImportError:  # a damaged file: build afresh once
        path.unlink(missing_ok=True)
        return _load(name, build(name, sources, compiler, flags, depends_on))


def build(name: str, sources: list, compiler, flags: list, depends_on: bytes = b"") -> Path:
    """The path of the compiled module (see built_module), compiling it if this machine has none."""
    file_name = _file_name(name, sources, flags, depends_on)
    found = find(file_name, Path.exists)  # a read-only cache may hold it
    if found is not None:
        return found
    target = cache_dir() / file_name
    cache.make_dirs(target.parent)  # never writable by others, whatever the umask (runtime/trust.py)
    with open(target.with_name(f"{target.name}.lock"), "a") as lock:
        # processes building it at once (the ranks of a job started together) wait for the first
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (target.exists() and cache.trusted_entry(cache_dir(), target)):
                _compile(target, sources, compiler, flags)  # else another process built it
        finally:  # not left to the file's closing: a process forked meanwhile shares the open file
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def _compile(target: Path, sources: list, compiler, flags: list) -> None:
    """Compile `sources` (the first; the rest are included) to `target`, under a temporary name
    renamed into place (one others could replace is built over)."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [compiler(), "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(sources[0])]
    command += flags
    result = subprocess.run([*command, "-o", str(partial)], capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BuildFailed(command, result.stderr.strip())
    os.chmod(partial, 0o755 & ~cache.umask())
    os.replace(partial, target)


def _file_name(name: str, sources: list, flags: list, depends_on: bytes = b"") -> str:
    """Where module `name` is kept: named by its sources, flags, interpreter and `depends_on`."""
    content = b"".join(path.read_bytes() for path in sources) + b" ".join(f.encode() for f in flags) + depends_on
    tag = hashlib.sha256(content + sys.version.encode() + sysconfig.get_platform().encode()).hexdigest()[:16]
    return f"native/{name}_{tag}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


def compiler(variable: str, *names: str) -> str:
    """The compiler the environment names in `variable`, else the first of `names` found."""
    found = os.environ.get(variable) or next(filter(None, map(shutil.which, names)), None)
    if found is None:
        raise OSError(f"no compiler found among {', '.join(names)} (set {variable})")
    return found


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
