"""The constraint store: symbols, constraints, a fast path, and Z3 behind it.

Layers (see docs/ARCHITECTURE.md, "The store"):

1. **Symbols.**  Every symbol is declared here with a kind (``input``,
   ``data`` or ``alias``) and the provenance of whatever made it.
2. **Fast path: a union-find over atoms.**  An atom is a symbol or an opaque
   nonlinear subterm (``Bcast(a, b)``, ``FloorDiv(H, 16)``, ``B*S``).  An
   equality linear in some atom with coefficient +-1 *eliminates* that atom:
   ``subst[atom] = value``.  The representative is chosen by rank: user input
   names are kept over generated input names, those over data symbols, those
   over aliases, and a nonlinear subterm is always the one eliminated, never
   the representative of a symbol.  ``canon(e)`` rewrites to representatives
   lazily, with path compression and an occurrence index (``_dep``) so an
   elimination invalidates only the cached forms that mention it: the cost is
   near-linear in the number of unifications.  Each atom also has an interval
   (from the domain and from data symbols' declared upper bounds), which
   answers sign questions (``S + 1 > 0``) without Z3.
3. **Residual constraints**: whatever the fast path cannot decide or absorb.
4. **Z3, lazily**: one incremental solver per store, in a Z3 context of its
   own, created on first need and fed in batches.

The consistency discipline
--------------------------
The solver holds a *base* known to be satisfiable.  Constraints added since
(the *pending* batch) join it only after a check: ``sat`` -> they join;
``unsat`` -> the batch is split until the constraints that break it are
found, and each is *set aside* as a conflict (explained by a minimal core
naming nodes) while the rest join; ``unknown`` -> the ones Z3 cannot decide
are set aside as *undecided* (listed in results).  Facts are never removed
from the base, so a PROVEN or REFUTED answer, once given, stays true; and
every answer comes from a base known to be satisfiable: an answer from a
subset of the constraints is still entailed by all of them.

Fast-path eliminations are not set aside (rules have already used them).  A
conflict whose core holds no constraint that can be set aside marks the
store *broken*: the conflict is reported, consistency is False, and Z3 gives
no further answers (everything it would answer is UNKNOWN).
"""
from __future__ import annotations

import enum
import itertools
import math
import threading
import time
import weakref
from dataclasses import dataclass, field

import sympy

from . import expr as E
from .constraints import And, Conflict, Constraint, Not, Or, Provenance, Rel, Relation, eq, ge, le
from .lazyz3 import z3
from .printing import show
from .z3bridge import SmtLib, Untranslatable, Z3Terms, domain_bound, one_line


class Verdict(enum.Enum):
    """The answer to a question about the dims: PROVEN (holds for every input the
    constraints allow), REFUTED (for none), UNKNOWN (not decided: ``Store.decide`` says so
    for "true for some inputs and not others" too), CONTINGENT (``Result.prove`` /
    ``Result.query``: a witness exists on each side).  Not a truth value: ``bool(v)``
    raises TypeError; compare with ``is``."""

    PROVEN = "proven"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    CONTINGENT = "contingent"   # Result.query only (true for some inputs, false for others); decide never returns it

    def __bool__(self):
        # ``if result.prove(...)`` was taken for REFUTED too (enum members are truthy)
        raise TypeError(f"a Verdict ({self.name}) is not a truth value: compare it, e.g. "
                        "`result.prove(...) is Verdict.PROVEN`, or use `result.query(...).proven`")


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
    """One daemon thread that interrupts Z3 contexts whose armed deadline has
    passed.  Each store arms it for its own context only, so one analysis never
    stops another's solver."""

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
_CANON_EPOCHS = itertools.count(1)


class _ContextPool:
    """Z3 contexts of stores that are gone, for the next store to use (making one costs
    about 1.5 ms, more than a typical model's questions).  A context serves one store
    at a time: taken when a store first needs Z3, given back when that store is freed
    (its solver and terms go with it); at most a few are kept."""

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

# "every symbol is v" points tried as models of the live constraints (Store._witnesses):
# 0 and a large value settle questions such as ``seq > 0`` or ``seq <= 128`` without Z3
WITNESS_VALUES = (0, 1, 2, 3, 64, 1000, 1024)
_VARY_ORDER = (64, 3, 1024, 2, 1000, 1, 0)      # witness points _varied_truths starts from, first first

_INF = math.inf
_ATOM_TYPES = (E.FloorDiv, E.CeilDiv, E.Mod, E.Bcast, sympy.Min, sympy.Max, sympy.Piecewise,
               sympy.Mul, sympy.Pow)
# representative rank: higher is kept; the lowest-ranked atom of an equality is eliminated
_RANK = {"alias": 0, "data": 1, "compound": 2, "generated": 3, "input": 4}


@dataclass
class Store:
    domain: Domain = field(default_factory=Domain)
    rlimit: int = 2_000_000
    watchdog_s: float = 10.0

    def __post_init__(self):
        self.symbols: dict[str, SymbolInfo] = {}
        self.reserved: set[str] = set()   # user names that generated names must avoid
        self.constraints: list[Constraint] = []
        self.conflicts: list[Conflict] = []
        self.undecided: list[Constraint] = []
        self.subst: dict = {}              # atom -> value (possibly stale; canon() resolves)
        self.reasons: dict = {}            # atom -> constraint ids that justify its elimination
        self.definitions: dict = {}        # alias symbol -> the expression it stands for
        self._alias_of: dict = {}
        self._serial = itertools.count()
        self._names: dict[str, int] = {}
        self._canon: dict = {}
        self._dep: dict = {}               # symbol -> expressions whose cached canon mentions it
        self._compound_keys: dict = {}     # symbol -> compound atoms (subst keys) that mention it
        self._interval_cache: dict = {}
        self._residual_seen: dict = {}
        # z3 state
        self.z3_enabled = True             # False in forks: they answer from the fast path only
        self.is_fork = False
        self.broken = False
        self._ctx: z3.Context | None = None
        self._rl_index = None           # index of "rlimit count" in the solver's statistics
        # changes whenever a canonical form may change (an elimination); unique across all
        # stores and forks, so a canonical form cached with it is never taken for another's
        self.canon_epoch = next(_CANON_EPOCHS)
        self._solver_rlimit: dict = {}  # id(solver) -> the rlimit it is set to
        self._terms: Z3Terms | None = None
        self._solver: z3.Solver | None = None
        self._base: list = []              # z3 formulas of the base, for rebuilding the solver
        self._fed_syms: set = set()
        self._fed_elims: set = set()
        self._pending: list[Constraint] = []
        self._pending_elims: list = []
        self._deferred: list = []          # joined the base by a witness point, not yet given to Z3
        self._fact_lo: dict = {}           # term -> lower / upper bound stated by base facts (_note_bounds)
        self._fact_hi: dict = {}
        self._pending_joined = False       # the last _sync brought constraints into the base
        self._wit_state = None             # (canon_epoch, constraints checked, witness values) (_witnesses)
        self._wit_rels = None              # (canon_epoch, live relations, {name: relations on it}) (_varied_truths)
        # value of each expression evaluated at "every symbol is v", per v: fixed for good (an
        # alias's definition never changes), so a chain of aliases is evaluated once, not per question
        self._uniform_memo: dict = {}
        self._deferred_elims: list = []
        self._models: list = []            # models of the current base (witnesses)
        self._epoch = 0                    # bumps whenever the base grows
        self._cache: dict = {}
        self.z3_checks = 0
        self.z3_unknowns = 0
        # optional questions (upgrading exact Bcast / Min / Max / Piecewise terms, static
        # values of dims that are exact already) share one deterministic budget of checks,
        # so their cost stays bounded whatever the graph; past it, terms stay as they are
        self.optional_budget = 1_000_000      # Z3 resource units (rlimit), deterministic: 40x the corpus maximum
        self.optional_skipped = 0
        self.findings_checks = 0                # solver checks the findings search made (findings.py)
        self.optional_questions = 0
        self.optional_rlimit = 200_000          # per optional check (a base check stays at rlimit)
        self._optional_now = False
        self._huge_syms: set = set()
        self.optional_max_questions = 256      # each costs in proportion to the base: bound the count too

    # ------------------------------------------------------------ symbols
    def fresh_name(self, hint: str) -> str:
        """A name no declared or reserved (user) name uses."""
        base = "".join(ch if (ch.isalnum() or ch == "_") else "_" for ch in hint) or "d"
        if base[0].isdigit():
            base = "_" + base
        if base not in self.symbols and base not in self._names and base not in self.reserved:
            self._names[base] = 0
            return base
        while True:
            self._names[base] = self._names.get(base, 0) + 1
            name = f"{base}_{self._names[base]}"
            if name not in self.symbols and name not in self.reserved:
                return name

    def declare(self, name: str, kind: str, origin: Provenance, *, generated=False,
                upper=None) -> sympy.Symbol:
        info = self.symbols.get(name)
        if info is not None:
            return info.symbol
        s = E.symbol(name)
        self.symbols[name] = SymbolInfo(s, kind, origin, generated, upper, next(self._serial))
        if upper is not None:
            self.add(le(s, upper), origin, kind="bound")
        return s

    def new_data(self, hint: str, origin: Provenance, upper=None) -> sympy.Symbol:
        return self.declare(self.fresh_name(hint), "data", origin, generated=True, upper=upper)

    def info(self, s) -> SymbolInfo | None:
        return self.symbols.get(s.name) if isinstance(s, sympy.Symbol) else None

    def input_symbols(self) -> list[SymbolInfo]:
        return [i for i in self.symbols.values() if i.kind == "input"]

    def lower_bound(self, s) -> int | None:
        """The domain's lower bound of symbol ``s`` (the one home: z3bridge.domain_bound)."""
        info = self.info(s)
        return domain_bound(s, info.kind if info else None, self.domain.inputs_positive)

    def fork(self) -> "Store":
        """A private copy for a subgraph that may not run: same facts, its own
        additions.  A fork never uses Z3 (its answers come from the fast path and
        intervals), so forking costs a copy of the fast path's tables, never a
        rebuilt solver."""
        import copy
        new = copy.copy(self)
        new.symbols = dict(self.symbols)
        new.constraints = list(self.constraints)
        new.conflicts = list(self.conflicts)
        new.undecided = list(self.undecided)
        new.subst = dict(self.subst)
        new.reasons = dict(self.reasons)
        new.definitions = dict(self.definitions)
        new._alias_of = dict(self._alias_of)
        new._names = dict(self._names)
        new._canon = {}
        new._dep = {}
        new._compound_keys = {k: set(v) for k, v in self._compound_keys.items()}
        new._residual_seen = dict(self._residual_seen)
        new.z3_enabled = False
        new.is_fork = True
        new.canon_epoch = next(_CANON_EPOCHS)
        new._ctx = new._terms = new._solver = None
        new._base = []
        new._fed_syms, new._fed_elims = set(), set()
        new._huge_syms = set()
        new._pending, new._pending_elims, new._models = [], [], []
        new._deferred, new._deferred_elims = [], []
        new._interval_cache = {}
        new._wit_state = None
        new._wit_rels = None
        new._uniform_memo = {}
        new._fact_lo, new._fact_hi = dict(self._fact_lo), dict(self._fact_hi)
        new._cache = {}
        new.z3_checks = new.z3_unknowns = 0
        return new

    def adopt_names(self, fork: "Store"):
        """Declare the symbols a fork made (no facts), so names never collide and values
        from the fork stay readable (their dims are UNKNOWN here)."""
        for name, info in fork.symbols.items():
            if name not in self.symbols:
                self.declare(name, "data", info.origin, generated=True)
        for base, k in fork._names.items():
            self._names[base] = max(self._names.get(base, 0), k)

    # ------------------------------------------------------------ canonical forms
    def canon(self, e):
        if isinstance(e, int) or not self.subst:
            return e
        hit = self._canon.get(e)
        if hit is not None:
            return hit
        out = e
        syms = E.free_symbols(e)
        m = {}
        for s in syms:
            if s in self.subst:
                m[s] = E.to_sympy(self._resolve(s))
        if m:
            out = E.norm(e.xreplace(m))
        if self._compound_keys and not isinstance(out, int):
            out = self._replace_compounds(out)
        self._canon[e] = out
        for x in E.free_symbols(out):
            self._dep.setdefault(x, []).append(e)
        return out

    def _resolve(self, s):
        """Canonical value of an eliminated symbol, compressing the path."""
        v = self.subst[s]
        c = self.canon(v)
        if c is not v and c != v:
            self.subst[s] = c
        return c

    def _replace_compounds(self, e):
        for _ in range(8):
            keys = [a for a in sympy.preorder_traversal(e) if isinstance(a, _ATOM_TYPES) and a in self.subst]
            if not keys:
                return e
            e = E.norm(e.xreplace({a: E.to_sympy(self.canon(self.subst[a])) for a in keys}))
            if isinstance(e, int):
                return e
        return e

    def canon_rel(self, r: Relation) -> Relation:
        return r.map(self.canon)

    def why(self, e) -> frozenset:
        """Constraint ids behind the substitutions ``canon(e)`` uses."""
        out: set = set()
        todo = list(E.free_symbols(e)) if not isinstance(e, int) else []
        if not isinstance(e, int) and self._compound_keys:
            todo += [a for a in sympy.preorder_traversal(e) if isinstance(a, _ATOM_TYPES) and a in self.subst]
        seen = set()
        while todo:
            s = todo.pop()
            if s in seen or s not in self.subst:
                continue
            seen.add(s)
            out |= self.reasons.get(s, frozenset())
            v = self.subst[s]
            if not isinstance(v, int):
                todo.extend(E.free_symbols(v))
        return frozenset(out)

    def _why_rel(self, r: Relation) -> frozenset:
        out: set = set()
        for side in _sides(r):
            out |= self.why(side)
        return frozenset(out)

    # ------------------------------------------------------------ intervals
    def _ordered_minmax(self, e):
        """``e`` with each Min / Max whose arguments the intervals order replaced by the
        smaller / larger one (``min(128, seq)`` is ``seq`` once ``seq <= 128`` is a fact)."""
        def pick(x):
            args = [E.norm(a) for a in x.args]
            if len(args) != 2:
                return x
            (alo, ahi), (blo, bhi) = self.interval(args[0]), self.interval(args[1])
            small, large = (args[0], args[1]) if ahi <= blo else (args[1], args[0]) if bhi <= alo else (None, None)
            if small is None:
                return x
            return E.to_sympy(small if isinstance(x, sympy.Min) else large)
        try:
            return E.norm(e.replace(lambda x: isinstance(x, (sympy.Min, sympy.Max)), pick))
        except Exception:
            return e

    def interval(self, e) -> tuple:
        """(lo, hi) with +-inf for unbounded; from the domain and declared upper bounds only."""
        if isinstance(e, int):
            return (e, e)
        hit = self._interval_cache.get(e)
        if hit is None:
            hit = self._iv(e)
            if self._fact_lo or self._fact_hi:
                lo, hi = hit       # a base fact about this very term (_note_bounds)
                hit = (max(lo, self._fact_lo.get(e, lo)), min(hi, self._fact_hi.get(e, hi)))
            self._interval_cache[e] = hit
        return hit

    def _iv(self, e):
        if isinstance(e, sympy.Integer):
            return (int(e), int(e))
        if isinstance(e, sympy.Symbol):
            if e in self.definitions:
                return self.interval(E.norm(self.definitions[e]))
            lo = self.lower_bound(e)
            info = self.info(e)
            hi = _INF
            if info is not None and isinstance(info.upper, int):
                hi = info.upper
            lo = -_INF if lo is None else lo
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
                    return (-_INF, _INF)
                return (math.floor(min(q)) if not math.isinf(min(q)) else min(q),
                        math.ceil(max(q)) if not math.isinf(max(q)) else max(q))
            return (-_INF, _INF)
        if isinstance(e, E.Mod):
            b = self.interval(E.norm(e.args[1]))
            if b[0] >= 1:
                return (0, b[1] - 1)
            return (-_INF, _INF)
        if isinstance(e, (E.Bcast, sympy.Piecewise)):
            vals = e.args if isinstance(e, E.Bcast) else [v for v, _ in e.args]
            ivs = [self.interval(E.norm(v)) for v in vals]
            return (min(i[0] for i in ivs), max(i[1] for i in ivs))
        if isinstance(e, (sympy.Min, sympy.Max)):
            ivs = [self.interval(E.norm(v)) for v in e.args]
            f = min if isinstance(e, sympy.Min) else max
            return (f(i[0] for i in ivs), f(i[1] for i in ivs))
        return (-_INF, _INF)

    def _interval_verdict(self, r) -> Verdict | None:
        if isinstance(r, Rel):
            d = E.sub(r.lhs, r.rhs)
            if not isinstance(d, int) and d.has(sympy.Min, sympy.Max):
                d = self._ordered_minmax(d)
            lo, hi = self.interval(d)
            op = r.op
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
        if isinstance(r, Not):
            v = self._interval_verdict(r.arg)
            return None if v is None else (Verdict.REFUTED if v is Verdict.PROVEN else Verdict.PROVEN)
        if isinstance(r, (Or, And)):
            vs = [self._interval_verdict(a) for a in r.args]
            win, lose = (Verdict.PROVEN, Verdict.REFUTED) if isinstance(r, Or) else (Verdict.REFUTED, Verdict.PROVEN)
            if any(v is win for v in vs):
                return win
            if all(v is lose for v in vs):
                return lose
        return None

    def _cheap_verdict(self, cr) -> Verdict | None:
        """What intervals and the case split settle, without witnesses or Z3."""
        iv = self._interval_verdict(cr)
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
            if b.const_value() is True or self._interval_verdict(b) is Verdict.PROVEN:
                return True
        return False

    # ------------------------------------------------------------ adding
    def alias(self, e, origin: Provenance):
        """A symbol standing for the (too big) expression ``e``.

        Its definition ``s == e`` is a constraint (kind ``definition``) that the
        fast path never absorbs, so later rules work on the small symbol; ``Result``
        expands it back at the end (``definitions``), so exactness is not lost."""
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
        return c

    def _rank(self, atom) -> tuple:
        if not isinstance(atom, sympy.Symbol):
            return (_RANK["compound"], 0)
        info = self.info(atom)
        if info is None:
            return (_RANK["data"], 0)
        if info.kind == "input":
            return (_RANK["generated"] if info.generated else _RANK["input"], -info.serial)
        return (_RANK.get(info.kind, _RANK["data"]), -info.serial)

    def _absorb(self, c: Constraint, cr: Rel) -> bool:
        d = E.sub(cr.lhs, cr.rhs)
        if isinstance(d, int):
            return False
        best = None
        terms = sympy.Add.make_args(d)
        for t in terms:
            coeff, rest = t.as_coeff_Mul()
            if coeff not in (1, -1):
                continue
            if isinstance(rest, sympy.Symbol):
                if any(rest in E.free_symbols(E.norm(o)) for o in terms if o is not t):
                    continue
            elif isinstance(rest, _ATOM_TYPES) and not isinstance(rest, sympy.Integer):
                # an opaque term is eliminated only when the rest of the equation shares no
                # symbol with it (``K == Bcast(a, b)``): then the elimination is a definition
                inner = E.free_symbols(rest)
                if any(E.free_symbols(E.norm(o)) & inner for o in terms if o is not t):
                    continue
            else:
                continue
            key = self._rank(rest)
            if best is None or key < best[0]:
                best = (key, rest, int(coeff))
        if best is None:
            return False
        _, s, coeff = best
        value = E.norm(-(d - coeff * s) * coeff)
        reason = frozenset({c.id}) | self._why_rel(c.relation)
        lo = self.lower_bound(s) if isinstance(s, sympy.Symbol) else None
        if isinstance(value, int) and lo is not None and value < lo:
            c.status = "conflict"
            self._record_conflict(f"{s.name} == {value}", reason,
                                  detail=f"{s.name} would be {value}, below its domain's bound {lo}")
            return True
        self._eliminate(s, value, reason)
        c.status = "absorbed"
        if lo is not None and self.interval(value)[0] < lo and s not in self._fed_syms:
            # the eliminated symbol's domain moves onto its value: a constraint of its own,
            # so that Z3 can set it aside if it is what breaks consistency
            self.add(ge(value, lo), c.provenance, kind="derived", absorb=False)
        return True

    def _eliminate(self, s, value, reason: frozenset):
        self.canon_epoch = next(_CANON_EPOCHS)
        self.subst[s] = value
        self.reasons[s] = reason
        if isinstance(s, sympy.Symbol):
            for e in self._dep.pop(s, ()):
                self._canon.pop(e, None)
            for key in list(self._compound_keys.pop(s, ())):
                self._rekey(key)
        else:
            syms = E.free_symbols(s)
            for x in syms:
                self._compound_keys.setdefault(x, set()).add(s)
                for e in self._dep.pop(x, ()):   # cached forms may contain the atom
                    self._canon.pop(e, None)
        self._pending_elims.append(s)

    def _rekey(self, key):
        """A compound atom whose arguments changed: restate ``key == value`` in canonical form."""
        if key not in self.subst:
            return
        value = self.subst.pop(key)
        self.canon_epoch = next(_CANON_EPOCHS)
        reason = self.reasons.pop(key, frozenset())
        for x in E.free_symbols(key):
            ks = self._compound_keys.get(x)
            if ks is not None:
                ks.discard(key)
        ids = sorted(reason)
        prov = self.constraints[ids[0]].provenance if ids else Provenance("", "domain", "congruence", "")
        self.add(eq(key, value), prov, kind="derived")

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

    # ------------------------------------------------------------ z3: base and pending
    def _z3(self):
        if self._solver is None:
            if self._ctx is None:
                self._ctx = _CONTEXTS.take()
                weakref.finalize(self, _CONTEXTS.give_back, self._ctx)
                self._terms = Z3Terms(self._ctx)
            self._solver = self._new_solver()
            if self._base:
                self._solver.add(*self._base)
        if self._deferred or self._deferred_elims:
            self._flush_deferred()
        return self._solver

    def _translate(self, elims, constraints):
        """(definitions, [(constraint, formula)]): the Z3 form of eliminations and of the
        residual constraints among ``constraints``; one Z3 cannot read is set aside as
        undecided (never a fact for Z3) and listed."""
        defs: list = []
        for s in elims:
            if s in self.subst:
                self._feed_elim(s, defs)
        batch = []
        for c in constraints:
            if c.status != "residual":
                continue
            try:
                batch.append((c, self._formula(c, defs)))
            except Untranslatable:
                c.status = "undecided"
                self.undecided.append(c)
        return defs, batch

    def _flush_deferred(self):
        """Give Z3 the constraints that joined the base through a witness point (``_sync``)."""
        defs, batch = self._translate(self._deferred_elims, self._deferred)
        self._deferred_elims, self._deferred = [], []
        out = defs + [f for _, f in batch]
        if out:
            self._solver.add(*out)
            self._base.extend(out)

    def _new_solver(self) -> z3.Solver:
        s = z3.Solver(ctx=self._ctx)
        s.set("rlimit", self.rlimit)
        self._solver_rlimit = {id(s): self.rlimit}
        return s

    def _domain_formula(self, s):
        lo = self.lower_bound(s)
        return None if lo is None else self._terms.var(s.name) >= lo

    def _feed_symbol(self, s, out: list):
        if s in self._fed_syms:
            return
        self._fed_syms.add(s)
        if s in self.subst and s not in self._fed_elims:
            # eliminated before Z3 saw it: its domain is the derived constraint on its value
            self._feed_elim(s, out)
            return
        f = self._domain_formula(s)
        if f is not None:
            out.append(f)

    def _feed_elim(self, s, out: list):
        if s in self._fed_elims:
            return
        self._fed_elims.add(s)
        val = self.subst[s]
        try:
            lhs = self._terms.term(s) if not isinstance(s, sympy.Symbol) else self._terms.var(s.name)
            t = self._terms.term(val)
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

    def _formula(self, c: Constraint, out: list):
        """The Z3 formula of a residual constraint (its symbols' domains go to ``out``)."""
        cr = self.canon_rel(c.relation)
        f = self._terms.relation(cr)
        for s in _rel_symbols(cr):
            self._feed_symbol(s, out)
        return f

    def _sync(self) -> bool:
        """Bring the pending batch into the base under the consistency discipline.
        False when Z3 can give no answer (disabled, or the store is broken)."""
        self._pending_joined = False
        if not self.z3_enabled or self.broken:
            return False
        if not self._pending and not self._pending_elims:
            return True
        self._pending_joined = True
        if self._witnesses():
            # a point satisfies every live constraint, the batch included: the batch joins
            # the base without a solver call; Z3 is given it when first needed (``_z3``)
            self._deferred_elims.extend(self._pending_elims)
            joined = [c for c in self._pending if c.status == "residual"]
            self._deferred.extend(joined)
            self._pending, self._pending_elims = [], []
            self._note_bounds(joined)
            self._grew()
            return True
        self._z3()
        defs, batch = self._translate(self._pending_elims, self._pending)
        self._pending_elims, self._pending = [], []
        if defs:
            self._solver.add(*defs)
            self._base.extend(defs)
        if not batch:
            if defs:
                self._grew()
            return True
        fs = [f for _, f in batch]
        self._solver.add(*fs)
        if self._witness([c for c, _ in batch]):
            # a concrete assignment satisfies the base and the batch: sat, without Z3
            self._base.extend(fs)
            self._note_bounds([c for c, _ in batch])
            self._grew()
            return True
        res = self._check()
        if res == z3.sat:
            self._base.extend(fs)
            self._note_bounds([c for c, _ in batch])
            self._grew(self._solver.model())
            return True
        # unsat or unknown: rebuild from the base and bring the batch in piece by piece
        self._solver = self._new_solver()
        self._solver.add(*self._base)
        if defs and self._check() == z3.unsat:
            # the eliminations alone contradict the base: nothing can be set aside
            self._break(batch)
            return False
        self._admit(batch)
        self._grew()
        return not self.broken

    def _witness(self, batch) -> bool:
        """Is the base plus ``batch`` satisfied by one of the simple points of
        ``_witnesses``?  Tried for large batches only (small ones: Z3 is quick)."""
        if len(batch) < 32 and sum(E.size(x) for c in batch for x in _sides(c.relation)) < 400:
            return False      # a failed witness costs a full pass over the constraints
        return bool(self._witnesses())

    def _witnesses(self) -> list:
        """Values ``v`` such that "every free symbol is ``v``" (aliases by their
        definitions) satisfies every constraint the store holds.  Each one is a
        model: a proof of satisfiability, and a counterexample to any claim false
        there.  Failing to find one proves nothing."""
        n = len(self.constraints)
        state = self._wit_state
        if state is not None and state[0] == self.canon_epoch:
            # no elimination since: only the constraints added since can remove a witness
            _, checked, out = state
            if checked == n or not out:
                return out
            rels = [self.canon_rel(c.relation) for c in self.constraints[checked:] if c.status == "residual"]
            out = [v for v in out if self._holds_at(rels, v)]
            self._wit_state = (self.canon_epoch, n, out)
            if self._wit_rels is not None and self._wit_rels[0] == self.canon_epoch:
                self._wit_rels[1].extend(rels)
            return out
        rels = [self.canon_rel(c.relation) for c in self.constraints if c.status == "residual"]
        # eliminated atoms: a symbol keeps its domain through its value; an opaque
        # term's definition must hold at the point too
        for k, v in self.subst.items():
            if isinstance(k, sympy.Symbol):
                lo = self.lower_bound(k)
                if lo is not None:
                    rels.append(ge(self.canon(k), lo))
            else:
                rels.append(eq(E.norm(k.func(*[E.to_sympy(self.canon(E.norm(a))) for a in k.args])),
                               self.canon(v)))
        out = [v for v in WITNESS_VALUES if self._holds_at(rels, v)]
        self._wit_state = (self.canon_epoch, n, out)
        self._wit_rels = (self.canon_epoch, rels, {})     # (the index: _varied_truths)
        return out

    _VARY_MAX = 150     # relation evaluations one question may spend on varied points

    def _varied_truths(self, cr, seen: set) -> set:
        """``seen`` grown by points that vary one symbol of ``cr`` away from a witness
        point: that symbol at an end of its interval, next to one, or at another witness
        value.  A varied point counts only where every live constraint that mentions the
        symbol holds (the others hold at the witness already), so each is a model too.
        Bounded work: relations through aliases or over big terms are not evaluated at
        moved points (the question then goes to Z3 as before)."""
        wits = self._witnesses()
        state = self._wit_rels
        if not wits or state is None or state[0] != self.canon_epoch:
            return seen
        _, rels, index = state
        defs = self.definitions
        if any(x in defs for x in _rel_symbols(cr)):
            return seen          # (an alias: evaluating it at moved points costs its whole definition)
        by_name = index.setdefault("by_name", {})
        for r in rels[index.get("n", 0):]:        # index the relations added since, once each
            syms = _rel_symbols(r)
            heavy = any(x in defs for x in syms) or sum(E.size(x) for x in _sides(r)) > 200
            ns = frozenset(self._point(syms, 0)) if not heavy else frozenset(x.name for x in syms)
            for name in ns:
                by_name.setdefault(name, []).append((r, ns, heavy))
        index["n"] = len(rels)
        leaves = list(self._point(_rel_symbols(cr), 0))
        budget = self._VARY_MAX
        seen = set(seen)
        # the symbol with the fewest constraints first: its moved points cost the least
        for name in sorted(leaves, key=lambda n: (len(by_name.get(n, ())), n)):
            info = self.symbols.get(name)
            entries = by_name.get(name, ())
            if info is None or any(h for _, _, h in entries) or len(entries) > self._VARY_MAX:
                continue         # its constraints go through aliases, are big or many: not worth it
            mine = [r for r, _, _ in entries]
            names = set().union(*(ns for _, ns, _ in entries)) if entries else set()
            lo, hi = self.interval(info.symbol)
            cands = {w for w in WITNESS_VALUES if lo <= w <= hi}
            for end, nxt in ((lo, lo + 1), (hi, hi - 1)):
                if not math.isinf(end):
                    cands.update(w for w in (end, nxt) if lo <= w <= hi)
            for v in sorted(wits, key=_VARY_ORDER.index)[:3]:
                if not self._in_domain(dict.fromkeys(set(leaves) | names, v), v):
                    continue
                solved = set()       # x == e: x at e's value, the point where it flips to true
                for a in (cr.args if isinstance(cr, (Or, And)) else (cr,)):
                    if isinstance(a, Rel) and a.op in ("==", "!="):
                        for x, e in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                            if x == info.symbol and name not in self._point(E.free_symbols(e), 0):
                                try:
                                    w = E.eval_int(e, dict.fromkeys(leaves, v), defs)
                                except Exception:
                                    continue
                                if lo <= w <= hi:
                                    solved.add(w)
                for w in sorted(solved - {v}) + sorted(cands - solved - {v}):
                    if budget <= 0:
                        return seen
                    budget -= len(mine) + 1
                    env = dict.fromkeys(leaves, v)
                    env.update(dict.fromkeys(names, v))
                    env[name] = w
                    try:
                        if not all(_holds(r, env, defs) for r in mine):
                            continue
                        seen.add(bool(_holds(cr, env, defs)))
                    except Exception:
                        continue
                    if len(seen) == 2:
                        return seen
        return seen

    def _holds_at(self, rels, v) -> bool:
        """Do all ``rels`` hold at "every symbol is ``v``" (within the symbols' domains)?"""
        syms: set = set()
        for r in rels:
            syms |= _rel_symbols(r)
        env = self._uniform(syms, v)
        if not self._in_domain(env, v):
            return False
        memo = self._uniform_memo.setdefault(v, {})
        try:
            return all(_holds(r, env, self.definitions, memo) for r in rels)
        except Exception:
            return False

    def _in_domain(self, env: dict, v: int) -> bool:
        """Does "every symbol of ``env`` is ``v``" respect each symbol's domain?"""
        if v >= 1 or isinstance(env, _UniformEnv):
            return True        # (a uniform env at 0 is made only when every lower bound is 0)
        for name in env:
            info = self.symbols.get(name)
            lo = self.lower_bound(info.symbol) if info is not None else 0
            if lo is not None and lo > v:
                return False
        return True

    def _witness_points(self, syms) -> list:
        """(value, env) of each witness, over ``syms``, that respects their domains."""
        out = []
        for v in self._witnesses():
            env = self._uniform(syms, v)
            if self._in_domain(env, v):
                out.append((v, env))
        return out

    def _witness_truths(self, cr) -> set:
        """The truth values of ``cr`` at the witness points.  The points satisfy every live
        constraint (pending ones included): {True, False} means neither proven nor
        refuted, with no solver call; {True} rules out refuting it, {False} proving it."""
        seen = set()
        for v, env in self._witness_points(_rel_symbols(cr)):
            try:
                seen.add(bool(_holds(cr, env, self.definitions, self._uniform_memo.setdefault(v, {}))))
            except Exception:
                pass
        return seen

    def truths(self, relation: Relation) -> set:
        """The truth values ``relation`` takes at the models of every live constraint the
        store knows without a solver call (the witness points and points varied from them,
        each evaluated exactly).  ``{True, False}``: true for some inputs the constraints
        allow and false for others (``Result.prove``'s CONTINGENT); fewer values say nothing."""
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is not None:
            return {bool(v)}
        if self.broken:
            return set()
        seen = self._witness_truths(cr)
        if len(seen) == 1:
            seen = self._varied_truths(cr, seen)
        syms = _rel_symbols(cr)
        if len(seen) < 2 and self._models and not self._pending and not self._pending_elims \
                and all(x in self._fed_syms for x in syms):
            # Z3's models of the base (``decide`` keeps a few): with nothing pending and the
            # claim's symbols (and their domains) in the base, each is a model of every live
            # constraint
            try:
                f = self._terms.relation(cr)
            except Untranslatable:
                return seen
            for m in self._models:
                val = m.eval(f, model_completion=True)
                if z3.is_true(val) or z3.is_false(val):
                    seen.add(bool(z3.is_true(val)))
        return seen

    def _not_static_at_witnesses(self, e) -> bool:
        """Does ``e`` take two values at witness points (so it is not static)?"""
        vals = set()
        for v, env in self._witness_points(E.free_symbols(e)):
            try:
                vals.add(E.eval_int(e, env, self.definitions, self._uniform_memo.setdefault(v, {})))
            except Exception:
                pass
        return len(vals) > 1

    def _uniform(self, syms, v):
        """The point "every leaf symbol is ``v``" as an environment: a mapping that answers
        ``v`` for every name but an alias's (evaluated from its definition), so it costs
        nothing to make (``_point`` walks every definition ``syms`` reach: a chain of n
        broadcasts made each question cost O(n)).  Under a domain with a positive lower
        bound, the point at 0 is checked leaf by leaf (``_point``)."""
        if v >= 1 or not self.domain.inputs_positive:
            return _UniformEnv(v, self.symbols)
        return self._point(syms, v)

    def _point(self, syms, v) -> dict:
        """{name: v} for every leaf symbol ``syms`` reach (through alias definitions)."""
        env: dict = {}
        todo = list(syms)
        seen = set()
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            d = self.definitions.get(x)
            if d is None:
                env[x.name] = v
            else:
                todo.extend(E.free_symbols(d))
        return env

    def _admit(self, batch):
        """Add ``batch`` to the base, setting aside what makes it unsat or undecided."""
        if not batch:
            return
        fs = [f for _, f in batch]
        res = self._check(*fs) if len(batch) > 1 else self._check(fs[0])
        if res == z3.sat:
            self._solver.add(*fs)
            self._base.extend(fs)
            self._note_bounds([c for c, _ in batch])
            return
        if len(batch) > 1:
            mid = len(batch) // 2
            self._admit(batch[:mid])
            self._admit(batch[mid:])
            return
        c, f = batch[0]
        if res == z3.unknown:
            c.status = "undecided"
            self.undecided.append(c)
            return
        c.status = "conflict"
        self._explain(c)

    def _note_bounds(self, joined):
        """Bounds that constraints which just joined the base put on one term: a symbol
        (``seq >= 1``, ``seq <= 128``), an opaque subterm (``samples // 20 - 1 > 0``
        bounds ``samples // 20``), the hull over a disjunction's branches (the broadcast
        disjunction ``seq == min(128, seq) or seq == 1 or min(128, seq) == 1`` gives
        ``seq <= 128``), a ``!=`` at the end of an interval (``seq != 0`` with ``seq >= 0``),
        and every factor of a positive product.  They tighten ``interval``.  Base facts
        are never retracted, so intervals built on them stay true."""
        for c in joined:
            r = self.canon_rel(c.relation)
            if isinstance(r, Rel) and r.op == "!=":
                b = _linear_bound(r.lhs, r.rhs, "==")
                if b is not None and b is not _FALSE:
                    (t, (v, _)), = b.items()
                    lo, hi = self.interval(t)
                    if v == lo:
                        self._tighten(t, v + 1, _INF)
                    elif v == hi:
                        self._tighten(t, -_INF, v - 1)
                continue
            if isinstance(r, Rel) and r.op in (">=", ">"):
                self._note_positive_product(r)
            b = _fact_bounds(r)
            if b is not None and b is not _FALSE:
                for t, (lo, hi) in b.items():
                    self._tighten(t, lo, hi)
            if isinstance(r, Rel):
                self._scan_bounds(r)

    def _tighten(self, t, lo, hi):
        """Record ``lo <= t <= hi`` (a consequence of base facts); through a division by a
        positive integer, its dividend too (``x // 5 >= 4`` is ``x >= 20``)."""
        changed = False
        if lo > self._fact_lo.get(t, -_INF):
            self._fact_lo[t] = lo
            changed = True
        if hi < self._fact_hi.get(t, _INF):
            self._fact_hi[t] = hi
            changed = True
        if changed:
            self._interval_cache.clear()     # (every interval may rest on this term's)
            if isinstance(t, (E.FloorDiv, E.CeilDiv)) and t.args[1].is_Integer and int(t.args[1]) > 0:
                k = int(t.args[1])
                x = E.norm(t.args[0])
                if not isinstance(x, int):
                    if isinstance(t, E.FloorDiv):      # x // k >= lo  <=>  x >= lo*k
                        xlo, xhi = lo * k, hi * k + k - 1
                    else:                              # ceil(x / k) >= lo  <=>  x >= (lo-1)*k + 1
                        xlo, xhi = (lo - 1) * k + 1, hi * k
                    self._tighten(x, xlo, xhi)         # (+-inf stay +-inf)

    _SCAN = 8       # points tried at each end of a one-symbol fact's interval

    def _scan_bounds(self, r):
        """A fact over one symbol ``x`` whose interval has a finite end: the points at
        that end where the fact fails (at most ``_SCAN``, each evaluated exactly) are
        cut off (``seq // 2 + 1 <= seq`` with ``seq >= 0`` fails at 0: ``seq >= 1``)."""
        syms = _rel_symbols(r)
        if len(syms) != 1 or E.size(r.lhs) + E.size(r.rhs) > 16:
            return                # (big terms: too dear to evaluate point by point)
        x, = syms
        if not isinstance(x, sympy.Symbol) or x in self.definitions:
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
                    ok = _holds(r, {x.name: v}, self.definitions)
                except Exception:
                    break
                if ok:
                    if v != end:
                        if step == 1:
                            self._tighten(x, v, _INF)
                        else:
                            self._tighten(x, -_INF, v)
                        lo, hi = self.interval(x)
                    break
                v += step

    def _note_positive_product(self, r):
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
            if not isinstance(base, sympy.Symbol) or (self.lower_bound(base) or -1) < 0:
                return
            bases.append(base)
        for base in bases:
            self._tighten(base, 1, _INF)

    def _grew(self, model=None):
        self._epoch += 1
        self._models = [model] if model is not None else []
        for k in [k for k, v in self._cache.items() if v[0] is None or v[0] is Verdict.UNKNOWN]:
            del self._cache[k]

    def _break(self, batch):
        self.broken = True
        for c, _ in batch:
            c.status = "undecided"
            self.undecided.append(c)
        cs = [c for c in self.constraints if c.status == "absorbed"]
        core = self._core(cs, None) or cs[:20]
        self.conflicts.append(Conflict(" and ".join(str(c.relation) for c in core[:6]), core, {},
                                       "these equalities cannot all hold with every dim >= 0"))

    def _check(self, *assumptions):
        """One budgeted check.  ``rlimit`` bounds the work deterministically; a
        wall-clock watchdog interrupts this store's Z3 context as a last resort
        (Z3's own ``timeout`` is not a hard bound).  ``unknown`` is never a proof."""
        self.z3_checks += 1
        token = _WATCHDOG.arm(self.watchdog_s, self._ctx.interrupt)
        want = self.optional_rlimit if self._optional_now and self.optional_rlimit < self.rlimit else self.rlimit
        if self._solver_rlimit.get(id(self._solver)) != want:     # setting a parameter costs: only on change
            self._solver.set("rlimit", want)
            self._solver_rlimit = {id(self._solver): want}
        before = self._rlimit_used() if self._optional_now else 0
        try:
            res = self._solver.check(*assumptions)
        except z3.Z3Exception:
            res = z3.unknown
        finally:
            _WATCHDOG.disarm(token)
        if self._optional_now:
            # what this check cost, read around it: Z3's counter is its context's, and a
            # context may have served other stores before (the pool)
            self.optional_budget -= max(0, self._rlimit_used() - before)
        if res == z3.unknown:
            self.z3_unknowns += 1
        return res

    # ------------------------------------------------------------ explanations
    def _cone(self, c: Constraint) -> list:
        """Constraints connected to ``c`` through shared symbols (absorbed ones included)."""
        live = [x for x in self.constraints if x.status in ("residual", "absorbed") and x is not c]
        return [c] + cone(live, _rel_symbols(c.relation))

    def _core(self, cands, goal) -> list:
        """A minimal subset of ``cands`` that is unsat (goal None) or entails ``goal``,
        from a fresh tracked solver over their original relations; [] if undecided."""
        ctx = z3.Context()
        terms = Z3Terms(ctx)
        s = z3.Solver(ctx=ctx)
        s.set("rlimit", self.rlimit * 5)
        s.set("core.minimize", True)
        lits = {}
        syms: set = set()
        for c in cands:
            try:
                f = terms.relation(c.relation)
            except Untranslatable:
                continue
            name = f"c{c.id}"
            lits[name] = c
            s.assert_and_track(f, z3.Bool(name, ctx))
            syms |= _rel_symbols(c.relation)
        if goal is not None:
            try:
                s.add(z3.Not(terms.relation(goal)))
            except Untranslatable:
                return []
            syms |= _rel_symbols(goal)
        for x in syms:
            lo = self.lower_bound(x)
            if lo is not None:
                s.add(terms.var(x.name) >= lo)
        token = _WATCHDOG.arm(self.watchdog_s, ctx.interrupt)
        try:
            res = s.check()
        except z3.Z3Exception:
            res = z3.unknown
        finally:
            _WATCHDOG.disarm(token)
        if res != z3.unsat:
            return []
        return sorted((lits[str(x)] for x in s.unsat_core() if str(x) in lits), key=lambda c: c.id)

    def _explain(self, c: Constraint):
        core = self._core(self._cone(c), None)
        if all(x is not c for x in core):
            core = sorted(core + [c], key=lambda x: x.id)
        values = {}
        for x in core:
            if isinstance(x.relation, Rel):
                for side in (x.relation.lhs, x.relation.rhs):
                    if not isinstance(side, int):
                        v = self.canon(side)
                        if v != side:
                            values[show(side)] = show(v)
        self.conflicts.append(Conflict(str(c.relation), core, values,
                                       "these constraints cannot all hold; the last one is set aside"))

    def explain_entailment(self, relation: Relation, candidates) -> list:
        """A minimal subset of ``candidates`` (constraints) that, with the domain,
        implies ``relation``; [] when they do not (or undecided)."""
        cands = list(candidates)
        ids = set()
        for c in cands:
            ids |= self._why_rel(c.relation)
        ids |= self._why_rel(relation)
        extra = [self.constraints[i] for i in sorted(ids) if self.constraints[i] not in cands]
        return self._core(cands + extra, relation)

    # ------------------------------------------------------------ queries
    def _add_domains(self, out: list):
        """Domains of symbols a query mentions for the first time: a satisfiable extension
        of the base.  Known models stay models unless a new bound excludes 0 (the value
        a model gives a symbol it never saw)."""
        if not out:
            return
        self._solver.add(*out)
        self._base.extend(out)
        if any(not (z3.is_ge(f) and z3.is_int_value(f.arg(1)) and f.arg(1).as_long() <= 0) for f in out):
            self._models = []

    def _rlimit_used(self) -> int:
        """Z3's resource counter of this store's solver (read through the C API: the
        Python ``Statistics`` object walks every key, 50x slower)."""
        if self._solver is None:
            return 0
        try:
            cref = self._ctx.ref()
            st = z3.Z3_solver_get_statistics(cref, self._solver.solver)
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

    def _spend(self, optional: bool, syms=()) -> bool:
        if not optional:
            return True
        if self._huge_syms and self._huge_syms & set(syms):
            self.optional_skipped += 1
            return False
        self.optional_questions += 1
        if self.optional_budget <= 0 or self.optional_questions > self.optional_max_questions:
            self.optional_skipped += 1
            return False
        return True

    def decide(self, relation: Relation, use_z3: bool = True, optional: bool = False) -> Verdict:
        """PROVEN / REFUTED / UNKNOWN for a relation under all constraints.

        Fast path and intervals first; then Z3 on a base known to be satisfiable
        (see the module doc).  UNKNOWN whenever Z3 is off, gave up, or the store is broken."""
        cr = self.canon_rel(relation)
        v = cr.const_value()
        if v is True:
            return Verdict.PROVEN
        if v is False:
            return Verdict.REFUTED
        iv = self._cheap_verdict(cr)
        if iv is not None:
            return iv
        if not use_z3 or not self.z3_enabled or self.broken:
            return Verdict.UNKNOWN
        hit = self._cache.get(cr)
        if hit is not None:
            if hit[0] is not Verdict.UNKNOWN:
                return hit[0]          # entailment is monotone: PROVEN / REFUTED stay true
            if hit[1] == self._epoch and not self._pending and not self._pending_elims:
                return hit[0]
        seen = self._witness_truths(cr)
        if len(seen) == 2:
            return Verdict.UNKNOWN     # two models of every live constraint: true at one, false at the other
        if not self._spend(optional, _rel_symbols(cr)):
            return Verdict.UNKNOWN
        if not self._sync():
            return Verdict.UNKNOWN
        if self._pending_joined:
            iv = self._cheap_verdict(cr)        # facts that just joined may settle it
            if iv is not None:
                return iv
            seen = self._witness_truths(cr)
        if len(seen) == 1:
            seen = self._varied_truths(cr, seen)     # (before Z3: it can only say UNKNOWN)
        if len(seen) == 2:
            return Verdict.UNKNOWN
        self._z3()
        self._optional_now = optional
        try:
            return self._decide_z3(cr, optional, seen)
        finally:
            self._optional_now = False

    def _decide_z3(self, cr, optional, seen: set) -> Verdict:
        try:
            out: list = []
            f = self._terms.relation(cr)
            for s in _rel_symbols(cr):
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
            elif r == z3.sat:
                can_prove = False
                if len(self._models) < 4:        # a few witnesses; fetching models costs
                    self._models.append(self._solver.model())
        if verdict is Verdict.UNKNOWN and can_refute:
            r = self._check(f)
            if r == z3.unsat:
                verdict = Verdict.REFUTED
            elif r == z3.sat and len(self._models) < 4:
                self._models.append(self._solver.model())
        if len(self._models) > 8:
            del self._models[1:-4]
        self._cache[cr] = (verdict, self._epoch)
        return verdict

    def static_value(self, e, optional: bool = False):
        """The int ``e`` must equal under the constraints, or None."""
        e = self.canon(e)
        if isinstance(e, int):
            return e
        lo, hi = self.interval(e)
        if lo == hi and not math.isinf(lo):
            return int(lo)
        if not self.z3_enabled or self.broken:
            return None
        key = ("static", e)
        hit = self._cache.get(key)
        if hit is not None and (hit[0] is not None or (hit[1] == self._epoch and not self._pending)):
            return hit[0]
        if self._not_static_at_witnesses(e):
            return None          # two models of every live constraint disagree: not static
        if not self._spend(optional, E.free_symbols(e)):
            return None
        if not self._sync():
            return None
        if self._pending_joined:
            lo, hi = self.interval(e)
            if lo == hi and not math.isinf(lo):
                return int(lo)
        self._z3()
        self._optional_now = optional
        try:
            return self._static_z3(e, key, optional)
        finally:
            self._optional_now = False

    def _static_z3(self, e, key, optional):
        try:
            out: list = []
            t = self._terms.term(e)
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
        self._cache[key] = (val, self._epoch)
        return val

    def _base_model(self):
        if self._models:
            return self._models[0]
        if self._check() == z3.sat:
            self._models.append(self._solver.model())
            return self._models[0]
        return None

    def check(self) -> bool | None:
        """Is everything added so far satisfiable?  True (consistent), False
        (conflicts found and set aside, each explained) or None (no conflict
        found, but some constraints are undecided: ``self.undecided``)."""
        if self.z3_enabled and not self.broken:
            self._sync()
        if self.conflicts or self.broken:
            return False
        if self.undecided:
            return None
        return True

    def residual_symbols(self) -> frozenset:
        """Symbols (canonical) that some residual constraint mentions; cached per size."""
        key = ("residual_symbols", len(self.constraints), len(self.subst))
        hit = self._cache.get("residual_symbols")
        if hit is not None and hit[1] == key:
            return hit[0]
        out: set = set()
        for c in self.constraints:
            # a data symbol's declared bound alone never makes a dim static or upgradable
            if c.status in ("residual", "undecided") and c.kind != "bound":
                if c.kind == "definition" and c.relation.lhs not in self.subst:
                    continue    # an alias's own definition constrains nothing but the alias
                out |= _rel_symbols(self.canon_rel(c.relation))
        for s, v in self.subst.items():
            if not isinstance(v, int):
                out |= E.free_symbols(self.canon(v))
            if not isinstance(s, sympy.Symbol):
                out |= E.free_symbols(self.canon(s))
        res = frozenset(out)
        self._cache["residual_symbols"] = (res, key)
        return res

    def has_residual_on(self, syms) -> bool:
        return bool(self.residual_symbols() & syms)

    def broadcast_only(self, syms) -> bool:
        """True when every symbol of ``syms`` lies in a group of symbols that only
        broadcast disjunctions ``A == B or A == 1 or B == 1`` connect, with ``A``, ``B``
        built from symbols by ``Bcast`` alone.  Such a group is satisfied by every
        assignment of 1s and 2s, so no equality between different terms of it, no
        ``term == 1`` and no static value is entailed: ``Result`` skips asking Z3."""
        key = (len(self.constraints), len(self.subst))
        hit = self._cache.get("broadcast_only")
        if hit is None or hit[1] != key:
            sets = Groups()
            find = sets.find
            bad: set = set()
            groups = []
            for c in self.constraints:
                if c.status not in ("residual", "undecided"):
                    continue      # eliminations show in the canonical forms (and below)
                cr = self.canon_rel(c.relation)
                syms_c = list(_rel_symbols(cr))
                sets.union_all(syms_c)
                ok = _is_broadcast_disjunction(cr) or (
                    c.kind == "definition" and isinstance(cr, Rel) and cr.op == "=="
                    and cr.lhs in self.definitions and _pure_bcast(cr.rhs))
                groups.append((syms_c, ok))
            for syms_c, ok in groups:
                if not ok and syms_c:
                    bad.add(find(syms_c[0]))
            for s, v in self.subst.items():
                tainted = set(E.free_symbols(self.canon(v))) if not isinstance(v, int) else set()
                if not isinstance(s, sympy.Symbol):
                    tainted |= E.free_symbols(s)
                for x in tainted:
                    bad.add(find(x))
            hit = ((find, {find(b) for b in bad}, {}), key)
            self._cache["broadcast_only"] = hit
        find, bad, good = hit[0]        # (good: symbol -> its answer, memoized)
        for s in syms:
            ok = good.get(s)
            if ok is None:
                ok = good[s] = isinstance(s, sympy.Symbol) and self.lower_bound(s) is not None \
                    and find(s) not in bad
            if not ok:
                return False
        return True

    # ------------------------------------------------------------ export
    def exported(self) -> list[Constraint]:
        """The constraints the store answers from: absorbed, residual and derived ones
        (set-aside conflicts and undecided constraints excluded)."""
        return [c for c in self.constraints if c.status in ("absorbed", "residual")]

    def to_smtlib(self) -> str:
        """The model's constraint set as SMT-LIB2 ending in (check-sat): the set the store
        answers from, then the constraints of every conflict (so the export of a model
        with conflicts is unsatisfiable, as the model is); undecided constraints are
        comments.  Every symbol is ``|d.<name>|`` (a private namespace: a dim named
        ``and`` or ``true`` is never a keyword), mapped back to its name in a comment;
        every comment is one line; no model or user text appears outside comments."""
        p = SmtLib()
        body: list[str] = []
        syms: set = set()

        def emit(c, tag):
            try:
                text = p.relation(c.relation)
            except Untranslatable:
                body.append(f"; c{c.id} (not expressible in SMT-LIB, omitted): {one_line(c.relation)}")
                return
            syms.update(_rel_symbols(c.relation))
            body.append(f"; c{c.id} [{tag}] {one_line(c.provenance)}")
            body.append(f"(assert {text})")
        for c in self.exported():
            emit(c, c.kind)
        if self.conflicts:
            body.append(f"; {len(self.conflicts)} conflict(s): the constraints below cannot hold with the ones "
                        "above (smtshape set them aside to go on answering)")
        done = set()
        for cf in self.conflicts:
            for c in cf.constraints:
                if c.id not in done and c.status == "conflict":
                    done.add(c.id)
                    emit(c, "conflict")
        for c in self.constraints:
            if c.status == "conflict" and c.id not in done:
                emit(c, "conflict")
            elif c.status == "undecided":
                body.append(f"; c{c.id} set aside (undecided): {one_line(c.relation)}  <- {one_line(c.provenance)}")
        head = ["; smtshape constraint set (SMT-LIB 2)",
                "; domain: every dim symbol is a non-negative integer"]
        head += [f"; assumption: {one_line(d)}" for d in self.domain.describe()]
        decl = []
        for s in sorted(syms, key=lambda x: x.name):
            q = p.name(s.name)
            decl.append(f"(declare-fun {q} () Int)")
            lo = self.lower_bound(s)
            if lo is not None:
                decl.append(f"(assert (>= {q} {lo}))")
        names = [f"; {q} is {one_line(repr(n))}" for n, q in sorted(p.names.items())]
        return "\n".join(head + names + decl + body + ["(check-sat)", ""])


_FALSE = object()      # (_fact_bounds: a relation no integer point satisfies)


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
                olo, ohi = out.get(t, (-_INF, _INF))
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
        return {t: (-(-need // c), _INF)}        # t >= ceil(need / c)
    return {t: (-_INF, need // c)}             # c < 0: t <= floor(need / c)


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
            return {p: (-_INF, q)} if is_min else {p: (q, _INF)}
        if isinstance(b, int):                   # min(p, c) == k
            if (q < b) if is_min else (q > b):
                return _FALSE
            if q == b:
                return {p: (b, _INF)} if is_min else {p: (-_INF, b)}
            return {p: (b, b)}
    return None


_OPS_INT = {"==": lambda d: d == 0, ">=": lambda d: d >= 0, ">": lambda d: d > 0,
            "<=": lambda d: d <= 0, "<": lambda d: d < 0}


class _UniformEnv:
    """An environment where every symbol is ``v`` but aliases (those are evaluated from
    their definitions): ``Store._uniform``."""

    __slots__ = ("v", "symbols")

    def __init__(self, v, symbols):
        self.v = v
        self.symbols = symbols       # the store's name -> SymbolInfo

    def get(self, name, default=None):
        info = self.symbols.get(name)
        if info is not None and info.kind == "alias":
            return default
        return self.v


def _holds(r, env, defs, memo=None) -> bool:
    """Truth of a relation at an integer point (plain Python arithmetic, E.eval_int)."""
    if memo is None:
        memo = {}
    if isinstance(r, Rel):
        a, b = E.eval_int(r.lhs, env, defs, memo), E.eval_int(r.rhs, env, defs, memo)
        return {"==": a == b, "!=": a != b, "<=": a <= b, "<": a < b, ">=": a >= b, ">": a > b}[r.op]
    if isinstance(r, Or):
        return any(_holds(x, env, defs, memo) for x in r.args)
    if isinstance(r, And):
        return all(_holds(x, env, defs, memo) for x in r.args)
    return not _holds(r.arg, env, defs, memo)


def _pure_bcast(e) -> bool:
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
    symbols that constraints connect."""

    __slots__ = ("parent",)

    def __init__(self):
        self.parent: dict = {}

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


def cone(constraints, symbols) -> list:
    """The constraints connected to ``symbols`` through shared symbols, in id order."""
    by_sym: dict = {}
    for c in constraints:
        for s in _rel_symbols(c.relation):
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
                todo.extend(_rel_symbols(c.relation))
    return sorted(out, key=lambda c: c.id)


def _imul(a, b):
    vals = []
    for x in a:
        for y in b:
            if x == 0 or y == 0:
                vals.append(0)
            else:
                vals.append(x * y)
    return (min(vals), max(vals))


def _sides(r):
    if isinstance(r, Rel):
        return (r.lhs, r.rhs)
    if isinstance(r, (Or, And)):
        return tuple(x for a in r.args for x in _sides(a))
    if isinstance(r, Not):
        return _sides(r.arg)
    return ()


def _rel_symbols(r) -> frozenset:
    return r.symbols()
