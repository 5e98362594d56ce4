"""smtshape against runtime truth on the shared model sets.

For every model in ``../shared/corpus`` and ``../shared/vnncomp`` (next to the
repository): strip value_info, analyze with ``policy="skip"``, grade with
``graders.truth``.  Every model must analyze without raising and without a
single wrong dim; the share of correct dims must stay above a floor.
"""
from __future__ import annotations

import functools
import traceback
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

import smtshape  # noqa: E402
from graders.truth import grade, grade_smtshape, load_truth, strip_value_info  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SETS = ("corpus", "vnncomp")

# Total correct % of non-data-dependent axes, per set; set a little below what
# was measured so regressions fail.  Measured: corpus 99.9%, vnncomp 100.0%.
FLOORS = {"corpus": 99.5, "vnncomp": 99.5}


def _models(name):
    d = SHARED / name
    if not d.is_dir():
        return []
    return sorted(p.name[:-5] for p in d.glob("*.onnx") if p.with_name(p.name[:-5] + ".truth.json").exists())


PARAMS = [pytest.param(s, m, id=f"{s}/{m}") for s in SETS for m in _models(s)]


@functools.lru_cache(maxsize=None)
def _grade(set_name, model):
    d = SHARED / set_name
    proto = strip_value_info(onnx.load(str(d / f"{model}.onnx")))
    truth = load_truth(d / f"{model}.truth.json")
    result = smtshape.analyze(proto, policy="skip")
    return grade_smtshape(result, truth)


def _skip_if_absent(set_name):
    if not (SHARED / set_name).is_dir():
        pytest.skip(f"model set {SHARED / set_name} not found (expected next to the repository)")


if not PARAMS:
    PARAMS = [pytest.param(None, None, id="no-models",
                           marks=pytest.mark.skip(reason=f"no model sets under {SHARED}"))]


@pytest.mark.parametrize("set_name,model", PARAMS)
def test_no_wrong_dims(set_name, model):
    try:
        g = _grade(set_name, model)
    except Exception as e:
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-8))
        pytest.fail(f"{set_name}/{model}: analysis raised {type(e).__name__}: {e}\n{tb}", pytrace=False)
    if g.all_wrong:
        shown = "\n  ".join(str(w) for w in g.wrong_entries[:10])
        more = f"\n  ... {len(g.wrong_entries) - 10} more" if len(g.wrong_entries) > 10 else ""
        pytest.fail(f"{set_name}/{model}: {g.all_wrong} wrong dims ({g.summary()}):\n  {shown}{more}")


@pytest.mark.parametrize("set_name", SETS)
def test_correct_floor(set_name):
    _skip_if_absent(set_name)
    models = _models(set_name)
    if not models:
        pytest.skip(f"no models with truth files in {SHARED / set_name}")
    axes = correct = 0
    failed = []
    for m in models:
        try:
            g = _grade(set_name, m)
        except Exception as e:  # reported by test_no_wrong_dims; counts as all unresolved here
            failed.append(f"{m}: {type(e).__name__}")
            truth = load_truth(SHARED / set_name / f"{m}.truth.json")
            axes += grade(lambda name: None, truth).axes
            continue
        axes += g.axes
        correct += g.correct
    pct = 100.0 * correct / axes if axes else 100.0
    assert pct >= FLOORS[set_name], (
        f"{set_name}: {pct:.2f}% of axes correct, below the floor {FLOORS[set_name]}%"
        + (f"; models that failed to analyze: {', '.join(failed)}" if failed else ""))


# ------------------------------------------------------------------ the grader itself

def _truth(shapes, bindings, dd=()):
    return {"bindings": bindings, "shapes": shapes, "data_dependent": list(dd), "skipped": []}


def test_grade_conventions():
    from graders.truth import dim_entry_from_text
    b = [{"n": 2}, {"n": 5}]
    truth = _truth([{"x": [2, 3], "y": [4], "s": [], "z": [2, 3], "d": [1], "u": [2], "w": [2]},
                    {"x": [5, 3], "y": [10], "s": [], "z": [5, 3], "d": [4], "u": [3], "w": [7]}], b, dd=["d"])
    ours = {
        "x": [("expr", lambda env: env["n"]), 3],                # correct, correct
        "y": [("expr", lambda env: 2 * env["n"] if env["n"] < 5 else 9)],   # wrong at n=5
        "s": [3],                                                # scalar with rank 1: wrong
        "z": [("bound", lambda env: env["n"]), ("bound", lambda env: 2)],   # bound_ok, bound below: wrong
        "d": [("bound", lambda env: 2 * env["n"], "nz")],       # dd: bound_ok
        "u": [dim_entry_from_text("q")],                        # unresolved, opaque name q
        "w": [dim_entry_from_text("q")],                        # same opaque q, differs at n=5: false equality
    }
    g = grade(lambda name: ours.get(name), truth)
    assert (g.axes, g.correct, g.bound_ok, g.unresolved) == (7, 2, 1, 2)
    assert g.wrong == 2 + 1  # y axis 0, z axis 1, scalar rank of s
    assert (g.scalars, g.scalar_wrong, g.dd_axes, g.dd_bound_ok, g.dd_wrong) == (1, 1, 1, 1, 0)
    assert {(w.value, w.axis) for w in g.wrong_entries} == {("y", 0), ("z", 1), ("s", None)}
    assert [f.key for f in g.false_equalities] == ["q"]
    assert g.all_wrong == 3


def test_grade_rank_and_unknown():
    truth = _truth([{"x": [2, 3]}, {"x": [4, 3]}], [{"n": 2}, {"n": 4}])
    assert grade(lambda n: [3], truth).wrong == 2          # rank 1 vs runtime rank 2: both axes wrong
    g = grade(lambda n: None, truth)
    assert (g.unresolved, g.wrong) == (2, 0)


def test_tool_expr_is_safe_and_exact():
    from graders.truth import tool_expr
    env = {"height": 33, "width": 8, "seq": 200, "batch": 3}
    cases = {
        "floor(height/2 - 1/2) + 1": 17,
        "ceiling(floor(height/2)/2 - 1/2) + 1": 9,
        "Min(128, seq)": 128,
        "Max(0, floor(seq/20) - 1)": 9,
        "((width//8))*((height//8)) + 1": 5,
        "batch*seq": 600,
        "floor(2.0*width)": 16,
        "2*batch + Mod(seq, 7)": 6 + 200 % 7,
    }
    for text, want in cases.items():
        e = tool_expr(text)
        assert e is not None and e(env) == want, text
    assert tool_expr("unk__3")(env) is None                  # a name outside the bindings
    for bad in ("__import__('os').system('true')", "x.y", "lambda: 1", "a[0]", "1 if 1 else 2", ""):
        e = tool_expr(bad)
        assert e is None or e(env) is None, bad
