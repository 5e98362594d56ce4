"""Shapes of the graphs users deploy (issue 19): merged decoders (one If on a run-time
``use_cache_branch``), detection post-processing (NonMaxSuppression inside an If, a Loop
appending one row per detection), each a small model built here, checked against
onnxruntime on both sides of every edge."""
import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto as T, helper as h, numpy_helper as nh

import smtshape
from smtshape import expr as E
from smtshape.dim import Exactness
from smtshape.testing import exprs

EX, UB = Exactness.EXACT, Exactness.UPPER_BOUND


def vi(n, t, s=None):
    return h.make_tensor_value_info(n, t, s)


def c64(name, vals):
    return h.make_node("Constant", [], [name], value=nh.from_array(np.array(vals, dtype=np.int64), name))


def model(nodes, inputs, outputs, opset=18):
    g = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


def run_ort(m, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [tuple(o.shape) for o in s.run(None, feeds)]


def holds(d, size, env):
    """``size`` (a runtime size) is what dim ``d`` claims at ``env``."""
    if d.exactness is EX:
        return E.evaluate(d.expr, env, dict(d.definitions)) == size
    if d.exactness is UB:
        return size <= E.evaluate(d.bound, env, dict(d.definitions))
    return True


# ---------------------------------------------------------------- merged decoder
def _decoder_branch(tag, cache):
    """A decoder-like branch: Reshapes that need sequence_length > 0 (``ids`` to [-1, S]) and
    one whose target reads S from a Shape where the input has 4 (so S == 0 would copy 4);
    the cache branch concatenates the past on axis 1 (``present``), the other returns it."""
    n = [h.make_node("Shape", ["ids"], [f"{tag}sh"]),
         c64(f"{tag}i0", [0]), c64(f"{tag}i1", [1]), c64(f"{tag}i2", [2]), c64(f"{tag}m1", [-1]),
         c64(f"{tag}four", [4]),
         h.make_node("Slice", [f"{tag}sh", f"{tag}i1", f"{tag}i2"], [f"{tag}s"]),
         h.make_node("Slice", [f"{tag}sh", f"{tag}i0", f"{tag}i1"], [f"{tag}b"]),
         h.make_node("Concat", [f"{tag}m1", f"{tag}s"], [f"{tag}t1"], axis=0),
         h.make_node("Reshape", ["ids", f"{tag}t1"], [f"{tag}r1"]),
         h.make_node("Concat", [f"{tag}b", f"{tag}s", f"{tag}four"], [f"{tag}t2"], axis=0),
         h.make_node("Reshape", ["x", f"{tag}t2"], [f"{tag}y"])]
    if cache:
        n.append(h.make_node("Concat", ["past", f"{tag}y"], [f"{tag}p"], axis=1))
    else:
        n.append(h.make_node("Identity", [f"{tag}y"], [f"{tag}p"]))
    return h.make_graph(n, tag, [], [vi(f"{tag}y", T.FLOAT), vi(f"{tag}p", T.FLOAT)])


MERGED = model([h.make_node("If", ["use_cache_branch"], ["logits", "present"], name="if",
                            then_branch=_decoder_branch("t", True), else_branch=_decoder_branch("e", False))],
               [vi("ids", T.INT64, ["B", "S"]), vi("x", T.FLOAT, ["B", 4, "S"]), vi("past", T.FLOAT, ["B", "P", 4]),
                vi("use_cache_branch", T.BOOL, [])],
               [vi("logits", T.FLOAT), vi("present", T.FLOAT)])


def test_merged_decoder_if_gives_each_branch_size():
    res = smtshape.analyze(MERGED)
    # both branches give S (was an exact Piecewise((4, Eq(S, 0)), (S, True)): each branch was
    # walked without the fact S > 0 that both need)
    assert exprs(res, "logits") == ("B", "S", 4)
    assert all(d.exactness is EX for d in res.shape("logits"))
    # present: P + S on the cache branch, S on the other: bounded by P + S (the bound was
    # 'P + Piecewise((4, Eq(S, 0)), (S, True))'), and the finding says what each branch gives
    d = res.shape("present")[1]
    assert d.exactness is UB and E.evaluate(d.bound, {"P": 5, "S": 3}) == 8
    assert "Piecewise" not in str(d.bound)
    said = [str(x) for x in res.diagnostics]
    assert any("'present' axis 1 is P + S when the condition is true, S when it is false" in t for t in said)
    # the relation both branches need is a fact of the model, reported like the decoders'
    assert [s.relation for s in res.specializations] == ["S >= 1"]
    assert res.consistent is True


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 4), st.booleans())
def test_merged_decoder_vs_ort(b, s, p, cache):
    feeds = {"ids": np.zeros((b, s), np.int64), "x": np.zeros((b, 4, s), np.float32),
             "past": np.zeros((b, p, 4), np.float32), "use_cache_branch": np.array(cache)}
    want = dict(zip(("logits", "present"), run_ort(MERGED, feeds)))
    res = smtshape.analyze(MERGED)
    env = {"B": b, "S": s, "P": p}
    for name, w in want.items():
        assert all(holds(d, x, env) for d, x in zip(res.shape(name), w))
    assert want["present"][1] == (p + s if cache else s)


def _position_branch(tag, cache):
    """Position embeddings: rows past .. past + S - 1 of a 10-row table with a cache, rows
    0 .. S - 1 without (BART's learned positions in a merged decoder)."""
    n = [h.make_node("Shape", ["ids"], [f"{tag}sh"]), c64(f"{tag}one", 1),
         h.make_node("Gather", [f"{tag}sh", f"{tag}one"], [f"{tag}s"], axis=0)]
    if cache:
        n += [h.make_node("Shape", ["past"], [f"{tag}psh"]),
              h.make_node("Gather", [f"{tag}psh", f"{tag}one"], [f"{tag}start"], axis=0)]
    else:
        n.append(c64(f"{tag}start", 0))
    n += [h.make_node("Add", [f"{tag}start", f"{tag}s"], [f"{tag}end"]),
          h.make_node("Range", [f"{tag}start", f"{tag}end", f"{tag}one"], [f"{tag}pos"]),
          h.make_node("Gather", ["table", f"{tag}pos"], [f"{tag}emb"], axis=0)]
    return h.make_graph(n, tag, [], [vi(f"{tag}emb", T.FLOAT)])


POSITIONS = h.make_model(h.make_graph(
    [h.make_node("If", ["c"], ["emb"], name="if", then_branch=_position_branch("t", True),
                 else_branch=_position_branch("e", False))], "g",
    [vi("ids", T.INT64, ["B", "S"]), vi("past", T.FLOAT, ["B", "P", 4]), vi("c", T.BOOL, [])], [vi("emb", T.FLOAT)],
    initializer=[nh.from_array(np.zeros((10, 4), np.float32), "table")]),
    opset_imports=[h.make_opsetid("", 18)], ir_version=8)


def test_merged_decoder_limit_each_branch_forces_is_found():
    # P + S <= 10 with the cache, S <= 10 without: whichever runs, S <= 10 (was not found:
    # each branch's facts stayed in its walk)
    res = smtshape.analyze(POSITIONS)
    assert exprs(res, "emb") == ("S", 4)
    assert [s.relation for s in res.specializations] == ["S <= 10"]
    for c in (True, False):
        feeds = {"ids": np.zeros((1, 10), np.int64), "past": np.zeros((1, 0, 4), np.float32), "c": np.array(c)}
        assert run_ort(POSITIONS, feeds)[0] == (10, 4)
        feeds["ids"] = np.zeros((1, 11), np.int64)
        with pytest.raises(Exception):
            run_ort(POSITIONS, feeds)


# ---------------------------------------------------------------- If: branch dims that are aliases
def _slices(tag, k, last):
    """``k`` Slices of x from 1 to len(y): nested min / max terms, big enough to be
    replaced by an alias symbol inside the branch."""
    n = [c64(f"{tag}one", [1])]
    cur = "x"
    for i in range(k):
        n += [h.make_node("Shape", ["y"], [f"{tag}ys{i}"]),
              h.make_node("Slice", [cur, f"{tag}one", f"{tag}ys{i}"], [f"{tag}s{i}"])]
        cur = f"{tag}s{i}"
    n.append(h.make_node(last, [cur], [f"{tag}o"]))
    return h.make_graph(n, tag, [], [vi(f"{tag}o", T.FLOAT)])


SLICED = model([h.make_node("If", ["c"], ["out"], name="if", then_branch=_slices("t", 3, "Identity"),
                            else_branch=_slices("e", 3, "Neg"))],
               [vi("x", T.FLOAT, ["N"]), vi("y", T.FLOAT, ["M"]), vi("c", T.BOOL, [])], [vi("out", T.FLOAT)])


SLICED_RES = smtshape.analyze(SLICED)


def test_if_branches_ending_in_aliases_join_exact():
    # each branch's size was a fresh alias symbol of its own walk: UNKNOWN
    d = SLICED_RES.shape("out")[0]
    assert d.exactness is EX


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 6), st.integers(0, 6), st.booleans())
def test_if_branches_ending_in_aliases_vs_ort(n, m, c):
    want = run_ort(SLICED, {"x": np.zeros(n, np.float32), "y": np.zeros(m, np.float32), "c": np.array(c)})[0]
    d = SLICED_RES.shape("out")[0]
    assert E.evaluate(d.expr, {"N": n, "M": m}, dict(d.definitions)) == want[0]


# ---------------------------------------------------------------- If: a condition over dims
def _short_or_long():
    then = h.make_graph([h.make_node("Concat", ["x", "x"], ["t"], axis=0)], "then", [], [vi("t", T.FLOAT)])
    els = h.make_graph([c64("z", [0]), c64("four", [4]), h.make_node("Slice", ["x", "z", "four"], ["e"])],
                       "else", [], [vi("e", T.FLOAT)])
    return model([h.make_node("Shape", ["x"], ["sh"]), c64("lim", [4]), h.make_node("Less", ["sh", "lim"], ["lt"]),
                  h.make_node("Squeeze", ["lt"], ["c"]),
                  h.make_node("If", ["c"], ["out"], name="if", then_branch=then, else_branch=els)],
                 [vi("x", T.FLOAT, ["N"])], [vi("out", T.FLOAT)])


SHORT_OR_LONG = _short_or_long()


def test_if_condition_over_dims_is_an_exact_case_split():
    # x twice when N < 4, else x[:4]: was a data symbol bounded by max(2 N, min(N, 4))
    res = smtshape.analyze(SHORT_OR_LONG)
    d = res.shape("out")[0]
    assert d.exactness is EX
    assert [E.evaluate(d.expr, {"N": n}) for n in range(7)] == [0, 2, 4, 6, 4, 4, 4]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 8))
def test_if_condition_over_dims_vs_ort(n):
    want = run_ort(SHORT_OR_LONG, {"x": np.zeros(n, np.float32)})[0]
    d = smtshape.analyze(SHORT_OR_LONG).shape("out")[0]
    assert E.evaluate(d.expr, {"N": n}) == want[0]


# ---------------------------------------------------------------- detection: NMS inside an If
def _batched_nms():
    """torchvision's batched_nms as exported: ``keep`` is empty when there is no box, else
    the column of NonMaxSuppression's selected indices; then the kept boxes are gathered."""
    then = h.make_graph([h.make_node("Constant", [], ["t"], value=nh.from_array(np.zeros(0, np.int64), "tv"))],
                        "then", [], [vi("t", T.INT64)])
    els = h.make_graph([
        c64("zero", [0]), c64("two", [2]), c64("one", [1]), c64("mo", [100]),
        h.make_node("Unsqueeze", ["boxes", "zero"], ["b3"]),
        h.make_node("Unsqueeze", ["scores", "zero"], ["s2"]),
        h.make_node("Unsqueeze", ["s2", "zero"], ["s3"]),
        h.make_node("NonMaxSuppression", ["b3", "s3", "mo"], ["sel"]),
        h.make_node("Gather", ["sel", "two"], ["col"], axis=1),
        h.make_node("Squeeze", ["col", "one"], ["keep"])], "else", [], [vi("keep", T.INT64)])
    return model([h.make_node("Shape", ["boxes"], ["sh"]), c64("z0", [0]), c64("z1", [1]),
                  h.make_node("Slice", ["sh", "z0", "z1"], ["n"]), c64("zz", [0]),
                  h.make_node("Equal", ["n", "zz"], ["eq"]), h.make_node("Squeeze", ["eq"], ["c"]),
                  h.make_node("If", ["c"], ["keep"], name="if", then_branch=then, else_branch=els),
                  h.make_node("Gather", ["boxes", "keep"], ["kept"], axis=0)],
                 [vi("boxes", T.FLOAT, ["N", 4]), vi("scores", T.FLOAT, ["N"])],
                 [vi("keep", T.INT64), vi("kept", T.FLOAT)])


BATCHED_NMS = _batched_nms()


def test_nms_inside_if_is_bounded():
    # NonMaxSuppression selects at most min(100, N) boxes of the one class: the If's output
    # (0 boxes, or the selection) and the gathered boxes are bounded by it (were UNKNOWN)
    res = smtshape.analyze(BATCHED_NMS)
    for name in ("keep", "kept"):
        d = res.shape(name)[0]
        assert d.exactness is UB
        assert [E.evaluate(d.bound, {"N": n}) for n in (0, 3, 100, 250)] == [0, 3, 100, 100]
    assert res.shape("kept")[1].expr == 4


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 12), st.integers(0, 2 ** 16))
def test_nms_inside_if_vs_ort(n, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 10, (n, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(0.5, 3, (n, 2)).astype(np.float32)], axis=1)
    want = run_ort(BATCHED_NMS, {"boxes": boxes, "scores": rng.uniform(0, 1, n).astype(np.float32)})
    res = smtshape.analyze(BATCHED_NMS)
    for name, w in zip(("keep", "kept"), want):
        assert all(holds(d, x, {"N": n}) for d, x in zip(res.shape(name), w))


# ---------------------------------------------------------------- detection: a Loop appending per detection
def _append_loop(trip_from_nonzero=False):
    """torchvision's keypoint decoding as exported: a Loop over the detections whose carried
    value starts empty ([0, 3]) and gets one row per iteration (Concat on axis 0)."""
    body = h.make_graph([
        h.make_node("Gather", ["x", "i"], ["row"], axis=0),
        c64("ax0", [0]),
        h.make_node("Unsqueeze", ["row", "ax0"], ["row2"]),
        h.make_node("Concat", ["acc", "row2"], ["acc_out"], axis=0),
        h.make_node("Identity", ["cin"], ["cout"])], "body",
        [vi("i", T.INT64, []), vi("cin", T.BOOL, []), vi("acc", T.FLOAT)],
        [vi("cout", T.BOOL, []), vi("acc_out", T.FLOAT)])
    nodes = [h.make_node("Constant", [], ["init"], value=nh.from_array(np.zeros((0, 3), np.float32), "iv")),
             h.make_node("Constant", [], ["true"], value=h.make_tensor("tv", T.BOOL, [], [True]))]
    if trip_from_nonzero:
        nodes += [h.make_node("NonZero", ["mask"], ["nz"]), h.make_node("Shape", ["nz"], ["nzs"]),
                  c64("one", [1]), h.make_node("Gather", ["nzs", "one"], ["cnt"], axis=0),
                  h.make_node("Squeeze", ["cnt"], ["M"])]
    else:
        nodes += [h.make_node("Shape", ["x"], ["xs"]), c64("zero", [0]),
                  h.make_node("Gather", ["xs", "zero"], ["cnt"], axis=0), h.make_node("Squeeze", ["cnt"], ["M"])]
    nodes.append(h.make_node("Loop", ["M", "true", "init"], ["out"], body=body, name="loop"))
    inputs = [vi("x", T.FLOAT, ["N", 3])] + ([vi("mask", T.BOOL, ["N"])] if trip_from_nonzero else [])
    return model(nodes, inputs, [vi("out", T.FLOAT)])


APPEND = _append_loop()
APPEND_DD = _append_loop(trip_from_nonzero=True)


def test_loop_appending_per_iteration_grows_by_the_trip_count():
    # was UNKNOWN (the carried dim varies); it is 0 + 1 per iteration
    res = smtshape.analyze(APPEND)
    assert exprs(res, "out") == ("N", 3)
    assert all(d.exactness is EX for d in res.shape("out"))
    # a data-dependent trip count (the number of detections): bounded by what bounds it
    d = smtshape.analyze(APPEND_DD).shape("out")[0]
    assert d.exactness is UB and E.evaluate(d.bound, {"N": 7}) == 7


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 6), st.integers(0, 2 ** 16))
def test_loop_appending_vs_ort(n, seed):
    x = np.zeros((n, 3), np.float32)
    assert run_ort(APPEND, {"x": x})[0] == (n, 3)
    mask = np.random.default_rng(seed).uniform(0, 1, n) < 0.5
    want = run_ort(APPEND_DD, {"x": x, "mask": mask})[0]
    res = smtshape.analyze(APPEND_DD)
    assert all(holds(d, w, {"N": n}) for d, w in zip(res.shape("out"), want))
