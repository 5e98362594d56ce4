"""The fast path: a union-find over atoms, canonical forms, ranks and aliases.

An atom is a symbol or an opaque nonlinear subterm (``Bcast(a, b)``,
``FloorDiv(H, 16)``, ``B*S``).  An equality linear in some atom with coefficient
+-1 *eliminates* that atom: ``subst[atom] = value``.  The representative is chosen
by rank: user input names are kept over generated input names, those over opaque
terms, those over data symbols, those over aliases; an opaque term is eliminated
only when the rest of the equation shares no symbol with it (``K == Bcast(a, b)``
eliminates the term, never ``K``).  ``canon(e)`` rewrites to representatives
lazily, with path compression and an occurrence index (``_dep``) so an elimination
invalidates only the cached forms that mention it: the cost is near-linear in the
number of unifications.

Invariants: ``subst`` maps each eliminated atom to a value (possibly stale:
``canon`` resolves it), ``reasons`` to the ids of the constraints that justify the
elimination; ``canon_epoch`` changes with every elimination and is unique across
all stores and forks, so a canonical form cached with it is never taken for
another's.  An alias symbol stands for the (too big) expression ``definitions[s]``.
"""
from __future__ import annotations

import itertools
from functools import lru_cache

from .. import expr as E
from ..constraints import Relation, _sides_of
from ..lazy import sympy


@lru_cache(maxsize=None)
def atom_types() -> tuple:
    """The classes of opaque atoms (built on first use: reading them imports sympy, which a
    model whose dims are all static never needs)."""
    return (E.FloorDiv, E.CeilDiv, E.Mod, E.Bcast, sympy.Min, sympy.Max, sympy.Piecewise, sympy.Mul, sympy.Pow)


# representative rank: higher is kept; the lowest-ranked atom of an equality is eliminated
_RANK = {"alias": 0, "data": 1, "compound": 2, "generated": 3, "input": 4}
_CANON_EPOCHS = itertools.count(1)


class FastPath:
    def __init__(self, symbols):
        self._symbols = symbols            # (ranks read each symbol's kind)
        self.subst: dict = {}              # atom -> value (possibly stale; canon() resolves)
        self.reasons: dict = {}            # atom -> constraint ids that justify its elimination
        self.definitions: dict = {}        # alias symbol -> the expression it stands for
        self.alias_of: dict = {}           # expression -> its alias symbol
        self._canon: dict = {}
        self._dep: dict = {}               # symbol -> expressions whose cached canon mentions it
        self._compound_keys: dict = {}     # symbol -> compound atoms (subst keys) that mention it
        self.canon_epoch = next(_CANON_EPOCHS)

    def copy(self, symbols) -> "FastPath":
        """The same eliminations and aliases over ``symbols`` (a copy of this one's), its
        own additions; canonical forms are recomputed under a new epoch."""
        new = FastPath(symbols)
        new.subst = dict(self.subst)
        new.reasons = dict(self.reasons)
        new.definitions = dict(self.definitions)
        new.alias_of = dict(self.alias_of)
        new._compound_keys = {k: set(v) for k, v in self._compound_keys.items()}
        return new

    # ------------------------------------------------------------ canonical forms
    def canon(self, e):
        if isinstance(e, int) or not self.subst:
            return e
        hit = self._canon.get(e)
        if hit is not None:
            return hit
        out = e
        syms = E.free_symbols(e)
        m = {}
        for s in syms:
            if s in self.subst:
                m[s] = E.to_sympy(self._resolve(s))
        if m:
            out = E.norm(e.xreplace(m))
        if self._compound_keys and not isinstance(out, int):
            out = self._replace_compounds(out)
        self._canon[e] = out
        for x in E.free_symbols(out):
            self._dep.setdefault(x, []).append(e)
        return out

    def _resolve(self, s):
        """Canonical value of an eliminated symbol, compressing the path."""
        v = self.subst[s]
        c = self.canon(v)
        if c is not v and c != v:
            self.subst[s] = c
        return c

    def _replace_compounds(self, e):
        atoms = atom_types()
        for _ in range(8):
            keys = [a for a in sympy.preorder_traversal(e) if isinstance(a, atoms) and a in self.subst]
            if not keys:
                return e
            e = E.norm(e.xreplace({a: E.to_sympy(self.canon(self.subst[a])) for a in keys}))
            if isinstance(e, int):
                return e
        return e

    def canon_rel(self, r: Relation) -> Relation:
        return r.map(self.canon)

    def why(self, e) -> frozenset:
        """Constraint ids behind the substitutions ``canon(e)`` uses."""
        out: set = set()
        todo = list(E.free_symbols(e)) if not isinstance(e, int) else []
        if not isinstance(e, int) and self._compound_keys:
            atoms = atom_types()
            todo += [a for a in sympy.preorder_traversal(e) if isinstance(a, atoms) and a in self.subst]
        seen = set()
        while todo:
            s = todo.pop()
            if s in seen or s not in self.subst:
                continue
            seen.add(s)
            out |= self.reasons.get(s, frozenset())
            v = self.subst[s]
            if not isinstance(v, int):
                todo.extend(E.free_symbols(v))
        return frozenset(out)

    def why_rel(self, r: Relation) -> frozenset:
        out: set = set()
        for side in _sides_of(r):
            out |= self.why(side)
        return frozenset(out)

    # ------------------------------------------------------------ eliminations
    def rank(self, atom) -> tuple:
        if not isinstance(atom, sympy.Symbol):
            return (_RANK["compound"], 0)
        info = self._symbols.info(atom)
        if info is None:
            return (_RANK["data"], 0)
        if info.kind == "input":
            return (_RANK["generated"] if info.generated else _RANK["input"], -info.serial)
        return (_RANK.get(info.kind, _RANK["data"]), -info.serial)

    def choose(self, d):
        """(atom, value) for the equation ``d == 0`` (canonical, not constant): the
        lowest-ranked atom with coefficient +-1 that the rest does not mention, and
        what it equals; None when there is none (the equation stays residual)."""
        best = None
        terms = sympy.Add.make_args(d)
        for t in terms:
            coeff, rest = t.as_coeff_Mul()
            if coeff not in (1, -1):
                continue
            if isinstance(rest, sympy.Symbol):
                if any(rest in E.free_symbols(E.norm(o)) for o in terms if o is not t):
                    continue
            elif isinstance(rest, atom_types()) and not isinstance(rest, sympy.Integer):
                # an opaque term is eliminated only when the rest of the equation shares no
                # symbol with it (``K == Bcast(a, b)``): then the elimination is a definition
                inner = E.free_symbols(rest)
                if any(E.free_symbols(E.norm(o)) & inner for o in terms if o is not t):
                    continue
            else:
                continue
            key = self.rank(rest)
            if best is None or key < best[0]:
                best = (key, rest, int(coeff))
        if best is None:
            return None
        _, s, coeff = best
        return s, E.norm(-(d - coeff * s) * coeff)

    def eliminate(self, s, value, reason: frozenset) -> list:
        """Record ``s := value``; returns the compound atoms whose arguments mention the
        symbol ``s``: each must be restated in canonical form (``unkey``)."""
        self.canon_epoch = next(_CANON_EPOCHS)
        self.subst[s] = value
        self.reasons[s] = reason
        if isinstance(s, sympy.Symbol):
            for e in self._dep.pop(s, ()):
                self._canon.pop(e, None)
            return list(self._compound_keys.pop(s, ()))
        syms = E.free_symbols(s)
        for x in syms:
            self._compound_keys.setdefault(x, set()).add(s)
            for e in self._dep.pop(x, ()):   # cached forms may contain the atom
                self._canon.pop(e, None)
        return []

    def unkey(self, key):
        """Drop the elimination of compound atom ``key`` (its arguments changed):
        (value, reason) to restate as ``key == value``, or None when it is gone already."""
        if key not in self.subst:
            return None
        value = self.subst.pop(key)
        self.canon_epoch = next(_CANON_EPOCHS)
        reason = self.reasons.pop(key, frozenset())
        for x in E.free_symbols(key):
            ks = self._compound_keys.get(x)
            if ks is not None:
                ks.discard(key)
        return value, reason

    def define(self, s, e):
        """``s`` is an alias of the expression ``e``."""
        self.definitions[s] = e
        self.alias_of[e] = s
