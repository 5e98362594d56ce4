"""Case splits: PROVEN / REFUTED, without Z3, for a question whose terms branch on
``x == k``, as the dynamo exporter writes the sizes of a Reshape
(``if(seq == 0, max(1, batch), batch) == batch``, ``cap == 4`` where ``cap`` is an
alias of ``if((batch == 0) or (seq == 0), ..., 4 * batch // batch)``).

``case_verdict`` reads the question in the two cases of one condition atom
``x == k`` (``x`` a symbol, ``k`` an int) of one of its piecewise terms:

* ``x == k`` (no case when ``k`` lies outside x's interval): ``x`` is ``k`` throughout;
* ``x != k``: every condition ``x == k`` is false, ``x != k`` true, and x's interval
  loses ``k`` when ``k`` is one of its ends (``seq >= 0`` becomes ``seq >= 1``).

In each case the question is partially evaluated (``_Case``): fixed symbols are their
ints, a condition whose truth the case knows picks its branch, aliases are read
through their definitions, a ``min`` / ``max`` whose arguments the case's intervals
order is the smaller / larger one, and a division whose quotient is a constant
(``64 * seq // (16 * seq)``) is that constant when the case's intervals show the
divisor is not 0.  What remains is settled by intervals, or split again, ``DEPTH``
splits deep.  The verdict holds when every case that can happen gives it; anything
else is None, and the caller asks Z3.

Each step is exact integer reasoning over facts every model satisfies (the
intervals, the aliases' definitions), so a verdict is entailed by the base; the
backend uses one only where a witness point shows the base satisfiable.
``tests/test_store_cases.py`` checks the verdicts against brute-force enumeration.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .. import expr as E
from ..constraints import Rel, _sides_of
from ..lazy import sympy
from .basics import Verdict
from .intervals import Intervals, sign_verdict

DEPTH = 4            # splits, one inside another
MAX_SIZE = 400       # a question over bigger terms is left to Z3 (evaluating it per case costs)
MAX_DEFINITION = 200  # an alias with a bigger definition stays a symbol
MAX_TERMS = 200      # terms evaluated over all cases of one question, at most
ALLOWANCE = 20      # terms a store lets questions that case splits do not settle cost
SETTLED_BONUS = 50   # terms each settled question adds to that allowance


def case_verdict(intervals, cr, allowance: list) -> Verdict | None:
    """PROVEN / REFUTED for the canonical relation ``cr`` by case splits, or None.

    ``allowance``: [terms the caller still lets case splits evaluate], shared by its
    questions: a question that is settled costs nothing from it, one that is not costs
    the terms it evaluated (at most ``MAX_TERMS``) and one settled adds ``SETTLED_BONUS``,
    so a store whose questions case splits do not settle (a CNN's resize bounds) stops
    paying for them soon, and one whose questions they do settle keeps asking."""
    sides = _sides_of(cr)
    if allowance[0] <= 0 or sum(E.size(s) for s in sides) > MAX_SIZE or \
            not _branches(sides, intervals._fast.definitions):
        return None
    budget = [MAX_TERMS]
    start = budget[0]
    try:
        v = _verdict(_CaseIntervals(intervals), cr, DEPTH, {}, {}, budget)
    except (_NoBranch, _OverBudget, ArithmeticError, RecursionError):
        v = None          # (a division by 0 in a case: the term says nothing there; Z3 decides)
    if v is None:
        allowance[0] -= start - max(budget[0], 0)
    else:
        allowance[0] += SETTLED_BONUS
    return v


def _verdict(intervals, cr, depth: int, fixed: dict, excluded: dict, budget: list):
    """The verdict of ``cr`` where the symbols of ``fixed`` have their ints and those of
    ``excluded`` differ from each of their ints (``intervals`` already narrowed);
    ``budget``: [terms left to evaluate]."""
    r = _Case(intervals, fixed, excluded, budget).relation(cr)
    v = r.const_value()
    if v is not None:
        return Verdict.PROVEN if v else Verdict.REFUTED
    v = intervals.cheap_verdict(r)
    if v is not None or depth == 0:
        return v
    atom = _split_atom(r)
    if atom is None:
        return None
    x, k = atom
    lo, hi = intervals.interval(x)
    v = None          # (the verdict of the cases so far)
    if lo <= k <= hi:
        v = _verdict(intervals, cr, depth - 1, {**fixed, x: k}, excluded, budget)
        if v is None:
            return None       # (a case not settled settles nothing)
    if not lo == hi == k:
        narrowed = intervals
        if k == lo or k == hi:
            narrowed = _CaseIntervals(intervals, x, (k + 1, hi) if k == lo else (lo, k - 1))
        w = _verdict(narrowed, cr, depth - 1, fixed, {**excluded, x: excluded.get(x, frozenset()) | {k}}, budget)
        if w is None or (v is not None and w is not v):
            return None
        v = w
    return v


def _branches(terms, defs) -> bool:
    """Does a piecewise term occur in ``terms`` or in a definition of an alias they name
    (as ``_Case`` expands them)?  Without one there is nothing to split on."""
    todo, seen = list(terms), set()
    while todo:
        t = todo.pop()
        if isinstance(t, int):
            continue
        if E.has_piecewise(t):
            return True
        for a in E.free_symbols(t):
            d = defs.get(a)
            if d is not None and a not in seen and E.size(d) <= MAX_DEFINITION:
                seen.add(a)
                todo.append(d)
    return False


def _split_atom(r):
    """(x, k) of the first condition ``x == k`` / ``x != k`` of a piecewise term of ``r``
    (only subterms that hold a piecewise one are walked)."""
    for s in _sides_of(r):
        got = _atom_in(s) if not isinstance(s, int) and E.has_piecewise(s) else None
        if got is not None:
            return got
    return None


def _atom_in(e):
    if isinstance(e, sympy.Piecewise):
        for _, cond in e.args:
            if cond is sympy.true:
                continue
            for a in (cond,) if isinstance(cond, (sympy.Eq, sympy.Ne)) else cond.atoms(sympy.Eq, sympy.Ne):
                lhs, rhs = a.args
                if isinstance(lhs, sympy.Symbol) and rhs.is_Integer:
                    return lhs, int(rhs)
                if isinstance(rhs, sympy.Symbol) and lhs.is_Integer:
                    return rhs, int(lhs)
    for a in e.args:
        if not isinstance(a, sympy.Basic) or not a.args or not E.has_piecewise(a):
            continue
        got = _atom_in(a)
        if got is not None:
            return got
    return None


class _NoBranch(Exception):
    """A piecewise term none of whose branches can hold in this case."""


class _OverBudget(Exception):
    """The cases evaluated more terms than ``MAX_TERMS`` (deep alias chains)."""


# sympy's relation classes by name (no sympy at import) -> our operator
_OPS = {"Equality": "==", "Unequality": "!=", "GreaterThan": ">=", "StrictGreaterThan": ">",
        "LessThan": "<=", "StrictLessThan": "<"}


_FLIP = {"==": "==", "!=": "!=", ">=": "<=", ">": "<", "<=": ">=", "<": ">"}    # k op x is x flip(op) k


def _compare(interval, op: str, k: int):
    """``x op k`` for every x in ``interval``: True / False, or None when it depends."""
    lo, hi = interval
    v = sign_verdict((lo - k, hi - k), op)
    return None if v is None else v is Verdict.PROVEN


class _Case:
    """Partial evaluation of terms in one case (see the module doc)."""

    def __init__(self, intervals, fixed: dict, excluded: dict, budget: list):
        self.iv = intervals
        self.budget = budget         # [terms left], shared by the cases of one question
        self.fixed = fixed           # symbol -> int
        self.excluded = excluded     # symbol -> frozenset of ints it differs from
        self.defs = intervals._fast.definitions
        self.memo: dict = {}

    def relation(self, r):
        return r.map(lambda e: e if isinstance(e, int) else self.term(e))

    def term(self, e):
        if isinstance(e, int):
            return e
        hit = self.memo.get(e)
        if hit is None:
            self.budget[0] -= 1
            if self.budget[0] < 0:
                raise _OverBudget()
            hit = self.memo[e] = self._term(e)
        return hit

    def _term(self, e):
        if isinstance(e, sympy.Symbol):
            v = self.fixed.get(e)
            if v is not None:
                return v
            d = self.defs.get(e)
            return e if d is None or E.size(d) > MAX_DEFINITION else self.term(E.norm(d))
        if not e.args:
            return E.norm(e)
        if isinstance(e, sympy.Piecewise):
            return self._piecewise(e)
        args = [self.term(E.norm(a)) for a in e.args]
        if isinstance(e, (E.FloorDiv, E.CeilDiv)):
            q = self._constant_quotient(*args)
            if q is not None:
                if isinstance(q, Fraction):
                    return math.floor(q) if isinstance(e, E.FloorDiv) else math.ceil(q)
                return q          # (an exact quotient: both divisions give it)
        if isinstance(e, (sympy.Min, sympy.Max)):
            return self._minmax(e, args)        # (ordered by this case's intervals, changed or not)
        if all(a is b or (a.__class__ is int and a == b) for a, b in zip(args, e.args)):
            return e            # (nothing in it changed: the term as it was, no sympy rebuild)
        return self._build(e, args)

    def _piecewise(self, e):
        pairs = []
        same = True         # (every branch as it was: the term itself)
        for val, cond in e.args:
            c = self.condition(cond)
            if c is False:
                same = False
                continue
            v = self.term(E.norm(val))
            same = same and c is cond and (v is val or (v.__class__ is int and v == val))
            pairs.append((v, c))
            if c is True:
                break
        if not pairs:
            raise _NoBranch(str(e))
        first = pairs[0][0]
        if pairs[0][1] is True or all(v == first for v, _ in pairs[1:]):
            return first
        if same and len(pairs) == len(e.args):
            return e
        # (the branches dropped cannot hold here, so one of these does: the hull over
        # their values bounds the term)
        return E.raw_piecewise(*pairs)

    def condition(self, c):
        """True / False where the case decides ``c``, else the condition left (a sympy boolean)."""
        if c is True or c is sympy.true:
            return True
        if c is False or c is sympy.false:
            return False
        if isinstance(c, (sympy.Or, sympy.And)):
            parts = [self.condition(a) for a in c.args]
            win = isinstance(c, sympy.Or)
            if any(p is win for p in parts):
                return win
            rest = [p for p in parts if p is not (not win)]
            if not rest:
                return not win
            return rest[0] if len(rest) == 1 else type(c)(*rest, evaluate=False)
        if isinstance(c, sympy.Not):
            p = self.condition(c.args[0])
            return (not p) if isinstance(p, bool) else sympy.Not(p)
        op = _OPS.get(type(c).__name__)
        if op is None:
            return c
        a, b = self.term(E.norm(c.lhs)), self.term(E.norm(c.rhs))
        r = Rel(op, a, b)
        v = r.const_value()
        if v is not None:
            return v
        for x, k, flip in ((a, b, False), (b, a, True)):
            if isinstance(k, int):      # a term against an int: its interval, or the split's exclusions
                if op in ("==", "!=") and k in self.excluded.get(x, ()):
                    return op == "!="
                v = _compare(self.iv.interval(x), _FLIP[op] if flip else op, k)
                if v is not None:
                    return v
        if a is c.lhs and b is c.rhs:
            return c
        return type(c)(E.to_sympy(a), E.to_sympy(b), evaluate=False)

    def _constant_quotient(self, a, b):
        """``a / b`` when the case shows ``b >= 1`` (the divisions' domain) and it is a
        constant (``c1 * t`` over ``c2 * t``: floor / ceil of it is then the division) or
        a product of symbols (``seq * batch`` over ``batch``), else None."""
        if isinstance(b, int) or isinstance(a, int) and a != 0:
            return None
        if self.iv.interval(b)[0] < 1:
            return None
        if a == 0:
            return Fraction(0)
        ca, ra = a.as_coeff_Mul()
        cb, rb = b.as_coeff_Mul()
        if not (ca.is_Integer and cb.is_Integer and cb != 0):
            return None
        if ra == rb:
            return Fraction(int(ca), int(cb))
        if int(ca) % int(cb) == 0 and isinstance(rb, (sympy.Symbol, sympy.Mul, sympy.Pow)):
            # a product of powers of symbols divided by a product of them: exact when every
            # power of the divisor's is in the dividend (``seq * batch // batch`` is ``seq``)
            pa, pb = ra.as_powers_dict(), rb.as_powers_dict()
            if all(isinstance(f, sympy.Symbol) and n.is_Integer and n > 0 and pa.get(f, 0) >= n
                   for f, n in pb.items()) and \
                    all(isinstance(f, sympy.Symbol) and n.is_Integer and n > 0 for f, n in pa.items()):
                return E.prod([int(ca) // int(cb)] + [E.norm(f ** (n - pb.get(f, 0))) for f, n in pa.items()
                                                       if n - pb.get(f, 0) > 0])
        return None

    def _build(self, e, args):
        """``e``'s kind over new ``args`` (made as the rest of the analysis makes it; a min /
        max ordered by the case's intervals, else left unevaluated)."""
        if isinstance(e, sympy.Add):
            return E.total(args)
        if isinstance(e, sympy.Mul):
            return E.prod(args)
        if isinstance(e, (sympy.Min, sympy.Max)):
            return self._minmax(e, args)
        if isinstance(e, E.FloorDiv):
            return E.floordiv(*args)
        if isinstance(e, E.CeilDiv):
            return E.ceildiv(*args)
        if isinstance(e, E.Mod):
            return E.mod(*args)
        if isinstance(e, E.Bcast):
            return self._bcast(*args)
        return E.norm(e.func(*[E.to_sympy(a) for a in args]))

    @staticmethod
    def _bcast(a, b):
        """``a if b == 1 else b``, exactly (``E.bcast`` also reads a valid broadcast into
        it: ``bcast(0, x)`` is 0 there, which holds only where ``x`` is 0 or 1)."""
        if isinstance(b, int):
            return a if b == 1 else b
        if a == b or a == 1:
            return b
        return E.Bcast(E.to_sympy(a), E.to_sympy(b), evaluate=False)

    def _minmax(self, e, args):
        smaller = isinstance(e, sympy.Min)
        keep = []           # the arguments no other one beats for sure
        for a in args:
            alo, ahi = self.iv.interval(a)
            beaten = False
            for b in list(keep):
                blo, bhi = self.iv.interval(b)
                if (ahi <= blo) if smaller else (alo >= bhi):
                    keep.remove(b)           # a is at least as good as b everywhere
                elif (bhi <= alo) if smaller else (blo >= ahi):
                    beaten = True
                    break
            if not beaten:
                keep.append(a)
        if len(keep) == 1:
            return keep[0]
        if all(isinstance(a, int) for a in keep):
            return min(keep) if smaller else max(keep)
        return type(e)(*[E.to_sympy(a) for a in keep], evaluate=False)


class _CaseIntervals(Intervals):
    """The intervals of a case: the parent's, but where ``x`` lies in ``bounds`` (when
    given) a term with ``x`` is read again from its parts, within what the parent knows
    of it.  Its min / max come ordered already (``_Case``): verdicts read them as they
    stand."""

    def __init__(self, parent, x=None, bounds=None):
        super().__init__(parent._symbols, parent._fast)
        self._parent = parent
        self._x = x
        self._bounds = bounds

    def interval(self, e) -> tuple:
        if isinstance(e, int):
            return (e, e)
        if self._x is None or self._x not in E.free_symbols(e):
            return self._parent.interval(e)
        if e == self._x:
            return self._bounds
        hit = self._interval_cache.get(e)
        if hit is None:
            lo, hi = self._iv(e)
            plo, phi = self._parent.interval(e)
            hit = self._interval_cache[e] = (max(lo, plo), min(hi, phi))
        return hit

    def _ordered_minmax(self, e):
        return e
