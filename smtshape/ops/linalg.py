"""Linear algebra: MatMul (+ MatMulInteger, QLinearMatMul), Gemm, Einsum.

Every rule emits the relations the op needs between its input dims (inner
dims equal, batch dims broadcast, Gemm's C broadcastable to (M, N), Einsum
letters equal) and computes the output from them.
"""
from __future__ import annotations

from .. import irtypes as ir

from ..constraints import any_of, eq
from ..printing import show
from ..registry import register
from .common import broadcast_shapes, unify


# ---------------------------------------------------------------- MatMul
def _matmul_shape(ctx, a, b, what: str = "MatMul"):
    """numpy.matmul's output shape for shapes ``a`` and ``b`` (None if a rank is unknown)."""
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        ctx.fail(f"{what} operands must have rank >= 1 (got ranks {len(a)} and {len(b)})")
    a_vec, b_vec = len(a) == 1, len(b) == 1
    a2 = (1,) + tuple(a) if a_vec else tuple(a)
    b2 = tuple(b) + (1,) if b_vec else tuple(b)
    k1, k2 = a2[-1], b2[-2]
    unify(ctx, k1, k2, "matmul.inner",
          lambda: f"{what} inner dims: the last axis of A ({show(k1)}) must equal "
                  f"axis {-1 if b_vec else -2} of B ({show(k2)})")
    batch = broadcast_shapes(ctx, [a2[:-2], b2[:-2]], "matmul.batch")
    out = list(batch)
    if not a_vec:
        out.append(a2[-2])
    if not b_vec:
        out.append(b2[-1])
    return tuple(out)


@register("", "MatMul", since_version=1)
def matmul(ctx):
    ctx.check_inputs(2, 2)
    ctx.set_output(0, _matmul_shape(ctx, ctx.shape(0), ctx.shape(1)), ctx.dtype(0))


@register("", "MatMulInteger", since_version=10)
def matmul_integer(ctx):
    ctx.check_inputs(2, 4)
    ctx.set_output(0, _matmul_shape(ctx, ctx.shape(0), ctx.shape(1), "MatMulInteger"), ir.DataType.INT32)


@register("", "QLinearMatMul", since_version=10)
def qlinear_matmul(ctx):
    # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
    ctx.check_inputs(8, 8)
    ctx.set_output(0, _matmul_shape(ctx, ctx.shape(0), ctx.shape(3), "QLinearMatMul"), ctx.dtype(7))


# ---------------------------------------------------------------- Gemm
def _gemm(ctx):
    ctx.check_inputs(2, 3)
    a, b = ctx.shape(0), ctx.shape(1)
    ta, tb = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    if a is not None and len(a) != 2:
        ctx.fail(f"Gemm input A must have rank 2, has rank {len(a)}")
    if b is not None and len(b) != 2:
        ctx.fail(f"Gemm input B must have rank 2, has rank {len(b)}")
    if a is None or b is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    m, k1 = (a[1], a[0]) if ta else (a[0], a[1])
    k2, n = (b[1], b[0]) if tb else (b[0], b[1])
    unify(ctx, k1, k2, "gemm.inner",
          f"Gemm inner dims: A{'^T' if ta else ''} has K = {show(k1)} (transA={ta}) and "
          f"B{'^T' if tb else ''} has K = {show(k2)} (transB={tb}); they must be equal")
    m, n = ctx.store.canon(m), ctx.store.canon(n)
    c = ctx.shape(2) if ctx.has_input(2) else None
    if c is not None:
        if len(c) > 2:
            ctx.fail(f"Gemm input C must have rank <= 2, has rank {len(c)}")
        target = (m, n)[2 - len(c):]
        for j, (cd, td) in enumerate(zip(c, target)):
            if cd == td or cd == 1:
                continue
            axis = ("M", "N")[2 - len(c) + j]
            ctx.require(any_of(eq(cd, td), eq(cd, 1)), "gemm.c_broadcast",
                        f"Gemm C broadcasts unidirectionally to (M, N): C's {axis} axis "
                        f"{show(cd)} must equal {show(td)} or be 1")
    ctx.set_output(0, (m, n), ctx.dtype(0))


register("", "Gemm", since_version=1)(_gemm)


# ---------------------------------------------------------------- Einsum
def _parse_term(ctx, term: str):
    """A term as a list of letters with at most one '...' (kept as the item '...')."""
    out, i = [], 0
    while i < len(term):
        ch = term[i]
        if term.startswith("...", i):
            if "..." in out:
                ctx.fail(f"Einsum term '{term}' has more than one ellipsis")
            out.append("...")
            i += 3
            continue
        if not ch.isalpha():
            ctx.fail(f"Einsum term '{term}' has an invalid character {ch!r}")
        out.append(ch)
        i += 1
    return out


def _parse_equation(ctx, eqn: str):
    eqn = eqn.replace(" ", "")
    if eqn.count("->") > 1:
        ctx.fail(f"Einsum equation '{eqn}' has more than one '->'")
    lhs, arrow, rhs = eqn.partition("->")
    terms = [_parse_term(ctx, t) for t in lhs.split(",")]
    out = _parse_term(ctx, rhs) if arrow else None
    return terms, out


@register("", "Einsum", since_version=12)
def einsum(ctx):
    eqn = ctx.require_attr("equation")
    if isinstance(eqn, bytes):
        eqn = eqn.decode()
    terms, out_term = _parse_equation(ctx, str(eqn))
    n_in = sum(1 for i in range(ctx.num_inputs) if ctx.has_input(i))
    if len(terms) != n_in:
        ctx.fail(f"Einsum equation has {len(terms)} operand terms but the node has {n_in} inputs")
    shapes = [ctx.shape(i) for i in range(len(terms))]
    if out_term is not None and "..." in out_term and not any("..." in t for t in terms):
        ctx.fail("Einsum output has an ellipsis that no operand has")
    if any(s is None for s in shapes):
        ctx.set_output(0, None, ctx.dtype(0))
        return
    letters: dict = {}
    ell_shapes = []
    for i, (t, s) in enumerate(zip(terms, shapes)):
        n_letters = sum(1 for x in t if x != "...")
        if "..." in t:
            n_ell = len(s) - n_letters
            if n_ell < 0:
                ctx.fail(f"Einsum operand {i} has rank {len(s)}, fewer than the {n_letters} letters of its term")
        else:
            n_ell = 0
            if len(s) != n_letters:
                ctx.fail(f"Einsum operand {i} has rank {len(s)} but its term names {n_letters} axes")
        axis = 0
        for x in t:
            if x == "...":
                ell_shapes.append(tuple(s[axis:axis + n_ell]))
                axis += n_ell
                continue
            d = s[axis]
            if x in letters:
                prev, where = letters[x]
                letters[x] = (unify(ctx, prev, d, "einsum.letter",
                                    f"Einsum letter '{x}': {where} is {show(prev)} and operand {i} "
                                    f"axis {axis} is {show(d)}; they must be equal"), where)
            else:
                letters[x] = (d, f"operand {i} axis {axis}")
            axis += 1
    ell = broadcast_shapes(ctx, ell_shapes, "einsum.ellipsis") if ell_shapes else ()
    if out_term is None:
        counts: dict = {}
        for t in terms:
            for x in t:
                if x != "...":
                    counts[x] = counts.get(x, 0) + 1
        out_term = (["..."] if ell_shapes else []) + sorted(x for x, c in counts.items() if c == 1)
    out = []
    seen = set()
    for x in out_term:
        if x == "...":
            out.extend(ell)
            continue
        if x in seen:
            ctx.fail(f"Einsum output names letter '{x}' twice")
        seen.add(x)
        if x not in letters:
            ctx.fail(f"Einsum output letter '{x}' does not appear in any operand")
        out.append(ctx.store.canon(letters[x][0]))
    ctx.set_output(0, tuple(out), ctx.dtype(0))
