"""FunctionSchema: the query API, every promotion_methods form, every validation error."""

from __future__ import annotations

import pytest

import tritonwise
from tritonwise import ELEMENTWISE_TYPE_PROMOTION_KIND as KIND
from tritonwise import FunctionSchema, SchemaError


def test_schema_error_is_value_error_and_assertion_error():
    assert issubclass(SchemaError, ValueError)
    assert issubclass(SchemaError, AssertionError)


def test_promotion_kind_is_torchs_enum():
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND as torch_kind

    assert tritonwise.ELEMENTWISE_TYPE_PROMOTION_KIND is torch_kind
    assert {k.name for k in KIND} >= {
        "DEFAULT", "NO_OPMATH", "INT_TO_FLOAT", "ALWAYS_BOOL", "COMPLEX_TO_FLOAT", "BOOL_TO_LONG"
    }


def test_mixed_schema_queries():
    s = FunctionSchema(is_tensor=[True, False, True], promotion_methods=[(0, 1, 2, "DEFAULT")])
    assert s.num_inputs() == 3
    assert s.num_outputs() == 1
    assert [s.is_tensor(i) for i in range(3)] == [True, False, True]
    assert s.num_input_tensors() == 2
    assert s.num_output_tensors() == 1
    assert s.num_non_tensor_args() == 1
    assert [s.input_index(i) for i in range(3)] == [0, 0, 1]
    assert [s.input_type(i) for i in range(3)] == [None, None, None]
    assert s.output_type(0) == (0, 1, 2, KIND.DEFAULT)


def test_input_index_counts_tensors_and_scalars_separately():
    s = FunctionSchema(is_tensor=[False, True, False, True, True], promotion_methods=[(1, "DEFAULT")])
    assert [s.input_index(i) for i in range(5)] == [0, 0, 1, 1, 2]
    assert s.num_input_tensors() == 3
    assert s.num_non_tensor_args() == 2


def test_dtypes_alone_give_is_tensor_and_input_types():
    s = FunctionSchema(dtypes=[None, float, int, bool], promotion_methods=[(0, 1, "DEFAULT")])
    assert s.num_inputs() == 4
    assert [s.is_tensor(i) for i in range(4)] == [True, False, False, False]
    assert [s.input_type(i) for i in range(4)] == [None, float, int, bool]
    assert [s.input_index(i) for i in range(4)] == [0, 0, 1, 2]
    assert s.num_non_tensor_args() == 3


def test_num_inputs_alone_means_all_tensors():
    s = FunctionSchema(num_inputs=3, promotion_methods=[(0, 1, 2, "DEFAULT")])
    assert [s.is_tensor(i) for i in range(3)] == [True, True, True]
    assert s.num_input_tensors() == 3
    assert s.num_non_tensor_args() == 0
    assert [s.input_index(i) for i in range(3)] == [0, 1, 2]


def test_consistent_num_inputs_is_tensor_and_dtypes_together():
    s = FunctionSchema(
        num_inputs=2, is_tensor=[True, False], dtypes=[None, float], promotion_methods=[(0, 1, "DEFAULT")]
    )
    assert s.num_inputs() == 2
    assert s.is_tensor(1) is False
    assert s.input_type(1) is float


def test_two_outputs():
    s = FunctionSchema(num_inputs=2, promotion_methods=[(0, 1, "DEFAULT"), (0, "ALWAYS_BOOL")])
    assert s.num_outputs() == 2
    assert s.num_output_tensors() == 2
    assert s.output_type(0) == (0, 1, KIND.DEFAULT)
    assert s.output_type(1) == (0, KIND.ALWAYS_BOOL)


def test_explicit_num_outputs_matching_methods():
    s = FunctionSchema(num_inputs=1, num_outputs=2, promotion_methods=[(0, "DEFAULT"), (0, "DEFAULT")])
    assert s.num_outputs() == 2


@pytest.mark.parametrize(
    "method",
    [
        (0, 1, "DEFAULT"),
        ((0, 1), "DEFAULT"),
        [(0, 1), "DEFAULT"],
        [0, 1, "DEFAULT"],
        (0, 1, KIND.DEFAULT),
        ((0, 1), KIND.DEFAULT),
        (0, 1, "default"),
        ((0, 1), "Default"),
    ],
    ids=lambda m: repr(m),
)
def test_every_promotion_method_form_is_canonicalized(method):
    s = FunctionSchema(num_inputs=2, promotion_methods=[method])
    assert s.output_type(0) == (0, 1, KIND.DEFAULT)
    assert s.output_type(0)[-1] is KIND.DEFAULT


@pytest.mark.parametrize("kind", list(KIND), ids=lambda k: k.name)
def test_every_kind_by_member_and_by_lowercase_name(kind):
    by_member = FunctionSchema(num_inputs=1, promotion_methods=[(0, kind)])
    by_name = FunctionSchema(num_inputs=1, promotion_methods=[(0, kind.name.lower())])
    assert by_member.output_type(0) == (0, kind)
    assert by_name.output_type(0) == (0, kind)


def test_signature_names_tensors_and_scalar_types():
    s = FunctionSchema(dtypes=[None, float, int], num_outputs=2, promotion_methods=[(0, 1, "DEFAULT"), (0, 2, "DEFAULT")])
    sig = s.signature()
    assert isinstance(sig, str)
    assert "float" in sig and "int" in sig
    arrow_left, arrow_right = sig.split("->")
    assert arrow_left.count("StridedBuffer") == 1
    assert arrow_right.count("StridedBuffer") == 2
    assert str(s) == sig


def test_signature_distinguishes_schemas():
    a = FunctionSchema(is_tensor=[True, True], promotion_methods=[(0, 1, "DEFAULT")])
    b = FunctionSchema(is_tensor=[True, False], promotion_methods=[(0, 1, "DEFAULT")])
    assert a.signature() != b.signature()


# ---------------------------------------------------------------------------------------------
# Validation errors: each is a SchemaError, caught as ValueError and as AssertionError alike.

INVALID = {
    "missing promotion_methods": dict(num_inputs=2),
    "none of num_inputs/is_tensor/dtypes": dict(promotion_methods=[(0, "DEFAULT")]),
    "num_inputs vs is_tensor": dict(num_inputs=3, is_tensor=[True, True], promotion_methods=[(0, "DEFAULT")]),
    "num_inputs vs dtypes": dict(num_inputs=1, dtypes=[None, float], promotion_methods=[(0, "DEFAULT")]),
    "is_tensor vs dtypes": dict(is_tensor=[True], dtypes=[None, float], promotion_methods=[(0, "DEFAULT")]),
    "num_outputs != methods": dict(num_inputs=2, num_outputs=2, promotion_methods=[(0, 1, "DEFAULT")]),
    "num_outputs < methods": dict(
        num_inputs=2, num_outputs=1, promotion_methods=[(0, "DEFAULT"), (1, "DEFAULT")]
    ),
    "zero outputs": dict(num_inputs=1, promotion_methods=[]),
    "zero outputs explicit": dict(num_inputs=1, num_outputs=0, promotion_methods=[]),
    "dtypes entry not a type (string)": dict(dtypes=[None, "float"], promotion_methods=[(0, "DEFAULT")]),
    "dtypes entry not a type (value)": dict(dtypes=[None, 1.0], promotion_methods=[(0, "DEFAULT")]),
    "index out of range": dict(num_inputs=2, promotion_methods=[(0, 2, "DEFAULT")]),
    "negative index": dict(num_inputs=2, promotion_methods=[(-1, "DEFAULT")]),
    "index out of range, tuple form": dict(num_inputs=2, promotion_methods=[((0, 5), "DEFAULT")]),
    "unknown kind": dict(num_inputs=1, promotion_methods=[(0, "NOT_A_KIND")]),
    "method without index": dict(num_inputs=1, promotion_methods=[("DEFAULT",)]),
}


@pytest.mark.parametrize("kwargs", list(INVALID.values()), ids=list(INVALID))
def test_invalid_schema_raises_value_error_and_assertion_error(kwargs):
    with pytest.raises(SchemaError) as info:
        FunctionSchema(**kwargs)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, AssertionError)
    assert str(info.value)


@pytest.mark.parametrize("caught", [ValueError, AssertionError])
def test_flaggems_style_except_clauses_catch_schema_errors(caught):
    try:
        FunctionSchema(num_inputs=2, promotion_methods=[(0, 3, "DEFAULT")])
    except caught:
        pass
    else:
        pytest.fail("an out-of-range promotion index was accepted")


def test_error_message_names_the_problem():
    with pytest.raises(SchemaError, match="promotion_methods"):
        FunctionSchema(num_inputs=2)
    with pytest.raises(SchemaError, match="out of range"):
        FunctionSchema(num_inputs=2, promotion_methods=[(0, 2, "DEFAULT")])
    with pytest.raises(SchemaError, match=r"dtypes\[1\]"):
        FunctionSchema(dtypes=[None, "float"], promotion_methods=[(0, "DEFAULT")])


def test_decorator_reports_schema_errors_too():
    import triton

    from tests.support.payload_no_tl import add

    with pytest.raises(SchemaError):
        tritonwise.pointwise_dynamic(add)  # no promotion_methods
    with pytest.raises(SchemaError):
        tritonwise.pointwise_dynamic(add, num_inputs=3, is_tensor=[True], promotion_methods=[(0, "DEFAULT")])
    @triton.jit
    def untouched(x):
        return x

    assert type(add) is type(untouched)  # a JITFunction, or an InterpretedFunction under TRITON_INTERPRET=1
