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
from .common import broadcast_dim, broadcast_shapes, unify


# ---------------------------------------------------------------- MatMul
def _matmul_shape(ctx, a, b, what: str = "MatMul"):
    """numpy.matmul's output shape for shapes ``a`` and ``b``, with its relations."""
    for sh in (a, b):
        if sh is not None and len(sh) == 0:
            ctx.invalid(f"{what.lower()}.rank", f"{what} of a scalar: the operands have ranks "
                        f"{'?' if a is None else len(a)} and {'?' if b is None else len(b)}; both must have rank >= 1",
                        "multiply scalars with Mul")
    if a is None or b is None:
        return None
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
    for sh, what in ((a, "A"), (b, "B")):
        if sh is not None and len(sh) != 2:
            ctx.invalid("gemm.rank", f"Gemm's {what} has rank {len(sh)}; it must be a matrix (rank 2)",
                        "use MatMul for batched or vector products")
    c = ctx.shape(2) if ctx.has_input(2) else None
    if c is not None and len(c) > 2:
        ctx.invalid("gemm.c_rank", f"Gemm's C has rank {len(c)}; it must broadcast to (M, N): rank <= 2",
                    "give C a shape (M, N), (N), (1, N), (M, 1) or a scalar")
    if a is None or b is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    m, k1 = (a[1], a[0]) if ta else (a[0], a[1])
    k2, n = (b[1], b[0]) if tb else (b[0], b[1])
    unify(ctx, k1, k2, "gemm.inner",
          f"Gemm inner dims: A{'^T' if ta else ''} has K = {show(k1)} (transA={ta}) and "
          f"B{'^T' if tb else ''} has K = {show(k2)} (transB={tb}); they must be equal")
    m, n = ctx.store.canon(m), ctx.store.canon(n)
    if c is not None:
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
def _bad_equation(ctx, eqn, why):
    ctx.invalid("einsum.equation", f"Einsum equation '{eqn}' {why}", "write the equation as 'ab,bc->ac' with "
                "letters, at most one '...' per term and one '->'")


def _parse_term(ctx, term: str, eqn: str):
    """A term as a list of letters with at most one '...' (kept as the item '...')."""
    out, i = [], 0
    while i < len(term):
        ch = term[i]
        if term.startswith("...", i):
            if "..." in out:
                _bad_equation(ctx, eqn, f"has more than one ellipsis in the term '{term}'")
            out.append("...")
            i += 3
            continue
        if not (ch.isascii() and ch.isalpha()):
            _bad_equation(ctx, eqn, f"has the character {ch!r} in the term '{term}' (only letters and '...')")
        out.append(ch)
        i += 1
    return out


def _parse_equation(ctx, eqn: str):
    eqn = eqn.replace(" ", "")
    if eqn.count("->") > 1:
        _bad_equation(ctx, eqn, "has more than one '->'")
    lhs, arrow, rhs = eqn.partition("->")
    terms = [_parse_term(ctx, t, eqn) for t in lhs.split(",")]
    out = _parse_term(ctx, rhs, eqn) if arrow else None
    return terms, out


@register("", "Einsum", since_version=12)
def einsum(ctx):
    eqn = ctx.require_attr("equation")
    if isinstance(eqn, bytes):
        eqn = eqn.decode()
    eqn = str(eqn)
    terms, out_term = _parse_equation(ctx, eqn)
    n_in = sum(1 for i in range(ctx.num_inputs) if ctx.has_input(i))
    if len(terms) != n_in or n_in != ctx.num_inputs:
        ctx.invalid("einsum.operands", f"Einsum equation '{eqn}' names {len(terms)} operands but the node has "
                    f"{n_in} inputs", "give one equation term per input")
    if out_term is not None:
        # (a '...' in the output only stands for no axis: onnx's inference, numpy and onnxruntime agree)
        rep = sorted({x for x in out_term if x != "..." and out_term.count(x) > 1})
        if rep:
            ctx.invalid("einsum.output", f"Einsum equation '{eqn}' names the output letters {rep} more than once",
                        "name each output letter once")
        have = {x for t in terms for x in t}
        missing = sorted({x for x in out_term if x != "..." and x not in have})
        if missing:
            ctx.invalid("einsum.output", f"Einsum equation '{eqn}': the output letters {missing} appear in no operand",
                        "use only letters of the operands in the output")
    shapes = [ctx.shape(i) for i in range(len(terms))]
    letters: dict = {}
    ell_shapes = []
    ell_rank = None
    for i, (t, s) in enumerate(zip(terms, shapes)):
        if s is None:
            continue
        n_letters = sum(1 for x in t if x != "...")
        if "..." in t:
            n_ell = len(s) - n_letters
            if n_ell < 0:
                ctx.invalid("einsum.rank", f"Einsum operand {i} has rank {len(s)}, fewer than the {n_letters} letters "
                            f"of its term '{''.join(t)}' in '{eqn}'", "give the operand one axis per letter")
            if ell_rank is not None and n_ell != ell_rank[0]:
                ctx.invalid("einsum.ellipsis", f"Einsum '{eqn}': the '...' of operand {i} stands for {n_ell} axes, "
                            f"that of operand {ell_rank[1]} for {ell_rank[0]}; every '...' must stand for the same "
                            "number of axes", "give the operands the same number of '...' axes")
            ell_rank = ell_rank or (n_ell, i)
        else:
            n_ell = 0
            if len(s) != n_letters:
                ctx.invalid("einsum.rank", f"Einsum operand {i} has rank {len(s)} but its term '{''.join(t)}' in "
                            f"'{eqn}' names {n_letters} axes", "give the operand one axis per letter")
        axis = 0
        mine: dict = {}             # this operand's letters: (size, axis)
        for x in t:
            if x == "...":
                ell_shapes.append(tuple(s[axis:axis + n_ell]))
                axis += n_ell
                continue
            d = s[axis]
            if x in mine:
                # a letter repeated in one term (a diagonal): equal sizes, no broadcasting
                # (onnxruntime, numpy and onnx's reference evaluator refuse [1, 3] for 'ii')
                prev, at = mine[x]
                mine[x] = (unify(ctx, prev, d, "einsum.letter",
                                 f"Einsum letter '{x}' repeats in operand {i}: axis {at} is {show(prev)} and "
                                 f"axis {axis} is {show(d)}; they must be equal"), at)
            else:
                mine[x] = (d, axis)
            axis += 1
        for x, (d, at) in mine.items():
            # across operands a letter's sizes broadcast (a size 1 against any size), as in
            # onnxruntime, numpy.einsum and onnx's reference evaluator
            letters[x] = (d, f"operand {i} axis {at}") if x not in letters else \
                (broadcast_dim(ctx, letters[x][0], d, at, "einsum.letter"), letters[x][1])
    any_ell = any("..." in t for t in terms)
    if out_term is None:
        counts: dict = {}
        for t in terms:
            for x in t:
                if x != "...":
                    counts[x] = counts.get(x, 0) + 1
        out_term = (["..."] if any_ell else []) + sorted(x for x, c in counts.items() if c == 1)
    if any(s is None and "..." in t for s, t in zip(shapes, terms)) and "..." in out_term:
        ctx.set_output(0, None, ctx.dtype(0))      # (the '...' axes of an operand of unknown rank)
        return
    ell = broadcast_shapes(ctx, ell_shapes, "einsum.ellipsis") if ell_shapes else ()
    out = []
    for x in out_term:
        if x == "...":
            out.extend(ell)
        elif x in letters:
            out.append(ctx.store.canon(letters[x][0]))
        else:
            out.append(ctx.unknown_dim("einsum_dim"))      # (a letter of operands of unknown rank only)
    ctx.set_output(0, tuple(out), ctx.dtype(0))
