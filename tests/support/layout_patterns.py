"""Layouts of call operands for shape-program tests: the payloads and their torch oracles, hypothesis
patterns of operand layouts (rank, size-1 dims, dim order, slicing steps, expanded dims), and the
tensors built from a pattern. Shared by runtime/test_shape_programs.py
and gpu/test_gpu_hit_path.py."""

import torch
import triton
from hypothesis import strategies as st

from tritonwise import pointwise_dynamic


@triton.jit
def _add_alpha(x, y, alpha):
    return x + y * alpha


@triton.jit
def _fma(x, y, z):
    return x * y + z, x - z


def add_alpha():
    return pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT")])(_add_alpha)


def fma():
    return pointwise_dynamic(promotion_methods=[((0, 1, 2), "DEFAULT"), ((0, 2), "DEFAULT")])(_fma)


# What torch computes for each payload above (the oracle of every launch a program makes).
add_alpha.torch = lambda x, y, alpha: (torch.add(x, y, alpha=alpha),)
fma.torch = lambda x, y, z: torch.broadcast_tensors(x * y + z, x - z, y)[:2]  # every output of the broadcast shape


def _operand(rank: int, rare: int = 1):
    """One input's layout: its rank, size-1 dims, memory order of its dims, a step per dim (a
    sliced view) and dims expanded to stride 0; each but the order `rare` times rarer."""
    return st.tuples(
        st.just(rank),
        st.lists(st.sampled_from([False] * (2 * rare - 1) + [True]), min_size=rank, max_size=rank),
        st.permutations(range(rank)),
        st.lists(st.sampled_from([1] * (2 * rare) + [2]), min_size=rank, max_size=rank),
        st.lists(st.sampled_from([False] * (3 * rare) + [True]), min_size=rank, max_size=rank),
    )


# A pattern: the broadcast rank, then the layouts of the inputs: any ranks and size-1 dims, or
# full-rank operands with few size-1 dims, whose dim orders differ often (tile2d tasks).
any_patterns = st.integers(1, 4).flatmap(
    lambda rank: st.lists(st.integers(0, rank).flatmap(_operand), min_size=2, max_size=3).map(
        lambda inputs: (rank, inputs)
    )
)
full_rank_patterns = st.integers(2, 4).flatmap(
    lambda rank: st.lists(_operand(rank, rare=4), min_size=2, max_size=3).map(lambda inputs: (rank, inputs))
)


def contiguous(rank: int, ones) -> tuple:
    """The layout of a C-contiguous input with size-1 dims at `ones` (a bias, a scale)."""
    return (rank, list(ones), list(range(rank)), [1] * rank, [False] * rank)


def _contiguous_operand(rank: int):
    return st.lists(st.booleans(), min_size=rank, max_size=rank).map(lambda ones: contiguous(rank, ones))


# The everyday broadcast: C-contiguous inputs of any ranks and size-1 dims.
broadcast_patterns = st.integers(1, 4).flatmap(
    lambda rank: st.lists(st.integers(0, rank).flatmap(_contiguous_operand), min_size=1, max_size=3).map(
        lambda inputs: (rank, inputs)
    )
)
patterns = any_patterns | full_rank_patterns | broadcast_patterns


def _tensor(shape: tuple, order: list, steps: list, expanded: list, device="cpu") -> torch.Tensor:
    """A tensor of `shape` whose dims lie in memory in `order` (outer first), sliced by `steps`,
    with the `expanded` dims broadcast from one element."""
    stored = [1 if e else n * s for n, s, e in zip(shape, steps, expanded)]
    inverse = sorted(range(len(order)), key=order.__getitem__)
    t = torch.randn([stored[d] for d in order], device=device).permute(inverse)
    t = t[tuple(slice(None, None, 1 if e else s) for s, e in zip(steps, expanded))]
    return t.expand(shape)


def _inputs(pattern, sizes, device="cpu") -> list:
    rank, inputs = pattern
    return [
        _tensor(tuple(1 if one else sizes[rank - r + i] for i, one in enumerate(ones)), order, steps, expanded, device)
        for r, ones, order, steps, expanded in inputs
    ]


@triton.jit
def _add_two(x, y):
    return x + y
