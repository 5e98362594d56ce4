"""ONNX's backend node test suite (built from the installed onnx wheel; see
graders/conformance.py): smtshape must make no wrong claim, must not crash and
must not report a conflict, in every variant, on every test.  The whole suite runs (about 1,880 tests x 3
variants, under a minute on one core); nothing is sampled.

A failure lists every wrong axis as ``op | test | variant | value axis | ours | expected``;
the figures per op and per tool are in docs/conformance.md (benchmarks/conformance.py).
"""
from __future__ import annotations

import pytest

from graders import conformance as C

_OUTCOMES: dict = {}


@pytest.fixture(scope="module")
def suite():
    return C.load_suite()


def _run(suite, variant):
    if variant not in _OUTCOMES:
        _OUTCOMES[variant] = C.run_suite(suite, variants=[variant])
    return _OUTCOMES[variant]


def test_suite_is_whole(suite):
    # the onnx 1.23 wheel has 1,884 node tests; a build that lost most of them
    # would make the conformance tests below vacuous
    assert len(suite) >= 1800
    assert len({t.name for t in suite}) == len(suite)
    assert all(t.outputs for t in suite)
    # every output has a known structure (tensor, sequence, optional)
    assert not [t.name for t in suite if any(s is None for _, s in t.outputs)]


@pytest.mark.parametrize("variant", C.VARIANTS)
def test_no_wrong_dims_and_no_crash(suite, variant):
    """No wrong dim, no crash, and no conflict: every node test is a model ONNX's
    reference implementation runs, so calling one inconsistent is a false claim."""
    outs = _run(suite, variant)
    assert len(outs) == len(suite)
    crashes = [o for o in outs if o.status != "ok"]
    wrong = [o for o in outs if o.wrong]
    conflicts = [o for o in outs if o.consistent is False]
    if crashes or wrong or conflicts:
        lines = C.wrong_lines(crashes + wrong)
        lines += [f"{o.op} | {o.test} | {variant} | conflict on a model that runs: "
                  + "; ".join(f for f in o.findings if f.startswith("conflict"))[:300] for o in conflicts]
        by_op: dict = {}
        for o in wrong:
            by_op[o.op] = by_op.get(o.op, 0) + o.wrong
        head = (f"{variant}: {sum(o.wrong for o in outs)} wrong dims in {len(wrong)} tests "
                f"(by op: {', '.join(f'{k} {v}' for k, v in sorted(by_op.items())) or '-'}), "
                f"{len(crashes)} crashes, {len(conflicts)} false conflicts")
        pytest.fail(head + "\n" + "\n".join(lines[:300]) +
                    (f"\n... {len(lines) - 300} more" if len(lines) > 300 else ""), pytrace=False)


# ------------------------------------------------------------------ the harness itself

def _test(suite, name):
    hit = [t for t in suite if t.name == name]
    assert hit, name
    return hit[0]


def test_variants_are_built_as_described(suite):
    t = _test(suite, "test_reshape_reordered_all_dims")
    st, b0 = C.variant_model(t, "static")
    va, b1 = C.variant_model(t, "values")
    sy, b2 = C.variant_model(t, "symbolic")
    assert b0 == {} and b1 == {}
    # the shape input (int64, 3 elements) becomes an initializer with its test data
    assert [i.name for i in st.graph.input] == ["data", "shape"]
    assert [i.name for i in va.graph.input] == ["data"]
    assert [i.name for i in va.graph.initializer] == ["shape"]
    from onnx import numpy_helper
    assert list(numpy_helper.to_array(va.graph.initializer[0])) == [4, 2, 3]
    # every input dim is a fresh name bound to the test's input size
    dims = sy.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == sorted(b2)
    assert [b2[d.dim_param] for d in dims] == [2, 3, 4]
    # output shapes cleared in every variant
    for m in (st, va, sy):
        assert not m.graph.output[0].type.tensor_type.HasField("shape")
        assert len(m.graph.value_info) == 0


def test_grader_counts_wrong_claims(suite):
    """A tool that is one off on every output axis is graded wrong on every axis;
    one that claims the expected sizes is fully resolved; an upper bound above
    the size is right, below it wrong."""
    t = _test(suite, "test_reshape_reordered_all_dims")
    _, binding = C.variant_model(t, "symbolic")
    exp = C.truth_for(t, binding)
    expected = {n: s["t"] for n, s in t.outputs}

    def tool(delta, kind="int"):
        def shape_fn(name):
            if name not in expected:
                return None
            if kind == "int":
                return [("int", s + delta) for s in expected[name]]
            return [("bound", (lambda env, v=s + delta: v)) for s in expected[name]]
        return shape_fn

    def grade(fn):
        return C.grade_outcome(C.Outcome(t.name, t.op, "symbolic", "x"), fn, exp)

    good = grade(tool(0))
    assert good.full and good.wrong == 0 and good.right == good.axes == 3
    bad = grade(tool(1))
    assert not bad.full and bad.wrong == 3
    assert "expected" in C.wrong_lines([bad])[0]
    bound = grade(tool(5, "bound"))
    assert bound.full and bound.bound_ok == 3 and bound.wrong == 0
    assert grade(tool(-1, "bound")).wrong == 3
    assert not grade(lambda name: None).full


def test_sequence_outputs_are_graded_by_length_and_elements(suite):
    t = _test(suite, "test_split_to_sequence_2")      # seq of [1, 6] and [2, 6]
    exp = C.truth_for(t, {})
    assert exp.graded == ["seq[len]", "seq[0]", "seq[1]"]
    answers = {("len",): [("int", 2)], (0,): [("int", 1), ("int", 6)], (1,): [("int", 2), ("int", 6)]}

    def part(name, steps):
        return answers.get(steps)

    def grade(part_fn):
        return C.grade_outcome(C.Outcome(t.name, t.op, "values", "x"), lambda n: None, exp, part_fn=part_fn)

    assert grade(part).full
    answers[(1,)] = [("int", 1), ("int", 6)]           # claims the second element has 1 row
    o = grade(part)
    assert o.wrong == 1 and "seq[1] axis 0" in C.wrong_lines([o])[0]
    answers[(1,)] = [("int", 2), ("int", 6)]
    answers[("len",)] = [("unknown", None)]
    o = grade(part)
    assert not o.full and o.wrong == 0 and o.unresolved == 1


def test_symbolic_variant_is_evaluated_at_the_test_sizes(suite):
    """smtshape's answer over the fresh dim names evaluates to the expected shape."""
    t = _test(suite, "test_concat_2d_axis_0")
    o = C.run_smtshape(t, "symbolic")
    assert o.status == "ok" and o.full and o.wrong == 0, o
