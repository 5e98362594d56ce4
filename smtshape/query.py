"""Queries over value dims: ``name[axis]`` references in relations.

``parse_query(result, "x[0] == y[1]")`` gives the Relation with each value
dim replaced by its solved expression; ``Result.prove`` and ``smtshape
query`` both use it.
"""
from __future__ import annotations

import re

from .errors import BadInput
from .labels import node_phrase


def _parse_problem(e) -> str:
    msg = getattr(e, "problem", None) or str(e)
    col = getattr(e, "column", None)
    if col is not None and getattr(e, "source", None) is None:
        msg += f" (at column {col})"
    return msg


_AXIS_RE = re.compile(r"\[\s*([+-]?[0-9]{1,9})\s*\]")
_IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def rewrite_value_dims(text: str, value_names, taken=()) -> tuple[str, dict]:
    """Replace each ``name[axis]`` / ``"name"[axis]`` of a known value by a fresh
    placeholder identifier.

    Value names may hold '/', '.', ':' and the like, so unquoted references are
    matched against the known names, longest first, as the text just before the
    '['; a quoted name followed by ``[axis]`` always names a value.  Returns the
    rewritten text and {placeholder: (value name, axis)}.
    """
    names = sorted(set(value_names), key=len, reverse=True)
    taken = set(taken)
    refs: dict = {}
    by_ref: dict = {}

    def placeholder(name, axis):
        key = (name, axis)
        if key in by_ref:
            return by_ref[key]
        k = len(refs)
        while True:
            ph = f"_smtq_v{k}"
            if ph not in taken and ph not in refs and ph not in text:
                break
            k += 1
        refs[ph] = key
        by_ref[key] = ph
        return ph

    out: list[str] = []   # finished pieces
    buf = ""              # the current unquoted run
    pending = None        # (name, raw text) of a quoted name followed so far only by whitespace
    i, n = 0, len(text)

    def flush_pending():
        nonlocal pending
        if pending is not None:
            out.append(pending[1])
            pending = None

    while i < n:
        c = text[i]
        if c == '"':
            j, chars = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    chars.append(text[j + 1])
                    j += 2
                    continue
                chars.append(text[j])
                j += 1
            if j >= n:  # unterminated: the parser reports it
                flush_pending()
                buf += text[i:]
                break
            flush_pending()
            out.append(buf)
            buf = ""
            pending = ("".join(chars), text[i:j + 1])
            i = j + 1
            continue
        if c == "[":
            m = _AXIS_RE.match(text, i)
            if m is None:
                raise BadInput(f"in {text!r}: '[' must be followed by an integer axis and ']' "
                               "(write name[axis] or \"name\"[axis])")
            axis = int(m.group(1))
            i = m.end()
            if pending is not None:   # "name"[axis]
                name = pending[0]
                if name not in value_names:
                    raise BadInput(f"in {text!r}: no value named {name!r} in the model")
                pending = None
                buf = placeholder(name, axis)
                continue
            head = buf.rstrip()
            found = None
            for name in names:
                if head.endswith(name):
                    start = len(head) - len(name)
                    if start > 0 and head[start - 1] in _IDENT and name[0] in _IDENT:
                        continue  # would split an identifier
                    found = (name, start)
                    break
            if found is None:
                m2 = re.search(r"[A-Za-z0-9_./:\-]*$", head)
                shown = m2.group(0) if m2 and m2.group(0) else head[-20:]
                raise BadInput(f"in {text!r}: no value named {shown!r} in the model "
                               "(quote names with unusual characters: \"name\"[axis])")
            name, start = found
            buf = head[:start] + placeholder(name, axis)
            continue
        if pending is not None and not c.isspace():
            flush_pending()
        buf += c
        i += 1
    flush_pending()
    out.append(buf)
    return "".join(out), refs


def parse_query(result, text: str):
    """The Relation a query text means, with value dims replaced by their expressions."""
    from . import expr as E
    from .parse import ParseError, parse_relation

    store = result.store
    rewritten, refs = rewrite_value_dims(text, result.value_names, store.symbols.keys())
    subst = {}
    shown = {}
    for ph, (name, axis) in refs.items():
        shape = result.shape(name)
        if shape is None:
            raise BadInput(f"{name}[{axis}]: the rank of '{name}' is unknown, so it has no dim to compare")
        if not -len(shape) <= axis < len(shape):
            raise BadInput(f"{name}[{axis}]: '{name}' has rank {len(shape)}; axis {axis} is out of range")
        d = shape[axis]
        subst[E.symbol(ph)] = E.to_sympy(d.expr)
        shown[f"{name}[{axis}]"] = d

    def symbol(name):
        if name in refs:
            return E.symbol(name)
        info = store.symbols.get(name)
        if info is None:
            known = ", ".join(sorted(i.name for i in store.input_symbols())) or "none"
            raise BadInput(f"unknown dim name {name!r} (input dims: {known}; "
                           "refer to a value's dim as name[axis])")
        return info.symbol

    try:
        rel = parse_relation(rewritten, symbol=symbol)
    except ParseError as e:
        problem = _parse_problem(e)
        for ph, (name, axis) in refs.items():
            problem = problem.replace(ph, f"{name}[{axis}]")
        if refs and getattr(e, "column", None) is not None:
            problem = re.sub(r" \(at column \d+\)$", "", problem)
        raise BadInput(f"bad query {text!r}: {problem}") from None

    def f(e):
        if isinstance(e, int) or not subst:
            return e
        return E.norm(e.xreplace(subst))

    return rel.map(f), shown




# ---------------------------------------------------------------- rich answers (Result.query)

class QueryAnswer:
    """The answer to ``Result.query(claim)``.

    ``verdict``: ``Verdict.PROVEN`` (the claim holds for every input the model accepts),
    ``REFUTED`` (for none), ``CONTINGENT`` (for some and not others), ``UNKNOWN`` (the
    solver gave up; ``reason`` says why).  ``holds`` / ``fails``: a binding of the input
    dims (``{name: int}``) under which the model is consistent and the claim holds / fails
    (CONTINGENT gives both; PROVEN gives ``holds``, REFUTED ``fails``, when one exists);
    ``runtime``: for each runtime quantity the claim mentions (a NonZero count, ...) what
    it is, when the witnesses set one.  ``premises``: the bindings and assumptions the
    answer holds under.  ``exit_code``: what ``smtshape query`` exits with.

    Not a truth value: ``if answer:`` raises TypeError; write ``answer.proven`` (or
    ``answer.verdict is Verdict.PROVEN``).  ``answer == Verdict.PROVEN`` compares the verdict."""

    def __init__(self, claim, relation, verdict, holds=None, fails=None, reason="", runtime=None, premises=()):
        self.claim = claim
        self.relation = relation
        self.verdict = verdict
        self.holds = holds
        self.fails = fails
        self.reason = reason
        self.runtime = runtime or {}
        self.premises = list(premises)

    @property
    def proven(self) -> bool:
        """True exactly when the verdict is PROVEN."""
        return self.verdict.name == "PROVEN"

    @property
    def exit_code(self) -> int:
        from .exitcodes import QUERY_EXIT_CODES
        return QUERY_EXIT_CODES[self.verdict.name]

    def __bool__(self):
        raise TypeError(f"a query answer ({self.verdict.name}) is not a truth value: use answer.proven, "
                        "or compare answer.verdict with Verdict.PROVEN / REFUTED / CONTINGENT / UNKNOWN")

    def __eq__(self, other):
        from .store import Verdict
        if isinstance(other, Verdict):
            return self.verdict is other
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"<QueryAnswer {self.verdict.name}: {self.claim}>"

    def __str__(self) -> str:
        out = f"{self.verdict.name}: {self.claim}"
        if self.holds is not None and self.verdict.name in ("CONTINGENT", "PROVEN"):
            out += f"\n  holds at {self._at(self.holds)}"
        if self.fails is not None and self.verdict.name in ("CONTINGENT", "REFUTED"):
            out += f"\n  fails at {self._at(self.fails)}"
        if self.reason:
            out += f"\n  {self.reason}"
        if self.premises:
            out += "\n  under " + "; ".join(self.premises)
        return out

    def _at(self, b: dict) -> str:
        inputs = {k: v for k, v in b.items() if k not in self.runtime}
        data = {k: v for k, v in b.items() if k in self.runtime}
        text = _binding(inputs) if inputs else ("any input dims" if data else "(any input)")
        if data:
            text += "; at run time " + ", ".join(f"{k} = {v} ({self.runtime[k]})" for k, v in data.items())
        return text

    def to_json(self) -> dict:
        from .jsonout import query_json
        return query_json(self)


def _binding(b: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in b.items()) or "(any input)"


def query(result, claim, witnesses: bool = True) -> QueryAnswer:
    """PROVEN / REFUTED / CONTINGENT (with a witness binding for each side) / UNKNOWN.

    One decision for ``Result.prove`` and ``Result.query`` (they never disagree): the
    store's answer (``Store.decide``: fast path, intervals, Z3), CONTINGENT when the store's
    models of every live constraint (``Store.truths``) already give the claim both truth
    values, else two Z3 checks over the exported constraints (sat both ways: CONTINGENT,
    counted only when every constraint could be given to Z3).  ``witnesses=False``
    (``prove``) asks Z3 only what the verdict still needs and reads no model."""
    import z3
    from .findings import OutOfBudget
    from .store import Verdict
    from .z3bridge import Untranslatable
    text = claim if isinstance(claim, str) else str(claim)
    rel = result._relation(claim)
    st = result.store
    said = [p for p in result.premises if not p.startswith("domain: ")]
    runtime = {}
    for x in rel.symbols():
        info = st.info(x)
        if info is not None and info.kind == "data":
            o = info.origin
            runtime[x.name] = node_phrase(o.op_type, o.node) if o.node else str(o.message)

    def answer(verdict, **kw):
        return QueryAnswer(text, rel, verdict, runtime=runtime, premises=said, **kw)
    v = st.decide(rel)
    if st.broken:
        return answer(Verdict.UNKNOWN, reason="the constraints contradict each other at their "
                      "core (the store is broken): no answer is meaningful; see the conflicts")
    if v is Verdict.UNKNOWN and len(st.truths(rel)) == 2:
        v = Verdict.CONTINGENT
    if not witnesses and v is not Verdict.UNKNOWN:
        return answer(v)
    sv = _solver_of(result)
    try:
        f = sv.terms.relation(rel)
    except Untranslatable as e:
        return answer(v, reason="" if v is not Verdict.UNKNOWN else f"the claim cannot be given to the solver ({e})")
    for x in rel.symbols():
        lo = st.lower_bound(x)
        if lo is not None:
            sv.s.add(sv.terms.var(x.name) >= lo)
    holds = fails = None
    r_true = r_false = z3.unknown
    try:
        if v is not Verdict.REFUTED:
            r_true = sv.check(f)
            if r_true == z3.sat and witnesses:
                holds = _witness(result, sv, runtime)
        if v is not Verdict.PROVEN:
            r_false = sv.check(z3.Not(f))
            if r_false == z3.sat and witnesses:
                fails = _witness(result, sv, runtime)
    except OutOfBudget:
        pass                      # (the shared budget of solver work is spent: what was found stands)
    if sv.skipped:                # a model may violate a constraint Z3 was not given: no evidence
        r_true = z3.unknown if r_true == z3.sat else r_true
        r_false = z3.unknown if r_false == z3.sat else r_false
        holds = fails = None
    if v is Verdict.PROVEN or (r_false == z3.unsat and r_true != z3.unknown):
        return answer(Verdict.PROVEN, holds=holds)
    if v is Verdict.REFUTED or (r_true == z3.unsat and r_false != z3.unknown):
        return answer(Verdict.REFUTED, fails=fails)
    if v is Verdict.CONTINGENT or (r_true == z3.sat and r_false == z3.sat):
        return answer(Verdict.CONTINGENT, holds=holds, fails=fails)
    return answer(Verdict.UNKNOWN, holds=holds, fails=fails,
                  reason=f"the solver gave up (resource limit rlimit={st.rlimit} per check reached, "
                         "its budget spent, or nonlinear arithmetic it cannot decide)")


def _solver_of(result):
    return result.store.exported_solver()


def _witness(result, sv, runtime=()) -> dict:
    """The model's values of the input dims, and of the runtime quantities ``runtime`` names."""
    m = sv.s.model()
    out = {}
    for name in [info.name for info in result.store.input_symbols()] + list(runtime):
        x = m.eval(sv.terms.var(name), model_completion=True)
        try:
            out[name] = x.as_long()
        except Exception:
            continue
    return out


# ---------------------------------------------------------------- Result.evaluate validation

def validate_binding(result, bindings: dict) -> None:
    """Raise BadInput when ``bindings`` names an unknown dim, gives a dim a value that
    is not a non-negative integer, or violates a constraint of the model (named, with
    its node)."""
    from .store.basics import truth_at
    import z3
    st = result.store
    known = {name: info for name, info in st.symbols.items()}
    for k, v in bindings.items():
        if k not in known:
            names = sorted(i.name for i in st.input_symbols())
            raise BadInput(f"unknown dim name {k!r}; the model's input dims are: {', '.join(names) or '(none)'}")
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadInput(f"{k} = {v!r}: a dim must be bound to an int")
        lo = st.lower_bound(known[k].symbol)
        if lo is not None and v < lo:
            raise BadInput(f"{k} = {v}: dims are at least {lo}")
    cs = st.exported()
    env = dict(bindings)
    unbound = False
    for c in cs:
        val = truth_at(c.relation, env, st.definitions)
        if val is False:
            raise BadInput(f"the binding {_binding(env)} violates {c.relation} (from {c.provenance})")
        if val is None:
            unbound = True
    if not unbound:
        return
    # constraints over symbols the binding leaves free (data symbols, other inputs): satisfiable?
    sv = _solver_of(result)
    eqs = [sv.terms.var(k) == v for k, v in env.items()]
    if sv.check(*eqs) != z3.unsat:
        return
    core = _violated(st, cs, env)
    where = "; ".join(f"{c.relation} (from {c.provenance})" for c in core) or "the constraints"
    raise BadInput(f"the binding {_binding(env)} violates {where}")


def _violated(st, cs, env) -> list:
    """A minimal set of constraints that the binding makes unsatisfiable."""
    return st.explain_unsat(cs, fixed=env)
