"""The value type users get back: a dim with its exactness."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .printing import show


class Exactness(enum.Enum):
    EXACT = "exact"              # expr is the runtime size, as a function of the input symbols
    UPPER_BOUND = "upper_bound"  # only size <= bound is known (bound over input symbols)
    UNKNOWN = "unknown"          # neither


@dataclass(frozen=True)
class Dim:
    """One axis of a solved shape.

    ``expr``: an int or a sympy expression.  For EXACT dims it is over input
    symbols only; for UPPER_BOUND / UNKNOWN dims it may name data symbols
    (runtime quantities), and ``bound`` carries what is known.
    """

    expr: object
    exactness: Exactness = Exactness.EXACT
    bound: object = None
    definitions: tuple = ()   # (alias symbol, expression) pairs for size-capped terms in expr / bound

    def evaluate(self, env: dict):
        """The size at ``env`` ({input dim name: int}) for an EXACT dim, else None."""
        from .expr import evaluate
        if self.exactness is not Exactness.EXACT:
            return None
        return evaluate(self.expr, env, dict(self.definitions))

    @property
    def is_static(self) -> bool:
        return self.exactness is Exactness.EXACT and isinstance(self.expr, int)

    def __str__(self) -> str:
        if self.exactness is Exactness.EXACT:
            return show(self.expr)
        if self.exactness is Exactness.UPPER_BOUND:
            return f"{show(self.expr)}<={show(self.bound)}"
        return f"?{show(self.expr)}"

    def __repr__(self) -> str:
        return f"Dim({self})"

    def to_json(self) -> dict:
        out = {"expr": show(self.expr), "exactness": self.exactness.value}
        if isinstance(self.expr, int):
            out["value"] = self.expr
        if self.bound is not None:
            out["bound"] = show(self.bound)
        if self.definitions:
            out["definitions"] = {s.name: show(e) for s, e in self.definitions}
        return out
