"""Plain value classes compared by their parts: what ``@dataclass`` gave the analysis'
value types, without its cost (defining a dataclass makes its methods with ``exec``:
about 0.7 ms each, paid by every cold start).

A subclass lists its parts in ``_parts`` (the constructor's arguments, in order, and what
``repr`` shows) and sets them in its own ``__init__``; it may give a faster ``_key``.

* ``Record``: equal to another object of the very same class with equal parts; not
  hashable (its parts may change).
* ``Frozen``: the same, hashed by its parts and never changed once made (assignment and
  deletion raise AttributeError; ``__init__`` sets its parts with ``object.__setattr__``);
  copies and pickles by its parts.  A subclass may name one more slot, ``_symbols``, that
  it may set later: a memo, not a part.

Nothing here imports anything: every layer may use it.
"""
from __future__ import annotations


class Record:
    __slots__ = ()
    _parts: tuple = ()
    __hash__ = None

    def _key(self) -> tuple:
        return tuple([getattr(self, f) for f in self._parts])

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._key() == other._key()
        return NotImplemented

    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self._parts)})"


class Frozen(Record):
    __slots__ = ()

    def __hash__(self):
        return hash(self._key())

    def __setattr__(self, name, value):
        if name != "_symbols":
            raise AttributeError(f"cannot assign to field {name!r} of {self.__class__.__name__}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r} of {self.__class__.__name__}")

    def __reduce__(self):
        return (self.__class__, self._key())
