"""``gpu-eks-review`` run on a consumer's own project (tests/consumer_project/, in a git repository
of its own): in a new Python as the consumer runs it, or its ``main`` in this process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from components.review import cli
from tests.support.commands import main_in_process
from tests.support.paths import ROOT, TESTS

PROJECT = TESTS / "consumer_project"

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]


def review_subprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m components.review <args>`` in a new Python, as the consumer runs the command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)  # the library of this work tree, as if installed
    return subprocess.run(
        [sys.executable, "-m", "components.review", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def review(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The same command run in this process (its ``main``, what ``python -m components.review`` calls;
    ``review_subprocess`` proves that entry point): a new Python per call cost about 2 s of imports.
    The base is still rendered in a subprocess by the command itself, with PYTHONPATH as above. The
    consumer program's modules (its ``infra``) and its folder on sys.path are removed afterwards, so
    no later render reuses another copy's modules."""
    path, env = list(sys.path), os.environ.get("PYTHONPATH")
    before = set(sys.modules)
    try:
        os.environ["PYTHONPATH"] = str(ROOT)
        return main_in_process(cli.main, list(args), cwd=cwd, command=["gpu-eks-review"])
    finally:
        if env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env
        added = [Path(folder) for folder in sys.path if folder not in path]
        sys.path[:] = path
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None)
            if file and any(Path(file).is_relative_to(folder) for folder in added):
                del sys.modules[name]
