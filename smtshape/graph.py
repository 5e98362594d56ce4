"""Graph structure helpers: topological order, captured values, dim_param names.

Below ``engine`` and ``ops`` (both import it; it imports neither)."""
from __future__ import annotations

import re
from collections import deque
from functools import lru_cache

from . import expr as E
from . import irtypes as ir
from .errors import BadInput
from .labels import node_label


def topo_order(graph) -> list:
    """Nodes in dependency order (Kahn); BadInput naming a node on a cycle.

    Exporters write sorted graphs: the reader marks a graph it found sorted
    (``is_sorted``), otherwise one linear pass confirms it and returns the
    file's order; only an unsorted graph pays for the sort."""
    nodes = list(graph)
    if getattr(graph, "is_sorted", False) is True:
        return nodes
    if _already_sorted(nodes):
        return nodes
    index = {id(n): i for i, n in enumerate(nodes)}
    indeg = [0] * len(nodes)
    users: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        seen = set()
        for v in _all_inputs(n):
            p = v.producer() if v is not None else None
            if p is not None and id(p) in index and id(p) not in seen and p is not n:
                seen.add(id(p))
                indeg[i] += 1
                users[index[id(p)]].append(i)
            elif p is n:
                raise BadInput(f"graph has a cycle: node '{node_label(n, i)}' consumes its own output")
    q = deque(i for i in range(len(nodes)) if indeg[i] == 0)
    out = []
    while q:
        i = q.popleft()
        out.append(nodes[i])
        for j in users[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                q.append(j)
    if len(out) != len(nodes):
        stuck = [i for i in range(len(nodes)) if indeg[i] > 0]
        names = ", ".join(f"'{node_label(nodes[i], i)}'" for i in stuck[:5])
        raise BadInput(f"graph has a cycle (or a node reads a value produced after it in a loop): nodes {names}")
    return out


def _already_sorted(nodes) -> bool:
    """Does every node read only values produced before it (or outside the graph)?"""
    pending = set()
    for n in nodes:
        pending.update(map(id, n.outputs))
    for n in nodes:
        inputs = _all_inputs(n) if n.attributes else n.inputs
        for v in inputs:
            if v is not None and id(v) in pending:
                return False
        pending.difference_update(map(id, n.outputs))
    return True


def _all_inputs(node):
    """A node's inputs plus values its subgraphs capture from the outer scope."""
    yield from node.inputs
    if not node.attributes:
        return
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            yield from _captured(attr.value)
        elif attr.type == ir.AttributeType.GRAPHS:
            for g in attr.value:
                yield from _captured(g)


def _captured(g):
    inner = set()
    for n in g:
        for o in n.outputs:
            inner.add(id(o))
    for v in list(g.inputs) + list(g.initializers.values()):
        inner.add(id(v))
    for n in g:
        for v in _all_inputs(n):
            if v is not None and id(v) not in inner:
                yield v


def sanitize(name: str) -> str | None:
    """The dim_param as a symbol name when it is a plain identifier, else None."""
    if name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name) \
            and len(name) <= 128:
        return name
    return None


# ``floor(a / b)`` and ``ceiling(a / b)`` (sympy's and torch's spelling) as the expression
# language's floordiv / ceildiv, for a quotient with no parentheses inside
_FLOOR_CEIL = re.compile(r"\b(floor|ceil|ceiling)\(\s*([^()/]+?)\s*/\s*([^()/]+?)\s*\)")


@lru_cache(maxsize=4096)
def read_dim_param(label: str):
    """What a ``dim_param`` says, one home for the question: ``("name", name)`` for a
    plain identifier; ``("expr", expression, names)`` when the safe parser reads it as an
    integer expression over names (``past_sequence_length + sequence_length``, ``2*n``,
    ``n+1``, ``floor(h/2)``), each name as ``expr.symbol(name)``; else ``("opaque", label)``
    (a name that is neither: identical strings are still one dim).  Memoized: exporters
    write the same labels on every model."""
    name = sanitize(label)
    if name is not None:
        return ("name", name)
    from .parse import ParseError, parse_expr
    text = _FLOOR_CEIL.sub(lambda m: f"{'floordiv' if m.group(1) == 'floor' else 'ceildiv'}"
                                     f"({m.group(2)}, {m.group(3)})", label) if "(" in label else label
    names: list = []

    def sym(n):
        names.append(n)
        return E.symbol(n)
    try:
        e = parse_expr(text, symbol=sym)
    except (ParseError, BadInput, RecursionError):
        return ("opaque", label)
    if isinstance(e, int) or not names:
        return ("opaque", label)        # a number written as a name is still a name
    return ("expr", e, tuple(dict.fromkeys(names)))
