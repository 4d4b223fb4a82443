"""Composing the components from another program: Outputs as inputs, an existing cluster
(GpuCapacity), node groups declared outside GpuCluster, and ARNs of other partitions.

Each test runs a small program under the simulated engine (tooling/simulation.py) and asserts
literal values of what it declares.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components import (
    GpuCapacity,
    GpuCapacityArgs,
    GpuCluster,
    GpuClusterArgs,
    GpuNodeGroup,
    GpuNodeGroupArgs,
    load_capacity_settings,
    load_settings,
)
from components.blocks.coverage import HalfWiredError
from components.config.errors import ConfigError, Problem, is_plain
from components.plan.group import plan_group
from tests.data.samples import EXISTING_KUBECONFIG, GROUP_T4
from tests.support.simulation import run_consumer_program as run
from tooling.simulation import FakeCloud, Simulation

NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def parents(sim: Simulation) -> dict[str, str | None]:
    return {r.name: (sim.by_urn(r.parent_urn).name if r.parent_urn != sim.stack_urn else None) for r in sim.resources}


def plugin_profiles(sim: Simulation) -> set[str]:
    return set(sim.one(RELEASE).inputs["values"]["devicePlugin"]["config"]["data"])


def daemonset_toleration_keys(sim: Simulation) -> set[str]:
    return {t.get("key") for t in sim.one(RELEASE).inputs["values"]["daemonsets"]["tolerations"]}


# ---------------------------------------------------------------------------------------------
# Settings with Outputs
# ---------------------------------------------------------------------------------------------


def test_is_plain_sees_outputs_at_any_depth():
    out = pulumi.Output.from_input("vpc-1")
    assert is_plain("vpc-1") and is_plain(["a", "b"]) and is_plain({"k": ["v"]}) and is_plain(None)
    assert not is_plain(out)
    assert not is_plain(["a", out])
    assert not is_plain({"k": [out]})


def test_a_problem_never_shows_an_outputs_str():
    out = pulumi.Output.from_input("x")
    assert str(Problem("gpu-eks:network.vpcId", out, "a VPC id")) == (
        "gpu-eks:network.vpcId: received <unresolved Output>; expected a VPC id"
    )
    assert str(Problem("gpu-eks:network", {"vpcId": out, "privateSubnetIds": [out, "subnet-b"]}, "x")) == (
        'gpu-eks:network: received {"privateSubnetIds": ["<unresolved Output>", "subnet-b"], '
        '"vpcId": "<unresolved Output>"}; expected x'
    )


def test_network_outputs_are_accepted_and_passed_through_unchanged():
    vpc, subnet = (
        pulumi.Output.from_input("vpc-0aaaaaaaaaaaaaaa0"),
        pulumi.Output.from_input("subnet-0aaaaaaaaaaaaaaa1"),
    )
    whole = pulumi.Output.from_input(["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"])
    s = load_settings(
        {"clusterName": "c", "network": {"vpcId": vpc, "privateSubnetIds": [subnet, "subnet-0aaaaaaaaaaaaaaa2"]}}
    )
    assert s.network.vpc_id is vpc
    assert s.network.private_subnet_ids[0] is subnet and s.network.private_subnet_ids[1] == "subnet-0aaaaaaaaaaaaaaa2"
    s = load_settings({"clusterName": "c", "network": {"vpcId": vpc, "privateSubnetIds": whole}})
    assert s.network.private_subnet_ids is whole


def test_plain_parts_next_to_outputs_are_still_validated_without_str_of_outputs():
    vpc = pulumi.Output.from_input("vpc-0aaaaaaaaaaaaaaa0")
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "c", "network": {"vpcId": vpc, "privateSubnetIds": [vpc]}})
    # The count of a list of Outputs is known now: reported at the list's own key.
    assert err.value.problems == [
        Problem(
            "gpu-eks:network.privateSubnetIds",
            [vpc],
            "with vpcId, at least 2 subnets (EKS needs two zones)",
        )
    ]
    # Settings given as a mapping: reported with the mapping's own keys.
    assert str(err.value).splitlines() == [
        "invalid settings (1 problem):",
        '  network.privateSubnetIds: received ["<unresolved Output>"]; expected with vpcId, at least 2 subnets (EKS '
        "needs two zones)",
    ]
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "c", "network": {"privateSubnetIds": vpc}})
    assert [p.expected for p in err.value.problems] == ["subnet ids only together with vpcId"]


def _own_vpc_program(private_subnets: list[str], whole_list: bool = False, vpc: str = "vpc-0aaaaaaaaaaaaaaa0"):
    def program() -> None:
        # The consumer's own VPC, as Outputs of resources of its own program: each subnet id an
        # Output, or the whole list one Output (as from a StackReference).
        vpc_id = pulumi.Output.from_input(vpc).apply(lambda v: v)
        subnets: Any = [pulumi.Output.from_input(s).apply(lambda v: v) for s in private_subnets]
        if whole_list:
            subnets = pulumi.Output.from_input(private_subnets).apply(lambda v: v)
        settings = load_settings(
            {
                "clusterName": "ml",
                "network": {"vpcId": vpc_id, "privateSubnetIds": subnets},
                "gpuNodeGroups": [GROUP_T4],
            }
        )
        GpuCluster("ml", GpuClusterArgs(settings=settings))

    return program


@pytest.mark.parametrize("whole_list", [False, True], ids=["each-id", "whole-list"])
def test_gpu_cluster_in_the_consumers_own_vpc(whole_list: bool):
    sim = run(_own_vpc_program(["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"], whole_list))
    assert sim.by_type("awsx:ec2:Vpc") == []
    eks = sim.one("eks:index:Cluster").inputs
    assert (eks["vpcId"], eks["privateSubnetIds"], eks["publicSubnetIds"]) == (
        "vpc-0aaaaaaaaaaaaaaa0",
        ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        [],
    )
    assert {ng.name: ng.inputs["subnetIds"] for ng in sim.by_type(NG)} == {
        "ml-cluster-system": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        "ml-t4": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
    }


def test_outputs_are_validated_when_they_resolve_naming_the_key():
    # A whole-list Output cannot be counted at load time; it is when it resolves.
    with pytest.raises(pulumi.RunError) as err:
        run(_own_vpc_program(["subnet-0aaaaaaaaaaaaaaa1"], whole_list=True))
    # The whole message is the library's, first line first: Pulumi wraps a ValueError raised while
    # an input resolves in "While processing input: ..." lines, never a RunError.
    assert str(err.value) == (
        "invalid stack configuration (1 problem):\n"
        '  gpu-eks:network.privateSubnetIds: received ["subnet-0aaaaaaaaaaaaaaa1"];'
        " expected with vpcId, at least 2 subnets (EKS needs two zones)"
    )


def test_a_single_output_subnet_is_counted_at_load_time():
    with pytest.raises(ConfigError) as err:
        run(_own_vpc_program(["subnet-0aaaaaaaaaaaaaaa1"]))
    assert [p.key for p in err.value.problems] == ["gpu-eks:network.privateSubnetIds"]


def test_a_plain_id_next_to_an_output_is_checked_at_load_time():
    vpc = pulumi.Output.from_input("vpc-0aaaaaaaaaaaaaaa0")
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "c", "network": {"vpcId": vpc, "privateSubnetIds": [vpc, "subnet-b"]}})
    assert [str(p) for p in err.value.problems] == [
        'gpu-eks:network.privateSubnetIds[1]: received "subnet-b"; expected an id such as subnet-0123456789abcdef0'
    ]


@pytest.mark.parametrize("whole_list", [False, True], ids=["each-id", "whole-list"])
def test_ids_from_outputs_get_the_ec2_id_rule_when_they_resolve(whole_list: bool):
    # What a mock that answers "<name>-id" for the consumer's own aws.ec2.Vpc/Subnet resolves to;
    # EKS CreateCluster would refuse these ids, so the deployment fails naming each key.
    with pytest.raises(pulumi.RunError) as err:
        run(_own_vpc_program(["subnet-0aaaaaaaaaaaaaaa1", "own-private-b-id"], whole_list, vpc="own-vpc-id"))
    assert str(err.value) == (
        "invalid stack configuration (2 problems):\n"
        '  gpu-eks:network.vpcId: received "own-vpc-id"; expected an id such as vpc-0123456789abcdef0\n'
        '  gpu-eks:network.privateSubnetIds[1]: received "own-private-b-id";'
        " expected an id such as subnet-0123456789abcdef0"
    )
    assert "Calling __str__" not in str(err.value)


# ---------------------------------------------------------------------------------------------
# Bring your own cluster: GpuCapacity
# ---------------------------------------------------------------------------------------------


def _capacity_program(**overrides: Any):
    def program() -> None:
        settings = load_capacity_settings(
            {
                "kubernetesVersion": "1.34",
                "gpuNodeGroups": [GROUP_T4],
                "verification": {"enabled": True},
                "tags": {"team": "ml"},
            }
        )
        args: dict[str, Any] = {
            "cluster_name": pulumi.Output.from_input("platform-cluster"),  # e.g. a StackReference output
            "subnet_ids": ["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"],
            "kubeconfig": pulumi.Output.from_input(EXISTING_KUBECONFIG),
            "settings": settings,
        }
        # A callable override makes its value inside the program (Outputs belong to its event loop).
        args.update({k: v() if callable(v) else v for k, v in overrides.items()})
        gpu = GpuCapacity("ml-gpu", GpuCapacityArgs(**args))
        pulumi.export("nodeRoleArn", gpu.node_role_arn)
        pulumi.export("t4", gpu.gpu_node_groups["t4"].node_selector)

    return program


def test_gpu_capacity_on_an_existing_cluster_declares_groups_operator_and_verification():
    sim = run(_capacity_program())
    assert sim.by_type("eks:index:Cluster") == [] and sim.by_type("awsx:ec2:Vpc") == []
    assert sim.one("gpu-eks:index:GpuCapacity").name == "ml-gpu"
    capacity = sim.one("gpu-eks:index:GpuCapacity")
    assert capacity.parent_urn == sim.stack_urn
    children = {(r.type, r.name) for r in sim.resources if r.parent_urn == capacity.urn}
    assert children == {
        ("pulumi:providers:kubernetes", "ml-gpu-k8s"),
        ("aws:iam/role:Role", "ml-gpu-node-role"),
        *((ATTACHMENT, f"ml-gpu-node-role-{short}") for short in ("worker", "cni", "ecr", "ssm")),
        ("gpu-eks:nodegroup:GpuNodeGroup", "ml-gpu-t4"),
        ("gpu-eks:operator:GpuOperator", "ml-gpu-gpu-operator"),
        ("gpu-eks:verification:TimeSlicingVerification", "ml-gpu-verify"),
    }
    ng = sim.one(NG, "ml-gpu-t4").inputs
    assert ng["clusterName"] == "platform-cluster"
    assert ng["subnetIds"] == ["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"]
    assert ng["nodeRoleArn"] == "arn:aws:iam::123456789012:role/ml-gpu-node-role"
    assert ng["amiType"] == "AL2023_x86_64_NVIDIA"
    assert ng["tags"] == {"team": "ml", "gpu-eks/node-group": "t4"}
    assert sorted(a.inputs["policyArn"] for a in sim.by_type(ATTACHMENT)) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]
    # The operator and the verification talk to the existing cluster through the created provider.
    provider = sim.one("pulumi:providers:kubernetes", "ml-gpu-k8s")
    # Sent as a secret (the Pulumi wire form of a secret value: its signature key, then the value).
    assert provider.inputs["kubeconfig"] == {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "value": EXISTING_KUBECONFIG,
    }
    assert "ml-gpu-k8s" in sim.one(RELEASE).provider
    assert "ml-gpu-k8s" in sim.one(JOB, "ml-gpu-verify-t4-concurrent").provider
    assert plugin_profiles(sim) == {"t4"}  # the default profile is the group name
    assert sim.one(JOB, "ml-gpu-verify-t4-concurrent").inputs["spec"]["parallelism"] == 4
    assert sim.outputs["nodeRoleArn"] == "arn:aws:iam::123456789012:role/ml-gpu-node-role"


def test_gpu_capacity_with_a_given_role_and_provider_creates_neither():
    def program() -> None:
        provider = k8s.Provider("platform-k8s", kubeconfig=EXISTING_KUBECONFIG)
        _capacity_program(
            node_role_arn="arn:aws:iam::123456789012:role/existing-nodes", k8s_provider=provider, kubeconfig=None
        )()

    sim = run(program)
    assert sim.by_type("aws:iam/role:Role") == [] and sim.by_type(ATTACHMENT) == []
    assert [p.name for p in sim.by_type("pulumi:providers:kubernetes")] == ["platform-k8s"]
    assert sim.one(NG).inputs["nodeRoleArn"] == "arn:aws:iam::123456789012:role/existing-nodes"
    assert "platform-k8s" in sim.one(RELEASE).provider


def test_gpu_capacity_reports_every_argument_problem_at_once():
    settings = load_capacity_settings({"kubernetesVersion": "1.34", "gpuNodeGroups": []})
    with pytest.raises(ValueError) as err:
        run(
            _capacity_program(
                kubeconfig=None,
                settings=settings,
                cluster_name="-platform",
                subnet_ids=["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc1", "subnet-b"],
            )
        )
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': give exactly one of k8s_provider and kubeconfig\n"
        "GpuCapacity 'ml-gpu': no GPU node group (settings gpuNodeGroups or node_groups)\n"
        "GpuCapacity 'ml-gpu': cluster_name: received '-platform'; expected 1-100 letters, digits, '-' or '_', "
        "starting with a letter or digit (the EKS cluster name rule)\n"
        "GpuCapacity 'ml-gpu': subnet_ids[1]: received 'subnet-0ccccccccccccccc1'; expected each subnet once\n"
        "GpuCapacity 'ml-gpu': subnet_ids[2]: received 'subnet-b'; expected an id such as subnet-0123456789abcdef0"
    )


@pytest.mark.parametrize(
    ("name", "ok"),
    [("a", True), ("A" * 100, True), ("9_x-Y", True), ("A" * 101, False), ("_x", False), ("a.b", False), ("", False)],
)
def test_gpu_capacity_checks_a_plain_cluster_name_by_the_eks_rule(name: str, ok: bool):
    # botocore eks 2017-11-01 ClusterName: min 1, max 100, pattern ^[0-9A-Za-z][A-Za-z0-9\-_]*
    program = _capacity_program(cluster_name=name)
    if ok:
        assert run(program).one(NG).inputs["clusterName"] == name
    else:
        with pytest.raises(ValueError, match=r"^GpuCapacity 'ml-gpu': cluster_name: received "):
            run(program)


def test_gpu_capacity_refuses_an_empty_subnet_list():
    with pytest.raises(ValueError) as err:
        run(_capacity_program(subnet_ids=[]))
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': subnet_ids: received []; expected at least one private subnet id "
        "(EKS CreateNodegroup needs one)"
    )


@pytest.mark.parametrize("whole_list", [False, True], ids=["each-id", "whole-list"])
def test_gpu_capacity_checks_subnet_outputs_when_they_resolve(whole_list: bool):
    ids = ["subnet-0ccccccccccccccc1", "own-private-b-id"]

    def subnets() -> Any:
        if whole_list:
            return pulumi.Output.from_input(ids).apply(lambda v: v)
        return [pulumi.Output.from_input(s).apply(lambda v: v) for s in ids]

    with pytest.raises(pulumi.RunError) as err:
        run(_capacity_program(subnet_ids=subnets))
    # The library's message is the whole message, first line first (no "While processing ...").
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': subnet_ids[1]: received 'own-private-b-id'; expected an id such as "
        "subnet-0123456789abcdef0"
    )


def test_gpu_capacity_checks_a_cluster_name_output_when_it_resolves():
    with pytest.raises(pulumi.RunError) as err:
        run(_capacity_program(cluster_name=lambda: pulumi.Output.from_input("platform.cluster").apply(lambda v: v)))
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': cluster_name: received 'platform.cluster'; expected 1-100 letters, digits, '-' "
        "or '_', starting with a letter or digit (the EKS cluster name rule)"
    )


def test_gpu_capacity_passes_valid_outputs_through():
    ids = ["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"]
    sim = run(_capacity_program(subnet_ids=lambda: pulumi.Output.from_input(ids).apply(lambda v: v)))
    assert sim.one(NG).inputs["subnetIds"] == ["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"]
    assert sim.one(NG).inputs["clusterName"] == "platform-cluster"


def test_gpu_capacity_loads_a_mapping_given_as_settings():
    group = {"name": "t4", "instanceTypes": ["g4dn.2xlarge"]}
    sim = run(_capacity_program(settings={"kubernetesVersion": "1.33", "gpuNodeGroups": [group]}))
    assert [ng.name for ng in sim.by_type(NG)] == ["ml-gpu-t4"]
    assert (sim.one(NG).inputs["version"], sim.one(NG).inputs["instanceTypes"]) == ("1.33", ["g4dn.2xlarge"])


def test_gpu_capacity_reports_an_invalid_mapping_by_key_not_attribute_error():
    with pytest.raises(ConfigError) as err:
        run(_capacity_program(settings={"gpuNodeGroups": [{"name": "t4", "diskSizeGiB": 10}]}))
    assert [str(p) for p in err.value.problems] == [
        "gpu-eks:kubernetesVersion: received nothing; expected the existing cluster's Kubernetes version, e.g. "
        '"1.35" (aws eks describe-cluster --query cluster.version): its node AMIs and autoscaler release follow it',
        "gpu-eks:gpuNodeGroups[0].diskSizeGiB: received 10; expected a number of at least 20",
    ]


def test_gpu_capacity_refuses_settings_of_another_type():
    with pytest.raises(TypeError) as err:
        run(_capacity_program(settings=["kubernetesVersion", "1.34"]))
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': settings: received a list; expected load_capacity_settings({...}) or a mapping of "
        "its config keys"
    )


def test_load_capacity_settings_requires_the_clusters_kubernetes_version():
    with pytest.raises(ConfigError) as err:
        load_capacity_settings({"gpuNodeGroups": [GROUP_T4]})
    assert [p.key for p in err.value.problems] == ["gpu-eks:kubernetesVersion"]
    assert load_capacity_settings({"kubernetesVersion": "1.33"}).kubernetes_version == "1.33"
    # A whole cluster still defaults it (Settings: the version the charts were validated with).
    assert load_settings({"clusterName": "c"}).kubernetes_version == "1.35"


def test_gpu_capacity_warns_about_a_group_nobody_scales(monkeypatch: pytest.MonkeyPatch):
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: warned.append(msg))
    scale_from_zero = {"name": "t4", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}
    run(
        _capacity_program(
            settings=load_capacity_settings({"kubernetesVersion": "1.34", "gpuNodeGroups": [scale_from_zero]})
        )
    )
    assert warned == [
        'gpu-eks config: gpu-eks:gpuNodeGroups[0].scaling: received {"desiredSize": 0, "maxSize": 2, "minSize": 0}; '
        "expected autoscaler.enabled: true, or minSize = desiredSize = maxSize > 0: with the Cluster Autoscaler "
        "disabled nothing resizes the group after creation (unless the existing cluster runs its own Cluster "
        "Autoscaler)"
    ]


# ---------------------------------------------------------------------------------------------
# No half-wired node groups
# ---------------------------------------------------------------------------------------------

OWN_GROUP = {
    "name": "own",
    "instanceTypes": ["g4dn.12xlarge"],
    "taints": [{"key": "team.example.com/gpu", "value": "ml", "effect": "NoSchedule"}],
    "timeSlicing": {"replicas": 2},
}


def test_a_group_declared_outside_gpu_cluster_is_rejected_at_declaration():
    def program() -> None:
        gpu = GpuCluster("ml", GpuClusterArgs(settings=load_settings({"clusterName": "ml"})))
        GpuNodeGroup(
            "ml-own",
            GpuNodeGroupArgs(
                settings=load_settings({"clusterName": "x", "gpuNodeGroups": [OWN_GROUP]}).gpu_node_groups[0],
                cluster_name=gpu.cluster.cluster_name,
                node_role_arn=gpu.cluster.node_role_arn,
                subnet_ids=gpu.cluster.private_subnet_ids,
            ),
        )

    with pytest.raises(HalfWiredError) as err:
        run(program)
    assert str(err.value) == (
        "GpuNodeGroup 'ml-own' is declared after GpuOperator 'ml-gpu-operator' of the same cluster, which does "
        "not cover it (no sharing profile, no toleration for its taints): declare GPU node groups before the "
        "operator and pass every one of them to it (GpuOperatorArgs.gpu_node_groups, GpuCapacityArgs.node_groups); "
        "with GpuCluster, add the group to its settings' gpuNodeGroups instead"
    )


def _own_group(cluster_name: pulumi.Input[str], group: dict[str, Any] = OWN_GROUP, **args: Any) -> GpuNodeGroup:
    """A group a caller declares itself (``settings=``), with ``args`` for its GpuNodeGroupArgs."""
    return GpuNodeGroup(
        "team-own",
        GpuNodeGroupArgs(
            settings=load_capacity_settings({"kubernetesVersion": "1.34", "gpuNodeGroups": [group]}).gpu_node_groups[0],
            cluster_name=cluster_name,
            node_role_arn="arn:aws:iam::123456789012:role/team-nodes",
            subnet_ids=["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"],
            **args,
        ),
    )


def test_a_group_declared_by_the_caller_and_given_to_gpu_capacity_is_covered():
    def program() -> None:
        name = pulumi.Output.from_input("platform-cluster")
        own = _own_group(name)
        _capacity_program(cluster_name=name, node_groups=[own])()

    sim = run(program)
    assert plugin_profiles(sim) == {"t4", "own"}  # default profile: the group name
    assert {"nvidia.com/gpu", "team.example.com/gpu"} <= daemonset_toleration_keys(sim)
    nfd = sim.one(RELEASE).inputs["values"]["node-feature-discovery"]["worker"]["tolerations"]
    assert {"key": "team.example.com/gpu", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in nfd
    # The verification covers it too: 4 T4s x 2 replicas on one g4dn.12xlarge.
    assert {j.name: j.inputs["spec"]["parallelism"] for j in sim.by_type(JOB)} == {
        "ml-gpu-verify-t4-warmup": 1,
        "ml-gpu-verify-t4-isolation": 1,
        "ml-gpu-verify-t4-concurrent": 4,
        "ml-gpu-verify-own-warmup": 1,
        "ml-gpu-verify-own-isolation": 1,
        "ml-gpu-verify-own-concurrent": 8,
    }
    assert sim.one(NG, "team-own").inputs["clusterName"] == "platform-cluster"


def test_a_group_of_the_same_cluster_not_given_to_the_operator_is_rejected():
    def program() -> None:
        _own_group("platform-cluster")
        _capacity_program(cluster_name="platform-cluster")()

    with pytest.raises(HalfWiredError) as err:
        run(program)
    assert str(err.value).startswith(
        "GpuOperator 'ml-gpu-gpu-operator' does not cover GpuNodeGroup(s) ['team-own'] of the same cluster"
    )


def test_a_group_declared_with_another_isolation_is_rejected():
    """Its nodes' toolkit settings would not be the ones the operator's device-plugin strategy needs."""

    def program() -> None:
        own = _own_group("platform-cluster", isolation="migrating")
        _capacity_program(cluster_name="platform-cluster", node_groups=[own])()

    with pytest.raises(HalfWiredError) as err:
        run(program)
    assert str(err.value) == (
        "GpuOperator 'ml-gpu-gpu-operator': gpuOperator.isolation is 'enforced', GPU node group(s) ['own'] were "
        "declared with another (GpuNodeGroupArgs.isolation): their nodes would not honour the device plugin's "
        "device lists; declare them with isolation='enforced'"
    )


def test_a_group_of_another_cluster_is_not_the_operators_business():
    def program() -> None:
        _own_group("another-cluster")
        _capacity_program(cluster_name="platform-cluster")()

    sim = run(program)
    assert plugin_profiles(sim) == {"t4"}  # default profile: the group name


def test_groups_given_to_one_operator_must_agree_on_profiles():
    clash = {**OWN_GROUP, "name": "t4b", "timeSlicing": {"replicas": 2, "profile": "t4"}}

    def program() -> None:
        own = _own_group("platform-cluster", clash)
        _capacity_program(cluster_name="platform-cluster", node_groups=[own])()

    with pytest.raises(HalfWiredError) as err:
        run(program)
    assert str(err.value) == (
        "GpuOperator 'ml-gpu-gpu-operator': its GPU node groups cannot share one operator: "
        "gpuNodeGroups[1].timeSlicing.profile: a profile name not used by gpuNodeGroups[0] (t4), whose "
        "timeSlicing settings differ: one set of settings per profile name (it is one key of the device-plugin "
        "ConfigMap)"
    )


# ---------------------------------------------------------------------------------------------
# One plan per group, handed down (issue 43)
# ---------------------------------------------------------------------------------------------

#: A cluster whose add-ons run DaemonSet pods on the GPU nodes (the CloudWatch pipeline; the node
#: monitoring agent, on by default at 1.35): a group's usable pod slots depend on them.
WITH_ADD_ONS = {
    "clusterName": "ml",
    "kubernetesVersion": "1.35",
    "observability": {"enabled": True},
    "verification": {"enabled": True},
    "teams": [{"name": "vision", "nodeGroups": ["t4", "big"], "quota": {"nvidia.com/gpu": 8}}],
    "gpuNodeGroups": [
        GROUP_T4,
        {"name": "big", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 2}},
    ],
}


def plan_group_calls(program) -> tuple[Simulation, int]:
    """The program's simulation and how many times it called ``plan_group``."""
    import sys

    code = plan_group.__code__
    calls = 0

    def profile(frame, event, _arg):
        nonlocal calls
        calls += event == "call" and frame.f_code is code

    sys.setprofile(profile)
    try:
        sim = run(program)
    finally:
        sys.setprofile(None)
    return sim, calls


def test_one_plan_per_group_reaches_every_component():
    """The settings' plans (made once, with the cluster's add-ons) are the groups' plans: no component
    plans a group again. A plan of the group alone counts no add-on pod: 5 more usable pod slots."""
    settings = load_settings(WITH_ADD_ONS)
    assert [p.usable_pod_slots for p in settings.plans] == [17, 222]
    assert [plan_group(g, isolation="enforced").usable_pod_slots for g in settings.gpu_node_groups] == [22, 227]
    declared: dict[str, GpuCluster] = {}

    def program() -> None:
        declared["gpu"] = GpuCluster("ml", GpuClusterArgs(settings=settings))

    _sim, calls = plan_group_calls(program)
    assert calls == 0
    gpu = declared["gpu"]
    # Every component reads the plans of the GpuNodeGroups it is given (GpuOperatorArgs.gpu_node_groups,
    # GpuVerificationArgs.gpu_node_groups, the teams' and observability's plans from them).
    assert [g.plan for g in gpu.gpu_node_groups.values()] == list(settings.plans)
    assert all(g.plan is p for g, p in zip(gpu.gpu_node_groups.values(), settings.plans, strict=True))


def test_a_group_of_ones_own_takes_its_plan_made_with_the_clusters_keys():
    """GpuCapacity's README path for a group of one's own: its plan from settings with the cluster's keys."""
    own = load_capacity_settings(
        {"kubernetesVersion": "1.34", "observability": {"enabled": True}, "gpuNodeGroups": [OWN_GROUP]}
    )
    declared: dict[str, GpuNodeGroup] = {}

    def program() -> None:
        declared["own"] = GpuNodeGroup(
            "team-own",
            GpuNodeGroupArgs(
                plan=own.plans[0],
                cluster_name="platform-cluster",
                node_role_arn="arn:aws:iam::123456789012:role/team-nodes",
                subnet_ids=["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"],
            ),
        )
        _capacity_program(cluster_name="platform-cluster", node_groups=[declared["own"]])()

    sim = run(program)
    assert declared["own"].plan is own.plans[0] and declared["own"].settings is own.gpu_node_groups[0]
    # Its plan counts the CloudWatch pipeline's pod on its nodes; the settings= form could not.
    assert (own.plans[0].usable_pod_slots, plan_group(own.gpu_node_groups[0]).usable_pod_slots) == (224, 227)
    assert sim.one(NG, "team-own").inputs["clusterName"] == "platform-cluster"


@pytest.mark.parametrize("given", ["both", "neither"])
def test_a_group_takes_a_plan_or_settings(given: str):
    plan = load_settings({"clusterName": "x", "gpuNodeGroups": [OWN_GROUP]}).plans[0]
    args = GpuNodeGroupArgs(
        cluster_name="c",
        node_role_arn="arn:aws:iam::123456789012:role/n",
        subnet_ids=["subnet-0ccccccccccccccc1"],
        **({"plan": plan, "settings": plan.settings} if given == "both" else {}),
    )
    with pytest.raises(TypeError) as err:
        args.group_plan()
    assert str(err.value) == (
        f"GpuNodeGroupArgs: give plan (the group's plan, e.g. an entry of Settings.plans) or settings, not {given}"
    )


def test_a_0_3_0_positional_call_is_refused_not_misread():
    """0.3.0's ``GpuNodeGroupArgs(settings, cluster_name, node_role_arn, subnet_ids)``: its fields
    are keywords now, so the old call fails where it is made instead of binding the settings to
    ``cluster_name`` and the subnets to ``plan``."""
    plan = load_settings({"clusterName": "x", "gpuNodeGroups": [OWN_GROUP]}).plans[0]
    with pytest.raises(TypeError, match="positional argument"):
        GpuNodeGroupArgs(plan.settings, "c", "arn:aws:iam::123456789012:role/n", ["subnet-0ccccccccccccccc1"])


# ---------------------------------------------------------------------------------------------
# Partitions
# ---------------------------------------------------------------------------------------------


class GovCloud(FakeCloud):
    """The provider's partition is aws-us-gov (region us-gov-west-1)."""

    def call(self, args):
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws-us-gov", "dnsSuffix": "amazonaws.com", "id": "aws-us-gov"}
        return super().call(args)


def _gov_program(admin: str):
    def program() -> None:
        GpuCluster("gov", GpuClusterArgs(settings=load_settings({"clusterName": "gov", "adminPrincipalArns": [admin]})))

    return program


def test_every_arn_the_library_writes_has_the_providers_partition():
    sim = run(_gov_program("arn:aws-us-gov:iam::123456789012:role/Admin"), mocks=GovCloud())
    assert sorted(a.inputs["policyArn"] for a in sim.by_type(ATTACHMENT)) == [
        "arn:aws-us-gov:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws-us-gov:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws-us-gov:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws-us-gov:iam::aws:policy/AmazonSSMManagedInstanceCore",
    ]
    assert sim.one("eks:index:Cluster").inputs["accessEntries"] == {
        "role-Admin": {
            "principalArn": "arn:aws-us-gov:iam::123456789012:role/Admin",
            "accessPolicies": {
                "cluster-admin": {
                    "policyArn": "arn:aws-us-gov:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                    "accessScope": {"type": "cluster"},
                }
            },
        }
    }
    # Every AWS-owned ARN (account "aws") anywhere in what the program sent is of the partition.
    sent = json.dumps([r.inputs for r in sim.resources])
    assert re.findall(r"arn:([^:\"]*):[a-z]+::aws:", sent) == ["aws-us-gov"] * 5


def test_gpu_capacity_node_role_policies_follow_the_partition():
    sim = run(_capacity_program(), mocks=GovCloud())
    assert {a.inputs["policyArn"].split(":")[1] for a in sim.by_type(ATTACHMENT)} == {"aws-us-gov"}


def test_a_principal_of_another_partition_is_an_error_naming_the_key():
    # Raised on resolution of the partition, as a RunError: the library's message, unwrapped.
    with pytest.raises(pulumi.RunError) as err:
        run(_gov_program("arn:aws:iam::123456789012:role/Admin"), mocks=GovCloud())
    assert str(err.value) == (
        "invalid stack configuration (1 problem):\n"
        '  gpu-eks:adminPrincipalArns[0]: received "arn:aws:iam::123456789012:role/Admin"; '
        "expected an ARN of the provider's partition, arn:aws-us-gov:..."
    )


# ---------------------------------------------------------------------------------------------
# The README's GpuCapacity example
# ---------------------------------------------------------------------------------------------


class PlatformStack(FakeCloud):
    """FakeCloud plus the platform team's stack outputs, read through a StackReference."""

    def new_resource(self, args):
        if args.typ == "pulumi:pulumi:StackReference":
            outputs = {
                "clusterName": "platform-prod",
                "privateSubnetIds": ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"],
                "kubeconfig": EXISTING_KUBECONFIG,
                "nodeRoleArn": "arn:aws:iam::123456789012:role/platform-nodes",
            }
            return args.name, {"name": args.name, "outputs": outputs, "secretOutputNames": []}
        return super().new_resource(args)


def test_readme_gpu_capacity_example_runs_under_mocks():
    from tests.support.paths import ROOT

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (example,) = [b for b in blocks if "GpuCapacity(" in b]
    sim = run(lambda: exec(example, {}), mocks=PlatformStack())
    ng = sim.one(NG, "ml-gpu-t4").inputs
    assert (ng["clusterName"], ng["subnetIds"], ng["nodeRoleArn"]) == (
        "platform-prod",
        ["subnet-0bbbbbbbbbbbbbbb1", "subnet-0bbbbbbbbbbbbbbb2"],
        "arn:aws:iam::123456789012:role/platform-nodes",
    )
    assert sim.by_type("aws:iam/role:Role") == []
    assert sim.one(RELEASE).inputs["version"] == "v26.7.0"
    assert sim.outputs["t4NodeSelector"] == {
        "gpu-eks.io/gpu-count": "1",
        "gpu-eks.io/node-group": "t4",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "nvidia.com/device-plugin.config": "t4",
    }


def test_tag_values_may_be_outputs():
    def program() -> None:
        cost_center = pulumi.Output.from_input("cc-42").apply(lambda v: v)
        settings = load_settings({"clusterName": "ml", "tags": {"costCenter": cost_center}})
        assert settings.tags["costCenter"] is cost_center
        GpuCluster("ml", GpuClusterArgs(settings=settings))

    sim = run(program)
    assert sim.one(NG, "ml-gpu").inputs["tags"] == {
        "gpu-eks/cluster": "ml",
        "costCenter": "cc-42",
        "gpu-eks/node-group": "gpu",
    }
    assert sim.one("eks:index:Cluster").inputs["tags"] == {"gpu-eks/cluster": "ml", "costCenter": "cc-42"}


def test_cluster_name_may_be_an_output():
    from components import Cluster, ClusterArgs
    from components.config.network import NetworkSettings
    from components.config.system_group import SystemNodeGroupSettings

    def program() -> None:
        name = pulumi.Output.from_input("named-elsewhere").apply(lambda v: v)
        cluster = Cluster(
            "c",
            ClusterArgs(
                cluster_name=name,
                kubernetes_version="1.35",
                network=NetworkSettings(),
                system_node_group=SystemNodeGroupSettings(),
            ),
        )
        pulumi.export("clusterName", cluster.cluster_name)

    sim = run(program)
    assert sim.one("eks:index:Cluster").inputs["name"] == "named-elsewhere"
    assert sim.one(NG, "c-system").inputs["clusterName"] == "named-elsewhere"
    assert sim.one("aws:eks/addon:Addon").inputs["clusterName"] == "named-elsewhere"
    assert sim.outputs["clusterName"] == "named-elsewhere"


# ---------------------------------------------------------------------------------------------
# GpuCapacity with the Cluster Autoscaler (opt-in on an existing cluster)
# ---------------------------------------------------------------------------------------------

OIDC_ARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/PLATFORM"
OIDC_URL = "oidc.eks.us-west-2.amazonaws.com/id/PLATFORM"


def _capacity_with_autoscaler(**overrides: Any):
    def program() -> None:
        settings = load_capacity_settings(
            {"kubernetesVersion": "1.34", "gpuNodeGroups": [GROUP_T4], "autoscaler": {"enabled": True}}
        )
        args: dict[str, Any] = {
            "cluster_name": "platform-cluster",
            "subnet_ids": ["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"],
            "kubeconfig": EXISTING_KUBECONFIG,
            "settings": settings,
            "oidc_provider_arn": OIDC_ARN,
            "oidc_provider_url": OIDC_URL,
        }
        args.update(overrides)
        GpuCapacity("ml-gpu", GpuCapacityArgs(**args))

    return program


def test_gpu_capacity_declares_the_autoscaler_and_tags_when_asked():
    sim = run(_capacity_with_autoscaler())
    autoscaler = sim.one("gpu-eks:autoscaler:ClusterAutoscaler")
    assert autoscaler.name == "ml-gpu-autoscaler"
    assert sim.by_urn(autoscaler.parent_urn).name == "ml-gpu"
    release = sim.one(RELEASE, "ml-gpu-autoscaler-release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "cluster-autoscaler",
        "9.59.0",
        "kube-system",
    )
    assert release["values"]["image"]["tag"] == "v1.34.5"  # the existing cluster's minor
    trust = json.loads(sim.one("aws:iam/role:Role", "ml-gpu-autoscaler-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Federated": OIDC_ARN}
    tags = {
        r.inputs["tag"]["key"]: r.inputs["tag"]["value"]
        for r in sim.by_type("aws:autoscaling/tag:Tag")
        if r.name.startswith("ml-gpu-t4-asg-tag-")
    }
    assert tags["k8s.io/cluster-autoscaler/platform-cluster"] == "owned"
    assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
    # The node group follows the existing cluster's version.
    assert sim.one(NG, "ml-gpu-t4").inputs["version"] == "1.34"


def test_gpu_capacity_has_no_autoscaler_unless_asked():
    sim = run(_capacity_program())
    assert sim.by_type("gpu-eks:autoscaler:ClusterAutoscaler") == []
    assert sim.by_type("aws:autoscaling/tag:Tag") == []


def test_gpu_capacity_autoscaler_needs_a_plain_cluster_name_and_the_oidc_provider():
    with pytest.raises(ValueError) as err:
        _capacity_with_autoscaler(
            cluster_name=pulumi.Output.from_input("platform-cluster"), oidc_provider_arn=None, oidc_provider_url=None
        )()
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': autoscaler.enabled needs cluster_name as a plain string (it names the ASG discovery "
        "tag k8s.io/cluster-autoscaler/<cluster name>); received an Output\n"
        "GpuCapacity 'ml-gpu': autoscaler.enabled needs oidc_provider_arn and oidc_provider_url (the Cluster "
        "Autoscaler gets AWS access through IRSA)"
    )


def test_gpu_capacity_checks_plain_subnet_ids_now():
    """EKS CreateNodegroup refuses a subnet that is not an EC2 subnet id; the same rule as
    network.privateSubnetIds (EC2 API reference, "Resource IDs"), checked at declaration."""
    with pytest.raises(ValueError) as err:
        _capacity_program(subnet_ids=["subnet-0ccccccccccccccc1", "subnet-p2"])()
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': subnet_ids[1]: received 'subnet-p2'; expected an id such as subnet-0123456789abcdef0"
    )


def test_gpu_capacity_tags_follow_the_stack_tag_rules():
    """GpuCapacitySettings.tags is the same type as Settings.tags: the AWS tag rules (aws: prefix
    reserved, AWS General Reference "Tagging AWS resources") apply to both."""
    with pytest.raises(ConfigError) as err:
        load_capacity_settings({"kubernetesVersion": "1.34", "tags": {"aws:team": "ml"}})
    assert [str(p) for p in err.value.problems] == [
        "gpu-eks:tags.aws:team: received \"aws:team\"; expected no tag key starting with 'aws:' (reserved for AWS)"
    ]


def test_gpu_capacity_with_the_autoscaler_gets_the_autoscaler_rules():
    """The autoscaler's rules are the same for GpuCapacity as for GpuCluster (settings.autoscaler_problems):
    no renamed resource (CA's GPU readiness check, processors/customresources/gpu_processor.go,
    cluster-autoscaler-1.35.2) and a Kubernetes minor with a CA release."""
    raw = {
        "kubernetesVersion": "1.31",
        "autoscaler": {"enabled": True},
        "gpuNodeGroups": [{"name": "t4", "timeSlicing": {"renameByDefault": True}}],
    }
    with pytest.raises(ConfigError) as err:
        load_capacity_settings(raw)
    assert [p.key for p in err.value.problems] == [
        "gpu-eks:kubernetesVersion",
        "gpu-eks:gpuNodeGroups[0].timeSlicing.renameByDefault",
    ]
    # Without the autoscaler (GpuCapacity's default) both are accepted.
    assert load_capacity_settings({**raw, "autoscaler": {}}).autoscaler_enabled is False


def test_a_tag_value_output_is_checked_when_it_resolves():
    def program() -> None:
        bad = pulumi.Output.from_input("cc#42").apply(lambda v: v)
        GpuCluster("ml", GpuClusterArgs(settings=load_settings({"clusterName": "ml", "tags": {"costCenter": bad}})))

    with pytest.raises(pulumi.RunError) as err:
        run(program)
    assert str(err.value) == (
        "invalid stack configuration (1 problem):\n"
        '  gpu-eks:tags.costCenter: received "cc#42"; expected tag values of letters, digits, spaces and '
        "_ . : / = + - @ (the IAM tag rule)"
    )


def test_gpu_capacity_checks_its_own_tags_now_and_their_outputs_when_they_resolve():
    with pytest.raises(ValueError) as err:
        run(_capacity_program(tags={"aws:team": "ml", "owner": "a" * 257}))
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': tags.aws:team: received key 'aws:team'; expected no tag key starting with 'aws:' "
        "(reserved for AWS)\n"
        f"GpuCapacity 'ml-gpu': tags.owner: received '{'a' * 257}'; expected tag values of at most 256 characters "
        "(got 257)"
    )
    with pytest.raises(pulumi.RunError) as late:
        run(_capacity_program(tags=lambda: {"owner": pulumi.Output.from_input("a!").apply(lambda v: v)}))
    assert str(late.value) == (
        "GpuCapacity 'ml-gpu': tags.owner: received 'a!'; expected tag values of letters, digits, spaces and "
        "_ . : / = + - @ (the IAM tag rule)"
    )
    many = {f"k{i}": "v" for i in range(40)}  # 40 here plus the settings' "team": 41
    with pytest.raises(ValueError) as count:
        run(_capacity_program(tags=many))
    assert str(count.value) == (
        "GpuCapacity 'ml-gpu': tags: received 41 tags with the settings' tags; expected at most 40 (AWS allows 50 "
        "per resource and the library adds up to 10 of its own)"
    )
    ok = run(_capacity_program(tags={f"k{i}": "v" for i in range(39)}))
    assert len(ok.one(NG).inputs["tags"]) == 41  # 40 tags + gpu-eks/node-group


def test_gpu_capacity_checks_a_given_node_role_arn():
    with pytest.raises(ValueError) as err:
        run(_capacity_program(node_role_arn="arn:aws:iam::123456789012:user/nodes"))
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': node_role_arn: received 'arn:aws:iam::123456789012:user/nodes'; expected an IAM "
        "role ARN such as arn:aws:iam::123456789012:role/gpu-nodes (nodes assume a role)"
    )
    with pytest.raises(pulumi.RunError) as late:
        run(_capacity_program(node_role_arn=lambda: pulumi.Output.from_input("nodes").apply(lambda v: v)))
    assert str(late.value) == (
        "GpuCapacity 'ml-gpu': node_role_arn: received 'nodes'; expected an IAM role ARN such as "
        "arn:aws:iam::123456789012:role/gpu-nodes (nodes assume a role)"
    )
    sim = run(_capacity_program(node_role_arn="arn:aws:iam::123456789012:role/eks/gpu-nodes"))
    assert sim.one(NG).inputs["nodeRoleArn"] == "arn:aws:iam::123456789012:role/eks/gpu-nodes"
