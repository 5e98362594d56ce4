"""Value helpers the shape-family rules share (``shape``, ``reshape``, ``slice``,
``concat``, ``expand``, and Gather in ``indexing``): small integer tensors carry their
elements (``ctx.value``) as dim expressions, and these read them (``ints_of``,
``index_vector``, ``target_dims``), lay them out as numpy object arrays and back
(``shaped_value``, ``obj_array``, ``flat_values``), give the sign of a dim expression (``known_sign``,
``sign_of``, ``sign_cases``; the split as a term is ``expr.by_sign``: its one home for the rules) and print them
(``shown``, ``shape_str``).

Conventions: ``BIG`` is the magnitude from which a Slice/Shape index means
"to the end" (no tensor dim reaches 2**62 elements; ONNX dims are int64).
"""
from __future__ import annotations

import math

from ..lazy import numpy as np

from .. import expr as E
from ..constraints import ge, lt
from ..context import MAX_VALUE_ELEMENTS, element_kind
from ..printing import show
from ..store import Verdict


BIG = 2 ** 62


def shown(e) -> str:
    return show(e) if not isinstance(e, bool) else str(int(e))


def is_expr(v) -> bool:
    """An int or a symbolic integer element (not None, not a bool): context.element_kind."""
    return element_kind(v) == "int"


# ---------------------------------------------------------------- the sign of a dim expression
# The one home of "is this dim expression >= 0 or < 0" for the rules: what is known without
# a question (``known_sign``), what the store decides (``sign_of``), and the two splits on
# a sign known only at run time (``sign_cases`` as relations, ``expr.by_sign`` as a term).
# Two questions near it are not this one: ``numeric.nonneg`` (an element value, possibly a
# fraction: numeric's own bounds come before a question, asked for integers only) and
# ``bounds.py`` (an upper bound's proof after the walk: intervals only, never a question).

def known_sign(e) -> str | None:
    """'nonneg' / 'neg' from the number, a linear form's exact range (``expr.linear_range``)
    or sympy's assumptions alone (no question asked), else None."""
    r = E.linear_range(e)           # (a linear form's sign without sympy's assumptions)
    if r is not None:
        return "nonneg" if r[0] >= 0 else "neg" if r[1] < 0 else None
    if e.is_nonnegative is True:
        return "nonneg"
    if e.is_negative is True:
        return "neg"
    return None


def sign_of(ctx, e) -> str | None:
    """'nonneg' / 'neg' when provable (``known_sign``, then ``ctx.decide(e >= 0)``), else None."""
    s = known_sign(e)
    if s is not None:
        return s
    v = ctx.decide(ge(e, 0))
    if v is Verdict.PROVEN:
        return "nonneg"
    if v is Verdict.REFUTED:
        return "neg"
    return None


def sign_cases(x) -> list:
    """The split on the sign of ``x``: ``[(x >= 0, "nonneg"), (x < 0, "neg")]``; an int is
    one case with no condition, ``[(None, its sign)]``."""
    if isinstance(x, int):
        return [(None, known_sign(x))]
    return [(ge(x, 0), "nonneg"), (lt(x, 0), "neg")]


def shaped_value(ctx, i):
    """Input ``i``'s known value (flat, row-major) when its shape is static and holds that
    many elements, else None: what ``obj_array`` lays out, and what a rule reading a 1-D
    value picks from in Python without numpy."""
    v = ctx.value(i)
    s = ctx.shape(i)
    if v is None or s is None or not all(isinstance(d, int) for d in s) or math.prod(s) != len(v):
        return None
    return v


def obj_array(ctx, i):
    """Input ``i``'s known value as a numpy object array of its static shape, or None."""
    v = shaped_value(ctx, i)
    if v is None:
        return None
    s = ctx.shape(i)
    arr = np.empty(len(v), dtype=object)
    arr[:] = list(v)
    return arr.reshape(s)


def flat_values(arr):
    """Flattened tuple of an object array, None when too big."""
    if arr is not None and not isinstance(arr, np.ndarray):
        return (arr,)      # numpy hands back a 0-d selection as the element itself
    if arr is None or arr.size > MAX_VALUE_ELEMENTS:
        return None
    return tuple(arr.reshape(-1).tolist())


def ints_of(ctx, i, what: str):
    """All elements of input ``i`` as Python ints, None when any is unknown/symbolic."""
    v = ctx.value(i)
    if v is None:
        t = ctx.input(i)
        if t is None or t.shape is None or not all(isinstance(d, int) for d in t.shape) \
                or math.prod(t.shape) > MAX_VALUE_ELEMENTS:
            return None         # never read a large constant into a Python list
        c = ctx.const(i)
        if c is not None and c.dtype.kind in "iu":
            return [int(x) for x in c.reshape(-1)]
        return None
    if any(not isinstance(x, int) or isinstance(x, bool) for x in v):
        return None
    return list(v)


def vector_len(ctx, i):
    """Static length of the 1-D input ``i`` or None."""
    s = ctx.shape(i)
    if s is not None and len(s) == 1 and isinstance(s[0], int):
        # longer than any rank: unknown (not one data symbol per element)
        return s[0] if s[0] <= MAX_VALUE_ELEMENTS else None
    if s is not None and len(s) == 0:
        return 1
    return None


def shape_str(s):
    return "[" + ", ".join("?" if d is None else shown(d) for d in s) + "]"


# ---------------------------------------------------------------- shape inputs (ConstantOfShape, Reshape, Expand)

def target_dims(ctx, i, what: str, allow_neg=False):
    """Dims of a shape given as the value of 1-D input ``i``: known elements as
    they are, unknown ones as data symbols; None when even the length is unknown."""
    v = ctx.value(i)
    if v is None:
        n = vector_len(ctx, i)
        if n is None:
            return None
        return [None] * n
    return list(v)


def shape_input_rank(ctx, i, rule, op, what="shape"):
    """A shape input (Reshape, ConstantOfShape) is 1-D: a conflict otherwise."""
    r = ctx.rank(i)
    if r is not None and r != 1:
        ctx.invalid(rule, f"{op}'s {what} input has rank {r} (shape {shape_str(ctx.shape(i))}); it must be a 1-D "
                    "tensor of sizes", f"give {op} a 1-D {what} tensor")


def index_vector(ctx, i):
    """Elements of an index vector input: list (elements may be None), or None."""
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is not None:
        return [x if is_expr(x) else None for x in v]
    n = vector_len(ctx, i)
    return None if n is None else [None] * n
