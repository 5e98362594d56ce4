"""README runs as written (issue 21, defect 7): its first command, its Library example on the
model that command builds, its table of exit codes (generated from ``smtshape.exitcodes.EXIT_CODES``,
the one table), and its links to the runnable recipes."""
import contextlib
import io
import re
from pathlib import Path

import smtshape
from smtshape import Exactness, Verdict
from smtshape.cli import main

REPO = Path(smtshape.__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def library_block() -> str:
    return re.search(r"## Library\n.*?```python\n(.*?)```", README, re.S).group(1)


def test_readme_library_example_runs_on_the_demo_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = re.search(r"```bash\n(.*?)\n", README).group(1)
    assert "python -m smtshape.examples demo.onnx" in first
    from smtshape.examples import main as make_demo
    with contextlib.redirect_stdout(io.StringIO()):
        assert make_demo(["demo.onnx"]) == 0
        assert main(["infer", "demo.onnx", "--assume", "seq <= 4096"]) == 0      # the first command's end
    ns: dict = {}
    exec(compile(library_block(), "README.md (Library)", "exec"), ns)           # every line, as written
    result, dim, answer = ns["result"], ns["dim"], ns["answer"]
    # what the comments say
    assert [str(d) for d in result.shape("probs")] == ["1", "4", "seq", "seq"]
    assert (str(dim.expr), dim.exactness, dim.bound) == ("seq", Exactness.EXACT, None)
    assert result.shape("probs")[1] == 4
    assert result.equal("input_ids", 1, "probs", 3) is True
    assert result.prove("seq <= 128") is Verdict.PROVEN
    assert answer.verdict is Verdict.CONTINGENT and answer.holds["seq"] == 64 and answer.fails["seq"] != 64
    assert result.static_value(dim) is None
    assert result.evaluate({"seq": 16})["probs"] == (1, 4, 16, 16)
    assert result.sources(dim) == {("input_ids", 1)}
    assert result.consistent is True and result.conflicts == []
    assert [s.relation for s in result.specializations] == ["seq <= 128"]
    assert (tmp_path / "annotated.onnx").exists() and (tmp_path / "simplified.onnx").exists()


def test_readme_library_names_exist_in_the_demo_model():
    names = set(re.findall(r'"([A-Za-z_]+)"', library_block()))
    from smtshape.examples import demo_model
    res = smtshape.analyze(demo_model())
    known = set(res.value_names) | {i.name for i in res.store.input_symbols()}
    files = {"demo", "annotated", "simplified"}
    assert {n for n in names if n not in files} <= known | {"seq", "batch"}


def test_readme_exit_codes_are_the_generated_table():
    from smtshape.cli import exit_codes_markdown
    block = re.search(r"<!-- exit-codes:start -->\n(.*?)\n<!-- exit-codes:end -->", README, re.S)
    assert block, "README has no generated exit-code table"
    assert block.group(1) == exit_codes_markdown()     # regenerate: smtshape.exitcodes.exit_codes_markdown()


def test_readme_links_the_recipes_and_the_simplify_comparison():
    assert "docs/RECIPES.md" in README and "docs/simplify.md" in README
    assert (REPO / "docs" / "RECIPES.md").exists()
