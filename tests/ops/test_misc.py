"""EyeLike, Det, CumProd, LpNormalization, BitCast, random generators, string ops, TfIdfVectorizer,
losses and the ai.onnx.preview.training ops, against onnxruntime, onnx.reference and ONNX's
backend node tests."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper

import smtshape
import smtshape.ops.misc  # noqa: F401
from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, refused, run_onnxruntime, ts, unchecked

from .onnx_node_cases import check_all

MISC_OPS = ("EyeLike", "Det", "CumProd", "LpNormalization", "BitCast", "Bernoulli", "RandomNormal", "RandomUniform",
            "RandomNormalLike", "RandomUniformLike", "Multinomial", "StringConcat", "StringNormalizer", "StringSplit",
            "RegexFullMatch", "TfIdfVectorizer", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
            "Adagrad", "Adam", "Momentum", "Gradient")
TRAINING = "ai.onnx.preview.training"


def rnd(shape):
    return np.random.rand(*shape).astype(np.float32)


def sts(shape):
    """A string graph input."""
    t = ts("float", shape)
    t.dtype = TensorProto.STRING
    return t




def rule_ids(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints if c.provenance.node}


def names(shape, prefix="d"):
    return [f"{prefix}{i}" for i in range(len(shape))]


def vs_ort(op, shape, attrs, opset, feed, extra=(), n_outputs=1, sym=None):
    """One data input (symbolic in the analysis) + known extras; compare every output."""
    sym = sym or ts("float", names(shape))
    res = infer_node(op, [sym, *extra], attrs, opset=opset, n_outputs=n_outputs)
    assert not res.conflicts, res.conflicts
    got = res.evaluate(dict(zip(names(shape), shape)))
    conc = ts("float", list(shape))
    conc.dtype = sym.dtype
    truth = run_onnxruntime(node_model(op, [conc, *extra], attrs, opset=opset, n_outputs=n_outputs), {"x0": feed})
    for k, t in enumerate(truth):
        assert got[f"y{k}"] == t.shape, (k, got, [t.shape for t in truth])
    return res


def test_backend_node_tests():
    results = check_all(*MISC_OPS, min_cases=150)
    for name, (known, exact, total) in results.items():
        assert known >= 1, name
        # with the integer inputs known, only StringSplit's token count and the words
        # StringNormalizer keeps are not exact
        if "string_split" not in name and "strnorm" not in name:
            assert exact == total, (name, exact, total)


# ------------------------------------------------------------ shape-preserving ops
@pytest.mark.parametrize("shape", [[3, 5], [1, 1], [0, 4]])
@pytest.mark.parametrize("opset", [9, 22])
def test_eyelike(shape, opset):
    res = vs_ort("EyeLike", shape, {"k": 1, "dtype": TensorProto.INT64}, opset, rnd(shape))
    assert int(res.dtype("y0")) == TensorProto.INT64
    res = infer_node("EyeLike", [ts("float", ["N", "M", "K"])], opset=opset)
    assert res.shape("y0") is None and rule_ids(res) == {"eyelike.rank"}


@pytest.mark.parametrize("shape", [[3, 3], [2, 4, 4], [0, 2, 2], [1, 1, 1, 1]])
def test_det(shape):
    vs_ort("Det", shape, {}, 11, rnd(shape))
    res = infer_node("Det", [ts("float", ["B", "M", "K"])], opset=22)
    assert exprs(res, "y0") == ("B",) and res.prove("M == K").name == "PROVEN"
    assert infer_node("Det", [ts("float", ["B", 3, 4])]).conflicts


@pytest.mark.parametrize("shape,axis", [([3, 4], 1), ([2, 0, 5], -1), ([1], 0)])
def test_cumprod(shape, axis):
    vs_ort("CumProd", shape, {"reverse": 1}, 26, rnd(shape), [np.array(axis, np.int64)])
    res = infer_node("CumProd", [ts("float", ["N", 3]), np.array(2, np.int64)], opset=26)
    assert res.shape("y0") is None and rule_ids(res) == {"axis.range"}


@pytest.mark.parametrize("opset", [1, 22])
def test_lp_normalization(opset):
    # onnxruntime runs opset >= 7 models only: the opset-1 rule is the same one
    vs_ort("LpNormalization", [3, 4], {"axis": 0, "p": 1}, max(opset, 7), rnd([3, 4]))
    res = infer_node("LpNormalization", [ts("float", ["N", "D"])], {"p": 3}, opset=opset)
    assert res.shape("y0") is None and rule_ids(res) == {"lpnormalization.p"}


@pytest.mark.parametrize("src,to", [("float", TensorProto.INT32), ("int64", TensorProto.DOUBLE),
                                    ("int8", TensorProto.UINT8)])
def test_bitcast_same_width(src, to):
    shape = [3, 0, 2] if src == "int8" else [3, 4]
    x = np.zeros(shape, {"float": np.float32, "int64": np.int64, "int8": np.int8}[src])
    res = vs_ort("BitCast", shape, {"to": to}, 26, x, sym=ts(src, names(shape)))
    assert int(res.dtype("y0")) == to


def test_bitcast_different_width_fails():
    # ONNX 1.23: the target type must have the same bit width; onnxruntime refuses it too
    res = infer_node("BitCast", [ts("float", ["N", 4])], {"to": TensorProto.INT64}, opset=26)
    assert res.shape("y0") is None and rule_ids(res) == {"bitcast.to"}
    with pytest.raises(Exception):
        run_onnxruntime(node_model("BitCast", [ts("float", [2, 4])], {"to": TensorProto.INT64}, opset=26),
                        {"x0": rnd([2, 4])})


# ------------------------------------------------------------ random generators
@pytest.mark.parametrize("op", ["RandomNormalLike", "RandomUniformLike", "Bernoulli"])
@pytest.mark.parametrize("shape", [[2, 3], [0], [1, 1, 1]])
def test_random_like(op, shape):
    opset = 15 if op == "Bernoulli" else 13
    res = vs_ort(op, shape, {"dtype": TensorProto.DOUBLE}, opset, rnd(shape))
    assert int(res.dtype("y0")) == TensorProto.DOUBLE


@pytest.mark.parametrize("op", ["RandomNormal", "RandomUniform"])
@pytest.mark.parametrize("shape", [[2, 3], [0, 5], [1]])
def test_random_shape(op, shape):
    res = infer_node(op, [], {"shape": shape}, opset=22)
    truth = run_onnxruntime(node_model(op, [], {"shape": shape}, opset=13), {})[0]
    assert exprs(res, "y0") == truth.shape and int(res.dtype("y0")) == TensorProto.FLOAT
    assert not refused(res) and not unchecked(res)


@pytest.mark.parametrize("shape,k", [([3, 4], 5), ([1, 1], 1), ([2, 1], 3)])
def test_multinomial(shape, k):
    res = vs_ort("Multinomial", shape, {"sample_size": k}, 7, rnd(shape))
    assert int(res.dtype("y0")) == TensorProto.INT32
    res = infer_node("Multinomial", [ts("float", ["B", "C"])], {"sample_size": 7, "dtype": TensorProto.INT64},
                     opset=22)
    assert exprs(res, "y0") == ("B", 7) and int(res.dtype("y0")) == TensorProto.INT64


# ------------------------------------------------------------ strings
def strings(shape, words=("a", "b,c", "d e", "", "a,b,c,d")):
    n = int(np.prod(shape))
    return np.array([words[i % len(words)] for i in range(n)], dtype=object).reshape(shape)


@pytest.mark.parametrize("a,b", [([2, 1], [3]), ([1], [0]), ([2, 3], [2, 3]), ([], [4])])
def test_string_concat(a, b):
    res = infer_node("StringConcat", [sts(names(a, "a")), sts(names(b, "b"))], opset=20)
    bind = {**dict(zip(names(a, "a"), a)), **dict(zip(names(b, "b"), b))}
    truth = run_onnxruntime(node_model("StringConcat", [sts(a), sts(b)], opset=20),
                            {"x0": strings(a), "x1": strings(b)})[0]
    assert res.evaluate(bind)["y0"] == truth.shape and int(res.dtype("y0")) == TensorProto.STRING


def test_regex_full_match():
    res = vs_ort("RegexFullMatch", [2, 3], {"pattern": "a.*"}, 20, strings([2, 3]), sym=sts(names([2, 3])))
    assert int(res.dtype("y0")) == TensorProto.BOOL


@pytest.mark.parametrize("shape", [[4], [1, 5], [1]])
@pytest.mark.parametrize("stop", [None, ["a"], ["a", "b,c", "d e", "", "a,b,c,d"]])
def test_string_normalizer(shape, stop):
    attrs = {"locale": "C", "case_change_action": "UPPER"}
    if stop:
        attrs["stopwords"] = stop
    res = infer_node("StringNormalizer", [sts(names(shape))], attrs, opset=10)
    assert not res.conflicts
    truth = run_onnxruntime(node_model("StringNormalizer", [sts(shape)], attrs, opset=10),
                            {"x0": strings(shape)})[0]
    out = res.shape("y0")
    got = res.evaluate(dict(zip(names(shape), shape)))["y0"]
    assert len(out) == truth.ndim
    for d, g, t in zip(out, got, truth.shape):
        if d.exactness is Exactness.EXACT:
            assert g == t
        else:   # the kept-word count: bounded by C (or 1 when all are dropped), never guessed
            assert stop and d.exactness is Exactness.UPPER_BOUND
            assert smtshape.expr.evaluate(d.bound, dict(zip(names(shape), shape))) >= t


@pytest.mark.parametrize("shape,attrs", [([2], {"delimiter": ","}), ([3, 2], {"delimiter": ",", "maxsplit": 1}),
                                         ([0, 3], {}), ([1], {}), ([4], {"maxsplit": 0}),
                                         ([2], {"maxsplit": -1})])   # negative: no limit (onnxruntime)
def test_string_split(shape, attrs):
    res = infer_node("StringSplit", [sts(names(shape))], attrs, opset=20, n_outputs=2)
    truth = run_onnxruntime(node_model("StringSplit", [sts(shape)], attrs, opset=20, n_outputs=2),
                            {"x0": strings(shape)})
    bind = dict(zip(names(shape), shape))
    y, z = res.shape("y0"), res.shape("y1")
    assert res.evaluate(bind)["y1"] == truth[1].shape and all(d.exactness is Exactness.EXACT for d in z)
    assert res.evaluate(bind)["y0"][:-1] == truth[0].shape[:-1]
    last = y[-1]
    if attrs.get("maxsplit", -1) >= 0:
        assert last.exactness is Exactness.UPPER_BOUND and last.bound == attrs["maxsplit"] + 1
        assert truth[0].shape[-1] <= last.bound
    else:
        assert last.exactness is Exactness.UNKNOWN
    assert int(res.dtype("y1")) == TensorProto.INT64


TFIDF = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 0, "ngram_counts": [0, 3],
         "ngram_indexes": [0, 1, 7, 2], "pool_int64s": [1, 2, 3, 1, 2]}


@pytest.mark.parametrize("shape", [[2, 4], [5], [1, 1], [3, 0]])
def test_tfidf_vectorizer(shape):
    res = vs_ort("TfIdfVectorizer", shape, TFIDF, 9, np.ones(shape, np.int64), sym=ts("int64", names(shape)))
    assert exprs(res, "y0")[-1] == 8


# ------------------------------------------------------------ losses
@pytest.mark.parametrize("x", [[3, 5], [2, 4, 3], [1, 2, 2, 3], [0, 3]])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weight", [False, True])
def test_nll_loss(x, reduction, weight):
    if x[0] == 0 and reduction == "mean":
        return    # mean over no elements: onnxruntime divides by zero
    t = [x[0]] + x[2:]
    ins = [ts("float", names(x, "x")), ts("int64", names(t, "t"))] + ([ts("float", ["W"])] if weight else [])
    res = infer_node("NegativeLogLikelihoodLoss", ins, {"reduction": reduction}, opset=13)
    assert not res.conflicts
    bind = {**dict(zip(names(x, "x"), x)), **dict(zip(names(t, "t"), t)), **({"W": x[1]} if weight else {})}
    conc = [ts("float", x), ts("int64", t)] + ([ts("float", [x[1]])] if weight else [])
    feeds = {"x0": rnd(x), "x1": np.zeros(t, np.int64)}
    if weight:
        feeds["x2"] = rnd([x[1]])
    truth = run_onnxruntime(node_model("NegativeLogLikelihoodLoss", conc, {"reduction": reduction}, opset=13),
                            feeds)[0]
    assert res.evaluate(bind)["y0"] == truth.shape


@pytest.mark.parametrize("x", [[3, 5], [2, 4, 3], [1, 2, 2, 3]])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("log_prob", [False, True])
def test_softmax_cross_entropy_loss(x, reduction, log_prob):
    t = [x[0]] + x[2:]
    n = 2 if log_prob else 1
    ins = [ts("float", names(x, "x")), ts("int64", names(t, "t"))]
    res = infer_node("SoftmaxCrossEntropyLoss", ins, {"reduction": reduction}, opset=13, n_outputs=n)
    assert not res.conflicts
    bind = {**dict(zip(names(x, "x"), x)), **dict(zip(names(t, "t"), t))}
    truth = run_onnxruntime(node_model("SoftmaxCrossEntropyLoss", [ts("float", x), ts("int64", t)],
                                       {"reduction": reduction}, opset=13, n_outputs=n),
                            {"x0": rnd(x), "x1": np.zeros(t, np.int64)})
    got = res.evaluate(bind)
    assert [got[f"y{k}"] for k in range(n)] == [o.shape for o in truth]


def test_loss_constraints():
    res = infer_node("SoftmaxCrossEntropyLoss", [ts("float", ["N", "C", "D"]), ts("int64", ["M", "E"]),
                                                 ts("float", ["W"])], {"reduction": "none"}, opset=12)
    assert exprs(res, "y0") == ("N", "D")
    assert res.prove("M == N and E == D and W == C").name == "PROVEN"
    res = infer_node("NegativeLogLikelihoodLoss", [ts("float", [4, 3]), ts("int64", [5])], opset=22)
    assert res.conflicts and "node" in res.conflicts[0].nodes
    res = infer_node("NegativeLogLikelihoodLoss", [ts("float", [4, 3]), ts("int64", [4])], {"reduction": "max"})
    assert res.shape("y0") is None and rule_ids(res) == {"nllloss.reduction"}


# ------------------------------------------------------------ ai.onnx.preview.training
def training_model(op, shapes, n_outputs, attrs=None):
    ins = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
           helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    ins += [helper.make_tensor_value_info(f"i{k}", TensorProto.FLOAT, s) for k, s in enumerate(shapes)]
    outs = [f"o{k}" for k in range(n_outputs)]
    node = helper.make_node(op, [i.name for i in ins], outs, domain=TRAINING, **(attrs or {}))
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                             for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(TRAINING, 1)])


MOMENTUM = {"mode": "nesterov", "norm_coefficient": 0.01, "alpha": 0.9, "beta": 1.0}


@pytest.mark.parametrize("op,groups", [("Adagrad", 3), ("Momentum", 3), ("Adam", 4)])
def test_optimizers_vs_reference(op, groups):
    from onnx.reference import ReferenceEvaluator

    xshapes = [[3, 4], [5]]
    n = len(xshapes)
    sym = [names(s, f"x{j}_") for j, s in enumerate(xshapes)]
    m = training_model(op, sym * groups, n * (groups - 1), MOMENTUM if op == "Momentum" else None)
    res = smtshape.analyze(m)
    assert not res.conflicts
    bind = {nm: v for s, ns in zip(xshapes, sym) for nm, v in zip(ns, s)}
    got = res.evaluate(bind)
    conc = training_model(op, xshapes * groups, n * (groups - 1), MOMENTUM if op == "Momentum" else None)
    feeds = {"R": np.array(0.1, np.float32), "T": np.array(1, np.int64)}
    feeds.update({f"i{k}": rnd(s) for k, s in enumerate(xshapes * groups)})
    truth = ReferenceEvaluator(conc).run(None, feeds)
    assert [got[f"o{k}"] for k in range(n * (groups - 1))] == [np.asarray(t).shape for t in truth]


def test_optimizer_constraints():
    m = training_model("Adam", [["A", "B"], ["C", "D"], ["A", "B"], [4, 5]], 3)
    res = smtshape.analyze(m)
    assert exprs(res, "o0") == (4, 5) and exprs(res, "o1") == (4, 5) and exprs(res, "o2") == (4, 5)
    assert res.prove("A == 4 and D == 5").name == "PROVEN"
    res = smtshape.analyze(training_model("Adagrad", [[3], [3]], 2))       # 2 tensors: not a multiple of 3
    assert res.shape("o0") is None and rule_ids(res) == {"adagrad.arity"}


def test_gradient():
    ins = [helper.make_tensor_value_info("W", TensorProto.FLOAT, ["M", "K"]),
           helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", "M"])]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"]),
             helper.make_node("Gradient", ["W", "X"], ["dW"], domain=TRAINING, xs=["W"], zs=["X"], y="Y")]
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("dW", TensorProto.UNDEFINED, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(TRAINING, 1)])
    res = smtshape.analyze(m)
    assert exprs(res, "dW") == ("M", "K") and int(res.dtype("dW")) == TensorProto.FLOAT
    bad = helper.make_node("Gradient", ["W", "X"], ["dW", "dX"], domain=TRAINING, xs=["W"], zs=["X"], y="Y")
    g2 = helper.make_graph([nodes[0], bad], "g", ins, [helper.make_tensor_value_info("dW", TensorProto.UNDEFINED,
                                                                                        None)])
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(TRAINING, 1)])
    res = smtshape.analyze(m2)
    assert res.shape("dW") is None and rule_ids(res) == {"gradient.arity"}


# ------------------------------------------------------------ a property over the losses
@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=2, max_size=4), st.sampled_from(["none", "sum", "mean"]))
def test_property_sce_vs_onnxruntime(x, reduction):
    t = [x[0]] + x[2:]
    res = infer_node("SoftmaxCrossEntropyLoss", [ts("float", names(x)), ts("int64", t)],
                     {"reduction": reduction}, opset=13, n_outputs=2)
    got = res.evaluate(dict(zip(names(x), x)))
    truth = run_onnxruntime(node_model("SoftmaxCrossEntropyLoss", [ts("float", x), ts("int64", t)],
                                       {"reduction": reduction}, opset=13, n_outputs=2),
                            {"x0": rnd(x), "x1": np.zeros(t, np.int64)})
    assert [got["y0"], got["y1"]] == [o.shape for o in truth]



# ------------------------------------------------------------ violated preconditions
def _f(*shape):
    return ts("float", list(shape))


def _run_refused(op, inputs, attrs, opset, feeds):
    """onnxruntime refuses the node (load or run)."""
    with pytest.raises(Exception):
        run_onnxruntime(node_model(op, inputs, attrs, opset=opset), feeds)


TFIDF_OK = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0, "ngram_counts": [0],
            "ngram_indexes": [0, 1], "pool_int64s": [1, 2]}
X14 = {"x0": np.ones((1, 4), np.int64)}


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,feeds", [
    ("EyeLike", [_f(2, 3)], {"dtype": TensorProto.STRING}, 9, "eyelike.dtype", None),
    ("Multinomial", [_f(2, 3)], {"dtype": TensorProto.FLOAT}, 7, "multinomial.dtype", {"x0": rnd([2, 3])}),
    ("Multinomial", [_f(2, 3)], {"sample_size": -1}, 7, "multinomial.sample_size", {"x0": rnd([2, 3])}),
    ("Multinomial", [_f(2, 3, 4)], {}, 7, "multinomial.rank", {"x0": rnd([2, 3, 4])}),
    ("RandomNormal", [], {"shape": [2, -1]}, 13, "randomnormal.shape", {}),
    ("RandomUniform", [], {"shape": [2], "dtype": TensorProto.INT32}, 13, "randomuniform.dtype", {}),
    ("LpNormalization", [_f(2, 3)], {"p": 3}, 7, "lpnormalization.p", {"x0": rnd([2, 3])}),
    ("Det", [_f(3)], {}, 11, "det.rank", {"x0": rnd([3])}),
    ("StringNormalizer", [sts([2, 3])], {}, 10, "stringnormalizer.shape", None),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "mode": "XX"}, 9, "tfidfvectorizer.mode", X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {k: v for k, v in TFIDF_OK.items() if k != "pool_int64s"}, 9,
     "tfidfvectorizer.pool", X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "mode": "TFIDF", "weights": [1.0]}, 9,
     "tfidfvectorizer.weights", X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "min_gram_length": 0}, 9, "tfidfvectorizer.gram_length",
     X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "min_gram_length": 2}, 9, "tfidfvectorizer.gram_length",
     X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "max_skip_count": -1}, 9,
     "tfidfvectorizer.max_skip_count", X14),
    ("TfIdfVectorizer", [ts("int64", [1, 4])], {**TFIDF_OK, "ngram_indexes": [0, -1]}, 9,
     "tfidfvectorizer.ngram_indexes", X14),
    ("TfIdfVectorizer", [ts("int64", [1, 1, 4])], TFIDF_OK, 9, "tfidfvectorizer.rank",
     {"x0": np.ones((1, 1, 4), np.int64)}),
    ("NegativeLogLikelihoodLoss", [_f(4), ts("int64", [4])], {}, 13, "nllloss.rank",
     {"x0": rnd([4]), "x1": np.zeros(4, np.int64)}),
    ("SoftmaxCrossEntropyLoss", [_f(4, 3), ts("int64", [4, 1])], {}, 13, "softmaxcrossentropy.rank",
     {"x0": rnd([4, 3]), "x1": np.zeros((4, 1), np.int64)}),
    ("SoftmaxCrossEntropyLoss", [_f(4, 3), ts("int64", [4]), _f(3, 1)], {}, 13, "softmaxcrossentropy.rank",
     {"x0": rnd([4, 3]), "x1": np.zeros(4, np.int64), "x2": rnd([3, 1])}),
])
def test_violated_preconditions_are_conflicts(op, inputs, attrs, opset, rule, feeds):
    res = infer_node(op, inputs, attrs, opset=opset)
    assert refused(res) and rule_ids(res) == {rule} and not unchecked(res)
    if feeds is not None:
        _run_refused(op, inputs, attrs, opset, feeds)


def test_optimizer_r_and_t_must_be_scalars():
    m = training_model("Adagrad", [[3], [3], [3]], 2)
    m.graph.input[0].type.tensor_type.shape.dim.add().dim_value = 2
    res = smtshape.analyze(m)
    assert refused(res) and rule_ids(res) == {"adagrad.scalar"}


def test_bernoulli_string_dtype_is_outside_its_type_constraint():
    """Bernoulli's T2 has no string: a conflict (onnxruntime happens to run it)."""
    res = infer_node("Bernoulli", [_f(2, 3)], {"dtype": TensorProto.STRING}, opset=15)
    assert refused(res) and rule_ids(res) == {"bernoulli.dtype"}


def test_enumerated_attributes_outside_their_values_are_conflicts():
    res = infer_node("StringNormalizer", [sts([2])], {"case_change_action": "TITLE"}, opset=10)
    assert rule_ids(res) == {"stringnormalizer.case_change_action"}
    _run_refused("StringNormalizer", [sts([2])], {"case_change_action": "TITLE"}, 10,
                 {"x0": np.array(["a", "b"], dtype=object)})
    m = training_model("Momentum", [[3], [3], [3]], 2, {**MOMENTUM, "mode": "heavy"})
    assert rule_ids(smtshape.analyze(m)) == {"momentum.mode"}
