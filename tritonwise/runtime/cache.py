"""The on-disk cache of generated modules: where it is, atomic writes, verification.

A file ends with a checksum line over everything above it. A file that exists and verifies is
reused as it is (across processes, without rendering); a truncated, edited or foreign file
fails verification and is rewritten. Writes go to a temporary file in the same directory and
are renamed into place, so readers never see a partial file.
"""

from __future__ import annotations

import hashlib
import json
import re
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, Optional

logger = logging.getLogger("tritonwise")

CHECKSUM_PREFIX = "# tritonwise-checksum: "
_fallback_lock = threading.Lock()
_fallback_dir: Optional[Path] = None


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


def cache_dir() -> Path:
    """The configured cache directory, or a temporary one (with a warning) if it is unwritable."""
    path = configured_dir()
    if _usable(path):
        return path
    global _fallback_dir
    with _fallback_lock:
        if _fallback_dir is None:
            _fallback_dir = Path(tempfile.mkdtemp(prefix="tritonwise-cache-"))
            warnings.warn(
                f"tritonwise: cache directory {path} is not writable; using {_fallback_dir} for this process",
                RuntimeWarning,
                stacklevel=3,
            )
        return _fallback_dir


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
    """The path of a verified cached file `name`, rendering and writing it only when needed."""
    directory = cache_dir()
    path = directory / name
    if verifies(path, marks):
        _count(directory, "reused")
        return path
    logger.debug("tritonwise: generated %s", path)
    _atomic_write(path, seal(render()))
    _count(directory, "written")
    return path


STATS_FILE = ".stats.json"


def _count(directory: Path, event: str) -> None:
    """Best-effort counters for `cache stats` (a lost update between processes is harmless)."""
    counts = read_stats(directory)
    counts[event] = counts.get(event, 0) + 1
    try:
        _atomic_write(directory / STATS_FILE, json.dumps(counts))
    except OSError:
        pass


def read_stats(directory: Path) -> dict:
    try:
        return json.loads((directory / STATS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def list_files() -> list:
    directory = configured_dir()
    return sorted(directory.glob("*.py")) if directory.is_dir() else []


def clear() -> int:
    files = list_files()
    for f in files + [configured_dir() / STATS_FILE]:
        f.unlink(missing_ok=True)
    return len(files)


def stats() -> dict:
    """Files, bytes, files per payload, and how often a file was written or reused."""
    files = list_files()
    per_payload: dict = {}
    for f in files:
        match = re.match(r"(.*)_r\d+_(?:flat|nd|tile2d)_i(?:32|64)_", f.name)
        payload = match.group(1) if match else f.name
        per_payload[payload] = per_payload.get(payload, 0) + 1
    counts = read_stats(configured_dir())
    return {
        "directory": str(configured_dir()),
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "written": counts.get("written", 0),
        "reused": counts.get("reused", 0),
        "per_payload": per_payload,
    }
