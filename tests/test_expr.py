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


# ---------------------------------------------------------------- sums, signs and min / max without sympy's Add
import sympy  # noqa: E402

_X, _Y, _Z = E.symbol("x"), E.symbol("y"), E.symbol("z")
_V = E.value_symbol("v")


def _atoms():
    return st.sampled_from([_X, _Y, _Z, _V, E.floordiv(_X, 3), E.smin(7, _Y), E.mul(_X, _Y),
                            E.bcast(_X, _Z), sympy.Piecewise((_X, sympy.Ge(_Y, 2)), (_Z, True))])


_linear = st.builds(lambda k, terms: sum((c * t for c, t in terms), sympy.Integer(k)),
                    st.integers(-20, 20), st.lists(st.tuples(st.integers(-3, 3), _atoms()), max_size=4))
_plain_linear = st.builds(lambda k, terms: sum((c * t for c, t in terms), sympy.Integer(k)),
                          st.integers(-20, 20),
                          st.lists(st.tuples(st.integers(-3, 3), st.sampled_from([_X, _Y, _Z, _V])), max_size=4))


def _same(a, b):
    """The same term, to the last argument (not only equal): what sympy would have built."""
    a, b = E.norm(a), E.norm(b)
    assert type(a) is type(b) and (a == b) and (isinstance(a, int) or sympy.srepr(a) == sympy.srepr(b)), (a, b)


@settings(max_examples=300, deadline=None)
@given(_linear, _linear, st.integers(-4, 4))
def test_sums_built_without_flatten_are_sympys_own(a, b, k):
    """``add`` / ``sub`` / ``neg`` / ``mul`` by a number / ``total`` build a linear form
    themselves (``linear_sum``): each is the very term sympy's ``Add`` / ``Mul`` make."""
    a, b = E.norm(a), E.norm(b)
    _same(E._add.__wrapped__(a, b), E.to_sympy(a) + E.to_sympy(b))
    _same(E._sub.__wrapped__(a, b), E.to_sympy(a) - E.to_sympy(b))
    _same(E.neg(a), -E.to_sympy(a))
    _same(E._mul.__wrapped__(a, k), E.to_sympy(a) * k)
    _same(E.total([a, b, k]), sympy.Add(E.to_sympy(a), E.to_sympy(b), sympy.Integer(k)))


@settings(max_examples=300, deadline=None)
@given(_plain_linear)
def test_the_range_of_a_linear_form_is_what_sympys_assumptions_prove(e):
    """``linear_range``: ``e >= 0`` / ``e < 0`` / ``e <= 0`` provable exactly when sympy's
    assumptions prove it (``ops/values.known_sign`` reads it in their place)."""
    e = E.norm(e)
    lo, hi = E.linear_range(e)
    s = E.to_sympy(e)
    assert (lo >= 0) == (s.is_nonnegative is True), (e, lo, hi)
    assert (hi < 0) == (s.is_negative is True), (e, lo, hi)
    assert (hi <= 0) == (s.is_nonpositive is True), (e, lo, hi)
    assert (lo > 0) == (s.is_positive is True), (e, lo, hi)


@settings(max_examples=300, deadline=None)
@given(_plain_linear, _plain_linear)
def test_min_max_of_linear_forms_are_sympys_own(a, b):
    """Two linear forms over free symbols: ``smin`` / ``smax`` order them exactly when
    sympy's evaluation does, and otherwise keep the same term sympy keeps."""
    a, b = E.norm(a), E.norm(b)
    if isinstance(a, int) and isinstance(b, int) or a == b:
        return
    _same(E._min.__wrapped__(a, b), sympy.Min(E.to_sympy(a), E.to_sympy(b)))
    _same(E._max.__wrapped__(a, b), sympy.Max(E.to_sympy(a), E.to_sympy(b)))


def test_a_term_the_sum_does_not_read_falls_back_to_sympy():
    assert E.linear_sum([(sympy.Rational(1, 2) * _X, 1)]) is None
    assert E.linear_sum([(_X ** 2, 1)]) is None
    assert E.linear_range(E.floordiv(_X, 3)) is None
    _same(E.add(_X ** 2, _X), _X ** 2 + _X)
