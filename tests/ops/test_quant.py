"""QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear rules, against onnxruntime."""
import numpy as np
import onnx_ir as ir
import pytest
from hypothesis import given, settings, strategies as st

from smtshape import analyze
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked




def fx(*shape):
    return np.asarray(np.random.rand(*shape), dtype=np.float32)


def run_check(op, inputs, attrs, feeds, opset, bind):
    m = node_model(op, inputs, attrs, opset=opset, n_outputs=3 if op == "DynamicQuantizeLinear" else 1)
    res = analyze(m)
    assert not refused(res) and not unchecked(res)
    got = run_onnxruntime(m, feeds)
    ev = res.evaluate(bind)
    for k, a in enumerate(got):
        assert ev[f"y{k}"] == a.shape
        assert res.dtype(f"y{k}") == ir.DataType.from_numpy(a.dtype)
    return res


@pytest.mark.parametrize("opset", [10, 13, 19, 21, 23, 25])
@pytest.mark.parametrize("n,c", [(2, 3), (1, 1), (0, 4)])
def test_per_tensor(opset, n, c):
    x = fx(n, c)
    run_check("QuantizeLinear", [ts("float", ["N", "C"]), np.float32(0.1), np.uint8(3)], {}, {"x0": x}, opset,
              {"N": n, "C": c})
    q = (x * 10).astype(np.int8)
    res = run_check("DequantizeLinear", [ts("int8", ["N", "C"]), np.float32(0.1), np.int8(1)], {}, {"x0": q},
                    opset, {"N": n, "C": c})
    assert exprs(res, "y0") == ("N", "C")


@pytest.mark.parametrize("opset", [13, 21, 25])
def test_per_axis_pins_axis_dim(opset):
    for n in (1, 3):
        res = run_check("QuantizeLinear", [ts("float", ["N", "C", 2]), fx(5), np.zeros(5, np.int8)], {"axis": 1},
                        {"x0": fx(n, 5, 2)}, opset, {"N": n, "C": 5})
        assert exprs(res, "y0") == ("N", 5, 2) and res.specializations["C"] == 5
        res = run_check("DequantizeLinear", [ts("uint8", ["N", 4]), fx(4)], {"axis": -1},
                        {"x0": np.zeros((n, 4), np.uint8)}, opset, {"N": n})
        assert exprs(res, "y0") == ("N", 4)


def test_one_element_scale_is_per_tensor():
    res = run_check("QuantizeLinear", [ts("float", ["N", "C"]), fx(1), np.zeros(1, np.uint8)], {},
                    {"x0": fx(2, 7)}, 13, {"N": 2, "C": 7})
    assert not res.specializations


def test_symbolic_scale_length_is_axis_or_one():
    res = infer_node("DequantizeLinear", [ts("int8", ["N", "C"]), ts("float", ["S"]), ts("int8", ["Z"])],
                     {"axis": 1}, opset=13)
    assert res.prove("S == C or S == 1").name == "PROVEN"
    assert res.prove("Z == S").name == "PROVEN"


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_per_axis_length_mismatch_is_conflict(op):
    xt = "float" if op == "QuantizeLinear" else "uint8"
    res = infer_node(op, [ts(xt, [2, 5]), fx(4)], {"axis": 1}, opset=13)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_zero_point_shape_mismatch_is_conflict():
    res = infer_node("QuantizeLinear", [ts("float", [2, 5]), fx(5), np.zeros(4, np.uint8)], {"axis": 1}, opset=13)
    assert res.conflicts


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
@pytest.mark.parametrize("axis,block,k", [(1, 4, 6), (1, 2, 6), (0, 3, 4), (1, 4, 8), (1, 5, 3)])
def test_blocked_against_onnxruntime(op, axis, block, k):
    shape = [3, k]
    sshape = list(shape)
    sshape[axis] = -(-shape[axis] // block)
    if op == "QuantizeLinear":
        inputs = [ts("float", ["N", "K"]), fx(*sshape), np.zeros(sshape, np.uint8)]
        feeds = {"x0": fx(*shape)}
    else:
        inputs = [ts("uint8", ["N", "K"]), fx(*sshape), np.zeros(sshape, np.uint8)]
        feeds = {"x0": np.zeros(shape, np.uint8)}
    res = run_check(op, inputs, {"axis": axis, "block_size": block}, feeds, 21, {"N": 3, "K": k})
    # the constant scale pins the other axis; the blocked axis only to a range (ceil(d / B) == s)
    assert exprs(res, "y0")[1 - axis] == shape[1 - axis]
    assert exprs(res, "y0")[axis] == ("N", "K")[axis] or sshape[axis] * block == shape[axis] == block


def test_blocked_symbolic_relation():
    res = infer_node("DequantizeLinear", [ts("int8", ["N", "K"]), ts("float", ["N2", "S"])],
                     {"axis": 1, "block_size": 32}, opset=21)
    assert not res.conflicts
    assert res.prove("N2 == N").name == "PROVEN"
    assert res.prove("32 * S >= K").name == "PROVEN" and res.prove("32 * S < K + 32").name == "PROVEN"
    res = infer_node("DequantizeLinear", [ts("int8", ["N", "K"]), ts("float", ["N2", "S"])],
                     {"axis": 1, "block_size": 32}, opset=21, bind={"K": 65})
    assert res.static_value(res.shape("x1")[1]) == 3


def test_blocked_wrong_scale_is_conflict():
    """onnxruntime refuses block_size 3 with 6 columns and a 3-wide scale (ceil(6/3) = 2)."""
    res = infer_node("QuantizeLinear", [ts("float", [4, 6]), fx(4, 3), np.zeros((4, 3), np.uint8)],
                     {"axis": 1, "block_size": 3}, opset=21)
    assert res.conflicts
    res = infer_node("QuantizeLinear", [ts("float", [4, 6]), fx(5, 2)], {"axis": 1, "block_size": 3}, opset=21)
    assert res.conflicts


def rule_ids(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints if c.provenance.node}


def test_rank2_scale_without_block_size_is_a_conflict():
    m = node_model("DequantizeLinear", [ts("uint8", [4, 6]), fx(2, 6)], {"axis": 0}, opset=21)
    res = analyze(m)
    assert refused(res) and rule_ids(res) == {"dequantizelinear.scale"} and res.shape("y0") is None
    assert _ort_accepts(m, {"x0": np.zeros((4, 6), np.uint8)}) is None


@pytest.mark.parametrize("op,inputs,attrs,opset,rule", [
    # "If both output_dtype and y_zero_point are specified, output_dtype must be T3" (ONNX's
    # test_quantizelinear_zp_output_dtype_conflicted)
    ("QuantizeLinear", [ts("float", [2, 3]), np.float32(0.5), np.zeros((), np.uint16)], {"output_dtype": 22}, 25,
     "quantizelinear.output_dtype"),
    ("QuantizeLinear", [ts("float", [2, 3]), np.float32(0.5), np.zeros((), np.uint8)], {"output_dtype": 3}, 21,
     "quantizelinear.output_dtype"),
    # an output_dtype outside the output's type constraint
    ("QuantizeLinear", [ts("float", [2, 3]), np.float32(0.5)], {"output_dtype": 1}, 21, "quantizelinear.output_dtype"),
    ("DequantizeLinear", [ts("int8", [2, 3]), np.float32(0.5)], {"output_dtype": 6}, 23,
     "dequantizelinear.output_dtype"),
    ("QuantizeLinear", [ts("float", [2, 3]), np.float32(0.5)], {"block_size": -1}, 21, "quantizelinear.block_size"),
    ("DequantizeLinear", [ts("int8", [2, 4]), fx(4)], {"axis": 1, "block_size": 2}, 21, "dequantizelinear.block"),
    ("DequantizeLinear", [ts("int8", [2, 3]), fx(3), np.zeros((1, 3), np.int8)], {"axis": 1}, 13,
     "dequantizelinear.zero_point"),
])
def test_violated_preconditions_are_conflicts(op, inputs, attrs, opset, rule):
    m = node_model(op, inputs, attrs, opset=opset)
    res = analyze(m)
    assert refused(res) and rule_ids(res) == {rule} and not unchecked(res)
    x = np.ones((2, 3) if rule != "dequantizelinear.block" else (2, 4), np.float32 if op == "QuantizeLinear" else
                np.int8)
    assert _ort_accepts(m, {"x0": x}) is None        # onnxruntime refuses each


def test_dequantize_output_dtype_from_opset_23():
    res = infer_node("DequantizeLinear", [ts("int8", [2]), np.float32(1.0)], {"output_dtype": 10}, opset=23)
    assert res.dtype("y0") == ir.DataType.FLOAT16 and not refused(res)


def test_zero_point_of_unknown_type_leaves_the_output_type_unknown():
    m = node_model("QuantizeLinear", [ts("float", [2]), np.float32(1.0), ts("int8", [])], {}, opset=13)
    m.graph.input[1].type.tensor_type.elem_type = 0
    res = analyze(m)
    assert res.dtype("y0") != ir.DataType.UINT8


def test_output_dtypes():
    res = infer_node("QuantizeLinear", [ts("float", [2]), np.float32(1.0)], {}, opset=13)
    assert res.dtype("y0") == ir.DataType.UINT8
    res = infer_node("QuantizeLinear", [ts("float", [2]), np.float32(1.0)], {"output_dtype": 3}, opset=21)
    assert res.dtype("y0") == ir.DataType.INT8
    res = infer_node("DequantizeLinear", [ts("int8", [2]), np.float16(1.0)], {}, opset=19)
    assert res.dtype("y0") == ir.DataType.FLOAT16
    res = infer_node("DequantizeLinear", [ts("int8", [2]), np.float32(1.0)], {"output_dtype": 10}, opset=28)
    assert res.dtype("y0") == ir.DataType.FLOAT16


@pytest.mark.parametrize("shape", [(2, 3), (0, 5), (4,), ()])
def test_dynamic_quantize_linear(shape):
    names = [f"D{k}" for k in range(len(shape))]
    res = run_check("DynamicQuantizeLinear", [ts("float", names)], {}, {"x0": fx(*shape)}, 11,
                    dict(zip(names, shape)))
    assert exprs(res, "y0") == tuple(names) and exprs(res, "y1") == () and exprs(res, "y2") == ()


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 5), st.booleans())
def test_blocked_dequantize_property(n, k, block, symbolic_scale):
    """Any block size with the scale onnxruntime accepts: no conflict, exact shapes."""
    s = -(-k // block)
    scale = ts("float", ["N", "S"]) if symbolic_scale else fx(n, s)
    m = node_model("DequantizeLinear", [ts("uint8", ["N", "K"]), scale], {"axis": 1, "block_size": block}, opset=21)
    res = analyze(m)
    assert not res.conflicts
    feeds = {"x0": np.zeros((n, k), np.uint8)}
    if symbolic_scale:
        feeds["x1"] = fx(n, s)
    got = run_onnxruntime(m, feeds)
    assert res.evaluate({"N": n, "K": k})["y0"] == got[0].shape
    if symbolic_scale:
        bound = analyze(m, bind={"N": n, "K": k})
        assert tuple(bound.static_value(d) for d in bound.shape("x1")) == (n, s)


def test_backend_node_tests_static_and_symbolic():
    from .node_truth import cases, check_static, check_symbolic
    found = cases("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
    assert len(found) >= 30
    for tc in found:
        check_static(tc)
        check_symbolic(tc)


# ---------------------------------------------------------------- scale / zero-point shapes onnxruntime accepts
def _ort_accepts(m, feeds):
    import onnxruntime as ort
    ort.set_default_logger_severity(4)      # refusals are expected here: keep the log quiet
    try:
        return run_onnxruntime(m, feeds)[0].shape
    except Exception:
        return None


SCALE_SHAPES = [(), (1,), (3,), (2,), (1, 1)]


@pytest.mark.parametrize("opset", [10, 13, 19, 21, 23])
@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_scale_zero_point_shapes_exactly_as_onnxruntime(op, opset):
    """A per-tensor scale and zero point may each be a scalar or a one-element 1-D tensor,
    independently; per-axis ones are 1-D of x's axis length, both.  smtshape calls a node
    refused (a conflict, never an unchecked node) exactly when onnxruntime refuses to run it."""
    xt, xnp = ("float", np.float32) if op == "QuantizeLinear" else ("int8", np.int8)
    disagree, seen = [], set()
    for xshape in [(2, 3), (2, 1), (4,)]:
        for ss in SCALE_SHAPES:
            for zs in [None] + SCALE_SHAPES[:-1]:
                inputs = [ts(xt, list(xshape)), np.full(ss, 0.5, np.float32)]
                if zs is not None:
                    inputs.append(np.zeros(zs, np.int8))
                m = node_model(op, inputs, {}, opset=opset)
                truth = _ort_accepts(m, {"x0": np.ones(xshape, xnp)})
                seen.add(truth is not None)
                res = analyze(m)
                assert not unchecked(res)
                ours = not refused(res)
                if ours != (truth is not None) or (ours and res.evaluate({})["y0"] != truth):
                    disagree.append((xshape, ss, zs, "ort", truth, "smtshape", ours))
    assert not disagree, disagree
    assert seen == {True, False}          # the grid has models onnxruntime runs and models it refuses


@pytest.mark.parametrize("opset", [13, 17, 21])
def test_one_element_scale_with_scalar_zero_point_albert_bias(opset):
    """albert_legacy_qdq's 'm.embeddings.LayerNorm.bias_DequantizeLinear': an int32 bias of
    rank 1 (the default axis 1 is out of its range), a (1,) scale and a scalar zero point."""
    inputs = [ts("int32", ["N"]), np.full((1,), 0.02, np.float32), np.zeros((), np.int32)]
    m = node_model("DequantizeLinear", inputs, {}, opset=opset)
    res = analyze(m)
    assert not refused(res) and not unchecked(res) and not res.specializations
    assert exprs(res, "y0") == ("N",)
    for n in (16, 1, 0):
        got = run_onnxruntime(m, {"x0": np.arange(n, dtype=np.int32)})[0]
        assert res.evaluate({"N": n})["y0"] == got.shape and got.dtype == np.float32
    # and the mirror image: a scalar scale with a (1,) zero point, and (1,) / (1,)
    for s, z in [((), (1,)), ((1,), (1,))]:
        res = infer_node("DequantizeLinear", [ts("int32", ["N"]), np.full(s, 0.02, np.float32),
                                              np.zeros(z, np.int32)], opset=opset)
        assert not refused(res) and not unchecked(res) and exprs(res, "y0") == ("N",)


def test_per_axis_scale_with_scalar_zero_point_is_conflict():
    """onnxruntime: 'For per axis quantization, x_zero_point must be null or 1D tensor with size C'."""
    res = infer_node("DequantizeLinear", [ts("int8", ["N", "C"]), fx(3), np.int8(0)], {"axis": 1}, opset=13)
    assert refused(res)
    res = infer_node("DequantizeLinear", [ts("int8", ["N", "C"]), ts("float", ["S"]), np.int8(0)], {"axis": 1},
                     opset=13)
    assert not res.conflicts and res.prove("S == 1").name == "PROVEN"


@pytest.mark.parametrize("opset", [21, 23])
@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_blocked_scale_zero_point_shapes_exactly_as_onnxruntime(op, opset):
    """block_size > 0: scale of x's rank (ceil on the axis), zero point of the scale's shape;
    a scalar or one-element scale is refused ('block_size must be 0 for per-tensor')."""
    xt, xnp = ("float", np.float32) if op == "QuantizeLinear" else ("int8", np.int8)
    disagree, seen = [], set()
    for ss in [(2, 2), (2, 1), (1, 2), (2,), (1,), (), (2, 4), (2, 3)]:
        for zs in [None, (), (1,), (2, 2), (2, 1)]:
            inputs = [ts(xt, [2, 4]), np.full(ss, 0.5, np.float32)]
            if zs is not None:
                inputs.append(np.zeros(zs, np.int8))
            m = node_model(op, inputs, {"axis": 1, "block_size": 2}, opset=opset)
            truth = _ort_accepts(m, {"x0": np.ones((2, 4), xnp)})
            seen.add(truth is not None)
            res = analyze(m)
            assert not unchecked(res)
            ours = not refused(res)
            if ours != (truth is not None) or (ours and res.evaluate({})["y0"] != truth):
                disagree.append((ss, zs, "ort", truth, "smtshape", ours))
    assert not disagree, disagree
    assert seen == {True, False}
