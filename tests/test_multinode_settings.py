"""Issue 32: the multi-node settings of a GPU node group (config/multinode.py) and the EFA facts
of the catalog (catalog/efa.py) against EC2's DescribeInstanceTypes data (moto 5.2.5)."""

from __future__ import annotations

import gzip
import importlib.resources
import json
from typing import Any

import pytest

from components import catalog
from components.catalog import efa
from components.check.loading import load_settings
from components.config.errors import ConfigError

CR = "cr-0123456789abcdef0"
P5 = {"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 1}}
ZONE = "us-west-2a"


def _moto_instance_types() -> dict[str, Any]:
    data = importlib.resources.files("moto.ec2") / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


def group(**keys: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", **keys}]}).gpu_node_groups[0]


def problems(**keys: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        group(**keys)
    return [str(p) for p in info.value.problems]


# --- the catalog against EC2 --------------------------------------------------------------------


def test_efa_rows_match_describe_instance_types():
    ec2 = _moto_instance_types()
    for name in catalog.GPU_INSTANCE_TYPES:
        network = ec2[name]["NetworkInfo"]
        facts = efa.EFA_TYPES.get(name)
        assert network["EfaSupported"] is (facts is not None), name
        if facts is not None:
            assert network["EfaInfo"]["MaximumEfaInterfaces"] == facts.max_efa_interfaces, name
            assert network["MaximumNetworkCards"] == facts.network_cards, name
            count, _, gbit = network["NetworkPerformance"].removesuffix(" Gigabit").rpartition(" ")
            assert int(count.removesuffix("x") or 1) * int(gbit) == facts.network_gbps, name
            # Every card that gets an EFA takes the efa and efa-only interface types.
            for card in network["NetworkCards"][: efa.efa_devices(name)]:
                assert {"efa", "efa-only"} <= set(card["InterfaceTypes"]), name


def test_nccl_floors_as_literals():
    assert {t: efa.nccl_bus_bandwidth_floor_gbytes(t) for t in ("p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge")} == {
        "p5.48xlarge": 200.0,
        "p5en.48xlarge": 200.0,
        "p4d.24xlarge": 25.0,
    }


def test_efa_devices_per_type_as_literals():
    assert {t: efa.efa_devices(t) for t in ("p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "g6e.24xlarge")} == {
        "p5.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p4d.24xlarge": 4,
        "g6e.24xlarge": 2,
    }
    assert efa.efa_devices("g4dn.xlarge") == 0


def test_efa_interfaces_primary_efa_then_efa_only_on_each_card():
    assert efa.efa_interfaces("p4d.24xlarge") == (
        efa.EfaInterface(0, 0, "efa"),
        efa.EfaInterface(1, 1, "efa-only"),
        efa.EfaInterface(2, 1, "efa-only"),
        efa.EfaInterface(3, 1, "efa-only"),
    )
    assert efa.efa_interfaces("g6.12xlarge") == (efa.EfaInterface(0, 0, "efa"),)
    p5 = efa.efa_interfaces("p5.48xlarge")
    assert len(p5) == 32 and p5[31] == efa.EfaInterface(31, 1, "efa-only")


# --- the settings -------------------------------------------------------------------------------


def test_defaults_are_off():
    g = group()
    assert (g.efa, g.placement, g.availability_zone, g.capacity_reservation, g.capacity_type) == (
        False,
        None,
        None,
        None,
        "ON_DEMAND",
    )


def test_efa_refused_on_a_type_without_it():
    assert problems(instanceTypes=["g5.xlarge", "g5.2xlarge"], efa=True, availabilityZone=ZONE) == [
        "gpu-eks:gpuNodeGroups[0].efa: received true; expected false, or instance types with EFA: g5.xlarge, "
        "g5.2xlarge have none (EC2 DescribeInstanceTypes NetworkInfo.EfaSupported false, botocore 1.44.5 / "
        "moto 5.2.5; components/catalog/efa.py)"
    ]


def test_efa_accepted_where_every_type_has_it():
    assert group(instanceTypes=["g6.12xlarge", "g6.24xlarge"], efa=True, availabilityZone=ZONE).efa is True


def test_efa_on_karpenter_takes_an_eni_from_the_cni_and_no_address():
    from components.config.multinode import efa_enis_taken

    zero = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
    karpenter = group(**P5, efa=True, capacityProvider="karpenter", scaling=zero, availabilityZone=ZONE)
    # Its efa-only interfaces hold no address; the one on card 0 takes one of the CNI's two ENIs.
    assert efa_enis_taken(karpenter) == 1
    # A managed group's card 0 interface is efa (EFA and ENA in one): the CNI keeps its ENIs.
    assert efa_enis_taken(group(**P5, efa=True, availabilityZone=ZONE)) == 0
    assert efa_enis_taken(group(**P5, capacityProvider="karpenter", scaling=zero)) == 0
    base = {"name": "g", **P5, "capacityProvider": "karpenter", "scaling": zero, "availabilityZone": ZONE}
    without = load_settings({"clusterName": "c", "gpuNodeGroups": [base]})
    with_efa = load_settings({"clusterName": "c", "gpuNodeGroups": [{**base, "efa": True}]})
    # p5.48xlarge: 2 ENIs of 50 addresses, 100 a node; one ENI with EFA on card 0: 50. Two nodes.
    assert (catalog.gpu_node_addresses("p5.48xlarge"), catalog.gpu_node_addresses("p5.48xlarge", 1)) == (100, 50)
    assert without.nodes_need_addresses(True) - with_efa.nodes_need_addresses(True) == 2 * 50


def test_cluster_placement_needs_a_zone():
    assert problems(**P5, placement="cluster") == [
        "gpu-eks:gpuNodeGroups[0].availabilityZone: received null; expected a zone name with placement: cluster "
        "(a cluster placement group lives in one Availability Zone)"
    ]
    assert group(**P5, placement="cluster", availabilityZone="us-west-2b").availability_zone == "us-west-2b"


def test_zone_name_checked():
    assert problems(availabilityZone="us-west-2") == [
        'gpu-eks:gpuNodeGroups[0].availabilityZone: received "us-west-2"; expected an Availability Zone name '
        "such as us-west-2a"
    ]


@pytest.mark.parametrize(
    "reservation",
    [
        {},
        {"id": CR, "preference": "open"},
        {"id": CR, "resourceGroupArn": "arn:aws:resource-groups:us-west-2:123456789012:group/g"},
    ],
)
def test_reservation_takes_exactly_one_form(reservation):
    (problem,) = problems(capacityReservation=reservation)
    assert "expected exactly one of id, resourceGroupArn, preference" in problem


@pytest.mark.parametrize(
    ("reservation", "expected"),
    [
        ({"id": "cr-123"}, "a Capacity Reservation id such as cr-0123456789abcdef0"),
        ({"resourceGroupArn": "arn:aws:iam::123456789012:role/x"}, "a resource group ARN such as"),
        ({"preference": "targeted"}, "'open', 'none' or 'capacity-reservations-only'"),
    ],
)
def test_reservation_forms_checked(reservation, expected):
    (problem,) = problems(capacityReservation=reservation)
    assert expected in problem


@pytest.mark.parametrize(
    "reservation",
    [
        {"id": CR},
        {"resourceGroupArn": "arn:aws:resource-groups:us-west-2:123456789012:group/odcrs"},
        {"preference": "open"},
    ],
)
def test_each_reservation_form_accepted(reservation):
    assert group(**P5, capacityReservation=reservation, availabilityZone=ZONE).capacity_reservation is not None


def test_reservation_refused_with_spot():
    (problem,) = problems(capacityType="SPOT", capacityReservation={"id": CR}, availabilityZone=ZONE)
    assert problem.startswith(
        'gpu-eks:gpuNodeGroups[0].capacityReservation: received {"id": "cr-0123456789abcdef0"}; expected no key '
        "with capacityType SPOT"
    )


def test_karpenter_reservation_by_id_only():
    base = {**P5, "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}
    assert group(**base, capacityReservation={"id": CR}).capacity_reservation.id == CR
    (problem,) = problems(**base, capacityReservation={"preference": "open"})
    assert "{id: cr-...} with capacityProvider karpenter" in problem


def test_capacity_block_takes_one_instance_type():
    found = problems(
        instanceTypes=["p5e.48xlarge", "p5en.48xlarge"],
        timeSlicing={"replicas": 1},
        capacityType="CAPACITY_BLOCK",
        availabilityZone="us-east-2a",
        capacityReservation={"id": CR},
        scaling={"minSize": 0, "desiredSize": 0, "maxSize": 2},
    )
    assert found == [
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["p5e.48xlarge", "p5en.48xlarge"]; expected one instance '
        "type, the Capacity Block's, with capacityType CAPACITY_BLOCK (EKS User Guide, capacity-blocks-mng; EC2 "
        "Auto Scaling User Guide, launch-template-capacity-blocks)"
    ]


def test_efa_types_of_a_group_have_the_same_devices():
    found = problems(
        instanceTypes=["p5e.48xlarge", "p5en.48xlarge"], timeSlicing={"replicas": 1}, efa=True, availabilityZone=ZONE
    )
    assert found == [
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["p5e.48xlarge", "p5en.48xlarge"]; expected types with '
        "the same number of EFA devices with efa (p5e.48xlarge: 32, p5en.48xlarge: 16): the group's one launch "
        "template lists each node's EFA interfaces"
    ]


def test_capacity_block_needs_its_reservation_zone_one_type_and_zero_sizes():
    found = problems(**P5, capacityType="CAPACITY_BLOCK")
    assert [p.split(":", 2)[1] for p in found] == [
        "gpuNodeGroups[0].availabilityZone",
        "gpuNodeGroups[0].capacityReservation",
        "gpuNodeGroups[0].scaling.minSize",
        "gpuNodeGroups[0].scaling.desiredSize",
    ]
    assert "market type capacity-block (EKS User Guide, capacity-blocks-mng" in found[1]


def test_capacity_block_accepted():
    g = group(
        **P5,
        capacityType="CAPACITY_BLOCK",
        availabilityZone="us-east-2a",
        capacityReservation={"id": CR},
        scaling={"minSize": 0, "desiredSize": 0, "maxSize": 2},
    )
    assert (g.capacity_type, g.capacity_reservation.id) == ("CAPACITY_BLOCK", CR)


def test_capacity_block_refuses_a_group_or_preference():
    (problem,) = problems(
        **P5,
        capacityType="CAPACITY_BLOCK",
        availabilityZone="us-east-2a",
        capacityReservation={"preference": "open"},
        scaling={"minSize": 0, "desiredSize": 0, "maxSize": 2},
    )
    assert 'capacityReservation: received {"preference": "open"}; expected {id: cr-...}' in problem


def test_a_zoned_group_holds_all_its_addresses_in_one_subnet():
    base = {
        "name": "g",
        "instanceTypes": ["p4d.24xlarge"],
        "timeSlicing": {"replicas": 1},
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
    }
    spread = load_settings({"clusterName": "c", "gpuNodeGroups": [base]})
    zoned = load_settings({"clusterName": "c", "gpuNodeGroups": [{**base, "availabilityZone": "us-west-2a"}]})
    # p4d.24xlarge holds 300 addresses a node (catalog.gpu_node_addresses): 4 nodes in one of 2
    # subnets hold 2 x 300 when spread, 4 x 300 when the group is in one zone.
    assert zoned.nodes_need_addresses(True, subnets=2) - spread.nodes_need_addresses(True, subnets=2) == 600


# --- issue 41: one zone for EFA, targeted reservations, placement ---------------------------------

ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
KARPENTER = {"capacityProvider": "karpenter", "scaling": ZERO}


@pytest.mark.parametrize("provider", [{}, KARPENTER], ids=["managed", "karpenter"])
def test_an_efa_group_needs_its_one_zone(provider):
    assert problems(**P5, **provider, efa=True) == [
        "gpu-eks:gpuNodeGroups[0].availabilityZone: received null; expected a zone name with efa (EFA traffic "
        "stays in one Availability Zone: EKS User Guide, node-efa)"
    ]
    assert group(**P5, **provider, efa=True, availabilityZone=ZONE).availability_zone == ZONE


def test_a_managed_group_targeting_a_reservation_by_id_names_its_zone_and_one_type():
    found = problems(instanceTypes=["g6.12xlarge", "g6.24xlarge"], capacityReservation={"id": CR})
    assert found == [
        "gpu-eks:gpuNodeGroups[0].availabilityZone: received null; expected a zone name with capacityReservation.id "
        "(the reservation's zone: EKS would also launch into subnets of other zones, where every launch fails; EC2 "
        "User Guide, capacity-reservations-launch: no fallback to On-Demand)",
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["g6.12xlarge", "g6.24xlarge"]; expected the '
        "reservation's one instance type with capacityReservation.id: a launch into a targeted reservation succeeds "
        "only with its attributes, instance type included (EC2 User Guide, capacity-reservations-launch: no fallback "
        "to On-Demand)",
    ]


def test_a_karpenter_group_targeting_a_reservation_by_id_needs_no_zone():
    # Karpenter launches a reserved offering in the reservation's own zone (its offerings are per zone).
    assert group(**P5, **KARPENTER, capacityReservation={"id": CR}).availability_zone is None


@pytest.mark.parametrize(
    "reservation",
    [{"resourceGroupArn": "arn:aws:resource-groups:us-west-2:123456789012:group/g"}, {"preference": "open"}],
)
def test_a_group_target_or_a_preference_needs_no_zone(reservation):
    assert group(**P5, capacityReservation=reservation).availability_zone is None


def test_a_resource_group_with_capacity_reservations_only_is_accepted_and_so_launched():
    from components.plan import multinode as lt

    arn = "arn:aws:resource-groups:us-west-2:123456789012:group/odcrs"
    g = group(**P5, capacityReservation={"resourceGroupArn": arn, "preference": "capacity-reservations-only"})
    assert lt.capacity_reservation_specification(g) == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": arn},
    }
    (problem,) = problems(**P5, capacityReservation={"resourceGroupArn": arn, "preference": "open"})
    assert "or resourceGroupArn with preference capacity-reservations-only" in problem


def test_placement_refused_on_a_capacity_block():
    block = {
        **P5,
        "capacityType": "CAPACITY_BLOCK",
        "availabilityZone": ZONE,
        "capacityReservation": {"id": CR},
        "scaling": ZERO,
    }
    assert [p.split("; expected ")[0] for p in problems(**block, placement="cluster")] == [
        'gpu-eks:gpuNodeGroups[0].placement: received "cluster"'
    ]
    (problem,) = problems(**block, placementGroup="training")
    assert problem.startswith(
        'gpu-eks:gpuNodeGroups[0].placementGroup: received "training"; expected no placementGroup with capacityType '
        "CAPACITY_BLOCK: instances of a Capacity Block are placed close together in an EC2 UltraCluster already"
    )


def test_an_existing_placement_group_by_name():
    g = group(**P5, placementGroup="odcr-pg", availabilityZone=ZONE)
    assert g.placement_group == "odcr-pg"
    assert problems(**P5, placementGroup="odcr-pg") == [
        "gpu-eks:gpuNodeGroups[0].availabilityZone: received null; expected a zone name with placementGroup (the "
        "placement group's zone)"
    ]
    assert problems(**P5, placementGroup="pg", placement="cluster", availabilityZone=ZONE) == [
        'gpu-eks:gpuNodeGroups[0].placementGroup: received "pg"; expected no placementGroup with placement: cluster '
        "(which creates the group's own)"
    ]
    assert problems(**P5, placementGroup="é", availabilityZone=ZONE) == [
        'gpu-eks:gpuNodeGroups[0].placementGroup: received "\\u00e9"; expected a placement group name: 1 to 255 ASCII '
        "characters"
    ]
