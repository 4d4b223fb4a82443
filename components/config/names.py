"""Resource names the library derives from a GPU group's name: the reserved ones."""

from __future__ import annotations

#: ``<name>-<child>`` with its own children named ``<name>-<child>-…`` (gpu_cluster.py builds the
#: names from these; a test checks every resource of a run against them).
CLUSTER_CHILD = "cluster"
OPERATOR_CHILD = "gpu-operator"
VERIFICATION_CHILD = "verify"
AUTOSCALER_CHILD = "autoscaler"
OBSERVABILITY_CHILD = "observability"
#: ``<name>-teams``: not reserved for group names (that would refuse groups accepted before teams
#: existed): its children are Kubernetes namespace objects, admission policies and EKS access entries,
#: types no node group declares, so their URNs never collide with a group's.
TEAMS_CHILD = "teams"
#: ``<name>-efa``, the EFA device plugin (issue 32): not reserved either, for the same reason (a
#: component of its own type and a Helm release).
EFA_CHILD = "efa"
SYSTEM_SIDE_CHILDREN = (CLUSTER_CHILD, OPERATOR_CHILD, VERIFICATION_CHILD, AUTOSCALER_CHILD, OBSERVABILITY_CHILD)
#: Declared only when a GPU group uses Karpenter, and reserved only then, so that no configuration
#: accepted before Karpenter existed is refused now.
KARPENTER_CHILD = "karpenter"
#: A node group ``<n>`` declares its launch template as ``<n>-lt`` (blocks/managed.py).
LAUNCH_TEMPLATE_SUFFIX = "lt"


def reserved_group_name_problem(name: str, karpenter: bool = False) -> str | None:
    """A GPU group ``name`` gives resources named ``<component>-<name>``; it must not be (or start)
    the name of a system-side child (``karpenter`` too where a group uses Karpenter), nor end like a
    launch template."""
    for child in (*SYSTEM_SIDE_CHILDREN, *((KARPENTER_CHILD,) if karpenter else ())):
        if name == child or name.startswith(f"{child}-"):
            return (
                f"a name that is not {child!r} and does not start with '{child}-': the cluster's own "
                f"resources are named <component>-{child}-… and the group's would read as theirs"
            )
    if name.endswith(f"-{LAUNCH_TEMPLATE_SUFFIX}"):
        return f"a name that does not end with '-{LAUNCH_TEMPLATE_SUFFIX}' (the suffix of launch templates)"
    return None
