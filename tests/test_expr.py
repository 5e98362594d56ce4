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
