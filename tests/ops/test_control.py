"""Rules of smtshape/ops/control.py (If, Loop), checked by hand and against onnxruntime."""
import numpy as np
import pytest
import onnxruntime as ort
from hypothesis import given, settings, strategies as st
from onnx import TensorProto as T, helper as h

import smtshape
from smtshape import expr as E
from smtshape.dim import Exactness
from smtshape.testing import exprs

EX, UB, UNK = Exactness.EXACT, Exactness.UPPER_BOUND, Exactness.UNKNOWN


def vi(n, t, s=None):
    return h.make_tensor_value_info(n, t, s)


def model(nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=8)


def run_ort(m, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [tuple(o.shape) for o in s.run(None, feeds)]


def branch(name, nodes, out):
    return h.make_graph(nodes, name, [], [vi(out, T.FLOAT)])


THEN_ID = branch("then", [h.make_node("Identity", ["x"], ["t"])], "t")
ELSE_CAT = branch("else", [h.make_node("Concat", ["x", "x"], ["e"], axis=0)], "e")


def if_model(then, els, cond_init=None, xshape=("N", 4)):
    inputs = [vi("x", T.FLOAT, list(xshape))]
    inits = []
    if cond_init is None:
        inputs.insert(0, vi("c", T.BOOL, []))
    else:
        inits.append(h.make_tensor("c", T.BOOL, [], [cond_init]))
    return model([h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=els, name="node")],
                 inputs, [vi("y", T.FLOAT)], inits)


# ---------------------------------------------------------------- If
def test_if_known_condition_takes_one_branch():
    res = smtshape.analyze(if_model(THEN_ID, ELSE_CAT, cond_init=True))
    assert exprs(res, "y") == ("N", 4) and res.shape("y")[0].exactness is EX
    res = smtshape.analyze(if_model(THEN_ID, ELSE_CAT, cond_init=False))
    assert exprs(res, "y") == ("2 * N", 4)


def test_if_unknown_condition_differing_dim_is_bounded():
    res = smtshape.analyze(if_model(THEN_ID, ELSE_CAT))
    d0, d1 = res.shape("y")
    assert d1.expr == 4 and d1.exactness is EX
    assert d0.exactness is UB and E.evaluate(d0.bound, {"N": 3}) == 6


def test_if_unknown_condition_equal_dims_exact():
    els = branch("else", [h.make_node("Neg", ["x"], ["e"])], "e")
    res = smtshape.analyze(if_model(THEN_ID, els))
    assert exprs(res, "y") == ("N", 4)
    assert all(d.exactness is EX for d in res.shape("y"))


def test_if_different_ranks_unknown():
    els = branch("else", [h.make_node("Flatten", ["x"], ["e"], axis=0)], "e")
    res = smtshape.analyze(if_model(THEN_ID, els, xshape=("N", 4, 2)))
    assert res.shape("y") is None


def test_if_branch_constraints_do_not_leak():
    # the else branch adds x to a 7-row tensor: only valid when it runs; N must not be pinned to 7
    seven = h.make_tensor("s", T.FLOAT, [7, 4], np.zeros(28, np.float32))
    els = h.make_graph([h.make_node("Concat", ["x", "s"], ["e"], axis=1)], "else", [], [vi("e", T.FLOAT)],
                       initializer=[seven])
    res = smtshape.analyze(if_model(THEN_ID, els))
    assert not res.conflicts
    assert res.prove("N == 7").name != "PROVEN"
    # when the condition is known false the branch runs, and N is pinned
    # (N == 0 too: onnxruntime's Concat skips an empty input's other dims, tests/test_splits.py)
    res = smtshape.analyze(if_model(THEN_ID, els, cond_init=False))
    assert res.prove("N == 7 or N == 0").name == "PROVEN"
    assert res.prove("N == 7").name != "PROVEN"


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 5), st.booleans())
def test_if_vs_ort(n, c):
    m = if_model(THEN_ID, ELSE_CAT)
    want = run_ort(m, {"c": np.array(c), "x": np.zeros((n, 4), np.float32)})[0]
    res = smtshape.analyze(m)
    d0, d1 = res.shape("y")
    assert d1.expr == want[1]
    assert want[0] <= E.evaluate(d0.bound, {"N": n})


# ---------------------------------------------------------------- Loop
def loop_body(extra_nodes=(), scan_src="xin"):
    nodes = list(extra_nodes)
    nodes += [h.make_node("Identity", ["cin"], ["cout"]), h.make_node("Identity", [scan_src], ["scan"])]
    return h.make_graph(nodes, "body",
                        [vi("i", T.INT64, []), vi("cin", T.BOOL, []), vi("xin", T.FLOAT)],
                        [vi("cout", T.BOOL, []), vi("xout", T.FLOAT), vi("scan", T.FLOAT)])


def loop_model(body, m=None, cond=None):
    inputs, inits = [vi("x", T.FLOAT, ["N", 4])], []
    if m is None:
        inputs.append(vi("M", T.INT64, []))
    else:
        inits.append(h.make_tensor("M", T.INT64, [], [m]))
    names = ["M", "", "x"]
    if cond is not None:
        inits.append(h.make_tensor("c", T.BOOL, [], [cond]))
        names[1] = "c"
    return model([h.make_node("Loop", names, ["xf", "sc"], body=body, name="node")],
                 inputs, [vi("xf", T.FLOAT), vi("sc", T.FLOAT)], inits)


INVARIANT = loop_body([h.make_node("Add", ["xin", "xin"], ["xout"])])
GROWING = loop_body([h.make_node("Concat", ["xin", "xin"], ["xout"], axis=0)])
# scanning a growing value is rejected by onnxruntime past one iteration; scan a fixed-size slice instead
GROWING_OK = loop_body([h.make_node("Concat", ["xin", "xin"], ["xout"], axis=0),
                        h.make_node("Constant", [], ["z"], value=h.make_tensor("zv", T.FLOAT, [2], [0, 1]))],
                       scan_src="z")


def test_loop_invariant_carried_and_known_trip():
    res = smtshape.analyze(loop_model(INVARIANT, m=3))
    assert exprs(res, "xf") == ("N", 4)
    assert exprs(res, "sc") == (3, "N", 4)
    assert all(d.exactness is EX for d in res.shape("sc"))


def test_loop_growing_carried_is_not_exact():
    res = smtshape.analyze(loop_model(GROWING, m=3))
    d0, d1 = res.shape("xf")
    assert d0.exactness is not EX and d1.expr == 4 and d1.exactness is EX
    s = res.shape("sc")
    assert s[0].expr == 3 and s[1].exactness is not EX and s[2].expr == 4


def test_loop_runtime_trip_count():
    res = smtshape.analyze(loop_model(INVARIANT))
    assert exprs(res, "xf") == ("N", 4)
    s = res.shape("sc")
    assert s is None or s[0].exactness is not EX


def test_loop_growing_with_fixed_scan():
    res = smtshape.analyze(loop_model(GROWING_OK, m=3))
    assert exprs(res, "sc") == (3, 2)
    assert res.shape("xf")[0].exactness is not EX


def test_loop_zero_trip():
    res = smtshape.analyze(loop_model(INVARIANT, m=0))
    assert exprs(res, "xf") == ("N", 4)
    # onnxruntime: no iteration -> the body output's static shape if it finds one, else (0,)
    assert res.shape("sc") is None


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 4), st.integers(0, 3), st.booleans())
def test_loop_vs_ort(m, n, grow):
    mod = loop_model(GROWING_OK if grow else INVARIANT, m=m)
    want = run_ort(mod, {"x": np.zeros((n, 4), np.float32)})
    res = smtshape.analyze(mod)
    for name, w in zip(("xf", "sc"), want):
        s = res.shape(name)
        if s is None:
            continue
        assert len(s) == len(w)
        for d, x in zip(s, w):
            if d.exactness is EX:
                assert E.evaluate(d.expr, {"N": n}) == x


# ---------------------------------------------------------------- Scan
def _scan_model(in_axis, out_axis, dims):
    from onnx import TensorProto, helper
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        "body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, ["D"]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, ["D"])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, ["D"]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, ["D"])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", body=body, num_scan_inputs=1,
                            scan_input_axes=[in_axis], scan_output_axes=[out_axis])
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("s0", TensorProto.FLOAT, ["D"]),
                           helper.make_tensor_value_info("xs", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("s_final", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("ys", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


@pytest.mark.parametrize("in_axis,out_axis", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_scan_stacks_per_iteration_outputs_like_onnxruntime(in_axis, out_axis):
    import numpy as np
    import onnxruntime as ort
    import smtshape
    from smtshape import expr as E
    dims = ["L", "D"] if in_axis == 0 else ["D", "L"]
    model = _scan_model(in_axis, out_axis, dims)
    res = smtshape.analyze(model, assume=["L >= 1"])
    assert res.conflicts == []
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for L, D in [(3, 4), (1, 2), (5, 1)]:
        xs = np.zeros((L, D) if in_axis == 0 else (D, L), np.float32)
        got = sess.run(None, {"s0": np.zeros(D, np.float32), "xs": xs})
        for name, arr in zip(["s_final", "ys"], got):
            ours = res.shape(name)
            assert tuple(E.evaluate(d.expr, {"L": L, "D": D}) for d in ours) == arr.shape


def test_scan_length_unknown_to_be_positive_still_stacks_the_per_iteration_shape():
    """A Scan-9+ over a sequence of length 0 has no iteration to take the per-iteration
    shape from, but onnxruntime and onnx's reference evaluator both refuse to run it: the
    stacked shape [L, D] holds whenever the node runs (ONNX's test_scan_opset9 expects it)."""
    from onnx.reference import ReferenceEvaluator
    model = _scan_model(0, 0, ["L", "D"])
    res = smtshape.analyze(model)
    assert [str(d) for d in res.shape("ys")] == ["L", "D"] and not res.conflicts and not res.unchecked_nodes
    assert [str(d) for d in res.shape("s_final")] == ["D"]
    feeds = {"s0": np.zeros(3, np.float32), "xs": np.zeros((0, 3), np.float32)}
    with pytest.raises(Exception):
        run_ort(model, feeds)
    with pytest.raises(Exception):
        ReferenceEvaluator(model).run(None, feeds)


def _scan8_model(with_lens: bool):
    from onnx import TensorProto as TP, helper
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_in"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_out"])],
        "b", [helper.make_tensor_value_info("s_in", TP.FLOAT, [4]), helper.make_tensor_value_info("x_in", TP.FLOAT, [4])],
        [helper.make_tensor_value_info("s_out", TP.FLOAT, [4]), helper.make_tensor_value_info("y_out", TP.FLOAT, [4])])
    node = helper.make_node("Scan", ["lens" if with_lens else "", "s0", "x"], ["s", "y"], name="scan", body=body,
                            num_scan_inputs=1)
    ins = [helper.make_tensor_value_info("s0", TP.FLOAT, ["B", 4]), helper.make_tensor_value_info("x", TP.FLOAT, ["B", "S", 4])]
    if with_lens:
        ins.insert(0, helper.make_tensor_value_info("lens", TP.INT64, ["B"]))
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("s", TP.FLOAT, None),
                                             helper.make_tensor_value_info("y", TP.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)


@pytest.mark.parametrize("with_lens", [False, True])
def test_scan_8_batch_and_sequence_axes_like_onnxruntime(with_lens):
    import numpy as np
    import smtshape
    from smtshape.testing import run_onnxruntime
    model = _scan8_model(with_lens)
    res = smtshape.analyze(model, assume=["S >= 1"])
    assert res.conflicts == [] and res.unchecked_nodes == []
    for B, S in [(2, 5), (1, 1), (3, 2)]:
        feeds = {"s0": np.zeros((B, 4), np.float32), "x": np.zeros((B, S, 4), np.float32)}
        if with_lens:
            feeds["lens"] = np.full((B,), S, np.int64)
        got = [o.shape for o in run_onnxruntime(model, feeds)]
        ours = res.evaluate({"B": B, "S": S})
        assert (ours["s"], ours["y"]) == tuple(got)
    # zero-length sequences: no iteration; onnxruntime then gives the body output's static
    # per-iteration shape ([4] here), which the stacked [B, S, 4] claims at S = 0
    res = smtshape.analyze(model)
    assert [str(d) for d in res.shape("y")] == ["B", "S", "4"]
    if not with_lens:       # (with sequence_lens all 0 onnxruntime refuses the run)
        got = [o.shape for o in run_onnxruntime(model, {"s0": np.zeros((2, 4), np.float32),
                                                       "x": np.zeros((2, 0, 4), np.float32)})]
        assert res.evaluate({"B": 2, "S": 0})["y"] == got[1] == (2, 0, 4)


def test_loop_iteration_number_is_a_bounded_symbol_so_per_iteration_slices_are_exact():
    """ONNX's test_loop11: the body slices x[i : i + 1] of a 5-element constant with the
    iteration number i; with i a symbol in [0, M - 1] every iteration's slice has one
    element, so the carried value keeps its shape and the scan output is [5, 1]."""
    import numpy as np
    from onnx import TensorProto as TP, helper, numpy_helper
    import smtshape
    from smtshape.testing import run_onnxruntime
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["x"], value=numpy_helper.from_array(np.arange(5, dtype=np.float32), "xv")),
         helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64), "ov")),
         helper.make_node("Add", ["it", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["it", "ax"], ["st"]), helper.make_node("Unsqueeze", ["end", "ax"], ["en"]),
         helper.make_node("Slice", ["x", "st", "en"], ["sl"]),
         helper.make_node("Add", ["y_in", "sl"], ["y_out"]), helper.make_node("Identity", ["y_out"], ["scan_out"])],
        "body", [helper.make_tensor_value_info("it", TP.INT64, []), helper.make_tensor_value_info("cond_in", TP.BOOL, []),
                 helper.make_tensor_value_info("y_in", TP.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TP.BOOL, []), helper.make_tensor_value_info("y_out", TP.FLOAT, [1]),
         helper.make_tensor_value_info("scan_out", TP.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "ax")])
    node = helper.make_node("Loop", ["M", "", "y"], ["res_y", "res_scan"], name="loop", body=body)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("y", TP.FLOAT, [1])],
                          [helper.make_tensor_value_info("res_y", TP.FLOAT, None),
                           helper.make_tensor_value_info("res_scan", TP.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.array(5, np.int64), "M")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    res = smtshape.analyze(m)
    want = [o.shape for o in run_onnxruntime(m, {"y": np.zeros(1, np.float32)})]
    assert [tuple(d.expr for d in res.shape(n)) for n in ("res_y", "res_scan")] == want == [(1,), (5, 1)]


# ---------------------------------------------------------------- violated preconditions
def rule_ids(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints if c.provenance.node}


def _parse(text):
    import onnx
    return onnx.parser.parse_model(text)


SCAN_CASES = {
    # ONNX's test_scan_num_scan_inputs_out_of_range (opsets 21, 9, 8)
    "num_scan_inputs_21": ("""<ir_version: 10, opset_import: ["" : 21]>
        agraph (float[2] in0, float[3, 2] in1) => (out) {
            out = Scan <num_scan_inputs = 9, body = b (float a, float x) => (float c) { c = Add(a, x) }> (in0, in1)
        }""", "scan.num_scan_inputs"),
    "num_scan_inputs_8": ("""<ir_version: 8, opset_import: ["" : 8]>
        agraph (float[1, 3] ls, float[1, 2, 2] si) => (out) {
            out = Scan <num_scan_inputs = 9, body = b (float a, float x) => (float c) { c = Add(a, x) }> ("", ls, si)
        }""", "scan.num_scan_inputs"),
    # ONNX's test_scan_invalid_num_scan_inputs_does_not_crash (-1); 0 scan inputs (both runtimes refuse)
    "num_scan_inputs_negative": ("""<ir_version: 8, opset_import: ["" : 9]>
        g (float[1] s, float[3,1] x) => (float[1] so, float[3,1] xo) {
            so, xo = Scan <num_scan_inputs = -1, body = b (float[1] si, float[1] xi) => (float[1] so, float[1] xo)
                           { so = Identity(si) xo = Identity(xi) }> (s, x)
        }""", "scan.num_scan_inputs"),
    "num_scan_inputs_zero": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (float[2] s) => (float[2] so) {
            so = Scan <num_scan_inputs = 0, body = b (float[2] a) => (float[2] c) { c = Identity(a) }> (s)
        }""", "scan.num_scan_inputs"),
    # ONNX's test_scan_loop_state_vars_exceed_outputs
    "states_exceed_outputs": ("""<ir_version: 10, opset_import: ["" : 21]>
        agraph (float[2] in0, float[2] in1, float[3, 2] in2) => (out) {
            out = Scan <num_scan_inputs = 1, body = b (float a, float s0, float s1) => (float c) { c = Identity(a) }>
                       (in0, in1, in2)
        }""", "scan.outputs"),
    "body_inputs": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (float[2] s, float[3, 2] x) => (so, xo) {
            so, xo = Scan <num_scan_inputs = 1, body = b (float[2] a) => (float[2] c, float[2] d)
                           { c = Identity(a) d = Identity(a) }> (s, x)
        }""", "scan.body_inputs"),
    "body_outputs": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (float[2] s, float[3, 2] x) => (so, xo) {
            so, xo = Scan <num_scan_inputs = 1, body = b (float[2] a, float[2] e) => (float[2] c)
                           { c = Identity(a) }> (s, x)
        }""", "scan.body_outputs"),
    "input_axes_length": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (float[2] s, float[3, 2] x) => (so, xo) {
            so, xo = Scan <num_scan_inputs = 1, scan_input_axes = [0, 0],
                           body = b (float[2] a, float[2] e) => (float[2] c, float[2] d)
                           { c = Identity(a) d = Identity(e) }> (s, x)
        }""", "scan.scan_input_axes"),
    "output_directions_flags": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (float[2] s, float[3, 2] x) => (so, xo) {
            so, xo = Scan <num_scan_inputs = 1, scan_output_directions = [2],
                           body = b (float[2] a, float[2] e) => (float[2] c, float[2] d)
                           { c = Identity(a) d = Identity(e) }> (s, x)
        }""", "scan.scan_output_directions"),
    "scan8_state_rank": ("""<ir_version: 4, opset_import: ["" : 8]>
        agraph (float s0, float[1, 2, 2] x) => (s, y) {
            s, y = Scan <num_scan_inputs = 1, body = b (float si, float[2] xi) => (float so, float[2] yo)
                         { so = Identity(si) yo = Identity(xi) }> ("", s0, x)
        }""", "scan.batch"),
    # Loop: the node's outputs are the body's outputs after the condition
    "loop_outputs": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (int64 M, bool c, float[2] s) => (float[2] so) {
            so = Loop (M, c, s) <body = b (int64 i, bool ci, float[2] a) => (bool co, float[2] c2, float[2] sc)
                                 { co = Identity(ci) c2 = Identity(a) sc = Identity(a) }>
        }""", "loop.outputs"),
    "loop_trip_count": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (int64[2] M, bool c, float[2] s) => (float[2] so) {
            so = Loop (M, c, s) <body = b (int64 i, bool ci, float[2] a) => (bool co, float[2] c2)
                                 { co = Identity(ci) c2 = Identity(a) }>
        }""", "loop.trip_count"),
    "loop_body_inputs": ("""<ir_version: 8, opset_import: ["" : 16]>
        agraph (int64 M, bool c, float[2] s) => (float[2] so) {
            so = Loop (M, c, s) <body = b (int64 i, bool ci) => (bool co, float[2] c2)
                                 { co = Identity(ci) c2 = Identity(s) }>
        }""", "loop.body_inputs"),
}


@pytest.mark.parametrize("case", sorted(SCAN_CASES))
def test_control_flow_preconditions_are_conflicts(case):
    text, rule = SCAN_CASES[case]
    m = _parse(text)
    res = smtshape.analyze(m)
    assert rule_ids(res) == {rule} and not res.unchecked_nodes


@pytest.mark.parametrize("case", ["num_scan_inputs_zero", "loop_outputs", "body_outputs", "loop_trip_count"])
def test_control_flow_preconditions_onnxruntime_refuses(case):
    m = _parse(SCAN_CASES[case][0])
    feeds = {"s": np.zeros(2, np.float32), "x": np.zeros((3, 2), np.float32), "c": np.array(True),
             "M": np.array([2, 2] if case == "loop_trip_count" else 2, np.int64)}
    feeds = {k: v for k, v in feeds.items() if k in {i.name for i in m.graph.input}}
    with pytest.raises(Exception):
        run_ort(m, feeds)


def test_if_branch_outputs_count_is_a_conflict():
    two = h.make_graph([h.make_node("Identity", ["x"], ["t"]), h.make_node("Identity", ["x"], ["u"])], "then", [],
                       [vi("t", T.FLOAT), vi("u", T.FLOAT)])
    res = smtshape.analyze(if_model(two, ELSE_CAT))
    assert rule_ids(res) == {"if.outputs"}


def test_invalid_node_in_a_branch_that_may_not_run_is_a_warning_not_a_conflict():
    """A node breaking the spec inside a branch walked in a scratch store: no conflict of the
    model (the branch may not run), a warning naming the branch; a conflict when it surely runs."""
    els = h.make_graph([h.make_node("Transpose", ["x"], ["e"], perm=[0, 0])], "else", [], [vi("e", T.FLOAT)])
    res = smtshape.analyze(if_model(THEN_ID, els))
    assert not res.conflicts and res.shape("y") is None
    assert any(d.message.startswith("else_branch of If 'node' may not run; if it does: Transpose node")
               and "perm [0, 0]" in d.message for d in res.diagnostics)
    res = smtshape.analyze(if_model(THEN_ID, els, cond_init=False))
    assert rule_ids(res) == {"transpose.perm"}


def test_if_with_optional_outputs_merges_the_optional():
    """ONNX's test_if_with_different_optional_shapes_in_then_else_branches: optional(float[?])."""
    m = _parse("""<ir_version: 8, opset_import: ["" : 18]>
        agraph (bool[1] cond, float[1] a, float[5] b) => () {
            y = If (cond) <then_branch = t () => (o1) { o1 = Optional(a) },
                           else_branch = e () => (o2) { o2 = Optional(b) }>
        }""")
    res = smtshape.analyze(m)
    sq = res._lookup("y")[1].seq
    assert sq.optional and sq.length == 1
    content = sq.elems[0]
    assert int(content.dtype) == T.FLOAT and len(content.shape) == 1 and not isinstance(content.shape[0], int)
    assert not res.conflicts and not res.unchecked_nodes
