"""Slice: ONNX's clamped start / end per axis, exactly, including indices whose sign
is known only at run time, and the ends where the spec and onnxruntime read
INT32_MAX / INT64_MAX differently with a negative step (ARCHITECTURE item 14)."""
from __future__ import annotations

from ..lazy import numpy as np

from .. import expr as E
from ..constraints import all_of, any_of, eq, le, ne
from ..registry import register
from .common import norm_axes
from .values import (BIG, flat_values, index_vector, ints_of, is_expr, known_sign, obj_array, shaped_value, shown,
                     sign_cases, sign_of)


# ---------------------------------------------------------------- min / max / clamp, decided where the store can

def _le(ctx, a, b) -> bool:
    s = known_sign(E.sub(b, a))
    if s is not None:
        return s == "nonneg"
    return ctx.proven(le(a, b))


def _min(ctx, a, b):
    if _le(ctx, a, b):
        return a
    if _le(ctx, b, a):
        return b
    return E.smin(a, b)


def _max(ctx, a, b):
    if _le(ctx, a, b):
        return b
    if _le(ctx, b, a):
        return a
    return E.smax(a, b)


def _clamp(ctx, x, lo, hi):
    return _min(ctx, _max(ctx, x, lo), hi)


# ================================================================ Slice

def _slice_index(ctx, x, dim, lo, hi):
    """ONNX's adjusted, clamped start/end, or None when its sign is undecidable."""
    if isinstance(x, int):
        if x >= BIG:       # "to the end": clamp(+inf, lo, hi)
            return hi
        if x <= -BIG:      # clamp(-inf, lo, hi) (hi < lo when a backward slice meets dim 0)
            return _min(ctx, lo, hi)
        return _clamp(ctx, E.add(x, dim) if x < 0 else x, lo, hi)
    sign = sign_of(ctx, x)
    if sign == "nonneg":
        return _clamp(ctx, x, lo, hi)
    if sign == "neg":
        return _clamp(ctx, E.add(x, dim), lo, hi)
    if not all(sym.is_nonnegative is True for sym in E.free_symbols(x)):
        return None
    # sign decided only at run time (``S - 1`` is -1 at S = 0): both branches, exactly
    return E.by_sign(x, E.clamp(x, lo, hi), E.clamp(E.add(x, dim), lo, hi))


# Where onnxruntime reads a Slice otherwise than the spec.  The spec clamps every adjusted
# index: the start into [0, dim] ([0, dim - 1] backward), the end into [0, dim] ([-1, dim - 1]
# backward).  onnxruntime takes an end of exactly INT32_MAX or INT64_MAX as "to the end in the
# step's direction": the dim going forward (the spec: min(INT32_MAX, dim), which differs only
# past 2**31 - 1), past index 0 going backward (the spec: dim - 1, an empty slice; onnx's
# reference evaluator, numpy, agrees with the spec).  A length is EXACT only where they agree
# (``_slice_readings``); elsewhere it is a data symbol that is one of their lengths
# (``_split_len``), and the node warns.  (onnx's reference evaluator also empties a backward
# slice whose adjusted start is below 0, against the spec's text, which onnxruntime follows:
# a defect of the evaluator, not a split; docs/ARCHITECTURE.md.)
ORT_TO_END = frozenset({2 ** 31 - 1, 2 ** 63 - 1})


def _spec_len(ctx, dim, start, end, step):
    """The spec's length along one sliced axis, or None when an index's sign is undecidable."""
    if step > 0:
        a = _slice_index(ctx, start, dim, 0, dim)
        b = _slice_index(ctx, end, dim, 0, dim)
        if a is None or b is None:
            return None
        return _max(ctx, E.ceildiv(E.sub(b, a), step), 0)
    hi = E.sub(dim, 1)
    a = _slice_index(ctx, start, dim, 0, hi)
    b = _slice_index(ctx, end, dim, -1, hi)
    if a is None or b is None:
        return None
    return _max(ctx, E.ceildiv(E.sub(a, b), -step), 0)


def _slice_readings(ctx, dim, start, end, step):
    """The lengths the runtimes give along one sliced axis: ``[spec]``, or ``[spec, ort]``
    where onnxruntime's can differ (it is then the longer); None when the spec's own length
    is undecidable (an index whose sign is known only at run time)."""
    spec = _spec_len(ctx, dim, start, end, step)
    if spec is None:
        return None
    if isinstance(end, int) and end in ORT_TO_END:
        ort = _spec_len(ctx, dim, start, BIG if step > 0 else -BIG, step)
        if ort != spec and not ctx.proven(eq(ort, spec)):
            return [spec, ort]
    return [spec]


def _slice_len(ctx, dim, start, end, step):
    """The exact output length along one axis (the spec and onnxruntime agree), or None."""
    r = _slice_readings(ctx, dim, start, end, step)
    return r[0] if r is not None and len(r) == 1 else None


def _split_len(ctx, axis, end, step, readings):
    """A data symbol that is the spec's or onnxruntime's length (``readings``), at most
    onnxruntime's (the longer); the node warns."""
    spec, ort = readings
    d = ctx.data_symbol("slice_len", ort, f"Slice axis {axis}: the spec and onnxruntime give different lengths")
    why = (f"onnxruntime reads the end {end} as 'to the end' ({'past index 0' if step < 0 else 'the dim'}), the "
           f"spec and onnx's reference evaluator clamp it ({'to dim - 1' if step < 0 else 'to min(end, dim)'})")
    ctx.require(any_of(eq(d, spec), eq(d, ort)), "slice.runtimes",
                lambda: f"Slice axis {axis} is {shown(spec)} by the spec or {shown(ort)} in onnxruntime: {why}")
    ctx.warn(f"Slice axis {axis}: {why}; the length is kept as a data symbol that is one of the two")
    return d


def _slice(ctx, starts, ends, axes, steps, axes_known=True):
    """``starts`` / ``ends`` / ``steps``: lists (elements None when unknown) or None (not even
    the length known); ``axes``: a list of ints, or None (absent, or ``axes_known=False``:
    read at run time)."""
    s = ctx.shape(0)
    dtype = ctx.dtype(0)
    n = next((len(v) for v in (starts, ends, axes, steps) if v is not None), None)
    for v, what in ((starts, "starts"), (ends, "ends"), (axes, "axes"), (steps, "steps")):
        if v is not None and len(v) != n:
            ctx.invalid("slice.lengths", f"Slice's {what} has {len(v)} entries but another of starts / ends / "
                        f"axes / steps has {n}; they must all have the same length",
                        "give starts, ends, axes and steps one entry per sliced axis")
    for j, sp in enumerate(steps or ()):
        if isinstance(sp, int) and sp == 0:
            ctx.invalid("slice.step", f"Slice step {j} is 0 (steps {steps}); a step must be non-zero",
                        "give Slice non-zero steps")
        if sp is not None and not isinstance(sp, int) and is_expr(sp):
            ctx.require(ne(sp, 0), "slice.step", f"Slice step {j} ({shown(sp)}) is non-zero")
    if s is None:
        if axes is not None and all(a >= 0 for a in axes):
            norm_axes(ctx, axes, None)      # (repeated axes, whatever the rank)
        ctx.set_output(0, None, dtype)
        return
    r = len(s)
    if n is None:
        # the number of sliced axes is unknown: every axis may be sliced
        out = [ctx.data_symbol("slice_len", d, f"Slice axis {k} bounds are read at run time") for k, d in enumerate(s)]
        ctx.set_output(0, out, dtype)
        return
    starts = starts if starts is not None else [None] * n
    ends = ends if ends is not None else [None] * n
    steps = steps if steps is not None else ([None] * n if ctx.has_input(4) else [1] * n)
    if not axes_known:
        if n > r:
            ctx.invalid("slice.axes", f"Slice has {n} starts / ends for an input of rank {r}: its axes cannot name "
                        f"{n} distinct axes", "slice at most one entry per input axis")
        ctx.set_output(0, _slice_unknown_axes(ctx, s, starts, ends, steps), dtype)
        return
    if axes is None:
        axes = list(range(n))
    axes = norm_axes(ctx, axes, r)
    out = list(s)
    t0 = ctx.input(0)
    # element indices only when the elements are known (a small value): never for a long axis
    idx = [slice(None)] * r if t0 is not None and t0.value is not None else None
    for a, st, en, sp in zip(axes, starts, ends, steps):
        if sp is None or not isinstance(sp, int):
            out[a] = ctx.data_symbol("slice_len", _unknown_step_bound(ctx, s[a], st, en),
                                     f"Slice axis {a} step is read at run time")
            idx = None
            continue
        readings = None if st is None or en is None else _slice_readings(ctx, s[a], st, en, sp)
        if readings is None:
            out[a] = _runtime_slice(ctx, a, s[a], st, en, sp)
        elif len(readings) > 1:
            out[a] = _split_len(ctx, a, en, sp, readings)
            idx = None          # (no elements where the length itself is not one number)
            continue
        else:
            out[a] = readings[0]
        if idx is not None and isinstance(s[a], int) and isinstance(st, int) and isinstance(en, int):
            b0 = _slice_index(ctx, st, s[a], 0 if sp > 0 else 0, s[a] if sp > 0 else s[a] - 1)
            b1 = _slice_index(ctx, en, s[a], 0 if sp > 0 else -1, s[a] if sp > 0 else s[a] - 1)
            idx[a] = range(b0, b1, sp)
        else:
            idx = None
    value = None
    v = shaped_value(ctx, 0) if idx is not None and len(idx) == 1 and isinstance(idx[0], range) else None
    # a 1-D value (a Shape's output): its elements picked in Python (numpy is imported only
    # where an array of more axes needs it)
    arr = obj_array(ctx, 0) if idx is not None and v is None else None
    if v is not None:
        value = tuple(v[i] for i in idx[0])
    elif arr is not None:
        sel = arr
        for k, ix in enumerate(idx):
            if isinstance(ix, range):
                sel = np.take(sel, list(ix), axis=k)
        value = flat_values(sel)
    ctx.set_output(0, out, dtype, value=value)


def _unknown_step_bound(ctx, dim, st, en):
    """An upper bound of a Slice length whose step is read at run time: the longest of the
    step +1 and step -1 slices as any runtime reads them (a larger step takes fewer
    elements), else the dim."""
    if isinstance(dim, int) and isinstance(st, int) and isinstance(en, int):
        lens = [n for sp in (1, -1) for n in _slice_readings(ctx, dim, st, en, sp)]
        if all(isinstance(n, int) for n in lens):
            return max(lens)
    return dim


def _static_slice_len(ctx, dim, st, en, sp):
    """The length of one sliced axis when it is an exact expression, else None (no symbols made)."""
    if st is None or en is None or sp is None or not isinstance(sp, int):
        return None
    return _slice_len(ctx, dim, st, en, sp)


def _slice_unknown_axes(ctx, s, starts, ends, steps):
    """Output dims of a Slice whose ``axes`` are read at run time (their count known): every
    placement of the sliced entries on distinct axes is enumerated; an axis is exact where
    every placement gives it the same size, else a data symbol bounded by the sizes it can
    take (by its input dim when one of them is not an exact integer)."""
    from itertools import permutations
    r, n = len(s), len(starts)
    cands: list = [set() for _ in range(r)]
    loose = [False] * r
    count = 0
    for placement in permutations(range(r), n):
        count += 1
        if count > 256:
            return [ctx.data_symbol("slice_len", d, "Slice axes are read at run time") for d in s]
        hit = set(placement)
        for a in range(r):
            if a not in hit:
                cands[a].add(s[a])
        for j, a in enumerate(placement):
            m = _static_slice_len(ctx, s[a], starts[j], ends[j], steps[j])
            if m is None:
                loose[a] = True
                if steps[j] is None or not isinstance(steps[j], int):
                    cands[a].add(_unknown_step_bound(ctx, s[a], starts[j], ends[j]))
                else:
                    cands[a].add(s[a])
            else:
                cands[a].add(m)
    out = []
    for a in range(r):
        col = cands[a]
        if len(col) == 1 and not loose[a]:
            out.append(col.pop())
            continue
        upper = max(col) if all(isinstance(c, int) for c in col) else s[a]
        out.append(ctx.data_symbol("slice_len", upper, f"Slice output axis {a} depends on axes read at run time"))
    return out


def _runtime_slice(ctx, a, dim, st, en, sp):
    """A data symbol for a length that is not one expression: an index read at run time (at
    most the dim), or one whose sign is decided at run time (``S - 1`` is -1 at S = 0): then
    the length under each sign, by the spec and by onnxruntime, as a disjunction the store
    can upgrade."""
    d = ctx.data_symbol("slice_len", dim, f"Slice axis {a} length depends on run-time start/end")
    if st is None or en is None:
        return d
    ends = [en]
    if isinstance(en, int) and en in ORT_TO_END:
        ends.append(BIG if sp > 0 else -BIG)        # onnxruntime's "to the end"
    cases = []
    for e in ends:
        for cs, ss in sign_cases(st):
            for ce, se in sign_cases(e):
                n = _slice_len_assuming(ctx, dim, (st, ss), (e, se), sp)
                conds = [c for c in (cs, ce) if c is not None]
                cases.append(all_of(*conds, eq(d, n)) if conds else eq(d, n))
    ctx.require(any_of(*cases), "slice.runtime",
                lambda: f"Slice axis {a} length follows the clamping of start {shown(st)} and end {shown(en)} on a dim "
                        f"of {shown(dim)} (by the spec or onnxruntime)")
    return d


def _slice_len_assuming(ctx, dim, st, en, sp):
    """The length when start and end, each ``(index, its sign: a case of sign_cases)``,
    have those signs."""
    def idx(xs, lo, hi):
        x, sign = xs
        if not isinstance(x, int):
            return E.clamp(x if sign == "nonneg" else E.add(x, dim), lo, hi)
        return _slice_index(ctx, x, dim, lo, hi)
    if sp > 0:
        return E.smax(E.ceildiv(E.sub(idx(en, 0, dim), idx(st, 0, dim)), sp), 0)
    hi = E.sub(dim, 1)
    return E.smax(E.ceildiv(E.sub(idx(st, 0, hi), idx(en, -1, hi)), -sp), 0)


@register("", "Slice", since_version=1)
def slice_v1(ctx):
    ctx.check_inputs(1, 1)
    starts = ctx.require_attr("starts")
    ends = ctx.require_attr("ends")
    axes = ctx.attr("axes")
    _slice(ctx, [int(x) for x in starts], [int(x) for x in ends],
           None if axes is None else [int(x) for x in axes], None)


_SLICE_INPUTS = ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps"))


@register("", "Slice", since_version=10)
def slice_v10(ctx):
    ctx.check_inputs(3, 5)
    lens = []
    for i, what in _SLICE_INPUTS:
        if not ctx.has_input(i):
            continue
        r = ctx.rank(i)
        if r is not None and r != 1:
            ctx.invalid("slice.input_rank", f"Slice's {what} input has rank {r}; it must be a 1-D tensor",
                        f"give Slice a 1-D {what} tensor")
        if r == 1:
            lens.append((what, ctx.shape(i)[0]))
    for what, d in lens[1:]:
        w0, d0 = lens[0]
        if isinstance(d, int) and isinstance(d0, int):
            if d != d0:
                ctx.invalid("slice.lengths", f"Slice's {w0} has {d0} entries and its {what} {d}; they must have "
                            "the same length", "give starts, ends, axes and steps one entry per sliced axis")
        else:
            ctx.equal(d, d0, "slice.lengths", f"Slice's {w0} ({shown(d0)} entries) and {what} ({shown(d)} entries) "
                      "have the same length")
    axes, axes_known = None, True
    if ctx.has_input(3):
        axes = ints_of(ctx, 3, "axes")
        axes_known = axes is not None
    starts, ends = index_vector(ctx, 1), index_vector(ctx, 2)
    steps = index_vector(ctx, 4) if ctx.has_input(4) else None
    _slice(ctx, starts, ends, axes, steps, axes_known)
