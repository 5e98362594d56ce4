"""Where the ONNX spec, onnxruntime and onnx's reference evaluator read a model apart.

A dim is EXACT only where the three give the same size over the whole domain; where they can
differ it is a case split the store can reason about (a Piecewise over the input dims, or a
data symbol that is one of the runtimes' sizes, bounded by the largest), and the node warns
(docs/ARCHITECTURE.md, "Spec-vs-runtime splits").  Each test runs the model in both runtimes on
both sides of the edge.  Each named case failed before the change that split it (issue 18).
"""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto as TP, helper
from onnx.reference import ReferenceEvaluator

import smtshape
from smtshape import expr as E
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts

I32_MAX, I64_MAX, I32_MIN, I64_MIN = 2 ** 31 - 1, 2 ** 63 - 1, -2 ** 31, -2 ** 63
onnxruntime.set_default_logger_severity(4)      # (the sizes a runtime refuses are expected here)


def run_both(model, feeds) -> dict:
    """{runtime: output shapes} for onnxruntime and onnx's reference evaluator; a runtime that
    refuses the model at these feeds is left out."""
    out = {}
    for name, run in (("onnxruntime", lambda: run_onnxruntime(model, feeds)),
                      ("reference", lambda: ReferenceEvaluator(model).run(None, feeds))):
        try:
            out[name] = [tuple(np.asarray(o).shape) for o in run()]
        except Exception:       # noqa: BLE001 - a runtime that refuses these sizes
            pass
    return out


def assert_holds(res, outputs, binding, truths):
    """Every EXACT dim is each runtime's size, every bound at least it."""
    for runtime, shapes in truths.items():
        for name, shape in zip(outputs, shapes):
            dims = res.shape(name)
            if dims is None:
                continue
            assert len(dims) == len(shape), (runtime, name, dims, shape)
            for k, (d, n) in enumerate(zip(dims, shape)):
                if d.exactness is Exactness.EXACT:
                    assert E.evaluate(d.expr, binding) == n, (runtime, name, k, str(d.expr), binding, shape)
                elif d.exactness is Exactness.UPPER_BOUND:
                    assert E.evaluate(d.bound, binding) >= n, (runtime, name, k, str(d.bound), binding, shape)


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(o, TP.UNDEFINED, None) for o in outputs],
                          initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def i64(name, *vals):
    return onnx.numpy_helper.from_array(np.array(vals, np.int64), name)


# ================================================================ Slice at INT32 / INT64 extremes

def slice_model(start, end, step, dim="N"):
    return node_model("Slice", [ts("float", [dim]), np.array([start]), np.array([end]), np.array([0]),
                                np.array([step])])


@pytest.mark.parametrize("start,end", [(-1, I32_MAX), (I32_MAX, I32_MAX), (I64_MAX, I32_MAX), (2, I32_MAX),
                                       (-1, I64_MAX), (I64_MIN, I64_MAX)])
def test_backward_slice_to_int_max_is_not_exact_one_way(start, end):
    """The three cases of the issue (start -1, INT32_MAX or INT64_MAX, end INT32_MAX, step -1),
    EXACT 0 before: onnxruntime reads an end of INT32_MAX (like INT64_MAX) as "to the end",
    past index 0 backward; the spec (and onnx's reference evaluator) clamp it to dim - 1, an
    empty slice.  The length is now a data symbol that is one of the two, at most onnxruntime's."""
    res = infer_node("Slice", [ts("float", ["N"]), np.array([start]), np.array([end]), np.array([0]),
                               np.array([-1])])
    d = res.shape("y0")[0]
    assert d.exactness is Exactness.UPPER_BOUND and not res.conflicts and not res.specializations
    m = slice_model(start, end, -1)
    for n in (0, 1, 2, 5):
        truths = run_both(m, {"x0": np.zeros(n, np.float32)})
        assert set(truths) == {"onnxruntime", "reference"}
        assert truths["reference"] == [(spec_slice_len(n, start, end, -1),)]
        assert_holds(res, ["y0"], {"N": n}, truths)
        assert res.evaluate({"N": n}) is not None
    truths = run_both(m, {"x0": np.zeros(3, np.float32)})
    assert truths["onnxruntime"] != truths["reference"]


def spec_slice_len(n, start, end, step):
    """The spec's text, for one axis of size n: negative indices get n added, then the start
    is clamped into [0, n] ([0, n - 1] for a negative step), the end into [0, n] ([-1, n - 1])."""
    start, end = start + n if start < 0 else start, end + n if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return max(0, -(-(start - end) // -step))


@pytest.mark.parametrize("start,end", [(I64_MIN, I64_MIN), (I32_MIN, I32_MIN), (-3, I64_MIN), (-3, -4)])
def test_backward_slice_from_below_minus_dim_follows_the_spec(start, end):
    """The INT32_MIN / INT64_MIN analogues: a backward start below -dim is clamped to 0 by the
    spec's text and by onnxruntime (one element, as the end clamps to -1); onnx's reference
    evaluator slices with numpy, where such a start empties the slice: a defect of the
    evaluator against the spec's explicit text, not a split (docs/ARCHITECTURE.md).  Forward,
    INT32_MIN / INT64_MIN starts and ends clamp alike in all three."""
    res = infer_node("Slice", [ts("float", ["N"]), np.array([start]), np.array([end]), np.array([0]),
                               np.array([-1])])
    d = res.shape("y0")[0]
    assert d.exactness is Exactness.EXACT
    m = slice_model(start, end, -1)
    for n in (0, 1, 2, 5):
        truths = run_both(m, {"x0": np.zeros(n, np.float32)})
        spec = spec_slice_len(n, start, end, -1)
        assert truths["onnxruntime"] == [(spec,)] and E.evaluate(d.expr, {"N": n}) == spec
        if truths["reference"] != [(spec,)]:
            assert n + start < 0 and truths["reference"] == [(0,)]      # (the evaluator's defect)


def test_slice_where_the_runtimes_agree_stays_exact():
    for start, end, step, want in [(-1, I64_MIN, -1, "N"), (0, I64_MAX, 1, "N"), (-1, -I64_MAX, -1, "N"),
                                   (I64_MAX, I64_MIN, -1, "N"), (1, I64_MAX, 1, "N - min(1, N)")]:
        res = infer_node("Slice", [ts("float", ["N"]), np.array([start]), np.array([end]), np.array([0]),
                                   np.array([step])])
        assert exprs(res, "y0") == (want,), (start, end, step, exprs(res, "y0"))
    # a static dim: computed each way, exact where they agree
    assert exprs(infer_node("Slice", [ts("float", [5]), np.array([0]), np.array([I32_MAX])]), "y0") == (5,)
    res = infer_node("Slice", [ts("float", [5]), np.array([-1]), np.array([I32_MAX]), np.array([0]), np.array([-1])])
    d = res.shape("y0")[0]
    assert d.exactness is Exactness.UPPER_BOUND and d.bound == 5
    assert res.prove("y0[0] == 0 or y0[0] == 5").name == "PROVEN"


def test_forward_slice_to_int32_max_past_2_31():
    """Forward, onnxruntime reads an end of INT32_MAX as the dim, the spec as min(INT32_MAX,
    dim): they differ only past 2**31 - 1, so the length is a bound, exact where that is known."""
    res = infer_node("Slice", [ts("float", ["N"]), np.array([0]), np.array([I32_MAX])])
    d = res.shape("y0")[0]
    assert d.exactness is Exactness.UPPER_BOUND and str(d.bound) == "N"
    res = infer_node("Slice", [ts("float", ["N"]), np.array([0]), np.array([I32_MAX])], assume=["N <= 1000"])
    assert exprs(res, "y0") == ("N",)


IDX = [I32_MAX, I64_MAX, I32_MIN, I64_MIN, -3, -2, -1, 0, 1, 2, 3]


def without_reference_defect(truths, n, start, end, step):
    """``truths`` without onnx's reference evaluator where it contradicts the spec's text
    (a backward start below -dim: ``test_backward_slice_from_below_minus_dim_follows_the_spec``)."""
    if step < 0 and n + start < 0 and truths.get("reference") != [(spec_slice_len(n, start, end, step),)]:
        return {k: v for k, v in truths.items() if k != "reference"}
    return truths


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(IDX), st.sampled_from(IDX), st.sampled_from([1, 2, -1, -2]), st.booleans())
def test_slice_extremes_hold_for_both_runtimes(start, end, step, symbolic):
    """Every EXACT length is both runtimes' size, every bound holds both, at dims 0 to 4."""
    for n in range(5):
        truths = run_both(slice_model(start, end, step, "N" if symbolic else n), {"x0": np.zeros(n, np.float32)})
        assert "onnxruntime" in truths
        truths = without_reference_defect(truths, n, start, end, step)
        res = infer_node("Slice", [ts("float", ["N" if symbolic else n]), np.array([start]), np.array([end]),
                                   np.array([0]), np.array([step])])
        assert not res.conflicts and not res.specializations
        assert_holds(res, ["y0"], {"N": n} if symbolic else {}, truths)


# ================================================================ a reversed Shape vector

@pytest.mark.parametrize("start,end", [(-1, I32_MAX), (-1, I64_MAX), (I32_MAX, I32_MAX), (I64_MAX, I64_MAX)])
def test_reversed_shape_vector_is_not_claimed_empty(start, end):
    """Slice(Shape(x), start, INT_MAX, step -1) feeding ConstantOfShape: the Slice's elements
    were the spec's empty tuple, so the output was claimed rank 0; onnxruntime gives the
    reversed shape [2, 3, 1] (onnx's reference evaluator the empty one)."""
    m = model([helper.make_node("Shape", ["x"], ["s"]),
               helper.make_node("Slice", ["s", "st", "en", "ax", "sp"], ["r"]),
               helper.make_node("ConstantOfShape", ["r"], ["y"])],
              [("x", TP.FLOAT, [1, 3, 2])], ["y"],
              [i64("st", start), i64("en", end), i64("ax", 0), i64("sp", -1)])
    feeds = {"x": np.zeros((1, 3, 2), np.float32)}
    truths = run_both(m, feeds)
    assert truths["onnxruntime"] == [(2, 3, 1)] and truths["reference"] == [()]
    res = smtshape.analyze(m)
    assert res.shape("y") is None and not res.conflicts      # rank unknown: one of two ranks
    assert res.shape("r")[0].exactness is Exactness.UPPER_BOUND


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([None, 0, 1, 2, 3, 5, -1, -2, -3, -4, -6, -7, I32_MAX, I64_MAX, I32_MIN, I64_MIN]),
       st.sampled_from([None, 0, 1, 2, 3, 5, -1, -2, -3, -4, -6, -7, I32_MAX, I64_MAX, I32_MIN, I64_MIN]))
def test_shape_start_end_hold_for_both_runtimes(start, end):
    """Shape's start / end, INT32 / INT64 extremes included: onnxruntime clamps them as the
    spec says (the issue's "reversed Shape" is the Slice of a shape vector above)."""
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    m = model([helper.make_node("Shape", ["x"], ["s"], **attrs), helper.make_node("ConstantOfShape", ["s"], ["y"])],
              [("x", TP.FLOAT, ["A", "B", "C"])], ["s", "y"], opset=21)
    res = smtshape.analyze(m)
    assert not res.conflicts
    truths = run_both(m, {"x": np.zeros((2, 3, 1), np.float32)})
    assert "onnxruntime" in truths
    if end is not None and end < -3 and truths.get("reference") != truths["onnxruntime"]:
        # onnx's reference evaluator adds the rank to a negative end and hands the result to
        # Python's slicing, which counts a still-negative end from the back again: against
        # the spec's text ("clamped to the range [0, r]"), which onnxruntime follows
        assert -6 <= end and truths.pop("reference")
    assert_holds(res, ["s", "y"], {"A": 2, "B": 3, "C": 1}, truths)


# ================================================================ Reshape allowzero=1 with 0 and -1

def reshape_model():
    """x[M, N] reshaped (allowzero=1) to [K, -1], K the length of k[K]."""
    return model([helper.make_node("Shape", ["k"], ["ks"]), helper.make_node("Concat", ["ks", "m1"], ["t"], axis=0),
                  helper.make_node("Reshape", ["x", "t"], ["y"], allowzero=1)],
                 [("x", TP.FLOAT, ["M", "N"]), ("k", TP.FLOAT, ["K"])], ["y"], [i64("m1", -1)])


def test_reshape_allowzero_zero_next_to_inferred():
    """At K = 0 the spec calls the node invalid and onnx's reference evaluator refuses it;
    onnxruntime runs it on an empty input and infers -1 from the non-zero sizes (M, or N).
    The dim was EXACT M*N // K, 0 there; it is now onnxruntime's where K == 0, the spec's
    elsewhere, and K != 0 is not forced (every dynamo export has [B, S, -1, 64] targets)."""
    m = reshape_model()
    res = smtshape.analyze(m)
    assert not res.conflicts and not res.specializations
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y"))
    for mm, n, k in [(0, 3, 0), (2, 0, 0), (0, 0, 0), (2, 3, 2), (2, 3, 6), (0, 3, 2), (2, 0, 3), (2, 3, 0)]:
        truths = run_both(m, {"x": np.zeros((mm, n), np.float32), "k": np.zeros(k, np.float32)})
        if k == 0:
            assert "reference" not in truths
        assert_holds(res, ["y"], {"M": mm, "N": n, "K": k}, truths)
    # onnxruntime's sizes at K = 0, against the old expression's 0
    assert res.evaluate({"M": 0, "N": 3, "K": 0})["y"] == (0, 3)
    assert res.evaluate({"M": 2, "N": 0, "K": 0})["y"] == (0, 2)


def test_reshape_allowzero_cancelling_sizes_stay_plain():
    # [B, S, -1, 64] from [B, S, 768]: 12 whatever B and S are (onnxruntime too)
    m = model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "z", "two"], ["bs"]),
               helper.make_node("Concat", ["bs", "tail"], ["t"], axis=0),
               helper.make_node("Reshape", ["x", "t"], ["y"], allowzero=1)],
              [("x", TP.FLOAT, ["B", "S", 768])], ["y"], [i64("z", 0), i64("two", 2), i64("tail", -1, 64)])
    res = smtshape.analyze(m)
    assert exprs(res, "y") == ("B", "S", 12, 64)
    # [B, -1, 768] from [B, S, 768]: S, except where B == 0 and S == 0 (onnxruntime: 1)
    m = model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Slice", ["s", "z", "one"], ["b"]),
               helper.make_node("Concat", ["b", "tail"], ["t"], axis=0),
               helper.make_node("Reshape", ["x", "t"], ["y"], allowzero=1)],
              [("x", TP.FLOAT, ["B", "S", 768])], ["y"], [i64("z", 0), i64("one", 1), i64("tail", -1, 768)])
    res = smtshape.analyze(m)
    assert not res.specializations
    for b, s in itertools.product((0, 2), (0, 3)):
        assert_holds(res, ["y"], {"B": b, "S": s}, run_both(m, {"x": np.zeros((b, s, 768), np.float32)}))


def test_reshape_allowzero_constant_zero_next_to_inferred_is_a_conflict():
    # a constant 0 next to -1: invalid by the spec whatever the input (onnxruntime runs it
    # only on an empty input)
    res = infer_node("Reshape", [ts("float", ["M", "N"]), np.array([0, -1], np.int64)], {"allowzero": 1})
    assert refused(res)


# ================================================================ Concat with an empty input

def test_concat_skips_an_empty_inputs_other_dims():
    """a[1, N, 1], b[1, N, K] on axis 1: onnxruntime runs K = 0 (b has no elements); the spec
    and onnx's reference evaluator refuse it.  K == 1 was forced; now the relation is
    'K == 1 or an input is empty', and the output is onnxruntime's."""
    m = node_model("Concat", [ts("float", [1, "N", 1]), ts("float", [1, "N", "K"])], {"axis": 1})
    res = smtshape.analyze(m)
    assert not res.conflicts and "K" not in res.specializations.as_dict() or \
        res.specializations["K"].value is None          # (K <= 1 where N >= 1 is true; K == 1 is not)
    assert res.prove("K == 1").name == "CONTINGENT"
    for n, k in itertools.product((0, 2), (0, 1, 3)):
        truths = run_both(m, {"x0": np.zeros((1, n, 1), np.float32), "x1": np.zeros((1, n, k), np.float32)})
        if k == 0 and n:
            assert "reference" not in truths and truths["onnxruntime"] == [(1, 2 * n, 1)]
        assert_holds(res, ["y0"], {"N": n, "K": k}, truths)


def test_concat_of_a_compress_count_and_its_fraction():
    """The generated graph of the issue: a Compress count k met floor(0.75 * k) in such a
    Concat; smtshape derived k == 0 and called the Compress output EXACT 0, where the
    runtime (k = 1, floor(0.75) = 0: an empty input) gives 1."""
    m = model([helper.make_node("Compress", ["x", "c"], ["a"], axis=0),                  # a[k, 1]
               helper.make_node("Shape", ["a"], ["sa"]), helper.make_node("Gather", ["sa", "zs"], ["k"], axis=0),
               helper.make_node("Mul", ["k", "three"], ["k3"]), helper.make_node("Div", ["k3", "four"], ["f"]),
               helper.make_node("Unsqueeze", ["f", "zero1"], ["f1"]),
               helper.make_node("Slice", ["z", "zero1", "f1"], ["b"]),                     # b[floor(3k/4), 2]
               helper.make_node("Concat", ["a", "b"], ["y"], axis=1)],
              [("x", TP.FLOAT, ["N", 1]), ("c", TP.BOOL, ["N"])], ["a", "y"],
              [onnx.numpy_helper.from_array(np.array(0, np.int64), "zs"), i64("zero1", 0),
               onnx.numpy_helper.from_array(np.array(3, np.int64), "three"),
               onnx.numpy_helper.from_array(np.array(4, np.int64), "four"),
               onnx.numpy_helper.from_array(np.zeros((8, 2), np.float32), "z")])
    res = smtshape.analyze(m)
    assert not res.conflicts
    cond = np.array([True, False, False])
    truths = run_both(m, {"x": np.zeros((3, 1), np.float32), "c": cond})
    assert truths["onnxruntime"][0] == (1, 1) and "reference" not in truths
    a = res.shape("a")[0]
    assert a.exactness is not Exactness.EXACT or E.evaluate(a.expr, {"N": 3}) == 1


# ================================================================ Resize, Range, ReduceSum, MaxPool

@pytest.mark.parametrize("big,h", [(2 ** 24, 2 ** 23), (2 ** 24 + 2, 2 ** 23 + 1), (2 ** 25, 2 ** 24)])
def test_resize_scale_2_on_large_dims_runs(big, h):
    """Resize scale 2 meeting a tensor of 2**24 (and more) elements: onnxruntime's float32
    product is exact up to H = 2**24, so these run and agree with the spec; the float32
    premise refused them (H * 2 < 2**24): a conflict.  (onnxruntime was run once at each
    size; 64 to 128 MB per run, not rerun here.)"""
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["r"], mode="nearest"),
               helper.make_node("Add", ["r", "y"], ["z"])],
              [("x", TP.FLOAT, [1, "H"]), ("y", TP.FLOAT, [1, big])], ["z"],
              [onnx.numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "sc")])
    res = smtshape.analyze(m)
    assert res.consistent is True and exprs(res, "z") == (1, big)
    assert res.specializations.as_dict()["H"] == h      # (the Add pins H: a true finding)


def test_resize_premise_is_no_finding_and_a_known_bound_drops_it():
    res = infer_node("Resize", [ts("float", [1, "H"]), None, np.array([1.0, 2.0], np.float32)], {"mode": "nearest"})
    assert exprs(res, "y0") == (1, "2 * H") and not res.specializations
    assert [p.relation for p in res.specializations.premises] == ["H <= 16777216"]
    res = infer_node("Resize", [ts("float", [1, "H"]), None, np.array([1.0, 2.0], np.float32)], {"mode": "nearest"},
                     assume=["H <= 4096"])
    assert exprs(res, "y0") == (1, "2 * H") and not res.specializations.premises
    # past 2**24 the size is onnxruntime's float32 floor, bounded, never a conflict
    res = infer_node("Resize", [ts("float", [1, "H"]), None, np.array([1.0, 2.0], np.float32)], {"mode": "nearest"},
                     assume=["H >= 16777217"])
    d = res.shape("y0")[1]
    assert res.consistent is True and d.exactness is Exactness.UPPER_BOUND and not res.specializations.premises


def test_resize_other_scales_need_no_premise():
    res = infer_node("Resize", [ts("float", [1, "H"]), None, np.array([1.0, 0.7], np.float32)], {"mode": "nearest"})
    d = res.shape("y0")[1]
    assert d.exactness is Exactness.UPPER_BOUND and not res.specializations.premises and not res.specializations
    for h in (0, 1, 10, 1000, 12345):
        n = run_onnxruntime(node_model("Resize", [ts("float", [1, "H"]), None, np.array([1.0, 0.7], np.float32)],
                                       {"mode": "nearest"}), {"x0": np.zeros((1, h), np.float32)})[0].shape[1]
        assert E.evaluate(d.bound, {"H": h}) >= n
        assert res.evaluate({"H": h}) is not None


def range_model(start, delta, tail=None):
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
             helper.make_node("Cast", ["n"], ["nf"], to=TP.FLOAT), helper.make_node("Range", ["st", "nf", "dl"], ["r"])]
    inputs = [("x", TP.FLOAT, ["N"])]
    if tail:
        nodes.append(helper.make_node("Add", ["r", "y"], ["z"]))
        inputs.append(("y", TP.FLOAT, [tail]))
    return model(nodes, inputs, ["z" if tail else "r"],
                 [i64("i0", 0), onnx.numpy_helper.from_array(np.array(start, np.float32), "st"),
                  onnx.numpy_helper.from_array(np.array(delta, np.float32), "dl")])


@pytest.mark.parametrize("start,delta", [(0.0, 1.0), (1.0, 1.0), (0.0, 2.0), (2.0, 3.0)])
def test_float_range_over_a_symbolic_dim(start, delta):
    """Range(start, Cast(N, float), delta): no relation forced on N, and the length is both
    runtimes' where it is claimed (the store knows N is a float32 integer there)."""
    m = range_model(start, delta)
    res = smtshape.analyze(m)
    assert not res.conflicts and not res.specializations
    for n in (0, 1, 2, 3, 7, 30):
        assert_holds(res, ["r"], {"N": n}, run_both(m, {"x": np.zeros(n, np.float32)}))
    m = range_model(start, delta, tail="M")
    res = smtshape.analyze(m)
    assert not res.conflicts and not res.specializations


@pytest.mark.parametrize("axes,keepdims", [([1, 1], 0), ([1, -2], 1), ([0, 2, -1], 0)])
def test_reduce_sum_with_duplicate_axes_runs(axes, keepdims):
    """onnxruntime reduces each named axis once; onnx's reference evaluator (numpy) refuses a
    repeated axis, the spec does not forbid it: no conflict, onnxruntime's shape."""
    m = node_model("ReduceSum", [ts("float", ["A", "B", "C"]), np.array(axes, np.int64)], {"keepdims": keepdims})
    res = smtshape.analyze(m)
    assert res.consistent is True and not res.specializations
    assert_holds(res, ["y0"], {"A": 2, "B": 3, "C": 4}, run_both(m, {"x0": np.zeros((2, 3, 4), np.float32)}))


def test_maxpool_same_with_a_dilation_is_exact_only_where_the_spec_and_onnxruntime_agree():
    """SAME_UPPER / SAME_LOWER with a dilation, an empty batch or not: the spec gives
    ceil(H / stride); onnxruntime pads for the undilated kernel (0 where the spec says 1 at
    H = 1, kernel 2, dilation 2).  It was EXACT 1 there; tests/ops/test_conv.py has the static
    case.  (onnx's reference evaluator is not the judge here: it gives floor(H / stride) for
    SAME_LOWER with a stride, against the spec's text and onnxruntime, and refuses many of
    these sizes.)"""
    for auto, k, d, s in itertools.product(("SAME_UPPER", "SAME_LOWER"), (2, 3), (1, 2), (1, 2)):
        attrs = {"kernel_shape": [k], "dilations": [d], "strides": [s], "auto_pad": auto}
        m = node_model("MaxPool", [ts("float", ["B", 1, "H"])], attrs, opset=19)
        res = smtshape.analyze(m)
        assert not res.conflicts and not res.specializations
        dim = res.shape("y0")[2]
        for b, h in itertools.product((0, 1), (0, 1, 2, 5)):
            truths = {k: v for k, v in run_both(m, {"x0": np.zeros((b, 1, h), np.float32)}).items()
                      if k == "onnxruntime"}
            assert_holds(res, ["y0"], {"B": b, "H": h}, truths)
            if dim.exactness is Exactness.EXACT:
                assert E.evaluate(dim.expr, {"B": b, "H": h}) == -(-h // s)       # the spec's
