"""Translate dim expressions and relations to Z3 terms and to SMT-LIB2 text.

Partial functions keep their meaning *where they occur*: nothing is hoisted
into a side condition of the whole formula.

``FloorDiv(a, b)``  ``a div b`` for ``b >= 0`` and ``(-a) div (-b)`` for
                    ``b < 0`` (both are floor division: SMT-LIB ``div`` rounds
                    toward minus infinity for a positive divisor).  At ``b = 0``
                    it is SMT-LIB's ``a div 0``, an unspecified integer.
``Mod(a, b)``       ``a - b * FloorDiv(a, b)`` (Python ``%``).
``CeilDiv(a, b)``   ``-FloorDiv(-a, b)``.

So ``b == 0 or a // b == 2`` does not imply ``b > 0``: the division is
unconstrained at ``b = 0`` rather than assumed away.  The rule that builds a
division emits ``b > 0`` as a constraint of its own, with its provenance.

The one home of the dim domain is ``domain_bound``: every consumer (the
store's solver, explanation and entailment solvers, the SMT-LIB export) asks
it for a symbol's lower bound.

Anything we cannot translate (a rational, a float, an unknown function)
raises ``Untranslatable``; the store then keeps that constraint out of Z3,
which can only make answers less decided, never wrong.
"""
from __future__ import annotations

import sympy

from . import expr as E
from .constraints import And, Not, Or, Rel
from .lazyz3 import z3


class Untranslatable(Exception):
    pass


def domain_bound(sym, kind: str | None, inputs_positive: bool) -> int | None:
    """The lower bound every model must respect for ``sym``: 0 for dims, 1 for
    input dims under ``inputs_positive``, None for element-value symbols (any sign)."""
    if sym.is_nonnegative is not True:
        return None
    if kind == "input" and inputs_positive:
        return 1
    return 0


_REL = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
        "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}


class Z3Terms:
    """Expressions / relations -> Z3, in one Z3 context, with a term cache."""

    def __init__(self, ctx: z3.Context | None = None):
        self.ctx = ctx
        self.vars: dict[str, z3.ArithRef] = {}
        self._cache: dict = {}

    def var(self, name: str) -> z3.ArithRef:
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = z3.Int(name, self.ctx)
        return v

    def true(self):
        return z3.BoolVal(True, self.ctx)

    # -- expressions
    def term(self, e):
        if isinstance(e, int):
            return z3.IntVal(e, self.ctx)
        hit = self._cache.get(e)
        if hit is None:
            hit = self._cache[e] = self._term(e)
        return hit

    def _floordiv(self, a, b, bconst):
        if bconst is not None and bconst > 0:
            return a / b
        return z3.If(b >= 0, a / b, (-a) / (-b))

    def _term(self, e):
        if isinstance(e, sympy.Integer):
            return z3.IntVal(int(e), self.ctx)
        if isinstance(e, sympy.Symbol):
            return self.var(e.name)
        if isinstance(e, sympy.Add):
            return z3.Sum([self.term(a) for a in e.args])
        if isinstance(e, sympy.Mul):
            return z3.Product([self.term(a) for a in e.args])
        if isinstance(e, sympy.Pow):
            if e.exp.is_Integer and 0 < int(e.exp) <= 16:
                b = self.term(e.base)
                return z3.Product([b] * int(e.exp))
            raise Untranslatable(str(e))
        if isinstance(e, (E.FloorDiv, E.Mod, E.CeilDiv)):
            x, y = e.args
            a, b = self.term(x), self.term(y)
            bc = int(y) if y.is_Integer else None
            if isinstance(e, E.FloorDiv):
                return self._floordiv(a, b, bc)
            if isinstance(e, E.Mod):
                return a - b * self._floordiv(a, b, bc)
            return -self._floordiv(-a, b, bc)
        if isinstance(e, E.Bcast):
            a = self.term(e.args[0])
            b = self.term(e.args[1])
            return z3.If(b == 1, a, b)
        if isinstance(e, (sympy.Min, sympy.Max)):
            args = [self.term(a) for a in e.args]
            out = args[0]
            for x in args[1:]:
                out = z3.If(x < out, x, out) if isinstance(e, sympy.Min) else z3.If(x > out, x, out)
            return out
        if isinstance(e, sympy.Piecewise):
            out = None
            for val, cond in reversed(e.args):
                v = self.term(val)
                out = v if out is None else z3.If(self.cond(cond), v, out)
            return out
        raise Untranslatable(str(e))

    def cond(self, c):
        if c is sympy.true or c == True:  # noqa: E712
            return z3.BoolVal(True, self.ctx)
        if c is sympy.false or c == False:  # noqa: E712
            return z3.BoolVal(False, self.ctx)
        for k, op in _SYMPY_REL.items():
            if isinstance(c, k):
                return _REL[op](self.term(c.lhs), self.term(c.rhs))
        if isinstance(c, sympy.And):
            return z3.And([self.cond(a) for a in c.args])
        if isinstance(c, sympy.Or):
            return z3.Or([self.cond(a) for a in c.args])
        if isinstance(c, sympy.Not):
            return z3.Not(self.cond(c.args[0]))
        if isinstance(c, sympy.ITE):
            return z3.If(self.cond(c.args[0]), self.cond(c.args[1]), self.cond(c.args[2]))
        raise Untranslatable(str(c))

    # -- relations
    def relation(self, r):
        if isinstance(r, Rel):
            return _REL[r.op](self.term(r.lhs), self.term(r.rhs))
        if isinstance(r, Or):
            return z3.Or([self.relation(a) for a in r.args])
        if isinstance(r, And):
            return z3.And([self.relation(a) for a in r.args])
        if isinstance(r, Not):
            return z3.Not(self.relation(r.arg))
        raise Untranslatable(repr(r))

    formula = relation


_SYMPY_REL = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Le: "<=", sympy.Lt: "<", sympy.Ge: ">=", sympy.Gt: ">"}


# ---------------------------------------------------------------- SMT-LIB2 text
def smt_name(name: str) -> str:
    """A symbol as an SMT-LIB quoted symbol in smtshape's namespace, ``|d.<name>|``: a
    quoted symbol is the same symbol as the unquoted one, so ``|and|`` would be the
    keyword; ``d.`` keeps every dim apart from SMT-LIB's words.  ``|`` and ``\\``
    cannot appear inside one, so they are replaced (names are made unique by the caller)."""
    safe = "".join("_" if c in "|\\" or ord(c) < 32 or c in "\x7f\x85\u2028\u2029" else c for c in name)
    return f"|d.{safe}|"


def one_line(text: str) -> str:
    """Text safe inside a ``;`` comment: one line, no control characters."""
    return "".join(" " if (ord(c) < 32 or c in "\u2028\u2029\x7f\x85") else c for c in str(text))


class SmtLib:
    """Print expressions / relations as SMT-LIB2 with the same semantics as Z3Terms."""

    def __init__(self):
        self.names: dict[str, str] = {}
        self._used: set = set()

    def name(self, n: str) -> str:
        q = self.names.get(n)
        if q is None:
            q = smt_name(n)
            k = 1
            while q in self._used:
                q = smt_name(f"{n}~{k}")
                k += 1
            self._used.add(q)
            self.names[n] = q
        return q

    def term(self, e) -> str:
        if isinstance(e, (int, sympy.Integer)):
            v = int(e)
            return str(v) if v >= 0 else f"(- {-v})"
        if isinstance(e, sympy.Symbol):
            return self.name(e.name)
        if isinstance(e, sympy.Add):
            return "(+ " + " ".join(self.term(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            return "(* " + " ".join(self.term(a) for a in e.args) + ")"
        if isinstance(e, sympy.Pow):
            if e.exp.is_Integer and 0 < int(e.exp) <= 16:
                b = self.term(e.base)
                return b if int(e.exp) == 1 else "(* " + " ".join([b] * int(e.exp)) + ")"
            raise Untranslatable(str(e))
        if isinstance(e, (E.FloorDiv, E.Mod, E.CeilDiv)):
            x, y = e.args
            a, b = self.term(x), self.term(y)
            pos = y.is_Integer and int(y) > 0

            def fdiv(a, b):
                return f"(div {a} {b})" if pos else f"(ite (>= {b} 0) (div {a} {b}) (div (- {a}) (- {b})))"
            if isinstance(e, E.FloorDiv):
                return fdiv(a, b)
            if isinstance(e, E.Mod):
                return f"(- {a} (* {b} {fdiv(a, b)}))"
            return f"(- {fdiv(f'(- {a})', b)})"
        if isinstance(e, E.Bcast):
            a, b = self.term(e.args[0]), self.term(e.args[1])
            return f"(ite (= {b} 1) {a} {b})"
        if isinstance(e, (sympy.Min, sympy.Max)):
            args = [self.term(a) for a in e.args]
            out = args[0]
            op = "<" if isinstance(e, sympy.Min) else ">"
            for x in args[1:]:
                out = f"(ite ({op} {x} {out}) {x} {out})"
            return out
        if isinstance(e, sympy.Piecewise):
            out = None
            for val, cond in reversed(e.args):
                v = self.term(val)
                out = v if out is None else f"(ite {self.cond(cond)} {v} {out})"
            return out
        raise Untranslatable(str(e))

    def cond(self, c) -> str:
        if c is sympy.true or c == True:  # noqa: E712
            return "true"
        if c is sympy.false or c == False:  # noqa: E712
            return "false"
        for k, op in _SYMPY_REL.items():
            if isinstance(c, k):
                return self._rel(op, self.term(c.lhs), self.term(c.rhs))
        if isinstance(c, sympy.And):
            return "(and " + " ".join(self.cond(a) for a in c.args) + ")"
        if isinstance(c, sympy.Or):
            return "(or " + " ".join(self.cond(a) for a in c.args) + ")"
        if isinstance(c, sympy.Not):
            return f"(not {self.cond(c.args[0])})"
        if isinstance(c, sympy.ITE):
            return f"(ite {self.cond(c.args[0])} {self.cond(c.args[1])} {self.cond(c.args[2])})"
        raise Untranslatable(str(c))

    @staticmethod
    def _rel(op, a, b) -> str:
        if op == "!=":
            return f"(not (= {a} {b}))"
        return f"({'=' if op == '==' else op} {a} {b})"

    def relation(self, r) -> str:
        if isinstance(r, Rel):
            return self._rel(r.op, self.term(r.lhs), self.term(r.rhs))
        if isinstance(r, Or):
            return "(or " + " ".join(self.relation(a) for a in r.args) + ")"
        if isinstance(r, And):
            return "(and " + " ".join(self.relation(a) for a in r.args) + ")"
        if isinstance(r, Not):
            return f"(not {self.relation(r.arg)})"
        raise Untranslatable(repr(r))
