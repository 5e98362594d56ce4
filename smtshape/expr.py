"""Dim expressions: the one home of the term language.

A dim expression is either a Python ``int`` (constants are kept as ints so the
common case never touches sympy) or a sympy integer expression over symbols
made by :func:`symbol`.  On top of sympy's ``+``, ``*``, ``Min``, ``Max`` and
``Piecewise`` we use four integer-exact function classes:

``FloorDiv(a, b)``  floor(a / b), rounding toward minus infinity (Python ``//``).
``CeilDiv(a, b)``   ceil(a / b), rounding toward plus infinity.
``Mod(a, b)``       a - b * FloorDiv(a, b) (Python ``%``; sign of the divisor).
``Bcast(a, b)``     the numpy broadcast of two sizes: ``a`` when ``b == 1``
                    otherwise ``b``.  Only meaningful under the constraint
                    ``a == b or a == 1 or b == 1`` that the broadcasting rule
                    emits beside it.

All four divide only by a positive divisor: the rule that builds one emits
``b > 0`` (or ``b`` is a positive constant).  They never go through rationals,
so ``FloorDiv(x, 2)`` is not ``floor(x/2)`` and costs tens of microseconds.

The helpers ``add``, ``sub``, ``mul``, ``floordiv``, ... short-cut ints and
intern results, so building the same expression twice is a dict lookup.  Sums of
linear forms (``linear_sum``), their signs (``linear_range``) and min / max of two
of them are made here as sympy would make them, without sympy's ``Add.flatten``
(whose first call imports ``sympy.tensor``: a cold start's largest cost after sympy
itself); any other term goes to sympy.

sympy is imported only when the first symbolic term is built: ``sympy`` here is a
stand-in (``lazy.py``) and the four function classes live in ``symbolic.py``, read as
``E.FloorDiv`` ... (this module's ``__getattr__`` imports it on first read).  On ints
every function here returns without touching either, so a model whose dims are all
static never imports sympy.  Invariant: a function of this module reads a sympy name
only on a path where one of its arguments is already a sympy term (or it builds a
symbol).
"""
from __future__ import annotations

from functools import lru_cache

from .lazy import sympy

# Expressions bigger than this (in operations) are replaced by a fresh symbol
# by the callers (see context.Context.cap); sympy on huge trees is ruinous.
MAX_OPS = 200
# Terms with branches (Piecewise / Min / Max) grow multiplicatively when nested
# (chained Slices with run-time bounds); they are capped much earlier.
MAX_BRANCHY_OPS = 24

_FUNCTION_CLASSES = ("FloorDiv", "CeilDiv", "Mod", "Bcast")


def __getattr__(name):
    """``E.FloorDiv``, ``E.CeilDiv``, ``E.Mod``, ``E.Bcast`` (and the type ``E.Expr``):
    imported with sympy on first read, then plain attributes of this module."""
    if name in _FUNCTION_CLASSES or name == "Expr":
        _load_classes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_classes():
    from typing import Union

    from . import symbolic
    g = globals()
    for n in _FUNCTION_CLASSES:
        g[n] = getattr(symbolic, n)
    g["Expr"] = Union[int, sympy.Expr]


@lru_cache(maxsize=None)
def relation_classes() -> tuple:
    """``((sympy.Eq, "=="), (sympy.Ne, "!="), ...)``: sympy's six comparison classes and the
    operator each is written with; the one table of them (made on first use, since reading
    sympy's classes imports sympy)."""
    return ((sympy.Eq, "=="), (sympy.Ne, "!="), (sympy.Le, "<="), (sympy.Lt, "<"), (sympy.Ge, ">="),
            (sympy.Gt, ">"))


def branchy(e) -> bool:
    return not isinstance(e, int) and _branchy(e)


@lru_cache(maxsize=65536)
def _branchy(e) -> bool:
    # from the arguments' cached answers (sympy's ``has`` walks the whole tree each time)
    return isinstance(e, (sympy.Piecewise, sympy.Min, sympy.Max)) or any(_branchy(a) for a in e.args)


def has_piecewise(e) -> bool:
    """Does ``e`` hold a ``Piecewise`` (cached per node, as ``branchy``)?"""
    return not isinstance(e, int) and _piecewise(e)


@lru_cache(maxsize=65536)
def _piecewise(e) -> bool:
    return isinstance(e, sympy.Piecewise) or any(_piecewise(a) for a in e.args)


def has_minmax(e) -> bool:
    """Does ``e`` hold a ``min`` or ``max`` (cached per node, as ``branchy``)?"""
    return not isinstance(e, int) and _minmax(e)


@lru_cache(maxsize=65536)
def _minmax(e) -> bool:
    return isinstance(e, (sympy.Min, sympy.Max)) or any(_minmax(a) for a in e.args)


def norm(e) -> Expr:
    """Integer sympy constants become Python ints; everything else unchanged."""
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Integer):
        return int(e)
    if isinstance(e, (sympy.Float, sympy.Rational)) and e.is_integer:
        return int(e)
    return e


def raw_piecewise(*pairs) -> Expr:
    """``Piecewise(*pairs)`` as it stands, the conditions kept as given.

    sympy folds every Piecewise nested in a condition into it (``piecewise_fold``, then a
    rewrite to ITE): a term exponential in the nested branches, seconds to build where the
    condition is over dims that are themselves Piecewise (a pool's output size).  The store,
    the Z3 translation and ``eval_int`` read a condition with Piecewise terms as it is."""
    from sympy.functions.elementary.piecewise import ExprCondPair
    args = tuple(sympy.Tuple.__new__(ExprCondPair, to_sympy(e), sympy.true if c is True else c) for e, c in pairs)
    return sympy.Basic.__new__(sympy.Piecewise, *args)


def is_const(e) -> bool:
    return isinstance(e, int)


def to_sympy(e):
    return sympy.Integer(e) if isinstance(e, int) else e


@lru_cache(maxsize=65536)
def symbol(name: str) -> sympy.Symbol:
    """The one constructor of dim symbols: integer and non-negative."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


@lru_cache(maxsize=65536)
def value_symbol(name: str) -> sympy.Symbol:
    """A symbol for a runtime *element value* (may be negative)."""
    return sympy.Symbol(name, integer=True)


# ---------------------------------------------------------------- builders
# Each takes ints or sympy expressions and returns norm()'d results.

def add(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return _add(a, b)


def sub(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return _sub(a, b)


def mul(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return _mul(a, b)


# sympy arithmetic costs tens of microseconds even for repeated operands; the
# same (a, b) pairs recur across layers, so results are interned here.
@lru_cache(maxsize=65536)
def _add(a, b):
    s = linear_sum(((a, 1), (b, 1)))
    return norm(to_sympy(a) + to_sympy(b)) if s is None else s


@lru_cache(maxsize=65536)
def _sub(a, b):
    s = linear_sum(((a, 1), (b, -1)))
    return norm(to_sympy(a) - to_sympy(b)) if s is None else s


def linear_sum(parts):
    """The sum of ``c * e`` over ``parts`` (``(e, c)``, ``c`` an int) as sympy's ``Add``
    makes it, the same object built without ``Add.flatten``: or None when a term is one
    ``_collect`` does not read.  (sympy's first ``Add.flatten`` in a process imports
    ``sympy.tensor``, about 60 ms of a cold start, and most models' sums are linear forms.)
    Like terms are collected, then sorted by sympy's canonical key with the constant
    first, as ``Add.flatten`` does: ``tests/test_expr.py`` checks the result against
    ``Add`` itself."""
    got = _collect(parts)
    if got is None:
        return None
    const, terms = got
    seq = []
    for t, k in terms.items():
        if k == 0:
            continue
        if k == 1:
            seq.append(t)
        elif t.is_Mul:
            seq.append(t._new_rawargs(sympy.Integer(k), *t.args))
        else:
            seq.append(sympy.Mul(sympy.Integer(k), t))
    seq.sort(key=_args_sortkey())
    if not seq:
        return const
    if const:
        seq.insert(0, sympy.Integer(const))
    if len(seq) == 1:
        return seq[0]
    return sympy.Add._exec_constructor_postprocessors(sympy.Add._from_args(seq, True))


def _collect(parts):
    """``(constant, {term: coefficient})`` of the sum of ``c * e`` over ``parts``, or None.
    The terms read: ints and Integers, and products ``k * t`` (``Mul.as_coeff_Mul``) of an
    Integer ``k`` and a term ``t`` that is no number, sum or power (a symbol, a product of
    them, FloorDiv, Min, Piecewise ...); a sum is read term by term."""
    const = 0
    terms: dict = {}
    todo = list(parts)
    while todo:
        e, c = todo.pop()
        if isinstance(e, int):
            const += c * e
            continue
        if isinstance(e, sympy.Integer):
            const += c * int(e)
            continue
        if isinstance(e, sympy.Add):
            todo += [(a, c) for a in e.args]      # (the order of collection does not show)
            continue
        if isinstance(e, sympy.Mul):
            k, t = e.as_coeff_Mul()
            if not isinstance(k, sympy.Integer):
                return None
            k = int(k)
        else:
            k, t = 1, e
        if t.is_Number or t.is_Add or t.is_Pow or not t.is_commutative or not isinstance(t, sympy.Expr):
            return None
        terms[t] = terms.get(t, 0) + c * k
    return const, terms


def linear_terms(e):
    """``(constant, {term: coefficient})`` of ``e`` read as a sum (``_collect``), or None."""
    return (e, {}) if isinstance(e, int) else _collect(((e, 1),))


def linear_range(e) -> tuple | None:
    """``(lo, hi)``, the exact range of ``e`` when it is a linear form over dim symbols
    (``symbol``: any value >= 0) and value symbols (``value_symbol``: any integer), or None
    for any other term.  The symbols are free and independent, so the range is the
    constant, widened to infinity on each side some term can move it to: ``e >= 0`` is
    provable exactly when ``lo >= 0``.  (What sympy's assumptions answer for these terms,
    without building a sum: ``tests/test_expr.py``.)"""
    return (e, e) if isinstance(e, int) else _linear_range(e)


@lru_cache(maxsize=65536)
def _linear_range(e):
    got = _collect(((e, 1),))
    if got is None:
        return None
    const, terms = got
    lo = hi = const
    for t, k in terms.items():
        if k == 0:
            continue
        kind = _symbol_kind(t)
        if kind is None:
            return None
        if kind == "value" or k < 0:
            lo = -INF
        if kind == "value" or k > 0:
            hi = INF
    return lo, hi


INF = float("inf")


def _symbol_kind(t) -> str | None:
    """"dim" for a symbol made by ``symbol``, "value" for one made by ``value_symbol``."""
    if not isinstance(t, sympy.Symbol):
        return None
    a = t.assumptions0
    if a == _dim_assumptions():
        return "dim"
    if a == _value_assumptions():
        return "value"
    return None


@lru_cache(maxsize=None)
def _dim_assumptions() -> dict:
    return symbol("_").assumptions0


@lru_cache(maxsize=None)
def _value_assumptions() -> dict:
    return value_symbol("_").assumptions0


@lru_cache(maxsize=None)
def _args_sortkey():
    from sympy.core.basic import _args_sortkey as key
    return key


@lru_cache(maxsize=65536)
def _mul(a, b):
    if isinstance(a, int) or isinstance(b, int):      # (a number times a sum distributes)
        s = linear_sum(((b, a),) if isinstance(a, int) else ((a, b),))
        if s is not None:
            return s
    return norm(to_sympy(a) * to_sympy(b))


def neg(a) -> Expr:
    if isinstance(a, int):
        return -a
    s = linear_sum(((a, -1),))
    return norm(-a) if s is None else s


def prod(items) -> Expr:
    """Product of many factors, built at once (see ``total``)."""
    items = list(items)
    const = 1
    syms = []
    for x in items:
        if isinstance(x, int):
            const *= x
        else:
            syms.append(x)
    if not syms or const == 0:
        return const
    if len(syms) == 1:
        return mul(syms[0], const)
    return norm(sympy.Mul(sympy.Integer(const), *syms))


def total(items) -> Expr:
    """Sum of many terms, built at once (adding one term at a time re-flattens the
    whole sum each time: quadratic on a Concat of thousands of inputs)."""
    items = list(items)
    const = sum(x for x in items if isinstance(x, int))
    syms = [x for x in items if not isinstance(x, int)]
    if not syms:
        return const
    if len(syms) == 1:
        return add(syms[0], const)
    s = linear_sum([(x, 1) for x in syms] + [(const, 1)])
    return norm(sympy.Add(*syms, sympy.Integer(const))) if s is None else s


@lru_cache(maxsize=65536)
def _fdiv(a, b):
    from .symbolic import FloorDiv
    return norm(FloorDiv(to_sympy(a), to_sympy(b)))


@lru_cache(maxsize=65536)
def _cdiv(a, b):
    from .symbolic import CeilDiv
    return norm(CeilDiv(to_sympy(a), to_sympy(b)))


@lru_cache(maxsize=65536)
def _mod(a, b):
    from .symbolic import Mod
    return norm(Mod(to_sympy(a), to_sympy(b)))


# Past this many operations in its two arguments, a min / max is built without sympy's
# evaluation: sympy's Min / Max compare their arguments by factoring every pair of terms
# (``_find_localzeros`` -> ``factor_terms``), seconds on the nested clamps of chained
# Slices (fcos_mnv3s_fpn spent 10 of its 14 s there); the rules that build one have asked
# the store first (``ops/slicing._min``), and a difference that is a number still decides.
_EVAL_MINMAX_OPS = 40


@lru_cache(maxsize=65536)
def _min(a, b):
    return _lattice(sympy.Min, a, b, lambda d: d >= 0)


@lru_cache(maxsize=65536)
def _max(a, b):
    return _lattice(sympy.Max, a, b, lambda d: d <= 0)


def _lattice(cls, a, b, first_if):
    sa, sb = to_sympy(a), to_sympy(b)
    if _plain(a) and _plain(b):
        # two linear forms over free symbols: ordered exactly when their difference has a
        # sign, as sympy's evaluation finds; otherwise both kept, as sympy keeps them
        lo, hi = linear_range(linear_sum(((b, 1), (a, -1))))
        if lo >= 0:                                  # a <= b
            return a if cls is sympy.Min else b
        if hi <= 0:                                  # b <= a
            return b if cls is sympy.Min else a
        return cls(sa, sb, evaluate=False)
    if size(a) + size(b) <= _EVAL_MINMAX_OPS:
        return norm(cls(sa, sb))
    d = sb - sa                     # (a number when the two differ by a constant)
    if d.is_Number:
        return norm(sa if first_if(d) else sb)
    return norm(cls(sa, sb, evaluate=False))


def _plain(e) -> bool:
    """A linear form over dim and value symbols (``linear_range`` reads it)?"""
    return linear_range(e) is not None


@lru_cache(maxsize=65536)
def _bcast(a, b):
    from .symbolic import Bcast
    return norm(Bcast(to_sympy(a), to_sympy(b)))


def floordiv(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return _fdiv(a, b)


def ceildiv(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return -((-a) // b)
    return _cdiv(a, b)


def mod(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return _mod(a, b)


def smin(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if a == b:
        return a
    return _min(a, b)


def smax(a, b) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if a == b:
        return a
    return _max(a, b)


def max_of(items) -> Expr:
    """The largest of some dims, for a bound: the numbers folded into one, each other term
    once, the rest an unevaluated ``Max`` (sympy's own Max compares every pair of its
    arguments, seconds on deep broadcast trees)."""
    nums = [int(x) for x in items if isinstance(x, int) or getattr(x, "is_Integer", False)]
    terms = list(dict.fromkeys(x for x in items if not (isinstance(x, int) or getattr(x, "is_Integer", False))))
    if nums:
        terms.append(max(nums))
    if len(terms) == 1:
        return norm(terms[0])
    return sympy.Max(*(to_sympy(t) for t in terms), evaluate=False)


def bcast(a, b) -> Expr:
    if a == b or a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return b  # caller has reported the conflict; numpy would fail here
    return _bcast(a, b)


def by_sign(x, nonneg, neg) -> Expr:
    """The term that is ``nonneg`` where ``x >= 0`` and ``neg`` elsewhere (a ``Piecewise``:
    the sign decided at run time; the rules' questions on a sign are in ``ops/values.py``)."""
    return norm(sympy.Piecewise((to_sympy(nonneg), sympy.Ge(to_sympy(x), 0)), (to_sympy(neg), True)))


def clamp(x, lo, hi) -> Expr:
    return smin(smax(x, lo), hi)


def free_symbols(e) -> frozenset:
    if isinstance(e, int):
        return frozenset()
    return _free(e)


@lru_cache(maxsize=65536)
def _free(e):
    # from the arguments' (cached) sets: O(arguments) new work per new node (sympy's
    # free_symbols walks the whole tree every time: quadratic on nested chains).  Every
    # term of the dim language (and Piecewise conditions) binds no variable, so a node's
    # free symbols are its arguments'.
    args = e.args
    if not args:
        return frozenset(e.free_symbols)
    if len(args) == 1:
        return _free(args[0])
    out = set()
    for a in args:
        out |= _free(a)
    return frozenset(out)


def size(e) -> int:
    """Number of operations in ``e`` (sympy count_ops), ints count 0."""
    if isinstance(e, int):
        return 0
    return _size(e)


@lru_cache(maxsize=65536)
def _size(e):
    # operations in the tree, counted with shared subterms cached: O(1) per new node
    # (sympy's count_ops walks the whole tree every time: quadratic on nested chains)
    if not e.args:
        return 0
    return max(len(e.args) - 1, 1) + sum(_size(a) for a in e.args)


def evaluate(e, env: dict, definitions: dict | None = None) -> int | None:
    """Evaluate ``e`` with symbol-name -> int bindings; None if not closed.

    ``definitions`` maps alias symbols (size-capped terms) to the expressions
    they stand for; an alias not bound in ``env`` is evaluated from its definition."""
    if isinstance(e, int):
        return e
    if definitions:
        env = dict(env)
        for s in free_symbols(e):
            if s.name not in env and s in definitions:
                v = evaluate(definitions[s], env, definitions)
                if v is None:
                    return None
                env[s.name] = v
    m = {s: sympy.Integer(env[s.name]) for s in free_symbols(e) if s.name in env}
    v = e.xreplace(m)
    if isinstance(v, (bool, sympy.logic.boolalg.BooleanAtom)):
        return int(bool(v))
    v = norm(v)
    if isinstance(v, int):
        return v
    try:
        v = norm(sympy.simplify(v)) if not v.free_symbols else v
    except Exception:  # pragma: no cover - defensive
        return None
    return v if isinstance(v, int) else None


class NotClosed(Exception):
    """``eval_int`` met a symbol with no value, or a division by zero."""


_REL_OPS = {"Equality": lambda a, b: a == b, "Unequality": lambda a, b: a != b,
            "LessThan": lambda a, b: a <= b, "StrictLessThan": lambda a, b: a < b,
            "GreaterThan": lambda a, b: a >= b, "StrictGreaterThan": lambda a, b: a > b}


def eval_int(e, env: dict, definitions: dict | None = None, memo: dict | None = None):
    """Evaluate ``e`` at integer point ``env`` ({name: int}) with plain Python
    integers, never building sympy terms (sympy's ``Min`` / ``Piecewise`` re-simplify
    on every rebuild).  Aliases in ``definitions`` are evaluated from them.
    Raises ``NotClosed`` for a symbol without a value or a division by zero."""
    if isinstance(e, int):
        return e
    if memo is None:
        memo = {}
    hit = memo.get(e)
    if hit is not None:
        return hit
    out = _eval_int(e, env, definitions, memo)
    memo[e] = out
    return out


def _eval_int(e, env, defs, memo):
    f = _EVAL.get(e.__class__)
    if f is None:
        f = _eval_by_kind(e)
    return f(e, env, defs, memo)


def _ev_integer(e, env, defs, memo):
    return int(e)


def _ev_symbol(e, env, defs, memo):
    v = env.get(e.name)
    if v is not None:
        return v
    if defs and e in defs:
        return eval_int(defs[e], env, defs, memo)
    raise NotClosed(e.name)


def _ev_add(e, env, defs, memo):
    out = 0
    for a in e.args:
        out += eval_int(a, env, defs, memo)
    return out


def _ev_mul(e, env, defs, memo):
    out = 1
    for a in e.args:
        out *= eval_int(a, env, defs, memo)
    return out


def _ev_pow(e, env, defs, memo):
    if e.exp.is_Integer and int(e.exp) >= 0:
        return eval_int(e.base, env, defs, memo) ** int(e.exp)
    raise NotClosed("cannot evaluate a non-integer power")


def _operands(e, env, defs, memo):
    a, b = eval_int(e.args[0], env, defs, memo), eval_int(e.args[1], env, defs, memo)
    if b == 0:
        raise NotClosed("division by zero")
    return a, b


def _ev_floordiv(e, env, defs, memo):
    a, b = _operands(e, env, defs, memo)
    return a // b


def _ev_ceildiv(e, env, defs, memo):
    a, b = _operands(e, env, defs, memo)
    return -((-a) // b)


def _ev_mod(e, env, defs, memo):
    """Python's ``%``: the sign of the divisor."""
    a, b = _operands(e, env, defs, memo)
    return a % b


def _ev_bcast(e, env, defs, memo):
    a, b = eval_int(e.args[0], env, defs, memo), eval_int(e.args[1], env, defs, memo)
    return a if b == 1 else b


def _ev_min(e, env, defs, memo):
    return min([eval_int(a, env, defs, memo) for a in e.args])


def _ev_max(e, env, defs, memo):
    return max([eval_int(a, env, defs, memo) for a in e.args])


def _ev_piecewise(e, env, defs, memo):
    for val, cond in e.args:
        if eval_cond(cond, env, defs, memo):
            return eval_int(val, env, defs, memo)
    raise NotClosed("no Piecewise branch holds")


def _ev_none(e, env, defs, memo):
    raise NotClosed(f"cannot evaluate {type(e).__name__}")


def _eval_by_kind(e):
    """The evaluator of ``e``'s class, found by isinstance and remembered in ``_EVAL``
    (sympy's integers come in several classes: One, Zero, NegativeOne, ...)."""
    from .symbolic import Bcast, CeilDiv, FloorDiv, Mod
    for kind, f in ((sympy.Integer, _ev_integer), (sympy.Symbol, _ev_symbol), (sympy.Add, _ev_add),
                    (sympy.Mul, _ev_mul), (sympy.Pow, _ev_pow), (FloorDiv, _ev_floordiv),
                    (CeilDiv, _ev_ceildiv), (Mod, _ev_mod), (Bcast, _ev_bcast), (sympy.Min, _ev_min),
                    (sympy.Max, _ev_max), (sympy.Piecewise, _ev_piecewise)):
        if isinstance(e, kind):
            break
    else:
        f = _ev_none
    _EVAL[e.__class__] = f
    return f


_EVAL: dict = {}     # class -> evaluator, filled on first sight of each class


def eval_cond(c, env, defs=None, memo=None) -> bool:
    if memo is None:
        memo = {}
    if c is True:
        return True
    if c is False:
        return False
    if c is sympy.true:
        return True
    if c is sympy.false:
        return False
    op = _REL_OPS.get(type(c).__name__)
    if op is not None:
        return op(eval_int(c.lhs, env, defs, memo), eval_int(c.rhs, env, defs, memo))
    if isinstance(c, sympy.And):
        return all(eval_cond(a, env, defs, memo) for a in c.args)
    if isinstance(c, sympy.Or):
        return any(eval_cond(a, env, defs, memo) for a in c.args)
    if isinstance(c, sympy.Not):
        return not eval_cond(c.args[0], env, defs, memo)
    if isinstance(c, sympy.ITE):
        a, b, d = c.args
        return eval_cond(b, env, defs, memo) if eval_cond(a, env, defs, memo) else eval_cond(d, env, defs, memo)
    raise NotClosed(f"cannot evaluate condition {type(c).__name__}")
