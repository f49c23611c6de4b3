"""What tritonwise does on every supported Triton: a CPU launch leaves triton.language as it
found it (Triton before 3.6 patched it for its interpreter for good)."""

import inspect

import torch
import triton
import triton.language as tl

from tritonwise import pointwise_dynamic


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def pick(x, y):
    return tl.where(x > y, x, tl.maximum(x, y) * 2)


NAMESPACES = {"tl": tl, "tl.core": tl.core, "tl.tensor": tl.tensor, "tl.math": tl.math}


def _members() -> dict:
    """What each name of each namespace resolves to, inherited members included (Triton 3.6 on
    restores an inherited member as an attribute of the class, the same object)."""
    return {
        f"{space}.{name}": inspect.getattr_static(obj, name, None)
        for space, obj in NAMESPACES.items()
        for name in dir(obj)
        if name != "__annotations__"  # Python makes a class's on first access
    }


def test_a_cpu_launch_leaves_triton_language_as_it_was():
    before = _members()
    x, y = torch.randn(7), torch.randn(7)
    torch.testing.assert_close(pick(x, y), torch.where(x > y, x, torch.maximum(x, y) * 2))
    after = _members()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) is not after.get(name))
    assert not changed, f"changed by a CPU launch: {changed}"
