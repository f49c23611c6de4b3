"""build_spec(): the KernelSpec for a payload, a summary of the call, its types and a task plan."""

from __future__ import annotations

import inspect
from typing import Optional

import torch

from .._version import __version__
from ..analysis.plan import TaskPlan
from ..frontend.dtypes import CallTypes
from ..frontend.payload import Payload
from ..frontend.summary import CallSummary, OperandSummary
from ..autodiff.variants import variant_source
from .key import generator_digest, triton_version
from .payload_names import payload_preamble
from .spec import TRITON_DTYPES, InputSpec, KernelSpec, OutputSpec, PayloadCall, triton_dtype


def _scalar_spec(name: str, param: str, operand: OperandSummary, chains: list) -> InputSpec:
    """A scalar parameter; typed when some output converts it (float64 when one computes in it;
    uint64 for an int of 2**63 or more, which int64 would wrap to a negative number)."""
    kind, annotation = operand.kind, None
    if chains and kind is float:
        annotation = "float64" if any(torch.float64 in chain for chain in chains) else "float32"
    elif chains and kind is int:
        annotation = "uint64" if operand.unsigned else "int64"
    return InputSpec(name, param, False, kind.__name__, annotation)


def payload_calls(types: CallTypes, payload: Payload) -> tuple:
    """One PayloadCall per group of outputs computed in one set of dtypes; with several, each
    runs the payload's variant for its outputs where `payload` has variants."""
    groups = _call_groups(types)
    variant = len(groups) > 1 and all(variant_of(payload, tuple(m)) for m, _ in groups)
    return tuple(
        PayloadCall(
            tuple(f"out{k}" for k in members),
            tuple(tuple(triton_dtype(d, f"in{i}") for d in (chain or ())) for i, chain in enumerate(merged)),
            variant,
        )
        for members, merged in groups
    )


def variant_of(payload: Payload, outputs: tuple) -> Optional[tuple]:
    """(name, source) of the payload's variant computing the values at `outputs`, or None."""
    name = f"{payload.name}_{'_'.join(f'out{k}' for k in outputs)}"
    source = variant_source(payload.source, name, outputs)
    return None if source is None else (name, source)


def _call_groups(types: CallTypes) -> list:
    """(output indices, torch dtype chain per input) per payload call: an output joins the first
    call whose conversions agree with its own on every input both name."""
    groups: list = []  # [output indices, merged chains]
    for k, chains in enumerate(types.conversions):
        for members, merged in groups:
            if all(a is None or b is None or a == b for a, b in zip(merged, chains)):
                members.append(k)
                merged[:] = [a if a is not None else b for a, b in zip(merged, chains)]
                break
        else:
            groups.append(([k], list(chains)))
    return groups


def payload_values(call: CallSummary, types: CallTypes, probe) -> tuple:
    """Per output, the triton dtype the payload returns for it (None: `probe` cannot tell);
    `probe(inputs)` runs the payload on 0-d values (see probe.value_dtypes)."""
    values = [None] * len(types.results)
    for members, chains in _call_groups(types):
        inputs = tuple(_probe_input(operand, chain) for operand, chain in zip(call.inputs, chains))
        found = probe(inputs)
        for k in members if found and len(found) == len(values) else ():
            values[k] = TRITON_DTYPES.get(found[k])
    return tuple(values)


def _probe_input(operand: OperandSummary, chain) -> tuple:
    last = chain[-1] if chain else None
    if operand.is_tensor:
        return (last or operand.dtype, None)
    return (2**40 if operand.wide else operand.kind(1), last)  # an int at the width Triton passes it


def _output_spec(k: int, dtype, classes, reduction, store=None, value=None, partial=False) -> OutputSpec:
    """`partial`: a split reduction's output, a buffer of partial values in the accumulator dtype."""
    name = f"out{k}"
    dtype, store = triton_dtype(dtype, name), store and triton_dtype(store, name)
    if reduction is None:
        return OutputSpec(name, dtype, next(classes), store=store, value=value)
    acc = triton_dtype(reduction.acc, name)
    strides, store = next(classes) if reduction.along_dims else "", acc if partial else store
    return OutputSpec(name, dtype, strides, store, reduction.kind, acc, reduction.identity, value, partial)


def build_spec(
    payload: Payload, call: CallSummary, types: CallTypes, plan: TaskPlan, reductions: tuple, deterministic: bool, probe
) -> KernelSpec:
    """`call` summarizes the arguments (frontend/summary.py); `reductions` holds a Reduction or None
    per output. A given output of another dtype receives the result rounded, then converted as
    torch converts; `probe` tells the dtypes the payload returns, so agreeing ones are not cast."""
    params = list(inspect.signature(payload.fn).parameters)
    params += [f"arg{i}" for i in range(len(params), len(call.inputs))]  # inputs past them: *args
    classes = iter(plan.stride_classes)
    inputs = []
    for i, operand in enumerate(call.inputs):
        name = f"in{i}"
        if operand.is_tensor:
            inputs.append(InputSpec(name, params[i], True, triton_dtype(operand.dtype, name), None, next(classes)))
        else:
            chains = [c[i] for c in types.conversions if c[i] is not None]  # over the outputs that name it
            inputs.append(_scalar_spec(name, params[i], operand, chains))
    values = payload_values(call, types, probe)
    partial = plan.split is not None
    outputs = [
        _output_spec(k, dtype, classes, r, _store_dtype(o, dtype, r), v, partial)
        for k, (o, dtype, r, v) in enumerate(zip(call.out_dtypes, types.results, reductions, values))
    ]
    return KernelSpec(
        payload_name=payload.name,
        payload_origin=payload.origin,
        payload_hash=payload.source_hash,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        calls=payload_calls(types, payload),
        rank=plan.rank,
        scheme=plan.tiling.scheme,
        m_dim=plan.tiling.m_dim,
        blocks=plan.tiling.choices,
        index_bits=plan.index_bits,
        aligned=plan.aligned,
        peel=plan.tiling.peel,
        split_tail=partial and plan.split.longer_last,
        version=__version__,
        generator=generator_digest(),
        triton_version=triton_version(),
        deterministic=deterministic and any(r is not None and not r.along_dims for r in reductions),
        payload_preamble=payload_preamble(payload.fn),
        payload_source=payload.source,
    )


def _store_dtype(given, result, reduction):
    """The dtype stored when it differs from the elementwise result's: a given output's, or a
    reduction along dims' result (int64 for integer sums). Full reductions copy instead."""
    if reduction is not None:
        if not reduction.along_dims:
            return None
        given = reduction.result if given is None else given
    return None if given is None or given == result else given
