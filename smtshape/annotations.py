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

from .constraints import Conflict, Provenance, eq
from .errors import BadInput
from .printing import show
from .store import Verdict

POLICIES = ("skip", "refine", "strict", "override")


def _annotated_dims(engine, shape, foreign: dict):
    """Annotated ir.Shape -> list of (int | expr | None)."""
    from .parse import ParseError, parse_expr
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

        def sym(name):
            info = st.symbols.get(name)
            if info is not None and info.kind == "input":
                return info.symbol
            raise KeyError(name)
        try:
            out.append(parse_expr(label, symbol=sym))
        except (ParseError, KeyError, BadInput):
            # a name we do not know: it claims only that equal names are equal
            out.append(foreign.setdefault(label, ("foreign", label)))
    return out


def apply_override(engine, ctx):
    """Policy 'override': called after a node's rule."""
    st = engine.store
    for i, o in enumerate(ctx.node.outputs):
        ann = engine.annotations.get(o)
        if ann is None:
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
    """Policies 'refine' and 'strict': verify each annotation after the walk."""
    st = engine.store
    first_use: dict = {}   # foreign dim_param -> (value name, axis, inferred expr)
    for o, ann in engine.annotations.items():
        t = engine.values.get(o)
        node = o.producer()
        nname = (node.name or node.op_type) if node is not None else ""
        op = node.op_type if node is not None else ""
        dims = _annotated_dims(engine, ann, engine.foreign_names)
        problems = []
        if t is None or t.shape is None:
            if any(isinstance(d, int) for d in dims):
                problems.append((f"shape of '{o.name}' as annotated", f"annotation gives '{o.name}' the shape "
                                f"({', '.join('?' if d is None or isinstance(d, tuple) else show(d) for d in dims)})"
                                " but the analysis cannot infer its rank; not trusted (policy override adopts it)"))
        elif len(dims) != len(t.shape):
            problems.append((f"rank of '{o.name}' == {len(dims)}",
                             f"annotation says '{o.name}' has rank {len(dims)}, inference says {len(t.shape)}"))
        else:
            for k, (inf, a) in enumerate(zip(t.shape, dims)):
                if isinstance(a, tuple):
                    # a name we do not know claims only: every axis carrying it is equal
                    prev = first_use.setdefault(a[1], (o.name, k, inf))
                    if prev[:2] != (o.name, k) and st.decide(eq(prev[2], inf)) is not Verdict.PROVEN:
                        rel = f"'{prev[0]}'[{prev[1]}] == '{o.name}'[{k}]"
                        verdict = "they differ" if st.decide(eq(prev[2], inf)) is Verdict.REFUTED \
                            else "the analysis cannot prove them equal"
                        problems.append((rel, f"annotation names '{o.name}' axis {k} and '{prev[0]}' axis "
                                         f"{prev[1]} both {a[1]!r}, but inference gives {show(st.canon(inf))} "
                                         f"and {show(st.canon(prev[2]))}: {verdict}; annotation not trusted"))
                    continue
                if a is None:
                    continue
                v = st.decide(eq(inf, a))
                if v is Verdict.PROVEN:
                    continue
                ci = st.canon(inf)
                rel = f"'{o.name}'[{k}] == {show(a)}"
                if v is Verdict.REFUTED:
                    problems.append((rel, f"annotation says '{o.name}' axis {k} is {show(a)}, "
                                    f"inference proves {show(ci)}: they differ; annotation not trusted"))
                else:
                    problems.append((rel, f"annotation says '{o.name}' axis {k} is {show(a)}, inference gives "
                                    f"{show(ci)} and cannot prove them equal; annotation not trusted"))
        for rel, p in problems:
            if policy == "strict":
                engine.annotation_conflicts.append(
                    Conflict(rel, [], {}, f"{p} (node '{nname}', policy strict)"))
            else:
                engine.diagnostic("annotation", p, nname, op, "warning")
