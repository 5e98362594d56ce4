"""com.microsoft normalization ops (+ default-domain SimplifiedLayerNormalization, LayerNormalization v1)."""
import numpy as np
import pytest

from smtshape.testing import exprs, infer_node, ts

from .contrib_check import MS, check, conflict_rules, failed, ort_refuses, refused

B3 = [{"B": 2, "S": 3, "H": 4}, {"B": 1, "S": 1, "H": 8}, {"B": 0, "S": 3, "H": 4}, {"B": 2, "S": 0, "H": 1}]


@pytest.mark.parametrize("op", ["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"])
def test_skip_layer_norm_all_outputs(op):
    n_params = 3 if op == "SkipLayerNormalization" else 2
    res = check(op, [ts("float", ["B", "S", "H"]), ts("float", ["B", "S", "H"])] + [ts("float", ["H"])] * n_params,
                bindings=B3, n_outputs=4)
    assert exprs(res, "y0") == ("B", "S", "H") and exprs(res, "y3") == ("B", "S", "H")
    assert exprs(res, "y1") == ("B", "S", 1) and exprs(res, "y2") == ("B", "S", 1)


@pytest.mark.parametrize("skip", [[1, "S", "H"], ["S", "H"]])
def test_skip_layer_norm_broadcast_skip(skip):
    check("SkipLayerNormalization", [ts("float", ["B", "S", "H"]), ts("float", skip), ts("float", ["H"])],
          bindings=B3, n_outputs=4)


def test_skip_layer_norm_2d():
    check("SkipLayerNormalization", [ts("float", ["T", "H"]), ts("float", ["T", "H"]), ts("float", ["H"])],
          bindings=[{"T": 5, "H": 4}, {"T": 0, "H": 2}], n_outputs=4)


def test_skip_layer_norm_constraints():
    res = infer_node("SkipLayerNormalization", [ts("float", ["B", "S", "H"]), ts("float", ["C", "T", "K"]),
                                                ts("float", ["G"]), ts("float", ["E"]), ts("float", ["F"])], domain=MS)
    for q in ("T == S", "K == H", "G == H", "E == H", "F == H", "C == B or C == 1"):
        assert res.prove(q).name == "PROVEN", q
    assert res.prove("C == B").name != "PROVEN"


def test_skip_layer_norm_hidden_conflict():
    res = infer_node("SkipLayerNormalization", [ts("float", [2, 3, 8]), ts("float", [2, 3, 8]), ts("float", [6])],
                     domain=MS)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_skip_layer_norm_rank_4_fails():
    res = infer_node("SkipLayerNormalization", [ts("float", [1, 2, 3, 8]), ts("float", [1, 2, 3, 8]),
                                                ts("float", [8])], domain=MS)
    assert refused(res) and "skiplayernorm.rank" in conflict_rules(res)
    assert ort_refuses("SkipLayerNormalization", [ts("float", [1, 2, 3, 8]), ts("float", [1, 2, 3, 8]),
                                                  ts("float", [8])])


@pytest.mark.parametrize("axis,scale", [(-1, ["H"]), (1, ["S", "H"]), (1, [1, "H"]), (0, ["B", "S", "H"])])
def test_simplified_layer_norm_default_domain(axis, scale):
    res = check("SimplifiedLayerNormalization", [ts("float", ["B", "S", "H"]), ts("float", scale)], {"axis": axis},
                bindings=B3[:2], n_outputs=2, domain="", opset=17)
    stats = exprs(res, "y1")
    assert stats == tuple(["B", "S", "H"][:axis % 3]) + (1,) * (3 - axis % 3)


def test_simplified_layer_norm_scale_conflict():
    res = infer_node("SimplifiedLayerNormalization", [ts("float", [2, 3, 4]), ts("float", [12])], {"axis": 1},
                     opset=17)
    assert res.conflicts


def test_layer_norm_before_opset_17_uses_onnxruntime_contrib():
    res = check("LayerNormalization", [ts("float", ["B", "S", "H"]), ts("float", ["H"]), ts("float", ["H"])],
                bindings=B3[:2], n_outputs=3, domain="", opset=14)
    assert exprs(res, "y1") == ("B", "S", 1)


# ---------------------------------------------------------------- EmbedLayerNormalization
def _eln_inputs(seg=True, mask=True, pos_ids=None, P=16):
    ins = [ts("int32", ["B", "S"]), ts("int32", ["B", "S"]) if seg else None, np.zeros((30, 8), np.float32),
           np.zeros((P, 8), np.float32), np.zeros((2, 8), np.float32) if seg else None,
           np.ones(8, np.float32), np.zeros(8, np.float32), ts("int32", ["B", "S"]) if mask else None]
    if pos_ids is not None:
        ins.append(ts("int64" if False else "int32", pos_ids))
    return ins


@pytest.mark.parametrize("seg,mask,pos", [(True, True, None), (False, False, None), (True, False, [1, "S"]),
                                          (True, True, ["B", "S"])])
def test_embed_layer_norm_matches_onnxruntime(seg, mask, pos):
    res = check("EmbedLayerNormalization", _eln_inputs(seg, mask, pos),
                bindings=[{"B": 2, "S": 3}, {"B": 1, "S": 16}, {"B": 0, "S": 4}, {"B": 3, "S": 0}], n_outputs=3)
    assert exprs(res, "y0") == ("B", "S", 8) and exprs(res, "y1") == ("B",) and exprs(res, "y2") == ("B", "S", 8)


def test_embed_layer_norm_sequence_bounded_by_positions():
    res = infer_node("EmbedLayerNormalization", _eln_inputs(P=16), domain=MS, n_outputs=2)
    assert res.prove("S <= 16").name == "PROVEN"
    pinned = infer_node("EmbedLayerNormalization", [ts("int32", [2, 20])] + _eln_inputs(P=16)[1:], domain=MS)
    assert pinned.conflicts


def test_embed_layer_norm_hidden_conflict():
    ins = _eln_inputs()
    ins[5] = np.ones(7, np.float32)
    res = infer_node("EmbedLayerNormalization", ins, domain=MS)
    assert res.conflicts


# ---------------------------------------------------------------- GroupNorm / SkipGroupNorm (CUDA only: spec)
def test_group_norm_channels_last():
    res = infer_node("GroupNorm", [ts("float", ["N", "H", "W", "C"]), ts("float", ["G"]), ts("float", ["G"])],
                     {"groups": 4, "activation": 0}, domain=MS)
    assert exprs(res, "y0") == ("N", "H", "W", "C")
    assert res.prove("C % 4 == 0").name == "PROVEN" and res.prove("G == C").name == "PROVEN"


def test_group_norm_channels_first_conflict():
    res = infer_node("GroupNorm", [ts("float", [1, 6, 4, 4]), ts("float", [6]), ts("float", [6])],
                     {"groups": 4, "activation": 0, "channels_last": 0}, domain=MS)
    assert res.conflicts


@pytest.mark.parametrize("skip", [["N", "H", "W", "C"], ["N", 1, 1, "C"], ["N", "C"]])
def test_skip_group_norm(skip):
    res = infer_node("SkipGroupNorm", [ts("float", ["N", "H", "W", 32]), ts("float", [32]), ts("float", [32]),
                                       ts("float", skip), ts("float", [32])],
                     {"groups": 8, "activation": 1}, domain=MS, n_outputs=2)
    assert not res.conflicts and not failed(res)
    assert exprs(res, "y0") == ("N", "H", "W", 32) and exprs(res, "y1") == ("N", "H", "W", 32)
    assert res.prove("C == 32").name == "PROVEN"


def test_branchwise_rms_norm():
    res = check("BranchwiseRMSNorm", [ts("float", ["B", "D"])], {"num_branches": 2},
                bindings=[{"B": 2, "D": 8}, {"B": 0, "D": 4}])
    assert res.prove("D % 2 == 0").name == "PROVEN"
