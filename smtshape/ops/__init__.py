"""Op rules, one module per op family, each imported when a node of one of its ops is
first met (``FAMILIES`` below, given to the registry: ``Registry.defer``).

| module          | ops |
|-----------------|-----|
| elementwise.py  | binary arithmetic / logic / comparison (broadcasting), unary ops, Where, Clip, Cast, Identity, Dropout |
| reduce.py       | Reduce*, ArgMax / ArgMin |
| norm.py         | BatchNormalization, LayerNormalization, GroupNormalization, InstanceNormalization, LRN, Softmax family, CumSum, Trilu |
| linalg.py       | MatMul, Gemm, Einsum |
| conv.py         | Conv, ConvTranspose, MaxPool, AveragePool, LpPool, global pools |
| resize.py       | Resize, Upsample, DepthToSpace, SpaceToDepth |
| shape.py        | Shape, Size, Constant, ConstantOfShape, Range |
| reshape.py      | Reshape, Flatten, Transpose, Squeeze, Unsqueeze |
| slicing.py      | Slice |
| concat.py       | Concat, Split |
| expand.py       | Expand, Tile, Pad |
| indexing.py     | Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot, Compress, NonZero, TopK, Unique |
| control.py      | If, Loop (subgraphs) |
| sequence.py     | Sequence* ops, SplitToSequence, ConcatFromSequence, SequenceMap, Optional* |
| rnn.py          | LSTM, GRU, RNN |
| quant.py        | QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear |
| attention.py    | Attention, RMSNormalization, RotaryEmbedding, TensorScatter, SwiGLU, LinearAttention, CausalConvWithState, ai.onnx.preview FlexAttention |
| signal.py       | DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix |
| vision.py       | GridSample, AffineGrid, RoiAlign, MaxRoiPool, Col2Im, CenterCropPad, DeformConv, ImageDecoder, ReverseSequence |
| misc.py         | EyeLike, Det, CumProd, LpNormalization, BitCast, Random*, Bernoulli, Multinomial, string ops, TfIdfVectorizer, NLL / SoftmaxCrossEntropy losses, ai.onnx.preview.training |
| ml.py           | the ai.onnx.ml domain (ArrayFeatureExtractor ... ZipMap) |
| values.py       | (no rules) the value helpers the shape-family modules and Gather share |
| contrib/        | onnxruntime's com.microsoft contrib ops (fused, norm, activation, quant, attention, misc) and its default-domain SimplifiedLayerNormalization |

A new op goes into its module (``@register``) *and* into ``FAMILIES``;
``tests/test_op_coverage.py`` checks that the table lists exactly what each module
registers (and prints the table to paste when it does not).
"""
from ..registry import BUILTIN

# module -> {domain: "the ops it registers"}
FAMILIES = {
    "attention": {"": "Attention CausalConvWithState LinearAttention RMSNormalization RotaryEmbedding SwiGLU "
                      "TensorScatter",
                  "ai.onnx.preview": "FlexAttention"},
    "contrib.activation": {"com.microsoft": "BiasAdd BiasDropout BiasGelu BiasSoftmax BiasSplitGelu FastGelu Gelu "
                                            "QuickGelu ScaledSiLU"},
    "contrib.attention": {"com.microsoft": "Attention DecoderMaskedMultiHeadAttention GroupQueryAttention "
                                           "LongformerAttention MultiHeadAttention RotaryEmbedding"},
    "contrib.fused": {"com.microsoft": "FusedConv FusedGemm FusedMatMul GemmFastGelu GemmFloat8 NhwcConv "
                                       "TransposeMatMul"},
    "contrib.misc": {"com.microsoft": "DynamicTimeWarping GatedRelativePositionBias HyperConnectionPostMix "
                                      "HyperConnectionPreMix MoE PackedAttention PackedMultiHeadAttention QMoE "
                                      "RelativePositionBias RemovePadding RestorePadding SparseAttention UnfoldTensor"},
    "contrib.norm": {"": "SimplifiedLayerNormalization",
                     "com.microsoft": "BranchwiseRMSNorm EmbedLayerNormalization GroupNorm "
                                      "SimplifiedLayerNormalization SkipGroupNorm SkipLayerNormalization "
                                      "SkipSimplifiedLayerNormalization"},
    "contrib.quant": {"com.microsoft": "DequantizeLinear DynamicQuantizeMatMul GatherBlockQuantized "
                                       "MatMulIntegerToFloat MatMulNBits QGemm QLinearAdd QLinearAveragePool "
                                       "QLinearConcat QLinearConv QLinearGlobalAveragePool QLinearLeakyRelu "
                                       "QLinearMul QLinearSigmoid QLinearSoftmax QuantizeLinear"},
    "control": {"": "If Loop Scan"},
    "conv": {"": "AveragePool Conv ConvInteger ConvTranspose GlobalAveragePool GlobalLpPool GlobalMaxPool LpPool "
                 "MaxPool MaxUnpool QLinearConv"},
    "elementwise": {"": "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift BitwiseAnd BitwiseNot BitwiseOr "
                        "BitwiseXor Cast CastLike Ceil Celu Clip Cos Cosh Div Dropout Elu Equal Erf Exp Floor "
                        "Gelu Greater GreaterOrEqual HardSigmoid HardSwish Identity IsInf IsNaN LeakyRelu Less "
                        "LessOrEqual Log Max Mean Min Mish Mod Mul Neg Not Or PRelu Pow Reciprocal Relu Round "
                        "Selu Shrink Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub Sum Swish Tan Tanh "
                        "ThresholdedRelu Where Xor"},
    "indexing": {"": "Compress Gather GatherElements GatherND NonMaxSuppression NonZero OneHot Scatter ScatterElements "
                     "ScatterND TopK Unique"},
    "linalg": {"": "Einsum Gemm MatMul MatMulInteger QLinearMatMul"},
    "misc": {"": "Bernoulli BitCast CumProd Det EyeLike LpNormalization Multinomial NegativeLogLikelihoodLoss "
                 "RandomNormal RandomNormalLike RandomUniform RandomUniformLike RegexFullMatch "
                 "SoftmaxCrossEntropyLoss StringConcat StringNormalizer StringSplit TfIdfVectorizer",
             "ai.onnx.preview.training": "Adagrad Adam Gradient Momentum"},
    "ml": {"ai.onnx.ml": "ArrayFeatureExtractor Binarizer CastMap CategoryMapper DictVectorizer FeatureVectorizer "
                         "Imputer LabelEncoder LinearClassifier LinearRegressor Normalizer OneHotEncoder "
                         "SVMClassifier SVMRegressor Scaler TreeEnsemble TreeEnsembleClassifier "
                         "TreeEnsembleRegressor ZipMap"},
    "norm": {"": "BatchNormalization CumSum GroupNormalization Hardmax InstanceNormalization LRN LayerNormalization "
                 "LogSoftmax MeanVarianceNormalization Softmax Trilu",
             "com.microsoft": "LayerNormalization"},
    "quant": {"": "DequantizeLinear DynamicQuantizeLinear QuantizeLinear"},
    "reduce": {"": "ArgMax ArgMin ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin "
                   "ReduceProd ReduceSum ReduceSumSquare"},
    "resize": {"": "DepthToSpace Resize SpaceToDepth Upsample"},
    "rnn": {"": "GRU LSTM RNN"},
    "sequence": {"": "ConcatFromSequence Optional OptionalGetElement OptionalHasElement SequenceAt "
                     "SequenceConstruct SequenceEmpty SequenceErase SequenceInsert SequenceLength SequenceMap "
                     "SplitToSequence"},
    "shape": {"": "Constant ConstantOfShape Range Shape Size"},
    "reshape": {"": "Flatten Reshape Squeeze Transpose Unsqueeze"},
    "slicing": {"": "Slice"},
    "concat": {"": "Concat Split"},
    "expand": {"": "Expand Pad Tile"},
    "signal": {"": "BlackmanWindow DFT HammingWindow HannWindow MelWeightMatrix STFT"},
    "vision": {"": "AffineGrid CenterCropPad Col2Im DeformConv GridSample ImageDecoder MaxRoiPool ReverseSequence "
                   "RoiAlign"},
}

# the newest since_version of a default-domain rule above (``api`` asks onnx about a
# model's opset only beyond it); checked with the table
NEWEST_OPSET = 28

BUILTIN.defer(FAMILIES, __name__)
