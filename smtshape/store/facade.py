"""``Store``: the constraint store as rules, results and findings see it (one
facade over the parts of this package, see ``__init__``)."""
from __future__ import annotations

import math

from .. import expr as E
from ..constraints import Constraint, Provenance, Rel, Relation, eq, ge, le
from ..lazy import sympy
from .backend import Backend, smtlib
from .basics import Verdict
from .explain import Explanations
from .fastpath import FastPath
from .groups import GroupQueries
from .intervals import Intervals
from .solver import Budget, GroupSolver
from .symbols import Domain, SymbolInfo, Symbols
from .witness import Witnesses


class Store:
    """Symbols, constraints with their status, and answers: ``declare``, ``add``,
    ``decide`` (PROVEN / REFUTED / UNKNOWN), ``static_value``, ``check`` (True / False /
    None), ``fork``, explanations and the SMT-LIB export.

    Each constraint's ``status`` says what became of it: ``trivial`` / ``duplicate``
    (nothing to keep), ``absorbed`` (an elimination of the fast path), ``residual``
    (pending, then in the base), ``conflict`` (set aside, explained in ``conflicts``) or
    ``undecided`` (set aside, listed in ``undecided``).  The parts are made and wired in
    ``_assemble`` only: a new store and a fork differ only in the parts they are given."""

    def __init__(self, domain: Domain | None = None, rlimit: int = 2_000_000, watchdog_s: float = 10.0):
        domain = Domain() if domain is None else domain
        symbols = Symbols(domain)
        fast = FastPath(symbols)
        self._assemble(domain, rlimit, watchdog_s, Budget(), symbols, fast, Intervals(symbols, fast),
                       [], [], [], {}, is_fork=False, broken=False)

    def _assemble(self, domain, rlimit, watchdog_s, budget, symbols, fast, intervals,
                  constraints, conflicts, undecided, residual_seen, *, is_fork, broken):
        self.domain = domain
        self.rlimit = rlimit               # Z3 resource limit of one check
        self.watchdog_s = watchdog_s       # wall-clock limit of one check (the watchdog)
        self.budget = budget               # optional solver work, shared with the findings
        self.is_fork = is_fork
        self.constraints: list[Constraint] = constraints
        self.conflicts: list = conflicts
        self.undecided: list[Constraint] = undecided
        self._residual_seen: dict = residual_seen     # canonical relation -> its first constraint
        self._symbols, self._fast, self._intervals = symbols, fast, intervals
        self._explain = Explanations(constraints, conflicts, symbols, fast, rlimit, watchdog_s)
        self._groups = GroupQueries(constraints, symbols, fast)
        self._witnesses = Witnesses(constraints, symbols, fast, intervals)
        self._backend = Backend(undecided, symbols, fast, intervals, self._witnesses, self._explain, budget,
                                rlimit, watchdog_s, enabled=not is_fork, broken=broken)
        self._exported_solver = None
        # the hottest reads go straight to their part (no call through the facade): its
        # methods, and its tables (dicts a part never replaces)
        self.canon = fast.canon
        self.canon_rel = fast.canon_rel
        self.info = symbols.info
        self.interval = intervals.interval
        self.lower_bound = symbols.lower_bound
        self.symbols: dict[str, SymbolInfo] = symbols.symbols
        self.reserved: set[str] = symbols.reserved     # user names that generated names must avoid
        self.subst: dict = fast.subst                   # eliminated atom -> its value (canon resolves it)
        self.reasons: dict = fast.reasons               # eliminated atom -> ids of the constraints behind it
        self.definitions: dict = fast.definitions       # alias symbol -> the expression it stands for
        # changes with every elimination, unique across stores and forks: the fast path's,
        # copied here after each call that eliminates (only ``_absorb`` and ``_restate`` do)
        self.canon_epoch: int = fast.canon_epoch

    def fork(self) -> "Store":
        """A private copy for a subgraph that may not run: same facts, its own additions.
        The fast path, intervals and symbols are copied; the backend is a fresh, disabled
        scope: a fork answers from the fast path and intervals, and never makes a solver."""
        new = Store.__new__(Store)
        symbols = self._symbols.copy()
        fast = self._fast.copy(symbols)
        new._assemble(self.domain, self.rlimit, self.watchdog_s, self.budget.copy(), symbols, fast,
                      self._intervals.copy(symbols, fast), list(self.constraints), list(self.conflicts),
                      list(self.undecided), dict(self._residual_seen), is_fork=True, broken=self.broken)
        return new

    def adopt_names(self, fork: "Store"):
        """Declare the symbols a fork made (no facts), so names never collide and values
        from the fork stay readable (their dims are UNKNOWN here)."""
        self._symbols.adopt_names(fork._symbols, self.declare)

    # ------------------------------------------------------------ symbols
    def fresh_name(self, hint: str) -> str:
        return self._symbols.fresh_name(hint)

    def declare(self, name: str, kind: str, origin: Provenance, *, generated=False, upper=None) -> sympy.Symbol:
        s, new = self._symbols.declare(name, kind, origin, generated, upper)
        if new and upper is not None:
            self.add(le(s, upper), origin, kind="bound")
        return s

    def new_data(self, hint: str, origin: Provenance, upper=None) -> sympy.Symbol:
        return self.declare(self.fresh_name(hint), "data", origin, generated=True, upper=upper)

    def input_symbols(self) -> list[SymbolInfo]:
        return self._symbols.input_symbols()

    def alias(self, e, origin: Provenance):
        """A symbol standing for the (too big) expression ``e``.

        Its definition ``s == e`` is a constraint (kind ``definition``) that the
        fast path never absorbs, so later rules work on the small symbol; ``Result``
        expands it back at the end (``definitions``), so exactness is not lost."""
        hit = self._fast.alias_of.get(e)
        if hit is not None:
            return hit
        s = self.declare(self.fresh_name("cap"), "alias", origin, generated=True)
        self._fast.define(s, e)
        self.add(eq(s, e), origin, kind="definition", absorb=False)
        return s

    # ------------------------------------------------------------ the fast path
    def why(self, e) -> frozenset:
        """Constraint ids behind the substitutions ``canon(e)`` uses."""
        return self._fast.why(e)

    # ------------------------------------------------------------ adding
    def add(self, relation: Relation, prov: Provenance, kind: str = "rule", absorb: bool = True) -> Constraint:
        c = Constraint(len(self.constraints), relation, prov, kind)
        self.constraints.append(c)
        if relation.__class__ is Rel and relation.lhs.__class__ is int and relation.rhs.__class__ is int:
            cr = relation          # two numbers (a static model's checks): nothing to canonicalize
        else:
            cr = self.canon_rel(relation)
            first = self._residual_seen.get(cr)
            if first is not None and first.status == "residual":
                c.status = "duplicate"      # the same canonical fact is already in the store
                return c
        v = cr.const_value()
        if v is True:
            c.status = "trivial"
            return c
        if v is False:
            c.status = "conflict"
            self._explain.fast_conflict(c, cr)
            return c
        if absorb and isinstance(cr, Rel) and cr.op == "==" and self._absorb(c, cr):
            return c
        first = self._residual_seen.get(cr)
        if first is not None and first.status == "residual":
            c.status = "duplicate"      # the same canonical fact is already in the store
            return c
        self._residual_seen[cr] = c
        c.status = "residual"
        self._backend.pending.append(c)
        return c

    def _absorb(self, c: Constraint, cr: Rel) -> bool:
        """Eliminate an atom of the equality ``cr`` (``FastPath.choose``), if it has one."""
        d = E.sub(cr.lhs, cr.rhs)
        if isinstance(d, int):
            return False
        pick = self._fast.choose(d)
        if pick is None:
            return False
        s, value = pick
        reason = frozenset({c.id}) | self._fast.why_rel(c.relation)
        lo = self.lower_bound(s) if isinstance(s, sympy.Symbol) else None
        if isinstance(value, int) and lo is not None and value < lo:
            c.status = "conflict"
            self._explain.record(f"{s.name} == {value}", reason,
                                 detail=f"{s.name} would be {value}, below its domain's bound {lo}")
            return True
        rekey = self._fast.eliminate(s, value, reason)
        self.canon_epoch = self._fast.canon_epoch
        for key in rekey:
            self._restate(key)
        self._backend.pending_elims.append(s)
        c.status = "absorbed"
        if lo is not None and self.interval(value)[0] < lo and not self._backend.fed(s):
            # the eliminated symbol's domain moves onto its value: a constraint of its own,
            # so that Z3 can set it aside if it is what breaks consistency
            self.add(ge(value, lo), c.provenance, kind="derived", absorb=False)
        return True

    def _restate(self, key):
        """A compound atom whose arguments changed: restate ``key == value`` in canonical form."""
        got = self._fast.unkey(key)
        if got is None:
            return
        self.canon_epoch = self._fast.canon_epoch
        value, reason = got
        ids = sorted(reason)
        prov = self.constraints[ids[0]].provenance if ids else Provenance("", "domain", "congruence", "")
        self.add(eq(key, value), prov, kind="derived")

    # ------------------------------------------------------------ answers
    def decide(self, relation: Relation, use_z3: bool = True, optional: bool = False) -> Verdict:
        """PROVEN / REFUTED / UNKNOWN for a relation under all constraints.

        Fast path and intervals first; then the backend (witness points, Z3 on a base
        known to be satisfiable).  UNKNOWN whenever Z3 is off, gave up, or the store is
        broken.  ``optional``: a question the analysis can do without, paid from the
        shared budget (past it: UNKNOWN)."""
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is True:
            return Verdict.PROVEN
        if v is False:
            return Verdict.REFUTED
        iv = self._intervals.cheap_verdict(cr)
        if iv is not None:
            return iv
        if not use_z3:
            return Verdict.UNKNOWN
        return self._backend.decide(cr, optional)

    def truths(self, relation: Relation) -> set:
        """The truth values ``relation`` takes at models of every live constraint the store
        knows without a solver call (witness points, points varied from them, Z3's models
        of a base with nothing pending), each evaluated exactly.  ``{True, False}``: true
        for some inputs the constraints allow and false for others (``Result.prove``'s
        CONTINGENT); fewer values say nothing."""
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is not None:
            return {bool(v)}
        return self._backend.truths(cr)

    def static_value(self, e, optional: bool = False):
        """The int ``e`` must equal under the constraints, or None."""
        e = self.canon(e)
        if isinstance(e, int):
            return e
        lo, hi = self.interval(e)
        if lo == hi and not math.isinf(lo):
            return int(lo)
        return self._backend.static_value(e, optional)

    def check(self) -> bool | None:
        """Is everything added so far satisfiable?  True (consistent), False
        (conflicts found and set aside, each explained) or None (no conflict
        found, but some constraints are undecided: ``self.undecided``)."""
        if self._backend.enabled and not self._backend.broken:
            self._backend.sync()
        if self.conflicts or self._backend.broken:
            return False
        if self.undecided:
            return None
        return True

    def holds_at(self, relations, v: int) -> bool:
        """Do all ``relations`` (canonical) hold at "every symbol is ``v``" (aliases by
        their definitions, within the symbols' domains)?"""
        return self._witnesses.holds_at(relations, v)

    def residual_symbols(self) -> frozenset:
        """Symbols (canonical) that some residual constraint mentions."""
        return self._groups.residual_symbols()

    def has_residual_on(self, syms) -> bool:
        return self._groups.has_residual_on(syms)

    def broadcast_only(self, syms) -> bool:
        """Does every symbol of ``syms`` lie in a group only broadcast disjunctions tie
        (``GroupQueries.broadcast_only``: then nothing about them is entailed)?"""
        return self._groups.broadcast_only(syms)

    # ------------------------------------------------------------ the backend's state
    @property
    def broken(self) -> bool:
        """The fast path's eliminations alone contradict the domain: no Z3 answers."""
        return self._backend.broken

    @property
    def z3_enabled(self) -> bool:
        return self._backend.enabled

    @property
    def z3_checks(self) -> int:
        return self._backend.z3_checks

    @property
    def z3_unknowns(self) -> int:
        return self._backend.z3_unknowns

    @property
    def optional_budget(self) -> int:
        """Z3 resource units left for optional work (``Budget.units``)."""
        return self.budget.units

    @optional_budget.setter
    def optional_budget(self, units: int):
        self.budget.units = units

    @property
    def optional_skipped(self) -> int:
        return self.budget.skipped

    @property
    def optional_max_questions(self) -> int:
        return self.budget.max_questions

    @property
    def findings_checks(self) -> int:
        return self.budget.findings_checks

    # ------------------------------------------------------------ explanations and export
    def explain_entailment(self, relation: Relation, candidates) -> list:
        """A minimal subset of ``candidates`` (constraints) that, with the domain,
        implies ``relation``; [] when they do not (or undecided)."""
        return self._explain.entailment(relation, candidates)

    def explain_unsat(self, constraints, fixed=None) -> list:
        """A minimal subset of ``constraints`` that cannot hold (with the domain, and
        the dims named in ``fixed`` at their values); [] when they can (or undecided)."""
        return self._explain.core(constraints, None, fixed)

    def exported(self) -> list[Constraint]:
        """The constraints the store answers from: absorbed, residual and derived ones
        (set-aside conflicts and undecided constraints excluded)."""
        return [c for c in self.constraints if c.status in ("absorbed", "residual")]

    def exported_solver(self) -> GroupSolver:
        """One solver over ``exported()``, made on first use (``Result.query``'s
        witnesses, binding checks), its checks paid from the shared budget."""
        if self._exported_solver is None:
            self._exported_solver = GroupSolver(self.exported(), self.lower_bound, self.budget,
                                                self.rlimit, self.watchdog_s)
        return self._exported_solver

    def group_solver(self, constraints) -> GroupSolver:
        """A solver over ``constraints`` (the findings' searches), paid from the shared budget."""
        return GroupSolver(constraints, self.lower_bound, self.budget, self.rlimit, self.watchdog_s)

    def to_smtlib(self) -> str:
        """The model's constraint set as SMT-LIB2 ending in (check-sat) (``backend.smtlib``)."""
        return smtlib(self.exported(), self.constraints, self.conflicts, self._symbols)
