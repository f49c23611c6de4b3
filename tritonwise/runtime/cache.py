"""The on-disk cache of generated modules: where it is, atomic writes, verification.

A file ends with a checksum line over everything above it; one that verifies is reused as it is, a
truncated, edited or foreign one is rewritten. Writes are atomic (a temporary file renamed into
place) with the umask's permissions. A directory other users can write is never used
(runtime/trust.py). A trusted configured directory is always searched first, writable or not; a file
that must be written where it cannot goes to `$TRITONWISE_CACHE_OVERLAY`, else to a private
temporary directory (with a warning). docs/cache.md describes the rules.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, Optional

from . import freeze, trust

logger = logging.getLogger("tritonwise")

CHECKSUM_PREFIX = "# tritonwise-checksum: "
KERNELS = "kernels"  # the compiled-kernel store's subdirectory (runtime/kernel_store.py)
PROBES = "probes"  # remembered payload value dtypes (runtime/interpreter/probe.py)
_fallback_lock = threading.Lock()
_fallback_dir: Optional[Path] = None
_warned: set = set()  # the warnings this process has given (each is given once)
_PRIVATE_NOTE = "(removed at exit; set TRITONWISE_CACHE_OVERLAY to choose a directory that keeps them)"


class CacheNotWritable(OSError):
    """A directory that must receive files cannot be written (or must not be: others can)."""


def configured_dir() -> Path:
    env = os.environ.get("TRITONWISE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "tritonwise" / "generated_cache"


def make_dirs(path: Path) -> None:
    """Create `path` and its missing parents, none writable by every user whatever the umask (else untrusted)."""
    if not path.exists():
        make_dirs(path.parent)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
    if not path.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(path))


def _usable(path: Path) -> bool:
    try:
        make_dirs(path)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _overlay() -> Optional[Path]:
    env = os.environ.get("TRITONWISE_CACHE_OVERLAY")
    return Path(env).expanduser() if env else None


def location() -> tuple:
    """The settings search_dirs() follows, cheap to read: a key for memos of found files."""
    return os.environ.get("TRITONWISE_CACHE_DIR"), os.environ.get("TRITONWISE_CACHE_OVERLAY")


def search_dirs() -> list:
    """Where cached files are looked for: the configured directory, then the overlays, untrusted ones left out."""
    return [d for d in (configured_dir(), _overlay(), _fallback_dir) if d is not None and trusted(d)]


def trusted(directory: Path) -> bool:
    """Whether only its owner and root can write `directory`; warns once per directory where not."""
    problem = trust.directory_problem(directory)
    if problem is None:
        return True
    if directory not in _warned:
        _warned.add(directory)
        instead = _overlay_dir(None)
        kept = f" for this process {_PRIVATE_NOTE}" if is_private(instead) else ""
        _warn(
            f"tritonwise: not using the cache directory {directory}: {problem}, so another user could plant "
            f"code there that this process would run; using {instead} instead{kept}"
        )
    return False


def trusted_entry(directory: Path, path: Path) -> bool:
    """Whether only its owner and root can write `path` under the trusted `directory`: it may be loaded."""
    problem = trust.entry_problem(directory, path)
    if problem is not None:
        logger.debug("tritonwise: not loading %s: %s", path, problem)
    return problem is None


def cache_dir() -> Path:
    """Where new files go: the configured directory when trusted and writable, else the overlay."""
    path = configured_dir()
    if not trusted(path):
        return _overlay_dir(None)
    if _usable(path) and trusted(path):  # again once made: another user may have made it first
        return path
    return _overlay_dir(f"cache directory {path} is not writable")


def _overlay_dir(problem: Optional[str]) -> Path:
    """The overlay, else the private directory, with one warning per `problem` (why the configured one failed)."""
    overlay = _overlay()
    if overlay not in (None, _fallback_dir) and trusted(overlay) and _usable(overlay) and trusted(overlay):
        return overlay  # (trusted again once made: another user may have made it first)
    directory = _private_dir()
    if problem is not None and problem not in _warned:
        _warned.add(problem)
        if overlay is not None:  # set, but not a directory this process can use
            problem, note = f"{problem}, nor is TRITONWISE_CACHE_OVERLAY {overlay}", "(removed at exit)"
        else:
            note = _PRIVATE_NOTE
        _warn(f"tritonwise: {problem}; using {directory} for the files it lacks in this process {note}")
    return directory


def _private_dir() -> Path:
    """This process's private directory (0700), removed at exit by the process that made it."""
    global _fallback_dir
    with _fallback_lock:
        if _fallback_dir is None:
            _fallback_dir = Path(tempfile.mkdtemp(prefix="tritonwise-cache-"))
            atexit.register(_remove_private_dir, _fallback_dir, os.getpid())
        return _fallback_dir


def is_private(directory: Path) -> bool:
    """Whether `directory` is this process's private directory (removed at exit)."""
    return _fallback_dir is not None and directory == _fallback_dir


def _remove_private_dir(directory: Path, owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return
    for _ in range(3):  # again if a background build (runtime/aten.py) wrote into it meanwhile
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists():
            return


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=5)


def write(name: str, data) -> Path:
    """Write `data` as the file `name` into cache_dir(), or the overlay when the configured directory refuses it."""
    directory = cache_dir()
    try:
        atomic_write(directory / name, data)
    except OSError as e:
        if directory != configured_dir():
            raise
        directory = _overlay_dir(_write_problem(directory / name, e))
        atomic_write(directory / name, data)
    return directory / name


def _write_problem(path: Path, error: OSError) -> str:
    """What kept `path` from being written, as a phrase for the fallback warning."""
    if path.is_dir():
        return f"{path} is a directory, where tritonwise would write a cache file"
    return f"cannot write {path} ({error.strerror or error})"


def require_writable() -> Path:
    """The configured directory, or CacheNotWritable saying why it cannot receive files (for
    commands whose whole point is to write there, such as `generate`)."""
    path = configured_dir()
    problem = trust.directory_problem(path)
    if problem is not None:
        raise CacheNotWritable(
            f"will not write to the tritonwise cache directory {path}: {problem}, so another user could plant "
            f"code there (see docs/cache.md; set TRITONWISE_CACHE_DIR to a directory only you can write)"
        )
    if not _usable(path):
        raise CacheNotWritable(
            f"cannot write to the tritonwise cache directory {path}: it cannot be created or is not writable "
            f"by this user (set TRITONWISE_CACHE_DIR to a writable directory)"
        )
    return path


def find(name: str, valid: Callable[[Path], bool]) -> Optional[Path]:
    """The first `dir / name` over search_dirs() that is trusted and passes `valid`, or None."""
    for directory in search_dirs():
        path = directory / name
        if trusted_entry(directory, path) and valid(path):
            return path
    return None


def seal(source: str) -> str:
    """`source` with its checksum line appended."""
    return f"{source}{CHECKSUM_PREFIX}{_digest(source)}\n"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def verifies(path: Path, marks: tuple = ()) -> bool:
    """Whether the file's checksum line matches and each of `marks` (version and key header text) is in it."""
    return _verified_text(path, marks) is not None


def _verified_text(path: Path, marks: tuple = ()) -> Optional[str]:
    """The file's text, read once, where it verifies (as `verifies`); else None."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    body, sep, tail = text.rpartition(CHECKSUM_PREFIX)
    return text if sep and tail == f"{_digest(body)}\n" and all(mark in body for mark in marks) else None


def verified_source(path: Path) -> str:
    """The text of the generated file at `path` as this process verified or wrote it (what runs is
    what was checked, even if the file was removed or replaced since); a file this process has not
    verified (a path given by hand, as benchmarks do) is read once and its checksum checked now,
    not where it lies (ensure_file's `find` checks that)."""
    text = _texts.get(str(path))
    if text is None:
        text = _verified_text(path)
        if text is None:
            raise OSError(f"tritonwise: {path} is missing or fails its checksum; it is not run")
    return text


def ensure_file(name: str, render: Callable[[], str], marks: tuple = ()) -> Path:
    """The path of a verified cached file `name`, rendering and writing it only when needed.

    A file verified (or written) by this process is remembered with its inode, size and mtime
    (`_verified`): asking again costs one `os.stat`; a file changed since is verified again."""
    memo = (name, marks, location())
    known = _verified.get(memo)
    if known is not None and _identity(known[0]) == known[1]:
        return known[0]
    texts = {}
    path = find(name, lambda p: texts.setdefault(p, _verified_text(p, marks)) is not None)
    if path is not None:
        text = texts[path]
        _count(path.parent, "reused")
    else:
        freeze.check(f"the generated file {name}, which no cache directory holds")
        text = seal(render())
        path = write(name, text)
        logger.debug("tritonwise: generated %s", path)
        _count(path.parent, "written")
    _texts[str(path)] = text
    identity = _identity(path)
    if identity is not None:
        _verified[memo] = (path, identity)
    return path


# (name, marks, location()) -> (path, _identity(path)) of
# each file verified in this process; cleared by clear(). A racing writer at worst verifies twice.
_verified: dict = {}
_texts: dict = {}  # str(path) -> the text verified or written there (verified_source)


def forget_verified() -> None:
    """Verify every file again when next asked for (after `cache clear`)."""
    _verified.clear()
    _texts.clear()


def _identity(path: Path) -> Optional[tuple]:
    """What changes when a file is rewritten or edited: inode, size, mtime (None: missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


STATS_FILE = ".stats.json"


STATS_KEYS = ("written", "reused")


def _count(directory: Path, event: str) -> None:
    """Best-effort counters for `cache stats` (a lost update is harmless; a read-only directory, or
    a STATS_FILE that tritonwise did not write, keeps none)."""
    if not os.access(directory, os.W_OK):
        return
    counts = read_stats(directory)
    if counts is None:
        return
    counts[event] = counts.get(event, 0) + 1
    with contextlib.suppress(OSError):
        atomic_write(directory / STATS_FILE, json.dumps(counts))


def read_stats(directory: Path) -> Optional[dict]:
    """The counters in `directory`: {} where it has no STATS_FILE, None where the file there is not
    one tritonwise writes (a non-empty object of STATS_KEYS to ints)."""
    try:
        counts = json.loads((directory / STATS_FILE).read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    ours = isinstance(counts, dict) and counts and set(counts) <= set(STATS_KEYS)
    return counts if ours and all(type(v) is int for v in counts.values()) else None


def atomic_write(path: Path, data) -> None:
    """Write `data` to `path` through a temporary file renamed into place, with the umask's permissions."""
    make_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644 & ~umask())  # never writable by every user (runtime/trust.py)
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_umask_lock = threading.Lock()


def umask() -> int:
    """The process's umask, read without changing it where Linux reports it."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _umask_lock:  # elsewhere: set and restore (briefly process-wide)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask
