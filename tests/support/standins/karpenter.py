"""Karpenter's provisioning decision for pending pods, from its own rules, for tests.

What Karpenter (kubernetes-sigs/karpenter v1.14.0, the core vendored by the 1.14.1 AWS provider)
does with pending pods, reduced to what decides the number of GPU nodes:

* Instance types of a NodePool: the provider's capacity (aws/karpenter-provider-aws 1d927085
  pkg/providers/instancetype/types.go computeCapacity: ``nvidia.com/gpu`` = EC2's NVIDIA GPU count,
  ``pods`` = the EC2NodeClass's kubelet ``maxPods``) and labels (the well-known ones and
  ``karpenter.k8s.aws/instance-gpu-count``: computeRequirements). With the ``nodeOverlay`` feature
  gate, a NodeOverlay whose requirements are compatible with the NodePool and the type merges its
  ``capacity`` over the type's (pkg/cloudprovider/overlay/cloudprovider.go; controllers/nodeoverlay
  getOverlaidOfferings; cloudprovider/types.go ApplyCapacityOverlay: ``lo.Assign``). Without the
  gate overlays are ignored.
* A pod may go to a NodePool when it tolerates every taint of its template (pkg/scheduling/taints.go
  Tolerates: every effect) and its node selector and required node affinity are compatible with the
  template's labels, the NodePool's requirements and the type's labels (nodeclaimtemplate
  requirements; pkg/scheduling/requirements.go Compatible: a custom label the NodePool does not
  define has no known values, so a pod that requires it gets no node).
* Pods are taken in order; each goes to a node already planned when it fits there (NodeClaim.CanAdd:
  some remaining instance type still fits every pod plus the DaemonSet pods), else to a new
  NodeClaim while the NodePool's ``limits.nodes`` allows one (scheduler.go, resources.Node), else it
  stays pending. A required pod affinity on the hostname sends a pod to the node of the first pod
  its selector matches (topology.go; the first such pod may go anywhere).
* Extended resources are not reduced by kube-reserved or eviction thresholds (only cpu, memory and
  ephemeral storage are: instancetype/types.go overhead), so a type's allocatable GPU resource is
  its capacity. The pods' cpu, memory and ephemeral-storage requests (a few hundred MiB) are far
  below a GPU instance's and are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components import catalog
from components.plan import karpenter as objects
from components.plan.group import GroupPlan
from tests.support.standins.scheduling import node_matches_affinity


@dataclass
class InstanceType:
    name: str
    labels: dict[str, str]
    capacity: dict[str, int]


@dataclass
class NodeClaim:
    #: Instance types that still fit every pod placed on it.
    options: list[InstanceType]
    pods: list[Mapping[str, Any]] = field(default_factory=list)


@dataclass
class Outcome:
    nodes: list[NodeClaim]
    pending: list[Mapping[str, Any]]

    @property
    def pods_per_node(self) -> list[int]:
        return [len(n.pods) for n in self.nodes]


def _matches(requirements: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    return node_matches_affinity(
        labels,
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(requirements)}]
                }
            }
        },
    )


def instance_types(plan: GroupPlan, pool: Mapping[str, Any], overlays: Sequence[Mapping[str, Any]], gate: bool):
    """The NodePool's instance types as Karpenter sees them (with or without the overlay gate)."""
    spec = pool["spec"]["template"]["spec"]
    types = []
    for name in plan.instance_types:
        row = catalog.GPU_INSTANCE_TYPES[name]
        for capacity_type in ("on-demand", "spot"):
            labels = {
                objects.INSTANCE_TYPE_LABEL: name,
                objects.ARCH_LABEL: objects.KUBERNETES_ARCH[row.architecture],
                objects.OS_LABEL: "linux",
                objects.CAPACITY_TYPE_LABEL: capacity_type,
                "karpenter.k8s.aws/instance-gpu-count": str(row.ec2_gpus),
            }
            if not _matches(spec["requirements"], labels):
                continue
            capacity = {"pods": plan.max_pods, "nvidia.com/gpu": row.ec2_gpus}
            pool_labels = {**pool["spec"]["template"]["metadata"]["labels"], **labels}
            pool_labels[objects.NODEPOOL_LABEL] = pool["metadata"]["name"]
            for overlay in overlays if gate else ():
                if _matches(overlay["spec"]["requirements"], pool_labels):
                    capacity.update({k: int(v) for k, v in overlay["spec"]["capacity"].items()})
            types.append(InstanceType(name, pool_labels, capacity))
    return types


def _tolerates(pod: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    for t in pod["spec"].get("tolerations", []):
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _requests(pod: Mapping[str, Any]) -> dict[str, int]:
    # Extended resources: limits are the requests (the API server defaults requests from limits).
    total: dict[str, int] = {"pods": 1}
    for c in pod["spec"]["containers"]:
        for resource, amount in c.get("resources", {}).get("limits", {}).items():
            if "/" in resource:  # extended resources only (see the module docstring)
                total[resource] = total.get(resource, 0) + int(amount)
    return total


def _fits(it: InstanceType, pods: Sequence[Mapping[str, Any]], daemonset_pods: int) -> bool:
    used = {"pods": daemonset_pods}
    for pod in pods:
        for resource, amount in _requests(pod).items():
            used[resource] = used.get(resource, 0) + amount
    return all(it.capacity.get(resource, 0) >= amount for resource, amount in used.items())


def _affinity_allows(pod: Mapping[str, Any], it: InstanceType) -> bool:
    """The pod's required node affinity against the type's labels (the NodePool's included): an
    ``In`` on a label the NodePool does not define is never met (requirements.go Compatible)."""
    affinity = pod["spec"].get("affinity", {})
    if not affinity.get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        return True
    return node_matches_affinity(it.labels, affinity)


def _affinity_target(pod: Mapping[str, Any], nodes: Sequence[NodeClaim]) -> NodeClaim | bool | None:
    """The node a required hostname pod affinity sends ``pod`` to; None: no constraint; False:
    none yet (the first pod of the selector may go anywhere)."""
    terms = pod["spec"].get("affinity", {}).get("podAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not terms:
        return None
    selector = terms[0]["labelSelector"]["matchLabels"]
    for node in nodes:
        if any(selector.items() <= p["metadata"]["labels"].items() for p in node.pods):
            return node
    return False


def provision(
    plan: GroupPlan, pods: Sequence[Mapping[str, Any]], *, gate: bool, daemonset_pods: int | None = None
) -> Outcome:
    """The NodeClaims Karpenter launches, from zero nodes, for ``pods`` pending on ``plan``'s group."""
    pool = objects.node_pool(plan)
    overlays = [objects.node_overlay(plan)] if objects.needs_overlay(plan) else []
    types = instance_types(plan, pool, overlays, gate)
    taints = pool["spec"]["template"]["spec"].get("taints", [])
    limit = int(pool["spec"]["limits"]["nodes"])
    ds = plan.max_pods - plan.usable_pod_slots if daemonset_pods is None else daemonset_pods
    nodes: list[NodeClaim] = []
    pending = []
    for pod in pods:
        selector = pod["spec"].get("nodeSelector", {})
        if not all(_tolerates(pod, t) for t in taints):
            pending.append(pod)
            continue
        options = [it for it in types if selector.items() <= it.labels.items() and _affinity_allows(pod, it)]
        target = _affinity_target(pod, nodes)
        candidates = [target] if isinstance(target, NodeClaim) else nodes
        placed = False
        for node in candidates:
            fitting = [it for it in node.options if it in options and _fits(it, [*node.pods, pod], ds)]
            if fitting:
                node.options, placed = fitting, True
                node.pods.append(pod)
                break
        if placed:
            continue
        if isinstance(target, NodeClaim):  # bound to a node that has no room left
            pending.append(pod)
            continue
        fitting = [it for it in options if _fits(it, [pod], ds)]
        if fitting and len(nodes) < limit:
            nodes.append(NodeClaim(fitting, [pod]))
        else:
            pending.append(pod)
    return Outcome(nodes, pending)


def job_pods(job_spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pods a Job creates at once (``parallelism``), as pod objects."""
    template = job_spec["template"]
    return [{"metadata": dict(template["metadata"]), "spec": template["spec"]} for _ in range(job_spec["parallelism"])]


def workload_pods(plan: GroupPlan, count: int) -> list[dict[str, Any]]:
    """``count`` independent pods asking one slot each, as README's "Stack outputs" tell workloads to."""
    spec = {
        "nodeSelector": dict(plan.node_labels),
        "tolerations": [dict(t) for t in plan.tolerations],
        "containers": [{"name": "app", "resources": {"limits": {plan.resource_name: 1}}}],
    }
    return [{"metadata": {"labels": {"app": f"w{i}"}}, "spec": spec} for i in range(count)]
