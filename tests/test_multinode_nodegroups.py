"""Issue 32: what a multi-node group declares on a managed node group (examples/Pulumi.multinode.yaml
under mocks), its launch template fragments against botocore's ``ec2`` model and moto, and the
EFA security group's rules under moto."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.session
import pytest
from botocore.validate import ParamValidator
from moto import mock_aws

from components.check.loading import load_settings
from components.plan import multinode
from tests.support.simulation import example

CLUSTER_SG = "sg-0e5c1a55e5c0ffee0"
SG_H100 = "gpu-eks-h100-block-efa-id"
SG_A100 = "gpu-eks-a100-odcr-efa-id"


@pytest.fixture(scope="module")
def sim() -> Any:
    return example("multinode")


def _group(**keys: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", **keys}]}).gpu_node_groups[0]


def _node_group(sim: Any, name: str) -> Any:
    return sim.one("aws:eks/nodeGroup:NodeGroup", name)


# --- the example's render -----------------------------------------------------------------------


def test_capacity_block_launch_template(sim):
    lt = sim.named("gpu-eks-h100-block-lt").inputs
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["instanceType"] == "p5.48xlarge"
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    }
    assert "placement" not in lt  # a Capacity Block needs no placement group (config/multinode.py)
    interfaces = lt["networkInterfaces"]
    assert len(interfaces) == 32
    assert interfaces[0] == {
        "networkCardIndex": 0,
        "deviceIndex": 0,
        "interfaceType": "efa",
        "deleteOnTermination": "true",
        "securityGroups": [CLUSTER_SG, SG_H100],
    }
    assert interfaces[31] == {
        "networkCardIndex": 31,
        "deviceIndex": 1,
        "interfaceType": "efa-only",
        "deleteOnTermination": "true",
        "securityGroups": [CLUSTER_SG, SG_H100],
    }


def test_capacity_block_node_group(sim):
    ng = _node_group(sim, "gpu-eks-h100-block").inputs
    assert ng["capacityType"] == "CAPACITY_BLOCK"
    # The launch template names the type; EKS refuses instanceTypes beside it.
    assert "instanceTypes" not in ng
    # Narrowed to the block's zone (us-east-2a: the simulated subnets end in their zone's letter).
    assert ng["subnetIds"] == ["subnet-0a00000000000000a"]
    assert ng["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 2}


def test_odcr_group(sim):
    lt = sim.named("gpu-eks-a100-odcr-lt").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0f1e2d3c4b5a69788"}
    }
    assert "instanceMarketOptions" not in lt and "instanceType" not in lt and "placement" not in lt
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in lt["networkInterfaces"]] == [
        (0, 0, "efa"),
        (1, 1, "efa-only"),
        (2, 1, "efa-only"),
        (3, 1, "efa-only"),
    ]
    ng = _node_group(sim, "gpu-eks-a100-odcr").inputs
    assert (ng["capacityType"], ng["instanceTypes"], ng["subnetIds"]) == (
        "ON_DEMAND",
        ["p4d.24xlarge"],
        ["subnet-0a00000000000000b"],
    )
    assert sorted(r.name for r in sim.by_type("aws:ec2/placementGroup:PlacementGroup")) == [
        "gpu-eks-h100-karpenter-placement",
    ]


def test_efa_security_group_refers_to_itself(sim):
    sg = sim.named("gpu-eks-a100-odcr-efa").inputs
    assert sg["vpcId"] == "vpc-0e5c1a55e5c0ffee0"
    for direction, word in (("ingress", "from"), ("egress", "to")):
        rule = sim.named(f"gpu-eks-a100-odcr-efa-{direction}").inputs
        assert (rule["securityGroupId"], rule["referencedSecurityGroupId"], rule["ipProtocol"]) == (
            SG_A100,
            SG_A100,
            "-1",
        )
        assert rule["description"] == f"EFA: all traffic {word} the nodes of the group"


def test_placement_group_is_cluster(sim):
    assert sim.named("gpu-eks-h100-karpenter-placement").inputs["strategy"] == "cluster"


def test_asg_tags_carry_efa(sim):
    tags = {
        r.inputs["tag"]["key"]: r.inputs["tag"]["value"]
        for r in sim.by_type("aws:autoscaling/tag:Tag")
        if r.name.startswith("gpu-eks-h100-block-asg-tag-")
    }
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "8"


# --- the fragments against botocore's model and moto ----------------------------------------------


def _launch_template_data(group: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "NetworkInterfaces": multinode.network_interfaces(group.instance_types[0], ["sg-0123456789abcdef0"]),
        "Placement": {"GroupName": "pg"},
    }
    for key, value in (
        ("CapacityReservationSpecification", multinode.capacity_reservation_specification(group)),
        ("InstanceMarketOptions", multinode.instance_market_options(group)),
        ("InstanceType", multinode.launch_template_instance_type(group)),
    ):
        if value is not None:
            data[key] = value
    return data


GROUPS = {
    "block": {
        "instanceTypes": ["p5.48xlarge"],
        "timeSlicing": {"replicas": 1},
        "efa": True,
        "capacityType": "CAPACITY_BLOCK",
        "availabilityZone": "us-east-2a",
        "capacityReservation": {"id": "cr-0123456789abcdef0"},
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    },
    "group": {
        "instanceTypes": ["p4d.24xlarge"],
        "timeSlicing": {"replicas": 1},
        "efa": True,
        "availabilityZone": "us-east-1a",
        "capacityReservation": {"resourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/odcrs"},
    },
    "group-only": {
        "instanceTypes": ["p4d.24xlarge"],
        "timeSlicing": {"replicas": 1},
        "capacityReservation": {
            "resourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/odcrs",
            "preference": "capacity-reservations-only",
        },
    },
    "preference": {
        "instanceTypes": ["g6.12xlarge"],
        "efa": True,
        "availabilityZone": "us-east-1b",
        "capacityReservation": {"preference": "open"},
    },
}


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_fragments_match_botocore_model(name):
    model = botocore.session.get_session().get_service_model("ec2")
    report = ParamValidator().validate(
        _launch_template_data(_group(**GROUPS[name])), model.shape_for("RequestLaunchTemplateData")
    )
    assert not report.has_errors(), report.generate_report()


def test_botocore_enums_hold_our_values():
    model = botocore.session.get_session().get_service_model("ec2")
    assert "capacity-block" in model.shape_for("MarketType").enum
    # InterfaceType has no enum in the model; its documentation names both values.
    shape = model.shape_for("LaunchTemplateInstanceNetworkInterfaceSpecificationRequest")
    assert "efa-only" in shape.members["InterfaceType"].documentation
    assert multinode.CLUSTER_STRATEGY in model.shape_for("PlacementStrategy").enum
    assert "CAPACITY_BLOCK" in botocore.session.get_session().get_service_model("eks").shape_for("CapacityTypes").enum


@mock_aws
def test_moto_accepts_the_launch_template_and_security_group():
    # moto 5.2.5 has no create_placement_group: the placement strategy is checked against botocore above.
    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    sg = ec2.create_security_group(GroupName="efa", Description="EFA", VpcId=vpc)["GroupId"]
    pair = {"IpProtocol": multinode.ALL_TRAFFIC, "UserIdGroupPairs": [{"GroupId": sg}]}
    ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[pair])
    ec2.authorize_security_group_egress(GroupId=sg, IpPermissions=[pair])
    data = _launch_template_data(_group(**GROUPS["block"]))
    ec2.create_launch_template(LaunchTemplateName="efa-lt", LaunchTemplateData=data)
    got = ec2.describe_launch_template_versions(LaunchTemplateName="efa-lt")["LaunchTemplateVersions"][0]
    stored = got["LaunchTemplateData"]
    assert len(stored["NetworkInterfaces"]) == 32
    assert stored["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert stored["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
    }
    # A reservation group with capacity-reservations-only: preference and target together (issue 41).
    only = {
        "CapacityReservationSpecification": multinode.capacity_reservation_specification(_group(**GROUPS["group-only"]))
    }
    ec2.create_launch_template(LaunchTemplateName="group-only-lt", LaunchTemplateData=only)
    got = ec2.describe_launch_template_versions(LaunchTemplateName="group-only-lt")["LaunchTemplateVersions"][0]
    assert got["LaunchTemplateData"]["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {
            "CapacityReservationResourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/odcrs"
        },
    }
    (group,) = ec2.describe_security_groups(GroupIds=[sg])["SecurityGroups"]
    assert [p["UserIdGroupPairs"][0]["GroupId"] for p in group["IpPermissions"]] == [sg]
    assert sg in [p["UserIdGroupPairs"][0]["GroupId"] for p in group["IpPermissionsEgress"] if p["UserIdGroupPairs"]]


def test_a_group_without_multinode_settings_adds_nothing():
    group = _group()
    assert not multinode.is_multinode(group)
    assert (
        multinode.capacity_reservation_specification(group),
        multinode.instance_market_options(group),
        multinode.launch_template_instance_type(group),
        multinode.network_interfaces(group.instance_types[0], []),
    ) == (None, None, None, [])


def test_a_zone_none_of_the_subnets_is_in_fails_the_deployment_with_its_key():
    # The check the deployment runs on the subnets found in the zone (nodegroups.component
    # subnets_in_zone raises it as a pulumi.RunError). Not run as a failing program here: the
    # failed Outputs' tracebacks, formatted on the runtime's threads, race the test process's own
    # ast.parse on CPython 3.11.7 ("AST constructor recursion depth mismatch").
    assert multinode.zone_subnets_problem([], "us-east-2c", "a100-odcr") == (
        'gpu-eks:gpuNodeGroups[a100-odcr].availabilityZone: received "us-east-2c"; expected a zone of one of the '
        "group's subnets (none of them is in it)"
    )
    assert multinode.zone_subnets_problem(["subnet-0a00000000000000b"], "us-east-2b", "a100-odcr") is None
