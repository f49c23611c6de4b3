"""What tritonwise wrote in the configured cache directory, told from anything else there by its own
format: generated files (`*.py` with a verifying checksum line), compiled kernels (`kernels/*.bin`),
probe results (`probes/<24 hex>.json`) and `.stats.json`. Other and damaged files are never listed
or removed; `native/` builds stay.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import cache, kernel_store

_PROBE_NAME = re.compile(r"[0-9a-f]{24}\.json")


def generated_files(directory: Path) -> list:
    """The generated files in `directory`, sorted."""
    return _listed(directory, "*.py", cache.verifies)


def kernels(directory: Path) -> list:
    """The compiled-kernel entries under `directory`, sorted."""
    return _listed(directory / cache.KERNELS, "*.bin", lambda path: kernel_store.read(path) is not None)


def probes(directory: Path) -> list:
    """The remembered probe results under `directory`, sorted."""
    return _listed(directory / cache.PROBES, "*.json", _is_probe)


def _listed(directory: Path, pattern: str, is_ours) -> list:
    """The files in `directory` matching `pattern` that `is_ours` accepts, sorted. A `kernels/` or
    `probes/` that is a link is not followed: what it leads to is outside the cache directory."""
    if directory.is_symlink() or not directory.is_dir():
        return []
    return sorted(p for p in directory.glob(pattern) if p.is_file() and is_ours(p))


def _is_probe(path: Path) -> bool:
    data = _json(path) if _PROBE_NAME.fullmatch(path.name) else None
    return isinstance(data, dict) and set(data) == {"inputs", "dtypes"}


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Cleared:
    """What clear() removed, by kind, and what it could not remove (path, reason)."""

    files: int = 0
    kernels: int = 0
    probes: int = 0
    failed: list = field(default_factory=list)


def clear(directory: Path) -> Cleared:
    """Remove tritonwise's files from `directory` (then its emptied `kernels/` and `probes/`); nothing else."""
    result = Cleared()
    cache.forget_verified()
    for kind, listing in (("files", generated_files), ("kernels", kernels), ("probes", probes)):
        for path in listing(directory):
            if _remove(path, result):
                setattr(result, kind, getattr(result, kind) + 1)
    if cache.read_stats(directory):  # ours, not another file of that name
        _remove(directory / cache.STATS_FILE, result)
    for sub in (cache.KERNELS, cache.PROBES):
        with contextlib.suppress(OSError):  # missing, a link, or holds something that is not ours
            (directory / sub).rmdir()
    return result


def _remove(path: Path, result: Cleared) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False  # removed meanwhile by another process
    except OSError as e:
        result.failed.append((path, e.strerror or str(e)))
        return False
    return True


_KERNEL_FILE = re.compile(r"(.*)_r\d+_[a-z0-9_]+?_i(?:32|64)_")
_DERIVED_FILE = re.compile(r"(.*_(?:backward|ties\d+))_[0-9a-f]{16}\.py")


def function_of(path: Path) -> str:
    """The function a generated file serves: the payload a kernel file is named after, or the
    derived payload (`<name>_backward`, `<name>_ties<k>`) a derived-source file defines."""
    for pattern in (_DERIVED_FILE, _KERNEL_FILE):
        match = pattern.match(path.name)
        if match:
            return match.group(1)
    return path.stem


def stats(directory: Path) -> dict:
    """Files, bytes, files per function, stored kernels, probe results, and file writes and reuses."""
    files = generated_files(directory)
    counts = cache.read_stats(directory) or {}
    return {
        "directory": str(directory),
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "kernels": len(kernels(directory)),
        "probes": len(probes(directory)),
        "written": counts.get("written", 0),
        "reused": counts.get("reused", 0),
        "per_function": dict(Counter(function_of(f) for f in files)),
    }
