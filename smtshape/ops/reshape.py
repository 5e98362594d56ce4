"""Reshape, Flatten, Transpose, Squeeze and Unsqueeze: the element count kept, dims
and values moved.  Reshape's -1 is the quotient of two products of dims with common
factors cancelled (``exact_div_products``), never a division left to the solver when
the factors match."""
from __future__ import annotations

import math
from functools import lru_cache

from ..lazy import numpy as np
from ..lazy import sympy

from .. import expr as E
from ..constraints import Rel, any_of, eq, ge, gt, ne
from ..registry import register
from ..store import Verdict
from .common import norm_axes, norm_axis, numel
from .values import (flat_values, ints_of, is_expr, obj_array, shaped_value, shape_input_rank, shape_str, shown,
                     sign_of, target_dims)


# ---------------------------------------------------------------- exact division

def _factorize(dims):
    """(integer content, {non-constant factor: exponent}) of a product of dims.

    Each dim is split with ``as_content_primitive`` so ``64*S + 64`` counts as
    ``64 * (S + 1)``; powers count their base repeatedly.  (Plain dicts, in the
    order the factors first appear: this runs on every Reshape.)
    """
    coeff = 1
    fac: dict = {}
    for d in dims:
        if isinstance(d, int):
            coeff *= d
            continue
        one = _factor_dim(d)
        if one is None:
            return None
        coeff *= one[0]
        for f, k in one[1]:
            fac[f] = fac.get(f, 0) + k
    return coeff, fac


@lru_cache(maxsize=8192)
def _factor_dim(d):
    """(integer content, ((factor, exponent), ...)) of one symbolic dim, or None
    (memoized: dims are immutable, and the same ones recur across a model's nodes)."""
    c, p = sympy.sympify(d).as_content_primitive()
    if not c.is_Integer:
        return None
    pc, rest = p.as_coeff_Mul()
    if not pc.is_Integer:
        return None
    out: dict = {}
    for f in sympy.Mul.make_args(rest):
        if f == 1:
            continue
        if f.is_Pow and f.exp.is_Integer and int(f.exp) > 0:
            out[f.base] = out.get(f.base, 0) + int(f.exp)
        else:
            out[f] = out.get(f, 0) + 1
    return int(c) * int(pc), tuple(out.items())


def _minus(a: dict, b: dict) -> dict:
    """The factors of ``a`` with ``b``'s taken away (none below zero), in ``a``'s order."""
    return {f: k - b.get(f, 0) for f, k in a.items() if k > b.get(f, 0)}


def _build(coeff: int, fac: dict):
    return E.prod([coeff] + [E.norm(f) for f, k in fac.items() for _ in range(k)])


def exact_div_products(num_dims, den_dims):
    """prod(num_dims) / prod(den_dims) by cancelling common factors, or None.

    ``(B*S*768) / (B*S*12) == 64``: succeeds only when every factor of the
    denominator occurs in the numerator and the integer contents divide; the
    quotient is then exact whenever the denominator is non-zero.
    """
    n = _factorize(num_dims)
    d = _factorize(den_dims)
    if n is None or d is None or d[0] == 0:
        return None
    (cn, fn), (cd, fd) = n, d
    if any(k > fn.get(f, 0) for f, k in fd.items()) or cn % cd != 0:
        return None
    return _build(cn // cd, _minus(fn, fd))


def _numel_relation(ctx, a_dims, b_dims):
    """``prod(a) == prod(b)`` with common factors cancelled soundly.

    Integer contents are divided by their gcd; a common symbolic factor ``f``
    is cancelled as ``f == 0 or (rest equal)`` unless ``f > 0`` is proven.
    """
    a = _factorize(a_dims)
    b = _factorize(b_dims)
    if a is None or b is None or a[0] == 0 or b[0] == 0:
        return eq(E.prod(a_dims), E.prod(b_dims))
    (ca, fa), (cb, fb) = a, b
    common = {f: min(k, fb[f]) for f, k in fa.items() if f in fb}
    g = math.gcd(ca, cb)
    lhs, rhs = _build(ca // g, _minus(fa, common)), _build(cb // g, _minus(fb, common))
    rel = eq(lhs, rhs)
    if lhs == rhs:
        return rel          # the same factors on both sides: true whatever the common ones are
    zero = [eq(E.norm(f), 0) for f in common if not ctx.proven(gt(E.norm(f), 0))]
    return any_of(*zero, rel) if zero else rel


def _emit_numel(ctx, in_shape, out_shape, rule="reshape.numel"):
    rel = _numel_relation(ctx, in_shape, out_shape)
    if isinstance(rel, Rel) and rel.op == "==" and rel.lhs == rel.rhs:
        return      # the same factors on both sides: true, never built (nor its message)
    ctx.require(rel, rule, f"the element count is preserved: {shown(numel(in_shape))} (input "
                f"{shape_str(in_shape)}) == {shown(numel(out_shape))} (output {shape_str(out_shape)})")


# ================================================================ Reshape

def _multiple_of(d, t) -> bool:
    """Is ``d`` syntactically ``t`` times an integer expression (so ``t == 0`` forces ``d == 0``)?"""
    if isinstance(t, int) or isinstance(d, int):
        return isinstance(t, int) and isinstance(d, int) and (d == 0 or (t != 0 and d % t == 0))
    ft, fd = _factorize([t]), _factorize([d])
    if ft is None or fd is None or ft[0] == 0:
        return False
    return all(fd[1].get(f, 0) >= k for f, k in ft[1].items()) and fd[0] % ft[0] == 0


def _copy_dim(ctx, t, d):
    """The output dim for a symbolic target element ``t`` at an axis whose input dim is ``d``
    (``allowzero == 0``: a runtime 0 copies ``d``)."""
    if t == d or _multiple_of(d, t) or ctx.proven(any_of(ne(t, 0), eq(d, 0))):
        return t
    return _zero_copies(t, d)


@lru_cache(maxsize=4096)
def _zero_copies(t, d):
    """``d if t == 0 else t`` (memoized: sympy builds a Piecewise slowly, and exporters
    repeat the same pair in every attention block)."""
    return E.norm(sympy.Piecewise((E.to_sympy(d), sympy.Eq(E.to_sympy(t), 0)), (E.to_sympy(t), True)))


def _reshape(ctx, target, allowzero: bool):
    in_shape = ctx.shape(0)
    dtype = ctx.dtype(0)
    if target is None:
        ctx.set_output(0, None, dtype, value=ctx.input(0).value if ctx.input(0) else None)
        return
    out, infer_at = [], None
    # with a known non-zero element count every output axis is >= 1, so none exceeds it
    # (with zero elements any size can appear next to a 0)
    cap = None
    if in_shape is not None and all(isinstance(d, int) for d in in_shape):
        n_el = math.prod(in_shape)
        cap = n_el if n_el > 0 else None
    for k, t in enumerate(target):
        have_in = in_shape is not None and k < len(in_shape)
        if t is None:
            out.append(ctx.data_symbol("reshape_dim", cap, f"Reshape target axis {k} is read at run time"))
        elif isinstance(t, bool) or not is_expr(t):
            # (not an integer element: an unknown one)
            out.append(ctx.data_symbol("reshape_dim", cap, f"Reshape target axis {k} is read at run time"))
        elif isinstance(t, int):
            if t == -1:
                if infer_at is not None:
                    ctx.invalid("reshape.one_inferred",
                                f"Reshape target has more than one -1 (axes {infer_at} and {k})")
                infer_at = k
                out.append(None)
            elif t < -1:
                ctx.invalid("reshape.target", f"Reshape target axis {k} is {t}; a size is >= 0, or -1 (inferred)",
                            "give Reshape sizes >= -1")
            elif t == 0 and not allowzero:
                if in_shape is None:
                    out.append(ctx.data_symbol("reshape_dim", None, f"Reshape axis {k} copies an input dim "
                                               "of unknown rank"))
                elif not have_in:
                    ctx.invalid("reshape.zero_copy", f"Reshape target axis {k} is 0 (copy input axis {k}) but the "
                                f"input has rank {len(in_shape)}, so there is no axis {k} to copy",
                                "give the size itself, or set allowzero=1 for a size 0")
                else:
                    out.append(in_shape[k])
            else:
                out.append(t)
        else:
            out.append(_symbolic_target(ctx, k, t, in_shape, allowzero))
    if infer_at is not None:
        if allowzero and any(d == 0 for d in out if d is not None):
            ctx.invalid("reshape.allowzero", f"Reshape target {shape_str(target)} has both 0 and -1 with "
                        "allowzero=1: -1 cannot be inferred next to a size 0",
                        "replace the -1 by the size, or the 0 by a non-zero size")
        out[infer_at] = _infer_dim(ctx, in_shape, [d for d in out if d is not None], infer_at, allowzero)
    elif in_shape is not None:
        _emit_numel(ctx, in_shape, out)
    t0 = ctx.input(0)
    ctx.set_output(0, out, dtype, value=t0.value if t0 is not None else None)


def _symbolic_target(ctx, k, t, in_shape, allowzero):
    sign = sign_of(ctx, t)
    if sign != "nonneg":
        # t may be -1 (inferred) or 0 at run time: keep it as a runtime quantity
        d = ctx.data_symbol("reshape_dim", None, f"Reshape target axis {k} ({shown(t)}) may be -1 or 0 at run time")
        ctx.require(ge(t, -1), "reshape.target", f"Reshape target axis {k} ({shown(t)}) is >= -1")
        ctx.require(any_of(eq(d, t), eq(t, -1), eq(t, 0)), "reshape.target",
                    f"Reshape axis {k} is the target element {shown(t)} unless it is -1 or 0")
        return d
    if allowzero:
        return t
    if in_shape is None:
        if ctx.proven(gt(t, 0)):
            return t
        d = ctx.data_symbol("reshape_dim", None, f"Reshape target axis {k} ({shown(t)}) may be 0 at run time, "
                            "copying an input dim of unknown rank")
        ctx.require(any_of(eq(d, t), eq(t, 0)), "reshape.target",
                    f"Reshape axis {k} is the target element {shown(t)} unless it is 0")
        return d
    if k >= len(in_shape):
        ctx.require(ne(t, 0), "reshape.zero_copy",
                    f"Reshape target axis {k} ({shown(t)}) is not 0: there is no input axis {k} to copy")
        return t
    return _copy_dim(ctx, t, in_shape[k])


def _infer_dim(ctx, in_shape, others, axis, allowzero=False):
    if in_shape is None:
        return ctx.data_symbol("reshape_infer", None, f"Reshape axis {axis} (-1) with an input of unknown rank")
    for j, d in enumerate(others):
        if isinstance(d, int):
            if d == 0:
                ctx.invalid("reshape.infer_zero", f"Reshape infers axis {axis} (-1) from the other target sizes, "
                            "and one of them is 0 (copied from the input): the -1 cannot be inferred",
                            "give the size instead of -1")
            continue
        if not allowzero and ctx.store.interval(d)[0] < 1:
            # (allowzero=1: onnxruntime's kernel runs a runtime 0 next to -1, e.g. [0, 16, -1, 16])
            # stated whether or not it already follows (a duplicate is absorbed as such): no question
            ctx.require(gt(d, 0), "reshape.infer_nonzero",
                        f"Reshape infers axis {axis} (-1) from the other target dims, so {shown(d)} is non-zero")
    q = exact_div_products(in_shape, others)
    if q is None:
        den = E.prod(others)
        q = E.floordiv(numel(in_shape), den)
    out = list(others)
    out.insert(axis, q)
    _emit_numel(ctx, in_shape, out)
    return _zero_next_to_inferred(ctx, in_shape, others, q) if allowzero else q


def _zero_next_to_inferred(ctx, in_shape, others, q):
    """The -1 of an ``allowzero=1`` Reshape whose other target sizes may be 0 at run time.

    The spec calls a 0 next to a -1 invalid (so does onnx's reference evaluator: numpy cannot
    infer it); onnxruntime runs it on an empty input and infers the -1 from the non-zero sizes
    alone: (product of the non-zero input dims) / (product of the other non-zero target sizes).
    The dim is ``q`` wherever no other size is 0, onnxruntime's where one is (the only runtime
    that gives a size there), so it is exact for every runtime that runs the node.  (A
    constant 0 next to -1 is a conflict: ``_reshape``.)  Stating "non-zero" instead would force
    every batch and sequence dim of a dynamo export to be >= 1."""
    zero_able = [d for d in others if not isinstance(d, int) and ctx.store.interval(d)[0] < 1]
    if not zero_able:
        return q
    nonzero_in = [E.smax(d, 1) for d in in_shape]       # (dims are >= 0: d if d != 0 else 1)
    nonzero_out = [E.smax(d, 1) for d in others]
    ort = exact_div_products(nonzero_in, nonzero_out)
    if ort is None:
        ort = E.floordiv(E.prod(nonzero_in), E.prod(nonzero_out))
    if ort == q:
        return q        # (the zero sizes cancel: [B, S, -1, 64] from [B, S, 768] is 12 either way)
    # (kept small, or the dim becomes an alias: no other size is 0 in q's branch, so their
    # common factors cancel there; the condition without its constant factors)
    num, den = _cancel_common(in_shape, others)
    q = E.floordiv(num, den) if den != 1 else num
    zero = _factorize(zero_able)
    factors = list(zero[1]) if zero else zero_able
    some_zero = sympy.Or(*[sympy.Eq(E.to_sympy(f), 0, evaluate=False) for f in factors], evaluate=False) \
        if len(factors) > 1 else sympy.Eq(E.to_sympy(factors[0]), 0, evaluate=False)
    return E.raw_piecewise((ort, some_zero), (q, True))


def _cancel_common(num_dims, den_dims):
    """``(n, d)`` with ``prod(num_dims) // prod(den_dims) == n // d`` wherever the denominator is
    non-zero: the factors common to both (and the gcd of their integer contents) cancelled."""
    a, b = _factorize(num_dims), _factorize(den_dims)
    if a is None or b is None or a[0] == 0 or b[0] == 0:
        return E.prod(num_dims), E.prod(den_dims)
    (ca, fa), (cb, fb) = a, b
    common = {f: min(k, fb[f]) for f, k in fa.items() if f in fb}
    g = math.gcd(ca, cb)
    return _build(ca // g, _minus(fa, common)), _build(cb // g, _minus(fb, common))


@register("", "Reshape", since_version=1)
def reshape_v1(ctx):
    ctx.check_inputs(1, 1)
    shape = ctx.attr("shape")
    _reshape(ctx, None if shape is None else [int(x) for x in shape], False)


@register("", "Reshape", since_version=5)
def reshape(ctx):
    ctx.check_inputs(2, 2)
    allowzero = bool(ctx.attr("allowzero", 0)) if ctx.opset is None or ctx.opset >= 14 else False
    shape_input_rank(ctx, 1, "reshape.shape_rank", "Reshape")
    _reshape(ctx, target_dims(ctx, 1, "shape"), allowzero)


# ================================================================ Flatten, Transpose

@register("", "Flatten", since_version=1)
def flatten(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    t0 = ctx.input(0)
    old = ctx.opset is not None and ctx.opset < 11      # (no axis counted from the end before opset 11)
    if old and axis < 0:
        ctx.invalid("flatten.axis", f"Flatten axis {axis} is below 0; before opset 11 it must be in [0, rank]",
                    "give an axis within [0, rank]")
    if s is None:
        ctx.set_output(0, (1 if axis == 0 else ctx.unknown_dim("flatten_0"), ctx.unknown_dim("flatten_1")),
                       ctx.dtype(0))
        return
    r = len(s)
    if not -r <= axis <= r:
        lo = 0 if old else -r
        ctx.invalid("flatten.axis", f"Flatten axis {axis} is out of range [{lo}, {r}] for an input of rank {r}",
                    f"give an axis within [{lo}, {r}]")
    if axis < 0:
        axis += r
    ctx.set_output(0, (E.prod(s[:axis]), E.prod(s[axis:])), ctx.dtype(0), value=t0.value)


def _check_perm(ctx, perm, r):
    """``perm`` names each axis of a rank-``r`` input exactly once (a conflict otherwise)."""
    fix = f"give perm each axis of 0..{r - 1} exactly once" if r else "give a scalar an empty perm"
    if len(perm) != r:
        ctx.invalid("transpose.perm", f"perm {perm} has {len(perm)} entries for an input of rank {r}: it must name "
                    f"each of its {r} axes once", fix)
    bad = [p for p in perm if not 0 <= p < r]
    if bad:
        ctx.invalid("transpose.perm", f"perm {perm} has entries {bad} outside [0, {r - 1}] (the spec allows no "
                    "negative entries)", fix)
    rep = sorted({p for p in perm if perm.count(p) > 1})
    if rep:
        ctx.invalid("transpose.perm", f"perm {perm} repeats {rep}: it is not a permutation of 0..{r - 1}", fix)


@register("", "Transpose", since_version=1)
def transpose(ctx):
    ctx.check_inputs(1, 1)
    s = ctx.shape(0)
    perm = ctx.attr("perm")
    perm = None if perm is None else [int(p) for p in perm]
    if s is None:
        if perm is not None:
            _check_perm(ctx, perm, len(perm))       # (the rank, unknown here, is then len(perm))
        ctx.set_output(0, None if perm is None else [ctx.unknown_dim("transpose") for _ in perm], ctx.dtype(0))
        return
    r = len(s)
    if perm is None:
        perm = list(range(r))[::-1]
    _check_perm(ctx, perm, r)
    if r <= 1:                      # (a 1-D transpose is the identity: no array needed)
        value = shaped_value(ctx, 0)
    else:
        arr = obj_array(ctx, 0)
        value = flat_values(np.transpose(arr, perm)) if arr is not None else None
    ctx.set_output(0, [s[p] for p in perm], ctx.dtype(0), value=value)


# ================================================================ Squeeze, Unsqueeze

def _axes_input(ctx, i):
    """Axes from input ``i``: list of ints, [] when absent, None when unknown."""
    if not ctx.has_input(i):
        return []
    v = ints_of(ctx, i, "axes")
    return v


def _squeeze(ctx, axes):
    s = ctx.shape(0)
    t0 = ctx.input(0)
    value = t0.value if t0 is not None else None
    if s is not None and axes is None and ctx.num_inputs > 1:
        rs = ctx.shape(1)
        if rs is not None and len(rs) == 1 and rs[0] == 0:
            axes = []                       # an empty axes tensor squeezes every size-1 axis
        elif rs is not None and len(rs) == 1 and isinstance(rs[0], int):
            ctx.set_output(0, _squeeze_unknown_axes(ctx, s, rs[0]), ctx.dtype(0), value=value)
            return
    if s is None or axes is None:
        ctx.set_output(0, None, ctx.dtype(0), value=value)
        return
    if axes:
        # (onnxruntime runs repeated axes; the spec does not ask for distinct ones)
        ax = list(dict.fromkeys(norm_axis(ctx, int(a), len(s), "axes") for a in axes))
        for a in ax:
            if s[a] != 1:
                ctx.equal(s[a], 1, "squeeze.one", f"Squeeze removes axis {a}, so its size {shown(s[a])} must be 1")
        ctx.set_output(0, [d for k, d in enumerate(s) if k not in ax], ctx.dtype(0), value=value)
        return
    out = []
    for d in s:
        if isinstance(d, int):
            if d != 1:
                out.append(d)
            continue
        v = ctx.decide(eq(d, 1))
        if v is Verdict.UNKNOWN:
            ctx.warn(f"Squeeze without axes: cannot decide whether {shown(d)} is 1; the output rank is unknown")
            ctx.set_output(0, None, ctx.dtype(0), value=value)
            return
        if v is Verdict.REFUTED:
            out.append(d)
    ctx.set_output(0, out, ctx.dtype(0), value=value)


@register("", "Squeeze", since_version=1)
def squeeze_v1(ctx):
    ctx.check_inputs(1, 1)
    _squeeze(ctx, [int(a) for a in ctx.attr("axes", [])])


@register("", "Squeeze", since_version=13)
def squeeze(ctx):
    ctx.check_inputs(1, 2)
    r = ctx.rank(1)
    if r is not None and r != 1:
        ctx.invalid("squeeze.axes_rank", f"Squeeze's axes input has rank {r}; it must be a 1-D tensor",
                    "give Squeeze a 1-D axes tensor")
    _squeeze(ctx, _axes_input(ctx, 1))


def _squeeze_unknown_axes(ctx, s, k):
    """Output shape of Squeeze with ``k`` axes read at run time.  Only axes whose size
    can be 1 can be removed (onnxruntime fails on any other); onnxruntime accepts
    repeated axes, so 1..k distinct axes go.  Every possible removal is enumerated:
    the rank is known when all agree on it, and an output axis is exact when all agree
    on its size; otherwise that axis is a data symbol (the rank unknown: None)."""
    from itertools import combinations
    cands = [a for a, d in enumerate(s) if not isinstance(d, int) or d == 1]
    if k >= 1 and not cands:
        ctx.invalid("squeeze.one", f"Squeeze removes {k} axes read at run time, but no axis of its input "
                    f"{shape_str(s)} can have size 1", "squeeze only axes of size 1")
    if k < 1:
        return None                         # (handled by the caller)
    outs = []
    for m in range(1, min(k, len(cands)) + 1):
        for sub in combinations(cands, m):
            outs.append(tuple(d for a, d in enumerate(s) if a not in sub))
            if len(outs) > 256:
                return None
    if len({len(o) for o in outs}) != 1:
        return None
    if len(outs) == 1:
        for a in cands:                     # the only way the node runs: these axes are 1
            if s[a] != 1:
                ctx.equal(s[a], 1, "squeeze.one", f"Squeeze must remove axis {a}, so its size {shown(s[a])} must be 1")
    return _agreeing_dims(ctx, outs, "squeeze_dim", "Squeeze")


def _unsqueeze_unknown_axes(ctx, s, k):
    """Output shape of Unsqueeze with ``k`` distinct axes read at run time (onnxruntime
    refuses repeats): rank ``len(s) + k``; every placement of the k new size-1 axes is
    enumerated, an output axis is exact where all agree, else a data symbol bounded by
    the largest size it can take (when those are all integers)."""
    from itertools import combinations
    r = len(s) + k
    outs = []
    for sub in combinations(range(r), k):
        it = iter(s)
        outs.append(tuple(1 if j in sub else next(it) for j in range(r)))
        if len(outs) > 256:
            return None
    return _agreeing_dims(ctx, outs, "unsqueeze_dim", "Unsqueeze")


def _agreeing_dims(ctx, outs, hint, op):
    out = []
    for j in range(len(outs[0])):
        col = {o[j] for o in outs}
        if len(col) == 1:
            out.append(col.pop())
            continue
        upper = max(col) if all(isinstance(c, int) for c in col) else None
        out.append(ctx.data_symbol(hint, upper, f"{op} output axis {j} depends on axes read at run time"))
    return out


def _unsqueeze(ctx, axes):
    s = ctx.shape(0)
    t0 = ctx.input(0)
    value = t0.value if t0 is not None else None
    if s is not None and axes is None and ctx.num_inputs > 1:
        rs = ctx.shape(1)
        k = 1 if rs == () else rs[0] if rs is not None and len(rs) == 1 and isinstance(rs[0], int) else None
        if k == 0:
            ctx.set_output(0, s, ctx.dtype(0), value=value)
            return
        if k is not None and 1 <= k <= 64:
            ctx.set_output(0, _unsqueeze_unknown_axes(ctx, s, k), ctx.dtype(0), value=value)
            return
    if s is None or axes is None:
        ctx.set_output(0, None, ctx.dtype(0), value=value)
        return
    if not axes:        # (onnxruntime and onnx's reference return the input as it is)
        ctx.set_output(0, s, ctx.dtype(0), value=value)
        return
    r = len(s) + len(axes)
    ax = norm_axes(ctx, axes, r)
    it = iter(s)
    out = [1 if k in ax else next(it) for k in range(r)]
    ctx.set_output(0, out, ctx.dtype(0), value=value)


@register("", "Unsqueeze", since_version=1)
def unsqueeze_v1(ctx):
    ctx.check_inputs(1, 1)
    _unsqueeze(ctx, [int(a) for a in ctx.require_attr("axes")])


@register("", "Unsqueeze", since_version=13)
def unsqueeze(ctx):
    ctx.check_inputs(2, 2)
    r = ctx.rank(1)
    if r is not None and r > 1:     # (a scalar runs in onnxruntime and onnx's reference)
        ctx.invalid("unsqueeze.axes_rank", f"Unsqueeze's axes input has rank {r}; it must be a 1-D tensor",
                    "give Unsqueeze a 1-D axes tensor")
    _unsqueeze(ctx, _axes_input(ctx, 1))
