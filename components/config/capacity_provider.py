"""The capacity provider of GPU node groups (``gpuNodeGroups[].capacityProvider``, issue 26): the
rules of a Karpenter group, and what it changes in the settings' rules across keys. Imports no
settings model (``groups`` calls it), so groups are duck-typed here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import KeyedProblem

KARPENTER = "karpenter"
#: The largest root volume an EC2NodeClass takes: its CRD's ``volumeSize`` pattern stops at
#: ``59000Gi`` (aws/karpenter-provider-aws 1d927085 pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
KARPENTER_MAX_VOLUME_GIB = 59000
#: Label domains Karpenter keeps to itself (kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/labels.go
#: RestrictedLabelDomains, IsRestrictedLabel; the AWS provider adds karpenter.k8s.aws; the NodePool
#: CRD's CEL rules on template labels say the same).
KARPENTER_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")

#: Tag keys an EC2NodeClass refuses in ``spec.tags``: Karpenter sets them itself (its CRD's
#: x-kubernetes-validations on tags; a ``kubernetes.io/cluster`` prefix included).
RESERVED_TAG_KEYS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
RESERVED_TAG_PREFIX = "kubernetes.io/cluster"


def reserved_tag_problem(key: str) -> str | None:
    """Why an EC2NodeClass would refuse ``key`` in its tags (every Karpenter group gets the stack's
    tags), or None."""
    if key in RESERVED_TAG_KEYS or key.startswith(RESERVED_TAG_PREFIX):
        return (
            f"no tag key Karpenter sets itself ({', '.join(RESERVED_TAG_KEYS)}, {RESERVED_TAG_PREFIX}*) with a "
            "Karpenter group: the EC2NodeClass CRD refuses it in spec.tags"
        )
    return None


def karpenter_group_problems(
    min_size: int, desired_size: int, labels: Mapping[str, str], disk_size_gib: int
) -> list[KeyedProblem]:
    """What a ``capacityProvider: karpenter`` group cannot promise (keys relative to the group).

    Karpenter launches a node for pending pods and removes empty ones: a NodePool has no minimum or
    desired count, only limits (kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go
    NodePoolSpec; ``replicas`` is for static pools only). A minSize nothing keeps would be a promise
    the library breaks, so it is refused rather than ignored; maxSize is the NodePool's node limit.
    """
    problems: list[KeyedProblem] = [
        (
            ("scaling", key),
            value,
            "0 with capacityProvider karpenter: Karpenter launches nodes for pending pods and keeps no "
            f"{key} (a NodePool has only limits; maxSize becomes its node limit)",
        )
        for key, value in (("minSize", min_size), ("desiredSize", desired_size))
        if value != 0
    ]
    for key, value in labels.items():
        domain = key.split("/")[0] if "/" in key else ""
        if any(domain == d or domain.endswith("." + d) for d in KARPENTER_LABEL_DOMAINS):
            problems.append(
                (
                    ("labels", key),
                    value,
                    f"no label of Karpenter's domains ({', '.join(KARPENTER_LABEL_DOMAINS)}) with capacityProvider "
                    "karpenter: Karpenter sets them itself and refuses them in a NodePool",
                )
            )
    if disk_size_gib > KARPENTER_MAX_VOLUME_GIB:
        problems.append(
            (
                ("diskSizeGiB",),
                disk_size_gib,
                f"at most {KARPENTER_MAX_VOLUME_GIB} with capacityProvider karpenter: the EC2NodeClass CRD refuses "
                "a larger volumeSize (blockDeviceMappings[].ebs.volumeSize pattern, at most "
                f"{KARPENTER_MAX_VOLUME_GIB}Gi)",
            )
        )
    return problems


def uses_karpenter(groups: Iterable[Any]) -> bool:
    """Whether some group (a ``GpuNodeGroupSettings``) uses Karpenter."""
    return any(g.capacity_provider == KARPENTER for g in groups)


def tag_problems(groups: Iterable[Any], tags: Mapping[str, str]) -> list[KeyedProblem]:
    """Every Karpenter group's EC2NodeClass carries the stack's tags: none Karpenter sets itself."""
    if not uses_karpenter(groups):
        return []
    return [(("tags", k), v, problem) for k, v in tags.items() if (problem := reserved_tag_problem(k))]


#: The interruption queue is named after the cluster (karpenter/component.py, as cloudformation.yaml's
#: ``QueueName: ${ClusterName}``), and an SQS queue name has at most 80 characters (botocore ``sqs``
#: 2012-11-05 CreateQueueRequest.QueueName), fewer than the 100 of an EKS cluster name.
QUEUE_NAME_MAX_LENGTH = 80


def cluster_name_problems(groups: Iterable[Any], cluster_name: str) -> list[KeyedProblem]:
    """Where some group uses Karpenter, the cluster's name must also be a queue name's length."""
    if not uses_karpenter(groups) or len(cluster_name) <= QUEUE_NAME_MAX_LENGTH:
        return []
    return [
        (
            ("clusterName",),
            cluster_name,
            f"at most {QUEUE_NAME_MAX_LENGTH} characters with a capacityProvider karpenter group: Karpenter's "
            "interruption queue (SQS) is named after the cluster, and an SQS queue name has at most "
            f"{QUEUE_NAME_MAX_LENGTH} characters",
        )
    ]


#: The Karpenter controller's pod, on the system nodes (karpenter/values.py ``controller_affinity``).
KARPENTER_CONTROLLER_POD = "karpenter"


def karpenter_replicas(system_min_size: int) -> int:
    """The controller's replicas: the chart's 2 where the system group keeps two nodes, else 1 (its
    required pod anti-affinity on the hostname puts two replicas on two nodes)."""
    return 2 if system_min_size >= 2 else 1


def karpenter_pods(groups: Iterable[Any], system_min_size: int) -> tuple[str, ...]:
    """The controller's pods the system nodes hold where some group uses Karpenter."""
    return (KARPENTER_CONTROLLER_POD,) * karpenter_replicas(system_min_size) if uses_karpenter(groups) else ()


def nodes_held(group: Any, at_max: bool) -> int:
    """How many nodes a group holds (for its subnet addresses): managed groups at maxSize with the
    Cluster Autoscaler, else desiredSize; a Karpenter group launches up to its limit (maxSize)
    whatever the autoscaler does."""
    return group.scaling.max_size if at_max or group.capacity_provider == KARPENTER else group.scaling.desired_size


def address_note(groups: Iterable[Any]) -> str:
    """What the address rule's message adds where a group uses Karpenter."""
    return " (maxSize for Karpenter groups: Karpenter launches up to it)" if uses_karpenter(groups) else ""


def scaled_by_autoscaler(group: Any) -> bool:
    """A managed group that can change size: the Cluster Autoscaler's (a Karpenter group has no ASG)."""
    return group.capacity_provider != KARPENTER and group.scaling.min_size < group.scaling.max_size
