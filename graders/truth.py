"""Grade inferred shapes against runtime ground truth (``shared/corpus`` format).

A truth file (``M.truth.json``) records, for several *bindings* of a model's
dynamic input dims, the runtime shape of every value.  This module grades any
shape-inference tool against it, with the conventions of the corpus'
``ANCHORS.md``:

* per axis of every non-scalar value that is not data dependent:
  ``correct``    an exact claim (int or expression over the dynamic dims) equals
                 the runtime size at *every* binding;
  ``wrong``      an exact claim differs at some binding, the rank differs from
                 the runtime's, or an upper bound is below the runtime size;
  ``bound_ok``   an upper bound is >= the runtime size at every binding;
  ``unresolved`` anything else (rank unknown, axis unknown, expression that
                 cannot be evaluated, value missing from the tool's output);
* scalars (runtime shape ``[]``) are counted apart: rank ok / wrong / unknown;
  a wrong scalar rank also counts in ``wrong``;
* values listed in the truth's ``data_dependent`` are graded the same way but
  counted apart (``dd_*``); values in ``skipped`` and values the truth does
  not record are ignored;
* *false equalities* (not part of ``wrong``): an opaque symbol or expression
  the tool could not express in the dynamic dims (``unk__3``, ``_d7``, a
  NonZero count ...) that it puts on several axes whose runtime sizes differ at
  some binding.

Tools plug in through ``shape_fn(name)``, which returns ``None`` (rank
unknown) or a list with one entry per axis::

    ("int", 5)                       exact constant
    ("expr", fn)                     exact; fn(env) -> int | None (None: cannot evaluate)
    ("bound", fn)                    only size <= fn(env) is claimed
    ("unknown", None)                nothing claimed

An entry may carry a third element, a hashable *key* naming the opaque
symbol/expression behind it; entries that are not graded correct are grouped
by key for the false-equality check.  ``env`` is the binding (dim name -> int)
plus whatever ``env_fn`` adds (e.g. generated names of anonymous input dims).

Tool adapters: :func:`grade_smtshape` (a :class:`smtshape.Result`),
:func:`grade_proto` (an ``onnx.ModelProto`` with shapes in value_info /
inputs / outputs, as onnx and onnxruntime write them) and :func:`grade_ir`
(an ``onnx_ir.Model``, as onnx-shape-inference leaves it).  ``dim_param``
strings written by other tools are untrusted text: they are parsed with
:func:`smtshape.parse.parse_expr`, or, for sympy's rational notation
(``floor(height/2 - 1/2)``, ``ceiling(...)``, ``1.0*x``), with the small
exact-rational evaluator :func:`tool_expr` below; never with ``eval`` or
``sympify``.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Iterable

__all__ = [
    "load_truth",
    "strip_value_info",
    "Grade",
    "WrongEntry",
    "FalseEquality",
    "grade",
    "grade_smtshape",
    "smtshape_shape_fn",
    "smtshape_dim_entry",
    "smtshape_env_fn",
    "grade_proto",
    "proto_shape_fn",
    "grade_ir",
    "ir_shape_fn",
    "input_dim_env_fn",
    "tool_expr",
    "dim_entry_from_text",
    "type_entries",
]


# ------------------------------------------------------------------ loading

def load_truth(path) -> dict:
    """Read a ``*.truth.json`` file (plain JSON)."""
    with open(os.fspath(path), encoding="utf-8") as f:
        truth = json.load(f)
    if not isinstance(truth, dict) or "bindings" not in truth or "shapes" not in truth:
        raise ValueError(f"{os.fspath(path)}: not a truth file (needs 'bindings' and 'shapes')")
    return truth


def strip_value_info(model_proto):
    """A copy of ``model_proto`` without ``graph.value_info`` (shapes the exporter
    wrote for intermediate values), for scoring inference from scratch.  Graph
    input/output declarations are kept, as the corpus README prescribes."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model_proto)
    del out.graph.value_info[:]
    return out


# ------------------------------------------------------------------ results

@dataclass
class WrongEntry:
    value: str
    axis: int | None          # None: the rank itself is wrong
    ours: str                 # the tool's claim, readable
    runtime: list             # runtime size (or shape, for rank errors) per binding
    binding: dict | None      # first binding where the claim fails
    kind: str = "exact"       # exact | bound | rank
    data_dependent: bool = False

    def __str__(self) -> str:
        where = "rank" if self.axis is None else f"axis {self.axis}"
        dd = " (data-dependent)" if self.data_dependent else ""
        return (f"{self.value} {where}{dd}: ours {self.ours} ({self.kind}), runtime {self.runtime}"
                f" at bindings; first failing binding {self.binding}")


@dataclass
class FalseEquality:
    key: object
    first: tuple              # (value, axis, size)
    second: tuple             # (value, axis, size)
    binding: dict

    def __str__(self) -> str:
        (v1, a1, s1), (v2, a2, s2) = self.first, self.second
        return (f"{self.key}: {v1}[{a1}] = {s1} but {v2}[{a2}] = {s2} at {self.binding}")


_COUNTS = ("values", "axes", "correct", "wrong", "bound_ok", "unresolved",
           "scalars", "scalar_ok", "scalar_wrong", "scalar_unknown",
           "dd_values", "dd_axes", "dd_correct", "dd_bound_ok", "dd_wrong", "dd_unresolved",
           "dd_scalars")


@dataclass
class Grade:
    """Counts for one model (or a sum of models, with ``+``).

    ``axes``/``correct``/``bound_ok``/``unresolved``: axes of non-scalar,
    non-data-dependent values.  ``wrong``: those axes graded wrong *plus*
    scalars with a wrong rank (as in ANCHORS.md).  ``dd_*``: the same for
    data-dependent values (their scalars are only counted in ``dd_scalars``
    and, when the rank is wrong, in ``dd_wrong``).  ``all_wrong`` is
    ``wrong + dd_wrong``: every wrong claim, the number that must stay 0.
    """

    values: int = 0
    axes: int = 0
    correct: int = 0
    wrong: int = 0
    bound_ok: int = 0
    unresolved: int = 0
    scalars: int = 0
    scalar_ok: int = 0
    scalar_wrong: int = 0
    scalar_unknown: int = 0
    dd_values: int = 0
    dd_axes: int = 0
    dd_correct: int = 0
    dd_bound_ok: int = 0
    dd_wrong: int = 0
    dd_unresolved: int = 0
    dd_scalars: int = 0
    wrong_entries: list = field(default_factory=list)
    false_equalities: list = field(default_factory=list)
    unresolved_entries: list = field(default_factory=list)   # (value, axis) of non-dd unresolved axes
    dd_unresolved_entries: list = field(default_factory=list)  # (value, axis) of dd unresolved axes
    unknown_scalars: list = field(default_factory=list)      # names of scalars whose rank is unknown

    @staticmethod
    def _pct(n, d) -> float:
        return 100.0 * n / d if d else 100.0

    @property
    def correct_pct(self) -> float:
        return self._pct(self.correct, self.axes)

    @property
    def bound_ok_pct(self) -> float:
        return self._pct(self.bound_ok, self.axes) if self.axes else 0.0

    @property
    def unresolved_pct(self) -> float:
        return self._pct(self.unresolved, self.axes) if self.axes else 0.0

    @property
    def all_wrong(self) -> int:
        return self.wrong + self.dd_wrong

    def __add__(self, other: "Grade") -> "Grade":
        out = Grade()
        for k in _COUNTS:
            setattr(out, k, getattr(self, k) + getattr(other, k))
        out.wrong_entries = self.wrong_entries + other.wrong_entries
        out.false_equalities = self.false_equalities + other.false_equalities
        out.unresolved_entries = self.unresolved_entries + other.unresolved_entries
        out.dd_unresolved_entries = self.dd_unresolved_entries + other.dd_unresolved_entries
        out.unknown_scalars = self.unknown_scalars + other.unknown_scalars
        return out

    def counts(self) -> dict:
        d = {k: getattr(self, k) for k in _COUNTS}
        d["correct_pct"] = round(self.correct_pct, 2)
        d["false_equalities"] = len(self.false_equalities)
        return d

    def summary(self) -> str:
        return (f"{self.axes} axes: {self.correct_pct:.1f}% correct, {self.wrong} wrong, "
                f"{self.bound_ok} bound_ok, {self.unresolved} unresolved; scalars "
                f"{self.scalar_ok}/{self.scalar_wrong}/{self.scalar_unknown}; dd axes {self.dd_axes}: "
                f"{self.dd_correct}/{self.dd_bound_ok}/{self.dd_wrong}/{self.dd_unresolved}")


# ------------------------------------------------------------------ grading

def _entry(e):
    """Normalize an axis entry to (kind, payload, key)."""
    if isinstance(e, bool):
        raise TypeError("axis entry must not be a bool")
    if isinstance(e, int):
        return "int", e, None
    if e is None:
        return "unknown", None, None
    kind = e[0]
    payload = e[1] if len(e) > 1 else None
    key = e[2] if len(e) > 2 else None
    if kind not in ("int", "expr", "bound", "unknown"):
        raise ValueError(f"unknown axis entry kind {kind!r}")
    return kind, payload, key


def _call(fn, env):
    try:
        v = fn(env)
    except Exception:  # an expression the tool wrote that cannot be evaluated
        return None
    if isinstance(v, bool) or v is None:
        return None
    try:
        iv = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return iv if iv == v else None


def _describe(kind, payload, key):
    if kind == "int":
        return str(payload)
    text = getattr(payload, "text", None) or (str(key) if key is not None else None)
    if text is None:
        text = kind
    return text if kind != "bound" else f"<= {text}"


def grade(shape_fn: Callable, truth: dict, env_fn: Callable | None = None,
          values: Iterable[str] | None = None) -> Grade:
    """Grade ``shape_fn`` (see the module doc) against ``truth``.

    env_fn(i, binding, runtime_shapes_i) -> dict gives the evaluation
    environment of binding ``i`` (default: the binding itself).
    values: restrict grading to these value names (default: all in the truth).
    """
    bindings = truth["bindings"]
    shapes = truth["shapes"]
    n = min(len(bindings), len(shapes))
    bindings, shapes = bindings[:n], shapes[:n]
    skipped = set(truth.get("skipped") or [])
    dd = set(truth.get("data_dependent") or [])
    envs = []
    for i in range(n):
        envs.append(dict(env_fn(i, bindings[i], shapes[i]) if env_fn else bindings[i]))

    # every recorded value, in graph order, over the bindings where it is present
    names: list[str] = []
    seen = set()
    for s in shapes:
        for k in s:
            if k not in seen:
                seen.add(k)
                names.append(k)
    if values is not None:
        want = set(values)
        names = [k for k in names if k in want]

    g = Grade()
    groups: dict = {}   # key -> list of (value, axis, [runtime per binding or None])
    for name in names:
        if name in skipped:
            continue
        rts = [s.get(name) for s in shapes]
        present = [i for i, r in enumerate(rts) if r is not None]
        if not present:
            continue
        is_dd = name in dd
        ranks = {len(rts[i]) for i in present}
        rank = len(rts[present[0]])
        try:
            ours = shape_fn(name)
        except KeyError:
            ours = None
        if is_dd:
            g.dd_values += 1
        else:
            g.values += 1

        if rank == 0 and ranks == {0}:
            if is_dd:
                g.dd_scalars += 1
            else:
                g.scalars += 1
            if ours is None:
                g.unknown_scalars.append(name)
                if not is_dd:
                    g.scalar_unknown += 1
            elif len(ours) == 0:
                if not is_dd:
                    g.scalar_ok += 1
            else:
                if is_dd:
                    g.dd_wrong += 1
                else:
                    g.scalar_wrong += 1
                    g.wrong += 1
                g.wrong_entries.append(WrongEntry(name, None, f"rank {len(ours)}", [[] for _ in present],
                                                  bindings[present[0]], "rank", is_dd))
            continue

        naxes = max(ranks)
        if is_dd:
            g.dd_axes += naxes
        else:
            g.axes += naxes
        if ours is None:
            if is_dd:
                g.dd_unresolved += naxes
                g.dd_unresolved_entries.extend((name, a) for a in range(naxes))
            else:
                g.unresolved += naxes
                g.unresolved_entries.extend((name, a) for a in range(naxes))
            continue
        bad_rank = [i for i in present if len(rts[i]) != len(ours)]
        if bad_rank:
            if is_dd:
                g.dd_wrong += naxes
            else:
                g.wrong += naxes
            g.wrong_entries.append(WrongEntry(name, None, f"rank {len(ours)}", [rts[i] for i in present],
                                              bindings[bad_rank[0]], "rank", is_dd))
            continue

        for axis, raw in enumerate(ours):
            kind, payload, key = _entry(raw)
            runtime = [rts[i][axis] for i in present]
            verdict = "unresolved"
            fail = None
            if kind == "int":
                fail = next((i for i in present if rts[i][axis] != payload), None)
                verdict = "correct" if fail is None else "wrong"
            elif kind == "expr":
                vals = {i: _call(payload, envs[i]) for i in present}
                fail = next((i for i in present if vals[i] is not None and vals[i] != rts[i][axis]), None)
                if fail is not None:
                    verdict = "wrong"
                elif all(v is not None for v in vals.values()):
                    verdict = "correct"
            elif kind == "bound":
                vals = {i: _call(payload, envs[i]) for i in present}
                fail = next((i for i in present if vals[i] is not None and vals[i] < rts[i][axis]), None)
                if fail is not None:
                    verdict = "wrong"
                elif all(v is not None for v in vals.values()):
                    verdict = "bound_ok"
            if verdict == "wrong":
                g.wrong_entries.append(WrongEntry(
                    name, axis, _describe(kind, payload, key), runtime, bindings[fail],
                    "bound" if kind == "bound" else "exact", is_dd))
            if is_dd:
                attr = {"correct": "dd_correct", "wrong": "dd_wrong", "bound_ok": "dd_bound_ok",
                        "unresolved": "dd_unresolved"}[verdict]
                if verdict == "unresolved":
                    g.dd_unresolved_entries.append((name, axis))
            else:
                attr = verdict
                if verdict == "unresolved":
                    g.unresolved_entries.append((name, axis))
            setattr(g, attr, getattr(g, attr) + 1)
            if key is not None and verdict != "correct":
                groups.setdefault(key, []).append(
                    (name, axis, [rts[i][axis] if i in present and axis < len(rts[i]) else None
                                  for i in range(n)]))

    for key, uses in groups.items():
        if len(uses) < 2:
            continue
        done = False
        for i in range(n):
            first = next(((v, a, r[i]) for v, a, r in uses if r[i] is not None), None)
            if first is None:
                continue
            other = next(((v, a, r[i]) for v, a, r in uses if r[i] is not None and r[i] != first[2]), None)
            if other is not None:
                g.false_equalities.append(FalseEquality(key, first, other, bindings[i]))
                done = True
                break
        if done:
            continue
    return g


# ------------------------------------------------------------------ smtshape adapter

def smtshape_env_fn(result) -> Callable:
    """env_fn for a smtshape Result: the binding plus, for every symbolic
    graph-input axis, the symbol smtshape made for it bound to the runtime size
    (this covers anonymous dims, whose symbols have generated names)."""
    input_dims = dict(getattr(result.engine, "input_dims", {}) or {})

    def env_fn(i, binding, runtime):
        env = dict(binding)
        for (inp, axis), sym in input_dims.items():
            shp = runtime.get(inp)
            name = getattr(sym, "name", None)
            if name is not None and shp is not None and axis < len(shp) and name not in env:
                env[name] = shp[axis]
        return env

    return env_fn


class _Eval:
    """A callable evaluating a smtshape expression at an env, printable."""

    __slots__ = ("expr", "text", "definitions")

    def __init__(self, expr, text, definitions=()):
        self.expr = expr
        self.text = text
        self.definitions = dict(definitions)

    def __call__(self, env):
        from smtshape.expr import evaluate
        return evaluate(self.expr, env, self.definitions)


def _show_expr(e) -> str:
    # a printing problem must not stop grading: fall back to sympy's text
    from smtshape.printing import show
    try:
        return show(e)
    except Exception:
        return str(e)


def smtshape_dim_entry(d):
    """Axis entry (see the module doc) of one solved smtshape :class:`~smtshape.Dim`."""
    from smtshape.dim import Exactness

    if d.exactness is Exactness.EXACT:
        if isinstance(d.expr, int):
            return ("int", d.expr)
        t = _show_expr(d.expr)
        return ("expr", _Eval(d.expr, t, d.definitions), t)
    if d.exactness is Exactness.UPPER_BOUND and d.bound is not None:
        t = _show_expr(d.bound)
        return ("bound", _Eval(d.bound, t, d.definitions), _show_expr(d.expr))
    return ("unknown", None, _show_expr(d.expr))


def smtshape_shape_fn(result) -> Callable:
    """shape_fn over a smtshape Result: EXACT -> int / expr, UPPER_BOUND ->
    bound, UNKNOWN -> unknown (keyed by the expression for false equalities)."""

    def shape_fn(name):
        try:
            s = result.shape(name)
        except KeyError:
            return None
        if s is None:
            return None
        return [smtshape_dim_entry(d) for d in s]

    return shape_fn


def grade_smtshape(result, truth: dict) -> Grade:
    """Grade a :class:`smtshape.Result` against a truth dict."""
    return grade(smtshape_shape_fn(result), truth, env_fn=smtshape_env_fn(result))


def input_dim_env_fn(input_dims: dict) -> Callable:
    """env_fn binding the names in ``{(input, axis): name}`` to runtime sizes."""

    def env_fn(i, binding, runtime):
        env = dict(binding)
        for (inp, axis), name in input_dims.items():
            shp = runtime.get(inp)
            if shp is not None and axis < len(shp) and name not in env:
                env[name] = shp[axis]
        return env

    return env_fn


# ------------------------------------------------------------------ other tools' dim text

MAX_TOOL_EXPR = 20_000


class _ToolExprError(ValueError):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\d*\.\d+|\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|\*\*|[-+*/%(),]))")
_FUNCS = {"floor", "ceiling", "ceil", "min", "max", "Min", "Max", "Mod", "mod", "Abs", "abs",
          "floordiv", "ceildiv"}


def _tokenize(text: str) -> list:
    toks = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise _ToolExprError(f"bad character at {pos}")
        num, name, op = m.groups()
        if num is not None:
            toks.append(("num", Fraction(num)))
        elif name is not None:
            toks.append(("name", name))
        else:
            toks.append(("op", op))
        pos = m.end()
    return toks


class _RatParser:
    """Precedence climbing over sympy-style text; builds a closure tree that
    evaluates with exact Fractions (no eval, bounded depth)."""

    def __init__(self, toks):
        self.t = toks
        self.i = 0
        self.depth = 0
        self.names = set()

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if op is not None and tok != ("op", op):
            raise _ToolExprError(f"expected {op!r}")
        self.i += 1
        return tok

    def parse(self):
        f = self.expr()
        if self.i != len(self.t):
            raise _ToolExprError("trailing input")
        return f

    def expr(self):
        self.depth += 1
        if self.depth > 100:
            raise _ToolExprError("too deep")
        f = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            g = self.term()
            f = (lambda a, b: lambda env: a(env) + b(env))(f, g) if op == "+" else \
                (lambda a, b: lambda env: a(env) - b(env))(f, g)
        self.depth -= 1
        return f

    def term(self):
        f = self.unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "//"), ("op", "%")):
            op = self.take()[1]
            g = self.unary()
            if op == "*":
                f = (lambda a, b: lambda env: a(env) * b(env))(f, g)
            elif op == "/":
                f = (lambda a, b: lambda env: a(env) / b(env))(f, g)
            elif op == "//":
                f = (lambda a, b: lambda env: Fraction(a(env) // b(env)))(f, g)
            else:
                f = (lambda a, b: lambda env: a(env) % b(env))(f, g)
        return f

    def unary(self):
        if self.peek() == ("op", "-"):
            self.take()
            f = self.unary()
            return lambda env: -f(env)
        if self.peek() == ("op", "+"):
            self.take()
            return self.unary()
        return self.power()

    def power(self):
        f = self.atom()
        if self.peek() == ("op", "**"):
            self.take()
            g = self.unary()

            def pw(env, a=f, b=g):
                e = b(env)
                if e.denominator != 1 or not 0 <= e <= 64:
                    raise _ToolExprError("exponent")
                return a(env) ** int(e)
            return pw
        return f

    def atom(self):
        kind, val = self.take()
        if kind == "num":
            return lambda env, v=val: v
        if kind == "op" and val == "(":
            f = self.expr()
            self.take(")")
            return f
        if kind == "name":
            if self.peek() == ("op", "("):
                if val not in _FUNCS:
                    raise _ToolExprError(f"unknown function {val}")
                self.take("(")
                args = [self.expr()]
                while self.peek() == ("op", ","):
                    self.take()
                    args.append(self.expr())
                self.take(")")
                return self.call(val, args)
            self.names.add(val)

            def var(env, n=val):
                if n not in env:
                    raise KeyError(n)
                return Fraction(env[n])
            return var
        raise _ToolExprError("unexpected token")

    @staticmethod
    def call(fname, args):
        import math
        f = fname.lower()
        if f in ("min", "max"):
            red = min if f == "min" else max
            return lambda env: red(a(env) for a in args)
        if len(args) == 1 and f == "floor":
            return lambda env: Fraction(math.floor(args[0](env)))
        if len(args) == 1 and f in ("ceiling", "ceil"):
            return lambda env: Fraction(math.ceil(args[0](env)))
        if len(args) == 1 and f == "abs":
            return lambda env: abs(args[0](env))
        if len(args) == 2 and f == "mod":
            return lambda env: args[0](env) % args[1](env)
        if len(args) == 2 and f == "floordiv":
            return lambda env: Fraction(args[0](env) // args[1](env))
        if len(args) == 2 and f == "ceildiv":
            return lambda env: Fraction(-(-args[0](env) // args[1](env)))
        raise _ToolExprError(f"bad call {fname}")


class _ToolExpr:
    """A parsed tool dim_param: callable(env) -> int | None, with ``.text`` and
    ``.names`` (the free names)."""

    __slots__ = ("text", "names", "_fn", "_sympy")

    def __init__(self, text, names, fn=None, sympy_expr=None):
        self.text = text
        self.names = frozenset(names)
        self._fn = fn
        self._sympy = sympy_expr

    def __call__(self, env):
        if any(n not in env for n in self.names):
            return None
        if self._sympy is not None:
            from smtshape.expr import evaluate
            return evaluate(self._sympy, env)
        try:
            v = self._fn(env)
        except (KeyError, ZeroDivisionError, _ToolExprError, OverflowError, ValueError, TypeError):
            return None
        if isinstance(v, Fraction) and v.denominator == 1:
            return int(v)
        return None


_TRANSLATE = re.compile(r"\b(Min|Max|Mod)\(")


def tool_expr(text: str):
    """Parse a dim_param written by another tool; returns a :class:`_ToolExpr`
    or None when the text is not an expression we can read.

    First the project's safe parser (``Min``/``Max``/``Mod`` renamed to its
    ``min``/``max``/``mod``); when that rejects the text (sympy's ``/``,
    ``floor``, ``ceiling``, decimals), a small exact-rational evaluator.
    """
    if not isinstance(text, str) or not text or len(text) > MAX_TOOL_EXPR:
        return None
    from smtshape.parse import ParseError, parse_expr
    t = _TRANSLATE.sub(lambda m: m.group(1).lower() + "(", text)
    try:
        e = parse_expr(t)
    except (ParseError, RecursionError, ValueError, TypeError):
        e = None
    if e is not None:
        from smtshape.expr import free_symbols
        return _ToolExpr(text, {s.name for s in free_symbols(e)}, sympy_expr=e)
    try:
        p = _RatParser(_tokenize(text))
        fn = p.parse()
    except (_ToolExprError, RecursionError, ValueError, ZeroDivisionError, IndexError):
        return None
    return _ToolExpr(text, p.names, fn=fn)


def dim_entry_from_text(text: str):
    """Axis entry for a tool's symbolic dim text: ("expr", fn, key) or unknown."""
    e = tool_expr(text)
    if e is None:
        return ("unknown", None, text)
    return ("expr", e, text)


# ------------------------------------------------------------------ proto / IR adapters

def type_entries(tp):
    """Axis entries of an onnx TypeProto (a tensor type), None when rank unknown."""
    return _type_entries(tp)


def _type_entries(tp):
    """Axis entries of an onnx TypeProto, None when rank unknown / not a tensor."""
    if not tp.HasField("tensor_type"):
        return None
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return None
    out = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(("int", int(d.dim_value)))
        elif d.HasField("dim_param") and d.dim_param:
            out.append(dim_entry_from_text(d.dim_param))
        else:
            out.append(("unknown", None))
    return out


def proto_shape_fn(model_proto) -> Callable:
    """shape_fn reading a ModelProto's value_info, graph outputs, inputs and
    initializers (the tool's output model)."""
    g = model_proto.graph
    types = {}
    for init in g.initializer:
        types[init.name] = [("int", int(d)) for d in init.dims]
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        types[vi.name] = vi.type
    cache = {}

    def shape_fn(name):
        if name not in cache:
            t = types.get(name)
            cache[name] = t if (t is None or isinstance(t, list)) else _type_entries(t)
        return cache[name]

    return shape_fn


def _proto_input_dims(model_proto) -> dict:
    out = {}
    for vi in model_proto.graph.input:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            continue
        for a, d in enumerate(tt.shape.dim):
            if d.HasField("dim_param") and re.fullmatch(r"[A-Za-z_]\w*", d.dim_param):
                out[(vi.name, a)] = d.dim_param
    return out


def grade_proto(model_proto, truth: dict) -> Grade:
    """Grade shapes stored in a ModelProto (onnx / onnxruntime output)."""
    return grade(proto_shape_fn(model_proto), truth, env_fn=input_dim_env_fn(_proto_input_dims(model_proto)))


def ir_shape_fn(model) -> Callable:
    """shape_fn over an onnx_ir Model's value shapes (onnx-shape-inference output)."""
    vals = {}
    g = model.graph
    for v in g.inputs:
        vals[v.name] = v
    for name, v in g.initializers.items():
        vals.setdefault(name, v)
    for node in g:
        for v in node.outputs:
            if v.name:
                vals[v.name] = v
    for v in g.outputs:
        vals.setdefault(v.name, v)
    cache = {}

    def entries(v):
        shp = v.shape
        if shp is None:
            cv = getattr(v, "const_value", None)
            if cv is not None:
                return [("int", int(d)) for d in cv.shape]
            return None
        out = []
        for d in shp:
            if isinstance(d, int):
                out.append(("int", int(d)))
            else:
                text = getattr(d, "value", None)
                if text is None:
                    out.append(("unknown", None))
                elif isinstance(text, int):
                    out.append(("int", int(text)))
                else:
                    out.append(dim_entry_from_text(str(text)))
        return out

    def shape_fn(name):
        if name not in cache:
            v = vals.get(name)
            cache[name] = None if v is None else entries(v)
        return cache[name]

    return shape_fn


def _ir_input_dims(model) -> dict:
    out = {}
    for v in model.graph.inputs:
        if v.shape is None:
            continue
        for a, d in enumerate(v.shape):
            text = getattr(d, "value", None)
            if isinstance(text, str) and re.fullmatch(r"[A-Za-z_]\w*", text):
                out[(v.name, a)] = text
    return out


def grade_ir(model, truth: dict) -> Grade:
    """Grade shapes stored on an onnx_ir Model's values."""
    return grade(ir_shape_fn(model), truth, env_fn=input_dim_env_fn(_ir_input_dims(model)))
