"""Helpers shared by op rules: broadcasting, axes, unification.

Each helper both computes and emits the constraints its semantics imply,
like the rules themselves.
"""
from __future__ import annotations

from .. import expr as E
from ..constraints import any_of, eq
from ..errors import Cannot
from ..printing import brief, show
from ..store import Verdict


def norm_axis(ctx, axis: int, rank: int | None, what: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank); a conflict (``axis.range``) when out
    of range.  With the rank unknown a non-negative axis is returned as it is (the caller
    decides whether its range matters), one counted from the end stops the rule
    (``Cannot.RANK_UNKNOWN``: where it points is not known)."""
    if rank is None:
        if axis < 0:
            ctx.cannot(Cannot.RANK_UNKNOWN, f"{what} {axis} counts from the end and the input's rank is unknown")
        return axis
    if not -rank <= axis < rank:      # the node cannot run: a conflict, not only a warning
        if rank == 0:
            ctx.invalid("axis.range", f"{what} {axis} names an axis of a scalar (rank 0), which has none")
        ctx.invalid("axis.range", f"{what} {axis} is out of range [-{rank}, {rank - 1}] for an input of rank {rank}",
                    f"give {what} values within [-{rank}, {rank - 1}]")
    return axis + rank if axis < 0 else axis


def norm_axes(ctx, axes, rank, what: str = "axes") -> list[int]:
    out = [norm_axis(ctx, int(a), rank, what) for a in axes]
    if len(set(out)) != len(out):
        ctx.invalid("axis.unique", f"{what} {list(axes)} name the same axis twice (rank {rank})",
                    f"list each axis once in {what}")
    return out


def unify(ctx, a, b, rule: str, message):
    """Emit ``a == b`` and return the better representative (a constant if any).
    (``message``: the sentence, or a function making it, as for ``Context.require``.)

    When the two are refuted (a conflict, already recorded with both values),
    the result is an UNKNOWN dim: never a size taken from one of the inputs."""
    if a == b:
        return a
    c = ctx.equal(a, b, rule, message)
    if c.status == "conflict":
        return ctx.unknown_dim(f"{rule.replace('.', '_')}_conflict")
    if isinstance(b, int) and not isinstance(a, int):
        return b
    return ctx.store.canon(a)


def unify_all(ctx, dims, rule: str, message: str):
    acc = dims[0]
    for d in dims[1:]:
        acc = unify(ctx, acc, d, rule, message)
    return acc


def broadcast_dim(ctx, a, b, axis: int, rule: str = "broadcast"):
    """The multidirectional broadcast of two sizes, with its constraint.

    Exact result without asking the solver: ``a`` if ``b == 1`` else ``b``
    (``Bcast``), valid under ``a == b or a == 1 or b == 1``, which is always
    recorded unless it holds syntactically.  The fast path shortcuts the cases
    where the two are already equal or one is the constant 1.  Never
    ``max(a, b)``: that is wrong at ``a = 0, b = 1``.  ``Result`` later
    resolves ``Bcast`` atoms the constraints decide.
    """
    a, b = ctx.store.canon(a), ctx.store.canon(b)
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    def msg():     # (made only when stated: printing a long Bcast chain costs O(its size))
        return f"inputs broadcast on axis {axis}: {brief(a)} and {brief(b)} must be equal or one of them 1"
    if isinstance(a, int) and isinstance(b, int):
        ctx.require(any_of(eq(a, b), eq(a, 1), eq(b, 1)), rule, msg)  # records the conflict
        return ctx.unknown_dim(f"{rule.replace('.', '_')}_conflict")
    st = ctx.store
    if st.domain.no_broadcast_one and not isinstance(a, int) and not isinstance(b, int):
        ctx.engine.note_assumption("no_broadcast_one", ctx.name)
        ctx.not_cacheable()
        ctx.require(eq(a, b), f"{rule}.assume_not_one",
                    lambda: msg() + " (assumed equal: symbolic dims are never 1)")
        return st.canon(a)
    c = ctx.require(any_of(eq(a, b), eq(a, 1), eq(b, 1)), rule, msg)
    if c.status == "conflict":
        return ctx.unknown_dim(f"{rule.replace('.', '_')}_conflict")
    if isinstance(b, int):       # b != 1: the result is b whatever a is (a is b or 1)
        return b
    if isinstance(a, int):       # a != 1: b must be a or 1, the result is a
        return a
    # an optional question (bounded budget, answers never retracted): when the model
    # already forces a == b (a U-Net's skip and upsampled paths), keep the term small
    if ctx.decide(eq(a, b)) is Verdict.PROVEN:
        return st.canon(a)
    return E.bcast(st.canon(a), st.canon(b))


def broadcast_shapes(ctx, shapes, rule: str = "broadcast"):
    """Numpy-style broadcast of several shapes (None when any rank is unknown)."""
    if any(s is None for s in shapes):
        return None
    r = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(r):
        acc = None
        for s in shapes:
            j = len(s) - r + k
            if j < 0:
                continue
            acc = s[j] if acc is None else broadcast_dim(ctx, acc, s[j], k, rule)
        out.append(acc)
    return tuple(out)


def unidirectional(ctx, target, src, rule, what):
    """Emit the constraints of broadcasting ``src`` onto ``target`` (one direction)."""
    if target is None or src is None:
        return
    if len(src) > len(target):
        ctx.invalid(rule, f"{what} has rank {len(src)}, more than the rank {len(target)} it broadcasts onto",
                    f"give {what} a rank at most {len(target)}")
    off = len(target) - len(src)
    for k, d in enumerate(src):
        t = target[off + k]
        if d == 1 or d == t:
            continue
        ctx.require(any_of(eq(d, t), eq(d, 1)), rule,
                    f"{what} axis {k} ({show(d)}) must equal axis {off + k} of the input ({show(t)}) or be 1")


def numel(shape):
    return None if shape is None else E.prod(shape)
