"""Every golden case compiles for an H100 (sm_90) with Triton's real compiler, on this CPU machine.

The CPU suite runs kernels in Triton's interpreter, which accepts code the GPU compiler rejects;
compiling the representative generated files (tests/golden) all the way to a cubin here catches
generated code that would only fail on a GPU.
"""

import pytest

from tests.golden.golden_cases import cases
from tests.support.sm90_compile import compile_for_sm90

CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_case_compiles_for_sm90(name):
    fn, args, outs = CASES[name]
    compiled = compile_for_sm90(fn, *args, **outs)
    assert compiled.asm["cubin"], name
    assert compiled.metadata.name.startswith(fn.explain(*args, **outs).kernel)
