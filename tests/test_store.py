"""The constraint store: fast path, Z3, verdicts, static values, conflicts."""
import z3

from smtshape import expr as E
from smtshape.constraints import Provenance, any_of, eq, ge, le
from smtshape.store import Domain, Store, Verdict


def P(node="n", op="Op", rule="r"):
    return Provenance(node, op, rule, f"{op} {node} says so")


def test_absorbs_equalities_and_keeps_user_names():
    st = Store()
    batch = st.declare("batch", "input", P())
    n = st.new_data("nz", P())
    st.add(eq(n, batch), P())
    assert st.canon(n) == batch          # the data symbol is eliminated, not the user's name
    assert st.constraints[-1].status == "absorbed"
    assert st.decide(eq(n, batch)) is Verdict.PROVEN


def test_concat_sum_makes_static_and_proves_relation():
    st = Store()
    a = st.declare("a", "input", P())
    b = st.declare("b", "input", P())
    st.add(eq(E.add(a, b), 1024), P("cat", "Concat", "concat.sum"))
    assert st.static_value(E.add(a, b)) == 1024
    assert st.decide(le(a, 1024)) is Verdict.PROVEN      # via b >= 0
    assert st.decide(eq(a, 3)) is Verdict.UNKNOWN
    assert st.static_value(a) is None


def test_broadcast_disjunction_is_not_enough_for_sum():
    """a + b == 1024 is NOT provable from a broadcast, where a + b == 1 also runs."""
    st = Store()
    a = st.declare("a", "input", P())
    b = st.declare("b", "input", P())
    c = st.declare("c", "input", P())
    st.add(any_of(eq(E.add(a, b), c), eq(E.add(a, b), 1), eq(c, 1)), P("add", "Add", "broadcast"))
    st.add(eq(c, 1024), P())
    assert st.decide(eq(E.add(a, b), 1024)) is Verdict.UNKNOWN


def test_fast_path_conflict_names_the_nodes_on_the_path():
    st = Store()
    k = st.declare("k", "input", P())
    st.add(eq(k, 768), P("proj", "MatMul", "matmul.inner"))
    c = st.add(eq(k, 512), P("head", "MatMul", "matmul.inner"))
    assert c.status == "conflict"
    assert len(st.conflicts) == 1
    assert set(st.conflicts[0].nodes) == {"proj", "head"}
    text = st.conflicts[0].explain()
    assert "512" in text and "768" in text


def test_z3_conflict_is_explained_by_a_minimal_core_and_quarantined():
    st = Store()
    seq = st.declare("seq", "input", P())
    other = st.declare("other", "input", P())
    m = E.smin(128, seq)
    st.add(any_of(eq(m, seq), eq(m, 1), eq(seq, 1)), P("pos_add", "Add", "broadcast"))
    st.add(le(other, 5), P("irrelevant", "Slice", "slice.bound"))
    st.add(ge(seq, 200), P("user", "assumption", "assume"), kind="assumption")
    assert st.check() is False
    (conf,) = st.conflicts
    assert set(conf.nodes) == {"pos_add", "user"}     # 'irrelevant' is not in the core
    # after quarantine the rest still answers
    assert st.decide(le(other, 5)) is Verdict.PROVEN


def test_unknown_answers_are_retried_after_new_facts():
    st = Store()
    x = st.declare("x", "input", P())
    y = st.declare("y", "input", P())
    assert st.decide(le(x, y)) is Verdict.UNKNOWN
    st.add(le(E.add(x, 1), y), P())
    assert st.decide(le(x, y)) is Verdict.PROVEN


def test_budget_exhaustion_is_unknown_never_proven():
    st = Store(rlimit=20_000)
    x = st.declare("x", "input", P())
    y = st.declare("y", "input", P())
    st.add(ge(y, 1), P())
    st.add(eq(E.mul(x, x), E.mul(2, E.mul(y, y))), P())
    # x*x == 2*y*y has no positive solution: the true answer is "refuted", but a budget
    # stop must give UNKNOWN, never PROVEN
    assert st.decide(eq(x, 0)) is not Verdict.PROVEN


def test_zero_is_a_legal_dim():
    st = Store()
    s = st.declare("s", "input", P())
    assert st.decide(ge(s, 1)) is Verdict.UNKNOWN
    st2 = Store(Domain(inputs_positive=True))
    s2 = st2.declare("s", "input", P())
    st2.add(le(s2, 10), P())          # forces z3 into play
    assert st2.decide(ge(s2, 1)) is Verdict.PROVEN


def test_negative_value_for_a_dim_is_a_conflict():
    st = Store()
    a = st.declare("a", "input", P())
    st.add(eq(E.add(a, 3), 0), P("pad", "Pad", "pad.nonnegative"))
    assert st.conflicts and "pad" in st.conflicts[0].nodes


def test_smtlib_export_parses():
    st = Store()
    a = st.declare("a", "input", P())
    b = st.declare("b", "input", P())
    st.add(le(E.floordiv(a, 2), b), P())
    text = st.to_smtlib()
    assert z3.parse_smt2_string(text)
    assert "floor" not in text


def test_watchdog_interrupts_an_unbounded_check_and_gives_unknown():
    st = Store(rlimit=0, watchdog_s=0.2)          # rlimit 0: no resource budget at all
    x = st.declare("x", "input", P())
    y = st.declare("y", "input", P())
    st.add(ge(y, 1), P())
    st.add(eq(E.mul(x, x), E.mul(2, E.mul(y, y))), P())
    # x*x == 2*y*y has no solution with y >= 1, so the claim is vacuously true, but only
    # number theory shows it: Z3 searches without end.  The watchdog must stop it, and
    # the answer must be UNKNOWN, never PROVEN.
    assert st.decide(le(x, 10 ** 9)) is Verdict.UNKNOWN


def test_conflict_names_the_values_involved():
    st = Store()
    k = st.declare("k", "input", P())
    st.add(eq(k, 768), P("a", "MatMul", "matmul.inner"))
    st.add(eq(k, 512), P("b", "MatMul", "matmul.inner"))
    (c,) = st.conflicts
    assert c.values["k"] == "768"
    assert "where k = 768" in c.explain()


def test_a_reused_z3_context_answers_like_a_fresh_one():
    """Z3 contexts of freed stores are reused (store.solver._CONTEXTS); Z3's resource counter is the
    context's, so a store must count its optional budget per check, never from the
    counter's absolute value (a used context once spent every store's budget at once)."""
    import gc

    from smtshape.store import solver as S

    def questions():
        st = Store(Domain())
        a, b = (st.declare(n, "input", P()) for n in ("a", "b"))
        st.add(le(a, 100), P())
        verdicts = []
        for k in range(1, 30):
            st.add(ge(a * b + k, 0), P())        # keeps the base growing: no cached answer
            verdicts.append(st.decide(ge(a * a, b * k), optional=True))
        return verdicts, st.z3_checks, st.optional_budget

    fresh = questions()
    # burn a context: a hard nonlinear question, then free its store into the pool
    st = Store(Domain(), rlimit=3_000_000)
    p, q = st.declare("p", "input", P()), st.declare("q", "input", P())
    st.add(eq(p * p, 2 * q * q), P())
    st.add(ge(q, 1), P())
    st.check()
    assert st._backend.solver.rlimit_used() > 1_000_000
    del st
    gc.collect()
    assert S._CONTEXTS._free, "the freed store's context went back to the pool"
    reused = questions()
    assert reused[0] == fresh[0] and reused[1] == fresh[1]
    assert abs(reused[2] - fresh[2]) < 200_000


def test_a_bound_past_every_witness_value_is_undecided_without_z3():
    """``batch <= 16777216`` (Resize's float32 edge) is false at batch = 16777217 and true
    at 1: the varied points try the values beside the constant the relation compares
    with, so the question needs no solver call (it took one before)."""
    st = Store()
    batch = st.declare("batch", "input", P())
    seq = st.declare("seq", "input", P())
    st.add(ge(E.add(batch, seq), 2), P())
    for rel in (le(batch, 16777216), ge(16777216, batch), ge(batch, 4096)):
        assert st.decide(rel) is Verdict.UNKNOWN
    assert st.z3_checks == 0


def test_groups_union_relation_groups_like_union_of_symbols():
    """``Groups.union_relation`` (terms read once, remembered) groups symbols exactly as
    putting each relation's symbols in one group does."""
    import random

    from smtshape.constraints import Or
    from smtshape.store.groups import Groups

    rng = random.Random(7)
    syms = [E.symbol(f"s{i}") for i in range(30)]
    terms = list(syms)
    for _ in range(40):           # nested terms sharing subterms, as a chain's links do
        a, b = rng.choice(terms), rng.choice(terms)
        terms.append(rng.choice([E.bcast, E.add, E.mul])(a, b))
    rels = [Or((eq(rng.choice(terms), rng.choice(terms)), eq(rng.choice(terms), 1)))
            for _ in range(12)]
    by_terms, by_syms = Groups(), Groups()
    for r in rels:
        m = by_terms.union_relation(r)
        by_syms.union_all(list(r.symbols()))
        assert (m is None) == (not r.symbols())
    for x in syms:
        for y in syms:
            assert (by_terms.find(x) is by_terms.find(y)) == (by_syms.find(x) is by_syms.find(y))
