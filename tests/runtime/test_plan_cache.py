"""The launch-plan cache: hit on a repeated signature, miss on anything a plan depends on."""

import threading

import torch
import triton

from tritonwise import pointwise_dynamic
from tritonwise.runtime.arguments import call_signature
from tritonwise.runtime.dispatch import PlanCache


def _fresh_add(is_tensor=(True, True)):
    @triton.jit
    def add(x, y):
        return x + y

    return pointwise_dynamic(add, is_tensor=list(is_tensor), promotion_methods=[(0, 1, "DEFAULT")])


def _counts(fn):
    return fn.plan_cache.hits, fn.plan_cache.misses


def test_second_call_hits_and_each_changed_property_misses():
    fn = _fresh_add()
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    fn(a, b)
    fn(a, b)
    assert _counts(fn) == (1, 1)
    variants = {
        "new values only (hit)": (torch.randn(4, 6), torch.randn(4, 6)),
        "dtype": (a.double(), b),
        "layout class (transposed)": (a, torch.randn(6, 4).t()),
        "shape": (torch.randn(5, 6), torch.randn(5, 6)),
        "pointer alignment": (torch.randn(25)[1:].view(4, 6), b),
    }
    expected_misses = 1
    for name, args in variants.items():
        before = _counts(fn)
        torch.testing.assert_close(fn(*args), args[0] + args[1])
        hit = name.endswith("(hit)")
        expected_misses += not hit
        assert _counts(fn)[1] == expected_misses, name
        assert _counts(fn)[0] == before[0] + hit, name


def test_signature_names_the_device_so_a_plan_never_serves_another():
    cpu, meta = torch.empty(4), torch.empty(4, device="meta")
    assert call_signature((cpu,), (None,)) != call_signature((meta,), (None,))


def test_given_outputs_and_scalar_types_change_the_signature():
    a = torch.randn(3)
    assert call_signature((a, 1.0), (None,)) != call_signature((a, 1), (None,))
    assert call_signature((a, 1.0), (None,)) != call_signature((a, 1.0), (torch.empty(3),))
    assert call_signature((a, 1.0), (None,)) == call_signature((a, 2.5), (None,))


def test_lru_is_bounded_and_evicts_the_least_recently_used():
    cache = PlanCache(capacity=3)
    for key in "abc":
        cache.put(key, key.upper())
    cache.get("a")  # a becomes the most recent
    cache.put("d", "D")
    assert len(cache) == 3 and cache.get("b") is None and cache.get("a") == "A"


def test_plan_cache_is_thread_safe():
    fn = _fresh_add()
    shapes = [(n, 3) for n in range(1, 9)]
    errors = []

    def worker(shape):
        try:
            x = torch.randn(shape)
            for _ in range(3):
                torch.testing.assert_close(fn(x, x), x + x)
        except Exception as e:  # collected and reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in shapes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and fn.plan_cache.misses == len(shapes)


def test_an_int_beyond_int32_gets_its_own_plan():
    """Triton passes such an int as i64: a plan compiled for i32 must not receive it."""

    @triton.jit
    def shift(x, n):
        return x + n

    fn = pointwise_dynamic(shift, is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
    x = torch.arange(-5, 5)
    for n in (3, 7, 2**40, -(2**40), -3):
        torch.testing.assert_close(fn(x, n), x + n)
    assert _counts(fn) == (3, 2)  # misses: the int32 class, then the int64 class (both signs)
    assert call_signature((x, 2**63), ()) != call_signature((x, 2**62), ())


def _same_meta(got, want):
    assert (got.device, got.shape, got.dtype, got.stride()) == (want.device, want.shape, want.dtype, want.stride())


def test_a_new_device_misses_and_meta_tensors_get_meta_outputs():
    """Meta tensors run nothing: outputs with torch's shape, dtype and strides, as torch's ops give."""
    fn = _fresh_add()
    a, b = torch.randn(6, 4).t(), torch.randn(4, 1, dtype=torch.float64)
    torch.testing.assert_close(fn(a, b), a + b)
    torch.testing.assert_close(fn(a, b), a + b)
    assert _counts(fn) == (1, 1)
    ma, mb = a.to("meta"), b.to("meta")
    _same_meta(fn(ma, mb), ma + mb)
    assert _counts(fn) == (1, 2)
    out = torch.empty(4, 6, dtype=torch.float64, device="meta")
    assert fn(ma, mb, out0=out) is out


def test_a_reduction_over_meta_tensors_is_a_0d_meta_tensor():
    @triton.jit
    def squared(x):
        return x * x

    fn = pointwise_dynamic(squared, promotion_methods=[(0, "DEFAULT")], reductions=["sum"])
    x = torch.empty(5, 7, dtype=torch.float16, device="meta")
    _same_meta(fn(x), (x * x).sum())


def test_a_result_dtype_the_default_dtype_decided_follows_set_default_dtype():
    add, x = _fresh_add(is_tensor=(True, False)), torch.arange(4, dtype=torch.int32)
    previous = torch.get_default_dtype()
    try:
        for default in (torch.float32, torch.float64, torch.float32):
            torch.set_default_dtype(default)
            for _ in range(2):  # the second call must not be served the other default's plan
                got = add(x, 2.5)
                assert got.dtype == (x + 2.5).dtype == default
                torch.testing.assert_close(got, x + 2.5)
    finally:
        torch.set_default_dtype(previous)
