"""Bounds the store reads off base facts (``Intervals.note_bounds``, smtshape/store/intervals.py) and the case split of
``x != c or B``: checked against brute force, and shown to settle the questions real
models ask without a solver call.

Every bound ``lo <= t <= hi`` that ``_fact_bounds`` derives from a relation must hold at
every integer point of a box where the relation holds; ``_FALSE`` must mean no point
satisfies it.  The relations are built from the shapes rules emit: broadcast
disjunctions over ``min`` / ``max`` with constants, one-term linear facts, divisions.
"""
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtshape import expr as E
from smtshape.constraints import And, Or, Provenance, Rel, any_of, eq, ge, gt, le, ne
from smtshape.store import Store, Verdict
from smtshape.store.basics import holds as _holds
from smtshape.store.intervals import _FALSE, _fact_bounds

X, Y = E.symbol("x"), E.symbol("y")
BOX = range(-4, 41)


def P(rule="r"):
    return Provenance("n", "Op", rule, "test")


# ---------------------------------------------------------------- _fact_bounds vs brute force
def _term():
    return st.one_of(
        st.just(X), st.just(Y),
        st.builds(lambda k: E.floordiv(X, k), st.integers(1, 5)),
        st.builds(lambda k: E.ceildiv(X, k), st.integers(1, 5)),
        st.builds(lambda c: E.smin(c, X), st.integers(-2, 30)),
        st.builds(lambda c: E.smax(c, X), st.integers(-2, 30)),
        st.just(E.mul(X, Y)),
    )


def _side():
    return st.one_of(st.integers(-3, 30), _term(),
                     st.builds(lambda c, t, k: E.add(E.mul(c, t), k), st.integers(-3, 3).filter(bool), _term(),
                               st.integers(-10, 10)))


atoms = st.builds(Rel, st.sampled_from(["==", "<=", "<", ">=", ">"]), _side(), _side())
relations = st.one_of(
    atoms,
    st.builds(lambda a, b, c: Or((a, b, c)), atoms, atoms, atoms),
    st.builds(lambda a, b: Or((a, b)), atoms, atoms),
    st.builds(lambda a, b: And((a, b)), atoms, atoms),
)


def _points(r):
    syms = sorted({s.name for s in r.symbols()} | {"x"})
    for vals in itertools.product(BOX, repeat=len(syms)):
        env = dict(zip(syms, vals))
        if "y" not in env:
            env["y"] = 0
        try:
            if _holds(r, env, {}):
                yield env
        except Exception:
            continue


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(relations)
def test_derived_bounds_hold_at_every_satisfying_point(r):
    b = _fact_bounds(r)
    if b is None:
        return
    pts = list(_points(r))
    if b is _FALSE:
        assert not pts, f"{r} called unsatisfiable, but holds at {pts[:1]}"
        return
    for env in pts:
        for t, (lo, hi) in b.items():
            v = E.eval_int(t, env)
            assert lo <= v <= hi, f"{r}: derived {lo} <= {t} <= {hi}, but {t} = {v} at {env}"


def test_the_broadcast_disjunction_bounds_the_symbol():
    m = E.smin(128, X)
    assert _fact_bounds(any_of(eq(m, X), eq(m, 1), eq(X, 1))) == {X: (-float("inf"), 128)}
    assert _fact_bounds(eq(E.smin(5, X), 7)) is _FALSE          # min(5, x) never reaches 7
    assert _fact_bounds(eq(E.smax(5, X), 7)) == {E.smax(5, X): (7, 7), X: (7, 7)}
    assert _fact_bounds(ge(E.mul(-3, X), 7)) == {X: (-float("inf"), -3)}    # -3x >= 7: x <= -7/3


# ---------------------------------------------------------------- the store uses them
def _store(*facts):
    st_ = Store()
    seq = st_.declare("seq", "input", P())
    batch = st_.declare("batch", "input", P())
    return st_, seq, batch


def test_broadcast_disjunction_proves_min_without_z3():
    """``min(128, seq)`` broadcast with ``seq`` (a position table sliced to seq): the
    disjunction forces ``seq <= 128``, so ``min(128, seq) == seq`` holds; no Z3."""
    s, seq, _ = _store()
    m = E.smin(128, seq)
    s.add(any_of(eq(m, seq), eq(m, 1), eq(seq, 1)), P("broadcast"))
    assert s.decide(eq(m, seq)) is Verdict.PROVEN
    assert s.decide(le(seq, 128)) is Verdict.PROVEN
    assert s.decide(le(seq, 127)) is Verdict.UNKNOWN
    assert s.z3_checks == 0


def test_a_division_bound_reaches_its_dividend():
    """``samples // 5 - 1 >= 3`` means ``samples >= 20``, so ``samples // 20 >= 1``."""
    s = Store()
    x = s.declare("samples", "input", P())
    s.add(ge(E.sub(E.floordiv(x, 5), 1), 3), P())
    assert s.decide(ge(x, 20)) is Verdict.PROVEN
    assert s.decide(ge(x, 21)) is Verdict.UNKNOWN
    assert s.decide(ge(E.floordiv(x, 20), 1)) is Verdict.PROVEN
    assert s.decide(le(E.sub(E.floordiv(x, 20), 1), -1)) is Verdict.REFUTED
    assert s.z3_checks == 0


def test_not_equal_at_the_domain_end_moves_it():
    s = Store()
    seq = s.declare("seq", "input", P())
    s.add(ne(seq, 0), P())
    assert s.decide(ge(seq, 1)) is Verdict.PROVEN
    s.add(ne(seq, 5), P())              # not at an end: nothing follows about 6
    assert s.decide(ge(seq, 2)) is Verdict.UNKNOWN
    assert s.z3_checks <= 2             # (UNKNOWN may ask Z3; the >= 1 proof did not)


def test_a_one_symbol_fact_cuts_the_failing_end_of_a_finite_interval():
    """``seq // 2 + 1 <= seq`` fails at seq = 0 (and only there, from 0 up)."""
    s = Store()
    seq = s.declare("seq", "input", P())
    s.add(le(E.add(E.floordiv(seq, 2), 1), seq), P())
    assert s.decide(le(1, E.mul(2, seq))) is Verdict.PROVEN
    assert s.decide(le(seq, 0)) is Verdict.REFUTED
    assert s.decide(ge(seq, 2)) is Verdict.UNKNOWN       # 1 // 2 + 1 <= 1 holds: seq = 1 stays
    assert s.z3_checks <= 2


def test_case_split_on_a_not_equal_branch():
    """``batch != 0 or 64*batch*seq // (16*seq) == 0``: at batch = 0 the second branch
    is ``0 == 0``."""
    s, seq, batch = _store()
    s.add(gt(seq, 0), P())
    q = E.floordiv(E.mul(64, E.mul(batch, seq)), E.mul(16, seq))
    assert s.decide(any_of(ne(batch, 0), eq(q, 0))) is Verdict.PROVEN
    assert s.z3_checks == 0
    # the split proves nothing false: at batch = 0 the branch must really hold
    assert s.decide(any_of(ne(batch, 0), eq(E.add(q, seq), 0))) is Verdict.UNKNOWN


# ---------------------------------------------------------------- one constraint alone (the findings' explanations)
one_symbol = relations.filter(lambda r: r.symbols() == {X})


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(one_symbol, st.sampled_from([0, 1]))
def test_bounds_one_relation_forces_alone_hold_at_every_point_of_the_domain(r, floor):
    """``bounds_alone``: every point of the domain ``x >= floor`` where ``r`` holds lies
    within the bounds it gives; None may only mean "not read" (or no point holds)."""
    from smtshape.store.intervals import bounds_alone
    b = bounds_alone(r, X, floor, {})
    if b is None:
        return
    lo, hi = b
    assert lo >= floor
    for v in range(floor, BOX.stop + 200):
        try:
            ok = _holds(r, {"x": v}, {})
        except Exception:
            continue
        if ok:
            assert lo <= v <= hi, f"{r}: bounds_alone gives {lo} <= x <= {hi} from x >= {floor}, but it holds at {v}"


def test_bounds_one_relation_forces_alone():
    from smtshape.store.intervals import bounds_alone
    m = E.smin(128, X)
    assert bounds_alone(any_of(eq(X, m), eq(X, 1), eq(m, 1)), X, 0, {}) == (0, 128)   # (0 == min(128, 0))
    assert bounds_alone(any_of(eq(X, 128), eq(X, 1)), X, 0, {}) == (1, 128)
    assert bounds_alone(ne(X, 0), X, 0, {}) == (1, float("inf"))
    assert bounds_alone(gt(X, 0), X, 0, {}) == (1, float("inf"))
    assert bounds_alone(ne(X, 0), X, 1, {}) == (1, float("inf"))
    assert bounds_alone(le(E.add(E.floordiv(X, 2), 1), X), X, 0, {}) == (1, float("inf"))  # scanned: 0 fails
    assert bounds_alone(eq(E.mul(X, Y), 4), X, 0, {}) is None       # (two symbols: not read)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(-5, 5), st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(
    [X, Y, E.smin(128, X), E.smax(1, X), E.smin(3, Y), E.smin(X, Y), E.floordiv(E.smin(128, X), 2)])), max_size=4))
def test_ordering_min_max_in_a_sum_is_sympys_replace(k, terms):
    """``Intervals._ordered_minmax`` on a sum whose min / max are its own terms rebuilds it
    itself: the very term sympy's ``replace`` gives (the fallback, for any other term)."""
    import sympy
    st_ = Store()
    x, y = st_.declare("x", "input", P()), st_.declare("y", "input", P())
    st_.add(le(x, 100), P())
    st_.add(ge(y, 5), P())
    st_.check()
    iv = st_._backend._intervals
    e = E.norm(sum((c * t for c, t in terms), sympy.Integer(k)))
    got = iv._ordered_minmax(e)
    want = e if isinstance(e, int) else E.norm(e.replace(lambda t: isinstance(t, (sympy.Min, sympy.Max)), iv._ordered))
    assert got == want and (isinstance(got, int) or sympy.srepr(got) == sympy.srepr(want)), (e, got, want)
