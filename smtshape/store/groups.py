"""Groups of symbols that constraints connect: a union-find over hashable items
(``Groups``), the cone of constraints connected to some symbols (``cone``, for
explanations), and two structural questions the result asks before any solver
question: which symbols residual constraints touch (``residual_symbols``), and
whether a group is tied only by broadcast disjunctions (``broadcast_only``).
"""
from __future__ import annotations

from functools import lru_cache

from .. import expr as E
from ..constraints import Not, Or, Rel
from ..lazy import sympy


class GroupQueries:
    """``residual_symbols`` and ``broadcast_only`` over the store's constraints, each
    memoized until the store grows (a new constraint or elimination)."""

    def __init__(self, constraints: list, symbols, fast):
        self._constraints = constraints
        self._symbols = symbols
        self._fast = fast
        self._memo: dict = {}

    def residual_symbols(self) -> frozenset:
        """Symbols (canonical) that some residual constraint mentions; cached per size."""
        key = ("residual_symbols", len(self._constraints), len(self._fast.subst))
        hit = self._memo.get("residual_symbols")
        if hit is not None and hit[1] == key:
            return hit[0]
        out: set = set()
        for c in self._constraints:
            # a data symbol's declared bound alone never makes a dim static or upgradable
            if c.status in ("residual", "undecided") and c.kind != "bound":
                if c.kind == "definition" and c.relation.lhs not in self._fast.subst:
                    continue    # an alias's own definition constrains nothing but the alias
                out |= self._fast.canon_rel(c.relation).symbols()
        for s, v in self._fast.subst.items():
            if not isinstance(v, int):
                out |= E.free_symbols(self._fast.canon(v))
            if not isinstance(s, sympy.Symbol):
                out |= E.free_symbols(self._fast.canon(s))
        res = frozenset(out)
        self._memo["residual_symbols"] = (res, key)
        return res

    def has_residual_on(self, syms) -> bool:
        return bool(self.residual_symbols() & syms)

    def broadcast_only(self, syms) -> bool:
        """True when every symbol of ``syms`` lies in a group of symbols that only
        broadcast disjunctions ``A == B or A == 1 or B == 1`` connect, with ``A``, ``B``
        built from symbols by ``Bcast`` alone.  Such a group is satisfied by every
        assignment of 1s and 2s, so no equality between different terms of it, no
        ``term == 1`` and no static value is entailed: ``Result`` skips asking Z3."""
        key = (len(self._constraints), len(self._fast.subst))
        hit = self._memo.get("broadcast_only")
        if hit is None or hit[1] != key:
            sets = Groups()
            find = sets.find
            bad: set = set()
            groups = []
            for c in self._constraints:
                if c.status not in ("residual", "undecided"):
                    continue      # eliminations show in the canonical forms (and below)
                cr = self._fast.canon_rel(c.relation)
                member = sets.union_relation(cr)
                ok = _is_broadcast_disjunction(cr) or (
                    c.kind == "definition" and isinstance(cr, Rel) and cr.op == "=="
                    and cr.lhs in self._fast.definitions and _pure_bcast(cr.rhs))
                groups.append((member, ok))
            for member, ok in groups:
                if not ok and member is not None:
                    bad.add(find(member))
            for s, v in self._fast.subst.items():
                tainted = set(E.free_symbols(self._fast.canon(v))) if not isinstance(v, int) else set()
                if not isinstance(s, sympy.Symbol):
                    tainted |= E.free_symbols(s)
                for x in tainted:
                    bad.add(find(x))
            hit = ((find, {find(b) for b in bad}, {}, set()), key)
            self._memo["broadcast_only"] = hit
        find, bad, good, yes = hit[0]   # (good: symbol -> its answer, memoized; yes: those True)
        if isinstance(syms, (set, frozenset)) and syms <= yes:
            return True                 # (a set test: a long chain's dims share most symbols)
        for s in syms:
            ok = good.get(s)
            if ok is None:
                ok = good[s] = isinstance(s, sympy.Symbol) and self._symbols.lower_bound(s) is not None \
                    and find(s) not in bad
                if ok:
                    yes.add(s)
            if not ok:
                return False
        return True


@lru_cache(maxsize=65536)
def _pure_bcast(e) -> bool:
    # (cached per node: each link of a broadcast chain is read once, not once per link above it)
    if isinstance(e, sympy.Symbol):
        return True
    return isinstance(e, E.Bcast) and all(_pure_bcast(a) for a in e.args)


def _is_broadcast_disjunction(r) -> bool:
    if not isinstance(r, Or) or len(r.args) != 3 or not all(isinstance(a, Rel) and a.op == "==" for a in r.args):
        return False
    (x, y), (p, one), (q, one2) = ((a.lhs, a.rhs) for a in r.args)
    return (one == 1 and one2 == 1 and p == x and q == y and _pure_bcast(x) and _pure_bcast(y))


class Groups:
    """Disjoint sets of hashable items (union-find with path halving): the groups of
    symbols that constraints connect.

    ``union_relation`` groups a relation's symbols through its terms: each term (a sympy
    node) is read once per ``Groups`` and remembered with one member of its group, so a
    chain whose every link holds the link below (a broadcast chain's constraints) costs
    O(1) per link, not O(its size).  A remembered member may no longer be its group's
    root after later unions; ``find`` of it is."""

    __slots__ = ("parent", "_terms")

    def __init__(self):
        self.parent: dict = {}
        self._terms: dict = {}

    def find(self, x):
        parent = self.parent
        while parent.get(x, x) is not x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    def union_all(self, items):
        """Put every item of ``items`` in one group; returns that group's representative
        (None for no items)."""
        root = None
        for x in items:
            rx = self.find(x)
            if root is None:
                root = rx
            elif rx is not root:
                self.parent[rx] = root
        return root

    def union_relation(self, rel):
        """Put every symbol of the relation ``rel`` (``constraints.Rel`` / ``Or`` / ``And``
        / ``Not``) in one group; returns a member of it (None when it has no symbol)."""
        members = [m for m in map(self._term_member, _terms_of(rel)) if m is not None]
        return self.union_all(members) if members else None

    def _term_member(self, t):
        # a symbol of the term with all of the term's symbols in its group; None if none
        if isinstance(t, int):
            return None
        memo = self._terms
        hit = memo.get(t, memo)
        if hit is not memo:
            return hit
        args = t.args
        if not args:
            syms = E.free_symbols(t)
            m = self.union_all(syms) if syms else None
        else:
            members = [x for x in map(self._term_member, args) if x is not None]
            m = self.union_all(members) if members else None
        memo[t] = m
        return m


def _terms_of(rel):
    cls = rel.__class__
    if cls is Rel:
        return (rel.lhs, rel.rhs)
    if cls is Not:
        return _terms_of(rel.arg)
    return [t for a in rel.args for t in _terms_of(a)]


def cone(constraints, symbols) -> list:
    """The constraints connected to ``symbols`` through shared symbols, in id order."""
    by_sym: dict = {}
    for c in constraints:
        for s in c.relation.symbols():
            by_sym.setdefault(s, []).append(c)
    out, seen, todo, done = [], set(), list(symbols), set()
    while todo:
        s = todo.pop()
        if s in done:
            continue
        done.add(s)
        for c in by_sym.get(s, ()):
            if c.id not in seen:
                seen.add(c.id)
                out.append(c)
                todo.extend(c.relation.symbols())
    return sorted(out, key=lambda c: c.id)
