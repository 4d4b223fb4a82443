"""Preflight of multi-node groups (issue 32), read-only: which zone offers a zoned group's type, and
the Capacity Reservation or Capacity Block a group targets.

* ``zone-offering:<group>``: ``ec2:DescribeInstanceTypeOfferings`` (LocationType
  ``availability-zone``): the group's ``availabilityZone`` offers each of its types, else FAIL
  naming the zones that do (a cluster placement group and a reservation live in one zone).
* ``capacity-reservation:<group>``: ``ec2:DescribeCapacityReservations`` of the group's
  ``capacityReservation.id``: its state (botocore ``ec2`` CapacityReservationState: ``active``
  PASS; ``scheduled``, ``pending``, ``payment-pending``, ``assessing``, ``delayed``, ``unavailable``
  WARN: not usable yet; ``expired``, ``cancelled``, ``failed``, ``payment-failed``, ``unsupported``
  FAIL), its type (``InstanceType`` one of the group's), zone (the group's ``availabilityZone``),
  instance count (``TotalInstanceCount``, WARN below ``maxSize``), start and end
  (``StartDate``/``EndDate``, in the details); a Capacity Block (``ReservationType: capacity-block``)
  only with ``capacityType: CAPACITY_BLOCK`` and the other way round; a Capacity Block that ends
  within ``CAPACITY_BLOCK_END_WARNING`` is a WARN (EC2 Auto Scaling User Guide,
  launch-template-capacity-blocks: scale in "more than 30 minutes before the Capacity Block
  reservation end time"; EC2 terminates what still runs). With the group's verification Jobs
  (config/verification.py, issue 41): a verified Capacity Block that is not active FAILs, free
  instances fewer than the Jobs need WARN. A reservation created in a cluster placement group
  (``PlacementGroupArn``) FAILs unless the group's ``placementGroup`` names that placement group.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from botocore.exceptions import ClientError

from ..config.groups import GpuNodeGroupSettings
from ..config.multinode import CAPACITY_BLOCK
from .results import (
    FAIL,
    PASS,
    WARN,
    CheckResult,
    Status,
    describe_client_error,
    error_code,
    reraise_if_credentials,
    worst,
)

#: A Capacity Block ending sooner than this is a WARN.
CAPACITY_BLOCK_END_WARNING = dt.timedelta(hours=24)
#: The scale-in lead the EC2 Auto Scaling guide asks for before a block's end.
CAPACITY_BLOCK_SCALE_IN_LEAD = dt.timedelta(minutes=30)
_NOT_YET = frozenset({"scheduled", "pending", "payment-pending", "assessing", "delayed", "unavailable"})
_ACTIVE = "active"
_BLOCK_TYPE = "capacity-block"


def check_zone_offering(ec2: Any, group: GpuNodeGroupSettings) -> CheckResult:
    """The group's ``availabilityZone`` offers each of its instance types."""
    check = f"zone-offering:{group.name}"
    zone = group.availability_zone
    details: dict[str, Any] = {"zone": zone, "instance_types": list(group.instance_types)}
    try:
        offerings = ec2.describe_instance_type_offerings(
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": list(group.instance_types)}],
        )["InstanceTypeOfferings"]
    except ClientError as err:
        reraise_if_credentials(err)
        return CheckResult(check, WARN, f"could not check: {describe_client_error(err)}", details)
    zones: dict[str, list[str]] = {}
    for offering in offerings:
        zones.setdefault(offering["InstanceType"], []).append(offering["Location"])
    details["offered_in"] = {t: sorted(zones.get(t, [])) for t in group.instance_types}
    missing = [t for t in group.instance_types if zone not in zones.get(t, [])]
    if missing:
        where = "; ".join(f"{t}: {', '.join(sorted(zones.get(t, []))) or 'no zone'}" for t in missing)
        return CheckResult(
            check,
            FAIL,
            f"{zone} does not offer {', '.join(missing)} (gpuNodeGroups[{group.name}].availabilityZone); "
            f"zones that do: {where}",
            details,
        )
    return CheckResult(check, PASS, f"{zone} offers {', '.join(group.instance_types)}", details)


def _beyond(group: GpuNodeGroupSettings) -> str:
    """What happens to a launch beyond a reservation targeted by id: EC2 never falls back to
    On-Demand from one (EC2 User Guide, capacity-reservations-launch: an instance launches into a
    reservation only with "sufficient available capacity"); a Karpenter group falls back itself."""
    if group.capacity_type == CAPACITY_BLOCK:
        return "launches beyond it fail (a Capacity Block has no On-Demand fallback)"
    if group.provider.picks_reserved_offerings:
        return "Karpenter launches the others On-Demand (its NodePool allows on-demand beside reserved)"
    return "launches beyond it fail (EC2 does not fall back to On-Demand from a reservation targeted by id)"


def _placement_parts(group: GpuNodeGroupSettings, found: dict[str, Any]) -> list[tuple[Status, str]]:
    """A reservation created in a cluster placement group (``PlacementGroupArn``, botocore ``ec2``
    CapacityReservation: "The Amazon Resource Name (ARN) of the cluster placement group in which the
    Capacity Reservation was created") is used only by instances launched into that group (EC2 User
    Guide, cr-cpg): the group's ``placementGroup`` must name it."""
    arn = found.get("PlacementGroupArn")
    if not arn:
        return []
    name = str(arn).rsplit("/", 1)[-1]
    if group.placement_group == name:
        return [(PASS, f"it is in placement group {name}, the group's placementGroup")]
    have = (
        f"placementGroup is {group.placement_group}"
        if group.placement_group
        else "placement: cluster creates another"
        if group.placement
        else "the group names none"
    )
    return [
        (
            FAIL,
            f"it was created in placement group {name}: only instances launched into it use it, and {have} "
            f"(set placementGroup: {name})",
        )
    ]


def _verification_parts(group: GpuNodeGroupSettings, found: dict[str, Any], needed: int) -> list[tuple[Status, str]]:
    """Whether the verification Jobs ``pulumi up`` waits for can get their ``needed`` instances (issue
    41): a Capacity Block verified (``verification.capacityBlocks: verify``) must be active, else the
    update waits for nodes that cannot launch and fails (FAIL); a reservation with fewer free
    instances than the Jobs need, where no On-Demand fallback exists (a managed group by id, a block),
    holds the update until the Jobs' deadlines unless instances free up meanwhile (WARN)."""
    if not needed:
        return []
    state = found.get("State", "")
    if group.capacity_type == CAPACITY_BLOCK and state != _ACTIVE:
        return [
            (
                FAIL,
                f"verification.capacityBlocks is verify but the block is {state}: pulumi up would wait for {needed} "
                "node(s) of the group that cannot launch before it is active (set skip, or deploy inside the window)",
            )
        ]
    free = found.get("AvailableInstanceCount")
    if group.provider.picks_reserved_offerings and group.capacity_type != CAPACITY_BLOCK:
        return []  # Karpenter launches On-Demand when the reservation is full
    if isinstance(free, int) and free < needed:
        return [
            (
                WARN,
                f"the verification Jobs need {needed} free instance(s) of it at once (the NCCL check two), it has "
                f"{free}: pulumi up waits for them until the Jobs' deadlines (verification.ncclAdvisory: true "
                "declares the NCCL check without the wait)",
            )
        ]
    return []


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, dt.datetime) else None


def check_reservation(ec2: Any, group: GpuNodeGroupSettings, now: dt.datetime, needed: int = 0) -> CheckResult:
    """The reservation ``group`` targets by id: state, type, zone, count, window (module docstring);
    ``needed``: the group's instances the verification Jobs of ``pulumi up`` launch at once
    (config/verification.py ``instances_needed``), against its free instances."""
    reservation_id = group.capacity_reservation.id if group.capacity_reservation else None
    check = f"capacity-reservation:{group.name}"
    try:
        (found,) = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])["CapacityReservations"]
    except ClientError as err:
        if error_code(err) in ("InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"):
            return CheckResult(check, FAIL, f"{reservation_id} does not exist in this account and region", {})
        reraise_if_credentials(err)
        return CheckResult(check, WARN, f"could not check: {describe_client_error(err)}", {})
    state = found.get("State", "")
    kind = found.get("ReservationType", "default")
    start, end = found.get("StartDate"), found.get("EndDate")
    details: dict[str, Any] = {
        "id": reservation_id,
        "state": state,
        "reservation_type": kind,
        "instance_type": found.get("InstanceType"),
        "zone": found.get("AvailabilityZone"),
        "total_instances": found.get("TotalInstanceCount"),
        "available_instances": found.get("AvailableInstanceCount"),
        "start": _iso(start),
        "end": _iso(end),
    }
    details["placement_group_arn"] = found.get("PlacementGroupArn")
    parts: list[tuple[Status, str]] = []
    if state == _ACTIVE:
        parts.append((PASS, f"{reservation_id} is active"))
    elif state in _NOT_YET:
        parts.append((WARN, f"{reservation_id} is {state}: no node launches into it until it is active"))
    else:
        parts.append((FAIL, f"{reservation_id} is {state}: nothing launches into it"))
    if found.get("InstanceType") not in group.instance_types:
        parts.append((FAIL, f"it holds {found.get('InstanceType')}, not {', '.join(group.instance_types)}"))
    if group.availability_zone is not None and found.get("AvailabilityZone") != group.availability_zone:
        parts.append(
            (
                FAIL,
                f"it is in {found.get('AvailabilityZone')}, the group's availabilityZone is {group.availability_zone}",
            )
        )
    total = found.get("TotalInstanceCount") or 0
    if total < group.scaling.max_size:
        parts.append((WARN, f"it holds {total} instance(s), maxSize is {group.scaling.max_size}: {_beyond(group)}"))
    parts += _placement_parts(group, found)
    parts += _verification_parts(group, found, needed)
    block = kind == _BLOCK_TYPE
    if block != (group.capacity_type == CAPACITY_BLOCK):
        parts.append(
            (
                FAIL,
                f"it is a {'Capacity Block' if block else 'Capacity Reservation'}: capacityType must be "
                f"{'CAPACITY_BLOCK' if block else 'ON_DEMAND'} (a block is launched with market type capacity-block)",
            )
        )
    if block and isinstance(start, dt.datetime) and isinstance(end, dt.datetime):
        parts.append((PASS, f"its window is {start.isoformat()} to {end.isoformat()}"))
        left = end - now
        if dt.timedelta(0) < left < CAPACITY_BLOCK_END_WARNING:
            scale_in = end - CAPACITY_BLOCK_SCALE_IN_LEAD
            parts.append(
                (
                    WARN,
                    f"it ends in {int(left.total_seconds() // 3600)}h{int(left.total_seconds() % 3600 // 60):02d}m: "
                    f"drain and scale the group to 0 before {scale_in.isoformat()} (EC2 terminates what still runs)",
                )
            )
    status = worst(s for s, _ in parts)
    shown = [text for s, text in parts if s == status] if status != PASS else [text for _, text in parts]
    return CheckResult(check, status, "; ".join(shown), details)
