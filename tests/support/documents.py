"""Render documents built by hand, in the shape ``python -m tooling render`` writes (the impact
summary and the diff read them); their resources' types are in tests/support/tokens.py."""

from __future__ import annotations

from typing import Any


def item(typ: str, name: str, inputs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": typ, "name": name, "urn": f"urn:pulumi:dev::p::{typ}::{name}", "inputs": inputs, **extra}


def doc(*items: dict[str, Any]) -> dict[str, Any]:
    return {"project": "p", "stack": "dev", "resources": list(items)}
