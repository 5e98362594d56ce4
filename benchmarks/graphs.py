"""Synthetic ONNX models for the speed benchmark (``benchmarks/bench.py``).

Two families, both opset 17, built with ``onnx.helper``:

``transformer_like(n)``
    GPT-2-like decoder layers in the style of the TorchScript exporter:
    ``input_ids[batch, seq]`` -> embedding Gather + position table sliced by
    ``seq`` -> layers of LayerNormalization, MatMul + Add (bias), head split
    and merge through ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``
    chains, Transpose, scaled scores (Div), a causal mask sliced out of a fixed
    ``[1, 1, 128, 128]`` buffer with ends taken from the Shape chain, Cast,
    Expand to the score shape, Where, Softmax, Erf-GELU (opset 17 has no Gelu
    op, so the exporter's ``x * 0.5 * (1 + erf(x / sqrt 2))`` form), residual
    Adds.  Scalars and index lists are ``Constant`` nodes, as the TorchScript
    exporter writes them.  Layers are stacked until about ``n`` nodes.

``cnn_like(n)``
    ``input[batch, 3, H, W]`` -> a stem Conv, then U-Net-style blocks
    (Conv + BatchNormalization + Relu, MaxPool / strided Conv / AveragePool
    going down, Resize x2 nearest + Concat with the skip going up), stacked
    until about ``n`` nodes, then GlobalAveragePool.  Every block needs H and W
    divisible by 8 (the skip Concats meet a down/up-sampled tensor), as real
    U-Nets do.

Weights are small (hidden 64, 8 channels) and shared between layers, so even
the 50k-node model stays a few MB.  Every generated model passes
``onnx.checker.check_model``; ``python benchmarks/graphs.py`` additionally runs
the small ones in onnxruntime at two input sizes and checks the output shapes
(see ``_selfcheck``).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
HIDDEN = 64
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
FFN = 4 * HIDDEN
VOCAB = 256
MAX_POS = 128
CH = 8


class _Builder:
    def __init__(self, prefix: str):
        self.nodes: list = []
        self.inits: list = []
        self.prefix = prefix
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def node(self, op, inputs, hint=None, n_out=1, **attrs):
        base = self.name(hint or op)
        outs = [f"{base}_out{i}" if n_out > 1 else f"{base}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=f"/{self.prefix}/{base}", **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=np.int64, hint="Constant"):
        """A Constant node (TorchScript-exporter style)."""
        arr = np.asarray(value, dtype=dtype)
        base = self.name(hint)
        out = f"{base}_out"
        self.nodes.append(helper.make_node(
            "Constant", [], [out], name=f"/{self.prefix}/{base}",
            value=numpy_helper.from_array(arr, name=f"{base}_value")))
        return out

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name=name))
        return name


def _rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------- transformer
def _split_heads(b: _Builder, x: str, perm) -> str:
    """[B, S, H] -> Reshape [B, S, heads, head_dim] -> Transpose(perm)."""
    sh = b.node("Shape", [x])
    bt = b.node("Gather", [sh, b.const(0)], axis=0)
    sq = b.node("Gather", [sh, b.const(1)], axis=0)
    ub = b.node("Unsqueeze", [bt, b.const([0])])
    us = b.node("Unsqueeze", [sq, b.const([0])])
    cat = b.node("Concat", [ub, us, b.const([HEADS]), b.const([HEAD_DIM])], axis=0)
    r = b.node("Reshape", [x, cat])
    return b.node("Transpose", [r], perm=list(perm))


def _merge_heads(b: _Builder, x: str) -> str:
    """[B, heads, S, head_dim] -> Transpose -> Reshape [B, S, H] via the Shape chain."""
    t = b.node("Transpose", [x], perm=[0, 2, 1, 3])
    sh = b.node("Shape", [t])
    bt = b.node("Gather", [sh, b.const(0)], axis=0)
    sq = b.node("Gather", [sh, b.const(1)], axis=0)
    ub = b.node("Unsqueeze", [bt, b.const([0])])
    us = b.node("Unsqueeze", [sq, b.const([0])])
    cat = b.node("Concat", [ub, us, b.const([HIDDEN])], axis=0)
    return b.node("Reshape", [t, cat])


def _layer(b: _Builder, x: str, i: int) -> str:
    rng = _rng()
    bq, bk, bv, bo = (b.init(f"l{i}.attn.b{k}", rng.standard_normal(HIDDEN).astype(np.float32) * 0.02)
                      for k in "qkvo")
    b1 = b.init(f"l{i}.mlp.b1", np.zeros(FFN, np.float32))
    b2 = b.init(f"l{i}.mlp.b2", np.zeros(HIDDEN, np.float32))

    ln1 = b.node("LayerNormalization", [x, "ln.gamma", "ln.beta"], axis=-1, epsilon=1e-5)
    q = b.node("Add", [b.node("MatMul", [ln1, "W.q"]), bq])
    k = b.node("Add", [b.node("MatMul", [ln1, "W.k"]), bk])
    v = b.node("Add", [b.node("MatMul", [ln1, "W.v"]), bv])
    qh = _split_heads(b, q, [0, 2, 1, 3])      # [B, h, S, d]
    kh = _split_heads(b, k, [0, 2, 3, 1])      # [B, h, d, S]
    vh = _split_heads(b, v, [0, 2, 1, 3])      # [B, h, S, d]
    scores = b.node("Div", [b.node("MatMul", [qh, kh]),
                            b.const(float(np.sqrt(HEAD_DIM)), np.float32)])  # [B, h, S, S]
    # causal mask: bias[:, :, :seq, :seq] from the fixed buffer, seq from the Shape chain
    ksh = b.node("Shape", [kh])
    kl = b.node("Gather", [ksh, b.const(3)], axis=0)
    ukl = b.node("Unsqueeze", [kl, b.const([0])])
    ends = b.node("Concat", [ukl, ukl], axis=0)
    msl = b.node("Slice", ["attn.bias", b.const([0, 0]), ends, b.const([2, 3])])
    mbool = b.node("Cast", [msl], to=TensorProto.BOOL)
    mexp = b.node("Expand", [mbool, b.node("Shape", [scores])])
    masked = b.node("Where", [mexp, scores, b.const(-1e4, np.float32)])
    probs = b.node("Softmax", [masked], axis=-1)
    ctx = _merge_heads(b, b.node("MatMul", [probs, vh]))
    attn = b.node("Add", [b.node("MatMul", [ctx, "W.o"]), bo])
    h = b.node("Add", [x, attn])
    # MLP with erf-GELU
    ln2 = b.node("LayerNormalization", [h, "ln.gamma", "ln.beta"], axis=-1, epsilon=1e-5)
    f = b.node("Add", [b.node("MatMul", [ln2, "W.1"]), b1])
    erf = b.node("Erf", [b.node("Div", [f, b.const(float(np.sqrt(2.0)), np.float32)])])
    g = b.node("Mul", [b.node("Mul", [f, b.node("Add", [erf, b.const(1.0, np.float32)])]),
                       b.const(0.5, np.float32)])
    m = b.node("Add", [b.node("MatMul", [g, "W.2"]), b2])
    return b.node("Add", [h, m])


def transformer_like(n_nodes_target: int) -> onnx.ModelProto:
    b = _Builder("transformer")
    rng = _rng()
    wte = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32) * 0.02
    b.init("wte", wte)
    b.init("wpe", rng.standard_normal((MAX_POS, HIDDEN)).astype(np.float32) * 0.02)
    b.init("attn.bias", np.tril(np.ones((MAX_POS, MAX_POS), np.uint8)).reshape(1, 1, MAX_POS, MAX_POS))
    b.init("ln.gamma", np.ones(HIDDEN, np.float32))
    b.init("ln.beta", np.zeros(HIDDEN, np.float32))
    for k in "qkvo":
        b.init(f"W.{k}", rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * 0.02)
    b.init("W.1", rng.standard_normal((HIDDEN, FFN)).astype(np.float32) * 0.02)
    b.init("W.2", rng.standard_normal((FFN, HIDDEN)).astype(np.float32) * 0.02)
    b.init("wte.T", np.ascontiguousarray(wte.T))

    # embeddings: wte[input_ids] + wpe[:seq]
    tok = b.node("Gather", ["wte", "input_ids"], axis=0)            # [B, S, H]
    sh = b.node("Shape", ["input_ids"])
    sq = b.node("Gather", [sh, b.const(1)], axis=0)
    pos = b.node("Slice", ["wpe", b.const([0]), b.node("Unsqueeze", [sq, b.const([0])]), b.const([0])])
    x = b.node("Add", [tok, pos])
    tail = 3
    i = 0
    while True:
        x = _layer(b, x, i)
        i += 1
        if len(b.nodes) + (len(b.nodes) / i) + tail > n_nodes_target:
            break
    x = b.node("LayerNormalization", [x, "ln.gamma", "ln.beta"], axis=-1, epsilon=1e-5)
    logits = b.node("MatMul", [x, "wte.T"])
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/transformer/output"))
    g = helper.make_graph(
        b.nodes, f"transformer_like_{i}l",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])],
        initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="smtshape-bench")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


# ---------------------------------------------------------------- CNN / U-Net
def _cbr(b: _Builder, x: str, w: str, stride=1) -> str:
    c = b.node("Conv", [x, w, "conv.b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[stride, stride])
    bn = b.node("BatchNormalization", [c, "bn.scale", "bn.bias", "bn.mean", "bn.var"], epsilon=1e-5)
    return b.node("Relu", [bn])


def _up_cat(b: _Builder, x: str, skip: str) -> str:
    up = b.node("Resize", [x, "", "resize.scales"], mode="nearest")
    cat = b.node("Concat", [up, skip], axis=1)           # [B, 2C, H, W]
    return _cbr(b, cat, "W.cat")


def _unet_block(b: _Builder, x: str) -> str:
    """[B, C, H, W] -> [B, C, H, W]; H, W divisible by 8."""
    e1 = _cbr(b, _cbr(b, x, "W.cc"), "W.cc")                                   # H
    d1 = b.node("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2])           # H/2
    e2 = _cbr(b, d1, "W.cc")
    d2 = _cbr(b, e2, "W.cc", stride=2)                                          # ceil(H/4) (k3 p1 s2)
    e3 = _cbr(b, d2, "W.cc")
    d3 = b.node("AveragePool", [e3], kernel_shape=[2, 2], strides=[2, 2])       # H/8
    mid = _cbr(b, d3, "W.cc")
    u3 = _up_cat(b, mid, e3)
    u2 = _up_cat(b, u3, e2)
    u1 = _up_cat(b, u2, e1)
    return b.node("Add", [x, u1])


def cnn_like(n_nodes_target: int) -> onnx.ModelProto:
    b = _Builder("cnn")
    rng = _rng()
    b.init("W.stem", rng.standard_normal((CH, 3, 3, 3)).astype(np.float32) * 0.1)
    b.init("W.cc", rng.standard_normal((CH, CH, 3, 3)).astype(np.float32) * 0.1)
    b.init("W.cat", rng.standard_normal((CH, 2 * CH, 3, 3)).astype(np.float32) * 0.1)
    b.init("conv.b", np.zeros(CH, np.float32))
    b.init("bn.scale", np.ones(CH, np.float32))
    b.init("bn.bias", np.zeros(CH, np.float32))
    b.init("bn.mean", np.zeros(CH, np.float32))
    b.init("bn.var", np.ones(CH, np.float32))
    b.init("resize.scales", np.array([1, 1, 2, 2], np.float32))
    x = _cbr(b, "input", "W.stem")
    i = 0
    while True:
        x = _unet_block(b, x)
        i += 1
        if len(b.nodes) + len(b.nodes) / i + 1 > n_nodes_target:
            break
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["output"], name="/cnn/gap"))
    g = helper.make_graph(
        b.nodes, f"cnn_like_{i}b",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, "H", "W"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", CH, 1, 1])],
        initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="smtshape-bench")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


GENERATORS = {"transformer": transformer_like, "cnn": cnn_like}


def _selfcheck():
    """check_model on every family and onnxruntime runs of small instances at
    two input sizes, comparing output shapes with the expected ones."""
    import onnxruntime as ort

    m = transformer_like(1000)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for bs, seq in [(1, 7), (3, 20)]:
        (out,) = sess.run(None, {"input_ids": np.random.randint(0, VOCAB, (bs, seq)).astype(np.int64)})
        assert out.shape == (bs, seq, VOCAB), out.shape
        assert np.isfinite(out).all()
    print(f"transformer_like(1000): {len(m.graph.node)} nodes, check_model ok, onnxruntime ok at (1,7) and (3,20)")
    m = cnn_like(1000)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for bs, h, w in [(1, 32, 24), (2, 16, 40)]:
        (out,) = sess.run(None, {"input": np.random.rand(bs, 3, h, w).astype(np.float32)})
        assert out.shape == (bs, CH, 1, 1), out.shape
    print(f"cnn_like(1000): {len(m.graph.node)} nodes, check_model ok, onnxruntime ok at 32x24 and 16x40")


if __name__ == "__main__":
    _selfcheck()
