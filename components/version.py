"""The library's version, kept in ONE place: ``version`` in pyproject.toml.

A checkout (this repository, the component package under ``plugin/``) reads it there; an
installed copy reads the metadata its wheel was built with from that same line. Exposed as
``components.__version__`` and as the component package's (schema) version.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

DISTRIBUTION = "gpu-eks-components"


def package_version(root: Path | None = None) -> str:
    """pyproject.toml's version in a checkout of this project, else the installed distribution's."""
    pyproject = (root or Path(__file__).resolve().parents[1]) / "pyproject.toml"
    if pyproject.exists():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    return importlib.metadata.version(DISTRIBUTION)
