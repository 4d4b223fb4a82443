"""EFA (Elastic Fabric Adapter) facts of the catalogued GPU instance types, and the network
interfaces a launch template gives an EFA node.

Counts: ``ec2:DescribeInstanceTypes`` ``NetworkInfo`` (``EfaSupported``,
``EfaInfo.MaximumEfaInterfaces``, ``MaximumNetworkCards``) as botocore 1.44.5 / moto 5.2.5 record
it (``moto/ec2/resources/instance_types.json.gz``); tests/test_multinode_settings.py checks every row against
that file, and that every catalogued type missing here has ``EfaSupported: false``.

Interface layout: the Amazon EC2 User Guide, "Elastic Fabric Adapter" (efa.html, "EFA and
EFA-only interfaces"; efa-acc-inst-types.html "Maximize network bandwidth ... multiple network
cards"; efa-start-nccl.html, launching p5.48xlarge): one EFA device per network card; the
primary interface (network card 0, device index 0) is ``efa`` (EFA with ENA: it carries the
node's IP traffic, the VPC CNI's pods included), every other card gets one ``efa-only``
interface at device index 1 (no IP address: RDMA only, so it takes no subnet address). The
instance's ENA interfaces on card 0 beyond the primary are the VPC CNI's to attach, as without
EFA. EC2 refuses an instance whose EFA interfaces exceed ``MaximumEfaInterfaces``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The extended resource the AWS EFA Kubernetes device plugin advertises: one per EFA device
#: (aws/eks-charts stable/aws-efa-k8s-device-plugin README, "vpc.amazonaws.com/efa").
EFA_RESOURCE = "vpc.amazonaws.com/efa"

#: The primary interface's type and the other cards' (botocore ``ec2`` 2016-11-15
#: LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.InterfaceType: "efa" or "efa-only").
EFA = "efa"
EFA_ONLY = "efa-only"


@dataclass(frozen=True)
class EfaFacts:
    """What EC2 reports about one instance type's EFA."""

    #: ``EfaInfo.MaximumEfaInterfaces``.
    max_efa_interfaces: int
    #: ``MaximumNetworkCards``.
    network_cards: int
    #: The instance's network bandwidth in Gbit/s (``NetworkPerformance``: "3200 Gigabit", "4x 100
    #: Gigabit"), which its EFA devices share.
    network_gbps: int


#: The catalogued GPU types with ``EfaSupported: true``. A type not here has no EFA.
EFA_TYPES: dict[str, EfaFacts] = {
    "g4dn.8xlarge": EfaFacts(1, 1, 50),
    "g4dn.12xlarge": EfaFacts(1, 1, 50),
    "g4dn.16xlarge": EfaFacts(1, 1, 50),
    "g4dn.metal": EfaFacts(1, 1, 100),
    "g5.8xlarge": EfaFacts(1, 1, 25),
    "g5.12xlarge": EfaFacts(1, 1, 40),
    "g5.16xlarge": EfaFacts(1, 1, 25),
    "g5.24xlarge": EfaFacts(1, 1, 50),
    "g5.48xlarge": EfaFacts(1, 1, 100),
    "g6.8xlarge": EfaFacts(1, 1, 25),
    "g6.12xlarge": EfaFacts(1, 1, 40),
    "g6.16xlarge": EfaFacts(1, 1, 25),
    "g6.24xlarge": EfaFacts(1, 1, 50),
    "g6.48xlarge": EfaFacts(1, 1, 100),
    "gr6.8xlarge": EfaFacts(1, 1, 25),
    "g6e.8xlarge": EfaFacts(1, 1, 25),
    "g6e.12xlarge": EfaFacts(1, 1, 100),
    "g6e.16xlarge": EfaFacts(1, 1, 35),
    "g6e.24xlarge": EfaFacts(2, 2, 200),
    "g6e.48xlarge": EfaFacts(4, 4, 400),
    "p4d.24xlarge": EfaFacts(4, 4, 400),
    "p4de.24xlarge": EfaFacts(4, 4, 400),
    "p5.4xlarge": EfaFacts(1, 1, 100),
    "p5.48xlarge": EfaFacts(32, 32, 3200),
    "p5e.48xlarge": EfaFacts(32, 32, 3200),
    "p5en.48xlarge": EfaFacts(16, 16, 3200),
}


@dataclass(frozen=True)
class EfaInterface:
    """One network interface of an EFA node's launch template."""

    network_card_index: int
    device_index: int
    interface_type: str


def efa_devices(instance_type: str) -> int:
    """EFA devices a node of ``instance_type`` gets (one per network card, at most EC2's maximum);
    0 without EFA."""
    facts = EFA_TYPES.get(instance_type)
    return min(facts.max_efa_interfaces, facts.network_cards) if facts else 0


def efa_interfaces(instance_type: str) -> tuple[EfaInterface, ...]:
    """The launch template's interfaces of an EFA node (see the module docstring): card 0 device 0
    ``efa``, every other card device 1 ``efa-only``."""
    return tuple(
        EfaInterface(card, 0, EFA) if card == 0 else EfaInterface(card, 1, EFA_ONLY)
        for card in range(efa_devices(instance_type))
    )


#: Karpenter's EC2NodeClass ``spec.networkInterfaces`` interface types (Karpenter 1.14.1 CRD
#: karpenter.k8s.aws_ec2nodeclasses.yaml: enum ``interface``, ``efa-only``).
INTERFACE = "interface"
#: The ENIs of card 0 (the VPC CNI's: it attaches pod ENIs on the default card only) an efa-only
#: interface there takes from the CNI: "EFA-only interfaces consume an ENI and don't support IP
#: networking" (aws/karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go
#: ``ENILimitedPods``, which counts the NodeClass's efa-only interfaces on card 0).
KARPENTER_CARD0_EFA_ONLY = 1


def karpenter_interfaces(instance_type: str) -> tuple[EfaInterface, ...]:
    """An EFA node's ``spec.networkInterfaces`` in a Karpenter group (issue 41): the primary
    ``interface`` at card 0 device 0 (the CRD's rule: "networkInterfaces must include a primary
    interface with interfaceType='interface'"), then one ``efa-only`` interface per card, device 1
    (card 0 beside the primary, as Karpenter's own example, website/content/en/docs/concepts/
    nodeclasses.md "spec.networkInterfaces" at v1.14.1; the other cards at device 1 as EC2's layout
    above). The EFA count Karpenter then advertises is the number of efa-only interfaces
    (instancetype/types.go ``efas``): every device of the type, as the managed layout. efa-only
    interfaces have no IP address, so they take no subnet address."""
    return (
        EfaInterface(0, 0, INTERFACE),
        *(EfaInterface(card, 1, EFA_ONLY) for card in range(efa_devices(instance_type))),
    )


#: The 2 MiB huge pages of an EFA node: "Amazon EC2 instances with the EFA driver installed
#: pre-allocate 5128 2MiB Huge Pages, which you can request as resources" (EKS User Guide, node-efa,
#: awsdocs/amazon-eks-user-guide 4d52b4d). The EFA provider of libfabric backs its internal buffers
#: with them unless ``FI_EFA_USE_HUGE_PAGE=0`` (libfabric fi_efa(7)); a pod without a huge-page
#: request has a hugetlb limit of 0 in its cgroup, where touching such a page fails.
HUGEPAGES_RESOURCE = "hugepages-2Mi"
HUGEPAGES_2MI_PER_NODE = 5128
#: What AWS's two-node NCCL test in the same guide requests per worker: ``hugepages-2Mi: 5120Mi``.
HUGEPAGES_REQUEST = "5120Mi"


#: The share of a type's network bandwidth a two-node NCCL all-reduce must reach as bus bandwidth
#: (verification/nccl.py). nccl-tests' bus bandwidth is "the hardware bandwidth" the algorithm
#: needs, comparable across rank counts (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth");
#: across two nodes it is bounded by each node's network (its EFA devices). Half of it leaves room
#: for message sizes, contention and the library's 1 GiB message (below the sizes where NCCL peaks)
#: while a fallback to TCP sockets over the primary ENA (one interface, at most a card's share and a
#: few TCP streams) stays far below it on the p families.
NCCL_FLOOR_SHARE = 0.5


def nccl_bus_bandwidth_floor_gbytes(instance_type: str) -> float:
    """The bus bandwidth floor (GB/s) of the NCCL check on ``instance_type`` (an EFA type)."""
    return EFA_TYPES[instance_type].network_gbps / 8 * NCCL_FLOOR_SHARE


# ---------------------------------------------------------------------------------------------
# The EFA device plugin's chart and the AMI
# ---------------------------------------------------------------------------------------------
#
# The AWS EFA Kubernetes device plugin's chart (pinned in ``charts.EFA_DEVICE_PLUGIN``). What the
# library relies on there (tests/test_efa_plugin.py states each as a literal):
#
# * ``templates/daemonset.yaml``: one DaemonSet (``hostNetwork``, privileged, ``system-node-critical``,
#   tolerates ``CriticalAddonsOnly`` plus ``.Values.tolerations``), with a required node affinity built
#   from ``supportedInstanceLabels``: one term per key, ``<key> In <values>``, the last term also
#   ``eks.amazonaws.com/compute-type NotIn [auto]``. ``nodeSelector`` is added as given.
# * ``values.yaml``: ``supportedInstanceLabels.keys: [node.kubernetes.io/instance-type]`` and the EFA
#   instance types as values (every EFA type of our catalog is among them), ``tolerations: []``,
#   ``nodeSelector: {}``; the image ``602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin``
#   (``image.repository``; ``image.tag`` v0.5.20), one Region's registry: the library points it at
#   the cluster's Region's where the table below names it (``image_values``).
# * The plugin advertises ``vpc.amazonaws.com/efa``, one per EFA device under ``/dev/infiniband``.
#
# The AMI (awslabs/amazon-eks-ami v20260724): ``templates/al2023/variables-default.json`` sets
# ``enable_efa: "true"`` for every AL2023 build, NVIDIA included; ``templates/al2023/provisioners/
# install-efa.sh`` then installs the EFA software with ``efa_installer.sh --minimal`` (the ``efa`` kernel
# module and rdma-core: no libfabric, no Open MPI, so NCCL's libfabric and aws-ofi-nccl plugin come with
# the workload's image) and keeps ``efa-nv-peermem`` on the NVIDIA AMI (GPUDirect RDMA between the GPUs
# and EFA; it erases it only where ``ENABLE_ACCELERATOR`` is not ``nvidia``); ``limit-c-states.sh`` sets
# ``intel_idle.max_cstate=1 processor.max_cstate=1``. So an EFA node needs nothing in its user data:
# the library adds none (tests/test_efa_plugin.py checks an EFA group's user data is the same group's
# without EFA).

#: The chart's image, under each Region's Amazon EKS registry (the chart's default is us-west-2's).
IMAGE_PATH = "eks/aws-efa-k8s-device-plugin"
#: Amazon EKS's container image registry account per Region: "Amazon EKS replicates the images to a
#: repository in each Amazon EKS supported AWS Region. Your nodes can pull the container image over
#: the internet from any of the following registries. Alternatively, your nodes can pull the image
#: over Amazon's network if you created an interface VPC endpoint for Amazon ECR" (EKS User Guide,
#: add-ons-images, docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html). The chart's default,
#: us-west-2's registry, is reached from another Region only over the internet: a private cluster (no
#: NAT, ECR endpoints of its own Region) cannot pull it.
#:
#: The table is AWS's own machine-readable copy of that page: awslabs/amazon-eks-ami
#: ``templates/al2/runtime/get-ecr-uri.sh`` at v20260304 (its last tag before AL2's removal, b2289030),
#: which names every commercial Region of 602401143452 (``SHARED_ACCOUNT_REGIONS``) and every other
#: Region's account, the GovCloud and China Regions' included (the ISO partitions left out: EKS's
#: botocore endpoint data has none of them). It adds, to the User Guide of Dec 2024 (4d52b4d),
#: ap-east-2, ap-southeast-5, ap-southeast-6, ap-southeast-7 and mx-central-1; the current page's
#: rows read for them agree (ap-east-2, ap-southeast-5, -6, -7; its ap-east-2 row names the ap-east-1
#: host, a typo the script does not have).
#: tests/test_efa_plugin.py checks every Region botocore's ``eks`` endpoint data lists is in one of
#: the two. A Region in neither gets no account guessed: ``image_repository`` answers None, and the
#: plugin keeps the chart's default image (``efa/component.py`` warns).
SHARED_ACCOUNT = "602401143452"
SHARED_ACCOUNT_REGIONS: frozenset[str] = frozenset(
    {
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "ca-central-1",
        "eu-central-1",
        "eu-north-1",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
REGISTRY_ACCOUNTS: dict[str, str] = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-east-2": "533267051163",
    "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "ap-southeast-5": "151610086707",
    "ap-southeast-6": "333609536671",
    "ap-southeast-7": "121268973566",
    "ca-west-1": "761377655185",
    "cn-north-1": "918309763551",
    "cn-northwest-1": "961992271922",
    "eu-central-2": "900612956339",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "il-central-1": "066635153087",
    "me-central-1": "759879836304",
    "me-south-1": "558608220178",
    "mx-central-1": "730335286997",
    "us-gov-east-1": "151742754352",
    "us-gov-west-1": "013241004608",
}


def image_repository(region: str) -> str | None:
    """The plugin image's repository in ``region``'s Amazon EKS registry (``.amazonaws.com.cn`` in
    the China Regions, as the table writes them); None for a Region the table does not name."""
    account = SHARED_ACCOUNT if region in SHARED_ACCOUNT_REGIONS else REGISTRY_ACCOUNTS.get(region)
    if account is None:
        return None
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{domain}/{IMAGE_PATH}"


def image_values(region: str) -> dict[str, str]:
    """The chart's ``image`` values in ``region``: its registry's repository, or nothing (the chart's
    default image, us-west-2's, pulled over the internet) where the table names no registry."""
    repository = image_repository(region)
    return {"repository": repository} if repository else {}


def unknown_region_warning(region: str) -> str:
    """What a deployment in a Region the table does not name is told."""
    return (
        f"the EFA device plugin keeps its chart's default image in {region}: no Amazon EKS registry "
        f"is known for {region} (components/catalog/efa.py), so its nodes pull "
        f"{SHARED_ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/{IMAGE_PATH} over the internet (a NAT "
        "gateway or proxy), which a private cluster without one cannot do"
    )
