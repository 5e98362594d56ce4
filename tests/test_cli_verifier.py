"""Verifier mode: --bind INPUT:AXIS=N and --static (exit 5 naming what blocks each dim)."""
import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

import smtshape
from smtshape.cli import EXIT_NOT_STATIC, main

SHARED = Path(smtshape.__file__).resolve().parent.parent.parent / "shared"
V = helper.make_tensor_value_info


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def dynamic_axes(path):
    m = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    out = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        for ax, d in enumerate(v.type.tensor_type.shape.dim):
            if not d.HasField("dim_value"):
                out.append((v.name, ax))
    return out


VNN = [p for p in sorted((SHARED / "vnncomp").glob("*.onnx")) if dynamic_axes(p)]


def test_vnncomp_has_models_with_a_dynamic_batch():
    assert len(VNN) >= 10
    assert all(ax == 0 for p in VNN for _, ax in dynamic_axes(p))


@pytest.mark.parametrize("path", VNN, ids=[p.stem[:40] for p in VNN])
def test_vnncomp_batch_bound_by_input_and_axis_is_static(path, capsys):
    axes = dynamic_axes(path)
    code, out, _ = run(capsys, "infer", path, "--static", "--json")
    doc = json.loads(out)
    if code == 0:       # static without a binding only when the model itself pins the batch
        assert {s["symbol"] for s in doc["specializations"] if s["value"] is not None} >= \
            {d["symbol"] for d in doc["input_dims"]}
    else:
        assert code == EXIT_NOT_STATIC and doc["static"]["static"] is False
        assert {s["symbol"] for s in doc["static"]["symbols"]} <= {d["symbol"] for d in doc["input_dims"]}
    argv = ["infer", path, "--static"]
    for name, ax in axes:
        argv += ["--bind", f"{name}:{ax}=1"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0, out[-2000:]
    doc = json.loads(out)
    assert doc["static"]["static"] is True and doc["static"]["not_static"] == 0
    for v in doc["values"].values():
        assert v["shape"] is not None and all("value" in d for d in v["shape"])
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "static check: every dim is static" in out


def test_transformer_with_seq_unbound_names_seq_and_its_input(capsys):
    path = SHARED / "corpus" / "bert_legacy.onnx"
    code, out, _ = run(capsys, "infer", path, "--bind", "input_ids:0=1", "--static", "--findings")
    assert code == EXIT_NOT_STATIC
    section = out.split("static check:")[1]
    blocked = section.split("blocked by:")[1].split("dims not static:")[0]
    assert blocked.strip().startswith("seq (input dim, axis 1 of graph input 'input_ids'")
    assert "batch" not in blocked
    code, out, _ = run(capsys, "check", path, "--bind", "input_ids:0=1", "--static", "--json")
    assert code == EXIT_NOT_STATIC
    st = json.loads(out)["static"]
    (sym,) = st["symbols"]
    assert sym["symbol"] == "seq" and sym["input"] == "input_ids" and sym["axis"] == 1
    assert sym["kind"] == "input" and sym["dims"] == st["not_static"] > 0
    code, _, _ = run(capsys, "check", path, "--bind", "input_ids:0=1", "--bind", "seq=16", "--static")
    assert code == 0


def _model(tmp_path, nodes, inputs, out="y"):
    g = helper.make_graph(nodes, "g", inputs, [V(out, TP.FLOAT, None)])
    p = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), str(p))
    return p


def test_anonymous_dims_bind_by_axis_and_data_symbols_name_their_node(tmp_path, capsys):
    p = _model(tmp_path, [helper.make_node("NonZero", ["x"], ["nz"], name="nzn"),
                          helper.make_node("Cast", ["nz"], ["y"], name="cast", to=TP.FLOAT)],
               [V("x", TP.FLOAT, [None, 4])])
    code, out, _ = run(capsys, "infer", p, "--json")
    gen = [d for d in json.loads(out)["input_dims"] if d["generated"]]
    assert len(gen) == 1 and gen[0]["axes"] == [{"input": "x", "axis": 0}]
    code, out, _ = run(capsys, "infer", p, "--bind", "x:0=3", "--static", "--json")
    assert code == EXIT_NOT_STATIC
    st = json.loads(out)["static"]
    assert [s["kind"] for s in st["symbols"]] == ["data"]
    assert st["symbols"][0]["introduced_by"]["node"] == "nzn"
    assert {(d["value"], d["axis"]) for d in st["dims"]} == {("nz", 1), ("y", 1)}
    code, out, _ = run(capsys, "infer", p, "--bind", "x:-2=3", "--static")
    assert "NonZero node 'nzn'" in out.split("blocked by:")[1]


@pytest.mark.parametrize("bind,msg", [("nope:0=1", "no graph input named 'nope'"),
                                      ("x:2=1", "axis 2 is out of range"),
                                      ("x:1=5", "declared static with size 4"),
                                      ("x:0=-1", "non-negative"),
                                      ("x:a=1", "expected NAME=INT")])
def test_bad_axis_binds(tmp_path, capsys, bind, msg):
    p = _model(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", TP.FLOAT, ["n", 4])])
    code, out, err = run(capsys, "infer", p, "--bind", bind)
    assert code == 2 and out == "" and msg in err and len(err.splitlines()) == 1


def test_axis_bind_equals_name_bind(tmp_path, capsys):
    p = _model(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="r")], [V("x", TP.FLOAT, ["n", 4])])
    _, a, _ = run(capsys, "infer", p, "--bind", "x:0=7", "--json")
    _, b, _ = run(capsys, "infer", p, "--bind", "n=7", "--json")
    assert json.loads(a)["values"] == json.loads(b)["values"]
    assert json.loads(a)["values"]["y"]["shape"][0]["value"] == 7
    code, _, err = run(capsys, "infer", p, "--bind", "x:0=7", "--bind", "n=8")
    assert code == 2 and "already bound to 8" in err
