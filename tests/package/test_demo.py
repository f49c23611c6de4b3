"""`python -m tritonwise demo` checks each case against torch; its transpose writes a given
contiguous output (a real transposition: the tile2d scheme), not a copy keeping x.t()'s strides."""

from tritonwise.demo import run_demo


def test_demo_matches_torch_and_transposes(capsys):
    assert run_demo() == 0
    printed = capsys.readouterr().out
    assert "all match torch" in printed
    transpose = next(line for line in printed.splitlines() if "(transpose)" in line)
    assert transpose.startswith("ok ") and transpose.endswith("scheme tile2d"), transpose
