"""The store against brute force: random constraint sets and claims over three dims
whose domain is boxed to 0..6 (the box is part of the constraint set, so
enumerating it is complete), built from ``+ - * // % min max if and or not``.

No PROVEN claim may be false at a satisfying point, no REFUTED claim true at one,
no conflict may be reported on a satisfiable set, and no "consistent" on an
unsatisfiable one; every conflict's core must itself be unsatisfiable.

CI runs a few hundred examples; ``SMTSHAPE_LONG=1`` runs thousands.
"""
import itertools
import os

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtshape import expr as E
from smtshape.constraints import And, Not, Or, Provenance, Rel
from smtshape.store import Store, Verdict

NAMES = ("a", "b", "c")
BOX = 6
LONG = bool(os.environ.get("SMTSHAPE_LONG"))
EXAMPLES = 3000 if LONG else 250
SYMS = [E.symbol(n) for n in NAMES]


def P(i):
    return Provenance(f"n{i}", "Op", f"rule{i}", f"constraint {i}")


class DivByZero(Exception):
    pass


# ---------------------------------------------------------------- generation
leaf = st.one_of(st.sampled_from(SYMS), st.integers(-3, 6))


def _divisor():
    return st.one_of(st.integers(1, 4), st.integers(-3, -1),
                     st.builds(lambda s, k: E.add(s, k), st.sampled_from(SYMS), st.integers(1, 3)))


def _build(kind, x, y):
    if kind == "+":
        return E.add(x, y)
    if kind == "-":
        return E.sub(x, y)
    if kind == "*":
        return E.mul(x, y)
    if kind == "min":
        return E.smin(x, y)
    if kind == "max":
        return E.smax(x, y)
    raise AssertionError(kind)


def exprs(depth=2):
    if depth == 0:
        return leaf
    sub = exprs(depth - 1)
    return st.one_of(
        leaf,
        st.builds(_build, st.sampled_from(["+", "-", "*", "min", "max"]), sub, sub),
        st.builds(E.floordiv, sub, _divisor()),
        st.builds(E.mod, sub, _divisor()),
        st.builds(lambda c, x, y: E.norm(sympy.Piecewise((E.to_sympy(x), c), (E.to_sympy(y), True))),
                  st.builds(lambda s, k: sympy.Ge(s, k), st.sampled_from(SYMS), st.integers(0, 5)), sub, sub),
    )


rel_atom = st.builds(Rel, st.sampled_from(["==", "!=", "<=", "<", ">=", ">"]), exprs(), exprs())
relations = st.one_of(
    rel_atom,
    st.builds(lambda a, b: Or((a, b)), rel_atom, rel_atom),
    st.builds(lambda a, b: And((a, b)), rel_atom, rel_atom),
    st.builds(Not, rel_atom),
)


# ---------------------------------------------------------------- brute force
def ev(e, env):
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Symbol):
        return env[e.name]
    if isinstance(e, sympy.Integer):
        return int(e)
    if isinstance(e, sympy.Add):
        return sum(ev(a, env) for a in e.args)
    if isinstance(e, sympy.Mul):
        out = 1
        for a in e.args:
            out *= ev(a, env)
        return out
    if isinstance(e, sympy.Pow):
        return ev(e.base, env) ** int(e.exp)
    if isinstance(e, (E.FloorDiv, E.Mod, E.CeilDiv)):
        a, b = ev(e.args[0], env), ev(e.args[1], env)
        if b == 0:
            raise DivByZero
        return a // b if isinstance(e, E.FloorDiv) else a % b if isinstance(e, E.Mod) else -((-a) // b)
    if isinstance(e, sympy.Min):
        return min(ev(a, env) for a in e.args)
    if isinstance(e, sympy.Max):
        return max(ev(a, env) for a in e.args)
    if isinstance(e, sympy.Piecewise):
        for val, cond in e.args:
            if cond is sympy.true or cond == True or ev_cond(cond, env):  # noqa: E712
                return ev(val, env)
        raise AssertionError("no branch")
    raise AssertionError(f"cannot evaluate {e!r}")


def ev_cond(c, env):
    ops = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Le: "<=", sympy.Lt: "<", sympy.Ge: ">=", sympy.Gt: ">"}
    for k, op in ops.items():
        if isinstance(c, k):
            return ev_rel(Rel(op, E.norm(c.lhs), E.norm(c.rhs)), env)
    if isinstance(c, sympy.And):
        return all(ev_cond(a, env) for a in c.args)
    if isinstance(c, sympy.Or):
        return any(ev_cond(a, env) for a in c.args)
    if isinstance(c, sympy.Not):
        return not ev_cond(c.args[0], env)
    if c is sympy.true or c is sympy.false:
        return bool(c)
    raise AssertionError(f"cannot evaluate {c!r}")


def ev_rel(r, env):
    if isinstance(r, Rel):
        a, b = ev(r.lhs, env), ev(r.rhs, env)
        return {"==": a == b, "!=": a != b, "<=": a <= b, "<": a < b, ">=": a >= b, ">": a > b}[r.op]
    if isinstance(r, Or):
        return any(ev_rel(x, env) for x in r.args)
    if isinstance(r, And):
        return all(ev_rel(x, env) for x in r.args)
    return not ev_rel(r.arg, env)


def points(box=BOX):
    for vals in itertools.product(range(box + 1), repeat=len(NAMES)):
        yield dict(zip(NAMES, vals))


def holds(rels, env):
    """True / False, or None when a division by zero makes it undefined here."""
    try:
        return all(ev_rel(r, env) for r in rels)
    except DivByZero:
        return None


def boxed_store(rels):
    st_ = Store()
    for n in NAMES:
        st_.declare(n, "input", Provenance("", "input", "input.dim", n))
    for s in SYMS:
        st_.add(Rel("<=", s, BOX), Provenance("", "assumption", "box", f"{s} <= {BOX}"), kind="assumption")
    for i, r in enumerate(rels):
        st_.add(r, P(i))
    return st_


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(relations, min_size=1, max_size=4), st.lists(relations, min_size=1, max_size=3))
def test_store_agrees_with_brute_force(rels, claims):
    store = boxed_store(rels)
    verdicts = [store.decide(c) for c in claims]
    consistent = store.check()
    sat_points = [env for env in points() if holds(rels, env)]
    undefined = any(holds(rels, env) is None for env in points())
    if consistent is False and not undefined:
        # a conflict is only allowed on a set with no satisfying point
        assert not sat_points, f"conflict reported, but {sat_points[0]} satisfies {[str(r) for r in rels]}"
    if consistent is True and not undefined:
        assert sat_points, f"'consistent' on an unsatisfiable set {[str(r) for r in rels]}"
    for c, v in zip(claims, verdicts):
        if v is Verdict.UNKNOWN:
            continue
        for env in sat_points:
            try:
                truth = ev_rel(c, env)
            except DivByZero:
                continue
            # an answer given before a conflict is set aside stays true of the constraints kept;
            # checked on points satisfying every constraint (a subset of those)
            assert truth == (v is Verdict.PROVEN), \
                f"{v.name} {c} but at {env} it is {truth}; constraints {[str(r) for r in rels]}"
    for conf in store.conflicts:
        core = [x.relation for x in conf.constraints]
        for env in points(12 if not any(x.kind == "assumption" for x in conf.constraints) else BOX):
            assert holds(core, env) is not True, f"core {[str(r) for r in core]} holds at {env}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(relations, min_size=1, max_size=4), relations)
def test_answers_after_check_come_from_a_satisfiable_base(rels, claim):
    """After conflicts are set aside, every answer holds at every point satisfying the
    constraints the store kept (statuses other than conflict / undecided)."""
    store = boxed_store(rels)
    store.check()
    v = store.decide(claim)
    kept = [c.relation for c in store.constraints if c.status not in ("conflict", "undecided", "trivial")]
    if v is Verdict.UNKNOWN:
        return
    for env in points():
        if holds(kept, env):
            try:
                truth = ev_rel(claim, env)
            except DivByZero:
                continue
            assert truth == (v is Verdict.PROVEN), f"{v.name} {claim} but false at {env}"


@settings(max_examples=EXAMPLES // 4, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(relations, min_size=1, max_size=4), relations)
def test_each_truth_value_the_store_reports_is_taken_at_a_satisfying_point(rels, claim):
    """``Store.truths`` (what makes ``Result.prove`` say CONTINGENT without Z3): when it
    reports both truth values, each is the claim's value at some point satisfying the
    constraints (on a set without conflicts: one set aside may take a symbol's domain with it,
    which the points here cannot follow)."""
    store = boxed_store(rels)
    if store.check() is False:
        return
    store.decide(claim)                      # (leaves Z3's models behind, which truths reads)
    seen = store.truths(claim)
    if len(seen) < 2:
        return
    kept = [c.relation for c in store.constraints
            if c.status not in ("conflict", "undecided", "trivial", "duplicate")]   # (a duplicate restates one)
    taken = set()
    for env in points():
        if holds(kept, env):
            try:
                taken.add(ev_rel(claim, env))
            except DivByZero:
                return                       # (Z3's division by zero is any integer: not comparable)
        elif holds(kept, env) is None:
            return
    assert taken == {True, False}, f"truths {seen} of {claim}, but only {taken} at points satisfying {[str(r) for r in kept]}"
