"""Karpenter serves each group's pending verification pods from zero nodes with the right number of
nodes (issue 26): a simulation of Karpenter's provisioning rules (tests/support/standins/karpenter.py)
fed with the library's NodePool and NodeOverlay and the verification Jobs' own pods, with and
without the controller's nodeOverlay feature gate. Literal expectations."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.check.loading import load_settings
from components.config.groups import GpuNodeGroupSettings
from components.plan.group import plan_group
from components.verification import jobs
from tests.support.paths import ROOT
from tests.support.standins.karpenter import job_pods, provision, workload_pods


def example_plans() -> dict[str, Any]:
    config = yaml.safe_load((ROOT / "examples" / "Pulumi.karpenter.yaml").read_text())["config"]
    raw = {k.removeprefix("gpu-eks:"): v for k, v in config.items() if k.startswith("gpu-eks:")}
    return {p.name: p for p in load_settings(raw).plans}


def plan(**group: Any):
    zero = {"minSize": 0, "desiredSize": 0, "maxSize": 4}
    return plan_group(
        GpuNodeGroupSettings.model_validate({"name": "g", "capacityProvider": "karpenter", "scaling": zero, **group})
    )


def verification(p, gate: bool) -> tuple[list[int], int, list[int], int]:
    """(pods per node, pending) of the warm-up Job, then of the concurrent Job, each from zero."""
    warmup = provision(p, job_pods(jobs.warmup_job_spec(p, "cuda")), gate=gate)
    concurrent = provision(p, job_pods(jobs.concurrent_job_spec(p, "cuda", "probe")), gate=gate)
    return warmup.pods_per_node, len(warmup.pending), concurrent.pods_per_node, len(concurrent.pending)


@pytest.mark.parametrize(
    ("group", "with_gate", "without_gate"),
    [
        # Time-sliced L4, 4 slots: one node runs all four pods. Without the gate Karpenter counts
        # one GPU: the concurrent Job's pods are bound to the first pod's node, which it thinks
        # full, so three stay pending and the Job misses its deadline.
        ("l4-shared", ([1], 0, [4], 0), ([1], 0, [1], 3)),
        # MPS L40S, 2 clients.
        ("l40s-mps", ([1], 0, [2], 0), ([1], 0, [1], 1)),
        # A g6f slice: EC2 reports 0 GPUs; without its overlay Karpenter launches nothing at all.
        ("l4-eighth", ([1], 0, [1], 0), ([], 1, [], 1)),
    ],
)
def test_each_example_groups_verification_pods_from_zero(group, with_gate, without_gate):
    p = example_plans()[group]
    assert verification(p, gate=True) == with_gate
    assert verification(p, gate=False) == without_gate


def test_a_renamed_resource_gets_no_node_without_the_gate():
    p = plan(timeSlicing={"replicas": 4, "renameByDefault": True})
    assert verification(p, gate=True) == ([1], 0, [4], 0)
    # No instance type has nvidia.com/gpu.shared until the overlay states it.
    assert verification(p, gate=False) == ([], 1, [], 4)


def test_whole_gpus_need_no_overlay():
    p = plan(instanceTypes=["p5.48xlarge"], timeSlicing={"replicas": 1})
    assert verification(p, gate=True) == verification(p, gate=False) == ([1], 0, [8], 0)


def test_workloads_are_packed_by_slots_not_by_gpus():
    p = plan(instanceTypes=["g6.12xlarge"], timeSlicing={"replicas": 2})  # 4 L4s x 2 = 8 slots
    # 16 independent one-slot pods: 2 nodes with the overlay; 4 nodes (the limit) without it.
    assert provision(p, workload_pods(p, 16), gate=True).pods_per_node == [8, 8]
    without = provision(p, workload_pods(p, 16), gate=False)
    assert (without.pods_per_node, len(without.pending)) == ([4, 4, 4, 4], 0)
    # One slot per GPU as Karpenter sees it, so 8 pods on 1-GPU nodes take 8 nodes, past maxSize 4.
    single = plan(timeSlicing={"replicas": 4})
    over = provision(single, workload_pods(single, 8), gate=False)
    assert (over.pods_per_node, len(over.pending)) == ([1, 1, 1, 1], 4)
    assert provision(single, workload_pods(single, 8), gate=True).pods_per_node == [4, 4]


def test_the_node_limit_and_the_taint_hold():
    p = plan(timeSlicing={"replicas": 4})
    capped = provision(p, workload_pods(p, 20), gate=True)
    assert (capped.pods_per_node, len(capped.pending)) == ([4, 4, 4, 4], 4)
    # A pod without the group's toleration is never placed on its NodePool.
    untolerating = workload_pods(p, 1)
    untolerating[0]["spec"] = {**untolerating[0]["spec"], "tolerations": []}
    assert len(provision(p, untolerating, gate=True).pending) == 1
    # Nor one whose selector names another group.
    elsewhere = workload_pods(p, 1)
    elsewhere[0]["spec"] = {**elsewhere[0]["spec"], "nodeSelector": {"gpu-eks.io/node-group": "other"}}
    assert len(provision(p, elsewhere, gate=True).pending) == 1


def test_a_pod_that_waits_for_a_label_its_node_pool_does_not_give_gets_no_node():
    # A required node affinity on a label the NodePool does not define is incompatible with it
    # (kubernetes-sigs/karpenter v1.14.0 pkg/scheduling/requirements.go Compatible: "label ... does
    # not have known values"), as mig-manager's success label, which comes only after the node joins,
    # would be. No verification pod waits for a label (the boot stage cuts the slices before kubelet,
    # plan/boot.py): a MIG group's warm-up brings the node from zero; one that waited would not.
    p = plan(instanceTypes=["p5.48xlarge"], migStrategy="mixed", mig={"migDevices": {"1g.10gb": 7}})
    warmup = provision(p, job_pods(jobs.warmup_job_spec(p, "cuda")), gate=True)
    assert (warmup.pods_per_node, len(warmup.pending)) == ([1], 0)
    waiting = job_pods(jobs.warmup_job_spec(p, "cuda"))
    waiting[0]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/mig.config.state", "operator": "In", "values": ["success"]}
                        ]
                    }
                ]
            }
        }
    }
    pending = provision(p, waiting, gate=True)
    assert (pending.pods_per_node, len(pending.pending)) == ([], 1)
