"""Calls recorded for autograd in C++ (runtime/recording.h) on the CPU: a record made by
`hit_path.recording` gives the launched call's outputs a C++ node whose backward calls the
recorder's Python backward with the saved arguments, and keeps what torch.autograd.Function keeps
(version checks, freed buffers, grad mode, forward-mode refusals). The stand-in driver launches
nothing, so the outputs' values are not checked here; tests/gpu/test_gpu_autograd.py checks the
gradients of real kernels through this path."""

import functools
import gc
import weakref
from types import SimpleNamespace

import pytest
import torch
import torch.autograd.forward_ad as fwad

from tests.runtime.test_hit_path import FakeDriver, Function, _record, aten_helpers, module  # noqa: F401 (fixtures)
from tests.runtime.test_plan_index import WITH_ATEN, _plan, served  # noqa: F401 (a fixture)
from tritonwise.runtime import arguments, hit_path


class Backward:
    """A recorder's backward: each needed tensor argument's gradient is `scale` times the output's."""

    def __init__(self, scale=2.0):
        self.calls, self.scale = [], scale

    def __call__(self, args, grads, needs):
        self.calls.append((args, grads, needs))
        flowing = next(g for g in grads if g is not None)
        return [flowing * self.scale if need else None for need in needs]


@pytest.fixture
def recorded(served):
    """(f, driver, backward): a Function whose one plan records add(x, y, alpha) calls."""
    cls = served
    driver, backward = FakeDriver(), Backward()

    def make(x, y, alpha=0.5, differentiable=(True,)):
        record = hit_path.recording(_plan(driver, 0x1000).hit, (backward, differentiable))
        return cls({arguments.call_signature((x, y, alpha)): SimpleNamespace(hit=record)})

    return make, driver, backward


def _inputs():
    return torch.randn(4, 3, requires_grad=True), torch.randn(4, 3)


@WITH_ATEN
def test_a_recorded_call_backpropagates_through_the_recorders_backward(recorded):
    make, driver, backward = recorded
    x, y = _inputs()
    out = make(x, y)(x, y, 0.5)
    assert len(driver.launches) == 1 and out.requires_grad and out.grad_fn.name() == "TritonwiseBackward"
    out.backward(torch.full((4, 3), 3.0))
    torch.testing.assert_close(x.grad, torch.full((4, 3), 6.0))
    (args, grads, needs), = backward.calls
    assert torch.equal(args[0], x) and torch.equal(args[1], y) and args[2] == 0.5 and needs == (True, False, False)
    assert not args[0].requires_grad  # detached, as _Record's saved tensors: the backward's calls take the C path
    assert torch.equal(grads[0], torch.full((4, 3), 3.0))


@WITH_ATEN
def test_each_tensor_that_requires_grad_gets_its_own(recorded):
    make, _, backward = recorded
    x, y = torch.randn(4, 3, requires_grad=True), torch.randn(4, 3, requires_grad=True)
    make(x, y)(x, y, 0.5).sum().backward()
    assert torch.equal(x.grad, torch.full((4, 3), 2.0)) and torch.equal(y.grad, torch.full((4, 3), 2.0))
    assert backward.calls[0][2] == (True, True, False)


@WITH_ATEN
def test_under_no_grad_the_call_runs_plain(recorded):
    make, driver, backward = recorded
    x, y = _inputs()
    f = make(x, y)
    with torch.no_grad():
        out = f(x, y, 0.5)
    assert len(driver.launches) == 1 and out.grad_fn is None and not out.requires_grad


@WITH_ATEN
def test_an_input_changed_in_place_before_backward_is_refused(recorded):
    make, _, backward = recorded
    x, y = _inputs()
    leaf = x
    x = x * 1.0  # a non-leaf, so that it may be changed in place
    out = make(x, y)(x, y, 0.5)
    with torch.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    assert backward.calls == [] and leaf.grad is None


@WITH_ATEN
def test_a_second_backward_needs_retain_graph(recorded):
    make, _, _ = recorded
    x, y = _inputs()
    out = make(x, y)(x, y, 0.5).sum()
    out.backward(retain_graph=True)
    out.backward()
    torch.testing.assert_close(x.grad, torch.full((4, 3), 4.0))
    with pytest.raises(RuntimeError, match="second time|already been freed"):
        out.backward()


@WITH_ATEN
def test_an_error_in_the_backward_reaches_the_caller(recorded):
    make, _, backward = recorded
    x, y = _inputs()
    backward.scale = None  # grads[0] * None raises a TypeError
    out = make(x, y)(x, y, 0.5)
    with pytest.raises(TypeError):
        out.sum().backward()


@WITH_ATEN
def test_an_output_that_is_not_differentiable_gets_no_node(recorded):
    make, driver, _ = recorded
    x, y = _inputs()
    out = make(x, y, differentiable=(False,))(x, y, 0.5)
    assert len(driver.launches) == 1 and out.grad_fn is None and not out.requires_grad


@WITH_ATEN
def test_a_dual_tensor_is_left_to_python(recorded):
    """Forward-mode gradients are not recorded in C: the call falls back, launching nothing."""
    make, driver, _ = recorded
    x, y = _inputs()
    f = make(x, y)
    with fwad.dual_level():
        dual = fwad.make_dual(x.detach().requires_grad_(), torch.ones(4, 3))
        assert f(dual, y, 0.5)[0] == "Python"
    assert driver.launches == []


@WITH_ATEN
def test_a_record_that_records_is_a_copy_with_its_recorder(recorded):
    make, driver, backward = recorded
    plain = _plan(driver, 0x1000).hit
    record = hit_path.recording(plain, (backward, (True,)))
    assert plain.recorder is None and record.recorder == (backward, (True,))
    assert (record.function, record.threads, record.layouts) == (plain.function, plain.threads, plain.layouts)
    with pytest.raises(TypeError):
        hit_path.recording(object(), (backward, (True,)))


def test_without_the_aten_helpers_a_recording_record_is_left_to_python(module, recorded):
    if module.call_words((torch.ones(1),)) is not None:
        pytest.skip("the ATen helpers are in use in this parametrization")
    make, driver, _ = recorded
    x, y = _inputs()
    assert make(x, y)(x, y, 0.5)[0] == "Python" and driver.launches == []


def _no_gradients(fn, args, grads, needs):
    return [None] * len(needs)


@WITH_ATEN
def test_a_function_whose_plans_record_is_collected(served):
    """The recorder holds the function, whose plans (and plan index) hold the record: Record and
    CallTables take part in garbage collection, so the cycle is freed."""
    cls = served
    x, y = _inputs()
    f = cls({})
    record = hit_path.recording(_plan(FakeDriver(), 0x1000).hit, (functools.partial(_no_gradients, f), (True,)))
    f._plans.by_key[arguments.call_signature((x, y, 0.5))] = SimpleNamespace(hit=record)
    f(x, y, 0.5)  # served and held by the plan index too
    collected = weakref.ref(f)
    del f, record
    gc.collect()
    assert collected() is None


@WITH_ATEN
def test_a_recorder_that_does_not_fit_the_record_is_refused(recorded):
    plain = _plan(FakeDriver(), 0x1000).hit
    for recorder in [(Backward(),), ("not callable", (True,)), (Backward(), (True, True)), (Backward(), (1,))]:
        with pytest.raises(ValueError, match="recorder"):
            hit_path.recording(plain, recorder)


@WITH_ATEN
def test_of_two_outputs_only_the_differentiable_one_records(served):
    cls = served
    backward, x, y = Backward(), *_inputs()
    record = hit_path.recording(_record(FakeDriver(), outputs=2), (backward, (False, True)))
    f = cls({arguments.call_signature((x, y, 0.5)): SimpleNamespace(hit=record)})
    first, second = f(x, y, 0.5)
    assert first.grad_fn is None and second.grad_fn.name() == "TritonwiseBackward"
    second.backward(torch.ones(4, 3))
    (_, grads, _), = backward.calls
    assert grads[0] is None and torch.equal(grads[1], torch.ones(4, 3))
    torch.testing.assert_close(x.grad, torch.full((4, 3), 2.0))
