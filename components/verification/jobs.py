"""The verification Jobs' specs, as plain dicts: per GPU node group a warm-up Job (one pod, one slot:
it brings a node), then the concurrent Job (every slot of one node at once; on MPS groups each pod
an MPS client proving its memory limit, ``MPS_PROBE_PROGRAM``), on exclusive groups one pod per GPU
(``exclusive_job_spec``), and the isolation Job. What each proves and how long it holds a GPU:
docs/cluster-autoscaler.md ("The verification proves concurrency"), docs/sharing.md (MPS, exclusive,
MIG: ``mig.py``), docs/node-boot-stage.md (isolation).

The concurrent Job proves concurrency by its deadline, not by its affinity (which only packs its
pods on one node): ``CONCURRENT_DEADLINE_SECONDS`` < 2 x ``HOLD_SECONDS``, so with one slot fewer a
pod could start only after another's hold, past the deadline, and the Job fails. The MPS probe runs in
that Job, which owns every slot of its node, because the MPS control daemon serves one client user ID
at a time (NVIDIA MPS documentation, "Multi-user"): a probe beside other users' clients would queue.

pulumi-kubernetes (v4) awaits a Job until its ``Complete`` condition and fails the update at once on
``Failed`` (``pulumi.com/timeoutSeconds`` bounds the wait). The pods carry
``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``; finished, they block no scale-down: CA's
drain rules declare terminal pods drainable before that check (simulator/drainability/rules/rules.go
``Default``, cluster-autoscaler-1.35.2). Job names carry a hash of their spec (``job_name``): a changed
check gets new Jobs, an unchanged one keeps its completed Jobs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..blocks.podsecurity import restricted_pod_spec
from ..catalog.cluster_autoscaler import SAFE_TO_EVICT_ANNOTATION
from ..plan.group import GroupPlan

#: How long each pod of the concurrent Job holds its slot, running vectorAdd in a loop.
HOLD_SECONDS = 180
#: Time for all pods of the concurrent Job to start on the warm node (scheduling, container start,
#: an image pull: vectorAdd if they land on a node the warm-up did not use, and on MPS groups the
#: probe image, which the warm-up does not pull: ~50 MB for the default). Must stay < HOLD_SECONDS.
START_ALLOWANCE_SECONDS = 120
CONCURRENT_DEADLINE_SECONDS = HOLD_SECONDS + START_ALLOWANCE_SECONDS
#: The warm-up may wait for a node from zero: CA reaction, EC2 boot, node join, gpu-operator
#: device plugin, vectorAdd image pull.
WARMUP_DEADLINE_SECONDS = 1200

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


def _pod_spec(
    plan: GroupPlan,
    image: str,
    script: str,
    affinity: dict | None,
    container: str = "vectoradd",
    env: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(plan.node_labels),
        "tolerations": [dict(t) for t in plan.tolerations],
        "containers": [
            {
                "name": container,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c"],
                "args": [script],
                **({"env": env} if env else {}),
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
    """One pod asking for one slot: brings a node (from zero, through the autoscaler or Karpenter).

    On a MIG group nothing waits for a label: the boot stage cuts the slices before kubelet starts
    (plan/boot.py), so the device plugin never advertises the node's GPUs whole, and a node whose
    layout failed registers tainted and advertises nothing."""
    labels = {"app.kubernetes.io/name": f"timeslicing-warmup-{plan.name}"}
    return _job_spec(labels, 1, WARMUP_DEADLINE_SECONDS, _pod_spec(plan, image, VECTOR_ADD_ONCE, None))


#: The isolation check: a pod that requests no GPU but sets NVIDIA_VISIBLE_DEVICES=all (as most CUDA
#: images do) must see no GPU: no ``/dev/nvidia*`` device node, no GPU in ``nvidia-smi -L``.
ISOLATION_SCRIPT = (
    "if ls /dev/nvidia* >/dev/null 2>&1; then echo 'GPU device nodes visible without a GPU request:'; "
    "ls -l /dev/nvidia*; exit 1; fi; "
    "if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then echo 'nvidia-smi lists GPUs without a GPU request:'; "
    "nvidia-smi -L; exit 1; fi; "
    "echo 'no GPU visible to a pod without a GPU request: the toolkit ignores NVIDIA_VISIBLE_DEVICES'"
)


def isolation_job_spec(plan: GroupPlan, image: str) -> dict[str, Any]:
    """One pod on a node of the group (after the warm-up brought one) with no GPU request and
    ``NVIDIA_VISIBLE_DEVICES=all``: it fails if it sees a GPU. The boot stage set the host toolkit
    to refuse the variable from unprivileged containers (plan/boot.py); without that, the
    runtime would hand this pod every GPU of the node."""
    labels = {"app.kubernetes.io/name": f"isolation-check-{plan.name}"}
    env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}, {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"}]
    pod = _pod_spec(plan, image, ISOLATION_SCRIPT, None, "isolation", env)
    # CPU and memory as every verification pod (podsecurity.py), and no GPU resource at all.
    limits = pod["containers"][0]["resources"]["limits"]
    pod["containers"][0]["resources"]["limits"] = {
        k: v for k, v in limits.items() if k not in plan.advertised_resources
    }
    return _job_spec(labels, 1, CONCURRENT_DEADLINE_SECONDS, pod)


def _same_node(labels: dict[str, str]) -> dict[str, Any]:
    """A required pod affinity that packs the Job's pods on one node."""
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def concurrent_job_spec(plan: GroupPlan, image: str, probe_image: str) -> dict[str, Any]:
    """All slots of one node, at the same time (see the module docstring for why it must be so).

    ``image`` runs vectorAdd in a loop; on MPS groups every pod runs the memory probe from
    ``probe_image`` instead (``mps_probe_pod``).
    """
    labels = {"app.kubernetes.io/name": f"timeslicing-check-{plan.name}"}
    if plan.sharing_mode == "mps":
        pod = mps_probe_pod(plan, probe_image, _same_node(labels))
    else:
        pod = _pod_spec(plan, image, hold_script(HOLD_SECONDS), _same_node(labels))
    return _job_spec(labels, plan.slots_per_node, CONCURRENT_DEADLINE_SECONDS, pod)


def job_name(prefix: str, plan: GroupPlan, spec: dict[str, Any]) -> str:
    """``<prefix>-<group>-<8 hex>`` (at most 59 characters: Job names become label values, <= 63).

    The hash covers the Job spec and the group's sharing settings and instance types: any change
    to what is verified is a new Job (Job pod templates are immutable anyway).
    """
    sharing = plan.settings.mig if plan.settings.mig is not None else plan.sharing
    content = {
        "spec": spec,
        plan.sharing_key: sharing.model_dump(by_alias=True),
        "instanceTypes": list(plan.instance_types),
    }
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]
    return f"{prefix}-{plan.name}-{digest}"


def isolation_job_name(plan: GroupPlan, spec: dict[str, Any]) -> str:
    """``isolation-<group>-<8 hex>`` from the Job spec alone: a sharing change (which changes nothing
    the isolation check does) keeps the completed Job."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]
    return f"isolation-{plan.name}-{digest}"


# ---------------------------------------------------------------------------------------------
# MPS: N clients at once, each with its memory limit (the pods of the concurrent Job)
# ---------------------------------------------------------------------------------------------

#: The probes run as the restricted profile's UID 65534 (podsecurity.py). The MPS control daemon
#: starts a server per client UID (setuid, then nvidia-cuda-mps-server), which must traverse
#: /run/nvidia to its pipe directory: non-root clients work where /run/nvidia is 0755 and fail
#: where it is 0700 (bottlerocket-os/bottlerocket#4673, fixed by bottlerocket-kernel-kit#415,
#: non-root MPS on a T4 verified there). On AL2023 no AMI file creates /run/nvidia
#: (awslabs/amazon-eks-ami templates/al2023 at 81fec2e8); the operator's hostPath volumes do,
#: DirectoryOrCreate, which kubelet creates 0755. Not run on a GPU here.
#: The probe image (``verification.probeImage``) needs no CUDA toolkit: the probes call the CUDA
#: driver API (libcuda.so.1) through ctypes, and the NVIDIA container runtime mounts libcuda into
#: any container granted a GPU with the ``compute`` driver capability (set in ``_probe_env``).

#: The CUDA start of every probe (MPS, exclusive, MIG): load the driver API, ``check`` (exit with the
#: failing call and its CUresult), initialise it, and create a context on the pod's first device
#: (``dev``, ``ctx``). The probe imports ctypes and sys before it.
CUDA_PREAMBLE = """
cuda = ctypes.CDLL("libcuda.so.1")
def check(what, rc):
    if rc != 0:
        sys.exit(f"{what} failed: CUresult {rc}")
check("cuInit", cuda.cuInit(0))
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(dev), 0))
check("cuCtxCreate", cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
"""

#: Exit 0 only if this process is an MPS client (the device plugin set CUDA_MPS_PIPE_DIRECTORY,
#: internal/plugin/mps.go updateReponse), an allocation above its share fails with
#: CUDA_ERROR_OUT_OF_MEMORY (2) and one within it succeeds; then hold that memory and the slot.
#: argv: bytes above, bytes within, seconds to hold. Above comes first, before this client holds
#: anything, so the other clients' holdings (a quarter share each) leave the GPU room for it.
MPS_PROBE_PROGRAM = (
    """
import ctypes, os, sys, time
above, within, hold = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if not os.environ.get("CUDA_MPS_PIPE_DIRECTORY"):
    sys.exit("not an MPS client: CUDA_MPS_PIPE_DIRECTORY is unset")"""
    + CUDA_PREAMBLE
    + """def alloc(size):
    ptr = ctypes.c_uint64()
    return cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), ptr
rc, ptr = alloc(above)
print(f"above the share: {above >> 20} MiB -> CUresult {rc}")
if rc == 0:
    cuda.cuMemFree_v2(ptr)
if rc != 2:
    sys.exit("an allocation above the share did not fail with CUDA_ERROR_OUT_OF_MEMORY: no MPS memory limit")
rc, ptr = alloc(within)
print(f"within the share: {within >> 20} MiB -> CUresult {rc}")
if rc != 0:
    sys.exit("an allocation within the share failed")
print(f"MPS memory limit enforced; holding {within >> 20} MiB and the slot for {hold} s")
time.sleep(hold)
"""
)


def mps_probe_sizes(plan: GroupPlan) -> tuple[int, int]:
    """(bytes above, bytes within) one slot's share of GPU memory.

    Above: 1.5 shares. The MPS daemon limits each client to the GPU's memory / replicas; with
    replicas >= 2 the GPU itself has room for 1.5 shares even while every other client holds its
    quarter share, so only the MPS limit can refuse it. Within: a quarter share, held.
    """
    share = plan.memory_per_slot_mib * 1024 * 1024
    return share * 3 // 2, share // 4


def _probe_env(name: str, program: str) -> list[dict[str, str]]:
    return [
        {"name": name, "value": program},
        # The runtime mounts libcuda for the `compute` capability: set here, so the probe does not
        # depend on the runtime's default for an image that is not built on CUDA.
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]


def mps_probe_pod(plan: GroupPlan, image: str, affinity: dict[str, Any]) -> dict[str, Any]:
    """The concurrent Job's pod on an MPS group: one MPS client proving its limit, then holding."""
    above, within = mps_probe_sizes(plan)
    script = f'exec python3 -c "$MPS_PROBE" {above} {within} {HOLD_SECONDS}'
    return _pod_spec(plan, image, script, affinity, "mps-probe", _probe_env("MPS_PROBE", MPS_PROBE_PROGRAM))


# ---------------------------------------------------------------------------------------------
# Exclusive: one pod per GPU (a third Job for groups with timeSlicing.replicas 1)
# ---------------------------------------------------------------------------------------------

#: The share of a GPU's driver-reported memory each exclusive pod holds: more than half, so two
#: pods on one GPU cannot both hold it, and well under the whole (contexts take some).
EXCLUSIVE_HOLD_FRACTION = 0.6

#: Allocate argv[1] bytes of GPU memory (exit 1 if the GPU cannot give them) and hold them for
#: argv[2] seconds.
EXCLUSIVE_PROBE_PROGRAM = (
    """
import ctypes, sys, time
size, hold = int(sys.argv[1]), int(sys.argv[2])"""
    + CUDA_PREAMBLE
    + """count, ptr = ctypes.c_int(), ctypes.c_uint64()
check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
if count.value != 1:
    sys.exit(f"{count.value} GPUs visible, expected the 1 this pod requested")
rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size))
if rc != 0:
    sys.exit(f"could not hold {size >> 20} MiB (CUresult {rc}): another pod uses this GPU")
print(f"holding {size >> 20} MiB of this pod's GPU for {hold} s")
time.sleep(hold)
"""
)


def exclusive_job_spec(plan: GroupPlan, image: str) -> dict[str, Any]:
    """One pod per GPU of one node, at the same time, each holding 60 % of its GPU's memory.

    Two pods on one GPU cannot both hold more than half of it, so the Job completes only if every
    pod has a GPU of its own; the deadline (as for ``concurrent_job_spec``) makes the pods overlap.
    """
    size = int(plan.instance.driver_memory_mib_per_gpu * EXCLUSIVE_HOLD_FRACTION) * 1024 * 1024
    labels = {"app.kubernetes.io/name": f"exclusive-check-{plan.name}"}
    script = f'exec python3 -c "$GPU_PROBE" {size} {HOLD_SECONDS}'
    env = _probe_env("GPU_PROBE", EXCLUSIVE_PROBE_PROGRAM)
    pod = _pod_spec(plan, image, script, _same_node(labels), "exclusive-probe", env)
    return _job_spec(labels, plan.gpus_per_node, CONCURRENT_DEADLINE_SECONDS, pod)
