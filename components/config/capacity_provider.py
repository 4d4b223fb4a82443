"""The capacity provider of GPU node groups (``gpuNodeGroups[].capacityProvider``, issue 26): what
launches a group's nodes, EKS managed node groups or Karpenter.

``CapacityProvider`` holds every fact that differs between them, one description per settings value
(``PROVIDERS``; a group's ``GpuNodeGroupSettings.provider``, its plan's ``GroupPlan.provider``): the
settings' rules, the plan, the checks and the components read these facts, never the provider's
name. The one branch on the provider is which component declares a group's nodes
(``nodegroups/component.py``). Below them: the rules of a group on a provider that keeps labels,
volumes or tags to itself, and what a provider's controller in the cluster changes in the rules
across keys. Imports no settings model (``groups`` calls it), so groups are duck-typed here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..catalog import efa
from .errors import KeyedProblem
from .taints import Taint

#: The largest root volume an EC2NodeClass takes: its CRD's ``volumeSize`` pattern stops at
#: ``59000Gi`` (aws/karpenter-provider-aws 1d927085 pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
KARPENTER_MAX_VOLUME_GIB = 59000
#: Label domains Karpenter keeps to itself (kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/labels.go
#: RestrictedLabelDomains, IsRestrictedLabel; the AWS provider adds karpenter.k8s.aws; the NodePool
#: CRD's CEL rules on template labels say the same).
KARPENTER_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
#: Karpenter's startup taint, in its NodeConfig's ``registerWithTaints`` (kubernetes-sigs/karpenter
#: v1.14.1 pkg/apis/v1/taints.go ``UnregisteredNoExecuteTaint``; aws/karpenter-provider-aws v1.14.1
#: pkg/providers/amifamily/resolver.go, bootstrap/nodeadm.go ``generateInlineKubeletConfiguration``).
KARPENTER_UNREGISTERED = Taint(key="karpenter.sh/unregistered", effect="NoExecute")


@dataclass(frozen=True)
class CapacityProvider:
    """What launches a group's nodes, as the library's code needs to know it."""

    #: The settings' value (``capacityProvider``).
    name: str
    #: The group's nodes are a Karpenter NodePool's (its EC2NodeClass, NodePool and NodeOverlay from
    #: the plan: plan/karpenter.py), launched by the cluster's Karpenter for pending pods, up to
    #: maxSize, keeping no size (a NodePool has only limits); the controller runs in the cluster
    #: (``GpuCluster`` declares it: its pods on the system nodes, its interruption queue named after
    #: the cluster). Else an EKS managed node group's (blocks/managed.py): an EC2 Auto Scaling
    #: group (``auto_scaling_group``).
    node_pool: bool
    #: The provider writes the node's labels and taints into its own NodeConfig (Karpenter, from the
    #: NodePool; EKS's part names only the cluster), so the group's user data leaves them out
    #: (plan/userdata.py ``group_user_data``).
    writes_node_labels: bool
    #: The provider's API takes the group's user data base64-encoded (a launch template's
    #: ``UserData``); else as text (an EC2NodeClass's ``userData``: Karpenter encodes it with its part).
    user_data_base64: bool
    #: Taints the provider registers a node with besides the group's (Karpenter's startup taint):
    #: the boot stage's ``--register-with-taints`` repeats them (a flag wins over the config file:
    #: plan/boot.py ``registration_taints``).
    startup_taints: tuple[Taint, ...]
    #: A node may reboot in its boot stage (a pending MIG mode) before it registers: not where the
    #: provider drops a node that takes long to register (Karpenter's 15 minutes: plan/boot.py).
    reboots_before_registering: bool
    #: The provider picks a reservation's offerings itself (its zone and instance type) and launches
    #: On-Demand when the reservation is full (Karpenter: its NodePool allows on-demand beside
    #: reserved); a managed node group launches into its own subnets and types, and EC2 never falls
    #: back from a reservation targeted by id.
    picks_reserved_offerings: bool
    #: A reservation is targeted by id only (the EC2NodeClass's selector terms), not by resource
    #: group or preference.
    reservation_by_id_only: bool
    #: An EFA node's network interfaces (``catalog.efa``) and the ENIs of card 0 they take from the
    #: VPC CNI (the node's max pods, its subnet addresses).
    efa_interfaces: Callable[[str], tuple[efa.EfaInterface, ...]]
    efa_enis_taken: int
    #: The provider counts a pod's huge pages when it launches a node for it (the Cluster Autoscaler,
    #: from the ASG's template tag); Karpenter models none (verification/nccl.py).
    huge_pages: bool
    #: Label domains the provider keeps to itself, refused in a group's labels.
    label_domains: tuple[str, ...]
    #: The largest root volume (GiB) it takes; None: the settings' own bound.
    max_root_volume_gib: int | None
    #: Node repair is one feature gate of the provider's controller, for every group alike, with a
    #: fixed policy (Karpenter's ``nodeRepair``: ``catalog.node_health``); else each group's own,
    #: configured (EKS's ``nodeRepairConfig``).
    repair_gate: bool
    #: Who repairs, in the outputs' words.
    repair_by: str

    @property
    def auto_scaling_group(self) -> bool:
        """The group is an EC2 Auto Scaling group (a managed node group's): it holds its minSize to
        desiredSize nodes, and only the Cluster Autoscaler resizes it (its template tags and rules;
        the stack outputs name the group)."""
        return not self.node_pool


MANAGED_NODE_GROUP = CapacityProvider(
    name="managedNodeGroup",
    node_pool=False,
    writes_node_labels=False,
    user_data_base64=True,
    startup_taints=(),
    reboots_before_registering=True,
    picks_reserved_offerings=False,
    reservation_by_id_only=False,
    efa_interfaces=efa.efa_interfaces,
    efa_enis_taken=0,
    huge_pages=True,
    label_domains=(),
    max_root_volume_gib=None,
    repair_gate=False,
    repair_by="eks nodeRepairConfig",
)
KARPENTER = CapacityProvider(
    name="karpenter",
    node_pool=True,
    writes_node_labels=True,
    user_data_base64=False,
    startup_taints=(KARPENTER_UNREGISTERED,),
    reboots_before_registering=False,
    picks_reserved_offerings=True,
    reservation_by_id_only=True,
    efa_interfaces=efa.karpenter_interfaces,
    efa_enis_taken=efa.KARPENTER_CARD0_EFA_ONLY,
    huge_pages=False,
    label_domains=KARPENTER_LABEL_DOMAINS,
    max_root_volume_gib=KARPENTER_MAX_VOLUME_GIB,
    repair_gate=True,
    repair_by="karpenter nodeRepair",
)
#: Every provider by its settings value.
PROVIDERS: Mapping[str, CapacityProvider] = {p.name: p for p in (MANAGED_NODE_GROUP, KARPENTER)}

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


def provider_problems(
    provider: CapacityProvider, min_size: int, desired_size: int, labels: Mapping[str, str], disk_size_gib: int
) -> list[KeyedProblem]:
    """What a group on ``provider`` cannot promise (keys relative to the group).

    Karpenter launches a node for pending pods and removes empty ones: a NodePool has no minimum or
    desired count, only limits (kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go
    NodePoolSpec; ``replicas`` is for static pools only). A minSize nothing keeps would be a promise
    the library breaks, so it is refused rather than ignored; maxSize is the NodePool's node limit.
    """
    problems: list[KeyedProblem] = []
    if not provider.auto_scaling_group:
        problems += [
            (
                ("scaling", key),
                value,
                f"0 with capacityProvider {provider.name}: Karpenter launches nodes for pending pods and keeps no "
                f"{key} (a NodePool has only limits; maxSize becomes its node limit)",
            )
            for key, value in (("minSize", min_size), ("desiredSize", desired_size))
            if value != 0
        ]
    domains = provider.label_domains
    for key, value in labels.items():
        domain = key.split("/")[0] if "/" in key else ""
        if any(domain == d or domain.endswith("." + d) for d in domains):
            problems.append(
                (
                    ("labels", key),
                    value,
                    f"no label of Karpenter's domains ({', '.join(domains)}) with capacityProvider "
                    f"{provider.name}: Karpenter sets them itself and refuses them in a NodePool",
                )
            )
    largest = provider.max_root_volume_gib
    if largest is not None and disk_size_gib > largest:
        problems.append(
            (
                ("diskSizeGiB",),
                disk_size_gib,
                f"at most {largest} with capacityProvider {provider.name}: the EC2NodeClass CRD refuses "
                f"a larger volumeSize (blockDeviceMappings[].ebs.volumeSize pattern, at most {largest}Gi)",
            )
        )
    return problems


def needs_karpenter(groups: Iterable[Any]) -> bool:
    """Whether some group (a ``GpuNodeGroupSettings``) is a NodePool: the cluster runs Karpenter."""
    return any(g.provider.node_pool for g in groups)


def tag_problems(groups: Iterable[Any], tags: Mapping[str, str]) -> list[KeyedProblem]:
    """Every Karpenter group's EC2NodeClass carries the stack's tags: none Karpenter sets itself."""
    if not needs_karpenter(groups):
        return []
    return [(("tags", k), v, problem) for k, v in tags.items() if (problem := reserved_tag_problem(k))]


#: The interruption queue is named after the cluster (karpenter/component.py, as cloudformation.yaml's
#: ``QueueName: ${ClusterName}``), and an SQS queue name has at most 80 characters (botocore ``sqs``
#: 2012-11-05 CreateQueueRequest.QueueName), fewer than the 100 of an EKS cluster name.
QUEUE_NAME_MAX_LENGTH = 80


def cluster_name_problems(groups: Iterable[Any], cluster_name: str) -> list[KeyedProblem]:
    """Where some group uses Karpenter, the cluster's name must also be a queue name's length."""
    if not needs_karpenter(groups) or len(cluster_name) <= QUEUE_NAME_MAX_LENGTH:
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
    return (KARPENTER_CONTROLLER_POD,) * karpenter_replicas(system_min_size) if needs_karpenter(groups) else ()


def nodes_held(group: Any, at_max: bool) -> int:
    """How many nodes a group holds (for its subnet addresses): managed groups at maxSize with the
    Cluster Autoscaler, else desiredSize; a Karpenter group launches up to its limit (maxSize)
    whatever the autoscaler does."""
    held = at_max or not group.provider.auto_scaling_group
    return group.scaling.max_size if held else group.scaling.desired_size


def address_note(groups: Iterable[Any]) -> str:
    """What the address rule's message adds where a group uses Karpenter."""
    launched = any(not g.provider.auto_scaling_group for g in groups)
    return " (maxSize for Karpenter groups: Karpenter launches up to it)" if launched else ""


def scaled_by_autoscaler(group: Any) -> bool:
    """A managed group that can change size: the Cluster Autoscaler's (a Karpenter group has no ASG)."""
    return group.provider.auto_scaling_group and group.scaling.min_size < group.scaling.max_size
