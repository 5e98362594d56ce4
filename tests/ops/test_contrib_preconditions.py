"""Preconditions of the com.microsoft contrib ops: each model below breaks its op's spec
(onnxruntime's registered schema and documentation).  smtshape reports a conflict with the
rule id given, and onnxruntime refuses the same model (its checker, its contrib shape
inference, a kernel constructor or the kernel at run time); ``None``: onnxruntime has no CPU
kernel for the op, and its checker and shape inference let the model through, so only the
spec speaks."""
import pytest

from smtshape.testing import infer_node, ts

from .contrib_check import MS, conflict_rules, ort_refuses, refused


def f(*s):
    return ts("float", list(s))


def i32(*s):
    return ts("int32", list(s))


def i64(*s):
    return ts("int64", list(s))


def u8(*s):
    return ts("uint8", list(s))


QKV = [f(2, 3, 8), f(2, 3, 8), f(2, 3, 8)]
GQA_REST = [f(2, 2, 0, 4), f(2, 2, 0, 4), i32(2), i32()]
SPARSE_REST = [f(2, 2, 4, 8), f(2, 2, 4, 8), i32(1, 3), i32(1, 4), i32(1), i32(2)]
ELN = [None, f(10, 4), f(8, 4), None, f(4), f(4)]
QPARAMS = [f(), u8(), f(), u8()]
NBITS = {"K": 16, "N": 4, "block_size": 16, "bits": 4}
GN = {"groups": 2, "activation": 0}

# (op, inputs, attributes, outputs, rule id, onnxruntime refuses it: True, or None (no CPU kernel))
CASES = [
    # activation.py
    ("FastGelu", [f()], {}, 1, "fastgelu.rank", True),
    ("FastGelu", [f(2, 3, 4), f(1, 4)], {}, 1, "fastgelu.bias", True),
    ("BiasAdd", [f(3, 4), f(4), f(3, 4)], {}, 1, "biasadd.rank", None),
    ("BiasSplitGelu", [f(3, 4), f(4)], {}, 1, "biassplitgelu.rank", True),
    ("BiasDropout", [f(2, 3, 4), f(4), f(3, 4)], {}, 2, "biasdropout.residual", None),
    ("BiasSoftmax", [f(2, 4), f(2, 4)], {}, 1, "biassoftmax.attribute", True),
    # attention.py
    ("Attention", [f(2, 3, 4), f(4, 12)], {}, 1, "attention.attribute", True),
    ("Attention", [f(2, 3, 4), f(4, 12)], {"num_heads": 0}, 1, "attention.num_heads", True),
    ("Attention", [f(3, 4), f(4, 12)], {"num_heads": 2}, 1, "attention.rank", True),
    ("Attention", [f(2, 3, 4), f(1, 4, 12)], {"num_heads": 2}, 1, "attention.rank", True),
    ("Attention", [f(2, 3, 4), f(4, 12), f(1, 12)], {"num_heads": 2}, 1, "attention.rank", True),
    ("Attention", [f(2, 3, 4), f(4, 12)], {"num_heads": 2, "qkv_hidden_sizes": [6, 6]}, 1,
     "attention.qkv_hidden_sizes", True),
    ("Attention", [f(2, 3, 4), f(4, 12)], {"num_heads": 2, "qkv_hidden_sizes": [8, 8, -4]}, 1,
     "attention.qkv_hidden_sizes", True),
    ("Attention", [f(2, 3, 4), f(4, 12), f(12), None, f(2, 2, 2, 2)], {"num_heads": 2}, 2, "attention.rank", True),
    ("MultiHeadAttention", [f(2, 3, 4, 4)], {"num_heads": 2}, 1, "multiheadattention.rank", True),
    ("MultiHeadAttention", [f(2, 3, 4), f(3, 4), f(2, 3, 4)], {"num_heads": 2}, 1, "multiheadattention.rank", True),
    ("MultiHeadAttention", [f(2, 3, 4), f(2, 3, 4), f(2, 3, 4, 1, 1)], {"num_heads": 2}, 1,
     "multiheadattention.rank", True),
    ("MultiHeadAttention", [f(2, 3, 4)], {"num_heads": 2}, 1, "multiheadattention.key", True),
    ("MultiHeadAttention", QKV, {}, 1, "multiheadattention.attribute", True),
    ("MultiHeadAttention", [*QKV, None, None, None, f(2, 2, 1)], {"num_heads": 2}, 3, "multiheadattention.rank",
     True),
    ("MultiHeadAttention", [f(2, 3, 4), f(2, 2, 3, 2), f(2, 3, 4)], {"num_heads": 2}, 1, "mha.bnsh", True),
    ("GroupQueryAttention", [*QKV, *GQA_REST], {"num_heads": 2}, 3, "groupqueryattention.attribute", True),
    ("GroupQueryAttention", [f(3, 8), f(2, 3, 8), f(2, 3, 8), *GQA_REST], {"num_heads": 2, "kv_num_heads": 2}, 3,
     "groupqueryattention.rank", True),
    ("GroupQueryAttention", [*QKV, f(2, 2, 0), f(2, 2, 0), i32(2), i32()], {"num_heads": 2, "kv_num_heads": 2}, 3,
     "groupqueryattention.rank", True),
    ("GroupQueryAttention", QKV, {"num_heads": 2, "kv_num_heads": 2}, 3, "groupqueryattention.arity", True),
    ("RotaryEmbedding", [f(2, 3, 8), i64(2, 3, 1), f(16, 4), f(16, 4)], {}, 1, "rotaryembedding.rank", True),
    ("RotaryEmbedding", [f(3, 8), i64(2, 3), f(16, 4), f(16, 4)], {}, 1, "rotaryembedding.rank", True),
    ("DecoderMaskedMultiHeadAttention", [f(3, 8)], {"num_heads": 2}, 1, "decodermaskedmultiheadattention.rank", True),
    ("LongformerAttention", [f(2, 4, 8), f(8, 24), f(24), f(2, 4), f(8, 24), f(24), f(2, 4)], {"num_heads": 2}, 1,
     "longformerattention.attribute", True),
    # misc.py
    ("RemovePadding", [f(3, 4), i32(3)], {}, 4, "removepadding.rank", True),
    ("RemovePadding", [f(2, 3, 4), i32(2)], {}, 1, "removepadding.arity", True),
    ("RestorePadding", [f(2, 3, 4), i32(2, 3)], {}, 1, "restorepadding.rank", True),
    ("PackedAttention", [f(2, 3, 4), f(4, 12), f(12), i32(2, 3), i32(3)], {"num_heads": 2}, 1,
     "packedattention.rank", True),
    ("PackedAttention", [f(6, 4), f(4, 12), f(12), i32(2, 3), i32(3)], {"num_heads": 2, "qkv_hidden_sizes": [6, 6]},
     1, "packedattention.qkv_hidden_sizes", True),
    ("PackedMultiHeadAttention", [f(2, 3, 4), f(2, 3, 4), f(2, 3, 4), None, i32(2, 3), i32(3)], {"num_heads": 2},
     1, "packedmultiheadattention.rank", True),
    ("PackedMultiHeadAttention", [f(6, 4), f(6, 4), f(2, 3, 4), None, i32(2, 3), i32(3)], {"num_heads": 2}, 1,
     "packedmultiheadattention.rank", True),
    ("GatedRelativePositionBias", [f(2, 3, 4), f(4), f(1, 2, 3, 3), f(2, 6), f(6), f(1, 2, 1, 1), i32(2, 3, 1)],
     {"num_heads": 2}, 1, "gatedrelativepositionbias.rank", None),
    ("RelativePositionBias", [f(32, 2), i64(), i64()], {}, 1, "relativepositionbias.attribute", True),
    ("SparseAttention", [f(2, 3, 64), None, None, *SPARSE_REST], {"num_heads": 4, "kv_num_heads": 2}, 3,
     "sparseattention.attribute", True),
    ("UnfoldTensor", [f(2, 8)], {"size": 0}, 1, "unfoldtensor.size", True),
    ("UnfoldTensor", [f(2, 8)], {"size": 2, "step": 0}, 1, "unfoldtensor.size", True),
    ("UnfoldTensor", [f(2, 8)], {}, 1, "unfoldtensor.attribute", True),
    ("DynamicTimeWarping", [f(5)], {}, 1, "dynamictimewarping.rank", True),
    ("DynamicTimeWarping", [f(2, 4, 5)], {}, 1, "dynamictimewarping.rank", True),
    ("HyperConnectionPreMix", [f(2, 8), f(2, 4)], {"num_branches": -2}, 1, "hyperconnectionpremix.num_branches",
     True),
    ("HyperConnectionPreMix", [f(8), f(4)], {}, 1, "hyperconnectionpremix.rank", True),
    ("HyperConnectionPostMix", [f(2, 4, 8), f(2, 8)], {}, 1, "hyperconnectionpostmix.arity", True),
    # fused.py
    ("NhwcConv", [f(2, 3), f(4, 1, 3)], {}, 1, "nhwcconv.rank", True),
    ("NhwcConv", [f(1, 5, 5, 3), f(4, 3)], {}, 1, "nhwcconv.rank", True),
    ("FusedMatMul", [f(3, 4), f(4, 5)], {"transBatchA": 1}, 1, "fusedmatmul.trans_batch", True),
    ("FusedConv", [f(1, 2, 5, 5), f(3, 2, 3, 3), f(3), f(3, 3, 3)], {}, 1, "fusedconv.sum", True),
    # norm.py
    ("SkipLayerNormalization", [f(4), f(4), f(4), f(4)], {}, 1, "skiplayernorm.rank", True),
    ("SkipLayerNormalization", [f(2, 3, 4), f(4), f(4), f(4)], {}, 1, "skiplayernorm.rank", True),
    ("SkipLayerNormalization", [f(2, 3, 4), f(2, 3, 4), f(1, 4), f(4)], {}, 1, "skiplayernorm.params", True),
    ("SkipLayerNormalization", [f(2, 3, 4), f(2, 3, 4)], {}, 1, "skiplayernormalization.arity", True),
    ("EmbedLayerNormalization", [i32(3), *ELN], {}, 2, "embedlayernorm.rank", True),
    ("EmbedLayerNormalization", [i32(2, 3), None, f(1, 10, 4), f(8, 4), None, f(4), f(4)], {}, 2,
     "embedlayernorm.rank", True),
    ("EmbedLayerNormalization", [i32(2, 3), None, f(10, 4), None, None, f(4), f(4)], {}, 2,
     "embedlayernormalization.arity", True),
    ("GroupNorm", [f(2, 4, 4, 8), f(8), f(8)], {**GN, "groups": 0}, 1, "groupnorm.groups", None),
    ("GroupNorm", [f(8), f(8), f(8)], GN, 1, "groupnorm.rank", None),
    ("GroupNorm", [f(2, 4, 4, 8), f(8), f(8)], {"groups": 2}, 1, "groupnorm.attribute", True),
    ("GroupNorm", [f(2, 4, 4, 8), f(8), f(8)], {**GN, "activation": 2}, 1, "groupnorm.activation", None),
    ("SkipGroupNorm", [f(2, 4, 4, 8), f(8), f(8), f(2, 4, 8)], GN, 2, "skipgroupnorm.skip", None),
    ("BranchwiseRMSNorm", [f()], {"num_branches": 2}, 1, "branchwisermsnorm.rank", True),
    # quant.py
    ("QLinearAveragePool", [u8(1, 2, 4, 4), *QPARAMS], {"kernel_shape": [0, 2]}, 1,
     "qlinearaveragepool.kernel_shape", True),
    ("QLinearAveragePool", [u8(1, 2, 4), *QPARAMS], {"kernel_shape": [2, 2]}, 1, "qlinearaveragepool.kernel_shape",
     True),
    ("QLinearGlobalAveragePool", [u8(2, 4), *QPARAMS], {}, 1, "qlinearglobalaveragepool.rank", True),
    ("QLinearConcat", [f(), u8(), u8(2, 3), f()], {"axis": 0}, 1, "qlinearconcat.arity", True),
    ("QLinearSoftmax", [u8(2, 4), *QPARAMS], {}, 1, "qlinearsoftmax.attribute", True),
    ("MatMulNBits", [f(2, 16), u8(4, 2, 4), f(4, 2)], {**NBITS, "block_size": 8}, 1, "matmulnbits.block_size", True),
    ("MatMulNBits", [f(2, 16), u8(4, 1, 8), f(4, 1)], {**NBITS, "block_size": 0}, 1, "matmulnbits.block_size", True),
    ("MatMulNBits", [f(2, 16), u8(4, 1, 18), f(4, 1)], {**NBITS, "bits": 9}, 1, "matmulnbits.bits", True),
    ("MatMulNBits", [f(), u8(4, 1, 8), f(4, 1)], NBITS, 1, "matmulnbits.rank", True),
    ("GatherBlockQuantized", [u8(4, 8), i64(2), f(4, 1)], {"bits": 3, "block_size": 16}, 1,
     "gatherblockquantized.bits", True),
    ("GatherBlockQuantized", [u8(), i64(2), f(1)], {"bits": 4}, 1, "gatherblockquantized.rank", True),
    ("GatherBlockQuantized", [u8(4, 8), i64(2), f(4)], {"bits": 4, "block_size": 16}, 1,
     "gatherblockquantized.scales", True),
    ("GatherBlockQuantized", [u8(4, 8), i64(2), f(4, 1)], {"bits": 4, "block_size": 8}, 1,
     "gatherblockquantized.block_size", True),
]


@pytest.mark.parametrize("op,inputs,attrs,n_out,rule,ort", CASES,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(CASES)])
def test_contrib_precondition(op, inputs, attrs, n_out, rule, ort):
    res = infer_node(op, inputs, attrs, domain=MS, n_outputs=n_out)
    assert refused(res) and rule in conflict_rules(res), (conflict_rules(res), [str(c) for c in res.conflicts])
    assert ort_refuses(op, inputs, attrs, n_outputs=n_out) is ort


def test_embed_layer_norm_1d_position_ids():
    """position_ids is (batch, sequence) or (1, sequence).  (onnxruntime aborts the process on
    this model, so it is not run here.)"""
    res = infer_node("EmbedLayerNormalization", [i32(2, 3), *ELN, None, i32(3)], domain=MS, n_outputs=2)
    assert refused(res) and "embedlayernorm.rank" in conflict_rules(res)


def test_valid_neighbours_stay_valid():
    """The models next to the refused ones that onnxruntime runs stay without conflicts."""
    for op, inputs, attrs, n_out in [
        ("RotaryEmbedding", [f(2, 3, 8), i64(), f(16, 4), f(16, 4)], {}, 1),      # 0-D position_ids
        ("SkipLayerNormalization", [f(2, 3, 4), f(3, 4), f(4), f(4)], {}, 1),     # 2-D skip for a 3-D input
        ("DynamicTimeWarping", [f(1, 4, 5)], {}, 1),
        ("HyperConnectionPostMix", [f(2, 4, 8), f(2, 8), f(2, 4)], {}, 1),
        ("MatMulNBits", [f(2, 16), u8(4, 1, 8), f(4, 1)], NBITS, 1),
    ]:
        res = infer_node(op, inputs, attrs, domain=MS, n_outputs=n_out)
        assert not refused(res), (op, [str(c) for c in res.conflicts])
        assert ort_refuses(op, inputs, attrs, n_outputs=n_out) is False, op
