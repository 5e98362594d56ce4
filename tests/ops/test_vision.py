"""GridSample, AffineGrid, RoiAlign, MaxRoiPool, Col2Im, CenterCropPad, DeformConv, ImageDecoder,
ReverseSequence rules, against onnxruntime and ONNX's backend node tests."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import smtshape.ops.vision  # noqa: F401
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

from .onnx_node_cases import cases, check_all

VISION_OPS = ("GridSample", "AffineGrid", "RoiAlign", "MaxRoiPool", "Col2Im", "CenterCropPad", "DeformConv",
              "ImageDecoder", "ReverseSequence")


def conflict_rules(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


def rnd(shape):
    return np.random.rand(*shape).astype(np.float32)




def names(shape, prefix):
    return [f"{prefix}{i}" for i in range(len(shape))]


def vs_ort(op, shapes, consts, attrs, opset, dtypes=None, ort_opset=None):
    """Inputs: graph inputs of ``shapes`` (symbolic in the analysis: one name per dim), then
    ``consts`` (known tensors).  Checks the evaluated analysis equals onnxruntime's shape."""
    dtypes = dtypes or ["float"] * len(shapes)
    sym = [ts(dt, names(s, f"a{k}_")) for k, (s, dt) in enumerate(zip(shapes, dtypes))]
    res = infer_node(op, sym + list(consts), attrs, opset=opset)
    assert not res.conflicts, res.conflicts
    bind = {n: d for k, s in enumerate(shapes) for n, d in zip(names(s, f"a{k}_"), s)}
    got = res.evaluate(bind)["y0"]
    conc = [ts(dt, list(s)) for s, dt in zip(shapes, dtypes)]
    feeds = {f"x{k}": (rnd(s) if dt == "float" else np.zeros(s, np.int64))
             for k, (s, dt) in enumerate(zip(shapes, dtypes))}
    model = node_model(op, conc + list(consts), attrs, opset=ort_opset or opset)
    truth = run_onnxruntime(model, feeds)[0]
    assert got == truth.shape
    return res


def test_backend_node_tests():
    results = check_all(*VISION_OPS, min_cases=40)
    for name, (known, exact, total) in results.items():
        assert known == 1, name
        # every dim exact except a decoded image's height and width
        assert exact == (total - 2 if "image_decoder" in name else total), (name, exact)


# ------------------------------------------------------------ GridSample
@pytest.mark.parametrize("x,g,opset", [
    ([2, 3, 5, 6], [2, 4, 7, 2], 16), ([1, 1, 1, 1], [1, 1, 1, 2], 16), ([0, 3, 5, 6], [0, 2, 2, 2], 16),
    ([1, 2, 4, 5, 6], [1, 3, 2, 4, 3], 20), ([2, 3, 5, 6], [2, 1, 9, 2], 22), ([1, 2, 3, 4], [1, 0, 3, 2], 20)])
def test_gridsample_vs_onnxruntime(x, g, opset):
    res = vs_ort("GridSample", [x, g], [], {}, opset)
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y0"))


def test_gridsample_constraints():
    res = infer_node("GridSample", [ts("float", ["N", "C", "H", "W"]), ts("float", ["M", "Ho", "Wo", "K"])])
    assert exprs(res, "y0") == ("N", "C", "Ho", "Wo")
    assert res.prove("M == N and K == 2").name == "PROVEN"
    res = infer_node("GridSample", [ts("float", ["N", 3, 4, 5, 6]), ts("float", ["N", 2, 2, 2, 2])], opset=20)
    assert res.conflicts and "node" in res.conflicts[0].nodes          # 3-D grid needs 3 coordinates
    res = infer_node("GridSample", [ts("float", ["N", 3, 4, 5, 6]), ts("float", ["N", 2, 2, 2, 3])], opset=16)
    assert res.shape("y0") is None and refused(res)                   # opset 16 is 2-D only
    assert conflict_rules(res) == {"gridsample.rank"}


# ------------------------------------------------------------ AffineGrid
@pytest.mark.parametrize("theta,size", [
    ([2, 2, 3], [2, 3, 4, 5]), ([1, 3, 4], [1, 1, 2, 3, 4]), ([1, 2, 3], [1, 1, 1, 1]), ([3, 2, 3], [3, 2, 1, 7])])
def test_affine_grid_vs_onnxruntime(theta, size):
    vs_ort("AffineGrid", [theta], [np.array(size, np.int64)], {}, 20)


def test_affine_grid_runtime_size():
    res = infer_node("AffineGrid", [ts("float", ["N", 2, 3]), ts("int64", [4])], opset=20)
    s = res.shape("y0")
    assert str(s[0]) == "N" and s[3].expr == 2
    assert s[1].exactness is Exactness.UNKNOWN and s[2].exactness is Exactness.UNKNOWN
    res = infer_node("AffineGrid", [ts("float", [2, 2, 3]), np.array([3, 1, 4, 4], np.int64)], opset=20)
    assert res.conflicts


# ------------------------------------------------------------ RoiAlign, MaxRoiPool
@pytest.mark.parametrize("r", [0, 1, 4])
@pytest.mark.parametrize("opset", [10, 16, 22])
def test_roi_align_vs_onnxruntime(r, opset):
    attrs = {"output_height": 2, "output_width": 3}
    # onnxruntime has no RoiAlign-22 kernel: it runs the (shape-identical) opset-16 op
    vs_ort("RoiAlign", [[2, 3, 8, 8], [r, 4], [r]], [], attrs, opset, ["float", "float", "int64"], min(opset, 16))


def test_roi_align_constraints():
    res = infer_node("RoiAlign", [ts("float", ["N", "C", "H", "W"]), ts("float", ["R", "F"]), ts("int64", ["Q"])],
                     {"output_height": 7, "output_width": 5}, opset=16)
    assert exprs(res, "y0") == ("R", "C", 7, 5)
    assert res.prove("F == 4 and Q == R").name == "PROVEN"


@pytest.mark.parametrize("r", [1, 3])
def test_max_roi_pool_vs_onnxruntime(r):
    rois = np.array([[0, 1, 1, 4, 4]] * r, np.float32)
    x = [2, 3, 8, 8]
    res = infer_node("MaxRoiPool", [ts("float", names(x, "x")), rois], {"pooled_shape": [2, 3]})
    truth = run_onnxruntime(node_model("MaxRoiPool", [ts("float", x), rois], {"pooled_shape": [2, 3]}),
                            {"x0": rnd(x)})[0]
    assert res.evaluate(dict(zip(names(x, "x"), x)))["y0"] == truth.shape
    res = infer_node("MaxRoiPool", [ts("float", ["N", "C", "H", "W"]), ts("float", ["R", "F"])],
                     {"pooled_shape": [4, 4]}, opset=22)
    assert exprs(res, "y0") == ("R", "C", 4, 4) and res.prove("F == 5").name == "PROVEN"


# ------------------------------------------------------------ Col2Im
@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2),
                          st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=3),
       st.integers(1, 2), st.integers(0, 2))
def test_property_col2im_vs_onnxruntime(axes, c, n):
    img = [a[0] for a in axes]
    blk = [min(a[1], a[0]) for a in axes]
    strides, dil = [a[2] for a in axes], [a[3] for a in axes]
    pads = [a[4] for a in axes] + [a[5] for a in axes]
    nblocks = 1
    for h, k, s, d, pb, pe in zip(img, blk, strides, dil, pads[:len(img)], pads[len(img):]):
        span = h + pb + pe - (d * (k - 1) + 1)
        if span < 0:
            return
        nblocks *= span // s + 1
    attrs = {"strides": strides, "dilations": dil, "pads": pads}
    consts = [np.array(img, np.int64), np.array(blk, np.int64)]
    vs_ort("Col2Im", [[n, c * int(np.prod(blk)), nblocks]], consts, attrs, 18)


def test_col2im_symbolic_and_constraints():
    res = infer_node("Col2Im", [ts("float", ["N", "K", "L"]), np.array([5, 6], np.int64), np.array([2, 3], np.int64)])
    assert exprs(res, "y0") == ("N", "K // 6", 5, 6)
    assert res.prove("L == 16").name == "PROVEN"        # 4 * 4 blocks
    assert res.prove("K % 6 == 0").name == "PROVEN"
    res = infer_node("Col2Im", [ts("float", [1, 12, 7]), np.array([5, 6], np.int64), np.array([2, 3], np.int64)])
    assert res.conflicts and "node" in res.conflicts[0].nodes


# ------------------------------------------------------------ CenterCropPad
@pytest.mark.parametrize("x,shape,axes", [
    ([4, 5, 6], [3, 8], [0, -1]), ([4, 5, 6], [1, 1, 1], None), ([2, 3], [0, 5], None), ([0, 3], [2], [0]),
    ([7, 2, 9], [9, 7], [2, 0])])
def test_center_crop_pad_vs_onnxruntime(x, shape, axes):
    attrs = {} if axes is None else {"axes": axes}
    vs_ort("CenterCropPad", [x], [np.array(shape, np.int64)], attrs, 18)


def test_center_crop_pad_runtime_shape():
    res = infer_node("CenterCropPad", [ts("float", ["H", "W", "C"]), ts("int64", [2])], {"axes": [0, 1]})
    s = res.shape("y0")
    assert [d.exactness for d in s] == [Exactness.UNKNOWN, Exactness.UNKNOWN, Exactness.EXACT]
    res = infer_node("CenterCropPad", [ts("float", ["H", "W", "C"]), np.array([1, 2, 3], np.int64)], {"axes": [0, 1]})
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"centercroppad.shape"}


# ------------------------------------------------------------ DeformConv
@pytest.mark.parametrize("x,w,attrs,mask,bias", [
    ([1, 2, 5, 5], [3, 2, 3, 3], {}, False, False),
    ([2, 4, 7, 6], [6, 2, 3, 2], {"group": 2, "offset_group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1]}, True, True),
    ([1, 1, 4, 4], [1, 1, 2, 2], {"dilations": [2, 1]}, True, False),
    ([1, 1, 1, 1], [2, 1, 1, 1], {}, False, True)])
def test_deform_conv_vs_onnxruntime(x, w, attrs, mask, bias):
    og = attrs.get("offset_group", 1)
    s, d, p = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1]), attrs.get("pads", [0, 0, 0, 0])
    out = [(x[2 + i] + p[i] + p[2 + i] - (d[i] * (w[2 + i] - 1) + 1)) // s[i] + 1 for i in range(2)]
    k = w[2] * w[3]
    shapes = [x, w, [x[0], og * k * 2, *out]] + ([[w[0]]] if bias else [])
    if mask:
        shapes += [[x[0], og * k, *out]]
    sym = [ts("float", names(sh, f"a{j}_")) for j, sh in enumerate(shapes)]
    conc = [ts("float", sh) for sh in shapes]
    if mask and not bias:
        sym.insert(3, None)
        conc.insert(3, None)
    res = infer_node("DeformConv", sym, attrs, opset=19)
    assert not res.conflicts
    bind = {n: v for j, sh in enumerate(shapes) for n, v in zip(names(sh, f"a{j}_"), sh)}
    feeds = {f"x{j}": rnd(c.shape) for j, c in enumerate(conc) if c is not None}
    truth = run_onnxruntime(node_model("DeformConv", conc, attrs, opset=19), feeds)[0]
    assert res.evaluate(bind)["y0"] == truth.shape


def test_deform_conv_constraints():
    res = infer_node("DeformConv", [ts("float", ["N", "C", "H", "W"]), ts("float", [8, 4, 3, 3]),
                                    ts("float", ["N", "K", "P", "Q"])], {"pads": [1, 1, 1, 1]}, opset=22)
    assert exprs(res, "y0")[:2] == ("N", 8)
    assert res.prove("C == 4 and K == 18 and P == H and Q == W").name == "PROVEN"
    res = infer_node("DeformConv", [ts("float", [1, 2, 5, 5]), ts("float", [3, 2, 3, 3]),
                                    ts("float", [1, 18, 2, 2])], opset=19)
    assert res.conflicts


# ------------------------------------------------------------ ImageDecoder
def test_image_decoder_vs_backend_outputs():
    """ONNX's decoded test images (JPEG, PNG, BMP, ...) in each pixel format: the channel
    count is exact, height and width are distinct run-time symbols."""
    seen = set()
    for tc in cases("ImageDecoder"):
        node = tc.model.graph.node[0]
        fmt = next((a.s.decode() for a in node.attribute if a.name == "pixel_format"), "RGB")
        (data,), (want,) = tc.data_sets[0]
        res = infer_node("ImageDecoder", [ts("uint8", ["B"])], {"pixel_format": fmt}, opset=20)
        s = res.shape("y0")
        assert s[2].expr == want.shape[2] == {"RGB": 3, "BGR": 3, "Grayscale": 1}[fmt]
        assert s[0].exactness is Exactness.UNKNOWN and s[1].exactness is Exactness.UNKNOWN
        assert s[0].expr != s[1].expr
        assert str(res.dtype("y0")).endswith("UINT8")
        seen.add(fmt)
    assert seen == {"RGB", "BGR", "Grayscale"}
    res = infer_node("ImageDecoder", [ts("uint8", ["B"])], {"pixel_format": "CMYK"}, opset=20)
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"imagedecoder.pixel_format"}


# ------------------------------------------------------------ ReverseSequence
@pytest.mark.parametrize("x,batch_axis", [([4, 3, 2], 1), ([3, 4], 0), ([1, 1], 1), ([5, 0, 2], 1)])
@pytest.mark.parametrize("opset", [10, 28])
def test_reverse_sequence_vs_onnxruntime(x, batch_axis, opset):
    attrs = {"batch_axis": batch_axis, "time_axis": 1 - batch_axis}
    sym = [ts("float", names(x, "x")), np.full([x[batch_axis]], 1, np.int64)]
    res = infer_node("ReverseSequence", sym, attrs, opset=opset)
    assert not res.conflicts
    truth = run_onnxruntime(node_model("ReverseSequence", [ts("float", x), sym[1]], attrs, opset=10),
                            {"x0": rnd(x)})[0]
    assert res.evaluate(dict(zip(names(x, "x"), x)))["y0"] == truth.shape


def test_reverse_sequence_constraints():
    res = infer_node("ReverseSequence", [ts("float", ["T", "B", "D"]), ts("int64", ["S"])], opset=10)
    assert exprs(res, "y0") == ("T", "B", "D") and res.prove("S == B").name == "PROVEN"
    res = infer_node("ReverseSequence", [ts("float", [4, 3]), ts("int64", [4])], opset=10)
    assert res.conflicts
    res = infer_node("ReverseSequence", [ts("float", [4, 3]), ts("int64", [4])], {"batch_axis": 1, "time_axis": 1})
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"reversesequence.axes"}


# ------------------------------------------------------------ sizes from shape arithmetic
@pytest.mark.parametrize("shape", [[2, 3, 4, 5], [1, 1, 1, 1], [3, 2, 7, 1]])
def test_affine_grid_size_from_shape(shape):
    """The exporters' pattern affine_grid(theta, x.size()): Shape(x) feeds AffineGrid."""
    from onnx import TensorProto, helper

    import smtshape

    def mk(xs, ts_):
        nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("AffineGrid", ["theta", "s"], ["y"])]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
                                           helper.make_tensor_value_info("theta", TensorProto.FLOAT, ts_)],
                              [helper.make_value_info("y", helper.TypeProto())])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=8)

    res = smtshape.analyze(mk(["N", "C", "H", "W"], ["B", 2, 3]))
    assert exprs(res, "y") == ("N", "H", "W", 2) and res.prove("B == N").name == "PROVEN"
    truth = run_onnxruntime(mk(shape, [shape[0], 2, 3]), {"x": rnd(shape), "theta": rnd([shape[0], 2, 3])})[0]
    assert res.evaluate(dict(zip("NCHW", shape)))["y"] == truth.shape


# ------------------------------------------------------------ preconditions (conflicts)
F, I64 = np.float32, np.int64
VISION_BAD = [
    # (op, inputs: shape lists are float graph inputs, arrays initializers, attrs, opset, rule, ort refuses)
    ("GridSample", [[1, 1, 4, 4], [1, 3, 3, 2]], {"mode": "linear"}, 16, "gridsample.mode", True),
    ("GridSample", [[1, 1, 4, 4], [1, 3, 3, 2]], {"mode": "bilinear"}, 20, "gridsample.mode", True),
    ("GridSample", [[1, 1, 4, 4], [1, 3, 3, 2]], {"padding_mode": "foo"}, 20, "gridsample.padding_mode", True),
    ("GridSample", [[1, 1, 4, 4], [1, 3, 2]], {}, 20, "gridsample.rank", True),
    ("GridSample", [[1, 4], [1, 4]], {}, 20, "gridsample.rank", True),
    ("AffineGrid", [[1, 2, 3], np.array([1, 1, 4], I64)], {}, 20, "affinegrid.size", True),
    ("AffineGrid", [[1, 2], np.array([1, 1, 4, 4], I64)], {}, 20, "affinegrid.theta", True),
    ("AffineGrid", [[1, 2, 3], np.array([1, 1, -4, 4], I64)], {}, 20, "affinegrid.size", True),
    ("RoiAlign", [[1, 1, 4, 4], [2, 4], np.zeros(2, I64)], {"mode": "foo"}, 16, "roialign.mode", True),
    ("RoiAlign", [[1, 1, 4, 4], [2, 4], np.zeros(2, I64)], {"sampling_ratio": -1}, 16, "roialign.sampling_ratio",
     True),
    ("RoiAlign", [[1, 1, 4, 4], [2, 4], np.zeros(2, I64)], {"output_height": -1}, 16, "roialign.output_size", True),
    ("RoiAlign", [[1, 1, 4], [2, 4], np.zeros(2, I64)], {}, 16, "roialign.rank", True),
    ("MaxRoiPool", [[1, 1, 4, 4], [2, 5]], {"pooled_shape": [2, 0]}, 22, "maxroipool.pooled_shape", True),
    ("MaxRoiPool", [[1, 1, 4, 4], [2, 5]], {"pooled_shape": [2]}, 22, "maxroipool.pooled_shape", True),
    ("Col2Im", [[1, 4, 9], np.array([4, 4], I64), np.array([0, 2], I64)], {}, 18, "col2im.block_shape", True),
    ("Col2Im", [[1, 4, 9], np.array([4, 4], I64), np.array([2, 2, 1], I64)], {}, 18, "col2im.block_shape", True),
    ("Col2Im", [[1, 4, 9], np.array([4, 4], I64), np.array([2, 2], I64)], {"strides": [0, 1]}, 18,
     "col2im.strides", True),
    ("Col2Im", [[1, 4, 9], np.array([4, 4], I64), np.array([2, 2], I64)], {"pads": [0, 0, 0]}, 18, "col2im.pads",
     True),
    ("Col2Im", [[1, 4, 0], np.array([1, 1], I64), np.array([2, 2], I64)], {}, 18, "col2im.window", True),
    ("Col2Im", [[1, 4, 9, 1], np.array([4, 4], I64), np.array([2, 2], I64)], {}, 18, "col2im.rank", True),
    ("CenterCropPad", [[3, 4], np.array([2, 6, 1], I64)], {}, 18, "centercroppad.shape", True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2, 2), F), [1, 8, 3, 3]], {"group": 0}, 19, "deformconv.group",
     True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2, 2), F), [1, 8, 3, 3]], {"offset_group": 0}, 19,
     "deformconv.offset_group", True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2), F), [1, 8, 3, 3]], {}, 19, "deformconv.weight_rank", True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2, 2), F), [1, 8, 3, 3]], {"strides": [0, 1]}, 19,
     "deformconv.strides", True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2, 2), F), [1, 8, 3, 3]], {"pads": [-1, 0, 0, 0]}, 19,
     "deformconv.pads", True),
    ("DeformConv", [[1, 1, 1, 1], np.zeros((1, 1, 5, 5), F), [1, 50, 0, 0]], {"strides": [2, 2]}, 19,
     "deformconv.output_size", True),
    ("DeformConv", [[1, 1, 4, 4], np.zeros((1, 1, 2, 2), F), [1, 8, 3]], {}, 19, "deformconv.offset", True),
    ("ReverseSequence", [[3, 2, 4], np.array([1, 1, 1], I64)], {"batch_axis": 0, "time_axis": 2}, 10,
     "reversesequence.axes", True),
    ("ReverseSequence", [[3], np.array([1], I64)], {}, 10, "reversesequence.rank", True),
    ("ReverseSequence", [[3, 2], np.array([[1, 1]], I64)], {}, 10, "reversesequence.rank", True),
]


@pytest.mark.parametrize("op,ins,attrs,opset,rule,ort", VISION_BAD,
                         ids=[f"{c[0]}-{c[4]}-{i}" for i, c in enumerate(VISION_BAD)])
def test_vision_precondition_is_a_conflict(op, ins, attrs, opset, rule, ort):
    inputs = [ts("float", s) if isinstance(s, list) else s for s in ins]
    res = infer_node(op, inputs, attrs, opset=opset)
    assert refused(res) and rule in conflict_rules(res), conflict_rules(res)
    assert not unchecked(res)
    if ort:     # the same model is refused by onnxruntime (or its shape inference)
        feeds = {f"x{k}": rnd(s) for k, s in enumerate(ins) if isinstance(s, list)}
        with pytest.raises(Exception):
            run_onnxruntime(node_model(op, inputs, attrs, opset=opset), feeds)


@pytest.mark.parametrize("x,w,off,attrs", [
    ([1, 1, 1, 1], [1, 1, 2, 2], [1, 8, 0, 0], {}),                    # a kernel larger than the input: 0
    ([1, 1, 3, 1], [1, 1, 4, 1], [1, 8, 1, 1], {"strides": [3, 1]}),   # -s < a < 0: 1 + trunc(-1 / 3) = 1
    ([1, 1, 2, 2], [1, 1, 3, 3], [1, 18, 0, 0], {}),
])
def test_deform_conv_window_larger_than_the_input_matches_onnxruntime(x, w, off, attrs):
    wv, ov = np.zeros(w, F), np.zeros(off, F)
    res = infer_node("DeformConv", [ts("float", x), wv, ts("float", off)], attrs, opset=19)
    assert not refused(res) and not unchecked(res)
    truth = run_onnxruntime(node_model("DeformConv", [ts("float", x), wv, ts("float", off)], attrs, opset=19),
                            {"x0": rnd(x), "x2": rnd(off)})[0].shape
    assert exprs(res, "y0") == truth
    sym = infer_node("DeformConv", [ts("float", ["N", "C", "H", "W"]), wv, ts("float", ["N", "K", "A", "B"])],
                     attrs, opset=19)
    assert sym.evaluate({"N": x[0], "C": x[1], "H": x[2], "W": x[3], "K": off[1], "A": off[2], "B": off[3]})["y0"] \
        == truth


def test_roi_align_zero_output_size_runs():
    # onnxruntime runs output_height 0 (an empty output); only a negative size is refused
    attrs = {"output_height": 0}
    res = infer_node("RoiAlign", [ts("float", [1, 1, 4, 4]), ts("float", [2, 4]), np.zeros(2, I64)], attrs, opset=16)
    assert not refused(res) and exprs(res, "y0") == (2, 1, 0, 1)
