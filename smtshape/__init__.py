"""smtshape: symbolic shape analysis of ONNX models with an SMT backend.

    import smtshape
    result = smtshape.analyze("model.onnx", assume=["seq <= 4096"], bind={"batch": 1})
    result.shape("logits")
"""
from .api import analyze
from .constraints import Conflict, Constraint, Provenance
from .dim import Dim, Exactness
from .errors import BadInput, RuleError, SmtShapeError
from .registry import register
from .result import Result, Specialization
from .store import Verdict

__all__ = ["analyze", "Dim", "Exactness", "Verdict", "Result", "Specialization", "Conflict",
           "Constraint", "Provenance", "register", "SmtShapeError", "BadInput", "RuleError"]
__version__ = "0.1.0"
