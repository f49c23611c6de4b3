"""Forms of the column split of a reduction over several dims, each in a copy of the same file.

    python -m benchmarks.column_split [--rounds 3]
    python -m benchmarks.column_split --device cpu   # every form checked on small inputs, nothing timed

Where the reduced dims of a row scheme's task do not collapse into one, each column index of a
block is split into one index per reduced dim: an unsigned quotient and the remainder from it
(schemes/nd.py's `decompose`), row_looped's innermost one by its extent compiled in where that
is 4, 8 or 16 (INNER_EXTENT), else by the run-time extent. These cases, sums over dims
(0, 2), run their generated file as it is and copies of it with the split written in another
form (FORMS), alternated in rounds under the timers of axis_reductions.py, each checked against
torch first, its output poisoned before. "unsigned at run time" is the generated form with no
extent compiled in; "extent compiled in" is what a compiler that specializes on the shape writes,
torch.compile's kernel among them, for any extent. docs/decisions/column-split.md and
inner-extent.md read the figures.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.axis_reductions import sum_0_2
from benchmarks.file_copies import check, timed_rows, variants
from benchmarks.harness import header, positive_int, report, smoke_arguments, smoke_run

# The split as decompose() writes it for two reduced dims (an unsigned quotient, the remainder by
# a multiply and a subtract; row_looped's by INNER_EXTENT where compiled in), in row_looped's
# loop and its last block, or once in row_persistent.
SPLIT = re.compile(
    r"(?P<indent> +)j(?P<quot>\d+) = (?:\(cols\.to\(tl\.uint\d+\) // INNER_EXTENT\)\.to\(tl\.int\d+\) if INNER_EXTENT else )?"
    r"\(cols\.to\(tl\.uint(?P<bits>\d+)\) // size(?P<dim>\d+)\.to\(tl\.uint\d+\)\)\.to\(tl\.int\d+\)\n"
    r" +j(?P<rest>\d+) = cols - j(?P=quot) \* (?:\(INNER_EXTENT if INNER_EXTENT else size(?P=dim)\)|size(?P=dim))\n"
)
FORMS = {
    "unsigned at run time": "{indent}j{quot} = (cols.to(tl.uint{bits}) // size{dim}.to(tl.uint{bits})).to(tl.int{bits})\n"
                            "{indent}j{rest} = cols - j{quot} * size{dim}\n",
    "signed division and remainder": "{indent}j{rest} = cols % size{dim}\n{indent}j{quot} = cols // size{dim}\n",
    "extent compiled in": "{indent}j{rest} = cols % {extent}\n{indent}j{quot} = cols // {extent}\n",
}
# (0, 2) sums: row_looped's six shapes of docs/decisions/row-looped-blocks.md and a narrower run,
# two of row_persistent (reduced extents of one block), then row_looped's narrow innermost extents
# (docs/decisions/inner-extent.md); on CPU, three of row_looped (one
# whose innermost extent is compiled in) and one of row_persistent.
SHAPES = {
    False: ((64, 4096, 64), (128, 2048, 16), (32, 4096, 128), (16, 2048, 256), (8, 4096, 512), (4, 4096, 1024),
            (64, 4096, 48), (16, 16384, 64), (32, 16384, 16), (4096, 2048, 2), (2048, 2048, 4), (1024, 2048, 8),
            (512, 2048, 16), (256, 2048, 32)),
    True: ((3, 300, 704), (96, 300, 16), (2, 300, 1200), (3, 50, 16)),
}


def _with_form(form: str, extent: int):
    """The edit writing both splits of the file in `form` (`extent`: the innermost reduced extent)."""

    def edit(text: str) -> str:
        assert SPLIT.search(text), "the column split as decompose() writes it"
        return SPLIT.sub(lambda m: FORMS[form].format(extent=extent, **m.groupdict()), text)

    return edit


def case_rows(shape: tuple, device: str, directory: Path, rounds: int, smoke: bool) -> list:
    x = torch.randn(shape, device=device)
    name = f"sum(x, (0, 2)) fp32 {'x'.join(map(str, shape))}"
    edits = {form: _with_form(form, shape[-1]) for form in FORMS}
    moved, result, calls = variants(sum_0_2, (x,), {}, edits, directory)
    check(name, calls, result, x, x.sum((0, 2)), 1e-4, 1e-3)
    return [] if smoke else timed_rows(name, calls, moved, x, rounds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--rounds", type=positive_int, default=3)
    args = parser.parse_args(argv)
    smoke = smoke_run(args, "column_split")
    if smoke is None:
        return 2
    lines = ["| case | timer | GB/s of each form |", "|---|---|---|"]
    with tempfile.TemporaryDirectory() as directory:
        for shape in SHAPES[smoke]:
            lines += case_rows(shape, args.device, Path(directory), args.rounds, smoke)
    if smoke:
        print(f"every form of {len(SHAPES[smoke])} cases checked: they give torch's answer")
        return 0
    report(header() + f"\nMedians of {args.rounds} alternated rounds\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
