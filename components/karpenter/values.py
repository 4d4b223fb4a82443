"""The Karpenter chart's values (the chart is pinned in ``catalog.charts.KARPENTER``), from the
settings and the group plans."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..catalog import labels
from ..catalog.charts import KARPENTER
from ..config.capacity_provider import karpenter_replicas
from ..plan import karpenter as objects
from ..plan.group import GroupPlan

#: The controller's namespace (its chart's) and ServiceAccount: the chart names the ServiceAccount
#: after its fullname, ``karpenter`` (templates/_helpers.tpl karpenter.serviceAccountName).
NAMESPACE = KARPENTER.namespace
SERVICE_ACCOUNT = "karpenter"
#: IRSA: the role the ServiceAccount's pods assume (EKS pod identity webhook).
ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"


def node_overlay_needed(plans: Iterable[GroupPlan]) -> bool:
    """Whether some Karpenter group needs its NodeOverlay (``objects.needs_overlay``): the
    controller's ``nodeOverlay`` feature gate (alpha since Karpenter 1.7, off by default: chart
    values ``settings.featureGates.nodeOverlay``). Without it Karpenter ignores NodeOverlays and
    counts EC2's GPUs: one node per shared-slot pod, or none for a renamed resource or a vGPU slice
    (see tests/test_karpenter_scheduling.py)."""
    return any(p.provider.node_pool and objects.needs_overlay(p) for p in plans)


def node_repair_needed(plans: Iterable[GroupPlan]) -> bool:
    """Whether Karpenter repairs its nodes: the controller's ``nodeRepair`` feature gate (alpha,
    off by default: chart values ``settings.featureGates.nodeRepair``), on when the Karpenter
    groups' ``repair.enabled`` is (one gate for every NodePool: the settings refuse groups that
    disagree, ``check.groups``). What it does: ``catalog.node_health`` (replace after 10
    minutes, paused above 20% of a NodePool, forced drain)."""
    return any(p.provider.node_pool and p.repair.enabled for p in plans)


def controller_affinity() -> dict[str, Any]:
    """On the system node group: never a node Karpenter launched (the chart's own rule: the
    controller must not run on capacity it manages) nor a GPU node."""
    keys = (objects.NODEPOOL_LABEL, *labels.GPU_COUNT_LABELS)
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": k, "operator": "DoesNotExist"} for k in keys]}]
            }
        },
        # The chart's default: two replicas never share a node.
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
        },
    }


def reserved_capacity_needed(plans: Iterable[GroupPlan]) -> bool:
    """Whether some Karpenter group launches into a Capacity Reservation (``capacityReservation``):
    the controller's ``reservedCapacity`` feature gate (beta, on by default in 1.14.1: chart values
    ``settings.featureGates.reservedCapacity``), then set explicitly, so a chart whose default
    changes cannot turn it off under the group."""
    return any(p.provider.node_pool and p.settings.capacity_reservation for p in plans)


def karpenter_values(
    *,
    cluster_name: Any,
    interruption_queue: Any,
    role_arn: Any,
    node_overlay: bool,
    system_nodes: int,
    reserved_capacity: bool = False,
    node_repair: bool = False,
) -> dict[str, Any]:
    """Values of the Karpenter chart (paths checked against its values.yaml; rendered with helm in
    tests). Outputs allowed for the cluster name, queue name and role ARN. ``system_nodes``: the
    system node group's minSize; the chart's two replicas need two nodes (required pod
    anti-affinity on the hostname), so one system node runs one replica."""
    return {
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue,
            "featureGates": {
                "nodeOverlay": node_overlay,
                "nodeRepair": node_repair,
                **({"reservedCapacity": True} if reserved_capacity else {}),
            },
        },
        "serviceAccount": {"annotations": {ROLE_ANNOTATION: role_arn}},
        "replicas": karpenter_replicas(system_nodes),
        "affinity": controller_affinity(),
    }
