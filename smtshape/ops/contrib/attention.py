"""onnxruntime's attention contrib ops: Attention, MultiHeadAttention,
GroupQueryAttention, DecoderMaskedMultiHeadAttention, RotaryEmbedding,
LongformerAttention.

Shapes follow onnxruntime's CPU kernels where they exist (Attention, MHA with
separate or BNSH key/value, GQA, RotaryEmbedding; checked in
tests/ops/test_contrib_attention.py) and the spec (docs of the registered
schemas) otherwise: packed KV / QKV of MHA and DecoderMaskedMultiHeadAttention
are GPU-only.

A head size is ``hidden / num_heads``: emitted with ``hidden % num_heads == 0``.
GQA's present length is ``max(past_len, total_sequence_length)`` (onnxruntime's
CPU kernel), where total_sequence_length is a runtime scalar: its value when the
analysis knows it, a data symbol otherwise.
"""
from __future__ import annotations

from ... import expr as E
from ...constraints import eq
from ...printing import show
from ...registry import register
from ..common import unify
from ._util import MS, contract, same_shape, vector_of


def _heads(ctx, name="num_heads", required=True):
    v = ctx.attr(name)
    if v is None:
        if required:
            ctx.invalid(f"{ctx.op_type.lower()}.attribute", f"{ctx.op_type}'s required attribute '{name}' is missing",
                        f"give the node its '{name}' attribute")
        return None
    v = int(v)
    if v <= 0:
        ctx.invalid(f"{ctx.op_type.lower()}.{name}", f"{name} {v} is not positive: it is a count of heads",
                    f"set {name} to the number of heads (>= 1)")
    return v


def _div(ctx, total, parts, rule, what):
    """``total / parts`` exactly, with ``total % parts == 0`` emitted."""
    if parts == 1:
        return total
    ctx.require(eq(E.mod(total, parts), 0), rule, f"{what} {show(total)} must be divisible by {parts}")
    return E.floordiv(total, parts)


def _rank(ctx, s, ranks, what):
    """``s`` (when known) has one of ``ranks``: the shapes the op's spec gives ``what``
    (onnxruntime's shape inference or kernel refuses the others)."""
    if s is not None and len(s) not in ranks:
        want = " or ".join(map(str, ranks))
        ctx.invalid(f"{ctx.op_type.lower()}.rank", f"{what} has rank {len(s)}: {ctx.op_type} takes a {what} of "
                    f"rank {want}", f"give {what} rank {want}")


# ---------------------------------------------------------------- Attention
@register(MS, "Attention", since_version=1)
def attention(ctx):
    """input (B, S, Hin), weights (Hin, Hq + Hk + Hv), bias (Hq + Hk + Hv); qkv_hidden_sizes
    or three equal parts.  output (B, S, Hv); present (2, B, N, P + S, Hk / N) from past
    (2, B, N, P, Hk / N) (past's own shape with past_present_share_buffer)."""
    contract(ctx)
    n = _heads(ctx)
    x, w = ctx.shape(0), ctx.shape(1)
    _rank(ctx, x, (3,), "input")
    _rank(ctx, w, (2,), "weights")
    total = None
    if w is not None:
        if x is not None:
            unify(ctx, x[2], w[0], "attention.weights",
                  f"weights' rows {show(w[0])} must equal the input hidden size {show(x[2])}")
        total = w[1]
    if ctx.has_input(2) and ctx.shape(2) is not None:
        b = ctx.shape(2)
        _rank(ctx, b, (1,), "bias")
        total = b[0] if total is None else unify(ctx, total, b[0], "attention.bias",
                                                 f"bias length {show(b[0])} must equal weights' columns {show(total)}")
    qkv = ctx.attr("qkv_hidden_sizes")
    if qkv is not None:
        qkv = [int(v) for v in qkv]
        if len(qkv) != 3 or any(v <= 0 for v in qkv):
            ctx.invalid("attention.qkv_hidden_sizes", f"qkv_hidden_sizes {qkv} is not three positive sizes "
                        "(hidden sizes of Q, K and V)", "give qkv_hidden_sizes three positive sizes")
        hq, hk, hv = qkv
        if total is not None:
            unify(ctx, total, sum(qkv), "attention.qkv", f"weights' columns {show(total)} must equal the "
                  f"sum of qkv_hidden_sizes {sum(qkv)}")
    elif total is not None:
        hq = hk = hv = _div(ctx, total, 3, "attention.qkv", "weights' columns (three equal Q, K, V parts)")
    else:
        hq = hk = hv = None
    if hq is not None:
        for h, what in ((hq, "Q hidden size"), (hk, "K hidden size"), (hv, "V hidden size")):
            ctx.require(eq(E.mod(h, n), 0), "attention.heads", f"the {what} {show(h)} must be divisible by num_heads {n}")
    out = None if x is None else (x[0], x[1], hv if hv is not None else ctx.unknown_dim(f"{ctx.name}_hv"))
    ctx.set_output(0, out, ctx.dtype(0))
    if ctx.has_output(1):
        past = ctx.shape(4) if ctx.has_input(4) else None
        _rank(ctx, past, (5,), "past")
        present = None
        if int(ctx.attr("past_present_share_buffer", 0) or 0):
            present = past
        elif x is not None and hk is not None:
            head = E.floordiv(hk, n)
            if past is not None:
                unify(ctx, past[0], 2, "attention.past", f"past's axis 0 ({show(past[0])}) must be 2")
                unify(ctx, past[1], x[0], "attention.past", f"past's batch {show(past[1])} must equal {show(x[0])}")
                unify(ctx, past[2], n, "attention.past", f"past's heads {show(past[2])} must equal num_heads {n}")
                head = unify(ctx, past[4], head, "attention.past",
                             f"past's head size {show(past[4])} must equal {show(head)}")
                present = (2, x[0], n, E.add(past[3], x[1]), head)
            else:
                present = (2, x[0], n, x[1], head)
        ctx.set_output(1, present, ctx.dtype(0))


# ---------------------------------------------------------------- MultiHeadAttention
@register(MS, "MultiHeadAttention", since_version=1)
def multi_head_attention(ctx):
    """query (B, S, D) with key (B, L, D) and value (B, L, Dv): output (B, S, Dv), present_key
    (B, N, P + L, D / N), present_value (B, N, P + L, Dv / N); key and value in BNSH (B, N, L, H)
    (same shape): output (B, S, N * H), presents = key's shape; packed KV key (B, L, N, 2, H):
    output (B, S, D); packed QKV query (B, S, N, 3, H): output (B, S, N * H).  With
    past_sequence_length (buffer sharing) presents have past's shape.  qk is (B, N, S, P + L)."""
    contract(ctx)
    n = _heads(ctx)
    q = ctx.shape(0)
    k = ctx.shape(1) if ctx.has_input(1) else None
    v = ctx.shape(2) if ctx.has_input(2) else None
    _rank(ctx, q, (3, 5), "query")
    _rank(ctx, k, (3, 4, 5), "key")
    _rank(ctx, v, (3, 4), "value")
    pk = ctx.shape(6) if ctx.has_input(6) else None
    pv = ctx.shape(7) if ctx.has_input(7) else None
    _rank(ctx, pk, (4,), "past_key")
    _rank(ctx, pv, (4,), "past_value")
    share = ctx.has_input(8)
    dt = ctx.dtype(0)
    out = pres_k = pres_v = None
    total = None
    if q is not None and len(q) == 5:
        b, s = q[0], q[1]
        unify(ctx, q[2], n, "mha.heads", f"packed QKV heads axis {show(q[2])} must equal num_heads {n}")
        unify(ctx, q[3], 3, "mha.packed", f"packed QKV axis 3 ({show(q[3])}) must be 3")
        h = hv = q[4]
        out = (b, s, E.mul(n, h))
        length = s
    elif q is not None:
        b, s, d = q
        length = h = hv = None
        if k is not None and len(k) == 3:
            unify(ctx, k[0], b, "mha.batch", f"key's batch {show(k[0])} must equal query's {show(b)}")
            unify(ctx, k[2], d, "mha.hidden", f"key's hidden size {show(k[2])} must equal query's {show(d)}")
            length = k[1]
            h = _div(ctx, d, n, "mha.heads", "the hidden size")
            dv = d
            if v is not None:
                _rank(ctx, v, (3,), "value (with a 3-D key)")
                unify(ctx, v[0], b, "mha.batch", f"value's batch {show(v[0])} must equal query's {show(b)}")
                length = unify(ctx, v[1], length, "mha.kv_length",
                               f"value's length {show(v[1])} must equal key's {show(length)}")
                dv = v[2]
            hv = _div(ctx, dv, n, "mha.heads", "the value hidden size")
            out = (b, s, dv)
            if ctx.has_input(3) and ctx.shape(3) is not None:
                vector_of(ctx, 3, E.add(E.mul(2, d), dv), "mha.bias", "bias", "2 * hidden + value hidden")
        elif k is not None and len(k) == 4:
            if v is not None:
                same_shape(ctx, k, v, "mha.bnsh", "key", "value")
            unify(ctx, k[0], b, "mha.batch", f"key's batch {show(k[0])} must equal query's {show(b)}")
            unify(ctx, k[1], n, "mha.heads", f"key's heads axis {show(k[1])} must equal num_heads {n}")
            h = hv = k[3]
            unify(ctx, d, E.mul(n, h), "mha.hidden", f"query's hidden {show(d)} must equal num_heads * head size "
                  f"{n} * {show(h)}")
            out = (b, s, E.mul(n, hv))
            pres_k = pres_v = tuple(k)
            length = k[2]
        elif k is not None and len(k) == 5:
            unify(ctx, k[0], b, "mha.batch", f"packed KV batch {show(k[0])} must equal query's {show(b)}")
            unify(ctx, k[2], n, "mha.heads", f"packed KV heads axis {show(k[2])} must equal num_heads {n}")
            unify(ctx, k[3], 2, "mha.packed", f"packed KV axis 3 ({show(k[3])}) must be 2")
            h = hv = k[4]
            unify(ctx, d, E.mul(n, h), "mha.hidden", f"query's hidden {show(d)} must equal num_heads * head size")
            out = (b, s, d)
            length = k[1]
        elif k is None:
            ctx.invalid("multiheadattention.key", "the query is 3-D and there is no key: MultiHeadAttention "
                        "takes a key with a 3-D query (a packed QKV query is 5-D)",
                        "give MultiHeadAttention a key, or pack Q, K and V into a 5-D query")
    if q is not None and pres_k is None and length is not None:
        if share:
            pres_k, pres_v = pk, pv
        else:
            past_len = 0
            if pk is not None:
                unify(ctx, pk[0], b, "mha.past", f"past_key's batch {show(pk[0])} must equal {show(b)}")
                unify(ctx, pk[1], n, "mha.past", f"past_key's heads {show(pk[1])} must equal num_heads {n}")
                h = unify(ctx, pk[3], h, "mha.past", f"past_key's head size {show(pk[3])} must equal {show(h)}")
                past_len = pk[2]
            if pv is not None:
                if pk is not None:
                    unify(ctx, pv[2], pk[2], "mha.past", f"past_value's length {show(pv[2])} must equal "
                          f"past_key's {show(pk[2])}")
                hv = unify(ctx, pv[3], hv, "mha.past", f"past_value's head size {show(pv[3])} must equal {show(hv)}")
            total = E.add(past_len, length)
            pres_k = (b, n, total, h)
            pres_v = (b, n, total, hv)
    if total is None and pres_k is not None and not share:
        total = pres_k[2]
    ctx.set_output(0, out, dt)
    if ctx.has_output(1):
        ctx.set_output(1, pres_k, dt)
    if ctx.has_output(2):
        ctx.set_output(2, pres_v, dt)
    if ctx.has_output(3):
        qk = None
        if q is not None and total is not None:
            qk = (b, n, s, total)
        ctx.set_output(3, qk, dt)


@register(MS, "DecoderMaskedMultiHeadAttention", since_version=1)
def decoder_masked_mha(ctx):
    """query (B, S, D); output (B, S, Dv) (Dv = value's hidden when value is 3-D, D otherwise);
    present_key / present_value are past_key / past_value (shared buffers, inputs 5 and 6).
    (GPU kernel; shapes from the spec and SymbolicShapeInference.)"""
    contract(ctx)
    q = ctx.shape(0)
    _rank(ctx, q, (3,), "query")
    v = ctx.shape(2) if ctx.has_input(2) else None
    out = q
    if q is not None and v is not None and len(v) == 3:
        out = (q[0], q[1], v[2])
    ctx.set_output(0, out, ctx.dtype(0))
    for o, i in ((1, 5), (2, 6)):
        if ctx.has_output(o):
            ctx.set_output(o, ctx.shape(i) if ctx.has_input(i) else None, ctx.dtype(0))


# ---------------------------------------------------------------- GroupQueryAttention
@register(MS, "GroupQueryAttention", since_version=1)
def group_query_attention(ctx):
    """query (B, S, N * H) with key / value (B, S, Nk * H), or packed (B, S, (N + 2 Nk) * H);
    output (B, S, N * H); present_key / present_value (B, Nk, max(P, T), H) with past (B, Nk, P, H)
    and T the runtime total_sequence_length (input 6); with a window-sized cache
    (sliding_window_cache=1) presents have past's shape."""
    contract(ctx)
    n = _heads(ctx)
    nk = _heads(ctx, "kv_num_heads")
    q = ctx.shape(0)
    _rank(ctx, q, (3,), "query")
    k = ctx.shape(1) if ctx.has_input(1) else None
    v = ctx.shape(2) if ctx.has_input(2) else None
    pk = ctx.shape(3) if ctx.has_input(3) else None
    pv = ctx.shape(4) if ctx.has_input(4) else None
    _rank(ctx, k, (3,), "key")
    _rank(ctx, v, (3,), "value")
    _rank(ctx, pk, (4,), "past_key")
    _rank(ctx, pv, (4,), "past_value")
    dt = ctx.dtype(0)
    out = None
    h = None
    if q is not None:
        b, s, d = q
        if ctx.has_input(1) or ctx.has_input(2):
            h = _div(ctx, d, n, "gqa.heads", "the query hidden size")
            for t, what in ((k, "key"), (v, "value")):
                if t is None:
                    continue
                unify(ctx, t[0], b, "gqa.batch", f"{what}'s batch {show(t[0])} must equal query's {show(b)}")
                unify(ctx, t[1], s, "gqa.length", f"{what}'s length {show(t[1])} must equal query's {show(s)}")
                unify(ctx, t[2], E.mul(nk, h), "gqa.kv_hidden",
                      f"{what}'s hidden {show(t[2])} must equal kv_num_heads * head size = {nk} * {show(h)}")
        else:
            h = _div(ctx, d, n + 2 * nk, "gqa.packed", "the packed QKV hidden size (num_heads + 2 * kv_num_heads)")
        out = (b, s, E.mul(n, h))
    for t, what in ((pk, "past_key"), (pv, "past_value")):
        if t is None or q is None:
            continue
        unify(ctx, t[0], q[0], "gqa.past", f"{what}'s batch {show(t[0])} must equal {show(q[0])}")
        unify(ctx, t[1], nk, "gqa.past", f"{what}'s heads {show(t[1])} must equal kv_num_heads {nk}")
        if ctx.dtype(3) == dt and h is not None:
            h = unify(ctx, t[3], h, "gqa.past", f"{what}'s head size {show(t[3])} must equal {show(h)}")
    ctx.set_output(0, out, dt)
    present = None
    if int(ctx.attr("sliding_window_cache", 0) or 0):
        present = pk
    elif q is not None and h is not None and (ctx.dtype(3) in (None, dt) or pk is None):
        tv = ctx.value(6)
        t = tv[0] if tv is not None and len(tv) == 1 and tv[0] is not None and not isinstance(tv[0], bool) else None
        if t is None:
            t = ctx.data_symbol(f"{ctx.name}_total_seq", None, "GroupQueryAttention total_sequence_length "
                                "(a runtime scalar)")
        length = t if pk is None else E.smax(pk[2], t)
        present = (q[0], nk, length, h)
    elif pk is not None:
        present = None
    for o in (1, 2):
        if ctx.has_output(o):
            ctx.set_output(o, present, ctx.dtype(3) or dt)


# ---------------------------------------------------------------- RotaryEmbedding
@register(MS, "RotaryEmbedding", since_version=1)
def rotary_embedding(ctx):
    """Output has input's shape.  cos_cache and sin_cache have the same shape; 2-D
    position_ids are (B, S) with S = input.shape[1] (3-D input) or input.shape[2] (4-D, BNSH)
    (onnxruntime's checks)."""
    contract(ctx)
    x = ctx.shape(0)
    _rank(ctx, x, (3, 4), "input")
    same_shape(ctx, ctx.shape(2), ctx.shape(3), "rotary.caches", "cos_cache", "sin_cache")
    p = ctx.shape(1)
    if x is not None and p is not None and not int(ctx.attr("is_packed_batching", 0) or 0):
        if len(p) == 2:
            seq = x[1] if len(x) == 3 else x[2]
            unify(ctx, p[0], x[0], "rotary.position_ids",
                  f"position_ids' batch {show(p[0])} must equal the input's {show(x[0])}")
            unify(ctx, p[1], seq, "rotary.position_ids",
                  f"position_ids' axis 1 ({show(p[1])}) must equal the sequence length {show(seq)}")
        elif len(p) == 1:
            unify(ctx, p[0], 1, "rotary.position_ids", f"1-D position_ids must have length 1, has {show(p[0])}")
        elif len(p) > 2:
            ctx.invalid("rotaryembedding.rank", f"position_ids has rank {len(p)}: it is (1) or (batch, sequence)",
                        "give position_ids the shape (1) or (batch, sequence)")
    ctx.set_output(0, x, ctx.dtype(0))


@register(MS, "LongformerAttention", since_version=1)
def longformer_attention(ctx):
    """Output has input's shape (B, S, H)."""
    contract(ctx)
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0))
