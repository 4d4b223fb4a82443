"""Issue 32 on Karpenter groups: a reservation (capacityReservationSelectorTerms, the reserved
capacity type, the chart's reservedCapacity gate), the group's zone and a cluster placement group
(placementGroupSelector), as literals and through Karpenter 1.14.1's CRDs with their CEL rules;
the example stack's Karpenter group under mocks."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.groups import GpuNodeGroupSettings
from components.karpenter import values
from components.plan import karpenter as objects
from components.plan.group import plan_group
from tests.support.simulation import example
from tests.support.standins.crds import crd_problems, karpenter_schema

ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
CR = "cr-0123456789abcdef0"
P5 = {"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 1}}


def plan(**group: Any):
    # An EFA group names its one zone (config/multinode.py, issue 41).
    zone = {"availabilityZone": "us-east-2c"} if group.get("efa") else {}
    return plan_group(
        GpuNodeGroupSettings.model_validate(
            {"name": "h100", "capacityProvider": "karpenter", "scaling": ZERO, **zone, **group}
        )
    )


def requirement(pool: dict[str, Any], key: str) -> list[str] | None:
    return next((r["values"] for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key), None)


def test_an_odcr_group_prefers_reserved_then_on_demand():
    p = plan(**P5, capacityReservation={"id": CR}, availabilityZone="us-east-2c")
    pool = objects.node_pool(p)
    assert requirement(pool, "karpenter.sh/capacity-type") == ["reserved", "on-demand"]
    assert requirement(pool, "topology.kubernetes.io/zone") == ["us-east-2c"]
    node_class = objects.ec2_node_class(p, role="r", discovery="c")
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"id": CR}]
    assert "placementGroupSelector" not in node_class["spec"]


def test_a_capacity_block_group_launches_reserved_only():
    p = plan(**P5, capacityType="CAPACITY_BLOCK", capacityReservation={"id": CR}, availabilityZone="us-east-2c")
    assert requirement(objects.node_pool(p), "karpenter.sh/capacity-type") == ["reserved"]


def test_a_group_without_reservation_or_zone_is_unchanged():
    p = plan(**P5)
    pool = objects.node_pool(p)
    assert requirement(pool, "karpenter.sh/capacity-type") == ["on-demand"]
    assert requirement(pool, "topology.kubernetes.io/zone") is None
    spec = objects.ec2_node_class(p, role="r", discovery="c")["spec"]
    assert "capacityReservationSelectorTerms" not in spec and "placementGroupSelector" not in spec


def test_placement_group_selector_by_name():
    p = plan(**P5, placement="cluster", availabilityZone="us-east-2c")
    spec = objects.ec2_node_class(p, role="r", discovery="c", placement_group="pg-name")["spec"]
    assert spec["placementGroupSelector"] == {"name": "pg-name"}


def test_an_efa_group_selects_its_efa_security_group_beside_the_discovery_tag():
    p = plan(**P5, efa=True)
    spec = objects.ec2_node_class(p, role="r", discovery="c", security_groups=["sg-0123456789abcdef0"])["spec"]
    assert spec["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "c"}},
        {"id": "sg-0123456789abcdef0"},
    ]


@pytest.mark.parametrize(
    ("instance_type", "cards"),
    [("p5.48xlarge", 32), ("p4d.24xlarge", 4), ("g6e.24xlarge", 2), ("g6.12xlarge", 1)],
)
def test_an_efa_group_has_its_efa_only_interfaces_on_every_node(instance_type, cards):
    """Issue 41: spec.networkInterfaces, the primary an interface at 0/0 and an efa-only interface per
    card (card 0 beside the primary, device 1 everywhere): every EFA device, no subnet address each."""
    p = plan(instanceTypes=[instance_type], timeSlicing={"replicas": 1}, efa=True)
    interfaces = objects.ec2_node_class(p, role="r", discovery="c")["spec"]["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert interfaces[1:] == [
        {"networkCardIndex": card, "deviceIndex": 1, "interfaceType": "efa-only"} for card in range(cards)
    ]
    # Karpenter advertises one vpc.amazonaws.com/efa per efa-only interface (instancetype/types.go efas).
    assert sum(1 for i in interfaces if i["interfaceType"] == "efa-only") == p.efa_devices == cards
    assert "networkInterfaces" not in objects.ec2_node_class(plan(**P5), role="r", discovery="c")["spec"]


def test_the_interfaces_fit_each_cards_interfaces_as_ec2_describes_them():
    """Karpenter drops an instance type whose card has fewer interfaces than a device index asks for
    (instancetype/compatibility/compatibility.go networkInterfaceCheck, v1.14.1): against moto's
    DescribeInstanceTypes data (botocore 1.44.5 / moto 5.2.5)."""
    import gzip
    import importlib.resources
    import json

    data = importlib.resources.files("moto.ec2") / "resources" / "instance_types.json.gz"
    types = json.loads(gzip.decompress(data.read_bytes()))
    from components.catalog import efa

    for name in efa.EFA_TYPES:
        cards = {
            c["NetworkCardIndex"]: c["MaximumNetworkInterfaces"] for c in types[name]["NetworkInfo"]["NetworkCards"]
        }
        for i in efa.karpenter_interfaces(name):
            assert i.device_index < cards[i.network_card_index], (name, i)
        efa_only = sum(1 for i in efa.karpenter_interfaces(name) if i.interface_type == "efa-only")
        assert efa_only <= types[name]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"], name


def test_a_karpenter_efa_node_runs_fewer_pods_where_card_0_gives_an_eni_to_efa():
    """The efa-only interface on card 0 takes one of the VPC CNI's ENIs (Karpenter's ENILimitedPods):
    p5.48xlarge (2 ENIs of 50) runs 51 pods instead of 100; kubelet's maxPods says so."""
    with_efa = plan(**P5, efa=True)
    assert (with_efa.max_pods, plan(**P5).max_pods) == (51, 100)
    spec = objects.ec2_node_class(with_efa, role="r", discovery="c")["spec"]
    assert spec["kubelet"] == {"maxPods": 51}
    # p4d.24xlarge: 14 ENIs left of 15, far above EKS's cap of 250 pods.
    assert plan(instanceTypes=["p4d.24xlarge"], timeSlicing={"replicas": 1}, efa=True).max_pods == 250


@pytest.mark.parametrize(
    "group",
    [
        {
            **P5,
            "capacityReservation": {"id": CR},
            "availabilityZone": "us-east-2c",
            "placement": "cluster",
            "efa": True,
        },
        {**P5, "capacityType": "CAPACITY_BLOCK", "capacityReservation": {"id": CR}, "availabilityZone": "us-east-2c"},
    ],
)
def test_objects_pass_the_crds_and_their_cel_rules(group):
    p = plan(**group)
    built = [
        objects.ec2_node_class(
            p,
            role="gpu-eks-nodes",
            discovery="ml",
            placement_group="gpu-eks-h100-placement-1",
            security_groups=["sg-0123456789abcdef0"] if p.efa_devices else [],
        ),
        objects.node_pool(p),
    ]
    for obj in built:
        assert crd_problems(obj, karpenter_schema(obj["kind"])) == [], obj["kind"]


def test_the_reserved_capacity_gate_is_set_only_for_a_reservation():
    with_reservation = [plan(**P5, capacityReservation={"id": CR})]
    without = [plan(**P5)]
    assert values.reserved_capacity_needed(with_reservation) is True
    assert values.reserved_capacity_needed(without) is False
    gates = values.karpenter_values(
        cluster_name="c",
        interruption_queue="q",
        role_arn="a",
        node_overlay=False,
        system_nodes=2,
        reserved_capacity=True,
    )["settings"]["featureGates"]
    assert gates == {"nodeOverlay": False, "nodeRepair": False, "reservedCapacity": True}
    plain = values.karpenter_values(
        cluster_name="c", interruption_queue="q", role_arn="a", node_overlay=False, system_nodes=2
    )["settings"]["featureGates"]
    assert plain == {"nodeOverlay": False, "nodeRepair": False}


def test_the_example_karpenter_group():
    sim = example("multinode")
    node_class = sim.named("gpu-eks-h100-karpenter-nodeclass").inputs
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"id": CR}]
    assert node_class["spec"]["placementGroupSelector"] == {"name": "gpu-eks-h100-karpenter-placement-0000000"}
    assert sim.named("gpu-eks-h100-karpenter-placement").inputs["strategy"] == "cluster"
    # Its EFA security group (self-referencing, in the cluster's VPC), selected by id.
    assert node_class["spec"]["securityGroupSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "gpu-eks-multinode"}},
        {"id": "gpu-eks-h100-karpenter-efa-id"},
    ]
    rule = sim.named("gpu-eks-h100-karpenter-efa-ingress").inputs
    assert (rule["securityGroupId"], rule["referencedSecurityGroupId"], rule["ipProtocol"]) == (
        "gpu-eks-h100-karpenter-efa-id",
        "gpu-eks-h100-karpenter-efa-id",
        "-1",
    )
    pool = sim.named("gpu-eks-h100-karpenter-nodepool").inputs
    assert requirement(pool, "karpenter.sh/capacity-type") == ["reserved", "on-demand"]
    assert requirement(pool, "topology.kubernetes.io/zone") == ["us-east-2c"]
    release = sim.one("kubernetes:helm.sh/v3:Release", "gpu-eks-karpenter-release").inputs
    assert release["values"]["settings"]["featureGates"] == {
        "nodeOverlay": False,
        "nodeRepair": True,
        "reservedCapacity": True,
    }


def test_huge_pages_through_a_node_overlay_of_the_users_own():
    """docs/multi-node.md, Karpenter groups: Karpenter 1.14.1 counts no huge pages, and the library
    adds none to the group's NodeOverlay (an exclusive EFA group needs none: the alpha gate stays
    off). The overlay the docs describe passes the 1.14.1 CRD with its CEL rules (capacity refuses
    cpu, memory, ephemeral-storage and pods only); one naming cpu does not."""
    p = plan(**P5, efa=True)  # exclusive whole GPUs
    assert not objects.needs_overlay(p)
    assert "hugepages-2Mi" not in objects.advertised_capacity(p)
    assert not values.node_overlay_needed([p])
    theirs = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "h100-hugepages"},
        "spec": {
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-eks-h100"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
            ],
            "capacity": {"hugepages-2Mi": "10256Mi"},  # 5,128 pages of 2 MiB (catalog/efa.py)
        },
    }
    assert crd_problems(theirs, karpenter_schema("NodeOverlay")) == []
    refused = {**theirs, "spec": {**theirs["spec"], "capacity": {"cpu": "1"}}}
    assert crd_problems(refused, karpenter_schema("NodeOverlay")) == [
        ".spec.capacity: invalid resource restricted (self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', "
        "'pods'])): False)"
    ]
