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
