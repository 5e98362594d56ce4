"""Elementwise ops: broadcasting binary/variadic ops, unary ops, Where, Clip, Cast.

Besides shapes, these rules propagate *values* of small integer tensors
(see ``context``): that is how ``Shape -> Gather -> Div -> Concat -> Reshape``
chains of PyTorch exports resolve.  A value element is set only when it is
exactly right (int64 truncating division, Python-sign ``Mod``, ...);
otherwise it is None (unknown).  Float tensors carry values only when every
known element is an integer (``Cast(Shape) -> Mul(2.0) -> Cast``).
"""
from __future__ import annotations

import math

import numpy as np
from .. import irtypes as ir
import sympy
from sympy.logic.boolalg import Boolean, BooleanAtom

from .. import expr as E
from ..constraints import all_of, any_of, eq, ge, gt, le, lt, ne
from ..printing import show
from ..registry import register
from ..store import Verdict
from .common import broadcast_shapes

BOOL = ir.DataType.BOOL
FLOAT_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16, ir.DataType.BFLOAT16}
# Largest integer a float type represents exactly (values beyond are dropped).
_FLOAT_EXACT = {ir.DataType.DOUBLE: 2 ** 53, ir.DataType.FLOAT: 2 ** 24,
                ir.DataType.FLOAT16: 2 ** 11, ir.DataType.BFLOAT16: 2 ** 8}
_INT_RANGE = {ir.DataType.INT64: (-2 ** 63, 2 ** 63 - 1), ir.DataType.INT32: (-2 ** 31, 2 ** 31 - 1),
              ir.DataType.INT16: (-2 ** 15, 2 ** 15 - 1), ir.DataType.INT8: (-128, 127),
              ir.DataType.UINT64: (0, 2 ** 64 - 1), ir.DataType.UINT32: (0, 2 ** 32 - 1),
              ir.DataType.UINT16: (0, 2 ** 16 - 1), ir.DataType.UINT8: (0, 255)}
_MAX_CONST = 4096
_MAX_FLOAT_CONST = 64


# ============================================================ value helpers
def is_bool(v) -> bool:
    """A boolean element: a Python bool or a sympy boolean (a sympy Symbol is both a
    Boolean and an Expr: it is an int element here, never a condition)."""
    return isinstance(v, (bool, np.bool_)) or (isinstance(v, Boolean) and not isinstance(v, sympy.Expr))


def is_int(v) -> bool:
    """An integer element: a Python int or a sympy integer expression (not a boolean)."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, sympy.Expr) and not isinstance(v, sympy.Float))


def decide(ctx, rel) -> Verdict:
    return ctx.decide(rel)


def nonneg(ctx, v) -> bool:
    if isinstance(v, int):
        return v >= 0
    return v.is_nonnegative is True or decide(ctx, ge(v, 0)) is Verdict.PROVEN


def _nonneg_sym(v) -> bool:
    """``v >= 0`` known from the expression alone (no solver): ints, and
    expressions sympy knows non-negative (dim sizes and their sums/products)."""
    if isinstance(v, int):
        return v >= 0
    return getattr(v, "is_nonnegative", None) is True


def fit(v, dtype):
    """``v`` when it is representable in ``dtype`` (None otherwise, or if too big)."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, BooleanAtom):
        return bool(v)
    if is_bool(v):
        return v if E.size(v) <= E.MAX_OPS else None
    if not is_int(v):
        return None
    v = E.norm(v)
    if isinstance(v, int):
        if dtype in _INT_RANGE:
            lo, hi = _INT_RANGE[dtype]
            return v if lo <= v <= hi else None
        if dtype in _FLOAT_EXACT:
            return v if abs(v) <= _FLOAT_EXACT[dtype] else None
        return v
    return v if E.size(v) <= E.MAX_OPS else None


def values(ctx, i):
    """Known elements of input ``i``: ``ctx.value`` or, for a small float constant,
    its integral elements (others None)."""
    v = ctx.value(i)
    if v is not None:
        return v
    t = ctx.input(i)
    if t is None or t.shape is None or not static(t.shape) or math.prod(t.shape) > _MAX_FLOAT_CONST:
        return None     # float weights are not shape arithmetic: never read them
    c = ctx.const(i)
    if c is None or c.dtype.kind not in "f":
        return None
    out = []
    for x in c.reshape(-1).tolist():
        out.append(int(x) if math.isfinite(x) and float(x).is_integer() else None)
    return tuple(out)


def static(shape):
    return shape is not None and all(isinstance(d, int) for d in shape)


def bcast_values(ctx, idx, fn, out_shape, dtype):
    """Apply ``fn`` elementwise to the (broadcast) values of inputs ``idx``."""
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
        out.append(fit(r, dtype))
    return out


def _safe(fn, ctx, *args):
    try:
        return fn(ctx, *args)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None


def _ints(fn):
    """Lift an int-only element function: None unless every argument is an int element."""
    def g(ctx, *args):
        return fn(ctx, *args) if all(is_int(a) for a in args) else None
    return g


# ---- arithmetic on elements
def v_div(ctx, a, b):
    if not (is_int(a) and is_int(b)):
        return None
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        q = abs(a) // abs(b)                      # int64 division truncates toward zero
        return q if (a >= 0) == (b > 0) or q == 0 else -q
    if b == 1:
        return a
    if not isinstance(b, int):
        q = _exact_quotient(a, b)
        if q is not None:
            # a is a multiple of b as polynomials; the division runs only when b != 0
            ctx.require(ne(b, 0), "div.nonzero", f"integer division by {show(b)} needs a non-zero divisor")
            return q
    if not nonneg(ctx, a):
        if isinstance(b, int) and b > 0:
            return _trunc_div(a, b)
        return None
    if isinstance(b, int):
        return E.floordiv(a, b) if b > 0 else E.neg(E.floordiv(a, -b)) if b < 0 else None
    if _nonneg_sym(b):
        # a >= 0 and b >= 0: truncation is floor; the node runs only when b != 0
        ctx.require(ne(b, 0), "div.nonzero", f"integer division by {show(b)} needs a non-zero divisor")
        return E.floordiv(a, b)
    if decide(ctx, gt(b, 0)) is Verdict.PROVEN:
        return E.floordiv(a, b)
    return None


def _exact_quotient(a, b):
    """``a / b`` when sympy's automatic cancellation of equal factors leaves no
    denominator and an integer coefficient (``(16*B*X) / (16*B) -> X``), else None."""
    if isinstance(a, int) or not isinstance(b, (sympy.Symbol, sympy.Mul)):
        return None
    q = sympy.Mul(a, sympy.Pow(b, -1))
    num, den = sympy.fraction(q)
    if den != 1:
        return None
    for term in sympy.Add.make_args(num):
        coeff, _ = term.as_coeff_Mul()
        if not coeff.is_Integer:
            return None
    return E.norm(num)


def _trunc_div(a, b: int):
    """int64 division truncates toward zero: floor for a >= 0, -floor(-a / b) below."""
    return E.norm(sympy.Piecewise((E.to_sympy(E.floordiv(a, b)), sympy.Ge(E.to_sympy(a), 0)),
                                  (E.to_sympy(E.neg(E.floordiv(E.neg(a), b))), True)))


def v_fdiv(ctx, a, b):
    """Float division: kept only when the quotient is an exact integer."""
    if isinstance(a, int) and isinstance(b, int) and b != 0 and a % b == 0:
        return a // b
    if b == 1 and is_int(a):
        return a
    return None


def v_mod(ctx, a, b, fmod=0):
    if not (is_int(a) and is_int(b)):
        return None
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        if fmod:
            return int(math.copysign(abs(a) % abs(b), a)) if a % b else 0
        return a % b
    if not isinstance(b, int) and _nonneg_sym(b) and _nonneg_sym(a):
        # both >= 0: Python % and C fmod agree; the node runs only when b != 0
        ctx.require(ne(b, 0), "mod.nonzero", f"integer modulo by {show(b)} needs a non-zero divisor")
        return E.mod(a, b)
    if not isinstance(b, int) or b == 0:
        return None
    if fmod and not nonneg(ctx, a):
        return None
    if b > 0:
        return E.mod(a, b)
    return None if fmod else E.neg(E.mod(E.neg(a), -b))


def v_pow(ctx, a, b):
    if not (is_int(a) and isinstance(b, int)) or b < 0:
        return None
    if isinstance(a, int):
        return a ** b if b < 64 or abs(a) <= 1 else None
    return E.prod([a] * b) if b <= 4 else None


def _cmp(op, pyop, sym):
    def f(ctx, a, b):
        if is_int(a) and is_int(b):
            if isinstance(a, int) and isinstance(b, int):
                return pyop(a, b)
            v = decide(ctx, op(a, b))
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
    if isinstance(b, BooleanAtom):
        return bool(b)
    return b


def _logic(fn, pyfn):
    def f(ctx, *args):
        if not all(is_bool(a) for a in args):
            return None
        if all(isinstance(a, (bool, np.bool_)) for a in args):
            return pyfn(*[bool(a) for a in args])
        return _sbool(fn(*args))
    return f


_BIN_VALUE = {
    "Add": _ints(lambda c, a, b: E.add(a, b)),
    "Sub": _ints(lambda c, a, b: E.sub(a, b)),
    "Mul": _ints(lambda c, a, b: E.mul(a, b)),
    "Div": v_div,
    "Pow": v_pow,
    "Max": _ints(lambda c, *a: _fold(E.smax, a)),
    "Min": _ints(lambda c, *a: _fold(E.smin, a)),
    "Sum": _ints(lambda c, *a: _fold(E.add, a)),
    "Equal": _cmp(eq, lambda a, b: a == b, sympy.Eq),
    "Less": _cmp(lt, lambda a, b: a < b, sympy.Lt),
    "Greater": _cmp(gt, lambda a, b: a > b, sympy.Gt),
    "LessOrEqual": _cmp(le, lambda a, b: a <= b, sympy.Le),
    "GreaterOrEqual": _cmp(ge, lambda a, b: a >= b, sympy.Ge),
    "And": _logic(sympy.And, lambda a, b: a and b),
    "Or": _logic(sympy.Or, lambda a, b: a or b),
    "Xor": _logic(sympy.Xor, lambda a, b: a != b),
}


def _fold(f, args):
    acc = args[0]
    for a in args[1:]:
        acc = f(acc, a)
    return acc


# ============================================================ binary / variadic ops
COMPARE = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}
ARITH = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]


def _value_fn(ctx):
    op = ctx.op_type
    if op == "Mod":
        fmod = int(ctx.attr("fmod", 0))
        return lambda c, a, b: v_mod(c, a, b, fmod)
    if op == "Div" and ctx.dtype(0) in FLOAT_TYPES:
        return v_fdiv
    return _BIN_VALUE.get(op)


def _out_dtype(ctx):
    return BOOL if ctx.op_type in COMPARE else ctx.dtype(0)


def _numeric_or_bool(ctx, dtype):
    """Values are tracked for int/bool tensors and for integral float tensors."""
    return dtype is not None


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
    val = bcast_values(ctx, idx, fn, out, dtype) if fn is not None else None
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


def unidirectional(ctx, target, src, rule, what):
    """Emit the constraints of broadcasting ``src`` onto ``target`` (one direction)."""
    if target is None or src is None:
        return
    if len(src) > len(target):
        ctx.invalid(rule, f"{what} has rank {len(src)}, more than the rank {len(target)} it broadcasts onto",
                    f"give {what} a rank at most {len(target)}")
    off = len(target) - len(src)
    for k, d in enumerate(src):
        t = target[off + k]
        if d == 1 or d == t:
            continue
        ctx.require(any_of(eq(d, t), eq(d, 1)), rule,
                    f"{what} axis {k} ({show(d)}) must equal axis {off + k} of the input ({show(t)}) or be 1")


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
def _u_abs(ctx, a):
    if not is_int(a):
        return None
    if isinstance(a, int):
        return abs(a)
    return a if nonneg(ctx, a) else None


def _u_sign(ctx, a):
    if isinstance(a, int) and not isinstance(a, bool):
        return (a > 0) - (a < 0)
    return None


_UNARY_VALUE = {
    "Neg": _ints(lambda c, a: E.neg(a)),
    "Abs": _u_abs,
    "Identity": lambda c, a: a,
    "Floor": _ints(lambda c, a: a),     # values are integral
    "Ceil": _ints(lambda c, a: a),
    "Round": _ints(lambda c, a: a),
    "Sign": _u_sign,
    "Relu": _ints(lambda c, a: E.smax(a, 0)),
    "Not": _logic(sympy.Not, lambda a: not a),
}

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
    fn = _UNARY_VALUE.get(ctx.op_type)
    if ctx.op_type == "Identity":
        val = ctx.value(0)        # the same elements: nothing to compute
    else:
        val = bcast_values(ctx, [0], fn, shape, dtype) if fn is not None else None
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
    lo = hi = None
    if (ctx.opset or 99) >= 11:
        for i in (1, 2):
            sh = ctx.shape(i)
            # (the spec says scalar; onnxruntime and onnx's reference also run a 1-element vector)
            if sh is not None and len(sh) == 1 and not isinstance(sh[0], int):
                ctx.equal(sh[0], 1, "clip.scalar", f"Clip's {'min' if i == 1 else 'max'} holds one element")
            elif sh is not None and len(sh) > 0 and not (len(sh) == 1 and sh[0] == 1):
                ctx.invalid("clip.scalar", f"Clip's {'min' if i == 1 else 'max'} has shape {list(sh)}; it must be "
                            "a scalar", f"give Clip a scalar {'min' if i == 1 else 'max'}")
        lo_v = values(ctx, 1) if ctx.has_input(1) else (None,)
        hi_v = values(ctx, 2) if ctx.has_input(2) else (None,)
        lo_known = not ctx.has_input(1) or (lo_v is not None and lo_v[0] is not None)
        hi_known = not ctx.has_input(2) or (hi_v is not None and hi_v[0] is not None)
        lo = lo_v[0] if lo_v else None
        hi = hi_v[0] if hi_v else None
        known = lo_known and hi_known and dtype not in FLOAT_TYPES
    else:
        known = False   # float-only before opset 11
    val = None
    if known:
        def f(c, a):
            if not is_int(a):
                return None
            if lo is not None:
                a = E.smax(a, lo)
            if hi is not None:
                a = E.smin(a, hi)
            return a
        val = bcast_values(ctx, [0], f, shape, dtype)
    ctx.set_output(0, shape, dtype, value=val)


register("", "Clip", 1)(clip)


# ============================================================ Cast
def cast_value(ctx, a, src, dst):
    if dst == BOOL:
        if is_bool(a):
            return _sbool(a)
        if isinstance(a, int):
            return a != 0
        if is_int(a):
            v = decide(ctx, ne(a, 0))
            return True if v is Verdict.PROVEN else False if v is Verdict.REFUTED else _sbool(sympy.Ne(a, 0))
        return None
    if is_bool(a):
        if isinstance(a, (bool, np.bool_)):
            return int(bool(a))
        return sympy.Piecewise((sympy.Integer(1), a), (sympy.Integer(0), True)) if dst in _INT_RANGE and _plain_cond(a) else None
    if not is_int(a):
        return None
    if dst in _INT_RANGE and dst != ir.DataType.INT64:
        # a narrower integer wraps around at run time (uint8: N + 250 is 4 at N = 10)
        lo, hi = _INT_RANGE[dst]
        span = hi - lo + 1
        if isinstance(a, int):
            return (a - lo) % span + lo
        alo, ahi = ctx.store.interval(a)
        if lo <= alo and ahi <= hi:
            return a
        return E.add(E.mod(E.sub(a, lo), span), lo)     # exact: the wrapped value
    if dst in _INT_RANGE or dst in _FLOAT_EXACT:
        return a
    return None


def _cast_to(ctx, dst):
    shape, src = ctx.shape(0), ctx.dtype(0)
    val = bcast_values(ctx, [0], lambda c, a: cast_value(c, a, src, dst), shape, dst)
    if val is not None and dst in _FLOAT_EXACT:
        # a symbolic integer stays the same number in a float only below 2**mantissa
        lim = _FLOAT_EXACT[dst]
        for a in val:
            if a is not None and is_int(a) and not isinstance(a, int):
                ctx.require(all_of(le(a, lim), ge(a, -lim)), "cast.float_exact",
                            f"{show(a)} is cast to {dst.name}, exact only for magnitudes up to {lim}")
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
    if isinstance(c, (bool, np.bool_)):
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
    val = bcast_values(ctx, [0, 1, 2], _where_value, out, dtype)
    ctx.set_output(0, out, dtype, value=val)


register("", "Where", 9)(where)
