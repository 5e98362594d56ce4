"""The remaining com.microsoft ops of onnxruntime's SymbolicShapeInference."""
import numpy as np
import pytest

from smtshape.testing import exprs, infer_node, refused, ts

from .contrib_check import MS, check, conflict_rules


@pytest.mark.parametrize("attrs", [{"dim": 1, "size": 3, "step": 2}, {"dim": -1, "size": 2}, {"dim": 1, "size": 1}])
def test_unfold_tensor(attrs):
    res = check("UnfoldTensor", [ts("float", ["B", "L", 4])], attrs,
                bindings=[{"B": 2, "L": 7}, {"B": 0, "L": 3}, {"B": 1, "L": 4}])
    assert exprs(res, "y0")[-1] == attrs["size"]


def test_unfold_tensor_window_larger_than_axis_conflicts():
    assert infer_node("UnfoldTensor", [ts("float", [2, 2, 4])], {"dim": 1, "size": 3}, domain=MS).conflicts


def test_dynamic_time_warping_bounded():
    res = check("DynamicTimeWarping", [ts("float", ["M", "N"])], bindings=[{"M": 3, "N": 5}, {"M": 4, "N": 1}],
                exact=False)
    d = res.shape("y0")[1]
    assert d.exactness.name == "UPPER_BOUND"
    assert res.shape("y0")[0].expr == 2


@pytest.mark.parametrize("x,router", [(["B", "S", 4], ["T", 2]), (["T", 4], ["T", 2])])
def test_moe(x, router):
    ins = [ts("float", x), ts("float", router), np.zeros((2, 8, 4), np.float32), None,
           np.zeros((2, 4, 8), np.float32)]
    res = check("MoE", ins, {"k": 1}, bindings=[{"B": 2, "S": 3, "T": 6}, {"B": 1, "S": 1, "T": 1}])
    assert exprs(res, "y0") == tuple(x)
    if len(x) == 3:
        assert res.prove("T == B * S").name == "PROVEN"


def test_hyper_connection_mix():
    check("HyperConnectionPreMix", [ts("float", ["B", "C", "H"]), ts("float", ["B", "C", "H"])],
          bindings=[{"B": 2, "C": 3, "H": 4}])
    check("HyperConnectionPostMix", [ts("float", ["B", 3, "H"]), ts("float", ["B", "H"]), ts("float", ["B", 3])],
          bindings=[{"B": 2, "H": 4}])
    flat = infer_node("HyperConnectionPreMix", [ts("float", ["B", "W"]), ts("float", ["B", "W"])],
                      {"num_branches": 4}, domain=MS)
    assert exprs(flat, "y0") == ("B", "W // 4") and flat.prove("W % 4 == 0").name == "PROVEN"


def test_remove_restore_padding():
    res = infer_node("RemovePadding", [ts("float", ["B", "S", 8]), ts("int32", ["B"])], domain=MS, n_outputs=4)
    y0 = res.shape("y0")
    assert y0[0].exactness.name == "UPPER_BOUND" and y0[1].expr == 8
    assert exprs(res, "y1") == ("B", "S") and exprs(res, "y2") == ("B + 1",) and exprs(res, "y3") == (1,)
    back = infer_node("RestorePadding", [ts("float", ["T", 8]), ts("int32", ["B", "S"])], domain=MS)
    assert exprs(back, "y0") == ("B", "S", 8)


def test_packed_attention_ops():
    res = infer_node("PackedAttention", [ts("float", ["T", 4]), np.zeros((4, 24), np.float32),
                                         np.zeros(24, np.float32), ts("int32", ["B", "S"]), ts("int32", ["C"])],
                     {"num_heads": 2}, domain=MS)
    assert exprs(res, "y0") == ("T", 8)
    packing = [ts("int32", ["B", "S"]), ts("int32", ["C"])]     # token_offset, cumulative_sequence_length
    mha = infer_node("PackedMultiHeadAttention", [ts("float", ["T", 4, 3, 8]), None, None, None, *packing],
                     {"num_heads": 4}, domain=MS)
    assert exprs(mha, "y0") == ("T", 32)
    mha2 = infer_node("PackedMultiHeadAttention", [ts("float", ["T", 16]), ts("float", ["T", 16]),
                                                   ts("float", ["T", 12]), None, *packing], {"num_heads": 4}, domain=MS)
    assert exprs(mha2, "y0") == ("T", 12)
    # onnxruntime's schema requires token_offset and cumulative_sequence_length
    bare = infer_node("PackedMultiHeadAttention", [ts("float", ["T", 4, 3, 8])], {"num_heads": 4}, domain=MS)
    assert refused(bare) and "packedmultiheadattention.arity" in conflict_rules(bare)


def test_relative_position_biases():
    res = infer_node("RelativePositionBias", [ts("float", [32, 4]), np.array(3, np.int64), np.array(5, np.int64)],
                     {"max_distance": 128}, domain=MS)
    assert exprs(res, "y0") == (1, 4, 3, 5)
    dyn = infer_node("RelativePositionBias", [ts("float", [32, 4]), ts("int64", []), ts("int64", [])],
                     {"max_distance": 128}, domain=MS)
    assert dyn.shape("y0")[2].exactness.name == "UNKNOWN"
    g = infer_node("GatedRelativePositionBias", [ts("float", ["B", "S", 8]), ts("float", [8]),
                                                 ts("float", [1, 2, "S", "S"]), ts("float", [4, 6]),
                                                 ts("float", [6]), ts("float", [1, 2, 1, 1])],
                   {"num_heads": 2}, domain=MS)
    assert exprs(g, "y0") == ("B", 2, "S", "S")


def test_sparse_attention_packed():
    blocks = [ts("int32", [1, 3]), ts("int32", [1, 4]), ts("int32", [1]), ts("int32", ["B"])]
    res = infer_node("SparseAttention", [ts("float", ["B", "S", 64]), None, None, ts("float", ["B", 2, "M", 8]),
                                         ts("float", ["B", 2, "M", 8]), *blocks],
                     {"num_heads": 4, "kv_num_heads": 2, "sparse_block_size": 16}, domain=MS, n_outputs=3)
    assert exprs(res, "y0") == ("B", "S", 32) and exprs(res, "y1") == ("B", 2, "M", 8)
