"""Every standard operator schema of the installed onnx has a smtshape rule.

Enumerates ``onnx.defs.get_all_schemas_with_history()`` (every domain it holds:
ai.onnx, ai.onnx.ml, ai.onnx.preview, ai.onnx.preview.training, ...), skips
deprecated schemas, and requires for each (domain, op, since_version) a rule
registered at a version <= since_version, looked up as the engine looks it up
(``smtshape.registry.lookup`` with the engine's domain name: "ai.onnx" is "").
A node of that schema's opset range then never falls through to "no rule".
"""
from __future__ import annotations

import onnx

import smtshape  # noqa: F401  (registers the built-in rules)
from smtshape import registry


def _engine_domain(domain: str) -> str:
    """The engine's normalisation of a node's domain (Engine.opset)."""
    return "" if domain in ("", "ai.onnx") else domain


def _schemas():
    return [s for s in onnx.defs.get_all_schemas_with_history() if not s.deprecated]


def test_schemas_enumerated():
    """The enumeration sees the standard domains and a realistic number of schemas."""
    schemas = _schemas()
    domains = {s.domain for s in schemas}
    assert {"", "ai.onnx.ml"} <= domains, domains
    assert len(schemas) > 300
    assert all(s.since_version >= 1 for s in schemas)


def test_domain_normalisation_matches_engine():
    assert registry.lookup("ai.onnx", "Add", 14) is registry.lookup("", "Add", 14) is not None
    assert _engine_domain("ai.onnx") == "" and _engine_domain("ai.onnx.ml") == "ai.onnx.ml"


def test_every_standard_schema_has_a_rule():
    missing = sorted((s.domain or "ai.onnx", s.name, s.since_version) for s in _schemas()
                     if registry.lookup(_engine_domain(s.domain), s.name, s.since_version) is None)
    assert not missing, (f"{len(missing)} standard schemas (onnx {onnx.__version__}) without a rule at their "
                         "since_version:\n  " + "\n  ".join(f"{d}::{op} since {v}" for d, op, v in missing))


def _registrations():
    """(domain, op) -> the family module (relative to smtshape.ops) whose rules it has,
    every family imported; and the newest since_version of a default-domain rule."""
    registry.BUILTIN.registered_ops()          # (imports every family)
    where, newest = {}, 1
    for (domain, op), entries in registry.BUILTIN._rules.items():
        mods = {fn.__module__ for _, fn in entries}
        if not any(m.startswith("smtshape.ops.") for m in mods):
            continue        # (rules a test module registered for itself: tests/ops/test_elementwise.py)
        assert len(mods) == 1, f"{domain}::{op} has rules in several modules: {sorted(mods)}"
        where[(domain, op)] = mods.pop().removeprefix("smtshape.ops.")
        if domain == "":
            newest = max(newest, max(v for v, _ in entries))
    return where, newest


def test_the_family_table_lists_what_each_module_registers():
    """``ops.FAMILIES`` (the registry imports a family on its ops' first use) names, for
    every op, the module that registers it, and nothing else; ``ops.NEWEST_OPSET`` is the
    newest default-domain since_version.  On failure, the table to paste is printed."""
    from smtshape import ops
    where, newest = _registrations()
    table = {(d, op): m for m, ds in ops.FAMILIES.items() for d, names in ds.items() for op in names.split()}
    if table != where:
        fams: dict = {}
        for (d, op), m in sorted(where.items()):
            fams.setdefault(m, {}).setdefault(d, []).append(op)
        text = "\n".join(f"    {m!r}: {{" + ", ".join(f"{d!r}: {' '.join(ops_)!r}" for d, ops_ in ds.items()) + "},"
                         for m, ds in sorted(fams.items()))
        raise AssertionError("smtshape/ops/__init__.py FAMILIES differs from what the modules register "
                             f"(missing: {sorted(set(where) - set(table))}, extra: {sorted(set(table) - set(where))}, "
                             f"moved: {sorted(k for k in where if k in table and table[k] != where[k])}); "
                             f"the table:\n{text}")
    assert ops.NEWEST_OPSET == newest


def test_a_family_is_imported_on_first_use(tmp_path):
    """A model using only Relu imports the elementwise family and no other (a fresh
    process); listing the registry imports them all."""
    import subprocess
    import sys

    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    p = tmp_path / "relu.onnx"
    p.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    code = ("import sys, smtshape\n"
            "from smtshape import ops\n"
            "fams = ['smtshape.ops.' + m for m in ops.FAMILIES]\n"
            "r = smtshape.analyze(sys.argv[1])\n"
            "print(r.consistent, [str(d) for d in r.shape('y')], sorted(m for m in fams if m in sys.modules))\n"
            "smtshape.registry.BUILTIN.registered_ops()\n"
            "print(all(m in sys.modules for m in fams))")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["True ['2', '3'] ['smtshape.ops.elementwise']", "True"]


def test_a_rule_registered_over_a_family_not_yet_imported_keeps_precedence(tmp_path, monkeypatch):
    """Registering an op of a deferred family imports the family first, so the family's
    own registration cannot come later and replace the caller's rule; a lookup imports it
    once."""
    from smtshape import registry as R

    layer = R.Registry(builtin_parent=False)
    monkeypatch.setattr(R, "TEST_LAYER", layer, raising=False)
    pkg = tmp_path / "smtshape_test_families"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "foo.py").write_text("import smtshape.registry as R\n"
                                "R.TEST_LAYER.register('', 'Foo', 1)(lambda ctx: None)\n"
                                "R.TEST_LAYER.register('', 'Bar', 1)(lambda ctx: None)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    layer.defer({"foo": {"": "Foo Bar"}}, "smtshape_test_families")
    assert layer.lookup("", "Bar", 5) is not None and "smtshape_test_families.foo" in __import__("sys").modules

    other = R.Registry(builtin_parent=False)
    monkeypatch.setattr(R, "TEST_LAYER", other)
    monkeypatch.delitem(__import__("sys").modules, "smtshape_test_families.foo")
    other.defer({"foo": {"": "Foo Bar"}}, "smtshape_test_families")

    def mine(ctx):
        pass

    other.register("", "Foo", 1)(mine)
    assert other.lookup("", "Foo", 5) is mine and other.lookup("", "Bar", 5) is not None
