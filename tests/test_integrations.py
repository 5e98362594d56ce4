"""smtshape.integrations: the onnxruntime SymbolicShapeInference drop-in (alone and
inside onnxruntime's transformer optimizer) and the onnx_ir pass, on corpus models."""
import collections
import logging
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnx_ir.passes
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference as OrtSSI

import smtshape
from smtshape import integrations as I

CORPUS = Path(smtshape.__file__).resolve().parent.parent.parent / "shared" / "corpus"
MODELS = ["bert_legacy", "gpt2_dynamo", "distilbert_legacy", "light_bvlc_alexnet", "mobilenetv2_legacy"]
V = helper.make_tensor_value_info


def dims_of(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in vi.type.tensor_type.shape.dim]


@pytest.mark.parametrize("name", MODELS)
def test_infer_shapes_annotates_and_agrees_with_onnxruntime_on_static_dims(name):
    m = onnx.load(str(CORPUS / f"{name}.onnx"))
    before = m.SerializeToString()
    out = I.SymbolicShapeInference.infer_shapes(m, int_max=2**31 - 1, auto_merge=False,
                                                guess_output_rank=False, verbose=0)
    assert m.SerializeToString() == before                   # the input proto is not touched
    assert isinstance(out, onnx.ModelProto)
    onnx.checker.check_model(out)
    res = smtshape.analyze(m)
    vis = {v.name: v for v in list(out.graph.value_info) + list(out.graph.output)}
    produced = {o for n in m.graph.node for o in n.output if o}
    assert produced <= set(vis)                              # every node output is annotated
    for name_, vi in vis.items():
        want = [d.expr if d.is_static else None for d in res.shape(name_)]
        got = [d if isinstance(d, int) else None for d in dims_of(vi)]
        assert got == want, name_
    try:
        theirs = OrtSSI.infer_shapes(m, auto_merge=True)
    except Exception:
        theirs = None                                        # onnxruntime gives up on some models
    if theirs is not None:
        compared = 0
        for vi in list(theirs.graph.value_info) + list(theirs.graph.output):
            if vi.name in vis:
                a, b = dims_of(vis[vi.name]), dims_of(vi)
                assert len(a) == len(b), vi.name
                for x, y in zip(a, b):
                    if isinstance(x, int) and isinstance(y, int):
                        compared += 1
                        assert x == y, vi.name
        assert compared > 0


def _conflict_model():
    g = helper.make_graph([helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=0)], "g",
                          [V("a", TP.FLOAT, ["n", 3]), V("b", TP.FLOAT, ["m", 4])], [V("c", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_conflicts_are_never_merged_silently(caplog):
    m = _conflict_model()
    with pytest.raises(I.ShapeInferenceConflict) as e:
        I.SymbolicShapeInference.infer_shapes(m, auto_merge=False)
    assert "3 == 4" in str(e.value) and "'cat'" in str(e.value)
    with caplog.at_level(logging.WARNING, logger="smtshape.integrations"):
        out = I.SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    assert out is not None and any("3 == 4" in r.getMessage() for r in caplog.records)


def test_opset_below_7_returns_none_and_no_rule_is_incomplete(tmp_path, monkeypatch):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [V("x", TP.FLOAT, [2])],
                          [V("y", TP.FLOAT, None)])
    assert I.SymbolicShapeInference.infer_shapes(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)) is None
    g = helper.make_graph([helper.make_node("Mystery", ["x"], ["y"], domain="com.example")], "g",
                          [V("x", TP.FLOAT, [2])], [V("y", TP.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)],
                          ir_version=8)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="Incomplete symbolic shape inference"):
        I.SymbolicShapeInference.infer_shapes(m, guess_output_rank=True)   # ranks are never guessed
    assert list(tmp_path.iterdir()) == []                                  # no temp model written


def _graph_key(m):
    return [(n.op_type, n.domain, tuple(n.input), tuple(n.output)) for n in m.graph.node]


@pytest.mark.parametrize("name", ["bert_legacy", "distilbert_legacy"])
def test_inside_onnxruntime_transformer_optimizer(name, monkeypatch):
    from onnxruntime.transformers import optimizer
    path = str(CORPUS / f"{name}.onnx")
    theirs = optimizer.optimize_model(path, model_type="bert", opt_level=0)
    calls = []
    real = I.SymbolicShapeInferenceHelper.infer

    def spy(self, mapping, max_runs=200):
        calls.append(dict(mapping))
        return real(self, mapping, max_runs)
    monkeypatch.setattr(I.SymbolicShapeInferenceHelper, "infer", spy)
    with I.use_in_onnxruntime():
        ours = optimizer.optimize_model(path, model_type="bert", opt_level=0)
    assert calls, "the optimizer did not call smtshape"
    import shape_infer_helper
    assert shape_infer_helper.SymbolicShapeInferenceHelper is not I.SymbolicShapeInferenceHelper  # restored
    assert _graph_key(ours.model) == _graph_key(theirs.model)                # the same fused model
    fused = collections.Counter(n.op_type for n in ours.model.graph.node)
    assert fused["SkipLayerNormalization"] > 0
    x = {i.name: np.ones((2, 5), np.int64) for i in ours.model.graph.input}
    s = ort.InferenceSession(ours.model.SerializeToString(), providers=["CPUExecutionProvider"])
    s.run(None, x)


def test_helper_interface():
    m = onnx.load(str(CORPUS / "bert_legacy.onnx"))
    h = I.SymbolicShapeInferenceHelper(m)
    assert h.infer({"batch": 4, "not_a_dim": 3}) is True
    ids = m.graph.input[0].name
    assert h.get_edge_shape(ids) == [4, "seq"]
    assert h.compare_shape(m.graph.input[0].name, m.graph.input[1].name)
    assert dims_of(h.known_vi_[m.graph.output[0].name])[0] == 4
    assert h.get_edge_shape("no such value") is None


@pytest.mark.parametrize("name", MODELS)
def test_onnx_ir_pass_annotates_in_place(name):
    model = ir.load(str(CORPUS / f"{name}.onnx"))
    p = I.AnnotateShapesPass()
    assert isinstance(p, onnx_ir.passes.InPlacePass)
    result = p(model)
    assert isinstance(result, onnx_ir.passes.PassResult) and result.model is model and result.modified
    res = p.result
    for node in model.graph:
        for v in node.outputs:
            if not v.name:
                continue
            s = res.shape(v.name)
            assert v.shape is not None and len(v.shape) == len(s), v.name
            for got, d in zip(v.shape, s):
                if d.is_static:
                    assert got == d.expr
    again = I.AnnotateShapesPass()(model)
    assert not again.modified                                  # idempotent
    proto = ir.serde.serialize_model(model)
    onnx.checker.check_model(proto)
    mgr = onnx_ir.passes.PassManager([I.AnnotateShapesPass()])
    assert mgr(model).model is model


def test_onnx_ir_pass_bind_and_conflict():
    model = ir.load(str(CORPUS / "bert_legacy.onnx"))
    I.AnnotateShapesPass(bind={"batch": 2, "seq": 7})(model)
    assert all(isinstance(d, int) for n in model.graph for v in n.outputs if v.name for d in v.shape)
    m = ir.serde.deserialize_model(_conflict_model())
    with pytest.raises(I.ShapeInferenceConflict):
        I.AnnotateShapesPass(fail_on_conflict=True)(m)
