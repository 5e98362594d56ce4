"""Helpers shared by the contrib rules: a remapped view of a rule context, the
static contract of each com.microsoft op (``contract``: arity and required
attributes, which the engine's schema table does not cover for this domain), and
small checks (1-D parameter lengths, same-shape inputs) that emit constraints."""
from __future__ import annotations

from ... import irtypes as ir

from ...printing import show
from ..common import unify
from ..common import unidirectional

MS = "com.microsoft"
FLOAT = ir.DataType.FLOAT
INT32 = ir.DataType.INT32


class View:
    """``ctx`` seen through an input remapping, so a rule written for one input
    layout (Conv, Gemm, Concat, pools) serves a fused or quantized op.

    ``inputs[i]`` is the real input index that plays the role of input ``i``
    (None: absent).  ``shapes`` overrides the shape of a (virtual) input, e.g.
    an NHWC tensor seen as NCHW.  ``on_output(i, shape, dtype)`` may rewrite an
    output before it is set (NCHW back to NHWC, the output dtype) and sees the
    shape the wrapped rule computed.  Values and constants are hidden: the
    wrapped rule must not propagate values of quantized tensors.
    """

    def __init__(self, ctx, inputs, shapes=None, on_output=None):
        self._ctx = ctx
        self._map = list(inputs)
        self._shapes = dict(shapes or {})
        self._on_output = on_output
        self.outputs_seen = {}

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def _real(self, i):
        return self._map[i] if 0 <= i < len(self._map) else None

    @property
    def num_inputs(self):
        return len(self._map)

    def has_input(self, i):
        j = self._real(i)
        return j is not None and self._ctx.has_input(j)

    def shape(self, i):
        if i in self._shapes:
            return self._shapes[i]
        j = self._real(i)
        return None if j is None else self._ctx.shape(j)

    def rank(self, i):
        s = self.shape(i)
        return None if s is None else len(s)

    def dtype(self, i):
        j = self._real(i)
        return None if j is None else self._ctx.dtype(j)

    def value(self, i):
        return None

    def int_values(self, i):
        return None

    def const(self, i):
        return None

    def input(self, i):
        j = self._real(i)
        return None if j is None else self._ctx.input(j)

    def check_inputs(self, min_count, max_count=None):
        """The wrapping rule checks the real inputs."""

    def set_output(self, i, shape, dtype=None, value=None, const=None, tensor=None):
        self.outputs_seen[i] = shape
        if self._on_output is not None:
            shape, dtype = self._on_output(i, shape, dtype)
        self._ctx.set_output(i, shape, dtype)


# onnxruntime's com.microsoft schemas (as onnxruntime 1.32 registers them), for the ops with a
# rule here: each formal input's option (s: required, o: optional, v: variadic), the least and
# most outputs, and the required attributes.  onnxruntime's graph checker refuses a node that
# breaks them ("This is an invalid model ... Required attribute 'num_heads' is missing").
CONTRACT = {
    "Attention": ("ssooooo", 1, 2, ("num_heads",)),
    "BiasAdd": ("sss", 1, 1, ()),
    "BiasDropout": ("ssooo", 1, 2, ()),
    "BiasGelu": ("ss", 1, 1, ()),
    "BiasSoftmax": ("ss", 1, 1, ("is_inner_broadcast",)),
    "BiasSplitGelu": ("ss", 1, 1, ()),
    "BranchwiseRMSNorm": ("so", 1, 1, ()),
    "DecoderMaskedMultiHeadAttention": ("soooooooooo", 1, 4, ("num_heads",)),
    "DequantizeLinear": ("sso", 1, 1, ()),
    "DynamicQuantizeMatMul": ("sssoo", 1, 1, ()),
    "DynamicTimeWarping": ("s", 1, 1, ()),
    "EmbedLayerNormalization": ("sossossoo", 1, 3, ()),
    "FastGelu": ("so", 1, 1, ()),
    "FusedConv": ("ssoo", 1, 1, ()),
    "FusedGemm": ("sso", 1, 1, ()),
    "FusedMatMul": ("ss", 1, 1, ()),
    "GatedRelativePositionBias": ("sssssso", 1, 1, ("num_heads",)),
    "GatherBlockQuantized": ("ssso", 1, 1, ()),
    "Gelu": ("s", 1, 1, ()),
    "GemmFastGelu": ("sso", 1, 1, ()),
    "GemmFloat8": ("ssoooo", 1, 1, ()),
    "GroupNorm": ("sss", 1, 1, ("activation", "groups")),
    "GroupQueryAttention": ("soooossoooooooooo", 1, 4, ("kv_num_heads", "num_heads")),
    "HyperConnectionPostMix": ("ssso", 1, 1, ()),
    "HyperConnectionPreMix": ("ss", 1, 1, ()),
    "LongformerAttention": ("sssssss", 1, 1, ("num_heads", "window")),
    "MatMulIntegerToFloat": ("ssssooo", 1, 1, ()),
    "MatMulNBits": ("sssooo", 1, 1, ("K", "N", "block_size")),
    "MoE": ("sssosooo", 1, 1, ()),
    "MultiHeadAttention": ("sooooooooo", 1, 4, ("num_heads",)),
    "NhwcConv": ("sso", 1, 1, ()),
    "PackedAttention": ("ssssso", 1, 1, ("num_heads",)),
    "PackedMultiHeadAttention": ("sooosso", 1, 1, ("num_heads",)),
    "QGemm": ("ssssssooo", 1, 1, ()),
    "QLinearAdd": ("ssossoso", 1, 1, ()),
    "QLinearAveragePool": ("ssoso", 1, 1, ("kernel_shape",)),
    "QLinearConcat": ("ssv", 1, 1, ("axis",)),
    "QLinearConv": ("sssssssso", 1, 1, ()),
    "QLinearGlobalAveragePool": ("sssss", 1, 1, ()),
    "QLinearLeakyRelu": ("ssoso", 1, 1, ()),
    "QLinearMul": ("ssossoso", 1, 1, ()),
    "QLinearSigmoid": ("ssoso", 1, 1, ()),
    "QLinearSoftmax": ("ssoss", 1, 1, ("opset",)),
    "QMoE": ("sssoosooooooooooooooo", 1, 1, ()),
    "QuantizeLinear": ("sso", 1, 1, ()),
    "QuickGelu": ("s", 1, 1, ()),
    "RelativePositionBias": ("sss", 1, 1, ("max_distance",)),
    "RemovePadding": ("ss", 4, 4, ()),
    "RestorePadding": ("ss", 1, 1, ()),
    "RotaryEmbedding": ("ssss", 1, 1, ()),
    "ScaledSiLU": ("so", 1, 1, ()),
    "SkipGroupNorm": ("sssso", 1, 2, ("activation", "groups")),
    "SkipLayerNormalization": ("sssoo", 1, 4, ()),
    "SkipSimplifiedLayerNormalization": ("ssso", 1, 4, ()),
    "SparseAttention": ("soossssssoo", 3, 3, ("kv_num_heads", "num_heads", "sparse_block_size")),
    "TransposeMatMul": ("ss", 1, 1, ()),
    "UnfoldTensor": ("s", 1, 1, ("size",)),
}


def contract(ctx):
    """The node's inputs, outputs and attributes against onnxruntime's schema of its op
    (``CONTRACT``): a conflict (rule ``<op>.arity`` / ``<op>.attribute``) when it breaks it."""
    spec = CONTRACT.get(ctx.op_type) if ctx.domain == MS else None
    if spec is None:
        return
    opts, min_out, max_out, required = spec
    op = ctx.op_type
    ins = ctx.inputs
    n = len(ins)
    variadic = opts.endswith("v")
    if not variadic and n > len(opts):
        ctx.invalid(f"{op.lower()}.arity", f"{op} takes at most {len(opts)} inputs, the node has {n}",
                    f"give {op} at most {len(opts)} inputs")
    for i, o in enumerate(opts):
        if o == "s" and (i >= n or ins[i] is None):
            ctx.invalid(f"{op.lower()}.arity", f"{op}'s input {i} is required, the node "
                        + ("omits it" if i < n else f"has {n} inputs"), f"give {op} its input {i}")
        if o == "v" and n <= i:
            ctx.invalid(f"{op.lower()}.arity", f"{op} takes at least {i + 1} inputs, the node has {n}",
                        f"give {op} at least {i + 1} inputs")
    m = len(ctx.outputs)
    if m < min_out or m > max_out:
        want = f"{min_out}" if min_out == max_out else f"{min_out} to {max_out}"
        ctx.invalid(f"{op.lower()}.arity", f"{op} has {want} outputs, the node has {m}",
                    f"give {op} {want} outputs")
    for name in required:
        if name not in ctx.attributes:
            ctx.invalid(f"{op.lower()}.attribute", f"{op}'s required attribute '{name}' is missing",
                        f"give the node its '{name}' attribute")


def vector_of(ctx, i, size, rule, what, of="the hidden size"):
    """Input ``i`` (when present and its shape known) is 1-D of length ``size``."""
    if not ctx.has_input(i):
        return
    s = ctx.shape(i)
    if s is None or size is None:
        return
    if len(s) != 1:
        ctx.invalid(rule, f"{what} has rank {len(s)}: it is 1-D, of {of} ({show(size)})",
                    f"give {what} the shape ({show(size)},)")
    unify(ctx, s[0], size, rule, f"{what} length {show(s[0])} must equal {of} {show(size)}")


def same_shape(ctx, a, b, rule, what_a, what_b):
    """Shapes ``a`` and ``b`` are equal (same rank, every axis equal); returns the unified shape."""
    if a is None or b is None:
        return a if a is not None else b
    if len(a) != len(b):
        ctx.invalid(rule, f"{what_b} has rank {len(b)} but {what_a} has rank {len(a)}: they have one shape",
                    f"give {what_b} the shape of {what_a}")
    return tuple(unify(ctx, x, y, rule, f"{what_a} and {what_b} agree on axis {k}: {show(x)} == {show(y)}")
                 for k, (x, y) in enumerate(zip(a, b)))


def last_dim(ctx, s, what="input"):
    """The last dim of ``s`` (None when the rank is unknown); a scalar has none, which the
    caller's spec forbids (a bias of the last dim, a hidden size)."""
    if s is None:
        return None
    if len(s) == 0:
        ctx.invalid(f"{ctx.op_type.lower()}.rank", f"{what} is a scalar: {ctx.op_type} reads its last axis",
                    f"give {ctx.op_type} an {what} of rank >= 1")
    return s[-1]


def onto(ctx, target, i, rule, what):
    """Input ``i`` broadcasts unidirectionally onto ``target`` (constraints only)."""
    if ctx.has_input(i):
        unidirectional(ctx, target, ctx.shape(i), rule, what)
