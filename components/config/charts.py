"""Pinned Helm chart versions: the rule that picks a validated version (or, by explicit opt-in, any
version shaped like one). The pins are ``catalog/charts.py``'s; the components log an unvalidated
version's warning (``ChartPin.unvalidated_warning``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import ValidationInfo


def pinned_chart_version(value: str, info: ValidationInfo, validated: Iterable[str], what: str, example: str) -> str:
    """A Helm chart version: one of ``validated``, or (with ``allowUnvalidatedChartVersion``, a field
    declared before ``chartVersion`` so that ``info.data`` holds it) any version shaped like
    ``example`` (``v`` prefix or not, as the chart repository spells its versions)."""
    versions = list(validated)
    if value in versions:
        return value
    if not info.data.get("allow_unvalidated_chart_version"):
        raise ValueError(
            f"one of {', '.join(versions)} ({what} versions this library is validated against), or set "
            "allowUnvalidatedChartVersion: true"
        )
    prefix = "v" if example.startswith("v") else ""
    if not re.fullmatch(rf"{prefix}\d+\.\d+\.\d+([-+][\w.]+)?", value, re.ASCII):
        raise ValueError(f"a chart version such as {example}")
    return value
