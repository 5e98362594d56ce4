"""CLI files and plug-ins: -o with external data (loads and runs in onnxruntime from
another folder, input untouched), --save-as-external-data options, --rules MODULE and
the smtshape.rules entry-point group."""
import hashlib
import os
import textwrap

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from smtshape import registry
from smtshape.cli import main

V = helper.make_tensor_value_info


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def mlp_model():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 512)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((512, 8)).astype(np.float32), "W2")
    b = numpy_helper.from_array(np.arange(8, dtype=np.float32), "b")       # small: stays inline
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
                           helper.make_node("Relu", ["h"], ["r"], name="relu"),
                           helper.make_node("MatMul", ["r", "W2"], ["m"], name="mm2"),
                           helper.make_node("Add", ["m", "b"], ["y"], name="add")], "g",
                          [V("x", TP.FLOAT, ["batch", 64])], [V("y", TP.FLOAT, None)], [w1, w2, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def digest(folder):
    return {f: hashlib.sha256((folder / f).read_bytes()).hexdigest() for f in sorted(os.listdir(folder))}


def ort_run(path, x):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def test_external_data_output_in_another_folder_runs_and_input_is_untouched(tmp_path, capsys):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir(), dst.mkdir()
    onnx.save(mlp_model(), str(src / "m.onnx"), save_as_external_data=True, location="weights.bin",
              size_threshold=1024)
    before = digest(src)
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    want = ort_run(src / "m.onnx", x)
    code, _, err = run(capsys, "infer", src / "m.onnx", "-o", dst / "out.onnx", "--findings")
    assert code == 0 and err.startswith(f"smtshape: wrote {dst / 'out.onnx'}: ")
    assert digest(src) == before                              # byte-for-byte
    assert sorted(os.listdir(dst)) == ["out.onnx", "out.onnx.data"]
    np.testing.assert_array_equal(ort_run(dst / "out.onnx", x), want)
    onnx.checker.check_model(str(dst / "out.onnx"))
    m = onnx.load(str(dst / "out.onnx"), load_external_data=False)
    locs = {t.name: {e.key: e.value for e in t.external_data}.get("location") for t in m.graph.initializer}
    assert locs == {"W1": "out.onnx.data", "W2": "out.onnx.data", "b": None}
    vi = {v.name: v for v in m.graph.value_info}
    assert [d.dim_param or d.dim_value for d in vi["h"].type.tensor_type.shape.dim] == ["batch", 512]
    # moved elsewhere together, it still loads (locations are relative)
    os.rename(dst, tmp_path / "moved")
    np.testing.assert_array_equal(ort_run(tmp_path / "moved" / "out.onnx", x), want)


def test_save_as_external_data_options(tmp_path, capsys):
    onnx.save(mlp_model(), str(tmp_path / "inline.onnx"))
    x = np.ones((2, 64), np.float32)
    want = ort_run(tmp_path / "inline.onnx", x)
    out = tmp_path / "o" / "a.onnx"
    out.parent.mkdir()
    code, _, err = run(capsys, "infer", tmp_path / "inline.onnx", "-o", out, "--findings",
                       "--save-as-external-data", "--external-data-location", "w.dat",
                       "--external-data-size-threshold", "0")
    assert code == 0, err
    assert sorted(os.listdir(out.parent)) == ["a.onnx", "w.dat"]
    m = onnx.load(str(out), load_external_data=False)
    assert all(t.data_location == TP.EXTERNAL for t in m.graph.initializer)
    np.testing.assert_array_equal(ort_run(out, x), want)
    code, _, err = run(capsys, "infer", tmp_path / "inline.onnx", "--save-as-external-data")
    assert code == 2 and "need -o" in err
    code, _, err = run(capsys, "infer", tmp_path / "inline.onnx", "-o", out, "--save-as-external-data",
                       "--external-data-location", "../escape.bin")
    assert code == 2 and "relative to OUT's folder" in err


def test_never_overwrites_the_input_data_file(tmp_path, capsys):
    onnx.save(mlp_model(), str(tmp_path / "m.onnx"), save_as_external_data=True, location="m2.onnx.data")
    before = digest(tmp_path)
    code, out, err = run(capsys, "infer", tmp_path / "m.onnx", "-o", tmp_path / "m2.onnx")
    assert code == 2 and "belongs to the input model" in err
    assert digest(tmp_path) == before


FROB = """
import smtshape
{decl}

@{reg}("com.example", "{op}", since_version=1)
def frob(ctx):
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0))
"""


def frob_model(tmp_path, op):
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="f", domain="com.example")], "g",
                          [V("x", TP.FLOAT, ["n", 3])], [V("y", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)],
                          ir_version=8)
    p = tmp_path / f"{op}.onnx"
    onnx.save(m, str(p))
    return p


def test_rules_module_with_a_registry_object(tmp_path, capsys, monkeypatch):
    p = frob_model(tmp_path, "FrobA")
    code, out, _ = run(capsys, "infer", p, "--findings")
    assert "1 node not checked" in out
    (tmp_path / "my_rules_a.py").write_text(FROB.format(decl="rules = smtshape.Registry()",
                                                        reg="rules.register", op="FrobA"))
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(capsys, "infer", p, "--rules", "my_rules_a", "--filter", "y")
    assert code == 0 and "0 nodes not checked" in out
    assert [line for line in out.splitlines() if line.startswith("y ")][0].split()[2:4] == ["(n,", "3)"]
    code, out, _ = run(capsys, "infer", p, "--rules", str(tmp_path / "my_rules_a.py"), "--findings")
    assert "0 nodes not checked" in out
    code, out, _ = run(capsys, "infer", p, "--findings")          # scoped: not left behind
    assert "1 node not checked" in out


def test_rules_module_registering_with_smtshape_register(tmp_path, capsys):
    p = frob_model(tmp_path, "FrobB")
    f = tmp_path / "rules_b.py"
    f.write_text(FROB.format(decl="", reg="smtshape.register", op="FrobB"))
    try:
        code, out, _ = run(capsys, "infer", p, "--rules", f, "--findings")
        assert code == 0 and "0 nodes not checked" in out
    finally:
        registry.DEFAULT.unregister("com.example", "FrobB")


def test_rules_errors_are_bad_input(tmp_path, capsys):
    p = frob_model(tmp_path, "FrobC")
    code, _, err = run(capsys, "infer", p, "--rules", "no_such_module_xyz")
    assert code == 2 and "cannot import" in err
    (tmp_path / "broken.py").write_text("raise ValueError('oops')\n")
    code, _, err = run(capsys, "infer", p, "--rules", tmp_path / "broken.py")
    assert code == 2 and "oops" in err


def test_entry_point_group_is_loaded(tmp_path, capsys, monkeypatch):
    p = frob_model(tmp_path, "FrobD")
    (tmp_path / "frob_plugin.py").write_text(FROB.format(decl="RULES = smtshape.Registry()",
                                                         reg="RULES.register", op="FrobD"))
    dist = tmp_path / "frob_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: frob-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""
        [smtshape.rules]
        frob = frob_plugin
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(capsys, "infer", p, "--findings")
    assert code == 0 and "0 nodes not checked" in out


def test_distributions_are_scanned_only_where_one_may_declare_rules(tmp_path, monkeypatch):
    """importlib.metadata runs only when a metadata folder on sys.path names the group, or
    when it would look where the quick look does not (a zip on sys.path)."""
    from smtshape.cli import _may_declare_rules
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    monkeypatch.setattr("sys.path", [str(tmp_path), str(tmp_path / "missing")])
    assert not _may_declare_rules()
    (tmp_path / "plug-1.0.egg-info").mkdir()
    (tmp_path / "plug-1.0.egg-info" / "entry_points.txt").write_text("[smtshape.rules]\nplug = plug\n")
    assert _may_declare_rules()
    (tmp_path / "lib.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setattr("sys.path", [str(tmp_path / "missing"), str(tmp_path / "lib.zip")])
    assert _may_declare_rules()


def test_save_of_an_onnx_ir_model_with_external_data(tmp_path, monkeypatch):
    import onnx_ir as ir
    import smtshape
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir(), dst.mkdir()
    onnx.save(mlp_model(), str(src / "m.onnx"), save_as_external_data=True, location="w.bin")
    monkeypatch.chdir(dst)                     # neither the model's folder nor the output's
    res = smtshape.analyze(ir.load(str(src / "m.onnx")))
    res.save(str(dst / "o.onnx"))
    x = np.ones((2, 64), np.float32)
    np.testing.assert_array_equal(ort_run(dst / "o.onnx", x), ort_run(src / "m.onnx", x))
