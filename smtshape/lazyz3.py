"""``z3``, imported on first use.

Most analyses never ask Z3 anything (intervals, bounds read off facts and witness
points settle their questions, see store/), so a cold ``smtshape check`` need
not pay for importing it (about 20 ms).  Modules that use Z3 write
``from .lazyz3 import z3`` and use ``z3.<name>`` as usual; the first attribute
read imports the real module."""
from __future__ import annotations


class _LazyZ3:
    __slots__ = ()

    def __getattr__(self, name):
        import z3 as real
        return getattr(real, name)

    def __repr__(self):
        return "<z3, imported on first use>"


z3 = _LazyZ3()
