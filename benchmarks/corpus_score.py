"""Score smtshape and other shape-inference tools against runtime truth.

    python benchmarks/corpus_score.py [--corpus DIR]... [--tools smtshape,ort,osi,onnx]
                                      [--models GLOB] [--out FILE.md] [--json FILE.json]

For every ``M.onnx`` with a ``M.truth.json`` beside it (default corpus:
``../shared/corpus`` next to the repository; ``--corpus`` may be repeated,
e.g. ``--corpus ../shared/corpus --corpus ../shared/vnncomp``), the model's
``graph.value_info`` is stripped and each tool runs in this process on the
same in-memory ``ModelProto``:

  smtshape  smtshape.analyze(proto, policy="skip") and every value's shape solved
            (``Result.shapes()``; smtshape solves lazily, so this is part of its cost)
  ort       onnxruntime SymbolicShapeInference, auto_merge=True (its ``infer_shapes``
            body, minus the temp file it writes on an incomplete run: an incomplete
            run is graded on what it inferred and its status says "incomplete")
  osi       onnx_shape_inference.infer_symbolic_shapes on ir.serde.deserialize_model(proto)
            (deserialization timed; default policy, warn_on_missing=False)
  onnx      onnx.shape_inference.infer_shapes(proto, data_prop=True)

Grading: ``graders.truth`` (conventions of ANCHORS.md).  Other tools' dim_param
strings are parsed safely (``graders.truth.tool_expr``); a name outside the
dynamic dims makes the axis unresolved.  Timing: median of N runs (default 3)
after one warm-up, model loading excluded; the graded output is the last run's.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import io
import json
import logging
import platform
import signal
import statistics
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import onnx  # noqa: E402

from smtshape.fileio import write_atomic  # noqa: E402
from graders.truth import Grade, grade_ir, grade_proto, grade_smtshape, load_truth, strip_value_info  # noqa: E402

ALL_TOOLS = ("smtshape", "ort", "osi", "onnx")


class ToolTimeout(Exception):
    pass


# ------------------------------------------------------------------ tool runners
# Each runner: prepare(proto) -> state (untimed), run(state) -> output (timed),
# grade(output, truth) -> Grade.

def _smtshape_run(proto):
    import smtshape
    r = smtshape.analyze(proto, policy="skip")
    r.shapes()
    return r


def _ort_run(proto):
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference, get_opset
    opset = get_opset(proto)
    if not opset or opset < 7:
        raise RuntimeError("onnxruntime symbolic shape inference supports opset >= 7 only")
    ssi = SymbolicShapeInference(2**31 - 1, True, False, 0)
    done = False
    ssi._preprocess(proto)
    while ssi.run_:
        done = ssi._infer_impl()
    ssi._update_output_from_vi()
    return ssi.out_mp_, done



def _osi_run(proto):
    import onnx_ir as ir
    import onnx_shape_inference as osi
    m = ir.serde.deserialize_model(proto)
    osi.infer_symbolic_shapes(m, warn_on_missing=False)
    return m


def _onnx_run(proto):
    return onnx.shape_inference.infer_shapes(proto, data_prop=True)


RUNNERS = {
    "smtshape": (_smtshape_run, lambda out, t: grade_smtshape(out, t)),
    "ort": (_ort_run, lambda out, t: grade_proto(out[0], t)),
    "osi": (_osi_run, lambda out, t: grade_ir(out, t)),
    "onnx": (_onnx_run, lambda out, t: grade_proto(out, t)),
}


def _alarm(_sig, _frm):
    raise ToolTimeout()


def _timed(fn, arg, timeout):
    use_alarm = timeout and hasattr(signal, "setitimer")
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            out = fn(arg)
            dt = time.perf_counter() - t0
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return out, dt


def run_tool(tool, proto, truth, runs, warmup, timeout):
    fn, grader = RUNNERS[tool]
    rec = {"status": "ok", "error": "", "ms": None, "times_ms": [], "grade": None}
    out = None
    try:
        for k in range(warmup + runs):
            out, dt = _timed(fn, proto, timeout)
            if k >= warmup:
                rec["times_ms"].append(dt * 1000)
        rec["ms"] = statistics.median(rec["times_ms"])
    except ToolTimeout:
        rec["status"] = "timeout"
        rec["error"] = f"no answer within {timeout:g} s"
        out = None
    except Exception as e:  # a crash of the tool: recorded, the rest goes on
        rec["status"] = "crash"
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
        rec["traceback"] = traceback.format_exc(limit=6)
        out = None
    if tool == "ort" and out is not None and not out[1]:
        rec["status"] = "incomplete"
    if out is None:
        rec["grade"] = _empty_grade(truth)
        return rec
    try:
        rec["grade"] = grader(out, truth)
    except Exception as e:
        rec["status"] = "grade-error"
        rec["error"] = f"{type(e).__name__}: {e}"[:200]
        rec["traceback"] = traceback.format_exc(limit=6)
        rec["grade"] = _empty_grade(truth)
    return rec


def _empty_grade(truth) -> Grade:
    from graders.truth import grade
    return grade(lambda name: None, truth)


# ------------------------------------------------------------------ discovery

def find_models(corpora, pattern):
    out = []
    multi = len(corpora) > 1
    for c in corpora:
        c = Path(c)
        if not c.is_dir():
            raise SystemExit(f"corpus directory not found: {c}")
        for p in sorted(c.glob("*.onnx")):
            t = p.with_name(p.name[:-5] + ".truth.json")
            if not t.exists():
                continue
            stem = p.name[:-5]
            if pattern and not any(fnmatch.fnmatch(stem, g) for g in pattern.split(",")):
                continue
            label = f"{c.name}/{stem}" if multi else stem
            out.append((c.name, label, p, t))
    return out


def declared_names(proto) -> set:
    """dim_params the model itself declares on its graph inputs/outputs."""
    out = set()
    for vi in list(proto.graph.input) + list(proto.graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            out.update(d.dim_param for d in vi.type.tensor_type.shape.dim if d.dim_param)
    return out


def own_false_equalities(row, tool):
    """False equalities the tool made itself (not names echoed from the model's declared shapes)."""
    return [f for f in row["tools"][tool]["grade"].false_equalities if f.key not in row["declared"]]


def echoed_false_equalities(row, tool):
    return [f for f in row["tools"][tool]["grade"].false_equalities if f.key in row["declared"]]


def node_io(proto) -> list:
    """(op_type, [input names], [output names]) of the main graph's nodes, in file order."""
    return [(n.op_type, [i for i in n.input if i], [o for o in n.output if o]) for n in proto.graph.node]


def first_losses(row, tool, data_dependent=False) -> list:
    """Nodes with an unresolved output axis although every value they depend on (inputs and their
    ancestors) is fully resolved (exact or correctly bounded): (op_type, example output name); the
    values looked at are the non-data-dependent ones, or with ``data_dependent`` the truth's
    data-dependent ones."""
    g = row["tools"][tool]["grade"]
    dirty = {v for v, _ in g.unresolved_entries} | {v for v, _ in g.dd_unresolved_entries}
    dirty |= set(g.unknown_scalars) | {w.value for w in g.wrong_entries}
    produced = {o for _, _, outs in row["nodes_io"] for o in outs}
    clean = {}
    out = []
    pending = list(row["nodes_io"])
    # nodes are in topological order in valid models; iterate to a fixpoint in case they are not
    for _ in range(3):
        rest = []
        for op, ins, outs in pending:
            if any(i in produced and i not in clean for i in ins):
                rest.append((op, ins, outs))
                continue
            ok_in = all(clean.get(i, True) for i in ins)
            bad_out = [o for o in outs if o in dirty and (o in row["dd"]) == data_dependent]
            if ok_in and bad_out:
                out.append((op, bad_out[0]))
            for o in outs:
                clean[o] = ok_in and o not in dirty
        pending = rest
        if not pending:
            break
    return out


def producers(proto) -> dict:
    out = {}
    for n in proto.graph.node:
        for o in n.output:
            if o:
                out[o] = n.op_type
    return out


# ------------------------------------------------------------------ report

def _fmt_ms(ms):
    if ms is None:
        return "-"
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _resolved_pct(n, d) -> str:
    return f"{100.0 * n / d:.1f}" if d else "-"


def _cell(rec):
    g = rec["grade"]
    if g.axes:
        s = f"{g.correct_pct:.1f} / {g.wrong} / {g.unresolved_pct:.1f} / {_fmt_ms(rec['ms'])}"
    else:
        s = f"- / {g.wrong} / - / {_fmt_ms(rec['ms'])}"
    if g.bound_ok:
        s += f" +{g.bound_ok_pct:.1f}b"
    if rec["status"] != "ok":
        s += f" ({rec['status']})"
    return s


def _versions():
    vs = {"python": platform.python_version()}
    for mod, name in (("onnx", "onnx"), ("onnxruntime", "onnxruntime"), ("onnx_shape_inference", "onnx-shape-inference"),
                      ("onnx_ir", "onnx-ir"), ("sympy", "sympy"), ("z3", "z3-solver"), ("smtshape", "smtshape")):
        try:
            m = __import__(mod)
            v = getattr(m, "__version__", None)
            if v is None and mod == "z3":
                v = m.get_version_string()
            vs[name] = v or "?"
        except Exception:
            vs[name] = "not installed"
    return vs


def report(results, tools, runs, corpora) -> str:
    lines = []
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines.append("# Shape inference scored against runtime truth")
    lines.append("")
    lines.append("Command: `python " + " ".join(["benchmarks/corpus_score.py"] + sys.argv[1:]) + "`")
    lines.append("")
    lines.append(f"Measured {now}: {len(results)} models from {', '.join(str(c) for c in corpora)}; "
                 f"tools {', '.join(tools)}. Grading: graders.truth (ANCHORS.md conventions): a dim is correct "
                 "when the tool's int or expression over the dynamic dims equals the runtime size at every binding; "
                 "wrong when it differs at some binding (or the rank differs, or a bound is below the runtime size); "
                 "bound_ok when an upper bound holds at every binding; unresolved otherwise. value_info stripped.")
    lines.append("")
    for k, v in _versions().items():
        lines.append(f"- {k}: {v}")
    lines.append(f"- timing: median of {runs} in-process runs after 1 warm-up (load excluded, starting from the "
                 "stripped ModelProto in memory; smtshape includes solving every shape, osi its deserialization); sequential")
    lines.append("")

    groups = {}
    for r in results:
        groups.setdefault(r["corpus"], []).append(r)
    if len(groups) > 1:
        groups = {**groups, "all": results}

    lines.append("## Totals")
    lines.append("")
    lines.append("Axes of non-data-dependent values; `wrong` also counts wrong ranks of scalars. `dd` = values in the "
                 "truth files' data_dependent lists, scored apart: `dd correct` is an exact size right at every "
                 "binding, `dd bound_ok` an upper bound that holds at every binding. `resolved %` = correct + "
                 "bound_ok, of the axes. `false eq.`: opaque symbols (outside the dynamic dims) put on axes whose "
                 "runtime sizes differ.")
    lines.append("")
    lines.append("| set | tool | axes | correct % | bound_ok % | resolved % | wrong | unresolved % "
                 "| scalars: rank ok / wrong / unknown | dd axes | dd correct / bound_ok / wrong / unres "
                 "| dd resolved % | false eq. | time (sum of medians) | failed models | models with wrong |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for gname, rs in groups.items():
        for tool in tools:
            tot = Grade()
            ms = 0.0
            failed = 0
            withwrong = 0
            nfe = 0
            for r in rs:
                nfe += len(own_false_equalities(r, tool))
                rec = r["tools"][tool]
                tot = tot + rec["grade"]
                ms += rec["ms"] or 0.0
                failed += rec["status"] in ("crash", "timeout", "grade-error")
                withwrong += rec["grade"].all_wrong > 0
            lines.append(
                f"| {gname} | {tool} | {tot.axes} | {tot.correct_pct:.1f} | {tot.bound_ok_pct:.1f} | "
                f"{_resolved_pct(tot.correct + tot.bound_ok, tot.axes)} | {tot.wrong} | "
                f"{tot.unresolved_pct:.1f} | {tot.scalar_ok} / {tot.scalar_wrong} / {tot.scalar_unknown} | {tot.dd_axes} | "
                f"{tot.dd_correct} / {tot.dd_bound_ok} / {tot.dd_wrong} / {tot.dd_unresolved} | "
                f"{_resolved_pct(tot.dd_correct + tot.dd_bound_ok, tot.dd_axes)} | "
                f"{nfe} | {_fmt_ms(ms)} ms | {failed} | {withwrong} |")
    lines.append("")

    lines.append("## Per model")
    lines.append("")
    lines.append("Cell: correct % / wrong / unresolved % / time ms (median). `+Nb`: bound_ok %. A status after the "
                 "cell: crash / timeout (everything unresolved) or incomplete (ort gave up part-way; graded on what it "
                 "inferred).")
    lines.append("")
    lines.append("| model | nodes | axes | " + " | ".join(tools) + " |")
    lines.append("|---|---|---|" + "---|" * len(tools))
    for r in results:
        g0 = r["tools"][tools[0]]["grade"]
        lines.append(f"| {r['label']} | {r['nodes']} | {g0.axes} | " +
                     " | ".join(_cell(r["tools"][t]) for t in tools) + " |")
    lines.append("")

    dd = [r for r in results if r["tools"][tools[0]]["grade"].dd_values]
    if dd:
        lines.append("## Data-dependent values")
        lines.append("")
        lines.append("Cell: correct / bound_ok / wrong / unresolved axes (resolved %: correct + bound_ok).")
        lines.append("")
        lines.append("| model | dd values | dd axes | " + " | ".join(tools) + " |")
        lines.append("|---|---|---|" + "---|" * len(tools))
        for r in dd:
            g0 = r["tools"][tools[0]]["grade"]
            cells = []
            for t in tools:
                g = r["tools"][t]["grade"]
                cells.append(f"{g.dd_correct} / {g.dd_bound_ok} / {g.dd_wrong} / {g.dd_unresolved} "
                             f"({_resolved_pct(g.dd_correct + g.dd_bound_ok, g.dd_axes)} %)")
            lines.append(f"| {r['label']} | {g0.dd_values} | {g0.dd_axes} | " + " | ".join(cells) + " |")
        lines.append("")

    lines.append("## Crashes, timeouts, incomplete runs")
    lines.append("")
    bad = [(t, r["label"], r["tools"][t]) for r in results for t in tools if r["tools"][t]["status"] != "ok"]
    if not bad:
        lines.append("None.")
    else:
        lines.append("| tool | model | status | error |")
        lines.append("|---|---|---|---|")
        for t, label, rec in bad:
            err = rec["error"].replace("|", "\\|") if rec["error"] else ""
            lines.append(f"| {t} | {label} | {rec['status']} | {err} |")
    lines.append("")

    lines.append("## Wrong answers")
    lines.append("")
    anyw = False
    for t in tools:
        ws = [(r["label"], w) for r in results for w in r["tools"][t]["grade"].wrong_entries]
        if not ws:
            continue
        anyw = True
        lines.append(f"- **{t}** ({len(ws)} entries)")
        for label, w in ws[:100]:
            where = "rank" if w.axis is None else f"axis {w.axis}"
            dd = ", data-dependent" if w.data_dependent else ""
            lines.append(f"  - `{label}:{w.value}` {where}{dd}: {w.kind} `{w.ours}`, runtime {w.runtime} "
                         f"(first failing binding {w.binding})")
        if len(ws) > 100:
            lines.append(f"  - ... {len(ws) - 100} more")
    if not anyw:
        lines.append("None.")
    lines.append("")

    lines.append("## False equalities (shared opaque symbols that differ at run time)")
    lines.append("")
    anyf = False
    for t in tools:
        fs = [(r["label"], f) for r in results for f in own_false_equalities(r, t)]
        if not fs:
            continue
        anyf = True
        lines.append(f"- **{t}** ({len(fs)})")
        for label, f in fs[:50]:
            lines.append(f"  - `{label}`: {f}")
    if not anyf:
        lines.append("None.")
    lines.append("")
    echo = [(t, r["label"], f) for t in tools for r in results for f in echoed_false_equalities(r, t)]
    if echo:
        lines.append("Not counted above: the same symbol on axes that differ at run time, where the symbol is a "
                     "dim_param the model itself declares on a graph output (the tool repeats the exporter's claim):")
        lines.append("")
        for t, label, f in echo[:50]:
            lines.append(f"- {t} `{label}`: {f}")
        lines.append("")

    lines.append("## Unresolved axes by producing op type (non-data-dependent values)")
    lines.append("")
    lines.append("Models where the tool ran; everything downstream of a loss counts.")
    lines.append("")
    for t in tools:
        c = Counter()
        for r in results:
            rec = r["tools"][t]
            if rec["status"] in ("crash", "timeout", "grade-error"):
                continue
            for v, _a in rec["grade"].unresolved_entries:
                c[r["producers"].get(v, "graph input")] += 1
        top = ", ".join(f"{k} {n}" for k, n in c.most_common(15))
        lines.append(f"- **{t}** ({sum(c.values())}): {top or '-'}")
    lines.append("")

    if any(r["dd"] for r in results):
        lines.append("## Unresolved data-dependent axes by producing op type")
        lines.append("")
        lines.append("Values in the truth files' data_dependent lists; models where the tool ran; everything "
                     "downstream of a loss counts.")
        lines.append("")
        for t in tools:
            c = Counter()
            for r in results:
                rec = r["tools"][t]
                if rec["status"] in ("crash", "timeout", "grade-error"):
                    continue
                for v, _a in rec["grade"].dd_unresolved_entries:
                    c[r["producers"].get(v, "graph input")] += 1
            top = ", ".join(f"{k} {n}" for k, n in c.most_common(15))
            lines.append(f"- **{t}** ({sum(c.values())}): {top or '-'}")
        lines.append("")

    lines.append("## Where resolution is first lost")
    lines.append("")
    lines.append("Op types of nodes that output an unresolved axis (or a scalar of unknown rank) although every value "
                 "they depend on is fully resolved; models where the tool ran; non-data-dependent values; with an "
                 "example value.")
    lines.append("")
    for t in tools:
        c = Counter()
        example = {}
        for r in results:
            if r["tools"][t]["status"] in ("crash", "timeout", "grade-error"):
                continue
            for op, v in first_losses(r, t):
                c[op] += 1
                example.setdefault(op, f"{r['label']}:{v}")
        top = ", ".join(f"{k} {n} (`{example[k]}`)" for k, n in c.most_common(12))
        lines.append(f"- **{t}** ({sum(c.values())} nodes): {top or '-'}")
    lines.append("")
    if any(r["dd"] for r in results):
        lines.append("The same for data-dependent values (a node whose output's size depends on the data, with "
                     "no bound although everything it reads is exact or bounded):")
        lines.append("")
        for t in tools:
            c = Counter()
            example = {}
            for r in results:
                if r["tools"][t]["status"] in ("crash", "timeout", "grade-error"):
                    continue
                for op, v in first_losses(r, t, data_dependent=True):
                    c[op] += 1
                    example.setdefault(op, f"{r['label']}:{v}")
            top = ", ".join(f"{k} {n} (`{example[k]}`)" for k, n in c.most_common(12))
            lines.append(f"- **{t}** ({sum(c.values())} nodes): {top or '-'}")
        lines.append("")

    lines.append("## Slowest models")
    lines.append("")
    for t in tools:
        xs = sorted(((r["tools"][t]["ms"] or 0.0, r["label"]) for r in results), reverse=True)[:8]
        lines.append(f"- **{t}**: " + ", ".join(f"{label} {_fmt_ms(ms)} ms" for ms, label in xs))
    lines.append("")
    return "\n".join(lines)


def to_json(results, tools):
    out = []
    for r in results:
        row = {"model": r["label"], "corpus": r["corpus"], "nodes": r["nodes"], "tools": {}}
        for t in tools:
            rec = r["tools"][t]
            g = rec["grade"]
            row["tools"][t] = {
                "status": rec["status"], "error": rec["error"], "ms": rec["ms"], "times_ms": rec["times_ms"],
                **g.counts(),
                "wrong_entries": [str(w) for w in g.wrong_entries],
                "false_equalities": [str(f) for f in own_false_equalities(r, t)],
                "false_equalities_echoed": [str(f) for f in echoed_false_equalities(r, t)],
            }
        out.append(row)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=None,
                    help="directory of M.onnx + M.truth.json (repeatable; default ../shared/corpus)")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list of " + ",".join(ALL_TOOLS))
    ap.add_argument("--models", default=None, help="glob(s) on the model stem, comma separated")
    ap.add_argument("--out", default=None, help="write the markdown report here (atomically)")
    ap.add_argument("--json", default=None, help="write per-model counts as JSON here (atomically)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool and model (median)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per single tool run")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-model progress on stderr")
    a = ap.parse_args(argv)

    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    for t in tools:
        if t not in RUNNERS:
            ap.error(f"unknown tool {t!r}; choose from {', '.join(ALL_TOOLS)}")
    if a.runs < 1:
        ap.error("--runs must be >= 1")
    corpora = a.corpus or [str(REPO.parent / "shared" / "corpus")]
    models = find_models(corpora, a.models)
    if not models:
        raise SystemExit("no models with truth files matched")

    logging.disable(logging.WARNING)
    results = []
    for corpus, label, mp, tp in models:
        proto = strip_value_info(onnx.load(str(mp)))
        truth = load_truth(tp)
        row = {"corpus": corpus, "label": label, "nodes": len(proto.graph.node), "producers": producers(proto),
               "declared": declared_names(proto), "nodes_io": node_io(proto),
               "dd": set(truth.get("data_dependent") or []),
               "tools": {}}
        for t in tools:
            row["tools"][t] = run_tool(t, proto, truth, a.runs, a.warmup, a.timeout)
        results.append(row)
        if not a.quiet:
            print(f"{label}: " + "; ".join(f"{t} {_cell(row['tools'][t])}" for t in tools), file=sys.stderr, flush=True)

    text = report(results, tools, a.runs, corpora)
    print(text)
    if a.out:
        write_atomic(a.out, text + "\n")
    if a.json:
        write_atomic(a.json, json.dumps(to_json(results, tools), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
