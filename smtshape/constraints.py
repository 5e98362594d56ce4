"""Relations over dim expressions, and constraints (a relation with provenance).

Relations are a tiny immutable AST of our own (not sympy relationals: those
evaluate eagerly, cost milliseconds to build, and say nothing about where a
fact came from):

    Rel(op, lhs, rhs)   op in  == != <= < >= >
    Or(args), And(args), Not(arg)

``Constraint`` ties a relation to a ``Provenance``: the node, op type and
rule that emitted it and a sentence a person can read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from . import expr as E
from .labels import node_phrase
from .printing import show

_OPS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}
_NEGATE = {"==": "!=", "!=": "==", "<=": ">", "<": ">=", ">=": "<", ">": "<="}


def _kept_symbols(rel, make) -> frozenset:
    """``rel``'s symbols, made once and kept on it: a long chain's relations are asked for
    them many times, and each union is as long as the chain.  Not a field, so equality and
    hashing stay those of the relation's parts."""
    out = rel.__dict__.get("_symbols")
    if out is None:
        out = make()
        object.__setattr__(rel, "_symbols", out)
    return out


@dataclass(frozen=True)
class Rel:
    op: str
    lhs: object
    rhs: object

    def map(self, f: Callable) -> "Relation":
        return Rel(self.op, f(self.lhs), f(self.rhs))

    def const_value(self):
        """True/False when both sides are ints (or syntactically equal), else None."""
        a, b = self.lhs, self.rhs
        if isinstance(a, int) and isinstance(b, int):
            return _OPS[self.op](a, b)
        if a == b:
            return self.op in ("==", "<=", ">=")
        d = E.sub(a, b)
        if isinstance(d, int):
            return _OPS[self.op](d, 0)
        return None

    def negate(self) -> "Rel":
        return Rel(_NEGATE[self.op], self.lhs, self.rhs)

    def symbols(self) -> frozenset:
        return _kept_symbols(self, lambda: E.free_symbols(self.lhs) | E.free_symbols(self.rhs))

    def __str__(self) -> str:
        return f"{show(self.lhs)} {self.op} {show(self.rhs)}"


@dataclass(frozen=True)
class Or:
    args: tuple

    def map(self, f):
        return Or(tuple(a.map(f) for a in self.args))

    def const_value(self):
        vals = [a.const_value() for a in self.args]
        if any(v is True for v in vals):
            return True
        if all(v is False for v in vals):
            return False
        return None

    def negate(self):
        return And(tuple(a.negate() for a in self.args))

    def symbols(self):
        return _kept_symbols(self, lambda: frozenset().union(*(a.symbols() for a in self.args)))

    def __str__(self):
        return " or ".join(_paren(a) for a in self.args)


@dataclass(frozen=True)
class And:
    args: tuple

    def map(self, f):
        return And(tuple(a.map(f) for a in self.args))

    def const_value(self):
        vals = [a.const_value() for a in self.args]
        if any(v is False for v in vals):
            return False
        if all(v is True for v in vals):
            return True
        return None

    def negate(self):
        return Or(tuple(a.negate() for a in self.args))

    def symbols(self):
        return _kept_symbols(self, lambda: frozenset().union(*(a.symbols() for a in self.args)))

    def __str__(self):
        return " and ".join(_paren(a) for a in self.args)


@dataclass(frozen=True)
class Not:
    arg: object

    def map(self, f):
        return Not(self.arg.map(f))

    def const_value(self):
        v = self.arg.const_value()
        return None if v is None else not v

    def negate(self):
        return self.arg

    def symbols(self):
        return self.arg.symbols()

    def __str__(self):
        return f"not ({self.arg})"


Relation = Union[Rel, Or, And, Not]


def number_truth(r):
    """True / False for a relation whose every side is a plain int (``3 >= 1``, and
    ``And`` / ``Or`` of such), else None: no algebra, so cheap enough to ask first."""
    cls = r.__class__
    if cls is Rel:
        a, b = r.lhs, r.rhs
        return _OPS[r.op](a, b) if a.__class__ is int and b.__class__ is int else None
    if cls is And or cls is Or:
        vals = [number_truth(a) for a in r.args]
        if None in vals:
            return None
        return all(vals) if cls is And else any(vals)
    return None


def _sides_of(r) -> tuple:
    """Every expression a relation compares."""
    if isinstance(r, Rel):
        return (r.lhs, r.rhs)
    if isinstance(r, (Or, And)):
        return tuple(x for a in r.args for x in _sides_of(a))
    if isinstance(r, Not):
        return _sides_of(r.arg)
    return ()


def _paren(r) -> str:
    return f"({r})" if isinstance(r, (Or, And)) else str(r)


@dataclass(frozen=True)
class Violation(Rel):
    """A structural precondition a node breaks (two -1 in a Reshape target, a missing
    required attribute, a dim beyond int64): always false, printed as its text.
    ``Context.conflict`` records one as a conflict naming the node."""

    text: str = ""
    fix: str = ""          # what to change in the model, when the rule can say

    def map(self, f: Callable) -> "Relation":
        return self

    def const_value(self):
        return False

    def symbols(self) -> frozenset:
        return frozenset()

    def __str__(self) -> str:
        return self.text


def violation(text: str, fix: str = "") -> Violation:
    return Violation("==", 0, 1, text, fix)


def eq(a, b) -> Rel:
    return Rel("==", a, b)


def ne(a, b) -> Rel:
    return Rel("!=", a, b)


def le(a, b) -> Rel:
    return Rel("<=", a, b)


def lt(a, b) -> Rel:
    return Rel("<", a, b)


def ge(a, b) -> Rel:
    return Rel(">=", a, b)


def gt(a, b) -> Rel:
    return Rel(">", a, b)


def any_of(*rels) -> Relation:
    return rels[0] if len(rels) == 1 else Or(tuple(rels))


def all_of(*rels) -> Relation:
    return rels[0] if len(rels) == 1 else And(tuple(rels))


@dataclass(frozen=True)
class Provenance:
    """Where a constraint or symbol came from."""

    node: str          # node name ("" for assumptions and the domain)
    op_type: str       # op type, or "assumption" / "annotation" / "domain" / "input"
    rule: str          # short rule id, e.g. "matmul.inner", "concat.sum"
    message: str       # a sentence a person can read

    def where(self) -> str:
        if self.op_type in ("initializer", "input") and self.node:
            return f"{'graph input' if self.op_type == 'input' else 'initializer'} '{self.node}'"
        if self.node or self.op_type not in ("assumption", "domain", "input", "annotation"):
            return node_phrase(self.op_type, self.node)
        return self.op_type

    def __str__(self) -> str:
        return f"{self.where()} [{self.rule}]: {self.message}"


@dataclass
class Constraint:
    id: int
    relation: Relation
    provenance: Provenance
    kind: str = "rule"        # rule | assumption | declaration (an input's own dim_param) | annotation | domain | definition | bound
    status: str = "open"      # open | trivial | absorbed | residual | conflict

    def __str__(self) -> str:
        return f"{self.relation}    <- {self.provenance}"


@dataclass
class Conflict:
    """A set of constraints that cannot hold together.

    ``root`` (lines naming where the values involved were introduced: the constant,
    initializer, declaration or earliest node) and ``fix`` (a concrete change that
    removes the conflict) are given by ``explained``, which
    ``smtshape.conflicts.enrich_conflicts`` calls once per conflict."""

    relation: str                      # the relation that cannot hold, as text
    constraints: list = field(default_factory=list)   # Constraint objects in the core
    values: dict = field(default_factory=dict)        # readable values involved
    detail: str = ""
    root: list = field(default_factory=list)
    fix: str = ""
    enriched: bool = field(default=False, repr=False, compare=False)   # explained() ran

    def explained(self, root: list, fix: str) -> None:
        """Its root causes and fix, found after the conflict was (``enrich_conflicts``)."""
        self.root, self.fix, self.enriched = list(root), fix, True

    def __post_init__(self):
        # ``value 3 = 3`` says nothing: keep only values that differ from how they are written
        self.values = {k: v for k, v in (self.values or {}).items() if str(k) != str(v)}

    @property
    def nodes(self) -> list[str]:
        out = []
        for c in self.constraints:
            n = c.provenance.node
            if n and n not in out:
                out.append(n)
        return out

    @property
    def headline(self) -> str:
        """The relations of the core joined with unambiguous precedence."""
        rels = [c.relation for c in self.constraints]
        if len(rels) > 1 and len(rels) <= 6:
            return " and ".join(_paren(r) for r in rels)
        return self.relation

    def explain(self) -> str:
        rels = [c.relation for c in self.constraints]
        if len(rels) == 1 and isinstance(rels[0], Violation):
            c0 = self.constraints[0]
            verb = "is invalid" if c0.provenance.op_type in ("initializer", "input") else "cannot run"
            lines = [f"conflict: {c0.provenance.where()} {verb}: {rels[0]}"]
        elif len(rels) > 1:
            lines = [f"conflict: {self.headline} cannot hold together"]
        else:
            lines = [f"conflict: {self.relation} cannot hold"]
        for r in self.root:
            lines.append(f"  root cause: {r}")
        shown = [f"{k} = {v}" for k, v in self.values.items() if k != v]
        if shown:
            lines.append("  where " + ", ".join(shown))
        if self.detail and not self.detail.startswith("these constraints cannot all hold"):
            lines.append(f"  {self.detail}")
        for c in self.constraints:
            if isinstance(c.relation, Violation) and c.provenance.message == str(c.relation):
                # (a violated precondition: its sentence is the headline; name the rule once)
                lines.append(f"  <- {c.provenance.where()} [{c.provenance.rule}]")
                continue
            lines.append(f"  - {_paren(c.relation) if isinstance(c.relation, Or) else c.relation}  "
                         f"<- {c.provenance}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def premise_text(c) -> str:
    """An assumption-kind constraint as a premise: ``binding batch = 1`` (``bind``) or
    ``assumption seq <= 4096`` (``assume``, constraint files)."""
    p, r = c.provenance, c.relation
    if p.rule == "bind" and getattr(r, "op", "") == "==":
        return f"binding {show(r.lhs)} = {show(r.rhs)}"
    return ("binding " if p.rule == "bind" else "assumption ") + p.message
