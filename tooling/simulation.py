"""The simulated engine (``components.review.simulation``, shipped for the consumers' review
command) run on this repository's stacks: ``run_stack`` defaults to this checkout."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.review import simulation
from components.review.simulation import (
    DEFAULT_TIMEOUT_SECONDS,
    FakeCloud,
    FirstPreviewCloud,
    RecordingMonitor,
    Registration,
    Simulation,
    program_from_file,
    run_program,
)

from . import REPO_ROOT

__all__ = [
    "FakeCloud",
    "FirstPreviewCloud",
    "RecordingMonitor",
    "Registration",
    "Simulation",
    "program_from_file",
    "run_program",
    "run_stack",
]


def run_stack(
    stack: str,
    root: Path = REPO_ROOT,
    *,
    config_overrides: Mapping[str, Any] | None = None,
    preview: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    mocks: Any = None,
) -> Simulation:
    """Run this repository's ``__main__.py`` with the config of stacks/Pulumi.<stack>.yaml."""
    return simulation.run_stack(
        stack, root, config_overrides=config_overrides, preview=preview, timeout=timeout, mocks=mocks
    )
