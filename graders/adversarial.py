"""Adversarial graph families for the store: the shapes of work that make a
naive symbolic shape analyzer superlinear or exponential.

Each builder takes a size ``n`` and returns an ``onnx.ModelProto``.  They are
used by ``benchmarks/adversarial.py`` (time at sizes growing 8x) and by the
tests (small sizes, checked against onnxruntime where they run).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

F = TP.FLOAT
I64 = TP.INT64


def _model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "adv", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def _out(name):
    return helper.make_tensor_value_info(name, F, None)


def _i64(name, vals):
    return numpy_helper.from_array(np.asarray(vals, dtype=np.int64), name)


def chained_unifications(n: int):
    """Concat on axis 1 of inputs [d_i, 1]: n - 1 unifications d_0 == d_1 == ... ."""
    ins = [_vi(f"x{i}", [f"d{i}", 1]) for i in range(n)]
    return _model([helper.make_node("Concat", [f"x{i}" for i in range(n)], ["y"], name="cat", axis=1)],
                  ins, [_out("y")])


def chained_broadcasts(n: int):
    """y = x0 + x1 + ... with x_i[d_i]: each Add broadcasts two distinct symbols."""
    ins = [_vi(f"x{i}", [f"d{i}"]) for i in range(n)]
    nodes, acc = [], "x0"
    for i in range(1, n):
        nodes.append(helper.make_node("Add", [acc, f"x{i}"], [f"s{i}"], name=f"add{i}"))
        acc = f"s{i}"
    return _model(nodes, ins, [_out(acc)])


def broadcast_pairs(n: int):
    """n independent Adds of a[p_i] and b[q_i]."""
    ins, nodes, outs = [], [], []
    for i in range(n):
        ins += [_vi(f"a{i}", [f"p{i}"]), _vi(f"b{i}", [f"q{i}"])]
        nodes.append(helper.make_node("Add", [f"a{i}", f"b{i}"], [f"y{i}"], name=f"add{i}"))
        outs.append(_out(f"y{i}"))
    return _model(nodes, ins, outs)


def ifs_with_broadcasts(n: int):
    """n broadcasting Adds, with an If (unknown condition) every 10 of them whose
    branches broadcast again."""
    ins = [_vi("c", [], TP.BOOL)] + [_vi(f"x{i}", ["N", f"d{i}"]) for i in range(n)]
    nodes, acc, outs = [], "x0", []
    for i in range(1, n):
        nodes.append(helper.make_node("Add", [acc, f"x{i}"], [f"s{i}"], name=f"add{i}"))
        acc = f"s{i}"
        if i % 10 == 0:
            then = helper.make_graph([helper.make_node("Add", [acc, "x0"], [f"t{i}"], name=f"tadd{i}")],
                                     f"then{i}", [], [_out(f"t{i}")])
            els = helper.make_graph([helper.make_node("Mul", [acc, acc], [f"e{i}"], name=f"emul{i}")],
                                    f"else{i}", [], [_out(f"e{i}")])
            nodes.append(helper.make_node("If", ["c"], [f"if{i}"], name=f"if{i}", then_branch=then,
                                          else_branch=els))
            outs.append(_out(f"if{i}"))
    return _model(nodes, ins, outs + [_out(acc)])


def reshape_concat_chain(n: int):
    """x[B, S, 64] through n blocks of Shape -> Gather -> Concat -> Reshape (TorchScript style)."""
    inits = [_i64("i0", 0), _i64("i1", 1), _i64("c8", [8]), _i64("c64", [64]), _i64("c4", [4]),
             _i64("c16", [16])]
    nodes, acc = [], "x"
    for i in range(n):
        nodes += [
            helper.make_node("Shape", [acc], [f"sh{i}"], name=f"shape{i}"),
            helper.make_node("Gather", [f"sh{i}", "i0"], [f"b{i}"], name=f"g0_{i}", axis=0),
            helper.make_node("Gather", [f"sh{i}", "i1"], [f"s{i}"], name=f"g1_{i}", axis=0),
            helper.make_node("Unsqueeze", [f"b{i}", "i0v"], [f"ub{i}"], name=f"u0_{i}"),
            helper.make_node("Unsqueeze", [f"s{i}", "i0v"], [f"us{i}"], name=f"u1_{i}"),
        ]
        if i % 2 == 0:
            nodes.append(helper.make_node("Concat", [f"ub{i}", f"us{i}", "c4", "c16"], [f"t{i}"],
                                          name=f"cat{i}", axis=0))
        else:
            nodes.append(helper.make_node("Concat", [f"ub{i}", f"us{i}", "c64"], [f"t{i}"],
                                          name=f"cat{i}", axis=0))
        nodes.append(helper.make_node("Reshape", [acc, f"t{i}"], [f"r{i}"], name=f"reshape{i}"))
        acc = f"r{i}"
    inits.append(_i64("i0v", [0]))
    return _model(nodes, [_vi("x", ["B", "S", 64])], [_out(acc)], inits)


def wide_concat(n: int):
    """One Concat of n inputs [B, k_i] on axis 1."""
    ins = [_vi(f"x{i}", ["B", f"k{i}"]) for i in range(n)]
    return _model([helper.make_node("Concat", [f"x{i}" for i in range(n)], ["y"], name="cat", axis=1)],
                  ins, [_out("y")])


def runtime_shape_vector(n: int):
    """A run-time int64 vector of static length n (Abs of an input) feeding a Reshape."""
    return _model([helper.make_node("Abs", ["v"], ["a"], name="abs"),
                   helper.make_node("Reshape", ["x", "a"], ["y"], name="reshape")],
                  [_vi("x", ["N"]), _vi("v", [n], I64)], [_out("y")])


def chained_slices(n: int):
    """n Slices in a chain, each x[K - 1 :] with K a run-time input value (undecidable sign)."""
    nodes = [helper.make_node("Sub", ["k", "one"], ["km1"], name="sub")]
    acc = "x"
    for i in range(n):
        nodes.append(helper.make_node("Slice", [acc, "km1", "big", "ax"], [f"s{i}"], name=f"slice{i}"))
        acc = f"s{i}"
    inits = [_i64("one", [1]), _i64("big", [2 ** 62]), _i64("ax", [0])]
    return _model(nodes, [_vi("x", ["N"]), _vi("k", [1], I64)], [_out(acc)], inits)


def chained_shape_slices(n: int):
    """n Slices x[: dim(x) - 1] in a chain: ends known as expressions, signs undecidable at 0."""
    nodes, acc = [], "x"
    for i in range(n):
        nodes += [helper.make_node("Shape", [acc], [f"sh{i}"], name=f"shape{i}"),
                  helper.make_node("Sub", [f"sh{i}", "one"], [f"e{i}"], name=f"sub{i}"),
                  helper.make_node("Slice", [acc, "zero", f"e{i}"], [f"s{i}"], name=f"slice{i}")]
        acc = f"s{i}"
    inits = [_i64("one", [1]), _i64("zero", [0])]
    return _model(nodes, [_vi("x", ["N"])], [_out(acc)], inits)


def _loop_body(depth: int, tag: str, scan: bool):
    """A Loop (or Scan) body whose carried value doubles its rows each iteration
    (its shape varies) and runs another such loop nested ``depth - 1`` levels deeper."""
    st = f"st{tag}"
    if scan:
        inputs = [_vi(st, None), _vi(f"sc{tag}", None)]
    else:
        inputs = [_vi(f"it{tag}", [], I64), _vi(f"cin{tag}", [], TP.BOOL), _vi(st, None)]
    nodes = [helper.make_node("Concat", [st, st], [f"grow{tag}"], name=f"grow{tag}", axis=0)]
    carried = f"grow{tag}"
    if depth > 1:
        sub = _loop_body(depth - 1, tag + "i", scan)
        if scan:
            nodes.append(helper.make_node("Scan", [carried, f"sc{tag}"], [f"nest{tag}", f"nsc{tag}"],
                                          name=f"scan{tag}", body=sub, num_scan_inputs=1))
        else:
            nodes.append(helper.make_node("Loop", ["M", "", carried], [f"nest{tag}", f"nsc{tag}"],
                                          name=f"loop{tag}", body=sub))
        carried = f"nest{tag}"
    if scan:
        nodes.append(helper.make_node("Identity", [f"sc{tag}"], [f"sco{tag}"], name=f"ids{tag}"))
        outs = [_out(carried), _out(f"sco{tag}")]
    else:
        nodes.append(helper.make_node("Identity", [f"cin{tag}"], [f"cout{tag}"], name=f"idc{tag}"))
        nodes.append(helper.make_node("Shape", [st], [f"so{tag}"], name=f"sh{tag}"))
        outs = [helper.make_tensor_value_info(f"cout{tag}", TP.BOOL, []), _out(carried),
                helper.make_tensor_value_info(f"so{tag}", I64, None)]
    return helper.make_graph(nodes, f"body{tag}", inputs, outs)


def nested_loops(n: int):
    """Loops nested n deep (trip count M, a graph input), each carrying a value."""
    body = _loop_body(n, "L", scan=False)
    node = helper.make_node("Loop", ["M", "", "x"], ["y", "ys"], name="loop", body=body)
    return _model([node], [_vi("M", [], I64), _vi("x", [1, "D"])],
                  [_out("y"), helper.make_tensor_value_info("ys", I64, None)])     # (ys: Shape outputs)


def nested_scans(n: int):
    """Scans nested n deep, each with one state and one scan input."""
    body = _loop_body(n, "S", scan=True)
    node = helper.make_node("Scan", ["x", "seq"], ["y", "ys"], name="scan", body=body, num_scan_inputs=1)
    seq = [f"T{k}" for k in range(n)] + ["D"]
    return _model([node], [_vi("x", [1, "D"]), _vi("seq", seq)], [_out("y"), _out("ys")], opset=18)


def nonlinear_relations(n: int):
    """n Reshapes [B_i, S_i, 64] -> [-1, 64] -> [B_i * S_i * 2, 32]: element-count
    relations with products of symbols."""
    nodes, ins, outs = [], [], []
    inits = [_i64("flat", [-1, 64]), _i64("two", [2]), _i64("c32", [32])]
    for i in range(n):
        ins.append(_vi(f"x{i}", [f"B{i}", f"S{i}", 64]))
        nodes += [helper.make_node("Reshape", [f"x{i}", "flat"], [f"f{i}"], name=f"flat{i}"),
                  helper.make_node("Shape", [f"f{i}"], [f"sh{i}"], name=f"shape{i}", end=1),
                  helper.make_node("Mul", [f"sh{i}", "two"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node("Concat", [f"m{i}", "c32"], [f"t{i}"], name=f"cat{i}", axis=0),
                  helper.make_node("Reshape", [f"f{i}", f"t{i}"], [f"y{i}"], name=f"re{i}")]
        outs.append(_out(f"y{i}"))
    return _model(nodes, ins, outs, inits)


def products(n: int):
    """x[d_1, ..., d_n] reshaped to [-1, 64] (the product of n symbols is a multiple of
    64: an element count over a data symbol) and added to z[P] (a broadcast of the product
    against a symbol)."""
    ins = [_vi("x", [f"d{i}" for i in range(n)]), _vi("z", ["P"])]
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["f"], name="flat"),
             helper.make_node("Reshape", ["x", "rows"], ["r"], name="rows"),
             helper.make_node("Add", ["f", "z"], ["y"], name="add")]
    return _model(nodes, ins, [_out("y"), _out("r")], [_i64("flat", [-1]), _i64("rows", [-1, 64])])


FAMILIES = {
    "chained_unifications": (chained_unifications, 500),
    "chained_broadcasts": (chained_broadcasts, 100),
    "broadcast_pairs": (broadcast_pairs, 50),
    "ifs_with_broadcasts": (ifs_with_broadcasts, 50),
    "reshape_concat_chain": (reshape_concat_chain, 50),
    "wide_concat": (wide_concat, 250),
    "runtime_shape_vector": (runtime_shape_vector, 125),
    "chained_slices": (chained_slices, 4),
    "chained_shape_slices": (chained_shape_slices, 4),
    "nested_loops": (nested_loops, 2),
    "nested_scans": (nested_scans, 2),
    "nonlinear_relations": (nonlinear_relations, 10),
    "products": (products, 8),
}
