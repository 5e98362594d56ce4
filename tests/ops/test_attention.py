"""Attention, RMSNormalization, RotaryEmbedding, TensorScatter, SwiGLU, LinearAttention,
CausalConvWithState, FlexAttention: onnxruntime where it implements the op, and ONNX's
backend node tests (reference outputs) with every input dim symbolic."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smtshape import analyze
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

from .node_truth import cases, check_static, check_symbolic


def f(*shape):
    return np.asarray(np.random.rand(*shape), dtype=np.float32)




def rule_ids(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints if c.provenance.node}


def ort_check(op, inputs, attrs, feeds, bind, opset=23, n_outputs=1):
    m = node_model(op, inputs, attrs, opset=opset, n_outputs=n_outputs)
    res = analyze(m)
    assert not refused(res) and not unchecked(res)
    got = run_onnxruntime(m, feeds)
    ev = res.evaluate(bind)
    for k, a in enumerate(got):
        s = res.shape(f"y{k}")
        assert all(d.exactness is Exactness.EXACT for d in s), (k, s)
        assert ev[f"y{k}"] == a.shape, (k, ev[f"y{k}"], a.shape)
    return res


# ---------------------------------------------------------------- Attention
@pytest.mark.parametrize("qn,kvn", [(4, 2), (2, 2), (3, 1)])
def test_attention_3d_head_sizes_symbolic(qn, kvn):
    """Y's last dim is q_num_heads * (V hidden / kv_num_heads), exactly, for symbolic hidden sizes."""
    ins = [ts("float", ["B", "S", "HQ"]), ts("float", ["B", "T", "HK"]), ts("float", ["B", "T", "HV"])]
    for b, s, t, hd, vhd in [(2, 3, 5, 2, 3), (1, 1, 4, 4, 1), (3, 2, 1, 2, 2)]:  # onnxruntime: S >= 1
        feeds = {"x0": f(b, s, qn * hd), "x1": f(b, t, kvn * hd), "x2": f(b, t, kvn * vhd)}
        res = ort_check("Attention", ins, {"q_num_heads": qn, "kv_num_heads": kvn}, feeds,
                        {"B": b, "S": s, "T": t, "HQ": qn * hd, "HK": kvn * hd, "HV": kvn * vhd})
    y = exprs(res, "y0")
    assert y[:2] == ("B", "S")
    assert y[2] == ("HV" if qn == kvn else f"{qn // kvn} * HV")
    assert res.prove(f"{qn} * HK == {kvn} * HQ").name == "PROVEN"


def test_attention_4d_with_past_and_all_outputs():
    ins = [ts("float", ["B", 4, "S", 8]), ts("float", ["B", 2, "T", 8]), ts("float", ["B", 2, "T", 6]),
           ts("float", ["B", 1, "S", "M"]), ts("float", ["B", 2, "P", 8]), ts("float", ["B", 2, "P", 6])]
    for b, s, t, p in [(2, 3, 1, 4), (1, 1, 2, 0), (3, 2, 2, 1)]:
        feeds = {"x0": f(b, 4, s, 8), "x1": f(b, 2, t, 8), "x2": f(b, 2, t, 6), "x3": f(b, 1, s, p + t),
                 "x4": f(b, 2, p, 8), "x5": f(b, 2, p, 6)}
        res = ort_check("Attention", ins, {}, feeds, {"B": b, "S": s, "T": t, "P": p, "M": p + t}, n_outputs=4)
    assert exprs(res, "y0") == ("B", 4, "S", 6)
    assert exprs(res, "y1") == ("B", 2, "P + T", 8)
    assert exprs(res, "y2") == ("B", 2, "P + T", 6)
    assert exprs(res, "y3") == ("B", 4, "S", "P + T")
    assert res.prove("M <= P + T").name == "PROVEN"


def test_attention_3d_with_past_present():
    ins = [ts("float", ["B", "S", 8]), ts("float", ["B", "S", 4]), ts("float", ["B", "S", 6]), None,
           ts("float", ["B", 2, "P", 2]), ts("float", ["B", 2, "P", 3])]
    for b, s, p in [(1, 2, 3), (2, 1, 0)]:
        feeds = {"x0": f(b, s, 8), "x1": f(b, s, 4), "x2": f(b, s, 6), "x4": f(b, 2, p, 2), "x5": f(b, 2, p, 3)}
        res = ort_check("Attention", ins, {"q_num_heads": 4, "kv_num_heads": 2}, feeds,
                        {"B": b, "S": s, "P": p}, n_outputs=3)
    assert exprs(res, "y0") == ("B", "S", 12)
    assert exprs(res, "y1") == ("B", 2, "P + S", 2)


def test_attention_3d_head_size_mismatch_is_conflict():
    # Q head size 8 / 4 = 2, K head size 6 / 2 = 3
    res = infer_node("Attention", [ts("float", [1, 3, 8]), ts("float", [1, 5, 6]), ts("float", [1, 5, 6])],
                     {"q_num_heads": 4, "kv_num_heads": 2}, opset=23)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_attention_v_hidden_not_multiple_is_conflict():
    res = infer_node("Attention", [ts("float", [1, 3, 8]), ts("float", [1, 5, 4]), ts("float", [1, 5, 5])],
                     {"q_num_heads": 4, "kv_num_heads": 2}, opset=23)
    assert res.conflicts


def test_attention_4d_mismatches_are_conflicts():
    base = dict(q=[1, 4, 3, 8], k=[1, 2, 5, 8], v=[1, 2, 5, 6])
    for key, bad in (("k", [1, 2, 5, 7]), ("v", [1, 2, 4, 6]), ("k", [1, 3, 5, 8]), ("q", [2, 4, 3, 8])):
        shp = dict(base)
        shp[key] = bad
        res = infer_node("Attention", [ts("float", shp["q"]), ts("float", shp["k"]), ts("float", shp["v"])],
                         {}, opset=23)
        assert res.conflicts, (key, bad)


def test_attention_missing_heads_for_3d_is_a_conflict():
    res = infer_node("Attention", [ts("float", [1, 3, 8]), ts("float", [1, 5, 8]), ts("float", [1, 5, 8])],
                     {}, opset=23)
    assert refused(res) and rule_ids(res) == {"attention.num_heads"} and res.shape("y0") is None


def test_attention_mask_too_long_is_conflict():
    res = infer_node("Attention", [ts("float", [1, 2, 3, 4]), ts("float", [1, 2, 5, 4]), ts("float", [1, 2, 5, 4]),
                                   ts("float", [3, 6])], {}, opset=23)
    assert res.conflicts


def test_attention_nonpad_kv_seqlen_batch():
    res = infer_node("Attention", [ts("float", ["B", 2, 3, 4]), ts("float", ["B", 2, 5, 4]),
                                   ts("float", ["B", 2, 5, 4]), None, None, None, ts("int64", ["N"])], {}, opset=24)
    assert res.prove("N == B").name == "PROVEN"


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.sampled_from([(2, 1), (2, 2), (4, 2), (6, 3)]),
       st.integers(1, 3), st.integers(1, 3))
def test_attention_3d_property(b, s, t, heads, hd, vhd):
    qn, kvn = heads
    ins = [ts("float", ["B", "S", "HQ"]), ts("float", ["B", "T", "HK"]), ts("float", ["B", "T", "HV"])]
    feeds = {"x0": f(b, s, qn * hd), "x1": f(b, t, kvn * hd), "x2": f(b, t, kvn * vhd)}
    ort_check("Attention", ins, {"q_num_heads": qn, "kv_num_heads": kvn}, feeds,
              {"B": b, "S": s, "T": t, "HQ": qn * hd, "HK": kvn * hd, "HV": kvn * vhd}, opset=24)


# ---------------------------------------------------------------- RMSNormalization
@pytest.mark.parametrize("axis,scale", [(-1, ["D"]), (1, ["S", "D"]), (-1, [1])])
def test_rms_norm(axis, scale):
    for b, s, d in [(2, 3, 8), (1, 1, 1), (0, 2, 4)]:
        sc = [{"S": s, "D": d}.get(x, x) for x in scale]
        res = ort_check("RMSNormalization", [ts("float", ["B", "S", "D"]), ts("float", scale)], {"axis": axis},
                        {"x0": f(b, s, d), "x1": f(*sc)}, {"B": b, "S": s, "D": d})
    assert exprs(res, "y0") == ("B", "S", "D")


def test_rms_norm_scale_conflict():
    res = infer_node("RMSNormalization", [ts("float", [2, 8]), ts("float", [7])], {}, opset=23)
    assert res.conflicts


# ---------------------------------------------------------------- RotaryEmbedding
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("pos", [False, True])
@pytest.mark.parametrize("rot", [0, 4])
def test_rotary_against_onnxruntime(rank, pos, rot):
    nh, hd = 2, 8
    half = (rot or hd) // 2
    for b, s in [(2, 3), (1, 1)]:
        xs = [b, nh, s, hd] if rank == 4 else [b, s, nh * hd]
        xsym = ["B", nh, "S", hd] if rank == 4 else ["B", "S", nh * hd]
        if pos:
            ins = [ts("float", xsym), ts("float", ["MP", half]), ts("float", ["MP", half]), ts("int64", ["B", "S"])]
            feeds = {"x0": f(*xs), "x1": f(7, half), "x2": f(7, half),
                     "x3": np.random.randint(0, 7, size=(b, s)).astype(np.int64)}
            bind = {"B": b, "S": s, "MP": 7}
        else:
            ins = [ts("float", xsym), ts("float", ["B", "S", half]), ts("float", ["B", "S", half])]
            feeds = {"x0": f(*xs), "x1": f(b, s, half), "x2": f(b, s, half)}
            bind = {"B": b, "S": s}
        attrs = {"rotary_embedding_dim": rot}
        if rank == 3:
            attrs["num_heads"] = nh
        res = ort_check("RotaryEmbedding", ins, attrs, feeds, bind)
    assert exprs(res, "y0") == tuple(xsym)


def test_rotary_symbolic_head_and_cache_conflict():
    res = infer_node("RotaryEmbedding", [ts("float", ["B", "S", "H"]), ts("float", ["B", "S", "C"]),
                                         ts("float", ["B", "S", "C"])], {"num_heads": 4}, opset=23)
    assert res.prove("8 * C == H").name == "PROVEN"
    res = infer_node("RotaryEmbedding", [ts("float", [1, 2, 3, 8]), ts("float", [1, 3, 3]), ts("float", [1, 3, 3])],
                     {}, opset=23)
    assert res.conflicts


# ---------------------------------------------------------------- TensorScatter
@pytest.mark.parametrize("axis", [-2, 1, 2])
def test_tensor_scatter(axis):
    shape = ["B", "H", "M", 4]
    ax = axis % 4
    for b, h, mx, t in [(2, 3, 8, 2), (1, 1, 3, 3), (2, 2, 4, 0)]:
        cache = [b, h, mx, 4]
        upd = list(cache)
        t = min(t, cache[ax])
        upd[ax] = t
        ushape = list(shape)
        ushape[ax] = "T"
        res = ort_check("TensorScatter", [ts("float", shape), ts("float", ushape), ts("int64", ["B"])], {"axis": axis},
                        {"x0": f(*cache), "x1": f(*upd), "x2": np.zeros(b, np.int64)},
                        {"B": b, "H": h, "M": mx, "T": t}, opset=24)
    assert exprs(res, "y0") == ("B", "H", "M", 4)
    assert res.prove(f"T <= {shape[ax]}").name == "PROVEN"


def test_tensor_scatter_conflicts():
    res = infer_node("TensorScatter", [ts("float", [2, 3, 4, 5]), ts("float", [2, 3, 6, 5])], {}, opset=24)
    assert res.conflicts
    res = infer_node("TensorScatter", [ts("float", [2, 3, 4, 5]), ts("float", [2, 2, 1, 5])], {}, opset=24)
    assert res.conflicts
    res = infer_node("TensorScatter", [ts("float", [2, 3, 4, 5]), ts("float", [2, 3, 1, 5])], {"axis": 0}, opset=24)
    assert rule_ids(res) == {"tensorscatter.axis"}


# ---------------------------------------------------------------- SwiGLU / LinearAttention / CausalConvWithState
def test_swiglu_same_shape_no_broadcast():
    res = infer_node("SwiGLU", [ts("float", ["N", "D"]), ts("float", ["M", "E"])], {}, opset=28)
    assert res.prove("N == M and D == E").name == "PROVEN"
    res = infer_node("SwiGLU", [ts("float", [2, 3]), ts("float", [1, 3])], {}, opset=28)
    assert res.conflicts


def test_linear_attention_shapes():
    res = infer_node("LinearAttention", [ts("float", ["B", "T", "HQ"]), ts("float", ["B", "T", "HK"]),
                                         ts("float", ["B", "T", "HV"]), ts("float", ["B", 2, "DK", "DV"])],
                     {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "linear"}, opset=27, n_outputs=2)
    assert exprs(res, "y0") == ("B", "T", "2 * HV")
    assert res.prove("4 * DK == HQ").name == "PROVEN" and res.prove("2 * DV == HV").name == "PROVEN"
    res = infer_node("LinearAttention", [ts("float", [1, 2, 8]), ts("float", [1, 2, 6]), ts("float", [1, 2, 4])],
                     {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "linear"}, opset=27, n_outputs=2)
    assert rule_ids(res) == {"linearattention.shapes"}


def test_causal_conv_with_state_shapes():
    res = infer_node("CausalConvWithState", [ts("float", ["B", "C", "L"]), ts("float", ["C2", 1, "K"]),
                                             ts("float", ["C3"]), ts("float", ["B", "C", "S"])], {}, opset=27,
                     n_outputs=2)
    assert exprs(res, "y0") == ("B", "C", "L")
    assert exprs(res, "y1")[:2] == ("B", "C") and exprs(res, "y1")[2] in ("S", "K - 1")
    assert res.prove("S == K - 1 and C2 == C and C3 == C").name == "PROVEN"
    res = infer_node("CausalConvWithState", [ts("float", [1, 4, 5]), ts("float", [4, 1, 3]), None,
                                             ts("float", [1, 4, 3])], {}, opset=27, n_outputs=2)
    assert res.conflicts


# ---------------------------------------------------------------- violated preconditions
Q4, K4, V4 = ts("float", [2, 4, 3, 8]), ts("float", [2, 2, 5, 8]), ts("float", [2, 2, 5, 6])
PK, PV, NP = ts("float", [2, 2, 4, 8]), ts("float", [2, 2, 4, 6]), ts("int64", [2])
QL, KL, VL = ts("float", [2, 3, 16]), ts("float", [2, 3, 8]), ts("float", [2, 3, 8])
DEC, BET = ts("float", [2, 3, 2]), ts("float", [2, 3, 2])
LA = {"q_num_heads": 2, "kv_num_heads": 1}


@pytest.mark.parametrize("op,inputs,attrs,opset,n_out,rule", [
    # Attention-25 (ONNX's test_attention_25_rejects_invalid_attribute_and_cache_combinations)
    ("Attention", [Q4, K4, V4], {"left_window_size": -2}, 25, 1, "attention.window"),
    ("Attention", [Q4, K4, V4], {"right_window_size": -2}, 25, 1, "attention.window"),
    ("Attention", [Q4, K4, V4, None, PK], {}, 25, 1, "attention.past"),
    ("Attention", [Q4, K4, V4, None, PK], {}, 23, 1, "attention.past"),
    ("Attention", [Q4, K4, V4], {}, 25, 2, "attention.present"),
    ("Attention", [Q4, K4, V4, None, PK, PV, NP], {}, 25, 1, "attention.nonpad_kv_seqlen"),
    ("Attention", [Q4, K4, V4], {"q_num_heads": 4, "kv_num_heads": 2}, 25, 1, "attention.num_heads"),
    ("Attention", [ts("float", [2, 3, 16]), ts("float", [2, 5, 8]), ts("float", [2, 5, 8])],
     {"q_num_heads": 3, "kv_num_heads": 2}, 23, 1, "attention.num_heads"),
    ("Attention", [ts("float", [2, 3]), K4, V4], {}, 23, 1, "attention.rank"),
    ("Attention", [Q4, K4, V4], {"qk_matmul_output_mode": 5}, 23, 4, "attention.qk_matmul_output_mode"),
    ("Attention", [Q4, K4, V4], {"softmax_precision": 7}, 25, 1, "attention.softmax_precision"),
    # LinearAttention (ONNX's test_linear_attention_* refusals)
    ("LinearAttention", [ts("float", [2, 3, 4, 4]), KL, VL], {**LA, "update_rule": "linear"}, 27, 1,
     "linearattention.rank"),
    ("LinearAttention", [QL, KL, VL, ts("float", [2, 1, 8])], {**LA, "update_rule": "linear"}, 27, 1,
     "linearattention.rank"),
    ("LinearAttention", [QL, KL, VL, None, ts("float", [2, 3]), BET], LA, 27, 1, "linearattention.rank"),
    ("LinearAttention", [QL, KL, VL], {"q_num_heads": 3, "kv_num_heads": 2, "update_rule": "linear"}, 27, 1,
     "linearattention.num_heads"),
    ("LinearAttention", [QL, KL, VL], {"q_num_heads": 0, "kv_num_heads": 1, "update_rule": "linear"}, 27, 1,
     "linearattention.num_heads"),
    ("LinearAttention", [QL, KL, VL, None, None, BET], LA, 27, 1, "linearattention.update_rule"),
    ("LinearAttention", [QL, KL, VL, None, DEC], LA, 27, 1, "linearattention.update_rule"),
    ("LinearAttention", [QL, KL, VL, None, DEC], {**LA, "update_rule": "linear"}, 27, 1,
     "linearattention.update_rule"),
    ("LinearAttention", [QL, KL, VL, None, None, BET], {**LA, "update_rule": "gated"}, 27, 1,
     "linearattention.update_rule"),
    ("LinearAttention", [QL, KL, VL], {**LA, "update_rule": "fancy"}, 27, 1, "linearattention.update_rule"),
    # CausalConvWithState
    ("CausalConvWithState", [ts("float", [2, 4]), ts("float", [4, 1, 3])], {}, 27, 1, "causalconv.rank"),
    ("CausalConvWithState", [ts("float", [2, 4, 5]), ts("float", [4, 3])], {}, 27, 1, "causalconv.rank"),
    ("CausalConvWithState", [ts("float", [2, 4, 5]), ts("float", [4, 1, 3])], {"activation": "forza inter"}, 27, 1,
     "causalconv.activation"),
    # SwiGLU, RotaryEmbedding, TensorScatter
    ("SwiGLU", [ts("float", [2, 3, 8]), ts("float", [2, 3])], {}, 28, 1, "swiglu.rank"),
    ("RotaryEmbedding", [ts("float", [2, 3, 8]), ts("float", [2, 3, 2]), ts("float", [2, 3, 2])], {}, 23, 1,
     "rotary.num_heads"),
    ("RotaryEmbedding", [ts("float", [2, 3]), ts("float", [2, 3, 2]), ts("float", [2, 3, 2])], {}, 23, 1,
     "rotary.rank"),
    ("TensorScatter", [ts("float", [2, 3, 4, 5]), ts("float", [2, 3, 1, 5])], {"mode": "ring"}, 24, 1,
     "tensorscatter.mode"),
    ("TensorScatter", [ts("float", [2, 3, 4, 5]), ts("float", [2, 3, 1])], {}, 24, 1, "tensorscatter.rank"),
])
def test_violated_preconditions_are_conflicts(op, inputs, attrs, opset, n_out, rule):
    if op in ("LinearAttention", "CausalConvWithState"):
        n_out = 2                    # (present_state is a required output)
    res = infer_node(op, inputs, attrs, opset=opset, n_outputs=n_out)
    assert refused(res) and rule_ids(res) == {rule} and not unchecked(res)


def test_flex_attention_rank_and_modifier_graph():
    from onnx import TensorProto, helper
    res = infer_node("FlexAttention", [ts("float", [2, 4, 3]), ts("float", [2, 4, 5, 8]), ts("float", [2, 4, 5, 8])],
                     {}, opset=23, domain="ai.onnx.preview")
    assert refused(res) and rule_ids(res) == {"flexattention.rank"}
    mod = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "m",
                            [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["a", "b"])],
                            [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    res = infer_node("FlexAttention", [ts("float", [2, 4, 3, 8]), ts("float", [2, 4, 5, 8]),
                                       ts("float", [2, 4, 5, 8])], {"score_mod": mod}, opset=23,
                     domain="ai.onnx.preview")
    assert refused(res) and rule_ids(res) == {"flexattention.modifier"}


def test_attention_25_present_and_window_checks_are_opset_25_only():
    """Attention-23/24: onnxruntime and the reference run a node asking only for present_key
    and 4-D inputs with q_num_heads: no conflict there (ONNX's inference checks them from 25)."""
    for opset in (23, 24):
        res = infer_node("Attention", [Q4, K4, V4], {"q_num_heads": 4, "kv_num_heads": 2}, opset=opset, n_outputs=2)
        assert not refused(res) and not unchecked(res)
        m = node_model("Attention", [Q4, K4, V4], {}, opset=opset, n_outputs=2)
        assert [a.shape for a in run_onnxruntime(m, {"x0": f(2, 4, 3, 8), "x1": f(2, 2, 5, 8),
                                                      "x2": f(2, 2, 5, 6)})] == [(2, 4, 3, 6), (2, 2, 5, 8)]


def test_attention_mixed_ranks_are_not_modeled():
    res = infer_node("Attention", [ts("float", [2, 3, 16]), ts("float", [2, 2, 5, 8]), ts("float", [2, 2, 5, 8])],
                     {"q_num_heads": 2, "kv_num_heads": 2}, opset=25)
    assert not refused(res) and [u.reason.name for u in unchecked(res)] == ["NOT_MODELED"]


def test_linear_attention_output_from_past_state_when_qkv_unknown():
    """ONNX's test_linear_attention_unknown_qkv_with_past_state: d_v from past_state."""
    res = infer_node("LinearAttention", [ts("float", None), ts("float", None), ts("float", None),
                                         ts("float", ["B", 2, 16, 32])],
                     {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"}, opset=27, n_outputs=2)
    assert exprs(res, "y0")[2] == 64 and exprs(res, "y1") == ("B", 2, 16, 32)


def test_linear_attention_decay_multiple_of_kv_heads_when_dk_unknown():
    """d_k unknown: a decay of H_kv * d_k is any multiple of H_kv, not a conflict."""
    res = infer_node("LinearAttention", [ts("float", None), ts("float", None), ts("float", None), None,
                                         ts("float", [1, 3, 8]), ts("float", [1, 3, 2])], LA | {"kv_num_heads": 2},
                     opset=27, n_outputs=2)
    assert not refused(res)
    res = infer_node("LinearAttention", [ts("float", None), ts("float", None), ts("float", None), None,
                                         ts("float", [1, 3, 7]), ts("float", [1, 3, 2])], LA | {"kv_num_heads": 2},
                     opset=27, n_outputs=2)
    assert rule_ids(res) == {"linearattention.shapes"}


# ---------------------------------------------------------------- backend node tests
FAMILY = ("Attention", "RMSNormalization", "RotaryEmbedding", "TensorScatter", "SwiGLU", "LinearAttention",
          "CausalConvWithState", "FlexAttention")


def test_backend_node_tests_static_and_symbolic():
    found = cases(*FAMILY)
    assert len(found) >= 150
    seen = set()
    for tc in found:
        seen.update(n.op_type for n in tc.model.graph.node if n.op_type in FAMILY)
        check_static(tc)
        check_symbolic(tc)
    assert seen == set(FAMILY)
