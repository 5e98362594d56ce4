"""The engine: load a model, declare input symbols, walk the graph in
topological order, call each node's rule, and collect diagnostics.

It knows nothing of any particular op (that is ``ops/``) nor of solving
(that is ``store/``); ``api.analyze`` drives it and wraps the outcome in a
``Result``.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import NamedTuple

from . import irtypes as ir
from . import registry, schemas
from .constraints import Provenance, eq, ge, violation
from .context import Context, TensorInfo, const_info  # noqa: F401  (const_info re-exported)
from .graph import read_dim_param, topo_order  # noqa: F401  (re-exported)
from .reader import Model, OtherType, node_proto, proto_module, read_model
from .errors import BadInput, Cannot, Invalid, RuleError
from .store import Store
from .cache import RuleCache
from .diagnostic import Diagnostic
from .labels import node_label, node_phrase


class Unchecked(NamedTuple):
    """A node no rule checked: the model is then not proven consistent.  ``reason`` is a
    ``Cannot`` (no rule, a case its rule cannot compute, an internal error)."""

    node: str
    op_type: str
    domain: str
    reason: Cannot
    message: str = ""
    accepted: bool = False     # an op the user accepted unchecked (``accept_unchecked``)

    def __str__(self) -> str:
        return f"'{self.node}' ({self.op_type}): {self.message or self.reason.value}"


def load_model(model):
    """Accept a path, bytes, onnx.ModelProto or onnx_ir.Model; BadInput on anything wrong.

    An onnx_ir.Model is analyzed as it is; anything else is read by ``reader``
    (lean objects over the protobuf, see reader.py)."""
    base_dir = ""
    if "onnx_ir" in sys.modules and isinstance(model, sys.modules["onnx_ir"].Model):
        return model          # (without onnx_ir imported, nobody holds one of its models)
    if isinstance(model, proto_module().ModelProto):
        proto = model
    elif isinstance(model, (bytes, bytearray)):
        proto = _parse_proto(bytes(model), "<bytes>")
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path):
            raise BadInput(f"model file not found: {path}")
        if os.path.isdir(path):
            raise BadInput(f"model path is a directory, not a file: {path}")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise BadInput(f"cannot read model file {path}: {e.strerror}") from None
        proto = _parse_proto(data, path)
        del data
        base_dir = os.path.dirname(os.path.abspath(path))   # external data: the model's folder
    else:
        raise BadInput(f"cannot analyze an object of type {type(model).__name__}; "
                       "pass a path, an onnx.ModelProto or an onnx_ir.Model")
    if not proto.HasField("graph"):
        raise BadInput("the file parsed as protobuf but holds no ONNX graph (is it an ONNX model?)")
    return read_model(proto, base_dir)


def _parse_proto(data: bytes, where: str):
    if not data:
        raise BadInput(f"{where} is empty, not an ONNX model")
    proto = proto_module().ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception:
        raise BadInput(f"{where} is not a valid ONNX model (protobuf parse failed; truncated or another format?)") from None
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.input and not proto.graph.output):
        raise BadInput(f"{where} is not an ONNX model (no graph found)")
    return proto


class Engine:
    def __init__(self, model, store: Store, rules=None, accepted_ops=(), policy: str = "refine",
                 cache: bool = True):
        self.model = model
        self.store = store
        self.rules = rules if rules is not None else registry.DEFAULT
        self.values: dict = {}
        self.diagnostics: list[Diagnostic] = []
        self.annotations: dict = {}   # value -> annotated ir.Shape (from value_info)
        self.node_index = 0
        self.node_count = 0
        self.assumptions_used: dict[str, list[str]] = {}
        self.policy = policy          # the annotation policy (annotations.py); "override" adopts them between nodes
        self.annotation_conflicts: list = []
        self.foreign_names: dict = {}
        self.foreign_syms: dict = {}
        self._warned_ops: set = set()
        self.unchecked: list[Unchecked] = []   # every node no rule checked, with the reason
        self.accepted_ops = frozenset(accepted_ops or ())   # ops accepted unchecked ("Op" or "domain::Op")
        self.input_dims: dict = {}    # (input name, axis) -> expr
        self.expression_dims: dict = {}   # (input name, axis) -> a dim_param read as an expression
        self.opaque_labels: dict = {}     # a dim_param that is neither a name nor an expression -> its symbol
        self._nonneg_stated: set = set()  # expression dim_params whose ">= 0" is stated
        self.assumption_notes = 0
        self.cache = RuleCache() if cache else None      # rule-result cache (cache.py); None: every rule runs
        self.annotation_facts: dict = {}  # constraint id -> the annotation facts it came from (annotations.py)
        self._cache_store = store     # the cache holds results derived in this store only
        self._lean = isinstance(model, Model)
        self._rule_of: dict = {}      # (domain, op type) -> (opset, rule): the same for every node
        self._positions: dict = {}    # id(onnx_ir graph) -> {id(node): its position} (``label``)
        self.positional: set = set()  # the labels of unnamed nodes (``label``: op type and position)
        self.frames: list = []        # ((domain, name, overload), {attribute: Attr}) of each function call being walked
        self.functions = {(f.domain, f.name, getattr(f, "overload", "")): f
                          for f in model.functions.values()} if model.functions else {}

    def label(self, node) -> str:
        """``labels.node_label`` of a node of the model: an onnx_ir graph's positions are
        counted once (``node_position`` looks one node up in linear time).  The label of an
        unnamed node is kept in ``positional``."""
        name = node.name
        if name:
            return name
        if self._lean:
            label = node_label(node)
        else:
            g = getattr(node, "graph", None)
            where = self._positions.get(id(g))
            if where is None:
                where = self._positions[id(g)] = {id(n): i for i, n in enumerate(g)} if g is not None else {}
            label = node_label(node, where.get(id(node)))
        self.positional.add(label)
        return label

    # ------------------------------------------------------------ values
    def info(self, v) -> TensorInfo:
        t = self.values.get(v)
        if t is None:
            t = TensorInfo(None, getattr(v, "dtype", None))
            self.values[v] = t
        return t

    def set_info(self, v, t: TensorInfo):
        self.values[v] = t

    def diagnostic(self, kind, message, node="", op_type="", severity="warning"):
        self.diagnostics.append(Diagnostic(kind, message, node, op_type, severity))

    def note_assumption(self, name: str, node: str):
        self.assumptions_used.setdefault(name, []).append(node)
        self.assumption_notes += 1

    # ------------------------------------------------------------ graph
    def opset(self, domain: str) -> int | None:
        d = "" if domain in ("", "ai.onnx") else domain
        imports = self.model.opset_imports
        if d in imports:
            return imports[d]
        if d == "" and "ai.onnx" in imports:
            return imports["ai.onnx"]
        return None

    def declare_inputs(self, graph):
        inits = graph.initializers
        for v in graph.inputs:          # user names first: generated names must never equal one
            if v.name not in inits and v.shape is not None:
                for d in v.shape:
                    label = getattr(d, "value", None)
                    if isinstance(label, str) and label:
                        read = read_dim_param(label)
                        if read[0] == "name":
                            self.store.reserved.add(read[1])
                        elif read[0] == "expr":
                            self.store.reserved.update(read[2])
        for v in graph.inputs:
            if v.name in inits:
                continue  # (an initializer listed as an input: below)
            if ir.is_container(v.type):
                from .ops.sequence import declare_input   # sequence / optional inputs
                self.values[v] = declare_input(self, v)
                continue
            if v.dtype is None and v.type.__class__ is not OtherType:
                # no element type (no type at all, or UNDEFINED): onnxruntime refuses to load
                # such a model ("Invalid tensor data type 0"), ONNX's inference too
                self.store.add(violation(f"graph input '{v.name}' has no element type",
                                         f"declare the element type of graph input '{v.name}'"),
                               Provenance(v.name, "input", "input.type", f"graph input '{v.name}' has no element "
                                          "type"))
            self.values[v] = TensorInfo(self._input_shape(v), v.dtype)
        declared = getattr(graph, "declared_inits", None) or {}
        overridable = (getattr(self.model, "ir_version", 4) or 0) >= 4
        for name, v in inits.items():
            d = declared.get(name)
            self.check_initializer(v, d)
            info = const_info(v.const_value, v.dtype)
            if d is not None and overridable:
                info = self._default_input(name, info, d)
            self.values[v] = info

    def _default_input(self, name, info, declared):
        """An initializer that is also a graph input (IR >= 4) is a default a caller may
        override (onnxruntime lets it be fed; under IR < 4 it is a constant): its shape is
        the input's declaration.  Its value is used only where the declaration pins the
        default's own shape, and then as a premise (an assumption listed in the result)."""
        shape = self._input_shape(declared) if declared.shape is not None else None
        if shape is not None and shape == info.shape:
            if info.value is not None:
                self.diagnostic("assumption", f"graph input '{name}' has a default (its initializer): the analysis "
                                f"uses the default's value; a caller that feeds '{name}' may change the shapes "
                                "that depend on it", severity="info")
            return info
        return TensorInfo(shape, declared.dtype or info.dtype)

    def check_initializer(self, v, declared=None):
        """An initializer's tensor must be well formed (``BadInput`` otherwise: onnx's
        checker refuses it), hold as many elements as its dims say, and agree with the
        graph input that declares it (IR < 4, or an overridable default): the last two are
        conflicts, as onnxruntime refuses such models."""
        t = v.const_value
        problems = []
        msg = t.check() if hasattr(t, "check") else None
        if msg:
            problems.append(("initializer.size", msg, "store as many elements as the dims say"))
        if declared is not None:
            if declared.dtype is not None and t.dtype is not None and int(declared.dtype) != int(t.dtype):
                problems.append(("initializer.declared", f"graph input '{v.name}' is declared {declared.dtype} but its "
                                 f"initializer is {t.dtype}", "declare the input with the initializer's type"))
            ds = declared.shape
            if ds is not None and (len(ds) != len(t.shape) or any(
                    isinstance(a, int) and a != b for a, b in zip(ds, t.shape))):
                shown = "[" + ", ".join(str(a) if isinstance(a, int) else (a.value or "?") for a in ds) + "]"
                problems.append(("initializer.declared", f"graph input '{v.name}' is declared {shown} but its "
                                 f"initializer has shape {list(t.shape)}",
                                 "declare the input with the initializer's shape"))
        for rule, msg, fix in problems:
            self.store.add(violation(msg, fix), Provenance(v.name, "initializer", rule, msg))

    def _not_analyzed(self, v, node=None):
        """A value of a type smtshape does not analyze (a map, a sequence of maps): UNKNOWN,
        and named in a diagnostic."""
        label = self.label(node) if node is not None else ""
        where = f"output of {node_phrase(node.op_type, label)}" if node is not None else "graph input"
        self.diagnostic("warning", f"value '{v.name}' ({where}) has type {v.type.text}, which smtshape does not "
                        "analyze: its shape is UNKNOWN", label,
                        node.op_type if node is not None else "", "info")

    def _input_shape(self, v):
        if v.type.__class__ is OtherType:
            self._not_analyzed(v)
            return None
        if v.shape is None:
            self.diagnostic("warning", f"graph input '{v.name}' has no shape: its rank is unknown",
                            severity="warning")
            return None
        dims = []
        for axis, d in enumerate(v.shape):
            if isinstance(d, int):
                if d < 0:
                    raise BadInput(f"graph input '{v.name}' axis {axis} has negative size {d}")
                dims.append(d)
                continue
            label = getattr(d, "value", None)
            read = read_dim_param(label) if label else ("anonymous",)
            origin = Provenance("", "input", "input.dim",
                                f"axis {axis} of graph input '{v.name}'" + (f" (dim_param '{label}')" if label else ""))
            if read[0] == "name":
                s = self.store.declare(read[1], "input", origin)
            elif read[0] == "expr":
                s = self._dim_expression(v.name, axis, label, read[1], read[2])
            elif read[0] == "opaque" and label in self.opaque_labels:
                s = self.opaque_labels[label]          # (identical strings are one dim)
            else:
                s = self.store.declare(self.store.fresh_name(f"{v.name}_d{axis}"), "input", origin,
                                       generated=True)
                if label:
                    self.opaque_labels[label] = s
                    self.diagnostic("warning", f"graph input '{v.name}' axis {axis} has dim_param {label!r}, "
                                    f"which is neither a name nor an expression; it is the symbol '{s.name}' "
                                    "(wherever that string is written)")
            dims.append(s)
            self.input_dims[(v.name, axis)] = s
        return tuple(dims)

    def _dim_expression(self, value: str, axis: int, label: str, e, names):
        """A dim_param that reads as an expression over names (``past_sequence_length +
        sequence_length``): that expression over input symbols, each name one (declared
        here when no input has it as a plain name yet); the dim being a size, ``e >= 0``
        is a fact of the declaration (``n - 1`` says ``n >= 1``)."""
        st = self.store
        for n in names:
            st.declare(n, "input", Provenance("", "input", "input.dim",
                                              f"named in dim_param '{label}' of graph input '{value}' axis {axis}"))
        self.expression_dims[(value, axis)] = label
        if label not in self._nonneg_stated and st.interval(e)[0] < 0:
            self._nonneg_stated.add(label)
            st.add(ge(e, 0), Provenance("", "input", "input.dim",
                                        f"graph input '{value}' axis {axis} has size {label}, which is >= 0"),
                   kind="declaration")
        return e

    @contextlib.contextmanager
    def using_store(self, store):
        """Run nodes with ``store`` (a branch's fork) as the engine's store, then put the
        engine's own back (ops/control.py)."""
        saved, self.store = self.store, store
        try:
            yield
        finally:
            self.store = saved

    def walk(self, graph):
        order = topo_order(graph)
        self.node_count += len(order)
        for node in order:
            if self.policy != "skip":
                for o in node.outputs:
                    if (o.shape is not None or o.dtype is not None) and o.name and not ir.is_container(o.type):
                        self.annotations[o] = o.shape      # (None: only the element type is declared)
                    elif o.type.__class__ is OtherType:
                        self._not_analyzed(o, node)
            self.run_node(node)
            if self.policy == "override":
                from .annotations import apply_override
                apply_override(self, Context(self, node, None))
            self.node_index += 1

    def run_node(self, node):
        for v in () if self._lean else node.inputs:     # (the reader refuses dangling reads itself)
            if v is not None and v not in self.values and v.producer() is None:
                raise BadInput(f"malformed model: {node_phrase(node.op_type, self.label(node))} reads "
                               f"'{v.name}', which no node produces and which is neither a graph input "
                               "nor an initializer")
        domain = node.domain
        hit = self._rule_of.get((domain, node.op_type))
        if hit is None:
            opset = self.opset(domain)
            hit = self._rule_of[(domain, node.op_type)] = (opset, self.rules.lookup(domain, node.op_type, opset))
        opset, rule = hit
        key = None
        cache = self.cache
        if rule is not None and self._lean and cache is not None and self.store is self._cache_store:
            # (never inside a fork; onnx_ir nodes have no stored attributes to key on)
            key = cache.key(node, opset, self.store, self.values)
            if key is not None:
                e = cache.entries.get(key)
                if e is not None and e.quick:      # the hot path: a replay that only sets outputs
                    cache.hits += 1
                    values, outs = self.values, node.outputs
                    for i, t in e.outputs:
                        values[outs[i]] = t
                    return
        ctx = Context(self, node, opset)
        fold = None      # (whether to try constant folding, when already found out)
        if rule is None:
            fn = self.functions.get((domain, node.op_type, getattr(node, "overload", "")))
            if fn is not None:
                rule = _function_rule(fn)
        elif key is not None:
            e = cache.replay(ctx, e, self.values)
            if e is not None:
                if e.finished:
                    return
                rule = _replayed
            else:
                ctx.start_recording()
                st = self.store
                before = (len(st.symbols), len(st.conflicts), len(self.diagnostics), self.assumption_notes)
        try:
            if rule is _replayed:
                pass
            elif rule is not None:
                types = _schema_check(ctx, domain, opset)
                rule(ctx)
                if types is not None:
                    self._type_outputs(ctx, types)
                if ctx.recorded is not None and before == (len(st.symbols), len(st.conflicts),
                                                           len(self.diagnostics), self.assumption_notes):
                    self.cache.record(ctx, key, self.values, lambda: self._wants_fold(ctx))
            else:
                _schema_check(ctx, domain, opset)
                self._fallback(ctx)
        except Invalid:
            ctx.outputs_set.clear()       # (its conflict is recorded: the node was checked, and fails)
        except RuleError as e:
            self.mark_unchecked(ctx, e.reason, str(e))
            ctx.outputs_set.clear()
        except BadInput:
            raise
        except Exception as e:  # a bug in a rule must never crash the analysis
            self.mark_unchecked(ctx, Cannot.INTERNAL, f"internal error in the {node.op_type} rule "
                                f"({type(e).__name__}: {e})")
            ctx.outputs_set.clear()
        values = self.values
        if fold is None:
            fold = self._wants_fold(ctx)
        if fold:
            from .fold import try_fold
            try:
                try_fold(ctx)
            except Exception:  # folding is an optimisation; never fatal
                pass
        for i, o in enumerate(ctx.outputs):
            if i not in ctx.outputs_set and o.name:
                values[o] = TensorInfo(None, o.dtype)

    def _type_outputs(self, ctx: Context, types: list):
        """Give each output the element type its schema fixes, where the rule left it
        unknown (the schema's word is the element type's only source then)."""
        values = self.values
        for i, s in enumerate(types):
            if s is None or i not in ctx.outputs_set:
                continue
            o = ctx.outputs[i]
            t = values.get(o)
            if t is not None and t.dtype is None and t.seq is None:
                dt = schemas.dtype_of(s)
                if dt is not None:
                    values[o] = t.replace(dtype=dt)

    def _wants_fold(self, ctx) -> bool:
        """Could constant folding add something: every input foldable, an output not settled?"""
        get = self.values.get
        ins = ctx.inputs
        if not ins:
            return False
        for v in ins:
            if v is not None and not _foldable(get(v)):
                return False
        for o in ctx.outputs:
            if o.name and not _settled(get(o)):
                return True
        return False

    def mark_unchecked(self, ctx: Context, reason: Cannot, message: str):
        """The node ``ctx`` was not checked: listed (with a diagnostic) so that the model is
        not called consistent, unless the user accepted its op unchecked."""
        node = ctx.node
        accepted = reason is Cannot.NO_RULE and (
            node.op_type in self.accepted_ops or f"{node.domain or 'ai.onnx'}::{node.op_type}" in self.accepted_ops)
        self.unchecked.append(Unchecked(ctx.name, node.op_type, node.domain, reason, message, accepted))
        if reason is not Cannot.NO_RULE:
            self.diagnostic("rule_error", f"{message}; not checked ({reason.value}), its outputs are unknown",
                            ctx.name, node.op_type, "error" if reason is Cannot.INTERNAL else "warning")

    def _fallback(self, ctx: Context):
        node = ctx.node
        self.mark_unchecked(ctx, Cannot.NO_RULE, f"no smtshape rule for op "
                            f"'{node.domain or 'ai.onnx'}::{node.op_type}' (opset {ctx.opset})")
        if node.op_type not in self._warned_ops:
            self._warned_ops.add(node.op_type)
            self.diagnostic("no_rule", f"no smtshape rule for op '{node.domain or 'ai.onnx'}::{node.op_type}'"
                            f" (opset {ctx.opset}): its nodes are not checked; ONNX's own node inference is "
                            "used only for static dims from static inputs, other dims are UNKNOWN",
                            ctx.name, node.op_type, "warning")
        onnx_node_fallback(ctx)


def _schema_check(ctx: Context, domain: str, opset):
    """The schema's static contract of a standard op (``schemas.py``): arity, attributes,
    element types; a violation is a conflict of the node.  Returns the element type each
    output gets by the schema, or None (not a standard op)."""
    if domain not in schemas.STANDARD_DOMAINS and domain != "ai.onnx":
        return None
    sig = schemas.signature(domain, ctx.op_type, opset)
    return None if sig is None else sig.check(ctx)


def _replayed(ctx):   # marker: the node's result came from the rule-result cache
    raise AssertionError("never called")


def _foldable(t) -> bool:
    """Could constant folding read this input (a constant or a known value)?"""
    if t is None:
        return False
    if t.const is not None or t.tensor is not None:
        return True
    return t.value is not None and all(isinstance(v, (int, bool)) for v in t.value)


def _settled(t) -> bool:
    """Nothing left for constant folding to add: a constant or fully known integer value."""
    if t is None:
        return False
    if t.const is not None or t.tensor is not None:
        return True       # a constant (its array read on demand)
    return t.value is not None and t.shape is not None and all(isinstance(v, (int, bool)) for v in t.value)


def _function_rule(fn):
    """Analyze a call of a model-local function by walking its body, with the caller's
    attributes (and the function's defaults) as the values of the body's attribute
    references (``Engine.frames``, read by ``Context.attributes``)."""

    def rule(ctx: Context):
        eng = ctx.engine
        key = (fn.domain, fn.name, getattr(fn, "overload", ""))
        active = [f[0] for f in eng.frames]
        if key in active:
            chain = " -> ".join(k[1] for k in active[active.index(key):] + [key])
            raise BadInput(f"model-local function '{fn.name}' calls itself ({chain}): recursion is not "
                           "allowed in ONNX")
        if ctx.num_inputs > len(fn.inputs):
            ctx.invalid("function.arity", f"the call gives {ctx.num_inputs} inputs to function '{fn.name}', "
                        f"which takes {len(fn.inputs)}", f"call '{fn.name}' with at most {len(fn.inputs)} inputs")
        if ctx.num_outputs != len(fn.outputs):
            ctx.invalid("function.arity", f"the call names {ctx.num_outputs} outputs of function '{fn.name}', "
                        f"which has {len(fn.outputs)}", f"name all {len(fn.outputs)} outputs of '{fn.name}'")
        given = ctx.attributes
        frame = {}
        for name in fn.attributes:
            if name in given:
                frame[name] = given[name]
        for name, a in getattr(fn, "defaults", {}).items():
            frame.setdefault(name, given.get(name, a))
        for formal, i in zip(fn.inputs, range(ctx.num_inputs)):
            if ctx.has_input(i):
                eng.values[formal] = eng.info(ctx.node.inputs[i])
        eng.frames.append((key, frame))
        try:
            for n in topo_order(fn):
                eng.run_node(n)
        finally:
            eng.frames.pop()
        for i, formal in enumerate(fn.outputs):
            t = eng.values.get(formal)
            if t is not None:
                ctx.set_output(i, t.shape, t.dtype, t.value, t.const, t.tensor)

    return rule


def onnx_node_fallback(ctx: Context):
    """Ask ONNX's per-node inference for a node smtshape has no rule for.

    What it infers is a claim, not a fact: it is taken only where it can be
    justified, a static dim computed from inputs whose shapes are all static.
    With any symbolic (or unknown) input dim, the outputs keep the rank ONNX
    gives and every dim is UNKNOWN (a data symbol): ONNX's own inference writes
    wrong sizes over symbolic inputs (Attention's head size as 0, for one)."""
    import onnx
    from onnx import helper, shape_inference

    node = ctx.node
    try:
        schema = onnx.defs.get_schema(node.op_type, ctx.opset or onnx.defs.onnx_opset_version(),
                                      node.domain or "")
    except Exception:
        return
    n_in, n_out = len(node.inputs), len(node.outputs)
    if not schema.min_input <= n_in <= schema.max_input or not schema.min_output <= n_out <= schema.max_output:
        ctx.conflict("onnx.schema", f"{node.op_type}'s schema (opset {schema.since_version}) takes "
                     f"{schema.min_input} to {schema.max_input} inputs and {schema.min_output} to "
                     f"{schema.max_output} outputs; the node has {n_in} and {n_out}")
        return
    input_types = {}
    static = True
    proto = node_proto(node)
    for i, v in enumerate(node.inputs):
        if v is None:
            continue
        t = ctx.input(i)
        if t.dtype is None:
            return
        shape = ctx.shape(i)
        if shape is None or not all(isinstance(d, int) for d in shape):
            static = False
            shape = None if shape is None else [d if isinstance(d, int) else f"__smt{i}_{k}"
                                                for k, d in enumerate(shape)]
        input_types[proto.input[i]] = helper.make_tensor_type_proto(int(t.dtype), shape)
    try:
        out = shape_inference.infer_node_outputs(schema, proto, input_types)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        # ONNX's own inference of the op refuses the node: by ONNX's word it breaks the spec
        ctx.conflict("onnx.node_inference", f"ONNX's inference of {node.op_type} refuses this node: {first}")
        return
    for i, o in enumerate(node.outputs):
        tp = out.get(proto.output[i]) if i < len(proto.output) else None
        if tp is None or not tp.HasField("tensor_type"):
            continue
        tt = tp.tensor_type
        dtype = ir.DataType(tt.elem_type) if tt.elem_type else None
        if not tt.HasField("shape"):
            ctx.set_output(i, None, dtype)
            continue
        dims = []
        for d in tt.shape.dim:
            if static and d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                dims.append(ctx.unknown_dim(f"{ctx.op_type.lower()}_out"))
        ctx.set_output(i, dims, dtype)


def bind_and_assume(engine: Engine, bind: dict, assumptions: list):
    """Bindings ({input dim name: int}) and assumptions ([(text, relation)]) as constraints of
    kind ``assumption``, before any node runs.  The caller (``api.analyze``: ``normalize_bind``,
    ``_check_names``) has checked them: every name an input dim, every value an int >= 0."""
    st = engine.store
    for name, val in (bind or {}).items():
        st.add(eq(st.symbols[name].symbol, val), Provenance("", "assumption", "bind", f"{name} is bound to {val}"),
               kind="assumption")
    for text, rel in assumptions:
        st.add(rel, Provenance("", "assumption", "assume", text), kind="assumption")


def ensure_ops_loaded():
    from . import ops  # noqa: F401  (registers every rule)
