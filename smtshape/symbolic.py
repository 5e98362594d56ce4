"""The sympy half of the term language: the four integer-exact function classes.

``FloorDiv``, ``CeilDiv``, ``Mod`` and ``Bcast`` (their meaning is in ``expr.py``'s
docstring) are sympy ``Function`` classes, so defining them imports sympy.  This module is
imported by ``expr`` when the first symbolic term is built (or ``E.FloorDiv`` ... is read),
never for a model whose dims are all static.  Everything else of the term language, and
every way to build a term, is ``expr.py``: use ``E.floordiv`` / ``E.FloorDiv`` from there.
"""
from __future__ import annotations

import sympy
from sympy import Integer


def _split_multiples(a, b: int):
    """Split ``a`` into (q, r) with a == b*q + r, q holding the terms whose
    integer coefficient is a multiple of the positive int ``b``."""
    q, r = [], []
    for term in sympy.Add.make_args(a):
        coeff, rest = term.as_coeff_Mul()
        if coeff.is_Integer and int(coeff) % b == 0:
            q.append((int(coeff) // b) * rest)
        else:
            r.append(term)
    return sympy.Add(*q), sympy.Add(*r)


def _pos_int(b) -> int | None:
    if isinstance(b, (int, Integer)) and int(b) > 0:
        return int(b)
    return None


class FloorDiv(sympy.Function):
    """floor(a / b) for integers, b > 0 (Python ``a // b``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if a.is_Integer and b.is_Integer and b != 0:
            return Integer(int(a) // int(b))
        if b == 1:
            return a
        if a == 0:
            return Integer(0)
        bi = _pos_int(b)
        if bi is None:
            return None
        if isinstance(a, FloorDiv) and _pos_int(a.args[1]):
            return FloorDiv(a.args[0], Integer(bi * int(a.args[1])))
        q, r = _split_multiples(a, bi)
        if q != 0:
            return q + FloorDiv(r, b)
        return None

    def _eval_is_nonnegative(self):
        a, b = self.args
        if a.is_nonnegative and b.is_positive:
            return True
        return None


class CeilDiv(sympy.Function):
    """ceil(a / b) for integers, b > 0 (``-((-a) // b)``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if a.is_Integer and b.is_Integer and b != 0:
            return Integer(-((-int(a)) // int(b)))
        if b == 1:
            return a
        if a == 0:
            return Integer(0)
        bi = _pos_int(b)
        if bi is None:
            return None
        q, r = _split_multiples(a, bi)
        if q != 0:
            return q + CeilDiv(r, b)
        return None

    def _eval_is_nonnegative(self):
        a, b = self.args
        if a.is_nonnegative and b.is_positive:
            return True
        return None


class Mod(sympy.Function):
    """a - b * floor(a / b) for integers, b > 0 (Python ``a % b``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if a.is_Integer and b.is_Integer and b != 0:
            return Integer(int(a) % int(b))
        if b == 1 or a == 0:
            return Integer(0)
        bi = _pos_int(b)
        if bi is None:
            return None
        q, r = _split_multiples(a, bi)
        if q != 0:
            return Mod(r, b)
        return None

    def _eval_is_nonnegative(self):
        if self.args[1].is_positive:
            return True
        return None


class Bcast(sympy.Function):
    """Broadcast of two sizes: ``a`` when ``b == 1`` else ``b``."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if a == b or a == 1:
            return b
        if b == 1:
            return a
        if b.is_Integer:          # b != 1: the result is b whatever a is
            return b
        if a.is_Integer:          # a != 1: b must be a or 1, result is a
            return a
        return None

    def _eval_is_nonnegative(self):
        a, b = self.args
        if a.is_nonnegative and b.is_nonnegative:
            return True
        return None
