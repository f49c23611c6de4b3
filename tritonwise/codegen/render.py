"""render(): a KernelSpec to the source of one generated module, through the Jinja templates."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import jinja2

from . import body

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
RESERVED = {"triton", "tl", "launch", "grid"}


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


@functools.lru_cache(maxsize=1)
def template_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(TEMPLATE_DIR.glob("*.py.j2")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def payload_alias(payload_name: str, kernel_name: str) -> str:
    """The name the payload is bound under in the generated module."""
    clash = (
        payload_name in RESERVED
        or payload_name == kernel_name
        or re.fullmatch(r"(in|out|size|pid|tile|offs|mask|rows|rest|num_|i\d|BLOCK)\w*", payload_name)
    )
    return f"payload_{payload_name}" if clash else payload_name


def _operand_lines(spec) -> list:
    lines = []
    for i in spec.inputs:
        kind = f"strides [{', '.join(i.strides)}]" if i.is_tensor else "scalar"
        cast = f", computed as {i.cast}" if i.cast else ""
        lines.append(f"{i.name:<8} {i.param}: {i.dtype} {kind}{cast}")
    for o in spec.outputs:
        if o.reduction:
            mode = "one partial per program" if spec.deterministic else "atomic"
            lines.append(f"{o.name:<8} {o.reduction} of the {o.dtype} result, accumulated in {o.acc} ({mode})")
        else:
            lines.append(f"{o.name:<8} {o.dtype} strides [{', '.join(o.strides)}]")
    return lines


def render(spec) -> str:
    alias = payload_alias(spec.payload_name, spec.kernel_name)
    index = body.index_params(spec)
    constexprs = body.constexpr_params(spec)
    block_values = dict(zip(constexprs, spec.block))
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
        "block": "x".join(map(str, spec.block)) or "-",
        "num_warps": spec.num_warps,
        "aligned": spec.aligned,
        "operand_lines": _operand_lines(spec),
        "key": spec.key,
        "template_hash": spec.template_hash,
        "no_specialize": ", ".join(f'"{p}"' for p in _unspecialized(spec, index)),
        "params": body.kernel_params(spec),
        "prologue": body.prologue_lines(spec),
        "scheme_template": f"{spec.scheme}.py.j2",
        "decompose": body.decompose_lines(spec),
        "body": body.body_text(spec, alias),
        "epilogue": body.epilogue_lines(spec),
        "launch_args": ", ".join(_pointer_names(spec) + index),
        "constexpr_args": "".join(f"{k}={v}, " for k, v in block_values.items()),
    }
    return _environment().get_template("module.py.j2").render(**values)


def _pointer_names(spec) -> list:
    names = [i.name + "_ptr" if i.is_tensor else i.name for i in spec.inputs]
    return names + [o.name + "_ptr" for o in spec.outputs]


def _unspecialized(spec, index: list) -> list:
    """Parameters whose new values must never trigger a recompile: scalars, tile counts, and
    sizes and strides unless the file is for the aligned class. There every size and run-time
    stride is a multiple of 16 (and never 1), so Triton's own divisibility specialization is the
    same for every call and tells the compiler what vectorized accesses need; a
    `tl.multiple_of` hint on a scalar argument does not reach the masks (seen in the PTX: scalar
    2-byte loads for bf16)."""
    counts = [p for p in index if not (p.startswith("size") or "_stride" in p)]
    return [i.name for i in spec.inputs if not i.is_tensor] + (counts if spec.aligned else index)
