"""The names FlagGems 5.0.2's package and tests import from `flag_gems.utils.pointwise_dynamic`
(its utils/__init__.py: ComplexMode, KernelInfo, PointwiseDynamicFunction, pointwise_dynamic;
tests/test_pointwise_dynamic.py: CodeGenConfig, FunctionSchema; its C++ prebuild: get_kernel_info,
prepare_args, use_fast_path, canonicalize_promotion_methods, `fx`), with FlagGems' meaning."""

import dataclasses
import os

import re

import pytest
import torch
import triton

from tests.support import payload_no_tl
import tritonwise
from tritonwise import ELEMENTWISE_TYPE_PROMOTION_KIND as KIND
from tritonwise import FunctionSchema, KernelInfo, StridedBuffer, pointwise_dynamic

NAMES = ["CodeGenConfig", "ComplexMode", "FunctionSchema", "KernelInfo", "PointwiseDynamicFunction"]


@pytest.mark.parametrize("name", NAMES + ["pointwise_dynamic"])
def test_every_name_flag_gems_imports_is_there(name):
    assert hasattr(tritonwise, name)


def test_kernel_info_has_flag_gems_fields():
    fields = [f.name for f in dataclasses.fields(KernelInfo)]
    assert fields == ["file_path", "kernel_name", "wrapper_name", "ndim"]


def test_canonicalize_promotion_methods_names_each_kind_by_its_member():
    got = FunctionSchema.canonicalize_promotion_methods([(0, 1, "DEFAULT"), (0, "INT_TO_FLOAT"), [2, "ALWAYS_BOOL"]])
    assert got == [(0, 1, KIND.DEFAULT), (0, KIND.INT_TO_FLOAT), (2, KIND.ALWAYS_BOOL)]


def _axpy():
    @pointwise_dynamic(is_tensor=[True, True, False], promotion_methods=[(0, 1, "DEFAULT"), (0, "ALWAYS_BOOL")])
    @triton.jit
    def axpy(x, y, alpha):
        return x + y * alpha, x > 0

    return axpy


def test_fx_is_the_schema():
    f = _axpy()
    assert f.fx is f.schema and f.fx.num_input_tensors() == 2


def _layouts():
    a = torch.randn(3, 4)
    return {
        "contiguous": ([a, torch.randn(3, 4)], True),
        "one transposed": ([a, torch.randn(4, 3).t()], False),
        "both transposed alike": ([torch.randn(4, 3).t(), torch.randn(4, 3).t()], True),
        "shapes differ": ([a, torch.randn(4)], False),
        "expanded (overlapping)": ([torch.randn(3, 1).expand(3, 4), torch.randn(3, 1).expand(3, 4)], False),
        "sliced (not dense)": ([torch.randn(3, 8)[:, ::2], torch.randn(3, 8)[:, ::2]], False),
    }


@pytest.mark.parametrize("case", list(_layouts()))
def test_use_fast_path_is_flag_gems_rule(case):
    tensors, expected = _layouts()[case]
    assert tritonwise.PointwiseDynamicFunction.use_fast_path(tensors) is expected
    # FlagGems' own definition of the rule
    same_shape = all(t.shape == tensors[0].shape for t in tensors)
    contiguous = all(t.is_contiguous() for t in tensors)
    same_strides = all(t.stride() == tensors[0].stride() for t in tensors)
    dense = torch.ops.aten.is_non_overlapping_and_dense(tensors[0])
    assert same_shape and (contiguous or (same_strides and dense)) is expected or not same_shape and not expected


PREPARE_CASES = {
    "contiguous": (lambda: (torch.randn(3, 4), torch.randn(3, 4)), 1),
    "transposed alike": (lambda: (torch.randn(4, 3).t(), torch.randn(4, 3).t()), 1),
    "broadcast": (lambda: (torch.randn(3, 1), torch.randn(2, 1, 4)), 3),
    "transposed and not": (lambda: (torch.randn(4, 3).t(), torch.randn(3, 4)), 2),
}


@pytest.mark.parametrize("given", [False, True], ids=["allocated", "out0 given"])
@pytest.mark.parametrize("case", list(PREPARE_CASES))
def test_prepare_args_then_instantiate_computes_what_torch_does(case, given):
    make, ndim = PREPARE_CASES[case]
    x, y = make()
    expected = (x + y * 2.5, (x > 0).expand(torch.broadcast_shapes(x.shape, y.shape)))
    f = _axpy()
    kwargs = {"out0": torch.full_like(expected[0], float("nan"))} if given else {}
    got_ndim, args, prepared = f.prepare_args(x, y, 2.5, **kwargs)
    assert got_ndim == ndim
    assert all(isinstance(a, StridedBuffer) for a in (args[0], args[1], *prepared.values()))
    assert args[2] == 2.5 and sorted(prepared) == ["out0", "out1"]
    outs = f.instantiate(ndim)(*args, **prepared)
    got = tuple(o.unwrap() for o in outs)
    if given:
        assert got[0] is kwargs["out0"]
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e)


def test_prepare_args_checks_argument_kinds():
    with pytest.raises(TypeError, match="argument 1 must be a Tensor"):
        _axpy().prepare_args(torch.randn(3), 2.0, 2.5)


@pytest.mark.parametrize("shape", [(4, 3), (1, 4), (12,)])
def test_prepare_args_refuses_a_given_output_of_another_shape(shape):
    """As FlagGems' prepare_args: wrapped over the task's shape, such an output would be written
    scrambled (a (4, 3) one with the (3, 4) result's elements in its own order)."""
    x, y = torch.randn(3, 4), torch.randn(1, 4)
    with pytest.raises(RuntimeError, match=rf"out0 has shape {re.escape(str(shape))}, expected \(3, 4\)"):
        _axpy().prepare_args(x, y, 2.5, out0=torch.empty(shape))


def test_get_kernel_info_names_the_file_instantiate_runs():
    f = _axpy()
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    out0, out1 = torch.empty(2, 3), torch.empty(2, 3, dtype=torch.bool)
    with pytest.raises(LookupError, match=r"no rank-2 kernel generated yet.*get_kernel_info\(ndim, \*args\)"):
        f.get_kernel_info(2)
    info = f.get_kernel_info(2, x, y, 2.5, out0=out0, out1=out1)
    assert info.ndim == 2 and info.wrapper_name == "launch" and os.path.isfile(info.file_path)
    source = open(info.file_path).read()
    assert f"def {info.kernel_name}(" in source and "def launch(" in source
    f.instantiate(2)(x, y, 2.5, out0=out0, out1=out1)
    assert f.get_kernel_info(2) == info  # the file the call ran
    torch.testing.assert_close(out0, x + y * 2.5)


def test_get_kernel_info_refuses_arguments_of_another_rank():
    with pytest.raises(ValueError, match="expected exactly 3"):
        x, out = torch.randn(2, 3), torch.empty(2, 3)
        _axpy().get_kernel_info(3, x, x, 1.0, out0=out, out1=out)


@dataclasses.dataclass
class FlagGemsCodeGenConfig:
    """As flag_gems.utils.codegen_config_utils.CodeGenConfig: a mutable dataclass (unhashable),
    which that module keeps after the swap and some of FlagGems' backends pass as `config=`."""

    max_tile_size: int
    max_grid_size: tuple
    max_num_warps_per_cta: int
    prefer_block_pointer: bool
    prefer_1d_tile: bool


def test_flaggems_own_codegen_config_is_taken_as_ours():
    given = FlagGemsCodeGenConfig(512, (4, 1, 1), 8, True, False)
    f = pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")], config=given)
    assert f.config == tritonwise.CodeGenConfig(512, (4, 1, 1), 8, True, False)
    x, y = torch.randn(40, 30), torch.randn(30)
    torch.testing.assert_close(f(x, y), x + y)
    torch.testing.assert_close(f.instantiate(2)(x, y.expand(40, 30), out0=torch.empty(40, 30)), x + y)
    with pytest.raises(TypeError, match="config must be a CodeGenConfig"):
        pointwise_dynamic(payload_no_tl.add, promotion_methods=[(0, 1, "DEFAULT")], config={"max_tile_size": 64})
