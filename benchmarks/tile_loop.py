"""Forms of the loop over tiles, each in a copy of the same generated file, on the same grid.

    python -m benchmarks.tile_loop [--rounds 3]

The evidence of `templates/tile_loop.py.j2` and Scheme.always_loops_tiles
(docs/decisions/one-tile-a-program.md). Each case runs its generated file as it is and copies of
it whose loop header is replaced by another form (FORMS), launched with the same arguments and
grid, alternated in rounds under the timers of axis_reductions.py. Every variant is checked
against torch first, its output poisoned before. Cases marked capped have more tiles than
programs (CodeGenConfig.max_grid_size), so each program strides over several.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks import payloads
from benchmarks.axis_reductions import _identity, _reducer, _square
from benchmarks.file_copies import check, timed_rows, variants
from benchmarks.harness import header, positive_int, report

# The loop header as the templates render it: tile_loop.py.j2 (its comment, `for`, `tile =`), or
# the plain loop of a scheme that always loops.
HEADER = re.compile(
    r"    # One tile a program.*?\n        tile = [^\n]*\n"  # tile_loop.py.j2's, with GRID_STRIDE
    r"|    for tile in range\(pid, num_tiles, [^\n]*\n",  # the plain loop
    re.S,
)
FORMS = {
    "plain loop": "    for tile in range(pid, num_tiles, tl.num_programs(0)):\n",
    "one tile": "    for tile_step in range(1):\n        tile = pid\n",
    "offset loop": "    for tile_step in range(\n"
    "        0, num_tiles - pid if GRID_STRIDE else 1, tl.num_programs(0) if GRID_STRIDE else 1\n"
    "    ):\n"
    "        tile = pid + tile_step\n",
}
UNCAPPED, CAPPED = ("plain loop",), ("plain loop", "offset loop")


def _sum(dims):
    return lambda x: x.float().sum(dims)


def cases() -> list:
    """(name, function, inputs, given outputs, torch's answer as a function of the inputs, forms)."""
    randn = lambda *shape, dtype=torch.float32: torch.randn(*shape, device="cuda", dtype=dtype)  # noqa: E731
    add, copy, bf16 = payloads.add, payloads.copy, torch.bfloat16
    sum_last, sum_sq = _reducer(_identity, ("sum", -1)), _reducer(_square, ("sum", -1))
    max_0, sum_0_2 = _reducer(_identity, ("max", 0)), _reducer(_identity, ("sum", (0, 2)))
    clone = lambda x: x.clone()  # noqa: E731
    return [
        ("tile2d: transpose copy 8191x8193", copy, (randn(8193, 8191).t(),), {"out0": randn(8191, 8193)}, clone,
         ("one tile",)),
        ("tile2d: transpose copy 8192^2", copy, (randn(8192, 8192).t(),), {"out0": randn(8192, 8192)}, clone,
         ("one tile",)),
        ("nd: add + row 8191x8193", add, (randn(8191, 8193), randn(8193)), {}, torch.add, UNCAPPED),
        ("row_persistent: sum(x, -1) bf16 16384x128", sum_last, (randn(16384, 128, dtype=bf16),), {}, _sum(-1),
         UNCAPPED),
        ("row_persistent: sum(x, -1) fp32 8191x1000", sum_last, (randn(8191, 1000),), {}, _sum(-1), UNCAPPED),
        ("row_looped: sum(x, -1) bf16 128x16384", sum_last, (randn(128, 16384, dtype=bf16),), {}, _sum(-1),
         UNCAPPED),
        ("row_looped: sum(x*x, -1) fp32 8192^2", sum_sq, (randn(8192, 8192),), {}, lambda x: (x * x).sum(-1),
         UNCAPPED),
        ("row_looped: sum(x, (0, 2)) fp32 64x4096x64", sum_0_2, (randn(64, 4096, 64),), {}, _sum((0, 2)), UNCAPPED),
        ("column_looped: amax(x, 0) fp32 8192^2", max_0, (randn(8192, 8192),), {}, lambda x: x.amax(0), UNCAPPED),
        ("capped: nd: add + row 16384^2, 65535 programs", add, (randn(16384, 16384), randn(16384)), {}, torch.add,
         CAPPED),
        ("capped: sum(x, -1) bf16 16384x128, 256 programs", _reducer(_identity, ("sum", -1), max_grid_size=(256,)),
         (randn(16384, 128, dtype=bf16),), {}, _sum(-1), CAPPED),
        ("capped: sum(x, -1) bf16 128x16384, 32 programs", _reducer(_identity, ("sum", -1), max_grid_size=(32,)),
         (randn(128, 16384, dtype=bf16),), {}, _sum(-1), CAPPED),
    ]


def _with_form(form: str):
    """The edit replacing the file's loop header by `form`."""

    def edit(text: str) -> str:
        assert len(HEADER.findall(text)) == 1, "one loop header in the generated file"
        return HEADER.sub(lambda _: FORMS[form], text)

    return edit


def case_rows(case, directory: Path, rounds: int) -> list:
    name, fn, args, outs, expected, forms = case
    edits = {form: _with_form(form) for form in forms}
    moved, result, calls = variants(fn, args, outs, edits, directory)
    check(name, calls, result, args[0], expected(*args), 2e-2, 2e-1)
    return timed_rows(name, calls, moved, args[0], rounds, back_to_back=len(args) == 1)  # it rotates the first input


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive_int, default=3)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("tile_loop needs a CUDA GPU", file=sys.stderr)
        return 2
    lines = ["| case | timer | GB/s of each variant |", "|---|---|---|"]
    with tempfile.TemporaryDirectory() as directory:
        for case in cases():
            lines += case_rows(case, Path(directory), args.rounds)
    report(header() + f"\nMedians of {args.rounds} alternated rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
