"""The JSON output: one document on stdout that validates against the packaged
schema (smtshape/schema/result-v1.json) on every corpus model, with SMT-LIB in
a file that z3 finds satisfiable; conflicts and specializations structured."""
import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import z3
from onnx import TensorProto as TP
from onnx import helper

import smtshape
from smtshape.cli import main

REPO = Path(smtshape.__file__).resolve().parent.parent
CORPUS = sorted((REPO.parent / "shared" / "corpus").glob("*.onnx"))
SCHEMA = json.loads(files("smtshape").joinpath("schema/result-v1.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
V = helper.make_tensor_value_info


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def validate(doc):
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_schema_is_a_valid_json_schema_and_shipped_as_package_data():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema"]["const"] == "smtshape.result/1"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "schema/*.json" in pyproject


def test_corpus_is_there():
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_json_and_smtlib_on_corpus(path, tmp_path, capsys):
    smt = tmp_path / "c.smt2"
    code, out, err = run(capsys, "infer", path, "--json", "--smtlib", smt)
    assert code == 0, err
    doc = json.loads(out)                     # exactly one JSON document on stdout
    validate(doc)
    assert doc["schema"] == "smtshape.result/1"
    n = sum(len(v["shape"]) for v in doc["values"].values() if v["shape"] is not None)
    dims = doc["summary"]["dims"]
    assert dims["exact"] + dims["upper_bound"] + dims["unknown"] == n
    assert dims["static"] + dims["symbolic"] == dims["exact"]
    ids = {c["id"] for c in doc["constraints"]}
    for s in doc["specializations"]:
        assert set(s["constraint_ids"]) <= ids | {c["id"] for c in doc["undecided"]} or not s["constraint_ids"]
    text = smt.read_text()
    s = z3.Solver()
    s.add(z3.parse_smt2_string(text))
    if doc["consistent"] is True:
        assert s.check() == z3.sat
    elif doc["consistent"] is False:
        assert doc["conflicts"]


def _model(tmp_path, nodes, inputs, name="m.onnx"):
    import onnx
    g = helper.make_graph(nodes, "g", inputs, [V(nodes[-1].output[0], TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    p = tmp_path / name
    onnx.save(m, str(p))
    return p


def test_conflict_is_a_structured_object(tmp_path, capsys):
    p = _model(tmp_path, [helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=0)],
               [V("a", TP.FLOAT, ["n", 3]), V("b", TP.FLOAT, ["m", 4])])
    code, out, _ = run(capsys, "check", p, "--json")
    assert code == 1
    doc = json.loads(out)
    validate(doc)
    assert doc["consistent"] is False and doc["check"] == "conflict"
    (c,) = doc["conflicts"]
    assert c["nodes"] == ["cat"]
    assert c["relation"] == "3 == 4" and "cannot hold" in c["explanation"]
    ids = {k["id"] for k in doc["constraints"]}
    assert c["constraint_ids"] and set(c["constraint_ids"]) <= ids
    assert all(k["op_type"] == "Concat" and k["node"] == "cat" for k in c["constraints"])
    assert "'cat' (Concat)" in c["suggested_fix"]


def test_specialization_and_assumptions_are_structured(tmp_path, capsys):
    import numpy as np
    import onnx
    from onnx import numpy_helper
    w = numpy_helper.from_array(np.zeros((1024, 8), np.float32), "W")
    g = helper.make_graph([helper.make_node("Concat", ["p", "q"], ["c"], name="cat", axis=1),
                           helper.make_node("MatMul", ["c", "W"], ["y"], name="mm")], "g",
                          [V("p", TP.FLOAT, ["batch", "a"]), V("q", TP.FLOAT, ["batch", 1000])],
                          [V("y", TP.FLOAT, None)], [w])
    p = tmp_path / "ab.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), str(p))
    code, out, _ = run(capsys, "infer", p, "--json", "--bind", "p:0=2", "--assume", "a >= 1",
                       "--inputs-positive")
    doc = json.loads(out)
    validate(doc)
    spec = [s for s in doc["specializations"] if s["symbol"] == "a"]
    assert len(spec) == 1 and spec[0]["value"] == 24 and "mm" in spec[0]["nodes"]
    assert spec[0]["relation"] == "a == 24" and spec[0]["constraint_ids"]
    kinds = sorted(a["kind"] for a in doc["assumptions"])
    assert kinds == ["assume", "bind", "domain"]
    batch = [d for d in doc["input_dims"] if d["symbol"] == "batch"][0]
    assert batch["bound_to"] == 2 and {"input": "p", "axis": 0} in batch["axes"]
    assert doc["values"]["y"]["shape"][0] == {"expr": "2", "exactness": "exact", "value": 2}


def test_smtlib_dash_only_when_nothing_else_is_on_stdout(tmp_path, capsys):
    p = _model(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", TP.FLOAT, ["n"])])
    code, out, err = run(capsys, "infer", p, "--json", "--smtlib", "-")
    assert code == 2 and "--smtlib -" in err
    assert "--smtlib -" in json.loads(out)["error"]["message"]      # with --json, the error as JSON only
    code, out, err = run(capsys, "query", p, "y[0] == n", "--smtlib", "-")
    assert code == 2 and out == ""
    code, out, err = run(capsys, "infer", p, "--smtlib", "-")
    assert code == 0
    s = z3.Solver()
    s.add(z3.parse_smt2_string(out))         # stdout is SMT-LIB only
    assert s.check() == z3.sat
    assert "value" not in out and "consistent" not in out
