"""Copies of the project for tests that change files (a stack added, a commit made): never the
checkout itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.paths import ROOT


def copy_project(dest: Path) -> Path:
    """The program, its components, tooling and stacks, copied (tests add stacks to the copy, never here)."""
    root = dest / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, root / name)
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("components", "tooling", "stacks"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    return root


def copy_repository_files(dest: Path, *, untracked: bool) -> Path:
    """The repository's files copied under ``dest``, as git lists them: the tracked ones (what a
    checkout of a commit holds), and with ``untracked`` the new ones git does not ignore too, each
    with the work tree's content (uncommitted changes included). Never the tool venvs and caches a
    checkout grows (.tools alone is about 300 MB)."""
    listing = ["git", "-C", str(ROOT), "ls-files", "-z", "--cached"]
    if untracked:
        listing += ["--others", "--exclude-standard"]
    listed = subprocess.run(listing, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():  # a file deleted in the work tree is still listed as tracked
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest
