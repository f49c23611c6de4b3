"""The plan index (launch.c's index.h) on the CPU: a call's words are equal exactly where its
signatures are, and the index serves, forgets and hands back what it holds as the plan cache
expects. The stand-in driver and records are test_hit_path's."""

import itertools
import threading
from types import SimpleNamespace

import pytest
import torch

from tests.runtime.test_hit_path import (  # noqa: F401 (fixtures)
    ARGS_OF_EVERY_KIND,
    FakeDriver,
    Function,
    Hooks,
    aten_helpers,
    module,
)
from tritonwise.runtime import arguments, hit_path
from tritonwise.runtime.launcher import CLaunch
from tritonwise.runtime.hit_path import MISS

WITH_ATEN = pytest.mark.parametrize("module", ["ATen helpers"], indirect=True)

x, y = torch.randn(4, 3), torch.randn(4, 3)
NEAR_NEIGHBOURS = [  # calls that differ from (x, y, 0.5) in one field of the signature each
    (x, y, 0.5),
    (x, y, 1.5),  # another float: the same signature
    (x, y, 2),
    (x, y, True),
    (x, y.double(), 0.5),
    (x, y.t().contiguous().t(), 0.5),  # the same shape, other strides
    (x, y.view(3, 4), 0.5),
    (x, y[1:], 0.5),
    (x, torch.randn(13)[1:].view(4, 3), 0.5),  # 4 bytes past alignment
    (x, y.clone().requires_grad_(), 0.5),
    (x, torch.randn(4, 3, dtype=torch.complex64).conj().imag, 0.5),  # the negative bit
    (x, torch.randn(4, 3, device="meta"), 0.5),
    (x, y),
    (x, y, 0.5, 0.5),
    (y, x, 0.5),
]


@WITH_ATEN
def test_words_are_equal_exactly_where_signatures_are(module):
    calls = [args for args in NEAR_NEIGHBOURS + ARGS_OF_EVERY_KIND if module.call_words(args) is not None]
    assert len(calls) >= len(NEAR_NEIGHBOURS) + 5
    for a, b in itertools.product(calls, repeat=2):
        same = arguments.call_signature(a) == arguments.call_signature(b)
        assert (module.call_words(a) == module.call_words(b)) == same, (a, b)


@WITH_ATEN
def test_given_outputs_have_words_as_they_have_a_signature(module):
    out, other = torch.empty(4, 3), torch.empty(3, 4).t()
    outs = [(None,), (out,), (other,), (out, None), (None, out)]
    for a, b in itertools.product(outs, repeat=2):
        same = arguments.call_signature((x, y), a) == arguments.call_signature((x, y), b)
        assert (module.call_words((x, y), a) == module.call_words((x, y), b)) == same, (a, b)
    assert module.call_words((x, y), (None,)) == module.call_words((x, y))


@WITH_ATEN
@pytest.mark.parametrize(
    "args",
    [(x, torch.nn.Parameter(y)), (x, None), (x, "text"), (x, 2**31), (x, 1.0 + 0j), (x, torch.float32)],
    ids=["a subclass", "None", "str", "a wide int", "complex", "dtype"],
)
def test_operands_keyed_in_python_have_no_words(module, args):
    """Such calls take serve()'s path, where Python keys what C does not."""
    assert module.call_words(args) is None
    assert module.call_words((x, y), ("not a tensor",)) is None


def test_without_the_aten_helpers_no_call_has_words(module):
    if module.call_words((x, y)) is not None:
        pytest.skip("the ATen helpers are in use in this parametrization")
    assert module.call_words((0.5,)) is None


def _plan(driver, function: int):
    """A plan for add(x, y, alpha) launching the stand-in kernel `function`."""
    fixed = bytes(8) + bytes(16)
    launch = CLaunch(driver.address, function, (1, 1, 1), 128, 0, 0, b"ppfp", fixed)
    return SimpleNamespace(hit=hit_path.record((4, 3), (((3, 1), torch.float32),), torch.device("cpu"), launch))


@pytest.fixture
def served(module):
    """A Function class whose __call__ is call.h's C method."""
    cls = type("Served", (Function,), {})
    cls.__call__ = module.call_method(Function._call_missed, SimpleNamespace(entry=module.hit))
    return cls


def _launched(driver) -> int:
    return driver.launches[-1][0][0]


@WITH_ATEN
def test_a_held_call_launches_from_the_index_until_the_cache_puts(served):
    driver, key = FakeDriver(), arguments.call_signature((x, y, 0.5))
    f = served({key: _plan(driver, 0x1000)})
    f(x, y, 0.5)
    f._plans.by_key[key] = _plan(driver, 0x2000)  # behind the index's back: it still holds 0x1000
    f(x, y, 1.5)
    assert _launched(driver) == 0x1000
    f._plans.put(arguments.call_signature((x, y, 2)), _plan(driver, 0x3000))
    f(x, y, 0.5)
    assert _launched(driver) == 0x2000 and f._plans.hits == 3


@WITH_ATEN
def test_the_cache_counts_what_the_index_served_as_used(served):
    """A plan only the index has served in a while is not the one a put evicts."""
    driver = FakeDriver()
    a, b = (x, y, 0.5), (x, y.double(), 0.5)
    f = served({arguments.call_signature(a): _plan(driver, 0xA), arguments.call_signature(b): _plan(driver, 0xB)})
    f._plans.capacity = 2
    f(*a), f(*b), f(*a), f(*a)  # the last two from the index: the dict's order is still (a, b)
    assert list(f._plans.by_key) == [arguments.call_signature(a), arguments.call_signature(b)]
    f._plans.put(arguments.call_signature((x, y, 2)), _plan(driver, 0xC))
    assert arguments.call_signature(a) in f._plans.by_key
    assert arguments.call_signature(b) not in f._plans.by_key
    assert f._c_tables.forget() == []  # the put emptied it


@WITH_ATEN
def test_more_calls_than_slots_keep_the_most_recent(served):
    driver = FakeDriver()
    shapes = [(n, 3) for n in range(1, 12)]
    calls = [(torch.randn(*s), torch.randn(*s), 0.5) for s in shapes]
    f = served({arguments.call_signature(c): _plan(driver, 0x100 + k) for k, c in enumerate(calls)})
    for k, c in enumerate(calls + calls[-3:]):
        f(*c)
        assert _launched(driver) == 0x100 + (k if k < len(calls) else k - 3)
    held = f._c_tables.forget()
    assert held[-3:] == [arguments.call_signature(c) for c in calls[-3:]] and len(held) < len(calls)


@WITH_ATEN
def test_a_hook_turns_the_index_off_as_it_does_the_cache(module, served):
    driver, key = FakeDriver(), arguments.call_signature((x, y, 0.5))
    f = served({key: _plan(driver, 0x1000)})
    f(x, y, 0.5)
    hit_path.configure(module, raw_stream=lambda device: 0, hooks=Hooks(enter=[print]), current_device=None)
    assert f(x, y, 0.5)[0] == "Python" and len(driver.launches) == 1
    assert module.hit(f._plans.by_key, (x, y, 0.5), MISS)[0] is MISS


class ThreadsDriver(FakeDriver):
    """The stand-in driver, keeping the kernels each thread launched, in order."""

    def __init__(self):
        self.by_thread = {}
        super().__init__()

    def _launch(self, function, *rest):
        self.by_thread.setdefault(threading.current_thread().name, []).append(function)  # idents are reused
        return super()._launch(function, *rest)


@WITH_ATEN
def test_threads_calling_more_signatures_than_slots_launch_each_its_own(served):
    """Four threads cycle through twelve signatures, so the index fills, evicts and is emptied by
    puts while others read it: every call launches its own signature's kernel."""
    driver = ThreadsDriver()
    calls = [(torch.randn(n, 3), torch.randn(n, 3), 0.5) for n in range(1, 13)]
    f = served({arguments.call_signature(c): _plan(driver, 0x100 + k) for k, c in enumerate(calls)})
    wanted = {}

    def run(offset):
        order = [(offset + step) % len(calls) for step in range(150)]
        wanted[threading.current_thread().name] = [0x100 + k for k in order]
        for step, k in enumerate(order):
            f(*calls[k])
            if step % 50 == 0:
                f._plans.put(("another signature", offset, step), _plan(driver, 0x999))

    threads = [threading.Thread(target=run, args=(3 * t,), name=f"caller {t}") for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert driver.by_thread == wanted
