"""Elementwise ops: broadcasting binary/variadic ops, unary ops, Where, Clip, Cast.

Besides shapes, these rules propagate *values* of small tensors (see ``context``):
that is how ``Shape -> Gather -> Div -> Concat -> Reshape`` chains of PyTorch exports
resolve.  What each element of a result is, in its element type (integers wrap,
floats round, conversions truncate), is ``smtshape.numeric``: these rules only
broadcast the elements and pick the operation.  A value element is set only when it
is exactly right; otherwise it is None (unknown).
"""
from __future__ import annotations

import math

from .. import expr as E
from .. import irtypes as ir
from .. import numeric as N
from ..constraints import any_of, eq, ge, gt, le, lt, ne
from ..lazy import imported, sympy
from ..lazy import numpy as np
from ..printing import show
from ..registry import register
from ..store import Verdict
from .common import broadcast_shapes, unidirectional

BOOL = ir.DataType.BOOL
FLOAT_TYPES = set(N.FLOAT_FORMATS)
_MAX_CONST = 4096
_MAX_FLOAT_CONST = 64


# ============================================================ value helpers
def is_bool(v) -> bool:
    """A boolean element: a Python bool or a sympy boolean (a sympy Symbol is both a
    Boolean and an Expr: it is an int element here, never a condition)."""
    if isinstance(v, bool):
        return True
    if isinstance(v, int):
        return False
    return (imported(np) and isinstance(v, np.bool_)) or \
        (imported(sympy) and isinstance(v, sympy.logic.boolalg.Boolean) and not isinstance(v, sympy.Expr))


def _bool_constant(v) -> bool:
    """A Python or numpy bool (asked without importing numpy: a numpy bool exists only
    once numpy is imported)."""
    return isinstance(v, bool) or (imported(np) and isinstance(v, np.bool_))


def is_int(v) -> bool:
    """An integer element: a Python int or a sympy integer expression (not a boolean)."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (imported(sympy) and isinstance(v, sympy.Expr) and not isinstance(v, sympy.Float))


def fit(v):
    """An element as a value holds it: bools as Python bools, expressions within the
    size cap (None beyond it); numbers and ``numeric.Real`` as they are."""
    if v is None or isinstance(v, N.Real):
        return v
    if isinstance(v, int):          # (a bool is one too: kept as it is)
        return v
    if _bool_constant(v) or (imported(sympy) and isinstance(v, sympy.logic.boolalg.BooleanAtom)):
        return bool(v)
    if is_bool(v) or is_int(v):
        v = E.norm(v) if is_int(v) else v
        return v if isinstance(v, int) or E.size(v) <= E.MAX_OPS else None
    return None


def values(ctx, i):
    """Known elements of input ``i``: ``ctx.value`` or, for a small float constant, its
    elements (``numeric.const_element``)."""
    v = ctx.value(i)
    if v is not None:
        return v
    t = ctx.input(i)
    if t is None or t.shape is None or not static(t.shape) or math.prod(t.shape) > _MAX_FLOAT_CONST:
        return None     # float weights are not shape arithmetic: never read them
    if t.dtype not in FLOAT_TYPES:
        return None
    c = ctx.const(i)
    if c is None or c.dtype.kind != "f":
        return None
    return tuple(N.const_element(x, t.dtype) for x in c.reshape(-1).tolist())


def static(shape):
    return shape is not None and all(isinstance(d, int) for d in shape)


def bcast_values(ctx, idx, fn, out_shape):
    """Apply ``fn(ctx, *elements)`` elementwise to the (broadcast) values of inputs ``idx``."""
    if out_shape is None or not static(out_shape):
        return None
    shapes = [ctx.shape(i) for i in idx]
    vals = []
    for i in idx:      # stop at the first unknown: never read a constant for nothing
        v = values(ctx, i)
        if v is None:
            return None
        vals.append(v)
    if any(not static(s) or len(v) != math.prod(s) for s, v in zip(shapes, vals)):
        return None
    n = math.prod(out_shape)
    if n > _MAX_CONST:
        return None
    if all(len(v) == n or len(v) == 1 for v in vals):
        # (the common case, with no index maps: each input has every element or one)
        maps = [range(n) if len(v) == n else (0,) * n for v in vals]
    else:
        try:
            maps = [np.broadcast_to(np.arange(len(v)).reshape(s), out_shape).reshape(-1)
                    for s, v in zip(shapes, vals)]
        except ValueError:
            return None
    out = []
    for k in range(n):
        args = [v[m[k]] for v, m in zip(vals, maps)]
        r = None if any(a is None for a in args) else _safe(fn, ctx, *args)
        out.append(fit(r))
    return out


def _safe(fn, ctx, *args):
    try:
        return fn(ctx, *args)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None


def arith(op, dtype, fmod=0):
    """The element function of ``op`` in element type ``dtype`` (``numeric.apply``)."""
    return lambda c, *a: N.apply(c, op, dtype, a, fmod)


def _cmp(op, pyop, sym):
    def f(ctx, a, b):
        if is_int(a) and is_int(b):
            if isinstance(a, int) and isinstance(b, int):
                return pyop(a, b)
            v = ctx.decide(op(a, b))
            if v is Verdict.PROVEN:
                return True
            if v is Verdict.REFUTED:
                return False
            return _sbool(sym(a, b))
        if op is eq and is_bool(a) and is_bool(b):
            if isinstance(a, bool) and isinstance(b, bool):
                return a == b
            return _sbool(sympy.Equivalent(a, b))
        return None
    return f


def _sbool(b):
    if isinstance(b, sympy.logic.boolalg.BooleanAtom):
        return bool(b)
    return b


def _logic(fn, pyfn):
    def f(ctx, *args):
        if not all(is_bool(a) for a in args):
            return None
        if all(_bool_constant(a) for a in args):
            return pyfn(*[bool(a) for a in args])
        return _sbool(fn(*args))
    return f


_COMPARE_VALUE = {
    # (sympy's classes are read when a symbolic element is met: ``lazy.py``)
    "Equal": _cmp(eq, lambda a, b: a == b, lambda a, b: sympy.Eq(a, b)),
    "Less": _cmp(lt, lambda a, b: a < b, lambda a, b: sympy.Lt(a, b)),
    "Greater": _cmp(gt, lambda a, b: a > b, lambda a, b: sympy.Gt(a, b)),
    "LessOrEqual": _cmp(le, lambda a, b: a <= b, lambda a, b: sympy.Le(a, b)),
    "GreaterOrEqual": _cmp(ge, lambda a, b: a >= b, lambda a, b: sympy.Ge(a, b)),
    "And": _logic(lambda *a: sympy.And(*a), lambda a, b: a and b),
    "Or": _logic(lambda *a: sympy.Or(*a), lambda a, b: a or b),
    "Xor": _logic(lambda *a: sympy.Xor(*a), lambda a, b: a != b),
}
# ops whose elements numeric.apply computes
_ARITH_VALUE = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean"}


# ============================================================ binary / variadic ops
COMPARE = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}
ARITH = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]


def _value_fn(ctx):
    op = ctx.op_type
    if op in _ARITH_VALUE:
        return arith(op, ctx.dtype(0), int(ctx.attr("fmod", 0)) if op == "Mod" else 0)
    return _COMPARE_VALUE.get(op)


def _out_dtype(ctx):
    return BOOL if ctx.op_type in COMPARE else ctx.dtype(0)


def broadcasting(ctx):
    """Multidirectional (numpy) broadcasting of all inputs; values when known."""
    n = ctx.num_inputs
    op = ctx.op_type
    if n < 1 or not all(ctx.has_input(i) for i in range(n)):
        ctx.invalid(f"{op.lower()}.inputs", f"{op} has {sum(ctx.has_input(i) for i in range(n))} of its {n} "
                    "inputs given; every input must be present", f"give {op} all of its inputs")
    if op not in ("Max", "Min", "Sum", "Mean") and n != 2:
        ctx.invalid(f"{op.lower()}.inputs", f"{op} takes 2 inputs, has {n}", f"give {op} exactly 2 inputs")
    if op == "Mod":
        _check_fmod(ctx)
    elif op == "BitShift":
        d = ctx.attr("direction")
        d = d.decode() if isinstance(d, bytes) else d
        if d not in ("LEFT", "RIGHT"):
            ctx.invalid("bitshift.direction", f"BitShift direction is {d!r}; it must be 'LEFT' or 'RIGHT'",
                        "give BitShift direction 'LEFT' or 'RIGHT'")
    idx = list(range(n))
    out = broadcast_shapes(ctx, [ctx.shape(i) for i in idx], f"{ctx.op_type.lower()}.broadcast")
    dtype = _out_dtype(ctx)
    fn = _value_fn(ctx)
    val = bcast_values(ctx, idx, fn, out) if fn is not None else None
    ctx.set_output(0, out, dtype, value=val)


def _check_fmod(ctx):
    """Mod's ``fmod`` is 0 or 1, and 1 for floating-point inputs before opset 28 (onnxruntime
    refuses a float Mod with fmod=0 there; Mod-28 defines it)."""
    fmod = int(ctx.attr("fmod", 0))
    if fmod not in (0, 1):
        ctx.invalid("mod.fmod", f"Mod's fmod is {fmod}; it must be 0 or 1", "give Mod fmod 0 or 1")
    if fmod == 0 and ctx.dtype(0) in FLOAT_TYPES and (ctx.opset or 28) < 28:
        ctx.invalid("mod.fmod", f"Mod of {ctx.dtype(0).name} inputs has fmod=0; before opset 28 a floating-point "
                    "Mod must set fmod=1", "set fmod=1 for floating-point inputs")


def legacy_broadcast(ctx):
    """Binary ops before opset 7: ``broadcast=1`` aligns B onto A (at ``axis`` or
    at the end); otherwise both shapes are equal.  The output has A's shape."""
    ctx.check_inputs(2, 2)
    a, b = ctx.shape(0), ctx.shape(1)
    rule = f"{ctx.op_type.lower()}.legacy_broadcast"
    if a is not None and b is not None:
        if not ctx.attr("broadcast", 0):
            if len(a) != len(b):
                ctx.invalid(rule, f"{ctx.op_type} inputs have ranks {len(a)} and {len(b)} with broadcast=0, which "
                            "needs equal shapes", "set broadcast=1, or give both inputs the same shape")
            for k, (x, y) in enumerate(zip(a, b)):
                ctx.equal(x, y, rule, f"inputs must have equal sizes on axis {k}: {show(x)} and {show(y)}")
        else:
            if len(b) > len(a):
                ctx.invalid(rule, f"{ctx.op_type}'s B has rank {len(b)}, more than the rank {len(a)} of A it "
                            "broadcasts onto", "give B a rank at most A's")
            start = ctx.attr("axis", len(a) - len(b))
            start = start + len(a) if start < 0 else start
            if start < 0 or start + len(b) > len(a):
                ctx.invalid(rule, f"axis {ctx.attr('axis')} does not fit B of rank {len(b)} into A of rank {len(a)}",
                            f"give an axis within [0, {len(a) - len(b)}]")
            for k, y in enumerate(b):
                x = a[start + k]
                if y != 1 and y != x:
                    ctx.require(any_of(eq(y, x), eq(y, 1)), rule,
                                f"B axis {k} ({show(y)}) must equal A axis {start + k} ({show(x)}) or be 1")
    ctx.set_output(0, a, _out_dtype(ctx))


def prelu(ctx):
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    unidirectional(ctx, x, ctx.shape(1), "prelu.slope", "slope")
    ctx.set_output(0, x, ctx.dtype(0))


_BINARY_SINCE = {"Add": 7, "Sub": 7, "Mul": 7, "Div": 7, "Pow": 7, "And": 7, "Or": 7, "Xor": 7,
                 "Equal": 7, "Less": 7, "Greater": 7, "LessOrEqual": 12, "GreaterOrEqual": 12,
                 "Mod": 10, "BitShift": 11, "BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18}
for _op, _v in _BINARY_SINCE.items():
    if _v == 7:
        register("", _op, 1)(legacy_broadcast)
    register("", _op, _v)(broadcasting)


def variadic_legacy(ctx):
    """Max/Min/Sum/Mean before opset 8: all inputs have the same shape."""
    shapes = [ctx.shape(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    rule = f"{ctx.op_type.lower()}.same_shape"
    if not shapes:
        ctx.invalid(f"{ctx.op_type.lower()}.inputs", f"{ctx.op_type} has no input", "give it at least one input")
    out = next((s for s in shapes if s is not None), None)
    for j, s in enumerate(shapes):
        if s is None or out is None:
            continue
        if len(s) != len(out):
            ctx.invalid(rule, f"{ctx.op_type} input {j} has rank {len(s)} and another input rank {len(out)}; "
                        f"before opset 8 all inputs have the same shape", "give every input the same shape")
        for k, (x, y) in enumerate(zip(out, s)):
            ctx.equal(x, y, f"{ctx.op_type.lower()}.same_shape",
                      f"inputs 0 and {j} must have equal sizes on axis {k}: {show(x)} and {show(y)}")
    ctx.set_output(0, out, ctx.dtype(0))


for _op in ("Max", "Min", "Sum", "Mean"):
    register("", _op, 1)(variadic_legacy)
    register("", _op, 8)(broadcasting)
register("", "PRelu", 1)(prelu)


# ============================================================ unary ops
# ops whose elements numeric.apply computes (in the input's element type)
_ARITH_UNARY = {"Neg", "Abs", "Identity", "Floor", "Ceil", "Round", "Sign", "Relu", "Reciprocal"}
_UNARY_VALUE = {"Not": _logic(lambda a: sympy.Not(a), lambda a: not a)}

UNARY = ["Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Floor", "Ceil",
         "Round", "Sign", "Not", "IsNaN", "IsInf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
         "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Elu", "Selu", "LeakyRelu", "ThresholdedRelu",
         "HardSigmoid", "HardSwish", "Gelu", "Mish", "Celu", "Shrink", "Identity", "BitwiseNot", "Swish"]
_BOOL_OUT = {"Not", "IsNaN", "IsInf"}


def unary(ctx):
    """Shape and (for Not/IsNaN/IsInf: bool) dtype preserved; exact values propagated."""
    ctx.check_inputs(1, 1)
    if ctx.op_type == "Identity":
        t = ctx.input(0)
        if t is not None and t.seq is not None:
            # a sequence (opset 14+) or optional (16+): the same value, element infos and all
            ctx.set_output(0, None, None, seq=t.seq)
            return
    shape = ctx.shape(0)
    dtype = BOOL if ctx.op_type in _BOOL_OUT else ctx.dtype(0)
    op = ctx.op_type
    fn = arith(op, dtype) if op in _ARITH_UNARY else _UNARY_VALUE.get(op)
    if op == "Identity":
        val = ctx.value(0)        # the same elements: nothing to compute
    else:
        val = bcast_values(ctx, [0], fn, shape) if fn is not None else None
    const = tensor = None
    if ctx.op_type == "Identity":
        # the same constant, still unread: Identity of a weight must not materialize it
        t = ctx.input(0)
        const, tensor = t.const, t.tensor
    ctx.set_output(0, shape, dtype, value=val, const=const, tensor=tensor)


for _op in UNARY:
    register("", _op, 1)(unary)


def dropout(ctx):
    """Y = X's shape; the optional mask has the same shape (bool from opset 10)."""
    if not ctx.has_input(0):
        ctx.invalid("dropout.inputs", "Dropout's data input is missing", "give Dropout its data input")
    for i, what in ((1, "ratio"), (2, "training_mode")):
        r = ctx.rank(i)
        if r not in (None, 0):
            ctx.invalid("dropout.scalar", f"Dropout's {what} has rank {r}; it must be a scalar",
                        f"give Dropout a scalar {what}")
    if ctx.has_input(1) and ctx.rank(1) == 0:
        c = ctx.const(1)
        if c is not None and c.size == 1 and c.dtype.kind == "f":
            ratio = float(c.reshape(-1)[0])
            if not 0 <= ratio < 1:
                ctx.invalid("dropout.ratio", f"Dropout's ratio is {ratio}; it must be within [0, 1)",
                            "give Dropout a ratio in [0, 1)")
    shape, dtype = ctx.shape(0), ctx.dtype(0)
    ctx.set_output(0, shape, dtype)
    if ctx.has_output(1):
        ctx.set_output(1, shape, BOOL if (ctx.opset or 99) >= 10 else dtype)


register("", "Dropout", 1)(dropout)


def clip(ctx):
    """Shape preserved; min/max from attributes (< 11) or scalar inputs (>= 11)."""
    if not ctx.has_input(0):
        ctx.invalid("clip.inputs", "Clip's input is missing", "give Clip its input")
    shape, dtype = ctx.shape(0), ctx.dtype(0)
    lo = hi = (None,)
    if (ctx.opset or 99) >= 11:
        for i in (1, 2):
            sh = ctx.shape(i)
            # (the spec says scalar; onnxruntime and onnx's reference also run a 1-element vector)
            if sh is not None and len(sh) == 1 and not isinstance(sh[0], int):
                ctx.equal(sh[0], 1, "clip.scalar", f"Clip's {'min' if i == 1 else 'max'} holds one element")
            elif sh is not None and len(sh) > 0 and not (len(sh) == 1 and sh[0] == 1):
                ctx.invalid("clip.scalar", f"Clip's {'min' if i == 1 else 'max'} has shape {list(sh)}; it must be "
                            "a scalar", f"give Clip a scalar {'min' if i == 1 else 'max'}")
        lo = values(ctx, 1) if ctx.has_input(1) else ()
        hi = values(ctx, 2) if ctx.has_input(2) else ()
    elif dtype in FLOAT_TYPES:
        # (before opset 11: float attributes, by default the float range: no bound)
        lo = tuple(N.const_element(x, dtype) for x in (ctx.attr("min", None),) if x is not None)
        hi = tuple(N.const_element(x, dtype) for x in (ctx.attr("max", None),) if x is not None)
    val = None
    if lo is not None and hi is not None and None not in lo and None not in hi:
        def f(c, a):
            if lo:
                a = N.apply(c, "Max", dtype, (a, lo[0]))
            if hi and a is not None:
                a = N.apply(c, "Min", dtype, (a, hi[0]))
            return a
        val = bcast_values(ctx, [0], f, shape)
    ctx.set_output(0, shape, dtype, value=val)


register("", "Clip", 1)(clip)


# ============================================================ Cast
def cast_value(ctx, a, src, dst):
    """The element a Cast from ``src`` to ``dst`` gives: bools here, numbers in
    ``numeric.cast`` (wrapping, rounding, truncation)."""
    if dst == BOOL:
        if is_bool(a):
            return _sbool(a)
        if isinstance(a, N.Real):
            return _real_truth(ctx, a)
        if isinstance(a, int):
            return a != 0
        if is_int(a):
            v = ctx.decide(ne(a, 0))
            return True if v is Verdict.PROVEN else False if v is Verdict.REFUTED else _sbool(sympy.Ne(a, 0))
        return None
    if is_bool(a):
        if _bool_constant(a):
            return int(bool(a))
        if not _plain_cond(a) or (dst not in N.INT_RANGE and dst not in N.FLOAT_FORMATS):
            return None
        return sympy.Piecewise((sympy.Integer(1), a), (sympy.Integer(0), True))
    return N.cast(ctx, a, src, dst, f"{ctx.name}_value")


def _real_truth(ctx, a):
    """``a != 0`` for a float element that is not an integer: True where its value is
    provably away from 0 (its relative error is below 1), else unknown."""
    if a.err >= 1 or a.where:
        return None
    b = N.bounds(ctx, a.x)
    return True if b.lo > 0 or b.hi < 0 else None


def _cast_to(ctx, dst):
    shape, src = ctx.shape(0), ctx.dtype(0)
    val = bcast_values(ctx, [0], lambda c, a: cast_value(c, a, src, dst), shape)
    ctx.set_output(0, shape, dst, value=val)


def cast(ctx):
    ctx.check_inputs(1, 1)
    to = ctx.require_attr("to")
    try:
        dst = ir.DataType(int(to))
    except ValueError:
        ctx.invalid("cast.to", f"Cast's attribute 'to' is {to}, not an ONNX tensor element type",
                    "give 'to' a TensorProto.DataType value")
    if dst == ir.DataType.UNDEFINED:
        ctx.invalid("cast.to", "Cast's attribute 'to' is 0 (UNDEFINED), not an element type",
                    "give 'to' a TensorProto.DataType value")
    _cast_to(ctx, dst)


def cast_like(ctx):
    ctx.check_inputs(2, 2)
    _cast_to(ctx, ctx.dtype(1))


register("", "Cast", 1)(cast)
register("", "CastLike", 15)(cast_like)


# ============================================================ Where
def _where_value(ctx, c, x, y):
    """The element Where selects (any element kind); a condition known only as a relation
    selects between two integer elements as a Piecewise."""
    if _bool_constant(c):
        return x if c else y
    if not is_bool(c):
        return None
    if x == y:
        return x
    if is_int(x) and is_int(y) and _plain_cond(c):
        return sympy.Piecewise((E.to_sympy(x), c), (E.to_sympy(y), True))
    return None


def _plain_cond(c) -> bool:
    """Conditions the printer and the Z3 bridge understand: relations, and/or/not."""
    if isinstance(c, sympy.core.relational.Relational):
        return True
    if isinstance(c, (sympy.And, sympy.Or, sympy.Not)):
        return all(_plain_cond(a) for a in c.args)
    return False


def where(ctx):
    ctx.check_inputs(3, 3)
    out = broadcast_shapes(ctx, [ctx.shape(i) for i in range(3)], "where.broadcast")
    dtype = ctx.dtype(1)
    val = bcast_values(ctx, [0, 1, 2], _where_value, out)
    ctx.set_output(0, out, dtype, value=val)


register("", "Where", 9)(where)
