"""Ahead-of-time generation: `python -m tritonwise generate MODULE[:NAME] --ranks 0-4 [--compile --arch sm_90,sm_100]`.

For each pointwise function found, writes into the cache the files that common calls need,
so a deployment starts warm: for every shape (`--shapes`, else 4x...x4 for each of
`--ranks`), the `instantiate(r)` kernel over contiguous operands (no collapsing) and the
call-path kernels for contiguous operands (flat), a row broadcast (nd) and a transposed first
operand (tile2d), for each requested dtype. With
targets (`--compile --arch`), each file's kernel is also compiled for every target into the
kernel store, specialized as a launch on freshly allocated tensors is (16-byte aligned), so a
deployment on those GPUs loads it without compiling. Compiling needs no GPU.
"""

from __future__ import annotations

import importlib
import sys
from typing import Iterator, Sequence

import torch

from .function import PointwiseDynamicFunction

_SCALARS = {float: 1.0, int: 1, bool: True, None: 1.0}


def find_functions(target: str) -> list:
    """(name, function) pairs from 'package.module' or 'package.module:NAME'."""
    module_name, _, name = target.partition(":")
    module = importlib.import_module(module_name)
    if name:
        fn = getattr(module, name, None)
        if not isinstance(fn, PointwiseDynamicFunction):
            raise SystemExit(f"{target} is not a pointwise_dynamic function")
        return [(name, fn)]
    return [(n, v) for n, v in vars(module).items() if isinstance(v, PointwiseDynamicFunction)]


def parse_ranks(text: str) -> list:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def parse_shapes(text: str) -> list:
    """Shapes from "1024x1024,8x4096,16" (each operand of a variant takes the shape)."""
    return [tuple(int(n) for n in item.split("x")) if item else () for item in text.split(",")]


def _variants(fn, shape: tuple, dtype: torch.dtype) -> Iterator[tuple]:
    """(args, collapse, outputs) for the calls generated for this shape: every operand of the
    shape, as given outputs (instantiate) and allocated; a row broadcast; a transposed first
    operand. Blocks follow the extents' power-of-two bucket, so shapes like the deployment's
    give its kernels."""
    schema = fn.schema

    def args(make):
        return tuple(
            make(i) if schema.is_tensor(i) else _SCALARS.get(schema.input_type(i), 1.0)
            for i in range(schema.num_inputs())
        )

    dense = args(lambda i: torch.zeros(shape, dtype=dtype))
    outs = {f"out{k}": torch.zeros(shape, dtype=dtype) for k in range(schema.num_outputs())}
    yield dense, False, outs
    yield dense, True, {}
    if len(shape) >= 2:
        yield args(lambda i: torch.zeros(shape[-1:] if i else shape, dtype=dtype)), True, {}
        swapped = shape[:-2] + shape[-1:] + shape[-2:-1]
        transposed = args(
            lambda i: torch.zeros(swapped, dtype=dtype).transpose(-1, -2) if i == 0 else torch.zeros(shape, dtype=dtype)
        )
        yield transposed, True, {}


def generate(target: str, shapes: list, dtypes: list, stream=sys.stderr, targets: Sequence = ()) -> int:
    """Write the files (and, for `targets`, the compiled kernels) for every function in
    `target`, shape and dtype; returns the number of distinct files. Progress goes to `stream`."""
    jobs = [(name, fn, s, d) for name, fn in find_functions(target) for s in shapes for d in dtypes]
    written = set()
    for i, (name, fn, shape, dtype) in enumerate(jobs, 1):
        for args, collapse, outs in _variants(fn, shape, dtype):
            try:
                written.add(fn.generate(*args, collapse=collapse, targets=targets, **outs))
            except (TypeError, ValueError, RuntimeError) as e:  # a function that rejects this variant
                print(f"\n  skipped {name} {shape} {dtype}: {e}", file=stream)
        what = f"{name} {'x'.join(map(str, shape)) or 'scalar'} {str(dtype).removeprefix('torch.')}"
        _progress(stream, i, len(jobs), what)
    print(file=stream)
    return len(written)


def _progress(stream, done: int, total: int, what: str) -> None:
    bar = "#" * (30 * done // total)
    print(f"\r[{bar:<30}] {done}/{total} {what}   ", end="", file=stream, flush=True)
