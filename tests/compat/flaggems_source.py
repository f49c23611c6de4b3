"""Finding FlagGems' op files and importing them as `flag_gems.ops.<name>` over the shim.

FlagGems' files are read where they are (or extracted to a temporary directory from a wheel or a
bare git repository) and never copied into this repository.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import io
import subprocess
import sys
import tarfile
import tempfile
import types
import zipfile
from pathlib import Path

OPS_SUBDIRS = ("src/flag_gems/ops", "flag_gems/ops", "ops", ".")


def locate_ops(location: str) -> Path:
    """The directory of FlagGems' op files for a checkout, a bare git directory, an installed
    `flag_gems` package (or its parent) or a wheel."""
    path = Path(location).expanduser()
    if path.is_file() and path.suffix == ".whl":
        return _extract_wheel(path)
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return _extract_git(path)
    for sub in OPS_SUBDIRS:
        candidate = path / sub
        if (candidate / "gelu.py").is_file():
            return candidate
    raise FileNotFoundError(f"--flaggems: no FlagGems op files under {path} (looked in {', '.join(OPS_SUBDIRS)})")


def _extract_wheel(wheel: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="flaggems_ops_"))
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("flag_gems/ops/") and name.endswith(".py") and name.count("/") == 2:
                archive.extract(name, target)
    return target / "flag_gems" / "ops"


def _extract_git(git_dir: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="flaggems_ops_"))
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "HEAD", "src/flag_gems/ops"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "src" / "flag_gems" / "ops"


class _Placeholder(types.ModuleType):
    """A FlagGems op module outside the harness (e.g. `flag_gems.ops.all`, which isclose imports
    for allclose): importable, and an error naming it if anything of it is called."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def unavailable(*args, **kwargs):
            raise NotImplementedError(f"{self.__name__}.{name} is not part of the FlagGems ops harness")

        return unavailable


class _OpsFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `flag_gems.ops` (an empty package over `ops_dir`) and `flag_gems.ops.<name>`:
    the FlagGems file itself for the chosen names, a placeholder for the others."""

    def __init__(self, ops_dir: Path, chosen):
        self.ops_dir, self.chosen = ops_dir, set(chosen)

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "flag_gems.ops":
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.submodule_search_locations = [str(self.ops_dir)]
            return spec
        if not fullname.startswith("flag_gems.ops."):
            return None
        name = fullname.rsplit(".", 1)[1]
        if name in self.chosen:
            return importlib.util.spec_from_file_location(fullname, self.ops_dir / f"{name}.py")
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None if spec.name == "flag_gems.ops" else _Placeholder(spec.name)

    def exec_module(self, module):
        pass


def install_ops(ops_dir: Path, chosen) -> None:
    """Make `import flag_gems.ops.<name>` load FlagGems' file from `ops_dir` (once per process)."""
    if not any(isinstance(finder, _OpsFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OpsFinder(ops_dir, chosen))
