"""The ``ai.onnx.ml`` domain: ArrayFeatureExtractor, Binarizer, CastMap,
CategoryMapper, DictVectorizer, FeatureVectorizer, Imputer, LabelEncoder,
LinearClassifier, LinearRegressor, Normalizer, OneHotEncoder, SVMClassifier,
SVMRegressor, Scaler, TreeEnsemble, TreeEnsembleClassifier,
TreeEnsembleRegressor, ZipMap.

Most sizes come from attributes (class labels, targets, vocabularies).  A
1-D input is one example: the batch is 1 (what onnxruntime's kernels do).
Where the spec and onnxruntime disagree (SVMClassifier's score width) the
rule follows onnxruntime and says so.

The engine checks what the schemas say (arity, attribute types, element types);
the rules check the relations between attributes and inputs that the spec states
(and ONNX's own inference, ``onnx/defs/traditionalml/defs.cc`` / ``old.cc``,
enforces): enum attributes, the ``one and only one of`` attribute pairs, parallel
attribute arrays of equal length, indices within their ranges, attribute tensors
of the input's element type.  Where the spec leaves a length open and
onnxruntime accepts more than the obvious reading (LinearClassifier /
LinearRegressor coefficients: at least classes * features), the rule states the
weaker relation onnxruntime checks.
"""
from __future__ import annotations

import math

from .. import irtypes as ir

from .. import expr as E
from ..constraints import gt, le, lt
from ..context import SeqInfo
from ..errors import Cannot
from ..printing import show
from ..registry import register
from .common import unify
from .indexing import index_bound

ML = "ai.onnx.ml"
_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")
_FLOATS = (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16)
_INTS = (ir.DataType.INT64, ir.DataType.INT32)


def _shape_str(s):
    return "(" + ", ".join(show(d) for d in s) + ")"


def _str(v):
    return v.decode() if isinstance(v, bytes) else v


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


def _given(ctx, *names):
    """The attributes among ``names`` that the node carries."""
    return [n for n in names if n in ctx.attributes]


def _one_of(ctx, names, rule, optional=False):
    """The one attribute of ``names`` the node gives (None when ``optional`` and none is):
    the spec's "one and only one of ..." as a conflict."""
    given = _given(ctx, *names)
    if len(given) > 1:
        ctx.invalid(rule, f"{ctx.op_type} gives {' and '.join(given)}: it takes one and only one of "
                          f"{', '.join(names)}", f"keep one of {', '.join(given)}")
    if not given and not optional:
        ctx.invalid(rule, f"{ctx.op_type} gives none of {', '.join(names)}: it takes one of them",
                    f"give the node one of {', '.join(names)}")
    return given[0] if given else None


def _enum(ctx, name, default, allowed, rule):
    """A string attribute restricted to ``allowed`` (its default when absent)."""
    v = _str(ctx.attr(name, default))
    if v not in allowed:
        ctx.invalid(rule, f"{name} '{v}' is not one of {', '.join(allowed)}",
                    f"set {name} to one of {', '.join(allowed)}")
    return v


def _int_enum(ctx, name, default, hi, rule, what):
    """An integer enum attribute in [0, hi]."""
    v = int(ctx.attr(name, default))
    if not 0 <= v <= hi:
        ctx.invalid(rule, f"{name} {v} is not one of 0..{hi} ({what})", f"set {name} to one of 0..{hi}")
    return v


def _kernel_params(ctx):
    kp = ctx.attr("kernel_params")
    if kp is not None and len(kp) != 3:
        ctx.invalid(f"{ctx.op_type.lower()}.kernel_params",
                    f"kernel_params has {len(kp)} values: it lists gamma, coef0 and degree (3 values)",
                    "give kernel_params three values (gamma, coef0, degree)")


def _batch(ctx, x, ranks=(1, 2)):
    """N of a [N, C] / [C] input (1 for a single example); other ranks break the spec."""
    if x is None:
        return ctx.unknown_dim("ml_batch")
    if len(x) not in ranks:
        want = " or ".join("[C]" if r == 1 else "[N, C]" for r in ranks)
        ctx.invalid(f"{ctx.op_type.lower()}.rank", f"{ctx.op_type}'s input has shape {_shape_str(x)} (rank "
                    f"{len(x)}): it takes {want}", f"give {ctx.op_type} an input of shape {want}")
    return 1 if len(x) == 1 else x[0]


def _same(ctx, dtype=None):
    ctx.set_output(0, ctx.shape(0), dtype if dtype is not None else ctx.dtype(0))


def _tensor_attr(ctx, name):
    """(element type, shape) of a TENSOR attribute, None when absent."""
    a = ctx.attributes.get(name)
    if a is None:
        return None
    t = a.value
    shape = getattr(t, "shape", None)
    dims = None
    if shape is not None:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            dims = None
    return getattr(t, "dtype", None), dims


def _attr_len(ctx, name):
    """Number of elements of a list or 1-D tensor attribute (None when absent)."""
    a = ctx.attributes.get(name)
    if a is None:
        return None
    if a.type == ir.AttributeType.TENSOR:
        _, dims = _tensor_attr(ctx, name)
        return None if dims is None else (dims[0] if len(dims) == 1 else math.prod(dims))
    v = a.value
    return len(v) if v is not None else 0


def _ints(ctx, name):
    v = ctx.attr(name)
    if v is None:
        return None
    try:
        return [int(x) for x in (v.reshape(-1).tolist() if hasattr(v, "reshape") else v)]
    except (TypeError, ValueError):
        return None


def _dtype_name(dt):
    try:
        return ir.DataType(dt).name.lower()
    except ValueError:
        return str(dt)


# ------------------------------------------------------------ shape-preserving
@register(ML, "Binarizer", 1)
def binarizer(ctx):
    _same(ctx)


@register(ML, "Imputer", 1)
def imputer(ctx):
    """Same shape.  One and only one of imputed_value_floats / imputed_value_int64s (floats
    for a float input, integers for an integer one) with 1 or F values (X is [*, F])."""
    which = _one_of(ctx, ("imputed_value_floats", "imputed_value_int64s"), "imputer.values")
    dt = ctx.dtype(0)
    want = "imputed_value_floats" if dt in _FLOATS else "imputed_value_int64s" if dt in _INTS else which
    if which != want:
        ctx.invalid("imputer.values", f"Imputer on a {_dtype_name(dt)} input gives {which}: it takes {want}",
                    f"give {want} instead of {which}")
    x = ctx.shape(0)
    n = _len(ctx, which)
    if x is not None:
        if len(x) == 0:
            ctx.invalid("imputer.rank", "Imputer's input is a scalar: it takes [C] or [N, C]",
                        "give Imputer an input of shape [C] or [N, C]")
        if n != 1:
            ctx.equal(x[-1], n, "imputer.features",
                      lambda: f"the feature dim {show(x[-1])} must equal the {n} imputed values (one per "
                              f"feature) or there must be one imputed value")
    _same(ctx)


@register(ML, "Normalizer", 1)
def normalizer(ctx):
    """Same shape, float; X is [N, C] or [C]."""
    _enum(ctx, "norm", "MAX", ("MAX", "L1", "L2"), "normalizer.norm")
    x = ctx.shape(0)
    if x is not None:
        _batch(ctx, x)
    _same(ctx, ir.DataType.FLOAT)


@register(ML, "Scaler", 1)
def scaler(ctx):
    """Same shape, float.  offset and scale have the same length, 1 or F (X is [N, F] or [F])."""
    ns, no = _attr_len(ctx, "scale"), _attr_len(ctx, "offset")
    if ns is not None and no is not None and ns != no:
        ctx.invalid("scaler.lengths", f"scale has {ns} values and offset {no}: scale must have offset's length",
                    "give scale and offset the same length")
    x = ctx.shape(0)
    n = ns if ns is not None else no
    if x is not None and len(x) in (1, 2) and n is not None and n != 1:
        ctx.equal(x[-1], n, "scaler.features",
                  lambda: f"the feature dim {show(x[-1])} must equal the {n} scale / offset values "
                          "(one per feature) or there must be one")
    _same(ctx, ir.DataType.FLOAT)


@register(ML, "CategoryMapper", 1)
def category_mapper(ctx):
    """Same shape; strings become int64 and int64 become strings.  cats_int64s and
    cats_strings are both given, of the same length."""
    for name in ("cats_int64s", "cats_strings"):
        if name not in ctx.attributes:
            ctx.invalid("categorymapper.cats", f"CategoryMapper's attribute '{name}' is missing: the map needs "
                        "both cats_int64s and cats_strings", f"give the node its '{name}' attribute")
    ni, ns = _len(ctx, "cats_int64s"), _len(ctx, "cats_strings")
    if ni != ns:
        ctx.invalid("categorymapper.cats", f"cats_int64s has {ni} values and cats_strings {ns}: the two "
                    "sequences of the map must have the same length",
                    "give cats_int64s and cats_strings the same length")
    dt = ctx.dtype(0)
    out = ir.DataType.INT64 if dt == ir.DataType.STRING else ir.DataType.STRING if dt is not None else None
    _same(ctx, out)


_KEYS = {"strings": ir.DataType.STRING, "int64s": ir.DataType.INT64, "floats": ir.DataType.FLOAT}


def _label_encoder_side(ctx, side):
    """(attribute name, element type, length) of the keys_* / values_* attribute given."""
    names = ((f"{side}_tensor",) if (ctx.opset or 4) >= 4 else ()) + \
        tuple(f"{side}_{k}" for k in _KEYS)
    which = _one_of(ctx, names, f"labelencoder.{side}")
    if which.endswith("_tensor"):
        t = _tensor_attr(ctx, which)
        dt, dims = t
        if dims is not None and len(dims) != 1:
            ctx.invalid(f"labelencoder.{side}", f"{which} has shape {_shape_str(dims)}: it is a 1-D tensor",
                        f"give {which} as a 1-D tensor")
        return which, dt, None if dims is None else dims[0]
    return which, _KEYS[which.split("_", 1)[1]], _len(ctx, which)


def label_encoder(ctx):
    """Same shape.  v1: strings <-> int64 by the input type.  v2 / v4: one keys_* of the
    input's element type and one values_* of the same length; the output has the values'
    type; v4's default_tensor is a 1-element 1-D tensor of the values' type."""
    dt = ctx.dtype(0)
    if ctx.opset is not None and ctx.opset < 2:
        out = ir.DataType.INT64 if dt == ir.DataType.STRING else ir.DataType.STRING \
            if dt == ir.DataType.INT64 else None
        _same(ctx, out)
        return
    kname, ktype, klen = _label_encoder_side(ctx, "keys")
    vname, vtype, vlen = _label_encoder_side(ctx, "values")
    if dt is not None and ktype is not None and dt != ktype:
        ctx.invalid("labelencoder.keys", f"the input is {_dtype_name(dt)} but {kname} holds "
                    f"{_dtype_name(ktype)}: keys have the input's element type",
                    f"give keys of the input's type {_dtype_name(dt)}")
    if klen is not None and vlen is not None and klen != vlen:
        ctx.invalid("labelencoder.values", f"{kname} has {klen} keys and {vname} {vlen} values: the i-th key "
                    "maps to the i-th value", f"give {kname} and {vname} the same length")
    d = _tensor_attr(ctx, "default_tensor") if (ctx.opset or 4) >= 4 else None
    if d is not None:
        ddt, ddims = d
        if ddt not in (None, ir.DataType.UNDEFINED) and vtype is not None and ddt != vtype:
            ctx.invalid("labelencoder.default", f"default_tensor is {_dtype_name(ddt)} but the values are "
                        f"{_dtype_name(vtype)}: the default has the values' type",
                        f"give default_tensor the values' type {_dtype_name(vtype)}")
        if ddims is not None and ddims != (1,):
            ctx.invalid("labelencoder.default", f"default_tensor has shape {_shape_str(ddims)}: it is a "
                        "1-element 1-D tensor", "give default_tensor the shape [1]")
    _same(ctx, vtype)


for _v in (1, 2, 4):
    register(ML, "LabelEncoder", _v)(label_encoder)


# ------------------------------------------------------------ feature extraction
@register(ML, "ArrayFeatureExtractor", 1)
def array_feature_extractor(ctx):
    """X [..., C], indices Y -> [..., numel(Y)]; a 1-D X gives [1, numel(Y)].  The indices
    select along the last axis: 0 <= index < C."""
    x, y = ctx.shape(0), ctx.shape(1)
    k = E.prod(y) if y is not None else ctx.unknown_dim("afe_count")
    if x is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    if len(x) == 0:
        ctx.invalid("arrayfeatureextractor.rank", "X is a scalar: the indices select along X's last axis, "
                    "which a scalar does not have", "give ArrayFeatureExtractor an X of rank >= 1")
    index_bound(ctx, 1, x[-1], len(x) - 1, "arrayfeatureextractor.index", negative=False)
    lead = (1,) if len(x) == 1 else tuple(x[:-1])
    ctx.set_output(0, lead + (k,), ctx.dtype(0))


@register(ML, "OneHotEncoder", 1)
def one_hot_encoder(ctx):
    """X's shape + [number of categories] (float); exactly one of cats_int64s / cats_strings."""
    which = _one_of(ctx, ("cats_int64s", "cats_strings"), "onehotencoder.cats")
    n = _len(ctx, which)
    x = ctx.shape(0)
    ctx.set_output(0, None if x is None else tuple(x) + (n,), ir.DataType.FLOAT)


@register(ML, "FeatureVectorizer", 1)
def feature_vectorizer(ctx):
    """Inputs [N, C_i] (or [C_i]) -> [N, sum(inputdimensions)] (float); one inputdimensions
    value (>= 0) per input, every input of the same batch N (onnxruntime reads N from
    axis 0 of any input of rank >= 2)."""
    dims = _ints(ctx, "inputdimensions") or []
    if len(dims) != ctx.num_inputs:
        ctx.invalid("featurevectorizer.inputdimensions", f"inputdimensions has {len(dims)} values for "
                    f"{ctx.num_inputs} inputs: it gives the size of each input",
                    "give inputdimensions one value per input")
    if any(d < 0 for d in dims):
        ctx.invalid("featurevectorizer.inputdimensions", f"inputdimensions {dims} has a negative size",
                    "give inputdimensions sizes >= 0")
    n = None
    for i in range(ctx.num_inputs):
        s = ctx.shape(i)
        if s is None:
            continue
        if len(s) == 0:
            ctx.invalid("featurevectorizer.rank", f"input {i} is a scalar: the inputs are [N, C] or [C]",
                        "give FeatureVectorizer inputs of shape [N, C] or [C]")
        b = 1 if len(s) == 1 else s[0]
        n = b if n is None else unify(ctx, n, b, "featurevectorizer.batch",
                                      lambda b=b, n=n, i=i: f"input {i} has batch {show(b)}, an earlier input "
                                                            f"has {show(n)}: the inputs must share their batch")
    if n is None:
        n = ctx.unknown_dim("featurevectorizer_batch")
    ctx.set_output(0, (n, sum(dims)), ir.DataType.FLOAT)


@register(ML, "DictVectorizer", 1)
def dict_vectorizer(ctx):
    """A map -> [1, len(vocabulary)]; one and only one vocabulary."""
    which = _one_of(ctx, ("int64_vocabulary", "string_vocabulary"), "dictvectorizer.vocabulary")
    ctx.set_output(0, (1, _len(ctx, which)), None)


_CAST_TO = {"TO_FLOAT": ir.DataType.FLOAT, "TO_STRING": ir.DataType.STRING, "TO_INT64": ir.DataType.INT64}


@register(ML, "CastMap", 1)
def cast_map(ctx):
    """A map int64 -> T to [1, n]: n = the map's size (DENSE, known at run time) or max_map (SPARSE)."""
    to = _enum(ctx, "cast_to", "TO_FLOAT", tuple(_CAST_TO), "castmap.cast_to")
    form = _enum(ctx, "map_form", "DENSE", ("DENSE", "SPARSE"), "castmap.map_form")
    if form == "SPARSE":
        n = int(ctx.attr("max_map", 1))
        if n < 0:
            ctx.invalid("castmap.max_map", f"max_map {n} is negative: it is the length of the output",
                        "set max_map to the output length (>= 0)")
    else:
        n = ctx.data_symbol("castmap_size", message="the number of entries of CastMap's input map")
    ctx.set_output(0, (1, n), _CAST_TO[to])


@register(ML, "ZipMap", 1)
def zip_map(ctx):
    """A sequence of maps, one per example (N for [N, C], 1 for [C]): its length is known,
    its elements are maps (no tensor shape is claimed for them).  One and only one of
    classlabels_int64s / classlabels_strings, one label per column."""
    which = _one_of(ctx, ("classlabels_int64s", "classlabels_strings"), "zipmap.classlabels")
    n = _len(ctx, which)
    x = ctx.shape(0)
    length = None
    if x is not None:
        length = _batch(ctx, x)
        ctx.equal(x[-1], n, "zipmap.classes", lambda: f"the class dim {show(x[-1])} must equal the {n} class labels")
    ctx.set_output(0, None, None, seq=SeqInfo(length=length))


# ------------------------------------------------------------ linear models
def _labels_dtype(ctx, strings="classlabels_strings"):
    return ir.DataType.STRING if ctx.attr(strings) is not None else ir.DataType.INT64


@register(ML, "LinearClassifier", 1)
def linear_classifier(ctx):
    """Y [N] labels; Z [N, E] scores, E = len(intercepts), or 2 when there is one intercept
    and two class labels (onnxruntime adds the complementary score).  X is [N, C] or [C];
    the coefficients hold one weight per class and feature: len(coefficients) is a multiple
    of E and at least E * C (onnxruntime's checks; it reads the first E * C)."""
    _enum(ctx, "post_transform", "NONE", _TRANSFORMS, "linearclassifier.post_transform")
    label_attr = _one_of(ctx, ("classlabels_ints", "classlabels_strings"), "linearclassifier.classlabels",
                         optional=True)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    e = _len(ctx, "intercepts")
    coef = _len(ctx, "coefficients")
    labels = _len(ctx, label_attr) if label_attr else 0
    if e == 0:
        ctx.cannot(Cannot.NOT_MODELED, "LinearClassifier without intercepts: the class count comes from "
                   "intercepts in this rule")
    if e > 1 and label_attr is None:
        ctx.invalid("linearclassifier.classlabels", f"LinearClassifier has {e} classes and no class labels: "
                    "classlabels_ints or classlabels_strings gives the label of each class",
                    "give the node classlabels_ints or classlabels_strings")
    if coef % e:
        ctx.invalid("linearclassifier.coefficients", f"coefficients has {coef} values for {e} classes "
                    f"(len(intercepts)): each class has one weight per feature",
                    "give len(intercepts) * features coefficients")
    if x is not None:
        f = x[-1]
        ctx.require(le(E.mul(e, f), coef), "linearclassifier.features",
                    lambda: f"the {e} classes times the feature dim {show(f)} must be at most the {coef} "
                            "coefficients (one weight per class and feature)")
    width = 2 if e == 1 and labels == 2 else e
    ctx.set_output(0, (n,), _labels_dtype(ctx))
    if ctx.has_output(1):
        ctx.set_output(1, (n, width), ir.DataType.FLOAT)


@register(ML, "LinearRegressor", 1)
def linear_regressor(ctx):
    """[N, targets] (float).  X is [N, C] or [C]; intercepts, when given, one per target;
    coefficients hold targets * C weights (onnxruntime: at least that many)."""
    _enum(ctx, "post_transform", "NONE", _TRANSFORMS, "linearregressor.post_transform")
    x = ctx.shape(0)
    n = _batch(ctx, x)
    t = int(ctx.attr("targets", 1))
    if t < 1:
        ctx.invalid("linearregressor.targets", f"targets {t} is not positive: it is the number of regression "
                    "targets", "set targets >= 1")
    ni = _len(ctx, "intercepts")
    if ni not in (0, t):
        ctx.invalid("linearregressor.intercepts", f"intercepts has {ni} values for {t} targets: intercepts, "
                    "if given, match the number of targets", f"give {t} intercepts or none")
    coef = _attr_len(ctx, "coefficients")
    if x is not None and coef is not None:
        f = x[-1]
        ctx.require(le(E.mul(t, f), coef), "linearregressor.features",
                    lambda: f"the {t} targets times the feature dim {show(f)} must be at most the {coef} "
                            "coefficients (one weight per target and feature)")
    ctx.set_output(0, (n, t), ir.DataType.FLOAT)


# ------------------------------------------------------------ SVMs
@register(ML, "SVMClassifier", 1)
def svm_classifier(ctx):
    """Y [N]; Z [N, K] with K the class count, except in SVC mode (support vectors) without
    prob_a: K(K - 1)/2 one-vs-one scores for K > 2 classes, 2 for K <= 2.  The spec says
    'one score per class'; onnxruntime's kernel gives the one-vs-one width (followed here)."""
    _enum(ctx, "kernel_type", "LINEAR", _KERNELS, "svmclassifier.kernel_type")
    _enum(ctx, "post_transform", "NONE", _TRANSFORMS, "svmclassifier.post_transform")
    _kernel_params(ctx)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    k = _len(ctx, "classlabels_ints", "classlabels_strings")
    if k == 0:
        ctx.invalid("svmclassifier.classlabels", "SVMClassifier has no class labels: one of classlabels_ints "
                    "/ classlabels_strings is required", "give the node classlabels_ints or classlabels_strings")
    pa, pb = _len(ctx, "prob_a"), _len(ctx, "prob_b")
    if pa != pb:
        ctx.invalid("svmclassifier.prob", f"prob_a has {pa} values and prob_b {pb}: prob_b must be the same "
                    "size as prob_a", "give prob_a and prob_b the same length")
    vpc = _ints(ctx, "vectors_per_class") or []
    svc = sum(vpc) > 0
    if svc and len(vpc) != k:
        ctx.invalid("svmclassifier.vectors_per_class", f"vectors_per_class has {len(vpc)} values for {k} "
                    "classes: it gives the support vector count of each class",
                    "give vectors_per_class one value per class label")
    have_proba = pa > 0
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
    """[N, 1] (float).  support_vectors holds n_supports vectors of X's feature dim."""
    _enum(ctx, "kernel_type", "LINEAR", _KERNELS, "svmregressor.kernel_type")
    _enum(ctx, "post_transform", "NONE", _TRANSFORMS, "svmregressor.post_transform")
    _kernel_params(ctx)
    x = ctx.shape(0)
    n = _batch(ctx, x)
    ns = int(ctx.attr("n_supports", 0))
    if ns < 0:
        ctx.invalid("svmregressor.n_supports", f"n_supports {ns} is negative: it is the number of support "
                    "vectors", "set n_supports >= 0")
    if ns > 0:
        sv = _len(ctx, "support_vectors")
        if sv % ns:
            ctx.invalid("svmregressor.support_vectors", f"support_vectors has {sv} values for n_supports {ns}: "
                        "it holds n_supports vectors of one length", "give n_supports * features support_vectors")
        if x is not None:
            ctx.equal(x[-1], sv // ns, "svmregressor.features",
                      f"the feature dim {show(x[-1])} must equal the support vector length {sv // ns}")
    ctx.set_output(0, (n, 1), ir.DataType.FLOAT)


# ------------------------------------------------------------ trees
_NODE_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF")


def _same_lengths(ctx, names, rule, what):
    """The attributes of ``names`` the node gives have one length (``what``: the tuples they
    encode); returns it (None when none is given)."""
    lens = [(nm, _attr_len(ctx, nm)) for nm in names if nm in ctx.attributes]
    lens = [(nm, ln) for nm, ln in lens if ln is not None]
    if not lens:
        return None
    first, n = lens[0]
    for nm, ln in lens[1:]:
        if ln != n:
            ctx.invalid(rule, f"{nm} has {ln} values and {first} {n}: the {what} attributes encode one tuple "
                        "per position and have one length", f"give every {what} attribute {n} values")
    return n


def _not_both(ctx, name):
    if name in ctx.attributes and f"{name}_as_tensor" in ctx.attributes:
        ctx.invalid(f"{ctx.op_type.lower()}.{name}", f"{name} and {name}_as_tensor are both given: only one of "
                    "them may be", f"keep one of {name} and {name}_as_tensor")


def _ids_below(ctx, name, bound, rule, what):
    ids = _ints(ctx, name)
    if ids:
        lo, hi = min(ids), max(ids)
        if lo < 0 or (bound is not None and hi >= bound):
            bad = lo if lo < 0 else hi
            ctx.invalid(rule, f"{name} holds {bad}, out of [0, {bound}) ({what})"
                        if bound is not None else f"{name} holds {bad}, a negative index ({what})",
                        f"keep every {name} value in [0, {bound})" if bound is not None
                        else f"keep every {name} value >= 0")
    return ids


def _feature_bound(ctx, x, featureids, rule):
    """Every compared feature id indexes X's feature axis (onnxruntime: "One path in the
    graph requests feature f but input tensor has F features")."""
    if not featureids:
        return
    lo, hi = min(featureids), max(featureids)
    if lo < 0:
        ctx.invalid(rule, f"nodes_featureids holds {lo}: feature ids index X's feature axis",
                    "keep every nodes_featureids value >= 0")
    if x is not None and len(x) == 2:
        ctx.require(lt(hi, x[1]), rule, lambda: f"feature id {hi} (nodes_featureids) must be below the feature "
                                                f"dim {show(x[1])} of X")


def _tree_v1_v3(ctx, targets_prefix):
    """What TreeEnsembleClassifier / TreeEnsembleRegressor v1..v5 share: X [N, F]; the
    nodes_* (and class_* / target_*) tuples of equal length; modes in the enum; feature
    ids within F; v3's X / X_as_tensor pairs not both given."""
    x = ctx.shape(0)
    n = _batch(ctx, x, (2,))
    for name in ("nodes_values", "nodes_hitrates", f"{targets_prefix}_weights", "base_values"):
        _not_both(ctx, name)
    _enum(ctx, "post_transform", "NONE", _TRANSFORMS, f"{ctx.op_type.lower()}.post_transform")
    _same_lengths(ctx, ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values",
                        "nodes_values_as_tensor", "nodes_hitrates", "nodes_hitrates_as_tensor", "nodes_modes",
                        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true"),
                  f"{ctx.op_type.lower()}.nodes", "nodes_*")
    _same_lengths(ctx, tuple(f"{targets_prefix}_{s}" for s in ("treeids", "nodeids", "ids", "weights",
                                                               "weights_as_tensor")),
                  f"{ctx.op_type.lower()}.{targets_prefix}", f"{targets_prefix}_*")
    modes = [_str(m) for m in (ctx.attr("nodes_modes") or [])]
    bad = [m for m in modes if m not in _NODE_MODES]
    if bad:
        ctx.invalid(f"{ctx.op_type.lower()}.nodes_modes", f"nodes_modes holds '{bad[0]}', not one of "
                    f"{', '.join(_NODE_MODES)}", f"use only {', '.join(_NODE_MODES)} in nodes_modes")
    feats = _ints(ctx, "nodes_featureids") or []
    if modes and len(modes) == len(feats):
        feats = [f for f, m in zip(feats, modes) if m != "LEAF"]
    _feature_bound(ctx, x, feats, f"{ctx.op_type.lower()}.featureids")
    return x, n


def _tree_regressor(ctx):
    """[N, n_targets]; target_ids in [0, n_targets); base_values none or one per target.
    Without n_targets (optional in the spec) the width is a symbol above every target id."""
    x, n = _tree_v1_v3(ctx, "target")
    rule = "treeensembleregressor"
    t = ctx.attr("n_targets")
    ids = _ints(ctx, "target_ids") or []
    if t is not None:
        t = int(t)
        if t < 1:
            ctx.invalid(f"{rule}.n_targets", f"n_targets {t} is not positive: it is the number of targets",
                        "set n_targets >= 1")
        _ids_below(ctx, "target_ids", t, f"{rule}.target_ids", "the index of the target of each weight")
        nb = _attr_len(ctx, "base_values" if "base_values" in ctx.attributes else "base_values_as_tensor")
        if nb not in (None, 0, t):
            ctx.invalid(f"{rule}.base_values", f"base_values has {nb} values for {t} targets: it has one value per "
                        "target or is left out", f"give {t} base values or none")
    else:
        _ids_below(ctx, "target_ids", None, f"{rule}.target_ids", "the index of the target of each weight")
        t = ctx.data_symbol("treeensemble_targets", message="TreeEnsembleRegressor's target count (no n_targets)")
        if ids:
            ctx.require(gt(t, max(ids)), f"{rule}.target_ids", f"the target count exceeds target id {max(ids)}")
    ctx.set_output(0, (n, t), ir.DataType.FLOAT)


for _v in (1, 3, 5):
    register(ML, "TreeEnsembleRegressor", _v)(_tree_regressor)


def tree_classifier(ctx):
    """Y [N] labels; Z [N, number of class labels]; class_ids index the labels."""
    x, n = _tree_v1_v3(ctx, "class")
    k = _len(ctx, "classlabels_int64s", "classlabels_strings")
    if k == 0:
        ctx.invalid("treeensembleclassifier.classlabels", "TreeEnsembleClassifier has no class labels: one of "
                    "classlabels_int64s / classlabels_strings is required",
                    "give the node classlabels_int64s or classlabels_strings")
    _ids_below(ctx, "class_ids", k, "treeensembleclassifier.class_ids", "class_ids index the class labels")
    ctx.set_output(0, (n,), _labels_dtype(ctx))
    if ctx.has_output(1):
        ctx.set_output(1, (n, k), ir.DataType.FLOAT)


for _v in (1, 3, 5):
    register(ML, "TreeEnsembleClassifier", _v)(tree_classifier)


_V5_NODES = ("nodes_featureids", "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs",
             "nodes_falseleafs", "nodes_hitrates", "nodes_missing_value_tracks_true")


@register(ML, "TreeEnsemble", 5)
def tree_ensemble(ctx):
    """[N, n_targets] with X's dtype; X is [N, F].  ONNX's inference checks: nodes_splits is
    1-D of X's element type and gives the node count every nodes_* attribute has;
    nodes_modes is uint8 and nodes_hitrates float; membership_values and leaf_weights have
    X's type; leaf_targetids and leaf_weights have one length.  And the spec's ranges:
    modes 0..6, post_transform 0..4, aggregate_function 0..3, tree_roots and branch ids
    within the nodes / leaves, leaf_targetids in [0, n_targets), feature ids within F.
    Without n_targets (optional in the spec) the width is a symbol above every target id."""
    rule = "treeensemble"
    x = ctx.shape(0)
    n = _batch(ctx, x, (2,))
    dt = ctx.dtype(0)
    sdt, sdims = _tensor_attr(ctx, "nodes_splits")
    if sdims is not None and len(sdims) != 1:
        ctx.invalid(f"{rule}.nodes_splits", f"nodes_splits has shape {_shape_str(sdims)}: it is 1-D, one "
                    "threshold per node", "give nodes_splits as a 1-D tensor")
    typed = [("nodes_splits", sdt)]
    for name in ("membership_values", "leaf_weights"):
        t = _tensor_attr(ctx, name)
        if t is not None:
            typed.append((name, t[0]))
    if dt is not None:
        for name, adt in typed:
            if adt is not None and adt != dt:
                ctx.invalid(f"{rule}.{name}", f"{name} is {_dtype_name(adt)} but X is {_dtype_name(dt)}: "
                            f"{name} has X's element type", f"give {name} X's element type {_dtype_name(dt)}")
    for name, want in (("nodes_modes", ir.DataType.UINT8), ("nodes_hitrates", ir.DataType.FLOAT)):
        t = _tensor_attr(ctx, name)
        if t is not None and t[0] is not None and t[0] != want:
            ctx.invalid(f"{rule}.{name}", f"{name} is {_dtype_name(t[0])}: it is a {_dtype_name(want)} tensor",
                        f"give {name} as a {_dtype_name(want)} tensor")
    nodes = sdims[0] if sdims else None
    if nodes is not None:
        for name in _V5_NODES:
            ln = _attr_len(ctx, name)
            if ln is not None and ln != nodes:
                ctx.invalid(f"{rule}.nodes", f"{name} has {ln} values but nodes_splits {nodes}: every nodes_* "
                            "attribute has one entry per node", f"give {name} {nodes} values")
    leaves = _attr_len(ctx, "leaf_weights")
    nt = _attr_len(ctx, "leaf_targetids")
    if leaves is not None and nt is not None and leaves != nt:
        ctx.invalid(f"{rule}.leaves", f"leaf_targetids has {nt} values and leaf_weights {leaves}: the leaf_* "
                    "attributes have one entry per leaf", "give leaf_targetids and leaf_weights the same length")
    modes = _ints(ctx, "nodes_modes") or []
    if modes and not all(0 <= m <= 6 for m in modes):
        bad = next(m for m in modes if not 0 <= m <= 6)
        ctx.invalid(f"{rule}.nodes_modes", f"nodes_modes holds {bad}, not one of 0..6 (BRANCH_LEQ .. "
                    "BRANCH_MEMBER)", "use only 0..6 in nodes_modes")
    _int_enum(ctx, "post_transform", 0, 4, f"{rule}.post_transform", "NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT")
    _int_enum(ctx, "aggregate_function", 1, 3, f"{rule}.aggregate_function", "AVERAGE, SUM, MIN, MAX")
    _ids_below(ctx, "tree_roots", nodes, f"{rule}.tree_roots", "tree_roots index the nodes")
    for side in ("true", "false"):
        ids = _ints(ctx, f"nodes_{side}nodeids") or []
        leafs = _ints(ctx, f"nodes_{side}leafs") or []
        if len(ids) != len(leafs):
            continue
        for i, (j, is_leaf) in enumerate(zip(ids, leafs)):
            bound = leaves if is_leaf else nodes
            if j < 0 or (bound is not None and j >= bound):
                what = "leaf" if is_leaf else "node"
                ctx.invalid(f"{rule}.nodes_{side}nodeids", f"nodes_{side}nodeids[{i}] = {j} is out of range of "
                            f"the {bound} {what}s it indexes (nodes_{side}leafs[{i}] = {is_leaf})",
                            f"keep nodes_{side}nodeids within the {what}s")
    _feature_bound(ctx, x, _ints(ctx, "nodes_featureids") or [], f"{rule}.featureids")
    t = ctx.attr("n_targets")
    if t is not None:
        t = int(t)
        if t < 1:
            ctx.invalid(f"{rule}.n_targets", f"n_targets {t} is not positive: it is the number of targets",
                        "set n_targets >= 1")
        _ids_below(ctx, "leaf_targetids", t, f"{rule}.leaf_targetids", "leaf_targetids are in [0, n_targets)")
    else:
        ids = _ids_below(ctx, "leaf_targetids", None, f"{rule}.leaf_targetids", "leaf_targetids are target indices")
        t = ctx.data_symbol("treeensemble_targets", message="TreeEnsemble's target count (no n_targets)")
        if ids:
            ctx.require(gt(t, max(ids)), f"{rule}.leaf_targetids", f"the target count exceeds target id {max(ids)}")
    ctx.set_output(0, (n, t), dt)
