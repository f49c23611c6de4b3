"""Payload variants that compute only some of a payload's outputs.

A kernel calls the payload once per distinct computation dtype of its outputs, and each call must
compile on its own dtypes (`tl.sin` of an int does not), so each runs a variant keeping only the
statements its outputs need (from autodiff/linearize.py). A payload that is not straight-line code
has no variants: every call runs it whole.
"""

from __future__ import annotations

import ast
import functools
from typing import Optional

from ..errors import NotDifferentiable
from .linearize import Program, jit_source, linearize, names_in, step_lines


@functools.lru_cache(maxsize=256)
def variant_source(source: str, name: str, outputs: tuple) -> Optional[str]:
    """The source of `@triton.jit def name(...)` computing only the payload's values at `outputs`;
    None where the payload is not straight-line code or returns fewer values."""
    try:
        program = linearize(source, f"payload {name}")
    except (NotDifferentiable, SyntaxError):
        return None
    if not outputs or max(outputs) >= len(program.results):
        return None
    kept = [program.results[k] for k in outputs]
    lines = step_lines(_needed_steps(program, kept)) + [f"return {', '.join(ast.unparse(v) for v in kept)}"]
    return jit_source(name, program.params, lines)


def _needed_steps(program: Program, results: list) -> list:
    """The steps the `results` depend on, in program order (the program is in SSA form)."""
    needed = set().union(*(names_in(v) for v in results))
    kept = []
    for step in reversed(program.steps):
        if step.target in needed:
            kept.append(step)
            needed |= names_in(step.value)
    return kept[::-1]
