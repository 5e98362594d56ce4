"""Element-type semantics of computed values (smtshape.numeric), against onnxruntime and
onnx's reference evaluator.

Every value element smtshape claims is checked against both runtimes at values on both
sides of the wrap point (integers) and of the rounding point (floats): an exact element
must be what each runtime gives (where the runtime has a kernel for the op and type), an
enclosure (``numeric.Real``) must hold the value each gives, a bounded data symbol must
be at least the value each gives."""
from __future__ import annotations

import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings, strategies as st
from onnx import TensorProto as T, helper, numpy_helper

import smtshape
from smtshape import expr as E
from smtshape import irtypes as ir
from smtshape import numeric as N
from smtshape.testing import run_onnxruntime

INT_TYPES = [T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32, T.UINT64]
FLOAT_TYPES = [T.FLOAT16, T.BFLOAT16, T.FLOAT, T.DOUBLE]
_NP = {T.INT8: np.int8, T.INT16: np.int16, T.INT32: np.int32, T.INT64: np.int64, T.UINT8: np.uint8,
       T.UINT16: np.uint16, T.UINT32: np.uint32, T.UINT64: np.uint64, T.FLOAT16: np.float16,
       T.BFLOAT16: ml_dtypes.bfloat16, T.FLOAT: np.float32, T.DOUBLE: np.float64}
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------ models and runtimes
def _const(name, value, dtype):
    arr = np.array([value], dtype=_NP[dtype])
    if dtype == T.BFLOAT16:
        return helper.make_tensor(name, T.BFLOAT16, [1], [float(value)])
    return numpy_helper.from_array(arr, name)


def build(nodes, outs, x_shape, inits=(), opset=18):
    """A model over input x (float, ``x_shape``) whose outputs are ``outs`` [(name, dtype)],
    in order; a bfloat16 output is handed out through an exact Cast to float (onnxruntime
    has no numpy type for bfloat16)."""
    nodes, graph_outs = list(nodes), []
    for name, dt in outs:
        if dt == T.BFLOAT16:
            nodes.append(helper.make_node("Cast", [name], [name + "_f"], to=T.FLOAT))
            graph_outs.append(helper.make_tensor_value_info(name + "_f", T.FLOAT, None))
        else:
            graph_outs.append(helper.make_tensor_value_info(name, dt, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, list(x_shape))], graph_outs,
                          initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def value_model(dtype, op, consts=(), n=None, cast_back=False):
    """x[N] (or x[n]) -> Shape -> Cast(dtype) -> v;  z = op(v, c0, c1, ...) in dtype;  with
    ``cast_back`` also w = Cast(z -> int64).  The outputs are z (and w)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=dtype)]
    names = [f"c{k}" for k in range(len(consts))]
    nodes.append(helper.make_node(op, ["v"] + names, ["z"]))
    outs = [("z", dtype)]
    if cast_back:
        nodes.append(helper.make_node("Cast", ["z"], ["w"], to=T.INT64))
        outs.append(("w", T.INT64))
    return build(nodes, outs, ["N" if n is None else n], [_const(k, c, dtype) for k, c in zip(names, consts)])


def runtimes(model, n):
    """{runtime: output arrays} for onnxruntime (when it has a kernel) and the reference."""
    feeds = {"x": np.zeros(n, np.float32)}
    out = {}
    try:
        out["onnxruntime"] = run_onnxruntime(model, feeds)
    except Exception as e:   # no kernel for this op and type
        assert "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e), str(e)
    from onnx.reference import ReferenceEvaluator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            out["reference"] = ReferenceEvaluator(model).run(None, feeds)
    return out


def element(res, name):
    v = res._lookup(name)[1].value
    assert v is None or len(v) == 1
    return None if v is None else v[0]


def holds(res, e, env, got) -> bool:
    """Does the claim ``e`` (a value element) hold for the runtime's number ``got``?"""
    if e is None:
        return True
    got = Fraction(float(got)) if isinstance(got, (float, np.floating, ml_dtypes.bfloat16)) or \
        getattr(got, "dtype", None) == ml_dtypes.bfloat16 else Fraction(int(got))
    if isinstance(e, N.Real):
        sub = {s: sympy.Integer(env[s.name]) for s in e.x.free_symbols}
        if not all(bool(c.xreplace(sub)) for c in e.where):
            return True                 # claimed only where its conditions hold
        x = e.x.xreplace(sub)
        assert isinstance(x, sympy.Rational), x
        x = Fraction(int(x.p), int(x.q))
        return abs(got - x) <= e.err * abs(x)
    data = [s for s in E.free_symbols(e) if res.store.info(s) is not None and res.store.info(s).kind == "data"]
    if data:
        # a bounded data symbol (the runtime's value, named): at least 0, at most its bound
        (s,) = data
        assert e == s
        up = res.store.info(s).upper
        if isinstance(up, sympy.Piecewise) and E.evaluate(up, env) == N.INT64_MAX:
            # a value rounded under conditions (a divisor not 0: ``where``) whose conditions
            # fail here (1 / (0.5 * N) at N = 0 is inf, and inf cast to int64 gives INT64_MIN
            # on onnxruntime, undefined by the spec): claimed only where they hold, like a
            # Real's ``where`` above.  (Known limit, in the closing note: the symbol's
            # domain >= 0 is still the store's there.)
            return True
        return up is not None and 0 <= got <= E.evaluate(up, env)
    return Fraction(E.evaluate(e, env)) == got


def check(model, n, outputs=("z",)):
    """Analyze ``model`` (symbolic N, or static), run both runtimes at N = n and check each
    output element.  Returns the claims, for the tests that also want them exact."""
    res = smtshape.analyze(model)
    if any(k.provenance.rule == "schema.type" for c in res.conflicts for k in c.constraints):
        # an element type the op's schema does not allow (Round of bfloat16): refused, as
        # onnxruntime refuses it
        with pytest.raises(Exception):
            run_onnxruntime(model, {"x": np.zeros(n, np.float32)})
        return {}
    assert res.consistent in (True, None), [c.explain() for c in res.conflicts]
    got = runtimes(model, n)
    claims = {"result": res}
    for k, name in enumerate(outputs):
        e = element(res, name)
        claims[name] = e
        for rt, arrs in got.items():
            y = arrs[k].reshape(-1)
            assert y.size == 1
            y = y[0]
            if isinstance(y, (np.floating, float)) and not np.isfinite(float(y)):
                assert not _exact(e, res), f"{name}: {e} claimed, {rt} gives {y} at N = {n}"
                continue
            assert holds(res, e, {"N": n}, y), f"{name}: {e} claimed, {rt} gives {y!r} at N = {n}"
    return claims


def _exact(e, res=None):
    """Is the element claimed exact (no enclosure, no bounded data symbol)?"""
    if e is None or (isinstance(e, N.Real) and not e.exact):
        return False
    return res is None or isinstance(e, N.Real) or not any(
        res.store.info(s) is not None and res.store.info(s).kind == "data" for s in E.free_symbols(e))


# ------------------------------------------------------------ edges
def edges(dtype):
    """Constants around the wrap (integers) or rounding (floats) points of ``dtype``."""
    if dtype in INT_TYPES:
        lo, hi = N.INT_RANGE[ir.DataType(dtype)]
        bits = (hi - lo).bit_length()
        return st.one_of(st.sampled_from([lo, lo + 1, hi, hi - 1, hi - 150, lo + 150, 2 ** (bits - 2),
                                          2 ** (bits // 2), 1, 0, 3] + ([-1, -2 ** (bits - 3)] if lo < 0 else [])),
                         st.integers(lo, hi))
    p = N.FLOAT_FORMATS[ir.DataType(dtype)].p
    top = {T.FLOAT16: 65504.0}.get(dtype, 2.0 ** 100)
    return st.one_of(st.sampled_from([2.0 ** p, 2.0 ** p - 150, 2.0 ** p + 1, 2.0 ** (p + 1), 0.5, 1.5, 0.25,
                                      0.1, 3.0, -1.0, 2.0 ** -p, top]),
                     st.floats(-2.0 ** (p + 2), 2.0 ** (p + 2), allow_nan=False, allow_infinity=False, width=32))


# ------------------------------------------------------------ integers
INT_BINARY = ["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min"]


@SETTINGS
@given(dtype=st.sampled_from(INT_TYPES), op=st.sampled_from(INT_BINARY), n=st.integers(0, 300),
       static=st.booleans(), data=st.data())
def test_integer_binary_ops_wrap_like_both_runtimes(dtype, op, n, static, data):
    """Cast(N) op c in every integer type, c around the wrap point: an exact claim is what
    both runtimes give (the wrapped value), never the mathematical one."""
    c = data.draw(edges(dtype))
    if op in ("Div", "Mod") and c == 0:
        c = 3
    if dtype in (T.UINT8, T.INT8) and n > N.INT_RANGE[ir.DataType(dtype)][1]:
        n = n % 100              # (the input itself wraps on the Cast; keep the divisor cases simple)
    check(value_model(dtype, op, [c], n=n if static else None), n)


@SETTINGS
@given(dtype=st.sampled_from([T.INT8, T.INT16, T.INT32, T.INT64]), op=st.sampled_from(["Neg", "Abs"]),
       n=st.integers(0, 300), c=st.integers(0, 400), static=st.booleans())
def test_integer_unary_ops_wrap(dtype, op, n, c, static):
    """Neg / Abs of (N + lo + c) around INT_MIN: Abs(INT_MIN) and Neg(INT_MIN) wrap to INT_MIN."""
    lo, hi = N.INT_RANGE[ir.DataType(dtype)]
    c = min(lo + c, hi)
    check(build([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=dtype),
                 helper.make_node("Add", ["v", "c"], ["a"]), helper.make_node(op, ["a"], ["z"])],
                [("z", dtype)], ["N" if not static else n], [_const("c", c, dtype)]), n)


@SETTINGS
@given(src=st.sampled_from(INT_TYPES), dst=st.sampled_from(INT_TYPES), n=st.integers(0, 300), data=st.data())
def test_integer_casts_wrap(src, dst, n, data):
    """(N + c) in one integer type, cast to another: the wrapped value."""
    c = data.draw(edges(src))
    check(build([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=src),
                 helper.make_node("Add", ["v", "c"], ["a"]), helper.make_node("Cast", ["a"], ["z"], to=dst)],
                [("z", dst)], ["N"], [_const("c", c, src)]), n)


def test_wrap_keeps_an_expression_in_range_and_wraps_one_that_is_not():
    res = smtshape.analyze(value_model(T.INT64, "Add", [1]))
    assert element(res, "z") == E.add(E.symbol("N"), 1)          # (dims stay below 2**48)
    res = smtshape.analyze(value_model(T.INT64, "Mul", [2 ** 62]))
    z = element(res, "z")
    assert z.has(E.Mod) and E.evaluate(z, {"N": 4}) == 0 and E.evaluate(z, {"N": 1}) == 2 ** 62


# ------------------------------------------------------------ floats
FLOAT_BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]


@SETTINGS
@given(dtype=st.sampled_from(FLOAT_TYPES), op=st.sampled_from(FLOAT_BINARY), n=st.integers(0, 3000),
       static=st.booleans(), data=st.data())
def test_float_binary_ops_round_like_both_runtimes(dtype, op, n, static, data):
    """Cast(N) op c in every float type, c around the rounding point (2**p), cast back to
    int64 too: exact claims are both runtimes' value, enclosures hold both."""
    c = data.draw(edges(dtype))
    check(value_model(dtype, op, [c], n=n if static else None, cast_back=True), n, ("z", "w"))


@SETTINGS
@given(dtype=st.sampled_from(FLOAT_TYPES), op=st.sampled_from(["Floor", "Ceil", "Round", "Reciprocal", "Neg",
                                                                "Abs", "Relu"]),
       n=st.integers(0, 3000), c=st.sampled_from([0.5, 1.5, 0.25, 0.1, 3.0, 1 / 3, 2.5, 0.75]), static=st.booleans())
def test_float_unary_ops(dtype, op, n, c, static):
    """op(Cast(N) * c): rounding functions of exact and inexact values, in every float type."""
    check(build([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=dtype),
                 helper.make_node("Mul", ["v", "c"], ["a"]), helper.make_node(op, ["a"], ["z"]),
                 helper.make_node("Cast", ["z"], ["w"], to=T.INT64)],
                [("z", dtype), ("w", T.INT64)], ["N" if not static else n], [_const("c", c, dtype)]), n, ("z", "w"))


@SETTINGS
@given(src=st.sampled_from(FLOAT_TYPES), dst=st.sampled_from(FLOAT_TYPES + [T.INT64, T.INT32, T.UINT8]),
       n=st.integers(0, 5000), c=st.sampled_from([0.5, 1.5, 0.1, 1.0, 2.0 ** 11, 2.0 ** 24 - 7, 65000.0, 2.0 ** 8]),
       static=st.booleans())
def test_float_casts(src, dst, n, c, static):
    """Cast(N) * c in one float type, cast to another type (float or integer)."""
    check(build([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=src),
                 helper.make_node("Mul", ["v", "c"], ["a"]), helper.make_node("Cast", ["a"], ["z"], to=dst)],
                [("z", dst)], ["N" if not static else n], [_const("c", c, src)]), n)


@SETTINGS
@given(dtype=st.sampled_from(FLOAT_TYPES), op=st.sampled_from(["ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"]),
       h=st.integers(1, 2100), w=st.integers(1, 2100), static=st.booleans())
def test_float_reductions_of_a_shape(dtype, op, h, w, static):
    """Shape -> Cast(float type) -> Reduce* -> Cast(int64), the detection pipelines' longer
    and shorter image sides."""
    model = build([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["v"], to=dtype),
                   helper.make_node(op, ["v"], ["z"], keepdims=0), helper.make_node("Cast", ["z"], ["w"], to=T.INT64)],
                  [("z", dtype), ("w", T.INT64)], [1, "H", "W"] if not static else [1, h, w])
    res = smtshape.analyze(model)
    feeds = {"x": np.zeros((1, h, w), np.float32)}
    got = {}
    try:
        got["onnxruntime"] = run_onnxruntime(model, feeds)
    except Exception as e:
        assert "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e), str(e)
    from onnx.reference import ReferenceEvaluator
    got["reference"] = ReferenceEvaluator(model).run(None, feeds)
    env = {"H": h, "W": w}
    for k, name in enumerate(("z", "w")):
        e = element(res, name)
        for rt, arrs in got.items():
            assert holds(res, e, env, arrs[k].reshape(-1)[0]), f"{name}: {e}, {rt} gives {arrs[k]} at {env}"
    if static and dtype in (T.FLOAT, T.DOUBLE) and op in ("ReduceMax", "ReduceMin"):
        assert element(res, "w") == (max if op == "ReduceMax" else min)(1, h, w)


def test_float16_product_is_not_exact():
    """float16 N * N: 10201 at N = 101 in onnxruntime (computed in float32), 10200 by the
    spec (rounded to float16): never EXACT one way."""
    m = value_model(T.FLOAT16, "Mul", [101.0], n=101, cast_back=True)
    claims = check(m, 101, ("z", "w"))
    assert not _exact(claims["w"], claims["result"])


def test_float16_one_and_a_half_n_is_not_exact_either_way():
    """1.5 * N at N = 1501 in float16: onnxruntime 2251, the spec 2252 (2251.5 is no float16)."""
    for n in (1501, None):
        claims = check(value_model(T.FLOAT16, "Mul", [1.5], n=n, cast_back=True), 1501, ("z", "w"))
        assert not _exact(claims["w"], claims["result"])
    # an exact float16 value is exact: 1.5 * 1364 == 2046
    claims = check(value_model(T.FLOAT16, "Mul", [1.5], n=1364, cast_back=True), 1364, ("z", "w"))
    assert claims["w"] == 2046


def test_float32_product_past_two_to_the_24_is_not_exact():
    claims = check(value_model(T.FLOAT, "Mul", [4097.0], n=4097, cast_back=True), 4097, ("z", "w"))
    # 4097 * 4097 = 16785409 rounds to 16785408 in float32 (both runtimes: IEEE)
    assert claims["w"] == 16785408
    claims = check(value_model(T.FLOAT, "Mul", [4097.0], cast_back=True), 4097, ("z", "w"))
    assert not _exact(claims["w"], claims["result"])


# ------------------------------------------------------------ representability and rounding
@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(FLOAT_TYPES), x=st.floats(allow_nan=False, allow_infinity=False))
def test_round_to_matches_numpy(dtype, x):
    q = Fraction(x)
    r = N.round_to(q, ir.DataType(dtype))
    with np.errstate(all="ignore"):
        want = np.array(x, np.float64).astype(_NP[dtype])
    if not np.isfinite(float(want)):
        assert r is None
    else:
        assert r == Fraction(float(want))
        assert N.representable(r, ir.DataType(dtype))
        assert N.representable(q, ir.DataType(dtype)) == (r == q)


def test_representable_edges():
    f16 = ir.DataType.FLOAT16
    assert N.representable(Fraction(2048), f16) and not N.representable(Fraction(2049), f16)
    assert N.representable(Fraction(65504), f16) and not N.representable(Fraction(65505), f16)
    assert N.representable(Fraction(1, 2 ** 24), f16) and not N.representable(Fraction(1, 2 ** 25), f16)
    assert not N.representable(Fraction(1, 3), ir.DataType.DOUBLE)
    assert N.representable(Fraction(2 ** 24 + 2), ir.DataType.FLOAT) and not N.representable(Fraction(2 ** 24 + 1),
                                                                                            ir.DataType.FLOAT)


# ------------------------------------------------------------ the detection resize size
def _resize_size_model(a=288.0, b=576.0, h="H", w="W"):
    """torchvision's GeneralizedRCNNTransform: scale = min(a / min(H, W), b / max(H, W)) in
    float32, out = floor(H * scale) (Reciprocal then Mul, as the TorchScript exporter writes it)."""
    mk = helper.make_node
    nodes = [mk("Shape", ["x"], ["s"]), mk("Slice", ["s", "st", "en"], ["hw"]),
             mk("ReduceMin", ["hw"], ["mn"], keepdims=0), mk("ReduceMax", ["hw"], ["mx"], keepdims=0),
             mk("Cast", ["mn"], ["mnf"], to=T.FLOAT), mk("Cast", ["mx"], ["mxf"], to=T.FLOAT),
             mk("Reciprocal", ["mnf"], ["r1"]), mk("Reciprocal", ["mxf"], ["r2"]),
             mk("Mul", ["r1", "a"], ["s1"]), mk("Mul", ["r2", "b"], ["s2"]), mk("Min", ["s1", "s2"], ["sc"]),
             mk("Gather", ["s", "i1"], ["hh"], axis=0), mk("Cast", ["hh"], ["hf"], to=T.FLOAT),
             mk("Mul", ["hf", "sc"], ["p"]), mk("Floor", ["p"], ["fl"]), mk("Cast", ["fl"], ["z"], to=T.INT64)]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "st"), numpy_helper.from_array(np.array([3], np.int64), "en"),
             numpy_helper.from_array(np.array(a, np.float32), "a"), numpy_helper.from_array(np.array(b, np.float32), "b"),
             numpy_helper.from_array(np.array(1, np.int64), "i1")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [3, h, w])],
                          [helper.make_tensor_value_info("z", T.INT64, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 1500), w=st.integers(1, 1500))
def test_detection_resize_size_is_bounded_soundly(h, w):
    """floor(H * min(288 / min(H, W), 576 / max(H, W))) in float32: a bound that holds
    (the float32 result is 431 at 200 x 300, where the exact rational floor is 432)."""
    res = smtshape.analyze(_resize_size_model())
    z = element(res, "z")
    assert z is not None and res.store.info(z).kind == "data"
    feeds = {"x": np.zeros((3, h, w), np.float32)}
    got = int(run_onnxruntime(_resize_size_model(), feeds)[0])
    assert holds(res, z, {"H": h, "W": w}, got)


def test_detection_resize_size_static_is_exact_or_bounded():
    for h, w in ((256, 256), (200, 300), (331, 177)):
        m = _resize_size_model(h=h, w=w)
        res = smtshape.analyze(m)
        got = int(run_onnxruntime(m, {"x": np.zeros((3, h, w), np.float32)})[0])
        z = element(res, "z")
        assert holds(res, z, {}, got)
        if (h, w) == (256, 256):
            assert z == 288        # every step exact: 1 / 256 and 288 / 256 are floats
