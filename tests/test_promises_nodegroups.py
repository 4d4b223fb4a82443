"""Promises about every managed node group: launch template (IMDSv2 with hop limit 1, encrypted
gp3 root volume, no key pair, tag specifications, nodeadm user data) and node group (AMI type,
instance types, capacity, scaling, update config, launch template, release version). Literal
expectations for dev, prod and the variant."""

from __future__ import annotations

import base64
from email import message_from_string
from typing import Any

import pytest
import yaml

from tests.data.promised import (
    ACCELERATOR,
    CLUSTER_NAME,
    DEFAULT_REPAIR,
    GPU_GROUPS,
    KUBERNETES_VERSION,
    NODE_ROLE_ARN,
    PRIVATE_SUBNETS,
    PROFILE,
    RUNS,
    TAGS,
)
from tests.data.samples import DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Simulation

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"

IMDS = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}


def root_volume(size: int) -> list[dict[str, Any]]:
    return [
        {
            "deviceName": "/dev/xvda",
            "ebs": {"volumeSize": size, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"},
        }
    ]


def tag_specs(tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"resourceType": "instance", "tags": tags}, {"resourceType": "volume", "tags": tags}]


#: Root volume size (GiB) per launch template.
DISK = {
    "dev": {"gpu-eks-cluster-system-lt": 50, "gpu-eks-t4-lt": 100},
    "prod": {"gpu-eks-cluster-system-lt": 50, "gpu-eks-t4-lt": 100},
    VARIANT: {"gpu-eks-cluster-system-lt": 60, "gpu-eks-big-lt": 200, "gpu-eks-idle-lt": 100},
    DEFAULTS: {"gpu-eks-cluster-system-lt": 50, "gpu-eks-gpu-lt": 100},
}


def launch_template_inputs(run: str, group: str | None) -> dict[str, Any]:
    """group None: the system node group's launch template (no user data)."""
    name = "gpu-eks-cluster-system" if group is None else f"gpu-eks-{group}"
    tags = TAGS[run] if group is None else {**TAGS[run], "gpu-eks/node-group": group}
    return {
        "description": f"EKS managed node group {name}",
        "metadataOptions": IMDS,
        "blockDeviceMappings": root_volume(DISK[run][f"{name}-lt"]),
        "tagSpecifications": tag_specs({**tags, "Name": name}),
        "tags": tags,
    }


#: (ami type, instance types, capacity type, (min, desired, max), release version) per node group.
NODE_GROUPS = {
    "dev": {
        "gpu-eks-cluster-system": ("AL2023_x86_64_STANDARD", ["t3.large"], "ON_DEMAND", (1, 1, 2), None),
        # Scales from zero (the autoscaler adds the node the verification's warm-up Job asks for).
        "gpu-eks-t4": ("AL2023_x86_64_NVIDIA", ["g4dn.xlarge"], "SPOT", (0, 0, 1), None),
    },
    "prod": {
        "gpu-eks-cluster-system": ("AL2023_x86_64_STANDARD", ["m6i.large"], "ON_DEMAND", (2, 3, 4), None),
        "gpu-eks-t4": ("AL2023_x86_64_NVIDIA", ["g4dn.xlarge", "g4dn.2xlarge"], "ON_DEMAND", (2, 3, 6), None),
    },
    VARIANT: {
        "gpu-eks-cluster-system": (
            "AL2023_x86_64_STANDARD",
            ["m6i.xlarge"],
            "ON_DEMAND",
            (2, 3, 5),
            "1.34.0-20260101",
        ),
        "gpu-eks-big": ("AL2023_x86_64_NVIDIA", ["g4dn.12xlarge"], "ON_DEMAND", (1, 2, 3), "1.34.0-20260115"),
        "gpu-eks-idle": ("AL2023_x86_64_NVIDIA", ["g4dn.2xlarge"], "SPOT", (0, 0, 2), None),
    },
    DEFAULTS: {
        "gpu-eks-cluster-system": ("AL2023_x86_64_STANDARD", ["m6i.large"], "ON_DEMAND", (2, 2, 3), None),
        "gpu-eks-gpu": ("AL2023_x86_64_NVIDIA", ["g4dn.xlarge"], "ON_DEMAND", (1, 1, 2), None),
    },
}


def node_group_inputs(run: str, name: str) -> dict[str, Any]:
    ami, types, capacity, (lo, want, hi), release = NODE_GROUPS[run][name]
    group = name.removeprefix("gpu-eks-")
    tags = TAGS[run] if name == "gpu-eks-cluster-system" else {**TAGS[run], "gpu-eks/node-group": group}
    inputs = {
        "clusterName": CLUSTER_NAME[run],
        "version": KUBERNETES_VERSION[run],
        "nodeRoleArn": NODE_ROLE_ARN,
        "subnetIds": PRIVATE_SUBNETS[run],
        "amiType": ami,
        "instanceTypes": types,
        "capacityType": capacity,
        "scalingConfig": {"minSize": lo, "desiredSize": want, "maxSize": hi},
        "updateConfig": {"maxUnavailable": 1},
        # The fake cloud's id of the launch template and its latestVersion (1), as a string.
        "launchTemplate": {"id": f"{name}-lt-id", "version": "1"},
        "tags": tags,
    }
    if release:
        inputs["releaseVersion"] = release
    if name != "gpu-eks-cluster-system":
        inputs["nodeRepairConfig"] = DEFAULT_REPAIR
    return inputs


#: kubelet flags of the nodeadm NodeConfig, per GPU launch template.
KUBELET_FLAGS = {
    "dev": {
        "gpu-eks-t4-lt": [
            "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=t4,"
            f"k8s.amazonaws.com/accelerator={ACCELERATOR},nvidia.com/device-plugin.config={PROFILE['dev']['t4']}",
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        ]
    },
    "prod": {
        "gpu-eks-t4-lt": [
            "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=t4,"
            f"k8s.amazonaws.com/accelerator={ACCELERATOR},nvidia.com/device-plugin.config={PROFILE['prod']['t4']}",
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        ]
    },
    VARIANT: {
        "gpu-eks-big-lt": [
            "--node-labels=gpu-eks.io/gpu-count=4,gpu-eks.io/node-group=big,"
            f"k8s.amazonaws.com/accelerator={ACCELERATOR},"
            f"nvidia.com/device-plugin.config={PROFILE[VARIANT]['big']},team.example.com/owner=ml",
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,dedicated:NoExecute,gpu-eks.io/boot-stage=pending:NoSchedule",
        ],
        "gpu-eks-idle-lt": [
            "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=idle,"
            f"k8s.amazonaws.com/accelerator={ACCELERATOR},nvidia.com/device-plugin.config={PROFILE[VARIANT]['idle']}",
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        ],
    },
    DEFAULTS: {
        "gpu-eks-gpu-lt": [
            "--node-labels=gpu-eks.io/gpu-count=1,gpu-eks.io/node-group=gpu,"
            f"k8s.amazonaws.com/accelerator={ACCELERATOR},nvidia.com/device-plugin.config={PROFILE[DEFAULTS]['gpu']}",
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage=pending:NoSchedule",
        ]
    },
}


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


def without_user_data(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in inputs.items() if k != "userData"}


# --- Launch templates -------------------------------------------------------------------------


def test_launch_template_names(run: tuple[str, Simulation]):
    name, sim = run
    assert [lt.name for lt in sim.by_type(LT)] == list(DISK[name])


def test_system_launch_template_inputs(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one(LT, "gpu-eks-cluster-system-lt").inputs == launch_template_inputs(name, None)


def test_gpu_launch_template_inputs(run: tuple[str, Simulation]):
    name, sim = run
    for group in GPU_GROUPS[name]:
        assert without_user_data(sim.one(LT, f"gpu-eks-{group}-lt").inputs) == launch_template_inputs(name, group)


def test_imds_v2_only_with_hop_limit_1(run: tuple[str, Simulation]):
    """Pods (one hop further than the node) must not reach the node role's credentials."""
    _, sim = run
    for lt in sim.by_type(LT):
        assert lt.inputs["metadataOptions"] == {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
        }, lt.name


def test_root_volume_is_encrypted_gp3_on_xvda_deleted_with_the_node(run: tuple[str, Simulation]):
    name, sim = run
    for lt in sim.by_type(LT):
        (bdm,) = lt.inputs["blockDeviceMappings"]
        assert bdm["deviceName"] == "/dev/xvda"
        assert bdm["ebs"]["encrypted"] == "true"
        assert bdm["ebs"]["volumeType"] == "gp3"
        assert bdm["ebs"]["deleteOnTermination"] == "true"
        assert bdm["ebs"]["volumeSize"] == DISK[name][lt.name]


def test_no_key_pair(run: tuple[str, Simulation]):
    _, sim = run
    for lt in sim.by_type(LT):
        assert "keyName" not in lt.inputs, lt.name


def test_only_gpu_launch_templates_carry_user_data(run: tuple[str, Simulation]):
    name, sim = run
    assert sorted(lt.name for lt in sim.by_type(LT) if "userData" in lt.inputs) == sorted(KUBELET_FLAGS[name])


def test_user_data_is_a_nodeadm_part_with_labels_and_taints_then_the_boot_stage(run: tuple[str, Simulation]):
    name, sim = run
    for lt_name, flags in KUBELET_FLAGS[name].items():
        mime = base64.b64decode(sim.one(LT, lt_name).inputs["userData"]).decode("ascii")
        message = message_from_string(mime)
        assert message.get_content_type() == "multipart/mixed"
        part, boot_part = message.get_payload()
        # The boot stage (plan/boot.py): a cloud-init shell part, plain 7-bit text like the NodeConfig.
        assert boot_part.get_content_type() == "text/x-shellscript"
        assert boot_part["Content-Transfer-Encoding"] == "7bit"
        script = boot_part.get_payload()
        assert script.startswith("#!/bin/bash\n")
        assert "systemctl enable gpu-eks-boot.service\n" in script
        assert "--set accept-nvidia-visible-devices-envvar-when-unprivileged=false" in script
        assert part.get_content_type() == "application/node.eks.aws"
        assert part["Content-Transfer-Encoding"] == "7bit"
        assert part.get_content_charset() == "us-ascii"
        assert yaml.safe_load(part.get_payload()) == {
            "apiVersion": "node.eks.aws/v1alpha1",
            "kind": "NodeConfig",
            "spec": {"kubelet": {"flags": flags}},
        }


# --- Node groups ------------------------------------------------------------------------------


def test_node_group_names(run: tuple[str, Simulation]):
    name, sim = run
    assert [ng.name for ng in sim.by_type(NG)] == list(NODE_GROUPS[name])


def test_node_group_inputs(run: tuple[str, Simulation]):
    name, sim = run
    for ng_name in NODE_GROUPS[name]:
        assert sim.one(NG, ng_name).inputs == node_group_inputs(name, ng_name), ng_name


def test_node_groups_replace_one_node_at_a_time(run: tuple[str, Simulation]):
    _, sim = run
    for ng in sim.by_type(NG):
        assert ng.inputs["updateConfig"] == {"maxUnavailable": 1}, ng.name


def test_node_groups_leave_desired_size_to_the_autoscaler(run: tuple[str, Simulation]):
    _, sim = run
    for ng in sim.by_type(NG):
        assert ng.options == {"ignoreChanges": ["scalingConfig.desiredSize"]}, ng.name


def test_node_group_scaling(run: tuple[str, Simulation]):
    name, sim = run
    for ng_name, (_, _, _, (lo, want, hi), _) in NODE_GROUPS[name].items():
        assert sim.one(NG, ng_name).inputs["scalingConfig"] == {"minSize": lo, "desiredSize": want, "maxSize": hi}


def test_node_groups_follow_the_clusters_kubernetes_version(run: tuple[str, Simulation]):
    """aws.eks.NodeGroup keeps its creation-time version unless told: a control-plane upgrade
    would leave every node behind."""
    name, sim = run
    for ng in sim.by_type(NG):
        assert ng.inputs["version"] == KUBERNETES_VERSION[name], ng.name


def test_node_group_release_versions_pass_through(run: tuple[str, Simulation]):
    name, sim = run
    for ng_name, (*_, release) in NODE_GROUPS[name].items():
        assert sim.one(NG, ng_name).inputs.get("releaseVersion") == release, ng_name


def test_node_groups_use_their_own_launch_template(run: tuple[str, Simulation]):
    name, sim = run
    for ng_name in NODE_GROUPS[name]:
        assert sim.one(NG, ng_name).inputs["launchTemplate"] == {"id": f"{ng_name}-lt-id", "version": "1"}


def test_labels_and_taints_never_go_through_the_node_group_api(run: tuple[str, Simulation]):
    """nodeadm applies them at registration; the node group API would apply them late."""
    _, sim = run
    for ng in sim.by_type(NG):
        assert "labels" not in ng.inputs and "taints" not in ng.inputs, ng.name
