"""The on-disk cache of generated modules: where it is, atomic writes, verification.

A file ends with a checksum line over everything above it. A file that exists and verifies is
reused as it is (across processes, without rendering); a truncated, edited or foreign file
fails verification and is rewritten. Writes go to a temporary file in the same directory and
are renamed into place, so readers never see a partial file. Files get the permissions the
umask gives a new file (0644 under the usual 022), so a cache one user builds others can read.

Deployments are often read-only. The configured directory is always searched first, writable
or not, and what verifies there is used. Only a file that must be written goes elsewhere when
that directory cannot be written: to the overlay, `$TRITONWISE_CACHE_OVERLAY` or else a
temporary directory made once per process (with a warning), searched after it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, Optional

from . import freeze

logger = logging.getLogger("tritonwise")

CHECKSUM_PREFIX = "# tritonwise-checksum: "
KERNELS = "kernels"  # the compiled-kernel store's subdirectory (runtime/kernel_store.py)
PROBES = "probes"  # remembered payload value dtypes (runtime/probe.py)
_fallback_lock = threading.Lock()
_fallback_dir: Optional[Path] = None


class CacheNotWritable(OSError):
    """A directory that must receive files cannot be written."""


def configured_dir() -> Path:
    env = os.environ.get("TRITONWISE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "tritonwise" / "generated_cache"


def _usable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _overlay_candidates() -> list:
    env = os.environ.get("TRITONWISE_CACHE_OVERLAY")
    return ([Path(env).expanduser()] if env else []) + ([_fallback_dir] if _fallback_dir is not None else [])


def location() -> tuple:
    """The settings search_dirs() follows, cheap to read: a key for memos of found files."""
    return os.environ.get("TRITONWISE_CACHE_DIR"), os.environ.get("TRITONWISE_CACHE_OVERLAY")


def search_dirs() -> list:
    """Where cached files are looked for, in order: the configured directory, then the overlays."""
    return [configured_dir(), *_overlay_candidates()]


def cache_dir() -> Path:
    """Where new files are written: the configured directory when it is writable, else the
    overlay ($TRITONWISE_CACHE_OVERLAY, or a temporary directory, with a warning)."""
    path = configured_dir()
    return path if _usable(path) else _overlay_dir(path)


def _overlay_dir(unwritable: Path) -> Path:
    for overlay in _overlay_candidates():
        if _usable(overlay):
            return overlay
    global _fallback_dir
    with _fallback_lock:
        if _fallback_dir is None:
            _fallback_dir = Path(tempfile.mkdtemp(prefix="tritonwise-cache-"))
            warnings.warn(
                f"tritonwise: cache directory {unwritable} is not writable; using {_fallback_dir} for the files it "
                f"lacks in this process (set TRITONWISE_CACHE_OVERLAY to choose the directory)",
                RuntimeWarning,
                stacklevel=4,
            )
        return _fallback_dir


def write(name: str, data) -> Path:
    """Write `data` as the file `name` (a path relative to a cache directory) into cache_dir();
    into the overlay when the configured directory refuses the write after all."""
    directory = cache_dir()
    try:
        atomic_write(directory / name, data)
    except OSError:
        if directory != configured_dir():
            raise
        directory = _overlay_dir(directory)
        atomic_write(directory / name, data)
    return directory / name


def require_writable() -> Path:
    """The configured directory, or CacheNotWritable saying why it cannot receive files (for
    commands whose whole point is to write there, such as `generate`)."""
    path = configured_dir()
    if not _usable(path):
        raise CacheNotWritable(
            f"cannot write to the tritonwise cache directory {path}: it cannot be created or is not writable "
            f"by this user (set TRITONWISE_CACHE_DIR to a writable directory)"
        )
    return path


def find(name: str, valid: Callable[[Path], bool]) -> Optional[Path]:
    """The first `dir / name` over search_dirs() that passes `valid`, or None."""
    for directory in search_dirs():
        path = directory / name
        if valid(path):
            return path
    return None


def seal(source: str) -> str:
    """`source` with its checksum line appended."""
    return f"{source}{CHECKSUM_PREFIX}{_digest(source)}\n"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def verifies(path: Path, marks: tuple = ()) -> bool:
    """The file's checksum line matches its content, and each of `marks` (header text naming
    the library version and spec key the file must be for) appears in it."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    body, sep, tail = text.rpartition(CHECKSUM_PREFIX)
    return bool(sep) and tail == f"{_digest(body)}\n" and all(mark in body for mark in marks)


def ensure_file(name: str, render: Callable[[], str], marks: tuple = ()) -> Path:
    """The path of a verified cached file `name`, rendering and writing it only when needed.

    A file this process has verified (or written) is remembered with its inode, size and
    mtime under the cache directories in force (see `_verified`); asking again costs one
    `os.stat` and neither reads the file nor updates the stats file, which counts a reuse once
    per process. A file replaced or edited since (another mtime, size or inode) is verified again.
    """
    memo = (name, marks, location())
    known = _verified.get(memo)
    if known is not None and _identity(known[0]) == known[1]:
        return known[0]
    path = find(name, lambda p: verifies(p, marks))
    if path is not None:
        _count(path.parent, "reused")
    else:
        freeze.check(f"the generated file {name}, which no cache directory holds")
        path = write(name, seal(render()))
        logger.debug("tritonwise: generated %s", path)
        _count(path.parent, "written")
    identity = _identity(path)
    if identity is not None:
        _verified[memo] = (path, identity)
    return path


# (name, marks, location()) -> (path, _identity(path)) of
# each file verified in this process; cleared by clear(). A racing writer at worst verifies twice.
_verified: dict = {}


def _identity(path: Path) -> Optional[tuple]:
    """What changes when a file is rewritten or edited: inode, size, mtime (None: missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


STATS_FILE = ".stats.json"


def _count(directory: Path, event: str) -> None:
    """Best-effort counters for `cache stats` (a lost update between processes is harmless;
    a read-only directory keeps none)."""
    if not os.access(directory, os.W_OK):
        return
    counts = read_stats(directory)
    counts[event] = counts.get(event, 0) + 1
    try:
        atomic_write(directory / STATS_FILE, json.dumps(counts))
    except OSError:
        pass


def read_stats(directory: Path) -> dict:
    try:
        return json.loads((directory / STATS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def atomic_write(path: Path, data) -> None:
    """Write `data` (str or bytes) to `path` through a temporary file renamed into place,
    readable as the umask allows (mkstemp alone would leave it 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_umask_lock = threading.Lock()


def umask() -> int:
    """The process's umask, read without changing it where Linux reports it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # elsewhere: set and restore (briefly process-wide)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def list_files() -> list:
    directory = configured_dir()
    return sorted(directory.glob("*.py")) if directory.is_dir() else []


def list_kernels() -> list:
    directory = configured_dir() / KERNELS
    return sorted(p for p in directory.iterdir() if p.suffix == ".bin") if directory.is_dir() else []


def clear() -> int:
    """Remove the generated files and stored kernels (and remembered probe results); returns how
    many files and kernels there were."""
    files = list_files() + list_kernels()
    probes = configured_dir() / PROBES
    remembered = list(probes.glob("*.json")) if probes.is_dir() else []
    _verified.clear()
    for f in files + remembered + [configured_dir() / STATS_FILE]:
        f.unlink(missing_ok=True)
    return len(files)


def stats() -> dict:
    """Files, bytes, files per payload, stored kernels, and how often a file was written or reused."""
    files = list_files()
    per_payload: dict = {}
    for f in files:
        match = re.match(r"(.*)_r\d+_[a-z0-9_]+?_i(?:32|64)_", f.name)
        payload = match.group(1) if match else f.name
        per_payload[payload] = per_payload.get(payload, 0) + 1
    counts = read_stats(configured_dir())
    return {
        "directory": str(configured_dir()),
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "kernels": len(list_kernels()),
        "written": counts.get("written", 0),
        "reused": counts.get("reused", 0),
        "per_payload": per_payload,
    }
