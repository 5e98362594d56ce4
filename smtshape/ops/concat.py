"""Concat and Split: the other dims shared (a Concat input with no elements has them
skipped by onnxruntime: a disjunction, never a size forced), the axis summed or
divided, the values concatenated or split."""
from __future__ import annotations

from itertools import accumulate

from ..lazy import numpy as np
from ..lazy import sympy

from .. import expr as E
from ..constraints import any_of, eq, ge
from ..context import MAX_VALUE_ELEMENTS
from ..registry import register
from .common import norm_axis, unify
from .values import flat_values, is_expr, obj_array, shaped_value, shown, sign_of, vector_len


# ================================================================ Concat

@register("", "Concat", since_version=1)
def concat(ctx):
    n = ctx.num_inputs
    if n < 1 or not all(ctx.has_input(i) for i in range(n)):
        ctx.invalid("concat.inputs", f"Concat has {sum(ctx.has_input(i) for i in range(n))} of its {n} inputs "
                    "given: every input of its variadic list must be present, and at least one",
                    "give Concat at least one input and leave none empty")
    axis = ctx.attr("axis", 1 if (ctx.opset or 4) < 4 else None)
    if axis is None:
        ctx.invalid("concat.axis_required", "Concat's required attribute 'axis' is missing")
    axis = int(axis)
    shapes = [ctx.shape(i) for i in range(n)]
    known = [(i, s) for i, s in enumerate(shapes) if s is not None]
    dtype = next((ctx.dtype(i) for i in range(n) if ctx.dtype(i) is not None), None)
    r = len(known[0][1]) if known else None
    for i, s in known:
        if len(s) != r:
            ctx.invalid("concat.rank", f"Concat input {i} has rank {len(s)} but input {known[0][0]} has rank {r}",
                        "give every Concat input the same rank")
    if r == 0:
        ctx.invalid("concat.rank", "Concat's inputs are scalars (rank 0); it joins tensors of rank >= 1 along an "
                    "axis", "unsqueeze the scalars to rank 1 first")
    if not known:
        ctx.set_output(0, None, dtype)
        return
    ax = norm_axis(ctx, axis, r)
    out = list(known[0][1])
    empty: dict = {}        # (filled when some other axis differs: most Concats never need it)
    for k in range(r):
        if k != ax and any(s[k] != out[k] for _, s in known[1:]):
            if not empty:
                empty.update((i, _empty_condition(ctx, s)) for i, s in known)
            out[k] = _concat_other_dim(ctx, known, empty, k, ax)
    if len(known) == n:
        out[ax] = E.total(s[ax] for s in shapes)
    else:
        out[ax] = ctx.data_symbol("concat_axis", None, "a Concat input has unknown rank")
    ctx.set_output(0, out, dtype, value=_concat_values(ctx, n, ax, r, shapes))


def _empty_condition(ctx, s):
    """When a tensor of shape ``s`` has no elements: True (never any), None (always some), or
    the relations ``d == 0`` over the dims that may be 0 (it is empty when one holds)."""
    if any(isinstance(d, int) and d == 0 for d in s):
        return True
    maybe = tuple(eq(d, 0) for d in s if not isinstance(d, int) and ctx.store.interval(d)[0] < 1)
    return maybe or None


def _concat_other_dim(ctx, known, empty, k, ax):
    """Output axis ``k`` (not the concat axis ``ax``) of a Concat, with its relations.

    The spec (and onnx's reference evaluator, numpy) make every input agree on it;
    onnxruntime skips an input with no elements without reading its other dims (inputs
    a[1, N, 1] and b[1, N, K] on axis 1 run at K = 0) and takes them from the first input
    that has elements (input 0 when none has).  So inputs that cannot be empty agree
    (unified); an input that may be empty agrees with them or is empty (a disjunction, never
    a forced equality); where every input may be empty, the dim is onnxruntime's "first input
    with elements", which is the spec's wherever the spec's precondition holds."""
    col = [(i, s[k]) for i, s in known]
    solid = [(i, d) for i, d in col if empty[i] is None]
    soft = [(i, d) for i, d in col if empty[i] is not None and empty[i] is not True]
    if solid:
        (i0, acc), rest = solid[0], solid[1:]
        for i, d in rest:
            a = acc
            acc = unify(ctx, a, d, "concat.dims",
                        lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                                f"{shown(a)} == {shown(d)}")
    elif soft:
        i0, acc = soft[0]
    else:
        return col[0][1]        # (every input is empty: onnxruntime takes input 0's dims)
    for i, d in soft:
        if i == i0 or d == acc:
            continue
        if isinstance(acc, int) and isinstance(d, int):
            # two different numbers: the spec's precondition fails at every input (onnx's own
            # inference refuses the model), though onnxruntime would run empty inputs
            unify(ctx, acc, d, "concat.dims",
                  lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                          f"{acc} == {d} (onnxruntime would run only inputs with no elements)")
            continue
        either = empty[i] if solid else empty[i] + tuple(z for z in empty[i0] if z not in empty[i])
        ctx.require(any_of(eq(acc, d), *either), "concat.dims",
                    lambda: f"Concat inputs {i0} and {i} agree on axis {k} (not the concat axis {ax}): "
                            f"{shown(acc)} == {shown(d)}, unless one of them has no elements (onnxruntime skips an "
                            "empty input's other dims; the spec does not)")
    if solid:
        return acc
    return _first_with_elements(ctx, soft, empty, known[0][1][k])


def _first_with_elements(ctx, soft, empty, default):
    """onnxruntime's choice for a Concat dim when every input may be empty: the dim of the
    first input with elements, input 0's (``default``) when none has.  Inputs with elements
    agree on it (the relations ``_concat_other_dim`` states), so any one of them gives it: a
    piece per distinct dim, "one of the inputs with this dim has elements", in input order;
    the default's own dim needs no piece.  Linear in the inputs (a Concat of 2,000)."""
    conds: dict = {}
    for i, d in soft:
        if d != default:
            conds.setdefault(d, []).append(sympy.And(*[sympy.Ne(E.to_sympy(z.lhs), 0) for z in empty[i]]))
    pieces = [(d, sympy.Or(*c)) for d, c in conds.items()]
    return E.raw_piecewise(*pieces, (default, True)) if pieces else default


def _concat_values(ctx, n, ax, r, shapes):
    """The known elements of a Concat's output, or None.  (Shape vectors, rank 1, are
    joined as tuples: the common case, with no numpy arrays.)"""
    if r == 1:
        vals = [ctx.value(i) for i in range(n)]
        if any(v is None or s is None or s[0] != len(v) for v, s in zip(vals, shapes)):
            return None
        out = tuple([x for v in vals for x in v])
        return out if len(out) <= MAX_VALUE_ELEMENTS else None
    arrs = [obj_array(ctx, i) for i in range(n)]
    if all(a is not None for a in arrs):
        full = [a for a in arrs if a.size]     # (an empty input adds no element, whatever its dims)
        if not full:
            return ()
        if any(a.shape[:ax] + a.shape[ax + 1:] != full[0].shape[:ax] + full[0].shape[ax + 1:] for a in full):
            return None         # (inputs that disagree: a conflict, no elements)
        return flat_values(np.concatenate(full, axis=ax))
    return None


# ================================================================ Split

def _split_sizes_given(ctx, dim, sizes, axis):
    out = []
    for j, x in enumerate(sizes):
        if x is None or isinstance(x, bool) or not is_expr(x):
            out.append(ctx.data_symbol("split_len", dim, f"Split output {j} length is read at run time"))
        elif isinstance(x, int) and x < 0:
            ctx.invalid("split.sizes", f"split size {j} is {x}; every size must be >= 0",
                        "give Split non-negative sizes")
        else:
            if not isinstance(x, int) and sign_of(ctx, x) != "nonneg":
                ctx.require(ge(x, 0), "split.sizes", f"split size {j} ({shown(x)}) is >= 0")
            out.append(x)
    total = E.total(out)
    ctx.equal(total, dim, "split.sum",
              f"Split sizes along axis {axis} sum to the input dim: {shown(total)} == {shown(dim)}")
    return out


def _split_even(ctx, dim, n, axis, uneven: bool):
    if uneven:
        chunk = E.ceildiv(dim, n)
        last = E.sub(dim, E.mul(chunk, n - 1))
        if n > 1:
            # onnxruntime accepts an empty last chunk (4 -> 2, 2, 0... and 0 -> 0, 0), refuses a negative one
            ctx.require(ge(last, 0), "split.chunks",
                        f"Split into {n} outputs of ceil({shown(dim)} / {n}) along axis {axis} leaves a last chunk "
                        f"({shown(last)}) that is not negative")
        return [chunk] * (n - 1) + [last]
    if n > 1:
        ctx.equal(E.mod(dim, n), 0, "split.even",
                  f"Split into {n} equal outputs along axis {axis}: {shown(dim)} is divisible by {n}")
    return [E.floordiv(dim, n)] * n


def _split(ctx, sizes, uneven=False):
    s = ctx.shape(0)
    n = ctx.num_outputs
    dtype = ctx.dtype(0)
    axis = int(ctx.attr("axis", 0))
    if s is None:
        for j in range(n):
            ctx.set_output(j, None, dtype)
        return
    ax = norm_axis(ctx, axis, len(s))
    dim = s[ax]
    if sizes is not None and sizes != "unknown":
        if len(sizes) != n:
            ctx.invalid("split.count", f"Split has {len(sizes)} sizes but {n} outputs",
                        "give one split size per output")
        lens = _split_sizes_given(ctx, dim, sizes, ax)
    elif sizes == "unknown":
        lens = [ctx.data_symbol("split_len", dim, f"Split output {j} length is read at run time")
                for j in range(n)]
        ctx.equal(E.total(lens), dim, "split.sum", f"Split sizes along axis {ax} sum to {shown(dim)}")
    else:
        lens = _split_even(ctx, dim, n, ax, uneven)
    parts = None
    if all(isinstance(x, int) for x in lens):
        v = shaped_value(ctx, 0) if len(s) == 1 else None
        if v is not None and len(v) == sum(lens):
            # a 1-D value cut in Python (numpy is imported only where more axes need it)
            parts = [v[e - k:e] for e, k in zip(accumulate(lens), lens)]
        else:
            arr = obj_array(ctx, 0)
            if arr is not None and sum(lens) == arr.shape[ax]:
                parts = [flat_values(p) for p in np.split(arr, np.cumsum(lens)[:-1].tolist(), axis=ax)]
    for j in range(n):
        out = list(s)
        out[ax] = lens[j]
        ctx.set_output(j, out, dtype, value=None if parts is None or parts[j] is None else tuple(parts[j]))


def _sizes_from_input(ctx, i):
    if not ctx.has_input(i):
        return None
    r = ctx.rank(i)
    if r is not None and r != 1:
        ctx.invalid("split.split_rank", f"Split's split input has rank {r}; it must be a 1-D tensor of sizes",
                    "give Split a 1-D split tensor")
    v = ctx.value(i)
    if v is not None:
        return list(v)
    n = vector_len(ctx, i)
    return "unknown" if n is None else [None] * n


@register("", "Split", since_version=1)
def split_v1(ctx):
    ctx.check_inputs(1, 2)
    if ctx.has_input(1):
        _split(ctx, _sizes_from_input(ctx, 1))
    else:
        sp = ctx.attr("split")
        _split(ctx, None if sp is None else [int(x) for x in sp])


@register("", "Split", since_version=2)
def split_v2(ctx):
    ctx.check_inputs(1, 1)
    sp = ctx.attr("split")
    _split(ctx, None if sp is None else [int(x) for x in sp])


@register("", "Split", since_version=13)
def split_v13(ctx):
    ctx.check_inputs(1, 2)
    _split(ctx, _sizes_from_input(ctx, 1))


@register("", "Split", since_version=18)
def split_v18(ctx):
    ctx.check_inputs(1, 2)
    k = ctx.attr("num_outputs")
    if k is not None and ctx.has_input(1):
        ctx.invalid("split.num_outputs", "Split has both the 'split' input and the 'num_outputs' attribute; "
                    "it takes one of them", "drop either the 'split' input or 'num_outputs'")
    if k is None and not ctx.has_input(1):
        ctx.invalid("split.num_outputs", "Split (opset 18) has neither the 'split' input nor the 'num_outputs' "
                    "attribute; it takes one of them", "give Split 'num_outputs' or a 'split' input")
    if k is not None and int(k) < 1:
        ctx.invalid("split.num_outputs", f"num_outputs is {k}; it must be >= 1", "give num_outputs >= 1")
    if k is not None and int(k) != ctx.num_outputs:
        ctx.invalid("split.num_outputs", f"num_outputs is {k} but the node has {ctx.num_outputs} outputs",
                    "make num_outputs the node's output count")
    _split(ctx, _sizes_from_input(ctx, 1), uneven=k is not None)
