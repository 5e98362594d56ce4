"""ONNX backend node tests as truth, with every input dim made symbolic.

``check_symbolic(tc)`` rewrites each tensor graph input's dims as unique dim_params
(``in0_0``, ``in0_1``, ...), strips value_info and output types, analyzes, and evaluates
every output at the binding given by the test's own input arrays: each EXACT dim must equal
the expected output's size, and no conflict may be reported.  This exercises the
symbolic paths of the rules (head sizes from hidden / heads, lengths, ...), where ONNX's own
inference gives up or guesses.  ``check_static(tc)`` is the same on the static model.
"""
from __future__ import annotations

import numpy as np
import onnx

import smtshape
from smtshape import expr as E
from smtshape.dim import Exactness

from .onnx_node_cases import cases  # noqa: F401  (re-exported for the family tests)


def _prepare(model: onnx.ModelProto, inputs, symbolic: bool):
    m = onnx.ModelProto.FromString(model.SerializeToString())
    del m.graph.value_info[:]
    for o in m.graph.output:
        o.ClearField("type")
    binding = {}
    for vi, arr in zip(m.graph.input, inputs):
        if vi.type.HasField("sequence_type") and isinstance(arr, list):
            binding[f"{vi.name}_len"] = len(arr)     # the length symbol of a sequence input
    if symbolic:
        for j, (vi, arr) in enumerate(zip(m.graph.input, inputs)):
            if not vi.type.HasField("tensor_type") or not isinstance(arr, (np.ndarray, np.generic)):
                continue
            shape = np.shape(arr)
            tt = vi.type.tensor_type
            tt.ClearField("shape")
            tt.shape.SetInParent()
            for k, n in enumerate(shape):
                name = f"in{j}_{k}"
                tt.shape.dim.add().dim_param = name
                binding[name] = int(n)
    return m, binding


def _check(tc, symbolic: bool) -> int:
    inputs, outputs = tc.data_sets[0]
    m, binding = _prepare(tc.model, inputs, symbolic)
    res = smtshape.analyze(m)
    assert not res.conflicts, (tc.name, [c.explain() for c in res.conflicts])
    assert not any(d.kind == "rule_error" for d in res.diagnostics), \
        (tc.name, [str(d) for d in res.diagnostics if d.kind == "rule_error"])
    ev = res.evaluate(binding)
    exact = 0
    for vi, want in zip(m.graph.output, outputs):
        if isinstance(want, list):
            exact += _check_sequence(res, tc.name, vi.name, want, binding)
            continue
        if not isinstance(want, (np.ndarray, np.generic)):
            continue
        want = np.asarray(want)
        got = res.shape(vi.name)
        assert got is not None, (tc.name, vi.name)
        assert len(got) == want.ndim, (tc.name, vi.name, got, want.shape)
        for k, (d, v, w) in enumerate(zip(got, ev[vi.name], want.shape)):
            if d.exactness is Exactness.EXACT:
                assert v == w, (tc.name, vi.name, k, got, want.shape, binding)
                exact += 1
        val = res._lookup(vi.name)[1].value
        if val is not None and want.size == len(val):
            for a, b in zip(val, want.reshape(-1).tolist()):
                a = a if isinstance(a, bool) or a is None else E.evaluate(a, binding)
                assert a is None or a == b, (tc.name, vi.name, val, want)
    return exact


def check_symbolic(tc) -> int:
    return _check(tc, True)


def check_static(tc) -> int:
    return _check(tc, False)


def _value(res, e, binding):
    """The dim's value at the binding when it is EXACT, else None."""
    d = res.dim_of(e)
    return E.evaluate(d.expr, binding) if d.exactness is Exactness.EXACT else None


def _check_sequence(res, name, out, want, binding) -> int:
    """A sequence output: its length, its known elements and its common element shape."""
    sq = res._lookup(out)[1].seq
    exact = 0
    if sq is None:
        return 0          # not tracked (e.g. carried through a Loop): nothing claimed
    if sq.length is not None:
        n = _value(res, sq.length, binding)
        assert n is None or n == len(want), (name, out, sq.length, len(want))
        exact += n is not None
    if sq.elems is not None:
        assert len(sq.elems) == len(want), (name, out)
        for t, w in zip(sq.elems, want):
            if t.shape is None:
                continue
            assert len(t.shape) == np.ndim(w), (name, out, t.shape, np.shape(w))
            for d, n in zip(t.shape, np.shape(w)):
                v = _value(res, d, binding)
                assert v is None or v == n, (name, out, t.shape, np.shape(w))
                exact += v is not None
    if sq.elem_shape is not None:
        for w in want:
            assert len(sq.elem_shape) == np.ndim(w), (name, out, sq.elem_shape, np.shape(w))
            for d, n in zip(sq.elem_shape, np.shape(w)):
                v = None if d is None else _value(res, d, binding)
                assert v is None or v == n, (name, out, sq.elem_shape, np.shape(w))
                exact += v is not None
    return exact
