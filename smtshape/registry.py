"""The opset-aware rule registry.

A rule is a function ``rule(ctx: Context) -> None`` that reads the node's
inputs through ``ctx``, sets its outputs and emits the constraints the op's
semantics imply.  Rules are registered per ``(domain, op_type,
since_version)``; a node of opset ``v`` uses the rule with the largest
``since_version <= v``.

Registries are objects and layer: a registry answers from its own rules
first, then from its parent's.  Three are worth knowing:

``BUILTIN``   smtshape's own rules.  ``smtshape.ops`` (imported by ``import smtshape``)
              gives it the table of op families (``defer``); a family's module is
              imported, and registers its rules, on the first lookup of one of its
              ops, so a run pays only for the families its model uses.  Whatever
              needs every rule (``registered_ops``, ``copy``) imports them all first.
``DEFAULT``   a layer over ``BUILTIN`` that ``smtshape.register`` writes to and
              that ``analyze`` uses when no ``rules=`` is given: a rule
              registered there takes precedence over the built-in one for the
              same op, whenever it was registered, and stays for the process.
``Registry()`` a fresh layer over ``BUILTIN`` for scoped use, nothing shared::

    rules = smtshape.Registry()

    @rules.register("com.example", "MyOp", since_version=1)
    def my_op(ctx):
        ctx.set_output(0, ctx.shape(0), ctx.dtype(0))

    smtshape.analyze(model, rules=rules)
"""
from __future__ import annotations

import importlib
from bisect import bisect_right
from typing import Callable

Rule = Callable[["object"], None]

_GENERATION = [0]      # bumped by every registration: lookup caches compare it


def _norm_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


class Registry:
    def __init__(self, parent: "Registry | None" = None, *, builtin_parent: bool = True):
        self._rules: dict[tuple[str, str], list[tuple[int, Rule]]] = {}
        self._hidden: set = set()
        self.parent = parent if parent is not None else (BUILTIN if builtin_parent and "BUILTIN" in globals()
                                                         else None)
        self._cache: dict = {}
        self._deferred: dict[tuple[str, str], str] = {}   # (domain, op) -> module that registers its rules

    def defer(self, families: dict, package: str) -> None:
        """Rules registered on first use: ``families`` maps a module of ``package`` to the
        ops it registers in this layer, ``{domain: "Op Op ..."}``; the module is imported
        when one of them is first looked up (or registered, unregistered, listed, copied:
        whatever reads the op's rules sees the module's rules first)."""
        for module, domains in families.items():
            for domain, ops in domains.items():
                for op in ops.split():
                    self._deferred[(_norm_domain(domain), op)] = f"{package}.{module}"
        _GENERATION[0] += 1

    def _materialize(self, key) -> None:
        """Import the module ``defer`` named for ``key`` (its rules register themselves)."""
        module = self._deferred.get(key)
        if module is None:
            return
        keys = [k for k, m in self._deferred.items() if m == module]
        for k in keys:
            del self._deferred[k]        # (before importing: its own registrations come back here)
        try:
            importlib.import_module(module)
        except BaseException:
            self._deferred.update(dict.fromkeys(keys, module))   # (a failed import is retried, never "no rule")
            raise

    def _materialize_all(self) -> None:
        while self._deferred:
            self._materialize(next(iter(self._deferred)))

    def register(self, domain: str, op_type: str, since_version: int = 1):
        """Decorator: register ``fn`` as the rule for ``op_type`` from ``since_version`` on."""

        def deco(fn: Rule) -> Rule:
            self._materialize((_norm_domain(domain), op_type))    # (a deferred built-in rule first)
            entries = self._rules.setdefault((_norm_domain(domain), op_type), [])
            entries[:] = [e for e in entries if e[0] != since_version]
            entries.append((since_version, fn))
            entries.sort(key=lambda e: e[0])
            _GENERATION[0] += 1
            return fn

        return deco

    def hide(self, domain: str, op_type: str) -> None:
        """Make this layer answer "no rule" for an op, whatever its parents hold
        (to see how a model fares without a rule, or to force the fallback)."""
        self._hidden.add((_norm_domain(domain), op_type))
        _GENERATION[0] += 1

    def unregister(self, domain: str, op_type: str) -> None:
        """Remove this layer's rules for an op (the parent's, if any, show through)."""
        self._materialize((_norm_domain(domain), op_type))
        self._rules.pop((_norm_domain(domain), op_type), None)
        _GENERATION[0] += 1

    def _own(self, key, opset):
        if key in self._deferred:
            self._materialize(key)
        entries = self._rules.get(key)
        if not entries:
            return None
        if opset is None:
            return entries[-1][1]
        i = bisect_right([v for v, _ in entries], opset)
        return entries[i - 1][1] if i else None

    def lookup(self, domain: str, op_type: str, opset: int | None) -> Rule | None:
        key = (_norm_domain(domain), op_type)
        ck = (key, opset, _GENERATION[0])
        hit = self._cache.get(ck, self)
        if hit is not self:
            return hit
        if len(self._cache) > 4096:
            self._cache.clear()
        if key in self._hidden:
            return None
        rule = self._own(key, opset)
        if rule is None and self.parent is not None:
            rule = self.parent.lookup(domain, op_type, opset)
        self._cache[ck] = rule
        return rule

    def registered_ops(self) -> list[tuple[str, str, int]]:
        """(domain, op, since_version) of this layer and its parents."""
        self._materialize_all()
        out = {(d, op, v) for (d, op), es in self._rules.items() for v, _ in es}
        if self.parent is not None:
            out |= set(self.parent.registered_ops())
        return sorted(out)

    def copy(self) -> "Registry":
        self._materialize_all()
        new = Registry(self.parent)
        new._rules = {k: list(v) for k, v in self._rules.items()}
        new._hidden = set(self._hidden)
        return new


BUILTIN = Registry(builtin_parent=False)
DEFAULT = Registry(BUILTIN)


def register(domain: str, op_type: str, since_version: int = 1):
    """Register a built-in rule (used by ``smtshape.ops``)."""
    return BUILTIN.register(domain, op_type, since_version)


def register_user(domain: str, op_type: str, since_version: int = 1):
    """``smtshape.register``: a rule in the DEFAULT layer, over the built-ins."""
    return DEFAULT.register(domain, op_type, since_version)


def lookup(domain: str, op_type: str, opset: int | None) -> Rule | None:
    return DEFAULT.lookup(domain, op_type, opset)


def registered_ops() -> list[tuple[str, str, int]]:
    return DEFAULT.registered_ops()
