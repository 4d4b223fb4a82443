"""Field types of the settings models: each value checked on its own, by the rule of the API or
program that consumes it (cited at each rule).
"""

from __future__ import annotations

import ipaddress
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidatorFunctionWrapHandler, WrapValidator
from pydantic.alias_generators import to_camel

from .. import catalog
from ..catalog import labels
from .errors import is_unresolved


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
    return _check(labels.kubelet_label_problem(key), key)


def _label_value(value: str) -> str:
    return _check(labels.label_value_problem(value), value)


def _qualified_name(key: str) -> str:
    return _check(labels.qualified_name_problem(key), key)


def _dns_label(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?", value, re.ASCII):
        return _check("1-40 lower-case alphanumerics or '-', alphanumeric at both ends", value)
    return value


def _namespace_name(value: str) -> str:
    # Kubernetes ValidateNamespaceName: a DNS-1123 label, at most 63 characters
    # (k8s.io/apimachinery pkg/util/validation IsDNS1123Label, DNS1123LabelMaxLength = 63).
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", value, re.ASCII):
        return _check(
            "1-63 lower-case alphanumerics or '-', alphanumeric at both ends (a Kubernetes namespace name)", value
        )
    return value


#: EKS public endpoint CIDRs: at most 40 per cluster, not adjustable (EKS User Guide, "Amazon EKS
#: service quotas", "Public endpoint access CIDR ranges per cluster", L-93A74D60).
MAX_PUBLIC_ACCESS_CIDRS = 40
#: Address space no client on the internet has, so no request from it reaches a public endpoint; EKS
#: refuses such blocks ("The block cannot include reserved addresses": EKS User Guide, "Configure
#: network access to cluster API server endpoint"). Private networks (RFC 1918), shared address space
#: (RFC 6598), "this network", loopback, link-local, multicast and reserved (IANA IPv4 special-purpose
#: registry). Traffic from inside the VPC uses the private endpoint, which is always on.
NON_INTERNET_BLOCKS = tuple(
    ipaddress.ip_network(b)
    for b in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)


def _public_cidr(value: str) -> str:
    network = ipaddress.ip_network(value)
    within = next((b for b in NON_INTERNET_BLOCKS if network.prefixlen and network.subnet_of(b)), None)  # type: ignore[arg-type]
    if within is not None:
        raise ValueError(
            f"a block of internet addresses: {value} is within {within}, which no client on the internet has "
            "(EKS refuses reserved addresses; from inside the VPC the private endpoint is used)"
        )
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


#: Tags: EKS TagMap and IAM tag lists hold at most 50 tags, keys 1-128 and values up to 256
#: characters (botocore ``eks`` 2017-11-01 TagMap/TagKey/TagValue, ``iam`` 2010-05-08 tagKeyType/
#: tagValueType); the ``aws:`` prefix is reserved (AWS General
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


def tag_key_problem(key: Any) -> str | None:
    """Why AWS would refuse ``key`` as a tag key, or None."""
    if not isinstance(key, str) or not key:
        return "tag keys of 1 to 128 characters"
    if key.lower().startswith("aws:"):
        return "no tag key starting with 'aws:' (reserved for AWS)"
    if len(key) > TAG_KEY_MAX_LENGTH:
        return f"tag keys of at most {TAG_KEY_MAX_LENGTH} characters (got {len(key)})"
    if not _tag_characters_ok(key):
        return "tag keys of letters, digits, spaces and _ . : / = + - @ (the IAM tag rule)"
    return None


def _tag_key(key: str) -> str:
    return _check(tag_key_problem(key), key)


def tag_value_problem(value: Any) -> str | None:
    """Why AWS would refuse ``value`` as a tag value, or None (also for a value that resolved late)."""
    if not isinstance(value, str):
        return "a text value"
    if len(value) > TAG_VALUE_MAX_LENGTH:
        return f"tag values of at most {TAG_VALUE_MAX_LENGTH} characters (got {len(value)})"
    if not _tag_characters_ok(value):
        return "tag values of letters, digits, spaces and _ . : / = + - @ (the IAM tag rule)"
    return None


def _tag_value(value: str) -> str:
    return _check(tag_value_problem(value), value)


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
    if isinstance(value, str) and not re.fullmatch(rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})", value, re.ASCII):
        return f"an id such as {prefix}-0123456789abcdef0"
    return None


def _ec2_id(prefix: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return _check(ec2_id_problem(prefix, value), value)

    return check


def _ami_release_version(value: str) -> str:
    if not catalog.AMI_RELEASE_VERSION_PATTERN.fullmatch(value):
        raise ValueError("an EKS AMI release version such as 1.35.0-20260115 (<kubernetes x.y.z>-<yyyymmdd>)")
    return value


def _system_instance_type(value: str) -> str:
    if not catalog.INSTANCE_TYPE_PATTERN.fullmatch(value):
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
#: entries because this is a temporary principal for each session". A role ARN may include a path
#: (EKS User Guide, "Create access entries": "If the ARN is for an IAM role, it can include a path").
_PRINCIPAL_ARN = re.compile(r"arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):(role|user)/(.+)", re.ASCII)
#: IAM names and paths (botocore ``iam`` 2010-05-08 roleNameType / userNameType: 1-64 characters of
#: ``[\w+=,.@-]``; pathType: ``/`` or ``/…/`` of characters ``!`` to ``~``, at most 512).
_IAM_NAME = re.compile(r"[A-Za-z0-9_+=,.@-]{1,64}", re.ASCII)
_IAM_PATH = re.compile(r"/(?:[\x21-\x7e]+/)?", re.ASCII)
IAM_PATH_MAX_LENGTH = 512
#: The path of every service-linked role (IAM User Guide, "Using service-linked roles"). EKS refuses
#: them as access-entry principals: CreateAccessEntry answers InvalidParameterException "The caller
#: is not allowed to modify access entries with a principalArn value of a Service Linked Role"
#: (hashicorp/terraform-provider-aws#36447, an AWSServiceRoleForAmazonEMRContainers entry). The EKS
#: User Guide's "Create access entries" page was quoted saying so in aws/containers-roadmap#2618
#: (2025-05); the page as indexed today does not carry that sentence, so the API error is the source.
SERVICE_LINKED_ROLE_PATH = "/aws-service-role/"


def principal_arn_problem(value: str) -> str | None:
    """Why EKS would refuse ``value`` as an access-entry principal, or None."""
    if re.match(r"arn:[a-z-]+:sts::\d{12}:assumed-role/", value, re.ASCII):
        return (
            "an IAM role or user ARN; EKS access entries refuse STS assumed-role session ARNs: use the "
            "role's ARN, arn:aws:iam::<account>:role/<name>"
        )
    m = _PRINCIPAL_ARN.fullmatch(value)
    if not m:
        return "an IAM role or user ARN such as arn:aws:iam::123456789012:role/Admin"
    kind, rest = m.group(3), m.group(4)
    path, _, name = ("/" + rest).rpartition("/")
    path += "/"
    if not _IAM_NAME.fullmatch(name):
        return f"an IAM {kind} name of 1-64 letters, digits or + = , . @ _ - (the IAM name rule), after the path"
    if not _IAM_PATH.fullmatch(path) or len(path) > IAM_PATH_MAX_LENGTH:
        return (
            f"an IAM path of at most {IAM_PATH_MAX_LENGTH} printable ASCII characters between '/' (the IAM path rule)"
        )
    if kind == "role" and path.startswith(SERVICE_LINKED_ROLE_PATH):
        return (
            "a role that is not service-linked (path /aws-service-role/): EKS refuses access entries for "
            "service-linked roles"
        )
    return None


def _principal_arn(value: str) -> str:
    return _check(principal_arn_problem(value), value)


def _plain_only(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate a plain value; pass an unresolved one (a ``pulumi.Output``) through untouched."""
    return value if is_unresolved(value) else handler(value)


def _image_reference(value: str) -> str:
    # The distribution reference grammar (distribution/reference, reference.go: name components
    # of lower-case alphanumerics and separators, an optional registry host[:port], then
    # ``:tag`` (at most 128 characters) and/or ``@<algorithm>:<hex>``).
    component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    host = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d+)?/)?"
    # The name (registry and path) is at most 255 characters (NameTotalLengthMax), the tag and digest
    # apart; digests of the algorithms go-digest knows (sha256, sha384, sha512).
    name = rf"({host}{component}(?:/{component})*)"
    digest = r"(?:@(?:sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128}))?"
    m = re.fullmatch(rf"{name}(?::[\w][\w.-]{{0,127}})?{digest}", value, re.ASCII)
    if not m or len(m.group(1)) > 255:
        raise ValueError("a container image reference such as nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0")
    return value


def cluster_name_problem(value: Any) -> str | None:
    """Why ``value`` is not an EKS cluster name, or None. botocore ``eks`` 2017-11-01
    CreateClusterRequest.name (shape ClusterName): 1-100 characters, pattern
    ``^[0-9A-Za-z][A-Za-z0-9\\-_]*``. Values that are not plain strings (an Output) are not judged here."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", value, re.ASCII):
        return "1-100 letters, digits, '-' or '_', starting with a letter or digit (the EKS cluster name rule)"
    return None


def _cluster_name(value: Any) -> Any:
    return _check(cluster_name_problem(value), value)


def supported_kubernetes_versions(today: Any) -> list[str]:
    """The versions EKS still creates clusters at on ``today`` (standard or extended support)."""
    return [v for v, cal in catalog.KUBERNETES_VERSIONS.items() if cal.status(today) != "UNSUPPORTED"]


def kubernetes_version_problem(value: str, today: Any) -> str | None:
    """Why the library cannot render ``value`` (not a version, or one the EKS calendar in the catalog
    does not hold), or None. ``today`` only names the versions EKS supports in the message: a date
    never turns a version the library renders into an error (a stack that rendered yesterday renders
    today). A version past its extended support is a warning (check/warnings.py), and preflight fails
    a new cluster at it (EKS creates none)."""
    usable = ", ".join(supported_kubernetes_versions(today))
    m = catalog.KUBERNETES_VERSION_PATTERN.fullmatch(value)
    if not m:
        return f'a Kubernetes minor version, one of {usable} (quote it in YAML: "1.35", not 1.35)'
    calendar = catalog.KUBERNETES_VERSIONS.get(value)
    if calendar is None:
        newest = max(catalog.KUBERNETES_VERSIONS, key=lambda v: int(v.split(".")[1]))
        if int(m.group(1)) > int(newest.split(".")[1]):
            return (
                f"one of {usable}: {value} is newer than the EKS calendar this library knows "
                "(components/catalog KUBERNETES_VERSIONS); a new version needs a library release"
            )
        return f"one of {usable}: {value} has left EKS extended support, EKS no longer creates clusters at it"
    return None


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


#: Go's time.ParseDuration (go/src/time/format.go, Go 1.24, the Go of cluster-autoscaler 1.35):
#: an optional sign, then one or more <decimal number><unit>, units ns, us (µs, μs), ms, s, m, h;
#: "0" alone is zero; a number needs a digit before or after its dot; beyond 1<<63-1 ns overflows.
_GO_DURATION_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]+)", re.ASCII)
_GO_DURATION_MAX_NS = (1 << 63) - 1


def go_duration_ns(value: str) -> int | None:
    """Nanoseconds of ``value`` as Go's time.ParseDuration reads it, or None where it returns an
    error (tests/test_settings_rules.py holds Go's own accepted and refused examples)."""
    text = value.lstrip("+-")
    sign = -1 if value.startswith("-") else 1
    if len(value) - len(text) > 1 or not text:
        return None
    if text == "0":
        return 0
    total, pos = 0, 0
    while pos < len(text):
        m = _GO_DURATION_PART.match(text, pos)
        if not m or not (m.group(1) or m.group(2)) or m.group(3) not in _GO_DURATION_UNITS_NS:
            return None
        whole, frac, unit = int(m.group(1) or 0), m.group(2) or "", _GO_DURATION_UNITS_NS[m.group(3)]
        total += whole * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)
        if total > _GO_DURATION_MAX_NS + (sign < 0):
            return None
        pos = m.end()
    return sign * total


#: ``--scale-down-unneeded-time`` is a Go flag.Duration of cluster-autoscaler
#: (config/flags/flags.go): any ParseDuration value parses. The library asks for at least a
#: minute: a shorter time lets CA remove the node a time-slicing warm-up Job just brought before
#: the check Job lands on it (verification/jobs.py), and would churn GPU nodes that take minutes
#: to boot. No upper bound but Go's (about 2562047h): a long time is a cost choice, not an error.
MIN_SCALE_DOWN_UNNEEDED_NS = 60 * 1_000_000_000


def _scale_down_time(value: str) -> str:
    ns = go_duration_ns(value)
    if ns is None:
        raise ValueError(
            "a Go duration such as 10m, 1h30m or 1.5h (a number and a unit, ns us ms s m h, repeated; "
            "Go's time.ParseDuration refuses anything else)"
        )
    if ns < MIN_SCALE_DOWN_UNNEEDED_NS:
        raise ValueError("at least 1m: a shorter time lets CA remove a node before the pod that asked for it lands")
    return value


Count = Annotated[int, Field(strict=True)]
LabelKey = Annotated[str, AfterValidator(_kubelet_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
QualifiedName = Annotated[str, AfterValidator(_qualified_name)]
Cidr = Annotated[str, AfterValidator(_cidr)]
PublicCidr = Annotated[Cidr, AfterValidator(_public_cidr)]
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


#: The validation context key of settings read from a mapping of config keys (``load_settings``): a
#: validator that also accepts a Python name (an old keyword) does not there.
KEYS_ONLY = "keys_only"


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def doc(
    meaning: str,
    *,
    type: str | None = None,
    default: str | None = None,
    pulumi_input: bool = False,
    listed_after: str | None = None,
) -> dict[str, Any]:
    """``Field()`` keyword arguments documenting a config key: ``Field(4, ge=1, **doc("...", type="int ≥ 1"))``.

    The one source of the key's documentation: ``python -m tooling docs`` writes the
    configuration reference (docs/configuration.md) and the multi-language inputs
    (components/multilang/inputs.py) from it.
    Only metadata: nothing here changes validation.

    * ``meaning``: what the key does (Markdown; the reference's "meaning" column, the schema's description).
    * ``type``, ``default``: the reference's "type" and "default" columns (Markdown). A key without a
      ``type`` has no row of its own: an object key whose own keys have rows (``network``).
    * ``pulumi_input``: other languages may pass an Output (``pulumi.Input``) where this model lets
      an unresolved value through (``_plain_only``); every other input is plain.
    * ``listed_after``: the row comes after that sibling key's (a field declared early for a validator).
    """
    extra: dict[str, Any] = {}
    if type is not None:
        extra["doc_type"] = type
    if default is not None:
        extra["doc_default"] = default
    if pulumi_input:
        extra["doc_pulumi_input"] = True
    if listed_after is not None:
        extra["doc_listed_after"] = listed_after
    return {"description": meaning, "json_schema_extra": extra}


#: A Kubernetes namespace name (an existing namespace, e.g. ``observability.namespace``).
NamespaceName = Annotated[str, AfterValidator(_namespace_name)]
#: A namespace the library creates: a namespace name, not one Kubernetes creates itself.
OwnNamespace = Annotated[NamespaceName, AfterValidator(_own_namespace)]
