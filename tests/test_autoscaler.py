"""Cluster Autoscaler (issue 9): the release, its IAM, the ASG tags that let it scale GPU groups
from zero, and CA's template node of each group (tests/support/standins/autoscaler.py, written from
CA's AWS provider) judged against the pods the stack outputs describe.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from components import catalog
from components.autoscaler import iam
from components.autoscaler import values as ca_values
from components.catalog import cluster_autoscaler as ca_chart
from components.catalog.charts import CLUSTER_AUTOSCALER
from components.check.loading import load_settings
from components.check.settings import GpuCapacitySettings, Settings
from components.check.warnings import settings_warnings
from components.config.errors import ConfigError
from components.config.groups import GpuNodeGroupSettings, Taint
from components.plan import asg, userdata
from components.plan.group import plan_group
from components.verification import jobs
from tests.data.ca_instance_types import CA_INSTANCE_TYPES
from tests.support.paths import ROOT
from tests.support.reference import load_reference_yaml, reference_path
from tests.support.rendered import asg_tags_of, nodeconfig_of
from tests.support.simulation import settings_for_stack
from tests.support.standins.autoscaler import fits, pod_from_outputs, template_node
from tests.support.standins.scheduling import node_matches_affinity
from tooling.simulation import Simulation, run_stack

TAG = "aws:autoscaling/tag:Tag"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
LT = "aws:ec2/launchTemplate:LaunchTemplate"


@pytest.fixture(scope="module")
def variants() -> Simulation:
    """A 2-replica group with extra labels and taints and a 4-GPU g4dn.12xlarge group, both from zero."""
    return run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:gpuNodeGroups": [
                {
                    "name": "big",
                    "instanceTypes": ["g4dn.12xlarge"],
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3},
                    "timeSlicing": {"replicas": 3},
                },
                {
                    "name": "shared",
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
                    "labels": {"team.example.com/owner": "ml"},
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                        {"key": "dedicated", "effect": "NoExecute"},
                    ],
                    "timeSlicing": {"replicas": 2},
                },
                {
                    # MPS: CA's template node advertises GPUs x replicas exactly as for time-slicing.
                    "name": "mps",
                    "instanceTypes": ["g4dn.12xlarge"],
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
                    "mps": {"replicas": 4},
                },
            ]
        },
    )


# ---------------------------------------------------------------------------------------------
# ASG tags = NodeConfig (the one source of truth), for every stack and the variants
# ---------------------------------------------------------------------------------------------


def test_dev_asg_tags_literal(dev: Simulation):
    assert asg_tags_of(dev, "t4") == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/gpu-eks-dev": "owned",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/gpu-count": "1",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/node-group": "t4",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/device-plugin.config": "timeslice-x4",
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "true:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "4",
    }


def _assert_template_matches_nodeconfig(sim: Simulation, group: str, instance_type: str, resource: str, slots: int):
    labels, taints = nodeconfig_of(sim, group)
    node = template_node(asg_tags_of(sim, group), instance_type)
    # Every label kubelet registers, with its value, is on CA's template node (and no other
    # label but the ones CA adds itself).
    assert {k: node["labels"][k] for k in labels} == labels
    assert set(node["labels"]) - set(labels) == {"node.kubernetes.io/instance-type"}
    # The user data's taints but the boot stage's pending one, which only a node whose stage did not
    # succeed keeps (plan/boot.py): CA's template is a node that works.
    pending = Taint(key="gpu-eks.io/boot-stage", value="pending", effect="NoSchedule")
    assert taints[-1] == pending
    assert sorted(node["taints"], key=repr) == sorted(taints[:-1], key=repr)
    assert node["capacity"][resource] == slots


def test_asg_tags_equal_the_nodeconfig_in_every_stack(stack_sim):
    stack, sim = stack_sim
    for g in settings_for_stack(stack, ROOT).gpu_node_groups:
        _assert_template_matches_nodeconfig(sim, g.name, g.instance_types[0], "nvidia.com/gpu", 1 * 4)


def test_asg_tags_of_a_12xlarge_and_a_group_with_extra_labels_and_taints(variants: Simulation):
    # g4dn.12xlarge: 4 T4 x 3 replicas.
    _assert_template_matches_nodeconfig(variants, "big", "g4dn.12xlarge", "nvidia.com/gpu", 12)
    _assert_template_matches_nodeconfig(variants, "shared", "g4dn.xlarge", "nvidia.com/gpu", 2)
    _assert_template_matches_nodeconfig(variants, "mps", "g4dn.12xlarge", "nvidia.com/gpu", 16)
    assert asg_tags_of(variants, "mps")["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "16"
    tags = asg_tags_of(variants, "shared")
    assert tags["k8s.io/cluster-autoscaler/node-template/taint/dedicated"] == ":NoExecute"
    assert tags["k8s.io/cluster-autoscaler/node-template/label/team.example.com/owner"] == "ml"
    for group in ("big", "shared"):
        assert (
            asg_tags_of(variants, group)["k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"]
            == "nvidia-tesla-t4"
        )


def test_a_renamed_resource_is_refused_with_the_autoscaler():
    """Every GPU node carries k8s.amazonaws.com/accelerator (a sharing change must not touch the
    launch template), and CA holds a node with that label as "GPU not ready" until it advertises
    nvidia.com/gpu (processors/customresources/gpu_processor.go, cluster-autoscaler-1.35.2): a
    renamed node never does, so CA would count it unready for good."""
    with pytest.raises(ConfigError) as err:
        load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "timeSlicing": {"renameByDefault": True}}]})
    assert [str(p) for p in err.value.problems] == [
        "gpu-eks:gpuNodeGroups[0].timeSlicing.renameByDefault: received true; expected false while the Cluster "
        "Autoscaler is enabled: CA treats a GPU node without allocatable nvidia.com/gpu as not ready (a renamed "
        "node advertises only nvidia.com/gpu.shared)"
    ]
    # Without the autoscaler it is accepted.
    load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [{"name": "g", "timeSlicing": {"renameByDefault": True}}],
        }
    )


def test_the_autoscaler_rules_run_on_settings_built_in_python():
    """The rules are the settings models' own (check/settings.py), not only load_settings': a Settings
    or GpuCapacitySettings built from Python names is refused the same way, every problem at once."""
    renamed = GpuNodeGroupSettings(name="g", time_slicing={"replicas": 2, "rename_by_default": True})
    expected = [
        (
            ("gpuNodeGroups", 0, "timeSlicing", "renameByDefault"),
            "false while the Cluster Autoscaler is enabled: CA treats a GPU node without allocatable nvidia.com/gpu "
            "as not ready (a renamed node advertises only nvidia.com/gpu.shared)",
        )
    ]
    with pytest.raises(ValidationError) as err:
        Settings(cluster_name="c", gpu_node_groups=(renamed,))
    assert [(e["loc"], e["msg"]) for e in _keyed(err.value)] == expected
    with pytest.raises(ValidationError) as err:
        GpuCapacitySettings(kubernetes_version="1.31", gpu_node_groups=(renamed,), autoscaler={"enabled": True})
    assert [(e["loc"], e["msg"]) for e in _keyed(err.value)] == [
        (
            ("kubernetesVersion",),
            "one of 1.32, 1.33, 1.34, 1.35, 1.36 while the Cluster Autoscaler is enabled (its release must match "
            "the cluster's minor), or autoscaler.enabled: false",
        ),
        *expected,
    ]
    # Off (GpuCapacitySettings' default), none of them applies.
    assert GpuCapacitySettings(kubernetes_version="1.31", gpu_node_groups=(renamed,)).plans[0].resource_name == (
        "nvidia.com/gpu.shared"
    )


def _keyed(err: ValidationError) -> list[dict[str, Any]]:
    """The keyed problems a settings model raised (config/errors.py KeyedProblems), as loc and message."""
    return [
        {"loc": loc, "msg": expected}
        for e in err.errors(include_url=False)
        for loc, _received, expected in e["ctx"]["error"].problems
    ]


def test_builder_agrees_with_the_nodeconfig_for_many_groups():
    """asg_tags vs the NodeConfig, without Pulumi, over sizes, renames and extra labels/taints."""
    for size in sorted(catalog.GPU_INSTANCE_TYPES):
        # A vGPU slice cannot be shared (catalog.instances): one pod per slice.
        replicas = 1 if catalog.GPU_INSTANCE_TYPES[size].gpu_fraction else 5
        for rename in (False, True) if replicas > 1 else (False,):
            g = load_settings(
                {
                    "clusterName": "c",
                    # The builder is pure; the settings refuse a renamed group with CA enabled.
                    "autoscaler": {"enabled": not rename},
                    "gpuNodeGroups": [
                        {
                            "name": "g",
                            "instanceTypes": [size],
                            "labels": {"a.example.com/b": "c"},
                            "taints": [{"key": "x", "value": "y", "effect": "PreferNoSchedule"}],
                            "timeSlicing": {"replicas": replicas, "renameByDefault": rename}
                            if replicas > 1
                            else {"replicas": 1},
                        }
                    ],
                }
            ).gpu_node_groups[0]
            plan = plan_group(g)
            flags = userdata.gpu_node_config(plan.node_labels, plan.taints)["spec"]["kubelet"]["flags"]
            labels = dict(kv.split("=", 1) for kv in flags[0].removeprefix("--node-labels=").split(","))
            node = template_node(asg.asg_tags(plan.node_template_tags, "c"), size)
            assert {k: node["labels"][k] for k in labels} == labels
            assert flags[1] == "--register-with-taints=x=y:PreferNoSchedule"
            assert node["taints"] == [Taint(key="x", value="y", effect="PreferNoSchedule")]
            resource = "nvidia.com/gpu.shared" if rename else "nvidia.com/gpu"
            assert node["capacity"][resource] == catalog.GPU_INSTANCE_TYPES[size].gpus * replicas


def test_the_ca_instance_list_covers_the_catalog():
    assert set(CA_INSTANCE_TYPES) == set(catalog.GPU_INSTANCE_TYPES)
    assert CA_INSTANCE_TYPES["g6f.large"] == (2, 8192, 0)


# ---------------------------------------------------------------------------------------------
# Groups of several sizes: CA's template is the first type (aws_wrapper.go instanceTypesOverrides[0])
# ---------------------------------------------------------------------------------------------

CPU_TAG = "k8s.io/cluster-autoscaler/node-template/resources/cpu"
MEMORY_TAG = "k8s.io/cluster-autoscaler/node-template/resources/memory"


def _one_group(types: list[str], autoscaler: bool = True):
    return load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": autoscaler},
            "gpuNodeGroups": [{"name": "g", "instanceTypes": types, "timeSlicing": {"replicas": 2}}],
        }
    )


def test_a_larger_first_type_is_tagged_down_to_the_smallest():
    """g6.2xlarge first: without tags CA's template from zero has 8 vCPUs and 32 GiB, and a pod
    that only g6.2xlarge can run makes CA add a node EC2 may fill with a g6.xlarge."""
    plan = _one_group(["g6.2xlarge", "g6.xlarge"]).plans[0]
    tags = dict(plan.node_template_tags)
    assert (tags[CPU_TAG], tags[MEMORY_TAG]) == ("4", "16384Mi")
    node = template_node(asg.asg_tags(tags, "c"), "g6.2xlarge")
    assert (node["capacity"]["cpu"], node["capacity"]["memory"]) == (4, 16384 * 2**20)
    pod = {"nodeSelector": dict(plan.node_labels), "tolerations": list(plan.tolerations), "requests": {}}
    big = {**pod, "requests": {"nvidia.com/gpu": 1, "cpu": 6}}
    small = {**pod, "requests": {"nvidia.com/gpu": 1, "cpu": 4, "memory": 16384 * 2**20}}
    assert not fits(big, node) and fits(small, node)
    untagged = template_node({k: v for k, v in tags.items() if k not in (CPU_TAG, MEMORY_TAG)}, "g6.2xlarge")
    assert fits(big, untagged)  # what CA would have believed


def test_memory_alone_differing_tags_both():
    tags = _one_group(["gr6.4xlarge", "g6.4xlarge"]).plans[0].node_template_tags  # 16 vCPUs, 128 and 64 GiB
    assert (tags[CPU_TAG], tags[MEMORY_TAG]) == ("16", "65536Mi")


@pytest.mark.parametrize(
    "types",
    [
        ["g6.xlarge", "g6.2xlarge"],  # the smallest first: CA's template is already the smallest
        ["g4dn.xlarge", "g4dn.2xlarge"],  # prod
        ["g6.xlarge", "gr6.4xlarge"],
        ["p5e.48xlarge", "p5en.48xlarge"],  # the same size
        ["g4dn.xlarge"],
    ],
)
def test_no_size_tags_and_no_warning_when_the_first_type_is_the_smallest(types):
    settings = _one_group(types)
    assert not {CPU_TAG, MEMORY_TAG} & set(settings.plans[0].node_template_tags)
    assert [w for w in settings_warnings(settings) if w.key.endswith("instanceTypes")] == []


def test_a_larger_first_type_warns_while_the_autoscaler_is_on():
    (line,) = [str(w) for w in settings_warnings(_one_group(["g6.2xlarge", "g6.xlarge"])) if "instanceTypes" in w.key]
    assert line == (
        'gpu-eks:gpuNodeGroups[0].instanceTypes: received ["g6.2xlarge", "g6.xlarge"]; expected the smallest type '
        "first, or one size per group, while the Cluster Autoscaler is enabled (its AWS README, 'Using Mixed "
        "Instances Policies and Spot Instances': the same CPU and RAM), got g6.2xlarge=8 vCPUs 32768 MiB, "
        "g6.xlarge=4 vCPUs 16384 MiB: CA builds the group's template node from the first type, which the ASG tags "
        "size down to 4 vCPUs and 16384 MiB (EC2 may launch the smallest), so from zero nodes a pod that fits only "
        "a larger size never scales the group up"
    )
    off = _one_group(["g6.2xlarge", "g6.xlarge"], autoscaler=False)
    assert [w for w in settings_warnings(off) if w.key.endswith("instanceTypes")] == []


# ---------------------------------------------------------------------------------------------
# Template-node scheduling: what CA decides for a pending pod
# ---------------------------------------------------------------------------------------------


def test_a_pod_built_from_the_outputs_fits_the_template_node(dev: Simulation):
    out = dev.outputs["gpuNodeGroups"]["t4"]
    node = template_node(asg_tags_of(dev, "t4"), "g4dn.xlarge")
    assert fits(pod_from_outputs(out), node)
    assert fits(pod_from_outputs(out, slots=4), node)  # 4 pods x 1 slot also fit, one at a time
    assert not fits(pod_from_outputs(out, tolerate=False), node)
    assert not fits(pod_from_outputs(out, slots=5), node)


def test_scheduling_on_the_variants(variants: Simulation):
    for group, instance_type, slots in (
        ("big", "g4dn.12xlarge", 12),
        ("shared", "g4dn.xlarge", 2),
        ("mps", "g4dn.12xlarge", 16),
    ):
        out = variants.outputs["gpuNodeGroups"][group]
        node = template_node(asg_tags_of(variants, group), instance_type)
        assert fits(pod_from_outputs(out), node)
        assert fits(pod_from_outputs(out, slots=slots), node)
        assert not fits(pod_from_outputs(out, slots=slots + 1), node)
        assert not fits(pod_from_outputs(out, tolerate=False), node)


def test_without_tags_ca_would_not_scale_up_for_our_pods(dev: Simulation):
    """Why the tags exist: a template from the instance type alone lacks the labels."""
    out = dev.outputs["gpuNodeGroups"]["t4"]
    assert not fits(pod_from_outputs(out), template_node({}, "g4dn.xlarge"))


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------


def test_slot_and_asg_outputs(dev: Simulation, prod: Simulation, variants: Simulation):
    d = dev.outputs["gpuNodeGroups"]["t4"]
    assert (d["sharedSlotsPerNode"], d["sharedSlotsAtMaxSize"]) == (4, 4)
    assert d["autoscalingGroupName"] == "eks-gpu-eks-t4-00000000-0000-0000-0000-000000000000"
    p = prod.outputs["gpuNodeGroups"]["t4"]
    assert (p["sharedSlotsPerNode"], p["sharedSlotsAtMaxSize"]) == (4, 24)  # 6 nodes
    big = variants.outputs["gpuNodeGroups"]["big"]
    assert (big["sharedSlotsPerNode"], big["sharedSlotsAtMaxSize"], big["resourceName"]) == (12, 36, "nvidia.com/gpu")
    shared = variants.outputs["gpuNodeGroups"]["shared"]
    assert (shared["sharedSlotsPerNode"], shared["resourceName"]) == (2, "nvidia.com/gpu")
    mps = variants.outputs["gpuNodeGroups"]["mps"]
    assert (mps["sharingMode"], mps["sharedSlotsPerNode"], mps["sharedSlotsAtMaxSize"], mps["memoryPerSlotGiB"]) == (
        "mps",
        16,
        32,
        3.75,
    )
    assert (big["sharingMode"], big["memoryPerSlotGiB"]) == ("timeSlicing", 5.0)  # 15,360 MiB / 3


# ---------------------------------------------------------------------------------------------
# The release and its values, against the reference chart
# ---------------------------------------------------------------------------------------------


def test_image_tags_match_the_reference_table():
    text = reference_path("cluster-autoscaler", "SOURCE.md").read_text()
    rows = dict(re.findall(r"^\| (1\.\d+) \| (v1\.\d+\.\d+) \| cluster-autoscaler-", text, flags=re.M))
    assert rows == ca_chart.AUTOSCALER_IMAGE_TAGS
    assert rows["1.35"] == "v1.35.2"


def test_chart_versions_exist_in_the_chart_repository():
    index = load_reference_yaml("cluster-autoscaler", "gh-pages-index.yaml")
    published = {e["version"] for e in index["entries"]["cluster-autoscaler"]}
    assert set(CLUSTER_AUTOSCALER.versions) <= published
    for version in CLUSTER_AUTOSCALER.versions:
        chart = load_reference_yaml("cluster-autoscaler", version, "Chart.yaml")
        assert (chart["name"], chart["version"]) == ("cluster-autoscaler", version)
    assert (CLUSTER_AUTOSCALER.repository, CLUSTER_AUTOSCALER.chart, CLUSTER_AUTOSCALER.default) == (
        "https://kubernetes.github.io/autoscaler",
        "cluster-autoscaler",
        "9.59.0",
    )


def _check_paths(ours: Any, theirs: Any, path: str, problems: list[str]) -> None:
    if isinstance(theirs, dict) and theirs and isinstance(ours, dict):
        for key, value in ours.items():
            if key not in theirs:
                problems.append(f"{path}.{key}: not in the chart's values.yaml")
            else:
                _check_paths(value, theirs[key], f"{path}.{key}", problems)
    elif theirs is None:  # e.g. autoDiscovery.clusterName: documented, no default
        if not isinstance(ours, str):
            problems.append(f"{path}: expected a string")
    elif type(ours) is not type(theirs):
        problems.append(f"{path}: {type(ours).__name__} where the chart has {type(theirs).__name__}")


@pytest.mark.parametrize("version", CLUSTER_AUTOSCALER.versions)
def test_values_paths_exist_in_the_chart_values(version):
    reference = load_reference_yaml("cluster-autoscaler", version, "values.yaml")
    s = load_settings({"clusterName": "c"})
    values = ca_values.autoscaler_values(
        s.autoscaler, cluster_name="c", kubernetes_version="1.35", region="us-west-2", role_arn="arn"
    )
    problems: list[str] = []
    extra_args = values.pop("extraArgs")
    _check_paths(values, reference, "", problems)
    assert problems == []
    # extraArgs is free-form; every flag we set is one the chart documents (commented example), or
    # one of CA's flags it does not show: kubernetes/autoscaler config/flags/flags.go declares
    # multiStringFlag("startup-taint", ...) and multiStringFlag("status-taint", ...) at every image
    # tag of catalog/cluster_autoscaler.py (1.32.7, 1.33.6, 1.34.5, 1.35.2, 1.36.1).
    text = reference_path("cluster-autoscaler", version, "values.yaml").read_text()
    not_in_the_chart = {"startup-taint", "status-taint"}
    assert not_in_the_chart <= set(extra_args)
    for flag in set(extra_args) - not_in_the_chart:
        assert re.search(rf"^  # {re.escape(flag)}: ", text, flags=re.M), flag
    for flag in not_in_the_chart:
        assert flag not in text, flag
    # The chart's own discovery tags are exactly ours (its template runs them through tpl).
    assert reference["autoDiscovery"]["tags"] == [
        "k8s.io/cluster-autoscaler/enabled",
        "k8s.io/cluster-autoscaler/{{ .Values.autoDiscovery.clusterName }}",
    ]
    assert reference["cloudProvider"] == "aws"


def test_release_in_each_stack(stack_sim):
    stack, sim = stack_sim
    s = settings_for_stack(stack, ROOT)
    rel = sim.one(RELEASE, "gpu-eks-autoscaler-release")
    i = rel.inputs
    assert (i["chart"], i["version"], i["repositoryOpts"]) == (
        "cluster-autoscaler",
        "9.59.0",
        {"repo": "https://kubernetes.github.io/autoscaler"},
    )
    assert (i["name"], i["namespace"], i["atomic"]) == ("cluster-autoscaler", "kube-system", True)
    v = i["values"]
    assert v["image"] == {"tag": "v1.35.2"}
    assert v["awsRegion"] == "us-west-2"
    assert v["autoDiscovery"] == {
        "clusterName": f"gpu-eks-{stack}",
        "tags": ["k8s.io/cluster-autoscaler/enabled", f"k8s.io/cluster-autoscaler/gpu-eks-{stack}"],
    }
    role = sim.one("aws:iam/role:Role", "gpu-eks-autoscaler-role")
    assert v["rbac"]["serviceAccount"] == {
        "create": True,
        "name": "cluster-autoscaler",
        "annotations": {"eks.amazonaws.com/role-arn": role.outputs["arn"]},
    }
    assert v["extraArgs"] == {
        "scale-down-unneeded-time": s.autoscaler.scale_down_unneeded_time,
        "expander": "least-waste",
        "balance-similar-node-groups": True,
        "skip-nodes-with-local-storage": False,
        "startup-taint": "gpu-eks.io/boot-stage",
        "status-taint": "gpu-eks.io/boot-stage-failed",
    }
    # Never on a GPU node (of this library, Karpenter or Auto Mode); fine on the system nodes.
    system = {"kubernetes.io/os": "linux", "eks.amazonaws.com/nodegroup": "system"}
    assert node_matches_affinity(system, v["affinity"])
    for g in s.gpu_node_groups:
        assert not node_matches_affinity({**system, **plan_group(g).node_labels}, v["affinity"])
    assert not node_matches_affinity({"karpenter.k8s.aws/instance-gpu-count": "1"}, v["affinity"])
    # It waits for the untainted system node group and for its IAM policy.
    assert sim.one("aws:eks/nodeGroup:NodeGroup", "gpu-eks-cluster-system").urn in rel.dependencies
    assert sim.one("aws:iam/rolePolicy:RolePolicy", "gpu-eks-autoscaler-policy").urn in rel.dependencies
    assert sim.named("gpu-eks-autoscaler").type == "gpu-eks:autoscaler:ClusterAutoscaler"


def test_image_tag_follows_the_kubernetes_minor():
    sim = run_stack("dev", ROOT, config_overrides={"gpu-eks:kubernetesVersion": "1.33"})
    assert sim.one(RELEASE, "gpu-eks-autoscaler-release").inputs["values"]["image"] == {"tag": "v1.33.6"}


# ---------------------------------------------------------------------------------------------
# IAM: IRSA, least privilege
# ---------------------------------------------------------------------------------------------


def test_trust_policy_admits_only_the_autoscaler_service_account(dev: Simulation):
    doc = json.loads(dev.one("aws:iam/role:Role", "gpu-eks-autoscaler-role").inputs["assumeRolePolicy"])
    (stmt,) = doc["Statement"]
    issuer = "oidc.eks.us-west-2.amazonaws.com/id/" + "0" * 32
    assert stmt["Principal"] == {"Federated": f"arn:aws:iam::123456789012:oidc-provider/{issuer}"}
    assert stmt["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert stmt["Condition"] == {
        "StringEquals": {
            f"{issuer}:sub": "system:serviceaccount:kube-system:cluster-autoscaler",
            f"{issuer}:aud": "sts.amazonaws.com",
        }
    }


def test_policy_scopes_mutations_to_this_clusters_asgs(stack_sim):
    stack, sim = stack_sim
    doc = json.loads(sim.one("aws:iam/rolePolicy:RolePolicy", "gpu-eks-autoscaler-policy").inputs["policy"])
    by_sid = {s["Sid"]: s for s in doc["Statement"]}
    assert set(by_sid) == {"Read", "DescribeNodegroups", "ScaleThisClustersGroups"}
    # The read actions of CA's AWS README ("Full Cluster Autoscaler Features Policy").
    assert sorted(by_sid["Read"]["Action"]) == [
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations",
        "autoscaling:DescribeScalingActivities",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements",
    ]
    assert by_sid["DescribeNodegroups"] == {
        "Sid": "DescribeNodegroups",
        "Effect": "Allow",
        "Action": "eks:DescribeNodegroup",
        "Resource": f"arn:aws:eks:us-west-2:123456789012:nodegroup/gpu-eks-{stack}/*/*",
    }
    assert by_sid["ScaleThisClustersGroups"] == {
        "Sid": "ScaleThisClustersGroups",
        "Effect": "Allow",
        "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
        "Resource": "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:*:autoScalingGroupName/*",
        "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/gpu-eks-{stack}": "owned"}},
    }
    # The condition's tag is one every GPU group's ASG carries.
    for g in settings_for_stack(stack, ROOT).gpu_node_groups:
        assert asg_tags_of(sim, g.name)[f"k8s.io/cluster-autoscaler/gpu-eks-{stack}"] == "owned"
    # No other statement grants anything that changes a group.
    for stmt in doc["Statement"]:
        actions = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
        if any(not a.split(":")[1].startswith(("Describe", "GetInstanceTypes")) for a in actions):
            assert "Condition" in stmt


def test_policy_arns_follow_the_partition():
    doc = json.loads(iam.autoscaler_policy("c", "aws-cn", "cn-north-1", "210987654321"))
    resources = [s["Resource"] for s in doc["Statement"]]
    assert resources[1:] == [
        "arn:aws-cn:eks:cn-north-1:210987654321:nodegroup/c/*/*",
        "arn:aws-cn:autoscaling:cn-north-1:210987654321:autoScalingGroup:*:autoScalingGroupName/*",
    ]


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------


def _problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def test_enabled_defaults_to_groups_that_can_change_size():
    assert load_settings({"clusterName": "c"}).autoscaler_enabled is True  # default group 1..2
    fixed = {"gpuNodeGroups": [{"name": "g", "scaling": {"minSize": 2, "desiredSize": 2, "maxSize": 2}}]}
    assert load_settings({"clusterName": "c", **fixed}).autoscaler_enabled is False
    assert load_settings({"clusterName": "c", **fixed, "autoscaler": {"enabled": True}}).autoscaler_enabled is True
    assert settings_for_stack("dev", ROOT).autoscaler_enabled and settings_for_stack("prod", ROOT).autoscaler_enabled


def test_autoscaler_config_errors():
    assert _problems({"autoscaler": {"chartVersion": "9.58.0", "scaleDownUnneededTime": "10 minutes"}}) == [
        'gpu-eks:autoscaler.chartVersion: received "9.58.0"; expected one of 9.59.0 (the cluster-autoscaler '
        "chart versions this library is validated against), or set allowUnvalidatedChartVersion: true",
        'gpu-eks:autoscaler.scaleDownUnneededTime: received "10 minutes"; expected a Go duration such as 10m, '
        "1h30m or 1.5h (a number and a unit, ns us ms s m h, repeated; Go's time.ParseDuration refuses anything "
        "else)",
    ]
    assert _problems({"autoscaler": {"scaleDownUnneededTime": "30s"}})[0].startswith(
        'gpu-eks:autoscaler.scaleDownUnneededTime: received "30s"'
    )
    ok = load_settings(
        {"clusterName": "c", "autoscaler": {"chartVersion": "9.60.1", "allowUnvalidatedChartVersion": True}}
    )
    assert ok.autoscaler.chart_version == "9.60.1"
    assert load_settings({"clusterName": "c", "autoscaler": {"scaleDownUnneededTime": "1h30m"}})


def test_one_taint_per_key_while_autoscaling():
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]
    (problem,) = _problems({"gpuNodeGroups": [{"name": "g", "taints": taints}]})
    assert problem.startswith("gpu-eks:gpuNodeGroups[0].taints: received [")
    assert "one taint per key while the Cluster Autoscaler is enabled (repeated: ['a'])" in problem
    # Without the autoscaler, kubelet's rule (unique key + effect) is all that applies.
    assert load_settings(
        {"clusterName": "c", "autoscaler": {"enabled": False}, "gpuNodeGroups": [{"name": "g", "taints": taints}]}
    )


def test_kubernetes_version_needs_an_autoscaler_release():
    (problem,) = _problems({"kubernetesVersion": "1.31"})
    assert problem == (
        'gpu-eks:kubernetesVersion: received "1.31"; expected one of 1.32, 1.33, 1.34, 1.35, 1.36 while the '
        "Cluster Autoscaler is enabled (its release must match the cluster's minor), or autoscaler.enabled: false"
    )


def test_accelerator_label_is_reserved():
    (problem,) = _problems({"gpuNodeGroups": [{"name": "g", "labels": {"k8s.amazonaws.com/accelerator": "x"}}]})
    assert problem.startswith('gpu-eks:gpuNodeGroups[0].labels: received {"k8s.amazonaws.com/accelerator": "x"}')


def test_warning_when_nothing_scales_a_resizable_group():
    s = load_settings({"clusterName": "c", "autoscaler": {"enabled": False}})
    assert [str(w) for w in settings_warnings(s)] == [
        'gpu-eks:gpuNodeGroups[0].scaling: received {"desiredSize": 1, "maxSize": 2, "minSize": 1}; expected '
        "autoscaler.enabled: true, or minSize = desiredSize = maxSize > 0: with the Cluster Autoscaler disabled "
        "nothing resizes the group after creation"
    ]


def test_disabled_autoscaler_declares_no_release_and_no_tags():
    sim = run_stack("prod", ROOT, config_overrides={"gpu-eks:autoscaler": {"enabled": False}})
    assert sim.by_type("gpu-eks:autoscaler:ClusterAutoscaler") == []
    assert sim.by_type(TAG) == []
    assert [r.name for r in sim.by_type(RELEASE)] == ["gpu-eks-gpu-operator-release"]


# ---------------------------------------------------------------------------------------------
# Verification: concurrent use of one GPU, then the capacity is released
# ---------------------------------------------------------------------------------------------


def test_concurrency_cannot_be_faked_by_sequential_pods():
    # Concurrent: every pod holds its slot HOLD seconds and all start within the allowance.
    assert jobs.CONCURRENT_DEADLINE_SECONDS == 180 + 120 == 300
    # With one slot fewer than pods, some pod starts only after another's HOLD: >= 2 x HOLD.
    assert jobs.CONCURRENT_DEADLINE_SECONDS < 2 * jobs.HOLD_SECONDS
    assert jobs.START_ALLOWANCE_SECONDS < jobs.HOLD_SECONDS


def test_verification_jobs_in_dev(dev: Simulation):
    warm = dev.one(JOB, "gpu-eks-verify-t4-warmup")
    check = dev.one(JOB, "gpu-eks-verify-t4-concurrent")
    w, c = warm.inputs["spec"], check.inputs["spec"]
    assert (w["parallelism"], w["completions"], w["activeDeadlineSeconds"], w["backoffLimit"]) == (1, 1, 1200, 0)
    assert (c["parallelism"], c["completions"], c["activeDeadlineSeconds"], c["backoffLimit"]) == (4, 4, 300, 0)
    assert warm.inputs["metadata"]["annotations"] == {"pulumi.com/timeoutSeconds": "1260"}
    assert check.inputs["metadata"]["annotations"] == {"pulumi.com/timeoutSeconds": "360"}
    for spec in (w, c):
        tmpl = spec["template"]
        assert tmpl["metadata"]["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
        pod = tmpl["spec"]
        assert pod["restartPolicy"] == "Never"
        assert pod["nodeSelector"] == dev.outputs["gpuNodeGroups"]["t4"]["nodeSelector"]
        assert pod["tolerations"] == dev.outputs["gpuNodeGroups"]["t4"]["tolerations"]
        assert pod["containers"][0]["resources"] == {
            "requests": {"cpu": "10m", "memory": "128Mi"},
            "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
        }
    # Packed on one node; each pod holds its slot for 180 s.
    assert c["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "timeslicing-check-t4"}},
            "topologyKey": "kubernetes.io/hostname",
        }
    ]
    assert c["template"]["metadata"]["labels"] == {"app.kubernetes.io/name": "timeslicing-check-t4"}
    assert "+ 180 ))" in c["template"]["spec"]["containers"][0]["args"][0]
    # Order: the concurrent Job after the warm-up; the warm-up (via the namespace) after the
    # operator, the ASG tags and the autoscaler, since it is what brings the first node.
    assert warm.urn in check.dependencies
    ns = dev.one("kubernetes:core/v1:Namespace", "gpu-eks-verify-ns")
    assert ns.urn in warm.dependencies
    assert dev.one(RELEASE, "gpu-eks-autoscaler-release").urn in ns.dependencies
    assert dev.one(TAG, "gpu-eks-t4-asg-tag-node-template/resources/nvidia.com/gpu").urn in ns.dependencies


def test_job_names_change_with_what_is_verified():
    def name(**ts: Any) -> str:
        g = plan_group(
            load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "timeSlicing": ts}]}).gpu_node_groups[0]
        )
        return jobs.job_name("ts-check", g, jobs.concurrent_job_spec(g, "img", "probe"))

    assert name(replicas=4) == name(replicas=4)
    assert re.fullmatch(r"ts-check-g-[0-9a-f]{8}", name(replicas=4))
    assert len({name(replicas=4), name(replicas=3), name(replicas=4, failRequestsGreaterThanOne=False)}) == 3
    g = plan_group(load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "x" * 40}]}).gpu_node_groups[0])
    assert len(jobs.job_name("ts-warmup", g, jobs.warmup_job_spec(g, "img"))) == 59  # <= 63


def test_group_at_zero_without_autoscaler_is_not_verified():
    sim = run_stack(
        "dev",
        ROOT,
        config_overrides={
            "gpu-eks:autoscaler": {"enabled": False},
            "gpu-eks:gpuNodeGroups": [{"name": "t4", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}],
        },
    )
    assert sim.by_type(JOB) == []


def test_asg_tag_quota():
    labels = {f"l{i}.example.com/k": "v" for i in range(40)}
    # 40 labels + 4 library labels + 1 taint + 2 discovery + 1 resources + 3 of EKS = 51 > 50.
    (problem,) = _problems({"gpuNodeGroups": [{"name": "g", "labels": labels}]})
    assert problem.endswith(
        "expected fewer labels and taints: the group's ASG would need 51 tags (the Cluster Autoscaler's "
        "template tags plus EKS's own), EC2 Auto Scaling allows 50"
    )
    del labels["l0.example.com/k"]
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "labels": labels}]})


# An ASG tag key is at most 128 characters (botocore 1.44.5 autoscaling 2011-01-01 TagKey, max 128);
# CA's template tags are k8s.io/cluster-autoscaler/node-template/label/<key> (46 + key) and
# .../taint/<key> (46 + key): 82 characters of key at most.
KEY_82 = "ml-team.example.io/" + "k" * 63  # 19 + 63 = 82
KEY_83 = "ml-teams.example.io/" + "k" * 63  # 20 + 63 = 83, still a valid Kubernetes key


def test_label_and_taint_keys_of_82_characters_fit_an_asg_tag_key():
    assert (len(KEY_82), len(asg.LABEL_TAG_PREFIX + KEY_82), len(asg.TAINT_TAG_PREFIX + KEY_82)) == (82, 128, 128)
    taints = [{"key": KEY_82, "value": "x", "effect": "NoSchedule"}]
    s = load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "g", "labels": {KEY_82: "v"}, "taints": taints}]})
    assert s.autoscaler_enabled and list(s.gpu_node_groups[0].labels) == [KEY_82]


def test_label_and_taint_keys_over_82_characters_are_refused_with_the_autoscaler():
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": KEY_83, "value": "x", "effect": "NoSchedule"}]
    group = {"name": "g", "labels": {KEY_83: "v"}, "taints": taints}
    assert _problems({"gpuNodeGroups": [group]}) == [
        f'gpu-eks:gpuNodeGroups[0].labels.{KEY_83}: received "{KEY_83}"; expected a label key of at most 82 '
        "characters while the Cluster Autoscaler is enabled: its ASG tag "
        "k8s.io/cluster-autoscaler/node-template/label/<key> may have at most 128 (EC2 Auto Scaling TagKey)",
        f'gpu-eks:gpuNodeGroups[0].taints[1].key: received "{KEY_83}"; expected a taint key of at most 82 '
        "characters while the Cluster Autoscaler is enabled: its ASG tag "
        "k8s.io/cluster-autoscaler/node-template/taint/<key> may have at most 128 (EC2 Auto Scaling TagKey)",
    ]
    # Without the autoscaler no ASG tag is written: Kubernetes' own rule is all that applies.
    assert load_settings({"clusterName": "c", "autoscaler": {"enabled": False}, "gpuNodeGroups": [group]})
