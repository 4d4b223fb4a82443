"""The plan of one GPU node group: every fact the library derives from the group's settings, once.

``plan_group`` is a pure function (no Pulumi, no I/O) from a validated ``GpuNodeGroupSettings`` to
a frozen ``GroupPlan``, built by the builders of this folder. Who reads which fact, and where a new
sharing mode or GPU family goes: docs/architecture.md ("The path of a setting", "Where a change
goes"). A plan is frozen and its top-level maps are read-only views: copy them (``dict(...)``) before
handing them to something that mutates (Pulumi inputs, Helm values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .. import catalog
from ..catalog import efa, labels, mig
from ..config.capacity_provider import CapacityProvider
from ..config.coldstart import ColdStart
from ..config.groups import GpuNodeGroupSettings, SharingSettings, Taint
from ..config.isolation import ENFORCED, ISOLATIONS
from ..config.mig import gpu_layout
from ..config.mps import Mps
from ..config.multinode import efa_enis_taken
from . import asg, boot, device_plugin, multinode, placement, userdata
from .repair import RepairPolicy, repair_policy

#: The extended resource a renamed profile advertises instead of ``nvidia.com/gpu``
#: (k8s-device-plugin ``sharing.timeSlicing.renameByDefault``: ``<resource>.shared``).
SHARED_GPU_RESOURCE = f"{device_plugin.GPU_RESOURCE}.shared"

#: The sharing modes of a group (docs/sharing.md).
SHARING_MODES = ("timeSlicing", "mps", "exclusive", "mig")


def mig_resource(profile: str) -> str:
    """The extended resource of a MIG profile under the mixed strategy (k8s-device-plugin README
    "With CUDA Time-Slicing" and MIG_STRATEGY: ``nvidia.com/mig-<profile>``, v0.17.2-v0.20.0)."""
    return f"nvidia.com/mig-{profile}"


def advertised(
    resource_name: str,
    slots_per_node: int,
    gpus: int,
    strategy: str,
    layout: Mapping[str, int] | None,
    replicas: Mapping[str, int],
) -> dict[str, int]:
    """Every extended resource a node advertises, with its count: ``resource_name`` x
    ``slots_per_node`` without MIG; with a MIG ``layout`` (profile -> slices per GPU), under single
    every slice as ``nvidia.com/gpu``, under mixed one ``nvidia.com/mig-<profile>`` per profile,
    each slice ``replicas[profile]`` times (time-slicing on slices)."""
    if layout is None:
        return {resource_name: slots_per_node}
    if strategy == "single":
        return {device_plugin.GPU_RESOURCE: sum(gpus * n * replicas.get(p, 1) for p, n in layout.items())}
    return {mig_resource(p): gpus * n * replicas.get(p, 1) for p, n in layout.items()}


@dataclass(frozen=True)
class GroupPlan:
    """Everything derived from one GPU node group's settings (see the module docstring)."""

    #: The validated settings the plan was derived from.
    settings: GpuNodeGroupSettings
    #: The catalog entry of the group's first instance type (every type of a group has the same
    #: GPU model, memory per GPU, GPU count and architecture: the settings refuse a mix).
    instance: catalog.GpuInstanceType
    #: EKS ``amiType`` of the group: the AL2023 NVIDIA AMI of its architecture.
    ami_type: str
    #: GPUs the device plugin advertises per node before sharing: the physical GPUs, or 1 on a
    #: vGPU slice (g6f, gr6f; catalog.instances). Also the GPU-count label.
    gpus_per_node: int
    #: The sharing profile: ConfigMap key of the device-plugin config and value of the node label
    #: ``nvidia.com/device-plugin.config``. Default: the group's name, which no sharing setting
    #: changes, so sharing changes roll DaemonSets and never replace nodes.
    profile_name: str
    #: The profile's device-plugin config file (``version: v1``).
    device_plugin_config: Mapping[str, Any]
    #: The extended resource pods request: ``nvidia.com/gpu``, or ``nvidia.com/gpu.shared`` when renamed.
    resource_name: str
    #: Slots the device plugin advertises per node (physical GPUs x replicas).
    slots_per_node: int
    #: Slots of the whole group at its maxSize.
    slots_at_max_size: int
    #: kubelet max pods of the group's smallest instance type (VPC CNI defaults, capped by EKS managed
    #: node groups: ``catalog.GpuInstanceType.max_pods``).
    max_pods: int
    #: Pods a node can run besides its DaemonSet pods (smallest instance type of the group; an MPS
    #: group's nodes run one more DaemonSet pod, the MPS control daemon; with the CloudWatch
    #: pipeline, the add-on's: ``catalog.daemonset_pods``). Settings' plans know the pipeline; a
    #: plan made from the group alone (``cloudwatch=False``) counts without it.
    usable_pod_slots: int
    #: The labels every node registers with (kubelet ``--node-labels``); also the node selector.
    node_labels: Mapping[str, str]
    #: The taints every node registers with (kubelet ``--register-with-taints``).
    taints: tuple[Taint, ...]
    #: One toleration per taint: what a pod needs to land on the group.
    tolerations: tuple[Mapping[str, str], ...]
    #: The user data as the group's capacity provider is sent it (``userdata.group_user_data``): a
    #: managed node group's launch template takes base64 MIME with the nodeadm NodeConfig and the boot
    #: stage; a Karpenter group's EC2NodeClass the MIME text, without what Karpenter writes itself.
    user_data: str
    #: What EC2's 16 KB user data limit counts of it (``userdata.GroupUserData.size``).
    user_data_bytes: int
    #: Cluster Autoscaler node-template tags of the group's ASG (labels, taints, resources),
    #: without the discovery tags (those name the cluster: ``plan.asg.asg_tags``).
    node_template_tags: Mapping[str, str]
    #: A managed node group's launch template additions of its multi-node settings, in EC2's
    #: ``LaunchTemplateData`` shape (``plan.multinode.launch_template_data``); empty without them and
    #: for a Karpenter group (its EC2NodeClass carries its own: plan/karpenter.py).
    launch_template_data: Mapping[str, Any]
    #: The boot stage of its nodes (plan/boot.py): toolkit isolation, the MIG layout. Its
    #: cloud-init part is in ``user_data``, for either provider.
    boot: boot.BootStage | None = None
    #: The MIG layout of each GPU (profile -> slices), None without ``mig``.
    mig_layout: Mapping[str, int] | None = None
    #: EFA devices per node (``efa: true``: every one its type has, ``catalog.efa``), advertised by
    #: the AWS EFA device plugin as ``vpc.amazonaws.com/efa``; 0 without ``efa``.
    efa_devices: int = 0
    #: The cluster's ``gpuOperator.isolation`` (config/isolation.py): the toolkit settings its
    #: boot stage writes; the operator's device-plugin strategy must be the same value's.
    isolation: str = ENFORCED

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def provider(self) -> CapacityProvider:
        """What launches the group's nodes (``config.capacity_provider``): the facts that differ per provider."""
        return self.settings.provider

    @property
    def sharing(self) -> SharingSettings:
        """The sharing settings of the profile: ``mps`` or ``timeSlicing`` (see ``sharing_mode``)."""
        return self.settings.sharing

    @property
    def sharing_key(self) -> str:
        """The settings key of the sharing: ``mig``, ``mps`` or ``timeSlicing``."""
        return "mig" if self.settings.mig is not None else self.settings.sharing_key

    @property
    def replicas_setting(self) -> int | dict[str, int]:
        """What ``<sharing_key>.replicas`` says: an int, or on MIG the profile-to-replicas map."""
        return dict(self.settings.mig.replicas) if self.settings.mig is not None else self.sharing.replicas

    @property
    def sharing_mode(self) -> str:
        """``mig`` (a MIG layout), ``mps``, ``timeSlicing`` (replicas > 1) or ``exclusive``
        (time-slicing replicas 1)."""
        if self.mig_layout is not None:
            return "mig"
        if isinstance(self.sharing, Mps):
            return "mps"
        return "timeSlicing" if self.sharing.shared else "exclusive"

    @property
    def replicas(self) -> int:
        """Slots per physical GPU; on MIG, slots per slice (the most of ``mig.replicas``, else 1)."""
        if self.settings.mig is not None:
            return max(self.settings.mig.replicas.values(), default=1)
        return self.sharing.replicas

    @property
    def memory_per_slot_mib(self) -> int:
        """GPU memory per slot: a GPU's driver-reported memory divided by its replicas (MPS enforces
        it; time-slicing does not); on MIG, the smallest of a slice's nominal memory divided by its
        replicas."""
        if self.mig_layout is not None and self.settings.mig is not None:
            gpu = mig.MIG_GPUS[mig.FAMILY_MIG_GPU[self.instance.family.name]]
            shares = self.settings.mig.replicas
            return min(gpu.profiles[p].memory_gb * 1024 // shares.get(p, 1) for p in self.mig_layout)
        return self.instance.memory_per_client_mib(self.replicas)

    @property
    def advertised_resources(self) -> Mapping[str, int]:
        """Every extended resource a node of the group advertises, with its count per node: what the
        autoscaler's node template, a capacity provider's overlay and a team's quota name. One
        resource (``resource_name``: ``slots_per_node``), or a MIG layout's (``advertised``)."""
        replicas = self.settings.mig.replicas if self.settings.mig is not None else {}
        return MappingProxyType(
            advertised(
                self.resource_name,
                self.slots_per_node,
                self.gpus_per_node,
                self.mig_strategy,
                self.mig_layout,
                replicas,
            )
        )

    @property
    def node_resources(self) -> Mapping[str, int]:
        """Every extended resource a node advertises, per node: the GPU resources
        (``advertised_resources``) and, on an EFA group, ``vpc.amazonaws.com/efa``. What the
        autoscaler's node template and a team's quota name."""
        return node_resources(self.advertised_resources, self.efa_devices)

    @property
    def cold_start(self) -> ColdStart:
        """The group's cold-start levers (the user data above carries the nodeadm ones; the launch
        template reads the root volume's)."""
        return self.settings.cold_start

    @property
    def mig_strategy(self) -> str:
        return self.settings.mig_strategy

    @property
    def instance_types(self) -> tuple[str, ...]:
        return tuple(self.settings.instance_types)

    @property
    def repair(self) -> RepairPolicy:
        """How the group's unhealthy nodes are repaired (``plan.repair``): the node group's
        ``nodeRepairConfig`` or Karpenter's gate, the outputs, the impact summary, the alerts."""
        return repair_policy(self.settings)

    @property
    def architecture(self) -> str:
        """``x86_64`` or ``arm64`` (every type of a group has the same)."""
        return self.instance.architecture


def node_resources(gpu_resources: Mapping[str, int], efa_devices: int) -> Mapping[str, int]:
    """``gpu_resources`` and, with ``efa_devices``, ``vpc.amazonaws.com/efa`` (read-only)."""
    return MappingProxyType({**gpu_resources, **({efa.EFA_RESOURCE: efa_devices} if efa_devices else {})})


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


def plan_group(
    group: GpuNodeGroupSettings, cloudwatch: bool = False, node_monitoring: bool = False, isolation: str = ENFORCED
) -> GroupPlan:
    """The plan of ``group`` (validated settings: every instance type is in the catalog);
    ``cloudwatch``: the cluster runs the CloudWatch pipeline's add-on (its DaemonSet pods);
    ``node_monitoring``: the EKS node monitoring agent's add-on (its DaemonSet pods);
    ``isolation``: the cluster's ``gpuOperator.isolation``."""
    instance = catalog.GPU_INSTANCE_TYPES[group.instance_types[0]]
    sharing = group.sharing
    profile_name = sharing.profile or group.name
    layout = dict(gpu_layout(group.mig, group.instance_types[0])) if group.mig is not None else None
    replicas = group.mig.replicas if group.mig is not None else {}
    renamed = not isinstance(sharing, Mps) and sharing.shared and sharing.rename_by_default
    resource_name = SHARED_GPU_RESOURCE if renamed else device_plugin.GPU_RESOURCE
    slots_per_node = instance.gpus * sharing.replicas
    resources = advertised(resource_name, slots_per_node, instance.gpus, group.mig_strategy, layout, replicas)
    if layout is not None:
        # A MIG group: its first resource (the layout's first profile) and every slot of the node.
        resource_name, slots_per_node = next(iter(resources)), sum(resources.values())
        shared = {
            resource: replicas[profile]
            for profile, resource in zip(layout, resources_per_profile(group.mig_strategy, layout), strict=True)
            if profile in replicas
        }
        config = device_plugin.mig_device_plugin_config(
            group.mig_strategy, shared, group.shared_devices_allocation_policy
        )
    else:
        config = device_plugin.device_plugin_config(sharing, group.mig_strategy, group.shared_devices_allocation_policy)
    node_labels = {
        **group.labels,
        # CA's GPULabel: a node carrying it is "GPU not ready" until it advertises nvidia.com/gpu
        # (cluster-autoscaler-1.35.2 processors/customresources/gpu_processor.go
        # FilterOutNodesWithUnreadyResources, utils/gpu/gpu.go NodeHasGpuAllocatable), which a node of
        # mixed MIG slices never does (kubernetes/autoscaler#8095): such nodes go without it.
        **({} if layout is not None and group.mig_strategy == "mixed" else userdata.accelerator_labels(instance)),
        labels.GPU_COUNT_LABEL: str(instance.gpus),
        labels.DEVICE_PLUGIN_CONFIG_LABEL: profile_name,
        labels.NODE_GROUP_LABEL: group.name,
    }
    taints = tuple(group.taints)
    efa_devices = efa.efa_devices(group.instance_types[0]) if group.efa else 0
    # A Karpenter EFA node's efa-only interface on card 0 takes pods' ENI (config/multinode.py).
    enis_taken = efa_enis_taken(group)
    mig_gpu = mig.MIG_GPUS[mig.FAMILY_MIG_GPU[instance.family.name]] if layout is not None else None
    stage = boot.boot_stage(
        instance.gpus, mig_gpu, layout, taints, group.provider, toolkit=ISOLATIONS[isolation].toolkit_settings
    )
    # Registered with the stage's pending taint, which only a stage that succeeded takes away.
    user_data = userdata.group_user_data(
        group.provider, node_labels, stage.pending, group.cold_start, [stage.user_data_part]
    )
    return GroupPlan(
        settings=group,
        instance=instance,
        ami_type=catalog.GPU_AMI_TYPES[instance.architecture],
        gpus_per_node=instance.gpus,
        profile_name=profile_name,
        device_plugin_config=_frozen(config),
        resource_name=resource_name,
        slots_per_node=slots_per_node,
        slots_at_max_size=slots_per_node * group.scaling.max_size,
        max_pods=min(catalog.gpu_node_max_pods(t, enis_taken) for t in group.instance_types),
        usable_pod_slots=min(
            catalog.usable_pod_slots(t, isinstance(sharing, Mps), cloudwatch, node_monitoring, enis_taken)
            for t in group.instance_types
        ),
        node_labels=_frozen(node_labels),
        taints=taints,
        tolerations=tuple(placement.tolerations_for(taints)),
        user_data=user_data.sent,
        user_data_bytes=user_data.size,
        node_template_tags=_frozen(
            asg.node_template_tags(
                node_labels,
                taints,
                node_resources(resources, efa_devices),
                [catalog.GPU_INSTANCE_TYPES[t] for t in group.instance_types],
            )
            | asg.hugepages_tags(efa_devices)
        ),
        launch_template_data=_frozen(multinode.launch_template_data(group)),
        boot=stage,
        mig_layout=_frozen(layout) if layout is not None else None,
        efa_devices=efa_devices,
        isolation=isolation,
    )


def resources_per_profile(strategy: str, layout: Mapping[str, int]) -> list[str]:
    """The resource each profile of a MIG layout is advertised as, in the layout's order."""
    return [device_plugin.GPU_RESOURCE if strategy == "single" else mig_resource(p) for p in layout]


def plan_groups(
    groups: Iterable[GpuNodeGroupSettings],
    cloudwatch: bool = False,
    node_monitoring: bool = False,
    isolation: str = ENFORCED,
) -> tuple[GroupPlan, ...]:
    """The plan of each group, in order (the others as for ``plan_group``)."""
    return tuple(plan_group(g, cloudwatch, node_monitoring, isolation) for g in groups)
