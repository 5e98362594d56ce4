"""LSTM / GRU / RNN rules, checked against onnxruntime (layout 0) and the ONNX reference
implementation (layout 1, which onnxruntime does not implement)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from onnx.reference import ReferenceEvaluator

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

G = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnd(*shape):
    return (np.random.rand(*shape).astype(np.float32) - 0.5)




def build(op, seq, batch, inp, hs, nd, layout=0, extras=(), opset=22, n_outputs=3, x_sym=True):
    """X as a graph input (symbolic S, N, I when x_sym), weights as initializers."""
    g = G[op]
    xs = (["S", "N", "I"] if layout == 0 else ["N", "S", "I"]) if x_sym else \
        ([seq, batch, inp] if layout == 0 else [batch, seq, inp])
    inputs = [ts("float", xs), rnd(nd, g * hs, inp), rnd(nd, g * hs, hs)]
    feeds = {"x0": rnd(*([seq, batch, inp] if layout == 0 else [batch, seq, inp]))}
    opt = {"B": lambda: rnd(nd, 2 * g * hs),
           "sequence_lens": lambda: np.full((batch,), seq, np.int32),
           "initial_h": lambda: rnd(*((nd, batch, hs) if layout == 0 else (batch, nd, hs))),
           "initial_c": lambda: rnd(*((nd, batch, hs) if layout == 0 else (batch, nd, hs))),
           "P": lambda: rnd(nd, 3 * hs)}
    order = ["B", "sequence_lens", "initial_h", "initial_c", "P"]
    last = max([order.index(e) for e in extras], default=-1)
    for name in order[:last + 1]:
        inputs.append(opt[name]() if name in extras else None)
    attrs = {"hidden_size": hs, "direction": "bidirectional" if nd == 2 else "forward"}
    if opset >= 14:
        attrs["layout"] = layout
    n_out = 3 if op == "LSTM" else 2
    m = node_model(op, inputs, attrs, opset=opset, n_outputs=min(n_outputs, n_out))
    return m, feeds


def check(m, feeds, bind, runner="ort"):
    from smtshape import analyze
    res = analyze(m)
    assert not refused(res) and not unchecked(res)
    if runner == "ort":
        got = run_onnxruntime(m, feeds)
    else:
        got = ReferenceEvaluator(m).run(None, feeds)
    ev = res.evaluate(bind)
    for k, arr in enumerate(got):
        s = res.shape(f"y{k}")
        assert all(d.exactness is Exactness.EXACT for d in s)
        assert ev[f"y{k}"] == arr.shape, (k, ev[f"y{k}"], arr.shape)
    return res


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("nd", [1, 2])
@pytest.mark.parametrize("opset", [7, 14, 22])
def test_layout0_against_onnxruntime(op, nd, opset):
    extras = ("B", "sequence_lens", "initial_h") + (("initial_c", "P") if op == "LSTM" else ())
    for seq, batch, inp in [(3, 2, 5), (1, 1, 1), (4, 3, 2)]:
        m, feeds = build(op, seq, batch, inp, 4, nd, 0, extras, opset)
        res = check(m, feeds, {"S": seq, "N": batch, "I": inp})
    # the initializers pin input_size (W) and batch (sequence_lens, initial_h)
    assert exprs(res, "y0") == ("S", nd, 3, 4)
    assert exprs(res, "y1") == (nd, 3, 4)
    assert res.specializations["I"] == 2 and res.specializations["N"] == 3


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout1_against_reference(op):
    extras = ("B", "initial_h") + (("initial_c",) if op == "LSTM" else ())
    for seq, batch in [(3, 2), (1, 4)]:
        m, feeds = build(op, seq, batch, 3, 5, 2, 1, extras, 22)
        res = check(m, feeds, {"S": seq, "N": batch, "I": 3}, runner="ref")
    assert exprs(res, "y0") == (4, "S", 2, 5)       # batch pinned by initial_h (batch-first)
    assert exprs(res, "y1") == (4, 2, 5)
    m, feeds = build(op, 2, 3, 3, 5, 1, 1, ("B",), 22)
    res = check(m, feeds, {"S": 2, "N": 3, "I": 3}, runner="ref")
    assert exprs(res, "y0") == ("N", "S", 1, 5) and exprs(res, "y1") == ("N", 1, 5)


def test_opset1_gru_default_direction_typo():
    m, feeds = build("GRU", 3, 2, 4, 5, 1, 0, ("B",), opset=1, x_sym=False)
    del m.graph.node[0].attribute[1]        # direction: the opset-1 default 'foward'
    from smtshape import analyze
    res = analyze(m)
    assert exprs(res, "y0") == (3, 1, 2, 5) and not refused(res) and not unchecked(res)


def test_lstm_w_not_fitting_input_size_is_conflict():
    res = infer_node("LSTM", [ts("float", [5, 2, 3]), rnd(1, 16, 7), rnd(1, 16, 4)], {"hidden_size": 4}, opset=14)
    assert res.conflicts and "node" in res.conflicts[0].nodes
    assert "input_size" in res.conflicts[0].explain()


@pytest.mark.parametrize("bad", ["W_dirs", "W_hidden", "R", "B", "h0_batch", "P"])
def test_lstm_weight_shape_conflicts(bad):
    nd, hs = 2, 4
    w, r, b = rnd(nd, 16, 3), rnd(nd, 16, 4), rnd(nd, 32)
    h0, p = rnd(nd, 2, 4), rnd(nd, 12)
    if bad == "W_dirs":
        w = rnd(1, 16, 3)
    elif bad == "W_hidden":
        w = rnd(nd, 12, 3)
    elif bad == "R":
        r = rnd(nd, 16, 5)
    elif bad == "B":
        b = rnd(nd, 16)
    elif bad == "h0_batch":
        h0 = rnd(nd, 3, 4)
    else:
        p = rnd(nd, 8)
    res = infer_node("LSTM", [ts("float", [5, 2, 3]), w, r, b, None, h0, None, p],
                     {"hidden_size": hs, "direction": "bidirectional"}, opset=22, n_outputs=3)
    assert res.conflicts


def test_symbolic_weights_relate_to_hidden_and_input():
    res = infer_node("GRU", [ts("float", ["S", "N", "I"]), ts("float", ["D", "G3", "J"]),
                             ts("float", ["D2", "G3b", "H"])], {"hidden_size": 8}, opset=14, n_outputs=2)
    assert exprs(res, "y0") == ("S", 1, "N", 8)
    for rel in ("D == 1", "G3 == 24", "J == I", "H == 8", "G3b == 24"):
        assert res.prove(rel).name == "PROVEN", rel


def test_batch_from_initial_h_when_x_rank_unknown():
    res = infer_node("RNN", [ts("float", None), rnd(1, 4, 3), rnd(1, 4, 4), None, None, ts("float", [1, "B", 4])],
                     {"hidden_size": 4}, opset=14, n_outputs=2)
    y = res.shape("y0")
    assert y[0].exactness is Exactness.UNKNOWN and exprs(res, "y1") == (1, "B", 4)
    assert exprs(res, "y0")[1:] == (1, "B", 4)


def test_hidden_size_from_r_when_attribute_missing():
    res = infer_node("LSTM", [ts("float", ["S", "N", 3]), rnd(1, 20, 3), rnd(1, 20, 5)], {}, opset=14, n_outputs=2)
    assert exprs(res, "y0") == ("S", 1, "N", 5)
    assert any("hidden_size" in d.message for d in res.diagnostics)
    out = ReferenceEvaluator(node_model("LSTM", [ts("float", [2, 3, 3]), rnd(1, 20, 3), rnd(1, 20, 5)], {},
                                        opset=14, n_outputs=2)).run(None, {"x0": rnd(2, 3, 3)})
    assert out[0].shape == (2, 1, 3, 5)


def rule_ids(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints if c.provenance.node}


W = {"LSTM": 4, "GRU": 3, "RNN": 1}


@pytest.mark.parametrize("op,x,attrs,opset,rule", [
    ("RNN", [2, 2, 2], {"direction": "sideways"}, 14, "rnn.direction"),
    ("RNN", [2, 2], {}, 14, "rnn.rank"),
    ("GRU", [2, 2], {}, 6, "gru.rank"),          # ONNX: "First input tensor must have rank 3" (opsets 1-6)
    ("LSTM", [2, 2], {}, 6, "lstm.rank"),
    ("RNN", [2, 2, 2], {"layout": 2}, 14, "rnn.layout"),
    ("LSTM", [2, 2, 2], {"activations": ["Sigmoid", "Tanh"]}, 14, "lstm.activations"),
    ("GRU", [2, 2, 2], {"activations": ["Sigmoid", "Tanh"], "direction": "bidirectional"}, 14, "gru.activations"),
    ("RNN", [2, 2, 2], {"activations": ["Foo"]}, 14, "rnn.activations"),
    ("RNN", [2, 2, 2], {"activations": ["Tanh"] * 3, "direction": "bidirectional"}, 14, "rnn.activations"),
])
def test_violated_preconditions_are_conflicts(op, x, attrs, opset, rule):
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    ins = [ts("float", x), rnd(nd, W[op] * 3, 2), rnd(nd, W[op] * 3, 3)]
    m = node_model(op, ins, {"hidden_size": 3, **attrs}, opset=opset)
    from smtshape import analyze
    res = analyze(m)
    assert refused(res) and rule_ids(res) == {rule} and res.shape("y0") is None
    if rule.endswith(".activations") or rule.endswith(".layout") or rule.endswith(".direction"):
        with pytest.raises(Exception):           # onnxruntime refuses the same node
            run_onnxruntime(m, {"x0": rnd(*x)})


def test_hidden_size_not_positive_is_a_conflict():
    res = infer_node("RNN", [ts("float", [2, 2, 2]), rnd(1, 3, 2), rnd(1, 3, 3)], {"hidden_size": 0}, opset=14)
    assert refused(res) and rule_ids(res) == {"rnn.hidden_size"}


def test_forward_rnn_with_two_activations_runs():
    """onnxruntime and the reference run a forward RNN listing two activations (RNN-1's
    default listed two): no conflict."""
    m = node_model("RNN", [ts("float", [2, 3, 4]), rnd(1, 5, 4), rnd(1, 5, 5)],
                   {"hidden_size": 5, "activations": ["Tanh", "Tanh"]}, opset=14)
    from smtshape import analyze
    res = analyze(m)
    assert not refused(res) and not unchecked(res)
    assert run_onnxruntime(m, {"x0": rnd(2, 3, 4)})[0].shape == (2, 1, 3, 5)


def test_bidirectional_with_one_direction_of_weights_is_a_conflict():
    """ONNX's test_rnn_layout (bidirectional, W of 1 direction) expects a valid model; the
    spec gives W [num_directions, hidden, input], and onnxruntime and the reference evaluator
    both refuse it: a conflict (judged: ONNX's test is wrong)."""
    m = node_model("RNN", [ts("float", [32, 64, 10]), rnd(1, 4, 10), rnd(1, 4, 4)],
                   {"hidden_size": 4, "layout": 1, "direction": "bidirectional"}, opset=14, n_outputs=2)
    from smtshape import analyze
    res = analyze(m)
    assert refused(res) and rule_ids(res) == {"rnn.W", "rnn.R"}
    with pytest.raises(Exception):
        ReferenceEvaluator(m).run(None, {"x0": rnd(32, 64, 10)})


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["LSTM", "GRU", "RNN"]), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 3), st.booleans())
def test_random_sizes_against_onnxruntime(op, seq, batch, inp, hs, bidi):
    m, feeds = build(op, seq, batch, inp, hs, 2 if bidi else 1, 0, ("B", "initial_h"), 14)
    check(m, feeds, {"S": seq, "N": batch, "I": inp})


@pytest.mark.parametrize("op,seq,batch,runner", [("RNN", 0, 2, "ort"), ("RNN", 2, 0, "ort"),
                                                  ("GRU", 2, 0, "ref"), ("LSTM", 2, 0, "ref")])
def test_zero_sizes(op, seq, batch, runner):
    """onnxruntime aborts on GRU / LSTM with a zero batch or seq: those run in the reference."""
    m, feeds = build(op, seq, batch, 2, 3, 2, 0, ("B",), 14)
    check(m, feeds, {"S": seq, "N": batch, "I": 2}, runner)


def test_backend_node_tests_static_and_symbolic():
    from .node_truth import cases, check_static, check_symbolic
    found = cases("LSTM", "GRU", "RNN")
    assert len(found) >= 18
    for tc in found:
        assert check_static(tc) == check_symbolic(tc) > 0
