"""A cold start pays only for what the command needs (issues 8 and 22): ``import smtshape``
imports neither sympy, numpy nor z3; analyzing a model whose dims are all static imports
none of them either (nor onnx, onnx_ir); analyzing a model file imports neither onnx nor
onnx_ir (nor z3 when no question needs it), and the command exits with its code and all of
its output although it skips interpreter teardown.  Each check runs in a fresh process
and reads ``sys.modules``; nothing here is timed (speed: ``benchmarks/bench.py``)."""
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import smtshape.examples


def _run(code: str, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


# In the child: records, for each watched module, the smtshape module whose code imported
# it first (the stand-ins of ``smtshape.lazy`` skipped: their caller is the one that asked).
_PROBE = r"""
import sys
first = {}
WATCH = ("sympy", "numpy", "z3", "onnx", "onnx_ir", "importlib.metadata")


class Probe:
    def find_spec(self, name, path=None, target=None):
        if name in WATCH and name not in first and sys._getframe(2).f_code.co_name == "_find_and_load_unlocked":
            f = sys._getframe(1)                  # (an import, not importlib.util.find_spec)
            while f is not None and (not f.f_globals.get("__name__", "").startswith("smtshape")
                                     or f.f_globals["__name__"] == "smtshape.lazy"):
                f = f.f_back
            first[name] = f.f_globals["__name__"] if f is not None else "(not smtshape)"
        return None


sys.meta_path.insert(0, Probe())
"""

def _importers(code: str, *args) -> dict:
    """{watched module: the smtshape module that imported it} after running ``code``."""
    r = _run(_PROBE + code + "\nimport json\nprint(json.dumps(first))", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_smtshape_and_its_command_line_import_no_heavy_module():
    assert _importers("import smtshape") == {}
    assert _importers("import smtshape.cli") == {}
    # (naming the analysis' exports imports the analysis, and still no heavy module)
    assert _importers("import smtshape\nsmtshape.Verdict, smtshape.Result, smtshape.analyze") == {}


def _static_model(path):
    """Conv -> Relu -> Flatten -> Gemm -> Relu over float weights, every dim static (a
    verification model's shape)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((10, 144)).astype(np.float32), "fw"),
             numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "fb")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], transB=1),
             helper.make_node("Relu", ["g"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(m.SerializeToString())


def test_a_static_model_imports_neither_sympy_numpy_nor_z3(tmp_path):
    """Library and command line: a model whose dims are all static needs no symbolic
    algebra, no array and no solver (and the command no scan of every installed
    distribution's metadata when none declares a rule plug-in).  The store package and the
    Z3 translation read sympy through ``lazy.py`` too (issue 22): no importer is excused."""
    p = tmp_path / "static.onnx"
    _static_model(p)
    lib = _importers("import smtshape\n"
                     "r = smtshape.analyze(sys.argv[1])\n"
                     "assert r.consistent is True and [str(d) for d in r.shape('y')] == ['1', '10'], r.shapes()\n"
                     "r.shapes(), r.specializations, r.diagnostics, r.conflicts", str(p))
    assert lib == {}, lib
    for argv in (["check"], ["infer"], ["infer", "--json"], ["check", "--json"]):
        cli = _importers("import io, contextlib, smtshape.cli\n"
                         f"with contextlib.redirect_stdout(io.StringIO()) as out:\n"
                         f"    code = smtshape.cli.main({argv!r} + [sys.argv[1]])\n"
                         "assert code == 0 and 'consistent' in out.getvalue(), (code, out.getvalue())", str(p))
        assert cli == {}, (argv, cli)


def test_a_symbolic_model_imports_sympy_when_its_first_term_is_built(tmp_path):
    """The expression layer, not an import line, brings sympy in (and numpy only where a
    rule reads an array: not here)."""
    p = tmp_path / "m.onnx"
    _model(p)
    got = _importers("import smtshape\nr = smtshape.analyze(sys.argv[1])\nassert str(r.shape('y')[0]) == 'N'",
                     str(p))
    assert set(got) == {"sympy"}, got


def _exporter_model(path):
    """The exporters' shape arithmetic on a shape vector: Shape -> Slice -> Split ->
    Transpose (1-D) -> Concat -> Reshape, and an Expand to a run-time shape."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "z", "two"], ["head"]),
             helper.make_node("Split", ["head", "ones"], ["a", "b"], axis=0),
             helper.make_node("Transpose", ["a"], ["at"], perm=[0]),
             helper.make_node("Concat", ["at", "b", "c"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["r"]),
             helper.make_node("Shape", ["r"], ["rs"]),
             helper.make_node("Expand", ["r", "rs"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["N", "S", 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)],
                          [i64("z", [0]), i64("two", [2]), i64("ones", [1, 1]), i64("c", [2, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(m.SerializeToString())


def test_shape_vector_arithmetic_imports_no_numpy(tmp_path):
    """Slice, Split, Transpose and Expand of a 1-D shape vector pick its elements in Python
    (bert_legacy imported numpy for a Slice of one: 70 ms of a cold check)."""
    p = tmp_path / "m.onnx"
    _exporter_model(p)
    got = _importers("import smtshape\nr = smtshape.analyze(sys.argv[1])\n"
                     "assert [str(d) for d in r.shape('y')] == ['N', 'S', '2', '4'], r.shapes()", str(p))
    assert set(got) == {"sympy"}, got


def _model(path):
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Concat", ["s", "c"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["r"]),
             helper.make_node("Relu", ["r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1], np.int64), "c")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


@pytest.mark.parametrize("policy", ["refine", "skip", "strict"])
def test_analyzing_a_file_imports_neither_onnx_nor_onnx_ir(tmp_path, policy):
    """(Under ``skip``, ``from .irtypes import is_container`` once imported onnx_ir: the
    import system asked the module for ``__path__`` and its fallback answered from onnx_ir.)"""
    p = tmp_path / "m.onnx"
    _model(p)
    r = _run("import sys, json, smtshape\n"
             f"res = smtshape.analyze(sys.argv[1], policy={policy!r})\n"
             "print(json.dumps({'shape': [str(d) for d in res.shape('y')], 'consistent': res.consistent,\n"
             "                  'onnx': 'onnx' in sys.modules, 'onnx_ir': 'onnx_ir' in sys.modules,\n"
             "                  'z3': 'z3' in sys.modules}))", str(p))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # (no question here needs the solver: z3 is imported on first use only, lazyz3.py)
    assert out == {"shape": ["N", "4", "1"], "consistent": True, "onnx": False, "onnx_ir": False, "z3": False}


def test_a_model_proto_from_onnx_is_still_accepted_after_a_cold_analysis(tmp_path):
    """The protobuf module loaded on its own and onnx's are the same classes."""
    p = tmp_path / "m.onnx"
    _model(p)
    r = _run("import sys, smtshape\n"
             "a = smtshape.analyze(sys.argv[1])\n"
             "import onnx\n"
             "b = smtshape.analyze(onnx.load(sys.argv[1]))\n"
             "print(type(a.model.proto) is onnx.ModelProto, [str(d) for d in b.shape('y')])", str(p))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True ['N', '4', '1']"


def test_reading_a_file_skips_protobufs_python_descriptor_pool(tmp_path):
    """With protobuf's upb backend the message classes come from the serialized descriptor
    alone: protobuf's pure-Python pool, text format and message modules are not imported
    (37 M instructions of every cold start).  The classes are onnx's own, nested ones
    included, and a message read so survives ``import onnx``, a copy and a pickle."""
    p = tmp_path / "m.onnx"
    _model(p)
    r = _run("import sys, pickle, smtshape\n"
             "a = smtshape.analyze(sys.argv[1])\n"
             "light = not any(m in sys.modules for m in ('google.protobuf.descriptor_pool',\n"
             "                'google.protobuf.text_format', 'google.protobuf.internal.python_message'))\n"
             "import onnx\n"
             "m = a.model.proto\n"
             "c = onnx.ModelProto(); c.CopyFrom(m)\n"
             "print(light, type(m) is onnx.ModelProto, type(m.graph.input[0].type.tensor_type) is onnx.TypeProto.Tensor,\n"
             "      pickle.loads(pickle.dumps(m)) == c, onnx.TypeProto.Tensor.__qualname__)", str(p))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "True", "TypeProto.Tensor"]


def test_with_protobufs_python_backend_the_generated_file_is_run(tmp_path):
    """PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python: onnx's classes are protobuf's pure-Python
    ones, which the upb backend's could not be copied into."""
    import os
    p = tmp_path / "m.onnx"
    _model(p)
    code = ("import sys, smtshape\n"
            "a = smtshape.analyze(sys.argv[1])\n"
            "import onnx\n"
            "c = onnx.ModelProto(); c.CopyFrom(a.model.proto)\n"
            "print(type(a.model.proto) is onnx.ModelProto, [str(d) for d in a.shape('y')])")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True ['N', '4', '1']"


def test_without_the_serialized_descriptor_the_generated_file_is_run(tmp_path):
    """Another layout of the generated file: its code holds no serialized descriptor, and
    ``_upb_classes`` declines (``proto_module`` then runs the file, as before)."""
    import importlib.util
    from smtshape.reader import _upb_classes
    f = tmp_path / "other_pb2.py"
    f.write_text("DATA = b'not a descriptor'\n")
    assert _upb_classes(importlib.util.spec_from_file_location("other_pb2", str(f))) is None


def test_the_command_exits_with_its_code_and_full_output(tmp_path):
    p = tmp_path / "demo.onnx"
    with open(p, "wb") as f:
        f.write(smtshape.examples.demo_model().SerializeToString())
    r = subprocess.run([sys.executable, "-m", "smtshape", "infer", str(p), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)       # complete JSON: nothing lost by exiting without teardown
    assert doc["consistent"] is True
    bad = subprocess.run([sys.executable, "-m", "smtshape", "check", str(tmp_path / "missing.onnx")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not found" in bad.stderr


def _bounded_model(path):
    """A position table added to the input: the broadcast forces ``1 <= S <= 128`` (as the
    corpus' encoders force ``seq <= 128``)."""
    pos = numpy_helper.from_array(np.zeros((128, 8), np.float32), "pos")
    nodes = [helper.make_node("Add", ["x", "pos"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, ["B", "S", 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)], [pos])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(m.SerializeToString())


def test_findings_one_constraint_forces_need_no_solver(tmp_path):
    """``smtshape check`` of a model whose findings are each forced by one constraint
    (``S >= 1``, ``S <= 128``) finds and explains them without Z3: the bound the fast path
    entails is attained at a uniform model, and the one constraint alone implies it
    (qwen2_legacy and bert_legacy imported z3 for this: about 0.1 s of a cold check)."""
    p = tmp_path / "m.onnx"
    _bounded_model(p)
    got = _importers("import io, contextlib, smtshape.cli\n"
                     "with contextlib.redirect_stdout(io.StringIO()) as out, "
                     "contextlib.redirect_stderr(io.StringIO()) as err:\n"
                     "    code = smtshape.cli.main(['check', sys.argv[1]])\n"
                     "text = out.getvalue() + err.getvalue()\n"
                     "assert code == 0 and 'S >= 1' in text and 'S <= 128' in text, (code, text)", str(p))
    assert "z3" not in got, got


def _check_loads(path, *modules) -> tuple:
    """``smtshape check path`` in a fresh process, its output discarded: (exit code, for
    each of ``modules``, whether it was imported)."""
    r = _run("import io, contextlib, json, sys, smtshape.cli\n"
             "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
             "    code = smtshape.cli.main(['check', sys.argv[1]])\n"
             "print(json.dumps([code, [m in sys.modules for m in sys.argv[2:]]]))", str(path), *modules)
    assert r.returncode == 0, r.stderr
    code, loaded = json.loads(r.stdout.strip().splitlines()[-1])
    return code, loaded


def test_linear_dims_never_run_sympys_add_flatten(tmp_path):
    """Sums, signs and min / max of linear forms are made without ``Add.flatten``, whose
    first call in a process imports ``sympy.tensor`` and ``sympy.combinatorics`` (about
    60 ms, the largest cost of a cold check after sympy itself): a check of the models
    here (sums of dims, a broadcast against a table, the findings) imports neither."""
    for make in (_model, _exporter_model, _bounded_model):
        p = tmp_path / f"{make.__name__}.onnx"
        make(p)
        got = _check_loads(p, "sympy", "sympy.tensor.tensor", "sympy.combinatorics")
        assert got == (0, [True, False, False]), (make.__name__, got)


def test_a_symbolic_check_defines_no_dataclass(tmp_path):
    """The analysis' value types are plain classes: a dataclass costs about 0.7 ms to define,
    and the 16 of them that a check used to define (with the ``dataclasses`` module) were 46 M
    instructions of a cold ``check`` of bert_legacy (1,297 M -> 1,251 M)."""
    p = tmp_path / "m.onnx"
    p.write_bytes(smtshape.examples.demo_model().SerializeToString())
    assert _check_loads(p, "sympy", "dataclasses") == (0, [True, False])
