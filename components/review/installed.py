"""The library this Python imports, and whether it is the one a requirement line pins.

The work tree of a review is rendered with this Python. When the pull request bumps the library and
``pip install -r requirements.txt`` kept what was installed (the same version number built from
another commit: pip sees the requirement as met), both sides would render with the same code and the
review would say "no change" for an upgrade that rolls every GPU node. So the work tree's requirement
is checked against what is installed, as pip recorded it: ``direct_url.json`` in the distribution's
metadata (PEP 610, "Recording the Direct URL Origin of installed distributions"): ``vcs_info.commit_id``
for a VCS install, ``archive_info.hashes`` for an archive, ``dir_info`` for a folder; none for a
release from an index.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement

from ..version import DISTRIBUTION, package_version
from . import deps
from .deps import local_path

_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Library:
    """The library a Python imports: its version, the folder holding the package, and pip's
    record of where it came from (None: from an index, or not installed at all, ``installed`` False:
    a source tree on ``sys.path``)."""

    version: str
    source: Path
    origin: dict[str, Any] | None
    installed: bool

    def describe(self) -> str:
        if not self.installed:
            return f"{DISTRIBUTION} {self.version} imported from the source tree {self.source}, not installed"
        vcs = (self.origin or {}).get("vcs_info")
        if vcs:
            return f"{DISTRIBUTION} {self.version} installed from {self.origin['url']} at commit {vcs.get('commit_id')}"
        if self.origin:
            return f"{DISTRIBUTION} {self.version} installed from {self.origin.get('url')}"
        return f"{DISTRIBUTION} {self.version} installed from an index"


def this_library() -> Library:
    """The library this Python imports (this package), as pip recorded its installation."""
    package = Path(__file__).resolve().parents[1]  # gpu_eks/ installed, components/ in a checkout
    source = package.parent
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    installed = dist is not None and Path(str(dist.locate_file(f"{package.name}/__init__.py"))).resolve() == (
        package / "__init__.py"
    )
    if not installed or dist is None:
        return Library(package_version(source), source, None, False)
    return installed_library(dist, source)


def installed_library(dist: importlib.metadata.Distribution, source: Path) -> Library:
    """The library of an installed distribution, with pip's ``direct_url.json`` (none: from an index)."""
    text = dist.read_text("direct_url.json")
    return Library(dist.version, source, json.loads(text) if text else None, True)


def mismatch(library: Library, line: str, root: Path) -> str | None:
    """Why ``library`` is not what requirement ``line`` (relative paths from ``root``) pins, or None."""
    try:
        req = Requirement(line)
        url = req.url
    except InvalidRequirement:
        req, url = None, deps.requirement_target(line)[1] or line  # a bare path or URL, or -e (pip accepts those)
    origin = library.origin or {}
    if url is None:
        if req is not None and not req.specifier.contains(library.version, prereleases=True):
            return f"this Python has {library.describe()}, which `{line}` does not allow"
        if not library.installed or origin:
            return f"this Python has {library.describe()}, not the release `{line}` names"
        return None
    local = local_path(url, root)
    if url.startswith("git+"):
        return _vcs_mismatch(library, url, line)
    if local is not None and local.is_dir():
        where = library.source if not library.installed else _file_path(origin.get("url", ""))
        same = "dir_info" in origin or not library.installed
        return None if same and where == local else f"this Python has {library.describe()}, not `{line}`"
    if local is not None and local.is_file():
        sha = hashlib.sha256(local.read_bytes()).hexdigest()
        recorded = (origin.get("archive_info") or {}).get("hashes", {}).get("sha256")
        if recorded != sha:
            return (
                f"this Python has {library.describe()}"
                + (f" (sha256 {recorded})" if recorded else "")
                + f", not the content of {local} (sha256 {sha}) that `{line}` installs"
            )
        return None
    if origin.get("url", "").split("#")[0] != url.split("#")[0]:
        return f"this Python has {library.describe()}, not `{line}`"
    return None


def _file_path(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(unquote(parts.path)).resolve() if parts.scheme == "file" else None


def _vcs_mismatch(library: Library, url: str, line: str) -> str | None:
    """A ``git+<repo>[@<rev>]`` requirement against pip's ``vcs_info`` (commit, requested revision)."""
    vcs = (library.origin or {}).get("vcs_info")
    if not vcs:
        return f"this Python has {library.describe()}, not `{line}`"
    location = url.removeprefix("git+").split("#")[0]
    repo, _, rev = location.rpartition("@") if "@" in urlsplit(location).path else (location, "", "")
    recorded = str((library.origin or {}).get("url", ""))
    if _repo(recorded) != _repo(repo):
        return f"this Python has {library.describe()}, not `{line}`"
    commit = str(vcs.get("commit_id", ""))
    if rev and not (commit.startswith(rev) if _COMMIT.fullmatch(rev) else vcs.get("requested_revision") == rev):
        return f"this Python has {library.describe()}, not the commit `{line}` pins ({rev})"
    return None


def _repo(url: str) -> str:
    return url.rstrip("/").removesuffix(".git")
