"""``Diagnostic``: one finding of an analysis as reports list it (a conflict, a
specialization, an annotation mismatch, an assumption, an op with no rule, ...).

Below the engine and the result: the engine records the walk's own, ``Result``
adds the rest (``Result.diagnostics``)."""
from __future__ import annotations

from dataclasses import dataclass

from .labels import node_phrase


@dataclass
class Diagnostic:
    kind: str            # conflict | specialization | annotation | assumption | no_rule | rule_error | warning | undecided
    message: str
    node: str = ""
    op_type: str = ""
    severity: str = "info"   # info | warning | error

    def __str__(self) -> str:
        where = ""
        if self.node:
            where = (node_phrase(self.op_type, self.node) if self.op_type else f"node '{self.node}'") + ": "
        return f"[{self.severity}] {self.kind}: {where}{self.message}"
