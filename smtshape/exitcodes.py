"""The exit codes of ``smtshape``: one table (:data:`EXIT_CODES`), from which ``--help``
(:func:`exit_codes_text`) and README's table (:func:`exit_codes_markdown`, checked by
``tests/test_readme.py``) are generated; ``QUERY_EXIT_CODES`` maps a query verdict to its code.
"""
from __future__ import annotations

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_UNDECIDED = 4
EXIT_NOT_STATIC = 5
EXIT_CONTINGENT = 6
EXIT_UNKNOWN = 7

# The one table of exit codes: (code, name, {command: meaning}); "*" is every command.
EXIT_CODES = (
    (EXIT_OK, "ok", {"infer": "done (even with conflicts: infer is informational)",
                     "check": "consistent: every node checked, nothing refuted",
                     "query": "PROVEN: holds for every input the model accepts",
                     "simplify": "the simplified model is written",
                     "specialize": "the static model is written"}),
    (EXIT_FAIL, "conflict / REFUTED", {"check": "at least one conflict (each explained)",
                                       "query": "REFUTED: holds for no input the model accepts"}),
    (EXIT_BAD_INPUT, "bad input", {"*": "bad model, expression, option or file: one 'smtshape: error:' line "
                                        "on stderr (a JSON error on stdout with --json)"}),
    (EXIT_INTERNAL, "internal error", {"*": "a bug in smtshape (please report it)"}),
    (EXIT_UNDECIDED, "not proven consistent", {"check": "not proven consistent: no conflict found, but some "
                                                        "constraints could not be decided or some nodes were not "
                                                        "checked (each listed)"}),
    (EXIT_NOT_STATIC, "not static", {"infer": "with --static: some dim is not a static integer under the bindings "
                                              "(each listed, with what blocks it)",
                                     "check": "with --static: the same (a conflict takes precedence)",
                                     "specialize": "written, but some dims stay symbolic: input dims not "
                                                   "bound, or data dependent (each listed)"}),
    (EXIT_CONTINGENT, "CONTINGENT", {"query": "CONTINGENT: holds for some inputs and not others (a witness "
                                              "binding for each side is printed)"}),
    (EXIT_UNKNOWN, "UNKNOWN", {"query": "UNKNOWN: the solver gave up (the reason is printed)"}),
    (EXIT_INTERRUPTED, "interrupted", {"*": "Ctrl-C"}),
)
QUERY_EXIT_CODES = {"PROVEN": EXIT_OK, "REFUTED": EXIT_FAIL, "CONTINGENT": EXIT_CONTINGENT, "UNKNOWN": EXIT_UNKNOWN}


def exit_codes_text(command: str | None = None) -> str:
    """The exit codes (of one command, or of all) as plain text, for ``--help``."""
    lines = ["exit codes:"]
    for code, name, meanings in EXIT_CODES:
        first = True
        for cmd, text in meanings.items():
            if command is not None and cmd not in (command, "*"):
                continue
            what = f"{name}: {text}" if cmd == "*" else text if command is not None else f"{cmd}: {text}"
            lines.append(f"  {code:<4d}{what}" if first else f"      {what}")
            first = False
    return "\n".join(lines)


def exit_codes_markdown() -> str:
    """The exit codes as the markdown table README shows (``tests/test_readme.py`` checks it)."""
    rows = ["| exit | | meaning, per command |", "|---|---|---|"]
    for code, name, meanings in EXIT_CODES:
        text = "; ".join(m if cmd == "*" else f"`{cmd}`: {m}" for cmd, m in meanings.items())
        rows.append(f"| {code} | {name} | {text} |")
    return "\n".join(rows)
