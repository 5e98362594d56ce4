"""Element-type semantics of the values rules compute: the one home.

Rules carry the elements of small tensors as *values* (``context.TensorInfo.value``:
a flattened tuple, one entry per element).  A value element is a claim that every
runtime (onnxruntime and the spec's reference semantics, ``onnx.reference``) gives
that element, so an element is computed the way the element type computes it:
integers wrap, floating-point numbers round.  Every rule that propagates values
through arithmetic, casts and reductions computes its elements here
(``apply``, ``cast``, ``to_integer``, ``const_element``, ``wrap``).

Integer types (int8 ... uint64)
-------------------------------
An element is an exact integer: a Python ``int`` or a sympy integer expression over
dim symbols.  An operation computes the mathematical result ``r`` and then ``wrap``:
``r`` itself where ``r`` is proven within the type's range, else the exact wrapped
value ``(r - lo) mod 2**bits + lo`` (an ``E.mod`` expression, exact for every ``r``).
"Proven" is the store's intervals, then the bounds below (``bounds``), then
``ctx.decide`` (budgeted).

*The dim premise* (``DIM_LIMIT``): in those bounds every dim symbol, and every product
of dim symbols, is below 2**48.  Shape arithmetic multiplies dims to count elements
(``B * S`` rows, ``C * H * W`` features), and a tensor of 2**48 elements needs 256 TiB
even at one byte per element, more than any machine onnxruntime runs on can allocate;
only an empty tensor could have such an axis, and shape arithmetic over it is not
modeled.  The premise is only ever used here, to decide that shape arithmetic cannot
overflow or leave a float type's range: it is never a constraint of the store, so it
never restricts the model's inputs nor makes a conflict.  What it does not cover is
wrapped: ``2**62 * N + 3`` in int64 is the wrapped expression (3 at N = 4), a product
of dims in int32 too.

Floating-point types (float16, bfloat16, float, double)
-------------------------------------------------------
An element of a float tensor is one of

* an exact integer (``int`` / integer expression): the element on every runtime;
  claimed only when that integer is representable in the type (``|x| <= 2**p`` proven,
  or a constant that is a float of the type);
* ``Real(x, err, where)``: ``x`` is the value of the computation in exact real
  arithmetic (a sympy ``Rational`` or an expression over dims with rational
  coefficients, divisions, ``Min`` and ``Max``), ``err`` a ``Fraction``: wherever every
  condition in ``where`` holds (relations over integer expressions: the divisors a
  division met are >= 1), every runtime's element lies within ``err * |x|`` of ``x``.
  ``err == 0`` is an exact non-integer (``1.5``, ``3*N/2``): then ``where`` is empty
  and ``x`` is representable;
* ``None``: unknown.

An operation on float elements computes ``x`` in real arithmetic, carries the inputs'
relative errors (``Mul``: ``(1 + ea)(1 + eb) - 1``; ``Div``: ``(1 + ea) / (1 - eb) -
1``; ``Add`` of same-signed terms: ``max(ea, eb)``; ``Min`` / ``Max``: ``max(ea, eb)``;
a difference of inexact terms is not claimed) and rounds once (``_finish``).  The
result is exact only when the inputs are and ``x`` is provably representable in the
type.  Otherwise it is ``Real(x, (1 + err)(1 + 2**-p) - 1)`` provided ``x`` provably
stays within the type's normal range (no overflow to inf, no subnormal: the relative
error bound would not hold there), else unknown.  That covers both runtimes where they
differ: onnxruntime's CPU kernels compute float16 arithmetic in float32 and may never
round in between (``Cast(1501 -> float16) * 1.5 -> Cast(int64)`` is 2251 there, 2252 by
the spec: ``2251.5`` is not a float16, so the value is not exact either way).  Constants
of float and double under the correctly rounded operations (+, -, *, /, Reciprocal) are
rounded exactly (IEEE 754, round half to even: both runtimes agree).

Converting to an integer (Floor, Ceil, Round, Cast to an integer type): an exact
element converts exactly (``floor(3*N/2)`` is ``(3*N) // 2``); an inexact one whose
``x`` is provably non-negative becomes a data symbol (the runtime's value, named),
bounded above by ``floor(x * (1 + err))`` (``upper_int``, an integer expression; where
``where`` fails the bound is 2**63 - 1); a constant whose every possible value
converts to the same integer is that integer; anything else is unknown.

Precision (``2**p``, ``p`` significand bits): float16 2**11, bfloat16 2**8, float
2**24, double 2**53 (``EXACT_INT``).
"""
from __future__ import annotations

import math
import weakref
from fractions import Fraction
from typing import NamedTuple

from . import expr as E
from . import irtypes as ir
from .constraints import all_of, ge, le, ne
from .lazy import sympy
from .store import Verdict

DT = ir.DataType
BOOL = DT.BOOL

# (lowest, highest) of each integer element type
INT_RANGE = {DT.INT64: (-2 ** 63, 2 ** 63 - 1), DT.INT32: (-2 ** 31, 2 ** 31 - 1),
             DT.INT16: (-2 ** 15, 2 ** 15 - 1), DT.INT8: (-128, 127),
             DT.UINT64: (0, 2 ** 64 - 1), DT.UINT32: (0, 2 ** 32 - 1),
             DT.UINT16: (0, 2 ** 16 - 1), DT.UINT8: (0, 255)}
INT64_MAX = 2 ** 63 - 1


class FloatFormat(NamedTuple):
    p: int          # significand bits, the implicit one included
    emin: int       # exponent of the smallest normal number
    emax: int       # exponent of the largest finite number


FLOAT_FORMATS = {DT.FLOAT16: FloatFormat(11, -14, 15), DT.BFLOAT16: FloatFormat(8, -126, 127),
                 DT.FLOAT: FloatFormat(24, -126, 127), DT.DOUBLE: FloatFormat(53, -1022, 1023)}
# every integer up to this magnitude is a float of the type
EXACT_INT = {dt: 2 ** f.p for dt, f in FLOAT_FORMATS.items()}
# the dim premise (see the module docstring): used only to prove ranges, never a constraint
DIM_LIMIT = 2 ** 48
# float types whose +, -, *, / and Reciprocal onnxruntime computes correctly rounded in the
# type itself (float16 / bfloat16 go through float32 there, with or without rounding back)
_IEEE_EXACT = {DT.FLOAT, DT.DOUBLE}
_INF = float("inf")


def unit_roundoff(dt) -> Fraction:
    """The relative error of one rounding to nearest in ``dt`` (normal range)."""
    return Fraction(1, 2 ** FLOAT_FORMATS[dt].p)


# ============================================================ Real
class Real:
    """A float element that is not an exact integer (see the module docstring):
    ``x`` the exact real value (sympy), ``err`` the relative error (Fraction), ``where``
    the conditions (a frozenset of relations) under which the claim holds."""

    __slots__ = ("x", "err", "where")

    def __init__(self, x, err: Fraction = Fraction(0), where: frozenset = frozenset()):
        self.x = x
        self.err = err
        self.where = where

    @property
    def exact(self) -> bool:
        return self.err == 0 and not self.where

    def __eq__(self, other):
        return isinstance(other, Real) and self.x == other.x and self.err == other.err and self.where == other.where

    def __hash__(self):
        return hash((Real, self.x, self.err, self.where))

    def __repr__(self):
        if self.exact:
            return f"Real({self.x})"
        return f"Real({self.x} ~{float(self.err):.3g}{' where ' + str(sorted(map(str, self.where))) if self.where else ''})"


def _sym(v):
    """A number or expression as sympy (Fractions as Rationals)."""
    if isinstance(v, Fraction):
        return sympy.Rational(v.numerator, v.denominator)
    return E.to_sympy(v)


def _const(x):
    """``x`` as a Fraction when it is a number, else None."""
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    if isinstance(x, sympy.Rational):
        return Fraction(int(x.p), int(x.q))
    return None


def _is_int_elem(v) -> bool:
    """An integer element (the value language's: an int or a sympy integer expression)."""
    if v is None or isinstance(v, bool) or isinstance(v, Real):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, sympy.Expr) and not isinstance(v, sympy.Float) and v.is_integer is not False \
        and v.is_finite is not False


def real_of(ctx, v):
    """(x, err, where) of a float element: an integer element is exact; None when unknown.
    ``where`` takes in the condition of every guarded data symbol in ``x`` (``_guard``)."""
    if isinstance(v, Real):
        x, err, where = v.x, v.err, v.where
    elif _is_int_elem(v):
        x, err, where = E.to_sympy(v), Fraction(0), frozenset()
    else:
        return None
    for s in E.free_symbols(x):
        g = _guard(ctx, s)
        if g is not None:
            where = where | g[1]
    return x, err, where


def _guard(ctx, s):
    """(bound, conditions) of a data symbol this module made for a value claimed only where
    conditions hold (its bound is ``Piecewise((bound, conditions), (2**63 - 1, True))``),
    else None."""
    info = ctx.store.info(s) if isinstance(s, sympy.Symbol) else None
    up = info.upper if info is not None and info.kind == "data" else None
    if isinstance(up, sympy.Piecewise) and len(up.args) == 2 and up.args[1] == (INT64_MAX, True):
        cond = up.args[0][1]
        return up.args[0][0], frozenset(cond.args if isinstance(cond, sympy.And) else (cond,))
    return None


def _element(x, err=Fraction(0), where=frozenset()):
    """The element for real value ``x``: an integer element when exact and integral."""
    if err == 0 and not where:
        n = E.norm(x) if not isinstance(x, Fraction) else (x.numerator if x.denominator == 1 else x)
        if isinstance(n, int):
            return n
        if isinstance(n, Fraction):
            return Real(_sym(n))
        if isinstance(n, sympy.Expr) and n.is_integer:
            return n
        return Real(n)
    return Real(_sym(x) if isinstance(x, Fraction) else x, err, where)


# ============================================================ bounds (with the dim premise)
class Bounds(NamedTuple):
    lo: object          # Fraction or -inf
    hi: object          # Fraction or +inf
    tiny: object        # a lower bound of |e| where e != 0 (Fraction; 0 when unknown)


def _fr(v):
    return v if isinstance(v, float) else Fraction(v)


def _mul_iv(a, b):
    ps = []
    for x in (a[0], a[1]):
        for y in (b[0], b[1]):
            if (x == 0 and isinstance(y, float)) or (y == 0 and isinstance(x, float)):
                ps.append(Fraction(0))
            else:
                ps.append(x * y)
    return min(ps), max(ps)


def bounds(ctx, e, guarded: bool = False) -> Bounds:
    """Bounds of ``e`` (an integer expression or a real one with rational coefficients,
    divisions, Min / Max) over the store's intervals, every dim symbol below
    ``DIM_LIMIT`` (the dim premise), every integer divisor >= 1 (a ``Real``'s ``where``);
    ``guarded``: where the conditions of its guarded data symbols hold (``_guard``), for a
    claim that carries them in its ``where``."""
    if isinstance(e, (int, Fraction)):
        f = Fraction(e)
        return Bounds(f, f, abs(f))
    if isinstance(e, sympy.Rational):
        f = Fraction(int(e.p), int(e.q))
        return Bounds(f, f, abs(f))
    # (memoized per store: the store's facts only ever tighten intervals, so a bound
    # computed earlier stays true)
    memo = _memo(ctx.store)
    hit = memo.get((e, guarded))
    if hit is not None:
        return hit
    integral = e.is_integer is True
    b = _bounds(ctx, e, guarded)
    if integral:
        lo = math.ceil(b.lo) if not isinstance(b.lo, float) else b.lo
        hi = math.floor(b.hi) if not isinstance(b.hi, float) else b.hi
        b = Bounds(_fr(lo), _fr(hi), max(b.tiny, Fraction(1)))
    memo[(e, guarded)] = b
    return b


_MEMOS: dict = {}        # id(store) -> (weak reference to the store, {expression: Bounds})


def _memo(store) -> dict:
    hit = _MEMOS.get(id(store))
    if hit is not None and hit[0]() is store:
        return hit[1]
    if len(_MEMOS) > 64:
        for k in [k for k, (ref, _) in _MEMOS.items() if ref() is None]:
            del _MEMOS[k]
    memo = {}
    _MEMOS[id(store)] = (weakref.ref(store), memo)
    return memo


def _bounds(ctx, e, guarded) -> Bounds:
    if isinstance(e, sympy.Symbol):
        lo, hi = ctx.store.interval(e)
        info = ctx.store.info(e)
        g = _guard(ctx, e) if guarded else None
        if g is not None:
            hi = min(hi, bounds(ctx, E.norm(g[0]), True).hi)      # (where its conditions hold)
        elif info is not None and info.upper is not None and not isinstance(info.upper, int):
            hi = min(hi, bounds(ctx, E.norm(info.upper)).hi)      # (a value's data symbol: its bound)
        elif e.is_nonnegative:
            hi = min(hi, DIM_LIMIT)
        return Bounds(_fr(lo), _fr(hi), Fraction(1))
    if isinstance(e, (sympy.Integer, sympy.Rational)):
        return bounds(ctx, e, guarded)
    if isinstance(e, sympy.Add):
        lo = hi = Fraction(0)
        for a in e.args:
            x = bounds(ctx, a, guarded)
            lo, hi = lo + x.lo, hi + x.hi
        return Bounds(lo, hi, Fraction(0))
    if isinstance(e, sympy.Mul):
        iv, tiny = (Fraction(1), Fraction(1)), Fraction(1)
        dims, rest, k = [], [], 0
        for a in _ratios(ctx, e.args, guarded):
            n = _dim_sized(ctx, a, guarded)
            (dims if n else rest).append(a)
            k += n
        if dims:
            # the dim premise: a product of dims is below DIM_LIMIT too (an element count);
            # each factor at most twice a dim (``h // 8``, ``h + w``) doubles that
            d = _mul_all(ctx, dims, guarded)
            iv, tiny = (d.lo, min(d.hi, DIM_LIMIT * 2 ** k)), d.tiny
        for a in rest:
            x = a if isinstance(a, Bounds) else bounds(ctx, a, guarded)
            iv, tiny = _mul_iv(iv, (x.lo, x.hi)), tiny * x.tiny
        return Bounds(iv[0], iv[1], tiny)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer:
        k = int(e.exp)
        x = bounds(ctx, e.base, guarded)
        if k > 0:
            iv = (Fraction(1), Fraction(1))
            for _ in range(min(k, 64)):
                iv = _mul_iv(iv, (x.lo, x.hi))
            lo = max(iv[0], Fraction(0)) if k % 2 == 0 else iv[0]
            return Bounds(lo, iv[1], x.tiny ** k)
        if x.lo >= 0:
            # 1 / d for an integer divisor d: claimed only where d >= 1 (a Real's ``where``)
            lo = max(x.lo, x.tiny, Fraction(1) if e.base.is_integer else Fraction(0))
            if lo <= 0:
                return Bounds(-_INF, _INF, Fraction(0))
            hi = x.hi
            r_lo = Fraction(0) if isinstance(hi, float) else 1 / hi ** -k
            r_hi = 1 / lo ** -k
            return Bounds(r_lo, r_hi, r_lo)
        return Bounds(-_INF, _INF, Fraction(0))
    if isinstance(e, (sympy.Min, sympy.Max)):
        xs = [bounds(ctx, a, guarded) for a in e.args]
        f = min if isinstance(e, sympy.Min) else max
        return Bounds(f(x.lo for x in xs), f(x.hi for x in xs), min(x.tiny for x in xs))
    if isinstance(e, (E.FloorDiv, E.CeilDiv)) and e.args[1].is_Integer and int(e.args[1]) > 0:
        x, k = bounds(ctx, e.args[0], guarded), int(e.args[1])
        lo = x.lo if isinstance(x.lo, float) else Fraction(math.floor(x.lo / k))
        hi = x.hi if isinstance(x.hi, float) else Fraction(math.ceil(x.hi / k))
        return Bounds(lo, hi, Fraction(0))
    if isinstance(e, (E.FloorDiv, E.CeilDiv, E.Mod)):
        # a symbolic divisor: the rule that built the term required it non-zero; with a
        # non-negative dividend and divisor the result lies in [0, dividend]
        a, d = bounds(ctx, e.args[0], guarded), bounds(ctx, e.args[1], guarded)
        if isinstance(e, E.Mod) and d.lo >= 1:
            return Bounds(Fraction(0), d.hi - 1, Fraction(0))
        if a.lo >= 0 and d.lo >= 0:
            return Bounds(Fraction(0), a.hi, Fraction(0))
        return Bounds(-_INF, _INF, Fraction(0))
    if isinstance(e, (sympy.Piecewise, E.Bcast)):
        xs = [bounds(ctx, v, guarded) for v in e.args] if isinstance(e, E.Bcast) else [bounds(ctx, v, guarded) for v, _ in e.args]
        return Bounds(min(x.lo for x in xs), max(x.hi for x in xs), min(x.tiny for x in xs))
    if e.is_integer:
        lo, hi = ctx.store.interval(e)
        return Bounds(_fr(lo), _fr(hi), Fraction(0))
    return Bounds(-_INF, _INF, Fraction(0))


def _dim_symbol(ctx, a) -> bool:
    """A symbol standing for a dim (not a value's data symbol, which has a bound of its own)."""
    if not isinstance(a, sympy.Symbol) or not a.is_nonnegative:
        return False
    info = ctx.store.info(a)
    return info is None or info.upper is None or isinstance(info.upper, int)


def _dim_sized(ctx, a, guarded=False) -> int:
    """How many dim-sized factors ``a`` is: a dim, a non-negative integer term over dims at
    most twice a dim (``h // 8``, ``(h - 3) // 2 + 1``, ``h + w``), or a power of one;
    0 for anything else."""
    k = 1
    if isinstance(a, sympy.Pow) and a.exp.is_Integer and int(a.exp) > 0:
        a, k = a.base, int(a.exp)
    if isinstance(a, Bounds) or isinstance(a, (int, sympy.Number)):
        return 0
    if _dim_symbol(ctx, a):
        return k
    if a.is_integer is not True or not all(_dim_symbol(ctx, s) for s in a.free_symbols):
        return 0
    b = bounds(ctx, a, guarded)
    return k if b.lo >= 0 and b.hi <= 2 * DIM_LIMIT else 0


def _mul_all(ctx, factors, guarded=False) -> Bounds:
    iv, tiny = (Fraction(1), Fraction(1)), Fraction(1)
    for a in factors:
        x = bounds(ctx, a, guarded)
        iv, tiny = _mul_iv(iv, (x.lo, x.hi)), tiny * x.tiny
    return Bounds(iv[0], iv[1], tiny)


def _ratios(ctx, factors, guarded=False):
    """The factors of a product, with each pair ``t`` and ``1 / Max(..., t, ...)`` (all
    non-negative) replaced by its bounds [0, 1]: interval arithmetic alone loses that."""
    factors = list(factors)
    for f in list(factors):
        if isinstance(f, sympy.Pow) and f.exp == -1 and isinstance(f.base, sympy.Max) \
                and all(bounds(ctx, a, guarded).lo >= 0 for a in f.base.args):
            t = next((a for a in factors if a in f.base.args), None)
            if t is not None:
                factors.remove(f)
                factors.remove(t)
                factors.append(Bounds(Fraction(0), Fraction(1), Fraction(0)))
    return factors


def in_range(ctx, r, lo, hi, guarded: bool = False) -> bool:
    """Is the integer expression ``r`` provably within [lo, hi]?  Intervals, then the
    bounds under the dim premise (``guarded``: see ``bounds``), then ``ctx.decide``
    (budgeted)."""
    if isinstance(r, int):
        return lo <= r <= hi
    a, b = ctx.store.interval(r)
    if lo <= a and b <= hi:
        return True
    bd = bounds(ctx, r, guarded)
    if lo <= bd.lo and bd.hi <= hi:
        return True
    if (a > hi or b < lo) or (bd.lo > hi or bd.hi < lo):
        return False
    if any(not _dim_symbol(ctx, s) for s in E.free_symbols(r)):
        return False      # (a value's data symbol: its bound is all there is to know)
    return ctx.decide(all_of(ge(r, lo), le(r, hi))) is Verdict.PROVEN


def nonneg(ctx, x) -> bool:
    """``x >= 0`` proven (sympy, the bounds, then ``ctx.decide`` for integer ``x``)."""
    c = _const(x)
    if c is not None:
        return c >= 0
    if getattr(x, "is_nonnegative", None) is True:
        return True
    if bounds(ctx, x).lo >= 0:
        return True
    return x.is_integer is True and ctx.decide(ge(x, 0)) is Verdict.PROVEN


# ============================================================ integers
def wrap(ctx, r, dtype):
    """The integer ``r`` as an element of integer type ``dtype``: itself where proven in
    range, else the exact wrapped value.  None stays None; too big an expression is None."""
    if r is None or dtype not in INT_RANGE:
        return r
    lo, hi = INT_RANGE[dtype]
    span = hi - lo + 1
    if isinstance(r, int):
        return (r - lo) % span + lo
    if in_range(ctx, r, lo, hi):
        return r
    out = E.add(E.mod(E.sub(r, lo), span), lo)
    return out if isinstance(out, int) or E.size(out) <= E.MAX_OPS else None


def int_div(ctx, a, b):
    """Integer ``Div``: truncation toward zero (C, onnxruntime); None when unknown.  A
    symbolic divisor is required non-zero (the node fails at run time on 0)."""
    from .printing import show
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        q = abs(a) // abs(b)
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
    if getattr(b, "is_nonnegative", None) is True:
        # a >= 0 and b >= 0: truncation is floor; the node runs only when b != 0
        ctx.require(ne(b, 0), "div.nonzero", f"integer division by {show(b)} needs a non-zero divisor")
        return E.floordiv(a, b)
    if ctx.decide(ge(b, 1)) is Verdict.PROVEN:
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
    """Division truncating toward zero: floor for a >= 0, -floor(-a / b) below."""
    return E.by_sign(a, E.floordiv(a, b), E.neg(E.floordiv(E.neg(a), b)))


def int_mod(ctx, a, b, fmod=0):
    """Integer ``Mod``: the sign of the divisor (``fmod=0``, Python ``%``) or of the
    dividend (``fmod=1``, C ``fmod``); None when unknown."""
    from .printing import show
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return None
        if fmod:
            return int(math.copysign(abs(a) % abs(b), a)) if a % b else 0
        return a % b
    if not isinstance(b, int) and getattr(b, "is_nonnegative", None) is True \
            and (isinstance(a, int) and a >= 0 or getattr(a, "is_nonnegative", None) is True):
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


def _pow(ctx, dtype, a, b):
    """``Pow`` of an integer element by a non-negative constant exponent.  onnxruntime
    computes an integer Pow through ``std::pow`` in double: exact only up to 2**53, never
    wrapped; a float result is claimed only when it is representable."""
    if not (_is_int_elem(a) and isinstance(b, int)) or isinstance(b, bool) or b < 0:
        return None
    if isinstance(a, int):
        r = a ** b if b < 64 or abs(a) <= 1 else None
    else:
        r = E.prod([a] * b) if b <= 4 else None
    if r is None:
        return None
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        return r if in_range(ctx, r, max(lo, -2 ** 53), min(hi, 2 ** 53)) else None
    return _element(r) if dtype in FLOAT_FORMATS and _representable_expr(ctx, r, dtype) else None


def _int_abs(ctx, a):
    if isinstance(a, int):
        return abs(a)
    if nonneg(ctx, a):
        return a
    na = E.neg(a)
    if nonneg(ctx, na):
        return na
    return E.by_sign(a, a, na)


def _fold(f, args):
    acc = args[0]
    for a in args[1:]:
        acc = f(acc, a)
    return acc


_INT_MATH = {
    "Add": lambda c, a, b: E.add(a, b),
    "Sub": lambda c, a, b: E.sub(a, b),
    "Mul": lambda c, a, b: E.mul(a, b),
    "Sum": lambda c, *a: _fold(E.add, a),
    "Max": lambda c, *a: _fold(E.smax, a),
    "Min": lambda c, *a: _fold(E.smin, a),
    "Neg": lambda c, a: E.neg(a),
    "Abs": lambda c, a: _int_abs(c, a),
    "Relu": lambda c, a: E.smax(a, 0),
    "Sign": lambda c, a: (a > 0) - (a < 0) if isinstance(a, int) else None,
    "Identity": lambda c, a: a,
    "Floor": lambda c, a: a,
    "Ceil": lambda c, a: a,
    "Round": lambda c, a: a,
    "Div": int_div,
}


def _int_apply(ctx, op, dtype, args, fmod):
    if not all(_is_int_elem(a) for a in args):
        return None
    if op == "Pow":
        return _pow(ctx, dtype, *args)
    if op == "Mod":
        r = int_mod(ctx, args[0], args[1], fmod)
    else:
        f = _INT_MATH.get(op)
        if f is None:
            return None
        r = f(ctx, *args)
    return wrap(ctx, r, dtype)


# ============================================================ floats: representability
def representable(q: Fraction, dtype) -> bool:
    """Is the number ``q`` a (finite) float of ``dtype``?"""
    f = FLOAT_FORMATS[dtype]
    if q == 0:
        return True
    a = abs(q)
    if a.denominator & (a.denominator - 1):
        return False                      # not dyadic
    e = _exponent(a)
    if e > f.emax:
        return False
    quantum = Fraction(2) ** (max(e, f.emin) - f.p + 1)
    return (a / quantum).denominator == 1 and a / quantum < 2 ** f.p


def _exponent(a: Fraction) -> int:
    """floor(log2(a)) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_to(q: Fraction, dtype):
    """``q`` rounded to the nearest float of ``dtype``, ties to even (IEEE 754); None
    when it overflows to inf."""
    f = FLOAT_FORMATS[dtype]
    if q == 0:
        return Fraction(0)
    a = abs(q)
    quantum = Fraction(2) ** (max(_exponent(a), f.emin) - f.p + 1)
    n = a / quantum
    k = math.floor(n)
    rest = n - k
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k % 2):
        k += 1
    r = k * quantum
    top = (2 - Fraction(2) ** (1 - f.p)) * Fraction(2) ** f.emax
    if r > top:
        return None
    return r if q > 0 else -r


def _dyadic(x):
    """(n, k) with ``x == n / 2**k``, ``n`` an integer expression, or None."""
    c = _const(x)
    if c is not None:
        if c.denominator & (c.denominator - 1):
            return None
        return c.numerator, c.denominator.bit_length() - 1
    if x.is_integer:
        return x, 0
    try:
        num, den = sympy.fraction(sympy.together(x))
    except Exception:
        return None
    if not den.is_Integer or int(den) <= 0 or int(den) & (int(den) - 1) or num.is_integer is not True:
        return None
    return E.norm(num), int(den).bit_length() - 1


def _representable_expr(ctx, x, dtype) -> bool:
    """Is the real value ``x`` (a number or an expression) provably a float of ``dtype``
    wherever it is defined?  An integer up to 2**p, or n / 2**k with |n| <= 2**p."""
    c = _const(x)
    if c is not None:
        return representable(c, dtype)
    nk = _dyadic(x)
    if nk is None:
        return False
    n, k = nk
    f = FLOAT_FORMATS[dtype]
    if k > f.p - 1 - f.emin:
        return False
    return in_range(ctx, n, -EXACT_INT[dtype], EXACT_INT[dtype], guarded=True)


def _in_normal_range(ctx, x, err, dtype) -> bool:
    """Where ``x != 0``, is ``x`` (with relative error ``err``) within the normal range of
    ``dtype`` (no overflow to inf, no subnormal), so that the relative error model holds?"""
    f = FLOAT_FORMATS[dtype]
    top = (2 - Fraction(2) ** -f.p) * Fraction(2) ** f.emax      # rounds to inf from here
    b = bounds(ctx, x, True)
    hi = max(abs(b.lo), abs(b.hi))
    if isinstance(hi, float) or hi * (1 + err) >= top:
        return False
    if b.lo == b.hi == 0:
        return True
    small = b.tiny           # the smallest magnitude of a non-zero value
    if b.lo > 0:
        small = max(small, b.lo)
    elif b.hi < 0:
        small = max(small, -b.hi)
    return err < 1 and small * (1 - err) >= Fraction(2) ** f.emin


def _finish(ctx, x, err, where, dtype, ieee=False):
    """The element of ``dtype`` for a result whose exact real value is ``x``, computed from
    inputs with relative error ``err`` (valid where ``where``), rounded once.  ``ieee``:
    the operation is correctly rounded in ``dtype`` on every runtime (float / double +, -,
    *, /)."""
    if x is None:
        return None
    if isinstance(x, sympy.Expr) and (x.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo) or x.is_real is False):
        return None
    if err == 0 and not where:
        if _representable_expr(ctx, x, dtype):
            return _element(x)
        c = _const(x)
        if c is not None and ieee and dtype in _IEEE_EXACT:
            r = round_to(c, dtype)
            return None if r is None else _element(r)
    if E.size(x) > E.MAX_OPS:
        return None
    err = (1 + err) * (1 + unit_roundoff(dtype)) - 1
    if not _in_normal_range(ctx, x, err, dtype):
        return None
    return Real(_sym(x) if isinstance(x, Fraction) else x, err, where)


# ============================================================ floats: operations
def _same_sign(ctx, xa, xb) -> bool:
    return (nonneg(ctx, xa) and nonneg(ctx, xb)) or (nonneg(ctx, -xa) and nonneg(ctx, -xb))


def _f_add(ctx, dtype, a, b, sign=1):
    (xa, ea, wa), (xb, eb, wb) = a, b
    xb = xb if sign > 0 else -xb
    if ea == 0 and eb == 0:
        e = Fraction(0)
    elif xa == 0 or xb == 0:
        e = max(ea, eb)
    elif _same_sign(ctx, xa, xb):
        e = max(ea, eb)
    else:
        return None         # a difference of inexact terms: cancellation, no relative bound
    return _finish(ctx, xa + xb, e, wa | wb, dtype, ieee=True)


def _f_mul(ctx, dtype, a, b):
    (xa, ea, wa), (xb, eb, wb) = a, b
    return _finish(ctx, xa * xb, (1 + ea) * (1 + eb) - 1, wa | wb, dtype, ieee=True)


def _divisor_where(ctx, x):
    """Conditions under which dividing by ``x`` is claimed: x != 0 proven for constants and
    for integers (``x >= 1`` for a non-negative integer expression, recorded in ``where``
    when not proven); None when no such claim can be made."""
    c = _const(x)
    if c is not None:
        return frozenset() if c != 0 else None
    nk = _dyadic(x) if not x.is_integer else (x, 0)
    if nk is None:
        return None
    n = E.to_sympy(nk[0])
    if not nonneg(ctx, n):
        return None
    if bounds(ctx, n).lo >= 1 or ctx.decide(ge(n, 1)) is Verdict.PROVEN:
        return frozenset()
    if isinstance(n, sympy.Min):
        # (min(h, w) >= 1 as h >= 1 and w >= 1: linear, cheap for the solver)
        return frozenset().union(*(_divisor_where(ctx, a) or {sympy.Ge(a, 1)} for a in n.args))
    if isinstance(n, sympy.Max) and all(nonneg(ctx, a) for a in n.args):
        return frozenset({sympy.Ge(sympy.Add(*n.args), 1)})      # (max >= 1 iff the sum is)
    return frozenset({sympy.Ge(n, 1)})


def _f_div(ctx, dtype, a, b):
    (xa, ea, wa), (xb, eb, wb) = a, b
    if eb >= 1:
        return None
    w = _divisor_where(ctx, xb)
    if w is None:
        return None
    return _finish(ctx, xa / xb, (1 + ea) / (1 - eb) - 1, wa | wb | w, dtype, ieee=True)


def _f_minmax(ctx, dtype, args, f):
    """Min / Max select one of their arguments: no rounding; the largest error of theirs
    bounds the result's (``min(a', b')`` is within ``e * |min(a, b)|`` whatever the signs)."""
    x = args[0][0]
    for a in args[1:]:
        x = f(x, a[0])
    return _element(x, max(a[1] for a in args), frozenset().union(*(a[2] for a in args)))


def _f_sum(ctx, dtype, args):
    """The sum of several float elements, in whatever order a runtime adds them: exact
    when every partial sum of any order is representable (the magnitudes sum to at most
    2**p units of the finest scale), else an enclosure when the terms share a sign."""
    if len(args) == 1:
        return _element(*args[0])
    if len(args) == 2:
        return _f_add(ctx, dtype, args[0], args[1])
    x = sympy.Add(*[a[0] for a in args])
    where = frozenset().union(*(a[2] for a in args))
    if all(a[1] == 0 and not a[2] for a in args):
        scales = [_dyadic(a[0]) for a in args]
        if all(sc is not None for sc in scales):
            k = max(sc[1] for sc in scales)
            total = sum(_magnitude(ctx, E.to_sympy(n) * 2 ** (k - kk)) for n, kk in scales)
            if total <= EXACT_INT[dtype]:
                return _element(x)
    if not (all(nonneg(ctx, a[0]) for a in args) or all(nonneg(ctx, -a[0]) for a in args)):
        return None
    # (n - 1 roundings of partial sums: _finish counts the last)
    err = (1 + max(a[1] for a in args)) * (1 + unit_roundoff(dtype)) ** (len(args) - 2) - 1
    return _finish(ctx, x, err, where, dtype)


def _magnitude(ctx, e):
    """An upper bound of |e| (a Fraction, or inf)."""
    b = bounds(ctx, e)
    return max(abs(b.lo), abs(b.hi))


def _f_abs(ctx, dtype, a):
    x, e, w = a
    if nonneg(ctx, x):
        return _element(x, e, w)
    if nonneg(ctx, -x):
        return _element(-x, e, w)
    return None


def _f_to_int_valued(ctx, dtype, a, mode):
    """Floor / Ceil / Round of a float element, the result still in ``dtype``."""
    v = _element(*a)
    r = to_integer(ctx, v, mode)
    return r


_FLOAT_OPS = {
    "Add": lambda c, dt, a, b: _f_add(c, dt, a, b),
    "Sub": lambda c, dt, a, b: _f_add(c, dt, a, b, -1),
    "Mul": _f_mul,
    "Div": _f_div,
    "Reciprocal": lambda c, dt, a: _f_div(c, dt, (sympy.Integer(1), Fraction(0), frozenset()), a),
    "Neg": lambda c, dt, a: _element(-a[0], a[1], a[2]),
    "Abs": _f_abs,
    "Identity": lambda c, dt, a: _element(*a),
    "Relu": lambda c, dt, a: _f_minmax(c, dt, [a, (sympy.Integer(0), Fraction(0), frozenset())], sympy.Max),
    "Max": lambda c, dt, *a: _f_minmax(c, dt, a, sympy.Max),
    "Min": lambda c, dt, *a: _f_minmax(c, dt, a, sympy.Min),
    "Sum": lambda c, dt, *a: _f_sum(c, dt, a),
    "Mean": lambda c, dt, *a: _f_mean(c, dt, a),
    "Floor": lambda c, dt, a: _f_to_int_valued(c, dt, a, "floor"),
    "Ceil": lambda c, dt, a: _f_to_int_valued(c, dt, a, "ceil"),
    "Round": lambda c, dt, a: _f_to_int_valued(c, dt, a, "round"),
}


def _f_mean(ctx, dtype, args):
    return mean(ctx, dtype, _f_sum(ctx, dtype, args), len(args))


def mean(ctx, dtype, total, n: int):
    """``total / n`` the way a mean is computed: a runtime may multiply by ``1 / n`` rounded
    instead of dividing, so the quotient is exact only for a power-of-two ``n``; otherwise
    it is an enclosure with both roundings."""
    s = real_of(ctx, total)
    if s is None or n < 1:
        return None
    x, err, where = s
    if n & (n - 1):
        err = (1 + err) * (1 + unit_roundoff(dtype)) - 1
    return _finish(ctx, x / n, err, where, dtype, ieee=True)


def apply(ctx, op: str, dtype, args, fmod: int = 0):
    """The element an elementwise ``op`` computes in element type ``dtype`` from the
    elements ``args`` (None when it is not known exactly: see the module docstring)."""
    if any(a is None for a in args):
        return None
    try:
        if dtype in INT_RANGE:
            return _int_apply(ctx, op, dtype, args, fmod)
        if dtype in FLOAT_FORMATS:
            if op == "Pow":
                return _pow(ctx, dtype, *args)
            if op in ("Mod", "Sign"):
                # exact integer functions of integer elements (a float Mod is exact)
                if not all(_is_int_elem(a) for a in args):
                    return None
                r = int_mod(ctx, args[0], args[1], fmod) if op == "Mod" else _INT_MATH["Sign"](ctx, *args)
                return r if r is not None and _representable_expr(ctx, r, dtype) else None
            f = _FLOAT_OPS.get(op)
            reals = [real_of(ctx, a) for a in args]
            if f is None or any(r is None for r in reals):
                return None
            return f(ctx, dtype, *reals)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError):
        return None
    return None


def reduce(ctx, op: str, dtype, row):
    """The element a reduction (``ReduceSum`` / ``ReduceProd`` / ``ReduceMax`` /
    ``ReduceMin`` / ``ReduceMean``) computes from the elements ``row`` in ``dtype``, in
    whatever order a runtime takes them; None when not known exactly."""
    if any(a is None for a in row):
        return None
    if not row:
        return {"ReduceSum": 0, "ReduceProd": 1}.get(op)
    try:
        if dtype in INT_RANGE:
            if not all(_is_int_elem(a) for a in row):
                return None
            # (integer arithmetic modulo 2**bits is associative: the order does not matter)
            f = {"ReduceSum": E.add, "ReduceProd": E.mul, "ReduceMax": E.smax, "ReduceMin": E.smin}.get(op)
            return None if f is None else wrap(ctx, _fold(f, list(row)), dtype)
        if dtype not in FLOAT_FORMATS:
            return None
        reals = [real_of(ctx, a) for a in row]
        if any(r is None for r in reals):
            return None
        if op in ("ReduceMax", "ReduceMin"):
            return _f_minmax(ctx, dtype, reals, sympy.Max if op == "ReduceMax" else sympy.Min)
        if op == "ReduceSum":
            return _f_sum(ctx, dtype, reals)
        if op == "ReduceMean":
            return mean(ctx, dtype, _f_sum(ctx, dtype, reals), len(reals))
        if op == "ReduceProd" and all(_is_int_elem(a) for a in row):
            # integer factors: every partial product divides the whole one (or is 0)
            r = _fold(E.mul, list(row))
            return r if _representable_expr(ctx, r, dtype) else None
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError):
        return None
    return None


# ============================================================ conversions
def to_integer(ctx, v, mode: str = "trunc", hint: str = "", limit=None):
    """The integer a float element converts to: ``floor`` / ``ceil`` / ``round`` (half to
    even) / ``trunc`` (a Cast to an integer type).  An exact element converts exactly; an
    inexact one (or one exact only where conditions hold) is a bounded data symbol where its
    value is provably non-negative (see the module docstring); None otherwise, and None when
    ``limit`` (lo, hi) is given and the integer is not provably within it (a Cast beyond the
    target's range is undefined behaviour)."""
    r = real_of(ctx, v)
    if r is None:
        return None
    x, err, where = r

    def ok(n, guarded=False):
        return limit is None or in_range(ctx, n, *limit, guarded=guarded)

    if _is_int_elem(v):
        return v if ok(v) else None           # (an integer-valued float: itself)
    c = _const(x)
    if c is not None and not where:
        lo, hi = _convert(c * (1 - err), mode), _convert(c * (1 + err), mode)
        if lo == hi:
            return lo if ok(lo) else None      # every value the runtimes can give converts to it
    if err == 0 and not where:
        nk = _dyadic(x)
        if nk is None:
            return None
        n, k = nk
        r = None
        if mode == "floor" or (mode == "trunc" and nonneg(ctx, n)):
            r = E.floordiv(n, 2 ** k)
        elif mode == "ceil" or (mode == "trunc" and nonneg(ctx, E.neg(n))):
            r = E.ceildiv(n, 2 ** k)
        return r if r is not None and ok(r) else None
    if err >= 1 or not nonneg(ctx, x):
        return None
    up = upper_int(ctx, x, err, mode)
    if up is None or not ok(up, bool(where)):
        return None
    up = _over_inputs(ctx, up, where)
    if where:
        # (``h + w >= 1`` says nothing more once ``h >= 1`` is there)
        where = {c for c in where if not (isinstance(c.lhs, sympy.Add) and c.rhs == 1 and
                                          any(sympy.Ge(a, 1) in where for a in c.lhs.args))}
        cond = sympy.And(*sorted(where, key=str))
        up = E.norm(sympy.Piecewise((E.to_sympy(up), cond), (sympy.Integer(INT64_MAX), True)))
    name = hint or f"{ctx.op_type.lower()}_value"
    return ctx.data_symbol(name, up, f"{ctx.op_type}: a value rounded in floating point, at most {up}")


def _over_inputs(ctx, e, where=frozenset()):
    """``e`` with each data symbol it is nondecreasing in replaced by that symbol's upper
    bound (still an upper bound, now over the input dims: what a reader can use); a guarded
    one (``_guard``) whose conditions are in ``where`` by its bound under them."""
    for _ in range(8):
        sub = {}
        for s in E.free_symbols(e):
            info = ctx.store.info(s)
            if info is None or info.kind != "data" or info.upper is None or not _nondecreasing(ctx, e, s):
                continue
            g = _guard(ctx, s)
            sub[s] = E.to_sympy(g[0] if g is not None and g[1] <= where else ctx.store.canon(info.upper))
        if not sub:
            return e
        e = E.norm(E.to_sympy(e).xreplace(sub))
    return e


def _nondecreasing(ctx, e, s) -> bool:
    """Is ``e`` provably nondecreasing in the symbol ``s``?"""
    if isinstance(e, int) or s not in e.free_symbols:
        return True
    if e == s:
        return True
    if isinstance(e, (sympy.Add, sympy.Min, sympy.Max)):
        return all(_nondecreasing(ctx, a, s) for a in e.args)
    if isinstance(e, sympy.Mul):
        return all(_nondecreasing(ctx, a, s) and bounds(ctx, a).lo >= 0 for a in e.args)
    if isinstance(e, (E.FloorDiv, E.CeilDiv)):
        return e.args[1].is_Integer and int(e.args[1]) > 0 and _nondecreasing(ctx, e.args[0], s)
    if isinstance(e, sympy.Pow):
        return e.exp.is_Integer and int(e.exp) > 0 and bounds(ctx, e.base).lo >= 0 and _nondecreasing(ctx, e.base, s)
    if isinstance(e, sympy.Piecewise):
        return all(s not in c.free_symbols and _nondecreasing(ctx, v, s) for v, c in e.args)
    return False


def _convert(q: Fraction, mode: str) -> int:
    if mode == "floor":
        return math.floor(q)
    if mode == "ceil":
        return math.ceil(q)
    if mode == "round":
        return round(q)           # (Fraction rounds half to even)
    return math.trunc(q)


def upper_int(ctx, x, err, mode="floor"):
    """An integer expression at least ``conv(v)`` for every ``v`` within ``err * x`` of
    the non-negative real ``x`` (``conv``: floor / trunc / ceil / round), or None.  The
    bound is kept linear where it can be (the store's solver is slow on divisions by
    symbols): a branch of a ``Min`` with a symbolic divisor gives way to a linear one."""
    c = _coarse(err)
    if mode == "ceil":
        base = _floor_upper(ctx, x, c)
        return None if base is None else E.add(base, 1)
    if mode == "round":
        # round(v) <= floor(v + 1/2) == floor((2*v + 1) / 2)
        base = _floor_upper(ctx, 2 * x, c)
        return None if base is None else E.floordiv(E.add(base, 1), 2)
    return _floor_upper(ctx, x, c)


def _coarse(err: Fraction) -> Fraction:
    """``1 + err`` rounded up to a short fraction ``(2**d + k) / 2**d`` (small constants
    in the bound)."""
    if err <= 0:
        return Fraction(1)
    d = max(0, math.ceil(1 / err).bit_length() + 3)
    return 1 + Fraction(math.ceil(err * 2 ** d), 2 ** d)


def _nonlinear(e) -> bool:
    """Does ``e`` divide by a symbolic term?"""
    if isinstance(e, int):
        return False
    return any(not a.args[1].is_Integer for a in e.atoms(E.FloorDiv, E.CeilDiv, E.Mod))


def _floor_upper(ctx, x, c: Fraction):
    """An integer expression >= floor(x * c) (``x`` a non-negative real expression, ``c >
    0``): Min / Max distribute (floor is monotone), a rational function becomes a floor
    division of integer expressions."""
    x = E.to_sympy(x) if not isinstance(x, Fraction) else _sym(x)
    if isinstance(x, (sympy.Min, sympy.Max)):
        parts = [_floor_upper(ctx, a, c) for a in x.args]
        if any(p is None for p in parts):
            return None
        if isinstance(x, sympy.Min) and any(not _nonlinear(p) for p in parts):
            parts = [p for p in parts if not _nonlinear(p)]     # (a Min is below each branch)
        return _fold(E.smin if isinstance(x, sympy.Min) else E.smax, parts)
    if isinstance(x, sympy.Mul):
        mm = [a for a in x.args if isinstance(a, (sympy.Min, sympy.Max))]
        if len(mm) == 1:
            rest = sympy.Mul(*[a for a in x.args if a is not mm[0]])
            if nonneg(ctx, rest):
                # rest * min(a, b) == min(rest * a, rest * b) for rest >= 0
                return _floor_upper(ctx, mm[0].func(*[rest * a for a in mm[0].args]), c)
    q = sympy.Rational(c.numerator, c.denominator)
    try:
        num, den = sympy.fraction(sympy.together(x * q))
    except Exception:
        return None
    num, den = sympy.expand(num), sympy.expand(den)
    if num.is_integer is not True or den.is_integer is not True:
        return None
    num, den = E.norm(num), E.norm(den)
    if isinstance(den, int):
        return E.floordiv(num, den) if den > 0 else None
    if not nonneg(ctx, den):
        return None
    hi = bounds(ctx, x * q, True).hi
    if not isinstance(hi, float) and hi < 2 ** 62:
        return math.floor(hi)        # a constant bound: linear, which the store handles well
    out = E.floordiv(num, den)       # (den >= 1 where the value is claimed: the Real's ``where``)
    return out if E.size(out) <= E.MAX_OPS else None


def cast(ctx, v, src, dst, hint: str = ""):
    """The element ``Cast`` gives from element ``v`` of type ``src`` to type ``dst``."""
    if v is None:
        return None
    if dst in INT_RANGE:
        if src in FLOAT_FORMATS:
            # (an integer beyond the target's range is undefined behaviour in C: not claimed)
            return to_integer(ctx, v, "trunc", hint, INT_RANGE[dst])
        return wrap(ctx, v, dst) if _is_int_elem(v) else None
    if dst in FLOAT_FORMATS:
        r = real_of(ctx, v)
        if r is None:
            return None
        x, err, where = r
        if src in FLOAT_FORMATS and src == dst:
            return v
        # a conversion rounds once (float -> float16 included: correctly rounded everywhere)
        return _finish(ctx, x, err, where, dst, ieee=err == 0 and not where)
    return None


def const_element(x, dtype):
    """The element for a constant's entry ``x`` (a Python / numpy number) of ``dtype``."""
    if dtype in FLOAT_FORMATS:
        x = float(x)
        if not math.isfinite(x):
            return None
        if x.is_integer():
            return int(x)
        return Real(_sym(Fraction(x)))
    if isinstance(x, bool):
        return x
    return int(x)
