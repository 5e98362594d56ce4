"""What every part of the store shares: the verdicts, and the truth of a relation at an
integer point (plain Python arithmetic): ``holds`` (every symbol bound) and ``truth_at``
(three-valued, for a point that binds only some).  The one home of relation evaluation."""
from __future__ import annotations

import enum
import math

from .. import expr as E
from ..constraints import _OPS, And, Not, Or, Rel

INF = math.inf


class Verdict(enum.Enum):
    """The answer to a question about the dims: PROVEN (holds for every input the
    constraints allow), REFUTED (for none), UNKNOWN (not decided: ``Store.decide`` says so
    for "true for some inputs and not others" too), CONTINGENT (``Result.prove`` /
    ``Result.query``: a witness exists on each side).  Not a truth value: ``bool(v)``
    raises TypeError; compare with ``is``."""

    PROVEN = "proven"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    CONTINGENT = "contingent"   # Result.query only (true for some inputs, false for others); decide never returns it

    def __bool__(self):
        # ``if result.prove(...)`` was taken for REFUTED too (enum members are truthy)
        raise TypeError(f"a Verdict ({self.name}) is not a truth value: compare it, e.g. "
                        "`result.prove(...) is Verdict.PROVEN`, or use `result.query(...).proven`")


def holds(r, env, defs, memo=None) -> bool:
    """Truth of a relation at an integer point ``env`` ({name: int}; aliases by their
    definitions ``defs``).  Raises when a term cannot be evaluated there."""
    if memo is None:
        memo = {}
    if isinstance(r, Rel):
        a, b = E.eval_int(r.lhs, env, defs, memo), E.eval_int(r.rhs, env, defs, memo)
        return {"==": a == b, "!=": a != b, "<=": a <= b, "<": a < b, ">=": a >= b, ">": a > b}[r.op]
    if isinstance(r, Or):
        return any(holds(x, env, defs, memo) for x in r.args)
    if isinstance(r, And):
        return all(holds(x, env, defs, memo) for x in r.args)
    return not holds(r.arg, env, defs, memo)


def truth_at(rel, env, defs) -> bool | None:
    """True / False where the bound symbols of ``env`` ({name: int}; aliases by their
    definitions ``defs``) decide ``rel``, else None (``Or`` is True when one side is)."""
    if isinstance(rel, Rel):
        a = E.evaluate(rel.lhs, env, defs)
        b = E.evaluate(rel.rhs, env, defs)
        if a is None or b is None:
            return None
        return _OPS[rel.op](a, b)
    if isinstance(rel, Not):
        v = truth_at(rel.arg, env, defs)
        return None if v is None else not v
    if isinstance(rel, (Or, And)):
        vals = [truth_at(a, env, defs) for a in rel.args]
        if isinstance(rel, Or):
            return True if any(v is True for v in vals) else (None if any(v is None for v in vals) else False)
        return False if any(v is False for v in vals) else (None if any(v is None for v in vals) else True)
    return None
