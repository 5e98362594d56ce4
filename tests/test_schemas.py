"""The schemas' static contract (smtshape/schemas.py): arity, attributes and element types
of every standard op are preconditions, each violation a conflict naming the node; the
element type of an output follows the schema; a declared element type that contradicts
it is an annotation conflict."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP, helper

import smtshape
from smtshape import schemas
from smtshape.conflicts import suggest_fix
from smtshape.report import explain_conflict
from smtshape.testing import infer_node, ts


def rules_of(res):
    return [k.provenance.rule for c in res.conflicts for k in c.constraints]


def test_table_matches_the_installed_onnx():
    """Every (op, version) both know is the same in the shipped table and in onnx; the
    table knows every op of the standard domains onnx has at that table's version."""
    built = schemas.build_table()
    shipped = schemas._table()
    sets_b, sets_s = built["sets"], shipped["sets"]

    def norm(row, sets):
        row = dict(row)
        row["t"] = {k: sorted(sets[v]) for k, v in row["t"].items()}
        return row
    import json
    compared = 0
    for op, text in shipped["ops"].items():
        if op not in built["ops"]:
            continue
        mine = {since: norm(row, sets_s) for since, row in json.loads(text)}
        theirs = {since: norm(row, sets_b) for since, row in json.loads(built["ops"][op])}
        for since in mine.keys() & theirs.keys():
            assert mine[since] == theirs[since], (op, since)
            compared += 1
    assert compared > 600
    if built["onnx_version"] == shipped["onnx_version"]:
        assert built == shipped, "regenerate: python -m smtshape.schemas --write"


def test_sum_of_int64_is_a_conflict():
    res = infer_node("Sum", [ts("int64", ["N"]), ts("int64", ["N"])], opset=13)
    assert res.consistent is False and rules_of(res) == ["schema.type"]
    (c,) = res.conflicts
    assert "Sum-13 input 0 is tensor(int64), which its type T does not allow" in c.explain()
    assert suggest_fix(c) == "cast input 0 to an allowed type"
    assert c.nodes == ["node"]


def test_inputs_of_one_type_parameter_must_agree():
    res = infer_node("Add", [ts("float", ["N"]), ts("int64", ["N"])], opset=14)
    assert rules_of(res) == ["schema.type"]
    assert "inputs 0 and 1 are both of type T but are tensor(float) and tensor(int64)" in \
        explain_conflict(res, res.conflicts[0])


def test_concrete_input_type():
    # Reshape's shape input is tensor(int64)
    res = infer_node("Reshape", [ts("float", [2, 3]), ts("int32", [2])], opset=14)
    assert rules_of(res) == ["schema.type"]
    assert "input 1 must be tensor(int64), it is tensor(int32)" in res.conflicts[0].explain()


@pytest.mark.parametrize("op,inputs,attrs,text", [
    ("Relu", [ts("float", [2])], {"alpha": 0.5}, "has no attribute 'alpha'"),
    ("Transpose", [ts("float", [2, 3])], {"perm": 1}, "attribute 'perm' must be ints, the node gives int"),
    ("Concat", [ts("float", [2])], {}, "required attribute 'axis' is missing"),
    ("Relu", [ts("float", [2]), ts("float", [2])], {}, "takes 1 inputs, the node has 2"),
])
def test_attributes_and_arity(op, inputs, attrs, text):
    res = infer_node(op, inputs, attrs, opset=18)
    assert res.consistent is False and text in res.conflicts[0].explain()
    assert res.shape("y0") is None


def test_output_element_type_follows_the_schema():
    """Shape's output is int64 and Add's is its input's type, whatever the rule says."""
    res = infer_node("Shape", [ts("float", ["N", 3])], opset=18)
    assert res.dtype("y0") == onnx.TensorProto.INT64
    res = infer_node("Add", [ts("float16", ["N"]), np.zeros(1, np.float16)], opset=14)
    assert res.dtype("y0") == onnx.TensorProto.FLOAT16


def _declared(out_type):
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("a", TP.FLOAT, [2]),
                           helper.make_tensor_value_info("b", TP.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", out_type, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_declared_element_type_that_contradicts_is_an_annotation_conflict():
    m = _declared(TP.INT64)
    for policy in ("refine", "strict"):
        res = smtshape.analyze(m, policy=policy)
        assert res.consistent is False, policy
        (c,) = res.conflicts
        assert "'y' is declared tensor(int64) but Add's type rules give it tensor(float)" in c.explain()
        assert "value_info" in suggest_fix(c)
    res = smtshape.analyze(m, policy="skip")
    assert res.consistent is True and any("declared tensor(int64)" in d.message for d in res.diagnostics)
    assert smtshape.analyze(_declared(TP.FLOAT)).consistent is True


def test_valid_models_stay_consistent():
    """The schema check on every ONNX backend node test model: no conflict (the node
    suite's own models are valid)."""
    from onnx.backend.test.loader import load_model_tests  # noqa: F401
    from onnx.backend.test.case.node import collect_testcases
    bad = []
    for tc in collect_testcases(None):
        if tc.model is None:
            continue
        res = smtshape.analyze(tc.model)
        if any(k.provenance.rule.startswith("schema.") for c in res.conflicts for k in c.constraints):
            bad.append((tc.name, res.conflicts[0].explain().splitlines()[0]))
    assert bad == []


# ---------------------------------------------------------------- initializers and calls

def _range_model(delta, ir=8, declared=None):
    inputs = [declared] if declared is not None else []
    g = helper.make_graph([helper.make_node("Range", ["start", "limit", "delta"], ["output"], name="r")], "g", inputs,
                          [helper.make_tensor_value_info("output", TP.FLOAT, [None])],
                          initializer=[helper.make_tensor("start", TP.FLOAT, (), (1,)),
                                       helper.make_tensor("limit", TP.FLOAT, (), (5,)), delta])
    return helper.make_model(g, ir_version=ir, opset_imports=[helper.make_opsetid("", 18)])


def _tensor(**fields):
    t = onnx.TensorProto()
    t.name = "delta"
    t.data_type = fields.pop("data_type", TP.FLOAT)
    for k, v in fields.items():
        if k == "raw_data":
            t.raw_data = v
        else:
            getattr(t, k).extend(v)
    return t


@pytest.mark.parametrize("tensor,text", [
    (_tensor(data_type=TP.UNDEFINED, float_data=[1.0]), "element type UNDEFINED"),
    (_tensor(int64_data=[2]), "stores its elements in 'int64_data' instead of 'float_data'"),
    (_tensor(), "one and only one field"),
])
def test_malformed_initializer_is_bad_input(tensor, text):
    """What onnx's checker refuses is bad input, named."""
    with pytest.raises(smtshape.BadInput, match=text):
        smtshape.analyze(_range_model(tensor))


@pytest.mark.parametrize("tensor", [_tensor(float_data=[1.0, 2.0]), _tensor(raw_data=b"\0" * 8)])
def test_initializer_holding_more_elements_than_its_dims_is_a_conflict(tensor):
    """onnx's checker lets it pass, onnxruntime refuses it: a conflict naming the initializer."""
    m = _range_model(tensor)
    onnx.checker.check_model(m)
    res = smtshape.analyze(m)
    assert rules_of(res) == ["initializer.size"]
    assert "initializer 'delta' is invalid: tensor 'delta' has dims [] (1 elements) but holds 2" in \
        res.conflicts[0].explain()
    assert smtshape.analyze(_range_model(_tensor(raw_data=b"\0\0\x80\x3f"))).consistent is True


@pytest.mark.parametrize("ir", [3, 8])
def test_initializer_that_contradicts_its_input_declaration_is_a_conflict(ir):
    declared = helper.make_tensor_value_info("delta", TP.FLOAT, [2])
    res = smtshape.analyze(_range_model(_tensor(float_data=[1.0]), ir=ir, declared=declared))
    assert rules_of(res)[0] == "initializer.declared"     # (IR >= 4: Range then reads a [2] input too)
    assert "graph input 'delta' is declared [2] but its initializer has shape []" in res.conflicts[0].explain()
    declared = helper.make_tensor_value_info("delta", TP.INT64, [])
    res = smtshape.analyze(_range_model(_tensor(float_data=[1.0]), ir=ir, declared=declared))
    assert "declared INT64 but its initializer is FLOAT" in res.conflicts[0].explain()


@pytest.mark.parametrize("text,why", [
    ("""<ir_version: 8, opset_import: [ "" : 18, "local" : 1 ]>
        agraph (float[1] X) => (float[1] Y) { Y = local.F (X) }
        <opset_import: [ "" : 18 ], domain: "local">
        F (x) => (y1, y2) { y1 = Identity(x) y2 = Identity(x) }""", "names 1 outputs of function 'F', which has 2"),
    ("""<ir_version: 8, opset_import: [ "" : 18, "local" : 1 ]>
        agraph (float[1] X) => (float[1] Y) { Y = local.F (X, X) }
        <opset_import: [ "" : 18 ], domain: "local">
        F (x) => (y1) { y1 = Identity(x) }""", "gives 2 inputs to function 'F', which takes 1"),
])
def test_function_call_arity(text, why):
    """onnxruntime refuses both models (its inliner: 'Number of actual parameters cannot exceed
    number of formal parameters'; 'output index 1 is out of range')."""
    res = smtshape.analyze(onnx.parser.parse_model(text))
    assert rules_of(res) == ["function.arity"] and why in res.conflicts[0].explain()


def test_an_op_with_no_rule_breaking_its_schema_is_a_conflict_and_unchecked():
    """An op smtshape has no rule for (here a schema registered at run time, as ONNX's own
    test does): ONNX's inference of the node is asked; its refusal is a conflict."""
    schema = onnx.defs.OpSchema("SmtCustomOp", "", 1, inputs=[], outputs=[])
    onnx.defs.register_schema(schema)
    try:
        m = onnx.parser.parse_model("""<ir_version: 7, opset_import: ["" : 1]>
            agraph (float[2] X, float[2] Y) => (float[2] Z) { Z = SmtCustomOp(X, Y) }""")
        res = smtshape.analyze(m)
    finally:
        onnx.defs.deregister_schema("SmtCustomOp", 1, "")
    assert rules_of(res) == ["onnx.schema"] and "takes 0 to 0 inputs" in res.conflicts[0].explain()
    assert [u.op_type for u in res.unchecked_nodes] == ["SmtCustomOp"]


def _reshape_with_default(ir, declared):
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, [2, 6]),
                           helper.make_tensor_value_info("s", TP.INT64, declared)],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          initializer=[onnx.numpy_helper.from_array(np.array([3, 4], np.int64), "s")])
    return helper.make_model(g, ir_version=ir, opset_imports=[helper.make_opsetid("", 14)])


def test_an_initializer_that_is_also_an_input_is_a_default_the_caller_may_override():
    """IR >= 4: onnxruntime lets a caller feed 's' (here [12], changing y's shape); its shape
    comes from the declaration, its value is used only as a premise, listed."""
    from smtshape.testing import run_onnxruntime
    m = _reshape_with_default(8, ["K"])
    x = np.zeros((2, 6), np.float32)
    assert run_onnxruntime(m, {"x": x, "s": np.array([12], np.int64)})[0].shape == (12,)
    res = smtshape.analyze(m)
    assert res.shape("y") is None or all(d.exactness.name != "EXACT" for d in res.shape("y"))
    # the declaration pins the default's shape: its value is used, as a premise the result lists
    res = smtshape.analyze(_reshape_with_default(8, [2]))
    assert [d.expr for d in res.shape("y")] == [3, 4]
    assert any(d.kind == "assumption" and "graph input 's' has a default" in d.message for d in res.diagnostics)
    # IR < 4: onnxruntime treats it as a constant (it refuses to feed 's'): a fact, no premise
    res = smtshape.analyze(_reshape_with_default(3, [2]))
    assert [d.expr for d in res.shape("y")] == [3, 4]
    assert not any("has a default" in d.message for d in res.diagnostics)


def test_an_op_with_no_rule_is_checked_against_its_schema_arity_even_untyped():
    """ONNX's own test: a schema registered at run time with no inputs, a node with two
    untyped inputs: its arity is refused before any type is known."""
    schema = onnx.defs.OpSchema("SmtEmptyIo", "", 1, inputs=[], outputs=[])
    onnx.defs.register_schema(schema)
    try:
        res = smtshape.analyze(onnx.parser.parse_model(
            """<ir_version: 7, opset_import: ["" : 1]> agraph (X, Y) => (Z) { Z = SmtEmptyIo(X, Y) }"""))
    finally:
        onnx.defs.deregister_schema("SmtEmptyIo", 1, "")
    # (X and Y have no element type: onnxruntime refuses to load such inputs, a conflict each)
    assert rules_of(res) == ["input.type", "input.type", "onnx.schema"]
    assert "takes 0 to 0 inputs" in res.conflicts[-1].explain()
    assert "graph input 'X' is invalid: graph input 'X' has no element type" in res.conflicts[0].explain()
