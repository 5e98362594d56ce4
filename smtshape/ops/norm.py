"""Normalizations and other shape-preserving ops with an axis or channel:
BatchNormalization, LayerNormalization, GroupNormalization, InstanceNormalization,
LRN, MeanVarianceNormalization, Softmax / LogSoftmax / Hardmax, CumSum, Trilu.

Each output 0 has X's shape; the rules emit the relations between X's channel
(or normalized) dims and the parameter tensors.
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from ..constraints import eq
from ..printing import show
from ..registry import register
from .common import norm_axes, norm_axis
from .common import unidirectional


def _channel(ctx, x, what="X"):
    """C = X.shape[1] (None when the rank is unknown); a conflict when the rank is < 2."""
    if x is None:
        return None
    if len(x) < 2:
        ctx.invalid(f"{_family(ctx)}.rank", f"{ctx.op_type}'s {what} has rank {len(x)}; it must have rank >= 2 "
                    "(N x C x ...)", "give the input a batch and a channel axis")
    return x[1]


def _family(ctx) -> str:
    return {"BatchNormalization": "batchnorm", "InstanceNormalization": "instancenorm",
            "GroupNormalization": "groupnorm", "LayerNormalization": "layernorm"}.get(ctx.op_type,
                                                                                       ctx.op_type.lower())


def _param_is(ctx, i, size, rule, what):
    """Input ``i`` is 1-D (a conflict otherwise) of length ``size`` (when known)."""
    s = ctx.shape(i)
    if s is None:
        return
    if len(s) != 1:
        ctx.invalid(f"{_family(ctx)}.param_rank", f"{ctx.op_type}'s {what} has rank {len(s)} (shape "
                    f"{[show(d) for d in s]}); it must be a 1-D tensor", f"give {what} the shape [C]")
    if size is not None:
        ctx.equal(s[0], size, rule, lambda: f"{what} length {show(s[0])} must equal the channel count {show(size)}")


# ------------------------------------------------------------ BatchNormalization
def batch_norm(ctx):
    """Y has X's shape; scale, B, mean and var have length C = X.shape[1] (unless
    ``spatial=0`` before opset 9); the training outputs have shape (C,)."""
    ctx.check_inputs(5, 5)
    x = ctx.shape(0)
    opset = ctx.opset or 99
    spatial = int(ctx.attr("spatial", 1)) if opset < 9 else 1
    if x is not None and len(x) == 0:
        ctx.invalid("batchnorm.rank", "BatchNormalization's X is a scalar (rank 0); it must be (N x C x ...) or "
                    "a 1-D (N) tensor", "give X a batch axis")
    # a 1-D X of size N has one channel (the spec: "C is assumed to be 1")
    c = None if x is None else (x[1] if len(x) > 1 else 1)
    if opset >= 14:
        training = int(ctx.attr("training_mode", 0))
        extra = [k for k in (1, 2) if ctx.has_output(k)]
        if training and len(extra) != 2:
            ctx.invalid("batchnorm.outputs", "BatchNormalization with training_mode=1 has "
                        f"{1 + len(extra)} outputs; it must have 3 (Y, running_mean, running_var)",
                        "give it the outputs Y, running_mean and running_var")
        if not training and extra:
            ctx.invalid("batchnorm.outputs", "BatchNormalization with training_mode=0 has "
                        f"{1 + len(extra)} outputs; it has only Y then", "drop the running_mean / running_var "
                        "outputs, or set training_mode=1")
    if spatial:
        for i, what in ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")):
            _param_is(ctx, i, c, "batchnorm.channels", what)
    ctx.set_output(0, x, ctx.dtype(0))
    cshape = (c,) if spatial and c is not None else ctx.shape(3)
    for k in range(1, 5):
        if ctx.has_output(k):
            ctx.set_output(k, cshape, (ctx.dtype(3) if k <= 2 else None) or ctx.dtype(0))


# ------------------------------------------------------------ LayerNormalization
def layer_norm(ctx):
    ctx.check_inputs(2, 3)
    x = ctx.shape(0)
    axis = int(ctx.attr("axis", -1))
    ctx.set_output(0, x, ctx.dtype(0))
    for i, what in ((1, "Scale"), (2, "B")):
        if ctx.has_input(i):
            unidirectional(ctx, x, ctx.shape(i), f"layernorm.{what.lower()}", what)
    stash = ir.DataType(int(ctx.attr("stash_type", 1)))
    if x is None:
        stats = None
    else:
        a = norm_axis(ctx, axis, len(x))
        stats = tuple(x[:a]) + (1,) * (len(x) - a)
    for k in (1, 2):
        if ctx.has_output(k):
            ctx.set_output(k, stats, stash)


# ------------------------------------------------------------ GroupNormalization
def group_norm(ctx):
    ctx.check_inputs(3, 3)
    x = ctx.shape(0)
    g = ctx.require_attr("num_groups")
    g = int(g)
    if g <= 0:
        ctx.invalid("groupnorm.num_groups", f"num_groups is {g}; it must be >= 1", "give num_groups >= 1")
    c = _channel(ctx, x)
    if c is not None:
        ctx.require(eq(E.mod(c, g), 0), "groupnorm.divisible",
                    f"channel count {show(c)} (axis 1) must be divisible by num_groups {g}")
    size = g if (ctx.opset or 99) < 21 else c
    for i, what in ((1, "scale"), (2, "bias")):
        _param_is(ctx, i, size, "groupnorm.params", what)
    ctx.set_output(0, x, ctx.dtype(0))


# ------------------------------------------------------------ InstanceNormalization
def instance_norm(ctx):
    ctx.check_inputs(3, 3)
    x = ctx.shape(0)
    c = _channel(ctx, x)
    for i, what in ((1, "scale"), (2, "B")):
        _param_is(ctx, i, c, "instancenorm.channels", what)
    ctx.set_output(0, x, ctx.dtype(0))


# ------------------------------------------------------------ simple shape-preserving ops
def lrn(ctx):
    ctx.check_inputs(1, 1)
    size = ctx.require_attr("size")
    if int(size) <= 0:
        ctx.invalid("lrn.size", f"LRN size is {size}; the number of channels to sum over must be >= 1",
                    "give LRN a size >= 1")
    x = ctx.shape(0)
    _channel(ctx, x)
    ctx.set_output(0, x, ctx.dtype(0))


def mvn(ctx):
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    axes = ctx.attr("axes", [0, 2, 3])
    if x is not None:
        norm_axes(ctx, axes, len(x))
    ctx.set_output(0, x, ctx.dtype(0))


def softmax(ctx):
    """Output has X's shape in every opset (before 13 the op coerces X to 2-D internally)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    axis = int(ctx.attr("axis", 1 if (ctx.opset or 99) < 13 else -1))
    if x is not None:
        if len(x) == 0:
            ctx.invalid(f"{ctx.op_type.lower()}.rank", f"{ctx.op_type} of a scalar (rank 0): its input must have "
                        "rank >= 1", f"give {ctx.op_type} an input of rank >= 1")
        norm_axis(ctx, axis, len(x))
    ctx.set_output(0, x, ctx.dtype(0))


def cumsum(ctx):
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    ar = ctx.shape(1)
    # (the spec says a 0-D tensor; onnxruntime also runs a 1-element vector)
    if ar is not None and not (len(ar) == 0 or (len(ar) == 1 and ar[0] == 1)):
        ctx.invalid("cumsum.axis", f"CumSum's axis has shape {[show(d) for d in ar]}; it must be a scalar",
                    "give CumSum a scalar axis")
    if x is not None and len(x) == 0:
        ctx.invalid("cumsum.rank", "CumSum of a scalar (rank 0): no axis to sum along", "give CumSum an input of "
                    "rank >= 1")
    av = ctx.int_values(1)
    axis = None
    if av is not None and len(av) == 1 and isinstance(av[0], int) and x is not None:
        axis = norm_axis(ctx, av[0], len(x))
    val = None
    v = ctx.value(0)
    if axis == 0 and x is not None and len(x) == 1 and v is not None and len(v) == x[0]:
        val = _cumsum_values(list(v), int(ctx.attr("exclusive", 0)), int(ctx.attr("reverse", 0)))
    ctx.set_output(0, x, ctx.dtype(0), value=val)


def _cumsum_values(v, exclusive, reverse):
    from .elementwise import is_int
    seq = v[::-1] if reverse else v
    out, acc = [], 0
    for x in seq:
        nxt = E.add(acc, x) if acc is not None and x is not None and is_int(x) else None
        out.append(acc if exclusive else nxt)
        acc = nxt
    return out[::-1] if reverse else out


def trilu(ctx):
    ctx.check_inputs(1, 2)
    x = ctx.shape(0)
    if x is not None and len(x) < 2:
        ctx.invalid("trilu.rank", f"Trilu's input has rank {len(x)}; it must have rank >= 2 (a batch of matrices)",
                    "give Trilu an input of rank >= 2")
    r = ctx.rank(1)
    if r not in (None, 0) and not (r == 1 and ctx.shape(1) == (1,)):
        ctx.invalid("trilu.k", f"Trilu's k has shape {[show(d) for d in ctx.shape(1)]}; it must be a scalar",
                    "give Trilu a scalar k")
    ctx.set_output(0, x, ctx.dtype(0))


register("", "BatchNormalization", 1)(batch_norm)
register("", "LayerNormalization", 17)(layer_norm)
register("", "GroupNormalization", 18)(group_norm)
register("", "InstanceNormalization", 1)(instance_norm)
register("", "LRN", 1)(lrn)
register("", "MeanVarianceNormalization", 9)(mvn)
for _op in ("Softmax", "LogSoftmax", "Hardmax"):
    register("", _op, 1)(softmax)
register("", "CumSum", 11)(cumsum)
register("", "Trilu", 14)(trilu)
