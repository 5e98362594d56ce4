"""Shape annotations already in the model (value_info), under a policy.

``skip``      ignore them.
``refine``    (default) check each annotated dim against the inference: a
              refuted or unproven claim is reported (a warning naming the value,
              the axis and both sides) and not trusted; results come from
              inference alone.
``strict``    like ``refine``, but every refuted or unproven claim is a conflict.
``override``  adopt them as assumptions while walking: each annotated dim is
              added as ``inferred == annotated`` (kind ``annotation``), and an
              output of unknown rank takes the annotated shape.  Contradictions
              become conflicts that name the node and the annotation.
"""
from __future__ import annotations


from . import expr as E
from .constraints import Conflict, Provenance, eq
from .printing import KEYWORDS, show
from .store import Verdict

POLICIES = ("skip", "refine", "strict", "override")


def _annotated_dims(engine, shape, foreign: dict):
    """Annotated ir.Shape -> list of (int | expr | None)."""
    st = engine.store
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
            continue
        label = getattr(d, "value", None)
        if not label:
            out.append(None)
            continue
        if label.isascii() and label.isidentifier() and label not in KEYWORDS:
            # one plain name, the common case: what the parser would make of it, without it
            info = st.symbols.get(label)
            out.append(info.symbol if info is not None and info.kind == "input"
                       else foreign.setdefault(label, ("foreign", label)))
            continue

        parsed = _parsed_label(label)
        if parsed is not None and all(_input_symbol(st, n) is E.symbol(n) for n in parsed[1]):
            out.append(parsed[0])
        else:
            # not an expression, or a name we do not know: it claims only that equal names are equal
            out.append(foreign.setdefault(label, ("foreign", label)))
    return out


def _input_symbol(st, name):
    info = st.symbols.get(name)
    return info.symbol if info is not None and info.kind == "input" else None


def _parsed_label(label: str):
    """(expression, the names it reads) of a dim_param, or None when it is not an
    expression (``graph.read_dim_param``, the one reader of dim_params).  Each name is read
    as ``expr.symbol(name)``, the symbol the store makes for an input dim of that name:
    the caller uses the expression only when every name is one."""
    from .graph import read_dim_param
    read = read_dim_param(label)
    return (read[1], read[2]) if read[0] == "expr" else None


def apply_override(engine, ctx):
    """Policy 'override': called after a node's rule."""
    st = engine.store
    for i, o in enumerate(ctx.node.outputs):
        ann = engine.annotations.get(o)
        if ann is None:        # (no annotation, or only an element type)
            continue
        t = engine.values.get(o)
        dims = _annotated_dims(engine, ann, engine.foreign_names)
        prov = Provenance(ctx.name, ctx.op_type, "annotation.override",
                          f"value_info of '{o.name}' adopted (policy override)")
        if t is None or t.shape is None:
            shape = []
            for k, d in enumerate(dims):
                if d is None or isinstance(d, tuple):
                    key = d if isinstance(d, tuple) else None
                    s = engine.foreign_syms.get(key) if key else None
                    if s is None:
                        s = st.new_data(f"{o.name}_d{k}", prov)
                        if key:
                            engine.foreign_syms[key] = s
                    shape.append(s)
                else:
                    shape.append(d)
            from .context import TensorInfo
            engine.values[o] = TensorInfo(tuple(shape), (t.dtype if t else None) or o.dtype)
            continue
        if len(dims) != len(t.shape):
            engine.annotation_conflicts.append(Conflict(
                f"rank of '{o.name}' == {len(dims)}", [], {},
                f"annotation says rank {len(dims)}, inference says {len(t.shape)} (node '{ctx.name}')"))
            continue
        for k, (inf, a) in enumerate(zip(t.shape, dims)):
            if a is None or isinstance(a, tuple):
                continue
            st.add(eq(inf, a), Provenance(ctx.name, ctx.op_type, "annotation.override",
                                          f"value_info says '{o.name}' axis {k} is {show(a)}"),
                   kind="annotation")


def check_annotations(engine, policy: str):
    """Verify each annotation after the walk.

    ``refine`` / ``strict``: a declaration the inference *refutes* (``Relu`` of ``[N, 4]``
    declared ``[N, 5]``, or a different rank) is a conflict naming the value, the
    declaration and the inference (the declared equality joins the store set aside, so
    its explanation names the nodes that force the inferred size).  An unproven claim is
    a warning under ``refine`` and a conflict under ``strict``.  ``skip``: refuted
    declarations are reported as findings (diagnostics of kind ``annotation``), nothing more."""
    from .constraints import violation
    st = engine.store
    first_use: dict = {}   # foreign dim_param -> (value name, axis, inferred expr)
    facts_of: dict = {}    # relation text -> (value name, axis, declared, inferred) for explanations
    anns = engine.annotations
    if policy == "skip":      # the walk collected nothing: read the declarations now, for findings only
        from .irtypes import is_container
        declared = getattr(engine.model, "annotated_values", None)   # (a model read by reader.py)
        values = list(engine.values)
        if declared is not None:    # the same values in the same (walk) order, without a look at each
            declared = set(declared())
            values = [v for v in values if v in declared] if declared else []
        anns = {v: v.shape for v in values
                if (getattr(v, "shape", None) is not None or getattr(v, "dtype", None) is not None)
                and getattr(v, "name", None) and v.producer() is not None
                and not is_container(v.type)}
    for o, ann in anns.items():
        t = engine.values.get(o)
        node = o.producer()
        op = node.op_type if node is not None else ""
        problems = []      # (relation text, message, refuted relation | "rank" | "type" | None)
        declared_type = getattr(o, "dtype", None)
        if declared_type is not None and t is not None and t.seq is None and t.dtype is not None \
                and int(t.dtype) != int(declared_type):
            problems.append((f"element type of '{o.name}' == {_type_name(declared_type)}",
                             f"'{o.name}' is declared {_type_name(declared_type)} but {op or 'its producer'}'s "
                             f"type rules give it {_type_name(t.dtype)}", "type"))
        if ann is None:
            dims = ()
        else:
            dims = _annotated_dims(engine, ann, engine.foreign_names)
        if ann is None:
            pass
        elif t is None or t.shape is None:
            if any(isinstance(d, int) for d in dims):
                problems.append((f"shape of '{o.name}' as annotated", f"annotation gives '{o.name}' the shape "
                                f"{_declared(dims)} but the analysis cannot infer its rank; not trusted "
                                "(policy override adopts it)", None))
        elif len(dims) != len(t.shape):
            problems.append((f"rank of '{o.name}' == {len(dims)}",
                             f"'{o.name}' is declared {_declared(dims)} (rank {len(dims)}) but inferred "
                             f"{_inferred(st, t)} "
                             f"(rank {len(t.shape)})", "rank"))
        else:
            for k, (inf, a) in enumerate(zip(t.shape, dims)):
                if isinstance(a, tuple):
                    # a name we do not know claims only: every axis carrying it is equal
                    prev = first_use.setdefault(a[1], (o.name, k, inf))
                    if prev[:2] != (o.name, k) and st.decide(eq(prev[2], inf)) is not Verdict.PROVEN:
                        rel = f"'{prev[0]}'[{prev[1]}] == '{o.name}'[{k}]"
                        refuted = st.decide(eq(prev[2], inf)) is Verdict.REFUTED
                        verdict = "they differ" if refuted else "the analysis cannot prove them equal"
                        problems.append((rel, f"annotation names '{o.name}' axis {k} and '{prev[0]}' axis "
                                         f"{prev[1]} both {a[1]!r}, but inference gives {show(st.canon(inf))} "
                                         f"and {show(st.canon(prev[2]))}: {verdict}; annotation not trusted",
                                         eq(prev[2], inf) if refuted else None))
                    continue
                if a is None:
                    continue
                v = st.decide(eq(inf, a))
                if v is Verdict.PROVEN:
                    continue
                ci = st.canon(inf)
                rel = f"'{o.name}'[{k}] == {show(a)}"
                if v is Verdict.REFUTED:
                    inferred = _solved(t, st, _inferred(st, t))
                    facts_of[rel] = (o.name, k, show(a), show(ci) if isinstance(ci, int) else inferred)
                    problems.append((rel, f"'{o.name}' is declared {_declared(dims)} but inferred {inferred}: "
                                    f"axis {k} is declared {show(a)}, inference proves {show(ci)}",
                                    eq(inf, a)))
                else:
                    problems.append((rel, f"annotation says '{o.name}' axis {k} is {show(a)}, inference gives "
                                    f"{show(ci)} and cannot prove them equal; annotation not trusted", None))
        nname = engine.label(node) if problems and node is not None else ""
        for rel, p, refuted in problems:
            prov = Provenance(nname, op or "annotation", "annotation.contradiction" if refuted is not None
                              else "annotation.unproven", p)
            if policy == "skip":
                if refuted is not None:
                    engine.diagnostic("annotation", f"finding: {p} (annotations are ignored under policy skip)",
                                      nname, op, "warning")
            elif refuted is not None and st.conflicts:
                # the model is inconsistent already: a contradicted declaration is likely a symptom
                engine.diagnostic("annotation", f"{p} (not reported as a conflict of its own: the model has "
                                  "conflicts already)", nname, op, "warning")
            elif refuted is not None:
                r = violation(p, _FIX) if refuted in ("rank", "type") else refuted
                c = st.add(r, prov, kind="annotation", absorb=False)
                if facts_of.get(rel) is not None:
                    engine.annotation_facts[c.id] = facts_of[rel]
            elif policy == "strict":
                st.add(violation(f"{p} (policy strict)"), prov, kind="annotation")
            else:
                engine.diagnostic("annotation", p, nname, op, "warning")


_FIX = "correct the value_info declaration (or run with --policy skip)"


def _type_name(dtype) -> str:
    from .schemas import tensor_type
    return tensor_type(dtype) or str(dtype)


def _declared(dims) -> str:
    """Annotated dims as text (``[batch, ?, 64]``), for messages (built only for one)."""
    return "[" + ", ".join("?" if d is None else (d[1] if isinstance(d, tuple) else show(d)) for d in dims) + "]"


def _inferred(st, t) -> str:
    return "?" if t is None or t.shape is None else "[" + ", ".join(show(st.canon(d)) for d in t.shape) + "]"


def _solved(t, st, fallback: str) -> str:
    """The solved shape of TensorInfo ``t`` as text (``[batch, seq, 64]``), for messages
    (``solve.DimSolver``, as ``Result`` solves it)."""
    try:
        from .solve import DimSolver
        if t.shape is None:
            return fallback
        dim_of = DimSolver(st).dim_of
        return "[" + ", ".join(str(dim_of(d)) for d in t.shape) + "]"
    except Exception:
        return fallback
