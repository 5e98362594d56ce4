"""Translate dim expressions and relations to Z3 terms and to SMT-LIB2 text.

The meaning of every term is written once, in ``Translation``, over a few
primitives; ``Z3Terms`` builds Z3 terms with them and ``SmtLib`` SMT-LIB2 text,
so the solver and the export can never disagree.

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

from . import expr as E
from .constraints import And, Not, Or, Rel
from .lazy import sympy
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


class Translation:
    """The meaning of every dim term and relation, written once (the module doc), over a
    few primitives a subclass supplies: ``num``, ``var``, ``add`` / ``mul`` (a list),
    ``times`` / ``sub`` / ``div`` (two terms; ``div`` is SMT-LIB's ``div``: floor for a
    positive divisor), ``neg``, ``ite``, ``rel(op, a, b)`` (``b`` may be a small
    non-negative Python int: Z3 then keeps the constant on the right), ``conj`` / ``disj`` (a list),
    ``negation`` and ``boolean``.  ``Z3Terms`` builds Z3 terms with them, ``SmtLib``
    SMT-LIB2 text, so the two always mean the same.  Terms are cached per expression."""

    def __init__(self):
        self._cache: dict = {}

    # -- expressions
    def term(self, e):
        if isinstance(e, int):
            return self.num(e)
        hit = self._cache.get(e)
        if hit is None:
            hit = self._cache[e] = self._term(e)
        return hit

    def _floordiv(self, a, b, positive: bool):
        if positive:
            return self.div(a, b)
        return self.ite(self.rel(">=", b, 0), self.div(a, b), self.div(self.neg(a), self.neg(b)))

    def _term(self, e):
        if isinstance(e, sympy.Integer):
            return self.num(int(e))
        if isinstance(e, sympy.Symbol):
            return self.var(e.name)
        if isinstance(e, sympy.Add):
            return self.add([self.term(a) for a in e.args])
        if isinstance(e, sympy.Mul):
            return self.mul([self.term(a) for a in e.args])
        if isinstance(e, sympy.Pow):
            if e.exp.is_Integer and 0 < int(e.exp) <= 16:
                b = self.term(e.base)
                return self.mul([b] * int(e.exp))
            raise Untranslatable(str(e))
        if isinstance(e, (E.FloorDiv, E.Mod, E.CeilDiv)):
            x, y = e.args
            a, b = self.term(x), self.term(y)
            pos = bool(y.is_Integer) and int(y) > 0
            if isinstance(e, E.FloorDiv):
                return self._floordiv(a, b, pos)
            if isinstance(e, E.Mod):
                return self.sub(a, self.times(b, self._floordiv(a, b, pos)))
            return self.neg(self._floordiv(self.neg(a), b, pos))
        if isinstance(e, E.Bcast):
            a = self.term(e.args[0])
            b = self.term(e.args[1])
            return self.ite(self.rel("==", b, 1), a, b)
        if isinstance(e, (sympy.Min, sympy.Max)):
            args = [self.term(a) for a in e.args]
            out = args[0]
            op = "<" if isinstance(e, sympy.Min) else ">"
            for x in args[1:]:
                out = self.ite(self.rel(op, x, out), x, out)
            return out
        if isinstance(e, sympy.Piecewise):
            out = None
            for val, cond in reversed(e.args):
                v = self.term(val)
                out = v if out is None else self.ite(self.cond(cond), v, out)
            return out
        raise Untranslatable(str(e))

    def cond(self, c):
        if c is sympy.true or c == True:  # noqa: E712
            return self.boolean(True)
        if c is sympy.false or c == False:  # noqa: E712
            return self.boolean(False)
        for k, op in E.relation_classes():
            if isinstance(c, k):
                return self.rel(op, self.term(c.lhs), self.term(c.rhs))
        if isinstance(c, sympy.And):
            return self.conj([self.cond(a) for a in c.args])
        if isinstance(c, sympy.Or):
            return self.disj([self.cond(a) for a in c.args])
        if isinstance(c, sympy.Not):
            return self.negation(self.cond(c.args[0]))
        if isinstance(c, sympy.ITE):
            return self.ite(self.cond(c.args[0]), self.cond(c.args[1]), self.cond(c.args[2]))
        raise Untranslatable(str(c))

    # -- relations
    def relation(self, r):
        if isinstance(r, Rel):
            return self.rel(r.op, self.term(r.lhs), self.term(r.rhs))
        if isinstance(r, Or):
            return self.disj([self.relation(a) for a in r.args])
        if isinstance(r, And):
            return self.conj([self.relation(a) for a in r.args])
        if isinstance(r, Not):
            return self.negation(self.relation(r.arg))
        raise Untranslatable(repr(r))


class Z3Terms(Translation):
    """Expressions / relations -> Z3 terms, in one Z3 context (``Translation``)."""

    def __init__(self, ctx: z3.Context | None = None):
        super().__init__()
        self.ctx = ctx
        self.vars: dict[str, z3.ArithRef] = {}

    def var(self, name: str) -> z3.ArithRef:
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = z3.Int(name, self.ctx)
        return v

    def num(self, v):
        return z3.IntVal(v, self.ctx)

    def boolean(self, v):
        return z3.BoolVal(v, self.ctx)

    def add(self, xs):
        return z3.Sum(xs)

    def mul(self, xs):
        return z3.Product(xs)

    def times(self, a, b):
        return a * b

    def sub(self, a, b):
        return a - b

    def div(self, a, b):
        return a / b

    def neg(self, a):
        return -a

    def ite(self, c, a, b):
        return z3.If(c, a, b)

    def rel(self, op, a, b):
        return _REL[op](a, b)

    def conj(self, xs):
        return z3.And(xs)

    def disj(self, xs):
        return z3.Or(xs)

    def negation(self, x):
        return z3.Not(x)


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


class SmtLib(Translation):
    """Expressions / relations -> SMT-LIB2 text (``Translation``: the same meaning as
    ``Z3Terms``); every symbol in smtshape's namespace (``smt_name``), made unique."""

    def __init__(self):
        super().__init__()
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

    var = name

    def num(self, v) -> str:
        return str(v) if v >= 0 else f"(- {-v})"

    def boolean(self, v) -> str:
        return "true" if v else "false"

    def add(self, xs) -> str:
        return "(+ " + " ".join(xs) + ")"

    def mul(self, xs) -> str:
        return xs[0] if len(xs) == 1 else "(* " + " ".join(xs) + ")"

    def times(self, a, b) -> str:
        return f"(* {a} {b})"

    def sub(self, a, b) -> str:
        return f"(- {a} {b})"

    def div(self, a, b) -> str:
        return f"(div {a} {b})"

    def neg(self, a) -> str:
        return f"(- {a})"

    def ite(self, c, a, b) -> str:
        return f"(ite {c} {a} {b})"

    def rel(self, op, a, b) -> str:
        if op == "!=":
            return f"(not (= {a} {b}))"
        return f"({'=' if op == '==' else op} {a} {b})"

    def conj(self, xs) -> str:
        return "(and " + " ".join(xs) + ")"

    def disj(self, xs) -> str:
        return "(or " + " ".join(xs) + ")"

    def negation(self, x) -> str:
        return f"(not {x})"
