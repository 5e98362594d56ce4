"""A small demo model the project builds itself (no download), and the benchmark graphs.

    python -m smtshape.examples demo.onnx
    python -m smtshape.examples --transformer 200000 t200k.onnx    # benchmarks/graphs.py
    python -m smtshape.examples --cnn 10000 cnn10k.onnx

It is a one-layer attention block exported the way PyTorch's TorchScript
exporter writes it: a Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
splits heads, and a 128-row position table is sliced by ``seq`` and added to
the ``seq``-long embeddings (which forces ``seq <= 128``: smtshape reports it).
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def demo_model(hidden: int = 64, heads: int = 4, vocab: int = 512, max_pos: int = 128) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    hd = hidden // heads
    inits = [
        numpy_helper.from_array(rng.standard_normal((vocab, hidden)).astype(np.float32), "wte"),
        numpy_helper.from_array(rng.standard_normal((max_pos, hidden)).astype(np.float32), "wpe"),
        numpy_helper.from_array(rng.standard_normal((hidden, hidden)).astype(np.float32), "w_q"),
        numpy_helper.from_array(np.array(0, np.int64), "c0"),
        numpy_helper.from_array(np.array(1, np.int64), "c1"),
        numpy_helper.from_array(np.array([0], np.int64), "zero1"),
        numpy_helper.from_array(np.array([0], np.int64), "axes0"),
        numpy_helper.from_array(np.array([heads, hd], np.int64), "head_dims"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["wte", "input_ids"], ["tok"], name="embed_tokens"),
        n("Shape", ["input_ids"], ["ids_shape"], name="ids_shape"),
        n("Gather", ["ids_shape", "c1"], ["seq_len"], name="take_seq", axis=0),
        n("Unsqueeze", ["seq_len", "axes0"], ["seq_len1"], name="seq_as_1d"),
        n("Slice", ["wpe", "zero1", "seq_len1", "axes0"], ["pos"], name="slice_positions"),
        n("Add", ["tok", "pos"], ["h"], name="add_positions"),
        n("MatMul", ["h", "w_q"], ["q"], name="q_proj"),
        n("Shape", ["q"], ["q_shape"], name="q_shape"),
        n("Gather", ["q_shape", "c0"], ["b"], name="take_batch", axis=0),
        n("Gather", ["q_shape", "c1"], ["s"], name="take_seq2", axis=0),
        n("Unsqueeze", ["b", "axes0"], ["b1"], name="b_as_1d"),
        n("Unsqueeze", ["s", "axes0"], ["s1"], name="s_as_1d"),
        n("Concat", ["b1", "s1", "head_dims"], ["split_shape"], name="split_shape", axis=0),
        n("Reshape", ["q", "split_shape"], ["q_heads"], name="split_heads"),
        n("Transpose", ["q_heads"], ["q_t"], name="heads_first", perm=[0, 2, 1, 3]),
        n("Transpose", ["q_heads"], ["k_t"], name="keys_last", perm=[0, 2, 3, 1]),
        n("MatMul", ["q_t", "k_t"], ["scores"], name="scores"),
        n("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "demo_attention",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", heads, "seq", "seq"])],
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                             producer_name="smtshape.examples")


def bench_graph(family: str, nodes: int) -> onnx.ModelProto:
    """A generated benchmark graph of about ``nodes`` nodes: ``benchmarks/graphs.py``'s
    ``transformer_like`` or ``cnn_like`` (found beside the package in a source checkout)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "graphs.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the benchmark generators ship with the source checkout only")
    spec = importlib.util.spec_from_file_location("smtshape_bench_graphs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GENERATORS[family](nodes)


USAGE = ("usage: python -m smtshape.examples OUT.onnx\n"
         "       python -m smtshape.examples --transformer NODES OUT.onnx   (or --cnn NODES)")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 3 and argv[0] in ("--transformer", "--cnn") and argv[1].isdigit():
        try:
            model = bench_graph(argv[0][2:], int(argv[1]))
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        onnx.save(model, argv[2])
        print(f"wrote {argv[2]} ({len(model.graph.node)} nodes)")
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    onnx.save(demo_model(), argv[0])
    print(f"wrote {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
