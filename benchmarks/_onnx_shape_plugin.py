"""pytest plugin for ``benchmarks/onnx_shape_tests.py``: ONNX's shape-inference
unit tests with smtshape doing the inference.

Loaded with ``-p _onnx_shape_plugin`` (this folder on ``PYTHONPATH``) and driven
by environment variables:

``ONNX_SHAPE_TESTS_RECORDS``  JSON-lines file; one record per test (and one
                              ``env`` record first) is appended to it
``ONNX_SHAPE_TESTS_MODE``     ``smtshape`` (default): substitute smtshape;
                              ``baseline``: change nothing, record outcomes only
``ONNX_SHAPE_TESTS_SHARD``    ``i/n``: run only every n-th collected test, from the i-th
``ONNX_SHAPE_TESTS_TIMEOUT``  seconds per smtshape analysis (default 60) and per
                              runtime check (default 20), as ``analysis,runtime``

In ``smtshape`` mode:

* ``onnx.shape_inference.infer_shapes`` is replaced by :func:`substitute_infer_shapes`.
  It runs ONNX's real inference on a copy (to record ONNX's verdict), rewrites
  another copy for smtshape (each ``_make_graph`` seed ``Reshape(SEED_x,
  UNKNOWN_SHAPE_x) -> x`` becomes a graph input ``x`` of the declared type), runs
  ``smtshape.analyze(policy="refine")`` and returns the ORIGINAL model annotated
  with smtshape's types, or raises (conflict, crash).
* ``TestShapeInferenceHelper._assert_inferred`` / ``_compare_value_infos`` are
  replaced by grading versions: every compared elem type / rank / dim is
  classified (equal, more resolved, less resolved, wrong) and recorded; they
  raise ``AssertionError`` only for wrong or less-resolved answers.  A claim of
  smtshape that differs from ONNX's expectation is checked at once by running the
  model (:func:`runtime_check`: onnxruntime, and onnx's reference evaluator on small
  inputs or as a fallback); a "wrong" dim the runtime confirms is not raised.  A
  conflict ONNX does not share is run too (:func:`conflict_check`).

smtshape is used through ``analyze``, ``Result.shape`` / ``dtype`` / ``dim_of`` /
``evaluate`` and ``Dim``; sequence and optional values are read from the internal
``Result._lookup(name)[1].seq`` (there is no public API for them).

The grade of each test is computed by the driver from the records.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback

import pytest

RECORDS_ENV = "ONNX_SHAPE_TESTS_RECORDS"
MODE_ENV = "ONNX_SHAPE_TESTS_MODE"
SHARD_ENV = "ONNX_SHAPE_TESTS_SHARD"
TIMEOUT_ENV = "ONNX_SHAPE_TESTS_TIMEOUT"
GRADE_PREFIX = "smtshape-grade:"       # the message of the grading comparator's AssertionErrors

# values bound to the input dim symbols in the runtime check: two bindings, each
# giving distinct symbols distinct sizes
BINDINGS = ((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37), (4, 6, 9, 10, 12, 14, 15, 18, 20, 21, 22, 24))
MAX_RUNTIME_ELEMENTS = 1 << 25        # inputs larger than this (33.5M elements) are not run
MAX_REFERENCE_ELEMENTS = 20_000       # onnx.reference cross-checks onnxruntime up to this input size


def one_line(e: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters)."""
    s = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {s}"[:300]


def _timeouts() -> tuple:
    parts = (os.environ.get(TIMEOUT_ENV) or "60,20").split(",")
    return float(parts[0]), float(parts[1] if len(parts) > 1 else 20)


# ------------------------------------------------------------------ per-test state

class Record:
    """What one test did: its infer_shapes calls, compared differences, outcome."""

    def __init__(self, nodeid: str):
        self.id = nodeid.split("::", 1)[1] if "::" in nodeid else nodeid
        self.calls: list = []        # Call, in order
        self.diffs: list = []        # dicts (see Diff.to_json)
        self.compared = 0            # aspects compared (elem types, ranks, dims)
        self.outcome = None          # passed | failed | skipped | xfailed | xpassed
        self.failure = ""            # the failing exception, one line
        self.failure_kind = ""       # grading | raises | other

    def to_json(self) -> dict:
        ops = sorted({op for c in self.calls for op in c.ops})
        return {"kind": "test", "id": self.id, "outcome": self.outcome, "failure": self.failure,
                "failure_kind": self.failure_kind, "ops": ops, "compared": self.compared,
                "calls": [c.to_json() for c in self.calls], "diffs": self.diffs}


_CURRENT: list = [None]      # the running test's Record


def current() -> Record:
    """The running test's record (a throwaway one outside tests)."""
    if _CURRENT[0] is None:
        _CURRENT[0] = Record("(outside a test)")
    return _CURRENT[0]


# ------------------------------------------------------------------ the model for smtshape

def seed_reshapes(graph) -> dict:
    """``{x: node}`` for every ``Reshape(SEED_x, UNKNOWN_SHAPE_x) -> x`` of the test
    helper ``_make_graph`` whose two inputs are graph inputs."""
    inputs = {vi.name for vi in graph.input}
    out = {}
    for n in graph.node:
        if n.op_type != "Reshape" or n.domain not in ("", "ai.onnx") or len(n.input) != 2 or len(n.output) != 1:
            continue
        x = n.output[0]
        if list(n.input) == ["SEED_" + x, "UNKNOWN_SHAPE_" + x] and set(n.input) <= inputs:
            out[x] = n
    return out


def _graphs(graph):
    """``graph`` and every subgraph in it, depth first."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for n in g.node:
            for a in n.attribute:
                stack.extend(([a.g] if a.HasField("g") else []) + list(a.graphs))


def _used_names(graph) -> set:
    """Names read by the graph's nodes (subgraphs included) or listed as graph outputs."""
    return {name for g in _graphs(graph) for name in [*(o.name for o in g.output),
                                                      *(i for n in g.node for i in n.input)]}


def rewrite_for_smtshape(model):
    """A copy of ``model`` whose seed values are graph inputs of their declared types
    (see :func:`seed_reshapes`); the seed Reshapes, their value_info and their unused
    SEED_ / UNKNOWN_SHAPE_ inputs are dropped."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    seeds = seed_reshapes(g)
    if not seeds:
        return m
    declared = {vi.name: vi for vi in g.value_info if vi.name in seeds}
    keep_nodes = [n for n in g.node if n.output[:1] == [] or n.output[0] not in seeds or seeds[n.output[0]] != n]
    del g.node[:]
    g.node.extend(keep_nodes)
    used = _used_names(g)
    new_inputs = []
    for vi in g.input:
        x = vi.name[len("SEED_"):] if vi.name.startswith("SEED_") else None
        if x in seeds:
            new_inputs.append(_seed_input(x, declared.get(x)))
        if vi.name in used or not _is_seed_input(vi.name, seeds):
            new_inputs.append(vi)
    del g.input[:]
    g.input.extend(new_inputs)
    kept_vi = [vi for vi in g.value_info if vi.name not in seeds]
    del g.value_info[:]
    g.value_info.extend(kept_vi)
    return m


def _is_seed_input(name: str, seeds: dict) -> bool:
    return any(name in ("SEED_" + x, "UNKNOWN_SHAPE_" + x) for x in seeds)


def _seed_input(name: str, declared):
    """The graph input standing for seed ``name``: its declared type (an untyped seed:
    a tensor of undefined element type and unknown rank)."""
    import onnx
    vi = onnx.ValueInfoProto()
    vi.name = name
    if declared is not None and declared.HasField("type") and declared.type.WhichOneof("value"):
        vi.type.CopyFrom(declared.type)
    else:
        vi.type.tensor_type.elem_type = onnx.TensorProto.UNDEFINED
    return vi


def op_types(graph) -> set:
    """Op types of every node (subgraphs included), ``domain::Op`` outside the default domain."""
    return {n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"
            for g in _graphs(graph) for n in g.node}


# ------------------------------------------------------------------ smtshape's answer as protos

def _dim_proto(dim, d, labels: dict) -> None:
    """Fill TensorShapeProto.Dimension ``dim`` from smtshape's Dim ``d`` (EXACT int: value;
    EXACT expression: its printed form as dim_param, or the input's own dim_param when
    ``d`` is the symbol smtshape generated for it (``labels``); otherwise nothing)."""
    import smtshape
    if d is None or d.exactness is not smtshape.Exactness.EXACT:
        return
    if isinstance(d.expr, int):
        dim.dim_value = d.expr
    else:
        dim.dim_param = labels.get(str(d), str(d))


def input_labels(result, model) -> dict:
    """{generated symbol name: dim_param} for graph-input dims whose dim_param is not a
    plain name (``"Batch Size"``): smtshape names such a dim ``x_d0``, and writes the
    input's own label back where a dim is exactly that symbol."""
    out, seen = {}, {}
    for vi in model.graph.input:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            continue
        try:
            dims = result.shape(vi.name)
        except KeyError:
            continue
        for d, label in zip(dims or (), (x.dim_param for x in tt.shape.dim)):
            if label and getattr(d.expr, "is_Symbol", False) and str(d) != label:
                seen.setdefault(str(d), set()).add(label)
    for name, ls in seen.items():
        if len(ls) == 1:
            out[name] = ls.pop()
    return out


def _tensor_type(tt, dtype, dims, labels) -> bool:
    """Fill TypeProto.Tensor ``tt``; False when the element type is unknown."""
    if dtype is None or int(dtype) == 0:
        return False
    tt.elem_type = int(dtype)
    if dims is not None:
        tt.shape.SetInParent()
        for d in dims:
            _dim_proto(tt.shape.dim.add(), d, labels)
    return True


def _info_type(result, tp, info, labels) -> bool:
    """Fill TypeProto ``tp`` from a smtshape TensorInfo (tensor, sequence or optional);
    False when smtshape does not know the (element) type.  Sequences and optionals
    are read from ``TensorInfo.seq``, an internal of smtshape (no public API for them)."""
    seq = getattr(info, "seq", None)
    if seq is None:
        dims = None if info.shape is None else [result.dim_of(e) for e in info.shape]
        return _tensor_type(tp.tensor_type, info.dtype, dims, labels)
    if seq.optional:
        content = seq.elems[0] if seq.elems else None
        return content is not None and _info_type(result, tp.optional_type.elem_type, content, labels)
    dims = None if seq.elem_shape is None else [None if e is None else result.dim_of(e) for e in seq.elem_shape]
    return _tensor_type(tp.sequence_type.elem_type.tensor_type, seq.elem_dtype, dims, labels)


def smtshape_type(result, name: str, labels: dict | None = None):
    """smtshape's type of value ``name`` as a TypeProto, or None when it does not know
    the element type.  Tensors use the public ``Result.shape`` / ``Result.dtype``."""
    import onnx
    labels = labels or {}
    try:
        dtype = result.dtype(name)
    except KeyError:
        return None
    tp = onnx.TypeProto()
    if dtype is not None:
        return tp if _tensor_type(tp.tensor_type, dtype, result.shape(name), labels) else None
    info = result._lookup(name)[1]          # internal: sequence / optional values
    return tp if _info_type(result, tp, info, labels) else None


def annotate(original, result, labels: dict):
    """A copy of ``original`` carrying smtshape's types, the way ONNX's inference writes
    them: every value a main-graph node produces (the test's seed Reshapes excepted:
    their declared types stay) and smtshape types gets a value_info (replacing the
    original's, in place) or, for a graph output, its type in place; value_info of
    values smtshape does not type is kept (untyped entries are dropped: the checker
    rejects them)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(original)
    g = m.graph
    seeds = seed_reshapes(g)
    inits = {t.name for t in g.initializer}
    inputs = {vi.name for vi in g.input}
    outputs = {vi.name: vi for vi in g.output}
    existing = {vi.name: vi for vi in g.value_info}
    for n in g.node:
        for name in n.output:
            if not name or name in seeds or name in inits or name in inputs:
                continue
            tp = smtshape_type(result, name, labels)
            if tp is None:
                continue
            if name in outputs:
                outputs[name].type.CopyFrom(tp)
            elif name in existing:
                existing[name].type.CopyFrom(tp)
            else:
                vi = g.value_info.add()
                vi.name = name
                vi.type.CopyFrom(tp)
                existing[name] = vi
    untyped = [vi for vi in g.value_info if not vi.type.WhichOneof("value")]
    for vi in untyped:          # "no information" (ONNX's inference would have typed it)
        g.value_info.remove(vi)
    return m


# ------------------------------------------------------------------ the substitute

class Call:
    """One call of the substituted ``infer_shapes``."""

    def __init__(self, index: int, strict: bool, data_prop: bool):
        self.index = index
        self.strict = strict
        self.data_prop = data_prop
        self.ops: set = set()
        self.onnx_error = None            # (class name, text): ONNX raised, called as the caller asked
        self.onnx_strict_error = None     # (class name, text): ONNX raised with strict_mode=True
        self.onnx_typecheck_error = None  # (class name, text): ONNX raised with check_type=True too (asked
                                          # only when smtshape conflicts and the strict call passed)
        self.onnx_model = None            # ONNX's inferred model (strict call), when it answered
        self.smtshape = "ok"              # ok | conflict | crash | timeout
        self.smtshape_text = ""
        self.smtshape_ms = None
        self.raised = ""                  # what the substitute raised ("" when it returned a model)
        self.rewritten = None             # the model smtshape analyzed
        self.result = None                # smtshape's Result
        self.runtime = {}                 # a conflict ONNX does not share: {runtime: runs | fails: why}
        self.unranked = []                # graph outputs smtshape typed without a rank

    def to_json(self) -> dict:
        err = lambda e: None if e is None else {"type": e[0], "text": e[1]}  # noqa: E731
        return {"index": self.index, "strict": self.strict, "data_prop": self.data_prop,
                "ops": sorted(self.ops), "onnx_error": err(self.onnx_error),
                "onnx_strict_error": err(self.onnx_strict_error),
                "onnx_typecheck_error": err(self.onnx_typecheck_error), "smtshape": self.smtshape,
                "smtshape_text": self.smtshape_text, "smtshape_ms": self.smtshape_ms, "raised": self.raised,
                "runtime": self.runtime, "unranked_outputs": self.unranked}


_REAL: dict = {}
_BUSY: list = []      # non-empty while smtshape runs: a nested infer_shapes call goes to ONNX


def _real_infer(model, check_type, strict_mode, data_prop):
    """ONNX's own inference on a copy: (inferred model, None) or (None, exception)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    try:
        return _REAL["infer_shapes"](m, check_type=check_type, strict_mode=strict_mode, data_prop=data_prop), None
    except Exception as e:  # noqa: BLE001 - ONNX's verdict, recorded
        return None, e


class AnalysisTimeout(BaseException):
    """smtshape ran past its time (a BaseException: no ``except Exception`` inside catches it)."""


def _on_alarm(_sig, _frame):
    raise AnalysisTimeout()


def run_smtshape(call: Call, model):
    """smtshape on the rewritten model; fills ``call`` (status, text, time, result)."""
    import smtshape
    call.rewritten = rewrite_for_smtshape(model)
    call.ops = op_types(call.rewritten.graph)
    limit = _timeouts()[0]
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    try:
        r = smtshape.analyze(call.rewritten, policy="refine")
        conflicts = r.conflicts
        if conflicts:
            call.smtshape = "conflict"
            call.smtshape_text = " | ".join(c.explain().replace("\n", " ") for c in conflicts)[:1000]
        call.result = r
    except AnalysisTimeout:
        call.smtshape, call.smtshape_text = "timeout", f"no answer within {limit:g} s"
    except Exception as e:  # noqa: BLE001 - a crash of smtshape (BadInput included): recorded
        call.smtshape = "crash"
        call.smtshape_text = one_line(e) + " @ " + _where(e)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        call.smtshape_ms = round((time.perf_counter() - t0) * 1000, 1)


def _where(e: BaseException) -> str:
    """Where an exception was raised, ``file:line``: the innermost frame in smtshape
    (else the innermost one)."""
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return "?"
    mine = [f for f in tb if f"{os.sep}smtshape{os.sep}" in f.filename]
    f = (mine or tb)[-1]
    return f"{os.path.basename(f.filename)}:{f.lineno}"


def substitute_infer_shapes(model, check_type=False, strict_mode=False, data_prop=False):
    """``onnx.shape_inference.infer_shapes`` answered by smtshape (see the module doc).

    Raises: when ONNX (called as the caller asked) and smtshape both reject the model,
    an exception of ONNX's class carrying both texts (smtshape's first), so a test's
    ``pytest.raises(..., match=...)`` on ONNX's wording lets the test go on; when only
    smtshape rejects it in a strict call, ``InferenceError`` with smtshape's text."""
    import onnx
    if isinstance(model, bytes):
        model = onnx.load_from_string(model)
    if not isinstance(model, onnx.ModelProto) or _BUSY:
        return _REAL["infer_shapes"](model, check_type, strict_mode, data_prop)
    rec = current()
    call = Call(len(rec.calls), bool(strict_mode), bool(data_prop))
    rec.calls.append(call)
    call.onnx_model, strict_err = _real_infer(model, check_type, True, data_prop)
    call.onnx_strict_error = None if strict_err is None else (type(strict_err).__name__, one_line(strict_err))
    caller_err = strict_err if strict_mode else _real_infer(model, check_type, False, data_prop)[1]
    call.onnx_error = None if caller_err is None else (type(caller_err).__name__, one_line(caller_err))
    _BUSY.append(call)
    try:
        run_smtshape(call, model)
    finally:
        _BUSY.pop()
    rejected = call.smtshape != "ok"
    if call.smtshape == "conflict" and strict_err is None:
        # ONNX's inference checks element types against the schemas only with check_type=True
        # (off by default, and in this test file): does ONNX itself reject the model then?
        typecheck_err = _real_infer(model, True, True, data_prop)[1]
        call.onnx_typecheck_error = None if typecheck_err is None else \
            (type(typecheck_err).__name__, one_line(typecheck_err))
        conflict_check(call)
    if rejected and caller_err is not None:
        call.raised = type(caller_err).__name__
        raise _like(caller_err, f"smtshape {call.smtshape}: {call.smtshape_text}\n(onnx: {caller_err})")
    if rejected and strict_mode:
        call.raised = "InferenceError"
        raise onnx.shape_inference.InferenceError(f"smtshape {call.smtshape}: {call.smtshape_text}")
    if call.result is None:
        out = onnx.ModelProto()
        out.CopyFrom(model)
        return out
    out = annotate(model, call.result, input_labels(call.result, call.rewritten))
    call.unranked = [o.name for o in out.graph.output
                     if o.type.HasField("tensor_type") and not o.type.tensor_type.HasField("shape")]
    return out


def _like(err: BaseException, text: str) -> BaseException:
    """An exception of ``err``'s class with message ``text`` (InferenceError when that
    class cannot be built from one string)."""
    import onnx
    try:
        return type(err)(text)
    except Exception:  # noqa: BLE001
        return onnx.shape_inference.InferenceError(text)


# ------------------------------------------------------------------ grading comparator

class Diff:
    """One compared aspect where smtshape's answer differs from the test's expectation.

    kind: more | less | wrong; aspect: value_info | type | elem_type | shape | rank | dim."""

    def __init__(self, value, aspect, kind, expected, ours, axis=None):
        self.value, self.aspect, self.kind = value, aspect, kind
        self.expected, self.ours, self.axis = expected, ours, axis
        self.runtime = None               # the runtime check's verdict, a dict
        self.declared = False             # the input model itself declares this value's type

    @property
    def claims_dims(self) -> bool:
        """Does smtshape make a checkable claim here (a dim, a rank, a shape, an elem type)?"""
        return self.aspect in ("dim", "rank", "shape", "elem_type", "value_info") and \
            self.ours not in ("", "?", "(none)")

    @property
    def effective(self) -> str:
        """The kind after the runtime check: a claim the runtime confirms is right; one it
        contradicts is wrong.  ``split``: the runtimes disagree with each other, smtshape's
        bound holds each one's size and ONNX's expectation is not onnxruntime's (the issue's
        rule: onnxruntime's size is the truth): right too."""
        v = (self.runtime or {}).get("verdict")
        if v in ("smtshape", "split"):
            return "right"
        if v in ("onnx", "neither"):
            return "wrong"
        return self.kind

    def to_json(self, call_index) -> dict:
        return {"call": call_index, "value": self.value, "aspect": self.aspect, "axis": self.axis,
                "kind": self.kind, "effective": self.effective, "expected": self.expected,
                "smtshape": self.ours, "runtime": self.runtime, "declared": self.declared}


def _dim_text(d) -> str:
    if d.HasField("dim_value"):
        return str(d.dim_value)
    return d.dim_param if d.dim_param else "?"


def _dim_kind(exp, got) -> str | None:
    """Classify one dim: None (equal), more, less or wrong."""
    e, g = _dim_text(exp), _dim_text(got)
    if e == g:
        return None
    if exp.HasField("dim_value"):
        return "wrong" if got.HasField("dim_value") else "less"
    if exp.dim_param:
        return "less" if g == "?" else "more"
    return "more"


def _shape_text(tt) -> str:
    if not tt.HasField("shape"):
        return "?"
    return "[" + ", ".join(_dim_text(d) for d in tt.shape.dim) + "]"


def compare_types(exp, got, value: str, rec: Record) -> list:
    """Diffs of smtshape's TypeProto ``got`` against the expected ``exp`` (every aspect
    compared is counted in ``rec.compared``)."""
    which_e, which_g = exp.WhichOneof("value"), got.WhichOneof("value")
    if which_e is None:
        rec.compared += 1
        return [] if which_g is None else [Diff(value, "type", "more", "(none)", _type_text(got))]
    if which_g != which_e:
        rec.compared += 1
        kind = "less" if which_g is None else "wrong"
        return [Diff(value, "type", kind, _type_text(exp), _type_text(got))]
    if which_e == "sequence_type":
        return compare_types(exp.sequence_type.elem_type, got.sequence_type.elem_type, value + "[elem]", rec)
    if which_e == "optional_type":
        return compare_types(exp.optional_type.elem_type, got.optional_type.elem_type, value + "[value]", rec)
    if which_e == "map_type":
        rec.compared += 1
        if exp.map_type.key_type != got.map_type.key_type:
            return [Diff(value, "type", "wrong", _type_text(exp), _type_text(got))]
        return compare_types(exp.map_type.value_type, got.map_type.value_type, value + "[value]", rec)
    if which_e != "tensor_type" and which_e != "sparse_tensor_type":
        rec.compared += 1
        return [] if exp == got else [Diff(value, "type", "wrong", _type_text(exp), _type_text(got))]
    return _compare_tensor(getattr(exp, which_e), getattr(got, which_e), value, rec)


def _compare_tensor(et, gt, value, rec) -> list:
    out = []
    rec.compared += 1
    if et.elem_type != gt.elem_type:
        kind = "less" if gt.elem_type == 0 else ("more" if et.elem_type == 0 else "wrong")
        out.append(Diff(value, "elem_type", kind, str(et.elem_type), str(gt.elem_type)))
    rec.compared += 1
    if et.HasField("shape") != gt.HasField("shape"):
        kind = "more" if gt.HasField("shape") else "less"
        out.append(Diff(value, "shape", kind, _shape_text(et), _shape_text(gt)))
        return out
    if not et.HasField("shape"):
        return out
    if len(et.shape.dim) != len(gt.shape.dim):
        out.append(Diff(value, "rank", "wrong", _shape_text(et), _shape_text(gt)))
        return out
    for axis, (e, g) in enumerate(zip(et.shape.dim, gt.shape.dim)):
        rec.compared += 1
        kind = _dim_kind(e, g)
        if kind is not None:
            out.append(Diff(value, "dim", kind, _dim_text(e), _dim_text(g), axis))
    return out


def _type_text(tp) -> str:
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        tt = getattr(tp, which)
        return f"{which[:-5]}({tt.elem_type}){_shape_text(tt)}"
    if which == "sequence_type":
        return f"seq({_type_text(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({_type_text(tp.optional_type.elem_type)})"
    return which or "(none)"


def settle(diffs: list, rec: Record, call) -> None:
    """Runtime-check the diffs with a claim, record them all, and raise AssertionError
    when one is (still) wrong or less resolved."""
    checkable = [d for d in diffs if (d.claims_dims and (d.kind in ("wrong", "more") or d.aspect == "dim"))
                 or (d.kind == "less" and d.aspect == "dim" and _bounded(call, d))]
    if checkable and call is not None and call.result is not None:
        runtime_check(call, checkable)
    idx = None if call is None else call.index
    rec.diffs.extend(d.to_json(idx) for d in diffs)
    bad = [d for d in diffs if d.effective in ("wrong", "less")]
    if bad:
        raise AssertionError(GRADE_PREFIX + " " + "; ".join(
            f"{d.value}{'' if d.axis is None else f'[{d.axis}]'} {d.aspect}: expected {d.expected}, "
            f"smtshape {d.ours} ({d.effective})" for d in bad[:6]))


def graded_compare_value_infos(self, vi_type, inferred_vi_type) -> None:
    """Replacement of ``TestShapeInferenceHelper._compare_value_infos`` (expected, inferred)."""
    rec = current()
    settle(compare_types(vi_type, inferred_vi_type, "(compared type)", rec), rec,
           rec.calls[-1] if rec.calls else None)


def graded_assert_inferred(self, graph_or_model, inferred_value_infos, **kwargs) -> None:
    """Replacement of ``TestShapeInferenceHelper._assert_inferred``: the expected value
    infos are gathered as the helper of onnx HEAD gathers them (the input model's
    value_info and outputs, overridden by ``inferred_value_infos``); the inferred ones
    from the returned model's value_info and outputs (first record per name); every
    name on either side is graded, then the differences are settled at once."""
    graph = graph_or_model if not hasattr(graph_or_model, "graph") else graph_or_model.graph
    names = {x.name for x in inferred_value_infos}
    declared = {x.name for x in [*graph.value_info, *graph.output] if x.type.WhichOneof("value")}
    declared -= set(seed_reshapes(graph))
    expected = {}
    for x in [*graph.value_info, *graph.output]:
        if x.name not in names:
            expected.setdefault(x.name, x)
    expected.update({x.name: x for x in inferred_value_infos})
    inferred_model = self._inferred(graph_or_model, **kwargs)
    inferred = {}
    for x in [*inferred_model.graph.value_info, *inferred_model.graph.output]:
        inferred.setdefault(x.name, x)
    rec = current()
    diffs = []
    for name in list(expected) + [n for n in inferred if n not in expected]:
        if name not in inferred:
            rec.compared += 1
            diffs.append(Diff(name, "value_info", "less", _type_text(expected[name].type), "(none)"))
        elif name not in expected:
            rec.compared += 1
            diffs.append(Diff(name, "value_info", "more", "(none)", _type_text(inferred[name].type)))
        else:
            diffs.extend(compare_types(expected[name].type, inferred[name].type, name, rec))
    for d in diffs:
        d.declared = _base_name(d.value) in declared
    settle(diffs, rec, rec.calls[-1] if rec.calls else None)


# ------------------------------------------------------------------ runtime check

def runtime_check(call: Call, diffs: list) -> None:
    """Set ``d.runtime`` for each diff: run the rewritten model at two bindings of the
    input dims (onnxruntime, and onnx's reference evaluator on the same inputs) and
    compare each disputed value's runtime shape (and element type) with smtshape's
    claim and ONNX's expectation.  Verdicts: ``smtshape`` (the runtime agrees with
    smtshape), ``onnx`` (with ONNX's expectation, not smtshape's), ``neither``, or
    ``not checkable`` (with the reason; also when the two runtimes disagree)."""
    names = sorted({_base_name(d.value) for d in diffs})
    runs, why = _runtime_runs(call, names, _smtshape_binding)
    runs = runs or ("; ".join(dict.fromkeys(why)) or "nothing ran")[:600]
    for d in diffs:
        d.runtime = _verdict(d, runs, call)


def conflict_check(call: Call) -> None:
    """For a conflict ONNX's inference does not share: does the model run?  Sets
    ``call.runtime`` to ``{runtime: "runs" | "fails: why"}`` ("setup" when the model
    could not be prepared; every node output ONNX typed is fetched, the input dims
    bound from the declared types)."""
    names = [o for n in call.rewritten.graph.node for o in n.output if o and _onnx_type(call, o) is not None]
    runs, why = _runtime_runs(call, names, _declared_binding, all_needed=False)
    ran = {rt for _, _, outs in runs for rt in outs}
    call.runtime = {rt: "runs" for rt in sorted(ran)}
    for w in why:
        label, _, text = w.partition(": ")
        label = label if label in dict(RUNTIMES) else "setup"
        if label not in ran:
            call.runtime.setdefault(label, "fails: " + (text if label != "setup" else w)[:300])


def _in_thread(fn):
    """``fn()`` in a daemon thread for at most the runtime timeout: its value, or raises
    what it raised, or TimeoutError."""
    limit = _timeouts()[1]
    box: dict = {}

    def target():
        try:
            box["out"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["err"] = e
    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(limit)
    if "err" in box:
        raise box["err"]
    if "out" not in box:
        raise TimeoutError(f"no answer within {limit:g} s")
    return box["out"]


def _base_name(value: str) -> str:
    """The graph value a diff is about (``x[elem]`` / ``x[value]`` are parts of ``x``)."""
    return value.split("[", 1)[0]


def _runtime_runs(call: Call, names: list, binder, all_needed: bool = True) -> tuple:
    """([(env, {dim_param: size}, {runtime: {value: (is a sequence, shapes, elem type)}})],
    one per binding that ran somewhere; [why something did not run])."""
    try:
        model = _runtime_model(call, names, all_needed)
    except ValueError as e:
        return [], [str(e)]
    runs, why, seen = [], [], []
    for values in BINDINGS:
        try:
            env, shapes, params = binder(call, values)
            feeds = _feeds(call.rewritten, shapes)
        except ValueError as e:
            why.append(str(e))
            continue
        if shapes in seen:
            continue            # no input dim to bind: one run is enough
        seen.append(shapes)
        outs = {}
        small = sum(a.size for a in feeds.values()) <= MAX_REFERENCE_ELEMENTS
        for label, run in RUNTIMES:
            if label == "onnx.reference" and outs and not small:
                continue        # pure Python: only a cross-check on small inputs, or a fallback
            try:
                outs[label] = _in_thread(lambda: run(model, feeds, names))
            except Exception as e:  # noqa: BLE001 - this runtime cannot run the model
                why.append(f"{label}: {one_line(e)}")
        if outs:
            runs.append((env, params, outs))
    return runs, why


def _onnx_type(call: Call, name: str):
    """The type ONNX's inference gave ``name`` (None when it gave none)."""
    if call.onnx_model is None:
        return None
    for vi in [*call.onnx_model.graph.value_info, *call.onnx_model.graph.output]:
        if vi.name == name and vi.type.WhichOneof("value"):
            return vi.type
    return None


def _shapeless(tp):
    """A copy of TypeProto ``tp`` with every shape cleared."""
    import onnx
    out = onnx.TypeProto()
    out.CopyFrom(tp)
    cur = out
    while True:
        which = cur.WhichOneof("value")
        if which == "tensor_type":
            cur.tensor_type.ClearField("shape")
            return out
        if which == "sequence_type":
            cur = cur.sequence_type.elem_type
        elif which == "optional_type":
            cur = cur.optional_type.elem_type
        else:
            return out


def _runtime_model(call: Call, names: list, all_needed: bool):
    """The rewritten model with value_info dropped, output shapes cleared and each of
    ``names`` a graph output, typed by smtshape, else by ONNX's inference (serialized).
    ValueError when a name has no type (``all_needed``) or none is left."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(call.rewritten)
    g = m.graph
    del g.value_info[:]
    keep = []
    for o in g.output:
        o.type.CopyFrom(_shapeless(o.type))
        keep.append(o.name)
    for name in names:
        if name in keep:
            continue
        tp = (smtshape_type(call.result, name) if call.result is not None else None) or _onnx_type(call, name)
        if tp is None:
            if all_needed:
                raise ValueError(f"no type for '{name}'")
            continue
        vi = g.output.add()
        vi.name = name
        vi.type.CopyFrom(_shapeless(tp))
        keep.append(name)
    if not keep:
        raise ValueError("no value to fetch")
    return m.SerializeToString()


def _smtshape_binding(call: Call, values) -> tuple:
    """(env {symbol: size}, {input: concrete shape}, {dim_param: size}) binding the free
    symbols of the graph inputs' solved dims to distinct ``values``, checked against
    smtshape's constraints (``Result.evaluate``); ValueError when it does not fit."""
    result, model = call.result, call.rewritten
    inputs = _fed_inputs(model)
    syms = []
    for vi in inputs:
        for d in result.shape(vi.name) or ():
            for s in sorted(getattr(d.expr, "free_symbols", ()), key=lambda s: s.name):
                if s.name not in syms:
                    syms.append(s.name)
    if len(syms) > len(values):
        raise ValueError("too many input dims")
    env = dict(zip(syms, values))
    try:
        result.evaluate(env)
    except Exception as e:  # noqa: BLE001 - BadInput: the binding violates a constraint
        raise ValueError("binding rejected: " + one_line(e)) from None
    shapes = {}
    for vi in inputs:
        dims = result.shape(vi.name)
        if dims is None:
            raise ValueError(f"input '{vi.name}' has no rank")
        shape = tuple(d.evaluate(env) for d in dims)
        if any(x is None for x in shape):
            raise ValueError(f"input '{vi.name}' has a dim the binding does not fix")
        shapes[vi.name] = shape
    return env, shapes, _dim_params(inputs, shapes)


def _declared_binding(call: Call, values) -> tuple:
    """Like :func:`_smtshape_binding` from the declared input types alone: one size per
    dim_param name, a distinct size per anonymous dim."""
    inputs = _fed_inputs(call.rewritten)
    env, shapes, it = {}, {}, iter(values)
    for vi in inputs:
        if not vi.type.tensor_type.HasField("shape"):
            raise ValueError(f"input '{vi.name}' has no rank")
        shape = []
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            key = d.dim_param or f"{vi.name}[{k}]"
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
                continue
            if key not in env:
                env[key] = next(it, None)
                if env[key] is None:
                    raise ValueError("too many input dims")
            shape.append(env[key])
        shapes[vi.name] = tuple(shape)
    return env, shapes, _dim_params(inputs, shapes)


def _fed_inputs(model) -> list:
    inits = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def _dim_params(inputs, shapes) -> dict:
    """{dim_param of an input: its size in ``shapes``}."""
    out = {}
    for vi in inputs:
        for d, size in zip(vi.type.tensor_type.shape.dim, shapes[vi.name]):
            if d.dim_param:
                out[d.dim_param] = size
    return out


def _feeds(model, shapes) -> dict:
    return {vi.name: _input_array(vi, shapes[vi.name]) for vi in _fed_inputs(model)}


def _input_array(vi, shape):
    """Random data for one graph input: small non-negative integers for integer types
    (index-like), values in [0, 1) for floats."""
    import numpy as np
    from onnx import TensorProto, helper
    if not vi.type.HasField("tensor_type"):
        raise ValueError(f"input '{vi.name}' is not a tensor")
    et = vi.type.tensor_type.elem_type
    n = int(np.prod(shape, dtype=np.float64)) if shape else 1
    if n > MAX_RUNTIME_ELEMENTS:
        raise ValueError(f"input '{vi.name}' too large to run ({n} elements)")
    rng = np.random.default_rng(len(shape) * 7919 + n)
    if et == TensorProto.STRING:
        return np.array(["a"] * n, dtype=object).reshape(shape)
    if et == TensorProto.BOOL:
        return rng.integers(0, 2, size=shape).astype(bool)
    dt = helper.tensor_dtype_to_np_dtype(et)
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 2, size=shape).astype(dt)
    return rng.random(size=shape).astype(dt)


def _run_ort(model_bytes, feeds, names) -> dict:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    fetch = [o.name for o in sess.get_outputs() if o.name in names]
    return _runtime_values(fetch, sess.run(fetch, feeds))


def _run_reference(model_bytes, feeds, names) -> dict:
    import warnings
    import onnx
    from onnx.reference import ReferenceEvaluator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ReferenceEvaluator(onnx.load_from_string(model_bytes))
        fetch = [n for n in ref.output_names if n in names]
        return _runtime_values(fetch, ref.run(fetch, feeds))


RUNTIMES = (("onnxruntime", _run_ort), ("onnx.reference", _run_reference))


def _runtime_values(names, values) -> dict:
    """{name: (is a sequence, [shapes], onnx elem type or None)}."""
    out = {}
    for name, v in zip(names, values):
        seq = isinstance(v, list)
        items = v if seq else [v]
        out[name] = (seq, [tuple(int(x) for x in getattr(a, "shape", ())) for a in items],
                     _elem_type(items[0]) if items else None)
    return out


def _elem_type(a):
    from onnx import helper
    try:
        return helper.np_dtype_to_tensor_dtype(a.dtype)
    except Exception:  # noqa: BLE001
        return None


def _onnx_at(text: str, params: dict):
    """ONNX's expected size: a number, or a dim_param naming an input dim; else None."""
    if text.lstrip("-").isdigit():
        return int(text)
    return params.get(text)


def _claimed_dims(call: Call, value: str):
    """smtshape's solved dims of a diff's value in this call (for ``x[elem]``: what holds
    for every element of sequence ``x``, None at an axis where they may differ)."""
    base = _base_name(value)
    try:
        if value == base:
            return call.result.shape(base)
        seq = call.result._lookup(base)[1].seq     # internal: sequence values
    except KeyError:
        return None
    if seq is None or seq.optional or seq.elem_shape is None or not value.endswith("[elem]"):
        return None
    return tuple(None if e is None else call.result.dim_of(e) for e in seq.elem_shape)


def _verdict(d: Diff, runs, call: Call) -> dict:
    """Compare one diff with the runtime runs."""
    if isinstance(runs, str):
        return {"verdict": "not checkable", "reason": runs}
    name = _base_name(d.value)
    ours_ok, onnx_ok, seen = True, True, []
    for env, params, outs in runs:
        got = {rt: o[name] for rt, o in outs.items() if name in o}
        if not got:
            return {"verdict": "not checkable", "reason": f"'{name}' not produced"}
        if len({(tuple(v[1]), v[2]) for v in got.values()}) > 1:
            reason = "the runtimes disagree: " + "; ".join(f"{rt} {v[1]} type {v[2]}" for rt, v in got.items())
            split = _split(d, call, env, params, got)
            if split is None:
                return {"verdict": "not checkable", "reason": reason}
            if not split:
                return {"verdict": "onnx", "reason": reason}
            seen.append({"binding": env, "runtime": {rt: list(v[1][0]) for rt, v in got.items()},
                         "by": sorted(got), "split": reason})
            continue
        seq, shapes, et = next(iter(got.values()))
        if not shapes:
            return {"verdict": "not checkable", "reason": "an empty sequence"}
        claims = [_claims(d, call, env, params, s, et) for s in shapes]
        if any(c[0] is None for c in claims):
            return {"verdict": "not checkable", "reason": f"smtshape's claim {d.ours} cannot be evaluated"}
        ours_ok &= all(c[0] for c in claims)
        onnx_ok &= all(c[1] for c in claims)
        seen.append({"binding": env, "runtime": [list(s) for s in shapes] if seq else list(shapes[0]),
                     "elem_type": et, "by": sorted(got)})
    if any("split" in s for s in seen):
        return {"verdict": "split" if ours_ok else "neither", "runs": seen}
    verdict = "smtshape" if ours_ok else ("onnx" if onnx_ok else "neither")
    return {"verdict": verdict, "runs": seen}


def _split(d: Diff, call: Call, env, params, got) -> bool | None:
    """The runtimes disagree on a dim: does smtshape's claim hold every runtime's size while
    ONNX's expectation is not onnxruntime's (True), does ONNX's expectation hold
    onnxruntime's size while smtshape's claim misses one (False), or neither (None)?"""
    if d.aspect != "dim" or "onnxruntime" not in got:
        return None
    ours, onnx_at_ort = [], None
    for rt, (seq, shapes, et) in got.items():
        if seq or not shapes:
            return None
        c = _claims(d, call, env, params, shapes[0], et)
        if c[0] is None:
            return None
        ours.append(c[0])
        if rt == "onnxruntime":
            onnx_at_ort = c[1]
    if all(ours) and not onnx_at_ort:
        return True
    if onnx_at_ort and not all(ours):
        return False
    return None


def _bounded(call, d) -> bool:
    """Is smtshape's answer for this dim an upper bound (a checkable claim too)?"""
    dims = _claimed_dims(call, d.value) if call is not None and call.result is not None else None
    x = dims[d.axis] if dims is not None and d.axis is not None and d.axis < len(dims) else None
    return x is not None and x.bound is not None and x.exactness.name == "UPPER_BOUND"


def _claims(d: Diff, call: Call, env, params, shape, et) -> tuple:
    """(does smtshape's claim hold, does ONNX's) for one runtime shape; smtshape's is None
    when its claim cannot be evaluated there."""
    if d.aspect == "elem_type":
        return int(d.ours) == et, d.expected == str(et)
    dims = _claimed_dims(call, d.value)
    if dims is None:
        return None, False
    if d.aspect == "dim":
        x = dims[d.axis] if d.axis < len(dims) else None
        if x is not None and x.exactness.name == "UPPER_BOUND" and x.bound is not None and d.axis < len(shape):
            from smtshape.expr import evaluate
            try:
                bound = evaluate(x.bound, env, dict(x.definitions))
            except Exception:  # noqa: BLE001 - a bound over run-time quantities: not checkable
                return None, False
            return bound is not None and shape[d.axis] <= bound, _onnx_at(d.expected, params) == shape[d.axis]
        ours = None if x is None else x.evaluate(env)
        if ours is None or d.axis >= len(shape):
            return None, False
        return ours == shape[d.axis], _onnx_at(d.expected, params) == shape[d.axis]
    # rank / shape / value_info: smtshape's whole shape against the runtime shape (a dim
    # smtshape leaves open holds); ONNX's expectation holds only if it is a shape of that rank
    ok = len(dims) == len(shape) and all(x is None or x.evaluate(env) in (None, s) for x, s in zip(dims, shape))
    rank = 0 if d.expected == "[]" else d.expected.count(",") + 1
    return ok, d.expected.startswith("[") and rank == len(shape)


# ------------------------------------------------------------------ pytest hooks

def _mode() -> str:
    return os.environ.get(MODE_ENV, "smtshape")


def _write(record: dict) -> None:
    path = os.environ.get(RECORDS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _install(module) -> None:
    """Patch ONNX's inference and the test helper of ``module`` (the test file)."""
    import onnx.shape_inference
    if "infer_shapes" not in _REAL:
        _REAL["infer_shapes"] = onnx.shape_inference.infer_shapes
        onnx.shape_inference.infer_shapes = substitute_infer_shapes
    helper = getattr(module, "TestShapeInferenceHelper", None)
    if helper is not None and not getattr(helper, "_smtshape_graded", False):
        helper._assert_inferred = graded_assert_inferred
        helper._compare_value_infos = graded_compare_value_infos
        helper._smtshape_graded = True


def pytest_configure(config):
    env = {"kind": "env", "mode": _mode()}
    import onnx
    env["onnx"] = onnx.__version__
    if _mode() == "smtshape":
        import onnxruntime
        import smtshape
        env.update(smtshape=os.path.dirname(os.path.abspath(smtshape.__file__)),
                   onnxruntime=onnxruntime.__version__)
    _write(env)


def pytest_collection_modifyitems(session, config, items):
    shard = os.environ.get(SHARD_ENV)
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        keep = [it for k, it in enumerate(items) if k % n == i]
        config.hook.pytest_deselected(items=[it for k, it in enumerate(items) if k % n != i])
        items[:] = keep
    if _mode() == "smtshape":
        for module in {it.module for it in items if getattr(it, "module", None) is not None}:
            _install(module)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _CURRENT[0] = Record(item.nodeid)
    yield
    rec, _CURRENT[0] = _CURRENT[0], None
    _write(rec.to_json())


def pytest_runtest_logreport(report):
    rec = _CURRENT[0]
    if rec is None:
        return
    xfail = hasattr(report, "wasxfail")
    if report.skipped:
        rec.outcome = "xfailed" if xfail else (rec.outcome or "skipped")
        if xfail:
            rec.failure = str(report.wasxfail)[:300]
        elif isinstance(report.longrepr, tuple):
            rec.failure = str(report.longrepr[2])[:300]
    elif report.failed:
        rec.outcome = "failed"
        rec.failure, rec.failure_kind = _failure_text(report)
    elif report.when == "call":
        rec.outcome = "xpassed" if xfail else "passed"


def _failure_text(report) -> tuple:
    """(one-line message, kind): grading (the comparator), raises (a pytest.raises that
    saw nothing or the wrong thing), other."""
    crash = getattr(report.longrepr, "reprcrash", None)
    msg = (crash.message if crash is not None else str(report.longrepr)).strip()
    line = msg.splitlines()[0] if msg else ""
    if GRADE_PREFIX in msg:
        kind = "grading"
    elif line.startswith("Failed: DID NOT RAISE") or "Regex pattern did not match" in msg:
        kind = "raises"
    else:
        kind = "other"
    return (f"[{report.when}] " + line)[:400], kind
