"""A Pulumi project's desired state as YAML, offline: the render both review commands print.

Runs the project's real program with a stack's config under the in-process simulated engine
(``simulation``), answering as the engine does during a stack's first ``pulumi preview``
(``FirstPreviewCloud``): values computed by the cloud are unknown. No AWS credentials, no Pulumi
CLI, no network. The output is deterministic: the same bytes on every run and every machine.

Format (see docs/render.md)::

    resources:                    # declaration order
    - type: aws:eks/nodeGroup:NodeGroup
      name: gpu-eks-t4
      parent: {type: gpu-eks:nodegroup:GpuNodeGroup, name: gpu-eks-t4}   # or null
      urn: urn:pulumi:dev::gpu-eks::...::gpu-eks-t4    # the engine's URN (replacement guard)
      aliases: [...]              # when any; also provider, protect, remote, ignoreChanges, dependsOn
      inputs: {...}               # "[secret]", "(known after apply)", decoded documents as !yaml etc.
    outputs: {...}                # stack outputs, same conventions

Used by this repository's ``python -m tooling render`` (its stacks, validated as gpu-eks stacks)
and by the consumers' ``gpu-eks-review render`` (any project's stack file).
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..config import stackfile
from ..config.errors import CONFIG_NAMESPACE
from . import urns as render_urns
from . import values as render_values

if TYPE_CHECKING:  # the simulation imports Pulumi: loaded only when a render really runs
    from .simulation import Registration, Simulation

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
    # Where each input comes from: what a change of another resource can change here (impact).
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


#: Where a render's conventions are explained: this repository's docs/render.md, or for a consumer docs/review.md.
DOCS = "docs/render.md"


def header(stack: str, notes: Sequence[str] = (), command: str = "python -m tooling render", docs: str = DOCS) -> str:
    """The comment lines that open a render: how to make it again (``command``) and its conventions."""
    lines = [
        f"# Desired state of stack {stack!r}: `{command} --stack {stack}`.",
        f"# Rendered offline (simulated first `pulumi preview`, fake cloud answers: see {docs}).",
        f'# "{render_values.UNKNOWN}": computed by the cloud during deployment. "{render_values.SECRET}": a secret.',
        "# Tags: !base64-mime / !yaml / !json mark strings shown decoded. remote: children not rendered.",
        *(f"# {note}" for note in notes),
    ]
    return "\n".join(lines) + "\n"


def render_text(
    document: Mapping[str, Any], notes: Sequence[str] = (), command: str = "python -m tooling render", docs: str = DOCS
) -> str:
    return header(str(document["stack"]), notes, command, docs) + render_values.dump(dict(document))


# ---------------------------------------------------------------------------------------------
# Running the program
# ---------------------------------------------------------------------------------------------


def project_config(stack: str, root: Path) -> tuple[dict[str, str], str, list[str]]:
    """A project's stack config as the program will get it (CLI string form), the project name and
    notes for the header. The stack file is not judged here (the program judges its own config:
    a bad one fails the run with the program's message)."""
    try:
        config = stackfile.read_stack_config(stack, root)
        project = stackfile.project_name(root)
    except stackfile.StackNotFound:
        known = ", ".join(stackfile.available_stacks(root)) or "none"
        raise RenderError(
            f"error: unknown stack {stack!r}: there is no {stackfile.stack_file(stack, root)} (stacks: {known})", 2
        ) from None
    except (ValueError, KeyError, OSError, yaml.YAMLError) as err:  # no Pulumi.yaml, unreadable YAML
        raise RenderError(f"error: cannot read the configuration of stack {stack!r}: {err}", 2) from None
    # As the Pulumi CLI reads a stack file: a key without a namespace is the project's own.
    config = {key if ":" in key else f"{project}:{key}": value for key, value in config.items()}
    notes = skip_preflight(config)
    return stackfile.cli_config(config), project, notes


def skip_preflight(config: dict[str, Any]) -> list[str]:
    """Turn the library's preflight off in ``config`` (it calls AWS; a render must not, and its
    result would differ from machine to machine); the header note saying so, if it was on."""
    key = f"{CONFIG_NAMESPACE}:preflight"
    if config.get(key) in (True, "true"):
        config[key] = False
        return ["preflight: true in the stack is skipped by render."]
    return []


def run_first_preview(config: dict[str, str], project: str, stack: str, root: Path) -> Simulation:
    """Run the program of the project in ``root`` with ``config`` as the engine's first preview
    would answer it."""
    from .simulation import FirstPreviewCloud, program_file, program_from_file, run_program

    # Whatever the program prints must not end up in the render on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        return run_program(
            program_from_file(program_file(root)),
            config,
            project=project,
            stack=stack,
            preview=True,
            mocks=FirstPreviewCloud(),
            timeout=RENDER_TIMEOUT_SECONDS,
        )


def simulate(stack: str, root: Path, config: dict[str, str], project: str) -> Simulation:
    """Run the program of ``root`` for ``stack`` with ``config`` as a first preview would."""
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
    return sim


def warning_notes(sim: Simulation) -> list[str]:
    """The program's warnings (the library's components log their configuration warnings on
    themselves) as header notes, ``warning: <type> <name>: <message>``: in the render, so a review
    shows a warning a change brings or removes."""
    notes = []
    for reg, message in sim.warnings():
        about = f"{reg.type.rsplit(':', 1)[-1]} {reg.name}: " if reg else ""
        notes.append(f"warning: {about}{' '.join(message.split())}")
    return notes


def render_project_document(stack: str, root: Path) -> tuple[dict[str, Any], list[str]]:
    """The render document of a project's ``stack`` and the notes of its header (raises RenderError)."""
    config, project, notes = project_config(stack, root)
    sim = simulate(stack, root, config, project)
    stack_name, project_name = stack_and_project(sim.stack_urn)
    return render_document(sim.resources, sim.wire_outputs, stack_name, project_name), notes + warning_notes(sim)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Bytes, not text mode: "\n" on every OS, so snapshots match everywhere.
    path.write_bytes(text.encode("utf-8"))
