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
from smtshape.report import explain_conflict, suggest_fix
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
