"""Issue 32 on Karpenter groups: a reservation (capacityReservationSelectorTerms, the reserved
capacity type, the chart's reservedCapacity gate), the group's zone and a cluster placement group
(placementGroupSelector), as literals and through Karpenter 1.14.1's CRDs with their CEL rules;
the example stack's Karpenter group under mocks."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.groups import GpuNodeGroupSettings
from components.karpenter import objects, values
from components.plan.group import plan_group
from tests.crd_cel import crd_problems, karpenter_schema
from tests.test_examples import example

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
