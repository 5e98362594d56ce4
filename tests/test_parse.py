"""Tests of smtshape.parse: the safe expression / relation / constraint parser."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtshape import expr as E
from smtshape import printing
from smtshape.constraints import And, Not, Or, Rel
from smtshape.errors import BadInput
from smtshape.parse import (
    MAX_DEPTH,
    ParseError,
    load_constraints,
    parse_constraints,
    parse_expr,
    parse_relation,
)

ROOT = Path(__file__).resolve().parent.parent
a, b, c = E.symbol("a"), E.symbol("b"), E.symbol("c")
NAMES = ("a", "b", "c")


def ev(e, **env):
    v = E.evaluate(e, env)
    assert v is not None, f"{e!r} did not evaluate at {env}"
    return v


def holds(rel, **env) -> bool:
    """Truth of a parsed relation at a binding (via const_value after substitution)."""
    subst = rel.map(lambda x: E.evaluate(x, env))
    v = subst.const_value()
    assert v is not None
    return v


# ------------------------------------------------------------- round trip

_leaf = st.one_of(st.sampled_from(NAMES).map(E.symbol), st.integers(-20, 20))


def _extend(children):
    small = st.integers(-5, 5)
    pos = st.integers(1, 7)
    return st.one_of(
        st.tuples(children, children).map(lambda t: E.add(*t)),
        st.tuples(children, children).map(lambda t: E.sub(*t)),
        st.tuples(children, small).map(lambda t: E.mul(*t)),
        st.tuples(children, st.sampled_from(NAMES).map(E.symbol)).map(lambda t: E.mul(*t)),
        st.tuples(children, pos).map(lambda t: E.floordiv(*t)),
        st.tuples(children, pos).map(lambda t: E.ceildiv(*t)),
        st.tuples(children, pos).map(lambda t: E.mod(*t)),
        st.tuples(children, children).map(lambda t: E.smin(*t)),
        st.tuples(children, children).map(lambda t: E.smax(*t)),
    )


exprs = st.recursive(_leaf, _extend, max_leaves=10)
bindings = st.fixed_dictionaries({n: st.integers(0, 60) for n in NAMES})


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(exprs, st.lists(bindings, min_size=1, max_size=4))
def test_round_trip_show_parse(e, envs):
    text = printing.show(e)
    back = parse_expr(text)
    for env in envs + [{"a": 0, "b": 0, "c": 0}, {"a": 1, "b": 2, "c": 3}]:
        assert ev(back, **env) == ev(e, **env), (text, env)
    # printing is stable after one round trip (sympy may simplify a term it was not
    # asked to simplify at first, e.g. min(b, b - a) -> b - a for a >= 0)
    again = printing.show(back)
    assert printing.show(parse_expr(again)) == again


@pytest.mark.parametrize("name", ["and", "or", "not", "min", "if", "bcast", "x-1", "1x", "a b"])
def test_a_name_that_is_a_keyword_or_unusual_is_printed_quoted_and_read_back(name):
    """A dim named ``and`` was printed ``and + 1``, which does not parse."""
    e = E.add(E.symbol(name), 1)
    back = parse_expr(printing.show(e))
    assert back == e and printing.show(back) == printing.show(e)


def test_round_trip_if_and_bcast():
    pw = sympy.Piecewise((a, sympy.Eq(b, 1)), (b + 1, sympy.Gt(c, 2)), (c, True))
    back = parse_expr(printing.show(pw))
    for av in range(3):
        for bv in range(3):
            for cv in range(4):
                env = dict(a=av, b=bv, c=cv)
                assert ev(back, **env) == ev(pw, **env)
    bc = E.bcast(a, b)
    assert parse_expr(printing.show(bc)) == bc
    assert parse_expr("bcast(a, 1)") == a
    assert parse_expr("bcast(1, b)") == b


# ------------------------------------------------------------- expressions

def test_literals_and_names():
    assert parse_expr("42") == 42 and type(parse_expr("42")) is int
    assert parse_expr("  7  ") == 7
    assert parse_expr("batch") == E.symbol("batch")
    assert parse_expr("_x1") == E.symbol("_x1")
    assert parse_expr('"past seq" + 1') == E.add(E.symbol("past seq"), 1)
    assert parse_expr(r'"a\"b"') == E.symbol('a"b')
    assert parse_expr("9" * 30) == int("9" * 30)


def test_precedence_mul_over_add():
    e = parse_expr("a + b * c")
    assert ev(e, a=1, b=2, c=3) == 7          # (a + b) * c would be 9
    assert e == E.add(a, E.mul(b, c))


def test_unary_minus_binds_tighter_than_floordiv():
    e = parse_expr("-a // 2")
    assert e == E.floordiv(E.neg(a), 2)
    assert ev(e, a=3) == -2                   # -(a // 2) would be -1
    assert ev(parse_expr("-(a // 2)"), a=3) == -1


def test_left_associativity():
    assert ev(parse_expr("a - b - c"), a=10, b=3, c=2) == 5       # not 9
    assert ev(parse_expr("a // b // c"), a=100, b=3, c=4) == 8    # not 100 // 0
    assert ev(parse_expr("a // 2 * 3"), a=7) == 9                 # not 7 // 6 == 1
    assert ev(parse_expr("a % 5 * 2"), a=7) == 4                  # not 7 % 10 == 7
    assert ev(parse_expr("a * b % 5"), a=3, b=4) == 2             # not 3 * 4 == 12


def test_power_and_signs():
    assert parse_expr("2 ** 10") == 1024
    assert parse_expr("-2 ** 2") == -4                 # -(2**2), as in Python
    assert parse_expr("(-2) ** 2") == 4
    assert parse_expr("a ** 0") == 1
    assert ev(parse_expr("a ** 3 + 1"), a=2) == 9
    assert ev(parse_expr("2 * a ** 2"), a=3) == 18    # (2a)**2 would be 36
    assert parse_expr("- - a") == a
    assert parse_expr("+a") == a
    assert ev(parse_expr("a - -b"), a=1, b=2) == 3
    assert ev(parse_expr("a * -b"), a=2, b=3) == -6


def test_functions():
    assert ev(parse_expr("min(a, b, 3)"), a=5, b=4) == 3
    assert ev(parse_expr("max(a, b, 3)"), a=5, b=4) == 5
    assert parse_expr("min(a)") == a
    assert ev(parse_expr("floordiv(a, 4)"), a=7) == 1
    assert ev(parse_expr("ceildiv(a, 4)"), a=7) == 2
    assert ev(parse_expr("ceildiv(a, 4)"), a=8) == 2
    assert ev(parse_expr("mod(a, 4)"), a=7) == 3
    assert parse_expr("floordiv(a, 4)") == E.floordiv(a, 4)
    assert parse_expr("ceildiv(a, 4)") == E.ceildiv(a, 4)
    assert parse_expr("a % 4") == E.mod(a, 4)
    assert ev(parse_expr("(-7) // 2"), ) == -4 and parse_expr("(-7) % 3") == 2
    # names that look like functions are plain names when not called
    assert parse_expr("min + 1") == E.add(E.symbol("min"), 1)


def test_if_builds_piecewise():
    e = parse_expr("if(a == 1, b, a)")
    assert isinstance(e, sympy.Piecewise)
    assert ev(e, a=1, b=9) == 9 and ev(e, a=3, b=9) == 3
    e = parse_expr("if(a >= 2 and not (b < 1), 10, 20)")
    assert ev(e, a=2, b=1) == 10 and ev(e, a=2, b=0) == 20 and ev(e, a=1, b=5) == 20
    e = parse_expr("if(a < 1 or a > 5, 1, 0)")
    assert [ev(e, a=x) for x in (0, 1, 5, 6)] == [1, 0, 0, 1]
    assert parse_expr("if(1 == 1, a, b)") == a
    assert parse_expr("if(1 == 2, a, b)") == b


def test_symbol_callback():
    seen = []

    def sym(name):
        seen.append(name)
        return E.value_symbol("v_" + name)

    e = parse_expr("x + y * x", symbol=sym)
    assert seen == ["x", "y", "x"]
    assert E.free_symbols(e) == {E.value_symbol("v_x"), E.value_symbol("v_y")}
    # a callback may bind names to constants, and may refuse names
    assert parse_expr("n * 2", symbol=lambda n: 21) == 42

    def strict(name):
        raise KeyError(name)

    with pytest.raises(ParseError, match="unknown name 'zz'"):
        parse_expr("1 + zz", symbol=strict)


# ------------------------------------------------------------- relations

def test_relation_operators():
    for op in ("==", "!=", "<=", "<", ">=", ">"):
        assert parse_relation(f"a {op} b + 1") == Rel(op, a, E.add(b, 1))
    assert parse_relation("a = 3") == Rel("==", a, 3)
    assert parse_relation("a + b == 1024") == Rel("==", E.add(a, b), 1024)


def test_chains():
    r = parse_relation("1 <= batch <= 64")
    batch = E.symbol("batch")
    assert r == And((Rel("<=", 1, batch), Rel("<=", batch, 64)))
    r = parse_relation("0 < a < b <= 10")
    assert r == And((Rel("<", 0, a), Rel("<", a, b), Rel("<=", b, 10)))
    assert holds(r, a=1, b=2) and not holds(r, a=3, b=2)


def test_boolean_precedence():
    r = parse_relation("a == 1 or b == 1 and c == 1")
    assert r == Or((Rel("==", a, 1), And((Rel("==", b, 1), Rel("==", c, 1)))))
    r = parse_relation("(a == 1 or b == 1) and c == 1")
    assert r == And((Or((Rel("==", a, 1), Rel("==", b, 1))), Rel("==", c, 1)))
    r = parse_relation("not a == 1 and b == 2")
    assert r == And((Not(Rel("==", a, 1)), Rel("==", b, 2)))
    assert parse_relation("not (a == 1 and b == 2)") == Not(And((Rel("==", a, 1), Rel("==", b, 2))))
    assert parse_relation("not not a < b") == Rel("<", a, b)
    r = parse_relation("a == b or a == 1 or b == 1")
    assert r == Or((Rel("==", a, b), Rel("==", a, 1), Rel("==", b, 1)))


def test_parenthesised_arithmetic_in_relations():
    r = parse_relation("(a + b) * 2 <= c")
    assert r == Rel("<=", E.mul(E.add(a, b), 2), c)
    assert parse_relation("((a < b))") == Rel("<", a, b)
    assert parse_relation("((a) + 1) < (b)") == Rel("<", E.add(a, 1), b)


# ------------------------------------------------------------- errors

def _err(text, *fragments, fn=parse_expr):
    with pytest.raises(ParseError) as info:
        fn(text)
    msg = str(info.value)
    for f in fragments:
        assert f in msg, (f, msg)
    return info.value


def test_parse_error_is_bad_input_and_value_error():
    e = _err("a +")
    assert isinstance(e, BadInput) and isinstance(e, ValueError)
    assert e.column == 4 and e.position == 3


def test_unbalanced_parens():
    _err("(a + b", "')'", "column 1", "end of input")
    e = _err("a + b)", "unbalanced ')'")
    assert e.column == 6
    _err("min(a, b", "')'")
    _err("()", "unexpected ')'")


def test_single_slash():
    e = _err("a / 2", "//", "floor division")
    assert e.column == 3


def test_unknown_function_and_bad_calls():
    _err("foo(a)", "unknown function 'foo'")
    _err("floordiv(a)", "floordiv() takes 2 arguments, got 1")
    _err("if(a, 1, 2)", "relation")
    _err("min()", "at least one")
    _err("min(a, b,)", "unexpected ')'")


def test_limits_on_literals_and_powers():
    _err("1" * 31, "31 digits", "30")
    _err("a ** 65", "exponent 65")
    _err("a ** b", "integer literal")
    _err("a ** -1", "negative exponent")
    _err("a ** 2 ** 2", "chained")
    _err("((9 ** 64) ** 64) ** 64", "too large")
    _err("((a ** 8) ** 8) ** 2", "too large")


def test_division_by_zero_and_negative_divisors():
    _err("a // 0", "division by zero")
    _err("5 % 0", "division by zero")
    _err("ceildiv(a, 0)", "division by zero")
    _err("a // -2", "positive")


def test_deep_nesting_is_a_parse_error_not_recursion():
    ok = "(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH
    assert parse_expr(ok) == a
    _err("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1), "nested too deeply")
    _err("min(" * 300 + "a" + ")" * 300, "nested too deeply")
    # 100000 parens: refused (too long / too many tokens), never RecursionError
    for text in ("(" * 100000, "(" * 100000 + "a" + ")" * 100000,
                 "(" * 5000 + "a" + ")" * 5000, "min(" * 3000 + "a" + ")" * 3000):
        with pytest.raises(ParseError):
            parse_expr(text)
    # long runs of prefix operators are folded without recursion
    assert parse_expr("-" * 9001 + "a") == E.neg(a)
    assert parse_relation("not " * 3000 + "a < b") == Rel("<", a, b)
    assert parse_relation("not " * 3001 + "a < b") == Not(Rel("<", a, b))


def test_too_long_and_too_many_tokens():
    _err("a" * 100_001, "too long")
    _err("+".join(["a"] * 6000), "tokens")


def test_code_injection_is_rejected(tmp_path):
    target = tmp_path / "pwned"
    pre_existing = os.path.exists("/tmp/pwned")
    for text in (f"__import__('os').system('touch {target}')",
                 "__import__('os').system('touch /tmp/pwned')",
                 f'__import__("os").system("touch {target}")',
                 "exec(1)", "eval(a)", "a.__class__", "lambda: 1", "[a]"):
        with pytest.raises(ParseError):
            parse_expr(text)
        with pytest.raises(ParseError):
            parse_relation(text)
    _err(f'__import__("os")', "unknown function '__import__'")
    assert not target.exists()
    if not pre_existing:
        assert not os.path.exists("/tmp/pwned")


def test_empty_and_type_errors():
    _err("", "empty")
    _err("   \t ", "empty")
    _err("a <", "end of input")
    _err("a b", "unexpected name 'b'")
    _err("a < b", "found a relation")
    _err("a + b", "expected a relation", fn=parse_relation)
    _err("(a < b) + 1", "found a relation")
    _err("(a < b) < c", "found a relation", fn=parse_relation)
    _err("a + not b", "'not' cannot appear here")
    _err("2x", "followed by a name")
    _err("1.5", "only integers")
    _err("a & b", "'and'")
    _err("é + 1", "U+00E9")
    _err('"open', "unterminated")
    _err('""', "empty quoted name")
    _err("bcast(2, 3)", "do not broadcast")
    with pytest.raises(ParseError):
        parse_expr(None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab01 ()+-*/%<=>!,\"#mixnotd_", max_size=40))
def test_fuzz_only_parse_errors(text):
    for fn in (parse_expr, parse_relation):
        try:
            fn(text)
        except ParseError:
            pass


# ------------------------------------------------------------- constraint files

def test_parse_constraints_comments_and_lines():
    text = (
        "# header comment\n"
        "\n"
        "1 <= batch <= 64   # trailing comment\n"
        "   \n"
        "seq % 8 == 0\r\n"
        '"odd # name" >= 1  # the # inside quotes is part of the name\n'
        "    # indented comment\n"
    )
    out = parse_constraints(text, source="t.constraints")
    assert [(n, s) for n, s, _ in out] == [
        (3, "1 <= batch <= 64"),
        (5, "seq % 8 == 0"),
        (6, '"odd # name" >= 1'),
    ]
    assert out[1][2] == Rel("==", E.mod(E.symbol("seq"), 8), 0)
    assert out[2][2] == Rel(">=", E.symbol("odd # name"), 1)
    assert parse_constraints("") == [] and parse_constraints("# only\n\n") == []


def test_parse_constraints_error_names_source_line_col():
    text = "a <= 3\n# fine\n  b // / 2 == 1\n"
    with pytest.raises(ParseError) as info:
        parse_constraints(text, source="my.constraints")
    msg = str(info.value)
    assert msg.startswith("my.constraints:3:8: ")
    assert "//" in msg
    assert info.value.line == 3 and info.value.column == 8
    with pytest.raises(ParseError, match=r"^<string>:2:1: .*expected a relation"):
        parse_constraints("a == 1\nb + 1  # not a relation\n")


def test_example_files_parse():
    tr = load_constraints(ROOT / "constraints" / "transformer.constraints")
    batch, seq = E.symbol("batch"), E.symbol("seq")
    rels = [r for _, _, r in tr]
    assert And((Rel("<=", 1, batch), Rel("<=", batch, 64))) in rels
    assert Rel("==", E.mod(seq, 8), 0) in rels
    assert any(r == And((Rel("<=", 1, seq), Rel("<=", seq, 4096))) for r in rels)

    vi = load_constraints(str(ROOT / "constraints" / "vision.constraints"))
    h, w = E.symbol("height"), E.symbol("width")
    rels = [r for _, _, r in vi]
    assert Rel("==", E.symbol("batch"), 1) in rels
    assert Rel("==", w, h) in rels
    assert Rel("==", E.mod(h, 32), 0) in rels
    assert And((Rel("<=", 32, h), Rel("<=", h, 1024))) in rels


def test_load_constraints_errors(tmp_path):
    missing = tmp_path / "nope.constraints"
    with pytest.raises(ParseError, match="does not exist") as info:
        load_constraints(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(ParseError, match="directory"):
        load_constraints(tmp_path)
    bad = tmp_path / "bad.constraints"
    bad.write_bytes(b"a <= 3\nb == \xff\xfe\n")
    with pytest.raises(ParseError, match="not UTF-8") as info:
        load_constraints(bad)
    assert f"{bad}:2" in str(info.value)
    good = tmp_path / "good.constraints"
    good.write_bytes("\ufeffx >= 2 # bom is fine\n".encode("utf-8"))
    assert load_constraints(good) == [(1, "x >= 2", Rel(">=", E.symbol("x"), 2))]
    broken = tmp_path / "broken.constraints"
    broken.write_text("x >= 2\nfoo(x) == 1\n")
    with pytest.raises(ParseError, match=rf"^{str(broken)}:2:1: unknown function 'foo'"):
        load_constraints(broken)
