"""Case splits on a piecewise term's condition (smtshape/store/cases.py): checked against
brute force and against Z3, and shown to settle the questions the dynamo exports ask
without a solver call.

A verdict of ``case_verdict`` claims something of every model of the store's facts;
the brute force checks the claim at every integer point of a box where the facts
hold (necessary, not sufficient: the box is finite), and Z3, asked the same question
on a store of the same facts, must never answer the opposite.
"""
import itertools

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtshape import expr as E
from smtshape.constraints import Provenance, Rel, any_of, eq, ge, gt, le, ne
from smtshape.store import Store, Verdict
from smtshape.store.basics import holds
from smtshape.store.cases import case_verdict

BOX = range(0, 19)


def P(rule="r"):
    return Provenance("n", "Op", rule, "test")


def ite(x, k, then, other):
    """``then if x == k else other``, as the Reshape rule writes it (a raw Piecewise)."""
    return E.raw_piecewise((then, sympy.Eq(E.to_sympy(x), k, evaluate=False)), (other, True))


def _store():
    s = Store()
    return s, s.declare("x", "input", P()), s.declare("y", "input", P())


X, Y = E.symbol("x"), E.symbol("y")


def _leaf():
    return st.one_of(st.sampled_from([X, Y]), st.integers(0, 4))


def _term(depth=2):
    if depth == 0:
        return _leaf()
    sub = _term(depth - 1)
    return st.one_of(
        _leaf(),
        st.builds(ite, st.sampled_from([X, Y]), st.integers(0, 2), sub, sub),
        st.builds(E.smax, st.integers(0, 2), sub),
        st.builds(E.smin, sub, sub),
        st.builds(E.bcast, sub, sub),
        st.builds(E.add, sub, st.integers(-2, 2)),
        st.builds(E.mul, st.integers(1, 3), sub),
        st.builds(lambda a, b, t: E.floordiv(E.mul(a, E.mul(X, t)), E.mul(b, X)),
                  st.integers(1, 8), st.integers(1, 4), st.sampled_from([1, Y])),
        st.builds(E.floordiv, sub, st.integers(1, 3)),
    )


facts = st.lists(st.sampled_from([ne(X, 0), ne(Y, 0), ge(Y, 2), gt(X, Y), any_of(eq(X, 1), eq(Y, 1))]),
                 max_size=2, unique=True)
_branching = st.builds(ite, st.sampled_from([X, Y]), st.integers(0, 2), _term(1), _term(1))
questions = st.builds(Rel, st.sampled_from(["==", "!=", ">=", ">"]), st.one_of(_term(), _branching, _branching),
                      st.one_of(_term(1), st.integers(0, 3)))


def _points(fs, defs):
    for x, y in itertools.product(BOX, BOX):
        env = {"x": x, "y": y}
        try:
            if all(holds(f, env, defs) for f in fs):
                yield env
        except Exception:
            continue


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(facts, questions, st.booleans())
def test_a_case_verdict_holds_at_every_point_and_z3_never_says_otherwise(fs, q, through_alias):
    s, x, y = _store()
    for f in fs:
        s.add(f, P())
    s.check()           # (the facts join the base: their bounds reach the intervals)
    if through_alias:   # the question's left side behind an alias, as Reshape's cap
        q = Rel(q.op, s.alias(q.lhs, P("cap")), q.rhs) if not isinstance(q.lhs, int) else q
    cr = s.canon_rel(q)
    v = case_verdict(s._intervals, cr, [10**9])
    if v is None:
        return
    defs = s._fast.definitions
    for env in _points(fs, defs):
        try:
            ok = holds(cr, env, defs)
        except Exception:
            continue
        assert ok == (v is Verdict.PROVEN), f"{cr}: case split says {v.name}, but it is {ok} at {env} ({fs})"
    z = s.decide(q)     # (the store's own path, Z3 after the case split: the same answer or none)
    assert z in (v, Verdict.UNKNOWN), f"{cr}: case split {v.name}, the store {z.name}"


def test_the_dynamo_reshape_size_is_settled_without_z3():
    """clip_text_dynamo: ``cap`` is the size a Reshape infers, written by the exporter
    for the case where batch or seq is 0; with ``seq != 0`` it is 4 whatever batch is."""
    s = Store()
    seq, batch = s.declare("seq", "input", P()), s.declare("batch", "input", P())
    b = ite(seq, 0, E.smax(1, batch), batch)
    some_zero = sympy.Or(sympy.Eq(batch, 0, evaluate=False), sympy.Eq(seq, 0, evaluate=False), evaluate=False)
    size = E.raw_piecewise(
        (E.floordiv(E.mul(64, E.mul(E.smax(1, seq), E.smax(1, b))), E.mul(16, E.mul(E.smax(1, batch), E.smax(1, seq)))),
         some_zero),
        (E.floordiv(E.mul(4, b), batch), True))
    cap = s.alias(size, P("cap"))
    s.add(ne(seq, 0), P("zero_copy"))
    assert s.decide(eq(cap, 4)) is Verdict.PROVEN
    assert s.decide(eq(b, batch)) is Verdict.PROVEN
    assert s.decide(ne(cap, 0)) is Verdict.PROVEN
    assert s.z3_checks == 0


def test_without_the_fact_the_split_proves_nothing():
    """``if(seq == 0, max(1, batch), batch) == batch`` fails at seq = batch = 0."""
    s = Store()
    seq, batch = s.declare("seq", "input", P()), s.declare("batch", "input", P())
    assert case_verdict(s._intervals, s.canon_rel(eq(ite(seq, 0, E.smax(1, batch), batch), batch)), [10**9]) is None
    assert s.decide(eq(ite(seq, 0, E.smax(1, batch), batch), batch)) is Verdict.UNKNOWN


def test_a_bound_the_store_proved_is_a_fact_for_later_questions():
    """``seq > 0`` proved (by Z3, from ``seq + 2 <= 3 * batch`` and ``batch <= seq``) narrows
    seq's interval: the later ``if(seq == 0, 0, seq) >= 1`` needs no solver call."""
    s = Store()
    seq, batch = s.declare("seq", "input", P()), s.declare("batch", "input", P())
    s.add(le(E.add(seq, 2), E.mul(3, batch)), P())
    s.add(le(batch, seq), P())
    assert s.decide(gt(seq, 0)) is Verdict.PROVEN
    n = s.z3_checks
    assert s.decide(ge(ite(seq, 0, 0, seq), 1)) is Verdict.PROVEN
    assert s.z3_checks == n


def test_a_division_with_a_constant_quotient_needs_a_divisor_known_not_zero():
    """``if(x == 0, 0, 6*x*y // (3*y)) == 2*x``: where x != 0 the quotient is 2x only if
    y is not 0 (a division by 0 says nothing)."""
    s, x, y = _store()
    q = ite(x, 0, 0, E.floordiv(E.mul(6, E.mul(x, y)), E.mul(3, y)))
    assert case_verdict(s._intervals, s.canon_rel(eq(q, E.mul(2, x))), [10**9]) is None     # (y may be 0)
    s.add(ne(y, 0), P())
    s.check()
    assert case_verdict(s._intervals, s.canon_rel(eq(q, E.mul(2, x))), [10**9]) is Verdict.PROVEN


def test_a_store_whose_questions_splits_do_not_settle_stops_trying():
    """The allowance: questions the split does not settle spend it, settled ones add to it."""
    s, x, y = _store()
    allowance = [20]
    hard = ge(ite(x, 0, y, E.floordiv(E.mul(y, y), 3)), 5)      # contingent: no split settles it
    assert case_verdict(s._intervals, s.canon_rel(hard), allowance) is None
    assert allowance[0] < 20
    while allowance[0] > 0:
        assert case_verdict(s._intervals, s.canon_rel(hard), allowance) is None
    easy = eq(ite(x, 0, 0, x), x)
    assert case_verdict(s._intervals, s.canon_rel(easy), allowance) is None        # (no allowance left)
    assert case_verdict(s._intervals, s.canon_rel(easy), [1]) is Verdict.PROVEN
