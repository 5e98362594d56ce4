"""Errors the user sees: one readable message, never a traceback."""


class SmtShapeError(Exception):
    """Base class of every error smtshape raises on purpose."""


class BadInput(SmtShapeError):
    """The model, an expression, an assumption or a file is malformed (exit code 2)."""


class RuleError(SmtShapeError):
    """An op rule cannot apply to this node (bad attribute, wrong input count).

    The engine catches it: the node's outputs become UNKNOWN and a diagnostic
    names the node; the rest of the analysis goes on.
    """
