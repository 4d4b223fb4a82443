"""Karpenter as a GPU group's capacity provider (issue 26): the settings, the per-group objects as
literals, every object against Karpenter 1.14.1's CRDs with their CEL rules evaluated, and the
proof that a sharing change drifts no node."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.groups import GpuNodeGroupSettings
from components.plan import karpenter as objects
from components.plan.group import plan_group
from components.plan.userdata import parse_mime
from tests.support.standins.crds import crd_problems, karpenter_schema

ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 3}
#: The kubelet flag of a default GPU group's NodeConfig part: the NodePool's taint, Karpenter's startup
#: taint, the boot stage's pending taint.
PENDING_KARPENTER = (
    "--register-with-taints=nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute,"
    "gpu-eks.io/boot-stage=pending:NoSchedule"
)


def plan(**group: Any):
    return plan_group(
        GpuNodeGroupSettings.model_validate({"name": "ts", "capacityProvider": "karpenter", "scaling": ZERO, **group})
    )


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


# --- settings -----------------------------------------------------------------------------------


def test_the_capacity_provider_defaults_to_managed_node_groups():
    assert GpuNodeGroupSettings(name="g").capacity_provider == "managedNodeGroup"


def test_a_karpenter_group_with_a_minimum_is_refused_with_its_sharing_problems_at_once():
    group = {"name": "k", "capacityProvider": "karpenter", "instanceTypes": ["g6f.large"]}
    group["timeSlicing"] = {"replicas": 2}
    assert problems({"gpuNodeGroups": [group]}) == [
        "gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 2; expected 1 (not shared) for g6f.large: no "
        "time-slicing there, since a g6f/gr6f vGPU slice is already a time-sliced share of an L4, scheduled by the "
        "hypervisor; neither NVIDIA (k8s-device-plugin, gpu-operator) nor AWS documents time-slicing or MPS on top "
        "of a vGPU slice, so the library does not offer it: one pod per slice, or whole L4s (g6, gr6) to share",
        "gpu-eks:gpuNodeGroups[0].scaling.minSize: received 1; expected 0 with capacityProvider karpenter: Karpenter "
        "launches nodes for pending pods and keeps no minSize (a NodePool has only limits; maxSize becomes its node "
        "limit)",
        "gpu-eks:gpuNodeGroups[0].scaling.desiredSize: received 1; expected 0 with capacityProvider karpenter: "
        "Karpenter launches nodes for pending pods and keeps no desiredSize (a NodePool has only limits; maxSize "
        "becomes its node limit)",
    ]


def test_karpenter_groups_do_not_turn_the_cluster_autoscaler_on():
    karpenter = {"name": "k", "capacityProvider": "karpenter", "scaling": ZERO}
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [karpenter]}).autoscaler_enabled is False
    managed = {"name": "m", "scaling": ZERO}
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [karpenter, managed]}).autoscaler_enabled is True


def test_a_root_volume_past_the_ec2_node_class_pattern_is_refused_for_karpenter_only():
    big = {"name": "k", "capacityProvider": "karpenter", "scaling": ZERO, "diskSizeGiB": 59001}
    assert problems({"gpuNodeGroups": [big]}) == [
        "gpu-eks:gpuNodeGroups[0].diskSizeGiB: received 59001; expected at most 59000 with capacityProvider "
        "karpenter: the EC2NodeClass CRD refuses a larger volumeSize (blockDeviceMappings[].ebs.volumeSize pattern, "
        "at most 59000Gi)"
    ]
    node_class = objects.ec2_node_class(plan(diskSizeGiB=59000), role="r", discovery="c")
    assert crd_problems(node_class, karpenter_schema("EC2NodeClass")) == []
    node_class["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "59001Gi"
    assert len(crd_problems(node_class, karpenter_schema("EC2NodeClass"))) == 1
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [{**big, "capacityProvider": "managedNodeGroup"}]})


def test_an_unknown_capacity_provider_is_refused():
    assert problems({"gpuNodeGroups": [{"name": "k", "capacityProvider": "fargate"}]}) == [
        "gpu-eks:gpuNodeGroups[0].capacityProvider: received \"fargate\"; expected one of 'managedNodeGroup' "
        "or 'karpenter'"
    ]


# --- the objects, as literals -------------------------------------------------------------------


def test_the_node_pool_of_a_time_sliced_group():
    assert objects.node_pool(plan(timeSlicing={"replicas": 4})) == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-eks-ts"},
        "spec": {
            "template": {
                "metadata": {
                    "labels": {
                        "gpu-eks.io/gpu-count": "1",
                        "gpu-eks.io/node-group": "ts",
                        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
                        "nvidia.com/device-plugin.config": "ts",
                    }
                },
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu-eks-ts"},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                    ],
                    "expireAfter": "Never",
                    "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule", "value": "true"}],
                },
            },
            "limits": {"nodes": "3"},
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "1"}]},
        },
    }


def test_spot_arm64_and_a_taint_without_value_reach_the_node_pool():
    pool = objects.node_pool(
        plan(instanceTypes=["g5g.xlarge"], capacityType="SPOT", taints=[{"key": "gpu", "effect": "NoExecute"}])
    )
    spec = pool["spec"]["template"]["spec"]
    assert spec["requirements"][1:3] == [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
    ]
    assert spec["taints"] == [{"key": "gpu", "effect": "NoExecute"}]
    assert "taints" not in objects.node_pool(plan(taints=[]))["spec"]["template"]["spec"]


def test_the_ec2_node_class_of_a_group():
    node_class = objects.ec2_node_class(
        plan(diskSizeGiB=200), role="gpu-eks-node-role", discovery="ml", tags={"team": "ml"}
    )
    # A NodeConfig that registers the node with the boot stage's pending taint, repeating the NodePool's
    # taints and Karpenter's startup taint (a kubelet flag wins over Karpenter's registerWithTaints),
    # then the boot stage as a shell part, both kept ahead of Karpenter's own NodeConfig. The stage's
    # drop-in registers the node with the same taints but the pending one (plan/boot.py).
    (nodeconfig_type, nodeconfig), (content_type, script) = parse_mime(node_class["spec"].pop("userData"))
    assert nodeconfig_type == "application/node.eks.aws"
    assert yaml.safe_load(nodeconfig) == {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {"kubelet": {"flags": [PENDING_KARPENTER]}},
    }
    assert content_type == "text/x-shellscript"
    assert 'TAINTS="nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute"' in script
    assert "--set accept-nvidia-visible-devices-envvar-when-unprivileged=false" in script
    assert 'MIG_CREATE=""' in script
    assert node_class == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu-eks-ts"},
        "spec": {
            "role": "gpu-eks-node-role",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "ml"}}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": True,
                    "ebs": {"volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
                }
            ],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
            "kubelet": {"maxPods": 29},
            "tags": {"team": "ml"},
        },
    }


def test_a_pinned_ami_release_is_the_alias_version():
    assert objects.ami_alias(plan(amiReleaseVersion="1.35.0-20260115")) == "al2023@v20260115"


@pytest.mark.parametrize(
    ("group", "capacity", "needed"),
    [
        ({"timeSlicing": {"replicas": 4}}, {"nvidia.com/gpu": "4"}, True),
        ({"instanceTypes": ["g6.12xlarge"], "timeSlicing": {"replicas": 3}}, {"nvidia.com/gpu": "12"}, True),
        (
            {"timeSlicing": {"replicas": 8, "renameByDefault": True}},
            {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"},
            True,
        ),
        ({"instanceTypes": ["g6.xlarge"], "mps": {"replicas": 2}}, {"nvidia.com/gpu": "2"}, True),
        # EC2 reports 0 GPUs for a vGPU slice; the device plugin advertises 1.
        ({"instanceTypes": ["g6f.large", "g6f.xlarge"], "timeSlicing": {"replicas": 1}}, {"nvidia.com/gpu": "1"}, True),
        ({"instanceTypes": ["gr6f.4xlarge"], "timeSlicing": {"replicas": 1}}, {"nvidia.com/gpu": "1"}, True),
        # Whole GPUs, not shared: EC2's count is the device plugin's.
        ({"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 1}}, {"nvidia.com/gpu": "8"}, False),
        ({"timeSlicing": {"replicas": 1}}, {"nvidia.com/gpu": "1"}, False),
    ],
)
def test_the_overlay_states_what_a_node_advertises(group, capacity, needed):
    p = plan(**group)
    overlay = objects.node_overlay(p)
    assert overlay["spec"]["capacity"] == capacity
    assert overlay["spec"]["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-eks-ts"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(p.instance_types)},
    ]
    assert objects.needs_overlay(p) is needed


# --- every object against the CRDs, CEL rules evaluated ------------------------------------------

GROUPS = [
    {},
    {"instanceTypes": ["g5g.xlarge", "g5g.2xlarge"], "capacityType": "SPOT", "labels": {"team": "ml"}},
    {"instanceTypes": ["g6.xlarge"], "mps": {"replicas": 2}, "amiReleaseVersion": "1.35.0-20260115"},
    {"timeSlicing": {"replicas": 8, "renameByDefault": True}, "taints": []},
    {"instanceTypes": ["g6f.large"], "timeSlicing": {"replicas": 1}},
    {"instanceTypes": ["p5.48xlarge"], "timeSlicing": {"replicas": 1}, "diskSizeGiB": 59000},
    {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "value": "x", "effect": "PreferNoSchedule"}]},
]


@pytest.mark.parametrize("group", GROUPS)
def test_every_object_passes_its_crd_and_cel_rules(group):
    p = plan(**group)
    built = [
        objects.ec2_node_class(p, role="gpu-eks-nodes", discovery="ml", tags={"gpu-eks/node-group": "ts"}),
        objects.node_pool(p),
        objects.node_overlay(p),
    ]
    for obj in built:
        assert crd_problems(obj, karpenter_schema(obj["kind"])) == [], obj["kind"]


def test_the_validator_fails_objects_the_api_server_refuses():
    # So that the test above can fail: each object broken one way the CEL rules catch.
    p = plan()
    overlay = objects.node_overlay(p)
    overlay["spec"]["capacity"]["pods"] = "110"
    overlay["spec"]["requirements"].append({"key": "karpenter.sh/foo", "operator": "Exists"})
    assert crd_problems(overlay, karpenter_schema("NodeOverlay")) == [
        ".spec.capacity: invalid resource restricted (self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', "
        "'pods'])): False)",
        '.spec.requirements[2].key: label domain "karpenter.sh" is restricted (self in ["karpenter.sh/capacity-type", '
        '"karpenter.sh/nodepool"] || !self.find("^([^/]+)").endsWith("karpenter.sh"): False)',
    ]
    node_class = objects.ec2_node_class(p, role="r", discovery="c")
    node_class["spec"]["amiSelectorTerms"].append({"id": "ami-0123456789abcdef0"})
    assert crd_problems(node_class, karpenter_schema("EC2NodeClass")) == [
        ".spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a combination of other "
        "amiSelectorTerms (!(self.exists(x, has(x.alias)) && self.size() != 1): False)"
    ]
    pool = objects.node_pool(p)
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/nodepool"] = "other"
    assert crd_problems(pool, karpenter_schema("NodePool")) == [
        '.spec.template.metadata.labels: label "karpenter.sh/nodepool" is restricted (self.all(x, x != '
        '"karpenter.sh/nodepool"): False)'
    ]


# --- a sharing change drifts no node -------------------------------------------------------------


def drift_inputs(p) -> tuple[Any, Any]:
    """What Karpenter's drift hashes: the NodePool's spec.template (and its requirements) and the
    EC2NodeClass's spec (see components/plan/karpenter.py)."""
    return objects.node_pool(p)["spec"]["template"], objects.ec2_node_class(p, role="r", discovery="c")["spec"]


@pytest.mark.parametrize(
    "changed",
    [
        {"timeSlicing": {"replicas": 8}},
        {"timeSlicing": {"replicas": 8, "renameByDefault": True}},
        {"timeSlicing": {"replicas": 4, "failRequestsGreaterThanOne": False}},
        {"timeSlicing": {"replicas": 1}},
        {"mps": {"replicas": 3}},
        {"timeSlicing": {"replicas": 4}, "sharedDevicesAllocationPolicy": "packed"},
    ],
)
def test_a_sharing_change_changes_the_overlay_and_drifts_no_node(changed):
    before = plan(instanceTypes=["g6.12xlarge"], timeSlicing={"replicas": 2})
    after = plan(instanceTypes=["g6.12xlarge"], **changed)
    assert drift_inputs(after) == drift_inputs(before)
    assert objects.node_overlay(after) != objects.node_overlay(before)


def test_a_profile_rename_does_drift_nodes_as_with_managed_node_groups():
    before, after = plan(), plan(timeSlicing={"profile": "other"})
    assert drift_inputs(after)[0] != drift_inputs(before)[0]
    assert drift_inputs(after)[1] == drift_inputs(before)[1]


def test_the_karpenter_name_is_reserved_only_where_a_group_uses_karpenter():
    # A configuration accepted before Karpenter existed stays accepted.
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "karpenter"}]})
    shared = {"name": "k", "capacityProvider": "karpenter", "scaling": ZERO}
    assert problems({"gpuNodeGroups": [{"name": "karpenter-a"}, shared]}) == [
        "gpu-eks:gpuNodeGroups[0].name: received \"karpenter-a\"; expected a name that is not 'karpenter' and does "
        "not start with 'karpenter-': the cluster's own resources are named <component>-karpenter-… and the group's "
        "would read as theirs"
    ]


def test_a_karpenter_group_holds_subnet_addresses_at_its_max_size_without_the_autoscaler():
    group = {"name": "g", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 20}}
    raw = {"autoscaler": {"enabled": False}, "network": {"cidrBlock": "10.0.0.0/24"}}
    # A managed group without the autoscaler stays at desiredSize 0: the /24 holds the system nodes.
    assert load_settings({"clusterName": "c", **raw, "gpuNodeGroups": [group]})
    # Karpenter launches up to maxSize: 10 g4dn.xlarge per subnet x 30 addresses, + 20 for a system node.
    assert problems({**raw, "gpuNodeGroups": [{**group, "capacityProvider": "karpenter"}]}) == [
        'gpu-eks:network.cidrBlock: received "10.0.0.0/24"; expected a larger block: each of its 2 private subnets '
        "holds 53 addresses for nodes and pods (59 usable, less the 6 EKS needs), but at desiredSize (maxSize for "
        "Karpenter groups: Karpenter launches up to it) one subnet must hold at least 320: a node's ENIs take their "
        "addresses from its own subnet, and each group's nodes spread evenly over the subnets, so ceil(nodes / 2) of "
        "every group may share one (the VPC CNI holds whole ENIs of addresses: a GPU node those its max pods need, "
        "g4dn.xlarge 3 x 10 = 30; a system node those its service pods use and a warm one, m6i.large 2 x 10 = 20)"
    ]


def test_tags_karpenter_sets_itself_are_refused_with_a_karpenter_group():
    karpenter = {"name": "k", "capacityProvider": "karpenter", "scaling": ZERO}
    tags = {"karpenter.sh/nodepool": "x", "kubernetes.io/cluster/c": "owned", "team": "ml"}
    expected = (
        "expected no tag key Karpenter sets itself (eks:eks-cluster-name, karpenter.sh/nodepool, "
        "karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass, kubernetes.io/cluster*) with a Karpenter group: "
        "the EC2NodeClass CRD refuses it in spec.tags"
    )
    assert problems({"tags": tags, "gpuNodeGroups": [karpenter]}) == [
        f'gpu-eks:tags.karpenter.sh/nodepool: received "x"; {expected}',
        f'gpu-eks:tags.kubernetes.io/cluster/c: received "owned"; {expected}',
    ]
    # The CRD agrees: the same tag on the EC2NodeClass is refused.
    node_class = objects.ec2_node_class(plan(), role="r", discovery="c", tags={"karpenter.sh/nodepool": "x"})
    assert crd_problems(node_class, karpenter_schema("EC2NodeClass")) == [
        ".spec.tags: tag contains a restricted tag matching karpenter.sh/nodepool (self.all(k, k != "
        "'karpenter.sh/nodepool'): False)"
    ]
    # Without a Karpenter group nothing changes.
    assert load_settings({"clusterName": "c", "tags": tags, "gpuNodeGroups": [{"name": "m"}]})


def test_a_cluster_name_too_long_for_the_interruption_queue_is_refused_with_a_karpenter_group():
    # The queue is named after the cluster (cloudformation.yaml QueueName: ${ClusterName}); SQS takes
    # at most 80 characters (botocore sqs 2012-11-05 CreateQueueRequest.QueueName), EKS 100.
    karpenter = {"name": "k", "capacityProvider": "karpenter", "scaling": ZERO}
    name = "c" * 81
    assert problems({"clusterName": name, "gpuNodeGroups": [karpenter]}) == [
        f'gpu-eks:clusterName: received "{name}"; expected at most 80 characters with a capacityProvider '
        "karpenter group: Karpenter's interruption queue (SQS) is named after the cluster, and an SQS queue name "
        "has at most 80 characters"
    ]
    assert load_settings({"clusterName": "c" * 80, "gpuNodeGroups": [karpenter]})
    # Without a Karpenter group there is no queue: EKS's 100 characters hold.
    assert load_settings({"clusterName": "c" * 100, "gpuNodeGroups": [{"name": "m"}]})


def test_labels_of_karpenters_domains_are_refused_for_karpenter_groups_only():
    labels = {"karpenter.sh/team": "ml", "x.karpenter.k8s.aws/y": "z", "team": "ml"}
    assert problems(
        {"gpuNodeGroups": [{"name": "k", "capacityProvider": "karpenter", "scaling": ZERO, "labels": labels}]}
    ) == [
        f'gpu-eks:gpuNodeGroups[0].labels.{key}: received "{value}"; expected no label of Karpenter\'s domains '
        "(karpenter.sh, karpenter.k8s.aws) with capacityProvider karpenter: Karpenter sets them itself and refuses "
        "them in a NodePool"
        for key, value in (("karpenter.sh/team", "ml"), ("x.karpenter.k8s.aws/y", "z"))
    ]
    # The NodePool CRD refuses the first one too.
    pool = objects.node_pool(plan())
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/team"] = "ml"
    assert len(crd_problems(pool, karpenter_schema("NodePool"))) == 1
    assert load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "m", "labels": labels}]})


def test_the_cold_start_levers_reach_the_ec2_node_class():
    cold = {"localStorage": "RAID0", "fastImagePull": True, "rootVolumeThroughput": 500, "rootVolumeIops": 4000}
    node_class_plan = plan(instanceTypes=["g5.xlarge"], coldStart=cold)
    node_class = objects.ec2_node_class(node_class_plan, role="r", discovery="c")
    spec = node_class["spec"]
    assert spec["blockDeviceMappings"][0]["ebs"] == {
        "volumeSize": "100Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
        "iops": 4000,
        "throughput": 500,
    }
    assert spec["instanceStorePolicy"] == "RAID0"
    # FastImagePull: the gate in our NodeConfig part, beside the registration taints.
    assert parse_mime(spec["userData"]) == [
        (
            "application/node.eks.aws",
            "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
            "  featureGates:\n    FastImagePull: true\n  kubelet:\n    flags:\n"
            f"    - {PENDING_KARPENTER}\n",
        ),
        ("text/x-shellscript", node_class_plan.boot.user_data_part),
    ]
    assert crd_problems(node_class, karpenter_schema("EC2NodeClass")) == []
    # Without levers none of these keys is there (and the default group's class is unchanged).
    plain = objects.ec2_node_class(plan(instanceTypes=["g5.xlarge"]), role="r", discovery="c")["spec"]
    assert "instanceStorePolicy" not in plain
    # Every GPU group's class carries the registration taints and the boot stage (the toolkit isolation).
    assert [t for t, _ in parse_mime(plain["userData"])] == ["application/node.eks.aws", "text/x-shellscript"]
    assert set(plain["blockDeviceMappings"][0]["ebs"]) == {
        "volumeSize",
        "volumeType",
        "encrypted",
        "deleteOnTermination",
    }


def test_a_mig_group_states_every_slice_resource_in_its_overlay():
    mixed = plan(
        instanceTypes=["p5.48xlarge"],
        migStrategy="mixed",
        mig={"migDevices": {"1g.10gb": 4, "3g.40gb": 1}, "replicas": {"1g.10gb": 2}},
    )
    overlay = objects.node_overlay(mixed)
    # mixed advertises no whole GPU: EC2's 8 would be a lie, so the overlay says 0.
    assert overlay["spec"]["capacity"] == {
        "nvidia.com/gpu": "0",
        "nvidia.com/mig-1g.10gb": "64",
        "nvidia.com/mig-3g.40gb": "8",
    }
    assert objects.needs_overlay(mixed) is True
    for obj in (objects.node_pool(mixed), overlay, objects.ec2_node_class(mixed, role="r", discovery="c")):
        assert crd_problems(obj, karpenter_schema(obj["kind"])) == [], obj["kind"]
