"""Drop smtshape into tools people already use.

``SymbolicShapeInference``
    A drop-in for ``onnxruntime.tools.symbolic_shape_infer.SymbolicShapeInference``:
    ``SymbolicShapeInference.infer_shapes(model, int_max=..., auto_merge=...,
    guess_output_rank=..., verbose=...)`` returns a copy of the ``ModelProto``
    with every value's inferred shape in ``graph.value_info`` (and the graph
    outputs), like onnxruntime's.

``SymbolicShapeInferenceHelper`` and :func:`use_in_onnxruntime`
    The interface onnxruntime's transformer optimizer calls
    (``infer(dynamic_axis_mapping)``, ``get_edge_shape``, ``compare_shape``,
    ``known_vi_``); ``with use_in_onnxruntime(): optimizer.optimize_model(...)``
    runs the optimizer with smtshape in place of its symbolic shape inference.

``AnnotateShapesPass``
    An ``onnx_ir`` in-place pass (``onnx_ir.passes.InPlacePass``) that writes
    the inferred shapes onto an ``ir.Model``'s values and returns a
    ``PassResult``; the full analysis is kept on ``pass_.result``.

Differences from onnxruntime's ``SymbolicShapeInference``, on purpose:

* **No silent merges.**  onnxruntime, with ``auto_merge=True``, picks one of
  two symbolic dims that a node requires to be equal and renames the other
  (``seq`` and ``seq_2`` become one) without saying so, and with
  ``auto_merge=False`` it stops.  smtshape records the equality as a
  constraint: two input dims the model forces equal are reported as a
  *specialization* (logged at INFO level, on ``result.specializations``), and a
  contradiction is a *conflict* with the nodes involved; a dim that is not
  exactly known is written without a name rather than merged.  With
  ``auto_merge=False`` a conflict raises :class:`ShapeInferenceConflict`
  (its message explains each conflict); with ``auto_merge=True`` conflicts
  are logged as warnings and the model is still annotated.
* **No guessed ranks.**  ``guess_output_rank=True`` makes onnxruntime assume
  that an op without a rule returns the rank of its first input.  smtshape
  never guesses: such outputs stay of unknown rank and the nodes are listed
  (``Result.unchecked_nodes``); the flag is accepted and logged.
* **int_max** is accepted for compatibility and not needed: Slice / Range
  bounds such as ``INT64_MAX`` are handled exactly.
* Dims known only at run time (NonZero counts, ...) are written without a
  ``dim_param`` (onnxruntime invents a name); a dim that is an expression of
  input dims is written as that expression (``2 * seq``), which
  ``smtshape.parse.parse_expr`` reads back.
* Incomplete inference (a value of unknown rank) raises like onnxruntime
  (``Exception("Incomplete symbolic shape inference")``), but writes no
  ``sym_shape_infer_temp.onnx`` file into the working folder.
"""
from __future__ import annotations

import contextlib
import logging
import sys

import onnx

from .dim import Exactness

logger = logging.getLogger("smtshape.integrations")

INT_MAX = 2**31 - 1


class ShapeInferenceConflict(Exception):
    """The model's shape constraints contradict each other (``auto_merge=False``)."""

    def __init__(self, result):
        self.result = result
        text = "\n".join(c.explain() for c in result.conflicts)
        super().__init__(f"{len(result.conflicts)} shape conflict(s); smtshape does not merge dims:\n{text}")


def _opset(model: onnx.ModelProto):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def _dim_text(d) -> str | None:
    """dim_param text for a non-static dim: the expression for EXACT dims, None otherwise."""
    from .result import _reparseable
    if d.exactness is Exactness.EXACT:
        return _reparseable(d.expr)
    return None


def _value_info(result, name):
    """A ValueInfoProto for ``name`` (None for non-tensors / unknown dtype)."""
    try:
        return result._value_info(name)
    except KeyError:
        return None


def _report(result, verbose: int, auto_merge: bool, guess_output_rank: bool):
    for s in result.specializations:
        logger.info("smtshape: the model forces %s", s)
    for c in result.conflicts:
        logger.warning("smtshape: %s", c.explain())
    if guess_output_rank and result.unchecked_nodes:
        logger.warning("smtshape: guess_output_rank is not applied (ranks are never guessed); %d node(s) "
                       "have no rule: %s", len(result.unchecked_nodes),
                       ", ".join(f"{u.node} ({u.op_type})" for u in result.unchecked_nodes[:10]))
    if verbose >= 1:
        from .report import dim_counts
        c = dim_counts(result)
        logger.info("smtshape: %d values, %d exact dims (%d static), %d upper-bound, %d unknown; consistent=%s",
                    c["values"], c["exact"], c["static"], c["upper_bound"], c["unknown"], result.consistent)
    if verbose >= 3:
        for name in result.value_names:
            logger.debug("smtshape: %s: %s", name, result.shape(name))


def _annotate(model: onnx.ModelProto, result) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    io = {v.name for v in g.input} | {v.name for v in g.output}
    inits = {t.name for t in g.initializer}
    del g.value_info[:]
    for name in result.value_names:
        if name in io or name in inits:
            continue
        vi = _value_info(result, name)
        if vi is not None:
            g.value_info.append(vi)
    for o in g.output:
        vi = _value_info(result, o.name)
        if vi is not None and vi.type.tensor_type.HasField("shape"):
            o.type.tensor_type.elem_type = vi.type.tensor_type.elem_type
            o.type.tensor_type.shape.CopyFrom(vi.type.tensor_type.shape)
    return out


class SymbolicShapeInference:
    """Drop-in for onnxruntime's ``SymbolicShapeInference`` (see the module docstring
    for the differences)."""

    def __init__(self, int_max=INT_MAX, auto_merge=False, guess_output_rank=False, verbose=0):
        self.int_max = int_max
        self.auto_merge = auto_merge
        self.guess_output_rank = guess_output_rank
        self.verbose = verbose
        self.result = None

    def _run(self, model: onnx.ModelProto, bind=None):
        from .api import analyze
        res = analyze(model, bind=bind or None)
        self.result = res
        _report(res, self.verbose, self.auto_merge, self.guess_output_rank)
        return res

    @staticmethod
    def infer_shapes(in_mp, int_max=INT_MAX, auto_merge=False, guess_output_rank=False, verbose=0):
        """``in_mp`` annotated with every value's shape (a new ModelProto); None for
        opset < 7 (as onnxruntime)."""
        opset = _opset(in_mp)
        if not opset or opset < 7:
            logger.warning("Only support models of onnx opset 7 and above.")
            return None
        ssi = SymbolicShapeInference(int_max, auto_merge, guess_output_rank, verbose)
        res = ssi._run(in_mp)
        if res.conflicts and not auto_merge:
            raise ShapeInferenceConflict(res)
        unknown = [n for n in res.value_names if res.shape(n) is None and _value_info(res, n) is not None]
        if unknown:
            raise Exception(f"Incomplete symbolic shape inference: {len(unknown)} value(s) of unknown rank, "
                            f"e.g. {', '.join(unknown[:5])}")
        return _annotate(in_mp, res)


class SymbolicShapeInferenceHelper(SymbolicShapeInference):
    """What onnxruntime's transformer optimizer uses (``shape_infer_helper``)."""

    def __init__(self, model, verbose=0, int_max=INT_MAX, auto_merge=True, guess_output_rank=False):
        super().__init__(int_max, auto_merge, guess_output_rank, verbose)
        self.model_ = model
        self.all_shapes_inferred_ = False
        self.is_inferred_ = False
        self.dynamic_axis_mapping_: dict = {}
        self.known_vi_: dict = {}

    def infer(self, dynamic_axis_mapping: dict, max_runs: int = 200) -> bool:
        """Analyze the model with the named input dims bound (names the model does
        not have are ignored, as onnxruntime does); True when every value's shape
        is known and the model has no conflict."""
        if self.is_inferred_ and self.dynamic_axis_mapping_ == dynamic_axis_mapping:
            return self.all_shapes_inferred_
        self.dynamic_axis_mapping_ = dict(dynamic_axis_mapping)
        names = set()
        for v in self.model_.graph.input:
            for d in v.type.tensor_type.shape.dim:
                if d.dim_param:
                    names.add(d.dim_param)
        bind = {k: int(v) for k, v in dynamic_axis_mapping.items() if k in names}
        res = self._run(self.model_, bind)
        self.known_vi_ = {}
        complete = True
        for name in res.value_names:
            vi = _value_info(res, name)
            if vi is None:
                continue
            if res.shape(name) is None:
                complete = False
                continue
            self.known_vi_[name] = vi
        self.all_shapes_inferred_ = complete and not res.conflicts
        self.is_inferred_ = True
        return self.all_shapes_inferred_

    def get_edge_shape(self, edge):
        """The shape of a value: ints for static dims, the expression text for
        symbolic ones, ``"?name"`` for dims known only at run time (two dims get
        the same text only when they are the same size); None when unknown."""
        res = self.result
        if res is None:
            return None
        try:
            s = res.shape(edge)
        except KeyError:
            return None
        if s is None:
            return None
        return [d.expr if d.is_static else str(d) for d in s]

    def compare_shape(self, edge, edge_other) -> bool:
        a, b = self.get_edge_shape(edge), self.get_edge_shape(edge_other)
        if a is None or b is None:
            raise Exception("At least one shape is missed for edges to compare")
        return a == b


@contextlib.contextmanager
def use_in_onnxruntime():
    """Within the block, onnxruntime's transformer tools (``optimizer.optimize_model``,
    ``OnnxModel.infer_runtime_shape``) use smtshape for symbolic shapes."""
    import onnxruntime.transformers.onnx_model  # noqa: F401  (puts shape_infer_helper on sys.path)
    import shape_infer_helper as top  # the module name onnx_model imports
    mods = {id(top): top}
    pkg = sys.modules.get("onnxruntime.transformers.shape_infer_helper")
    if pkg is not None:
        mods[id(pkg)] = pkg
    saved = [(m, m.SymbolicShapeInferenceHelper) for m in mods.values()]
    try:
        for m, _ in saved:
            m.SymbolicShapeInferenceHelper = SymbolicShapeInferenceHelper
        yield
    finally:
        for m, old in saved:
            m.SymbolicShapeInferenceHelper = old


# ------------------------------------------------------------------ onnx_ir pass

def _ir_pass_base():
    import onnx_ir.passes as P
    return P.InPlacePass


class AnnotateShapesPass(_ir_pass_base()):
    """An onnx_ir in-place pass: infer shapes with smtshape and write them onto the
    model's values (main graph and subgraphs).  EXACT dims become ints or
    ``SymbolicDim(expression)``; a dim smtshape cannot state exactly keeps the
    model's own annotation if it has one, else becomes an unnamed dim.  The
    analysis is kept on ``self.result``; with ``fail_on_conflict`` a conflict
    raises :class:`ShapeInferenceConflict` (the model is left unchanged)."""

    def __init__(self, *, assume=None, bind=None, policy: str = "refine", rules=None,
                 fail_on_conflict: bool = False):
        super().__init__()
        self.assume, self.bind, self.policy, self.rules = assume, bind, policy, rules
        self.fail_on_conflict = fail_on_conflict
        self.result = None

    def call(self, model):
        import onnx_ir as ir
        import onnx_ir.passes as P
        from .api import analyze
        res = analyze(model, assume=self.assume, bind=self.bind, policy=self.policy, rules=self.rules)
        self.result = res
        if res.conflicts and self.fail_on_conflict:
            raise ShapeInferenceConflict(res)
        modified = False
        for name in res.value_names:
            v, t = res._lookup(name)
            if t.seq is not None or isinstance(getattr(v, "type", None), (ir.SequenceType, ir.OptionalType)):
                continue
            s = res.shape(name)
            if s is None:
                continue
            old = v.shape
            dims = []
            for i, d in enumerate(s):
                if d.is_static:
                    dims.append(d.expr)
                    continue
                text = _dim_text(d)
                if text is not None:
                    dims.append(ir.SymbolicDim(text))
                elif old is not None and len(old) == len(s):
                    dims.append(old[i])
                else:
                    dims.append(ir.SymbolicDim(None))
            new = ir.Shape(dims)
            if old is None or list(old) != list(new):
                v.shape = new
                modified = True
            dt = res.dtype(name)
            if v.dtype is None and dt is not None:
                v.dtype = dt
                modified = True
        return P.PassResult(model, modified)
