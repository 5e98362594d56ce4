"""Rules of smtshape/ops/indexing.py, checked by hand and against onnxruntime."""
import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper

from smtshape import expr as E
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, ts, unchecked

EX, UB, UNK = Exactness.EXACT, Exactness.UPPER_BOUND, Exactness.UNKNOWN


def run_ort(op, inputs, attrs=None, feeds=None, n_outputs=1, opset=18, otypes=None):
    m = node_model(op, inputs, attrs, opset=opset, n_outputs=n_outputs)
    otypes = otypes or [TensorProto.FLOAT] * n_outputs
    del m.graph.output[:]
    m.graph.output.extend([helper.make_tensor_value_info(f"y{k}", otypes[k], None) for k in range(n_outputs)])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [tuple(o.shape) for o in s.run(None, feeds or {})]


def rule_ids(res):
    return {c.provenance.rule for c in res.constraints}


def conflict_rules(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


def bound_at(dim, env):
    return E.evaluate(dim.bound, env)


# ---------------------------------------------------------------- GatherElements
def test_gather_elements_shape_and_dims_constraint():
    res = infer_node("GatherElements", [ts("float", ["N", "C"]), ts("int64", ["K", "J"])], {"axis": 1})
    assert exprs(res, "y0") == ("K", "J")
    assert "gatherelements.dims" in rule_ids(res)
    assert res.prove("K <= N").name == "PROVEN"
    assert res.prove("J <= C").name != "PROVEN"


def test_gather_elements_conflicts():
    res = infer_node("GatherElements", [ts("float", [2, 3]), ts("int64", [4, 3])], {"axis": 1})
    assert "gatherelements.dims" in conflict_rules(res)
    res = infer_node("GatherElements", [ts("float", [2, 3]), ts("int64", [2, 3, 1])])
    assert "gatherelements.rank" in conflict_rules(res)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_gather_elements_vs_ort(dshape, data):
    axis = data.draw(st.integers(-len(dshape), len(dshape) - 1))
    ishape = [data.draw(st.integers(0, d)) for d in dshape]
    ishape[axis] = data.draw(st.integers(0, 5))
    idx = np.random.randint(0, dshape[axis], size=ishape).astype(np.int64)
    x = np.random.rand(*dshape).astype(np.float32)
    want = run_ort("GatherElements", [ts("float", dshape), idx], {"axis": axis}, {"x0": x})[0]
    res = infer_node("GatherElements", [ts("float", dshape), idx], {"axis": axis})
    assert exprs(res, "y0") == want and not res.conflicts


# ---------------------------------------------------------------- GatherND
def test_gather_nd_batch_dims():
    res = infer_node("GatherND", [ts("float", ["B", 5, 6]), ts("int64", ["B2", "K", 1])], {"batch_dims": 1})
    assert exprs(res, "y0") == ("B", "K", 6)   # B2 unified with B
    assert "gathernd.batch_dims" in rule_ids(res)


def test_gather_nd_unknown_depth_and_conflict():
    res = infer_node("GatherND", [ts("float", [5, 6]), ts("int64", ["K", "M"])])
    assert res.shape("y0") is None
    res = infer_node("GatherND", [ts("float", [3, 5, 6]), ts("int64", [4, 2, 1])], {"batch_dims": 1})
    assert "gathernd.batch_dims" in conflict_rules(res)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_gather_nd_vs_ort(dshape, data):
    r = len(dshape)
    b = data.draw(st.integers(0, r - 1))
    m = data.draw(st.integers(1, r - b))
    mid = data.draw(st.lists(st.integers(0, 3), max_size=2))
    ishape = dshape[:b] + mid + [m]
    idx = np.stack([np.random.randint(0, dshape[b + j], size=ishape[:-1]) for j in range(m)], -1).astype(np.int64)
    idx = idx.reshape(ishape)
    x = np.random.rand(*dshape).astype(np.float32)
    want = run_ort("GatherND", [ts("float", dshape), idx], {"batch_dims": b}, {"x0": x})[0]
    res = infer_node("GatherND", [ts("float", dshape), idx], {"batch_dims": b})
    assert exprs(res, "y0") == want and not res.conflicts


# ---------------------------------------------------------------- Scatter family
def test_scatter_nd_updates_shape():
    res = infer_node("ScatterND", [ts("float", ["N", "C", 4]), ts("int64", ["K", 1]), ts("float", ["U", "C2", 4])])
    assert exprs(res, "y0") == ("N", "C", 4)
    assert res.prove("U == K").name == "PROVEN" and res.prove("C2 == C").name == "PROVEN"
    res = infer_node("ScatterND", [ts("float", [3, 4]), ts("int64", [2, 1]), ts("float", [2, 5])])
    assert "scatternd.updates_shape" in conflict_rules(res)
    res = infer_node("ScatterND", [ts("float", [3, 4]), ts("int64", [2, 3]), ts("float", [2])])
    assert "scatternd.index_depth" in conflict_rules(res)


def test_scatter_elements_constraints():
    res = infer_node("ScatterElements", [ts("float", ["N", "C"]), ts("int64", ["K", "J"]),
                                         ts("float", ["K2", "J2"])], {"axis": 0})
    assert exprs(res, "y0") == ("N", "C")
    assert res.prove("K2 == K").name == "PROVEN"
    assert res.prove("J <= C").name == "PROVEN"
    res = infer_node("ScatterElements", [ts("float", [2, 3]), ts("int64", [2, 2]), ts("float", [2, 3])])
    assert "scatterelements.updates_shape" in conflict_rules(res)
    res = infer_node("Scatter", [ts("float", [2, 3]), ts("int64", [2, 2, 1]), ts("float", [2, 2, 1])], opset=9)
    assert "scatter.rank" in conflict_rules(res)


# ---------------------------------------------------------------- OneHot
def test_onehot_float_depth_const_and_runtime_depth():
    res = infer_node("OneHot", [ts("int64", ["N", 3]), np.array(7.0, np.float32), np.array([0, 1], np.float32)],
                     {"axis": 1})
    assert exprs(res, "y0") == ("N", 7, 3)
    res = infer_node("OneHot", [ts("int64", ["N"]), ts("int64", [1]), np.array([0, 1], np.float32)])
    d = res.shape("y0")[1]
    assert res.shape("y0")[0].exactness is EX and d.exactness is UNK


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.integers(1, 6), st.data())
def test_onehot_vs_ort(ishape, depth, data):
    axis = data.draw(st.integers(-len(ishape) - 1, len(ishape)))
    idx = np.random.randint(0, depth, size=ishape).astype(np.int64)
    ins = [ts("int64", ishape), np.array([depth], np.int64), np.array([0, 1], np.float32)]
    want = run_ort("OneHot", ins, {"axis": axis}, {"x0": idx})[0]
    res = infer_node("OneHot", ins, {"axis": axis})
    assert exprs(res, "y0") == want


# ---------------------------------------------------------------- Compress
def test_compress_bound_and_known_condition():
    res = infer_node("Compress", [ts("float", ["N", "M"]), ts("bool", ["C"])], {"axis": 1})
    d = res.shape("y0")[1]
    assert d.exactness is UB and bound_at(d, {"C": 3, "M": 5}) == 3 and bound_at(d, {"C": 7, "M": 5}) == 5
    res = infer_node("Compress", [ts("float", ["N", "M"]), ts("bool", ["C"])])
    assert res.shape("y0")[0].exactness is UB and len(res.shape("y0")) == 1
    res = infer_node("Compress", [ts("float", [4, 5]), np.array([True, False, True])], {"axis": 0})
    assert exprs(res, "y0") == (2, 5)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_compress_vs_ort(shape, data):
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
    size = int(np.prod(shape)) if axis is None else shape[axis]
    cond = np.array(data.draw(st.lists(st.booleans(), max_size=size)), dtype=bool)
    x = np.random.rand(*shape).astype(np.float32)
    attrs = {} if axis is None else {"axis": axis}
    names = [f"d{k}" for k in range(len(shape))]
    want = run_ort("Compress", [ts("float", shape), ts("bool", [len(cond)])], attrs, {"x0": x, "x1": cond})[0]
    res = infer_node("Compress", [ts("float", names), ts("bool", ["C"])], attrs)
    env = dict(zip(names, shape), C=len(cond))
    out = res.shape("y0")
    assert len(out) == len(want)
    for k, (d, w) in enumerate(zip(out, want)):
        if d.exactness is EX:
            assert E.evaluate(d.expr, env) == w
        else:
            assert d.exactness is UB and w <= bound_at(d, env)


# ---------------------------------------------------------------- NonZero
def test_nonzero_symbolic_and_known():
    res = infer_node("NonZero", [ts("float", ["N", 3])])
    r, n = res.shape("y0")
    assert r.expr == 2 and r.exactness is EX
    assert n.exactness is UB and bound_at(n, {"N": 4}) == 12
    res = infer_node("NonZero", [np.array([[1, 0, 2], [0, 0, 3]], np.int64)])
    assert exprs(res, "y0") == (2, 3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=3), st.data())
def test_nonzero_vs_ort(shape, data):
    arr = np.array(data.draw(st.lists(st.integers(0, 2), min_size=int(np.prod(shape)),
                                      max_size=int(np.prod(shape)))), np.int64).reshape(shape)
    want = run_ort("NonZero", [ts("int64", shape)], None, {"x0": arr}, otypes=[TensorProto.INT64])[0]
    # known input: the count is exact
    res = infer_node("NonZero", [arr])
    if not shape:      # a scalar: the first dim is a bound holding onnxruntime's 1 and the spec's 0
        first, count = res.shape("y0")
        assert first.bound == 1 and want[0] <= 1 and count.expr == want[1]
    else:
        assert exprs(res, "y0") == want
    # symbolic input: the count is bounded by numel
    names = [f"d{k}" for k in range(len(shape))]
    res = infer_node("NonZero", [ts("int64", names)])
    env = dict(zip(names, shape))
    r, n = res.shape("y0")
    assert (r.expr == want[0] if shape else r.bound == 1) and want[1] <= bound_at(n, env)


# ---------------------------------------------------------------- TopK
def test_topk_const_k_and_constraint():
    res = infer_node("TopK", [ts("float", ["N", "M"]), np.array([3], np.int64)], n_outputs=2)
    assert exprs(res, "y0") == ("N", 3) and exprs(res, "y1") == ("N", 3)
    assert res.prove("M >= 3").name == "PROVEN"
    res = infer_node("TopK", [ts("float", ["N", 2]), np.array([3], np.int64)], n_outputs=2)
    assert "topk.k" in conflict_rules(res)


def test_topk_runtime_k_upper_bound_and_opset1():
    res = infer_node("TopK", [ts("float", ["N", "M"]), ts("int64", [1])], {"axis": 0}, n_outputs=2)
    k = res.shape("y0")[0]
    assert k.exactness is UB and bound_at(k, {"N": 5, "M": 2}) == 5
    assert res.shape("y1")[0].expr == k.expr
    res = infer_node("TopK", [ts("float", ["N", 8])], {"k": 4}, n_outputs=2, opset=1)
    assert exprs(res, "y0") == ("N", 4)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_topk_vs_ort(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(0, shape[axis]))
    x = np.random.rand(*shape).astype(np.float32)
    ins = [ts("float", shape), np.array([k], np.int64)]
    want = run_ort("TopK", ins, {"axis": axis}, {"x0": x}, n_outputs=2, otypes=[TensorProto.FLOAT, TensorProto.INT64])
    res = infer_node("TopK", ins, {"axis": axis}, n_outputs=2)
    assert [exprs(res, "y0"), exprs(res, "y1")] == want and not res.conflicts


# ---------------------------------------------------------------- Unique
def test_unique_outputs():
    res = infer_node("Unique", [ts("float", ["N", "M"])], n_outputs=4)
    (u,), (i,), (inv,), (c,) = (res.shape(f"y{k}") for k in range(4))
    assert u.exactness is UB and bound_at(u, {"N": 2, "M": 3}) == 6
    assert i.expr == u.expr and c.expr == u.expr
    assert inv.exactness is EX and str(inv.expr) == "M*N"
    res = infer_node("Unique", [ts("float", ["N", "M"])], {"axis": 1}, n_outputs=4)
    y = res.shape("y0")
    assert y[0].expr.name == "N" and y[1].exactness is UB and exprs(res, "y2") == ("M",)
    res = infer_node("Unique", [np.array([3, 1, 3, 2], np.int64)], n_outputs=4)
    assert exprs(res, "y0") == (3,) and exprs(res, "y2") == (4,)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())   # onnxruntime aborts on empty input
def test_unique_vs_ort(shape, data):
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
    arr = np.random.randint(0, 3, size=shape).astype(np.int64)
    attrs = {} if axis is None else {"axis": axis}
    try:
        want = run_ort("Unique", [ts("int64", shape)], attrs, {"x0": arr}, n_outputs=4,
                       otypes=[TensorProto.INT64] * 4)
    except Exception:
        return  # onnxruntime rejects some empty inputs
    names = [f"d{k}" for k in range(len(shape))]
    env = dict(zip(names, shape))
    res = infer_node("Unique", [ts("int64", names)], attrs, n_outputs=4)
    for k in range(4):
        out = res.shape(f"y{k}")
        assert len(out) == len(want[k])
        for d, w in zip(out, want[k]):
            if d.exactness is EX:
                assert E.evaluate(d.expr, env) == w
            else:
                assert d.exactness is UB and w <= bound_at(d, env)
    # known input: exact
    res = infer_node("Unique", [arr], attrs, n_outputs=4)
    assert exprs(res, "y0") == want[0]


# ---------------------------------------------------------------- NonMaxSuppression
def test_nms_bound_and_constraints():
    res = infer_node("NonMaxSuppression", [ts("float", ["B", "S", 4]), ts("float", ["B2", "C", "S2"]),
                                           np.array([5], np.int64)])
    n, three = res.shape("y0")
    assert three.expr == 3 and n.exactness is UB
    assert bound_at(n, {"B": 2, "C": 3, "S": 4}) == 24 and bound_at(n, {"B": 2, "C": 3, "S": 9}) == 30
    assert res.prove("B2 == B").name == "PROVEN" and res.prove("S2 == S").name == "PROVEN"
    res = infer_node("NonMaxSuppression", [ts("float", ["B", "S", 5]), ts("float", ["B", "C", "S"])])
    assert "nms.box_size" in conflict_rules(res)
    assert exprs(res, "y0") == (0, 3)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 2), st.integers(1, 3), st.integers(0, 6), st.integers(0, 4))
def test_nms_vs_ort(b, c, s, mo):
    boxes = np.random.rand(b, s, 4).astype(np.float32)
    scores = np.random.rand(b, c, s).astype(np.float32)
    ins = [ts("float", ["B", "S", 4]), ts("float", ["B", "C", "S"]), np.array([mo], np.int64)]
    want = run_ort("NonMaxSuppression", ins, None, {"x0": boxes, "x1": scores}, otypes=[TensorProto.INT64])[0]
    res = infer_node("NonMaxSuppression", ins)
    n = res.shape("y0")[0]
    env = {"B": b, "C": c, "S": s}
    if n.exactness is EX:
        assert E.evaluate(n.expr, env) == want[0]
    else:
        assert want[0] <= bound_at(n, env)


# ---------------------------------------------------------------- index bounds (issue 7)
def _graph(nodes, inputs, inits, outputs=("y",), opset=18):
    from onnx import numpy_helper
    g = helper.make_graph(nodes, "g", inputs,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _position_model(rows, offset=0, expand=False):
    """x[B, S] -> positions Range(0, S) (+ offset) -> Gather from a ``rows``-row table."""
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Gather", ["sh", "one"], ["s"], axis=0),
             helper.make_node("Range", ["zero", "s", "one"], ["pos"]),
             helper.make_node("Unsqueeze", ["pos", "zero1"], ["upos"])]
    last = "upos"
    if expand:
        nodes.append(helper.make_node("Expand", [last, "sh"], ["epos"]))
        last = "epos"
    if offset:
        nodes.append(helper.make_node("Add", [last, "off"], ["apos"]))
        last = "apos"
    nodes.append(helper.make_node("Gather", ["table", last], ["y"], name="pos_gather", axis=0))
    inits = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "zero1": np.array([0], np.int64),
             "off": np.array(offset, np.int64), "table": np.zeros((rows, 4), np.float32)}
    return _graph(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S"])], inits)


@pytest.mark.parametrize("rows,offset,expand", [(128, 0, False), (130, 2, True), (16, 3, False)])
def test_position_table_bound_vs_ort(rows, offset, expand):
    from smtshape import analyze
    from smtshape.testing import run_onnxruntime
    m = _position_model(rows, offset, expand)
    limit = rows - offset
    if expand:   # the expanded positions are empty (nothing gathered) when B == 0
        assert analyze(m).prove(f"B == 0 or S <= {limit}").name == "PROVEN"
    res = analyze(m, assume=["B >= 1"])
    assert res.consistent is True
    assert res.prove(f"S <= {limit}").name == "PROVEN"
    assert res.prove(f"S <= {limit - 1}").name != "PROVEN"
    assert "gather.index_bound" in rule_ids(res)
    run_onnxruntime(m, {"x": np.zeros((1, limit), np.float32)})           # runs at the bound
    run_onnxruntime(m, {"x": np.zeros((1, 0), np.float32)})               # and with no positions
    with pytest.raises(Exception):
        run_onnxruntime(m, {"x": np.zeros((1, limit + 1), np.float32)})  # fails just past it


def test_static_out_of_range_indices_are_conflicts():
    cases = [("Gather", [ts("float", [5, 3]), np.array([0, 5], np.int64)], {}, "gather.index_bound"),
             ("Gather", [ts("float", [5, 3]), np.array([-6], np.int64)], {}, "gather.index_bound"),
             ("GatherElements", [ts("float", [2, 3]), np.array([[0, 3]], np.int64)], {"axis": 1},
              "gatherelements.index_bound"),
             ("GatherND", [ts("float", [5, 3]), np.array([[0, 3]], np.int64)], {}, "gathernd.index_bound"),
             ("ScatterND", [ts("float", [5, 3]), np.array([[5]], np.int64), ts("float", [1, 3])], {},
              "scatternd.index_bound"),
             ("ScatterElements", [ts("float", [2, 3]), np.array([[-4]], np.int64), ts("float", [1, 1])],
              {"axis": 1}, "scatterelements.index_bound")]
    for op, ins, attrs, rule in cases:
        res = infer_node(op, ins, attrs)
        assert res.consistent is False, op
        assert conflict_rules(res) == {rule}, op
        text = res.conflicts[0].explain()
        assert "node 'node'" in text and "size" in text, text
        # onnxruntime refuses them too
        feeds = {f"x{k}": np.zeros([1 if isinstance(d, str) else d for d in x.shape], np.float32)
                 for k, x in enumerate(ins) if isinstance(x, ts)}
        with pytest.raises(Exception):
            run_ort(op, ins, attrs, feeds)


def test_in_range_and_negative_indices_constrain_symbolic_sizes():
    res = infer_node("Gather", [ts("float", ["N", 3]), np.array([0, -7], np.int64)])
    assert res.consistent is True
    assert res.prove("N >= 7").name == "PROVEN" and res.prove("N >= 8").name != "PROVEN"
    res = infer_node("GatherND", [ts("float", [5, "M"]), np.array([[4, 2]], np.int64)])
    assert res.prove("M >= 3").name == "PROVEN" and res.prove("M >= 4").name != "PROVEN"
    # in-range negative indices run in onnxruntime
    assert run_ort("Gather", [ts("float", ["N", 3]), np.array([0, -7], np.int64)], {},
                   {"x0": np.zeros((7, 3), np.float32)}) == [(2, 3)]


def test_onehot_out_of_range_indices_are_legal():
    """OneHot maps indices outside [-depth, depth - 1] to all-off rows (spec and onnxruntime):
    no index bound, no conflict."""
    ins = [np.array([0, 7], np.int64), np.array(3, np.int64), np.array([0.0, 1.0], np.float32)]
    res = infer_node("OneHot", ins)
    assert res.consistent is True and exprs(res, "y0") == (2, 3)
    assert run_ort("OneHot", ins) == [(2, 3)]


def test_topk_k_from_a_shape_is_exact_and_bounded():
    """Issue 7: a sympy Symbol is a sympy Boolean too; k = Shape(K[k]) is an int element."""
    from smtshape import analyze
    from smtshape.context import element_kind
    from smtshape.expr import symbol
    from smtshape.testing import run_onnxruntime
    import sympy
    assert element_kind(symbol("k")) == "int" and element_kind(sympy.Eq(symbol("k"), 1)) == "bool"
    assert element_kind(True) == "bool" and element_kind(np.int64(3)) == "int" and element_kind(None) == "unknown"
    assert element_kind(sympy.Float(1.5)) == "unknown"
    nodes = [helper.make_node("Shape", ["kk"], ["ks"]), helper.make_node("TopK", ["x", "ks"], ["v", "i"], name="topk")]
    m = _graph(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 100]),
                       helper.make_tensor_value_info("kk", TensorProto.FLOAT, ["k"])], {}, outputs=("v", "i"))
    res = analyze(m)
    assert exprs(res, "v") == ("B", "k") and all(d.exactness is EX for d in res.shape("v"))
    assert res.prove("k <= 100").name == "PROVEN"
    assert [s.relation for s in res.specializations if s.kind == "upper"] == ["k <= 100"]
    feeds = {"x": np.zeros((1, 100), np.float32)}
    assert run_onnxruntime(m, dict(feeds, kk=np.zeros(100, np.float32)))[0].shape == (1, 100)
    with pytest.raises(Exception):
        run_onnxruntime(m, dict(feeds, kk=np.zeros(101, np.float32)))


def test_index_from_shape_arithmetic_bounds_the_dim():
    """Gather(table[16], Shape(x)[1] - 1): the last position must exist, S <= 16."""
    from smtshape import analyze
    from smtshape.testing import run_onnxruntime
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Gather", ["sh", "one"], ["s"], axis=0),
             helper.make_node("Sub", ["s", "one"], ["last"]),
             helper.make_node("Gather", ["table", "last"], ["y"], name="last_row", axis=0)]
    m = _graph(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S"])],
               {"one": np.array(1, np.int64), "table": np.zeros((16, 4), np.float32)})
    res = analyze(m)
    assert res.consistent is True and "gather.index_bound" in rule_ids(res)
    assert [s.relation for s in res.specializations if s.kind == "upper"] == ["S <= 16"]
    run_onnxruntime(m, {"x": np.zeros((1, 16), np.float32)})
    with pytest.raises(Exception):
        run_onnxruntime(m, {"x": np.zeros((1, 17), np.float32)})


# ---------------------------------------------------------------- preconditions of the spec (conflicts)
from .test_shape import assert_refused, assert_runs_like_ort, check_backend  # noqa: E402

F, I = "float", "int64"
V2 = np.array([0, 1], np.float32)

# (op, inputs, attrs, opset, rule, onnxruntime refuses it too)
PRECONDITIONS = [
    ("GatherND", [ts(F, [2, 3]), np.zeros((2, 1), np.int64)], {"batch_dims": -1}, 18, "gathernd.batch_dims", True),
    ("GatherND", [ts(F, [2, 3]), np.zeros((2, 1), np.int64)], {"batch_dims": 2}, 18, "gathernd.batch_dims", True),
    ("GatherND", [ts(F, []), np.zeros((1,), np.int64)], {}, 18, "gathernd.rank", True),
    ("GatherND", [ts(F, [2, 3]), np.zeros((2, 3), np.int64)], {}, 18, "gathernd.index_depth", True),
    # (a reduction the spec does not list: onnxruntime and onnx's reference run it all the same)
    ("ScatterND", [ts(F, [3]), np.zeros((1, 1), np.int64), ts(F, [1])], {"reduction": "max"}, 16,
     "scatternd.reduction", False),
    ("ScatterND", [ts(F, [3]), np.zeros((1, 1), np.int64), ts(F, [1])], {"reduction": "sub"}, 18,
     "scatternd.reduction", False),
    ("ScatterND", [ts(F, [3]), np.array(0, np.int64), ts(F, [])], {}, 18, "scatternd.rank", True),
    ("ScatterElements", [ts(F, [3]), np.zeros(1, np.int64), ts(F, [1])], {"reduction": "avg"}, 18,
     "scatterelements.reduction", False),
    # OneHot
    ("OneHot", [ts(I, [2, 2]), np.array(-3, np.int64), V2], {}, 18, "onehot.depth", True),
    ("OneHot", [ts(I, [2, 2]), np.zeros(0, np.int64), V2], {}, 18, "onehot.depth", True),
    ("OneHot", [ts(I, [2]), np.array([[3]], np.int64), V2], {}, 18, "onehot.depth", True),
    ("OneHot", [np.array([0, -1], np.int64), np.array(3, np.int64), V2], {}, 9, "onehot.indices", False),
    ("OneHot", [ts(I, []), np.array(3, np.int64), V2], {}, 18, "onehot.indices", True),
    ("OneHot", [ts(I, [2]), np.array(3, np.int64), np.array([0, 1, 2], np.float32)], {}, 18, "onehot.values", True),
    ("OneHot", [ts(I, [2]), np.array(3, np.int64), np.array([[0, 1]], np.float32)], {}, 18, "onehot.values", True),
    ("OneHot", [ts(I, [2]), np.array(3, np.int64), V2], {"axis": 2}, 18, "axis.range", True),
    # Compress, TopK, NonMaxSuppression
    # (the spec: "Rank 1 tensor"; onnx's reference refuses a 2-D one, onnxruntime flattens it)
    ("Compress", [ts(F, [4]), np.ones((1, 4), bool)], {}, 18, "compress.condition", False),
    ("TopK", [ts(F, [4]), np.array([-1], np.int64)], {}, 18, "topk.k", True),
    ("TopK", [ts(F, [4]), ts(I, [])], {}, 18, "topk.k_shape", True),
    ("TopK", [ts(F, [4]), np.array([2, 2], np.int64)], {}, 18, "topk.k_shape", True),
    ("TopK", [ts(F, [4]), np.array([5], np.int64)], {}, 18, "topk.k", True),
    ("NonMaxSuppression", [ts(F, [1, 4]), ts(F, [1, 1, 1])], {}, 18, "nms.rank", True),
    ("NonMaxSuppression", [ts(F, [1, 1, 4]), ts(F, [1, 1, 1])], {"center_point_box": 2}, 18,
     "nms.center_point_box", True),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,ort", PRECONDITIONS,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(PRECONDITIONS)])
def test_precondition_is_a_conflict(op, inputs, attrs, opset, rule, ort):
    assert_refused(op, inputs, attrs, rule, opset=opset, n_outputs=2 if op == "TopK" else 1, ort=ort)


def test_onehot_negative_indices_are_legal_from_opset_11_and_depth_0():
    """Negative indices wrap from opset 11 (before, the spec asks for non-negative ones, as onnx's
    inference does); a depth of 0 is a valid, empty class axis for the spec and onnx (its
    reference runs it; onnxruntime refuses it: its own limit, not a conflict)."""
    res = assert_runs_like_ort("OneHot", [np.array([0, -1], np.int64), np.array(3, np.int64), V2], opset=11)
    assert exprs(res, "y0") == (2, 3)
    res = infer_node("OneHot", [ts(I, [2]), np.array(0, np.int64), V2])
    assert exprs(res, "y0") == (2, 0) and not res.conflicts and not unchecked(res)
    import smtshape
    from onnx.reference import ReferenceEvaluator
    m = node_model("OneHot", [ts(I, [2]), np.array(0, np.int64), V2])
    assert ReferenceEvaluator(m).run(None, {"x0": np.array([0, 1], np.int64)})[0].shape == (2, 0)


def test_onehot_empty_depth_is_a_conflict():
    """depth of shape (0,): the spec says 'containing exactly one element'; onnxruntime and onnx's
    reference both refuse it (onnx's own shape-inference test expects it to pass)."""
    res = infer_node("OneHot", [ts(I, [2, 2]), np.zeros(0, np.int64), V2])
    assert "onehot.depth" in conflict_rules(res)
    import smtshape
    from onnx.reference import ReferenceEvaluator
    m = node_model("OneHot", [ts(I, [2, 2]), np.zeros(0, np.int64), V2])
    with pytest.raises(Exception):
        ReferenceEvaluator(m).run(None, {"x0": np.zeros((2, 2), np.int64)})


def test_gather_nd_symbolic_depth_is_a_constraint():
    res = infer_node("GatherND", [ts(F, [5, 6]), ts(I, ["K", "M"])])
    assert "gathernd.index_depth" in rule_ids(res) and res.prove("M <= 2").name == "PROVEN"


def test_topk_k_zero_runs():
    assert exprs(assert_runs_like_ort("TopK", [ts(F, [4]), np.array([0], np.int64)], n_outputs=2), "y1") == (0,)


def test_onnx_backend_node_tests():
    """ONNX's backend node tests of these ops: no conflict, nothing unchecked, right dims."""
    check_backend(*("GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter", "OneHot", "Compress", "NonZero", "TopK", "Unique", "NonMaxSuppression"), min_cases=40)


def test_nonzero_of_a_scalar_is_a_split_between_the_spec_and_onnxruntime():
    """onnxruntime gives shape [1, 1] for a non-zero scalar, the spec and onnx's reference
    evaluator [0, 1]: the first dim is a bound holding both, never EXACT one way (it was
    EXACT 1, onnxruntime's)."""
    import smtshape
    from onnx.reference import ReferenceEvaluator
    from smtshape.testing import node_model, run_onnxruntime
    m = node_model("NonZero", [ts("float", [])], opset=13)
    x = np.array(2.0, np.float32)
    assert run_onnxruntime(m, {"x0": x})[0].shape == (1, 1)
    assert ReferenceEvaluator(m).run(None, {"x0": x})[0].shape == (0, 1)
    res = smtshape.analyze(m)
    first, count = res.shape("y0")
    assert first.exactness is Exactness.UPPER_BOUND and first.bound == 1
    assert count.exactness is Exactness.UPPER_BOUND and count.bound == 1
    res = smtshape.analyze(node_model("NonZero", [x], opset=13))        # a constant scalar
    assert res.shape("y0")[0].exactness is Exactness.UPPER_BOUND and res.shape("y0")[1].expr == 1


# ---------------------------------------------------------------- upper_bound_over (bounds of data-dependent sizes)
def _bound_store():
    """N an input dim; a <= N, b <= 5 and c (no bound) data symbols."""
    from smtshape.constraints import Provenance
    from smtshape.store import Store
    s = Store()
    p = Provenance("n", "Op", "r", "test")
    n = s.declare("N", "input", p)
    return s, n, s.new_data("a", p, upper=n), s.new_data("b", p, upper=5), s.new_data("c", p)


_ST, _N, _A, _B, _C = _bound_store()


def _bound_terms():
    leaf = st.one_of(st.sampled_from([_N, _A, _B, _C]), st.integers(0, 9))
    return st.recursive(leaf, lambda t: st.one_of(
        st.builds(E.add, t, t), st.builds(E.sub, t, t),
        st.builds(lambda k, x: E.mul(k, x), st.integers(0, 3), t), st.builds(E.mul, t, t),
        st.builds(E.smin, t, t), st.builds(E.smax, t, t), st.builds(E.bcast, t, t),
        st.builds(lambda x, k: E.floordiv(x, k), t, st.integers(1, 4)),
        st.builds(lambda x, k: E.ceildiv(x, k), t, st.integers(1, 4)),
        st.builds(E.floordiv, t, st.sampled_from([_N, _A, _B, _C, E.add(_A, _C), E.sub(_A, 1)])),
        # (a divisor that may be 0 or less: the rule that divides requires it > 0)
        st.builds(lambda x, k: E.mod(x, k), t, st.integers(1, 4)),
        st.builds(_if_n_is_zero, t, t)), max_leaves=6)


def _if_n_is_zero(x, y):
    import sympy
    return E.norm(sympy.Piecewise((E.to_sympy(x), sympy.Eq(_N, 0)), (E.to_sympy(y), True)))


@settings(max_examples=300, deadline=None)
@given(_bound_terms())
def test_upper_bound_over_holds_at_every_point(e):
    """``upper_bound_over``: wherever the data symbols respect their declared bounds, the
    expression is at most the bound (brute force over a box)."""
    from smtshape.bounds import upper_bound_over
    b = upper_bound_over(_ST, e, lambda s: s == _N)
    if b is None:
        return
    assert E.free_symbols(b) <= {_N}
    divisors = [] if isinstance(e, int) else [x.args[1] for x in e.atoms(E.FloorDiv, E.CeilDiv, E.Mod)]
    for n in range(0, 7):
        for a in range(0, n + 1):
            for bv in range(0, 6):
                for c in (0, 1, 4, 11):
                    env = {"N": n, "a": a, "b": bv, "c": c}
                    if any((E.evaluate(d, env) or 0) <= 0 for d in divisors):
                        continue    # a rule that divides requires its divisor > 0
                    v = E.evaluate(e, env)
                    if v is not None:
                        assert v <= E.evaluate(b, {"N": n}), (e, b, n, a, bv, c)


def test_upper_bound_over_reads_min_with_a_constant():
    from smtshape.bounds import upper_bound_over
    keep = lambda s: s == _N       # noqa: E731
    assert upper_bound_over(_ST, E.smin(80, _C), keep) == 80              # c has no bound
    assert upper_bound_over(_ST, E.smin(80, _A), keep) == E.smin(80, _N)
    assert upper_bound_over(_ST, _C, keep) is None
    assert upper_bound_over(_ST, E.sub(6, _C), keep) == 6
    assert upper_bound_over(_ST, E.mod(_C, 4), keep) == 3
    assert upper_bound_over(_ST, E.mod(_A, 4), keep) == E.smin(_N, 3)
    # an int32 wrap of an unbounded size is bounded only by the type's range: no bound
    assert upper_bound_over(_ST, E.sub(E.mod(E.add(_C, 2 ** 31), 2 ** 32), 2 ** 31), keep) is None


def test_nms_per_class_bound_takes_the_smaller_of_max_boxes_and_boxes():
    # 1 batch, 3 classes, N boxes: at most 3 * min(max_output_boxes_per_class, N)
    for mo in (100, 2):
        res = infer_node("NonMaxSuppression", [ts(F, [1, "N", 4]), ts(F, [1, 3, "N"]), np.array([mo], np.int64)])
        d = res.shape("y0")[0]
        assert d.exactness is Exactness.UPPER_BOUND
        assert [E.evaluate(d.bound, {"N": n}) for n in (0, 1, 5, 200)] == [3 * min(mo, n) for n in (0, 1, 5, 200)]
    # a negative max_output_boxes_per_class selects none (onnxruntime; onnx's reference refuses it)
    res = infer_node("NonMaxSuppression", [ts(F, [1, "N", 4]), ts(F, [1, 3, "N"]), np.array([-1], np.int64)])
    assert res.shape("y0")[0].expr == 0
