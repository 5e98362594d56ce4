"""Helpers to test op rules (ours and users'): build a one-node model, analyze it.

    from smtshape.testing import ts, infer_node
    res = infer_node("Add", [ts("float", ["N", 1]), ts("float", [1, "M"])])
    res.shape("y0")
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_DTYPES = {"float": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "double": TensorProto.DOUBLE,
           "int64": TensorProto.INT64, "int32": TensorProto.INT32, "int8": TensorProto.INT8,
           "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL}


class ts:
    """A graph input spec: dtype name and shape (ints, names, or None for an anonymous dim).
    ``shape=None`` means rank unknown."""

    def __init__(self, dtype: str, shape):
        self.dtype = _DTYPES[dtype]
        self.shape = shape


def node_model(op_type: str, inputs: list, attrs: dict | None = None, *, opset: int = 18,
               n_outputs: int = 1, domain: str = "") -> onnx.ModelProto:
    """One node named 'node' reading x0, x1, ... and writing y0, y1, ...

    Each input is a ``ts`` (a graph input), a numpy array (an initializer, so its
    value is known), or None (an omitted optional input).
    """
    graph_inputs, inits, names = [], [], []
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        name = f"x{i}"
        names.append(name)
        if isinstance(x, ts):
            graph_inputs.append(helper.make_tensor_value_info(name, x.dtype, x.shape))
        else:
            inits.append(numpy_helper.from_array(np.asarray(x), name))
    outs = [f"y{k}" for k in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, name="node", domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
                              initializer=inits)
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=8)


def infer_node(op_type: str, inputs: list, attrs: dict | None = None, **kw):
    """Analyze a one-node model; extra keyword arguments go to ``smtshape.analyze``."""
    from . import analyze
    opset = kw.pop("opset", 18)
    n_outputs = kw.pop("n_outputs", 1)
    domain = kw.pop("domain", "")
    return analyze(node_model(op_type, inputs, attrs, opset=opset, n_outputs=n_outputs, domain=domain), **kw)


def exprs(res, name: str):
    """The shape of ``name`` as plain exprs (ints / printed expressions), None if rank unknown."""
    from .printing import show
    s = res.shape(name)
    if s is None:
        return None
    return tuple(d.expr if isinstance(d.expr, int) else show(d.expr) for d in s)


def run_onnxruntime(model: onnx.ModelProto, feeds: dict) -> list:
    """Run ``model`` in onnxruntime (graph optimizations off) and return its outputs.

    Output value types are cleared first: ``node_model`` leaves them undefined,
    which onnxruntime refuses, and it infers them itself."""
    import onnxruntime as ort

    m = onnx.ModelProto.FromString(model.SerializeToString())
    for o in m.graph.output:
        o.ClearField("type")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def refused(res) -> bool:
    """The model breaks a precondition or a relation: at least one conflict."""
    return bool(res.conflicts)


def unchecked(res) -> list:
    """The nodes no rule could check (``Result.unchecked_nodes``, accepted ops left out)."""
    return [u for u in res.unchecked_nodes if not u.accepted]


def failed(res) -> bool:
    """The analysis gave up on some node: refused (a conflict) or could not check it."""
    return refused(res) or bool(unchecked(res))
