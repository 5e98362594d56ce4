"""Result semantics the core owns: specializations, exactness upgrades, annotation policies."""
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import smtshape
from smtshape import Exactness, Verdict
from smtshape import expr as E
from smtshape.examples import demo_model
from smtshape.testing import infer_node, ts


def test_demo_model_forces_seq_at_most_128_and_names_the_node():
    res = smtshape.analyze(demo_model())
    (spec,) = res.specializations
    assert spec.relation == "seq <= 128"
    assert "add_positions" in spec.nodes
    # the sliced position table is exactly seq long once seq <= 128 is known
    assert [str(d) for d in res.shape("probs")] == ["batch", "4", "seq", "seq"]
    assert res.prove("seq <= 128") is Verdict.PROVEN
    assert res.prove("seq <= 127") is Verdict.CONTINGENT


def test_user_assumption_that_already_implies_the_bound_is_not_a_finding():
    res = smtshape.analyze(demo_model(), assume=["seq <= 100"])
    assert res.specializations == []


def test_no_broadcast_one_is_named_in_the_specialization():
    res = infer_node("Add", [ts("float", ["M"]), ts("float", ["N"])], no_broadcast_one=True)
    (spec,) = res.specializations
    assert "no_broadcast_one" in str(spec)
    # without the assumption the exact broadcast is kept, never max(M, N)
    res = infer_node("Add", [ts("float", ["M"]), ts("float", ["N"])])
    (d,) = res.shape("y0")
    assert res.evaluate({"M": 0, "N": 1})["y0"] == (0,)
    assert res.evaluate({"M": 5, "N": 5})["y0"] == (5,)
    assert res.specializations == []


def _nonzero_then_reshape(target_first):
    """NonZero count n (UPPER_BOUND), then a hard-coded Reshape that pins it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
             helper.make_node("Reshape", ["nz", "shape"], ["r"], name="pin")]
    init = [numpy_helper.from_array(np.array(target_first, np.int64), "shape")]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("r", TensorProto.INT64, None)],
                          initializer=init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_data_symbol_is_upper_bound_until_a_fact_pins_it():
    res = infer_node("NonZero", [ts("float", ["N"])])
    one, n = res.shape("y0")
    assert one.expr == 1
    assert n.exactness is Exactness.UPPER_BOUND and str(n.bound) == "N"
    # a Reshape to a fixed [1, 4] pins the count: upgraded to EXACT 4
    res = smtshape.analyze(_nonzero_then_reshape([1, 4]))
    assert res.shape("nz")[1].exactness is Exactness.EXACT
    assert res.shape("nz")[1].expr == 4


def _annotated(dim_value):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"), helper.make_node("Identity", ["y"], ["z"])]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                          value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", dim_value])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_refine_reports_a_refuted_annotation_and_keeps_the_inference():
    res = smtshape.analyze(_annotated(4))
    assert [d.expr for d in res.shape("y")][1] == 3
    # a refuted declaration is a conflict naming the value, the declaration and the inference (issue 7)
    (cf,) = res.conflicts
    assert cf.nodes == ["relu"] and "'y' is declared [N, 4] but inferred [N, 3]" in cf.explain()


def test_strict_makes_it_a_conflict_and_skip_ignores_it():
    assert smtshape.analyze(_annotated(4), policy="strict").conflicts
    res = smtshape.analyze(_annotated(4), policy="skip")
    (finding,) = [d for d in res.diagnostics if d.kind == "annotation"]     # a finding, not a conflict
    assert "declared [N, 4] but inferred [N, 3]" in finding.message and res.conflicts == []


def test_override_adopts_the_annotation_as_a_visible_constraint():
    res = smtshape.analyze(_annotated(4), policy="override")
    assert res.conflicts, "3 == 4 must be a conflict naming the annotation"
    assert any(c.kind == "annotation" for c in res.constraints)
    res = smtshape.analyze(_annotated(3), policy="override")
    assert res.conflicts == []


def test_unproven_static_annotation_is_not_trusted():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu"),
                           helper.make_node("Identity", ["y"], ["z"])], "g", [x],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                          value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])])
    res = smtshape.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    assert str(res.shape("y")[0]) == "N"          # not 8: the claim is reported, not adopted
    assert any("cannot prove" in d.message for d in res.diagnostics if d.kind == "annotation")


def test_broadcast_upgrade_from_later_facts():
    """A broadcast left as bcast(M, N) becomes N once another node makes M == N."""
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["M"])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N"])
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=0),
             helper.make_node("Reshape", ["c", "shape"], ["r"], name="pin")]
    init = [numpy_helper.from_array(np.array([2, 7], np.int64), "shape")]
    g = helper.make_graph(nodes, "g", [a, b], [helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
                                              helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                          initializer=init)
    res = smtshape.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    # M + N == 14 and (M == N or M == 1 or N == 1): not enough for a single value (7/7, 1/13, 13/1)
    assert res.shape("s")[0].exactness is Exactness.EXACT
    for m, n in [(7, 7), (1, 13), (13, 1)]:
        assert E.evaluate(res.shape("s")[0].expr, {"M": m, "N": n}) == max(m, n)
    assert res.prove("M + N == 14") is Verdict.PROVEN


def test_expression_size_cap_keeps_rules_small_and_results_exact():
    """A dim expression over the size cap becomes an alias symbol while rules run, and
    is expanded back, still EXACT, in the result."""
    rules = smtshape.Registry()       # scoped: nothing leaks into other analyses

    @rules.register("com.test", "Grow", since_version=1)
    def grow(ctx):
        (s,) = ctx.shape(0)
        e = s
        for k in range(2, 80):
            e = E.add(E.floordiv(E.add(e, k), 2), E.smin(s, k))
        ctx.set_output(0, (e,), ctx.dtype(0))

    seen = {}

    @rules.register("com.test", "Peek", since_version=1)
    def peek(ctx):
        seen["dim"] = ctx.shape(0)[0]
        ctx.set_output(0, ctx.shape(0), ctx.dtype(0))

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["S"])
    nodes = [helper.make_node("Grow", ["x"], ["g"], domain="com.test"),
             helper.make_node("Peek", ["g"], ["p"], domain="com.test")]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)],
                              ir_version=8)
    res = smtshape.analyze(model, rules=rules)
    assert E.size(seen["dim"]) == 0                    # the next rule saw a plain symbol
    (d,) = res.shape("p")
    # too big to expand back without blowing up: the alias stays, with its definition
    assert d.exactness is Exactness.EXACT and d.definitions
    assert E.size(dict(d.definitions)[d.expr]) > E.MAX_BRANCHY_OPS
    for sv in (0, 1, 7, 100):                          # and it evaluates to the real size
        e = sv
        for k in range(2, 80):
            e = (e + k) // 2 + min(sv, k)
        assert d.evaluate({"S": sv}) == e
        assert res.evaluate({"S": sv})["p"] == (e,)


def test_specializations_are_also_indexed_by_dim_name():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 64])
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="hard_reshape")], "g", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.array([1, 196, 64], np.int64), "shape")])
    res = smtshape.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    specs = res.specializations
    assert "seq" in specs and specs["seq"] == 196 and specs["seq"].nodes == ["hard_reshape"]
    assert specs.as_dict() == {"seq": 196}
    assert len(specs) == 1 and specs[0].relation == "seq == 196"


# ------------------------------------------------------------------ values that behave like values (issue 21, defect 6)

def test_a_verdict_is_not_a_truth_value():
    """``if result.prove("seq == 200"):`` was taken although the verdict is REFUTED."""
    res = smtshape.analyze(demo_model())
    v = res.prove("seq == 200")
    assert v is Verdict.REFUTED
    with pytest.raises(TypeError, match="is Verdict.PROVEN"):
        if v:
            pass


def test_a_query_answer_is_not_a_truth_value_and_says_what_to_use():
    res = smtshape.analyze(demo_model())
    ans = res.query("seq == 64")
    assert ans.verdict is Verdict.CONTINGENT and ans.proven is False and ans == Verdict.CONTINGENT
    with pytest.raises(TypeError, match="answer.proven"):
        bool(ans)
    assert res.query("seq <= 128").proven is True


def test_prove_and_query_agree_on_contingent():
    res = smtshape.analyze(demo_model())
    for claim in ("seq == 64", "seq <= 128", "seq == 200", "batch == seq"):
        assert res.prove(claim) is res.query(claim).verdict, claim
    assert res.prove("seq == 64") is Verdict.CONTINGENT


def test_a_static_dim_compares_and_converts_like_its_int():
    import numpy as np
    res = smtshape.analyze(demo_model(), bind={"batch": 2})
    b, heads, seq, _ = res.shape("probs")
    assert b == 2 and 2 == b and heads == 4 and int(heads) == 4 and b < heads <= 4
    assert hash(heads) == hash(4) and {4: "heads"}[heads] == "heads"
    assert list(range(b)) == [0, 1] and np.zeros((b, heads)).shape == (2, 4)
    assert seq != 4 and seq == res.shape("input_ids")[1]
    with pytest.raises(TypeError, match="symbolic, not a static size"):
        int(seq)
    with pytest.raises(TypeError, match="static_value"):
        seq < 100


def test_result_and_answer_are_readable_and_documented():
    res = smtshape.analyze(demo_model())
    assert repr(res) == "<smtshape.Result model: 27 values, input dims [batch, seq], consistent>"
    assert repr(res.query("seq == 64")) == "<QueryAnswer CONTINGENT: seq == 64>"
    assert repr(res.shape("probs")) == "(Dim(batch), Dim(4), Dim(seq), Dim(seq))"
    from smtshape.query import QueryAnswer
    for cls in (smtshape.Result, QueryAnswer, smtshape.Dim):
        assert cls.__doc__ and len(cls.__doc__) > 200
    assert "witness" in smtshape.Result.query.__doc__ and "CONTINGENT" in smtshape.Result.prove.__doc__


def test_a_value_is_reached_through_a_public_method():
    from onnx import TensorProto as TP
    from onnx import helper
    res = smtshape.analyze(demo_model())
    v = res.value("probs")
    assert (v.kind, [str(d) for d in v.shape], v.dtype) == ("tensor", ["batch", "4", "seq", "seq"], TP.FLOAT)
    with pytest.raises(KeyError):
        res.value("nope")
    V = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["s"], name="sc"),
                           helper.make_node("SequenceLength", ["s"], ["n"], name="len")], "g",
                          [V("x", TP.FLOAT, ["k", 3])], [V("n", TP.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    s = smtshape.analyze(m).value("s")
    assert (s.kind, s.length, [str(d) for d in s.element_shape], s.element_dtype) == \
        ("sequence", 2, ["k", "3"], TP.FLOAT)


def test_bind_takes_texts_and_pairs_and_errors_name_the_argument_not_a_flag():
    m = demo_model()
    for bind in (["batch=2"], [("batch", 2)], "batch=2", {"batch": 2}):
        assert smtshape.analyze(m, bind=bind).shape("probs")[0] == 2
    for bind, text in (({"bach": 2}, "no input dim is named 'bach' (the model's input dims: batch, seq)"),
                       (["batch"], "is not 'name=int'"), ({"batch": -1}, "non-negative int")):
        with pytest.raises(smtshape.BadInput, match=re.escape(text)) as e:
            smtshape.analyze(m, bind=bind)
        assert "--bind" not in str(e.value)
