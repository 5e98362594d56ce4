"""The command line: smtshape infer / check / query, run in-process through
``smtshape.cli.main(argv)`` (plus one subprocess run of ``python -m smtshape``)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import z3
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape
from smtshape import expr as E
from smtshape.cli import main
from smtshape.query import rewrite_value_dims
from smtshape.parse import parse_expr

REPO = Path(smtshape.__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints"
V = helper.make_tensor_value_info


def make_model(nodes, inputs, outputs, inits=(), value_info=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def save(model, path) -> str:
    onnx.save(model, str(path))
    return str(path)


def mlp(tmp_path, name="mlp.onnx") -> str:
    """x[batch, seq, 64] -> MatMul W[64, 32] -> h -> Relu -> y."""
    w = numpy_helper.from_array(np.zeros((64, 32), np.float32), "W")
    return save(make_model(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        [V("x", TP.FLOAT, ["batch", "seq", 64])], [V("y", TP.FLOAT, None)], [w]), tmp_path / name)


def concat_conflict(tmp_path) -> str:
    """Concat on axis 0 of a[n, 3] and b[m, 4]: the non-axis dims 3 and 4 disagree."""
    return save(make_model(
        [helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=0)],
        [V("a", TP.FLOAT, ["n", 3]), V("b", TP.FLOAT, ["m", 4])], [V("c", TP.FLOAT, None)]),
        tmp_path / "cat.onnx")


def concat_1024(tmp_path) -> str:
    """p[batch, a] ++ q[batch, b] on axis 1, then MatMul with W[1024, 8]: a + b == 1024."""
    w = numpy_helper.from_array(np.zeros((1024, 8), np.float32), "W")
    return save(make_model(
        [helper.make_node("Concat", ["p", "q"], ["c"], name="cat", axis=1),
         helper.make_node("MatMul", ["c", "W"], ["y"], name="mm")],
        [V("p", TP.FLOAT, ["batch", "a"]), V("q", TP.FLOAT, ["batch", "b"])],
        [V("y", TP.FLOAT, None)], [w]), tmp_path / "ab.onnx")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def row(out: str, name: str) -> str:
    """The table row of a value."""
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return line
    raise AssertionError(f"no row for {name!r} in:\n{out}")


# ------------------------------------------------------------------ infer

def test_infer_prints_a_table_with_every_value_and_sections(tmp_path, capsys):
    code, out, err = run(capsys, "infer", mlp(tmp_path))
    assert code == 0 and err == ""
    assert "(batch, seq, 64)" in row(out, "x") and "float" in row(out, "x")
    assert "(64, 32)" in row(out, "W")
    assert "(batch, seq, 32)" in row(out, "h")
    assert "(batch, seq, 32)" in row(out, "y") and "float" in row(out, "y")
    for header in ("conflicts: none", "specializations: none", "assumptions in force: none",
                   "annotation findings: none", "input dims:"):
        assert header in out
    assert "nodes not checked" in out
    assert "batch: axis 0 of graph input 'x'" in out


def test_infer_bind_and_assume_show_in_table(tmp_path, capsys):
    code, out, _ = run(capsys, "infer", mlp(tmp_path), "--bind", "batch=1", "--assume", "seq <= 4096",
                       "--inputs-positive")
    assert code == 0
    assert "(1, seq, 32)" in row(out, "y")
    section = out.split("assumptions in force:")[1]
    assert "bind: batch = 1" in section
    assert "seq <= 4096" in section
    assert "inputs_positive" in section


def test_infer_exits_0_even_with_a_conflict(tmp_path, capsys):
    code, out, _ = run(capsys, "infer", concat_conflict(tmp_path))
    assert code == 0
    conflicts = out.split("conflicts:")[1].split("specializations:")[0]
    assert "3 == 4" in conflicts and "'cat'" in conflicts


def test_infer_json(tmp_path, capsys):
    code, out, _ = run(capsys, "infer", mlp(tmp_path), "--json", "--bind", "batch=2")
    assert code == 0
    data = json.loads(out)
    assert data["consistent"] is True
    y = data["values"]["y"]
    assert y["dtype"] == "FLOAT"
    assert [d["expr"] for d in y["shape"]] == ["2", "seq", "32"]
    assert y["shape"][0]["value"] == 2 and y["shape"][2]["value"] == 32
    assert all(d["exactness"] == "exact" for d in y["shape"])
    assert any("batch is bound to 2" in c["message"] for c in data["constraints"])


def test_infer_writes_annotated_model(tmp_path, capsys):
    src = mlp(tmp_path)
    out_path = tmp_path / "out" / "annotated.onnx"
    out_path.parent.mkdir()
    # seq == 2 * batch makes the middle dim an expression, written as a dim_param
    code, _, err = run(capsys, "infer", src, "--assume", "seq == 2 * batch", "-o", out_path)
    assert code == 0 and err.startswith(f"smtshape: wrote {out_path}: ") and len(err.splitlines()) == 1
    assert sorted(os.listdir(out_path.parent)) == ["annotated.onnx"]     # no temp file left
    m = onnx.load(str(out_path))
    onnx.checker.check_model(m)
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    dims = vi["h"].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["batch", "2 * batch"]
    assert dims[2].dim_value == 32
    batch = E.symbol("batch")
    assert parse_expr(dims[0].dim_param) == batch
    assert parse_expr(dims[1].dim_param) == 2 * batch
    ydims = vi["y"].type.tensor_type.shape.dim
    assert [parse_expr(d.dim_param) if d.dim_param else d.dim_value for d in ydims] == [batch, 2 * batch, 32]


def test_output_onto_input_is_refused_and_input_untouched(tmp_path, capsys, monkeypatch):
    src = mlp(tmp_path)
    before = Path(src).read_bytes()
    for target in (src, os.path.join(str(tmp_path), ".", "mlp.onnx")):
        code, out, err = run(capsys, "infer", src, "-o", target)
        assert code == 2
        assert err.startswith("smtshape: error:") and len(err.splitlines()) == 1
        assert "input model" in err
        assert out == ""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "check", "mlp.onnx", "-o", src)
    assert code == 2 and err.startswith("smtshape: error:")
    assert Path(src).read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["mlp.onnx"]


def test_smtlib_file_is_parseable_by_z3(tmp_path, capsys):
    smt = tmp_path / "c.smt2"
    code, _, _ = run(capsys, "infer", concat_1024(tmp_path), "--smtlib", smt, "--assume", "a <= 1000")
    assert code == 0
    s = z3.Solver()
    s.add(z3.parse_smt2_string(smt.read_text()))
    assert s.check() == z3.sat
    a, b = z3.Ints("d.a d.b")         # (every symbol is |d.<name>|)
    s.add(a + b != 1024)
    assert s.check() == z3.unsat       # the MatMul inner-dim constraint is in the export


# ------------------------------------------------------------------ check

def test_check_consistent_exits_0(tmp_path, capsys):
    code, out, err = run(capsys, "check", mlp(tmp_path))
    assert code == 0 and err == ""
    assert "consistent" in out and "conflict" not in out


def test_check_concat_conflict_names_node_and_both_values(tmp_path, capsys):
    code, out, err = run(capsys, "check", concat_conflict(tmp_path))
    assert code == 1 and err == ""
    assert "1 conflict" in out
    assert "3 == 4" in out and "cannot hold" in out
    assert "Concat node 'cat'" in out
    assert "'a' (n, 3)" in out and "'b' (m, 4)" in out       # both values with their shapes
    fix = [line for line in out.splitlines() if "fix:" in line]
    assert len(fix) == 1 and "'cat' (Concat)" in fix[0]


def test_check_assumption_conflict_suggests_removing_it(tmp_path, capsys):
    code, out, _ = run(capsys, "check", mlp(tmp_path), "--assume", "batch == 2", "--bind", "batch=3")
    assert code == 1
    assert "batch == 2" in out and "batch == 3" in out
    fix = [line for line in out.splitlines() if "fix:" in line][0]
    assert "remove the assumption 'batch == 2'" in fix
    assert "--bind batch=3" in fix


def test_check_specialization_is_a_warning_not_a_failure(tmp_path, capsys):
    code, out, err = run(capsys, "check", concat_1024(tmp_path))
    assert code == 0 and "warning" not in out               # warnings go to stderr
    warn = [line for line in err.splitlines() if line.startswith("warning: specialization")]
    assert warn and all("1024" in w and "'mm'" in w for w in warn)


def test_check_policy_strict_turns_a_bad_annotation_into_a_conflict(tmp_path, capsys):
    path = save(make_model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                           [V("x", TP.FLOAT, ["batch", "seq"])], [V("y", TP.FLOAT, ["batch", 196])]),
                tmp_path / "ann.onnx")
    code, out, err = run(capsys, "check", path)
    assert code == 0 and "annotation" in err and "annotation" not in out   # refine: a warning, on stderr
    code, out, _ = run(capsys, "check", path, "--policy", "strict")
    assert code == 1 and "196" in out and "--policy skip" in out
    code, out, err = run(capsys, "check", path, "--policy", "skip")
    assert code == 0 and "annotation" not in out + err
    code, out, _ = run(capsys, "infer", path, "--policy", "override")
    assert code == 0 and "(batch, 196)" in row(out, "y")
    assert "seq == 196" in out.split("specializations:")[1]


# ------------------------------------------------------------------ query

def test_query_verdicts_and_exit_codes(tmp_path, capsys):
    path = mlp(tmp_path)
    code, out, _ = run(capsys, "query", path, "x[0] == y[0]")
    assert code == 0 and out.startswith("PROVEN")
    code, out, _ = run(capsys, "query", path, "y[2] == 31")
    assert code == 1 and out.startswith("REFUTED")
    code, out, _ = run(capsys, "query", path, "x[1] == y[2]")
    assert code == 6 and out.startswith("CONTINGENT") and "holds at" in out and "fails at" in out
    code, out, _ = run(capsys, "query", path, "h[-1] * 2 == x[2] and y[1] == seq")
    assert code == 0 and out.startswith("PROVEN")
    code, out, _ = run(capsys, "query", path, "batch == 1", "--bind", "batch=1")
    assert code == 0
    code, out, _ = run(capsys, "query", path, "y[0] >= 1")
    assert code == 6
    code, out, _ = run(capsys, "query", path, "y[0] >= 1", "--inputs-positive")
    assert code == 0


def test_query_concat_sum(tmp_path, capsys):
    path = concat_1024(tmp_path)
    code, out, _ = run(capsys, "query", path, "a + b == 1024")
    assert code == 0 and out.startswith("PROVEN")
    code, out, _ = run(capsys, "query", path, "c[1] == 1024")
    assert code == 0
    code, out, _ = run(capsys, "query", path, "a == 512")
    assert code == 6
    code, out, _ = run(capsys, "query", path, "a + b == 1000")
    assert code == 1
    code, out, _ = run(capsys, "query", path, "a == 512", "--json")
    data = json.loads(out)
    assert code == 6 and data["verdict"] == "CONTINGENT" and data["holds"]["a"] == 512 and data["fails"]["a"] != 512


def test_query_value_names_with_odd_characters(tmp_path, capsys):
    path = save(make_model(
        [helper.make_node("Relu", ["/enc/x.0:in"], ["/enc/layer.0/act:0"], name="/enc/act"),
         helper.make_node("Relu", ["/enc/layer.0/act:0"], ["act:0"], name="act2")],
        [V("/enc/x.0:in", TP.FLOAT, ["batch", "seq"])], [V("act:0", TP.FLOAT, None)]), tmp_path / "odd.onnx")
    code, out, _ = run(capsys, "query", path, "/enc/layer.0/act:0[1] == seq")
    assert code == 0, out
    assert "/enc/layer.0/act:0[1] = seq" in out
    code, _, _ = run(capsys, "query", path, '"/enc/x.0:in"[0] == "act:0" [0]')
    assert code == 0
    code, _, _ = run(capsys, "query", path, "act:0[0]==/enc/layer.0/act:0[1]")
    assert code == 6     # CONTINGENT


def test_rewrite_value_dims_longest_first():
    text, refs = rewrite_value_dims('a/b[0] + b[1] == "b"[2] + "past seq"', ["b", "a/b"])
    assert refs == {"_smtq_v0": ("a/b", 0), "_smtq_v1": ("b", 1), "_smtq_v2": ("b", 2)}
    assert text == '_smtq_v0 + _smtq_v1 == _smtq_v2 + "past seq"'


# ------------------------------------------------------------------ constraint files

def test_constraints_transformer_file(tmp_path, capsys):
    path = mlp(tmp_path)
    cfile = CONSTRAINTS / "transformer.constraints"
    code, _, _ = run(capsys, "query", path, "seq % 8 == 0")
    assert code == 6     # CONTINGENT
    code, out, _ = run(capsys, "query", path, "seq % 8 == 0", "--constraints", cfile)
    assert code == 0
    code, _, _ = run(capsys, "query", path, "y[1] <= 4096 and y[0] >= 1", "--constraints", cfile)
    assert code == 0
    code, _, _ = run(capsys, "query", path, "y[1] == 4100", "--constraints", cfile)
    assert code == 1
    code, out, _ = run(capsys, "infer", path, "--constraints", cfile)
    assert code == 0
    assert "transformer.constraints:13" in out.split("assumptions in force:")[1]


def test_constraints_vision_file(tmp_path, capsys):
    path = save(make_model([helper.make_node("Relu", ["img"], ["y"], name="act")],
                           [V("img", TP.FLOAT, ["batch", 3, "height", "width"])], [V("y", TP.FLOAT, None)]),
                tmp_path / "vision.onnx")
    cfile = CONSTRAINTS / "vision.constraints"
    code, out, _ = run(capsys, "infer", path, "--constraints", cfile)
    assert code == 0
    assert "(1, 3, height, height)" in row(out, "y")
    code, _, _ = run(capsys, "query", path, "y[2] == y[3] and height % 32 == 0", "--constraints", cfile)
    assert code == 0
    code, _, _ = run(capsys, "check", path, "--constraints", cfile, "--bind", "height=100")
    assert code == 1                       # 100 is not a multiple of 32


# ------------------------------------------------------------------ entry points

def test_version_and_help(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"smtshape {smtshape.__version__}"
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "infer" in out and "check" in out and "query" in out


def test_python_dash_m_entry_point(tmp_path):
    path = concat_conflict(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "smtshape", "check", path], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "Concat node 'cat'" in p.stdout and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "smtshape", "infer", str(tmp_path / "nope.onnx")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert p.stderr.startswith("smtshape: error:") and len(p.stderr.splitlines()) == 1


def test_upper_bound_and_unknown_dims(tmp_path, capsys):
    """NonZero's count is only bounded (n<=bound); a Reshape to a runtime shape is UNKNOWN (?name)."""
    path = save(make_model(
        [helper.make_node("NonZero", ["x"], ["nz"], name="nzn"),
         helper.make_node("Reshape", ["x", "s"], ["r"], name="rs")],
        [V("x", TP.FLOAT, ["n", 4]), V("s", TP.INT64, [2])],
        [V("nz", TP.INT64, None), V("r", TP.FLOAT, None)]), tmp_path / "dyn.onnx")
    code, out, _ = run(capsys, "infer", path)
    assert code == 0
    nz = row(out, "nz").split()[2:4]
    assert nz[0] == "(2," and nz[1].endswith("<=4")        # "(2, nonzero_n<=4 * n)"
    assert "<=4 * n)" in row(out, "nz")
    r = row(out, "r")
    assert r.count("?") == 2 and "(?" in r
    code, out, _ = run(capsys, "infer", path, "--json")
    data = json.loads(out)
    d = data["values"]["nz"]["shape"][1]
    assert d["exactness"] == "upper_bound" and d["bound"] == "4 * n"
    assert [x["exactness"] for x in data["values"]["r"]["shape"]] == ["unknown", "unknown"]
    # the element count is preserved even though each dim is unknown
    code, out, _ = run(capsys, "query", path, "r[0] * r[1] == 4 * n")
    assert code == 0, out
    code, _, _ = run(capsys, "query", path, "nz[1] <= x[0] * x[1]")
    assert code == 0
    code, _, _ = run(capsys, "query", path, "nz[1] == x[0]")
    assert code == 6     # CONTINGENT
    # -o writes neither a value nor a name for dims that are not exact
    out_path = tmp_path / "dyn_out.onnx"
    code, _, _ = run(capsys, "infer", path, "-o", out_path)
    assert code == 0
    m = onnx.load(str(out_path))
    onnx.checker.check_model(m)
    nzdims = {v.name: v for v in m.graph.output}["nz"].type.tensor_type.shape.dim
    assert nzdims[0].dim_value == 2
    assert not nzdims[1].HasField("dim_value") and not nzdims[1].HasField("dim_param")


def test_internal_error_and_interrupt_have_no_traceback(tmp_path, capsys, monkeypatch):
    path = mlp(tmp_path)

    def boom(*a, **k):
        raise RuntimeError("a bug")
    monkeypatch.setattr(smtshape.api, "analyze", boom)
    code, out, err = run(capsys, "infer", path)
    assert code == 3 and out == ""
    assert err.startswith("smtshape: internal error: RuntimeError: a bug") and "report" in err
    assert len(err.splitlines()) == 1

    def interrupt(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(smtshape.api, "analyze", interrupt)
    code, _, err = run(capsys, "check", path)
    assert code == 130 and "interrupted" in err
