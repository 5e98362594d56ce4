"""Explanations: conflicts in terms of constraints (and so of nodes), and minimal
cores.

A fast-path conflict (a relation false after substitution) is explained by the
constraint and the constraints behind every substitution it used (``FastPath.why``).
A constraint set aside by the solver is explained by a minimal unsat core from a
fresh *tracked* solver (``Solver(core=True)``) over its cone: the constraints
connected to it through shared symbols (tracking literals in the main solver is
about 370x slower).  ``entailment`` gives a minimal subset of candidates that
implies a relation (the findings' explanations).  Cores are computed over the
relations as written, with each symbol's domain.
"""
from __future__ import annotations

from ..constraints import Conflict, Rel
from ..lazy import sympy
from ..lazyz3 import z3
from ..printing import show
from ..z3bridge import Untranslatable
from .groups import cone
from .intervals import bounds_alone
from .solver import Solver


class Explanations:
    def __init__(self, constraints: list, conflicts: list, symbols, fast, rlimit: int, watchdog_s: float):
        self._constraints = constraints    # the store's lists: read, and conflicts appended to
        self._conflicts = conflicts
        self._symbols = symbols
        self._fast = fast
        self._rlimit = rlimit
        self._watchdog_s = watchdog_s

    def record(self, text: str, ids, detail: str = "", values=None):
        cs = [self._constraints[i] for i in sorted(ids)]
        self._conflicts.append(Conflict(text, cs, values or {}, detail))

    def fast_conflict(self, c, cr):
        """``c`` is false after substitution (``cr``): explained by ``c`` and the
        constraints behind the substitutions."""
        reason = frozenset({c.id}) | self._fast.why_rel(c.relation)
        detail = ""
        if str(cr) != str(c.relation):
            detail = f"after substitution: {cr}"
        values = {}
        if isinstance(c.relation, Rel):       # each side as written, and the value it has
            for side, val in ((c.relation.lhs, cr.lhs), (c.relation.rhs, cr.rhs)):
                values[show(side)] = show(val)
        self.record(str(c.relation), reason, detail=detail, values=values)

    def set_aside(self, c):
        """``c`` breaks the base and is set aside: explained by a minimal core of its cone."""
        core = self.core(self.cone(c), None)
        if all(x is not c for x in core):
            core = sorted(core + [c], key=lambda x: x.id)
        values = {}
        for x in core:
            if isinstance(x.relation, Rel):
                for side in (x.relation.lhs, x.relation.rhs):
                    if not isinstance(side, int):
                        v = self._fast.canon(side)
                        if v != side:
                            values[show(side)] = show(v)
        self._conflicts.append(Conflict(str(c.relation), core, values,
                                        "these constraints cannot all hold; the last one is set aside"))

    def broken(self):
        """The eliminations alone contradict the domain: nothing can be set aside."""
        cs = [c for c in self._constraints if c.status == "absorbed"]
        core = self.core(cs, None) or cs[:20]
        self._conflicts.append(Conflict(" and ".join(str(c.relation) for c in core[:6]), core, {},
                                        "these equalities cannot all hold with every dim >= 0"))

    def cone(self, c) -> list:
        """Constraints connected to ``c`` through shared symbols (absorbed ones included)."""
        live = [x for x in self._constraints if x.status in ("residual", "absorbed") and x is not c]
        return [c] + cone(live, c.relation.symbols())

    def core(self, cands, goal, fixed=None) -> list:
        """A minimal subset of ``cands`` that is unsat (goal None) or entails ``goal``,
        with every symbol's domain and the names of ``fixed`` ({name: int}) at their
        values, from a fresh tracked solver over their relations as written; [] if
        undecided."""
        sv = Solver(self._rlimit * 5, self._watchdog_s, core=True)
        terms = sv.terms
        lits = {}
        syms: set = set()
        for c in cands:
            try:
                f = terms.relation(c.relation)
            except Untranslatable:
                continue
            name = f"c{c.id}"
            lits[name] = c
            sv.track(f, name)
            syms |= c.relation.symbols()
        if goal is not None:
            try:
                sv.add(z3.Not(terms.relation(goal)))
            except Untranslatable:
                return []
            syms |= goal.symbols()
        for x in syms:
            lo = self._symbols.lower_bound(x)
            if lo is not None:
                sv.add(terms.var(x.name) >= lo)
        for name, v in (fixed or {}).items():
            sv.add(terms.var(name) == v)
        if sv.check() != z3.unsat:
            return []
        return sorted((lits[str(x)] for x in sv.unsat_core() if str(x) in lits), key=lambda c: c.id)

    def entailment(self, relation, candidates) -> list:
        """A minimal subset of ``candidates`` (constraints) that, with the domain, implies
        ``relation`` (the substitutions they rest on included); [] when they do not (or
        undecided).  One constraint that alone forces a one-symbol bound is found without
        Z3 (``_alone``); any other case asks a tracked solver for a minimal core."""
        cands = list(candidates)
        c = self._alone(relation, cands)
        if c is not None:
            return [c]
        ids = set()
        for c in cands:
            ids |= self._fast.why_rel(c.relation)
        ids |= self._fast.why_rel(relation)
        extra = [self._constraints[i] for i in sorted(ids) if self._constraints[i] not in cands]
        return self.core(cands + extra, relation)

    def _alone(self, relation, cands):
        """The first of ``cands`` that implies the bound ``relation`` (``x >= k`` or ``x <= k``)
        on its own with ``x``'s domain, shown by ``intervals.bounds_alone``, when the domain
        alone does not imply it: then it is a minimal subset (one of several, perhaps: a
        solver's core may name another).  Only a constraint over ``x``
        alone and resting on no substitution; None when there is none (or it is not shown)."""
        if not (isinstance(relation, Rel) and relation.op in (">=", "<=") and isinstance(relation.rhs, int)
                and isinstance(relation.lhs, sympy.Symbol)):
            return None
        x, k = relation.lhs, relation.rhs
        floor = self._symbols.lower_bound(x)
        if floor is None or (relation.op == ">=" and floor >= k):
            return None
        for c in cands:
            if c.relation.symbols() != {x} or self._fast.why_rel(c.relation):
                continue
            b = bounds_alone(c.relation, x, floor, self._fast.definitions)
            if b is not None and (b[0] >= k if relation.op == ">=" else b[1] <= k):
                return c
        return None
