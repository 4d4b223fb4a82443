"""promtool (Prometheus's rule checker) for the alert tests.

Found as ``$PROMTOOL``, on PATH, or in .reference-cache/promtool (``scripts/get-promtool`` puts it
there from the distribution's ``prometheus`` package; ``./scripts/test`` runs it before the tests,
and in a bare pytest run the first test that needs it runs it once). Without it a test is skipped
saying why, or fails when GPU_EKS_REQUIRE_REFERENCE is set (.ci/run): CI must run the alert tests,
never pass without them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.reference import unavailable

CACHED = ROOT / ".reference-cache" / "promtool" / "promtool"
FETCH = ROOT / "scripts" / "get-promtool"


@functools.cache
def locate() -> tuple[Path | None, str]:
    """(promtool, "") or (None, why it is missing)."""
    given = os.environ.get("PROMTOOL")
    if given:
        return (Path(given), "") if Path(given).is_file() else (None, f"PROMTOOL={given} is not a file")
    on_path = shutil.which("promtool")
    if on_path:
        return Path(on_path), ""
    if not CACHED.is_file():
        try:
            done = subprocess.run([str(FETCH)], capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"promtool not found and {FETCH.name} could not run: {err}"
        if done.returncode != 0:
            return None, f"promtool not found and {FETCH.name} failed: {done.stderr.strip()[-500:]}"
    return (CACHED, "") if CACHED.is_file() else (None, f"promtool not found at {CACHED}")


def promtool() -> Path:
    """The promtool binary, or skip (fail under GPU_EKS_REQUIRE_REFERENCE) saying why."""
    path, why = locate()
    if path is None:
        unavailable(f"promtool unavailable, the alert rules were NOT checked: {why}")
    return path
