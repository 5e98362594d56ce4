"""Reductions: Reduce* (axes as attribute or, from opset 13/18, as input) and ArgMax/ArgMin.

Reduced axes become 1 (``keepdims=1``) or disappear.  When the axes are a
runtime input whose value is unknown, the analysis stays sound: with
``keepdims=1`` every output dim is a data symbol bounded by ``max(d, 1)``;
with ``keepdims=0`` the rank is known only when the number of axes is.
ReduceSum/Prod/Max/Min/Mean propagate the values of small tensors (the product of
a shape slice in ``Shape -> Slice -> ReduceProd -> Reshape``; the longer side of an
image in ``Shape -> Cast(float) -> ReduceMax``), with their element type's semantics
(``smtshape.numeric``).
"""
from __future__ import annotations

import math

from ..lazy import numpy as np
from .. import irtypes as ir

from .. import expr as E
from ..registry import register
from .common import norm_axis
from .. import numeric as N
from .elementwise import fit, values

_VALUE_OPS = {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean"}


def _reduce_values(ctx, shape, axes, keep, out_shape):
    """The output's elements when the input's are known (``numeric.reduce``: integers
    wrap, floats round, in any order a runtime takes them)."""
    if ctx.op_type not in _VALUE_OPS or shape is None or not all(isinstance(d, int) for d in shape):
        return None
    v = values(ctx, 0)
    dtype = ctx.dtype(0)
    if v is None or len(v) != math.prod(shape):
        return None
    arr = np.empty(len(v), dtype=object)
    arr[:] = list(v)
    arr = arr.reshape(shape)
    rest = [k for k in range(len(shape)) if k not in axes]
    arr = np.transpose(arr, rest + list(axes)).reshape(math.prod(shape[k] for k in rest), -1)
    return [fit(N.reduce(ctx, ctx.op_type, dtype, list(row))) for row in arr]


def _reduce_known(ctx, shape, axes, keep, noop):
    """Output for known ``axes`` (None: no axes given)."""
    if shape is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    r = len(shape)
    if not axes:
        if noop:
            ctx.set_output(0, shape, ctx.dtype(0), value=ctx.value(0))
            return
        axes = list(range(r))
    else:
        # (repeated axes run in onnxruntime, and the spec does not ask for distinct ones)
        axes = list(dict.fromkeys(norm_axis(ctx, int(a), r, "axes") for a in axes))
    out = tuple(1 if k in axes else d for k, d in enumerate(shape) if keep or k not in axes)
    ctx.set_output(0, out, ctx.dtype(0), value=_reduce_values(ctx, shape, axes, keep, out))


def _reduce_unknown_axes(ctx, shape, keep, noop):
    """Axes from a runtime tensor whose value is unknown: stay sound."""
    ashape = ctx.shape(1)
    count = ashape[0] if ashape is not None and len(ashape) == 1 else None
    if count == 0:                       # an empty axes tensor is a known value
        return _reduce_known(ctx, shape, [], keep, noop)
    if shape is None:
        return ctx.set_output(0, None, ctx.dtype(0))
    msg = "a dim of {} whose reduction axes are known only at run time"
    if keep:
        out = [d if d == 1 else ctx.data_symbol(f"{ctx.op_type.lower()}_d{k}", E.smax(d, 1),
                                                msg.format(ctx.op_type)) for k, d in enumerate(shape)]
        return ctx.set_output(0, out, ctx.dtype(0))
    if count == 1:
        # (one axis: the rank drops by one; with more, repeated axes (onnxruntime runs them) leave it unknown)
        if not shape:
            ctx.invalid("axis.range", f"{ctx.op_type} reduces one axis of a scalar (rank 0), which has none")
        bound = None
        for d in shape:
            bound = d if bound is None else E.smax(bound, d)
        out = [ctx.data_symbol(f"{ctx.op_type.lower()}_d{k}", bound, msg.format(ctx.op_type))
               for k in range(len(shape) - count)]
        return ctx.set_output(0, out, ctx.dtype(0))
    ctx.set_output(0, None, ctx.dtype(0))


def reduce_attr(ctx):
    """Reduce* with an ``axes`` attribute (ReduceSum < 13, the others < 18)."""
    ctx.check_inputs(1, 1)
    keep = int(ctx.attr("keepdims", 1))
    _reduce_known(ctx, ctx.shape(0), ctx.attr("axes", None), keep, 0)


def reduce_input(ctx):
    """Reduce* with an optional ``axes`` input and ``noop_with_empty_axes``."""
    ctx.check_inputs(1, 2)
    keep = int(ctx.attr("keepdims", 1))
    noop = int(ctx.attr("noop_with_empty_axes", 0))
    shape = ctx.shape(0)
    if not ctx.has_input(1):
        return _reduce_known(ctx, shape, None, keep, noop)
    r = ctx.rank(1)
    if r is not None and r != 1:
        ctx.invalid(f"{ctx.op_type.lower()}.axes", f"{ctx.op_type}'s axes input has rank {r}; it must be a 1-D "
                    "tensor", f"give {ctx.op_type} a 1-D axes tensor")
    axes = ctx.int_values(1)
    if axes is not None and all(isinstance(a, int) for a in axes):
        return _reduce_known(ctx, shape, axes, keep, noop)
    _reduce_unknown_axes(ctx, shape, keep, noop)


_REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
for _op in _REDUCE:
    register("", _op, 1)(reduce_attr)
    register("", _op, 13 if _op == "ReduceSum" else 18)(reduce_input)


def arg_reduce(ctx):
    """ArgMax/ArgMin: the ``axis`` dim becomes 1 or disappears; int64 output."""
    ctx.check_inputs(1, 1)
    shape = ctx.shape(0)
    keep = int(ctx.attr("keepdims", 1))
    axis = int(ctx.attr("axis", 0))
    if shape is None:
        return ctx.set_output(0, None, ir.DataType.INT64)
    axis = norm_axis(ctx, axis, len(shape))
    out = [1 if k == axis else d for k, d in enumerate(shape) if keep or k != axis]
    ctx.set_output(0, out, ir.DataType.INT64)


register("", "ArgMax", 1)(arg_reduce)
register("", "ArgMin", 1)(arg_reduce)
