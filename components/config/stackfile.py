"""Read a stack's configuration from <stackConfigDir>/Pulumi.<stack>.yaml the way the Pulumi CLI does.

The folder is Pulumi.yaml's ``stackConfigDir`` (relative to the project folder), else the project
folder itself: the Pulumi CLI's rule (Pulumi docs, "Pulumi.yaml project file reference",
``stackConfigDir``). This repository's Pulumi.yaml says ``stacks``.

Used where the Pulumi CLI is not in the loop (offline render, preflight, tests). The CLI hands
a program its config as strings: plain strings as they are, everything else (numbers, booleans,
lists, maps) JSON-encoded. ``cli_config`` reproduces that, so the program sees the same values
offline as under ``pulumi up``; ``check.loading.load_stack`` loads a stack's settings from them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def find_project_root(start: Path | None = None) -> Path:
    """The Pulumi project folder (holding Pulumi.yaml and stacks/): the nearest one from ``start``
    (default: the current directory) upward, else ``start`` itself.

    Found from the working directory, never from this file's location, so the commands work the
    same from a checkout and from an installed package (whose files sit in site-packages).
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    return here


class StackNotFound(FileNotFoundError):
    pass


def load_yaml_file(path: Path) -> Any:
    """``path`` parsed; a syntax error names the file (PyYAML takes the name from the stream)."""
    with path.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def project_file(root: Path | None = None) -> dict[str, Any]:
    doc = load_yaml_file(find_project_root(root) / "Pulumi.yaml")
    return doc if isinstance(doc, dict) else {}


def project_name(root: Path | None = None) -> str:
    return str(project_file(root)["name"])


def stack_config_dir(root: Path | None = None) -> Path:
    """Where the stack files are: Pulumi.yaml's ``stackConfigDir``, else the project folder."""
    project = find_project_root(root)
    configured = project_file(project).get("stackConfigDir") if (project / "Pulumi.yaml").is_file() else None
    return project / configured if configured else project


def stack_file(stack: str, root: Path | None = None) -> Path:
    return stack_config_dir(root) / f"Pulumi.{stack}.yaml"


def available_stacks(root: Path | None = None) -> list[str]:
    folder = stack_config_dir(root)
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def read_stack_config(stack: str, root: Path | None = None) -> dict[str, Any]:
    """The ``config:`` map of the stack file, keys fully qualified (``gpu-eks:foo``)."""
    path = stack_file(stack, root)
    if not path.is_file():
        raise StackNotFound(f"no stack file {path} (stacks here: {', '.join(available_stacks(root)) or 'none'})")
    doc = load_yaml_file(path) or {}
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError(f"{path}: 'config' must be a map")
    return dict(config)


def cli_config(config: dict[str, Any]) -> dict[str, str]:
    """The config as the Pulumi CLI passes it to a program (strings; the rest JSON)."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def region(config: dict[str, Any]) -> str | None:
    value = config.get("aws:region")
    return str(value) if value else None
