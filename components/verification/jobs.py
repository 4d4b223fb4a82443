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

3. MPS groups only: ``…-mps-limit`` (after the concurrent Job, so N MPS clients have run at once
   on one GPU): one MPS client allocates half its share of GPU memory (must succeed) and 1.5
   shares (must fail with CUDA out-of-memory although the GPU has room): the memory limit holds.
4. Exclusive groups only (``timeSlicing.replicas: 1``): ``…-exclusive`` (after the concurrent
   Job): one pod per GPU of one node at the same time, each holding 60 % of its GPU's memory,
   which two pods sharing a GPU could not: every pod has a GPU of its own.

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


def image_for(plan: GroupPlan, image: str, image_arm64: str | None) -> str:
    """The vectorAdd image for the plan's CPU architecture: ``image_arm64`` on arm64 groups when
    set, else ``image`` (the default is multi-arch: config.addons.VerificationSettings)."""
    return image_arm64 if plan.architecture == "arm64" and image_arm64 else image


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
        plan.sharing_key: plan.sharing.model_dump(by_alias=True),
        "instanceTypes": list(plan.instance_types),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]
    return f"{prefix}-{plan.name}-{digest}"


# ---------------------------------------------------------------------------------------------
# MPS: the memory limit (a third Job for MPS groups, after the concurrent Job)
# ---------------------------------------------------------------------------------------------

#: The memory probe's image: the official Python image (Docker Official Images, mirrored on ECR
#: Public so nodes pull it without Docker Hub's anonymous rate limit), amd64 and arm64, ~50 MB.
#: The probe needs no CUDA toolkit: it calls the CUDA driver API (libcuda.so.1, cuMemAlloc_v2)
#: through ctypes, and the NVIDIA container runtime mounts libcuda into any container granted a
#: GPU with the ``compute`` driver capability.
MPS_PROBE_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"
#: The probe runs as the restricted profile's UID 65534 (podsecurity.py). The MPS control daemon
#: starts a server per client UID (setuid, then nvidia-cuda-mps-server), which must traverse
#: /run/nvidia to its pipe directory: non-root clients work where /run/nvidia is 0755 and fail
#: where it is 0700 (bottlerocket-os/bottlerocket#4673, fixed by bottlerocket-kernel-kit#415,
#: non-root MPS on a T4 verified there). On AL2023 no AMI file creates /run/nvidia
#: (awslabs/amazon-eks-ami templates/al2023 at 81fec2e8); the operator's hostPath volumes do,
#: DirectoryOrCreate, which kubelet creates 0755. Not run on a GPU here.
#: The probe's deadline: one node is already warm (the concurrent Job ran), one short pod.
MPS_LIMIT_DEADLINE_SECONDS = 300

#: Exit 0 only if this process is an MPS client (the device plugin set CUDA_MPS_PIPE_DIRECTORY,
#: internal/plugin/mps.go updateReponse), an allocation within its share succeeds and one above it
#: fails with CUDA_ERROR_OUT_OF_MEMORY (2). argv: bytes within, bytes above.
MPS_PROBE_PROGRAM = """
import ctypes, os, sys
within, above = int(sys.argv[1]), int(sys.argv[2])
if not os.environ.get("CUDA_MPS_PIPE_DIRECTORY"):
    sys.exit("not an MPS client: CUDA_MPS_PIPE_DIRECTORY is unset")
cuda = ctypes.CDLL("libcuda.so.1")
def check(what, rc):
    if rc != 0:
        sys.exit(f"{what} failed: CUresult {rc}")
check("cuInit", cuda.cuInit(0))
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(dev), 0))
check("cuCtxCreate", cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
def alloc(size):
    ptr = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size))
    if rc == 0:
        cuda.cuMemFree_v2(ptr)
    return rc
rc = alloc(within)
print(f"within the share: {within >> 20} MiB -> CUresult {rc}")
if rc != 0:
    sys.exit("an allocation within the share failed")
rc = alloc(above)
print(f"above the share: {above >> 20} MiB -> CUresult {rc}")
if rc != 2:
    sys.exit("an allocation above the share did not fail with CUDA_ERROR_OUT_OF_MEMORY: no MPS memory limit")
print("MPS memory limit enforced")
"""


def mps_probe_sizes(plan: GroupPlan) -> tuple[int, int]:
    """(bytes within, bytes above) one slot's share of GPU memory.

    Within: half the share, well below the limit the MPS daemon sets (NVML's total memory /
    replicas, a little under the nominal size). Above: 1.5 shares, which the GPU itself has
    room for (at most 0.75 of it with replicas >= 2), so only the MPS limit can refuse it.
    """
    share = plan.memory_per_slot_mib * 1024 * 1024
    return share // 2, share * 3 // 2


def mps_limit_job_spec(plan: GroupPlan, image: str = MPS_PROBE_IMAGE) -> dict[str, Any]:
    """One MPS client (one slot): within its memory share succeeds, above it fails."""
    within, above = mps_probe_sizes(plan)
    labels = {"app.kubernetes.io/name": f"mps-limit-{plan.name}"}
    pod = _pod_spec(plan, image, f'exec python3 -c "$MPS_PROBE" {within} {above}', None)
    container = pod["containers"][0]
    container["name"] = "mps-probe"
    container["env"] = [
        {"name": "MPS_PROBE", "value": MPS_PROBE_PROGRAM},
        # The runtime mounts libcuda for the `compute` capability: set here, so the probe does not
        # depend on the runtime's default for an image that is not built on CUDA.
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    return _job_spec(labels, 1, MPS_LIMIT_DEADLINE_SECONDS, pod)


# ---------------------------------------------------------------------------------------------
# Exclusive: one pod per GPU (a third Job for groups with timeSlicing.replicas 1)
# ---------------------------------------------------------------------------------------------

#: The share of a GPU's nominal memory each exclusive pod holds: more than half, so two pods on one
#: GPU cannot both hold it, and well under what the GPU reports (a T4 reports 15 of its 16 GiB).
EXCLUSIVE_HOLD_FRACTION = 0.6

#: Allocate argv[1] bytes of GPU memory (exit 1 if the GPU cannot give them) and hold them for
#: argv[2] seconds.
EXCLUSIVE_PROBE_PROGRAM = """
import ctypes, sys, time
size, hold = int(sys.argv[1]), int(sys.argv[2])
cuda = ctypes.CDLL("libcuda.so.1")
def check(what, rc):
    if rc != 0:
        sys.exit(f"{what} failed: CUresult {rc}")
check("cuInit", cuda.cuInit(0))
count, dev, ctx, ptr = ctypes.c_int(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
if count.value != 1:
    sys.exit(f"{count.value} GPUs visible, expected the 1 this pod requested")
check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(dev), 0))
check("cuCtxCreate", cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size))
if rc != 0:
    sys.exit(f"could not hold {size >> 20} MiB (CUresult {rc}): another pod uses this GPU")
print(f"holding {size >> 20} MiB of this pod's GPU for {hold} s")
time.sleep(hold)
"""


def exclusive_job_spec(plan: GroupPlan, image: str = MPS_PROBE_IMAGE) -> dict[str, Any]:
    """One pod per GPU of one node, at the same time, each holding 60 % of its GPU's memory.

    Two pods on one GPU cannot both hold more than half of it, so the Job completes only if every
    pod has a GPU of its own; the deadline (as for ``concurrent_job_spec``) makes the pods overlap.
    """
    size = int(plan.instance.gpu_memory_mib_per_gpu * EXCLUSIVE_HOLD_FRACTION) * 1024 * 1024
    labels = {"app.kubernetes.io/name": f"exclusive-check-{plan.name}"}
    same_node = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    pod = _pod_spec(plan, image, f'exec python3 -c "$GPU_PROBE" {size} {HOLD_SECONDS}', same_node)
    container = pod["containers"][0]
    container["name"] = "exclusive-probe"
    container["env"] = [
        {"name": "GPU_PROBE", "value": EXCLUSIVE_PROBE_PROGRAM},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    return _job_spec(labels, plan.gpus_per_node, CONCURRENT_DEADLINE_SECONDS, pod)
