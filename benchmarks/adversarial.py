"""Adversarial graphs for the store: time at sizes growing 8x and more.

    python benchmarks/adversarial.py [--families a,b] [--timeout 120] [--out FILE.md]

Each family of ``graders.adversarial`` is built at its sizes (``SIZES``; n, 2n, 4n,
8n by default) and analyzed in a fresh subprocess, timed as process CPU time, imports
excluded: ``analyze``, then everything ``smtshape infer`` and ``smtshape check`` print
(the report with the table of every value, the findings: specializations, conflicts
explained), so a search the commands make is in the time.  The design goal: time grows
at most 2x linearly (``t(8n) / t(n) <= 16``, checked over every 8x span of sizes) and
no size takes over 5 s; a finding the shared budget could not pay is counted ("not
searched"), never silently absent.
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
from graders import adversarial as A
from smtshape import report
fam, n = sys.argv[1], int(sys.argv[2])
m = A.FAMILIES[fam][0](n)
w = smtshape.analyze(A.FAMILIES[fam][0](2))                   # (imports done before timing: sympy, z3,
report.render(w, "warm.onnx", {}); w.specializations          #  the op families load on first use)
t0 = time.process_time()
r = smtshape.analyze(m)
text = report.render(r, "model.onnx", {})                     # what infer prints
specs = r.specializations                                      # (the findings, in both)
for c in r.conflicts:                                          # what check prints
    report.explain_conflict(r, c)
c = r.consistent
t = time.process_time() - t0
dims = [d for s in r.shapes().values() if s for d in s]
print(json.dumps({"seconds": t, "nodes": len(m.graph.node), "consistent": c,
                  "z3_checks": r.store.z3_checks, "findings_checks": r.store.findings_checks,
                  "not_searched": len(specs.not_searched), "findings": len(specs),
                  "exact": sum(d.exactness.name == "EXACT" for d in dims), "dims": len(dims)}))
"""

# sizes per family (default: n, 2n, 4n, 8n from graders.adversarial.FAMILIES)
SIZES = {
    "chained_broadcasts": (25, 50, 100, 200, 400, 800),
    "broadcast_pairs": (50, 100, 200, 400),
    "wide_concat": (250, 500, 1000, 2000),
    "nonlinear_relations": (5, 10, 20, 40),
    "runtime_shape_vector": (500, 1000, 2000, 4000),
    "products": (8, 16, 32, 64),
}


def run(fam: str, n: int, timeout: float) -> dict:
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, fam, str(n)], capture_output=True, text=True,
                           timeout=timeout, cwd=os.path.dirname(HERE))
    except subprocess.TimeoutExpired:
        return {"seconds": None, "status": f"timeout {timeout:.0f}s"}
    if p.returncode != 0:
        return {"seconds": None, "status": "error: " + (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def worst_ratio(res) -> float | None:
    """The largest t(8n) / t(n) over the sizes measured (pairs whose sizes differ 8x;
    times under 10 ms count as 10 ms)."""
    by_n = {n: r.get("seconds") for n, r in res}
    out = None
    for n, t in by_n.items():
        t8 = by_n.get(8 * n)
        if t is None or t8 is None:
            continue
        ratio = t8 / max(t, 0.01)
        out = ratio if out is None else max(out, ratio)
    return out


def main(argv=None) -> int:
    from graders.adversarial import FAMILIES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per size, each in a fresh process; the median is kept (the smallest "
                         "sizes take milliseconds: one run's noise moved the ratios by several units; "
                         "a size under 0.1 s gets two runs more)")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    rows = []
    for fam in args.families.split(","):
        base = FAMILIES[fam][1]
        res = []
        for n in SIZES.get(fam, (base, 2 * base, 4 * base, 8 * base)):
            runs = [run(fam, n, args.timeout)]
            # (a size timed in tens of milliseconds moves by a third between fresh processes:
            # it gets two runs more, so a ratio's denominator is not one run's noise)
            want = args.repeat + (2 if (runs[0].get("seconds") or 1.0) < 0.1 else 0)
            while len(runs) < want and runs[-1].get("seconds") is not None:
                runs.append(run(fam, n, args.timeout))
            timed = sorted((r for r in runs if r.get("seconds") is not None), key=lambda r: r["seconds"])
            r = timed[len(timed) // 2] if len(timed) == len(runs) else runs[-1]     # the median run
            res.append((n, r))
            print(fam, n, r, file=sys.stderr, flush=True)
        rows.append((fam, res, worst_ratio(res)))
    lines = ["| family | sizes | seconds (CPU): analyze + what infer and check print | worst t(8n)/t(n) "
             "| z3 checks (walk + findings) at the largest | findings / not searched | consistent "
             "| exact dims at the largest |",
             "|---|---|---|---|---|---|---|---|"]
    for fam, res, ratio in rows:
        secs = ", ".join(f"{r['seconds']:.2f}" if r.get("seconds") is not None else r.get("status", "?")
                         for _, r in res)
        last = res[-1][1]
        lines.append(f"| {fam} | {', '.join(str(n) for n, _ in res)} | {secs} | "
                     f"{'-' if ratio is None else f'{ratio:.1f}'} | "
                     f"{last.get('z3_checks', '-')} + {last.get('findings_checks', '-')} | "
                     f"{last.get('findings', '-')} / {last.get('not_searched', '-')} | "
                     f"{last.get('consistent', '-')} | {last.get('exact', '-')}/{last.get('dims', '-')} |")
    text = "\n".join(lines)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"Measured {stamp} with `python benchmarks/adversarial.py` "
                    f"(median of {args.repeat} runs per size).\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
