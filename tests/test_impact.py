"""components.review.impact: the change-impact summary. Every rule of the table with a change that triggers it
and one that does not (hand-written renders), the consequences across resources (a launch template
version rolls its node groups), and the summary of real stack changes rendered from copies of the
project (the issue's list: replicas, instance type, taint, chart version, Kubernetes version, tag)."""

from __future__ import annotations

import copy
import fnmatch
from pathlib import Path
from typing import Any

import pytest

from components.review import impact
from components.review import values as render_values
from tests.support.copies import copy_project
from tests.support.documents import doc, item
from tests.support.paths import ROOT
from tests.support.tokens import LAUNCH_TEMPLATE, NODE_GROUP, NODECLASS, NODEOVERLAY, NODEPOOL, RELEASE
from tooling import render


def set_path(inputs: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(inputs)
    node = out
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return out


def one(typ: str, path: str, before: Any, after: Any, base: dict[str, Any] | None = None) -> impact.ResourceImpact:
    """The impact of changing one input of one resource."""
    inputs = base or {}
    old = doc(item(typ, "r", set_path(inputs, path, before)))
    new = doc(item(typ, "r", set_path(inputs, path, after)))
    summary = impact.summarize("dev", old, new)
    (changed,) = summary.resources
    return changed


GPU_OPERATOR = {"chart": "gpu-operator", "name": "gpu-operator", "namespace": "gpu-operator"}
AUTOSCALER = {"chart": "cluster-autoscaler", "name": "cluster-autoscaler", "namespace": "kube-system"}

# (type, input path, old, new, expected action, expected effects). Sources: the RULES table's.
CASES: list[tuple[str, str, Any, Any, str, list[str], dict[str, Any] | None]] = [
    # aws_eks_node_group: ForceNew arguments replace the node group ...
    (NODE_GROUP, "amiType", "AL2023_x86_64_NVIDIA", "AL2023_x86_64_STANDARD", "replace", [], None),
    (NODE_GROUP, "capacityType", "SPOT", "ON_DEMAND", "replace", [], None),
    (NODE_GROUP, "clusterName", "a", "b", "replace", [], None),
    (NODE_GROUP, "diskSize", 20, 50, "replace", [], None),
    (NODE_GROUP, "instanceTypes", ["g4dn.xlarge"], ["g4dn.2xlarge"], "replace", [], None),
    (NODE_GROUP, "launchTemplate.id", "lt-1", "lt-2", "replace", [], None),
    (NODE_GROUP, "launchTemplate.name", "a", "b", "replace", [], None),
    (NODE_GROUP, "nodeGroupName", "a", "b", "replace", [], None),
    (NODE_GROUP, "nodeGroupNamePrefix", "a", "b", "replace", [], None),
    (NODE_GROUP, "nodeRoleArn", "arn:a", "arn:b", "replace", [], None),
    (NODE_GROUP, "remoteAccess.ec2SshKey", "a", "b", "replace", [], None),
    (NODE_GROUP, "subnetIds", ["s-1"], ["s-1", "s-2"], "replace", [], None),
    # ... a version update rolls its nodes in place ...
    (NODE_GROUP, "launchTemplate.version", "1", "2", "update", ["roll-nodes"], None),
    (NODE_GROUP, "version", "1.35", "1.36", "update", ["roll-nodes"], None),
    (NODE_GROUP, "releaseVersion", "1.35.0-20260101", "1.35.0-20260201", "update", ["roll-nodes"], None),
    # ... and these change nothing on the nodes.
    (NODE_GROUP, "scalingConfig.maxSize", 1, 3, "update", [], None),
    (NODE_GROUP, "tags.team", "a", "b", "update", [], None),
    (NODE_GROUP, "labels.x", "a", "b", "update", [], None),
    (NODE_GROUP, "updateConfig.maxUnavailable", 1, 2, "update", [], None),
    # aws_launch_template: name is ForceNew; the provider's updateKeys make a new version; tags do not.
    (LAUNCH_TEMPLATE, "name", "a", "b", "replace", [], None),
    (LAUNCH_TEMPLATE, "namePrefix", "a", "b", "replace", [], None),
    (LAUNCH_TEMPLATE, "userData", "QQ==", "Qg==", "update", ["new-launch-template-version"], None),
    (
        LAUNCH_TEMPLATE,
        "tagSpecifications",
        [],
        [{"resourceType": "instance"}],
        "update",
        ["new-launch-template-version"],
        None,
    ),
    (
        LAUNCH_TEMPLATE,
        "metadataOptions.httpTokens",
        "optional",
        "required",
        "update",
        ["new-launch-template-version"],
        None,
    ),
    (
        LAUNCH_TEMPLATE,
        "blockDeviceMappings",
        [],
        [{"deviceName": "/dev/xvda"}],
        "update",
        ["new-launch-template-version"],
        None,
    ),
    (LAUNCH_TEMPLATE, "description", "a", "b", "update", ["new-launch-template-version"], None),
    (LAUNCH_TEMPLATE, "tags.team", "a", "b", "update", [], None),
    # aws_autoscaling_group_tag: group and key ForceNew, value in place.
    ("aws:autoscaling/tag:Tag", "autoscalingGroupName", "asg-a", "asg-b", "replace", [], None),
    ("aws:autoscaling/tag:Tag", "tag.key", "k8s.io/a", "k8s.io/b", "replace", [], None),
    ("aws:autoscaling/tag:Tag", "tag.value", "1", "2", "update", [], None),
    ("aws:autoscaling/tag:Tag", "tag.propagateAtLaunch", False, True, "update", [], None),
    # aws_iam_role
    ("aws:iam/role:Role", "name", "a", "b", "replace", [], None),
    ("aws:iam/role:Role", "namePrefix", "a", "b", "replace", [], None),
    ("aws:iam/role:Role", "path", "/", "/x/", "replace", [], None),
    ("aws:iam/role:Role", "assumeRolePolicy", "{}", '{"a": 1}', "update", [], None),
    # aws_eks_addon
    ("aws:eks/addon:Addon", "addonName", "coredns", "kube-proxy", "replace", [], None),
    ("aws:eks/addon:Addon", "clusterName", "a", "b", "replace", [], None),
    ("aws:eks/addon:Addon", "addonVersion", "v1.11.1-eksbuild.1", "v1.11.3-eksbuild.2", "update", [], None),
    # EKS clusters: pulumi-eks's component and aws_eks_cluster
    ("eks:index:Cluster", "name", "a", "b", "replace", [], None),
    ("eks:index:Cluster", "version", "1.35", "1.36", "update", ["upgrade-control-plane"], None),
    ("eks:index:Cluster", "publicAccessCidrs", ["1.2.3.0/24"], ["1.2.4.0/24"], "update", [], None),
    ("aws:eks/cluster:Cluster", "name", "a", "b", "replace", [], None),
    ("aws:eks/cluster:Cluster", "roleArn", "arn:a", "arn:b", "replace", [], None),
    ("aws:eks/cluster:Cluster", "version", "1.35", "1.36", "update", ["upgrade-control-plane"], None),
    # Kubernetes objects (pulumi-kubernetes forcenew.go)
    ("kubernetes:core/v1:Namespace", "metadata.name", "a", "b", "replace", [], None),
    ("kubernetes:core/v1:ConfigMap", "metadata.namespace", "a", "b", "replace", [], None),
    ("kubernetes:core/v1:Namespace", "metadata.labels.x", "a", "b", "update", [], None),
    ("kubernetes:apps/v1:Deployment", "spec.selector.matchLabels.app", "a", "b", "replace", [], None),
    ("kubernetes:apps/v1:Deployment", "spec.template.spec.image", "a", "b", "update", ["roll-pods"], None),
    ("kubernetes:apps/v1:Deployment", "spec.replicas", 1, 4, "update", [], None),
    # Helm releases (pulumi-kubernetes helm_release.go), and what the gpu-operator does with values
    (RELEASE, "name", "a", "b", "replace", [], None),
    (RELEASE, "namespace", "a", "b", "replace", [], None),
    (RELEASE, "values.devicePlugin.config.name", "cfg-1", "cfg-2", "update", ["roll-device-plugin"], GPU_OPERATOR),
    (RELEASE, "values.mig.strategy", "none", "single", "update", ["roll-device-plugin"], GPU_OPERATOR),
    (RELEASE, "values.migManager.enabled", True, False, "update", ["roll-pods"], GPU_OPERATOR),
    (
        RELEASE,
        "values.devicePlugin.env",
        [],
        [{"name": "DEVICE_LIST_STRATEGY"}],
        "update",
        ["roll-device-plugin"],
        GPU_OPERATOR,
    ),
    (RELEASE, "version", "v25.10.1", "v26.7.0", "update", ["roll-device-plugin"], GPU_OPERATOR),
    (RELEASE, "values.devicePlugin.config.data.x", "a", "b", "update", [], GPU_OPERATOR),
    (RELEASE, "values.driver.enabled", False, True, "update", [], GPU_OPERATOR),
    (RELEASE, "version", "9.58.0", "9.59.0", "update", [], AUTOSCALER),
    (RELEASE, "values.devicePlugin.config.name", "a", "b", "update", [], AUTOSCALER),
    # Karpenter (issue 26): the NodePool template and the EC2NodeClass spec are hashed for drift;
    # the NodePool's limits and disruption settings are not.
    (NODEPOOL, "spec.template.metadata.labels.team", "a", "b", "update", ["drift-nodes"], None),
    (NODEPOOL, "spec.template.spec.expireAfter", "720h", "Never", "update", ["drift-nodes"], None),
    (NODEPOOL, "spec.template.spec.nodeClassRef.name", "a", "b", "update", ["drift-nodes"], None),
    (
        NODEPOOL,
        "spec.template.spec.taints",
        [],
        [{"key": "k", "effect": "NoSchedule"}],
        "update",
        ["drift-nodes"],
        None,
    ),
    (
        NODEPOOL,
        "spec.template.spec.startupTaints",
        [],
        [{"key": "k", "effect": "NoSchedule"}],
        "update",
        ["drift-nodes"],
        None,
    ),
    (NODEPOOL, "spec.template.spec.terminationGracePeriod", "1h", "2h", "update", ["drift-nodes"], None),
    (
        NODEPOOL,
        "spec.template.spec.requirements",
        [],
        [{"key": "k", "operator": "Exists"}],
        "update",
        ["drift-nodes"],
        None,
    ),
    (NODEPOOL, "spec.limits.nodes", "2", "4", "update", [], None),
    (NODEPOOL, "spec.disruption.consolidateAfter", "10m", "1h", "update", [], None),
    (NODECLASS, "spec.blockDeviceMappings", [], [{"deviceName": "/dev/xvda"}], "update", ["drift-nodes"], None),
    (NODECLASS, "spec.kubelet.maxPods", 29, 58, "update", ["drift-nodes"], None),
    (NODEOVERLAY, "spec.capacity.nvidia~com/gpu", "4", "8", "update", [], None),
]


@pytest.mark.parametrize(
    ("typ", "path", "before", "after", "action", "effects", "base"),
    CASES,
    ids=[f"{c[0].split(':')[-1]}.{c[1]}{'@' + c[6]['chart'] if c[6] else ''}->{c[4]}" for c in CASES],
)
def test_each_rule_triggers_on_its_input_and_nothing_else_does(typ, path, before, after, action, effects, base):
    changed = one(typ, path, before, after, base)
    assert changed.action == action
    assert changed.effects == effects
    if action == "replace" or effects:
        assert changed.reasons and all(r.source for r in changed.reasons), "every verdict names its source"
    else:
        assert changed.reasons == []


# terraform-provider-aws internal/service/ec2/ec2_launch_template.go, resourceLaunchTemplateUpdate:
# the updateKeys whose change calls CreateLaunchTemplateVersion (as Pulumi names them).
LAUNCH_TEMPLATE_UPDATE_KEYS = [
    "blockDeviceMappings",
    "capacityReservationSpecification",
    "cpuOptions",
    "creditSpecification",
    "description",
    "disableApiStop",
    "disableApiTermination",
    "ebsOptimized",
    "elasticGpuSpecifications",
    "elasticInferenceAccelerator",
    "enclaveOptions",
    "hibernationOptions",
    "iamInstanceProfile",
    "imageId",
    "instanceInitiatedShutdownBehavior",
    "instanceMarketOptions",
    "instanceRequirements",
    "instanceType",
    "kernelId",
    "keyName",
    "licenseSpecifications",
    "metadataOptions",
    "monitoring",
    "networkInterfaces",
    "placement",
    "privateDnsNameOptions",
    "ramDiskId",
    "securityGroupNames",
    "tagSpecifications",
    "userData",
    "vpcSecurityGroupIds",
]


@pytest.mark.parametrize("key", LAUNCH_TEMPLATE_UPDATE_KEYS)
def test_every_launch_template_update_key_makes_a_new_version(key: str):
    changed = one(LAUNCH_TEMPLATE, key, "a", "b")
    assert (changed.action, changed.effects) == ("update", ["new-launch-template-version"])


def test_every_rule_of_the_table_has_a_case():
    covered = {(typ, path) for typ, path, *_ in CASES} | {(LAUNCH_TEMPLATE, k) for k in LAUNCH_TEMPLATE_UPDATE_KEYS}

    def hit(rule: impact.Rule) -> bool:
        return any(
            fnmatch.fnmatchcase(typ, rule.type) and (path == rule.path or path.startswith(rule.path + "."))
            for typ, path in covered
        )

    missing = [f"{r.type} {r.path}" for r in impact.RULES if not hit(r)]
    assert not missing, f"rules without a test case: {missing}"


# ---------------------------------------------------------------------------------------------
# Across resources
# ---------------------------------------------------------------------------------------------

UNKNOWN = render_values.UNKNOWN


def gpu_group(**inputs: Any) -> dict[str, Any]:
    base = {
        "amiType": "AL2023_x86_64_NVIDIA",
        "instanceTypes": ["g4dn.xlarge"],
        "launchTemplate": {"id": UNKNOWN, "version": UNKNOWN},
        "nodeRoleArn": UNKNOWN,
        "scalingConfig": {"desiredSize": 2, "maxSize": 5, "minSize": 1},
        "updateConfig": {"maxUnavailable": 1},
    }
    lt = f"{LAUNCH_TEMPLATE}::gpu-lt"
    return item(
        NODE_GROUP,
        "gpu",
        {**base, **inputs},
        dependsOn=[lt, "aws:iam/role:Role::node"],
        inputDependencies={"launchTemplate": [lt], "nodeRoleArn": ["aws:iam/role:Role::node"]},
    )


def test_a_new_launch_template_version_rolls_the_node_groups_that_use_it():
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "a"}), gpu_group())
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "b"}), gpu_group())
    summary = impact.summarize("dev", old, new)
    assert [(r.label, r.action) for r in summary.resources] == [
        (f"{LAUNCH_TEMPLATE} gpu-lt", "update"),
        (f"{NODE_GROUP} gpu", "update"),
    ]
    (roll,) = summary.node_rolls
    assert (roll.node_group, roll.max_nodes, roll.at_a_time, roll.gpu, roll.how) == ("gpu", 5, "1", True, "rolled")
    assert summary.gpu_pods_rescheduled == ["gpu"]
    words = impact.text(summary, "t")
    assert (
        f"node group gpu: up to 5 nodes (its max size), 1 at a time; {LAUNCH_TEMPLATE} gpu-lt changes: "
        "EKS replaces every node (UpdateNodegroupVersion); EKS first launches up to 2 extra nodes per zone "
        "(maxUnavailable, if more) for their pods\n"
    ) in words
    assert f"{NODE_GROUP} gpu: `launchTemplate.version` -> nodes rolled\n" in words


def test_a_tag_only_launch_template_change_rolls_nothing():
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"tags": {"a": "1"}}), gpu_group())
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"tags": {"a": "2"}}), gpu_group())
    summary = impact.summarize("dev", old, new)
    assert [r.label for r in summary.resources] == [f"{LAUNCH_TEMPLATE} gpu-lt"]
    assert summary.node_rolls == []


def test_a_replaced_launch_template_replaces_its_node_groups():
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"name": "a"}), gpu_group())
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"name": "b"}), gpu_group())
    summary = impact.summarize("dev", old, new)
    group = next(r for r in summary.resources if r.type == NODE_GROUP)
    assert group.action == "replace"
    assert {r.input for r in group.reasons} == {"launchTemplate.id"}
    (roll,) = summary.node_rolls
    assert (roll.how, roll.max_nodes, roll.gpu) == ("replaced", 5, True)


def test_without_input_dependencies_every_unknown_input_may_come_from_any_dependency():
    # A base rendered before `inputDependencies` existed: dependsOn is all there is.
    group = gpu_group()
    del group["inputDependencies"]
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"name": "a"}), group)
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"name": "b"}), group)
    replaced = next(r for r in impact.summarize("dev", old, new).resources if r.type == NODE_GROUP)
    assert replaced.action == "replace"
    assert {r.input for r in replaced.reasons} == {"launchTemplate.id", "nodeRoleArn"}


def test_a_replaced_role_replaces_the_node_groups_that_use_it():
    role = item("aws:iam/role:Role", "node", {"name": "a"})
    renamed = item("aws:iam/role:Role", "node", {"name": "b"})
    summary = impact.summarize("dev", doc(role, gpu_group()), doc(renamed, gpu_group()))
    group = next(r for r in summary.resources if r.type == NODE_GROUP)
    assert group.action == "replace"
    assert [(r.input, r.via) for r in group.reasons] == [("nodeRoleArn", "aws:iam/role:Role node")]


def test_a_non_gpu_node_group_rolls_without_gpu_pods():
    plain = {"amiType": "AL2023_x86_64_STANDARD", "instanceTypes": ["t3.large"]}
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "a"}), gpu_group(**plain))
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "b"}), gpu_group(**plain))
    summary = impact.summarize("dev", old, new)
    assert [r.gpu for r in summary.node_rolls] == [False]
    assert summary.gpu_pods_rescheduled == []


def karpenter_pool(**template_labels: str) -> dict[str, Any]:
    labels = {"gpu-eks.io/gpu-count": "1", **template_labels}
    return item(
        NODEPOOL,
        "gpu-eks-t4-nodepool",
        {
            "metadata": {"name": "gpu-eks-t4"},
            "spec": {
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"nodeClassRef": {"name": "gpu-eks-t4"}, "expireAfter": "Never"},
                },
                "limits": {"nodes": "3"},
                "disruption": {"budgets": [{"nodes": "1"}]},
            },
        },
    )


def test_a_node_pool_template_change_drifts_its_gpu_nodes():
    old, new = doc(karpenter_pool()), doc(karpenter_pool(team="ml"))
    summary = impact.summarize("dev", old, new)
    (roll,) = summary.node_rolls
    assert (roll.node_group, roll.max_nodes, roll.at_a_time, roll.gpu, roll.how) == (
        "NodePool gpu-eks-t4-nodepool",
        3,
        "1",
        True,
        "drifted",
    )
    assert impact.lines(summary)[:2] == [
        (
            "nodes rolled",
            "NodePool gpu-eks-t4-nodepool: up to 3 nodes (its node limit), 1 at a time; "
            "`spec.template.metadata` changes: Karpenter replaces every node of the pool (drift)",
        ),
        (
            "GPU pods rescheduled",
            # No device-plugin profile time-slices its GPUs here (tests/test_impact_nodes.py: those that do).
            "NodePool gpu-eks-t4-nodepool: its GPU pods are evicted as each node drains and start again on new nodes",
        ),
    ]


def test_a_node_pool_requirements_change_drifts_only_the_nodes_that_no_longer_meet_them():
    # Requirements are not hashed (kubernetes-sigs/karpenter v1.14.0 nodepool.go hash:"ignore"): a
    # node drifts only where its labels no longer meet them (drift.go areRequirementsDrifted).
    before, after = karpenter_pool(), karpenter_pool()
    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]}
    before["inputs"]["spec"]["template"]["spec"]["requirements"] = [requirement]
    after["inputs"]["spec"]["template"]["spec"]["requirements"] = [
        {**requirement, "values": ["g4dn.xlarge", "g4dn.2xlarge"]}
    ]
    (roll,) = impact.summarize("dev", doc(before), doc(after)).node_rolls
    assert (roll.node_group, roll.how, roll.cause) == (
        "NodePool gpu-eks-t4-nodepool",
        "drifted",
        "`spec.template.spec.requirements` changes: Karpenter replaces only the nodes whose labels no longer meet "
        "the NodePool's requirements (drift); nodes that still meet them stay",
    )
    assert [r.source for r in impact.summarize("dev", doc(before), doc(after)).resources[0].reasons] == [
        "kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go (NodeClaimTemplateSpec.Requirements "
        'hash:"ignore"), pkg/controllers/nodeclaim/disruption/drift.go (areRequirementsDrifted)'
    ]


def test_a_node_class_change_drifts_the_pools_that_use_it():
    node_class = {"metadata": {"name": "gpu-eks-t4"}, "spec": {"kubelet": {"maxPods": 29}}}
    changed = {"metadata": {"name": "gpu-eks-t4"}, "spec": {"kubelet": {"maxPods": 58}}}
    old = doc(item(NODECLASS, "gpu-eks-t4-nodeclass", node_class), karpenter_pool())
    new = doc(item(NODECLASS, "gpu-eks-t4-nodeclass", changed), karpenter_pool())
    (roll,) = impact.summarize("dev", old, new).node_rolls
    assert (roll.node_group, roll.max_nodes, roll.gpu, roll.how, roll.cause) == (
        "EC2NodeClass gpu-eks-t4-nodeclass",
        None,
        True,
        "drifted",
        "`spec.kubelet.maxPods` changes: Karpenter replaces the nodes of every NodePool that uses it (drift)",
    )


def test_created_deleted_and_aliased_resources():
    renamed = item(NODE_GROUP, "gpu2", gpu_group()["inputs"], aliases=[f"urn:pulumi:dev::p::{NODE_GROUP}::gpu"])
    old = doc(gpu_group(), item("aws:iam/role:Role", "old-role", {"name": "x"}))
    new = doc(renamed, item("aws:iam/role:Role", "new-role", {"name": "y"}))
    summary = impact.summarize("dev", old, new)
    assert [(r.label, r.action) for r in summary.resources] == [
        ("aws:iam/role:Role new-role", "create"),
        ("aws:iam/role:Role old-role", "delete"),
    ]
    assert summary.unchanged == 1, "the aliased node group is the same resource, unchanged"


def test_a_deleted_gpu_node_group_reschedules_its_gpu_pods():
    summary = impact.summarize("dev", doc(gpu_group()), doc())
    (roll,) = summary.node_rolls
    assert (roll.node_group, roll.how, roll.max_nodes) == ("gpu", "deleted", 5)
    assert summary.gpu_pods_rescheduled == ["gpu"]


def test_the_projects_own_components_are_not_counted():
    component = {"type": "p:index:Thing", "name": "c", "urn": "urn:pulumi:dev::p::p:index:Thing::c", "inputs": {}}
    summary = impact.summarize("dev", doc(component, gpu_group()), doc(gpu_group()))
    assert summary.resources == [] and summary.unchanged == 1


def test_json_summary_has_the_documented_keys():
    old = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "a"}), gpu_group())
    new = doc(item(LAUNCH_TEMPLATE, "gpu-lt", {"userData": "b"}), gpu_group())
    data = impact.summarize("dev", old, new).to_json()
    assert sorted(data) == [
        "created",
        "deleted",
        "devicePluginDaemonSetsRolled",
        "gpuPodsRescheduled",
        "nodesRolled",
        "notes",
        "replaced",
        "stack",
        "unchanged",
        "updated",
    ]
    assert data["nodesRolled"] == [
        {
            "nodeGroup": "gpu",
            "maxNodes": 5,
            "atATime": "1",
            "gpu": True,
            "how": "rolled",
            "cause": f"{LAUNCH_TEMPLATE} gpu-lt changes: EKS replaces every node (UpdateNodegroupVersion)",
        }
    ]
    assert data["updated"][0]["reasons"][0]["effect"] == "new-launch-template-version"


# ---------------------------------------------------------------------------------------------
# Real stack changes: the dev stack against a copy of the project with one setting changed
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_render() -> dict[str, Any]:
    return render_values.load(render.render_stack("dev", ROOT))


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("impact"))


def changed_dev(project: Path, old: str, new: str) -> dict[str, Any]:
    stack = project / "stacks" / "Pulumi.dev.yaml"
    original = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert old in original, f"the dev stack no longer has {old!r}: update the test"
    stack.write_text(original.replace(old, new))
    try:
        return render_values.load(render.render_stack("dev", project))
    finally:
        stack.write_text(original)


#: The verification Jobs of dev's group, replaced whenever their spec or the sharing settings change.
VERIFICATION_JOBS = [
    "kubernetes:batch/v1:Job gpu-eks-verify-t4-warmup",
    "kubernetes:batch/v1:Job gpu-eks-verify-t4-concurrent",
]


def resource(document: dict[str, Any], typ: str, name: str) -> dict[str, Any]:
    return next(r for r in document["resources"] if r["type"] == typ and r["name"] == name)


def test_replicas_change_rolls_the_device_plugin_daemonsets(dev_render, project_copy):
    new = changed_dev(project_copy, "replicas: 4", "replicas: 2")
    summary = impact.summarize("dev", dev_render, new)
    # Only the verification Jobs are replaced (their names hash the sharing settings: the check
    # runs again); no node group, no launch template.
    assert [r.label for r in summary.of("replace")] == VERIFICATION_JOBS
    assert [d.release for d in summary.device_plugin_rolls] == ["gpu-eks-gpu-operator-release"]
    assert "values.devicePlugin.config.name" in summary.device_plugin_rolls[0].cause
    # The node label naming the sharing profile is stable (issue 7): no node rolls.
    assert summary.node_rolls == []
    assert summary.gpu_pods_rescheduled == []
    words = impact.text(summary, "replicas")
    assert "device-plugin DaemonSets rolled" in words and "running GPU pods keep running" in words


def test_instance_type_change_replaces_the_gpu_node_group(dev_render, project_copy):
    new = changed_dev(project_copy, "instanceTypes: [g4dn.xlarge]", "instanceTypes: [g4dn.2xlarge]")
    summary = impact.summarize("dev", dev_render, new)
    replaced = {r.label: r for r in summary.of("replace")}
    assert [r.input for r in replaced[f"{NODE_GROUP} gpu-eks-t4"].reasons] == ["instanceTypes"]
    # A new node group has a new Auto Scaling group: its 8 autoscaler tags are replaced with it.
    tags = sorted(label for label in replaced if label.startswith("aws:autoscaling/tag:Tag gpu-eks-t4-asg-tag-"))
    assert len(tags) == 8
    assert sorted(replaced) == sorted([f"{NODE_GROUP} gpu-eks-t4", *tags, *VERIFICATION_JOBS])
    (roll,) = summary.node_rolls
    assert (roll.node_group, roll.how, roll.max_nodes, roll.gpu) == ("gpu-eks-t4", "replaced", 1, True)
    assert summary.gpu_pods_rescheduled == ["gpu-eks-t4"]
    assert summary.device_plugin_rolls == []


def test_taint_change_rolls_the_gpu_nodes(dev_render, project_copy):
    new = changed_dev(
        project_copy,
        "      timeSlicing:\n",
        "      taints: [{key: nvidia.com/gpu, value: shared, effect: NoSchedule}]\n      timeSlicing:\n",
    )
    summary = impact.summarize("dev", dev_render, new)
    # new tolerations: the isolation check's Job too (its name hashes its spec)
    assert sorted(r.label for r in summary.of("replace")) == sorted(
        [*VERIFICATION_JOBS, "kubernetes:batch/v1:Job gpu-eks-verify-t4-isolation"]
    )
    rolled = {r.node_group: r for r in summary.node_rolls}
    assert list(rolled) == ["gpu-eks-t4"]
    assert (rolled["gpu-eks-t4"].how, rolled["gpu-eks-t4"].max_nodes, rolled["gpu-eks-t4"].at_a_time) == (
        "rolled",
        1,
        "1",
    )
    assert summary.gpu_pods_rescheduled == ["gpu-eks-t4"]
    # dev's t4 nodes are time-sliced (profile timeslice-x4, replicas 4), on no reservation.
    assert (rolled["gpu-eks-t4"].time_sliced, rolled["gpu-eks-t4"].reserved) == (True, None)
    lt = next(r for r in summary.resources if r.label == f"{LAUNCH_TEMPLATE} gpu-eks-t4-lt")
    assert lt.effects == ["new-launch-template-version"] and any(p.startswith("userData") for p in lt.changed)


def test_chart_version_change_rolls_the_device_plugin_but_no_node(dev_render, project_copy):
    new = changed_dev(project_copy, "chartVersion: v26.7.0", "chartVersion: v25.10.1")
    summary = impact.summarize("dev", dev_render, new)
    assert summary.of("replace") == [] and summary.node_rolls == []
    (roll,) = summary.device_plugin_rolls
    assert roll.release == "gpu-eks-gpu-operator-release" and "`version`" in roll.cause


def test_kubernetes_version_change_upgrades_the_control_plane_in_place(dev_render, project_copy):
    new = changed_dev(project_copy, 'kubernetesVersion: "1.35"', 'kubernetesVersion: "1.36"')
    summary = impact.summarize("dev", dev_render, new)
    assert summary.of("replace") == []
    cluster = next(r for r in summary.resources if r.type == "eks:index:Cluster")
    assert (cluster.action, cluster.effects) == ("update", ["upgrade-control-plane"])
    assert "control plane upgraded" in impact.text(summary, "k8s")
    # Every managed node group carries the cluster's version, so it follows the control plane:
    # a rolling update (UpdateNodegroupVersion), maxUnavailable 1.
    assert sorted(r.node_group for r in summary.node_rolls) == ["gpu-eks-cluster-system", "gpu-eks-t4"]
    assert {r.at_a_time for r in summary.node_rolls} == {"1"}
    assert not any("keep their Kubernetes version" in note for note in summary.notes)


def test_tag_change_rolls_every_node_group_through_its_launch_template(dev_render, project_copy):
    new = changed_dev(project_copy, "environment: dev", "environment: staging")
    summary = impact.summarize("dev", dev_render, new)
    assert summary.of("replace") == [] and summary.of("create") == [] and summary.of("delete") == []
    # Instance and volume tags live in the launch templates' tag specifications: a new version.
    assert sorted(r.node_group for r in summary.node_rolls) == ["gpu-eks-cluster-system", "gpu-eks-t4"]
    assert summary.gpu_pods_rescheduled == ["gpu-eks-t4"]
    assert summary.device_plugin_rolls == []


def test_the_readme_example_comment_is_what_the_code_writes(dev_render, project_copy):
    """docs/development.md's pull request comment example, for `replicas: 4` -> `replicas: 2`, stays true."""
    from tooling import diff

    readme = (ROOT / "docs" / "development.md").read_text()
    example = readme.split("### Stack `dev`: what deploying this change does\n\n", 1)[1].split("\n\n", 1)[0]
    new = changed_dev(project_copy, "replicas: 4", "replicas: 2")
    old_text = render_values.dump(dev_render)
    new_text = render_values.dump(new)
    result = diff.compare("dev", diff.Side("a", old_text), diff.Side("b", new_text))
    comment = diff.comment_markdown([result])
    assert comment.startswith("### Stack `dev`: what deploying this change does\n\n" + example + "\n"), (
        "update docs/development.md's example comment (and docs/ci.md's) to what the code writes now:\n"
        + comment[:3000]
    )


def test_switching_time_slicing_to_mps_rolls_daemonsets_and_keeps_the_nodes(dev_render, project_copy):
    """Issue 18: the profile label stays the group's, so only the operator's DaemonSets roll."""
    # The stack's pinned profile name (timeslice-x4) is kept under mps: the node label does not change.
    new = changed_dev(project_copy, "      timeSlicing:\n        replicas: 4\n", "      mps:\n        replicas: 4\n")
    summary = impact.summarize("dev", dev_render, new)
    assert summary.node_rolls == [] and summary.gpu_pods_rescheduled == []
    assert not any(r.type in (LAUNCH_TEMPLATE, NODE_GROUP) for r in summary.resources)
    assert [d.release for d in summary.device_plugin_rolls] == ["gpu-eks-gpu-operator-release"]
    words = impact.text(summary, "mps")
    assert "starts or stops its MPS control daemon" in words and "nodes stay" in words
    assert "drain the group's GPU pods to switch cleanly" in words
    # No new Job: the warm-up and concurrent Jobs are replaced (their names hash the mode), and the
    # concurrent one's pods now run the MPS memory probe.
    assert summary.of("create") == []
    assert sorted(r.label for r in summary.of("replace")) == [
        "kubernetes:batch/v1:Job gpu-eks-verify-t4-concurrent",
        "kubernetes:batch/v1:Job gpu-eks-verify-t4-warmup",
    ]
