"""What a new user trips on (issue 21, defects 4, 5, 8, 9): options, exit codes, explanations
with their context, stderr / JSON discipline, plurals, -o confirmation, progress, constraint
files on models with other dim names, the benchmark graphs."""
import io
import json
import re
from pathlib import Path

import onnx
from onnx import TensorProto as TP
from onnx import helper

import smtshape
from smtshape import report
from smtshape.cli import main
from smtshape.examples import demo_model

REPO = Path(smtshape.__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
V = helper.make_tensor_value_info


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def demo(tmp_path) -> Path:
    p = tmp_path / "demo.onnx"
    onnx.save(demo_model(), str(p))
    return p


# ------------------------------------------------------------------ defect 4: options

def test_options_are_never_abbreviated(tmp_path, capsys):
    p = demo(tmp_path)
    for flag, meant in (("--find", "--findings"), ("--no-broad", "--no-broadcast-one"),
                        ("--inputs-pos", "--inputs-positive")):
        code, out, err = run(capsys, "infer", p, flag)
        assert code == 2 and out == "" and f"did you mean {meant}" in err, err


def test_onnxruntime_input_flag_names_the_model_not_inputs_positive(tmp_path, capsys):
    """``smtshape infer --input m.onnx`` silently meant --inputs-positive."""
    p = demo(tmp_path)
    code, out, _ = run(capsys, "infer", "--input", p, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["source"] == str(p)
    assert not [a for a in doc["assumptions"] if a["kind"] == "domain"]      # no inputs_positive
    code, out, _ = run(capsys, "query", "--input", p, "seq <= 128")
    assert code == 0 and out.startswith("PROVEN")
    code, _, err = run(capsys, "infer", p, "--input", tmp_path / "other.onnx")
    assert code == 2 and "two models given" in err


def test_onnxruntime_spellings_accepted_where_they_mean_the_same(tmp_path, capsys):
    p = demo(tmp_path)
    code, _, err = run(capsys, "infer", "--input", p, "--output", tmp_path / "o.onnx", "--save_as_external_data",
                       "--all_tensors_to_one_file", "--external_data_location", "w.bin",
                       "--external_data_size_threshold", "0", "--findings")
    assert code == 0 and (tmp_path / "w.bin").exists()
    for flag in ("--auto_merge", "--guess_output_rank", "--int_max=100", "--verbose"):
        code, _, err = run(capsys, "infer", p, flag)
        assert code == 2 and "symbolic_shape_infer" in err and "is not an smtshape option" in err


# ------------------------------------------------------------------ defect 5: one table of exit codes

def test_help_shows_the_one_table_of_exit_codes(capsys):
    from smtshape.cli import EXIT_CODES, QUERY_EXIT_CODES, exit_codes_text
    code, out, _ = run(capsys, "query", "--help")
    assert code == 0 and exit_codes_text("query") in out
    for verdict, n in QUERY_EXIT_CODES.items():
        assert re.search(rf"^\s+{n}\s+.*{verdict}", out, re.M), verdict      # 6 CONTINGENT, 7 UNKNOWN
    assert re.search(r"^\s+3\s+internal error: a bug", out, re.M)
    code, out, _ = run(capsys, "--help")
    assert all(f"  {c:<4d}" in out for c, _, _ in EXIT_CODES)


def test_query_exit_codes_are_the_tables(tmp_path, capsys):
    from smtshape.cli import QUERY_EXIT_CODES
    p = demo(tmp_path)
    for claim, verdict in (("seq <= 128", "PROVEN"), ("seq == 200", "REFUTED"), ("seq == 64", "CONTINGENT")):
        code, out, _ = run(capsys, "query", p, claim)
        assert out.startswith(verdict) and code == QUERY_EXIT_CODES[verdict]
    assert QUERY_EXIT_CODES == {"PROVEN": 0, "REFUTED": 1, "CONTINGENT": 6, "UNKNOWN": 7}


# ------------------------------------------------------------------ defect 8: explanations keep their context

def test_a_conflict_under_a_binding_names_the_binding_and_the_limit_it_breaks(capsys):
    code, out, _ = run(capsys, "check", CORPUS / "gpt2_legacy.onnx", "--bind", "seq=200")
    assert code == 1
    assert "under the bindings and assumptions given: binding seq = 200" in out
    assert "seq <= 128" in out and "(forced by '/m/transformer/wpe/Gather')" in out
    assert "the binding seq = 200 breaks the model's limit seq <= 128" in out


def test_a_query_on_a_data_dependent_dim_names_the_runtime_quantity(capsys):
    code, out, _ = run(capsys, "query", CORPUS / "toy_datadep_legacy.onnx", "output_0[0] == 3")
    assert code == 6 and "(any input)" not in out
    assert re.search(r"holds at .*at run time nonzero_n = 3 \(NonZero node '/NonZero'\)", out)
    assert re.search(r"fails at .*at run time nonzero_n = \d+ \(NonZero node '/NonZero'\)", out)


def test_a_query_answer_names_its_bindings_and_assumptions(tmp_path, capsys):
    code, out, _ = run(capsys, "query", demo(tmp_path), "seq <= 100", "--bind", "batch=2", "--assume",
                       "seq <= 100")
    assert code == 0 and "under binding batch = 2; assumption seq <= 100" in out


def test_long_dims_are_never_cut_inside_a_name():
    for text in ("?reshape_unknown_dim_17 + nonzero_count_of_node_encoder_layer_0",
                 "nonzero_n_12<=cols * rows * batch_size_of_the_input + sequence_length",
                 "(((height // 8) * (width // 8) + 9223372036854775808) % 18446744073709551616 + 1)"):
        cut = report.abbreviate(text)
        assert "..." in cut and len(cut) <= 45
        whole = set(re.findall(r"[A-Za-z0-9_]+", text))
        assert set(re.findall(r"[A-Za-z0-9_]+", cut)) <= whole, cut     # only whole names and numbers


# ------------------------------------------------------------------ defect 9: small things

def test_check_prints_warnings_on_stderr(tmp_path, capsys):
    code, out, err = run(capsys, "check", demo(tmp_path))
    assert code == 0 and "warning:" not in out
    assert "warning: specialization: the model forces seq <= 128" in err


def test_json_errors_are_json(tmp_path, capsys):
    code, out, err = run(capsys, "infer", tmp_path / "missing.onnx", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["error"]["kind"] == "bad_input" and doc["error"]["exit_code"] == 2
    assert "not found" in doc["error"]["message"] and err.startswith("smtshape: error:")
    code, out, _ = run(capsys, "query", demo(tmp_path), "nope == 1", "--json")
    assert code == 2 and "unknown dim name 'nope'" in json.loads(out)["error"]["message"]


def test_counts_are_plural_only_when_they_are_many(tmp_path, capsys):
    code, out, _ = run(capsys, "check", demo(tmp_path))
    assert code == 0 and re.search(r"\(27 values, 1 constraint\)", out), out
    assert report.plural(1, "identity") == "1 identity" and report.plural(2, "identity") == "2 identities"


def test_o_confirms_what_it_wrote(tmp_path, capsys):
    code, out, err = run(capsys, "check", demo(tmp_path), "-o", tmp_path / "out.onnx")
    assert code == 0 and f"smtshape: wrote {tmp_path / 'out.onnx'}: 27 values annotated" in err
    code, out, _ = run(capsys, "infer", demo(tmp_path), "-o", tmp_path / "out2.onnx", "--json")
    assert json.loads(out)["written"]["path"] == str(tmp_path / "out2.onnx")


def test_progress_follows_the_walk_node_by_node():
    """The bar sat at 0 % and jumped to 100 %: it counted rule lookups, cached per op type."""
    class TTY(io.StringIO):
        def isatty(self):
            return True
    seen = []

    class Recording(report.Progress):
        def _sync(self):
            super()._sync()
            seen.append((self._name, self._count, self._total))
    with Recording(True, delay=0.0, stream=TTY()) as pr:
        import time
        for _ in range(100):            # (the bar shows itself from a timer thread: up to 10 s
            if pr._shown:               # on a loaded machine)
                break
            time.sleep(0.1)
        smtshape.analyze(demo_model(), _progress=pr)
        for _ in range(20):
            if pr._shown:
                break
            time.sleep(0.05)
    walk = [(c, t) for name, c, t in seen if name == "walking the graph"]
    assert walk and walk[-1] == (18, 18)            # every node of the demo, counted
    assert {"checking the annotations", "checking consistency"} <= {name for name, _, _ in seen}


def test_vision_constraints_serve_models_with_other_dim_names(tmp_path, capsys):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
                          [V("x", TP.FLOAT, ["N", 3, "height", "W"])], [V("y", TP.FLOAT, None)])
    p = tmp_path / "img.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), str(p))
    code, out, err = run(capsys, "check", p, "--constraints", REPO / "constraints" / "vision.constraints")
    assert code == 0
    assert re.search(r"skipped the constraint batch == 1 .*vision.constraints:7\): it names batch, not an "
                     r"input dim of this model \(input dims: N, W, height\)", err)
    assert "32 <= height <= 1024" not in err                          # applied: height is a dim here
    code, _, _ = run(capsys, "query", p, "height >= 32", "--constraints", REPO / "constraints" / "vision.constraints")
    assert code == 0
    code, _, err = run(capsys, "check", p, "--assume", "batch == 1")     # typed by hand: still an error
    assert code == 2 and "names batch, which is not an input dim" in err


def test_a_command_makes_the_benchmark_graphs(tmp_path, capsys):
    """``python -m smtshape.examples --transformer N OUT`` (benchmarks/graphs.py's generators)."""
    from smtshape.examples import main as examples
    out = tmp_path / "t.onnx"
    assert examples(["--transformer", "1000", str(out)]) == 0 and "nodes" in capsys.readouterr().out
    m = onnx.load(str(out))
    assert 900 < len(m.graph.node) < 1200
    onnx.checker.check_model(m)
    assert examples(["--cnn"]) == 2 and "--transformer NODES" in capsys.readouterr().err
