"""Promises about the Cluster Autoscaler: its IRSA role (trust and policy statements), its Helm
release (chart, repository, version, namespace, flags, every value we send), the ASG tags of each
GPU group (key, value, propagateAtLaunch, ASG), and a fifth run built for it (AUTOSCALED: extra
labels, a taint without value, 4-GPU nodes, an unshared group scaling from zero, Kubernetes 1.34).
Literal expectations; nothing computed by the code under test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.data.promised import ACCELERATOR
from tests.data.samples import AUTOSCALED, DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Registration, Simulation

RELEASE = "kubernetes:helm.sh/v3:Release"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/rolePolicy:RolePolicy"
TAG = "aws:autoscaling/tag:Tag"
JOB = "kubernetes:batch/v1:Job"
COMPONENT = "gpu-eks:autoscaler:ClusterAutoscaler"

#: Runs with a Cluster Autoscaler (the variant turns it off).
RUNS = ("dev", "prod", DEFAULTS, AUTOSCALED)
CLUSTER = {"dev": "gpu-eks-dev", "prod": "gpu-eks-prod", DEFAULTS: "gpu-eks-defaults", AUTOSCALED: "ml-scaled"}
#: The CA image matches the cluster's Kubernetes minor (1.35 -> v1.35.2, 1.34 -> v1.34.5).
IMAGE_TAG = {"dev": "v1.35.2", "prod": "v1.35.2", DEFAULTS: "v1.35.2", AUTOSCALED: "v1.34.5"}
SCALE_DOWN_UNNEEDED_TIME = {"dev": "10m", "prod": "10m", DEFAULTS: "10m", AUTOSCALED: "30m"}
ROLE_TAGS = {
    "dev": {"environment": "dev", "gpu-eks/cluster": "gpu-eks-dev"},
    "prod": {"environment": "prod", "gpu-eks/cluster": "gpu-eks-prod"},
    DEFAULTS: {"gpu-eks/cluster": "gpu-eks-defaults"},
    AUTOSCALED: {"gpu-eks/cluster": "ml-scaled", "team": "ml"},
}
#: The fake cloud's ids: the role's ARN, the OIDC provider of every simulated cluster.
ROLE_ARN = "arn:aws:iam::123456789012:role/gpu-eks-autoscaler-role"
OIDC_ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/00000000000000000000000000000000"


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


@pytest.fixture
def scaled() -> Simulation:
    return simulate_run(AUTOSCALED)


# --- Release ------------------------------------------------------------------------------------


def test_release_inputs(run: tuple[str, Simulation]):
    _, sim = run
    inputs = dict(sim.one(RELEASE, "gpu-eks-autoscaler-release").inputs)
    inputs.pop("values")
    assert inputs == {
        "name": "cluster-autoscaler",
        "chart": "cluster-autoscaler",
        "version": "9.59.0",
        "repositoryOpts": {"repo": "https://kubernetes.github.io/autoscaler"},
        "namespace": "kube-system",
        "createNamespace": False,
        "atomic": True,
        "cleanupOnFail": True,
        "timeout": 600,
        # Set by pulumi-kubernetes itself.
        "compat": "true",
    }


def release_values(run: str) -> dict[str, Any]:
    cluster = CLUSTER[run]
    return {
        "cloudProvider": "aws",
        "awsRegion": "us-west-2",
        # Auto-discovery: every ASG carrying both tag keys (the chart's --node-group-auto-discovery).
        "autoDiscovery": {
            "clusterName": cluster,
            "tags": ["k8s.io/cluster-autoscaler/enabled", f"k8s.io/cluster-autoscaler/{cluster}"],
        },
        "image": {"tag": IMAGE_TAG[run]},
        "fullnameOverride": "cluster-autoscaler",
        # IRSA: the service account the trust policy names, annotated with the role.
        "rbac": {
            "serviceAccount": {
                "create": True,
                "name": "cluster-autoscaler",
                "annotations": {"eks.amazonaws.com/role-arn": ROLE_ARN},
            }
        },
        # Off GPU nodes: on the untainted system node group.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "gpu-eks.io/gpu-count", "operator": "DoesNotExist"},
                                {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
                                {"key": "eks.amazonaws.com/instance-gpu-count", "operator": "DoesNotExist"},
                            ]
                        }
                    ]
                }
            }
        },
        "extraArgs": {
            "scale-down-unneeded-time": SCALE_DOWN_UNNEEDED_TIME[run],
            "expander": "least-waste",
            "balance-similar-node-groups": True,
            "skip-nodes-with-local-storage": False,
            "startup-taint": "gpu-eks.io/boot-stage",
            "status-taint": "gpu-eks.io/boot-stage-failed",
        },
    }


def test_release_values(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one(RELEASE, "gpu-eks-autoscaler-release").inputs["values"] == release_values(name)


def test_the_image_matches_the_clusters_minor(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one(RELEASE, "gpu-eks-autoscaler-release").inputs["values"]["image"] == {"tag": IMAGE_TAG[name]}


def test_ca_flags(run: tuple[str, Simulation]):
    """least-waste picks the smallest group that fits; GPU pods' emptyDir must not pin nodes."""
    name, sim = run
    args = sim.one(RELEASE, "gpu-eks-autoscaler-release").inputs["values"]["extraArgs"]
    assert args["expander"] == "least-waste"
    assert args["skip-nodes-with-local-storage"] is False
    assert args["balance-similar-node-groups"] is True
    assert args["scale-down-unneeded-time"] == SCALE_DOWN_UNNEEDED_TIME[name]


# --- IRSA role ----------------------------------------------------------------------------------


def test_role_description_and_tags(run: tuple[str, Simulation]):
    name, sim = run
    i = sim.one(ROLE, "gpu-eks-autoscaler-role").inputs
    assert i["description"] == f"Cluster Autoscaler of EKS cluster {CLUSTER[name]} (IRSA)"
    assert i["tags"] == ROLE_TAGS[name]
    assert set(i) == {"description", "tags", "assumeRolePolicy"}


def test_role_trusts_only_the_autoscalers_service_account(run: tuple[str, Simulation]):
    _, sim = run
    trust = json.loads(sim.one(ROLE, "gpu-eks-autoscaler-role").inputs["assumeRolePolicy"])
    assert trust == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::123456789012:oidc-provider/{OIDC_ISSUER}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{OIDC_ISSUER}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
                        f"{OIDC_ISSUER}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def test_policy_statements(run: tuple[str, Simulation]):
    """Read anywhere; scale only this cluster's tagged ASGs; describe only its node groups."""
    name, sim = run
    cluster = CLUSTER[name]
    policy = sim.one(POLICY, "gpu-eks-autoscaler-policy").inputs
    assert policy["role"] == "gpu-eks-autoscaler-role"
    assert json.loads(policy["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Read",
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                ],
                "Resource": "*",
            },
            {
                "Sid": "DescribeNodegroups",
                "Effect": "Allow",
                "Action": "eks:DescribeNodegroup",
                "Resource": f"arn:aws:eks:us-west-2:123456789012:nodegroup/{cluster}/*/*",
            },
            {
                "Sid": "ScaleThisClustersGroups",
                "Effect": "Allow",
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Resource": "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:*:autoScalingGroupName/*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster}": "owned"}},
            },
        ],
    }


# --- ASG tags -----------------------------------------------------------------------------------


def t4_group_tags(cluster: str, group: str, profile: str, slots: str) -> dict[str, str]:
    """(tag name suffix after `k8s.io/cluster-autoscaler/`) -> value, for a one-T4 group with the
    default taint."""
    return {
        "enabled": "true",
        cluster: "owned",
        "node-template/label/k8s.amazonaws.com/accelerator": ACCELERATOR,
        "node-template/label/gpu-eks.io/gpu-count": "1",
        "node-template/label/nvidia.com/device-plugin.config": profile,
        "node-template/label/gpu-eks.io/node-group": group,
        "node-template/taint/nvidia.com/gpu": "true:NoSchedule",
        "node-template/resources/nvidia.com/gpu": slots,
    }


#: Per GPU group: tag key suffix -> value, in declaration order.
ASG_TAGS: dict[str, dict[str, dict[str, str]]] = {
    "dev": {"t4": t4_group_tags("gpu-eks-dev", "t4", "timeslice-x4", "4")},
    "prod": {"t4": t4_group_tags("gpu-eks-prod", "t4", "timeslice-x4", "4")},
    DEFAULTS: {"gpu": t4_group_tags("gpu-eks-defaults", "gpu", "gpu", "4")},
    AUTOSCALED: {
        "multi": {
            "enabled": "true",
            "ml-scaled": "owned",
            "node-template/label/team.example.com/owner": "ml",
            "node-template/label/k8s.amazonaws.com/accelerator": ACCELERATOR,
            "node-template/label/gpu-eks.io/gpu-count": "4",
            "node-template/label/nvidia.com/device-plugin.config": "multi",
            "node-template/label/gpu-eks.io/node-group": "multi",
            "node-template/taint/nvidia.com/gpu": "true:NoSchedule",
            # A taint without value: CA reads `<value>:<effect>` (value empty).
            "node-template/taint/dedicated": ":NoExecute",
            # 4 T4s x 2 replicas: CA's template node offers 8, not the instance's 4.
            "node-template/resources/nvidia.com/gpu": "8",
        },
        # Unshared (replicas 1): one per physical GPU.
        "zero": t4_group_tags("ml-scaled", "zero", "zero", "1"),
    },
}


def tags_of(sim: Simulation) -> list[Registration]:
    return sim.by_type(TAG)


def test_asg_tag_resources(run: tuple[str, Simulation]):
    """Every tag: its resource name, ASG, key, value, and propagateAtLaunch false (the tags are
    for CA's template; instances get their labels from nodeadm)."""
    name, sim = run
    assert [(t.name, t.inputs) for t in tags_of(sim)] == [
        (
            f"gpu-eks-{group}-asg-tag-{suffix}",
            {
                "autoscalingGroupName": f"eks-gpu-eks-{group}-00000000-0000-0000-0000-000000000000",
                "tag": {"key": f"k8s.io/cluster-autoscaler/{suffix}", "value": value, "propagateAtLaunch": False},
            },
        )
        for group, tags in ASG_TAGS[name].items()
        for suffix, value in tags.items()
    ]


def test_asg_tags_never_propagate_to_instances(run: tuple[str, Simulation]):
    _, sim = run
    assert {t.inputs["tag"]["propagateAtLaunch"] for t in tags_of(sim)} == {False}


def test_asg_tags_are_children_of_their_gpu_node_group(run: tuple[str, Simulation]):
    name, sim = run
    for tag in tags_of(sim):
        parent = sim.by_urn(tag.parent_urn or "")
        assert (parent.type, parent.name) == ("gpu-eks:nodegroup:GpuNodeGroup", tag.name.split("-asg-tag-")[0])
    assert len(tags_of(sim)) == {"dev": 8, "prod": 8, DEFAULTS: 8, AUTOSCALED: 18}[name]


def test_no_autoscaler_no_tags_no_role():
    sim = simulate_run(VARIANT)
    assert sim.by_type(COMPONENT) == [] and sim.by_type(TAG) == [] and sim.by_type(POLICY) == []
    # The CloudWatch agent's IRSA role (observability, as in dev) is the only other role.
    assert [r.name for r in sim.by_type(ROLE)] == ["gpu-eks-cluster-node-role", "gpu-eks-observability-cloudwatch-role"]
    assert [r.name for r in sim.by_type(RELEASE)] == ["gpu-eks-gpu-operator-release"]


# --- The autoscaled run -------------------------------------------------------------------------


def test_autoscaled_run_tree(scaled: Simulation):
    def parent(r: Registration) -> str | None:
        return None if r.parent_urn == scaled.stack_urn else scaled.by_urn(r.parent_urn or "").name

    gpu = [
        (typ, name, parent_name)
        for typ, name, parent_name in ((r.type, r.name, parent(r)) for r in scaled.resources)
        if parent_name not in ("gpu-eks-cluster", None)
    ]

    def group_children(g: str) -> list[tuple[str, str, str]]:
        return [
            ("gpu-eks:nodegroup:GpuNodeGroup", f"gpu-eks-{g}", "gpu-eks"),
            ("aws:ec2/launchTemplate:LaunchTemplate", f"gpu-eks-{g}-lt", f"gpu-eks-{g}"),
            ("aws:eks/nodeGroup:NodeGroup", f"gpu-eks-{g}", f"gpu-eks-{g}"),
            *[(TAG, f"gpu-eks-{g}-asg-tag-{suffix}", f"gpu-eks-{g}") for suffix in ASG_TAGS[AUTOSCALED][g]],
        ]

    assert gpu == [
        ("gpu-eks:cluster:Cluster", "gpu-eks-cluster", "gpu-eks"),
        *group_children("multi"),
        *group_children("zero"),
        ("gpu-eks:operator:GpuOperator", "gpu-eks-gpu-operator", "gpu-eks"),
        ("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns", "gpu-eks-gpu-operator"),
        ("kubernetes:core/v1:ConfigMap", "gpu-eks-gpu-operator-dcgm-metrics", "gpu-eks-gpu-operator"),
        (RELEASE, "gpu-eks-gpu-operator-release", "gpu-eks-gpu-operator"),
        (COMPONENT, "gpu-eks-autoscaler", "gpu-eks"),
        (ROLE, "gpu-eks-autoscaler-role", "gpu-eks-autoscaler"),
        (POLICY, "gpu-eks-autoscaler-policy", "gpu-eks-autoscaler"),
        (RELEASE, "gpu-eks-autoscaler-release", "gpu-eks-autoscaler"),
        ("gpu-eks:verification:TimeSlicingVerification", "gpu-eks-verify", "gpu-eks"),
        ("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns", "gpu-eks-verify"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "gpu-eks-verify-deny-all", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-multi-warmup", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-multi-isolation", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-multi-concurrent", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-zero-warmup", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-zero-isolation", "gpu-eks-verify"),
        (JOB, "gpu-eks-verify-zero-concurrent", "gpu-eks-verify"),
        # zero is exclusive (replicas 1): one pod per GPU, each holding 60 % of its memory.
        (JOB, "gpu-eks-verify-zero-exclusive", "gpu-eks-verify"),
        ("gpu-eks:observability:GpuObservability", "gpu-eks-observability", "gpu-eks"),
        (ROLE, "gpu-eks-observability-cloudwatch-role", "gpu-eks-observability"),
        (
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "gpu-eks-observability-cloudwatch-policy",
            "gpu-eks-observability",
        ),
        ("aws:eks/addon:Addon", "gpu-eks-observability-cloudwatch", "gpu-eks-observability"),
    ]


def test_autoscaled_unshared_profile_has_no_sharing_block(scaled: Simulation):
    """replicas 1: each GPU advertised once, no time-slicing (the plugin refuses replicas < 2)."""
    config = scaled.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["values"]["devicePlugin"]["config"]
    assert config["default"] == "multi"
    assert config["data"] == {
        "multi": (
            "version: v1\n"
            "flags:\n"
            "  migStrategy: none\n"
            "sharing:\n"
            "  timeSlicing:\n"
            "    renameByDefault: false\n"
            "    failRequestsGreaterThanOne: true\n"
            "    resources:\n"
            "    - name: nvidia.com/gpu\n"
            "      replicas: 2\n"
        ),
        "zero": "version: v1\nflags:\n  migStrategy: none\n",
    }


def test_autoscaled_verification_covers_the_group_at_zero(scaled: Simulation):
    """With an autoscaler a group at desiredSize 0 is verified: its warm-up Job brings the node."""
    counts = {
        j.name: (j.inputs["spec"]["parallelism"], j.inputs["spec"]["completions"], j.inputs["metadata"]["name"])
        for j in scaled.by_type(JOB)
    }
    assert counts == {
        "gpu-eks-verify-multi-warmup": (1, 1, "ts-warmup-multi-975f053a"),
        "gpu-eks-verify-multi-isolation": (1, 1, "isolation-multi-16175fb7"),
        "gpu-eks-verify-multi-concurrent": (8, 8, "ts-check-multi-5e19c0a9"),
        "gpu-eks-verify-zero-warmup": (1, 1, "ts-warmup-zero-452f9a3a"),
        "gpu-eks-verify-zero-isolation": (1, 1, "isolation-zero-175b703a"),
        "gpu-eks-verify-zero-concurrent": (1, 1, "ts-check-zero-52e24f0f"),
        # The exclusive probe changed once (issue 35: the shared CUDA preamble), so did its name.
        "gpu-eks-verify-zero-exclusive": (1, 1, "exclusive-zero-4df102aa"),
    }
    pod = scaled.one(JOB, "gpu-eks-verify-multi-concurrent").inputs["spec"]["template"]["spec"]
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert pod["nodeSelector"] == {
        "team.example.com/owner": "ml",
        "k8s.amazonaws.com/accelerator": ACCELERATOR,
        "gpu-eks.io/gpu-count": "4",
        "nvidia.com/device-plugin.config": "multi",
        "gpu-eks.io/node-group": "multi",
    }


def test_autoscaled_node_groups(scaled: Simulation):
    ngs = {
        ng.name: (ng.inputs["instanceTypes"], ng.inputs["capacityType"], ng.inputs["scalingConfig"])
        for ng in scaled.by_type("aws:eks/nodeGroup:NodeGroup")
    }
    assert ngs == {
        "gpu-eks-cluster-system": (["t3.large"], "ON_DEMAND", {"minSize": 1, "desiredSize": 1, "maxSize": 2}),
        "gpu-eks-multi": (["g4dn.12xlarge"], "ON_DEMAND", {"minSize": 1, "desiredSize": 1, "maxSize": 3}),
        "gpu-eks-zero": (["g4dn.xlarge"], "SPOT", {"minSize": 0, "desiredSize": 0, "maxSize": 2}),
    }


def test_autoscaled_outputs(scaled: Simulation):
    out = scaled.outputs["gpuNodeGroups"]
    assert {g: (o["gpusPerNode"], o["sharedSlotsPerNode"], o["sharedSlotsAtMaxSize"]) for g, o in out.items()} == {
        "multi": (4, 8, 24),
        "zero": (1, 1, 2),
    }
    assert out["zero"]["autoscalingGroupName"] == "eks-gpu-eks-zero-00000000-0000-0000-0000-000000000000"
