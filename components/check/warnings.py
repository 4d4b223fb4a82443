"""Warnings: legal settings that are risky. The program logs them, render prints them; they never stop
a deployment.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

from .. import catalog
from ..catalog import gpu_operator, node_health
from ..catalog.storage import INSTANCE_IO
from ..config.coldstart import (
    FAST_IMAGE_PULL_MIN_MEMORY_GIB,
    FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS,
    FAST_IMAGE_PULL_MIN_VCPUS,
    SOCI_ON_LOCAL_STORAGE_MIN_AMI_RELEASE,
    soci_store_on_root_volume,
)
from ..config.errors import CONFIG_NAMESPACE, Problem
from ..config.network import EKS_ADDRESSES_PER_SUBNET
from ..config.verification import NEW_ENABLED_KEY, OLD_ENABLED_KEY
from ..plan import asg
from . import teams
from .groups import capacity_message
from .settings import GpuCapacitySettings, Settings

#: A rule returns one Problem per risky value it finds (same key/received/expected form as errors).
#: Rules take the GPU keys (``GpuCapacitySettings``, which ``Settings`` extends): ``GpuCapacity``
#: logs the same warnings as ``GpuCluster``; a rule about a cluster-only key checks for ``Settings``.
WarningRule = Callable[[GpuCapacitySettings], Iterable[Problem]]
_WARNING_RULES: list[WarningRule] = []


def warning_rule(rule: WarningRule) -> WarningRule:
    """Register ``rule`` (a decorator): every rule runs in ``settings_warnings``."""
    _WARNING_RULES.append(rule)
    return rule


def settings_warnings(settings: GpuCapacitySettings) -> list[Problem]:
    """Every warning about ``settings``, in rule order. Warnings never stop a deployment."""
    return [problem for rule in _WARNING_RULES for problem in rule(settings)]


@warning_rule
def _old_enabled_key(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # verifyTimeSlicing still works until 1.0 (config/verification.py OldEnabledKey); it says so.
    old = settings.old_verify_time_slicing
    if old is not None:
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:{OLD_ENABLED_KEY}",
            received=old,
            expected=f"its new name, {NEW_ENABLED_KEY} ({str(old).lower()}): {OLD_ENABLED_KEY} is read until 1.0 "
            "(UPGRADING.md)",
        )


@warning_rule
def _advertised_slots_exceed_pod_capacity(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # Shares the node cannot run pods for are advertised but never usable (the scheduler sees
    # free nvidia.com/gpu and still cannot place the pod: "Too many pods"). With the
    # verification on, Settings reports this as an error instead.
    if settings.verification.enabled:
        return
    for i, p in enumerate(settings.plans):
        if p.slots_per_node > p.usable_pod_slots:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].{p.sharing_key}.replicas",
                received=p.replicas_setting,
                expected=capacity_message(p, "at most"),
            )


@warning_rule
def _autoscaled_group_not_smallest_first(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # Cluster Autoscaler (cloudprovider/aws, cluster-autoscaler-1.35.2) builds a group's template
    # node from the first type of its mixed instances policy (aws_wrapper.go getInstanceTypesForAsgs)
    # and its README ("Using Mixed Instances Policies and Spot Instances") asks for types of the same
    # CPU and RAM. When the first type is not the smallest, the ASG's resources/cpu and
    # resources/memory tags size that template down to the smallest (plan/asg.py
    # smallest_size_tags), so scale-from-zero stays safe but never serves a pod that needs more.
    if not settings.autoscaler_enabled:
        return
    for i, p in enumerate(settings.plans):
        # A Karpenter group has no ASG: Karpenter sizes each node from its own instance types.
        if asg.CPU_TAG not in p.node_template_tags or not p.provider.auto_scaling_group:
            continue
        rows = [catalog.GPU_INSTANCE_TYPES[t] for t in p.instance_types]
        sizes = ", ".join(f"{r.name}={r.vcpus} vCPUs {r.memory_mib} MiB" for r in rows)
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].instanceTypes",
            received=list(p.instance_types),
            expected="the smallest type first, or one size per group, while the Cluster Autoscaler is enabled (its "
            f"AWS README, 'Using Mixed Instances Policies and Spot Instances': the same CPU and RAM), got {sizes}: "
            f"CA builds the group's template node from the first type, which the ASG tags size down to "
            f"{min(r.vcpus for r in rows)} vCPUs and {min(r.memory_mib for r in rows)} MiB (EC2 may launch the "
            "smallest), so from zero nodes a pod that fits only a larger size never scales the group up",
        )


@warning_rule
def _groups_nobody_scales(settings: GpuCapacitySettings) -> Iterable[Problem]:
    """Without the Cluster Autoscaler nothing changes a node group's size after creation
    (desiredSize is in ignore_changes), so minSize < maxSize is unused capacity on paper and a
    group created at desiredSize 0 never gets a node. On an existing cluster (GpuCapacity) the
    cluster's own autoscaler may do it: EKS tags managed node groups' ASGs for CA auto-discovery."""
    if settings.autoscaler_enabled:
        return
    own = "" if isinstance(settings, Settings) else " (unless the existing cluster runs its own Cluster Autoscaler)"
    for i, g in enumerate(settings.gpu_node_groups):
        if not g.provider.auto_scaling_group:
            continue  # Karpenter launches and removes its nodes itself
        if g.scaling.min_size < g.scaling.max_size or g.scaling.desired_size == 0:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].scaling",
                received=g.scaling.model_dump(by_alias=True),
                expected="autoscaler.enabled: true, or minSize = desiredSize = maxSize > 0: with the "
                f"Cluster Autoscaler disabled nothing resizes the group after creation{own}",
            )


@warning_rule
def _public_endpoint_open_to_all(settings: GpuCapacitySettings) -> Iterable[Problem]:
    if not isinstance(settings, Settings):
        return
    # Legal for EKS (botocore eks VpcConfigRequest.publicAccessCidrs: "The default value is
    # 0.0.0.0/0"), but it opens the Kubernetes API endpoint to the whole internet.
    for i, cidr in enumerate(settings.endpoint_public_access_cidrs):
        if ipaddress.ip_network(cidr).prefixlen == 0:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:endpointPublicAccessCidrs[{i}]",
                received=cidr,
                expected="your egress CIDRs: 0.0.0.0/0 opens the cluster's API endpoint to the whole internet "
                "(only IAM authentication stands in the way); an empty list makes the endpoint private",
            )


@warning_rule
def _kubernetes_version_in_extended_support(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # EKS user guide, "Understand the Kubernetes version lifecycle on EKS": extended support is
    # billed; EKS pricing: $0.60 per cluster-hour instead of $0.10 in standard support.
    calendar = catalog.KUBERNETES_VERSIONS.get(settings.kubernetes_version)
    if calendar and calendar.status(catalog.today()) == "EXTENDED_SUPPORT":
        extra = catalog.EKS_EXTENDED_SUPPORT_USD_PER_HOUR - catalog.EKS_STANDARD_SUPPORT_USD_PER_HOUR
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:kubernetesVersion",
            received=settings.kubernetes_version,
            expected=(
                f"a version in standard support: {settings.kubernetes_version} is in EKS extended support until "
                f"{calendar.end_of_extended_support}, billed ${catalog.EKS_EXTENDED_SUPPORT_USD_PER_HOUR:.2f} "
                f"per cluster-hour instead of ${catalog.EKS_STANDARD_SUPPORT_USD_PER_HOUR:.2f} "
                f"(${extra:.2f}/h, about ${extra * 730:.0f} a month more); after that date EKS upgrades the "
                "control plane itself"
            ),
        )


@warning_rule
def _kubernetes_version_past_extended_support(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # EKS user guide, "Understand the Kubernetes version lifecycle on EKS": "If you haven't updated
    # your cluster before the extended support period ends, your cluster is auto-upgraded to the
    # oldest currently supported extended version"; EKS creates new clusters only at versions in
    # standard or extended support (preflight fails a new one). "Update existing cluster to new
    # Kubernetes version": one minor version per update. A warning, never an error: the stack
    # rendered yesterday, and the pull request that moves it off the version must render too.
    today = catalog.today()
    calendar = catalog.KUBERNETES_VERSIONS.get(settings.kubernetes_version)
    if calendar is None or calendar.status(today) != "UNSUPPORTED":
        return
    later = sorted((v for v in catalog.KUBERNETES_VERSIONS.values() if _minor(v) > _minor(calendar)), key=_minor)
    oldest_extended = next((v.version for v in later if v.status(today) == "EXTENDED_SUPPORT"), None)
    path: list[str] = []
    for v in later:
        path.append(v.version)
        if v.status(today) == "STANDARD_SUPPORT":
            path[-1] += f" (standard support until {v.end_of_standard_support})"
            break
    extra = catalog.EKS_EXTENDED_SUPPORT_USD_PER_HOUR - catalog.EKS_STANDARD_SUPPORT_USD_PER_HOUR
    upgraded = (
        f"upgrades an existing one itself to {oldest_extended}, the oldest version in extended support, still billed "
        f"${catalog.EKS_EXTENDED_SUPPORT_USD_PER_HOUR:.2f} per cluster-hour instead of "
        f"${catalog.EKS_STANDARD_SUPPORT_USD_PER_HOUR:.2f} (about ${extra * 730:.0f} a month more)"
        if oldest_extended
        else "upgrades an existing one itself to the oldest version it supports"
    )
    yield Problem(
        key=f"{CONFIG_NAMESPACE}:kubernetesVersion",
        received=settings.kubernetes_version,
        expected=(
            f"a version EKS supports: {settings.kubernetes_version} left EKS extended support on "
            f"{calendar.end_of_extended_support}; EKS creates no cluster at it and {upgraded}. Upgrade one minor "
            f"version at a time (each an EKS cluster update, then the nodes): {' -> '.join(path)}"
        ),
    )


def _minor(version: catalog.KubernetesVersion) -> int:
    return int(version.version.split(".")[1])


@warning_rule
def _gpu_operator_past_nvidia_support(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # NVIDIA's life cycle of gpu-operator major versions (catalog/gpu_operator.py CHART_LIFE_CYCLE,
    # from its "Platform Support" page): a chart past support still deploys, but gets no fixes.
    version = settings.gpu_operator.chart_version
    status = gpu_operator.support_status(version)
    if status in (None, gpu_operator.CHART_LIFE_CYCLE[0][1]):
        return
    supported = ".".join(str(n) for n in gpu_operator.CHART_LIFE_CYCLE[0][0])
    major = ".".join(version.removeprefix("v").split(".")[:2])
    what = "critical bug and CVE fixes only" if status == "Deprecated" else "no patch releases any more"
    yield Problem(
        key=f"{CONFIG_NAMESPACE}:gpuOperator.chartVersion",
        received=version,
        expected=f"a chart NVIDIA supports: v{supported}.x ({gpu_operator.DEFAULT_CHART_VERSION} is the default); "
        f"NVIDIA's platform-support page ({gpu_operator.PLATFORM_SUPPORT_URL}) lists {major}.x as {status} ({what})",
    )


#: EKS service quotas (EKS User Guide, "Amazon EKS service quotas"), both adjustable: a value above
#: them deploys only after a quota increase, so they warn. "Nodes per managed node group" 450
#: (L-BD136A63), "Managed node groups per cluster" 30 (L-6D54EA21).
NODES_PER_MANAGED_NODE_GROUP_QUOTA = 450
MANAGED_NODE_GROUPS_PER_CLUSTER_QUOTA = 30


@warning_rule
def _above_adjustable_eks_quotas(settings: GpuCapacitySettings) -> Iterable[Problem]:
    groups = [(f"gpuNodeGroups[{i}]", g.scaling) for i, g in enumerate(settings.gpu_node_groups)]
    if isinstance(settings, Settings):
        groups.append(("systemNodeGroup", settings.system_node_group.scaling))
    for key, scaling in groups:
        if scaling.max_size > NODES_PER_MANAGED_NODE_GROUP_QUOTA:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:{key}.scaling.maxSize",
                received=scaling.max_size,
                expected=f"at most {NODES_PER_MANAGED_NODE_GROUP_QUOTA} (the EKS quota of nodes per managed node "
                "group), or a quota increase first: EKS refuses the node group otherwise",
            )
    if len(groups) > MANAGED_NODE_GROUPS_PER_CLUSTER_QUOTA:
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:gpuNodeGroups",
            received=len(groups),
            expected=f"at most {MANAGED_NODE_GROUPS_PER_CLUSTER_QUOTA} managed node groups in the cluster (the EKS "
            "quota, system group included), or a quota increase first",
        )


@warning_rule
def _system_types_the_subnet_rule_does_not_know(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # The subnet-size rule (Settings.nodes_need_addresses) knows the ENI layout of the common
    # system types only (catalog.SYSTEM_ENIS); it counts any other type at the fewest addresses a
    # node of any type holds, so it never refuses a network that fits, and says so here.
    # It warns only where the network could be too small: counted at the most any type's two ENIs
    # hold (catalog.MAX_NODE_ADDRESSES), the nodes would not fit.
    if not isinstance(settings, Settings) or settings.network.existing_vpc:
        return
    unknown = [t for t in settings.system_node_group.instance_types if t not in catalog.SYSTEM_ENIS]
    count, usable, _ = settings.private_subnet_room()
    at_most = settings.nodes_need_addresses(settings.autoscaler_enabled, catalog.MAX_NODE_ADDRESSES, subnets=count)
    if unknown and at_most > usable - EKS_ADDRESSES_PER_SUBNET:
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:systemNodeGroup.instanceTypes",
            received=list(settings.system_node_group.instance_types),
            expected=f"types whose ENIs the subnet check knows (e.g. m6i.large, t3.medium), or private subnets you "
            f"checked yourself: {', '.join(unknown)} counted at {catalog.MIN_NODE_ADDRESSES} addresses per node, but "
            "with the VPC CNI defaults a node holds 2 ENIs of addresses (ENIs x IPv4 per ENI in the EC2 instance "
            "type's network info; m6i.large 2 x 10 = 20)",
        )


#: EBS reports instance bandwidth in MB/s (10^6 bytes), gp3 throughput in MiB/s (2^20 bytes).
_MB_PER_MIB = 1.048576


@warning_rule
def _cold_start_levers_that_give_less(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # Legal coldStart values that buy less than they say (config/coldstart.py names the sources): a
    # root volume faster than the instance's EBS bandwidth (ec2:DescribeInstanceTypes
    # EbsOptimizedInfo.MaximumThroughputInMBps, catalog/storage.py), FastImagePull on a type nodeadm
    # ignores it on (fewer than 4 vCPUs or 7 GiB), or on a slow root volume (nodeadm asks for 600 MiB/s).
    for i, group in enumerate(settings.gpu_node_groups):
        cold, key = group.cold_start, f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].coldStart"
        if cold.root_volume_throughput is not None:
            slowest = min(group.instance_types, key=lambda t: INSTANCE_IO[t].ebs_max_mbps)
            cap = INSTANCE_IO[slowest].ebs_max_mbps
            if cold.root_volume_throughput * _MB_PER_MIB > cap:
                yield Problem(
                    key=f"{key}.rootVolumeThroughput",
                    received=cold.root_volume_throughput,
                    expected=f"at most {int(cap / _MB_PER_MIB)} MiB/s: {slowest}'s EBS bandwidth is {cap:g} MB/s "
                    f"at most ({INSTANCE_IO[slowest].ebs_baseline_mbps:g} baseline), shared by all its volumes "
                    "(ec2:DescribeInstanceTypes EbsOptimizedInfo); the rest is paid for and never used",
                )
        if not cold.fast_image_pull:
            continue
        small = [
            t
            for t in group.instance_types
            if catalog.GPU_INSTANCE_TYPES[t].vcpus < FAST_IMAGE_PULL_MIN_VCPUS
            or catalog.GPU_INSTANCE_TYPES[t].memory_mib < FAST_IMAGE_PULL_MIN_MEMORY_GIB * 1024
        ]
        if small:
            yield Problem(
                key=f"{key}.fastImagePull",
                received=True,
                expected=f"false on {', '.join(small)}: nodeadm ignores FastImagePull below "
                f"{FAST_IMAGE_PULL_MIN_VCPUS} vCPUs or {FAST_IMAGE_PULL_MIN_MEMORY_GIB} GiB of memory "
                "(awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/config.go UseSOCISnapshotter)",
            )
        if soci_store_on_root_volume(cold, group.ami_release_version):
            yield Problem(
                key=f"{key}.fastImagePull",
                received=True,
                expected=f"an amiReleaseVersion of <x.y.z>-{SOCI_ON_LOCAL_STORAGE_MIN_AMI_RELEASE} or later (or none, "
                "the latest) with coldStart.localStorage: before amazon-eks-ami "
                f"v{SOCI_ON_LOCAL_STORAGE_MIN_AMI_RELEASE} (PR #2548) setup-local-disks leaves "
                "/var/lib/soci-snapshotter-grpc, where FastImagePull unpacks, on "
                f"the root volume ({cold.root_throughput_mibps} MiB/s), so {group.ami_release_version} pulls at the "
                "root volume's rate, not the instance store's",
            )
        if cold.local_storage is None and cold.root_throughput_mibps < FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS:
            yield Problem(
                key=f"{key}.fastImagePull",
                received=True,
                expected=f"with coldStart.rootVolumeThroughput {FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS} or more, or "
                f"coldStart.localStorage: the root volume gives {cold.root_throughput_mibps} MiB/s, and nodeadm "
                "warns that below 600 MiB/s a fast pull may be slower (nodeadm/doc/examples.md, v20260724)",
            )


@warning_rule
def _groups_no_team_uses(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # A warning, not an error: the teams' policies bind their own namespaces only, so other
    # namespaces (platform jobs, the verification) still run on a group no team names; it may be
    # meant for them, or a team may be missing it.
    for i, p in teams.unused_groups(settings.teams, settings.plans):
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].name",
            received=p.name,
            expected="a group some team's nodeGroups names: no team's GPU pods may run on it (pods of namespaces "
            "without a team still may)",
        )


@warning_rule
def _quotas_above_the_slots_at_max_size(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # A warning: oversubscribing quotas is a choice (teams rarely peak together), but past the slots
    # their groups have at maxSize, pods within quota stay Pending (no node can come for them).
    for i, resource, quota, slots, whose in teams.oversubscribed_quotas(settings.teams, settings.plans):
        yield Problem(
            key=f"{CONFIG_NAMESPACE}:teams[{i}].quota.{resource}",
            received=quota,
            expected=f"at most {slots}, the {resource} slots of {whose} at maxSize, or an oversubscription "
            "you chose: pods within the quota beyond those slots stay Pending",
        )


@warning_rule
def _repair_without_the_agent(settings: GpuCapacitySettings) -> Iterable[Problem]:
    # Repair acts on GPU faults only where the node monitoring agent reports them. A cluster the
    # library creates with the agent turned off: a choice the stack file made, so said here. (An
    # existing cluster's agent is its owner's, and a g5g group's GPUs are not watched by agent v1.7.0:
    # docs/node-health.md says both; a warning there would fire for every such stack with no way to
    # silence it but turning repair off.)
    if not isinstance(settings, Settings) or settings.node_monitoring:
        return
    for i, p in enumerate(settings.plans):
        if p.repair.enabled:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].repair.enabled",
                received=True,
                expected=f"nodeMonitoringAgent on (the {node_health.NODE_MONITORING_AGENT_ADDON} add-on): without it "
                "no GPU fault reaches repair, only Ready",
            )
