"""com.microsoft activation ops."""
import pytest

from smtshape.testing import exprs, infer_node, ts

from .contrib_check import MS, check, conflict_rules, failed, ort_refuses, refused

BIND = [{"B": 2, "S": 3, "H": 4}, {"B": 0, "S": 1, "H": 2}, {"B": 1, "S": 0, "H": 1}]


@pytest.mark.parametrize("op", ["Gelu", "QuickGelu", "FastGelu", "ScaledSiLU"])
def test_unary_same_shape(op):
    res = check(op, [ts("float", ["B", "S", "H"])], bindings=BIND)
    assert exprs(res, "y0") == ("B", "S", "H")


@pytest.mark.parametrize("op", ["BiasGelu", "FastGelu"])
def test_bias_gelu_bias_is_last_dim(op):
    res = check(op, [ts("float", ["B", "S", "H"]), ts("float", ["H"])], bindings=BIND)
    assert exprs(res, "y0") == ("B", "S", "H")
    sym = infer_node(op, [ts("float", ["B", "S", "H"]), ts("float", ["K"])], domain=MS)
    assert sym.prove("K == H").name == "PROVEN"
    bad = infer_node(op, [ts("float", [2, 3, 4]), ts("float", [1])], domain=MS)
    assert bad.conflicts  # onnxruntime does not broadcast the bias


def test_bias_gelu_2d_bias_fails():
    res = infer_node("BiasGelu", [ts("float", [2, 3]), ts("float", [1, 3])], domain=MS)
    assert refused(res) and "biasgelu.bias" in conflict_rules(res)
    assert ort_refuses("BiasGelu", [ts("float", [2, 3]), ts("float", [1, 3])])


def test_scaled_silu_scale_must_be_scalar():
    res = infer_node("ScaledSiLU", [ts("float", [2, 3]), ts("float", [1])], domain=MS)
    assert refused(res) and "scaledsilu.scale" in conflict_rules(res)
    assert ort_refuses("ScaledSiLU", [ts("float", [2, 3]), ts("float", [1])])
    check("ScaledSiLU", [ts("float", ["B", "H"]), ts("float", [])], bindings=[{"B": 2, "H": 3}])


# CUDA-only ops: spec
def test_bias_add():
    res = infer_node("BiasAdd", [ts("float", ["N", "S", "C"]), ts("float", ["D"]), ts("float", ["M", "T", "E"])],
                     domain=MS)
    assert exprs(res, "y0") == ("N", "S", "C")
    for q in ("D == C", "M == N", "T == S", "E == C"):
        assert res.prove(q).name == "PROVEN", q


def test_bias_split_gelu_halves():
    res = infer_node("BiasSplitGelu", [ts("float", ["N", "S", "D"]), ts("float", ["D"])], domain=MS)
    assert exprs(res, "y0") == ("N", "S", "D // 2")
    assert res.prove("D % 2 == 0").name == "PROVEN"
    assert res.evaluate({"N": 1, "S": 4, "D": 10})["y0"] == (1, 4, 5)
    odd = infer_node("BiasSplitGelu", [ts("float", [1, 4, 7]), ts("float", [7])], domain=MS)
    assert odd.conflicts


def test_bias_dropout_outputs():
    res = infer_node("BiasDropout", [ts("float", ["B", "S", "H"]), ts("float", ["H"]), ts("float", ["B", "S", "H"])],
                     domain=MS, n_outputs=2)
    assert exprs(res, "y0") == ("B", "S", "H") and exprs(res, "y1") == ("B", "S", "H")


def test_bias_softmax_bias_broadcasts_onto_data():
    res = infer_node("BiasSoftmax", [ts("float", ["B", "N", "S", "T"]), ts("float", ["B", 1, 1, "U"])],
                     {"axis": -1, "is_inner_broadcast": 0}, domain=MS)
    assert exprs(res, "y0") == ("B", "N", "S", "T")
    assert res.prove("U == T or U == 1").name == "PROVEN"
