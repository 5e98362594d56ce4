"""The findings of every model of the sets, at this checkout and at another: what differs, and
what the findings cost.

    python benchmarks/findings_compare.py --root BASE_CHECKOUT            # the four sets beside the repo
    python benchmarks/findings_compare.py --root BASE --corpus ../shared/corpus

For each model (``*.onnx`` of every ``--corpus``, default the four sets of ../shared), each
checkout runs ``smtshape.analyze`` (default policy) and then ``Result.specializations`` in a
subprocess of its own (smtshape imported from that checkout).  Compared per model: each finding's
relation, condition and the nodes named as forcing it, the premises, and the input dims not
searched.  Printed: the models whose findings differ (both sides), and the CPU seconds spent in
``specializations`` over all models for each checkout.  A change meant to leave results alone
shows no model here.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
SETS = ("corpus", "vnncomp", "corpus-deploy", "corpus-wild")

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import smtshape
assert os.path.realpath(smtshape.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep), smtshape.__file__
out = {}
for p in sys.argv[2:]:
    try:
        r = smtshape.analyze(p)
        t = time.process_time()
        specs = r.specializations
        dt = time.process_time() - t
        out[p] = {"findings": sorted(f"{s.relation} | {s.condition} | {sorted(s.nodes)}" for s in specs),
                  "premises": sorted(s.relation for s in specs.premises),
                  "not_searched": [str(x) for x in specs.not_searched], "seconds": dt}
    except Exception as e:                       # a crash is a result too: compared as such
        out[p] = {"error": f"{type(e).__name__}: {e}"[:200], "seconds": 0.0}
print(json.dumps(out))
"""


def findings(root: str, models: list) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, root, *models], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"the run at {root} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="the other checkout (a worktree of an older commit)")
    ap.add_argument("--corpus", action="append", help="a folder of models (repeatable; default the four sets)")
    args = ap.parse_args(argv)
    dirs = args.corpus or [os.path.join(SHARED, s) for s in SETS]
    models = sorted(p for d in dirs for p in glob.glob(os.path.join(d, "*.onnx")))
    if not models:
        raise SystemExit(f"no *.onnx in {', '.join(dirs)}")
    base, now = findings(args.root, models), findings(ROOT, models)
    strip = lambda rec: {k: v for k, v in rec.items() if k != "seconds"}
    differ = [p for p in models if strip(base[p]) != strip(now[p])]
    for p in differ:
        print(f"{os.path.relpath(p, os.path.dirname(os.path.dirname(p)))}:")
        print(f"  {args.root}: {json.dumps(strip(base[p]))}")
        print(f"  {ROOT}: {json.dumps(strip(now[p]))}")
    secs = lambda res: sum(r["seconds"] for r in res.values())
    print(f"{len(models)} models; findings differ on {len(differ)}; specializations CPU s: "
          f"{secs(base):.1f} at {args.root}, {secs(now):.1f} here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
