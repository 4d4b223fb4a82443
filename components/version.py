"""The library's version, kept in ONE place: ``version`` in pyproject.toml; and its names.

A checkout (this repository, the component package under ``plugin/``) reads it there; an
installed copy reads the metadata its wheel was built with from that same line. Exposed as
``components.__version__`` and, in SemVer's spelling (``semver``), as the component package's
(schema) version.

Between releases the version is the next one's development release, ``X.Y.Z.devN`` (PEP 440,
"Developmental releases"): a commit after a release never carries that release's number, so a
review or a bug report that names a version names the code (docs/upgrading.md, "Releasing").
Standard library only: ``python -m tooling release`` runs before anything is installed.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

DISTRIBUTION = "gpu-eks-components"
#: The name the wheel installs the package under (``import gpu_eks``, ``python -m gpu_eks``): one no
#: Pulumi project's own ``components/`` folder shadows (UPGRADING.md, "The import name gpu_eks").
IMPORT_NAME = "gpu_eks"
#: The name releases up to 0.3.0 installed: the wheel keeps it working until 1.0, with a warning
#: (components/compat/, components/moved.py ``keep_old_name``).
OLD_IMPORT_NAME = "components"
#: The name this copy of the package is imported under, for everything that names it (a module to
#: import, ``python -m``): IMPORT_NAME installed; in this repository its folder, ``components``
#: (the repository's layout), which answers to IMPORT_NAME too (``moved.answer_to_import_name``).
PACKAGE = __name__.rpartition(".")[0]
#: The versions this project uses (PEP 440, public version identifiers): a release ``X.Y.Z``, or a
#: pre-release of the next one, ``X.Y.Z.devN`` between releases (``aN``, ``bN``, ``rcN`` if ever cut).
VERSION = re.compile(r"(?P<release>\d+\.\d+\.\d+)(?:(?P<pre>a|b|rc)(?P<pre_n>\d+))?(?:\.dev(?P<dev>\d+))?")
#: PEP 440's pre-release labels in SemVer 2.0.0 identifiers (what Pulumi's package schema accepts).
_SEMVER_LABELS = {"a": "alpha", "b": "beta", "rc": "rc"}


def package_version(root: Path | None = None) -> str:
    """pyproject.toml's version in a checkout of this project, else the installed distribution's."""
    pyproject = (root or Path(__file__).resolve().parents[1]) / "pyproject.toml"
    if pyproject.exists():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    return importlib.metadata.version(DISTRIBUTION)


def sort_key(version: str) -> tuple[int, int, int, int, int, int]:
    """A sort key of ``version`` in PEP 440's order (X.Y.Z.devN < X.Y.ZaN < X.Y.ZrcN < X.Y.Z)."""
    m = VERSION.fullmatch(version)
    if not m:
        raise ValueError(f"version {version!r}: expected X.Y.Z or a pre-release of it such as X.Y.Z.dev0")
    major, minor, patch = (int(p) for p in m["release"].split("."))
    pre = (["a", "b", "rc"].index(m["pre"]) + 1, int(m["pre_n"])) if m["pre"] else (4, 0)
    # A development release comes before everything else of its release (or pre-release).
    dev = int(m["dev"]) if m["dev"] is not None else 1 << 30
    if m["dev"] is not None and not m["pre"]:
        pre = (0, 0)
    return major, minor, patch, pre[0], pre[1], dev


def is_release(version: str) -> bool:
    """Whether ``version`` is a final release ``X.Y.Z`` (not a pre- or development release)."""
    return re.fullmatch(r"\d+\.\d+\.\d+", version) is not None


def semver(version: str) -> str:
    """``version`` in SemVer 2.0.0's spelling: ``0.4.0.dev0`` -> ``0.4.0-dev.0``, ``1.0.0rc1`` -> ``1.0.0-rc.1``."""
    m = VERSION.fullmatch(version)
    if not m:
        raise ValueError(f"version {version!r}: expected X.Y.Z or a pre-release of it such as X.Y.Z.dev0")
    pre = [f"{_SEMVER_LABELS[m['pre']]}.{m['pre_n']}"] if m["pre"] else []
    dev = [f"dev.{m['dev']}"] if m["dev"] is not None else []
    return m["release"] + ("-" + ".".join(pre + dev) if pre or dev else "")
