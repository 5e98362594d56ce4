"""The lean model reader (smtshape/reader.py): what it reads, what it refuses, and
that it never changes the model it reads."""
import numpy as np
import onnx
import onnx_ir as ir
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import smtshape
from smtshape.errors import BadInput
from smtshape.reader import read_model


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _chain():
    """Folding (Constant -> Unsqueeze -> Concat), a Shape chain and an op with no rule."""
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([2, 3], np.int64))),
        helper.make_node("Unsqueeze", ["c", "ax"], ["cu"]),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Concat", ["s", "c"], ["t"], axis=0),
        helper.make_node("Expand", ["y", "t"], ["e"]),
        helper.make_node("Relu", ["x"], ["r"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4]),
                          helper.make_tensor_value_info("y", T.FLOAT, [1])],
                  [helper.make_tensor_value_info("e", T.FLOAT, None),
                   helper.make_tensor_value_info("cu", T.INT64, None),
                   helper.make_tensor_value_info("r", T.FLOAT, ["N", 4])],
                  [numpy_helper.from_array(np.array([0], np.int64), "ax")])


def test_analysis_never_changes_the_model_it_reads():
    m = _chain()
    before = m.SerializeToString()
    res = smtshape.analyze(m)
    assert m.SerializeToString() == before
    assert [str(d) for d in res.shape("e")] == ["N", "4", "2", "3"]
    assert [d.expr for d in res.shape("cu")] == [1, 2]


def test_saving_the_annotated_model_leaves_the_input_alone(tmp_path):
    m = _chain()
    before = m.SerializeToString()
    res = smtshape.analyze(m)
    res.save(tmp_path / "out.onnx")
    assert m.SerializeToString() == before
    out = onnx.load(tmp_path / "out.onnx")
    vi = {v.name: v for v in out.graph.value_info}
    assert [d.dim_param or d.dim_value for d in vi["s"].type.tensor_type.shape.dim] == [2]


def test_an_onnx_ir_model_is_analyzed_as_it_is():
    m = _chain()
    a = smtshape.analyze(m)
    b = smtshape.analyze(ir.serde.deserialize_model(m))
    for name in ("e", "cu", "r", "s", "t"):
        assert [str(d) for d in a.shape(name)] == [str(d) for d in b.shape(name)]


def test_unsorted_graph_gives_the_same_shapes_as_sorted():
    m = _chain()
    shuffled = onnx.ModelProto()
    shuffled.CopyFrom(m)
    nodes = list(shuffled.graph.node)
    del shuffled.graph.node[:]
    shuffled.graph.node.extend(reversed(nodes))
    assert read_model(shuffled).graph.is_sorted is False
    assert read_model(m).graph.is_sorted is True
    a, b = smtshape.analyze(m), smtshape.analyze(shuffled)
    assert {n: str(a.shape(n)) for n in a.value_names} == {n: str(b.shape(n)) for n in b.value_names}


def test_a_value_nothing_provides_is_bad_input_naming_the_node():
    m = _model([helper.make_node("Relu", ["nope"], ["r"], name="the_relu")],
               [helper.make_tensor_value_info("x", T.FLOAT, [2])],
               [helper.make_tensor_value_info("r", T.FLOAT, None)])
    with pytest.raises(BadInput, match="Relu node 'the_relu' reads 'nope'"):
        smtshape.analyze(m)


def test_a_value_produced_twice_is_bad_input():
    m = _model([helper.make_node("Relu", ["x"], ["r"], name="a"), helper.make_node("Relu", ["x"], ["r"], name="b")],
               [helper.make_tensor_value_info("x", T.FLOAT, [2])],
               [helper.make_tensor_value_info("r", T.FLOAT, None)])
    with pytest.raises(BadInput, match="node 'b' writes 'r'"):
        smtshape.analyze(m)


def test_a_subgraph_reading_an_unknown_name_is_bad_input():
    body = helper.make_graph([helper.make_node("Relu", ["ghost"], ["o"], name="inner")], "b", [],
                             [helper.make_tensor_value_info("o", T.FLOAT, None)])
    m = _model([helper.make_node("If", ["c"], ["r"], then_branch=body, else_branch=body)],
               [helper.make_tensor_value_info("c", T.BOOL, [])],
               [helper.make_tensor_value_info("r", T.FLOAT, None)])
    with pytest.raises(BadInput, match="'inner' reads 'ghost'"):
        smtshape.analyze(m)


_NP = {T.INT64: np.int64, T.INT32: np.int32, T.INT16: np.int16, T.INT8: np.int8, T.UINT8: np.uint8,
       T.UINT16: np.uint16, T.UINT32: np.uint32, T.UINT64: np.uint64, T.BOOL: np.bool_}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(_NP)), st.lists(st.integers(-2 ** 63, 2 ** 64 - 1), max_size=12),
       st.booleans())
def test_int_values_decode_like_numpy(code, xs, raw):
    """Integer tensors decoded without numpy equal numpy_helper's reading, raw or typed fields."""
    info = np.iinfo(_NP[code]) if code != T.BOOL else None
    arr = np.array([(x % 2 == 0) if info is None else info.min + x % (int(info.max) - int(info.min) + 1)
                    for x in xs], dtype=_NP[code])
    t = helper.make_tensor("t", code, [len(xs)], arr.tobytes() if raw else arr.tolist(), raw=raw)
    m = _model([], [], [helper.make_tensor_value_info("t", code, None)], [t])
    tensor = read_model(m).graph.initializers["t"].const_value
    want = tuple(bool(v) if code == T.BOOL else int(v) for v in numpy_helper.to_array(t).reshape(-1))
    assert tensor.int_values(4096) == want


def test_sequence_input_keeps_the_element_shape():
    tp = helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.FLOAT, ["N", 3]))
    m = _model([helper.make_node("SequenceLength", ["q"], ["n"])], [helper.make_value_info("q", tp)],
               [helper.make_tensor_value_info("n", T.INT64, None)])
    v = read_model(m).graph.inputs[0]
    assert isinstance(v.type, ir.SequenceType)
    assert [getattr(d, "value", d) for d in v.shape] == ["N", 3]


_ALL_NP = {**_NP, T.FLOAT: np.float32, T.DOUBLE: np.float64, T.FLOAT16: np.float16}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(_ALL_NP)), st.lists(st.integers(-2 ** 63, 2 ** 64 - 1), min_size=1, max_size=12),
       st.booleans())
def test_tensor_numpy_decodes_like_numpy_helper(code, xs, raw):
    """Tensor.numpy (numeric types stored in the file) equals onnx.numpy_helper's reading."""
    if code in (T.FLOAT, T.DOUBLE, T.FLOAT16):
        arr = np.array([(x % 100003) / 7.0 for x in xs], dtype=_ALL_NP[code])
        vals = arr.tobytes() if raw else (arr.view(np.uint16).tolist() if code == T.FLOAT16 else arr.tolist())
    else:
        info = np.iinfo(_ALL_NP[code]) if code != T.BOOL else None
        arr = np.array([(x % 2 == 0) if info is None else info.min + x % (int(info.max) - int(info.min) + 1)
                        for x in xs], dtype=_ALL_NP[code])
        vals = arr.tobytes() if raw else arr.tolist()
    t = helper.make_tensor("t", code, [len(xs)], vals, raw=raw)
    m = _model([], [], [helper.make_tensor_value_info("t", code, None)], [t])
    got = read_model(m).graph.initializers["t"].const_value.numpy()
    want = numpy_helper.to_array(t)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)


def test_constants_replayed_from_the_cache_keep_their_own_elements():
    """Constant nodes are cached by content: equal contents share a result, different
    ones (same dims and type, raw or typed fields) never do."""
    def const(name, arr, raw):
        t = numpy_helper.from_array(arr, name + "_t")
        if not raw:
            t = helper.make_tensor(name + "_t", T.INT64, arr.shape, arr.tolist())
        return helper.make_node("Constant", [], [name], value=t)
    nodes = [const("a", np.array([2, 3], np.int64), True), const("b", np.array([2, 3], np.int64), False),
             const("c", np.array([3, 2], np.int64), True), const("d", np.array([3, 2], np.int64), False),
             const("e", np.array([2, 3], np.int64), True)]
    for n in "abcde":
        nodes.append(helper.make_node("Reshape", ["x", n], ["r" + n]))
    m = _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, [6])],
               [helper.make_tensor_value_info("r" + n, T.FLOAT, None) for n in "abcde"])
    res = smtshape.analyze(m)
    got = {n: [d.expr for d in res.shape("r" + n)] for n in "abcde"}
    assert got == {"a": [2, 3], "b": [2, 3], "c": [3, 2], "d": [3, 2], "e": [2, 3]}
    assert res.engine.cache.hits >= 2


def test_values_know_their_producer_and_a_dropped_model_frees_without_the_collector():
    """A value reaches its producing node (and output index) through its graph's node list,
    an unsorted graph's read-ahead values too; no reference cycle keeps a model alive."""
    import gc

    nodes = [helper.make_node("Relu", ["a"], ["b"], name="second"),   # reads 'a' before its producer
             helper.make_node("Split", ["x"], ["a", "unused"], name="first", axis=1, num_outputs=2)]
    m = read_model(_model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("b", T.FLOAT, None)], opset=18))
    by_name = {n.name: n for n in m.graph}
    relu, split = by_name["second"], by_name["first"]
    assert relu.inputs[0].producer() is split and relu.inputs[0].index() == 0
    assert split.outputs[1].producer() is split and split.outputs[1].index() == 1
    assert relu.outputs[0].producer() is relu
    assert m.graph.inputs[0].producer() is None
    value = relu.outputs[0]
    del by_name, relu, split
    was = gc.isenabled()
    gc.disable()
    try:
        del m
        assert value.producer() is None     # the node list went with the model, uncollected
    finally:
        if was:
            gc.enable()
