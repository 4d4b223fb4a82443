"""What a multi-node GPU group (issue 32: ``efa``, ``placement``, ``capacityReservation``,
``capacityType: CAPACITY_BLOCK``) adds to its managed node group's launch template, in EC2's own
API shape (``LaunchTemplateData`` keys, botocore ``ec2`` 2016-11-15: tests validate each fragment
against ``RequestLaunchTemplateData`` with botocore's validator and create it under moto).
Pure: no Pulumi. The plan carries the fragments known from the settings (``launch_template_data``,
``GroupPlan.launch_template_data``); ``blocks/managed.py`` turns them into the launch template's
arguments, with the EFA interfaces once their security groups exist (``network_interfaces``).

* ``NetworkInterfaces`` (EFA): ``catalog.efa.efa_interfaces`` (EC2 User Guide, efa.html and
  efa-start-nccl.html: card 0 device 0 ``efa``, every other card device 1 ``efa-only``), each
  with the node's security groups. A launch template that lists interfaces puts the security
  groups on them (EC2: ``SecurityGroupIds`` and interfaces' ``Groups`` are exclusive), and EKS adds
  its cluster security group only to a launch template without security groups (EKS User Guide,
  launch-templates "Security groups"), so the interfaces carry the cluster security group and the
  group's EFA security group. No ``SubnetId`` and no public address: EKS refuses a launch template
  with a subnet (launch-templates, "Amazon EC2 launch template configuration basics") and picks the
  subnet from the node group's.
* ``Placement.GroupName``: the group's cluster placement group (EC2 User Guide,
  placement-strategies "cluster"), or the existing one ``placementGroup`` names.
* ``CapacityReservationSpecification``: ``{CapacityReservationTarget: {CapacityReservationId |
  CapacityReservationResourceGroupArn}}`` (the group with ``CapacityReservationPreference:
  capacity-reservations-only`` where set) or ``{CapacityReservationPreference}``.
* ``InstanceMarketOptions: {MarketType: capacity-block}`` and ``InstanceType`` for a Capacity Block
  (EKS User Guide, capacity-blocks-mng: the launch template names the block's instance type, so the
  node group names none: EKS refuses ``instanceTypes`` beside a launch template's ``InstanceType``,
  CreateNodegroup ``instanceTypes``: "If you specify a launch template that includes an instance
  type, don't specify instanceTypes").

The EFA security group: "The security group must allow all inbound and outbound traffic to and from
the security group itself" (EC2 User Guide, efa-start.html "Prepare an EFA-enabled security
group"): one ingress and one egress rule, all protocols, referencing the group itself.
"""

from __future__ import annotations

from typing import Any

from ..catalog import efa
from ..config.multinode import CAPACITY_BLOCK

#: The EFA security group's rules (``aws.vpc.SecurityGroupIngressRule``/``EgressRule``): all
#: protocols (``-1``), to and from the group itself.
ALL_TRAFFIC = "-1"
CAPACITY_BLOCK_MARKET = "capacity-block"
#: The placement strategy of ``placement: cluster``.
CLUSTER_STRATEGY = "cluster"


def network_interfaces(instance_type: str, groups: list[Any]) -> list[dict[str, Any]]:
    """The EFA node's ``NetworkInterfaces`` (empty for a type without EFA), each with ``groups``."""
    return [
        {
            "NetworkCardIndex": i.network_card_index,
            "DeviceIndex": i.device_index,
            "InterfaceType": i.interface_type,
            "DeleteOnTermination": True,
            "Groups": list(groups),
        }
        for i in efa.efa_interfaces(instance_type)
    ]


def capacity_reservation_specification(group: Any) -> dict[str, Any] | None:
    """``CapacityReservationSpecification`` of ``group`` (a GpuNodeGroupSettings), or None."""
    reservation = group.capacity_reservation
    if reservation is None:
        return None
    if reservation.id is not None:
        return {"CapacityReservationTarget": {"CapacityReservationId": reservation.id}}
    if reservation.resource_group_arn is not None:
        target = {"CapacityReservationTarget": {"CapacityReservationResourceGroupArn": reservation.resource_group_arn}}
        # With capacity-reservations-only beside it: no On-Demand fallback from the group (config/multinode.py).
        return {"CapacityReservationPreference": reservation.preference, **target} if reservation.preference else target
    return {"CapacityReservationPreference": reservation.preference}


def instance_market_options(group: Any) -> dict[str, Any] | None:
    """``InstanceMarketOptions`` of a Capacity Block group, else None."""
    return {"MarketType": CAPACITY_BLOCK_MARKET} if group.capacity_type == CAPACITY_BLOCK else None


def launch_template_instance_type(group: Any) -> str | None:
    """The launch template's ``InstanceType``: a Capacity Block group's one type, else None (the
    node group lists its types)."""
    return group.instance_types[0] if group.capacity_type == CAPACITY_BLOCK else None


def launch_template_data(group: Any) -> dict[str, Any]:
    """What ``group``'s multi-node settings add to its managed node group's launch template, in
    ``LaunchTemplateData`` keys (``CapacityReservationSpecification``, ``InstanceMarketOptions``,
    ``InstanceType``; only those set): empty without them, and for a group whose nodes a NodePool
    launches (its EC2NodeClass selects reservations itself: plan/karpenter.py)."""
    if group.provider.node_pool:
        return {}
    fragments = {
        "CapacityReservationSpecification": capacity_reservation_specification(group),
        "InstanceMarketOptions": instance_market_options(group),
        "InstanceType": launch_template_instance_type(group),
    }
    return {key: value for key, value in fragments.items() if value is not None}


def zone_subnets_problem(ids: list[str], zone: str, group: str) -> str | None:
    """Why a group's subnets in its ``availabilityZone`` (``ids``, ec2:DescribeSubnets filtered by the
    group's subnet ids and the zone) cannot carry it: none is there (EKS needs a subnet). None: fine."""
    if ids:
        return None
    return (
        f'gpu-eks:gpuNodeGroups[{group}].availabilityZone: received "{zone}"; expected a zone of one of the '
        "group's subnets (none of them is in it)"
    )


def is_multinode(group: Any) -> bool:
    """Whether ``group`` uses any multi-node setting (else its launch template is as before)."""
    return bool(
        group.efa
        or group.placement
        or group.placement_group
        or group.availability_zone
        or group.capacity_reservation is not None
        or group.capacity_type == CAPACITY_BLOCK
    )
