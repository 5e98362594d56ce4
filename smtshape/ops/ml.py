"""The ``ai.onnx.ml`` domain: ArrayFeatureExtractor, Binarizer, CastMap,
CategoryMapper, DictVectorizer, FeatureVectorizer, Imputer, LabelEncoder,
LinearClassifier, LinearRegressor, Normalizer, OneHotEncoder, SVMClassifier,
SVMRegressor, Scaler, TreeEnsemble, TreeEnsembleClassifier,
TreeEnsembleRegressor, ZipMap.

Most sizes come from attributes (class labels, targets, vocabularies).  A
1-D input is one example: the batch is 1 (what onnxruntime's kernels do).
Where the spec and onnxruntime disagree (SVMClassifier's score width) the
rule follows onnxruntime and says so.
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from ..context import SeqInfo
from ..printing import show
from ..registry import register
from .common import unify

ML = "ai.onnx.ml"


def _shape_str(s):
    return "(" + ", ".join(show(d) for d in s) + ")"


def _len(ctx, *names):
    """Length of the first present list attribute among ``names`` (0 if none)."""
    for n in names:
        v = ctx.attr(n)
        if v is not None:
            try:
                return len(v)
            except TypeError:
                return int(getattr(v, "size", 1))
    return 0


def _batch(ctx, x, ranks=(1, 2)):
    """N of a [N, C] / [C] input (1 for a single example); fails on other ranks."""
    if x is None:
        return ctx.unknown_dim("ml_batch")
    if len(x) not in ranks:
        ctx.fail(f"input must be {' or '.join('[C]' if r == 1 else '[N, C]' for r in ranks)}, "
                 f"has shape {_shape_str(x)}")
    return 1 if len(x) == 1 else x[0]


def _features(x):
    return None if x is None else x[-1]


def _same(ctx, dtype=None):
    ctx.set_output(0, ctx.shape(0), dtype if dtype is not None else ctx.dtype(0))


# ------------------------------------------------------------ shape-preserving
@register(ML, "Binarizer", 1)
def binarizer(ctx):
    ctx.check_inputs(1, 1)
    _same(ctx)


@register(ML, "Imputer", 1)
def imputer(ctx):
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _len(ctx, "imputed_value_floats", "imputed_value_int64s")
    if x is not None and n > 1 and len(x) >= 1:
        ctx.equal(x[-1], n, "imputer.features",
                  f"the feature dim {show(x[-1])} must equal the {n} imputed values (one per feature)")
    _same(ctx)


@register(ML, "Normalizer", 1)
def normalizer(ctx):
    ctx.check_inputs(1, 1)
    norm = ctx.attr("norm", "MAX")
    if isinstance(norm, bytes):
        norm = norm.decode()
    if norm not in ("MAX", "L1", "L2"):
        ctx.fail(f"norm '{norm}' is not one of MAX, L1, L2")
    _same(ctx, ir.DataType.FLOAT)


@register(ML, "Scaler", 1)
def scaler(ctx):
    ctx.check_inputs(1, 1)
    _same(ctx, ir.DataType.FLOAT)


@register(ML, "CategoryMapper", 1)
def category_mapper(ctx):
    """Same shape; strings become int64 and int64 become strings."""
    ctx.check_inputs(1, 1)
    dt = ctx.dtype(0)
    out = ir.DataType.INT64 if dt == ir.DataType.STRING else ir.DataType.STRING if dt is not None else None
    _same(ctx, out)


def _label_encoder_dtype(ctx):
    for name, dt in (("values_strings", ir.DataType.STRING), ("values_int64s", ir.DataType.INT64),
                     ("values_floats", ir.DataType.FLOAT)):
        if ctx.attr(name) is not None:
            return dt
    t = ctx.attributes.get("values_tensor")
    if t is not None:
        try:
            return t.value.dtype
        except Exception:
            return None
    return None


def label_encoder(ctx):
    ctx.check_inputs(1, 1)
    _same(ctx, _label_encoder_dtype(ctx))


for _v in (1, 2, 4):
    register(ML, "LabelEncoder", _v)(label_encoder)


# ------------------------------------------------------------ feature extraction
@register(ML, "ArrayFeatureExtractor", 1)
def array_feature_extractor(ctx):
    """X [..., C], indices Y -> [..., numel(Y)]; a 1-D X gives [1, numel(Y)]."""
    ctx.check_inputs(2, 2)
    x, y = ctx.shape(0), ctx.shape(1)
    k = E.prod(y) if y is not None else ctx.unknown_dim("afe_count")
    if x is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    if len(x) == 0:
        ctx.fail("X must have rank >= 1")
    lead = (1,) if len(x) == 1 else tuple(x[:-1])
    ctx.set_output(0, lead + (k,), ctx.dtype(0))


@register(ML, "OneHotEncoder", 1)
def one_hot_encoder(ctx):
    """X's shape + [number of categories] (float)."""
    ctx.check_inputs(1, 1)
    n = _len(ctx, "cats_int64s", "cats_strings")
    if n == 0:
        ctx.fail("one of cats_int64s / cats_strings is required")
    x = ctx.shape(0)
    ctx.set_output(0, None if x is None else tuple(x) + (n,), ir.DataType.FLOAT)


@register(ML, "FeatureVectorizer", 1)
def feature_vectorizer(ctx):
    """Inputs [N, C_i] (or [C_i]) -> [N, sum(inputdimensions)] (float)."""
    dims = [int(d) for d in (ctx.attr("inputdimensions") or [])]
    if len(dims) != ctx.num_inputs:
        ctx.fail(f"inputdimensions has {len(dims)} values for {ctx.num_inputs} inputs")
    if any(d < 0 for d in dims):
        ctx.fail(f"inputdimensions {dims} has a negative value")
    n = None
    for i in range(ctx.num_inputs):
        s = ctx.shape(i)
        if s is None:
            continue
        b = _batch(ctx, s)
        n = b if n is None else unify(ctx, n, b, "featurevectorizer.batch",
                                      f"input {i} has batch {show(b)}, an earlier input has {show(n)}")
    if n is None:
        n = ctx.unknown_dim("featurevectorizer_batch")
    ctx.set_output(0, (n, sum(dims)), ir.DataType.FLOAT)


@register(ML, "DictVectorizer", 1)
def dict_vectorizer(ctx):
    """A map -> [1, len(vocabulary)]."""
    ctx.check_inputs(1, 1)
    n = _len(ctx, "int64_vocabulary", "string_vocabulary")
    if n == 0:
        ctx.fail("one of int64_vocabulary / string_vocabulary is required")
    ctx.set_output(0, (1, n), None)


_CAST_TO = {"TO_FLOAT": ir.DataType.FLOAT, "TO_STRING": ir.DataType.STRING, "TO_INT64": ir.DataType.INT64}


@register(ML, "CastMap", 1)
def cast_map(ctx):
    """A map int64 -> T to [1, n]: n = the map's size (DENSE, known at run time) or max_map (SPARSE)."""
    ctx.check_inputs(1, 1)
    to = ctx.attr("cast_to", "TO_FLOAT")
    form = ctx.attr("map_form", "DENSE")
    to, form = (v.decode() if isinstance(v, bytes) else v for v in (to, form))
    if to not in _CAST_TO:
        ctx.fail(f"cast_to '{to}' is not one of {', '.join(_CAST_TO)}")
    if form == "SPARSE":
        n = int(ctx.attr("max_map", 1))
        if n < 0:
            ctx.fail(f"max_map is negative ({n})")
    elif form == "DENSE":
        n = ctx.data_symbol("castmap_size", message="the number of entries of CastMap's input map")
    else:
        ctx.fail(f"map_form '{form}' is not DENSE or SPARSE")
    ctx.set_output(0, (1, n), _CAST_TO[to])


@register(ML, "ZipMap", 1)
def zip_map(ctx):
    """A sequence of maps, one per example (N for [N, C], 1 for [C]): its length is known,
    its elements are maps (no tensor shape is claimed for them)."""
    ctx.check_inputs(1, 1)
    n = _len(ctx, "classlabels_int64s", "classlabels_strings")
    if n == 0:
        ctx.fail("one of classlabels_int64s / classlabels_strings is required")
    x = ctx.shape(0)
    if x is not None:
        if len(x) not in (1, 2):
            ctx.fail(f"input must be [C] or [N, C], has shape {_shape_str(x)}")
        ctx.equal(x[-1], n, "zipmap.classes", f"the class dim {show(x[-1])} must equal the {n} class labels")
    length = None if x is None else _batch(ctx, x)
    ctx.set_output(0, None, None, seq=SeqInfo(length=length))


# ------------------------------------------------------------ linear models
def _labels_dtype(ctx, strings="classlabels_strings"):
    return ir.DataType.STRING if ctx.attr(strings) is not None else ir.DataType.INT64


@register(ML, "LinearClassifier", 1)
def linear_classifier(ctx):
    """Y [N] labels; Z [N, E] scores, E = len(intercepts), or 2 when there is one intercept
    and two class labels (onnxruntime adds the complementary score)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    e = _len(ctx, "intercepts")
    coef = _len(ctx, "coefficients")
    labels = _len(ctx, "classlabels_ints", "classlabels_strings")
    if e == 0:
        ctx.fail("intercepts is required (one per class)")
    if x is not None and coef % e == 0:
        ctx.equal(x[-1], coef // e, "linearclassifier.features",
                  f"the feature dim {show(x[-1])} must equal len(coefficients) / len(intercepts) = {coef // e}")
    width = 2 if e == 1 and labels == 2 else e
    ctx.set_output(0, (n,), _labels_dtype(ctx))
    if ctx.has_output(1):
        ctx.set_output(1, (n, width), ir.DataType.FLOAT)


@register(ML, "LinearRegressor", 1)
def linear_regressor(ctx):
    """[N, targets] (float)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    t = int(ctx.attr("targets", 1))
    if t < 1:
        ctx.fail(f"targets must be positive, is {t}")
    coef = _len(ctx, "coefficients")
    if x is not None and coef and coef % t == 0:
        ctx.equal(x[-1], coef // t, "linearregressor.features",
                  f"the feature dim {show(x[-1])} must equal len(coefficients) / targets = {coef // t}")
    ctx.set_output(0, (n, t), ir.DataType.FLOAT)


# ------------------------------------------------------------ SVMs
@register(ML, "SVMClassifier", 1)
def svm_classifier(ctx):
    """Y [N]; Z [N, K] with K the class count, except in SVC mode (support vectors) without
    prob_a: K(K - 1)/2 one-vs-one scores for K > 2 classes, 2 for K <= 2.  The spec says
    'one score per class'; onnxruntime's kernel gives the one-vs-one width (followed here)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    k = _len(ctx, "classlabels_ints", "classlabels_strings")
    if k == 0:
        ctx.fail("one of classlabels_ints / classlabels_strings is required")
    vpc = [int(v) for v in (ctx.attr("vectors_per_class") or [])]
    svc = sum(vpc) > 0
    have_proba = _len(ctx, "prob_a") > 0
    width = k
    if svc and not have_proba:
        width = k * (k - 1) // 2 if k > 2 else 2
        if width != k:
            ctx.warn(f"SVMClassifier scores: onnxruntime gives {width} one-vs-one scores per example "
                     f"where the spec says one per class ({k}); following onnxruntime")
    if x is not None:
        if svc:
            sv = _len(ctx, "support_vectors")
            if sv % sum(vpc) == 0:
                ctx.equal(x[-1], sv // sum(vpc), "svmclassifier.features",
                          f"the feature dim {show(x[-1])} must equal the support vector length {sv // sum(vpc)}")
        else:
            coef = _len(ctx, "coefficients")
            if coef % k == 0:
                ctx.equal(x[-1], coef // k, "svmclassifier.features",
                          f"the feature dim {show(x[-1])} must equal len(coefficients) / classes = {coef // k}")
    ctx.set_output(0, (n,), _labels_dtype(ctx))
    if ctx.has_output(1):
        ctx.set_output(1, (n, width), ir.DataType.FLOAT)


@register(ML, "SVMRegressor", 1)
def svm_regressor(ctx):
    """[N, 1] (float)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    ns = int(ctx.attr("n_supports", 0))
    if x is not None and ns > 0:
        sv = _len(ctx, "support_vectors")
        if sv % ns == 0:
            ctx.equal(x[-1], sv // ns, "svmregressor.features",
                      f"the feature dim {show(x[-1])} must equal the support vector length {sv // ns}")
    ctx.set_output(0, (n, 1), ir.DataType.FLOAT)


# ------------------------------------------------------------ trees
def _tree_regressor(ctx):
    """[N, n_targets]."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    t = int(ctx.attr("n_targets", 1))
    if t < 1:
        ctx.fail(f"n_targets must be positive, is {t}")
    ctx.set_output(0, (n, t), ir.DataType.FLOAT)


for _v in (1, 3, 5):
    register(ML, "TreeEnsembleRegressor", _v)(_tree_regressor)


@register(ML, "TreeEnsemble", 5)
def tree_ensemble(ctx):
    """[N, n_targets] with X's dtype."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    t = ctx.require_attr("n_targets")
    t = int(t)
    if t < 1:
        ctx.fail(f"n_targets must be positive, is {t}")
    ctx.set_output(0, (n, t), ctx.dtype(0))


def tree_classifier(ctx):
    """Y [N] labels; Z [N, number of class labels]."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    k = _len(ctx, "classlabels_int64s", "classlabels_strings")
    if k == 0:
        ctx.fail("one of classlabels_int64s / classlabels_strings is required")
    ctx.set_output(0, (n,), _labels_dtype(ctx))
    if ctx.has_output(1):
        ctx.set_output(1, (n, k), ir.DataType.FLOAT)


for _v in (1, 3, 5):
    register(ML, "TreeEnsembleClassifier", _v)(tree_classifier)
