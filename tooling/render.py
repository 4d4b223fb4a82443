"""``python -m tooling render``: a stack's desired state as YAML, offline.

Runs the real program (__main__.py) with the stack's config under the in-process simulated engine
(tooling.simulation), answering as the engine does during a stack's first ``pulumi preview``
(``FirstPreviewCloud``): values computed by the cloud are unknown. No AWS credentials, no Pulumi
CLI, no network. The output is a review artifact and a golden snapshot (tests/snapshots/), so it
is deterministic: the same bytes on every run and every machine.

Format (see docs/render.md)::

    resources:                    # declaration order
    - type: aws:eks/nodeGroup:NodeGroup
      name: gpu-eks-t4
      parent: {type: gpu-eks:nodegroup:GpuNodeGroup, name: gpu-eks-t4}   # or null
      urn: urn:pulumi:dev::gpu-eks::...::gpu-eks-t4    # the engine's URN (replacement guard)
      aliases: [...]              # when any; also provider, protect, remote, ignoreChanges, dependsOn
      inputs: {...}               # "[secret]", "(known after apply)", decoded documents as !yaml etc.
    outputs: {...}                # stack outputs, same conventions

Exit status: 0 rendered; 1 the program failed; 2 unknown stack or invalid configuration (the
problems on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from components.config import stackfile
from components.config.errors import CONFIG_NAMESPACE, ConfigError
from components.config.warnings import settings_warnings

from . import REPO_ROOT, render_urns, render_values

if TYPE_CHECKING:  # the simulation imports Pulumi: loaded only when a render really runs
    from .simulation import Registration, Simulation

#: Where the golden snapshots live, relative to the project root.
SNAPSHOT_DIR = Path("tests") / "snapshots"
#: The one command that refreshes every snapshot (named in test failures and docs/render.md).
REFRESH_COMMAND = "python -m tooling render --update-snapshots"
DEFAULT_STACK = "dev"
RENDER_TIMEOUT_SECONDS = 60.0


class RenderError(Exception):
    """A render that could not run; ``status`` is the exit status the CLI returns."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------------------------
# Registrations -> render document (pure)
# ---------------------------------------------------------------------------------------------


def short_ref(reg: Registration) -> str:
    return f"{reg.type}::{reg.name}"


def _ref_for(urn: str, by_urn: Mapping[str, Registration]) -> str:
    """``type::name`` of the resource a simulator URN (or provider reference ``urn::id``) names."""
    if urn in by_urn:
        return short_ref(by_urn[urn])
    # Provider references are "<urn>::<id>"; the id is unknown in a preview and never shown.
    head = urn.rsplit("::", 1)[0]
    return short_ref(by_urn[head]) if head in by_urn else urn


def resource_item(
    reg: Registration,
    identity: render_urns.Identity,
    by_urn: Mapping[str, Registration],
    engine_urns: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One entry of ``resources:``. Optional fields appear only when set, so a diff shows them
    appearing (e.g. ``protect: true``) rather than a flipped default on every resource."""
    parent = by_urn.get(reg.parent_urn or "")
    item: dict[str, Any] = {
        "type": reg.type,
        "name": reg.name,
        "parent": {"type": parent.type, "name": parent.name} if parent else None,
        "urn": identity.urn,
    }
    if identity.aliases:
        item["aliases"] = list(identity.aliases)
    if reg.remote:
        # Built by its provider plugin at deploy time: its children are not part of the render.
        item["remote"] = True
    if reg.provider:
        item["provider"] = _ref_for(reg.provider, by_urn)
    if reg.protect:
        item["protect"] = True
    for key, value in sorted(reg.options.items()):
        if key == "deletedWith":
            value = _ref_for(str(value), by_urn)
        elif key == "replace_with":
            value = sorted(_ref_for(str(u), by_urn) for u in value)
        item[key] = value
    depends_on = sorted({_ref_for(u, by_urn) for u in reg.dependencies})
    if depends_on:
        item["dependsOn"] = depends_on
    # Where each input comes from: what a change of another resource can change here (tooling.impact).
    sources = {
        key: sorted({_ref_for(u, by_urn) for u in urns})
        for key, urns in sorted(reg.property_dependencies.items())
        if urns
    }
    if sources:
        item["inputDependencies"] = sources
    item["inputs"] = render_values.display(reg.wire_inputs, reg.type, urns=engine_urns)
    return item


def stack_and_project(stack_urn: str) -> tuple[str, str]:
    stack, project, _, _ = render_urns.split_urn(stack_urn)
    return stack, project


def render_document(
    resources: Sequence[Registration], wire_outputs: Mapping[str, Any], stack: str, project: str
) -> dict[str, Any]:
    """The render of one simulated run (resources in declaration order)."""
    by_urn = {r.urn: r for r in resources}
    identities = render_urns.engine_identities(resources, stack, project)
    engine_urns = {mock: identity.urn for mock, identity in identities.items()}
    return {
        "project": project,
        "stack": stack,
        "resources": [resource_item(r, identities[r.urn], by_urn, engine_urns) for r in resources],
        "outputs": render_values.display(dict(wire_outputs), "pulumi:pulumi:Stack", urns=engine_urns),
    }


def header(stack: str, notes: Sequence[str] = ()) -> str:
    lines = [
        f"# Desired state of stack {stack!r}: `python -m tooling render --stack {stack}`.",
        "# Rendered offline (simulated first `pulumi preview`, fake cloud answers: see docs/render.md).",
        f'# "{render_values.UNKNOWN}": computed by the cloud during deployment. "{render_values.SECRET}": a secret.',
        "# Tags: !base64-mime / !yaml / !json mark strings shown decoded. remote: children not rendered.",
        *(f"# {note}" for note in notes),
    ]
    return "\n".join(lines) + "\n"


def render_text(document: Mapping[str, Any], notes: Sequence[str] = ()) -> str:
    return header(str(document["stack"]), notes) + render_values.dump(dict(document))


# ---------------------------------------------------------------------------------------------
# Running the program
# ---------------------------------------------------------------------------------------------


def stack_config(stack: str, root: Path) -> tuple[dict[str, str], str, list[str]]:
    """The config the program will get (CLI string form), the project name and notes for the header.

    Validates first, exactly as the program will (stackfile.load_stack), so that a bad
    config is reported as the list of its problems rather than as a failed program run.
    """
    try:
        config, settings = stackfile.load_stack(stack, root)
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


def run_first_preview(config: dict[str, str], project: str, stack: str, root: Path) -> Simulation:
    """Run the program of ``root`` with ``config`` as the engine's first preview would answer it."""
    from .simulation import FirstPreviewCloud, program_from_file, run_program

    # Whatever the program prints must not end up in the render on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        return run_program(
            program_from_file(root / "__main__.py"),
            config,
            project=project,
            stack=stack,
            preview=True,
            mocks=FirstPreviewCloud(),
            timeout=RENDER_TIMEOUT_SECONDS,
        )


def simulate(stack: str, root: Path = REPO_ROOT) -> tuple[Simulation, list[str]]:
    """Validate, then run the program of ``root`` for ``stack`` as a first preview would."""
    config, project, notes = stack_config(stack, root)
    from pulumi import RunError

    try:
        sim = run_first_preview(config, project, stack, root)
    except RunError as err:
        raise RenderError(f"error: the program failed for stack {stack!r}: {err}", 1) from None
    except TimeoutError:
        raise RenderError(
            f"error: the program for stack {stack!r} did not finish within {RENDER_TIMEOUT_SECONDS:.0f} s", 1
        ) from None
    except Exception as err:
        trace = "".join(traceback.format_exception(err))
        raise RenderError(f"error: the program failed for stack {stack!r}:\n{trace}", 1) from None
    return sim, notes


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


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Bytes, not text mode: "\n" on every OS, so snapshots match everywhere.
    path.write_bytes(text.encode("utf-8"))


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
