"""Typed settings for a GPU-ready EKS cluster, parsed and validated before any resource exists.

The stack configuration (``gpu-eks:*`` keys in stacks/Pulumi.<stack>.yaml) is parsed into the
frozen pydantic models below. Parsing collects *every* problem at once; each becomes one line
naming the config key, the value received and what is expected. ``load_settings`` raises
``ConfigError`` (plain Python, for the CLI and tests); ``settings_from_pulumi_config`` turns that
into ``pulumi.RunError``, which the Pulumi CLI prints without a traceback.

Every default is written next to its field and repeated in the README's configuration reference.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
import ipaddress
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
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


#: One problem below a validated value: (relative key path, value received, what is expected).
KeyedProblem = tuple[tuple[str | int, ...], Any, str]


class KeyedProblems(ValueError):
    """Raised inside a validator to report problems at precise keys *below* the validated value.

    A cross-field rule (a profile collision, a duplicate taint) belongs to one element, not to
    the whole list or config: each entry is (path relative to the validated value, in the stack
    file's spelling, e.g. ``("gpuNodeGroups", 1, "timeSlicing", "profile")``; the value received
    there; what is expected). ``_problems`` expands them into one Problem each.
    """

    def __init__(self, problems: list[KeyedProblem]):
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


def _repeated(items: Sequence[Any]) -> list[int]:
    """Indexes of the items that repeat an earlier one."""
    seen: list[Any] = []
    out = []
    for i, item in enumerate(items):
        if item in seen:
            out.append(i)
        seen.append(item)
    return out


def _unique(items: list[Any]) -> list[Any]:
    """A list whose duplicates are meaningless: the same value twice is a mistake."""
    repeated = sorted({json.dumps(items[i], default=str) for i in _repeated(items)})
    if repeated:
        raise ValueError(f"each value once (repeated: {', '.join(repeated)})")
    return items


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
    # A bare address (203.0.113.7) would parse as a /32 network: EKS publicAccessCidrs and the VPC
    # API take CIDR blocks, so the prefix length must be written.
    if "/" not in value:
        raise ValueError(f"a CIDR block such as 203.0.113.0/24 (a bare address: write {value}/32)")
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError("a CIDR block such as 203.0.113.0/24 (host bits zero)") from None
    if network.version != 4:
        # botocore eks VpcConfigRequest.publicAccessCidrs: "You can't add IPv6 CIDR blocks to IPv4
        # clusters"; the clusters this library creates are IPv4.
        raise ValueError("an IPv4 CIDR block such as 203.0.113.0/24 (the cluster is IPv4)")
    return value


#: VPC IPv4 CIDR blocks are /16 to /28 (Amazon VPC User Guide, "VPC CIDR blocks": "The allowed block
#: size is between a /16 netmask (65,536 IP addresses) and /28 netmask (16 IP addresses)"); subnets
#: likewise no smaller than /28.
VPC_NETMASK_RANGE = (16, 28)
SMALLEST_SUBNET_NETMASK = 28


def created_subnet_netmask(vpc_netmask: int, availability_zone_count: int) -> int:
    """The netmask of each subnet awsx carves from the VPC (SubnetAllocationStrategy AUTO, our two
    subnet specs without cidrMask): one block per zone, ceil(log2(zones)) bits, then one bit more
    for the private + public pair (pulumi-awsx 3.x awsx/ec2/subnetDistributorNew.ts,
    ``getSubnetSpecs``: ``azBitmask = vpc + newBits(azCount)``, ``subnet = azBitmask + newBits(2)``)."""
    return vpc_netmask + (availability_zone_count - 1).bit_length() + 1


#: Tags: EKS TagMap and IAM tag lists hold at most 50 tags, keys 1-128 and values up to 256
#: characters (botocore ``eks`` 2017-11-01 TagMap/TagKey/TagValue, ``iam`` 2010-05-08
#: tagListType/tagKeyType/tagValueType); the ``aws:`` prefix is reserved for AWS (AWS General
#: Reference, "Tagging AWS resources": "You can't edit or delete tag keys with the aws: prefix").
MAX_TAGS_PER_RESOURCE = 50
TAG_KEY_MAX_LENGTH = 128
TAG_VALUE_MAX_LENGTH = 256
#: Room kept for the tags the library adds itself (``gpu-eks/cluster``, ``gpu-eks/node-group``,
#: ``Name``, the Cluster Autoscaler's ``k8s.io/cluster-autoscaler/...`` tags of a node group).
LIBRARY_TAG_ALLOWANCE = 10
MAX_USER_TAGS = MAX_TAGS_PER_RESOURCE - LIBRARY_TAG_ALLOWANCE
#: Characters: the EKS user guide ("Tag your Amazon EKS resources", tag restrictions) allows letters,
#: numbers, spaces and ``+ - = . _ : / @``; the node IAM role is tagged too, with the same rule
#: (botocore ``iam`` tagKeyType pattern ``[\p{L}\p{Z}\p{N}_.:/=+\-@]+``), the strictest of the APIs tagged.
_TAG_PUNCTUATION = frozenset("_.:/=+-@")


def _tag_characters_ok(text: str) -> bool:
    return all(c in _TAG_PUNCTUATION or unicodedata.category(c)[0] in "LZN" for c in text)


def _tag_key(key: str) -> str:
    if not key:
        raise ValueError("tag keys of 1 to 128 characters")
    if key.lower().startswith("aws:"):
        raise ValueError("no tag key starting with 'aws:' (reserved for AWS)")
    if len(key) > TAG_KEY_MAX_LENGTH:
        raise ValueError(f"tag keys of at most {TAG_KEY_MAX_LENGTH} characters (got {len(key)})")
    if not _tag_characters_ok(key):
        raise ValueError("tag keys of letters, digits, spaces and _ . : / = + - @ (the IAM tag rule)")
    return key


def _tag_value(value: str) -> str:
    if len(value) > TAG_VALUE_MAX_LENGTH:
        raise ValueError(f"tag values of at most {TAG_VALUE_MAX_LENGTH} characters (got {len(value)})")
    if not _tag_characters_ok(value):
        raise ValueError("tag values of letters, digits, spaces and _ . : / = + - @ (the IAM tag rule)")
    return value


def _tag_count(tags: dict[str, str]) -> dict[str, str]:
    if len(tags) > MAX_USER_TAGS:
        raise ValueError(
            f"at most {MAX_USER_TAGS} tags (got {len(tags)}): AWS allows {MAX_TAGS_PER_RESOURCE} per resource "
            f"and the library adds up to {LIBRARY_TAG_ALLOWANCE} of its own"
        )
    return tags


def ec2_id_problem(prefix: str, value: Any) -> str | None:
    """Why ``value`` is not an EC2 ``<prefix>-`` id (8 or 17 hex digits: EC2 API reference,
    "Resource IDs"), or None. Values that are not plain strings (Outputs) are not judged here."""
    if isinstance(value, str) and not re.fullmatch(rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})", value):
        return f"an id such as {prefix}-0123456789abcdef0"
    return None


def _ec2_id(prefix: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return _check(ec2_id_problem(prefix, value), value)

    return check


def _ami_release_version(value: str) -> str:
    if not catalog.AMI_RELEASE_VERSION_PATTERN.match(value):
        raise ValueError("an EKS AMI release version such as 1.35.0-20260115 (<kubernetes x.y.z>-<yyyymmdd>)")
    return value


def _system_instance_type(value: str) -> str:
    if not catalog.INSTANCE_TYPE_PATTERN.match(value):
        raise ValueError("EC2 instance type names such as m6i.large")
    if catalog.is_accelerated(value):
        raise ValueError(
            "a general-purpose instance type such as m6i.large: the system group runs cluster services "
            f"only, never GPU pods (it is untainted and has no NVIDIA AMI), so a {value} would waste its "
            "accelerator"
        )
    return value


#: IAM role and user ARNs (``arn:<partition>:iam::<account>:role|user/<path/>name``). EKS refuses
#: an STS session ARN (``arn:aws:sts::…:assumed-role/…``): botocore ``eks`` 2017-11-01,
#: CreateAccessEntryRequest.principalArn, "You can't use the STS session principal type with access
#: entries because this is a temporary principal for each session".
_PRINCIPAL_ARN = re.compile(r"arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):(role|user)/([\w+=,.@/-]+)")


def _principal_arn(value: str) -> str:
    if re.match(r"arn:[a-z-]+:sts::\d{12}:assumed-role/", value):
        raise ValueError(
            "an IAM role or user ARN; EKS access entries refuse STS assumed-role session ARNs: use the "
            "role's ARN, arn:aws:iam::<account>:role/<name>"
        )
    if not _PRINCIPAL_ARN.fullmatch(value):
        raise ValueError("an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin")
    return value


def _plain_access_entry_key(principal_arn: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", principal_arn.split(":")[-1]).strip("-")


def _plain_only(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate a plain value; pass an unresolved one (a ``pulumi.Output``) through untouched."""
    return value if _is_unresolved(value) else handler(value)


def access_entry_keys(principal_arns: Sequence[str]) -> dict[str, str]:
    """A stable key per principal ARN; pulumi-eks names each AccessEntry resource after its key.

    The key is ``role-Admin`` for ``arn:aws:iam::123456789012:role/Admin`` (the scheme of earlier
    releases, so existing entries keep their resource names). When two ARNs would share a key (the
    same role name in two accounts), the first listed keeps it and the later ones get their account
    in front, ``222222222222-role-Admin`` (and, should that still collide because two paths flatten
    alike, a short hash of the ARN at the end). Appending an ARN therefore never renames an existing
    entry; a rename would fail the update, because EKS keeps one access entry per principal and
    Pulumi creates the renamed entry before it deletes the old one (botocore ``eks``
    CreateAccessEntryRequest.principalArn: "You can't specify the same ARN in more than one access
    entry").
    """

    def with_account(arn: str) -> str:
        return f"{arn.split(':')[4]}-{_plain_access_entry_key(arn)}"

    def with_hash(arn: str) -> str:
        return f"{with_account(arn)}-{hashlib.sha256(arn.encode()).hexdigest()[:8]}"

    keys: dict[str, str] = {}
    for arn in dict.fromkeys(principal_arns):
        taken = set(keys.values())
        keys[arn] = next(k for k in (_plain_access_entry_key(arn), with_account(arn), with_hash(arn)) if k not in taken)
    return keys


def _image_reference(value: str) -> str:
    # The distribution reference grammar (distribution/reference, reference.go: name components
    # of lower-case alphanumerics and separators, an optional registry host[:port], then
    # ``:tag`` (at most 128 characters) and/or ``@sha256:<64 hex>``).
    component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    host = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d+)?/)?"
    pattern = rf"{host}{component}(?:/{component})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?"
    if not re.fullmatch(pattern, value) or len(value) > 255:
        raise ValueError("a container image reference such as nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0")
    return value


def _cluster_name(value: Any) -> Any:
    # botocore ``eks`` 2017-11-01 CreateClusterRequest.name: 1-100 characters, pattern
    # ``^[0-9A-Za-z][A-Za-z0-9\-_]*$``. Values that are not plain strings (a Pulumi Output from
    # another stack) are checked by EKS itself.
    if isinstance(value, str) and not re.fullmatch(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", value):
        raise ValueError(
            "1-100 letters, digits, '-' or '_', starting with a letter or digit (the EKS cluster name rule)"
        )
    return value


def supported_kubernetes_versions(today: Any) -> list[str]:
    """The versions EKS still creates clusters at on ``today`` (standard or extended support)."""
    return [v for v, cal in catalog.KUBERNETES_VERSIONS.items() if cal.status(today) != "UNSUPPORTED"]


def kubernetes_version_problem(value: str, today: Any) -> str | None:
    """Why EKS would not run ``value`` on ``today`` (the EKS version calendar in catalog.py), or None."""
    usable = ", ".join(supported_kubernetes_versions(today))
    m = catalog.KUBERNETES_VERSION_PATTERN.match(value)
    if not m:
        return f'a Kubernetes minor version, one of {usable} (quote it in YAML: "1.35", not 1.35)'
    calendar = catalog.KUBERNETES_VERSIONS.get(value)
    if calendar is None:
        newest = max(catalog.KUBERNETES_VERSIONS, key=lambda v: int(v.split(".")[1]))
        if int(m.group(1)) > int(newest.split(".")[1]):
            return (
                f"one of {usable}: {value} is newer than the EKS calendar this library knows "
                "(components/catalog.py KUBERNETES_VERSIONS); a new version needs a library release"
            )
        return f"one of {usable}: {value} has left EKS extended support, EKS no longer creates clusters at it"
    if calendar.status(today) == "UNSUPPORTED":
        return (
            f"one of {usable}: {value} left EKS extended support on {calendar.end_of_extended_support}, "
            "EKS no longer creates or runs clusters at it"
        )
    return None


#: Names of the children a GpuCluster ``<name>`` declares besides its GPU node groups, each
#: ``<name>-<child>`` with its own children named ``<name>-<child>-…`` (gpu_cluster.py builds the
#: names from these; a test checks every resource of a run against them).
CLUSTER_CHILD = "cluster"
OPERATOR_CHILD = "gpu-operator"
VERIFICATION_CHILD = "verify"
AUTOSCALER_CHILD = "autoscaler"
SYSTEM_SIDE_CHILDREN = (CLUSTER_CHILD, OPERATOR_CHILD, VERIFICATION_CHILD, AUTOSCALER_CHILD)
#: A node group ``<n>`` declares its launch template as ``<n>-lt`` (nodegroup.py).
LAUNCH_TEMPLATE_SUFFIX = "lt"


def reserved_group_name_problem(name: str) -> str | None:
    """A GPU group ``name`` gives resources named ``<component>-<name>``; it must not be (or start)
    the name of a system-side child, nor end like a launch template."""
    for child in SYSTEM_SIDE_CHILDREN:
        if name == child or name.startswith(f"{child}-"):
            return (
                f"a name that is not {child!r} and does not start with '{child}-': the cluster's own "
                f"resources are named <component>-{child}-… and the group's would read as theirs"
            )
    if name.endswith(f"-{LAUNCH_TEMPLATE_SUFFIX}"):
        return f"a name that does not end with '-{LAUNCH_TEMPLATE_SUFFIX}' (the suffix of launch templates)"
    return None


Count = Annotated[int, Field(strict=True)]
LabelKey = Annotated[str, AfterValidator(_kubelet_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
QualifiedName = Annotated[str, AfterValidator(_qualified_name)]
Cidr = Annotated[str, AfterValidator(_cidr)]
PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
ResourceName = Annotated[str, AfterValidator(_dns_label)]
TagKey = Annotated[str, AfterValidator(_tag_key)]
TagValue = Annotated[str, AfterValidator(_tag_value)]
AmiReleaseVersion = Annotated[str, AfterValidator(_ami_release_version)]
SystemInstanceType = Annotated[str, AfterValidator(_system_instance_type)]
VpcId = Annotated[str, AfterValidator(_ec2_id("vpc"))]
SubnetId = Annotated[str, AfterValidator(_ec2_id("subnet"))]
#: Values that may also come from another resource or a StackReference (``pulumi.Output``): the
#: plain ones are validated now, the others pass through (``_plain_only``) and are checked when
#: they resolve (``check_resolved_network``).
InputVpcId = Annotated[VpcId, WrapValidator(_plain_only)]
InputSubnetIdList = Annotated[list[Annotated[SubnetId, WrapValidator(_plain_only)]], WrapValidator(_plain_only)]
InputTagValue = Annotated[TagValue, WrapValidator(_plain_only)]
#: AWS tags the importer adds to every resource: keys and values by the AWS rules, a value may be a
#: ``pulumi.Output[str]``, at most ``MAX_USER_TAGS`` (room for the library's own).
Tags = Annotated[dict[TagKey, InputTagValue], AfterValidator(_tag_count)]
ImageReference = Annotated[str, AfterValidator(_image_reference)]


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
    placement.ACCELERATOR_LABEL,
    placement.GPU_COUNT_LABEL,
    placement.NODE_GROUP_LABEL,
    placement.DEVICE_PLUGIN_CONFIG_LABEL,
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


class NetworkSettings(_Model):
    """Use an existing VPC (``vpcId`` + subnets) or create one (the other keys).

    ``vpcId`` and the subnet ids (each id, or a whole list) may be ``pulumi.Output`` values, e.g.
    from the importer's own VPC or a StackReference: rules run on the plain values now, and on the
    rest when they resolve (``resolve_network``). Rules on these ids must skip non-plain values
    (``is_plain``).
    """

    vpc_id: InputVpcId | None = None
    private_subnet_ids: InputSubnetIdList = []
    public_subnet_ids: InputSubnetIdList = []
    cidr_block: Cidr = "10.0.0.0/16"
    availability_zone_count: Count = Field(default=2, ge=2, le=6)
    nat_gateways: Literal["Single", "OnePerAz"] = "Single"

    @model_validator(mode="after")
    def _consistent(self) -> NetworkSettings:
        findings: list[KeyedProblem] = []
        if self.existing_vpc:
            # Lists that are not plain (a Pulumi Output from another stack) are counted by EKS itself.
            if isinstance(self.private_subnet_ids, list) and len(self.private_subnet_ids) < 2:
                findings.append(
                    (
                        ("privateSubnetIds",),
                        list(self.private_subnet_ids),
                        "with vpcId, at least 2 subnets (EKS needs two zones)",
                    )
                )
            # These only shape a VPC the library creates; with vpcId they would be silently ignored.
            for field, key in (
                ("cidr_block", "cidrBlock"),
                ("availability_zone_count", "availabilityZoneCount"),
                ("nat_gateways", "natGateways"),
            ):
                if field in self.model_fields_set:
                    findings.append(
                        (
                            (key,),
                            getattr(self, field),
                            "no value with vpcId: it applies only to a VPC the library creates",
                        )
                    )
        else:
            for key, ids in (
                ("privateSubnetIds", self.private_subnet_ids),
                ("publicSubnetIds", self.public_subnet_ids),
            ):
                if _is_unresolved(ids) or len(ids) > 0:
                    shown = ids if _is_unresolved(ids) else list(ids)
                    findings.append(((key,), shown, "subnet ids only together with vpcId"))
            findings += self._vpc_cidr_findings()
        # A subnet is private or public, and listed once (EKS CreateCluster: subnetIds are a set).
        lists = (("privateSubnetIds", self.private_subnet_ids), ("publicSubnetIds", self.public_subnet_ids))
        seen: dict[str, str] = {}
        for key, i, subnet in [(k, i, x) for k, ids in lists if isinstance(ids, list) for i, x in enumerate(ids)]:
            if not isinstance(subnet, str):
                continue  # known only at deploy time
            if subnet in seen:
                findings.append(((key, i), subnet, f"each subnet once (already listed as {seen[subnet]})"))
            else:
                seen[subnet] = f"{key}[{i}]"
        if findings:
            raise KeyedProblems(findings)
        return self

    def _vpc_cidr_findings(self) -> list[KeyedProblem]:
        netmask = ipaddress.ip_network(self.cidr_block).prefixlen
        low, high = VPC_NETMASK_RANGE
        if not low <= netmask <= high:
            return [(("cidrBlock",), self.cidr_block, f"a netmask from /{low} to /{high} (the VPC limits)")]
        subnet = created_subnet_netmask(netmask, self.availability_zone_count)
        if subnet > SMALLEST_SUBNET_NETMASK:
            largest = SMALLEST_SUBNET_NETMASK - (subnet - netmask)
            return [
                (
                    ("cidrBlock",),
                    self.cidr_block,
                    f"a netmask of /{largest} or larger: {self.availability_zone_count} zones x (private + "
                    f"public) subnets would be /{subnet}, smaller than the /{SMALLEST_SUBNET_NETMASK} AWS allows",
                )
            ]
        return []

    @property
    def existing_vpc(self) -> bool:
        """True when the cluster goes into an existing VPC (``vpcId`` given, plain or Output)."""
        return self.vpc_id is not None and self.vpc_id != ""


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


#: Namespaces Kubernetes creates itself (Kubernetes docs, "Namespaces": initial namespaces). The
#: library declares its namespaces as objects, so one of these fails at create ("already exists").
#: kube-system would also put privileged operator pods beside the control-plane add-ons.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _own_namespace(value: str) -> str:
    if value in RESERVED_NAMESPACES:
        raise ValueError(
            f"a namespace of its own, not one Kubernetes creates ({', '.join(RESERVED_NAMESPACES)}): "
            "the library creates and labels it"
        )
    return value


OwnNamespace = Annotated[ResourceName, AfterValidator(_own_namespace)]


def _pinned_chart_version(value: str, info: ValidationInfo, validated: Iterable[str], what: str, example: str) -> str:
    """A Helm chart version: one of ``validated``, or (with ``allowUnvalidatedChartVersion``, a field
    declared before ``chartVersion`` so that ``info.data`` holds it) any version shaped like
    ``example`` (``v`` prefix or not, as the chart repository spells its versions)."""
    versions = list(validated)
    if value in versions:
        return value
    if not info.data.get("allow_unvalidated_chart_version"):
        raise ValueError(
            f"one of {', '.join(versions)} ({what} versions this library is validated against), or set "
            "allowUnvalidatedChartVersion: true"
        )
    prefix = "v" if example.startswith("v") else ""
    if not re.fullmatch(rf"{prefix}\d+\.\d+\.\d+([-+][\w.]+)?", value):
        raise ValueError(f"a chart version such as {example}")
    return value


class GpuOperatorSettings(_Model):
    #: Allow a chart version this library was not validated against (its values paths unchecked).
    #: Declared before chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = False
    chart_version: str = chart.DEFAULT_CHART_VERSION
    namespace: OwnNamespace = "gpu-operator"
    #: ``cdi.enabled``. Pinned false: with the operator's toolkit disabled, the AMI's own NVIDIA
    #: runtime injects devices from NVIDIA_VISIBLE_DEVICES. The chart default changed (false in
    #: v25.3, true from v25.10), so leaving it unset would change behaviour on upgrade.
    cdi_enabled: bool = False

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return _pinned_chart_version(value, info, chart.SUPPORTED_CHART_VERSIONS, "the", "v26.7.0")


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
        return _pinned_chart_version(
            value, info, catalog.AUTOSCALER_CHART_VERSIONS, "the cluster-autoscaler chart", "9.59.0"
        )


class VerificationSettings(_Model):
    image: ImageReference = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    namespace: OwnNamespace = "gpu-timeslicing-check"


def _non_empty(groups: tuple[GpuNodeGroupSettings, ...]) -> tuple[GpuNodeGroupSettings, ...]:
    if not groups:
        raise ValueError("at least one GPU node group")
    return groups


def _default_gpu_groups() -> tuple[GpuNodeGroupSettings, ...]:
    return (GpuNodeGroupSettings(name="gpu"),)


class Settings(_Model):
    """Everything a GPU-ready EKS cluster needs, validated."""

    #: EKS cluster name. Default: ``<project>-<stack>`` (filled in by the Pulumi loader).
    cluster_name: Annotated[str, AfterValidator(_cluster_name)]
    kubernetes_version: str = catalog.DEFAULT_KUBERNETES_VERSION
    #: IAM principals given cluster-admin through EKS access entries.
    admin_principal_arns: Annotated[list[PrincipalArn], AfterValidator(_unique)] = []
    #: CIDRs allowed to reach the public API endpoint; empty means no public endpoint at all.
    endpoint_public_access_cidrs: Annotated[list[Cidr], AfterValidator(_unique)] = []
    control_plane_log_types: Annotated[list[_LOG_TYPES], AfterValidator(_unique)] = list(CONTROL_PLANE_LOG_TYPES)
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
    #: Tags on every AWS resource the library creates (at most ``MAX_USER_TAGS``); a value may be
    #: a ``pulumi.Output[str]``.
    tags: Tags = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return _check(kubernetes_version_problem(value, catalog.today()), value)

    @model_validator(mode="after")
    def _consistent_groups(self) -> Settings:
        problems = gpu_groups_problems(self.gpu_node_groups, self.verify_time_slicing)
        minor = self.kubernetes_version.split(".")[1]
        pinned = [(("systemNodeGroup", "amiReleaseVersion"), self.system_node_group.ami_release_version)]
        pinned += [
            (("gpuNodeGroups", i, "amiReleaseVersion"), g.ami_release_version)
            for i, g in enumerate(self.gpu_node_groups)
        ]
        for loc, release in pinned:
            m = catalog.AMI_RELEASE_VERSION_PATTERN.match(release or "")
            if m and m.group(1) != minor:
                problems.append(
                    (
                        loc,
                        release,
                        f"an AMI release of Kubernetes {self.kubernetes_version} (1.{minor}.x-yyyymmdd): EKS "
                        "refuses a node group AMI of another minor than the cluster's",
                    )
                )
        if self.verify_time_slicing and self.verification.namespace == self.gpu_operator.namespace:
            problems.append(
                (
                    ("verification", "namespace"),
                    self.verification.namespace,
                    "a namespace other than gpuOperator.namespace: each component creates its namespace",
                )
            )
        if problems:
            raise KeyedProblems(problems)
        return self

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``, defaulting to: some GPU group can change size."""
        if self.autoscaler.enabled is not None:
            return self.autoscaler.enabled
        return any(g.scaling.min_size < g.scaling.max_size for g in self.gpu_node_groups)


def autoscaler_problems(settings: Settings | GpuCapacitySettings, namespace: str = CONFIG_NAMESPACE) -> list[Problem]:
    """What the Cluster Autoscaler could not handle (checked after the models parse), for a
    GpuCluster's settings and a GpuCapacity's alike."""
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
        # How many tags, not their values: any cluster name gives the same count.
        count = len(autoscaling.asg_tags(group, "cluster")) + catalog.EKS_OWN_ASG_TAGS
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
    first_of: dict[str, int] = {}
    for i, g in enumerate(groups):
        if g.name in first_of:
            problems.append(
                (("gpuNodeGroups", i, "name"), g.name, f"a name of its own (gpuNodeGroups[{first_of[g.name]}] has it)")
            )
        first_of.setdefault(g.name, i)
        reserved = reserved_group_name_problem(g.name)
        if reserved:
            problems.append((("gpuNodeGroups", i, "name"), g.name, reserved))
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
    tags: Tags = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return Settings._kubernetes_version(value)  # one rule for both models

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``: off unless set to true (see the field)."""
        return self.autoscaler.enabled is True

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


@warning_rule
def _public_endpoint_open_to_all(settings: Settings) -> Iterable[Problem]:
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
def _kubernetes_version_in_extended_support(settings: Settings) -> Iterable[Problem]:
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


def _expected(e: Mapping[str, Any]) -> str:
    """What the user should write, in this library's words, for one pydantic error."""
    kind: str = e["type"]
    ctx: Mapping[str, Any] = e.get("ctx") or {}
    plain = {
        "missing": "a value",
        "extra_forbidden": "no such key (a typo? see the README's configuration reference)",
        "int_type": "a whole number",
        "int_parsing": "a whole number",
        "int_from_float": "a whole number",
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "string_type": "a text value",
        "string_unicode": "a text value",
        "list_type": "a list",
        "tuple_type": "a list",
        "set_type": "a list",
        "dict_type": "a map of key: value",
        "mapping_type": "a map of key: value",
        "model_type": "a map of key: value",
        "model_attributes_type": "a map of key: value",
        "dataclass_type": "a map of key: value",
        "none_required": "no value",
    }
    if kind in plain:
        return plain[kind]
    if kind == "value_error":
        return str(e["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}"
    bounds = {
        "greater_than_equal": ("a number of at least {}", "ge"),
        "greater_than": ("a number greater than {}", "gt"),
        "less_than_equal": ("a number of at most {}", "le"),
        "less_than": ("a number less than {}", "lt"),
        "too_short": ("at least {} item(s)", "min_length"),
        "too_long": ("at most {} item(s)", "max_length"),
        "string_too_short": ("at least {} character(s)", "min_length"),
        "string_too_long": ("at most {} character(s)", "max_length"),
    }
    if kind in bounds:
        text, field = bounds[kind]
        return text.format(ctx.get(field))
    # Any other pydantic error type: never pass its phrasing on (tests feed every field wrong shapes).
    return "a value of the type documented in the README's configuration reference"


def _problems(err: ValidationError, namespace: str) -> list[Problem]:
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        loc = tuple(p for p in loc if p != "[key]")
        keyed = (e.get("ctx") or {}).get("error")
        if isinstance(keyed, KeyedProblems):
            problems += [Problem(_key_of(loc + sub, namespace), got, want) for sub, got, want in keyed.problems]
            continue
        received: Any = e.get("input", _MISSING)
        if e["type"] == "missing":
            received = _MISSING
        problems.append(Problem(key=_key_of(loc, namespace), received=received, expected=_expected(e)))
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
        settings = GpuCapacitySettings.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError(_problems(err, namespace)) from None
    problems = autoscaler_problems(settings, namespace)
    if problems:
        raise ConfigError(problems)
    return settings


def decode_config_value(value: Any) -> Any:
    """Pulumi hands structured config values (lists, maps) to programs as JSON strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


#: Config namespaces the program reads: its own, Pulumi's (``pulumi:tags``, ``pulumi:template``,
#: ...) and those of the providers it uses (pulumi-aws ``aws:``, pulumi-awsx ``awsx:``, pulumi-eks
#: ``eks:``, pulumi-kubernetes ``kubernetes:``). A key in any other namespace reaches no code.
KNOWN_CONFIG_NAMESPACES = (CONFIG_NAMESPACE, "pulumi", "aws", "awsx", "eks", "kubernetes")


def unknown_config_problems(config: Mapping[str, Any]) -> list[Problem]:
    """Keys that no code would read: a namespace typo (``gpueks:deletionProtection``) silently drops
    the setting, and a bare key is not a Pulumi config key (the CLI parses ``<namespace>:<name>``,
    pulumi/pulumi sdk/go/common/resource/config/key.go ``ParseKey``)."""
    problems = []
    fields = {f.alias or name for name, f in Settings.model_fields.items()}
    for key in config:
        namespace, sep, name = str(key).partition(":")
        if not sep:
            hint = f"{CONFIG_NAMESPACE}:{key}" if key in fields else f"<namespace>:{key}"
            problems.append(Problem(key=str(key), received=config[key], expected=f"a namespaced key such as {hint}"))
            continue
        if namespace in KNOWN_CONFIG_NAMESPACES:
            continue
        close = difflib.get_close_matches(namespace, KNOWN_CONFIG_NAMESPACES, n=1, cutoff=0.6)
        if not close and name.split(".")[0] in fields:
            close = [CONFIG_NAMESPACE]
        hint = f"did you mean {close[0]}:{name}? " if close else ""
        problems.append(
            Problem(
                key=str(key),
                received=config[key],
                expected=f"{hint}a key in a namespace the program reads ({', '.join(KNOWN_CONFIG_NAMESPACES)}); "
                f"no code reads {namespace}:",
            )
        )
    return problems


@functools.cache
def eks_regions() -> frozenset[str]:
    """Regions with EKS, from botocore's endpoint data (offline) for the partitions EKS runs in.

    Read once per process: the data is the installed botocore's, and reading it costs ~40 ms."""
    import boto3

    session = boto3.session.Session()
    return frozenset(
        region
        for partition in ("aws", "aws-us-gov", "aws-cn")
        for region in session.get_available_regions("eks", partition)
    )


def region_problems(config: Mapping[str, Any]) -> list[Problem]:
    region = config.get("aws:region")
    if not isinstance(region, str) or region in eks_regions():
        return []
    close = difflib.get_close_matches(region, sorted(eks_regions()), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return [
        Problem(
            key="aws:region",
            received=region,
            expected=f"{hint}a region where EKS runs (botocore's endpoint data lists {len(eks_regions())})",
        )
    ]


def settings_from_config(config: Mapping[str, Any], project: str, stack: str) -> Settings:
    """Settings from a full config map as the Pulumi CLI passes it (``gpu-eks:key`` → string).

    Also checks the keys of other namespaces: unknown namespaces and an ``aws:region`` without EKS
    are problems. Raises ConfigError listing every problem.
    """
    problems = unknown_config_problems(config) + region_problems(config)
    prefix = f"{CONFIG_NAMESPACE}:"
    raw = {k[len(prefix) :]: decode_config_value(v) for k, v in config.items() if k.startswith(prefix)}
    raw.setdefault("clusterName", f"{project}-{stack}")
    try:
        settings = load_settings(raw)
    except ConfigError as err:
        problems += err.problems
    if problems:
        raise ConfigError(problems)
    return settings


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
