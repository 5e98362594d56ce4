"""Rules for onnxruntime's ``com.microsoft`` contrib ops (and the contrib ops onnxruntime
registers in the default domain: SimplifiedLayerNormalization, LayerNormalization before
opset 17).  Every com.microsoft rule is registered from version 1 (the only version
onnxruntime has).

| module        | ops |
|---------------|-----|
| fused.py      | FusedConv, NhwcConv, FusedGemm, FusedMatMul, TransposeMatMul, GemmFastGelu, GemmFloat8 |
| norm.py       | SkipLayerNormalization, SkipSimplifiedLayerNormalization, EmbedLayerNormalization, SimplifiedLayerNormalization, LayerNormalization (v1), GroupNorm, SkipGroupNorm, BranchwiseRMSNorm |
| activation.py | Gelu, QuickGelu, FastGelu, BiasGelu, ScaledSiLU, BiasAdd, BiasSplitGelu, BiasDropout, BiasSoftmax |
| quant.py      | QLinearAdd/Mul/Sigmoid/LeakyRelu/Softmax/AveragePool/GlobalAveragePool/Concat/Conv, QGemm, DynamicQuantizeMatMul, MatMulIntegerToFloat, MatMulNBits, GatherBlockQuantized, QuantizeLinear, DequantizeLinear |
| attention.py  | Attention, MultiHeadAttention, GroupQueryAttention, DecoderMaskedMultiHeadAttention, RotaryEmbedding, LongformerAttention |
| misc.py       | the remaining ops of onnxruntime's SymbolicShapeInference (padding removal, relative position bias, UnfoldTensor, ...) |

Each module is imported when a node of one of its ops is first met (``ops/__init__.py``).
"""
