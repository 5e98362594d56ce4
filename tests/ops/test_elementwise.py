"""Elementwise rules: broadcasting, unary ops, Where, Clip, Cast, value propagation."""
import numpy as np

from smtshape import expr as E
import onnx
import onnx_ir as ir
import pytest
import sympy
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper, numpy_helper

from smtshape import analyze
from smtshape.dim import Exactness
from smtshape.registry import register
from smtshape.testing import exprs, infer_node, node_model, run_onnxruntime, ts

NP = {"float": np.float32, "int64": np.int64, "bool": np.bool_, "int32": np.int32}


def value(res, name):
    return res._lookup(name)[1].value


def rnd(shape):
    return np.asarray(np.random.rand(*shape), dtype=np.float32)


run_ort = run_onnxruntime


# A test-only op that exposes its input's shape as a value (like Shape), so value
# propagation can be tested independently of the Shape rule.
@register("test.elementwise", "ShapeOf", 1)
def _shape_of(ctx):
    s = ctx.shape(0)
    ctx.set_output(0, (len(s),), ir.DataType.INT64, value=s)


def chain(x_shape, nodes, inits=(), x_dtype=TensorProto.FLOAT):
    """A model: input x (shape x_shape) -> ShapeOf -> s, then ``nodes``; outputs z."""
    n0 = helper.make_node("ShapeOf", ["x"], ["s"], name="shapeof", domain="test.elementwise")
    g = helper.make_graph([n0] + list(nodes), "g", [helper.make_tensor_value_info("x", x_dtype, x_shape)],
                          [helper.make_tensor_value_info("z", TensorProto.UNDEFINED, None)],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18),
                                            helper.make_opsetid("test.elementwise", 1)], ir_version=8)
    return analyze(m)


# ------------------------------------------------------------ broadcasting shapes
def test_broadcast_symbol_and_one():
    res = infer_node("Add", [ts("float", ["N", 1]), ts("float", [1, "M"])])
    assert exprs(res, "y0") == ("N", "M")
    assert not res.conflicts
    assert all(d.exactness is Exactness.EXACT for d in res.shape("y0"))


def test_broadcast_two_symbols_is_bcast_not_max():
    res = infer_node("Mul", [ts("float", ["N"]), ts("float", ["M"])])
    d = res.shape("y0")[0]
    assert "max" not in str(d.expr).lower()
    rels = [str(c.relation) for c in res.constraints if c.provenance.node == "node"]
    assert any("N == M" in r and "N == 1" in r and "M == 1" in r for r in rels)
    # exact at N = 0, M = 1 (where max would be wrong) and N = 5, M = 1
    assert res.evaluate({"N": 0, "M": 1})["y0"] == (0,)
    assert res.evaluate({"N": 1, "M": 7})["y0"] == (7,)


def test_broadcast_with_one_keeps_symbol():
    res = infer_node("Sub", [ts("float", ["N"]), ts("float", [1])])
    assert exprs(res, "y0") == ("N",)
    assert not [c for c in res.constraints if c.provenance.node == "node" and c.status == "residual"]


def test_broadcast_rank_extension_and_zero():
    res = infer_node("Add", [ts("float", [2, 0, 3]), ts("float", [3])])
    assert exprs(res, "y0") == (2, 0, 3)
    res = infer_node("Add", [ts("float", [0]), ts("float", [1])])
    assert exprs(res, "y0") == (0,)


def test_broadcast_conflict_names_node():
    res = infer_node("Add", [ts("float", [3]), ts("float", [4])])
    assert res.conflicts
    assert "node" in res.conflicts[0].nodes


def test_broadcast_symbol_vs_constant_pins_or_constrains():
    res = infer_node("Add", [ts("float", ["N"]), ts("float", [5])])
    assert exprs(res, "y0") == (5,)
    assert res.prove("N == 5 or N == 1").name == "PROVEN"


def test_comparison_gives_bool_and_arith_keeps_dtype():
    res = infer_node("Less", [ts("float", ["N"]), ts("float", ["N"])])
    assert res.dtype("y0") == onnx.TensorProto.BOOL or int(res.dtype("y0")) == TensorProto.BOOL
    res = infer_node("Add", [ts("int64", ["N"]), ts("int64", ["N"])])
    assert int(res.dtype("y0")) == TensorProto.INT64


def test_variadic_max_three_inputs():
    res = infer_node("Max", [ts("float", ["A", 1, 1]), ts("float", [1, "B", 1]), ts("float", [4])])
    assert exprs(res, "y0") == ("A", "B", 4)


def test_variadic_legacy_requires_equal_shapes():
    res = infer_node("Sum", [ts("float", [2, 3]), ts("float", [2, 4])], opset=6)
    assert res.conflicts and "node" in res.conflicts[0].nodes


def test_legacy_add_broadcast_axis():
    res = infer_node("Add", [ts("float", [2, 3, 4, 5]), ts("float", [3, 4])], {"broadcast": 1, "axis": 1}, opset=6)
    assert exprs(res, "y0") == (2, 3, 4, 5)
    assert not res.conflicts
    res = infer_node("Add", [ts("float", [2, 3, 4, 5]), ts("float", [4, 4])], {"broadcast": 1, "axis": 1}, opset=6)
    assert res.conflicts


def test_prelu_unidirectional():
    res = infer_node("PRelu", [ts("float", ["N", "C", "H"]), ts("float", ["S", 1])])
    assert exprs(res, "y0") == ("N", "C", "H")
    assert res.prove("S == C or S == 1").name == "PROVEN"
    res = infer_node("PRelu", [ts("float", [2, 3]), ts("float", [4])])
    assert res.conflicts


def test_where_three_way():
    res = infer_node("Where", [ts("bool", ["N", 1]), ts("float", [1, "M"]), ts("float", [1])])
    assert exprs(res, "y0") == ("N", "M")
    assert int(res.dtype("y0")) == TensorProto.FLOAT


# ------------------------------------------------------------ unary ops
@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Softplus", "HardSwish"])
def test_unary_shape(op):
    res = infer_node(op, [ts("float", ["N", 0, 3])])
    assert exprs(res, "y0") == ("N", 0, 3)


def test_unary_rank_unknown():
    res = infer_node("Relu", [ts("float", None)])
    assert res.shape("y0") is None


def test_not_isnan_bool():
    res = infer_node("IsNaN", [ts("float", ["N"])])
    assert int(res.dtype("y0")) == TensorProto.BOOL


def test_dropout_mask():
    res = infer_node("Dropout", [ts("float", ["N", 4])], n_outputs=2)
    assert exprs(res, "y1") == ("N", 4)
    assert int(res.dtype("y1")) == TensorProto.BOOL


def test_clip_attrs_and_inputs():
    res = infer_node("Clip", [ts("float", ["N"])], {"min": 0.0, "max": 6.0}, opset=6)
    assert exprs(res, "y0") == ("N",)
    res = infer_node("Clip", [ts("float", ["N"]), np.array(0.0, np.float32), None])
    assert exprs(res, "y0") == ("N",)
    res = infer_node("Clip", [np.array([-5, 3, 9], np.int64), np.array(0, np.int64), np.array(4, np.int64)])
    assert value(res, "y0") == (0, 3, 4)


def test_cast_and_castlike_dtype():
    res = infer_node("Cast", [ts("float", ["N"])], {"to": TensorProto.INT64})
    assert int(res.dtype("y0")) == TensorProto.INT64 and exprs(res, "y0") == ("N",)
    res = infer_node("CastLike", [ts("float", ["N"]), ts("int32", [])])
    assert int(res.dtype("y0")) == TensorProto.INT32


# ------------------------------------------------------------ value propagation (constants)
def test_div_truncates_like_onnxruntime():
    a = np.array([-7, 7, -7, 7, 6, 0], np.int64)
    b = np.array([2, -2, -2, 2, 3, 5], np.int64)
    res = infer_node("Div", [a, b])
    truth = run_ort(node_model("Div", [ts("int64", [6]), ts("int64", [6])]), {"x0": a, "x1": b})[0]
    assert value(res, "y0") == tuple(int(x) for x in truth)


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_matches_onnxruntime(fmod):
    a = np.array([-7, 7, -7, 7, 6, 0], np.int64)
    b = np.array([2, -2, -2, 2, 3, 5], np.int64)
    res = infer_node("Mod", [a, b], {"fmod": fmod})
    truth = run_ort(node_model("Mod", [ts("int64", [6]), ts("int64", [6])], {"fmod": fmod}), {"x0": a, "x1": b})[0]
    assert value(res, "y0") == tuple(int(x) for x in truth)


def test_div_by_zero_value_unknown():
    res = infer_node("Div", [np.array([4], np.int64), np.array([0], np.int64)])
    assert value(res, "y0") == (None,)


def test_values_broadcast():
    res = infer_node("Mul", [np.array([[1], [2]], np.int64), np.array([3, 4, 5], np.int64)])
    assert exprs(res, "y0") == (2, 3)
    assert value(res, "y0") == (3, 4, 5, 6, 8, 10)


def test_comparison_and_where_values():
    res = infer_node("Equal", [np.array([1, 2, 3], np.int64), np.array(2, np.int64)])
    assert value(res, "y0") == (False, True, False)
    res = infer_node("Where", [np.array([True, False]), np.array([1, 2], np.int64), np.array([7], np.int64)])
    assert value(res, "y0") == (1, 7)


def test_float_const_integral_cast_back():
    res = infer_node("Cast", [np.array([2.0, 3.5, -1.0], np.float32)], {"to": TensorProto.INT64})
    # Cast float -> int64 truncates toward zero (constant-folded with the reference evaluator)
    assert value(res, "y0") == (2, 3, -1)


# ------------------------------------------------------------ value propagation (symbolic)
def test_symbolic_div_and_reshape_chain_values():
    res = chain(["N", "S", 64], [
        helper.make_node("Mul", ["s", "two"], ["m"]),
        helper.make_node("Div", ["m", "four"], ["z"]),
    ], inits=[("two", np.array([2], np.int64)), ("four", np.array([4], np.int64))])
    v = value(res, "z")
    N, S = sympy.Symbol("N", integer=True, nonnegative=True), sympy.Symbol("S", integer=True, nonnegative=True)
    got = [res.store.canon(x) for x in v]
    # (2N)//4 == N//2; check numerically on a few bindings
    for n, s in [(0, 0), (3, 5), (7, 1)]:
        env = {N: n, S: s}
        assert [int(sympy.sympify(g).xreplace(env)) if not isinstance(g, int) else g for g in got] == \
               [(2 * n) // 4, (2 * s) // 4, 32]


def test_symbolic_sub_neg_div_truncates():
    # (0 - N) / 2 has a negative numerator: int64 Div truncates toward zero, not floor
    res = chain(["N"], [
        helper.make_node("Sub", ["zero", "s"], ["m"]),
        helper.make_node("Div", ["m", "two"], ["z"]),
    ], inits=[("zero", np.array([0], np.int64)), ("two", np.array([2], np.int64))])
    (z,) = value(res, "z")
    for n in range(0, 9):
        assert E.evaluate(z, {"N": n}) == int(-n / 2)      # -3 // 2 would be -2; truncation gives -1


def test_symbolic_compare_where_cast():
    res = chain(["N", 4], [
        helper.make_node("Equal", ["s", "four"], ["e"]),
        helper.make_node("Where", ["e", "s", "one"], ["w"]),
        helper.make_node("Cast", ["w"], ["z"], to=TensorProto.FLOAT),
    ], inits=[("four", np.array([4], np.int64)), ("one", np.array([1], np.int64))])
    v = value(res, "z")
    assert v[1] == 4                                       # 4 == 4 decided
    N = sympy.Symbol("N", integer=True, nonnegative=True)
    assert isinstance(v[0], sympy.Piecewise)
    assert v[0].xreplace({N: 4}) == 4 and v[0].xreplace({N: 3}) == 1


def test_symbolic_max_min():
    res = chain(["N"], [helper.make_node("Max", ["s", "one"], ["z"])], inits=[("one", np.array([1], np.int64))])
    v = value(res, "z")[0]
    N = sympy.Symbol("N", integer=True, nonnegative=True)
    assert v.xreplace({N: 0}) == 1 and v.xreplace({N: 5}) == 5


# ------------------------------------------------------------ properties vs onnxruntime
@st.composite
def broadcastable(draw, n=2):
    r = draw(st.integers(0, 4))
    out = [draw(st.integers(0, 4)) for _ in range(r)]
    shapes = []
    for _ in range(n):
        k = draw(st.integers(0, r))
        s = [d if draw(st.booleans()) else 1 for d in out[r - k:]]
        shapes.append(s)
    return shapes


def _names(shape, tag):
    return [f"{tag}{k}" for k in range(len(shape))]


@settings(max_examples=30, deadline=None)
@given(broadcastable(2), st.sampled_from(["Add", "Mul", "Less", "Max", "Pow"]))
def test_property_binary_broadcast(shapes, op):
    names = [_names(s, t) for s, t in zip(shapes, "ab")]
    res = infer_node(op, [ts("float", n) for n in names])
    bind = {n: d for ns, s in zip(names, shapes) for n, d in zip(ns, s)}
    got = res.evaluate(bind)["y0"]
    feeds = {f"x{i}": rnd(s) for i, s in enumerate(shapes)}
    truth = run_ort(node_model(op, [ts("float", s) for s in shapes]), feeds)[0]
    assert got == truth.shape
    assert not res.conflicts


@settings(max_examples=30, deadline=None)
@given(broadcastable(3))
def test_property_where(shapes):
    names = [_names(s, t) for s, t in zip(shapes, "abc")]
    res = infer_node("Where", [ts("bool", names[0]), ts("float", names[1]), ts("float", names[2])])
    bind = {n: d for ns, s in zip(names, shapes) for n, d in zip(ns, s)}
    got = res.evaluate(bind)["y0"]
    feeds = {"x0": np.asarray(rnd(shapes[0]) > 0.5), "x1": rnd(shapes[1]), "x2": rnd(shapes[2])}
    m = node_model("Where", [ts("bool", shapes[0]), ts("float", shapes[1]), ts("float", shapes[2])])
    assert got == run_ort(m, feeds)[0].shape


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=5),
       st.lists(st.integers(-6, 6).filter(lambda x: x != 0), min_size=1, max_size=1),
       st.sampled_from(["Div", "Mod", "Sub", "Mul", "Less", "Equal", "Max"]))
def test_property_int_values(a, b, op):
    a, b = np.array(a, np.int64), np.array(b, np.int64)
    res = infer_node(op, [a, b])
    truth = run_ort(node_model(op, [ts("int64", list(a.shape)), ts("int64", list(b.shape))]),
                    {"x0": a, "x1": b})[0]
    assert value(res, "y0") == tuple(x.item() for x in truth.reshape(-1))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 50), st.integers(1, 7), st.sampled_from(["Div", "Mod"]))
def test_property_symbolic_div_mod(n, k, op):
    res = chain(["N"], [helper.make_node(op, ["s", "k"], ["z"])], inits=[("k", np.array([k], np.int64))])
    v = value(res, "z")[0]
    assert v is not None
    N = sympy.Symbol("N", integer=True, nonnegative=True)
    got = int(v.xreplace({N: n})) if not isinstance(v, int) else v
    truth = run_ort(node_model(op, [ts("int64", [1]), ts("int64", [1])]),
                    {"x0": np.array([n], np.int64), "x1": np.array([k], np.int64)})[0]
    assert got == int(truth[0])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 40), st.integers(1, 9), st.sampled_from(["Div", "Mod"]), st.sampled_from([0, 1]))
def test_property_symbolic_divisor(n, k, op, fmod):
    # Div / Mod of two dims (both >= 0, divisor a symbol): floor == truncation, and the
    # node runs only with a non-zero divisor (required, not assumed)
    g0 = helper.make_node("Gather", ["s", "i0"], ["a"], axis=0)
    g1 = helper.make_node("Gather", ["s", "i1"], ["b"], axis=0)
    attrs = {"fmod": fmod} if op == "Mod" else {}
    res = chain(["N", "K"], [g0, g1, helper.make_node(op, ["a", "b"], ["z"], **attrs)],
                inits=[("i0", np.array([0], np.int64)), ("i1", np.array([1], np.int64))])
    v = value(res, "z")[0]
    assert v is not None
    assert E.evaluate(v, {"N": n, "K": k}) == int(run_ort(
        node_model(op, [ts("int64", [1]), ts("int64", [1])], attrs),
        {"x0": np.array([n], np.int64), "x1": np.array([k], np.int64)})[0][0])
    assert any(f"{op.lower()}.nonzero" in str(getattr(c, "rule", c)) for c in res.constraints)


def test_symbolic_divisor_sign_unknown_stays_unknown():
    # a divisor that may be negative (0 - K): no floor/trunc claim
    g0 = helper.make_node("Gather", ["s", "i0"], ["a"], axis=0)
    g1 = helper.make_node("Gather", ["s", "i1"], ["b"], axis=0)
    res = chain(["N", "K"], [g0, g1, helper.make_node("Sub", ["zero", "b"], ["nb"]),
                             helper.make_node("Mod", ["a", "nb"], ["z"])],
                inits=[("i0", np.array([0], np.int64)), ("i1", np.array([1], np.int64)),
                       ("zero", np.array([0], np.int64))])
    assert value(res, "z") == (None,)


def test_cast_symbol_to_bool_is_a_condition_not_the_symbol():
    # a sympy Symbol is also a sympy Boolean: Cast(N -> bool) must be "N != 0", not N
    res = chain(["N"], [
        helper.make_node("Cast", ["s"], ["b"], to=TensorProto.BOOL),
        helper.make_node("Where", ["b", "seven", "three"], ["z"]),
    ], inits=[("seven", np.array([7], np.int64)), ("three", np.array([3], np.int64))])
    (c,) = value(res, "b")
    N = sympy.Symbol("N", integer=True, nonnegative=True)
    assert c != N and c.xreplace({N: 0}) == sympy.false and c.xreplace({N: 2}) == sympy.true
    (w,) = value(res, "z")
    assert w.xreplace({N: 0}) == 3 and w.xreplace({N: 5}) == 7


# ---------------------------------------------------------------- Identity of sequences / optionals
def _seq_model(nodes, inputs, outs, opset):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
                          initializer=[numpy_helper.from_array(np.array(1, np.int64), "p1")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


@pytest.mark.parametrize("opset", [14, 18])
def test_identity_passes_sequence_through(opset):
    """Identity of a sequence keeps its length and per-element shapes (not a rank-unknown tensor)."""
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("Identity", ["s"], ["t"]),
             helper.make_node("Identity", ["t"], ["u"]),
             helper.make_node("SequenceLength", ["u"], ["n"]),
             helper.make_node("SequenceAt", ["u", "p1"], ["y"]),
             helper.make_node("ConcatFromSequence", ["u"], ["c"], axis=0)]
    m = _seq_model(nodes, [("a", ["N", 3]), ("b", ["M", 3])], ["n", "y", "c"], opset)
    res = analyze(m)
    assert not res.conflicts
    sq = res._lookup("u")[1].seq
    assert sq is not None and sq.length == 2 and len(sq.elems) == 2
    assert value(res, "n") == (2,)
    assert exprs(res, "y") == ("M", 3)
    assert exprs(res, "c") == ("M + N", 3)
    for n, mm in [(2, 5), (0, 1)]:
        got = run_onnxruntime(m, {"a": rnd((n, 3)), "b": rnd((mm, 3))})
        ev = res.evaluate({"N": n, "M": mm})
        assert int(got[0]) == 2
        assert ev["y"] == got[1].shape and ev["c"] == got[2].shape


def test_identity_passes_optional_through():
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("Identity", ["o"], ["o2"]),
             helper.make_node("OptionalHasElement", ["o2"], ["h"]),
             helper.make_node("OptionalGetElement", ["o2"], ["y"]),
             helper.make_node("Optional", [], ["e"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None)),
             helper.make_node("Identity", ["e"], ["e2"]),
             helper.make_node("OptionalHasElement", ["e2"], ["he"])]
    m = _seq_model(nodes, [("x", ["N", 2])], ["h", "y", "he"], 18)
    res = analyze(m)
    assert res._lookup("o2")[1].seq.optional
    assert value(res, "h") == (True,) and value(res, "he") == (False,)
    assert exprs(res, "y") == ("N", 2)
    got = run_onnxruntime(m, {"x": rnd((4, 2))})
    assert bool(got[0]) and not bool(got[2]) and got[1].shape == res.evaluate({"N": 4})["y"]


@pytest.mark.parametrize("to,add", [(TensorProto.UINT8, 250), (TensorProto.INT8, 120), (TensorProto.INT16, 32760)])
def test_cast_of_shape_values_to_a_narrower_int_wraps_like_onnxruntime(to, add):
    """Shape -> Add -> Cast(narrow) -> Cast(int64) -> ConstantOfShape: the wrapped value,
    never the mathematical one (uint8: N + 250 is 4 at N = 10)."""
    import numpy as np
    from onnx import helper, numpy_helper
    import smtshape
    from smtshape.testing import run_onnxruntime
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Add", ["s", "c"], ["a"]),
             helper.make_node("Cast", ["a"], ["u"], to=to), helper.make_node("Cast", ["u"], ["b"], to=TensorProto.INT64),
             helper.make_node("Abs", ["b"], ["p"]), helper.make_node("ConstantOfShape", ["p"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.array([add], np.int64), "c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    (d,) = smtshape.analyze(m).shape("y")
    if to == TensorProto.UINT8:
        assert d.exactness.name == "EXACT"
    for n in (0, 3, 5, 6, 10, 300):
        want = run_onnxruntime(m, {"x": np.zeros(n, np.float32)})[0].shape[0]
        assert d.evaluate({"N": n}) in (want, None)     # right, or honestly unknown


# ---------------------------------------------------------------- preconditions of the spec (conflicts)
from .test_shape import assert_refused, assert_runs_like_ort, conflict_rules  # noqa: E402

F = "float"
PRECONDITIONS = [
    # (op, inputs, attrs, opset, rule, onnxruntime refuses it too)
    ("Mod", [ts("int64", [2]), ts("int64", [2])], {"fmod": 2}, 18, "mod.fmod", True),
    ("Mod", [ts(F, [2]), ts(F, [2])], {"fmod": 0}, 13, "mod.fmod", True),
    ("BitShift", [ts("uint8", [2]), ts("uint8", [2])], {"direction": "UP"}, 18, "bitshift.direction", True),
    ("Dropout", [ts(F, [2]), np.array([0.5], np.float32)], {}, 18, "dropout.scalar", True),
    ("Dropout", [ts(F, [2]), np.array(1.5, np.float32), np.array(True)], {}, 18, "dropout.ratio", True),
    ("Clip", [ts(F, [2]), np.array([0.0, 1.0], np.float32)], {}, 18, "clip.scalar", True),
    ("Cast", [ts(F, [2])], {"to": 0}, 18, "cast.to", True),
    # (opset 6: onnxruntime has no kernel left to run them)
    ("Add", [ts(F, [2, 3]), ts(F, [3])], {}, 6, "add.legacy_broadcast", False),
    ("Mul", [ts(F, [3]), ts(F, [2, 3])], {"broadcast": 1}, 6, "mul.legacy_broadcast", False),
    ("Sub", [ts(F, [2, 3, 4]), ts(F, [3])], {"broadcast": 1, "axis": 2}, 6, "sub.legacy_broadcast", False),
    ("Max", [ts(F, [2, 3]), ts(F, [3])], {}, 6, "max.same_shape", False),
    # (the spec: slope broadcasts onto X, Y has X's shape; both runtimes broadcast both ways instead)
    ("PRelu", [ts(F, [3]), ts(F, [2, 3])], {}, 18, "prelu.slope", False),
    ("Add", [ts(F, [2]), ts(F, [3])], {}, 18, "add.broadcast", True),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,ort", PRECONDITIONS,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(PRECONDITIONS)])
def test_precondition_is_a_conflict(op, inputs, attrs, opset, rule, ort):
    assert_refused(op, inputs, attrs, rule, opset=opset, ort=ort)


@pytest.mark.parametrize("op,inputs,attrs,opset", [
    ("Mod", [ts(F, [2]), ts(F, [2])], {"fmod": 1}, 13),
    ("Clip", [ts(F, [2]), np.array([0.0], np.float32)], None, 18),        # a 1-element min: both runtimes run it
    ("Dropout", [ts(F, [2]), np.array(0.0, np.float32)], None, 18),
])
def test_valid_models_have_no_conflict(op, inputs, attrs, opset):
    assert_runs_like_ort(op, inputs, attrs, opset=opset)


def test_integer_mod_with_fmod_1_is_no_conflict():
    """Mod-13 ties fmod=1 to floating-point inputs, but onnxruntime and onnx's reference both
    run an integer C fmod: no conflict."""
    res = infer_node("Mod", [ts("int64", [2]), ts("int64", [2])], {"fmod": 1}, opset=13)
    assert not res.conflicts and exprs(res, "y0") == (2,)
    m = node_model("Mod", [ts("int64", [2]), ts("int64", [2])], {"fmod": 1}, opset=13)
    assert list(run_ort(m, {"x0": np.array([5, -5]), "x1": np.array([3, 3])})[0]) == [2, -2]
    res = infer_node("Add", [ts(F, [2, 3]), ts(F, [3])], {"broadcast": 1}, opset=6)
    assert not res.conflicts and exprs(res, "y0") == (2, 3)


def test_float_mod_fmod0_is_defined_from_opset_28():
    import onnx.defs
    if onnx.defs.onnx_opset_version() < 28:
        pytest.skip("the installed onnx has no Mod-28")
    res = infer_node("Mod", [ts(F, [2]), ts(F, [2])], {"fmod": 0}, opset=28)
    assert not conflict_rules(res)


def test_onnx_backend_node_tests():
    """ONNX's backend node tests of the elementwise ops: no conflict, nothing unchecked, right dims."""
    from smtshape.ops.elementwise import ARITH, COMPARE, UNARY
    from .test_shape import check_backend
    ops = set(ARITH) | COMPARE | set(UNARY) | {"Max", "Min", "Sum", "Mean", "PRelu", "Where", "Clip", "Cast",
                                               "CastLike", "Identity", "Dropout"}
    check_backend(*sorted(ops), min_cases=300)


# ---------------------------------------------------------------- element types (issue 18 item 1)
def _sized_by(nodes, inits=(), x_shape=("N",), src="b", opset=18):
    """x -> Shape -> s, then ``nodes``, whose int64 1-D result ``src`` sizes
    ConstantOfShape -> y: the model's only output."""
    nodes = [helper.make_node("Shape", ["x"], ["s"])] + list(nodes) + [helper.make_node("ConstantOfShape", [src], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _runs(model, n):
    """y's length in onnxruntime and in onnx's reference evaluator at N = n (None: the run fails)."""
    from onnx.reference import ReferenceEvaluator
    out = []
    for run in (lambda f: run_ort(model, f)[0], lambda f: ReferenceEvaluator(model).run(None, f)[0]):
        try:
            with np.errstate(all="ignore"):
                out.append(run({"x": np.zeros(n, np.float32)}).shape[0])
        except Exception:
            out.append(None)
    return out


def _claim_holds(dim, n, sizes):
    """An EXACT dim is each runtime's size; a bound is at least each (where the run succeeds)."""
    for got in sizes:
        if got is None:
            continue
        if dim.exactness is Exactness.EXACT:
            assert dim.evaluate({"N": n}) == got, (dim, n, got)
        elif dim.exactness is Exactness.UPPER_BOUND:
            assert E.evaluate(dim.bound, {"N": n}) >= got, (dim, n, got)


def _check_sizes(model, ns):
    res = analyze(model)
    assert res.consistent is True, [c.explain() for c in res.conflicts]
    (d,) = res.shape("y")
    for n in ns:
        _claim_holds(d, n, _runs(model, n))
    return d


def test_uint8_add_wraps_after_the_cast():
    """Cast(N -> uint8) + 100 (uint8): 0 at N = 156, 44 at N = 200 (the Add wraps too; it
    was EXACT N % 256 + 100)."""
    m = _sized_by([helper.make_node("Cast", ["s"], ["u"], to=TensorProto.UINT8),
                   helper.make_node("Add", ["u", "c"], ["a"]), helper.make_node("Cast", ["a"], ["b"], to=TensorProto.INT64)],
                  [("c", np.array([100], np.uint8))])
    d = _check_sizes(m, [3, 155, 156, 200, 300])
    assert d.exactness is Exactness.EXACT
    assert [d.evaluate({"N": n}) for n in (156, 200)] == [0, 44]


def test_int32_multiply_wraps():
    """Cast(N -> int32) * 2**30 + 8: 8 at N = 4 (it was EXACT 2**32 + 8)."""
    m = _sized_by([helper.make_node("Cast", ["s"], ["i"], to=TensorProto.INT32),
                   helper.make_node("Mul", ["i", "k"], ["p"]), helper.make_node("Add", ["p", "c"], ["q"]),
                   helper.make_node("Cast", ["q"], ["b"], to=TensorProto.INT64)],
                  [("k", np.array([2 ** 30], np.int32)), ("c", np.array([8], np.int32))])
    d = _check_sizes(m, [0, 1, 4, 5, 8])
    assert d.exactness is Exactness.EXACT and d.evaluate({"N": 4}) == 8


def test_int64_multiply_wraps():
    """2**62 * N + 3 in int64: 3 at N = 4 and at N = 8 (it was EXACT 2**62 * N + 3)."""
    m = _sized_by([helper.make_node("Mul", ["s", "k"], ["p"]), helper.make_node("Add", ["p", "c"], ["b"])],
                  [("k", np.array([2 ** 62], np.int64)), ("c", np.array([3], np.int64))])
    d = _check_sizes(m, [0, 4, 8])
    assert d.exactness is not Exactness.EXACT or [d.evaluate({"N": n}) for n in (0, 4, 8)] == [3, 3, 3]


def test_float16_square_is_never_exact_one_way():
    """Cast(N -> float16) squared: 10201 at N = 101 in onnxruntime (float32 inside), 10200 by
    the spec and onnx's reference (rounded to float16): it was EXACT N**2."""
    nodes = [helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT16), helper.make_node("Mul", ["f", "f"], ["q"]),
             helper.make_node("Cast", ["q"], ["b"], to=TensorProto.INT64)]
    for shape in (["N"], [101]):
        m = _sized_by(nodes, x_shape=shape)
        assert _runs(m, 101) == [10201, 10200]
        d = _check_sizes(m, [3, 45, 101] if shape == ["N"] else [101])
        assert d.exactness is not Exactness.EXACT


def test_float32_product_past_two_to_the_24():
    """Cast(N -> float) squared: 16785408 at N = 4097 on both runtimes (it was EXACT N**2,
    16785409, under a forced N*N <= 2**24)."""
    m = _sized_by([helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT), helper.make_node("Mul", ["f", "f"], ["q"]),
                   helper.make_node("Cast", ["q"], ["b"], to=TensorProto.INT64)])
    res = analyze(m)
    (d,) = res.shape("y")
    assert not res.specializations and d.exactness is not Exactness.EXACT
    assert _runs(m, 4097) == [16785408, 16785408]
    _claim_holds(d, 4097, [16785408])
    m = _sized_by([helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT), helper.make_node("Mul", ["f", "f"], ["q"]),
                   helper.make_node("Cast", ["q"], ["b"], to=TensorProto.INT64)], x_shape=[4097])
    assert exprs(analyze(m), "y") == (16785408,)


def test_float16_one_and_a_half_n():
    """1.5 * N in float16 at N = 1501: onnxruntime 2251, the spec 2252 (it was folded to EXACT
    2252); an exact float16 product (N = 1364: 2046) stays exact."""
    nodes = [helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT16), helper.make_node("Mul", ["f", "c"], ["q"]),
             helper.make_node("Cast", ["q"], ["b"], to=TensorProto.INT64)]
    inits = [("c", np.array([1.5], np.float16))]
    m = _sized_by(nodes, inits, x_shape=[1501])
    assert _runs(m, 1501) == [2251, 2252]
    d = _check_sizes(m, [1501])
    assert d.exactness is Exactness.UPPER_BOUND
    assert exprs(analyze(_sized_by(nodes, inits, x_shape=[1364])), "y") == (2046,)
    _check_sizes(_sized_by(nodes, inits), [4, 1364, 1365, 1501])


def test_cast_to_float_forces_nothing_on_the_inputs():
    """A Cast to float of a product of dims forced ``48*N*N*W**4 <= 2**24`` on the inputs
    (rule cast.float_exact; the model runs at N = 19, W = 31): representability limits what is
    EXACT, never the inputs."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ReduceProd", ["s"], ["p"], keepdims=1),
             helper.make_node("Cast", ["p"], ["f"], to=TensorProto.FLOAT), helper.make_node("Sqrt", ["f"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "N", "W", "W", "W", "W", 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    res = analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8))
    assert res.consistent is True
    assert not res.specializations and not res.specializations.premises
    assert not [c for c in res.constraints if c.provenance.rule == "cast.float_exact"]


@pytest.mark.parametrize("to,n", [(TensorProto.FLOAT16, 3000), (TensorProto.BFLOAT16, 3000), (TensorProto.FLOAT16, 2049)])
def test_a_dim_beyond_the_float_mantissa_is_no_conflict(to, n):
    """A dim pinned to 3000 cast to float16 / bfloat16 and back: it was a conflict (``N <=
    2048`` against ``N == 3000``); 3000 is a float16, not a bfloat16 (3008), 2049 neither."""
    # (the Reshape that pins N comes after the casts, which see N as a symbol)
    m = _sized_by([helper.make_node("Cast", ["s"], ["f"], to=to), helper.make_node("Cast", ["f"], ["b"], to=TensorProto.INT64),
                   helper.make_node("Reshape", ["x", "t"], ["r"])], [("t", np.array([n], np.int64))])
    d = _check_sizes(m, [n])
    assert d.exactness is not Exactness.EXACT or (to == TensorProto.FLOAT16 and n == 3000)
