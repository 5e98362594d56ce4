"""Translate dim expressions and relations to Z3 terms.

Every translation returns the Z3 term and the side conditions its
arithmetic needs (a positive divisor for each FloorDiv / CeilDiv / Mod).
Terms are cached per expression.  Anything we cannot translate (a rational,
a float, an unknown function) raises ``Untranslatable``; the store then
keeps that constraint out of Z3, which can only make answers less
decided, never wrong.
"""
from __future__ import annotations

import sympy
import z3

from . import expr as E
from .constraints import And, Not, Or, Rel


class Untranslatable(Exception):
    pass


class Z3Terms:
    def __init__(self, ctx: z3.Context | None = None):
        self.ctx = ctx
        self.vars: dict[str, z3.ArithRef] = {}
        self._cache: dict = {}

    def var(self, name: str) -> z3.ArithRef:
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = z3.Int(name, self.ctx)
        return v

    # -- expressions
    def term(self, e, side: list):
        if isinstance(e, int):
            return z3.IntVal(e, self.ctx)
        hit = self._cache.get(e)
        if hit is not None:
            t, sc = hit
            side.extend(sc)
            return t
        sc: list = []
        t = self._term(e, sc)
        self._cache[e] = (t, tuple(sc))
        side.extend(sc)
        return t

    def _term(self, e, side):
        if isinstance(e, sympy.Integer):
            return z3.IntVal(int(e), self.ctx)
        if isinstance(e, sympy.Symbol):
            return self.var(e.name)
        if isinstance(e, sympy.Add):
            return z3.Sum([self.term(a, side) for a in e.args])
        if isinstance(e, sympy.Mul):
            return z3.Product([self.term(a, side) for a in e.args])
        if isinstance(e, sympy.Pow):
            if e.exp.is_Integer and 0 < int(e.exp) <= 16:
                b = self.term(e.base, side)
                return z3.Product([b] * int(e.exp))
            raise Untranslatable(str(e))
        if isinstance(e, (E.FloorDiv, E.Mod, E.CeilDiv)):
            a = self.term(e.args[0], side)
            b = self.term(e.args[1], side)
            if not (e.args[1].is_Integer and int(e.args[1]) > 0):
                side.append(b > 0)
            if isinstance(e, E.FloorDiv):
                return a / b
            if isinstance(e, E.Mod):
                return a % b
            return -((-a) / b)
        if isinstance(e, E.Bcast):
            a = self.term(e.args[0], side)
            b = self.term(e.args[1], side)
            return z3.If(b == 1, a, b)
        if isinstance(e, (sympy.Min, sympy.Max)):
            args = [self.term(a, side) for a in e.args]
            out = args[0]
            for x in args[1:]:
                out = z3.If(x < out, x, out) if isinstance(e, sympy.Min) else z3.If(x > out, x, out)
            return out
        if isinstance(e, sympy.Piecewise):
            out = None
            for val, cond in reversed(e.args):
                v = self.term(val, side)
                out = v if out is None else z3.If(self.cond(cond, side), v, out)
            return out
        raise Untranslatable(str(e))

    def cond(self, c, side):
        if c is sympy.true or c == True:  # noqa: E712
            return z3.BoolVal(True, self.ctx)
        if c is sympy.false or c == False:  # noqa: E712
            return z3.BoolVal(False, self.ctx)
        ops = {sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b,
               sympy.Le: lambda a, b: a <= b, sympy.Lt: lambda a, b: a < b,
               sympy.Ge: lambda a, b: a >= b, sympy.Gt: lambda a, b: a > b}
        for k, f in ops.items():
            if isinstance(c, k):
                return f(self.term(c.lhs, side), self.term(c.rhs, side))
        if isinstance(c, sympy.And):
            return z3.And([self.cond(a, side) for a in c.args])
        if isinstance(c, sympy.Or):
            return z3.Or([self.cond(a, side) for a in c.args])
        if isinstance(c, sympy.Not):
            return z3.Not(self.cond(c.args[0], side))
        raise Untranslatable(str(c))

    # -- relations
    def relation(self, r, side: list):
        if isinstance(r, Rel):
            a = self.term(r.lhs, side)
            b = self.term(r.rhs, side)
            return {"==": lambda: a == b, "!=": lambda: a != b, "<=": lambda: a <= b,
                    "<": lambda: a < b, ">=": lambda: a >= b, ">": lambda: a > b}[r.op]()
        if isinstance(r, Or):
            return z3.Or([self.relation(a, side) for a in r.args])
        if isinstance(r, And):
            return z3.And([self.relation(a, side) for a in r.args])
        if isinstance(r, Not):
            return z3.Not(self.relation(r.arg, side))
        raise Untranslatable(repr(r))

    def formula(self, r):
        """The relation with its side conditions folded in (for assertion)."""
        side: list = []
        f = self.relation(r, side)
        return z3.And([f] + side) if side else f
