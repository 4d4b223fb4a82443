"""Optional time-slicing verification: two Jobs per GPU node group that make `pulumi up` fail
unless ONE node runs (physical GPUs x replicas) CUDA pods AT THE SAME TIME, then give the GPU back.

1. ``…-warmup`` (1 pod, 1 slot): asks for GPU capacity. On a group at zero nodes this is what
   makes the Cluster Autoscaler add a node; it waits for node boot, the operator's device plugin
   and the image pull, runs vectorAdd once and exits. Deadline: ``WARMUP_DEADLINE_SECONDS``.
2. ``…-concurrent`` (created after the warm-up Job completed): ``parallelism = completions =``
   the slots of one node, packed on one node by a required pod affinity. Each pod runs vectorAdd
   repeatedly for ``HOLD_SECONDS`` (its slot is held the whole time). ``activeDeadlineSeconds`` =
   ``HOLD_SECONDS + START_ALLOWANCE_SECONDS`` is shorter than ``2 x HOLD_SECONDS``: if the node
   advertised even one slot fewer, at least one pod could only start after another finished,
   the Job would pass its deadline, fail (``DeadlineExceeded``), and Pulumi fails the update.
   Pods that merely ran one after another cannot pass: required pod affinity alone would not
   force concurrency, the deadline does.

pulumi-kubernetes (v4) awaits a Job until its ``Complete`` condition and fails the update at
once on a ``Failed`` condition (batch/v1 Job docs); ``pulumi.com/timeoutSeconds`` bounds the wait.
Completed pods hold no GPU slot, so afterwards the Cluster Autoscaler can remove the node once it
has been unneeded for ``autoscaler.scaleDownUnneededTime``. The pods carry
``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` so no scale-down evicts them mid-check;
once they have finished the annotation blocks nothing: CA's drain rules declare terminal pods
drainable before the not-safe-to-evict check runs (simulator/drainability/rules/rules.go
``Default``, cluster-autoscaler-1.35.2).

Job names carry a hash of their spec: a sharing change (replicas, rename, profile, instance types)
gives new names, so Pulumi replaces the Jobs and the check runs again; an unchanged spec keeps
the completed Jobs and nothing runs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..autoscaler.values import SAFE_TO_EVICT_ANNOTATION
from ..sharing.plan import GroupPlan
from .podsecurity import restricted_pod_spec

#: How long each pod of the concurrent Job holds its slot, running vectorAdd in a loop.
HOLD_SECONDS = 180
#: Time for all pods of the concurrent Job to start on the warm node (scheduling, container start,
#: a vectorAdd image pull if they land on a node the warm-up did not use). Must stay < HOLD_SECONDS.
START_ALLOWANCE_SECONDS = 120
CONCURRENT_DEADLINE_SECONDS = HOLD_SECONDS + START_ALLOWANCE_SECONDS
#: The warm-up may wait for a node from zero: CA reaction, EC2 boot, node join, gpu-operator
#: device plugin, vectorAdd image pull.
WARMUP_DEADLINE_SECONDS = 1200
#: Pulumi's await bound per Job: its deadline plus a minute for the Job controller to report.
AWAIT_MARGIN_SECONDS = 60

#: Run vectorAdd once (CUDA works on this share) and exit.
VECTOR_ADD_ONCE = "/cuda-samples/vectorAdd"


def hold_script(seconds: int) -> str:
    """vectorAdd first (fail fast), then again every 5 s until ``seconds`` have passed."""
    return (
        f"set -e; {VECTOR_ADD_ONCE}; "
        f"end=$(( $(date +%s) + {seconds} )); "
        f'while [ "$(date +%s)" -lt "$end" ]; do {VECTOR_ADD_ONCE} >/dev/null; sleep 5; done'
    )


def _pod_spec(plan: GroupPlan, image: str, script: str, affinity: dict | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(plan.node_labels),
        "tolerations": [dict(t) for t in plan.tolerations],
        "containers": [
            {
                "name": "vectoradd",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c"],
                "args": [script],
                "resources": {"limits": {plan.resource_name: 1}},
            }
        ],
        "terminationGracePeriodSeconds": 5,
    }
    if affinity:
        spec["affinity"] = affinity
    # Every verification pod meets the restricted Pod Security Standard (podsecurity.py).
    return restricted_pod_spec(spec)


def _job_spec(labels: dict[str, str], pods: int, deadline: int, pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "parallelism": pods,
        "completions": pods,
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": {
            "metadata": {
                "labels": labels,
                "annotations": {SAFE_TO_EVICT_ANNOTATION: "false"},
            },
            "spec": pod_spec,
        },
    }


def warmup_job_spec(plan: GroupPlan, image: str) -> dict[str, Any]:
    """One pod asking for one slot: brings a node (from zero, through the autoscaler)."""
    labels = {"app.kubernetes.io/name": f"timeslicing-warmup-{plan.name}"}
    return _job_spec(labels, 1, WARMUP_DEADLINE_SECONDS, _pod_spec(plan, image, VECTOR_ADD_ONCE, None))


def concurrent_job_spec(plan: GroupPlan, image: str) -> dict[str, Any]:
    """All slots of one node, at the same time (see the module docstring for why it must be so)."""
    labels = {"app.kubernetes.io/name": f"timeslicing-check-{plan.name}"}
    same_node = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    pod = _pod_spec(plan, image, hold_script(HOLD_SECONDS), same_node)
    return _job_spec(labels, plan.slots_per_node, CONCURRENT_DEADLINE_SECONDS, pod)


def job_name(prefix: str, plan: GroupPlan, spec: dict[str, Any]) -> str:
    """``<prefix>-<group>-<8 hex>`` (at most 59 characters: Job names become label values, <= 63).

    The hash covers the Job spec and the group's sharing settings and instance types: any change
    to what is verified is a new Job (Job pod templates are immutable anyway).
    """
    content = {
        "spec": spec,
        "timeSlicing": plan.sharing.model_dump(by_alias=True),
        "instanceTypes": list(plan.instance_types),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]
    return f"{prefix}-{plan.name}-{digest}"
