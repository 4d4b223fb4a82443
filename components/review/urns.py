"""URNs and aliases as the Pulumi engine computes them, and the replacement guard built on them.

Pulumi identifies a resource by its URN, ``urn:pulumi:<stack>::<project>::<qualified type>::<name>``,
where the qualified type chains the types of every ancestor below the root stack
(``gpu-eks:index:GpuCluster$gpu-eks:nodegroup:GpuNodeGroup$aws:eks/nodeGroup:NodeGroup``). A change
of URN (a rename, or a new parent or ancestor type) makes Pulumi delete the old resource and create
a new one, unless the new resource declares an alias that resolves to the old URN. For the EKS
cluster or a node group that is downtime.

The mock monitor names resources with only the parent's last type, so the render recomputes URNs
here exactly as the engine does (``create_urn``), and resolves each alias the way the engine does:

* an alias spec's missing name/type/stack/project default to the resource's own; its parent
  defaults to the resource's parent (``Alias(parent=None)`` means "had no parent");
* aliases are inherited: for every alias of the parent, the child gets the alias it would have had
  under that parent, and a child name that starts with the parent's name has that prefix replaced
  by the aliased parent's name (``{name}-lt`` follows a renamed ``{name}``).

``replaced_urns(old, new)`` is the guard: the URNs of a committed render that a new render neither
declares nor aliases, i.e. the resources Pulumi would delete (or replace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


class Declared(Protocol):
    """What the engine knows of a resource when it registers (simulation.Registration has it)."""

    urn: str  # the simulator's URN: only an identity here, never shown
    type: str
    name: str
    parent_urn: str | None
    aliases: list[Any]


@dataclass(frozen=True)
class Identity:
    urn: str
    #: Every URN this resource also answers to (explicit and inherited aliases), sorted.
    aliases: tuple[str, ...]


def split_urn(urn: str) -> tuple[str, str, str, str]:
    """(stack, project, qualified type, name) of ``urn``."""
    if not urn.startswith("urn:pulumi:"):
        raise ValueError(f"not a Pulumi URN: {urn!r}; expected urn:pulumi:<stack>::<project>::<type>::<name>")
    parts = urn[len("urn:pulumi:") :].split("::", 3)
    if len(parts) != 4:
        raise ValueError(f"not a Pulumi URN: {urn!r}; expected urn:pulumi:<stack>::<project>::<type>::<name>")
    stack, project, qualified_type, name = parts
    return stack, project, qualified_type, name


def create_urn(stack: str, project: str, parent_urn: str | None, typ: str, name: str) -> str:
    """The engine's URN for a resource of ``typ`` named ``name`` under ``parent_urn`` (None: the stack)."""
    qualified = typ
    if parent_urn:
        parent_type = split_urn(parent_urn)[2]
        if parent_type != ROOT_STACK_TYPE:
            qualified = f"{parent_type}${typ}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def inherited_child_alias(child_name: str, child_type: str, parent_name: str, parent_alias: str) -> str:
    """The alias a child gets from one alias of its parent (the engine's and SDKs' rule)."""
    alias_stack, alias_project, _, alias_parent_name = split_urn(parent_alias)
    name = child_name
    if child_name.startswith(parent_name):
        name = alias_parent_name + child_name[len(parent_name) :]
    return create_urn(alias_stack, alias_project, parent_alias, child_type, name)


def _spec_alias(
    spec: Mapping[str, Any],
    resource: Declared,
    parent_urn: str | None,
    stack: str,
    project: str,
    engine_urn_of: Mapping[str, str],
) -> str:
    """The URN one alias spec stands for (missing fields default to the resource's own)."""
    name = spec.get("name") or resource.name
    typ = spec.get("type") or resource.type
    if spec.get("noParent"):
        parent: str | None = None
    elif spec.get("parentUrn"):
        # Alias(parent=resource) arrives as that resource's simulator URN: map it to the engine's.
        parent = engine_urn_of.get(spec["parentUrn"], spec["parentUrn"])
    else:
        parent = parent_urn
    return create_urn(spec.get("stack") or stack, spec.get("project") or project, parent, typ, name)


def engine_identities(resources: Sequence[Declared], stack: str, project: str) -> dict[str, Identity]:
    """Engine URN and aliases of every resource, keyed by the simulator's URN.

    ``resources`` must be in declaration order (a parent is always declared before its children).
    """
    identities: dict[str, Identity] = {}
    engine_urn_of: dict[str, str] = {}
    names: dict[str, str] = {}
    for r in resources:
        parent = identities.get(r.parent_urn or "")
        parent_urn = parent.urn if parent else None
        urn = create_urn(stack, project, parent_urn, r.type, r.name)
        explicit: list[str] = []
        for alias in r.aliases:
            if isinstance(alias, str):
                explicit.append(alias)
            elif isinstance(alias, Mapping) and "urn" in alias:
                explicit.append(str(alias["urn"]))
            elif isinstance(alias, Mapping) and "spec" in alias:
                explicit.append(_spec_alias(alias["spec"], r, parent_urn, stack, project, engine_urn_of))
            else:
                raise ValueError(f"alias of {r.name!r}: received {alias!r}; expected a URN or {{'spec': {{...}}}}")
        inherited: list[str] = []
        if parent is not None and r.parent_urn is not None:
            # The engine multiplies out the parent's aliases: the child under each old identity
            # of its parent, both as it is named now and under each of its own aliases.
            parent_name = names[r.parent_urn]
            for parent_alias in parent.aliases:
                inherited.append(inherited_child_alias(r.name, r.type, parent_name, parent_alias))
                for alias_urn in explicit:
                    _, _, qualified, alias_name = split_urn(alias_urn)
                    inherited.append(
                        inherited_child_alias(alias_name, qualified.split("$")[-1], parent_name, parent_alias)
                    )
        identities[r.urn] = Identity(urn, tuple(sorted(set(explicit + inherited) - {urn})))
        engine_urn_of[r.urn] = urn
        names[r.urn] = r.name
    return identities


# ---------------------------------------------------------------------------------------------
# The replacement guard (on renders: {"resources": [{"urn": ..., "aliases": [...]}, ...]})
# ---------------------------------------------------------------------------------------------


def render_urns(render: Mapping[str, Any]) -> list[str]:
    return [str(item["urn"]) for item in render.get("resources") or []]


def render_aliases(render: Mapping[str, Any]) -> set[str]:
    return {str(a) for item in render.get("resources") or [] for a in item.get("aliases") or []}


def replaced_urns(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """URNs of ``old`` that ``new`` neither declares nor aliases (in ``old``'s order)."""
    covered = set(render_urns(new)) | render_aliases(new)
    return [urn for urn in render_urns(old) if urn not in covered]


#: The package of the library's component types (``gpu-eks:index:GpuCluster``, ``gpu-eks:nodegroup:...``).
LIBRARY_PACKAGE = "gpu-eks"

_ALIAS_ADVICE = [
    '  opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name="<old name>")])    # renamed',
    "  opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=<old parent>)])  # re-parented",
    "(children whose names start with their parent's name follow a renamed parent automatically).",
]


def inside_library_component(urn: str) -> bool:
    """Whether the resource of ``urn`` was declared by one of the library's components (an ancestor's
    type is the library's): a consumer's program declares the component, the library its children."""
    _, _, qualified, _ = split_urn(urn)
    return any(t.split(":", 1)[0] == LIBRARY_PACKAGE for t in qualified.split("$")[:-1])


def guard_report(stack: str, missing: Iterable[str], refresh_command: str, consumer: bool = False) -> str:
    """What a developer reads when the guard fails: what would happen and the ways out. ``consumer``:
    a consuming team's program (gpu-eks-review), which can alias what it declares but not what the
    library's components declare inside themselves, and has no snapshots to refresh."""
    missing = list(missing)
    lines = [
        f"stack {stack}: these resources would be deleted (or replaced) by `pulumi up`, because no resource of "
        "the current program has their URN or an alias to it:",
    ]
    for urn in missing:
        _, _, qualified, name = split_urn(urn)
        lines.append(f"  {urn}\n      (type {qualified.split('$')[-1]}, name {name})")
    if not consumer:
        lines += [
            "If the resource was renamed or moved to another parent, keep it by declaring its old identity:",
            *_ALIAS_ADVICE,
            f"If the deletion is intended, refresh the snapshots and let the review see it: {refresh_command}",
        ]
        return "\n".join(lines)
    library = [u for u in missing if inside_library_component(u)]
    if len(library) < len(missing):
        lines += [
            "Those your program declares, if renamed or moved to another parent: keep each by declaring its old "
            "identity in your program:",
            *_ALIAS_ADVICE,
        ]
    if library:
        lines.append(
            f"{len(library)} of them gpu-eks-components' components declare inside themselves, not your program"
            + (" (those of a component you renamed follow its alias)" if len(library) < len(missing) else "")
            + ": when your program did not rename their component, the library did (an upgrade), and the alias "
            "is the library's to declare, not yours. Read its UPGRADING.md for this version before deploying, "
            "or stay on the version you have."
        )
    lines.append(f"If the deletion is intended, deploy it knowingly: `{refresh_command}` renders what replaces them.")
    return "\n".join(lines)
