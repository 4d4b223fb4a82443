"""The inputs of the gpu-eks component package: one TypedDict per settings model, named after it (the
schema's type names), with the model's fields as keys.

Python names are chosen so that the schema name (camelCase of the Python name, the analyzer's rule)
is the config key: ``disk_size_gi_b`` → ``diskSizeGiB``. No ``from __future__ import annotations``:
the analyzer evaluates these annotations at run time.
"""

from typing import Required, TypedDict

import pulumi


class Scaling(TypedDict):
    """EKS `scalingConfig` of a managed node group (minSize <= desiredSize <= maxSize)."""

    min_size: int
    """Minimum number of nodes (>= 0)."""
    desired_size: int
    """Desired number of nodes (>= 0)."""
    max_size: int
    """Maximum number of nodes (>= 1)."""


class TaintSpec(TypedDict, total=False):
    """A node taint, applied by kubelet (`--register-with-taints`) through nodeadm."""

    key: Required[str]
    """Taint key (a Kubernetes qualified name)."""
    value: str
    """Taint value (a label value; default empty)."""
    effect: Required[str]
    """NoSchedule, PreferNoSchedule or NoExecute."""


class TimeSlicing(TypedDict, total=False):
    """One device-plugin sharing profile (k8s-device-plugin `sharing.timeSlicing`)."""

    replicas: int
    """How many pods share one physical GPU (default 4)."""
    rename_by_default: bool
    """Advertise nvidia.com/gpu.shared instead of nvidia.com/gpu (default false)."""
    fail_requests_greater_than_one: bool
    """Refuse pods that request more than one replica (default true)."""
    profile: str
    """Profile name: ConfigMap key and value of the node label nvidia.com/device-plugin.config."""


class GpuNodeGroupSettings(TypedDict, total=False):
    """One EKS managed node group on the AL2023 NVIDIA AMI."""

    name: Required[str]
    """Node group name (1-40 lower-case alphanumerics or '-')."""
    instance_types: list[str]
    """g4dn sizes with the same GPU count (default [g4dn.xlarge])."""
    capacity_type: str
    """ON_DEMAND (default) or SPOT."""
    scaling: Scaling
    """Node counts (default 1/1/2)."""
    disk_size_gi_b: int
    """Root volume size in GiB (default 100)."""
    labels: dict[str, str]
    """Extra node labels, applied by kubelet through nodeadm."""
    taints: list[TaintSpec]
    """Node taints; replaces the default nvidia.com/gpu=true:NoSchedule."""
    time_slicing: TimeSlicing
    """GPU time-slicing profile of this group."""
    mig_strategy: str
    """k8s-device-plugin migStrategy: only none (the T4 has no MIG)."""
    ami_release_version: str
    """Pin the EKS AMI release (e.g. 1.35.0-20260115); default: EKS's latest for the version."""


class SystemNodeGroupSettings(TypedDict, total=False):
    """The untainted node group for cluster services (CoreDNS, gpu-operator, NFD master/gc)."""

    instance_types: list[str]
    """EC2 instance types (default [m6i.large])."""
    scaling: Scaling
    """Node counts (default 2/2/3)."""
    disk_size_gi_b: int
    """Root volume size in GiB (default 50)."""
    ami_release_version: str
    """Pin the EKS AMI release; default: EKS's latest for the version."""


class NetworkSettings(TypedDict, total=False):
    """Use an existing VPC (vpcId + subnets) or create one (the other keys)."""

    # The ids of an existing VPC may come from other resources (Outputs); every other input is
    # plain, since it decides which resources exist.

    vpc_id: pulumi.Input[str]
    """An existing VPC; then privateSubnetIds names at least 2 subnets."""
    private_subnet_ids: pulumi.Input[list[pulumi.Input[str]]]
    """Private subnets of the existing VPC (nodes and the control plane's interfaces)."""
    public_subnet_ids: pulumi.Input[list[pulumi.Input[str]]]
    """Public subnets of the existing VPC (public load balancers)."""
    cidr_block: str
    """CIDR of a new VPC (default 10.0.0.0/16)."""
    availability_zone_count: int
    """Zones of a new VPC, 2-6 (default 2)."""
    nat_gateways: str
    """NAT gateways of a new VPC: Single (default) or OnePerAz."""


class GpuOperatorSettings(TypedDict, total=False):
    """The NVIDIA gpu-operator Helm release."""

    allow_unvalidated_chart_version: bool
    """Allow a chart version this library was not validated against (default false)."""
    chart_version: str
    """gpu-operator chart version, one of the validated versions (see the README)."""
    namespace: str
    """Namespace of the release (default gpu-operator)."""
    cdi_enabled: bool
    """Chart value cdi.enabled (default false: the AMI's NVIDIA runtime injects devices)."""


class VerificationSettings(TypedDict, total=False):
    """The time-slicing verification Jobs (verifyTimeSlicing: true)."""

    image: str
    """CUDA sample image the verification pods run."""
    namespace: str
    """Namespace of the verification (default gpu-timeslicing-check)."""


class AutoscalerSettings(TypedDict, total=False):
    """The Cluster Autoscaler that scales the GPU node groups (from zero too)."""

    enabled: bool
    """Install it (default: when any GPU group's minSize < maxSize)."""
    allow_unvalidated_chart_version: bool
    """Allow a cluster-autoscaler chart version this library was not validated against (default false)."""
    chart_version: str
    """cluster-autoscaler chart version, one of the validated versions (see the README)."""
    scale_down_unneeded_time: str
    """How long a node may sit unneeded before it is removed, e.g. 10m (default 10m)."""


class GpuClusterInputs(TypedDict, total=False):
    """The inputs of GpuCluster: the stack config keys (``gpu-eks:<key>``), same names and shapes."""

    cluster_name: Required[str]
    """EKS cluster name."""
    kubernetes_version: str
    """Kubernetes minor version, e.g. "1.35" (a string)."""
    admin_principal_arns: list[str]
    """IAM roles/users given cluster-admin through EKS access entries."""
    endpoint_public_access_cidrs: list[str]
    """CIDRs allowed to reach the public API endpoint; empty: no public endpoint."""
    control_plane_log_types: list[str]
    """EKS control-plane logs: api, audit, authenticator, controllerManager, scheduler (default all)."""
    deletion_protection: bool
    """EKS deletion protection plus Pulumi protect (default false)."""
    network: NetworkSettings
    """The VPC: an existing one or a new one."""
    system_node_group: SystemNodeGroupSettings
    """The untainted node group for cluster services."""
    gpu_node_groups: list[GpuNodeGroupSettings]
    """GPU node groups (default one g4dn.xlarge group named gpu)."""
    gpu_operator: GpuOperatorSettings
    """The gpu-operator Helm release."""
    autoscaler: AutoscalerSettings
    """The Cluster Autoscaler."""
    verify_time_slicing: bool
    """Run the time-slicing verification Jobs (default false)."""
    verification: VerificationSettings
    """Settings of the verification Jobs."""
    preflight: bool
    """Run the read-only account checks before declaring resources (default false)."""
    tags: dict[str, str]
    """AWS tags for every taggable resource."""
