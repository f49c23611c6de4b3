"""DTensor arguments: a pointwise function runs on the local shards, with no collective when the
placements already agree.

The rule comes from broadcasting: per mesh dim, the task is replicated or sharded along one task dim
`d`; an input of full size along `d` must be `Shard(d)`, one broadcasting along it `Replicate`;
elementwise outputs are `Shard(d)`, a fused reduction's `Partial(kind)`. `d` comes from a given
output first, then the first input sharded along a full-size dim. Other placements are redistributed
as DTensor does for aten's pointwise ops. `sharding_strategies` states the same rule for
`register_sharding`, for `as_torch_op` ops.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from numbers import Number
from typing import Optional, Sequence

import torch
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

from ..plans.memo import remember
from ..runtime import arguments as argcheck


@dataclass(frozen=True)
class Operand:
    """What the rule needs of a tensor operand: its global shape and its placements."""

    shape: tuple
    placements: tuple


def task_dim_of(shape: tuple, rank: int, d: int) -> Optional[int]:
    """The operand's own dim that lines up with task dim `d` and is not broadcast there, if any."""
    own = d - (rank - len(shape))
    return own if own >= 0 and shape[own] != 1 else None


def choose_shard_dims(task_shape: tuple, inputs: Sequence, outputs: Sequence, mesh_ndim: int) -> list:
    """Per mesh dim, the task dim to shard along (None: replicate)."""
    rank = len(task_shape)

    def sharded(m: int):  # the task dims operands are sharded along on mesh dim m, first operand first
        for operand in (*outputs, *inputs):
            p = operand.placements[m]
            if isinstance(p, Shard):
                d = p.dim % len(operand.shape) + rank - len(operand.shape)
                if task_shape[d] != 1 and task_dim_of(operand.shape, rank, d) is not None:
                    yield d

    return [next(sharded(m), None) for m in range(mesh_ndim)]


def placements_for(shape: tuple, rank: int, shard_dims: Sequence, reduction: Optional[str] = None) -> tuple:
    """The placements an operand of `shape` must have for the task sharded along `shard_dims`; an
    output of a fused reduction (`reduction`, its kind) is Partial wherever the task is sharded."""
    if reduction is not None:
        return tuple(Replicate() if d is None else Partial(reduction) for d in shard_dims)
    owns = (None if d is None else task_dim_of(shape, rank, d) for d in shard_dims)
    return tuple(Replicate() if own is None else Shard(own) for own in owns)


@dataclass(frozen=True)
class Layout:
    """What a call decides from its operands' signature alone (shapes, strides, dtypes, placements,
    mesh), kept per function and signature so that a repeated call decides nothing again."""

    mesh: object  # the operands' one device mesh (part of the signature)
    rank: int  # the task's
    shard_dims: tuple  # choose_shard_dims'
    targets: tuple  # per argument: the placements it is computed in (None: not a DTensor)
    expected: tuple  # per output: the placements a given one must have (None: not given)
    results: Optional[tuple] = None  # per output: a Result, None where given; None until a call has run


class Result:
    """An output call() allocates for a signature: its placements, global size and strides, and
    the DTensorSpec the first DTensor.from_local built of them, which the next results share."""

    __slots__ = ("placements", "size", "strides", "spec")

    def __init__(self, placements: tuple, size: torch.Size, strides: tuple):
        self.placements, self.size, self.strides, self.spec = placements, size, strides, None

    def wrap(self, local: torch.Tensor, mesh) -> DTensor:
        """The DTensor of `local` on `mesh`: DTensor.from_local(local, mesh, placements, run_check=False,
        shape=size, stride=strides) the first time; after that only its last step,
        DTensor(local.view_as(local), spec) with the kept spec, skipping its DTensorSpec construction
        (about 20 µs, most of its cost) and autograd Function (nothing where `local` needs no grad).
        from_local again where anything differs."""
        spec = self.spec
        if (
            spec is not None and spec.mesh is mesh and spec.tensor_meta.dtype == local.dtype
            and not local.requires_grad and local.device.type == mesh.device_type
        ):
            return DTensor(local.view_as(local), spec, requires_grad=False)
        result = DTensor.from_local(local, mesh, self.placements, run_check=False, shape=self.size, stride=self.strides)
        if mesh.get_coordinate() is not None:  # else from_local gave the result an empty local tensor
            self.spec = result._spec
        return result


_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # function -> {signature: Layout}


def call(fn, args: tuple, outs: tuple):
    """fn(*args, out0=..., ...) with DTensor operands: DTensor results, computed shard-local."""
    name = fn.__name__
    memo = _LAYOUTS.get(fn)
    if memo is None:  # (not setdefault: that builds a dict and a weak reference on every call)
        memo = _LAYOUTS[fn] = {}
    key = (tuple(map(_operand_key, args)), tuple(map(_operand_key, outs)))
    layout = memo.get(key)
    if layout is None:
        layout = _layout(fn, args, outs)
    placed = [a if target is None else _placed(a, target) for a, target in zip(args, layout.targets)]
    with torch.no_grad():  # to_local without its autograd Function: no input needs grad (autograd's route takes those)
        local_args = [a.to_local() if isinstance(a, DTensor) else a for a in placed]
    local_outs = {
        f"out{k}": _local_output(name, k, o, expected)
        for k, (o, expected) in enumerate(zip(outs, layout.expected))
        if o is not None
    }
    results = fn(*local_args, **local_outs)
    results = results if isinstance(results, tuple) else (results,)
    if layout.results is None:
        layout = replace(layout, results=_results(fn, args, outs, layout))
        remember(memo, key, layout)
    wrapped = list(outs)  # given outputs come back as given
    for k, (local, result) in enumerate(zip(results, layout.results)):
        if result is not None:
            wrapped[k] = result.wrap(local, layout.mesh)
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


def _layout(fn, args: tuple, outs: tuple) -> Layout:
    """The rule applied to a call's operands, results aside; raises for a call it can't serve."""
    for k, out in enumerate(outs):  # before anything reads an output's placements
        _require_dtensor_output(fn.__name__, k, out)
    mesh = _common_mesh(fn.__name__, args, outs)
    task_shape = torch.broadcast_shapes(*[tuple(a.shape) for a in args if isinstance(a, torch.Tensor)])
    rank = len(task_shape)
    reductions = fn.reduction_kinds
    given = [o for o, r in zip(outs, reductions) if o is not None and r is None]
    shard_dims = choose_shard_dims(
        task_shape,
        [Operand(tuple(a.shape), a.placements) for a in args if isinstance(a, DTensor)],
        [Operand(tuple(o.shape), o.placements) for o in given],
        mesh.ndim,
    )
    targets = tuple(placements_for(tuple(a.shape), rank, shard_dims) if isinstance(a, DTensor) else None for a in args)
    expected = tuple(
        None if not isinstance(o, DTensor) else placements_for(tuple(o.shape), rank, shard_dims, r)
        for o, r in zip(outs, reductions)
    )
    return Layout(mesh, rank, tuple(shard_dims), targets, expected)


def _results(fn, args: tuple, outs: tuple, layout: Layout) -> tuple:
    """The Result of each output the call allocates (None where given)."""
    meta_args = [_meta(a) for a in args]
    if any(isinstance(a, torch.Tensor) and a.is_complex() for a in meta_args):  # the complex handler's results
        values = fn(*meta_args)
        metas = [(tuple(v.shape), v.stride(), v.dtype) for v in (values if isinstance(values, tuple) else (values,))]
    else:
        metas = fn.output_meta(*meta_args)
    rank, shard_dims = layout.rank, layout.shard_dims
    return tuple(
        None if o is not None else Result(placements_for(shape, rank, shard_dims, r), torch.Size(shape), strides)
        for o, (shape, strides, _), r in zip(outs, metas, fn.reduction_kinds)
    )


def _common_mesh(name: str, args: tuple, outs: tuple):
    meshes = {a.device_mesh for a in (*args, *outs) if isinstance(a, DTensor)}
    if len(meshes) > 1:
        raise RuntimeError(f"{name}: DTensor operands are on different device meshes: {sorted(map(str, meshes))}")
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and not isinstance(a, DTensor) and a.ndim:
            raise RuntimeError(
                f"{name}: argument {i} is a torch.Tensor of shape {tuple(a.shape)} beside DTensor operands; "
                "convert it with DTensor.from_local or distribute_tensor (only 0-d tensors mix in as scalars)"
            )
    return meshes.pop()


def _operand_key(a):
    """What the layout of a call reads of an operand (a scalar: its type; the local call checks its value)."""
    if isinstance(a, DTensor):
        return type(a), a.shape, a.stride(), a.dtype, a.placements, a.device_mesh
    if isinstance(a, torch.Tensor):
        return type(a), a.shape, a.stride(), a.dtype, a.device
    return argcheck.int_class(a) if type(a) is int else type(a)


def _placed(a, target: tuple) -> DTensor:
    return a if tuple(a.placements) == target else a.redistribute(a.device_mesh, target)


def _require_dtensor_output(name: str, k: int, out) -> None:
    if out is not None and not isinstance(out, DTensor):
        raise TypeError(f"{name}: out{k} must be a DTensor when the operands are DTensors, got {type(out).__name__}")


def _local_output(name: str, k: int, out, expected: Optional[tuple]):
    _require_dtensor_output(name, k, out)
    if tuple(out.placements) != expected:
        raise RuntimeError(
            f"{name}: out{k} has placements {tuple(out.placements)}, but the result is computed as {expected}; "
            "redistribute the output or the inputs to match"
        )
    return out.to_local()


def _meta(a):
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(tuple(a.shape), tuple(a.stride()), dtype=a.dtype, device="meta")
    return a


def sharding_strategies(fn, args: tuple) -> list:
    """The rule as register_sharding wants it: (output placements, input placements) pairs, one
    placement per operand, for one mesh dim (DTensor extends them to every mesh dim)."""
    # a tensor operand: a tensor, or the DTensorSpec register_sharding passes in its place
    shapes = [tuple(a.shape) if hasattr(a, "shape") and not isinstance(a, Number) else None for a in args]
    task_shape = torch.broadcast_shapes(*[s for s in shapes if s is not None])
    rank = len(task_shape)
    strategies = [([Replicate()] * len(fn.reduction_kinds), [Replicate() if s else None for s in shapes])]
    for d in range(rank):
        if task_shape[d] == 1:
            continue
        inputs = [None if s is None else placements_for(s, rank, [d])[0] for s in shapes]
        outputs = [Shard(d) if r is None else Partial(r) for r in fn.reduction_kinds]
        strategies.append((outputs, inputs))
    return strategies
