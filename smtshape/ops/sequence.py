"""Sequences and optionals: SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert,
SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
OptionalGetElement, OptionalHasElement.

A sequence value is a ``TensorInfo`` whose ``seq`` is a ``SeqInfo`` (its ``shape`` and
``dtype`` are None: it is not a tensor).  ``SeqInfo`` keeps the length (int, expression or
None), the elements' infos when every one is known, and the per-axis agreement of the
element shapes: an axis where the elements may differ is None there, and a tensor taken out
of the sequence at an unknown position gets a fresh UNKNOWN dim for it (one symbol shared
by every element would claim they are equal).  Merging shapes compares dims syntactically
(canonical forms) only, so no solver answer decides a result.

An optional is a sequence of length 0 (empty) or 1 (has an element); ``elems[0]`` is the
content it holds when present.
"""
from __future__ import annotations

from .. import irtypes as ir
from ..lazy import sympy

from .. import expr as E
from ..constraints import Provenance, ge, gt, le
from ..context import SeqInfo, TensorInfo
from ..printing import show
from ..registry import register
from .common import norm_axis, unify

INT64 = ir.DataType.INT64
BOOL = ir.DataType.BOOL
MAX_ELEMS = 256          # sequences longer than this keep only their common element shape
MAX_MAP_WALKS = 16       # SequenceMap walks its body once per element up to this many elements


# ---------------------------------------------------------------- helpers
def _s(e) -> str:
    return show(e)


def _info_seq(t: TensorInfo | None, dtype=None) -> SeqInfo:
    """The SeqInfo of a value; an unknown sequence when it has none."""
    if t is not None and t.seq is not None:
        return t.seq
    return SeqInfo(elem_dtype=dtype if dtype is not None else (t.dtype if t is not None else None))


def _seq(ctx, i) -> SeqInfo:
    return _info_seq(ctx.input(i))


def _canon_info(ctx, t: TensorInfo) -> TensorInfo:
    if t.shape is None:
        return t
    c = ctx.store.canon
    return TensorInfo(tuple(c(d) for d in t.shape), t.dtype, t.value, t.const, t.tensor, t.seq)


def _merge(a, b):
    """Per-axis agreement of two element shapes (None entries: may differ)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if (x is not None and y is not None and x == y) else None for x, y in zip(a, b))


def _common(shapes):
    shapes = list(shapes)
    if not shapes:
        return None
    acc = shapes[0]
    for s in shapes[1:]:
        acc = _merge(acc, s)
    return acc


def _canon_elem_shape(ctx, s):
    if s is None:
        return None
    return tuple(None if d is None else ctx.store.canon(d) for d in s)


def _from_elems(elems, dtype) -> SeqInfo:
    elems = tuple(elems)
    if len(elems) > MAX_ELEMS:
        return SeqInfo(len(elems), _common(t.shape for t in elems), dtype)
    return SeqInfo(len(elems), _common(t.shape for t in elems), dtype, elems)


def _set_seq(ctx, i, sq: SeqInfo):
    ctx.set_output(i, None, None, seq=sq)


def _set_info(ctx, i, t: TensorInfo):
    if t.seq is not None:
        _set_seq(ctx, i, t.seq)
    else:
        ctx.set_output(i, t.shape, t.dtype, t.value, t.const, t.tensor)


def _scalar_position(ctx, i):
    """The position input: its value (int / expression) or None; checks it is a scalar."""
    s = ctx.shape(i)
    if s is not None and len(s) > 1:
        ctx.invalid(f"{ctx.op_type.lower()}.position", f"position must be a scalar, has shape "
                    f"({', '.join(_s(d) for d in s)})", "give the position as a scalar")
    if s is not None and len(s) == 1:
        # a one-element vector is accepted (onnxruntime, ONNX's own tests)
        ctx.equal(s[0], 1, "sequence.position", f"position must hold one element, has {_s(s[0])}")
    v = ctx.value(i)
    if v is None or len(v) != 1 or v[0] is None or isinstance(v[0], bool):
        return None
    x = E.norm(v[0])
    return x if isinstance(x, (int, sympy.Expr)) else None


def _position_in_range(ctx, pos, n, hi_inclusive, rule, what):
    """Emit -n <= pos <= hi (hi = n or n - 1); the op fails at run time otherwise."""
    if pos is None or n is None:
        return
    hi = n if hi_inclusive else E.sub(n, 1)
    ctx.require(ge(pos, E.neg(n)), rule, f"{what} position {_s(pos)} must be >= -{_s(n)} (sequence length)")
    ctx.require(le(pos, hi), rule, f"{what} position {_s(pos)} must be <= {_s(hi)} (sequence length {_s(n)})")


def _index(pos, n, insert=False):
    """A concrete element index for an int position and int length, else None."""
    if not isinstance(pos, int) or not isinstance(n, int):
        return None
    k = pos + n if pos < 0 else pos
    return k if 0 <= k <= (n if insert else n - 1) else None


def _elem_tensor(ctx, sq: SeqInfo, k, hint) -> TensorInfo:
    """The element at index ``k`` (int) or at an unknown index (None)."""
    if k is not None and sq.elems is not None and 0 <= k < len(sq.elems):
        return _canon_info(ctx, sq.elems[k])
    shape = sq.elem_shape
    if shape is not None:
        shape = tuple(ctx.unknown_dim(f"{hint}_d{a}") if d is None else ctx.store.canon(d)
                      for a, d in enumerate(shape))
    return TensorInfo(shape, sq.elem_dtype)


# ---------------------------------------------------------------- graph inputs
def declare_input(engine, v) -> TensorInfo:
    """TensorInfo of a sequence- or optional-typed graph input (called by the engine).

    Its element dims: a plain ``dim_param`` is the input symbol of that name, a fixed size
    stays; an anonymous dim of a sequence element may differ between elements (None).  The
    length of a sequence input is a generated input symbol ``<name>_len``."""
    from ..graph import sanitize
    t = v.type

    def elem_dims(shape, where, per_element):
        if shape is None:
            return None
        dims = []
        for axis, d in enumerate(shape):
            if isinstance(d, int):
                dims.append(d)
                continue
            label = getattr(d, "value", None)
            name = sanitize(label) if label else None
            if name is not None:
                origin = Provenance("", "input", "input.dim", f"axis {axis} of {where} (dim_param '{label}')")
                dims.append(engine.store.declare(name, "input", origin))
            elif per_element:
                dims.append(None)
            else:
                origin = Provenance("", "input", "input.dim", f"axis {axis} of {where}")
                dims.append(engine.store.declare(engine.store.fresh_name(f"{v.name}_d{axis}"), "input",
                                                 origin, generated=True))
        return tuple(dims)

    def seq_info(st, where):
        inner = st.elem_type
        shape = v.shape if isinstance(inner, ir.TensorType) else None
        origin = Provenance("", "input", "input.seq_len", f"number of elements of {where}")
        n = engine.store.declare(engine.store.fresh_name(f"{v.name}_len"), "input", origin, generated=True)
        return SeqInfo(n, elem_dims(shape, f"the elements of {where}", True), getattr(inner, "dtype", None))

    where = f"graph input '{v.name}'"
    if isinstance(t, ir.SequenceType):
        return TensorInfo(seq=seq_info(t, where))
    if isinstance(t, ir.OptionalType):
        inner = t.elem_type
        if isinstance(inner, ir.SequenceType):
            content = TensorInfo(seq=seq_info(inner, f"the sequence in {where}"))
        elif isinstance(inner, ir.TensorType):
            content = TensorInfo(elem_dims(v.shape, f"the tensor in {where}", False), inner.dtype)
        else:
            content = TensorInfo()
        return TensorInfo(seq=SeqInfo(None, None, None, (content,), optional=True))
    return TensorInfo(None, v.dtype)


# ---------------------------------------------------------------- construction
@register("", "SequenceEmpty", since_version=11)
def sequence_empty(ctx):
    ctx.check_inputs(0, 0)
    dt = ctx.attr("dtype", None)
    if dt is not None:
        try:
            dt = ir.DataType(int(dt))
        except ValueError:
            dt = None
        if dt is None or dt == ir.DataType.UNDEFINED:
            ctx.invalid("sequenceempty.dtype", f"dtype {ctx.attr('dtype')} is not a tensor element type",
                        "set dtype to a TensorProto data type")
    _set_seq(ctx, 0, SeqInfo(0, None, dt if dt is not None else ir.DataType.FLOAT, ()))


@register("", "SequenceConstruct", since_version=11)
def sequence_construct(ctx):
    n = ctx.num_inputs
    if n < 1 or not all(ctx.has_input(i) for i in range(n)):
        ctx.invalid("sequenceconstruct.arity", f"SequenceConstruct takes one or more tensors, none omitted; the node "
                    f"has {sum(1 for i in range(n) if ctx.has_input(i))} of {n}", "give every input a tensor")
    elems = [_canon_info(ctx, ctx.input(i)) for i in range(n)]
    bad = [i for i, t in enumerate(elems) if t.seq is not None]
    if bad:
        ctx.invalid("sequenceconstruct.tensor", f"input {bad[0]} is a sequence or optional: SequenceConstruct "
                    "takes tensors", f"give input {bad[0]} a tensor")
    # (inputs of different element types: the schema's check, T is one type for all)
    first = next((t.dtype for t in elems if t.dtype is not None), None)
    _set_seq(ctx, 0, _from_elems(elems, first))


@register("", "SplitToSequence", since_version=11)
@register("", "SplitToSequence", since_version=24)
def split_to_sequence(ctx):
    """Chunks of ``split`` (scalar; the last one may be shorter) or of the sizes in a 1-D
    ``split`` (summing to the axis size); without ``split``, chunks of 1 (axis removed
    when keepdims=0)."""
    ctx.check_inputs(1, 2)
    x = ctx.shape(0)
    dt = ctx.dtype(0)
    axis = int(ctx.attr("axis", 0))
    keepdims = int(ctx.attr("keepdims", 1))
    if x is None:
        if ctx.has_input(1) and ctx.rank(1) == 1:
            n = ctx.shape(1)[0]
            _set_seq(ctx, 0, SeqInfo(n, None, dt))
        else:
            _set_seq(ctx, 0, SeqInfo(None, None, dt))
        return
    ax = norm_axis(ctx, axis, len(x))
    d = x[ax]

    def with_axis(size):
        return tuple(x[:ax]) + (size,) + tuple(x[ax + 1:])

    if not ctx.has_input(1):
        shape = tuple(x[:ax]) + tuple(x[ax + 1:]) if keepdims == 0 else with_axis(1)
        elems = None
        if isinstance(d, int) and d <= MAX_ELEMS:
            elems = tuple(TensorInfo(shape, dt) for _ in range(d))
        _set_seq(ctx, 0, SeqInfo(d, shape, dt, elems))
        return
    rs = ctx.shape(1)
    if rs is not None and len(rs) > 1:
        ctx.invalid("splittosequence.split", f"split must be a scalar or 1-D, has rank {len(rs)}",
                    "give split as a scalar chunk size or a 1-D list of sizes")
    v = ctx.value(1)
    if rs is not None and len(rs) == 1:
        n = rs[0]
        sizes = [E.norm(s) if s is not None else None for s in v] if v is not None else None
        if sizes is not None and all(s is not None for s in sizes):
            for k, s in enumerate(sizes):
                ctx.require(ge(s, 0), "splittosequence.sizes", f"split entry {k} ({_s(s)}) must be >= 0")
            ctx.equal(E.total(sizes), d, "splittosequence.sum",
                      f"split sizes sum to {_s(E.total(sizes))}, must equal axis {ax} size {_s(d)}")
            elems = tuple(TensorInfo(with_axis(s), dt) for s in sizes)
            _set_seq(ctx, 0, _from_elems(elems, dt))
        else:
            _set_seq(ctx, 0, SeqInfo(n, with_axis(None), dt))
        return
    # scalar split (or rank unknown: then only a known single value is used)
    s = v[0] if v is not None and len(v) == 1 and v[0] is not None else None
    if s is None:
        _set_seq(ctx, 0, SeqInfo(None, with_axis(None) if rs is not None else None, dt))
        return
    s = E.norm(s)
    ctx.require(gt(s, 0), "splittosequence.chunk", f"split {_s(s)} must be positive")
    n = E.ceildiv(d, s)
    if isinstance(d, int) and isinstance(s, int) and s > 0 and n <= MAX_ELEMS:
        elems = tuple(TensorInfo(with_axis(min(s, d - k * s)), dt) for k in range(n))
        _set_seq(ctx, 0, _from_elems(elems, dt))
        return
    _set_seq(ctx, 0, SeqInfo(n, with_axis(1 if s == 1 else None), dt))


# ---------------------------------------------------------------- access and edits
@register("", "SequenceLength", since_version=11)
def sequence_length(ctx):
    ctx.check_inputs(1, 1)
    n = _seq(ctx, 0).length
    if n is None:
        n = ctx.data_symbol("seq_len", None, "length of a sequence the analysis does not track")
    ctx.set_output(0, (), INT64, value=(ctx.store.canon(n),))


@register("", "SequenceAt", since_version=11)
def sequence_at(ctx):
    ctx.check_inputs(2, 2)
    sq = _seq(ctx, 0)
    pos = _scalar_position(ctx, 1)
    n = None if sq.length is None else ctx.store.canon(sq.length)
    _position_in_range(ctx, pos, n, False, "sequenceat.position", "SequenceAt")
    t = _elem_tensor(ctx, sq, _index(pos, n), "sequenceat")
    ctx.set_output(0, t.shape, t.dtype, t.value, t.const, t.tensor)


@register("", "SequenceInsert", since_version=11)
def sequence_insert(ctx):
    ctx.check_inputs(2, 3)
    sq = _seq(ctx, 0)
    t = _canon_info(ctx, ctx.input(1))
    if sq.elem_dtype is not None and t.dtype is not None and sq.elem_dtype != t.dtype:
        ctx.invalid("sequenceinsert.dtype", f"the tensor is {t.dtype.name} but the sequence holds "
                    f"{sq.elem_dtype.name}: they must have the same element type",
                    f"cast the tensor to {sq.elem_dtype.name}")
    dt = sq.elem_dtype or t.dtype
    n = None if sq.length is None else ctx.store.canon(sq.length)
    pos = _scalar_position(ctx, 2) if ctx.has_input(2) else n
    if ctx.has_input(2):
        _position_in_range(ctx, pos, n, True, "sequenceinsert.position", "SequenceInsert")
    k = _index(pos, n, insert=True)
    if sq.elems is not None and k is not None:
        elems = list(sq.elems)
        elems.insert(k, t)
        _set_seq(ctx, 0, _from_elems(elems, dt))
        return
    shape = t.shape if n == 0 else _merge(_canon_elem_shape(ctx, sq.elem_shape), t.shape)
    _set_seq(ctx, 0, SeqInfo(None if n is None else E.add(n, 1), shape, dt))


@register("", "SequenceErase", since_version=11)
def sequence_erase(ctx):
    ctx.check_inputs(1, 2)
    sq = _seq(ctx, 0)
    n = None if sq.length is None else ctx.store.canon(sq.length)
    pos = _scalar_position(ctx, 1) if ctx.has_input(1) else -1
    if n is not None:
        _position_in_range(ctx, pos, n, False, "sequenceerase.position", "SequenceErase")
    k = _index(pos, n)
    if sq.elems is not None and k is not None:
        elems = list(sq.elems)
        del elems[k]
        _set_seq(ctx, 0, _from_elems(elems, sq.elem_dtype))
        return
    _set_seq(ctx, 0, SeqInfo(None if n is None else E.sub(n, 1), sq.elem_shape, sq.elem_dtype))


@register("", "ConcatFromSequence", since_version=11)
def concat_from_sequence(ctx):
    """new_axis=0: Concat of the elements (non-axis dims agree; axis = sum); new_axis=1:
    stack (every element has the same shape; a new axis of the sequence length)."""
    ctx.check_inputs(1, 1)
    sq = _seq(ctx, 0)
    axis = int(ctx.require_attr("axis"))
    new_axis = int(ctx.attr("new_axis", 0))
    if new_axis not in (0, 1):
        ctx.invalid("concatfromsequence.new_axis", f"new_axis must be 0 or 1, is {new_axis}",
                    "set new_axis to 0 (concatenate) or 1 (stack)")
    dt = sq.elem_dtype
    n = None if sq.length is None else ctx.store.canon(sq.length)
    if n is not None:
        # onnxruntime refuses an empty sequence ("Must have 1 or more inputs")
        ctx.require(ge(n, 1), "concatfromsequence.nonempty",
                    f"the sequence must not be empty (onnxruntime), has length {_s(n)}")
    if sq.elems is not None:
        shapes = [_canon_info(ctx, t).shape for t in sq.elems]
        if not shapes or any(s is None for s in shapes):
            ctx.set_output(0, None, dt)
            return
        r = len(shapes[0])
        if any(len(s) != r for s in shapes):
            j = next(j for j, s in enumerate(shapes) if len(s) != r)
            # "All input tensors must have the same shape, except for the dimension size of
            # the axis to concatenate on" (onnxruntime and the reference evaluator refuse it)
            ctx.invalid("concatfromsequence.rank", f"sequence element {j} has rank {len(shapes[j])}, element 0 "
                        f"rank {r}: the elements must have the same shape but on the concatenation axis",
                        "give every element of the sequence the same rank")
        ax = norm_axis(ctx, axis, r + new_axis)
        out = list(shapes[0])
        for j, s in enumerate(shapes[1:], 1):
            for k in range(r):
                if new_axis or k != ax:
                    out[k] = unify(ctx, out[k], s[k], "concatfromsequence.dims",
                                   lambda j=j, k=k, a=out[k], b=s[k]:
                                   f"sequence elements 0 and {j} must agree on axis {k} (all but the "
                                   f"{'stacking' if new_axis else 'concatenation'} axis): {_s(a)} vs {_s(b)}")
        if new_axis:
            out.insert(ax, len(shapes))
        else:
            out[ax] = E.total(s[ax] for s in shapes)
        ctx.set_output(0, out, dt)
        return
    es = _canon_elem_shape(ctx, sq.elem_shape)
    if es is None:
        ctx.set_output(0, None, dt)
        return
    ax = norm_axis(ctx, axis, len(es) + new_axis)
    out = [ctx.unknown_dim(f"concatfromsequence_d{k}") if d is None else d for k, d in enumerate(es)]
    length = n if n is not None else ctx.data_symbol("seq_len", None, "length of a sequence the analysis does not track")
    if new_axis:
        out.insert(ax, length)
    else:
        # every element has this axis size when it is common; otherwise only run time knows
        out[ax] = E.mul(length, es[ax]) if es[ax] is not None else ctx.unknown_dim("concatfromsequence_axis")
    ctx.set_output(0, out, dt)


# ---------------------------------------------------------------- SequenceMap
@register("", "SequenceMap", since_version=17)
def sequence_map(ctx):
    """Runs ``body`` once per element.  With every element known (and few), the body is
    walked once per element in the model's store: each walk is a run that happens.
    Otherwise it is walked once in a scratch store on a generic element (axes where the
    elements differ become fresh symbols there); an output dim that mentions anything made
    in that walk differs per element (None), the rest holds for every element."""
    from .control import _foreign, _graph_attr, _report_fork, _reserve_names, _walk
    body = _graph_attr(ctx, "body")
    if ctx.num_inputs < 1 or not ctx.has_input(0):
        ctx.invalid("sequencemap.arity", "SequenceMap's first input, the sequence to map, is missing",
                    "give the node an input sequence first")
    if len(body.inputs) != ctx.num_inputs:
        ctx.invalid("sequencemap.body_inputs", f"the body has {len(body.inputs)} inputs but the node has "
                    f"{ctx.num_inputs}", "give the body one input per input of the node")
    if len(body.outputs) != ctx.num_outputs:
        ctx.invalid("sequencemap.body_outputs", f"the body has {len(body.outputs)} outputs but the node has "
                    f"{ctx.num_outputs}", "give the body one output per output of the node")
    t0 = ctx.input(0)
    if t0 is not None and t0.seq is None and t0.shape is not None:
        ctx.invalid("sequencemap.sequence", "SequenceMap's first input is a tensor, must be a sequence",
                    "give the node a sequence as its first input")
    ins = [ctx.input(i) for i in range(ctx.num_inputs)]
    seqs = {0: _info_seq(ins[0])}
    for i in range(1, ctx.num_inputs):
        if ins[i] is not None and (ins[i].seq is not None or isinstance(ctx.inputs[i].type, ir.SequenceType)):
            seqs[i] = _info_seq(ins[i])
    lengths = [None if s.length is None else ctx.store.canon(s.length) for s in seqs.values()]
    n = lengths[0]
    for i, m in zip(list(seqs)[1:], lengths[1:]):
        if m is None:
            continue
        if n is None:
            n = m
        else:
            ctx.equal(n, m, "sequencemap.length",
                      f"input sequence {i} has length {_s(m)}, the first input sequence {_s(n)}")
    eng = ctx.engine
    dtypes = [None] * ctx.num_outputs
    if isinstance(n, int) and n <= MAX_MAP_WALKS and all(s.elems is not None and len(s.elems) == n
                                                          for s in seqs.values()):
        per_out = [[] for _ in range(ctx.num_outputs)]
        for k in range(n):
            for i in range(ctx.num_inputs):
                v = body.inputs[i]
                if i in seqs:
                    eng.values[v] = _canon_info(ctx, seqs[i].elems[k])
                else:
                    eng.values[v] = ins[i] if ins[i] is not None else TensorInfo()
            _walk(ctx, body, ctx.store)
            for q, o in enumerate(body.outputs):
                t = eng.values.get(o) or TensorInfo(None, o.dtype)
                per_out[q].append(_canon_info(ctx, t))
        for q in range(ctx.num_outputs):
            dt = next((t.dtype for t in per_out[q] if t.dtype is not None), body.outputs[q].dtype)
            _set_seq(ctx, q, _from_elems(per_out[q], dt))
        return
    known = set(ctx.store.symbols)
    sc = ctx.store.fork()
    prov = ctx.provenance("sequencemap.data", "an axis where the elements of a mapped sequence differ")
    for i in range(ctx.num_inputs):
        v = body.inputs[i]
        if i in seqs:
            es = seqs[i].elem_shape
            shape = None if es is None else tuple(
                sc.new_data(f"seqmap_in{i}_d{a}", prov) if d is None else ctx.store.canon(d)
                for a, d in enumerate(es))
            eng.values[v] = TensorInfo(shape, seqs[i].elem_dtype)
        else:
            eng.values[v] = ins[i] if ins[i] is not None else TensorInfo()
    _walk(ctx, body, sc)
    _reserve_names(ctx, sc)
    _report_fork(ctx, sc, "the body")
    for q, o in enumerate(body.outputs):
        t = eng.values.get(o) or TensorInfo(None, o.dtype)
        shape = None
        if t.shape is not None:
            shape = tuple(None if _foreign(ctx, sc.canon(d), known) else sc.canon(d) for d in t.shape)
            # a dim the scratch walk rewrote in terms of older symbols is still a fact only
            # about the elements (the body runs on every one of them), so it is kept
        dtypes[q] = t.dtype or o.dtype
        _set_seq(ctx, q, SeqInfo(n, shape, dtypes[q]))


# ---------------------------------------------------------------- optionals
def _type_content(ctx, tp) -> TensorInfo:
    """The would-be content of an empty optional, from its ``type`` attribute (a TypeProto
    read from the file, or onnx_ir's ``TypeAndShape``): element type and declared shape (a
    dim that is not a number is an UNKNOWN dim: the optional holds nothing)."""
    def dims(shape):
        if shape is None:
            return None
        return tuple(d if isinstance(d, int) else ctx.unknown_dim("optional_d") for d in shape)

    if hasattr(tp, "WhichOneof"):            # TypeProto
        kind = tp.WhichOneof("value")
        if kind == "tensor_type":
            tt = tp.tensor_type
            shape = None if not tt.HasField("shape") else \
                [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            return TensorInfo(dims(shape), _dt(tt.elem_type))
        if kind == "sequence_type" and tp.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
            tt = tp.sequence_type.elem_type.tensor_type
            shape = None if not tt.HasField("shape") else \
                tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
            return TensorInfo(seq=SeqInfo(None, shape, _dt(tt.elem_type)))
        return TensorInfo()
    typ, shape = getattr(tp, "type", tp), getattr(tp, "shape", None)
    shape = None if shape is None else [d if isinstance(d, int) else None for d in shape]
    if isinstance(typ, ir.SequenceType):
        return TensorInfo(seq=SeqInfo(None, None if shape is None else tuple(shape),
                                      getattr(typ.elem_type, "dtype", None)))
    if isinstance(typ, ir.TensorType):
        return TensorInfo(dims(shape), typ.dtype)
    return TensorInfo()


def _dt(code):
    try:
        return ir.DataType(int(code)) if code else None
    except ValueError:
        return None


@register("", "Optional", since_version=15)
@register("", "Optional", since_version=28)
def optional(ctx):
    ctx.check_inputs(0, 1)
    if ctx.has_input(0):
        content = _canon_info(ctx, ctx.input(0))
        _set_seq(ctx, 0, SeqInfo(1, None, None, (content,), optional=True))
        return
    tp = ctx.attr("type", None)
    if tp is None:
        ctx.invalid("optional.type", "an Optional with no input needs the 'type' attribute",
                    "give the node an input or its 'type' attribute")
    _set_seq(ctx, 0, SeqInfo(0, None, None, (_type_content(ctx, tp),), optional=True))


def _kind(ctx, i):
    """'optional', 'value' (a tensor or sequence, not optional) or None (unknown)."""
    t = ctx.input(i)
    if t is not None and t.seq is not None:
        return "optional" if t.seq.optional else "value"
    if t is not None and t.shape is not None:
        return "value"
    typ = getattr(ctx.inputs[i], "type", None)
    if isinstance(typ, ir.OptionalType):
        return "optional"
    if isinstance(typ, (ir.TensorType, ir.SequenceType)):
        return "value"
    return None


@register("", "OptionalHasElement", since_version=15)
@register("", "OptionalHasElement", since_version=18)
@register("", "OptionalHasElement", since_version=28)
def optional_has_element(ctx):
    """Opset 15: the input is an optional.  Opset 18+: also a tensor or sequence (true), or
    omitted (false)."""
    v18 = (ctx.opset or 99) >= 18
    ctx.check_inputs(0 if v18 else 1, 1)
    has = None
    if not ctx.has_input(0):
        has = False
    else:
        kind = _kind(ctx, 0)
        if kind == "optional":
            n = _seq(ctx, 0).length
            has = None if n is None else bool(n)
        elif kind == "value":
            if not v18:
                ctx.invalid("optionalhaselement.input", "OptionalHasElement before opset 18 takes an optional, "
                            "the input is a tensor or sequence", "wrap the input in Optional, or use opset 18")
            has = True
    ctx.set_output(0, (), BOOL, value=(has,))


@register("", "OptionalGetElement", since_version=15)
@register("", "OptionalGetElement", since_version=18)
@register("", "OptionalGetElement", since_version=28)
def optional_get_element(ctx):
    """The optional's content (it is a run-time error when empty); opset 18+: a tensor or
    sequence input is returned as it is."""
    ctx.check_inputs(1, 1)
    kind = _kind(ctx, 0)
    t = ctx.input(0)
    if kind == "optional":
        sq = _seq(ctx, 0)
        if sq.length == 0:
            # "It is an error if the input value does not have any element"
            ctx.invalid("optionalgetelement.empty", "the optional is empty: OptionalGetElement has no element "
                        "to return", "check OptionalHasElement first, or give the optional a value")
        content = sq.elems[0] if sq.elems else TensorInfo(None, sq.elem_dtype)
        _set_info(ctx, 0, _canon_info(ctx, content))
        return
    if kind == "value":
        if (ctx.opset or 99) < 18:
            ctx.invalid("optionalgetelement.input", "OptionalGetElement before opset 18 takes an optional, the "
                        "input is a tensor or sequence", "wrap the input in Optional, or use opset 18")
        _set_info(ctx, 0, _canon_info(ctx, t))
        return
    # unknown kind: the output's declared dtype at most
    ctx.set_output(0, None, ctx.node.outputs[0].dtype)
