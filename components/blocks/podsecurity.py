"""The Kubernetes ``restricted`` Pod Security Standard for every pod this library writes itself.

Every verification pod spec goes through :func:`restricted_pod_spec` (time-slicing Jobs today; any
other verification Job, e.g. per sharing mode or per GPU family, should build its plain pod spec and
pass it here too), and the verification namespace enforces the same level
(:data:`NAMESPACE_LABELS`), so the API server refuses a pod that missed it.

What ``restricted`` requires (kubernetes.io, "Pod Security Standards", Restricted; enforced by the
PodSecurity admission plugin, k8s.io/pod-security-admission/policy, ``check_runAsNonRoot``,
``check_allowPrivilegeEscalation``, ``check_capabilities_restricted``, ``check_seccompProfile_restricted``):
non-root, no privilege escalation, ``drop: [ALL]``, a ``RuntimeDefault`` (or Localhost) seccomp
profile. The rest is what checkov's Kubernetes checks also ask for (tests/test_pod_security.py):
no service-account token (the pods call no API), a read-only root filesystem, CPU and memory
requests and limits.

Why vectorAdd still reaches the GPU as UID 65534: the device plugin allocates the GPU and the NVIDIA
container runtime (the AMI's nvidia-container-toolkit) adds ``/dev/nvidia*`` to the container with
the host node's mode, and the NVIDIA driver creates those nodes ``0666`` ("The default mode is 0666
(octal, rw-rw-rw-)", NVIDIA open-gpu-kernel-modules ``kernel-open/nvidia/nv-reg.h``, option
``DeviceFileMode``): any UID may open them; no capability is needed to use a GPU. Not run on a GPU here.
"""

from __future__ import annotations

import copy
from typing import Any

#: The namespace of the verification pods enforces what the pods are built to meet.
POD_SECURITY_LEVEL = "restricted"
NAMESPACE_LABELS = {"pod-security.kubernetes.io/enforce": POD_SECURITY_LEVEL}

#: ``nobody``: a UID no image's files belong to. The sample only reads and executes its binary.
RUN_AS_UID = 65534

#: CPU and memory per verification container (the GPU share is added to the limits by the caller).
#: The requests are what the scheduler adds up: the concurrency Job puts every slot of one node on
#: it at once (up to max pods − 7: 22 on a g4dn.xlarge's 4 vCPUs, 51 on a g4dn.8xlarge, 730 on a
#: g4dn.metal's 96), so they stay small enough for any accepted configuration to schedule
#: (22 x 10m = 0.22 vCPU; 730 x 128 Mi = 91 GiB of 384). vectorAdd adds 3 x 50,000 floats and
#: sleeps between runs; the limits leave the CUDA context's start-up (CPU, host memory) room.
CPU_REQUEST = "10m"
CPU_LIMIT = "1"
MEMORY_REQUEST = "128Mi"
MEMORY_LIMIT = "1Gi"

#: A writable /tmp (and HOME) on a read-only root: the CUDA JIT cache and the shell may write there.
TMP_VOLUME = "tmp"
TMP_SIZE_LIMIT = "64Mi"


#: The verification pods talk to nobody (kubelet pulls the image, not the pod): a NetworkPolicy
#: selecting every pod of the namespace and allowing no ingress and no egress (checkov CKV2_K8S_6).
#: Enforced where the cluster runs a NetworkPolicy engine (the EKS VPC CNI's, when enabled).
DENY_ALL_NETWORK_POLICY_SPEC: dict[str, Any] = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def restricted_container(container: dict[str, Any]) -> dict[str, Any]:
    """``container`` with the restricted security context, CPU/memory requests and limits (kept
    beside its own limits, such as the GPU share), a writable ``/tmp`` and ``HOME=/tmp``."""
    out = copy.deepcopy(container)
    resources = out.setdefault("resources", {})
    resources["requests"] = {"cpu": CPU_REQUEST, "memory": MEMORY_REQUEST, **resources.get("requests", {})}
    resources["limits"] = {"cpu": CPU_LIMIT, "memory": MEMORY_LIMIT, **resources.get("limits", {})}
    out["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_UID,
        "runAsGroup": RUN_AS_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    out["volumeMounts"] = [*out.get("volumeMounts", []), {"name": TMP_VOLUME, "mountPath": "/tmp"}]
    out["env"] = [*out.get("env", []), {"name": "HOME", "value": "/tmp"}]
    return out


def restricted_pod_spec(pod_spec: dict[str, Any], tmp_size: str = TMP_SIZE_LIMIT) -> dict[str, Any]:
    """``pod_spec`` made to meet the restricted Pod Security Standard (a new dict; see the module doc);
    ``tmp_size``: the writable ``/tmp``'s limit (the NCCL check's processes write more there)."""
    out = copy.deepcopy(pod_spec)
    out["automountServiceAccountToken"] = False
    out["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_UID,
        "runAsGroup": RUN_AS_UID,
        "fsGroup": RUN_AS_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    out["containers"] = [restricted_container(c) for c in out["containers"]]
    out["volumes"] = [*out.get("volumes", []), {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": tmp_size}}]
    return out
