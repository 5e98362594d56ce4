"""Instructions smtshape executes for one warm analysis pass, counted by valgrind.

    python benchmarks/instructions.py                      # the 48 models of ../shared/corpus
    python benchmarks/instructions.py MODEL.onnx [...]     # given models
    python benchmarks/instructions.py --root OTHER_CHECKOUT

Timers on a shared machine move by up to 1.6x between runs; an instruction count
moves by well under 1%, so it compares two versions of the code.  Each measurement
runs the child under ``valgrind --tool=callgrind`` twice, once with one pass over the
models and once with two (every pass analyzes each model and solves every shape,
policy skip, value_info stripped), and reports the difference: the cost of one
warm pass, with imports, reading the files and the first pass's warm-up left out.
PYTHONHASHSEED is fixed (set iteration order changes the work).  Needs valgrind;
the two runs go side by side, about 1.5 minutes.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import onnx
import smtshape
from bench import strip_value_info
assert smtshape.__file__.startswith(sys.argv[1]), smtshape.__file__
models = [strip_value_info(onnx.load(p)) for p in sys.argv[4:]]
for _ in range(int(sys.argv[3])):
    for m in models:
        smtshape.analyze(m, policy="skip").shapes()
"""


def start(root: str, passes: int, paths: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           os.path.realpath(sys.executable), "-c", CHILD, root, HERE, str(passes), *paths]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def collected(proc: subprocess.Popen) -> int:
    _, err = proc.communicate()
    m = re.search(r"Collected\s*:\s*(\d+)", err)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"valgrind run failed (exit {proc.returncode}):\n{err[-2000:]}")
    return int(m.group(1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model files (default: every *.onnx of --corpus)")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(ROOT), "shared", "corpus"))
    ap.add_argument("--root", default=ROOT, help="the checkout whose smtshape is measured")
    args = ap.parse_args(argv)
    paths = args.models or sorted(glob.glob(os.path.join(args.corpus, "*.onnx")))
    if not paths:
        raise SystemExit("no models to measure")
    root = os.path.abspath(args.root)
    runs = [start(root, 1, paths), start(root, 2, paths)]     # (side by side: instruction counts
    one, two = (collected(p) for p in runs)                     # do not depend on the other run)
    print(f"{args.root}: {len(paths)} models, {(two - one) / 1e6:,.0f} M instructions per warm pass")


if __name__ == "__main__":
    main()
