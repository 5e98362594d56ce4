"""How a node is named in messages: one label per node, one phrase around it.

Below everything that names a node (it imports nothing of the package): the reader's
and the graph's errors, the walk's provenance and diagnostics, annotations, conflict
causes, reports.  ``graph.py`` cannot be the home: ``constraints`` needs the phrase,
and ``graph`` reaches ``constraints`` through the dim_param parser."""
from __future__ import annotations


def node_label(node, index: int | None = None) -> str:
    """The node's name, or ``<op type>_<index>`` when it has none, ``index`` being its
    position in its graph's node list (file order, not the walk's: a function body's and
    a subgraph's nodes count in their own list), so one unnamed node has one label in
    every message.

    Without ``index`` the position is found (``node_position``); sites that meet many
    onnx_ir nodes pass the positions they counted.  A node in no graph (an onnx_ir
    node taken out of its graph) has no position: it is its op type alone; the
    analysis never meets one (it walks graphs)."""
    name = node.name
    if name:
        return name
    if index is None:
        index = node_position(node)
    return node.op_type if index is None else f"{node.op_type}_{index}"


def node_position(node) -> int | None:
    """A node's position in its graph's node list: a node ``reader`` made keeps it
    (``Node.position``); an onnx_ir node is looked up in its graph (linear in the
    graph); None for a node in no graph."""
    pos = getattr(node, "position", None)
    if pos is not None:
        return pos
    graph = getattr(node, "graph", None)
    if graph is None:
        return None
    try:
        return graph.index(node)
    except (ValueError, AttributeError):
        return None


def node_phrase(op_type: str, label: str) -> str:
    """``<op type> node '<label>'``: how every message names a node."""
    return f"{op_type} node '{label}'"
