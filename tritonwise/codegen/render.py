"""render(): a KernelSpec to the source of one generated module, through the Jinja templates (jinja2
imported on the first render only).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..autodiff.variants import variant_source
from ..schemes import get_scheme
from ..schemes.base import runtime_stride_params
from . import body
from .payload_names import definition_lines

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
RESERVED = {"triton", "tl", "launch", "grid"}
# kernel locals and parameters a payload must not be named
KERNEL_NAMES = r"(in|out|size|pid|tile|offs|mask|rows|rest|cols|whole|head|last|num_|i\d|j\d|acc\d|start|BLOCK|GRID|REST_|WHOLE_)\w*"


@functools.lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def payload_alias(payload_name: str, kernel_name: str) -> str:
    """The name the payload is bound under in the generated module."""
    clash = payload_name in RESERVED or payload_name == kernel_name or re.fullmatch(KERNEL_NAMES, payload_name)
    return f"payload_{payload_name}" if clash else payload_name


def _operand_lines(spec) -> list:
    lines = []
    for i in spec.inputs:
        kind = f"strides [{', '.join(i.strides)}]" if i.is_tensor else "scalar"
        lines.append(f"{i.name:<8} {i.param}: {i.dtype} {kind}")
    for o in spec.outputs:
        stored = f", stored as {o.store}" if o.store else ""
        if o.reduction and o.strides:
            lines.append(
                f"{o.name:<8} {o.reduction} of the {o.dtype} result along the columns, in {o.acc}{stored} "
                f"strides [{', '.join(o.strides)}]"
            )
        elif o.reduction:
            mode = "one partial per program" if spec.deterministic else "atomic"
            lines.append(f"{o.name:<8} {o.reduction} of the {o.dtype} result, accumulated in {o.acc} ({mode})")
        else:
            lines.append(f"{o.name:<8} {o.dtype}{stored} strides [{', '.join(o.strides)}]")
    for call in spec.calls:
        converted = [f"{i.name} as {' -> '.join(c)}" for i, c in zip(spec.inputs, call.converts) if c]
        lines.append(f"{'call':<8} {', '.join(call.outputs)} from {', '.join(converted) or 'the inputs as loaded'}")
    return lines


def render(spec) -> str:
    alias = payload_alias(spec.payload_name, spec.kernel_name)
    scheme = get_scheme(spec.scheme)
    if spec.split_tail and not (body.takes_rest_block(spec) or spec.peel is not None):
        raise AssertionError(f"{spec.kernel_name}: a split's longer last part needs row_looped's rest loop, not {spec.scheme}'s")
    index = spec.index_params()
    constexprs = scheme.constexpr_params(spec.rank, spec.m_dim)
    row_constexprs = scheme.row_constexpr_names(spec.rank, spec.m_dim)
    pointers = [i.name + "_ptr" if i.is_tensor else i.name for i in spec.inputs]
    pointers += [o.name + "_ptr" for o in spec.outputs]
    values = {
        "version": spec.version,
        "payload_origin": spec.payload_origin,
        "payload_hash": spec.payload_hash,
        "payload_name": alias,
        "kernel_name": spec.kernel_name,
        "rank": spec.rank,
        "scheme": spec.scheme,
        "m_dim": spec.m_dim,
        "index_bits": spec.index_bits,
        "blocks": "  ".join("x".join(map(str, b)) for b in spec.blocks if b) or "-",
        "aligned": spec.aligned,
        "operand_lines": _operand_lines(spec),
        "key": spec.key,
        "generator": spec.generator,
        "triton_version": spec.triton_version,
        "no_specialize": ", ".join(f'"{p}"' for p in _unspecialized(spec, scheme, index)),
        "params": body.kernel_params(spec, index, constexprs),
        "prologue": body.prologue_lines(spec),
        "scheme_template": scheme.template,
        "loop_stages": scheme.loop_num_stages(spec.aligned, spec.peel is not None),
        "decompose": scheme.decompose_lines(spec.rank, spec.m_dim, spec.index_bits),
        "body": body.body_text(spec, alias),
        "whole_block_body": body.body_text(spec, alias, whole_block=True) if scheme.whole_blocks else "",
        "clamps_rows": scheme.clamps_rows,
        "takes_whole_blocks": "WHOLE_BLOCKS" in row_constexprs,
        "takes_inner_extent": "INNER_EXTENT" in row_constexprs,
        "takes_rest_block": body.takes_rest_block(spec),
        "peel": body.peel(spec),
        "split_tail": spec.split_tail,
        "epilogue": body.epilogue_lines(spec),
        "row_init": body.row_init_lines(spec),
        "rest_init": body.rest_init_lines(spec),
        "column_decompose": scheme.column_lines(spec.rank, spec.m_dim, spec.index_bits) if scheme.loops_columns else [],
        "row_finish": body.row_finish_lines(spec),
        # the payload's source under `@triton.jit`, bound as `alias`, after what it needs to run alone
        "payload_definition": "\n".join((*spec.payload_preamble, *definition_lines(spec.payload_source, alias))),
        "variant_definitions": _variant_definitions(spec, alias),
        "layout_lines": layout_lines(spec, alias),
        "launch_args": ", ".join(pointers + index),
        "block_params": "".join(f"{k}, " for k in constexprs),
        "folds_tile_loop": not scheme.always_loops_tiles,
        "constexpr_args": "".join(f"{k}={k}, " for k in constexprs),
    }
    return _environment().get_template("module.py.j2").render(**values)


def _variant_definitions(spec, alias: str) -> list:
    """(name, source) of each payload variant the calls run (codegen/build.py variant_of)."""
    names = [(c.variant_alias(alias), tuple(int(o[3:]) for o in c.outputs)) for c in spec.calls if c.variant]
    return [(name, variant_source(spec.payload_source, name, outputs).rstrip()) for name, outputs in names]


def layout_lines(spec, alias: str) -> list:
    """The `LAYOUT` record: what `python FILE` needs to build operands of this file's class."""
    tensors = [(i.name, i.dtype, i.strides if i.is_tensor else None) for i in spec.inputs]
    outputs = [(o.name, o.store or o.dtype, o.strides, o.acc) for o in spec.outputs]
    fields = {
        "kernel": spec.kernel_name,
        "payload": alias,
        "scheme": spec.scheme,
        "m_dim": spec.m_dim,
        "blocks": list(spec.blocks),
        "index_bits": spec.index_bits,
        "aligned": spec.aligned,
        "peel": spec.peel,
        "deterministic": spec.deterministic,
        "inputs": tensors,
        "outputs": outputs,
    }
    if spec.split_tail:  # its launch takes SPLIT_TAIL_PARAMS too
        fields["split_tail"] = True
    return [f"{k}={v!r}," for k, v in fields.items()]


def _unspecialized(spec, scheme, index: list) -> list:
    """Parameters whose new values must never trigger a recompile: scalars, tile counts, and sizes
    and strides unless the file is for the aligned class. There every size the vector accesses run
    along (Scheme.aligned_dims), run-time stride of the operands that count (Scheme.aligned_operands)
    and count of Scheme.aligned_counts is a multiple of 16, so Triton's divisibility specialization
    is the same for every call and gives the vectorized accesses (`tl.multiple_of` on a scalar
    does not reach the masks); other sizes stay unspecialized."""
    vector_sizes = {f"size{d}" for d in scheme.aligned_dims(spec.rank, spec.m_dim)}
    aligned_operands = scheme.aligned_operands(spec.stride_classes, spec.strided_output_count)
    aligned_strides = set(runtime_stride_params(aligned_operands))
    specialized = [p for p in index if p in vector_sizes or p in aligned_strides or p in scheme.aligned_counts]
    unspecialized = [p for p in index if p not in specialized] if spec.aligned else index
    return [i.name for i in spec.inputs if not i.is_tensor] + unspecialized


def identity_marks(spec) -> tuple:
    """Header text only a file rendered for `spec` by this library version contains."""
    return (f"# Generated by tritonwise {spec.version}:", f"#   key      {spec.key}    generator {spec.generator}")
