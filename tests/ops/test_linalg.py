"""MatMul / Gemm / Einsum rules: exact expressions, constraints, conflicts, and
property tests against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
import onnxruntime as ort
from hypothesis import given, settings, strategies as st
from onnx import TensorProto

from smtshape.dim import Exactness
from smtshape.testing import exprs, infer_node, node_model, run_onnxruntime, ts, unchecked

from .test_shape import assert_refused, assert_runs_like_ort, check_backend, conflict_rules


def run_ort(op, arrays, attrs=None, opset=18, out_types=(TensorProto.FLOAT,)):
    """Run a one-node model whose inputs x0.. are graph inputs with symbolic dims."""
    specs = [ts("float", [f"d{i}_{k}" for k in range(a.ndim)]) for i, a in enumerate(arrays)]
    m = node_model(op, specs, attrs, opset=opset, n_outputs=len(out_types))
    for o, t in zip(m.graph.output, out_types):
        o.type.tensor_type.elem_type = t
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [r.shape for r in sess.run(None, {f"x{i}": a for i, a in enumerate(arrays)})]


def binding(spec_shapes, arrays):
    env = {}
    for s, a in zip(spec_shapes, arrays):
        for d, v in zip(s, a.shape):
            if isinstance(d, str):
                env[d] = v
    return env


def rel_strs(res):
    return [str(c.relation) for c in res.constraints]


# ---------------------------------------------------------------- MatMul
def test_matmul_symbolic_batch_and_inner():
    res = infer_node("MatMul", [ts("float", ["B", "S", "K"]), ts("float", ["K", "N"])])
    assert exprs(res, "y0") == ("B", "S", "N")
    assert res.conflicts == []


def test_matmul_inner_constraint_emitted():
    res = infer_node("MatMul", [ts("float", ["S", "K1"]), ts("float", ["K2", "N"])])
    assert exprs(res, "y0") == ("S", "N")
    cs = [c for c in res.constraints if c.provenance.rule == "matmul.inner"]
    assert len(cs) == 1 and "K1" in cs[0].provenance.message and "K2" in cs[0].provenance.message
    assert res.equal("x0", 1, "x1", 0) is True


def test_matmul_mismatch_is_conflict_naming_node_and_values():
    res = infer_node("MatMul", [ts("float", [3, 4]), ts("float", [5, 6])])
    assert res.conflicts, "a 4 vs 5 inner mismatch must be a conflict"
    c = res.conflicts[0]
    assert "node" in c.nodes
    text = c.explain()
    assert "4" in text and "5" in text and "matmul.inner" in text


def test_matmul_1d_promotion():
    assert exprs(infer_node("MatMul", [ts("float", ["K"]), ts("float", ["B", "K", "N"])]), "y0") == ("B", "N")
    assert exprs(infer_node("MatMul", [ts("float", ["B", "M", "K"]), ts("float", ["K"])]), "y0") == ("B", "M")
    assert exprs(infer_node("MatMul", [ts("float", [7]), ts("float", [7])]), "y0") == ()


def test_matmul_batch_broadcast_constraint():
    res = infer_node("MatMul", [ts("float", ["A", 1, 2, 3]), ts("float", ["B", 3, 4])])
    assert exprs(res, "y0")[1:] == ("B", 2, 4)
    res = infer_node("MatMul", [ts("float", ["A", "C", 2, 3]), ts("float", ["B", 3, 4])])
    assert any(c.provenance.rule == "matmul.batch" for c in res.constraints)
    res2 = infer_node("MatMul", [ts("float", [2, 5, 3]), ts("float", [4, 3, 6])])
    assert res2.conflicts and "node" in res2.conflicts[0].nodes


def test_matmul_rank0_fails_cleanly():
    res = infer_node("MatMul", [np.array(1.0, np.float32), ts("float", [3])])
    assert res.shape("y0") is None


def test_matmul_integer_dtype():
    import onnx_ir as ir
    res = infer_node("MatMulInteger", [ts("uint8", ["M", "K"]), ts("uint8", ["K", "N"])], opset=10)
    assert exprs(res, "y0") == ("M", "N")
    assert res.dtype("y0") == ir.DataType.INT32


@st.composite
def matmul_case(draw):
    ra, rb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    k = draw(st.integers(0, 4))
    batch = [draw(st.integers(0, 3)) for _ in range(max(ra, rb) - 2)] if max(ra, rb) > 2 else []
    def batch_for(r):
        n = max(r - 2, 0)
        dims = batch[len(batch) - n:] if n else []
        return [d if draw(st.booleans()) else 1 for d in dims]
    a = ([k] if ra == 1 else batch_for(ra) + [draw(st.integers(0, 4)), k])
    b = ([k] if rb == 1 else batch_for(rb) + [k, draw(st.integers(0, 4))])
    return a, b


@settings(max_examples=30, deadline=None)
@given(matmul_case())
def test_matmul_matches_onnxruntime(case):
    a, b = case
    arrays = [np.random.rand(*a).astype(np.float32), np.random.rand(*b).astype(np.float32)]
    specs = [[f"a{k}" for k in range(len(a))], [f"b{k}" for k in range(len(b))]]
    res = infer_node("MatMul", [ts("float", specs[0]), ts("float", specs[1])])
    expected = np.matmul(*arrays).shape
    if 0 in expected or 0 in a or 0 in b:
        # onnxruntime mishandles zero-sized batches (1 vs 0 gives 1) and some zero-sized
        # 1-D promotions; the spec's numpy semantics are the reference there
        truth = expected
    else:
        truth = run_ort("MatMul", arrays)[0]
    got = res.evaluate(binding(specs, arrays))["y0"]
    assert got == truth


# ---------------------------------------------------------------- Gemm
def test_gemm_trans_flags():
    res = infer_node("Gemm", [ts("float", ["K", "M"]), ts("float", ["N", "K"]), ts("float", ["N"])],
                     {"transA": 1, "transB": 1})
    assert exprs(res, "y0") == ("M", "N")
    assert res.conflicts == []


def test_gemm_inner_mismatch_conflict():
    res = infer_node("Gemm", [ts("float", [2, 3]), ts("float", [4, 5])])
    assert res.conflicts and "node" in res.conflicts[0].nodes
    assert "gemm.inner" in res.conflicts[0].explain()


def test_gemm_c_broadcast_constraint_and_conflict():
    res = infer_node("Gemm", [ts("float", ["M", "K"]), ts("float", ["K", "N"]), ts("float", ["C0", "C1"])])
    rels = [c for c in res.constraints if c.provenance.rule == "gemm.c_broadcast"]
    assert len(rels) == 2
    bad = infer_node("Gemm", [ts("float", [2, 3]), ts("float", [3, 5]), ts("float", [4])])
    assert bad.conflicts and "gemm.c_broadcast" in bad.conflicts[0].explain()
    ok = infer_node("Gemm", [ts("float", [2, 3]), ts("float", [3, 5]), ts("float", [1, 5])])
    assert ok.conflicts == [] and exprs(ok, "y0") == (2, 5)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.booleans(), st.booleans(),
       st.sampled_from(["none", "scalar", "row", "col", "full"]))
def test_gemm_matches_onnxruntime(m, k, n, ta, tb, cshape):
    a = (k, m) if ta else (m, k)
    b = (n, k) if tb else (k, n)
    c = {"none": None, "scalar": (1,), "row": (n,), "col": (m, 1), "full": (m, n)}[cshape]
    arrays = [np.random.rand(*a).astype(np.float32), np.random.rand(*b).astype(np.float32)]
    if c is not None:
        arrays.append(np.random.rand(*c).astype(np.float32))
    specs = [[f"s{i}_{j}" for j in range(x.ndim)] for i, x in enumerate(arrays)]
    attrs = {"transA": int(ta), "transB": int(tb)}
    res = infer_node("Gemm", [ts("float", s) for s in specs], attrs)
    truth = run_ort("Gemm", arrays, attrs)[0]
    assert res.evaluate(binding(specs, arrays))["y0"] == truth


# ---------------------------------------------------------------- Einsum
def test_einsum_explicit_and_letter_constraint():
    res = infer_node("Einsum", [ts("float", ["B", "I", "J"]), ts("float", ["B2", "J2", "K"])],
                     {"equation": "bij,bjk->bik"})
    assert exprs(res, "y0")[1:] == ("I", "K")
    rules = [c.provenance.rule for c in res.constraints]
    assert rules.count("einsum.letter") == 2
    # a letter's sizes broadcast across operands (onnxruntime and numpy run J = 1 against any J2)
    assert res.equal("x0", 2, "x1", 1) is None
    assert res.prove("J == J2 or J == 1 or J2 == 1").name == "PROVEN"


def test_einsum_letter_broadcasts_a_size_1():
    """The issue's case: 'bij,bjk->bik' with a[2, 3, 1] and b[2, L, 4] forced L == 1; onnxruntime,
    numpy and onnx's reference evaluator broadcast the 1 (and sum over L)."""
    res = infer_node("Einsum", [ts("float", [2, 3, 1]), ts("float", [2, "L", 4])], {"equation": "bij,bjk->bik"})
    assert exprs(res, "y0") == (2, 3, 4) and not res.specializations and not res.conflicts
    res = infer_node("Einsum", [ts("float", ["I", 1]), ts("float", ["I2", "J"])], {"equation": "ij,ij->ij"})
    assert exprs(res, "y0") == ("bcast(I, I2)", "J") and not res.specializations
    # a letter repeated in one operand (a diagonal) does not broadcast: every runtime refuses [1, 3]
    assert_refused("Einsum", [ts(F, [1, 3])], {"equation": "ii->i"}, "einsum.letter", opset=12)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["bij,bjk->bik", "ij,jk->ik", "ij,ij->ij", "ij,kj->ik", "i,i->i", "i,i->", "ij,j->i"]),
       st.lists(st.integers(0, 2), min_size=6, max_size=6), st.lists(st.booleans(), min_size=6, max_size=6))
def test_einsum_letter_broadcast_matches_both_runtimes(eqn, sizes, ones):
    """Sizes of a letter that differ by a 1 broadcast in onnxruntime and onnx's reference
    evaluator: the symbolic result evaluates to both, on both sides of the edge (sizes 0, 1, 2:
    onnxruntime 1.32 kills its process with a floating point exception on some zero-sized
    operands, 'ij,kj->ik' with a[0, 0] and b[3, 0], with or without broadcasting: there only
    the reference evaluator is run)."""
    from onnx.reference import ReferenceEvaluator
    lhs = eqn.split("->")[0].split(",")
    letter, shapes = {}, []
    for t in lhs:
        dims = []
        for ch in t:
            letter.setdefault(ch, sizes[len(letter)])
            dims.append(1 if ones[len(dims) + 3 * len(shapes)] else letter[ch])
        shapes.append(dims)
    arrays = [np.random.rand(*s).astype(np.float32) for s in shapes]
    specs = [[f"e{i}_{j}" for j in range(len(s))] for i, s in enumerate(shapes)]
    m = node_model("Einsum", [ts("float", s) for s in specs], {"equation": eqn}, opset=12)
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    truth = []
    runs = [lambda: run_onnxruntime(m, feeds), lambda: ReferenceEvaluator(m).run(None, feeds)]
    if any(0 in s for s in shapes):
        runs[0] = runs[1]   # (onnxruntime may kill the process on zero-sized operands: see above)
    for run in runs:
        try:
            truth.append(tuple(run()[0].shape))
        except Exception:
            truth.append(None)      # sizes that do not broadcast
    res = infer_node("Einsum", [ts("float", s) for s in specs], {"equation": eqn}, opset=12)
    assert not res.specializations
    assert truth[0] == truth[1]
    if truth[0] is None:
        return
    assert res.evaluate(binding(specs, arrays))["y0"] == truth[0]
    assert all(s.exactness is Exactness.EXACT for s in res.shape("y0"))


def test_einsum_implicit_output_alphabetical():
    res = infer_node("Einsum", [ts("float", [2, 3]), ts("float", [3, 4])], {"equation": "ji,ik"})
    # implicit output: letters used once, alphabetical: j, k
    assert exprs(res, "y0") == (2, 4)


def test_einsum_ellipsis_broadcast():
    """The '...' axes broadcast; every '...' stands for the same number of axes (the spec: "every
    occurrence of ellipsis in the equation must represent the same number of dimensions"; numpy
    aligns different counts, onnxruntime refuses them)."""
    res = infer_node("Einsum", [ts("float", ["A", 1, 2, 3]), ts("float", [1, 5, 3, 4])],
                     {"equation": "...ij,...jk->...ik"})
    assert exprs(res, "y0") == ("A", 5, 2, 4)
    assert_refused("Einsum", [ts("float", [2, 1, 2, 3]), ts("float", [5, 3, 4])], {"equation": "...ij,...jk->...ik"},
                   "einsum.ellipsis")


def test_einsum_mismatch_conflict_and_bad_equation():
    res = infer_node("Einsum", [ts("float", [2, 3]), ts("float", [4, 5])], {"equation": "ij,jk->ik"})
    assert res.conflicts and "node" in res.conflicts[0].nodes
    bad = infer_node("Einsum", [ts("float", [2, 3])], {"equation": "ij,jk->ik"})
    assert bad.shape("y0") is None


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["ij,jk->ik", "bij,bjk->bik", "ij->ji", "ii->i", "ij,ij->ij", "...ij,...jk->...ik",
                        "ij,jk", "bhqd,bhkd->bhqk", "i,j->ij", "ij->"]),
       st.lists(st.integers(1, 4), min_size=8, max_size=8))
def test_einsum_matches_onnxruntime(eqn, sizes):
    lhs = eqn.split("->")[0].split(",")
    letter = {}
    ell = sizes[6:8]
    shapes = []
    for t in lhs:
        dims = []
        for ch in t.replace("...", "."):
            if ch == ".":
                dims.extend(ell)
            else:
                letter.setdefault(ch, sizes[len(letter) % 6])
                dims.append(letter[ch])
        shapes.append(dims)
    arrays = [np.random.rand(*s).astype(np.float32) for s in shapes]
    specs = [[f"e{i}_{j}" for j in range(len(s))] for i, s in enumerate(shapes)]
    res = infer_node("Einsum", [ts("float", s) for s in specs], {"equation": eqn})
    truth = run_ort("Einsum", arrays, {"equation": eqn})[0]
    assert res.evaluate(binding(specs, arrays))["y0"] == truth
    for s in res.shape("y0"):
        assert s.exactness is Exactness.EXACT


# ---------------------------------------------------------------- preconditions of the spec (conflicts)
F = "float"
PRECONDITIONS = [
    # (op, inputs, attrs, opset, rule, onnxruntime refuses it too)
    ("MatMul", [ts(F, []), ts(F, [3])], {}, 18, "matmul.rank", True),
    ("MatMul", [ts(F, [2, 3]), ts(F, [4, 5])], {}, 18, "matmul.inner", True),
    ("Gemm", [ts(F, [2, 3, 4]), ts(F, [4, 5])], {}, 18, "gemm.rank", True),
    ("Gemm", [ts(F, [2, 3]), ts(F, [3])], {}, 18, "gemm.rank", True),
    ("Gemm", [ts(F, [2, 3]), ts(F, [3, 4]), ts(F, [1, 2, 4])], {}, 18, "gemm.c_rank", True),
    ("Gemm", [ts(F, [2, 3]), ts(F, [3, 4]), ts(F, [3])], {}, 18, "gemm.c_broadcast", True),
    ("Einsum", [ts(F, [2, 3])], {"equation": "ij,jk->ik"}, 12, "einsum.operands", True),
    ("Einsum", [ts(F, [2, 3]), ts(F, [3, 4])], {"equation": "ij->ij"}, 12, "einsum.operands", True),
    ("Einsum", [ts(F, [])], {"equation": "i->i"}, 12, "einsum.rank", True),
    ("Einsum", [ts(F, [2])], {"equation": "...ij->...ij"}, 12, "einsum.rank", True),
    ("Einsum", [ts(F, [2, 3])], {"equation": "ij->ii"}, 12, "einsum.output", True),
    ("Einsum", [ts(F, [2, 3])], {"equation": "ij->k"}, 12, "einsum.output", True),
    ("Einsum", [ts(F, [2, 3])], {"equation": "i1->i"}, 12, "einsum.equation", True),
    ("Einsum", [ts(F, [2, 3])], {"equation": "ij->j->i"}, 12, "einsum.equation", True),
    ("Einsum", [ts(F, [2, 3]), ts(F, [4, 3])], {"equation": "ij,jk->ik"}, 12, "einsum.letter", True),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,rule,ort", PRECONDITIONS,
                         ids=[f"{c[0]}-{c[4]}-{k}" for k, c in enumerate(PRECONDITIONS)])
def test_precondition_is_a_conflict(op, inputs, attrs, opset, rule, ort):
    assert_refused(op, inputs, attrs, rule, opset=opset, ort=ort)


def test_einsum_valid_forms_run():
    assert_runs_like_ort("Einsum", [ts(F, [2, 3])], {"equation": "iJ->Ji"}, opset=12)       # upper case letters
    assert_runs_like_ort("Einsum", [ts(F, [2, 3])], {"equation": "i j -> j i"}, opset=12)   # spaces
    assert_runs_like_ort("Einsum", [ts(F, [3, 3])], {"equation": "ii"}, opset=12)           # trace: a scalar
    assert_runs_like_ort("Einsum", [ts(F, [2, 3])], {"equation": "ij->...ij"}, opset=12)    # '...' of no axis


def test_einsum_operand_of_unknown_rank_keeps_the_known_letters():
    res = infer_node("Einsum", [ts(F, None), ts(F, [3, 4])], {"equation": "ij,jk->ik"})
    s = res.shape("y0")
    assert len(s) == 2 and s[1].expr == 4 and s[0].exactness is not Exactness.EXACT
    assert not res.conflicts and not unchecked(res)


def test_onnx_backend_node_tests():
    """ONNX's backend node tests of these ops: no conflict, nothing unchecked, right dims."""
    check_backend(*("MatMul", "MatMulInteger", "QLinearMatMul", "Gemm", "Einsum"), min_cases=20)
