"""Control flow: If, Loop and Scan (subgraphs).

A subgraph reads outer values by reference: the engine's value table already
holds them, so walking a subgraph is running its nodes in topological order
and reading its outputs back.

Soundness of constraints emitted inside a subgraph: they hold only when that
subgraph actually runs.  A branch whose condition is known, or a Loop body that
certainly runs at least once, is walked in the main store.  Otherwise it is
walked in a *scratch* copy of the store, so that its constraints do not leak
into the model-wide constraint set; what comes back from it is compared and
kept only where that is sound (see ``_if_join`` and ``loop_rule``).  An If's
condition that is a relation over dims (a box count compared with 0) is stated in
each branch's fork, as the branch runs only then; a relation both branches state
holds whichever runs, so it becomes a fact of the model (``_lift_shared_facts``).

How a node inside a subgraph is reported follows from that: a conflict (a refuted
relation, or a node's ``ctx.invalid``) of a subgraph walked in the main store is a
conflict of the model; one of a subgraph walked in a scratch store stays in that store
(the branch may never run) and is dropped with it, the node's outputs being UNKNOWN, and
it is listed as a warning naming the subgraph and the control-flow node
(``_report_fork``), so the model may still be called consistent but not silently.
A node whose rule cannot compute its case (``ctx.cannot``, an op with no rule) is listed
as unchecked wherever it is, so the model is then not called consistent.  Faults of the
control-flow node itself (a body with the wrong number of inputs or outputs, counts and
attributes that disagree, a cyclic body) are conflicts of that node.
"""
from __future__ import annotations


from .. import irtypes as ir

from .. import expr as E
from ..constraints import Provenance, Rel, _sides_of, all_of, any_of, eq, ge, le
from ..context import TensorInfo
from ..context import const_info, element_kind
from ..graph import topo_order
from ..errors import BadInput
from ..lazy import sympy
from ..registry import register
from ..printing import show
from ..store import Verdict
from .common import norm_axis, unify_all
from .values import sign_of
from ..bounds import upper_bound_over

INT64 = ir.DataType.INT64
BOOL = ir.DataType.BOOL


# ---------------------------------------------------------------- helpers
def _scratch(st):
    """A private copy of the store (see Store.fork)."""
    return st.fork()


def _reserve_names(ctx, scratch):
    """Declare symbols a scratch store made in the main store (no facts), so names never
    collide and inner values stay readable (their dims are UNKNOWN in the main store)."""
    ctx.store.adopt_names(scratch)


def _report_fork(ctx, scratch, where):
    """The conflicts a walk in ``scratch`` found (those it did not inherit from the store it
    was forked from) are no conflicts of the model, as the subgraph may not run: each is a
    warning naming the subgraph, so a node that breaks the spec there is not silent."""
    new = scratch.conflicts[len(ctx.store.conflicts):]
    if not new:
        return
    seen = {str(cf).split("\n", 1)[0] for cf in ctx.store.conflicts}
    for cf in new:
        text = str(cf).split("\n", 1)[0]
        if text in seen:              # (a body walked again in a fork: already a conflict of the model)
            continue
        seen.add(text)
        if text.startswith("conflict: "):
            text = text[len("conflict: "):]
        ctx.warn(f"{where} of {ctx.op_type} '{ctx.name}' may not run; if it does: {text}")


def _walk(ctx, graph, store):
    """Run every node of ``graph`` with ``store`` as the engine's store."""
    eng = ctx.engine
    with eng.using_store(store):
        for v in graph.initializers.values():
            eng.values[v] = const_info(v.const_value, v.dtype)
        try:
            order = topo_order(graph)
        except BadInput as e:
            ctx.invalid(f"{ctx.op_type.lower()}.subgraph", f"subgraph '{graph.name}': {e}",
                        "order the subgraph's nodes so that each reads only values made before it")
        for n in order:
            eng.run_node(n)


def _out_info(ctx, v) -> TensorInfo:
    t = ctx.engine.values.get(v)
    return t if t is not None else TensorInfo(None, getattr(v, "dtype", None))


def _graph_attr(ctx, name):
    a = ctx.attributes.get(name)
    if a is None or a.type != ir.AttributeType.GRAPH:
        ctx.invalid(f"{ctx.op_type.lower()}.{name}", f"{ctx.op_type} needs the graph attribute '{name}', "
                    "the node has none", f"give the node its '{name}' graph")
    return a.value


def _known_bool(ctx, i):
    v = ctx.value(i)
    if v is None or len(v) != 1 or v[0] is None:
        return None
    x = v[0]
    if isinstance(x, (bool, int)):
        return bool(x)
    if x is sympy.true or x is sympy.false:
        return bool(x)
    if isinstance(x, sympy.Integer):
        return bool(int(x))
    return None


def _foreign(ctx, e, known: set) -> bool:
    """Does ``e`` mention a symbol the main store did not have before the subgraph ran?"""
    return any(s.name not in known for s in E.free_symbols(e))


# ---------------------------------------------------------------- If
@register("", "If", since_version=1)
def if_rule(ctx):
    ctx.check_inputs(1, 1)
    gt_, ge_ = _graph_attr(ctx, "then_branch"), _graph_attr(ctx, "else_branch")
    for g, what in ((gt_, "then_branch"), (ge_, "else_branch")):
        if len(g.outputs) != ctx.num_outputs:
            ctx.invalid("if.outputs", f"{what} has {len(g.outputs)} outputs but the If node has {ctx.num_outputs}",
                        "give both branches one output per output of the If node")
    cs = ctx.shape(0)
    if cs is not None:
        ctx.equal(E.prod(cs), 1, "if.cond", f"the condition must hold exactly one element, has {E.prod(cs)}")
    cond = _known_bool(ctx, 0)
    if cond is not None:
        g = gt_ if cond else ge_
        _walk(ctx, g, ctx.store)
        for i, v in enumerate(g.outputs):
            t = _out_info(ctx, v)
            ctx.set_output(i, t.shape, t.dtype, t.value, t.const, t.tensor, seq=t.seq)
        return
    split = _branch_condition(ctx)
    known, base = set(ctx.store.symbols), len(ctx.store.constraints)
    branches, forks = _walk_branches(ctx, (gt_, ge_), split, report=False)
    if not ctx.store.is_fork and _lift_shared_facts(ctx, forks, known, base, plain=True) \
            and ctx.store.check() is not False:
        # facts both branches need hold whichever runs: with them in the store, walk the
        # branches again (a merged decoder's Reshapes need sequence_length > 0 on both
        # sides; known, the branches' sizes come out as the decoders' own)
        base = len(ctx.store.constraints)
        branches, forks = _walk_branches(ctx, (gt_, ge_), split, report=True)
        _lift_shared_facts(ctx, forks, known, base)
    else:
        _lift_shared_facts(ctx, forks, known, base)
        for sc, where in zip(forks, ("then_branch", "else_branch")):
            _report_fork(ctx, sc, where)
    report: list = []        # what each branch gives, where they differ
    for i, (ta, tb) in enumerate(zip(*branches)):
        if ta.seq is not None or tb.seq is not None:
            ctx.set_output(i, None, None, seq=_if_merge_seq(ctx, i, ta, tb, known, forks, split, report))
            continue
        shape = _if_join(ctx, i, ta.shape, tb.shape, known, forks, split, report)
        ctx.set_output(i, shape, ta.dtype or tb.dtype)
    for line in report:
        ctx.warn(line)


# ---------------------------------------------------------------- If: joining the branches
def _relation_of(c):
    """The relation a sympy condition (a comparison of dims, and / or / not of them) states, or None."""
    for cls, op in E.relation_classes():
        if isinstance(c, cls):
            return Rel(op, E.norm(c.lhs), E.norm(c.rhs))
    if isinstance(c, (sympy.And, sympy.Or)):
        parts = [_relation_of(a) for a in c.args]
        if any(p is None for p in parts):
            return None
        return all_of(*parts) if isinstance(c, sympy.And) else any_of(*parts)
    if isinstance(c, sympy.Not):
        p = _relation_of(c.args[0])
        return None if p is None else p.negate()
    return None


def _branch_condition(ctx):
    """The If's condition as a relation over dims (``Eq(4*n, 0)``: a box count compared
    with 0), or None when it is no such value."""
    v = ctx.value(0)
    if v is None or len(v) != 1 or not isinstance(v[0], sympy.Basic):
        return None
    c = v[0]
    if not isinstance(c, (sympy.core.relational.Relational, sympy.And, sympy.Or, sympy.Not)):
        return None
    rel = _relation_of(c)
    return None if rel is None else (c, rel)


def _assume(ctx, sc, split, holds, where):
    """State in the branch's fork that the condition holds (then_branch) or fails
    (else_branch): the branch runs only then."""
    rel = split[1] if holds else split[1].negate()
    sc.add(rel, ctx.provenance("if.branch", f"{where} runs only when the condition is {str(holds).lower()}"))


def _walk_branches(ctx, graphs, split, report):
    """Walk each branch in a fork of its own, stating the branch condition there when it is
    a relation over dims: ([outputs], [fork])."""
    branches, forks = [], []
    for g, where, holds in zip(graphs, ("then_branch", "else_branch"), (True, False)):
        sc = _scratch(ctx.store)
        if split is not None:
            _assume(ctx, sc, split, holds, where)
        _walk(ctx, g, sc)
        _reserve_names(ctx, sc)
        if report:
            _report_fork(ctx, sc, where)
        branches.append([_out_info(ctx, v) for v in g.outputs])
        forks.append(sc)
    return branches, forks


def _lift_shared_facts(ctx, forks, known, base, plain=False) -> int:
    """Relations over the caller's symbols that both branches' walks stated (and did not
    refute; ``base``: the store's constraint count when they were forked): whichever branch
    runs, the model fails without them, so they are facts of the model.  Each is added with
    its node's provenance, its sentence saying both branches state it.  A relation one
    node states differently in each branch (a position table's bound: ``past + seq <= 96``
    with a cache, ``seq <= 96`` without) becomes ``then's or else's``, true whichever runs.
    With ``plain``, only relations without min / max / Piecewise terms, stated alike in
    both (those are what a walk that knows them states more simply).  Returns how many
    were added."""
    st = ctx.store

    def facts(sc):
        out = {}
        for c in sc.constraints[base:]:
            if c.kind != "rule" or c.status not in ("residual", "absorbed") or c.provenance.rule == "if.branch":
                continue
            if any(x.name not in known for x in c.relation.symbols()):
                continue
            if plain and any(E.branchy(x) for x in _sides_of(c.relation)):
                continue
            out.setdefault(st.canon_rel(c.relation), c)
        return out

    positional = ctx.engine.positional

    def by_node(fs):
        # the same node in each branch: by its name; an unnamed one (labelled by its position
        # in its own branch) by its op type
        out: dict = {}
        for rel, c in fs.items():
            p = c.provenance
            node = ("op", p.op_type) if p.node in positional else p.node
            out.setdefault((node, p.rule), []).append((rel, c))
        return out

    ft, fe = facts(forks[0]), facts(forks[1])
    n = 0
    for rel, c in ft.items():
        if rel in fe and rel.const_value() is None:
            p = c.provenance
            st.add(rel, Provenance(p.node, p.op_type, p.rule, f"{p.message} (both branches of If '{ctx.name}' "
                                                              "state it)"))
            n += 1
    if plain:
        return n
    then_only, else_only = by_node({r: c for r, c in ft.items() if r not in fe}), \
        by_node({r: c for r, c in fe.items() if r not in ft})
    for key, [(rt, ct)] in ((k, v) for k, v in then_only.items() if len(v) == 1):
        pair = else_only.get(key)
        if pair is None or len(pair) != 1:
            continue
        re_, ce = pair[0]
        p = ct.provenance
        st.add(any_of(rt, re_), Provenance(p.node, p.op_type, p.rule,
                                           f"{p.message} (then_branch of If '{ctx.name}'), or {ce.provenance.message} "
                                           "(else_branch)"))
        n += 1
    return n


def _settle(sc, e, known):
    """A branch's dim in its fork's canonical form, the fork's own aliases expanded and the
    Piecewise / Min / Max terms the fork's facts decide resolved (the dim is what the branch
    gives when it runs, so the branch's facts apply)."""
    from ..solve import decide_piecewise
    e = sc.canon(e)
    for _ in range(16):
        if isinstance(e, int):
            return e
        hit = {s: E.to_sympy(sc.canon(sc.definitions[s])) for s in E.free_symbols(e)
               if s.name not in known and s in sc.definitions}
        if not hit:
            break
        e = sc.canon(E.norm(e.xreplace(hit)))
    if isinstance(e, int):
        return e
    repl = {}
    for a in sympy.preorder_traversal(e):
        if a in repl:
            continue
        if isinstance(a, sympy.Piecewise):
            pick = decide_piecewise(sc, a)
            if pick is not None:
                repl[a] = pick
        elif isinstance(a, (sympy.Min, sympy.Max)) and len(a.args) == 2:
            x, y = (E.norm(t) for t in a.args)
            lo_first = isinstance(a, sympy.Min)
            if sc.decide(le(x, y), optional=True) is Verdict.PROVEN:
                repl[a] = a.args[0] if lo_first else a.args[1]
            elif sc.decide(ge(x, y), optional=True) is Verdict.PROVEN:
                repl[a] = a.args[1] if lo_first else a.args[0]
    return sc.canon(E.norm(e.xreplace(repl))) if repl else e


def _lift(ctx, sc, d, known):
    """(exact, bound) of a branch's dim in the main store's symbols: ``exact`` when the
    dim is over symbols the main store had before the If ran (else None), ``bound`` an
    upper bound over them (None when there is none)."""
    d = _settle(sc, d, known)
    if not _foreign(ctx, d, known):
        return d, d
    return None, upper_bound_over(sc, d, lambda s: s.name in known)


def _if_join(ctx, i, sa, sb, known, forks, split, report, what="output"):
    """Each output dim of an If whose condition is not a known constant.

    Both branches give a dim over the caller's symbols: equal -> that dim; otherwise, with
    a condition over dims, the exact case split ``Piecewise((then, cond), (else, True))``;
    with a condition known only at run time (a merged decoder's ``use_cache_branch``) a
    data symbol bounded by the larger, tied to the two by ``d == then or d == else``, and
    named in ``report`` with both values.  A branch dim that is data-dependent (a
    NonMaxSuppression count made inside the branch) makes the dim a data symbol bounded
    by the larger of the branches' bounds."""
    if sa is None or sb is None or len(sa) != len(sb):
        return None
    out = []
    for k, (a, b) in enumerate(zip(sa, sb)):
        (xa, ua), (xb, ub) = _lift(ctx, forks[0], a, known), _lift(ctx, forks[1], b, known)
        xa, xb = (None if x is None else ctx.store.canon(x) for x in (xa, xb))
        if xa is not None and xb is not None:
            if xa == xb or ctx.decide(eq(xa, xb)) is Verdict.PROVEN:
                out.append(xa)
                continue
            if split is not None:
                out.append(E.norm(sympy.Piecewise((E.to_sympy(xa), split[0]), (E.to_sympy(xb), True))))
                continue
        upper = None if ua is None or ub is None else E.max_of([ctx.store.canon(ua), ctx.store.canon(ub)])
        d = ctx.data_symbol(f"if_out{i}_d{k}", upper,
                            f"axis {k} of {what} {i} is one of the branch sizes, chosen at run time")
        if xa is not None and xb is not None and E.size(xa) + E.size(xb) <= E.MAX_OPS:
            # (over deep terms, a broadcast chain, the tie would cost every consistency check
            # a solver call for a fact no rule reads: the bound alone is kept)
            ctx.require(any_of(eq(d, xa), eq(d, xb)), "if.branches",
                        lambda xa=xa, xb=xb, k=k: f"axis {k} of {what} {i} is the then_branch's {show(xa)} or the "
                                             f"else_branch's {show(xb)}")
            name = ctx.outputs[i].name if i < len(ctx.outputs) else str(i)
            report.append(f"'{name}' axis {k} is {show(xa)} when the condition is true, {show(xb)} when it is false")
        out.append(d)
    return tuple(out)


def _if_merge_seq(ctx, i, ta, tb, known, forks, split, report):
    """A sequence or optional output: what both branches agree on (its kind, element type,
    the element dims both give); None entries of a sequence's element shape may differ."""
    from ..context import SeqInfo
    sa, sb = ta.seq, tb.seq
    if sa is None or sb is None or sa.optional != sb.optional:
        # one branch's kind is unknown (or they differ): keep the kind only when one is known
        s = sa or sb
        return _kind_only(s) if s is not None else SeqInfo()
    if sa.optional:
        ca = sa.elems[0] if sa.elems else TensorInfo()
        cb = sb.elems[0] if sb.elems else TensorInfo()
        n = sa.length if sa.length is not None and sa.length == sb.length else None
        if ca.seq is not None or cb.seq is not None:
            content = TensorInfo(seq=_if_merge_seq(ctx, i, ca, cb, known, forks, split, report))
        else:
            content = TensorInfo(_if_join(ctx, i, ca.shape, cb.shape, known, forks, split, report,
                                          "the optional of output"),
                                 ca.dtype or cb.dtype)
        return SeqInfo(n, None, None, (content,), optional=True)
    la = None if sa.length is None else ctx.store.canon(sa.length)
    lb = None if sb.length is None else ctx.store.canon(sb.length)
    n = la if la is not None and la == lb and not _foreign(ctx, la, known) else None
    ea, eb = sa.elem_shape, sb.elem_shape
    shape = None
    if ea is not None and eb is not None and len(ea) == len(eb):
        shape = []
        for a, b in zip(ea, eb):
            a = None if a is None else ctx.store.canon(a)
            b = None if b is None else ctx.store.canon(b)
            keep = a is not None and a == b and not _foreign(ctx, a, known)
            shape.append(a if keep else None)
        shape = tuple(shape)
    return SeqInfo(n, shape, sa.elem_dtype or sb.elem_dtype)


def _kind_only(sq):
    """A sequence's / optional's kind and element type, nothing about lengths or shapes."""
    from ..context import SeqInfo
    if sq.optional:
        c = sq.elems[0] if sq.elems else TensorInfo()
        return SeqInfo(None, None, None, (TensorInfo(None, c.dtype, seq=None if c.seq is None else _kind_only(c.seq)),),
                       optional=True)
    return SeqInfo(None, None, sq.elem_dtype)


# ---------------------------------------------------------------- Loop
@register("", "Loop", since_version=1)
def loop_rule(ctx):
    body = _graph_attr(ctx, "body")
    n_carried = ctx.num_inputs - 2
    if n_carried < 0:
        ctx.invalid("loop.arity", f"Loop takes M, cond and the loop-carried values, the node has {ctx.num_inputs} "
                    "inputs", "give the node its M and cond inputs (either may be empty)")
    if len(body.inputs) != n_carried + 2:
        ctx.invalid("loop.body_inputs", f"the body has {len(body.inputs)} inputs but the node gives it 2 + "
                    f"{n_carried} (iteration number, condition, {n_carried} loop-carried values)",
                    "give the body one input per loop-carried value after the iteration number and condition")
    n_scan = len(body.outputs) - 1 - n_carried
    if n_scan < 0:
        ctx.invalid("loop.body_outputs", f"the body has {len(body.outputs)} outputs, fewer than the condition and "
                    f"the {n_carried} loop-carried values", "give the body one output per loop-carried value "
                    "after the condition")
    if ctx.num_outputs != n_carried + n_scan:
        ctx.invalid("loop.outputs", f"the node has {ctx.num_outputs} outputs but its body gives {n_carried} "
                    f"loop-carried and {n_scan} scan outputs", "give the node one output per body output after "
                    "the condition")

    for i, what, rule in ((0, "the trip count M", "loop.trip_count"), (1, "the condition", "loop.cond")):
        s = ctx.shape(i) if ctx.has_input(i) else None
        if s is not None:
            ctx.equal(E.prod(s), 1, rule, lambda s=s, what=what: f"{what} must hold exactly one element, has "
                      f"shape ({', '.join(map(str, s))})")
    m = _trip_limit(ctx)
    cond0 = _known_bool(ctx, 1) if ctx.has_input(1) else True
    runs = cond0 is True and (not ctx.has_input(0) or (m is not None and ctx.proven(ge(m, 1))))

    init = [ctx.input(2 + j) if ctx.has_input(2 + j) else TensorInfo() for j in range(n_carried)]
    init_shapes = [None if t.shape is None else tuple(ctx.store.canon(d) for d in t.shape) for t in init]
    known = set(ctx.store.symbols)

    def walk(store, shapes_in):
        _set_body_inputs(ctx, body, init, shapes_in, store, m)
        _walk(ctx, body, store)
        if store is not ctx.store:
            _reserve_names(ctx, store)
            _report_fork(ctx, store, "the body")
        return [_out_info(ctx, v) for v in body.outputs]

    varying, outs, back, stable = _carried_fixpoint(ctx, walk, init_shapes, runs, lambda o: o[1:1 + n_carried])
    trip = _trip_count(ctx, body, outs, m, cond0)
    for j in range(n_carried):
        s, var = init_shapes[j], varying[j]
        if init[j].seq is not None:
            # a sequence / optional carried value keeps its kind and element type; its length
            # and element shapes may change from one iteration to the next
            ctx.set_output(j, None, None, seq=_kind_only(init[j].seq))
            continue
        if s is None or var is None:
            ctx.set_output(j, None, init[j].dtype)
            continue
        out = [_settled_dim(ctx, stable, j, k, d, trip, f"loop_carried{j}_d{k}") if k in var else d
               for k, d in enumerate(s)]
        ctx.set_output(j, out, init[j].dtype)

    for q in range(n_scan):
        t = outs[1 + n_carried + q]
        if t.shape is None:
            ctx.set_output(n_carried + q, None, t.dtype)
            continue
        dims = []
        for k, d in enumerate(t.shape):
            d = back(d)
            if _foreign(ctx, d, known):
                d = ctx.unknown_dim(f"loop_scan{q}_d{k}")
            dims.append(d)
        ctx.set_output(n_carried + q, _scan_shape(ctx, trip, dims, body.outputs[1 + n_carried + q], q), t.dtype)


def _scan_shape(ctx, trip, dims, body_out, q):
    """Scan output shape.  After zero iterations onnxruntime has no iteration to take the
    per-iteration shape from: it uses the body output's declared / statically inferred shape,
    else ``(0,)``.  So the per-iteration dims are kept only when at least one iteration is
    proven, or where the declared shape agrees with them; otherwise the rank is unknown."""
    if ctx.proven(ge(trip, 1)):
        return (trip,) + tuple(dims)
    declared = body_out.shape
    if declared is None or len(declared) != len(dims):
        return None
    out = [trip]
    for k, (d, dd) in enumerate(zip(dims, declared)):
        out.append(d if isinstance(dd, int) and d == dd else ctx.unknown_dim(f"loop_scan{q}_d{k}"))
    return tuple(out)


def _trip_limit(ctx):
    """Max iterations from M (int or expression, clamped at 0), None when unknown / absent."""
    if not ctx.has_input(0):
        return None
    v = ctx.value(0)
    if v is None or len(v) != 1 or element_kind(v[0]) != "int":
        return None
    x = E.norm(v[0]) if not isinstance(v[0], bool) else int(v[0])
    if isinstance(x, int):
        return max(x, 0)
    return x if sign_of(ctx, x) == "nonneg" else E.smax(x, 0)


def _set_body_inputs(ctx, body, init, shapes, store=None, m=None):
    eng = ctx.engine
    # the iteration number: some value in [0, M - 1], the same symbol for the whole walk
    # (never 0: what the walk finds must hold for every iteration, not the first one)
    it = None
    if store is not None:
        upper = E.sub(m, 1) if m is not None and not (isinstance(m, int) and m < 1) else None
        it = store.new_data("loop_iter", ctx.provenance("loop.iteration", "the iteration number"), upper=upper)
    eng.values[body.inputs[0]] = TensorInfo((), INT64, None if it is None else (it,))
    # the body runs only while the condition is true, so its cond input is always true
    eng.values[body.inputs[1]] = TensorInfo((), BOOL, (True,))
    for j, (t, s) in enumerate(zip(init, shapes)):
        # only the shape and dtype carry over: values change from one iteration to the next
        eng.values[body.inputs[2 + j]] = TensorInfo(s, t.dtype)


def _scan_walker(ctx, body, state_dtypes, slices, scan_dtypes):
    """walk(store, state shapes) for a Scan body: states, then one element of each scan input."""
    eng = ctx.engine
    n = len(state_dtypes)

    def walk(store, shapes_in):
        for j, (dt, s) in enumerate(zip(state_dtypes, shapes_in)):
            eng.values[body.inputs[j]] = TensorInfo(s, dt)
        for j, (sl, dt) in enumerate(zip(slices, scan_dtypes)):
            eng.values[body.inputs[n + j]] = TensorInfo(sl, dt)
        _walk(ctx, body, store)
        if store is not ctx.store:
            _reserve_names(ctx, store)
            _report_fork(ctx, store, "the body")
        return [_out_info(ctx, v) for v in body.outputs]

    return walk


def _carried_fixpoint(ctx, walk, init_shapes, runs, carried_of):
    """Which carried dims vary across iterations, the body outputs to read scan
    outputs from, and a map taking a body dim back to the caller's terms.

    A body that certainly runs, walked from the main store, is first walked with the
    initial shapes (its constraints are facts of the first iteration); if every carried
    shape comes back unchanged, that walk describes every iteration.  Otherwise (and
    always inside a fork, where nothing is a fact) the body is walked once more, in a
    fork, with every carried dim a fresh symbol ``g``: a dim whose output is ``g``
    itself, or a closed term equal to the initial dim, is invariant; any other varies.
    ``stable`` maps a varying (value, axis) to what it comes to after the loop: the value
    it settles to after one iteration, or a ``_Grows`` step for a dim whose output is
    ``g`` plus a term over the caller's symbols and invariant dims (the same every
    iteration).
    One generic walk per loop keeps nested loops linear in their depth (a loop inside a
    fork never walks twice)."""
    st = ctx.store
    n = len(init_shapes)
    if runs and not st.is_fork:
        outs = walk(st, init_shapes)
        varying = _varying_first(ctx, st, init_shapes, carried_of(outs))
        if not any(v is None or v for v in varying):
            return varying, outs, st.canon, {}
    fork = _scratch(st)
    prov = ctx.provenance("loop.data", "a dim of a loop-carried value in some iteration")
    generic = [None if s is None else tuple(fork.new_data(f"{ctx.op_type.lower()}_iter{j}_d{k}", prov)
                                            for k in range(len(s)))
               for j, s in enumerate(init_shapes)]
    known_syms = {info.symbol for info in st.symbols.values()}
    outs = walk(fork, generic)
    first = {gk: E.to_sympy(d0) for s, g in zip(init_shapes, generic) if s is not None
             for gk, d0 in zip(g, s)}
    varying: list = []
    cand: dict = {}             # generic symbol -> the body's output for it (canonical, in the fork)
    for j, (s, g, t) in enumerate(zip(init_shapes, generic, carried_of(outs))):
        if s is None or t.shape is None or len(t.shape) != len(s):
            varying.append(None)
            continue
        var = set()
        for k, (d0, gk, out) in enumerate(zip(s, g, t.shape)):
            oc = fork.canon(out)
            # the first iteration maps the initial dim to itself
            at_first = oc if isinstance(oc, int) else fork.canon(E.norm(oc.xreplace(first)))
            same = at_first == fork.canon(d0)
            if not same and not (E.free_symbols(at_first) - known_syms):
                # over the caller's symbols only: the caller's facts may show it (a budgeted
                # question; facts that hold whenever the model runs)
                same = st.decide(eq(at_first, d0), optional=True) is Verdict.PROVEN
            if same:
                cand[gk] = oc
            else:
                var.add(k)
        varying.append(var)
    # a dim stays invariant only if its output reads no varying dim: then, by induction,
    # every iteration sees the initial dims on the invariant axes
    fixed = set(cand)
    changed = True
    while changed:
        changed = False
        for gk in list(fixed):
            if E.free_symbols(cand[gk]) & (set(first) - fixed):
                fixed.discard(gk)
                changed = True
    for j, g in enumerate(generic):
        if g is not None and varying[j] is not None:
            varying[j] |= {k for k, gk in enumerate(g) if gk not in fixed}
    back_map = {gk: first[gk] for gk in fixed}
    # dims that change once and then stay (a state broadcast against a scan element:
    # [1] -> [D] -> [D]): the map applied twice equals the map applied once, and their
    # outputs read only such dims or invariant ones
    once, outs_of = {}, {}
    for j, (s, g, t) in enumerate(zip(init_shapes, generic, carried_of(outs))):
        if s is None or g is None or varying[j] is None:
            continue
        for k, (gk, out) in enumerate(zip(g, t.shape)):
            oc = fork.canon(out)
            outs_of[gk] = oc
            once[gk] = oc if isinstance(oc, int) else fork.canon(E.norm(oc.xreplace(first)))
    settle = {gk for gk, oc in outs_of.items() if gk not in fixed and not isinstance(once[gk], bool)
              and not (E.free_symbols(once[gk]) - known_syms)
              and (oc if isinstance(oc, int) else fork.canon(E.norm(oc.xreplace(
                  {x: E.to_sympy(once[x]) for x in E.free_symbols(oc) if x in once})))) == once[gk]}
    changed = True
    while changed:
        changed = False
        for gk in list(settle):
            if E.free_symbols(outs_of[gk]) & (set(first) - fixed - settle):
                settle.discard(gk)
                changed = True
    stable = {(j, k): once[gk] for j, g in enumerate(generic) if g is not None
              for k, gk in enumerate(g) if gk in settle}
    # dims that grow by the same amount every iteration (a detection loop appending one
    # row per detection: [0, K, 3] -> [g + 1, K, 3]): the output minus the dim reads only
    # the caller's symbols and invariant dims, never the iteration number
    for j, g in enumerate(generic):
        if g is None or varying[j] is None:
            continue
        for k, gk in enumerate(g):
            if gk in fixed or gk in settle or gk not in outs_of:
                continue
            step = fork.canon(E.sub(outs_of[gk], gk))
            if not isinstance(step, int):
                if E.free_symbols(step) - known_syms - fixed:
                    continue
                step = st.canon(E.norm(step.xreplace(back_map))) if back_map else st.canon(step)
            stable[(j, k)] = _Grows(step)
    del n

    def back(d):
        d = fork.canon(d)
        if isinstance(d, int) or not back_map:
            return st.canon(d)
        return st.canon(E.norm(d.xreplace(back_map)))

    return varying, outs, back, stable


class _Grows:
    """A carried dim that grows by ``step`` (an expression over the caller's symbols) in
    every iteration."""

    __slots__ = ("step",)

    def __init__(self, step):
        self.step = step


def _settled_dim(ctx, stable, j, k, d0, trip, hint):
    """A carried dim after the loop: ``d0 + trip * step`` for a dim that grows by ``step``
    per iteration; the value it settles to after one iteration when the loop runs at least
    once, else the initial one; UNKNOWN when it does neither or the trip count is unknown."""
    if (j, k) not in stable:
        return ctx.unknown_dim(hint)
    d1 = stable[(j, k)]
    if isinstance(d1, _Grows):
        return ctx.unknown_dim(hint) if trip is None else E.add(d0, E.mul(trip, d1.step))
    if trip is not None and ctx.proven(ge(trip, 1)):
        return d1
    if trip is None or d1 == d0:
        return d1 if d1 == d0 else ctx.unknown_dim(hint)
    return E.norm(sympy.Piecewise((E.to_sympy(d1), sympy.Ge(E.to_sympy(trip), 1)), (E.to_sympy(d0), True)))


def _varying_first(ctx, store, shapes_in, outs):
    """Carried dims not proven equal to their input after the first iteration."""
    varying: list = []
    for s, t in zip(shapes_in, outs):
        if s is None or t.shape is None or len(s) != len(t.shape):
            varying.append(None)
            continue
        varying.append({k for k, (a, b) in enumerate(zip(s, t.shape))
                        if not (a == b or store.decide(eq(a, b)) is Verdict.PROVEN)})
    return varying


def _trip_count(ctx, body, outs, m, cond0):
    """Number of iterations actually run: M when the body never stops early, else a data symbol <= M."""
    if cond0 is False:
        return 0
    cond_out = body.outputs[0]
    v = outs[0].value
    never_stops = cond_out is body.inputs[1] or (v is not None and len(v) == 1 and v[0] is not None
                                                 and not isinstance(v[0], sympy.Basic) and bool(v[0]))
    if m is not None and never_stops and cond0 is True:
        return m
    bound = m
    if bound is not None and any(ctx.store.info(s) is None or ctx.store.info(s).kind != "input"
                                 for s in E.free_symbols(bound)):
        bound = None
    return ctx.data_symbol("trip", bound, "number of Loop iterations, known only at run time")


# ---------------------------------------------------------------- Scan
@register("", "Scan", since_version=9)
def scan_rule(ctx):
    """Scan (opset 9+): states carried like Loop; scan inputs sliced along their scan
    axis; scan outputs stack the per-iteration values along their output axis."""
    body = _graph_attr(ctx, "body")
    m = int(ctx.require_attr("num_scan_inputs"))
    _scan_counts(ctx, m, ctx.num_inputs, 0)
    n = ctx.num_inputs - m
    k_out = ctx.num_outputs - n
    _scan_body_counts(ctx, body, n, m)
    in_axes = _scan_list(ctx, "scan_input_axes", m, "scan inputs", [0] * m)
    out_axes = _scan_list(ctx, "scan_output_axes", k_out, "scan outputs", [0] * k_out)
    _scan_list(ctx, "scan_input_directions", m, "scan inputs", None, flags=True)
    _scan_list(ctx, "scan_output_directions", k_out, "scan outputs", None, flags=True)

    lengths, slices = [], []
    for j in range(m):
        s = ctx.shape(n + j)
        if s is None:
            slices.append(None)
            continue
        ax = norm_axis(ctx, in_axes[j], len(s), "scan_input_axes")
        lengths.append(s[ax])
        slices.append(s[:ax] + s[ax + 1:])
    length = unify_all(ctx, lengths, "scan.length",
                       "every scan input has the same length along its scan axis") if lengths \
        else ctx.unknown_dim("scan_len")
    runs = ctx.proven(ge(length, 1))
    known = set(ctx.store.symbols)

    init = [ctx.input(j) if ctx.has_input(j) else TensorInfo() for j in range(n)]
    init_shapes = [None if t.shape is None else tuple(ctx.store.canon(d) for d in t.shape) for t in init]

    walk = _scan_walker(ctx, body, [t.dtype for t in init], slices, [ctx.dtype(n + j) for j in range(m)])

    varying, outs, back, stable = _carried_fixpoint(ctx, walk, init_shapes, runs, lambda o: o[:n])
    for j in range(n):
        s, var = init_shapes[j], varying[j]
        if s is None or var is None:
            ctx.set_output(j, None, init[j].dtype)
            continue
        ctx.set_output(j, [_settled_dim(ctx, stable, j, k, d, length, f"scan_state{j}_d{k}") if k in var else d
                           for k, d in enumerate(s)], init[j].dtype)
    for q in range(k_out):
        t = outs[n + q]
        if t.shape is None:
            ctx.set_output(n + q, None, t.dtype)
            continue
        # (with a zero-length scan there is no iteration; onnxruntime and onnx's reference
        # evaluator both refuse to run Scan-9+ then, so the per-iteration dims stand)
        dims = [ctx.unknown_dim(f"scan_out{q}_d{k}") if _foreign(ctx, back(d), known)
                else back(d) for k, d in enumerate(t.shape)]
        ax = norm_axis(ctx, out_axes[q], len(dims) + 1, "scan_output_axes")
        ctx.set_output(n + q, dims[:ax] + [length] + dims[ax:], t.dtype)


def _scan_counts(ctx, m, n_inputs, lens):
    """num_scan_inputs ``m`` against the node's inputs (``lens``: 1 for Scan-8's
    sequence_lens) and outputs: 1 <= m <= inputs - lens, and no more states than outputs."""
    if m < 1:
        ctx.invalid("scan.num_scan_inputs", f"num_scan_inputs is {m}: a Scan needs at least one scan input",
                    "set num_scan_inputs to the number of scan inputs (at least 1)")
    if m + lens > n_inputs:
        ctx.invalid("scan.num_scan_inputs", f"num_scan_inputs ({m})" + (" plus the sequence_lens input" if lens
                    else "") + f" exceeds the number of Scan inputs ({n_inputs})",
                    "set num_scan_inputs to the number of scan inputs, which come last")
    n = n_inputs - lens - m
    if n > ctx.num_outputs:
        ctx.invalid("scan.outputs", f"the node has {ctx.num_outputs} outputs, fewer than its {n} loop state "
                    "variables: the outputs are the final states, then the scan outputs",
                    "give the node one output per state variable, then one per scan output")


def _scan_body_counts(ctx, body, n, m):
    if len(body.inputs) != n + m:
        ctx.invalid("scan.body_inputs", f"the body has {len(body.inputs)} inputs but the node gives it {n} states "
                    f"and {m} scan input elements", "give the body one input per state and per scan input")
    if len(body.outputs) != ctx.num_outputs:
        ctx.invalid("scan.body_outputs", f"the body has {len(body.outputs)} outputs but the node has "
                    f"{ctx.num_outputs}", "give the body one output per output of the node (the states, then "
                    "the scan output elements)")


def _scan_list(ctx, name, count, what, default, flags=False):
    """An attribute with one entry per scan input / output; ``flags``: each 0 or 1."""
    v = ctx.attr(name, None)
    if v is None:
        return default
    v = [int(a) for a in v]
    if len(v) != count:
        ctx.invalid(f"scan.{name}", f"{name} has {len(v)} entries but the node has {count} {what}",
                    f"give {name} one entry per {what[:-1]}")
    if flags and any(a not in (0, 1) for a in v):
        ctx.invalid(f"scan.{name}", f"{name} {v} must hold only 0 (forward) and 1 (reverse)",
                    f"set each entry of {name} to 0 or 1")
    return v


# ---------------------------------------------------------------- Scan (opset 8)
@register("", "Scan", since_version=8)
def scan_rule_8(ctx):
    """Scan-8: a batch axis 0 on every state and scan input, the scan axis 1 of every
    scan input (an optional ``sequence_lens`` [B] first input lets batches stop early:
    the scan outputs are padded to the longest).  The body sees states and scan
    elements without the batch axis; final states are [B, ...], scan outputs [B, S, ...]."""
    body = _graph_attr(ctx, "body")
    m = int(ctx.require_attr("num_scan_inputs"))
    _scan_counts(ctx, m, ctx.num_inputs, 1)
    n = ctx.num_inputs - 1 - m
    k_out = ctx.num_outputs - n
    _scan_body_counts(ctx, body, n, m)
    _scan_list(ctx, "directions", m, "scan inputs", None, flags=True)
    batches, lengths, slices, init = [], [], [], []
    for j in range(n):
        s = ctx.shape(1 + j)
        if s is not None:
            if len(s) < 1:
                ctx.invalid("scan.batch", f"state {j} is a scalar: Scan-8 states carry a batch axis first "
                            "(rank >= 1)", f"give state {j} a leading batch axis")
            batches.append(s[0])
        init.append(None if s is None else tuple(s[1:]))
    for j in range(m):
        s = ctx.shape(1 + n + j)
        if s is None:
            slices.append(None)
            continue
        if len(s) < 2:
            ctx.invalid("scan.batch", f"scan input {j} has rank {len(s)}: Scan-8 scan inputs are "
                        "[batch, sequence, ...] (rank >= 2)", f"give scan input {j} batch and sequence axes")
        batches.append(s[0])
        lengths.append(s[1])
        slices.append(tuple(s[2:]))
    if ctx.has_input(0) and ctx.shape(0) is not None:
        sl = ctx.shape(0)
        if len(sl) != 1:
            ctx.invalid("scan.sequence_lens", f"sequence_lens has rank {len(sl)}, must be 1-D [batch]",
                        "give sequence_lens one entry per batch")
        batches.append(sl[0])
    b = unify_all(ctx, batches, "scan.batch", "every state, scan input and sequence_lens has the same batch size") \
        if batches else ctx.unknown_dim("scan_batch")
    length = unify_all(ctx, lengths, "scan.length", "every scan input has the same sequence length") \
        if lengths else ctx.unknown_dim("scan_len")
    known = set(ctx.store.symbols)

    walk = _scan_walker(ctx, body, [ctx.dtype(1 + j) for j in range(n)], slices,
                        [ctx.dtype(1 + n + j) for j in range(m)])

    # the body may run zero times (or a batch may stop early): never in the main store
    varying, outs, back, stable = _carried_fixpoint(ctx, walk, init, False, lambda o: o[:n])
    for j in range(n):
        s, var = init[j], varying[j]
        if s is None or var is None:
            ctx.set_output(j, None, ctx.dtype(1 + j))
            continue
        ctx.set_output(j, [b] + [ctx.unknown_dim(f"scan_state{j}_d{k}") if k in var else d
                                 for k, d in enumerate(s)], ctx.dtype(1 + j))
    for q in range(k_out):
        t = outs[n + q]
        if t.shape is None:
            ctx.set_output(n + q, None, t.dtype)
            continue
        # (a zero-length sequence: onnxruntime stacks no iteration and gives the body output's
        # statically inferred per-iteration shape, the one the body walk finds, or no tensor)
        dims = [ctx.unknown_dim(f"scan_out{q}_d{k}") if _foreign(ctx, back(d), known) else back(d)
                for k, d in enumerate(t.shape)]
        ctx.set_output(n + q, [b, length] + dims, t.dtype)
