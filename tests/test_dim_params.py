"""dim_params: a plain name is an input dim; one that reads as an integer expression over
names (``past_sequence_length + sequence_length``, the attention-mask axis of every
exported decoder with a KV cache) is that expression over input dims; anything else is an
opaque name, identical strings being one dim."""
import numpy as np
import onnx
from onnx import TensorProto as TP, helper

import smtshape
from smtshape.dim import Exactness
from smtshape.testing import run_onnxruntime

V = helper.make_tensor_value_info


def _kv_model(mask_label):
    """keys = Concat(past[1, P, 4], cur[1, S, 4]) on axis 1; scores = mask[1, L] @ keys."""
    nodes = [helper.make_node("Concat", ["past", "cur"], ["keys"], axis=1, name="cat"),
             helper.make_node("MatMul", ["mask", "keys"], ["scores"], name="mm")]
    g = helper.make_graph(nodes, "g", [V("past", TP.FLOAT, [1, "past_sequence_length", 4]),
                                       V("cur", TP.FLOAT, [1, "sequence_length", 4]),
                                       V("mask", TP.FLOAT, [1, mask_label])],
                          [V("scores", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_a_composite_dim_param_is_that_expression_over_the_input_dims():
    m = _kv_model("past_sequence_length + sequence_length")
    res = smtshape.analyze(m)
    assert res.consistent is True and not res.conflicts
    (one, mask) = res.shape("mask")
    assert str(mask) == "past_sequence_length + sequence_length" and mask.exactness is Exactness.EXACT
    assert [str(d) for d in res.shape("scores")] == ["1", "1", "4"]
    assert res.equal("mask", 1, "keys", 1) is True
    assert res.to_json()["expression_dims"] == [{"input": "mask", "axis": 1,
                                                 "dim_param": "past_sequence_length + sequence_length"}]
    assert not any("not a plain name" in d.message for d in res.diagnostics)
    out = run_onnxruntime(m, {"past": np.zeros((1, 2, 4), np.float32), "cur": np.zeros((1, 3, 4), np.float32),
                              "mask": np.zeros((1, 5), np.float32)})
    assert out[0].shape == tuple(d.evaluate({"past_sequence_length": 2, "sequence_length": 3})
                                 for d in res.shape("scores"))


def test_a_composite_dim_param_the_model_contradicts_is_a_conflict_naming_the_nodes():
    res = smtshape.analyze(_kv_model("past_sequence_length + sequence_length + 1"))
    assert res.consistent is False
    assert "mm" in res.conflicts[0].nodes


def test_identical_strings_are_one_dim_and_expressions_state_their_domain():
    g = helper.make_graph([helper.make_node("Add", ["w", "x"], ["y"], name="add")], "g",
                          [V("w", TP.FLOAT, ["n-1", "Batch Size", "floor(h/2)"]),
                           V("x", TP.FLOAT, ["n-1", "Batch Size", "floor(h/2)"])], [V("y", TP.FLOAT, None)])
    res = smtshape.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))
    assert res.consistent is True
    assert [str(d) for d in res.shape("y")] == ["n - 1", str(res.shape("w")[1]), "h // 2"]
    assert res.equal("w", 1, "x", 1) is True             # one opaque dim, not two
    assert res.specializations == []                      # (nothing forced: 'n - 1' is a declaration)
    assert res.prove("n >= 1").name == "PROVEN"           # a size: n - 1 >= 0


def test_check_names_the_mask_dim_read_as_past_plus_seq(tmp_path, capsys):
    # issue 19: `smtshape check` of a KV-cache decoder lists the mask's dim as past + seq
    from smtshape.cli import main
    p = tmp_path / "kv.onnx"
    onnx.save(_kv_model("past_sequence_length + sequence_length"), str(p))
    assert main(["check", str(p)]) == 0
    err = capsys.readouterr().err
    assert "note: mask[1] is past_sequence_length + sequence_length (a dim_param read as an expression" in err
