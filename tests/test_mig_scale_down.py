"""Cluster Autoscaler's scale-down of MIG nodes (issue 31 item 4), on the template node of
tests/test_autoscaler.py and a port of CA's eligibility check, both from kubernetes/autoscaler at
tag cluster-autoscaler-1.35.2:

* ``cloudprovider/aws/aws_manager.go`` ``GetAsgOptions``: per-ASG options from the tags
  ``k8s.io/cluster-autoscaler/node-template/autoscaling-options/<key>`` (keys in ``config/const.go``:
  ``scaledownutilizationthreshold``, ``ignoredaemonsetsutilization``, ...), else the flags' defaults
  (``--scale-down-utilization-threshold`` 0.5, ``--scale-down-gpu-utilization-threshold`` 0.5,
  ``--ignore-daemonsets-utilization`` false);
* ``utils/gpu/gpu.go`` ``GetNodeGPUFromCloudProvider``: a GPU config only for a node with the
  provider's GPU label (AWS: ``k8s.amazonaws.com/accelerator``), resource ``nvidia.com/gpu``;
* ``simulator/utilization/info.go`` ``Calculate``: with a GPU config, requested ``nvidia.com/gpu`` over
  allocatable; without, the larger of CPU and memory requests over allocatable, DaemonSet pods left
  out of both when ``ignoreDaemonSetsUtilization``;
* ``core/scaledown/eligibility/eligibility.go`` ``isNodeAtOrBelowUtilizationThreshold``: a node is a
  scale-down candidate iff its utilisation is at most the threshold (GPU threshold with a GPU config).
"""

from __future__ import annotations

from typing import Any

from components.check.loading import load_settings
from components.plan import asg
from components.plan.group import GroupPlan
from tests.support.standins.autoscaler import template_node

OPTIONS = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
DEFAULTS = {"scaledownutilizationthreshold": 0.5, "scaledowngpuutilizationthreshold": 0.5}


def plan_of(group: dict[str, Any]) -> GroupPlan:
    return load_settings({"clusterName": "c", "gpuNodeGroups": [group]}).plans[0]


def options(tags: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = dict(DEFAULTS, ignoredaemonsetsutilization=False)
    for key, value in tags.items():
        if key.startswith(OPTIONS):
            name = key.removeprefix(OPTIONS)
            out[name] = value == "true" if name == "ignoredaemonsetsutilization" else float(value)
    return out


def removable(tags: dict[str, str], instance_type: str, pods: list[dict[str, Any]]) -> bool:
    """Whether CA counts the node as under-used (a scale-down candidate) with these pods."""
    node = template_node(tags, instance_type)
    opts = options(tags)
    allocatable = node["capacity"]
    counted = [p for p in pods if not (p.get("daemonset") and opts["ignoredaemonsetsutilization"])]
    if "k8s.amazonaws.com/accelerator" in node["labels"]:
        utilization = sum(p["requests"].get("nvidia.com/gpu", 0) for p in counted) / allocatable["nvidia.com/gpu"]
        return utilization <= opts["scaledowngpuutilizationthreshold"]
    cpu = sum(p["requests"].get("cpu", 0) for p in counted) / allocatable["cpu"]
    memory = sum(p["requests"].get("memory", 0) for p in counted) / allocatable["memory"]
    return max(cpu, memory) <= opts["scaledownutilizationthreshold"]


#: The operator's DaemonSet pods on a GPU node (their requests, roughly the chart's).
DAEMONSETS = [{"daemonset": True, "requests": {"cpu": 0.1, "memory": 128 * 2**20}} for _ in range(8)]


def slice_pod(resource: str, cpu: float = 0.1, memory: int = 256 * 2**20) -> dict[str, Any]:
    return {"requests": {resource: 1, "cpu": cpu, "memory": memory}}


MIXED = {
    "name": "h100",
    "instanceTypes": ["p5.48xlarge"],
    "migStrategy": "mixed",
    "mig": {"migDevices": {"1g.10gb": 4, "3g.40gb": 1}},
    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
}


def test_a_mixed_mig_group_tags_its_asg_to_keep_busy_nodes():
    tags = asg.asg_tags(dict(plan_of(MIXED).node_template_tags), "c")
    assert {k: v for k, v in tags.items() if k.startswith(OPTIONS)} == {
        OPTIONS + "ignoredaemonsetsutilization": "true",
        OPTIONS + "scaledownutilizationthreshold": "0",
    }
    # No GPU label: CA finds no GPU on the node and judges CPU and memory.
    assert "k8s.amazonaws.com/accelerator" not in template_node(tags, "p5.48xlarge")["labels"]


def test_every_slice_busy_with_small_cpu_requests_keeps_the_node():
    tags = asg.asg_tags(dict(plan_of(MIXED).node_template_tags), "c")
    busy = DAEMONSETS + [slice_pod("nvidia.com/mig-1g.10gb") for _ in range(32)]
    busy += [slice_pod("nvidia.com/mig-3g.40gb") for _ in range(8)]
    assert not removable(tags, "p5.48xlarge", busy)
    # One slice in use is enough.
    assert not removable(tags, "p5.48xlarge", [*DAEMONSETS, slice_pod("nvidia.com/mig-3g.40gb")])
    # Without the options (CA's defaults) the same busy node is "under-used": 40 x 100m of 192 vCPUs.
    untagged = {k: v for k, v in tags.items() if not k.startswith(OPTIONS)}
    assert removable(untagged, "p5.48xlarge", busy)


def test_a_node_with_only_daemonset_pods_still_scales_down():
    tags = asg.asg_tags(dict(plan_of(MIXED).node_template_tags), "c")
    assert removable(tags, "p5.48xlarge", DAEMONSETS)
    assert removable(tags, "p5.48xlarge", [])


def test_a_slice_pod_without_cpu_or_memory_requests_is_not_seen():
    """The limit of the protection (docs/node-boot-stage.md): CA counts requests, so a pod holding a
    slice with no CPU or memory request leaves the node at 0 and removable."""
    tags = asg.asg_tags(dict(plan_of(MIXED).node_template_tags), "c")
    assert removable(tags, "p5.48xlarge", [*DAEMONSETS, slice_pod("nvidia.com/mig-1g.10gb", cpu=0, memory=0)])


def test_single_mig_and_whole_gpu_groups_are_judged_by_their_gpus_and_keep_cas_defaults():
    single = plan_of(
        {
            "name": "a100",
            "instanceTypes": ["p4d.24xlarge"],
            "migStrategy": "single",
            "mig": {"layout": "all-1g.5gb"},
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        }
    )
    tags = asg.asg_tags(dict(single.node_template_tags), "c")
    assert not [k for k in tags if k.startswith(OPTIONS)]
    # 56 slices as nvidia.com/gpu: judged by slices (GPU threshold 0.5).
    one = [{"requests": {"nvidia.com/gpu": 1, "cpu": 8}} for _ in range(28)]
    assert removable(tags, "p4d.24xlarge", DAEMONSETS + one)  # 28 of 56: at the threshold
    assert not removable(tags, "p4d.24xlarge", DAEMONSETS + one + one[:1])
    whole = asg.asg_tags(dict(plan_of({"name": "t4"}).node_template_tags), "c")
    assert not [k for k in whole if k.startswith(OPTIONS)]
