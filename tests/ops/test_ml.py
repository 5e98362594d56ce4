"""ai.onnx.ml rules, against onnxruntime and ONNX's backend node tests."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import smtshape
import smtshape.ops.ml  # noqa: F401
from smtshape.dim import Exactness
from smtshape.testing import exprs, failed, refused, unchecked

from .onnx_node_cases import check_all

ML = "ai.onnx.ml"
ML_OPS = ("ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer",
          "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder",
          "SVMClassifier", "SVMRegressor", "Scaler", "TreeEnsemble", "TreeEnsembleClassifier",
          "TreeEnsembleRegressor", "ZipMap")
F, I64, S = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING


def model(op, ins, attrs, n_outputs=1, ml_opset=3):
    """ins: (name, elem type or a TypeProto, shape)."""
    vis = []
    for name, t, shape in ins:
        if isinstance(t, int):
            vis.append(helper.make_tensor_value_info(name, t, shape))
        else:
            vis.append(helper.make_value_info(name, t))
    outs = [f"y{k}" for k in range(n_outputs)]
    node = helper.make_node(op, [n for n, _, _ in ins], outs, domain=ML, **attrs)
    g = helper.make_graph([node], "g", vis, [helper.make_value_info(o, helper.TypeProto()) for o in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(ML, ml_opset)],
                             ir_version=8)


def ort_run(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def names(shape, prefix="d"):
    return [f"{prefix}{i}" for i in range(len(shape))]




def feed(t, shape):
    if t == F:
        return np.asarray(np.random.rand(*shape), dtype=np.float32)
    if t == I64:
        return np.ones(shape, np.int64)
    return np.full(shape, "a", dtype=object)


def vs_ort(op, ins, attrs, n_outputs=1, ml_opset=3, consts=()):
    """Tensor inputs ``ins`` = [(elem type, concrete shape)], symbolic in the analysis; compare all outputs.
    ``consts``: (name, array) initializers appended as further inputs."""
    sym = [(f"x{k}", t, names(s, f"x{k}_")) for k, (t, s) in enumerate(ins)]
    conc = [(f"x{k}", t, list(s)) for k, (t, s) in enumerate(ins)]
    extra = [(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in consts]
    m_sym = model(op, sym + extra, attrs, n_outputs, ml_opset)
    for n, a in consts:
        m_sym.graph.initializer.append(helper.make_tensor(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape,
                                                          a.reshape(-1).tolist()))
    res = smtshape.analyze(m_sym)
    assert not res.conflicts, res.conflicts
    bind = {n: v for (_, _, ns), (_, s) in zip(sym, ins) for n, v in zip(ns, s)}
    got = res.evaluate(bind)
    truth = ort_run(model(op, conc + extra, attrs, n_outputs, ml_opset),
                    {**{f"x{k}": feed(t, s) for k, (t, s) in enumerate(ins)}, **dict(consts)})
    for k, t in enumerate(truth):
        assert got[f"y{k}"] == np.asarray(t).shape, (k, got, [np.asarray(t).shape for t in truth])
    return res


def test_backend_node_tests():
    results = check_all(*ML_OPS, min_cases=8)
    for name, (known, exact, total) in results.items():
        assert known == 1 and exact == total, name


# ------------------------------------------------------------ shape-preserving
@pytest.mark.parametrize("shape", [[3, 4], [0, 2], [1]])
def test_elementwise_ml_ops(shape):
    vs_ort("Binarizer", [(F, shape)], {"threshold": 0.5})
    vs_ort("Scaler", [(F, shape)], {"scale": [2.0], "offset": [1.0]})
    vs_ort("Imputer", [(F, shape)], {"imputed_value_floats": [0.0], "replaced_value_float": 1.0})
    vs_ort("LabelEncoder", [(I64, shape)], {"keys_int64s": [1, 2], "values_strings": ["a", "b"]}, ml_opset=2)
    vs_ort("CategoryMapper", [(S, shape)], {"cats_strings": ["a", "b"], "cats_int64s": [1, 2]})
    if len(shape) == 2 and shape[0]:
        vs_ort("Normalizer", [(F, shape)], {"norm": "L2"})


def test_label_encoder_dtypes():
    for attrs, want, v in (({"keys_strings": ["a"], "values_int64s": [1]}, I64, 2),
                           ({"keys_int64s": [1], "values_floats": [0.5]}, F, 2),
                           ({"keys_int64s": [1], "values_strings": ["x"]}, S, 4)):
        res = smtshape.analyze(model("LabelEncoder", [("x0", I64 if "keys_int64s" in attrs else S, ["N", 3])],
                                     attrs, ml_opset=v))
        assert exprs(res, "y0") == ("N", 3) and int(res.dtype("y0")) == want
    res = smtshape.analyze(model("CategoryMapper", [("x0", I64, ["N"])], {"cats_strings": ["a"], "cats_int64s": [1]}))
    assert int(res.dtype("y0")) == S


def test_imputer_feature_constraint():
    res = smtshape.analyze(model("Imputer", [("x0", F, ["N", "C"])], {"imputed_value_floats": [0.0, 1.0, 2.0],
                                                                      "replaced_value_float": 1.0}))
    assert res.prove("C == 3").name == "PROVEN"


# ------------------------------------------------------------ feature extraction
@pytest.mark.parametrize("x,idx", [([3, 4], [2]), ([4], [3]), ([2, 3, 4], [1, 2]), ([0, 4], [1]), ([3, 4], [2, 3])])
def test_array_feature_extractor(x, idx):
    vs_ort("ArrayFeatureExtractor", [(F, x), (I64, idx)], {})


@pytest.mark.parametrize("x", [[3, 2], [4], [0, 1]])
def test_one_hot_encoder(x):
    res = vs_ort("OneHotEncoder", [(I64, x)], {"cats_int64s": [1, 2, 5]})
    assert exprs(res, "y0")[-1] == 3 and int(res.dtype("y0")) == F


@pytest.mark.parametrize("shapes,dims", [([[3, 2], [3, 5]], [2, 5]), ([[2], [5]], [2, 5]), ([[3, 2], [3, 5]], [3, 4]),
                                         ([[1, 1]], [1])])
def test_feature_vectorizer(shapes, dims):
    vs_ort("FeatureVectorizer", [(F, s) for s in shapes], {"inputdimensions": dims})


def test_feature_vectorizer_batch_constraint():
    res = smtshape.analyze(model("FeatureVectorizer", [("a", F, ["N", 2]), ("b", F, ["M", 3])],
                                 {"inputdimensions": [2, 3]}))
    assert exprs(res, "y0") == ("N", 5) and res.prove("M == N").name == "PROVEN"


def map_models(op, attrs):
    """(analyzed, run) models of ``op`` on a map(int64, float) graph input.  onnx_ir cannot read
    a declared map type, so the analyzed model declares no type for the input."""
    mtype = helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, None))
    return (model(op, [("x0", helper.TypeProto(), None)], attrs), model(op, [("x0", mtype, None)], attrs))


def run_map_model(m):
    return ort_run(m, {"x0": {1: 0.5, 3: 2.0}})[0]


@pytest.mark.parametrize("vocab", [[1, 5, 7], [3]])
def test_dict_vectorizer(vocab):
    m, run = map_models("DictVectorizer", {"int64_vocabulary": vocab})
    res = smtshape.analyze(m)
    assert exprs(res, "y0") == run_map_model(run).shape == (1, len(vocab))
    res = smtshape.analyze(map_models("DictVectorizer", {})[0])
    assert res.shape("y0") is None and refused(res) and "dictvectorizer.vocabulary" in conflict_rules(res)


@pytest.mark.parametrize("form,cast_to", [("DENSE", "TO_FLOAT"), ("SPARSE", "TO_FLOAT"), ("SPARSE", "TO_INT64")])
def test_cast_map(form, cast_to):
    m, run = map_models("CastMap", {"map_form": form, "cast_to": cast_to, "max_map": 5})
    res = smtshape.analyze(m)
    truth = run_map_model(run)
    s = res.shape("y0")
    assert s[0].expr == truth.shape[0] == 1
    if form == "SPARSE":
        assert s[1].expr == truth.shape[1] == 5
    else:   # the map's size: a run-time quantity
        assert s[1].exactness is Exactness.UNKNOWN and truth.shape[1] == 2
    assert str(res.dtype("y0")).endswith(cast_to[3:])


@pytest.mark.parametrize("shape", [[3, 2], [2], [0, 2], [1, 2]])
def test_zip_map_is_a_sequence_of_n_maps(shape):
    m = model("ZipMap", [("x0", F, names(shape))], {"classlabels_int64s": [0, 1]})
    res = smtshape.analyze(m)
    assert res.shape("y0") is None and not res.conflicts and not failed(res)    # maps: no tensor shape
    seq = res._lookup("y0")[1].seq
    truth = ort_run(model("ZipMap", [("x0", F, shape)], {"classlabels_int64s": [0, 1]}),
                    {"x0": np.random.rand(*shape).astype(np.float32)})[0]
    assert isinstance(truth, list)
    length = smtshape.expr.evaluate(seq.length, dict(zip(names(shape), shape)))
    assert length == len(truth)
    res = smtshape.analyze(model("ZipMap", [("x0", F, ["N", 3])], {"classlabels_int64s": [0, 1]}))
    assert res.conflicts


# ------------------------------------------------------------ linear models
@pytest.mark.parametrize("x,classes,labels", [([3, 4], 3, [1, 2, 3]), ([3, 4], 1, [1, 2]), ([4], 3, [1, 2, 3]),
                                              ([0, 4], 2, [5, 6]), ([1, 4], 1, [0, 1])])
def test_linear_classifier(x, classes, labels):
    attrs = {"coefficients": [0.5] * (4 * classes), "intercepts": [0.0] * classes, "classlabels_ints": labels}
    res = vs_ort("LinearClassifier", [(F, x)], attrs, 2)
    assert int(res.dtype("y0")) == I64


def test_linear_classifier_features():
    attrs = {"coefficients": [0.5] * 12, "intercepts": [0.0] * 3, "classlabels_strings": ["a", "b", "c"]}
    res = smtshape.analyze(model("LinearClassifier", [("x0", F, ["N", "C"])], attrs, 2))
    # onnxruntime reads the first classes * C coefficients: C <= 12 / 3, not C == 4 (it runs C = 3)
    assert exprs(res, "y1") == ("N", 3) and res.prove("C <= 4").name == "PROVEN"
    assert res.prove("C == 4").name != "PROVEN"
    vs_ort("LinearClassifier", [(F, [2, 3])], attrs, 2)
    assert int(res.dtype("y0")) == S


@pytest.mark.parametrize("x,targets", [([3, 4], 2), ([4], 1), ([0, 4], 3)])
def test_linear_regressor(x, targets):
    vs_ort("LinearRegressor", [(F, x)], {"coefficients": [1.0] * (4 * targets), "targets": targets})


# ------------------------------------------------------------ SVMs
RBF = {"kernel_type": "RBF", "kernel_params": [0.1, 0.0, 3.0]}


@pytest.mark.parametrize("k,proba", [(2, False), (3, False), (4, False), (4, True), (2, True)])
@pytest.mark.parametrize("x", [[3, 4], [1, 4]])
def test_svm_classifier_svc(k, proba, x):
    pairs = k * (k - 1) // 2
    attrs = {**RBF, "coefficients": [1.0] * ((k - 1) * k), "support_vectors": [1.0] * (4 * k),
             "vectors_per_class": [1] * k, "rho": [0.0] * pairs, "classlabels_ints": list(range(k))}
    if proba:
        attrs.update(prob_a=[1.0] * pairs, prob_b=[0.0] * pairs)
    vs_ort("SVMClassifier", [(F, x)], attrs, 2)


@pytest.mark.parametrize("x", [[3, 4], [4]])
def test_svm_classifier_linear(x):
    attrs = {"kernel_type": "LINEAR", "kernel_params": [0.1, 0.0, 3.0], "coefficients": [1.0] * 12,
             "rho": [0.0], "classlabels_strings": ["a", "b", "c"]}
    res = vs_ort("SVMClassifier", [(F, x)], attrs, 2)
    assert exprs(res, "y1")[-1] == 3 and int(res.dtype("y0")) == S


@pytest.mark.parametrize("x", [[3, 4], [1, 4], [4]])
def test_svm_regressor(x):
    attrs = {**RBF, "coefficients": [1.0, 1.0], "support_vectors": [1.0] * 8, "n_supports": 2, "rho": [0.0]}
    vs_ort("SVMRegressor", [(F, x)], attrs)
    res = smtshape.analyze(model("SVMRegressor", [("x0", F, ["N", "C"])], attrs))
    assert exprs(res, "y0") == ("N", 1) and res.prove("C == 4").name == "PROVEN"


# ------------------------------------------------------------ trees
TREE = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
            nodes_values=[0.5, 0.0, 0.0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
            nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0])


@pytest.mark.parametrize("labels,ids", [([7], [0, 0]), ([0, 1], [0, 0]), (["a", "b"], [0, 1]), ([0, 1, 2], [0, 2])])
@pytest.mark.parametrize("x", [[3, 4], [1, 2], [0, 3]])
@pytest.mark.parametrize("ml_opset", [1, 3])
def test_tree_ensemble_classifier(labels, ids, x, ml_opset):
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"
    attrs = {**TREE, "class_treeids": [0, 0], "class_nodeids": [1, 2], "class_ids": ids,
             "class_weights": [1.0, 0.5], key: labels}
    res = vs_ort("TreeEnsembleClassifier", [(F, x)], attrs, 2, ml_opset)
    assert exprs(res, "y1")[-1] == len(labels)


@pytest.mark.parametrize("targets", [1, 2])
@pytest.mark.parametrize("x", [[3, 4], [1, 1], [0, 2]])
def test_tree_ensemble_regressor(targets, x):
    attrs = {**TREE, "target_treeids": [0, 0], "target_nodeids": [1, 2], "target_ids": [0, targets - 1],
             "target_weights": [1.0, 0.5], "n_targets": targets}
    vs_ort("TreeEnsembleRegressor", [(F, x)], attrs, 1, 3)


@pytest.mark.parametrize("x", [[3, 4], [1, 2]])
def test_tree_ensemble_v5(x):
    attrs = dict(nodes_featureids=[0], nodes_splits=helper.make_tensor("s", F, [1], [0.5]),
                 nodes_trueleafs=[1], nodes_truenodeids=[0], nodes_falseleafs=[1], nodes_falsenodeids=[1],
                 nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [1], [0]),
                 leaf_targetids=[0, 1], leaf_weights=helper.make_tensor("w", F, [2], [1.0, 2.0]),
                 tree_roots=[0], n_targets=2, aggregate_function=1)
    res = vs_ort("TreeEnsemble", [(F, x)], attrs, 1, 5)
    assert exprs(res, "y0")[-1] == 2
    res = smtshape.analyze(model("TreeEnsemble", [("x0", F, ["N", 4])], {**attrs, "n_targets": 0}, 1, 5))
    assert res.shape("y0") is None and refused(res) and "treeensemble.n_targets" in conflict_rules(res)


# ------------------------------------------------------------ preconditions of the spec
def conflict_rules(res):
    return {c.provenance.rule for cf in res.conflicts for c in cf.constraints}


def ort_refuses(m, feeds):
    """onnxruntime refuses the model (at load, by its shape inference or kernel
    constructor, or at run time)."""
    try:
        ort_run(m, feeds)
    except Exception:
        return True
    return False


def onnx_refuses(m):
    import onnx
    try:
        onnx.shape_inference.infer_shapes(m, strict_mode=True)
    except Exception:
        return True
    return False


T5 = dict(nodes_featureids=[0], nodes_splits=helper.make_tensor("s", F, [1], [0.5]),
          nodes_trueleafs=[1], nodes_truenodeids=[0], nodes_falseleafs=[1], nodes_falsenodeids=[1],
          nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [1], [0]),
          leaf_targetids=[0, 1], leaf_weights=helper.make_tensor("w", F, [2], [1.0, 2.0]),
          tree_roots=[0], n_targets=2, aggregate_function=1)
T5_2 = dict(T5, nodes_featureids=[0, 0], nodes_splits=helper.make_tensor("s", F, [2], [0.5, 0.5]),
            nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [2], [0, 0]))
REG = {**TREE, "target_treeids": [0, 0], "target_nodeids": [1, 2], "target_ids": [0, 1],
       "target_weights": [1.0, 0.5], "n_targets": 2}
CLS = {**TREE, "class_treeids": [0, 0], "class_nodeids": [1, 2], "class_ids": [0, 1], "class_weights": [1.0, 0.5],
       "classlabels_int64s": [0, 1]}
LIN = {"coefficients": [0.5] * 8, "intercepts": [0.0, 0.0], "classlabels_ints": [1, 2]}
SVR = {**RBF, "coefficients": [1.0, 1.0], "support_vectors": [1.0] * 8, "n_supports": 2, "rho": [0.0]}
SVC = {**RBF, "coefficients": [1.0] * 6, "support_vectors": [1.0] * 12, "vectors_per_class": [1, 1, 1],
       "rho": [0.0] * 3, "classlabels_ints": [0, 1, 2]}
# (op, input (elem type, shape), attrs, outputs, ml opset, rule id, onnxruntime refuses it too)
BAD = [
    ("CategoryMapper", (I64, [3]), {"cats_int64s": [1, 2, 3], "cats_strings": ["a", "b"]}, 1, 1,
     "categorymapper.cats", True),
    ("CategoryMapper", (I64, [3]), {"cats_int64s": [1, 2, 3]}, 1, 1, "categorymapper.cats", True),
    ("CategoryMapper", (I64, [3]), {"cats_strings": ["a"]}, 1, 1, "categorymapper.cats", True),
    ("OneHotEncoder", (I64, [3]), {"cats_int64s": [1, 2], "cats_strings": ["a", "b"]}, 1, 1,
     "onehotencoder.cats", True),
    ("OneHotEncoder", (I64, [3]), {}, 1, 1, "onehotencoder.cats", True),
    ("LabelEncoder", (I64, [3]), {"keys_strings": ["a"], "values_int64s": [1]}, 1, 2, "labelencoder.keys", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1], "keys_floats": [1.0], "values_int64s": [1]}, 1, 2,
     "labelencoder.keys", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1]}, 1, 2, "labelencoder.values", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1, 2], "values_int64s": [1]}, 1, 2, "labelencoder.values", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1, 2], "values_int64s": [1]}, 1, 4, "labelencoder.values", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1], "values_int64s": [1],
                                  "default_tensor": helper.make_tensor("d", TensorProto.INT32, [1], [0])}, 1, 4,
     "labelencoder.default", True),
    ("LabelEncoder", (I64, [3]), {"keys_int64s": [1], "values_int64s": [1],
                                  "default_tensor": helper.make_tensor("d", I64, [2], [0, 0])}, 1, 4,
     "labelencoder.default", True),
    ("Normalizer", (F, [3, 4]), {"norm": "L3"}, 1, 1, "normalizer.norm", True),
    ("Normalizer", (F, [2, 3, 4]), {"norm": "L1"}, 1, 1, "normalizer.rank", True),
    ("Scaler", (F, [3, 4]), {"scale": [1.0, 2.0], "offset": [1.0]}, 1, 1, "scaler.lengths", True),
    ("Scaler", (F, [3, 4]), {"scale": [1.0] * 3, "offset": [1.0] * 3}, 1, 1, "scaler.features", True),
    ("Imputer", (F, [3, 4]), {"imputed_value_floats": [1.0], "imputed_value_int64s": [1]}, 1, 1,
     "imputer.values", True),
    ("Imputer", (F, [3, 4]), {}, 1, 1, "imputer.values", True),
    ("Imputer", (F, [3, 4]), {"imputed_value_int64s": [1]}, 1, 1, "imputer.values", True),
    ("Imputer", (F, []), {"imputed_value_floats": [1.0]}, 1, 1, "imputer.rank", True),
    ("ZipMap", (F, [3, 2]), {"classlabels_int64s": [0, 1], "classlabels_strings": ["a", "b"]}, 1, 1,
     "zipmap.classlabels", True),
    ("ZipMap", (F, [2, 3, 2]), {"classlabels_int64s": [0, 1]}, 1, 1, "zipmap.rank", True),
    ("ZipMap", (F, [3, 3]), {"classlabels_int64s": [0, 1]}, 1, 1, "zipmap.classes", True),
    ("LinearClassifier", (F, [3, 4]), {**LIN, "coefficients": [0.5] * 9}, 2, 1, "linearclassifier.coefficients", True),
    ("LinearClassifier", (F, [3, 4]), {**LIN, "coefficients": [0.5] * 6}, 2, 1, "linearclassifier.features", True),
    ("LinearClassifier", (F, [2, 3, 4]), LIN, 2, 1, "linearclassifier.rank", True),
    ("LinearClassifier", (F, [3, 4]), {**LIN, "post_transform": "FOO"}, 2, 1, "linearclassifier.post_transform",
     True),
    ("LinearClassifier", (F, [3, 4]), {**LIN, "classlabels_strings": ["a", "b"]}, 2, 1,
     "linearclassifier.classlabels", True),
    ("LinearClassifier", (F, [3, 4]), {"coefficients": [0.5] * 8, "intercepts": [0.0, 0.0]}, 2, 1,
     "linearclassifier.classlabels", True),
    ("LinearRegressor", (F, [3, 4]), {"coefficients": [1.0] * 7, "targets": 2}, 1, 1, "linearregressor.features",
     True),
    ("LinearRegressor", (F, [2, 3, 4]), {"coefficients": [1.0] * 8, "targets": 2}, 1, 1, "linearregressor.rank",
     True),
    # the spec: "Intercepts are optional but if provided must match the number of targets"
    # (onnxruntime runs it, using only the first one)
    ("LinearRegressor", (F, [3, 4]), {"coefficients": [1.0] * 8, "targets": 2, "intercepts": [0.0] * 3}, 1, 1,
     "linearregressor.intercepts", False),
    ("SVMRegressor", (F, [3, 5]), SVR, 1, 1, "svmregressor.features", True),
    ("SVMRegressor", (F, [3, 4]), {**SVR, "support_vectors": [1.0] * 7}, 1, 1, "svmregressor.support_vectors", True),
    ("SVMRegressor", (F, [3, 4]), {**SVR, "kernel_params": [0.1, 0.0]}, 1, 1, "svmregressor.kernel_params", True),
    ("SVMRegressor", (F, [3, 4]), {**SVR, "kernel_type": "FOO"}, 1, 1, "svmregressor.kernel_type", True),
    ("SVMRegressor", (F, [2, 3, 4]), SVR, 1, 1, "svmregressor.rank", True),
    ("SVMClassifier", (F, [3, 4]), {**SVC, "vectors_per_class": [1, 2]}, 2, 1, "svmclassifier.vectors_per_class",
     True),
    ("SVMClassifier", (F, [3, 4]), {**SVC, "prob_a": [1.0] * 3, "prob_b": [1.0] * 2}, 2, 1, "svmclassifier.prob",
     True),
    ("SVMClassifier", (F, [3, 5]), SVC, 2, 1, "svmclassifier.features", True),
    ("SVMClassifier", (F, [2, 3, 4]), SVC, 2, 1, "svmclassifier.rank", True),
    ("TreeEnsembleRegressor", (F, [4]), REG, 1, 3, "treeensembleregressor.rank", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "target_ids": [0, 2]}, 1, 3,
     "treeensembleregressor.target_ids", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "nodes_featureids": [0, 0]}, 1, 3,
     "treeensembleregressor.nodes", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "nodes_modes": ["BRANCH_LEQ", "LEAF", "FOO"]}, 1, 3,
     "treeensembleregressor.nodes_modes", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "nodes_featureids": [5, 0, 0]}, 1, 3,
     "treeensembleregressor.featureids", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "base_values": [0.0] * 3}, 1, 3,
     "treeensembleregressor.base_values", True),
    ("TreeEnsembleRegressor", (F, [3, 4]), {**REG, "target_weights_as_tensor": helper.make_tensor("t", F, [2], [1, 1])},
     1, 3, "treeensembleregressor.target_weights", True),
    ("TreeEnsembleClassifier", (F, [3, 4]), {**CLS, "class_ids": [0, 2]}, 2, 3,
     "treeensembleclassifier.class_ids", True),
    ("TreeEnsembleClassifier", (F, [4]), CLS, 2, 3, "treeensembleclassifier.rank", True),
    ("TreeEnsembleClassifier", (F, [3, 4]), {k: v for k, v in CLS.items() if k != "classlabels_int64s"}, 2, 3,
     "treeensembleclassifier.classlabels", True),
    ("TreeEnsemble", (F, [4]), T5, 1, 5, "treeensemble.rank", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "nodes_truenodeids": [0, 0]}, 1, 5, "treeensemble.nodes", True),
    ("TreeEnsemble", (TensorProto.DOUBLE, [3, 4]), T5, 1, 5, "treeensemble.nodes_splits", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "leaf_weights": helper.make_tensor("w", TensorProto.DOUBLE, [2], [1, 2])},
     1, 5, "treeensemble.leaf_weights", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "leaf_targetids": [0, 1, 1]}, 1, 5, "treeensemble.leaves", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "n_targets": 1}, 1, 5, "treeensemble.leaf_targetids", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "tree_roots": [3]}, 1, 5, "treeensemble.tree_roots", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "nodes_truenodeids": [5]}, 1, 5, "treeensemble.nodes_truenodeids", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "nodes_modes": helper.make_tensor("m", TensorProto.UINT8, [1], [9])}, 1, 5,
     "treeensemble.nodes_modes", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "nodes_modes": helper.make_tensor("m", I64, [1], [0])}, 1, 5,
     "treeensemble.nodes_modes", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "aggregate_function": 7}, 1, 5, "treeensemble.aggregate_function", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "post_transform": 7}, 1, 5, "treeensemble.post_transform", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "nodes_featureids": [7]}, 1, 5, "treeensemble.featureids", True),
    ("TreeEnsemble", (F, [3, 4]), {**T5, "n_targets": 0}, 1, 5, "treeensemble.n_targets", True),
]


@pytest.mark.parametrize("op,x,attrs,n_out,ml_opset,rule,ort_too", BAD,
                         ids=[f"{b[0]}-{b[5]}-{i}" for i, b in enumerate(BAD)])
def test_ml_preconditions(op, x, attrs, n_out, ml_opset, rule, ort_too):
    t, shape = x
    m = model(op, [("x0", t, shape)], attrs, n_out, ml_opset)
    res = smtshape.analyze(m)
    assert refused(res) and rule in conflict_rules(res), (conflict_rules(res), [str(c) for c in res.conflicts])
    feeds = {"x0": feed(t, shape) if t != TensorProto.DOUBLE else np.ones(shape)}
    assert ort_refuses(m, feeds) == ort_too


def test_array_feature_extractor_preconditions():
    res = smtshape.analyze(model("ArrayFeatureExtractor", [("x0", F, []), ("x1", I64, [1])], {}))
    assert "arrayfeatureextractor.rank" in conflict_rules(res)
    assert ort_refuses(model("ArrayFeatureExtractor", [("x0", F, []), ("x1", I64, [1])], {}),
                       {"x0": feed(F, []), "x1": np.zeros([1], np.int64)})
    for idx in ([4], [-1]):
        m = model("ArrayFeatureExtractor", [("x0", F, ["N", 4]), ("x1", I64, [1])], {})
        m.graph.input.pop()
        m.graph.initializer.append(helper.make_tensor("x1", I64, [1], idx))
        res = smtshape.analyze(m)
        assert "arrayfeatureextractor.index" in conflict_rules(res)
        conc = model("ArrayFeatureExtractor", [("x0", F, [3, 4]), ("x1", I64, [1])], {})
        assert ort_refuses(conc, {"x0": feed(F, [3, 4]), "x1": np.array(idx, np.int64)})


@pytest.mark.parametrize("attrs,dims", [({"inputdimensions": [2]}, [[3, 2], [3, 5]]),
                                        ({"inputdimensions": [2, 5]}, [[3, 2], [4, 5]])])
def test_feature_vectorizer_preconditions(attrs, dims):
    res = smtshape.analyze(model("FeatureVectorizer", [(f"x{i}", F, d) for i, d in enumerate(dims)], attrs))
    assert conflict_rules(res) & {"featurevectorizer.inputdimensions", "featurevectorizer.batch"}
    assert ort_refuses(model("FeatureVectorizer", [(f"x{i}", F, d) for i, d in enumerate(dims)], attrs),
                       {f"x{i}": feed(F, d) for i, d in enumerate(dims)})


def test_onnx_checks_the_same():
    """ONNX's own inference refuses what these rules refuse (a sample)."""
    for op, x, attrs, n_out, v, rule, _ in BAD:
        if rule in ("categorymapper.cats", "onehotencoder.cats", "treeensemble.nodes", "treeensemble.leaves",
                    "treeensemble.nodes_splits", "zipmap.rank", "linearclassifier.rank"):
            assert onnx_refuses(model(op, [("x0", x[0], x[1])], attrs, n_out, v)), (op, rule)


@pytest.mark.parametrize("attrs", [{"norm": "L1"}, {"norm": "MAX"}])
def test_normalizer_1d(attrs):
    vs_ort("Normalizer", [(F, [4])], attrs)


def test_linear_classifier_without_intercepts_is_unchecked():
    res = smtshape.analyze(model("LinearClassifier", [("x0", F, ["N", 4])],
                                 {"coefficients": [0.5] * 8, "classlabels_ints": [1, 2]}, 2))
    assert unchecked(res) and not refused(res)


def test_tree_ensemble_without_n_targets():
    """n_targets is optional in the spec: the width is a symbol above every target id."""
    attrs = {k: v for k, v in T5.items() if k != "n_targets"}
    res = smtshape.analyze(model("TreeEnsemble", [("x0", F, ["N", 4])], attrs, 1, 5))
    assert not failed(res)
    w = res.shape("y0")[1].expr
    assert res.prove(f"{w} >= 2").name == "PROVEN"
    attrs = {k: v for k, v in REG.items() if k != "n_targets"}
    res = smtshape.analyze(model("TreeEnsembleRegressor", [("x0", F, ["N", 4])], attrs, 1, 3))
    assert not failed(res) and res.prove(f"{res.shape('y0')[1].expr} >= 2").name == "PROVEN"


def test_tree_feature_ids_bound_symbolic():
    res = smtshape.analyze(model("TreeEnsemble", [("x0", F, ["N", "C"])], {**T5, "nodes_featureids": [3]}, 1, 5))
    assert not failed(res) and res.prove("C >= 4").name == "PROVEN"
