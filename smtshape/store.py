"""The constraint store: symbols, constraints, a fast path, and Z3 behind it.

Layers (see docs/ARCHITECTURE.md):

1. **Symbols.**  Every symbol is declared here with a kind (``input`` or
   ``data``) and the provenance of whatever made it.
2. **Fast path: substitution (a linear union-find).**  An equality whose
   difference is linear in some symbol with coefficient +-1 *eliminates* that
   symbol: ``subst[s] = value``, with every value kept canonical.  Data and
   generated symbols are eliminated before user-named ones so the user's names
   stay the representatives.  ``canon(e)`` rewrites an expression to
   representatives (cached).  Each elimination remembers the constraint ids
   that justify it, so a fast-path conflict (``768 == 512`` after
   substitution) is explained by the constraints along the way.
3. **Residual constraints**: whatever the fast path cannot decide or absorb.
4. **Z3, lazily**: one incremental solver, created on first need, fed in
   batches (domain ``s >= 0`` per symbol, ``s == value`` per elimination,
   each residual constraint in canonical form).  Queries are
   ``check(not claim)``; answers are cached; every check has an ``rlimit``
   budget, and ``unknown`` is never a proof.  A conflict found by Z3 is
   explained by a separate tracked solver's minimized unsat core, its
   residual constraints are quarantined and the solver rebuilt.
"""
from __future__ import annotations

import enum
import itertools
import threading
import time
from dataclasses import dataclass, field

import sympy
import z3

from . import expr as E
from .constraints import Conflict, Constraint, Provenance, Rel, Relation, eq, le
from .printing import show
from .z3bridge import Untranslatable, Z3Terms


class Verdict(enum.Enum):
    PROVEN = "proven"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass
class SymbolInfo:
    symbol: sympy.Symbol
    kind: str                         # "input" | "data" | "alias" (stands for a capped expression)
    origin: Provenance
    generated: bool = False           # name made up by us (anonymous input dim, data symbol)
    upper: object = None              # data symbols: known upper bound expression
    serial: int = 0

    @property
    def name(self) -> str:
        return self.symbol.name


@dataclass
class Domain:
    """Named domain assumptions.  Off by default; each one is visible."""

    inputs_positive: bool = False      # every input dim >= 1
    no_broadcast_one: bool = False     # symbolic dims are never 1 when broadcasting

    def describe(self) -> list[str]:
        out = []
        if self.inputs_positive:
            out.append("input dims are at least 1 (inputs_positive)")
        if self.no_broadcast_one:
            out.append("symbolic dims are never 1 when broadcasting (no_broadcast_one)")
        return out


class _Watchdog:
    """One daemon thread that calls ``fn`` when an armed deadline passes
    (cheaper than a thread per check)."""

    def __init__(self):
        self._cv = threading.Condition()
        self._deadline = None
        self._fn = None
        self._thread = None

    def arm(self, seconds: float, fn):
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="smtshape-z3-watchdog", daemon=True)
                self._thread.start()
            self._deadline = time.monotonic() + seconds
            self._fn = fn
            self._cv.notify()

    def disarm(self):
        with self._cv:
            self._deadline = None
            self._fn = None

    def _run(self):
        with self._cv:
            while True:
                if self._deadline is None:
                    self._cv.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                fn, self._deadline, self._fn = self._fn, None, None
                if fn is not None:
                    fn()


_WATCHDOG = _Watchdog()

DOMAIN_PROV = Provenance("", "domain", "domain.nonnegative", "every dim is a non-negative integer")


@dataclass
class Store:
    domain: Domain = field(default_factory=Domain)
    rlimit: int = 2_000_000
    watchdog_s: float = 10.0

    def __post_init__(self):
        self.symbols: dict[str, SymbolInfo] = {}
        self.constraints: list[Constraint] = []
        self.conflicts: list[Conflict] = []
        self.subst: dict[sympy.Symbol, object] = {}
        self.reasons: dict[sympy.Symbol, frozenset] = {}
        self._canon: dict = {}
        self._serial = itertools.count()
        self._names: dict[str, int] = {}
        # z3 state
        self._terms: Z3Terms | None = None
        self._solver: z3.Solver | None = None
        self._fed_syms: set = set()
        self._fed_elims: set = set()
        self._pending: list[Constraint] = []
        self._residual_seen: dict = {}
        self.definitions: dict = {}       # alias symbol -> the expression it stands for
        self._alias_of: dict = {}
        self._pending_elims: list = []
        self._epoch = 0                # bumps whenever Z3 learns something new
        self._cache: dict = {}
        self.z3_checks = 0
        self._asserted = 0
        self.z3_unknowns = 0
        self.z3_broken = False

    # ------------------------------------------------------------ symbols
    def fresh_name(self, hint: str) -> str:
        base = "".join(ch if (ch.isalnum() or ch == "_") else "_" for ch in hint) or "d"
        if base[0].isdigit():
            base = "_" + base
        if base not in self.symbols and base not in self._names:
            self._names[base] = 0
            return base
        while True:
            self._names[base] = self._names.get(base, 0) + 1
            name = f"{base}_{self._names[base]}"
            if name not in self.symbols:
                return name

    def declare(self, name: str, kind: str, origin: Provenance, *, generated=False,
                upper=None) -> sympy.Symbol:
        info = self.symbols.get(name)
        if info is not None:
            return info.symbol
        s = E.symbol(name)
        self.symbols[name] = SymbolInfo(s, kind, origin, generated, upper, next(self._serial))
        if upper is not None:
            self.add(le(s, upper), origin, kind="rule")
        return s

    def new_data(self, hint: str, origin: Provenance, upper=None) -> sympy.Symbol:
        return self.declare(self.fresh_name(hint), "data", origin, generated=True, upper=upper)

    def info(self, s: sympy.Symbol) -> SymbolInfo | None:
        return self.symbols.get(s.name)

    def input_symbols(self) -> list[SymbolInfo]:
        return [i for i in self.symbols.values() if i.kind == "input"]

    def fork(self) -> "Store":
        """A private copy: same facts, its own Z3 (rebuilt lazily); changes stay local.

        Used for subgraphs that may not run (an If branch whose condition is
        unknown): their constraints must not leak into the main store."""
        import copy
        new = copy.copy(self)
        new.symbols = dict(self.symbols)
        new.constraints = [copy.copy(c) for c in self.constraints]
        new.conflicts = list(self.conflicts)
        new.subst = dict(self.subst)
        new.reasons = dict(self.reasons)
        new._canon = {}
        new._names = dict(self._names)
        new._terms = None
        new._solver = None
        new._fed_syms = set()
        new._fed_elims = set()
        new._pending = [c for c in new.constraints if c.status == "residual"]
        new._residual_seen = {}
        new.definitions = dict(self.definitions)
        new._alias_of = dict(self._alias_of)
        new._pending_elims = list(new.subst)
        new._epoch = self._epoch + 1
        new._cache = {}
        return new

    # ------------------------------------------------------------ canonical forms
    def canon(self, e):
        if isinstance(e, int) or not self.subst:
            return e
        hit = self._canon.get(e)
        if hit is not None:
            return hit
        out = E.norm(e.xreplace(self.subst)) if (E.free_symbols(e) & self.subst.keys()) else e
        self._canon[e] = out
        return out

    def canon_rel(self, r: Relation) -> Relation:
        return r.map(self.canon)

    def why(self, e) -> frozenset:
        """Constraint ids behind the substitutions ``canon(e)`` uses."""
        out: set = set()
        for s in E.free_symbols(e):
            out |= self.reasons.get(s, frozenset())
        return frozenset(out)

    def _why_rel(self, r: Relation) -> frozenset:
        out: set = set()
        for s in r.symbols():
            out |= self.reasons.get(s, frozenset())
        return frozenset(out)

    # ------------------------------------------------------------ adding
    def alias(self, e, origin: Provenance):
        """A symbol standing for the (too big) expression ``e``.

        Its definition ``s == e`` goes to Z3 but is never absorbed by the fast path,
        so later rules work on the small symbol; ``Result`` expands it back at the end
        (``definitions``), so exactness is not lost."""
        hit = self._alias_of.get(e)
        if hit is not None:
            return hit
        s = self.declare(self.fresh_name("cap"), "alias", origin, generated=True)
        self.definitions[s] = e
        self._alias_of[e] = s
        self.add(eq(s, e), origin, kind="definition", absorb=False)
        return s

    def add(self, relation: Relation, prov: Provenance, kind: str = "rule", absorb: bool = True) -> Constraint:
        c = Constraint(len(self.constraints), relation, prov, kind)
        self.constraints.append(c)
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is True:
            c.status = "trivial"
            return c
        if v is False:
            c.status = "conflict"
            self._fast_conflict(c, cr)
            return c
        if absorb and isinstance(cr, Rel) and cr.op == "==" and self._absorb(c, cr):
            return c
        first = self._residual_seen.get(cr)
        if first is not None and first.status == "residual":
            c.status = "duplicate"      # the same canonical fact is already in the store
            return c
        self._residual_seen[cr] = c
        c.status = "residual"
        self._pending.append(c)
        self._epoch += 1
        return c

    def _priority(self, s) -> tuple:
        info = self.info(s)
        if info is None:
            return (0, 0)
        if info.kind == "alias":
            return (0, info.serial)     # keep aliases: they exist to stay small
        rank = 3 if info.kind == "data" else (2 if info.generated else 1)
        return (rank, info.serial)

    def _absorb(self, c: Constraint, cr: Rel) -> bool:
        d = E.sub(cr.lhs, cr.rhs)
        if isinstance(d, int):
            return False
        best = None
        for t in sympy.Add.make_args(d):
            coeff, rest = t.as_coeff_Mul()
            if isinstance(rest, sympy.Symbol) and coeff in (1, -1):
                others = E.free_symbols(E.sub(d, t))
                if rest not in others:
                    key = self._priority(rest)
                    if best is None or key > best[0]:
                        best = (key, rest, int(coeff))
        if best is None:
            return False
        _, s, coeff = best
        value = E.norm(-(d - coeff * s) * coeff)
        reason = frozenset({c.id}) | self._why_rel(c.relation)
        if isinstance(value, int) and value < 0:
            c.status = "conflict"
            self._record_conflict(f"{s.name} == {value}", reason,
                                  detail=f"{s.name} would be negative ({value})")
            return True
        self._eliminate(s, value, reason)
        c.status = "absorbed"
        return True

    def _eliminate(self, s, value, reason: frozenset):
        m = {s: E.to_sympy(value)}
        for t, v in list(self.subst.items()):
            if not isinstance(v, int) and s in E.free_symbols(v):
                self.subst[t] = E.norm(v.xreplace(m))
                self.reasons[t] = self.reasons[t] | reason
        self.subst[s] = value
        self.reasons[s] = reason
        self._canon.clear()
        self._epoch += 1
        self._pending_elims.append(s)

    # ------------------------------------------------------------ conflicts
    def _fast_conflict(self, c: Constraint, cr: Relation):
        reason = frozenset({c.id}) | self._why_rel(c.relation)
        detail = ""
        if str(cr) != str(c.relation):
            detail = f"after substitution: {cr}"
        values = {}
        if isinstance(c.relation, Rel):       # each side as written, and the value it has
            for side, val in ((c.relation.lhs, cr.lhs), (c.relation.rhs, cr.rhs)):
                values[show(side)] = show(val)
        self._record_conflict(str(c.relation), reason, detail=detail, values=values)

    def _record_conflict(self, text: str, ids, detail: str = "", values=None):
        cs = [self.constraints[i] for i in sorted(ids)]
        self.conflicts.append(Conflict(text, cs, values or {}, detail))

    # ------------------------------------------------------------ z3
    def _z3(self) -> z3.Solver:
        if self._solver is None:
            self._terms = Z3Terms()
            self._solver = z3.Solver()
            self._solver.set("rlimit", self.rlimit)
            self._fed_syms = set()
            self._fed_elims = set()
        self._flush()
        return self._solver

    def _domain_of(self, s):
        v = self._terms.var(s.name)
        if s.is_nonnegative is not True:      # element-value symbols may be negative
            return z3.BoolVal(True)
        info = self.info(s)
        if info is not None and info.kind == "input" and self.domain.inputs_positive:
            return v >= 1
        return v >= 0

    def _feed_symbol(self, s, out: list):
        if s not in self._fed_syms:
            self._fed_syms.add(s)
            out.append(self._domain_of(s))
        if s in self.subst:
            self._feed_elim(s, out)

    def _feed_elim(self, s, out: list):
        if s in self._fed_elims:
            return
        self._fed_elims.add(s)
        self._feed_symbol(s, out)
        val = self.subst[s]
        side: list = []
        try:
            t = self._terms.term(val, side)
        except Untranslatable:
            return
        out.append(self._terms.var(s.name) == t)
        out.extend(side)
        for x in E.free_symbols(val):
            self._feed_symbol(x, out)

    def _flush(self):
        if not self._pending and not self._pending_elims:
            return
        out: list = []
        for s in self._pending_elims:
            self._feed_elim(s, out)
        self._pending_elims = []
        for c in self._pending:
            if c.status != "residual":
                continue
            cr = self.canon_rel(c.relation)
            try:
                f = self._terms.formula(cr)
            except Untranslatable:
                c.status = "untranslatable"
                continue
            for s in cr.symbols():
                self._feed_symbol(s, out)
            out.append(f)
        self._pending = []
        if out:
            self._solver.add(*out)
            self._asserted += 1

    def _ensure_symbols(self, r: Relation):
        out: list = []
        for s in r.symbols():
            self._feed_symbol(s, out)
        if out:
            self._solver.add(*out)
            self._asserted += 1

    def _check(self, *assumptions):
        """One budgeted check.  ``rlimit`` bounds the work deterministically; a
        wall-clock watchdog interrupts Z3 as a last resort (its own ``timeout``
        is not a hard bound).  An interrupted check is ``unknown``: never a proof."""
        self.z3_checks += 1
        _WATCHDOG.arm(self.watchdog_s, self._solver.ctx.interrupt)
        try:
            res = self._solver.check(*assumptions)
        except z3.Z3Exception:
            self.z3_unknowns += 1
            return z3.unknown
        finally:
            _WATCHDOG.disarm()
        if res == z3.unknown:
            self.z3_unknowns += 1
        return res

    def check(self) -> bool | None:
        """Is everything added so far satisfiable?  Explains and quarantines
        conflicts Z3 finds.  Returns True (consistent), False (conflicts
        recorded) or None (undecided within budget)."""
        if self.z3_broken:
            return False
        if self._solver is None and not any(c.status == "residual" for c in self.constraints):
            # only fast-path facts: eliminations keep every value >= 0 or were refuted
            if not self._pending_elims:
                return not self.conflicts
        for _ in range(8):
            self._z3()
            res = self._check()
            if res == z3.sat:
                return not self.conflicts
            if res == z3.unknown:
                return None
            if not self._explain_and_quarantine():
                self.z3_broken = True
                return False
        self.z3_broken = True
        return False

    def _explain_and_quarantine(self) -> bool:
        terms = Z3Terms()
        tracked = z3.Solver()
        tracked.set("rlimit", self.rlimit * 5)
        tracked.set("core.minimize", True)
        syms = set()
        lits = {}
        for c in self.constraints:
            if c.status not in ("residual", "absorbed"):
                continue
            side: list = []
            try:
                f = terms.relation(c.relation, side)
            except Untranslatable:
                continue
            p = z3.Bool(f"c{c.id}")
            lits[f"c{c.id}"] = c
            tracked.assert_and_track(z3.And([f] + side) if side else f, p)
            syms |= c.relation.symbols()
        for s in syms:
            v = terms.var(s.name)
            info = self.info(s)
            if s.is_nonnegative is not True:
                continue
            tracked.add(v >= 1 if (info and info.kind == "input" and self.domain.inputs_positive) else v >= 0)
        if tracked.check() != z3.unsat:
            return False
        core = [lits[str(x)] for x in tracked.unsat_core() if str(x) in lits]
        if not core:
            return False
        text = " and ".join(str(c.relation) for c in core if c.status == "residual") or str(core[0].relation)
        self.conflicts.append(Conflict(text, core, {}, "these constraints cannot all hold"))
        residual = [c for c in core if c.status == "residual"]
        if not residual:
            return False
        for c in residual:
            c.status = "conflict"
        # rebuild the solver without the quarantined constraints
        self._solver = None
        self._cache.clear()
        self._pending = [c for c in self.constraints if c.status == "residual"]
        self._pending_elims = list(self.subst)
        self._epoch += 1
        return True

    def explain_entailment(self, relation: Relation, candidates) -> list:
        """A minimal subset of ``candidates`` (constraints) that, with the domain and the
        substitutions, implies ``relation``; [] when they do not (or undecided)."""
        terms = Z3Terms()
        tracked = z3.Solver()
        tracked.set("rlimit", self.rlimit * 5)
        tracked.set("core.minimize", True)
        lits = {}
        syms = set(relation.symbols())
        for c in candidates:
            side: list = []
            try:
                f = terms.relation(self.canon_rel(c.relation), side)
            except Untranslatable:
                continue
            name = f"c{c.id}"
            lits[name] = c
            tracked.assert_and_track(z3.And([f] + side) if side else f, z3.Bool(name))
            syms |= self.canon_rel(c.relation).symbols()
        for x in syms:
            if x.is_nonnegative is True:
                info = self.info(x)
                v = terms.var(x.name)
                tracked.add(v >= 1 if (info and info.kind == "input" and self.domain.inputs_positive) else v >= 0)
        try:
            side: list = []
            goal = terms.relation(self.canon_rel(relation), side)
        except Untranslatable:
            return []
        tracked.add(z3.Not(goal), *side)
        if tracked.check() != z3.unsat:
            return []
        return [lits[str(x)] for x in tracked.unsat_core() if str(x) in lits]

    # ------------------------------------------------------------ queries
    def decide(self, relation: Relation, use_z3: bool = True) -> Verdict:
        """PROVEN / REFUTED / UNKNOWN for a relation under all constraints."""
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is True:
            return Verdict.PROVEN
        if v is False:
            return Verdict.REFUTED
        if not use_z3 or self.z3_broken:
            return Verdict.UNKNOWN
        key = str(cr)
        hit = self._cache.get(key)
        if hit is not None:
            verdict, epoch = hit
            if verdict is not Verdict.UNKNOWN or epoch == self._epoch:
                return verdict
        self._z3()
        self._ensure_symbols(cr)
        side: list = []
        try:
            f = self._terms.relation(cr, side)
        except Untranslatable:
            return Verdict.UNKNOWN
        sc = z3.And(side) if side else z3.BoolVal(True)
        verdict = Verdict.UNKNOWN
        if self._check(z3.And(z3.Not(f), sc)) == z3.unsat:
            verdict = Verdict.PROVEN
        elif self._check(z3.And(f, sc)) == z3.unsat:
            verdict = Verdict.REFUTED
        self._cache[key] = (verdict, self._epoch)
        return verdict

    def static_value(self, e):
        """The int ``e`` must equal under the constraints, or None."""
        e = self.canon(e)
        if isinstance(e, int):
            return e
        if self.z3_broken:
            return None
        key = ("static", e)
        hit = self._cache.get(key)
        if hit is not None and (hit[0] is not None or hit[1] == self._epoch):
            return hit[0]
        self._z3()
        self._ensure_symbols(eq(e, 0))
        side: list = []
        try:
            t = self._terms.term(e, side)
        except Untranslatable:
            return None
        out = None
        model = self._base_model()
        if model is not None:
            val = model.eval(t, model_completion=True)
            # one model gives the only candidate; it is forced iff "e != candidate" is unsat
            if z3.is_int_value(val) and self._check(z3.And([t != val] + side)) == z3.unsat:
                out = val.as_long()
        self._cache[key] = (out, self._epoch)
        return out

    def _base_model(self):
        """A model of everything asserted so far (cached until the next assertion)."""
        hit = self._cache.get("base_model")
        if hit is not None and hit[1] == self._asserted:
            return hit[0]
        m = self._solver.model() if self._check() == z3.sat else None
        self._cache["base_model"] = (m, self._asserted)
        return m

    def residual_symbols(self) -> frozenset:
        """Symbols (canonical) that some residual constraint mentions; cached per epoch."""
        hit = self._cache.get("residual_symbols")
        if hit is not None and hit[1] == self._epoch:
            return hit[0]
        out: set = set()
        for c in self.constraints:
            if c.status == "residual":
                out |= self.canon_rel(c.relation).symbols()
        for s, v in self.subst.items():
            out |= E.free_symbols(v) if not isinstance(v, int) else set()
        res = frozenset(out)
        self._cache["residual_symbols"] = (res, self._epoch)
        return res

    def has_residual_on(self, syms) -> bool:
        return bool(self.residual_symbols() & syms)

    # ------------------------------------------------------------ export
    def to_smtlib(self) -> str:
        terms = Z3Terms()
        s = z3.Solver()
        syms = set()
        for c in self.constraints:
            if c.status in ("residual", "absorbed", "conflict"):
                try:
                    s.add(terms.formula(c.relation))
                except Untranslatable:
                    continue
                syms |= c.relation.symbols()
        for name in sorted(x.name for x in syms):
            s.add(terms.var(name) >= 0)
        header = ["; smtshape constraint set", "; every dim symbol is a non-negative integer"]
        header += [f"; assumption: {d}" for d in self.domain.describe()]
        for c in self.constraints:
            if c.status in ("residual", "absorbed", "conflict"):
                header.append(f"; c{c.id}: {c.relation}  <- {c.provenance}")
        return "\n".join(header) + "\n" + s.sexpr()
