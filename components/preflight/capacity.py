"""Preflight checks of the node groups' capacity: each instance type exists, matches the
library's table and is offered in the node groups' zones; the G and VT vCPU quota covers the
node groups at max size.

Read-only boto3 calls, one ``CheckResult`` per check, as in ``checks``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from .. import catalog
from ..config.groups import GpuNodeGroupSettings
from .results import (
    FAIL,
    PASS,
    WARN,
    CheckResult,
    Status,
    comma_list,
    could_not_check,
    describe_client_error,
    error_code,
    region_of,
    reraise_if_credentials,
    worst,
)

#: Service Quotas code per EKS capacity type (catalog holds the codes).
VCPU_QUOTA_CODE: dict[str, str] = {
    "ON_DEMAND": catalog.VCPU_QUOTA_ON_DEMAND_G,
    "SPOT": catalog.VCPU_QUOTA_SPOT_G,
}


# ---------------------------------------------------------------------------------------------
# Instance types
# ---------------------------------------------------------------------------------------------


def gpu_mismatches(expected: catalog.GpuInstanceType, info: Mapping[str, Any]) -> list[str]:
    """Where ``DescribeInstanceTypes`` disagrees with the library's table (empty: it agrees): GPU
    count, model and memory per GPU (``GpuInfo``), vCPUs, instance memory and architecture, every
    number the catalog row takes from EC2 (catalog.instances)."""
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    count = sum(int(g.get("Count", 0)) for g in gpus)
    models = sorted({str(g.get("Name", "")) for g in gpus})
    memory = sorted({int(g.get("MemoryInfo", {}).get("SizeInMiB", 0)) for g in gpus})
    vcpus = int(info.get("VCpuInfo", {}).get("DefaultVCpus", 0))
    instance_memory = int(info.get("MemoryInfo", {}).get("SizeInMiB", 0))
    archs = info.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    out = []
    # A vGPU slice (g6f, gr6f): EC2 reports 0 GPUs, the device plugin advertises 1 (catalog.instances).
    if count != expected.ec2_gpus:
        out.append(f"GPU count: catalog {expected.ec2_gpus}, EC2 {count}")
    if models != [expected.gpu_model]:
        out.append(f"GPU model: catalog {expected.gpu_model}, EC2 {'/'.join(models) or 'none'}")
    if memory != [expected.gpu_memory_mib_per_gpu]:
        shown = "/".join(str(m) for m in memory) or "none"
        out.append(f"memory per GPU: catalog {expected.gpu_memory_mib_per_gpu} MiB, EC2 {shown} MiB")
    if vcpus != expected.vcpus:
        out.append(f"vCPUs: catalog {expected.vcpus}, EC2 {vcpus}")
    if instance_memory != expected.memory_mib:
        out.append(f"memory: catalog {expected.memory_mib} MiB, EC2 {instance_memory} MiB")
    if archs and expected.architecture not in archs:
        out.append(f"architecture: catalog {expected.architecture}, EC2 {'/'.join(archs)}")
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
    region = region_of(ec2)
    details: dict[str, Any] = {"instance_type": instance_type, "zones": list(zones or [])}
    parts: list[tuple[Status, str]] = []

    try:
        info = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"][0]
    except ClientError as err:
        if error_code(err) == "InvalidInstanceType":
            return CheckResult(check, FAIL, f"{instance_type} does not exist in {region}", details)
        reraise_if_credentials(err)
        parts.append((WARN, f"could not check the type: {describe_client_error(err)}"))
        info = None

    if info is not None and expected is not None:
        mismatches = gpu_mismatches(expected, info)
        if mismatches:
            details["mismatches"] = mismatches
            parts.append(
                (
                    FAIL,
                    f"the library's table (components/catalog/instances.py GPU_INSTANCE_TYPES) is wrong for "
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
            reraise_if_credentials(err)
            parts.append((WARN, f"could not check zone offerings: {describe_client_error(err)}"))
        else:
            lacking = [z for z in zones if z not in offered]
            details["offered_zones"] = sorted(offered)
            details["lacking_zones"] = lacking
            if len(lacking) == len(zones):
                parts.append((FAIL, f"not offered in any of the node groups' zones ({comma_list(lacking)})"))
            elif lacking:
                parts.append(
                    (
                        WARN,
                        f"not offered in {comma_list(lacking)} (offered in {comma_list(sorted(offered))}): "
                        "nodes launch only in the zones that offer it",
                    )
                )
            else:
                parts.append((PASS, f"offered in {comma_list(zones)}"))

    status = worst(s for s, _ in parts)
    # Lead with what is wrong; the PASS parts only matter when nothing is.
    shown = [text for s, text in parts if s == status] if status != PASS else [text for _, text in parts]
    return CheckResult(check, status, "; ".join(shown) or f"{instance_type} exists", details)


# ---------------------------------------------------------------------------------------------
# vCPU quota
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
    # P instances (p4d, p5, ...) count against the P quotas, not this one: only G/VT groups here.
    mine = [g for g in groups if g.capacity_type == capacity_type and counts_against_g_quota(g.instance_types[0])]
    needed = vcpus_needed(mine, capacity_type)
    breakdown = [f"{g.name}: {g.scaling.max_size} x {group_vcpus(g) // g.scaling.max_size}" for g in mine]
    details: dict[str, Any] = {"quota_code": code, "needed_vcpus": needed, "node_groups": breakdown}

    running: int | None
    running_problem = ""
    try:
        running = running_g_vcpus(ec2, capacity_type)
        details["running_vcpus"] = running
    except ClientError as err:
        reraise_if_credentials(err)
        running = None
        running_problem = describe_client_error(err)
        details["running_error"] = running_problem

    try:
        quota = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
    except ClientError as err:
        return could_not_check(check, err, **details)
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
