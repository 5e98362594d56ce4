"""The command-line interface: ``smtshape infer | check | query``.

Exit codes
    0   infer: done (even with conflicts; infer is informational)
        check: consistent (no conflict)        query: PROVEN
    1   check: at least one conflict           query: REFUTED
    2   bad input (model, expression, option, file); one ``smtshape: error:`` line on stderr
    3   query: UNKNOWN; any command: internal error (a bug; please report it)
    4   check: undecided (no conflict found, but some constraints could not be
        decided; they are listed with their nodes)
    130 interrupted

Only argparse; nothing in here evaluates user text: relations go through
:mod:`smtshape.parse`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from . import __version__
from .errors import BadInput, SmtShapeError
from .fileio import write_atomic
from .query import _parse_problem, parse_query

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_UNKNOWN, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 3, 130
EXIT_UNDECIDED = 4
POLICIES = ("skip", "refine", "strict", "override")
REPORT_URL = "https://github.com/smtshape/smtshape/issues"


# ------------------------------------------------------------------ argument parsing

class _UsageError(Exception):
    """argparse found a malformed command line (exit 2, one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never print usage + exit(2) on our behalf
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    g = common.add_argument_group("analysis options")
    g.add_argument("--assume", action="append", default=[], metavar="EXPR",
                   help="a relation over input dim names, e.g. 'seq <= 4096' (repeatable)")
    g.add_argument("--constraints", action="append", default=[], metavar="FILE",
                   help="a constraint file: one relation per line, '#' comments (repeatable)")
    g.add_argument("--bind", action="append", default=[], metavar="NAME=INT",
                   help="fix an input dim to a value, e.g. batch=1 (repeatable)")
    g.add_argument("--policy", choices=POLICIES, default="refine",
                   help="what to do with shape annotations already in the model (default: refine)")
    g.add_argument("--inputs-positive", action="store_true",
                   help="assume every input dim is at least 1 (reported)")
    g.add_argument("--no-broadcast-one", action="store_true",
                   help="assume symbolic dims are never 1 when broadcasting (reported)")
    o = common.add_argument_group("output options")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="write the model annotated with the inferred shapes to OUT (never the input file)")
    o.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")
    o.add_argument("--smtlib", metavar="FILE",
                   help="write the constraint set as SMT-LIB2 to FILE ('-' for stdout)")

    p = _Parser(prog="smtshape",
                description="Symbolic shape analysis of ONNX models with an SMT (Z3) backend.",
                epilog="exit codes: 0 ok / consistent / PROVEN, 1 conflict / REFUTED, "
                       "2 bad input, 3 UNKNOWN or internal error, 130 interrupted")
    p.add_argument("--version", action="version", version=f"smtshape {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    sp = sub.add_parser("infer", parents=[common], help="print every value's solved shape and the findings",
                        description="Infer and print the shape of every value (exit 0 even with conflicts).")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp = sub.add_parser("check", parents=[common], help="exit 1 when the model contradicts itself",
                        description="Check that the model's shape constraints are consistent: "
                                    "exit 0 consistent, 1 conflict (explained), 2 bad input, "
                                    "4 undecided (constraints listed).")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp = sub.add_parser("query", parents=[common], help="decide a relation over dims: PROVEN/REFUTED/UNKNOWN",
                        description="Decide a relation over input dim names and value dims written "
                                    "name[axis] (or \"odd/name\"[axis]): exit 0 PROVEN, 1 REFUTED, "
                                    "3 UNKNOWN, 2 bad input.")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp.add_argument("claim", metavar="RELATION", help="e.g. 'x[0] == y[1]' or 'a + b == 1024'")
    return p


_BIND_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$", re.S)
_INT_RE = re.compile(r"^[+-]?[0-9]{1,30}$")


def parse_binds(items) -> dict:
    out: dict = {}
    for item in items:
        m = _BIND_RE.match(item)
        if not m:
            raise BadInput(f"--bind {item!r}: expected NAME=INT with NAME an input dim name "
                           "(for example --bind batch=1)")
        name, text = m.group(1), m.group(2)
        if not _INT_RE.match(text):
            raise BadInput(f"--bind {item!r}: the value {text!r} is not an integer "
                           "(expected NAME=INT, for example --bind batch=1)")
        val = int(text)
        if val < 0:
            raise BadInput(f"--bind {item!r}: the value must be a non-negative integer")
        if name in out and out[name] != val:
            raise BadInput(f"--bind {name} is given twice with different values ({out[name]} and {val})")
        out[name] = val
    return out


def check_assumptions(texts) -> None:
    """Parse each --assume text once, so an error names the expression."""
    from .parse import ParseError, parse_relation
    for text in texts:
        try:
            parse_relation(text)
        except ParseError as e:
            raise BadInput(f"bad --assume expression {text!r}: {_parse_problem(e)}") from None


# ------------------------------------------------------------------ printing

def _clean(s) -> str:
    """Text from the model is untrusted: no control characters on the terminal."""
    s = str(s)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() or ch in "\n" else repr(ch)[1:-1] for ch in s)


def _one_line(s) -> str:
    return _clean(s).replace("\n", "\\n")


def _dtype(dt) -> str:
    if dt is None:
        return "?"
    try:
        return dt.name.lower()
    except Exception:
        return str(dt)


def _shape_text(shape) -> str:
    if shape is None:
        return "? (rank unknown)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _indent(text: str, pad: str = "  ") -> str:
    return "\n".join(pad + line for line in text.split("\n"))


def _node_index(result) -> dict:
    out = {}
    try:
        graph = result.model.graph
        for i, node in enumerate(graph):
            out.setdefault(node.name or f"{node.op_type}_{i}", node)
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
                s = _shape_text(result.shape(v.name))
            except KeyError:
                s = "?"
            items.append(f"'{_one_line(v.name)}' {s}")
        if items:
            parts.append(f"{label} " + ", ".join(items))
    return "; ".join(parts)


def explain_conflict(result, c, nodes_by_name=None) -> str:
    """Conflict.explain() plus the values at the nodes involved and a suggested fix."""
    if nodes_by_name is None:
        nodes_by_name = _node_index(result)
    lines = [_clean(c.explain())]
    for k, v in (getattr(c, "values", None) or {}).items():
        lines.append(f"  value {_one_line(k)} = {_one_line(v)}")
    for name in c.nodes:
        node = nodes_by_name.get(name)
        if node is not None:
            vl = _values_line(result, node)
            if vl:
                lines.append(f"  at {node.op_type} node '{_one_line(name)}': {vl}")
    lines.append("  fix: " + suggest_fix(c))
    return "\n".join(lines)


def suggest_fix(c) -> str:
    nodes, assumptions, binds, annotations = [], [], [], False
    for k in c.constraints:
        p = k.provenance
        if k.kind == "assumption" or p.op_type == "assumption":
            if p.rule == "bind":
                r = k.relation
                binds.append(f"--bind {r.lhs}={r.rhs}" if getattr(r, "op", "") == "==" else p.message)
            else:
                assumptions.append(p.message)
        elif k.kind == "annotation" or p.op_type == "annotation" or p.rule.startswith("annotation"):
            annotations = True
        elif p.node:
            tag = f"'{_one_line(p.node)}' ({p.op_type})"
            if tag not in nodes:
                nodes.append(tag)
    parts = []
    if nodes:
        parts.append(f"check the shapes feeding {'this node' if len(nodes) == 1 else 'these nodes'}: "
                     + ", ".join(nodes))
    if annotations or (not c.constraints and "annotation" in (c.relation + c.detail)):
        parts.append("correct the shape annotation (value_info) or run with --policy skip")
    if assumptions:
        parts.append("remove the assumption " + " / ".join(repr(_one_line(a)) for a in assumptions))
    if binds:
        parts.append("change the binding " + " / ".join(_one_line(b) for b in binds))
    if not parts:
        parts.append("check the shapes the model declares for its inputs and outputs")
    return ", or ".join(parts)


def _diags(result, *kinds):
    return [d for d in result.diagnostics if d.kind in kinds]


def render_table(result, model_path: str, binds: dict) -> str:
    lines = [f"model: {_one_line(model_path)}", ""]
    rows = []
    for name in result.value_names:
        rows.append((_one_line(name), _shape_text(result.shape(name)), _dtype(result.dtype(name))))
    hdr = ("value", "shape", "dtype")
    w0 = max([len(hdr[0])] + [len(r[0]) for r in rows])
    w1 = max([len(hdr[1])] + [len(r[1]) for r in rows])
    lines.append(f"{hdr[0].ljust(w0)}  {hdr[1].ljust(w1)}  {hdr[2]}")
    for r in rows:
        lines.append(f"{r[0].ljust(w0)}  {r[1].ljust(w1)}  {r[2]}")

    inputs = result.store.input_symbols()
    lines += ["", "input dims:" + ("" if inputs else " none")]
    for i in inputs:
        lines.append(f"  {_one_line(i.name)}: {_one_line(i.origin.message)}")

    def section(title, items):
        if not items:
            lines.append(f"{title}: none")
            return
        lines.append(f"{title}:")
        for it in items:
            lines.append(_indent(it))

    lines.append("")
    nodes = _node_index(result)
    section("conflicts", [explain_conflict(result, c, nodes) for c in result.conflicts])
    section("specializations", [_clean(f"the model forces {s}") for s in result.specializations])
    assumed = [f"bind: {_one_line(k)} = {v}" for k, v in binds.items()]
    assumed += [_one_line(d.message) for d in _diags(result, "assumption")]
    section("assumptions in force", assumed)
    section("annotation findings", [_fmt_diag(d) for d in _diags(result, "annotation")])
    section("ops with no rule", [_fmt_diag(d) for d in _diags(result, "no_rule")])
    other = _diags(result, "rule_error", "warning", "undecided")
    if other:
        section("warnings", [_fmt_diag(d) for d in other])
    return "\n".join(lines)


def _fmt_diag(d) -> str:
    where = f"{d.op_type} node '{d.node}': " if d.node else ""
    return _one_line(where + d.message)


# ------------------------------------------------------------------ writing files

def _same_file(a, b) -> bool:
    try:
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _write_outputs(result, args) -> None:
    """Write the output files (before anything is printed, so a failed write leaves no
    half report); ``--smtlib -`` is printed later by :func:`_print_smtlib`."""
    if args.output:
        try:
            result.save(args.output)
        except OSError as e:
            raise BadInput(f"cannot write the annotated model to {args.output!r}: "
                           f"{e.strerror or e}") from None
    if args.smtlib and args.smtlib != "-":
        try:
            write_atomic(args.smtlib, result.to_smtlib())
        except OSError as e:
            raise BadInput(f"cannot write SMT-LIB to {args.smtlib!r}: {e.strerror or e}") from None


def _print_smtlib(result, args, out) -> None:
    if args.smtlib == "-":
        text = result.to_smtlib()
        out.write(text if text.endswith("\n") else text + "\n")


# ------------------------------------------------------------------ commands

def _analyze(args):
    from .api import analyze

    model = args.model
    for flag, out in (("-o", args.output), ("--smtlib", args.smtlib)):
        if out and out != "-" and _same_file(model, out):
            raise BadInput(f"{flag} {out!r} is the input model; refusing to overwrite it "
                           "(choose another output path)")
    for flag, out in (("-o", args.output), ("--smtlib", args.smtlib)):
        if not out or out == "-":
            continue
        if os.path.isdir(out):
            raise BadInput(f"{flag} {out!r} is a directory; give a file path")
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            raise BadInput(f"cannot write {out!r} ({flag}): the directory {parent!r} does not exist")
    binds = parse_binds(args.bind)
    check_assumptions(args.assume)
    result = analyze(model, assume=list(args.assume), bind=binds, policy=args.policy,
                     constraints=list(args.constraints) or None,
                     inputs_positive=args.inputs_positive, no_broadcast_one=args.no_broadcast_one)
    return result, binds


def cmd_infer(args, out) -> int:
    result, binds = _analyze(args)
    _write_outputs(result, args)
    if args.json:
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        out.write(render_table(result, args.model, binds) + "\n")
    _print_smtlib(result, args, out)
    return EXIT_OK


def cmd_check(args, out) -> int:
    result, binds = _analyze(args)
    _write_outputs(result, args)
    conflicts = result.conflicts
    if args.json:
        data = result.to_json()
        data["check"] = {False: "conflict", None: "undecided"}.get(result.consistent, "consistent")
        out.write(json.dumps(data, indent=2) + "\n")
    else:
        nodes = _node_index(result)
        path = _one_line(args.model)
        if conflicts:
            out.write(f"{path}: {len(conflicts)} conflict{'s' if len(conflicts) != 1 else ''}\n")
            for c in conflicts:
                out.write(explain_conflict(result, c, nodes) + "\n")
        elif result.consistent is None:
            und = result.undecided
            out.write(f"{path}: undecided: no conflict found, but {len(und)} constraint"
                      f"{'s' if len(und) != 1 else ''} could not be decided (set aside, not used as facts):\n")
            for c in und:
                where = f"{c.provenance.op_type} node '{c.provenance.node}'" if c.provenance.node \
                    else c.provenance.op_type
                out.write(_one_line(f"  - {c.relation}  <- {where} [{c.provenance.rule}]: "
                                    f"{c.provenance.message}") + "\n")
        else:
            out.write(f"{path}: consistent ({len(result.value_names)} values, "
                      f"{sum(1 for c in result.constraints if c.status != 'trivial')} constraints)\n")
        unchecked = result.unchecked_nodes
        if unchecked:
            names = ", ".join(f"'{n}' ({op})" for n, op, _ in unchecked[:10])
            more = f" and {len(unchecked) - 10} more" if len(unchecked) > 10 else ""
            out.write(_one_line(f"warning: {len(unchecked)} node{'s' if len(unchecked) != 1 else ''} not checked "
                                f"(no rule for their op): {names}{more}") + "\n")
        for s in result.specializations:
            out.write(_one_line(f"warning: specialization: the model forces {s}") + "\n")
        for d in _diags(result, "annotation", "rule_error"):
            out.write(f"warning: {_fmt_diag(d)}\n")
    _print_smtlib(result, args, out)
    if conflicts:
        return EXIT_FAIL
    return EXIT_UNDECIDED if result.consistent is None else EXIT_OK


def cmd_query(args, out, err) -> int:
    from .store import Verdict

    result, binds = _analyze(args)
    rel, shown = parse_query(result, args.claim)
    verdict = result.store.decide(rel)
    _write_outputs(result, args)
    code = {Verdict.PROVEN: EXIT_OK, Verdict.REFUTED: EXIT_FAIL}.get(verdict, EXIT_UNKNOWN)
    if args.json:
        out.write(json.dumps({"claim": args.claim, "relation": str(rel), "verdict": verdict.name,
                              "dims": {k: d.to_json() for k, d in shown.items()},
                              "conflicts": [c.explain() for c in result.conflicts]}, indent=2) + "\n")
    else:
        out.write(f"{verdict.name}: {_one_line(args.claim)}\n")
        if shown:
            out.write("  where " + ", ".join(f"{_one_line(k)} = {d}" for k, d in shown.items()) + "\n")
    if result.conflicts:
        err.write(f"smtshape: warning: the model has {len(result.conflicts)} conflict(s) "
                  "(see 'smtshape check'); the verdict holds under the constraints that remain\n")
    _print_smtlib(result, args, out)
    return code


# ------------------------------------------------------------------ entry point

def main(argv=None) -> int:
    out, err = sys.stdout, sys.stderr
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help / --version
            return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_BAD_INPUT)
        if args.command == "infer":
            return cmd_infer(args, out)
        if args.command == "check":
            return cmd_check(args, out)
        if args.command == "query":
            return cmd_query(args, out, err)
        raise _UsageError(f"unknown command {args.command!r}")
    except _UsageError as e:
        err.write(f"smtshape: error: {_one_line(e)}\n")
        return EXIT_BAD_INPUT
    except SmtShapeError as e:
        err.write(f"smtshape: error: {_error_text(e)}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.write("smtshape: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. "smtshape infer m.onnx | head": stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except Exception:
            pass
        return EXIT_FAIL
    except OSError as e:
        where = f" {e.filename!r}" if getattr(e, "filename", None) else ""
        err.write(f"smtshape: error: cannot access{where}: {_one_line(e.strerror or e)}\n")
        return EXIT_BAD_INPUT
    except RecursionError:
        err.write("smtshape: error: the model is nested too deeply to analyze\n")
        return EXIT_BAD_INPUT
    except Exception as e:  # a bug: say so, without a traceback
        err.write(f"smtshape: internal error: {type(e).__name__}: {_one_line(e)} "
                  f"(this is a bug in smtshape; please report it with the command line and, "
                  f"if you can, the model: {REPORT_URL}; set SMTSHAPE_DEBUG=1 for a traceback)\n")
        if os.environ.get("SMTSHAPE_DEBUG"):
            import traceback
            traceback.print_exc(file=err)
        return EXIT_INTERNAL


def _error_text(e) -> str:
    from .parse import ParseError
    text = str(e)
    if isinstance(e, ParseError):
        text = text.split("\n    ", 1)[0]   # drop the caret snippet: one line only
    return _one_line(text)


def entry() -> None:  # console-script friendly wrapper
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
