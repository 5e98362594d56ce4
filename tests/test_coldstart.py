"""A cold start pays only for what the command needs (issue 8): analyzing a model
file imports neither onnx nor onnx_ir (nor z3 when no question needs it), and the command exits with its code and
all of its output although it skips interpreter teardown."""
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import smtshape.examples


def _run(code: str, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def _model(path):
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Concat", ["s", "c"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1], np.int64), "c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


@pytest.mark.parametrize("policy", ["refine", "skip", "strict"])
def test_analyzing_a_file_imports_neither_onnx_nor_onnx_ir(tmp_path, policy):
    """(Under ``skip``, ``from .irtypes import is_container`` once imported onnx_ir: the
    import system asked the module for ``__path__`` and its fallback answered from onnx_ir.)"""
    p = tmp_path / "m.onnx"
    _model(p)
    r = _run("import sys, json, smtshape\n"
             f"res = smtshape.analyze(sys.argv[1], policy={policy!r})\n"
             "print(json.dumps({'shape': [str(d) for d in res.shape('y')], 'consistent': res.consistent,\n"
             "                  'onnx': 'onnx' in sys.modules, 'onnx_ir': 'onnx_ir' in sys.modules,\n"
             "                  'z3': 'z3' in sys.modules}))", str(p))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # (no question here needs the solver: z3 is imported on first use only, lazyz3.py)
    assert out == {"shape": ["N", "4", "1"], "consistent": True, "onnx": False, "onnx_ir": False, "z3": False}


def test_a_model_proto_from_onnx_is_still_accepted_after_a_cold_analysis(tmp_path):
    """The protobuf module loaded on its own and onnx's are the same classes."""
    p = tmp_path / "m.onnx"
    _model(p)
    r = _run("import sys, smtshape\n"
             "a = smtshape.analyze(sys.argv[1])\n"
             "import onnx\n"
             "b = smtshape.analyze(onnx.load(sys.argv[1]))\n"
             "print(type(a.model.proto) is onnx.ModelProto, [str(d) for d in b.shape('y')])", str(p))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True ['N', '4', '1']"


def test_the_command_exits_with_its_code_and_full_output(tmp_path):
    p = tmp_path / "demo.onnx"
    with open(p, "wb") as f:
        f.write(smtshape.examples.demo_model().SerializeToString())
    r = subprocess.run([sys.executable, "-m", "smtshape", "infer", str(p), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)       # complete JSON: nothing lost by exiting without teardown
    assert doc["consistent"] is True
    bad = subprocess.run([sys.executable, "-m", "smtshape", "check", str(tmp_path / "missing.onnx")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not found" in bad.stderr
