"""The store's soundness and cost, one test per defect of the store issue
(each failed on the store before the consistency discipline)."""
import ast
import gc
import logging
import pathlib

import numpy as np
import onnx
import pytest
import z3
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape
from graders import adversarial as A
from smtshape import expr as E
from smtshape.constraints import Provenance, eq, ge, le
from smtshape.dim import Exactness
from smtshape.store import Store, Verdict
from smtshape.testing import run_onnxruntime

ROOT = pathlib.Path(smtshape.__file__).parent


def V(name, shape, dt=TP.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, [V(o, None) for o in outputs], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def P(node="n"):
    return Provenance(node, "Op", "r", "says so")


def add_relu():
    """x[a] + y[b] -> z;  Relu(w[c]) -> v."""
    return model([helper.make_node("Add", ["x", "y"], ["z"], name="add"),
                  helper.make_node("Relu", ["w"], ["v"], name="relu")],
                 [V("x", ["a"]), V("y", ["b"]), V("w", ["c"])], ["z", "v"])


# 1 ------------------------------------------------------------ vacuous answers
def test_an_unrelated_contradiction_does_not_make_answers_vacuous():
    res = smtshape.analyze(add_relu(), assume=["2*c == 5"])
    assert res.consistent is False
    (conf,) = res.conflicts
    assert any(c.kind == "assumption" for c in conf.constraints)
    (d,) = res.shape("z")
    assert d.exactness is Exactness.EXACT
    assert d.evaluate({"a": 1, "b": 3}) == 3 and d.evaluate({"a": 3, "b": 1}) == 3
    assert res.prove("a == b") is Verdict.CONTINGENT       # not "proven" from an unsat set


def test_broadcast_constraint_is_recorded_even_when_the_solver_could_decide_it():
    res = smtshape.analyze(add_relu(), assume=["a <= b", "b <= a"])
    rels = [c for c in res.constraints if c.provenance.rule.endswith("broadcast")]
    assert rels and {s.name for s in rels[0].relation.symbols()} == {"a", "b"}
    (d,) = res.shape("z")                                   # and the result is upgraded after the walk
    assert d.exactness is Exactness.EXACT and str(d) in ("a", "b")


# 2 ------------------------------------------------------------ side conditions
def test_division_side_condition_stays_where_the_division_is():
    res = smtshape.analyze(add_relu(), assume=["b == 0 or a // b == 2"])
    assert res.consistent is True
    assert res.prove("b > 0") is Verdict.CONTINGENT         # b = 0 satisfies the assumption
    assert res.prove("b >= 0") is Verdict.PROVEN


def test_floor_division_by_a_negative_divisor_is_floor():
    st = Store()
    a = E.value_symbol("a")
    b = E.value_symbol("b")
    st.add(eq(a, -7), P())
    st.add(eq(b, -2), P())
    # Python: -7 // -2 == 3 and -7 % -2 == -1; with a raw SMT-LIB div (Euclidean) it would be 4 / 1
    assert st.decide(eq(E.floordiv(E.value_symbol("x") * 0 + a, b), 3)) is Verdict.PROVEN


# 3 ------------------------------------------------------------ undecided is not consistent
def undecidable():
    return model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
                  helper.make_node("Relu", ["w"], ["v"], name="r2")],
                 [V("x", ["p"]), V("w", ["q"])], ["y", "v"])


def test_undecided_is_reported_as_undecided(tmp_path, capsys):
    res = smtshape.analyze(undecidable(), assume=["p*p == 2*q*q", "q >= 1"])
    assert res.consistent is None
    # the constraint that makes the set undecidable is set aside and listed with its origin
    assert res.undecided and all(c.kind == "assumption" for c in res.undecided)
    assert res.to_json()["consistent"] is None
    path = tmp_path / "m.onnx"
    onnx.save(undecidable(), str(path))
    from smtshape.cli import main
    code = main(["check", str(path), "--assume", "p*p == 2*q*q", "--assume", "q >= 1"])
    out = capsys.readouterr().out
    assert code == 4 and "undecided" in out and "consistent (" not in out


# 4 ------------------------------------------------------------ another tool's claims
def attention_model():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=3, kv_num_heads=3)
    return model([node], [V("q", ["B", "S", 24]), V("k", ["B", "L", 24]), V("v", ["B", "L", 30])], ["y"],
                 opset=23)


def test_onnx_inference_over_symbolic_inputs_is_not_taken_as_exact():
    rules = smtshape.Registry()
    rules.hide("", "Attention")                # force the ONNX per-node fallback
    res = smtshape.analyze(attention_model(), rules=rules)
    assert ("attn", "Attention", "") in [u[:3] for u in res.unchecked_nodes]
    s = res.shape("y")
    assert s is None or all(d.exactness is not Exactness.EXACT or d.expr != 0 for d in s)
    assert s is None or s[2].exactness is Exactness.UNKNOWN
    # with the rule: exact, and right
    res = smtshape.analyze(attention_model())
    assert res.unchecked_nodes == []
    assert [str(d) for d in res.shape("y")] == ["B", "S", "30"]


def test_fallback_accepts_static_dims_from_static_inputs():
    rules = smtshape.Registry()
    rules.hide("", "Relu")
    res = smtshape.analyze(model([helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", [2, 3])], ["y"]),
                           rules=rules)
    assert [d.expr for d in res.shape("y")] == [2, 3]
    res = smtshape.analyze(model([helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", ["N", 3])], ["y"]),
                           rules=rules)
    assert [d.exactness for d in res.shape("y")] == [Exactness.UNKNOWN, Exactness.UNKNOWN]


def test_check_lists_the_nodes_it_could_not_check(tmp_path, capsys):
    rules = smtshape.Registry()
    rules.hide("", "Relu")
    res = smtshape.analyze(add_relu(), rules=rules)
    assert [u[:3] for u in res.unchecked_nodes] == [("relu", "Relu", "")]
    assert res.to_json()["unchecked_nodes"] == [{"node": "relu", "op_type": "Relu", "domain": "", "reason": "NO_RULE",
                                                 "message": "no smtshape rule for op 'ai.onnx::Relu' (opset 18)",
                                                 "accepted": False}]
    # a node no rule checked: the model is not called consistent (None), and check exits 4
    assert res.consistent is None


# 5 ------------------------------------------------------------ cost
def test_chained_unifications_are_near_linear():
    st_counts = {}
    for n in (250, 2000):
        # (inputs_positive: no input is empty, so every d_i is d0; with empty inputs allowed
        # onnxruntime skips their dims: tests/test_splits.py)
        res = smtshape.analyze(A.chained_unifications(n), inputs_positive=True)
        assert [str(d) for d in res.shape("y")] == ["d0", str(n)]
        st_counts[n] = res.store.z3_checks
    assert st_counts[2000] <= st_counts[250] + 2          # no solver work grows with the chain


def test_solver_work_on_chained_broadcasts_is_bounded_whatever_the_length():
    """Rules ask the solver only optional questions, from a bounded budget: the number
    of checks does not grow with the chain (it grew by about 8 per Add before)."""
    checks = {}
    for n in (150, 600):
        res = smtshape.analyze(A.chained_broadcasts(n))
        res.shapes()
        checks[n] = res.store.z3_checks
        (d,) = res.shape(f"s{n - 1}")
        env = {f"d{i}": 1 for i in range(n)}
        env["d77"] = 5
        assert d.evaluate(env) == 5 and d.exactness is Exactness.EXACT
    cap = 2 * smtshape.store.Store().optional_max_questions + 8     # two checks per question at most
    assert checks[600] <= cap and checks[150] <= cap


def test_forks_never_use_a_solver():
    from smtshape import store as S
    forks = []
    orig = S.Store.fork

    def spy(self):
        f = orig(self)
        forks.append(f)
        return f

    S.Store.fork = spy
    try:
        res = smtshape.analyze(A.ifs_with_broadcasts(60))
    finally:
        S.Store.fork = orig
    assert len(forks) >= 10 and all(f._backend.solver is None and f.z3_checks == 0 for f in forks)
    assert res.consistent is True


# 6 ------------------------------------------------------------ user names stay
def test_user_names_stay_representatives_over_nested_broadcasts():
    n = 70
    ins = [V(f"x{i}", [f"d{i}", 4]) for i in range(n)] + [V("k", ["K", 4])]
    nodes, acc = [], "x0"
    for i in range(1, n):
        nodes.append(helper.make_node("Add", [acc, f"x{i}"], [f"s{i}"], name=f"add{i}"))
        acc = f"s{i}"
    nodes.append(helper.make_node("Concat", ["k", acc], ["y"], name="cat", axis=1))
    res = smtshape.analyze(model(nodes, ins, ["y"]), inputs_positive=True)     # (no empty input)
    assert [str(d) for d in res.shape("y")] == ["K", "8"]
    assert [str(d) for d in res.shape(acc)] == ["K", "4"]


# 7 ------------------------------------------------------------ one home for the domain
def test_smtlib_export_is_the_answered_set_with_its_domain():
    res = smtshape.analyze(add_relu(), inputs_positive=True, assume=["c == 3", "c == 4"])
    text = res.to_smtlib()
    assert text.rstrip().endswith("(check-sat)")
    assert "(assert (>= |d.a| 1))" in text                 # inputs_positive is in the export
    s = z3.Solver()
    s.add(z3.parse_smt2_string(text))
    assert s.check() == z3.unsat                           # the conflict is exported: unsat, as the model
    base = text.split("conflict(s): ")[0] + "(check-sat)"  # the set the store answers from
    s = z3.Solver()
    s.add(z3.parse_smt2_string(base))
    assert s.check() == z3.sat
    s.add(z3.Int("d.a") == 0)
    assert s.check() == z3.unsat                           # and the store proves a >= 1 too
    assert res.prove("a >= 1") is Verdict.PROVEN


# 8 ------------------------------------------------------------ no process-wide side effects
def test_each_store_has_its_own_z3_context():
    st1, st2 = Store(), Store()
    for st in (st1, st2):
        x = st.declare("x", "input", P())
        y = st.declare("y", "input", P())
        st.add(ge(E.mul(x, y), 4), P())          # (a question intervals cannot settle: Z3 answers)
        st.add(le(y, 2), P())
        assert st.decide(ge(x, 2)) is Verdict.PROVEN
        assert st.z3_checks > 0
    assert st1._backend.solver.ctx is not st2._backend.solver.ctx and st1._backend.solver.ctx is not z3.main_ctx()


def test_user_rules_take_precedence_and_scoped_rules_do_not_leak():
    rules = smtshape.Registry()

    @rules.register("", "Relu", since_version=1)
    def relu(ctx):
        ctx.set_output(0, (7,), ctx.dtype(0))

    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", ["N"])], ["y"])
    assert [d.expr for d in smtshape.analyze(m, rules=rules).shape("y")] == [7]   # over Relu-14
    assert [str(d) for d in smtshape.analyze(m).shape("y")] == ["N"]             # not leaked


def test_analysis_leaves_gc_and_loggers_as_it_found_them():
    log = logging.getLogger("onnx_ir.serde")
    before = (gc.isenabled(), log.level)
    bad = model([helper.make_node("Relu", ["nope"], ["y"], name="r")], [], ["y"])
    with pytest.raises(smtshape.BadInput, match="nope"):
        smtshape.analyze(bad)
    smtshape.analyze(add_relu()).shapes()
    assert (gc.isenabled(), log.level) == before


def test_layers_import_one_way():
    for path in (ROOT / "ops").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.endswith("engine"), f"{path.name} imports engine"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "store" and node.attr.startswith("_"):
                raise AssertionError(f"{path.name} touches the store's private state: {node.attr}")


# 9 ------------------------------------------------------------ generated names
def test_generated_names_never_equal_user_names():
    m = model([helper.make_node("Concat", ["x", "y"], ["z"], name="cat", axis=0)],
              [V("x", [None]), V("y", ["x_d0"])], ["z"])
    res = smtshape.analyze(m)
    gen = res.engine.input_dims[("x", 0)]
    assert gen.name != "x_d0"
    (d,) = res.shape("z")
    assert d.evaluate({gen.name: 3, "x_d0": 5}) == 8
    out = run_onnxruntime(m, {"x": np.zeros(3, np.float32), "y": np.zeros(5, np.float32)})
    assert out[0].shape == (8,)


# 10 / 12 ------------------------------------------------------------ bounded expressions
@pytest.mark.parametrize("n", [6])
def test_chained_runtime_slices_stay_small_and_right(n):
    m = A.chained_shape_slices(n)
    res = smtshape.analyze(m)
    (d,) = res.shape(f"s{n - 1}")
    assert d.exactness is Exactness.EXACT
    for N in (0, 1, 3, 7, 9):
        want = run_onnxruntime(m, {"x": np.zeros(N, np.float32)})[0].shape[0]
        assert d.evaluate({"N": N}) == want
    for name in res.value_names:
        for dd in res.shape(name) or ():
            assert E.size(dd.expr) <= E.MAX_OPS


def test_chained_runtime_start_slices_are_bounded_and_sound():
    m = A.chained_slices(5)
    res = smtshape.analyze(m)
    (d,) = res.shape("s4")
    for N, K in ((6, 2), (6, 0), (3, 5), (0, 1)):
        want = run_onnxruntime(m, {"x": np.zeros(N, np.float32), "k": np.array([K], np.int64)})[0].shape[0]
        if d.exactness is Exactness.EXACT:
            assert d.evaluate({"N": N}) == want
        elif d.exactness is Exactness.UPPER_BOUND:
            assert E.evaluate(d.bound, {"N": N}) >= want


def test_nested_loops_walk_each_body_a_bounded_number_of_times():
    from smtshape import engine as EN
    counts = {}
    orig = EN.Engine.run_node

    def spy(self, node):
        counts[node.name] = counts.get(node.name, 0) + 1
        return orig(self, node)

    EN.Engine.run_node = spy
    try:
        res = smtshape.analyze(A.nested_loops(12))
    finally:
        EN.Engine.run_node = orig
    assert max(counts.values()) <= 4, max(counts.items(), key=lambda kv: kv[1])
    assert [str(d) for d in res.shape("y")][1] == "D"


# 11 ------------------------------------------------------------ hostile names
HOSTILE = ["ok\n(assert false) ;", "first\n(exit) ;", "a|b", "back\\slash", "(paren)", "x y"]


@pytest.mark.parametrize("name", HOSTILE)
def test_node_names_cannot_change_what_the_export_means(name):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name=name)]
    w = numpy_helper.from_array(np.zeros((4, 2), np.float32), "w")
    for inner, want in (("K", z3.sat), (3, None)):
        res = smtshape.analyze(model(nodes, [V("x", ["N", inner])], ["y"], [w]))
        text = res.to_smtlib()
        s = z3.Solver()
        s.add(z3.parse_smt2_string(text))
        # consistent: K == 4 (sat); conflicting (3 != 4): the exported conflict makes it unsat,
        # whatever the node's name says
        assert s.check() == (z3.sat if inner == "K" else z3.unsat)
        assert all(line.startswith((";", "(")) for line in text.splitlines() if line)
        assert "(exit)" not in [line.strip() for line in text.splitlines() if not line.startswith(";")]


@pytest.mark.parametrize("dim", ["true", "false", "and", "or", "distinct", "xor", "as", "_", "let", "Int"])
def test_reserved_words_as_dim_names_round_trip(dim):
    m = model([helper.make_node("Concat", ["x", "y"], ["z"], name="cat", axis=1),
               helper.make_node("MatMul", ["z", "w"], ["o"], name="mm")],
              [V("x", [4, dim]), V("y", [4, "b"])], ["o"],
              [numpy_helper.from_array(np.zeros((8, 2), np.float32), "w")])      # dim + b == 8
    res = smtshape.analyze(m, assume=["b <= 6"])
    text = res.to_smtlib()
    s = z3.Solver()
    s.add(z3.parse_smt2_string(text))
    assert s.check() == z3.sat
    # same verdict as the store on a claim
    claim_store = res.prove("b <= 10")
    assert claim_store is Verdict.PROVEN
    s.add(z3.Not(z3.Int("d.b") <= 10))
    assert (s.check() == z3.unsat) == (claim_store is Verdict.PROVEN)
    # every symbol is in smtshape's namespace: no quoted symbol is an SMT-LIB word
    import re
    quoted = set(re.findall(r"\|([^|]*)\|", "\n".join(line for line in text.splitlines()
                                                       if not line.startswith(";"))))
    assert quoted and all(q.startswith("d.") for q in quoted)
    assert f"; |d.{dim}| is {dim!r}" in text


def test_ifs_over_deep_broadcast_chains_are_checked():
    """400 broadcasting Adds with an If every 10: every node checked (a fork's cold interval
    cache re-read the whole alias chain at once, a RecursionError in the then-branch's Add:
    an unchecked node, so 'not proven consistent'), and the Ifs' dims bounded."""
    res = smtshape.analyze(A.ifs_with_broadcasts(400))
    assert not res.unchecked_nodes and res.consistent is True
    assert str(res.shape("if390")[0]) == "N"


def test_adversarial_families_are_valid_models():
    """Each generated family is a model smtshape finds no conflict in (nested_loops declared
    its int64 scan output as float: a true conflict, not the store's cost)."""
    for fam, (build, n) in A.FAMILIES.items():
        m = build(min(n, 8))
        assert smtshape.analyze(m).consistent is not False, fam
