"""One home for Z3 (smtshape/store/solver.py) and one term translation (z3bridge.py).

Every solver the package makes comes from the home (its own context, the watchdog, the
shared budget): no other module makes a Z3 solver, context or term translation.  The
SMT-LIB text and the Z3 terms are made by one translation, so they mean the same,
division and modulo by a negative or zero divisor included."""
import pathlib
import re

import sympy
import z3

from smtshape import expr as E
from smtshape import z3bridge
from smtshape.constraints import And, Not, any_of, eq, ge, le, ne

PKG = pathlib.Path(__file__).resolve().parent.parent / "smtshape"
HOME = PKG / "store" / "solver.py"


def test_every_solver_and_context_is_made_in_the_z3_home():
    made = re.compile(r"\bz3\.(Solver|SolverFor|SimpleSolver|Context|Optimize)\(|\bZ3Terms\(")
    where = {}
    for p in sorted(PKG.rglob("*.py")):
        for k, line in enumerate(p.read_text().splitlines(), 1):
            if made.search(line) and not line.lstrip().startswith(("#", "class ")):
                where.setdefault(p.relative_to(PKG.parent).as_posix(), []).append(k)
    assert set(where) == {HOME.relative_to(PKG.parent).as_posix()}, where


def test_z3_terms_and_smtlib_text_are_made_by_one_translation():
    for cls in (z3bridge.Z3Terms, z3bridge.SmtLib):
        assert issubclass(cls, z3bridge.Translation)
        for meaning in ("term", "_term", "cond", "relation", "_floordiv"):
            assert meaning not in vars(cls), f"{cls.__name__} re-implements {meaning}"


A, B, C = E.symbol("a"), E.symbol("b"), E.symbol("c")
X = sympy.Symbol("x", integer=True)      # an element value: any sign, so divisors can be negative or 0
RELATIONS = [
    eq(E.floordiv(A, X), C), eq(E.mod(A, X), C), eq(E.ceildiv(A, X), C), eq(E.floordiv(A, 4), C),
    eq(E.mod(A, 3), C), eq(E.ceildiv(A, 7), C), eq(E.Bcast(A, B), C), eq(E.smin(A, B), C),
    eq(E.smax(A, 5), C), eq(sympy.Min(A, B, C), 2), le(A ** 3, E.mul(B, C)), ge(E.sub(A, 7), E.mul(-3, B)),
    eq(sympy.Piecewise((A, sympy.Eq(B, 0)), (B, sympy.Ge(A, B) & sympy.Ne(C, 1)), (C, True)), 3),
    any_of(eq(A, B), le(A, 1)), And((ne(A, B), ge(C, 2))), Not(eq(A, C)),
]


def test_smtlib_text_means_what_the_z3_terms_mean():
    for r in RELATIONS:
        terms, text = z3bridge.Z3Terms(), z3bridge.SmtLib()
        f, smt = terms.relation(r), text.relation(r)
        decls = "".join(f"(declare-fun {q} () Int)" for q in text.names.values())
        parsed = z3.parse_smt2_string(decls + f"(assert {smt})")[0]
        renamed = z3.substitute(parsed, *[(z3.Int(q.strip("|")), terms.var(n)) for n, q in text.names.items()])
        s = z3.Solver()
        s.add(renamed != f)
        assert s.check() == z3.unsat, (r, smt)
