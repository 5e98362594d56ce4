"""The library entry point ``smtshape.analyze`` and the ``Result`` it returns."""
import os

import numpy as np
import onnx
import onnx_ir as ir
import pytest
import z3
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape
from smtshape import Exactness, Verdict
from smtshape import expr as E
from smtshape.parse import parse_expr

V = helper.make_tensor_value_info


def make_model(nodes, inputs, outputs, inits=(), opsets=(("", 18),)):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=8)


def mlp():
    """x[batch, seq, 64] -> MatMul W[64, 32] -> h -> Relu -> y."""
    w = numpy_helper.from_array(np.zeros((64, 32), np.float32), "W")
    return make_model([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                       helper.make_node("Relu", ["h"], ["y"], name="relu")],
                      [V("x", TP.FLOAT, ["batch", "seq", 64])], [V("y", TP.FLOAT, None)], [w])


def concat(tail=None):
    """p[batch, a] ++ q[batch, b] on axis 1 -> c; tail 'matmul' meets a [1024, 8] weight,
    tail 'add' broadcasts with a [1024] tensor."""
    nodes = [helper.make_node("Concat", ["p", "q"], ["c"], name="cat", axis=1)]
    inits, out = [], "c"
    if tail == "matmul":
        inits = [numpy_helper.from_array(np.zeros((1024, 8), np.float32), "W")]
        nodes.append(helper.make_node("MatMul", ["c", "W"], ["y"], name="mm"))
        out = "y"
    elif tail == "add":
        inits = [numpy_helper.from_array(np.zeros((1024,), np.float32), "W")]
        nodes.append(helper.make_node("Add", ["c", "W"], ["y"], name="add"))
        out = "y"
    return make_model(nodes, [V("p", TP.FLOAT, ["batch", "a"]), V("q", TP.FLOAT, ["batch", "b"])],
                      [V(out, TP.FLOAT, None)], inits)


def exprs(res, name):
    return tuple(d.expr for d in res.shape(name))


batch, seq, a, b = (E.symbol(n) for n in ("batch", "seq", "a", "b"))


# ------------------------------------------------------------------ inputs accepted

def test_analyze_accepts_path_proto_and_ir_model(tmp_path):
    proto = mlp()
    path = tmp_path / "m.onnx"
    onnx.save(proto, str(path))
    results = [smtshape.analyze(str(path)), smtshape.analyze(path), smtshape.analyze(proto),
               smtshape.analyze(ir.serde.deserialize_model(proto)), smtshape.analyze(ir.load(str(path)))]
    for res in results:
        assert exprs(res, "x") == (batch, seq, 64)
        assert exprs(res, "h") == (batch, seq, 32)
        assert exprs(res, "y") == (batch, seq, 32)
        assert res.dtype("y") == ir.DataType.FLOAT
        assert all(d.exactness is Exactness.EXACT for d in res.shape("y"))
        assert res.conflicts == []


def test_analyze_rejects_bad_arguments():
    with pytest.raises(smtshape.BadInput):
        smtshape.analyze(12345)
    with pytest.raises(smtshape.BadInput, match="policy"):
        smtshape.analyze(mlp(), policy="lax")
    with pytest.raises(smtshape.BadInput, match="nosuch"):
        smtshape.analyze(mlp(), bind={"nosuch": 1})
    with pytest.raises(smtshape.BadInput, match="nosuch"):
        smtshape.analyze(mlp(), assume=["nosuch <= 3"])
    with pytest.raises(smtshape.SmtShapeError):
        smtshape.analyze(mlp(), assume=["seq / 2 == 1"])


# ------------------------------------------------------------------ shapes and queries

def test_bind_makes_dims_static():
    res = smtshape.analyze(mlp(), bind={"batch": 1})
    y = res.shape("y")
    assert y[0].expr == 1 and y[0].is_static and res.static_value(y[0]) == 1
    assert y[1].expr == seq and not y[1].is_static and res.static_value(y[1]) is None
    assert exprs(res, "x") == (1, seq, 64)
    assert str(y[0]) == "1" and str(y[1]) == "seq"


def test_equal():
    res = smtshape.analyze(mlp())
    assert res.equal("x", 0, "y", 0) is True
    assert res.equal("x", 1, "h", 1) is True
    assert res.equal("x", 1, "y", 2) is None          # seq vs 32: unknown
    assert res.equal("x", 2, "y", 2) is False         # 64 vs 32
    assert res.equal("x", -1, "W", 0) is True
    with pytest.raises(IndexError):
        res.equal("x", 3, "y", 0)
    with pytest.raises(KeyError):
        res.equal("nosuch", 0, "y", 0)
    res = smtshape.analyze(mlp(), bind={"seq": 32})
    assert res.equal("x", 1, "y", 2) is True


def test_prove_from_concat_meeting_a_1024_wide_weight():
    res = smtshape.analyze(concat("matmul"))
    assert res.prove("a + b == 1024") is Verdict.PROVEN
    assert res.prove("a <= 1024") is Verdict.PROVEN
    assert res.prove("a + b == 1000") is Verdict.REFUTED
    assert res.prove("a == 512") is Verdict.CONTINGENT          # as query says
    assert res.static_value(res.shape("c")[1]) == 1024
    assert res.conflicts == []


def test_prove_not_from_broadcasting_add():
    # Add broadcasts: a + b == 1 also runs, so a + b == 1024 is not provable
    res = smtshape.analyze(concat("add"))
    assert res.prove("a + b == 1024") is Verdict.CONTINGENT
    assert res.prove("a + b == 1024 or a + b == 1") is Verdict.PROVEN


def test_assumption_makes_concat_axis_static():
    res = smtshape.analyze(concat(), assume=["a + b == 1024"])
    c1 = res.shape("c")[1]
    assert c1.is_static and c1.expr == 1024
    assert res.static_value(c1) == 1024
    res = smtshape.analyze(concat())
    assert res.shape("c")[1].expr == a + b
    assert res.static_value(res.shape("c")[1]) is None
    assert res.prove("a + b >= a") is Verdict.PROVEN


def test_prove_value_dims_written_name_axis():
    # The docstring of Result.prove promises value dims written ``name[axis]``.
    res = smtshape.analyze(concat("matmul"))
    assert res.prove("c[1] == 1024") is Verdict.PROVEN
    assert res.prove("p[1] + q[1] == y[0] * 0 + 1024") is Verdict.PROVEN


def test_prove_rejects_unknown_names():
    res = smtshape.analyze(mlp())
    with pytest.raises(smtshape.BadInput, match="nosuch"):
        res.prove("nosuch == 1")


def test_evaluate():
    res = smtshape.analyze(mlp())
    shapes = res.evaluate({"batch": 2, "seq": 128})
    assert shapes["x"] == (2, 128, 64)
    assert shapes["h"] == (2, 128, 32)
    assert shapes["y"] == (2, 128, 32)
    assert shapes["W"] == (64, 32)
    assert res.evaluate({"batch": 3})["y"] == (3, None, 32)
    res = smtshape.analyze(concat())
    assert res.evaluate({"batch": 1, "a": 3, "b": 5})["c"] == (1, 8)


def test_sources():
    res = smtshape.analyze(mlp())
    y = res.shape("y")
    assert res.sources(y[0]) == {("x", 0)}
    assert res.sources(y[1]) == {("x", 1)}
    assert res.sources(y[2]) == set()
    res = smtshape.analyze(concat())
    assert res.sources(res.shape("c")[1]) == {("p", 1), ("q", 1)}
    assert res.sources(res.shape("c")[0]) == {("p", 0), ("q", 0)}


# ------------------------------------------------------------------ reports

def test_constraints_carry_provenance():
    res = smtshape.analyze(concat("matmul"), assume=["batch <= 64"])
    inner = [c for c in res.constraints if c.provenance.node == "mm"]
    assert inner and all(c.provenance.op_type == "MatMul" for c in inner)
    assert any(c.relation.symbols() >= {a, b} and c.status != "conflict" for c in inner)
    assumed = [c for c in res.constraints if c.kind == "assumption"]
    assert len(assumed) == 1 and str(assumed[0].relation) == "batch <= 64"
    assert assumed[0].provenance.op_type == "assumption"


def test_conflict_from_concat_names_the_node():
    model = make_model([helper.make_node("Concat", ["x", "z"], ["c"], name="cat", axis=0)],
                       [V("x", TP.FLOAT, ["n", 3]), V("z", TP.FLOAT, ["m", 4])], [V("c", TP.FLOAT, None)])
    res = smtshape.analyze(model)
    assert len(res.conflicts) == 1
    conf = res.conflicts[0]
    assert conf.nodes == ["cat"]
    assert "3 == 4" in conf.explain() and "Concat node 'cat'" in conf.explain()
    assert res.consistent is False
    assert res.to_json()["consistent"] is False


def test_conflict_between_bind_and_assumption():
    res = smtshape.analyze(mlp(), assume=["batch == 2"], bind={"batch": 3})
    assert len(res.conflicts) == 1
    conf = res.conflicts[0]
    rels = sorted(str(c.relation) for c in conf.constraints)
    assert rels == ["batch == 2", "batch == 3"]
    assert {c.provenance.rule for c in conf.constraints} == {"bind", "assume"}
    kinds = [d.kind for d in res.diagnostics]
    assert "conflict" in kinds


def test_specialization_from_hard_coded_reshape():
    shape = numpy_helper.from_array(np.array([1, 196, 64], np.int64), "shape")
    model = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
                       [V("x", TP.FLOAT, [1, "seq", 64])], [V("y", TP.FLOAT, None)], [shape])
    res = smtshape.analyze(model)
    assert [(s.symbol, s.relation, s.value, s.nodes) for s in res.specializations] == \
        [("seq", "seq == 196", 196, ["rs"])]
    assert exprs(res, "x") == (1, 196, 64)
    assert res.conflicts == []
    # an assumption the user made is not a finding
    res = smtshape.analyze(mlp(), bind={"seq": 196})
    assert res.specializations == []


def test_diagnostics():
    model = make_model([helper.make_node("Mystery", ["x"], ["m"], name="myst", domain="com.example"),
                        helper.make_node("Relu", ["x"], ["z"], name="act")],
                       [V("x", TP.FLOAT, ["n", 4])], [V("m", TP.FLOAT, None), V("z", TP.FLOAT, None)],
                       opsets=(("", 18), ("com.example", 1)))
    res = smtshape.analyze(model, assume=["n <= 4096"], inputs_positive=True)
    no_rule = [d for d in res.diagnostics if d.kind == "no_rule"]
    assert len(no_rule) == 1 and no_rule[0].op_type == "Mystery" and no_rule[0].node == "myst"
    assumed = [d.message for d in res.diagnostics if d.kind == "assumption"]
    assert "assumed: n <= 4096" in assumed
    assert any("inputs_positive" in m for m in assumed)
    assert res.shape("m") is None
    assert exprs(res, "z") == (E.symbol("n"), 4)


# ------------------------------------------------------------------ export

def test_to_smtlib_parses_in_z3():
    res = smtshape.analyze(concat("matmul"))
    text = res.to_smtlib()
    s = z3.Solver()
    s.add(z3.parse_smt2_string(text))
    assert s.check() == z3.sat
    s.add(z3.Int("d.a") + z3.Int("d.b") != 1024)       # (every symbol is |d.<name>|)
    assert s.check() == z3.unsat
    # a model with a conflict exports its conflict too: the export is unsatisfiable, as the
    # model is; without the lines after the conflict marker it is the set the store answers from
    res = smtshape.analyze(mlp(), assume=["batch == 2"], bind={"batch": 3})
    assert res.conflicts
    text = res.to_smtlib()
    s = z3.Solver()
    s.add(z3.parse_smt2_string(text))
    assert s.check() == z3.unsat
    assert "[conflict]" in text and text.rstrip().endswith("(check-sat)")
    base = text.split("conflict(s): ")[0]
    s = z3.Solver()
    s.add(z3.parse_smt2_string(base + "(check-sat)"))
    assert s.check() == z3.sat


def test_save_round_trip(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(mlp(), str(src))
    res = smtshape.analyze(str(src), assume=["seq == 2 * batch"])
    out = tmp_path / "annotated.onnx"
    res.save(str(out))
    m = onnx.load(str(out))
    onnx.checker.check_model(m)
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    dims = [d.dim_param or d.dim_value for d in vi["h"].type.tensor_type.shape.dim]
    assert dims == ["batch", "2 * batch", 32]
    assert parse_expr(dims[1]) == 2 * batch
    assert [d.dim_param or d.dim_value for d in vi["y"].type.tensor_type.shape.dim] == dims
    assert sorted(os.listdir(tmp_path)) == ["annotated.onnx", "m.onnx"]
    # the analysis of the annotated model agrees with its annotations
    again = smtshape.analyze(str(out), assume=["seq == 2 * batch"])
    assert not [d for d in again.diagnostics if d.kind == "annotation"]
    assert exprs(again, "y") == (batch, 2 * batch, 32)


def test_save_refuses_to_overwrite_input(tmp_path):
    src = tmp_path / "m.onnx"
    onnx.save(mlp(), str(src))
    before = src.read_bytes()
    res = smtshape.analyze(str(src))
    with pytest.raises(smtshape.BadInput, match="refusing"):
        res.save(str(src))
    assert src.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]


def test_exactness_of_bounded_and_unknown_dims():
    model = make_model([helper.make_node("NonZero", ["x"], ["nz"], name="nzn"),
                        helper.make_node("Reshape", ["x", "s"], ["r"], name="rs")],
                       [V("x", TP.FLOAT, ["n", 4]), V("s", TP.INT64, [2])],
                       [V("nz", TP.INT64, None), V("r", TP.FLOAT, None)])
    res = smtshape.analyze(model)
    n = E.symbol("n")
    rank, count = res.shape("nz")
    assert rank.expr == 2 and rank.exactness is Exactness.EXACT
    assert count.exactness is Exactness.UPPER_BOUND and count.bound == 4 * n
    assert str(count) == f"{count.expr}<=4 * n"
    assert res.static_value(count) is None
    r0, r1 = res.shape("r")
    assert r0.exactness is Exactness.UNKNOWN and str(r0).startswith("?")
    assert res.evaluate({"n": 3})["nz"] == (2, None)
    assert res.prove(f"{r0.expr} * {r1.expr} == 4 * n") is Verdict.PROVEN


def test_saved_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    from smtshape.fileio import write_atomic
    out = tmp_path / "out.txt"
    write_atomic(out, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask
    os.chmod(out, 0o640)
    write_atomic(out, "y")                  # replacing keeps the existing mode
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640 and out.read_text() == "y"


def test_clear_caches_empties_every_memo_and_changes_no_result():
    # issue 20: the package's module-level memos are clearable between analyses
    import sys
    from smtshape.examples import demo_model
    m = demo_model()
    before = smtshape.analyze(m)
    shapes = {n: [str(d) for d in before.shape(n) or ()] for n in before.value_names}
    smtshape.clear_caches()
    memos = [v for name, mod in list(sys.modules.items()) if name.startswith("smtshape")
             for v in vars(mod).values() if hasattr(v, "cache_info")]
    assert memos and all(f.cache_info().currsize == 0 for f in memos)
    after = smtshape.analyze(m)
    assert {n: [str(d) for d in after.shape(n) or ()] for n in after.value_names} == shapes


def test_integer_types_have_one_home():
    from smtshape import irtypes as ir
    from smtshape import numeric
    from smtshape.context import INT_TYPES
    assert set(numeric.INT_RANGE) == ir.INTEGER_TYPES
    assert INT_TYPES is ir.INT_OR_BOOL_TYPES and ir.INT_OR_BOOL_TYPES - ir.INTEGER_TYPES == {ir.DataType.BOOL}
