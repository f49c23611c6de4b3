"""Run by frontend/test_arguments.py in a subprocess (a crash must fail a test, not end the session):
views whose element offsets pass 2**31 in a uint8 storage just over 2 GiB, on CPU, against
torch. Each kernel is an int64 one; the interpreter once ran its `row * stride` in int32 and
read outside the storage (a segmentation fault). Prints "ok" at the end."""

import faulthandler

import torch
import triton
import triton.language as tl  # noqa: F401  (TRITON_INTERPRET=1 wants it in the payload's module)

from tritonwise import StridedBuffer, pointwise_dynamic

faulthandler.enable()


@triton.jit
def identity(x):
    return x


@triton.jit
def add(x, y):
    return x + y


copy = pointwise_dynamic(identity, promotion_methods=[(0, "NO_OPMATH")])
twice = pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")])
twice_sum = pointwise_dynamic(add, promotion_methods=[(0, 1, "DEFAULT")], reductions=["sum"])

ROW = 537133056  # rows 4 * ROW apart: past 2**31 from the fourth row on
base = torch.zeros(2**31 + 2**21, dtype=torch.uint8)
views = {
    "rows": base.as_strided((5, 4096), (ROW, 1)),
    "two columns": base.as_strided((64, 2), (1, 2**31)),
    "transposed": base.as_strided((64, 64), (1, 34100000)),  # column 63 starts past 2**31
}
gen = torch.Generator().manual_seed(0)
for v in views.values():
    v.copy_(torch.randint(1, 256, v.shape, generator=gen, dtype=torch.uint8))

for name, v in views.items():
    assert copy.explain(v).index_bits == 64, name
    assert torch.equal(copy(v), v.clone()), name
    assert torch.equal(twice(v, v), v + v), name
    assert twice_sum(v, v).item() == (v + v).sum().item(), name

t = views["transposed"]
out = torch.full(t.shape, 77, dtype=torch.uint8)
assert copy.explain(t, out0=out).scheme == "tile2d"
assert copy(t, out0=out) is out and torch.equal(out, t)

flipped = StridedBuffer(base, (5, 4096), (-ROW, 1), offset=4 * ROW)
out = torch.full((5, 4096), 77, dtype=torch.uint8)
assert copy.instantiate(2)(flipped, out0=out) is out
assert torch.equal(out, views["rows"].flip(0))
print("ok")
