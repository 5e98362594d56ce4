"""The JSON format: one home for what ``--json`` and ``to_json`` give (the analysis, a
query's answer), as ``smtshape/schema/result-v1.json`` describes the analysis part.  It
only reads the objects it is given; nothing here decides anything."""
from __future__ import annotations

from .printing import show

JSON_SCHEMA_ID = "smtshape.result/1"


def _prov_json(p) -> dict:
    return {"node": p.node, "op_type": p.op_type, "rule": p.rule, "message": p.message}


def _constraint_json(c) -> dict:
    return {"id": c.id, "relation": str(c.relation), "kind": c.kind, "status": c.status,
            "node": c.provenance.node, "op_type": c.provenance.op_type, "rule": c.provenance.rule,
            "message": c.provenance.message}


def _spec_fix(s) -> str:
    if s.value is not None:
        return (f"the model only runs with {s.symbol} = {s.value}: declare it static (or --bind "
                f"{s.symbol}={s.value}), or check the nodes that force it")
    return f"inputs must satisfy {s.relation}: state it as an assumption (--assume '{s.relation}') or check the nodes"


def _assumptions_json(res) -> list:
    out = []
    for c in res.store.constraints:
        if c.kind == "assumption":
            p = c.provenance
            out.append({"kind": "bind" if p.rule == "bind" else "assume", "text": p.message,
                        "relation": str(c.relation), "constraint_id": c.id, "status": c.status})
    for d in res.store.domain.describe():
        out.append({"kind": "domain", "text": d, "relation": None, "constraint_id": None, "status": None})
    return out


def result_json(result) -> dict:
    """``Result.to_json``: every value's shape and dtype, the input dims, data symbols,
    constraints, conflicts (with their fixes), findings, assumptions, unchecked nodes and
    diagnostics, as ``smtshape/schema/result-v1.json`` describes."""
    from ._version import __version__
    from .conflicts import suggest_fix
    from .report import dim_counts
    vals = {}
    for name in result._by_name:
        s = result.shape(name)
        dt = result.dtype(name)
        vals[name] = {"dtype": dt.name if dt is not None and hasattr(dt, "name") else None,
                      "shape": None if s is None else [d.to_json() for d in s]}
    counts = dim_counts(result)
    axes = {}
    for (inp, axis), e in result.engine.input_dims.items():
        if hasattr(e, "name"):
            axes.setdefault(e.name, []).append({"input": inp, "axis": axis})
    st = result.store
    bound = {}
    for c in st.constraints:
        p = c.provenance
        if c.kind == "assumption" and p.rule == "bind" and getattr(c.relation, "op", "") == "==":
            bound[show(c.relation.lhs)] = c.relation.rhs
    return {
        "schema": JSON_SCHEMA_ID,
        "smtshape_version": __version__,
        "source": result.source_path,
        "policy": result.policy,
        "consistent": result.consistent,
        "summary": {"values": counts["values"], "rank_unknown": counts["rank_unknown"],
                    "dims": {"exact": counts["exact"], "static": counts["static"],
                             "symbolic": counts["symbolic"], "upper_bound": counts["upper_bound"],
                             "unknown": counts["unknown"]},
                    "conflicts": len(result.conflicts), "specializations": len(result.specializations),
                    "unchecked_nodes": len(result.unchecked_nodes), "undecided": len(result.undecided)},
        "values": vals,
        "inputs": {i.name: str(i.origin.message) for i in st.input_symbols()},
        "input_dims": [{"symbol": i.name, "generated": bool(i.generated), "axes": axes.get(i.name, []),
                        "bound_to": bound.get(i.name) if isinstance(bound.get(i.name), int) else None,
                        "origin": _prov_json(i.origin)}
                       for i in st.input_symbols()],
        "expression_dims": [{"input": inp, "axis": axis, "dim_param": label}
                            for (inp, axis), label in result.engine.expression_dims.items()],
        "data_symbols": {i.name: {"origin": str(i.origin), "provenance": _prov_json(i.origin),
                                  "upper": None if i.upper is None else show(st.canon(i.upper))}
                         for i in st.symbols.values() if i.kind == "data"},
        "constraints": [_constraint_json(c) for c in st.constraints if c.status != "trivial"],
        "conflicts": [{"relation": c.relation, "detail": c.detail,
                       "values": {str(k): str(v) for k, v in (c.values or {}).items()},
                       "nodes": c.nodes, "constraint_ids": [k.id for k in c.constraints],
                       "constraints": [_constraint_json(k) for k in c.constraints],
                       "suggested_fix": suggest_fix(c), "explanation": c.explain()}
                      for c in result.conflicts],
        "findings_not_searched": list(result.specializations.not_searched),
        "specializations": [{"symbol": s.symbol, "relation": s.relation, "value": s.value,
                             "nodes": s.nodes, "constraint_ids": [k.id for k in s.constraints],
                             "assumptions": s.assumptions,
                             "suggested_fix": _spec_fix(s)}
                            for s in result.specializations],
        "undecided": [{"id": c.id, "relation": str(c.relation), "node": c.provenance.node,
                       "op_type": c.provenance.op_type, "rule": c.provenance.rule,
                       "message": c.provenance.message} for c in result.undecided],
        "assumptions": _assumptions_json(result),
        "unchecked_nodes": [{"node": u.node, "op_type": u.op_type, "domain": u.domain, "reason": u.reason.name,
                             "message": u.message, "accepted": u.accepted} for u in result.unchecked_nodes],
        "diagnostics": [{"kind": d.kind, "severity": d.severity, "node": d.node, "op_type": d.op_type,
                         "message": d.message} for d in result.diagnostics],
    }


def query_json(ans) -> dict:
    """``QueryAnswer.to_json``: the claim, its verdict, a witness binding on each side
    (None when not searched), why it is UNKNOWN, the run-time quantities named and the
    premises the answer holds under."""
    return {"claim": ans.claim, "relation": str(ans.relation), "verdict": ans.verdict.name,
            "holds": ans.holds, "fails": ans.fails, "reason": ans.reason or None,
            "runtime": ans.runtime or None, "premises": ans.premises}
