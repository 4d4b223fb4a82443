"""Preflight checks: read-only boto3 calls that find what would make `pulumi up` fail.

Every check is a plain function that takes the boto3 client(s) it needs and returns one
``CheckResult``. The checks only call Describe/Get/List APIs: they never change the account.

Status semantics:
  PASS  the account is ready for this part of the stack.
  WARN  worth knowing but not a failure: extra cost, a partial zone offering, or an API that
        answered with an error so the check could not decide ("could not check: ...").
  FAIL  `pulumi up` would fail or leave the cluster unusable; fix the account or the config.

Credentials that are missing or rejected, or an endpoint that cannot be reached, are not a
check result: every check would fail the same way, so ``AwsAccessError`` is raised instead.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import boto3
import botocore
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    TokenRetrievalError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.parsers import ResponseParserError

from .. import catalog
from ..config.groups import GpuNodeGroupSettings
from ..config.network import NetworkSettings
from ..config.settings import Settings

Status = Literal["PASS", "WARN", "FAIL"]
PASS: Status = "PASS"
WARN: Status = "WARN"
FAIL: Status = "FAIL"
_SEVERITY: dict[str, int] = {PASS: 0, WARN: 1, FAIL: 2}

#: Warn this many days before a Kubernetes version leaves EKS standard support: enough time to
#: plan and test an upgrade before the extended-support surcharge starts.
STANDARD_SUPPORT_WARNING_DAYS = 60

#: Subnet tags the AWS Load Balancer Controller (and the in-tree cloud provider) use to find the
#: subnets for internal and internet-facing load balancers.
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"

#: Service Quotas code per EKS capacity type (catalog holds the codes).
VCPU_QUOTA_CODE: dict[str, str] = {
    "ON_DEMAND": catalog.VCPU_QUOTA_ON_DEMAND_G,
    "SPOT": catalog.VCPU_QUOTA_SPOT_G,
}

#: Error codes meaning "these credentials are not accepted": every call would fail alike.
_CREDENTIAL_ERROR_CODES = frozenset(
    {
        "AuthFailure",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidAccessKeyId",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "MissingAuthenticationToken",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
    }
)


# ---------------------------------------------------------------------------------------------
# Results and errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """One row of the preflight report.

    ``check`` is a stable identifier (``ami:AL2023_x86_64_NVIDIA``, ``instance-type:g4dn.xlarge``,
    ``vcpu-quota:SPOT``, ...); ``details`` holds JSON-serialisable facts behind the reason.
    """

    check: str
    status: Status
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "reason": self.reason, "details": dict(self.details)}


class PreflightError(Exception):
    """Base of the errors preflight raises; catch this one to handle both."""


class PreflightFailed(PreflightError):
    """At least one check FAILed. ``results`` holds every result; str() has one line per FAIL."""

    def __init__(self, results: Sequence[CheckResult]):
        self.results: tuple[CheckResult, ...] = tuple(results)
        super().__init__(str(self))

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status == FAIL)

    def __str__(self) -> str:
        return "\n".join(f"{r.check}: {r.reason}" for r in self.failures)


class AwsAccessError(PreflightError):
    """AWS could not be asked at all: no credentials, rejected credentials, no region, no network."""


def worst(statuses: Iterable[Status]) -> Status:
    return max(statuses, key=lambda s: _SEVERITY[s], default=PASS)


def failed(results: Iterable[CheckResult]) -> bool:
    return any(r.status == FAIL for r in results)


# ---------------------------------------------------------------------------------------------
# Error handling
# ---------------------------------------------------------------------------------------------


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", "") or "")


def one_line(text: str, limit: int = 240) -> str:
    """``text`` fit for a one-line reason: an HTML error page (from a proxy or an emulator)
    becomes its <title>, whitespace collapses, and long text is cut."""
    title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    if title:
        text = title.group(1)
    text = " ".join(re.sub(r"<[^>]+>", " ", text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_client_error(err: ClientError) -> str:
    error = err.response.get("Error", {})
    op = getattr(err, "operation_name", "") or "the API"
    code = str(error.get("Code") or err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    message = one_line(str(error.get("Message") or err))
    if code and message.startswith(code):  # an HTML page titled "404 Not Found" already names the code
        return f"{op} answered {message}"
    return f"{op} answered {code}: {message}"


_ENDPOINT_HINT = "Check AWS_ENDPOINT_URL (and AWS_ENDPOINT_URL_<SERVICE>) if set, a proxy in between, and the region."


def is_unparseable_reply(err: BaseException) -> bool:
    """True when botocore failed to read a reply as an AWS API answer: an HTML page with status 200
    (a captive portal, a proxy, a wrong AWS_ENDPOINT_URL), JSON from a non-AWS server, garbage.

    botocore raises ResponseParserError for XML it cannot parse, but a well-formed page without the
    expected result element surfaces as a bare KeyError from botocore/parsers.py; both are told
    apart from this library's own bugs by where they were raised."""
    if isinstance(err, ResponseParserError):
        return True
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("botocore/parsers.py"):
            return True
        tb = tb.tb_next
    return False


def unparseable_reply_error(err: BaseException) -> AwsAccessError:
    detail = one_line(str(err), 160)
    return AwsAccessError(
        f"the AWS endpoint answered something that is not an AWS API reply ({type(err).__name__}: {detail}). "
        + _ENDPOINT_HINT
    )


def access_error(err: Exception) -> AwsAccessError:
    """A one-paragraph explanation of why AWS could not be asked at all."""
    if isinstance(err, ClientError) and error_code(err).isdigit():
        # Only an HTTP status, no AWS error code: the body was not an AWS error (an HTML page).
        return AwsAccessError(
            f"the AWS endpoint answered HTTP {error_code(err)} without an AWS error "
            f"({_describe_client_error(err)}). " + _ENDPOINT_HINT
        )
    if isinstance(err, ValueError) and str(err).startswith("Invalid endpoint"):
        return AwsAccessError(f"{err}: expected a URL such as https://sts.us-west-2.amazonaws.com. " + _ENDPOINT_HINT)
    if isinstance(err, NoCredentialsError | PartialCredentialsError):
        return AwsAccessError(
            f"no AWS credentials found ({type(err).__name__}: {err}). Preflight reads the account with "
            "boto3's default credential chain: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
            "AWS_PROFILE with ~/.aws/credentials or an SSO login, or run where an instance/task role "
            "is available."
        )
    if isinstance(err, CredentialRetrievalError | TokenRetrievalError):
        return AwsAccessError(
            f"AWS credentials could not be loaded ({type(err).__name__}: {err}). Refresh them (for SSO: "
            "`aws sso login`) and run preflight again."
        )
    if isinstance(err, NoRegionError):
        return AwsAccessError("no AWS region: set aws:region in the stack file, or AWS_REGION / AWS_DEFAULT_REGION.")
    if isinstance(err, BotoConnectionError):
        return AwsAccessError(
            f"could not reach AWS ({type(err).__name__}: {err}). Check the network, and AWS_ENDPOINT_URL if it is set."
        )
    if is_unparseable_reply(err):
        return unparseable_reply_error(err)
    if isinstance(err, ClientError):
        return AwsAccessError(
            f"AWS rejected the credentials ({_describe_client_error(err)}). Check that the access key "
            "exists and is active, and that a session token, if any, has not expired."
        )
    return AwsAccessError(f"could not call AWS ({type(err).__name__}: {err}).")


def _could_not_check(check: str, err: ClientError, **details: Any) -> CheckResult:
    """WARN for an API that answered with an error, unless the credentials themselves are bad."""
    _reraise_if_credentials(err)
    reason = f"could not check: {_describe_client_error(err)}"
    return CheckResult(check, WARN, reason, {**details, "error": _describe_client_error(err)})


def _reraise_if_credentials(err: ClientError) -> None:
    if error_code(err) in _CREDENTIAL_ERROR_CODES:
        raise access_error(err) from err


def _region_of(client: Any) -> str:
    return str(client.meta.region_name)


def _join(items: Iterable[str]) -> str:
    return ", ".join(items) or "none"


# ---------------------------------------------------------------------------------------------
# 1. AMI
# ---------------------------------------------------------------------------------------------


def ami_parameter_name(ami_type: str, kubernetes_version: str) -> str:
    return catalog.AMI_SSM_PARAMETER[ami_type].format(version=kubernetes_version)


def check_ami(ssm: Any, kubernetes_version: str, ami_type: str) -> CheckResult:
    """The SSM parameter EKS publishes for ``ami_type`` at ``kubernetes_version`` exists.

    Without it EKS has no AMI to launch the node group with, and node group creation fails.
    """
    check = f"ami:{ami_type}"
    name = ami_parameter_name(ami_type, kubernetes_version)
    try:
        value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as err:
        if error_code(err) == "ParameterNotFound":
            return CheckResult(
                check,
                FAIL,
                f"EKS publishes no {ami_type} AMI for Kubernetes {kubernetes_version} in "
                f"{_region_of(ssm)}: SSM parameter {name} does not exist",
                {"parameter": name},
            )
        return _could_not_check(check, err, parameter=name)
    return CheckResult(check, PASS, f"{value} (SSM {name})", {"parameter": name, "image_id": value})


# ---------------------------------------------------------------------------------------------
# 2. Zones and instance types
# ---------------------------------------------------------------------------------------------


def check_zones(ec2: Any, network: NetworkSettings) -> CheckResult:
    """The availability zones the node groups' subnets are in; ``details["zones"]`` lists them.

    With an existing VPC: the zones of ``network.private_subnet_ids`` (the ones that exist; the
    vpc check names missing ones). When the program creates the VPC: what awsx picks, namely the
    first ``availability_zone_count`` names of ``DescribeAvailabilityZones`` in name order, and
    awsx refuses to create the VPC when the region has fewer zones.
    """
    check = "zones"
    region = _region_of(ec2)
    try:
        if network.vpc_id:
            subnets = _subnets_by_id(ec2, network.private_subnet_ids)
            zones = sorted({s["AvailabilityZone"] for s in subnets.values()})
            if not zones:
                return CheckResult(
                    check,
                    FAIL,
                    f"none of the private subnets exist in {region} "
                    f"({_join(network.private_subnet_ids)}): the node groups have no zone to run in",
                    {"zones": [], "source": "private subnets"},
                )
            return CheckResult(
                check,
                PASS,
                f"{_join(zones)} (zones of the private subnets)",
                {"zones": zones, "source": "private subnets"},
            )
        listed = ec2.describe_availability_zones()["AvailabilityZones"]
    except ClientError as err:
        return _could_not_check(check, err)

    by_name = {z["ZoneName"]: z for z in listed}
    names = sorted(by_name)
    wanted = network.availability_zone_count
    if len(names) < wanted:
        return CheckResult(
            check,
            FAIL,
            f"{region} has {len(names)} zone(s) ({_join(names)}) but network.availabilityZoneCount "
            f"is {wanted}: awsx refuses to create the VPC; lower availabilityZoneCount",
            {"zones": names, "source": "region", "availability_zone_count": wanted},
        )
    zones = names[:wanted]
    details = {"zones": zones, "source": "region", "availability_zone_count": wanted}
    not_available = [z for z in zones if by_name[z].get("State", "available") != "available"]
    if not_available:
        states = ", ".join(f"{z} is {by_name[z].get('State')}" for z in not_available)
        return CheckResult(
            check,
            WARN,
            f"the program's VPC will use {_join(zones)} (first {wanted} zones of {region} by name), but {states}",
            details,
        )
    return CheckResult(
        check,
        PASS,
        f"{_join(zones)} (the first {wanted} zones of {region} by name, where the program creates the VPC)",
        details,
    )


def _subnets_by_id(ec2: Any, subnet_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The subnets that exist among ``subnet_ids``.

    A ``subnet-id`` filter instead of ``SubnetIds=``: the latter fails the whole call with
    InvalidSubnetID.NotFound, so a missing subnet could not be told apart from the others.
    """
    if not subnet_ids:
        return {}
    found: dict[str, dict[str, Any]] = {}
    pages = ec2.get_paginator("describe_subnets").paginate(Filters=[{"Name": "subnet-id", "Values": list(subnet_ids)}])
    for page in pages:
        for subnet in page["Subnets"]:
            found[subnet["SubnetId"]] = subnet
    return found


def gpu_mismatches(expected: catalog.GpuInstanceType, info: Mapping[str, Any]) -> list[str]:
    """Where ``DescribeInstanceTypes`` disagrees with the library's table (empty: it agrees)."""
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    count = sum(int(g.get("Count", 0)) for g in gpus)
    memory = sorted({int(g.get("MemoryInfo", {}).get("SizeInMiB", 0)) for g in gpus})
    vcpus = int(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    out = []
    if count != expected.gpus:
        out.append(f"GPU count: catalog {expected.gpus}, EC2 {count}")
    if memory != [expected.gpu_memory_mib_per_gpu]:
        shown = "/".join(str(m) for m in memory) or "none"
        out.append(f"memory per GPU: catalog {expected.gpu_memory_mib_per_gpu} MiB, EC2 {shown} MiB")
    if vcpus != expected.vcpus:
        out.append(f"vCPUs: catalog {expected.vcpus}, EC2 {vcpus}")
    return out


def _offered_zones(ec2: Any, instance_type: str, zones: Sequence[str]) -> set[str]:
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone",
        Filters=[
            {"Name": "instance-type", "Values": [instance_type]},
            {"Name": "location", "Values": list(zones)},
        ],
    )
    return {o["Location"] for page in pages for o in page["InstanceTypeOfferings"]}


def check_instance_type(
    ec2: Any,
    instance_type: str,
    zones: Sequence[str] | None,
    expected: catalog.GpuInstanceType | None = None,
) -> CheckResult:
    """``instance_type`` exists in the region, matches ``expected`` (the catalog row, for GPU
    types) and is offered in ``zones`` (None: the zones are unknown, see the zones check).

    Not offered in any zone: FAIL (the node group cannot launch a node). Missing from some zones:
    WARN (the Auto Scaling group launches only in the others, so nodes bunch up there).
    """
    check = f"instance-type:{instance_type}"
    region = _region_of(ec2)
    details: dict[str, Any] = {"instance_type": instance_type, "zones": list(zones or [])}
    parts: list[tuple[Status, str]] = []

    try:
        info = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"][0]
    except ClientError as err:
        if error_code(err) == "InvalidInstanceType":
            return CheckResult(check, FAIL, f"{instance_type} does not exist in {region}", details)
        _reraise_if_credentials(err)
        parts.append((WARN, f"could not check the type: {_describe_client_error(err)}"))
        info = None

    if info is not None and expected is not None:
        mismatches = gpu_mismatches(expected, info)
        if mismatches:
            details["mismatches"] = mismatches
            parts.append(
                (
                    FAIL,
                    f"the library's table (components/catalog.py GPU_INSTANCE_TYPES) is wrong for "
                    f"{instance_type}: {'; '.join(mismatches)}; fix the table, since node labels, "
                    "advertised GPUs and the quota check derive from it",
                )
            )
        else:
            parts.append(
                (
                    PASS,
                    f"{expected.gpus}x {expected.gpu_model} with {expected.gpu_memory_mib_per_gpu} MiB, "
                    f"{expected.vcpus} vCPUs as the catalog says",
                )
            )

    if info is not None and expected is None:
        parts.append((PASS, f"exists in {region}"))

    if zones is None:
        parts.append((WARN, "zones unknown (see the zones check), zone offerings not checked"))
    elif zones:
        try:
            offered = _offered_zones(ec2, instance_type, zones)
        except ClientError as err:
            _reraise_if_credentials(err)
            parts.append((WARN, f"could not check zone offerings: {_describe_client_error(err)}"))
        else:
            lacking = [z for z in zones if z not in offered]
            details["offered_zones"] = sorted(offered)
            details["lacking_zones"] = lacking
            if len(lacking) == len(zones):
                parts.append((FAIL, f"not offered in any of the node groups' zones ({_join(lacking)})"))
            elif lacking:
                parts.append(
                    (
                        WARN,
                        f"not offered in {_join(lacking)} (offered in {_join(sorted(offered))}): "
                        "nodes launch only in the zones that offer it",
                    )
                )
            else:
                parts.append((PASS, f"offered in {_join(zones)}"))

    status = worst(s for s, _ in parts)
    # Lead with what is wrong; the PASS parts only matter when nothing is.
    shown = [text for s, text in parts if s == status] if status != PASS else [text for _, text in parts]
    return CheckResult(check, status, "; ".join(shown) or f"{instance_type} exists", details)


# ---------------------------------------------------------------------------------------------
# 3. vCPU quota
# ---------------------------------------------------------------------------------------------


def group_vcpus(group: GpuNodeGroupSettings) -> int:
    """vCPUs a node group holds at max size: every node may land on its largest type."""
    largest = max(catalog.GPU_INSTANCE_TYPES[t].vcpus for t in group.instance_types)
    return group.scaling.max_size * largest


def vcpus_needed(groups: Iterable[GpuNodeGroupSettings], capacity_type: str) -> int:
    return sum(group_vcpus(g) for g in groups if g.capacity_type == capacity_type)


def counts_against_g_quota(instance_type: str) -> bool:
    family = instance_type.split(".", 1)[0]
    return family.startswith(catalog.VCPU_QUOTA_G_FAMILY_PREFIXES)


def _capacity_type_of(instance: Mapping[str, Any]) -> str | None:
    # On-Demand instances carry no InstanceLifecycle; "spot" counts against the Spot quota;
    # Capacity Blocks and Scheduled Instances count against neither.
    lifecycle = instance.get("InstanceLifecycle")
    if lifecycle is None:
        return "ON_DEMAND"
    if lifecycle == "spot":
        return "SPOT"
    return None


def running_g_vcpus(ec2: Any, capacity_type: str) -> int:
    """vCPUs of the G and VT instances of ``capacity_type`` that are pending or running.

    Filtered by family here rather than with an ``instance-type`` wildcard filter, which not
    every EC2 implementation honours. vCPUs are the type's default count (DescribeInstanceTypes):
    custom CPU options can only lower it, so this never undercounts.
    """
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )
    per_type: dict[str, int] = {}
    for page in pages:
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                itype = instance["InstanceType"]
                if counts_against_g_quota(itype) and _capacity_type_of(instance) == capacity_type:
                    per_type[itype] = per_type.get(itype, 0) + 1
    if not per_type:
        return 0
    vcpus: dict[str, int] = {}
    types = sorted(per_type)
    for start in range(0, len(types), 100):  # DescribeInstanceTypes takes at most 100 names
        for info in ec2.describe_instance_types(InstanceTypes=types[start : start + 100])["InstanceTypes"]:
            vcpus[info["InstanceType"]] = int(info["VCpuInfo"]["DefaultVCpus"])
    return sum(n * vcpus[t] for t, n in per_type.items())


def check_vcpu_quota(quotas: Any, ec2: Any, capacity_type: str, groups: Sequence[GpuNodeGroupSettings]) -> CheckResult:
    """The G and VT vCPU quota of ``capacity_type`` covers the node groups at max size plus the
    G/VT instances already running. Short quota: the node group sits in CREATING for 20+ minutes
    and fails with AsgInstanceLaunchFailures (VcpuLimitExceeded)."""
    check = f"vcpu-quota:{capacity_type}"
    code = VCPU_QUOTA_CODE[capacity_type]
    mine = [g for g in groups if g.capacity_type == capacity_type]
    needed = vcpus_needed(mine, capacity_type)
    breakdown = [f"{g.name}: {g.scaling.max_size} x {group_vcpus(g) // g.scaling.max_size}" for g in mine]
    details: dict[str, Any] = {"quota_code": code, "needed_vcpus": needed, "node_groups": breakdown}

    running: int | None
    running_problem = ""
    try:
        running = running_g_vcpus(ec2, capacity_type)
        details["running_vcpus"] = running
    except ClientError as err:
        _reraise_if_credentials(err)
        running = None
        running_problem = _describe_client_error(err)
        details["running_error"] = running_problem

    try:
        quota = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
    except ClientError as err:
        return _could_not_check(check, err, **details)
    limit = float(quota["Value"])
    label = f"quota {code} ({quota.get('QuotaName') or capacity_type})"
    details["quota_value"] = limit
    shown_limit = f"{limit:g}"

    if running is None:
        if needed > limit:
            return CheckResult(
                check,
                FAIL,
                f"node groups need {needed} vCPUs at max size ({'; '.join(breakdown)}) but {label} is "
                f"{shown_limit}; request an increase in Service Quotas or lower scaling.maxSize",
                details,
            )
        return CheckResult(
            check,
            WARN,
            f"could not check running instances ({running_problem}); node groups alone need {needed} "
            f"of {label} {shown_limit}",
            details,
        )
    total = needed + running
    if total > limit:
        return CheckResult(
            check,
            FAIL,
            f"needs {needed} vCPUs at max size ({'; '.join(breakdown)}) + {running} running = {total}, "
            f"over {label} of {shown_limit}; request an increase in Service Quotas or lower "
            "scaling.maxSize",
            details,
        )
    return CheckResult(
        check,
        PASS,
        f"{needed} vCPUs at max size + {running} running = {total} of {label} {shown_limit}",
        details,
    )


# ---------------------------------------------------------------------------------------------
# 4. Kubernetes version
# ---------------------------------------------------------------------------------------------


def _as_date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return None


def _version_status(entry: Mapping[str, Any]) -> str:
    """STANDARD_SUPPORT / EXTENDED_SUPPORT / UNSUPPORTED, also from the deprecated ``status``."""
    raw = entry.get("versionStatus") or entry.get("status") or ""
    return str(raw).upper().replace("-", "_")


def _cluster_versions(eks: Any) -> list[dict[str, Any]]:
    # includeAll: also list versions past their support, so "unsupported" is told apart from
    # "never offered here".
    pages = eks.get_paginator("describe_cluster_versions").paginate(clusterType="eks", includeAll=True)
    return [v for page in pages for v in page.get("clusterVersions", [])]


def _version_unanswered(version: str, today: dt.date, problem: str) -> CheckResult:
    """EKS could not be asked: WARN, unless the library's own calendar makes a FAIL certain
    (EKS creates no cluster of a version past its extended support)."""
    calendar = catalog.KUBERNETES_VERSIONS.get(version)
    details = {"version": version, "error": problem}
    if calendar is not None and calendar.status(today) == "UNSUPPORTED":
        return CheckResult(
            "kubernetes-version",
            FAIL,
            f"Kubernetes {version} left EKS extended support on {calendar.end_of_extended_support} "
            "(the library's calendar); pick a newer kubernetesVersion",
            details,
        )
    return CheckResult("kubernetes-version", WARN, f"could not check: {problem}", details)


def check_kubernetes_version(eks: Any, version: str, today: dt.date) -> CheckResult:
    """EKS offers ``version`` in the region; WARN in extended support (extra hourly cost per
    cluster) or within STANDARD_SUPPORT_WARNING_DAYS of the end of standard support."""
    check = "kubernetes-version"
    region = _region_of(eks)
    if not hasattr(eks, "describe_cluster_versions"):
        # boto3 releases before the API (late 2024) lack it; pyproject allows boto3>=1.35.
        return _version_unanswered(
            version, today, f"botocore {botocore.__version__} has no eks DescribeClusterVersions; upgrade boto3"
        )
    try:
        listed = _cluster_versions(eks)
    except ClientError as err:
        _reraise_if_credentials(err)
        return _version_unanswered(version, today, _describe_client_error(err))

    calendar = catalog.KUBERNETES_VERSIONS.get(version)
    entry = next((v for v in listed if v.get("clusterVersion") == version), None)
    status = _version_status(entry) if entry is not None else ""
    offered = sorted(
        (str(v["clusterVersion"]) for v in listed if _version_status(v) != "UNSUPPORTED"),
        key=lambda s: tuple(int(p) for p in s.split(".") if p.isdigit()),
    )
    details: dict[str, Any] = {"version": version, "offered": offered}
    if entry is None or status == "UNSUPPORTED":
        what = "no longer supports" if entry is not None else "does not offer"
        return CheckResult(
            check,
            FAIL,
            f"EKS {what} Kubernetes {version} in {region}; expected one of {_join(offered)}",
            details,
        )

    end_standard = _as_date(entry.get("endOfStandardSupportDate")) or (
        calendar.end_of_standard_support if calendar else None
    )
    end_extended = _as_date(entry.get("endOfExtendedSupportDate")) or (
        calendar.end_of_extended_support if calendar else None
    )
    details.update(
        status=status,
        end_of_standard_support=end_standard.isoformat() if end_standard else None,
        end_of_extended_support=end_extended.isoformat() if end_extended else None,
    )
    if status == "EXTENDED_SUPPORT":
        until = f" until {end_extended}" if end_extended else ""
        return CheckResult(
            check,
            WARN,
            f"Kubernetes {version} is in EKS extended support{until}: the cluster costs extra per "
            "hour; upgrade to a version in standard support",
            details,
        )
    if end_standard is not None:
        days = (end_standard - today).days
        if days <= STANDARD_SUPPORT_WARNING_DAYS:
            return CheckResult(
                check,
                WARN,
                f"Kubernetes {version} leaves EKS standard support on {end_standard} (in {days} days); "
                "after that the cluster costs extra per hour: plan the upgrade",
                details,
            )
        return CheckResult(
            check, PASS, f"EKS offers {version} in {region}, standard support until {end_standard}", details
        )
    return CheckResult(check, PASS, f"EKS offers {version} in {region} ({status or 'status unknown'})", details)


# ---------------------------------------------------------------------------------------------
# 5. Existing VPC
# ---------------------------------------------------------------------------------------------


def _tags(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in subnet.get("Tags") or []}


def check_existing_vpc(ec2: Any, network: NetworkSettings) -> CheckResult:
    """The configured subnets exist in ``network.vpc_id``, the private ones span at least two
    zones (EKS refuses a cluster in one zone), and they carry the load-balancer role tags the AWS
    Load Balancer Controller looks for (without them, Services of type LoadBalancer stay pending).
    """
    check = "vpc"
    if not network.vpc_id:
        return CheckResult(check, PASS, "the program creates the VPC", {"skipped": True})
    vpc_id = network.vpc_id
    wanted = [*network.private_subnet_ids, *network.public_subnet_ids]
    try:
        found = _subnets_by_id(ec2, wanted)
    except ClientError as err:
        return _could_not_check(check, err, vpc_id=vpc_id)

    problems: list[str] = []
    missing = [s for s in wanted if s not in found]
    if missing:
        problems.append(f"subnets not found in {_region_of(ec2)}: {_join(missing)}")
    elsewhere = [f"{s} is in {found[s]['VpcId']}" for s in wanted if s in found and found[s]["VpcId"] != vpc_id]
    if elsewhere:
        problems.append(f"subnets outside {vpc_id}: {_join(elsewhere)}")
    private = [found[s] for s in network.private_subnet_ids if s in found]
    zones = sorted({s["AvailabilityZone"] for s in private})
    if len(zones) < 2:
        problems.append(f"private subnets span {len(zones)} zone(s) ({_join(zones)}); EKS needs at least 2")
    for ids, tag in ((network.private_subnet_ids, INTERNAL_ELB_TAG), (network.public_subnet_ids, PUBLIC_ELB_TAG)):
        untagged = [s for s in ids if s in found and _tags(found[s]).get(tag) != "1"]
        if untagged:
            problems.append(f"without tag {tag}=1: {_join(untagged)}")

    details = {
        "vpc_id": vpc_id,
        "private_zones": zones,
        "missing_subnets": missing,
    }
    if problems:
        return CheckResult(check, FAIL, "; ".join(problems), details)
    return CheckResult(
        check,
        PASS,
        f"{len(wanted)} subnet(s) in {vpc_id}, private ones in {_join(zones)}, load-balancer tags set",
        details,
    )


# ---------------------------------------------------------------------------------------------
# All checks
# ---------------------------------------------------------------------------------------------


def _instance_types_to_check(settings: Settings) -> dict[str, catalog.GpuInstanceType | None]:
    """Every instance type of the stack, GPU types with their catalog row, in config order."""
    out: dict[str, catalog.GpuInstanceType | None] = {}
    for group in settings.gpu_node_groups:
        for t in group.instance_types:
            out.setdefault(t, catalog.GPU_INSTANCE_TYPES[t])
    for t in settings.system_node_group.instance_types:
        out.setdefault(t, catalog.GPU_INSTANCE_TYPES.get(t))
    return out


def run_checks(
    settings: Settings,
    region: str,
    session: boto3.Session | None = None,
    today: dt.date | None = None,
) -> list[CheckResult]:
    """Run every check against the account ``session`` (default: boto3's default chain) can see.

    Raises AwsAccessError when AWS cannot be asked at all (no or rejected credentials, no network).
    """
    session = session or boto3.Session(region_name=region)
    today = today or catalog.today()
    try:
        # No endpoint_url here: boto3 resolves AWS_ENDPOINT_URL(_<SERVICE>) itself.
        ssm = session.client("ssm", region_name=region)
        ec2 = session.client("ec2", region_name=region)
        eks = session.client("eks", region_name=region)
        quotas = session.client("service-quotas", region_name=region)

        results = [
            check_ami(ssm, settings.kubernetes_version, catalog.GPU_AMI_TYPE),
            check_ami(ssm, settings.kubernetes_version, settings.system_node_group.ami_type),
            check_kubernetes_version(eks, settings.kubernetes_version, today),
            check_existing_vpc(ec2, settings.network),
        ]
        zones_result = check_zones(ec2, settings.network)
        results.append(zones_result)
        zones = zones_result.details.get("zones")
        for instance_type, expected in _instance_types_to_check(settings).items():
            results.append(check_instance_type(ec2, instance_type, zones, expected))
        capacity_types = sorted({g.capacity_type for g in settings.gpu_node_groups})
        for capacity_type in capacity_types:
            results.append(check_vcpu_quota(quotas, ec2, capacity_type, settings.gpu_node_groups))
    except BotoCoreError as err:
        raise access_error(err) from err
    except Exception as err:
        if is_unparseable_reply(err) or (isinstance(err, ValueError) and str(err).startswith("Invalid endpoint")):
            raise access_error(err) from err
        raise
    return results


def enforce(
    settings: Settings,
    region: str,
    session: boto3.Session | None = None,
    today: dt.date | None = None,
) -> list[CheckResult]:
    """``run_checks``, raising PreflightFailed when any check failed (WARN is not a failure)."""
    results = run_checks(settings, region, session=session, today=today)
    if failed(results):
        raise PreflightFailed(results)
    return results
