"""Performance helpers shared by the API entry points: the paused collector, and the
marks a per-phase breakdown of an analysis reads (``benchmarks/bench.py``)."""
from __future__ import annotations

import contextlib
import gc
import threading
import time

_LOCK = threading.Lock()
_DEPTH = [0]
_WAS = [False]


@contextlib.contextmanager
def paused_gc():
    """Pause Python's cyclic garbage collector for the block, scoped.

    Analysis allocates many small long-lived objects (sympy terms, tensor infos);
    the collector rescans them over and over (measured: more than half the run
    time on a 15k-node graph) while nothing needs cycle collection until the
    block ends.  Reference counting still frees everything as usual.  Nested or
    concurrent pauses count: the collector comes back, as it was before the
    first pause, when the last one ends."""
    with _LOCK:
        if _DEPTH[0] == 0:
            _WAS[0] = gc.isenabled()
            gc.disable()
        _DEPTH[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0 and _WAS[0]:
                # the objects made during the pause go straight to the oldest generation
                # (freeze, then unfreeze): the young-generation passes that would follow
                # re-enabling would otherwise scan them all once more.  Nothing is leaked:
                # the oldest generation is collected as usual.
                gc.freeze()
                gc.unfreeze()
                gc.enable()


_MARKS: list | None = None


def mark(phase: str) -> None:
    """The analysis has just finished ``phase`` ("read", "walk", "check"): its process time
    is recorded while ``phases`` records, and nothing happens otherwise."""
    if _MARKS is not None:
        _MARKS.append((phase, time.process_time()))


@contextlib.contextmanager
def phases():
    """Record the marks of the analyses run in the block (one thread at a time: a
    benchmark's).  Yields the list of (phase, process time) pairs, filled as they come."""
    global _MARKS
    prev, _MARKS = _MARKS, []
    try:
        yield _MARKS
    finally:
        _MARKS = prev
