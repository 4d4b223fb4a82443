"""Read a stack's configuration from stacks/Pulumi.<stack>.yaml the way the Pulumi CLI does.

Used where the Pulumi CLI is not in the loop (offline render, preflight, tests). The CLI hands
a program its config as strings: plain strings as they are, everything else (numbers, booleans,
lists, maps) JSON-encoded. ``cli_config`` reproduces that, so the program sees the same values
offline as under ``pulumi up``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .loading import settings_from_config
from .settings import Settings


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


def project_name(root: Path | None = None) -> str:
    return str(yaml.safe_load((find_project_root(root) / "Pulumi.yaml").read_text())["name"])


def stack_file(stack: str, root: Path | None = None) -> Path:
    return find_project_root(root) / "stacks" / f"Pulumi.{stack}.yaml"


def available_stacks(root: Path | None = None) -> list[str]:
    folder = find_project_root(root) / "stacks"
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def read_stack_config(stack: str, root: Path | None = None) -> dict[str, Any]:
    """The ``config:`` map of the stack file, keys fully qualified (``gpu-eks:foo``)."""
    path = stack_file(stack, root)
    if not path.is_file():
        raise StackNotFound(f"no stack file {path} (stacks here: {', '.join(available_stacks(root)) or 'none'})")
    doc = yaml.safe_load(path.read_text()) or {}
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


def load_stack(stack: str, root: Path | None = None) -> tuple[dict[str, Any], Settings]:
    """The stack file's config map and its settings, validated exactly as the program would
    (raises StackNotFound, ConfigError), from one read of the file."""
    config = read_stack_config(stack, root)
    return config, settings_from_config(cli_config(config), project_name(root), stack)
