"""The model as smtshape reads it: lean, lazy objects over the parsed protobuf.

Shape analysis needs, per node, its op, domain, name, input and output values
and (for some rules) its attributes; per value, its declared type and shape; per
initializer, its dtype and shape and, only when a rule asks, its elements.  This
module builds exactly that from an ``onnx.ModelProto`` and nothing more:

* ``Model`` / ``Graph`` / ``Function`` / ``Node`` / ``Value`` / ``Attr`` /
  ``Tensor`` mirror the part of ``onnx_ir``'s API that smtshape uses (so an
  ``onnx_ir.Model`` a user passes in is analyzed as it is, without a round trip
  through protobuf), with ``__slots__`` and no per-object bookkeeping;
* a node's attributes are converted on first access, a subgraph when first
  visited, a tensor's elements only through ``Tensor.numpy()`` (initializer data
  a rule does not read is never decoded; external data is read relative to the
  model's folder);
* a graph read in file order that never reads a value before its producer is
  marked ``is_sorted``, so the topological sort is a flag check.

Why not ``onnx_ir.serde.deserialize_model``: it builds a full editable IR
(usage lists, naming passes, metadata) that costs about 12 us per node, a
quarter of the whole analysis of a transformer graph; this reader costs about
2 us per node (measured in docs/ARCHITECTURE.md's "Reading a model").

Malformed structure found while reading (a value read that nothing in scope
provides, a value produced twice) is ``BadInput`` naming the node.
"""
from __future__ import annotations

import struct as _struct
import weakref as _weakref

from . import irtypes as ir

from .errors import BadInput
from .labels import node_label, node_phrase

_DT = ir.DataType
_AT = ir.AttributeType
(_AT_INT, _AT_INTS, _AT_FLOAT, _AT_FLOATS, _AT_STRING, _AT_STRINGS, _AT_TENSOR, _AT_TENSORS, _AT_GRAPH,
 _AT_GRAPHS, _AT_SPARSE_TENSOR, _AT_SPARSE_TENSORS, _AT_UNDEFINED) = (
    _AT.INT, _AT.INTS, _AT.FLOAT, _AT.FLOATS, _AT.STRING, _AT.STRINGS, _AT.TENSOR, _AT.TENSORS, _AT.GRAPH,
    _AT.GRAPHS, _AT.SPARSE_TENSOR, _AT.SPARSE_TENSORS, _AT.UNDEFINED)      # (read once, not per attribute)

# AttributeProto.type numbers
_A_FLOAT, _A_INT, _A_STRING, _A_TENSOR, _A_GRAPH = 1, 2, 3, 4, 5
_A_FLOATS, _A_INTS, _A_STRINGS, _A_TENSORS, _A_GRAPHS = 6, 7, 8, 9, 10
_A_SPARSE, _A_SPARSES, _A_TYPE, _A_TYPES = 11, 12, 13, 14
_CONTROL_FLOW = frozenset(("If", "Loop", "Scan", "SequenceMap"))
_SUBGRAPH = (_A_GRAPH, _A_GRAPHS)
# TensorProto.data_type -> numpy type name (Tensor.numpy); the typed field that holds the
# elements when raw_data is empty (float16, bfloat16 and the small types: int32_data)
_NP_TYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
             10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}
_TYPED_FIELD = {1: "float_data", 7: "int64_data", 8: "string_data", 11: "double_data", 12: "uint64_data",
                13: "uint64_data", 14: "float_data", 15: "double_data"}
# the value fields of a TensorProto, and the one each element type stores its elements in
_VALUE_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
_FIELD_OF = {1: "float_data", 14: "float_data", 7: "int64_data", 8: "string_data", 11: "double_data",
             15: "double_data", 12: "uint64_data", 13: "uint64_data",
             **{c: "int32_data" for c in (2, 3, 4, 5, 6, 9, 10, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28)}}
# bits per element of the types whose stored count is one per element (and raw bytes bits / 8)
_BITS_OF = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 16: 16,
            17: 8, 18: 8, 19: 8, 20: 8, 24: 8}
# TensorProto.data_type -> struct format of the integer types decoded without numpy
_INT_FORMATS = {7: "q", 6: "i", 5: "h", 4: "H", 3: "b", 2: "B", 12: "I", 13: "Q", 9: "?"}


class SymDim:
    """A dim of a declared shape that is not a number: ``value`` is its
    ``dim_param`` (None when the dim is anonymous)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value or None

    def __eq__(self, other):
        return isinstance(other, SymDim) and other.value == self.value

    def __hash__(self):
        return hash(("SymDim", self.value))

    def __repr__(self):
        return f"SymDim({self.value!r})"


class OtherType:
    """A value type smtshape does not analyze (a map, a sequence of maps): named by
    ``text`` (``seq(map(int64, float))``); such values are UNKNOWN."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return f"OtherType({self.text})"


def type_text(tp) -> str:
    """A TypeProto in the schemas' notation: ``tensor(float)``, ``seq(map(int64, float))``."""
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        t = getattr(tp, kind)
        dt = _dtype(t.elem_type) if t.elem_type else None
        return f"{'tensor' if kind == 'tensor_type' else 'sparse_tensor'}({dt.name.lower() if dt else '?'})"
    if kind == "sequence_type":
        return f"seq({type_text(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_text(tp.optional_type.elem_type)})"
    if kind == "map_type":
        kt = _dtype(tp.map_type.key_type)
        vt = type_text(tp.map_type.value_type)
        if vt.startswith("tensor("):
            vt = vt[len("tensor("):-1]          # (the schemas write map(int64, float))
        return f"map({kt.name.lower() if kt else '?'}, {vt})"
    return kind or "?"


class TensorType:
    """The type of a tensor value (sequence and optional types are onnx_ir's own)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return f"TensorType({self.dtype!r})"


_DTYPES = {int(m): m for m in _DT}


def _dtype(code: int):
    return _DTYPES.get(code)      # (calling the enum costs about 15 us)


def _shape_of(tt):
    """TypeProto.Tensor -> tuple of int | SymDim, or None (no shape declared)."""
    if not tt.HasField("shape"):
        return None
    out = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        else:
            out.append(SymDim(d.dim_param))
    return tuple(out)


def _set_type(v, tp):
    """Set a Value's type, dtype and declared shape from a TypeProto."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        tt = tp.tensor_type
        v.dtype = _dtype(tt.elem_type) if tt.elem_type else None
        v.type = TensorType(v.dtype)
        v.shape = _shape_of(tt)
    elif kind == "sparse_tensor_type":
        st = tp.sparse_tensor_type
        v.dtype = _dtype(st.elem_type) if st.elem_type else None
        v.type = TensorType(v.dtype)
        v.shape = _shape_of(st)
    elif kind is not None:   # sequence, optional, map: onnx_ir's own type objects
        try:
            v.type = ir.serde.deserialize_type_proto_for_type(tp)
        except Exception:
            # a type ONNX allows that onnx_ir does not read (a sequence of maps: a ZipMap's
            # output): the value is not analyzed, the model is (never a bad input for it)
            v.type = OtherType(type_text(tp))
            v.dtype = None
            v.shape = None
            return
        v.dtype = getattr(v.type, "dtype", None)
        inner = tp       # like onnx_ir: the shape of the innermost tensor type
        while inner.WhichOneof("value") in ("sequence_type", "optional_type"):
            inner = getattr(inner, inner.WhichOneof("value")).elem_type
        v.shape = _shape_of(inner.tensor_type) if inner.WhichOneof("value") == "tensor_type" else None


class _Nodes(list):
    """A graph's nodes in file order.  Its values reach their producer through one weak
    reference to it (``Value._home``) instead of one per node: on a 200k-node model
    the weak references were 16 MB of the run's memory."""

    __slots__ = ("__weakref__",)


class Value:
    """A named value: graph input, initializer or node output."""

    __slots__ = ("name", "type", "shape", "dtype", "const_value", "_home", "_pos", "_index")

    def __init__(self, name: str, home=None, pos=None, index=None):
        self.name = name
        self.type = None
        self.shape = None
        self.dtype = None
        self.const_value = None
        # the producer: a weak reference to its graph's node list and its position there,
        # or None.  Weak: no node <-> value cycle, so a model's objects are freed by reference
        # counting; to the list, one per graph, not one per node (memory: see _Nodes)
        self._home = home
        self._pos = pos
        self._index = index

    def producer(self):
        h = self._home
        if h is None:
            return None
        nodes = h()
        return nodes[self._pos] if nodes is not None else None

    def index(self):
        return self._index

    def __repr__(self):
        return f"Value({self.name!r})"


class Tensor:
    """An initializer or tensor attribute: dtype and shape at once, elements on demand."""

    __slots__ = ("_proto", "name", "dtype", "shape", "base_dir")

    def __init__(self, proto, base_dir: str = "", name: str | None = None):
        self._proto = proto
        self.name = proto.name if name is None else name
        self.dtype = _dtype(proto.data_type)
        self.shape = tuple(proto.dims[:])
        self.base_dir = base_dir

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def numpy(self):
        """The elements as a numpy array (external data read from ``base_dir``).

        The common numeric types stored in the file are decoded here; the others
        (external data, strings, 8-bit and 4-bit floats, ...) by onnx's numpy_helper."""
        import numpy as np
        p = self._proto
        np_type = _NP_TYPES.get(p.data_type)
        if np_type is None or p.data_location == 1:
            from onnx import numpy_helper
            return numpy_helper.to_array(p, self.base_dir)
        n = self.size
        if p.raw_data:
            arr = np.frombuffer(p.raw_data, dtype=np.dtype(np_type).newbyteorder("<")).astype(np_type)
        elif p.data_type == 10:     # float16: the bits, widened into int32_data
            arr = np.array(p.int32_data, dtype=np.uint16).view(np.float16)
        else:
            field = _TYPED_FIELD.get(p.data_type, "int32_data")
            arr = np.array(getattr(p, field), dtype=np.int64 if field == "int32_data" else None).astype(np_type)
        if arr.size != n:
            raise ValueError(f"tensor '{self.name}' declares {n} elements and holds {arr.size}")
        return arr.reshape(self.shape)

    def tobytes(self) -> bytes:
        return self.numpy().tobytes()

    def check(self) -> str | None:
        """Is the stored tensor well formed?  ``BadInput`` for what onnx's checker refuses
        (an UNDEFINED element type, no value field or more than one, elements stored in
        the field of another type); a sentence for elements whose count differs from the
        dims' (the checker lets it pass, onnxruntime refuses the model: a conflict for the
        caller to state); None when it is fine.  Raw data is measured only for tensors
        whose dims say under 1 MB (reading a large one would copy it)."""
        p = self._proto
        code = p.data_type
        where = f"tensor '{self.name}'"
        if code == 0:
            raise BadInput(f"malformed model: {where} has element type UNDEFINED")
        if p.data_location == 1:
            return None
        filled = [f for f in _VALUE_FIELDS if len(getattr(p, f))]
        has_raw = p.HasField("raw_data")
        n = self.size
        if len(filled) + has_raw > 1 or (not filled and not has_raw and n and code != 8):
            raise BadInput(f"malformed model: {where} should hold its elements in one and only one field")
        want = _FIELD_OF.get(code)
        if filled and want is not None and filled[0] != want:
            raise BadInput(f"malformed model: {where} of element type {_dtype(code)} stores its elements in "
                           f"'{filled[0]}' instead of '{want}'")
        bits = _BITS_OF.get(code)
        if bits is None:
            return None          # (strings, complex, sub-byte types: counted by their readers)
        if has_raw:
            if n * bits > 8 << 20:
                return None      # (reading raw_data copies it: a large tensor is not measured)
            held = len(p.raw_data) * 8 // bits
        elif filled:
            held = len(getattr(p, filled[0]))
        else:
            held = 0
        if held != n:
            return f"{where} has dims {list(self.shape)} ({n} elements) but holds {held}"
        return None

    def int_values(self, limit: int):
        """The elements as a tuple of Python ints (bools for BOOL) when this is an
        integer tensor of at most ``limit`` elements stored in the file itself,
        decoded without numpy; None otherwise."""
        p = self._proto
        code = p.data_type
        fmt = _INT_FORMATS.get(code)
        if fmt is None or p.data_location == 1:
            return None
        n = self.size
        if n > limit:
            return None
        if p.raw_data:
            raw = p.raw_data
            if len(raw) != n * _struct.calcsize(fmt):
                return None
            vals = _struct.unpack(f"<{n}{fmt}", raw)
        else:
            field = p.int64_data if code == 7 else p.uint64_data if code in (12, 13) else p.int32_data
            if len(field) != n:
                return None
            vals = tuple(field[:])
            if code in (2, 3, 4, 5):    # int32_data holds the narrow types widened: wrap as stored
                bits = {2: 8, 3: 8, 4: 16, 5: 16}[code]
                signed = code in (3, 5)
                m = (1 << bits) - 1
                vals = tuple(((x & m) - ((x & m) >> (bits - 1) << bits)) if signed else (x & m) for x in vals)
        if code == 9:
            return tuple(bool(x) for x in vals)
        return vals

    def __repr__(self):
        return f"Tensor({self.name!r}, {self.dtype!r}, {self.shape})"


class Attr:
    """One attribute: ``type`` (an ``onnx_ir.AttributeType``) and ``value``."""

    __slots__ = ("name", "type", "value", "ref_attr_name")

    def __init__(self, name, type_, value, ref_attr_name=None):
        self.name = name
        self.type = type_
        self.value = value
        self.ref_attr_name = ref_attr_name

    def __repr__(self):
        return f"Attr({self.name!r}, {self.type!r}, {self.value!r})"


class Node:
    __slots__ = ("op_type", "domain", "_name", "inputs", "outputs", "out_mask", "_protos", "_pos", "_attrs",
                 "_scope", "attr_key")

    def __init__(self, protos, pos, inputs, scope, op_type: str, domain: str):
        self.op_type = op_type
        self.domain = domain
        self._name = None        # (read on first use: a replayed node never needs it)
        self.inputs = inputs
        self.outputs = ()        # (and out_mask: set by the graph's reader, once the outputs are made)
        self.out_mask = 0
        self._protos = protos    # the graph's repeated NodeProto field and this node's position:
        self._pos = pos          # its Python object is made again when read (see _read_nodes)
        self._attrs = None
        self._scope = scope
        self.attr_key = None     # (never cached unless the graph's reader sets it: see attr_key)

    @property
    def _proto(self):
        return self._protos[self._pos]

    @property
    def name(self) -> str:
        n = self._name
        if n is None:
            n = self._name = self._proto.name
        return n

    @property
    def position(self) -> int:
        """Its position in its graph's node list (``labels.node_label``; not onnx_ir's API)."""
        return self._pos

    @property
    def overload(self) -> str:
        return self._proto.overload      # (read on use: only function calls need it)

    @property
    def attributes(self) -> dict:
        a = self._attrs
        if a is None:
            a = self._attrs = {}
            pb = self._proto.attribute
            if pb:
                scope = self._scope
                for p in pb[:]:
                    name = p.name
                    a[name] = _attr(p, scope, name)
        return a

    @property
    def proto(self):
        """The NodeProto this node was read from (never modified)."""
        return self._proto

    def __repr__(self):
        return f"Node({self.op_type!r}, {self.name!r})"


def _attr(p, scope, name: str) -> Attr:
    if p.ref_attr_name:
        return Attr(name, _AT(p.type) if p.type else _AT_UNDEFINED, None, p.ref_attr_name)
    t = p.type
    if t == _A_INT:
        return Attr(name, _AT_INT, p.i)
    if t == _A_INTS:
        return Attr(name, _AT_INTS, p.ints[:])
    if t == _A_FLOAT:
        return Attr(name, _AT_FLOAT, p.f)
    if t == _A_FLOATS:
        return Attr(name, _AT_FLOATS, p.floats[:])
    if t == _A_STRING:
        return Attr(name, _AT_STRING, _text(p.s, name))
    if t == _A_STRINGS:
        return Attr(name, _AT_STRINGS, [_text(s, name) for s in p.strings])
    if t == _A_TENSOR:
        return Attr(name, _AT_TENSOR, Tensor(p.t, scope.base_dir))
    if t == _A_TENSORS:
        return Attr(name, _AT_TENSORS, [Tensor(x, scope.base_dir) for x in p.tensors])
    if t == _A_GRAPH:
        return Attr(name, _AT_GRAPH, Graph(p.g, scope))
    if t == _A_GRAPHS:
        return Attr(name, _AT_GRAPHS, [Graph(g, scope) for g in p.graphs])
    if t == _A_SPARSE:
        return Attr(name, _AT_SPARSE_TENSOR, p.sparse_tensor)
    if t == _A_SPARSES:
        return Attr(name, _AT_SPARSE_TENSORS, list(p.sparse_tensors))
    if t in (_A_TYPE, _A_TYPES):
        return Attr(name, _AT(t), p.tp if t == _A_TYPE else list(p.type_protos))
    return Attr(name, _AT_UNDEFINED, None)


# attribute types whose value is not keyed on as it stands: tensor(s), graph(s), sparse tensor(s)
_UNKEYED = frozenset((_A_TENSOR, _A_TENSORS, _A_GRAPH, _A_GRAPHS, _A_SPARSE, _A_SPARSES))


def attr_key(attrs: list, in_function: bool):
    """A node's attributes as stored in the file, as a key for the rule-result cache
    (cache.py): a tuple of each attribute's serialized bytes, or None when the node is
    never cached (a subgraph, a tensor over 256 bytes, an attribute reference in a
    function body: its value is the caller's).  A small tensor is keyed by its
    content: an unnamed one (as the PyTorch exporters write a Constant's) by its bytes,
    a named one by its fields without the name, which differs in every Constant.

    The graph's reader makes it beside the node's inputs and outputs, while the node's
    part of the parsed file is still in the CPU's caches: on a 200k-node model, reading
    it again during the walk costs a cache miss per node."""
    parts = []
    for a in attrs:
        if in_function and a.ref_attr_name:
            return None
        kind = a.type            # (a protobuf field read: once)
        if kind in _UNKEYED:
            if kind != _A_TENSOR or a.ByteSize() > 256:
                return None
            if a.t.name:
                parts.append(_tensor_key(a))
                continue
        parts.append(a.SerializeToString())
    return tuple(parts)


def _tensor_key(a) -> tuple:
    """A tensor attribute by content, its name left out.  (The elements are in
    ``raw_data`` or in the one typed field of the tensor's type.)"""
    t = a.t
    if t.data_location == 1:     # external data: where it is
        return (a.name, t.data_type, tuple(t.dims), tuple((e.key, e.value) for e in t.external_data))
    raw = t.raw_data
    payload = raw if raw else tuple(getattr(t, _TYPED_FIELD.get(t.data_type, "int32_data")))
    return (a.name, t.data_type, tuple(t.dims[:]), bool(raw), payload)


def _text(b: bytes, what: str) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"malformed model: attribute '{what}' is not valid UTF-8") from None


class _Scope:
    """Names visible in one graph: its own values, then the enclosing graphs'."""

    __slots__ = ("names", "parent", "base_dir", "pending", "in_function", "annotated")

    def __init__(self, parent, base_dir, in_function=False, annotated=None):
        self.names: dict = {}
        self.parent = parent
        # node outputs with a declared type (value_info, graph outputs), of this graph and
        # every graph inside it (one list per model, functions' bodies included): the only
        # values policy skip's findings look at
        self.annotated: list = parent.annotated if parent is not None else \
            (annotated if annotated is not None else [])
        self.base_dir = base_dir
        self.pending: dict = {}      # names read before any producer in this graph
        # a function body (or a graph inside one): attributes may refer to the caller's
        self.in_function = in_function or (parent is not None and parent.in_function)

    def find(self, name):
        s = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v
            s = s.parent
        return None


class Graph:
    """A graph: ``inputs``, ``outputs``, ``initializers`` (name -> Value), its nodes
    in file order by iteration; ``is_sorted`` when no node reads a value before
    its producer (subgraph captures included)."""

    __slots__ = ("name", "inputs", "outputs", "initializers", "_nodes", "is_sorted", "_scope", "doc_string",
                 "declared_inits")

    def __init__(self, gp, parent_scope=None, base_dir: str = ""):
        scope = _Scope(parent_scope, parent_scope.base_dir if parent_scope is not None else base_dir)
        self._scope = scope
        self.name = gp.name
        self.doc_string = gp.doc_string
        names = scope.names
        inputs = []
        # IR < 4 lists initializers as inputs too: their declared types are not read (the
        # initializer gives the type, and the analysis takes them as constants)
        init_protos = gp.initializer[:]
        init_names = [tp.name for tp in init_protos]     # (each read once: used again below)
        init_set = set(init_names) if init_names and gp.input else ()
        # an initializer that is also a graph input: its declared type, to check the
        # initializer against (name -> a Value carrying the declaration)
        self.declared_inits = {}
        for vi in gp.input:
            name = vi.name
            v = Value(name)
            if name not in init_set:
                _set_type(v, vi.type)
            elif vi.HasField("type"):
                d = self.declared_inits[name] = Value(name)
                _set_type(d, vi.type)
            names[name] = v
            inputs.append(v)
        self.inputs = inputs
        inits = {}
        base_dir = scope.base_dir
        for tp, name in zip(init_protos, init_names):
            v = names.get(name)
            if v is None:
                v = names[name] = Value(name)
            t = Tensor(tp, base_dir, name)
            v.const_value = t
            v.dtype = t.dtype
            v.type = TensorType(t.dtype)
            v.shape = t.shape
            inits[name] = v
        for sp in gp.sparse_initializer:
            tp = sp.values
            v = names.get(tp.name)
            if v is None:
                v = Value(tp.name)
                names[tp.name] = v
            v.dtype = _dtype(tp.data_type)
            v.type = TensorType(v.dtype)
            v.shape = tuple(sp.dims)
            inits[tp.name] = v
        self.initializers = inits
        self._nodes = self._read_nodes(gp, scope)
        for vi in list(gp.output) + list(gp.value_info):
            v = names.get(vi.name)
            if v is not None and v._home is not None and vi.HasField("type"):
                _set_type(v, vi.type)      # a declaration of a node output: an annotation
                scope.annotated.append(v)
        outs = []
        for vi in gp.output:
            v = scope.find(vi.name)
            if v is None:
                raise BadInput(f"malformed model: graph output '{vi.name}' is produced by no node and is "
                               "neither a graph input nor an initializer")
            outs.append(v)
        self.outputs = outs

    def _read_nodes(self, gp, scope) -> list:
        names = scope.names
        get = names.get
        pending = scope.pending
        parent = scope.parent
        in_function = scope.in_function
        same = {}.setdefault          # one shared object per distinct op type, domain and
        same_key = {}.setdefault      # attribute key in a graph (they repeat: less memory)
        nodes = _Nodes()
        home = _weakref.ref(nodes)
        append = nodes.append
        sorted_ = True
        protos = gp.node
        for pos, p in enumerate(protos):
            names_in = p.input[:]      # (a slice: one call makes every string)
            ins = list(map(get, names_in))
            if None in ins:
                for i, name in enumerate(names_in):
                    if ins[i] is not None or not name:
                        continue
                    v = parent.find(name) if parent is not None else None
                    if v is None:       # read before its producer (or nothing produces it)
                        v = pending.get(name)
                        if v is None:
                            v = pending[name] = Value(name)
                        sorted_ = False
                    ins[i] = v
            # the op type and domain as one shared string each per graph: the walk hashes them
            # for every node, and on a large model a string of each node's own is no longer
            # in the CPU's caches by then (and costs memory)
            op = p.op_type
            op = same(op, op)
            d = p.domain
            node = Node(protos, pos, tuple(ins), scope, op, same(d, d) if d and d != "ai.onnx" else "")
            outs = []
            all_named = True
            k = 0
            for name in p.output[:]:
                if name:
                    v = get(name)
                    if v is None:
                        v = pending.pop(name, None) if pending else None
                        if v is None:
                            v = Value(name, home, pos, k)
                        else:
                            v._home, v._pos, v._index = home, pos, k
                        names[name] = v
                    elif v._home is not None or v.const_value is not None or v in self.inputs:
                        raise BadInput(f"malformed model: {node_phrase(p.op_type, node_label(p, pos))} writes "
                                       f"'{name}', which another node, a graph input or an initializer "
                                       "already provides")
                    else:
                        v._home, v._pos, v._index = home, pos, k
                else:
                    v = Value("", home, pos, k)
                    all_named = False
                outs.append(v)
                k += 1
            node.outputs = tuple(outs)
            # which outputs are named, for the rule-result cache's key: their count when all
            # are, else a tuple of flags (never equal to a count)
            node.out_mask = k if all_named else tuple([bool(v.name) for v in outs])
            pa = p.attribute
            if not pa:
                node.attr_key = ()
            else:
                pa = pa[:]
                ak = attr_key(pa, in_function)
                node.attr_key = same_key(ak, ak) if ak is not None else None     # (shared when equal)
                if sorted_ and (node.domain or node.op_type in _CONTROL_FLOW):
                    # (of the default domain only control-flow ops run a subgraph; any other
                    # domain's op may, so its attributes are looked at)
                    for a in pa:
                        if a.type in _SUBGRAPH:
                            sorted_ = False      # captures: let graph.topo_order check them
                            break
            append(node)
        if pending:
            name = next(iter(pending))
            reader = next((n for n in nodes if any(v is not None and v.name == name and v._home is None
                                                   for v in n.inputs)), None)
            where = node_phrase(reader.op_type, node_label(reader)) if reader else "a node"
            raise BadInput(f"malformed model: {where} reads '{name}', which no node produces and which is "
                           "neither a graph input nor an initializer")
        self.is_sorted = sorted_
        return nodes

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def __repr__(self):
        return f"Graph({self.name!r}, {len(self._nodes)} nodes)"


class Function:
    """A model-local function: ``inputs`` / ``outputs`` (Values of its body), its nodes
    by iteration."""

    __slots__ = ("domain", "name", "overload", "inputs", "outputs", "_nodes", "is_sorted", "opset_imports",
                 "attributes", "defaults", "_scope")

    def __init__(self, fp, base_dir: str, annotated=None):
        self.domain = fp.domain
        self.name = fp.name
        self.overload = fp.overload
        self.opset_imports = {o.domain: o.version for o in fp.opset_import}
        self.attributes = list(fp.attribute)
        scope = _Scope(None, base_dir, in_function=True, annotated=annotated)
        # attributes with a default value (IR >= 9): name -> Attr
        self.defaults = {p.name: _attr(p, scope, p.name) for p in fp.attribute_proto}
        self._scope = scope
        self.inputs = []
        for name in fp.input:
            v = Value(name)
            scope.names[name] = v
            self.inputs.append(v)
        self._nodes = Graph._read_nodes(self, fp, scope)
        self.outputs = []
        for name in fp.output:
            v = scope.names.get(name)
            if v is None:
                raise BadInput(f"malformed model: function '{fp.name}' output '{name}' is produced by no node")
            self.outputs.append(v)

    def __iter__(self):
        return iter(self._nodes)

    def __len__(self):
        return len(self._nodes)


class Model:
    """A model read from protobuf: ``graph``, ``functions`` ((domain, name, overload)
    -> Function), ``opset_imports`` (domain -> version), ``proto`` (the ModelProto
    it was read from, never modified) and ``base_dir`` (where external data lives)."""

    __slots__ = ("proto", "graph", "functions", "opset_imports", "ir_version", "producer_name", "base_dir")

    def __init__(self, proto, base_dir: str = ""):
        self.proto = proto
        self.base_dir = base_dir
        self.ir_version = proto.ir_version
        self.producer_name = proto.producer_name
        imports = {}
        for o in proto.opset_import:
            imports["" if o.domain == "ai.onnx" else o.domain] = o.version
        self.opset_imports = imports
        self.graph = Graph(proto.graph, None, base_dir)
        annotated = self.graph._scope.annotated
        self.functions = {(f.domain, f.name, f.overload): Function(f, base_dir, annotated)
                          for f in proto.functions}

    def annotated_values(self) -> list:
        """The node outputs that carry a declared type (``value_info``, graph outputs) in
        the main graph, the functions and every subgraph read so far (a value may be
        listed twice)."""
        return self.graph._scope.annotated


def read_model(proto, base_dir: str = "") -> Model:
    """A ``Model`` over a parsed ``onnx.ModelProto``; BadInput on malformed structure."""
    return Model(proto, base_dir)


def proto_module():
    """The generated protobuf module of ONNX (``onnx.onnx_ml_pb2``), or a module holding
    the same message classes.

    When onnx is not imported yet, its generated file is not run through ``onnx/__init__``
    (numpy, the checker, the reference evaluator ...: most of a cold start).  The message
    classes are the same objects either way (protobuf keeps one class per descriptor), so
    ``onnx.ModelProto`` instances are accepted and returned as usual.  With protobuf's
    default (upb) backend the classes are made from the file's serialized descriptor
    alone (``_upb_classes``); otherwise, or should that fail, the generated file is run."""
    import sys
    mod = sys.modules.get("onnx.onnx_ml_pb2") or sys.modules.get(_PB2)
    if mod is not None:
        return mod
    if "onnx" not in sys.modules:
        import importlib.util
        import os
        spec = importlib.util.find_spec("onnx")
        path = os.path.join(os.path.dirname(spec.origin), "onnx_ml_pb2.py") if spec and spec.origin else ""
        if os.path.exists(path):
            s = importlib.util.spec_from_file_location(_PB2, path)
            mod = _upb_classes(s)
            if mod is None:
                mod = importlib.util.module_from_spec(s)
                s.loader.exec_module(mod)
            sys.modules[_PB2] = mod
            return mod
    import onnx.onnx_ml_pb2 as mod
    return mod


def _upb_classes(spec):
    """A module with the message classes of onnx's generated file (``spec``), made by
    protobuf's upb backend from the serialized file descriptor that the generated file
    adds to the default pool, or None (another backend, another layout of the generated
    file, any error).

    Running the generated file instead imports protobuf's pure-Python descriptor pool,
    message and text-format modules (datetime, pickle, locale ...): 37 M instructions of
    every cold start, about 3 % of a cold ``check`` of a transformer.  The descriptor is
    the bytes constant of the file's code, as Python's own loader gives it (the cached
    bytecode when it is fresh, else the source compiled); nothing of it is run.  The
    classes are those the generated file would make (same names, nesting and module),
    and the same objects: running it later (``import onnx``) finds them."""
    import types
    try:
        from google.protobuf.internal import api_implementation
        if api_implementation.Type() != "upb":
            return None     # (PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python: onnx's classes are pure Python)
        from google._upb import _message
        from google.protobuf import message as _pb_message
        code = spec.loader.get_code(spec.name)
        data = next((c for c in code.co_consts if isinstance(c, bytes) and c.startswith(b"\n\x12onnx/onnx-ml.proto")),
                    None)
        if data is None:
            return None
        fd = _message.default_pool.AddSerializedFile(data)

        def build(desc, prefix: str):
            ns = {name: build(d, f"{prefix}{desc.name}.") for name, d in desc.nested_types_by_name.items()}
            ns.update(DESCRIPTOR=desc, __module__="onnx.onnx_ml_pb2", __qualname__=prefix + desc.name)
            return _message.MessageMeta(desc.name, (_pb_message.Message,), ns)

        mod = types.ModuleType(spec.name)
        for name, desc in fd.message_types_by_name.items():
            setattr(mod, name, build(desc, ""))
        mod.DESCRIPTOR = fd
        return mod if mod.ModelProto.DESCRIPTOR.full_name == "onnx.ModelProto" else None
    except Exception:
        return None


_PB2 = "smtshape._onnx_ml_pb2"


def to_proto(model):
    """A ModelProto for ``model`` (a copy: the caller may modify it)."""
    if isinstance(model, Model):
        out = proto_module().ModelProto()
        out.CopyFrom(model.proto)
        return out
    return ir.serde.serialize_model(model)


def node_proto(node):
    """A NodeProto of ``node``: a copy the caller may modify (the model is never changed)."""
    p = getattr(node, "proto", None)
    if p is not None and not callable(p):
        out = proto_module().NodeProto()
        out.CopyFrom(p)
        return out
    return ir.serde.serialize_node(node)


def is_sorted(graph) -> bool:
    return getattr(graph, "is_sorted", False) is True
