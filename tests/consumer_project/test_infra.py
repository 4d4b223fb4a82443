"""The consuming team's unit tests: its program under Pulumi mocks (gpu_mocks.py, from the
gpu-eks README's testing guide), asserting what it sends the cloud."""

from __future__ import annotations

import pathlib

import pulumi
from gpu_mocks import GpuEksMocks, set_gpu_eks_mocks

PLATFORM_OUTPUTS = {
    "clusterName": "platform-prod",
    "privateSubnetIds": ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"],
    "nodeRoleArn": "arn:aws:iam::123456789012:role/platform-nodes",
    "kubeconfig": '{"apiVersion": "v1", "kind": "Config"}',
}


class Mocks(GpuEksMocks):
    """The guide's mocks plus the answer of this program's own StackReference."""

    def new_resource(self, args):
        if args.typ == "pulumi:pulumi:StackReference":
            self.inputs[args.name] = args.inputs
            return args.name, {"name": args.name, "outputs": PLATFORM_OUTPUTS, "secretOutputNames": []}
        return super().new_resource(args)


MOCKS = set_gpu_eks_mocks(Mocks())

import infra  # noqa: E402  (declares the resources, under the mocks set above)

STACK = infra.declare()


def test_the_library_comes_from_the_installed_package():
    import gpu_eks

    assert "site" in pathlib.Path(gpu_eks.__file__).parts


@pulumi.runtime.test
def test_the_cluster_goes_into_our_own_vpc():
    research = STACK.research

    def check(_):
        eks = MOCKS.inputs["research-cluster-eks"]
        # The ids the guide's mocks give our own aws.ec2.Vpc and Subnets (EC2-style, as the
        # library requires of network ids).
        assert eks["vpcId"] == "vpc-5131e692ac84c80bc"
        assert eks["privateSubnetIds"] == ["subnet-80aa6b2248ce26d78", "subnet-7956fcfd9d7fc37f2"]
        assert "research-cluster-vpc" not in MOCKS.inputs  # no VPC created
        assert MOCKS.inputs["research-t4"]["subnetIds"] == ["subnet-80aa6b2248ce26d78", "subnet-7956fcfd9d7fc37f2"]

    return pulumi.Output.all(research.cluster.eks.urn, research.gpu_node_groups["t4"].node_group.urn).apply(check)


@pulumi.runtime.test
def test_the_existing_cluster_gets_gpu_nodes_and_an_operator_covering_our_group():
    capacity = STACK.capacity

    def check(_):
        shared = MOCKS.inputs["platform-gpu-shared"]
        own = MOCKS.inputs["vision-t4x4"]
        for group in (shared, own):
            assert group["clusterName"] == "platform-prod"
            assert group["subnetIds"] == ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"]
            assert group["nodeRoleArn"] == "arn:aws:iam::123456789012:role/platform-nodes"
            assert group["amiType"] == "AL2023_x86_64_NVIDIA"
        values = MOCKS.inputs["platform-gpu-gpu-operator-release"]["values"]
        assert sorted(values["devicePlugin"]["config"]["data"]) == ["shared", "vision"]  # profiles: the group names
        keys = {t.get("key") for t in values["daemonsets"]["tolerations"]}
        assert {"nvidia.com/gpu", "acme.com/team"} <= keys
        assert "platform-gpu-node-role" not in MOCKS.inputs  # the platform's node role is used

    return pulumi.Output.all(
        capacity.operator.release.urn, capacity.gpu_node_groups["shared"].node_group.urn, STACK.team_group.urn
    ).apply(check)


def test_workloads_get_a_node_selector_and_tolerations():
    group = STACK.team_group
    assert group.node_selector == {
        "gpu-eks.io/gpu-count": "4",
        "gpu-eks.io/node-group": "vision",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "nvidia.com/device-plugin.config": "vision",
    }
    assert group.tolerations == [
        {"key": "acme.com/team", "operator": "Equal", "value": "vision", "effect": "NoSchedule"},
    ]
    assert group.advertised_gpus_per_node == 8
