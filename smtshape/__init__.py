"""smtshape: symbolic shape analysis of ONNX models with an SMT backend.

    import smtshape
    result = smtshape.analyze("model.onnx", assume=["seq <= 4096"], bind={"batch": 1})
    result.shape("logits")
    result.save("static.onnx", simplify=True)     # the shapes written in, shape plumbing folded

Writing models: ``smtshape.simplify`` (``simplify``, ``specialize``, ``Report``).
"""
from .api import analyze
from .constraints import Conflict, Constraint, Provenance
from .dim import Dim, Exactness
from .errors import BadInput, RuleError, SmtShapeError
from .registry import Registry
from .registry import register_user as register
from .query import QueryAnswer
from .result import Result, Specialization, ValueInfo
from .store import Verdict

__all__ = ["analyze", "Dim", "Exactness", "Verdict", "Result", "QueryAnswer", "ValueInfo", "Specialization", "Conflict",
           "Constraint", "Provenance", "register", "Registry", "SmtShapeError", "BadInput", "RuleError"]
__version__ = "0.1.0"

from . import ops  # noqa: E402,F401  (registers the built-in rules, eagerly)
