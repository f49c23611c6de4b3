"""`python GENERATED_FILE`: run a generated kernel alone on random operands of its `LAYOUT` class
(on CUDA, else in the interpreter), once to check it, then print the median of further launches.
"""

from __future__ import annotations

import statistics
import time
import types
from pathlib import Path

import torch

from ..analysis.plan import grid_strides, launch_grid
from ..codegen.spec import SPLIT_TAIL_PARAMS, TRITON_ITEMSIZES
from ..config import CodeGenConfig
from ..schemes import get_scheme
from .dispatch import INTERPRETER_LOCK
from .interpreter.interpret import interpreting, runs_interpreted
from .loader import load

GPU_ELEMENTS, CPU_ELEMENTS = 1 << 24, 1 << 12
SCALARS = {"float": 0.5, "int": 3, "bool": True}


def main(namespace: dict) -> None:
    layout = namespace["LAYOUT"]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    interpreted = runs_interpreted(device)
    payload = types.SimpleNamespace(jit=namespace[layout["payload"]])
    path = Path(namespace["__file__"]).resolve()
    backend = "interpreter" if interpreted else "gpu"
    module = load(path, layout["kernel"], layout["payload"], payload, backend, text=path.read_text())
    run = launcher(module.launch, layout, device)
    if interpreted:
        with INTERPRETER_LOCK, interpreting():
            seconds = statistics.median(_seconds(run) for _ in range(3))
    else:
        run()
        torch.cuda.synchronize()
        import triton.testing

        seconds = triton.testing.do_bench(run) / 1e3
    mode = "Triton interpreter" if interpreted else torch.cuda.get_device_name(device)
    print(f"{layout['kernel']}: ran on {run.task_shape} ({mode}), {seconds * 1e3:.4f} ms")


def launcher(launch, layout: dict, device: torch.device):
    """A no-argument function launching the kernel once on fresh random operands."""
    scheme = get_scheme(layout["scheme"])
    rank = max((len(s) for _, _, s in layout["inputs"] if s is not None), default=0)
    rank = max([rank] + [len(o[2]) for o in layout["outputs"]])
    budget = CPU_ELEMENTS if device.type == "cpu" else GPU_ELEMENTS
    m_dim, config = layout["m_dim"], CodeGenConfig()
    task_shape = _task_shape(rank, budget, layout["aligned"] and bool(scheme.aligned_dims(rank, m_dim)))
    blocks = tuple(layout["blocks"])
    block = scheme.pick_block(task_shape, m_dim, blocks, _itemsize(layout)) if rank else blocks[0]
    num_tiles = scheme.num_tiles(task_shape, m_dim, block)
    grid = launch_grid(num_tiles, config)
    row_values = scheme.row_constexprs(task_shape, m_dim, block, layout.get("peel") is not None)
    constexprs = scheme.constexpr_values(block, grid_strides(grid, num_tiles), row_values)
    strided = [(n, d, s) for n, d, s in layout["inputs"] if s is not None]
    strided += [(n, d, s) for n, d, s, acc in layout["outputs"] if acc is None or s]  # s: along dims
    operands, strides = {}, []
    for name, dtype, classes in strided:
        operands[name], st = _random_strided(task_shape, classes, dtype, layout["aligned"], device)
        strides.append(st)
    for name, dtype, classes, acc in layout["outputs"]:
        if acc is not None and not classes:
            shape = grid if layout["deterministic"] else ()
            operands[name] = torch.zeros(shape, dtype=_torch_dtype(acc), device=device)
    classes = [(n, s) for n, _, s in strided]
    index = scheme.index_values(task_shape, m_dim, block, classes, strides)
    index += (0,) * len(SPLIT_TAIL_PARAMS) if layout.get("split_tail") else ()  # no last part reading further
    args = [operands.get(n, SCALARS.get(d)) for n, d, _ in layout["inputs"]]
    args += [operands[o[0]] for o in layout["outputs"]]

    def run():
        launch(grid, *args, *index, *constexprs, scheme.num_warps(block, config, task_shape, m_dim))

    run.task_shape = task_shape
    return run


def _task_shape(rank: int, budget: int, aligned: bool) -> tuple:
    """Equal extents filling about `budget` elements: multiples of 16 where an aligned class's masks
    run along them, odd otherwise (a flat file's last tile is then partial)."""
    if not rank:
        return ()
    side = max(3, round(budget ** (1 / rank)))
    side = max(16, side // 16 * 16) if aligned else side | 1
    return (side,) * rank


def _random_strided(shape: tuple, classes: str, dtype: str, aligned: bool, device) -> tuple:
    """A random tensor over `shape` whose strides have `classes` ('0', '1', 's' per dim): unit
    dims innermost in memory, run-time strided dims outside them, a gap when no dim is unit."""
    strides = [0] * len(shape)
    step = 1 if "1" in classes else (16 if aligned else 2)
    units = [d for d, c in enumerate(classes) if c == "1"]
    for d in units + [d for d in reversed(range(len(shape))) if classes[d] == "s"]:
        if classes[d] == "1":
            strides[d], step = 1, max(step, shape[d])
        else:
            strides[d], step = step, step * shape[d]
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    data = _random(size, _torch_dtype(dtype), device)
    return data.as_strided(shape, strides), tuple(strides)


def _random(size: int, dtype: torch.dtype, device) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(size, device=device) < 0.5
    if dtype.is_floating_point:
        return torch.randn(size, device=device).to(dtype)
    return torch.randint(0, 100, (size,), device=device).to(dtype)


def _itemsize(layout: dict) -> int:
    """The widest element the file's tensors hold (scalars aside), outputs as stored: where a result
    is stored wider than its dtype (a bf16 sum into fp32), wider than the planner's count."""
    dtypes = [d for _, d, s in layout["inputs"] if s is not None] + [o[1] for o in layout["outputs"]]
    return max(TRITON_ITEMSIZES[d] for d in dtypes)


def _torch_dtype(name: str) -> torch.dtype:
    from ..codegen.spec import TRITON_DTYPES

    return next(t for t, n in TRITON_DTYPES.items() if n == name)


def _seconds(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start
