"""Reduce* and ArgMax/ArgMin rules."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, run_onnxruntime, ts, unchecked


def value(res, name):
    return res._lookup(name)[1].value


run_ort = run_onnxruntime


def test_reduce_attr_axes_keepdims():
    res = infer_node("ReduceMean", [ts("float", ["N", "S", 8])], {"axes": [-1]}, opset=13)
    assert exprs(res, "y0") == ("N", "S", 1)
    res = infer_node("ReduceMean", [ts("float", ["N", "S", 8])], {"axes": [1], "keepdims": 0}, opset=13)
    assert exprs(res, "y0") == ("N", 8)


def test_reduce_all_axes_default():
    res = infer_node("ReduceMax", [ts("float", ["N", 3])], {"keepdims": 0}, opset=13)
    assert exprs(res, "y0") == ()
    res = infer_node("ReduceMax", [ts("float", ["N", 3])], opset=18)
    assert exprs(res, "y0") == (1, 1)


def test_reduce_sum_axes_input_opset13():
    res = infer_node("ReduceSum", [ts("float", ["N", "S", 8]), np.array([0, 2], np.int64)], {"keepdims": 0},
                     opset=13)
    assert exprs(res, "y0") == ("S",)


def test_reduce_noop_with_empty_axes():
    res = infer_node("ReduceSum", [ts("float", ["N", 4]), np.array([], np.int64)], {"noop_with_empty_axes": 1},
                     opset=13)
    assert exprs(res, "y0") == ("N", 4)
    res = infer_node("ReduceSum", [ts("float", ["N", 4])], {"noop_with_empty_axes": 0}, opset=13)
    assert exprs(res, "y0") == (1, 1)


def test_reduce_bad_axis_fails():
    res = infer_node("ReduceMean", [ts("float", ["N", 4])], {"axes": [2]}, opset=13)
    assert res.shape("y0") is None
    assert [c.constraints[0].provenance.rule for c in res.conflicts] == ["axis.range"]


def test_reduce_unknown_axes_keepdims_upper_bound():
    res = infer_node("ReduceSum", [ts("float", ["N", 4]), ts("int64", [1])], opset=13)
    s = res.shape("y0")
    assert len(s) == 2
    assert all(d.exactness is not Exactness.EXACT for d in s)


def test_reduce_unknown_axes_no_keepdims():
    """One axis read at run time: the rank drops by one.  Two: onnxruntime runs repeated axes
    ([0, 0] reduces one axis), so the rank is unknown."""
    res = infer_node("ReduceSum", [ts("float", ["N", 4, 5]), ts("int64", [1])], {"keepdims": 0}, opset=13)
    assert len(res.shape("y0")) == 2
    assert all(d.exactness is not Exactness.EXACT for d in res.shape("y0"))
    res = infer_node("ReduceSum", [ts("float", ["N", 4, 5]), ts("int64", [2])], {"keepdims": 0}, opset=13)
    assert res.shape("y0") is None and not res.conflicts and not unchecked(res)
    m = node_model("ReduceSum", [ts("float", [3, 4, 5]), ts("int64", [2])], {"keepdims": 0}, opset=13)
    x = np.zeros((3, 4, 5), np.float32)
    assert run_ort(m, {"x0": x, "x1": np.array([0, 0], np.int64)})[0].shape == (4, 5)
    assert run_ort(m, {"x0": x, "x1": np.array([0, 1], np.int64)})[0].shape == (5,)
    res = infer_node("ReduceSum", [ts("float", ["N", 4, 5]), ts("int64", ["K"])], {"keepdims": 0}, opset=13)
    assert res.shape("y0") is None


# ---------------------------------------------------------------- preconditions of the spec (conflicts)
from .test_shape import assert_refused, assert_runs_like_ort, check_backend  # noqa: E402

PRECONDITIONS = [
    # (op, inputs, attrs, opset, rule, onnxruntime refuses it too)
    ("ReduceSum", [ts("float", [2, 3]), np.array([[0]], np.int64)], {}, 13, "reducesum.axes", True),
    ("ReduceSum", [ts("float", [2, 3]), np.array(0, np.int64)], {}, 13, "reducesum.axes", True),
    ("ReduceMean", [ts("float", [2, 3])], {"axes": [2]}, 13, "axis.range", True),
    ("ReduceL2", [ts("float", [2, 3]), np.array([-3], np.int64)], {}, 18, "axis.range", True),
    ("ArgMax", [ts("float", [])], {"keepdims": 0}, 13, "axis.range", True),
    ("ArgMin", [ts("float", [2, 3])], {"axis": 2}, 13, "axis.range", True),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,ort", PRECONDITIONS,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(PRECONDITIONS)])
def test_precondition_is_a_conflict(op, inputs, attrs, opset, rule, ort):
    assert_refused(op, inputs, attrs, rule, opset=opset, ort=ort)


@pytest.mark.parametrize("op,inputs,attrs,opset", [
    ("ReduceSum", [ts("float", [2, 3]), np.array([0, 0], np.int64)], {"keepdims": 0}, 13),
    ("ReduceMean", [ts("float", [2, 3])], {"axes": [1, -1], "keepdims": 0}, 13),
    ("ReduceMax", [ts("float", [2, 3]), np.array([0, -2], np.int64)], {}, 18),
])
def test_repeated_axes_run(op, inputs, attrs, opset):
    """The spec does not ask for distinct axes and onnxruntime reduces a repeated one once."""
    assert_runs_like_ort(op, inputs, attrs, opset=opset)


def test_reduce_zero_dim():
    res = infer_node("ReduceSum", [ts("float", [0, 3]), np.array([0], np.int64)], opset=13)
    assert exprs(res, "y0") == (1, 3)


def test_reduce_prod_value():
    res = infer_node("ReduceProd", [np.array([2, 3, 4], np.int64)], {"keepdims": 0}, opset=13)
    assert value(res, "y0") == (24,)
    res = infer_node("ReduceSum", [np.array([[1, 2], [3, 4]], np.int64), np.array([1], np.int64)], opset=13)
    assert exprs(res, "y0") == (2, 1)
    assert value(res, "y0") == (3, 7)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_argmax(op):
    res = infer_node(op, [ts("float", ["N", "C", 5])], {"axis": 1})
    assert exprs(res, "y0") == ("N", 1, 5)
    assert int(res.dtype("y0")) == TensorProto.INT64
    res = infer_node(op, [ts("float", ["N", "C", 5])], {"axis": -1, "keepdims": 0})
    assert exprs(res, "y0") == ("N", "C")


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSumExp", "ReduceSumSquare"]


@st.composite
def reduce_case(draw):
    r = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 4)) for _ in range(r)]
    axes = draw(st.lists(st.integers(-r, r - 1), unique_by=lambda a: a % r, max_size=r))
    return shape, axes, draw(st.integers(0, 1)), draw(st.sampled_from(REDUCE)), draw(st.sampled_from([13, 18]))


@settings(max_examples=30, deadline=None)
@given(reduce_case())
def test_property_reduce_vs_ort(case):
    shape, axes, keep, op, opset = case
    names = [f"d{k}" for k in range(len(shape))]
    as_input = opset >= 18 or op == "ReduceSum"
    attrs = {"keepdims": keep}
    inputs = [ts("float", names)]
    if as_input:
        inputs.append(np.array(axes, np.int64))
    elif axes:
        attrs["axes"] = axes
    res = infer_node(op, inputs, attrs, opset=opset)
    got = res.evaluate(dict(zip(names, shape)))["y0"]
    static_inputs = [ts("float", shape)] + inputs[1:]
    x = np.asarray(np.random.rand(*shape) + 0.5, dtype=np.float32)
    truth = run_ort(node_model(op, static_inputs, attrs, opset=opset), {"x0": x})[0]
    assert got == truth.shape


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data(), st.sampled_from(["ArgMax", "ArgMin"]))
def test_property_argmax_vs_ort(shape, data, op):
    r = len(shape)
    axis = data.draw(st.integers(-r, r - 1))
    keep = data.draw(st.integers(0, 1))
    names = [f"d{k}" for k in range(r)]
    res = infer_node(op, [ts("float", names)], {"axis": axis, "keepdims": keep})
    got = res.evaluate(dict(zip(names, shape)))["y0"]
    x = np.asarray(np.random.rand(*shape), dtype=np.float32)
    truth = run_ort(node_model(op, [ts("float", shape)], {"axis": axis, "keepdims": keep}), {"x0": x})[0]
    assert got == truth.shape


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=6), st.sampled_from(["ReduceSum", "ReduceProd",
                                                                              "ReduceMax", "ReduceMin"]))
def test_property_reduce_values_vs_ort(vals, op):
    a = np.array(vals, np.int64)
    res = infer_node(op, [a], {"keepdims": 0}, opset=13 if op == "ReduceSum" else 13)
    truth = run_ort(node_model(op, [ts("int64", [len(vals)])], {"keepdims": 0}, opset=13), {"x0": a})[0]
    assert value(res, "y0") == (int(truth),)


# A test-only op exposing its input's shape as a value (independent of the Shape rule).
import onnx_ir as ir  # noqa: E402
from onnx import helper  # noqa: E402

from smtshape import analyze  # noqa: E402
from smtshape.registry import register  # noqa: E402


@register("test.reduce", "ShapeOf", 1)
def _shape_of(ctx):
    s = ctx.shape(0)
    ctx.set_output(0, (len(s),), ir.DataType.INT64, value=s)


def test_reduce_prod_of_symbolic_shape_value():
    nodes = [helper.make_node("ShapeOf", ["x"], ["s"], domain="test.reduce"),
             helper.make_node("ReduceProd", ["s"], ["z"], keepdims=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.UNDEFINED, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("test.reduce", 1)],
                          ir_version=8)
    res = analyze(m)
    assert exprs(res, "z") == (1,)
    (v,) = value(res, "z")
    assert {str(s) for s in v.free_symbols} == {"N", "S"}
    assert v.subs({s: 3 for s in v.free_symbols}) == 36


def test_onnx_backend_node_tests():
    """ONNX's backend node tests of these ops: no conflict, nothing unchecked, right dims."""
    check_backend(*("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin"), min_cases=100)


# ---------------------------------------------------------------- float values (issue 19 item 2)
def _pad_to_longer_side(shape, op="ReduceMax", dtype=TensorProto.FLOAT):
    """The detection preprocessing of an SSD: Shape -> Cast(float) -> ReduceMax -> Cast(int64)
    -> ConstantOfShape (the padded canvas)."""
    from onnx import helper, numpy_helper
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "st", "en"], ["hw"]),
             helper.make_node("Cast", ["hw"], ["f"], to=dtype), helper.make_node(op, ["f"], ["m"], keepdims=1),
             helper.make_node("Cast", ["m"], ["b"], to=TensorProto.INT64), helper.make_node("Concat", ["b", "b"], ["bb"], axis=0),
             helper.make_node("ConstantOfShape", ["bb"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.array([1], np.int64), "st"),
                                       numpy_helper.from_array(np.array([3], np.int64), "en")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_float_reduction_of_known_values_keeps_them(op, dtype):
    """A reduction over a float tensor whose elements are known keeps them (they were lost,
    and with them the Pad and the backbone behind it)."""
    from smtshape import analyze
    m = _pad_to_longer_side([3, 300, 417], op, dtype)
    res = analyze(m)
    want = run_ort(m, {"x": np.zeros((3, 300, 417), np.float32)})[0].shape
    assert exprs(res, "y") == want
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y"))


@settings(max_examples=15, deadline=None)
@given(h=st.integers(1, 600), w=st.integers(1, 600), op=st.sampled_from(["ReduceMax", "ReduceMin", "ReduceSum"]))
def test_float_reduction_of_symbolic_dims_is_bounded(h, w, op):
    """Over symbolic H, W the float value is not provably exact (H > 2**24 rounds): a bound
    that holds, never a wrong EXACT."""
    from smtshape import analyze
    m = _pad_to_longer_side([3, "H", "W"], op)
    res = analyze(m)
    want = run_ort(m, {"x": np.zeros((3, h, w), np.float32)})[0].shape
    for d, n in zip(res.shape("y"), want):
        assert d.exactness is not Exactness.UNKNOWN
        if d.exactness is Exactness.EXACT:
            assert d.evaluate({"H": h, "W": w}) == n
        else:
            from smtshape import expr as E
            assert E.evaluate(d.bound, {"H": h, "W": w}) >= n
