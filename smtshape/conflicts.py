"""Why a conflict happened and what to change: the root causes and fixes of conflicts.

``enrich_conflicts`` fills each conflict's explanation once (``Conflict.explained``):
where each literal size of the core was introduced (a constant, an initializer, a
declaration, or the earliest node that made it) and a concrete change that removes it
(the shared root of many conflicts first: one edited constant, many symptoms; for a
conflict with an assumption, the assumption the model allows).  ``suggest_fix`` is the
one sentence every output prints (terminal, JSON), from that fix, the violated
precondition's own fix, or the kinds of constraints in the core.  The text around them
(values at the nodes, layout) is ``report.py``'s.
"""
from __future__ import annotations

from .constraints import Rel, Violation
from .findings import _lower, _upper
from .labels import node_label, node_phrase
from .lazyz3 import z3
from .store import OutOfBudget
from .text import one_line


def enrich_conflicts(result, conflicts) -> None:
    """Fill ``root`` and ``fix`` of each conflict (once): where each literal size of
    the core was introduced (a constant, an initializer, a declaration, or the earliest
    node that made it), and a concrete change that removes the conflict."""
    todo = [cf for cf in conflicts if not cf.enriched]
    if not todo:
        return
    nodes = _node_index(result)
    pending = []
    for cf in todo:
        root: list = []
        try:
            fix, traces = _enrich(result, cf, nodes, root)
        except Exception:        # explanations are best effort; never break a result
            cf.explained([], "")
            continue
        cf.explained(root, fix)
        if traces:
            pending.append((cf, traces))
    # the root shared by most conflicts is the likely cause (one edited constant, many symptoms)
    count: dict = {}
    for _, traces in pending:
        for key in {t[3] for t, _, _ in traces}:
            count[key] = count.get(key, 0) + 1
    for cf, traces in pending:
        t, val, other = min(traces, key=lambda x: (-count[x[0][3]], x[0][0]))
        rank = {tr[1]: (-count[tr[3]], tr[0]) for tr, _, _ in traces}
        last = cf.constraints[-1].provenance
        at = f" (they meet at '{last.node}' ({last.op_type}))" if last.node else ""
        cf.explained(sorted(cf.root, key=lambda r: rank.get(r, (0, 0))), t[2].format(old=val, new=other) + at)


def _node_index(result) -> dict:
    """Label (``labels.node_label``) -> node, over the main graph and its subgraphs."""
    out = {}
    todo = [result.model.graph]
    while todo:
        g = todo.pop()
        for i, n in enumerate(g):
            out.setdefault(node_label(n, i), n)
            for a in n.attributes.values():
                v = a.value
                if hasattr(v, "inputs") and hasattr(v, "outputs") and hasattr(v, "__iter__"):
                    todo.append(v)
    return out


def _enrich(result, cf, nodes, root: list):
    """(fix, traces) of one conflict, its root lines appended to ``root``."""
    cs = cf.constraints
    if not cs:
        return "", None
    assumptions = [c for c in cs if c.kind == "assumption"]
    annotations = [c for c in cs if c.provenance.rule.startswith("annotation")]
    model = [c for c in cs if c.kind != "assumption" and not c.provenance.rule.startswith("annotation")]
    if any(isinstance(c.relation, Violation) for c in cs):
        return "", None
    if assumptions and model:
        return _fix_assumption(result, assumptions, model), None
    if annotations:
        c = annotations[0]
        facts = result.engine.annotation_facts.get(c.id)
        if facts is None:
            return "", None
        name, axis, declared, inferred = facts
        root.append(f"the model declares '{name}' axis {axis} as {declared}; the inference gives {inferred}")
        return (f"declare '{name}' axis {axis} as {inferred} instead of {declared} (its value_info / "
                "graph output type), or analyze with --policy skip"), None
    # literal sizes of the core, each traced to where it was introduced
    lits = []
    for c in model:
        r = c.relation
        if isinstance(r, Rel):
            for a, b in ((r.lhs, r.rhs), (r.rhs, r.lhs)):
                a, b = result.store.canon(a), result.store.canon(b)
                if isinstance(a, int) and isinstance(b, int) and a != b and r.op == "==":
                    lits.append((a, b, c))
    traces = []
    for val, other, c in lits:
        node = nodes.get(c.provenance.node)
        if node is None:
            continue
        t = _trace(result, node, val)
        if t is not None:
            traces.append((t, val, other))
    seen = set()
    for t, val, _ in sorted(traces, key=lambda x: x[0][0]):
        if t[1] not in seen:
            seen.add(t[1])
            root.append(t[1])
    return "", traces


def _carries(result, v, val) -> str | None:
    """How graph value ``v`` carries the int ``val``: 'axis k' of its shape or 'element k'
    of its known value; None when it does not."""
    t = result.engine.values.get(v)
    if t is None:
        return None
    if t.value is not None and len(t.value) <= 64:
        for k, x in enumerate(t.value):
            if isinstance(x, int) and not isinstance(x, bool) and x == val:
                return f"element {k}"
    if t.shape is not None:
        for k, d in enumerate(t.shape):
            if result.store.canon(d) == val:
                return f"axis {k}"
    return None


def _trace(result, node, val, depth=0):
    """(hops, root sentence, fix template) for the int ``val`` seen at ``node``."""
    for v in node.inputs:
        if v is None:
            continue
        how = _carries(result, v, val)
        if how is None:
            continue
        prod = v.producer()
        name = v.name
        if prod is None or prod.op_type == "Constant":
            reader = node_phrase(node.op_type, result.engine.label(node))
            kind = "graph input" if prod is None and not v.const_value and \
                name in {i.name for i in result.model.graph.inputs} else "constant"
            if kind == "graph input":
                return (depth, f"{val} is {how} of the graph input '{name}' as the model declares it "
                               f"(read by {reader})",
                        f"declare '{name}' {how} as {{new}} instead of {{old}}", ("input", name, how))
            t = result.engine.values.get(v)
            shape = None if t is None or t.shape is None else tuple(result.store.canon(d) for d in t.shape)
            what = f"the {'Constant' if prod is not None else 'initializer'} '{name}'"
            desc = f"{what} (shape {shape}" + (f", value {list(t.value)}" if t is not None and t.value is not None
                                               and len(t.value) <= 16 else "") + ")"
            return (depth, f"{val} comes from {how} of {desc}, read by {reader}",
                    f"change {how} of {what} (read by {reader}) from {{old}} to {{new}}",
                    ("const", name, how))
        if depth < 48:
            deeper = _trace(result, prod, val, depth + 1)
            if deeper is not None:
                return deeper
            label = result.engine.label(prod)
            return (depth + 1, f"{val} is introduced by {node_phrase(prod.op_type, label)} "
                               f"({how} of its output '{name}')",
                    f"change {node_phrase(prod.op_type, label)} so that '{name}' {how} is {{new}} instead of {{old}}",
                    ("node", label, how))
    return None


def _fix_assumption(result, assumptions, model) -> str:
    """The assumption that would make the model consistent: the model side's bounds
    on the assumed symbols, as ``--assume`` text."""
    store = result.store
    syms = set()
    for c in assumptions:
        syms |= {x for x in c.relation.symbols() if store.info(x) is not None and store.info(x).kind == "input"}
    sv = store.group_solver(model)
    try:
        if sv.check() != z3.sat:
            return "remove the assumption " + " / ".join(repr(c.provenance.message) for c in assumptions)
    except OutOfBudget:
        return "remove the assumption " + " / ".join(repr(c.provenance.message) for c in assumptions)
    parts = []
    for s in sorted(syms, key=lambda x: x.name):
        v = sv.terms.var(s.name)
        try:
            if sv.check() != z3.sat:
                continue
            start = sv.value(v)
            if start is None:
                continue
            hi = _upper(sv, s, v, start)
            lo = _lower(sv, s, v, start, store.lower_bound(s) or 0)
        except OutOfBudget:
            continue
        if hi is not None and hi == lo:
            parts.append(f"{s.name} == {hi}")
            continue
        if lo is not None:
            parts.append(f"{s.name} >= {lo}")
        if hi is not None:
            parts.append(f"{s.name} <= {hi}")
    gone = " / ".join(repr(c.provenance.message) for c in assumptions)
    from .parse import parse_relation
    from .store import Solver
    from .z3bridge import Untranslatable
    keep = []
    for p in parts:
        chk = Solver(store.rlimit, store.watchdog_s, pooled=True)
        try:
            for c in assumptions:
                chk.add(chk.terms.relation(c.relation))
            chk.add(chk.terms.relation(parse_relation(p)))
        except (Untranslatable, Exception):
            keep = parts
            break
        if chk.check() == z3.unsat:
            keep.append(p)
    parts = keep or parts
    if parts:
        return f"replace the assumption {gone} by one the model allows: " + \
            " ".join(f"--assume '{p}'" for p in parts)
    return f"remove the assumption {gone}"


def suggest_fix(c) -> str:
    """One sentence: what to change so that the conflict goes away."""
    if getattr(c, "fix", ""):
        return c.fix        # concrete: the constant / declaration / assumption to change (enrich_conflicts)
    fixes = [k.relation.fix for k in c.constraints if getattr(k.relation, "fix", "")]
    if fixes:
        return "; ".join(dict.fromkeys(fixes))     # what the violated precondition's rule says to change
    nodes, assumptions, binds, annotations = [], [], [], False
    for k in c.constraints:
        p = k.provenance
        if k.kind == "assumption" or p.op_type == "assumption":
            if p.rule == "bind":
                r = k.relation
                binds.append(f"--bind {r.lhs}={r.rhs}" if getattr(r, "op", "") == "==" else p.message)
            else:
                assumptions.append(p.message)
        elif k.kind == "annotation" or p.op_type == "annotation" or p.rule.startswith("annotation"):
            annotations = True
        elif p.node:
            tag = f"'{one_line(p.node)}' ({p.op_type})"
            if tag not in nodes:
                nodes.append(tag)
    parts = []
    if nodes:
        parts.append(f"check the shapes feeding {'this node' if len(nodes) == 1 else 'these nodes'}: "
                     + ", ".join(nodes))
    if annotations or (not c.constraints and "annotation" in (c.relation + c.detail)):
        parts.append("correct the shape annotation (value_info) or run with --policy skip")
    if assumptions:
        parts.append("remove the assumption " + " / ".join(repr(one_line(a)) for a in assumptions))
    if binds:
        parts.append("change the binding " + " / ".join(one_line(b) for b in binds))
    if not parts:
        parts.append("check the shapes the model declares for its inputs and outputs")
    return ", or ".join(parts)
