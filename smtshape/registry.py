"""The opset-aware rule registry.

A rule is a function ``rule(ctx: Context) -> None`` that reads the node's
inputs through ``ctx``, sets its outputs and emits the constraints the op's
semantics imply.  Rules are registered per ``(domain, op_type,
since_version)``; a node of opset ``v`` uses the rule with the largest
``since_version <= v``.  Users add their own ops with the same decorator::

    from smtshape import register

    @register("com.example", "MyOp", since_version=1)
    def my_op(ctx):
        ctx.set_output(0, ctx.shape(0), ctx.dtype(0))
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Callable

Rule = Callable[["object"], None]

_RULES: dict[tuple[str, str], list[tuple[int, Rule]]] = {}


def _norm_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def register(domain: str, op_type: str, since_version: int = 1):
    """Decorator: register ``fn`` as the rule for ``op_type`` from ``since_version`` on."""

    def deco(fn: Rule) -> Rule:
        entries = _RULES.setdefault((_norm_domain(domain), op_type), [])
        entries[:] = [e for e in entries if e[0] != since_version]
        entries.append((since_version, fn))
        entries.sort(key=lambda e: e[0])
        return fn

    return deco


def lookup(domain: str, op_type: str, opset: int | None) -> Rule | None:
    entries = _RULES.get((_norm_domain(domain), op_type))
    if not entries:
        return None
    if opset is None:
        return entries[-1][1]
    i = bisect_right([v for v, _ in entries], opset)
    return entries[i - 1][1] if i else None


def registered_ops() -> list[tuple[str, str, int]]:
    return sorted((d, op, v) for (d, op), es in _RULES.items() for v, _ in es)
