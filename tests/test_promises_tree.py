"""Promises about the resource tree of each run: names, types, parents (resource names, types
and parents are public API: a change replaces infrastructure), providers, protect, options and
the order of creation (dependencies). Literal expectations; the snapshot is the second net."""

from __future__ import annotations

import pytest

from tests.data.promised import AUTOSCALED_RUNS, GPU_GROUPS, RUNS, VERIFIED_GROUPS
from tests.data.samples import DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Registration, Simulation

STACK = ("pulumi:pulumi:Stack", None)
GPU_CLUSTER = ("gpu-eks:index:GpuCluster", "gpu-eks")
CLUSTER = ("gpu-eks:cluster:Cluster", "gpu-eks-cluster")
OPERATOR = ("gpu-eks:operator:GpuOperator", "gpu-eks-gpu-operator")
VERIFY = ("gpu-eks:verification:TimeSlicingVerification", "gpu-eks-verify")
K8S_PROVIDER = ("pulumi:providers:kubernetes", "gpu-eks-cluster-k8s")
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


TAG = "aws:autoscaling/tag:Tag"
#: The Cluster Autoscaler's tags on a GPU group's ASG, by name suffix (after `<group>-asg-tag-`),
#: in declaration order: discovery, then one per node label, taint and advertised resource.
ASG_TAGS_T4 = (
    "enabled",
    "gpu-eks-dev",
    "node-template/label/k8s.amazonaws.com/accelerator",
    "node-template/label/gpu-eks.io/gpu-count",
    "node-template/label/nvidia.com/device-plugin.config",
    "node-template/label/gpu-eks.io/node-group",
    "node-template/taint/nvidia.com/gpu",
    "node-template/resources/nvidia.com/gpu",
)


def gpu_group(name: str, asg_tags: tuple[str, ...] = ()) -> list[tuple[str, str, tuple[str, str | None]]]:
    component = ("gpu-eks:nodegroup:GpuNodeGroup", f"gpu-eks-{name}")
    return [
        (*component, GPU_CLUSTER),
        (LT, f"gpu-eks-{name}-lt", component),
        (NG, f"gpu-eks-{name}", component),
        *[(TAG, f"gpu-eks-{name}-asg-tag-{suffix}", component) for suffix in asg_tags],
    ]


def cluster_part(created_vpc: bool) -> list[tuple[str, str, tuple[str, str | None]]]:
    return [
        (*GPU_CLUSTER, STACK),
        (*CLUSTER, GPU_CLUSTER),
        *([("awsx:ec2:Vpc", "gpu-eks-cluster-vpc", CLUSTER)] if created_vpc else []),
        ("eks:index:Cluster", "gpu-eks-cluster-eks", CLUSTER),
        ("aws:iam/role:Role", "gpu-eks-cluster-node-role", CLUSTER),
        (ATTACHMENT, "gpu-eks-cluster-node-role-worker", CLUSTER),
        (ATTACHMENT, "gpu-eks-cluster-node-role-cni", CLUSTER),
        (ATTACHMENT, "gpu-eks-cluster-node-role-ecr", CLUSTER),
        (ATTACHMENT, "gpu-eks-cluster-node-role-ssm", CLUSTER),
        (LT, "gpu-eks-cluster-system-lt", CLUSTER),
        (NG, "gpu-eks-cluster-system", CLUSTER),
        ("aws:eks/addon:Addon", "gpu-eks-cluster-coredns", CLUSTER),
        ("aws:eks/addon:Addon", "gpu-eks-cluster-node-monitoring-agent", CLUSTER),
        (*K8S_PROVIDER, CLUSTER),
    ]


OPERATOR_PART = [
    (*OPERATOR, GPU_CLUSTER),
    ("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns", OPERATOR),
    ("kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release", OPERATOR),
]
#: With observability on (dev, variant: T4 groups): the exporter's metrics ConfigMap comes before the release.
METRICS_CONFIG_MAP = ("kubernetes:core/v1:ConfigMap", "gpu-eks-gpu-operator-dcgm-metrics")
OBSERVED_OPERATOR_PART = [*OPERATOR_PART[:2], (*METRICS_CONFIG_MAP, OPERATOR), OPERATOR_PART[2]]
#: The runs with observability on (dev's default pipeline: cloudwatch).
OBSERVED = ("dev", VARIANT)
OBSERVABILITY = ("gpu-eks:observability:GpuObservability", "gpu-eks-observability")
CLOUDWATCH_ROLE = ("aws:iam/role:Role", "gpu-eks-observability-cloudwatch-role")
CLOUDWATCH_POLICY = (ATTACHMENT, "gpu-eks-observability-cloudwatch-policy")
CLOUDWATCH_ADDON = ("aws:eks/addon:Addon", "gpu-eks-observability-cloudwatch")
OBSERVABILITY_PART = [
    (*OBSERVABILITY, GPU_CLUSTER),
    (*CLOUDWATCH_ROLE, OBSERVABILITY),
    (*CLOUDWATCH_POLICY, OBSERVABILITY),
    (*CLOUDWATCH_ADDON, OBSERVABILITY),
]


AUTOSCALER = ("gpu-eks:autoscaler:ClusterAutoscaler", "gpu-eks-autoscaler")
AUTOSCALER_PART = [
    (*AUTOSCALER, GPU_CLUSTER),
    ("aws:iam/role:Role", "gpu-eks-autoscaler-role", AUTOSCALER),
    ("aws:iam/rolePolicy:RolePolicy", "gpu-eks-autoscaler-policy", AUTOSCALER),
    ("kubernetes:helm.sh/v3:Release", "gpu-eks-autoscaler-release", AUTOSCALER),
]
JOB = "kubernetes:batch/v1:Job"


def verify_part(groups: tuple[str, ...]) -> list[tuple[str, str, tuple[str, str | None]]]:
    """The namespace, its deny-all NetworkPolicy, then per group a warm-up Job, the isolation Job and
    the concurrency Job."""
    return [
        (*VERIFY, GPU_CLUSTER),
        ("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns", VERIFY),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "gpu-eks-verify-deny-all", VERIFY),
        *[(JOB, f"gpu-eks-verify-{g}-{job}", VERIFY) for g in groups for job in ("warmup", "isolation", "concurrent")],
    ]


#: (type, name, (parent type, parent name)) of every resource, in declaration order.
EXPECTED_TREE = {
    "dev": [
        *cluster_part(True),
        *gpu_group("t4", ASG_TAGS_T4),
        *OBSERVED_OPERATOR_PART,
        *AUTOSCALER_PART,
        *verify_part(("t4",)),
        *OBSERVABILITY_PART,
    ],
    "prod": [
        *cluster_part(True),
        *gpu_group("t4", tuple(t.replace("gpu-eks-dev", "gpu-eks-prod") for t in ASG_TAGS_T4)),
        *OPERATOR_PART,
        *AUTOSCALER_PART,
    ],
    # No autoscaler: no ASG tags, and "idle" (desiredSize 0) is not verified.
    VARIANT: [
        *cluster_part(False),
        *gpu_group("big"),
        *gpu_group("idle"),
        *OBSERVED_OPERATOR_PART,
        *verify_part(("big",)),
        *OBSERVABILITY_PART,
    ],
    DEFAULTS: [
        *cluster_part(True),
        *gpu_group("gpu", tuple(t.replace("gpu-eks-dev", "gpu-eks-defaults") for t in ASG_TAGS_T4)),
        *OPERATOR_PART,
        *AUTOSCALER_PART,
    ],
}
STACK_URN = {
    "dev": "urn:pulumi:dev::gpu-eks::pulumi:pulumi:Stack::gpu-eks-dev",
    "prod": "urn:pulumi:prod::gpu-eks::pulumi:pulumi:Stack::gpu-eks-prod",
    VARIANT: "urn:pulumi:dev::gpu-eks::pulumi:pulumi:Stack::gpu-eks-dev",
    DEFAULTS: "urn:pulumi:defaults::gpu-eks::pulumi:pulumi:Stack::gpu-eks-defaults",
}
#: Remote components (built by their plugins: pulumi-eks, awsx).
REMOTE = {"eks:index:Cluster", "awsx:ec2:Vpc"}
#: Resources managed through the cluster's Kubernetes provider.
ON_K8S_PROVIDER = {
    "dev": {
        "gpu-eks-gpu-operator-ns",
        "gpu-eks-gpu-operator-dcgm-metrics",
        "gpu-eks-gpu-operator-release",
        "gpu-eks-autoscaler-release",
        "gpu-eks-verify-ns",
        "gpu-eks-verify-deny-all",
        "gpu-eks-verify-t4-warmup",
        "gpu-eks-verify-t4-isolation",
        "gpu-eks-verify-t4-concurrent",
    },
    "prod": {"gpu-eks-gpu-operator-ns", "gpu-eks-gpu-operator-release", "gpu-eks-autoscaler-release"},
    VARIANT: {
        "gpu-eks-gpu-operator-ns",
        "gpu-eks-gpu-operator-dcgm-metrics",
        "gpu-eks-gpu-operator-release",
        "gpu-eks-verify-ns",
        "gpu-eks-verify-deny-all",
        "gpu-eks-verify-big-warmup",
        "gpu-eks-verify-big-isolation",
        "gpu-eks-verify-big-concurrent",
    },
    DEFAULTS: {"gpu-eks-gpu-operator-ns", "gpu-eks-gpu-operator-release", "gpu-eks-autoscaler-release"},
}
#: Pulumi `protect`: the control plane when deletionProtection is on (prod, variant).
PROTECTED = {"dev": set(), "prod": {"gpu-eks-cluster-eks"}, VARIANT: {"gpu-eks-cluster-eks"}, DEFAULTS: set()}
#: Resource options besides parent/provider/protect, by resource (type, name).
OPTIONS = {
    "dev": {
        (NG, "gpu-eks-cluster-system"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
        (NG, "gpu-eks-t4"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
    },
    "prod": {
        (NG, "gpu-eks-cluster-system"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
        (NG, "gpu-eks-t4"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
    },
    VARIANT: {
        (NG, "gpu-eks-cluster-system"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
        (NG, "gpu-eks-big"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
        (NG, "gpu-eks-idle"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
    },
    DEFAULTS: {
        (NG, "gpu-eks-cluster-system"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
        (NG, "gpu-eks-gpu"): {"ignoreChanges": ["scalingConfig.desiredSize"]},
    },
}


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


def parent_of(sim: Simulation, r: Registration) -> tuple[str, str | None]:
    if r.parent_urn == sim.stack_urn:
        return STACK
    parent = sim.by_urn(r.parent_urn or "")
    return parent.type, parent.name


def find(sim: Simulation, typ: str, name: str) -> Registration:
    return sim.one(typ, name)


def test_resources_names_types_and_parents(run: tuple[str, Simulation]):
    name, sim = run
    assert [(r.type, r.name, parent_of(sim, r)) for r in sim.resources] == EXPECTED_TREE[name]


def test_the_top_component_is_a_child_of_the_stack(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.stack_urn == STACK_URN[name]
    assert sim.one(*GPU_CLUSTER).parent_urn == STACK_URN[name]


def test_remote_components_are_only_pulumi_eks_and_awsx(run: tuple[str, Simulation]):
    _, sim = run
    assert {r.type for r in sim.resources if r.remote} <= REMOTE
    assert sim.one("eks:index:Cluster").remote is True


def test_kubernetes_objects_use_the_clusters_provider(run: tuple[str, Simulation]):
    name, sim = run
    provider = sim.one(*K8S_PROVIDER)
    on_provider = {r.name for r in sim.resources if r.provider and r.provider.startswith(provider.urn + "::")}
    assert on_provider == ON_K8S_PROVIDER[name]
    # Nothing else names an explicit provider: AWS resources use the stack's default aws provider.
    assert {r.name for r in sim.resources if r.provider} == ON_K8S_PROVIDER[name]


def test_protect(run: tuple[str, Simulation]):
    name, sim = run
    assert {r.name for r in sim.resources if r.protect} == PROTECTED[name]


def test_resource_options(run: tuple[str, Simulation]):
    name, sim = run
    assert {(r.type, r.name): r.options for r in sim.resources if r.options} == OPTIONS[name]


def test_no_aliases_of_ours_yet(run: tuple[str, Simulation]):
    """Only pulumi-kubernetes's own type aliases (apps/v1 Deployment's and networking.k8s.io/v1
    NetworkPolicy's older API groups)."""
    _, sim = run
    assert {r.type for r in sim.resources if r.aliases} <= {
        "kubernetes:apps/v1:Deployment",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    }


# --- Order of creation ------------------------------------------------------------------------


def deps(sim: Simulation, typ: str, name: str) -> set[tuple[str, str]]:
    return {(sim.by_urn(u).type, sim.by_urn(u).name) for u in find(sim, typ, name).dependencies}


ALL_ATTACHMENTS = {(ATTACHMENT, f"gpu-eks-cluster-node-role-{p}") for p in ("worker", "cni", "ecr", "ssm")}


def test_coredns_addon_waits_for_the_system_node_group_and_the_control_plane(run: tuple[str, Simulation]):
    _, sim = run
    assert deps(sim, "aws:eks/addon:Addon", "gpu-eks-cluster-coredns") == {
        (NG, "gpu-eks-cluster-system"),
        ("eks:index:Cluster", "gpu-eks-cluster-eks"),
    }


def test_node_monitoring_agent_addon_waits_for_the_system_node_group_like_coredns(run: tuple[str, Simulation]):
    _, sim = run
    assert deps(sim, "aws:eks/addon:Addon", "gpu-eks-cluster-node-monitoring-agent") == {
        (NG, "gpu-eks-cluster-system"),
        ("eks:index:Cluster", "gpu-eks-cluster-eks"),
    }


def test_node_groups_wait_for_the_role_its_policies_the_control_plane_and_their_launch_template(
    run: tuple[str, Simulation],
):
    """A GPU node group also waits for the operator's release (issue 40): a change of
    gpuOperator.isolation reaches the device plugin before a node with the new toolkit settings."""
    name, sim = run
    vpc = {("awsx:ec2:Vpc", "gpu-eks-cluster-vpc")} if name != VARIANT else set()
    common = {("aws:iam/role:Role", "gpu-eks-cluster-node-role"), ("eks:index:Cluster", "gpu-eks-cluster-eks")}
    assert deps(sim, NG, "gpu-eks-cluster-system") == {
        *ALL_ATTACHMENTS,
        *common,
        *vpc,
        (LT, "gpu-eks-cluster-system-lt"),
    }
    for group in GPU_GROUPS[name]:
        assert deps(sim, NG, f"gpu-eks-{group}") == {
            *ALL_ATTACHMENTS,
            *common,
            *vpc,
            (LT, f"gpu-eks-{group}-lt"),
            ("kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release"),
        }


def test_every_policy_attachment_waits_for_the_role(run: tuple[str, Simulation]):
    _, sim = run
    for _, attachment in sorted(ALL_ATTACHMENTS):
        assert deps(sim, ATTACHMENT, attachment) == {("aws:iam/role:Role", "gpu-eks-cluster-node-role")}


def test_the_operator_waits_for_the_system_node_group(run: tuple[str, Simulation]):
    """The operator and NFD master/gc tolerate no GPU taint: they need the untainted system nodes."""
    name, sim = run
    assert deps(sim, "kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns") == {(NG, "gpu-eks-cluster-system")}
    # The exporter reads its metrics ConfigMap at start (and exits without it): created first.
    assert deps(sim, "kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release") == {
        ("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns"),
        *([METRICS_CONFIG_MAP] if name in OBSERVED else []),
    }


def test_observability_waits_for_the_operators_namespace_and_the_addon_for_its_role(run: tuple[str, Simulation]):
    name, sim = run
    if name not in OBSERVED:
        assert sim.by_type(OBSERVABILITY[0]) == []
        return
    ns = ("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns")
    assert deps(sim, *METRICS_CONFIG_MAP) == {ns}
    assert deps(sim, *CLOUDWATCH_POLICY) == {CLOUDWATCH_ROLE}
    # The add-on's agent must not start before its IRSA role can act.
    assert deps(sim, *CLOUDWATCH_ADDON) == {
        CLOUDWATCH_ROLE,
        CLOUDWATCH_POLICY,
        ns,
        ("eks:index:Cluster", "gpu-eks-cluster-eks"),
    }


def test_the_kubernetes_provider_waits_for_the_control_plane(run: tuple[str, Simulation]):
    _, sim = run
    assert deps(sim, *K8S_PROVIDER) == {("eks:index:Cluster", "gpu-eks-cluster-eks")}


def test_verification_waits_for_the_operator_the_autoscaler_and_every_gpu_node_group(run: tuple[str, Simulation]):
    """Through its namespace: the operator (its device plugin advertises the slots), every GPU
    group with its ASG tags, and with an autoscaler the autoscaler (its role, policy and release:
    the warm-up Job of a group at zero is what makes it add a node)."""
    name, sim = run
    if not VERIFIED_GROUPS[name]:
        assert sim.by_type(VERIFY[0]) == []
        return
    groups = {(NG, f"gpu-eks-{g}") for g in GPU_GROUPS[name]} | {(LT, f"gpu-eks-{g}-lt") for g in GPU_GROUPS[name]}
    tags = (
        {(TAG, f"gpu-eks-{g}-asg-tag-{t}") for g in GPU_GROUPS[name] for t in ASG_TAGS_T4} if name == "dev" else set()
    )
    autoscaler = {(r[0], r[1]) for r in AUTOSCALER_PART[1:]} if name == "dev" else set()
    assert deps(sim, "kubernetes:core/v1:Namespace", "gpu-eks-verify-ns") == {
        ("kubernetes:core/v1:Namespace", "gpu-eks-gpu-operator-ns"),
        ("kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release"),
        *([METRICS_CONFIG_MAP] if name in OBSERVED else []),
        *groups,
        *tags,
        *autoscaler,
    }
    for group in VERIFIED_GROUPS[name]:
        assert deps(sim, JOB, f"gpu-eks-verify-{group}-warmup") == {
            ("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns")
        }
        # The concurrency Job starts on the node the warm-up brought, so its short deadline covers no boot.
        assert deps(sim, JOB, f"gpu-eks-verify-{group}-concurrent") == {
            ("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns"),
            (JOB, f"gpu-eks-verify-{group}-warmup"),
        }


def test_asg_tags_wait_for_their_node_group(run: tuple[str, Simulation]):
    """The ASG exists once EKS created the node group (its name comes from the node group)."""
    name, sim = run
    tags = sim.by_type(TAG)
    assert len(tags) == {"dev": 8, "prod": 8, VARIANT: 0, DEFAULTS: 8}[name]
    for tag in tags:
        group = tag.name.split("-asg-tag-")[0]
        assert deps(sim, TAG, tag.name) == {(NG, group)}, tag.name


def test_the_autoscaler_waits_for_the_system_node_group_and_its_role_and_policy(run: tuple[str, Simulation]):
    """CA runs on an untainted node (the system group); its pod must not start before its IRSA
    role can act (the role ARN alone would not wait for the policy)."""
    name, sim = run
    if name not in AUTOSCALED_RUNS:
        assert sim.by_type(AUTOSCALER[0]) == []
        return
    assert deps(sim, "kubernetes:helm.sh/v3:Release", "gpu-eks-autoscaler-release") == {
        (NG, "gpu-eks-cluster-system"),
        ("aws:iam/role:Role", "gpu-eks-autoscaler-role"),
        ("aws:iam/rolePolicy:RolePolicy", "gpu-eks-autoscaler-policy"),
    }
    assert deps(sim, "aws:iam/rolePolicy:RolePolicy", "gpu-eks-autoscaler-policy") == {
        ("aws:iam/role:Role", "gpu-eks-autoscaler-role")
    }
    # The trust policy names the cluster's OIDC provider.
    assert deps(sim, "aws:iam/role:Role", "gpu-eks-autoscaler-role") == {("eks:index:Cluster", "gpu-eks-cluster-eks")}
