"""Normalization, Softmax family, CumSum, Trilu rules."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

from .test_shape import assert_refused, assert_runs_like_ort, check_backend, conflict_rules


def value(res, name):
    return res._lookup(name)[1].value


run_ort = run_onnxruntime


def rnd(shape):
    return np.asarray(np.random.rand(*shape) + 0.5, dtype=np.float32)




# ------------------------------------------------------------ BatchNormalization
def test_batchnorm_shape_and_channel_constraints():
    res = infer_node("BatchNormalization", [ts("float", ["N", "C", "H", "W"])] + [ts("float", ["K"])] * 4)
    assert exprs(res, "y0") == ("N", "C", "H", "W")
    assert res.prove("K == C").name == "PROVEN"


def test_batchnorm_channel_mismatch_conflict():
    res = infer_node("BatchNormalization", [ts("float", ["N", 3, 5])] + [ts("float", [4])] * 4)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_batchnorm_training_outputs():
    res = infer_node("BatchNormalization", [ts("float", ["N", 6, 5])] + [ts("float", [6])] * 4,
                     {"training_mode": 1}, n_outputs=3, opset=15)
    assert exprs(res, "y1") == (6,) and exprs(res, "y2") == (6,)


# ------------------------------------------------------------ LayerNormalization
def test_layernorm_stats_and_scale():
    res = infer_node("LayerNormalization", [ts("float", ["B", "S", "D"]), ts("float", ["E"]), ts("float", ["E"])],
                     {"axis": -1}, n_outputs=3)
    assert exprs(res, "y0") == ("B", "S", "D")
    assert exprs(res, "y1") == ("B", "S", 1)
    assert exprs(res, "y2") == ("B", "S", 1)
    assert res.prove("E == D or E == 1").name == "PROVEN"


def test_layernorm_axis1():
    res = infer_node("LayerNormalization", [ts("float", ["B", "S", "D"]), ts("float", ["S", "D"])],
                     {"axis": 1}, n_outputs=2)
    assert exprs(res, "y1") == ("B", 1, 1)


def test_layernorm_scale_conflict():
    res = infer_node("LayerNormalization", [ts("float", ["B", 8]), ts("float", [7])])
    assert res.conflicts and "node" in res.conflicts[0].nodes


# ------------------------------------------------------------ GroupNormalization
def test_groupnorm_divisibility():
    res = infer_node("GroupNormalization", [ts("float", ["N", "C", 4]), ts("float", [2]), ts("float", [2])],
                     {"num_groups": 2}, opset=18)
    assert exprs(res, "y0") == ("N", "C", 4)
    assert res.prove("C != 3").name == "PROVEN"
    res = infer_node("GroupNormalization", [ts("float", ["N", 6, 4]), ts("float", [4]), ts("float", [4])],
                     {"num_groups": 4}, opset=18)
    assert res.conflicts


def test_groupnorm_opset21_scale_is_channels():
    res = infer_node("GroupNormalization", [ts("float", ["N", 6, 4]), ts("float", [2]), ts("float", [2])],
                     {"num_groups": 2}, opset=21)
    assert res.conflicts


def test_instancenorm():
    res = infer_node("InstanceNormalization", [ts("float", ["N", "C", "H"]), ts("float", ["K"]), ts("float", ["K"])])
    assert exprs(res, "y0") == ("N", "C", "H")
    assert res.prove("K == C").name == "PROVEN"


def test_lrn_mvn():
    assert exprs(infer_node("LRN", [ts("float", ["N", 3, 5, 5])], {"size": 3}), "y0") == ("N", 3, 5, 5)
    assert exprs(infer_node("MeanVarianceNormalization", [ts("float", ["N", 3, 5, 5])]), "y0") == ("N", 3, 5, 5)


# ------------------------------------------------------------ Softmax family
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_shape(op, opset):
    res = infer_node(op, [ts("float", ["B", "H", "S", "S"])], {"axis": -1}, opset=opset)
    assert exprs(res, "y0") == ("B", "H", "S", "S")


def test_softmax_bad_axis():
    res = infer_node("Softmax", [ts("float", ["B", 4])], {"axis": 2}, opset=13)
    assert res.shape("y0") is None and refused(res) and "axis.range" in conflict_rules(res)


# ------------------------------------------------------------ CumSum, Trilu
def test_cumsum_shape_and_values():
    res = infer_node("CumSum", [ts("float", ["N", 3]), np.array(1, np.int64)])
    assert exprs(res, "y0") == ("N", 3)
    res = infer_node("CumSum", [np.array([1, 2, 3], np.int64), np.array(0, np.int64)], {"exclusive": 1, "reverse": 1})
    truth = run_ort(node_model("CumSum", [ts("int64", [3]), np.array(0, np.int64)], {"exclusive": 1, "reverse": 1}),
                    {"x0": np.array([1, 2, 3], np.int64)})[0]
    assert value(res, "y0") == tuple(int(x) for x in truth)


def test_trilu():
    assert exprs(infer_node("Trilu", [ts("float", ["N", "S", "S"])]), "y0") == ("N", "S", "S")
    res = infer_node("Trilu", [ts("float", ["N"])])
    assert res.shape("y0") is None and refused(res) and "trilu.rank" in conflict_rules(res)


# ------------------------------------------------------------ properties vs onnxruntime
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.data())
def test_property_layernorm(shape, data):
    r = len(shape)
    axis = data.draw(st.integers(-r, r - 1))
    a = axis % r
    k = data.draw(st.integers(1, r - a))           # scale covers a suffix of the normalized dims
    sshape = shape[r - k:]
    names = [f"d{i}" for i in range(r)]
    snames = names[r - k:]
    res = infer_node("LayerNormalization", [ts("float", names), ts("float", snames)], {"axis": axis}, n_outputs=3)
    got = res.evaluate(dict(zip(names, shape)))
    truth = run_ort(node_model("LayerNormalization", [ts("float", shape), ts("float", sshape)], {"axis": axis},
                               n_outputs=3), {"x0": rnd(shape), "x1": rnd(sshape)})
    assert [got["y0"], got["y1"], got["y2"]] == [t.shape for t in truth]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.sampled_from(["Softmax", "LogSoftmax", "Hardmax"]),
       st.sampled_from([11, 13]), st.data())
def test_property_softmax(shape, op, opset, data):
    r = len(shape)
    axis = data.draw(st.integers(-r, r - 1))
    names = [f"d{i}" for i in range(r)]
    res = infer_node(op, [ts("float", names)], {"axis": axis}, opset=opset)
    got = res.evaluate(dict(zip(names, shape)))["y0"]
    truth = run_ort(node_model(op, [ts("float", shape)], {"axis": axis}, opset=opset), {"x0": rnd(shape)})[0]
    assert got == truth.shape


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(1, 4), st.integers(0, 4), st.integers(1, 2))
def test_property_batchnorm(n, c, h, rank_extra):
    shape = [n, c] + [h] * rank_extra
    names = ["N", "C"] + [f"H{i}" for i in range(rank_extra)]
    res = infer_node("BatchNormalization", [ts("float", names)] + [ts("float", ["C"])] * 4)
    got = res.evaluate(dict(zip(names, shape)))["y0"]
    feeds = {"x0": rnd(shape), **{f"x{i}": rnd([c]) for i in range(1, 5)}}
    truth = run_ort(node_model("BatchNormalization", [ts("float", shape)] + [ts("float", [c])] * 4), feeds)[0]
    assert got == truth.shape
    assert not res.conflicts


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=6), st.integers(0, 1), st.integers(0, 1))
def test_property_cumsum_values(vals, exclusive, reverse):
    a = np.array(vals, np.int64)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    res = infer_node("CumSum", [a, np.array(0, np.int64)], attrs)
    truth = run_ort(node_model("CumSum", [ts("int64", [len(vals)]), np.array(0, np.int64)], attrs), {"x0": a})[0]
    assert value(res, "y0") == tuple(int(x) for x in truth)


# ------------------------------------------------------------ preconditions of the spec (conflicts)
F = "float"


def p(*shape):
    return np.ones(shape, np.float32)


PRECONDITIONS = [
    # (op, inputs, attrs, opset, rule, onnxruntime refuses it too)
    ("BatchNormalization", [ts(F, [128]), p(1, 2), p(1), p(1), p(1)], {}, 15, "batchnorm.param_rank", True),
    ("BatchNormalization", [ts(F, [2, 3]), p(3), p(3), p(3), p(3, 1)], {}, 15, "batchnorm.param_rank", True),
    ("BatchNormalization", [ts(F, []), p(1), p(1), p(1), p(1)], {}, 15, "batchnorm.rank", True),
    ("BatchNormalization", [ts(F, [2, 3]), p(3), p(3), p(3), p(3)], {"training_mode": 1}, 15,
     "batchnorm.outputs", True),
    ("BatchNormalization", [ts(F, [2, 3]), p(4), p(4), p(4), p(4)], {}, 15, "batchnorm.channels", True),
    ("Softmax", [ts(F, [])], {}, 13, "softmax.rank", True),
    ("LogSoftmax", [ts(F, [])], {}, 13, "logsoftmax.rank", True),
    ("Hardmax", [ts(F, [])], {}, 13, "hardmax.rank", True),
    ("Softmax", [ts(F, [])], {}, 11, "softmax.rank", True),
    ("Softmax", [ts(F, [2, 3])], {"axis": 2}, 11, "axis.range", True),
    ("InstanceNormalization", [ts(F, [3]), p(3), p(3)], {}, 18, "instancenorm.rank", True),
    ("InstanceNormalization", [ts(F, [2, 3, 4]), p(1, 3), p(3)], {}, 18, "instancenorm.param_rank", False),
    ("GroupNormalization", [ts(F, [2, 4, 3]), p(4), p(4)], {"num_groups": 0}, 21, "groupnorm.num_groups", True),
    ("GroupNormalization", [ts(F, [2, 6, 3]), p(6), p(6)], {"num_groups": 4}, 21, "groupnorm.divisible", True),
    ("LRN", [ts(F, [2, 3, 4, 4])], {"size": 0}, 18, "lrn.size", True),
    ("LRN", [ts(F, [3])], {"size": 3}, 18, "lrn.rank", True),
    ("LayerNormalization", [ts(F, [3]), p(2, 3)], {}, 18, "layernorm.scale", True),
    ("LayerNormalization", [ts(F, [2, 3]), p(3)], {"axis": 2}, 18, "axis.range", True),
    ("CumSum", [ts(F, []), np.array(0, np.int64)], {}, 18, "cumsum.rank", True),
    ("CumSum", [ts(F, [3]), np.array([[0]], np.int64)], {}, 18, "cumsum.axis", True),
    ("CumSum", [ts(F, [3]), np.array(1, np.int64)], {}, 18, "axis.range", True),
    ("Trilu", [ts(F, [3])], {}, 18, "trilu.rank", True),
    ("Trilu", [ts(F, [3, 3]), np.array([[0]], np.int64)], {}, 18, "trilu.k", True),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,ort", PRECONDITIONS,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(PRECONDITIONS)])
def test_precondition_is_a_conflict(op, inputs, attrs, opset, rule, ort):
    assert_refused(op, inputs, attrs, rule, opset=opset, ort=ort)


def test_batchnorm_rank1_input_has_one_channel():
    """A 1-D X of size N: C is 1 (the spec), so every parameter has length 1."""
    res = assert_runs_like_ort("BatchNormalization", [ts(F, [128]), p(1), p(1), p(1), p(1)])
    assert exprs(res, "y0") == (128,)
    res = infer_node("BatchNormalization", [ts(F, [128]), p(2), p(2), p(2), p(2)])
    assert "batchnorm.channels" in conflict_rules(res)
    res = assert_runs_like_ort("BatchNormalization", [ts(F, [2, 3]), p(3), p(3), p(3), p(3)], {"training_mode": 1},
                               opset=15, n_outputs=3)
    assert exprs(res, "y1") == (3,)


def test_onnx_backend_node_tests():
    """ONNX's backend node tests of these ops: no conflict, nothing unchecked, right dims."""
    check_backend(*("BatchNormalization", "LayerNormalization", "GroupNormalization", "InstanceNormalization", "LRN", "MeanVarianceNormalization", "Softmax", "LogSoftmax", "Hardmax", "CumSum", "Trilu"), min_cases=60)
