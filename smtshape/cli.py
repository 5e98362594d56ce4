"""The command-line interface: ``smtshape infer | check | query | simplify | specialize``.

Exit codes: ``smtshape.exitcodes.EXIT_CODES``, the one table README, ``--help`` and
docs/RECIPES.md show (re-exported here as ``smtshape.cli.EXIT_CODES``).

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
from .exitcodes import (EXIT_BAD_INPUT, EXIT_CODES, EXIT_CONTINGENT, EXIT_FAIL, EXIT_INTERNAL,  # noqa: F401
                        EXIT_INTERRUPTED, EXIT_NOT_STATIC, EXIT_OK, EXIT_UNDECIDED, EXIT_UNKNOWN,
                        QUERY_EXIT_CODES, exit_codes_markdown, exit_codes_text)
from .fileio import write_atomic
from .labels import node_phrase
from .query import _parse_problem, parse_query

POLICIES = ("skip", "refine", "strict", "override")
REPORT_URL = "https://github.com/smtshape/smtshape/issues"


# ------------------------------------------------------------------ argument parsing

class _UsageError(Exception):
    """argparse found a malformed command line (exit 2, one line)."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)      # --find is not --findings, --input not --inputs-positive
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):  # never print usage + exit(2) on our behalf
        raise _UsageError(f"{_did_you_mean(self, message)} (see '{self.prog} --help')")


def _did_you_mean(parser, message: str) -> str:
    """argparse's message, with the closest known option for each unknown one."""
    import difflib
    m = re.match(r"unrecognized arguments: (.*)$", message)
    if not m:
        return message
    known = [o for a in parser._actions for o in a.option_strings]
    for sub in parser._actions:
        if isinstance(sub, argparse._SubParsersAction):
            known += [o for p in sub.choices.values() for a in p._actions for o in a.option_strings]
    hints = []
    known = sorted(set(known))
    for word in m.group(1).split():
        if word.startswith("--"):
            flag = word.split("=")[0]
            close = [k for k in known if k.startswith(flag)] or \
                difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            if close:
                hints.append(f"{word}: did you mean {' or '.join(close[:3])}? (options are never abbreviated)")
    return message + (f" ({'; '.join(hints)})" if hints else "")


# onnxruntime's ``symbolic_shape_infer`` flags that mean something else here: refused, with why
ORT_FLAGS_REFUSED = {
    "--auto_merge": "smtshape never merges conflicting dims: a conflict is reported and explained "
                    "('smtshape check'); without conflicts nothing needs merging",
    "--guess_output_rank": "smtshape never guesses ranks: an op with no rule leaves its outputs of unknown "
                           "rank and is listed (write a rule: --rules MODULE)",
    "--int_max": "smtshape has no size cap to set: sizes are exact integers (clamped Slice ends are "
                 "handled exactly)",
    "--verbose": "the report lists every finding; use --json for all of it",
}


def _refuse_ort_flags(argv) -> None:
    for word in argv:
        flag = word.split("=", 1)[0]
        if flag in ORT_FLAGS_REFUSED:
            raise _UsageError(f"{flag} (onnxruntime's symbolic_shape_infer) is not an smtshape option: "
                              f"{ORT_FLAGS_REFUSED[flag]}")


def _add_analysis_options(g) -> None:
    g.add_argument("--assume", action="append", default=[], metavar="EXPR",
                   help="a relation over input dim names, e.g. 'seq <= 4096' (repeatable)")
    g.add_argument("--constraints", action="append", default=[], metavar="FILE",
                   help="a constraint file: one relation per line, '#' comments (repeatable); a line naming "
                        "a dim the model does not have is skipped, with a warning")
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
    g.add_argument("--policy", choices=POLICIES, default="refine",
                   help="what to do with shape annotations already in the model (default: refine)")
    g.add_argument("--inputs-positive", action="store_true",
                   help="assume every input dim is at least 1 (reported)")
    g.add_argument("--no-broadcast-one", action="store_true",
                   help="assume symbolic dims are never 1 when broadcasting (reported)")


def _add_external_data_options(x) -> None:
    x.add_argument("--save-as-external-data", "--save_as_external_data", action="store_true",
                   help="write the tensors of the written model as external data next to OUT")
    x.add_argument("--all-tensors-to-one-file", "--all_tensors_to_one_file", action="store_true",
                   help="accepted for onnxruntime's tool: external data always goes to one file")
    x.add_argument("--external-data-location", "--external_data_location", metavar="NAME",
                   help="file name of the external data, relative to OUT's folder (default: OUT's name + '.data')")
    x.add_argument("--external-data-size-threshold", "--external_data_size_threshold", type=int, default=1024,
                   metavar="BYTES", help="tensors smaller than this stay inside the model (default: 1024)")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    g = common.add_argument_group("analysis options")
    _add_analysis_options(g)
    g.add_argument("--static", action="store_true",
                   help="verifier mode: fail (exit 5) unless every dim of every value is a static "
                        "integer under the bindings; lists what blocks each dim that is not")
    o = common.add_argument_group("output options")
    o.add_argument("--input", dest="model_opt", metavar="MODEL",
                   help="the model (onnxruntime's spelling; the same as the MODEL argument)")
    o.add_argument("-o", "--output", metavar="OUT",
                   help="write the model with the inferred shapes to OUT (never the input file): graph "
                        "inputs bound by --bind get their values, dims are written in canonical form, "
                        "declared dims the analysis could not verify are kept (listed)")
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
    _add_external_data_options(common.add_argument_group("external data (with -o)"))

    writer = _Parser(add_help=False)      # simplify / specialize
    g = writer.add_argument_group("analysis options")
    _add_analysis_options(g)
    o = writer.add_argument_group("output options")
    o.add_argument("--input", dest="model_opt", metavar="MODEL",
                   help="the model (onnxruntime's spelling; the same as the MODEL argument)")
    o.add_argument("-o", "--output", metavar="OUT", required=True, help="where to write the model (required)")
    o.add_argument("--report", metavar="FILE",
                   help="write every rewrite, with the constraints its proof used, as JSON to FILE")
    o.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    o.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    _add_external_data_options(writer.add_argument_group("external data"))

    p = _Parser(prog="smtshape",
                description="Symbolic shape analysis of ONNX models with an SMT (Z3) backend.",
                epilog=exit_codes_text())
    p.add_argument("--version", action="version", version=f"smtshape {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    model_help = "an .onnx file (or --input MODEL)"
    sp = sub.add_parser("infer", parents=[common], help="print every value's solved shape and the findings",
                        description="Infer and print the shape of every value.", epilog=exit_codes_text("infer"))
    sp.add_argument("model", metavar="MODEL", nargs="?", help=model_help)
    sp = sub.add_parser("check", parents=[common], help="exit 1 when the model contradicts itself",
                        description="Check that the model's shape constraints are consistent; warnings "
                                    "go to stderr.", epilog=exit_codes_text("check"))
    sp.add_argument("model", metavar="MODEL", nargs="?", help=model_help)
    sp = sub.add_parser("query", parents=[common],
                        help="decide a relation over dims: PROVEN / REFUTED / CONTINGENT / UNKNOWN",
                        description="Decide a relation over input dim names and value dims written "
                                    "name[axis] (or \"odd/name\"[axis]).", epilog=exit_codes_text("query"))
    sp.add_argument("model", metavar="MODEL", nargs="?", help=model_help)
    sp.add_argument("claim", metavar="RELATION", nargs="?", help="e.g. 'x[0] == y[1]' or 'a + b == 1024'")
    sp = sub.add_parser("simplify", parents=[writer],
                        help="write the model with proven-constant shape values folded and proven "
                             "identities removed",
                        description="Fold every value the analysis proves constant into an initializer, "
                                    "bypass every Reshape / Expand / Squeeze / Unsqueeze / Flatten / Identity "
                                    "/ Cast / Slice proven to be an identity, drop nodes left without "
                                    "consumers, and write the solved shapes; graph outputs keep their names "
                                    "and values.  With --bind / --assume the written model is valid only "
                                    "where they hold (the report says so).", epilog=exit_codes_text("simplify"))
    sp.add_argument("model", metavar="MODEL", nargs="?", help=model_help)
    sp = sub.add_parser("specialize", parents=[writer],
                        help="write a static model: every input dim bound, every shape a number",
                        description="Bind every input dim (--bind NAME=INT or INPUT:AXIS=INT) and write a "
                                    "model whose graph inputs, outputs and value_info are static, with the "
                                    "shape plumbing folded (--no-simplify: shapes only).  A partial binding "
                                    "writes the bound dims into the graph inputs, keeps the others symbolic "
                                    "and lists them (exit 5).",
                        epilog=exit_codes_text("specialize"))
    sp.add_argument("model", metavar="MODEL", nargs="?", help=model_help)
    sp.add_argument("--no-simplify", action="store_true",
                    help="write the static shapes only: no folding, no node removed")
    return p


def _model_argument(args) -> None:
    """MODEL or --input MODEL (onnxruntime's spelling), exactly one of them."""
    opt = getattr(args, "model_opt", None)
    if args.command == "query" and opt and args.claim is None:
        args.model, args.claim = None, args.model         # smtshape query --input M RELATION
    if args.command == "query" and args.claim is None and (args.model or opt):
        raise _UsageError("the following arguments are required: RELATION (see 'smtshape query --help')")
    if args.model and opt and args.model != opt:
        raise _UsageError(f"two models given: {args.model!r} and --input {opt!r}")
    args.model = args.model or opt
    if not args.model:
        raise _UsageError(f"the following arguments are required: MODEL (see 'smtshape {args.command} --help')")


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

from .report import diags as _diags, explain_conflict, fmt_diag as _fmt_diag  # noqa: E402,F401
from .text import clean as _clean  # noqa: E402,F401
from .report import node_index as _node_index  # noqa: E402
from .text import one_line as _one_line  # noqa: E402


# ------------------------------------------------------------------ writing files

def _same_file(a, b) -> bool:
    try:
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _save(result, args, *, simplify=False):
    """Write the model to ``-o`` (``Result.save``); the Report.  A write error is bad input."""
    try:
        return result.save(args.output, save_as_external_data=args.save_as_external_data,
                           external_data_location=args.external_data_location,
                           size_threshold=args.external_data_size_threshold, simplify=simplify)
    except OSError as e:
        raise BadInput(f"cannot write the model to {args.output!r}: {e.strerror or e}") from None


def _write_outputs(result, args):
    """Write the output files (before anything is printed, so a failed write leaves no
    half report); ``--smtlib -`` is printed later by :func:`_print_smtlib`.  The -o Report,
    or None (:func:`_confirm` says what was written)."""
    report = None
    if args.output:
        report = _save(result, args)
    if args.smtlib and args.smtlib != "-":
        try:
            write_atomic(args.smtlib, result.to_smtlib())
        except OSError as e:
            raise BadInput(f"cannot write SMT-LIB to {args.smtlib!r}: {e.strerror or e}") from None
    return report


def written_text(result, report) -> str:
    """What ``-o`` wrote, in one line: values annotated, bound inputs, declared dims kept."""
    from .report import plural
    binds = [p[len("binding "):] for p in report.premises if p.startswith("binding ")]
    parts = [plural(len(result.value_names), "value") + " annotated"]
    if binds:
        parts.append("graph inputs written with the bound values (" + "; ".join(binds) + ")")
    if report.kept_declared:
        parts.append(plural(len(report.kept_declared), "value") + " keep declared dims the analysis could not "
                     "verify (" + ", ".join(f"'{r.value}'" for r in report.kept_declared[:3])
                     + (", ..." if len(report.kept_declared) > 3 else "") + ")")
    return "; ".join(parts)


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


# ------------------------------------------------------------------ commands

def _check_paths(args) -> None:
    model = args.model
    smtlib = getattr(args, "smtlib", None)
    if smtlib == "-" and (args.json or args.command == "query"):
        raise BadInput("--smtlib - would mix SMT-LIB with the " + ("JSON" if args.json else "verdict")
                       + " on stdout; give --smtlib a file name")
    for flag, out in (("-o", args.output), ("--smtlib", smtlib), ("--report", getattr(args, "report", None))):
        if not out or out == "-":
            continue
        if _same_file(model, out):
            raise BadInput(f"{flag} {out!r} is the input model; refusing to overwrite it "
                           "(choose another output path)")
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


def _analyze(args, progress=None):
    from .api import analyze

    _check_paths(args)
    binds = resolve_axis_binds(args.model, parse_binds(args.bind))
    check_assumptions(args.assume)
    rules = load_rules(args.rules)
    result = analyze(args.model, assume=list(args.assume), bind=binds, policy=args.policy,
                     constraints=list(args.constraints) or None,
                     inputs_positive=args.inputs_positive, no_broadcast_one=args.no_broadcast_one,
                     rules=rules, accept_unchecked=args.accept_unchecked, _progress=progress)
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


def _warn_skipped(result, err) -> None:
    """Constraint-file lines skipped (they name dims this model does not have): on stderr."""
    for text, names in getattr(result, "skipped_assumptions", ()):
        err.write(_one_line(f"smtshape: warning: skipped the constraint {text}: it names "
                            f"{', '.join(names)}, not an input dim of this model (input dims: "
                            f"{', '.join(sorted(i.name for i in result.store.input_symbols())) or 'none'})") + "\n")


def cmd_infer(args, out, err) -> int:
    from .report import Style, render, static_lines, static_report, use_color
    with _progress(args, err) as progress:
        result, binds = _analyze(args, progress)
        written = _write_outputs(result, args)
        static = static_report(result) if args.static else None
        if args.json:
            data = result.to_json()
            if static is not None:
                data["static"] = static
            if written is not None:
                data["written"] = dict(written.to_json(), path=args.output)
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
    _confirm(result, args, written, err)
    _warn_skipped(result, err)
    if static is not None and not static["static"]:
        return EXIT_NOT_STATIC
    return EXIT_OK


def _confirm(result, args, written, err) -> None:
    if written is not None:
        err.write(_one_line(f"smtshape: wrote {args.output}: {written_text(result, written)}") + "\n")


def cmd_check(args, out, err) -> int:
    """The verdict on stdout (conflicts explained, or what is not proven); warnings on stderr."""
    from .report import Style, plural, static_lines, static_report, use_color
    with _progress(args, err) as progress:
        result, binds = _analyze(args, progress)
        conflicts = result.conflicts
    written = _write_outputs(result, args)
    static = static_report(result) if args.static else None
    if args.json:
        data = result.to_json()
        data["check"] = {False: "conflict", None: "not proven consistent"}.get(result.consistent, "consistent")
        if static is not None:
            data["static"] = static
        if written is not None:
            data["written"] = dict(written.to_json(), path=args.output)
        out.write(json.dumps(data, indent=2) + "\n")
    elif args.smtlib != "-":
        nodes = _node_index(result)
        path = _one_line(args.model)
        if conflicts:
            out.write(f"{path}: {plural(len(conflicts), 'conflict')}\n")
            context = conflict_context(result, args) if (binds or args.assume or args.constraints) else []
            for c in conflicts:
                out.write(explain_conflict(result, c, nodes) + "\n")
            for line in context:
                out.write(line + "\n")
        elif result.consistent is None:
            und = result.undecided
            unchecked = [u for u in result.unchecked_nodes if not u.accepted]
            out.write(f"{path}: not proven consistent: no conflict found, but "
                      + " and ".join(([f"{plural(len(und), 'constraint')} could not be "
                                      "decided (set aside, not used as facts)"] if und else [])
                                     + ([f"{plural(len(unchecked), 'node')} could not be checked"]
                                        if unchecked else [])) + ":\n")
            for c in und:
                p = c.provenance
                where = node_phrase(p.op_type, p.node) if p.node else p.op_type
                out.write(_one_line(f"  - {c.relation}  <- {where} [{p.rule}]: {p.message}") + "\n")
            for u in unchecked[:20]:
                out.write(_one_line(f"  - not checked: {node_phrase(u.op_type, u.node)}: {u.message or u.reason.value}")
                          + "\n")
            if len(unchecked) > 20:
                out.write(f"  ... and {len(unchecked) - 20} more not checked (--json lists them all)\n")
        else:
            n = sum(1 for c in result.constraints if c.status != "trivial")
            out.write(f"{path}: consistent ({plural(len(result.value_names), 'value')}, "
                      f"{plural(n, 'constraint')})\n")
        accepted = [u for u in result.unchecked_nodes if u.accepted]
        if accepted:
            names = ", ".join(f"'{u.node}' ({u.op_type})" for u in accepted[:10])
            more = f" and {len(accepted) - 10} more" if len(accepted) > 10 else ""
            err.write(_one_line(f"note: {plural(len(accepted), 'node')} accepted unchecked "
                                f"(--accept-unchecked; no rule for their op): {names}{more}") + "\n")
        exprs = list(result.engine.expression_dims.items())
        for (value, axis), label in exprs[:10]:
            err.write(_one_line(f"note: {value}[{axis}] is {label} (a dim_param read as an expression "
                                "over input dims, checked like any other dim)") + "\n")
        if len(exprs) > 10:
            err.write(f"note: ... and {len(exprs) - 10} more dims read as expressions (--json lists them all)\n")
        for s in result.specializations:
            err.write(_one_line(f"warning: specialization: the model forces {s}") + "\n")
        for d in _diags(result, "annotation", "rule_error", "budget"):
            if d.severity != "info":       # (not the optional questions left unasked: dims stay exact)
                err.write(f"warning: {_fmt_diag(d)}\n")
        if static is not None:
            out.write("\n".join(static_lines(static, Style(use_color(out)))) + "\n")
    _print_smtlib(result, args, out)
    _confirm(result, args, written, err)
    _warn_skipped(result, err)
    if conflicts:
        return EXIT_FAIL
    if static is not None and not static["static"]:
        return EXIT_NOT_STATIC
    return EXIT_UNDECIDED if result.consistent is None else EXIT_OK


def conflict_context(result, args) -> list:
    """For conflicts found under bindings or assumptions: the bindings and assumptions in
    force, and what the model allows without them (its limits, from an analysis without
    them), naming each limit a binding breaks."""
    from .api import analyze
    from .report import premises_text
    lines = ["these conflicts hold under the bindings and assumptions given: "
             + premises_text(result).replace("only where these hold: ", "")]
    try:
        free = analyze(args.model, policy=args.policy, inputs_positive=args.inputs_positive,
                       no_broadcast_one=args.no_broadcast_one, rules=load_rules(args.rules),
                       accept_unchecked=args.accept_unchecked)
    except SmtShapeError:
        return lines
    if free.conflicts:
        lines.append("without them the model has conflicts too ('smtshape check' without --bind / --assume)")
        return lines
    binds = resolve_axis_binds(args.model, parse_binds(args.bind))
    broken = [s for s in free.specializations if _breaks(free, s, binds) is True]
    limits = [s for s in free.specializations if s.symbol in binds or any(s.symbol in _names_in(t)
                                                                           for t in args.assume)]
    if limits:
        lines.append("without them the model runs, and only when: "
                     + "; ".join(_one_line(str(s)) for s in limits[:6])
                     + (f"; and {len(limits) - 6} more" if len(limits) > 6 else ""))
    else:
        lines.append("without them the model is consistent: the bindings or assumptions cause the conflict")
    for s in broken:
        lines.append(_one_line(f"fix: the binding {', '.join(f'{k} = {v}' for k, v in binds.items() if k in s.relation)} "
                               f"breaks the model's limit {s.relation}: bind within it"))
    return lines


def _breaks(free, spec, binds: dict):
    """Does a binding break a limit the model forces? True / False / None (not all bound)."""
    from .parse import ParseError, parse_relation
    from .store.basics import truth_at
    try:
        rel = parse_relation(spec.relation)
    except ParseError:
        return None
    env = {k: v for k, v in binds.items()}
    if not {x.name for x in rel.symbols()} <= set(env):
        return None
    v = truth_at(rel, env, free.store.definitions)
    return None if v is None else not v


def _names_in(text: str) -> set:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def cmd_query(args, out, err) -> int:
    """Exit codes: ``QUERY_EXIT_CODES`` (0 PROVEN, 1 REFUTED, 6 CONTINGENT, 7 UNKNOWN); 2 bad
    input, 3 internal error, as for every command."""
    result, binds = _analyze(args)
    rel, shown = parse_query(result, args.claim)
    ans = result.query(rel)
    ans.claim = args.claim
    written = _write_outputs(result, args)
    code = QUERY_EXIT_CODES[ans.verdict.name]
    if args.json:
        out.write(json.dumps(dict(ans.to_json(), exit_code=code,
                                  dims={k: d.to_json() for k, d in shown.items()},
                                  conflicts=[c.explain() for c in result.conflicts]), indent=2) + "\n")
    else:
        out.write(str(ans).split("\n", 1)[0] + "\n")
        if shown:
            out.write("  where " + ", ".join(f"{_one_line(k)} = {d}" for k, d in shown.items()) + "\n")
        for line in str(ans).split("\n")[1:]:
            out.write(_one_line(line) + "\n")
    if result.conflicts:
        from .report import plural
        err.write(f"smtshape: warning: the model has {plural(len(result.conflicts), 'conflict')} "
                  "(see 'smtshape check'); the verdict holds under the constraints that remain\n")
    _print_smtlib(result, args, out)
    _confirm(result, args, written, err)
    _warn_skipped(result, err)
    return code


def cmd_write(args, out, err) -> int:
    """``simplify`` and ``specialize``: analyze, rewrite, write ``-o``; the report."""
    from .report import plural, premises_text
    from .written import refuse_conflicts
    with _progress(args, err) as progress:
        result, binds = _analyze(args, progress)
    specialize = args.command == "specialize"
    refuse_conflicts(result, args.command)
    report = _save(result, args, simplify=not (specialize and args.no_simplify))
    if args.report:
        try:
            write_atomic(args.report, json.dumps(report.to_json(), indent=1) + "\n")
        except OSError as e:
            raise BadInput(f"cannot write the report to {args.report!r}: {e.strerror or e}") from None
    if args.json:
        out.write(json.dumps(dict(report.to_json(), output=args.output), indent=2) + "\n")
    else:
        out.write(_one_line(f"wrote {args.output}: {report.summary()}") + "\n")
        out.write(_one_line(f"valid {premises_text(result, report.premises)}") + "\n")
        if report.kept_declared:
            out.write(f"kept as declared, not verified: {plural(len(report.kept_declared), 'value')} (--report "
                      "lists them)\n")
        if specialize:
            if report.unbound:
                out.write(_one_line("not bound, kept symbolic: " + ", ".join(report.unbound)
                                    + " (the bound dims are written into the graph inputs; bind each of "
                                      "these too, --bind NAME=INT or INPUT:AXIS=INT, for a static model)") + "\n")
            if report.not_static:
                why = "over the dims not bound, or data dependent" if report.unbound else "data dependent"
                out.write(f"not static: {plural(len(report.not_static), 'dim')} ({why}): "
                          + _one_line(", ".join(report.not_static[:5])) + (", ..." if len(report.not_static) > 5
                                                                          else "") + "\n")
            else:
                out.write("every dim of every value is static\n")
    _warn_skipped(result, err)
    if specialize and (report.unbound or report.not_static):
        return EXIT_NOT_STATIC
    return EXIT_OK


# ------------------------------------------------------------------ entry point

def main(argv=None) -> int:
    out, err = sys.stdout, sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    try:
        _refuse_ort_flags(argv)
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help / --version
            return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_BAD_INPUT)
        _model_argument(args)
        if args.command == "infer":
            return cmd_infer(args, out, err)
        if args.command == "check":
            return cmd_check(args, out, err)
        if args.command == "query":
            return cmd_query(args, out, err)
        if args.command in ("simplify", "specialize"):
            return cmd_write(args, out, err)
        raise _UsageError(f"unknown command {args.command!r}")
    except _UsageError as e:
        return _fail(out, err, as_json, "bad_input", _one_line(e), EXIT_BAD_INPUT)
    except SmtShapeError as e:
        return _fail(out, err, as_json, "bad_input", _error_text(e), EXIT_BAD_INPUT)
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
        return _fail(out, err, as_json, "bad_input", f"cannot access{where}: {_one_line(e.strerror or e)}",
                     EXIT_BAD_INPUT)
    except RecursionError:
        return _fail(out, err, as_json, "bad_input", "the model is nested too deeply to analyze", EXIT_BAD_INPUT)
    except Exception as e:  # a bug: say so, without a traceback
        code = _fail(out, err, as_json, "internal_error",
                     f"{type(e).__name__}: {_one_line(e)} (this is a bug in smtshape; please report it with "
                     f"the command line and, if you can, the model: {REPORT_URL}; set SMTSHAPE_DEBUG=1 for a "
                     "traceback)", EXIT_INTERNAL)
        if os.environ.get("SMTSHAPE_DEBUG"):
            import traceback
            traceback.print_exc(file=err)
        return code


def _fail(out, err, as_json: bool, kind: str, message: str, code: int) -> int:
    """One ``smtshape: error:`` line on stderr; with ``--json`` also a JSON error on stdout."""
    word = "internal error" if kind == "internal_error" else "error"
    err.write(f"smtshape: {word}: {message}\n")
    if as_json:
        try:
            out.write(json.dumps({"error": {"kind": kind, "message": message, "exit_code": code}}) + "\n")
        except Exception:
            pass
    return code


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
