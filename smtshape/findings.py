"""Findings: the relations a model forces on its input dims (specializations).

For every input dim symbol the solver finds, over the constraints the store
answers from (``Store.exported``), the tightest lower and upper bounds they
imply, an equality when both meet (or when the fast path pinned the symbol),
and a divisibility (``height % 32 == 0``) over small moduli.  Each finding
carries a minimal set of constraints forcing it (``Store.explain_entailment``)
and the nodes behind them.

Never a finding:

* a relation the user's own assumptions (``assume`` / ``bind``) imply alone;
* a *premise of the analysis* (a constraint whose rule is in ``PREMISE_RULES``,
  such as ``resize.float_exact``: the analysis assumes float arithmetic is exact
  below 2**24).  Premises are left out when bounds are computed and reported
  separately, as assumptions of the analysis (``kind == "premise"``), never as
  limits of the model.

Bounds are searched with incremental solver checks (a galloping binary search
on the bound value), never by scanning the literals of the constraints.
"""
from __future__ import annotations

from . import expr as E
from .constraints import Rel, _sides_of, eq, ge, le
from .lazyz3 import z3
from .printing import show
from .record import Record
from .store import Groups, OutOfBudget

# rule ids of constraints that are premises of the analysis, not limits of the model
PREMISE_RULES = frozenset({"resize.float_exact", "resize.float_range", "cast.float_exact", "pool.float_exact"})

BIG = 2 ** 62                  # no dim reaches it (int64 sizes)
# constraints given, not found: the user's assumptions and the model's own input declarations
# (``n - 1 >= 0`` for an input dim declared ``n-1``); what they imply alone is no finding
_GIVEN = ("assumption", "declaration")
_INF = float("inf")
MODULI = (2, 3, 4, 5, 7, 8, 16, 32, 64)


class Specialization(Record):
    """A relation the model forces on its input dims, and the nodes that force it.

    ``kind``: ``"equal"`` (``value`` holds the int when pinned), ``"upper"`` /
    ``"lower"`` (``bound``), ``"divisible"`` (``bound`` is the modulus) or
    ``"premise"`` (an assumption of the analysis, not a limit of the model).
    ``condition``: the relation holds when this does (``batch >= 1``); "" always.
    Equal to another by symbol, relation, value and nodes, and to an int by its value."""

    _parts = ("symbol", "relation", "value", "nodes", "constraints", "kind", "bound", "condition")

    def __init__(self, symbol: str, relation: str, value: int | None = None, nodes: list | None = None,
                 constraints: list | None = None, kind: str = "equal", bound: int | None = None,
                 condition: str = ""):
        self.symbol = symbol
        self.relation = relation
        self.value = value
        self.nodes = [] if nodes is None else nodes
        self.constraints = [] if constraints is None else constraints
        self.kind = kind
        self.bound = bound
        self.condition = condition

    @property
    def assumptions(self) -> list[str]:
        """Assumptions (user's or domain) that the relation also rests on."""
        out = []
        for c in self.constraints:
            if c.kind == "assumption":
                out.append(c.provenance.message)
            elif c.provenance.rule.endswith(".assume_not_one"):
                out.append("symbolic dims are never 1 when broadcasting (no_broadcast_one)")
        return list(dict.fromkeys(out))

    @property
    def is_premise(self) -> bool:
        return self.kind == "premise"

    def __eq__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return self.value == other          # specializations["seq"] == 196
        if isinstance(other, Specialization):
            return (self.symbol, self.relation, self.value, self.nodes) == \
                (other.symbol, other.relation, other.value, other.nodes)
        return NotImplemented

    __hash__ = None

    def __str__(self) -> str:
        where = ", ".join(f"'{n}'" for n in self.nodes) or "the model"
        if self.kind == "premise":
            return f"{self.relation}  (an assumption of the analysis, made at {where}; not a limit of the model)"
        extra = f"; under the assumptions: {'; '.join(self.assumptions)}" if self.assumptions else ""
        when = f" when {self.condition}" if self.condition else ""
        return f"{self.relation}{when}  (forced by {where}{extra})"


class Specializations(list):
    """The list of specializations (limits the model forces), also indexed by input dim
    name: ``specs["seq"].value == 196``, ``"seq" in specs``, ``specs.as_dict()``.
    ``specs.premises``: assumptions of the analysis (``kind == "premise"``), kept out of
    the list: they are not limits of the model.
    Indexing by name returns the symbol's first finding (its equality, else its upper
    bound, else its lower bound); ``for_symbol(name)`` returns all of them."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for s in self:
                if s.symbol == key and s.kind != "premise":
                    return s
            raise KeyError(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        if isinstance(key, str):
            return any(s.symbol == key and s.kind != "premise" for s in self)
        return super().__contains__(key)

    def for_symbol(self, name: str) -> list:
        return [s for s in self if s.symbol == name]

    def __init__(self, items=(), premises=(), not_searched=()):
        super().__init__(s for s in items if s.kind != "premise")
        self.premises = [s for s in items if s.kind == "premise"] + list(premises)
        # input dims whose limits were not searched: the shared budget of optional solver
        # work ran out (a limit not searched is never reported as absent)
        self.not_searched = list(not_searched)

    @property
    def limits(self) -> list:
        """Findings that are limits of the model (the list itself: premises are kept apart)."""
        return list(self)

    def as_dict(self) -> dict:
        """{dim name: pinned int, or the relation text(s) for bounds} (premises excluded)."""
        out: dict = {}
        for s in self.limits:
            v = s.value if s.value is not None else s.relation
            if s.symbol in out:
                prev = out[s.symbol]
                out[s.symbol] = (prev if isinstance(prev, list) else [prev]) + [v]
            else:
                out[s.symbol] = v
        return out


# ================================================================ the search

def _upper(sv, sym, v, start, extra=(), known_hi=None):
    """The largest value ``v`` can take (int), None when unbounded or undecided (under
    the ``extra`` assumptions when given).  From ``start`` (attainable) it gallops up
    (doubling) until a value is out of reach, then bisects: about 2 log2(bound) checks,
    never a bisection over the whole int64 range.  ``known_hi``: an upper bound the fast
    path entails already (tried first)."""
    if known_hi is not None and known_hi < _INF:
        r = sv.check(*extra, v >= known_hi)
        if r == z3.sat:
            return known_hi
        if r != z3.unsat:
            return None
        hi = known_hi - 1
    else:
        if sv.check(*extra, v > BIG) != z3.unsat:
            return None
        hi = BIG
    lo = start                   # lo attainable, v <= hi entailed
    probe = max(2 * lo, lo + 1)
    while lo < hi:
        mid = min(probe, hi) if probe <= hi else (lo + hi + 1) // 2
        r = sv.check(*extra, v >= mid)
        if r == z3.sat:
            x = sv.note(sym, v)
            lo = max(mid, x if x is not None else mid)
            probe = max(2 * lo, lo + 1)
        elif r == z3.unsat:
            hi = mid - 1
            probe = hi + 1         # (past the gallop: bisect)
        else:
            return None
        if probe > hi:
            probe = hi + 1
    return lo


def _lower(sv, sym, v, start, floor, known_lo=None):
    """The smallest value ``v`` can take, None when it is ``floor`` (nothing to report)."""
    if known_lo is not None and known_lo > floor:
        r = sv.check(v <= known_lo)
        if r == z3.sat:
            return known_lo
        if r != z3.unsat:
            return None
        lo = known_lo + 1
    else:
        r = sv.check(v <= floor)
        if r != z3.unsat:
            return None
        lo = floor + 1
    hi = start                   # v >= lo entailed, hi attainable
    while lo < hi:
        mid = (lo + hi) // 2
        r = sv.check(v <= mid)
        if r == z3.sat:
            x = sv.note(sym, v)
            hi = min(mid, x if x is not None else mid)
        elif r == z3.unsat:
            lo = mid + 1
        else:
            return None
    return lo


def _jointly(sv, syms, make, joint=True) -> tuple:
    """Group testing: the symbols of ``syms`` for which ``make(sym, term)`` can hold,
    found by asking for all of a group at once and halving only a group that cannot
    (a model is a witness for every symbol of its group).  Returns {symbol: the group it
    was witnessed in}.  A few checks when most symbols can (the common case).  Not
    ``joint``: one symbol at a time (over products of symbols, a model with all of them
    huge at once costs Z3 time in proportion to the product's size, which its resource
    limit does not count; one at a time each check is quick)."""
    out: dict = {}
    todo = [list(syms)] if joint else [[s] for s in syms]
    while todo:
        group = todo.pop()
        fs = [make(s, sv.terms.var(s.name)) for s in group]
        r = sv.check(*fs)
        if r == z3.sat:
            members = frozenset(group)
            for s in group:
                out[s] = members
                sv.note(s, sv.terms.var(s.name))
        elif r == z3.unsat and len(group) > 1:
            half = len(group) // 2
            todo += [group[:half], group[half:]]
    return out


def _prune(store, constraints, input_set) -> list:
    """The constraints without those that hold whatever the input dims are, by choosing
    their private unknowns: ``L == x`` or ``L == x * y * ...`` whose right side is made of
    symbols that are not input dims, appear in no other constraint, have no upper bound and
    may be 1, while ``L >= 0`` always (``x := L``, the others 1).  A Reshape target read at
    run time (``N == d1 * d2 * ... * d4000``) or a size alias no other relation mentions
    says nothing about the inputs; dropping it leaves every finding as it was (the
    projection onto the other symbols is the same) and spares the solver a product of
    thousands of factors.  Repeated until nothing more goes."""
    from .constraints import Rel
    cs = list(constraints)
    while True:
        count: dict = {}
        for c in cs:
            for x in c.relation.symbols():
                count[x] = count.get(x, 0) + 1

        def private(x) -> bool:
            if not isinstance(x, E.sympy.Symbol) or x in input_set or count.get(x, 0) != 1:
                return False
            info = store.info(x)
            if info is not None and info.upper is not None:
                return False
            lo = store.lower_bound(x)
            return lo is None or lo <= 1

        def free_side(e) -> bool:
            if isinstance(e, E.sympy.Symbol):
                return private(e)
            if isinstance(e, E.sympy.Mul):
                return all(private(f) for f in e.args)     # (each factor a symbol to the power 1)
            return False
        keep = []
        for c in cs:
            r = c.relation
            if isinstance(r, Rel) and r.op == "==" and not isinstance(r.lhs, int) | isinstance(r.rhs, int):
                for side, other in ((r.rhs, r.lhs), (r.lhs, r.rhs)):
                    if free_side(side) and not (side.free_symbols & E.free_symbols(other)) \
                            and store.interval(other)[0] >= 0:
                        break
                else:
                    keep.append(c)
                    continue
                continue
            keep.append(c)
        if len(keep) == len(cs):
            return keep
        cs = keep


def _components(store, constraints) -> list:
    """The constraints grouped by shared symbols (each group a list, in id order)."""
    sets = Groups()
    first: dict = {}
    for c in constraints:
        member = sets.union_relation(c.relation)
        if member is not None:
            first[c.id] = member
    groups: dict = {}
    for c in constraints:
        if c.id in first:
            groups.setdefault(sets.find(first[c.id]), []).append(c)
    return list(groups.values())


def _uniform_free(store, rels, us) -> set:
    """The values ``u`` of ``us`` for which "every symbol is ``u``" (aliases by their
    definitions, eliminated symbols by their values) satisfies a group's constraints
    (``rels``, their ``_uniform_rels``; domains included).  Pure Python evaluation: each
    is a model found without the solver."""
    out = set()
    for u in us:
        try:
            if store.holds_at(rels, u):
                out.add(u)
        except Exception:
            pass
    return out


def _uniform_rels(store, cs, syms) -> list:
    """The relations "every symbol is u" must satisfy to be a model of ``cs``."""
    rels = []
    for c in cs:
        if c.status == "residual":
            rels.append(store.canon_rel(c.relation))
    for x in syms:
        if x in store.subst:
            lo = store.lower_bound(x)
            if lo is not None:
                rels.append(ge(store.canon(x), lo))
    for k, val in store.subst.items():
        if not hasattr(k, "name") and k.free_symbols & syms:
            rels.append(eq(E.norm(k.func(*[E.to_sympy(store.canon(E.norm(a))) for a in k.args])),
                           store.canon(val)))
    return rels


_LOOSE_POINTS = (64, 3, 1000, 2, 1)


def _loose_inputs(store, rels, targets) -> frozenset:
    """Input symbols the constraints leave free: at a point where every symbol is ``u``
    and all of ``rels`` hold, each relation naming one of them still holds whatever values
    they take in their domains (an interval over their domains, every other symbol at
    ``u``), so a model stays a model when they change: nothing is forced on them.  (A
    detector's image size meets its constraints only through the bounds of its float
    sizes, ``d <= if(h >= 1 and w >= 1, 608, 2**63 - 1)``, which hold for any image.)
    Symbols an alias definition names are never loose (their aliases would move too)."""
    named = set()
    for d in store.definitions.values():
        named |= E.free_symbols(d)
    cands = {x for x in targets if x not in named}
    if not cands:
        return frozenset()
    for u in _LOOSE_POINTS:
        try:
            if not store.holds_at(rels, u):
                continue
        except Exception:
            continue
        loose = set(cands)
        changed = True
        while changed and loose:
            changed = False
            for r in rels:
                xs = r.symbols() & loose
                if xs and not _holds_for_all(store, r, loose, u):
                    loose -= xs
                    changed = True
        return frozenset(loose)
    return frozenset()


def _holds_for_all(store, r, free, u) -> bool:
    """Does ``r`` hold for every value of the symbols ``free`` in their domains, each other
    symbol at ``u`` (aliases by their definitions)?  Shown by an interval, or False."""
    if not isinstance(r, Rel) or r.op not in ("<=", "<", ">=", ">"):
        return False
    env = {}
    memo: dict = {}
    for x in r.symbols() - free:
        try:
            env[x] = E.eval_int(x, _Everywhere(u), store.definitions, memo)
        except Exception:
            return False
    lhs, rhs = (r.lhs, r.rhs) if r.op in ("<=", "<") else (r.rhs, r.lhs)
    d = E.sub(rhs, lhs)
    if not isinstance(d, int):
        d = E.norm(E.to_sympy(d).xreplace({x: E.sympy.Integer(v) for x, v in env.items()}))
    lo = _domain_low(store, d, free)
    return lo is not None and (lo > 0 if r.op in ("<", ">") else lo >= 0)


class _Everywhere(dict):
    """Every symbol name maps to one value (``E.eval_int``'s environment)."""

    def __init__(self, v):
        super().__init__()
        self.v = v

    def get(self, name, default=None):
        return self.v

    def __getitem__(self, name):
        return self.v

    def __contains__(self, name):
        return True


def _domain_low(store, e, free):
    """A lower bound of ``e`` over the domains of the symbols ``free`` alone (no fact the
    constraints imply is used), or None: sums, non-negative multiples, min / max, the
    values of a Piecewise and floor divisions by a positive constant."""
    if isinstance(e, int):
        return e
    S = E.sympy
    if isinstance(e, S.Integer):
        return int(e)
    if isinstance(e, S.Symbol):
        return store.lower_bound(e) if e in free else None
    if isinstance(e, S.Add):
        total = 0
        for a in e.args:
            co, rest = a.as_coeff_Mul()
            if not co.is_Integer or (co < 0 and not rest.is_Number):
                return None
            lo = _domain_low(store, E.norm(rest), free)
            if lo is None:
                return None
            total += int(co) * lo
        return total
    if isinstance(e, S.Mul):
        co, rest = e.as_coeff_Mul()
        if not co.is_Integer or co < 0 or isinstance(rest, S.Mul):
            return None
        lo = _domain_low(store, E.norm(rest), free)
        return None if lo is None else int(co) * lo
    if isinstance(e, (S.Min, S.Piecewise, S.Max)):
        vals = [a.expr for a in e.args] if isinstance(e, S.Piecewise) else e.args
        los = [_domain_low(store, E.norm(v), free) for v in vals]
        if isinstance(e, S.Max):
            los = [x for x in los if x is not None]
            return max(los) if los else None
        return None if any(x is None for x in los) else min(los)
    if isinstance(e, E.FloorDiv) and e.args[1].is_Integer and int(e.args[1]) > 0:
        lo = _domain_low(store, E.norm(e.args[0]), free)
        return None if lo is None else lo // int(e.args[1])
    return None


def _has_product(e) -> bool:
    """Does ``e`` multiply two symbolic factors somewhere?"""
    if isinstance(e, int):
        return False
    for m in e.atoms(E.sympy.Mul) if not isinstance(e, E.sympy.Mul) else [e] + list(e.atoms(E.sympy.Mul)):
        if sum(1 for f in m.args if not f.is_Number) >= 2:
            return True
    return any(isinstance(p, E.sympy.Pow) and not p.base.is_Number for p in e.atoms(E.sympy.Pow))


# a value of every symbol at once that is beyond any bound, and one that no modulus divides
_HUGE = BIG + 1
_UNIFORM_NO_DIV = 1


def specializations(store) -> list[Specialization]:
    """Every finding of the store (see the module doc), equalities first, then bounds,
    divisibilities and premises, in input-symbol order.

    The work is per group of constraints that share symbols: a group where "every
    symbol is v" holds for a huge v, for the floor, or for 1 has no upper bound, no lower
    bound or no divisibility to find, without the solver; for the rest, one solver per
    group asks for all its symbols at once first (group testing), then searches bounds
    by galloping from what the fast path knows.  Every check is paid from the store's
    shared budget: a search it cannot pay is listed in ``not_searched`` (never reported
    as absent)."""
    exported = store.exported()
    premises = [c for c in exported if c.provenance.rule in PREMISE_RULES]
    model_cs = [c for c in exported if c.provenance.rule not in PREMISE_RULES]
    out: list[Specialization] = []
    not_searched: list = []
    inputs = store.input_symbols()
    input_set = {i.symbol for i in inputs}
    groups = _components(store, _prune(store, model_cs, input_set))
    group_of: dict = {}
    for g in groups:
        for c in g:
            for x in c.relation.symbols():
                group_of[x] = g
    searches: dict = {}       # id(group) -> _GroupSearch
    for info in inputs:
        s = info.symbol
        if s in store.subst:
            spec = _pinned(store, s)
            if spec is not None:
                out.append(spec)
            continue
        g = group_of.get(s)
        if g is None or all(c.kind in _GIVEN for c in g):
            continue
        gs = searches.get(id(g))
        if gs is None:
            gs = searches[id(g)] = _GroupSearch(store, g, input_set)
        try:
            gs.find(s, out, inputs)
        except OutOfBudget:
            not_searched.append(s.name)
    specs = out + _premises(store, premises)
    return specs, not_searched


class _GroupSearch:
    """The findings of one group of constraints (see ``specializations``)."""

    def __init__(self, store, cs, input_set):
        self.store = store
        self.cs = cs
        self.syms = {x for c in cs for x in c.relation.symbols()}
        self.targets = [x for x in sorted(self.syms, key=lambda x: x.name)
                        if x in input_set and x not in store.subst]
        floors = {store.lower_bound(x) or 0 for x in self.targets}
        floor = min(floors) if len(floors) == 1 else None
        self.rels = _uniform_rels(store, cs, self.syms)
        free = _uniform_free(store, self.rels, [u for u in (_HUGE, floor, _UNIFORM_NO_DIV) if u is not None])
        if not free >= {_HUGE, _UNIFORM_NO_DIV} or floor not in free:
            self.loose = _loose_inputs(store, self.rels, self.targets)
        else:
            self.loose = frozenset()
        self.free_hi = _HUGE in free
        self.free_lo = floor is not None and floor in free
        self.free_div = _UNIFORM_NO_DIV in free
        self.sv = None
        self.hi_groups = self.lo_groups = self.div_groups = None
        self.target_set = frozenset(self.targets)
        self._missing: dict = {}
        self._joint = None
        self.unsat = False

    @property
    def joint(self) -> bool:
        """Ask for a whole group at once?  Not over a product of two or more symbols
        (found out only when the solver is needed)."""
        if self._joint is None:
            self._joint = not any(_has_product(x) for c in self.cs for x in _sides_of(c.relation))
        return self._joint

    def solver(self):
        if self.sv is None:
            self.sv = self.store.group_solver(self.cs)
            if self.sv.check() != z3.sat:
                self.unsat = True
        return self.sv

    def find(self, s, out, inputs):
        st = self.store
        if s in self.loose:
            return              # (nothing is forced on it: _loose_inputs)
        cone = self.cs
        hi = lo = None
        hi_group = self.target_set if self.free_hi else None     # (made once: O(n) per symbol was O(n**2))
        known = self._attained(s)
        if known is not None:
            lo, hi = known
        elif not (self.free_hi and self.free_lo and self.free_div):
            sv = self.solver()
            if self.unsat:
                return
            v = sv.terms.var(s.name)
            if self.free_hi:
                pass
            else:
                if self.hi_groups is None:
                    self.hi_groups = _jointly(sv, self.targets, lambda x, t: t > BIG, self.joint)
                hi_group = self.hi_groups.get(s)
            if not self.free_lo and self.lo_groups is None:
                self.lo_groups = _jointly(sv, self.targets, lambda x, t: t <= (st.lower_bound(x) or 0), self.joint)
            need_hi = hi_group is None
            need_lo = not self.free_lo and s not in self.lo_groups
            if need_hi or need_lo:
                if sv.check() != z3.sat:
                    return
                start = sv.note(s, v)
                if start is None:
                    return
                iv = st.interval(s)
                floor = st.lower_bound(s) or 0
                if need_hi:
                    hi = _upper(sv, s, v, start, known_hi=iv[1])
                if need_lo:
                    lo = _lower(sv, s, v, start, floor, known_lo=iv[0])
        if hi is not None and lo is not None and hi == lo:
            _add(out, st, cone, s, eq(s, hi), f"{s.name} == {hi}", "equal", hi, value=hi)
            return
        if lo is not None:
            _add(out, st, cone, s, ge(s, lo), f"{s.name} >= {lo}", "lower", lo)
        if hi is not None:
            _add(out, st, cone, s, le(s, hi), f"{s.name} <= {hi}", "upper", hi)
        elif hi_group is None or not self._with_all_others(s, hi_group):
            # unbounded alone, perhaps only because another dim can be 0: is there a bound
            # whenever the others are >= 1?  (not when a model had them all huge at once)
            _conditional_upper(out, st, self.solver(), cone, s, self.solver().terms.var(s.name), inputs)
        if not self.free_div and (hi is None or hi > 1):
            self._divisibility(out, s, lo, hi)

    def _attained(self, s):
        """``(lo, hi)`` of ``s`` found without the solver, or None.  Where the group's only
        open questions are bounds of ``s`` that the fast path already entails (``batch > 0``
        gives ``batch >= 1``), each is attained when "every symbol is that bound" is a
        model of the group: what ``_lower`` / ``_upper`` would answer, asked of Z3 with
        ``known_lo`` / ``known_hi``.  (A bound past ``BIG`` is the solver's to judge; a group
        without uniform divisibility needs the solver anyway.)"""
        if not self.free_div or (self.free_lo and self.free_hi):
            return None
        st = self.store
        known_lo, known_hi = st.interval(s)
        lo = hi = None
        if not self.free_lo:
            if not (known_lo > (st.lower_bound(s) or 0) and st.holds_at(self.rels, known_lo)):
                return None
            lo = known_lo
        if not self.free_hi:
            if not (known_hi <= BIG and st.holds_at(self.rels, known_hi)):
                return None
            hi = known_hi
        return lo, hi

    def _with_all_others(self, s, group) -> bool:
        """Was ``s`` witnessed huge in a model where every other input dim of the group
        was huge too (so at least 1)?"""
        missing = self._missing.get(group)
        if missing is None:
            missing = self._missing[group] = self.target_set - group
        return missing <= {s}

    def _divisibility(self, out, s, lo, hi):
        sv = self.solver()
        if self.div_groups is None:
            self.div_groups = _jointly(sv, self.targets, lambda x, t: t % 420 == _UNIFORM_NO_DIV, self.joint)
        if s in self.div_groups:
            return
        _divisibility(out, self.store, sv, self.cs, s, sv.terms.var(s.name), lo, hi)


def _conditional_upper(out, store, sv, cone, s, v, inputs):
    """No upper bound at all: is there one whenever the other input dims are non-zero
    (``seq <= 128`` when ``batch >= 1``: an empty batch gathers no positions)?"""
    syms = {x for c in cone for x in c.relation.symbols()}
    others = [i.symbol for i in inputs if i.symbol is not s and i.symbol not in store.subst and i.symbol in syms]
    if not others:
        return
    extra = [sv.terms.var(o.name) >= 1 for o in others]
    if sv.check(*extra) != z3.sat:
        return
    start = sv.value(v)
    if start is None:
        return
    hi = _upper(sv, s, v, start, extra)
    if hi is None:
        return
    cond = " and ".join(f"{o.name} >= 1" for o in sorted(others, key=lambda x: x.name))
    from .constraints import any_of, lt
    rel = any_of(*(lt(o, 1) for o in others), le(s, hi))
    if _assumptions_alone_imply(store, rel):
        return
    core = store.explain_entailment(rel, cone) or cone
    spec = Specialization(s.name, f"{s.name} <= {hi}", None, _nodes(core), core, "upper", hi)
    spec.condition = cond
    out.append(spec)


def _pinned(store, s):
    ids = store.reasons.get(s, frozenset())
    cs = [store.constraints[i] for i in sorted(ids)]
    if not cs or all(c.kind in _GIVEN for c in cs):
        return None
    val = store.canon(store.subst[s])
    if any(c.provenance.rule in PREMISE_RULES for c in cs):
        return None
    rel = f"{s.name} == {show(val)}"
    if _assumptions_alone_imply(store, eq(s, val)):
        return None
    return Specialization(s.name, rel, val if isinstance(val, int) else None, _nodes(cs), cs,
                          "equal", val if isinstance(val, int) else None)


def _add(out, store, cone, s, rel, text, kind, bound, value=None):
    if _assumptions_alone_imply(store, rel):
        return
    core = store.explain_entailment(rel, cone) or cone
    out.append(Specialization(s.name, text, value, _nodes(core), core, kind, bound))


def _divisibility(out, store, sv, cone, s, v, lo, hi):
    if hi is not None and hi <= 1:
        return
    found = None
    seen = sv.seen.get(s, ())
    for m in MODULI:
        if found is not None and m % found:
            continue          # only multiples of a modulus already found can be stronger
        if any(x % m for x in seen):
            continue          # a model had s not divisible by m
        r = sv.check(v % m != 0)
        if r == z3.unsat:
            found = m
    if found is None:
        return
    rel = eq(E.mod(s, found), 0)
    _add(out, store, cone, s, rel, f"{s.name} % {found} == 0", "divisible", found)


def _premises(store, premises) -> list:
    out = []
    seen = set()
    for c in premises:
        syms = sorted((x for x in c.relation.symbols()
                       if store.info(x) is not None and store.info(x).kind == "input"), key=lambda x: x.name)
        text = str(c.relation)
        if text in seen:
            continue
        seen.add(text)
        out.append(Specialization(syms[0].name if syms else "", text, None,
                                  [c.provenance.node] if c.provenance.node else [], [c], "premise"))
    return out


def _assumptions_alone_imply(store, rel) -> bool:
    """Is ``rel`` already implied by the user's own assumptions and the model's input
    declarations (then it is no finding)?"""
    from .store import Solver
    from .z3bridge import Untranslatable
    given = [c for c in store.constraints if c.kind in _GIVEN and c.status != "conflict"]
    if not given:
        return False
    sv = Solver(store.rlimit, store.watchdog_s, pooled=True)
    terms = sv.terms
    syms = set(rel.symbols())
    any_assumption = False
    for c in given:
        try:
            sv.add(terms.relation(c.relation))
        except Untranslatable:
            continue
        any_assumption = True
        syms |= c.relation.symbols()
    if not any_assumption:
        return False
    for x in syms:
        lo = store.lower_bound(x)
        sv.add(terms.var(x.name) >= (0 if lo is None else lo))
    try:
        return sv.check(z3.Not(terms.relation(rel))) == z3.unsat
    except Untranslatable:
        return False


def _nodes(cs) -> list:
    out = []
    for c in cs:
        if c.provenance.node and c.provenance.node not in out:
            out.append(c.provenance.node)
    return out
