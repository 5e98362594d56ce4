"""Speed benchmark: smtshape against the other ONNX shape-inference tools.

    python benchmarks/bench.py [--sizes 1000,15000,50000] [--families transformer,cnn]
                               [--repeat 3] [--tools smtshape,onnx,ort,osi]
                               [--timeout 300] [--out docs/benchmarks.md]

Models come from ``benchmarks/graphs.py`` and are cached as
``benchmarks/.cache/<family>_<size>.onnx``.  The cnn family is capped at
15000 nodes (``--cnn-max``).

Each (tool, model) pair runs in its own subprocess (``bench.py --worker``):
the model is loaded with ``onnx.load`` (not timed), the tool is imported and
run once as a warm-up, then ``--repeat`` timed runs; the time reported is the
median wall time (``time.perf_counter``).  Every tool starts from the same
``onnx.ModelProto``; proto -> IR conversion is inside the timed region for the
IR-based tools (smtshape, onnx-shape-inference), and the proto copy /
serialisation the other two do internally is inside theirs.

Tools (what is timed):

    smtshape  smtshape.analyze(proto) followed by result.shapes() (the result
              solves dims lazily; shapes() forces every value's dims, so the
              comparison is against tools that write every shape out)
    onnx      onnx.shape_inference.infer_shapes(proto, data_prop=True)
    ort       SymbolicShapeInference.infer_shapes(proto, auto_merge=True)
              (onnxruntime.tools.symbolic_shape_infer)
    osi       onnx_shape_inference.infer_symbolic_shapes(onnx_ir.from_proto(proto))

Peak memory: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the worker after
the runs minus the same figure just before the warm-up (model loaded, tool
imported): the growth of the process's peak resident set caused by running the
tool, native allocations (Z3, onnx C++) included.  tracemalloc is not used, as
it misses native memory and slows Python code.

A worker that exceeds ``--timeout`` seconds (whole subprocess) is killed and
recorded as ``timeout``; one that fails is recorded as ``error`` with its last
message line.

Besides time, each worker reports how much it inferred, over the outputs of
the model's nodes: for smtshape, dims EXACT / UPPER_BOUND / UNKNOWN and values
of unknown rank; for the others, dims carrying a ``dim_value`` or a
``dim_param`` in the returned model (ORT's fresh ``unk__N`` names count as
named) and values with no shape.

Profiling one smtshape run (loading included, separate entries):

    python -m cProfile -s cumtime benchmarks/bench.py --profile-run benchmarks/.cache/transformer_15000.onnx
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".cache")
TOOLS = ["smtshape", "onnx", "ort", "osi"]
TOOL_LABEL = {"smtshape": "smtshape", "onnx": "onnx C++ (data_prop)",
              "ort": "ORT SymbolicShapeInference", "osi": "onnx-shape-inference"}


# ---------------------------------------------------------------- models
def model_path(family: str, size: int) -> str:
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


# ---------------------------------------------------------------- worker
def _maxrss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024   # bytes on macOS, KiB on Linux


def _proc_status_mb(field: str):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024          # kB
    except OSError:
        pass
    return None


def _peak_reset():
    """Start a peak-memory measurement; returns a function giving the peak growth in MB.

    Linux: reset the resident-set high-water mark (write 5 to /proc/self/clear_refs),
    then peak = VmHWM - VmRSS at the reset.  ru_maxrss is not usable as-is in a
    subprocess: Linux keeps it across fork + execve, so a worker inherits the
    parent's peak.  Elsewhere: ru_maxrss delta (then a lower bound)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        rss0 = _proc_status_mb("VmRSS")
        if rss0 is not None and _proc_status_mb("VmHWM") is not None:
            return (lambda: _proc_status_mb("VmHWM") - rss0), "VmHWM after reset minus VmRSS"
    except OSError:
        pass
    r0 = _maxrss_mb()
    return (lambda: _maxrss_mb() - r0), "ru_maxrss delta"


def _proto_coverage(proto, node_outputs) -> dict:
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


def _runner(tool: str):
    """Returns (run(proto) -> result, coverage(result) -> dict, versions)."""
    if tool == "smtshape":
        sys.path.insert(0, ROOT)
        import smtshape
        from smtshape.dim import Exactness

        def run(proto):
            res = smtshape.analyze(proto)
            res.shapes()
            return res

        def coverage(res, node_outputs):
            c = {"dims": 0, "exact": 0, "upper_bound": 0, "unknown": 0, "values_unknown_rank": 0,
                 "values_missing": 0}
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
            st = res.store
            c["z3_checks"] = st.z3_checks
            c["z3_unknowns"] = getattr(st, "z3_unknowns", None)
            c["constraints"] = len(st.constraints)
            c["conflicts"] = len(res.conflicts)
            c["consistent"] = res.consistent
            return c

        return run, coverage, {"smtshape": getattr(smtshape, "__version__", "?")}
    if tool == "onnx":
        import onnx
        from onnx import shape_inference

        def run(proto):
            return shape_inference.infer_shapes(proto, data_prop=True)

        return run, _proto_coverage, {"onnx": onnx.__version__}
    if tool == "ort":
        import onnxruntime
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        def run(proto):
            return SymbolicShapeInference.infer_shapes(proto, auto_merge=True)

        return run, _proto_coverage, {"onnxruntime": onnxruntime.__version__}
    if tool == "osi":
        import importlib.metadata as md

        import onnx_ir as ir
        import onnx_shape_inference as osi

        def run(proto):
            return osi.infer_symbolic_shapes(ir.from_proto(proto), warn_on_missing=False)

        def coverage(model, node_outputs):
            return _proto_coverage(ir.to_proto(model), node_outputs)

        return run, coverage, {"onnx-shape-inference": md.version("onnx-shape-inference"),
                               "onnx-ir": ir.__version__}
    raise SystemExit(f"unknown tool {tool!r}; choose from {', '.join(TOOLS)}")


def worker(tool: str, path: str, repeat: int) -> dict:
    import logging
    import warnings

    import onnx

    logging.disable(logging.WARNING)       # ORT / osi log per unsupported node
    warnings.simplefilter("ignore")
    proto = onnx.load(path)
    node_outputs = [o for n in proto.graph.node for o in n.output if o]
    run, coverage, versions = _runner(tool)
    import gc

    gc.collect()
    peak_of, peak_method = _peak_reset()
    t = time.perf_counter()
    out = run(proto)
    warm = time.perf_counter() - t
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = run(proto)
        times.append(time.perf_counter() - t)
    peak = peak_of()
    rec = {"tool": tool, "ms": statistics.median(times) * 1e3 if times else warm * 1e3,
           "times_ms": [x * 1e3 for x in times], "warmup_ms": warm * 1e3, "peak_mb": peak,
           "peak_method": peak_method,
           "versions": versions}
    rec["coverage"] = coverage(out, node_outputs)
    return rec


def run_worker(tool: str, path: str, repeat: int, timeout: float) -> dict:
    workdir = os.path.join(CACHE, "work")          # ORT writes sym_shape_infer_temp.onnx into the cwd on failure
    os.makedirs(workdir, exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", tool, os.path.abspath(path), "--repeat", str(repeat)]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "status": "timeout", "wall_s": time.perf_counter() - t}
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
        return {"tool": tool, "status": "error", "error": lines[-1][:200] if lines else f"exit {p.returncode}"}
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    rec["status"] = "ok"
    rec["wall_s"] = time.perf_counter() - t
    return rec


# ---------------------------------------------------------------- report
def _cell(rec):
    if rec is None:
        return "-", "-"
    if rec["status"] != "ok":
        return rec["status"], "-"
    return f"{rec['ms']:.0f}", f"{rec['peak_mb']:.0f}"


def _ratio(a, b):
    if a is None or b is None or a["status"] != "ok" or b["status"] != "ok" or b["ms"] <= 0:
        return "-"
    return f"{a['ms'] / b['ms']:.2f}"


def _machine(results) -> list[str]:
    import importlib.metadata as md

    vers = {}
    for p in ["onnx", "onnxruntime", "onnx-ir", "onnx-shape-inference", "z3-solver", "sympy", "numpy"]:
        try:
            vers[p] = md.version(p)
        except md.PackageNotFoundError:
            vers[p] = "not installed"
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "smtshape"], capture_output=True,
                               text=True).stdout.strip()
        commit = commit + (" (smtshape/ has uncommitted changes)" if dirty else "")
    except OSError:
        commit = "?"
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        cpu = platform.processor() or "?"
    return [
        f"- Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"- CPU: {cpu}, os.cpu_count() = {os.cpu_count()}",
        "- " + ", ".join(f"{k} {v}" for k, v in vers.items()),
        f"- smtshape commit {commit}",
        f"- date {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
    ]


def report(results, models, args, argv) -> str:
    tools = args.tools
    out = ["# Shape-inference speed benchmark", "",
           "Generated by `benchmarks/bench.py`; rerun it to refresh. Models are synthetic "
           "(`benchmarks/graphs.py`): GPT-2-like TorchScript-exporter-style transformer layers and "
           "U-Net-style CNN blocks, opset 17, symbolic batch / seq / H / W.", "",
           "Command:", "", "```", "python benchmarks/bench.py " + " ".join(argv), "```", "",
           "Machine:", ""] + _machine(results) + [""]
    out += [f"Time: median of {args.repeat} in-process runs after 1 warm-up, model loading excluded, "
            "each (tool, model) in its own subprocess. Peak: growth of the worker's peak resident set (MB) "
            "over the warm-up and timed runs, native memory included (Linux: `VmHWM` after resetting it "
            "through `/proc/self/clear_refs`, minus `VmRSS` at the reset; `ru_maxrss` is inherited across "
            "fork + exec, so it is not used there). "
            f"Timeout {args.timeout:.0f} s per (tool, model) subprocess.", ""]
    head = ["model", "nodes"]
    for t in tools:
        head += [f"{t} ms", f"{t} MB"]
    others = [t for t in tools if t != "smtshape"]
    if "smtshape" in tools:
        head += [f"smtshape/{t}" for t in others]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, (path, nodes) in models.items():
        row = [key, str(nodes)]
        rs = results.get(key, {})
        for t in tools:
            row += list(_cell(rs.get(t)))
        if "smtshape" in tools:
            row += [_ratio(rs.get("smtshape"), rs.get(t)) for t in others]
        out.append("| " + " | ".join(row) + " |")
    out += ["", "Tools: " + "; ".join(f"`{t}` = {TOOL_LABEL[t]}" for t in tools) + ".",
            "Ratios are smtshape time / other tool time (below 1 means smtshape is faster).", ""]

    if "smtshape" in tools:
        out += ["## How much smtshape resolved", "",
                "Over the outputs of all nodes: dims by exactness after `result.shapes()`, values whose "
                "rank is unknown, and the store's counters. Speed bought by leaving dims UNKNOWN would "
                "show here.", "",
                "| model | dims | EXACT | UPPER_BOUND | UNKNOWN | resolved (not UNKNOWN) | values of unknown rank "
                "| constraints | Z3 checks | Z3 unknowns | consistent |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for key in models:
            r = results.get(key, {}).get("smtshape")
            if not r or r["status"] != "ok":
                out.append(f"| {key} | {r['status'] if r else '-'} |" + " |" * 10)
                continue
            c = r["coverage"]
            frac = f"{(c['exact'] + c['upper_bound']) / c['dims']:.1%}" if c["dims"] else "-"
            out.append(f"| {key} | {c['dims']} | {c['exact']} | {c['upper_bound']} | {c['unknown']} | {frac} | "
                       f"{c['values_unknown_rank']} | {c['constraints']} | {c['z3_checks']} | "
                       f"{c['z3_unknowns']} | {c['consistent']} |")
        out += [""]

    out += ["## How much the other tools wrote", "",
            "Dims with a `dim_value` or `dim_param` in the returned model, over node outputs; "
            "ORT's fresh `unk__N` names count as named, so this is an upper bound on what they resolved.", "",
            "| model | tool | dims known / dims | values without shape |", "|---|---|---|---|"]
    for key in models:
        for t in others:
            r = results.get(key, {}).get(t)
            if r and r["status"] == "ok":
                c = r["coverage"]
                out.append(f"| {key} | {t} | {c['known']} / {c['dims']} | {c['values_no_shape']} |")
            elif r:
                out.append(f"| {key} | {t} | {r['status']}{': ' + r['error'] if r.get('error') else ''} | |")
    out += [""]
    return "\n".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,15000,50000")
    ap.add_argument("--families", default="transformer,cnn")
    ap.add_argument("--cnn-max", type=int, default=15000, help="skip cnn sizes above this")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default=None, help="markdown file to write (e.g. docs/benchmarks.md)")
    ap.add_argument("--json", default=None, help="also write raw results as JSON")
    ap.add_argument("--worker", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    ap.add_argument("--profile-run", metavar="MODEL", help="load MODEL and run smtshape once (for cProfile)")
    args = ap.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.repeat)))
        return
    if args.profile_run:
        import onnx

        sys.path.insert(0, ROOT)
        import smtshape

        proto = onnx.load(args.profile_run)
        t = time.perf_counter()
        res = smtshape.analyze(proto)
        t1 = time.perf_counter()
        try:
            res.shapes()
        except Exception as e:          # the rules are in flux: report, keep the profile
            print(f"result.shapes() failed: {type(e).__name__}: {e}", file=sys.stderr)
        t2 = time.perf_counter()
        st = res.store
        print(f"analyze {1e3 * (t1 - t):.0f} ms, shapes() {1e3 * (t2 - t1):.0f} ms, "
              f"z3_checks {st.z3_checks}, z3_unknowns {st.z3_unknowns}, constraints {len(st.constraints)}, "
              f"consistent {res.consistent}", file=sys.stderr)
        return

    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    for t in args.tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t!r}; choose from {', '.join(TOOLS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    import onnx

    models = {}
    for fam in families:
        for n in sizes:
            if fam == "cnn" and n > args.cnn_max:
                continue
            p = model_path(fam, n)
            nodes = len(onnx.load(p, load_external_data=False).graph.node)
            models[f"{fam}_{n}"] = (p, nodes)
    results: dict = {}
    for key, (p, nodes) in models.items():
        results[key] = {}
        for t in args.tools:
            r = run_worker(t, p, args.repeat, args.timeout)
            results[key][t] = r
            msg = (f"{r['ms']:.0f} ms, peak +{r['peak_mb']:.0f} MB" if r["status"] == "ok"
                   else r["status"] + (": " + r["error"] if r.get("error") else ""))
            print(f"{key:>18} ({nodes} nodes)  {t:<9} {msg}", file=sys.stderr, flush=True)
    text = report(results, models, args, argv)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "models": models}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
