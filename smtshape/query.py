"""Queries over value dims: ``name[axis]`` references in relations.

``parse_query(result, "x[0] == y[1]")`` gives the Relation with each value
dim replaced by its solved expression; ``Result.prove`` and ``smtshape
query`` both use it.
"""
from __future__ import annotations

import re

from .errors import BadInput


def _parse_problem(e) -> str:
    msg = getattr(e, "problem", None) or str(e)
    col = getattr(e, "column", None)
    if col is not None and getattr(e, "source", None) is None:
        msg += f" (at column {col})"
    return msg


_AXIS_RE = re.compile(r"\[\s*([+-]?[0-9]{1,9})\s*\]")
_IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def rewrite_value_dims(text: str, value_names, taken=()) -> tuple[str, dict]:
    """Replace each ``name[axis]`` / ``"name"[axis]`` of a known value by a fresh
    placeholder identifier.

    Value names may hold '/', '.', ':' and the like, so unquoted references are
    matched against the known names, longest first, as the text just before the
    '['; a quoted name followed by ``[axis]`` always names a value.  Returns the
    rewritten text and {placeholder: (value name, axis)}.
    """
    names = sorted(set(value_names), key=len, reverse=True)
    taken = set(taken)
    refs: dict = {}
    by_ref: dict = {}

    def placeholder(name, axis):
        key = (name, axis)
        if key in by_ref:
            return by_ref[key]
        k = len(refs)
        while True:
            ph = f"_smtq_v{k}"
            if ph not in taken and ph not in refs and ph not in text:
                break
            k += 1
        refs[ph] = key
        by_ref[key] = ph
        return ph

    out: list[str] = []   # finished pieces
    buf = ""              # the current unquoted run
    pending = None        # (name, raw text) of a quoted name followed so far only by whitespace
    i, n = 0, len(text)

    def flush_pending():
        nonlocal pending
        if pending is not None:
            out.append(pending[1])
            pending = None

    while i < n:
        c = text[i]
        if c == '"':
            j, chars = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    chars.append(text[j + 1])
                    j += 2
                    continue
                chars.append(text[j])
                j += 1
            if j >= n:  # unterminated: the parser reports it
                flush_pending()
                buf += text[i:]
                break
            flush_pending()
            out.append(buf)
            buf = ""
            pending = ("".join(chars), text[i:j + 1])
            i = j + 1
            continue
        if c == "[":
            m = _AXIS_RE.match(text, i)
            if m is None:
                raise BadInput(f"in {text!r}: '[' must be followed by an integer axis and ']' "
                               "(write name[axis] or \"name\"[axis])")
            axis = int(m.group(1))
            i = m.end()
            if pending is not None:   # "name"[axis]
                name = pending[0]
                if name not in value_names:
                    raise BadInput(f"in {text!r}: no value named {name!r} in the model")
                pending = None
                buf = placeholder(name, axis)
                continue
            head = buf.rstrip()
            found = None
            for name in names:
                if head.endswith(name):
                    start = len(head) - len(name)
                    if start > 0 and head[start - 1] in _IDENT and name[0] in _IDENT:
                        continue  # would split an identifier
                    found = (name, start)
                    break
            if found is None:
                m2 = re.search(r"[A-Za-z0-9_./:\-]*$", head)
                shown = m2.group(0) if m2 and m2.group(0) else head[-20:]
                raise BadInput(f"in {text!r}: no value named {shown!r} in the model "
                               "(quote names with unusual characters: \"name\"[axis])")
            name, start = found
            buf = head[:start] + placeholder(name, axis)
            continue
        if pending is not None and not c.isspace():
            flush_pending()
        buf += c
        i += 1
    flush_pending()
    out.append(buf)
    return "".join(out), refs


def parse_query(result, text: str):
    """The Relation a query text means, with value dims replaced by their expressions."""
    from . import expr as E
    from .parse import ParseError, parse_relation

    store = result.store
    rewritten, refs = rewrite_value_dims(text, result.value_names, store.symbols.keys())
    subst = {}
    shown = {}
    for ph, (name, axis) in refs.items():
        shape = result.shape(name)
        if shape is None:
            raise BadInput(f"{name}[{axis}]: the rank of '{name}' is unknown, so it has no dim to compare")
        if not -len(shape) <= axis < len(shape):
            raise BadInput(f"{name}[{axis}]: '{name}' has rank {len(shape)}; axis {axis} is out of range")
        d = shape[axis]
        subst[E.symbol(ph)] = E.to_sympy(d.expr)
        shown[f"{name}[{axis}]"] = d

    def symbol(name):
        if name in refs:
            return E.symbol(name)
        info = store.symbols.get(name)
        if info is None:
            known = ", ".join(sorted(i.name for i in store.input_symbols())) or "none"
            raise BadInput(f"unknown dim name {name!r} (input dims: {known}; "
                           "refer to a value's dim as name[axis])")
        return info.symbol

    try:
        rel = parse_relation(rewritten, symbol=symbol)
    except ParseError as e:
        problem = _parse_problem(e)
        for ph, (name, axis) in refs.items():
            problem = problem.replace(ph, f"{name}[{axis}]")
        if refs and getattr(e, "column", None) is not None:
            problem = re.sub(r" \(at column \d+\)$", "", problem)
        raise BadInput(f"bad query {text!r}: {problem}") from None

    def f(e):
        if isinstance(e, int) or not subst:
            return e
        return E.norm(e.xreplace(subst))

    return rel.map(f), shown


