"""Intervals: what the domain, declared upper bounds and base facts say about the
range of a term, without Z3.

``interval(e)`` is (lo, hi) with +-inf for unbounded, read structurally from the
symbols' domains, data symbols' declared upper bounds and the bounds *base facts*
put on one term (``note_bounds``, called when constraints join the base, and
``note_proved`` for an answer the store proved: a symbol,
an opaque subterm, the hull over a disjunction's branches, a ``!=`` at the end of
an interval, every factor of a positive product, points cut off at a finite end).
Base facts are never retracted, so an interval, once narrowed, stays true; each
derivation is checked against brute force in ``tests/test_store_bounds.py``.
"""
from __future__ import annotations

import math

from .. import expr as E
from ..constraints import And, Not, Or, Rel
from ..lazy import sympy
from .basics import INF, Verdict, holds


class Intervals:
    def __init__(self, symbols, fast):
        self._symbols = symbols
        self._fast = fast
        self._interval_cache: dict = {}
        self.fact_lo: dict = {}           # term -> lower / upper bound stated by base facts (note_bounds)
        self.fact_hi: dict = {}

    def copy(self, symbols, fast) -> "Intervals":
        """The same base-fact bounds over ``symbols`` / ``fast`` (a fork's copies)."""
        new = Intervals(symbols, fast)
        new.fact_lo, new.fact_hi = dict(self.fact_lo), dict(self.fact_hi)
        # (the intervals known so far hold in the fork, which only adds facts; a cold cache
        # would re-read every alias chain at once, as deep as the graph: a RecursionError)
        new._interval_cache = dict(self._interval_cache)
        return new

    def _ordered_minmax(self, e):
        """``e`` with each Min / Max whose arguments the intervals order replaced by the
        smaller / larger one (``min(128, seq)`` is ``seq`` once ``seq <= 128`` is a fact)."""
        got = E.linear_terms(e)
        if got is not None and all(not E.has_minmax(a) for t in got[1] for a in t.args):
            # a sum whose min / max are its own terms: each picked, the sum made again
            # without sympy's Add (what ``replace`` below gives, at a fraction of its cost)
            const, terms = got
            s = E.linear_sum([(self._ordered(t) if isinstance(t, (sympy.Min, sympy.Max)) else t, k)
                              for t, k in terms.items()] + [(const, 1)])
            if s is not None:
                return E.norm(s)
        try:
            return E.norm(e.replace(lambda x: isinstance(x, (sympy.Min, sympy.Max)), self._ordered))
        except Exception:
            return e

    def _ordered(self, x):
        """A two-argument Min / Max ``x``: its smaller / larger argument when the intervals
        order them, else ``x``."""
        args = [E.norm(a) for a in x.args]
        if len(args) != 2:
            return x
        (alo, ahi), (blo, bhi) = self.interval(args[0]), self.interval(args[1])
        small, large = (args[0], args[1]) if ahi <= blo else (args[1], args[0]) if bhi <= alo else (None, None)
        if small is None:
            return x
        return E.to_sympy(small if isinstance(x, sympy.Min) else large)

    def interval(self, e) -> tuple:
        """(lo, hi) with +-inf for unbounded; from the domain, declared upper bounds and base facts."""
        if isinstance(e, int):
            return (e, e)
        hit = self._interval_cache.get(e)
        if hit is None:
            hit = self._iv(e)
            if self.fact_lo or self.fact_hi:
                lo, hi = hit       # a base fact about this very term (note_bounds)
                hit = (max(lo, self.fact_lo.get(e, lo)), min(hi, self.fact_hi.get(e, hi)))
            self._interval_cache[e] = hit
        return hit

    def _iv(self, e):
        if isinstance(e, sympy.Integer):
            return (int(e), int(e))
        if isinstance(e, sympy.Symbol):
            if e in self._fast.definitions:
                return self.interval(E.norm(self._fast.definitions[e]))
            lo = self._symbols.lower_bound(e)
            info = self._symbols.info(e)
            hi = INF
            if info is not None and isinstance(info.upper, int):
                hi = info.upper
            lo = -INF if lo is None else lo
            return (lo, hi)
        if isinstance(e, sympy.Add):
            lo, hi = 0, 0
            for a in e.args:
                x, y = self.interval(E.norm(a))
                lo, hi = lo + x, hi + y
            return (lo, hi)
        if isinstance(e, sympy.Mul):
            acc = (1, 1)
            for a in e.args:
                acc = _imul(acc, self.interval(E.norm(a)))
            return acc
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
            b = self.interval(E.norm(e.base))
            acc = (1, 1)
            for _ in range(min(int(e.exp), 16)):
                acc = _imul(acc, b)
            if int(e.exp) % 2 == 0:
                acc = (max(acc[0], 0), acc[1])
            return acc
        if isinstance(e, (E.FloorDiv, E.CeilDiv)):
            a = self.interval(E.norm(e.args[0]))
            b = self.interval(E.norm(e.args[1]))
            if b[0] >= 1:
                q = [x / y for x in a for y in b if not (math.isinf(x) and math.isinf(y))]
                if not q:
                    return (-INF, INF)
                return (math.floor(min(q)) if not math.isinf(min(q)) else min(q),
                        math.ceil(max(q)) if not math.isinf(max(q)) else max(q))
            return (-INF, INF)
        if isinstance(e, E.Mod):
            b = self.interval(E.norm(e.args[1]))
            if b[0] >= 1:
                return (0, b[1] - 1)
            return (-INF, INF)
        if isinstance(e, (E.Bcast, sympy.Piecewise)):
            vals = e.args if isinstance(e, E.Bcast) else [v for v, _ in e.args]
            ivs = [self.interval(E.norm(v)) for v in vals]
            return (min(i[0] for i in ivs), max(i[1] for i in ivs))
        if isinstance(e, (sympy.Min, sympy.Max)):
            ivs = [self.interval(E.norm(v)) for v in e.args]
            f = min if isinstance(e, sympy.Min) else max
            return (f(i[0] for i in ivs), f(i[1] for i in ivs))
        return (-INF, INF)

    def verdict(self, r) -> Verdict | None:
        if isinstance(r, Rel):
            d = E.sub(r.lhs, r.rhs)
            if E.has_minmax(d):
                d = self._ordered_minmax(d)
            return sign_verdict(self.interval(d), r.op)
        if isinstance(r, Not):
            v = self.verdict(r.arg)
            return None if v is None else (Verdict.REFUTED if v is Verdict.PROVEN else Verdict.PROVEN)
        if isinstance(r, (Or, And)):
            vs = [self.verdict(a) for a in r.args]
            win, lose = (Verdict.PROVEN, Verdict.REFUTED) if isinstance(r, Or) else (Verdict.REFUTED, Verdict.PROVEN)
            if any(v is win for v in vs):
                return win
            if all(v is lose for v in vs):
                return lose
        return None

    def cheap_verdict(self, cr) -> Verdict | None:
        """What intervals and the case split settle, without witnesses or Z3."""
        iv = self.verdict(cr)
        if iv is None and isinstance(cr, Or) and self._case_proven(cr):
            return Verdict.PROVEN
        return iv

    def _case_proven(self, r: Or) -> bool:
        """``x != c or B`` holds when ``B`` with ``x := c`` does (the only case where
        the first branch fails), shown by constants or intervals: ``batch != 0 or
        64*batch*seq // (16*seq) == 0`` is ``0 == 0`` at ``batch = 0``."""
        for a in r.args:
            if not (isinstance(a, Rel) and a.op == "!=" and isinstance(a.rhs, int)
                    and isinstance(a.lhs, sympy.Symbol)):
                continue
            x, c = a.lhs, sympy.Integer(a.rhs)
            rest = tuple(b.map(lambda e, x=x, c=c: e if isinstance(e, int) else E.norm(e.xreplace({x: c})))
                         for b in r.args if b is not a)
            if not rest:
                continue
            b = rest[0] if len(rest) == 1 else Or(rest)
            if b.const_value() is True or self.verdict(b) is Verdict.PROVEN:
                return True
        return False

    def note_bounds(self, joined):
        """Bounds that constraints which just joined the base put on one term: a symbol
        (``seq >= 1``, ``seq <= 128``), an opaque subterm (``samples // 20 - 1 > 0``
        bounds ``samples // 20``), the hull over a disjunction's branches (the broadcast
        disjunction ``seq == min(128, seq) or seq == 1 or min(128, seq) == 1`` gives
        ``seq <= 128``), a ``!=`` at the end of an interval (``seq != 0`` with ``seq >= 0``),
        and every factor of a positive product.  They tighten ``interval``.  Base facts
        are never retracted, so intervals built on them stay true."""
        for c in joined:
            self.note_fact(self._fast.canon_rel(c.relation))

    def note_fact(self, r, clear: bool = True):
        """The bounds one canonical relation that holds in every model of the base puts
        on one term (``note_bounds``; ``note_proved``).  ``clear``: a narrowed bound drops
        every cached interval (else only the bounded term's)."""
        if isinstance(r, Rel) and r.op == "!=":
            b = _linear_bound(r.lhs, r.rhs, "==")
            if b is not None and b is not _FALSE:
                (t, (v, _)), = b.items()
                lo, hi = self.interval(t)
                if v == lo:
                    self._tighten(t, v + 1, INF, clear)
                elif v == hi:
                    self._tighten(t, -INF, v - 1, clear)
            return
        if isinstance(r, Rel) and r.op in (">=", ">"):
            self._note_positive_product(r, clear)
        b = _fact_bounds(r)
        if b is not None and b is not _FALSE:
            for t, (lo, hi) in b.items():
                self._tighten(t, lo, hi, clear)
        if isinstance(r, Rel):
            self._scan_bounds(r, clear)

    def note_proved(self, r):
        """``note_fact`` for an answer the store proved (it holds in every model of the
        base, as a base fact does): the bounds reach the terms they are about at once;
        intervals read off those terms before stay as they were (wider, still true) until
        a base fact clears them, so a proof does not make every interval be read again."""
        self.note_fact(r, clear=False)

    def _tighten(self, t, lo, hi, clear: bool = True):
        """Record ``lo <= t <= hi`` (a consequence of base facts); through a division by a
        positive integer, its dividend too (``x // 5 >= 4`` is ``x >= 20``)."""
        changed = False
        if lo > self.fact_lo.get(t, -INF):
            self.fact_lo[t] = lo
            changed = True
        if hi < self.fact_hi.get(t, INF):
            self.fact_hi[t] = hi
            changed = True
        if changed:
            if clear:
                self._interval_cache.clear()     # (every interval may rest on this term's)
            else:
                self._interval_cache.pop(t, None)
            if isinstance(t, (E.FloorDiv, E.CeilDiv)) and t.args[1].is_Integer and int(t.args[1]) > 0:
                k = int(t.args[1])
                x = E.norm(t.args[0])
                if not isinstance(x, int):
                    if isinstance(t, E.FloorDiv):      # x // k >= lo  <=>  x >= lo*k
                        xlo, xhi = lo * k, hi * k + k - 1
                    else:                              # ceil(x / k) >= lo  <=>  x >= (lo-1)*k + 1
                        xlo, xhi = (lo - 1) * k + 1, hi * k
                    self._tighten(x, xlo, xhi, clear)  # (+-inf stay +-inf)

    _SCAN = 8       # points tried at each end of a one-symbol fact's interval

    def _scan_bounds(self, r, clear: bool = True):
        """A fact over one symbol ``x`` whose interval has a finite end: the points at
        that end where the fact fails (at most ``_SCAN``, each evaluated exactly) are
        cut off (``seq // 2 + 1 <= seq`` with ``seq >= 0`` fails at 0: ``seq >= 1``)."""
        syms = r.symbols()
        if len(syms) != 1 or E.size(r.lhs) + E.size(r.rhs) > 16:
            return                # (big terms: too dear to evaluate point by point)
        x, = syms
        if not isinstance(x, sympy.Symbol) or x in self._fast.definitions:
            return
        lo, hi = self.interval(x)
        for end, step in ((lo, 1), (hi, -1)):
            if math.isinf(end):
                continue
            v = end
            for _ in range(self._SCAN):
                if not lo <= v <= hi:
                    return                # (the fact fails everywhere scanned: Z3 will say so)
                try:
                    ok = holds(r, {x.name: v}, self._fast.definitions)
                except Exception:
                    break
                if ok:
                    if v != end:
                        if step == 1:
                            self._tighten(x, v, INF, clear)
                        else:
                            self._tighten(x, -INF, v, clear)
                        lo, hi = self.interval(x)
                    break
                v += step

    def _note_positive_product(self, r, clear: bool = True):
        """``c * x * y * ... >= b`` with ``b >= 1``, ``c > 0`` and every factor a symbol of a
        non-negative domain: each factor is >= 1."""
        d = E.sub(r.lhs, r.rhs)
        if isinstance(d, int):
            return
        k, rest = sympy.sympify(d).as_coeff_Add()
        coef, prod = rest.as_coeff_Mul()
        if not (k.is_Integer and coef.is_Integer and int(coef) > 0 and isinstance(prod, (sympy.Mul, sympy.Pow))):
            return
        b = {">=": 0, ">": 1}[r.op]
        if b - int(k) < 1:
            return
        bases = []
        for f in sympy.Mul.make_args(prod):
            base = f.base if isinstance(f, sympy.Pow) and f.exp.is_Integer and f.exp > 0 else f
            if not isinstance(base, sympy.Symbol) or (self._symbols.lower_bound(base) or -1) < 0:
                return
            bases.append(base)
        for base in bases:
            self._tighten(base, 1, INF, clear)


def sign_verdict(interval, op: str) -> Verdict | None:
    """``d op 0`` for every ``d`` in ``interval``: PROVEN, REFUTED, or None when it depends."""
    lo, hi = interval
    if op in (">=", "<=", ">", "<"):
        if op in ("<=", "<"):
            lo, hi = -hi, -lo
            op = ">=" if op == "<=" else ">"
        if (lo >= 0) if op == ">=" else (lo > 0):
            return Verdict.PROVEN
        if (hi < 0) if op == ">=" else (hi <= 0):
            return Verdict.REFUTED
        return None
    if lo > 0 or hi < 0:
        return Verdict.REFUTED if op == "==" else Verdict.PROVEN
    if lo == hi == 0:
        return Verdict.PROVEN if op == "==" else Verdict.REFUTED
    return None


_FALSE = object()      # (_fact_bounds: a relation no integer point satisfies)


def bounds_alone(r, x, floor: int, definitions) -> tuple | None:
    """``(lo, hi)``: bounds that relation ``r`` over the one symbol ``x`` forces on ``x``
    with the domain ``x >= floor`` and no other fact; None when ``r`` cannot hold there
    or is not one this reads.  The steps ``note_bounds`` takes for one fact, from the
    domain's interval alone: the bounds ``r`` puts on ``x`` (a disjunction by the hull of
    its branches), a ``!=`` at the domain's end, and the points at the low end where
    ``r`` fails, each evaluated exactly (at most ``_SCAN``).  Each end is entailed by
    ``r`` and the domain (sound), perhaps not the tightest.  The findings' explanations
    use it to show that one constraint alone forces a bound, without Z3."""
    if r.symbols() != {x}:
        return None
    lo, hi = floor, INF
    if isinstance(r, Rel) and r.op == "!=":
        b = _linear_bound(r.lhs, r.rhs, "==")
        if b is not None and b is not _FALSE:
            (t, (v, _)), = b.items()
            if t == x and v == lo:
                lo += 1
    else:
        b = _fact_bounds(r)
        if b is _FALSE:
            return None
        if b and x in b:
            lo, hi = max(lo, b[x][0]), min(hi, b[x][1])
    for _ in range(Intervals._SCAN):
        if lo > hi:
            return None
        try:
            ok = holds(r, {x.name: lo}, definitions)
        except Exception:
            return None
        if ok:
            break
        lo += 1                   # (r fails at lo: every point below the next is cut off)
    return lo, hi


def _fact_bounds(r):
    """{term: (lo, hi)} that relation ``r`` (canonical) forces, for the terms it bounds
    on its own; ``_FALSE`` when it cannot hold; None when it bounds nothing."""
    if isinstance(r, Rel):
        if r.op in ("==", ">=", ">", "<=", "<"):
            b = _linear_bound(r.lhs, r.rhs, r.op)
            if r.op == "==" and b is not _FALSE:
                m = _minmax_bound(r.lhs, r.rhs)       # (both hold: min(128, seq) == 1 bounds
                if m is _FALSE or not b:              # the min term and seq)
                    return m if m is not None else b
                if m:
                    b = {**b, **m}
            return b
        return None
    if isinstance(r, And):
        out: dict = {}
        for a in r.args:
            b = _fact_bounds(a)
            if b is _FALSE:
                return _FALSE
            for t, (lo, hi) in (b or {}).items():
                olo, ohi = out.get(t, (-INF, INF))
                out[t] = (max(lo, olo), min(hi, ohi))
        return out or None
    if isinstance(r, Or):
        out = None
        for a in r.args:
            b = _fact_bounds(a)
            if b is _FALSE:
                continue            # this branch never holds: the others decide
            if not b:
                return None         # a branch bounding nothing: the disjunction neither
            if out is None:
                out = dict(b)
                continue
            out = {t: (min(lo, b[t][0]), max(hi, b[t][1])) for t, (lo, hi) in out.items() if t in b}
            if not out:
                return None
        return _FALSE if out is None else out
    return None


def _linear_bound(lhs, rhs, op):
    """``c*t + k op 0`` for one non-constant term ``t`` and integers ``c != 0``, ``k``:
    {t: (lo, hi)} (every dim term is integer-valued), ``_FALSE`` or None."""
    d = E.sub(lhs, rhs)
    if isinstance(d, int):
        return None if _OPS_INT[op](d) else _FALSE
    k, rest = sympy.sympify(d).as_coeff_Add()
    coef, t = rest.as_coeff_Mul()
    if not (k.is_Integer and coef.is_Integer) or t.is_number or isinstance(t, sympy.Add):
        return None
    k, c = int(k), int(coef)
    # c*t >= -k  (or > / <= / < / ==)
    if op == "==":
        if (-k) % c:
            return _FALSE
        v = -k // c
        return {t: (v, v)}
    if op in ("<=", "<"):          # c*t + k <= 0  <=>  (-c)*t - k >= 0
        c, k = -c, -k
        op = ">=" if op == "<=" else ">"
    need = -k + (1 if op == ">" else 0)          # c*t >= need
    if c > 0:
        return {t: (-(-need // c), INF)}        # t >= ceil(need / c)
    return {t: (-INF, need // c)}             # c < 0: t <= floor(need / c)


def _minmax_bound(lhs, rhs):
    """Bounds from ``min(p, q) == p`` (``p <= q``) and ``min(c, t) == k`` (``t == k`` when
    ``c > k``, ``t >= k`` when ``c == k``), and the same for ``max``; with one side a
    two-argument Min / Max and the bound on a term against an integer."""
    for a, b in ((lhs, rhs), (rhs, lhs)):
        if not isinstance(a, (sympy.Min, sympy.Max)) or len(a.args) != 2:
            continue
        is_min = isinstance(a, sympy.Min)
        p, q = (E.norm(x) for x in a.args)
        if isinstance(p, int) and not isinstance(q, int):
            p, q = q, p                          # q: the integer, when there is one
        if not isinstance(q, int):
            continue
        if b == p:                               # min(p, c) == p  <=>  p <= c
            return {p: (-INF, q)} if is_min else {p: (q, INF)}
        if isinstance(b, int):                   # min(p, c) == k
            if (q < b) if is_min else (q > b):
                return _FALSE
            if q == b:
                return {p: (b, INF)} if is_min else {p: (-INF, b)}
            return {p: (b, b)}
    return None


_OPS_INT = {"==": lambda d: d == 0, ">=": lambda d: d >= 0, ">": lambda d: d > 0,
            "<=": lambda d: d <= 0, "<": lambda d: d < 0}


def _imul(a, b):
    vals = []
    for x in a:
        for y in b:
            if x == 0 or y == 0:
                vals.append(0)
            else:
                vals.append(x * y)
    return (min(vals), max(vals))
