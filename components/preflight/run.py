"""Every preflight check against one account: ``run_checks`` (the results) and ``enforce`` (raise
PreflightFailed when any FAILed). ``AwsAccessError`` when AWS cannot be asked at all.
"""

from __future__ import annotations

import datetime as dt

import boto3
from botocore.exceptions import BotoCoreError

from .. import catalog
from ..check.settings import Settings
from ..config.verification import instances_needed
from .capacity import VCPU_QUOTA_CODE, check_instance_type, check_vcpu_quota, counts_against_g_quota
from .checks import check_ami, check_existing_vpc, check_kubernetes_version, check_zones
from .efa import check_vpc_cni
from .reservations import check_reservation, check_zone_offering
from .results import CheckResult, PreflightFailed, access_error, failed, is_unparseable_reply


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
    now: dt.datetime | None = None,
) -> list[CheckResult]:
    """Run every check against the account ``session`` (default: boto3's default chain) can see.
    ``now``: the time a Capacity Block's end is measured from (default: the clock).

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

        # One check per AMI type the GPU groups boot (their plans), then the system group's.
        gpu_ami_types = dict.fromkeys(p.ami_type for p in settings.plans)
        results = [
            *(check_ami(ssm, settings.kubernetes_version, ami_type) for ami_type in gpu_ami_types),
            check_ami(ssm, settings.kubernetes_version, settings.system_node_group.ami_type),
            check_kubernetes_version(eks, settings.kubernetes_version, today, settings.cluster_name),
            check_existing_vpc(
                ec2,
                settings.network,
                # The sizes the created-VPC subnet rule counts: maxSize with the autoscaler, else desiredSize.
                lambda subnets: settings.nodes_need_addresses(settings.autoscaler_enabled, subnets=subnets),
            ),
        ]
        zones_result = check_zones(ec2, settings.network)
        results.append(zones_result)
        zones = zones_result.details.get("zones")
        for instance_type, expected in _instance_types_to_check(settings).items():
            results.append(check_instance_type(ec2, instance_type, zones, expected))
        # The G and VT quotas only (P-family groups count against the P quotas, not checked).
        g_groups = [g for g in settings.gpu_node_groups if counts_against_g_quota(g.instance_types[0])]
        # A Capacity Block is paid for ahead (the reservation check reads it): ON_DEMAND and SPOT only.
        capacity_types = sorted({g.capacity_type for g in g_groups} & set(VCPU_QUOTA_CODE))
        for capacity_type in capacity_types:
            results.append(check_vcpu_quota(quotas, ec2, capacity_type, settings.gpu_node_groups))
        # EFA groups on an existing cluster (issue 41): its VPC CNI takes efa-only interfaces.
        vpc_cni = check_vpc_cni(eks, settings.cluster_name, settings.gpu_node_groups)
        if vpc_cni is not None:
            results.append(vpc_cni)
        # Multi-node groups (issue 32): the zone offers the type, the reservation's state and window.
        now = now or dt.datetime.now(dt.UTC)
        for group in settings.gpu_node_groups:
            if group.availability_zone is not None:
                results.append(check_zone_offering(ec2, group))
            if group.capacity_reservation is not None and group.capacity_reservation.id is not None:
                results.append(check_reservation(ec2, group, now, instances_needed(group, settings)))
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
