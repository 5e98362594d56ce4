"""DFT, STFT, window and MelWeightMatrix rules, against onnxruntime and ONNX's backend node tests."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import smtshape.ops.signal  # noqa: F401
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

from .onnx_node_cases import check_all

SIGNAL_OPS = ("DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix")


def conflict_rules(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


def rnd(shape):
    return np.random.rand(*shape).astype(np.float32)




def test_backend_node_tests():
    results = check_all(*SIGNAL_OPS, min_cases=19)
    # with their integer inputs known, every output dim of every test is exact and right
    for name, (known, exact, total) in results.items():
        assert known == 1 and exact == total, name


# ------------------------------------------------------------ DFT
DFT_CASES = [
    # opset, shape, attrs, dft_length, axis input (opset 20)
    (17, [2, 5, 1], {"axis": 1}, None, None),
    (17, [2, 5, 1], {"axis": 1, "onesided": 1}, None, None),
    (17, [2, 5, 1], {"axis": 1, "onesided": 1}, 8, None),
    (17, [3, 4, 2], {"axis": 1, "inverse": 1}, 3, None),
    (17, [3, 4, 6, 2], {"axis": -2, "onesided": 1, "inverse": 1}, None, None),
    (20, [2, 5, 1], {}, None, None),
    (20, [2, 5, 1], {"onesided": 1}, None, 0),
    (20, [2, 7, 1], {"onesided": 1}, 4, -2),
    (20, [2, 5, 2], {"onesided": 1, "inverse": 1}, None, None),
    (20, [2, 5, 2], {"onesided": 1, "inverse": 1}, 7, 1),
    (20, [2, 5, 2], {"inverse": 1}, 3, 0),
    (20, [1, 1, 1], {}, None, 1),
    (20, [1, 1, 1], {"onesided": 1}, None, -3),
    (20, [0, 3, 1], {"onesided": 1}, None, 1),
]


@pytest.mark.parametrize("opset,shape,attrs,n,axis", DFT_CASES)
def test_dft_vs_onnxruntime(opset, shape, attrs, n, axis):
    def inputs(x):
        ins = [x, None if n is None else np.array(n, np.int64)]
        if opset >= 20 and axis is not None:
            ins.append(np.array(axis, np.int64))
        while ins and ins[-1] is None:
            ins.pop()
        return ins

    names = [f"d{i}" for i in range(len(shape) - 1)] + [shape[-1]]
    res = infer_node("DFT", inputs(ts("float", names)), attrs, opset=opset)
    assert not res.conflicts
    got = res.evaluate({k: v for k, v in zip(names, shape) if isinstance(k, str)})["y0"]
    truth = run_onnxruntime(node_model("DFT", inputs(ts("float", shape)), attrs, opset=opset),
                            {"x0": rnd(shape)})[0]
    assert got == truth.shape
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y0"))


def test_dft_symbolic_formulas():
    res = infer_node("DFT", [ts("float", ["B", "N", 1])], {"axis": 1, "onesided": 1}, opset=17)
    assert exprs(res, "y0") == ("B", "N // 2 + 1", 2)
    res = infer_node("DFT", [ts("float", ["B", "N", 2])], {"onesided": 1, "inverse": 1}, opset=20)
    assert exprs(res, "y0") == ("B", "2 * N - 2", 1)
    assert res.prove("N >= 1").name == "PROVEN"


def test_dft_runtime_length_and_axis_are_not_guessed():
    # dft_length from a graph input: the transformed axis is a data symbol
    res = infer_node("DFT", [ts("float", ["B", "N", 1]), ts("int64", [])], {"axis": 1}, opset=17)
    s = res.shape("y0")
    assert s[0].expr.name == "B" and s[1].exactness is Exactness.UNKNOWN and s[2].expr == 2
    # axis from a graph input, output length unchanged: shape is known whatever the axis
    res = infer_node("DFT", [ts("float", ["B", "N", 2]), None, ts("int64", [])], {}, opset=20)
    assert exprs(res, "y0") == ("B", "N", 2)
    # axis unknown and onesided: no dim but the last is known
    res = infer_node("DFT", [ts("float", ["B", "N", 1]), None, ts("int64", [])], {"onesided": 1}, opset=20)
    s = res.shape("y0")
    assert [d.exactness for d in s] == [Exactness.UNKNOWN, Exactness.UNKNOWN, Exactness.EXACT]


def test_dft_bad_inputs():
    res = infer_node("DFT", [ts("float", ["B", "N", 3])], {"axis": 1}, opset=17)
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"dft.complex_dim"}
    res = infer_node("DFT", [ts("float", ["B", "N", 1])], {"axis": 2}, opset=17)   # the complex axis
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"dft.axis"}
    res = infer_node("DFT", [ts("float", ["B", "N", "C"])], {"axis": 1}, opset=17)
    assert res.prove("C == 1 or C == 2").name == "PROVEN"


# ------------------------------------------------------------ STFT
@pytest.mark.parametrize("length,step,frame,onesided,use_window", [
    (20, 3, 6, 1, False), (20, 3, 6, 0, True), (16, 4, 16, 1, True), (7, 1, 1, 0, False),
    (9, 2, 5, 1, True), (5, 10, 5, 0, False), (10, 3, 7, 1, "both")])
def test_stft_vs_onnxruntime(length, step, frame, onesided, use_window):
    def inputs(x):
        ins = [x, np.array(step, np.int64)]
        if use_window:
            ins.append(np.hanning(frame).astype(np.float32))
            if use_window == "both":
                ins.append(np.array(frame, np.int64))
        else:
            ins += [None, np.array(frame, np.int64)]
        return ins

    res = infer_node("STFT", inputs(ts("float", ["B", "L", 1])), {"onesided": onesided}, opset=17)
    assert not res.conflicts
    got = res.evaluate({"B": 2, "L": length})["y0"]
    truth = run_onnxruntime(node_model("STFT", inputs(ts("float", [2, length, 1])), {"onesided": onesided},
                                       opset=17), {"x0": rnd([2, length, 1])})[0]
    assert got == truth.shape


def test_stft_formula_and_constraints():
    res = infer_node("STFT", [ts("float", ["B", "L", 1]), np.array(4, np.int64), ts("float", ["W"])], opset=17)
    assert exprs(res, "y0") == ("B", "(L - W) // 4 + 1", "W // 2 + 1", 2)
    assert res.prove("L >= W").name == "PROVEN"
    res = infer_node("STFT", [ts("float", ["B", 10, 1]), np.array(4, np.int64), ts("float", [5]),
                              np.array(6, np.int64)], opset=17)
    assert res.conflicts and "node" in res.conflicts[0].nodes
    # a runtime frame_step: the frame count is bounded by L - W + 1, never guessed
    res = infer_node("STFT", [ts("float", ["B", "L", 1]), ts("int64", []), ts("float", ["W"])], opset=17)
    f = res.shape("y0")[1]
    assert f.exactness is Exactness.UPPER_BOUND
    assert str(f.bound).replace(" ", "") in ("L-W+1", "-W+L+1")


# ------------------------------------------------------------ windows, MelWeightMatrix
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size", [1, 2, 7])
@pytest.mark.parametrize("periodic,dtype", [(1, 1), (0, 11)])
def test_windows_vs_onnxruntime(op, size, periodic, dtype):
    attrs = {"periodic": periodic, "output_datatype": dtype}
    res = infer_node(op, [np.array(size, np.int64)], attrs, opset=17)
    truth = run_onnxruntime(node_model(op, [np.array(size, np.int64)], attrs, opset=17), {})[0]
    assert exprs(res, "y0") == truth.shape
    assert res.dtype("y0") is not None and int(res.dtype("y0")) == dtype


def test_window_runtime_size_is_a_data_symbol():
    res = infer_node("HannWindow", [ts("int64", [])], opset=17)
    assert res.shape("y0")[0].exactness is Exactness.UNKNOWN
    res = infer_node("HannWindow", [np.array([3, 4], np.int64)], opset=17)
    assert res.shape("y0") is None and refused(res) and conflict_rules(res) == {"hannwindow.size"}


@pytest.mark.parametrize("bins,n", [(8, 16), (1, 4), (5, 31), (3, 8)])
def test_mel_weight_matrix_vs_onnxruntime(bins, n):
    ins = [np.array(bins, np.int64), np.array(n, np.int64), np.array(8000, np.int64),
           np.array(0, np.float32), np.array(3000, np.float32)]
    res = infer_node("MelWeightMatrix", ins, opset=17)
    truth = run_onnxruntime(node_model("MelWeightMatrix", ins, opset=17), {})[0]
    assert exprs(res, "y0") == truth.shape


def test_mel_weight_matrix_runtime_sizes():
    ins = [ts("int64", []), ts("int64", []), np.array(8000, np.int64), np.array(0, np.float32),
           np.array(4000, np.float32)]
    res = infer_node("MelWeightMatrix", ins, opset=17)
    assert [d.exactness for d in res.shape("y0")] == [Exactness.UNKNOWN, Exactness.UNKNOWN]


# ------------------------------------------------------------ sizes from shape arithmetic
def _chain_model(nodes, inputs, opset=17):
    from onnx import TensorProto, helper

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_value_info("y", helper.TypeProto())])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_window_and_dft_sizes_from_shape_chain(n):
    """Size(x) -> HannWindow -> Unsqueeze -> DFT with dft_length = 2 * Size(x): every dim exact in N."""
    from onnx import helper

    import smtshape

    nodes = [helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("HannWindow", ["n"], ["w"]),
             helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("a", 7, [2], [0, 2])),
             helper.make_node("Unsqueeze", ["w", "axes"], ["w3"]),
             helper.make_node("Constant", [], ["two"], value=helper.make_tensor("t", 7, [], [2])),
             helper.make_node("Mul", ["n", "two"], ["n2"]),
             helper.make_node("DFT", ["w3", "n2"], ["y"], axis=1, onesided=1)]
    sym = _chain_model(nodes, [("x", ["N"])])
    res = smtshape.analyze(sym)
    assert exprs(res, "y") == (1, "N + 1", 2)
    truth = run_onnxruntime(_chain_model(nodes, [("x", [n])]), {"x": rnd([n])})[0]
    assert res.evaluate({"N": n})["y"] == truth.shape


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.sampled_from([1, 2]), st.integers(0, 1),
       st.integers(0, 1), st.one_of(st.none(), st.integers(1, 9)), st.data())
def test_property_dft20_vs_onnxruntime(signal, last, onesided, inverse, n, data):
    if onesided and not inverse:
        last = 1                 # RFFT takes a real signal
    if onesided and inverse:
        last = 2                 # IRFFT takes a complex one
    shape = signal + [last]
    r = len(shape)
    axis = data.draw(st.sampled_from(list(range(-r, -1)) + list(range(0, r - 1))))
    if onesided and inverse and n is None and shape[axis] < 2:
        return                   # default IRFFT length 2 * (d - 1) would be 0
    attrs = {"onesided": onesided, "inverse": inverse}

    def inputs(x):
        return [x, None if n is None else np.array(n, np.int64), np.array(axis, np.int64)]

    names = [f"d{i}" for i in range(r - 1)] + [last]
    res = infer_node("DFT", inputs(ts("float", names)), attrs, opset=20)
    assert not res.conflicts
    truth = run_onnxruntime(node_model("DFT", inputs(ts("float", shape)), attrs, opset=20), {"x0": rnd(shape)})[0]
    assert res.evaluate({k: v for k, v in zip(names, shape) if isinstance(k, str)})["y0"] == truth.shape


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.integers(0, 1), st.integers(0, 1),
       st.one_of(st.none(), st.integers(1, 9)))
def test_property_dft20_runtime_axis_static_dims_vs_onnxruntime(signal, onesided, inverse, n):
    # static dims, axis read at run time: for every axis onnxruntime accepts, its output
    # equals the exact axes of the answer and stays within the bounded ones
    last = 1 if (onesided and not inverse) else 2
    shape = signal + [last]
    r = len(shape)
    attrs = {"onesided": onesided, "inverse": inverse}
    nin = None if n is None else np.array(n, np.int64)
    res = infer_node("DFT", [ts("float", shape), nin, ts("int64", [])], attrs, opset=20)
    got = res.shape("y0")
    assert len(got) == r and all(d.exactness in (Exactness.EXACT, Exactness.UPPER_BOUND) for d in got)
    runs = 0
    for axis in range(r - 1):
        if onesided and inverse and n is None and shape[axis] < 2:
            continue
        truth = run_onnxruntime(node_model("DFT", [ts("float", shape), nin, np.array(axis, np.int64)], attrs,
                                           opset=20), {"x0": rnd(shape)})[0].shape
        runs += 1
        for g, t in zip(got, truth):
            assert (g.expr == t) if g.exactness is Exactness.EXACT else (t <= g.bound)
    assert runs or (onesided and inverse)


def test_dft20_runtime_axis_static_dims_example():
    # test_dft_rfft's shape: only axes 1 and 2 can change, axis 0 (size 1) stays 1 either way
    d = infer_node("DFT", [ts("float", [1, 10, 10, 1]), None, ts("int64", [])], {"onesided": 1}, opset=20).shape("y0")
    assert d[0].expr == 1 and d[3].expr == 2
    assert [x.bound for x in d[1:3]] == [10, 10] and d[1].exactness is Exactness.UPPER_BOUND


# ------------------------------------------------------------ preconditions (conflicts)
F, I64 = np.float32, np.int64
SIGNAL_BAD = [
    # (op, inputs: shape lists are float graph inputs, arrays initializers, attrs, opset, rule)
    ("DFT", [[1, 8, 2]], {"onesided": 1}, 17, "dft.complex_dim"),
    ("DFT", [[1, 8, 2]], {"onesided": 1}, 20, "dft.complex_dim"),
    ("DFT", [[1, 8, 1]], {"onesided": 1, "inverse": 1}, 17, "dft.complex_dim"),
    ("DFT", [[1, 8, 1]], {"onesided": 1, "inverse": 1}, 20, "dft.complex_dim"),
    ("DFT", [[2, 8, 3]], {}, 17, "dft.complex_dim"),
    ("DFT", [[8]], {"axis": 0}, 17, "dft.rank"),
    ("DFT", [[1, 8, 1, 1]], {"axis": 3}, 17, "dft.axis"),
    ("DFT", [[1, 8, 1, 1]], {"axis": -1}, 17, "dft.axis"),
    ("DFT", [[1, 8, 1, 1]], {"axis": -5}, 17, "dft.axis"),
    ("DFT", [[1, 8, 1, 1], None, np.array(3, I64)], {}, 20, "dft.axis"),
    ("DFT", [[1, 8, 1, 1], None, np.array(-1, I64)], {}, 20, "dft.axis"),
    ("DFT", [[1, 8, 1, 1], None, np.array(4, I64)], {}, 20, "dft.axis"),
    ("DFT", [[1, 8, 1], np.array(0, I64)], {}, 17, "dft.dft_length"),
    ("DFT", [[1, 8, 1], np.array([4, 4], I64)], {}, 17, "dft.dft_length"),
    ("STFT", [[1, 16, 1, 1], np.array(4, I64), None, np.array(8, I64)], {}, 17, "stft.rank"),
    ("STFT", [[1, 16, 3], np.array(4, I64), None, np.array(8, I64)], {}, 17, "stft.complex_dim"),
    ("STFT", [[1, 16, 1], np.array(0, I64), None, np.array(8, I64)], {}, 17, "stft.frame_step"),
    ("STFT", [[1, 16, 1], np.array(4, I64), np.zeros(6, F), np.array(8, I64)], {}, 17, "stft.window"),
    ("STFT", [[1, 16, 1], np.array(4, I64), np.zeros((2, 8), F)], {}, 17, "stft.window"),
    ("STFT", [[1, 4, 1], np.array(2, I64), None, np.array(8, I64)], {}, 17, "stft.frame_fits"),
    ("HannWindow", [np.array(-3, I64)], {}, 17, "hannwindow.size"),
    ("MelWeightMatrix", [np.array(-1, I64), np.array(16, I64), np.array(8000, I64), np.array(0, F),
                         np.array(4000, F)], {}, 17, "melweightmatrix.num_mel_bins"),
]


@pytest.mark.parametrize("op,ins,attrs,opset,rule", SIGNAL_BAD,
                         ids=[f"{c[0]}-{c[4]}-{i}" for i, c in enumerate(SIGNAL_BAD)])
def test_signal_precondition_is_a_conflict(op, ins, attrs, opset, rule):
    inputs = [ts("float", s) if isinstance(s, list) else s for s in ins]
    res = infer_node(op, inputs, attrs, opset=opset)
    assert refused(res) and rule in conflict_rules(res), conflict_rules(res)
    assert not unchecked(res)
    feeds = {f"x{k}": rnd(s) for k, s in enumerate(ins) if isinstance(s, list)}
    with pytest.raises(Exception):      # onnxruntime (or its shape inference) refuses it too
        run_onnxruntime(node_model(op, inputs, attrs, opset=opset), feeds)


def test_rank2_stft_signal_is_not_a_conflict():
    # onnxruntime (and ONNX's inference) run a [batch, length] real signal
    ins = [ts("float", [1, 16]), np.array(4, I64), None, np.array(8, I64)]
    res = infer_node("STFT", ins, {}, opset=17)
    assert not refused(res) and not unchecked(res)
    truth = run_onnxruntime(node_model("STFT", ins, {}, opset=17), {"x0": rnd([1, 16])})[0].shape
    assert exprs(res, "y0") == truth == (1, 3, 5, 2)


@pytest.mark.parametrize("op,ins,feeds", [
    ("HannWindow", [ts("int64", [])], {"x0": np.array(0, I64)}),                 # an empty window runs
    ("DFT", [ts("float", [1, 8, 1]), ts("int64", [1])], {"x0": rnd([1, 8, 1]), "x1": np.array([8], I64)}),
])
def test_runtime_values_onnxruntime_runs_are_not_conflicts(op, ins, feeds):
    # (ONNX's inference refuses these values as constants; onnxruntime's kernels run them)
    res = infer_node(op, ins, {}, opset=17)
    assert not refused(res) and not unchecked(res)
    run_onnxruntime(node_model(op, ins, {}, opset=17), feeds)
