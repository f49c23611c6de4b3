"""Where the repository and its tests lie, for tests that run scripts or read checked-in files."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
