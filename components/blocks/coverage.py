"""No half-wired GPU node groups: one gpu-operator per cluster covers every GPU node group of it.

The operator's values (sharing profiles, tolerations for the groups' taints, placement) are
computed from the ``GpuNodeGroup`` components it is given, so it covers exactly those. What this
module catches is a group declared for the same cluster but not given to the operator: its nodes
would get no sharing profile and the operator's DaemonSets would not tolerate its taints (no
device plugin, no GPUs advertised), with no error anywhere. Each program run keeps a registry of
the groups and operators declared; a mismatch fails at declaration, naming both resources.

"The same cluster" means the same ``cluster_name`` input: the same string, or the same Output
object (e.g. ``gpu.cluster.cluster_name``). Two different Outputs that resolve to the same name
are not recognised (nothing is known about them at declaration).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi

from ..plan.group import GroupPlan


class DeclaredGroup(Protocol):
    """A GPU node group declared on a cluster (a ``GpuNodeGroup``), as the cluster's other components
    take it: they read its one plan, and wait for it (a Pulumi resource)."""

    plan: GroupPlan


class HalfWiredError(ValueError):
    """A GPU node group its cluster's gpu-operator does not cover."""


@dataclass
class _Operator:
    name: str
    clusters: set[Any]


@dataclass
class _Run:
    #: (cluster key, resource name, the GpuNodeGroup)
    groups: list[tuple[Any, str, Any]] = field(default_factory=list)
    operators: list[_Operator] = field(default_factory=list)
    #: Keeps every Output used as a key alive, so that its id() is never reused within the run.
    keep: list[Any] = field(default_factory=list)


#: The registry of the program running now, with the root (stack) resource it belongs to. A
#: process runs one program at a time; tests that run several start afresh with each new root.
#: Resources declared before any stack exists (Pulumi unit tests declaring at import time) share
#: the registry of root None.
_current: tuple[Any, _Run] = (None, _Run())

HOW_TO_COVER = (
    "declare GPU node groups before the operator and pass every one of them to it "
    "(GpuOperatorArgs.gpu_node_groups, GpuCapacityArgs.node_groups); with GpuCluster, add the group "
    "to its settings' gpuNodeGroups instead"
)


def _run() -> _Run:
    global _current
    root = pulumi.runtime.get_root_resource()
    if _current[0] is not root:
        _current = (root, _Run())
    return _current[1]


def _key(run: _Run, cluster_name: Any) -> Any:
    if isinstance(cluster_name, str):
        return ("name", cluster_name)
    run.keep.append(cluster_name)
    return ("object", id(cluster_name))


def register_node_group(name: str, group: Any, cluster_name: pulumi.Input[str]) -> None:
    """Record a GpuNodeGroup; fails if its cluster's operator was declared without it."""
    run = _run()
    key = _key(run, cluster_name)
    for op in run.operators:
        if key in op.clusters:
            raise HalfWiredError(
                f"GpuNodeGroup {name!r} is declared after GpuOperator {op.name!r} of the same cluster, "
                f"which does not cover it (no sharing profile, no toleration for its taints): {HOW_TO_COVER}"
            )
    run.groups.append((key, name, group))


def register_operator(name: str, groups: Sequence[Any]) -> None:
    """Record a GpuOperator covering ``groups``; fails if its cluster has a group it lacks."""
    run = _run()
    covered = {id(g) for g in groups}
    clusters = {key for key, _, g in run.groups if id(g) in covered}
    missing = [n for key, n, g in run.groups if key in clusters and id(g) not in covered]
    if missing:
        raise HalfWiredError(
            f"GpuOperator {name!r} does not cover GpuNodeGroup(s) {missing} of the same cluster "
            f"(no sharing profile, no toleration for their taints): {HOW_TO_COVER}"
        )
    run.operators.append(_Operator(name, clusters))
