"""smtshape: symbolic shape analysis of ONNX models with an SMT backend.

    import smtshape
    result = smtshape.analyze("model.onnx", assume=["seq <= 4096"], bind={"batch": 1})
    result.shape("logits")
    result.save("static.onnx", simplify=True)     # the shapes written in, shape plumbing folded

Writing models: ``smtshape.simplify(model)`` and ``smtshape.specialize(model, bind)`` return
``(ModelProto, Report, Result)`` (``smtshape.written``: what is written and the ``Report``).

``import smtshape`` loads only what naming these exports needs: the analysis (and with
it the store, sympy and numpy as far as the model needs them) is imported on the first
read of ``analyze``, ``Result``, ``Verdict`` ... (``__getattr__`` below), and the op
families when a node of one of their ops is met (``ops/__init__.py``).
"""
from .constraints import Conflict, Constraint, Provenance
from .dim import Dim, Exactness
from .errors import BadInput, RuleError, SmtShapeError
from .registry import Registry
from .registry import register_user as register

__all__ = ["analyze", "clear_caches", "simplify", "specialize", "Dim", "Exactness", "Verdict", "Result", "QueryAnswer", "ValueInfo", "Specialization", "Conflict",
           "Constraint", "Provenance", "register", "Registry", "SmtShapeError", "BadInput", "RuleError"]
from ._version import __version__  # noqa: E402

from . import ops  # noqa: E402,F401  (the table of op families: each is imported on first use)

# exports whose modules import the analysis: imported on first read
_LAZY = {"analyze": "api", "simplify": "api", "specialize": "api", "Result": "result", "Specialization": "result", "ValueInfo": "result",
         "QueryAnswer": "query", "Verdict": "store"}


def __getattr__(name):
    """``smtshape.analyze`` ... on first read; ``smtshape.<submodule>`` too (a submodule
    not imported yet is imported when it is first named this way)."""
    import importlib
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def clear_caches() -> None:
    """Empty the memos smtshape keeps between analyses (the ``functools.lru_cache`` of
    every loaded module: expression building, printing, dim_param parsing, schema
    lookups).  No result depends on them: a long-running process may call this between
    analyses to give their memory back (never during one)."""
    import sys
    for name, module in list(sys.modules.items()):
        if module is not None and (name == __name__ or name.startswith(__name__ + ".")):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and hasattr(value, "cache_info"):
                    clear()


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
