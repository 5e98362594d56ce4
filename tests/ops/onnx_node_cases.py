"""ONNX's own backend node tests as truth for op rules.

``collect_testcases()`` gives each test's one-node model with its input and
expected output arrays.  ``check_case`` analyzes the model with every shape
annotation of the outputs stripped (so nothing is read back from the model)
and checks that each EXACT dim equals the expected output's size, each
UPPER_BOUND dim's bound is >= it, and that no conflict is reported.  With
``consts=True`` the small integer inputs become initializers, so the rules'
value-dependent paths (dft_length, window size, Col2Im image_shape...) run.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

import smtshape
from smtshape.dim import Exactness


@functools.lru_cache(maxsize=None)
def _all_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(collect_testcases())


def cases(*ops: str) -> list:
    """The backend node tests whose model contains one of ``ops``."""
    return [tc for tc in _all_cases() if any(n.op_type in ops for n in tc.model.graph.node)]


def _strip(model: onnx.ModelProto, inputs, consts: bool) -> onnx.ModelProto:
    m = onnx.ModelProto.FromString(model.SerializeToString())
    del m.graph.value_info[:]
    for o in m.graph.output:
        o.ClearField("type")
    if consts:
        keep = []
        for vi, arr in zip(list(m.graph.input), inputs):
            a = np.asarray(arr) if isinstance(arr, (np.ndarray, np.generic)) else None
            if a is not None and a.dtype.kind in "iu" and a.size <= 64:
                m.graph.initializer.append(numpy_helper.from_array(a, vi.name))
            else:
                keep.append(vi)
        del m.graph.input[:]
        m.graph.input.extend(keep)
    return m


def check_case(tc, consts: bool = False) -> tuple[int, int, int]:
    """Analyze one backend test; assert soundness.  Returns (tensor outputs whose
    rank smtshape knows, EXACT dims that matched, dims of those outputs)."""
    inputs, outputs = tc.data_sets[0]
    m = _strip(tc.model, inputs, consts)
    res = smtshape.analyze(m)
    assert not res.conflicts, (tc.name, res.conflicts)
    known = exact = total = 0
    for vi, want in zip(m.graph.output, outputs):
        if not isinstance(want, (np.ndarray, np.generic)):
            continue            # sequences / maps
        want = np.asarray(want)
        got = res.shape(vi.name)
        if got is None:
            continue
        known += 1
        total += want.ndim
        assert len(got) == want.ndim, (tc.name, vi.name, got, want.shape)
        for k, (d, w) in enumerate(zip(got, want.shape)):
            if d.exactness is Exactness.EXACT:
                assert d.expr == w, (tc.name, vi.name, k, got, want.shape)
                exact += 1
            elif d.exactness is Exactness.UPPER_BOUND:
                assert isinstance(d.bound, int) and d.bound >= w, (tc.name, vi.name, k, got, want.shape)
    return known, exact, total


def check_all(*ops: str, min_cases: int = 1):
    """Every backend test of ``ops``, as-is and with constant integer inputs.
    Returns the per-test results {name: (known, exact, total)} of the constant variant."""
    found = cases(*ops)
    assert len(found) >= min_cases, (ops, len(found))
    out = {}
    for tc in found:
        check_case(tc, consts=False)
        out[tc.name] = check_case(tc, consts=True)
    return out
