"""A new shape of a layout class reuses its generated file, with one of the class's few blocks;
and the file key changes when the code that writes the file changes."""

from __future__ import annotations

import math
import re
import shutil

import pytest
import torch
import triton
import triton.language as tl  # noqa: F401  (as a payload's module usually does; see payload_no_tl for one that does not)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.poison import poisoned_like
from tritonwise import pointwise_dynamic
from tritonwise.codegen import key as generator_key


@pointwise_dynamic(promotion_methods=[(0, 1, "DEFAULT")])
@triton.jit
def add(x, y):
    return x + y


def _flat(n, m):
    return torch.randn(2 * n * m + 1), torch.randn(2 * n * m + 1)


def _nd(n, m):  # a row broadcast: rows x innermost
    return torch.randn(n, m), torch.randn(m)


def _tile2d(n, m):  # one operand transposed
    return torch.randn(n, m), torch.randn(m, n).t()


# (make operands, blocks a file of the class may take): the counts tiling.py documents
SCHEMES = {"flat": (_flat, 1), "nd": (_nd, 6), "tile2d": (_tile2d, 6)}
# extents never multiples of 16, so every shape is in the same (unaligned) class; flat masks only
# its last tile, so every length is in its one (aligned) class
EXTENTS = [2, 3, 5, 7, 9, 13, 17, 31, 33, 63, 65, 100, 127, 129, 255, 257, 300, 1025, 1500]


def _files(directory, payload="add"):
    return sorted(p.name for p in directory.glob(f"{payload}_*.py"))


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_shape_of_a_layout_class_uses_one_file_and_few_blocks(scheme, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    make, count = SCHEMES[scheme]
    blocks = set()
    for n in EXTENTS[::3]:
        for m in EXTENTS:
            plan = add.explain(*make(n, m))
            assert plan.scheme == scheme and plan.aligned == (scheme == "flat")
            assert len(plan.block_choices) == count and plan.block in plan.block_choices
            blocks.add(plan.block)
    assert len(_files(tmp_path)) == 1, _files(tmp_path)
    # the shapes above reach every block of the class but tile2d's (16, 64): a 2-D task it fits
    # is one tile, and takes the smallest tile instead (a batch dim makes it several)
    assert len(blocks | ({(16, 64)} if scheme == "tile2d" else set())) == count
    assert f"of this file's {count} blocks" in str(plan) or count == 1


def test_one_flat_file_serves_every_length(tmp_path, monkeypatch):
    """Whole tiles run unmasked and the last one masked, so odd lengths, multiples of 16 and of the
    block share one class and one file (package/test_kernel_store.py: and one compiled kernel)."""
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    plans = [add.explain(torch.randn(n), torch.randn(n)) for n in (17, 32, 1024, 4096 + 1, 10**6)]
    assert {(p.scheme, p.aligned) for p in plans} == {("flat", True)}
    assert len(_files(tmp_path)) == 1, _files(tmp_path)


@pytest.mark.parametrize("n", [1, 1023, 1024, 1025, 2048, 3 * 1024 + 7])
def test_flat_results_are_right_in_whole_tiles_and_the_last_one(n):
    x, y = torch.randn(n), torch.randn(n)
    out = poisoned_like(x)
    assert add(x, y, out0=out) is out
    torch.testing.assert_close(out, x + y)


@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("n, m", [(6, 10), (9, 7), (3, 300), (40, 70)])
def test_results_are_right_whichever_block_a_shape_takes(scheme, n, m):
    x, y = SCHEMES[scheme][0](n, m)
    want = x + y
    out = poisoned_like(want)
    assert add(x, y, out0=out) is out
    torch.testing.assert_close(out, want)


def test_a_shape_picks_the_largest_block_its_tiles_fill_more_than_half():
    assert add.explain(*_tile2d(6, 10)).block == (16, 16)
    assert add.explain(*_tile2d(9, 7)).block == (16, 16)
    assert add.explain(*_tile2d(8191, 8193)).block == (32, 128)  # unaligned: 32 rows
    assert add.explain(*_tile2d(8192, 8192)).block == (64, 128)  # aligned
    assert add.explain(*_nd(100, 100)).block == (32, 64)
    assert add.explain(*_nd(5, 8192)).block == (2, 1024)


def test_a_task_of_one_or_two_tiles_takes_the_short_block():
    assert add.explain(*_nd(5, 100)).block == (16, 64)  # (32, 64) would make 2 tiles
    assert add.explain(*_nd(128, 8)).block == (16, 16)  # (128, 16) would make 1
    assert add.explain(*_nd(400, 8)).block == (128, 16)  # 4 tiles: the full block
    assert add.explain(*_tile2d(64, 64)).block == (16, 16)  # tile2d: the smallest tile
    assert add.explain(*_tile2d(200, 300)).block == (32, 128)  # 21 tiles: the tile the extents fill


@pytest.fixture
def generator_copy(tmp_path, monkeypatch):
    """The generator's sources copied under tmp_path, which the key then hashes."""
    package = tmp_path / "tritonwise"
    for path in generator_key.generator_files():
        target = package / path.relative_to(generator_key.PACKAGE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    monkeypatch.setattr(generator_key, "PACKAGE_DIR", package)
    generator_key.generator_digest.cache_clear()
    yield package
    generator_key.generator_digest.cache_clear()


@pytest.mark.parametrize("source", ["codegen/body.py", "codegen/indexing.py", "analysis/tiling.py", "templates/nd.py.j2"])
def test_editing_the_code_that_writes_a_file_changes_its_key(generator_copy, source, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path / "cache"))
    x, y = _nd(5, 7)
    before = add.explain(x, y).path
    with open(generator_copy / source, "a") as f:
        f.write("\n# an edit\n")
    generator_key.generator_digest.cache_clear()
    after = add.explain(x, y).path
    assert before != after
    assert len(_files(tmp_path / "cache")) == 2


def test_the_header_names_the_generator_and_triton_version():
    text = open(add.explain(*_nd(3, 5)).path).read()
    assert f"generator {generator_key.generator_digest()}" in text
    assert f"triton {triton.__version__}" in text


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_compiled_kernels_per_file_are_bounded_by_its_blocks(scheme, monkeypatch):
    """On the GPU every shape of the class runs, and Triton compiles at most one kernel per block."""
    monkeypatch.setenv("TRITONWISE_KERNEL_STORE", "0")  # count Triton's own compiled kernels
    from tritonwise.codegen.render import payload_alias
    from tritonwise.runtime.loader import load

    make, count = SCHEMES[scheme]
    for n in EXTENTS[::2]:
        for m in EXTENTS[::2]:
            x, y = (t.cuda() for t in make(n, m))
            torch.testing.assert_close(add(x, y), x + y)
    plan = add.explain(x, y)
    module = load(plan.path, plan.kernel, payload_alias("add", plan.kernel), add.payload_info, "gpu")
    caches = getattr(module, plan.kernel).device_caches
    compiled = sum(len(entry[0]) for entry in caches.values())
    assert 1 <= compiled <= count


@triton.jit
def _identity(x):
    return x


@pytest.mark.parametrize("shape, aligned", [((3, 40, 32), True), ((3, 40, 24), False), ((5, 7, 48), True)])
def test_a_reduction_over_several_dims_is_aligned_by_its_innermost_extent(shape, aligned):
    """Row schemes' masks run along the rows and the flattened columns, so the first reduced
    extent (3, 5) does not decide the class: the innermost one and the strides do
    (RowPersistent.aligned_dims)."""
    fn = pointwise_dynamic(_identity, promotion_methods=[(0, "DEFAULT")], reductions=[("sum", (0, 2))])
    x = torch.randn(shape)
    assert fn.explain(x).aligned == aligned
    out = poisoned_like(torch.empty(shape[1]))
    assert fn(x, out0=out) is out
    torch.testing.assert_close(out, x.sum((0, 2)))
    out = poisoned_like(torch.empty(shape[1], 3))[:, 1]  # an output stride of 3 does not count either
    assert fn.explain(x, out0=out).aligned == aligned
    assert fn(x, out0=out) is out
    torch.testing.assert_close(out, x.sum((0, 2)))


def _do_not_specialize(path) -> set:
    """The integer parameters a generated file's kernel leaves unspecialized."""
    listed = re.search(r"do_not_specialize=\[(.*?)\]", path.read_text())
    return set(re.findall(r'"(\w+)"', listed.group(1))) if listed else set()


@st.composite
def _reduction_calls(draw):
    """A reduction along dims of a tensor in a permuted layout, maybe a slice of a wider one, maybe
    into a given output of odd strides: extents with and without factors of 16."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.sampled_from((1, 3, 5, 16, 48, 64, 80, 2048))) for _ in range(rank))
    assume(math.prod(shape) <= 2**20)
    order = draw(st.permutations(range(rank)))
    x = torch.zeros([shape[d] for d in order]).permute([order.index(d) for d in range(rank)])
    if draw(st.booleans()):
        d = draw(st.integers(0, rank - 1))
        wider = list(shape)
        wider[d] += draw(st.sampled_from((1, 3, 16)))
        x = torch.zeros(wider).narrow(d, 0, shape[d])
    dims = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1))))
    kind = draw(st.sampled_from(("sum", "max")))
    kept = [n for d, n in enumerate(shape) if d not in dims]
    outs = {"out0": torch.zeros(kept + [3])[..., 1]} if draw(st.booleans()) else {}
    return kind, dims, x, outs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=_reduction_calls())
def test_an_aligned_file_specializes_only_multiples_of_16(call):
    """Scheme.aligned_dims, aligned_operands and aligned_counts against render._unspecialized: in
    a file of the aligned class, every integer argument Triton specializes is a multiple of 16
    (never 1) for every call the class serves, so each block compiles once."""
    kind, dims, x, outs = call
    fn = pointwise_dynamic(_identity, promotion_methods=[(0, "DEFAULT")], reductions=[(kind, dims)])
    plan = fn.plan((x,), fn.outputs(outs), collapse=True)
    if not plan.spec.aligned:
        return
    unspecialized = _do_not_specialize(plan.path)
    for name, value in zip(plan.spec.index_params(), plan.spec.index_values(plan.task)):
        assert name in unspecialized or (value % 16 == 0 and value != 1), (plan.spec.scheme, name, value)


@pytest.mark.gpu
@pytest.mark.parametrize("dim, scheme", [(-1, "row_looped"), (0, "column_looped")])
def test_aligned_reductions_along_dims_compile_once_per_block(dim, scheme, tmp_path, monkeypatch):
    """Aligned row and column reductions specialize their masked extents (multiples of 16 in that
    class): every aligned shape still runs on at most one compiled kernel per block."""
    from tritonwise.codegen.render import payload_alias
    from tritonwise.runtime.loader import load

    monkeypatch.setenv("TRITONWISE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITONWISE_KERNEL_STORE", "0")  # count Triton's own compiled kernels
    fn = pointwise_dynamic(_identity, promotion_methods=[(0, "DEFAULT")], reductions=[("max", dim)])
    # kept rows (for a column max, tiles of 16 kept elements): more than a split reduction takes
    for n in (272, 512, 1024, 4096) if dim == -1 else (1040, 2048, 4096):
        for m in (1040, 2048, 4096) + ((3, 40) if dim == 0 else ()):  # a column max's reduced extent does not count
            x = torch.randn(n, m, device="cuda") if dim == -1 else torch.randn(m, n, device="cuda")
            torch.testing.assert_close(fn(x), x.amax(dim))
            plan = fn.explain(x)
            assert plan.scheme == scheme and plan.aligned
    module = load(plan.path, plan.kernel, payload_alias("_identity", plan.kernel), fn.payload_info, "gpu")
    caches = getattr(module, plan.kernel).device_caches
    assert 1 <= sum(len(entry[0]) for entry in caches.values()) <= len(plan.block_choices)
