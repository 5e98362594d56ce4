"""com.microsoft fused ops: FusedConv, NhwcConv, FusedGemm, FusedMatMul, GemmFastGelu."""
import numpy as np
import pytest

from smtshape.testing import exprs, infer_node, ts

from .contrib_check import MS, check, conflict_rules, failed, ort_refuses, refused


# ---------------------------------------------------------------- FusedConv
def test_fused_conv_matches_onnxruntime_with_sum():
    w = np.zeros((4, 3, 3, 2), np.float32)
    res = check("FusedConv", [ts("float", ["N", 3, "H", "W"]), w, np.zeros(4, np.float32),
                              ts("float", ["N", 4, "P", "Q"])],
                {"activation": "Relu", "strides": [2, 1], "pads": [1, 0, 1, 1]},
                bindings=[{"N": 1, "H": 5, "W": 6, "P": 3, "Q": 6}, {"N": 2, "H": 8, "W": 2, "P": 4, "Q": 2},
                          {"N": 0, "H": 1, "W": 1, "P": 1, "Q": 1}])
    assert exprs(res, "y0")[:2] == ("N", 4)
    # Z must be exactly Y's shape: P, Q are tied to the conv output
    assert res.prove("P == (H + 2 - 3) // 2 + 1").name == "PROVEN"


def test_fused_conv_sum_mismatch_is_a_conflict():
    res = infer_node("FusedConv", [ts("float", [1, 3, 5, 5]), np.zeros((4, 3, 3, 3), np.float32), None,
                                   ts("float", [1, 4, 1, 1])], domain=MS)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_fused_conv_channel_conflict():
    res = infer_node("FusedConv", [ts("float", [1, 5, 5, 5]), np.zeros((4, 3, 3, 3), np.float32)], domain=MS)
    assert res.conflicts


def test_fused_conv_same_upper_stride2():
    check("FusedConv", [ts("float", [1, 2, "H", "W"]), np.zeros((3, 2, 3, 3), np.float32)],
          {"auto_pad": "SAME_UPPER", "strides": [2, 2], "activation": "Relu"},
          bindings=[{"H": 5, "W": 7}, {"H": 6, "W": 1}, {"H": 1, "W": 2}])


# ---------------------------------------------------------------- NhwcConv (no CPU kernel: spec)
def test_nhwc_conv_channels_last():
    res = infer_node("NhwcConv", [ts("float", ["N", "H", "W", 6]), ts("float", [8, 3, 3, 3])],
                     {"group": 2, "strides": [2, 2]}, domain=MS)
    assert not failed(res) and not res.conflicts
    assert exprs(res, "y0") == ("N", "(H - 3) // 2 + 1", "(W - 3) // 2 + 1", 8)
    assert res.evaluate({"N": 1, "H": 7, "W": 8})["y0"] == (1, 3, 3, 8)


def test_nhwc_conv_channel_conflict():
    res = infer_node("NhwcConv", [ts("float", [1, 5, 5, 4]), ts("float", [8, 3, 3, 3])], domain=MS)
    assert res.conflicts


# ---------------------------------------------------------------- FusedGemm
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_fused_gemm_matches_onnxruntime(ta, tb):
    a = ["K", "M"] if ta else ["M", "K"]
    b = [5, "K"] if tb else ["K", 5]
    check("FusedGemm", [ts("float", a), ts("float", b), ts("float", [5])],
          {"transA": ta, "transB": tb, "activation": "Relu"},
          bindings=[{"M": 3, "K": 4}, {"M": 0, "K": 2}, {"M": 1, "K": 0}])


def test_fused_gemm_inner_conflict():
    res = infer_node("FusedGemm", [ts("float", [3, 4]), ts("float", [5, 6])], domain=MS)
    assert res.conflicts


# ---------------------------------------------------------------- FusedMatMul
@pytest.mark.parametrize("attrs,a,b,binds", [
    ({}, ["B", "M", "K"], ["K", "N"], [{"B": 2, "M": 3, "K": 4, "N": 5}, {"B": 0, "M": 1, "K": 2, "N": 1}]),
    ({"transA": 1}, ["B", "K", "M"], ["B", "K", "N"], [{"B": 2, "M": 3, "K": 4, "N": 5}]),
    ({"transB": 1, "alpha": 0.5}, ["M", "K"], ["N", "K"], [{"M": 3, "K": 4, "N": 5}, {"M": 1, "K": 1, "N": 0}]),
    ({"transBatchA": 1}, ["M", "B", "K"], ["B", "K", "N"], [{"B": 2, "M": 3, "K": 4, "N": 5}]),
    ({"transBatchB": 1}, ["B", "M", "K"], ["K", "B", "N"], [{"B": 2, "M": 3, "K": 4, "N": 5}]),
    ({"transBatchB": 1, "transB": 1}, ["B", "M", "K"], ["N", "B", "K"], [{"B": 3, "M": 4, "K": 5, "N": 6}]),
    ({"transBatchA": 1, "transBatchB": 1}, ["M", 1, "K"], ["K", "B", "N"], [{"B": 3, "M": 4, "K": 5, "N": 6}]),
    ({"transBatchA": 1, "transA": 1}, ["K", "B", "C", "M"], ["B", "C", "K", "N"],
     [{"B": 2, "C": 3, "M": 4, "K": 5, "N": 6}]),
    ({}, ["K"], ["K", "N"], [{"K": 3, "N": 2}]),
])
def test_fused_matmul_matches_onnxruntime(attrs, a, b, binds):
    check("FusedMatMul", [ts("float", a), ts("float", b)], attrs, bindings=binds)


def test_fused_matmul_trans_batch_needs_equal_ranks():
    res = infer_node("FusedMatMul", [ts("float", [4, 3, 5]), ts("float", [5, 6])], {"transBatchA": 1}, domain=MS)
    assert refused(res) and "fusedmatmul.trans_batch" in conflict_rules(res)
    assert ort_refuses("FusedMatMul", [ts("float", [4, 3, 5]), ts("float", [5, 6])], {"transBatchA": 1})


def test_fused_matmul_inner_conflict_names_node():
    res = infer_node("FusedMatMul", [ts("float", [3, 4]), ts("float", [3, 4])], {"transB": 0}, domain=MS)
    assert res.conflicts and "node" in res.conflicts[0].nodes
    ok = infer_node("FusedMatMul", [ts("float", [3, 4]), ts("float", [3, 4])], {"transB": 1}, domain=MS)
    assert not ok.conflicts and exprs(ok, "y0") == (3, 3)


def test_gemm_fast_gelu_bias():
    res = infer_node("GemmFastGelu", [ts("float", ["B", "S", 4]), ts("float", [4, "N"]), ts("float", ["M"])],
                     domain=MS)
    assert exprs(res, "y0") == ("B", "S", "N")
    assert res.prove("M == N").name == "PROVEN"


# ---------------------------------------------------------------- property: FusedMatMul vs onnxruntime
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(ta=st.integers(0, 1), tb=st.integers(0, 1), tbatch=st.integers(0, 2), b=st.integers(0, 3),
       m=st.integers(0, 4), k=st.integers(1, 4), n=st.integers(0, 4), bcast=st.booleans())
def test_fused_matmul_property(ta, tb, tbatch, b, m, k, n, bcast):
    """Random batch / transpose combinations: smtshape's symbolic result, evaluated, equals
    onnxruntime's output shape."""
    tba, tbb = int(tbatch in (1, 2)), int(tbatch == 2)
    a_log = ["B", "M", "K"] if not (bcast and not tba) else [1, "M", "K"]
    b_log = ["B", "K", "N"]

    def phys(log, tbatch_, t):
        s = list(log)
        if t:
            s[-2], s[-1] = s[-1], s[-2]
        if tbatch_:
            s = [s[1], s[0], s[2]]
        return s

    check("FusedMatMul", [ts("float", phys(a_log, tba, ta)), ts("float", phys(b_log, tbb, tb))],
          {"transA": ta, "transB": tb, "transBatchA": tba, "transBatchB": tbb},
          bindings=[{"B": b, "M": m, "K": k, "N": n}])
