"""Bounds of data-dependent sizes read through min / max / Piecewise terms (issue 19,
item 5): torchvision's ``topk(min(80, n))`` and ``keep[:120]`` give ``min(80, n)`` and
``min(120, d)`` over a run-time count; they are at most 80 and 120 whatever the count is
(``Result._upper_bound``, ``bounds.upper_bound_over``).  Small models built here,
checked against onnxruntime."""
import numpy as np
import onnxruntime as ort
from hypothesis import given, settings, strategies as st
from onnx import TensorProto as T, helper as h, numpy_helper as nh

import smtshape
from smtshape import expr as E
from smtshape.dim import Exactness

EX, UB = Exactness.EXACT, Exactness.UPPER_BOUND


def vi(n, t, s=None):
    return h.make_tensor_value_info(n, t, s)


def c64(name, vals):
    return h.make_node("Constant", [], [name], value=nh.from_array(np.array(vals, dtype=np.int64), name))


def run_ort(m, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [tuple(o.shape) for o in s.run(None, feeds)]


def _topk_of_selection(runtime_len=False):
    """FCOS's per-level candidates as exported: the scores over a threshold (NonZero), then
    ``topk(min(80, count))`` and the kept scores sliced to 40.  With ``runtime_len`` the
    scores' length is a run-time value (no bound on the count)."""
    nodes = []
    if runtime_len:
        nodes.append(h.make_node("ConstantOfShape", ["len"], ["x"],
                                 value=nh.from_array(np.array([1.0], np.float32), "one")))
    nodes += [h.make_node("Constant", [], ["thr"], value=nh.from_array(np.array(0.5, np.float32), "thr")),
              h.make_node("Greater", ["x", "thr"], ["m"]),
              h.make_node("NonZero", ["m"], ["nz"]),
              c64("ax0", [0]), h.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
              h.make_node("Gather", ["x", "idx"], ["sel"], axis=0),
              h.make_node("Shape", ["sel"], ["n"]), c64("k80", [80]), h.make_node("Min", ["n", "k80"], ["k"]),
              h.make_node("TopK", ["sel", "k"], ["top", "top_i"]),
              c64("z", [0]), c64("e40", [40]), h.make_node("Slice", ["top", "z", "e40"], ["top40"])]
    inputs = [vi("len", T.INT64, [1])] if runtime_len else [vi("x", T.FLOAT, ["N"])]
    g = h.make_graph(nodes, "g", inputs, [vi("top", T.FLOAT), vi("top40", T.FLOAT)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8)


TOPK = _topk_of_selection()
TOPK_RT = _topk_of_selection(runtime_len=True)


def test_topk_of_a_count_is_bounded_by_k_and_the_count():
    # min(80, n) and min(40, min(80, n)) over the NonZero count n <= N: were UNKNOWN
    res = smtshape.analyze(TOPK)
    for name, cap in (("top", 80), ("top40", 40)):
        d = res.shape(name)[0]
        assert d.exactness is UB
        assert [E.evaluate(d.bound, {"N": n}) for n in (0, 7, 500)] == [0, 7, cap]


def test_min_with_a_constant_bounds_an_unbounded_count():
    # the count has no bound at all (the scores' length is a run-time value): still <= 80
    res = smtshape.analyze(TOPK_RT)
    assert res.shape("top")[0].exactness is UB and res.shape("top")[0].bound == 80
    assert res.shape("top40")[0].bound == 40


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 200), st.integers(0, 2 ** 16))
def test_topk_of_a_count_vs_ort(n, seed):
    x = np.random.default_rng(seed).uniform(0, 1, n).astype(np.float32)
    res = smtshape.analyze(TOPK)
    for name, w in zip(("top", "top40"), run_ort(TOPK, {"x": x})):
        d = res.shape(name)[0]
        assert d.exactness is not EX and w[0] <= E.evaluate(d.bound, {"N": n})
    for name, w in zip(("top", "top40"), run_ort(TOPK_RT, {"len": np.array([n], np.int64)})):
        assert w[0] <= smtshape.analyze(TOPK_RT).shape(name)[0].bound


def _strided_counts():
    """FCOS's group norm over a strided feature map whose size is a run-time count: each
    count ``k <= N`` is pooled with stride 16 (``(k - 1) // 16 + 1``, a term sympy cannot
    call non-negative), two such sizes meet in an outer product, and a Reshape to ``[-1]``
    multiplies them.  Was UNKNOWN: the product's factors were not known non-negative, and
    the pool's branch for an empty axis, ``1 - (1 - k) // 16``, had no bound (a term with a
    negative coefficient needed a lower bound of ``(1 - k) // 16``)."""
    nodes, inputs = [], []
    for v, d in (("x", "N"), ("y", "M")):
        nodes += [h.make_node("Constant", [], [f"{v}_thr"], value=nh.from_array(np.array(0.5, np.float32), "t")),
                  h.make_node("Greater", [v, f"{v}_thr"], [f"{v}_m"]),
                  h.make_node("NonZero", [f"{v}_m"], [f"{v}_nz"]),
                  h.make_node("Cast", [f"{v}_nz"], [f"{v}_f"], to=T.FLOAT),
                  c64(f"{v}_ax", [0]), h.make_node("Unsqueeze", [f"{v}_f", f"{v}_ax"], [f"{v}_u"]),
                  h.make_node("MaxPool", [f"{v}_u"], [f"{v}_p"], kernel_shape=[1], strides=[16])]
        inputs.append(vi(v, T.FLOAT, [d]))
    nodes += [c64("col", [-1, 1]), c64("row", [1, -1]), c64("flat", [-1]),
              h.make_node("Reshape", ["x_p", "col"], ["a"]), h.make_node("Reshape", ["y_p", "row"], ["b"]),
              h.make_node("Mul", ["a", "b"], ["ab"]), h.make_node("Reshape", ["ab", "flat"], ["out"])]
    g = h.make_graph(nodes, "g", inputs, [vi("out", T.FLOAT)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8)


STRIDED = _strided_counts()


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 70), st.integers(1, 70), st.integers(0, 2 ** 16))
def test_a_product_of_strided_counts_is_bounded(n, m, seed):
    d = smtshape.analyze(STRIDED).shape("out")[0]
    assert d.exactness is UB
    # each factor is at most one above the pooled size of the whole input (the pool's
    # branch for an empty axis is bounded apart from its condition)
    assert E.evaluate(d.bound, {"N": n, "M": m}) <= ((n - 1) // 16 + 2) * ((m - 1) // 16 + 2)
    rng = np.random.default_rng(seed)
    feeds = {"x": rng.uniform(0, 1, n).astype(np.float32), "y": rng.uniform(0, 1, m).astype(np.float32)}
    for v in feeds.values():
        v[0] = 1.0          # (onnxruntime refuses to pool an empty axis: at least one selected)
    got, = run_ort(STRIDED, feeds)
    assert got[0] <= E.evaluate(d.bound, {"N": n, "M": m})
