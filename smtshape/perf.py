"""Performance helpers shared by the API entry points."""
from __future__ import annotations

import contextlib
import gc
import threading

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
