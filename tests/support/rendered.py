"""What a run or a plan declared, read back the way its consumer reads it: the kubelet flags of a
group's NodeConfig (nodeadm), the labels and taints kubelet registers a node with, a group's ASG tags
(Cluster Autoscaler)."""

from __future__ import annotations

import base64

import yaml

from components.config.groups import Taint
from components.plan import userdata
from tests.support.tokens import ASG_TAG, LAUNCH_TEMPLATE
from tooling.simulation import Simulation


def kubelet_flags_in(user_data: str) -> list[str]:
    """The kubelet flags of the one NodeConfig in base64 MIME user data."""
    (content_type, body), (script_type, _) = userdata.parse_mime(base64.b64decode(user_data).decode())
    # Then the boot stage's cloud-init part (plan/boot.py; tests/test_boot_stage.py).
    assert (content_type, script_type) == ("application/node.eks.aws", "text/x-shellscript")
    doc = yaml.safe_load(body)
    assert (doc["apiVersion"], doc["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    return doc["spec"]["kubelet"]["flags"]


def nodeconfig_of(sim: Simulation, group: str) -> tuple[dict[str, str], list[Taint]]:
    """Labels and taints from the group's launch template user data, parsed back from kubelet flags."""
    mime = base64.b64decode(sim.one(LAUNCH_TEMPLATE, f"gpu-eks-{group}-lt").inputs["userData"]).decode()
    (_, body), _boot = userdata.parse_mime(mime)
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    for flag in yaml.safe_load(body)["spec"]["kubelet"]["flags"]:
        name, _, value = flag.partition("=")
        if name == "--node-labels":
            labels.update(kv.split("=", 1) for kv in value.split(","))
        elif name == "--register-with-taints":
            for t in value.split(","):
                kv, effect = t.rsplit(":", 1)
                key, _, val = kv.partition("=")
                taints.append(Taint(key=key, value=val, effect=effect))
    return labels, taints


def asg_tags_of(sim: Simulation, group: str) -> dict[str, str]:
    prefix = f"gpu-eks-{group}-asg-tag-"
    tags = [r for r in sim.by_type(ASG_TAG) if r.name.startswith(prefix)]
    for r in tags:
        assert r.inputs["autoscalingGroupName"] == f"eks-gpu-eks-{group}-00000000-0000-0000-0000-000000000000"
        assert r.inputs["tag"]["propagateAtLaunch"] is False
    return {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in tags}
