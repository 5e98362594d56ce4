"""Shape-manipulating ops and the value propagation that resolves exporter
chains (Shape -> Gather -> Unsqueeze -> Concat -> Reshape).

Small integer tensors carry their elements (``ctx.value``) as dim
expressions: ``Shape`` is where input dims enter values, and every op here
that moves elements around (Gather, Slice, Concat, Squeeze, Unsqueeze,
Reshape, Flatten, Transpose, Split, Tile, Expand) moves the values too, so a
``Reshape`` target computed in the graph is read back as expressions.

Conventions: ``BIG`` is the magnitude from which a Slice/Shape index means
"to the end" (no tensor dim reaches 2**62 elements; ONNX dims are int64).
"""
from __future__ import annotations

import math
from functools import lru_cache

from ..lazy import numpy as np
from .. import irtypes as ir
from ..lazy import sympy

from .. import expr as E
from ..constraints import Rel, all_of, any_of, eq, ge, gt, le, lt, ne
from ..context import INT_TYPES, MAX_VALUE_ELEMENTS, const_info, element_kind
from ..errors import Cannot
from ..printing import show
from ..registry import register
from ..store import Verdict
from .common import broadcast_shapes, norm_axes, norm_axis, numel, unify

BIG = 2 ** 62
INT64 = ir.DataType.INT64


# ================================================================ helpers

def _s(e) -> str:
    return show(e) if not isinstance(e, bool) else str(int(e))


def _is_expr(v) -> bool:
    """An int or a symbolic integer element (not None, not a bool): context.element_kind."""
    return element_kind(v) == "int"


def _sign(ctx, e) -> str | None:
    """'nonneg' / 'neg' when provable, else None."""
    if isinstance(e, int):
        return "nonneg" if e >= 0 else "neg"
    if e.is_nonnegative is True:
        return "nonneg"
    if e.is_negative is True:
        return "neg"
    v = ctx.decide(ge(e, 0))
    if v is Verdict.PROVEN:
        return "nonneg"
    if v is Verdict.REFUTED:
        return "neg"
    return None


def _le(ctx, a, b) -> bool:
    d = E.sub(b, a)
    if isinstance(d, int):
        return d >= 0
    if d.is_nonnegative is True:
        return True
    if d.is_negative is True:
        return False
    return ctx.proven(le(a, b))


def _min(ctx, a, b):
    if _le(ctx, a, b):
        return a
    if _le(ctx, b, a):
        return b
    return E.smin(a, b)


def _max(ctx, a, b):
    if _le(ctx, a, b):
        return b
    if _le(ctx, b, a):
        return a
    return E.smax(a, b)


def _clamp(ctx, x, lo, hi):
    return _min(ctx, _max(ctx, x, lo), hi)


def _obj_array(ctx, i):
    """Input ``i``'s known value as a numpy object array of its static shape, or None."""
    v = ctx.value(i)
    s = ctx.shape(i)
    if v is None or s is None or not all(isinstance(d, int) for d in s):
        return None
    if math.prod(s) != len(v):
        return None
    arr = np.empty(len(v), dtype=object)
    arr[:] = list(v)
    return arr.reshape(s)


def _flat(arr):
    """Flattened tuple of an object array, None when too big."""
    if arr is not None and not isinstance(arr, np.ndarray):
        return (arr,)      # numpy hands back a 0-d selection as the element itself
    if arr is None or arr.size > MAX_VALUE_ELEMENTS:
        return None
    return tuple(arr.reshape(-1).tolist())


def _small_int(dtype) -> bool:
    return dtype in INT_TYPES


def _ints_of(ctx, i, what: str):
    """All elements of input ``i`` as Python ints, None when any is unknown/symbolic."""
    v = ctx.value(i)
    if v is None:
        t = ctx.input(i)
        if t is None or t.shape is None or not all(isinstance(d, int) for d in t.shape) \
                or math.prod(t.shape) > MAX_VALUE_ELEMENTS:
            return None         # never read a large constant into a Python list
        c = ctx.const(i)
        if c is not None and c.dtype.kind in "iu":
            return [int(x) for x in c.reshape(-1)]
        return None
    if any(not isinstance(x, int) or isinstance(x, bool) for x in v):
        return None
    return list(v)


def _vector_len(ctx, i):
    """Static length of the 1-D input ``i`` or None."""
    s = ctx.shape(i)
    if s is not None and len(s) == 1 and isinstance(s[0], int):
        # longer than any rank: unknown (not one data symbol per element)
        return s[0] if s[0] <= MAX_VALUE_ELEMENTS else None
    if s is not None and len(s) == 0:
        return 1
    return None


# ---------------------------------------------------------------- exact division

def _factorize(dims):
    """(integer content, {non-constant factor: exponent}) of a product of dims.

    Each dim is split with ``as_content_primitive`` so ``64*S + 64`` counts as
    ``64 * (S + 1)``; powers count their base repeatedly.  (Plain dicts, in the
    order the factors first appear: this runs on every Reshape.)
    """
    coeff = 1
    fac: dict = {}
    for d in dims:
        if isinstance(d, int):
            coeff *= d
            continue
        one = _factor_dim(d)
        if one is None:
            return None
        coeff *= one[0]
        for f, k in one[1]:
            fac[f] = fac.get(f, 0) + k
    return coeff, fac


@lru_cache(maxsize=8192)
def _factor_dim(d):
    """(integer content, ((factor, exponent), ...)) of one symbolic dim, or None
    (memoized: dims are immutable, and the same ones recur across a model's nodes)."""
    c, p = sympy.sympify(d).as_content_primitive()
    if not c.is_Integer:
        return None
    pc, rest = p.as_coeff_Mul()
    if not pc.is_Integer:
        return None
    out: dict = {}
    for f in sympy.Mul.make_args(rest):
        if f == 1:
            continue
        if f.is_Pow and f.exp.is_Integer and int(f.exp) > 0:
            out[f.base] = out.get(f.base, 0) + int(f.exp)
        else:
            out[f] = out.get(f, 0) + 1
    return int(c) * int(pc), tuple(out.items())


def _minus(a: dict, b: dict) -> dict:
    """The factors of ``a`` with ``b``'s taken away (none below zero), in ``a``'s order."""
    return {f: k - b.get(f, 0) for f, k in a.items() if k > b.get(f, 0)}


def _build(coeff: int, fac: dict):
    return E.prod([coeff] + [E.norm(f) for f, k in fac.items() for _ in range(k)])


def exact_div_products(num_dims, den_dims):
    """prod(num_dims) / prod(den_dims) by cancelling common factors, or None.

    ``(B*S*768) / (B*S*12) == 64``: succeeds only when every factor of the
    denominator occurs in the numerator and the integer contents divide; the
    quotient is then exact whenever the denominator is non-zero.
    """
    n = _factorize(num_dims)
    d = _factorize(den_dims)
    if n is None or d is None or d[0] == 0:
        return None
    (cn, fn), (cd, fd) = n, d
    if any(k > fn.get(f, 0) for f, k in fd.items()) or cn % cd != 0:
        return None
    return _build(cn // cd, _minus(fn, fd))


def _numel_relation(ctx, a_dims, b_dims):
    """``prod(a) == prod(b)`` with common factors cancelled soundly.

    Integer contents are divided by their gcd; a common symbolic factor ``f``
    is cancelled as ``f == 0 or (rest equal)`` unless ``f > 0`` is proven.
    """
    a = _factorize(a_dims)
    b = _factorize(b_dims)
    if a is None or b is None or a[0] == 0 or b[0] == 0:
        return eq(E.prod(a_dims), E.prod(b_dims))
    (ca, fa), (cb, fb) = a, b
    common = {f: min(k, fb[f]) for f, k in fa.items() if f in fb}
    g = math.gcd(ca, cb)
    lhs, rhs = _build(ca // g, _minus(fa, common)), _build(cb // g, _minus(fb, common))
    rel = eq(lhs, rhs)
    if lhs == rhs:
        return rel          # the same factors on both sides: true whatever the common ones are
    zero = [eq(E.norm(f), 0) for f in common if not ctx.proven(gt(E.norm(f), 0))]
    return any_of(*zero, rel) if zero else rel


def _emit_numel(ctx, in_shape, out_shape, rule="reshape.numel"):
    rel = _numel_relation(ctx, in_shape, out_shape)
    if isinstance(rel, Rel) and rel.op == "==" and rel.lhs == rel.rhs:
        return      # the same factors on both sides: true, never built (nor its message)
    ctx.require(rel, rule, f"the element count is preserved: {_s(numel(in_shape))} (input "
                f"{_shape_str(in_shape)}) == {_s(numel(out_shape))} (output {_shape_str(out_shape)})")


def _shape_str(s):
    return "[" + ", ".join("?" if d is None else _s(d) for d in s) + "]"


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

def _target_dims(ctx, i, what: str, allow_neg=False):
    """Dims of a shape given as the value of 1-D input ``i``: known elements as
    they are, unknown ones as data symbols; None when even the length is unknown."""
    v = ctx.value(i)
    if v is None:
        n = _vector_len(ctx, i)
        if n is None:
            return None
        return [None] * n
    return list(v)


def _shape_input_rank(ctx, i, rule, op, what="shape"):
    """A shape input (Reshape, ConstantOfShape) is 1-D: a conflict otherwise."""
    r = ctx.rank(i)
    if r is not None and r != 1:
        ctx.invalid(rule, f"{op}'s {what} input has rank {r} (shape {_shape_str(ctx.shape(i))}); it must be a 1-D "
                    "tensor of sizes", f"give {op} a 1-D {what} tensor")


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
    _shape_input_rank(ctx, 0, "constantofshape.shape_rank", "ConstantOfShape")
    target = _target_dims(ctx, 0, "shape")
    if target is None:
        ctx.set_output(0, None, dtype)
        return
    dims = []
    for k, e in enumerate(target):
        if e is None or not _is_expr(e):
            dims.append(ctx.data_symbol("cos_dim", None, f"ConstantOfShape axis {k} is read at run time"))
            continue
        if isinstance(e, int) and e < 0:
            ctx.invalid("constantofshape.nonnegative", f"shape element {k} is {e}; every size must be >= 0",
                        "give ConstantOfShape non-negative sizes")
        if not isinstance(e, int) and _sign(ctx, e) != "nonneg":
            ctx.require(ge(e, 0), "constantofshape.nonnegative", f"shape element {k} ({_s(e)}) is >= 0")
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
    if v is not None and len(v) == 1 and _is_expr(v[0]):
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
            ctx.require(eq(s[0], 1), "range.scalar", f"Range's {what} (shape {_shape_str(s)}) holds one element")
        elif not (len(s) == 1 and s[0] == 1):
            ctx.invalid("range.scalar", f"Range's {what} has shape {_shape_str(s)}; it must be a scalar",
                        f"give Range a scalar {what}")
    dtype = ctx.dtype(0)
    start, limit, delta = (_scalar(ctx, i) for i in range(3))
    if isinstance(delta, (int, float)) and not isinstance(delta, bool) and delta == 0:
        ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                    "give Range a non-zero delta")
    length = _range_len(ctx, start, limit, delta)
    if dtype in _FLOAT_INTEGERS and not isinstance(length, int) and _is_expr(start) and _is_expr(limit) \
            and _is_expr(delta):
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
    ctx.warn(f"Range in {ir.DataType(dtype).name}: {_s(limit)} - {_s(start)} may be beyond the integers the type "
             "holds exactly, where onnxruntime rounds the difference; the length is kept as a data symbol")
    d = ctx.data_symbol("range_len", None, f"the length of a {ir.DataType(dtype).name} Range past 2**{top.bit_length() - 1}")
    ctx.require(any_of(all_of(inside, eq(d, length)), gt(diff, top), lt(diff, -top)), "range.float_exact",
                lambda: f"Range's length is {_s(length)} while {_s(diff)} is an integer "
                        f"{ir.DataType(dtype).name} holds exactly (|x| <= {top})")
    return d


def _range_len(ctx, start, limit, delta):
    if any(isinstance(x, float) for x in (start, limit, delta)) and None not in (start, limit, delta) \
            and all(isinstance(x, (int, float)) for x in (start, limit, delta)):
        if delta == 0:
            ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                        "give Range a non-zero delta")
        return max(int(math.ceil((limit - start) / delta)), 0)
    if isinstance(delta, int) and not isinstance(delta, bool) and _is_expr(start) and _is_expr(limit):
        if delta == 0:
            ctx.invalid("range.delta", "Range's delta is 0: the range would never reach its limit",
                        "give Range a non-zero delta")
        if delta > 0:
            return E.smax(E.ceildiv(E.sub(limit, start), delta), 0)
        return E.smax(E.ceildiv(E.sub(start, limit), -delta), 0)
    if _is_expr(delta) and _is_expr(start) and _is_expr(limit) and _sign(ctx, E.sub(delta, 1)) == "nonneg":
        ctx.require(gt(delta, 0), "range.delta", f"Range delta {_s(delta)} is positive")
        return E.smax(E.ceildiv(E.sub(limit, start), delta), 0)
    if _is_expr(delta) and not isinstance(delta, int):
        ctx.require(ne(delta, 0), "range.delta", f"Range's delta {_s(delta)} is non-zero")
    return ctx.data_symbol("range_len", None, "the length of Range depends on run-time values")


# ================================================================ Reshape

def _multiple_of(d, t) -> bool:
    """Is ``d`` syntactically ``t`` times an integer expression (so ``t == 0`` forces ``d == 0``)?"""
    if isinstance(t, int) or isinstance(d, int):
        return isinstance(t, int) and isinstance(d, int) and (d == 0 or (t != 0 and d % t == 0))
    ft, fd = _factorize([t]), _factorize([d])
    if ft is None or fd is None or ft[0] == 0:
        return False
    return all(fd[1].get(f, 0) >= k for f, k in ft[1].items()) and fd[0] % ft[0] == 0


def _copy_dim(ctx, t, d):
    """The output dim for a symbolic target element ``t`` at an axis whose input dim is ``d``
    (``allowzero == 0``: a runtime 0 copies ``d``)."""
    if t == d or _multiple_of(d, t) or ctx.proven(any_of(ne(t, 0), eq(d, 0))):
        return t
    return _zero_copies(t, d)


@lru_cache(maxsize=4096)
def _zero_copies(t, d):
    """``d if t == 0 else t`` (memoized: sympy builds a Piecewise slowly, and exporters
    repeat the same pair in every attention block)."""
    return E.norm(sympy.Piecewise((E.to_sympy(d), sympy.Eq(E.to_sympy(t), 0)), (E.to_sympy(t), True)))


def _reshape(ctx, target, allowzero: bool):
    in_shape = ctx.shape(0)
    dtype = ctx.dtype(0)
    if target is None:
        ctx.set_output(0, None, dtype, value=ctx.input(0).value if ctx.input(0) else None)
        return
    out, infer_at = [], None
    # with a known non-zero element count every output axis is >= 1, so none exceeds it
    # (with zero elements any size can appear next to a 0)
    cap = None
    if in_shape is not None and all(isinstance(d, int) for d in in_shape):
        n_el = math.prod(in_shape)
        cap = n_el if n_el > 0 else None
    for k, t in enumerate(target):
        have_in = in_shape is not None and k < len(in_shape)
        if t is None:
            out.append(ctx.data_symbol("reshape_dim", cap, f"Reshape target axis {k} is read at run time"))
        elif isinstance(t, bool) or not _is_expr(t):
            # (not an integer element: an unknown one)
            out.append(ctx.data_symbol("reshape_dim", cap, f"Reshape target axis {k} is read at run time"))
        elif isinstance(t, int):
            if t == -1:
                if infer_at is not None:
                    ctx.invalid("reshape.one_inferred",
                                f"Reshape target has more than one -1 (axes {infer_at} and {k})")
                infer_at = k
                out.append(None)
            elif t < -1:
                ctx.invalid("reshape.target", f"Reshape target axis {k} is {t}; a size is >= 0, or -1 (inferred)",
                            "give Reshape sizes >= -1")
            elif t == 0 and not allowzero:
                if in_shape is None:
                    out.append(ctx.data_symbol("reshape_dim", None, f"Reshape axis {k} copies an input dim "
                                               "of unknown rank"))
                elif not have_in:
                    ctx.invalid("reshape.zero_copy", f"Reshape target axis {k} is 0 (copy input axis {k}) but the "
                                f"input has rank {len(in_shape)}, so there is no axis {k} to copy",
                                "give the size itself, or set allowzero=1 for a size 0")
                else:
                    out.append(in_shape[k])
            else:
                out.append(t)
        else:
            out.append(_symbolic_target(ctx, k, t, in_shape, allowzero))
    if infer_at is not None:
        if allowzero and any(d == 0 for d in out if d is not None):
            ctx.invalid("reshape.allowzero", f"Reshape target {_shape_str(target)} has both 0 and -1 with "
                        "allowzero=1: -1 cannot be inferred next to a size 0",
                        "replace the -1 by the size, or the 0 by a non-zero size")
        out[infer_at] = _infer_dim(ctx, in_shape, [d for d in out if d is not None], infer_at, allowzero)
    elif in_shape is not None:
        _emit_numel(ctx, in_shape, out)
    t0 = ctx.input(0)
    ctx.set_output(0, out, dtype, value=t0.value if t0 is not None else None)


def _symbolic_target(ctx, k, t, in_shape, allowzero):
    sign = _sign(ctx, t)
    if sign != "nonneg":
        # t may be -1 (inferred) or 0 at run time: keep it as a runtime quantity
        d = ctx.data_symbol("reshape_dim", None, f"Reshape target axis {k} ({_s(t)}) may be -1 or 0 at run time")
        ctx.require(ge(t, -1), "reshape.target", f"Reshape target axis {k} ({_s(t)}) is >= -1")
        ctx.require(any_of(eq(d, t), eq(t, -1), eq(t, 0)), "reshape.target",
                    f"Reshape axis {k} is the target element {_s(t)} unless it is -1 or 0")
        return d
    if allowzero:
        return t
    if in_shape is None:
        if ctx.proven(gt(t, 0)):
            return t
        d = ctx.data_symbol("reshape_dim", None, f"Reshape target axis {k} ({_s(t)}) may be 0 at run time, "
                            "copying an input dim of unknown rank")
        ctx.require(any_of(eq(d, t), eq(t, 0)), "reshape.target",
                    f"Reshape axis {k} is the target element {_s(t)} unless it is 0")
        return d
    if k >= len(in_shape):
        ctx.require(ne(t, 0), "reshape.zero_copy",
                    f"Reshape target axis {k} ({_s(t)}) is not 0: there is no input axis {k} to copy")
        return t
    return _copy_dim(ctx, t, in_shape[k])


def _infer_dim(ctx, in_shape, others, axis, allowzero=False):
    if in_shape is None:
        return ctx.data_symbol("reshape_infer", None, f"Reshape axis {axis} (-1) with an input of unknown rank")
    for j, d in enumerate(others):
        if isinstance(d, int):
            if d == 0:
                ctx.invalid("reshape.infer_zero", f"Reshape infers axis {axis} (-1) from the other target sizes, "
                            "and one of them is 0 (copied from the input): the -1 cannot be inferred",
                            "give the size instead of -1")
            continue
        if not allowzero and ctx.store.interval(d)[0] < 1:
            # (allowzero=1: onnxruntime's kernel runs a runtime 0 next to -1, e.g. [0, 16, -1, 16])
            # stated whether or not it already follows (a duplicate is absorbed as such): no question
            ctx.require(gt(d, 0), "reshape.infer_nonzero",
                        f"Reshape infers axis {axis} (-1) from the other target dims, so {_s(d)} is non-zero")
    q = exact_div_products(in_shape, others)
    if q is None:
        den = E.prod(others)
        q = E.floordiv(numel(in_shape), den)
    out = list(others)
    out.insert(axis, q)
    _emit_numel(ctx, in_shape, out)
    return _zero_next_to_inferred(ctx, in_shape, others, q) if allowzero else q


def _zero_next_to_inferred(ctx, in_shape, others, q):
    """The -1 of an ``allowzero=1`` Reshape whose other target sizes may be 0 at run time.

    The spec calls a 0 next to a -1 invalid (so does onnx's reference evaluator: numpy cannot
    infer it); onnxruntime runs it on an empty input and infers the -1 from the non-zero sizes
    alone: (product of the non-zero input dims) / (product of the other non-zero target sizes).
    The dim is ``q`` wherever no other size is 0, onnxruntime's where one is (the only runtime
    that gives a size there), so it is exact for every runtime that runs the node.  (A
    constant 0 next to -1 is a conflict: ``_reshape``.)  Stating "non-zero" instead would force
    every batch and sequence dim of a dynamo export to be >= 1."""
    zero_able = [d for d in others if not isinstance(d, int) and ctx.store.interval(d)[0] < 1]
    if not zero_able:
        return q
    nonzero_in = [E.smax(d, 1) for d in in_shape]       # (dims are >= 0: d if d != 0 else 1)
    nonzero_out = [E.smax(d, 1) for d in others]
    ort = exact_div_products(nonzero_in, nonzero_out)
    if ort is None:
        ort = E.floordiv(E.prod(nonzero_in), E.prod(nonzero_out))
    if ort == q:
        return q        # (the zero sizes cancel: [B, S, -1, 64] from [B, S, 768] is 12 either way)
    # (kept small, or the dim becomes an alias: no other size is 0 in q's branch, so their
    # common factors cancel there; the condition without its constant factors)
    num, den = _cancel_common(in_shape, others)
    q = E.floordiv(num, den) if den != 1 else num
    zero = _factorize(zero_able)
    factors = list(zero[1]) if zero else zero_able
    some_zero = sympy.Or(*[sympy.Eq(E.to_sympy(f), 0, evaluate=False) for f in factors], evaluate=False) \
        if len(factors) > 1 else sympy.Eq(E.to_sympy(factors[0]), 0, evaluate=False)
    return E.raw_piecewise((ort, some_zero), (q, True))


def _cancel_common(num_dims, den_dims):
    """``(n, d)`` with ``prod(num_dims) // prod(den_dims) == n // d`` wherever the denominator is
    non-zero: the factors common to both (and the gcd of their integer contents) cancelled."""
    a, b = _factorize(num_dims), _factorize(den_dims)
    if a is None or b is None or a[0] == 0 or b[0] == 0:
        return E.prod(num_dims), E.prod(den_dims)
    (ca, fa), (cb, fb) = a, b
    common = {f: min(k, fb[f]) for f, k in fa.items() if f in fb}
    g = math.gcd(ca, cb)
    return _build(ca // g, _minus(fa, common)), _build(cb // g, _minus(fb, common))


@register("", "Reshape", since_version=1)
def reshape_v1(ctx):
    ctx.check_inputs(1, 1)
    shape = ctx.attr("shape")
    _reshape(ctx, None if shape is None else [int(x) for x in shape], False)


@register("", "Reshape", since_version=5)
def reshape(ctx):
    ctx.check_inputs(2, 2)
    allowzero = bool(ctx.attr("allowzero", 0)) if ctx.opset is None or ctx.opset >= 14 else False
    _shape_input_rank(ctx, 1, "reshape.shape_rank", "Reshape")
    _reshape(ctx, _target_dims(ctx, 1, "shape"), allowzero)


# ================================================================ Flatten, Transpose

@register("", "Flatten", since_version=1)
def flatten(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    t0 = ctx.input(0)
    old = ctx.opset is not None and ctx.opset < 11      # (no axis counted from the end before opset 11)
    if old and axis < 0:
        ctx.invalid("flatten.axis", f"Flatten axis {axis} is below 0; before opset 11 it must be in [0, rank]",
                    "give an axis within [0, rank]")
    if s is None:
        ctx.set_output(0, (1 if axis == 0 else ctx.unknown_dim("flatten_0"), ctx.unknown_dim("flatten_1")),
                       ctx.dtype(0))
        return
    r = len(s)
    if not -r <= axis <= r:
        lo = 0 if old else -r
        ctx.invalid("flatten.axis", f"Flatten axis {axis} is out of range [{lo}, {r}] for an input of rank {r}",
                    f"give an axis within [{lo}, {r}]")
    if axis < 0:
        axis += r
    ctx.set_output(0, (E.prod(s[:axis]), E.prod(s[axis:])), ctx.dtype(0), value=t0.value)


def _check_perm(ctx, perm, r):
    """``perm`` names each axis of a rank-``r`` input exactly once (a conflict otherwise)."""
    fix = f"give perm each axis of 0..{r - 1} exactly once" if r else "give a scalar an empty perm"
    if len(perm) != r:
        ctx.invalid("transpose.perm", f"perm {perm} has {len(perm)} entries for an input of rank {r}: it must name "
                    f"each of its {r} axes once", fix)
    bad = [p for p in perm if not 0 <= p < r]
    if bad:
        ctx.invalid("transpose.perm", f"perm {perm} has entries {bad} outside [0, {r - 1}] (the spec allows no "
                    "negative entries)", fix)
    rep = sorted({p for p in perm if perm.count(p) > 1})
    if rep:
        ctx.invalid("transpose.perm", f"perm {perm} repeats {rep}: it is not a permutation of 0..{r - 1}", fix)


@register("", "Transpose", since_version=1)
def transpose(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    perm = ctx.attr("perm")
    perm = None if perm is None else [int(p) for p in perm]
    if s is None:
        if perm is not None:
            _check_perm(ctx, perm, len(perm))       # (the rank, unknown here, is then len(perm))
        ctx.set_output(0, None if perm is None else [ctx.unknown_dim("transpose") for _ in perm], ctx.dtype(0))
        return
    r = len(s)
    if perm is None:
        perm = list(range(r))[::-1]
    _check_perm(ctx, perm, r)
    arr = _obj_array(ctx, 0)
    value = _flat(np.transpose(arr, perm)) if arr is not None else None
    ctx.set_output(0, [s[p] for p in perm], ctx.dtype(0), value=value)


# ================================================================ Squeeze, Unsqueeze

def _axes_input(ctx, i):
    """Axes from input ``i``: list of ints, [] when absent, None when unknown."""
    if not ctx.has_input(i):
        return []
    v = _ints_of(ctx, i, "axes")
    return v


def _squeeze(ctx, axes):
    s = ctx.shape(0)
    t0 = ctx.input(0)
    value = t0.value if t0 is not None else None
    if s is not None and axes is None and ctx.num_inputs > 1:
        rs = ctx.shape(1)
        if rs is not None and len(rs) == 1 and rs[0] == 0:
            axes = []                       # an empty axes tensor squeezes every size-1 axis
        elif rs is not None and len(rs) == 1 and isinstance(rs[0], int):
            ctx.set_output(0, _squeeze_unknown_axes(ctx, s, rs[0]), ctx.dtype(0), value=value)
            return
    if s is None or axes is None:
        ctx.set_output(0, None, ctx.dtype(0), value=value)
        return
    if axes:
        # (onnxruntime runs repeated axes; the spec does not ask for distinct ones)
        ax = list(dict.fromkeys(norm_axis(ctx, int(a), len(s), "axes") for a in axes))
        for a in ax:
            if s[a] != 1:
                ctx.equal(s[a], 1, "squeeze.one", f"Squeeze removes axis {a}, so its size {_s(s[a])} must be 1")
        ctx.set_output(0, [d for k, d in enumerate(s) if k not in ax], ctx.dtype(0), value=value)
        return
    out = []
    for d in s:
        if isinstance(d, int):
            if d != 1:
                out.append(d)
            continue
        v = ctx.decide(eq(d, 1))
        if v is Verdict.UNKNOWN:
            ctx.warn(f"Squeeze without axes: cannot decide whether {_s(d)} is 1; the output rank is unknown")
            ctx.set_output(0, None, ctx.dtype(0), value=value)
            return
        if v is Verdict.REFUTED:
            out.append(d)
    ctx.set_output(0, out, ctx.dtype(0), value=value)


@register("", "Squeeze", since_version=1)
def squeeze_v1(ctx):
    ctx.check_inputs(1, 1)
    _squeeze(ctx, [int(a) for a in ctx.attr("axes", [])])


@register("", "Squeeze", since_version=13)
def squeeze(ctx):
    ctx.check_inputs(1, 2)
    r = ctx.rank(1)
    if r is not None and r != 1:
        ctx.invalid("squeeze.axes_rank", f"Squeeze's axes input has rank {r}; it must be a 1-D tensor",
                    "give Squeeze a 1-D axes tensor")
    _squeeze(ctx, _axes_input(ctx, 1))


def _squeeze_unknown_axes(ctx, s, k):
    """Output shape of Squeeze with ``k`` axes read at run time.  Only axes whose size
    can be 1 can be removed (onnxruntime fails on any other); onnxruntime accepts
    repeated axes, so 1..k distinct axes go.  Every possible removal is enumerated:
    the rank is known when all agree on it, and an output axis is exact when all agree
    on its size; otherwise that axis is a data symbol (the rank unknown: None)."""
    from itertools import combinations
    cands = [a for a, d in enumerate(s) if not isinstance(d, int) or d == 1]
    if k >= 1 and not cands:
        ctx.invalid("squeeze.one", f"Squeeze removes {k} axes read at run time, but no axis of its input "
                    f"{_shape_str(s)} can have size 1", "squeeze only axes of size 1")
    if k < 1:
        return None                         # (handled by the caller)
    outs = []
    for m in range(1, min(k, len(cands)) + 1):
        for sub in combinations(cands, m):
            outs.append(tuple(d for a, d in enumerate(s) if a not in sub))
            if len(outs) > 256:
                return None
    if len({len(o) for o in outs}) != 1:
        return None
    if len(outs) == 1:
        for a in cands:                     # the only way the node runs: these axes are 1
            if s[a] != 1:
                ctx.equal(s[a], 1, "squeeze.one", f"Squeeze must remove axis {a}, so its size {_s(s[a])} must be 1")
    return _agreeing_dims(ctx, outs, "squeeze_dim", "Squeeze")


def _unsqueeze_unknown_axes(ctx, s, k):
    """Output shape of Unsqueeze with ``k`` distinct axes read at run time (onnxruntime
    refuses repeats): rank ``len(s) + k``; every placement of the k new size-1 axes is
    enumerated, an output axis is exact where all agree, else a data symbol bounded by
    the largest size it can take (when those are all integers)."""
    from itertools import combinations
    r = len(s) + k
    outs = []
    for sub in combinations(range(r), k):
        it = iter(s)
        outs.append(tuple(1 if j in sub else next(it) for j in range(r)))
        if len(outs) > 256:
            return None
    return _agreeing_dims(ctx, outs, "unsqueeze_dim", "Unsqueeze")


def _agreeing_dims(ctx, outs, hint, op):
    out = []
    for j in range(len(outs[0])):
        col = {o[j] for o in outs}
        if len(col) == 1:
            out.append(col.pop())
            continue
        upper = max(col) if all(isinstance(c, int) for c in col) else None
        out.append(ctx.data_symbol(hint, upper, f"{op} output axis {j} depends on axes read at run time"))
    return out


def _unsqueeze(ctx, axes):
    s = ctx.shape(0)
    t0 = ctx.input(0)
    value = t0.value if t0 is not None else None
    if s is not None and axes is None and ctx.num_inputs > 1:
        rs = ctx.shape(1)
        k = 1 if rs == () else rs[0] if rs is not None and len(rs) == 1 and isinstance(rs[0], int) else None
        if k == 0:
            ctx.set_output(0, s, ctx.dtype(0), value=value)
            return
        if k is not None and 1 <= k <= 64:
            ctx.set_output(0, _unsqueeze_unknown_axes(ctx, s, k), ctx.dtype(0), value=value)
            return
    if s is None or axes is None:
        ctx.set_output(0, None, ctx.dtype(0), value=value)
        return
    if not axes:        # (onnxruntime and onnx's reference return the input as it is)
        ctx.set_output(0, s, ctx.dtype(0), value=value)
        return
    r = len(s) + len(axes)
    ax = norm_axes(ctx, axes, r)
    it = iter(s)
    out = [1 if k in ax else next(it) for k in range(r)]
    ctx.set_output(0, out, ctx.dtype(0), value=value)


@register("", "Unsqueeze", since_version=1)
def unsqueeze_v1(ctx):
    ctx.check_inputs(1, 1)
    _unsqueeze(ctx, [int(a) for a in ctx.require_attr("axes")])


@register("", "Unsqueeze", since_version=13)
def unsqueeze(ctx):
    ctx.check_inputs(2, 2)
    r = ctx.rank(1)
    if r is not None and r > 1:     # (a scalar runs in onnxruntime and onnx's reference)
        ctx.invalid("unsqueeze.axes_rank", f"Unsqueeze's axes input has rank {r}; it must be a 1-D tensor",
                    "give Unsqueeze a 1-D axes tensor")
    _unsqueeze(ctx, _axes_input(ctx, 1))


# ================================================================ Concat

@register("", "Concat", since_version=1)
def concat(ctx):
    n = ctx.num_inputs
    if n < 1 or not all(ctx.has_input(i) for i in range(n)):
        ctx.invalid("concat.inputs", f"Concat has {sum(ctx.has_input(i) for i in range(n))} of its {n} inputs "
                    "given: every input of its variadic list must be present, and at least one",
                    "give Concat at least one input and leave none empty")
    axis = ctx.attr("axis", 1 if (ctx.opset or 4) < 4 else None)
    if axis is None:
        ctx.invalid("concat.axis_required", "Concat's required attribute 'axis' is missing")
    axis = int(axis)
    shapes = [ctx.shape(i) for i in range(n)]
    known = [(i, s) for i, s in enumerate(shapes) if s is not None]
    dtype = next((ctx.dtype(i) for i in range(n) if ctx.dtype(i) is not None), None)
    r = len(known[0][1]) if known else None
    for i, s in known:
        if len(s) != r:
            ctx.invalid("concat.rank", f"Concat input {i} has rank {len(s)} but input {known[0][0]} has rank {r}",
                        "give every Concat input the same rank")
    if r == 0:
        ctx.invalid("concat.rank", "Concat's inputs are scalars (rank 0); it joins tensors of rank >= 1 along an "
                    "axis", "unsqueeze the scalars to rank 1 first")
    if not known:
        ctx.set_output(0, None, dtype)
        return
    ax = norm_axis(ctx, axis, r)
    out = list(known[0][1])
    empty: dict = {}        # (filled when some other axis differs: most Concats never need it)
    for k in range(r):
        if k != ax and any(s[k] != out[k] for _, s in known[1:]):
            if not empty:
                empty.update((i, _empty_condition(ctx, s)) for i, s in known)
            out[k] = _concat_other_dim(ctx, known, empty, k, ax)
    if len(known) == n:
        out[ax] = E.total(s[ax] for s in shapes)
    else:
        out[ax] = ctx.data_symbol("concat_axis", None, "a Concat input has unknown rank")
    ctx.set_output(0, out, dtype, value=_concat_values(ctx, n, ax, r, shapes))


def _empty_condition(ctx, s):
    """When a tensor of shape ``s`` has no elements: True (never any), None (always some), or
    the relations ``d == 0`` over the dims that may be 0 (it is empty when one holds)."""
    if any(isinstance(d, int) and d == 0 for d in s):
        return True
    maybe = tuple(eq(d, 0) for d in s if not isinstance(d, int) and ctx.store.interval(d)[0] < 1)
    return maybe or None


def _concat_other_dim(ctx, known, empty, k, ax):
    """Output axis ``k`` (not the concat axis ``ax``) of a Concat, with its relations.

    The spec (and onnx's reference evaluator, numpy) make every input agree on it;
    onnxruntime skips an input with no elements without reading its other dims (inputs
    a[1, N, 1] and b[1, N, K] on axis 1 run at K = 0) and takes them from the first input
    that has elements (input 0 when none has).  So inputs that cannot be empty agree
    (unified); an input that may be empty agrees with them or is empty (a disjunction, never
    a forced equality); where every input may be empty, the dim is onnxruntime's "first input
    with elements", which is the spec's wherever the spec's precondition holds."""
    col = [(i, s[k]) for i, s in known]
    solid = [(i, d) for i, d in col if empty[i] is None]
    soft = [(i, d) for i, d in col if empty[i] is not None and empty[i] is not True]
    if solid:
        (i0, acc), rest = solid[0], solid[1:]
        for i, d in rest:
            a = acc
            acc = unify(ctx, a, d, "concat.dims",
                        lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                                f"{_s(a)} == {_s(d)}")
    elif soft:
        i0, acc = soft[0]
    else:
        return col[0][1]        # (every input is empty: onnxruntime takes input 0's dims)
    for i, d in soft:
        if i == i0 or d == acc:
            continue
        if isinstance(acc, int) and isinstance(d, int):
            # two different numbers: the spec's precondition fails at every input (onnx's own
            # inference refuses the model), though onnxruntime would run empty inputs
            unify(ctx, acc, d, "concat.dims",
                  lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                          f"{acc} == {d} (onnxruntime would run only inputs with no elements)")
            continue
        either = empty[i] if solid else empty[i] + tuple(z for z in empty[i0] if z not in empty[i])
        ctx.require(any_of(eq(acc, d), *either), "concat.dims",
                    lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                            f"{_s(acc)} == {_s(d)}, unless one of them has no elements (onnxruntime skips an "
                            "empty input's other dims; the spec does not)")
    if solid:
        return acc
    return _first_with_elements(ctx, soft, empty, known[0][1][k])


def _first_with_elements(ctx, soft, empty, default):
    """onnxruntime's choice for a Concat dim when every input may be empty: the first input's
    dim (``default``) unless that input is empty and a later one is not, then the first such
    later input's.  (A dim an input shares with an earlier one is non-zero in that input's
    branch, so it leaves the earlier input's emptiness condition: ``B == 0`` never shows.)"""
    pieces = []
    for j, (i, d) in enumerate(soft[1:], 1):
        full = {z.lhs for z in empty[i]}             # the dims that are non-zero in this branch
        earlier = []
        for i0, _ in soft[:j]:
            left = [z for z in empty[i0] if z.lhs not in full]
            if not left:
                break                                # (an earlier input is then not empty)
            earlier.append(sympy.Or(*[sympy.Eq(E.to_sympy(z.lhs), 0) for z in left]))
        else:
            pieces.append((d, sympy.And(*earlier, *[sympy.Ne(E.to_sympy(x), 0) for x in full])))
    return E.raw_piecewise(*pieces, (default, True)) if pieces else default


def _concat_values(ctx, n, ax, r, shapes):
    """The known elements of a Concat's output, or None.  (Shape vectors, rank 1, are
    joined as tuples: the common case, with no numpy arrays.)"""
    if r == 1:
        vals = [ctx.value(i) for i in range(n)]
        if any(v is None or s is None or s[0] != len(v) for v, s in zip(vals, shapes)):
            return None
        out = tuple([x for v in vals for x in v])
        return out if len(out) <= MAX_VALUE_ELEMENTS else None
    arrs = [_obj_array(ctx, i) for i in range(n)]
    if all(a is not None for a in arrs):
        full = [a for a in arrs if a.size]     # (an empty input adds no element, whatever its dims)
        if not full:
            return ()
        if any(a.shape[:ax] + a.shape[ax + 1:] != full[0].shape[:ax] + full[0].shape[ax + 1:] for a in full):
            return None         # (inputs that disagree: a conflict, no elements)
        return _flat(np.concatenate(full, axis=ax))
    return None


# ================================================================ Split

def _split_sizes_given(ctx, dim, sizes, axis):
    out = []
    for j, x in enumerate(sizes):
        if x is None or isinstance(x, bool) or not _is_expr(x):
            out.append(ctx.data_symbol("split_len", dim, f"Split output {j} length is read at run time"))
        elif isinstance(x, int) and x < 0:
            ctx.invalid("split.sizes", f"split size {j} is {x}; every size must be >= 0",
                        "give Split non-negative sizes")
        else:
            if not isinstance(x, int) and _sign(ctx, x) != "nonneg":
                ctx.require(ge(x, 0), "split.sizes", f"split size {j} ({_s(x)}) is >= 0")
            out.append(x)
    total = E.total(out)
    ctx.equal(total, dim, "split.sum",
              f"Split sizes along axis {axis} sum to the input dim: {_s(total)} == {_s(dim)}")
    return out


def _split_even(ctx, dim, n, axis, uneven: bool):
    if uneven:
        chunk = E.ceildiv(dim, n)
        last = E.sub(dim, E.mul(chunk, n - 1))
        if n > 1:
            # onnxruntime accepts an empty last chunk (4 -> 2, 2, 0... and 0 -> 0, 0), refuses a negative one
            ctx.require(ge(last, 0), "split.chunks",
                        f"Split into {n} outputs of ceil({_s(dim)} / {n}) along axis {axis} leaves a last chunk "
                        f"({_s(last)}) that is not negative")
        return [chunk] * (n - 1) + [last]
    if n > 1:
        ctx.equal(E.mod(dim, n), 0, "split.even",
                  f"Split into {n} equal outputs along axis {axis}: {_s(dim)} is divisible by {n}")
    return [E.floordiv(dim, n)] * n


def _split(ctx, sizes, uneven=False):
    s = ctx.shape(0)
    n = ctx.num_outputs
    dtype = ctx.dtype(0)
    axis = int(ctx.attr("axis", 0))
    if s is None:
        for j in range(n):
            ctx.set_output(j, None, dtype)
        return
    ax = norm_axis(ctx, axis, len(s))
    dim = s[ax]
    if sizes is not None and sizes != "unknown":
        if len(sizes) != n:
            ctx.invalid("split.count", f"Split has {len(sizes)} sizes but {n} outputs",
                        "give one split size per output")
        lens = _split_sizes_given(ctx, dim, sizes, ax)
    elif sizes == "unknown":
        lens = [ctx.data_symbol("split_len", dim, f"Split output {j} length is read at run time")
                for j in range(n)]
        ctx.equal(E.total(lens), dim, "split.sum", f"Split sizes along axis {ax} sum to {_s(dim)}")
    else:
        lens = _split_even(ctx, dim, n, ax, uneven)
    arr = _obj_array(ctx, 0)
    parts = None
    if arr is not None and all(isinstance(x, int) for x in lens):
        parts = np.split(arr, np.cumsum(lens)[:-1].tolist(), axis=ax) if sum(lens) == arr.shape[ax] else None
    for j in range(n):
        out = list(s)
        out[ax] = lens[j]
        ctx.set_output(j, out, dtype, value=None if parts is None else _flat(parts[j]))


def _sizes_from_input(ctx, i):
    if not ctx.has_input(i):
        return None
    r = ctx.rank(i)
    if r is not None and r != 1:
        ctx.invalid("split.split_rank", f"Split's split input has rank {r}; it must be a 1-D tensor of sizes",
                    "give Split a 1-D split tensor")
    v = ctx.value(i)
    if v is not None:
        return list(v)
    n = _vector_len(ctx, i)
    return "unknown" if n is None else [None] * n


@register("", "Split", since_version=1)
def split_v1(ctx):
    ctx.check_inputs(1, 2)
    if ctx.has_input(1):
        _split(ctx, _sizes_from_input(ctx, 1))
    else:
        sp = ctx.attr("split")
        _split(ctx, None if sp is None else [int(x) for x in sp])


@register("", "Split", since_version=2)
def split_v2(ctx):
    ctx.check_inputs(1, 1)
    sp = ctx.attr("split")
    _split(ctx, None if sp is None else [int(x) for x in sp])


@register("", "Split", since_version=13)
def split_v13(ctx):
    ctx.check_inputs(1, 2)
    _split(ctx, _sizes_from_input(ctx, 1))


@register("", "Split", since_version=18)
def split_v18(ctx):
    ctx.check_inputs(1, 2)
    k = ctx.attr("num_outputs")
    if k is not None and ctx.has_input(1):
        ctx.invalid("split.num_outputs", "Split has both the 'split' input and the 'num_outputs' attribute; "
                    "it takes one of them", "drop either the 'split' input or 'num_outputs'")
    if k is None and not ctx.has_input(1):
        ctx.invalid("split.num_outputs", "Split (opset 18) has neither the 'split' input nor the 'num_outputs' "
                    "attribute; it takes one of them", "give Split 'num_outputs' or a 'split' input")
    if k is not None and int(k) < 1:
        ctx.invalid("split.num_outputs", f"num_outputs is {k}; it must be >= 1", "give num_outputs >= 1")
    if k is not None and int(k) != ctx.num_outputs:
        ctx.invalid("split.num_outputs", f"num_outputs is {k} but the node has {ctx.num_outputs} outputs",
                    "make num_outputs the node's output count")
    _split(ctx, _sizes_from_input(ctx, 1), uneven=k is not None)


# ================================================================ Slice

def _slice_index(ctx, x, dim, lo, hi):
    """ONNX's adjusted, clamped start/end, or None when its sign is undecidable."""
    if isinstance(x, int):
        if x >= BIG:       # "to the end": clamp(+inf, lo, hi)
            return hi
        if x <= -BIG:      # clamp(-inf, lo, hi) (hi < lo when a backward slice meets dim 0)
            return _min(ctx, lo, hi)
        return _clamp(ctx, E.add(x, dim) if x < 0 else x, lo, hi)
    sign = _sign(ctx, x)
    if sign == "nonneg":
        return _clamp(ctx, x, lo, hi)
    if sign == "neg":
        return _clamp(ctx, E.add(x, dim), lo, hi)
    if not all(sym.is_nonnegative is True for sym in E.free_symbols(x)):
        return None
    # sign decided only at run time (``S - 1`` is -1 at S = 0): both branches, exactly
    return E.norm(sympy.Piecewise((E.to_sympy(E.clamp(x, lo, hi)), sympy.Ge(E.to_sympy(x), 0)),
                                  (E.to_sympy(E.clamp(E.add(x, dim), lo, hi)), True)))


# Where onnxruntime reads a Slice otherwise than the spec.  The spec clamps every adjusted
# index: the start into [0, dim] ([0, dim - 1] backward), the end into [0, dim] ([-1, dim - 1]
# backward).  onnxruntime takes an end of exactly INT32_MAX or INT64_MAX as "to the end in the
# step's direction": the dim going forward (the spec: min(INT32_MAX, dim), which differs only
# past 2**31 - 1), past index 0 going backward (the spec: dim - 1, an empty slice; onnx's
# reference evaluator, numpy, agrees with the spec).  A length is EXACT only where they agree
# (``_slice_readings``); elsewhere it is a data symbol that is one of their lengths
# (``_split_len``), and the node warns.  (onnx's reference evaluator also empties a backward
# slice whose adjusted start is below 0, against the spec's text, which onnxruntime follows:
# a defect of the evaluator, not a split; docs/ARCHITECTURE.md.)
ORT_TO_END = frozenset({2 ** 31 - 1, 2 ** 63 - 1})


def _spec_len(ctx, dim, start, end, step):
    """The spec's length along one sliced axis, or None when an index's sign is undecidable."""
    if step > 0:
        a = _slice_index(ctx, start, dim, 0, dim)
        b = _slice_index(ctx, end, dim, 0, dim)
        if a is None or b is None:
            return None
        return _max(ctx, E.ceildiv(E.sub(b, a), step), 0)
    hi = E.sub(dim, 1)
    a = _slice_index(ctx, start, dim, 0, hi)
    b = _slice_index(ctx, end, dim, -1, hi)
    if a is None or b is None:
        return None
    return _max(ctx, E.ceildiv(E.sub(a, b), -step), 0)


def _slice_readings(ctx, dim, start, end, step):
    """The lengths the runtimes give along one sliced axis: ``[spec]``, or ``[spec, ort]``
    where onnxruntime's can differ (it is then the longer); None when the spec's own length
    is undecidable (an index whose sign is known only at run time)."""
    spec = _spec_len(ctx, dim, start, end, step)
    if spec is None:
        return None
    if isinstance(end, int) and end in ORT_TO_END:
        ort = _spec_len(ctx, dim, start, BIG if step > 0 else -BIG, step)
        if ort != spec and not ctx.proven(eq(ort, spec)):
            return [spec, ort]
    return [spec]


def _slice_len(ctx, dim, start, end, step):
    """The exact output length along one axis (the spec and onnxruntime agree), or None."""
    r = _slice_readings(ctx, dim, start, end, step)
    return r[0] if r is not None and len(r) == 1 else None


def _split_len(ctx, axis, end, step, readings):
    """A data symbol that is the spec's or onnxruntime's length (``readings``), at most
    onnxruntime's (the longer); the node warns."""
    spec, ort = readings
    d = ctx.data_symbol("slice_len", ort, f"Slice axis {axis}: the spec and onnxruntime give different lengths")
    why = (f"onnxruntime reads the end {end} as 'to the end' ({'past index 0' if step < 0 else 'the dim'}), the "
           f"spec and onnx's reference evaluator clamp it ({'to dim - 1' if step < 0 else 'to min(end, dim)'})")
    ctx.require(any_of(eq(d, spec), eq(d, ort)), "slice.runtimes",
                lambda: f"Slice axis {axis} is {_s(spec)} by the spec or {_s(ort)} in onnxruntime: {why}")
    ctx.warn(f"Slice axis {axis}: {why}; the length is kept as a data symbol that is one of the two")
    return d


def _slice(ctx, starts, ends, axes, steps, axes_known=True):
    """``starts`` / ``ends`` / ``steps``: lists (elements None when unknown) or None (not even
    the length known); ``axes``: a list of ints, or None (absent, or ``axes_known=False``:
    read at run time)."""
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    n = next((len(v) for v in (starts, ends, axes, steps) if v is not None), None)
    for v, what in ((starts, "starts"), (ends, "ends"), (axes, "axes"), (steps, "steps")):
        if v is not None and len(v) != n:
            ctx.invalid("slice.lengths", f"Slice's {what} has {len(v)} entries but another of starts / ends / "
                        f"axes / steps has {n}; they must all have the same length",
                        "give starts, ends, axes and steps one entry per sliced axis")
    for j, sp in enumerate(steps or ()):
        if isinstance(sp, int) and sp == 0:
            ctx.invalid("slice.step", f"Slice step {j} is 0 (steps {steps}); a step must be non-zero",
                        "give Slice non-zero steps")
        if sp is not None and not isinstance(sp, int) and _is_expr(sp):
            ctx.require(ne(sp, 0), "slice.step", f"Slice step {j} ({_s(sp)}) is non-zero")
    if s is None:
        if axes is not None and all(a >= 0 for a in axes):
            norm_axes(ctx, axes, None)      # (repeated axes, whatever the rank)
        ctx.set_output(0, None, dtype)
        return
    r = len(s)
    if n is None:
        # the number of sliced axes is unknown: every axis may be sliced
        out = [ctx.data_symbol("slice_len", d, f"Slice axis {k} bounds are read at run time") for k, d in enumerate(s)]
        ctx.set_output(0, out, dtype)
        return
    starts = starts if starts is not None else [None] * n
    ends = ends if ends is not None else [None] * n
    steps = steps if steps is not None else ([None] * n if ctx.has_input(4) else [1] * n)
    if not axes_known:
        if n > r:
            ctx.invalid("slice.axes", f"Slice has {n} starts / ends for an input of rank {r}: its axes cannot name "
                        f"{n} distinct axes", "slice at most one entry per input axis")
        ctx.set_output(0, _slice_unknown_axes(ctx, s, starts, ends, steps), dtype)
        return
    if axes is None:
        axes = list(range(n))
    axes = norm_axes(ctx, axes, r)
    out = list(s)
    t0 = ctx.input(0)
    # element indices only when the elements are known (a small value): never for a long axis
    idx = [slice(None)] * r if t0 is not None and t0.value is not None else None
    for a, st, en, sp in zip(axes, starts, ends, steps):
        if sp is None or not isinstance(sp, int):
            out[a] = ctx.data_symbol("slice_len", _unknown_step_bound(ctx, s[a], st, en),
                                     f"Slice axis {a} step is read at run time")
            idx = None
            continue
        readings = None if st is None or en is None else _slice_readings(ctx, s[a], st, en, sp)
        if readings is None:
            out[a] = _runtime_slice(ctx, a, s[a], st, en, sp)
        elif len(readings) > 1:
            out[a] = _split_len(ctx, a, en, sp, readings)
            idx = None          # (no elements where the length itself is not one number)
            continue
        else:
            out[a] = readings[0]
        if idx is not None and isinstance(s[a], int) and isinstance(st, int) and isinstance(en, int):
            b0 = _slice_index(ctx, st, s[a], 0 if sp > 0 else 0, s[a] if sp > 0 else s[a] - 1)
            b1 = _slice_index(ctx, en, s[a], 0 if sp > 0 else -1, s[a] if sp > 0 else s[a] - 1)
            idx[a] = range(b0, b1, sp)
        else:
            idx = None
    arr = _obj_array(ctx, 0)
    value = None
    if arr is not None and idx is not None:
        sel = arr
        for k, ix in enumerate(idx):
            if isinstance(ix, range):
                sel = np.take(sel, list(ix), axis=k)
        value = _flat(sel)
    ctx.set_output(0, out, dtype, value=value)


def _unknown_step_bound(ctx, dim, st, en):
    """An upper bound of a Slice length whose step is read at run time: the longest of the
    step +1 and step -1 slices as any runtime reads them (a larger step takes fewer
    elements), else the dim."""
    if isinstance(dim, int) and isinstance(st, int) and isinstance(en, int):
        lens = [n for sp in (1, -1) for n in _slice_readings(ctx, dim, st, en, sp)]
        if all(isinstance(n, int) for n in lens):
            return max(lens)
    return dim


def _static_slice_len(ctx, dim, st, en, sp):
    """The length of one sliced axis when it is an exact expression, else None (no symbols made)."""
    if st is None or en is None or sp is None or not isinstance(sp, int):
        return None
    return _slice_len(ctx, dim, st, en, sp)


def _slice_unknown_axes(ctx, s, starts, ends, steps):
    """Output dims of a Slice whose ``axes`` are read at run time (their count known): every
    placement of the sliced entries on distinct axes is enumerated; an axis is exact where
    every placement gives it the same size, else a data symbol bounded by the sizes it can
    take (by its input dim when one of them is not an exact integer)."""
    from itertools import permutations
    r, n = len(s), len(starts)
    cands: list = [set() for _ in range(r)]
    loose = [False] * r
    count = 0
    for placement in permutations(range(r), n):
        count += 1
        if count > 256:
            return [ctx.data_symbol("slice_len", d, "Slice axes are read at run time") for d in s]
        hit = set(placement)
        for a in range(r):
            if a not in hit:
                cands[a].add(s[a])
        for j, a in enumerate(placement):
            m = _static_slice_len(ctx, s[a], starts[j], ends[j], steps[j])
            if m is None:
                loose[a] = True
                if steps[j] is None or not isinstance(steps[j], int):
                    cands[a].add(_unknown_step_bound(ctx, s[a], starts[j], ends[j]))
                else:
                    cands[a].add(s[a])
            else:
                cands[a].add(m)
    out = []
    for a in range(r):
        col = cands[a]
        if len(col) == 1 and not loose[a]:
            out.append(col.pop())
            continue
        upper = max(col) if all(isinstance(c, int) for c in col) else s[a]
        out.append(ctx.data_symbol("slice_len", upper, f"Slice output axis {a} depends on axes read at run time"))
    return out


def _runtime_slice(ctx, a, dim, st, en, sp):
    """A data symbol for a length that is not one expression: an index read at run time (at
    most the dim), or one whose sign is decided at run time (``S - 1`` is -1 at S = 0): then
    the length under each sign, by the spec and by onnxruntime, as a disjunction the store
    can upgrade."""
    d = ctx.data_symbol("slice_len", dim, f"Slice axis {a} length depends on run-time start/end")
    if st is None or en is None:
        return d
    ends = [en]
    if isinstance(en, int) and en in ORT_TO_END:
        ends.append(BIG if sp > 0 else -BIG)        # onnxruntime's "to the end"
    cases = []
    for e in ends:
        for cs in _sign_cases(st):
            for ce in _sign_cases(e):
                n = _slice_len_assuming(ctx, dim, cs[1], ce[1], sp)
                conds = [c for c in (cs[0], ce[0]) if c is not None]
                cases.append(all_of(*conds, eq(d, n)) if conds else eq(d, n))
    ctx.require(any_of(*cases), "slice.runtime",
                lambda: f"Slice axis {a} length follows the clamping of start {_s(st)} and end {_s(en)} on a dim "
                        f"of {_s(dim)} (by the spec or onnxruntime)")
    return d


def _sign_cases(x):
    """[(condition, x as a non-negative index or x as a negative index marker)]."""
    if isinstance(x, int):
        return [(None, x)]
    return [(ge(x, 0), ("pos", x)), (lt(x, 0), ("neg", x))]


def _slice_len_assuming(ctx, dim, st, en, sp):
    def idx(x, lo, hi):
        if isinstance(x, tuple):
            kind, v = x
            v = v if kind == "pos" else E.add(v, dim)
            return E.clamp(v, lo, hi)
        return _slice_index(ctx, x, dim, lo, hi)
    if sp > 0:
        return E.smax(E.ceildiv(E.sub(idx(en, 0, dim), idx(st, 0, dim)), sp), 0)
    hi = E.sub(dim, 1)
    return E.smax(E.ceildiv(E.sub(idx(st, 0, hi), idx(en, -1, hi)), -sp), 0)


def _vec(ctx, i):
    """Elements of an index vector input: list (elements may be None), or None."""
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is not None:
        return [x if _is_expr(x) else None for x in v]
    n = _vector_len(ctx, i)
    return None if n is None else [None] * n


@register("", "Slice", since_version=1)
def slice_v1(ctx):
    ctx.check_inputs(1, 1)
    starts = ctx.require_attr("starts")
    ends = ctx.require_attr("ends")
    axes = ctx.attr("axes")
    _slice(ctx, [int(x) for x in starts], [int(x) for x in ends],
           None if axes is None else [int(x) for x in axes], None)


_SLICE_INPUTS = ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps"))


@register("", "Slice", since_version=10)
def slice_v10(ctx):
    ctx.check_inputs(3, 5)
    lens = []
    for i, what in _SLICE_INPUTS:
        if not ctx.has_input(i):
            continue
        r = ctx.rank(i)
        if r is not None and r != 1:
            ctx.invalid("slice.input_rank", f"Slice's {what} input has rank {r}; it must be a 1-D tensor",
                        f"give Slice a 1-D {what} tensor")
        if r == 1:
            lens.append((what, ctx.shape(i)[0]))
    for what, d in lens[1:]:
        w0, d0 = lens[0]
        if isinstance(d, int) and isinstance(d0, int):
            if d != d0:
                ctx.invalid("slice.lengths", f"Slice's {w0} has {d0} entries and its {what} {d}; they must have "
                            "the same length", "give starts, ends, axes and steps one entry per sliced axis")
        else:
            ctx.equal(d, d0, "slice.lengths", f"Slice's {w0} ({_s(d0)} entries) and {what} ({_s(d)} entries) "
                      "have the same length")
    axes, axes_known = None, True
    if ctx.has_input(3):
        axes = _ints_of(ctx, 3, "axes")
        axes_known = axes is not None
    starts, ends = _vec(ctx, 1), _vec(ctx, 2)
    steps = _vec(ctx, 4) if ctx.has_input(4) else None
    _slice(ctx, starts, ends, axes, steps, axes_known)


# ================================================================ Gather

@register("", "Gather", since_version=1)
def gather(ctx):
    ctx.check_inputs(2, 2)
    ds, isx = ctx.shape(0), ctx.shape(1)
    dtype = ctx.dtype(0)
    if ds is not None and len(ds) == 0:
        ctx.invalid("gather.data_rank", "Gather's data is a scalar (rank 0); it must have rank >= 1 to index an axis",
                    "gather from a tensor of rank >= 1")
    if ds is None or isx is None:
        if ds is not None:
            norm_axis(ctx, int(ctx.attr("axis", 0)), len(ds))
        ctx.set_output(0, None, dtype)
        return
    r = len(ds)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), r)
    out = list(ds[:ax]) + list(isx) + list(ds[ax + 1:])
    value = None
    from .indexing import index_bound
    bad = index_bound(ctx, 1, ds[ax], ax, "gather.index_bound", "Gather index")
    ind = _ints_of(ctx, 1, "indices")
    if ind is not None and isinstance(ds[ax], int) and not bad \
            and all(isinstance(d, int) for d in out) and math.prod(out) <= MAX_VALUE_ELEMENTS:
        n = ds[ax]
        v = ctx.value(0)
        if r == 1 and v is not None and len(v) == n:
            # a shape vector's elements picked (the exporters' Shape -> Gather): no numpy
            value = tuple([v[i + n if i < 0 else i] for i in ind])
        else:
            arr = _obj_array(ctx, 0)
            if arr is not None:
                picked = np.take(arr, np.array([i + n if i < 0 else i for i in ind],
                                                dtype=np.int64).reshape(isx), axis=ax)
                value = _flat(picked)
    ctx.set_output(0, out, dtype, value=value)


# ================================================================ Expand, Tile

@register("", "Expand", since_version=8)
def expand(ctx):
    ctx.check_inputs(2, 2)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    r1 = ctx.rank(1)
    if r1 is not None and r1 > 1:       # (a scalar runs in onnxruntime and onnx's reference)
        ctx.invalid("expand.shape_rank", f"Expand's shape input has rank {r1}; it must be a 1-D tensor of sizes",
                    "give Expand a 1-D shape tensor")
    target = _target_dims(ctx, 1, "shape")
    if target is None or s is None:
        ctx.set_output(0, None, dtype)
        return
    tdims = []
    for k, t in enumerate(target):
        if t is None or isinstance(t, bool) or not _is_expr(t):
            tdims.append(ctx.data_symbol("expand_dim", None, f"Expand target axis {k} is read at run time"))
        elif isinstance(t, int) and t < 0:
            ctx.invalid("expand.shape", f"Expand target axis {k} is {t}; every size must be >= 0",
                        "give Expand non-negative sizes")
        else:
            if not isinstance(t, int) and _sign(ctx, t) != "nonneg":
                ctx.require(ge(t, 0), "expand.shape", f"Expand target axis {k} ({_s(t)}) is >= 0")
            tdims.append(t)
    out = broadcast_shapes(ctx, [s, tuple(tdims)], "expand.broadcast")
    value = None
    arr = _obj_array(ctx, 0)
    if arr is not None and out is not None and all(isinstance(d, int) for d in out) \
            and math.prod(out) <= MAX_VALUE_ELEMENTS:
        try:
            value = _flat(np.broadcast_to(arr, out))
        except ValueError:
            value = None
    ctx.set_output(0, out, dtype, value=value)


@register("", "Tile", since_version=6)
def tile(ctx):
    ctx.check_inputs(2, 2)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    rr = ctx.rank(1)
    if rr is not None and rr != 1:
        ctx.invalid("tile.repeats_rank", f"Tile's repeats input has rank {rr}; it must be a 1-D tensor",
                    "give Tile a 1-D repeats tensor, one entry per input axis")
    reps = _vec(ctx, 1)
    rs = ctx.shape(1)
    if s is not None and rs is not None and len(rs) == 1:
        if isinstance(rs[0], int):
            if rs[0] != len(s):
                ctx.invalid("tile.repeats", f"Tile's repeats has {rs[0]} entries for an input of rank {len(s)}",
                            "give Tile one repeat per input axis")
        else:
            ctx.equal(rs[0], len(s), "tile.repeats", f"Tile's repeats ({_s(rs[0])} entries) has one entry per "
                      f"input axis ({len(s)})")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    if reps is None or len(reps) != len(s):
        ctx.set_output(0, [ctx.unknown_dim("tile_dim") for _ in s], dtype)
        return
    out = []
    for k, (d, rp) in enumerate(zip(s, reps)):
        if rp is None:
            out.append(ctx.unknown_dim("tile_dim"))
        elif isinstance(rp, int) and rp < 0:
            ctx.invalid("tile.repeats", f"Tile's repeats on axis {k} is {rp} (repeats {reps}); every repeat "
                        "must be >= 0", "give Tile non-negative repeats")
        else:
            if not isinstance(rp, int) and _sign(ctx, rp) != "nonneg":
                ctx.require(ge(rp, 0), "tile.nonnegative", f"Tile repeats on axis {k} ({_s(rp)}) is >= 0")
            out.append(E.mul(d, rp))
    value = None
    arr = _obj_array(ctx, 0)
    if arr is not None and all(isinstance(x, int) for x in reps) and math.prod(
            x for x in out if isinstance(x, int)) <= MAX_VALUE_ELEMENTS and all(isinstance(x, int) for x in out):
        value = _flat(np.tile(arr, reps))
    ctx.set_output(0, out, dtype, value=value)


def _scalar_const(ctx, i, what):
    """A Tile-1 scalar input (typed T: float in the schema) as an int, or None when not constant."""
    sh = ctx.shape(i)
    if sh is not None and not (len(sh) == 0 or (len(sh) == 1 and sh[0] == 1)):
        ctx.invalid(f"tile.{what}", f"Tile's {what} input has shape {_shape_str(sh)}; it must be a scalar",
                    f"give Tile a scalar {what}")
    c = ctx.const(i)
    if c is None:
        return None
    v = c.reshape(-1)[0].item()
    if isinstance(v, bool) or not math.isfinite(float(v)) or not float(v).is_integer():
        ctx.invalid(f"tile.{what}", f"Tile's {what} is {v}; it must be a whole number",
                    f"give Tile an integral {what}")
    return int(v)


@register("", "Tile", since_version=1)
def tile_v1(ctx):
    """Tile-1 (Caffe2's Tile): ``tiles`` copies of the input along ``axis`` (both scalar inputs).

    The schema's output text says "same shape as input", its summary "repeat along an axis";
    no runtime implements it (onnxruntime starts at Tile-6) and onnx infers no shape.  The
    repetition is followed: axis ``axis`` becomes ``d * tiles``, the other axes stay."""
    ctx.check_inputs(3, 3)
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    tiles = _scalar_const(ctx, 1, "tiles")
    axis = _scalar_const(ctx, 2, "axis")
    if tiles is not None and tiles < 0:
        ctx.invalid("tile.tiles", f"Tile's tiles is {tiles}; the number of copies must be >= 0",
                    "give Tile a non-negative tiles")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    if axis is None:
        ctx.set_output(0, [ctx.unknown_dim("tile_dim") for _ in s], dtype)
        return
    ax = norm_axis(ctx, axis, len(s))
    if tiles is not None and tiles != 1:
        ctx.warn("Tile-1: following the repetition along axis (Caffe2 semantics), not the output "
                 "description 'same shape as input'")
    out = list(s)
    out[ax] = E.mul(s[ax], tiles) if tiles is not None else ctx.unknown_dim("tile_dim")
    ctx.set_output(0, out, dtype)


# ================================================================ Pad

_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad(ctx, pads, axes):
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    mode = ctx.attr("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    modes = _PAD_MODES if (ctx.opset or 19) >= 19 else _PAD_MODES[:3]
    if mode not in modes:
        ctx.invalid("pad.mode", f"Pad mode {mode!r} is not one of {', '.join(modes)} (opset {ctx.opset})",
                    f"give Pad a mode among {', '.join(modes)}")
    if s is None:
        ctx.set_output(0, None, dtype)
        return
    r = len(s)
    if axes is not None and axes != "unknown":
        axes = norm_axes(ctx, axes, r)
    n = r if axes is None else None if axes == "unknown" else len(axes)
    if pads is not None and n is not None and len(pads) != 2 * n:
        ctx.invalid("pad.pads", f"Pad has {len(pads)} pads for {n} axes; it needs 2 * {n} = {2 * n} (all the "
                    "starts, then all the ends)", f"give Pad {2 * n} pads")
    if pads is None or axes == "unknown":
        ctx.set_output(0, [ctx.unknown_dim("pad_dim") for _ in s], dtype)
        return
    axes = list(range(r)) if axes is None else axes
    out = list(s)
    for j, a in enumerate(axes):
        pb, pe = pads[j], pads[j + n]
        if pb is None or pe is None:
            out[a] = ctx.unknown_dim("pad_dim")
            continue
        total = E.add(pb, pe)
        if isinstance(total, int) and not -2 ** 63 <= total < 2 ** 63:
            ctx.invalid("pad.int64_range", f"Pad axis {a}: the pads {pb} and {pe} add up to {total}, beyond the "
                        "int64 range of ONNX sizes", "give Pad pads whose sums fit in int64")
        d = E.add(s[a], total)
        if isinstance(d, int):
            if d < 0:
                ctx.invalid("pad.output_size", f"Pad axis {a}: {_s(s[a])} + {pb} + {pe} = {d}, a size below 0",
                            "remove less than the axis holds")
        else:
            if any(_sign(ctx, p) != "nonneg" for p in (pb, pe)):
                ctx.require(ge(d, 0), "pad.nonnegative",
                            f"Pad axis {a}: {_s(s[a])} + {_s(pb)} + {_s(pe)} is non-negative")
            if isinstance(total, int) and total > BIG:
                ctx.require(le(d, 2 ** 63 - 1), "pad.int64_range",
                            f"Pad axis {a}: {_s(s[a])} + {total} is within the int64 range of ONNX sizes")
        out[a] = d
    ctx.set_output(0, out, dtype)


@register("", "Pad", since_version=1)
def pad_v1(ctx):
    ctx.check_inputs(1, 1)
    pads = ctx.attr("paddings") if ctx.opset is not None and ctx.opset < 2 else ctx.attr("pads")
    if pads is None:
        pads = ctx.require_attr("pads")
    _pad(ctx, [int(p) for p in pads], None)


@register("", "Pad", since_version=2)
def pad_v2(ctx):
    ctx.check_inputs(1, 1)
    _pad(ctx, [int(p) for p in ctx.require_attr("pads")], None)


@register("", "Pad", since_version=11)
def pad_v11(ctx):
    ctx.check_inputs(2, 4)
    ps = ctx.shape(1)
    # (onnxruntime also runs pads of shape [1, 2 * n])
    if ps is not None and not (len(ps) == 1 or (len(ps) == 2 and ps[0] == 1)):
        ctx.invalid("pad.pads_rank", f"Pad's pads input has shape {_shape_str(ps)}; it must be a 1-D tensor "
                    "of 2 * (number of axes) entries", "give Pad a 1-D pads tensor")
    if ctx.has_input(2):
        cs = ctx.shape(2)
        if cs is not None and all(isinstance(d, int) for d in cs) and math.prod(cs) != 1:
            ctx.invalid("pad.constant_value", f"Pad's constant_value has shape {_shape_str(cs)}; it must be a "
                        "scalar (one element)", "give Pad a scalar constant_value")
    axes = None
    if ctx.has_input(3):
        ar = ctx.rank(3)
        if ar is not None and ar != 1:
            ctx.invalid("pad.axes_rank", f"Pad's axes input has rank {ar}; it must be a 1-D tensor",
                        "give Pad a 1-D axes tensor")
        axes = _ints_of(ctx, 3, "axes")
        if axes is None:
            axes = "unknown"
    pads = _ints_of(ctx, 1, "pads") if ps is not None and len(ps) == 2 else _vec(ctx, 1)
    if pads is None and ps is not None and len(ps) == 2 and isinstance(ps[1], int):
        pads = [None] * ps[1]
    _pad(ctx, pads, axes)
