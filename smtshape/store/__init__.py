"""The constraint store: symbols, constraints, a fast path, and Z3 behind it.

One facade, ``Store`` (``facade.py``), over parts that each own their state:

=================  ==========================================================
``symbols.py``     ``Symbols``: every symbol declared with a kind (``input``,
                   ``data``, ``alias``), its provenance and its domain's bound
``fastpath.py``    ``FastPath``: the union-find over atoms (eliminations,
                   ranks, canonical forms, aliases)
``intervals.py``   ``Intervals``: (lo, hi) of a term from domains, declared
                   bounds and bounds read off base facts
``witness.py``     ``Witnesses``: concrete points that satisfy every live
                   constraint, so settle "neither proven nor refuted" without Z3
``cases.py``       ``case_verdict``: PROVEN / REFUTED by splitting on a piecewise
                   term's condition ``x == k`` (each case read by intervals)
``backend.py``     ``Backend``: the base / pending discipline over one lazy
                   incremental solver, cached answers; the SMT-LIB export
``solver.py``      the one home of Z3 solvers (contexts, the watchdog, the
                   shared ``Budget``), for the store, findings and queries alike
``explain.py``     ``Explanations``: conflicts, cones and minimal cores
``groups.py``      ``Groups`` (union-find), ``cone``, ``GroupQueries``
``basics.py``      ``Verdict``, ``holds`` / ``truth_at`` (a relation at an integer point: the one home of relation evaluation)
=================  ==========================================================

Parts depend one way (symbols <- fast path <- intervals <- witnesses, cases <- backend;
explanations and groups beside them); none refers to the facade.  ``Store.fork``
copies the symbols, fast path and intervals and gives the fork a fresh, disabled
backend.

The consistency discipline
--------------------------
The solver holds a *base* known to be satisfiable.  Constraints added since
(the *pending* batch) join it only after a check: ``sat`` -> they join;
``unsat`` -> the batch is split until the constraints that break it are
found, and each is *set aside* as a conflict (explained by a minimal core
naming nodes) while the rest join; ``unknown`` -> the ones Z3 cannot decide
are set aside as *undecided* (listed in results).  Facts are never removed
from the base, so a PROVEN or REFUTED answer, once given, stays true; and
every answer comes from a base known to be satisfiable: an answer from a
subset of the constraints is still entailed by all of them.

Fast-path eliminations are not set aside (rules have already used them).  A
conflict whose core holds no constraint that can be set aside marks the
store *broken*: the conflict is reported, consistency is False, and Z3 gives
no further answers (everything it would answer is UNKNOWN).
"""
from .basics import Verdict
from .facade import Store
from .groups import Groups, cone
from .solver import Budget, GroupSolver, OutOfBudget, Solver
from .symbols import Domain, SymbolInfo
from .witness import WITNESS_VALUES

__all__ = ["Budget", "Domain", "GroupSolver", "Groups", "OutOfBudget", "Solver", "Store", "SymbolInfo",
           "Verdict", "WITNESS_VALUES", "cone"]
