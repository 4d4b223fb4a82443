"""Multi-node GPU groups (issue 32): EFA, cluster placement and reserved capacity of a GPU node
group (``gpuNodeGroups[].efa``, ``placement``, ``placementGroup``, ``availabilityZone``,
``capacityReservation``, ``capacityType: CAPACITY_BLOCK``), and their rules. Every setting is
opt-in: a group without them renders as before. What each key does, costs and needs, for managed and
Karpenter groups: docs/multi-node.md. The sources of the rules:

* ``efa``: types with EFA only, every type of a group with the same EFA devices (``catalog.efa``: EC2
  DescribeInstanceTypes ``EfaSupported``); one ``availabilityZone`` ("EFA-only interfaces ... limiting
  communication to interfaces within the same Availability Zone", EKS User Guide, node-efa at
  awsdocs/amazon-eks-user-guide 4d52b4d).
* ``placement: cluster``, ``placementGroup``: one zone ("A cluster placement group is a logical grouping
  of instances within a single Availability Zone", EC2 User Guide, placement-strategies); an ODCR made
  in a cluster placement group serves only launches into it (EC2 User Guide, cr-cpg); neither with
  ``CAPACITY_BLOCK``, whose instances are "automatically placed close together inside Amazon EC2
  UltraClusters" (EC2 User Guide, ec2-capacity-blocks).
* ``capacityReservation``: the launch template's ``CapacityReservationSpecification`` (botocore ``ec2``
  2016-11-15 LaunchTemplateCapacityReservationSpecificationRequest: a preference or a target, the
  target an id or a resource group ARN; both only with ``capacity-reservations-only``, EC2 API
  Reference, CapacityReservationSpecification). A group target falls back to On-Demand (EC2 User
  Guide, create-cr-group), an id never does (capacity-reservations-launch: matching type, platform,
  zone, tenancy, free capacity, ``active``), so a managed group with an id names its zone and one
  type; On-Demand capacity only, not with ``SPOT`` (EC2 User Guide, capacity-reservations).
* ``capacityType: CAPACITY_BLOCK`` (botocore ``eks`` 2017-11-01 ``CapacityTypes``): a custom launch
  template with ``InstanceMarketOptions.MarketType: capacity-block`` targeting the block, one type
  (EKS User Guide, capacity-blocks-mng, which also asks for desired size 0 to upgrade); "a single
  Availability Zone", scaled in "to zero more than 30 minutes before the Capacity Block reservation
  end time" (EC2 Auto Scaling User Guide, launch-template-capacity-blocks): ``capacityReservation.id``,
  one type, one zone, ``minSize`` and ``desiredSize`` 0.
* Karpenter 1.14.1 (../shared/reference/karpenter/1.14.1/crds): ``capacityReservationSelectorTerms`` by
  ``id`` (no resource group, no bare preference), ``placementGroupSelector``; ``efa``: the
  EC2NodeClass's ``spec.networkInterfaces`` (``catalog.efa.karpenter_interfaces``), put on every node
  with the security groups it selects (pkg/providers/launchtemplate/launchtemplate.go
  ``generateNetworkInterfaces``); card 0's efa-only interface takes a VPC CNI ENI (``efa_enis_taken``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from ..catalog import efa
from .errors import KeyedProblem
from .fields import _Model, doc

CAPACITY_BLOCK = "CAPACITY_BLOCK"
#: The preference that launches only into reserved capacity (no On-Demand fallback).
ONLY_RESERVATIONS = "capacity-reservations-only"
#: EC2 Capacity Reservation ids (``cr-`` and 17 hex digits: EC2 API reference, "Resource IDs";
#: Karpenter's CRD: ``^cr-[0-9a-z]+$``).
_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{17}", re.ASCII)
#: An AWS Resource Groups group ARN (the target of a Capacity Reservation group).
_GROUP_ARN = re.compile(r"arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]{1,128}", re.ASCII)
#: An Availability Zone name (``us-west-2a``; Local Zones such as ``us-west-2-lax-1a`` too).
_ZONE = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+([a-z-]*\d*)?[a-z]", re.ASCII)


class CapacityReservation(_Model):
    """The launch template's Capacity Reservation target or preference (one key, or a resource
    group with ``preference: capacity-reservations-only``)."""

    model_config = ConfigDict(title="CapacityReservation")

    id: str | None = Field(
        None,
        **doc(
            "An On-Demand Capacity Reservation or Capacity Block to launch into (`cr-` and 17 hex digits).",
            type="string",
            default="none",
        ),
    )
    resource_group_arn: str | None = Field(
        None,
        **doc("A Capacity Reservation group (AWS Resource Groups ARN) to launch into.", type="string", default="none"),
    )
    preference: Literal["open", "none", "capacity-reservations-only"] | None = Field(
        None,
        **doc(
            "EC2's preference: `open` (any open reservation of matching attributes, else On-Demand), `none`, "
            "`capacity-reservations-only` (the launch fails without reserved capacity; also beside "
            "`resourceGroupArn`, where it stops the group's fallback to On-Demand).",
            type="`open` | `none` | `capacity-reservations-only`",
            default="none",
        ),
    )

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not _RESERVATION_ID.fullmatch(value):
            raise ValueError("a Capacity Reservation id such as cr-0123456789abcdef0 (cr- and 17 hex digits)")
        return value

    @field_validator("resource_group_arn")
    @classmethod
    def _arn(cls, value: str | None) -> str | None:
        if value is not None and not _GROUP_ARN.fullmatch(value):
            raise ValueError(
                "a resource group ARN such as arn:aws:resource-groups:us-west-2:123456789012:group/my-odcrs"
            )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> CapacityReservation:
        given = [k for k in ("id", "resource_group_arn", "preference") if getattr(self, k) is not None]
        if given == ["resource_group_arn", "preference"] and self.preference == ONLY_RESERVATIONS:
            return self
        if len(given) != 1:
            raise ValueError(
                "exactly one of id, resourceGroupArn, preference, or resourceGroupArn with preference "
                "capacity-reservations-only: EC2's CapacityReservationSpecification takes a preference or a target, "
                "a target is one reservation or one group, and both only with capacity-reservations-only (EC2 API "
                "Reference, CapacityReservationSpecification)"
            )
        return self


# The group's fields, declared in groups.py from these (one line each there).
EFA_FIELD: Any = Field(
    False,
    **doc(
        "Give each node every EFA device its type has (p5.48xlarge: 32, p5en.48xlarge: 16, p4d/p4de: 4, "
        "g6e.48xlarge: 4; other EFA types 1), a security group that lets the group's nodes reach each other on "
        "all traffic, and the AWS EFA device plugin, so pods request `vpc.amazonaws.com/efa`. Only on types with "
        "EFA; needs `availabilityZone` (EFA traffic stays in one zone). Karpenter groups: `efa-only` interfaces "
        "through the EC2NodeClass's `networkInterfaces`, on every node. See docs/multi-node.md.",
        type="bool",
        default="`false`",
    ),
)
PLACEMENT_FIELD: Any = Field(
    None,
    **doc(
        "`cluster`: launch the group's nodes into an EC2 cluster placement group (one Availability Zone, low "
        "latency between nodes; launches may fail with insufficient capacity). Needs `availabilityZone`. Not "
        "with `CAPACITY_BLOCK` (a block's instances sit close together already).",
        type="`cluster`",
        default="none",
    ),
)
PLACEMENT_GROUP_FIELD: Any = Field(
    None,
    **doc(
        "The name of an existing EC2 placement group to launch the group's nodes into (an ODCR created in a "
        "cluster placement group is used only from it). Not with `placement` or `CAPACITY_BLOCK`. Needs "
        "`availabilityZone`.",
        type="string",
        default="none",
    ),
)
AVAILABILITY_ZONE_FIELD: Any = Field(
    None,
    **doc(
        "The one Availability Zone of the group's nodes: its subnets are narrowed to those in this zone. Required "
        "with `efa`, `placement`, `placementGroup`, `CAPACITY_BLOCK` and (managed node groups) "
        "`capacityReservation.id`: the reservation's zone.",
        type="zone name",
        default="every zone of the subnets",
    ),
)
CAPACITY_RESERVATION_FIELD: Any = Field(
    None,
    **doc(
        "Launch into reserved capacity: `{id}` (an ODCR or Capacity Block: no On-Demand fallback; a managed "
        "group names its zone and one type), `{resourceGroupArn}` (a reservation group, falling back to "
        "On-Demand unless `preference: capacity-reservations-only` is set beside it) or `{preference}`. Not "
        "with `SPOT`. Karpenter groups: `id` only.",
        type="`{id | resourceGroupArn | preference}`",
        default="none",
    ),
)


def _zone_problem(value: str | None) -> str | None:
    if value is not None and not _ZONE.fullmatch(value):
        return "an Availability Zone name such as us-west-2a"
    return None


def availability_zone(value: str | None) -> str | None:
    """The ``availabilityZone`` field's check."""
    problem = _zone_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def multinode_problems(group: Any) -> list[KeyedProblem]:
    """The rules across a group's multi-node keys (keys relative to the group; ``group`` a
    ``GpuNodeGroupSettings``, duck-typed: groups.py imports this module)."""
    problems: list[KeyedProblem] = []
    types = list(group.instance_types)
    provider = group.provider
    reservation = group.capacity_reservation
    by_id = reservation is not None and reservation.id is not None
    if group.efa:
        without = [t for t in types if t not in efa.EFA_TYPES]
        if without:
            problems.append(
                (
                    ("efa",),
                    True,
                    f"false, or instance types with EFA: {', '.join(without)} have none (EC2 DescribeInstanceTypes "
                    "NetworkInfo.EfaSupported false, botocore 1.44.5 / moto 5.2.5; components/catalog/efa.py)",
                )
            )
        elif len({efa.efa_devices(t) for t in types}) > 1:
            counts = ", ".join(f"{t}: {efa.efa_devices(t)}" for t in types)
            problems.append(
                (
                    ("instanceTypes",),
                    types,
                    f"types with the same number of EFA devices with efa ({counts}): the group's one launch template "
                    "lists each node's EFA interfaces",
                )
            )
    if group.availability_zone is None:
        needs_zone = [why for key, why in _ZONED if key(group)]
        if needs_zone:
            problems.append((("availabilityZone",), None, f"a zone name with {' and '.join(needs_zone)}"))
    problems += _placement_problems(group)
    if by_id and not provider.picks_reserved_offerings and group.capacity_type != CAPACITY_BLOCK and len(types) != 1:
        problems.append(
            (
                ("instanceTypes",),
                types,
                "the reservation's one instance type with capacityReservation.id: a launch into a targeted "
                f"reservation succeeds only with its attributes, instance type included ({_ODCR_SOURCE})",
            )
        )
    if reservation is not None and group.capacity_type == "SPOT":
        problems.append(
            (
                ("capacityReservation",),
                reservation.model_dump(by_alias=True, exclude_none=True),
                "no key with capacityType SPOT: Capacity Reservations hold On-Demand capacity (EC2 User Guide, "
                "ec2-capacity-reservations)",
            )
        )
    if provider.reservation_by_id_only and reservation is not None and reservation.id is None:
        problems.append(
            (
                ("capacityReservation",),
                reservation.model_dump(by_alias=True, exclude_none=True),
                "{id: cr-...} with capacityProvider karpenter: the EC2NodeClass's capacityReservationSelectorTerms "
                "select by id, tags, owner or match criteria, not by resource group or preference (Karpenter 1.14.1 "
                "EC2NodeClass CRD)",
            )
        )
    if group.capacity_type == CAPACITY_BLOCK:
        problems += _capacity_block_problems(group, types)
    return problems


_CB_SOURCE = "EKS User Guide, capacity-blocks-mng; EC2 Auto Scaling User Guide, launch-template-capacity-blocks"
_ODCR_SOURCE = "EC2 User Guide, capacity-reservations-launch: no fallback to On-Demand"
#: Why a group needs ``availabilityZone``: (applies to the group, the reason in the message).
_ZONED: tuple[tuple[Any, str], ...] = (
    (lambda g: g.efa, "efa (EFA traffic stays in one Availability Zone: EKS User Guide, node-efa)"),
    (
        lambda g: g.placement == "cluster",
        "placement: cluster (a cluster placement group lives in one Availability Zone)",
    ),
    (lambda g: g.placement_group is not None, "placementGroup (the placement group's zone)"),
    (
        lambda g: g.capacity_type == CAPACITY_BLOCK,
        "capacityType CAPACITY_BLOCK (a Capacity Block is in one Availability Zone)",
    ),
    (
        lambda g: (
            not g.provider.picks_reserved_offerings
            and g.capacity_reservation is not None
            and g.capacity_reservation.id is not None
        ),
        "capacityReservation.id (the reservation's zone: EKS would also launch into subnets of other zones, where "
        f"every launch fails; {_ODCR_SOURCE})",
    ),
)
#: EC2 CreatePlacementGroup ``GroupName``: "Up to 255 ASCII characters" (EC2 API Reference).
_PLACEMENT_GROUP_NAME = re.compile(r"[\x20-\x7e]{1,255}", re.ASCII)


def _placement_problems(group: Any) -> list[KeyedProblem]:
    """``placement`` and ``placementGroup``: one of them, a valid name, neither with a Capacity Block."""
    problems: list[KeyedProblem] = []
    name = group.placement_group
    if name is not None and not _PLACEMENT_GROUP_NAME.fullmatch(name):
        problems.append((("placementGroup",), name, "a placement group name: 1 to 255 ASCII characters"))
    if name is not None and group.placement is not None:
        problems.append(
            (("placementGroup",), name, "no placementGroup with placement: cluster (which creates the group's own)")
        )
    if group.capacity_type == CAPACITY_BLOCK:
        for key, value in (("placement", group.placement), ("placementGroup", name)):
            if value is not None:
                problems.append(
                    (
                        (key,),
                        value,
                        f"no {key} with capacityType CAPACITY_BLOCK: instances of a Capacity Block are placed close "
                        "together in an EC2 UltraCluster already (EC2 User Guide, ec2-capacity-blocks: a placement "
                        "group adds nothing but one more attribute each launch into the block must match)",
                    )
                )
    return problems


def _capacity_block_problems(group: Any, types: list[str]) -> list[KeyedProblem]:
    problems: list[KeyedProblem] = []
    reservation = group.capacity_reservation
    if reservation is None or reservation.id is None:
        problems.append(
            (
                ("capacityReservation",),
                reservation.model_dump(by_alias=True, exclude_none=True) if reservation else None,
                "{id: cr-...}, the Capacity Block's reservation id, with capacityType CAPACITY_BLOCK: the launch "
                f"template targets it with market type capacity-block ({_CB_SOURCE})",
            )
        )
    if len(types) != 1:
        problems.append(
            (
                ("instanceTypes",),
                types,
                f"one instance type, the Capacity Block's, with capacityType CAPACITY_BLOCK ({_CB_SOURCE})",
            )
        )
    for key, value in (("minSize", group.scaling.min_size), ("desiredSize", group.scaling.desired_size)):
        # (A group without an Auto Scaling group keeps no size at all: config/capacity_provider.py.)
        if value != 0 and group.provider.auto_scaling_group:
            problems.append(
                (
                    ("scaling", key),
                    value,
                    f"0 with capacityType CAPACITY_BLOCK: nodes exist only inside the block's window (EC2 terminates "
                    "them at its end), the group must be at desired size 0 to be upgraded, and the autoscaler brings "
                    f"nodes for pending pods while the block is active ({_CB_SOURCE})",
                )
            )
    return problems


def efa_enis_taken(group: Any) -> int:
    """ENIs of the default card an EFA node's interfaces take from the VPC CNI (``config/addresses.py``,
    the plan's max pods): none on a managed node group (card 0's interface is ``efa``, EFA and ENA in
    one, the other cards' are ``efa-only``), one on a Karpenter group (its primary is an
    ``interface``, and card 0's EFA an ``efa-only`` interface beside it: ``catalog.efa.
    karpenter_interfaces``). ``efa-only`` interfaces hold no subnet address either way."""
    return group.provider.efa_enis_taken if group.efa else 0
