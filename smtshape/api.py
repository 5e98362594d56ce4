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
            rlimit: int = 2_000_000, rules=None, accept_unchecked=(), _progress=None) -> Result:
    """Analyze the shapes of an ONNX model.

    model        path, bytes, ``onnx.ModelProto`` or ``onnx_ir.Model``
    assume       relations over input dim names (strings such as ``"seq <= 4096"``)
    bind         {input dim name: int}, or an iterable of ``"name=int"`` texts or (name, int) pairs
    policy       what to do with shape annotations in the model: skip / refine / strict / override
    constraints  path(s) of constraint files (one relation per line); a line naming a dim the
                 model does not have is skipped and listed in ``Result.skipped_assumptions``
                 (a file such as ``constraints/vision.constraints`` serves models whose dims
                 are named otherwise); an ``assume`` text naming one is an error
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
        rels.append((text, parse_relation(text), False))
    if isinstance(constraints, (str, os.PathLike)):
        constraints = [constraints]
    for path in constraints or []:
        for line, text, rel in load_constraints(path):
            rels.append((f"{text}  ({os.fspath(path)}:{line})", rel, True))
    bind = normalize_bind(bind)
    with paused_gc():
        return _analyze(model, rels, policy, inputs_positive, no_broadcast_one, rlimit, bind, rules,
                        accept_unchecked, _progress)


def normalize_bind(bind) -> dict:
    """``bind`` as {dim name: int}: from a dict, ``"name=int"`` texts or (name, int) pairs.
    BadInput (naming the ``bind`` argument, not a command-line flag) for anything else."""
    if bind is None:
        return {}
    if isinstance(bind, str):
        bind = [bind]
    if not isinstance(bind, dict):
        out = {}
        for item in bind:
            if isinstance(item, str):
                name, eq, val = item.partition("=")
                if not eq:
                    raise BadInput(f"bind: {item!r} is not 'name=int' (for example bind=['batch=1'] or "
                                   "bind={'batch': 1})")
                name, val = name.strip(), val.strip()
                try:
                    val = int(val)
                except ValueError:
                    raise BadInput(f"bind: {item!r}: the value {val!r} is not an integer") from None
            elif isinstance(item, (tuple, list)) and len(item) == 2:
                name, val = item
            else:
                raise BadInput(f"bind: {item!r} is neither 'name=int' nor a (name, int) pair "
                               "(for example bind={'batch': 1})")
            if name in out and out[name] != val:
                raise BadInput(f"bind: {name} is given twice with different values ({out[name]} and {val})")
            out[name] = val
        bind = out
    for name, val in bind.items():
        if not isinstance(name, str):
            raise BadInput(f"bind: the key {name!r} is not a dim name (a string such as 'batch')")
        if isinstance(val, bool) or not isinstance(val, int) or val < 0:
            raise BadInput(f"bind: {name} = {val!r}: a dim must be bound to a non-negative int")
    return dict(bind)


def _check_names(st, bind: dict, rels: list):
    """Bindings and assumptions over dims the model has (library wording, no CLI flags);
    the constraint-file relations naming other dims, split off: (kept rels, skipped)."""
    known = {i.name for i in st.input_symbols()}
    names = ", ".join(sorted(known)) or "none"
    for name in bind:
        if name not in known:
            raise BadInput(f"bind: no input dim is named '{name}' (the model's input dims: {names})")
    kept, skipped = [], []
    for text, rel, from_file in rels:
        unknown = sorted(s.name for s in rel.symbols() if s.name not in st.symbols)
        if not unknown:
            kept.append((text, rel))
        elif from_file:
            skipped.append((text, unknown))
        else:
            raise BadInput(f"assumption {text!r} names {', '.join(unknown)}, which is not an input dim "
                           f"(the model's input dims: {names})")
    return kept, skipped


def _analyze(model, rels, policy, inputs_positive, no_broadcast_one, rlimit, bind, rules=None,
             accept_unchecked=(), progress=None) -> Result:
    if progress is not None:
        progress.phase("reading the model")
    m = load_model(model)
    _check_opsets(m)
    mark("read")
    store = Store(Domain(inputs_positive=inputs_positive, no_broadcast_one=no_broadcast_one), rlimit=rlimit)
    if isinstance(accept_unchecked, str):
        accept_unchecked = [accept_unchecked]
    # (override adopts annotations between nodes: every rule runs, no cache)
    eng = Engine(m, store, rules, accepted_ops=accept_unchecked, policy=policy, cache=policy != "override")
    eng.declare_inputs(m.graph)
    rels, skipped = _check_names(store, bind, rels)
    bind_and_assume(eng, bind, rels)
    if progress is not None:
        progress.phase("walking the graph", poll=lambda: (eng.node_index, eng.node_count))
    eng.walk(m.graph)
    if progress is not None:
        progress.phase("checking the annotations")
    if policy in ("refine", "strict", "skip"):
        A.check_annotations(eng, policy)
    mark("walk")
    if progress is not None:
        progress.phase("checking consistency")
    consistency = store.check()
    mark("check")
    if progress is not None:
        progress.done()
    return Result(eng, store, policy, [t for t, _ in rels], consistency=consistency, skipped_assumptions=skipped,
                  source_path=os.fspath(model) if isinstance(model, (str, os.PathLike)) else None)


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


def simplify(model, bind=None, assume=None, **analyze_options):
    """Analyze ``model`` (any input ``smtshape.analyze`` takes) and return
    ``(ModelProto, Report, Result)``: the model with every proven constant folded, every
    proven identity bypassed, dead nodes removed, and its shapes written in.  With
    ``bind`` / ``assume`` the model is valid only where they hold (the report's
    ``premises`` lists them)."""
    from . import written as W
    result = analyze(model, assume=assume, bind=bind, **analyze_options)
    W.refuse_conflicts(result, "simplify")
    proto, report = W.write_model(result, simplify=True)
    return proto, report, result


def specialize(model, bind, assume=None, simplify: bool = True, **analyze_options):
    """Bind input dims and return ``(ModelProto, Report, Result)``: with every input dim
    bound, graph inputs, outputs and value_info static (data-dependent dims excepted);
    shape plumbing folded when ``simplify`` (default).  A partial binding writes the bound
    dims into the graph inputs too and keeps the others symbolic (``report.unbound``), so
    the model is always consistent with itself; ``report.not_static`` lists every dim that
    is not a number.  Raises ``BadInput`` when the model has a conflict under the binding."""
    from . import written as W
    result = analyze(model, assume=assume, bind=bind, **analyze_options)
    W.refuse_conflicts(result, "specialize")
    proto, report = W.write_model(result, simplify=simplify)
    return proto, report, result
