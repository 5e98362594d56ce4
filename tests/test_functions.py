"""Model-local functions: attribute references take the caller's value (or the
function's default) for every attribute kind and op; recursion is bad input.
Each case is checked against onnxruntime, which inlines the functions."""
import numpy as np
import onnx
import pytest
from onnx import AttributeProto as AP, TensorProto as TP, helper

import smtshape
from smtshape.errors import BadInput
from smtshape.testing import run_onnxruntime

DOMAIN = "local"


def ref(name, kind, caller_name=None):
    return helper.make_attribute_ref(name, kind, ref_attr_name=caller_name or name)


def fmodel(body, fn_attrs, call_attrs, x_shape, defaults=(), n_out=1, opset=18):
    """A graph calling function local::F(x) -> y0.. whose body is ``body``."""
    outs = [f"y{i}" for i in range(n_out)]
    fn = helper.make_function(DOMAIN, "F", ["x"], outs, body, [helper.make_opsetid("", opset)],
                              attributes=list(fn_attrs), attribute_protos=list(defaults))
    call = helper.make_node("F", ["x"], outs, name="call", domain=DOMAIN, **call_attrs)
    g = helper.make_graph([call], "g", [helper.make_tensor_value_info("x", TP.FLOAT, x_shape)],
                          [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs])
    return helper.make_model(g, functions=[fn], ir_version=10,
                             opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(DOMAIN, 1)])


def body_node(op, inputs, outputs, *attrs):
    n = helper.make_node(op, inputs, outputs)
    n.attribute.extend(attrs)
    return n


def shapes_agree(m, feed_shape, outs=("y0",)):
    res = smtshape.analyze(m)
    assert not res.conflicts and not res.unchecked_nodes, ([c.explain() for c in res.conflicts],
                                                           res.unchecked_nodes)
    assert res.consistent is True
    got = run_onnxruntime(m, {"x": np.random.rand(*feed_shape).astype(np.float32)})
    for name, arr in zip(outs, got):
        assert [d.expr for d in res.shape(name)] == list(arr.shape), name
    return res


@pytest.mark.parametrize("perm", [[1, 0, 2], [2, 0, 1]])
def test_transpose_perm_from_the_caller(perm):
    m = fmodel([body_node("Transpose", ["x"], ["y0"], ref("perm", AP.INTS))], ["perm"], {"perm": perm},
               [2, 3, 4])
    shapes_agree(m, (2, 3, 4))


@pytest.mark.parametrize("op,axis", [("Flatten", 2), ("Softmax", 0), ("Flatten", 0)])
def test_axis_from_the_caller(op, axis):
    m = fmodel([body_node(op, ["x"], ["y0"], ref("axis", AP.INT))], ["axis"], {"axis": axis}, [2, 3, 4])
    shapes_agree(m, (2, 3, 4))


def test_attribute_renamed_by_the_reference():
    m = fmodel([body_node("Flatten", ["x"], ["y0"], ref("axis", AP.INT, "where"))], ["where"], {"where": 1},
               [2, 3, 4])
    res = shapes_agree(m, (2, 3, 4))
    assert [d.expr for d in res.shape("y0")] == [2, 12]


def test_gather_axis_and_reduce_keepdims_from_the_caller():
    idx = helper.make_node("Constant", [], ["i"], value=helper.make_tensor("v", TP.INT64, [2], [0, 1]))
    gather = body_node("Gather", ["x", "i"], ["g"], ref("axis", AP.INT))
    red = body_node("ReduceSum", ["g"], ["y0"], ref("keepdims", AP.INT))
    m = fmodel([idx, gather, red], ["axis", "keepdims"], {"axis": 2, "keepdims": 0}, [2, 3, 4], opset=18)
    res = shapes_agree(m, (2, 3, 4))
    assert res.shape("y0") == ()


def test_default_attribute_of_the_function():
    default = helper.make_attribute("perm", [0, 2, 1])
    m = fmodel([body_node("Transpose", ["x"], ["y0"], ref("perm", AP.INTS))], [], {}, [2, 3, 4],
               defaults=[default])
    res = shapes_agree(m, (2, 3, 4))
    assert [d.expr for d in res.shape("y0")] == [2, 4, 3]
    # the caller's value wins over the default
    m = fmodel([body_node("Transpose", ["x"], ["y0"], ref("perm", AP.INTS))], [], {"perm": [1, 0, 2]},
               [2, 3, 4], defaults=[default])
    assert [d.expr for d in shapes_agree(m, (2, 3, 4)).shape("y0")] == [3, 2, 4]


def test_reference_the_caller_does_not_give_is_absent():
    """An attribute reference the caller leaves out is as if the attribute were absent:
    Transpose then reverses the axes (ONNX's default)."""
    m = fmodel([body_node("Transpose", ["x"], ["y0"], ref("perm", AP.INTS))], ["perm"], {}, [2, 3, 4])
    res = shapes_agree(m, (2, 3, 4))
    assert [d.expr for d in res.shape("y0")] == [4, 3, 2]


def _recursive_model(names):
    """Functions f0 -> f1 -> ... -> f0 calling one another in a ring."""
    fns = []
    for i, name in enumerate(names):
        callee = names[(i + 1) % len(names)]
        fns.append(helper.make_function(DOMAIN, name, ["a"], ["b"],
                                        [helper.make_node(callee, ["a"], ["b"], domain=DOMAIN)],
                                        [helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)]))
    call = helper.make_node(names[0], ["x"], ["y"], name="call", domain=DOMAIN)
    g = helper.make_graph([call], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    return helper.make_model(g, functions=fns, ir_version=10,
                             opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])


@pytest.mark.parametrize("names", [["F"], ["F", "G"], ["F", "G", "H"]])
def test_recursion_is_bad_input(names):
    with pytest.raises(BadInput, match="calls itself"):
        smtshape.analyze(_recursive_model(names))


def test_recursion_from_the_command_line_exits_2(tmp_path, capsys):
    from smtshape.cli import main
    p = tmp_path / "rec.onnx"
    onnx.save(_recursive_model(["F", "G"]), str(p))
    code = main(["check", str(p)])
    err = capsys.readouterr().err
    assert code == 2 and "calls itself (F -> G -> F)" in err and "Traceback" not in err
