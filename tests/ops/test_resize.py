"""Resize / Upsample / DepthToSpace / SpaceToDepth rules and property tests
against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from hypothesis import given, settings, strategies as st
from onnx import TensorProto

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, ts

EMPTY = np.zeros((0,), np.float32)


def ort_shape(op, x_shape, extra, attrs=None, opset=19):
    ins = [ts("float", [f"x{k}" for k in range(len(x_shape))])] + list(extra)
    m = node_model(op, ins, attrs, opset=opset)
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x0": np.random.rand(*x_shape).astype(np.float32)})[0].shape


def test_resize_scale_2_exact_with_recorded_float_constraint():
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), None,
                                np.array([1, 1, 2, 2], np.float32)], opset=13)
    assert exprs(res, "y0") == ("N", "C", "2 * H", "2 * W")
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y0"))
    assert any(c.provenance.rule == "resize.float_exact" for c in res.constraints)


def test_resize_half_scale_floor():
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), None,
                                np.array([1, 1, 0.5, 0.5], np.float32)], opset=13)
    assert exprs(res, "y0")[2:] == ("H // 2", "W // 2")
    assert res.evaluate({"N": 1, "C": 1, "H": 7, "W": 9})["y0"] == (1, 1, 3, 4)


def test_resize_float32_trap_at_constant_size():
    # float32(0.7) * 10 rounds to 7.0 in float32; the exact product floors to 6
    res = infer_node("Resize", [ts("float", [1, 1, 10]), None, np.array([1, 1, 0.7], np.float32)], opset=13)
    assert exprs(res, "y0") == (1, 1, 7)
    assert ort_shape("Resize", (1, 1, 10), [None, np.array([1, 1, 0.7], np.float32)]) == (1, 1, 7)


def test_resize_awkward_scale_symbolic_is_bounded_not_exact():
    res = infer_node("Resize", [ts("float", [1, 1, "H"]), None, np.array([1, 1, 0.7], np.float32)], opset=13)
    d = res.shape("y0")[2]
    assert d.exactness is not Exactness.EXACT


def test_resize_sizes_and_axes():
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), None, None, np.array([5, 6], np.int64)],
                     {"axes": [2, 3]}, opset=18)
    assert exprs(res, "y0") == ("N", "C", 5, 6)
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), None, None, ts("int64", [4])], opset=13)
    assert exprs(res, "y0")[:0] == () and len(res.shape("y0")) == 4
    assert res.shape("y0")[0].exactness is not Exactness.EXACT


def test_resize_opset10_and_upsample():
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), np.array([1, 1, 2, 3], np.float32)], opset=10)
    assert exprs(res, "y0") == ("N", "C", "2 * H", "3 * W")
    res = infer_node("Upsample", [ts("float", ["N", "C", "H", "W"]), np.array([1, 1, 2, 2], np.float32)], opset=9)
    assert exprs(res, "y0") == ("N", "C", "2 * H", "2 * W")
    res = infer_node("Upsample", [ts("float", ["N", "C", "H", "W"])], {"scales": [1.0, 1.0, 2.0, 2.0]}, opset=7)
    assert exprs(res, "y0") == ("N", "C", "2 * H", "2 * W")


def test_depth_to_space_and_space_to_depth_constraints():
    res = infer_node("DepthToSpace", [ts("float", ["N", "C", "H", "W"])], {"blocksize": 2})
    assert exprs(res, "y0") == ("N", "C // 4", "2 * H", "2 * W")
    assert any(c.provenance.rule == "depthtospace.channels" for c in res.constraints)
    bad = infer_node("DepthToSpace", [ts("float", [1, 6, 2, 2])], {"blocksize": 2})
    assert bad.conflicts and "node" in bad.conflicts[0].nodes
    res = infer_node("SpaceToDepth", [ts("float", ["N", 3, "H", "W"])], {"blocksize": 2})
    assert exprs(res, "y0") == ("N", 12, "H // 2", "W // 2")
    bad = infer_node("SpaceToDepth", [ts("float", [1, 3, 5, 4])], {"blocksize": 2})
    assert bad.conflicts and "spacetodepth.spatial" in bad.conflicts[0].explain()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=2),
       st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 0.25, 0.75, 0.7, 1.3, 2.5]), min_size=2, max_size=2),
       st.sampled_from([11, 13, 19]), st.sampled_from(["nearest", "linear"]))
def test_resize_scales_matches_onnxruntime(hw, scales, opset, mode):
    x_shape = (1, 2) + tuple(hw)
    sc = np.array([1.0, 1.0] + scales, np.float32)
    extra = [EMPTY, sc] if opset == 11 else [None, sc]
    truth = ort_shape("Resize", x_shape, extra, {"mode": mode}, opset=opset)
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"])] + extra, {"mode": mode}, opset=opset)
    got = res.evaluate({"N": 1, "C": 2, "H": hw[0], "W": hw[1]})["y0"]
    for g, t, d in zip(got, truth, res.shape("y0")):
        if d.exactness is Exactness.EXACT:
            assert g == t
        else:      # a bounded data symbol: the runtime size must respect the bound
            from smtshape import expr as E
            assert d.bound is not None
            assert t <= E.evaluate(d.bound, {"N": 1, "C": 2, "H": hw[0], "W": hw[1]})
    # and with static input dims every dim is computed exactly the onnxruntime way
    res_static = infer_node("Resize", [ts("float", list(x_shape))] + extra, {"mode": mode}, opset=opset)
    assert exprs(res_static, "y0") == truth


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_depth_space_match_onnxruntime(b, h, w, c):
    x = (1, c * b * b, h, w)
    res = infer_node("DepthToSpace", [ts("float", ["N", "C", "H", "W"])], {"blocksize": b})
    assert res.evaluate({"N": 1, "C": x[1], "H": h, "W": w})["y0"] == \
        ort_shape("DepthToSpace", x, [], {"blocksize": b})
    x2 = (1, c, h * b, w * b)
    res = infer_node("SpaceToDepth", [ts("float", ["N", "C", "H", "W"])], {"blocksize": b})
    assert res.evaluate({"N": 1, "C": c, "H": x2[2], "W": x2[3]})["y0"] == \
        ort_shape("SpaceToDepth", x2, [], {"blocksize": b})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=2), st.lists(st.integers(1, 12), min_size=2, max_size=2),
       st.sampled_from(["not_larger", "not_smaller"]))
def test_keep_aspect_ratio_symbolic_input_is_a_sound_upper_bound(hw, sizes, policy):
    # symbolic H, W with constant sizes: an upper bound (sizes[a] for not_larger,
    # in[a] * max(sizes) + rounding slack for not_smaller) that onnxruntime never exceeds
    sz = np.array(sizes, np.int64)
    attrs = {"axes": [2, 3], "keep_aspect_ratio_policy": policy}
    res = infer_node("Resize", [ts("float", ["N", "C", "H", "W"]), None, None, sz], attrs, opset=19)
    d = res.shape("y0")
    assert d[0].exactness is Exactness.EXACT and d[1].exactness is Exactness.EXACT
    assert all(x.exactness is Exactness.UPPER_BOUND for x in d[2:])
    truth = ort_shape("Resize", [1, 1] + hw, [EMPTY, EMPTY, sz], attrs)
    env = {"N": 1, "C": 1, "H": hw[0], "W": hw[1]}
    for a in (2, 3):
        bound = d[a].bound if isinstance(d[a].bound, int) else int(d[a].bound.xreplace(
            {s: env[s.name] for s in d[a].bound.free_symbols}))
        assert truth[a] <= bound
        if policy == "not_larger":
            assert bound == sizes[a - 2]
    # the static path stays exact and equal to onnxruntime
    res = infer_node("Resize", [ts("float", [1, 1] + hw), None, None, sz], attrs, opset=19)
    assert exprs(res, "y0") == truth
