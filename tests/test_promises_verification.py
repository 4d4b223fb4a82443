"""Promises about the time-slicing verification (which groups get its two Jobs, their pod counts,
deadlines, placement, tolerations, the resource they request) and the stack outputs. Literal
expectations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.data.promised import (
    ACCELERATOR,
    CLUSTER_NAME,
    DEDICATED_TOLERATION,
    DEFAULT_REPAIR_POLICY,
    GPU_GROUPS,
    GPU_TAINT_TOLERATION,
    PROFILE,
    RUNS,
    VERIFIED_GROUPS,
)
from tests.data.samples import DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Simulation

JOB = "kubernetes:batch/v1:Job"
NAMESPACE = "kubernetes:core/v1:Namespace"

VERIFY_NAMESPACE = {"dev": "gpu-timeslicing-check", VARIANT: "gpu-check"}
IMAGE = {
    "dev": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
    VARIANT: "registry.example.com/cuda-sample:vectoradd",
}
#: Labels selecting each group's nodes (node selector, and the stack output).
NODE_SELECTOR = {
    "dev": {
        "t4": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "t4",
            "k8s.amazonaws.com/accelerator": ACCELERATOR,
            "nvidia.com/device-plugin.config": PROFILE["dev"]["t4"],
        }
    },
    "prod": {
        "t4": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "t4",
            "k8s.amazonaws.com/accelerator": ACCELERATOR,
            "nvidia.com/device-plugin.config": PROFILE["prod"]["t4"],
        }
    },
    VARIANT: {
        "big": {
            "gpu-eks.io/gpu-count": "4",
            "gpu-eks.io/node-group": "big",
            "k8s.amazonaws.com/accelerator": ACCELERATOR,
            "nvidia.com/device-plugin.config": PROFILE[VARIANT]["big"],
            "team.example.com/owner": "ml",
        },
        "idle": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "idle",
            "k8s.amazonaws.com/accelerator": ACCELERATOR,
            "nvidia.com/device-plugin.config": PROFILE[VARIANT]["idle"],
        },
    },
    DEFAULTS: {
        "gpu": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "gpu",
            "k8s.amazonaws.com/accelerator": ACCELERATOR,
            "nvidia.com/device-plugin.config": PROFILE[DEFAULTS]["gpu"],
        }
    },
}
TOLERATIONS = {
    "dev": {"t4": [GPU_TAINT_TOLERATION]},
    "prod": {"t4": [GPU_TAINT_TOLERATION]},
    VARIANT: {"big": [GPU_TAINT_TOLERATION, DEDICATED_TOLERATION], "idle": [GPU_TAINT_TOLERATION]},
    DEFAULTS: {"gpu": [GPU_TAINT_TOLERATION]},
}
#: (physical GPUs per node, advertised per node, resource name) per group.
CAPACITY = {
    "dev": {"t4": (1, 4, "nvidia.com/gpu")},
    "prod": {"t4": (1, 4, "nvidia.com/gpu")},
    VARIANT: {"big": (4, 8, "nvidia.com/gpu.shared"), "idle": (1, 8, "nvidia.com/gpu")},
    DEFAULTS: {"gpu": (1, 4, "nvidia.com/gpu")},
}


#: (sharing mode, GPU memory per slot in GiB: 16 GiB T4 / replicas).
SHARING = {  # a T4 reports 15,360 MiB to the driver: 15,360 / replicas, in GiB
    "dev": {"t4": ("timeSlicing", 3.75)},
    "prod": {"t4": ("timeSlicing", 3.75)},
    VARIANT: {"big": ("timeSlicing", 7.5), "idle": ("timeSlicing", 1.88)},
    DEFAULTS: {"gpu": ("timeSlicing", 3.75)},
}


#: (physical GPUs at maxSize x replicas): the group's shared slots when fully scaled out.
SLOTS_AT_MAX_SIZE = {
    "dev": {"t4": 4},
    "prod": {"t4": 24},
    VARIANT: {"big": 24, "idle": 16},
    DEFAULTS: {"gpu": 8},
}
#: Job names: `ts-warmup-<group>-<hash>` / `ts-check-<group>-<hash>`, the hash of what is verified
#: (a sharing change is a new Job, so the check runs again).
JOB_NAMES = {
    # Changed in 0.2.0 with the restricted pod security context: new Jobs, the check runs once more.
    "dev": {"t4": ("ts-warmup-t4-3d8fde30", "ts-check-t4-ee28b0f5")},
    VARIANT: {"big": ("ts-warmup-big-a2bd8957", "ts-check-big-f436a59f")},
}
#: Each pod of the concurrency Job holds its slot this long (vectorAdd in a loop).
HOLD_SCRIPT = (
    "set -e; /cuda-samples/vectorAdd; end=$(( $(date +%s) + 180 )); "
    'while [ "$(date +%s)" -lt "$end" ]; do /cuda-samples/vectorAdd >/dev/null; sleep 5; done'
)


def job_inputs(run: str, group: str, kind: str) -> dict[str, Any]:
    """kind "warmup": one pod, once, with 1200 s to get a node (from zero through the autoscaler).
    kind "concurrent": every slot of one node at once (required pod affinity on the hostname),
    each held 180 s, with a 300 s deadline: shorter than two holds, so pods that could only run
    one after another fail the Job."""
    warmup = kind == "warmup"
    app = f"timeslicing-{'warmup' if warmup else 'check'}-{group}"
    labels = {"app.kubernetes.io/name": app}
    _, advertised, resource = CAPACITY[run][group]
    pods = 1 if warmup else advertised
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": NODE_SELECTOR[run][group],
        "tolerations": TOLERATIONS[run][group],
        "containers": [
            {
                "name": "vectoradd",
                "image": IMAGE[run],
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c"],
                "args": ["/cuda-samples/vectorAdd" if warmup else HOLD_SCRIPT],
                # CPU and memory too (checkov CKV_K8S_10..13); the GPU share beside them.
                "resources": {
                    "requests": {"cpu": "10m", "memory": "128Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi", resource: 1},
                },
                # The restricted Pod Security Standard, container level.
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "privileged": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "runAsUser": 65534,
                    "runAsGroup": 65534,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                "env": [{"name": "HOME", "value": "/tmp"}],
            }
        ],
        "terminationGracePeriodSeconds": 5,
        # The pods call no Kubernetes API: no token mounted.
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "fsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
    }
    if not warmup:
        pod["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": JOB_NAMES[run][group][0 if warmup else 1],
            "namespace": VERIFY_NAMESPACE[run],
            # Pulumi's await bound: the Job's deadline plus a minute.
            "annotations": {"pulumi.com/timeoutSeconds": "1260" if warmup else "360"},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "activeDeadlineSeconds": 1200 if warmup else 300,
            "template": {
                "metadata": {
                    "labels": labels,
                    # No scale-down evicts a pod mid-check.
                    "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
                },
                "spec": pod,
            },
        },
    }


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


# --- Verification -------------------------------------------------------------------------------


def test_which_groups_get_a_verification(run: tuple[str, Simulation]):
    """A warm-up and a concurrency Job per GPU group that can get a node; none with
    verification.enabled off (prod, defaults), none for a group at desiredSize 0 without an
    autoscaler (variant's "idle": waiting would only time out). dev's t4 is at desiredSize 0 with
    an autoscaler: verified, its warm-up Job brings the node."""
    name, sim = run
    assert [j.name for j in sim.by_type(JOB)] == [
        f"gpu-eks-verify-{g}-{kind}" for g in VERIFIED_GROUPS[name] for kind in ("warmup", "isolation", "concurrent")
    ]


def test_verification_namespace(run: tuple[str, Simulation]):
    name, sim = run
    namespaces = [n for n in sim.by_type(NAMESPACE) if n.name == "gpu-eks-verify-ns"]
    if not VERIFIED_GROUPS[name]:
        assert namespaces == []
        return
    (ns,) = namespaces
    assert ns.inputs == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": VERIFY_NAMESPACE[name], "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
    }


def test_verification_warmup_job_inputs(run: tuple[str, Simulation]):
    name, sim = run
    for group in VERIFIED_GROUPS[name]:
        assert sim.one(JOB, f"gpu-eks-verify-{group}-warmup").inputs == job_inputs(name, group, "warmup")


def test_verification_concurrent_job_inputs(run: tuple[str, Simulation]):
    name, sim = run
    for group in VERIFIED_GROUPS[name]:
        assert sim.one(JOB, f"gpu-eks-verify-{group}-concurrent").inputs == job_inputs(name, group, "concurrent")


def job_spec(sim: Simulation, group: str, kind: str) -> dict[str, Any]:
    return sim.one(JOB, f"gpu-eks-verify-{group}-{kind}").inputs["spec"]


def test_concurrent_job_runs_one_nodes_advertised_gpus_at_once(run: tuple[str, Simulation]):
    name, sim = run
    counts = {
        g: (job_spec(sim, g, "concurrent")["parallelism"], job_spec(sim, g, "concurrent")["completions"])
        for g in VERIFIED_GROUPS[name]
    }
    assert counts == {"dev": {"t4": (4, 4)}, "prod": {}, VARIANT: {"big": (8, 8)}, DEFAULTS: {}}[name]


def test_warmup_job_is_one_pod(run: tuple[str, Simulation]):
    name, sim = run
    for g in VERIFIED_GROUPS[name]:
        spec = job_spec(sim, g, "warmup")
        assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (1, 1, 0)


def test_verification_deadlines(run: tuple[str, Simulation]):
    """Concurrency: 180 s hold + 120 s to start < 2 x 180 s, so sequential pods miss it."""
    name, sim = run
    for g in VERIFIED_GROUPS[name]:
        assert job_spec(sim, g, "warmup")["activeDeadlineSeconds"] == 1200
        assert job_spec(sim, g, "concurrent")["activeDeadlineSeconds"] == 300
        assert job_spec(sim, g, "concurrent")["backoffLimit"] == 0


def test_concurrent_pods_must_share_one_node(run: tuple[str, Simulation]):
    name, sim = run
    for g in VERIFIED_GROUPS[name]:
        assert job_spec(sim, g, "concurrent")["template"]["spec"]["affinity"] == {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": f"timeslicing-check-{g}"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
        assert "affinity" not in job_spec(sim, g, "warmup")["template"]["spec"]


def test_verification_pods_are_never_evicted_by_a_scale_down(run: tuple[str, Simulation]):
    name, sim = run
    for g in VERIFIED_GROUPS[name]:
        for kind in ("warmup", "concurrent"):
            assert job_spec(sim, g, kind)["template"]["metadata"]["annotations"] == {
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"
            }


def test_verification_pods_land_on_the_groups_nodes_and_tolerate_its_taints(run: tuple[str, Simulation]):
    name, sim = run
    for group in VERIFIED_GROUPS[name]:
        for kind in ("warmup", "concurrent"):
            pod = job_spec(sim, group, kind)["template"]["spec"]
            assert pod["nodeSelector"] == NODE_SELECTOR[name][group]
            assert pod["tolerations"] == TOLERATIONS[name][group]


def test_verification_requests_one_share_of_the_groups_resource(run: tuple[str, Simulation]):
    name, sim = run
    limits = {
        (g, kind): {
            "limits": {
                k: v
                for k, v in job_spec(sim, g, kind)["template"]["spec"]["containers"][0]["resources"]["limits"].items()
                if k not in ("cpu", "memory")
            }
        }
        for g in VERIFIED_GROUPS[name]
        for kind in ("warmup", "concurrent")
    }
    assert (
        limits
        == {
            "dev": {
                ("t4", "warmup"): {"limits": {"nvidia.com/gpu": 1}},
                ("t4", "concurrent"): {"limits": {"nvidia.com/gpu": 1}},
            },
            "prod": {},
            VARIANT: {
                ("big", "warmup"): {"limits": {"nvidia.com/gpu.shared": 1}},
                ("big", "concurrent"): {"limits": {"nvidia.com/gpu.shared": 1}},
            },
            DEFAULTS: {},
        }[name]
    )


# --- Stack outputs ------------------------------------------------------------------------------

OIDC_ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/00000000000000000000000000000000"


def test_stack_output_names(run: tuple[str, Simulation]):
    name, sim = run
    # observability: where the GPU metrics land, only where it is enabled (dev and the variant).
    observed = ["observability"] if name in ("dev", VARIANT) else []
    assert sorted(sim.outputs) == sorted(
        ["clusterName", "gpuNodeGroups", "kubeconfig", "oidcProviderArn", "oidcProviderUrl", *observed]
    )


def test_stack_outputs_of_the_cluster(run: tuple[str, Simulation]):
    name, sim = run
    out = sim.outputs
    assert out["clusterName"] == CLUSTER_NAME[name]
    assert out["oidcProviderArn"] == f"arn:aws:iam::123456789012:oidc-provider/{OIDC_ISSUER}"
    assert out["oidcProviderUrl"] == OIDC_ISSUER
    assert sim.secret_outputs == {"kubeconfig"}
    assert f'"--cluster-name", "{CLUSTER_NAME[name]}"' in out["kubeconfig"]


def test_stack_outputs_per_gpu_node_group(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.outputs["gpuNodeGroups"] == {
        g: {
            "nodeSelector": NODE_SELECTOR[name][g],
            "tolerations": TOLERATIONS[name][g],
            "gpusPerNode": CAPACITY[name][g][0],
            "advertisedGpusPerNode": CAPACITY[name][g][1],
            "resourceName": CAPACITY[name][g][2],
            "sharedSlotsPerNode": CAPACITY[name][g][1],
            "sharedSlotsAtMaxSize": SLOTS_AT_MAX_SIZE[name][g],
            "sharingMode": SHARING[name][g][0],
            "memoryPerSlotGiB": SHARING[name][g][1],
            # Every group of these stacks repairs at the defaults (tests/test_node_health.py).
            "repairPolicy": DEFAULT_REPAIR_POLICY,
            # The fake cloud's name of the ASG EKS creates for the node group.
            "autoscalingGroupName": f"eks-gpu-eks-{g}-00000000-0000-0000-0000-000000000000",
        }
        for g in GPU_GROUPS[name]
    }
