"""Adversarial graphs for the store: time at sizes growing 8x.

    python benchmarks/adversarial.py [--families a,b] [--timeout 120] [--out FILE.md]

Each family of ``smtshape.adversarial`` is built at n, 2n, 4n and 8n (n: its base
size) and analyzed in a fresh subprocess (``analyze`` + every shape solved +
``consistent``), timed as process CPU time, imports excluded.  The design goal:
time grows at most 2x linearly, i.e. ``t(8n) / t(n) <= 16``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CHILD = r"""
import json, sys, time
import smtshape
from smtshape import adversarial as A
fam, n = sys.argv[1], int(sys.argv[2])
m = A.FAMILIES[fam][0](n)
t0 = time.process_time()
r = smtshape.analyze(m)
r.shapes()
c = r.consistent
t = time.process_time() - t0
dims = [d for s in r.shapes().values() if s for d in s]
print(json.dumps({"seconds": t, "nodes": len(m.graph.node), "consistent": c,
                  "z3_checks": r.store.z3_checks, "exact": sum(d.exactness.name == "EXACT" for d in dims),
                  "dims": len(dims)}))
"""


def run(fam: str, n: int, timeout: float) -> dict:
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, fam, str(n)], capture_output=True, text=True,
                           timeout=timeout, cwd=os.path.dirname(HERE))
    except subprocess.TimeoutExpired:
        return {"seconds": None, "status": f"timeout {timeout:.0f}s"}
    if p.returncode != 0:
        return {"seconds": None, "status": "error: " + (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    from smtshape.adversarial import FAMILIES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    rows = []
    for fam in args.families.split(","):
        base = FAMILIES[fam][1]
        res = []
        for k in (1, 2, 4, 8):
            r = run(fam, base * k, args.timeout)
            res.append((base * k, r))
            print(fam, base * k, r, file=sys.stderr, flush=True)
        t1, t8 = res[0][1].get("seconds"), res[-1][1].get("seconds")
        ratio = None if not t1 or t8 is None else t8 / max(t1, 1e-3)
        rows.append((fam, res, ratio))
    lines = ["| family | sizes | seconds (CPU) at n, 2n, 4n, 8n | t(8n)/t(n) | z3 checks at 8n | consistent | exact dims at 8n |",
             "|---|---|---|---|---|---|---|"]
    for fam, res, ratio in rows:
        secs = ", ".join(f"{r['seconds']:.2f}" if r.get("seconds") is not None else r.get("status", "?")
                         for _, r in res)
        last = res[-1][1]
        lines.append(f"| {fam} | {', '.join(str(n) for n, _ in res)} | {secs} | "
                     f"{'-' if ratio is None else f'{ratio:.1f}'} | {last.get('z3_checks', '-')} | "
                     f"{last.get('consistent', '-')} | {last.get('exact', '-')}/{last.get('dims', '-')} |")
    text = "\n".join(lines)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"Measured {stamp} with `python benchmarks/adversarial.py`.\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
