"""One unnamed node has one label in every message (``labels.node_label``): its op type and
its position in its graph's node list, in conflicts, their causes and fixes, the report,
annotations, diagnostics, JSON and bad-input errors, whether the model is read by
smtshape's reader or given as an onnx_ir model."""
import json

import numpy as np
import onnx_ir as ir
import pytest
from onnx import TensorProto as TP, helper, numpy_helper

import smtshape
from smtshape.conflicts import suggest_fix
from smtshape.errors import BadInput
from smtshape.report import explain_conflict


def _model(nodes, value_info=(), inits=None):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
                          value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _unsorted_conflict_model():
    """MatMul at position 0 reads Relu's output (position 1; the walk runs Relu first): its
    inner dims 3 and 4 conflict, and Relu's output is declared [2, 7] (inferred [2, 3])."""
    return _model([helper.make_node("MatMul", ["r", "w"], ["m"]),
                   helper.make_node("Relu", ["x"], ["r"]),
                   helper.make_node("Relu", ["m"], ["y"])],
                  [helper.make_tensor_value_info("r", TP.FLOAT, [2, 7])],
                  {"w": np.zeros((4, 5), np.float32)})


def _texts(res) -> str:
    c = res.conflicts[0]
    return "\n".join([str(c), explain_conflict(res, c), suggest_fix(c), json.dumps(res.to_json())]
                     + [str(d) for d in res.diagnostics])


@pytest.mark.parametrize("given", ["bytes", "onnx_ir"])
def test_an_unnamed_node_has_one_label_in_every_message(given):
    proto = _unsorted_conflict_model()
    model = proto.SerializeToString() if given == "bytes" else ir.serde.deserialize_model(proto)
    res = smtshape.analyze(model)
    [c] = res.conflicts
    assert c.nodes == ["MatMul_0"]                         # position in the file, not the walk
    assert c.constraints[0].provenance.where() == "MatMul node 'MatMul_0'"
    ann = [d for d in res.diagnostics if d.kind == "annotation"]
    assert [(d.node, d.op_type) for d in ann] == [("Relu_1", "Relu")]
    text = _texts(res)
    assert "at MatMul node 'MatMul_0': inputs 'r'" in text          # the report finds the node
    assert "(read by Relu node 'Relu_1')" in text                   # the cause names it too
    assert "read by MatMul node 'MatMul_0'" in suggest_fix(c)
    assert "Relu node 'Relu_1': 'r' is declared [2, 7]" in text
    for bare in ("'MatMul'", "'Relu'", "MatMul_1", "Relu_0", "Relu_2"):
        assert bare not in text, bare


def test_a_function_body_counts_its_own_nodes():
    """An unnamed node of a model-local function is labelled by its position in the body
    (the walk reaches it through the caller, at another position of the main graph)."""
    body = [helper.make_node("Relu", ["a"], ["h"]),
            helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(np.array([5], np.int64))),
            helper.make_node("Reshape", ["h", "s"], ["b"])]
    fn = helper.make_function("local", "F", ["a"], ["b"], body, [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["x1"]), helper.make_node("F", ["x1"], ["y"],
                                                                                      domain="local")],
                          "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    m = helper.make_model(g, functions=[fn], ir_version=10,
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    res = smtshape.analyze(m)
    assert [c.nodes for c in res.conflicts] == [["Reshape_2"]]
    assert "Reshape node 'Reshape_2'" in str(res.conflicts[0])


def test_bad_input_names_the_node_by_its_label():
    cycle = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "b"], ["y"]),
                    helper.make_node("Relu", ["y"], ["b"])])
    with pytest.raises(BadInput, match=r"nodes 'Add_1', 'Relu_2'"):
        smtshape.analyze(cycle)
    dangling = _model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "nothing"], ["y"])])
    with pytest.raises(BadInput, match=r"Add node 'Add_1' reads 'nothing'"):
        smtshape.analyze(dangling)


def test_the_label_and_the_phrase():
    from smtshape.labels import node_label, node_phrase
    node = helper.make_node("Relu", ["x"], ["y"])
    assert node_label(node, 4) == "Relu_4"
    assert node_label(helper.make_node("Relu", ["x"], ["y"], name="r"), 4) == "r"
    assert node_label(node) == "Relu"                 # a NodeProto outside any graph: no position
    assert node_phrase("Relu", "Relu_4") == "Relu node 'Relu_4'"
