"""Speed benchmark: smtshape against the other ONNX shape-inference tools (issues 8 and 22).

    python benchmarks/bench.py --out docs/benchmarks.md --json benchmarks/.cache/results.json
    python benchmarks/bench.py --parts graphs --transformer-sizes 1000 --cnn-sizes 2000 --graph-repeat 1
    python benchmarks/bench.py --baseline-root /tmp/base-worktree ...   # and smtshape at another commit

One run measures three things (``--parts graphs,cold,corpus``, default all);
every measurement runs in a fresh subprocess, one at a time.  ``--baseline-root
CHECKOUT`` adds the tool ``baseline``: smtshape imported from that checkout (a worktree
of an older commit), measured exactly as ``smtshape`` in every part, so that "no slower
than before" is a ratio of the same run:

1. graphs: generated models, end to end from the file
   Models come from ``benchmarks/graphs.py`` (transformer ``--transformer-sizes``,
   default 1000,15000,50000,200000 nodes; cnn ``--cnn-sizes``, default
   2000,10000,50000; ``--sizes`` sets both), cached as ``benchmarks/.cache/<family>_<size>.onnx``.
   Each (tool, model) runs in its own subprocess (``bench.py --worker``): the
   tool is imported, ``gc.collect()``, the peak-memory mark is reset, one
   warm-up run, then ``--graph-repeat`` (default 5) timed runs, each preceded by dropping the
   previous run's result and an untimed ``gc.collect()``.  A run goes from the
   model's PATH to every shape inferred:

       smtshape  smtshape.analyze(path) + result.shapes()   (the result solves
                 dims lazily; shapes() forces every value's dims)
       onnx      onnx.load(path) + onnx.shape_inference.infer_shapes(m, data_prop=True)
       ort       onnx.load(path) + SymbolicShapeInference.infer_shapes(m, auto_merge=True)
                 (onnxruntime.tools.symbolic_shape_infer)
       osi       onnx_ir.load(path) + onnx_shape_inference.infer_symbolic_shapes(
                 m, warn_on_missing=False)

   Time: the median over the timed runs of the process CPU time
   (``time.process_time``: user + system of every thread of the worker) and,
   recorded beside it, of the wall time (``time.perf_counter``).  Tables and
   ratios use CPU time (the machine is shared; CPU time is what load on other
   cores disturbs least).
   Memory (Linux): after the imports, the resident-set high-water mark is reset
   (``5`` written to ``/proc/self/clear_refs``); ``peak growth`` = ``VmHWM``
   after the warm-up and timed runs minus ``VmRSS`` at the reset (imports
   excluded, native memory of Z3 / onnx C++ included); ``peak absolute`` = the
   worker's lifetime peak resident set (max of ``VmHWM`` before the reset and
   after the runs: imports, interpreter and tool together).  The memory ratio
   uses the growth.  ``ru_maxrss`` is not used: Linux keeps it across
   fork + exec, so a worker would inherit the parent's peak.
   A worker is killed after ``--timeout`` seconds (default 120) and shown as
   ``timeout``; one that fails is rerun ``--retries`` times (default 1: the
   tree may be edited while the benchmark runs) and noted under the table.  ort and osi (minutes on big graphs) are ``skipped`` above
   ``--slow-tools-max-nodes`` (default 50000), after a timeout on a smaller
   model of the family, and where their wall time on the previous size of the
   family (warm-up + timed runs), scaled linearly by the node ratio, predicts
   more than ``--timeout`` (a lower bound for tools that grow faster than
   linearly); the table says why.
   Linearity: smtshape's CPU microseconds per node at each transformer size and
   ``(t(largest) / t(15k)) / (nodes(largest) / nodes(15k))`` (1.0 = linear; the
   summary's threshold is <= 1.25).

2. cold: the command-line start a user waits for
   For each of ``--cold-models`` (default qwen2_legacy, light_resnet50,
   bert_legacy from ``--corpus``, default ``../shared/corpus`` beside the
   repository; target 1.5x onnx) and of ``--cold-static-models`` (default
   cifar10_resnet__resnet_4b from ``--vnncomp``, default ``../shared/vnncomp``: a
   verification model whose dims are all static; target 1.2x), fresh processes,
   output discarded:

       smtshape  smtshape check M   (the console script next to sys.executable;
                 ``python -m smtshape check M`` when there is none; the report
                 says which; PYTHONPATH this checkout, --baseline-root's for baseline)
       onnx      python -c "import onnx, onnx.shape_inference as s;
                 s.infer_shapes(onnx.load(M), data_prop=True)"
       ort       python -m onnxruntime.tools.symbolic_shape_infer --input M
                 --output TMP --auto_merge
       osi       python -c "import onnx_ir, onnx_shape_inference;
                 infer_symbolic_shapes(onnx_ir.load(M), warn_on_missing=False)"

   smtshape's bytecode is compiled first (``_compile_smtshape``: pip compiles every
   package it installs, but not an editable install, and with
   PYTHONDONTWRITEBYTECODE set no run leaves bytecode behind).  One untimed run
   per (tool, model) first (page caches warm, as for a user's second command), then ``--cold-repeat`` (default 9) rounds, the
   tools interleaved within a round (the order reversed every other round).  Wall = ``perf_counter`` around spawn and
   reap; CPU = the child's ``ru_utime + ru_stime`` from ``os.wait4``.  Medians, and
   the median over rounds of smtshape's time / onnx's time in that round (paired:
   a slow spell of the machine falls on both); exit codes recorded (``smtshape
   check`` exits 0 on a consistent model).
   The verdict uses the paired WALL ratio (what the user waits for): CPU time counts every
   thread, and importing numpy starts OpenBLAS threads that spin for about
   70-100 ms of CPU on the other core off the critical path (measured here:
   ``import numpy`` 108 ms wall, 176 ms CPU; 107 / 107 with
   OPENBLAS_NUM_THREADS=1), a constant that every tool importing numpy pays
   and that flatters CPU ratios.
   Then, per model, one more run of smtshape (and baseline) and of onnx under
   ``python -X importtime``: the self time of every import summed by package (sympy,
   numpy, z3, onnx, protobuf, smtshape, the rest), what a cold start pays for.  With
   ``--cold-instructions`` also one run of each under valgrind (callgrind): the
   instructions it executes, a measure that a loaded machine does not move.

3. corpus: warm per-model time over every ``*.onnx`` in ``--corpus``
   ``--corpus-rounds`` rounds (default 5); in each, one subprocess per tool (not
   per model), the tools taking turns (the order reversed every other round, so
   that a slow spell of a shared machine falls on every tool alike, not on one
   tool's whole run): every model is loaded with
   ``onnx.load`` and its ``graph.value_info`` stripped (as
   ``graders.truth.strip_value_info``, which ``corpus_score.py`` uses), then
   per model one warm-up and ``--repeat`` timed runs (each after an untimed
   ``gc.collect()``) from the in-memory ``ModelProto``, as ``corpus_score.py``
   runs them: smtshape ``analyze(proto, policy="skip")`` + ``shapes()``; onnx
   ``infer_shapes(proto, data_prop=True)``; ort the body of
   ``SymbolicShapeInference.infer_shapes(proto, auto_merge=True)`` without its
   temp file; osi ``ir.serde.deserialize_model(proto)`` +
   ``infer_symbolic_shapes``.  CPU time (process_time), median per model of the
   timed runs of every round.  Then, smtshape only, ``--repeat`` more runs split
   into phases (``phase_run``: read, walk, classify, and what a command adds:
   findings, report), from ``smtshape.perf.mark``;
   reported: sum of the medians, median of the medians, ratios of the sums over
   the models every compared tool ran, and the models with the highest
   smtshape / onnx ratio.  A single run longer than ``--timeout`` is
   interrupted (SIGALRM) and the model recorded as ``timeout``; the whole worker
   is killed after ``--corpus-timeout`` seconds.

How much each tool resolved is recorded beside every time (speed bought by
leaving dims UNKNOWN shows there): over the outputs of the nodes of the main
graph, for smtshape dims EXACT / UPPER_BOUND / UNKNOWN and values of unknown
rank; for the others dims carrying a ``dim_value`` or a ``dim_param`` in the
returned model (ORT's fresh ``unk__N`` names count as named) and values with no
shape.

``--out FILE`` rewrites only the part of FILE between ``<!-- bench:begin -->``
and ``<!-- bench:end -->`` (appended with the markers when absent); every other
section of the file is kept as it is.  That part holds only what this run
measured: write docs/benchmarks.md from a full run (all three parts).

Profiling one smtshape run (end to end from the path, as in part 1):

    python -m cProfile -s cumtime benchmarks/bench.py --profile-run benchmarks/.cache/transformer_15000.onnx
"""
from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import re
import platform
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".cache")
WORKDIR = os.path.join(CACHE, "work")      # ORT writes sym_shape_infer_temp.onnx into the cwd on failure
TOOLS = ["smtshape", "onnx", "ort", "osi", "baseline"]
DEFAULT_TOOLS = "smtshape,onnx,ort,osi"          # (+ baseline with --baseline-root)
SLOW_TOOLS = {"ort", "osi"}
SMTSHAPES = ("smtshape", "baseline")              # the tools that are smtshape (this checkout, --baseline-root)
TOOL_LABEL = {"smtshape": "smtshape", "onnx": "onnx C++ `infer_shapes(data_prop=True)`",
              "ort": "onnxruntime SymbolicShapeInference (auto_merge)", "osi": "onnx-shape-inference",
              "baseline": "smtshape at the checkout given by `--baseline-root`"}
BASELINE_ENV = "SMTSHAPE_BENCH_BASELINE_ROOT"     # --baseline-root, as the workers see it
DEFAULT_SIZES = {"transformer": "1000,15000,50000,200000", "cnn": "2000,10000,50000"}
COLD_MODELS = "qwen2_legacy,light_resnet50,bert_legacy"
COLD_STATIC_MODELS = "cifar10_resnet__resnet_4b"   # in --vnncomp: every dim static
PHASES = ("read", "walk", "classify", "findings", "report")
BEGIN = "<!-- bench:begin (generated by benchmarks/bench.py: everything up to bench:end is rewritten) -->"
END = "<!-- bench:end -->"
LINEAR_MAX = 1.25


# ================================================================ models
def model_path(family: str, size: int) -> str:
    """The cached generated model, regenerated when graphs.py is newer."""
    import onnx

    sys.path.insert(0, HERE)
    import graphs

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{family}_{size}.onnx")
    gen_src = os.path.join(HERE, "graphs.py")
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(gen_src):
        m = graphs.GENERATORS[family](size)   # runs onnx.checker.check_model
        tmp = path + ".tmp"
        onnx.save(m, tmp)
        os.replace(tmp, path)
    return path


def node_count(path: str) -> int:
    import onnx

    return len(onnx.load(path, load_external_data=False).graph.node)


# ================================================================ memory
def _status_mb(field: str):
    """A ``/proc/self/status`` field (kB) in MB, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class PeakMeter:
    """Peak resident set over a region: growth from the start and the absolute peak.

    Linux: resets VmHWM through /proc/self/clear_refs; growth = VmHWM - VmRSS at
    the reset, absolute = max(VmHWM before the reset, VmHWM now).  Elsewhere:
    ru_maxrss (then growth is a lower bound)."""

    def __init__(self):
        self.hwm_before = _status_mb("VmHWM")
        self.method = "VmHWM after reset minus VmRSS at reset"
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.rss0 = _status_mb("VmRSS")
        except OSError:
            self.rss0 = None
        if self.rss0 is None or self.hwm_before is None:
            self.method = "ru_maxrss delta"
            self.rss0 = self._maxrss()

    @staticmethod
    def _maxrss() -> float:
        import resource

        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024

    def read(self) -> dict:
        if self.method == "ru_maxrss delta":
            now = self._maxrss()
            return {"peak_mb": now - self.rss0, "peak_abs_mb": now, "rss0_mb": None, "peak_method": self.method}
        hwm = _status_mb("VmHWM")
        return {"peak_mb": hwm - self.rss0, "peak_abs_mb": max(hwm, self.hwm_before), "rss0_mb": self.rss0,
                "peak_method": self.method}


# ================================================================ coverage (how much was resolved)
def node_outputs_of(proto) -> list:
    return [o for n in proto.graph.node for o in n.output if o]


def proto_coverage(proto, node_outputs) -> dict:
    """Dims with a dim_value or dim_param over node outputs of a returned ModelProto."""
    vi = {v.name: v for v in list(proto.graph.value_info) + list(proto.graph.output)}
    dims = known = no_shape = 0
    for name in node_outputs:
        v = vi.get(name)
        if v is None or not v.type.tensor_type.HasField("shape"):
            no_shape += 1
            continue
        for d in v.type.tensor_type.shape.dim:
            dims += 1
            if d.HasField("dim_value") or d.dim_param:
                known += 1
    return {"dims": dims, "known": known, "values_no_shape": no_shape}


def smtshape_coverage(res, node_outputs) -> dict:
    """Dims by exactness after result.shapes(), values of unknown rank, store counters."""
    from smtshape.dim import Exactness

    c = {"dims": 0, "exact": 0, "upper_bound": 0, "unknown": 0, "values_unknown_rank": 0, "values_missing": 0}
    shapes = res.shapes()
    for name in node_outputs:
        if name not in shapes:
            c["values_missing"] += 1
            continue
        s = shapes[name]
        if s is None:
            c["values_unknown_rank"] += 1
            continue
        for d in s:
            c["dims"] += 1
            c[{Exactness.EXACT: "exact", Exactness.UPPER_BOUND: "upper_bound"}.get(d.exactness, "unknown")] += 1
    st = getattr(res, "store", None)
    c["z3_checks"] = getattr(st, "z3_checks", None)
    c["z3_unknowns"] = getattr(st, "z3_unknowns", None)
    cons = getattr(st, "constraints", None)
    c["constraints"] = len(cons) if cons is not None else None
    c["conflicts"] = len(getattr(res, "conflicts", []) or [])
    c["consistent"] = getattr(res, "consistent", None)
    return c


def osi_coverage(model, node_outputs) -> dict:
    import onnx_ir as ir

    return proto_coverage(ir.to_proto(model), node_outputs)


# ================================================================ part 1: generated graphs (worker)
def smtshape_root(tool: str) -> str:
    """The checkout a smtshape tool runs from: this one, or --baseline-root's."""
    return ROOT if tool == "smtshape" else os.environ[BASELINE_ENV]


def import_smtshape(tool: str):
    """smtshape from ``smtshape_root(tool)`` (checked: another copy on sys.path must not answer)."""
    root = smtshape_root(tool)
    sys.path.insert(0, root)
    import smtshape

    where = os.path.realpath(smtshape.__file__)
    if not where.startswith(os.path.realpath(root) + os.sep):
        raise SystemExit(f"{tool}: imported smtshape from {where}, not from {root}")
    return smtshape


def graph_runner(tool: str):
    """Imports the tool; returns (run(path) -> output, coverage(output, node_outputs) -> dict, versions)."""
    if tool in SMTSHAPES:
        smtshape = import_smtshape(tool)

        def run(path):
            res = smtshape.analyze(path)
            res.shapes()
            return res

        return run, smtshape_coverage, {"smtshape": getattr(smtshape, "__version__", "?")}
    if tool == "onnx":
        import onnx
        from onnx import shape_inference

        def run(path):
            return shape_inference.infer_shapes(onnx.load(path), data_prop=True)

        return run, proto_coverage, {"onnx": onnx.__version__}
    if tool == "ort":
        import onnx
        import onnxruntime
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        def run(path):
            return SymbolicShapeInference.infer_shapes(onnx.load(path), auto_merge=True)

        return run, proto_coverage, {"onnxruntime": onnxruntime.__version__}
    if tool == "osi":
        import importlib.metadata as md

        import onnx_ir as ir
        import onnx_shape_inference as osi

        def run(path):
            return osi.infer_symbolic_shapes(ir.load(path), warn_on_missing=False)

        return run, osi_coverage, {"onnx-shape-inference": md.version("onnx-shape-inference"),
                                   "onnx-ir": ir.__version__}
    raise SystemExit(f"unknown tool {tool!r}; choose from {', '.join(TOOLS)}")


def _quiet():
    import logging
    import warnings

    logging.disable(logging.WARNING)       # ORT / osi log per unsupported node
    warnings.simplefilter("ignore")


def _timed_run(run, arg):
    """One run after an untimed gc.collect(); returns (output, cpu seconds, wall seconds)."""
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    out = run(arg)
    return out, time.process_time() - c0, time.perf_counter() - w0


def graph_worker(tool: str, path: str, repeat: int) -> dict:
    """Part 1 in a subprocess: warm-up + ``repeat`` timed runs from the path; peak memory; coverage."""
    _quiet()
    run, coverage, versions = graph_runner(tool)
    gc.collect()
    meter = PeakMeter()
    out, warm_cpu, warm_wall = _timed_run(run, path)
    cpu, wall = [], []
    for _ in range(repeat):
        out = None                        # the previous result is not alive during the next run
        out, c, w = _timed_run(run, path)
        cpu.append(c)
        wall.append(w)
    mem = meter.read()
    import onnx                           # after the memory reading (smtshape may not need onnx)

    cov = _safe_coverage(coverage, out, node_outputs_of(onnx.load(path, load_external_data=False)))
    return {"tool": tool, "cpu_ms": _med_ms(cpu, warm_cpu), "wall_ms": _med_ms(wall, warm_wall),
            "cpu_times_ms": [x * 1e3 for x in cpu], "wall_times_ms": [x * 1e3 for x in wall],
            "warmup_cpu_ms": warm_cpu * 1e3, "warmup_wall_ms": warm_wall * 1e3, **mem,
            "versions": versions, "coverage": cov}


def _safe_coverage(coverage, out, node_outputs) -> dict:
    """coverage(out, node_outputs), or {"error": ...}: a failure there keeps the times."""
    try:
        return coverage(out, node_outputs)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[:200]}


def _med_ms(xs, fallback):
    return statistics.median(xs) * 1e3 if xs else fallback * 1e3


# ================================================================ part 3: corpus (worker)
def strip_value_info(model_proto):
    """A copy without graph.value_info: the same as graders.truth.strip_value_info
    (used by corpus_score.py), repeated here so that the other tools' workers do
    not import smtshape."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model_proto)
    del out.graph.value_info[:]
    return out


def corpus_runner(tool: str):
    """Imports the tool; returns (run(proto) -> output, coverage(output, node_outputs) -> dict).

    The runs are those of corpus_score.py's runners."""
    if tool in SMTSHAPES:
        smtshape = import_smtshape(tool)

        def run(proto):
            res = smtshape.analyze(proto, policy="skip")
            res.shapes()
            return res

        return run, smtshape_coverage
    if tool == "onnx":
        from onnx import shape_inference

        return (lambda proto: shape_inference.infer_shapes(proto, data_prop=True)), proto_coverage
    if tool == "ort":
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference, get_opset

        def run(proto):
            opset = get_opset(proto)
            if not opset or opset < 7:
                raise RuntimeError("onnxruntime symbolic shape inference supports opset >= 7 only")
            ssi = SymbolicShapeInference(2**31 - 1, True, False, 0)   # int_max, auto_merge, guess, verbose
            ssi._preprocess(proto)
            while ssi.run_:
                ssi._infer_impl()
            ssi._update_output_from_vi()
            return ssi.out_mp_

        return run, proto_coverage
    if tool == "osi":
        import onnx_ir as ir
        import onnx_shape_inference as osi

        def run(proto):
            m = ir.serde.deserialize_model(proto)
            osi.infer_symbolic_shapes(m, warn_on_missing=False)
            return m

        return run, osi_coverage
    raise SystemExit(f"unknown tool {tool!r}; choose from {', '.join(TOOLS)}")


class _RunTimeout(Exception):
    pass


def _with_alarm(fn, timeout):
    """fn() interrupted by SIGALRM after ``timeout`` seconds (only between Python bytecodes)."""
    import signal

    def _alarm(_sig, _frm):
        raise _RunTimeout()

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def phase_run(smtshape, proto, name: str) -> dict:
    """One smtshape run on ``proto`` split into PHASES, in process ms (after an untimed
    ``gc.collect()``): read (the protobuf read into the reader's objects), walk (every
    rule, the annotations), classify (the consistency check, then every shape solved and
    classified: with read and walk, what a timed run does), findings (specializations,
    diagnostics), report (the text ``smtshape infer`` prints)."""
    from smtshape import perf, report

    gc.collect()
    with perf.phases() as marks:
        t0 = time.process_time()
        res = smtshape.analyze(proto, policy="skip")
        res.shapes()
        t1 = time.process_time()
        res.specializations, res.diagnostics
        t2 = time.process_time()
        report.render(res, name)
        t3 = time.process_time()
    m = dict(marks)
    secs = {"read": m["read"] - t0, "walk": m["walk"] - m["read"], "classify": t1 - m["walk"],
            "findings": t2 - t1, "report": t3 - t2}
    return {k: v * 1e3 for k, v in secs.items()}


def corpus_worker(tool: str, corpus: str, repeat: int, timeout: float) -> None:
    """Part 3 in a subprocess: prints one JSON line per model as soon as it is measured."""
    import contextlib
    import io

    import onnx

    _quiet()
    run, coverage = corpus_runner(tool)
    phases = tool == "smtshape" and hasattr(sys.modules["smtshape"], "perf") \
        and hasattr(sys.modules["smtshape.perf"], "phases")
    models = []
    for p in sorted(glob.glob(os.path.join(corpus, "*.onnx"))):
        proto = strip_value_info(onnx.load(p))
        models.append((os.path.basename(p)[:-5], proto, node_outputs_of(proto)))
    for name, proto, outs in models:
        rec = {"model": name, "tool": tool, "nodes": len(proto.graph.node), "status": "ok"}
        try:
            with contextlib.redirect_stdout(io.StringIO()):      # ORT prints on some models
                out, warm, _ = _with_alarm(lambda: _timed_run(run, proto), timeout)
                cpu, wall = [], []
                for _ in range(repeat):
                    out = None
                    out, c, w = _with_alarm(lambda: _timed_run(run, proto), timeout)
                    cpu.append(c)
                    wall.append(w)
            rec.update(cpu_ms=_med_ms(cpu, warm), wall_ms=_med_ms(wall, warm),
                       cpu_times_ms=[x * 1e3 for x in cpu], wall_times_ms=[x * 1e3 for x in wall])
            rec["coverage"] = _safe_coverage(coverage, out, outs)
            if phases:
                out = None
                with contextlib.redirect_stdout(io.StringIO()):
                    runs = [_with_alarm(lambda: phase_run(sys.modules["smtshape"], proto, name), timeout)
                            for _ in range(repeat)]
                rec["phase_times_ms"] = {k: [r[k] for r in runs] for k in PHASES}
        except _RunTimeout:
            rec.update(status="timeout", error=f"a run took over {timeout:g} s")
        except Exception as e:                                   # a crash of the tool: recorded, go on
            msg = str(e).splitlines()[0] if str(e) else ""
            rec.update(status="error", error=f"{type(e).__name__}: {msg}"[:200])
        out = None
        print(json.dumps(rec), flush=True)


# ================================================================ subprocess drivers
def _spawn_json(cmd, timeout):
    """Runs a worker; returns (status, list of JSON records from stdout, error text)."""
    os.makedirs(WORKDIR, exist_ok=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=WORKDIR)
        stdout, status = p.stdout, ("ok" if p.returncode == 0 else "error")
        err = "" if p.returncode == 0 else _last_line(p.stderr or p.stdout) or f"exit {p.returncode}"
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        status, err = "timeout", f"killed after {timeout:g} s"
    recs = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return status, recs, err


def _last_line(text):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def _worker_cmd(*args):
    return [sys.executable, os.path.abspath(__file__), *args]


def run_graphs(args, log) -> dict:
    """Part 1: {model key: {"path", "nodes", "family", "tools": {tool: record}}}."""
    out = {}
    for fam, sizes in (("transformer", args.transformer_sizes), ("cnn", args.cnn_sizes)):
        last = {}                                        # slow tool -> (key, record) at the previous size
        for n in sizes:
            path = model_path(fam, n)
            nodes = node_count(path)
            key = f"{fam}_{n}"
            row = out[key] = {"family": fam, "size": n, "nodes": nodes, "path": path, "tools": {}}
            for tool in args.tools:
                rec = _graph_one(tool, path, nodes, last.get(tool), args)
                if tool in SLOW_TOOLS and rec["status"] != "skipped":
                    last[tool] = (key, rec)
                row["tools"][tool] = rec
                log(f"graphs {key:>18} ({nodes} nodes) {tool:<9} {_describe(rec)}")
    return out


def _graph_one(tool, path, nodes, prev, args) -> dict:
    """One (tool, model) subprocess of part 1, or a skip record (slow tools only: above
    --slow-tools-max-nodes, or predicted to exceed --timeout from ``prev``, the tool's
    (key, record) at the previous size of the family)."""
    if tool in SLOW_TOOLS:
        why = _slow_skip(nodes, prev, args)
        if why:
            return {"tool": tool, "status": "skipped", "error": why}
    for attempt in range(1 + args.retries):
        t0 = time.perf_counter()
        status, recs, err = _spawn_json(_worker_cmd("--worker", tool, path, "--repeat", str(args.graph_repeat)),
                                        args.timeout)
        if status == "ok" and recs:
            rec = recs[-1]
            rec["status"] = "ok"
        else:
            rec = {"tool": tool, "status": status if status != "ok" else "error", "error": err or "no output"}
        rec["subprocess_s"] = time.perf_counter() - t0
        rec["nodes"] = nodes
        rec["attempts"] = attempt + 1
        if rec["status"] != "error":
            break
    return rec


def _slow_skip(nodes, prev, args):
    """Why a slow tool is skipped on a model of ``nodes`` nodes, or None.

    Predicted time = the previous size's warm-up + timed wall times scaled linearly by the
    node ratio (a lower bound for tools that are superlinear); skipped when it exceeds the
    timeout, and after a timeout on a smaller size."""
    if nodes > args.slow_tools_max_nodes:
        return f">{args.slow_tools_max_nodes} nodes"
    if prev is None:
        return None
    key, rec = prev
    if rec["status"] == "timeout":
        return f"timed out on {key}"
    if rec["status"] != "ok":
        return None
    runs_s = (rec["warmup_wall_ms"] + sum(rec["wall_times_ms"])) / 1e3
    predicted = runs_s * nodes / rec["nodes"]
    if predicted > args.timeout:
        return (f"predicted {predicted:.0f} s > {args.timeout:g} s timeout: "
                f"{rec['wall_ms'] / 1e3:.1f} s per run on {key}, x{nodes / rec['nodes']:.1f} nodes")
    return None


def _describe(rec):
    if rec["status"] == "ok":
        return (f"cpu {rec['cpu_ms']:.0f} ms, wall {rec['wall_ms']:.0f} ms, peak +{rec['peak_mb']:.0f} MB "
                f"(abs {rec['peak_abs_mb']:.0f}), subprocess {rec['subprocess_s']:.1f} s")
    return f"{rec['status']}: {rec.get('error', '')}"


def smtshape_cli():
    """(argv prefix, description) of the smtshape command: the console script beside
    sys.executable, else ``python -m smtshape``."""
    script = os.path.join(os.path.dirname(sys.executable), "smtshape")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return [script], f"console script `{script}`"
    return [sys.executable, "-m", "smtshape"], f"`{sys.executable} -m smtshape`"


def cold_commands(model: str, tmp_out: str) -> dict:
    """tool -> (argv, environment) of the fresh process for part 2 (smtshape and baseline:
    the same command, PYTHONPATH their checkout)."""
    py = sys.executable
    cmds = {
        "smtshape": smtshape_cli()[0] + ["check", model],
        "baseline": smtshape_cli()[0] + ["check", model],
        "onnx": [py, "-c", "import sys, onnx, onnx.shape_inference as s; "
                           "s.infer_shapes(onnx.load(sys.argv[1]), data_prop=True)", model],
        "ort": [py, "-m", "onnxruntime.tools.symbolic_shape_infer", "--input", model, "--output", tmp_out,
                "--auto_merge"],
        "osi": [py, "-c", "import sys, onnx_ir, onnx_shape_inference as o; "
                          "o.infer_symbolic_shapes(onnx_ir.load(sys.argv[1]), warn_on_missing=False)", model],
    }
    out = {}
    for tool, argv in cmds.items():
        env = None
        if tool in SMTSHAPES and (tool == "smtshape" or BASELINE_ENV in os.environ):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [smtshape_root(tool)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        out[tool] = (argv, env)
    return out


def spawn_timed(cmd, timeout, env=None):
    """A fresh process, output discarded: (exit code or None on timeout, wall s, child CPU s)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd=WORKDIR, env=env)
    killer = threading.Timer(timeout, p.kill)
    killer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        killer.cancel()
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)     # reaped here, so Popen must not wait again
    timed_out = os.WIFSIGNALED(status) and wall >= timeout
    return (None if timed_out else p.returncode), wall, ru.ru_utime + ru.ru_stime


# what a cold run imports, grouped (the first matching prefix names the group)
IMPORT_GROUPS = (("sympy", ("sympy", "mpmath")), ("numpy", ("numpy",)), ("z3", ("z3",)),
                 ("onnx", ("onnx",)), ("protobuf", ("google",)), ("smtshape", ("smtshape",)))


def _python_argv(cmd) -> list:
    """``cmd`` as arguments of the interpreter (a console script runs as a script)."""
    return cmd[1:] if cmd[0] == sys.executable else cmd


def import_profile(cmd, env, timeout) -> dict | None:
    """One more run of ``cmd`` under ``python -X importtime``: {group: ms}, the self time of
    every module imported, summed by IMPORT_GROUPS (``other``: the standard library and the
    rest; ``total``: all of it).  importtime's own overhead is in every figure (about 10-20%
    here), so they compare imports with each other, not with the timed runs."""
    p = subprocess.run([sys.executable, "-X", "importtime"] + _python_argv(cmd), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=WORKDIR, env=env,
                       timeout=timeout)
    out = {g: 0.0 for g, _ in IMPORT_GROUPS}
    out["other"] = 0.0
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        try:
            us = int(parts[0])
        except ValueError:
            continue                   # the header line
        top = parts[2].strip().split(".")[0]
        group = next((g for g, prefixes in IMPORT_GROUPS if top in prefixes), "other")
        out[group] += us / 1e3
    out["total"] = sum(out.values())
    return out if out["total"] else None


def count_instructions(cmd, env, timeout) -> float | None:
    """Instructions (millions) one cold run of ``cmd`` executes, counted by valgrind's
    callgrind (PYTHONHASHSEED fixed): unlike timers, the same on a loaded machine."""
    e = dict(env if env is not None else os.environ, PYTHONHASHSEED="0")
    try:
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
                           + _python_argv(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, cwd=WORKDIR, env=e, timeout=timeout * 50)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Collected : (\d+)", p.stderr)
    return int(m.group(1)) / 1e6 if m else None


def _compile_smtshape(tool, log):
    """Give smtshape the bytecode pip gives every installed package.  The untimed first
    run cannot leave it when PYTHONDONTWRITEBYTECODE is set (as on the machine these
    figures come from), and an editable install is never compiled by pip: without this,
    every cold smtshape run compiles its modules from source (about 0.2 s here) while
    onnx, sympy and the others load theirs from ``__pycache__``."""
    pkg = os.path.join(smtshape_root(tool), "smtshape")
    r = subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], capture_output=True, text=True)
    log(f"cold   compiled {tool}'s bytecode ({pkg}): exit {r.returncode}")


def cold_models(args) -> list:
    """(name, set, path, target) of each model of part 2: ``--cold-models`` from
    ``--corpus`` (target 1.5x onnx) and ``--cold-static-models`` from ``--vnncomp``
    (every dim static, target 1.2x)."""
    return [(m, "corpus", os.path.join(args.corpus, m + ".onnx"), 1.5) for m in args.cold_models] + \
        [(m, "vnncomp", os.path.join(args.vnncomp, m + ".onnx"), 1.2) for m in args.cold_static_models]


def run_cold(args, log) -> dict:
    """Part 2: {model: {"nodes", "tools": {tool: {wall_ms, cpu_ms, exit codes...}}}}."""
    import onnx

    os.makedirs(WORKDIR, exist_ok=True)
    for tool in SMTSHAPES:
        if tool in args.tools:
            _compile_smtshape(tool, log)
    out = {}
    for name, where, path, target in cold_models(args):
        if not os.path.exists(path):
            out[name] = {"nodes": None, "set": where, "target": target, "error": f"{path} not found", "tools": {}}
            log(f"cold   {name}: not found")
            continue
        cmds = cold_commands(path, os.path.join(WORKDIR, f"cold_{name}_ort.onnx"))
        cmds = {t: c for t, c in cmds.items() if t in args.tools}
        samples = {t: [] for t in cmds}
        for t, (c, env) in cmds.items():                   # untimed first run
            spawn_timed(c, args.timeout, env)
        for r in range(args.cold_repeat):                  # (each round a pair: the order alternates)
            for t, (c, env) in (cmds.items() if r % 2 == 0 else reversed(list(cmds.items()))):
                samples[t].append(spawn_timed(c, args.timeout, env))
        out[name] = {"nodes": len(onnx.load(path, load_external_data=False).graph.node), "set": where,
                     "target": target, "tools": {}}
        for t, s in samples.items():
            ok = [x for x in s if x[0] is not None]
            rec = {"exit_codes": sorted({x[0] for x in s}, key=lambda v: (v is None, v or 0)),
                   "timeouts": len(s) - len(ok), "runs": len(s),
                   "wall_ms": statistics.median(x[1] for x in ok) * 1e3 if ok else None,
                   "cpu_ms": statistics.median(x[2] for x in ok) * 1e3 if ok else None,
                   "cpu_times_ms": [x[2] * 1e3 for x in s], "wall_times_ms": [x[1] * 1e3 for x in s]}
            out[name]["tools"][t] = rec
            log(f"cold   {name:>16} {t:<9} cpu {_fmt(rec['cpu_ms'])} ms, wall {_fmt(rec['wall_ms'])} ms, "
                f"exit {rec['exit_codes']}")
        for t, (c, env) in cmds.items():
            if t in SMTSHAPES or t == "onnx":
                out[name]["tools"][t]["imports_ms"] = import_profile(c, env, args.timeout)
            if args.cold_instructions and t in SMTSHAPES + ("onnx",):
                n = out[name]["tools"][t]["instructions_m"] = count_instructions(c, env, args.timeout)
                log(f"cold   {name:>16} {t:<9} {_fmt(n)} M instructions")
    return out


def run_corpus(args, log) -> dict:
    """Part 3: {tool: {"status", "error", "models": {model: record}}}, over
    ``--corpus-rounds`` rounds in which the tools take turns."""
    out = {t: {"status": "ok", "error": "", "models": {}, "subprocess_s": 0.0} for t in args.tools}
    for r in range(max(1, args.corpus_rounds)):
        for tool in (args.tools if r % 2 == 0 else list(reversed(args.tools))):
            t0 = time.perf_counter()
            status, recs, err = _spawn_json(_worker_cmd("--corpus-worker", tool, args.corpus, "--repeat",
                                                        str(args.repeat), "--timeout", str(args.timeout)),
                                            args.corpus_timeout)
            o = out[tool]
            o["subprocess_s"] += time.perf_counter() - t0
            if status != "ok":
                o["status"], o["error"] = status, err
            for rec in recs:
                _merge_round(o["models"], rec)
            log(f"corpus round {r + 1} {tool:<9} {status} {len(recs)} models" + (f" ({err})" if err else ""))
    for tool, o in out.items():
        for rec in o["models"].values():
            if rec["status"] == "ok":
                rec["cpu_ms"] = statistics.median(rec["cpu_times_ms"])
                rec["wall_ms"] = statistics.median(rec["wall_times_ms"])
                if "phase_times_ms" in rec:
                    rec["phases_ms"] = {k: statistics.median(v) for k, v in rec["phase_times_ms"].items()}
        ok = [r["cpu_ms"] for r in o["models"].values() if r["status"] == "ok"]
        log(f"corpus {tool:<9} {o['status']} {len(ok)}/{len(o['models'])} models ok, sum {sum(ok):.0f} ms CPU, "
            f"{o['subprocess_s']:.0f} s" + (f" ({o['error']})" if o["error"] else ""))
    return out


def _merge_round(models: dict, rec: dict):
    """Pool one round's record of a model into ``models``: the timed runs of every
    round together; a model that failed in any round stays failed."""
    prev = models.get(rec["model"])
    if prev is None or (prev["status"] == "ok" and rec["status"] != "ok"):
        models[rec["model"]] = rec
    elif prev["status"] == "ok":
        prev["cpu_times_ms"] = prev["cpu_times_ms"] + rec["cpu_times_ms"]
        prev["wall_times_ms"] = prev["wall_times_ms"] + rec["wall_times_ms"]
        if "phase_times_ms" in prev and "phase_times_ms" in rec:
            prev["phase_times_ms"] = {k: v + rec["phase_times_ms"][k] for k, v in prev["phase_times_ms"].items()}


# ================================================================ report helpers
def _fmt(x, nd=0):
    if x is None:
        return "-"
    if nd == 0 and abs(x) < 10:
        return f"{x:.1f}"
    return f"{x:.{nd}f}"


def _ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def _ok(rec):
    return rec is not None and rec.get("status") == "ok"


def _cell_status(rec):
    if rec is None:
        return "-"
    if rec["status"] == "skipped":
        return f"skipped ({rec.get('error', '')})"
    return rec["status"]


def _loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def machine_lines(data) -> list:
    import importlib.metadata as md

    vers = []
    for p in ["onnx", "onnxruntime", "onnx-ir", "onnx-shape-inference", "z3-solver", "sympy", "numpy", "protobuf"]:
        try:
            vers.append(f"{p} {md.version(p)}")
        except md.PackageNotFoundError:
            vers.append(f"{p} not installed")
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "smtshape"], capture_output=True,
                               text=True).stdout.strip()
        commit += " (smtshape/ has uncommitted changes)" if dirty else ""
    except OSError:
        commit = "?"
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return [
        f"- Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"- CPU: {cpu}, os.cpu_count() = {os.cpu_count()}; load average (1, 5, 15 min) at the start "
        f"{data['load_start']}, at the end {_loadavg()} (the machine is shared with other jobs)",
        "- " + ", ".join(vers),
        f"- smtshape commit {commit}",
        f"- started {time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(data['started']))}; "
        f"the whole run took {data['elapsed_s'] / 60:.1f} min",
    ]


# ================================================================ report: criteria
BASELINE_MAX = 1.05     # "no slower than the baseline": within the noise of a median of runs


def paired(row, tool, other, key="wall"):
    """Part 2: the median over rounds of ``tool``'s time / ``other``'s time in the same round."""
    a = (row.get("tools", {}).get(tool) or {}).get(f"{key}_times_ms") or []
    b = (row.get("tools", {}).get(other) or {}).get(f"{key}_times_ms") or []
    qs = [x / y for x, y in zip(a, b) if x and y]
    return statistics.median(qs) if qs else None


def criteria_rows(data) -> list:
    """(criterion, measured, target, verdict): issue 22's 'done means' and issue 8's."""
    rows = []
    g = data.get("graphs") or {}
    for key in ("transformer_15000", "transformer_50000", "cnn_10000"):
        r = g.get(key, {}).get("tools", {})
        q = _ratio(r.get("smtshape", {}).get("cpu_ms") if _ok(r.get("smtshape")) else None,
                   r.get("onnx", {}).get("cpu_ms") if _ok(r.get("onnx")) else None)
        meas = _x(q) if key in g else "not measured"
        rows.append((f"{key}: smtshape / onnx, end to end, CPU", meas, "<= 2.0x", _verdict(q, 2.0)))
    r = g.get("transformer_50000", {}).get("tools", {})
    if _ok(r.get("smtshape")) and _ok(r.get("onnx")):
        s, o = r["smtshape"], r["onnx"]
        meas = (f"growth {s['peak_mb']:.0f} vs {o['peak_mb']:.0f} MB ({_x(_ratio(s['peak_mb'], o['peak_mb']))}); "
                f"absolute {s['peak_abs_mb']:.0f} vs {o['peak_abs_mb']:.0f} MB")
        rows.append(("transformer_50000: peak RSS, smtshape vs onnx (verdict on growth)", meas, "<= onnx",
                     _verdict(_ratio(s["peak_mb"], o["peak_mb"]), 1.0)))
    else:
        rows.append(("transformer_50000: peak RSS", "not measured", "<= onnx", "-"))
    lin = linearity(g)
    upto = f"to {lin['largest'] // 1000}k" if lin["factor"] is not None else "in nodes"
    rows.append((f"linear {upto}: (t(largest transformer) / t(15k)) / node ratio, smtshape CPU",
                 _fmt(lin["factor"], 2)
                 if lin["factor"] is not None else "not measured", f"<= {LINEAR_MAX}",
                 _verdict(lin["factor"], LINEAR_MAX)))
    for key, row in g.items():
        s, b = row["tools"].get("smtshape"), row["tools"].get("baseline")
        if _ok(s) and _ok(b):
            q = _ratio(s["cpu_ms"], b["cpu_ms"])
            rows.append((f"{key}: smtshape / baseline, end to end, CPU", f"{_x(q)} ({s['cpu_ms']:.0f} vs "
                         f"{b['cpu_ms']:.0f} ms)", f"<= {BASELINE_MAX}x", _verdict(q, BASELINE_MAX)))
    cold = data.get("cold") or {}
    for name, row in cold.items():
        t = row.get("tools", {})
        if "smtshape" not in t or "onnx" not in t:
            continue
        qw, qc = paired(row, "smtshape", "onnx", "wall"), paired(row, "smtshape", "onnx", "cpu")
        lim = row.get("target", 1.5)
        what = "every dim static" if row.get("set") == "vnncomp" else "corpus"
        ni = _ratio((t["smtshape"] or {}).get("instructions_m"), (t["onnx"] or {}).get("instructions_m"))
        rows.append((f"cold `smtshape check {name}` ({what}) / cold onnx load + infer: median of paired runs, wall",
                     f"{_x(qw)} (CPU {_x(qc)}" + (f", instructions {_x(ni)})" if ni else ")"), f"<= {lim}x",
                     _verdict(qw, lim)))
    corp = data.get("corpus") or {}
    if corp:
        bad = [m for m, r in (corp.get("smtshape") or {}).get("models", {}).items() if r["status"] != "ok"]
        failed = f"; smtshape failed on {len(bad)}: {', '.join(bad)}" if bad else ""
        for other, target, lim in (("onnx", "<= 2x", 2.0), ("ort", "< 1x", 1.0), ("osi", "< 1x", 1.0),
                                   ("baseline", f"<= {BASELINE_MAX}x", BASELINE_MAX)):
            if other not in corp:
                continue
            tot = corpus_totals(corp, ["smtshape", other])
            q = _ratio(tot.get("smtshape"), tot.get(other))
            rows.append((f"corpus warm total: smtshape / {other} ({tot.get('n', 0)} models both ran{failed})",
                         _x(q), target, _verdict(q, lim, strict=(lim == 1.0))))
    return rows


def _x(q):
    return "-" if q is None else f"{q:.2f}x"


def _verdict(q, limit, strict=False):
    if q is None:
        return "-"
    return "pass" if (q < limit if strict else q <= limit) else "FAIL"


def linearity(graphs) -> dict:
    """smtshape µs/node per transformer size and the (t(largest)/t(15k)) / node-ratio factor."""
    pts = []
    for row in graphs.values():
        s = row["tools"].get("smtshape")
        if row["family"] == "transformer" and _ok(s):
            pts.append((row["size"], row["nodes"], s["cpu_ms"]))
    pts.sort()
    base = next((p for p in pts if p[0] == 15000), None)
    largest = pts[-1] if pts else None
    factor = None
    if base and largest and largest[0] > base[0]:
        factor = (largest[2] / base[2]) / (largest[1] / base[1])
    return {"points": pts, "factor": factor, "largest": largest[0] if largest else None}


def corpus_totals(corp, tools) -> dict:
    """Sum of per-model CPU medians per tool over the models where every one of ``tools`` ran."""
    names = None
    for t in tools:
        ok = {m for m, r in (corp.get(t) or {}).get("models", {}).items() if r["status"] == "ok"}
        names = ok if names is None else names & ok
    names = names or set()
    out = {"n": len(names)}
    for t in tools:
        out[t] = sum(corp[t]["models"][m]["cpu_ms"] for m in names) if names else None
    return out


# ================================================================ report: sections
def graphs_section(graphs, tools, args) -> list:
    others = [t for t in tools if t != "smtshape"]
    out = ["## Generated graphs, end to end from the file", "",
           f"CPU time per run in ms (median of {args.graph_repeat} after 1 warm-up; `process_time` of the worker) and "
           "peak resident-set growth in MB over the warm-up and timed runs (imports excluded). Ratios: smtshape "
           "CPU time / the other tool's; `mem` = smtshape's peak growth / onnx's. "
           f"Timeout {args.timeout:g} s per (tool, model) subprocess; ort and osi run up to "
           f"{args.slow_tools_max_nodes} nodes and where their time on the previous size, scaled by the node "
           "ratio, stays within the timeout.", ""]
    head = ["model", "nodes"]
    for t in tools:
        head += [f"{t} ms", f"{t} MB"]
    if "smtshape" in tools:
        head += [f"smtshape/{t}" for t in others]
        if "onnx" in tools:
            head.insert(len(head) - len(others) + 1, "mem smtshape/onnx")
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in graphs.items():
        r = row["tools"]
        cells = [key, str(row["nodes"])]
        for t in tools:
            rec = r.get(t)
            cells += [_fmt(rec["cpu_ms"]), _fmt(rec["peak_mb"])] if _ok(rec) else [_cell_status(rec), "-"]
        if "smtshape" in tools:
            s = r.get("smtshape") if _ok(r.get("smtshape")) else None
            for t in others:
                o = r.get(t) if _ok(r.get(t)) else None
                cells.append(_x(_ratio(s and s["cpu_ms"], o and o["cpu_ms"])))
                if t == "onnx":
                    cells.append(_x(_ratio(s and s["peak_mb"], o and o["peak_mb"])))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Wall time (ms, median) and absolute peak resident set of the worker (MB: interpreter, imports "
            "and the runs; lifetime `VmHWM`):", ""]
    head = ["model"] + [f"{t} wall ms" for t in tools] + [f"{t} abs MB" for t in tools]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in graphs.items():
        r = row["tools"]
        cells = [key] + [_fmt(r[t]["wall_ms"]) if _ok(r.get(t)) else "-" for t in tools]
        cells += [_fmt(r[t]["peak_abs_mb"]) if _ok(r.get(t)) else "-" for t in tools]
        out.append("| " + " | ".join(cells) + " |")
    retried = [f"{key} {t} ({r['attempts']} attempts, {r['status']})" for key, row in graphs.items()
               for t, r in row["tools"].items() if r.get("attempts", 1) > 1]
    if retried:
        out += ["", "Rerun after a failure: " + ", ".join(retried) + "."]
    failed = [f"{key} {t}: {r['status']}, {r.get('error', '')}" for key, row in graphs.items()
              for t, r in row["tools"].items() if r["status"] in ("error", "timeout")]
    if failed:
        out += ["", "Failures: " + "; ".join(f.replace("|", "\\|") for f in failed) + "."]
    lin = linearity(graphs)
    if lin["points"]:
        pts = ", ".join(f"{n // 1000 if n >= 1000 else n}{'k' if n >= 1000 else ''}: "
                        f"{1e3 * ms / nodes:.1f} µs/node" for n, nodes, ms in lin["points"])
        fac = (f"; (t({lin['largest'] // 1000}k) / t(15k)) / node ratio = {lin['factor']:.2f} (1.0 = linear)"
               if lin["factor"] is not None else "")
        out += ["", f"Linearity, smtshape CPU on the transformer graphs: {pts}{fac}."]
    out.append("")
    return out


def cold_section(cold, tools, args) -> list:
    out = ["## Cold command line", "",
           f"A fresh process per run, output discarded; {args.cold_repeat} rounds after one untimed run per tool, "
           "the tools taking turns in each round (the order reversed every other round); medians, and the median "
           "over rounds of smtshape's time / onnx's in the same round (`paired`). "
           "CPU = the child's user + system time (`os.wait4`, all threads: it includes about 70-100 ms that "
           "OpenBLAS's threads spin on the other core when numpy is imported, off the critical path), "
           "wall = spawn to reap; the verdict uses the paired wall ratio. Models: `--cold-models` from the corpus, "
           "`--cold-static-models` (every dim static) from `--vnncomp`. "
           f"smtshape runs as {smtshape_cli()[1]}: `smtshape check M`; onnx as `python -c \"import onnx, "
           "onnx.shape_inference as s; s.infer_shapes(onnx.load(M), data_prop=True)\"`; ort as `python -m "
           "onnxruntime.tools.symbolic_shape_infer --input M --output TMP --auto_merge`; osi as `python -c` "
           "importing onnx_ir and onnx_shape_inference, `infer_symbolic_shapes(onnx_ir.load(M), "
           "warn_on_missing=False)`.", ""]
    head = ["model", "set", "nodes"] + [f"{t} CPU / wall ms" for t in tools] + ["exit codes"]
    pairs = [t for t in tools if t in SMTSHAPES] if "onnx" in tools else []
    head += [f"{t}/onnx paired wall" for t in pairs] + [f"{t}/onnx paired CPU" for t in pairs]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in cold.items():
        t = row.get("tools", {})
        cells = [name, row.get("set", "-"), str(row.get("nodes") or "-")]
        cells += [f"{_fmt((t.get(x) or {}).get('cpu_ms'))} / {_fmt((t.get(x) or {}).get('wall_ms'))}" for x in tools]
        cells.append(", ".join(f"{x} {t[x]['exit_codes']}" for x in tools if x in t))
        cells += [_x(paired(row, x, "onnx", "wall")) for x in pairs] + [_x(paired(row, x, "onnx", "cpu")) for x in pairs]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    counted = [(n, r) for n, r in cold.items() if any((v or {}).get("instructions_m") for v in r.get("tools", {}).values())]
    if counted:
        itools = [t for t in tools if t in SMTSHAPES or t == "onnx"]
        out += ["Instructions of one cold run (millions; valgrind `--tool=callgrind`, PYTHONHASHSEED=0, "
                "`--cold-instructions`): the same on a loaded machine, where the timers above are not. "
                "They leave out what instructions do not show: page faults (a Z3 context maps about 18 MB), "
                "waits, OpenBLAS's spinning threads.", ""]
        head = ["model"] + [f"{t} M" for t in itools] + [f"{t}/onnx" for t in itools if t in SMTSHAPES]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, row in counted:
            t = row["tools"]
            n = {x: (t.get(x) or {}).get("instructions_m") for x in itools}
            out.append("| " + " | ".join([name] + [_fmt(n[x]) for x in itools]
                                         + [_x(_ratio(n[x], n.get("onnx"))) for x in itools if x in SMTSHAPES]) + " |")
        out.append("")
    profiled = [(n, r) for n, r in cold.items() if any((v or {}).get("imports_ms") for v in r.get("tools", {}).values())]
    if profiled:
        groups = [g for g, _ in IMPORT_GROUPS] + ["other", "total"]
        out += ["What each cold run imports (one more run under `python -X importtime`: the self time of every "
                "module, summed by package, ms; `other`: the standard library and the rest; importtime's own "
                "overhead is in every figure, so they compare imports with each other):", ""]
        head = ["model", "tool"] + groups
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, row in profiled:
            for x, rec in row["tools"].items():
                im = (rec or {}).get("imports_ms")
                if im:
                    out.append("| " + " | ".join([name, x] + [_fmt(im.get(g)) if im.get(g) else "-" for g in groups])
                               + " |")
        out.append("")
    return out


def corpus_section(corp, tools, args) -> list:
    out = ["## Warm, per model, over the corpus", "",
           f"`{os.path.relpath(args.corpus, ROOT)}`: every `*.onnx`, value_info stripped; one subprocess per tool; "
           f"{args.corpus_rounds} rounds, the tools taking turns (one subprocess per tool and round); per model "
           f"and round 1 warm-up and {args.repeat} timed runs; the median of all timed runs of CPU time from "
           "the in-memory ModelProto. "
           "Sums and ratios over the models both compared tools ran.", ""]
    out += ["| tool | models ok | failed | sum of medians ms | median per model ms | smtshape / tool (sums) |",
            "|---|---|---|---|---|---|"]
    for t in tools:
        ms = (corp.get(t) or {}).get("models", {})
        ok = [r["cpu_ms"] for r in ms.values() if r["status"] == "ok"]
        bad = [f"{m} ({r['status']})" for m, r in ms.items() if r["status"] != "ok"]
        st = (corp.get(t) or {}).get("status", "-")
        if st != "ok":
            bad.append(f"worker {st}: {(corp.get(t) or {}).get('error', '')}")
        tot = corpus_totals(corp, ["smtshape", t]) if "smtshape" in corp and t != "smtshape" else {}
        q = _x(_ratio(tot.get("smtshape"), tot.get(t))) + f" ({tot['n']} models)" if tot else "-"
        out.append(f"| {t} | {len(ok)} | {', '.join(bad) or 0} | {_fmt(sum(ok)) if ok else '-'} | "
                   f"{_fmt(statistics.median(ok), 2) if ok else '-'} | {q} |")
    out += phases_lines(corp)
    if "smtshape" in corp and "onnx" in corp:
        s, o = corp["smtshape"]["models"], corp["onnx"]["models"]
        qs = sorted(((s[m]["cpu_ms"] / o[m]["cpu_ms"], m) for m in s
                     if m in o and _ok(s[m]) and _ok(o[m]) and o[m]["cpu_ms"] > 0), reverse=True)
        out += ["", "Highest smtshape / onnx ratios: " + ", ".join(
            f"{m} {q:.1f}x ({s[m]['cpu_ms']:.1f} vs {o[m]['cpu_ms']:.2f} ms)" for q, m in qs[:5]) + "."]
    out += ["", "<details><summary>Per model (CPU ms, median)</summary>", "",
            "| model | nodes | " + " | ".join(tools) + " | smtshape/onnx |", "|---|---|" + "---|" * (len(tools) + 1)]
    names = sorted({m for t in tools for m in (corp.get(t) or {}).get("models", {})})
    for m in names:
        recs = [(corp.get(t) or {}).get("models", {}).get(m) for t in tools]
        nodes = next((r["nodes"] for r in recs if r), "-")
        cells = [_fmt(r["cpu_ms"], 2) if _ok(r) else (r["status"] if r else "-") for r in recs]
        s = (corp.get("smtshape") or {}).get("models", {}).get(m)
        o = (corp.get("onnx") or {}).get("models", {}).get(m)
        q = _x(_ratio(s["cpu_ms"], o["cpu_ms"])) if _ok(s) and _ok(o) else "-"
        out.append(f"| {m} | {nodes} | " + " | ".join(cells) + f" | {q} |")
    out += ["", "</details>", ""]
    return out


def phases_lines(corp) -> list:
    """smtshape's per-phase breakdown (``phase_run``): sums over the models of the per-model
    medians, over all models and over the models below the median size."""
    ms = {m: r for m, r in (corp.get("smtshape") or {}).get("models", {}).items() if _ok(r) and "phases_ms" in r}
    if not ms:
        return []
    small = sorted(ms, key=lambda m: ms[m]["nodes"])[:len(ms) // 2]
    out = ["", f"smtshape per phase (separate runs after the timed ones; process ms, sum over the models of the "
           f"median per model; read + walk + classify is what a timed run does, findings and report are what "
           f"`smtshape check` / `infer` add; the {len(small)} smallest models apart, where fixed costs show):", "",
           "| models | " + " | ".join(PHASES) + " | read + walk + classify | timed runs |",
           "|---|" + "---|" * (len(PHASES) + 2)]
    for label, names in ((f"all {len(ms)}", list(ms)), (f"{len(small)} smallest (up to {ms[small[-1]]['nodes']} "
                                                           f"nodes)" if small else "-", small)):
        tot = {k: sum(ms[m]["phases_ms"][k] for m in names) for k in PHASES}
        out.append(f"| {label} | " + " | ".join(_fmt(tot[k], 1) for k in PHASES)
                   + f" | {_fmt(tot['read'] + tot['walk'] + tot['classify'], 1)} | "
                   f"{_fmt(sum(ms[m]['cpu_ms'] for m in names), 1)} |")
    return out


def resolved_section(data, tools) -> list:
    out = ["## How much each tool resolved", "",
           "Over the outputs of the nodes of the main graph. smtshape: dims by exactness after `result.shapes()`, "
           "values of unknown rank and the store's counters. Others: dims with a `dim_value` or `dim_param` in the "
           "returned model (ORT's fresh `unk__N` names count as named, so this is an upper bound on what they "
           "resolved) and values without a shape. Speed bought by leaving dims UNKNOWN shows here.", ""]
    rows = [(k, r["tools"]) for k, r in (data.get("graphs") or {}).items()]
    corp = data.get("corpus") or {}
    if corp:
        rows.append(("corpus (sum over models)", {t: _corpus_cov_sum(corp.get(t)) for t in tools}))
    if "smtshape" in tools:
        out += ["| model | dims | EXACT | UPPER_BOUND | UNKNOWN | resolved | values of unknown rank | "
                "constraints | Z3 checks | Z3 unknowns | consistent |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for key, r in rows:
            s = r.get("smtshape")
            if not _ok(s):
                out.append(f"| {key} | {_cell_status(s)} |" + " |" * 9)
                continue
            c = s["coverage"]
            if "error" in c:
                out.append(f"| {key} | coverage failed: {c['error']} |" + " |" * 9)
                continue
            frac = f"{(c['exact'] + c['upper_bound']) / c['dims']:.1%}" if c["dims"] else "-"
            out.append(f"| {key} | {c['dims']} | {c['exact']} | {c['upper_bound']} | {c['unknown']} | {frac} | "
                       f"{c['values_unknown_rank']} | {c.get('constraints')} | {c.get('z3_checks')} | "
                       f"{c.get('z3_unknowns')} | {c.get('consistent')} |")
        out.append("")
    others = [t for t in tools if t not in SMTSHAPES]
    if others:
        out += ["| model | " + " | ".join(f"{t}: dims known / dims, values without shape" for t in others) + " |",
                "|---|" + "---|" * len(others)]
        for key, r in rows:
            cells = []
            for t in others:
                rec = r.get(t)
                c = rec["coverage"] if _ok(rec) else {}
                if "error" in c:
                    cells.append(f"coverage failed: {c['error']}")
                elif _ok(rec):
                    cells.append(f"{c['known']} / {c['dims']}, {c['values_no_shape']}")
                else:
                    cells.append(_cell_status(rec))
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _corpus_cov_sum(tool_rec):
    """Coverage summed over the corpus models a tool ran (a pseudo record for resolved_section)."""
    if not tool_rec:
        return None
    ms = [r for r in tool_rec.get("models", {}).values() if r["status"] == "ok" and "error" not in r["coverage"]]
    if not ms:
        return {"status": "error", "error": "no model ran"}
    tot = {}
    for r in ms:
        for k, v in r["coverage"].items():
            if isinstance(v, int) and not isinstance(v, bool):
                tot[k] = (tot.get(k) or 0) + v
            else:
                tot.setdefault(k, None)
    if "consistent" in tot:
        n_cons = sum(1 for r in ms if r["coverage"].get("consistent") is True)
        tot["consistent"] = f"{n_cons}/{len(ms)} models"
    return {"status": "ok", "coverage": tot}


def report(data, args, argv) -> str:
    tools = args.tools
    out = [BEGIN, "",
           "Rerun with the command below to refresh this part (the sections after bench:end are kept). "
           "Generated models: `benchmarks/graphs.py` (GPT-2-like TorchScript-exporter-style transformer layers, "
           "U-Net-style CNN blocks, opset 17, symbolic batch / seq / H / W). What each figure measures is defined "
           "exactly in the docstring of `benchmarks/bench.py`.", "",
           "```", "python benchmarks/bench.py " + " ".join(argv), "```", "",
           "Machine:", ""] + machine_lines(data) + [""]
    out += ["## Criteria (issues 22 and 8)", "", "| criterion | measured | target | verdict |", "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in criteria_rows(data)]
    out += ["", "Tools: " + "; ".join(f"`{t}` = {TOOL_LABEL[t]}" for t in tools) + ". Ratios are smtshape / "
            "the other tool (below 1: smtshape is faster or smaller).", ""]
    if data.get("graphs"):
        out += graphs_section(data["graphs"], tools, args)
    if data.get("cold"):
        out += cold_section(data["cold"], tools, args)
    if data.get("corpus"):
        out += corpus_section(data["corpus"], tools, args)
    out += resolved_section(data, tools)
    out.append(END)
    return "\n".join(out)


def write_marked(path: str, block: str) -> None:
    """Replaces the text between the bench markers of ``path`` by ``block`` (which holds
    the markers), or appends ``block`` when the file has no markers; atomic."""
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    i, j = old.find(BEGIN.split(" (")[0]), old.find(END)
    if i >= 0 and j > i:
        new = old[:i] + block + old[j + len(END):]
    else:
        new = (old.rstrip("\n") + "\n\n" if old else "# Shape-inference speed benchmark\n\n") + block + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, path)


# ================================================================ main
def profile_run(path: str) -> None:
    """One smtshape run end to end from the path, phases printed (run under cProfile)."""
    sys.path.insert(0, ROOT)
    import smtshape

    t = time.perf_counter()
    res = smtshape.analyze(path)
    t1 = time.perf_counter()
    try:
        res.shapes()
    except Exception as e:          # the rules are in flux: report, keep the profile
        print(f"result.shapes() failed: {type(e).__name__}: {e}", file=sys.stderr)
    t2 = time.perf_counter()
    st = getattr(res, "store", None)
    print(f"analyze {1e3 * (t1 - t):.0f} ms, shapes() {1e3 * (t2 - t1):.0f} ms, "
          f"z3_checks {getattr(st, 'z3_checks', '?')}, z3_unknowns {getattr(st, 'z3_unknowns', '?')}, "
          f"constraints {len(getattr(st, 'constraints', []) or [])}, consistent {res.consistent}", file=sys.stderr)


def _ints(text):
    return [int(s) for s in text.split(",") if s.strip()]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="graphs,cold,corpus", help="comma list of graphs, cold, corpus")
    ap.add_argument("--tools", default=DEFAULT_TOOLS, help=f"comma list of {', '.join(TOOLS[:-1])}")
    ap.add_argument("--baseline-root", default=None,
                    help="another checkout of smtshape (an older commit's worktree), measured beside this one in "
                         "every part as the tool 'baseline'")
    ap.add_argument("--transformer-sizes", default=DEFAULT_SIZES["transformer"], help="node counts; '' for none")
    ap.add_argument("--cnn-sizes", default=DEFAULT_SIZES["cnn"], help="node counts; '' for none")
    ap.add_argument("--sizes", default=None, help="sets both --transformer-sizes and --cnn-sizes")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per (tool, model) per round in part corpus")
    ap.add_argument("--graph-repeat", type=int, default=5,
                    help="timed runs per (tool, model) in part graphs (default 5: a run of the largest graphs "
                         "takes 1-3 s, and a median of 3 moved by up to 20%% on a shared machine)")
    ap.add_argument("--corpus-rounds", type=int, default=5,
                    help="part corpus: rounds in which the tools take turns (default 5)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per graphs subprocess, per cold process, per single corpus run")
    ap.add_argument("--retries", type=int, default=1,
                    help="reruns of a graphs worker that failed (not timed out); the report says so")
    ap.add_argument("--slow-tools-max-nodes", type=int, default=50000, help="ort and osi skipped above this")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(ROOT), "shared", "corpus"))
    ap.add_argument("--cold-models", default=COLD_MODELS, help="model stems in --corpus for part cold")
    ap.add_argument("--vnncomp", default=os.path.join(os.path.dirname(ROOT), "shared", "vnncomp"))
    ap.add_argument("--cold-static-models", default=COLD_STATIC_MODELS,
                    help="model stems in --vnncomp for part cold (models whose dims are all static)")
    ap.add_argument("--cold-repeat", type=int, default=9, help="rounds of part cold (default 9)")
    ap.add_argument("--cold-instructions", action="store_true",
                    help="part cold: also count the instructions of one cold run of smtshape, baseline and "
                         "onnx per model (valgrind; about a minute per run)")
    ap.add_argument("--corpus-timeout", type=float, default=900.0, help="seconds per corpus worker (one per tool)")
    ap.add_argument("--out", default=None, help="markdown file whose bench section is rewritten")
    ap.add_argument("--json", default=None, help="also write raw results as JSON")
    ap.add_argument("--worker", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus-worker", nargs=2, metavar=("TOOL", "DIR"), help=argparse.SUPPRESS)
    ap.add_argument("--profile-run", metavar="MODEL", help="run smtshape once on MODEL (for cProfile)")
    args = ap.parse_args(argv)
    if args.sizes is not None:
        args.transformer_sizes = args.cnn_sizes = args.sizes
    args.transformer_sizes, args.cnn_sizes = _ints(args.transformer_sizes), _ints(args.cnn_sizes)
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    args.cold_models = [m.strip() for m in args.cold_models.split(",") if m.strip()]
    args.cold_static_models = [m.strip() for m in args.cold_static_models.split(",") if m.strip()]
    args.corpus, args.vnncomp = os.path.abspath(args.corpus), os.path.abspath(args.vnncomp)
    if args.baseline_root:
        args.baseline_root = os.path.abspath(args.baseline_root)
        if not os.path.isfile(os.path.join(args.baseline_root, "smtshape", "__init__.py")):
            ap.error(f"--baseline-root {args.baseline_root}: no smtshape package there")
        os.environ[BASELINE_ENV] = args.baseline_root      # (the workers read it)
        if "baseline" not in args.tools:
            args.tools.append("baseline")
    for t in args.tools:
        if t not in TOOLS or (t == "baseline" and BASELINE_ENV not in os.environ):
            ap.error(f"unknown tool {t!r}; choose from {', '.join(TOOLS[:-1])} (baseline: give --baseline-root)")
    for p in args.parts:
        if p not in ("graphs", "cold", "corpus"):
            ap.error(f"unknown part {p!r}; choose from graphs, cold, corpus")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(graph_worker(args.worker[0], args.worker[1], args.repeat)))
        return
    if args.corpus_worker:
        corpus_worker(args.corpus_worker[0], args.corpus_worker[1], args.repeat, args.timeout)
        return
    if args.profile_run:
        profile_run(args.profile_run)
        return

    def log(msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    started = time.time()
    data = {"started": started, "argv": argv, "args": vars(args), "load_start": _loadavg()}
    if "graphs" in args.parts:
        data["graphs"] = run_graphs(args, log)
    if "cold" in args.parts:
        data["cold"] = run_cold(args, log)
    if "corpus" in args.parts:
        data["corpus"] = run_corpus(args, log)
    data["elapsed_s"] = time.time() - started
    text = report(data, args, argv)
    print(text)
    if args.out:
        write_marked(args.out, text)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1, default=str)
    log(f"done in {data['elapsed_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
