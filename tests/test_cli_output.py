"""``-o`` / ``Result.save`` (issue 21, defects 1-3): the written model never contradicts its
graph inputs, keeps what the model declared where the analysis could not verify it, and
names each dim in its canonical form."""
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

import smtshape
from smtshape.cli import main

REPO = Path(smtshape.__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
V = helper.make_tensor_value_info


def run_ort(model, feed):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"]).run(None, feed)


def same_outputs(a, b, feed):
    for x, y in zip(run_ort(a, feed), run_ort(b, feed)):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def text_feed(batch, seq):
    rng = np.random.default_rng(batch * 1000 + seq)
    return {"input_ids": rng.integers(3, 256, (batch, seq)).astype(np.int64),
            "attention_mask": np.ones((batch, seq), np.int64)}


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in vi.type.tensor_type.shape.dim]


def test_o_with_bind_writes_the_bound_value_into_the_graph_inputs(tmp_path, capsys):
    """Defect 1: the graph inputs said ``batch`` while value_info said 1; onnxruntime then
    failed at batch 2.  Now the inputs say 1 too: the model is consistent with itself, and
    onnxruntime refuses batch 2 at the door instead of crashing inside."""
    out = tmp_path / "g.onnx"
    code = main(["infer", str(CORPUS / "gpt2_legacy.onnx"), "--bind", "batch=1", "-o", str(out), "--findings"])
    assert code == 0
    m = onnx.load(str(out))
    assert [dims(i) for i in m.graph.input] == [[1, "seq"], [1, "seq"]]
    written = {vi.name: dims(vi) for vi in list(m.graph.value_info) + list(m.graph.output)}
    assert all(d[0] != "batch" for d in written.values() if d)       # no dim says batch anywhere
    onnx.checker.check_model(m, full_check=True)
    same_outputs(CORPUS / "gpt2_legacy.onnx", m, text_feed(1, 7))
    with pytest.raises(Exception, match="(?i)dimension|shape|Got invalid"):
        run_ort(m, text_feed(2, 7))
    assert "graph inputs written with the bound values (batch = 1)" in capsys.readouterr().err


def test_o_keeps_a_declared_shape_it_could_not_verify(tmp_path, capsys):
    """Defect 2: a custom op's output declared [batch, 16] was written with no shape."""
    g = helper.make_graph([helper.make_node("Frob", ["x"], ["y"], name="frob", domain="com.example"),
                           helper.make_node("Relu", ["y"], ["z"], name="act")], "g",
                          [V("x", TP.FLOAT, ["batch", 16])], [V("z", TP.FLOAT, None)],
                          value_info=[V("y", TP.FLOAT, ["batch", 16])])
    src = tmp_path / "custom.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                                  helper.make_opsetid("com.example", 1)]), str(src))
    res = smtshape.analyze(str(src), bind={"batch": 2})
    assert res.shape("y") is None                                     # no rule: rank unknown
    report = res.save(str(tmp_path / "out.onnx"))
    m = onnx.load(str(tmp_path / "out.onnx"))
    vi = {v.name: v for v in m.graph.value_info}
    assert dims(vi["y"]) == [2, 16]                     # kept, the bound dim written as its value
    assert [r.value for r in report.kept_declared] == ["y"]                # (HEAD: save returned None)
    code = main(["infer", str(src), "-o", str(tmp_path / "out2.onnx"), "--findings"])
    assert code == 0 and "keep declared dims the analysis could not verify ('y')" in capsys.readouterr().err


def test_o_never_keeps_a_declared_dim_the_analysis_refutes(tmp_path):
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"], name="nz")], "g",
                          [V("x", TP.FLOAT, [3, 4])], [V("nz", TP.INT64, [2, 13])])
    src = tmp_path / "nz.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(src))
    res = smtshape.analyze(str(src))
    res.save(str(tmp_path / "out.onnx"))
    out = onnx.load(str(tmp_path / "out.onnx")).graph.output[0]
    assert dims(out) == [2, None]            # 13 > 12 elements: refuted, not kept


def test_o_writes_canonical_dim_names(tmp_path):
    """Defect 3: dynamo exports wrote ``64 * batch * seq // (16 * seq)`` beside ``4 * batch``."""
    res = smtshape.analyze(str(CORPUS / "bert_dynamo.onnx"))
    raw = {str(d) for s in res.shapes().values() if s for d in s}
    assert "64 * batch * seq // (16 * seq)" in raw                   # the analysis' own form
    res.save(str(tmp_path / "out.onnx"))
    proto = onnx.load(str(tmp_path / "out.onnx"))
    written = {d.dim_param for vi in proto.graph.value_info for d in vi.type.tensor_type.shape.dim}
    assert "4 * batch" in written and not any("//" in w for w in written)




def test_a_declared_dim_is_kept_only_where_the_analysis_does_not_refute_it():
    """(-o keeps a declared dim where it has nothing to write; an EXACT dim it cannot name
    was once compared with nothing: a declared 200 stood beside seq <= 128.)"""
    from smtshape.examples import demo_model
    from smtshape.written import _refutes
    res = smtshape.analyze(demo_model())
    seq = res.shape("probs")[2]
    declared = onnx.TensorShapeProto.Dimension
    assert _refutes(res, declared(dim_value=200), seq)                # the model forces seq <= 128
    assert not _refutes(res, declared(dim_value=64), seq)             # not verified either: kept, listed
    assert not _refutes(res, declared(dim_param="seq"), seq)
    assert not _refutes(res, declared(dim_param="some_label"), seq)   # not a size the analysis reads
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"], name="nz")], "g",
                          [V("x", TP.FLOAT, [3, 4])], [V("nz", TP.INT64, None)])
    res = smtshape.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    nz = res.shape("nz")[1]                                            # UPPER_BOUND: at most 12
    assert _refutes(res, declared(dim_value=13), nz) and not _refutes(res, declared(dim_value=12), nz)


def test_o_writes_no_shape_for_a_name_two_branches_define(tmp_path):
    """Exported merged decoders reuse value names in the then and else branches of an If, with
    other element types: a main-graph value_info for such a name retyped one branch (the full
    checker refused every written merged decoder of ../shared/corpus-wild)."""
    then = helper.make_graph([helper.make_node("Cast", ["x"], ["v"], name="c", to=TP.INT64),
                              helper.make_node("Cast", ["v"], ["o1"], name="c2", to=TP.FLOAT)], "then", [],
                             [V("o1", TP.FLOAT, ["n"])])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["v"], name="r"),
                               helper.make_node("Neg", ["v"], ["o2"], name="n")], "else", [],
                              [V("o2", TP.FLOAT, ["n"])])
    g = helper.make_graph([helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then, else_branch=other)],
                          "g", [V("cond", TP.BOOL, []), V("x", TP.FLOAT, ["n"])], [V("y", TP.FLOAT, ["n"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m, full_check=True)
    smtshape.analyze(m).save(str(tmp_path / "out.onnx"))
    out = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(out, full_check=True)
    assert "v" not in {vi.name for vi in out.graph.value_info}
    x = np.array([1.5, -2.0], np.float32)
    for c in (True, False):
        feed = {"cond": np.array(c), "x": x}
        np.testing.assert_array_equal(run_ort(m, feed)[0], run_ort(out, feed)[0])
