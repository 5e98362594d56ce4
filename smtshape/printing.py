"""Print dim expressions in the project's expression language.

The output is what ``smtshape.parse.parse_expr`` reads back (round trip):
``+ - * // %``, integers, names, and the calls ``min``, ``max``,
``ceildiv``, ``bcast`` and ``if(cond, a, b)``.  Used for reports, JSON and the
``dim_param`` strings written by ``Result.save``.
"""
from __future__ import annotations

from functools import lru_cache

from . import expr as E
from .lazy import sympy


def show(e) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, bool):
        return "1" if e else "0"
    return _show(e)


BRIEF_OPS = 60     # past this many operations a term is described, not printed (``brief``)


def brief(e) -> str:
    """``show(e)`` for a term a person can read; a longer one (a chain of hundreds of
    broadcasts) as ``<a term of N operations>``: for messages, whose text would
    otherwise cost O(N) per node and be unreadable anyway.  Not parsed back."""
    if isinstance(e, (int, bool)) or E.size(e) <= BRIEF_OPS:
        return show(e)
    return f"<a term of {E.size(e)} operations>"


@lru_cache(maxsize=65536)
def _show(e) -> str:
    try:
        return _p0(e)
    except (ValueError, RecursionError):
        return str(e)   # a report must never fail on an odd term; such text is not re-parsed


@lru_cache(maxsize=65536)
def _p0(e) -> str:
    """``_p(e, 0)``, remembered: the argument of a function (bcast, min, max, ceildiv, a
    Piecewise's values) prints the same wherever it stands, so a chain of n broadcasts
    prints each link once, not once per value that holds it (O(n) terms, not O(n**2))."""
    return _p(e, 0)


# the language's reserved words: a name that is one of them is printed quoted
KEYWORDS = ("and", "or", "not")


def _name(n: str) -> str:
    if n and (n[0].isalpha() or n[0] == "_") and all(c.isalnum() or c == "_" for c in n) and n not in KEYWORDS:
        return n
    return '"' + n.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cheap_order(e):
    """Terms of a sum: symbolic ones first (sympy's canonical order), the constant last."""
    terms = list(e.args)
    return [t for t in terms if not t.is_Number] + [t for t in terms if t.is_Number]


# precedence: 0 top, 1 additive, 2 multiplicative, 3 unary/atom
def _p(e, prec: int) -> str:
    if isinstance(e, (int, sympy.Integer)):
        s = str(int(e))
        return f"({s})" if int(e) < 0 and prec > 1 else s
    if isinstance(e, sympy.Symbol):
        return _name(e.name)
    if isinstance(e, sympy.Add):
        # sympy's display order costs milliseconds on big sums (it evaluates terms
        # numerically to sort them); past a small size, sympy's canonical order will do
        terms = list(e.as_ordered_terms()) if E.size(e) <= 40 else _cheap_order(e)
        out = _p(terms[0], 1)
        for t in terms[1:]:
            c, rest = t.as_coeff_Mul()
            if c.is_Number and c < 0:
                out += " - " + _p(-t, 2)
            else:
                out += " + " + _p(t, 1)
        return f"({out})" if prec > 1 else out
    if isinstance(e, sympy.Mul):
        c, rest = e.as_coeff_Mul()
        if c == -1:
            s = "-" + _p(rest, 3)
            return f"({s})" if prec > 1 else s
        factors = []
        for f in sympy.Mul.make_args(e):
            if isinstance(f, sympy.Pow) and f.exp.is_Integer and f.exp > 0:
                factors.extend([f.base] * int(f.exp))
            else:
                factors.append(f)
        s = " * ".join(_p(f, 3) for f in factors)
        return f"({s})" if prec > 2 else s
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
        s = " * ".join([_p(e.base, 3)] * int(e.exp))
        return f"({s})" if prec > 2 else s
    if isinstance(e, E.FloorDiv):
        s = f"{_p(e.args[0], 2)} // {_p(e.args[1], 3)}"
        return f"({s})" if prec > 2 else s
    if isinstance(e, E.Mod):
        s = f"{_p(e.args[0], 2)} % {_p(e.args[1], 3)}"
        return f"({s})" if prec > 2 else s
    if isinstance(e, E.CeilDiv):
        return f"ceildiv({_p0(e.args[0])}, {_p0(e.args[1])})"
    if isinstance(e, E.Bcast):
        return f"bcast({_p0(e.args[0])}, {_p0(e.args[1])})"
    if isinstance(e, sympy.Min):
        return "min(" + ", ".join(_p0(a) for a in e.args) + ")"
    if isinstance(e, sympy.Max):
        return "max(" + ", ".join(_p0(a) for a in e.args) + ")"
    if isinstance(e, sympy.Piecewise):
        out = None
        for val, cond in reversed(e.args):
            if out is None:
                out = _p(val, 0)
            else:
                out = f"if({_cond(cond)}, {_p(val, 0)}, {out})"
        return out
    if isinstance(e, sympy.logic.boolalg.BooleanAtom):
        return "1" if bool(e) else "0"
    raise ValueError(f"cannot print expression {e!r}")


def _cond(c) -> str:
    if c is sympy.true or c == True:  # noqa: E712
        return "1 == 1"
    for k, op in E.relation_classes():
        if isinstance(c, k):
            return f"{_p(c.lhs, 1)} {op} {_p(c.rhs, 1)}"
    if isinstance(c, sympy.And):
        return " and ".join(f"({_cond(a)})" for a in c.args)
    if isinstance(c, sympy.Or):
        return " or ".join(f"({_cond(a)})" for a in c.args)
    if isinstance(c, sympy.Not):
        return f"not ({_cond(c.args[0])})"
    raise ValueError(f"cannot print condition {c!r}")
