"""Errors the user sees: one readable message, never a traceback.

Two ways a rule stops on a node, kept apart because they mean opposite things for
``smtshape check``:

- ``Invalid``: the node breaks a precondition of the spec.  ``Context.invalid`` has
  already recorded a conflict naming the node, the rule and both values; the model is
  not consistent.
- ``RuleError`` (``Context.cannot``): the rule cannot compute this case, which says
  nothing against the model.  The node is *unchecked* (listed with its reason), so
  the model is not proven consistent either.
"""
from __future__ import annotations

from enum import Enum


class SmtShapeError(Exception):
    """Base class of every error smtshape raises on purpose."""


class BadInput(SmtShapeError):
    """The model, an expression, an assumption or a file is malformed (exit code 2)."""


class Cannot(str, Enum):
    """Why a rule cannot compute a node: the only reasons ``Context.cannot`` accepts.
    None of them says the model is invalid (that is ``Context.invalid``)."""

    RANK_UNKNOWN = "an input's rank is unknown"
    VALUE_UNKNOWN = "a value the rule reads is not known before run time"
    TYPE_UNKNOWN = "an input's element type is unknown"
    NOT_MODELED = "a feature of the op that smtshape does not model"
    TOO_LARGE = "beyond what the analysis tracks"
    # engine-only reasons (a rule never raises these)
    NO_RULE = "no smtshape rule for the op"
    INTERNAL = "an internal error in the rule"


class RuleError(SmtShapeError):
    """An op rule cannot compute this node (``Context.cannot``).

    The engine catches it: the node's outputs become UNKNOWN, the node is listed as
    unchecked with ``reason`` and the message, and the rest of the analysis goes on.
    A rule written outside smtshape may raise it directly (reason ``NOT_MODELED``).
    """

    def __init__(self, message: str, reason: Cannot = Cannot.NOT_MODELED):
        super().__init__(message)
        self.reason = reason


class Invalid(SmtShapeError):
    """A node breaks a precondition of the spec (``Context.invalid``): its conflict is
    already recorded; the engine gives the node's outputs UNKNOWN and goes on."""
