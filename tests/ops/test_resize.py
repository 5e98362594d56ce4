"""Resize / Upsample / DepthToSpace / SpaceToDepth rules and property tests
against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

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
    # float32(0.7) * 10 rounds to 7.0 in float32; the exact product floors to 6 (the spec's
    # floor(H * scale), ONNX's inference in double): the size is 6 or 7, never EXACT one way
    res = infer_node("Resize", [ts("float", [1, 1, 10]), None, np.array([1, 1, 0.7], np.float32)], opset=13)
    d = res.shape("y0")[2]
    assert d.exactness is Exactness.UPPER_BOUND and d.bound == 7
    assert res.prove("y0[2] >= 6").name == "PROVEN"
    assert ort_shape("Resize", (1, 1, 10), [None, np.array([1, 1, 0.7], np.float32)]) == (1, 1, 7)
    # where float32 and the exact product agree, the size is exact
    res = infer_node("Resize", [ts("float", [1, 1, 10]), None, np.array([1, 1, 0.5], np.float32)], opset=13)
    assert exprs(res, "y0") == (1, 1, 5)


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
    # with static input dims a dim is exact where onnxruntime's float32 product and the exact
    # floor agree, else a data symbol bounded by the larger (onnxruntime's is one of the two)
    res_static = infer_node("Resize", [ts("float", list(x_shape))] + extra, {"mode": mode}, opset=opset)
    for d, t in zip(res_static.shape("y0"), truth):
        assert d.expr == t if d.exactness is Exactness.EXACT else t <= d.bound


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


# ---------------------------------------------------------------- preconditions (conflicts)
def conflict_rules(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


F = np.float32
X4 = [1, 1, 4, 4]
RESIZE_BAD = [
    # (op, extra inputs after X, attrs, opset, rule)
    ("Resize", [None, np.array([1, 1, 2, 2], F), np.array([1, 1, 8, 8], np.int64)], {}, 13, "resize.scales_sizes"),
    ("Resize", [EMPTY, EMPTY], {}, 11, "resize.scales_sizes"),
    ("Resize", [None, np.array([1, 1, 0, 2], F)], {}, 13, "resize.scales"),
    ("Resize", [None, np.array([1, 1, -1, 2], F)], {}, 13, "resize.scales"),
    ("Resize", [None, np.array([1, 2, 2], F)], {}, 13, "resize.scales"),
    ("Resize", [np.array([1, 1, 2], F)], {}, 10, "resize.scales"),
    ("Resize", [None, None, np.array([1, 8, 8], np.int64)], {}, 13, "resize.sizes"),
    ("Resize", [None, None, np.array([1, 1, -1, 8], np.int64)], {}, 13, "resize.sizes"),
    ("Resize", [None, None, np.array([8, 8, 8], np.int64)], {"axes": [2, 3]}, 18, "resize.sizes"),
    ("Resize", [None, np.array([1, 1, 2, 2], F)], {"mode": "foo"}, 13, "resize.mode"),
    ("Resize", [None, np.array([1, 1, 2, 2], F)], {"coordinate_transformation_mode": "foo"}, 13,
     "resize.coordinate_transformation_mode"),
    ("Resize", [None, np.array([1, 1, 2, 2], F)], {"nearest_mode": "foo"}, 13, "resize.nearest_mode"),
    ("Resize", [None, None, np.array([1, 1, 8, 8], np.int64)], {"keep_aspect_ratio_policy": "foo"}, 18,
     "resize.keep_aspect_ratio_policy"),
    ("Resize", [None, np.array([1, 1, 2, 2], F)], {"keep_aspect_ratio_policy": "not_larger"}, 18,
     "resize.keep_aspect_ratio_policy"),
    ("Resize", [np.zeros(3, F), np.array([1, 1, 2, 2], F)], {"coordinate_transformation_mode": "tf_crop_and_resize"},
     13, "resize.roi"),
    ("Resize", [None, np.array([2, 2], F)], {"axes": [2, 2]}, 18, "axis.unique"),
    ("Upsample", [np.array([1, 1, 0.5, 2], F)], {}, 9, "upsample.scales"),
]


@pytest.mark.parametrize("op,extra,attrs,opset,rule", RESIZE_BAD,
                         ids=[f"{c[0]}-{c[4]}-{i}" for i, c in enumerate(RESIZE_BAD)])
def test_resize_precondition_is_a_conflict(op, extra, attrs, opset, rule):
    res = infer_node(op, [ts("float", X4)] + extra, attrs, opset=opset)
    assert refused(res) and rule in conflict_rules(res), conflict_rules(res)
    assert not unchecked(res)
    # and onnxruntime (or onnx's full check) refuses the same model
    m = node_model(op, [ts("float", X4)] + extra, attrs, opset=opset)
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception:
        return
    with pytest.raises(Exception):
        run_onnxruntime(m, {"x0": np.zeros(X4, F)})


def test_resize_11_with_both_scales_and_sizes_is_left_to_the_runtime():
    # ONNX's inference refuses both from opset 13; Resize-11 with both runs in onnx's reference
    res = infer_node("Resize", [ts("float", X4), EMPTY, ts("float", [4]), np.array([1, 1, 8, 8], np.int64)], opset=11)
    assert not refused(res) and exprs(res, "y0") == (1, 1, 8, 8)


DEPTH_BAD = [
    ("DepthToSpace", [1, 4, 2, 2], {"blocksize": 0}, "depthtospace.blocksize"),
    ("DepthToSpace", [1, 4, 2, 2, 1], {"blocksize": 2}, "depthtospace.rank"),
    ("DepthToSpace", [1, 4, 2, 2], {"blocksize": 2, "mode": "XYZ"}, "depthtospace.mode"),
    ("DepthToSpace", [1, 6, 2, 2], {"blocksize": 2}, "depthtospace.channels"),
    ("SpaceToDepth", [1, 3, 5, 4], {"blocksize": 2}, "spacetodepth.spatial"),
    ("SpaceToDepth", [1, 3, 4, 4], {"blocksize": -1}, "spacetodepth.blocksize"),
    ("SpaceToDepth", [1, 3, 4], {"blocksize": 2}, "spacetodepth.rank"),
]


@pytest.mark.parametrize("op,shape,attrs,rule", DEPTH_BAD, ids=[f"{c[0]}-{c[3]}" for c in DEPTH_BAD])
def test_depth_space_precondition_is_a_conflict(op, shape, attrs, rule):
    res = infer_node(op, [ts("float", shape)], attrs, opset=13)
    assert refused(res) and rule in conflict_rules(res), conflict_rules(res)
    m = node_model(op, [ts("float", shape)], attrs, opset=13)
    with pytest.raises(Exception):
        run_onnxruntime(m, {"x0": np.zeros(shape, F)})


def test_depth_to_space_symbolic_channels_are_a_requirement():
    res = infer_node("DepthToSpace", [ts("float", ["N", "C", "H", "W"])], {"blocksize": 3})
    assert not refused(res)
    (c,) = [c for c in res.constraints if c.provenance.rule == "depthtospace.channels"]
    assert "C % 9" in str(c.relation)


@pytest.mark.parametrize("policy,dims,sizes", [("not_larger", [16777217, 16777217], [16777217, 16777217]),
                                               ("not_smaller", [16777217, 16777217], [16777217, 16777217]),
                                               ("not_larger", [16777217], [33554434])])
def test_keep_aspect_ratio_float32_and_double_disagree(policy, dims, sizes):
    # ONNX's inference computes the scale in double (16777217); onnxruntime in float32 (16777216):
    # the size is one of the two, never EXACT one way
    axes = list(range(2, 2 + len(dims)))
    res = infer_node("Resize", [ts("float", [1, 1] + dims), None, None, np.array(sizes, np.int64)],
                     {"axes": axes, "keep_aspect_ratio_policy": policy}, opset=19)
    for a, want in zip(axes, sizes):
        d = res.shape("y0")[a]
        assert d.exactness is Exactness.UPPER_BOUND and d.bound == want
        assert res.prove(f"y0[{a}] >= {want - 2}").name == "PROVEN"


def test_backend_node_tests():
    """ONNX's backend node tests (valid models): no conflict, no unchecked node, every EXACT
    dim right (as-is and with their integer inputs as constants)."""
    import smtshape
    from .onnx_node_cases import _strip, cases, check_all
    ops = ("Resize", "Upsample", "DepthToSpace", "SpaceToDepth")
    results = check_all(*ops, min_cases=40)
    assert all(known == 1 for known, _, _ in results.values())
    for tc in cases(*ops):
        assert not unchecked(smtshape.analyze(_strip(tc.model, tc.data_sets[0][0], True))), tc.name
