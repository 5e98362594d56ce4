"""``z3``, imported on first use.

Most analyses never ask Z3 anything (intervals, bounds read off facts and witness
points settle their questions, see store/), so a cold ``smtshape check`` need
not pay for importing it (about 20 ms).  Modules that use Z3 write
``from .lazyz3 import z3`` and use ``z3.<name>`` as usual; the first attribute
read imports the real module.  ``z3`` is a stand-in of ``lazy.py``: each name read
once is then kept in it, so later reads cost what a read of the real module's costs
(a stand-in that imported on every read cost about 1 ms per analysis that asks Z3)."""
from __future__ import annotations

from .lazy import stand_in

z3 = stand_in("z3")
