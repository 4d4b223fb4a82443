"""``python -m tooling render``: a stack's desired state as YAML, offline.

Runs the real program (__main__.py) with the stack's config under the in-process simulated engine
(components.review.simulation, shipped for the consumers' ``gpu-eks-review``; the render itself is
components.review.render), answering as the engine does during a stack's first ``pulumi preview``
(``FirstPreviewCloud``): values computed by the cloud are unknown. No AWS credentials, no Pulumi
CLI, no network. The output is a review artifact and a golden snapshot (tests/snapshots/), so it
is deterministic: the same bytes on every run and every machine.

Format: components.review.render (docs/render.md).

Exit status: 0 rendered; 1 the program failed; 2 unknown stack or invalid configuration (the
problems on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from components.check.loading import load_stack
from components.check.warnings import settings_warnings
from components.config import stackfile
from components.config.errors import CONFIG_NAMESPACE, ConfigError
from components.review import render as _render
from components.review import values as render_values
from components.review.render import (
    RenderError,
    render_document,
    resource_item,
    run_first_preview,
    stack_and_project,
    write_text,
)

from . import REPO_ROOT

if TYPE_CHECKING:
    from components.review.simulation import Simulation

__all__ = [
    "RenderError",
    "render_document",
    "resource_item",
    "run_first_preview",
    "stack_and_project",
    "write_text",
]

#: Where the golden snapshots live, relative to the project root.
SNAPSHOT_DIR = Path("tests") / "snapshots"
#: The one command that refreshes every snapshot (named in test failures and docs/render.md).
REFRESH_COMMAND = "python -m tooling render --update-snapshots"
DEFAULT_STACK = "dev"
#: The command a render's header names.
COMMAND = "python -m tooling render"


def header(stack: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    return _render.header(stack, notes, COMMAND)


def render_text(document: dict[str, Any], notes: list[str] | tuple[str, ...] = ()) -> str:
    return _render.render_text(document, notes, COMMAND)


# ---------------------------------------------------------------------------------------------
# Running the program
# ---------------------------------------------------------------------------------------------


def stack_config(stack: str, root: Path) -> tuple[dict[str, str], str, list[str]]:
    """The config the program will get (CLI string form), the project name and notes for the header.

    Validates first, exactly as the program will (``load_stack``), so that a bad
    config is reported as the list of its problems rather than as a failed program run.
    """
    try:
        config, settings = load_stack(stack, root)
        project = stackfile.project_name(root)
    except stackfile.StackNotFound:
        known = ", ".join(stackfile.available_stacks(root)) or "none"
        raise RenderError(
            f"error: unknown stack {stack!r}: there is no {stackfile.stack_file(stack, root)} (stacks: {known})", 2
        ) from None
    except ConfigError as err:
        raise RenderError(f"error: stack {stack!r} has an invalid configuration\n{err.report()}", 2) from None
    except (ValueError, OSError, yaml.YAMLError) as err:  # unreadable YAML, a non-map config
        raise RenderError(f"error: cannot read the configuration of stack {stack!r}: {err}", 2) from None
    notes: list[str] = [f"warning: {w}" for w in settings_warnings(settings)]
    if settings.preflight:
        # Preflight calls AWS; a render must not (and its result would differ from machine to machine).
        config[f"{CONFIG_NAMESPACE}:preflight"] = False
        notes.append("preflight: true in the stack is skipped by render.")
    return stackfile.cli_config(config), project, notes


def simulate(stack: str, root: Path = REPO_ROOT) -> tuple[Simulation, list[str]]:
    """Validate, then run the program of ``root`` for ``stack`` as a first preview would."""
    config, project, notes = stack_config(stack, root)
    return _render.simulate(stack, root, config, project), notes


def render_stack_document(stack: str, root: Path = REPO_ROOT) -> tuple[dict[str, Any], list[str]]:
    """The render document of ``stack`` and the notes of its header (raises RenderError)."""
    sim, notes = simulate(stack, root)
    stack_name, project = stack_and_project(sim.stack_urn)
    return render_document(sim.resources, sim.wire_outputs, stack_name, project), notes


def render_stack(stack: str, root: Path = REPO_ROOT) -> str:
    """The render of ``stack`` as text (raises RenderError)."""
    return render_text(*render_stack_document(stack, root))


def render_json(stack: str, root: Path = REPO_ROOT) -> str:
    """The render of ``stack`` as JSON, for other tools: the same document, the header's notes
    under ``notes``, decoded strings as ``{"encoding": "yaml", "decoded": ...}``."""
    document, notes = render_stack_document(stack, root)
    return render_values.dump_json({**document, "notes": list(notes)})


def update_snapshots(root: Path = REPO_ROOT) -> int:
    """Render every stack into tests/snapshots/<stack>.yaml."""
    directory = root / SNAPSHOT_DIR
    status = 0
    stacks = stackfile.available_stacks(root)
    for stack in stacks:
        try:
            text = render_stack(stack, root)
        except RenderError as err:
            print(err, file=sys.stderr)
            status = max(status, err.status)
            continue
        write_text(directory / f"{stack}.yaml", text)
        print(f"wrote {SNAPSHOT_DIR / f'{stack}.yaml'}", file=sys.stderr)
    for orphan in sorted(directory.glob("*.yaml")):
        if orphan.stem not in stacks:
            print(f"note: {SNAPSHOT_DIR / orphan.name} has no stack any more: delete it", file=sys.stderr)
    return status


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", default=DEFAULT_STACK, help=f"stack to render (default: {DEFAULT_STACK})")
    parser.add_argument("--output", type=Path, metavar="FILE", help="write the render to FILE instead of stdout")
    parser.add_argument(
        "--format",
        choices=("yaml", "json"),
        default="yaml",
        help="yaml: the reviewable render (default, the snapshots' format); json: the same document for other tools",
    )
    parser.add_argument(
        "--update-snapshots",
        action="store_true",
        help=f"render every stack into {SNAPSHOT_DIR}/<stack>.yaml (the golden snapshots the tests compare)",
    )


def run(args: argparse.Namespace) -> int:
    if args.update_snapshots:
        if args.output is not None or args.format != "yaml":
            print(
                "error: --update-snapshots writes every stack's YAML snapshot; it takes no --output or --format",
                file=sys.stderr,
            )
            return 2
        return update_snapshots()
    try:
        text = render_json(args.stack) if args.format == "json" else render_stack(args.stack)
    except RenderError as err:
        print(err, file=sys.stderr)
        return err.status
    if args.output is not None:
        write_text(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
