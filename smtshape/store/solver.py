"""The one home of Z3 solvers.  Every solver the package makes (the store's base,
the explanation and entailment cores, the findings' group searches, the queries'
witnesses and binding checks, the assumption checks) is a ``Solver`` made here:

* in a Z3 context of its own, never Z3's global one, so one analysis never touches
  another's terms: a fresh context, or (``pooled``) one of the pool of contexts of
  freed solvers (making one costs about 1.5 ms, more than a typical model's
  questions), given back when the solver is freed;
* every check bounded by a deterministic resource limit (``rlimit``) and, as the
  last resort, by the watchdog: one daemon thread that interrupts only the
  overrunning solver's context (Z3's own ``timeout`` is not a hard bound, and its
  resource count misses big-integer work).  An exception or an interrupt is
  ``unknown``, never a proof;
* optional work paid from the analysis's one shared ``Budget``: the store's optional
  questions, the findings' searches and the queries' witnesses draw on it, so their
  cost stays bounded whatever the graph.
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref

from ..lazyz3 import z3
from ..z3bridge import Untranslatable, Z3Terms


class _Watchdog:
    """One daemon thread that interrupts Z3 contexts whose armed deadline has
    passed.  Each check arms it for its own solver's context only, so one analysis
    never stops another's solver."""

    def __init__(self):
        self._cv = threading.Condition()
        self._armed: dict[int, tuple[float, object]] = {}
        self._ids = itertools.count()
        self._thread = None
        self._idle = True
        self._wake_at = 0.0

    def arm(self, seconds: float, fn) -> int:
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="smtshape-z3-watchdog", daemon=True)
                self._thread.start()
            token = next(self._ids)
            deadline = time.monotonic() + seconds
            self._armed[token] = (deadline, fn)
            if self._idle or deadline < self._wake_at:   # otherwise it wakes in time anyway:
                self._cv.notify()                        # no thread switch per check
            return token

    def disarm(self, token: int):
        with self._cv:
            self._armed.pop(token, None)

    def _run(self):
        with self._cv:
            while True:
                if not self._armed:
                    self._idle = True
                    self._cv.wait()
                    continue
                self._idle = False
                now = time.monotonic()
                due = [t for t, (d, _) in self._armed.items() if d <= now]
                for t in due:
                    _, fn = self._armed.pop(t)
                    try:
                        fn()
                    except Exception:  # pragma: no cover - a dead context
                        pass
                if self._armed:
                    self._wake_at = min(d for d, _ in self._armed.values())
                    self._cv.wait(max(0.0, self._wake_at - now))


_WATCHDOG = _Watchdog()


class _ContextPool:
    """Z3 contexts of pooled solvers that are gone, for the next one to use.  A context
    serves one solver at a time: taken when the solver is made, given back when it is
    freed (its terms go with it); at most a few are kept."""

    def __init__(self, keep: int = 4):
        self._free: list = []
        self._lock = threading.Lock()
        self._keep = keep

    def take(self):
        with self._lock:
            if self._free:
                return self._free.pop()
        return z3.Context()

    def give_back(self, ctx):
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(ctx)


_CONTEXTS = _ContextPool()


class Solver:
    """One incremental Z3 solver, in a context of its own, with its term translation
    (``terms``, ``z3bridge.Z3Terms``) and the raw solver (``s``).  ``check`` is armed
    by the watchdog and bounded by the solver's ``rlimit``; ``unknown`` on an exception
    or an interrupt."""

    def __init__(self, rlimit: int, watchdog_s: float, *, pooled: bool = False, core: bool = False):
        self.ctx = _CONTEXTS.take() if pooled else z3.Context()
        if pooled:
            weakref.finalize(self, _CONTEXTS.give_back, self.ctx)
        self.terms = Z3Terms(self.ctx)
        self.watchdog_s = watchdog_s
        self._core = core                  # tracked assertions, cores minimized (``track``)
        self._rl_index = None              # index of "rlimit count" in the solver's statistics
        self.reset(rlimit)

    def reset(self, rlimit: int):
        """A new, empty solver in the same context (terms made so far stay valid)."""
        s = z3.Solver(ctx=self.ctx)
        s.set("rlimit", rlimit)
        if self._core:
            s.set("core.minimize", True)
        self.s = s
        self.rlimit = rlimit

    def add(self, *fs):
        self.s.add(*fs)

    def track(self, f, name: str):
        """Assert ``f`` under the literal ``name`` (its name in ``unsat_core``)."""
        self.s.assert_and_track(f, z3.Bool(name, self.ctx))

    def check(self, *assumptions, rlimit: int | None = None):
        """One bounded check (``rlimit``: this check's resource limit, kept for the next)."""
        if rlimit is not None and rlimit != self.rlimit:     # setting a parameter costs: only on change
            self.s.set("rlimit", rlimit)
            self.rlimit = rlimit
        token = _WATCHDOG.arm(self.watchdog_s, self.ctx.interrupt)
        try:
            return self.s.check(*assumptions)
        except z3.Z3Exception:
            return z3.unknown
        finally:
            _WATCHDOG.disarm(token)

    def model(self):
        return self.s.model()

    def unsat_core(self):
        return self.s.unsat_core()

    def rlimit_used(self) -> int:
        """Z3's resource counter of this solver (read through the C API: the Python
        ``Statistics`` object walks every key, 50x slower)."""
        try:
            cref = self.ctx.ref()
            st = z3.Z3_solver_get_statistics(cref, self.s.solver)
            z3.Z3_stats_inc_ref(cref, st)
            try:
                i = self._rl_index
                n = z3.Z3_stats_size(cref, st)
                if i is None or i >= n or z3.Z3_stats_get_key(cref, st, i) != "rlimit count":
                    i = next((k for k in range(n) if z3.Z3_stats_get_key(cref, st, k) == "rlimit count"), None)
                    self._rl_index = i
                    if i is None:
                        return 0
                if z3.Z3_stats_is_uint(cref, st, i):
                    return int(z3.Z3_stats_get_uint_value(cref, st, i))
                return int(z3.Z3_stats_get_double_value(cref, st, i))
            finally:
                z3.Z3_stats_dec_ref(cref, st)
        except Exception:
            return 0


class OutOfBudget(Exception):
    """The shared budget of optional solver work is spent, or the solver could not
    decide a question of a paid search: what is left of the search is not done."""


class Budget:
    """The shared budget of optional solver work of one analysis (one store and its
    findings).  ``units``: Z3 resource units left (deterministic); ``per_check``: the
    resource limit of one optional question of the store (a base check stays at the
    store's rlimit); ``max_questions``: optional questions the store may ask (each costs
    in proportion to its base, so the count is bounded too); ``questions`` /
    ``skipped``: asked / not asked; ``findings_checks``: checks of paid searches
    (``GroupSolver``: the findings, the queries' witnesses)."""

    def __init__(self, units: int = 1_000_000, per_check: int = 200_000, max_questions: int = 256):
        self.units = units                # 40x the corpus maximum
        self.per_check = per_check
        self.max_questions = max_questions
        self.questions = 0
        self.skipped = 0
        self.findings_checks = 0

    def copy(self) -> "Budget":
        new = Budget(self.units, self.per_check, self.max_questions)
        new.questions, new.skipped, new.findings_checks = self.questions, self.skipped, self.findings_checks
        return new

    def allow_question(self) -> bool:
        """Count one optional question; False (and counted as skipped) past the budget."""
        self.questions += 1
        if self.units <= 0 or self.questions > self.max_questions:
            self.skipped += 1
            return False
        return True

    def pay(self, solver: Solver, *assumptions, rlimit: int, floor: int = 0):
        """``solver.check(*assumptions)`` at ``rlimit``, its cost (read around it: the
        counter is the context's, and a pooled context served others before) taken from
        ``units``, at least ``floor``."""
        before = solver.rlimit_used()
        r = solver.check(*assumptions, rlimit=rlimit)
        self.units -= max(floor, solver.rlimit_used() - before)
        return r


class GroupSolver:
    """An incremental solver over a set of constraints (each symbol's domain included; a
    constraint Z3 cannot read is left out: fewer constraints, so whatever is found is
    still implied), every check paid from the shared ``Budget`` (at most ``rlimit``, at
    least one unit): a spent budget or an ``unknown`` raises ``OutOfBudget``.  ``s`` and
    ``terms`` are the raw solver and its translation (``seen``: values each symbol took
    in the models noted; ``skipped``: constraints left out)."""

    def __init__(self, constraints, lower_bound, budget: Budget, rlimit: int, watchdog_s: float):
        self.solver = Solver(rlimit, watchdog_s)
        self.s, self.terms = self.solver.s, self.solver.terms
        self.budget = budget
        self.rlimit = rlimit
        syms: set = set()
        self.skipped = 0          # constraints Z3 cannot take: a model found may violate them
        for c in constraints:
            try:
                self.s.add(self.terms.relation(c.relation))
            except Untranslatable:
                self.skipped += 1
                continue          # fewer constraints: every bound found is still implied
            syms |= c.relation.symbols()
        for x in syms:
            lo = lower_bound(x)
            if lo is not None:
                self.s.add(self.terms.var(x.name) >= lo)
        self.checks = 0
        self.seen: dict = {}       # symbol -> values it took in the models found (divisibility)

    def check(self, *fs):
        b = self.budget
        if b.units <= 0:
            raise OutOfBudget()
        want = min(self.rlimit, max(1, b.units))
        self.checks += 1
        b.findings_checks += 1
        r = b.pay(self.solver, *fs, rlimit=want, floor=1)
        if r == z3.unknown:
            raise OutOfBudget()     # (undecided: a search that cannot go on is not searched)
        return r

    def value(self, v):
        m = self.s.model()
        x = m.eval(v, model_completion=True)
        return x.as_long() if z3.is_int_value(x) else None

    def note(self, sym, v):
        """Remember the value ``sym`` (Z3 term ``v``) takes in the last model."""
        x = self.value(v)
        if x is not None:
            self.seen.setdefault(sym, set()).add(x)
        return x
