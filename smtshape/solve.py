"""Solving a dim: from the canonical expression a rule left to a ``Dim`` with its
exactness.

``DimSolver(store).dim_of(e)``: canonical form; size-capped aliases put back while
the expression stays small (``_expand_aliases``); ``Bcast`` / ``Min`` / ``Max`` /
``Piecewise`` atoms the constraints decide resolved (``_upgrade``, optional solver
questions from the shared budget, skipped for groups only broadcasts tie); a forced
static value where residual constraints touch the symbols; then the class: only
input symbols (and aliases over them) -> EXACT; data symbols with an upper bound over
input symbols in a monotone position -> UPPER_BOUND (``bounds.upper_bound_over``);
otherwise UNKNOWN.  Each distinct canonical expression is solved once per solver.

Below the result and the rules: ``Result`` solves its shapes with one, annotations'
messages with a throwaway one, and control-flow rules pick Piecewise branches with
``decide_piecewise``.
"""
from __future__ import annotations

from .lazy import sympy

from . import expr as E
from .constraints import eq, ge, le
from .dim import Dim, Exactness
from .store import Verdict


class DimSolver:
    def __init__(self, store):
        self.store = store
        self.dims: dict = {}             # canonical expression -> its Dim
        self._atom_picks: dict = {}      # Bcast / Min / Max / Piecewise atom -> what it resolved to, or None
        self._input_set = None           # (number of symbols, the input symbols): _inputs
        self._closures: dict = {}        # (aliases, canon epoch) -> _definitions' answer

    def _inputs(self) -> set:
        """The input symbols (remade when the store has declared more symbols)."""
        n = len(self.store.symbols)
        if self._input_set is None or self._input_set[0] != n:
            self._input_set = (n, {i.symbol for i in self.store.input_symbols()})
        return self._input_set[1]

    def dim_of(self, e) -> Dim:
        st = self.store
        c = st.canon(e)
        hit = self.dims.get(c)
        if hit is not None:
            return hit
        d = self._solve_dim(c)
        self.dims[c] = d
        return d

    def _solve_dim(self, c) -> Dim:
        st = self.store
        if isinstance(c, int):
            return Dim(c, Exactness.EXACT)
        c = self._expand_aliases(c)
        if isinstance(c, int):
            return Dim(c, Exactness.EXACT)
        defs, def_leaves = self._definitions(c)
        leaves = (E.free_symbols(c) - defs.keys()) | def_leaves
        quiet = st.broadcast_only(leaves)       # nothing to upgrade (see Store.broadcast_only)
        if not quiet:
            c = self._upgrade(c)
            if isinstance(c, int):
                return Dim(c, Exactness.EXACT)
        data = leaves - self._inputs()
        if not quiet and st.has_residual_on(leaves):
            v = st.static_value(c, optional=True)
            if v is not None:
                return Dim(v, Exactness.EXACT)
        pairs = tuple(defs.items())
        if not data:
            return Dim(c, Exactness.EXACT, definitions=pairs)
        bound = self._upper_bound(c)
        if bound is not None:
            return Dim(c, Exactness.UPPER_BOUND, bound)
        return Dim(c, Exactness.UNKNOWN)

    def _expand_aliases(self, c):
        """Put back the expressions that size-capped alias symbols stand for, as long
        as the result stays small (a chain of capped terms can be exponential when
        expanded: those aliases stay, with their definitions in the Dim)."""
        defs = self.store.definitions
        for _ in range(64):
            hit = {s: self.store.canon(defs[s]) for s in E.free_symbols(c) if s in defs}
            if not hit:
                return c
            n = E.size(c) + sum(E.size(v) for v in hit.values())
            branchy = E.branchy(c) or any(E.branchy(v) for v in hit.values())
            if n > (E.MAX_BRANCHY_OPS if branchy else E.MAX_OPS):
                return c      # sympy re-simplifies nested Piecewise on rebuild: keep the alias
            c = E.norm(c.xreplace({s: E.to_sympy(v) for s, v in hit.items()}))
            if isinstance(c, int):
                return c
        return c

    def _definitions(self, c) -> tuple:
        """(alias symbol -> definition, for every alias ``c`` reaches; the symbols those
        definitions mention that are not aliases).  Canonical when that stays acyclic; when
        an elimination made an alias's canonical definition mention itself (``cap :=
        f(cap_1)`` with ``cap_1`` defined over ``cap``), the definitions as made are used:
        each alias is defined only over symbols older than itself.  Memoized per set of
        aliases ``c`` mentions until the next elimination: the dims of a long chain share
        their aliases, and each walk of the closure is as long as the chain."""
        defs = self.store.definitions
        start = frozenset(s for s in E.free_symbols(c) if s in defs)
        key = (start, self.store.canon_epoch)
        hit = self._closures.get(key)
        if hit is not None:
            return hit
        for canonical in (True, False):
            out: dict = {}
            todo = list(start)
            while todo:
                s = todo.pop()
                if s in out:
                    continue
                out[s] = self.store.canon(defs[s]) if canonical else defs[s]
                todo.extend(x for x in E.free_symbols(out[s]) if x in defs)
            if not canonical or not _cyclic(out):
                break
        leaves: set = set()
        for e in out.values():
            leaves |= E.free_symbols(e)
        hit = self._closures[key] = (out, frozenset(leaves - out.keys()))
        return hit

    def _upgrade(self, c):
        """Resolve Bcast / Min / Max atoms that the constraints decide."""
        st = self.store

        def _opt(st, rel):
            return st.decide(rel, optional=True)
        atoms = [a for a in sympy.preorder_traversal(c)
                 if isinstance(a, (E.Bcast, sympy.Min, sympy.Max, sympy.Piecewise))]
        if not atoms:
            return c
        repl = {}
        memo = self._atom_picks
        for a in atoms:
            if a in memo:
                if memo[a] is not None:
                    repl[a] = memo[a]
                continue
            before = len(repl)
            self._pick_atom(st, a, repl, _opt)
            memo[a] = repl.get(a) if len(repl) > before else None
        if not repl:
            return c
        return E.norm(c.xreplace(repl))

    def _pick_atom(self, st, a, repl, _opt):
        for _ in (0,):
            if isinstance(a, sympy.Piecewise):
                pick = decide_piecewise(st, a)
                if pick is not None:
                    repl[a] = pick
                continue
            if isinstance(a, E.Bcast):
                x, y = a.args
                if _opt(st, eq(E.norm(x), E.norm(y))) is Verdict.PROVEN or \
                        _opt(st, eq(E.norm(y), 1)) is Verdict.PROVEN:
                    repl[a] = x
                elif _opt(st, eq(E.norm(x), 1)) is Verdict.PROVEN:
                    repl[a] = y
            elif len(a.args) == 2:
                x, y = (E.norm(t) for t in a.args)
                first, second = (a.args[0], a.args[1]) if isinstance(a, sympy.Min) else (a.args[1], a.args[0])
                # both orders from intervals first: Z3 only when neither follows from them
                for use_z3 in (False, True):
                    if st.decide(le(x, y), use_z3=use_z3, optional=True) is Verdict.PROVEN:
                        repl[a] = first
                    elif st.decide(ge(x, y), use_z3=use_z3, optional=True) is Verdict.PROVEN:
                        repl[a] = second
                    else:
                        continue
                    break

    def _upper_bound(self, c):
        """A bound over input symbols for ``c`` (``bounds.upper_bound_over``): read
        structurally and monotonically, each data symbol where ``c`` grows with it replaced
        by its declared upper bound, where it shrinks with it by 0 (``6 - split_len`` <= 6);
        ``min(80, n) <= 80`` whatever ``n`` is (TopK's ``k = min(80, boxes)``, a Slice
        ``[:120]`` of a run-time count), a max, broadcast or Piecewise at most its largest
        value; None when some part has no bound."""
        from .bounds import upper_bound_over
        st = self.store

        def keep(s):
            info = st.info(s)
            return info is not None and info.kind == "input"
        return upper_bound_over(st, c, keep)




def decide_piecewise(st, pw):
    """The branch of a Piecewise the constraints select, or None when undecided."""
    from .constraints import Rel
    for val, cond in pw.args:
        if cond is sympy.true or cond == True:  # noqa: E712
            return val
        op = next((o for k, o in E.relation_classes() if isinstance(cond, k)), None)
        if op is None:
            return None
        v = st.decide(Rel(op, E.norm(cond.lhs), E.norm(cond.rhs)), optional=True)
        if v is Verdict.PROVEN:
            return val
        if v is not Verdict.REFUTED:
            return None
    return None


def _cyclic(defs: dict) -> bool:
    """Does some alias reach itself through the definitions?"""
    state: dict = {}

    def visit(s) -> bool:
        state[s] = 1
        for x in E.free_symbols(defs[s]):
            if x in defs and (state.get(x) == 1 or (x not in state and visit(x))):
                return True
        state[s] = 2
        return False

    return any(s not in state and visit(s) for s in list(defs))
