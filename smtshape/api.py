"""``smtshape.analyze``: the library entry point."""
from __future__ import annotations

import os

from . import annotations as A
from .engine import Engine, bind_and_assume, ensure_ops_loaded, load_model
from .errors import BadInput
from .ops import NEWEST_OPSET
from .perf import mark, paused_gc
from .result import Result
from .store import Domain, Store


def analyze(model, assume=None, bind=None, policy: str = "refine", *, constraints=None,
            inputs_positive: bool = False, no_broadcast_one: bool = False,
            rlimit: int = 2_000_000, rules=None, accept_unchecked=()) -> Result:
    """Analyze the shapes of an ONNX model.

    model        path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``
    assume       relations over input dim names (strings such as ``"seq <= 4096"``)
    bind         {input dim name: int}
    policy       what to do with shape annotations in the model: skip / refine / strict / override
    constraints  path(s) of constraint files (one relation per line)
    inputs_positive, no_broadcast_one
                 named domain assumptions, off by default and reported when on
    rlimit       Z3 resource budget per query
    rules        a ``smtshape.Registry`` (rules for your own ops, over the built-ins);
                 default: the registry ``smtshape.register`` writes to
    accept_unchecked
                 op types (``"MyOp"`` or ``"com.example::MyOp"``) whose nodes have no rule and
                 are accepted as checked: ``consistent`` may then be True; they stay listed in
                 ``unchecked_nodes`` (``accepted=True``) and in the report
    """
    from .parse import load_constraints, parse_relation

    ensure_ops_loaded()
    if policy not in A.POLICIES:
        raise BadInput(f"unknown annotation policy {policy!r}; choose one of {', '.join(A.POLICIES)}")
    if isinstance(assume, str):
        assume = [assume]
    rels = []
    for text in assume or []:
        rels.append((text, parse_relation(text)))
    if isinstance(constraints, (str, os.PathLike)):
        constraints = [constraints]
    for path in constraints or []:
        for line, text, rel in load_constraints(path):
            rels.append((f"{text}  ({os.fspath(path)}:{line})", rel))
    with paused_gc():
        return _analyze(model, rels, policy, inputs_positive, no_broadcast_one, rlimit, bind, rules,
                        accept_unchecked)


def _analyze(model, rels, policy, inputs_positive, no_broadcast_one, rlimit, bind, rules=None,
             accept_unchecked=()) -> Result:
    m = load_model(model)
    _check_opsets(m)
    mark("read")
    store = Store(Domain(inputs_positive=inputs_positive, no_broadcast_one=no_broadcast_one), rlimit=rlimit)
    if isinstance(accept_unchecked, str):
        accept_unchecked = [accept_unchecked]
    eng = Engine(m, store, rules, accepted_ops=accept_unchecked)
    eng.policy = policy
    if policy == "override":
        eng.cache = None      # annotations adopted between nodes: every rule runs
    eng.declare_inputs(m.graph)
    bind_and_assume(eng, bind or {}, rels)
    eng.walk(m.graph)
    if policy in ("refine", "strict", "skip"):
        A.check_annotations(eng, policy)
    mark("walk")
    res = Result(eng, store, policy, [t for t, _ in rels])
    res.consistent = store.check()
    mark("check")
    if isinstance(model, (str, os.PathLike)):
        res.source_path = os.fspath(model)
    return res


def _check_opsets(m):
    """An opset of a standard domain newer than the installed onnx knows: a bad input
    (its ops' semantics are unknown here), never a silent analysis.  (onnx is asked
    only for an opset above the newest one smtshape has rules for.)"""
    newest = NEWEST_OPSET           # (not every family's rules: they load on first use)
    for domain, version in dict(m.opset_imports).items():
        if domain in ("", "ai.onnx") and version is not None and version < 1:
            raise BadInput(f"the model imports opset {version} of the default ONNX domain; opsets start at 1")
        if domain in ("", "ai.onnx") and version is not None and version > newest:
            import onnx
            known = onnx.defs.onnx_opset_version()
            if version > known:
                raise BadInput(f"the model imports opset {version} of the default ONNX domain; the installed "
                               f"onnx {onnx.__version__} knows opsets up to {known}")
