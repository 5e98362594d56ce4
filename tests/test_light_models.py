"""End to end over the onnx package's own ``light_*`` models (shipped in its wheel).

Every intermediate value is exposed as a graph output and run in onnxruntime;
each of our dims must be EXACT and equal to the runtime size (these models are
static, so nothing may stay symbolic), and no analysis may report a conflict.
"""
import glob
import os

import numpy as np
import onnx
import pytest

import smtshape
from smtshape.dim import Exactness

ort = pytest.importorskip("onnxruntime")

LIGHT = sorted(glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                                      "light_*.onnx")))


def runtime_shapes(proto: onnx.ModelProto, result) -> dict:
    """Shape of every node output at run time (random inputs of the declared static shapes)."""
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    g = m.graph
    have = {o.name for o in g.output}
    inits = {i.name for i in g.initializer}
    for node in g.node:
        for o in node.output:
            if o and o not in have:
                dt = result.dtype(o)
                g.output.append(onnx.helper.make_tensor_value_info(o, int(dt), None))
                have.add(o)
    feeds = {}
    rng = np.random.default_rng(0)
    for i in g.input:
        if i.name in inits:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return {n: tuple(v.shape) for n, v in zip(names, sess.run(names, feeds))}


@pytest.mark.skipif(not LIGHT, reason="this onnx wheel ships no backend/test/data/light models")
@pytest.mark.parametrize("path", LIGHT, ids=lambda p: os.path.basename(p)[:-5])
def test_light_model_every_dim_exact_and_right(path):
    proto = onnx.load(path)
    res = smtshape.analyze(proto)
    assert res.conflicts == []
    truth = runtime_shapes(proto, res)
    assert len(truth) > 10
    for name, shape in truth.items():
        ours = res.shape(name)
        assert ours is not None, f"{name}: rank unknown, runtime {shape}"
        assert len(ours) == len(shape), f"{name}: rank {len(ours)} vs runtime {shape}"
        for k, (d, n) in enumerate(zip(ours, shape)):
            assert d.exactness is Exactness.EXACT and d.expr == n, f"{name}[{k}]: ours {d}, runtime {n}"
