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

from typing import Callable, Union

from . import expr as E
from .labels import node_phrase
from .printing import show
from .record import Frozen, Record

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
    them many times, and each union is as long as the chain.  Not a part of the relation,
    so equality and hashing stay those of its parts."""
    out = rel._symbols
    if out is None:
        out = make()
        object.__setattr__(rel, "_symbols", out)
    return out


class Rel(Frozen):
    """``lhs op rhs``: ``op`` one of ``==  !=  <=  <  >=  >``, each side an int or a dim
    expression."""

    __slots__ = ("op", "lhs", "rhs", "_symbols")
    _parts = ("op", "lhs", "rhs")

    def __init__(self, op: str, lhs, rhs):
        _set = object.__setattr__
        _set(self, "op", op)
        _set(self, "lhs", lhs)
        _set(self, "rhs", rhs)
        _set(self, "_symbols", None)

    def _key(self) -> tuple:
        return (self.op, self.lhs, self.rhs)

    # (written out: the store hashes and compares relations on every path, and Frozen's
    # generic methods cost a call more each)
    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.op, self.lhs, self.rhs) == (other.op, other.lhs, other.rhs) if other.__class__ is Rel \
            else self._key() == other._key()

    def __hash__(self):
        return hash((self.op, self.lhs, self.rhs)) if self.__class__ is Rel else hash(self._key())

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


class _Junction(Frozen):
    """``Or`` / ``And`` of ``args`` (relations)."""

    __slots__ = ("args", "_symbols")
    _parts = ("args",)

    def __init__(self, args: tuple):
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "_symbols", None)

    def _key(self) -> tuple:
        return (self.args,)

    def map(self, f):
        return self.__class__(tuple(a.map(f) for a in self.args))

    def symbols(self):
        return _kept_symbols(self, lambda: frozenset().union(*(a.symbols() for a in self.args)))


class Or(_Junction):
    __slots__ = ()

    def const_value(self):
        vals = [a.const_value() for a in self.args]
        if any(v is True for v in vals):
            return True
        if all(v is False for v in vals):
            return False
        return None

    def negate(self):
        return And(tuple(a.negate() for a in self.args))

    def __str__(self):
        return " or ".join(_paren(a) for a in self.args)


class And(_Junction):
    __slots__ = ()

    def const_value(self):
        vals = [a.const_value() for a in self.args]
        if any(v is False for v in vals):
            return False
        if all(v is True for v in vals):
            return True
        return None

    def negate(self):
        return Or(tuple(a.negate() for a in self.args))

    def __str__(self):
        return " and ".join(_paren(a) for a in self.args)


class Not(Frozen):
    __slots__ = ("arg", "_symbols")
    _parts = ("arg",)

    def __init__(self, arg):
        object.__setattr__(self, "arg", arg)
        object.__setattr__(self, "_symbols", None)

    def _key(self) -> tuple:
        return (self.arg,)

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


class Violation(Rel):
    """A structural precondition a node breaks (two -1 in a Reshape target, a missing
    required attribute, a dim beyond int64): always false, printed as its text.
    ``Context.conflict`` records one as a conflict naming the node.  ``fix``: what to
    change in the model, when the rule can say."""

    __slots__ = ("text", "fix")
    _parts = ("op", "lhs", "rhs", "text", "fix")

    def __init__(self, op: str, lhs, rhs, text: str = "", fix: str = ""):
        Rel.__init__(self, op, lhs, rhs)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "fix", fix)

    def _key(self) -> tuple:
        return (self.op, self.lhs, self.rhs, self.text, self.fix)

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


class Provenance(Frozen):
    """Where a constraint or symbol came from: ``node`` (its name; "" for assumptions
    and the domain), ``op_type`` (or "assumption" / "annotation" / "domain" / "input"),
    ``rule`` (a short rule id, e.g. "matmul.inner", "concat.sum") and ``message`` (a
    sentence a person can read)."""

    __slots__ = ("node", "op_type", "rule", "message")
    _parts = ("node", "op_type", "rule", "message")

    def __init__(self, node: str, op_type: str, rule: str, message: str):
        _set = object.__setattr__
        _set(self, "node", node)
        _set(self, "op_type", op_type)
        _set(self, "rule", rule)
        _set(self, "message", message)

    def _key(self) -> tuple:
        return (self.node, self.op_type, self.rule, self.message)

    def where(self) -> str:
        if self.op_type in ("initializer", "input") and self.node:
            return f"{'graph input' if self.op_type == 'input' else 'initializer'} '{self.node}'"
        if self.node or self.op_type not in ("assumption", "domain", "input", "annotation"):
            return node_phrase(self.op_type, self.node)
        return self.op_type

    def __str__(self) -> str:
        return f"{self.where()} [{self.rule}]: {self.message}"


class Constraint(Record):
    """One stated constraint: its ``id`` in the store, the ``relation``, its
    ``provenance``, ``kind`` (rule | assumption | declaration (an input's own dim_param) |
    annotation | domain | definition | bound) and ``status`` (open | trivial | absorbed |
    residual | conflict).  Compared by its parts; not hashable (the store changes
    ``status``)."""

    _parts = ("id", "relation", "provenance", "kind", "status")

    def __init__(self, id: int, relation: Relation, provenance: Provenance, kind: str = "rule",
                 status: str = "open"):
        self.id = id
        self.relation = relation
        self.provenance = provenance
        self.kind = kind
        self.status = status

    def __str__(self) -> str:
        return f"{self.relation}    <- {self.provenance}"


class Conflict(Record):
    """A set of constraints that cannot hold together: ``relation`` (the relation that
    cannot hold, as text), ``constraints`` (the Constraint objects of the core),
    ``values`` (the readable values involved: only those that differ from how they are
    written, as ``value 3 = 3`` says nothing) and ``detail``.

    ``root`` (lines naming where the values involved were introduced: the constant,
    initializer, declaration or earliest node) and ``fix`` (a concrete change that
    removes the conflict) are given by ``explained``, which
    ``smtshape.conflicts.enrich_conflicts`` calls once per conflict (``enriched``: it
    did; not a part).  Compared by its parts; not hashable."""

    _parts = ("relation", "constraints", "values", "detail", "root", "fix")

    def __init__(self, relation: str, constraints: list | None = None, values: dict | None = None,
                 detail: str = "", root: list | None = None, fix: str = "", enriched: bool = False):
        self.relation = relation
        self.constraints = [] if constraints is None else constraints
        self.values = {k: v for k, v in (values or {}).items() if str(k) != str(v)}
        self.detail = detail
        self.root = [] if root is None else root
        self.fix = fix
        self.enriched = enriched

    def explained(self, root: list, fix: str) -> None:
        """Its root causes and fix, found after the conflict was (``enrich_conflicts``)."""
        self.root, self.fix, self.enriched = list(root), fix, True

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
