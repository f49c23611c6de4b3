"""A compiled helper is never loaded from a file others can write: the build makes it 0755 less
the umask (0 included) and builds again over a copy that another user could have replaced."""

from __future__ import annotations

import os
import stat

from tritonwise.runtime import native


def _build(tmp_path):
    source = tmp_path / "trivial.c"
    source.write_text("int tritonwise_trivial = 1;\n")
    return native.build("trivial", [source], lambda: native.compiler("CC", "cc", "gcc"), [])


def test_a_build_is_not_writable_by_others_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    old = os.umask(0)
    try:
        path = _build(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o022 == 0


def test_a_build_others_can_write_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    path = _build(tmp_path)
    path.chmod(0o777)
    path.write_bytes(b"planted")
    again = _build(tmp_path)
    assert again == path and again.read_bytes() != b"planted"
    assert stat.S_IMODE(again.stat().st_mode) & 0o022 == 0
