"""Models written back: solved shapes, static specialization, proof-backed simplification.

Three things a user hands on, each built from one :class:`smtshape.result.Result`
(``smtshape.simplify`` and ``smtshape.specialize``, in ``api.py``, analyze and then write):

``annotate``    (``Result.save``, ``smtshape infer -o``) the model with every solved shape
                written into it: graph inputs, value_info and graph outputs.  A dim is
                written in its *canonical form* (:class:`DimNames`: the simplest expression
                the analysis proves equal to it, so ``64*batch*seq//(16*seq)`` is written
                ``4*batch``); a graph input's dim pinned to a number (by ``bind``) is written
                as that number, so no written dim contradicts the graph inputs (a symbolic
                one keeps its name); a dim the analysis could not verify keeps what the model
                declared (listed in the report as kept, not verified); a name defined in two
                scopes (sibling If branches) gets no value_info.
``simplify``    (``smtshape simplify``) the same, after rewrites each backed by a proof of the
                analysis: a value whose every element the analysis proves constant becomes
                an initializer (shape arithmetic that yields numbers while other dims stay
                symbolic); a Reshape / Expand / Squeeze / Unsqueeze / Flatten / Identity /
                Cast / Slice proven to be an identity is bypassed; nodes left without
                consumers are dropped.  Graph outputs keep their names and values.  Each
                rewrite is a :class:`Rewrite` in the :class:`Report`, with the constraints
                (and the bindings and assumptions) its proof used.
``specialize``  (``smtshape specialize``) bind every input dim, then simplify: a model whose
                graph inputs, outputs and value_info are static.

A rewrite is sound for every input the original model runs on *and* that satisfies the
bindings and assumptions given: the report lists those, and a model simplified under an
assumption is only valid where the assumption holds.
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field

from . import expr as E
from . import irtypes as ir
from .constraints import eq, le, premise_text
from .dim import Dim, Exactness
from .errors import BadInput
from .fileio import write_atomic
from .labels import node_phrase
from .printing import show
from .store import Verdict

MAX_FOLD_ELEMENTS = 1 << 16     # a computed constant larger than this stays a node (model size)
VIEW_OPS = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"}   # row-major order kept
IDENTITY_OPS = VIEW_OPS | {"Expand", "Cast", "CastLike", "Slice"}


# ------------------------------------------------------------------ the report

@dataclass
class Rewrite:
    """One change ``simplify`` made, and why it is sound.

    ``kind``: ``"constant"`` (the value ``value`` is replaced by an initializer holding
    ``detail``), ``"identity"`` (``value`` is replaced by ``by``, the node's input, proven
    identical), ``"dead"`` (the node had no consumer left), ``"kept_declared"`` (a dim the
    analysis could not verify keeps what the model declared).  ``because``: the
    constraints the proof used (each with its node and rule), the bindings and
    assumptions among them."""

    kind: str
    value: str
    node: str = ""
    op_type: str = ""
    by: str = ""
    detail: str = ""
    because: list = field(default_factory=list)

    def __str__(self) -> str:
        where = node_phrase(self.op_type, self.node) if self.node else f"value '{self.value}'"
        if self.kind == "constant":
            text = f"{where}: '{self.value}' is the constant {self.detail}"
        elif self.kind == "identity":
            text = f"{where} is an identity ({self.detail}): '{self.value}' replaced by '{self.by}'"
        elif self.kind == "dead":
            text = f"{where}: removed (no consumer left)"
        else:
            text = f"value '{self.value}': {self.detail}"
        if self.because:
            text += "; because " + "; ".join(self.because[:3]) + \
                (f"; and {len(self.because) - 3} more" if len(self.because) > 3 else "")
        return text

    def to_json(self) -> dict:
        return {"kind": self.kind, "value": self.value, "node": self.node, "op_type": self.op_type,
                "by": self.by or None, "detail": self.detail, "because": list(self.because)}


@dataclass
class Report:
    """What a written model holds and why (``Result.save``, ``simplify``, ``specialize``).

    ``nodes_before`` / ``nodes_after``: main-graph nodes; ``rewrites``: every change (see
    :class:`Rewrite`); ``kept_declared``: dims written as the model declared them because
    the analysis could not verify them; ``premises``: the bindings, assumptions and domain
    assumptions every proof here relies on (the written model is valid for the inputs that
    satisfy them); ``unbound``: the input dims no binding pins, each with the graph-input
    axes that carry it (``specialize`` with a partial binding keeps them symbolic);
    ``not_static``: the dims of values that are not numbers (those over ``unbound`` dims,
    and data-dependent ones: a NonZero count, ...)."""

    nodes_before: int = 0
    nodes_after: int = 0
    rewrites: list = field(default_factory=list)
    kept_declared: list = field(default_factory=list)
    premises: list = field(default_factory=list)
    unbound: list = field(default_factory=list)
    not_static: list = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        return sum(1 for r in self.rewrites if r.kind == kind)

    def summary(self) -> str:
        """One line: nodes before and after, and the rewrites by kind."""
        parts = []
        from .text import plural
        for kind, word, done in (("constant", "constant value", "folded"), ("identity", "identity", "bypassed"),
                                 ("dead", "dead node", "removed")):
            n = self.count(kind)
            if n:
                parts.append(f"{plural(n, word)} {done}")
        text = f"{self.nodes_before} -> {self.nodes_after} nodes"
        return text + (f" ({', '.join(parts)})" if parts else "")

    def to_json(self) -> dict:
        return {"nodes_before": self.nodes_before, "nodes_after": self.nodes_after,
                "rewrites": [r.to_json() for r in self.rewrites],
                "kept_declared": [r.to_json() for r in self.kept_declared],
                "premises": list(self.premises), "unbound": list(self.unbound),
                "not_static": list(self.not_static),
                "seconds": round(self.seconds, 3)}


def _because(result, exprs) -> list:
    """The constraints behind the canonical forms of ``exprs`` (``Store.why``), as text."""
    st = result.store
    ids: set = set()
    for e in exprs:
        if not isinstance(e, int):
            ids |= st.why(e)
    out = []
    for i in sorted(ids):
        c = st.constraints[i]
        p = c.provenance
        if c.kind == "assumption":
            out.append(premise_text(c))
        else:
            where = node_phrase(p.op_type, p.node) if p.node else p.op_type
            out.append(f"{c.relation} ({where}, {p.rule})")
    return out


# ------------------------------------------------------------------ canonical dim names

class DimNames:
    """The form each dim is written in: the simplest expression the analysis proves
    equal to it.

    Two sources of candidates, each proven before it is used: a floor / ceil division
    whose quotient is exact as polynomials (``64*batch*seq // (16*seq)`` is ``4*batch``:
    every division in the term language has a divisor the rule proved positive), and
    the other dims of the model that agree with it at a few sample points (an equality
    the store then proves: ``Store.decide``).  ``add`` every expression first, then ask
    ``form``: the simplest member of each group of equal expressions is chosen whatever
    the order."""

    POINTS = 3

    def __init__(self, result):
        self.result = result
        self.st = result.store
        rng = random.Random(0)
        names = sorted(i.name for i in self.st.input_symbols())
        self._points = [{n: rng.randint(2, 97) for n in names} for _ in range(self.POINTS)]
        self._pending: dict = {}      # expr -> fingerprint, added since the last grouping
        self._groups: dict = {}       # fingerprint -> [expr], simplest first once grouped
        self._form: dict = {}
        self._text: dict = {}         # form -> what is written (memo: a form recurs on many values)
        self._inputs = {i.symbol for i in self.st.input_symbols()}

    def _fingerprint(self, e):
        out = []
        for p in self._points:
            try:
                out.append(E.eval_int(e, p))
            except Exception:
                out.append(None)
        return tuple(out) if any(v is not None for v in out) else None

    def add(self, e) -> None:
        e = self.st.canon(e)
        if isinstance(e, int) or e in self._form or e in self._pending:
            return
        self._pending[e] = self._fingerprint(e)

    def _group(self):
        for e, fp in self._pending.items():
            local = _exact_quotients(e)
            self._form[e] = local
            if fp is not None:
                self._groups.setdefault(fp, []).append(e)
        self._pending = {}
        for fp, members in self._groups.items():
            if len(members) < 2:
                continue
            members.sort(key=lambda x: (E.size(self._form[x]), show(self._form[x])))
            reps: list = []           # proven-distinct representatives of this fingerprint
            for x in members:
                fx = self._form[x]
                for r in reps:
                    fr = self._form[r]
                    if (E.size(fr), show(fr)) >= (E.size(fx), show(fx)):
                        continue
                    if self.st.decide(eq(fx, fr), optional=True) is Verdict.PROVEN:
                        self._form[x] = fr
                        break
                else:
                    reps.append(x)
            self._groups[fp] = reps

    def form(self, e):
        """The canonical form of ``e`` (an int, or an expression over input dims)."""
        e = self.st.canon(e)
        if isinstance(e, int):
            return e
        if e not in self._form or self._pending:
            self.add(e)
            self._group()
        return self._form[e]

    def dim_text(self, d: Dim):
        """What to write for a solved dim: an int, a dim_param text, or None (nothing)."""
        if d.exactness is not Exactness.EXACT:
            return None
        f = self.form(d.expr)
        if isinstance(f, int):
            return f
        if f not in self._text:
            # (a form naming a size-capped alias is not a name a reader knows: nothing written)
            self._text[f] = _reparseable(f) if E.free_symbols(f) <= self._inputs else None
        return self._text[f]


def _exact_quotients(e):
    """``e`` with each FloorDiv / CeilDiv / Mod whose division is exact as polynomials
    replaced by the quotient (or 0): sound, since every divisor is proven positive."""
    import sympy
    if isinstance(e, int):
        return e
    divs = [a for a in sympy.preorder_traversal(e) if isinstance(a, (E.FloorDiv, E.CeilDiv, E.Mod))]
    if not divs:
        return e
    repl = {}
    for a in divs:
        num, den = a.args
        try:
            q = sympy.cancel(num / den)
            if not q.is_polynomial() or not all(c.is_integer for c in sympy.Poly(q).coeffs()):
                continue
        except Exception:
            continue
        repl[a] = sympy.Integer(0) if isinstance(a, E.Mod) else sympy.expand(q)
    if not repl:
        return e
    return E.norm(e.xreplace(repl))


def _reparseable(e) -> str | None:
    """``show(e)`` when smtshape's own parser reads it back to the same value, else None."""
    from .parse import ParseError, parse_expr
    text = show(e)
    try:
        back = parse_expr(text)
    except ParseError:
        return None
    return text if back == e or E.sub(back, e) == 0 else None


# ------------------------------------------------------------------ writing shapes

def _main_infos(result) -> dict:
    """{value name: TensorInfo} for the main graph's values (inputs, initializers, node outputs)."""
    eng = result.engine
    g = result.model.graph
    out = {}
    for v in list(g.inputs) + list(g.initializers.values()):
        t = eng.values.get(v)
        if t is not None and v.name:
            out[v.name] = t
    for node in g:
        for v in node.outputs:
            t = eng.values.get(v) if v is not None else None
            if t is not None and v.name:
                out[v.name] = t
    return out


def _set_dim(dim, what) -> None:
    dim.Clear()
    if isinstance(what, int):
        dim.dim_value = what
    elif what:
        dim.dim_param = what


def _declared_text(result, names: DimNames, dim):
    """What to write for a dim the model declared: its value; a declared name over input
    dims in its canonical form (a bound dim as its value); another name as written."""
    if dim.HasField("dim_value"):
        return dim.dim_value
    if not dim.dim_param:
        return None
    e = _declared_expr(result, dim)
    t = None if e is None else names.dim_text(result.dim_of(e))
    return dim.dim_param if t is None else t


def _declared_expr(result, dim):
    """The size a declared dim states, as an int or an expression over input dims, or None
    (no size, or a name that is not the model's input dim)."""
    from .graph import read_dim_param
    if dim.HasField("dim_value"):
        return dim.dim_value
    if not dim.dim_param:
        return None
    read = read_dim_param(dim.dim_param)
    st = result.store
    if read[0] == "name":
        info = st.symbols.get(read[1])
        return info.symbol if info is not None and info.kind == "input" else None
    if read[0] == "expr" and all(st.symbols.get(n) is not None and st.symbols[n].kind == "input"
                                 for n in read[2]):
        return read[1]
    return None


def _refutes(result, dim, d: Dim) -> bool:
    """Does the analysis refute what a declared dim says (for a dim it has no name for to
    write): a size other than an EXACT dim's, or above an UPPER_BOUND dim's bound?"""
    e = _declared_expr(result, dim)
    if e is None:
        return False
    if d.exactness is Exactness.EXACT:
        rel = eq(e, d.expr)
    elif d.exactness is Exactness.UPPER_BOUND and d.bound is not None:
        rel = le(e, d.bound)
    else:
        return False
    return result.store.decide(rel, optional=True) is Verdict.REFUTED


def annotate(result, proto, names: DimNames | None = None, report: Report | None = None) -> Report:
    """Write the solved shapes into ``proto`` (a copy of the analyzed model, possibly
    simplified): graph inputs, value_info (replaced) and graph outputs.  See the module doc."""
    names = names or DimNames(result)
    report = report if report is not None else Report()
    g = proto.graph
    inits = {i.name for i in g.initializer}
    declared = {vi.name: _copy(vi) for vi in g.value_info}
    for o in g.output:
        declared[o.name] = _copy(o)
    shapes = {}
    defined = _defined_names(g)
    present = set(defined)
    for name in result.value_names:
        if name in inits or defined.get(name, 0) != 1:
            continue          # (gone, or defined in two scopes: sibling If branches reuse names)
        shapes[name] = result.shape(name)
    for s in shapes.values():
        for d in s or ():
            if d.exactness is Exactness.EXACT:
                names.add(d.expr)
    for inp in g.input:            # a graph input's dim pinned to a number (bound) is written as it
        if inp.name in inits or not inp.type.HasField("tensor_type") \
                or not inp.type.tensor_type.HasField("shape"):
            continue
        for axis, dim in enumerate(inp.type.tensor_type.shape.dim):
            e = result.engine.input_dims.get((inp.name, axis))
            if e is None:
                continue
            what = names.dim_text(result.dim_of(e))
            if isinstance(what, int):
                _set_dim(dim, what)         # (a symbolic one keeps its name: the model's interface)
    outputs = {v.name for v in g.output}
    graph_io = {v.name for v in g.input} | outputs
    del g.value_info[:]
    for name, s in shapes.items():
        if name in graph_io and name not in outputs:
            continue                      # (a graph input: done above)
        vi = _value_info(result, names, name, s, declared.get(name), report)
        if vi is None:
            continue
        if name in outputs:
            _merge_output(g, vi)
        else:
            g.value_info.append(vi)
    for name, vi in declared.items():   # declared values the analysis says nothing about
        if name not in shapes and name not in graph_io and name in present:
            g.value_info.append(vi)
            report.kept_declared.append(Rewrite("kept_declared", name, detail="declared type kept "
                                                "(the analysis has no value of that name)"))
    return report


def _copy(vi):
    import onnx
    out = onnx.ValueInfoProto()
    out.CopyFrom(vi)
    return out


def _defined_names(g) -> dict:
    """{value name: number of places that define it} over the graph and its subgraphs (graph
    inputs, node outputs).  A name defined twice (the then and else branches of an exported
    merged decoder reuse names, with other element types) has no one shape to write."""
    import onnx
    out: dict = {}

    def visit(graph):
        for i in graph.input:
            out[i.name] = out.get(i.name, 0) + 1
        for node in graph.node:
            for o in node.output:
                if o:
                    out[o] = out.get(o, 0) + 1
            for a in node.attribute:
                subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs) \
                    if a.type == onnx.AttributeProto.GRAPHS else []
                for sg in subs:
                    visit(sg)
    visit(g)
    return out


def _merge_output(g, vi):
    for o in g.output:
        if o.name == vi.name and vi.type.HasField("tensor_type"):
            o.type.CopyFrom(vi.type)


def _value_info(result, names, name, shape, declared, report):
    """The ValueInfoProto written for one value: the analysis's shape in canonical form,
    where it has none the declared dim (kept, reported), never a refuted one.  Each dim
    written without a number is noted in ``report.not_static``."""
    import onnx
    from . import irtypes as ir
    v, t = result._lookup(name)
    if t.seq is not None or isinstance(getattr(v, "type", None), (ir.SequenceType, ir.OptionalType)):
        if declared is not None:      # not a tensor: what the model declared, unchanged
            return declared
        return None
    dt = t.dtype
    if dt is None:
        if declared is not None and declared.type.HasField("tensor_type"):
            report.kept_declared.append(Rewrite("kept_declared", name, detail="element type and shape kept "
                                                "as declared (not inferred)"))
            _note_not_static(report, name, declared.type.tensor_type)
            return declared
        return None
    vi = onnx.ValueInfoProto()
    vi.name = name
    tt = vi.type.tensor_type
    tt.elem_type = int(dt)
    dshape = None
    if declared is not None and declared.type.HasField("tensor_type") and \
            declared.type.tensor_type.HasField("shape"):
        dshape = declared.type.tensor_type.shape.dim
    if shape is None:
        if dshape is not None:
            tt.shape.SetInParent()
            for dd in dshape:
                _set_dim(tt.shape.dim.add(), _declared_text(result, names, dd))
            report.kept_declared.append(Rewrite("kept_declared", name, detail="shape "
                                                f"{_dims_text(tt.shape.dim)} kept as declared (rank not inferred)"))
        _note_not_static(report, name, tt)
        return vi
    tt.shape.SetInParent()
    kept = []
    for axis, d in enumerate(shape):
        what = names.dim_text(d)
        if what is None and dshape is not None and len(dshape) == len(shape):
            dec = _declared_text(result, names, dshape[axis])
            if dec is not None and not _refutes(result, dshape[axis], d):
                what = dec
                kept.append(f"axis {axis} = {dec} (inferred {d})")
        _set_dim(tt.shape.dim.add(), what)
        if not isinstance(what, int):
            report.not_static.append(f"{name}[{axis}] = {d}")
    if kept:
        report.kept_declared.append(Rewrite("kept_declared", name, detail="declared, not verified: "
                                            + ", ".join(kept)))
    return vi


def _note_not_static(report, name, tt) -> None:
    """The dims of a declared or shapeless tensor type that are not numbers, noted."""
    if not tt.HasField("shape"):
        report.not_static.append(f"{name}: rank unknown")
        return
    for axis, d in enumerate(tt.shape.dim):
        if not d.HasField("dim_value"):
            report.not_static.append(f"{name}[{axis}] = {d.dim_param or '?'}")


def _dims_text(dims) -> str:
    return "(" + ", ".join(str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?"
                           for d in dims) + ")"


# ------------------------------------------------------------------ simplification

def _constant(result, t):
    """(numpy array, the element expressions it came from): the value the analysis proves
    a tensor holds, from its known elements (``TensorInfo.value``, small integer tensors),
    or (None, [])."""
    import numpy as np
    from . import irtypes as ir
    if t is None or t.shape is None or t.dtype is None or t.seq is not None or t.value is None:
        return None, []
    st = result.store
    dims = [st.canon(d) for d in t.shape]
    if not all(isinstance(d, int) for d in dims) or len(t.value) != math.prod(dims):
        return None, []
    import sympy
    vals = []
    for x in t.value:
        if not isinstance(x, (int, bool, sympy.Expr)):
            return None, []          # (an element kept as a real number, ...): not folded here
        c = st.canon(x) if not isinstance(x, (int, bool)) else x
        if not isinstance(c, (int, bool)):
            c = st.static_value(c, optional=True)
            if c is None:
                return None, []
        vals.append(int(c))
    try:
        arr = np.array(vals, dtype=ir.DataType(int(t.dtype)).numpy()).reshape(dims)
    except Exception:
        return None, []
    if any(int(a) != v for a, v in zip(arr.ravel().tolist(), vals)):
        return None, []          # does not fit the element type: leave it to the runtime
    return arr, [x for x in t.value if not isinstance(x, (int, bool))]


def _constant_node(node, infos=None, result=None):
    """The tensor a Constant node holds, read from the node itself; the tensor a
    ConstantOfShape fills when the analysis proves its shape static (and it is small); or None."""
    import numpy as np
    from onnx import numpy_helper
    if node.op_type == "ConstantOfShape" and node.domain in ("", "ai.onnx") and infos is not None:
        t = infos.get(node.output[0]) if node.output else None
        if t is None or t.shape is None:
            return None
        shape = [result.store.canon(d) for d in t.shape]
        if not all(isinstance(d, int) for d in shape) or math.prod(shape) > MAX_FOLD_ELEMENTS:
            return None
        fill = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"),
                    np.zeros(1, np.float32))
        return np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.attribute) != 1:
        return None
    a = node.attribute[0]
    if a.name == "value":
        return numpy_helper.to_array(a.t) if a.t.data_location != 1 else None
    if a.name == "value_float":
        return np.array(a.f, np.float32)
    if a.name == "value_floats":
        return np.array(list(a.floats), np.float32)
    if a.name == "value_int":
        return np.array(a.i, np.int64)
    if a.name == "value_ints":
        return np.array(list(a.ints), np.int64)
    return None


def _same_shape(result, a, b) -> tuple:
    """(proven, the dim expressions the proof used): do two values' shapes agree?"""
    if a is None or b is None or a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return False, []
    st = result.store
    used = []
    for x, y in zip(a.shape, b.shape):
        cx, cy = st.canon(x), st.canon(y)
        if cx == cy or (not isinstance(cx, int) or not isinstance(cy, int)) and \
                st.decide(eq(cx, cy), optional=True) is Verdict.PROVEN:
            used += [x, y]
            continue
        return False, []
    return True, used


def _all_ones(arr) -> bool:
    return arr is not None and arr.size > 0 and bool((arr == 1).all())


def _identity_source(result, node, infos, consts):
    """The input an identity node passes through unchanged, with the proof, or None."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in IDENTITY_OPS or not node.input \
            or not node.input[0]:
        return None
    out = [o for o in node.output if o]
    if len(out) != 1:
        return None
    x, y = node.input[0], out[0]
    tx, ty = infos.get(x), infos.get(y)
    if tx is None or ty is None or tx.dtype is None or tx.dtype != ty.dtype:
        return None
    op = node.op_type
    if op == "Slice":
        steps = node.input[4] if len(node.input) > 4 and node.input[4] else None
        if steps is not None and not _all_ones(consts.get(steps)):
            return None
    ok, used = _same_shape(result, tx, ty)       # (a Cast: the element types are equal too)
    if ok:
        return x, used, f"output shape {_shape_text(result, ty)} equals the input's"
    return None


def _shape_text(result, t) -> str:
    return "(" + ", ".join(show(result.store.canon(d)) for d in t.shape) + ")"


def _view_chain_source(result, name, producers, infos):
    """A value up a chain of view ops (row-major order kept) with the same shape as
    ``name``: Unsqueeze(Squeeze(x)) back to x, Reshape(Flatten(x)) back to x."""
    start = infos.get(name)
    node = producers.get(name)
    seen = 0
    while node is not None and node.op_type in VIEW_OPS and node.domain in ("", "ai.onnx") \
            and node.input and node.input[0] and seen < 16:
        x = node.input[0]
        tx = infos.get(x)
        if tx is None:
            return None
        if seen > 0:
            ok, used = _same_shape(result, start, tx)
            if ok and tx.dtype == start.dtype:
                return x, used
        node = producers.get(x)
        seen += 1
    return None


def _used_names(g) -> dict:
    """{value name: number of uses} over the graph's nodes, its subgraphs (captured
    names) and its outputs."""
    counts: dict = {}

    for graph in _graphs(g):
        for node in graph.node:
            for i in node.input:
                if i:
                    counts[i] = counts.get(i, 0) + 1
        for o in graph.output:
            counts[o.name] = counts.get(o.name, 0) + 1
    return counts


def _graphs(g):
    """``g`` and every subgraph in it, at any depth."""
    import onnx
    todo = [g]
    while todo:
        graph = todo.pop()
        yield graph
        for node in graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    todo.append(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    todo.extend(a.graphs)


def _rename_all(g, mapping: dict) -> None:
    """Every use of a name in ``mapping`` (node inputs, subgraphs included) renamed."""
    if not mapping:
        return
    for graph in _graphs(g):
        for node in graph.node:
            for k, i in enumerate(node.input):
                j = mapping.get(i)
                if j is not None:
                    node.input[k] = j


def simplify_proto(result, proto, report: Report) -> None:
    """The proof-backed rewrites of the module doc, in place on ``proto`` (a copy of the
    analyzed model).  Main graph only; subgraphs are kept as they are (the names they
    capture from the main graph are renamed with it)."""
    import onnx
    from onnx import numpy_helper
    g = proto.graph
    infos = _main_infos(result)
    outputs = {o.name for o in g.output}
    inputs = {i.name for i in g.input}
    consts: dict = {}            # value name -> proven numpy array (Slice steps, small initializers)
    for i in g.initializer:
        if i.name not in inputs and i.data_location != 1 and len(i.dims) == 1 and i.dims[0] <= 64:
            consts[i.name] = numpy_helper.to_array(i)
    producers = {o: n for n in g.node for o in n.output if o}
    rename: dict = {}
    keep = []
    new_inits = []
    for node in g.node:
        outs = [o for o in node.output if o]
        # 1. every output a proven constant: initializers (a graph output: a Constant node)
        arrays = []
        held = _constant_node(node, infos, result)
        if held is not None and len(outs) == 1:
            arrays.append((outs[0], held, [d for d in infos[outs[0]].shape if not isinstance(d, int)]
                           if node.op_type == "ConstantOfShape" else []))
        for o in outs if held is None else ():
            arr, used = _constant(result, infos.get(o))
            if arr is None:
                break
            arrays.append((o, arr, used))
        if outs and len(arrays) == len(outs) and not _has_subgraph(node):
            for o, arr, used in arrays:
                consts[o] = arr
                tensor = numpy_helper.from_array(arr, o)
                detail = _array_text(arr)
                because = _because(result, used) if used else ["the sizes it is computed from are static "
                                                               "in the model"]
                if node.op_type == "Constant":
                    because = ["a Constant node"]
                elif node.op_type == "ConstantOfShape":
                    because = [f"its shape {list(arr.shape)} is proven static"] + because
                if o in outputs:
                    keep.append(onnx.helper.make_node("Constant", [], [o], name=node.name or o, value=tensor))
                else:
                    new_inits.append(tensor)
                report.rewrites.append(Rewrite("constant", o, node.name, node.op_type, detail=detail,
                                               because=because))
            continue
        # 2. an identity: its output renamed to its input (never a graph output)
        y = outs[0] if len(outs) == 1 else None
        src = None
        if y is not None and y not in outputs:
            src = _identity_source(result, node, infos, consts)
            if src is None and node.op_type in VIEW_OPS:
                hit = _view_chain_source(result, y, producers, infos)
                if hit is not None:
                    src = (hit[0], hit[1], "a chain of views back to a value of the same shape")
        if src is not None:
            x, used, why = src
            rename[y] = rename.get(x, x)
            because = _because(result, used) or [f"both shapes are {_shape_text(result, infos[y])} as "
                                                 "computed by the rules (no constraint needed)"]
            report.rewrites.append(Rewrite("identity", y, node.name, node.op_type, by=rename[y], detail=why,
                                           because=because))
            continue
        keep.append(node)
    # graph outputs never renamed; renames resolved through chains
    for k in list(rename):
        v = rename[k]
        while v in rename:
            v = rename[v]
        rename[k] = v
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(new_inits)
    if proto.ir_version and proto.ir_version < 4:     # IR 3: every initializer is a graph input too
        for t in new_inits:
            g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    _rename_all(g, rename)
    _drop_dead(g, report)
    report.nodes_after = len(g.node)


def _has_subgraph(node) -> bool:
    import onnx
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def _array_text(arr) -> str:
    flat = arr.ravel().tolist()
    body = ", ".join(str(v) for v in flat[:8]) + (", ..." if len(flat) > 8 else "")
    shape = "x".join(str(d) for d in arr.shape) or "scalar"
    return f"[{body}] ({shape}, {arr.dtype})"


def _drop_dead(g, report: Report) -> None:
    """Remove nodes none of whose outputs is used (repeatedly), then unused initializers."""
    inputs = {i.name for i in g.input}
    while True:
        used = _used_names(g)
        dead = [n for n in g.node if not any(o and used.get(o) for o in n.output)]
        if not dead:
            break
        ids = {id(n) for n in dead}
        for n in dead:
            report.rewrites.append(Rewrite("dead", next((o for o in n.output if o), ""), n.name, n.op_type))
        alive = [n for n in g.node if id(n) not in ids]
        del g.node[:]
        g.node.extend(alive)
    used = _used_names(g)
    alive = [i for i in g.initializer if used.get(i.name) or i.name in inputs]
    if len(alive) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(alive)


# ------------------------------------------------------------------ entry points

def write_model(result, *, simplify: bool = False):
    """(ModelProto, Report): the analyzed model with its solved shapes written in
    (``annotate``), after the proof-backed rewrites when ``simplify``."""
    from .reader import to_proto
    t0 = time.perf_counter()
    proto = to_proto(result.model)
    report = Report(nodes_before=len(proto.graph.node), nodes_after=len(proto.graph.node),
                    premises=result.premises)
    names = DimNames(result)
    if simplify:
        simplify_proto(result, proto, report)
    annotate(result, proto, names, report)
    report.unbound = unbound_inputs(result)
    report.seconds = time.perf_counter() - t0
    return proto, report


def unbound_inputs(result) -> list:
    """Each input dim the analysis has not pinned to a number, as ``name (input:axis, ...)``."""
    st = result.store
    where: dict = {}
    for (inp, axis), e in result.engine.input_dims.items():
        if not isinstance(st.canon(e), int):
            for s in E.free_symbols(st.canon(e)):
                where.setdefault(s.name, []).append(f"{inp}:{axis}")
    return [f"{n} ({', '.join(w[:3])}{', ...' if len(w) > 3 else ''})" for n, w in sorted(where.items())]


def refuse_conflicts(result, what: str) -> None:
    """BadInput for a model that contradicts itself (a conflict between its nodes, its
    bindings and its assumptions); a conflict among the model's own annotations does not
    count: the written model gets the inferred shapes instead."""
    real = [c for c in result.conflicts if not _annotation_only(c)]
    if real:
        c = real[0]
        raise BadInput(f"cannot {what} a model with a conflict ({len(real)} found; "
                       f"'smtshape check' explains them): {c.explain().splitlines()[0]}")


def _annotation_only(c) -> bool:
    ks = list(getattr(c, "constraints", ()) or ())
    return bool(ks) and all(k.kind == "annotation" or k.provenance.rule.startswith("annotation") for k in ks)


def save(result, path, overwrite_input: bool = False, *, save_as_external_data: bool = False,
         external_data_location: str | None = None, size_threshold: int = 1024, simplify: bool = False):
    """``Result.save`` (its docstring says what is written): the model made by
    ``write_model``, written atomically, its large tensors to an external data file when
    the input kept them there or ``save_as_external_data``; never over the input model or
    its data."""
    import onnx
    path = os.fspath(path)
    src = result.source_path
    if src and os.path.exists(path) and os.path.samefile(src, path) and not overwrite_input:
        raise BadInput(f"refusing to overwrite the input model {path}; choose another output path")
    proto, report = write_model(result, simplify=simplify)
    tensors = list(_all_initializers(proto.graph))
    external = [t for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL]
    if not external and not save_as_external_data:
        write_atomic(path, proto.SerializeToString())
        return report
    base = os.path.dirname(os.path.abspath(src)) if src else os.getcwd()
    bases = {}          # an onnx_ir model loaded with ir.load knows each tensor's folder
    for name, v in result.model.graph.initializers.items():
        t = v.const_value
        if isinstance(t, ir.ExternalTensor) and getattr(t, "base_dir", ""):
            bases[name] = os.fspath(t.base_dir)
    sources = _inline_external(external, base, bases)
    location = external_data_location or (os.path.basename(path) + ".data")
    data_path = os.path.join(os.path.dirname(os.path.abspath(path)), location)
    for f in sources | ({os.path.abspath(src)} if src else set()):
        if os.path.exists(data_path) and os.path.exists(f) and os.path.samefile(f, data_path):
            raise BadInput(f"the external data file {data_path} belongs to the input model; "
                           "choose another --external-data-location or output folder")
    _write_external(proto, tensors, path, data_path, location, size_threshold)
    return report


def _all_initializers(graph):
    """Every initializer TensorProto of a graph and of its subgraphs."""
    import onnx
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _all_initializers(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from _all_initializers(sub)


def _inline_external(tensors, base: str, bases=None) -> set:
    """Read each external tensor's bytes (relative to ``bases[name]`` or ``base``)
    into raw_data; returns the data files read."""
    import onnx
    files = set()
    for t in tensors:
        info = {kv.key: kv.value for kv in t.external_data}
        loc = info.get("location", "")
        f = loc if os.path.isabs(loc) else os.path.join((bases or {}).get(t.name, base), loc)
        files.add(os.path.abspath(f))
        try:
            with open(f, "rb") as fh:
                fh.seek(int(info.get("offset", 0) or 0))
                n = info.get("length")
                data = fh.read(int(n)) if n else fh.read()
        except OSError as e:
            raise BadInput(f"cannot read the external data of tensor '{t.name}' from {f}: "
                           f"{e.strerror or e}") from None
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT
        t.raw_data = data
    return files


def _write_external(proto, tensors, path: str, data_path: str, location: str, threshold: int):
    """Move the raw data of tensors >= threshold bytes into ``data_path`` (written
    to a temporary file, then renamed), then write the model atomically."""
    import onnx
    import tempfile
    folder = os.path.dirname(data_path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".smtshape-", suffix=".data.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            offset = 0
            for t in tensors:
                if not t.HasField("raw_data") or len(t.raw_data) < threshold:
                    continue
                pad = (-offset) % 4096 if offset else 0      # page-aligned like onnx / onnx_ir
                if pad:
                    fh.write(b"\0" * pad)
                    offset += pad
                data = t.raw_data
                fh.write(data)
                del t.external_data[:]
                for k, v in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
                t.data_location = onnx.TensorProto.EXTERNAL
                t.ClearField("raw_data")
                offset += len(data)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, data_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    write_atomic(path, proto.SerializeToString())
