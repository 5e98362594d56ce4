"""Soundness of the op rules on random small graphs, measured against onnxruntime.

A hypothesis strategy draws a runtime binding of the symbolic input dims FIRST
(``B``, ``S``, ``T``, ``H``, ``W``), then builds a chain of 2-7 menu steps whose
attributes are valid at that binding but are written symbolically in the model
(Shape -> Gather chains, 0 / -1 Reshape targets, INT64_MAX slice ends, ...).
Each step is one op or a small exporter-style chain of nodes.

For every model:

* ``smtshape.analyze`` runs once on the model as built (only the last value is a
  graph output, no shape annotations);
* every node output is exposed as a graph output and onnxruntime
  (``ORT_DISABLE_ALL``) runs it at the binding, and again at a SECOND binding of
  other sizes without re-analyzing (a binding the model cannot run at is skipped);
* every value ORT returns is checked: same rank, each EXACT dim evaluates to the
  runtime size, each UPPER_BOUND bound is >= the runtime size; every constraint
  over input dims only holds at each binding that ran; no conflicts are reported;
* resolution: every dim the generator knows to be a function of the input dims
  (anything not downstream of a data-dependent size such as NonZero, or of a
  shape-ambiguous op such as Squeeze without axes) must come out EXACT.

``KNOWN_BUGS``, ``KNOWN_GAPS`` and ``KNOWN_DIVERGENT_RULES`` (below the menu) list what the
generator or the checks steer around, each with its reproduction; remove a name to re-enable it.
``SMTSHAPE_FUZZ=N`` runs N random examples per test instead of the fixed derandomized set.

The generator tracks the concrete shape of each value at the first binding with
its own reference formulas; a mismatch with onnxruntime there is reported as a
generator error (not as an smtshape bug).
"""
from __future__ import annotations

import math
import operator
import os

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import smtshape
from smtshape import expr as E
from smtshape.constraints import And, Not, Or, Rel
from smtshape.dim import Exactness

ort = pytest.importorskip("onnxruntime")

OPSET = 18
I64_MAX = 2 ** 63 - 1
I64_MIN = -(2 ** 63)
MAX_RANK = 5
MAX_NUMEL = 4096
# kinds of a tracked dim: 'c' static, 's' a function of the input dims (EXACT expected),
# 'd' data-dependent or otherwise not expected to be resolved
_KORD = {"c": 0, "s": 1, "d": 2}


def kmax(*ks):
    return max(ks, key=_KORD.__getitem__) if ks else "c"


class Val:
    """A float tensor the generator can build on: name, dims at the first binding, kinds."""

    __slots__ = ("name", "dims", "kinds")

    def __init__(self, name, dims, kinds):
        assert len(dims) == len(kinds)
        self.name, self.dims, self.kinds = name, list(dims), list(kinds)

    @property
    def rank(self):
        return len(self.dims)

    @property
    def numel(self):
        return math.prod(self.dims)

    def __repr__(self):
        return f"{self.name}{self.dims}{''.join(self.kinds)}"


def bcast_shapes(*shapes):
    """numpy broadcasting of (dims, kinds) pairs at the first binding; None if it fails."""
    r = max(len(d) for d, _ in shapes)
    out_d, out_k = [], []
    for i in range(r):
        ds, ks = [], []
        for d, k in shapes:
            j = i - (r - len(d))
            if j >= 0:
                ds.append(d[j])
                ks.append(k[j])
        non1 = {v for v in ds if v != 1}
        if len(non1) > 1:
            return None
        out_d.append(non1.pop() if non1 else 1)
        out_k.append(kmax(*ks))
    return out_d, out_k


def slice_len(n, start, end, step):
    """ONNX Slice length (clamping differs from Python's for negative steps)."""
    if n == 0:
        return 0
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
        return max(0, -(-(end - start) // step))
    if end == I64_MAX:
        end = -1   # onnxruntime: a negative step with end INT64_MAX runs through index 0
    start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return max(0, -(-(start - end) // -step))


class Case:
    """A generated model with the bindings to run it at."""

    def __init__(self, model, env, env2, seed, steps, expect):
        self.model, self.env, self.env2, self.seed = model, env, env2, seed
        self.steps, self.expect = steps, expect

    def __repr__(self):
        return f"Case(env={self.env}, env2={self.env2}, seed={self.seed}, steps={self.steps})"


class Builder:
    def __init__(self, draw, env, zero):
        self.draw, self.env, self.zero = draw, env, zero
        self.nodes, self.inits, self.inputs = [], [], []
        self.pool: list[Val] = []
        self.expect: dict = {}     # value name -> (dims at binding 1, kinds)
        self.ambiguous: set = set()  # values whose rank the input dims do not determine
        self.steps: list[str] = []
        self.n = 0

    # ------------------------------------------------------------ plumbing
    def d(self, strategy):
        return self.draw(strategy)

    def choice(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def coin(self, p=0.5):
        return self.draw(st.integers(0, 999)) < int(p * 1000)

    def fresh(self, hint="v"):
        self.n += 1
        return f"{hint}{self.n}"

    def const(self, arr, hint="c"):
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def i64(self, vals):
        return self.const(np.asarray(vals, dtype=np.int64), "k")

    def f32(self, shape):
        vals = np.linspace(-1.0, 1.5, num=max(1, math.prod(shape))).astype(np.float32)
        return self.const(vals[: math.prod(shape)].reshape(shape), "w")

    def node(self, op, ins, shapes, **attrs):
        """Add a node; ``shapes`` is one (dims, kinds) or None per output (None: not tracked)."""
        outs = [self.fresh("v") for _ in shapes]
        self.nodes.append(helper.make_node(op, ins, outs, name=f"n{len(self.nodes)}_{op}", **attrs))
        if any(i in self.ambiguous for i in ins):
            # downstream of a value whose rank is not a function of the input dims: no expectations
            self.ambiguous.update(outs)
            return outs
        for o, s in zip(outs, shapes):
            if s is not None:
                self.expect[o] = (list(s[0]), list(s[1]))
        return outs

    def add(self, name, dims, kinds):
        v = Val(name, dims, kinds)
        self.pool.append(v)
        return v

    def input(self, name, dims, kinds, params):
        self.inputs.append(helper.make_tensor_value_info(name, TP.FLOAT, params))
        self.expect[name] = (list(dims), list(kinds))
        return self.add(name, dims, kinds)

    def ok_size(self, dims):
        return len(dims) <= MAX_RANK and math.prod(dims) <= MAX_NUMEL

    # shape helpers --------------------------------------------------------
    def shape_of(self, v, start=None, end=None):
        attrs = {}
        if start is not None:
            attrs["start"] = start
        if end is not None:
            attrs["end"] = end
        lo, hi = slice(start, end).indices(v.rank)[:2]
        return self.node("Shape", [v.name], [([max(0, hi - lo)], ["c"])], **attrs)[0]

    def dim_scalar(self, v, i, shape=None):
        """Shape(v) -> Gather(scalar i): the TorchScript idiom for one dim."""
        shape = shape or self.shape_of(v)
        idx = i if self.coin(0.7) else i - v.rank
        return self.node("Gather", [shape, self.i64(np.int64(idx))], [([], ["c"])], axis=0)[0]

    def dim_1d(self, v, i, shape=None):
        """One dim of v as a [1] int64 tensor (Gather + Unsqueeze, Gather [i] or Shape(start, end))."""
        how = self.choice(["unsq", "gather1", "shape_se"])
        if how == "shape_se":
            return self.shape_of(v, i, i + 1)
        if how == "gather1":
            shape = shape or self.shape_of(v)
            return self.node("Gather", [shape, self.i64([i])], [([1], ["c"])], axis=0)[0]
        g = self.dim_scalar(v, i, shape)
        return self.node("Unsqueeze", [g, self.i64([0])], [([1], ["c"])])[0]

    # ------------------------------------------------------------ the menu
    def op_unary(self, x):
        op = self.choice(["Relu", "Neg", "Sigmoid", "Identity"])
        (o,) = self.node(op, [x.name], [(x.dims, x.kinds)])
        return self.add(o, x.dims, x.kinds), op

    def op_softmax(self, x):
        if x.rank == 0:
            return None
        axis = self.integer(-x.rank, x.rank - 1)
        (o,) = self.node("Softmax", [x.name], [(x.dims, x.kinds)], axis=axis)
        return self.add(o, x.dims, x.kinds), f"Softmax(axis={axis})"

    def other_operand(self, x, allow_pool=True):
        """A second operand that broadcasts with x at the binding: (name, dims, kinds, text)."""
        opts = ["one", "scalar", "self"]
        if x.rank and x.kinds[-1] == "c":
            opts.append("last")
        if x.rank and all(k == "c" for k in x.kinds[1:]):
            opts.append("tail")
        peers = [p for p in self.pool if p is not x and bcast_shapes((x.dims, x.kinds), (p.dims, p.kinds))
                 and self.ok_size(bcast_shapes((x.dims, x.kinds), (p.dims, p.kinds))[0])] if allow_pool else []
        if peers:
            opts += ["pool", "pool"]
        how = self.choice(opts)
        if how == "one":
            return self.f32([1]), [1], ["c"], "[1]"
        if how == "scalar":
            return self.f32([]), [], [], "[]"
        if how == "self":
            return x.name, x.dims, x.kinds, "self"
        if how == "last":
            return self.f32([x.dims[-1]]), [x.dims[-1]], ["c"], f"[{x.dims[-1]}]"
        if how == "tail":
            sh = [1] + x.dims[1:]
            return self.f32(sh), sh, ["c"] * len(sh), f"{sh}"
        p = self.choice(peers)
        return p.name, p.dims, p.kinds, p.name

    def op_binary(self, x):
        op = self.choice(["Add", "Mul", "Sub"])
        name, dims, kinds, txt = self.other_operand(x)
        ins = [x.name, name]
        if self.coin():
            ins.reverse()
        out = bcast_shapes((x.dims, x.kinds), (dims, kinds))
        (o,) = self.node(op, ins, [out])
        return self.add(o, *out), f"{op}({x.name}, {txt})"

    def op_where(self, x):
        cname, cd, ck, ctxt = self.other_operand(x)
        (cond,) = self.node("Greater", [cname, self.f32([])], [bcast_shapes((cd, ck), ([], []))])
        bname, bd, bk, btxt = self.other_operand(x)
        ops = [(cond, cd, ck), (x.name, x.dims, x.kinds), (bname, bd, bk)]
        if self.coin():
            ops[1], ops[2] = ops[2], ops[1]
        out = bcast_shapes(*[(d, k) for _, d, k in ops])
        if out is None or not self.ok_size(out[0]):
            return None
        (o,) = self.node("Where", [n for n, _, _ in ops], [out])
        return self.add(o, *out), f"Where({ctxt}>0, {x.name}, {btxt})"

    def op_matmul(self, x):
        opts = []
        if x.rank >= 1 and x.kinds[-1] == "c":
            opts += ["w2", "w2"]
            if x.rank >= 2 and x.numel > 0:
                opts.append("w1")   # onnxruntime: MatMul([0, 0, 8], [8]) "cannot broadcast on dim 0"
        if x.rank >= 2:
            opts.append("xxT")
        if not opts:
            return None
        how = self.choice(opts)
        if how == "xxT":
            perm = list(range(x.rank - 2)) + [x.rank - 1, x.rank - 2]
            td = [x.dims[p] for p in perm]
            tk = [x.kinds[p] for p in perm]
            (t,) = self.node("Transpose", [x.name], [(td, tk)], perm=perm)
            dims = x.dims[:-1] + [x.dims[-2]]
            kinds = x.kinds[:-1] + [x.kinds[-2]]
            if not self.ok_size(dims):
                return None
            (o,) = self.node("MatMul", [x.name, t], [(dims, kinds)])
            return self.add(o, dims, kinds), "MatMul(x, x^T)"
        k = x.dims[-1]
        if how == "w1":
            (o,) = self.node("MatMul", [x.name, self.f32([k])], [(x.dims[:-1], x.kinds[:-1])])
            return self.add(o, x.dims[:-1], x.kinds[:-1]), f"MatMul(x, w[{k}])"
        n = self.integer(1, 6)
        dims, kinds = x.dims[:-1] + [n], x.kinds[:-1] + ["c"]
        (o,) = self.node("MatMul", [x.name, self.f32([k, n])], [(dims, kinds)])
        return self.add(o, dims, kinds), f"MatMul(x, w[{k},{n}])"

    def op_transpose(self, x):
        if x.rank < 2:
            return None
        perm = self.d(st.permutations(list(range(x.rank))))
        dims = [x.dims[p] for p in perm]
        kinds = [x.kinds[p] for p in perm]
        (o,) = self.node("Transpose", [x.name], [(dims, kinds)], perm=list(perm))
        return self.add(o, dims, kinds), f"Transpose{list(perm)}"

    def _groups(self, r):
        if r <= 1:
            return [list(range(r))]
        cuts = sorted(self.d(st.sets(st.integers(1, r - 1), max_size=r - 1)))
        bounds = [0] + cuts + [r]
        return [list(range(a, b)) for a, b in zip(bounds, bounds[1:])]

    def reshape_out(self, x, tvals, tkinds, allowzero):
        """onnxruntime's Reshape at the first binding: with allowzero=0 a target 0 (even one
        computed at run time) copies the input dim at that index; -1 is inferred.  None: fails."""
        dims, kinds = [], []
        for j, (t, k) in enumerate(zip(tvals, tkinds)):
            if t == 0 and not allowzero:
                if j >= x.rank:
                    return None
                dims.append(x.dims[j])
                kinds.append(kmax(k, x.kinds[j]))
            else:
                dims.append(t)
                kinds.append(k)
        if dims.count(-1) > 1 or (allowzero and -1 in dims and 0 in dims):
            return None
        if -1 in dims:
            rest = math.prod(d for d in dims if d != -1)
            if rest == 0 or x.numel % rest:
                return None
            dims[dims.index(-1)] = x.numel // rest
        if math.prod(dims) != x.numel or not dims or len(dims) > MAX_RANK:
            return None
        return dims, kinds

    def op_reshape_chain(self, x):
        """TorchScript-style: Shape -> Gather -> (Mul) -> Unsqueeze -> Concat(with constants) -> Reshape."""
        if x.rank == 0:
            return None
        shape = self.shape_of(x)
        parts, tvals, tkinds, desc = [], [], [], []
        for grp in self._groups(x.rank):
            gd = [x.dims[i] for i in grp]
            gk = [x.kinds[i] for i in grp]
            val, kind = math.prod(gd), kmax(*gk)
            opts = ["mul", "mul"]
            if -1 not in tvals:
                opts.append("infer")
            if kind == "c":
                opts.append("const")
                if len(grp) == 1 and val >= 4 and val % 2 == 0:
                    opts.append("split2")
            if len(grp) == 1 and kind == "s" and val >= 2 and val % 2 == 0 and -1 not in tvals:
                opts.append("half")
            how = self.choice(opts)
            if how == "infer":
                parts.append(self.i64([-1]))
                tvals.append(-1)
                tkinds.append(kind)
                desc.append("-1")
            elif how == "const":
                parts.append(self.i64([val]))
                tvals.append(val)
                tkinds.append("c")
                desc.append(str(val))
            elif how == "split2":
                parts.append(self.i64([2, val // 2]))
                tvals += [2, val // 2]
                tkinds += ["c", "c"]
                desc.append(f"2,{val // 2}")
            elif how == "half":
                # [.., S, ..] -> [.., S // 2, -1]: valid for even S only; the -1 absorbs the 2
                g = self.dim_scalar(x, grp[0], shape)
                (h,) = self.node("Div", [g, self.i64(np.int64(2))], [([], ["c"])])
                (u,) = self.node("Unsqueeze", [h, self.i64([0])], [([1], ["c"])])
                parts += [u, self.i64([-1])]
                tvals += [val // 2, -1]
                tkinds += ["d", "d"]
                desc += [f"d{grp[0]}//2", "-1"]
            else:
                if len(grp) == 1:
                    parts.append(self.dim_1d(x, grp[0], shape))
                else:
                    acc = self.dim_scalar(x, grp[0], shape)
                    for i in grp[1:]:
                        (acc,) = self.node("Mul", [acc, self.dim_scalar(x, i, shape)], [([], ["c"])])
                    (acc,) = self.node("Unsqueeze", [acc, self.i64([0])], [([1], ["c"])])
                    parts.append(acc)
                tvals.append(val)
                tkinds.append(kind)
                desc.append("*".join(f"d{i}" for i in grp))
        allowzero = 1 if self.coin(0.15) else 0
        out = self.reshape_out(x, tvals, tkinds, allowzero)
        if out is None:
            return None
        if len(parts) > 1:
            (target,) = self.node("Concat", parts, [([len(tvals)], ["c"])], axis=0)
        else:
            target = parts[0]
        attrs = {"allowzero": 1} if allowzero else {}
        (o,) = self.node("Reshape", [x.name, target], [out], **attrs)
        return self.add(o, *out), f"Reshape(chain [{', '.join(desc)}]{', allowzero' if allowzero else ''})"

    def op_reshape_const(self, x):
        """Reshape to a constant target with 0 (copy) and -1 (infer), sometimes fully hard-coded."""
        if x.rank == 0:
            return None
        if self.coin(0.12):
            # hard-coded sizes: valid at this binding only (pins the input dims)
            dims = []
            rest = x.numel
            if rest == 0:
                return None
            while rest > 1 and len(dims) < 3 and self.coin(0.6):
                f = self.choice([f for f in range(2, rest + 1) if rest % f == 0])
                dims.append(f)
                rest //= f
            dims.append(rest)
            (o,) = self.node("Reshape", [x.name, self.i64(dims)], [(dims, ["c"] * len(dims))])
            return self.add(o, dims, ["c"] * len(dims)), f"Reshape(hard-coded {dims})"
        p = self.integer(0, x.rank)
        target, kinds = [0] * p, x.kinds[:p]
        for grp in self._groups(x.rank - p):
            grp = [g + p for g in grp]
            if not grp:
                continue
            gd = [x.dims[i] for i in grp]
            gk = [x.kinds[i] for i in grp]
            val, kind = math.prod(gd), kmax(*gk)
            if kind == "c" and (-1 in target or self.coin()):
                if len(grp) == 1 and val >= 4 and val % 2 == 0 and self.coin(0.3):
                    target += [2, val // 2]
                    kinds += ["c", "c"]
                else:
                    target.append(val)
                    kinds.append("c")
            elif -1 not in target:
                target.append(-1)
                kinds.append(kind)
            else:
                return None
        out = self.reshape_out(x, target, kinds, 0)
        if out is None:
            return None
        (o,) = self.node("Reshape", [x.name, self.i64(target)], [out])
        return self.add(o, *out), f"Reshape({target})"

    def op_slice(self, x):
        if x.rank == 0:
            return None
        naxes = self.integer(1, min(2, x.rank))
        axes = self.d(st.lists(st.integers(0, x.rank - 1), min_size=naxes, max_size=naxes, unique=True))
        starts, ends, steps = [], [], []
        dims, kinds = list(x.dims), list(x.kinds)
        for a in axes:
            s = self.choice([0, 0, 1, 2, -1, -2, -3, 5, I64_MIN, I64_MAX])
            e = self.choice([I64_MAX, I64_MAX, -1, -2, 1, 2, 3, 0, 7, I64_MIN])
            p = self.choice([1, 1, 1, 2, 3, -1, -2])
            starts.append(s)
            ends.append(e)
            steps.append(p)
            dims[a] = slice_len(x.dims[a], s, e, p)
            if p < 0 and e == I64_MAX:
                # the spec says empty, onnxruntime slices through index 0: smtshape keeps a bound
                kinds[a] = "d"
        if not self.ok_size(dims):
            return None
        ins = [x.name, self.i64(starts), self.i64(ends)]
        ax_txt = [a - x.rank if self.coin(0.3) else a for a in axes]
        if ax_txt != list(range(len(axes))) or self.coin() or any(p != 1 for p in steps):
            ins.append(self.i64(ax_txt))
            if any(p != 1 for p in steps) or self.coin():
                ins.append(self.i64(steps))
        (o,) = self.node("Slice", ins, [(dims, kinds)])

        def show(v):
            return {I64_MAX: "MAX", I64_MIN: "MIN"}.get(v, str(v))
        txt = ", ".join(f"ax{a}[{show(s)}:{show(e)}:{p}]" for a, s, e, p in zip(axes, starts, ends, steps))
        return self.add(o, dims, kinds), f"Slice({txt})"

    def op_slice_dynamic(self, x):
        """Slice whose ends (and maybe starts) come from Shape -> Gather of some value."""
        if x.rank == 0:
            return None
        a = self.integer(0, x.rank - 1)
        srcs = [p for p in self.pool if p.rank >= 1 and "d" not in p.kinds]
        src = self.choice(srcs) if srcs else x
        j = self.integer(0, src.rank - 1)
        end = self.dim_1d(src, j)
        ev = src.dims[j]
        how = self.choice(["plain", "sub", "div", "add"])
        if how == "sub":
            c = self.integer(1, 3)
            (end,) = self.node("Sub", [end, self.i64([c])], [([1], ["c"])])
            ev -= c
        elif how == "div":
            (end,) = self.node("Div", [end, self.i64([2])], [([1], ["c"])])
            ev //= 2
        elif how == "add":
            (end,) = self.node("Add", [end, self.i64([1])], [([1], ["c"])])
            ev += 1
        s = self.choice([0, 0, 1, -2])
        dims, kinds = list(x.dims), list(x.kinds)
        dims[a] = slice_len(x.dims[a], s, ev, 1)
        kinds[a] = kmax(x.kinds[a], src.kinds[j])
        if how == "sub" and "slice_end_minus_const" in KNOWN_GAPS:
            kinds[a] = "d"
        (o,) = self.node("Slice", [x.name, self.i64([s]), end, self.i64([a])], [(dims, kinds)])
        return self.add(o, dims, kinds), f"Slice(ax{a}[{s}:{how}({src.name}[{j}])])"

    def op_concat(self, x):
        if x.rank == 0:
            return None
        a = self.integer(0, x.rank - 1)
        ops = [x]
        n = self.integer(1, 2)
        for _ in range(n):
            opts = ["self"]
            if all(k == "c" for i, k in enumerate(x.kinds) if i != a):
                opts.append("const")
            peers = [p for p in self.pool if p is not x and p.rank == x.rank
                     and all(p.dims[i] == x.dims[i] for i in range(x.rank) if i != a)]
            if peers:
                opts.append("pool")
            how = self.choice(opts)
            if how == "self":
                ops.append(x)
            elif how == "const":
                sh = list(x.dims)
                sh[a] = self.integer(0 if not self.zero else 1, 3)
                kk = ["c"] * x.rank
                ops.append(Val(self.f32(sh), sh, kk))
            else:
                ops.append(self.choice(peers))
        dims = list(x.dims)
        dims[a] = sum(v.dims[a] for v in ops)
        kinds = [kmax(*[v.kinds[i] for v in ops]) for i in range(x.rank)]
        if not self.ok_size(dims):
            return None
        axis = a - x.rank if self.coin(0.3) else a
        (o,) = self.node("Concat", [v.name for v in ops], [(dims, kinds)], axis=axis)
        return self.add(o, dims, kinds), f"Concat(axis={axis}, {[v.name for v in ops]})"

    def op_split(self, x):
        static = [i for i in range(x.rank) if x.kinds[i] == "c" and x.dims[i] >= 2 and x.dims[i] % 2 == 0]
        sym = [i for i in range(x.rank) if x.kinds[i] == "s" and x.dims[i] >= 2]
        opts = []
        if static:
            opts += ["num", "sizes", "uneven"]
        if sym:
            opts.append("num_sym")
        if not opts:
            return None
        how = self.choice(opts)
        a = self.choice(sym if how == "num_sym" else static)
        n = x.dims[a]
        if how in ("num", "num_sym"):
            h = -(-n // 2)
            sizes = [h, n - h]
            ins, attrs = [x.name], {"num_outputs": 2}
        elif how == "sizes":
            sizes = [n // 2, n // 2]
            ins, attrs = [x.name, self.i64(sizes)], {}
        else:
            k = self.integer(0, n)
            sizes = [k, n - k]
            ins, attrs = [x.name, self.i64(sizes)], {}
        shapes = []
        for sz in sizes:
            dd, kk = list(x.dims), list(x.kinds)
            dd[a] = sz
            shapes.append((dd, kk))
        outs = self.node("Split", ins, shapes, axis=a, **attrs)
        for o, (dd, kk) in zip(outs, shapes):
            last = self.add(o, dd, kk)
        return last, f"Split(axis={a}, {how}, {sizes})"

    def op_unsqueeze(self, x):
        if x.rank >= MAX_RANK:
            return None
        k = self.integer(1, min(2, MAX_RANK - x.rank))
        r = x.rank + k
        pos = self.d(st.lists(st.integers(0, r - 1), min_size=k, max_size=k, unique=True))
        dims, kinds, it = [], [], iter(zip(x.dims, x.kinds))
        for i in range(r):
            if i in pos:
                dims.append(1)
                kinds.append("c")
            else:
                dd, kk = next(it)
                dims.append(dd)
                kinds.append(kk)
        axes = [p - r if self.coin(0.3) else p for p in pos]
        (o,) = self.node("Unsqueeze", [x.name, self.i64(axes)], [(dims, kinds)])
        return self.add(o, dims, kinds), f"Unsqueeze({axes})"

    def op_squeeze(self, x):
        ones = [i for i in range(x.rank) if x.dims[i] == 1 and x.kinds[i] == "c"]
        sym_ones = [i for i in range(x.rank) if x.dims[i] == 1 and x.kinds[i] == "s"]
        opts = []
        if ones and x.rank > len(ones):
            opts += ["axes", "axes"]
        if x.rank > 1 and any(d != 1 for d in x.dims) and (ones or sym_ones):
            opts.append("all")
        if not opts:
            return None
        how = self.choice(opts)
        if how == "axes":
            sel = self.d(st.lists(st.sampled_from(ones), min_size=1, max_size=len(ones), unique=True))
            keep = [i for i in range(x.rank) if i not in sel]
            dims, kinds = [x.dims[i] for i in keep], [x.kinds[i] for i in keep]
            axes = [a - x.rank if self.coin(0.3) else a for a in sel]
            (o,) = self.node("Squeeze", [x.name, self.i64(axes)], [(dims, kinds)])
            return self.add(o, dims, kinds), f"Squeeze({axes})"
        # no axes: removes every 1 at run time; with symbolic dims the rank is not a
        # function of the shape we know, so nothing after it is expected to resolve
        keep = [i for i in range(x.rank) if x.dims[i] != 1]
        dims = [x.dims[i] for i in keep]
        amb = any(x.kinds[i] != "c" for i in range(x.rank))
        kinds = ["d" if amb else x.kinds[i] for i in keep]
        (o,) = self.node("Squeeze", [x.name], [None if amb else (dims, kinds)])
        if amb:
            self.ambiguous.add(o)
        return self.add(o, dims, kinds), "Squeeze()"

    def op_expand(self, x):
        opts = ["same", "ones"]
        if x.rank < MAX_RANK:
            opts += ["lead", "ones"]
        peers = [p for p in self.pool if p is not x and p.rank >= x.rank
                 and bcast_shapes((x.dims, x.kinds), (p.dims, p.kinds)) is not None
                 and bcast_shapes((x.dims, x.kinds), (p.dims, p.kinds))[0] == p.dims]
        if peers:
            opts.append("peer")
        if x.rank:
            opts.append("const_to_shape")
        how = self.choice(opts)
        src = x.name
        if how == "same":
            tgt = self.shape_of(x)
            dims, kinds = x.dims, x.kinds
        elif how == "lead":
            k = self.integer(1, 3)
            (tgt,) = self.node("Concat", [self.i64([k]), self.shape_of(x)], [([x.rank + 1], ["c"])], axis=0)
            dims, kinds = [k] + x.dims, ["c"] + x.kinds
        elif how == "ones":
            r = self.integer(x.rank, min(MAX_RANK, x.rank + 1))
            tgt = self.i64([1] * r)
            dims = [1] * (r - x.rank) + x.dims
            kinds = ["c"] * (r - x.rank) + x.kinds
        elif how == "peer":
            p = self.choice(peers)
            tgt = self.shape_of(p)
            dims, kinds = bcast_shapes((x.dims, x.kinds), (p.dims, p.kinds))
        else:
            last = x.dims[-1] if x.kinds[-1] == "c" and self.coin() else 1
            src = self.f32([last])
            tgt = self.shape_of(x)
            dims, kinds = x.dims, x.kinds
        if not self.ok_size(dims):
            return None
        (o,) = self.node("Expand", [src, tgt], [(dims, kinds)])
        return self.add(o, dims, kinds), f"Expand({how})"

    def op_gather(self, x):
        static = [i for i in range(x.rank) if x.kinds[i] == "c" and x.dims[i] >= 1]
        sym = [i for i in range(x.rank) if x.kinds[i] == "s" and x.dims[i] >= 1]
        if not static and not sym:
            return None
        a = self.choice(static) if static and (not sym or self.coin(0.75)) else self.choice(sym)
        n = x.dims[a]
        if x.kinds[a] == "c":
            idx_st = st.integers(-n, n - 1)
        else:
            idx_st = st.sampled_from([0, -1] if n >= 1 else [0])
        form = self.choice(["scalar", "1d", "2d"] if x.rank >= 2 else ["1d", "2d"])
        if form == "scalar":
            idx = np.int64(self.d(idx_st))
            ishape = []
        elif form == "1d":
            m = self.integer(1, 3)
            idx = np.asarray(self.d(st.lists(idx_st, min_size=m, max_size=m)), dtype=np.int64)
            ishape = [m]
        else:
            m = self.integer(1, 2)
            idx = np.asarray(self.d(st.lists(idx_st, min_size=2 * m, max_size=2 * m)), dtype=np.int64).reshape(2, m)
            ishape = [2, m]
        dims = x.dims[:a] + ishape + x.dims[a + 1:]
        kinds = x.kinds[:a] + ["c"] * len(ishape) + x.kinds[a + 1:]
        if not self.ok_size(dims) or not dims:
            return None
        axis = a - x.rank if self.coin(0.3) else a
        (o,) = self.node("Gather", [x.name, self.i64(idx)], [(dims, kinds)], axis=axis)
        return self.add(o, dims, kinds), f"Gather(axis={axis}, {idx.tolist()})"

    def op_reduce(self, x):
        if x.rank == 0:
            return None
        op = self.choice(["ReduceSum", "ReduceMean", "ReduceMax"])
        keep = self.choice([0, 1])
        if self.coin(0.2):
            axes = list(range(x.rank))
            ins = [x.name]
        else:
            k = self.integer(1, x.rank)
            axes = self.d(st.lists(st.integers(0, x.rank - 1), min_size=k, max_size=k, unique=True))
            # non-negative axes: onnxruntime 1.31 mis-shapes reductions of EMPTY inputs over
            # negative axes (ReduceSum((2, 0, 3), axes=[-2], keepdims=0) -> (2, 0, 3))
            ins = [x.name, self.i64(axes)]
        if op == "ReduceMax" and any(x.dims[a] == 0 for a in axes):
            return None
        if keep:
            dims = [1 if i in axes else x.dims[i] for i in range(x.rank)]
            kinds = ["c" if i in axes else x.kinds[i] for i in range(x.rank)]
        else:
            dims = [x.dims[i] for i in range(x.rank) if i not in axes]
            kinds = [x.kinds[i] for i in range(x.rank) if i not in axes]
        if not dims:
            return None
        (o,) = self.node(op, ins, [(dims, kinds)], keepdims=keep)
        return self.add(o, dims, kinds), f"{op}({sorted(axes)}, keepdims={keep})"

    def op_pad(self, x):
        if x.rank == 0:
            return None
        mode = self.choice(["constant", "constant", "edge", "reflect"])
        if self.coin(0.3):
            k = self.integer(1, x.rank)
            axes = self.d(st.lists(st.integers(0, x.rank - 1), min_size=k, max_size=k, unique=True))
        else:
            axes = list(range(x.rank))
        pb, pe = [], []
        dims = list(x.dims)
        for a in axes:
            n = x.dims[a]
            lo = -1 if n >= 3 and mode == "constant" else 0
            hi = 2 if mode != "reflect" else min(2, n - 1)
            if mode != "constant" and n == 0:
                return None
            b, e = self.integer(lo, max(lo, hi)), self.integer(lo, max(lo, hi))
            pb.append(b)
            pe.append(e)
            dims[a] = n + b + e
        if not self.ok_size(dims) or min(dims, default=1) < 0:
            return None
        ins = [x.name, self.i64(pb + pe)]
        if axes != list(range(x.rank)):
            ins += ["", self.i64(axes)]
        (o,) = self.node("Pad", ins, [(dims, x.kinds)], mode=mode)
        return self.add(o, dims, x.kinds), f"Pad({mode}, axes={axes}, {pb}+{pe})"

    def op_tile(self, x):
        if x.rank == 0:
            return None
        reps = self.d(st.lists(st.sampled_from([1, 1, 2, 3, 0]), min_size=x.rank, max_size=x.rank))
        dims = [d * r for d, r in zip(x.dims, reps)]
        kinds = ["c" if r == 0 else k for k, r in zip(x.kinds, reps)]
        if not self.ok_size(dims):
            return None
        (o,) = self.node("Tile", [x.name, self.i64(reps)], [(dims, kinds)])
        return self.add(o, dims, kinds), f"Tile({reps})"

    def op_range(self, x):
        """Range(start, dim, delta) with the limit from Shape -> Gather (-> Cast)."""
        cands = [i for i in range(x.rank) if x.kinds[i] != "d"]
        if not cands:
            return None
        i = self.choice(cands)
        lim = self.dim_scalar(x, i)
        n = x.dims[i]
        start = self.choice([0, 0, 1, 2])
        delta = self.choice([1, 1, 2, 3])
        if self.coin(0.4):
            (lim,) = self.node("Cast", [lim], [([], ["c"])], to=TP.FLOAT)
            ins = [self.const(np.float32(start)), lim, self.const(np.float32(delta))]
            float_out = True
        else:
            ins = [self.i64(np.int64(start)), lim, self.i64(np.int64(delta))]
            float_out = False
        length = max(0, -(-(n - start) // delta))
        dims, kinds = [length], [x.kinds[i]]
        if float_out and "range_float_limit" in KNOWN_GAPS:
            kinds = ["d"]
        (r,) = self.node("Range", ins, [(dims, kinds)])
        if not float_out:
            (r,) = self.node("Cast", [r], [(dims, kinds)], to=TP.FLOAT)
        return self.add(r, dims, kinds), f"Range({start}, {x.name}[{i}], {delta}){'f' if float_out else ''}"

    def op_constant_of_shape(self, x):
        how = self.choice(["same", "replace_last"] if x.rank else ["same"])
        if how == "same":
            tgt = self.shape_of(x)
            dims, kinds = x.dims, x.kinds
        else:
            k = self.integer(1, 4)
            head = self.shape_of(x, 0, x.rank - 1) if self.coin() else self.shape_of(x, None, -1)
            (tgt,) = self.node("Concat", [head, self.i64([k])], [([x.rank], ["c"])], axis=0)
            dims, kinds = x.dims[:-1] + [k], x.kinds[:-1] + ["c"]
        val = helper.make_tensor("value", TP.FLOAT, [1], [0.5])
        (o,) = self.node("ConstantOfShape", [tgt], [(dims, kinds)], value=val)
        return self.add(o, dims, kinds), f"ConstantOfShape({how})"

    def op_topk(self, x):
        cands = [i for i in range(x.rank) if x.dims[i] >= 1 and x.kinds[i] != "d"]
        if not cands:
            return None
        a = self.choice(cands)
        k = self.integer(1, min(4, x.dims[a]))
        dims, kinds = list(x.dims), list(x.kinds)
        dims[a], kinds[a] = k, "c"
        axis = a - x.rank if self.coin(0.3) else a
        vals, idx = self.node("TopK", [x.name, self.i64([k])], [(dims, kinds), (dims, kinds)],
                              axis=axis, largest=self.choice([0, 1]))
        return self.add(vals, dims, kinds), f"TopK(axis={axis}, k={k})"

    def op_nonzero(self, x):
        """NonZero and what hangs off its data-dependent count (side branch, not built on)."""
        if x.rank == 0:
            return None
        (nz,) = self.node("NonZero", [x.name], [([x.rank, None], ["c", "d"])])
        how = self.choice(["plain", "transpose", "slice_by_count", "expand_count"])
        if how == "transpose":
            (t,) = self.node("Transpose", [nz], [([None, x.rank], ["d", "c"])], perm=[1, 0])
            self.node("Cast", [t], [([None, x.rank], ["d", "c"])], to=TP.FLOAT)
        elif how == "slice_by_count":
            cnt = self.shape_of(Val(nz, [x.rank, 0], ["c", "d"]), 1, 2)
            a = self.integer(0, x.rank - 1)
            dims, kinds = list(x.dims), list(x.kinds)
            dims[a], kinds[a] = None, "d"
            self.node("Slice", [x.name, self.i64([0]), cnt, self.i64([a])], [(dims, kinds)])
        elif how == "expand_count":
            cnt = self.shape_of(Val(nz, [x.rank, 0], ["c", "d"]), 1, 2)
            self.node("ConstantOfShape", [cnt], [([None], ["d"])])
        return x, f"NonZero({how})"

    # 4-D only ---------------------------------------------------------------
    def _spatial_ok(self, x):
        # onnxruntime pools / convolves empty tensors only when N is the zero dim
        return x.rank == 4 and x.kinds[1] == "c" and all(d >= 1 for d in x.dims[1:])

    def op_conv(self, x):
        if not self._spatial_ok(x):
            return None
        C = x.dims[1]
        cout = self.integer(1, 4)
        group = 1
        if self.coin(0.2):
            group, cout = C, C
        ks, ss, ds, pads_b, pads_e = [], [], [], [], []
        auto = self.choice(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
        out = []
        for a in (2, 3):
            n = x.dims[a]
            k, s, dl = self.integer(1, 3), self.integer(1, 3), self.choice([1, 1, 2])
            if auto.startswith("SAME"):
                dl = 1   # onnxruntime: "Dilation not supported for AutoPadType::SAME_UPPER"
            pb, pe = self.integer(0, 2), self.integer(0, 2)
            eff = dl * (k - 1) + 1
            if auto == "NOTSET":
                if n + pb + pe < eff:
                    return None
                o = (n + pb + pe - eff) // s + 1
            elif auto == "VALID":
                if n < eff:
                    return None
                o = (n - eff) // s + 1
            else:
                if n == 0:
                    return None
                o = -(-n // s)
            ks.append(k)
            ss.append(s)
            ds.append(dl)
            pads_b.append(pb)
            pads_e.append(pe)
            out.append(o)
        attrs = dict(kernel_shape=ks, strides=ss, dilations=ds, group=group)
        if auto == "NOTSET":
            attrs["pads"] = pads_b + pads_e
        else:
            attrs["auto_pad"] = auto
        ins = [x.name, self.f32([cout, C // group] + ks)]
        if self.coin():
            ins.append(self.f32([cout]))
        dims = [x.dims[0], cout] + out
        kinds = [x.kinds[0], "c", x.kinds[2], x.kinds[3]]
        (o,) = self.node("Conv", ins, [(dims, kinds)], **attrs)
        return self.add(o, dims, kinds), f"Conv({attrs})"

    def op_pool(self, x):
        if not self._spatial_ok(x):
            return None
        op = self.choice(["MaxPool", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"])
        if op.startswith("Global"):
            dims = x.dims[:2] + [1, 1]
            kinds = x.kinds[:2] + ["c", "c"]
            (o,) = self.node(op, [x.name], [(dims, kinds)])
            return self.add(o, dims, kinds), op
        ceil = self.choice([0, 1])
        auto = self.choice(["NOTSET"] * 6 + ["SAME_UPPER", "VALID"])
        ks, ss, ds, pads_b, pads_e, out = [], [], [], [], [], []
        for a in (2, 3):
            n = x.dims[a]
            k, s = self.integer(1, 3), self.integer(1, 3)
            dl = self.choice([1, 1, 2]) if op == "MaxPool" and not auto.startswith("SAME") else 1
            # (SAME with dilation: onnxruntime pads for the undilated kernel, so its output is not
            # ceil(H / s); smtshape says UNKNOWN there, which is sound, and we do not build it)
            pb, pe = self.integer(0, k - 1), self.integer(0, k - 1)
            eff = dl * (k - 1) + 1
            if auto != "NOTSET" and not auto.startswith("SAME"):
                pb = pe = 0                 # VALID: NOTSET without pads (ceil_mode applies)
            if not auto.startswith("SAME"):
                if n + pb + pe < eff:
                    return None
                num = n + pb + pe - eff
                o = (-(-num // s) if ceil else num // s) + 1
                if ceil and (o - 1) * s >= n + pb:
                    o -= 1                  # the last window may not start in the right padding
            else:
                if n == 0:
                    return None
                o = -(-n // s)
                if (o - 1) * s + eff - n < 0:
                    return None   # onnxruntime: "padding values must be non-negative"
            ks.append(k)
            ss.append(s)
            ds.append(dl)
            pads_b.append(pb)
            pads_e.append(pe)
            out.append(o)
        attrs = dict(kernel_shape=ks, strides=ss, ceil_mode=ceil)
        if op == "MaxPool":
            attrs["dilations"] = ds
        if auto == "NOTSET":
            attrs["pads"] = pads_b + pads_e
        else:
            attrs["auto_pad"] = auto
        dims = x.dims[:2] + out
        kinds = x.kinds[:2] + [x.kinds[2], x.kinds[3]]
        (o,) = self.node(op, [x.name], [(dims, kinds)], **attrs)
        return self.add(o, dims, kinds), f"{op}({attrs})"

    def op_channel_bias(self, x):
        if not self._spatial_ok(x):
            return None
        b = self.f32([x.dims[1], 1, 1])
        op = self.choice(["Add", "Mul"])
        (o,) = self.node(op, [x.name, b], [(x.dims, x.kinds)])
        return self.add(o, x.dims, x.kinds), f"{op}(x, bias[C,1,1])"


GENERIC = ["unary", "softmax", "binary", "binary", "where", "matmul", "matmul", "transpose",
           "reshape_chain", "reshape_chain", "reshape_const", "slice", "slice", "slice_dynamic",
           "concat", "split", "unsqueeze", "squeeze", "expand", "gather", "reduce", "pad", "tile",
           "range", "constant_of_shape", "topk", "nonzero"]
CNN = ["conv", "conv", "conv", "pool", "pool", "pool", "channel_bias", "unary", "binary", "concat",
       "slice", "pad", "reshape_chain", "transpose", "reduce", "expand", "topk", "nonzero", "where"]
# ops that onnxruntime cannot run on empty tensors the way the generator builds them
ZERO_UNSAFE = {"range", "topk", "nonzero"}
# Known smtshape bugs the generator steers around (remove a name to re-enable after the fix).
KNOWN_BUGS: set = set()
# Known smtshape resolution gaps: sound, but not EXACT where an exact answer exists.  The
# generator expects no exactness there; add a name to steer around a gap while it is open.
# (Fixed and re-enabled: "graph_input_as_output", "slice_end_minus_const", "range_float_limit".)
KNOWN_GAPS: set = set()
# Constraint rules stricter than onnxruntime: at a binding that violates one of them the model
# still runs in onnxruntime, so the binding is outside what smtshape analyzed and is skipped.
# conv.window: smtshape requires padded input >= dilated kernel; onnxruntime runs MaxPool /
# AveragePool with a larger window (output trunc((H + pads - eff) / s) + 1, i.e. 0 or 1).
# concat.dims: onnxruntime's Concat skips an EMPTY input without checking its other dims
# (Concat([1, 2, 0], [1, 2, 7], axis=1) -> (1, 4, 7)); smtshape requires them equal.
KNOWN_DIVERGENT_RULES = {"conv.window", "concat.dims"}
# ops excluded from a menu because of a known smtshape bug (see the report); re-enable after the fix
EXCLUDED: set = set()


@st.composite
def graphs(draw, family: str):
    seed = draw(st.integers(0, 2 ** 31 - 1))
    if family == "cnn":
        env = {"B": draw(st.integers(1, 3)), "H": draw(st.integers(1, 12)), "W": draw(st.integers(1, 12))}
        env2 = {"B": draw(st.integers(1, 3)), "H": draw(st.integers(1, 13)), "W": draw(st.integers(1, 13))}
        zero = False
    else:
        zero = family == "zero"
        lo = 0 if zero else 1
        env = {"B": draw(st.integers(lo, 4)), "S": draw(st.integers(lo, 9))}
        env2 = {"B": draw(st.integers(lo, 5)), "S": draw(st.integers(lo, 10))}
        if zero and env["B"] and env["S"]:
            env[draw(st.sampled_from(["B", "S"]))] = 0
    b = Builder(draw, env, zero)
    if family == "cnn":
        C = draw(st.sampled_from([1, 2, 3]))
        b.input("x", [env["B"], C, env["H"], env["W"]], ["s", "c", "s", "s"], ["B", C, "H", "W"])
    else:
        tmpl = draw(st.sampled_from(["BS8", "BS8", "S6", "BS42", "B2S"]))
        shapes = {"BS8": (["B", "S", 8]), "S6": (["S", 6]), "BS42": (["B", "S", 4, 2]), "B2S": (["B", 2, "S"])}
        params = shapes[tmpl]
        b.input("x", [env[p] if isinstance(p, str) else p for p in params],
                ["s" if isinstance(p, str) else "c" for p in params], params)
        ytmpl = draw(st.sampled_from([None, None, "same", "tail", "ones_tail", "T", "B1"]))
        if ytmpl is not None:
            if ytmpl == "same":
                yp = list(params)
            elif ytmpl == "tail":
                yp = list(params[1:])
            elif ytmpl == "ones_tail":
                yp = [1] + list(params[1:])
            elif ytmpl == "T":
                # a second symbol: equal to S, or 1, at both bindings (a tie the model cannot see)
                tie = draw(st.sampled_from(["S", 1]))
                env["T"] = env["S"] if tie == "S" else 1
                env2["T"] = env2["S"] if tie == "S" else 1
                yp = ["T" if p == "S" else p for p in params]
            else:
                yp = [p if p == "B" else 1 for p in params]
            b.input("y", [env[p] if isinstance(p, str) else p for p in yp],
                    ["s" if isinstance(p, str) else "c" for p in yp], yp)
    menu = [m for m in (CNN if family == "cnn" else GENERIC)
            if m not in EXCLUDED and not (zero and m in ZERO_UNSAFE)]
    nsteps = draw(st.integers(2, 7))
    x = b.pool[0]
    for _ in range(nsteps):
        for _attempt in range(8):
            op = draw(st.sampled_from(menu))
            src = x if draw(st.integers(0, 3)) else draw(st.sampled_from(b.pool))
            got = getattr(b, "op_" + op)(src)
            if got is not None:
                break
        else:
            src = x
            got = b.op_unary(x)
        x, text = got
        b.steps.append(f"{src.name} -> {text} -> {x.name}")
    # the last float value built: a graph input listed again as a graph output is a known bug
    # ("graph_input_as_output", see KNOWN_BUGS), so the output is never a graph input
    inputs = {i.name for i in b.inputs}
    outs = [v.name for v in b.pool if v.name not in inputs or "graph_input_as_output" not in KNOWN_BUGS]
    out_name = outs[-1] if outs else b.op_unary(b.pool[0])[0].name
    graph = helper.make_graph(b.nodes, "random", b.inputs,
                              [helper.make_tensor_value_info(out_name, TP.FLOAT, None)], initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)
    return Case(model, env, env2, seed, b.steps, b.expect)


# ---------------------------------------------------------------- checking
def exposed(model: onnx.ModelProto, res) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    have = {o.name for o in g.output}
    for node in g.node:
        for o in node.output:
            if o and o not in have:
                dt = res.dtype(o)
                if dt is None:
                    g.output.append(helper.make_empty_tensor_value_info(o))
                else:
                    g.output.append(helper.make_tensor_value_info(o, int(dt), None))
                have.add(o)
    return m


def feeds(model, env, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for i in model.graph.input:
        shape = [d.dim_value if d.HasField("dim_value") else env[d.dim_param] for d in i.type.tensor_type.shape.dim]
        a = rng.standard_normal(shape).astype(np.float32)
        a[rng.random(shape) < 0.3] = 0.0   # zeros so that NonZero counts vary
        out[i.name] = a
    return out


def run(sess, model, env, seed):
    """{value: runtime shape}, or None when onnxruntime cannot run the model at this binding."""
    names = [o.name for o in sess.get_outputs()]
    try:
        vals = sess.run(names, feeds(model, env, seed))
    except Exception as e:  # noqa: BLE001 - a binding the model cannot run at
        note(f"onnxruntime fails at {env}: {str(e)[:200]}")
        return None
    return {n: tuple(v.shape) for n, v in zip(names, vals)}


_CMP = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, "<": operator.lt,
        ">=": operator.ge, ">": operator.gt}


def eval_relation(r, env):
    """True / False for a relation over input dims at a binding; None if not closed."""
    if isinstance(r, Rel):
        a, b = E.evaluate(r.lhs, env), E.evaluate(r.rhs, env)
        if a is None or b is None:
            return None
        return _CMP[r.op](a, b)
    if isinstance(r, Not):
        v = eval_relation(r.arg, env)
        return None if v is None else not v
    vals = [eval_relation(a, env) for a in r.args]
    if isinstance(r, Or):
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    if isinstance(r, And):
        if any(v is False for v in vals):
            return False
        return None if any(v is None for v in vals) else True
    raise TypeError(type(r))


def closed(c, env) -> bool:
    """Does the constraint mention input dims only (no data symbols: no ground truth for those)?"""
    return {s.name for s in c.relation.symbols()} <= set(env)


def divergent(res, env) -> bool:
    """Does the binding violate a constraint onnxruntime is known not to enforce?"""
    return any(c.provenance.rule in KNOWN_DIVERGENT_RULES and closed(c, env)
               and eval_relation(c.relation, env) is False for c in res.constraints)


def check_constraints(res, env):
    for c in res.constraints:
        if closed(c, env):
            v = eval_relation(c.relation, env)
            assert v is not False, f"constraint false at {env} although the model runs: {c}"


def check_shapes(res, truth, env, where):
    for name, shape in truth.items():
        ours = res.shape(name)
        if ours is None:
            continue
        assert len(ours) == len(shape), f"{where}: {name}: rank {len(ours)} ({ours}) vs runtime {shape} at {env}"
        for k, (d, n) in enumerate(zip(ours, shape)):
            if d.exactness is Exactness.EXACT:
                v = d.evaluate(env)      # (with the definitions of the aliases it names)
                assert v == n, f"{where}: {name}[{k}]: EXACT {d} = {v} at {env}, runtime {n} (shape {shape})"
            elif d.exactness is Exactness.UPPER_BOUND:
                v = E.evaluate(d.bound, env, dict(d.definitions))
                assert v is not None and v >= n, \
                    f"{where}: {name}[{k}]: bound {d} = {v} at {env} < runtime {n} (shape {shape})"


STATS = {"models": 0, "second_binding_ran": 0, "second_binding_divergent": 0, "values": 0, "dims": 0, "exact": 0, "expected_exact": 0}


def check_case(case: Case):
    note(repr(case))
    note(onnx.printer.to_text(case.model))
    model = case.model
    res = smtshape.analyze(model)
    m = exposed(model, res)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    truth = run(sess, m, case.env, case.seed)
    assert truth is not None, f"generator error: the model does not run at its own binding {case.env}"
    # the generator's reference shapes agree with onnxruntime at the first binding
    for name, (dims, _) in case.expect.items():
        if name in truth and None not in dims:
            assert list(truth[name]) == dims, f"generator error: {name} tracked {dims}, runtime {truth[name]}"

    assert not divergent(res, case.env), "generator error: the first binding violates a window constraint"
    assert res.conflicts == [], "\n".join(c.explain() for c in res.conflicts)
    check_shapes(res, truth, case.env, "binding 1")
    check_constraints(res, case.env)

    # resolution: every dim the generator knows to follow from the input dims is EXACT
    missed = []
    for name, (dims, kinds) in case.expect.items():
        if name not in truth:
            continue
        ours = res.shape(name)
        STATS["values"] += 1
        if ours is None:
            if "d" not in kinds:
                missed.append(f"{name}: rank unknown, expected {dims}")
            continue
        for k, (d, kind) in enumerate(zip(ours, kinds)):
            STATS["dims"] += 1
            STATS["exact"] += d.exactness is Exactness.EXACT
            if kind != "d":
                STATS["expected_exact"] += 1
                if d.exactness is not Exactness.EXACT:
                    missed.append(f"{name}[{k}]: {d} ({d.exactness.name}), runtime {truth[name][k]}")
    assert not missed, "dims that should be EXACT are not:\n" + "\n".join(missed)

    # a second binding, without re-analyzing: exact expressions hold for every binding
    truth2 = run(sess, m, case.env2, case.seed + 1)
    if truth2 is not None and divergent(res, case.env2):
        STATS["second_binding_divergent"] += 1
        truth2 = None
    if truth2 is not None:
        STATS["second_binding_ran"] += 1
        check_shapes(res, truth2, case.env2, "binding 2")
        check_constraints(res, case.env2)
    STATS["models"] += 1


# SMTSHAPE_FUZZ=N: N random (not derandomized) examples per test, for bug hunting;
# by default each test runs a fixed, derandomized set (about 150 examples in all, a few seconds).
FUZZ = int(os.environ.get("SMTSHAPE_FUZZ", "0") or 0)


def _settings(n):
    return settings(max_examples=FUZZ or n, derandomize=not FUZZ, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@_settings(70)
@given(graphs("generic"))
def test_random_graphs_sound(case):
    check_case(case)


@_settings(50)
@given(graphs("cnn"))
def test_random_cnn_graphs_sound(case):
    check_case(case)


@_settings(30)
@given(graphs("zero"))
def test_random_graphs_zero_sized_sound(case):
    check_case(case)


# found by test_random_cnn_graphs_sound on a fresh seed: an EXACT dim that is a size-capped
# alias (a Reshape with allowzero and a run-time target) was read without its definitions
_ALIASED_RESHAPE = """
<
   ir_version: 8,
   opset_import: ["" : 18]
>
random (float[B,2,H,W] x) => (float[] v20) 
   <float[1] w1 =  {-1}, float[1] w3 =  {-1}, int64 k6 =  {0}, int64 k8 =  {2}, int64[1] k10 =  {0}, int64[1] k12 =  {-1}, int64[1] k13 =  {1}, int64[1] k15 =  {2}, int64[1] k17 =  {3}>
{
   [n0_Add] v2 = Add (w1, x)
   [n1_Add] v4 = Add (w3, x)
   [n2_Shape] v5 = Shape (x)
   [n3_Gather] v7 = Gather <axis: int = 0> (v5, k6)
   [n4_Div] v9 = Div (v7, k8)
   [n5_Unsqueeze] v11 = Unsqueeze (v9, k10)
   [n6_Gather] v14 = Gather <axis: int = 0> (v5, k13)
   [n7_Gather] v16 = Gather <axis: int = 0> (v5, k15)
   [n8_Gather] v18 = Gather <axis: int = 0> (v5, k17)
   [n9_Concat] v19 = Concat <axis: int = 0> (v11, k12, v14, v16, v18)
   [n10_Reshape] v20 = Reshape <allowzero: int = 1> (x, v19)
}
"""


def test_an_exact_alias_dim_evaluates_with_its_definitions():
    import onnx.parser
    from smtshape.testing import run_onnxruntime
    m = onnx.parser.parse_model(_ALIASED_RESHAPE)
    res = smtshape.analyze(m)
    x = np.zeros((2, 2, 1, 1), np.float32)
    (out,) = run_onnxruntime(m, {"x": x})
    dims = res.shape("v20")
    assert all(d.exactness is Exactness.EXACT for d in dims)
    assert [d.evaluate({"B": 2, "H": 1, "W": 1}) for d in dims] == list(out.shape)
