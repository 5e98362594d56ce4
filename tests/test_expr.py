"""The term language: integer-exact division, broadcast, evaluation."""
from hypothesis import given, settings, strategies as st

from smtshape import expr as E
from smtshape.printing import show
from smtshape.parse import parse_expr

x, y = E.symbol("x"), E.symbol("y")


@settings(max_examples=200, deadline=None)
@given(a=st.integers(-50, 50), b=st.integers(1, 9), cx=st.integers(-4, 4), xv=st.integers(0, 40))
def test_floordiv_ceildiv_mod_match_python(a, b, cx, xv):
    """Symbolic FloorDiv/CeilDiv/Mod of (cx*b*x + a) by b evaluate like Python's // and %."""
    e = E.add(E.mul(cx * b, x), a)
    n = cx * b * xv + a
    assert E.evaluate(E.floordiv(e, b), {"x": xv}) == n // b
    assert E.evaluate(E.ceildiv(e, b), {"x": xv}) == -((-n) // b)
    assert E.evaluate(E.mod(e, b), {"x": xv}) == n % b


def test_floordiv_pulls_out_exact_multiples():
    assert E.floordiv(E.add(E.mul(2, x), 3), 2) == E.add(x, 1)
    assert E.mod(E.mul(4, x), 2) == 0
    assert E.floordiv(E.floordiv(x, 2), 3) == E.floordiv(x, 6)
    # not over rationals: no floor(x/2) object
    assert isinstance(E.floordiv(x, 2), E.FloorDiv)


def test_bcast_semantics():
    assert E.bcast(x, 1) == x
    assert E.bcast(1, x) == x
    assert E.bcast(x, x) == x
    assert E.bcast(x, 5) == 5          # x must be 5 or 1: the result is 5 either way
    b = E.bcast(x, y)
    # exact: x when y == 1 else y — never max(x, y) (wrong at x = 0, y = 1)
    assert E.evaluate(b, {"x": 0, "y": 1}) == 0
    assert E.evaluate(b, {"x": 1, "y": 7}) == 7
    assert E.evaluate(b, {"x": 7, "y": 7}) == 7


def test_print_parse_round_trip_of_every_construct():
    for e in [E.floordiv(E.add(x, 5), 2), E.ceildiv(x, 3), E.mod(y, 4), E.smin(x, 128),
              E.smax(E.sub(x, 1), 0), E.bcast(x, y), E.mul(x, y), E.add(E.mul(3, x), -2)]:
        back = parse_expr(show(e))
        for xv in range(0, 9):
            env = {"x": xv, "y": 9 - xv}
            assert E.evaluate(back, env) == E.evaluate(e, env), show(e)


def test_ints_stay_python_ints():
    assert type(E.add(2, 3)) is int
    assert type(E.floordiv(7, 2)) is int and E.floordiv(7, 2) == 3
    assert type(E.norm(E.sub(E.add(x, 2), x))) is int


def _big(x, y, k):
    """A nested clamp over two symbols with more than ``E._EVAL_MINMAX_OPS`` operations
    (the chained Slices' terms), shifted by ``k``."""
    t = E.add(x, k)
    for j in range(1, 8):
        t = E.smax(E.sub(E.floordiv(E.add(t, y), 2), j), E.sub(E.mul(x, j), y))
    return t


@settings(max_examples=60, deadline=None)
@given(st.integers(-3, 3), st.integers(0, 40), st.integers(0, 40))
def test_min_max_of_big_terms_keep_their_value(k, xv, yv):
    """Past ``E._EVAL_MINMAX_OPS`` a min / max is built without sympy's evaluation (it
    factored every pair of terms: seconds on fcos's chained Slices); its value at every
    point is still the min / max of its arguments, and two terms that differ by a number
    still give the smaller / larger one itself."""
    x, y = E.symbol("x"), E.symbol("y")
    a, b = _big(x, y, 0), _big(y, x, k)
    assert E.size(a) + E.size(b) > E._EVAL_MINMAX_OPS
    env = {"x": xv, "y": yv}
    va, vb = E.eval_int(a, env), E.eval_int(b, env)
    assert E.eval_int(E.smin(a, b), env) == min(va, vb)
    assert E.eval_int(E.smax(a, b), env) == max(va, vb)
    c = E.add(a, k)                          # differs from a by the number k
    assert E.smin(a, c) == (a if k >= 0 else c) and E.smax(a, c) == (c if k >= 0 else a)
