"""Shape constants stored as external data are found from any working directory."""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape


def test_external_shape_constant_found_from_another_directory(tmp_path, monkeypatch):
    target = numpy_helper.from_array(np.array([-1, 64], np.int64), "target")
    g = helper.make_graph([helper.make_node("Reshape", ["x", "target"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, ["B", 16, 4])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], initializer=[target])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(m, str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    assert os.path.exists(folder / "weights.bin")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = smtshape.analyze(str(folder / "m.onnx"))
    assert [str(d) for d in res.shape("y")] == ["B", "64"]


def test_folding_never_materializes_a_large_output():
    """ConstantOfShape of constant [30000, 30000] (3.6 GB of float32): the rule gives the
    shape; folding, which would run the node, must not."""
    import tracemalloc
    shape = numpy_helper.from_array(np.array([30000, 30000], np.int64), "shape")
    g = helper.make_graph([helper.make_node("ConstantOfShape", ["shape"], ["y"], name="c"),
                           helper.make_node("Relu", ["y"], ["z"], name="r")], "g", [],
                          [helper.make_tensor_value_info("z", TP.FLOAT, None)], initializer=[shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    tracemalloc.start()
    try:
        res = smtshape.analyze(m)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [d.expr for d in res.shape("z")] == [30000, 30000]
    assert peak < 100 * 2 ** 20
