"""Attention-era ops: Attention (opset 23+), RMSNormalization, RotaryEmbedding (23),
TensorScatter (24), LinearAttention, CausalConvWithState (27), SwiGLU (28) and the preview
FlexAttention (ai.onnx.preview, 1).

Head sizes come exactly from the inputs: with 3-D Attention inputs ``(B, S, hidden)`` the
head size is ``Q.hidden / q_num_heads`` and the output's last dim is
``q_num_heads * (V.hidden / kv_num_heads)``, written ``(q_num_heads / kv_num_heads) * V.hidden``
(exact, as q_num_heads is a multiple of kv_num_heads and V.hidden of kv_num_heads, both
emitted as constraints).
"""
from __future__ import annotations

from .. import expr as E
from ..constraints import any_of, eq, ge, gt, le
from ..errors import Cannot
from ..printing import show
from ..registry import register
from .common import norm_axis, unify
from .common import unidirectional


# each op's rule-id family (the prefix of its shape rules)
_FAMILY = {"RMSNormalization": "rmsnorm", "RotaryEmbedding": "rotary", "CausalConvWithState": "causalconv"}


def _fam(ctx) -> str:
    return _FAMILY.get(ctx.op_type, ctx.op_type.lower())


def _ranked(ctx, i, ranks, what):
    s = ctx.shape(i) if ctx.has_input(i) else None
    if s is not None and len(s) not in ranks:
        want = ' or '.join(map(str, ranks))
        ctx.invalid(f"{_fam(ctx)}.rank", f"{what} (input {i}) must have rank {want}, has rank {len(s)}",
                    f"give {what} rank {want}")
    return s


def _heads_attr(ctx, name, required, why="with 3-D inputs"):
    v = ctx.attr(name, None)
    if v is None:
        if required:
            ctx.invalid(f"{_fam(ctx)}.num_heads", f"attribute '{name}' is required {why}",
                        f"give the node its '{name}' attribute")
        return None
    v = int(v)
    if v <= 0:
        ctx.invalid(f"{_fam(ctx)}.num_heads", f"{name} must be positive, is {v}",
                    f"set {name} to the number of heads")
    return v


def _fit(ctx, s, dims, rule, what, names):
    """Input shape ``s`` equals ``dims`` axis by axis (None entries not checked)."""
    if s is None:
        return None
    if len(s) != len(dims):
        ctx.invalid(f"{_fam(ctx)}.rank", f"{what} must have rank {len(dims)}, has rank {len(s)}",
                    f"give {what} rank {len(dims)}")
    out = []
    for k, (a, want) in enumerate(zip(s, dims)):
        out.append(a if want is None else unify(
            ctx, want, a, rule, f"{what} axis {k} ({names[k]}) is {show(a)}, must be {show(want)}"))
    return out


def _or_unknown(ctx, d, hint):
    return d if d is not None else ctx.unknown_dim(hint)


# ---------------------------------------------------------------- Attention
@register("", "Attention", since_version=23)
@register("", "Attention", since_version=24)
@register("", "Attention", since_version=25)
def attention(ctx):
    """Q, K, V are all 3-D ``(B, S, heads*size)`` (q_num_heads, kv_num_heads required) or all
    4-D ``(B, heads, S, size)``.  Past key/value (4-D) are prepended on the sequence axis."""
    opset = ctx.opset or 99
    ctx.check_inputs(3, 7 if opset >= 24 else 6)
    if ctx.has_input(4) != ctx.has_input(5):
        ctx.invalid("attention.past", "past_key and past_value must be given together, the node gives only "
                    + ("past_key" if ctx.has_input(4) else "past_value"), "give both past inputs or neither")
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        ctx.invalid("attention.qk_matmul_output_mode", f"qk_matmul_output_mode must be 0, 1, 2 or 3, is {mode}",
                    "set qk_matmul_output_mode to 0 (QK), 1 (softcapped), 2 (with the mask) or 3 (softmax)")
    if opset >= 25:
        sp = ctx.attr("softmax_precision", None)
        if sp is not None and int(sp) not in (1, 10, 11, 16):
            ctx.invalid("attention.softmax_precision", f"softmax_precision {int(sp)} is not one of 1 (FLOAT), "
                        "10 (FLOAT16), 11 (DOUBLE), 16 (BFLOAT16)", "set softmax_precision to a supported type")
        # Attention-25's own checks (ONNX's inference; onnxruntime refuses the same)
        for name in ("left_window_size", "right_window_size"):
            w = int(ctx.attr(name, -1))
            if w < -1:
                ctx.invalid("attention.window", f"{name} must be -1 (unbounded) or nonnegative, is {w}",
                            f"set {name} to -1 or a number of positions")
        if ctx.has_output(1) != ctx.has_output(2):
            ctx.invalid("attention.present", "present_key and present_value must be requested together, the node "
                        "asks for only " + ("present_key" if ctx.has_output(1) else "present_value"),
                        "request both present outputs or neither")
        if ctx.has_input(6) and (ctx.has_input(4) or ctx.has_output(1)):
            ctx.invalid("attention.nonpad_kv_seqlen", "nonpad_kv_seqlen (an external cache) cannot be combined "
                        "with the past_key / past_value inputs or present_key / present_value outputs",
                        "drop nonpad_kv_seqlen or the past and present caches")
    q = _ranked(ctx, 0, (3, 4), "Q")
    k = _ranked(ctx, 1, (3, 4), "K")
    v = _ranked(ctx, 2, (3, 4), "V")
    if opset >= 25 and q is not None and len(q) == 4 and \
            (ctx.attr("q_num_heads", None) is not None or ctx.attr("kv_num_heads", None) is not None):
        ctx.invalid("attention.num_heads", "q_num_heads and kv_num_heads must not be given with a 4-D Q "
                    "(Attention-25: the heads are Q's axis 1)", "drop q_num_heads and kv_num_heads")
    ranks = {len(s) for s in (q, k, v) if s is not None}
    if len(ranks) > 1:
        # (Attention-25 in onnxruntime runs a 3-D Q with 4-D K and V; not modeled here)
        ctx.cannot(Cannot.NOT_MODELED, f"Q, K and V of ranks {[None if s is None else len(s) for s in (q, k, v)]}: "
                   "mixed 3-D and 4-D inputs are not modeled")
    rank = ranks.pop() if ranks else None
    if rank is None:
        for i in range(4):
            if ctx.has_output(i):
                ctx.set_output(i, None, ctx.dtype(0) if i != 2 else ctx.dtype(2))
        return
    qn_a = _heads_attr(ctx, "q_num_heads", rank == 3)
    kvn_a = _heads_attr(ctx, "kv_num_heads", rank == 3)
    rule = "attention.shapes"
    B = Sq = Skv = qn = kvn = head = vh = None

    def same(a, b, what):
        if a is None:
            return b
        if b is None:
            return a
        return unify(ctx, a, b, rule, f"{what}: {show(a)} and {show(b)} must be equal")

    if rank == 3:
        if qn_a % kvn_a:
            ctx.invalid("attention.num_heads", f"q_num_heads {qn_a} must be a multiple of kv_num_heads {kvn_a}",
                        "set q_num_heads to a multiple of kv_num_heads")
        qn, kvn = qn_a, kvn_a
        B = same(same(q and q[0], k and k[0], "batch of Q and K"), v and v[0], "batch of K and V")
        Sq = q[1] if q is not None else None
        Skv = same(k and k[1], v and v[1], "kv sequence length of K and V")
        if q is not None:
            ctx.require(eq(E.mod(q[2], qn), 0), "attention.heads",
                        f"Q hidden size {show(q[2])} must be a multiple of q_num_heads {qn}")
            head = E.floordiv(q[2], qn)
        if k is not None:
            ctx.require(eq(E.mod(k[2], kvn), 0), "attention.heads",
                        f"K hidden size {show(k[2])} must be a multiple of kv_num_heads {kvn}")
            if q is not None:
                ctx.require(eq(E.mul(qn, k[2]), E.mul(kvn, q[2])), "attention.head_size",
                            f"K hidden size {show(k[2])} / kv_num_heads {kvn} must equal Q hidden size "
                            f"{show(q[2])} / q_num_heads {qn} (the head size)")
            else:
                head = E.floordiv(k[2], kvn)
        if v is not None:
            ctx.require(eq(E.mod(v[2], kvn), 0), "attention.heads",
                        f"V hidden size {show(v[2])} must be a multiple of kv_num_heads {kvn}")
            vh = E.floordiv(v[2], kvn)
        y = [B, Sq, E.mul(qn // kvn, v[2]) if v is not None else None]
    else:
        B = same(same(q and q[0], k and k[0], "batch of Q and K"), v and v[0], "batch of K and V")
        qn = q[1] if q is not None else qn_a
        kvn = same(k and k[1], v and v[1], "kv heads of K and V")
        Sq = q[2] if q is not None else None
        Skv = same(k and k[2], v and v[2], "kv sequence length of K and V")
        head = same(q and q[3], k and k[3], "head size of Q and K")
        vh = v[3] if v is not None else None
        if qn_a is not None and qn is not None:
            qn = unify(ctx, qn_a, qn, rule, f"Q axis 1 ({show(qn)}) must equal q_num_heads {qn_a}")
        if kvn_a is not None:
            kvn = kvn_a if kvn is None else unify(ctx, kvn_a, kvn, rule,
                                                  f"K axis 1 ({show(kvn)}) must equal kv_num_heads {kvn_a}")
        if qn is not None and kvn is not None and not (isinstance(kvn, int) and isinstance(qn, int)
                                                       and kvn > 0 and qn % kvn == 0):
            if not isinstance(kvn, int):
                ctx.require(gt(kvn, 0), "attention.heads", f"kv heads {show(kvn)} must be positive")
            ctx.require(eq(E.mod(qn, kvn), 0), "attention.heads",
                        f"q heads {show(qn)} must be a multiple of kv heads {show(kvn)}")
        y = [B, qn, Sq, vh]

    names4 = ("batch", "kv heads", "past sequence length", "head size")
    pk = _ranked(ctx, 4, (4,), "past_key")
    pv = _ranked(ctx, 5, (4,), "past_value")
    P = None
    if pk is not None:
        pk = _fit(ctx, pk, [B, kvn, None, head], rule, "past_key", names4)
        P = pk[2]
        B, kvn, head = B or pk[0], kvn or pk[1], head or pk[3]
    if pv is not None:
        pv = _fit(ctx, pv, [B, kvn, P, vh], rule, "past_value", names4[:3] + ("v head size",))
        P = P if P is not None else pv[2]
        vh = vh if vh is not None else pv[3]
    total = None if Skv is None else (Skv if not (ctx.has_input(4) or ctx.has_input(5)) else
                                      (E.add(P, Skv) if P is not None else None))
    if ctx.has_input(6):
        _fit(ctx, ctx.shape(6), [B], rule, "nonpad_kv_seqlen", ("batch",))
    m = _ranked(ctx, 3, (1, 2, 3, 4), "attn_mask")
    if m is not None:
        full = [B, qn, Sq, total]
        for j in range(1, len(m) + 1):
            a, want = m[-j], full[-j]
            if want is None:
                continue
            if j == 1:
                # a shorter last axis is padded (with -inf / False) up to the total length
                ctx.require(le(a, want), "attention.mask",
                            f"attn_mask last axis {show(a)} must be at most the total sequence length {show(want)}")
            elif a != 1 and a != want:
                ctx.require(any_of(eq(a, want), eq(a, 1)), "attention.mask",
                            f"attn_mask axis -{j} ({show(a)}) must broadcast to {show(want)}")
    dt = ctx.dtype(0)
    hint = "attention"
    ctx.set_output(0, [_or_unknown(ctx, d, hint) for d in y], dt)
    if ctx.has_output(1):
        ctx.set_output(1, [_or_unknown(ctx, d, hint) for d in (B, kvn, total, head)], dt)
    if ctx.has_output(2):
        ctx.set_output(2, [_or_unknown(ctx, d, hint) for d in (B, kvn, total, vh)], ctx.dtype(2) or dt)
    if ctx.has_output(3):
        ctx.set_output(3, [_or_unknown(ctx, d, hint) for d in (B, qn, Sq, total)], dt)


# ---------------------------------------------------------------- RMSNormalization
@register("", "RMSNormalization", since_version=23)
def rms_normalization(ctx):
    """Y has X's shape (and the scale's type); the scale broadcasts unidirectionally to X."""
    ctx.check_inputs(2, 2)
    x = ctx.shape(0)
    if x is not None:
        norm_axis(ctx, int(ctx.attr("axis", -1)), len(x))
    unidirectional(ctx, x, ctx.shape(1), "rmsnorm.scale", "scale")
    ctx.set_output(0, x, ctx.dtype(1) or ctx.dtype(0))


# ---------------------------------------------------------------- RotaryEmbedding
@register("", "RotaryEmbedding", since_version=23)
def rotary_embedding(ctx):
    """Y has X's shape.  X is (B, heads, S, head) or (B, S, heads*head) with num_heads;
    the caches' last axis is rotary_dim / 2 (rotary_dim defaults to the head size, even);
    with position_ids (B, S) the caches are (max_pos, rotary_dim / 2), else (B, S, rotary_dim / 2)."""
    ctx.check_inputs(3, 4)
    x = _ranked(ctx, 0, (3, 4), "X")
    rule = "rotary.shapes"
    nh = ctx.attr("num_heads", None)
    rot = int(ctx.attr("rotary_embedding_dim", 0) or 0)
    if rot < 0:
        ctx.invalid("rotary.rotary_embedding_dim", f"rotary_embedding_dim must be >= 0 (0: the head size), is {rot}",
                    "set rotary_embedding_dim to 0 or an even size at most the head size")
    B = S = head = None
    if x is not None:
        B = x[0]
        if len(x) == 4:
            S, head = x[2], x[3]
            if nh is not None:
                unify(ctx, int(nh), x[1], rule, f"X axis 1 ({show(x[1])}) must equal num_heads {int(nh)}")
        else:
            nh = _heads_attr(ctx, "num_heads", True, "with a 3-D X")
            S = x[1]
            ctx.require(eq(E.mod(x[2], nh), 0), rule, f"X hidden size {show(x[2])} must be a multiple of "
                        f"num_heads {nh}")
            head = E.floordiv(x[2], nh)
    r = rot if rot else head
    half = None
    if r is not None:
        ctx.require(eq(E.mod(r, 2), 0), rule, f"the rotary dim {show(r)} must be even")
        half = E.floordiv(r, 2)
        if rot and head is not None:
            ctx.require(le(rot, head), rule, f"rotary_embedding_dim {rot} must be at most the head size {show(head)}")
    if ctx.has_input(3):
        p = _fit(ctx, ctx.shape(3), [B, S], rule, "position_ids", ("batch", "sequence"))
        if p is not None:
            B, S = p
        dims, names = [None, half], ("max position", "rotary dim / 2")
    else:
        dims, names = [B, S, half], ("batch", "sequence", "rotary dim / 2")
    c = _fit(ctx, ctx.shape(1), dims, rule, "cos_cache", names)
    _fit(ctx, ctx.shape(2), c if c is not None else dims, rule, "sin_cache", names)
    ctx.set_output(0, x, ctx.dtype(0))


# ---------------------------------------------------------------- TensorScatter
@register("", "TensorScatter", since_version=24)
def tensor_scatter(ctx):
    """present_cache has past_cache's shape; update matches it except on ``axis`` (<= there)."""
    ctx.check_inputs(2, 3)
    past, upd = ctx.shape(0), ctx.shape(1)
    axis = int(ctx.attr("axis", -2))
    mode = ctx.attr("mode", "linear")
    if isinstance(mode, bytes):
        mode = mode.decode("utf-8", "replace")
    if mode not in ("linear", "circular"):
        ctx.invalid("tensorscatter.mode", f"mode must be 'linear' or 'circular', is {mode!r}",
                    "set mode to linear or circular")
    r = len(past) if past is not None else (len(upd) if upd is not None else None)
    if r is not None:
        ax = norm_axis(ctx, axis, r)
        if ax == 0:
            ctx.invalid("tensorscatter.axis", f"axis {axis} is the batch axis 0, which it cannot be",
                        "set axis to the sequence axis (not 0)")
        if past is not None and upd is not None:
            if len(upd) != len(past):
                ctx.invalid("tensorscatter.rank", f"update has rank {len(upd)}, past_cache {len(past)}: they must "
                            "have the same rank", "give update past_cache's rank")
            for k, (a, b) in enumerate(zip(past, upd)):
                if k == ax:
                    ctx.require(le(b, a), "tensorscatter.seq",
                                f"update sequence length {show(b)} (axis {k}) must be at most the cache's {show(a)}")
                else:
                    unify(ctx, a, b, "tensorscatter.dims",
                          f"update axis {k} ({show(b)}) must equal past_cache axis {k} ({show(a)})")
    batch = past[0] if past else (upd[0] if upd else None)
    if ctx.has_input(2) and batch is not None:
        _fit(ctx, ctx.shape(2), [batch], "tensorscatter.indices", "write_indices", ("batch",))
    ctx.set_output(0, past, ctx.dtype(0))


# ---------------------------------------------------------------- SwiGLU
@register("", "SwiGLU", since_version=28)
def swiglu(ctx):
    """A and B have identical shapes (no broadcasting); Y too."""
    ctx.check_inputs(2, 2)
    a, b = ctx.shape(0), ctx.shape(1)
    if a is not None and b is not None:
        if len(a) != len(b):
            ctx.invalid("swiglu.rank", f"A has rank {len(a)}, B rank {len(b)}: SwiGLU's inputs must have the same "
                        "shape (it does not broadcast)", "give A and B the same shape")
        a = [unify(ctx, x, y, "swiglu.shape", f"A axis {k} ({show(x)}) must equal B axis {k} ({show(y)})")
             for k, (x, y) in enumerate(zip(a, b))]
    ctx.set_output(0, a if a is not None else b, ctx.dtype(0))


# ---------------------------------------------------------------- LinearAttention
# update_rule -> (needs decay, needs beta): each input is required by its rules, forbidden by the others
_UPDATE_RULES = {"linear": (False, False), "gated": (True, False), "delta": (False, True),
                 "gated_delta": (True, True)}


@register("", "LinearAttention", since_version=27)
def linear_attention(ctx):
    """query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv), past_state (B, Hkv, dk, dv);
    output (B, T, Hq*dv), present_state (B, Hkv, dk, dv)."""
    ctx.check_inputs(3, 6)
    hq = _heads_attr(ctx, "q_num_heads", True, "(LinearAttention)")
    hkv = _heads_attr(ctx, "kv_num_heads", True, "(LinearAttention)")
    if hq % hkv:
        ctx.invalid("linearattention.num_heads", f"q_num_heads ({hq}) must be a multiple of kv_num_heads ({hkv})",
                    "set q_num_heads to a multiple of kv_num_heads")
    rulename = ctx.attr("update_rule", "gated_delta")
    if isinstance(rulename, bytes):
        rulename = rulename.decode("utf-8", "replace")
    needs = _UPDATE_RULES.get(rulename)
    if needs is None:
        ctx.invalid("linearattention.update_rule", f"update_rule {rulename!r} is not one of 'linear', 'gated', "
                    "'delta', 'gated_delta'", "set update_rule to linear, gated, delta or gated_delta")
    for i, what, need in ((4, "decay", needs[0]), (5, "beta", needs[1])):
        if need and not ctx.has_input(i):
            ctx.invalid("linearattention.update_rule", f"update_rule {rulename!r} needs the {what} input (input "
                        f"{i}), the node omits it", f"give the node its {what} input")
        if not need and ctx.has_input(i):
            ctx.invalid("linearattention.update_rule", f"update_rule {rulename!r} takes no {what} input (input "
                        f"{i}), the node gives one", f"drop the {what} input or change update_rule")
    rule = "linearattention.shapes"
    q = _ranked(ctx, 0, (3,), "query")
    k = _ranked(ctx, 1, (3,), "key")
    v = _ranked(ctx, 2, (3,), "value")
    B = T = dk = dv = None
    for s, what in ((q, "query"), (k, "key"), (v, "value")):
        if s is None:
            continue
        B = s[0] if B is None else unify(ctx, B, s[0], rule, f"{what} batch {show(s[0])} must equal {show(B)}")
        T = s[1] if T is None else unify(ctx, T, s[1], rule, f"{what} length {show(s[1])} must equal {show(T)}")
    for s, n, what in ((q, hq, "query"), (k, hkv, "key"), (v, hkv, "value")):
        if s is not None:
            ctx.require(eq(E.mod(s[2], n), 0), rule, f"{what} last axis {show(s[2])} must be a multiple of {n}")
    if q is not None:
        dk = E.floordiv(q[2], hq)
    if k is not None:
        if q is not None:
            ctx.require(eq(E.mul(hq, k[2]), E.mul(hkv, q[2])), rule,
                        f"key last axis {show(k[2])} / {hkv} must equal query last axis {show(q[2])} / {hq} (d_k)")
        else:
            dk = E.floordiv(k[2], hkv)
    if v is not None:
        dv = E.floordiv(v[2], hkv)
    ps = _ranked(ctx, 3, (4,), "past_state")
    if ps is not None:
        ps = _fit(ctx, ps, [B, hkv, dk, dv], rule, "past_state", ("batch", "kv heads", "d_k", "d_v"))
        B, dk, dv = B or ps[0], dk or ps[2], dv or ps[3]
    for i, what, alts in ((4, "decay", lambda: [E.mul(hkv, dk) if dk is not None else None, hkv]),
                          (5, "beta", lambda: [hkv, 1])):
        s = _ranked(ctx, i, (3,), what)
        if s is None:
            continue
        _fit(ctx, s, [B, T, None], rule, what, ("batch", "length", ""))
        opts = [o for o in alts() if o is not None]
        if i == 4 and dk is None:
            # (d_k unknown: the per-key-dim form H_kv * d_k is some multiple of H_kv)
            ctx.require(eq(E.mod(s[2], hkv), 0), rule,
                        f"decay last axis {show(s[2])} must be kv_num_heads {hkv} or a multiple of it")
        elif s[2] not in opts:
            ctx.require(any_of(*(eq(s[2], o) for o in opts)), rule,
                        f"{what} last axis {show(s[2])} must be one of {', '.join(show(o) for o in opts)}")
    dt = ctx.dtype(0)
    hint = "linearattention"
    out_last = E.mul(hq // hkv, v[2]) if v is not None else (E.mul(hq, dv) if dv is not None else None)
    ctx.set_output(0, [_or_unknown(ctx, d, hint) for d in (B, T, out_last)], dt)
    if ctx.has_output(1):
        ctx.set_output(1, [_or_unknown(ctx, d, hint) for d in (B, hkv, dk, dv)],
                       ctx.dtype(3) if ctx.has_input(3) else dt)


# ---------------------------------------------------------------- CausalConvWithState
@register("", "CausalConvWithState", since_version=27)
def causal_conv_with_state(ctx):
    """input (B, C, L), weight (C, 1, k), bias (C), past_state (B, C, k - 1);
    output like input, present_state (B, C, k - 1)."""
    ctx.check_inputs(2, 4)
    act = ctx.attr("activation", "none")
    if isinstance(act, bytes):
        act = act.decode("utf-8", "replace")
    if act not in ("none", "silu", "swish"):
        ctx.invalid("causalconv.activation", f"activation {act!r} is not one of 'none', 'silu', 'swish'",
                    "set activation to none, silu or swish")
    rule = "causalconv.shapes"
    x = _ranked(ctx, 0, (3,), "input")
    w = _ranked(ctx, 1, (3,), "weight")
    B = x[0] if x else None
    C = x[1] if x else None
    kk = None
    if w is not None:
        w = _fit(ctx, w, [C, 1, None], rule, "weight", ("channels", "1", "kernel"))
        C, kk = C if C is not None else w[0], w[2]
        ctx.require(ge(kk, 1), rule, f"the kernel size {show(kk)} must be at least 1")
    km1 = E.sub(kk, 1) if kk is not None else None
    if ctx.has_input(2):
        _fit(ctx, _ranked(ctx, 2, (1,), "bias"), [C], rule, "bias", ("channels",))
    if ctx.has_input(3):
        p = _fit(ctx, _ranked(ctx, 3, (3,), "past_state"), [B, C, km1], rule, "past_state",
                 ("batch", "channels", "kernel - 1"))
        if p is not None:
            B, C, km1 = p
    ctx.set_output(0, x, ctx.dtype(0))
    if ctx.has_output(1):
        ctx.set_output(1, [_or_unknown(ctx, d, "causalconv") for d in (B, C, km1)], ctx.dtype(0))


# ---------------------------------------------------------------- FlexAttention (preview)
@register("ai.onnx.preview", "FlexAttention", since_version=1)
def flex_attention(ctx):
    """Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) -> Y (B, Hq, L, Ev); the modifier
    subgraphs preserve their input's shape, so they do not change Y."""
    ctx.check_inputs(3, 3)
    from .. import irtypes as ir
    for name in ("score_mod", "prob_mod"):
        a = ctx.attributes.get(name)
        if a is None or a.type != ir.AttributeType.GRAPH:
            continue
        g = a.value
        if len(g.inputs) != 1 or len(g.outputs) != 1:
            ctx.invalid("flexattention.modifier", f"{name} has {len(g.inputs)} inputs and {len(g.outputs)} outputs; "
                        "a modifier maps one rank-4 tensor to one of the same shape",
                        f"give {name} one input and one output")
        for v, what in ((g.inputs[0], "input"), (g.outputs[0], "output")):
            r = None if v.shape is None else len(v.shape)
            if r is not None and r != 4:
                ctx.invalid("flexattention.modifier", f"{name}'s {what} is declared with rank {r}, must be rank 4 "
                            "(the scores or probabilities)", f"declare {name}'s {what} as rank 4")
    rule = "flexattention.shapes"
    q = _ranked(ctx, 0, (4,), "Q")
    k = _ranked(ctx, 1, (4,), "K")
    v = _ranked(ctx, 2, (4,), "V")
    if k is not None and v is not None:
        for ax, what in ((0, "batch"), (1, "kv heads"), (2, "kv sequence length")):
            unify(ctx, k[ax], v[ax], rule, f"K and V {what}: {show(k[ax])} and {show(v[ax])} must be equal")
    if q is not None and k is not None:
        unify(ctx, q[0], k[0], rule, f"Q and K batch: {show(q[0])} and {show(k[0])} must be equal")
        unify(ctx, q[3], k[3], rule, f"Q and K head size: {show(q[3])} and {show(k[3])} must be equal")
        hq, hkv = q[1], k[1]
        if not (isinstance(hq, int) and isinstance(hkv, int) and hkv > 0 and hq % hkv == 0):
            if not isinstance(hkv, int):
                ctx.require(gt(hkv, 0), rule, f"kv heads {show(hkv)} must be positive")
            ctx.require(eq(E.mod(hq, hkv), 0), rule, f"q heads {show(hq)} must be a multiple of kv heads {show(hkv)}")
    if q is None:
        ctx.set_output(0, None, ctx.dtype(0))
        return
    ev = v[3] if v is not None else ctx.unknown_dim("flexattention_v_head")
    ctx.set_output(0, (q[0], q[1], q[2], ev), ctx.dtype(0))
