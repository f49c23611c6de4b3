"""The part of a generated file's key that comes from the generator itself, not from the call:
`generator_digest()` hashes every source that writes a spec's text or decides its fields (the
templates, codegen/, analysis/, schemes/), so an edit gives new keys; `triton_version()` sits beside
it, since the same text can compile differently under another Triton.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
GENERATOR_SOURCES = ("templates/*.py.j2", "codegen/*.py", "analysis/*.py", "schemes/*.py")


def generator_files() -> list:
    """Every file whose content can change a generated file, in a stable order."""
    return sorted(p for pattern in GENERATOR_SOURCES for p in PACKAGE_DIR.glob(pattern))


@functools.lru_cache(maxsize=1)
def generator_digest() -> str:
    """A short hash of the generator files' names (relative to the package) and contents."""
    digest = hashlib.sha256()
    for path in generator_files():
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def triton_version() -> str:
    import triton  # already imported: the payload is a @triton.jit function

    return triton.__version__
