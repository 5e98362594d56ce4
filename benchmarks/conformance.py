"""ONNX's backend node test suite: per-op resolution of smtshape and the other
shape-inference tools, in three variants.

    python benchmarks/conformance.py [--tools smtshape,onnx,ort,osi] [--variants static,values,symbolic]
                                     [--ops Op,Op] [-j N] [--timeout S] [--out docs/conformance.md]
                                     [--json FILE]

The suite is built from the installed onnx wheel and cached outside the
repository (``graders.conformance``).  Each test runs in three variants
(static / values / symbolic, see ``graders/conformance.py``), each tool on the
same ModelProto:

  smtshape  smtshape.analyze(proto)
  onnx      onnx.shape_inference.infer_shapes(proto, data_prop=True)
  ort       onnxruntime.tools.symbolic_shape_infer.SymbolicShapeInference, auto_merge=True,
            guess_output_rank=False (the runner of benchmarks/corpus_score.py; an incomplete
            run is graded on what it inferred)
  osi       onnx_shape_inference.infer_symbolic_shapes on onnx_ir.serde.deserialize_model(proto)

Every tool's output shapes are graded with ``graders.truth.grade``: a numeric
dim is an exact claim; a dim_param is read as an expression over the input dim
names (safely, ``graders.truth.tool_expr``) and is right when it evaluates to
the size, wrong when it evaluates to another size, and unresolved when it
cannot be evaluated (``unk__3``).  One tool's crash or timeout on one test is
recorded and the run goes on.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import corpus_score as CS  # noqa: E402  (its tool runners, timer and version list)

from graders import conformance as C  # noqa: E402
from smtshape.fileio import write_atomic  # noqa: E402
from graders.truth import (_ir_input_dims, _proto_input_dims, input_dim_env_fn, ir_shape_fn,  # noqa: E402
                            proto_shape_fn)

ALL_TOOLS = ("smtshape", "onnx", "ort", "osi")
TOOL_NAMES = {
    "smtshape": "smtshape",
    "onnx": "onnx infer_shapes(data_prop=True)",
    "ort": "onnxruntime SymbolicShapeInference",
    "osi": "onnx-shape-inference",
}


def _grade_other(tool, out, exp):
    o = C.Outcome("", "", "", tool)
    if tool in ("onnx", "ort"):
        proto = out if tool == "onnx" else out[0]
        return C.grade_outcome(o, proto_shape_fn(proto), exp, input_dim_env_fn(_proto_input_dims(proto)),
                               C.proto_part_fn(proto))
    return C.grade_outcome(o, ir_shape_fn(out), exp, input_dim_env_fn(_ir_input_dims(out)), C.no_part_fn)


def run_one(tool, test, variant, timeout):
    """One tool on one variant of one test, graded; never raises."""
    if tool == "smtshape":
        import signal
        use_alarm = bool(timeout) and hasattr(signal, "setitimer")
        if use_alarm:
            old = signal.signal(signal.SIGALRM, CS._alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            o = C.run_smtshape(test, variant)
            if o.status == "crash" and o.error.startswith("ToolTimeout"):
                o.status, o.error = "timeout", f"no answer within {timeout:g} s"
            return o
        except CS.ToolTimeout:
            model, binding = C.variant_model(test, variant)
            o = C.Outcome(test.name, test.label, variant, tool)
            return C.fail_outcome(o, C.truth_for(test, binding), "timeout", f"no answer within {timeout:g} s")
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)

    fn = CS.RUNNERS[tool][0]
    model, binding = C.variant_model(test, variant)
    exp = C.truth_for(test, binding)
    base = C.Outcome(test.name, test.label, variant, tool)
    try:
        out, dt = CS._timed(fn, model, timeout)
    except CS.ToolTimeout:
        return C.fail_outcome(base, exp, "timeout", f"no answer within {timeout:g} s")
    except Exception as e:  # noqa: BLE001 - a crash of the tool: recorded, the run goes on
        return C.fail_outcome(base, exp, "crash", C.one_line(e), traceback.format_exc(limit=6))
    try:
        g = _grade_other(tool, out, exp)
    except Exception as e:  # noqa: BLE001
        return C.fail_outcome(base, exp, "grade-error", C.one_line(e), traceback.format_exc(limit=6))
    g.test, g.op, g.variant, g.ms = test.name, test.label, variant, dt * 1000
    if tool == "ort" and not out[1]:
        g.status = "incomplete"
    return g


_STATE: dict = {}


def _init(tools, variants, timeout):
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    _STATE.update(tools=tools, variants=variants, timeout=timeout, tests={t.name: t for t in C.load_suite()})


def _work(name):
    t = _STATE["tests"][name]
    outs = []
    for v in _STATE["variants"]:
        for tool in _STATE["tools"]:
            o = run_one(tool, t, v, _STATE["timeout"])
            o.wrong_entries = list(o.wrong_entries)
            outs.append(o)
    return outs


# ------------------------------------------------------------------ report

def _pct(n, d):
    return f"{100.0 * n / d:.1f}" if d else "-"


def _tool_versions():
    return CS._versions()


def report(outs, tools, variants, ntests, argv, seconds, jobs, seq_tests=()) -> str:
    L = []
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python " + " ".join(["benchmarks/conformance.py"] + list(argv))
    L += ["# Conformance: ONNX's backend node test suite", "",
          f"Command: `{cmd}`", "",
          "`tests/test_conformance.py` runs smtshape over the whole suite in every variant and fails on any wrong "
          "dim or crash. Targets: 0 wrong in every variant; fully resolved >= 97.5% (values), >= 95% (symbolic), "
          ">= 93% (static).", "",
          f"Measured {now}: {ntests} tests of the installed onnx wheel "
          "(`onnx.backend.test.case.node.collect_testcases()`, built and cached by `graders.conformance`), "
          f"each in {len(variants)} variants, tools: {', '.join(tools)}; wall time {seconds:.0f} s with {jobs} "
          "process(es).", ""]
    for k, v in _tool_versions().items():
        L.append(f"- {k}: {v}")
    L += ["",
          "Variants (each with `value_info` removed, subgraphs included, and the graph output shapes cleared):",
          "",
          "- **static**: the graph inputs as the test declares them;",
          f"- **values**: every integer or bool tensor input of at most {C.SMALL_INT_ELEMENTS} elements made an "
          "initializer holding its test data;",
          "- **symbolic**: like values, with every remaining graph-input dim replaced by a fresh `dim_param`; "
          "answers are evaluated at the test's input sizes.",
          "",
          "Grading (`graders.truth.grade`, per output axis): **right** = an exact claim equal to the expected size, "
          "or an upper bound >= it (`bound` counts those); **wrong** = an exact claim that differs, a wrong rank, or "
          "an upper bound below the size; **unresolved** = anything else (unknown dim or rank, a `dim_param` that "
          "cannot be evaluated such as `unk__3`). Other tools' numeric dims are exact claims; their `dim_param`s are "
          "read as expressions over the input dim names. Sequence outputs are graded as their length (one axis) "
          "and each element's shape; optional outputs as presence (one axis, 1 or 0) and content. A test is "
          "**fully resolved** when every output axis is right. A crash or timeout leaves every axis unresolved. "
          "*Tensor-output tests* leaves out the tests with a sequence or optional output "
          f"({len(seq_tests or ())} tests), as earlier measurements did; *without bounds* counts a test fully "
          "resolved only when every output axis is an exact claim.",
          ""]

    summ = C.summarize(outs)
    seqtests = set(seq_tests or ())
    L += ["## Summary", "",
          "| tool | variant | tests fully resolved % | fully resolved | tensor-output tests fully resolved % "
          "| fully resolved without bounds % | dims "
          "| right | of which bound | unresolved | wrong | tests with wrong | crashes / timeouts | time (s) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    withwrong = Counter((o.tool, o.variant) for o in outs if o.wrong)
    for tool in tools:
        for v in variants:
            s = summ.get((tool, v))
            if s is None:
                continue
            fails = sum(1 for o in outs if o.tool == tool and o.variant == v and o.status in
                        ("crash", "timeout", "grade-error"))
            tens = [o for o in outs if o.tool == tool and o.variant == v and o.test not in seqtests]
            tpct = _pct(sum(o.full for o in tens), len(tens))
            mine = [o for o in outs if o.tool == tool and o.variant == v]
            xpct = _pct(sum(o.full and not o.bound_ok for o in mine), len(mine))
            L.append(f"| {tool} | {v} | {s.full_pct:.1f} | {s.full} / {s.tests} | {tpct} | {xpct} | {s.axes} | {s.right} | "
                     f"{s.bound_ok} | {s.unresolved} | {s.wrong} | {withwrong[(tool, v)]} | {fails} | "
                     f"{s.ms / 1000:.1f} |")
    L.append("")

    # per-op table, smtshape
    if "smtshape" in tools:
        L += ["## Per op (smtshape)", "",
              "Tests are grouped by the op of the tested node; function-expanded tests form their own rows "
              "(`Op (expanded)`). Cell: tests fully resolved / tests; `wrong` = wrong dims; `!` marks crashes; "
              "`(no rule)`: smtshape has no rule for the op (ONNX's per-node inference stood in).",
              "",
              "| op | tests | " + " | ".join(variants) + " | wrong (" + " / ".join(variants) + ") |",
              "|---|---|" + "---|" * len(variants) + "---|"]
        per = defaultdict(dict)
        norule_ops = set()
        for o in outs:
            if o.tool != "smtshape":
                continue
            if not o.op.endswith("(expanded)") and o.op.split("::")[-1] in o.no_rule:
                norule_ops.add(o.op)
            d = per[o.op].setdefault(o.variant, [0, 0, 0, 0])
            d[0] += o.full
            d[1] += 1
            d[2] += o.wrong
            d[3] += o.status != "ok"
        for op in sorted(per, key=str.lower):
            n = max(d[1] for d in per[op].values())
            cells, wr = [], []
            for v in variants:
                d = per[op].get(v, [0, 0, 0, 0])
                c = f"{d[0]} / {d[1]}"
                if d[0] < d[1]:
                    c = f"**{c}**"
                if d[3]:
                    c += f" !{d[3]}"
                cells.append(c)
                wr.append(str(d[2]))
            label = f"{op} (no rule)" if op in norule_ops else op
            L.append(f"| {label} | {n} | " + " | ".join(cells) + " | " + " / ".join(wr) + " |")
        L.append("")

        L += ["## Not fully resolved by smtshape", "",
              "Tests not fully resolved in each variant, by op (count, then the tests).", ""]
        for v in variants:
            bad = defaultdict(list)
            for o in outs:
                if o.tool == "smtshape" and o.variant == v and not o.full:
                    bad[o.op].append(o.test)
            L.append(f"- **{v}** ({sum(len(x) for x in bad.values())}): " + "; ".join(
                f"{op} {len(ts)} (" + ", ".join(ts[:6]) + (", ..." if len(ts) > 6 else "") + ")"
                for op, ts in sorted(bad.items(), key=lambda kv: (-len(kv[1]), kv[0]))))
        L.append("")

    L += ["## Wrong dims", "",
          "`op | test | variant | value axis | claim | expected`.", ""]
    for tool in tools:
        mine = [o for o in outs if o.tool == tool and o.wrong]
        if not mine:
            L.append(f"- **{tool}**: none.")
            continue
        byop = Counter()
        for o in mine:
            byop[o.op] += o.wrong
        lines = [ln for o in mine for ln in o.describe_wrong()]
        L.append(f"- **{tool}**: {sum(o.wrong for o in mine)} wrong dims in {len(lines)} entries (a wrong rank is one "
                 "entry counting every axis). By op: " + ", ".join(f"{k} {n}" for k, n in byop.most_common()))
        cap = 300 if tool == "smtshape" else 60
        L += ["", "  ```"]
        L += ["  " + ln for ln in lines[:cap]]
        if len(lines) > cap:
            L.append(f"  ... {len(lines) - cap} more (--json has them all)")
        L += ["  ```"]
    L.append("")
    if "smtshape" in tools:
        sm = [o for o in outs if o.tool == "smtshape"]
        L += ["## smtshape: conflicts and rule failures", "",
              "Every node test is a model ONNX's reference implementation runs, so a conflict (or "
              "`consistent == False`) is a false claim; a rule failure (`rule_error`: the rule rejected the node "
              "and left its outputs unknown) costs resolution. By op: test variants, then the first message.", ""]
        byop = defaultdict(list)
        for o in sm:
            if o.findings or o.consistent is False:
                byop[o.op].append(o)
        if not byop:
            L.append("None.")
        for op, os_ in sorted(byop.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            o = os_[0]
            msg = o.findings[0] if o.findings else "consistent == False"
            nconf = sum(1 for x in os_ if x.consistent is False or any(f.startswith("conflict") for f in x.findings))
            L.append(f"- {op}: {len(os_)} ({nconf} with a conflict); `{o.test}` {o.variant}: {msg}")
        L.append("")
        L += ["## smtshape: false equalities", "",
              "One symbol the answer cannot express in the input dims (a data symbol, a generated name, or a "
              "`dim_param` of the model) put on axes whose sizes differ at run time: not counted as wrong dims "
              "(the symbol cannot be evaluated), but a false claim that the axes are equal. *Echoed*: the symbol "
              "is a `dim_param` the model itself declares on an input (e.g. a sequence input typed "
              "`seq(tensor[N])` whose elements have different sizes), so smtshape repeats the model's claim.", ""]
        own = [(o, f) for o in sm for f in o.false_equalities]
        echo = [(o, f) for o in sm for f in o.echoed_false_equalities]
        L.append(f"- own: {len(own)}" + ("" if not own else ": " + "; ".join(
            f"`{o.test}` {o.variant}: {f}" for o, f in own[:30])))
        L.append(f"- echoed: {len(echo)}" + ("" if not echo else ": " + "; ".join(
            f"`{o.test}` {o.variant}: {f}" for o, f in echo[:30])))
        L.append("")
        norule = Counter()
        for o in sm:
            if o.variant == variants[0]:
                for op in o.no_rule:
                    norule[op] += 1
        L += ["## smtshape: ops without a rule", "",
              "Op types of nodes that had no rule (ONNX's per-node inference stood in), with the number of "
              f"tests ({variants[0]} variant) that contain one: " +
              (", ".join(f"{k} {n}" for k, n in sorted(norule.items())) or "none") + ".", ""]

    L += ["## Crashes and timeouts", "",
          "By op: number of test variants, then the first error.", ""]
    for tool in tools:
        mine = [o for o in outs if o.tool == tool and o.status in ("crash", "timeout", "grade-error")]
        if not mine:
            L.append(f"- **{tool}**: none.")
            continue
        byop = defaultdict(list)
        for o in mine:
            byop[o.op].append(o)
        L.append(f"- **{tool}** ({len(mine)}): " + "; ".join(
            f"{op} {len(os_)} (`{os_[0].test}` {os_[0].variant}: {os_[0].status} {os_[0].error[:120]})"
            for op, os_ in sorted(byop.items(), key=lambda kv: (-len(kv[1]), kv[0]))))
    L.append("")

    if "smtshape" in tools:
        sm = sorted((o for o in outs if o.tool == "smtshape"), key=lambda o: -(o.ms or 0))[:10]
        L += ["## Slowest smtshape runs", "",
              ", ".join(f"{o.test} ({o.variant}) {o.ms / 1000:.2f} s" for o in sm), ""]
    return "\n".join(L)


def to_json(outs):
    return [{"test": o.test, "op": o.op, "variant": o.variant, "tool": o.tool, "status": o.status,
             "error": o.error, "ms": o.ms, "axes": o.axes, "right": o.right, "bound_ok": o.bound_ok,
             "unresolved": o.unresolved, "wrong": o.wrong, "full": o.full, "ungraded": o.ungraded,
             "wrong_entries": o.describe_wrong(), "consistent": o.consistent, "findings": o.findings,
             "no_rule": o.no_rule, "false_equalities": o.false_equalities,
             "echoed_false_equalities": o.echoed_false_equalities} for o in outs]


def _kept_tail(path) -> str:
    """What ``benchmarks/onnx_shape_tests.py`` wrote into the same file (its marked section
    and what follows it), kept when this report is rewritten."""
    try:
        old = Path(path).read_text()
    except OSError:
        return ""
    i = old.find("<!-- onnx-shape-tests:begin -->")
    return "" if i < 0 else "\n" + old[i:]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma list of " + ",".join(ALL_TOOLS))
    ap.add_argument("--variants", default=",".join(C.VARIANTS))
    ap.add_argument("--ops", default=None, help="only tests of these ops (comma list; 'Op (expanded)' too)")
    ap.add_argument("--tests", default=None, help="only these tests (comma list)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per tool run")
    ap.add_argument("--out", default=None, help="write the markdown report here (atomically)")
    ap.add_argument("--json", default=None, help="write every outcome as JSON here")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    for t in tools:
        if t not in ALL_TOOLS:
            ap.error(f"unknown tool {t!r}")
    for v in variants:
        if v not in C.VARIANTS:
            ap.error(f"unknown variant {v!r}")

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    tests = C.load_suite()
    if a.ops:
        want = {x.strip() for x in a.ops.split(",")}
        tests = [t for t in tests if t.op in want or t.label in want]
    if a.tests:
        want = {x.strip() for x in a.tests.split(",")}
        tests = [t for t in tests if t.name in want]
    names = [t.name for t in tests]
    t0 = time.perf_counter()
    outs = []
    done = 0
    if a.jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(a.jobs, initializer=_init, initargs=(tools, variants, a.timeout)) as pool:
            for res in pool.imap_unordered(_work, names, chunksize=4):
                outs.extend(res)
                done += 1
                if not a.quiet and done % 100 == 0:
                    print(f"{done}/{len(names)} tests, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    else:
        _init(tools, variants, a.timeout)
        for n in names:
            outs.extend(_work(n))
            done += 1
            if not a.quiet and done % 100 == 0:
                print(f"{done}/{len(names)} tests, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    order = {n: i for i, n in enumerate(names)}
    outs.sort(key=lambda o: (order[o.test], variants.index(o.variant), tools.index(o.tool)))
    seconds = time.perf_counter() - t0
    seq_tests = {t.name for t in tests if any(s is None or "t" not in s for _, s in t.outputs)}
    text = report(outs, tools, variants, len(names), argv, seconds, a.jobs, seq_tests)
    print(text)
    if a.out:
        write_atomic(a.out, text + "\n" + _kept_tail(a.out))
    if a.json:
        write_atomic(a.json, json.dumps(to_json(outs), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
