"""Node group settings: the GPU node groups and the untainted system node group."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from .. import catalog
from ..catalog import gpu_operator, labels
from . import capacity_provider, multinode
from .coldstart import ColdStart, cold_start_problems
from .errors import KeyedProblem, KeyedProblems
from .fields import (
    AmiReleaseVersion,
    Count,
    LabelKey,
    LabelValue,
    ResourceName,
    _Model,
    _unique,
    doc,
)
from .instance_types import known_gpu_types, sharing_problem
from .mig import Mig, mig_problems
from .mps import MPS_MIG_SOURCE, MPS_MIN_MEMORY_PER_CLIENT_MIB, Mps
from .repair import Repair, repair_problems
from .taints import DEFAULT_GPU_TAINT, Taint, group_taints

#: The root volume (gp3, launch template ``blockDeviceMappings``): at least the AMI's root snapshot,
#: 20 GiB for the AL2023 EKS AMIs (awslabs/amazon-eks-ami templates/al2023/variables-default.json
#: ``launch_block_device_mappings_volume_size``; EC2 refuses a volume smaller than its snapshot), at
#: most gp3's 65,536 GiB (botocore ``ec2`` 2016-11-15, botocore 1.44.5,
#: LaunchTemplateEbsBlockDeviceRequest.VolumeSize: "gp3: 1 - 65,536 GiB"; it was 16,384 before).
MIN_ROOT_VOLUME_GIB = 20
MAX_GP3_VOLUME_GIB = 65536
#: botocore ``eks`` 2017-11-01 CreateNodegroupRequest.instanceTypes: with a launch template "you can
#: specify 0-20 instance types for instanceTypes".
MAX_INSTANCE_TYPES = 20


class Scaling(_Model):
    """EKS ``scalingConfig`` of a managed node group (minSize <= desiredSize <= maxSize)."""

    model_config = ConfigDict(title="Scaling")

    min_size: Count = Field(ge=0, **doc("Minimum number of nodes.", type="int ≥ 0", default="required"))
    desired_size: Count = Field(
        ge=0,
        **doc(
            "Desired number of nodes; EKS applies it at creation only (then the autoscaler owns it).",
            type="int ≥ 0",
            default="required",
        ),
    )
    max_size: Count = Field(ge=1, **doc("Maximum number of nodes.", type="int ≥ 1", default="required"))

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError("minSize <= desiredSize <= maxSize")
        return self


class TimeSlicing(_Model):
    """One device-plugin sharing profile (k8s-device-plugin ``sharing.timeSlicing``).

    ``replicas: 1`` means "not shared": the profile's config file has no ``sharing`` block and
    each physical GPU is advertised once. The device plugin itself refuses ``replicas < 2``
    inside ``sharing.timeSlicing`` ("number of replicas must be >= 2") and a ``timeSlicing``
    without resources ("no resources specified"), but accepts a config without ``sharing``
    (NVIDIA/k8s-device-plugin api/config/v1/replicas.go and sharing.go, v0.17.2, v0.18.1,
    v0.20.0: the plugins behind gpu-operator v25.3.1, v25.10.1, v26.7.0).
    """

    model_config = ConfigDict(title="TimeSlicing")

    replicas: Count = Field(
        default=4,
        ge=1,
        **doc(
            "Pods sharing each physical GPU: each GPU is advertised `replicas` times. `1`: not shared (no `sharing` "
            "block in the profile; each GPU advertised once, e.g. a group of exclusive GPUs beside shared ones). "
            "GPUs × replicas must fit the pods a node can run besides its DaemonSets (max pods − 7, − 8 on "
            "A100/H100/H200 with mig-manager, 2 fewer with the node monitoring agent; max pods is the VPC CNI's, "
            "capped by EKS managed node groups at 110 below 30 vCPUs and 250 otherwise; without the agent "
            "g4dn.xlarge: 22, 12xlarge: 227, g6.4xlarge: 103, p5.48xlarge: 92): an error with "
            "`verification.enabled`, a warning otherwise. Must be `1` on g6f/gr6f (a vGPU slice is not shared "
            "further).",
            type="int ≥ 1",
            default="`4`",
        ),
    )
    rename_by_default: bool = Field(
        False,
        **doc(
            "Advertise `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`. Not with `replicas: 1`.",
            type="bool",
            default="`false`",
        ),
    )
    fail_requests_greater_than_one: bool = Field(
        True,
        **doc(
            "Reject pods requesting more than one share (two shares of one GPU are no faster; the device plugin's "
            "own default is `false`). Not with `replicas: 1`.",
            type="bool",
            default="`true`",
        ),
    )
    # None: the group's name (plan.group.GroupPlan.profile_name), which no sharing setting changes.
    profile: LabelValue | None = Field(
        None,
        **doc(
            "Sharing profile name: device-plugin ConfigMap key and node label `nvidia.com/device-plugin.config`. One "
            "set of settings per name. Changing it replaces the group's nodes; sharing settings do not (see \"Why "
            'the defaults").',
            type="label value",
            default="the group's `name`",
        ),
    )

    @property
    def shared(self) -> bool:
        return self.replicas > 1

    @model_validator(mode="after")
    def _sharing_options_need_sharing(self) -> TimeSlicing:
        # With replicas 1 the config file has no sharing block: these options would be dropped.
        if self.shared:
            return self
        problems: list[KeyedProblem] = []
        if self.rename_by_default:
            problems.append(
                (
                    ("renameByDefault",),
                    True,
                    "false or no key: with replicas 1 the GPU is not shared, so "
                    "there is no <name>.shared resource to rename to",
                )
            )
        if "fail_requests_greater_than_one" in self.model_fields_set:
            problems.append(
                (
                    ("failRequestsGreaterThanOne",),
                    self.fail_requests_greater_than_one,
                    "no key: with replicas 1 the GPU is not shared, so there are no shares to limit",
                )
            )
        if problems:
            raise KeyedProblems(problems)
        return self


#: The settings of a group's sharing profile: time-slicing (exclusive at replicas 1) or MPS.
SharingSettings = TimeSlicing | Mps


_RESERVED_LABELS = (
    labels.ACCELERATOR_LABEL,
    labels.GPU_COUNT_LABEL,
    labels.NODE_GROUP_LABEL,
    labels.DEVICE_PLUGIN_CONFIG_LABEL,
    labels.BOOT_STAGE_KEY,
)


class GpuNodeGroupSettings(_Model):
    """One EKS managed node group on the AL2023 NVIDIA AMI."""

    model_config = ConfigDict(title="GpuNodeGroupSettings")

    name: ResourceName = Field(
        **doc(
            "Group name: resource names (`gpu-eks-<name>`), the `gpu-eks.io/node-group` label and the default "
            "sharing profile name. Unique; not `cluster`, `gpu-operator`, `verify`, `autoscaler`, `observability` "
            "(nor `karpenter` where a group uses Karpenter) nor starting with one of them plus `-`, nor ending in "
            "`-lt`: those names belong to the cluster's own resources.",
            type="1–40 chars `[a-z0-9-]`",
            default="required",
        )
    )
    instance_types: Annotated[
        list[str],
        Field(min_length=1, max_length=MAX_INSTANCE_TYPES),
        AfterValidator(_unique),
        AfterValidator(known_gpu_types),
    ] = Field(
        ["g4dn.xlarge"],
        **doc(
            "NVIDIA GPU instance types, each once: families g4dn, g5, g5g (arm64), g6, gr6, g6e, p4d, p4de, p5, p5e, "
            'p5en and the fractional g6f, gr6f (see "GPU families"). All types of a group must have the same GPU '
            "model, memory per GPU, GPU count and CPU architecture (`g6.xlarge` with `g6.2xlarge`, not `g4dn.xlarge` "
            "with `g5.xlarge`). An unknown type is an error naming the nearest known ones (a CPU type such as "
            "`m5.large`: not a GPU type).",
            type="list of GPU instance types",
            default='`["g4dn.xlarge"]`',
        ),
    )
    capacity_provider: Literal["managedNodeGroup", "karpenter"] = Field(
        "managedNodeGroup",
        **doc(
            "What launches the group's nodes: `managedNodeGroup` (an EKS managed node group, scaled by the Cluster "
            "Autoscaler) or `karpenter` (a Karpenter NodePool, EC2NodeClass and NodeOverlay; Karpenter launches "
            "nodes for pending pods, from zero). A `karpenter` group needs `scaling: {minSize: 0, desiredSize: 0}` "
            "(Karpenter keeps no minimum; `maxSize` is the NodePool's node limit) and `diskSizeGiB` ≤ 59000 (the "
            'EC2NodeClass limit). See "Karpenter".',
            type="`managedNodeGroup` | `karpenter`",
            default="`managedNodeGroup`",
        ),
    )
    capacity_type: Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"] = Field(
        "ON_DEMAND",
        **doc(
            "EC2 capacity type. `CAPACITY_BLOCK`: an EC2 Capacity Block for ML (`capacityReservation.id`, one "
            "instance type, `availabilityZone`, `minSize`/`desiredSize` 0; see docs/multi-node.md).",
            type="`ON_DEMAND` | `SPOT` | `CAPACITY_BLOCK`",
            default="`ON_DEMAND`",
        ),
    )
    # Multi-node groups (issue 32): config/multinode.py documents and checks them.
    efa: bool = multinode.EFA_FIELD
    placement: Literal["cluster"] | None = multinode.PLACEMENT_FIELD
    placement_group: str | None = multinode.PLACEMENT_GROUP_FIELD
    availability_zone: Annotated[str | None, AfterValidator(multinode.availability_zone)] = (
        multinode.AVAILABILITY_ZONE_FIELD
    )
    capacity_reservation: multinode.CapacityReservation | None = multinode.CAPACITY_RESERVATION_FIELD
    scaling: Scaling = Field(
        Scaling(min_size=1, desired_size=1, max_size=2),
        **doc(
            'EKS scaling config. `minSize: 0` scales from zero (see "Cluster Autoscaler and scale from zero"). '
            "`desiredSize` applies at creation only (then the autoscaler owns it).",
            type="`{minSize, desiredSize, maxSize}`",
            default="`{1, 1, 2}`",
        ),
    )
    disk_size_gib: Count = Field(
        default=100,
        ge=MIN_ROOT_VOLUME_GIB,
        le=MAX_GP3_VOLUME_GIB,
        alias="diskSizeGiB",
        **doc(
            "Size in GiB of the encrypted gp3 root volume (CUDA images are large).",
            type="int 20–65536",
            default="`100`",
        ),
    )
    labels: dict[LabelKey, LabelValue] = Field(
        {},
        **doc(
            "Extra node labels, applied by kubelet (`--node-labels`) through nodeadm. Keys are qualified names "
            "(optional DNS-subdomain prefix ≤ 253 characters, `/`, name ≤ 63), values ≤ 63 characters of "
            "`[A-Za-z0-9_.-]`, alphanumeric at both ends (so no `,` or `=`). Errors: keys kubelet refuses "
            "(`kubernetes.io`/`k8s.io` namespaces except `node.kubernetes.io/` and `kubelet.kubernetes.io/`), the "
            "well-known keys kubelet and the cloud controller manager set themselves (`kubernetes.io/hostname`, "
            "`kubernetes.io/os`, `kubernetes.io/arch`, instance type, zone, region), and the library's own keys "
            "(`gpu-eks.io/*`, `nvidia.com/device-plugin.config`, `k8s.amazonaws.com/accelerator`). With the "
            "autoscaler every label and taint is also an ASG tag: at most 50 tags per ASG, EKS's and CA's included "
            "(about 40 extra labels and taints).",
            type="map",
            default="`{}`",
        ),
    )
    taints: Annotated[tuple[Taint, ...], AfterValidator(group_taints)] = Field(
        (DEFAULT_GPU_TAINT,),
        **doc(
            "Node taints, applied by kubelet (`--register-with-taints`) through nodeadm; replaces the default. Key a "
            "qualified name, value a label value, effect `NoSchedule`, `PreferNoSchedule` or `NoExecute`. Unique by "
            "key and effect: the API server refuses a Node that repeats a pair, and it never joins. Not the node "
            "boot stage's keys (`gpu-eks.io/boot-stage`, `gpu-eks.io/boot-stage-failed`). With the autoscaler, one "
            "taint per key (an ASG taint tag holds one `value:effect`).",
            type="list of `{key, value?, effect}`",
            default='`[{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]`',
        ),
    )
    time_slicing: TimeSlicing = Field(
        TimeSlicing(), **doc("GPU time-slicing profile of this group (k8s-device-plugin `sharing.timeSlicing`).")
    )
    mps: Mps | None = Field(
        None,
        **doc(
            "MPS sharing profile of this group (k8s-device-plugin `sharing.mps`), instead of `timeSlicing`: each "
            "client of a GPU gets an enforced 1/replicas of its memory and compute. Not with `timeSlicing`.",
            type="`{replicas, profile?}`",
            default="none (time-slicing)",
        ),
    )
    shared_devices_allocation_policy: Literal["distributed", "packed"] | None = Field(
        None,
        **doc(
            "Which GPU of a multi-GPU node serves the next shared slot (device plugin "
            "`flags.plugin.sharedDevicesAllocationPolicy`, gpu-operator v26.7.0 and newer only): `distributed` "
            "(the plugin's default) spreads pods over the GPUs, `packed` fills one GPU before the next. Only with "
            "sharing (replicas > 1).",
            type="`distributed` | `packed`",
            default="the plugin's (`distributed`)",
        ),
    )
    # The chart's mig.strategy reaches the device plugin and GFD as the MIG_STRATEGY env, which
    # overrides the config file's flags.migStrategy: both come from this one setting.
    mig_strategy: Literal["none", "single", "mixed"] = Field(
        "none",
        **doc(
            "How MIG slices are advertised: the chart's `mig.strategy` and the profiles' `flags.migStrategy`, one "
            "value for the whole cluster (the same in every group). `single`: every slice as `nvidia.com/gpu` (one "
            "profile per node); `mixed`: `nvidia.com/mig-<profile>` per profile. Needs `single` or `mixed` with "
            "`mig`; a group without `mig` uses its GPUs whole under any strategy.",
            type="`none` | `single` | `mixed`",
            default="`none`",
        ),
    )
    mig: Mig | None = Field(
        None,
        **doc(
            "The MIG layout of the group's GPUs (p4d, p4de, p5, p5e, p5en), applied by the node's boot stage before "
            'kubelet starts (see "MIG"; a change rolls the nodes), instead of `timeSlicing` and `mps`.',
            type="`{layout | migDevices, replicas?}`",
            default="none (whole GPUs)",
        ),
    )
    ami_release_version: AmiReleaseVersion | None = Field(
        None,
        **doc(
            "Pin the EKS AMI release, `<x.y.z>-<yyyymmdd>` of the cluster's minor (e.g. `1.35.0-20260115`). "
            "g6f/gr6f need `20250610` or later (the first AMI with their vGPU driver).",
            type="string",
            default="latest",
        ),
    )

    cold_start: ColdStart = Field(
        ColdStart(),
        **doc(
            'The cold-start levers of the group: instance store, root volume speed, image pulls (see "Cold start"). '
            "Each one rolls the group's nodes.",
        ),
    )

    repair: Repair = Field(
        Repair(), **doc('Node auto repair of the group: what happens to a node whose GPU fails (see "Node health").')
    )

    @property
    def provider(self) -> capacity_provider.CapacityProvider:
        """What launches the group's nodes (``capacityProvider``): the facts that differ per provider."""
        return capacity_provider.PROVIDERS[self.capacity_provider]

    @property
    def sharing(self) -> SharingSettings:
        """The group's sharing profile settings: ``mps`` when given, else ``timeSlicing``."""
        return self.mps if self.mps is not None else self.time_slicing

    @property
    def sharing_key(self) -> str:
        """The settings key of the group's sharing profile (``mps`` or ``timeSlicing``)."""
        return "mps" if self.mps is not None else "timeSlicing"

    @model_validator(mode="after")
    def _sharing_rules(self) -> GpuNodeGroupSettings:
        # One validator, so the family's rule, the mode's rules and coldStart's are reported together (the
        # family's first: it says whether the group may share at all).
        mode = catalog.MPS if self.mps is not None else catalog.TIME_SLICING
        problem = sharing_problem(self.instance_types, mode, self.sharing.shared)
        family = [((self.sharing_key, "replicas"), self.sharing.replicas, problem)] if problem else []
        # Where the family refuses the mode, its other rules on the same key would only mislead
        # (g6f with mps: "at most 2" would suggest that 2 clients work).
        problems = family + [p for p in sharing_problems(self) if not (family and p[0] == family[0][0])]
        problems += cold_start_problems(
            self.cold_start, self.instance_types, self.disk_size_gib, self.ami_release_version
        )
        problems += mig_problems(
            self.mig,
            self.mig_strategy,
            self.instance_types[0],
            self.mps.model_dump(by_alias=True, exclude_none=True) if self.mps is not None else None,
            self.time_slicing.model_dump(by_alias=True, exclude_none=True)
            if "time_slicing" in self.model_fields_set
            else None,
            self.shared_devices_allocation_policy,
        )
        # The capacity provider's rules, reported with the sharing ones (every problem at once).
        problems += capacity_provider.provider_problems(
            self.provider, self.scaling.min_size, self.scaling.desired_size, self.labels, self.disk_size_gib
        )
        problems += repair_problems(self.repair, self.provider)
        problems += multinode.multinode_problems(self)
        if problems:
            raise KeyedProblems(problems)
        return self

    @field_validator("labels")
    @classmethod
    def _no_reserved_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        clash = sorted(set(labels) & set(_RESERVED_LABELS))
        if clash:
            raise ValueError(f"no keys the library sets itself ({', '.join(clash)})")
        return labels


def sharing_problems(group: GpuNodeGroupSettings) -> list[KeyedProblem]:
    """The rules of a group's sharing mode that need more than one key (each with its source)."""
    problems: list[KeyedProblem] = []
    if group.mps is None:
        if group.shared_devices_allocation_policy is not None and not group.time_slicing.shared:
            problems.append(
                (
                    ("sharedDevicesAllocationPolicy",),
                    group.shared_devices_allocation_policy,
                    "no key: with timeSlicing replicas 1 no GPU is shared, so there is no shared slot to place",
                )
            )
        return problems
    if "time_slicing" in group.model_fields_set:
        problems.append(
            (
                ("mps",),
                group.mps.model_dump(by_alias=True, exclude_none=True),
                "either mps or timeSlicing, not both: the device plugin shares a node's GPUs one way "
                "('Time-slicing and MPS are mutually exclusive', NVIDIA/k8s-device-plugin README v0.20.0; "
                "api/config/v1/sharing.go SharingStrategy picks MPS and ignores timeSlicing)",
            )
        )
    if group.mig_strategy == "mixed":
        problems.append(
            (
                ("migStrategy",),
                group.mig_strategy,
                f"none or single with mps: 'using --mig-strategy=mixed is not supported with MPS' ({MPS_MIG_SOURCE})",
            )
        )
    instance = catalog.GPU_INSTANCE_TYPES[group.instance_types[0]]
    per_client = instance.memory_per_client_mib(group.mps.replicas)
    if per_client < MPS_MIN_MEMORY_PER_CLIENT_MIB:
        memory = instance.driver_memory_mib_per_gpu
        most = memory // MPS_MIN_MEMORY_PER_CLIENT_MIB
        problems.append(
            (
                ("mps", "replicas"),
                group.mps.replicas,
                f"at most {most} for {instance.gpu_model} ({memory} MiB per GPU as the driver reports it): each MPS "
                f"client gets GPU memory / replicas = {per_client} MiB, below the library's floor of "
                f"{MPS_MIN_MEMORY_PER_CLIENT_MIB} MiB (a CUDA context and its libraries alone take several hundred "
                "MiB; the limit is set by the MPS control daemon, cmd/mps-control-daemon/mps/daemon.go "
                "perDevicePinnedDeviceMemoryLimits, v0.17.2-v0.20.0)",
            )
        )
    return problems


def allocation_policy_problems(policies: Sequence[str | None], chart_version: str) -> list[KeyedProblem]:
    """``sharedDevicesAllocationPolicy`` where the chart's device plugin does not read it."""
    facts = gpu_operator.chart_defaults(chart_version)
    if facts.shared_devices_allocation_policy:
        return []
    newer = [v for v, c in gpu_operator.SUPPORTED_CHART_VERSIONS.items() if c.shared_devices_allocation_policy]
    return [
        (
            ("gpuNodeGroups", i, "sharedDevicesAllocationPolicy"),
            policy,
            f"no key with gpuOperator.chartVersion {chart_version} (device plugin {facts.device_plugin_version}, "
            "which has no flags.plugin.sharedDevicesAllocationPolicy and would ignore it: NVIDIA/k8s-device-plugin "
            f"api/config/v1/flags.go); chart {', '.join(newer)} or newer reads it (device plugin v0.20.0)",
        )
        for i, policy in enumerate(policies)
        if policy is not None
    ]
