"""What a rule sees: the inference context of one node.

A rule reads its inputs (``shape``, ``rank``, ``dtype``, ``value``,
``const``), its attributes (``attr``, ``require_attr``), sets its outputs
(``set_output``), makes data symbols (``data_symbol``) and emits constraints
(``require``, ``equal``).  It asks the store questions with ``decide`` (three
valued: a rule acts only on PROVEN or REFUTED).  It stops on a node in one of two
ways: ``invalid`` (the node breaks a precondition of the spec: a conflict) or
``cannot`` (this rule cannot compute the case: the node is unchecked); either way
its outputs become UNKNOWN and the analysis goes on.

Shapes are tuples of dim expressions (``int`` or sympy), ``None`` when the
rank is unknown.  An unknown dim is a data symbol (``ctx.unknown_dim``).
A *value* is the flattened tuple of a small integer/bool tensor's elements,
each an int, a sympy expression, a sympy boolean or None (that element
unknown); it is how Shape -> Gather -> Concat -> Reshape chains resolve.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import expr as E
from . import irtypes as ir
from .constraints import Constraint, Provenance, Relation, eq, number_truth, violation
from .errors import Cannot, Invalid, RuleError
from .lazy import imported, sympy
from .lazy import numpy as np
from .record import Record
from .store import Store, Verdict

# Values with more elements than this are not tracked element by element.
MAX_VALUE_ELEMENTS = 4096
INT64_MAX = 2 ** 63 - 1

INT_TYPES = ir.INT_OR_BOOL_TYPES     # (the home is irtypes.py)


class TensorInfo:
    """Everything known about one value during inference.  (Compared and hashed by
    identity: infos are shared between values, never changed once set; ``replace``
    makes a changed copy.)

    ``shape``: dims (int | sympy) or None (rank unknown); ``dtype``: onnx_ir.DataType or
    None; ``value``: the flattened known elements (small int/bool tensors); ``const``:
    the full constant, when the value is an initializer/Constant; ``tensor``: anything
    with ``numpy()`` (a tensor, a ConstantOfShape's fill), converted to ``const`` on
    first use; ``seq``: a sequence / optional value (then shape and dtype are None).

    Memos, not shown: ``canon`` ((store.canon_epoch, canonical shape): ``Context.shape``'s,
    valid while no elimination), ``canon_value`` (``Context.value_of``'s, the same way),
    ``cache_key`` ((store.canon_epoch, parts table, the number of this input's part of a
    rule-result cache key in that table): cache.py's)."""

    __slots__ = ("shape", "dtype", "value", "const", "tensor", "seq", "canon", "canon_value", "cache_key")

    def __init__(self, shape: tuple | None = None, dtype: Any = None, value: tuple | None = None,
                 const: "np.ndarray | None" = None, tensor: Any = None, seq: "SeqInfo | None" = None,
                 canon: Any = None, canon_value: Any = None, cache_key: Any = None):
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.const = const
        self.tensor = tensor
        self.seq = seq
        self.canon = canon
        self.canon_value = canon_value
        self.cache_key = cache_key

    def replace(self, **changes) -> "TensorInfo":
        """A copy with ``changes`` (field name -> value), its memos cleared."""
        out = TensorInfo(self.shape, self.dtype, self.value, self.const, self.tensor, self.seq)
        for k, v in changes.items():
            setattr(out, k, v)
        return out

    _parts = ("shape", "dtype", "value", "const", "tensor", "seq")     # (what repr shows)
    __repr__ = Record.__repr__

    def array(self) -> "np.ndarray | None":
        """The full constant (``const``), converted from ``tensor`` on first use (a tensor
        that cannot be converted is dropped), or None."""
        if self.const is None and self.tensor is not None:
            try:
                self.const = self.tensor.numpy()
            except Exception:
                self.tensor = None
        return self.const


class SeqInfo(Record):
    """A sequence (or optional) value, as ``TensorInfo.seq`` (see ops/sequence.py).

    ``length``: int or dim expression, None when unknown.  ``elems``: one TensorInfo per
    element, in order, when every element is known (then ``len(elems) == length``).
    ``elem_shape``: what holds for every element: dims, with None at an axis where the
    elements may differ (None: rank unknown or differing); ``elem_dtype``: the element type.
    An optional is ``optional=True`` with length 1 (has an element), 0 (empty) or None,
    and ``elems == (content,)``: the element's info were it present.  Compared by its
    parts; not hashable."""

    __slots__ = ("length", "elem_shape", "elem_dtype", "elems", "optional")
    _parts = __slots__

    def __init__(self, length: Any = None, elem_shape: tuple | None = None, elem_dtype: Any = None,
                 elems: tuple | None = None, optional: bool = False):
        self.length = length
        self.elem_shape = elem_shape
        self.elem_dtype = elem_dtype
        self.elems = elems
        self.optional = optional


# what ``Context.require`` returns for a relation true on numbers alone (never stored; its
# callers read only ``status``)
_HOLDS = Constraint(-1, eq(0, 0), Provenance("", "", "trivial", "true on numbers alone"), status="trivial")


class Context:
    __slots__ = ("engine", "store", "node", "opset", "op_type", "domain", "_name", "outputs_set",
                 "inputs", "outputs", "recorded", "cacheable", "const_read", "unknowns")

    def __init__(self, engine, node: ir.Node, opset: int | None):
        self.engine = engine
        self.store: Store = engine.store
        self.node = node
        self.opset = opset
        self.op_type = node.op_type
        self.domain = node.domain
        self._name = None                # (the node's name is read when a message needs it)
        self.outputs_set: set[int] = set()
        self.inputs = node.inputs        # onnx_ir builds a new tuple per access: read once
        self.outputs = node.outputs
        # rule-result cache (engine.RuleCache): what this rule did, and whether it may be replayed
        self.recorded: list | None = None   # (relation, rule id, message) of each ``require``
        self.cacheable = True               # False: the result depends on more than the cache key
        self.const_read = False             # the rule read a constant's elements (``const``)
        self.unknowns: list | None = None   # questions ``decide`` answered UNKNOWN

    def start_recording(self) -> None:
        """Record each ``require`` from now on (the engine, before a rule it may cache)."""
        self.recorded = []

    def not_cacheable(self) -> None:
        """The rule's result depends on more than the cache key (the graph upstream, the
        store's state): never replay it."""
        self.cacheable = False

    @property
    def name(self) -> str:
        """The node's label in messages (``labels.node_label``: its name, or
        ``<op type>_<position in its graph's node list>``)."""
        n = self._name
        if n is None:
            n = self._name = self.engine.label(self.node)
        return n

    # ------------------------------------------------------------ inputs
    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def has_output(self, i: int) -> bool:
        return i < len(self.outputs) and bool(self.outputs[i].name)

    def input(self, i: int) -> TensorInfo | None:
        if i >= len(self.inputs):
            return None
        v = self.inputs[i]
        if v is None:
            return None
        t = self.engine.values.get(v)
        return t if t is not None else self.engine.info(v)

    def shape(self, i: int) -> tuple | None:
        t = self.input(i)
        if t is None or t.shape is None:
            return None
        m = t.canon              # (canon_shape's memo, read inline: every rule asks)
        return m[1] if m is not None and m[0] == self.store.canon_epoch else canon_shape(self.store, t)

    def rank(self, i: int) -> int | None:
        t = self.input(i)
        return None if t is None or t.shape is None else len(t.shape)

    def dtype(self, i: int):
        t = self.input(i)
        return None if t is None else t.dtype

    def value(self, i: int) -> tuple | None:
        """Known elements of input ``i`` (flattened), canonicalized, or None."""
        t = self.input(i)
        if t is None or t.value is None:
            return None
        return self.value_of(t)

    def value_of(self, t: TensorInfo) -> tuple:
        """``t.value`` with its integer expressions canonicalized (``canon_value``)."""
        return canon_value(self.store, t)

    def int_values(self, i: int) -> list | None:
        """Like ``value`` but only when every element is known."""
        v = self.value(i)
        if v is None or any(x is None for x in v):
            return None
        return list(v)

    def const(self, i: int) -> np.ndarray | None:
        """The full constant array of input ``i`` (initializer / Constant), or None."""
        t = self.input(i)
        if t is None:
            return None
        self.const_read = True
        return t.array()

    # ------------------------------------------------------------ attributes
    @property
    def attributes(self) -> dict:
        """The node's attributes, name -> Attr.  Inside a model-local function an
        attribute that refers to the caller's (``ref_attr_name``) takes the caller's value
        (or the function's default); one the caller does not give is absent."""
        attrs = self.node.attributes
        frames = self.engine.frames
        if not frames or not any(getattr(a, "ref_attr_name", None) for a in attrs.values()):
            return attrs
        frame = frames[-1][1]
        out = {}
        for name, a in attrs.items():
            ref = getattr(a, "ref_attr_name", None)
            if not ref:
                out[name] = a
            elif ref in frame:
                b = frame[ref]
                out[name] = type(b)(name, b.type, b.value)
        return out

    def attr(self, name: str, default=None):
        a = self.attributes.get(name)
        if a is None:
            return default
        v = a.value
        if a.type == ir.AttributeType.TENSOR:
            try:
                return v.numpy()
            except Exception:
                return v
        if isinstance(v, (list, tuple)):
            return list(v)
        return v

    def require_attr(self, name: str):
        v = self.attr(name)
        if v is None:
            self.invalid(f"{self.op_type.lower()}.attribute", f"{self.op_type}'s required attribute '{name}' is missing",
                         f"give the node its '{name}' attribute")
        return v

    def check_inputs(self, min_count: int, max_count: int | None = None):
        ins = self.inputs
        n = len(ins)
        if n < min_count or any(ins[i] is None for i in range(min_count)):
            present = sum(1 for v in ins if v is not None)
            self.invalid(f"{self.op_type.lower()}.arity", f"{self.op_type} needs at least {min_count} inputs, "
                         f"has {present}")
        if max_count is not None and n > max_count:
            self.invalid(f"{self.op_type.lower()}.arity", f"{self.op_type} takes at most {max_count} inputs, has {n}")

    # ------------------------------------------------------------ outputs
    def set_output(self, i: int, shape: Sequence | None, dtype=None, value=None, const=None, tensor=None,
                   seq=None):
        if i >= len(self.outputs):
            return
        out = self.outputs[i]
        if shape is not None:
            dims = []
            for d in shape:
                if d.__class__ is not int:
                    if d.__class__ is sympy.Symbol:      # (a dim symbol: nothing to normalize or cap)
                        dims.append(d)
                        continue
                    d = E.norm(d)
                    if not isinstance(d, int):
                        dims.append(self.cap(d))
                        continue
                if d < 0 or d > INT64_MAX:
                    self._bad_size(i, len(dims), d)
                dims.append(d)
            shape = tuple(dims)
        if value is not None:
            value = tuple(value)
            if len(value) > MAX_VALUE_ELEMENTS:
                value = None
        self.engine.set_info(out, TensorInfo(shape, dtype, value, const, tensor, seq))
        self.outputs_set.add(i)

    def _bad_size(self, i: int, k: int, d: int):
        if d < 0:
            self.invalid(f"{self.op_type.lower()}.output_size", f"output {i} axis {k} would have negative size {d}")
        self.invalid(f"{self.op_type.lower()}.int64_range", f"output {i} axis {k} would have size {d}, beyond the "
                     "int64 range of ONNX dims")

    def set_unknown(self, i: int, dtype=None):
        self.set_output(i, None, dtype)

    # ------------------------------------------------------------ symbols and constraints
    def provenance(self, rule: str, message: str) -> Provenance:
        return Provenance(self.name, self.op_type, rule, message)

    def data_symbol(self, hint: str, upper=None, message: str = "") -> Any:
        """A runtime quantity this node introduces, ``0 <= s (<= upper)``."""
        prov = self.provenance(f"{self.op_type.lower()}.data", message or f"{hint} is known only at run time")
        return self.store.new_data(f"{hint}", prov, upper=upper)

    def unknown_dim(self, hint: str = "") -> Any:
        return self.data_symbol(hint or f"{self.op_type.lower()}_dim", None,
                                f"a dim of {self.op_type} that the analysis cannot compute")

    def require(self, relation: Relation, rule: str, message):
        """State ``relation`` with its provenance.  ``message`` is the sentence, or a
        function that makes it: called only when the relation is stated (a rule whose
        check usually holds as it stands builds no message then)."""
        if number_truth(relation) is True:
            # true on numbers alone (a static model's checks): nothing to state.  The store
            # would file it as trivial, which no output lists and no replay restates.
            return _HOLDS
        if message.__class__ is not str:
            message = message()
        n = len(self.store.conflicts)
        c = self.store.add(relation, self.provenance(rule, message))
        if self.recorded is not None and c.status != "trivial":
            # (trivially true in canonical form: still so at a replay, whose inputs are the
            # same canonical dims, after any later substitution; a replay need not restate it)
            self.recorded.append((relation, rule, message))
        if c.status == "conflict" and len(self.store.conflicts) > n:
            self._name_upstream(self.store.conflicts[-1], relation)
        return c

    def _name_upstream(self, cf, relation):
        """A rule states relations over canonical dims (``3`` where the input says ``N``
        and an upstream node forced ``N == 3``): add the constraints behind those
        substitutions to the conflict, so every node of it is named."""
        from .constraints import _sides_of
        lits = {x for x in _sides_of(relation) if isinstance(x, int)}
        if not lits:
            return
        ids: set = set()
        for i in range(len(self.inputs)):
            t = self.input(i)
            if t is None or t.shape is None:
                continue
            for d in t.shape:
                if not isinstance(d, int) and self.store.canon(d) in lits:
                    ids |= self.store.why(d)
        have = {c.id for c in cf.constraints}
        extra = [self.store.constraints[k] for k in sorted(ids - have)]
        if extra:
            cf.constraints = sorted(list(cf.constraints) + extra, key=lambda c: c.id)

    def equal(self, a, b, rule: str, message):
        return self.require(eq(a, b), rule, message)

    def conflict(self, rule: str, message, fix: str = ""):
        """Record that this node breaks a precondition of the spec (an attribute out of
        range, a weight of the wrong rank, a perm that is not a permutation) and go on: a
        conflict naming the node, ``rule`` and ``message`` (a sentence with both values,
        or a function making it), with ``fix`` when the rule can say what to change.
        A precondition over symbolic dims is ``require`` instead: a constraint like any
        other, which the store proves, refutes or leaves undecided."""
        if message.__class__ is not str:
            message = message()
        return self.require(violation(message, fix), rule, message)

    def invalid(self, rule: str, message, fix: str = ""):
        """``conflict``, then stop this node: its outputs become UNKNOWN (the analysis goes
        on; the model is inconsistent)."""
        self.conflict(rule, message, fix)
        raise Invalid(message if message.__class__ is str else message())

    def cannot(self, reason: Cannot, message: str):
        """The rule cannot compute this case (``reason`` says why: never a fault of the
        model, which ``invalid`` reports): the outputs become UNKNOWN and the node is
        listed as unchecked, so the model is not called consistent."""
        if not isinstance(reason, Cannot):
            raise TypeError(f"Context.cannot takes a Cannot reason, not {reason!r}")
        raise RuleError(message, reason)

    def decide(self, relation: Relation) -> Verdict:
        """Three-valued: the fast path and intervals first.  Answers come from a base
        known to be satisfiable and are never retracted, so a rule may act on PROVEN
        or REFUTED.  A rule that can state its output exactly without deciding
        (``E.bcast``, ``Piecewise``, ``E.smax``) should do so; ``Result`` resolves such
        terms with the solver after the walk.

        Questions that need Z3 are *optional*: they share the store's bounded
        budget, and past it the answer is UNKNOWN (so a rule falls back to a data
        symbol or a term it states exactly): sound, and linear in the graph."""
        v = self.store.decide(relation, optional=True)
        if v is Verdict.UNKNOWN and self.recorded is not None:
            if self.unknowns is None:
                self.unknowns = []
            self.unknowns.append(relation)    # a replay asks again (cache.py): it may be decided later
        return v

    def proven(self, relation: Relation) -> bool:
        return self.decide(relation) is Verdict.PROVEN

    def cap(self, e):
        """Replace an expression too big for sympy by an alias symbol (see Store.alias)."""
        if isinstance(e, int):
            return e
        n = E.size(e)
        if n <= E.MAX_BRANCHY_OPS or (n <= E.MAX_OPS and not E.branchy(e)):
            return e
        return self.store.alias(e, self.provenance(f"{self.op_type.lower()}.cap",
                                                   "an expression over the size cap, kept as a symbol"))

    def warn(self, message: str):
        self.engine.diagnostic("warning", message, self.name, self.op_type)



def canon_shape(store, t: TensorInfo) -> tuple:
    """``t.shape`` with every dim canonical in ``store``, memoized on ``t`` until the
    store's next elimination (``Store.canon_epoch``)."""
    m = t.canon
    epoch = store.canon_epoch
    if m is not None and m[0] == epoch:
        return m[1]
    canon = store.canon
    out = tuple([d if d.__class__ is int else canon(d) for d in t.shape])
    t.canon = (epoch, out)
    return out


def canon_value(store, t: TensorInfo) -> tuple:
    """``t.value`` with its integer expressions canonical in ``store``, memoized on ``t``
    until the store's next elimination, like ``canon_shape``."""
    m = t.canon_value
    if m is not None and m[0] == store.canon_epoch:
        return m[1]
    canon = store.canon
    out = tuple([v if v is None or v.__class__ is int or v.__class__ is bool
                 else canon(v) if _is_int_expr(v) else v for v in t.value])
    t.canon_value = (store.canon_epoch, out)
    return out


def element_kind(v) -> str:
    """What kind of element a value holds: ``"int"`` (a Python / numpy integer, or an
    integer dim expression; a sympy Symbol is a Boolean subclass too, and is an int
    here), ``"bool"`` (Python / numpy bool, a sympy condition) or ``"unknown"`` (None,
    a float, anything else).  The one home of this question for value propagation."""
    if v is None:
        return "unknown"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if imported(np):                 # (only then can ``v`` be one of numpy's scalars)
        if isinstance(v, np.bool_):
            return "bool"
        if isinstance(v, np.integer):
            return "int"
    if imported(sympy):
        if isinstance(v, sympy.Expr):
            if isinstance(v, sympy.Float) or v.is_integer is False or v.is_finite is False:
                return "unknown"
            return "int"
        if isinstance(v, sympy.logic.boolalg.Boolean):
            return "bool"
    return "unknown"


def _is_int_expr(v) -> bool:
    return element_kind(v) == "int"


def const_info(tensor, dtype=None) -> TensorInfo:
    """TensorInfo of a constant tensor: static shape, elements when small and integral.

    The elements are decoded only for integer tensors of at most
    MAX_VALUE_ELEMENTS elements (without numpy when the tensor can:
    ``reader.Tensor.int_values``); a rule that needs the array gets it from
    ``ctx.const``, which decodes on first use."""
    if tensor is None:
        return TensorInfo(None, dtype)
    shape = tuple(map(int, tensor.shape))
    dt = tensor.dtype if dtype is None else dtype
    n = 1
    for d in shape:
        n *= d
    value = None
    arr = None
    if dt in INT_TYPES and n <= MAX_VALUE_ELEMENTS:
        fast = getattr(tensor, "int_values", None)
        value = fast(MAX_VALUE_ELEMENTS) if fast is not None else None
        if value is None:
            try:
                arr = tensor.numpy()
                if arr.size != n:
                    arr = None
                else:
                    value = tuple(bool(x) if dt == ir.DataType.BOOL else int(x) for x in arr.reshape(-1))
            except Exception:
                value = None
    return TensorInfo(shape, dt, value, arr, tensor)
