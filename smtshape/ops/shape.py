"""Shape, Size, Constant, ConstantOfShape and Range: where dims enter values.

Small integer tensors carry their elements (``ctx.value``) as dim expressions:
``Shape`` is where input dims enter values, and the shape-family ops that move
elements around (Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape, Flatten,
Transpose, Split, Tile, Expand; ``reshape.py``, ``slice.py``, ``concat.py``,
``expand.py``, ``indexing.py``) move the values too, so a ``Reshape`` target
computed in the graph is read back as expressions (the exporters' Shape -> Gather
-> Unsqueeze -> Concat -> Reshape chains).  Shared value helpers: ``values.py``.
"""
from __future__ import annotations

import math

from ..lazy import numpy as np
from .. import irtypes as ir

from .. import expr as E
from ..constraints import all_of, any_of, eq, ge, gt, le, lt, ne
from ..context import INT_TYPES, MAX_VALUE_ELEMENTS, const_info
from ..errors import Cannot
from ..registry import register
from .common import numel
from .values import is_expr, shape_input_rank, shape_str, shown, sign_of, target_dims


INT64 = ir.DataType.INT64


def _small_int(dtype) -> bool:
    return dtype in INT_TYPES


# ================================================================ Constant

_CONSTANT_ATTRS = ("value", "sparse_value", "value_int", "value_ints", "value_float", "value_floats",
                   "value_string", "value_strings")


@register("", "Constant", since_version=1)
def constant(ctx):
    attrs = ctx.attributes
    given = [a for a in _CONSTANT_ATTRS if a in attrs]
    if len(given) != 1:
        ctx.invalid("constant.value", f"Constant has {len(given)} value attributes ({', '.join(given) or 'none'}); "
                    "it takes exactly one of " + ", ".join(_CONSTANT_ATTRS),
                    "give the Constant exactly one value attribute")
    if "sparse_value" in attrs:
        return _sparse_constant(ctx, attrs["sparse_value"].value)
    if "value" in attrs:
        # like an initializer: static shape, small integer elements, the array read lazily
        info = const_info(attrs["value"].value)
        ctx.set_output(0, info.shape, info.dtype, value=info.value, const=info.const, tensor=info.tensor)
        return
    if "value_int" in attrs:
        dtype, arr = INT64, np.array(ctx.attr("value_int"), dtype=np.int64)
        shape = ()
    elif "value_ints" in attrs:
        dtype, arr = INT64, np.array(ctx.attr("value_ints"), dtype=np.int64)
        shape = arr.shape
    elif "value_float" in attrs:
        dtype, arr = ir.DataType.FLOAT, np.array(ctx.attr("value_float"), dtype=np.float32)
        shape = ()
    elif "value_floats" in attrs:
        dtype, arr = ir.DataType.FLOAT, np.array(ctx.attr("value_floats"), dtype=np.float32)
        shape = arr.shape
    elif "value_string" in attrs:
        dtype, arr, shape = ir.DataType.STRING, None, ()
    else:
        dtype, arr, shape = ir.DataType.STRING, None, (len(ctx.attr("value_strings")),)
    value = None
    if arr is not None and dtype in INT_TYPES and arr.size <= MAX_VALUE_ELEMENTS:
        value = tuple(bool(x) if dtype == ir.DataType.BOOL else int(x) for x in arr.reshape(-1))
    ctx.set_output(0, tuple(shape), dtype, value=value, const=arr)


def _sparse_constant(ctx, sp):
    """A Constant's ``sparse_value``: the dense shape (its ``dims``) and the element type of
    its ``values``; the elements of a small integer one (indices linear, [NNZ], or one
    coordinate tuple per value, [NNZ, rank])."""
    try:
        dims = tuple(int(d) for d in sp.dims)
        code = int(sp.values.data_type)
        dtype = ir.DataType(code)
    except (AttributeError, TypeError, ValueError):
        ctx.cannot(Cannot.NOT_MODELED, "this form of a sparse_value attribute is not read")
    if any(d < 0 for d in dims):
        ctx.invalid("constant.sparse_dims", f"sparse_value has dims {list(dims)}, with a size below 0",
                    "give the sparse tensor non-negative dims")
    value = None
    n = math.prod(dims)
    if dtype in INT_TYPES and n <= MAX_VALUE_ELEMENTS:
        try:
            from ..reader import Tensor
            vals = np.asarray(Tensor(sp.values).numpy()).reshape(-1)
            idx = np.asarray(Tensor(sp.indices).numpy(), dtype=np.int64)
            flat = idx.reshape(-1) if idx.ndim == 1 else np.ravel_multi_index(tuple(idx.T), dims)
            dense = np.zeros(n, dtype=vals.dtype)
            dense[flat] = vals
            value = tuple(bool(x) if dtype == ir.DataType.BOOL else int(x) for x in dense)
        except Exception:       # (a malformed sparse tensor is the checker's to refuse: no elements then)
            value = None
    ctx.set_output(0, dims, dtype, value=value)


# ================================================================ Shape, Size

def _shape_range(start: int, end: int | None, r: int):
    """The axes Shape's ``start`` / ``end`` select: negative ones count from the back, then
    clamped into [0, r] (the spec; onnxruntime alike, INT32 / INT64 extremes included; onnx's
    reference evaluator re-reads an end below -r from the back, against the spec's text)."""
    def fix(x):
        if x < 0:
            x += r
        return min(max(x, 0), r)
    return fix(start), (r if end is None else fix(end))


@register("", "Shape", since_version=1)
def shape_op(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    start = int(ctx.attr("start", 0))
    end = ctx.attr("end", None)
    if s is None:
        n = ctx.data_symbol("rank", None, "the rank of Shape's input is unknown")
        ctx.set_output(0, (n,), INT64)
        return
    a, b = _shape_range(start, None if end is None else int(end), len(s))
    dims = s[a:b] if b > a else ()
    ctx.set_output(0, (len(dims),), INT64, value=tuple(dims))


@register("", "Size", since_version=1)
def size_op(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    ctx.set_output(0, (), INT64, value=None if s is None else (numel(s),))


# ================================================================ ConstantOfShape

@register("", "ConstantOfShape", since_version=9)
def constant_of_shape(ctx):
    ctx.check_inputs(1, 1)
    t = ctx.attributes.get("value")
    tv = None
    if t is not None:
        tv = t.value
        dtype = tv.dtype
        size = math.prod(tv.shape)
        if size != 1:
            ctx.invalid("constantofshape.value", f"attribute 'value' has shape {list(tv.shape)} ({size} elements); "
                        "it must hold exactly one element", "give 'value' a one-element tensor")
    else:
        dtype = ir.DataType.FLOAT
    shape_input_rank(ctx, 0, "constantofshape.shape_rank", "ConstantOfShape")
    target = target_dims(ctx, 0, "shape")
    if target is None:
        ctx.set_output(0, None, dtype)
        return
    dims = []
    for k, e in enumerate(target):
        if e is None or not is_expr(e):
            dims.append(ctx.data_symbol("cos_dim", None, f"ConstantOfShape axis {k} is read at run time"))
            continue
        if isinstance(e, int) and e < 0:
            ctx.invalid("constantofshape.nonnegative", f"shape element {k} is {e}; every size must be >= 0",
                        "give ConstantOfShape non-negative sizes")
        if not isinstance(e, int) and sign_of(ctx, e) != "nonneg":
            ctx.require(ge(e, 0), "constantofshape.nonnegative", f"shape element {k} ({shown(e)}) is >= 0")
        dims.append(e)
    value = filled = None
    if all(isinstance(d, int) for d in dims) and math.prod(dims) <= MAX_VALUE_ELEMENTS:
        n = math.prod(dims)
        filled = _Filled(dims, tv)
        if dtype in INT_TYPES:
            fast = getattr(tv, "int_values", None)      # (a reader tensor: no numpy)
            one = fast(1) if fast is not None else None
            fill = one[0] if one else filled.element()
            value = (bool(fill) if dtype == ir.DataType.BOOL else int(fill),) * n
    ctx.set_output(0, dims, dtype, value=value, tensor=filled)


class _Filled:
    """A ConstantOfShape's output as a lazy tensor: the array is made when a rule reads it."""

    __slots__ = ("dims", "fill")

    def __init__(self, dims, fill):
        self.dims = tuple(dims)
        self.fill = fill         # the 'value' tensor attribute, or None: float 0

    def element(self):
        if self.fill is None:
            return np.float32(0)
        return np.asarray(self.fill.numpy()).reshape(-1)[0]

    def numpy(self):
        x = self.element()
        return np.full(self.dims, x, dtype=np.asarray(x).dtype)


# ================================================================ Range

def _scalar(ctx, i):
    """A Range operand: int / expr from the value, a float from a constant, or None."""
    v = ctx.value(i)
    if v is not None and len(v) == 1 and is_expr(v[0]):
        return v[0]
    c = ctx.const(i)
    if c is not None and c.size == 1:
        x = c.reshape(-1)[0]
        if c.dtype.kind in "iu":
            return int(x)
        x = float(x)
        # an integral float (0.0, 1.0) is the same number as an int: Range's length
        # formula stays exact, and symbolic limits (Cast(S, FLOAT)) combine with it
        return int(x) if x.is_integer() and abs(x) <= 2 ** 24 else x
    return None


@register("", "Range", since_version=11)
def range_op(ctx):
    ctx.check_inputs(3, 3)
    for i, what in enumerate(("start", "limit", "delta")):
        s = ctx.shape(i)
        # the spec says scalar; onnxruntime and onnx's reference also run a 1-element vector
        if s is None or len(s) == 0:
            continue
        if len(s) == 1 and not isinstance(s[0], int):
            ctx.require(eq(s[0], 1), "range.scalar", f"Range's {what} (shape {shape_str(s)}) holds one element")
        elif not (len(s) == 1 and s[0] == 1):
            ctx.invalid("range.scalar", f"Range's {what} has shape {shape_str(s)}; it must be a scalar",
                        f"give Range a scalar {what}")
    dtype = ctx.dtype(0)
    start, limit, delta = (_scalar(ctx, i) for i in range(3))
    if isinstance(delta, (int, float)) and not isinstance(delta, bool) and delta == 0:
        ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                    "give Range a non-zero delta")
    length = _range_len(ctx, start, limit, delta)
    if dtype in _FLOAT_INTEGERS and not isinstance(length, int) and is_expr(start) and is_expr(limit) \
            and is_expr(delta):
        length = _float_range_len(ctx, dtype, start, limit, length)
    value = None
    if all(isinstance(x, int) for x in (start, limit, delta)) and isinstance(length, int) \
            and length <= MAX_VALUE_ELEMENTS and _small_int(dtype):
        value = tuple(range(start, limit, delta))
    ctx.set_output(0, (length,), dtype, value=value)


# the integers a floating-point type holds exactly: |x| <= 2**mantissa (Range's float types)
_FLOAT_INTEGERS = {ir.DataType.FLOAT: 2 ** 24, ir.DataType.DOUBLE: 2 ** 53}


def _float_range_len(ctx, dtype, start, limit, length):
    """A float Range over symbolic values (``Range(0.0, Cast(N, float), 1.0)``): onnxruntime
    subtracts ``limit - start`` in the element type, onnx's reference evaluator (numpy) in
    double, the spec in real numbers.  The integer ``length`` is theirs while the difference
    is an integer the type holds exactly; where the store cannot show that, the length is a
    data symbol that is ``length`` inside that range (no premise, no relation forced)."""
    top = _FLOAT_INTEGERS[dtype]
    diff = E.sub(limit, start)
    if ctx.proven(le(diff, top)) and ctx.proven(ge(diff, -top)):
        return length
    inside = all_of(le(diff, top), ge(diff, -top))
    ctx.warn(f"Range in {ir.DataType(dtype).name}: {shown(limit)} - {shown(start)} may be beyond the integers the type "
             "holds exactly, where onnxruntime rounds the difference; the length is kept as a data symbol")
    d = ctx.data_symbol("range_len", None, f"the length of a {ir.DataType(dtype).name} Range past 2**{top.bit_length() - 1}")
    ctx.require(any_of(all_of(inside, eq(d, length)), gt(diff, top), lt(diff, -top)), "range.float_exact",
                lambda: f"Range's length is {shown(length)} while {shown(diff)} is an integer "
                        f"{ir.DataType(dtype).name} holds exactly (|x| <= {top})")
    return d


def _range_len(ctx, start, limit, delta):
    if any(isinstance(x, float) for x in (start, limit, delta)) and None not in (start, limit, delta) \
            and all(isinstance(x, (int, float)) for x in (start, limit, delta)):
        if delta == 0:
            ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                        "give Range a non-zero delta")
        return max(int(math.ceil((limit - start) / delta)), 0)
    if isinstance(delta, int) and not isinstance(delta, bool) and is_expr(start) and is_expr(limit):
        if delta == 0:
            ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                        "give Range a non-zero delta")
        if delta > 0:
            return E.smax(E.ceildiv(E.sub(limit, start), delta), 0)
        return E.smax(E.ceildiv(E.sub(start, limit), -delta), 0)
    if is_expr(delta) and is_expr(start) and is_expr(limit) and sign_of(ctx, E.sub(delta, 1)) == "nonneg":
        ctx.require(gt(delta, 0), "range.delta", f"Range delta {shown(delta)} is positive")
        return E.smax(E.ceildiv(E.sub(limit, start), delta), 0)
    if is_expr(delta) and not isinstance(delta, int):
        ctx.require(ne(delta, 0), "range.delta", f"Range's delta {shown(delta)} is non-zero")
    return ctx.data_symbol("range_len", None, "the length of Range depends on run-time values")
