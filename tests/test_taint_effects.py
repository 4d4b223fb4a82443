"""Every taint effect (NoSchedule, PreferNoSchedule, NoExecute), with and without a value, through
every place the library derives something from a taint (issue 17, section 5): kubelet's
``--register-with-taints`` in the user data, the tolerations of the stack outputs, the
gpu-operator's DaemonSets and the NFD worker, the verification pods, and the Cluster Autoscaler's
node-template taint tags. Every expectation is a literal.

Sources: kubelet parses ``key=value:Effect`` or ``key:Effect`` (k8s.io/kubernetes pkg/util/taints
ParseTaints); a toleration ``Equal`` + value or ``Exists`` (no value) tolerates the taint of its
key and effect (k8s.io/api/core/v1 toleration.go ToleratesTaint); CA reads a taint tag's value as
``<value>:<Effect>`` (cluster-autoscaler-1.35.2 cloudprovider/aws/aws_manager.go
extractTaintsFromAsg: ``(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)``, split at the first ``:``).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components import GpuCluster, GpuClusterArgs, load_settings
from components.config.groups import GpuNodeGroupSettings, Taint
from components.gpu_operator.values import gpu_operator_values
from components.plan import placement
from components.plan.group import plan_group
from components.verification.jobs import concurrent_job_spec, warmup_job_spec
from tests.support.rendered import kubelet_flags_in
from tooling.simulation import Simulation, run_program

KEY = "team.example.com/gpu"
IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
#: (group name, taint value, effect, kubelet flag, toleration, CA taint tag value)
CASES = [
    (
        "ns-value",
        "ml",
        "NoSchedule",
        "--register-with-taints=team.example.com/gpu=ml:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        "ml:NoSchedule",
    ),
    (
        "ns-bare",
        "",
        "NoSchedule",
        "--register-with-taints=team.example.com/gpu:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Exists", "effect": "NoSchedule"},
        ":NoSchedule",
    ),
    (
        "pns-value",
        "ml",
        "PreferNoSchedule",
        "--register-with-taints=team.example.com/gpu=ml:PreferNoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "PreferNoSchedule"},
        "ml:PreferNoSchedule",
    ),
    (
        "pns-bare",
        "",
        "PreferNoSchedule",
        "--register-with-taints=team.example.com/gpu:PreferNoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Exists", "effect": "PreferNoSchedule"},
        ":PreferNoSchedule",
    ),
    (
        "ne-value",
        "ml",
        "NoExecute",
        "--register-with-taints=team.example.com/gpu=ml:NoExecute,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoExecute"},
        "ml:NoExecute",
    ),
    (
        "ne-bare",
        "",
        "NoExecute",
        "--register-with-taints=team.example.com/gpu:NoExecute,gpu-eks.io/boot-stage=pending:NoSchedule",
        {"key": KEY, "operator": "Exists", "effect": "NoExecute"},
        ":NoExecute",
    ),
]
IDS = [c[0] for c in CASES]
#: The chart's own DaemonSet toleration (every validated version) and the NFD worker's (v26.7.0).
CHART_DAEMONSET = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CHART_NFD_V26 = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
]
CHART_NFD_V25_3 = [
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    *CHART_NFD_V26,
]


def group(name: str, value: str, effect: str, **extra: Any) -> dict[str, Any]:
    taint = {"key": KEY, "effect": effect, **({"value": value} if value else {})}
    return {"name": name, "taints": [taint], **extra}


def plan(name: str, value: str, effect: str):
    return plan_group(GpuNodeGroupSettings.model_validate(group(name, value, effect)))


# --- Pure: each place, each effect, with and without a value --------------------------------------


@pytest.mark.parametrize(("name", "value", "effect", "flag", "toleration", "tag"), CASES, ids=IDS)
def test_the_group_plan_carries_the_taint_to_kubelet_tolerations_and_ca(name, value, effect, flag, toleration, tag):
    p = plan(name, value, effect)
    assert p.taints == (Taint(key=KEY, value=value, effect=effect),)
    assert kubelet_flags_in(p.user_data)[1] == flag
    assert p.tolerations == (toleration,)
    assert p.node_template_tags["k8s.io/cluster-autoscaler/node-template/taint/team.example.com/gpu"] == tag


@pytest.mark.parametrize(("name", "value", "effect", "flag", "toleration", "tag"), CASES, ids=IDS)
def test_the_operator_daemonsets_and_nfd_worker_tolerate_the_taint(name, value, effect, flag, toleration, tag):
    values = gpu_operator_values([plan(name, value, effect)], "v26.7.0")
    assert values["daemonsets"]["tolerations"] == [CHART_DAEMONSET, toleration]
    assert values["node-feature-discovery"]["worker"]["tolerations"] == [*CHART_NFD_V26, toleration]
    older = gpu_operator_values([plan(name, value, effect)], "v25.3.1")
    assert older["node-feature-discovery"]["worker"]["tolerations"] == [*CHART_NFD_V25_3, toleration]


@pytest.mark.parametrize(("name", "value", "effect", "flag", "toleration", "tag"), CASES, ids=IDS)
def test_the_verification_pods_tolerate_the_taint(name, value, effect, flag, toleration, tag):
    p = plan(name, value, effect)
    for spec in (warmup_job_spec(p, IMAGE), concurrent_job_spec(p, IMAGE, IMAGE)):
        assert spec["template"]["spec"]["tolerations"] == [toleration]


@pytest.mark.parametrize(
    ("value", "effect", "added"),
    [
        # The chart's nvidia.com/gpu Exists NoSchedule covers any value of that key with NoSchedule ...
        ("true", "NoSchedule", []),
        ("", "NoSchedule", []),
        # ... and no other effect: those get their own toleration.
        ("true", "PreferNoSchedule", [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
                                       "effect": "PreferNoSchedule"}]),
        ("", "PreferNoSchedule", [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "PreferNoSchedule"}]),
        ("true", "NoExecute", [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoExecute"}]),
        ("", "NoExecute", [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]),
    ],
)  # fmt: skip
def test_the_charts_own_gpu_toleration_covers_only_no_schedule(value: str, effect: str, added: list[dict[str, str]]):
    taint = {"key": "nvidia.com/gpu", "effect": effect, **({"value": value} if value else {})}
    p = plan_group(GpuNodeGroupSettings.model_validate({"name": "g", "taints": [taint]}))
    values = gpu_operator_values([p], "v26.7.0")
    assert values["daemonsets"]["tolerations"] == [CHART_DAEMONSET, *added]
    assert values["node-feature-discovery"]["worker"]["tolerations"] == [*CHART_NFD_V26, *added]


def test_tolerations_are_exact_in_key_value_and_effect():
    taint = Taint(key=KEY, value="ml", effect="NoExecute")
    assert placement.tolerates({"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoExecute"}, taint)
    assert placement.tolerates({"key": KEY, "operator": "Exists", "effect": "NoExecute"}, taint)
    assert placement.tolerates({"key": KEY, "operator": "Exists"}, taint)  # no effect: every effect
    assert placement.tolerates({"key": KEY, "value": "ml"}, taint)  # no operator: Equal ...
    assert not placement.tolerates({"key": KEY, "value": "dl", "effect": "NoExecute"}, taint)  # ... not Exists
    assert not placement.tolerates({"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoSchedule"}, taint)
    assert not placement.tolerates({"key": KEY, "operator": "Equal", "value": "dl", "effect": "NoExecute"}, taint)
    assert not placement.tolerates({"key": KEY, "operator": "Equal", "effect": "NoExecute"}, taint)
    assert not placement.tolerates({"key": "other", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert not placement.tolerates({"key": KEY, "operator": "Lt", "value": "ml", "effect": "NoExecute"}, taint)
    bare = Taint(key=KEY, effect="PreferNoSchedule")
    assert placement.tolerates({"key": KEY, "operator": "Equal", "value": "", "effect": "PreferNoSchedule"}, bare)
    assert not placement.tolerates({"key": KEY, "operator": "Equal", "value": "x", "effect": "PreferNoSchedule"}, bare)


def test_two_effects_of_one_key_get_two_tolerations_in_order():
    taints = [Taint(key=KEY, value="ml", effect="NoSchedule"), Taint(key=KEY, value="ml", effect="NoExecute")]
    assert placement.tolerations_for(taints) == [
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoExecute"},
    ]
    # The same taint twice (two groups) is tolerated once.
    assert placement.tolerations_for([taints[0], taints[0]]) == [
        {"key": KEY, "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    ]


# --- End to end: one cluster with a group per case --------------------------------------------------

JOB = "kubernetes:batch/v1:Job"
TAG = "aws:autoscaling/tag:Tag"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


@pytest.fixture(scope="module")
def cluster() -> Simulation:
    def program() -> None:
        groups = [
            group(name, value, effect, scaling={"minSize": 0, "desiredSize": 0, "maxSize": 1})
            for name, value, effect, *_ in CASES
        ]
        settings = load_settings({"clusterName": "ml", "verification": {"enabled": True}, "gpuNodeGroups": groups})
        gpu = GpuCluster("ml", GpuClusterArgs(settings=settings))
        for key, value in gpu.stack_outputs().items():
            pulumi.export(key, value)

    return run_program(program, {}, project="taints", stack="test", timeout=120)


def test_every_case_reaches_the_cluster_through_every_place(cluster: Simulation):
    release = cluster.one("kubernetes:helm.sh/v3:Release", "ml-gpu-operator-release").inputs["values"]
    tolerations = [case[4] for case in CASES]
    assert release["daemonsets"]["tolerations"] == [CHART_DAEMONSET, *tolerations]
    assert release["node-feature-discovery"]["worker"]["tolerations"] == [*CHART_NFD_V26, *tolerations]
    for name, _value, _effect, flag, toleration, tag in CASES:
        assert cluster.outputs["gpuNodeGroups"][name]["tolerations"] == [toleration]
        for job in (f"ml-verify-{name}-warmup", f"ml-verify-{name}-concurrent"):
            assert cluster.one(JOB, job).inputs["spec"]["template"]["spec"]["tolerations"] == [toleration]
        assert kubelet_flags_in(cluster.one(LT, f"ml-{name}-lt").inputs["userData"])[1] == flag
        taint_tag = cluster.one(TAG, f"ml-{name}-asg-tag-node-template/taint/team.example.com/gpu").inputs["tag"]
        assert (taint_tag["key"], taint_tag["value"]) == (
            "k8s.io/cluster-autoscaler/node-template/taint/team.example.com/gpu",
            tag,
        )
