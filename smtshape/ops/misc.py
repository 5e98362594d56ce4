"""Miscellaneous ops: EyeLike, Det, CumProd, LpNormalization, BitCast, the random
generators (Bernoulli, RandomNormal, RandomUniform, RandomNormalLike,
RandomUniformLike, Multinomial), the string ops (StringConcat,
StringNormalizer, StringSplit, RegexFullMatch), TfIdfVectorizer, the losses
(NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and the
``ai.onnx.preview.training`` ops (Adagrad, Adam, Momentum, Gradient).

Data-dependent sizes (StringSplit's token count, StringNormalizer's kept
words) are data symbols with the upper bound the op's semantics give.
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from .. import schemas
from ..printing import show
from ..registry import register
from .common import broadcast_shapes, norm_axis, unify

TRAINING = "ai.onnx.preview.training"


def _shape_str(s):
    return "(" + ", ".join(show(d) for d in s) + ")"


def _dtype_attr(ctx, default, name="dtype"):
    """The element type an attribute names (``default`` when absent), checked against the
    types the schema allows for output 0."""
    v = ctx.attr(name)
    if v is None:
        return default
    try:
        dt = ir.DataType(int(v))
    except ValueError:
        dt = None
    low = ctx.op_type.lower()
    if dt is None or dt == ir.DataType.UNDEFINED:
        ctx.invalid(f"{low}.{name}", f"{name} {v} is not a tensor data type",
                    f"set {name} to a TensorProto data type")
    sig = schemas.signature(ctx.domain or "", ctx.op_type, ctx.opset)
    p = sig.formal(sig.outputs, 0) if sig is not None else None
    allowed = sig.allowed.get(p[0]) if p is not None else None
    if allowed and schemas.tensor_type(dt) not in allowed:
        ctx.invalid(f"{low}.{name}", f"{name} {dt.name} is not an output type of {ctx.op_type}-{sig.since} "
                    f"(allowed: {', '.join(sorted(a[7:-1] for a in allowed))})",
                    f"set {name} to one of the allowed types")
    return dt


def _same_shape(ctx, dtype=None):
    ctx.set_output(0, ctx.shape(0), dtype if dtype is not None else ctx.dtype(0))


# ------------------------------------------------------------ EyeLike, Det, CumProd, LpNormalization
def eye_like(ctx):
    """Output has the 2-D input's shape; dtype from ``dtype`` or the input."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    if x is not None and len(x) != 2:
        ctx.invalid("eyelike.rank", f"the input must be 2-D, has shape {_shape_str(x)}", "give EyeLike a 2-D input")
    _same_shape(ctx, _dtype_attr(ctx, ctx.dtype(0)))


register("", "EyeLike", 9)(eye_like)
register("", "EyeLike", 22)(eye_like)


def det(ctx):
    """[*, M, M] -> [*]."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    if x is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    if len(x) < 2:
        ctx.invalid("det.rank", f"the input must have rank >= 2 ([*, M, M]), has shape {_shape_str(x)}",
                    "give Det square matrices in the last two axes")
    ctx.equal(x[-1], x[-2], "det.square",
              f"the matrices must be square: the last two dims are {show(x[-2])} and {show(x[-1])}")
    ctx.set_output(0, tuple(x[:-2]), ctx.dtype(0))


register("", "Det", 11)(det)
register("", "Det", 22)(det)


@register("", "CumProd", since_version=26)
def cumprod(ctx):
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    ar = ctx.shape(1)
    if ar is not None and not (len(ar) == 0 or (len(ar) == 1 and ar[0] == 1)):
        if len(ar) == 1 and not isinstance(ar[0], int):
            ctx.equal(ar[0], 1, "cumprod.axis", f"axis must be a scalar (or hold one element), has shape "
                      f"{_shape_str(ar)}")
        else:
            ctx.invalid("cumprod.axis", f"axis must be a scalar, has shape {_shape_str(ar)}",
                        "give axis as a scalar")
    av = ctx.int_values(1)
    if av is not None and len(av) == 1 and isinstance(av[0], int) and x is not None:
        norm_axis(ctx, av[0], len(x))
    _same_shape(ctx)


def lp_normalization(ctx):
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        ctx.invalid("lpnormalization.p", f"p must be 1 or 2 (the only orders the spec supports), is {p}",
                    "set p to 1 or 2")
    if x is not None:
        norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    _same_shape(ctx)


register("", "LpNormalization", 1)(lp_normalization)
register("", "LpNormalization", 22)(lp_normalization)


def _bitwidth(dt):
    try:
        return ir.DataType(dt).bitwidth
    except Exception:
        return None


@register("", "BitCast", since_version=26)
def bitcast(ctx):
    """Same shape: the target type must have the input type's bit width (ONNX 1.23:
    'The target type must have the same bit-width as the input type')."""
    ctx.check_inputs(1, 1)
    ctx.require_attr("to")
    to = _dtype_attr(ctx, None, "to")          # (a string 'to' is outside T2; a string input, the schema's)
    src = ctx.dtype(0)
    a, b = _bitwidth(src), _bitwidth(to)
    if a is not None and b is not None and a != b:
        ctx.invalid("bitcast.to", f"BitCast from {src.name} ({a} bits) to {to.name} ({b} bits): the bit widths "
                    "must be equal", f"cast to a type of {a} bits")
    _same_shape(ctx, to)


# ------------------------------------------------------------ random generators
def bernoulli(ctx):
    ctx.check_inputs(1, 1)
    _same_shape(ctx, _dtype_attr(ctx, ctx.dtype(0)))


register("", "Bernoulli", 15)(bernoulli)
register("", "Bernoulli", 22)(bernoulli)


def random_like(ctx):
    """Output has the input's shape; dtype from ``dtype`` or the input."""
    ctx.check_inputs(1, 1)
    _same_shape(ctx, _dtype_attr(ctx, ctx.dtype(0)))


def random_shape(ctx):
    """Output shape is the ``shape`` attribute; dtype from ``dtype`` (default float)."""
    ctx.check_inputs(0, 0)
    shape = [int(d) for d in ctx.require_attr("shape")]
    if any(d < 0 for d in shape):
        ctx.invalid(f"{ctx.op_type.lower()}.shape", f"shape {shape} has a negative dim",
                    "give shape non-negative sizes")
    ctx.set_output(0, tuple(shape), _dtype_attr(ctx, ir.DataType.FLOAT))


for _v in (1, 22):
    register("", "RandomNormalLike", _v)(random_like)
    register("", "RandomUniformLike", _v)(random_like)
    register("", "RandomNormal", _v)(random_shape)
    register("", "RandomUniform", _v)(random_shape)


def multinomial(ctx):
    """[batch, classes] -> [batch, sample_size], dtype int32 unless ``dtype`` says int64."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    if x is not None and len(x) != 2:
        ctx.invalid("multinomial.rank", f"the input must be 2-D [batch_size, class_size], has shape {_shape_str(x)}",
                    "give Multinomial a [batch_size, class_size] input")
    k = int(ctx.attr("sample_size", 1))
    if k < 0:
        ctx.invalid("multinomial.sample_size", f"sample_size is negative ({k})", "set sample_size to a count")
    batch = x[0] if x is not None else ctx.unknown_dim("multinomial_batch")
    ctx.set_output(0, (batch, k), _dtype_attr(ctx, ir.DataType.INT32))


register("", "Multinomial", 7)(multinomial)
register("", "Multinomial", 22)(multinomial)


# ------------------------------------------------------------ strings
@register("", "StringConcat", since_version=20)
def string_concat(ctx):
    """Elementwise concatenation with multidirectional broadcasting."""
    ctx.check_inputs(2, 2)
    ctx.set_output(0, broadcast_shapes(ctx, [ctx.shape(0), ctx.shape(1)], "stringconcat.broadcast"),
                   ir.DataType.STRING)


@register("", "RegexFullMatch", since_version=20)
def regex_full_match(ctx):
    ctx.check_inputs(1, 1)
    _same_shape(ctx, ir.DataType.BOOL)


@register("", "StringNormalizer", since_version=10)
def string_normalizer(ctx):
    """[C] or [1, C].  Without stopwords the shape is kept; with stopwords the kept count
    is a data symbol <= C, or 1 when every word is dropped (one empty string)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    if x is not None and not (len(x) == 1 or (len(x) == 2 and x[0] == 1)):
        if len(x) == 2 and not isinstance(x[0], int):
            ctx.equal(x[0], 1, "stringnormalizer.shape", f"a 2-D input must be [1, C], is {_shape_str(x)}")
        else:
            ctx.invalid("stringnormalizer.shape", f"the input must be [C] or [1, C], is {_shape_str(x)}",
                        "give StringNormalizer a [C] or [1, C] input")
    case = ctx.attr("case_change_action", "NONE")
    if isinstance(case, bytes):
        case = case.decode("utf-8", "replace")
    if case not in ("LOWER", "UPPER", "NONE"):
        ctx.invalid("stringnormalizer.case_change_action", f"case_change_action {case!r} is not one of LOWER, "
                    "UPPER, NONE", "set case_change_action to LOWER, UPPER or NONE")
    if not ctx.attr("stopwords"):
        _same_shape(ctx, ir.DataType.STRING)
        return
    if x is None:
        ctx.set_output(0, None, ir.DataType.STRING)
        return
    c = x[-1]
    kept = ctx.data_symbol("stringnormalizer_kept", upper=E.smax(c, 1),
                           message="words StringNormalizer keeps after removing stopwords")
    ctx.set_output(0, tuple(x[:-1]) + (kept,), ir.DataType.STRING)


@register("", "StringSplit", since_version=20)
def string_split(ctx):
    """Y: X.shape + [most substrings of any element] (<= maxsplit + 1 when maxsplit is set);
    Z: X.shape, the count per element (int64)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    ms = ctx.attr("maxsplit")
    upper = None
    if ms is not None:
        ms = int(ms)
        # (a negative maxsplit: onnxruntime and the reference split without limit)
        upper = ms + 1 if ms >= 0 else None
    if x is None:
        ctx.set_output(0, None, ir.DataType.STRING)
    else:
        n = ctx.data_symbol("stringsplit_tokens", upper=upper,
                            message="the most substrings StringSplit makes of one element")
        ctx.set_output(0, tuple(x) + (n,), ir.DataType.STRING)
    if ctx.has_output(1):
        ctx.set_output(1, x, ir.DataType.INT64)


@register("", "TfIdfVectorizer", since_version=9)
def tfidf_vectorizer(ctx):
    """[C] -> [max(ngram_indexes) + 1]; [N, C] -> [N, max(ngram_indexes) + 1] (float)."""
    ctx.check_inputs(1, 1)
    x = ctx.shape(0)
    idx = ctx.require_attr("ngram_indexes")
    idx = [int(i) for i in idx]
    if not idx or min(idx) < 0:
        ctx.invalid("tfidfvectorizer.ngram_indexes", f"ngram_indexes must be non-empty with no negative entry, is "
                    f"{idx[:8]}", "give ngram_indexes one output coordinate per n-gram of the pool")
    _tfidf_attrs(ctx, len(idx))
    width = max(idx) + 1
    if x is None:
        ctx.set_output(0, None, ir.DataType.FLOAT)
        return
    if len(x) not in (1, 2):
        ctx.invalid("tfidfvectorizer.rank", f"the input must be [C] or [N, C], has shape {_shape_str(x)}",
                    "give TfIdfVectorizer a 1-D or 2-D input")
    ctx.set_output(0, tuple(x[:-1]) + (width,), ir.DataType.FLOAT)


def _tfidf_attrs(ctx, n_idx):
    """The spec's attribute preconditions (onnxruntime refuses each)."""
    mode = ctx.attr("mode")
    if isinstance(mode, bytes):
        mode = mode.decode("utf-8", "replace")
    if mode is not None and mode not in ("TF", "IDF", "TFIDF"):
        ctx.invalid("tfidfvectorizer.mode", f"mode {mode!r} is not one of TF, IDF, TFIDF", "set mode to TF, IDF "
                    "or TFIDF")
    ints, strs = ctx.attr("pool_int64s"), ctx.attr("pool_strings")
    if not ints and not strs:
        ctx.invalid("tfidfvectorizer.pool", "neither pool_int64s nor pool_strings is given: one of them must be",
                    "give the n-gram pool in pool_int64s or pool_strings")
    if ints and strs:
        ctx.invalid("tfidfvectorizer.pool", "both pool_int64s and pool_strings are given: one of them must be, not "
                    "both", "keep only the pool that matches the input's type")
    w = ctx.attr("weights")
    if w is not None and len(w) != n_idx:
        ctx.invalid("tfidfvectorizer.weights", f"weights has {len(w)} entries but ngram_indexes {n_idx}: its length "
                    "must equal the size of ngram_indexes", "give one weight per n-gram")
    lo, hi, skip = (ctx.attr(a) for a in ("min_gram_length", "max_gram_length", "max_skip_count"))
    if lo is not None and int(lo) < 1:
        ctx.invalid("tfidfvectorizer.gram_length", f"min_gram_length must be at least 1 (an n-gram has n >= 1 "
                    f"items), is {int(lo)}", "set min_gram_length to 1 or more")
    if lo is not None and hi is not None and int(hi) < int(lo):
        ctx.invalid("tfidfvectorizer.gram_length", f"max_gram_length {int(hi)} is below min_gram_length {int(lo)}",
                    "set max_gram_length to at least min_gram_length")
    if skip is not None and int(skip) < 0:
        ctx.invalid("tfidfvectorizer.max_skip_count", f"max_skip_count is negative ({int(skip)})",
                    "set max_skip_count to 0 or more")


# ------------------------------------------------------------ losses
def _reduction(ctx, rule):
    r = ctx.attr("reduction", "mean")
    if isinstance(r, bytes):
        r = r.decode()
    if r not in ("none", "sum", "mean"):
        ctx.invalid(f"{rule}.reduction", f"reduction '{r}' is not one of none, sum, mean",
                    "set reduction to none, sum or mean")
    return r


def _loss_dims(ctx, x, t, w, rule):
    """Input (N, C, d1..dk), target (N, d1..dk), weight (C,): emit the relations;
    return the per-element loss shape (N, d1..dk) or None."""
    if x is not None and len(x) < 2:
        ctx.invalid(f"{rule}.rank", f"the input must have rank >= 2 (N, C, ...), has shape {_shape_str(x)}",
                    "give the scores a batch and a class axis")
    if x is not None and t is not None and len(t) != len(x) - 1:
        ctx.invalid(f"{rule}.rank", f"target has rank {len(t)}, must be {len(x) - 1} (the input's rank minus the "
                    "class axis)", "give target the input's shape without the class axis")
    if w is not None and len(w) != 1:
        ctx.invalid(f"{rule}.rank", f"weight must be 1-D [C], has shape {_shape_str(w)}",
                    "give one weight per class")
    if x is not None and w is not None:
        ctx.equal(w[0], x[1], f"{rule}.weight", f"weight length {show(w[0])} must equal the class count {show(x[1])}")
    if x is None:
        return None if t is None else tuple(t)
    out = [x[0]] + list(x[2:])
    if t is not None:
        out = [unify(ctx, a, b, f"{rule}.target",
                     f"target axis {k}: {show(b)} must equal the input's {show(a)}")
               for k, (a, b) in enumerate(zip(out, t))]
    return tuple(out)


def nll_loss(ctx):
    ctx.check_inputs(2, 3)
    red = _reduction(ctx, "nllloss")
    shape = _loss_dims(ctx, ctx.shape(0), ctx.shape(1), ctx.shape(2) if ctx.has_input(2) else None, "nllloss")
    ctx.set_output(0, shape if red == "none" else (), ctx.dtype(0))


for _v in (12, 13, 22):
    register("", "NegativeLogLikelihoodLoss", _v)(nll_loss)


def sce_loss(ctx):
    """Output 0: (N, d1..dk) for reduction none, else a scalar; output 1 (log_prob): scores' shape."""
    ctx.check_inputs(2, 3)
    red = _reduction(ctx, "softmaxcrossentropy")
    x = ctx.shape(0)
    shape = _loss_dims(ctx, x, ctx.shape(1), ctx.shape(2) if ctx.has_input(2) else None, "softmaxcrossentropy")
    ctx.set_output(0, shape if red == "none" else (), ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, x, ctx.dtype(0))


register("", "SoftmaxCrossEntropyLoss", 12)(sce_loss)
register("", "SoftmaxCrossEntropyLoss", 13)(sce_loss)


# ------------------------------------------------------------ ai.onnx.preview.training
def _optimizer(groups: int, names: tuple):
    """R, T, then ``groups`` lists of n tensors each (X, G, then the state tensors).
    Outputs: new X, then the new state tensors, each shaped like its X."""

    def rule(ctx):
        low = ctx.op_type.lower()
        nin = ctx.num_inputs - 2
        if nin <= 0 or nin % groups:
            ctx.invalid(f"{low}.arity", f"{ctx.op_type} takes R, T and {groups} tensors per optimized tensor "
                        f"({', '.join(names)}), the node has {ctx.num_inputs} inputs",
                        f"give {groups} tensors per optimized tensor after R and T")
        n = nin // groups
        for i, what in ((0, "R"), (1, "T")):
            s = ctx.shape(i)
            if s is not None and len(s) != 0:
                ctx.invalid(f"{low}.scalar", f"{what} must be a scalar, has shape {_shape_str(s)}",
                            f"give {what} as a scalar")
        state = groups - 2
        if ctx.num_outputs > n * (1 + state):
            ctx.invalid(f"{low}.arity", f"{ctx.op_type} gives at most {n * (1 + state)} outputs, the node has "
                        f"{ctx.num_outputs}", "drop the extra outputs")
        for j in range(n):
            shapes = [ctx.shape(2 + g * n + j) for g in range(groups)]
            ref = shapes[0]
            for g in range(1, groups):
                s = shapes[g]
                if ref is None or s is None:
                    ref = ref if ref is not None else s
                    continue
                if len(s) != len(ref):
                    ctx.invalid(f"{low}.shape", f"{names[g]}{j + 1} has rank {len(s)}, {names[0]}{j + 1} has rank "
                                f"{len(ref)}: they must have the same shape", f"give {names[g]}{j + 1} the shape "
                                f"of {names[0]}{j + 1}")
                ref = tuple(unify(ctx, a, b, f"{ctx.op_type.lower()}.shape",
                                  f"{names[g]}{j + 1} axis {k}: {show(b)} must equal {names[0]}{j + 1}'s {show(a)}")
                            for k, (a, b) in enumerate(zip(ref, s)))
            ctx.set_output(j, ref, ctx.dtype(2 + j))
            for g in range(state):
                ctx.set_output(n * (1 + g) + j, ref, ctx.dtype(2 + (2 + g) * n + j))

    return rule


register(TRAINING, "Adagrad", 1)(_optimizer(3, ("X", "G", "H")))
_momentum_shapes = _optimizer(3, ("X", "G", "V"))


@register(TRAINING, "Momentum", since_version=1)
def momentum(ctx):
    mode = ctx.attr("mode", None)
    if isinstance(mode, bytes):
        mode = mode.decode("utf-8", "replace")
    if mode is not None and mode not in ("nesterov", "standard"):
        ctx.invalid("momentum.mode", f"mode {mode!r} is not 'nesterov' or 'standard'", "set mode to nesterov or "
                    "standard")
    _momentum_shapes(ctx)
register(TRAINING, "Adam", 1)(_optimizer(4, ("X", "G", "V", "H")))


@register(TRAINING, "Gradient", since_version=1)
def gradient(ctx):
    """Output i is dy/dxs[i]: shaped like input i (the value of xs[i])."""
    xs = ctx.require_attr("xs")
    zs = ctx.attr("zs") or []
    if ctx.num_inputs != len(xs) + len(zs):
        ctx.invalid("gradient.arity", f"the node has {ctx.num_inputs} inputs but xs and zs name "
                    f"{len(xs) + len(zs)}: the inputs are the xs, then the zs", "give one input per name in xs and zs")
    if ctx.num_outputs > len(xs):
        ctx.invalid("gradient.arity", f"the node has {ctx.num_outputs} outputs but xs names {len(xs)}: one "
                    "gradient per xs", "give at most one output per name in xs")
    for i in range(len(xs)):
        ctx.set_output(i, ctx.shape(i), ctx.dtype(i))

