"""The rule-result cache: a node whose rule already ran on the same inputs replays
the result instead of running the rule again.

Transformer and CNN graphs repeat their blocks: a 15k-node transformer has a few
dozen distinct (op, attributes, input shapes, input values) combinations.  The
key of a node is

    (domain, op, opset, attributes as stored in the file, which outputs exist,
     per input: canonical shape, dtype, canonical known elements, whether it is a constant)

(each distinct per-input part numbered once, in ``RuleCache.parts``, and memoized on the
TensorInfo with the epoch of canonical forms it was made in)

(a Constant's small tensor by its content: its serialized bytes when the tensor has no
name of its own, as the PyTorch exporters write it, else its fields without the name,
which differs in every Constant) and an entry holds
what the rule did: each output's TensorInfo (shared, never changed once set) and
each ``ctx.require`` (relation, rule id, message) that was not trivially true in
canonical form.  Replaying sets the same outputs and states the same
requirements again with the *new* node's provenance, so explanations, findings
and conflicts name every node as if the rule had run.  (A requirement trivially
true in canonical form stays so for inputs with the same canonical dims, after
any later substitution: a replay does not restate it, and no output lists a
trivial constraint anyway.  The other way round, a replay may restate a requirement that
the rule, run again, would skip because an earlier copy of it now holds (Reshape's
``batch > 0``): the store records the restated one as a duplicate.)

Why a hit is sound: the rule's outputs are a function of the key and of store
facts, and store facts are never retracted (store/), so what was derived from
canonically identical inputs holds again.  A result is *not* stored when the
rule depended on anything else (``Context.cacheable`` false):

* it minted a symbol (a data symbol, an alias, an unknown dim: each node gets its own);
* (a question the store could not decide yet, ``decide`` UNKNOWN, does not prevent
  storing: the entry keeps the question, and a replay asks it again and runs the rule
  instead when the answer is no longer UNKNOWN; PROVEN / REFUTED answers are never
  retracted, so they need no asking again);
* it followed the graph upstream (index bounds from a producing Range), noted an
  assumption, warned, failed, or found a conflict;
* a node with a subgraph, a tensor attribute over 256 bytes or an attribute reference,
  a sequence input, a model-local function call, or an onnx_ir node (no stored
  attributes).

A rule that read a constant's elements (``ctx.const``) is replayed only for the
very same constant tensors.
"""
from __future__ import annotations

from .context import canon_shape, canon_value
from .store import Verdict

MAX_ENTRIES = 50_000


class Entry:
    __slots__ = ("outputs", "requires", "consts", "unknowns", "finished", "quick")

    def __init__(self, outputs, requires, consts, unknowns):
        self.outputs = outputs      # ((index, TensorInfo), ...)
        self.requires = requires    # ((relation, rule id, message), ...)
        self.consts = consts        # identities of the constants read, or None
        self.unknowns = unknowns    # questions the rule got UNKNOWN for: asked again on replay
        # a replay leaves nothing for the engine to do after it (no folding to try, every
        # named output set): a function of the key, so found out when recorded (engine.py)
        self.finished = False
        # a replay is only the outputs: nothing to compare, ask or restate, and finished
        # (the engine then sets them itself, with no Context)
        self.quick = False


class RuleCache:
    def __init__(self):
        self.entries: dict = {}
        # each distinct per-input part of a key, numbered: a key is then a short tuple of
        # strings, bytes and ints, hashed and compared without a look inside an expression
        self.parts: dict = {}
        self.hits = 0
        self.misses = 0

    # ------------------------------------------------------------ key
    def key(self, node, opset, store, values: dict):
        """The key of a node read by ``reader`` (one with a ``_proto``), or None when
        this node is never cached.  (Built before any Context: a hit needs none.)"""
        attrs = node.attr_key
        if attrs is None:
            return None
        epoch = store.canon_epoch
        parts = self.parts
        get = values.get
        ins = []
        for v in node.inputs:
            if v is None:
                ins.append(None)
                continue
            t = get(v)
            if t is None:
                return None
            m = t.cache_key           # (memoized on the info: shared infos are read again and again)
            if m is not None and m[0] == epoch and m[1] is parts:     # (numbers are this cache's)
                ins.append(m[2])
                continue
            if t.seq is not None:
                return None
            shape = t.shape
            if shape is not None:
                shape = canon_shape(store, t)
            val = t.value
            is_const = t.const is not None or t.tensor is not None
            if val is not None and not is_const:      # (a constant's elements are numbers)
                val = canon_value(store, t)
            k = (shape, t.dtype, val, is_const)
            n = parts.get(k)
            if n is None:
                n = parts[k] = len(parts)
            t.cache_key = (epoch, parts, n)
            ins.append(n)
        return (node.domain, node.op_type, opset, attrs, node.out_mask, tuple(ins))

    # ------------------------------------------------------------ replay / record
    def replay(self, ctx, e, values: dict):
        """Set the outputs and restate the requirements of stored result ``e`` (the
        entry of the node's key, or None): the Entry, or None on a miss."""
        if e is None:
            self.misses += 1
            return None
        if e.consts is not None and e.consts != _const_ids(ctx, values):
            self.misses += 1
            return None
        for rel in e.unknowns:
            if ctx.store.decide(rel, optional=True) is not Verdict.UNKNOWN:
                self.misses += 1      # decided since: the rule would take another branch now
                return None
        self.hits += 1
        outs = ctx.outputs
        for i, t in e.outputs:
            values[outs[i]] = t      # shared: a TensorInfo is never changed once set (but for the
            ctx.outputs_set.add(i)   # array of a constant, decoded on first use: the same for all)
        for rel, rule, msg in e.requires:
            ctx.require(rel, rule, msg)
        return e

    def record(self, ctx, key, values: dict, wants_fold):
        """Store what the rule did for ``key``: the new Entry, or None when not stored.
        ``wants_fold()``: would the engine fold the node's inputs (asked only when stored)."""
        if not ctx.cacheable or len(self.entries) >= MAX_ENTRIES:
            return None
        outs = ctx.outputs
        stored = tuple([(i, values[outs[i]]) for i in sorted(ctx.outputs_set)])
        consts = _const_ids(ctx, values) if ctx.const_read else None
        e = self.entries[key] = Entry(stored, tuple(ctx.recorded), consts, tuple(ctx.unknowns or ()))
        # whether inputs can be folded and outputs are settled follows from the key
        # (constness and known elements are in it): decided once, here (the outputs are
        # the entry's, and folding has not run yet)
        e.finished = not wants_fold() and {i for i, _ in stored} >= {i for i, o in enumerate(outs) if o.name}
        e.quick = e.finished and consts is None and not e.unknowns and not e.requires
        return e


def _const_ids(ctx, values: dict) -> tuple:
    out = []
    for v in ctx.inputs:
        t = values.get(v) if v is not None else None
        out.append(None if t is None else (id(t.tensor) if t.tensor is not None else id(t.const)))
    return tuple(out)
