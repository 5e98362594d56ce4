"""The Z3 backend: the base / pending discipline over one lazy incremental solver.

The solver holds a *base* known to be satisfiable.  Constraints added since (the
*pending* batch, with the eliminations made since) join it only when an answer
needs Z3 (``sync``): a witness point that satisfies everything, or ``sat`` -> they
join; ``unsat`` -> the batch is split until the constraints that break it are
found, each is *set aside* as a conflict (``Explanations.set_aside``) while the
rest join; ``unknown`` -> the ones Z3 cannot decide are set aside as *undecided*.
Facts never leave the base, so a PROVEN or REFUTED answer, once given, stays true,
and every answer comes from a base known to be satisfiable.  Eliminations cannot be
set aside (rules have already used them): if they alone contradict the base, the
backend is *broken* (the conflict is reported, Z3 gives no further answers).

Questions (``decide``, ``static_value``) that intervals did not settle go through
the witness points, the shared budget for optional ones, a sync, varied points,
case splits on a piecewise term's condition (``cases.py``; a question only, where
a witness shows the base satisfiable), and only then Z3, with answers cached
(PROVEN / REFUTED forever, the rest until the base grows; a PROVEN one also
narrows intervals, ``Intervals.note_proved``).  The solver is made on first need, from the Z3 home
(``solver.py``: a pooled context, the watchdog, ``rlimit``); a fork's backend is
disabled and never makes one.  ``smtlib`` prints the set the store answers from.
"""
from __future__ import annotations

import math

from .. import expr as E
from ..constraints import _sides_of
from ..lazy import sympy
from ..lazyz3 import z3
from ..z3bridge import SmtLib, Untranslatable, one_line
from .basics import Verdict
from .cases import ALLOWANCE, case_verdict
from .solver import Solver


class Backend:
    def __init__(self, undecided: list, symbols, fast, intervals, witnesses, explanations, budget,
                 rlimit: int, watchdog_s: float, *, enabled: bool = True, broken: bool = False):
        self._undecided = undecided        # the store's list of undecided constraints (appended to)
        self._symbols = symbols
        self._fast = fast
        self._intervals = intervals
        self._witnesses = witnesses
        self._explain = explanations
        self.budget = budget
        self.rlimit = rlimit
        self.watchdog_s = watchdog_s
        self.enabled = enabled             # False in forks: they answer from the fast path only
        self.broken = broken
        self.solver: Solver | None = None  # made on first need (``z3``)
        self._base: list = []              # z3 formulas of the base, for rebuilding the solver
        self._fed_syms: set = set()
        self._fed_elims: set = set()
        self.pending: list = []            # residual constraints not in the base yet
        self.pending_elims: list = []      # atoms eliminated since the last sync
        self._deferred: list = []          # joined the base by a witness point, not yet given to Z3
        self._deferred_elims: list = []
        self._pending_joined = False       # the last sync brought constraints into the base
        self._models: list = []            # models of the current base (witnesses)
        self._epoch = 0                    # bumps whenever the base grows
        self._answers: dict = {}           # canonical question -> (answer, epoch)
        self._huge_syms: set = set()       # symbols of huge terms: optional questions skip them
        self._case_allowance = [ALLOWANCE]  # [terms case splits that settle nothing may still cost]
        self._optional_now = False
        self.z3_checks = 0
        self.z3_unknowns = 0

    def fed(self, s) -> bool:
        """Has Z3 been given symbol ``s`` (its domain or its elimination)?"""
        return s in self._fed_syms

    # ------------------------------------------------------------ feeding Z3
    def z3(self) -> Solver:
        if self.solver is None:
            self.solver = Solver(self.rlimit, self.watchdog_s, pooled=True)
            if self._base:
                self.solver.add(*self._base)
        if self._deferred or self._deferred_elims:
            self._flush_deferred()
        return self.solver

    def _translate(self, elims, constraints):
        """(definitions, [(constraint, formula)]): the Z3 form of eliminations and of the
        residual constraints among ``constraints``; one Z3 cannot read is set aside as
        undecided (never a fact for Z3) and listed."""
        defs: list = []
        for s in elims:
            if s in self._fast.subst:
                self._feed_elim(s, defs)
        batch = []
        for c in constraints:
            if c.status != "residual":
                continue
            try:
                batch.append((c, self._formula(c, defs)))
            except Untranslatable:
                c.status = "undecided"
                self._undecided.append(c)
        return defs, batch

    def _flush_deferred(self):
        """Give Z3 the constraints that joined the base through a witness point (``sync``)."""
        defs, batch = self._translate(self._deferred_elims, self._deferred)
        self._deferred_elims, self._deferred = [], []
        out = defs + [f for _, f in batch]
        if out:
            self.solver.add(*out)
            self._base.extend(out)

    def _feed_symbol(self, s, out: list):
        if s in self._fed_syms:
            return
        self._fed_syms.add(s)
        if s in self._fast.subst and s not in self._fed_elims:
            # eliminated before Z3 saw it: its domain is the derived constraint on its value
            self._feed_elim(s, out)
            return
        lo = self._symbols.lower_bound(s)
        if lo is not None:
            out.append(self.solver.terms.var(s.name) >= lo)

    def _feed_elim(self, s, out: list):
        if s in self._fed_elims:
            return
        self._fed_elims.add(s)
        val = self._fast.subst[s]
        terms = self.solver.terms
        try:
            lhs = terms.term(s) if not isinstance(s, sympy.Symbol) else terms.var(s.name)
            t = terms.term(val)
        except Untranslatable:
            return
        if isinstance(s, sympy.Symbol):
            self._fed_syms.add(s)
        if E.size(s if not isinstance(s, sympy.Symbol) else val) > 4 * E.MAX_OPS:
            # Z3 is slow on huge nonlinear terms (a 1000-factor element count): optional
            # questions about their symbols are not asked
            self._huge_syms |= E.free_symbols(s) | E.free_symbols(val)
        out.append(lhs == t)
        syms = set(E.free_symbols(val))
        if not isinstance(s, sympy.Symbol):
            syms |= E.free_symbols(s)
        for x in syms:
            self._feed_symbol(x, out)

    def _formula(self, c, out: list):
        """The Z3 formula of a residual constraint (its symbols' domains go to ``out``)."""
        cr = self._fast.canon_rel(c.relation)
        f = self.solver.terms.relation(cr)
        for s in cr.symbols():
            self._feed_symbol(s, out)
        return f

    # ------------------------------------------------------------ base and pending
    def sync(self) -> bool:
        """Bring the pending batch into the base under the consistency discipline.
        False when Z3 can give no answer (disabled, or the store is broken)."""
        self._pending_joined = False
        if not self.enabled or self.broken:
            return False
        if not self.pending and not self.pending_elims:
            return True
        self._pending_joined = True
        if self._witnesses.points():
            # a point satisfies every live constraint, the batch included: the batch joins
            # the base without a solver call; Z3 is given it when first needed (``z3``)
            self._deferred_elims.extend(self.pending_elims)
            joined = [c for c in self.pending if c.status == "residual"]
            self._deferred.extend(joined)
            self.pending, self.pending_elims = [], []
            self._intervals.note_bounds(joined)
            self._grew()
            return True
        sv = self.z3()
        defs, batch = self._translate(self.pending_elims, self.pending)
        self.pending_elims, self.pending = [], []
        if defs:
            sv.add(*defs)
            self._base.extend(defs)
        if not batch:
            if defs:
                self._grew()
            return True
        fs = [f for _, f in batch]
        sv.add(*fs)
        if self._witness([c for c, _ in batch]):
            # a concrete assignment satisfies the base and the batch: sat, without Z3
            self._base.extend(fs)
            self._intervals.note_bounds([c for c, _ in batch])
            self._grew()
            return True
        res = self._check()
        if res == z3.sat:
            self._base.extend(fs)
            self._intervals.note_bounds([c for c, _ in batch])
            self._grew(sv.model())
            return True
        # unsat or unknown: rebuild from the base and bring the batch in piece by piece
        sv.reset(self.rlimit)
        sv.add(*self._base)
        if defs and self._check() == z3.unsat:
            # the eliminations alone contradict the base: nothing can be set aside
            self._break(batch)
            return False
        self._admit(batch)
        self._grew()
        return not self.broken

    def _witness(self, batch) -> bool:
        """Is the base plus ``batch`` satisfied by one of the witness points?  Tried for
        large batches only (small ones: Z3 is quick)."""
        if len(batch) < 32 and sum(E.size(x) for c in batch for x in _sides_of(c.relation)) < 400:
            return False      # a failed witness costs a full pass over the constraints
        return bool(self._witnesses.points())

    def _admit(self, batch):
        """Add ``batch`` to the base, setting aside what makes it unsat or undecided."""
        if not batch:
            return
        fs = [f for _, f in batch]
        res = self._check(*fs) if len(batch) > 1 else self._check(fs[0])
        if res == z3.sat:
            self.solver.add(*fs)
            self._base.extend(fs)
            self._intervals.note_bounds([c for c, _ in batch])
            return
        if len(batch) > 1:
            mid = len(batch) // 2
            self._admit(batch[:mid])
            self._admit(batch[mid:])
            return
        c, f = batch[0]
        if res == z3.unknown:
            c.status = "undecided"
            self._undecided.append(c)
            return
        c.status = "conflict"
        self._explain.set_aside(c)

    def _grew(self, model=None):
        self._epoch += 1
        self._models = [model] if model is not None else []
        for k in [k for k, v in self._answers.items() if v[0] is None or v[0] is Verdict.UNKNOWN]:
            del self._answers[k]

    def _break(self, batch):
        self.broken = True
        for c, _ in batch:
            c.status = "undecided"
            self._undecided.append(c)
        self._explain.broken()

    def _check(self, *assumptions):
        """One check of the base (with ``assumptions``): an optional question's is paid
        from the shared budget at the budget's per-check limit, any other is at
        ``rlimit``.  ``unknown`` is never a proof."""
        self.z3_checks += 1
        b = self.budget
        if self._optional_now:
            res = b.pay(self.solver, *assumptions, rlimit=min(b.per_check, self.rlimit))
        else:
            res = self.solver.check(*assumptions, rlimit=self.rlimit)
        if res == z3.unknown:
            self.z3_unknowns += 1
        return res

    def _add_domains(self, out: list):
        """Domains of symbols a query mentions for the first time: a satisfiable extension
        of the base.  Known models stay models unless a new bound excludes 0 (the value
        a model gives a symbol it never saw)."""
        if not out:
            return
        self.solver.add(*out)
        self._base.extend(out)
        if any(not (z3.is_ge(f) and z3.is_int_value(f.arg(1)) and f.arg(1).as_long() <= 0) for f in out):
            self._models = []

    def _spend(self, optional: bool, syms=()) -> bool:
        if not optional:
            return True
        if self._huge_syms and self._huge_syms & set(syms):
            self.budget.skipped += 1
            return False
        return self.budget.allow_question()

    # ------------------------------------------------------------ questions
    def decide(self, cr, optional: bool) -> Verdict:
        """PROVEN / REFUTED / UNKNOWN for the canonical relation ``cr`` that intervals
        did not settle (see the module doc)."""
        if not self.enabled or self.broken:
            return Verdict.UNKNOWN
        hit = self._answers.get(cr)
        if hit is not None:
            if hit[0] is not Verdict.UNKNOWN:
                return hit[0]          # entailment is monotone: PROVEN / REFUTED stay true
            if hit[1] == self._epoch and not self.pending and not self.pending_elims:
                return hit[0]
        seen = self._witnesses.truths(cr)
        if len(seen) == 2:
            return Verdict.UNKNOWN     # two models of every live constraint: true at one, false at the other
        if not self._spend(optional, cr.symbols()):
            return Verdict.UNKNOWN
        if not self.sync():
            return Verdict.UNKNOWN
        if self._pending_joined:
            iv = self._intervals.cheap_verdict(cr)        # facts that just joined may settle it
            if iv is not None:
                return iv
            seen = self._witnesses.truths(cr)
        if len(seen) == 1:
            seen = self._witnesses.varied_truths(cr, seen)     # (before Z3: it can only say UNKNOWN)
        if len(seen) == 2:
            return Verdict.UNKNOWN
        if seen:      # (a witness point: the base has a model, and the answer must agree with it)
            v = case_verdict(self._intervals, cr, self._case_allowance)
            if v is not None and (v is Verdict.PROVEN) in seen:
                self._answers[cr] = (v, self._epoch)
                if v is Verdict.PROVEN:
                    self._intervals.note_proved(cr)
                return v
        self.z3()
        self._optional_now = optional
        try:
            return self._decide_z3(cr, seen)
        finally:
            self._optional_now = False

    def truths(self, cr) -> set:
        """The truth values the canonical ``cr`` takes at models of every live constraint
        known without a solver call: the witness points, points varied from them, and
        Z3's models of the base when nothing is pending (each then satisfies every live
        constraint).  {True, False}: true for some inputs the constraints allow and false
        for others; fewer values say nothing."""
        if self.broken:
            return set()
        seen = self._witnesses.truths(cr)
        if len(seen) == 1:
            seen = self._witnesses.varied_truths(cr, seen)
        if len(seen) < 2 and self._models and not (self.pending or self.pending_elims
                                                   or self._deferred or self._deferred_elims) \
                and all(s in self._fed_syms for s in cr.symbols()):
            try:
                f = self.solver.terms.relation(cr)
            except Untranslatable:
                return seen
            for m in self._models:
                val = m.eval(f, model_completion=True)
                if z3.is_true(val) or z3.is_false(val):
                    seen.add(bool(z3.is_true(val)))
        return seen

    def _decide_z3(self, cr, seen: set) -> Verdict:
        try:
            out: list = []
            f = self.solver.terms.relation(cr)
            for s in cr.symbols():
                self._feed_symbol(s, out)
        except Untranslatable:
            return Verdict.UNKNOWN
        self._add_domains(out)
        can_prove, can_refute = False not in seen, True not in seen     # (from the witness points)
        for m in self._models:
            val = m.eval(f, model_completion=True)
            if z3.is_false(val):
                can_prove = False
            elif z3.is_true(val):
                can_refute = False
        verdict = Verdict.UNKNOWN
        if can_prove:
            r = self._check(z3.Not(f))
            if r == z3.unsat:
                verdict = Verdict.PROVEN
                self._intervals.note_proved(cr)
            elif r == z3.sat:
                can_prove = False
                if len(self._models) < 4:        # a few witnesses; fetching models costs
                    self._models.append(self.solver.model())
        if verdict is Verdict.UNKNOWN and can_refute:
            r = self._check(f)
            if r == z3.unsat:
                verdict = Verdict.REFUTED
            elif r == z3.sat and len(self._models) < 4:
                self._models.append(self.solver.model())
        if len(self._models) > 8:
            del self._models[1:-4]
        self._answers[cr] = (verdict, self._epoch)
        return verdict

    def static_value(self, e, optional: bool):
        """The int the canonical ``e`` must equal, for what intervals did not settle."""
        if not self.enabled or self.broken:
            return None
        key = ("static", e)
        hit = self._answers.get(key)
        if hit is not None and (hit[0] is not None or (hit[1] == self._epoch and not self.pending)):
            return hit[0]
        if self._witnesses.not_static(e):
            return None          # two models of every live constraint disagree: not static
        if not self._spend(optional, E.free_symbols(e)):
            return None
        if not self.sync():
            return None
        if self._pending_joined:
            lo, hi = self._intervals.interval(e)
            if lo == hi and not math.isinf(lo):
                return int(lo)
        self.z3()
        self._optional_now = optional
        try:
            return self._static_z3(e, key)
        finally:
            self._optional_now = False

    def _static_z3(self, e, key):
        try:
            out: list = []
            t = self.solver.terms.term(e)
            for s in E.free_symbols(e):
                self._feed_symbol(s, out)
        except Untranslatable:
            return None
        self._add_domains(out)
        model = self._base_model()
        val = None
        if model is not None:
            cand = model.eval(t, model_completion=True)
            # one model gives the only candidate; it is forced iff "e != candidate" is unsat
            if z3.is_int_value(cand):
                if self._check(t != cand) == z3.unsat:
                    val = cand.as_long()
        self._answers[key] = (val, self._epoch)
        return val

    def _base_model(self):
        if self._models:
            return self._models[0]
        if self._check() == z3.sat:
            self._models.append(self.solver.model())
            return self._models[0]
        return None


def smtlib(exported, constraints, conflicts, symbols) -> str:
    """The constraint set as SMT-LIB2 ending in (check-sat): ``exported`` (the set the
    store answers from), then the constraints of every conflict (so the export of a model
    with conflicts is unsatisfiable, as the model is); undecided constraints are
    comments.  Every symbol is ``|d.<name>|`` (a private namespace: a dim named ``and``
    or ``true`` is never a keyword), mapped back to its name in a comment; every comment
    is one line; no model or user text appears outside comments."""
    p = SmtLib()
    body: list[str] = []
    syms: set = set()

    def emit(c, tag):
        try:
            text = p.relation(c.relation)
        except Untranslatable:
            body.append(f"; c{c.id} (not expressible in SMT-LIB, omitted): {one_line(c.relation)}")
            return
        syms.update(c.relation.symbols())
        body.append(f"; c{c.id} [{tag}] {one_line(c.provenance)}")
        body.append(f"(assert {text})")
    for c in exported:
        emit(c, c.kind)
    if conflicts:
        body.append(f"; {len(conflicts)} conflict(s): the constraints below cannot hold with the ones "
                    "above (smtshape set them aside to go on answering)")
    done = set()
    for cf in conflicts:
        for c in cf.constraints:
            if c.id not in done and c.status == "conflict":
                done.add(c.id)
                emit(c, "conflict")
    for c in constraints:
        if c.status == "conflict" and c.id not in done:
            emit(c, "conflict")
        elif c.status == "undecided":
            body.append(f"; c{c.id} set aside (undecided): {one_line(c.relation)}  <- {one_line(c.provenance)}")
    head = ["; smtshape constraint set (SMT-LIB 2)",
            "; domain: every dim symbol is a non-negative integer"]
    head += [f"; assumption: {one_line(d)}" for d in symbols.domain.describe()]
    decl = []
    for s in sorted(syms, key=lambda x: x.name):
        q = p.name(s.name)
        decl.append(f"(declare-fun {q} () Int)")
        lo = symbols.lower_bound(s)
        if lo is not None:
            decl.append(f"(assert (>= {q} {lo}))")
    names = [f"; {q} is {one_line(repr(n))}" for n, q in sorted(p.names.items())]
    return "\n".join(head + names + decl + body + ["(check-sat)", ""])
