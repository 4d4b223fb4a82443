"""How many subnet addresses a node holds with the VPC CNI's defaults: its ENIs and IPv4 addresses
per ENI (``defaultMaxENIs`` and ``ipv4AddressesPerInterface`` of awslabs/amazon-eks-ami
nodeadm/internal/kubelet/instance-info.jsonl, the numbers nodeadm computes max pods from;
tests/test_settings_rules.py checks every row against the reference copy).

The VPC CNI (aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md, v1.23.0) keeps, with its default
``WARM_ENI_TARGET=1``, "a full ENI" of free addresses on every node: an idle node holds one ENI,
a node with pods the ENIs its pods use plus one warm ENI. Each ENI takes all its addresses (its
primary one and the secondary ones for pods) from the node's subnet; pods get only the secondary
ones (awsutils.go ``GetENIIPv4Limit``: "Subtract one ... since we don't use the primary IP on
each ENI for pods").

ipamd stops adding ENIs once its datastore holds the node's max pods in pod addresses
(pkg/ipamd/ipamd.go v1.23.0 ``isDatastorePoolTooLow``: ``if stats.TotalIPs >= c.maxPods`` the
pool is not low; ``c.maxPods`` is the node's ``Status.Capacity.Pods``, the kubelet's max pods,
which EKS managed node groups cap at 110/250: ``GpuInstanceType.max_pods``). Below that it adds
one while fewer than one ENI's pod addresses are free. So a node whose pods use ``n`` addresses
holds ``min(ENIs, ceil(n / (per ENI - 1)) + 1, ceil(max pods / (per ENI - 1)))`` ENIs, and a
full node ``min(ENIs, ceil(max pods / (per ENI - 1)))`` (the last ENI added is the warm one).
"""

from __future__ import annotations

from math import ceil

from .instances import GPU_INSTANCE_TYPES, daemonset_pods

#: (ENIs, IPv4 addresses per ENI) of every GPU instance type the library accepts (the test checks
#: it has a row for each type in ``instances.GPU_INSTANCE_TYPES``).
GPU_ENIS: dict[str, tuple[int, int]] = {
    "g4dn.xlarge": (3, 10),
    "g4dn.2xlarge": (3, 10),
    "g4dn.4xlarge": (3, 10),
    "g4dn.8xlarge": (4, 15),
    "g4dn.16xlarge": (4, 15),
    "g4dn.12xlarge": (8, 30),
    "g4dn.metal": (15, 50),
    "g5.xlarge": (4, 15),
    "g5.2xlarge": (4, 15),
    "g5.4xlarge": (8, 30),
    "g5.8xlarge": (8, 30),
    "g5.16xlarge": (8, 30),
    "g5.12xlarge": (15, 50),
    "g5.24xlarge": (15, 50),
    "g5.48xlarge": (7, 50),
    "g5g.xlarge": (4, 15),
    "g5g.2xlarge": (4, 15),
    "g5g.4xlarge": (8, 30),
    "g5g.8xlarge": (8, 30),
    "g5g.16xlarge": (15, 50),
    "g5g.metal": (15, 50),
    "g6.xlarge": (4, 15),
    "g6.2xlarge": (4, 15),
    "g6.4xlarge": (8, 30),
    "g6.8xlarge": (8, 30),
    "g6.16xlarge": (15, 50),
    "g6.12xlarge": (8, 30),
    "g6.24xlarge": (15, 50),
    "g6.48xlarge": (15, 50),
    "gr6.4xlarge": (8, 30),
    "gr6.8xlarge": (8, 30),
    "g6e.xlarge": (4, 15),
    "g6e.2xlarge": (4, 15),
    "g6e.4xlarge": (8, 30),
    "g6e.8xlarge": (8, 30),
    "g6e.16xlarge": (15, 50),
    "g6e.12xlarge": (10, 30),
    "g6e.24xlarge": (10, 50),
    "g6e.48xlarge": (10, 50),
    "p4d.24xlarge": (15, 50),
    "p4de.24xlarge": (15, 50),
    "p5.4xlarge": (4, 30),
    "p5.48xlarge": (2, 50),
    "p5e.48xlarge": (2, 50),
    "p5en.48xlarge": (4, 50),
    "g6f.large": (2, 10),
    "g6f.xlarge": (4, 15),
    "g6f.2xlarge": (4, 15),
    "g6f.4xlarge": (8, 30),
    "gr6f.4xlarge": (8, 30),
}

#: (ENIs, IPv4 addresses per ENI) of the system-node types the library knows: the burstable types
#: and the sizes large to 4xlarge of the current general-purpose, compute and memory families,
#: whose sizes share one ENI layout.
_T_TYPES: dict[str, tuple[int, int]] = {
    **{f"{f}.{s}": (2, 2) for f in ("t2", "t3", "t3a", "t4g") for s in ("nano", "micro")},
    "t1.micro": (2, 2),
    "t3.small": (3, 4),
    "t3a.small": (2, 4),
    "t4g.small": (3, 4),
    **{f"{f}.medium": (3, 6) for f in ("t3", "t3a", "t4g")},
    **{f"{f}.large": (3, 12) for f in ("t3", "t3a", "t4g")},
    **{f"{f}.{s}": (4, 15) for f in ("t3", "t3a", "t4g") for s in ("xlarge", "2xlarge")},
}
_FAMILIES = ("m5", "m6i", "m6a", "m7i", "m7a", "m6g", "m7g", "m8g", "c5", "c6i", "c7i", "c6g", "c7g")
_FAMILIES += ("r5", "r6i", "r7i")
_SIZES = {"large": (3, 10), "xlarge": (4, 15), "2xlarge": (4, 15), "4xlarge": (8, 30)}
SYSTEM_ENIS: dict[str, tuple[int, int]] = {
    **_T_TYPES,
    **{f"{f}.{s}": layout for f in _FAMILIES for s, layout in _SIZES.items()},
}

#: The fewest addresses any instance type's node holds once it runs a pod: 2 ENIs of 2 addresses
#: (t3.micro and the other nano/micro types; the minimum over every row of instance-info.jsonl,
#: checked in tests/test_settings_rules.py). The subnet rule counts a system node of a type it
#: does not know at this, so it never refuses a network that is large enough, and warns where
#: the network may be too small.
MIN_NODE_ADDRESSES = 4
#: The most addresses two ENIs of any instance type hold: 2 x 64 (the largest
#: ``ipv4AddressesPerInterface`` in instance-info.jsonl, checked in the same test).
MAX_NODE_ADDRESSES = 128


def gpu_node_addresses(instance_type: str, enis_taken: int = 0) -> int:
    """Subnet addresses a full GPU node of ``instance_type`` holds: the ENIs ipamd attaches until
    its datastore holds max pods addresses, all of each (g4dn.xlarge 3 x 10 = 30; g5.4xlarge, max
    pods capped at 110, ceil(110 / 29) = 4 of its 8 ENIs, 4 x 30 = 120). ``enis_taken``: ENIs of
    the default card the node's launch layout takes from the VPC CNI (a Karpenter EFA node's
    efa-only interface on card 0: ``efa.KARPENTER_CARD0_EFA_ONLY``), which hold no address. A type
    added to ``instances`` without its row here counts at its max pods (a little less);
    tests/test_settings_rules.py fails until the row is added."""
    layout = GPU_ENIS.get(instance_type)
    max_pods = gpu_node_max_pods(instance_type, enis_taken)
    if layout is None:
        return max_pods
    enis, per_eni = layout
    return min(enis - enis_taken, ceil(max_pods / (per_eni - 1))) * per_eni


def gpu_node_max_pods(instance_type: str, enis_taken: int = 0) -> int:
    """The kubelet's max pods of a GPU node (``GpuInstanceType.max_pods``), lower where the node's
    layout takes ``enis_taken`` ENIs from the VPC CNI: its ENI number without them, (ENIs -
    taken) x (addresses per ENI - 1) + 2, as Karpenter counts it (instancetype/types.go
    ``ENILimitedPods``, v1.14.1); p5.48xlarge with an efa-only interface on card 0: 1 x 49 + 2 = 51."""
    max_pods = GPU_INSTANCE_TYPES[instance_type].max_pods
    layout = GPU_ENIS.get(instance_type)
    if not enis_taken or layout is None:
        return max_pods
    enis, per_eni = layout
    return min(max_pods, (enis - enis_taken) * (per_eni - 1) + 2)


def usable_pod_slots(
    instance_type: str, mps: bool = False, cloudwatch: bool = False, node_monitoring: bool = False, enis_taken: int = 0
) -> int:
    """Pods a GPU node of ``instance_type`` can run besides its DaemonSet pods (``daemonset_pods``):
    of its max pods, with ``enis_taken`` ENIs taken by its interfaces (``gpu_node_max_pods``)."""
    return gpu_node_max_pods(instance_type, enis_taken) - len(
        daemonset_pods(instance_type, mps, cloudwatch, node_monitoring)
    )


def system_node_addresses(instance_type: str, pods: int) -> int | None:
    """Subnet addresses a system node of ``instance_type`` holds with ``pods`` pod-address pods on
    it: the ENIs those pods use plus the warm one, at most its ENIs (m6i.large, 3 pods:
    2 x 10 = 20; t3.medium, 6 pods: ceil(6 / 5) + 1 = 3 ENIs, 3 x 6 = 18), or None for a type the
    library does not know. The max pods stop of ``isDatastorePoolTooLow`` never binds here: the
    ENIs a node needs for its few service pods hold fewer pod addresses than its max pods (the
    ENI number counts all its ENIs, plus 2; the EKS cap is 110 or 250)."""
    layout = SYSTEM_ENIS.get(instance_type)
    if layout is None:
        return None
    enis, per_eni = layout
    return min(enis, ceil(pods / (per_eni - 1)) + 1) * per_eni
