"""Cache misses per node of one analysis run, simulated by valgrind.

    python benchmarks/cachesim.py MODEL.onnx [MODEL.onnx ...]
    python benchmarks/cachesim.py --root OTHER_CHECKOUT benchmarks/.cache/transformer_200000.onnx

Why: smtshape's instructions per node are the same at 15k and at 200k nodes
(``instructions.py``), yet a run costs more per node at 200k.  What grows is cache
misses: at 15k nodes what a run touches fits in a 32 MB last-level cache, at 200k it
does not.  Timers on a shared machine move too much to see a 5% change in that
growth; a simulated miss count does not move at all.

What is counted: one run like ``bench.py``'s timed runs.  The child analyzes the
model once (warm-up), frees the result, runs ``gc.collect()``, then runs
``smtshape.analyze(path).shapes()`` once more.  Only that last run is counted:
the child makes it inside ``ascii()`` of an object whose ``__repr__`` runs it, and
callgrind collects only inside the interpreter's ``builtin_ascii`` (nothing in
smtshape calls ``ascii()``).  Freeing that result is not counted, as in bench.py.

Reported per node: instructions (Ir), first-level data misses (D1), last-level read
and write misses (LL rd / wr).  The caches simulated: 64 KB D1 and I1, a 32 MB
16-way last level (``--ll``), like the benchmark machine's.  A 15k-node model takes
about 1 minute, a 200k-node one about 10; models run side by side (``-j``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import gc, sys
sys.path.insert(0, sys.argv[1])
import smtshape
assert smtshape.__file__.startswith(sys.argv[1]), smtshape.__file__
path = sys.argv[2]
out = smtshape.analyze(path)
out.shapes()
out = None
gc.collect()


class Counted:
    def __repr__(self):
        global out
        out = smtshape.analyze(path)
        out.shapes()
        return ""


ascii(Counted())
"""


def node_count(path: str) -> int:
    sys.path.insert(0, ROOT)
    from smtshape.reader import proto_module
    m = proto_module().ModelProto()
    with open(path, "rb") as f:
        m.ParseFromString(f.read())
    return len(m.graph.node)


def simulate(root: str, path: str, ll: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--LL={ll},16,64",
               "--D1=65536,8,64", "--I1=65536,8,64", "--collect-atstart=no",
               "--toggle-collect=builtin_ascii", f"--callgrind-out-file={out}",
               os.path.realpath(sys.executable), "-c", CHILD, os.path.abspath(root), os.path.abspath(path)]
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            raise SystemExit(f"valgrind run failed on {path} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        events = totals = None
        with open(out) as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith(("summary:", "totals:")):
                    totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model files")
    ap.add_argument("--root", default=ROOT, help="the checkout whose smtshape is measured (default: this one)")
    ap.add_argument("--ll", type=int, default=32 << 20, help="last-level cache size in bytes (default 32 MB)")
    ap.add_argument("-j", type=int, default=2, help="valgrind runs side by side (default 2)")
    args = ap.parse_args(argv)
    for p in args.models:
        if not os.path.isfile(p):
            raise SystemExit(f"no such model file: {p}")
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        results = list(pool.map(lambda p: simulate(args.root, p, args.ll), args.models))
    print(f"{args.root}: per node, one run after a warm-up (LL {args.ll >> 20} MB)")
    print(f"{'model':32s} {'nodes':>8s} {'Ir':>8s} {'D1 miss':>8s} {'LL rd':>6s} {'LL wr':>6s}")
    for p, d in zip(args.models, results):
        n = node_count(p)
        print(f"{os.path.basename(p):32s} {n:8d} {d['Ir'] / n:8.0f} {(d['D1mr'] + d['D1mw']) / n:8.1f} "
              f"{d['DLmr'] / n:6.1f} {d['DLmw'] / n:6.1f}")


if __name__ == "__main__":
    main()
