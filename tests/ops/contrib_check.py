"""Shared checker for the contrib-op tests: analyze a one-node model with symbolic dims,
then run the same node in onnxruntime at concrete bindings and compare every output shape."""
from __future__ import annotations

import numpy as np

from smtshape.testing import failed, infer_node, node_model, refused, run_onnxruntime, ts, unchecked  # noqa: F401

MS = "com.microsoft"
_NP = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}




def concrete(spec, binding):
    return [d if isinstance(d, int) else binding[d] for d in spec.shape]


def check(op, inputs, attrs=None, bindings=({},), n_outputs=1, domain=MS, feeds=None, exact=True, opset=18):
    """Analyze, then compare with onnxruntime at every binding.  Returns the result."""
    res = infer_node(op, inputs, attrs or {}, domain=domain, n_outputs=n_outputs, opset=opset)
    assert not failed(res), [d.message for d in res.diagnostics]
    assert not res.conflicts, [str(c) for c in res.conflicts]
    for b in bindings:
        concrete_inputs = []
        feed = {}
        for i, x in enumerate(inputs):
            if isinstance(x, ts):
                shape = concrete(x, b)
                feed[f"x{i}"] = np.zeros(shape, _NP[x.dtype])
                concrete_inputs.append(ts({v: k for k, v in _DT.items()}[x.dtype], shape))
            else:
                concrete_inputs.append(x)
        if feeds is not None:
            feed.update(feeds(b))
        model = node_model(op, concrete_inputs, attrs or {}, domain=domain, n_outputs=n_outputs, opset=opset)
        outs = run_onnxruntime(model, feed)
        ours = res.evaluate({k: v for k, v in b.items() if k in res.store.symbols})   # shared bindings
        for k, o in enumerate(outs):
            got = ours[f"y{k}"]
            if exact:
                assert got == tuple(o.shape), (op, b, k, got, o.shape)
            else:
                assert got is None or len(got) == o.ndim and all(g is None or g == r for g, r in zip(got, o.shape))
    return res


_DT = {"float": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10, "double": 11}


def conflict_rules(res):
    """The rule ids of every constraint in the result's conflicts."""
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


def ort_refuses(op, inputs, attrs=None, n_outputs=1, domain=MS, opset=18):
    """onnxruntime refuses the one-node model at load (its checker, its contrib shape
    inference, a kernel constructor) or at run time (zeros as inputs).  None when it has
    no CPU kernel for the op and accepted the model up to kernel assignment (so only its
    checker and shape inference spoke)."""
    model = node_model(op, inputs, attrs or {}, domain=domain, n_outputs=n_outputs, opset=opset)
    feed = {f"x{i}": np.zeros(x.shape, _NP[x.dtype]) for i, x in enumerate(inputs) if isinstance(x, ts)}
    try:
        run_onnxruntime(model, feed)
    except Exception as e:      # noqa: BLE001  (onnxruntime raises its own exception types)
        msg = str(e)
        if "NOT_IMPLEMENTED" in msg and "Could not find an implementation" in msg:
            return None
        return True
    return False
