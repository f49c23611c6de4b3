"""The package declares what it imports: a bare venv with README's install must run it."""

import ast
import re
import sys

from tests.support.paths import ROOT

# Distribution names where they differ from the import name.
DISTRIBUTION = {"jinja2": "jinja2"}


def _imported_top_level_modules() -> set:
    names = set()
    for path in (ROOT / "tritonwise").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def _declared_dependencies() -> set:
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    return {re.match(r"[A-Za-z0-9_.-]+", s).group(0).lower() for s in re.findall(r'"([^"]+)"', block)}


def test_every_third_party_import_is_a_declared_dependency():
    third_party = _imported_top_level_modules() - set(sys.stdlib_module_names) - {"tritonwise", "__future__"}
    declared = _declared_dependencies()
    missing = {m for m in third_party if DISTRIBUTION.get(m, m).lower() not in declared}
    assert not missing, f"imported at run time but not in pyproject's dependencies: {sorted(missing)}"


def test_numpy_is_declared_for_tritons_interpreter():
    # Triton's interpreter (our CPU path) imports numpy; torch's CPU wheel no longer brings it.
    assert "numpy" in _declared_dependencies()


def test_the_c_launchers_sources_are_packaged_and_hashed():
    """launch.c, aten.cpp and every file launch.c #includes ship in the wheel; the included
    files are part of the build's hash (a change to one must rebuild the shared object)."""
    from fnmatch import fnmatch

    from tritonwise.runtime import native

    runtime = ROOT / "tritonwise" / "runtime"
    included = re.findall(r'^#include "([^"]+)"', (runtime / "launch.c").read_text(), re.M)
    patterns = re.findall(
        r'"([^"]+)"', re.search(r"^tritonwise = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    )
    assert included, "launch.c includes none of its own files any more: update this test"
    for name in included + ["launch.c", "aten.cpp"]:
        assert any(fnmatch(f"runtime/{name}", p) for p in patterns), f"{name} is not package data"
    assert {runtime / name for name in included} == set(native.INCLUDED)


def _ci_pairing(name: str) -> dict:
    """{'torch': version, 'triton': version} of .ci/run's OLDEST or NEWEST array."""
    text = (ROOT / ".ci" / "run").read_text()
    pins = re.search(rf"^{name}=\((.*?)\)", text, re.M).group(1).split()
    return dict(pin.split("==") for pin in pins)


def test_the_declared_torch_and_triton_ranges_are_exactly_what_ci_tests():
    text = (ROOT / "pyproject.toml").read_text()
    oldest, newest = _ci_pairing("OLDEST"), _ci_pairing("NEWEST")
    for package in ("torch", "triton"):
        declared = re.search(rf'^\s*"{package}([<>=!~][^"]*)"', text, re.M).group(1)
        assert declared == f">={oldest[package]},<={newest[package]}", f"{package}{declared} in pyproject"
