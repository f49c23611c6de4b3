"""The lines of a kernel body and its parameter list, derived from a KernelSpec."""

from __future__ import annotations

from typing import Optional

from ..schemes import get_scheme
from .indexing import operand_access, peeled_access, row_offset
from .spec import TRITON_ITEMSIZES, KernelSpec


def accesses(spec: KernelSpec, whole_block: bool = False) -> dict:
    """Name -> Access for every tensor operand; in a block of whole columns, a peeled operand's
    from its row's boundary (peel)."""
    scheme = get_scheme(spec.scheme)
    found = {op.name: operand_access(op.name, op.strides, scheme, spec.m_dim) for op in spec.tensors}
    peeled = peel(spec)
    if whole_block and peeled:
        found[peeled["name"]] = peeled_access(peeled["name"])
    return found


def peel(spec: KernelSpec) -> Optional[dict]:
    """The operand whose rows blocks of one row read from their first 16-byte boundary (KernelSpec.peel),
    as row_looped.py.j2 prints it: its name, its rows' offset and the elements in those bytes."""
    if spec.peel is None:
        return None
    scheme = get_scheme(spec.scheme)
    operand = spec.tensors[spec.peel]
    elements = scheme.peel_bytes // TRITON_ITEMSIZES[operand.dtype]
    return {"name": operand.name, "row": row_offset(operand.name, operand.strides, scheme, spec.m_dim), "elements": elements}


def prologue_lines(spec: KernelSpec) -> list:
    lines = []
    for inp in spec.inputs:
        if not inp.is_tensor:
            lines += [f"{name} = {_scalar_value(inp, chain)}" for name, chain in _conversions(spec, inp) if chain]
    if spec.rank:
        to64 = ".to(tl.int64)" if spec.index_bits == 64 else ""
        lines.append(f"pid = tl.program_id(0){to64}")
    lines += [f"{_acc(o)} = tl.full([], {o.identity}, tl.{o.acc})" for o in spec.reduced_outputs]
    return lines


def _scalar_value(inp, chain: tuple) -> str:
    """A scalar parameter converted along `chain`; 16-bit floats are reached through float32."""
    first = "float32" if chain[0] in HALF_FLOATS else chain[0]
    return f"tl.full([], {inp.name}, tl.{first})" + conversion_text(chain, start=first)


def _conversions(spec: KernelSpec, inp) -> list:
    """(name, chain) of each converted copy of input `inp` the payload calls take."""
    return [(_argument(spec, inp, call), call.converts[spec.inputs.index(inp)]) for call in spec.calls]


def _argument(spec: KernelSpec, inp, call) -> str:
    """Input `inp` as `call` takes it: its own name, or `in0_for_out1` (as out1's call needs it) where
    several calls convert it."""
    converted = len(spec.calls) > 1 and call.converts[spec.inputs.index(inp)]
    return f"{inp.name}_for_{call.outputs[0]}" if converted else inp.name


def _acc(output) -> str:
    return f"acc{output.name[3:]}"


_COMBINE = {
    "sum": ("{acc} + {v}", "tl.sum", "tl.atomic_add"),
    "max": ("tl.maximum({acc}, {v})", "tl.max", "tl.atomic_max"),
    "min": ("tl.minimum({acc}, {v})", "tl.min", "tl.atomic_min"),
}


def _reduce(spec: KernelSpec, output, whole_block: bool) -> str:
    """Fold a tile's values into the accumulator (a whole tile's unmasked). A rank-0 task has one
    0-d value and no tile: it is combined as it is (`tl.sum` and friends reduce blocks; the compiler
    rejects a 0-d one)."""
    combine, block_reduce, _ = _COMBINE[output.reduction]
    if spec.rank:
        tile = _whole_tile(spec, output) if whole_block else _masked(output)
        value = f"{block_reduce}({tile})"
        value += conversion_text((output.acc,)) if output.dtype in NARROW_SIGNED else ""
    else:
        value = _result(output, (output.acc,))
    return f"{_acc(output)} = {combine.format(acc=_acc(output), v=value)}"


# Tiles of 8- and 16-bit signed results are reduced in float (exact for them), then converted to
# the accumulator: widened to int directly, ptxas drops the sign extension after Triton 3.6's
# `abs.s16` (max(|[-32768, 5]|) gave -32768); an int-to-float conversion is not folded away.
NARROW_SIGNED = ("int8", "int16")


def _tile_acc(output) -> str:
    """The dtype a tile's values are reduced in: the accumulator's, float for NARROW_SIGNED."""
    if output.dtype in NARROW_SIGNED:
        return "float64" if output.reduction == "sum" else "float32"
    return output.acc


def _tile_identity(output) -> str:
    if output.dtype in NARROW_SIGNED:
        return {"sum": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}[output.reduction]
    return output.identity


def _whole_tile(spec: KernelSpec, output) -> str:
    """A whole tile's values, in _tile_acc, broadcast to the tile: the payload's value is 0-d where
    no operand varies along the tile (every one broadcast, or none used), and `tl.sum` of it would
    count it once (the masked tile's `tl.where` broadcasts it)."""
    shape = get_scheme(spec.scheme).tile_shape
    return f"tl.broadcast_to({_result(output, (_tile_acc(output),))}, {shape})"


def _masked(output) -> str:
    """The tile's values rounded as the result would be, in _tile_acc; the identity where masked off."""
    return f"tl.where(mask, {_result(output, (_tile_acc(output),))}, {_tile_identity(output)})"


def epilogue_lines(spec: KernelSpec) -> list:
    """After the tile loop: publish each program's partial reduction."""
    lines = []
    for o in spec.reduced_outputs:
        if spec.deterministic:
            target = f"{o.name}_ptr + pid" if spec.rank else f"{o.name}_ptr"
            lines.append(f"tl.store({target}, {_acc(o)})")
        else:
            lines.append(f'{_COMBINE[o.reduction][2]}({o.name}_ptr, {_acc(o)}, sem="relaxed")')
    return lines


HALF_FLOATS = ("float16", "bfloat16")


def conversion_text(chain: tuple, start=None) -> str:
    """`.to(...)` conversions along `chain`; 16-bit floats are reached through float32, as torch
    converts (a direct float64 -> float16 rounding can differ by one ulp)."""
    text, current = "", start
    for dtype in chain:
        if dtype == current:
            continue
        if dtype in HALF_FLOATS and current != "float32":
            text += ".to(tl.float32)"
        text += f".to(tl.{dtype})"
        current = dtype
    return text


def _load(name: str, access, chain: tuple, eviction: Optional[str], mask: Optional[str]) -> str:
    mask = f", mask={mask}" if mask else ""
    policy = f", eviction_policy={eviction!r}" if eviction else ""
    return f"{name} = tl.load({access.pointer}{mask}{policy}){conversion_text(chain)}"


def _mask(access, whole_block: bool, rows_clamped: bool = False) -> Optional[str]:
    """An access's mask; in a block of whole columns, its row part alone, and for a load none where
    rows are clamped (a store keeps it: a clamped row's values are never stored)."""
    if not whole_block:
        return access.mask
    return None if rows_clamped else access.row_mask


def _store(output, access, mask: Optional[str]) -> str:
    mask = f", mask={mask}" if mask else ""
    value = _result(output, (output.store,) if output.store else ())
    return f"tl.store({access.pointer}, {value}{mask})"


def _result(output, then: tuple) -> str:
    """The payload's value converted to the result dtype (unless it already has it), then along `then`."""
    as_result = "" if output.value == output.dtype else conversion_text((output.dtype,))
    return output.name + as_result + conversion_text(then, start=output.dtype)


def body_text(spec: KernelSpec, payload_alias: str, whole_block: bool = False) -> str:
    """Loads, the payload call(s) and the stores, one statement a line. `whole_block`: the body of
    a block whose every column is in range (Scheme.whole_blocks): a flat tile before the last, or a
    column loop's block before the last (row_looped.py.j2). It has no column mask, and no row mask
    where the scheme clamps rows; rows out of range compute values never stored. A column loop's
    masked last block folds into the rest accumulators where the scheme reads it in a block of
    REST_BLOCK columns (takes_rest_block)."""
    scheme = get_scheme(spec.scheme)
    acc, eviction = accesses(spec, whole_block), scheme.load_eviction
    tensors = [i for i in spec.inputs if i.is_tensor]
    masks = {i.name: _mask(acc[i.name], whole_block, scheme.clamps_rows) for i in tensors}
    if len(spec.calls) == 1:
        converts = spec.calls[0].converts
        lines = [_load(i.name, acc[i.name], converts[spec.inputs.index(i)], eviction, masks[i.name]) for i in tensors]
    else:  # load once, convert once per call that needs it
        lines = [_load(i.name, acc[i.name], (), eviction, masks[i.name]) for i in tensors]
        lines += [f"{n} = {i.name}{conversion_text(c)}" for i in tensors for n, c in _conversions(spec, i) if c]
    for call in spec.calls:
        args = ", ".join(_argument(spec, i, call) for i in spec.inputs)
        if call.variant:  # computes only its outputs (autodiff/variants.py)
            lines.append(f"{', '.join(call.outputs)} = {call.variant_alias(payload_alias)}({args})")
        else:
            taken = ", ".join(o.name if o.name in call.outputs else "_" for o in spec.outputs)
            lines.append(f"{taken} = {payload_alias}({args})")
    lines += [_store(o, acc[o.name], _mask(acc[o.name], whole_block)) for o in spec.elementwise_outputs]
    lines += [_reduce(spec, o, whole_block) for o in spec.reduced_outputs]
    lines += [_row_step(spec, o, whole_block) for o in spec.row_reduced_outputs]
    return "\n".join(lines)


# -- reductions along dims (row schemes): one value per tile row, stored by the row's program --


def _row_step(spec: KernelSpec, output, whole_block: bool = False) -> str:
    """Fold the tile's values: into the BLOCK_M x BLOCK_N accumulator (row_looped; a block of
    whole columns unmasked), or the BLOCK_M x REST_BLOCK one of the masked last block where the
    scheme narrows it, or straight into one value per row (row_persistent, whose block holds the
    whole reduced extent)."""
    combine, block_reduce, _ = _COMBINE[output.reduction]
    if get_scheme(spec.scheme).loops_columns:
        value = _result(output, (_tile_acc(output),)) if whole_block else _masked(output)
        into = _acc(output) if whole_block or not takes_rest_block(spec) else _rest(output)
        return f"{into} = {combine.format(acc=into, v=value)}"
    return f"{_acc(output)} = {block_reduce}({_masked(output)}, axis=1, keep_dims=True)"


def takes_rest_block(spec: KernelSpec) -> bool:
    """Whether the scheme's kernel takes REST_BLOCK: the width its column loop reads a row's
    masked last columns in, folded into accumulators of their own where narrower than BLOCK_N
    (row_looped.py.j2)."""
    return "REST_BLOCK" in get_scheme(spec.scheme).row_constexpr_names(spec.rank, spec.m_dim)


def _rest(output) -> str:
    return f"rest{output.name[3:]}"


def row_init_lines(spec: KernelSpec) -> list:
    """Before a column loop (row_looped.py.j2 alone reads them): each accumulator filled with the identity."""
    return [
        f"{_acc(o)} = tl.full([BLOCK_M, BLOCK_N], {_tile_identity(o)}, tl.{_tile_acc(o)})"
        for o in spec.row_reduced_outputs
    ]


def rest_init_lines(spec: KernelSpec) -> list:
    """Before a narrowed last block (row_looped.py.j2): each accumulator of its own, the block
    accumulator itself where the last block is whole (one reduction after, as without it)."""
    if not takes_rest_block(spec):
        return []
    return [
        f"{_rest(o)} = {_acc(o)} if REST_BLOCK == BLOCK_N else "
        f"tl.full([BLOCK_M, REST_BLOCK], {_tile_identity(o)}, tl.{_tile_acc(o)})"
        for o in spec.row_reduced_outputs
    ]


def row_finish_lines(spec: KernelSpec) -> list:
    """After a row's columns: reduce the accumulator (row_looped; where the scheme narrows the
    last block, the rest accumulator too, unless it is the block accumulator) and store one
    value per row, rounded to the elementwise result first when both are floats (as torch's
    result then copy)."""
    lines, acc = [], accesses(spec)
    for o in spec.row_reduced_outputs:
        if get_scheme(spec.scheme).loops_columns:
            combine, block_reduce, _ = _COMBINE[o.reduction]
            value = f"{block_reduce}({_acc(o)}, axis=1, keep_dims=True)"
            if takes_rest_block(spec):
                last = f"last{o.name[3:]}"
                lines.append(f"{last} = {block_reduce}({_rest(o)}, axis=1, keep_dims=True)")
                value = f"{last} if REST_BLOCK == BLOCK_N else {combine.format(acc=value, v=last)}"
            lines.append(f"{_acc(o)} = {value}")
        floats = all(d.startswith(("float", "bfloat")) for d in (_tile_acc(o), o.dtype))
        chain = (o.dtype, o.store) if floats and o.store and not o.partial else (o.store or o.dtype,)
        value = _acc(o) + conversion_text(chain, start=_tile_acc(o))
        lines.append(f"tl.store({acc[o.name].pointer}, {value}, mask={acc[o.name].mask})")
    return lines


def kernel_params(spec: KernelSpec, index: list, constexprs: list) -> list:
    """The kernel's parameters: operands, outputs, then its `index` and `constexprs` parameters."""
    params = [
        f"{i.name}_ptr" if i.is_tensor else f"{i.name}: tl.{i.annotation}" if i.annotation else i.name
        for i in spec.inputs
    ]
    params += [f"{o.name}_ptr" for o in spec.outputs]
    int_type = "tl.int64" if spec.index_bits == 64 else "tl.int32"
    params += [f"{p}: {int_type}" for p in index]
    params += [f"{p}: tl.constexpr" for p in constexprs]
    return params
