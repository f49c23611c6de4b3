"""Compile a call's generated kernel for an H100 (sm_90) on a machine without a GPU.

Triton ships ptxas, so the whole GPU pipeline (TTIR, LLVM, PTX, cubin) runs here; only the
launch needs a device. The interpreter accepts code the compiler rejects (`tl.sum` of a 0-d
value), so tests of generated code that only the GPU would catch compile it this way.
"""

from __future__ import annotations

import os

import pytest
import torch

_POINTER_TYPES = {
    torch.bool: "i1",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float32: "fp32",
    torch.float64: "fp64",
}


def _arg_type(value) -> str:
    if isinstance(value, torch.Tensor):
        return "*" + _POINTER_TYPES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64" if value < 2**63 else "u64"
    return "fp32"


def compile_for_sm90(fn, *args, specialized=False, **outs):
    """The compiled kernel (with `.asm["ptx"]`, `.asm["cubin"]`) that `fn(*args, **outs)` runs;
    `specialized`: with the divisibility by 16 Triton's launcher sees in these arguments
    (runtime/kernels.py `specialize`); the tensors here are CPU ones, as aligned as CUDA's."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    from tritonwise.codegen.render import payload_alias
    from tritonwise.runtime.kernels import specialize
    from tritonwise.runtime.loader import load

    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("TRITON_INTERPRET=1: @triton.jit gives interpreted functions, which do not compile")
    plan = fn.plan(args, fn.outputs(outs), collapse=True)
    spec = plan.spec
    module = load(plan.path, spec.kernel_name, payload_alias(spec.payload_name, spec.kernel_name), fn.payload_info, "gpu")
    kernel = getattr(module, spec.kernel_name)
    reductions = plan.reductions or (None,) * len(plan.out_dtypes)
    buffers = [torch.empty(1, dtype=d if r is None else r.acc) for d, r in zip(plan.out_dtypes, reductions)]
    values = list(args) + buffers + list(plan.index_args)
    names = list(kernel.arg_names)
    signature = {n: _arg_type(v) for n, v in zip(names, values)}
    constexprs = dict(zip(names[len(values):], plan.constexprs))
    signature.update({n: "constexpr" for n in constexprs})
    try:
        attrs = {(i,): [["tt.divisibility", 16]] for i in specialize(kernel, values)[1]} if specialized else None
        source = ASTSource(kernel, signature, constexprs, attrs)
        options = {"num_warps": plan.task.tiling.num_warps}
        return compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    except (FileNotFoundError, RuntimeError) as e:  # no ptxas or no CUDA backend in this install
        if "ptxas" in str(e) or "backend" in str(e).lower():
            pytest.skip(f"cannot compile for sm_90 here: {e}")
        raise
