"""Recurrent layers: LSTM, GRU, RNN (every opset).

Shapes (``layout=0``, the only layout before opset 14):
X ``[seq, batch, input]``; W ``[dirs, G*hidden, input]``; R ``[dirs, G*hidden, hidden]``;
B ``[dirs, 2*G*hidden]``; sequence_lens ``[batch]``; initial_h / initial_c
``[dirs, batch, hidden]``; P (LSTM) ``[dirs, 3*hidden]``; Y ``[seq, dirs, batch, hidden]``;
Y_h / Y_c ``[dirs, batch, hidden]``.  ``layout=1`` (opset 14+) puts batch first:
X ``[batch, seq, input]``, Y ``[batch, seq, dirs, hidden]``, initial_h / Y_h
``[batch, dirs, hidden]``.  G is 4 (LSTM), 3 (GRU), 1 (RNN); dirs is 2 for
``bidirectional``, else 1.  Y keeps the full (padded) seq length even with sequence_lens.
"""
from __future__ import annotations

from .. import expr as E
from ..constraints import gt
from ..printing import show
from ..registry import register
from .common import unify

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _direction(ctx) -> int:
    d = ctx.attr("direction", "forward")
    if isinstance(d, bytes):
        d = d.decode("utf-8", "replace")
    if d in ("forward", "reverse", "foward"):     # 'foward': GRU-1's default, a typo in the spec
        return 1
    if d == "bidirectional":
        return 2
    ctx.invalid(f"{ctx.op_type.lower()}.direction", f"direction must be forward, reverse or bidirectional, is {d!r}",
                "set direction to forward, reverse or bidirectional")


# the activation functions the spec lists (compared case-insensitively: onnxruntime runs a GRU
# with 'sigmoid', 'tanh')
_ACTIVATIONS = {"relu", "tanh", "sigmoid", "affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid",
                "elu", "softsign", "softplus"}


def _activations(ctx, nd):
    """``activations``: G_act functions per direction (LSTM 3, GRU 2, RNN 1), each one the
    spec names."""
    acts = ctx.attr("activations", None)
    if acts is None:
        return
    acts = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in acts]
    per = {"LSTM": 3, "GRU": 2, "RNN": 1}[ctx.op_type]
    low = ctx.op_type.lower()
    if len(acts) != per * nd and not (ctx.op_type == "RNN" and nd == 1 and len(acts) == 2):
        # (a forward RNN with two: onnxruntime takes the first, RNN-1's default listed two)
        ctx.invalid(f"{low}.activations", f"activations lists {len(acts)} functions; {ctx.op_type} with "
                    f"{nd} direction{'s' if nd > 1 else ''} takes {per * nd} ({per} per direction)",
                    f"give {per} activation functions per direction")
    bad = [a for a in acts if a.lower() not in _ACTIVATIONS]
    if bad:
        ctx.invalid(f"{low}.activations", f"activation {bad[0]!r} is not one of the functions the spec lists "
                    "(Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                    "Softsign, Softplus)", "name a supported activation function")


def _shape(ctx, i, rank, what):
    s = ctx.shape(i) if ctx.has_input(i) else None
    if s is not None and len(s) != rank:
        ctx.invalid(f"{ctx.op_type.lower()}.rank", f"{what} must have rank {rank}, has rank {len(s)}",
                    f"give {what} rank {rank}")
    return s


def _rnn(ctx):
    op = ctx.op_type
    g = _GATES[op]
    low = op.lower()
    ctx.check_inputs(3, 8 if op == "LSTM" else 6)
    layout = int(ctx.attr("layout", 0)) if (ctx.opset or 99) >= 14 else 0
    if layout not in (0, 1):
        ctx.invalid(f"{low}.layout", f"layout must be 0 or 1, is {layout}", "set layout to 0 or 1")
    nd = _direction(ctx)
    _activations(ctx, nd)
    x = _shape(ctx, 0, 3, "X")
    w = _shape(ctx, 1, 3, "W")
    r = _shape(ctx, 2, 3, "R")
    seq = batch = inp = None
    if x is not None:
        seq, batch, inp = (x[0], x[1], x[2]) if layout == 0 else (x[1], x[0], x[2])

    hs = ctx.attr("hidden_size", None)
    if hs is not None:
        hs = int(hs)
        if hs <= 0:
            ctx.invalid(f"{low}.hidden_size", f"hidden_size must be positive, is {hs}",
                        "set hidden_size to the number of hidden units")
    else:
        ctx.warn(f"{op} has no hidden_size attribute (onnxruntime requires it); it is taken from R")
        if r is not None:
            hs = r[2]
        elif w is not None:
            hs = E.floordiv(w[1], g)
            ctx.equal(E.mod(w[1], g), 0, f"{low}.W", f"W axis 1 ({show(w[1])}) must be {g} * hidden_size")
        else:
            hs = ctx.unknown_dim(f"{low}_hidden")

    def fits(i, dims, what):
        """Input i has shape ``dims`` (None entries: not checked); returns its canonical dims."""
        s = ctx.shape(i) if ctx.has_input(i) else None
        if s is None:
            return None
        if len(s) != len(dims):
            ctx.invalid(f"{low}.rank", f"{what} must have rank {len(dims)}, has rank {len(s)}",
                        f"give {what} rank {len(dims)}")
        out = []
        for k, (a, want) in enumerate(zip(s, dims)):
            if want is None:
                out.append(a)
                continue
            out.append(unify(ctx, want, a, f"{low}.{what}",
                             f"{what} axis {k} is {show(a)}, must be {show(want)} "
                             f"({_meaning(what, k, layout, g)})"))
        return out

    fits(1, [nd, E.mul(g, hs), inp], "W")
    fits(2, [nd, E.mul(g, hs), hs], "R")
    fits(3, [nd, E.mul(2 * g, hs)], "B")
    sl = fits(4, [batch], "sequence_lens")
    if batch is None and sl is not None:
        batch = sl[0]
    state = (lambda b: [nd, b, hs]) if layout == 0 else (lambda b: [b, nd, hs])
    for i, what in ((5, "initial_h"), (6, "initial_c")):
        if i == 6 and op != "LSTM":
            break
        got = fits(i, state(batch), what)
        if got is not None and batch is None:
            batch = got[1] if layout == 0 else got[0]
    if op == "LSTM":
        fits(7, [nd, E.mul(3, hs)], "P")
    if not isinstance(hs, int):
        ctx.require(gt(hs, 0), f"{low}.hidden", f"hidden_size ({show(hs)}) must be positive")

    dt = ctx.dtype(0)
    seq = seq if seq is not None else ctx.unknown_dim(f"{low}_seq")
    batch = batch if batch is not None else ctx.unknown_dim(f"{low}_batch")
    y = [seq, nd, batch, hs] if layout == 0 else [batch, seq, nd, hs]
    ctx.set_output(0, y, dt)
    for k in (1, 2):
        if ctx.has_output(k):
            ctx.set_output(k, state(batch), dt)


def _meaning(what, k, layout, g):
    names = {
        "W": ("num_directions", f"{g} * hidden_size", "input_size (X's last axis)"),
        "R": ("num_directions", f"{g} * hidden_size", "hidden_size"),
        "B": ("num_directions", f"{2 * g} * hidden_size"),
        "P": ("num_directions", "3 * hidden_size"),
        "sequence_lens": ("batch_size",),
    }.get(what)
    if names is None:
        names = ("num_directions", "batch_size", "hidden_size") if layout == 0 \
            else ("batch_size", "num_directions", "hidden_size")
    return names[k]


@register("", "LSTM", since_version=1)
@register("", "LSTM", since_version=7)
@register("", "LSTM", since_version=14)
@register("", "LSTM", since_version=22)
def lstm(ctx):
    _rnn(ctx)


@register("", "GRU", since_version=1)
@register("", "GRU", since_version=3)
@register("", "GRU", since_version=7)
@register("", "GRU", since_version=14)
@register("", "GRU", since_version=22)
def gru(ctx):
    _rnn(ctx)


@register("", "RNN", since_version=1)
@register("", "RNN", since_version=7)
@register("", "RNN", since_version=14)
@register("", "RNN", since_version=22)
def rnn(ctx):
    _rnn(ctx)
