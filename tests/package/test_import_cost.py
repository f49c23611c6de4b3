"""What a process pays before its first call: `import tritonwise` and a call whose file is
cached import neither sympy nor jinja2 (only generating a file needs jinja2; nothing needs
sympy), and the restated
type promotion that makes this possible agrees with torch's everywhere."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND as KIND
from torch._prims_common import elementwise_dtypes as torch_elementwise_dtypes

from tests.support.paths import ROOT
from tritonwise.codegen.indexing import operand_access
from tritonwise.frontend.promotion import elementwise_dtypes
from tritonwise.schemes import get_scheme
from tritonwise.schemes.base import runtime_stride_params


DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
]  # fmt: skip
SCALARS = [True, 3, -2.5, 1 + 2j]


def _operands():
    for dtype in DTYPES:
        yield torch.empty((), dtype=dtype)
        yield torch.empty((2,), dtype=dtype)
    yield from SCALARS


@pytest.mark.parametrize("kind", list(KIND), ids=lambda k: k.name)
def test_promotion_agrees_with_torch_on_every_pair(kind):
    for a, b in itertools.product(list(_operands()), repeat=2):
        assert elementwise_dtypes([a, b], kind) == torch_elementwise_dtypes(a, b, type_promotion_kind=kind), (a, b)


@pytest.mark.parametrize("kind", [KIND.DEFAULT, KIND.INT_TO_FLOAT], ids=lambda k: k.name)
def test_promotion_agrees_with_torch_on_triples_and_singles(kind):
    operands = list(_operands())
    for a in operands:
        assert elementwise_dtypes([a], kind) == torch_elementwise_dtypes(a, type_promotion_kind=kind)
    for a, b, c in itertools.islice(itertools.product(operands, repeat=3), 0, None, 7):
        assert elementwise_dtypes([a, b, c], kind) == torch_elementwise_dtypes(a, b, c, type_promotion_kind=kind)


@pytest.mark.parametrize("scheme", ["flat", "nd", "tile2d"])
def test_stride_parameters_without_sympy_match_the_index_expressions(scheme):
    rng = random.Random(0)
    for rank in [1] if scheme == "flat" else range(2, 13):  # ranks past 10 sort stride10 before stride2
        m_dim = rank - 2 if scheme == "tile2d" else None
        for classes in {"".join(rng.choice("01s") for _ in range(rank)) for _ in range(12)} | {"s" * rank}:
            pointer = operand_access("in0", classes, get_scheme(scheme), m_dim).pointer
            assert runtime_stride_params([("in0", classes)]) == sorted(set(re.findall(r"in0_stride\d+", pointer)))


CHILD = r"""
import json, sys, time
started = time.perf_counter()
import torch, triton
imported_base = time.perf_counter()
import tritonwise
imported = time.perf_counter()
after_import = sorted(m for m in ("sympy", "jinja2") if m in sys.modules)
from tests.support import payload_no_tl
add = tritonwise.pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")])
a, b = torch.randn(5, 3), torch.randn(3)
ok = bool(torch.equal(add(a, b), a + b))
print(json.dumps(dict(ok=ok, after_import=after_import,
                      after_call=sorted(m for m in ("sympy", "jinja2") if m in sys.modules),
                      import_ms=1e3 * (imported - imported_base))))
"""


def _child(cache: Path) -> dict:
    env = dict(os.environ, TRITONWISE_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    code = CHILD
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_cached_call_imports_neither_sympy_nor_jinja2_and_generating_imports_no_sympy(tmp_path):
    cold = _child(tmp_path)  # generates the file: needs both
    assert cold["ok"] and cold["after_import"] == [] and cold["after_call"] == ["jinja2"]
    warm = _child(tmp_path)
    assert warm["ok"] and warm["after_import"] == [] and warm["after_call"] == []
