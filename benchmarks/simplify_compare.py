"""smtshape simplify / specialize against onnxsim and onnxslim, on models with runtime truth.

    python benchmarks/simplify_compare.py [--corpus DIR]... [--models GLOB]
                                          [--tools smtshape,onnxsim,onnxslim] [--out docs/simplify.md]
                                          [--json FILE] [--timeout SECONDS]
    python benchmarks/simplify_compare.py --from-json RUN.json [--from-json MORE.json] --out docs/simplify.md

(``--out docs/simplify.md`` replaces the part between its ``simplify_compare`` markers and
keeps the prose around it.)

For every ``M.onnx`` with a ``M.truth.json`` beside it (default corpora: ``../shared/corpus``
and ``../shared/vnncomp``), each tool makes two models, each in its own subprocess (a crash
or a hang is that tool's failure on that model, timed out after ``--timeout`` s):

  simplified   no bindings: smtshape ``simplify``, ``onnxsim.simplify(model)``,
               ``onnxslim.slim(model)``
  specialized  every input dim bound (batch = 1 and the other dims at the truth file's first
               binding): smtshape ``specialize`` (simplification on), onnxsim with
               ``overwrite_input_shapes``, onnxslim with ``input_shapes``

and every result is checked the same way:

  checker      ``onnx.checker.check_model(full_check=True)``
  matches      onnxruntime (CPU, ``ORT_DISABLE_ALL``: a graph optimization never hides a
               difference) gives outputs bit-identical to the original's on the same
               inputs, at *every* binding of the truth file (simplified) or at the bound
               one (specialized); "close" when they differ by at most 1e-5 relative (float
               rounding), "differs" otherwise, "fails" when the result does not run
  nodes        main-graph nodes of the result; time: wall seconds of the tool's call
               (model loading and saving excluded)

For smtshape's simplified model the analysis is run again on it (value_info stripped,
``policy="skip"``) and graded against the truth restricted to the values still in it:
``resolved`` compares the dims resolved there with the original model's analysis on the
same values (it must never be fewer, and never wrong).

Inputs: the truth file's recorded input shapes and generators (``inputs``: ints in their
range, masks of ones, normal floats; a verification model's box as uniform [0, 1)).
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOOLS = ("smtshape", "onnxsim", "onnxslim")
DEFAULT_CORPORA = [REPO.parent / "shared" / "corpus", REPO.parent / "shared" / "vnncomp"]


# ------------------------------------------------------------------ worker (one tool, one model)

def _bound_shapes(proto, bind: dict, truth: dict) -> dict:
    """{graph input: static shape} at ``bind`` (the truth file's first recorded input shapes,
    with the bound dims replaced)."""
    first = truth["shapes"][0]
    out = {}
    inits = {i.name for i in proto.graph.initializer}
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        dims = []
        for axis, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif d.dim_param in bind:
                dims.append(bind[d.dim_param])
            else:
                dims.append(first[inp.name][axis])
        out[inp.name] = dims
    return out


def specialize_binding(truth: dict) -> dict:
    """batch = 1 and every other dynamic dim at the first binding of the truth file."""
    b = dict(truth["bindings"][0]) if truth.get("bindings") else {}
    if "batch" in b:
        b["batch"] = 1
    return b


def worker(tool: str, mode: str, model: str, out: str, truth_path: str) -> dict:
    import onnx
    truth = json.load(open(truth_path))
    proto = onnx.load(model)
    bind = specialize_binding(truth) if mode == "specialized" else {}
    shapes = _bound_shapes(proto, bind, truth) if mode == "specialized" else {}
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        __import__({"smtshape": "smtshape.written"}.get(tool, tool))      # (imports not timed)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        if tool == "smtshape":
            from smtshape import simplify, specialize
            if mode == "specialized":
                res_proto, _, _ = specialize(proto, bind=_bind_by_axis(proto, shapes))
            else:
                res_proto, _, _ = simplify(proto)
        elif tool == "onnxsim":
            import onnxsim
            res_proto, _ = onnxsim.simplify(proto, overwrite_input_shapes=shapes or None)
        else:
            import onnxslim
            res_proto = onnxslim.slim(proto, input_shapes=[f"{k}:{','.join(map(str, v))}"
                                                           for k, v in shapes.items()] or None)
    seconds = time.perf_counter() - t0
    onnx.save(res_proto, out)
    return {"seconds": seconds, "nodes": len(res_proto.graph.node)}


def _bind_by_axis(proto, shapes: dict) -> dict:
    """smtshape's bindings for static input shapes: every input dim by dim_param, or by
    (input, axis) for an anonymous one (resolved by smtshape's CLI helper)."""
    from smtshape.cli import resolve_axis_binds
    keyed = {}
    for inp in proto.graph.input:
        if inp.name not in shapes:
            continue
        for axis, d in enumerate(inp.type.tensor_type.shape.dim):
            if not d.HasField("dim_value"):
                keyed[(inp.name, axis)] = shapes[inp.name][axis]
    return resolve_axis_binds(proto, keyed)


# ------------------------------------------------------------------ checks

def feeds(proto, truth: dict, shapes: dict, seed: int) -> dict:
    import numpy as np
    import onnx
    rng = np.random.default_rng(seed)
    gens = truth.get("inputs") or {}
    inits = {i.name for i in proto.graph.initializer}
    out = {}
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        shp = shapes[inp.name]
        dt = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
        g = gens.get(inp.name, {})
        kind = g.get("kind", "normal")
        if kind == "ones":
            a = np.ones(shp, dt)
        elif kind == "zeros":
            a = np.zeros(shp, dt)
        elif kind == "int":
            a = rng.integers(g.get("low", 0), g.get("high", 10), shp)
        elif kind == "uniform-in-vnnlib-box":
            a = rng.random(shp)
        elif dt.kind in "iub":
            a = rng.integers(0, 2, shp)
        else:
            a = rng.standard_normal(shp)
        out[inp.name] = np.asarray(a).astype(dt)
    return out


def run_ort(model_bytes: bytes, feed: dict):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feed)))


def compare(orig: dict, new: dict) -> str:
    """"exact" / "close" / "differs" for two runs' outputs (by output name)."""
    import numpy as np
    verdict = "exact"
    for name, a in orig.items():
        b = new.get(name)
        if b is None or a.shape != b.shape or a.dtype != b.dtype:
            return "differs"
        if np.array_equal(a, b, equal_nan=True):
            continue
        if a.dtype.kind in "fc" and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            verdict = "close"
            continue
        return "differs"
    return verdict


def check_result(orig_proto, new_path: str, truth: dict, mode: str) -> dict:
    import onnx
    new = onnx.load(new_path)
    out = {}
    try:
        onnx.checker.check_model(new, full_check=True)
        out["checker"] = "ok"
    except Exception as e:
        out["checker"] = f"fails: {str(e).splitlines()[0][:160]}"
    if mode == "specialized":
        bind = specialize_binding(truth)
        runs = [_bound_shapes(orig_proto, bind, truth)]
    else:
        runs = truth["shapes"]
    verdicts = []
    ob, nb = orig_proto.SerializeToString(), new.SerializeToString()
    for k, shapes in enumerate(runs):
        f = feeds(orig_proto, truth, shapes, seed=k)
        try:
            a = run_ort(ob, f)
        except Exception:
            verdicts.append("original fails")
            continue
        try:
            b = run_ort(nb, f)
        except Exception as e:
            verdicts.append("fails")
            out["error"] = str(e).splitlines()[0][:200]
            continue
        verdicts.append(compare(a, b))
    for v in ("fails", "differs", "close", "exact", "original fails"):
        if v in verdicts:
            out["matches"] = v
            break
    out["bindings"] = len(verdicts)
    return out


def resolution(orig_proto, new_path: str, truth: dict) -> dict:
    """Dims resolved (correct or within a correct bound) by smtshape on the original and on
    the simplified model, over the values the simplified model still computes."""
    import onnx
    import smtshape
    from graders.truth import grade_smtshape, strip_value_info
    new = onnx.load(new_path)
    keep = {o for n in new.graph.node for o in n.output} | {i.name for i in new.graph.input} \
        | {o.name for o in new.graph.output}
    sub = dict(truth, shapes=[{k: v for k, v in s.items() if k in keep} for s in truth["shapes"]],
               data_dependent=[v for v in truth.get("data_dependent", []) if v in keep])
    out = {}
    for label, proto in (("original", orig_proto), ("simplified", new)):
        p = onnx.ModelProto()
        p.CopyFrom(proto)
        strip_value_info(p)
        g = grade_smtshape(smtshape.analyze(p, policy="skip"), sub)
        out[label] = {"resolved": g.correct + g.bound_ok + g.dd_correct + g.dd_bound_ok,
                      "axes": g.axes + g.dd_axes, "wrong": g.all_wrong}
    return out


# ------------------------------------------------------------------ driver

def find_models(corpora, pattern):
    out = []
    for c in corpora:
        for m in sorted(Path(c).glob("*.onnx")):
            t = m.with_suffix(".truth.json")
            if t.exists() and fnmatch.fnmatch(m.name, pattern):
                out.append((m, t))
    return out


def one(tool, mode, model, truth_path, tmp, timeout) -> dict:
    out_path = os.path.join(tmp, f"{model.stem}.{tool}.{mode}.onnx")
    cmd = [sys.executable, __file__, "--worker", tool, mode, str(model), out_path, str(truth_path)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if p.returncode != 0 or not p.stdout.strip():
        lines = (p.stderr or p.stdout).strip().splitlines()
        return {"error": (lines[-1] if lines else f"exit {p.returncode}")[:200]}
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    rec["path"] = out_path
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--models", default="*.onnx")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--out", help="write the markdown report here (default: stdout)")
    ap.add_argument("--json", help="write every measurement as JSON here")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--from-json", metavar="FILE", action="append", default=[],
                    help="write the report from --json files of earlier runs (repeatable: a model measured "
                         "again in a later file replaces its row)")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        tool, mode, model, out, truth = args.worker
        print(json.dumps(worker(tool, mode, model, out, truth)))
        return 0
    import onnx
    tools = [t for t in args.tools.split(",") if t]
    corpora = args.corpus or [str(c) for c in DEFAULT_CORPORA]
    if args.from_json:
        merged: dict = {}
        for f in args.from_json:
            for row in json.loads(Path(f).read_text()):
                merged[(row["corpus"], row["model"])] = row
        rows = [merged[k] for k in sorted(merged)]
        _write_report(args, rows, tools, sorted({str(Path(c)) for c in corpora}))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="simplify-compare-") as tmp:
        for model, truth_path in find_models(corpora, args.models):
            truth = json.load(open(truth_path))
            orig = onnx.load(str(model))
            row = {"model": model.name, "corpus": model.parent.name, "nodes": len(orig.graph.node)}
            for tool in tools:
                for mode in ("simplified", "specialized"):
                    rec = one(tool, mode, model, truth_path, tmp, args.timeout)
                    if "path" in rec:
                        rec.update(check_result(orig, rec["path"], truth, mode))
                        if tool == "smtshape" and mode == "simplified":
                            try:
                                rec["resolution"] = resolution(orig, rec["path"], truth)
                            except Exception as e:
                                rec["resolution"] = {"error": f"{type(e).__name__}: {e}"[:200]}
                        os.unlink(rec.pop("path"))
                    row[f"{tool}/{mode}"] = rec
            rows.append(row)
            print(_progress_line(row, tools), file=sys.stderr, flush=True)
            if args.json:                 # after every model: a long run that stops keeps what it measured
                from smtshape.fileio import write_atomic
                write_atomic(args.json, json.dumps(rows, indent=1))
    _write_report(args, rows, tools, corpora)
    return 0


def _write_report(args, rows, tools, corpora) -> None:
    text = report(rows, tools, corpora)
    if args.out:
        from smtshape.fileio import write_atomic
        write_atomic(args.out, _into(args.out, text))
    else:
        sys.stdout.write(text)


START, END = "<!-- simplify_compare:start -->", "<!-- simplify_compare:end -->"


def _into(path: str, text: str) -> str:
    """The file at ``path`` with the text between its START / END markers replaced (the prose
    around them kept, as docs/simplify.md has it); just the text when there are none."""
    try:
        old = Path(path).read_text()
    except OSError:
        return text
    if START not in old or END not in old:
        return text
    head, rest = old.split(START, 1)
    return head + START + "\n" + text + END + rest.split(END, 1)[1]


def _progress_line(row, tools) -> str:
    parts = [f"{row['model']} ({row['nodes']})"]
    for tool in tools:
        for mode in ("simplified", "specialized"):
            r = row.get(f"{tool}/{mode}", {})
            parts.append(f"{tool}/{mode[:4]}: " + (r["error"][:60] if "error" in r and "nodes" not in r else
                                                    f"{r.get('nodes')} {r.get('matches')} {r.get('checker', '')[:20]}"))
    return " | ".join(parts)


def _cell(r) -> str:
    if not r:
        return "-"
    if "nodes" not in r:
        return "error"
    m = r.get("matches", "?")
    mark = {"exact": "", "close": " ~", "differs": " **differs**", "fails": " **fails**",
            "original fails": " (orig. fails)"}.get(m, f" {m}")
    chk = "" if r.get("checker") == "ok" else " (checker fails)"
    return f"{r['nodes']}{mark}{chk}"


def report(rows, tools, corpora) -> str:
    import onnx
    import onnxruntime
    versions = [f"onnx {onnx.__version__}", f"onnxruntime {onnxruntime.__version__}"]
    for mod in ("onnxsim", "onnxslim"):
        if mod in tools:
            try:
                versions.append(f"{mod} {__import__(mod).__version__}")
            except Exception:
                versions.append(f"{mod} (not installed)")
    lines = ["<!-- generated by benchmarks/simplify_compare.py; rerun it to refresh -->", "",
             f"Corpora: {', '.join(Path(c).name for c in corpora)}; {len(rows)} models; "
             + ", ".join(versions) + ".", ""]
    lines += _totals(rows, tools)
    for mode in ("simplified", "specialized"):
        lines += ["", f"### {mode.capitalize()} models, per model", "",
                  "Nodes of the result; ~ = outputs equal within float rounding (1e-5), not bit-identical; "
                  "**differs** / **fails** = wrong or not running; error = the tool raised or timed out.", "",
                  "| model | nodes | " + " | ".join(f"{t} | {t} s" for t in tools) + " |",
                  "|---|---|" + "---|---|" * len(tools)]
        for row in rows:
            cells = []
            for t in tools:
                r = row.get(f"{t}/{mode}", {})
                cells += [_cell(r), f"{r['seconds']:.2f}" if "seconds" in r else "-"]
            lines.append(f"| {row['model']} | {row['nodes']} | " + " | ".join(cells) + " |")
    errors = [(row["model"], t, m, row[f"{t}/{m}"]) for row in rows for t in tools for m in ("simplified", "specialized")
              if "error" in row.get(f"{t}/{m}", {})]
    if errors:
        lines += ["", "### Errors", ""]
        for model, t, m, r in errors:
            lines.append(f"- {model}, {t} {m}: {r['error']}")
    res = [(row["model"], row["smtshape/simplified"].get("resolution")) for row in rows
           if "smtshape/simplified" in row and isinstance(row["smtshape/simplified"].get("resolution"), dict)]
    if res:
        ok = [r for _, r in res if "error" not in r]
        fewer = [m for m, r in res if "error" not in r and r["simplified"]["resolved"] < r["original"]["resolved"]]
        lines += ["", "### smtshape's analysis of its simplified models", "",
                  "Dims resolved on the values the simplified model still computes (truth restricted to them), "
                  "by the analysis of the original and of the simplified model (value_info stripped).", "",
                  f"Over {len(ok)} models: {sum(r['simplified']['axes'] for r in ok)} dims; resolved "
                  f"{sum(r['original']['resolved'] for r in ok)} on the original, "
                  f"{sum(r['simplified']['resolved'] for r in ok)} on the simplified model; "
                  f"{sum(r['original']['wrong'] + r['simplified']['wrong'] for r in ok)} wrong; models where the "
                  f"simplified model resolves fewer: {', '.join(fewer) or 'none'}; errors: {len(res) - len(ok)}.", "",
                  "| model | dims | resolved (original) | resolved (simplified) | wrong |", "|---|---|---|---|---|"]
        for model, r in res:
            if "error" in r:
                lines.append(f"| {model} | error: {r['error']} | | | |")
                continue
            o, s = r["original"], r["simplified"]
            lines.append(f"| {model} | {s['axes']} | {o['resolved']} | {s['resolved']} | {o['wrong'] + s['wrong']} |")
    return "\n".join(lines) + "\n"


def _totals(rows, tools) -> list:
    lines = ["| tool | models | nodes before | nodes after | bit-identical | within 1e-5 | differ | fail to run "
             "| checker fails | errors | time (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode in ("simplified", "specialized"):
        for t in tools:
            recs = [(row["nodes"], row.get(f"{t}/{mode}", {})) for row in rows]
            ok = [(n, r) for n, r in recs if "nodes" in r]
            count = lambda v: sum(1 for _, r in ok if r.get("matches") == v)  # noqa: E731
            lines.append(f"| {t} {mode} | {len(recs)} | {sum(n for n, _ in ok)} | {sum(r['nodes'] for _, r in ok)} "
                         f"| {count('exact')} | {count('close')} | {count('differs')} | {count('fails')} "
                         f"| {sum(1 for _, r in ok if r.get('checker') != 'ok')} | {len(recs) - len(ok)} "
                         f"| {sum(r['seconds'] for _, r in ok):.1f} |")
    lines.append("")
    lines.append("Nodes before / after are summed over the models the tool finished; bit-identical / within "
                 "1e-5 / differ / fail to run count models by their worst binding.")
    return lines


if __name__ == "__main__":
    sys.exit(main())
