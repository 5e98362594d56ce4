"""Indexing ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements, Scatter,
OneHot, Compress, NonZero, TopK, Unique, NonMaxSuppression.

Data-dependent output sizes (NonZero counts, Compress / Unique lengths, a
runtime TopK k, NonMaxSuppression selections) are data symbols with the
tightest upper bound the semantics give; the result reports them as
UPPER_BOUND unless the store proves them equal to an input expression.
``smtshape.bounds.upper_bound_over`` reads such a bound through the terms
consumers build (``min(80, n)``, sums, products, divisions, Piecewise).
"""
from __future__ import annotations

import math

from .. import expr as E
from .. import irtypes as ir
from ..lazy import imported, sympy
from ..lazy import numpy as np
from ..constraints import all_of, any_of, eq, ge, le, lt
from ..context import MAX_VALUE_ELEMENTS, element_kind
from ..printing import show
from ..registry import register
from .common import norm_axis, numel
from .values import flat_values, ints_of, obj_array

INT64 = ir.DataType.INT64
# constants with more elements than this are never read (NonZero / Unique of a weight:
# data symbols bounded by the size instead); a one-element read checks the size first
MAX_KNOWN_ARRAY = 1 << 16


def _static_numel(shape):
    """The element count of a static shape, None when not static."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    n = 1
    for d in shape:
        n *= d
    return n


def _one_element(t) -> bool:
    """Does TensorInfo ``t`` hold exactly one element (a static shape says so)?"""
    return t is not None and _static_numel(t.shape) == 1


def _int(v):
    """A plain int for a known element (int / bool / numpy scalar / integer sympy), else None."""
    if isinstance(v, int):               # (bool included)
        return int(v)
    if imported(np) and isinstance(v, (np.bool_, np.integer)):
        return int(v)
    if imported(sympy) and isinstance(v, sympy.Integer):
        return int(v)
    return None


def _scalar_input(ctx, i):
    """The single element of input ``i`` (int or sympy int expression), or None when unknown.

    Reads ``ctx.value`` first (Shape chains, int constants) and falls back to a
    constant of any dtype (float depth for OneHot)."""
    v = ctx.value(i)
    if v is not None and len(v) == 1 and element_kind(v[0]) == "int":
        return _int(v[0]) if _int(v[0]) is not None else v[0]
    if not _one_element(ctx.input(i)):
        return None     # never read a large constant for one element
    c = ctx.const(i)
    if c is not None and c.size == 1:
        x = c.reshape(-1)[0]
        try:
            if np.issubdtype(c.dtype, np.floating):
                if not np.isfinite(x):
                    return None
            return int(x)
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _same_rank(ctx, i, j, rule, what_i, what_j):
    ri, rj = ctx.rank(i), ctx.rank(j)
    if ri is not None and rj is not None and ri != rj:
        ctx.require(eq(ri, rj), rule, f"{what_i} rank {ri} must equal {what_j} rank {rj}")
        return False
    return True


# ---------------------------------------------------------------- index bounds
# Index elements the analysis knows: a value (every element an int or a dim expression),
# or the exact min / max of a tensor built from a Range by element-preserving ops.

# ops whose output holds exactly the elements of input 0 (when the output is non-empty)
_SAME_ELEMENTS = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand", "Tile", "Transpose"}
_MAX_ELEMENT_CHECKS = 64


def _int_elem(v):
    """An element as int / integer dim expression, else None (bools, floats, unknown)."""
    return v if element_kind(v) == "int" else None


def _info_scalar(ctx, v):
    """The single int / expr element of graph value ``v`` (any producer), or None."""
    if v is None:
        return None
    t = ctx.engine.info(v)
    if t.value is not None and len(t.value) == 1:
        x = _int_elem(t.value[0])
        if x is not None:
            return ctx.store.canon(_int(x) if _int(x) is not None else x)
    if not _one_element(t):
        return None     # never read a large constant for one element
    c = t.array()
    if c is not None and c.size == 1 and c.dtype.kind in "iu":
        return int(c.reshape(-1)[0])
    return None


def element_range(ctx, v, depth: int = 0):
    """(lo, hi): the exact minimum and maximum element of graph value ``v`` whenever
    ``v`` is non-empty, or None when not known.  Follows Range (integer step) through
    element-preserving ops (Unsqueeze, Reshape, Expand, Cast to an integer type, ...)
    and shifts by a one-element Add / Sub operand."""
    if v is None or depth > 16:
        return None
    t = ctx.engine.info(v)
    if t.value is not None and t.value and len(t.value) <= MAX_ELEMENTS_FOR_RANGE:
        xs = [_int(x) for x in t.value]
        if all(x is not None for x in xs):
            return (min(xs), max(xs))
    node = v.producer()
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    ctx.not_cacheable()       # the answer depends on the graph upstream, not only on the inputs
    op = node.op_type
    ins = node.inputs
    if op == "Range" and len(ins) == 3:
        start, limit, delta = (_info_scalar(ctx, x) for x in ins)
        if None in (start, limit) or not isinstance(delta, int) or delta == 0:
            return None
        if delta == 1:
            return (start, E.sub(limit, 1))
        if delta > 0:
            last = E.add(start, E.mul(E.sub(E.ceildiv(E.sub(limit, start), delta), 1), delta))
            return (start, last)
        last = E.sub(start, E.mul(E.sub(E.ceildiv(E.sub(start, limit), -delta), 1), -delta))
        return (last, start)
    if op in _SAME_ELEMENTS and ins and ins[0] is not None:
        return element_range(ctx, ins[0], depth + 1)
    if op == "Cast" and ins and ins[0] is not None:
        a = node.attributes.get("to")
        if a is None or a.value is None or ir.DataType(a.value) not in (ir.DataType.INT64, ir.DataType.INT32):
            return None
        src = ctx.engine.info(ins[0]).dtype
        if src not in ir.INTEGER_TYPES:
            return None
        r = element_range(ctx, ins[0], depth + 1)
        if r is None or (ir.DataType(a.value) == ir.DataType.INT32 and src not in (
                ir.DataType.INT32, ir.DataType.INT16, ir.DataType.INT8, ir.DataType.UINT16, ir.DataType.UINT8)):
            return None      # a narrowing cast may wrap
        return r
    if op in ("Add", "Sub") and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
        for k in (0, 1):
            if k == 1 and op == "Sub":
                break
            other = ins[1 - k]
            c = _info_scalar(ctx, other)
            if c is None:
                continue
            r = element_range(ctx, ins[k], depth + 1)
            if r is None:
                continue
            if op == "Add":
                return (E.add(r[0], c), E.add(r[1], c))
            return (E.sub(r[0], c), E.sub(r[1], c))
        return None
    return None


MAX_ELEMENTS_FOR_RANGE = 4096


def index_bound(ctx, i: int, size, axis: int, rule: str, what: str = "index", negative: bool = True):
    """Emit ``-size <= idx < size`` (``0 <= idx < size`` when ``negative`` is False) for
    every element of input ``i`` the analysis knows.  A static violation is a conflict
    naming the node, the index and the axis size.  Returns True when an element is
    statically out of range."""
    lo_ok = E.neg(size) if negative else 0
    v = ctx.value(i)
    rng = "[-size, size - 1]" if negative else "[0, size - 1]"
    bad = False
    if v is not None and any(_int_elem(x) is not None for x in v):
        # every known element must be in range (unknown ones are skipped)
        xs = [_int(x) if _int(x) is not None else x for x in v if _int_elem(x) is not None]
        ints = [x for x in xs if isinstance(x, int)]
        syms = list(dict.fromkeys(x for x in xs if not isinstance(x, int)))
        checks = []
        if ints:
            checks += [min(ints), max(ints)] if min(ints) != max(ints) else [min(ints)]
        checks += syms[:_MAX_ELEMENT_CHECKS]
        for x in checks:
            c = ctx.require(all_of(ge(x, lo_ok), lt(x, size)), rule,
                            lambda: f"{what} {show(x)} must be within {rng} of axis {axis} "
                                    f"(size {show(size)}): [{show(lo_ok)}, {show(E.sub(size, 1))}]")
            bad = bad or c.status == "conflict"
        return bad
    if i >= ctx.num_inputs or ctx.inputs[i] is None:
        return False
    r = element_range(ctx, ctx.inputs[i])
    if r is None:
        return False
    lo, hi = (ctx.store.canon(x) for x in r)
    shp = ctx.shape(i)
    n = numel(shp) if shp is not None else None
    rel = all_of(ge(lo, lo_ok), lt(hi, size))
    if n is not None and n != 1 and not (isinstance(n, int) and n > 0):
        rel = any_of(eq(n, 0), rel)
    c = ctx.require(rel, rule, f"{what} values range over [{show(lo)}, {show(hi)}]; they must be within "
                                f"{rng} of axis {axis} (size {show(size)})")
    return c.status == "conflict"


# ---------------------------------------------------------------- Gather

@register("", "Gather", since_version=1)
def gather(ctx):
    ctx.check_inputs(2, 2)
    ds, isx = ctx.shape(0), ctx.shape(1)
    dtype = ctx.dtype(0)
    if ds is not None and len(ds) == 0:
        ctx.invalid("gather.data_rank", "Gather's data is a scalar (rank 0); it must have rank >= 1 to index an axis",
                    "gather from a tensor of rank >= 1")
    if ds is None or isx is None:
        if ds is not None:
            norm_axis(ctx, int(ctx.attr("axis", 0)), len(ds))
        ctx.set_output(0, None, dtype)
        return
    r = len(ds)
    ax = norm_axis(ctx, int(ctx.attr("axis", 0)), r)
    out = list(ds[:ax]) + list(isx) + list(ds[ax + 1:])
    value = None
    bad = index_bound(ctx, 1, ds[ax], ax, "gather.index_bound", "Gather index")
    ind = ints_of(ctx, 1, "indices")
    if ind is not None and isinstance(ds[ax], int) and not bad \
            and all(isinstance(d, int) for d in out) and math.prod(out) <= MAX_VALUE_ELEMENTS:
        n = ds[ax]
        v = ctx.value(0)
        if r == 1 and v is not None and len(v) == n:
            # a shape vector's elements picked (the exporters' Shape -> Gather): no numpy
            value = tuple([v[i + n if i < 0 else i] for i in ind])
        else:
            arr = obj_array(ctx, 0)
            if arr is not None:
                picked = np.take(arr, np.array([i + n if i < 0 else i for i in ind],
                                                dtype=np.int64).reshape(isx), axis=ax)
                value = flat_values(picked)
    ctx.set_output(0, out, dtype, value=value)


# ---------------------------------------------------------------- GatherElements
@register("", "GatherElements", since_version=11)
def gather_elements(ctx):
    ctx.check_inputs(2, 2)
    ds, ids = ctx.shape(0), ctx.shape(1)
    r = len(ds) if ds is not None else (len(ids) if ids is not None else None)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), r)
    _same_rank(ctx, 0, 1, "gatherelements.rank", "data", "indices")
    if ds is not None and ids is not None and len(ds) == len(ids):
        for k, (d, i) in enumerate(zip(ds, ids)):
            if k == axis:
                continue
            ctx.require(le(i, d), "gatherelements.dims",
                        f"indices axis {k} ({show(i)}) must not exceed data axis {k} ({show(d)})")
    if ds is not None and axis < len(ds):
        index_bound(ctx, 1, ds[axis], axis, "gatherelements.index_bound", "GatherElements index")
    ctx.set_output(0, ids, ctx.dtype(0))


# ---------------------------------------------------------------- GatherND
def _gather_nd(ctx, batch_dims: int):
    ctx.check_inputs(2, 2)
    ds, ids = ctx.shape(0), ctx.shape(1)
    b = int(batch_dims)
    if b < 0:
        ctx.invalid("gathernd.batch_dims", f"batch_dims is {b}; it must be >= 0", "give batch_dims >= 0")
    for s, what in ((ds, "data"), (ids, "indices")):
        if s is not None and len(s) < 1:
            ctx.invalid("gathernd.rank", f"GatherND's {what} is a scalar (rank 0); it must have rank >= 1",
                        f"give GatherND {what} of rank >= 1")
    for s, what in ((ds, "data"), (ids, "indices")):
        if s is not None and b >= len(s):
            ctx.invalid("gathernd.batch_dims", f"batch_dims {b} is not below the {what} rank {len(s)}",
                        f"give batch_dims < {len(s)}")
    if ds is not None and ids is not None:
        for k in range(b):
            ctx.equal(ds[k], ids[k], "gathernd.batch_dims",
                      f"batch axis {k}: data ({show(ds[k])}) and indices ({show(ids[k])}) must be equal")
    if ds is None or ids is None:
        return ctx.set_output(0, None, ctx.dtype(0))
    m = ctx.store.canon(ids[-1])
    if not isinstance(m, int):
        m = ctx.store.static_value(m)
    if m is None:
        last = ctx.store.canon(ids[-1])
        ctx.require(all_of(ge(last, 1), le(last, len(ds) - b)), "gathernd.index_depth",
                    f"indices' last dim {show(last)} is within [1, data rank {len(ds)} - batch_dims {b}]")
        return ctx.set_output(0, None, ctx.dtype(0))
    if m < 1 or b + m > len(ds):
        ctx.invalid("gathernd.index_depth", f"indices' last dim is {m}; it must be within [1, data rank "
                    f"{len(ds)} - batch_dims {b}] = [1, {len(ds) - b}]",
                    "give each index tuple between 1 and rank(data) - batch_dims components")
    _nd_index_bounds(ctx, ds, ids, b, m, "gathernd.index_bound")
    ctx.set_output(0, tuple(ids[:-1]) + tuple(ds[b + m:]), ctx.dtype(0))


def _nd_index_bounds(ctx, ds, ids, b, m, rule):
    """Each known index tuple's component k must lie in [-d, d - 1], d = data axis b + k."""
    v = ctx.value(1)
    if v is None or not isinstance(m, int) or m < 1 or b + m > len(ds) or len(v) % m:
        return
    for k in range(m):
        col = v[k::m]
        xs = [_int(x) if _int(x) is not None else x for x in col if element_kind(x) == "int"]
        ints = [x for x in xs if isinstance(x, int)]
        checks = sorted({min(ints), max(ints)}) if ints else []
        checks += list(dict.fromkeys(x for x in xs if not isinstance(x, int)))[:_MAX_ELEMENT_CHECKS]
        size = ds[b + k]
        for x in checks:
            ctx.require(all_of(ge(x, E.neg(size)), lt(x, size)), rule,
                        f"{ctx.op_type} index component {k} ({show(x)}) must be within [-size, size - 1] "
                        f"of data axis {b + k} (size {show(size)})")


@register("", "GatherND", since_version=11)
def gather_nd_11(ctx):
    _gather_nd(ctx, 0)


@register("", "GatherND", since_version=12)
def gather_nd_12(ctx):
    _gather_nd(ctx, ctx.attr("batch_dims", 0))


# ---------------------------------------------------------------- Scatter family
def _check_reduction(ctx):
    """ScatterND / ScatterElements ``reduction``: none, add, mul (opset 16), max, min (opset 18)."""
    red = ctx.attr("reduction", "none")
    if isinstance(red, bytes):
        red = red.decode()
    allowed = ("none", "add", "mul", "max", "min") if (ctx.opset or 18) >= 18 else ("none", "add", "mul")
    if red not in allowed:
        ctx.invalid(f"{ctx.op_type.lower()}.reduction", f"reduction {red!r} is not one of {', '.join(allowed)} "
                    f"(opset {ctx.opset})", f"give reduction one of {', '.join(allowed)}")


@register("", "ScatterND", since_version=11)
def scatter_nd(ctx):
    ctx.check_inputs(3, 3)
    ds, ids, us = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    _check_reduction(ctx)
    for sh, what in ((ds, "data"), (ids, "indices")):
        if sh is not None and len(sh) < 1:
            ctx.invalid("scatternd.rank", f"ScatterND's {what} is a scalar (rank 0); it must have rank >= 1",
                        f"give ScatterND {what} of rank >= 1")
    if ds is not None and ids is not None:
        m = ctx.store.canon(ids[-1])
        if not isinstance(m, int):
            ctx.require(le(m, len(ds)), "scatternd.index_depth",
                        f"indices last dim {show(m)} must not exceed data rank {len(ds)}")
        else:
            ctx.require(le(m, len(ds)), "scatternd.index_depth",
                        f"indices last dim {m} must not exceed data rank {len(ds)}")
            if m <= len(ds) and us is not None:
                want = tuple(ids[:-1]) + tuple(ds[m:])
                if len(us) != len(want):
                    ctx.require(eq(len(us), len(want)), "scatternd.updates_rank",
                                f"updates rank {len(us)} must be indices rank - 1 + data rank - {m} = {len(want)}")
                else:
                    for k, (u, w) in enumerate(zip(us, want)):
                        ctx.equal(u, w, "scatternd.updates_shape",
                                  f"updates axis {k} ({show(u)}) must equal {show(w)} "
                                  f"(indices.shape[:-1] + data.shape[{m}:])")
            if m <= len(ds):
                _nd_index_bounds(ctx, ds, ids, 0, m, "scatternd.index_bound")
    ctx.set_output(0, ds, ctx.dtype(0))


def _scatter_elements(ctx):
    ctx.check_inputs(3, 3)
    ds, ids, us = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    r = next((len(s) for s in (ds, ids, us) if s is not None), None)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), r)
    _check_reduction(ctx)
    ok = _same_rank(ctx, 0, 1, f"{ctx.op_type.lower()}.rank", "data", "indices")
    ok = _same_rank(ctx, 1, 2, f"{ctx.op_type.lower()}.rank", "indices", "updates") and ok
    rid = ctx.op_type.lower()
    if ok and ids is not None and us is not None:
        for k, (i, u) in enumerate(zip(ids, us)):
            ctx.equal(i, u, f"{rid}.updates_shape",
                      f"indices axis {k} ({show(i)}) and updates axis {k} ({show(u)}) must be equal")
    if ok and ds is not None and ids is not None:
        for k, (d, i) in enumerate(zip(ds, ids)):
            if k != axis:
                ctx.require(le(i, d), f"{rid}.dims",
                            f"indices axis {k} ({show(i)}) must not exceed data axis {k} ({show(d)})")
    if ds is not None and axis < len(ds):
        index_bound(ctx, 1, ds[axis], axis, f"{rid}.index_bound", f"{ctx.op_type} index")
    ctx.set_output(0, ds, ctx.dtype(0))


register("", "ScatterElements", since_version=11)(_scatter_elements)
register("", "Scatter", since_version=9)(_scatter_elements)


# ---------------------------------------------------------------- OneHot
@register("", "OneHot", since_version=9)
def one_hot(ctx):
    ctx.check_inputs(3, 3)
    ids = ctx.shape(0)
    vs = ctx.shape(2)
    if vs is not None:
        if len(vs) != 1:
            ctx.invalid("onehot.values", f"OneHot's values has rank {len(vs)} (shape {list(vs)}); it must be a "
                        "1-D tensor of 2 elements (off, on)", "give OneHot values = [off_value, on_value]")
        if isinstance(vs[0], int) and vs[0] != 2:
            ctx.invalid("onehot.values", f"OneHot's values has {vs[0]} elements; it must hold exactly 2 (off, on)",
                        "give OneHot values = [off_value, on_value]")
        ctx.equal(vs[0], 2, "onehot.values", lambda: f"values holds 2 elements (off, on), has {show(vs[0])}")
    ds = ctx.shape(1)
    if ds is not None:
        if len(ds) > 1:
            ctx.invalid("onehot.depth", f"OneHot's depth has rank {len(ds)}; it must be a scalar or a 1-D tensor of "
                        "one element", "give OneHot a scalar depth")
        n = numel(ds)
        if isinstance(n, int) and n != 1:
            ctx.invalid("onehot.depth", f"OneHot's depth has shape {list(ds)} ({n} elements); it must hold "
                        "exactly one element", "give OneHot a scalar depth")
        ctx.equal(n, 1, "onehot.depth", lambda: f"depth holds exactly 1 element, has {show(n)}")
    if ids is not None and len(ids) < 1:
        ctx.invalid("onehot.indices", "OneHot's indices is a scalar (rank 0); it must have rank >= 1",
                    "give OneHot indices of rank >= 1")
    if (ctx.opset or 11) < 11:
        v = ctx.value(0)
        neg = sorted({_int(x) for x in v if _int(x) is not None and _int(x) < 0}) if v is not None else []
        if neg:
            ctx.invalid("onehot.indices", f"OneHot indices {neg} are below 0; before opset 11 indices must be "
                        "non-negative", "use indices >= 0, or OneHot from opset 11")
    depth = _scalar_input(ctx, 1)
    # (onnx's inference and its reference take a depth of 0; onnxruntime refuses it)
    if isinstance(depth, int) and depth < 0:
        ctx.invalid("onehot.depth", f"OneHot's depth is {depth}; the number of classes must be >= 0",
                    "give OneHot a non-negative depth")
    if ids is None:
        return ctx.set_output(0, None, ctx.dtype(2))
    r = len(ids) + 1
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), r)
    if depth is None:
        depth = ctx.data_symbol("depth", None, "OneHot depth is known only at run time")
    elif not isinstance(depth, int):
        ctx.require(ge(depth, 0), "onehot.depth", f"depth {show(depth)} is >= 0")
    out = list(ids)
    out.insert(axis, depth)
    ctx.set_output(0, out, ctx.dtype(2))


# ---------------------------------------------------------------- Compress
@register("", "Compress", since_version=9)
def compress(ctx):
    ctx.check_inputs(2, 2)
    xs, cs = ctx.shape(0), ctx.shape(1)
    if cs is not None and len(cs) != 1:
        ctx.invalid("compress.condition", f"Compress's condition has rank {len(cs)}; it must be a 1-D tensor",
                    "give Compress a 1-D condition")
    axis = ctx.attr("axis")
    if xs is None:
        n = ctx.data_symbol("compress_n", cs[0] if cs is not None else None,
                            "number of true condition entries, known only at run time")
        return ctx.set_output(0, None if axis is not None else (n,), ctx.dtype(0))
    if axis is not None:
        axis = norm_axis(ctx, int(axis), len(xs))
    dim = numel(xs) if axis is None else xs[axis]
    n = _count_true(ctx, dim)
    if n is None:
        upper = dim if cs is None else E.smin(cs[0], dim)
        n = ctx.data_symbol("compress_n", upper,
                            f"number of true condition entries within {show(dim)}, known only at run time")
    out = (n,) if axis is None else tuple(xs[:axis]) + (n,) + tuple(xs[axis + 1:])
    ctx.set_output(0, out, ctx.dtype(0))


def _count_true(ctx, dim):
    """Exact count of selected slices when the condition is known."""
    v = ctx.value(1)
    if v is None or any(_int(x) is None for x in v):
        return None
    flags = [bool(_int(x)) for x in v]
    if isinstance(dim, int):
        return sum(flags[:dim])
    if ctx.proven(le(len(flags), dim)):
        return sum(flags)
    return None


# ---------------------------------------------------------------- NonZero
@register("", "NonZero", since_version=9)
def nonzero(ctx):
    ctx.check_inputs(1, 1)
    xs = ctx.shape(0)
    if xs is not None and len(xs) == 0:
        # a scalar: onnxruntime treats it as a 1-element vector (output [1, n]), the spec and
        # onnx's reference evaluator give [0, n]: the first dim is one of the two, never
        # EXACT one way (the count is 0 or 1 either way)
        ctx.warn("NonZero of a scalar: onnxruntime gives shape [1, n], the spec and onnx's reference "
                 "evaluator [0, n]; the first dim is kept as a data symbol at most 1")
        split = ctx.data_symbol("nonzero_rank", 1, "NonZero of a scalar: 1 in onnxruntime, 0 by the spec")
        arr = _known_array(ctx, 0, xs)
        n = int(arr.reshape(-1)[0] != 0) if arr is not None else \
            ctx.data_symbol("nonzero_n", 1, "number of non-zero elements, known only at run time")
        return ctx.set_output(0, (split, n), INT64)
    rank = len(xs) if xs is not None else ctx.unknown_dim("nonzero_rank")
    arr = _known_array(ctx, 0, xs)
    if arr is not None:
        arr = arr.reshape(-1) if arr.ndim == 0 else arr
        idx = np.array(np.nonzero(arr), dtype=np.int64).reshape(arr.ndim, -1)
        from ..context import MAX_VALUE_ELEMENTS
        value = tuple(int(x) for x in idx.reshape(-1)) if idx.size <= MAX_VALUE_ELEMENTS else None
        return ctx.set_output(0, idx.shape, INT64, value=value)
    upper = numel(xs) if xs is not None else None
    n = ctx.data_symbol("nonzero_n", upper, "number of non-zero elements, known only at run time")
    ctx.set_output(0, (rank, n), INT64)


def _known_array(ctx, i, shape):
    """Input ``i`` as a numpy array when its shape is static and every element a known number."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    if _static_numel(shape) > MAX_KNOWN_ARRAY:
        return None     # a large constant is not read (its size bounds the answer instead)
    c = ctx.const(i)
    if c is not None and tuple(c.shape) == tuple(shape):
        return c
    v = ctx.value(i)
    if v is None or len(v) != int(np.prod(shape)) or any(_int(x) is None for x in v):
        return None
    return np.array([_int(x) for x in v], dtype=np.int64).reshape(shape)


# ---------------------------------------------------------------- TopK
def _topk(ctx, k):
    xs = ctx.shape(0)
    if isinstance(k, int) and k < 0:
        ctx.invalid("topk.k", f"TopK's k is {k}; it must be >= 0", "give TopK a k >= 0")
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        ctx.set_output(1, None, INT64)
        return
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), len(xs))
    dim = xs[axis]
    if k is None:
        k = ctx.data_symbol("topk_k", dim, f"TopK k on axis {axis} is known only at run time (k <= {show(dim)})")
    else:
        if not isinstance(k, int):
            ctx.require(ge(k, 0), "topk.k_nonneg", f"k ({show(k)}) must be non-negative")
        ctx.require(le(k, dim), "topk.k", f"k ({show(k)}) must not exceed axis {axis} ({show(dim)})")
    out = tuple(xs[:axis]) + (k,) + tuple(xs[axis + 1:])
    ctx.set_output(0, out, ctx.dtype(0))
    ctx.set_output(1, out, INT64)


@register("", "TopK", since_version=1)
def topk_1(ctx):
    ctx.check_inputs(1, 1)
    k = ctx.require_attr("k")
    _topk(ctx, int(k))


@register("", "TopK", since_version=10)
def topk_10(ctx):
    ctx.check_inputs(2, 2)
    ks = ctx.shape(1)
    if ks is not None:
        if len(ks) != 1:
            ctx.invalid("topk.k_shape", f"TopK's K has rank {len(ks)}; it must be a 1-D tensor of one element",
                        "give TopK K as a 1-D tensor [k]")
        if isinstance(ks[0], int) and ks[0] != 1:
            ctx.invalid("topk.k_shape", f"TopK's K has {ks[0]} elements; it must hold exactly one",
                        "give TopK K as a 1-D tensor [k]")
        ctx.equal(ks[0], 1, "topk.k_shape", f"K must hold exactly one element, has {show(ks[0])}")
    _topk(ctx, _scalar_input(ctx, 1))


# ---------------------------------------------------------------- Unique
@register("", "Unique", since_version=11)
def unique(ctx):
    ctx.check_inputs(1, 1)
    xs = ctx.shape(0)
    axis = ctx.attr("axis")
    if axis is not None and xs is not None:
        axis = norm_axis(ctx, int(axis), len(xs))
    if xs is None:
        ctx.set_output(0, None, ctx.dtype(0))
        n = ctx.unknown_dim("unique_u")
        for i in (1, 3):
            ctx.set_output(i, (n,), INT64)
        ctx.set_output(2, (ctx.unknown_dim("unique_len"),), INT64)
        return
    dim = numel(xs) if axis is None else xs[axis]
    u = _unique_count(ctx, xs, axis)
    if u is None:
        u = ctx.data_symbol("unique_u", dim, f"number of unique {'elements' if axis is None else 'slices'}, "
                            "known only at run time")
        ctx.require(any_of(eq(dim, 0), ge(u, 1)), "unique.nonempty",
                    f"a non-empty input ({show(dim)} {'elements' if axis is None else f'slices on axis {axis}'}) "
                    "has at least one unique entry")
    y = (u,) if axis is None else tuple(xs[:axis]) + (u,) + tuple(xs[axis + 1:])
    ctx.set_output(0, y, ctx.dtype(0))
    ctx.set_output(1, (u,), INT64)
    ctx.set_output(2, (dim,), INT64)
    ctx.set_output(3, (u,), INT64)


def _unique_count(ctx, xs, axis):
    arr = _known_array(ctx, 0, xs)
    if arr is None:
        return None
    if axis is None:
        return int(np.unique(arr.reshape(-1)).size)
    if arr.shape[axis] == 0:
        return 0
    return int(np.unique(arr, axis=axis).shape[axis])


# ---------------------------------------------------------------- NonMaxSuppression
@register("", "NonMaxSuppression", since_version=10)
def non_max_suppression(ctx):
    ctx.check_inputs(2, 5)
    bs, ss = ctx.shape(0), ctx.shape(1)
    for s, what in ((bs, "boxes"), (ss, "scores")):
        if s is not None and len(s) != 3:
            ctx.invalid("nms.rank", f"NonMaxSuppression's {what} has rank {len(s)}; it must have rank 3",
                        f"give {what} the shape [batches, " + ("boxes, 4]" if what == "boxes" else "classes, boxes]"))
    cpb = int(ctx.attr("center_point_box", 0))
    if cpb not in (0, 1):
        ctx.invalid("nms.center_point_box", f"center_point_box is {cpb}; it must be 0 or 1",
                    "give center_point_box 0 (corners) or 1 (center and size)")
    if bs is not None:
        ctx.equal(bs[2], 4, "nms.box_size", f"boxes axis 2 must be 4, is {show(bs[2])}")
    if bs is not None and ss is not None:
        ctx.equal(bs[0], ss[0], "nms.batches",
                  f"boxes axis 0 ({show(bs[0])}) and scores axis 0 ({show(ss[0])}) must be equal (num_batches)")
        ctx.equal(bs[1], ss[2], "nms.spatial",
                  f"boxes axis 1 ({show(bs[1])}) and scores axis 2 ({show(ss[2])}) must be equal (spatial_dimension)")
    if not ctx.has_input(2):
        return ctx.set_output(0, (0, 3), INT64)   # max_output_boxes_per_class defaults to 0
    if bs is None or ss is None:
        n = ctx.data_symbol("nms_n", None, "number of selected boxes, known only at run time")
        return ctx.set_output(0, (n, 3), INT64)
    # at most max_output_boxes_per_class (a value <= 0 selects none) and at most every box,
    # per batch and class
    spatial = ctx.store.canon(bs[1])
    mo = _scalar_input(ctx, 2)
    per_class = spatial if mo is None else E.smin(E.smax(mo, 0), spatial)
    upper = E.prod([bs[0], ss[1], per_class])
    if upper == 0:
        return ctx.set_output(0, (0, 3), INT64)
    n = ctx.data_symbol("nms_n", upper, "number of selected boxes, known only at run time")
    ctx.set_output(0, (n, 3), INT64)
