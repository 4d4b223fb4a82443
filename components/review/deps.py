"""What a project pins: its dependency files, as its install step reads them, compared between the
base of a review and the work tree (``baseenv`` decides from them). Pure but for reading files.

A review may call a library upgrade "no change" only if nothing the project installs can differ, so
everything an install reads is compared:

* **pip** (Pulumi.yaml ``runtime.options.toolchain: pip``, the default): the root-level
  ``requirements*.txt`` and ``constraints*.txt``, every file they include (``-r``/``-c``,
  ``--requirement``/``--constraint``, relative to the including file, as pip reads them:
  ``pip/_internal/req/req_file.py``), and the content of every local archive or folder a line
  installs (a vendored wheel replaced under the same file name changes nothing else: its sha256 is
  what differs).
* **poetry** and **uv**: ``pyproject.toml`` with its lock file, whether Pulumi.yaml names the
  toolchain or not: a team that installs with ``poetry install`` and points Pulumi at that virtualenv
  leaves the option out, and its lock file is then what pins the library.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from ..version import DISTRIBUTION

PIP_FILES = ("requirements*.txt", "constraints*.txt")
#: The lock file of each toolchain that has one (with ``pyproject.toml``, its dependency files).
LOCK_FILES = {"poetry": "poetry.lock", "uv": "uv.lock"}
#: pip's options that name another requirements file (``pip/_internal/req/req_file.py``: ``-r``, ``-c``
#: and their long forms).
_INCLUDE = re.compile(r"^(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+|(?<=-r)|(?<=-c))(\S+)")
_EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s*=\s*|\s+)(\S+)")
#: Where a requirement line's own options start (``--hash``, ``--config-settings``, ``--global-option``:
#: pip 23.2.1 ``pip/_internal/req/req_file.py`` ``SUPPORTED_OPTIONS_REQ``), no part of the requirement.
_LINE_OPTIONS = re.compile(r"\s+--(?!editable)")
_ARCHIVE = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")
#: How the content of an archive or folder a requirement installs is named among the files.
CONTENT = " (content)"


def toolchain_option(root: Path) -> str | None:
    """Pulumi.yaml ``runtime.options.toolchain``, or None when it names none."""
    try:
        project = yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    runtime = project.get("runtime") if isinstance(project, dict) else None
    options = runtime.get("options") if isinstance(runtime, dict) else None
    chosen = options.get("toolchain") if isinstance(options, dict) else None
    return str(chosen) if chosen else None


def toolchain(root: Path) -> tuple[str, str]:
    """The toolchain that installs the project and why: the option, else the one whose lock file is
    there (poetry.lock, uv.lock), else pip (Pulumi's default)."""
    chosen = toolchain_option(root)
    if chosen:
        return chosen, "Pulumi.yaml's toolchain"
    for chain, lock in LOCK_FILES.items():
        if (root / lock).is_file():
            return chain, f"{lock}; Pulumi.yaml names no toolchain"
    return "pip", "Pulumi's default"


def logical_lines(path: Path) -> Iterator[str]:
    """The lines of a requirements file as pip reads them: continuations joined, comments cut."""
    text = path.read_text(encoding="utf-8")
    for line in re.sub(r"\\\r?\n", "", text).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            yield line


def local_path(target: str, root: Path) -> Path | None:
    """The local file or folder a requirement's target names (a path or a ``file:`` URL), or None."""
    if "://" in target or target.startswith("file:"):
        parts = urlsplit(target)
        if parts.scheme != "file":
            return None  # a VCS or remote URL: the line itself pins it
        return (root / unquote(parts.path)).resolve()
    if target.startswith((".", "/", "~")) or "/" in target or target.endswith(_ARCHIVE):
        return (root / Path(target).expanduser()).resolve()
    return None


def requirement(line: str) -> str:
    """A requirement line without its own options (``pip-compile --generate-hashes`` writes
    ``name==1.0 --hash=sha256:...``)."""
    return _LINE_OPTIONS.split(line, maxsplit=1)[0]


def requirement_target(line: str) -> tuple[str | None, str | None]:
    """(distribution name, URL or path) of a requirement line; None where the line has none."""
    line = requirement(line)
    editable = _EDITABLE.match(line)
    if editable:
        return None, editable.group(1)
    if line.startswith("-"):
        return None, None  # another option (--index-url, --hash on its own line, ...)
    try:
        req = Requirement(line)
    except InvalidRequirement:
        token = shlex.split(line)[0] if line else ""
        return _archive_name(token), token or None
    return canonicalize_name(req.name), req.url


def _archive_name(target: str) -> str | None:
    """The distribution a wheel or sdist file name names (``gpu_eks_components-0.3.0-py3-none-any.whl``)."""
    name = target.rsplit("/", 1)[-1].split("#", 1)[0]
    try:
        if name.endswith(".whl"):
            return str(parse_wheel_filename(name)[0])
        if name.endswith(_ARCHIVE):
            return str(parse_sdist_filename(name)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


def _digest(path: Path) -> bytes:
    """sha256 of a file, or of a folder's files (names and contents), what a build of it reads: hidden
    entries (``.git``, a ``.venv``), caches and build output left out."""
    digest = hashlib.sha256()
    for file in [path] if path.is_file() else _built_from(path):
        digest.update(str(file.relative_to(path) if file != path else file.name).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()}".encode()


def _built_from(folder: Path) -> list[Path]:
    """The files of ``folder`` a build reads, sorted: the folders left out are not walked (a ``.venv``
    in the project folder of ``-e .`` holds thousands of files)."""
    files = []
    for parent, folders, names in os.walk(folder):
        folders[:] = [f for f in folders if not _left_out(f)]
        files.extend(Path(parent, name) for name in names if not _left_out(name))
    return sorted(f for f in files if f.is_file())


def _left_out(name: str) -> bool:
    return name.startswith(".") or name in ("__pycache__", "build", "dist") or name.endswith(".egg-info")


def _label(path: Path, root: Path) -> str:
    """``path`` as the review names it: relative to the project (``../common.txt`` outside it: two
    included files of one name stay two; no absolute local path in a comment)."""
    return Path(os.path.relpath(path, root)).as_posix()


def requirement_files(root: Path) -> dict[str, Path]:
    """The requirements and constraints files pip reads for the project, by label: the root-level ones
    and every file they include, as pip resolves ``-r``/``-c`` (relative to the including file)."""
    root = root.resolve()
    found: dict[str, Path] = {}
    pending = [p.resolve() for pattern in PIP_FILES for p in sorted(root.glob(pattern)) if p.is_file()]
    while pending:
        path = pending.pop(0)
        label = _label(path, root)
        if label in found or not path.is_file():
            continue
        found[label] = path
        pending.extend((path.parent / m.group(1)).resolve() for m in map(_INCLUDE.match, logical_lines(path)) if m)
    return found


def pip_files(root: Path) -> dict[str, bytes]:
    """What pip installs the project from (the module docstring): label -> content; a local archive or
    folder a line installs as ``<label> (content)`` -> its sha256."""
    found: dict[str, bytes] = {}
    for label, path in requirement_files(root).items():
        found[label] = path.read_bytes()
        for line in logical_lines(path):
            _, target = requirement_target(line)
            local = local_path(target, root) if target and not _INCLUDE.match(line) else None
            if local is not None and local.exists():
                found[_label(local, root.resolve()) + CONTENT] = _digest(local)
    return found


def dependency_files(root: Path) -> dict[str, bytes]:
    """Every file an install of the project reads (pip's, and poetry's or uv's where the project uses them)."""
    found = pip_files(root)
    chains = {toolchain(root)[0], *(chain for chain, lock in LOCK_FILES.items() if (root / lock).is_file())}
    for chain in sorted(chains & set(LOCK_FILES)):
        for name in ("pyproject.toml", LOCK_FILES[chain]):
            if (root / name).is_file():
                found[name] = (root / name).read_bytes()
    return found


def changed_files(base_root: Path, head_root: Path) -> list[str]:
    """The dependency files that differ between the base and the work tree: files first, then the
    content of archives or folders both sides install from the same path (one a changed line installs
    is that line's change)."""
    old, new = dependency_files(base_root), dependency_files(head_root)
    changed = sorted(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
    files = [name for name in changed if not name.endswith(CONTENT)]
    contents = [name for name in changed if name.endswith(CONTENT) and ((name in old and name in new) or not files)]
    return files + contents


def library_requirements(root: Path) -> list[str]:
    """The requirement lines of the project's pip files (and their includes) that install the library:
    by name (``gpu-eks-components @ ...``, ``==``), by a wheel or sdist file of it, or by a folder
    whose pyproject.toml names it (``-e ./vendor/gpu-eks``); options and comments cut."""
    lines = []
    for path in requirement_files(root).values():
        for line in logical_lines(path):
            name, target = requirement_target(line)
            if name is None and target:
                name = _archive_name(target) or _folder_name(local_path(target, root))
            if name == DISTRIBUTION:
                lines.append(requirement(line))
    return lines


def _folder_name(folder: Path | None) -> str | None:
    """The distribution a local folder builds (its pyproject.toml ``[project] name``), or None."""
    pyproject = folder / "pyproject.toml" if folder is not None else None
    if pyproject is None or not pyproject.is_file():
        return None
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return canonicalize_name(name) if isinstance(name, str) else None


def pip_arguments(line: str) -> list[str]:
    """A requirement line as pip's command line takes it (``-e ./x`` is two arguments)."""
    editable = _EDITABLE.match(line)
    return ["--editable", editable.group(1)] if editable else [line]
