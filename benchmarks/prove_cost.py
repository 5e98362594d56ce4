"""What ``Result.prove`` and ``Result.query`` cost on real models, after the findings.

    python benchmarks/prove_cost.py [--corpus DIR]... [--root CHECKOUT]

For every model of the corpora (default ``../shared/corpus`` and ``../shared/vnncomp``):
analyze it, compute its findings (``Result.specializations``, which spend the store's shared
budget of optional solver work, as ``smtshape check`` does), then ask, for every input dim
``d``, ``d == 64``, ``d <= 128``, ``d >= 1`` and, for every pair, ``a == b``, once with
``prove`` and once with ``query`` (a fresh analysis each, so neither profits from the
other's cache).  Prints CPU seconds per model and in total, and the verdicts by kind.
``--root`` runs another checkout's smtshape (to compare with a base commit: a verdict
UNKNOWN there may be CONTINGENT here, nothing else may change).
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def claims(res) -> list:
    names = sorted(i.name for i in res.store.input_symbols())
    out = []
    for n in names:
        out += [f"{n} == 64", f"{n} <= 128", f"{n} >= 1"]
    out += [f"{a} == {b}" for a, b in itertools.combinations(names, 2)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--root", default=str(REPO), help="the checkout whose smtshape is measured")
    ap.add_argument("--methods", default="prove,query")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.root)
    import smtshape
    corpora = args.corpus or [REPO.parent / "shared" / "corpus", REPO.parent / "shared" / "vnncomp"]
    methods = [m for m in args.methods.split(",") if m and hasattr(smtshape.Result, m)]
    print(f"smtshape from {Path(smtshape.__file__).parent}; methods: {', '.join(methods)}")
    total = Counter()
    verdicts = {m: Counter() for m in methods}
    for path in sorted(p for c in corpora for p in Path(c).glob("*.onnx")):
        row = []
        for m in methods:
            res = smtshape.analyze(str(path))
            res.specializations           # the findings: they spend the shared budget first
            asked = claims(res)
            t0 = time.process_time()
            for c in asked:
                v = getattr(res, m)(c)
                verdicts[m][getattr(v, "verdict", v).name] += 1
            dt = time.process_time() - t0
            total[m] += dt
            row.append(f"{m} {dt * 1000:8.1f} ms")
        print(f"{path.name:48s} {len(asked):3d} claims  " + "  ".join(row), flush=True)
    print("total: " + "  ".join(f"{m} {total[m]:.2f} s" for m in methods))
    for m in methods:
        print(f"{m} verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(verdicts[m].items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
