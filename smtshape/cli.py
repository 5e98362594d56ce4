"""The command-line interface: ``smtshape infer | check | query``.

Exit codes
    0   infer: done (even with conflicts; infer is informational)
        check: consistent (no conflict)        query: PROVEN
    1   check: at least one conflict           query: REFUTED
    2   bad input (model, expression, option, file); one ``smtshape: error:`` line on stderr
    3   any command: internal error (a bug; please report it)
    4   check: not proven consistent: no conflict found, but some constraints
        could not be decided, or some nodes were not checked (an op with no rule,
        a case its rule cannot compute, an internal error); each is listed
    5   infer / check --static: some dim is not a static integer under the
        bindings (each such dim is listed with the symbols that block it and the
        inputs or nodes that introduce them); a conflict (check) takes precedence
    6   query: CONTINGENT (holds for some inputs, not others; witnesses printed)
    7   query: UNKNOWN (the solver gave up; the reason is printed)
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
EXIT_NOT_STATIC = 5
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
                   help="fix an input dim to a value, by dim name (batch=1) or by graph input "
                        "and axis (input_ids:0=1) (repeatable)")
    g.add_argument("--rules", action="append", default=[], metavar="MODULE",
                   help="import a Python module that registers rules for custom ops (with "
                        "smtshape.register or in a module-level smtshape.Registry) (repeatable); "
                        "rules from the 'smtshape.rules' entry-point group are always loaded")
    g.add_argument("--accept-unchecked", action="append", default=[], metavar="OP",
                   help="accept nodes of an op with no rule (OP or DOMAIN::OP) as checked: check may then "
                        "call the model consistent, and reports what it accepted (repeatable)")
    g.add_argument("--static", action="store_true",
                   help="verifier mode: fail (exit 5) unless every dim of every value is a static "
                        "integer under the bindings; lists what blocks each dim that is not")
    g.add_argument("--policy", choices=POLICIES, default="refine",
                   help="what to do with shape annotations already in the model (default: refine)")
    g.add_argument("--inputs-positive", action="store_true",
                   help="assume every input dim is at least 1 (reported)")
    g.add_argument("--no-broadcast-one", action="store_true",
                   help="assume symbolic dims are never 1 when broadcasting (reported)")
    o = common.add_argument_group("output options")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="write the model annotated with the inferred shapes to OUT (never the input file)")
    o.add_argument("--json", action="store_true",
                   help="print one JSON document instead of text (schema: smtshape/schema/result-v1.json)")
    o.add_argument("--smtlib", metavar="FILE",
                   help="write the constraint set as SMT-LIB2 to FILE ('-': stdout, then nothing "
                        "else is printed there; not with --json or query)")
    o.add_argument("--findings", action="store_true",
                   help="print the summary and the findings only, without the table of values")
    o.add_argument("--filter", action="append", default=[], metavar="PATTERN",
                   help="show only the values whose name matches the glob PATTERN (repeatable)")
    o.add_argument("--no-progress", action="store_true",
                   help="never show the progress bar (it is shown on stderr, when stderr is a "
                        "terminal, for work longer than about a second)")
    x = common.add_argument_group("external data (with -o)")
    x.add_argument("--save-as-external-data", action="store_true",
                   help="write the tensors of the annotated model as external data next to OUT")
    x.add_argument("--external-data-location", metavar="NAME",
                   help="file name of the external data, relative to OUT's folder (default: OUT's name + '.data')")
    x.add_argument("--external-data-size-threshold", type=int, default=1024, metavar="BYTES",
                   help="tensors smaller than this stay inside the model (default: 1024)")

    p = _Parser(prog="smtshape",
                description="Symbolic shape analysis of ONNX models with an SMT (Z3) backend.",
                epilog="exit codes: 0 ok / consistent / PROVEN, 1 conflict / REFUTED, "
                       "2 bad input, 3 internal error, 4 not proven consistent (check), "
                       "5 not static (--static), 6 CONTINGENT / 7 UNKNOWN (query), 130 interrupted")
    p.add_argument("--version", action="version", version=f"smtshape {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    sp = sub.add_parser("infer", parents=[common], help="print every value's solved shape and the findings",
                        description="Infer and print the shape of every value (exit 0 even with conflicts).")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp = sub.add_parser("check", parents=[common], help="exit 1 when the model contradicts itself",
                        description="Check that the model's shape constraints are consistent: "
                                    "exit 0 consistent (every node checked), 1 conflict (explained), "
                                    "2 bad input, 4 not proven consistent (undecided constraints or "
                                    "unchecked nodes, listed).")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp = sub.add_parser("query", parents=[common], help="decide a relation over dims: PROVEN/REFUTED/UNKNOWN",
                        description="Decide a relation over input dim names and value dims written "
                                    "name[axis] (or \"odd/name\"[axis]): exit 0 PROVEN, 1 REFUTED, "
                                    "3 UNKNOWN, 2 bad input.")
    sp.add_argument("model", metavar="MODEL", help="an .onnx file")
    sp.add_argument("claim", metavar="RELATION", help="e.g. 'x[0] == y[1]' or 'a + b == 1024'")
    return p


_BIND_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$", re.S)
_AXIS_BIND_RE = re.compile(r"^\s*(.+?):\s*([+-]?[0-9]{1,9})\s*=\s*(.*?)\s*$", re.S)
_INT_RE = re.compile(r"^[+-]?[0-9]{1,30}$")


def parse_binds(items) -> dict:
    """{dim name: int} and {(input name, axis): int} from ``--bind`` texts (the
    second kind keyed by tuples)."""
    out: dict = {}
    for item in items:
        m = _BIND_RE.match(item)
        key = None
        if m:
            key, text = m.group(1), m.group(2)
        else:
            m = _AXIS_BIND_RE.match(item)
            if m:
                key, text = (m.group(1), int(m.group(2))), m.group(3)
        if key is None:
            raise BadInput(f"--bind {item!r}: expected NAME=INT with NAME an input dim name, or "
                           "INPUT:AXIS=INT (for example --bind batch=1 or --bind input_ids:0=1)")
        if not _INT_RE.match(text):
            raise BadInput(f"--bind {item!r}: the value {text!r} is not an integer "
                           "(expected NAME=INT or INPUT:AXIS=INT, for example --bind batch=1)")
        val = int(text)
        if val < 0:
            raise BadInput(f"--bind {item!r}: the value must be a non-negative integer")
        shown = key if isinstance(key, str) else f"{key[0]}:{key[1]}"
        if key in out and out[key] != val:
            raise BadInput(f"--bind {shown} is given twice with different values ({out[key]} and {val})")
        out[key] = val
    return out


def resolve_axis_binds(model, binds: dict) -> dict:
    """Turn ``(input name, axis)`` keys into the input dim names smtshape gives
    those axes (the dim_param, or a generated name for an anonymous dim)."""
    axis_keys = [k for k in binds if isinstance(k, tuple)]
    if not axis_keys:
        return dict(binds)
    from .engine import Engine, ensure_ops_loaded, load_model
    from .store import Domain, Store
    ensure_ops_loaded()
    m = load_model(model)
    scratch = Engine(m, Store(Domain()))
    scratch.declare_inputs(m.graph)
    ranks = {}
    for v in m.graph.inputs:
        ranks[v.name] = None if v.shape is None else list(v.shape)
    out = {k: v for k, v in binds.items() if isinstance(k, str)}
    for key in axis_keys:
        name, axis = key
        val = binds[key]
        if name not in ranks or name in m.graph.initializers:
            raise BadInput(f"--bind {name}:{axis}={val}: the model has no graph input named '{name}' "
                           f"(inputs: {', '.join(repr(n) for n in ranks if n not in m.graph.initializers) or 'none'})")
        dims = ranks[name]
        if dims is None:
            raise BadInput(f"--bind {name}:{axis}={val}: graph input '{name}' has no shape (rank unknown)")
        if not -len(dims) <= axis < len(dims):
            raise BadInput(f"--bind {name}:{axis}={val}: graph input '{name}' has rank {len(dims)}; "
                           f"axis {axis} is out of range")
        axis %= len(dims)
        if isinstance(dims[axis], int):
            if dims[axis] != val:
                raise BadInput(f"--bind {name}:{axis}={val}: axis {axis} of graph input '{name}' is "
                               f"declared static with size {dims[axis]}")
            continue
        sym = scratch.input_dims[(name, axis)].name
        if sym in out and out[sym] != val:
            raise BadInput(f"--bind {name}:{axis}={val}: that axis is the input dim '{sym}', "
                           f"already bound to {out[sym]}")
        out[sym] = val
    return out


def check_assumptions(texts) -> None:
    """Parse each --assume text once, so an error names the expression."""
    from .parse import ParseError, parse_relation
    for text in texts:
        try:
            parse_relation(text)
        except ParseError as e:
            raise BadInput(f"bad --assume expression {text!r}: {_parse_problem(e)}") from None


# ------------------------------------------------------------------ printing (see report.py)

from .report import clean as _clean, diags as _diags, explain_conflict, fmt_diag as _fmt_diag  # noqa: E402,F401
from .report import node_index as _node_index, one_line as _one_line, suggest_fix  # noqa: E402,F401


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
            result.save(args.output, save_as_external_data=args.save_as_external_data,
                        external_data_location=args.external_data_location,
                        size_threshold=args.external_data_size_threshold)
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


# ------------------------------------------------------------------ rules for custom ops

RULES_GROUP = "smtshape.rules"


def _import_rules_module(spec: str):
    import importlib
    import importlib.util
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        if not os.path.isfile(spec):
            raise BadInput(f"--rules {spec!r}: no such file")
        name = "smtshape_user_rules_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(spec))[0])
        mspec = importlib.util.spec_from_file_location(name, spec)
        mod = importlib.util.module_from_spec(mspec)
        sys.modules[name] = mod
        mspec.loader.exec_module(mod)
        return mod
    return importlib.import_module(spec)


def _rules_entry_points() -> list:
    """The entry points of the ``smtshape.rules`` group (importlib.metadata's answer, asked
    only when ``_may_declare_rules``: importing and running it costs about a third of a
    cold ``smtshape check`` of a small model)."""
    if not _may_declare_rules():
        return []
    from importlib.metadata import entry_points
    return list(entry_points(group=RULES_GROUP))


def _may_declare_rules() -> bool:
    """Could an installed distribution declare a ``smtshape.rules`` entry point?  Only one
    whose ``entry_points.txt`` names the group can: the metadata folders on ``sys.path``
    are read for the name.  True as well wherever importlib.metadata would look where this
    does not (a zip on ``sys.path``, a finder of distributions other than the path's)."""
    import importlib.machinery
    if any(f is not importlib.machinery.PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return True
    needle = RULES_GROUP.encode()
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return True                               # (a zip: importlib.metadata reads it)
        except OSError:
            continue                                  # (no such folder: nothing there)
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), "rb") as f:
                        if needle in f.read():
                            return True
                except OSError:
                    pass
    return False


def load_rules(modules=(), entry_points: bool = True):
    """The registry for a run: ``smtshape.register``'s default layer, under the
    rules of every entry point of the ``smtshape.rules`` group and every
    ``--rules`` module (later ones take precedence).  An entry point or module
    may register with ``smtshape.register`` when imported, hold module-level
    ``smtshape.Registry`` objects, or be (or hold) a callable returning one."""
    from types import ModuleType
    from . import registry as R
    objs = []
    if entry_points:
        for ep in _rules_entry_points():
            try:
                objs.append(ep.load())
            except Exception as e:
                raise BadInput(f"cannot load rules from the entry point {ep.name!r} ({ep.value}) of "
                               f"{RULES_GROUP!r}: {type(e).__name__}: {_one_line(e)}") from None
    for spec in modules:
        try:
            objs.append(_import_rules_module(spec))
        except BadInput:
            raise
        except Exception as e:
            raise BadInput(f"--rules {spec!r}: cannot import it: {type(e).__name__}: {_one_line(e)}") from None
    layers = []
    for obj in objs:
        if isinstance(obj, ModuleType):
            layers += [v for v in vars(obj).values() if isinstance(v, R.Registry)
                       and v is not R.DEFAULT and v is not R.BUILTIN]
        elif isinstance(obj, R.Registry):
            layers.append(obj)
        elif callable(obj):
            got = obj()
            if isinstance(got, R.Registry):
                layers.append(got)
    base = R.DEFAULT
    for layer in layers:
        top = layer.copy()
        top.parent = base
        base = top
    return base


class _CountingRules:
    """A registry in front of another that counts rule lookups (one per node run):
    the progress bar's measure of the walk."""

    def __init__(self, inner, tick):
        self._inner, self._tick = inner, tick

    def lookup(self, domain, op_type, opset):
        self._tick()
        return self._inner.lookup(domain, op_type, opset)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _count_nodes(graph) -> int:
    """Nodes of a GraphProto and its subgraphs (the progress bar's total)."""
    import onnx
    n = 0
    for node in graph.node:
        n += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                n += _count_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                n += sum(_count_nodes(g) for g in attr.graphs)
    return n


# ------------------------------------------------------------------ commands

def _analyze(args, progress=None):
    from .api import analyze

    model = args.model
    if args.smtlib == "-" and (args.json or args.command == "query"):
        raise BadInput("--smtlib - would mix SMT-LIB with the " + ("JSON" if args.json else "verdict")
                       + " on stdout; give --smtlib a file name")
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
    if (args.save_as_external_data or args.external_data_location) and not args.output:
        raise BadInput("--save-as-external-data / --external-data-location need -o OUT")
    if args.external_data_location and (os.path.isabs(args.external_data_location)
                                        or ".." in args.external_data_location.replace("\\", "/").split("/")):
        raise BadInput("--external-data-location must be a file name relative to OUT's folder")
    if args.external_data_size_threshold < 0:
        raise BadInput("--external-data-size-threshold must be a non-negative number of bytes")
    binds = resolve_axis_binds(model, parse_binds(args.bind))
    check_assumptions(args.assume)
    rules = load_rules(args.rules)
    if progress is not None and progress.enabled:
        progress.phase("loading the model", 0)
        try:
            import onnx
            total = _count_nodes(onnx.load(model, load_external_data=False).graph)
        except Exception:
            total = 0
        rules = _CountingRules(rules, progress.phase("walking the graph", total))
    result = analyze(model, assume=list(args.assume), bind=binds, policy=args.policy,
                     constraints=list(args.constraints) or None,
                     inputs_positive=args.inputs_positive, no_broadcast_one=args.no_broadcast_one,
                     rules=rules, accept_unchecked=args.accept_unchecked)
    if progress is not None:
        progress.done()
    return result, binds


def _progress(args, err=None):
    from .report import Progress
    err = err or sys.stderr
    enabled = not args.no_progress and not os.environ.get("SMTSHAPE_NO_PROGRESS")
    try:
        enabled = enabled and err.isatty()
    except Exception:
        enabled = False
    return Progress(enabled, stream=err)


def cmd_infer(args, out) -> int:
    from .report import Style, render, static_lines, static_report, use_color
    with _progress(args) as progress:
        result, binds = _analyze(args, progress)
        _write_outputs(result, args)
        static = static_report(result) if args.static else None
        if args.json:
            data = result.to_json()
            if static is not None:
                data["static"] = static
            text = json.dumps(data, indent=2) + "\n"
        elif args.smtlib == "-":
            text = ""
        else:
            color = use_color(out)
            text = render(result, args.model, binds, findings_only=args.findings,
                          patterns=args.filter, color=color, progress=progress)
            if static is not None:
                text += "\n\n" + "\n".join(static_lines(static, Style(color)))
            text += "\n"
    out.write(text)
    _print_smtlib(result, args, out)
    if static is not None and not static["static"]:
        return EXIT_NOT_STATIC
    return EXIT_OK


def cmd_check(args, out) -> int:
    from .report import Style, static_lines, static_report, use_color
    with _progress(args) as progress:
        result, binds = _analyze(args, progress)
    _write_outputs(result, args)
    conflicts = result.conflicts
    static = static_report(result) if args.static else None
    if args.json:
        data = result.to_json()
        data["check"] = {False: "conflict", None: "not proven consistent"}.get(result.consistent, "consistent")
        if static is not None:
            data["static"] = static
        out.write(json.dumps(data, indent=2) + "\n")
    elif args.smtlib != "-":
        nodes = _node_index(result)
        path = _one_line(args.model)
        if conflicts:
            out.write(f"{path}: {len(conflicts)} conflict{'s' if len(conflicts) != 1 else ''}\n")
            for c in conflicts:
                out.write(explain_conflict(result, c, nodes) + "\n")
        elif result.consistent is None:
            und = result.undecided
            unchecked = [u for u in result.unchecked_nodes if not u.accepted]
            out.write(f"{path}: not proven consistent: no conflict found, but "
                      + " and ".join(([f"{len(und)} constraint{'s' if len(und) != 1 else ''} could not be "
                                      "decided (set aside, not used as facts)"] if und else [])
                                     + ([f"{len(unchecked)} node{'s' if len(unchecked) != 1 else ''} "
                                        "could not be checked"] if unchecked else [])) + ":\n")
            for c in und:
                where = f"{c.provenance.op_type} node '{c.provenance.node}'" if c.provenance.node \
                    else c.provenance.op_type
                out.write(_one_line(f"  - {c.relation}  <- {where} [{c.provenance.rule}]: "
                                    f"{c.provenance.message}") + "\n")
            for u in unchecked[:20]:
                out.write(_one_line(f"  - not checked: {u.op_type} node '{u.node}': {u.message or u.reason.value}")
                          + "\n")
            if len(unchecked) > 20:
                out.write(f"  ... and {len(unchecked) - 20} more not checked (--json lists them all)\n")
        else:
            out.write(f"{path}: consistent ({len(result.value_names)} values, "
                      f"{sum(1 for c in result.constraints if c.status != 'trivial')} constraints)\n")
        accepted = [u for u in result.unchecked_nodes if u.accepted]
        if accepted:
            names = ", ".join(f"'{u.node}' ({u.op_type})" for u in accepted[:10])
            more = f" and {len(accepted) - 10} more" if len(accepted) > 10 else ""
            out.write(_one_line(f"note: {len(accepted)} node{'s' if len(accepted) != 1 else ''} accepted unchecked "
                                f"(--accept-unchecked; no rule for their op): {names}{more}") + "\n")
        for s in result.specializations:
            out.write(_one_line(f"warning: specialization: the model forces {s}") + "\n")
        for d in _diags(result, "annotation", "rule_error", "budget"):
            if d.severity != "info":       # (not the optional questions left unasked: dims stay exact)
                out.write(f"warning: {_fmt_diag(d)}\n")
        if static is not None:
            out.write("\n".join(static_lines(static, Style(use_color(out)))) + "\n")
    _print_smtlib(result, args, out)
    if conflicts:
        return EXIT_FAIL
    if static is not None and not static["static"]:
        return EXIT_NOT_STATIC
    return EXIT_UNDECIDED if result.consistent is None else EXIT_OK


def cmd_query(args, out, err) -> int:
    """Exit codes (smtshape.query.QUERY_EXIT_CODES): 0 PROVEN, 1 REFUTED, 6 CONTINGENT (a
    witness binding for each side is printed), 7 UNKNOWN (the solver gave up; the reason is
    printed); 2 bad input, 3 internal error, as for every command."""
    from .query import QUERY_EXIT_CODES

    result, binds = _analyze(args)
    rel, shown = parse_query(result, args.claim)
    ans = result.query(rel)
    _write_outputs(result, args)
    code = QUERY_EXIT_CODES[ans.verdict.name]
    if args.json:
        out.write(json.dumps({"claim": args.claim, "relation": str(rel), "verdict": ans.verdict.name,
                              "holds": ans.holds, "fails": ans.fails, "reason": ans.reason or None,
                              "exit_code": code,
                              "dims": {k: d.to_json() for k, d in shown.items()},
                              "conflicts": [c.explain() for c in result.conflicts]}, indent=2) + "\n")
    else:
        out.write(f"{ans.verdict.name}: {_one_line(args.claim)}\n")
        if shown:
            out.write("  where " + ", ".join(f"{_one_line(k)} = {d}" for k, d in shown.items()) + "\n")
        if ans.verdict.name == "CONTINGENT":
            out.write(_one_line(f"  holds at {_fmt_binding(ans.holds)}") + "\n")
            out.write(_one_line(f"  fails at {_fmt_binding(ans.fails)}") + "\n")
        if ans.reason:
            out.write(_one_line(f"  {ans.reason}") + "\n")
    if result.conflicts:
        err.write(f"smtshape: warning: the model has {len(result.conflicts)} conflict(s) "
                  "(see 'smtshape check'); the verdict holds under the constraints that remain\n")
    _print_smtlib(result, args, out)
    return code


def _fmt_binding(b) -> str:
    return ", ".join(f"{k}={v}" for k, v in (b or {}).items()) or "(any input)"


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


def entry() -> None:
    """The ``smtshape`` command: ``main``, then exit at once once the output is flushed.

    Interpreter teardown (freeing every object of the analysis, module by module)
    costs about 0.1 s of a cold run and does nothing a finished command needs: all
    output goes through stdout / stderr (flushed here) or ``write_atomic`` (closed
    and renamed before ``main`` returns)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = code or EXIT_FAIL
    except Exception:
        sys.exit(code)      # could not flush: let the interpreter report it
    os._exit(code if isinstance(code, int) else EXIT_FAIL)


if __name__ == "__main__":
    entry()
