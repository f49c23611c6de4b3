"""Explanation: what `fn.explain(...)` returns, without launching anything."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from ..analysis.plan import grid_strides
from ..runtime.dispatch import LaunchPlan


@dataclass(frozen=True)
class Explanation:
    """What a call would run: the collapsed task, its tiling and the generated file."""

    shape: tuple
    task_shape: tuple
    strides: tuple
    scheme: str
    index_bits: int
    block: tuple
    grid: tuple
    num_warps: int
    aligned: bool
    path: Optional[str]
    kernel: str
    block_choices: tuple = ()  # every block the file may launch with; `block` is this call's
    num_tiles: int = 0
    compiled_blocks: int = 0  # a row's whole column blocks, where its kernel compiles the count in
    rest_block: int = 0  # the width of the block a row's masked last columns are read in (row_looped)
    inner_extent: int = 0  # the innermost reduced extent, where its kernel compiles it in
    split_parts: int = 1  # a split reduction along dims: slices of the reduced extent, combined after
    split_tail: int = 0  # the columns a split's last slice reads past the others' (none where they divide)
    torch_compile: str = ""  # what torch.compile traces for the function (tracing/expression.status)
    rung: str = ""  # what would serve the call now: "plan cache", "shape program", "planner" or "routed: ..."

    @classmethod
    def of(cls, plan: LaunchPlan, torch_compile: str = "", rung: str = "") -> "Explanation":
        task, spec = plan.task, plan.spec
        row_values = task.row_constexprs
        return cls(
            shape=task.shape,
            task_shape=task.task_shape,
            strides=task.strides,
            scheme=task.tiling.scheme,
            index_bits=task.index_bits,
            block=task.tiling.block,
            grid=task.grid,
            num_warps=task.tiling.num_warps,
            aligned=task.aligned,
            path=None if plan.path is None else str(plan.path),
            kernel=spec.kernel_name,
            block_choices=task.tiling.choices,
            num_tiles=task.num_tiles,
            compiled_blocks=row_values.get("WHOLE_BLOCKS", 0),
            rest_block=row_values.get("REST_BLOCK", 0),
            inner_extent=row_values.get("INNER_EXTENT", 0),
            split_parts=task.split.parts if task.split is not None else 1,
            split_tail=task.split.tail_cols if task.split is not None else 0,
            torch_compile=torch_compile,
            rung=rung,
        )

    @property
    def split_note(self) -> str:
        """"N parts", and what the last reads past the others; "" where the call does not split."""
        if self.split_parts == 1:
            return ""
        plural = "s" if self.split_tail != 1 else ""
        longer = f", the last {self.split_tail} column{plural} longer" if self.split_tail else ""
        return f"{self.split_parts} parts{longer}"

    def __str__(self) -> str:
        split = f"; split: the reduced extent in {self.split_note}, partial values combined by a second reduction"
        warps = f"{self.num_warps} warp{'s' if self.num_warps != 1 else ''}"
        rows = [
            ("kernel", self.kernel),
            ("shape", f"{self.shape} -> task {self.task_shape} (after collapsing)"),
            ("strides", ", ".join(str(s) for s in self.strides) + "  (inputs, then outputs)"),
            ("scheme", f"{self.scheme}, aligned {self.aligned}" + (split if self.split_parts != 1 else "")),
            ("block", f"{self.block} on {warps} ({self._block_rank()})"),
            ("index", f"int{self.index_bits}"),
            ("grid", self._grid_line()),
            ("file", self.path or "(none: nothing to launch)"),
        ]
        if self.rung:
            served = f"by the {self.rung}{_RUNGS[self.rung]}" if self.rung in _RUNGS else self.rung + _ROUTED
            rows.append(("served", served))
        if self.torch_compile:
            rows.append(("compile", self.torch_compile))
        return "\n".join(f"{k:>8}: {v}" for k, v in rows)

    def _grid_line(self) -> str:
        line = f"{self.grid} programs ({math.prod(self.grid)} total)"
        return line + (f", each striding over the {self.num_tiles} tiles" if self.grid_strides else "")

    @property
    def grid_strides(self) -> bool:
        """Whether max_grid_size capped the grid: each program strides over several tiles."""
        return grid_strides(self.grid, self.num_tiles)

    def _block_rank(self) -> str:
        """Which of the file's compiled kernels this shape takes."""
        if len(self.block_choices) <= 1:
            return "the file's only block"
        listed = ", ".join(str(b) for b in self.block_choices)
        position = self.block_choices.index(self.block) + 1
        kernels = "one compiled kernel each, two where a grid is capped"
        if self.compiled_blocks or self.rest_block:
            kernels += ", and one per row length's constexprs"
        if self.compiled_blocks:
            kernels += f"; this row's {self.compiled_blocks} whole blocks compiled in"
        if self.rest_block and self.rest_block < self.block[-1]:
            kernels += f"; its last columns in a block of {self.rest_block}"
        if self.inner_extent:
            kernels += f"; its innermost reduced extent ({self.inner_extent}) compiled in"
        return f"{position} of this file's {len(self.block_choices)} blocks: {listed}; {kernels}"


_ROUTED = " (a feature: its plain calls take the ladder's rungs)"
_RUNGS = {
    "plan cache": " (a plan of this call's signature)",
    "shape program": " (a program of its class evaluated in C: no plan)",
    "planner": " (a new plan: frontend, analysis, codegen and binding, then cached)",
}
