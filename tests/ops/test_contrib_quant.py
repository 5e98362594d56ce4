"""com.microsoft quantization ops, against onnxruntime's CPU kernels."""
import numpy as np
import pytest

from smtshape.testing import exprs, infer_node, ts

from .contrib_check import MS, check


def sc(n=None):
    return np.array(0.05, np.float32) if n is None else np.full(n, 0.05, np.float32)


def zp(n=None, dt=np.uint8):
    return np.array(3, dt) if n is None else np.full(n, 3, dt)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary_broadcast(op):
    res = check(op, [ts("uint8", ["A", 1, "C"]), sc(), zp(), ts("uint8", ["B", 1]), sc(), zp(), sc(), zp()],
                bindings=[{"A": 2, "B": 3, "C": 4}, {"A": 1, "B": 3, "C": 1}, {"A": 0, "B": 1, "C": 2}])
    assert res.evaluate({"A": 2, "B": 5, "C": 4})["y0"] == (2, 5, 4)
    bad = infer_node(op, [ts("uint8", [2, 3]), sc(), zp(), ts("uint8", [4]), sc(), zp(), sc(), zp()], domain=MS)
    assert bad.conflicts


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
def test_qlinear_unary(op):
    check(op, [ts("uint8", ["B", "H"]), sc(), zp(), sc(), zp()], bindings=[{"B": 2, "H": 3}, {"B": 0, "H": 1}])


def test_qlinear_softmax():
    check("QLinearSoftmax", [ts("uint8", ["B", "S", "H"]), sc(), zp(), sc(), zp()], {"opset": 13, "axis": -1},
          bindings=[{"B": 2, "S": 3, "H": 4}, {"B": 1, "S": 0, "H": 2}])


@pytest.mark.parametrize("cl,attrs", [
    (0, {"kernel_shape": [3, 3], "strides": [2, 2]}),
    (0, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 0, 1, 0]}),
    (1, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    (0, {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
])
def test_qlinear_average_pool(cl, attrs):
    x = ["N", "H", "W", 3] if cl else ["N", 3, "H", "W"]
    res = check("QLinearAveragePool", [ts("uint8", x), sc(), zp(), sc(), zp()], {**attrs, "channels_last": cl},
                bindings=[{"N": 1, "H": 7, "W": 6}, {"N": 2, "H": 5, "W": 9}, {"N": 0, "H": 4, "W": 3}])
    assert exprs(res, "y0")[3 if cl else 1] == 3


@pytest.mark.parametrize("cl", [0, 1])
def test_qlinear_global_average_pool(cl):
    x = ["N", "H", "W", "C"] if cl else ["N", "C", "H", "W"]
    res = check("QLinearGlobalAveragePool", [ts("uint8", x), sc(), zp(), sc(), zp()], {"channels_last": cl},
                bindings=[{"N": 2, "C": 3, "H": 5, "W": 4}, {"N": 1, "C": 1, "H": 1, "W": 7}])
    assert exprs(res, "y0") == (("N", 1, 1, "C") if cl else ("N", "C", 1, 1))


def test_qlinear_concat():
    res = check("QLinearConcat", [sc(), zp(), ts("uint8", ["B", "M"]), sc(), zp(), ts("uint8", ["B", 5]), sc(), zp()],
                {"axis": 1}, bindings=[{"B": 2, "M": 3}, {"B": 0, "M": 0}])
    assert exprs(res, "y0") == ("B", "M + 5")
    bad = infer_node("QLinearConcat", [sc(), zp(), ts("uint8", [2, 3]), sc(), zp(), ts("uint8", [4, 5]), sc(), zp()],
                     {"axis": 1}, domain=MS)
    assert bad.conflicts


def test_qlinear_conv_ms_channels_last():
    w = np.zeros((4, 3, 3, 3), np.int8)
    res = infer_node("QLinearConv", [ts("uint8", ["N", "H", "W", 3]), sc(), zp(), w, sc(), zp(None, np.int8), sc(),
                                     zp()], {"channels_last": 1, "strides": [2, 2]}, domain=MS)
    assert exprs(res, "y0") == ("N", "(H - 3) // 2 + 1", "(W - 3) // 2 + 1", 4)


@pytest.mark.parametrize("ta,tb,quant", [(0, 0, False), (1, 1, True), (0, 1, False)])
def test_qgemm(ta, tb, quant):
    a = ["K", "M"] if ta else ["M", "K"]
    b = [4, "K"] if tb else ["K", 4]
    ins = [ts("uint8", a), sc(), zp(), ts("uint8", b), sc(), zp(), None]
    if quant:
        ins += [sc(), zp()]
    res = check("QGemm", ins, {"transA": ta, "transB": tb}, bindings=[{"M": 2, "K": 3}, {"M": 0, "K": 5}])
    assert exprs(res, "y0") == ("M", 4)
    import onnx_ir as ir
    assert res.dtype("y0") == (ir.DataType.UINT8 if quant else ir.DataType.FLOAT)


def test_dynamic_quantize_matmul():
    w = np.zeros((4, 6), np.int8)
    res = check("DynamicQuantizeMatMul", [ts("float", ["B", "S", 4]), w, sc(), None, np.zeros(6, np.float32)],
                bindings=[{"B": 2, "S": 3}, {"B": 0, "S": 1}])
    assert exprs(res, "y0") == ("B", "S", 6)
    bad = infer_node("DynamicQuantizeMatMul", [ts("float", [2, 4]), w, sc(), None, np.zeros(1, np.float32)],
                     domain=MS)
    assert bad.conflicts  # onnxruntime: bias element count must equal B's last dimension


def test_matmul_integer_to_float():
    res = check("MatMulIntegerToFloat", [ts("uint8", ["B", "S", "K"]), ts("int8", ["K", 5]), sc(), sc()],
                bindings=[{"B": 2, "S": 3, "K": 4}, {"B": 1, "S": 0, "K": 1}])
    assert exprs(res, "y0") == ("B", "S", 5)


def _nbits_inputs(a, K, N, bs=16, bits=4, bias=False):
    kb = -(-K // bs)
    ins = [ts("float", a), np.zeros((N, kb, bs * bits // 8), np.uint8), np.ones((N, kb), np.float32)]
    if bias:
        ins += [None, None, np.zeros(N, np.float32)]
    return ins


@pytest.mark.parametrize("a,bits,bias", [(["B", "S", 20], 4, False), (["M", 20], 8, True), ([20], 4, False),
                                         (["B", "S", 20], 2, True)])
def test_matmul_nbits(a, bits, bias):
    res = check("MatMulNBits", _nbits_inputs(a, 20, 5, bits=bits, bias=bias),
                {"K": 20, "N": 5, "block_size": 16, "bits": bits},
                bindings=[{"B": 2, "S": 3, "M": 4}, {"B": 0, "S": 1, "M": 0}])
    assert exprs(res, "y0")[-1] == 5


def test_matmul_nbits_k_constraint():
    res = infer_node("MatMulNBits", _nbits_inputs(["B", "K"], 32, 8), {"K": 32, "N": 8, "block_size": 16},
                     domain=MS)
    assert res.prove("K == 32").name == "PROVEN"
    bad = infer_node("MatMulNBits", _nbits_inputs([2, 21], 20, 5), {"K": 20, "N": 5, "block_size": 16}, domain=MS)
    assert bad.conflicts


def test_matmul_nbits_empty_weight_is_legal():
    ins = _nbits_inputs(["B", 20], 20, 5)
    ins[1] = np.zeros((0, 2, 8), np.uint8)
    check("MatMulNBits", ins, {"K": 20, "N": 5, "block_size": 16}, bindings=[{"B": 3}])


@pytest.mark.parametrize("bits,cols,scale_cols", [(8, 32, 2), (4, 16, 2), (2, 8, 2)])
def test_gather_block_quantized_unpacks_uint8(bits, cols, scale_cols):
    data = np.zeros((10, cols), np.uint8)
    res = check("GatherBlockQuantized", [data, ts("int64", ["I", "J"]), np.ones((10, scale_cols), np.float32)],
                {"block_size": 16, "bits": bits, "gather_axis": 0, "quantize_axis": 1},
                bindings=[{"I": 2, "J": 3}, {"I": 0, "J": 1}])
    assert exprs(res, "y0") == ("I", "J", 32)


def test_gather_block_quantized_scales_conflict():
    res = infer_node("GatherBlockQuantized", [np.zeros((10, 16), np.uint8), ts("int64", [2]),
                                              np.ones((10, 1), np.float32)],
                     {"block_size": 16, "bits": 4, "gather_axis": 0, "quantize_axis": 1}, domain=MS)
    assert res.conflicts  # onnxruntime: data shape and scales shape do not match


def test_quantize_dequantize_ms():
    res = check("QuantizeLinear", [ts("float", ["B", "C"]), sc(), zp(None, np.int8)],
                bindings=[{"B": 2, "C": 3}, {"B": 0, "C": 1}])
    assert exprs(res, "y0") == ("B", "C")
    check("DequantizeLinear", [ts("uint8", ["B", 5, "H"]), sc(5), zp(5)], {"axis": 1},
          bindings=[{"B": 2, "H": 3}])
    bad = infer_node("DequantizeLinear", [ts("uint8", [2, 4, 3]), sc(5), zp(5)], {"axis": 1}, domain=MS)
    assert bad.conflicts
