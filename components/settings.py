"""Typed settings for a GPU-ready EKS cluster, parsed and validated before any resource exists.

The stack configuration (``gpu-eks:*`` keys in stacks/Pulumi.<stack>.yaml) is parsed into the
frozen pydantic models below. Parsing collects *every* problem at once; each becomes one line
naming the config key, the value received and what is expected. ``load_settings`` raises
``ConfigError`` (plain Python, for the CLI and tests); ``settings_from_pulumi_config`` turns that
into ``pulumi.RunError``, which the Pulumi CLI prints without a traceback.

Every default is written next to its field and repeated in the README's configuration reference.
"""

from __future__ import annotations

import inspect
import ipaddress
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from . import catalog, chart, placement

#: The Pulumi config namespace of this library (the project name in Pulumi.yaml).
CONFIG_NAMESPACE = "gpu-eks"


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    key: str
    received: Any
    expected: str

    def __str__(self) -> str:
        if self.received is _MISSING:
            return f"{self.key}: received nothing; expected {self.expected}"
        return f"{self.key}: received {_show(self.received)}; expected {self.expected}"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


#: How a value not known until deployment (a ``pulumi.Output``) appears in a message: never its
#: ``__str__``, which is Pulumi's "Calling __str__ on an Output[T] is not supported" text.
UNRESOLVED = "<unresolved Output>"


def _is_unresolved(value: Any) -> bool:
    """A ``pulumi.Output`` or another awaitable (the non-plain forms of ``pulumi.Input``)."""
    # Without importing pulumi (preflight and the CLI load settings without the Pulumi SDK):
    # if the program never imported it, no value can be an Output.
    pulumi = sys.modules.get("pulumi")
    if pulumi is not None and isinstance(value, pulumi.Output):
        return True
    return inspect.isawaitable(value)


def is_plain(value: Any) -> bool:
    """True when ``value`` (and, for lists, tuples and dicts, everything inside it) is known now.

    Validation rules for values that may come from other resources (``network.vpcId``, subnet
    ids) run on plain values only; an Output is passed through and checked on resolution
    (``resolve_network``).
    """
    if _is_unresolved(value):
        return False
    if isinstance(value, (list, tuple)):
        return all(is_plain(v) for v in value)
    if isinstance(value, Mapping):
        return all(is_plain(k) and is_plain(v) for k, v in value.items())
    return True


def _displayable(value: Any) -> Any:
    if _is_unresolved(value):
        return UNRESOLVED
    if isinstance(value, (list, tuple)):
        return [_displayable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _displayable(v) for k, v in value.items()}
    return value


def _show(value: Any) -> str:
    value = _displayable(value)
    if value == UNRESOLVED:
        return UNRESOLVED
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


class KeyedProblems(ValueError):
    """Raised inside a validator to report problems at precise keys *below* the validated value.

    A cross-field rule (a profile collision, a duplicate taint) belongs to one element, not to
    the whole list or config: each entry is (path relative to the validated value, in the stack
    file's spelling, e.g. ``("gpuNodeGroups", 1, "timeSlicing", "profile")``; the value received
    there; what is expected). ``_problems`` expands them into one Problem each.
    """

    def __init__(self, problems: list[tuple[tuple[str | int, ...], Any, str]]):
        self.problems = problems
        super().__init__("; ".join(expected for _, _, expected in problems))


class ConfigError(ValueError):
    """The stack configuration is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(self.report())

    def report(self) -> str:
        n = len(self.problems)
        lines = [f"invalid stack configuration ({n} problem{'s' if n != 1 else ''}):"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------------


def _check(problem: str | None, value: Any) -> Any:
    if problem:
        raise ValueError(problem)
    return value


def _kubelet_label_key(key: str) -> str:
    return _check(placement.kubelet_label_problem(key), key)


def _label_value(value: str) -> str:
    return _check(placement.label_value_problem(value), value)


def _qualified_name(key: str) -> str:
    return _check(placement.qualified_name_problem(key), key)


def _dns_label(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?", value):
        return _check("1-40 lower-case alphanumerics or '-', alphanumeric at both ends", value)
    return value


def _cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError("a CIDR block such as 203.0.113.0/24 (host bits zero)") from None
    return value


def _principal_arn(value: str) -> str:
    if not re.fullmatch(r"arn:aws[a-z-]*:(iam|sts)::\d{12}:(role|user|assumed-role)/[\w+=,.@/-]+", value):
        raise ValueError("an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin")
    return value


def access_entry_key(principal_arn: str) -> str:
    """A stable key for a principal's EKS access entry: ``role-Admin`` for ``arn:...:role/Admin``."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", principal_arn.split(":")[-1]).strip("-")


def _plain_only(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate a plain value; pass an unresolved one (a ``pulumi.Output``) through untouched."""
    return value if _is_unresolved(value) else handler(value)


Count = Annotated[int, Field(strict=True)]
#: A string that may also be a ``pulumi.Output[str]`` (from another resource or a StackReference).
InputStr = Annotated[str, WrapValidator(_plain_only)]
#: A list of such strings, or an Output of the whole list.
InputStrList = Annotated[list[InputStr], WrapValidator(_plain_only)]
LabelKey = Annotated[str, AfterValidator(_kubelet_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
QualifiedName = Annotated[str, AfterValidator(_qualified_name)]
Cidr = Annotated[str, AfterValidator(_cidr)]
PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
ResourceName = Annotated[str, AfterValidator(_dns_label)]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


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
        problems: list[tuple[tuple[str | int, ...], Any, str]] = []
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
    problems: list[tuple[tuple[str | int, ...], Any, str]] = []
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
    placement.ACCELERATOR_LABEL,
    placement.GPU_COUNT_LABEL,
    placement.NODE_GROUP_LABEL,
    placement.DEVICE_PLUGIN_CONFIG_LABEL,
)


class GpuNodeGroupSettings(_Model):
    """One EKS managed node group on the AL2023 NVIDIA AMI."""

    name: ResourceName
    instance_types: Annotated[list[str], Field(min_length=1), AfterValidator(_known_gpu_types)] = ["g4dn.xlarge"]
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
    ami_release_version: str | None = None

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

    instance_types: Annotated[list[str], Field(min_length=1)] = ["m6i.large"]
    scaling: Scaling = Scaling(min_size=2, desired_size=2, max_size=3)
    disk_size_gib: Count = Field(default=50, ge=20, le=16384, alias="diskSizeGiB")
    ami_release_version: str | None = None

    @field_validator("instance_types")
    @classmethod
    def _instance_type_syntax(cls, types: list[str]) -> list[str]:
        bad = [t for t in types if not catalog.INSTANCE_TYPE_PATTERN.match(t)]
        if bad:
            raise ValueError(f"EC2 instance type names such as m6i.large (got {bad})")
        return types


class NetworkSettings(_Model):
    """Use an existing VPC (``vpcId`` + subnets) or create one (the other keys).

    ``vpcId`` and the subnet ids (each id, or a whole list) may be ``pulumi.Output`` values, e.g.
    from the importer's own VPC or a StackReference: rules run on the plain values now, and on the
    rest when they resolve (``resolve_network``). Rules on these ids must skip non-plain values
    (``is_plain``).
    """

    vpc_id: InputStr | None = None
    private_subnet_ids: InputStrList = []
    public_subnet_ids: InputStrList = []
    cidr_block: Cidr = "10.0.0.0/16"
    availability_zone_count: Count = Field(default=2, ge=2, le=6)
    nat_gateways: Literal["Single", "OnePerAz"] = "Single"

    @model_validator(mode="after")
    def _existing_vpc_has_subnets(self) -> NetworkSettings:
        # An Output is "given" (it is not None); a whole-list Output is counted on resolution.
        has_vpc = self.vpc_id is not None and self.vpc_id != ""
        private, public = self.private_subnet_ids, self.public_subnet_ids
        if has_vpc and not _is_unresolved(private) and len(private) < 2:
            raise ValueError("with vpcId, privateSubnetIds naming at least 2 subnets (EKS needs two zones)")
        given = [ids for ids in (private, public) if _is_unresolved(ids) or len(ids) > 0]
        if not has_vpc and given:
            raise ValueError("subnet ids only together with vpcId")
        return self

    @property
    def existing_vpc(self) -> bool:
        """True when the cluster goes into an existing VPC (``vpcId`` given, plain or Output)."""
        return self.vpc_id is not None and self.vpc_id != ""


#: The network keys whose values may be Outputs, in config-key form.
NETWORK_INPUT_KEYS = ("vpcId", "privateSubnetIds", "publicSubnetIds")


def check_resolved_network(resolved: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> NetworkSettings:
    """Validate ``network`` once its Outputs resolved (``resolved`` in config-key form).

    The same model, so the same rules, as at load time; raises ConfigError naming
    ``<namespace>:network.<key>``. Called inside ``Output.apply`` (by ``resolve_network``).
    """
    try:
        return NetworkSettings.model_validate(dict(resolved))
    except ValidationError as err:
        raise ConfigError([_nested(p, namespace, "network") for p in _problems(err, namespace)]) from None


def _nested(problem: Problem, namespace: str, section: str) -> Problem:
    """``gpu-eks:vpcId`` → ``gpu-eks:network.vpcId`` for a problem found validating a section alone."""
    rest = problem.key.removeprefix(namespace).removeprefix(":")
    key = f"{namespace}:{section}" + (f".{rest}" if rest else "")
    return Problem(key=key, received=problem.received, expected=problem.expected)


_LOG_TYPES = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
#: Every EKS control-plane log type (all are enabled by default).
CONTROL_PLANE_LOG_TYPES: tuple[str, ...] = get_args(_LOG_TYPES)


class GpuOperatorSettings(_Model):
    #: Allow a chart version this library was not validated against (its values paths unchecked).
    #: Declared before chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = False
    chart_version: str = chart.DEFAULT_CHART_VERSION
    namespace: ResourceName = "gpu-operator"
    #: ``cdi.enabled``. Pinned false: with the operator's toolkit disabled, the AMI's own NVIDIA
    #: runtime injects devices from NVIDIA_VISIBLE_DEVICES. The chart default changed (false in
    #: v25.3, true from v25.10), so leaving it unset would change behaviour on upgrade.
    cdi_enabled: bool = False

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        if value in chart.SUPPORTED_CHART_VERSIONS:
            return value
        if not info.data.get("allow_unvalidated_chart_version"):
            raise ValueError(
                f"one of {', '.join(chart.SUPPORTED_CHART_VERSIONS)} (the versions this library is "
                "validated against), or set allowUnvalidatedChartVersion: true"
            )
        if not re.fullmatch(r"v\d+\.\d+\.\d+([-+][\w.]+)?", value):
            raise ValueError("a chart version such as v26.7.0")
        return value


_GO_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def _duration_seconds(value: str) -> int | None:
    """Seconds of a Go duration written with h/m/s units (``10m``, ``1h30m``, ``90s``), or None."""
    m = _GO_DURATION.match(value)
    if not value or not m:
        return None
    h, mi, sec = (int(x) if x else 0 for x in m.groups())
    return h * 3600 + mi * 60 + sec


def _scale_down_time(value: str) -> str:
    seconds = _duration_seconds(value)
    if seconds is None or not 60 <= seconds <= 86400:
        raise ValueError("a duration such as 10m or 1h30m (units h, m, s) from 1m to 24h")
    return value


class AutoscalerSettings(_Model):
    """The Cluster Autoscaler (kubernetes/autoscaler) that scales the GPU node groups."""

    #: Install it. Default (None): when any GPU group's minSize < maxSize.
    enabled: bool | None = None
    #: Allow a chart version this library was not validated against. Declared before
    #: chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = False
    chart_version: str = catalog.DEFAULT_AUTOSCALER_CHART_VERSION
    #: ``--scale-down-unneeded-time``: how long a node (a GPU node costs ~$0.53/h) may sit
    #: unneeded before CA removes it. CA's own default is 10m.
    scale_down_unneeded_time: Annotated[str, AfterValidator(_scale_down_time)] = "10m"

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        if value in catalog.AUTOSCALER_CHART_VERSIONS:
            return value
        if not info.data.get("allow_unvalidated_chart_version"):
            raise ValueError(
                f"one of {', '.join(catalog.AUTOSCALER_CHART_VERSIONS)} (the cluster-autoscaler chart "
                "versions this library is validated against), or set allowUnvalidatedChartVersion: true"
            )
        if not re.fullmatch(r"\d+\.\d+\.\d+([-+][\w.]+)?", value):
            raise ValueError("a chart version such as 9.59.0")
        return value


class VerificationSettings(_Model):
    image: str = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    namespace: ResourceName = "gpu-timeslicing-check"


def _non_empty(groups: tuple[GpuNodeGroupSettings, ...]) -> tuple[GpuNodeGroupSettings, ...]:
    if not groups:
        raise ValueError("at least one GPU node group")
    return groups


def _default_gpu_groups() -> tuple[GpuNodeGroupSettings, ...]:
    return (GpuNodeGroupSettings(name="gpu"),)


class Settings(_Model):
    """Everything a GPU-ready EKS cluster needs, validated."""

    #: EKS cluster name. Default: ``<project>-<stack>`` (filled in by the Pulumi loader).
    cluster_name: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[0-9A-Za-z][A-Za-z0-9\-_]*$")]
    kubernetes_version: str = catalog.DEFAULT_KUBERNETES_VERSION
    #: IAM principals given cluster-admin through EKS access entries.
    admin_principal_arns: list[PrincipalArn] = []
    #: CIDRs allowed to reach the public API endpoint; empty means no public endpoint at all.
    endpoint_public_access_cidrs: list[Cidr] = []
    control_plane_log_types: list[_LOG_TYPES] = list(CONTROL_PLANE_LOG_TYPES)
    #: Protect the cluster: EKS deletion protection plus Pulumi ``protect``.
    deletion_protection: bool = False
    network: NetworkSettings = NetworkSettings()
    system_node_group: SystemNodeGroupSettings = SystemNodeGroupSettings()
    gpu_node_groups: Annotated[tuple[GpuNodeGroupSettings, ...], AfterValidator(_non_empty)] = Field(
        default_factory=_default_gpu_groups
    )
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    #: Run the time-slicing verification Jobs (see README, "Cluster Autoscaler and scale from zero").
    verify_time_slicing: bool = False
    verification: VerificationSettings = VerificationSettings()
    #: Run the preflight checks (``python -m components preflight``) before declaring resources.
    preflight: bool = False
    #: AWS tags on everything taggable; a value may be a ``pulumi.Output[str]``.
    tags: dict[str, InputStr] = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        m = catalog.KUBERNETES_VERSION_PATTERN.match(value)
        oldest = int(catalog.OLDEST_KUBERNETES_VERSION.split(".")[1])
        if not m or int(m.group(1)) < oldest:
            raise ValueError(
                f"a Kubernetes minor version such as {catalog.DEFAULT_KUBERNETES_VERSION!r}, "
                f'{catalog.OLDEST_KUBERNETES_VERSION} or newer (quote it in YAML: "1.30", not 1.30)'
            )
        return value

    @field_validator("admin_principal_arns")
    @classmethod
    def _distinct_principals(cls, arns: list[str]) -> list[str]:
        keys = [access_entry_key(a) for a in arns]
        clash = sorted({k for k in keys if keys.count(k) > 1})
        if clash:
            raise ValueError(f"principals with distinct role/user paths (each gets an access entry; repeated: {clash})")
        return arns

    @model_validator(mode="after")
    def _consistent_groups(self) -> Settings:
        problems = gpu_groups_problems(self.gpu_node_groups, self.verify_time_slicing)
        if problems:
            raise KeyedProblems(problems)
        return self

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``, defaulting to: some GPU group can change size."""
        if self.autoscaler.enabled is not None:
            return self.autoscaler.enabled
        return any(g.scaling.min_size < g.scaling.max_size for g in self.gpu_node_groups)


def autoscaler_problems(settings: Settings, namespace: str = CONFIG_NAMESPACE) -> list[Problem]:
    """What the Cluster Autoscaler could not handle (checked after the models parse)."""
    if not settings.autoscaler_enabled:
        return []
    problems = []
    if settings.kubernetes_version not in catalog.AUTOSCALER_IMAGE_TAGS:
        problems.append(
            Problem(
                key=f"{namespace}:kubernetesVersion",
                received=settings.kubernetes_version,
                expected=f"one of {', '.join(catalog.AUTOSCALER_IMAGE_TAGS)} while the Cluster Autoscaler is "
                "enabled (its release must match the cluster's minor), or autoscaler.enabled: false",
            )
        )
    from . import autoscaling  # it builds on these models

    for i, group in enumerate(settings.gpu_node_groups):
        count = len(autoscaling.asg_tags(group, settings.cluster_name)) + catalog.EKS_OWN_ASG_TAGS
        if count > catalog.ASG_TAG_LIMIT:
            problems.append(
                Problem(
                    key=f"{namespace}:gpuNodeGroups[{i}].labels",
                    received=group.labels,
                    expected=f"fewer labels and taints: the group's ASG would need {count} tags (the Cluster "
                    f"Autoscaler's template tags plus EKS's own), EC2 Auto Scaling allows {catalog.ASG_TAG_LIMIT}",
                )
            )
        # Every GPU node carries k8s.amazonaws.com/accelerator (nodeconfig.accelerator_labels); CA
        # holds such a node as "GPU not ready" until it advertises nvidia.com/gpu, which a renamed
        # profile never does (processors/customresources/gpu_processor.go, cluster-autoscaler-1.35.2):
        # CA would count the node unready for good and eventually remove it.
        if group.time_slicing.rename_by_default:
            problems.append(
                Problem(
                    key=f"{namespace}:gpuNodeGroups[{i}].timeSlicing.renameByDefault",
                    received=True,
                    expected="false while the Cluster Autoscaler is enabled: CA treats a GPU node without "
                    "allocatable nvidia.com/gpu as not ready (a renamed node advertises only nvidia.com/gpu.shared)",
                )
            )
        # One ASG tag k8s.io/cluster-autoscaler/node-template/taint/<key> holds one value:effect
        # (cloudprovider/aws/aws_manager.go extractTaintsFromAsg, cluster-autoscaler-1.35.2).
        keys = [t.key for t in group.taints]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            problems.append(
                Problem(
                    key=f"{namespace}:gpuNodeGroups[{i}].taints",
                    received=[t.model_dump() for t in group.taints],
                    expected=f"one taint per key while the Cluster Autoscaler is enabled (repeated: {repeated}): "
                    "an ASG taint tag carries one value:effect per key",
                )
            )
    return problems


KeyedProblem = tuple[tuple[str | int, ...], Any, str]


def gpu_groups_problems(
    groups: Iterable[GpuNodeGroupSettings], verify_time_slicing: bool = False
) -> list[KeyedProblem]:
    """Why GPU node groups cannot share one cluster (one gpu-operator): keyed problems, or [].

    * Names are unique (resource names, the node-group label).
    * One profile name means one set of timeSlicing settings: it is one key of the device-plugin
      ConfigMap and the value of the node label the config-manager reads.
    * One migStrategy: the chart's ``mig.strategy`` is one value for the whole cluster.
    * With the verification on, a node can run the pods its advertised shares ask for.

    Used by Settings, GpuCapacitySettings and GpuOperator (which may cover groups declared elsewhere).
    """
    groups = list(groups)
    problems: list[KeyedProblem] = []
    first_name: dict[str, int] = {}
    for i, g in enumerate(groups):
        j = first_name.setdefault(g.name, i)
        if j != i:
            problems.append(
                (("gpuNodeGroups", i, "name"), g.name, f"a name not used by gpuNodeGroups[{j}]: names are unique")
            )
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        j = first.setdefault(g.profile_name, i)
        other = groups[j].time_slicing
        if other.model_dump(exclude={"profile"}) != g.time_slicing.model_dump(exclude={"profile"}):
            problems.append(
                (
                    ("gpuNodeGroups", i, "timeSlicing", "profile"),
                    g.profile_name,
                    f"a profile name not used by gpuNodeGroups[{j}] ({groups[j].name}), "
                    "whose timeSlicing settings differ: one set of settings per profile name (it is "
                    "one key of the device-plugin ConfigMap)",
                )
            )
    strategies = {g.mig_strategy for g in groups}
    if len(strategies) > 1:  # the chart's mig.strategy is one value for the whole cluster
        problems += [
            (("gpuNodeGroups", i, "migStrategy"), g.mig_strategy, "the same migStrategy in every GPU node group")
            for i, g in enumerate(groups)
        ]
    if verify_time_slicing:
        problems += [
            (
                ("gpuNodeGroups", i, "timeSlicing", "replicas"),
                g.time_slicing.replicas,
                _capacity_message(g, "at most") + " (the verification packs that many pods "
                "on one node, so it could never succeed)",
            )
            for i, g in enumerate(groups)
            if g.advertised_gpus_per_node > g.usable_pod_slots
        ]
    return problems


def describe_problems(problems: Iterable[KeyedProblem]) -> str:
    """Keyed problems as one line each: ``gpuNodeGroups[1].name: expected ...``."""
    return "; ".join(f"{_key_of(path, '').lstrip(':')}: {expected}" for path, _, expected in problems)


class GpuCapacitySettings(_Model):
    """GPU capacity for an existing EKS cluster (``GpuCapacity``): the GPU keys of ``Settings``.

    The same keys, defaults and rules as the stack configuration; ``kubernetesVersion`` is the
    existing cluster's version (EKS AMI releases are per Kubernetes version). ``gpuNodeGroups`` may
    be empty when every group is declared by the caller (``GpuCapacityArgs.node_groups``).
    """

    kubernetes_version: str = catalog.DEFAULT_KUBERNETES_VERSION
    gpu_node_groups: tuple[GpuNodeGroupSettings, ...] = Field(default_factory=_default_gpu_groups)
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    verify_time_slicing: bool = False
    verification: VerificationSettings = VerificationSettings()
    #: A Cluster Autoscaler for these groups. Off unless ``enabled: true``: an existing cluster
    #: may run its own (two autoscalers resizing the same groups fight).
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    tags: dict[str, InputStr] = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return Settings._kubernetes_version(value)  # one rule for both models

    @model_validator(mode="after")
    def _consistent_groups(self) -> GpuCapacitySettings:
        problems = gpu_groups_problems(self.gpu_node_groups, self.verify_time_slicing)
        if problems:
            raise KeyedProblems(problems)
        return self


def _capacity_message(g: GpuNodeGroupSettings, prefix: str) -> str:
    slots = g.usable_pod_slots
    return (
        f"{prefix} {slots // g.gpus_per_node} for {', '.join(g.instance_types)}: {g.gpus_per_node} GPU(s) x "
        f"{g.time_slicing.replicas} = {g.advertised_gpus_per_node} advertised, but a node runs at most "
        f"{slots} pods besides its {len(catalog.GPU_NODE_DAEMONSET_PODS)} DaemonSet pods (max pods "
        f"{min(catalog.GPU_INSTANCE_TYPES[t].max_pods for t in g.instance_types)} with the VPC CNI defaults)"
    )


# ---------------------------------------------------------------------------------------------
# Warnings: legal settings that are risky (the program logs them, render prints them)
# ---------------------------------------------------------------------------------------------

#: A rule returns one Problem per risky value it finds (same key/received/expected form as errors).
WarningRule = Callable[[Settings], Iterable[Problem]]
_WARNING_RULES: list[WarningRule] = []


def warning_rule(rule: WarningRule) -> WarningRule:
    """Register ``rule`` (a decorator): every rule runs in ``settings_warnings``."""
    _WARNING_RULES.append(rule)
    return rule


def settings_warnings(settings: Settings) -> list[Problem]:
    """Every warning about ``settings``, in rule order. Warnings never stop a deployment."""
    return [problem for rule in _WARNING_RULES for problem in rule(settings)]


@warning_rule
def _advertised_slots_exceed_pod_capacity(settings: Settings) -> Iterable[Problem]:
    # Shares the node cannot run pods for are advertised but never usable (the scheduler sees
    # free nvidia.com/gpu and still cannot place the pod: "Too many pods"). With the
    # verification on, Settings reports this as an error instead.
    if settings.verify_time_slicing:
        return
    for i, g in enumerate(settings.gpu_node_groups):
        if g.advertised_gpus_per_node > g.usable_pod_slots:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].timeSlicing.replicas",
                received=g.time_slicing.replicas,
                expected=_capacity_message(g, "at most"),
            )


@warning_rule
def _groups_nobody_scales(settings: Settings) -> Iterable[Problem]:
    """Without the Cluster Autoscaler nothing changes a node group's size after creation
    (desiredSize is in ignore_changes), so minSize < maxSize is unused capacity on paper and a
    group created at desiredSize 0 never gets a node."""
    if settings.autoscaler_enabled:
        return
    for i, g in enumerate(settings.gpu_node_groups):
        if g.scaling.min_size < g.scaling.max_size or g.scaling.desired_size == 0:
            yield Problem(
                key=f"{CONFIG_NAMESPACE}:gpuNodeGroups[{i}].scaling",
                received=g.scaling.model_dump(by_alias=True),
                expected="autoscaler.enabled: true, or minSize = desiredSize = maxSize > 0: with the "
                "Cluster Autoscaler disabled nothing resizes the group after creation",
            )


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def _key_of(loc: tuple[Any, ...], namespace: str) -> str:
    out = f"{namespace}:" if loc else namespace
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            continue  # pydantic marks a dict key error as (..., key, "[key]")
        else:
            out += ("" if i == 0 else ".") + str(part)
    return out


def _problems(err: ValidationError, namespace: str) -> list[Problem]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        keyed = e.get("ctx", {}).get("error")
        if isinstance(keyed, KeyedProblems):
            problems += [Problem(_key_of(loc + sub, namespace), got, want) for sub, got, want in keyed.problems]
            continue
        msg: str = e["msg"]
        expected = msg.removeprefix("Value error, ").removeprefix("Input should be ")
        received: Any = e.get("input", _MISSING)
        if e["type"] == "missing":
            received, expected = _MISSING, "a value"
        elif e["type"] == "extra_forbidden":
            expected = "no such key (a typo? see the README's configuration reference)"
        elif e["type"].startswith(("greater", "less")):
            expected = "a value " + expected
        problems.append(Problem(key=_key_of(loc, namespace), received=received, expected=expected))
    return problems


def load_settings(raw: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> Settings:
    """Parse ``raw`` (config keys without the namespace, values already decoded) into Settings.

    Raises ConfigError listing every problem.
    """
    try:
        settings = Settings.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(_problems(err, namespace)) from None
    problems = autoscaler_problems(settings, namespace)
    if problems:
        raise ConfigError(problems)
    return settings


def load_capacity_settings(raw: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> GpuCapacitySettings:
    """``GpuCapacitySettings`` from the GPU keys of the stack configuration (``kubernetesVersion``,
    ``gpuNodeGroups``, ``gpuOperator``, ``verifyTimeSlicing``, ``verification``, ``tags``).

    Raises ConfigError listing every problem.
    """
    try:
        return GpuCapacitySettings.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(_problems(err, namespace)) from None


def decode_config_value(value: Any) -> Any:
    """Pulumi hands structured config values (lists, maps) to programs as JSON strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def settings_from_config(config: Mapping[str, Any], project: str, stack: str) -> Settings:
    """Settings from a full config map as the Pulumi CLI passes it (``gpu-eks:key`` → string).

    Keys of other namespaces (``aws:region``, ...) are ignored. Raises ConfigError.
    """
    prefix = f"{CONFIG_NAMESPACE}:"
    raw = {k[len(prefix) :]: decode_config_value(v) for k, v in config.items() if k.startswith(prefix)}
    raw.setdefault("clusterName", f"{project}-{stack}")
    return load_settings(raw)


def settings_from_pulumi_config() -> Settings:
    """Settings from the running Pulumi program's config; invalid config → ``pulumi.RunError``."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    # The CLI passes config in PULUMI_CONFIG; tests and mocks set it with set_all_config.
    config: dict[str, Any] = dict(runtime_config.get_config_env())
    config.update(runtime_config.CONFIG.get())
    try:
        return settings_from_config(config, pulumi.get_project(), pulumi.get_stack())
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None
