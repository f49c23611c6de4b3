"""Building and loading the C launcher (launch.c), once per machine and Python version.

Triton builds its own launchers the same way, so wherever Triton runs kernels a C compiler and
the Python headers are there. The shared object goes to `<cache dir>/native/`, named by a hash
of the source and the interpreter, written under a temporary name and renamed into place (a
read-only cache directory that holds it is used as it is).
Where it cannot be built, `launch_module()` is None and kernels launch through Triton.
"""

from __future__ import annotations

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
from pathlib import Path

from .cache import cache_dir, find

logger = logging.getLogger("tritonwise")
SOURCE = Path(__file__).with_name("launch.c")
INCLUDED = (Path(__file__).with_name("hit.h"),)  # #included by launch.c: part of the build's hash
MODULE_NAME = "_tritonwise_launch"


@functools.lru_cache(maxsize=None)
def launch_module():
    """The compiled launcher module, or None where it cannot be built or loaded."""
    try:
        path = build()
        try:
            return _load(path)
        except ImportError:  # a damaged file: build afresh once
            path.unlink(missing_ok=True)
            return _load(build())
    except (OSError, ImportError, subprocess.SubprocessError) as e:
        logger.warning("tritonwise: the C launcher could not be built (%s); launching through Triton", e)
        return None


def build() -> Path:
    """The path of the compiled launcher, compiling it if this machine has none yet."""
    source = SOURCE.read_bytes() + b"".join(path.read_bytes() for path in INCLUDED)
    tag = hashlib.sha256(source + sys.version.encode() + sysconfig.get_platform().encode()).hexdigest()[:16]
    name = f"native/{MODULE_NAME}_{tag}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    found = find(name, Path.exists)  # a read-only cache may hold it
    if found is not None:
        return found
    target = cache_dir() / name
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise OSError("no C compiler found (set CC)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [compiler, "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(SOURCE)]
    result = subprocess.run([*command, "-o", str(partial)], capture_output=True, text=True, timeout=300, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise OSError(f"{' '.join(command)} failed: {result.stderr.strip()[-2000:]}")
    os.replace(partial, target)
    return target


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
