"""Findings (smtshape/findings.py): complete, tight specializations, checked against onnxruntime."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import smtshape
from smtshape import Verdict

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"


def _model(nodes, inputs, inits, outputs=("y",), opset=17):
    g = helper.make_graph(nodes, "g", inputs,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _sliced_table_model(rows, cls: bool, self_concat: bool):
    """x[1, seq, 4] -> (CLS token concatenated before it | x concatenated with itself) ->
    + a ``rows``-row position table sliced to the new length."""
    nodes, inits = [], {"table": np.zeros((1, rows, 4), np.float32), "zero": np.array([0], np.int64),
                        "one": np.array([1], np.int64), "cls": np.zeros((1, 1, 4), np.float32)}
    if cls:
        nodes.append(helper.make_node("Concat", ["cls", "x"], ["h"], axis=1, name="cat_cls"))
    else:
        assert self_concat
        nodes.append(helper.make_node("Concat", ["x", "x"], ["h"], axis=1, name="cat_self"))
    nodes += [helper.make_node("Shape", ["h"], ["sh"]),
              helper.make_node("Gather", ["sh", "one"], ["n"], axis=0),
              helper.make_node("Slice", ["table", "zero", "n", "one"], ["pos"], name="slice_table"),
              helper.make_node("Add", ["h", "pos"], ["y"], name="add_positions")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])], inits)


def _ort(model, feeds):
    from smtshape.testing import run_onnxruntime
    return run_onnxruntime(model, feeds)


def test_cls_token_before_a_128_row_table_gives_seq_at_most_127():
    m = _sliced_table_model(128, cls=True, self_concat=False)
    res = smtshape.analyze(m)
    specs = res.specializations
    ups = [s for s in specs if s.kind == "upper"]
    assert [s.relation for s in ups] == ["seq <= 127"]
    assert "add_positions" in ups[0].nodes
    _ort(m, {"x": np.zeros((1, 127, 4), np.float32)})
    with pytest.raises(Exception):
        _ort(m, {"x": np.zeros((1, 128, 4), np.float32)})


def test_sequence_concatenated_with_itself_against_256_rows_gives_seq_at_most_128():
    m = _sliced_table_model(256, cls=False, self_concat=True)
    res = smtshape.analyze(m)
    assert [s.relation for s in res.specializations if s.kind == "upper"] == ["seq <= 128"]
    _ort(m, {"x": np.zeros((1, 128, 4), np.float32)})
    with pytest.raises(Exception):
        _ort(m, {"x": np.zeros((1, 129, 4), np.float32)})


def test_lower_bound_of_a_convolution_stack():
    """Two valid 3-wide convolutions with stride 2 need at least 7 samples."""
    w = np.zeros((1, 1, 3), np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c1"], strides=[2], name="conv1"),
             helper.make_node("Conv", ["c1", "w"], ["y"], strides=[2], name="conv2")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "samples"])], {"w": w})
    res = smtshape.analyze(m)
    (lo,) = [s for s in res.specializations if s.kind == "lower"]
    assert lo.relation == "samples >= 7" and lo.bound == 7 and "conv2" in lo.nodes
    _ort(m, {"x": np.zeros((1, 1, 7), np.float32)})
    with pytest.raises(Exception):
        _ort(m, {"x": np.zeros((1, 1, 6), np.float32)})


def test_divisibility_and_equality():
    # Reshape [1, H] -> [-1, 32]: H % 32 == 0
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs32")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "height"])],
               {"shape": np.array([-1, 32], np.int64)})
    res = smtshape.analyze(m)
    (d,) = [s for s in res.specializations if s.kind == "divisible"]
    assert d.relation == "height % 32 == 0" and d.nodes == ["rs32"]
    # a bound that both ends meet is an equality
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="pin")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 64])],
               {"shape": np.array([1, 196, 64], np.int64)})
    specs = smtshape.analyze(m).specializations
    assert specs["seq"] == 196 and specs.as_dict() == {"seq": 196}


def test_user_assumptions_are_not_findings_but_tighter_limits_are():
    m = _sliced_table_model(128, cls=True, self_concat=False)
    assert [s.relation for s in smtshape.analyze(m, assume=["seq <= 100"]).specializations] == []
    assert [s.relation for s in smtshape.analyze(m, assume=["seq <= 200"]).specializations
            if s.kind == "upper"] == ["seq <= 127"]


def test_premises_are_assumptions_of_the_analysis_not_limits():
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest", name="up")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "H", 4])],
               {"scales": np.array([1, 1, 2, 2], np.float32)})
    res = smtshape.analyze(m)
    specs = res.specializations
    assert specs.limits == [] and "H" not in specs
    assert specs.premises and all("assumption of the analysis" in str(s) for s in specs.premises)


# ---------------------------------------------------------------- corpus, against onnxruntime
def _feeds(model, truth, env, rng):
    feeds = {}
    inits = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        shape = [env[d.dim_param] if d.dim_param else d.dim_value for d in tt.shape.dim]
        dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        spec = truth["inputs"].get(inp.name, {"kind": "normal"})
        if spec["kind"] == "int":
            feeds[inp.name] = rng.integers(spec["low"], spec["high"], size=shape).astype(dt)
        elif spec["kind"] == "ones":
            feeds[inp.name] = np.ones(shape, dt)
        elif spec["kind"] == "zeros":
            feeds[inp.name] = np.zeros(shape, dt)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dt)
    return feeds


def _corpus_models():
    return sorted(p.name[:-5] for p in CORPUS.glob("*.onnx") if not p.name.startswith("light_")) \
        if CORPUS.is_dir() else []


@pytest.mark.parametrize("name", _corpus_models())
def test_corpus_bounds_hold_at_the_bound_and_fail_just_past_it(name):
    import onnxruntime as ort
    path = CORPUS / f"{name}.onnx"
    truth = json.loads((CORPUS / f"{name}.truth.json").read_text())
    res = smtshape.analyze(str(path))
    assert res.consistent is True
    checks = [s for s in res.specializations if s.kind in ("upper", "lower", "equal") and isinstance(s.bound, int)]
    if not checks:
        return
    model = onnx.load(str(path))
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    base = dict(truth["bindings"][0])
    base.update({k: 1 for k in base if k == "batch"})
    rng = np.random.default_rng(0)
    for s in checks:
        at = dict(base, **{s.symbol: s.bound})
        past = dict(base, **{s.symbol: s.bound + (1 if s.kind == "upper" else -1)})
        sess.run(None, _feeds(model, truth, at, rng))            # runs at the bound
        if past[s.symbol] < 0:
            continue
        with pytest.raises(Exception):                            # fails just past it
            sess.run(None, _feeds(model, truth, past, rng))


# ---------------------------------------------------------------- structural preconditions
def test_structural_preconditions_are_conflicts():
    from smtshape.testing import infer_node, ts
    cases = [("Reshape", [ts("float", [2, 6]), np.array([-1, -1], np.int64)], {}, "reshape.one_inferred"),
             ("Concat", [ts("float", [2, 6]), ts("float", [2, 6])], {}, "schema.attribute"),
             ("Concat", [ts("float", [2, 6]), ts("float", [2, 6, 1])], {"axis": 0}, "concat.rank"),
             ("Flatten", [ts("float", [2 ** 62, 4])], {"axis": 2}, "flatten.int64_range")]
    for op, ins, attrs, rule in cases:
        res = infer_node(op, ins, attrs)
        assert res.consistent is False, op
        (cf,) = res.conflicts
        assert [c.provenance.rule for c in cf.constraints] == [rule] and cf.nodes == ["node"]
        assert res.shape("y0") is None            # never a size (2**64 is not a dim)


def test_unknown_opset_is_bad_input(tmp_path):
    import subprocess
    import sys
    from smtshape.testing import node_model, ts
    m = node_model("Relu", [ts("float", [2])], opset=onnx.defs.onnx_opset_version() + 1)
    with pytest.raises(smtshape.BadInput, match="opset"):
        smtshape.analyze(m)
    p = tmp_path / "future.onnx"
    onnx.save(m, str(p))
    r = subprocess.run([sys.executable, "-m", "smtshape", "check", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "opset" in r.stderr


# ---------------------------------------------------------------- annotation contradictions
def _relu_declared(declared):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["h"], name="relu"),
                           helper.make_node("Relu", ["h"], ["y"], name="relu2")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, declared)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("policy", ["refine", "strict"])
def test_contradicting_declaration_is_a_conflict(policy):
    res = smtshape.analyze(_relu_declared(["N", 5]), policy=policy)
    assert res.consistent is False
    (cf,) = res.conflicts
    text = cf.explain()
    assert "'h' is declared [N, 5] but inferred [N, 4]" in text and cf.nodes == ["relu"]
    assert "declare 'h' axis 1 as 4 instead of 5" in cf.fix
    assert [str(d) for d in res.shape("h")] == ["N", "4"]          # the inference is kept
    assert smtshape.analyze(_relu_declared(["N", 4]), policy=policy).consistent is True


def test_contradicting_declaration_is_a_finding_under_skip():
    res = smtshape.analyze(_relu_declared(["N", 5]), policy="skip")
    assert res.consistent is True and res.conflicts == []
    (d,) = [d for d in res.diagnostics if d.kind == "annotation"]
    assert "finding" in d.message and "declared [N, 5] but inferred [N, 4]" in d.message


# ---------------------------------------------------------------- explanations
def test_relations_print_with_unambiguous_precedence():
    from smtshape.constraints import Conflict, Constraint, Provenance, all_of, any_of, eq, gt
    from smtshape.expr import symbol
    s = symbol("seq")
    r = all_of(gt(s, 200), any_of(eq(s, 128), eq(s, 1), eq(128, 1)))
    assert str(r) == "seq > 200 and (seq == 128 or seq == 1 or 128 == 1)"
    p = Provenance("n", "Add", "add.broadcast", "m")
    cf = Conflict("x", [Constraint(0, gt(s, 200), p), Constraint(1, r.args[1], p)], {"3": "3", "a": "4"})
    assert cf.values == {"a": "4"}                                   # no "value 3 = 3"
    assert cf.explain().startswith("conflict: seq > 200 and (seq == 128 or seq == 1 or 128 == 1) cannot hold")


def test_conflict_across_two_nodes_names_both():
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    m = _model(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, "N"]),
                       helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
               {"w": np.zeros((3, 4), np.float32), "c": np.zeros((4,), np.float32)}, outputs=("y", "m"))
    (cf,) = smtshape.analyze(m).conflicts
    assert cf.nodes == ["mm", "add"]                                  # root cause (N == 3) first


def test_edited_reshape_constant_is_named_as_the_root_cause_with_a_fix():
    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"], name="flatten_rows"),
             helper.make_node("MatMul", ["r", "w1"], ["h"], name="proj1"),
             helper.make_node("Reshape", ["x", "target"], ["r2"], name="flatten_rows2"),
             helper.make_node("MatMul", ["r2", "w2"], ["y"], name="proj2")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 64])],
               {"target": np.array([-1, 63], np.int64), "w1": np.zeros((64, 8), np.float32),
                "w2": np.zeros((64, 8), np.float32)}, outputs=("h", "y"))
    res = smtshape.analyze(m)
    assert len(res.conflicts) == 2
    for cf in res.conflicts:
        assert "'target'" in cf.root[0] and "63" in cf.root[0]       # root cause first
        assert cf.fix.startswith("change element 1 of the initializer 'target'") and "from 63 to 64" in cf.fix


def test_assumption_conflict_suggests_the_assumption_that_works():
    m = _sliced_table_model(128, cls=True, self_concat=False)
    res = smtshape.analyze(m, assume=["seq > 200"])
    assert res.consistent is False
    fixes = [cf.fix for cf in res.conflicts]
    assert any("--assume 'seq <= 127'" in f for f in fixes), fixes


# ---------------------------------------------------------------- evaluate validates, query answers
def test_evaluate_rejects_unknown_names_and_violating_bindings():
    from smtshape.examples import demo_model
    res = smtshape.analyze(demo_model())
    assert res.evaluate({"batch": 2, "seq": 100})["probs"] == (2, 4, 100, 100)
    with pytest.raises(smtshape.BadInput, match="unknown dim name 'sequ'"):
        res.evaluate({"sequ": 4})
    with pytest.raises(smtshape.BadInput, match="add_positions"):
        res.evaluate({"batch": 1, "seq": 200})                # seq <= 128 is forced
    with pytest.raises(smtshape.BadInput):
        res.evaluate({"batch": -1, "seq": 2})
    res = smtshape.analyze(demo_model(), bind={"seq": 64})
    with pytest.raises(smtshape.BadInput, match="seq"):
        res.evaluate({"batch": 1, "seq": 65})                 # contradicts the bind


def test_evaluate_checks_constraints_over_data_symbols_too():
    # NonZero count n <= N, then a Reshape to [2, -1] of a [N]-element tensor: N even
    nodes = [helper.make_node("Reshape", ["x", "t"], ["y"], name="halve")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
               {"t": np.array([2, -1], np.int64)})
    res = smtshape.analyze(m)
    assert res.evaluate({"N": 6})["y"] == (2, 3)
    with pytest.raises(smtshape.BadInput, match="halve"):
        res.evaluate({"N": 7})


def test_query_proven_refuted_contingent_with_witnesses():
    from smtshape.examples import demo_model
    res = smtshape.analyze(demo_model())
    assert res.query("seq <= 128").verdict is Verdict.PROVEN
    assert res.query("seq > 300").verdict is Verdict.REFUTED
    ans = res.query("batch == seq")
    assert ans.verdict is Verdict.CONTINGENT and ans.exit_code == 6
    assert ans.holds["batch"] == ans.holds["seq"] and ans.fails["batch"] != ans.fails["seq"]
    for b in (ans.holds, ans.fails):
        res.evaluate(b)                                       # both witnesses are inputs the model accepts
    # prove agrees with query (issue 21): CONTINGENT, a witness on each side
    assert res.prove("batch == seq") is Verdict.CONTINGENT


def test_cli_query_exit_codes_are_distinct(tmp_path):
    import subprocess
    import sys
    from smtshape.examples import demo_model
    p = tmp_path / "demo.onnx"
    onnx.save(demo_model(), str(p))
    codes = {}
    for claim in ("seq <= 128", "seq > 300", "batch == seq"):
        r = subprocess.run([sys.executable, "-m", "smtshape", "query", str(p), claim], capture_output=True, text=True)
        codes[claim] = (r.returncode, r.stdout.split(":")[0])
    assert codes == {"seq <= 128": (0, "PROVEN"), "seq > 300": (1, "REFUTED"), "batch == seq": (6, "CONTINGENT")}


def test_contradicting_declaration_in_a_branch_is_a_finding_under_skip():
    """Policy skip reads the declarations of every graph, a subgraph's too (the reader
    lists the declared values as it reads each graph)."""
    def branch(name, declared):
        return helper.make_graph(
            [helper.make_node("Relu", ["x"], [f"{name}_h"], name=f"{name}_relu"),
             helper.make_node("Relu", [f"{name}_h"], [f"{name}_y"], name=f"{name}_relu2")], name, [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)],
            value_info=[helper.make_tensor_value_info(f"{name}_h", TensorProto.FLOAT, declared)])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then", ["N", 4]),
                          else_branch=branch("else", ["N", 5]))], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    res = smtshape.analyze(m, policy="skip")
    assert [str(d) for d in res.shape("y")] == ["N", "4"]
    (d,) = [d for d in res.diagnostics if d.kind == "annotation"]
    assert "'else_h' is declared [N, 5] but inferred [N, 4]" in d.message


def test_a_message_given_as_a_function_is_made_only_when_the_relation_is_stated():
    """``Context.require`` takes the sentence or a function making it: a check that holds on
    numbers alone builds none, a stated one carries the sentence in its provenance."""
    from smtshape import engine as engine_module
    from smtshape.constraints import ge
    from smtshape.expr import symbol
    res = smtshape.analyze(_relu_declared(["N", 4]))
    ctx = engine_module.Context(res.engine, res.engine.model.graph._nodes[0], 17)

    def boom():
        raise AssertionError("message built for a check that holds")
    assert ctx.require(ge(224, 7), "test.holds", boom).status == "trivial"
    n = symbol("N")
    c = ctx.require(ge(n, 2), "test.stated", lambda: "N is at least 2")
    assert c.provenance.message == "N is at least 2" and c.status == "residual"


# ---------------------------------------------------------------- findings at the cost of the walk
from graders import adversarial as A  # noqa: E402


@pytest.mark.parametrize("family,n", [("chained_broadcasts", 200), ("broadcast_pairs", 100),
                                      ("wide_concat", 500), ("runtime_shape_vector", 1000)])
def test_findings_that_a_point_settles_ask_the_solver_nothing(family, n):
    """Broadcast chains and pairs (every symbol equal satisfies them), a size alias no
    other relation mentions, a run-time Reshape target of n private factors: no input dim
    is limited, and the search finds that without a single solver check (it used to ask
    about 140 per input dim: 9.8 s for 100 chained broadcasts, past 90 s for the rest)."""
    res = smtshape.analyze(A.FAMILIES[family][0](n))
    specs = res.specializations
    assert list(specs) == [] and specs.not_searched == []
    assert res.store.findings_checks == 0


def test_bounds_are_found_by_galloping_not_by_bisecting_the_int64_range():
    m = _sliced_table_model(128, cls=True, self_concat=False)
    res = smtshape.analyze(m)
    assert [s.relation for s in res.specializations if s.kind == "upper"] == ["seq <= 127"]
    assert res.store.findings_checks <= 30         # (a bisection from 2**62 took over 60)


def test_products_of_symbols_are_searched_one_symbol_at_a_time():
    """A product of 64 symbols: a model with all of them huge at once costs Z3 time its
    resource limit does not count; one at a time the search is quick and complete."""
    res = smtshape.analyze(A.products(64))
    specs = res.specializations
    assert specs.not_searched == [] and list(specs) == []


def test_a_search_the_budget_cannot_pay_is_reported_not_searched(tmp_path, capsys):
    """With the shared budget spent, the limits are not searched, and the result says so:
    a finding not searched is never reported as absent."""
    m = _sliced_table_model(128, cls=True, self_concat=False)
    res = smtshape.analyze(m)
    res.store.optional_budget = 0
    specs = res.specializations
    assert list(specs) == [] and specs.not_searched == ["seq"]
    assert any(d.kind == "budget" and "were not searched (seq)" in d.message for d in res.diagnostics)
    assert res.to_json()["findings_not_searched"] == ["seq"]


def _image_sizes_store(extra=None):
    """A detector's shape: run-time sizes ``d`` bounded by the image size only as
    ``d <= if(h >= 1 and w >= 1, 608, 2**63 - 1)``, wrapped to int32 and required non-zero
    (so "every symbol huge" is no model) and, with ``extra``, one more relation."""
    import sympy
    from smtshape import expr as E
    from smtshape.constraints import Provenance, ne
    from smtshape.store import Store
    st = Store()
    p = Provenance("n", "Op", "r", "test")
    h, w = st.declare("height", "input", p), st.declare("width", "input", p)
    cond = sympy.And(sympy.Ge(h, 1), sympy.Ge(w, 1))
    d = st.new_data("d", p, upper=E.norm(sympy.Piecewise((608, cond), (2 ** 63 - 1, True))))
    st.add(ne(E.sub(E.mod(E.add(E.floordiv(E.sub(d, 1), 16), 2 ** 31 + 1), 2 ** 32), 2 ** 31), 0), p)
    if extra is not None:
        st.add(extra(h, w, d), p)
    return st


def test_inputs_met_only_through_bounds_that_hold_for_any_image_are_searched_and_free():
    """fcos / keypointrcnn of corpus-wild: their image size was reported "not searched" (Z3
    cannot decide the group); nothing is forced on it, shown without the solver."""
    from smtshape.findings import specializations
    st = _image_sizes_store()
    specs, not_searched = specializations(st)
    assert specs == [] and not_searched == [] and st.findings_checks == 0


def test_a_relation_that_limits_the_input_is_still_found():
    # d <= height - 5 forces height >= 6 (the non-zero wrapped size needs d >= 1): not
    # loose, searched by the solver
    from smtshape import expr as E
    from smtshape.constraints import le
    from smtshape.findings import specializations
    st = _image_sizes_store(lambda h, w, d: le(d, E.sub(h, 5)))
    specs, not_searched = specializations(st)
    assert [s.relation for s in specs] == ["height >= 6"] and not_searched == []
    assert "width" not in not_searched


# ---------------------------------------------------------------- bounds one constraint forces, without the solver
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

# a relation over one input dim ``x``, as a plain description (built again for each store):
# (term kind, its constant, comparison, right side, form, extra constant)
_specs = hs.tuples(hs.sampled_from(["x", "min", "floordiv", "minus"]), hs.integers(1, 40),
                   hs.sampled_from(["==", "!=", "<=", "<", ">=", ">"]), hs.integers(0, 40),
                   hs.sampled_from(["atom", "broadcast", "or"]), hs.integers(0, 40))


def _relation(x, spec):
    """The shapes rules emit: a bound, a broadcast disjunction against a clamp, a non-zero
    requirement, a disjunction of a bound and a value."""
    from smtshape import expr as E
    from smtshape.constraints import Or, Rel
    kind, c, op, rhs, form, k = spec
    t = {"x": x, "min": E.smin(c, x), "floordiv": E.floordiv(x, 1 + c % 4), "minus": E.add(x, -(c % 4))}[kind]
    if form == "broadcast":
        return Or((Rel("==", x, t), Rel("==", x, 1), Rel("==", t, 1)))
    a = Rel(op, t, rhs)
    return a if form == "atom" else Or((a, Rel("==", x, k)))


def _findings_of(specs, *, solver_only: bool):
    from smtshape.constraints import Provenance
    from smtshape.findings import _GroupSearch, specializations
    from smtshape.store import Store
    from smtshape.store.explain import Explanations
    st = Store()
    x = st.declare("x", "input", Provenance("", "input", "input.dim", "x"))
    for i, spec in enumerate(specs):
        st.add(_relation(x, spec), Provenance(f"n{i}", "Op", "test.rule", "test"))
    st.check()                  # (as the analysis does before its findings)
    saved = _GroupSearch._attained, Explanations._alone
    if solver_only:
        _GroupSearch._attained = lambda self, s: None
        Explanations._alone = lambda self, relation, cands: None
    try:
        specs_found, not_searched = specializations(st)
    finally:
        _GroupSearch._attained, Explanations._alone = saved
    return st, specs_found, not_searched


_BOUND_HOLDS = {"lower": lambda v, b: v >= b, "upper": lambda v, b: v <= b, "equal": lambda v, b: v == b}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hs.lists(_specs, min_size=1, max_size=3))
def test_bounds_found_without_the_solver_are_the_solvers_and_their_one_constraint_implies_them(specs):
    """The findings' Z3-free path (``_GroupSearch._attained``: a bound the fast path entails,
    attained at a uniform model; ``Explanations._alone``: one constraint alone implies it)
    finds what the solver's search finds, and every explanation it gives implies its
    finding at every point where the explanation holds (brute force over 0..299)."""
    from smtshape.store.basics import holds
    st, fast, ns = _findings_of(specs, solver_only=False)
    if st.conflicts:
        return
    _, slow, ns2 = _findings_of(specs, solver_only=True)
    assert [s.relation for s in fast] == [s.relation for s in slow], specs
    assert ns == ns2 == []
    for s in fast:
        if s.kind not in _BOUND_HOLDS:
            continue
        core = [c.relation for c in s.constraints]
        for v in range(300):
            if all(holds(r, {"x": v}, {}) for r in core):
                assert _BOUND_HOLDS[s.kind](v, s.bound), (specs, s.relation, [str(r) for r in core], v)


def test_bounds_one_constraint_forces_are_found_and_explained_without_the_solver():
    """The encoders' ``seq <= 128`` (a broadcast against a 128-row table) and ``seq >= 1``
    (a Reshape's ``seq != 0``): no solver check (each cost a Z3 context and a core)."""
    st, found, ns = _findings_of([("min", 128, "==", 0, "broadcast", 0), ("x", 0, "!=", 0, "atom", 0)],
                                 solver_only=False)
    assert [(s.relation, [c.provenance.node for c in s.constraints]) for s in found] == \
        [("x >= 1", ["n1"]), ("x <= 128", ["n0"])] and ns == []
    assert st.findings_checks == 0 and st.z3_checks == 0
