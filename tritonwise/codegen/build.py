"""build_spec(): the KernelSpec for a payload, its call types and a task plan."""

from __future__ import annotations

from typing import Sequence

import torch

from .._version import __version__
from ..analysis.plan import TaskPlan
from ..frontend.dtypes import CallTypes
from ..frontend.payload import Payload
from ..frontend.schema import FunctionSchema
from .key import generator_digest, triton_version
from .spec import InputSpec, KernelSpec, OutputSpec, triton_dtype


def _scalar_spec(name: str, param: str, value, compute) -> InputSpec:
    kind = type(value)
    if kind not in (bool, int, float):
        raise TypeError(f"argument {name} ({param}): scalars must be bool, int or float, got {kind.__name__}")
    if compute is None:
        return InputSpec(name, param, False, kind.__name__, None)
    if kind is float:
        annotation = "float64" if compute == torch.float64 else "float32"
    else:
        annotation = "int64" if kind is int else None
    return InputSpec(name, param, False, kind.__name__, triton_dtype(compute, name), annotation)


def _tensor_spec(name: str, param: str, dtype, compute, classes: str) -> InputSpec:
    cast = triton_dtype(compute, name) if compute is not None and compute != dtype else None
    return InputSpec(name, param, True, triton_dtype(dtype, name), cast, None, classes)


def _output_spec(k: int, dtype, classes, reduction, store=None) -> OutputSpec:
    name = f"out{k}"
    if reduction is None:
        store = triton_dtype(store, name) if store is not None else None
        return OutputSpec(name, triton_dtype(dtype, name), next(classes), store=store)
    acc = triton_dtype(reduction.acc, name)
    return OutputSpec(name, triton_dtype(dtype, name), "", None, reduction.kind, acc, reduction.identity)


def build_spec(
    payload: Payload,
    schema: FunctionSchema,
    args: Sequence,
    types: CallTypes,
    plan: TaskPlan,
    reductions: Sequence = (),
    deterministic: bool = False,
    outs: Sequence = (),
) -> KernelSpec:
    """`reductions` holds a Reduction or None per output (empty: no reductions); `outs` the given
    outputs (None where allocated): a given output of another dtype receives the result rounded to
    the result dtype, then converted as torch converts (through float32 for 16-bit floats)."""
    params = list(_param_names(payload, schema.num_inputs()))
    classes = iter(plan.stride_classes)
    inputs = []
    for i, arg in enumerate(args):
        name, compute = f"in{i}", types.input_compute(i)
        if schema.is_tensor(i):
            inputs.append(_tensor_spec(name, params[i], arg.dtype, compute, next(classes)))
        else:
            inputs.append(_scalar_spec(name, params[i], arg, compute))
    reductions = tuple(reductions) or (None,) * len(types.results)
    outputs = [
        _output_spec(k, dtype, classes, r, None if o is None or r is not None or o.dtype == dtype else o.dtype)
        for k, (o, dtype, r) in enumerate(zip(_padded(outs, reductions), types.results, reductions))
    ]
    return KernelSpec(
        payload_name=payload.name,
        payload_origin=payload.origin,
        payload_hash=payload.source_hash,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        rank=plan.rank,
        scheme=plan.tiling.scheme,
        m_dim=plan.tiling.m_dim,
        blocks=plan.tiling.choices,
        index_bits=plan.index_bits,
        aligned=plan.aligned,
        version=__version__,
        generator=generator_digest(),
        triton_version=triton_version(),
        deterministic=deterministic and any(r is not None for r in reductions),
    )


def _param_names(payload: Payload, count: int):
    import inspect

    names = list(inspect.signature(payload.fn).parameters)
    return (names + [f"arg{i}" for i in range(len(names), count)])[:count]


def _padded(outs: Sequence, like: Sequence) -> tuple:
    return tuple(outs) or (None,) * len(like)
