"""sympy and numpy, imported on first use.

A model whose dims are all static needs no symbolic algebra (sympy costs about 0.2 s to
import, most of a cold ``smtshape check``), and most rules need no array (numpy about
0.1 s, and it starts OpenBLAS threads).  So modules write ``from .lazy import sympy`` or
``from .lazy import numpy as np`` and use ``sympy.Symbol``, ``np.array`` as usual: the
name is a stand-in module whose first read of an attribute imports the real module;
each attribute read once is then kept in the stand-in, so later reads cost what a read
of the real module's attribute costs.

Invariant: nothing reads a stand-in's attribute while a module is being imported (a
table built from ``sympy.Eq`` at module level would import sympy with it): such tables
are built on first use.  ``tests/test_coldstart.py`` checks which modules a cold import
and a static analysis load.  (z3's stand-in, made here too, is ``lazyz3.z3``.)
"""
from __future__ import annotations

import importlib
import sys
import types


def stand_in(name: str) -> types.ModuleType:
    """A module object that imports ``name`` on its first attribute read (dunder names
    excepted: the import system and introspection ask for those and must not import)."""
    module = types.ModuleType(f"{__name__}.{name}", f"{name}, imported on first use (smtshape.lazy)")

    def __getattr__(attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        value = getattr(importlib.import_module(name), attr)
        setattr(module, attr, value)
        return value

    module.__getattr__ = __getattr__
    module.__lazy_name__ = name
    return module


def imported(module: types.ModuleType) -> bool:
    """Is the real module of a stand-in imported (by anyone)?  A value of one of its types
    can exist only then: ``imported(np) and isinstance(v, np.integer)`` asks the question
    without importing numpy for it."""
    return module.__lazy_name__ in sys.modules


sympy = stand_in("sympy")
numpy = stand_in("numpy")
