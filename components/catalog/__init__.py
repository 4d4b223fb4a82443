"""Facts about AWS and upstream software that the library builds on.

Each fact has exactly one home, here. Everything else (validation, node labels,
Helm values, preflight checks, documentation tables) reads these tables instead of
repeating the numbers. The GPU instance types and families live in ``instances`` and are
re-exported here: import ``from components import catalog`` and read ``catalog.X``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from .enis import (
    GPU_ENIS,
    MAX_NODE_ADDRESSES,
    MIN_NODE_ADDRESSES,
    SYSTEM_ENIS,
    gpu_node_addresses,
    gpu_node_max_pods,
    system_node_addresses,
    usable_pod_slots,
)
from .instances import (
    ACCELERATOR_LABEL_VALUES,
    CLOUDWATCH_DCGM_EXPORTER_ABSENT,
    CLOUDWATCH_DCGM_EXPORTER_POD,
    CLOUDWATCH_NODE_DAEMONSET_PODS,
    DRIVER_MEMORY_MIB,
    EXCLUDED_GPU_FAMILIES,
    FAMILIES,
    GPU_INSTANCE_TYPES,
    GPU_NODE_DAEMONSET_PODS,
    MANAGED_MAX_PODS_CAP,
    MANAGED_MAX_PODS_CAP_BELOW_30_VCPUS,
    MIG_MANAGER_POD,
    MPS,
    MPS_CONTROL_DAEMON_POD,
    NODE_DAEMONSET_PODS,
    TIME_SLICING,
    WHOLE_GPU_SHARING,
    GpuFamily,
    GpuInstanceType,
    daemonset_pods,
    interchangeable,
    managed_max_pods_cap,
    node_daemonset_pods,
)

__all__ = [
    "ACCELERATOR_LABEL_VALUES",
    "CLOUDWATCH_DCGM_EXPORTER_ABSENT",
    "CLOUDWATCH_DCGM_EXPORTER_POD",
    "CLOUDWATCH_NODE_DAEMONSET_PODS",
    "DRIVER_MEMORY_MIB",
    "EXCLUDED_GPU_FAMILIES",
    "FAMILIES",
    "GPU_ENIS",
    "GPU_INSTANCE_TYPES",
    "GPU_NODE_DAEMONSET_PODS",
    "MANAGED_MAX_PODS_CAP",
    "MANAGED_MAX_PODS_CAP_BELOW_30_VCPUS",
    "MAX_NODE_ADDRESSES",
    "MIG_MANAGER_POD",
    "MIN_NODE_ADDRESSES",
    "MPS",
    "MPS_CONTROL_DAEMON_POD",
    "NODE_DAEMONSET_PODS",
    "SYSTEM_ENIS",
    "TIME_SLICING",
    "WHOLE_GPU_SHARING",
    "GpuFamily",
    "GpuInstanceType",
    "daemonset_pods",
    "gpu_node_addresses",
    "gpu_node_max_pods",
    "interchangeable",
    "managed_max_pods_cap",
    "node_daemonset_pods",
    "system_node_addresses",
    "usable_pod_slots",
]

# ---------------------------------------------------------------------------------------------
# Instance types (the GPU ones: instances.py)
# ---------------------------------------------------------------------------------------------

#: EC2 Service Quotas codes (service ``ec2``) that bound vCPUs of G and VT instances.
VCPU_QUOTA_ON_DEMAND_G = "L-DB2E81BA"  # Running On-Demand G and VT instances
VCPU_QUOTA_SPOT_G = "L-3819A6DF"  # All G and VT Spot Instance Requests

# EC2 instance type names: family (letters, digits, optional attribute letters), a dot, a size.
INSTANCE_TYPE_PATTERN = re.compile(r"[a-z][a-z0-9-]*\.[a-z0-9-]+", re.ASCII)

#: Graviton (arm64) families: ``a1``, and every family whose generation digit is followed by the
#: processor attribute ``g`` (m6g, c7gn, r8gd, t4g, x2gd, im4gn, is4gen, g5g, hpc7g ...). EC2
#: instance type naming (EC2 User Guide, "Amazon EC2 instance type naming conventions": the ``g``
#: attribute means AWS Graviton processors). tests/test_settings_aws.py checks this rule against
#: every instance type in moto's copy of ``ec2:DescribeInstanceTypes``
#: (``ProcessorInfo.SupportedArchitectures``).
_ARM64_FAMILY = re.compile(r"a1|[a-z]+\d+g[a-z]*(-[a-z0-9]+)?", re.ASCII)
#: Accelerated families (GPU, Inferentia, Trainium, Gaudi): never cluster-service nodes. Checked
#: against ``GpuInfo`` / ``InferenceAcceleratorInfo`` / ``NeuronInfo`` in the same moto data.
ACCELERATED_FAMILY_PREFIXES = ("g", "p", "inf", "trn", "dl")


def instance_family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def instance_architecture(instance_type: str) -> str:
    """``arm64`` or ``x86_64`` (the EC2 ``ProcessorInfo.SupportedArchitectures`` of the type)."""
    return "arm64" if _ARM64_FAMILY.fullmatch(instance_family(instance_type)) else "x86_64"


def is_accelerated(instance_type: str) -> bool:
    return instance_family(instance_type).startswith(ACCELERATED_FAMILY_PREFIXES)


# ---------------------------------------------------------------------------------------------
# EKS node AMIs
# ---------------------------------------------------------------------------------------------

#: ``amiType`` of the EKS managed node groups. AL2023 NVIDIA ships the NVIDIA driver and the
#: NVIDIA container toolkit, and nodeadm makes ``nvidia`` containerd's default runtime.
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
#: The arm64 NVIDIA AMI (g5g): botocore 1.44.5 ``eks`` AMITypes; EKS user guide
#: "Use EKS-optimized accelerated AMIs for GPU instances" (AL2023 ARM NVIDIA serves g5g).
GPU_AMI_TYPE_ARM64 = "AL2023_ARM_64_NVIDIA"
GPU_AMI_TYPES = {"x86_64": GPU_AMI_TYPE, "arm64": GPU_AMI_TYPE_ARM64}
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
#: The system group's AMI type when its instance types are Graviton (arm64): EKS boots the AMI of
#: the node group's ``amiType``, so an arm64 type needs the arm64 AMI (botocore ``eks`` AMITypes).
SYSTEM_AMI_TYPE_ARM64 = "AL2023_ARM_64_STANDARD"
SYSTEM_AMI_TYPES = {"x86_64": SYSTEM_AMI_TYPE, "arm64": SYSTEM_AMI_TYPE_ARM64}

# A node's root volume and metadata options: in every launch template (blocks/managed.py, the
# system group's too) and every EC2NodeClass (plan/karpenter.py) alike.
#: AL2023 AMIs boot from /dev/xvda.
ROOT_DEVICE = "/dev/xvda"
#: IMDSv2 only. A hop limit of 1 keeps pods (one network hop further) away from the node's
#: instance-role credentials, as the EKS best-practices guide recommends; host-network pods
#: (VPC CNI, kube-proxy) are unaffected. Workloads get AWS access through IRSA / Pod Identity.
IMDS_HOP_LIMIT = 1

#: SSM parameters that publish the recommended AMI per Kubernetes version, keyed by amiType.
_AMI_SSM = "/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/"
AMI_SSM_PARAMETER = {
    GPU_AMI_TYPE: _AMI_SSM + "x86_64/nvidia/recommended/image_id",
    # EKS user guide, "Retrieve recommended Amazon Linux AMI IDs": amazon-linux-2023/arm64/nvidia.
    GPU_AMI_TYPE_ARM64: _AMI_SSM + "arm64/nvidia/recommended/image_id",
    SYSTEM_AMI_TYPE: _AMI_SSM + "x86_64/standard/recommended/image_id",
    SYSTEM_AMI_TYPE_ARM64: _AMI_SSM + "arm64/standard/recommended/image_id",
}

#: EKS AMI release versions (``releaseVersion`` of a node group): ``<kubernetes x.y.z>-<yyyymmdd>``,
#: e.g. ``1.35.0-20260115`` (EKS user guide, "Amazon EKS optimized Amazon Linux AMI versions";
#: awslabs/amazon-eks-ami CHANGELOG release tags ``v20260115`` carry ``1.35.0-20260115``).
AMI_RELEASE_VERSION_PATTERN = re.compile(r"1\.(\d+)\.(\d+)-(\d{8})", re.ASCII)

# ---------------------------------------------------------------------------------------------
# Kubernetes versions on EKS
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubernetesVersion:
    """An EKS Kubernetes minor version and its support calendar (EKS user guide,
    "Understand the Kubernetes version lifecycle on EKS": 14 months standard support,
    then 12 months of paid extended support)."""

    version: str
    released: dt.date
    end_of_standard_support: dt.date
    end_of_extended_support: dt.date

    def status(self, today: dt.date) -> str:
        if today <= self.end_of_standard_support:
            return "STANDARD_SUPPORT"
        if today <= self.end_of_extended_support:
            return "EXTENDED_SUPPORT"
        return "UNSUPPORTED"


KUBERNETES_VERSIONS: dict[str, KubernetesVersion] = {
    v.version: v
    for v in (
        KubernetesVersion("1.30", dt.date(2024, 5, 23), dt.date(2025, 7, 23), dt.date(2026, 7, 23)),
        KubernetesVersion("1.31", dt.date(2024, 9, 26), dt.date(2025, 11, 26), dt.date(2026, 11, 26)),
        KubernetesVersion("1.32", dt.date(2025, 1, 23), dt.date(2026, 3, 23), dt.date(2027, 3, 23)),
        KubernetesVersion("1.33", dt.date(2025, 5, 29), dt.date(2026, 7, 29), dt.date(2027, 7, 29)),
        KubernetesVersion("1.34", dt.date(2025, 10, 2), dt.date(2026, 12, 2), dt.date(2027, 12, 2)),
        KubernetesVersion("1.35", dt.date(2026, 1, 27), dt.date(2027, 3, 27), dt.date(2028, 3, 27)),
        KubernetesVersion("1.36", dt.date(2026, 6, 2), dt.date(2027, 8, 2), dt.date(2028, 8, 2)),
    )
}

#: Default Kubernetes version: in EKS standard support until 2027-03-27, the version the chart
#: versions in catalog/gpu_operator.py were validated with. Stacks pin their own version explicitly; this
#: default serves importers. 1.36 is accepted.
DEFAULT_KUBERNETES_VERSION = "1.35"
KUBERNETES_VERSION_PATTERN = re.compile(r"1\.(\d{2})", re.ASCII)

#: EKS cluster price per hour (EKS pricing page, "Amazon EKS pricing"; AWS Containers blog, "Amazon
#: EKS extended support for Kubernetes versions pricing", 2024: "$0.60 per cluster per hour" in
#: extended support, "$0.10 per cluster per hour" in standard support).
EKS_STANDARD_SUPPORT_USD_PER_HOUR = 0.10
EKS_EXTENDED_SUPPORT_USD_PER_HOUR = 0.60


def today() -> dt.date:
    """The date versions are judged against: the one clock of the library (tests replace it)."""
    return dt.date.today()


# ---------------------------------------------------------------------------------------------
# vCPU quotas (appended for preflight)
# ---------------------------------------------------------------------------------------------

#: Instance families counted by the two G and VT vCPU quotas above: every family whose name
#: starts with "g" (g4dn, g5, g6, gr6, ...) or "vt" (vt1).
VCPU_QUOTA_G_FAMILY_PREFIXES = ("g", "vt")

# ---------------------------------------------------------------------------------------------
# Small system instance types (appended for the scheduling rules)
# ---------------------------------------------------------------------------------------------

#: kubelet ``maxPods`` of the instance types whose nodes run at most 4 pods with the VPC CNI
#: defaults (awslabs/amazon-eks-ami eni-max-pods.txt / nodeadm instance-info.jsonl: 1 or 2 ENIs
#: of 2 addresses). Two of the 4 are the host-network DaemonSets every node runs (aws-node,
#: kube-proxy), which leaves 2 per node for the cluster services. Every other type runs at least
#: 8 (tests/test_settings_rules.py checks this table against the reference file). The system group
#: is an EKS managed node group too, but its cap (``managed_max_pods_cap``: 110 or 250) only lowers
#: types of more than 110 pods, so it changes nothing here.
SMALL_MAX_PODS: dict[str, int] = {
    t: 4
    for t in (
        "t1.micro",
        "t2.nano",
        "t2.micro",
        "t3.nano",
        "t3.micro",
        "t3a.nano",
        "t3a.micro",
        "t4g.nano",
        "t4g.micro",
    )
}
