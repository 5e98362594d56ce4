"""Conformance against ONNX's backend node test suite.

The onnx wheel ships the generators of its node tests
(``onnx.backend.test.case.node.collect_testcases()``): about 1,880 tests, each
one model and one data set (inputs and expected outputs).  This module builds
the suite from the installed wheel, keeps a compact copy of it (models, input
shapes, the values of small integer inputs, expected output shapes) in a cache
outside the repository, and grades shape-inference tools on it with the
grader of :mod:`graders.truth`.

Every test is run in three *variants*, each with ``value_info`` removed (in
subgraphs too) and the graph output shapes cleared:

``static``    the graph inputs as the test declares them;
``values``    every integer or bool tensor input of at most 64 elements made an
              initializer holding its test data (so shape-carrying inputs such as
              Reshape's shape, Slice's starts or TopK's k are constants);
``symbolic``  like ``values``, with every remaining graph-input dim replaced by a
              fresh ``dim_param``; expressions are evaluated at the test's input sizes.

Grading, per output axis (``graders.truth.grade``): *right* when an exact
claim equals the expected size or an upper bound is >= it; *wrong* when an
exact claim differs, the rank differs, or a bound is below the size;
*unresolved* otherwise.  A test is *fully resolved* when every output axis is
right (and every scalar output's rank is known).  A sequence output is graded
as its length (one axis) and the shape of each element; an optional output as
its presence (one axis: 1 or 0) and its content (see :class:`Expected`).

    from graders import conformance as C
    tests = C.load_suite()
    outcomes = C.run_suite(tests)                    # smtshape, every variant
    C.summarize(outcomes)                            # {variant: Summary}
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import re
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable

__all__ = [
    "VARIANTS",
    "SMALL_INT_ELEMENTS",
    "InputData",
    "NodeTest",
    "Outcome",
    "Summary",
    "cache_path",
    "build_suite",
    "load_suite",
    "variant_model",
    "Expected",
    "truth_for",
    "with_paths",
    "smtshape_part_fn",
    "proto_part_fn",
    "fail_outcome",
    "declared_dim_params",
    "grade_outcome",
    "run_smtshape",
    "run_suite",
    "summarize",
    "wrong_lines",
]

VARIANTS = ("static", "values", "symbolic")
SMALL_INT_ELEMENTS = 64
CACHE_FORMAT = 2

# onnx TensorProto data types that hold integers (bool included)
_INT_TYPES = None


def _int_types() -> frozenset:
    global _INT_TYPES
    if _INT_TYPES is None:
        from onnx import TensorProto as T
        names = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL",
                 "INT4", "UINT4", "INT2", "UINT2")
        _INT_TYPES = frozenset(getattr(T, n) for n in names if hasattr(T, n))
    return _INT_TYPES


# ------------------------------------------------------------------ the suite

@dataclass
class InputData:
    """One graph input of a test's data set."""

    name: str
    kind: str                      # tensor | sequence | none
    shape: list | None = None      # tensor: its shape
    elem_shapes: list | None = None  # sequence: each element's shape
    values: list | None = None     # tensor of an integer/bool type with <= SMALL_INT_ELEMENTS elements


@dataclass
class NodeTest:
    name: str
    op: str                        # op_type of the tested node ("domain::Op" outside the default domain)
    expanded: bool                 # a function-expanded variant of another test
    model_bytes: bytes
    inputs: list                   # [InputData], graph-input order
    outputs: list                  # [(name, spec)]; spec: {"t": shape} a tensor, {"s": [spec, ...]} a
                                   # sequence, {"o": spec | None} an optional (None: empty), None: not graded
    _model: object = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.op} (expanded)" if self.expanded else self.op

    def model(self):
        """The test's ModelProto (parsed once, then shared: copy before changing)."""
        if self._model is None:
            import onnx
            m = onnx.ModelProto()
            m.ParseFromString(self.model_bytes)
            self._model = m
        return self._model


def cache_path(onnx_version: str | None = None) -> str:
    """Where the suite of the installed onnx is cached:
    ``$SMTSHAPE_CACHE`` or ``$XDG_CACHE_HOME/smtshape`` (default ``~/.cache/smtshape``),
    then ``node-suite/onnx-<version>.json.gz``."""
    if onnx_version is None:
        import onnx
        onnx_version = onnx.__version__
    base = os.environ.get("SMTSHAPE_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "smtshape")
    safe = re.sub(r"[^A-Za-z0-9.+_-]", "_", onnx_version)
    return os.path.join(base, "node-suite", f"onnx-{safe}.json.gz")


def _as_array(x):
    import numpy as np
    from onnx import TensorProto, numpy_helper
    if isinstance(x, TensorProto):
        return numpy_helper.to_array(x), x.data_type
    a = np.asarray(x)
    return a, None


def _declared_elem_type(vi):
    tp = vi.type
    if tp.HasField("tensor_type"):
        return tp.tensor_type.elem_type
    return None


def _input_data(vi, x) -> InputData:
    import numpy as np
    if x is None:
        return InputData(vi.name, "none")
    if isinstance(x, list):
        shapes = []
        for e in x:
            a, _ = _as_array(e) if e is not None else (None, None)
            shapes.append(None if a is None else [int(d) for d in a.shape])
        return InputData(vi.name, "sequence", elem_shapes=shapes)
    a, _ = _as_array(x)
    shape = [int(d) for d in a.shape]
    values = None
    et = _declared_elem_type(vi)
    if et in _int_types() and a.size <= SMALL_INT_ELEMENTS:
        try:
            values = [int(v) for v in np.asarray(a).astype(np.int64).reshape(-1)] if a.dtype != np.uint64 \
                else [int(v) for v in a.reshape(-1)]
        except (TypeError, ValueError, OverflowError):
            values = None
    return InputData(vi.name, "tensor", shape=shape, values=values)


def _output_spec(x):
    """The expected structure of one output value (see NodeTest.outputs)."""
    import numpy as np
    from onnx import TensorProto
    if isinstance(x, (np.ndarray, np.generic, TensorProto)):
        a, _ = _as_array(x)
        return {"t": [int(d) for d in a.shape]}
    if isinstance(x, list):
        elems = [_output_spec(e) for e in x]
        return None if any(e is None for e in elems) else {"s": elems}
    return None


def _spec_for(vi, x):
    """Spec of an output given its declared type: optionals are wrapped."""
    tp = vi.type
    if tp.WhichOneof("value") == "optional_type":
        if x is None:
            return {"o": None}
        inner = _output_spec(x)
        return None if inner is None else {"o": inner}
    return _output_spec(x)


def _op_of(model) -> str:
    g = model.graph
    n = g.node[0] if len(g.node) else None
    if n is None:
        return "(empty)"
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"


def build_suite(names: Iterable[str] | None = None) -> list:
    """Build the suite from the installed onnx wheel (a few seconds)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    want = set(names) if names is not None else None
    by_name = {c.name: c for c in cases}
    out = []
    for c in cases:
        if want is not None and c.name not in want:
            continue
        if not c.data_sets:
            continue
        ins, outs = c.data_sets[0]
        g = c.model.graph
        inits = {i.name for i in g.initializer}
        gin = [vi for vi in g.input if vi.name not in inits]
        inputs = [_input_data(vi, x) for vi, x in zip(gin, ins)]
        outputs = [(vi.name, _spec_for(vi, x)) for vi, x in zip(g.output, outs)]
        expanded = "_expanded" in c.name
        base = by_name.get(c.name.split("_expanded")[0]) if expanded else None
        op = _op_of(base.model if base is not None else c.model)
        out.append(NodeTest(c.name, op, expanded, c.model.SerializeToString(), inputs, outputs))
    return out


def _to_json(tests) -> dict:
    import onnx
    return {
        "format": CACHE_FORMAT,
        "onnx": onnx.__version__,
        "tests": [{
            "name": t.name, "op": t.op, "expanded": t.expanded,
            "model": base64.b64encode(t.model_bytes).decode("ascii"),
            "inputs": [{"name": i.name, "kind": i.kind, "shape": i.shape, "elem_shapes": i.elem_shapes,
                        "values": i.values} for i in t.inputs],
            "outputs": [[n, s] for n, s in t.outputs],
        } for t in tests],
    }


def _ints(xs):
    if xs is None:
        return None
    if not isinstance(xs, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in xs):
        raise ValueError("bad integer list in the suite cache")
    return xs


def _spec(s):
    if s is None:
        return None
    if not isinstance(s, dict) or len(s) != 1:
        raise ValueError("bad output spec in the suite cache")
    (k, v), = s.items()
    if k == "t":
        return {"t": _ints(v)}
    if k == "s":
        if not isinstance(v, list):
            raise ValueError("bad output spec in the suite cache")
        return {"s": [_spec(e) for e in v]}
    if k == "o":
        return {"o": _spec(v)}
    raise ValueError("bad output spec in the suite cache")


def _from_json(d) -> list:
    out = []
    for t in d["tests"]:
        inputs = []
        for i in t["inputs"]:
            es = i.get("elem_shapes")
            inputs.append(InputData(str(i["name"]), str(i["kind"]), _ints(i.get("shape")),
                                    None if es is None else [_ints(s) for s in es], _ints(i.get("values"))))
        outs = [(str(n), _spec(s)) for n, s in t["outputs"]]
        out.append(NodeTest(str(t["name"]), str(t["op"]), bool(t["expanded"]),
                            base64.b64decode(t["model"]), inputs, outs))
    return out


_MEMO: dict = {}


def load_suite(names: Iterable[str] | None = None, cache: bool = True) -> list:
    """The node suite of the installed onnx: from the cache when it is there
    (and readable), else built and cached.  ``names`` restricts to those tests."""
    import onnx

    key = onnx.__version__
    tests = _MEMO.get(key)
    if tests is None:
        path = cache_path(key)
        if cache and os.path.exists(path):
            try:
                with gzip.open(path, "rb") as f:
                    d = json.loads(f.read().decode("utf-8"))
                if d.get("format") == CACHE_FORMAT and d.get("onnx") == key:
                    tests = _from_json(d)
            except (OSError, ValueError, KeyError, TypeError, EOFError):
                tests = None
        if tests is None:
            tests = build_suite()
            if cache:
                try:
                    from smtshape.fileio import write_atomic
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    write_atomic(path, gzip.compress(json.dumps(_to_json(tests)).encode("utf-8"), 6))
                except OSError:
                    pass  # a read-only home: the suite is still built in memory
        _MEMO[key] = tests
    if names is not None:
        want = set(names)
        return [t for t in tests if t.name in want]
    return list(tests)


# ------------------------------------------------------------------ variants

def _strip_value_info(graph) -> None:
    del graph.value_info[:]
    for n in graph.node:
        for a in n.attribute:
            if a.HasField("g"):
                _strip_value_info(a.g)
            for sg in a.graphs:
                _strip_value_info(sg)


def _tensor_type_of(tp):
    """The TypeProto.Tensor inside a tensor / optional(tensor) / sequence(tensor) type, or None."""
    for _ in range(4):
        which = tp.WhichOneof("value")
        if which == "tensor_type":
            return tp.tensor_type
        if which == "sequence_type":
            tp = tp.sequence_type.elem_type
        elif which == "optional_type":
            tp = tp.optional_type.elem_type
        else:
            return None
    return None


def _clear_shape(tp) -> None:
    tt = _tensor_type_of(tp)
    if tt is not None:
        tt.ClearField("shape")


def _sequence_dim_params(g, test: NodeTest) -> dict:
    """Sizes of the dim_params a model declares on its sequence inputs' element
    type, where every element of the test's sequence has the same size there
    (tensor inputs' dims are bound through the runtime input shapes instead)."""
    data = {i.name: i for i in test.inputs}
    sizes: dict = {}
    for vi in g.input:
        d = data.get(vi.name)
        if d is None or d.kind != "sequence" or not d.elem_shapes or vi.type.HasField("tensor_type"):
            continue
        tt = _tensor_type_of(vi.type)
        if tt is None or not tt.HasField("shape"):
            continue
        for a, dim in enumerate(tt.shape.dim):
            if dim.dim_param:
                seen = {s[a] if s is not None and a < len(s) else None for s in d.elem_shapes}
                sizes.setdefault(dim.dim_param, set()).update(seen)
    return {k: v.pop() for k, v in sizes.items() if len(v) == 1 and None not in v}


def variant_model(test: NodeTest, variant: str):
    """The test's model for one variant, and the binding of the fresh dim
    names of the symbolic variant: ``(ModelProto, {dim name: size})``."""
    import onnx
    from onnx import helper

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    m = onnx.ModelProto()
    m.CopyFrom(test.model())
    g = m.graph
    _strip_value_info(g)
    for vi in g.output:
        _clear_shape(vi.type)
    binding = _sequence_dim_params(g, test)
    if variant == "static":
        return m, binding

    data = {i.name: i for i in test.inputs}
    keep = []
    for vi in g.input:
        d = data.get(vi.name)
        if (d is not None and d.kind == "tensor" and d.values is not None
                and vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in _int_types()):
            et = vi.type.tensor_type.elem_type
            vals = [bool(v) for v in d.values] if et == onnx.TensorProto.BOOL else d.values
            g.initializer.append(helper.make_tensor(vi.name, et, d.shape, vals))
        else:
            keep.append(vi)
    if len(keep) != len(g.input):
        kept = [onnx.ValueInfoProto() for _ in keep]
        for k, vi in zip(kept, keep):
            k.CopyFrom(vi)
        del g.input[:]
        g.input.extend(kept)
        if m.ir_version < 4:
            m.ir_version = 4  # initializers that are not graph inputs
    if variant == "values":
        return m, binding

    binding = {}     # every input dim gets a fresh name below

    k = 0
    for vi in g.input:
        tt = _tensor_type_of(vi.type)
        if tt is None or not tt.HasField("shape"):
            continue
        d = data.get(vi.name)
        for a, dim in enumerate(tt.shape.dim):
            size = None
            if d is not None and d.kind == "tensor" and d.shape is not None and a < len(d.shape):
                size = d.shape[a]
            elif d is not None and d.kind == "sequence" and d.elem_shapes:
                sizes = {s[a] if s is not None and a < len(s) else None for s in d.elem_shapes}
                if len(sizes) == 1 and None not in sizes:
                    size = sizes.pop()
            dim.Clear()
            if size is not None:
                name = f"cf_s{k}"
                k += 1
                dim.dim_param = name
                binding[name] = size
    return m, binding


@dataclass
class Expected:
    """What a test's outputs are graded against: ``truth`` in the format of
    :func:`graders.truth.grade` (one binding; the runtime shapes of the tensor
    inputs, for evaluating expressions over input dims, and of the graded
    values); ``graded``: the names graded; ``ungraded``: outputs that are not
    (maps, unknown structure); ``paths``: for the parts of sequence and
    optional outputs, graded as values of their own, ``{part: (output, steps)}``
    with steps ``k`` (element k), ``"len"`` (a sequence's length, one axis),
    ``"has"`` (an optional's presence: one axis of size 1 or 0) and
    ``"value"`` (an optional's content)."""

    truth: dict
    graded: list
    ungraded: list
    paths: dict


def _flatten(label, name, steps, spec, shapes, paths, graded) -> None:
    if "t" in spec:
        shapes[label] = list(spec["t"])
    elif "s" in spec:
        shapes[f"{label}[len]"] = [len(spec["s"])]
        paths[f"{label}[len]"] = (name, steps + ("len",))
        graded.append(f"{label}[len]")
        for k, e in enumerate(spec["s"]):
            _flatten(f"{label}[{k}]", name, steps + (k,), e, shapes, paths, graded)
        return
    else:
        inner = spec["o"]
        shapes[f"{label}[has]"] = [0 if inner is None else 1]
        paths[f"{label}[has]"] = (name, steps + ("has",))
        graded.append(f"{label}[has]")
        if inner is not None:
            _flatten(f"{label}[value]", name, steps + ("value",), inner, shapes, paths, graded)
        return
    if steps:
        paths[label] = (name, steps)
    graded.append(label)


def truth_for(test: NodeTest, binding: dict) -> Expected:
    shapes = {}
    for i in test.inputs:
        if i.kind == "tensor" and i.shape is not None:
            shapes[i.name] = list(i.shape)
    graded, ungraded, paths = [], [], {}
    for name, spec in test.outputs:
        if spec is None:
            ungraded.append(name)
        else:
            _flatten(name, name, (), spec, shapes, paths, graded)
    return Expected({"bindings": [dict(binding)], "shapes": [shapes]}, graded, ungraded, paths)


def with_paths(shape_fn: Callable, part_fn: Callable, paths: dict) -> Callable:
    """A shape_fn answering the parts of sequence/optional outputs with
    ``part_fn(output, steps)`` and everything else with ``shape_fn``."""

    def fn(name):
        p = paths.get(name)
        if p is None:
            return shape_fn(name)
        try:
            return part_fn(*p)
        except (KeyError, IndexError, AttributeError, TypeError):
            return None

    return fn


def smtshape_part_fn(res) -> Callable:
    """part_fn over a smtshape Result (its sequence/optional infos, ``TensorInfo.seq``)."""
    from .truth import smtshape_dim_entry

    def dims(shape):
        if shape is None:
            return None
        return [("unknown", None) if d is None else smtshape_dim_entry(res.dim_of(d)) for d in shape]

    def part(name, steps):
        cur = res._lookup(name)[1]
        for k, step in enumerate(steps):
            seq = getattr(cur, "seq", None)
            if seq is None:
                return None
            if step in ("len", "has"):
                if seq.length is None:
                    return [("unknown", None)]
                return [smtshape_dim_entry(res.dim_of(seq.length))]
            if step == "value":
                cur = seq.elems[0] if seq.elems else None
            elif seq.elems is not None and step < len(seq.elems):
                cur = seq.elems[step]
            else:
                return dims(seq.elem_shape)
            if cur is None:
                return None
        return dims(cur.shape)

    return part


def proto_part_fn(model_proto) -> Callable:
    """part_fn over a ModelProto's graph outputs (sequence element shapes as
    the tool wrote them; lengths and presence are never stated there)."""
    from .truth import type_entries
    types = {vi.name: vi.type for vi in list(model_proto.graph.output) + list(model_proto.graph.value_info)}

    def part(name, steps):
        tp = types.get(name)
        for step in steps:
            if tp is None:
                return None
            if step in ("len", "has"):
                return [("unknown", None)]
            which = tp.WhichOneof("value")
            if step == "value" and which == "optional_type":
                tp = tp.optional_type.elem_type
            elif isinstance(step, int) and which == "sequence_type":
                tp = tp.sequence_type.elem_type
            else:
                return None
        return None if tp is None else type_entries(tp)

    return part


def no_part_fn(name, steps):
    return None


# ------------------------------------------------------------------ outcomes

@dataclass
class Outcome:
    test: str
    op: str                      # label: op, or "op (expanded)"
    variant: str
    tool: str
    status: str = "ok"           # ok | crash | timeout | grade-error | incomplete
    error: str = ""
    ms: float | None = None
    axes: int = 0
    right: int = 0               # correct + bound_ok
    bound_ok: int = 0
    unresolved: int = 0
    wrong: int = 0
    full: bool = False
    ungraded: list = field(default_factory=list)   # outputs of unknown structure
    wrong_entries: list = field(default_factory=list)
    traceback: str = ""
    # smtshape only: every node test is a model the reference runs, so a conflict or a
    # "consistent: False" is a false claim; rule failures and ops without a rule, for the report
    consistent: bool | None = None
    findings: list = field(default_factory=list)   # conflicts and rule_error diagnostics, one line each
    no_rule: list = field(default_factory=list)    # op types of nodes without a rule
    # one symbol or expression the tool could not express in the input dims, put on axes whose
    # sizes differ (graders.truth's false equalities); "echoed": the symbol is a dim_param the
    # model itself declares on an input (the tool repeats the model's claim)
    false_equalities: list = field(default_factory=list)
    echoed_false_equalities: list = field(default_factory=list)

    def describe_wrong(self) -> list:
        out = []
        for w in self.wrong_entries:
            where = "rank" if w.axis is None else f"axis {w.axis}"
            exp = w.runtime[0] if w.runtime else "?"
            out.append(f"{self.op} | {self.test} | {self.variant} | {w.value} {where} | ours {w.ours} ({w.kind}) "
                       f"| expected {exp}")
        return out


def declared_dim_params(model) -> set:
    """dim_params written on the graph inputs of a ModelProto (inside sequence and optional types too)."""
    out = set()
    for vi in model.graph.input:
        tt = _tensor_type_of(vi.type)
        if tt is not None and tt.HasField("shape"):
            out.update(d.dim_param for d in tt.shape.dim if d.dim_param)
    return out


def grade_outcome(out: Outcome, shape_fn, exp: Expected, env_fn=None, part_fn=no_part_fn,
                  declared: set = frozenset()) -> Outcome:
    """Fill ``out`` by grading ``shape_fn`` (graders.truth conventions) against ``exp``.
    ``declared``: dim_params of the model's inputs (false equalities on them are "echoed")."""
    from .truth import grade
    fn = with_paths(shape_fn, part_fn, exp.paths) if exp.paths else shape_fn
    g = grade(fn, exp.truth, env_fn=env_fn, values=exp.graded)
    out.axes = g.axes
    out.bound_ok = g.bound_ok
    out.right = g.correct + g.bound_ok
    out.unresolved = g.unresolved
    out.wrong = g.wrong
    out.wrong_entries = list(g.wrong_entries)
    out.ungraded = list(exp.ungraded)
    for f in g.false_equalities:
        (out.echoed_false_equalities if str(f.key) in declared else out.false_equalities).append(str(f))
    out.full = (not exp.ungraded and g.wrong == 0 and g.unresolved == 0 and g.scalar_unknown == 0
                and g.values + g.dd_values == len(exp.graded))
    return out


def fail_outcome(out: Outcome, exp: Expected, status, err, tb="") -> Outcome:
    """``out`` for a tool that gave no answer: everything unresolved."""
    from .truth import grade
    g = grade(lambda name: None, exp.truth, values=exp.graded)
    out.status = status
    out.error = err
    out.traceback = tb
    out.axes = g.axes
    out.unresolved = g.unresolved
    out.ungraded = list(exp.ungraded)
    return out


def one_line(e: BaseException) -> str:
    s = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {s}"[:300]


def _smtshape_env_fn(res, test: NodeTest):
    """graders.truth's env (input dim symbols bound to the input sizes) plus
    the length symbol of every sequence input bound to its length."""
    from .truth import smtshape_env_fn
    base = smtshape_env_fn(res)
    extra = {}
    for i in test.inputs:
        if i.kind != "sequence" or i.elem_shapes is None:
            continue
        try:
            seq = res._lookup(i.name)[1].seq
        except KeyError:
            continue
        if seq is not None and seq.optional and seq.elems:
            # an optional input holding a sequence: the content's length
            seq = getattr(seq.elems[0], "seq", None)
        n = getattr(seq, "length", None) if seq is not None else None
        name = getattr(n, "name", None)
        if name is not None and getattr(n, "is_Symbol", False):
            extra[name] = len(i.elem_shapes)

    def env_fn(k, binding, runtime):
        env = base(k, binding, runtime)
        for a, v in extra.items():
            env.setdefault(a, v)
        return env

    return env_fn


def run_smtshape(test: NodeTest, variant: str, analyze_kwargs: dict | None = None) -> Outcome:
    """Analyze one test variant with smtshape and grade it.  An exception
    escaping ``analyze`` (or solving the output shapes) is a crash."""
    from .truth import smtshape_shape_fn
    import smtshape

    model, binding = variant_model(test, variant)
    exp = truth_for(test, binding)
    out = Outcome(test.name, test.label, variant, "smtshape")
    t0 = time.perf_counter()
    try:
        res = smtshape.analyze(model, **(analyze_kwargs or {}))
        for name in exp.graded:
            if name not in exp.paths:
                res.shape(name)
    except Exception as e:  # noqa: BLE001 - a crash is a finding, reported
        out.ms = (time.perf_counter() - t0) * 1000
        return fail_outcome(out, exp, "crash", one_line(e), traceback.format_exc(limit=8))
    out.ms = (time.perf_counter() - t0) * 1000
    try:
        grade_outcome(out, smtshape_shape_fn(res), exp, _smtshape_env_fn(res, test), smtshape_part_fn(res),
                      declared_dim_params(model))
    except Exception as e:  # noqa: BLE001
        return fail_outcome(out, exp, "grade-error", one_line(e), traceback.format_exc(limit=8))
    _findings(out, res)
    return out


def _findings(out: Outcome, res) -> None:
    try:
        out.consistent = res.consistent
        out.findings = [f"conflict: {c.explain()}".replace("\n", " ")[:300] for c in res.conflicts]
        diags = list(getattr(res.engine, "diagnostics", []))
        out.findings += [str(d).replace("\n", " ")[:300] for d in diags if d.kind == "rule_error"]
        out.no_rule = sorted({(d.op_type or d.node) for d in diags if d.kind == "no_rule"})
    except Exception as e:  # noqa: BLE001 - an API in flux must not stop grading
        out.findings.append(f"(findings unavailable: {one_line(e)})")


def run_suite(tests: list | None = None, variants: Iterable[str] = VARIANTS,
              runner: Callable = run_smtshape, progress: Callable | None = None) -> list:
    """Run ``runner(test, variant)`` over the suite; a list of Outcomes."""
    import logging
    if tests is None:
        tests = load_suite()
    variants = list(variants)
    outs = []
    prev = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        for i, t in enumerate(tests):
            for v in variants:
                o = runner(t, v)
                outs.append(o)
            if progress is not None:
                progress(i + 1, len(tests), t)
    finally:
        logging.disable(prev)
    return outs


# ------------------------------------------------------------------ summaries

@dataclass
class Summary:
    tests: int = 0
    full: int = 0
    axes: int = 0
    right: int = 0
    bound_ok: int = 0
    unresolved: int = 0
    wrong: int = 0
    failed: int = 0              # crash / timeout / grade-error
    ms: float = 0.0

    @property
    def full_pct(self) -> float:
        return 100.0 * self.full / self.tests if self.tests else 0.0

    def add(self, o: Outcome) -> None:
        self.tests += 1
        self.full += o.full
        self.axes += o.axes
        self.right += o.right
        self.bound_ok += o.bound_ok
        self.unresolved += o.unresolved
        self.wrong += o.wrong
        self.failed += o.status != "ok"
        self.ms += o.ms or 0.0


def summarize(outcomes: Iterable[Outcome], key: Callable = lambda o: (o.tool, o.variant)) -> dict:
    """Sum outcomes into Summary objects grouped by ``key(outcome)``."""
    out: dict = {}
    for o in outcomes:
        out.setdefault(key(o), Summary()).add(o)
    return out


def wrong_lines(outcomes: Iterable[Outcome]) -> list:
    """One readable line per wrong axis and per crash, grouped by op:
    ``op | test | variant | value axis | ours ... | expected ...``."""
    lines = []
    for o in sorted(outcomes, key=lambda o: (o.op, o.test, VARIANTS.index(o.variant) if o.variant in VARIANTS else 9)):
        if o.status != "ok":
            lines.append(f"{o.op} | {o.test} | {o.variant} | {o.status}: {o.error}")
        lines.extend(o.describe_wrong())
    return lines
