"""com.microsoft attention ops against onnxruntime's CPU kernels (packed MHA layouts and
DecoderMaskedMultiHeadAttention are GPU-only: spec)."""
import numpy as np
import pytest

from smtshape.testing import exprs, infer_node, ts

from .contrib_check import MS, check, failed


# ---------------------------------------------------------------- Attention
def test_attention_equal_parts_with_present():
    res = check("Attention", [ts("float", ["B", "S", 5]), np.zeros((5, 24), np.float32), np.zeros(24, np.float32)],
                {"num_heads": 2}, n_outputs=2, bindings=[{"B": 2, "S": 3}, {"B": 1, "S": 1}])
    assert exprs(res, "y0") == ("B", "S", 8)
    assert exprs(res, "y1") == (2, "B", 2, "S", 4)


def test_attention_past_grows():
    res = check("Attention", [ts("float", ["B", "S", 5]), np.zeros((5, 24), np.float32), np.zeros(24, np.float32),
                              None, ts("float", [2, "B", 2, "P", 4])],
                {"num_heads": 2}, n_outputs=2, bindings=[{"B": 2, "S": 3, "P": 4}, {"B": 1, "S": 1, "P": 0}])
    assert exprs(res, "y1") == (2, "B", 2, "P + S", 4)


def test_attention_qkv_hidden_sizes():
    res = check("Attention", [ts("float", ["B", "S", 5]), np.zeros((5, 20), np.float32), np.zeros(20, np.float32)],
                {"num_heads": 2, "qkv_hidden_sizes": [8, 8, 4]}, bindings=[{"B": 2, "S": 3}])
    assert exprs(res, "y0") == ("B", "S", 4)


def test_attention_constraints():
    res = infer_node("Attention", [ts("float", ["B", "S", "Hin"]), ts("float", ["R", "C"]), ts("float", ["L"])],
                     {"num_heads": 4}, domain=MS)
    assert res.prove("R == Hin").name == "PROVEN" and res.prove("L == C").name == "PROVEN"
    assert res.prove("C % 3 == 0").name == "PROVEN" and res.prove("(C // 3) % 4 == 0").name == "PROVEN"
    assert exprs(res, "y0") == ("B", "S", "C // 3")
    bad = infer_node("Attention", [ts("float", [1, 2, 5]), np.zeros((6, 24), np.float32)], {"num_heads": 2}, domain=MS)
    assert bad.conflicts


# ---------------------------------------------------------------- MultiHeadAttention
def test_mha_cross_attention_value_hidden():
    res = check("MultiHeadAttention", [ts("float", ["B", "S", 8]), ts("float", ["B", "L", 8]),
                                       ts("float", ["B", "L", 6])],
                {"num_heads": 2}, n_outputs=3, bindings=[{"B": 2, "S": 3, "L": 5}, {"B": 1, "S": 1, "L": 1}])
    assert exprs(res, "y0") == ("B", "S", 6)
    assert exprs(res, "y1") == ("B", 2, "L", 4) and exprs(res, "y2") == ("B", 2, "L", 3)


def test_mha_past_concatenates():
    res = check("MultiHeadAttention", [ts("float", ["B", "S", 8]), ts("float", ["B", "S", 8]),
                                       ts("float", ["B", "S", 8]), None, None, None,
                                       ts("float", ["B", 2, "P", 4]), ts("float", ["B", 2, "P", 4])],
                {"num_heads": 2}, n_outputs=3, bindings=[{"B": 2, "S": 3, "P": 4}, {"B": 1, "S": 1, "P": 7}])
    assert exprs(res, "y1") == ("B", 2, "P + S", 4)


def test_mha_bnsh_key_value():
    res = check("MultiHeadAttention", [ts("float", ["B", "S", 8]), ts("float", ["B", 2, "L", 4]),
                                       ts("float", ["B", 2, "L", 4])],
                {"num_heads": 2}, n_outputs=3, bindings=[{"B": 2, "S": 3, "L": 5}])
    assert exprs(res, "y0") == ("B", "S", 8) and exprs(res, "y1") == ("B", 2, "L", 4)


def test_mha_bias_and_mask():
    check("MultiHeadAttention", [ts("float", ["B", "S", 8]), ts("float", ["B", "L", 8]), ts("float", ["B", "L", 8]),
                                 np.zeros(24, np.float32), ts("int32", ["B", "L"])],
          {"num_heads": 2}, n_outputs=3, bindings=[{"B": 2, "S": 3, "L": 5}])


def test_mha_constraints_and_packed_layouts():
    res = infer_node("MultiHeadAttention", [ts("float", ["B", "S", "D"]), ts("float", ["C", "L", "E"]),
                                            ts("float", ["F", "M", "V"])], {"num_heads": 4}, domain=MS, n_outputs=4)
    for q in ("C == B", "E == D", "F == B", "M == L", "D % 4 == 0", "V % 4 == 0"):
        assert res.prove(q).name == "PROVEN", q
    assert exprs(res, "y3") == ("B", 4, "S", "L")
    kv = infer_node("MultiHeadAttention", [ts("float", ["B", "S", 16]), ts("float", ["B", "L", 4, 2, 4])],
                    {"num_heads": 4}, domain=MS, n_outputs=3)
    assert exprs(kv, "y0") == ("B", "S", 16) and exprs(kv, "y1") == ("B", 4, "L", 4)
    qkv = infer_node("MultiHeadAttention", [ts("float", ["B", "S", 4, 3, 8])], {"num_heads": 4}, domain=MS,
                     n_outputs=3)
    assert exprs(qkv, "y0") == ("B", "S", 32) and exprs(qkv, "y2") == ("B", 4, "S", 8)
    bad = infer_node("MultiHeadAttention", [ts("float", [1, 2, 8]), ts("float", [1, 3, 6])], {"num_heads": 2},
                     domain=MS)
    assert bad.conflicts


def test_decoder_masked_mha_presents_are_past():
    res = infer_node("DecoderMaskedMultiHeadAttention",
                     [ts("float", ["B", 1, 16]), ts("float", ["B", 1, 16]), ts("float", ["B", 1, 16]), None, None,
                      ts("float", ["B", 4, "M", 4]), ts("float", ["B", 4, "M", 4])],
                     {"num_heads": 4, "past_present_share_buffer": 1}, domain=MS, n_outputs=3)
    assert exprs(res, "y0") == ("B", 1, 16) and exprs(res, "y1") == ("B", 4, "M", 4)


# ---------------------------------------------------------------- GroupQueryAttention
def _gqa(B, S, P, T, N=4, Nk=2, H=8, packed=False, past=True):
    q = ts("float", [B, S, (N + 2 * Nk) * H if packed else N * H])
    kv = [None, None] if packed else [ts("float", [B, S, Nk * H])] * 2
    pasts = [ts("float", [B, Nk, P, H])] * 2 if past else [None, None]
    return [q, *kv, *pasts, np.full(B if isinstance(B, int) else 1, 0, np.int32), np.array(T, np.int32)]


def _gqa_feeds(T):
    return lambda b: {}


@pytest.mark.parametrize("S,P,T", [(3, 0, 3), (3, 5, 8), (1, 5, 6), (1, 8, 6), (1, 8, 9), (3, 8, 11)])
def test_gqa_present_is_max_of_past_and_total(S, P, T):
    ins = _gqa(1, S, P, T)
    ins[5] = np.full(1, T - 1, np.int32)
    res = check("GroupQueryAttention", ins, {"num_heads": 4, "kv_num_heads": 2}, n_outputs=3)
    assert exprs(res, "y1") == (1, 2, max(P, T), 8)


def test_gqa_symbolic_past_and_packed():
    ins = [ts("float", ["B", "S", 64]), None, None, ts("float", ["B", 2, "P", 8]), ts("float", ["B", 2, "P", 8]),
           ts("int32", ["B"]), ts("int32", [])]
    res = infer_node("GroupQueryAttention", ins, {"num_heads": 4, "kv_num_heads": 2}, domain=MS, n_outputs=3)
    assert not failed(res) and not res.conflicts
    assert exprs(res, "y0") == ("B", "S", 32)
    y1 = res.shape("y1")
    assert y1[3].expr == 8 and y1[1].expr == 2
    assert y1[2].exactness.name != "EXACT"      # total_sequence_length is a runtime scalar
    bad = infer_node("GroupQueryAttention", [ts("float", [1, 3, 30]), None, None, None, None,
                                             ts("int32", [1]), ts("int32", [])],
                     {"num_heads": 4, "kv_num_heads": 2}, domain=MS)
    assert bad.conflicts                         # 30 is not a multiple of num_heads + 2 * kv_num_heads


def test_gqa_kv_hidden_constraint():
    res = infer_node("GroupQueryAttention", [ts("float", ["B", "S", 32]), ts("float", ["B", "S", "E"]),
                                             ts("float", ["B", "S", "E"]), None, None, ts("int32", ["B"]),
                                             ts("int32", [])], {"num_heads": 4, "kv_num_heads": 2}, domain=MS)
    assert res.prove("E == 16").name == "PROVEN"


# ---------------------------------------------------------------- RotaryEmbedding
@pytest.mark.parametrize("x,pos,attrs", [
    (["B", "S", 8], ["B", "S"], {}),
    (["B", "S", 8], [1], {}),
    (["B", 2, "S", 4], ["B", "S"], {}),
    (["B", "S", 8], ["B", "S"], {"num_heads": 2, "rotary_embedding_dim": 4}),
])
def test_rotary_embedding(x, pos, attrs):
    res = check("RotaryEmbedding", [ts("float", x), ts("int64", pos), np.zeros((16, 2), np.float32),
                                    np.zeros((16, 2), np.float32)], attrs,
                bindings=[{"B": 2, "S": 3}, {"B": 1, "S": 1}])
    assert exprs(res, "y0") == tuple(x)


def test_rotary_embedding_position_ids_constraint():
    res = infer_node("RotaryEmbedding", [ts("float", ["B", 2, "S", 4]), ts("int64", ["C", "T"]),
                                         ts("float", ["M", 2]), ts("float", ["M", 2])], domain=MS)
    assert res.prove("T == S").name == "PROVEN" and res.prove("C == B").name == "PROVEN"
    bad = infer_node("RotaryEmbedding", [ts("float", [2, 3, 8]), ts("int64", [2, 3]), ts("float", [5, 3]),
                                         ts("float", [5, 2])], domain=MS)
    assert bad.conflicts
