"""The GitHub workflows as the tests read them: loaded as GitHub loads them (YAML 1.2), and linted
by zizmor (pinned in requirements-dev.txt), offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML


def load_workflow(path: Path) -> dict[str, Any]:
    # YAML 1.2 (as GitHub reads it): PyYAML would turn the key `on:` into True.
    data = YAML(typ="safe", pure=True).load(path.read_text())
    return json.loads(json.dumps(data))


def zizmor_or_skip() -> list[str]:
    """The zizmor command (requirements-dev.txt pins it); skipped without it, except in CI."""
    found = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    if found is None:
        message = "zizmor is not installed (pip install -r requirements-dev.txt)"
        if os.environ.get("CI") or os.environ.get("GPU_EKS_REQUIRE_REFERENCE"):
            pytest.fail(message)
        pytest.skip(message)
    return [found]


def zizmor(target: Path) -> tuple[int, list[dict[str, Any]]]:
    """Run zizmor offline (no GitHub API: deterministic) with its default persona."""
    done = subprocess.run(
        [*zizmor_or_skip(), "--offline", "--format", "json", "--no-progress", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 1, f"zizmor failed to run:\n{done.stderr}"
    return done.returncode, json.loads(done.stdout or "[]")
