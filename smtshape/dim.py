"""The value type users get back: a dim with its exactness."""
from __future__ import annotations

import enum

from .printing import show
from .record import Frozen


class Exactness(enum.Enum):
    EXACT = "exact"              # expr is the runtime size, as a function of the input symbols
    UPPER_BOUND = "upper_bound"  # only size <= bound is known (bound over input symbols)
    UNKNOWN = "unknown"          # neither


class Dim(Frozen):
    """One axis of a solved shape.

    ``expr``: an int or a sympy expression.  For EXACT dims it is over input
    symbols only; for UPPER_BOUND / UNKNOWN dims it may name data symbols
    (runtime quantities), and ``bound`` carries what is known.

    A static dim (EXACT with an int ``expr``) behaves like its number: ``Dim(64) == 64``,
    ``int(dim)``, ``range(dim)``, ``numpy.zeros(shape)``, ``dim < 100``.  A symbolic one
    raises TypeError on ``int()`` and on ordering (use ``Result.static_value``,
    ``Dim.evaluate`` or ``Result.prove``), and equals only an identical Dim.

    ``definitions``: (alias symbol, expression) pairs for size-capped terms in ``expr`` /
    ``bound``.  Never changed once made.
    """

    __slots__ = ("expr", "exactness", "bound", "definitions")
    _parts = __slots__

    def __init__(self, expr, exactness: Exactness = Exactness.EXACT, bound=None, definitions: tuple = ()):
        _set = object.__setattr__
        _set(self, "expr", expr)
        _set(self, "exactness", exactness)
        _set(self, "bound", bound)
        _set(self, "definitions", definitions)

    def evaluate(self, env: dict):
        """The size at ``env`` ({input dim name: int}) for an EXACT dim, else None."""
        from .expr import evaluate
        if self.exactness is not Exactness.EXACT:
            return None
        return evaluate(self.expr, env, dict(self.definitions))

    @property
    def is_static(self) -> bool:
        return self.exactness is Exactness.EXACT and isinstance(self.expr, int)

    def __eq__(self, other):
        if isinstance(other, Dim):
            return (self.expr, self.exactness, self.bound, self.definitions) == \
                (other.expr, other.exactness, other.bound, other.definitions)
        if isinstance(other, int) and not isinstance(other, bool):
            return self.is_static and self.expr == other
        return NotImplemented

    def __hash__(self):
        if self.is_static:
            return hash(self.expr)           # equal to the int it equals
        return hash((self.expr, self.exactness, self.bound, self.definitions))

    def _number(self, what: str) -> int:
        if self.is_static:
            return self.expr
        kind = "symbolic" if self.exactness is Exactness.EXACT else f"not exact ({self.exactness.name})"
        raise TypeError(f"{what}: {self!r} is {kind}, not a static size; use "
                        "Result.static_value(dim), dim.evaluate({name: int, ...}) or Result.prove(...)")

    def __int__(self) -> int:
        return self._number("int()")

    def __index__(self) -> int:
        return self._number("as an index")

    def _cmp(self, other, op):
        b = other._number("comparison") if isinstance(other, Dim) else other
        if not isinstance(b, int) or isinstance(b, bool):
            return NotImplemented
        return op(self._number("comparison"), b)

    def __lt__(self, other):
        return self._cmp(other, int.__lt__)

    def __le__(self, other):
        return self._cmp(other, int.__le__)

    def __gt__(self, other):
        return self._cmp(other, int.__gt__)

    def __ge__(self, other):
        return self._cmp(other, int.__ge__)

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
