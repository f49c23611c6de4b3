"""as_torch_op (an opaque custom op) against torch.library.triton_op (issue 14's last item), GPU.

    python -m benchmarks.torch_op_vs_triton_op            # CUDA: checks, timings (a few minutes)
    python -m benchmarks.torch_op_vs_triton_op --inductor epilogue_fusion_user_defined_triton_kernel=1
    python -m benchmarks.torch_op_vs_triton_op --smoke    # CUDA: checks only, small inputs
    python -m benchmarks.torch_op_vs_triton_op --device cpu   # CPU (interpreter): checks only

One payload, SiLU (`x * tl.sigmoid(x)`), reaches PyTorch four ways:
- "tritonwise silu(x)": the function itself;
- "custom op": `silu.as_torch_op("tw_bench::silu")`, opaque to torch.compile (Inductor calls it
  as an extern kernel and launches its own kernels around it);
- "triton_op": `torch.library.triton_op("tw_bench::silu_triton")`, whose body allocates the
  output and launches tritonwise's *generated* kernel through `torch.library.wrap_triton`, so
  that under torch.compile Inductor sees the kernel (a triton_kernel_wrapper HOP) and launches
  it itself; in eager torch runs the body with wrap_triton off, i.e. through Triton's own JIT
  launcher;
- "triton_op + tw eager": the same body as another triton_op ("tw_bench::silu_hybrid") whose
  eager CPU/CUDA kernel is re-registered as the tritonwise call (`register_kernel`): compiled
  code sees the kernel, eager keeps tritonwise's launch. This is the design the issue asks about.
torch's own `F.silu` is the baseline. "eager" rows time the op alone; "compile" rows time
`torch.compile(fullgraph=True, dynamic=False)` of `g(x) = op(x) * 2.0 + 1.0`.

Columns of the table:
- check: the result against torch (`F.silu(x)`, or `F.silu(x) * 2 + 1`) under allclose
  (rtol 1e-5, atol 1e-5) on every input: the two timed ones, an odd size and a broadcast row
  (another kernel scheme); an error names the exception instead, and the row is not timed.
- GB/s 2^26: 2^26 fp32 elements, bytes = x read once + the result written once (512 MiB),
  over the median time of `triton.testing.do_bench`.
- host µs / back-to-back µs 1024: a 1024-element input, µs per call, median of `--rounds`
  rounds (benchmarks/harness.py): "host" stops the clock before synchronizing (host cost alone),
  "back to back" includes the GPU's pace.
- kernels: how many CUDA kernels one call on the 1024-element input launches (torch.profiler;
  their names are listed below the table). Below them: the forward graph AOTAutograd traces for
  g with the triton_op, and its `tensors_to_clone` (kernel arguments Inductor copies before the
  launch because it believes the kernel may write them; `in0_ptr` there costs an extra copy).

The triton_op body needs tritonwise's launch plan for its input (grid, index arguments, block
constexprs, warps). It is looked up by (shape, strides, dtype, device), which a FakeTensor has,
and computed on a miss with `silu.plan`; the benchmark prepares each input's plan eagerly
before compiling, and compiles with dynamic=False, so tracing only ever reads a cached plan of
static shapes (SymInt shapes are not supported by this body). Inductor's FX and AOT caches are
turned off: their keys do not see a kernel chosen at run time, so a stale entry could be reused.

On CPU (`--device cpu`, always a smoke run) tritonwise runs its kernel in Triton's interpreter,
so the triton_op body enters the same interpreter context tritonwise's own CPU launch uses; for
tracing it hands wrap_triton the compiled-kernel JITFunction of the same generated file (a CPU
FakeTensor cannot enter the interpreter). The triton_op compile rows are left out on CPU
(Inductor asks Triton's GPU driver for a target); their traced graph is still printed.
Every variant is checked before anything is timed. Exit status: 0 when every check passed, 1
otherwise (the variants that passed are still timed, so that one failing variant does not hide
the others' numbers), 2 without CUDA (and no --device cpu).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import logging
import sys

import torch
import torch._dynamo.config
import torch._functorch.config
import torch._inductor.config
import torch.nn.functional as F
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import is_fake

from benchmarks.harness import (
    host_only_us,
    median_us,
    mismatch,
    per_call_us,
    room_for_recompiles,
    smoke_arguments,
    smoke_run,
)
from tritonwise import pointwise_dynamic

LARGE, SMALL = 2**26, 1024
RTOL = ATOL = 1e-5


@pointwise_dynamic(promotion_methods=[(0, "DEFAULT")])
@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


silu_custom_op = silu.as_torch_op("tw_bench::silu")

# ---------------------------------------------------------------------------------------------
# The triton_op: tritonwise's generated kernel launched through wrap_triton


_plans: dict = {}  # (shape, strides, dtype, device) -> LaunchPlan


def plan_for(x: torch.Tensor):
    """tritonwise's launch plan for `x` (one output allocated by the call)."""
    key = (tuple(x.shape), tuple(x.stride()), x.dtype, x.device)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = silu.plan((x,), silu.outputs({}), collapse=True)
    return plan


def kernel_of(plan, x: torch.Tensor):
    """The generated module's @triton.jit kernel. A CPU plan holds the interpreter's copy; when
    `x` is fake (tracing on CPU) the compiled-kernel JITFunction of the same file is returned."""
    kernel = plan.launch.__globals__[plan.spec.kernel_name]
    if plan.interpreted and is_fake(x):
        from tritonwise.codegen.render import payload_alias
        from tritonwise.runtime.loader import load

        alias = payload_alias(plan.spec.payload_name, plan.spec.kernel_name)
        module = load(plan.path, plan.spec.kernel_name, alias, silu.payload_info, "gpu")
        kernel = getattr(module, plan.spec.kernel_name)
    return kernel


def constexpr_names(kernel) -> list:
    """The kernel's constexpr parameters in signature order: BLOCK, or BLOCK_M and BLOCK_N, then
    GRID_STRIDE where the scheme has it."""
    if hasattr(kernel, "params"):  # a JITFunction
        return [p.name for p in kernel.params if p.is_constexpr]
    parameters = inspect.signature(kernel.fn).parameters.values()  # the interpreter's copy (CPU)
    return [p.name for p in parameters if p.annotation in (tl.constexpr, "tl.constexpr")]


def cpu_interpreter(plan, x: torch.Tensor):
    """The context tritonwise's own CPU launch runs in (a null context on GPU and when tracing)."""
    if not plan.interpreted or is_fake(x):
        return contextlib.nullcontext()
    from tritonwise.runtime.dispatch import INTERPRETER_LOCK
    from tritonwise.runtime.interpreter.interpret import interpreting

    stack = contextlib.ExitStack()
    stack.enter_context(INTERPRETER_LOCK)
    stack.enter_context(interpreting())
    return stack


def generated_silu(x: torch.Tensor) -> torch.Tensor:
    """Allocate the output as tritonwise would and launch the generated kernel: inputs, outputs,
    index arguments positionally, then the block constexprs by name and num_warps (the order of
    the generated file's `launch`)."""
    plan = plan_for(x)
    out = torch.empty_strided(plan.out_shape, plan.out_strides[0], dtype=plan.out_dtypes[0], device=x.device)
    kernel = kernel_of(plan, x)
    blocks = dict(zip(constexpr_names(kernel), plan.constexprs))
    index_args = plan.index_args
    if plan.interpreted and plan.spec.index_bits == 64 and not is_fake(x):
        from tritonwise.runtime.interpreter.interpret import int64_scalars

        index_args = int64_scalars(index_args)
    with cpu_interpreter(plan, x):
        torch.library.wrap_triton(kernel)[plan.grid](x, out, *index_args, **blocks, num_warps=plan.num_warps)
    return out


silu_triton_op = torch.library.triton_op("tw_bench::silu_triton", mutates_args=())(generated_silu)
silu_hybrid_op = torch.library.triton_op("tw_bench::silu_hybrid", mutates_args=())(generated_silu)


@silu_hybrid_op.register_kernel(("cpu", "cuda"))
def _hybrid_eager(x):
    return silu(x)  # eager keeps tritonwise's own launch; compiled code traces generated_silu


# ---------------------------------------------------------------------------------------------
# Variants


def eager_variants() -> list:
    return [
        ("eager", "tritonwise silu(x)", silu),
        ("eager", "custom op", torch.ops.tw_bench.silu),
        ("eager", "triton_op", torch.ops.tw_bench.silu_triton),
        ("eager", "triton_op + tw eager", torch.ops.tw_bench.silu_hybrid),
        ("eager", "torch F.silu", F.silu),
    ]


def epilogue(op):
    def g(x):
        return op(x) * 2.0 + 1.0

    return g


def compiled_variants(device: str) -> list:
    """The compiled rows; on CPU without the triton_op ones (Inductor asks Triton's GPU driver
    for a target when it compiles a user kernel; their trace is shown instead)."""
    ops = [
        ("custom op", torch.ops.tw_bench.silu),
        ("triton_op", torch.ops.tw_bench.silu_triton),
        ("triton_op + tw eager", torch.ops.tw_bench.silu_hybrid),
        ("torch F.silu", F.silu),
    ]
    if device == "cpu":
        ops = [(name, op) for name, op in ops if not name.startswith("triton_op")]
    return [("compile", name, torch.compile(epilogue(op), fullgraph=True, dynamic=False)) for name, op in ops]


def reference(mode: str, x: torch.Tensor) -> torch.Tensor:
    y = F.silu(x)
    return y if mode == "eager" else y * 2.0 + 1.0


def check(mode: str, fn, inputs: list) -> str:
    """'ok', 'MISMATCH (...)' naming each input's failure, or the exception."""
    try:
        failures = [mismatch(reference(mode, x), fn(x), str(tuple(x.shape)), RTOL, ATOL) for x in inputs]
        failures = [first_lines(f) for f in failures if f is not None]
        return "ok" if not failures else f"MISMATCH ({'; '.join(failures)})"
    except Exception as e:  # noqa: BLE001 (report it in the row, keep the other variants)
        return f"error: {type(e).__name__}: {first_line(e)}"


def first_lines(message: str) -> str:
    """A mismatch's message on one line (it spans several), for a table cell."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip())[:300]


def first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""


# ---------------------------------------------------------------------------------------------
# Measurements (CUDA)


def gbps(fn, x: torch.Tensor) -> float:
    ms = triton.testing.do_bench(lambda: fn(x), warmup=25, rep=100, return_mode="median")
    return 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9


def cuda_kernels(fn, x: torch.Tensor) -> list:
    """Names of the CUDA kernels one call launches (memset and memcpy left out)."""
    from torch.profiler import ProfilerActivity, profile

    fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn(x)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [n for n in names if not n.startswith(("Memset", "Memcpy"))]


def inductor_clones(op, x: torch.Tensor) -> str:
    """Which kernel arguments AOTAutograd marks `tensors_to_clone` for the triton_op's kernel in
    g(x), from Inductor's analysis of the kernel's TTIR (an argument it believes the kernel writes
    is copied before the launch), and the forward graph. On CPU that analysis has no GPU target
    and lists every tensor argument."""
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm

    traced = torch.compile(epilogue(op), fullgraph=True, dynamic=False, backend=aot_autograd(fw_compiler=record))
    try:
        traced(x)
    except Exception as e:  # noqa: BLE001 (on CPU the recorded graph cannot run its GPU kernel: the trace suffices)
        if not graphs:
            return f"trace failed: {type(e).__name__}: {first_line(e)}"
    clones = [n.kwargs.get("tensors_to_clone") for g in graphs for n in g.graph.nodes if "tensors_to_clone" in n.kwargs]
    return f"{clones}\n\n```\n{graphs[0].code.strip()}\n```" if graphs else "no graph"


def measure(rows: list, large: torch.Tensor, small: torch.Tensor, rounds: int) -> dict:
    """Per working row: GB/s on `large`, host and back-to-back µs on `small`, kernel names
    (a measurement that fails shows its error in place of the number)."""
    results = {}
    for mode, name, fn in rows:
        results[(mode, name)] = {"gbps": safe(gbps, fn, large), "kernels": safe(cuda_kernels, fn, small)}
    calls = [lambda fn=fn: fn(small) for _, _, fn in rows]
    for column, timer in (("host", host_only_us), ("back", per_call_us)):
        times = safe(median_us, calls, rounds, timer)
        for mode, name, _ in rows:
            results[(mode, name)][column] = times.pop(0) if isinstance(times, list) else times
    return results


def safe(measure_fn, *args):
    try:
        return measure_fn(*args)
    except Exception as e:  # noqa: BLE001 (report it in place of the number)
        return f"n/a ({type(e).__name__}: {first_line(e)})"


# ---------------------------------------------------------------------------------------------
# Report


def table(rows: list, checks: dict, results: dict) -> str:
    lines = [
        "| mode | variant | check | GB/s 2^26 | host µs 1024 | back-to-back µs 1024 | kernels |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, name, _ in rows:
        r = results.get((mode, name))
        if r is None:
            lines.append(f"| {mode} | {name} | {checks[(mode, name)]} | — | — | — | — |")
            continue
        kernels = r["kernels"]
        count = len(kernels) if isinstance(kernels, list) else kernels
        numbers = f"{number(r['gbps'], '.0f')} | {number(r['host'], '.2f')} | {number(r['back'], '.2f')}"
        lines.append(f"| {mode} | {name} | {checks[(mode, name)]} | {numbers} | {count} |")
    return "\n".join(lines)


def number(value, spec: str) -> str:
    return format(value, spec) if isinstance(value, float) else str(value)


def kernel_names(results: dict) -> str:
    lines = []
    for (mode, name), r in results.items():
        kernels = r["kernels"]
        shown = ", ".join(kernels) if isinstance(kernels, list) else kernels
        lines.append(f"- {mode} / {name}: {shown}")
    return "\n".join(lines)


def header(device: str) -> str:
    gpu = torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton interpreter)"
    return f"Device: {gpu}; torch {torch.__version__}; triton {triton.__version__}"


# ---------------------------------------------------------------------------------------------


def inputs_for(device: str, smoke: bool) -> tuple:
    """(large, small, extra check inputs). Smoke runs keep every tensor small; the extra inputs
    (an odd size; a broadcast row, which takes the 'nd' scheme with BLOCK_M and BLOCK_N) only check."""
    torch.manual_seed(0)
    large = torch.randn(4096 if smoke else LARGE, device=device)
    small = torch.randn(SMALL, device=device)
    extra = [torch.randn(1000, device=device), torch.randn(48, device=device).expand(40, 48)]
    return large, small, extra


def inductor_settings(pairs: list) -> str:
    """Apply `--inductor KEY=VALUE` settings to torch._inductor.config; a line saying what was set
    and what this torch lacks (e.g. epilogue_fusion_user_defined_triton_kernel, a newer flag)."""
    applied, missing = [], []
    for pair in pairs:
        key, _, text = pair.partition("=")
        value = {"1": True, "true": True, "0": False, "false": False}.get(text.lower(), text)
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        if hasattr(torch._inductor.config, key):
            setattr(torch._inductor.config, key, value)
            applied.append(f"{key}={value!r}")
        else:
            missing.append(key)
    text = f"Inductor settings: {', '.join(applied) or 'defaults'}"
    return text + (f"; not in this torch: {', '.join(missing)}" if missing else "")


def configure_compile(device: str) -> None:
    """No FX or AOT cache (their keys miss a kernel picked at run time), room for every variant's
    recompiles of g (one per input layout, all through the same code object); on CPU, quiet the
    warning that Inductor's mutation analysis of the kernel needs a GPU driver (it then assumes
    every tensor argument is written)."""
    for module, flag in (
        (torch._inductor.config, "fx_graph_cache"),
        (torch._functorch.config, "enable_autograd_cache"),
    ):
        if hasattr(module, flag):
            setattr(module, flag, False)
    room_for_recompiles()
    if device == "cpu":
        logging.getLogger("torch._dynamo").addFilter(lambda record: "exception in identify_" not in record.getMessage())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    smoke_arguments(parser)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the µs timings (median)")
    parser.add_argument(
        "--inductor",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set torch._inductor.config.KEY before compiling, e.g. epilogue_fusion_user_defined_triton_kernel=1",
    )
    args = parser.parse_args(argv)
    smoke = smoke_run(args, "torch_op_vs_triton_op")
    if smoke is None:
        return 2
    configure_compile(args.device)
    settings = inductor_settings(args.inductor)

    large, small, extra = inputs_for(args.device, smoke)
    inputs = [large, small, *extra]
    for x in inputs:
        plan_for(x)  # every plan exists before anything is traced
    rows = eager_variants() + ([] if args.no_compile else compiled_variants(args.device))
    checks = {(mode, name): check(mode, fn, inputs) for mode, name, fn in rows}
    for key, status in checks.items():
        print(f"{key[0]:8} {key[1]:24} {status}", flush=True)

    working = [r for r in rows if checks[(r[0], r[1])] == "ok"]
    results = {} if smoke else measure(working, large, small, args.rounds)
    clones = None if args.no_compile else safe(inductor_clones, torch.ops.tw_bench.silu_triton, small)

    print(f"\n{header(args.device)}\n{settings}\n\n{table(rows, checks, results)}")
    if results:
        print(f"\nKernels per call (1024 elements):\n{kernel_names(results)}")
    if clones is not None:
        note = " (on CPU the analysis has no GPU target: every tensor argument)" if args.device == "cpu" else ""
        print(f"\nInductor clones for the triton_op's kernel (tensors_to_clone){note}, and the forward graph: {clones}")
    return 0 if all(status == "ok" for status in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
