"""Constant folding: a node whose inputs are all known constants is run.

Exporters compute shape arithmetic on float constants (``int(16 ** 0.5)`` in
ViT/CLIP position interpolation becomes Pow -> Cast), which value
propagation (``numeric``) does not cover.  float16 / bfloat16 nodes are not
folded: onnxruntime computes them in float32 (see ``_NARROW_FLOATS``).  When every input of a
deterministic standard op is a small known tensor, the engine runs the node
with ``onnx.reference`` (ONNX's own reference implementation) and records
the outputs as constants: exact shapes, dtypes and elements.
"""
from __future__ import annotations

import math

from . import irtypes as ir
from .context import INT_TYPES, MAX_VALUE_ELEMENTS
from .lazy import numpy as np
from .reader import node_proto

MAX_ELEMENTS = 64    # shape arithmetic is scalars and short vectors; weights are not folded
# float16 / bfloat16 arithmetic is not folded: onnxruntime's CPU kernels compute it in
# float32 and may never round back (``Cast(1501 -> float16) * 1.5`` is 2251.5 there, 2252 by
# the spec), so the reference's answer is not every runtime's; ``numeric`` says what is
_NARROW_FLOATS = {ir.DataType.FLOAT16, ir.DataType.BFLOAT16}
_SKIP = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
         "Bernoulli", "Dropout", "Constant", "If", "Loop", "Scan", "SequenceConstruct"}


def _input_array(ctx, i):
    t = ctx.input(i)
    if t is None or t.shape is None or not all(isinstance(d, int) for d in t.shape):
        return None
    if math.prod(t.shape) > MAX_ELEMENTS:     # exact: np.prod wraps around past 2**63
        return None
    if t.const is not None or t.tensor is not None:
        return ctx.const(i)
    if t.value is None or t.dtype not in INT_TYPES:
        return None
    vals = ctx.value(i)
    if any(not isinstance(v, (int, bool)) for v in vals):
        return None
    try:
        return np.array(vals, dtype=ir.DataType(t.dtype).numpy()).reshape(t.shape)
    except Exception:
        return None


def try_fold(ctx) -> bool:
    """Run the node on its constant inputs; set its outputs. False when not applicable."""
    node = ctx.node
    if node.domain not in ("", "ai.onnx") or node.op_type in _SKIP or not node.inputs:
        return False
    if any(a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS) or getattr(a, "ref_attr_name", None)
           for a in node.attributes.values()):
        return False      # (a subgraph; an attribute whose value is a function caller's)
    # the rule ran first: fold only when it says every output is static and small, so
    # nothing large is ever materialized (ConstantOfShape of 30000 x 30000, Expand, Tile...)
    ruled = []
    for k, o in enumerate(ctx.outputs):
        if not o.name:
            ruled.append(None)
            continue
        t = ctx.engine.values.get(o)
        if t is None or t.shape is None or not all(isinstance(d, int) for d in t.shape) \
                or math.prod(t.shape) > MAX_ELEMENTS:
            return False
        ruled.append(tuple(t.shape))
    if any(ctx.dtype(i) in _NARROW_FLOATS for i in range(ctx.num_inputs)) \
            or any(t is not None and t.dtype in _NARROW_FLOATS
                   for t in (ctx.engine.values.get(o) for o in ctx.outputs if o.name)):
        return False
    arrays = []
    for i in range(ctx.num_inputs):
        if not ctx.has_input(i):
            arrays.append(None)
            continue
        a = _input_array(ctx, i)
        if a is None:
            return False
        arrays.append(a)
    try:
        # any floating-point or integer trouble (division by zero, overflow) means
        # the runtime's answer is not the reference's: do not fold
        with np.errstate(all="raise"):
            outs = _run(node, arrays, ctx.opset)
    except Exception:
        return False
    if outs is None or any(o is None or np.asarray(o).size > MAX_ELEMENTS for o in outs):
        return False
    if any(r is not None and k < len(outs) and tuple(np.asarray(outs[k]).shape) != r for k, r in enumerate(ruled)):
        # the rules are the authority: onnx.reference computes in float64 where the
        # runtime may not; a shape that disagrees with the rule's is not taken
        return False
    from onnx import helper      # (onnx only once a node is folded: most nodes stop above)
    for k, o in enumerate(outs):
        o = np.asarray(o)
        try:
            dtype = ir.DataType(helper.np_dtype_to_tensor_dtype(o.dtype))
        except Exception:
            return False
        value = None
        if dtype in INT_TYPES and o.size <= MAX_VALUE_ELEMENTS:
            value = tuple(bool(x) if dtype == ir.DataType.BOOL else int(x) for x in o.reshape(-1))
        ctx.set_output(k, tuple(int(d) for d in o.shape), dtype, value, o)
    return True


def _run(node, arrays, opset):
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    proto = node_proto(node)
    names = [f"i{k}" if a is not None else "" for k, a in enumerate(arrays)]
    outs = [f"o{k}" for k in range(len(proto.output))]
    del proto.input[:]
    proto.input.extend(names)
    del proto.output[:]
    proto.output.extend(outs)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in zip(names, arrays) if a is not None]
    graph = helper.make_graph([proto], "fold", inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset or 17)])
    feeds = {n: a for n, a in zip(names, arrays) if a is not None}
    return ReferenceEvaluator(model).run(None, feeds)

