"""Witness points: concrete assignments that satisfy every live constraint.

"Every symbol is ``v``" for ``v`` in ``WITNESS_VALUES`` (aliases by their
definitions, eliminated atoms by their values) is tried against the constraints the
store holds; each point that satisfies them is a model: a proof of satisfiability,
and a counterexample to any claim false there.  Failing to find one proves nothing.
Until the next elimination only the constraints added since are evaluated.
Varied points (``varied_truths``) move one symbol of a question away from a witness
(to an end of its interval, next to one, another witness value, or the value that
makes ``x == e`` true); each counts only where every live constraint on that symbol
holds, so it is a model too.
"""
from __future__ import annotations

import math
from collections import Counter

from .. import expr as E
from ..constraints import And, Or, Rel, _sides_of, eq, ge
from ..lazy import sympy
from .basics import holds

# "every symbol is v" points tried as models of the live constraints (Witnesses.points):
# 0 and a large value settle questions such as ``seq > 0`` or ``seq <= 128`` without Z3
WITNESS_VALUES = (0, 1, 2, 3, 64, 1000, 1024)
_VARY_ORDER = (64, 3, 1024, 2, 1000, 1, 0)      # witness points varied_truths starts from, first first
_VARY_SIZE = 4000           # a relation over bigger terms is not evaluated at varied points


class Witnesses:
    def __init__(self, constraints, symbols, fast, intervals):
        self._constraints = constraints    # the store's constraint list (read only)
        self._symbols = symbols
        self._fast = fast
        self._intervals = intervals
        self._state = None             # (canon_epoch, constraints checked, witness values) (points)
        self._rels = None              # (canon_epoch, live relations, {name: relations on it}) (varied_truths)
        # value of each expression evaluated at "every symbol is v", per v: fixed for good (an
        # alias's definition never changes), so a chain of aliases is evaluated once, not per question
        self._uniform_memo: dict = {}
        self._def_syms = ({}, Counter())   # ({alias: (definition, its symbols)}, symbol -> count)

    def points(self) -> list:
        """Values ``v`` such that "every free symbol is ``v``" (aliases by their
        definitions) satisfies every constraint the store holds.  Each one is a
        model: a proof of satisfiability, and a counterexample to any claim false
        there.  Failing to find one proves nothing."""
        n = len(self._constraints)
        state = self._state
        if state is not None and state[0] == self._fast.canon_epoch:
            # no elimination since: only the constraints added since can remove a witness
            _, checked, out = state
            if checked == n or not out:
                return out
            rels = [self._fast.canon_rel(c.relation) for c in self._constraints[checked:] if c.status == "residual"]
            out = [v for v in out if self.holds_at(rels, v)]
            self._state = (self._fast.canon_epoch, n, out)
            if self._rels is not None and self._rels[0] == self._fast.canon_epoch:
                self._rels[1].extend(rels)
            return out
        rels = [self._fast.canon_rel(c.relation) for c in self._constraints if c.status == "residual"]
        # eliminated atoms: a symbol keeps its domain through its value; an opaque
        # term's definition must hold at the point too
        for k, v in self._fast.subst.items():
            if isinstance(k, sympy.Symbol):
                lo = self._symbols.lower_bound(k)
                if lo is not None:
                    rels.append(ge(self._fast.canon(k), lo))
            else:
                rels.append(eq(E.norm(k.func(*[E.to_sympy(self._fast.canon(E.norm(a))) for a in k.args])),
                               self._fast.canon(v)))
        out = [v for v in WITNESS_VALUES if self.holds_at(rels, v)]
        self._state = (self._fast.canon_epoch, n, out)
        self._rels = (self._fast.canon_epoch, rels, {})     # (the index: varied_truths)
        return out

    _VARY_MAX = 150     # relation evaluations one question may spend on varied points

    def varied_truths(self, cr, seen: set) -> set:
        """``seen`` grown by points that vary one symbol of ``cr`` away from a witness
        point: that symbol at an end of its interval, next to one, or at another witness
        value.  A varied point counts only where every live constraint that mentions the
        symbol holds (the others hold at the witness already), so each is a model too.
        Bounded work: relations over huge terms (and, for a question without aliases, those
        through aliases) are not evaluated at moved points (the question then goes to Z3)."""
        wits = self.points()
        state = self._rels
        if not wits or state is None or state[0] != self._fast.canon_epoch:
            return seen
        _, rels, index = state
        defs = self._fast.definitions
        by_name = index.setdefault("by_name", {})
        for r in rels[index.get("n", 0):]:        # index the relations added since, once each
            syms = r.symbols()
            size = sum(E.size(x) for x in _sides_of(r))
            heavy = not syms.isdisjoint(defs.keys()) or size > _VARY_SIZE
            ns = frozenset(self._point(syms, 0)) if not heavy else frozenset(x.name for x in syms)
            for name in ns:
                by_name.setdefault(name, []).append((r, ns, heavy, size))
        index["n"] = len(rels)
        aliased = not cr.symbols().isdisjoint(defs.keys())
        if aliased:
            # past an alias (a size-capped term, such as the broadcast of a long chain): only
            # a symbol ``cr`` names itself and no alias's definition names is moved, so every
            # alias keeps its value at the uniform point and is read from that point's memo
            in_defs = self._definition_symbols()
            movable = [x for x in cr.symbols() if x not in defs and in_defs[x] <= 0]
        else:
            movable = list(cr.symbols())
        budget = self._VARY_MAX
        seen = set(seen)
        for x in self._vary_order(cr, movable, by_name):
            entries = by_name.get(x.name, ())
            info = self._symbols.symbols.get(x.name)
            # (without aliases in the question, a relation through one is not worth it; past
            # them, aliases are read from the memo and only huge relations are skipped)
            if info is None or len(entries) > self._VARY_MAX or \
                    any((n > _VARY_SIZE) if aliased else h for _, _, h, n in entries):
                continue
            mine = [r for r, _, _, _ in entries]
            cost = len(mine) + 1 + sum(n for _, _, _, n in entries) // 100     # (big terms cost more)
            names = set().union(*(ns for _, ns, _, _ in entries)) if entries else set()
            lo, hi = self._intervals.interval(x)
            cands = {w for w in WITNESS_VALUES if lo <= w <= hi}
            for end, nxt in ((lo, lo + 1), (hi, hi - 1)):
                if not math.isinf(end):
                    cands.update(w for w in (end, nxt) if lo <= w <= hi)
            for v in sorted(wits, key=_VARY_ORDER.index)[:3]:
                if v < 1 and (aliased or not self._in_domain(
                        dict.fromkeys({y.name for y in movable} | names, v), v)):
                    continue         # (a point at v >= 1 respects every domain: _in_domain)
                base = self._uniform_memo.setdefault(v, {})
                uniform = _UniformEnv(v, self._symbols.symbols)
                # x == e: x at e's value, the point where it flips to true; x <= e (< >= >):
                # x beside e's value, where it flips (``batch <= 16777216`` from Resize's
                # float32 edge: a witness value never reaches that far)
                solved = set()
                for a in _parts(cr):
                    if isinstance(a, Rel):
                        for y, e in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                            if y == x and x not in E.free_symbols(e):
                                try:     # (every leaf at v: the uniform point's memo holds)
                                    w = E.eval_int(e, uniform, defs, base)
                                except Exception:
                                    continue
                                near = (w,) if a.op in ("==", "!=") else (w - 1, w, w + 1)
                                solved.update(u for u in near if lo <= u <= hi)
                for w in sorted(solved - {v}) + sorted(cands - solved - {v}):
                    if budget <= 0:
                        return seen
                    budget -= cost
                    env = _UniformEnv(v, self._symbols.symbols, {x.name: w})   # (the others at v)
                    memo = _MovedMemo(base, x, defs, aliases_kept=aliased)
                    try:
                        if not all(holds(r, env, defs, memo) for r in mine):
                            continue
                        seen.add(bool(holds(cr, env, defs, memo)))
                    except Exception:
                        continue
                    if len(seen) == 2:
                        return seen
        return seen

    @staticmethod
    def _vary_order(cr, movable, by_name):
        """The symbols to move, in order: first a symbol that is a whole side of an ``==`` /
        ``!=`` of ``cr`` (``x == e`` flips where x is moved off e's value: one point often
        settles the question), then the one with the fewest constraints first (its moved
        points cost the least).  Lazy: the sort of a long question's symbols (a chain's
        link names every symbol below it) is made only when the first ones did not settle it."""
        sides = set()
        for a in _parts(cr):
            if isinstance(a, Rel) and a.op in ("==", "!="):
                sides.update(x for x in (a.lhs, a.rhs) if isinstance(x, sympy.Symbol))
        first = sorted((x for x in movable if x in sides), key=lambda x: x.name)
        yield from first
        done = set(first)
        yield from (x for x in sorted(movable, key=lambda x: (len(by_name.get(x.name, ())), x.name))
                    if x not in done)

    def _definition_symbols(self):
        """How many alias definitions name each symbol (a Counter, kept up to date as
        definitions are added or rewritten: each is read again only when it changed)."""
        defs = self._fast.definitions
        known, count = self._def_syms
        if len(known) > len(defs):           # (an alias dropped: read them all again)
            known.clear()
            count.clear()
        for a, d in defs.items():
            old = known.get(a)
            if old is None or old[0] is not d:
                if old is not None:
                    count.subtract(old[1])
                syms = E.free_symbols(d)
                known[a] = (d, syms)
                count.update(syms)
        return count

    def holds_at(self, rels, v) -> bool:
        """Do all ``rels`` hold at "every symbol is ``v``" (within the symbols' domains)?"""
        env = self._uniform(lambda: frozenset().union(*(r.symbols() for r in rels)), v)
        if not self._in_domain(env, v):
            return False
        memo = self._uniform_memo.setdefault(v, {})
        try:
            return all(holds(r, env, self._fast.definitions, memo) for r in rels)
        except Exception:
            return False

    def _in_domain(self, env: dict, v: int) -> bool:
        """Does "every symbol of ``env`` is ``v``" respect each symbol's domain?"""
        if v >= 1 or isinstance(env, _UniformEnv):
            return True        # (a uniform env at 0 is made only when every lower bound is 0)
        for name in env:
            info = self._symbols.symbols.get(name)
            lo = self._symbols.lower_bound(info.symbol) if info is not None else 0
            if lo is not None and lo > v:
                return False
        return True

    def _witness_points(self, syms) -> list:
        """(value, env) of each witness, over ``syms``, that respects their domains."""
        out = []
        for v in self.points():
            env = self._uniform(syms, v)
            if self._in_domain(env, v):
                out.append((v, env))
        return out

    def truths(self, cr) -> set:
        """The truth values of ``cr`` at the witness points.  The points satisfy every live
        constraint (pending ones included): {True, False} means neither proven nor
        refuted, with no solver call; {True} rules out refuting it, {False} proving it."""
        seen = set()
        for v, env in self._witness_points(cr.symbols()):
            try:
                seen.add(bool(holds(cr, env, self._fast.definitions, self._uniform_memo.setdefault(v, {}))))
            except Exception:
                pass
        return seen

    def not_static(self, e) -> bool:
        """Does ``e`` take two values at witness points (so it is not static)?"""
        vals = set()
        for v, env in self._witness_points(E.free_symbols(e)):
            try:
                vals.add(E.eval_int(e, env, self._fast.definitions, self._uniform_memo.setdefault(v, {})))
            except Exception:
                pass
        return len(vals) > 1

    def _uniform(self, syms, v):
        """The point "every leaf symbol is ``v``" as an environment: a mapping that answers
        ``v`` for every name but an alias's (evaluated from its definition), so it costs
        nothing to make (``_point`` walks every definition ``syms`` reach: a chain of n
        broadcasts made each question cost O(n)).  Under a domain with a positive lower
        bound, the point at 0 is checked leaf by leaf (``_point``); ``syms`` may be a
        function giving the symbols, called only then."""
        if v >= 1 or not self._symbols.domain.inputs_positive:
            return _UniformEnv(v, self._symbols.symbols)
        return self._point(syms() if callable(syms) else syms, v)

    def _point(self, syms, v) -> dict:
        """{name: v} for every leaf symbol ``syms`` reach (through alias definitions)."""
        defs = self._fast.definitions
        if not isinstance(syms, (set, frozenset)):
            syms = frozenset(syms)
        if syms.isdisjoint(defs):
            return {x.name: v for x in syms}      # (no alias: the symbols are the leaves)
        env: dict = {}
        todo = list(syms)
        seen = set()
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            d = self._fast.definitions.get(x)
            if d is None:
                env[x.name] = v
            else:
                todo.extend(E.free_symbols(d))
        return env


class _MovedMemo(dict):
    """Values at a point that differs from "every symbol is v" only in the symbol
    ``moved``: a term that names neither it nor an alias has its value at the uniform
    point (``base``, that point's memo), so a big term the move leaves alone is not
    evaluated again (a chain of n broadcasts made each varied point cost O(n))."""

    def __init__(self, base, moved, defs, aliases_kept=False):
        super().__init__()
        self.base, self.moved, self.defs = base, moved, defs
        self.aliases_kept = aliases_kept     # no alias's definition names ``moved``

    def get(self, e, default=None):
        hit = dict.get(self, e)
        if hit is not None:
            return hit
        syms = E.free_symbols(e) if not isinstance(e, sympy.Symbol) else frozenset((e,))
        if self.moved in syms or (not self.aliases_kept and not syms.isdisjoint(self.defs)):
            return default
        return self.base.get(e, default)


class _UniformEnv:
    """An environment where every symbol is ``v`` but aliases (those are evaluated from
    their definitions): ``Witnesses._uniform``."""

    __slots__ = ("v", "symbols", "moved")

    def __init__(self, v, symbols, moved=None):
        self.v = v
        self.symbols = symbols       # the store's name -> SymbolInfo
        self.moved = moved or {}     # {name: value} of symbols moved away from v

    def get(self, name, default=None):
        if name in self.moved:
            return self.moved[name]
        info = self.symbols.get(name)
        if info is not None and info.kind == "alias":
            return default
        return self.v


def _parts(cr) -> tuple:
    """The relations an ``Or`` / ``And`` joins, or ``cr`` alone."""
    return cr.args if isinstance(cr, (Or, And)) else (cr,)
