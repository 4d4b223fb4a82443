"""The plan of a GPU node group (components/plan/group.py): every derived fact, written out.

Expectations are literals read off the upstream facts they stand for (EKS max pods, the device
plugin's config format, kubelet's flag syntax, CA's tag names), not recomputed with the code
under test. The consumers' own rules (kubelet, device plugin, CA) are tested where they apply:
test_nodeconfig, test_device_plugin_rules, test_autoscaler.
"""

from __future__ import annotations

import base64
import dataclasses

import pytest
import yaml

from components.config.groups import GpuNodeGroupSettings, Taint
from components.plan import userdata
from components.plan.group import GroupPlan, plan_group, plan_groups
from tests.support.rendered import kubelet_flags_in

#: The boot stage's taint, which the user data registers every node with until its stage succeeded.
PENDING = "gpu-eks.io/boot-stage=pending:NoSchedule"
DEFAULT = GpuNodeGroupSettings.model_validate({"name": "gpu"})
WIDE = GpuNodeGroupSettings.model_validate(
    {
        "name": "wide",
        "instanceTypes": ["g4dn.12xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 5},
        "labels": {"team.example.com/owner": "ml"},
        "taints": [
            {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
            {"key": "spot", "effect": "PreferNoSchedule"},
        ],
        "timeSlicing": {"replicas": 3, "renameByDefault": True, "profile": "shared-x3"},
    }
)
EXCLUSIVE = GpuNodeGroupSettings.model_validate(
    {
        "name": "solo",
        "instanceTypes": ["g4dn.8xlarge", "g4dn.xlarge"],
        "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
        "timeSlicing": {"replicas": 1},
    }
)


def test_the_default_group():
    p = plan_group(DEFAULT)
    assert (p.name, p.instance.name, p.ami_type, p.gpus_per_node) == ("gpu", "g4dn.xlarge", "AL2023_x86_64_NVIDIA", 1)
    assert (p.profile_name, p.resource_name, p.mig_strategy) == ("gpu", "nvidia.com/gpu", "none")
    # 1 T4 x 4 replicas; maxSize 2. g4dn.xlarge: 29 max pods (eni-max-pods.txt), 7 DaemonSet pods.
    assert (p.slots_per_node, p.slots_at_max_size, p.max_pods, p.usable_pod_slots) == (4, 8, 29, 22)
    assert dict(p.advertised_resources) == {"nvidia.com/gpu": 4}
    assert dict(p.node_labels) == {
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "gpu-eks.io/gpu-count": "1",
        "nvidia.com/device-plugin.config": "gpu",
        "gpu-eks.io/node-group": "gpu",
    }
    assert p.taints == (Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule"),)
    assert p.tolerations == ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},)
    assert dict(p.device_plugin_config) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert kubelet_flags_in(p.user_data) == [
        "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=gpu,"
        "k8s.amazonaws.com/accelerator=nvidia-tesla-t4,nvidia.com/device-plugin.config=gpu",
        "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
    ]
    assert dict(p.node_template_tags) == {
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/gpu-count": "1",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/device-plugin.config": "gpu",
        "k8s.io/cluster-autoscaler/node-template/label/gpu-eks.io/node-group": "gpu",
        "k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu": "true:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "4",
    }
    # The boot stage: isolation only (no layout), failing with the group's taint before its own.
    assert p.boot is not None and p.mig_layout is None
    for line in ("GPUS=1\n", 'MIG_CREATE=""\n', 'TAINTS="nvidia.com/gpu=true:NoSchedule"\n'):
        assert line in p.boot.script
    assert "apply_mig() {" not in p.boot.script  # the MIG functions stay out of a group without MIG
    assert p.boot.user_data_part in base64.b64decode(p.user_data).decode()
    # What EC2's 16 KB limit counts: the MIME before base64. No multi-node launch template additions.
    assert p.user_data_bytes == len(base64.b64decode(p.user_data)) == 4419
    assert dict(p.launch_template_data) == {}


def test_a_karpenter_groups_user_data_is_its_ec2nodeclass_text():
    """Karpenter takes the text and writes the labels and the NodePool's taints itself: the group's
    part registers with them repeated, its startup taint and the boot stage's pending one."""
    scaling = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
    p = plan_group(
        GpuNodeGroupSettings.model_validate({"name": "gpu", "capacityProvider": "karpenter", "scaling": scaling})
    )
    (content_type, body), (script_type, script) = userdata.parse_mime(p.user_data)
    assert (content_type, script_type, script) == (
        "application/node.eks.aws",
        "text/x-shellscript",
        p.boot.user_data_part,
    )
    assert yaml.safe_load(body) == {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "kubelet": {
                "flags": [
                    "--register-with-taints=nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute,"
                    "gpu-eks.io/boot-stage=pending:NoSchedule"
                ]
            }
        },
    }
    # The text, and the labels flag Karpenter writes into its own part.
    assert p.user_data_bytes == len(p.user_data) + len(userdata.kubelet_flags(p.node_labels, ())[0]) == 4482
    assert dict(p.launch_template_data) == {}


def test_a_capacity_block_groups_launch_template_additions():
    block = {
        "name": "cb",
        "instanceTypes": ["p5.48xlarge"],
        "capacityType": "CAPACITY_BLOCK",
        "capacityReservation": {"id": "cr-0123456789abcdef0"},
        "availabilityZone": "us-west-2a",
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    }
    assert dict(plan_group(GpuNodeGroupSettings.model_validate(block)).launch_template_data) == {
        "CapacityReservationSpecification": {
            "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}
        },
        "InstanceMarketOptions": {"MarketType": "capacity-block"},
        "InstanceType": "p5.48xlarge",
    }
    # A Karpenter group's EC2NodeClass selects the reservation itself: no launch template additions.
    karpenter = {**block, "capacityProvider": "karpenter"}
    assert dict(plan_group(GpuNodeGroupSettings.model_validate(karpenter)).launch_template_data) == {}


def test_a_renamed_multi_gpu_group_with_its_own_labels_taints_and_profile():
    p = plan_group(WIDE)
    assert (p.instance.name, p.gpus_per_node, p.instance_types) == ("g4dn.12xlarge", 4, ("g4dn.12xlarge",))
    assert (p.profile_name, p.resource_name) == ("shared-x3", "nvidia.com/gpu.shared")
    # 4 T4 x 3 replicas; maxSize 5. g4dn.12xlarge: 234 max pods.
    assert (p.slots_per_node, p.slots_at_max_size, p.max_pods, p.usable_pod_slots) == (12, 60, 234, 227)
    assert dict(p.advertised_resources) == {"nvidia.com/gpu.shared": 12}
    assert dict(p.node_labels) == {
        "team.example.com/owner": "ml",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
        "gpu-eks.io/gpu-count": "4",
        "nvidia.com/device-plugin.config": "shared-x3",
        "gpu-eks.io/node-group": "wide",
    }
    assert p.tolerations == (
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
        {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"},
    )
    assert p.device_plugin_config["sharing"] == {
        "timeSlicing": {
            "renameByDefault": True,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 3}],
        }
    }
    assert kubelet_flags_in(p.user_data) == [
        "--node-labels=gpu-eks.io/gpu-count=4,gpu-eks.io/node-group=wide,"
        "k8s.amazonaws.com/accelerator=nvidia-tesla-t4,nvidia.com/device-plugin.config=shared-x3,"
        "team.example.com/owner=ml",
        "--register-with-taints=dedicated=ml:NoExecute,spot:PreferNoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
    ]
    resources = {
        k: v for k, v in p.node_template_tags.items() if k.startswith("k8s.io/cluster-autoscaler/node-template/r")
    }
    # Renamed: the template offers the shared slots and no plain nvidia.com/gpu at all.
    assert resources == {
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu.shared": "12",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "0",
    }
    assert p.node_template_tags["k8s.io/cluster-autoscaler/node-template/taint/spot"] == ":PreferNoSchedule"
    assert p.node_template_tags["k8s.io/cluster-autoscaler/node-template/taint/dedicated"] == "ml:NoExecute"


def test_an_unshared_group_of_mixed_sizes():
    p = plan_group(EXCLUSIVE)
    assert (p.profile_name, p.resource_name, p.slots_per_node, p.slots_at_max_size) == ("solo", "nvidia.com/gpu", 1, 2)
    # The smallest type of the group bounds it: g4dn.xlarge (29) under g4dn.8xlarge (58).
    assert (p.instance.name, p.max_pods, p.usable_pod_slots) == ("g4dn.8xlarge", 29, 22)
    assert dict(p.device_plugin_config) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert p.tolerations == ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert kubelet_flags_in(p.user_data)[1] == f"--register-with-taints=nvidia.com/gpu:NoSchedule,{PENDING}"


@pytest.mark.parametrize("effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
def test_every_taint_effect_reaches_kubelet_the_tolerations_and_ca(effect: str):
    group = GpuNodeGroupSettings.model_validate({"name": "g", "taints": [{"key": "k", "value": "v", "effect": effect}]})
    p = plan_group(group)
    assert kubelet_flags_in(p.user_data)[1] == f"--register-with-taints=k=v:{effect},{PENDING}"
    assert p.tolerations == ({"key": "k", "operator": "Equal", "value": "v", "effect": effect},)
    assert p.node_template_tags["k8s.io/cluster-autoscaler/node-template/taint/k"] == f"v:{effect}"


def test_no_taints_means_no_taint_flag_tag_or_toleration():
    p = plan_group(GpuNodeGroupSettings.model_validate({"name": "open", "taints": []}))
    assert (p.taints, p.tolerations) == ((), ())
    # Only the boot stage's pending taint, which the stage's drop-in clears (plan/boot.py).
    assert kubelet_flags_in(p.user_data)[1:] == ["--register-with-taints=gpu-eks.io/boot-stage=pending:NoSchedule"]
    assert not any("/node-template/taint/" in k for k in p.node_template_tags)


def test_sharing_settings_never_touch_the_node_inputs():
    """Changing replicas, renameByDefault or failRequestsGreaterThanOne keeps the user data (no
    node replacement): the profile name, hence the node label, is the group's name."""
    base = plan_group(DEFAULT)
    for sharing in ({"replicas": 8}, {"renameByDefault": True}, {"failRequestsGreaterThanOne": False}):
        changed = plan_group(GpuNodeGroupSettings.model_validate({"name": "gpu", "timeSlicing": sharing}))
        assert changed.user_data == base.user_data, sharing
        assert changed.device_plugin_config != base.device_plugin_config, sharing


def test_a_plan_is_frozen():
    p = plan_group(DEFAULT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.profile_name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.node_labels["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        p.node_template_tags["x"] = "y"  # type: ignore[index]


def test_plan_groups_keeps_the_order():
    plans = plan_groups([WIDE, DEFAULT])
    assert all(isinstance(p, GroupPlan) for p in plans)
    assert [p.name for p in plans] == ["wide", "gpu"]
