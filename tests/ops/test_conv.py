"""Conv / ConvTranspose / pooling rules: exact expressions, constraints,
conflicts, and property tests against onnxruntime (odd sizes, strides 2 and 3,
padding, dilation, ceil_mode, auto_pad)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from hypothesis import assume, given, settings, strategies as st
from onnx import TensorProto

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, ts


def ort_out_shape(op, x_shape, attrs, w=None, opset=19, n_outputs=1):
    """Output shapes of onnxruntime on a one-node model (x symbolic, w an initializer)."""
    ins = [ts("float", [f"x{k}" for k in range(len(x_shape))])] + ([w] if w is not None else [])
    m = node_model(op, ins, attrs, opset=opset, n_outputs=n_outputs)
    for k, o in enumerate(m.graph.output):
        o.type.tensor_type.elem_type = TensorProto.INT64 if k == 1 else TensorProto.FLOAT
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [r.shape for r in sess.run(None, {"x0": np.random.rand(*x_shape).astype(np.float32)})]


def infer_sym(op, rank, attrs, w=None, opset=19, n_outputs=1):
    ins = [ts("float", ["N", "C"] + [f"H{i}" for i in range(rank - 2)])] + ([w] if w is not None else [])
    return infer_node(op, ins, attrs, opset=opset, n_outputs=n_outputs)


def env_for(x_shape):
    env = {"N": x_shape[0], "C": x_shape[1]}
    env.update({f"H{i}": v for i, v in enumerate(x_shape[2:])})
    return env


# ---------------------------------------------------------------- exact expressions
def test_conv_strided_padded_expression():
    w = np.zeros((8, 3, 3, 3), np.float32)
    res = infer_node("Conv", [ts("float", ["N", 3, "H", "W"]), w], {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    assert exprs(res, "y0") == ("N", 8, "(H - 1) // 2 + 1", "(W - 1) // 2 + 1")
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y0"))
    win = [c for c in res.constraints if c.provenance.rule == "conv.window"]
    assert len(win) == 2 and "H + 2" in str(win[0].relation)


def test_conv_same_upper_stride2_is_ceil():
    w = np.zeros((4, 3, 3, 3), np.float32)
    res = infer_node("Conv", [ts("float", ["N", 3, "H", "W"]), w], {"strides": [2, 2], "auto_pad": "SAME_UPPER"})
    assert exprs(res, "y0")[2:] == ("ceildiv(H, 2)", "ceildiv(W, 2)")
    assert res.evaluate({"N": 1, "H": 7, "W": 9})["y0"] == (1, 4, 4, 5)
    assert ort_out_shape("Conv", (1, 3, 7, 9), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, w)[0] == (1, 4, 4, 5)


def test_conv_channel_mismatch_conflict():
    w = np.zeros((8, 3, 3, 3), np.float32)
    res = infer_node("Conv", [ts("float", ["N", 4, "H", "W"]), w])
    assert res.conflicts and "node" in res.conflicts[0].nodes
    assert "conv.channels" in res.conflicts[0].explain()


def test_conv_group_constraints():
    res = infer_node("Conv", [ts("float", ["N", "C", 8, 8]), ts("float", ["M", 2, 3, 3])], {"group": 4})
    assert res.prove("C == 8").name == "PROVEN"
    rules = {c.provenance.rule for c in res.constraints}
    assert {"conv.channels", "conv.group"} <= rules
    bad = infer_node("Conv", [ts("float", ["N", 8, 8, 8]), np.zeros((6, 2, 3, 3), np.float32)], {"group": 4})
    assert bad.conflicts and "conv.group" in bad.conflicts[0].explain()


def test_conv_window_too_small_is_conflict():
    res = infer_node("Conv", [ts("float", [1, 1, 2]), np.zeros((1, 1, 5), np.float32)])
    assert res.conflicts and "conv.window" in res.conflicts[0].explain()


def test_maxpool_ceil_mode_drops_window_in_padding():
    # H=6, k=2, s=2, pads 1/1, ceil: ceil((8-2)/2)+1 = 4, but window 3 starts at 6 >= H + pb = 7? no;
    # H=5, k=2, s=2, pads 0/1: ceil((6-2)/2)+1 = 3, window 2 starts at 4 < 5: kept -> 3
    # H=4, k=3, s=3, pads 1/2: ceil((7-3)/3)+1 = 3, window 2 starts at 6 >= 5: dropped -> 2
    attrs = {"kernel_shape": [3], "strides": [3], "pads": [1, 2], "ceil_mode": 1}
    res = infer_sym("MaxPool", 3, attrs, n_outputs=2)
    assert res.evaluate({"N": 1, "C": 1, "H0": 4})["y0"] == (1, 1, 2)
    assert ort_out_shape("MaxPool", (1, 1, 4), attrs, n_outputs=2)[0] == (1, 1, 2)
    assert exprs(res, "y1") == exprs(res, "y0")


def test_global_pool_and_indices_dtype():
    import onnx_ir as ir
    res = infer_node("GlobalAveragePool", [ts("float", ["N", "C", "H", "W"])])
    assert exprs(res, "y0") == ("N", "C", 1, 1)
    res = infer_sym("MaxPool", 4, {"kernel_shape": [2, 2]}, n_outputs=2)
    assert res.dtype("y1") == ir.DataType.INT64


def test_convtranspose_expression_and_output_shape():
    w = np.zeros((3, 4, 3, 3), np.float32)
    res = infer_node("ConvTranspose", [ts("float", ["N", 3, "H", "W"]), w],
                     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]})
    assert exprs(res, "y0") == ("N", 4, "2 * H", "2 * W")
    res = infer_node("ConvTranspose", [ts("float", ["N", 3, "H", "W"]), w],
                     {"strides": [2, 2], "output_shape": [10, 12]})
    assert exprs(res, "y0") == ("N", 4, 10, 12)


def test_bad_attributes_fail_cleanly():
    res = infer_sym("MaxPool", 4, {"kernel_shape": [2, 2], "strides": [0, 1]})
    assert res.shape("y0") is None
    res = infer_sym("MaxPool", 4, {"kernel_shape": [2, 2], "auto_pad": "BOGUS"})
    assert res.shape("y0") is None


# ---------------------------------------------------------------- properties vs onnxruntime
axis_params = st.tuples(st.integers(1, 13),   # H
                        st.integers(1, 4),    # k
                        st.integers(1, 3),    # s
                        st.integers(1, 2),    # d
                        st.integers(0, 2),    # pb
                        st.integers(0, 2))    # pe


def _attrs(params, auto_pad, with_kernel=True):
    hs, ks, ss, ds, pbs, pes = zip(*params)
    a = {"strides": list(ss), "dilations": list(ds)}
    if with_kernel:
        a["kernel_shape"] = list(ks)
    if auto_pad == "NOTSET":
        a["pads"] = list(pbs) + list(pes)
    else:
        a["auto_pad"] = auto_pad
    return a, hs, ks


def _valid(params, auto_pad, pool):
    for h, k, s, d, pb, pe in params:
        dk = (k - 1) * d + 1
        pads = pb + pe if auto_pad == "NOTSET" else 0
        if auto_pad in ("NOTSET", "VALID") and h + pads < dk:
            return False
        if pool and auto_pad == "NOTSET" and (pb >= k or pe >= k):
            return False      # onnxruntime: "Pad should be smaller than kernel"
        if pool and auto_pad.startswith("SAME") and (-(-h // s) - 1) * s + k - h < 0:
            return False      # onnxruntime pools: "padding values must be non-negative"
    return True


@settings(max_examples=30, deadline=None)
@given(st.lists(axis_params, min_size=1, max_size=2),
       st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
       st.integers(1, 2), st.integers(1, 3))
def test_conv_matches_onnxruntime(params, auto_pad, group, cpg):
    if auto_pad.startswith("SAME"):   # onnxruntime: dilation not supported with SAME
        params = [(h, k, s, 1, pb, pe) for h, k, s, d, pb, pe in params]
    assume(_valid(params, auto_pad, False))
    attrs, hs, ks = _attrs(params, auto_pad, with_kernel=False)
    attrs["group"] = group
    c = group * cpg
    w = np.random.rand(2 * group, cpg, *ks).astype(np.float32)
    x_shape = (2, c) + tuple(hs)
    truth = ort_out_shape("Conv", x_shape, attrs, w)[0]
    res = infer_sym("Conv", len(x_shape), attrs, w)
    assert res.evaluate(env_for(x_shape))["y0"] == truth
    assert res.conflicts == []


@settings(max_examples=30, deadline=None)
@given(st.lists(axis_params, min_size=1, max_size=2),
       st.sampled_from(["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
       st.sampled_from(["MaxPool", "MaxPool", "AveragePool", "LpPool"]), st.integers(0, 1))
def test_pool_matches_onnxruntime(params, auto_pad, op, ceil_mode):
    if op != "MaxPool" or auto_pad.startswith("SAME"):
        params = [(h, k, s, 1, pb, pe) for h, k, s, d, pb, pe in params]
    assume(_valid(params, auto_pad, True))
    attrs, hs, ks = _attrs(params, auto_pad)
    if op != "LpPool" or ceil_mode:
        attrs["ceil_mode"] = ceil_mode
    x_shape = (1, 2) + tuple(hs)
    truth = ort_out_shape(op, x_shape, attrs)[0]
    res = infer_sym(op, len(x_shape), attrs)
    assert res.evaluate(env_for(x_shape))["y0"] == truth
    assert res.conflicts == []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 13), min_size=1, max_size=2), st.integers(2, 3), st.integers(1, 4),
       st.integers(0, 2), st.integers(0, 2))
def test_ceil_mode_odd_sizes_strides_2_3(hs, s, k, pb, pe):
    """The ceil_mode trap: padded odd sizes, strides 2 and 3, all axes alike."""
    assume(pb < k and pe < k and all(h + pb + pe >= k for h in hs))
    attrs = {"kernel_shape": [k] * len(hs), "strides": [s] * len(hs), "pads": [pb] * len(hs) + [pe] * len(hs),
             "ceil_mode": 1}
    x_shape = (1, 1) + tuple(hs)
    truth = ort_out_shape("MaxPool", x_shape, attrs)[0]
    res = infer_sym("MaxPool", len(x_shape), attrs)
    assert res.evaluate(env_for(x_shape))["y0"] == truth


@settings(max_examples=30, deadline=None)
@given(st.lists(axis_params, min_size=1, max_size=2),
       st.sampled_from(["NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
       st.integers(1, 2), st.data())
def test_convtranspose_matches_onnxruntime(params, auto_pad, group, data):
    if auto_pad.startswith("SAME"):
        params = [(h, k, s, 1, pb, pe) for h, k, s, d, pb, pe in params]
    attrs, hs, ks = _attrs(params, auto_pad, with_kernel=False)
    opad = [data.draw(st.integers(0, s - 1)) for _, _, s, d, _, _ in params]
    attrs["output_padding"] = opad
    attrs["group"] = group
    out = [s * (h - 1) + op + (k - 1) * d + 1 - (pb + pe if auto_pad == "NOTSET" else 0)
           for (h, k, s, d, pb, pe), op in zip(params, opad)]
    assume(all(o > 0 for o in out))
    w = np.random.rand(2 * group, 3, *ks).astype(np.float32)
    x_shape = (1, 2 * group) + tuple(hs)
    truth = ort_out_shape("ConvTranspose", x_shape, attrs, w)[0]
    res = infer_sym("ConvTranspose", len(x_shape), attrs, w)
    assert res.evaluate(env_for(x_shape))["y0"] == truth
