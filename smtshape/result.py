"""The analysis result: a facade over the homes of each concept: solved shapes
(``solve.py``), queries (``query.py``), specializations (``findings.py``), conflicts'
causes and fixes (``conflicts.py``), JSON (``jsonout.py``) and written models
(``written.py``)."""
from __future__ import annotations

from typing import NamedTuple

from . import expr as E
from .constraints import Conflict, Relation, eq, premise_text  # noqa: F401  (premise_text re-exported)
from .dim import Dim, Exactness
from .errors import BadInput
from .findings import Specialization, Specializations  # noqa: F401  (re-exported)
from .findings import specializations as _specializations
from .lazy import sympy
from .perf import paused_gc
from .solve import DimSolver
from .store import Verdict


_MISSING = object()


class ValueInfo(NamedTuple):
    """What ``Result.value(name)`` knows about one value (see there)."""

    name: str
    kind: str                 # "tensor" | "sequence" | "optional"
    shape: tuple | None       # tensors: a tuple of Dim, None when the rank is unknown
    dtype: object = None      # tensors: the element type (None when unknown)
    length: object = None     # sequences / optionals: a Dim, None when unknown
    element_shape: tuple | None = None
    element_dtype: object = None


class Result:
    """What ``smtshape.analyze`` found in one model.

    Shapes: ``shape(name)`` (a tuple of :class:`~smtshape.Dim`, None when the rank is
    unknown), ``dtype(name)``, ``value(name)`` (shape, dtype and, for a sequence or an
    optional, its length and element type), ``shapes()``, ``value_names``.
    Questions: ``prove(claim)`` (a Verdict), ``query(claim)`` (a QueryAnswer with witness
    bindings), ``equal``, ``static_value``, ``evaluate(bindings)``, ``sources(dim)``.
    Findings: ``consistent``, ``conflicts``, ``specializations``, ``undecided``,
    ``unchecked_nodes``, ``diagnostics``, ``constraints``, ``skipped_assumptions``.
    Export: ``to_json()``, ``to_smtlib()``, ``save(path)`` (the model with the shapes written
    in; ``simplify=True`` also folds what the analysis proves constant).
    """

    def __init__(self, engine, store, policy: str, assumptions: list[str], *, consistency: bool | None = None,
                 skipped_assumptions=(), source_path: str | None = None):
        self.engine = engine
        self.store = store
        self.policy = policy
        self.assumptions = assumptions
        self.model = engine.model
        self._names = None               # value name -> (Value, TensorInfo), made on first use
        self._solver = DimSolver(store)  # solves each distinct canonical dim once (solve.py)
        self._dims = self._solver.dims   # (its memo: canonical expression -> Dim)
        self._shapes: dict = {}          # value name -> solved shape (shape())
        self._by_info: dict = {}         # TensorInfo -> its solved shape
        self._specs = None
        self._consistency = consistency  # Store.check() after the walk (consistent adds the nodes)
        self._atom_picks: dict = {}
        self._premises = None
        self.skipped_assumptions: list = list(skipped_assumptions)   # (constraint-file text, [names the model lacks])
        self.source_path = source_path   # the model's path, when it was read from one

    def __repr__(self) -> str:
        src = self.source_path
        from .text import plural
        c = self.consistent
        state = "consistent" if c else "not proven consistent" if c is None else plural(len(self.conflicts),
                                                                                         "conflict")
        inputs = ", ".join(i.name for i in self.store.input_symbols()[:6])
        return (f"<smtshape.Result {src or 'model'}: {plural(len(self.value_names), 'value')}, "
                f"input dims [{inputs}{', ...' if len(self.store.input_symbols()) > 6 else ''}], {state}>")

    @property
    def premises(self) -> list:
        """The bindings, assumptions and domain assumptions this analysis ran under, as
        text (``binding batch = 1``, ``assumption seq <= 4096``, ``domain: ...``): every
        answer, and every model written from this result, holds where these hold."""
        if self._premises is None:
            self._premises = [premise_text(c) for c in self.store.constraints if c.kind == "assumption"] \
                + [f"domain: {d}" for d in self.store.domain.describe()]
        return list(self._premises)

    @property
    def consistent(self) -> bool | None:
        """True: every node was checked by a rule and the constraints hold together;
        False: conflicts were found (``conflicts``, each explained, a violated spec
        precondition among them); None: no conflict found, but the model is not proven
        consistent: some constraints could not be decided (``undecided``) or some nodes
        were not checked (``unchecked_nodes``: no rule, a case the rule cannot compute,
        an internal error; ops accepted with ``accept_unchecked`` excepted)."""
        if self.conflicts:
            return False
        if self._consistency is None or any(not u.accepted for u in self.engine.unchecked):
            return None
        return self._consistency

    @property
    def undecided(self) -> list:
        """Constraints the solver could not decide: set aside, never used as facts."""
        return list(self.store.undecided)

    @property
    def unchecked_nodes(self) -> list:
        """Every node no rule checked (``Unchecked``: node, op_type, domain, reason, message,
        accepted), those of ops accepted with ``accept_unchecked`` included."""
        return list(self.engine.unchecked)

    # ------------------------------------------------------------ shapes
    @property
    def _by_name(self) -> dict:
        """value name -> (Value, TensorInfo); a name given twice (a subgraph's) is its last value."""
        d = self._names
        if d is None:
            d = self._names = {}
            for v, t in self.engine.values.items():
                if v.name:
                    d[v.name] = (v, t)
        return d

    @property
    def value_names(self) -> list[str]:
        return list(self._by_name)

    def _lookup(self, name: str):
        hit = self._by_name.get(name)
        if hit is None:
            raise KeyError(f"no value named {name!r} in the model")
        return hit

    def shape(self, name: str) -> tuple | None:
        """Solved shape of a value (tuple of Dim), None when its rank is unknown."""
        out = self._shapes.get(name, _MISSING)
        if out is not _MISSING:
            return out
        _, t = self._lookup(name)
        out = self._shapes[name] = self._shape_of_info(t)
        return out

    def _shape_of_info(self, t):
        if t.shape is None:
            return None
        # values share a TensorInfo (rule-result cache replays): solved once per info
        # (a TensorInfo hashes by identity)
        out = self._by_info.get(t)
        if out is None:
            # (a key of _dims is canonical in the final store, so a dim equal to one is that
            # key: the lookup comes first, canon only on a miss)
            get, dim_of = self._dims.get, self._solver.dim_of
            out = self._by_info[t] = tuple([get(d) or dim_of(d) for d in t.shape])
        return out

    def shapes(self) -> dict:
        """{value name: solved shape (tuple of Dim) or None}, every named value (a new dict)."""
        with paused_gc():
            # one pass over the engine's values into one new dict: a model's values are many,
            # and each extra pass or copy costs most on the largest models (their objects are
            # no longer in the CPU's caches).  A shape is solved once per TensorInfo
            # (_shape_of_info, inline); shape(name) finds it there again.
            out = {}
            by_info, get, dim_of = self._by_info, self._dims.get, self._solver.dim_of
            for v, t in self.engine.values.items():
                name = v.name
                if name:
                    s = t.shape
                    if s is not None:
                        hit = by_info.get(t)
                        if hit is None:
                            hit = by_info[t] = tuple([get(d) or dim_of(d) for d in s])
                        s = hit
                    out[name] = s
            return out

    def dtype(self, name: str):
        """The element type of a value (``smtshape.irtypes.DataType``, an IntEnum equal to
        onnx's TensorProto codes), None when unknown or not a tensor."""
        return self._lookup(name)[1].dtype

    def value(self, name: str) -> "ValueInfo":
        """Everything known about one value: ``ValueInfo(name, kind, shape, dtype, length,
        element_shape, element_dtype)``; ``kind`` is ``"tensor"``, ``"sequence"`` or
        ``"optional"``; for a tensor ``shape`` / ``dtype`` as ``shape(name)`` /
        ``dtype(name)``; for a sequence ``length`` (a Dim, None when unknown) and what holds
        for every element (``element_shape``: a tuple with None at an axis where elements
        differ, None when the rank is unknown); for an optional ``length`` is 1 (present),
        0 (empty) or None.  KeyError for a name the model does not have."""
        _, t = self._lookup(name)
        q = t.seq
        if q is None:
            return ValueInfo(name, "tensor", self.shape(name), t.dtype)
        length = None if q.length is None else self.dim_of(q.length)
        elem = None if q.elem_shape is None else tuple(None if d is None else self.dim_of(d)
                                                       for d in q.elem_shape)
        return ValueInfo(name, "optional" if q.optional else "sequence", None, None, length, elem, q.elem_dtype)

    def dim_of(self, e) -> Dim:
        """The solved ``Dim`` of a dim expression (``solve.DimSolver``)."""
        return self._solver.dim_of(e)

    # ------------------------------------------------------------ queries
    def equal(self, x: str, i: int, y: str, j: int):
        """Are dim ``i`` of ``x`` and dim ``j`` of ``y`` equal? True / False / None (unknown)."""
        sx, sy = self.shape(x), self.shape(y)
        if sx is None or sy is None:
            return None
        for s, k, n in ((sx, i, x), (sy, j, y)):
            if not -len(s) <= k < len(s):
                raise IndexError(f"{n} has rank {len(s)}; axis {k} is out of range")
        v = self.store.decide(eq(sx[i].expr, sy[j].expr))
        return {Verdict.PROVEN: True, Verdict.REFUTED: False}.get(v)

    def prove(self, claim) -> Verdict:
        """The verdict on a relation (text or Relation) over input dim names and value dims
        written ``name[axis]``: PROVEN (holds for every input the model accepts), REFUTED
        (for none), CONTINGENT (for some and not others), UNKNOWN (the solver gave up).
        The verdict of ``query(claim)``, without the witnesses.  A Verdict is not a truth
        value: compare it (``is Verdict.PROVEN``)."""
        from .query import query
        return query(self, claim, witnesses=False).verdict

    def query(self, claim):
        """A rich answer (``smtshape.query.QueryAnswer``): PROVEN / REFUTED / CONTINGENT
        (with a witness binding for each side) / UNKNOWN (with the reason), and the
        bindings and assumptions it holds under."""
        from .query import query
        return query(self, claim)

    def _relation(self, claim) -> Relation:
        if not isinstance(claim, str):
            return claim
        from .query import parse_query
        return parse_query(self, claim)[0]

    def static_value(self, dim) -> int | None:
        e = dim.expr if isinstance(dim, Dim) else dim
        return self.store.static_value(e)

    def evaluate(self, bindings: dict) -> dict:
        """Concrete shapes for concrete input dims: {value name: tuple or None}.

        Raises ``BadInput`` for an unknown dim name, a value that is not a non-negative
        int, or a binding that violates a constraint (named, with its node)."""
        from .query import validate_binding
        validate_binding(self, bindings)
        env = dict(bindings)
        self.shapes()
        out = {}
        for name in self._by_name:
            s = self.shape(name)
            if s is None:
                out[name] = None
                continue
            dims = []
            for d in s:
                dims.append(d.evaluate(env))
            out[name] = tuple(dims)
        return out

    def sources(self, dim) -> set:
        """The (graph input, axis) pairs a dim derives from."""
        e = dim.expr if isinstance(dim, Dim) else self.store.canon(dim)
        syms = E.free_symbols(e)
        out = set()
        for (inp, axis), s in self.engine.input_dims.items():
            cs = E.free_symbols(self.store.canon(s))
            if cs and cs <= syms:
                out.add((inp, axis))
        return out

    # ------------------------------------------------------------ reports
    @property
    def constraints(self) -> list:
        return list(self.store.constraints)

    @property
    def conflicts(self) -> list[Conflict]:
        cs = list(self.store.conflicts) + list(self.engine.annotation_conflicts)
        if cs:
            from .conflicts import enrich_conflicts
            enrich_conflicts(self, cs)       # root cause and suggested fix (conflicts.py)
        return cs

    @property
    def specializations(self) -> "Specializations":
        if self._specs is None:
            with paused_gc():            # (the search allocates much and frees it all: as analyze)
                specs, not_searched = _specializations(self.store)      # smtshape/findings.py
            self._specs = Specializations(specs, not_searched=not_searched)
        return self._specs

    @property
    def diagnostics(self) -> list:
        from .diagnostic import Diagnostic
        out = []
        for c in self.conflicts:
            out.append(Diagnostic("conflict", c.explain(), ", ".join(c.nodes), "", "error"))
        for s in self.specializations:
            out.append(Diagnostic("specialization", f"the model forces {s}", ", ".join(s.nodes), "", "warning"))
        for text in self.assumptions:
            out.append(Diagnostic("assumption", f"assumed: {text}", severity="info"))
        for text, names in self.skipped_assumptions:
            out.append(Diagnostic("assumption", f"skipped the constraint {text}: it names {', '.join(names)}, "
                                  "not an input dim of this model", severity="warning"))
        for s in self.specializations.premises:
            out.append(Diagnostic("assumption", f"assumption of the analysis (not a limit of the model): "
                                  f"{s.relation}; {s.constraints[0].provenance.message}",
                                  ", ".join(s.nodes), "", "info"))
        for d in self.store.domain.describe():
            nodes = self.engine.assumptions_used.get(d.split("(")[-1].rstrip(")"), [])
            extra = f"; relied on by {len(nodes)} node{'s' if len(nodes) != 1 else ''}, e.g. '{nodes[0]}'" \
                if nodes else "; not relied on"
            out.append(Diagnostic("assumption", f"domain assumption: {d}{extra}", severity="info"))
        if self.store.optional_skipped:
            out.append(Diagnostic("budget", f"{self.store.optional_skipped} optional solver question(s) "
                                  "(simplifying exact broadcast / min / max terms, static values) were not asked: "
                                  "the budget of solver checks for them was spent; those dims stay exact terms",
                                  severity="info"))
        if self.specializations.not_searched:
            names = self.specializations.not_searched
            out.append(Diagnostic("budget", f"the limits the model may force on {len(names)} input dim(s) were not "
                                  f"searched ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''}): the shared "
                                  "budget of solver work ran out or the solver could not decide; none is reported "
                                  "for them, which does not mean there is none", severity="warning"))
        for c in self.store.undecided:
            out.append(Diagnostic("undecided", f"could not decide {c.relation} (set aside, not used as a fact): "
                                  f"{c.provenance.message}", c.provenance.node, c.provenance.op_type, "warning"))
        out.extend(self.engine.diagnostics)
        return out

    def to_smtlib(self) -> str:
        return self.store.to_smtlib()

    def to_json(self) -> dict:
        """The result as one JSON-ready dict, following the versioned schema
        ``smtshape/schema/result-v1.json`` (``"schema": "smtshape.result/1"``; the format
        is ``smtshape/jsonout.py``'s)."""
        from .jsonout import result_json
        return result_json(self)

    def save(self, path, overwrite_input: bool = False, *, save_as_external_data: bool = False,
             external_data_location: str | None = None, size_threshold: int = 1024, simplify: bool = False):
        """Write the model with the inferred shapes (atomically); returns the
        ``smtshape.written.Report`` of what was written.

        Graph inputs, value_info and graph outputs get the solved shapes: a graph input's
        dim bound by ``bind`` is written as its value (never a dim that contradicts the
        graph inputs); EXACT symbolic dims become ``dim_param`` expressions in their
        canonical form (the simplest expression the analysis proves equal: ``4*batch``,
        not ``64*batch*seq//(16*seq)``) in smtshape's expression language
        (``smtshape.parse.parse_expr`` reads them back); UPPER_BOUND and UNKNOWN dims keep
        what the model declared (listed in ``report.kept_declared``: not verified) or are
        left without value or name.  ``simplify``: also fold every value the analysis proves
        constant and bypass proven identities (``smtshape.written``).

        External data: when the input model keeps tensors in external files (or
        ``save_as_external_data``), the tensors of at least ``size_threshold``
        bytes are written to ``external_data_location`` (a file name relative to
        the output's folder; default: the output's file name + ``.data``) and
        the others inline, so the output loads from any folder.  The input model
        and its data files are never written to.
        """
        from .written import save
        return save(self, path, overwrite_input, save_as_external_data=save_as_external_data,
                    external_data_location=external_data_location, size_threshold=size_threshold,
                    simplify=simplify)

    def _value_info(self, name):
        """A ValueInfoProto of one value as ``save`` writes it (canonical dims, no declared
        dims kept), None for a non-tensor or an unknown element type (integrations.py)."""
        from .written import DimNames, Report, _value_info
        if getattr(self, "_dim_names", None) is None:
            self._dim_names = DimNames(self)
        return _value_info(self, self._dim_names, name, self.shape(name), None, Report())

    def table(self) -> str:
        """A readable table of every value and its shape."""
        rows = []
        for name in self._by_name:
            s = self.shape(name)
            txt = "?" if s is None else "(" + ", ".join(str(d) for d in s) + ")"
            rows.append((name, txt))
        w = max((len(r[0]) for r in rows), default=4)
        return "\n".join(f"{n.ljust(w)}  {t}" for n, t in rows)


def _reparseable(e):
    """(smtshape.written._reparseable, kept here for integrations.py.)"""
    from .written import _reparseable as r
    return r(e)


def _as_sympy(rel):
    from .constraints import And, Not, Or, Rel
    if isinstance(rel, Rel):
        return sympy.Tuple(E.to_sympy(rel.lhs), E.to_sympy(rel.rhs))
    if isinstance(rel, (Or, And)):
        return sympy.Tuple(*(_as_sympy(a) for a in rel.args))
    if isinstance(rel, Not):
        return _as_sympy(rel.arg)
    return sympy.Tuple()


# ------------------------------------------------------------------ external data (Result.save)

# ------------------------------------------------------------------ JSON (Result.to_json)
