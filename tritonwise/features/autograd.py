"""Autograd for pointwise functions: a call whose inputs require grad records itself.

The backward is another PointwiseDynamicFunction over a backward payload, derived from the forward
payload (autodiff/derivative.py) or given by hand (`backward=` / `register_backward`), written to
the cache like generated kernels. It takes the forward's arguments, one gradient per output (then
each max/min output's value) and returns the gradient of each input that needs one over the task
shape, summed to broadcast inputs' shapes. Only floating tensor inputs that require grad get one.
Double backward is not supported.

A call is first recorded by `_Record`, a torch.autograd.Function. Where the C hit path serves its
plain call, its signature then gets a RecordingPlan, and later calls of it are launched and
recorded in C (runtime/recording.h: one C++ node, no Python frame), with the same backward.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Optional

import torch

from ..autodiff.derivative import derive, ties_source
from ..frontend.payload import inspect_payload
from ..frontend.schema import FunctionSchema
from ..frontend.validation import output_keywords
from ..plans.derived_payloads import derived_payload
from ..plans.memo import remember
from ..runtime import hit_path
from ..runtime.arguments import call_signature

DOUBLE_BACKWARD = (
    "tritonwise: double backward is not supported: the backward of a pointwise function (its "
    "generated backward kernel) is not itself differentiable; differentiate once, or write the "
    "expression with torch operations for higher-order gradients"
)

_DERIVED = "symbolic differentiation (tritonwise/autodiff/derivative.py)"


@dataclass(frozen=True)
class BackwardFunction:
    """The backward for one set of inputs: `function` gives the gradients of `wrt`; `path`: its file or None."""

    function: object
    wrt: tuple
    path: Optional[str]


class Backward:
    """Backward functions of one PointwiseDynamicFunction, one per set of inputs needing grad."""

    def __init__(self, forward, payload=None):
        self.forward = forward
        self.given = None if payload is None else inspect_payload(payload)
        if self.given is not None:
            schema, extremes = forward.schema, sum(r in ("max", "min") for r in forward.reduction_kinds)
            count = schema.num_inputs() + schema.num_outputs() + extremes
            what = f"the backward of {forward.__name__} ({schema.num_inputs()} arguments, then one gradient per output"
            self.given.check_arity(count, what + (", then each max/min result)" if extremes else ")"))
        self._functions: dict = {}
        self._ties: dict = {}
        self._checked: dict = {}  # argument kinds -> `check_call`'s answer
        self.unrecorded: dict = {}  # signatures C cannot record (autograd._publish declined them)
        self._lock = threading.RLock()  # _build asks again for a smaller set of inputs

    def for_inputs(self, wrt: tuple) -> BackwardFunction:
        found = self._functions.get(wrt)
        if found is None:
            with self._lock:
                found = self._functions.get(wrt) or self._build(wrt)
                self._functions[wrt] = found
        return found

    def check_call(self, args: tuple, outs: tuple) -> bool:
        """Whether any argument of a call under grad is not a tensor (what its forward saves), the call
        checked once per its arguments' kinds (the refusals, the backward function built); a call
        giving outputs is refused each time."""
        kinds = tuple((a.dtype, a.requires_grad) if isinstance(a, torch.Tensor) else None for a in args)
        found = self._checked.get(kinds)
        if found is None or any(o is not None for o in outs):
            found = self._check(args, outs)
            remember(self._checked, kinds, found)
        return found

    def _check(self, args: tuple, outs: tuple) -> bool:
        name = self.forward.__name__
        if any(isinstance(a, torch.Tensor) and a.is_complex() and a.requires_grad for a in args):
            raise RuntimeError(f"{name}: autograd of complex inputs is not supported (an argument requires grad)")
        if any(o is not None for o in outs):
            raise RuntimeError(
                f"{name}: given outputs (out0=...) do not support automatic differentiation, "
                "but an argument requires grad; drop the output arguments or call under torch.no_grad()"
            )
        needs = tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        self.for_inputs(wanted_inputs(args, needs))  # a construct it cannot derive fails here
        return not all(isinstance(a, torch.Tensor) for a in args)

    def _build(self, wrt: tuple) -> BackwardFunction:
        fn = self.forward
        if self.given is not None:
            tensors = tuple(i for i in range(fn.schema.num_inputs()) if fn.schema.is_tensor(i))
            return BackwardFunction(self._function(self.given.jit, len(tensors)), tensors, None)
        payload = fn.payload_info
        source = derive(payload.source, payload.fn.__globals__, payload.name, wrt, fn.reduction_kinds)
        active = tuple(i for i, grad in zip(wrt, source.returns) if grad)
        if not active:
            return BackwardFunction(None, (), None)
        if active != wrt:
            return self.for_inputs(active)
        jit, path = derived_payload(source.name, source.source, "is the backward payload", payload, _DERIVED)
        return BackwardFunction(self._function(jit, len(wrt)), wrt, str(path))

    def _function(self, jit, count: int):
        """A function of the forward's arguments, output gradients and reduced values, in its precision."""
        schema, reductions = self.forward.schema, self.forward.reduction_kinds
        n, k = schema.num_inputs(), schema.num_outputs()
        named = sorted({i for m in range(k) for i in schema.output_type(m)[:-1]}) + list(range(n, n + k))
        extra = k + sum(r in ("max", "min") for r in reductions)
        return self.forward.sibling(jit, self._schema(extra, [(*named, "DEFAULT")] * count))

    def _schema(self, extra: int, promotion_methods: list) -> FunctionSchema:
        """The forward's inputs, then `extra` tensors of any dtype."""
        schema = self.forward.schema
        n = schema.num_inputs()
        return FunctionSchema(
            is_tensor=[schema.is_tensor(i) for i in range(n)] + [True] * extra,
            dtypes=[schema.input_type(i) for i in range(n)] + [None] * extra,
            promotion_methods=promotion_methods,
        )

    def ties(self, output: int):
        """The function counting the elements equal to the max/min of `output`."""
        found = self._ties.get(output)
        if found is None:
            fn, payload = self.forward, self.forward.payload_info
            name, source = ties_source(payload.source, payload.name, output)
            jit, _ = derived_payload(name, source, "counts the ties of a max/min output", payload, _DERIVED)
            schema = self._schema(1, [(*sorted(set(fn.schema.output_type(output)[:-1])), "ALWAYS_BOOL")])
            found = self._ties[output] = fn.sibling(jit, schema, reductions=["sum"])
        return found


def call(fn, args: tuple, outs: tuple, publish: bool = True):
    """A call of `fn` some of whose tensor arguments require grad; `publish`: cache a
    RecordingPlan for its signature where C can record its later calls."""
    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    if not torch.is_grad_enabled():
        return fn(*plain, **output_keywords(outs))
    scalars = fn.backward_functions().check_call(args, outs)
    results = _Record.apply(fn, scalars, plain, *args)
    if publish:  # check_call refused given outputs
        _publish(fn, args, plain)
    return results[0] if len(results) == 1 else results


class RecordingPlan:
    """The plan cache's entry for a signature that autograd records: C launches the forward
    plan's kernel from `hit` and records the call in C++ (runtime/recording.h); the Python path
    records it through `call` as before."""

    fast = None  # no plain allocate-and-launch: every call records

    def __init__(self, fn, forward, hit):
        self.fn, self.forward, self.hit = fn, forward, hit

    def serves_default_dtype(self) -> bool:
        return self.forward.serves_default_dtype()

    def run(self, args: tuple, outs: tuple):
        return call(self.fn, args, outs, publish=False)


def _publish(fn, args: tuple, plain: tuple) -> None:
    """Cache a RecordingPlan for the signature of `args`, where the C hit path serves the plain
    call (`plain`) and every argument is a plain CUDA tensor or a python scalar."""
    if hit_path.entry is None or not hit_path.records_in_c():
        return
    if any(kind in ("max", "min") for kind in fn.reduction_kinds):
        return  # the C++ node saves no max/min results
    if not all(type(a) in (int, float, bool) or (type(a) is torch.Tensor and a.is_cuda) for a in args):
        return  # C launches CUDA kernels only
    plans, key, declined = fn.plan_cache, call_signature(args), fn.backward_functions().unrecorded
    if key in plans.by_key or key in declined:
        return
    forward = _forward_plan(fn, plain)
    launching = getattr(forward, "direct", True) is None and getattr(forward, "hit", True) is None
    if forward is not None and getattr(forward, "numel", 0) and launching:
        return  # launched through ctypes while launch.c builds (runtime/kernels.first_launch): ask again later
    if forward is None or getattr(forward, "hit", None) is None:
        remember(declined, key, True)
        return
    recorder = (functools.partial(backward_of, fn), tuple(dtype.is_floating_point for dtype in forward.out_dtypes))
    plans.put(key, RecordingPlan(fn, forward, hit_path.recording(forward.hit, recorder)))


def _forward_plan(fn, plain: tuple):
    """The plan that served the plain call: the cached one, or where a shape program served it, its
    plan, launched once for its launch record; None where routing took the call (a negative view)."""
    rung = fn.rung(plain)
    if rung == "plan cache":
        return fn.plan_cache.by_key.get(call_signature(plain))
    if rung != "shape program":
        return None
    forward = fn.plan(plain)
    forward.run(plain, (None,) * len(forward.out_dtypes))
    return forward


def backward_of(fn, args: tuple, grads: tuple, needs: tuple, extremes=()) -> list:
    """The gradient of each argument of a recorded call of `fn` (None where none is wanted):
    what _Record.backward runs, and what C++'s recorded node calls (runtime/recording.h)."""
    functions = fn.backward_functions()
    wanted = wanted_inputs(args, needs)
    with torch.no_grad():
        backward = functions.for_inputs(wanted)
        result = gradients(
            fn.reduction_kinds, args, list(grads), list(extremes), wanted, backward.function, backward.wrt,
            functions.ties,
        )
    if torch.is_grad_enabled():  # create_graph=True: differentiating this would be wrong
        result = _double_backward_error(result)
    return result


def wanted_inputs(args: tuple, needs: tuple) -> tuple:
    """Payload positions of the floating tensor inputs whose gradient is asked for."""
    return tuple(
        i
        for i, (a, need) in enumerate(zip(args, needs))
        if need and isinstance(a, torch.Tensor) and a.is_floating_point()
    )


class _Record(torch.autograd.Function):
    """One recorded call: forward runs the kernel; backward runs the backward function."""

    @staticmethod
    def forward(ctx, fn, scalars, plain, *args):
        results = fn(*plain)
        results = results if isinstance(results, tuple) else (results,)
        integral = [r for r in results if not r.is_floating_point()]
        if integral:
            ctx.mark_non_differentiable(*integral)
        ctx.set_materialize_grads(False)
        ctx.fn = fn
        save_operands(ctx, plain, results, fn.reduction_kinds, scalars)
        return results

    @staticmethod
    def backward(ctx, *grads):
        args, extremes = saved_operands(ctx)
        return (None, None, None, *backward_of(ctx.fn, args, grads, ctx.needs_input_grad[3:], extremes))


def save_operands(ctx, args: tuple, results: tuple, reductions: tuple, scalars: bool = True) -> None:
    """Keep a call's arguments (python scalars as they are; `scalars` False: every argument is a
    tensor, nothing to sort) and its max/min results for the backward."""
    extremes = [r for r, kind in zip(results, reductions) if kind in ("max", "min")]
    if not scalars:
        ctx.scalars = (None,) * len(args)
        ctx.save_for_backward(*args, *extremes)
        return
    ctx.scalars = tuple(None if isinstance(a, torch.Tensor) else a for a in args)
    ctx.save_for_backward(*[a for a in args if isinstance(a, torch.Tensor)], *extremes)


def saved_operands(ctx) -> tuple:
    """(arguments, max/min results) that save_operands kept."""
    saved = iter(ctx.saved_tensors)
    return tuple(next(saved) if s is None else s for s in ctx.scalars), list(saved)


def gradients(reductions, args, grads, extremes, wanted, run, computed: tuple, ties) -> list:
    """Per argument its gradient or None, from `run(*args, *grads, *extremes)` and `ties(k)(*args,
    extreme)` (the count of elements equal to output k's max/min, sharing its gradient)."""
    result = [None] * len(args)
    if run is None:
        return result
    device = next(a.device for a in args if isinstance(a, torch.Tensor))
    grads = [torch.zeros((), dtype=torch.float32, device=device) if g is None else g for g in grads]
    for position, k in enumerate(k for k, r in enumerate(reductions) if r in ("max", "min")):
        grads[k] = grads[k] / ties(k)(*args, extremes[position])
    values = run(*args, *grads, *extremes)
    values = values if isinstance(values, tuple) else (values,)
    for i, g in zip(computed, values):
        if i in wanted:  # computed over the broadcast shape: summed to the input's shape, in its dtype
            g = g if g.shape == args[i].shape else g.sum_to_size(args[i].shape)
            result[i] = g if g.dtype == args[i].dtype else g.to(args[i].dtype)
    return result


def _double_backward_error(gradients: list) -> list:
    present = [g for g in gradients if g is not None]
    if not present:
        return gradients
    error = torch._C._functions.DelayedError(DOUBLE_BACKWARD, len(present))
    outputs = error(*[g.detach().requires_grad_() for g in present])
    aliases = iter(outputs if isinstance(outputs, tuple) else (outputs,))  # one input: one tensor, not a tuple
    return [None if g is None else next(aliases) for g in gradients]


@dataclass(frozen=True)
class BackwardExplanation:
    """What a call's backward would run: its payload's file and its kernel's Explanation (None: nothing)."""

    wrt: tuple
    payload_path: Optional[str]
    kernel: object

    def __str__(self) -> str:
        lines = [f"gradients of inputs {list(self.wrt)}", f"backward payload: {self.payload_path or '(given by hand)'}"]
        return "\n".join(lines + ([str(self.kernel)] if self.kernel is not None else []))


def explain(fn, args: tuple, wrt: Optional[tuple]) -> BackwardExplanation:
    """`fn.explain_backward(*args)`: the backward for `args`, with gradients like the outputs."""
    if wrt is None:
        wrt = wanted_inputs(args, (True,) * len(args))
    backward = fn.backward_functions().for_inputs(tuple(wrt))
    if backward.function is None:
        return BackwardExplanation(backward.wrt, backward.path, None)
    device = next(a.device for a in args if isinstance(a, torch.Tensor))
    grads, extremes = [], []
    for (shape, strides, dtype), kind in zip(fn.output_meta(*args), fn.reduction_kinds):
        grads.append(torch.empty_strided(shape, strides, dtype=dtype, device=device))
        if kind in ("max", "min"):
            extremes.append(torch.empty((), dtype=dtype, device=device))
    return BackwardExplanation(backward.wrt, backward.path, backward.function.explain(*args, *grads, *extremes))
