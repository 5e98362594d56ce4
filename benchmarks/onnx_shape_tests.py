"""ONNX's own shape-inference unit tests, answered by smtshape, graded test by test.

    python benchmarks/onnx_shape_tests.py --tests PATH/shape_inference_test.py [--tests-commit SHA]
                                          [--root CHECKOUT] [-j N] [-k EXPR] [--out docs/conformance.md]
                                          [--json FILE] [--timeout S] [--analysis-timeout S]
                                          [--runtime-timeout S] [-q]

The test file (class ``TestShapeInference`` of onnx's
``tests/python/shape_inference_test.py``) is read where it is, never copied.
Two pytest runs, each in subprocesses with ``-p no:cacheprovider``, ``-c
/dev/null``, a temporary ``--rootdir`` and no bytecode, so nothing is written
beside the test file or into the project:

1. **baseline**: the file as it is (ONNX's own inference), outcomes only.  A test
   that fails here fails under the installed onnx itself and is not graded.
2. **smtshape**: ``benchmarks/_onnx_shape_plugin.py`` replaces
   ``onnx.shape_inference.infer_shapes`` by smtshape (ONNX's real inference still
   runs on a copy, for its verdict) and the test helper's comparison by a grading
   one; see that module.  ``-j N`` splits the tests over N processes.

``--root CHECKOUT`` imports smtshape from another checkout (first on the
subprocesses' ``PYTHONPATH``), e.g. a ``git worktree`` of an older commit.

Grades (one per test; the first that applies, in this order):

- ``crash``: smtshape raised something other than a conflict (BadInput included)
  on a call ONNX accepted, or the test failed for another reason (given);
- ``false conflict``: smtshape reported a conflict on a call ONNX's strict
  inference accepted, also with ``check_type=True`` (ONNX checks element types
  against the schemas only then; the test file runs without it, smtshape always
  checks them: a conflict ONNX shares with ``check_type=True`` is agreement, and
  the test's notes say so), and that onnxruntime or onnx's reference evaluator
  runs (a conflict both runtimes confirm by refusing the model is judged right and
  ONNX's test wrong, listed in the notes: the issue's rule, the runtime is the
  truth where ONNX's test and the runtime disagree);
- ``missed invalid``: ONNX raised on a call (as the test asked for it) and
  smtshape found no conflict;
- ``wrong``: an elem type, rank or dim differs from ONNX's expectation and the
  runtime check did not side with smtshape;
- ``less resolved``: only answers less resolved than ONNX's expectation (also a
  graph output smtshape cannot rank: ``onnx.checker`` refuses a graph output
  without a shape, so such a test fails in the helper's ``check_model``);
- ``pass``: otherwise, when the test passed (it may have more-resolved dims);
  ``not exercised`` when it passed without calling ``infer_shapes`` on a model.

A call both reject (ONNX raises, smtshape conflicts or crashes) counts as agreement.
A dim claim of smtshape that differs from ONNX's expectation is run (onnxruntime,
and onnx's reference evaluator on small inputs or as a fallback): a claim the
runtime confirms counts as right, one it contradicts as wrong.
``--out`` rewrites only the part of the file between ``BEGIN`` and ``END``
below (appending it when absent), atomically.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PLUGIN = "_onnx_shape_plugin"
TEST_CLASS = "TestShapeInference"
BEGIN = "<!-- onnx-shape-tests:begin -->"
END = "<!-- onnx-shape-tests:end -->"
GRADES = ("pass", "missed invalid", "false conflict", "wrong", "less resolved", "crash")
PROBLEM_ORDER = ("crash", "false conflict", "missed invalid", "wrong", "less resolved")
OTHER = ("not exercised", "skipped", "xfail", "fails under onnx itself")

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))
import _onnx_shape_plugin as P  # noqa: E402  (its environment variable names)


# ------------------------------------------------------------------ running pytest

def pytest_command(tests: str, workdir: Path, k: str | None) -> list:
    """The pytest command line for one subprocess."""
    cmd = [sys.executable, "-m", "pytest", f"{tests}::{TEST_CLASS}", "-p", PLUGIN, "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", str(workdir), "-q", "--tb=no", "--no-header", "-rN",
           "-W", "ignore::DeprecationWarning"]
    if k:
        cmd += ["-k", k]
    return cmd


def subprocess_env(mode: str, root: Path, records: Path, shard: str | None, timeouts: str) -> dict:
    """Environment of one pytest subprocess: smtshape from ``root`` and the plugin first
    on PYTHONPATH, no bytecode written, the plugin's settings."""
    env = dict(os.environ)
    path = [str(root), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update({"PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1",
                P.MODE_ENV: mode, P.RECORDS_ENV: str(records), P.TIMEOUT_ENV: timeouts})
    env.pop(P.SHARD_ENV, None)
    if shard:
        env[P.SHARD_ENV] = shard
    return env


def run_mode(a, mode: str, jobs: int, workdir: Path) -> tuple:
    """Run the test file in ``mode`` over ``jobs`` subprocesses; (env record, {test id:
    record}).  Raises SystemExit when a subprocess ends with neither records nor a
    pytest exit status (collection errors, a broken plugin)."""
    t0 = time.perf_counter()
    procs = []
    for i in range(jobs):
        records = workdir / f"{mode}-{i}.jsonl"
        log = open(workdir / f"{mode}-{i}.log", "wb")
        env = subprocess_env(mode, a.root, records, f"{i}/{jobs}" if jobs > 1 else None,
                             f"{a.analysis_timeout:g},{a.runtime_timeout:g}")
        p = subprocess.Popen(pytest_command(a.tests, workdir, a.k), cwd=workdir, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
        procs.append((p, records, log))
    _wait(procs, a, mode, t0)
    env_rec, tests = None, {}
    for p, records, log in procs:
        log.close()
        mine = [json.loads(line) for line in records.read_text().splitlines()] if records.exists() else []
        envs = [r for r in mine if r["kind"] == "env"]
        ran = [r for r in mine if r["kind"] == "test"]
        if not envs or (not ran and p.returncode not in (0, 5)):
            tail = Path(log.name).read_text(errors="replace")[-3000:]
            raise SystemExit(f"{mode} run failed (exit {p.returncode}):\n{tail}")
        env_rec = envs[0]
        tests.update((r["id"], r) for r in ran)
    return env_rec, tests


def _wait(procs, a, mode, t0) -> None:
    """Wait for the subprocesses (killing them past ``--timeout``), printing progress."""
    last = 0.0
    while any(p.poll() is None for p, _, _ in procs):
        time.sleep(0.5)
        dt = time.perf_counter() - t0
        if dt > a.timeout:
            for p, _, _ in procs:
                if p.poll() is None:
                    p.kill()
            print(f"{mode}: stopped after {a.timeout:g} s (--timeout); graded what ran", file=sys.stderr)
            break
        if not a.quiet and dt - last >= 15:
            last = dt
            done = sum(_count_lines(r) for _, r, _ in procs)
            print(f"{mode}: {done} records, {dt:.0f} s", file=sys.stderr, flush=True)
    for p, _, _ in procs:
        p.wait()


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


# ------------------------------------------------------------------ grading

def call_problems(call: dict) -> list:
    """[(grade, reason)] of one infer_shapes call (empty when smtshape agrees with ONNX's verdict)."""
    onnx_rejects = call["onnx_strict_error"] is not None or call["onnx_error"] is not None
    sm = call["smtshape"]
    if sm in ("crash", "timeout") and not onnx_rejects:
        return [("crash", f"smtshape {sm}: {call['smtshape_text']}")]
    if sm == "conflict" and not onnx_rejects and call.get("onnx_typecheck_error"):
        return []      # ONNX agrees once it checks element types (check_type=True): see _notes
    if sm == "conflict" and not onnx_rejects and _runtimes_refuse(call):
        return []      # both runtimes refuse the model ONNX's test calls valid: see _notes
    if sm == "conflict" and not onnx_rejects:
        rt = "; ".join(f"{k} {v[:110]}" for k, v in (call["runtime"] or {}).items()) or "not run"
        return [("false conflict", f"[runtime: {_squeeze(rt)}] smtshape: {_squeeze(call['smtshape_text'])}")]
    if sm == "ok" and call["onnx_error"] is not None:
        text = onnx_text(call["onnx_error"]["text"])
        if "(op_type:Reshape)" in text and "Reshape" not in call["ops"]:
            text += " (raised at the helper's seed Reshape of an untyped seed, which the rewrite removes)"
        return [("missed invalid", "ONNX: " + text)]
    return []


def onnx_text(text: str) -> str:
    """ONNX's error without its boilerplate prefixes."""
    for prefix in ("InferenceError: ", "[ShapeInferenceError] ", "Inference error(s): "):
        text = text[len(prefix):] if text.startswith(prefix) else text
    return text


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def diff_text(d: dict) -> str:
    """One readable line for a graded difference."""
    where = d["value"] + ("" if d["axis"] is None else f"[{d['axis']}]")
    rt = d.get("runtime") or {}
    verdict = rt.get("verdict")
    extra = ""
    if verdict:
        extra = f"; runtime: {verdict}" + (f" ({rt['reason']})" if rt.get("reason") else "")
        runs = rt.get("runs") or []
        if runs:
            extra += " " + ", ".join(f"{r['runtime']}" for r in runs)
    decl = " (the input model declares this value's type)" if d.get("declared") else ""
    return f"{where} {d['aspect']}: expected {d['expected']}, smtshape {d['smtshape']}{decl}{extra}"


def grade_test(rec: dict | None, base: dict) -> dict:
    """The grade of one test from its smtshape-mode record and its baseline record."""
    out = {"id": base["id"], "baseline": base["outcome"], "ops": [], "grade": None, "reason": "", "notes": [],
           "outcome": None if rec is None else rec["outcome"]}
    if base["outcome"] == "skipped":
        return {**out, "grade": "skipped", "reason": base.get("failure", "")}
    if base["outcome"] in ("xfailed", "xpassed"):
        return {**out, "grade": "xfail", "reason": base.get("failure", "")}
    if base["outcome"] != "passed":
        return {**out, "grade": "fails under onnx itself", "reason": base.get("failure", "")}
    if rec is None or rec["outcome"] is None:
        return {**out, "grade": "crash", "reason": "no record (the test process stopped)"}
    out.update(ops=rec["ops"], outcome=rec["outcome"], failure=rec["failure"], calls=rec["calls"],
               diffs=rec["diffs"], compared=rec["compared"])
    if not rec["calls"] and rec["outcome"] == "passed":
        return {**out, "grade": "not exercised", "reason": "passed without a call of infer_shapes on a model"}
    problems = [p for c in rec["calls"] for p in call_problems(c)]
    problems += [("wrong", diff_text(d)) for d in rec["diffs"] if d["effective"] == "wrong"]
    problems += [("less resolved", diff_text(d)) for d in rec["diffs"] if d["effective"] == "less"]
    if not problems and rec["outcome"] != "passed" and not _typecheck_agreed(rec) and not _runtime_refused(rec):
        problems = [_other_failure(rec)]
    if problems:
        grade = min(problems, key=lambda p: PROBLEM_ORDER.index(p[0]))[0]
        out["grade"] = grade
        out["reason"] = "; ".join(r for g, r in problems if g == grade)[:600]
    else:
        out["grade"] = "pass"
    out["notes"] = _notes(rec)
    return out


def _runtimes_refuse(call: dict) -> bool:
    """Do onnxruntime and onnx's reference evaluator both refuse to run the model (the
    rule of the issue: where ONNX's test and the runtime disagree, the runtime is the
    truth; a conflict both refuse is judged right, ONNX's test wrong)?"""
    rt = call.get("runtime") or {}
    return all(str(rt.get(name, "")).startswith("fails") for name in ("onnxruntime", "onnx.reference"))


def _runtime_refused(rec: dict) -> list:
    """The calls where smtshape's conflict is one ONNX's test does not expect and both
    runtimes confirm (they refuse the model)."""
    return [c for c in rec["calls"] if c["smtshape"] == "conflict" and c["onnx_strict_error"] is None
            and c["onnx_error"] is None and not c.get("onnx_typecheck_error") and _runtimes_refuse(c)]


def _typecheck_agreed(rec: dict) -> list:
    """The calls where smtshape's conflict is one ONNX's inference shares with
    ``check_type=True`` (the test then fails because the substitute raised)."""
    return [c for c in rec["calls"] if c["smtshape"] == "conflict" and c.get("onnx_typecheck_error")
            and c["onnx_strict_error"] is None and c["onnx_error"] is None]


def _other_failure(rec: dict) -> tuple:
    """(grade, reason) of a test that failed with no recorded problem: a graph output
    smtshape could not rank (the checker requires a shape on graph outputs) is less
    resolved; anything else is a crash of the harness or the test's own assertion."""
    unranked = sorted({o for c in rec["calls"] for o in c.get("unranked_outputs") or []})
    if unranked and "ValidationError" in rec["failure"]:
        return ("less resolved", f"rank of graph output(s) {', '.join(unranked)} unknown to smtshape "
                                 f"(onnx.checker rejects a graph output without a shape: {rec['failure']})")
    where = "the test's own check failed" if "AssertionError" in rec["failure"] or "assert " in rec["failure"] \
        else "test failed for another reason"
    return ("crash", f"{where}: {rec['failure']}")


def _notes(rec: dict) -> list:
    """Remarks on a test: more-resolved answers, runtime verdicts."""
    notes = []
    more = [d for d in rec["diffs"] if d["kind"] == "more"]
    if more:
        notes.append("more resolved: " + "; ".join(diff_text(d) for d in more[:4]))
    refused = _runtime_refused(rec)
    if refused:
        rt = refused[0]["runtime"]
        notes.append("ONNX's test judged wrong: smtshape's conflict, which both runtimes confirm (onnxruntime "
                     f"{_squeeze(str(rt.get('onnxruntime')))[:160]}; onnx.reference "
                     f"{_squeeze(str(rt.get('onnx.reference')))[:160]}); smtshape: "
                     + _squeeze(refused[0]["smtshape_text"])[:240])
    typed = _typecheck_agreed(rec)
    if typed:
        notes.append("conflict that ONNX's inference shares with check_type=True (the test runs without it): "
                     + onnx_text(typed[0]["onnx_typecheck_error"]["text"]))
    saved = [d for d in rec["diffs"] if d["kind"] in ("wrong", "less") and d["effective"] == "right"]
    if saved:
        notes.append("runtime sides with smtshape: " + "; ".join(diff_text(d) for d in saved[:4]))
    return notes


def grade_all(base_tests: dict, sm_tests: dict) -> list:
    """Graded rows, in the baseline's order."""
    return [grade_test(sm_tests.get(tid), b) for tid, b in base_tests.items()]


# ------------------------------------------------------------------ summary figures

def dim_verdicts(rows: list) -> Counter:
    """Counts over every runtime-checked difference: (kind, verdict)."""
    c = Counter()
    for r in rows:
        for d in r.get("diffs") or []:
            if d.get("runtime"):
                c[(d["kind"], d["runtime"]["verdict"])] += 1
    return c


def figures(rows: list) -> dict:
    """The headline numbers."""
    grades = Counter(r["grade"] for r in rows)
    passed = [r for r in rows if r["grade"] == "pass"]
    return {
        "grades": {g: grades.get(g, 0) for g in GRADES + OTHER},
        "graded": sum(grades.get(g, 0) for g in GRADES),
        "pass_with_more": sum(1 for r in passed if any(d["kind"] == "more" for d in r.get("diffs") or [])),
        "pass_after_runtime": sum(1 for r in passed if any(d["kind"] in ("wrong", "less")
                                                           for d in r.get("diffs") or [])),
        "xpassed": sum(1 for r in rows if r["grade"] == "xfail" and r.get("outcome") == "xpassed"),
        "both_reject": Counter(c["smtshape"] for r in rows for c in r.get("calls") or []
                               if c["smtshape"] != "ok" and (c["onnx_error"] or c["onnx_strict_error"])),
        "verdicts": dim_verdicts(rows),
        "compared": sum(r.get("compared", 0) for r in rows),
        "conflict_runtime": conflict_runtime(rows),
    }


def conflict_runtime(rows: list) -> Counter:
    """Over the false-conflict tests: how many models fail to run under every runtime
    tried ("all"), under onnxruntime ("onnxruntime"), and how many run somewhere ("runs")."""
    c = Counter()
    for r in rows:
        if r["grade"] != "false conflict":
            continue
        verdicts = {}
        for call in r["calls"]:
            if call["smtshape"] == "conflict" and isinstance(call["runtime"], dict):
                for rt, v in call["runtime"].items():
                    verdicts[rt] = verdicts.get(rt, "fails") if v.startswith("fails") else "runs"
        ran = [rt for rt, v in verdicts.items() if v == "runs"]
        c["runs"] += bool(ran)
        c["all"] += bool(verdicts) and not ran
        c["onnxruntime"] += verdicts.get("onnxruntime") == "fails"
    return c


def per_op(rows: list) -> dict:
    """{op: Counter(grade)} over the non-passing graded tests (a test counts under every
    op type of its model; the helper's seed Reshapes are not part of it)."""
    out = defaultdict(Counter)
    for r in rows:
        if r["grade"] in PROBLEM_ORDER:
            for op in r["ops"] or ["(no node)"]:
                out[op][r["grade"]] += 1
    return out


# ------------------------------------------------------------------ the report

def command_line(argv: list) -> str:
    return "python " + " ".join(["benchmarks/onnx_shape_tests.py"] + list(argv))


HOW = (
    "How: `benchmarks/_onnx_shape_plugin.py` replaces `onnx.shape_inference.infer_shapes`. Each call runs ONNX's "
    "real inference on a copy (its verdict), rewrites another copy for smtshape (each seed `Reshape(SEED_x, "
    "UNKNOWN_SHAPE_x) -> x` of the helper `_make_graph` becomes a graph input `x` of its declared type), runs "
    "`smtshape.analyze(model, policy=\"refine\")`, and returns the original model with smtshape's types as "
    "value_info (EXACT symbolic dims as their printed expression, bounded or unknown dims blank), or raises "
    "`InferenceError` on a conflict or crash (when ONNX rejects the call too, an exception of ONNX's class "
    "carrying both messages). The helper's comparison is replaced by a grading one (elem type, rank, each dim: "
    "equal / more resolved / less resolved / wrong) that fails the test only on wrong or less-resolved answers. "
    "Every dim claim of smtshape that differs from ONNX's expectation is run: the rewritten model, the disputed "
    "values as outputs, the input dims bound to two sets of small distinct sizes that satisfy smtshape's "
    "constraints, random inputs (integers 0 or 1), with onnxruntime and, on inputs of at most "
    f"{P.MAX_REFERENCE_ELEMENTS:,} elements or when onnxruntime cannot run it, onnx's reference evaluator "
    "(runtimes that disagree make the dim not checkable). A claim the runtime confirms counts as right, one it "
    "contradicts as wrong. A conflict ONNX does not share is run the same way (every value ONNX typed fetched) "
    "to see whether the model runs at all.")


def render(rows: list, meta: dict) -> str:
    """The docs section (without the markers)."""
    f = figures(rows)
    L = _header(meta) + _grade_table(f, meta["onnx"])
    both = f["both_reject"]
    L += [f"Calls both ONNX and smtshape reject (counted as agreement): {sum(both.values())} "
          f"({', '.join(f'{n} smtshape {k}' for k, n in sorted(both.items())) or 'none'}). "
          f"Aspects compared (elem types, shapes, dims): {f['compared']}.", ""]
    L += _verdict_lines(f["verdicts"])
    L += _per_op_table(rows)
    L += _grade_lists(rows)
    L += _judged(rows)
    return "\n".join(L)


def _judged(rows: list) -> list:
    """The passing tests where ONNX's test is judged wrong by the runtime's standard: a
    conflict both runtimes confirm, a dim where onnxruntime gives another size than ONNX
    expects (smtshape's claim holding it), a conflict ONNX shares once it checks types."""
    picked = []
    for r in rows:
        if r["grade"] != "pass":
            continue
        why = [n for n in r.get("notes", []) if n.startswith(("ONNX's test judged wrong", "runtime sides",
                                                             "conflict that ONNX's inference shares"))]
        if why:
            picked.append((r, why))
    if not picked:
        return []
    L = ["### Passing where ONNX's expectation is not the runtime's", "",
         "Where ONNX's test and the runtime disagree, the runtime is the truth: a conflict both "
         "onnxruntime and onnx's reference evaluator confirm by refusing the model, a dim whose runtime "
         "size smtshape's answer holds and ONNX's expectation does not, and a conflict ONNX's own "
         "inference raises once it checks element types (`check_type=True`).", ""]
    L += [f"- `{r['id']}` ({', '.join(r['ops']) or '-'}): {_md(' / '.join(why))[:400]}" for r, why in picked]
    L.append("")
    return L


def _header(meta: dict) -> list:
    return ["## ONNX's shape-inference unit tests, answered by smtshape", "",
            f"Command: `{meta['command']}`", "",
            f"Measured {meta['when']}: class `{TEST_CLASS}` of onnx's `tests/python/shape_inference_test.py` at "
            f"onnx/onnx commit {meta['tests_commit']}, read from `{meta['tests']}`; onnx {meta['onnx']}, "
            f"onnxruntime {meta['onnxruntime']}, {meta['versions']}; smtshape from `{meta['root']}` "
            f"({meta['root_commit']}); "
            f"wall time {meta['seconds']:.0f} s with {meta['jobs']} process(es).", "",
            f"Baseline (the file with ONNX's own inference): {meta['baseline']}.", "", HOW, ""]


def _grade_table(f: dict, onnx_version: str) -> list:
    g = f["grades"]
    L = ["| grade | tests |", "|---|---|",
         f"| pass or resolved at least as well as ONNX | {g['pass']} (with more-resolved dims: "
         f"{f['pass_with_more']}; only after the runtime sided with smtshape: {f['pass_after_runtime']}) |"]
    for name in GRADES[1:]:
        extra = ""
        if name == "false conflict" and g[name]:
            c = f["conflict_runtime"]
            extra = (f" (the model fails under onnxruntime in {c['onnxruntime']}, under every runtime tried in "
                     f"{c['all']}; errors in the list below)")
        L.append(f"| {name} | {g[name]}{extra} |")
    return L + [f"| graded | {f['graded']} |",
                f"| not exercised (passed without a call of infer_shapes on a model) | {g['not exercised']} |",
                f"| skipped by the file | {g['skipped']} |",
                f"| xfail | {g['xfail']}" + (f" ({f['xpassed']} xpassed with smtshape)" if f["xpassed"] else "")
                + " |",
                f"| fails under onnx {onnx_version} itself (not graded) | {g['fails under onnx itself']} |", ""]


def _verdict_lines(v: Counter) -> list:
    if not v:
        return []
    parts = []
    for kind in ("more", "wrong", "less"):
        row = {verdict: n for (k, verdict), n in v.items() if k == kind}
        if row:
            parts.append(f"{kind}: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(row.items())))
    return ["Runtime checks of disputed answers (kind as compared with ONNX's expectation: runtime verdict; "
            "`smtshape` = the runtime agrees with smtshape, `onnx` = with ONNX only, `neither`, `not checkable`): "
            + "; ".join(parts) + ".", ""]


def _per_op_table(rows: list) -> list:
    ops = per_op(rows)
    if not ops:
        return []
    cols = PROBLEM_ORDER
    L = ["### Non-passing tests by op", "",
         "A test counts under every op type of its model (the helper's seed Reshapes excluded).", "",
         "| op | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for op in sorted(ops, key=lambda o: (-sum(ops[o].values()), o.lower())):
        L.append(f"| {op} | " + " | ".join(str(ops[op][c] or "") for c in cols) + " |")
    return L + [""]


def _grade_lists(rows: list) -> list:
    L = ["### Tests by grade", ""]
    for grade in PROBLEM_ORDER + ("not exercised", "fails under onnx itself"):
        mine = [r for r in rows if r["grade"] == grade]
        if not mine:
            continue
        L += [f"**{grade}** ({len(mine)}):", ""]
        L += [f"- `{r['id']}` ({', '.join(r['ops']) or '-'}): {_md(r['reason'])[:300]}" for r in mine]
        L.append("")
    return L


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def write_section(path: str, body: str) -> None:
    """Replace the marked section of ``path`` by ``body`` (append it when absent), atomically."""
    from smtshape.fileio import write_atomic
    section = f"{BEGIN}\n{body.rstrip()}\n{END}\n"
    try:
        old = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    i, j = old.find(BEGIN), old.find(END)
    if i >= 0 and j > i:
        new = old[:i] + section + old[j + len(END):].lstrip("\n")
    else:
        new = old + ("" if not old or old.endswith("\n\n") else ("\n" if old.endswith("\n") else "\n\n")) + section
    write_atomic(path, new)


def console_summary(rows: list) -> str:
    f = figures(rows)
    g = f["grades"]
    lines = [f"graded {f['graded']}: " + ", ".join(f"{k} {g[k]}" for k in GRADES),
             f"pass with more-resolved dims {f['pass_with_more']}, pass only after the runtime check "
             f"{f['pass_after_runtime']}; " + ", ".join(f"{k} {g[k]}" for k in OTHER)]
    ops = per_op(rows)
    for grade in PROBLEM_ORDER:
        top = sorted(((c[grade], op) for op, c in ops.items() if c[grade]), reverse=True)[:8]
        if top:
            lines.append(f"  {grade}: " + ", ".join(f"{op} {n}" for n, op in top))
    return "\n".join(lines)


# ------------------------------------------------------------------ provenance

def git_commit(path: Path) -> str | None:
    """The commit of the git checkout holding ``path`` (``+ changes`` when smtshape/ or the
    file differs from it), or None."""
    try:
        top = subprocess.run(["git", "-C", str(path if path.is_dir() else path.parent), "rev-parse", "--short=9",
                              "HEAD"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (top.stdout.strip() or None) if top.returncode == 0 else None


def root_commit(root: Path) -> str:
    sha = git_commit(root)
    if sha is None:
        return "not a git checkout"
    st = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "smtshape"],
                        capture_output=True, text=True, timeout=20)
    return f"commit {sha}" + (" with uncommitted changes in smtshape/" if st.stdout.strip() else "")


def tests_commit(tests: Path, given: str | None) -> str:
    """``--tests-commit``, else the commit of an onnx checkout holding the file, else unknown."""
    if given:
        return given
    for d in tests.resolve().parents:
        if (d / ".git").exists():
            if (d / "onnx" / "__init__.py").exists():
                return git_commit(d) or "unknown"
            break
    return "unknown (pass --tests-commit)"


def other_versions() -> str:
    """Python, sympy and z3 versions (``corpus_score._versions``; the same interpreter runs the tests)."""
    import corpus_score as CS
    vs = CS._versions()
    return ", ".join(f"{k} {vs[k]}" for k in ("python", "sympy", "z3-solver") if k in vs)


def baseline_text(rows: list, base: dict, onnx_version: str) -> str:
    c = Counter(b["outcome"] for b in base.values())
    failed = [r["id"] for r in rows if r["grade"] == "fails under onnx itself"]
    s = ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
    s += f"; fails under onnx {onnx_version} itself: " + (", ".join(f"`{t}`" for t in failed) if failed else "none")
    return s


# ------------------------------------------------------------------ main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", required=True, help="path of onnx's shape_inference_test.py (read, never copied)")
    ap.add_argument("--tests-commit", default=None, help="the onnx commit the test file comes from (for the report)")
    ap.add_argument("--root", default=str(REPO), help="import smtshape from this checkout (default: this repo)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="pytest subprocesses for the smtshape run")
    ap.add_argument("-k", default=None, help="pytest -k expression (both runs)")
    ap.add_argument("--out", default=None, help="rewrite the marked section of this markdown file")
    ap.add_argument("--json", default=None, help="write per-test records here")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for each run (default 900)")
    ap.add_argument("--analysis-timeout", type=float, default=60.0, help="seconds per smtshape analysis")
    ap.add_argument("--runtime-timeout", type=float, default=20.0, help="seconds per runtime check")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    a.tests = str(Path(a.tests).resolve())
    a.root = Path(a.root).resolve()
    if not Path(a.tests).is_file():
        ap.error(f"no such file: {a.tests}")
    if not (a.root / "smtshape" / "__init__.py").is_file():
        ap.error(f"--root {a.root} holds no smtshape package")
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="onnx-shape-tests-") as tmp:
        workdir = Path(tmp)
        base_env, base = run_mode(a, "baseline", 1, workdir)
        sm_env, sm = run_mode(a, "smtshape", max(1, a.jobs), workdir)
    rows = grade_all(base, sm)
    meta = {"command": command_line(argv), "when": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC"), "tests": a.tests, "tests_commit": tests_commit(Path(a.tests), a.tests_commit),
            "onnx": base_env["onnx"], "onnxruntime": sm_env.get("onnxruntime", "?"), "root": sm_env.get("smtshape"),
            "root_commit": root_commit(a.root), "seconds": time.perf_counter() - t0, "jobs": max(1, a.jobs)}
    meta["baseline"] = baseline_text(rows, base, meta["onnx"])
    meta["versions"] = other_versions()
    print(console_summary(rows))
    if a.out:
        write_section(a.out, render(rows, meta))
    if a.json:
        from smtshape.fileio import write_atomic
        write_atomic(a.json, json.dumps({"meta": meta, "tests": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
