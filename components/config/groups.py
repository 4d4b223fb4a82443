"""Node group settings: the GPU node groups and the untainted system node group."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .. import catalog
from ..nodegroups import labels, placement
from .errors import KeyedProblem, KeyedProblems
from .fields import (
    AmiReleaseVersion,
    Count,
    LabelKey,
    LabelValue,
    QualifiedName,
    ResourceName,
    SystemInstanceType,
    _Model,
    _unique,
)


class Scaling(_Model):
    """EKS ``scalingConfig`` of a managed node group."""

    min_size: Count = Field(ge=0)
    desired_size: Count = Field(ge=0)
    max_size: Count = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError("minSize <= desiredSize <= maxSize")
        return self


class TaintSpec(_Model):
    """One ``--register-with-taints`` entry. kubelet parses it with k8s.io/kubernetes
    pkg/util/taints ParseTaints (key a qualified name, value a label value, a known effect);
    the API server validates the Node with pkg/apis/core/validation validateNodeTaints (the
    same rules, plus unique key+effect pairs: checked per group in GpuNodeGroupSettings)."""

    key: QualifiedName
    value: LabelValue = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def to_taint(self) -> placement.Taint:
        return placement.Taint(key=self.key, value=self.value, effect=self.effect)


_DEFAULT_TAINTS = (
    TaintSpec(
        key=placement.DEFAULT_GPU_TAINT.key,
        value=placement.DEFAULT_GPU_TAINT.value,
        effect=placement.DEFAULT_GPU_TAINT.effect,  # type: ignore[arg-type]
    ),
)


class TimeSlicing(_Model):
    """One device-plugin sharing profile (k8s-device-plugin ``sharing.timeSlicing``).

    ``replicas: 1`` means "not shared": the profile's config file has no ``sharing`` block and
    each physical GPU is advertised once. The device plugin itself refuses ``replicas < 2``
    inside ``sharing.timeSlicing`` ("number of replicas must be >= 2") and a ``timeSlicing``
    without resources ("no resources specified"), but accepts a config without ``sharing``
    (NVIDIA/k8s-device-plugin api/config/v1/replicas.go and sharing.go, v0.17.2, v0.18.1,
    v0.20.0: the plugins behind gpu-operator v25.3.1, v25.10.1, v26.7.0).
    """

    #: How many pods share one physical GPU (each GPU is advertised ``replicas`` times); 1: unshared.
    replicas: Count = Field(default=4, ge=1)
    #: Advertise ``nvidia.com/gpu.shared`` instead of ``nvidia.com/gpu`` (device plugin default: false).
    rename_by_default: bool = False
    #: Refuse pods that request more than one replica: asking for 2 shares of the same GPU gives
    #: no more GPU, so failing loudly is safer (device plugin default: false; ours: true).
    fail_requests_greater_than_one: bool = True
    #: Name of the profile: the key in the device-plugin ConfigMap and the value of the node label
    #: ``nvidia.com/device-plugin.config``. Default: the GPU node group's name (see
    #: ``GpuNodeGroupSettings.profile_name``), so sharing changes never change the node label.
    profile: LabelValue | None = None

    @property
    def shared(self) -> bool:
        return self.replicas > 1

    @property
    def resource_name(self) -> str:
        """The extended resource the device plugin advertises for this profile."""
        return "nvidia.com/gpu.shared" if self.shared and self.rename_by_default else "nvidia.com/gpu"

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


def _known_gpu_types(types: list[str]) -> list[str]:
    unknown = [t for t in types if t not in catalog.GPU_INSTANCE_TYPES]
    if unknown:
        raise ValueError(f"g4dn sizes only, one of {sorted(catalog.GPU_INSTANCE_TYPES)} (got {unknown})")
    counts = {catalog.GPU_INSTANCE_TYPES[t].gpus for t in types}
    if len(counts) > 1:
        detail = ", ".join(f"{t}={catalog.GPU_INSTANCE_TYPES[t].gpus}" for t in types)
        raise ValueError(
            "instance types with the same GPU count, since the GPU-count label is per node "
            f"group (got {detail}); split them into separate node groups"
        )
    return types


def _unique_taints(taints: tuple[TaintSpec, ...]) -> tuple[TaintSpec, ...]:
    # The API server refuses a Node whose taints repeat a key+effect pair ("taints must be unique
    # by key and effect pair": k8s.io/kubernetes pkg/apis/core/validation validateNodeTaints),
    # and kubelet's ParseTaints refuses the flag ("duplicated taints with the same key and
    # effect", pkg/util/taints/taints.go): the node would never join.
    first: dict[tuple[str, str], int] = {}
    problems: list[KeyedProblem] = []
    for i, t in enumerate(taints):
        seen = first.setdefault((t.key, t.effect), i)
        if seen != i:
            problems.append(
                (
                    (i,),
                    t.model_dump(by_alias=True, exclude_defaults=True),
                    f"a taint whose key and effect differ from taints[{seen}] ({t.key}:{t.effect}): "
                    "a Node's taints must be unique by key and effect, or the API server refuses it",
                )
            )
    if problems:
        raise KeyedProblems(problems)
    return taints


_RESERVED_LABELS = (
    labels.ACCELERATOR_LABEL,
    labels.GPU_COUNT_LABEL,
    labels.NODE_GROUP_LABEL,
    labels.DEVICE_PLUGIN_CONFIG_LABEL,
)


class GpuNodeGroupSettings(_Model):
    """One EKS managed node group on the AL2023 NVIDIA AMI."""

    name: ResourceName
    instance_types: Annotated[
        list[str], Field(min_length=1), AfterValidator(_unique), AfterValidator(_known_gpu_types)
    ] = ["g4dn.xlarge"]
    capacity_type: Literal["ON_DEMAND", "SPOT"] = "ON_DEMAND"
    scaling: Scaling = Scaling(min_size=1, desired_size=1, max_size=2)
    disk_size_gib: Count = Field(default=100, ge=20, le=16384, alias="diskSizeGiB")
    #: Extra node labels, applied by kubelet (``--node-labels``) through nodeadm.
    labels: dict[LabelKey, LabelValue] = {}
    #: Node taints, applied by kubelet (``--register-with-taints``). Replaces the default.
    taints: Annotated[tuple[TaintSpec, ...], AfterValidator(_unique_taints)] = _DEFAULT_TAINTS
    time_slicing: TimeSlicing = TimeSlicing()
    #: MIG strategy: the chart's ``mig.strategy`` (which reaches the device plugin and GFD as the
    #: MIG_STRATEGY env and overrides the config file) and the config file's ``flags.migStrategy``,
    #: both from this one setting. Only ``none``: the T4 has no MIG.
    mig_strategy: str = "none"
    #: Pin the EKS AMI release (e.g. ``1.35.0-20260115``); default: EKS's latest for the version.
    ami_release_version: AmiReleaseVersion | None = None

    @field_validator("mig_strategy")
    @classmethod
    def _no_mig(cls, value: str) -> str:
        if value != "none":
            raise ValueError("'none': MIG needs an A100/H100-class GPU, and g4dn's NVIDIA T4 has no MIG")
        return value

    @field_validator("labels")
    @classmethod
    def _no_reserved_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        clash = sorted(set(labels) & set(_RESERVED_LABELS))
        if clash:
            raise ValueError(f"no keys the library sets itself ({', '.join(clash)})")
        return labels

    @property
    def instance_spec(self) -> catalog.GpuInstanceType:
        """The instance type that defines GPU count (all types in the group share it)."""
        return catalog.GPU_INSTANCE_TYPES[self.instance_types[0]]

    @property
    def gpus_per_node(self) -> int:
        return self.instance_spec.gpus

    @property
    def advertised_gpus_per_node(self) -> int:
        return self.gpus_per_node * self.time_slicing.replicas

    @property
    def profile_name(self) -> str:
        """The sharing profile: ConfigMap key and node label ``nvidia.com/device-plugin.config``.

        Default: the group's name, which no sharing setting changes: a change of replicas,
        renameByDefault, failRequestsGreaterThanOne or chart version then changes only the
        ConfigMap (rolling the device-plugin and GFD DaemonSets), never the launch template.
        """
        return self.time_slicing.profile or self.name

    @property
    def usable_pod_slots(self) -> int:
        """Pods a node of this group can run besides the DaemonSets (smallest instance type)."""
        return min(catalog.usable_pod_slots(t) for t in self.instance_types)

    @property
    def taint_list(self) -> list[placement.Taint]:
        return [t.to_taint() for t in self.taints]


class SystemNodeGroupSettings(_Model):
    """The untainted node group for cluster services (CoreDNS, gpu-operator, NFD master/gc)."""

    #: General-purpose types; Graviton (arm64) types select the arm64 AMI (``amiType``). One
    #: architecture per group: a node group has one AMI.
    instance_types: Annotated[list[SystemInstanceType], Field(min_length=1), AfterValidator(_unique)] = ["m6i.large"]
    scaling: Scaling = Scaling(min_size=2, desired_size=2, max_size=3)
    disk_size_gib: Count = Field(default=50, ge=20, le=16384, alias="diskSizeGiB")
    ami_release_version: AmiReleaseVersion | None = None

    @field_validator("instance_types")
    @classmethod
    def _one_architecture(cls, types: list[str]) -> list[str]:
        # EKS CreateNodegroup: every instance type must fit the group's single amiType (an arm64
        # AMI cannot boot on x86_64 and vice versa).
        archs = {t: catalog.instance_architecture(t) for t in types}
        if len(set(archs.values())) > 1:
            detail = ", ".join(f"{t}={a}" for t, a in archs.items())
            raise ValueError(f"instance types of one CPU architecture, since a node group has one AMI (got {detail})")
        return types

    @property
    def architecture(self) -> str:
        return catalog.instance_architecture(self.instance_types[0])

    @property
    def ami_type(self) -> str:
        """``AL2023_x86_64_STANDARD``, or ``AL2023_ARM_64_STANDARD`` for Graviton instance types."""
        return catalog.SYSTEM_AMI_TYPES[self.architecture]
