"""How rules stop on a node, read from their source: a violated precondition of the spec is
``ctx.invalid`` / ``ctx.conflict`` (a conflict, with a rule id), a case the rule cannot
compute is ``ctx.cannot`` with a ``Cannot`` reason and a sentence that does not describe
an invalid model.  (docs/RULES-GUIDE.md, "Two ways to stop".)"""
import ast
import re
from pathlib import Path

import pytest

from smtshape.errors import Cannot

OPS = Path(__file__).resolve().parents[1] / "smtshape" / "ops"
MODULES = sorted(p for p in OPS.rglob("*.py"))
RULE_ID = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
# words that describe a model the spec forbids: such a sentence belongs in ctx.invalid
INVALID_WORDS = re.compile(r"\b(must|invalid|not one of|out of range|negative|expected|required|needs?|"
                           r"duplicates?|at least|at most|exceeds?|mismatch|differ|does not match|"
                           r"not a permutation|is missing|forbid|only)\b", re.I)
RULE_WORDS = ("cannot", "invalid", "conflict", "fail")


def calls(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RULE_WORDS:
            yield node


def literal_text(node) -> str | None:
    """The constant text of a str / f-string argument (formatted parts left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = literal_text(node.left), literal_text(node.right)
        return None if a is None and b is None else (a or "") + (b or "")
    return None


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(OPS)))
def test_rules_stop_in_one_of_two_ways(path):
    problems = []
    for c in calls(path):
        where = f"{path.name}:{c.lineno}"
        kind = c.func.attr
        if kind == "fail":
            problems.append(f"{where}: ctx.fail: say ctx.invalid(rule, sentence) (the model breaks the spec) "
                            "or ctx.cannot(Cannot.X, sentence) (this rule cannot compute the case)")
        elif kind == "cannot":
            reason = c.args[0] if c.args else None
            ok = isinstance(reason, ast.Attribute) and isinstance(reason.value, ast.Name) \
                and reason.value.id == "Cannot" and reason.attr in Cannot.__members__ \
                and reason.attr not in ("NO_RULE", "INTERNAL")
            if not ok:
                problems.append(f"{where}: ctx.cannot's first argument must be a Cannot member a rule may give")
            text = literal_text(c.args[1]) if len(c.args) > 1 else None
            if text is None:
                problems.append(f"{where}: ctx.cannot's sentence must be a string written at the call")
            elif INVALID_WORDS.search(text):
                problems.append(f"{where}: ctx.cannot({text!r}) reads like a violated precondition "
                                f"({INVALID_WORDS.search(text).group(0)!r}): use ctx.invalid")
        elif kind in ("invalid", "conflict") and c.args:
            rule = c.args[0]
            if not (isinstance(rule, ast.Constant) and isinstance(rule.value, str) and RULE_ID.match(rule.value)) \
                    and not isinstance(rule, (ast.JoinedStr, ast.Name, ast.Attribute)):
                problems.append(f"{where}: ctx.{kind}'s first argument is a rule id like 'conv.strides'")
            elif isinstance(rule, ast.Constant) and not RULE_ID.match(str(rule.value)):
                problems.append(f"{where}: ctx.{kind}({rule.value!r}, ...): a rule id looks like 'conv.strides' "
                                "(the sentence comes second)")
    assert problems == []


def test_every_reason_is_explained():
    for r in Cannot:
        assert r.value and not INVALID_WORDS.search(r.value), r
