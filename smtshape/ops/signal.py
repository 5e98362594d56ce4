"""Signal processing: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow,
MelWeightMatrix.

Sizes read from runtime tensors (``dft_length``, a window's ``size``,
``frame_step``...) come from the input's known value; when the value is not
known the dim is a data symbol, never a guess.

Preconditions (the spec and ONNX's inference): a DFT signal of rank >= 2 whose
last dim is 1 (real) or 2 (complex), 1 for a one-sided forward DFT and 2 for a
one-sided inverse one; the DFT axis in [-r, -2] or [0, r - 2]; dft_length
positive; STFT's signal of rank 2 or 3 (last dim 1 or 2), a 1-D window as long
as frame_length, frame_step positive, a frame no longer than the signal.
(A 1-element dft_length / frame_step of shape [1] is read as the scalar,
as onnxruntime does.)
"""
from __future__ import annotations

from .. import irtypes as ir

from .. import expr as E
from ..constraints import any_of, eq, ge, gt
from ..printing import show
from ..registry import register


def scalar(ctx, i, what):
    """The element of a scalar (or 1-element) input ``i`` when known, else None.
    A conflict when the input is not a scalar."""
    s = ctx.shape(i)
    if s is not None and not (len(s) == 0 or (len(s) == 1 and s[0] == 1)):
        ctx.invalid(f"{ctx.op_type.lower()}.{what}", f"{ctx.op_type} {what} has shape "
                    f"({', '.join(show(d) for d in s)}): it must be a scalar", f"give {what} as a scalar")
    v = ctx.value(i)
    if v is None or len(v) != 1 or v[0] is None or isinstance(v[0], bool):
        return None
    x = v[0]
    try:
        return E.norm(x)
    except Exception:
        return None


def size_input(ctx, i, what, hint):
    """A size read from scalar input ``i``: its value (required >= 0) or a data symbol."""
    n = scalar(ctx, i, what)
    if n is None:
        return ctx.data_symbol(hint, message=f"{what} (input {i}) is known only at run time")
    if isinstance(n, int):
        if n < 0:
            ctx.invalid(f"{ctx.op_type.lower()}.{what}", f"{ctx.op_type} {what} is {n}: a size must not be negative",
                        f"give {what} a non-negative value")
        return n
    ctx.require(ge(n, 0), f"{ctx.op_type.lower()}.size", f"{what} {show(n)} must be >= 0")
    return n


def _complex_last(ctx, x, rule, need=None, why=""):
    """The last dim of a signal holds (real) or (real, imaginary): 1 or 2 (``need``: only
    that one, ``why`` says which mode asks for it)."""
    last = x[-1]
    allowed = (1, 2) if need is None else (need,)
    if isinstance(last, int):
        if last not in allowed:
            want = "1 (real) or 2 (complex)" if need is None else f"{need} ({'real' if need == 1 else 'complex'})"
            ctx.invalid(rule, f"{ctx.op_type} signal has last dim {last}: it must be {want}{why}",
                        f"give the signal a last dim of {want.split(' ')[0]}" if need else
                        "give the signal a last dim of 1 (real) or 2 (complex)")
        return
    if need is None:
        ctx.require(any_of(eq(last, 1), eq(last, 2)), rule,
                    f"the last dim of the signal ({show(last)}) must be 1 (real) or 2 (complex)")
    else:
        ctx.require(eq(last, need), rule, f"the last dim of the signal ({show(last)}) must be {need}{why}")


# ------------------------------------------------------------ DFT
def _dft(ctx, axis):
    x = ctx.shape(0)
    onesided = int(ctx.attr("onesided", 0))
    inverse = int(ctx.attr("inverse", 0))
    dtype = ctx.dtype(0)
    last = 1 if (onesided and inverse) else 2
    if x is None:
        ctx.set_output(0, None, dtype)
        return
    r = len(x)
    if r < 2:
        ctx.invalid("dft.rank", f"DFT signal has rank {r}: it needs rank >= 2 (signal axes, then 1 or 2)",
                    "give the signal a last axis of 1 (real) or 2 (complex)")
    if onesided:
        _complex_last(ctx, x, "dft.complex_dim", 2 if inverse else 1,
                      " for a one-sided inverse DFT" if inverse else " for a one-sided DFT")
    else:
        _complex_last(ctx, x, "dft.complex_dim")
    n = None
    if ctx.has_input(1):
        n = scalar(ctx, 1, "dft_length")
        if n is None:
            n = ctx.data_symbol("dft_length", message="DFT dft_length is known only at run time")
        elif isinstance(n, int) and n < 1:
            ctx.invalid("dft.dft_length", f"DFT dft_length {n} must be positive", "give dft_length a positive value")
        else:
            ctx.require(gt(n, 0), "dft.length", f"dft_length {show(n)} must be positive")
    if axis is None:
        # axis known only at run time: only the last dim is known, unless no dim changes
        if n is None and not onesided:
            ctx.set_output(0, tuple(x[:-1]) + (last,), dtype)
        elif all(isinstance(d, int) for d in x) and (n is None or isinstance(n, int)):
            # static dims: every axis the DFT can run on (0 .. r-2) gives one candidate
            # shape; an output axis is exact where all agree, else bounded by the largest
            ctx.set_output(0, _dft_any_axis(ctx, x, n, onesided, inverse, last), dtype)
        else:
            ctx.set_output(0, tuple(ctx.unknown_dim("dft_dim") for _ in x[:-1]) + (last,), dtype)
        return
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        ctx.invalid("dft.axis", f"DFT axis {axis} is out of range [-{r}, -2] U [0, {r - 2}] for a signal of rank {r} "
                    "(the last axis holds the real and imaginary parts)", f"give an axis in [-{r}, -2] or [0, {r - 2}]")
    a = axis + r if axis < 0 else axis
    d = x[a]
    if n is None:
        if onesided and inverse:
            ctx.require(ge(d, 1), "dft.irfft_length",
                        f"the one-sided inverse DFT axis {a} ({show(d)}) must be >= 1")
            n = E.mul(2, E.sub(d, 1))
        else:
            n = d
    out_len = E.add(E.floordiv(n, 2), 1) if (onesided and not inverse) else n
    out = list(x)
    out[a] = out_len
    out[-1] = last
    ctx.set_output(0, tuple(out), dtype)


@register("", "DFT", since_version=17)
def dft17(ctx):
    """Opset 17: ``axis`` is an attribute (default 1), ``dft_length`` optional input 1."""
    ctx.check_inputs(1, 2)
    _dft(ctx, int(ctx.attr("axis", 1)))


@register("", "DFT", since_version=20)
def dft20(ctx):
    """Opset 20: ``axis`` is optional input 2 (default -2)."""
    ctx.check_inputs(1, 3)
    axis = -2
    if ctx.has_input(2):
        a = scalar(ctx, 2, "axis")
        axis = a if isinstance(a, int) else None
    _dft(ctx, axis)


def _dft_any_axis(ctx, x, n, onesided, inverse, last):
    cands = []
    for a in range(len(x) - 1):
        m = n
        if m is None:
            if onesided and inverse:
                if x[a] < 1:
                    continue                    # refused on this axis
                m = 2 * (x[a] - 1)
            else:
                m = x[a]
        o = list(x)
        o[a] = m // 2 + 1 if (onesided and not inverse) else m
        o[-1] = last
        cands.append(o)
    if not cands:
        ctx.invalid("dft.irfft_length", f"DFT: no axis of the signal {list(x)} has a size >= 1, which a one-sided "
                    "inverse DFT needs", "give the signal a non-empty axis")
    out = []
    for j in range(len(x)):
        col = {c[j] for c in cands}
        out.append(col.pop() if len(col) == 1 else
                   ctx.data_symbol("dft_dim", max(col), f"DFT output axis {j}: the DFT axis is read at run time"))
    return tuple(out)


# ------------------------------------------------------------ STFT
@register("", "STFT", since_version=17)
def stft(ctx):
    """[batch, signal_length, 1|2] -> [batch, frames, bins, 2] with
    frames = floor((signal_length - frame_length) / frame_step) + 1 and
    bins = frame_length // 2 + 1 (onesided, the default) or frame_length."""
    ctx.check_inputs(2, 4)
    x = ctx.shape(0)
    dtype = ctx.dtype(0)
    onesided = int(ctx.attr("onesided", 1))
    if x is not None:
        if len(x) not in (2, 3):
            ctx.invalid("stft.rank", f"STFT signal has rank {len(x)}: it must be [batch, length] or [batch, length, "
                        "1 or 2]", "give the signal the shape [batch, length, 1] (real) or [batch, length, 2]")
        if len(x) == 3:
            _complex_last(ctx, x, "stft.complex_dim")
    step = scalar(ctx, 1, "frame_step")
    w = ctx.shape(2) if ctx.has_input(2) else None
    if w is not None and len(w) != 1:
        ctx.invalid("stft.window", f"STFT window has rank {len(w)}: it must be 1-D", "give the window as a 1-D tensor")
    fl = None
    if ctx.has_input(3):
        fl = size_input(ctx, 3, "frame_length", "frame_length")
        if w is not None:
            ctx.equal(w[0], fl, "stft.window",
                      f"window length {show(w[0])} must equal frame_length {show(fl)}")
    elif ctx.has_input(2):
        fl = w[0] if w is not None else ctx.unknown_dim("frame_length")
    elif x is not None:
        fl = x[1]
    if x is None:
        batch, length = ctx.unknown_dim("stft_batch"), None
    else:
        batch, length = x[0], x[1]
    if fl is None:
        fl = ctx.unknown_dim("frame_length")
    frames = None
    if length is not None:
        ctx.require(ge(length, fl), "stft.frame_fits",
                    f"signal length {show(length)} must be >= frame_length {show(fl)}")
        if isinstance(step, int):
            if step <= 0:
                ctx.invalid("stft.frame_step", f"STFT frame_step {step} must be positive",
                            "give frame_step a positive value")
            frames = E.add(E.floordiv(E.sub(length, fl), step), 1)
        elif step is not None:
            ctx.require(gt(step, 0), "stft.step", f"frame_step {show(step)} must be positive")
            frames = E.add(E.floordiv(E.sub(length, fl), step), 1)
        else:
            frames = ctx.data_symbol("stft_frames", upper=E.add(E.sub(length, fl), 1),
                                     message="STFT frame count: frame_step is known only at run time")
    if frames is None:
        frames = ctx.unknown_dim("stft_frames")
    bins = E.add(E.floordiv(fl, 2), 1) if onesided else fl
    ctx.set_output(0, (batch, frames, bins, 2), dtype)


# ------------------------------------------------------------ windows
def window(ctx):
    """[size] from the scalar input ``size``."""
    ctx.check_inputs(1, 1)
    n = size_input(ctx, 0, "size", "window_size")
    ctx.set_output(0, (n,), ir.DataType(int(ctx.attr("output_datatype", 1))))


for _op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    register("", _op, 17)(window)


@register("", "MelWeightMatrix", since_version=17)
def mel_weight_matrix(ctx):
    """[floor(dft_length / 2) + 1, num_mel_bins]."""
    ctx.check_inputs(5, 5)
    bins = size_input(ctx, 0, "num_mel_bins", "num_mel_bins")
    n = size_input(ctx, 1, "dft_length", "dft_length")
    for i, what in ((2, "sample_rate"), (3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        scalar(ctx, i, what)
    ctx.set_output(0, (E.add(E.floordiv(n, 2), 1), bins), ir.DataType(int(ctx.attr("output_datatype", 1))))
