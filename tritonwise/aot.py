"""Ahead-of-time generation: `python -m tritonwise generate MODULE[:NAME] --ranks 0-4`.

For each pointwise function found, writes the files common calls need (per shape and dtype: the
`instantiate(r)` kernel and the call-path kernels for contiguous, row-broadcast and transposed
operands), so a deployment starts warm; with `--compile --arch sm_90,sm_100`, their kernels are also
compiled for each target into the kernel store (no GPU needed).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Iterator, Sequence

import torch

from .function import PointwiseDynamicFunction
from .runtime import cache

_SCALARS = {float: 1.0, int: 1, bool: True, None: 1.0}
# What a function raises for a variant it does not take (an axis reduction's dim beyond a rank,
# a dtype its payload rejects): that variant is skipped, the others are generated.
_REJECTIONS = (TypeError, ValueError, RuntimeError, IndexError)


class GenerateError(ValueError):
    """`generate` cannot work on what it was given (a module that does not import, no function)."""


def find_functions(target: str) -> list:
    """(name, function) pairs from 'package.module' or 'package.module:NAME'."""
    module_name, _, name = target.partition(":")
    if not module_name:
        raise GenerateError(f"{target!r} names no module (give MODULE or MODULE:NAME)")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # the user's module raised while importing: say what, in one line
        if isinstance(e, ModuleNotFoundError) and e.name and module_name.startswith(e.name):
            raise GenerateError(f"no module named {e.name!r} (is it on PYTHONPATH?)") from None
        raise GenerateError(f"importing {module_name} failed: {type(e).__name__}: {e}") from None
    if name:
        fn = getattr(module, name, None)
        if not isinstance(fn, PointwiseDynamicFunction):
            raise GenerateError(f"{target} is not a pointwise_dynamic function")
        return [(name, fn)]
    found = [(n, v) for n, v in vars(module).items() if isinstance(v, PointwiseDynamicFunction)]
    if not found:
        raise GenerateError(f"{module_name} defines no pointwise_dynamic functions")
    return found


def parse_ranks(text: str) -> list:
    """Ranks from "2" or "0-4"."""
    lo, sep, hi = text.partition("-")
    if not (lo.isdigit() and (hi.isdigit() or not sep)) or int(hi or lo) < int(lo):
        raise ValueError(f"--ranks: expected a rank or a range such as 0-4, got {text!r}")
    return list(range(int(lo), int(hi or lo) + 1))


def parse_shapes(text: str) -> list:
    """Shapes from "1024x1024,8x4096,16" (an empty item is 0-d)."""
    shapes = []
    for item in text.split(","):
        extents = item.split("x") if item else []
        if not all(e.isdigit() for e in extents):
            raise ValueError(f"--shapes: expected shapes such as 4096x4096,8x1024, got {item!r} in {text!r}")
        shapes.append(tuple(int(e) for e in extents))
    return shapes


def parse_dtypes(text: str) -> list:
    """torch dtypes from "float32,float16"."""
    dtypes = [getattr(torch, name, None) for name in text.split(",")]
    bad = [name for name, d in zip(text.split(","), dtypes) if not isinstance(d, torch.dtype)]
    if bad:
        raise ValueError(f"--dtypes: {bad[0]!r} is not a torch dtype name (e.g. float32,float16,int32)")
    return dtypes


def _variants(fn, shape: tuple, dtype: torch.dtype) -> Iterator[tuple]:
    """(args, collapse, outputs) of the calls generated for this shape: all of the shape (outputs
    given and allocated), a row broadcast, a transposed first operand (never written)."""
    schema = fn.schema

    def args(make):
        return tuple(
            make(i) if schema.is_tensor(i) else _SCALARS.get(schema.input_type(i), 1.0)
            for i in range(schema.num_inputs())
        )

    dense = args(lambda i: torch.empty(shape, dtype=dtype))
    results = fn(*args(lambda i: torch.empty(shape, dtype=dtype, device="meta")))  # the outputs' shapes and dtypes
    results = results if isinstance(results, tuple) else (results,)
    yield dense, False, {f"out{k}": torch.empty(r.shape, dtype=r.dtype) for k, r in enumerate(results)}
    yield dense, True, {}
    if len(shape) >= 2:
        yield args(lambda i: torch.empty(shape[-1:] if i else shape, dtype=dtype)), True, {}
        swapped = shape[:-2] + shape[-1:] + shape[-2:-1]
        transposed = args(
            lambda i: torch.empty(swapped, dtype=dtype).transpose(-1, -2) if i == 0 else torch.empty(shape, dtype=dtype)
        )
        yield transposed, True, {}


def generate(target: str, shapes: list, dtypes: list, targets: Sequence = ()) -> int:
    """Write the files (and compiled kernels for `targets`) of every function in `target`; returns
    how many distinct files, reporting progress on stderr. GenerateError where nothing was generated
    or a write failed."""
    stream = sys.stderr  # read at call time: sys.stderr may be replaced
    jobs = [(name, fn, s, d) for name, fn in find_functions(target) for s in shapes for d in dtypes]
    written, skipped = set(), []
    for i, (name, fn, shape, dtype) in enumerate(jobs, 1):
        what = f"{name} {'x'.join(map(str, shape)) or 'scalar'} {str(dtype).removeprefix('torch.')}"
        try:
            variants = list(_variants(fn, shape, dtype))
        except _REJECTIONS as e:  # a function that does not take this shape or dtype at all
            skipped.append(f"skipped {what}: {e}")
            variants = []
        for args, collapse, outs in variants:
            try:
                written.add(fn.generate(*args, collapse=collapse, targets=targets, **outs))
            except _REJECTIONS as e:  # ... or not this layout of it
                skipped.append(f"skipped {what} ({'given outputs' if outs else 'a layout'}): {e}")
        bar = "#" * (30 * i // len(jobs))
        print(f"\r[{bar:<30}] {i}/{len(jobs)} {what}   ", end="", file=stream, flush=True)
    print(file=stream)
    for line in skipped:
        print(f"  {line}", file=stream)
    if not written:
        raise GenerateError(f"nothing generated: every shape and dtype was skipped ({skipped[0]})")
    directory = cache.configured_dir()  # every file must land here (a private fallback is gone once we exit)
    elsewhere = sorted(str(p) for p in written if p is not None and Path(p).parent != directory)
    if elsewhere:
        raise GenerateError(
            f"{len(elsewhere)} of {len(written)} files could not be written into {directory} "
            f"(the warning above says why), e.g. {Path(elsewhere[0]).name}"
        )
    return len(written)
