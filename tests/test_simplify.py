"""Written models: -o (issue 21, defects 1-3), ``smtshape simplify`` and ``smtshape specialize``.

Every written model is checked the way a user would: ``onnx.checker.check_model(full_check=True)``
and onnxruntime's outputs against the original's on the same inputs (graph optimizations off,
so a difference is the rewrite's, never the optimizer's).  The whole corpus is
``benchmarks/simplify_compare.py`` (docs/simplify.md); here a few models, and hypothesis over
the bindings of small ones."""
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape
from smtshape.cli import main
from smtshape.examples import demo_model
from smtshape import simplify, specialize
from smtshape.written import DimNames

REPO = Path(smtshape.__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
VNN = REPO.parent / "shared" / "vnncomp"
V = helper.make_tensor_value_info


def run_ort(model, feed):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, (str, Path)) else model.SerializeToString()
    return ort.InferenceSession(str(data) if isinstance(data, Path) else data, so,
                                providers=["CPUExecutionProvider"]).run(None, feed)


def same_outputs(a, b, feed):
    for x, y in zip(run_ort(a, feed), run_ort(b, feed)):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def text_feed(batch, seq, names=("input_ids", "attention_mask")):
    rng = np.random.default_rng(batch * 1000 + seq)
    feed = {"input_ids": rng.integers(3, 256, (batch, seq)).astype(np.int64),
            "attention_mask": np.ones((batch, seq), np.int64),
            "token_type_ids": np.zeros((batch, seq), np.int64)}
    return {k: feed[k] for k in names}


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in vi.type.tensor_type.shape.dim]


def test_dim_names_prove_what_they_merge():
    from smtshape import expr as E
    res = smtshape.analyze(demo_model())
    names = DimNames(res)
    seq, batch = (res.store.symbols[n].symbol for n in ("seq", "batch"))
    e = E.floordiv(E.mul(E.mul(64, batch), seq), E.mul(16, seq))        # an exact quotient
    assert "//" in str(smtshape.Dim(e))
    names.add(e)
    assert names.form(e) == 4 * batch
    # min(seq, 200) is seq only because the model forces seq <= 128 (proven by the store);
    # min(seq, 100) agrees with seq at the sample points too, but is not seq: kept
    for x in (seq, E.smin(seq, 200), E.smin(seq, 100)):
        names.add(x)
    assert names.form(E.smin(seq, 200)) == seq
    assert names.form(E.smin(seq, 100)) == E.smin(seq, 100)


# ------------------------------------------------------------------ simplify

@pytest.mark.parametrize("name", ["gpt2_legacy", "vit_legacy", "toy_shape_legacy"])
def test_simplified_corpus_model_matches_at_every_binding(name, tmp_path):
    path = CORPUS / f"{name}.onnx"
    truth = json.loads((CORPUS / f"{name}.truth.json").read_text())
    proto, report, _ = simplify(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert report.nodes_after < report.nodes_before and report.premises == []
    assert report.count("constant") and report.count("identity")
    orig = onnx.load(str(path))
    for k, shapes in enumerate(truth["shapes"]):
        rng = np.random.default_rng(k)
        feed = {}
        for i in orig.graph.input:
            shp = shapes[i.name]
            if i.type.tensor_type.elem_type == TP.INT64:
                feed[i.name] = np.ones(shp, np.int64) if "mask" in i.name else rng.integers(3, 256, shp)
            else:
                feed[i.name] = rng.standard_normal(shp).astype(np.float32)
        same_outputs(orig, proto, feed)


def test_simplify_never_renames_or_changes_a_graph_output():
    # the output is a Reshape proven to be an identity, and a Shape whose value is constant
    g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                           helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape"),
                           helper.make_node("Shape", ["y"], ["t"], name="shape2")], "g",
                          [V("x", TP.FLOAT, [2, 3])], [V("y", TP.FLOAT, None), V("t", TP.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    proto, report, _ = simplify(m)
    assert [o.name for o in proto.graph.output] == ["y", "t"]
    onnx.checker.check_model(proto, full_check=True)
    same_outputs(m, proto, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)})


def test_simplify_keeps_a_reversing_slice():
    """A Slice with step -1 keeps the shape but not the content: not an identity."""
    c = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    g = helper.make_graph([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="rev"),
                           helper.make_node("Slice", ["y", "st0", "en0", "ax"], ["z"], name="full"),
                           helper.make_node("Relu", ["z"], ["out"], name="act")], "g",
                          [V("x", TP.FLOAT, ["n", 4])], [V("out", TP.FLOAT, None)],
                          [c("st", [-1]), c("en", [-(2 ** 63)]), c("ax", [1]), c("sp", [-1]),
                           c("st0", [0]), c("en0", [2 ** 62])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    proto, report, _ = simplify(m)
    kinds = {(r.node, r.kind) for r in report.rewrites}
    assert ("full", "identity") in kinds and ("rev", "identity") not in kinds
    same_outputs(m, proto, {"x": np.arange(12, dtype=np.float32).reshape(3, 4)})


def test_simplify_under_an_assumption_says_so(tmp_path, capsys):
    src = tmp_path / "demo.onnx"
    onnx.save(demo_model(), str(src))
    code = main(["simplify", str(src), "-o", str(tmp_path / "s.onnx"), "--assume", "seq <= 64",
                 "--report", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 0 and "valid only where these hold: assumption seq <= 64" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["premises"] == ["assumption seq <= 64"]
    assert all({"kind", "value", "node", "because"} <= set(r) for r in rep["rewrites"])


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(0, 3), seq=st.sampled_from([0, 1, 2, 63, 127, 128]))
def test_simplified_demo_matches_onnxruntime_at_both_sides_of_every_edge(batch, seq):
    """seq = 128 is the position table's edge (129 does not run); 0 and 1 are the
    broadcasting and empty-tensor edges."""
    m = demo_model()
    proto = _simplified_demo()
    feed = {"input_ids": np.full((batch, seq), 3, np.int64)}
    same_outputs(m, proto, feed)


_CACHE = {}


def _simplified_demo():
    if "demo" not in _CACHE:
        _CACHE["demo"] = simplify(demo_model())[0]
    return _CACHE["demo"]


# ------------------------------------------------------------------ specialize

@pytest.mark.parametrize("path,bind", [(CORPUS / "bert_legacy.onnx", {"batch": 1, "seq": 16}),
                                       (CORPUS / "clip_vision_dynamo.onnx",
                                        {"batch": 1, "height": 32, "width": 48}),
                                       (VNN / "vit__pgd_2_3_16.onnx", {"batch_size": 1})])
def test_specialized_model_is_static_checked_and_matches(path, bind):
    proto, report, _ = specialize(str(path), bind=bind)
    onnx.checker.check_model(proto, full_check=True)
    assert report.not_static == []
    for vi in list(proto.graph.input) + list(proto.graph.value_info) + list(proto.graph.output):
        assert all(isinstance(d, int) for d in dims(vi)), vi.name
    rng = np.random.default_rng(0)
    feed = {}
    for i in proto.graph.input:
        s = dims(i)
        if i.type.tensor_type.elem_type != TP.INT64:
            feed[i.name] = rng.random(s).astype(np.float32)
        else:      # token ids; masks of ones; token types of zeros
            feed[i.name] = np.ones(s, np.int64) if "mask" in i.name else np.zeros(s, np.int64) \
                if "type" in i.name else rng.integers(3, 256, s)
    same_outputs(onnx.load(str(path)), proto, feed)


def test_specialize_with_a_partial_binding_writes_the_bound_dims_into_the_inputs(tmp_path, capsys):
    """A partial binding: the bound dims go into the graph inputs (the model is consistent
    with itself, as -o's is), the others stay symbolic and are named; exit 5 (not static)."""
    src, out = CORPUS / "bert_legacy.onnx", tmp_path / "o.onnx"
    code = main(["specialize", str(src), "--bind", "batch=1", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 5 and "not bound, kept symbolic: seq (input_ids:1, attention_mask:1, token_type_ids:1)" in text
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert [dims(i) for i in m.graph.input] == [[1, "seq"]] * 3
    for seq in (5, 16):
        same_outputs(onnx.load(str(src)), m, text_feed(1, seq, ("input_ids", "attention_mask", "token_type_ids")))
    with pytest.raises(Exception, match="(?i)dimension|shape|Got invalid"):
        run_ort(m, text_feed(2, 5, ("input_ids", "attention_mask", "token_type_ids")))


def test_specialize_lists_data_dependent_dims_and_exits_5(tmp_path, capsys):
    code = main(["specialize", str(CORPUS / "toy_datadep_legacy.onnx"), "--bind", "rows=4", "--bind", "cols=3",
                 "-o", str(tmp_path / "o.onnx")])
    out = capsys.readouterr().out
    assert code == 5 and "not static:" in out and "nonzero" in out
    onnx.checker.check_model(onnx.load(str(tmp_path / "o.onnx")), full_check=True)
