"""Preflight checks of the cluster and its network: read-only boto3 calls that find what would
make `pulumi up` fail (the AMI, the Kubernetes version, the zones, an existing VPC).

Every check is a plain function that takes the boto3 client(s) it needs and returns one
``CheckResult`` (``results``: what PASS, WARN and FAIL mean). The checks only call
Describe/Get/List APIs: they never change the account. The node groups' capacity (instance
types, vCPU quota) is checked in ``capacity``; ``run`` runs them all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import botocore
from botocore.exceptions import ClientError

from .. import catalog
from ..config.network import NetworkSettings
from .results import (
    FAIL,
    PASS,
    WARN,
    CheckResult,
    comma_list,
    could_not_check,
    describe_client_error,
    error_code,
    region_of,
    reraise_if_credentials,
)

#: Warn this many days before a Kubernetes version leaves EKS standard support: enough time to
#: plan and test an upgrade before the extended-support surcharge starts.
STANDARD_SUPPORT_WARNING_DAYS = 60

#: Subnet tags the AWS Load Balancer Controller (and the in-tree cloud provider) use to find the
#: subnets for internal and internet-facing load balancers.
INTERNAL_ELB_TAG = "kubernetes.io/role/internal-elb"
PUBLIC_ELB_TAG = "kubernetes.io/role/elb"


# ---------------------------------------------------------------------------------------------
# AMI
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
                f"{region_of(ssm)}: SSM parameter {name} does not exist",
                {"parameter": name},
            )
        return could_not_check(check, err, parameter=name)
    return CheckResult(check, PASS, f"{value} (SSM {name})", {"parameter": name, "image_id": value})


# ---------------------------------------------------------------------------------------------
# Zones
# ---------------------------------------------------------------------------------------------


def check_zones(ec2: Any, network: NetworkSettings) -> CheckResult:
    """The availability zones the node groups' subnets are in; ``details["zones"]`` lists them.

    With an existing VPC: the zones of ``network.private_subnet_ids`` (the ones that exist; the
    vpc check names missing ones). When the program creates the VPC: what awsx picks, namely the
    first ``availability_zone_count`` names of ``DescribeAvailabilityZones`` in name order, and
    awsx refuses to create the VPC when the region has fewer zones.
    """
    check = "zones"
    region = region_of(ec2)
    try:
        if network.vpc_id:
            subnets = _subnets_by_id(ec2, network.private_subnet_ids)
            zones = sorted({s["AvailabilityZone"] for s in subnets.values()})
            if not zones:
                return CheckResult(
                    check,
                    FAIL,
                    f"none of the private subnets exist in {region} "
                    f"({comma_list(network.private_subnet_ids)}): the node groups have no zone to run in",
                    {"zones": [], "source": "private subnets"},
                )
            return CheckResult(
                check,
                PASS,
                f"{comma_list(zones)} (zones of the private subnets)",
                {"zones": zones, "source": "private subnets"},
            )
        listed = ec2.describe_availability_zones()["AvailabilityZones"]
    except ClientError as err:
        return could_not_check(check, err)

    by_name = {z["ZoneName"]: z for z in listed}
    names = sorted(by_name)
    wanted = network.availability_zone_count
    if len(names) < wanted:
        return CheckResult(
            check,
            FAIL,
            f"{region} has {len(names)} zone(s) ({comma_list(names)}) but network.availabilityZoneCount "
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
            f"the program's VPC will use {comma_list(zones)} (first {wanted} zones of {region} by name), but {states}",
            details,
        )
    return CheckResult(
        check,
        PASS,
        f"{comma_list(zones)} (the first {wanted} zones of {region} by name, where the program creates the VPC)",
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


# ---------------------------------------------------------------------------------------------
# Kubernetes version
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


def _version_unanswered(eks: Any, version: str, today: dt.date, problem: str, cluster: str | None) -> CheckResult:
    """EKS could not be asked: WARN, unless the library's own calendar says EKS creates no cluster
    at ``version`` (past its extended support) and the cluster is a new one (``_unsupported``)."""
    calendar = catalog.KUBERNETES_VERSIONS.get(version)
    details = {"version": version, "error": problem}
    if calendar is not None and calendar.status(today) == "UNSUPPORTED":
        end = calendar.end_of_extended_support
        why = f"Kubernetes {version} left EKS extended support on {end} (the library's calendar)"
        return _unsupported(eks, version, why, "pick a newer kubernetesVersion", cluster, details)
    return CheckResult("kubernetes-version", WARN, f"could not check: {problem}", details)


def _unsupported(
    eks: Any, version: str, why: str, instead: str, cluster: str | None, details: dict[str, Any]
) -> CheckResult:
    """A version EKS no longer supports: FAIL for a new cluster (EKS creates none at it: EKS user
    guide, "Understand the Kubernetes version lifecycle on EKS"); only WARN for ``cluster`` when it
    exists (eks:DescribeCluster), which EKS upgrades itself to the oldest version in extended
    support: its stack must keep deploying, and preflight must not fail it on a calendar day."""
    check = "kubernetes-version"
    if cluster is None:
        return CheckResult(check, FAIL, f"{why}; {instead}", details)
    try:
        running = str(eks.describe_cluster(name=cluster)["cluster"].get("version") or "unknown")
    except ClientError as err:
        reraise_if_credentials(err)
        if error_code(err) == "ResourceNotFoundException":
            return CheckResult(check, FAIL, f"{why}: EKS creates no new cluster at it ({cluster}); {instead}", details)
        return CheckResult(
            check,
            WARN,
            f"{why}: EKS creates no new cluster at it, and whether {cluster} exists is unknown "
            f"({describe_client_error(err)}); {instead}",
            details,
        )
    details["running"] = running
    return CheckResult(
        check,
        WARN,
        f"{why}: cluster {cluster} exists and runs {running} (EKS upgrades it itself, to the oldest version in "
        f"extended support); set kubernetesVersion to {running} and upgrade one minor version at a time",
        details,
    )


def check_kubernetes_version(eks: Any, version: str, today: dt.date, cluster: str | None = None) -> CheckResult:
    """EKS offers ``version`` in the region; WARN in extended support (extra hourly cost per
    cluster) or within STANDARD_SUPPORT_WARNING_DAYS of the end of standard support. A version past
    its support fails a new cluster only (``cluster``, the cluster's name: ``_unsupported``)."""
    check = "kubernetes-version"
    region = region_of(eks)
    if not hasattr(eks, "describe_cluster_versions"):
        # boto3 releases before the API (late 2024) lack it; pyproject allows boto3>=1.35.
        return _version_unanswered(
            eks,
            version,
            today,
            f"botocore {botocore.__version__} has no eks DescribeClusterVersions; upgrade boto3",
            cluster,
        )
    try:
        listed = _cluster_versions(eks)
    except ClientError as err:
        reraise_if_credentials(err)
        return _version_unanswered(eks, version, today, describe_client_error(err), cluster)

    calendar = catalog.KUBERNETES_VERSIONS.get(version)
    entry = next((v for v in listed if v.get("clusterVersion") == version), None)
    status = _version_status(entry) if entry is not None else ""
    offered = sorted(
        (str(v["clusterVersion"]) for v in listed if _version_status(v) != "UNSUPPORTED"),
        key=lambda s: tuple(int(p) for p in s.split(".") if p.isdigit()),
    )
    details: dict[str, Any] = {"version": version, "offered": offered}
    if entry is None:
        expected = f"expected one of {comma_list(offered)}"
        return CheckResult(check, FAIL, f"EKS does not offer Kubernetes {version} in {region}; {expected}", details)
    if status == "UNSUPPORTED":
        why = f"EKS no longer supports Kubernetes {version} in {region}"
        return _unsupported(eks, version, why, f"expected one of {comma_list(offered)}", cluster, details)

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
# Existing VPC
# ---------------------------------------------------------------------------------------------


def _tags(subnet: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in subnet.get("Tags") or []}


#: Free addresses a cluster subnet must have: "The subnets must each have at least six IP addresses
#: for use by Amazon EKS. However, we recommend at least 16 IP addresses." (EKS User Guide, "View
#: Amazon EKS networking requirements for VPC and subnets", subnet requirements). EKS places its
#: cross-account control-plane ENIs in them, and the nodes' pods take their addresses there too.
MIN_FREE_SUBNET_ADDRESSES = 6
RECOMMENDED_FREE_SUBNET_ADDRESSES = 16


def check_existing_vpc(
    ec2: Any, network: NetworkSettings, nodes_need: Callable[[int], int] | None = None
) -> CheckResult:
    """The configured subnets exist in ``network.vpc_id``, the private ones span at least two
    zones (EKS refuses a cluster in one zone), they carry the load-balancer role tags the AWS
    Load Balancer Controller looks for (without them, Services of type LoadBalancer stay pending),
    and every subnet the cluster gets (private and public: components/cluster/component.py passes
    both to the EKS cluster, as pulumi-eks does without ``subnetIds``) has free addresses: FAIL below
    EKS's 6, WARN below its recommended 16.

    ``nodes_need(subnets)`` (``Settings.nodes_need_addresses`` at the sizes its subnet rule counts,
    config/addresses.py) gives the addresses the nodes' ENIs hold in all the private subnets
    (``subnets=1``) and in one of ``subnets`` zones: WARN when the private subnets' free addresses
    less EKS's 6 each fall short of the first, or one subnet's of the second (a node's ENIs take
    addresses from its own subnet; each group's nodes spread evenly over the zones).
    """
    check = "vpc"
    if not network.vpc_id:
        return CheckResult(check, PASS, "the program creates the VPC", {"skipped": True})
    vpc_id = network.vpc_id
    wanted = [*network.private_subnet_ids, *network.public_subnet_ids]
    try:
        found = _subnets_by_id(ec2, wanted)
    except ClientError as err:
        return could_not_check(check, err, vpc_id=vpc_id)

    problems: list[str] = []
    missing = [s for s in wanted if s not in found]
    if missing:
        problems.append(f"subnets not found in {region_of(ec2)}: {comma_list(missing)}")
    elsewhere = [f"{s} is in {found[s]['VpcId']}" for s in wanted if s in found and found[s]["VpcId"] != vpc_id]
    if elsewhere:
        problems.append(f"subnets outside {vpc_id}: {comma_list(elsewhere)}")
    private = [found[s] for s in network.private_subnet_ids if s in found]
    zones = sorted({s["AvailabilityZone"] for s in private})
    if len(zones) < 2:
        problems.append(f"private subnets span {len(zones)} zone(s) ({comma_list(zones)}); EKS needs at least 2")
    for ids, tag in ((network.private_subnet_ids, INTERNAL_ELB_TAG), (network.public_subnet_ids, PUBLIC_ELB_TAG)):
        untagged = [s for s in ids if s in found and _tags(found[s]).get(tag) != "1"]
        if untagged:
            problems.append(f"without tag {tag}=1: {comma_list(untagged)}")

    free = {s: int(found[s].get("AvailableIpAddressCount", 0)) for s in wanted if s in found}
    full = [f"{s} ({n} free)" for s, n in free.items() if n < MIN_FREE_SUBNET_ADDRESSES]
    if full:
        problems.append(
            f"subnets with fewer than {MIN_FREE_SUBNET_ADDRESSES} free addresses (EKS needs 6 in each): "
            f"{comma_list(full)}"
        )
    warnings = []
    tight = [
        f"{s} ({n} free)" for s, n in free.items() if MIN_FREE_SUBNET_ADDRESSES <= n < RECOMMENDED_FREE_SUBNET_ADDRESSES
    ]
    if tight:
        warnings.append(
            f"subnets with fewer than the {RECOMMENDED_FREE_SUBNET_ADDRESSES} free addresses EKS recommends "
            f"(nodes and pods take theirs in the private ones too): {comma_list(tight)}"
        )
    need: dict[str, int] = {}
    if nodes_need is not None and private and zones:
        need = {"all": nodes_need(1), "per_subnet": nodes_need(len(zones))}
        room = {s["SubnetId"]: free[s["SubnetId"]] - MIN_FREE_SUBNET_ADDRESSES for s in private}
        if sum(room.values()) < need["all"]:
            warnings.append(
                f"private subnets with {sum(room.values())} free addresses besides EKS's 6 each, fewer than the "
                f"{need['all']} the nodes' ENIs hold at the sizes the subnet rule counts"
            )
        short = [f"{s} ({n})" for s, n in room.items() if n < need["per_subnet"]]
        if short:
            warnings.append(
                f"private subnets with fewer free addresses besides EKS's 6 than the {need['per_subnet']} the "
                f"nodes of one of {len(zones)} zones hold (ceil(nodes / zones) of every group; a node's ENIs use "
                f"its own subnet): {comma_list(short)}"
            )

    details = {
        "vpc_id": vpc_id,
        "private_zones": zones,
        "missing_subnets": missing,
        "free_addresses": free,
        "nodes_need_addresses": need,
    }
    if problems:
        # Every problem at once: the WARN reasons too.
        return CheckResult(check, FAIL, "; ".join(problems + warnings), details)
    if warnings:
        return CheckResult(check, WARN, "; ".join(warnings), details)
    return CheckResult(
        check,
        PASS,
        f"{len(wanted)} subnet(s) in {vpc_id}, private ones in {comma_list(zones)}, load-balancer tags set",
        details,
    )
