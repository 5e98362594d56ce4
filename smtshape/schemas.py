"""The ONNX schemas' static contract of every standard op, without importing onnx.

What a node of a standard domain (``ai.onnx``, ``ai.onnx.ml``, the preview domains) must
satisfy whatever its shapes: how many inputs and outputs it has, which attributes it
must carry and of which type, and which element types each input may have (a type
constraint ``T`` binds every homogeneous input it types to one element type).  The
table ``schema/onnx-schemas.json`` is generated from the installed onnx by
``python -m smtshape.schemas --write`` (``tests/test_schemas.py`` checks it against the
installed onnx); reading it costs about 1.5 ms and happens on the first node whose
rule runs in a standard domain.

Each op's rows are a JSON text of their own inside the table, parsed on first use.

``Signature.check(ctx)`` states every violation as a conflict of the node (``ctx.conflict``
/ ``ctx.invalid``, rule ids ``schema.*``) and returns the element type of each output that
the schema fixes (``tensor(int64)`` for Shape, the input's ``T`` for Add).
"""
from __future__ import annotations

import json
import os
from functools import lru_cache

from . import irtypes as ir
from .errors import Invalid

TABLE = os.path.join(os.path.dirname(__file__), "schema", "onnx-schemas.json")
STANDARD_DOMAINS = ("", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview")

SINGLE, OPTIONAL, VARIADIC = 0, 1, 2
_TENSOR_OF = {dt: f"tensor({dt.name.lower()})" for dt in ir.DataType if dt is not ir.DataType.UNDEFINED}
_DTYPE_OF = {s: dt for dt, s in _TENSOR_OF.items()}
_ATTR_NAMES = {int(a): a.name.lower() for a in ir.AttributeType}


def tensor_type(dtype) -> str | None:
    """``DataType.FLOAT`` -> ``tensor(float)``."""
    return _TENSOR_OF.get(dtype)


def type_string(t) -> str | None:
    """A value's type in the schemas' notation (``tensor(float)``, ``seq(tensor(int64))``,
    ``optional(tensor(float))``), or None when its element type is unknown."""
    if t is None:
        return None
    s = t.seq
    if s is None:
        return _TENSOR_OF.get(t.dtype) if t.dtype is not None else None
    if s.optional:
        inner = s.elems[0] if s.elems else None
        inner_s = type_string(inner) if inner is not None else None
        return None if inner_s is None else f"optional({inner_s})"
    return None if s.elem_dtype is None else f"seq({_TENSOR_OF.get(s.elem_dtype, '?')})"


class Signature:
    """One schema version: formal inputs / outputs (type, option, homogeneous), the
    allowed type strings of each type parameter, attribute types and required ones."""

    __slots__ = ("op", "since", "inputs", "outputs", "allowed", "attrs", "required", "min_in", "max_in",
                 "min_out", "max_out", "_passed")

    def __init__(self, op, since, row, sets):
        self.op = op
        self.since = since
        self.inputs = [tuple(p) for p in row["i"]]        # (type, option, homogeneous)
        self.outputs = [tuple(p) for p in row["o"]]
        self.allowed = {k: frozenset(sets[v]) for k, v in row["t"].items()}
        self.attrs = row["a"]                              # name -> AttributeType code
        self.required = row["r"]
        self.min_in, self.max_in, self.min_out, self.max_out = row["n"]
        self._passed: dict = {}     # what ``check`` depends on -> its answer, for nodes that passed

    def formal(self, params, i: int):
        """The formal parameter of actual position ``i`` (a variadic last one repeats)."""
        if i < len(params):
            return params[i]
        if params and params[-1][1] == VARIADIC:
            return params[-1]
        return None

    def check(self, ctx) -> list:
        """State the schema's preconditions on the node ``ctx``; the element type string
        of each output the schema fixes (None where it does not).

        A node that passes is remembered by all the check reads: its stored attributes
        (``attr_key``: their names, types and values), its inputs' presence and type strings
        and its output count; a node equal in those passes with the same answer (a node that
        fails is checked every time: its conflicts are its own)."""
        key = None
        ak = getattr(ctx.node, "attr_key", None)
        if ak is not None:
            ins = ctx.inputs
            key = (ak, len(ctx.outputs), tuple([0 if v is None else type_string(ctx.input(i))
                                                for i, v in enumerate(ins)]))
            hit = self._passed.get(key)
            if hit is not None:
                return list(hit)
        outs = self._check(ctx)
        if key is not None:
            if len(self._passed) > 4096:
                self._passed.clear()
            self._passed[key] = tuple(outs)
        return outs

    def _check(self, ctx) -> list:
        op = ctx.op_type
        n_in = len(ctx.inputs)
        present = n_in
        while present and ctx.inputs[present - 1] is None:
            present -= 1
        if present < self.min_in or n_in > self.max_in:
            want = str(self.min_in) if self.min_in == self.max_in else \
                f"{self.min_in} to {self.max_in}" if self.max_in < 2 ** 31 - 1 else f"at least {self.min_in}"
            ctx.invalid("schema.arity", f"{op}-{self.since} takes {want} inputs, the node has {present}",
                        f"give the node {want} inputs")
        for i, p in enumerate(self.inputs):
            if p[1] == SINGLE and i < present and ctx.inputs[i] is None:
                ctx.invalid("schema.arity", f"{op}-{self.since} input {i} is required, the node omits it",
                            f"give the node its input {i}")
        n_out = len(ctx.outputs)
        if n_out < self.min_out or n_out > self.max_out:
            ctx.invalid("schema.arity", f"{op}-{self.since} has {self.min_out}"
                        + (f" to {self.max_out}" if self.max_out != self.min_out else "")
                        + f" outputs, the node has {n_out}")
        attrs = ctx.attributes
        for name in self.required:
            if name not in attrs:
                ctx.invalid("schema.attribute", f"{op}-{self.since}'s required attribute '{name}' is missing",
                            f"give the node its '{name}' attribute")
        for name, a in attrs.items():
            want = self.attrs.get(name)
            if want is None:
                ctx.invalid("schema.attribute", f"{op}-{self.since} has no attribute '{name}'",
                            f"remove the attribute '{name}'")
            kind = int(a.type) if a.type is not None else 0
            if kind and want and kind != want:
                ctx.invalid("schema.attribute", f"{op}-{self.since}'s attribute '{name}' must be "
                            f"{_ATTR_NAMES.get(want, want)}, the node gives {_ATTR_NAMES.get(kind, kind)}")
        bound: dict = {}
        refused: set = set()          # type parameters already reported (one conflict each)
        conflicted = False
        for i in range(n_in):
            t = ctx.input(i) if ctx.inputs[i] is not None else None
            s = type_string(t)
            p = self.formal(self.inputs, i)
            if s is None or p is None:
                continue
            typ = p[0]
            allowed = self.allowed.get(typ)
            if allowed is None:             # a concrete type, not a parameter
                if s != typ:
                    conflicted = True
                    ctx.conflict("schema.type", f"{op}-{self.since} input {i} must be {typ}, it is {s}",
                                 f"cast input {i} to {typ}")
                continue
            if s not in allowed:
                if typ in refused:
                    continue
                refused.add(typ)
                conflicted = True
                ctx.conflict("schema.type", lambda i=i, s=s, typ=typ, allowed=allowed:
                             f"{op}-{self.since} input {i} is {s}, which its type {typ} does not allow "
                             f"(allowed: {', '.join(sorted(allowed))})", f"cast input {i} to an allowed type")
                continue
            if p[2] or p[1] != VARIADIC:    # homogeneous: every input typed T has one type
                first = bound.get(typ)
                if first is None:
                    bound[typ] = (s, i)
                elif first[0] != s:
                    conflicted = True
                    ctx.conflict("schema.type", f"{op}-{self.since} inputs {first[1]} and {i} are both of type "
                                 f"{typ} but are {first[0]} and {s}", f"cast input {i} to {first[0]}")
        if conflicted:
            # (a node whose inputs have types its schema refuses cannot run: no outputs)
            raise Invalid(f"{op}-{self.since}: input element types")
        outs = []
        for k in range(n_out):
            p = self.formal(self.outputs, k)
            if p is None:
                outs.append(None)
            elif p[0] in self.allowed:
                b = bound.get(p[0])
                outs.append(b[0] if b is not None else
                            next(iter(self.allowed[p[0]])) if len(self.allowed[p[0]]) == 1 else None)
            else:
                outs.append(p[0])
        return outs


@lru_cache(maxsize=None)
def _table():
    with open(TABLE, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=4096)
def signature(domain: str, op: str, opset: int | None) -> Signature | None:
    """The schema of ``domain::op`` at ``opset`` (the newest version not after it), or
    None: not a standard op, or no version at that opset."""
    if domain == "ai.onnx":
        domain = ""
    if domain not in STANDARD_DOMAINS or opset is None:
        return None
    table = _table()
    text = table["ops"].get(f"{domain}::{op}")
    if not text:
        return None
    versions = json.loads(text)
    best = None
    for since, row in versions:
        if since <= opset and (best is None or since > best[0]):
            best = (since, row)
    return None if best is None else Signature(op, best[0], best[1], table["sets"])


def dtype_of(type_str: str | None):
    """``tensor(int64)`` -> DataType.INT64; None for anything else."""
    return _DTYPE_OF.get(type_str) if type_str else None


# ------------------------------------------------------------------ generating the table

def build_table() -> dict:
    """The table from the installed onnx (imports onnx)."""
    import onnx
    from onnx import defs

    sets: list = []
    set_index: dict = {}

    def set_id(types) -> int:
        key = tuple(sorted(types))
        if key not in set_index:
            set_index[key] = len(sets)
            sets.append(list(key))
        return set_index[key]

    def params(ps):
        out = []
        for p in ps:
            opt = {defs.OpSchema.FormalParameterOption.Single: SINGLE,
                   defs.OpSchema.FormalParameterOption.Optional: OPTIONAL,
                   defs.OpSchema.FormalParameterOption.Variadic: VARIADIC}[p.option]
            out.append([p.type_str, opt, bool(p.is_homogeneous)])
        return out

    ops: dict = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain not in STANDARD_DOMAINS:
            continue
        big = 2 ** 31 - 1
        row = {"i": params(s.inputs), "o": params(s.outputs),
               "t": {t.type_param_str: set_id(t.allowed_type_strs) for t in s.type_constraints},
               "a": {name: int(a.type) for name, a in sorted(s.attributes.items())},
               "r": sorted(name for name, a in s.attributes.items() if a.required),
               "n": [s.min_input, min(s.max_input, big), s.min_output, min(s.max_output, big)]}
        ops.setdefault(f"{s.domain}::{s.name}", []).append([s.since_version, row])
    for v in ops.values():
        v.sort(key=lambda x: x[0])
    # each op's versions as a JSON text of its own, parsed when a node of that op is first
    # met: loading the whole table then costs about 1.5 ms instead of 9
    return {"onnx_version": onnx.__version__, "sets": sets,
            "ops": {k: json.dumps(v, separators=(",", ":")) for k, v in sorted(ops.items())}}


def _main(argv=None) -> int:
    import argparse
    from .fileio import write_atomic
    p = argparse.ArgumentParser(prog="python -m smtshape.schemas", allow_abbrev=False,
                                description="Regenerate smtshape/schema/onnx-schemas.json from the installed onnx.")
    p.add_argument("--write", action="store_true", help="write the table (otherwise print its size)")
    args = p.parse_args(argv)
    text = json.dumps(build_table(), separators=(",", ":"), sort_keys=False)
    if args.write:
        write_atomic(TABLE, text.encode("utf-8"))
    print(f"{len(text):,} bytes" + (f" written to {TABLE}" if args.write else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
