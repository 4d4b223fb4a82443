"""Cluster Autoscaler's template node of a GPU group's ASG, and the scheduler's fit of a pod on it: how
CA decides that a group at zero nodes can take a pending pod.

Upstream behaviour encoded here (kubernetes/autoscaler, tag cluster-autoscaler-1.35.2,
cluster-autoscaler/cloudprovider/aws/aws_manager.go ``buildNodeFromTemplate``):
capacity from the instance type (``nvidia.com/gpu`` = physical GPUs), then every
``k8s.io/cluster-autoscaler/node-template/resources/<name>`` tag overrides/sets ``<name>``; labels
from ``node-template/label/<key>``; taints from ``node-template/taint/<key>`` whose value matches
``(.*):(NoSchedule|NoExecute|PreferNoSchedule)``, split at the first ``:`` into value and effect.
"""

from __future__ import annotations

import re
from typing import Any

from components.config.groups import Taint
from components.plan import placement
from tests.data.ca_instance_types import CA_INSTANCE_TYPES

_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")


def _quantity(value: str) -> int:
    """The Kubernetes quantities our tags use: a plain integer, or ``<n>Mi`` (bytes)."""
    return int(value[:-2]) * 2**20 if value.endswith("Mi") else int(value)


def template_node(tags: dict[str, str], instance_type: str) -> dict[str, Any]:
    """CA's template node of an ASG whose mixed instances policy lists ``instance_type`` first
    (aws_wrapper.go getInstanceTypesForAsgs: instanceTypesOverrides[0])."""
    # CA's instance list (tests/data/ca_instance_types.py, literals of ec2_instance_types.go): vCPUs,
    # memory in bytes, and the GPU count EC2 reports: 0 for the vGPU slices (g6f, gr6f).
    vcpus, memory_mib, gpus = CA_INSTANCE_TYPES[instance_type]
    capacity: dict[str, int] = {"cpu": vcpus, "memory": memory_mib * 2**20, "nvidia.com/gpu": gpus}
    labels: dict[str, str] = {"node.kubernetes.io/instance-type": instance_type}
    taints: list[Taint] = []
    for key, value in tags.items():
        if key.startswith("k8s.io/cluster-autoscaler/node-template/resources/"):
            capacity[key.split("k8s.io/cluster-autoscaler/node-template/resources/")[1]] = _quantity(value)
        if key.startswith("k8s.io/cluster-autoscaler/node-template/label/"):
            labels[key.split("k8s.io/cluster-autoscaler/node-template/label/")[1]] = value
        if key.startswith("k8s.io/cluster-autoscaler/node-template/taint/") and _TAINT_VALUE.match(value):
            taint_value, effect = value.split(":", 1)
            taints.append(
                Taint(
                    key=key.split("k8s.io/cluster-autoscaler/node-template/taint/")[1], value=taint_value, effect=effect
                )
            )
    return {"labels": labels, "taints": taints, "capacity": capacity}


def fits(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    """The scheduler's NodeSelector, TaintToleration (NoSchedule/NoExecute) and resource fit."""
    if any(node["labels"].get(k) != v for k, v in pod["nodeSelector"].items()):
        return False
    for taint in node["taints"]:
        if taint.effect != "PreferNoSchedule" and not any(
            placement.tolerates(t, taint) for t in pod.get("tolerations", [])
        ):
            return False
    return all(node["capacity"].get(name, 0) >= amount for name, amount in pod["requests"].items())


def pod_from_outputs(outputs: dict[str, Any], slots: int = 1, tolerate: bool = True) -> dict[str, Any]:
    return {
        "nodeSelector": outputs["nodeSelector"],
        "tolerations": outputs["tolerations"] if tolerate else [],
        "requests": {outputs["resourceName"]: slots},
    }
