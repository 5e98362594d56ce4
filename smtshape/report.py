"""Terminal output for people: a summary first, the findings, then the table.

Everything here turns a :class:`smtshape.result.Result` into text; nothing
here decides anything.  Text from the model is untrusted: control characters
never reach the terminal (:func:`clean`).  Colour is ANSI and only used when
the caller says so (the CLI: stdout is a terminal and ``NO_COLOR`` is unset).
The progress display on stderr comes from ``rich`` (:class:`Progress`).
"""
from __future__ import annotations

import fnmatch
import os
import threading
from collections import Counter

from .dim import Exactness
from .labels import node_label, node_phrase
from .text import clean, one_line, plural  # noqa: F401  (re-exported)

MAX_DIM_CHARS = 40          # a dim longer than this is abbreviated in the table (full in --json)
MAX_NAME_CHARS = 60         # value names longer than this are shortened in the middle
MAX_ITEMS = 20              # per findings section, before "... and N more"
MAX_FINDING_CHARS = 160     # a one-line finding longer than this is abbreviated (full in --json)


# ------------------------------------------------------------------ text helpers

def premises_text(result, premises=None) -> str:
    """The bindings and assumptions an answer holds under, in one phrase: "for every input
    the model accepts" when there are none."""
    if premises is None:
        premises = result.premises
    said = [p for p in premises if not p.startswith("domain: ")]
    domain = [p[len("domain: "):] for p in premises if p.startswith("domain: ")]
    if not said and not domain:
        return "for every input the model accepts (no binding or assumption used)"
    return "only where these hold: " + "; ".join(said + [f"domain assumption {d}" for d in domain])


def indent(text: str, pad: str = "  ") -> str:
    return "\n".join(pad + line for line in text.split("\n"))


def abbreviate(text: str, limit: int = MAX_DIM_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters with an ellipsis ('...'), between names,
    never inside one: whole tokens are taken from both ends in turn while they fit (a single
    name longer than the room is cut in its middle: nothing else fits)."""
    if len(text) <= limit:
        return text
    import re
    tokens = re.findall(r"[A-Za-z0-9_.]+|\s+|.", text)
    room = limit - 3
    i, j, used = 0, len(tokens) - 1, 0
    grew = True
    while grew and i <= j:
        grew = False
        if used + len(tokens[i]) <= room:
            used += len(tokens[i])
            i += 1
            grew = True
        if i <= j and used + len(tokens[j]) <= room:
            used += len(tokens[j])
            j -= 1
            grew = True
    if i > j:
        return text
    head, tail = "".join(tokens[:i]).rstrip(), "".join(tokens[j + 1:]).lstrip()
    if not head.strip("?([ ") and not tail.strip(")] "):      # one name fills the room
        h = (room + 1) // 2
        return text[:h] + "..." + text[len(text) - (room - h):]
    return head + "..." + tail


class Style:
    """ANSI styles, or nothing when colour is off."""

    CODES = {"bold": "1", "red": "31;1", "green": "32", "yellow": "33", "dim": "2", "cyan": "36"}

    def __init__(self, color: bool):
        self.color = color

    def __call__(self, text: str, style: str) -> str:
        if not self.color or not text:
            return text
        return f"\x1b[{self.CODES[style]}m{text}\x1b[0m"


def dtype_text(dt) -> str:
    if dt is None:
        return "?"
    try:
        return dt.name.lower()
    except Exception:
        return str(dt)


def shape_text(shape, limit: int | None = None) -> str:
    if shape is None:
        return "? (rank unknown)"
    parts = [str(d) for d in shape]
    if limit:
        parts = [abbreviate(p, limit) for p in parts]
    return "(" + ", ".join(parts) + ")"


# ------------------------------------------------------------------ conflicts

def node_index(result) -> dict:
    """Label (``labels.node_label``) -> node of the main graph."""
    out = {}
    try:
        for i, node in enumerate(result.model.graph):
            out.setdefault(node_label(node, i), node)
    except Exception:
        pass
    return out


def _values_line(result, node) -> str:
    parts = []
    for label, vals in (("inputs", node.inputs), ("outputs", node.outputs)):
        items = []
        for v in vals:
            if v is None or not v.name:
                continue
            try:
                s = shape_text(result.shape(v.name))
            except KeyError:
                s = "?"
            items.append(f"'{one_line(v.name)}' {s}")
        if items:
            parts.append(f"{label} " + ", ".join(items))
    return "; ".join(parts)


def explain_conflict(result, c, nodes_by_name=None) -> str:
    """Conflict.explain() plus the values at the nodes involved and a suggested fix."""
    if nodes_by_name is None:
        nodes_by_name = node_index(result)
    lines = [clean(c.explain())]
    for k, v in (getattr(c, "values", None) or {}).items():
        lines.append(f"  value {one_line(k)} = {one_line(v)}")
    for name in c.nodes:
        node = nodes_by_name.get(name)
        if node is not None:
            vl = _values_line(result, node)
            if vl:
                lines.append(f"  at {node_phrase(node.op_type, one_line(name))}: {vl}")
    from .conflicts import suggest_fix
    lines.append("  fix: " + suggest_fix(c))
    return "\n".join(lines)


def fmt_diag(d) -> str:
    where = node_phrase(d.op_type, d.node) + ": " if d.node else ""
    return one_line(where + d.message)


def diags(result, *kinds):
    return [d for d in result.diagnostics if d.kind in kinds]


# ------------------------------------------------------------------ summary

def dim_counts(result, names=None, tick=None) -> dict:
    """{"values", "rank_unknown", "exact", "static", "symbolic", "upper_bound", "unknown"}."""
    c = Counter()
    for name in (result.value_names if names is None else names):
        c["values"] += 1
        s = result.shape(name)
        if tick is not None:
            tick()
        if s is None:
            c["rank_unknown"] += 1
            continue
        for d in s:
            c[d.exactness.value] += 1
            if d.exactness is Exactness.EXACT:
                c["static" if isinstance(d.expr, int) else "symbolic"] += 1
    return {k: c.get(k, 0) for k in ("values", "rank_unknown", "exact", "static", "symbolic",
                                      "upper_bound", "unknown")}


def consistency_text(result, st: Style) -> str:
    if result.conflicts:
        n = len(result.conflicts)
        return st(f"CONFLICT ({n} conflict{'s' if n != 1 else ''})", "red")
    if result.consistent is None:
        n = len(result.undecided)
        u = sum(1 for x in result.unchecked_nodes if not x.accepted)
        why = ([f"{n} constraint{'s' if n != 1 else ''} could not be decided"] if n else []) + \
            ([f"{u} node{'s' if u != 1 else ''} not checked"] if u else [])
        return st(f"not proven consistent ({', '.join(why)})", "yellow")
    return st("consistent", "green")


def summary_lines(result, model_path, st: Style, counts: dict) -> list[str]:
    try:
        nodes = sum(1 for _ in result.model.graph)
    except Exception:
        nodes = 0
    unchecked = result.unchecked_nodes
    lines = [st(f"model: {one_line(model_path)}", "bold") + f"  ({nodes} nodes)"]
    lines.append(f"values: {counts['values']}"
                 + (f" ({counts['rank_unknown']} of unknown rank)" if counts["rank_unknown"] else ""))
    lines.append(f"dims: {counts['exact']} EXACT ({counts['static']} static, {counts['symbolic']} symbolic), "
                 f"{counts['upper_bound']} UPPER_BOUND, {counts['unknown']} UNKNOWN")
    lines.append("consistency: " + consistency_text(result, st))
    lines.append(f"findings: {len(result.conflicts)} conflict{'s' if len(result.conflicts) != 1 else ''}, "
                 f"{len(result.specializations)} specialization{'s' if len(result.specializations) != 1 else ''}, "
                 f"{len(unchecked)} node{'s' if len(unchecked) != 1 else ''} not checked")
    return lines


def _section(lines, st, title, items, total=None, limit=MAX_ITEMS):
    if not items:
        lines.append(f"{st(title, 'bold')}: none")
        return
    lines.append(f"{st(title, 'bold')}:")
    for it in items[:limit]:
        if "\n" not in it:
            it = abbreviate(it, MAX_FINDING_CHARS)
        lines.append(indent(it))
    extra = (total if total is not None else len(items)) - min(len(items), limit)
    if extra > 0:
        lines.append(f"  ... and {extra} more (--json lists them all)")


def unchecked_groups(result) -> list[str]:
    """The nodes no rule checked, one line per (op, reason): how many, the first names,
    why, and whether the user accepted them."""
    groups: dict = {}
    for u in result.unchecked_nodes:
        groups.setdefault((u.domain, u.op_type, u.reason, u.accepted), []).append(u)
    out = []
    for (domain, op, reason, accepted), us in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0][:2])):
        shown = ", ".join(f"'{one_line(u.node)}'" for u in us[:3])
        more = f", ... ({len(us) - 3} more)" if len(us) > 3 else ""
        qual = f"{domain}::{op}" if domain else op
        why = reason.value if reason.name == "NO_RULE" or len(us) > 1 else us[0].message
        tail = " (accepted unchecked, --accept-unchecked)" if accepted else ""
        out.append(f"{one_line(qual)}: {len(us)} node{'s' if len(us) != 1 else ''} ({shown}{more}): "
                   f"{one_line(why)}{tail}")
    return out


def findings_lines(result, binds: dict, st: Style) -> list[str]:
    lines: list[str] = []
    inputs = result.store.input_symbols()
    lines.append(st("input dims", "bold") + ":" + ("" if inputs else " none"))
    for i in inputs[:MAX_ITEMS]:
        lines.append(f"  {one_line(i.name)}: {one_line(i.origin.message)}")
    if len(inputs) > MAX_ITEMS:
        lines.append(f"  ... and {len(inputs) - MAX_ITEMS} more (--json lists them all)")
    for (value, axis), label in list(result.engine.expression_dims.items())[:MAX_ITEMS]:
        lines.append(f"  {one_line(value)}[{axis}]: {one_line(label)} (a dim_param read as an expression)")
    lines.append("")
    nodes = node_index(result)
    _section(lines, st, "conflicts", [explain_conflict(result, c, nodes) for c in result.conflicts])
    _section(lines, st, "specializations", [clean(f"the model forces {s}") for s in result.specializations])
    assumed = [f"bind: {one_line(k)} = {v}" for k, v in binds.items()]
    analysis = []
    for d in diags(result, "assumption"):
        (analysis if d.message.startswith("assumption of the analysis") else assumed).append(one_line(d.message))
    if len(analysis) > 3:        # many similar range assumptions (float32 sizes, ...): a few, then a count
        assumed += analysis[:3] + [f"... and {len(analysis) - 3} more assumptions of the analysis "
                                   "(--json lists them all)"]
    else:
        assumed += analysis
    _section(lines, st, "assumptions in force", assumed, limit=max(MAX_ITEMS, len(assumed)))
    _section(lines, st, "annotation findings", [fmt_diag(d) for d in diags(result, "annotation")])
    _section(lines, st, "nodes not checked", unchecked_groups(result))
    und = result.undecided
    if und:
        _section(lines, st, "undecided constraints",
                 [one_line(f"{c.relation}  <- {c.provenance}") for c in und])
    other = diags(result, "rule_error", "warning", "budget")
    if other:
        _section(lines, st, "warnings", [fmt_diag(d) for d in other])
    return lines


# ------------------------------------------------------------------ table

def table_lines(result, names, st: Style, tick=None) -> tuple[list[str], int]:
    """The value table (names given), and how many dims were abbreviated."""
    rows = []
    cut = 0
    for name in names:
        s = result.shape(name)
        if tick is not None:
            tick()
        if s is None:
            text = shape_text(None)
        else:
            parts = []
            for d in s:
                t = str(d)
                if len(t) > MAX_DIM_CHARS:
                    cut += 1
                    t = abbreviate(t)
                parts.append(t)
            text = "(" + ", ".join(parts) + ")"
        rows.append((abbreviate(one_line(name), MAX_NAME_CHARS), clean(text), dtype_text(result.dtype(name))))
    hdr = ("value", "shape", "dtype")
    w0 = max([len(hdr[0])] + [len(r[0]) for r in rows])
    w2 = max([len(hdr[2])] + [len(r[2]) for r in rows])
    lines = [st(f"{hdr[0].ljust(w0)}  {hdr[2].ljust(w2)}  {hdr[1]}", "bold")]
    for r in rows:        # shape last: a long shape never pushes another column off the screen
        lines.append(f"{r[0].ljust(w0)}  {r[2].ljust(w2)}  {r[1]}")
    return lines, cut


def select_values(result, patterns) -> list[str]:
    names = result.value_names
    if not patterns:
        return names
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def render(result, model_path: str, binds: dict | None = None, *, findings_only: bool = False,
           patterns=(), color: bool = False, progress=None) -> str:
    """The report: summary, findings, then (unless ``findings_only``) the table of
    the values whose names match one of ``patterns`` (globs; all when empty)."""
    st = Style(color)
    binds = binds or {}
    names = select_values(result, patterns)
    tick = None
    if progress is not None:
        tick = progress.phase("solving shapes", len(result.value_names))
    counts = dim_counts(result, tick=tick)   # solves every shape once (cached by the result)
    if progress is not None:
        progress.done()
        progress.phase("finding the limits the model forces", 0)
        result.specializations                 # computed once (cached by the result)
        progress.done()
    lines = summary_lines(result, model_path, st, counts)
    lines.append("")
    lines += findings_lines(result, binds, st)
    if findings_only:
        return "\n".join(lines)
    lines.append("")
    if patterns:
        lines.append(f"values matching {', '.join(repr(one_line(p)) for p in patterns)}: "
                     f"{len(names)} of {len(result.value_names)}")
    tl, cut = table_lines(result, names, st, tick=None)
    lines += tl
    if cut:
        lines.append(st(f"({cut} long dim expression{'s' if cut != 1 else ''} abbreviated with '...'; "
                        "--json has them in full)", "dim"))
    return "\n".join(lines)


# ------------------------------------------------------------------ progress

class Progress:
    """A progress bar on stderr (``rich``), shown only when the work lasts longer
    than ``delay`` seconds and ``enabled`` (the CLI: stderr is a terminal).

    ``phase(name, total)`` starts a phase and returns a cheap ``tick()``; with ``poll`` (a
    callable returning ``(done, total)``) the bar follows it instead, read a few times a
    second (the walk: ``Engine.node_index`` of ``Engine.node_count``); ``done()`` ends a
    phase; ``close()`` removes the bar (transient)."""

    def __init__(self, enabled: bool, delay: float = 1.0, stream=None):
        self.enabled = enabled
        self.delay = delay
        self._lock = threading.Lock()
        self._bar = None
        self._task = None
        self._count = 0
        self._total = 0
        self._name = ""
        self._closed = False
        self._timer = None
        self._poll = None
        self._shown = False            # (before the timer starts: its thread may show the bar at once)
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, \
                TextColumn, TimeElapsedColumn
            import sys
            self._bar = RichProgress(TextColumn("[bold]smtshape[/] {task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=Console(file=stream or sys.stderr), transient=True,
                                     refresh_per_second=8)
            self._task = self._bar.add_task("starting", total=None)
            self._timer = threading.Timer(delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self):
        with self._lock:
            if self._closed or self._bar is None:
                return
            self._sync()
            self._bar.start()
            self._shown = True

    def _sync(self):
        if self._bar is not None:
            if self._poll is not None:
                try:
                    self._count, self._total = self._poll()
                except Exception:
                    pass
            self._bar.update(self._task, description=self._name, completed=self._count,
                             total=self._total or None)

    def _follow(self, poll):
        """While the phase polled by ``poll`` lasts: refresh the bar four times a second."""
        import time
        while not self._closed and self._poll is poll:
            time.sleep(0.25)
            with self._lock:
                if self._shown and self._poll is not None:
                    self._sync()

    def phase(self, name: str, total: int = 0, poll=None):
        with self._lock:
            if self._poll is not None and self._shown:
                self._sync()               # the polled phase's last count, before it ends
            self._name, self._total, self._count = name, total, 0
            self._poll = poll if self.enabled else None
            if self._shown:
                self._sync()
        if self._poll is not None:
            threading.Thread(target=self._follow, args=(self._poll,), daemon=True).start()

        def tick():
            self._count += 1
            if self._shown and not self._count % 32:
                with self._lock:
                    if self._shown:
                        self._sync()
        return tick

    def done(self):
        with self._lock:
            if self._poll is not None:
                self._sync()
                self._poll = None
            self._count = max(self._count, self._total)
            if self._shown:
                self._sync()

    def close(self):
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._shown:
                self._bar.stop()
                self._shown = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except Exception:
        return False


# ------------------------------------------------------------------ verifier mode (--static)

def _blocking_symbols(result, d) -> list:
    """The input / data symbols a dim's value depends on (aliases expanded)."""
    from . import expr as E
    st = result.store
    defs = dict(d.definitions)
    todo = list(E.free_symbols(d.expr))
    if d.bound is not None:
        todo += list(E.free_symbols(d.bound))
    seen, out = set(), []
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        info = st.info(s)
        if s in defs or (info is not None and info.kind == "alias"):
            e = defs.get(s)
            if e is None:
                e = st.definitions.get(s)
            if e is not None:
                todo += list(E.free_symbols(st.canon(e)))
                continue
        out.append(s)
    return sorted(out, key=lambda s: s.name)


def _symbol_entry(result, s) -> dict:
    info = result.store.info(s)
    entry = {"symbol": s.name, "kind": info.kind if info is not None else "unknown",
             "generated": bool(info.generated) if info is not None else False}
    if info is not None:
        o = info.origin
        entry["introduced_by"] = {"node": o.node, "op_type": o.op_type, "rule": o.rule, "message": o.message}
        if info.kind == "data" and info.upper is not None:
            from .printing import show
            entry["upper"] = show(result.store.canon(info.upper))
    for (inp, axis), e in result.engine.input_dims.items():
        if getattr(e, "name", None) == s.name:
            entry["input"], entry["axis"] = inp, axis
            break
    return entry


def static_report(result) -> dict:
    """Verifier mode: is every dim of every value a static integer (under the
    bindings)?  For each dim that is not: the symbols that block it; for each
    symbol: the graph input axis or the node that introduces it."""
    dims, symbols, total = [], {}, 0
    for name in result.value_names:
        s = result.shape(name)
        if s is None:
            v = result._lookup(name)[0]
            prod = v.producer() if hasattr(v, "producer") else None
            dims.append({"value": name, "axis": None, "dim": None, "reason": "rank unknown",
                         "node": getattr(prod, "name", "") or "", "op_type": getattr(prod, "op_type", "") or "",
                         "symbols": []})
            continue
        for axis, d in enumerate(s):
            total += 1
            if d.is_static:
                continue
            syms = _blocking_symbols(result, d)
            for x in syms:
                if x.name not in symbols:
                    symbols[x.name] = dict(_symbol_entry(result, x), dims=0)
                symbols[x.name]["dims"] += 1
            dims.append({"value": name, "axis": axis, "dim": d.to_json(),
                         "reason": d.exactness.value, "symbols": [x.name for x in syms]})
    return {"static": not dims, "dims_total": total, "not_static": len(dims),
            "dims": dims, "symbols": sorted(symbols.values(), key=lambda e: (-e["dims"], e["symbol"]))}


def static_lines(rep: dict, st: Style) -> list[str]:
    if rep["static"]:
        return [st("static check: every dim is static", "green")
                + f" ({rep['dims_total']} dims)"]
    lines = [st("static check: NOT STATIC", "red")
             + f": {rep['not_static']} dim{'s' if rep['not_static'] != 1 else ''} not static"
             + f" (of {rep['dims_total']})"]
    if rep["symbols"]:
        lines.append(st("blocked by", "bold") + ":")
        for e in rep["symbols"]:
            if e["kind"] == "input":
                where = f"input dim, {one_line(e['introduced_by']['message'])}"
                if "input" in e:
                    where += (f"; bind it with --bind {one_line(e['input'])}:{e['axis']}=N"
                              + ("" if e["generated"] else f" or --bind {one_line(e['symbol'])}=N"))
            else:
                ib = e.get("introduced_by") or {}
                where = (f"{e['kind']} symbol, introduced by {one_line(ib.get('op_type', '?'))} node "
                         f"'{one_line(ib.get('node', ''))}': {one_line(ib.get('message', ''))}")
                if e.get("upper"):
                    where += f" (at most {one_line(e['upper'])})"
            lines.append(f"  {one_line(e['symbol'])} ({where}): blocks {e['dims']} dim{'s' if e['dims'] != 1 else ''}")
    lines.append(st("dims not static", "bold") + ":")
    for d in rep["dims"][:MAX_ITEMS]:
        if d["axis"] is None:
            lines.append(f"  '{one_line(d['value'])}': rank unknown (from {one_line(d['op_type'])} node "
                         f"'{one_line(d['node'])}')")
        else:
            lines.append(f"  '{one_line(d['value'])}'[{d['axis']}] = {abbreviate(one_line(d['dim']['expr']), 60)}"
                         f" ({d['reason']}; blocked by {', '.join(one_line(x) for x in d['symbols']) or '?'})")
    if len(rep["dims"]) > MAX_ITEMS:
        lines.append(f"  ... and {len(rep['dims']) - MAX_ITEMS} more (--json lists them all)")
    return lines
