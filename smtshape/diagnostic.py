"""``Diagnostic``: one finding of an analysis as reports list it (a conflict, a
specialization, an annotation mismatch, an assumption, an op with no rule, ...).

Below the engine and the result: the engine records the walk's own, ``Result``
adds the rest (``Result.diagnostics``)."""
from __future__ import annotations

from .labels import node_phrase
from .record import Record


class Diagnostic(Record):
    """``kind`` (conflict | specialization | annotation | assumption | no_rule |
    rule_error | warning | undecided), ``message``, the ``node`` and its ``op_type``
    (when one), ``severity`` (info | warning | error).  Compared by its parts; not
    hashable."""

    _parts = ("kind", "message", "node", "op_type", "severity")

    def __init__(self, kind: str, message: str, node: str = "", op_type: str = "", severity: str = "info"):
        self.kind = kind
        self.message = message
        self.node = node
        self.op_type = op_type
        self.severity = severity

    def __str__(self) -> str:
        where = ""
        if self.node:
            where = (node_phrase(self.op_type, self.node) if self.op_type else f"node '{self.node}'") + ": "
        return f"[{self.severity}] {self.kind}: {where}{self.message}"
