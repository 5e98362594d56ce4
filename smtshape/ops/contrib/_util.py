"""Helpers shared by the contrib rules: a remapped view of a rule context, and
small checks (1-D parameter lengths, same-shape inputs) that emit constraints."""
from __future__ import annotations

from ... import irtypes as ir

from ...printing import show
from ..common import unify
from ..elementwise import unidirectional

MS = "com.microsoft"
FLOAT = ir.DataType.FLOAT
INT32 = ir.DataType.INT32


class View:
    """``ctx`` seen through an input remapping, so a rule written for one input
    layout (Conv, Gemm, Concat, pools) serves a fused or quantized op.

    ``inputs[i]`` is the real input index that plays the role of input ``i``
    (None: absent).  ``shapes`` overrides the shape of a (virtual) input, e.g.
    an NHWC tensor seen as NCHW.  ``on_output(i, shape, dtype)`` may rewrite an
    output before it is set (NCHW back to NHWC, the output dtype) and sees the
    shape the wrapped rule computed.  Values and constants are hidden: the
    wrapped rule must not propagate values of quantized tensors.
    """

    def __init__(self, ctx, inputs, shapes=None, on_output=None):
        self._ctx = ctx
        self._map = list(inputs)
        self._shapes = dict(shapes or {})
        self._on_output = on_output
        self.outputs_seen = {}

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def _real(self, i):
        return self._map[i] if 0 <= i < len(self._map) else None

    @property
    def num_inputs(self):
        return len(self._map)

    def has_input(self, i):
        j = self._real(i)
        return j is not None and self._ctx.has_input(j)

    def shape(self, i):
        if i in self._shapes:
            return self._shapes[i]
        j = self._real(i)
        return None if j is None else self._ctx.shape(j)

    def rank(self, i):
        s = self.shape(i)
        return None if s is None else len(s)

    def dtype(self, i):
        j = self._real(i)
        return None if j is None else self._ctx.dtype(j)

    def value(self, i):
        return None

    def int_values(self, i):
        return None

    def const(self, i):
        return None

    def input(self, i):
        j = self._real(i)
        return None if j is None else self._ctx.input(j)

    def check_inputs(self, min_count, max_count=None):
        """The wrapping rule checks the real inputs."""

    def set_output(self, i, shape, dtype=None, value=None, const=None, tensor=None):
        self.outputs_seen[i] = shape
        if self._on_output is not None:
            shape, dtype = self._on_output(i, shape, dtype)
        self._ctx.set_output(i, shape, dtype)


def vector_of(ctx, i, size, rule, what, of="the hidden size"):
    """Input ``i`` (when present and its shape known) is 1-D of length ``size``."""
    if not ctx.has_input(i):
        return
    s = ctx.shape(i)
    if s is None or size is None:
        return
    if len(s) != 1:
        ctx.fail(f"{what} must be 1-D, has rank {len(s)}")
    unify(ctx, s[0], size, rule, f"{what} length {show(s[0])} must equal {of} {show(size)}")


def same_shape(ctx, a, b, rule, what_a, what_b):
    """Shapes ``a`` and ``b`` are equal (same rank, every axis equal); returns the unified shape."""
    if a is None or b is None:
        return a if a is not None else b
    if len(a) != len(b):
        ctx.fail(f"{what_b} has rank {len(b)} but {what_a} has rank {len(a)}")
    return tuple(unify(ctx, x, y, rule, f"{what_a} and {what_b} agree on axis {k}: {show(x)} == {show(y)}")
                 for k, (x, y) in enumerate(zip(a, b)))


def last_dim(ctx, s, what="input"):
    if s is None:
        return None
    if len(s) == 0:
        ctx.fail(f"{what} must have rank >= 1")
    return s[-1]


def onto(ctx, target, i, rule, what):
    """Input ``i`` broadcasts unidirectionally onto ``target`` (constraints only)."""
    if ctx.has_input(i):
        unidirectional(ctx, target, ctx.shape(i), rule, what)
