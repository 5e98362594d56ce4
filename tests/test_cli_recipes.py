"""docs/RECIPES.md runs: every `console` block's `$ smtshape ...` lines (exit code
checked against `# exit N`, default 0; `> FILE` redirects stdout) and every
`python` block, in order, in one scratch folder with corpus/ and vnncomp/."""
import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

import smtshape
from smtshape.cli import main

REPO = Path(smtshape.__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
DOC = REPO / "docs" / "RECIPES.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def steps():
    out = []
    for m in BLOCK.finditer(DOC.read_text()):
        lang, body = m.group(1), m.group(2)
        if lang == "console":
            for line in body.splitlines():
                if line.startswith("$ "):
                    out.append(("console", line[2:]))
        elif lang == "python":
            out.append(("python", body))
    return out


def run_command(line: str):
    want = 0
    m = re.search(r"\s+#\s*exit\s+(\d+)\s*$", line)
    if m:
        want, line = int(m.group(1)), line[:m.start()]
    argv = shlex.split(line)
    assert argv[0] == "smtshape", line
    argv = argv[1:]
    target = None
    if ">" in argv:
        i = argv.index(">")
        target, argv = argv[i + 1], argv[:i]
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == want, f"{line}: exit {code}, expected {want}\n{buf.getvalue()[-3000:]}\n{err.getvalue()}"
    assert "Traceback" not in err.getvalue()
    if target:
        Path(target).write_text(buf.getvalue())
    return buf.getvalue()


def test_recipes_have_every_kind():
    text = DOC.read_text()
    for title in ("Verifier", "Exporter debugging", "Compiler", "Custom ops", "onnxruntime", "onnx_ir",
                  "external data"):
        assert title in text
    kinds = [k for k, _ in steps()]
    assert kinds.count("console") >= 15 and kinds.count("python") >= 8


def test_recipes_run(tmp_path, monkeypatch):
    os.symlink(SHARED / "corpus", tmp_path / "corpus")
    os.symlink(SHARED / "vnncomp", tmp_path / "vnncomp")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    ns: dict = {"__name__": "recipes"}
    outputs = []
    for kind, body in steps():
        if kind == "console":
            outputs.append(run_command(body))
        else:
            exec(compile(body, str(DOC), "exec"), ns)      # our own documentation, not model text
    assert any(o.startswith("model: corpus/bert_legacy.onnx") for o in outputs)
    assert any("static check: every dim is static" in o for o in outputs)
    assert any("seq (input dim, axis 1 of graph input 'input_ids'" in o for o in outputs)
    assert Path("bert_fused.onnx").exists() and Path("gpt2_annotated.onnx").exists()
