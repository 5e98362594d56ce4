"""The rule-result cache (smtshape/cache.py) changes speed, never answers.

Every test here compares against the same analysis with the cache off, or asserts
a property of replays (their own provenance, outputs left unnamed, the hot path)
that a wrong cache would break."""
from __future__ import annotations

import glob
import os

import pytest
from onnx import TensorProto as T, helper

import smtshape
from smtshape import api, engine

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared")


class _NoCacheEngine(engine.Engine):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.cache = None


def _analyze(model, cached: bool, monkeypatch, **kw):
    with monkeypatch.context() as m:
        if not cached:
            m.setattr(api, "Engine", _NoCacheEngine)
        return smtshape.analyze(model, **kw)


def _summary(res):
    """Everything a user reads: solved shapes, constraints with their provenance,
    conflicts, consistency."""
    shapes = {n: None if s is None else tuple(str(d) for d in s) for n, s in res.shapes().items()}
    # (a requirement trivially true in canonical form is not restated by a replay, and
    # no output lists one; a replay may restate one that the rule would skip now that an
    # earlier copy holds, and that one is recorded as a duplicate: cache.py)
    cons = sorted((str(c.relation), c.provenance.node, c.provenance.rule, c.status) for c in res.constraints
                  if c.status not in ("trivial", "duplicate"))
    conflicts = sorted(str(c) for c in res.conflicts)
    return shapes, cons, conflicts, res.consistent


def _model(nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


_CORPUS = sorted(glob.glob(os.path.join(SHARED, "corpus", "*.onnx")))


@pytest.mark.skipif(not _CORPUS, reason="../shared/corpus is not beside the project")
@pytest.mark.parametrize("name", ["gpt2_legacy", "qwen2_legacy", "mobilenetv2_legacy", "segformer_legacy",
                                  "bert_legacy"])
def test_corpus_models_give_the_same_result_with_and_without_the_cache(name, monkeypatch):
    import onnx
    from graders.truth import strip_value_info
    path = os.path.join(SHARED, "corpus", f"{name}.onnx")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing from the corpus")
    proto = strip_value_info(onnx.load(path))
    with_cache = _analyze(proto, True, monkeypatch, policy="skip")
    assert with_cache.engine.cache.hits > 0          # (the cache is in play on this model)
    assert _summary(with_cache) == _summary(_analyze(proto, False, monkeypatch, policy="skip"))


def test_replayed_requirements_name_their_own_node(monkeypatch):
    """Two Reshapes of the same inputs: the second is a replay, and its element-count
    requirement is restated with its own node as provenance."""
    shape = helper.make_tensor("s", T.INT64, [2], [-1, 4])
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r1"], name="first"),
             helper.make_node("Reshape", ["x", "s"], ["r2"], name="second")]
    m = _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, ["n", "k"])],
               [helper.make_tensor_value_info(o, T.FLOAT, None) for o in ("r1", "r2")])
    m.graph.initializer.append(shape)
    res = _analyze(m, True, monkeypatch)
    assert res.engine.cache.hits == 1
    by_node = {c.provenance.node for c in res.constraints if c.provenance.rule.startswith("reshape.")}
    assert {"first", "second"} <= by_node
    assert _summary(res) == _summary(_analyze(m, False, monkeypatch))


def test_unnamed_optional_output_keys_apart_from_a_named_one(monkeypatch):
    """Dropout with and without its mask output: one must not replay the other
    (the mask would be left without a shape)."""
    nodes = [helper.make_node("Dropout", ["x"], ["y1", ""], name="d1"),
             helper.make_node("Dropout", ["x"], ["y2", "mask"], name="d2")]
    m = _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, ["n", 8])],
               [helper.make_tensor_value_info(o, T.FLOAT, None) for o in ("y1", "y2")]
               + [helper.make_tensor_value_info("mask", T.BOOL, None)])
    res = _analyze(m, True, monkeypatch)
    assert [str(d) for d in res.shape("mask")] == ["n", "8"]
    assert _summary(res) == _summary(_analyze(m, False, monkeypatch))


def test_a_chain_of_repeated_nodes_replays_without_making_a_context(monkeypatch):
    """The hot path: a hit that only sets outputs makes no Context (an entry is
    found to allow it when recorded: not even its first replay makes one)."""
    n = 12
    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"], name=f"relu{k}") for k in range(n)]
    m = _model(nodes, [helper.make_tensor_value_info("v0", T.FLOAT, ["b", 3])],
               [helper.make_tensor_value_info(f"v{n}", T.FLOAT, None)])
    made = []

    class Counting(engine.Context):
        __slots__ = ()

        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(engine, "Context", Counting)
    res = smtshape.analyze(m)
    assert [str(d) for d in res.shape(f"v{n}")] == ["b", "3"]
    assert res.engine.cache.hits == n - 1
    assert len(made) == 1        # the miss only


def test_a_key_follows_an_elimination(monkeypatch):
    """After ``M := N`` (a Concat along axis 1 needs equal first dims: the inputs are
    non-empty under ``inputs_positive``; onnxruntime skips an empty input's other dims) the
    value of shape [M, 4] keys as [N, 4]: its Relu replays the earlier Relu of [N, 4]."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Relu", ["y"], ["b"], name="r2"),
             helper.make_node("Concat", ["x", "y"], ["c"], axis=1, name="cat"),
             helper.make_node("Relu", ["y"], ["d"], name="r3")]
    m = _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4]),
                       helper.make_tensor_value_info("y", T.FLOAT, ["M", 4])],
               [helper.make_tensor_value_info(o, T.FLOAT, None) for o in "abcd"])
    res = _analyze(m, True, monkeypatch, inputs_positive=True)
    assert res.engine.cache.hits == 1            # r3, under the new canonical key
    assert [str(d) for d in res.shape("d")] == [str(d) for d in res.shape("a")]
    assert _summary(res) == _summary(_analyze(m, False, monkeypatch, inputs_positive=True))


def test_constants_that_differ_only_in_their_tensor_names_replay():
    """A Constant's tensor is keyed by its content: exporters that name each Constant's
    tensor (a name of its own per node) still get a hit on the same elements, and a
    different element never hits."""
    import numpy as np
    from onnx import numpy_helper
    nodes = []
    for k in range(6):
        v = [1] if k < 5 else [2]          # the last one holds another element
        nodes.append(helper.make_node("Constant", [], [f"c{k}"], name=f"const{k}",
                                      value=numpy_helper.from_array(np.array(v, dtype=np.int64),
                                                                    name=f"const{k}_value")))
        nodes.append(helper.make_node("Unsqueeze", ["x", f"c{k}"], [f"u{k}"], name=f"unsq{k}"))
    m = _model(nodes, [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
               [helper.make_tensor_value_info(f"u{k}", T.FLOAT, None) for k in range(6)])
    res = smtshape.analyze(m)
    assert [str(d) for d in res.shape("u0")] == ["n", "1", "3"]
    assert [str(d) for d in res.shape("u5")] == ["n", "3", "1"]
    # the first Constant and Unsqueeze miss, the next four of each hit; the last pair misses
    assert res.engine.cache.hits == 8
    assert res.engine.cache.misses == 4
