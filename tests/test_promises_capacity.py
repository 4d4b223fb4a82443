"""Promises about GpuCapacity (GPU capacity for an existing cluster): its children (names, types,
parents, order), the Kubernetes provider they use, the node role it creates, the node group, ASG
tags, autoscaler and verification it declares for the given cluster. Literal expectations."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components import GpuCapacity, GpuCapacityArgs, load_capacity_settings
from tests.data.promised import DEFAULT_REPAIR
from tooling.simulation import Registration, Simulation, run_program

EXISTING_KUBECONFIG = json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []})
OIDC_ARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/PLATFORM"
OIDC_URL = "https://oidc.eks.us-west-2.amazonaws.com/id/PLATFORM"
NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/ml-gpu-node-role"
ASG = "eks-ml-gpu-t4-00000000-0000-0000-0000-000000000000"

CAPACITY = ("gpu-eks:index:GpuCapacity", "ml-gpu")
GROUP = ("gpu-eks:nodegroup:GpuNodeGroup", "ml-gpu-t4")
OPERATOR = ("gpu-eks:operator:GpuOperator", "ml-gpu-gpu-operator")
AUTOSCALER = ("gpu-eks:autoscaler:ClusterAutoscaler", "ml-gpu-autoscaler")
VERIFY = ("gpu-eks:verification:TimeSlicingVerification", "ml-gpu-verify")
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
TAG = "aws:autoscaling/tag:Tag"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
NAMESPACE = "kubernetes:core/v1:Namespace"

#: ASG tag name suffix -> (key, value) of the one group "t4" (one T4, 4 replicas, default taint).
T4_TAGS = {
    "enabled": ("k8s.io/cluster-autoscaler/enabled", "true"),
    "platform-cluster": ("k8s.io/cluster-autoscaler/platform-cluster", "owned"),
    "node-template/label/k8s.amazonaws.com/accelerator": (
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator",
        "nvidia-tesla-t4",
    ),
    "node-template/label/gpu-eks.io/gpu-count": (
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/gpu-count",
        "1",
    ),
    "node-template/label/nvidia.com/device-plugin.config": (
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/device-plugin.config",
        "t4",
    ),
    "node-template/label/gpu-eks.io/node-group": (
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/node-group",
        "t4",
    ),
    "node-template/taint/nvidia.com/gpu": (
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu",
        "true:NoSchedule",
    ),
    "node-template/resources/nvidia.com/gpu": ("k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu", "4"),
}


def capacity_program(autoscaler: bool) -> Any:
    def program() -> None:
        settings = load_capacity_settings(
            {
                "kubernetesVersion": "1.35",
                "gpuNodeGroups": [{"name": "t4", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3}}],
                "autoscaler": {"enabled": autoscaler},
                "verification": {"enabled": autoscaler},
                "tags": {"team": "ml"},
            }
        )
        gpu = GpuCapacity(
            "ml-gpu",
            GpuCapacityArgs(
                cluster_name="platform-cluster",
                subnet_ids=["subnet-0ddddddddddddddd1", "subnet-0ddddddddddddddd2"],
                kubeconfig=EXISTING_KUBECONFIG,
                settings=settings,
                oidc_provider_arn=OIDC_ARN,
                oidc_provider_url=OIDC_URL,
            ),
        )
        pulumi.export("nodeRoleArn", gpu.node_role_arn)

    return program


_RUNS: dict[bool, Simulation] = {}


def capacity_run(autoscaler: bool) -> Simulation:
    if autoscaler not in _RUNS:
        _RUNS[autoscaler] = run_program(capacity_program(autoscaler), {}, project="consumer", stack="test", timeout=60)
    return _RUNS[autoscaler]


@pytest.fixture
def sim() -> Simulation:
    return capacity_run(True)


def parent_of(sim: Simulation, r: Registration) -> tuple[str, str] | None:
    if r.parent_urn == sim.stack_urn:
        return None
    parent = sim.by_urn(r.parent_urn or "")
    return parent.type, parent.name


def deps(sim: Simulation, typ: str, name: str) -> set[tuple[str, str]]:
    return {(sim.by_urn(u).type, sim.by_urn(u).name) for u in sim.one(typ, name).dependencies}


def test_children_names_types_and_parents(sim: Simulation):
    assert [(r.type, r.name, parent_of(sim, r)) for r in sim.resources] == [
        (*CAPACITY, None),
        ("pulumi:providers:kubernetes", "ml-gpu-k8s", CAPACITY),
        ("aws:iam/role:Role", "ml-gpu-node-role", CAPACITY),
        (ATTACHMENT, "ml-gpu-node-role-worker", CAPACITY),
        (ATTACHMENT, "ml-gpu-node-role-cni", CAPACITY),
        (ATTACHMENT, "ml-gpu-node-role-ecr", CAPACITY),
        (ATTACHMENT, "ml-gpu-node-role-ssm", CAPACITY),
        (*GROUP, CAPACITY),
        ("aws:ec2/launchTemplate:LaunchTemplate", "ml-gpu-t4-lt", GROUP),
        ("aws:eks/nodeGroup:NodeGroup", "ml-gpu-t4", GROUP),
        *[(TAG, f"ml-gpu-t4-asg-tag-{suffix}", GROUP) for suffix in T4_TAGS],
        (*OPERATOR, CAPACITY),
        (NAMESPACE, "ml-gpu-gpu-operator-ns", OPERATOR),
        (RELEASE, "ml-gpu-gpu-operator-release", OPERATOR),
        (*AUTOSCALER, CAPACITY),
        ("aws:iam/role:Role", "ml-gpu-autoscaler-role", AUTOSCALER),
        ("aws:iam/rolePolicy:RolePolicy", "ml-gpu-autoscaler-policy", AUTOSCALER),
        (RELEASE, "ml-gpu-autoscaler-release", AUTOSCALER),
        (*VERIFY, CAPACITY),
        (NAMESPACE, "ml-gpu-verify-ns", VERIFY),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "ml-gpu-verify-deny-all", VERIFY),
        (JOB, "ml-gpu-verify-t4-warmup", VERIFY),
        (JOB, "ml-gpu-verify-t4-isolation", VERIFY),
        (JOB, "ml-gpu-verify-t4-concurrent", VERIFY),
    ]


def test_without_autoscaler_and_verification():
    sim = capacity_run(False)
    assert [(r.type, r.name) for r in sim.resources if r.type.startswith(("gpu-eks:", "aws:autoscaling"))] == [
        CAPACITY,
        GROUP,
        OPERATOR,
    ]


def test_kubernetes_objects_use_the_created_provider(sim: Simulation):
    provider = sim.one("pulumi:providers:kubernetes", "ml-gpu-k8s")
    on_provider = {r.name for r in sim.resources if r.provider and r.provider.startswith(provider.urn + "::")}
    assert on_provider == {
        "ml-gpu-gpu-operator-ns",
        "ml-gpu-gpu-operator-release",
        "ml-gpu-autoscaler-release",
        "ml-gpu-verify-ns",
        "ml-gpu-verify-deny-all",
        "ml-gpu-verify-t4-warmup",
        "ml-gpu-verify-t4-isolation",
        "ml-gpu-verify-t4-concurrent",
    }
    # Sent as a secret (Pulumi's wire form: the secret signature key, then the value).
    assert provider.inputs["kubeconfig"] == {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "value": EXISTING_KUBECONFIG,
    }


def test_node_role_and_its_four_policies(sim: Simulation):
    role = sim.one("aws:iam/role:Role", "ml-gpu-node-role").inputs
    assert role["tags"] == {"team": "ml"}
    assert json.loads(role["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
    assert {a.name: a.inputs for a in sim.by_type(ATTACHMENT)} == {
        "ml-gpu-node-role-worker": {
            "role": "ml-gpu-node-role",
            "policyArn": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        },
        "ml-gpu-node-role-cni": {
            "role": "ml-gpu-node-role",
            "policyArn": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        },
        "ml-gpu-node-role-ecr": {
            "role": "ml-gpu-node-role",
            "policyArn": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        },
        "ml-gpu-node-role-ssm": {
            "role": "ml-gpu-node-role",
            "policyArn": "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
        },
    }
    assert sim.outputs["nodeRoleArn"] == NODE_ROLE_ARN


def test_node_group_goes_to_the_given_cluster(sim: Simulation):
    assert sim.one("aws:eks/nodeGroup:NodeGroup", "ml-gpu-t4").inputs == {
        "clusterName": "platform-cluster",
        # The kubernetesVersion of the capacity settings (the cluster's minor).
        "version": "1.35",
        "nodeRoleArn": NODE_ROLE_ARN,
        "subnetIds": ["subnet-0ddddddddddddddd1", "subnet-0ddddddddddddddd2"],
        "amiType": "AL2023_x86_64_NVIDIA",
        "instanceTypes": ["g4dn.xlarge"],
        "capacityType": "ON_DEMAND",
        "scalingConfig": {"minSize": 0, "desiredSize": 0, "maxSize": 3},
        "updateConfig": {"maxUnavailable": 1},
        "launchTemplate": {"id": "ml-gpu-t4-lt-id", "version": "1"},
        "tags": {"team": "ml", "gpu-eks/node-group": "t4"},
        # Repair at the defaults on an existing cluster too (its node monitoring agent is its owner's).
        "nodeRepairConfig": DEFAULT_REPAIR,
    }


def test_asg_tags_name_the_given_cluster(sim: Simulation):
    assert {t.name: t.inputs for t in sim.by_type(TAG)} == {
        f"ml-gpu-t4-asg-tag-{suffix}": {
            "autoscalingGroupName": ASG,
            "tag": {"key": key, "value": value, "propagateAtLaunch": False},
        }
        for suffix, (key, value) in T4_TAGS.items()
    }


def test_autoscaler_role_trusts_the_given_oidc_provider(sim: Simulation):
    role = sim.one("aws:iam/role:Role", "ml-gpu-autoscaler-role").inputs
    assert role["description"] == "Cluster Autoscaler of EKS cluster platform-cluster (IRSA)"
    assert role["tags"] == {"team": "ml"}
    issuer = "oidc.eks.us-west-2.amazonaws.com/id/PLATFORM"  # the URL without https://
    assert json.loads(role["assumeRolePolicy"])["Statement"] == [
        {
            "Effect": "Allow",
            "Principal": {"Federated": OIDC_ARN},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    f"{issuer}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
                    f"{issuer}:aud": "sts.amazonaws.com",
                }
            },
        }
    ]


def test_autoscaler_policy_is_scoped_to_the_given_cluster(sim: Simulation):
    statements = json.loads(sim.one("aws:iam/rolePolicy:RolePolicy", "ml-gpu-autoscaler-policy").inputs["policy"])[
        "Statement"
    ]
    assert [s["Sid"] for s in statements] == ["Read", "DescribeNodegroups", "ScaleThisClustersGroups"]
    assert statements[1]["Resource"] == "arn:aws:eks:us-west-2:123456789012:nodegroup/platform-cluster/*/*"
    assert statements[2]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/platform-cluster": "owned"}
    }


def test_autoscaler_release_discovers_the_given_clusters_groups(sim: Simulation):
    values = sim.one(RELEASE, "ml-gpu-autoscaler-release").inputs["values"]
    assert values["autoDiscovery"] == {
        "clusterName": "platform-cluster",
        "tags": ["k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/platform-cluster"],
    }
    assert values["image"] == {"tag": "v1.35.2"}
    assert values["rbac"]["serviceAccount"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/ml-gpu-autoscaler-role"
    }
    # No system node group to wait for here (the caller's wait_for is empty): only its IAM.
    assert deps(sim, RELEASE, "ml-gpu-autoscaler-release") == {
        ("aws:iam/role:Role", "ml-gpu-autoscaler-role"),
        ("aws:iam/rolePolicy:RolePolicy", "ml-gpu-autoscaler-policy"),
    }


def test_operator_covers_the_group(sim: Simulation):
    config = sim.one(RELEASE, "ml-gpu-gpu-operator-release").inputs["values"]["devicePlugin"]["config"]
    assert (config["default"], sorted(config["data"])) == ("t4", ["t4"])


def test_verification_waits_for_the_operator_the_autoscaler_and_the_group(sim: Simulation):
    assert deps(sim, NAMESPACE, "ml-gpu-verify-ns") == {
        (NAMESPACE, "ml-gpu-gpu-operator-ns"),
        (RELEASE, "ml-gpu-gpu-operator-release"),
        ("aws:iam/role:Role", "ml-gpu-autoscaler-role"),
        ("aws:iam/rolePolicy:RolePolicy", "ml-gpu-autoscaler-policy"),
        (RELEASE, "ml-gpu-autoscaler-release"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "ml-gpu-t4-lt"),
        ("aws:eks/nodeGroup:NodeGroup", "ml-gpu-t4"),
        *[(TAG, f"ml-gpu-t4-asg-tag-{suffix}") for suffix in T4_TAGS],
    }
    spec = sim.one(JOB, "ml-gpu-verify-t4-concurrent").inputs["spec"]
    assert (spec["parallelism"], spec["completions"], spec["activeDeadlineSeconds"]) == (4, 4, 300)
