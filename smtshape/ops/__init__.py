"""Op rules, one module per op family.  Importing this package registers them all.

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
"""
from . import common  # noqa: F401
from . import elementwise, reduce, norm, linalg, conv, resize, shape, reshape, slicing, concat, expand  # noqa: F401
from . import indexing, control  # noqa: F401
from . import sequence  # noqa: F401
from . import contrib  # noqa: F401
from . import rnn  # noqa: F401
from . import quant  # noqa: F401
from . import attention  # noqa: F401
from . import signal, vision, misc, ml  # noqa: F401
