"""Upper bounds of dim expressions over chosen symbols: what a data-dependent size is at
most, in terms of input dims (a NonZero count, a TopK of ``min(80, n)``, a Slice
``[:120]`` of a run-time count, an If whose branches differ).

Below the rules and the result (both use it); it reads a store's declared bounds and
alias definitions and never asks a solver.
"""
from __future__ import annotations

from . import expr as E
from .lazy import sympy

_BOUND_DEPTH = 48
_WRAP_RANGE = 2 ** 31 - 1


def upper_bound_over(store, e, keep):
    """An upper bound of dim expression ``e`` over the symbols ``keep(s)`` accepts, or None.

    Read structurally, each step monotone, so the bound holds wherever ``e``'s symbols
    take values the store allows: a symbol ``keep`` rejects is replaced by its declared
    upper bound (a data symbol: NonZero's count <= the element count) or, an alias, by its
    definition; ``min(a, b)`` is at most whichever of ``a``, ``b`` is bounded (``min(80, n)
    <= 80`` whatever ``n`` is); ``max``, a broadcast and a Piecewise are at most the largest
    of their values (a Piecewise keeps its conditions when they read only kept symbols);
    a sum of non-negative multiples, products of non-negative factors, ``a // k`` and
    ``ceil(a / k)`` for a positive divisor follow their arguments; ``a % k`` is below ``k``
    and, for ``a >= 0``, at most ``a`` (a modulus of 2**32 or more alone, an integer type's
    wrap, gives no bound); a term with a negative coefficient takes its lower bound (0 for
    a size)."""
    memo: dict = {}

    def kept(x) -> bool:
        return all(keep(s) for s in E.free_symbols(x))

    def nonnegative(x) -> bool:
        # sympy's assumptions, else the store's interval (domains and facts, no solver);
        # a quotient of non-negative terms is non-negative (its rule required the divisor > 0)
        if isinstance(x, int):
            return x >= 0
        if x.is_nonnegative is True or store.interval(x)[0] >= 0:
            return True
        if isinstance(x, (E.FloorDiv, E.CeilDiv)):
            return all(nonnegative(E.norm(a)) for a in x.args)
        return False

    low_memo: dict = {}

    def lower(x, depth):
        """A lower bound over kept symbols (the mirror of ``up``), or None."""
        if isinstance(x, int):
            return x
        if isinstance(x, sympy.Integer):
            return int(x)
        if kept(x):
            return x
        if depth > _BOUND_DEPTH:
            return None
        if x in low_memo:
            return low_memo[x]
        low_memo[x] = None
        out = low_step(x, depth + 1)
        if out is None:
            lo = store.interval(x)[0]
            out = None if lo == float("-inf") else int(lo)
        low_memo[x] = out
        return out

    def linear(x, depth, same, other):
        # a sum's bound: each term's coefficient times its argument's bound of the same
        # side (a non-negative coefficient) or of the other side (a negative one)
        acc = 0
        for t in x.args:
            co, rest = t.as_coeff_Mul()
            if not co.is_Integer:
                return None
            b = same(rest, depth) if co >= 0 else other(rest, depth)
            if b is None:
                return None
            acc = E.add(acc, E.mul(int(co), b))
        return acc

    def low_step(x, depth):
        if isinstance(x, sympy.Symbol):
            defn = store.definitions.get(x)
            return lower(store.canon(defn), depth) if defn is not None else None
        if isinstance(x, sympy.Add):
            return linear(x, depth, lower, up)
        if isinstance(x, sympy.Mul):
            co, rest = x.as_coeff_Mul()
            fs = sympy.Mul.make_args(rest)
            if co.is_Integer and co >= 0 and len(fs) == 1:
                b = lower(fs[0], depth)
                return None if b is None else E.mul(int(co), b)
            if not co.is_Integer or not all(nonnegative(f) for f in fs):
                return None
            if co < 0:                   # co * (product of factors >= 0) >= co * (product of their bounds)
                acc = int(co)
                for f in fs:
                    b = up(f, depth)
                    if b is None:
                        return None
                    acc = E.mul(acc, b)
                return acc
            return 0
        if isinstance(x, (sympy.Min, sympy.Max, E.Bcast, sympy.Piecewise)):
            vals = [a.expr for a in x.args] if isinstance(x, sympy.Piecewise) else list(x.args)
            bs = [lower(a, depth) for a in vals]
            if isinstance(x, sympy.Max):          # at least any one of its arguments
                bs = [b for b in bs if b is not None]
                return E.max_of(bs) if bs else None
            if any(b is None for b in bs):
                return None
            out = bs[0]
            for b in bs[1:]:
                out = E.smin(out, b)
            return out
        if isinstance(x, (E.FloorDiv, E.CeilDiv)):
            a, b = x.args
            la = lower(a, depth)
            if la is None or not kept(b):
                return None
            return E.floordiv(la, E.norm(b)) if isinstance(x, E.FloorDiv) else E.ceildiv(la, E.norm(b))
        return None

    def up(x, depth):
        if isinstance(x, int):
            return x
        if isinstance(x, sympy.Integer):
            return int(x)
        if kept(x):
            return x
        if depth > _BOUND_DEPTH:
            return None
        if x in memo:
            return memo[x]
        memo[x] = None               # a cycle through declared bounds gives no bound
        memo[x] = out = step(x, depth + 1)
        return out

    def most(vals):
        if not vals or any(v is None for v in vals):
            return None
        return E.max_of(vals)

    def step(x, depth):
        if isinstance(x, sympy.Symbol):
            defn = store.definitions.get(x)
            if defn is not None:
                return up(store.canon(defn), depth)
            info = store.info(x)
            if info is None or info.upper is None:
                return None
            return up(store.canon(info.upper), depth)
        if isinstance(x, sympy.Add):
            return linear(x, depth, up, lower)
        if isinstance(x, sympy.Mul):
            co, rest = x.as_coeff_Mul()
            if not co.is_Integer or co < 0:
                return None
            acc = int(co)
            for f in sympy.Mul.make_args(rest):
                if not nonnegative(f):
                    return None
                b = up(f, depth)
                if b is None:
                    return None
                acc = E.mul(acc, b)
            return acc
        if isinstance(x, sympy.Min):
            bs = [b for b in (up(a, depth) for a in x.args) if b is not None]
            if not bs:
                return None
            out = bs[0]
            for b in bs[1:]:
                out = E.smin(out, b)
            return out
        if isinstance(x, (sympy.Max, E.Bcast)):
            return most([up(a, depth) for a in x.args])
        if isinstance(x, sympy.Piecewise):
            vals = [up(a.expr, depth) for a in x.args]
            if any(v is None for v in vals):
                return None
            if all(kept(a.cond) for a in x.args if a.cond != sympy.true):
                return E.norm(sympy.Piecewise(*((E.to_sympy(v), a.cond) for v, a in zip(vals, x.args))))
            return most(vals)
        if isinstance(x, (E.FloorDiv, E.CeilDiv)):
            a, b = x.args
            ua = up(a, depth)
            if ua is None:
                return None
            if kept(b):          # the divisor is positive (its rule required it)
                return E.floordiv(ua, E.norm(b)) if isinstance(x, E.FloorDiv) else E.ceildiv(ua, E.norm(b))
            return ua if nonnegative(a) else None     # divided by some b >= 1
        if isinstance(x, E.Mod):
            a, b = x.args
            below = E.norm(b) if kept(b) else up(b, depth)
            if below is None:
                return None
            below = E.sub(below, 1)
            ua = up(a, depth) if nonnegative(a) else None
            if ua is not None:
                return E.smin(ua, below)
            # the modulus alone: a 32- or 64-bit wrap (int32(x) = (x + 2**31) % 2**32 - 2**31)
            # bounds the size by the type's range only, which says nothing about it
            return None if isinstance(below, int) and below >= _WRAP_RANGE else below
        return None

    b = up(e, 0)
    return None if b is None or not kept(b) else E.norm(b)
