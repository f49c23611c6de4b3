"""The compiled-kernel store: binaries beside the generated files, read back without Triton.

An entry holds one cubin and what launching it needs, named and checked by a KernelIdentity (all
that changes the binary). It is written and found where generated files are (runtime/cache.py), and
one that fails its sha256 or names another identity is never served.

File layout: a magic line, one line of JSON (identity and launch metadata), the binary, then a
trailer line with the sha256 of everything before it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from . import cache

MAGIC = b"tritonwise-kernel 1\n"
TRAILER = b"\n# sha256 "


@dataclass(frozen=True)
class KernelIdentity:
    file: str  # the generated file's name: kernel name and spec key
    source: str  # Triton's hash of the kernel and of what it calls (JITFunction.cache_key)
    triton: str  # triton.__version__
    target: tuple  # (backend, arch, warp_size), as triton's GPUTarget
    signature: tuple  # (parameter name, type) in order; "constexpr" for compile-time values
    attrs: tuple  # (parameter index, attribute letter): "D" 16-divisible, "" specialized but not
    constexprs: tuple  # (parameter index, value)
    options: tuple  # (name, value) of the backend's parsed options, sorted
    env: tuple  # (name, value) of environment variables that change compilation

    @property
    def key(self) -> str:
        return hashlib.sha256(_canonical(self.as_json()).encode()).hexdigest()[:32]

    @property
    def entry_name(self) -> str:
        """Path of the entry under a cache directory."""
        stem = self.file.removesuffix(".py")
        return f"{cache.KERNELS}/{stem}.{target_tag(self.target)}.{self.key}.bin"

    def as_json(self):
        return json.loads(_canonical(asdict(self)))  # tuples as lists, as read back

    def describe(self) -> str:
        return f"{self.file.removesuffix('.py')} for {target_tag(self.target)} (Triton {self.triton})"


def target_tag(target: tuple) -> str:
    backend, arch, _ = target
    return f"sm{arch}" if backend == "cuda" else str(arch)


@dataclass(frozen=True)
class StoredKernel:
    """A binary and what its launch needs (the fields of Triton's metadata the launcher reads)."""

    identity: KernelIdentity
    binary: bytes
    name: str
    num_warps: int
    shared: int
    launch: dict  # num_ctas, launch_cooperative_grid, launch_pdl, scratch sizes, tensordesc_meta


def save(kernel: StoredKernel) -> Path:
    """Write `kernel` into the writable cache directory (or overlay); returns its path."""
    return cache.write(kernel.identity.entry_name, encode(kernel))


def load(identity: KernelIdentity) -> Optional[StoredKernel]:
    """The stored kernel for `identity` from the first trusted directory holding a verified entry, or None."""
    for directory in cache.search_dirs():
        path = directory / identity.entry_name
        kernel = read(path) if cache.trusted_entry(directory, path) else None
        if kernel is not None and kernel.identity == identity:
            return kernel
    return None


def read(path: Path) -> Optional[StoredKernel]:
    """The entry at `path`, or None where it cannot be read or is no intact entry."""
    try:
        return decode(path.read_bytes())
    except OSError:
        return None


_HEADER_FIELDS = ("name", "num_warps", "shared", "launch")  # StoredKernel's, after identity and binary


def encode(kernel: StoredKernel) -> bytes:
    header = {name: getattr(kernel, name) for name in _HEADER_FIELDS}
    header.update(identity=kernel.identity.as_json(), binary_bytes=len(kernel.binary))
    body = MAGIC + _canonical(header).encode() + b"\n" + kernel.binary
    return body + TRAILER + hashlib.sha256(body).hexdigest().encode() + b"\n"


def decode(data: bytes) -> Optional[StoredKernel]:
    """The entry in `data`, or None when it is truncated, altered or not an entry at all."""
    body, sep, digest = data.rpartition(TRAILER)
    if not sep or not body.startswith(MAGIC) or digest != hashlib.sha256(body).hexdigest().encode() + b"\n":
        return None
    header_line, _, binary = body[len(MAGIC) :].partition(b"\n")
    try:
        header = json.loads(header_line)
        if header["binary_bytes"] != len(binary):
            return None
        fields = {name: header[name] for name in _HEADER_FIELDS}
        return StoredKernel(identity=_identity(header["identity"]), binary=binary, **fields)
    except (ValueError, KeyError, TypeError):
        return None


def normalized(identity: KernelIdentity) -> KernelIdentity:
    """`identity` as it reads back from an entry (JSON types), so the two compare equal."""
    return _identity(identity.as_json())


def _identity(fields: dict) -> KernelIdentity:
    return KernelIdentity(**{k: _tuples(v) for k, v in fields.items()})


def _tuples(value):
    """JSON lists back to the tuples an identity holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _canonical(value) -> str:
    """Stable JSON; values JSON lacks (a backend's enum option) by their text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
