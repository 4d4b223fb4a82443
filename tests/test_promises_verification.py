"""Promises about the time-slicing verification (which groups get one, replicas, placement,
tolerations, the resource it requests) and the stack outputs. Literal expectations."""

from __future__ import annotations

from typing import Any

import pytest

from tests.promised import (
    CLUSTER_NAME,
    DEDICATED_TOLERATION,
    GPU_GROUPS,
    GPU_TAINT_TOLERATION,
    PROFILE,
    RUNS,
    VERIFIED_GROUPS,
)
from tests.support import DEFAULTS, VARIANT, simulate_run
from tooling.simulation import Simulation

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
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
            "nvidia.com/device-plugin.config": PROFILE["dev"]["t4"],
        }
    },
    "prod": {
        "t4": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "t4",
            "nvidia.com/device-plugin.config": PROFILE["prod"]["t4"],
        }
    },
    VARIANT: {
        "big": {
            "gpu-eks.io/gpu-count": "4",
            "gpu-eks.io/node-group": "big",
            "nvidia.com/device-plugin.config": PROFILE[VARIANT]["big"],
            "team.example.com/owner": "ml",
        },
        "idle": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "idle",
            "nvidia.com/device-plugin.config": PROFILE[VARIANT]["idle"],
        },
    },
    DEFAULTS: {
        "gpu": {
            "gpu-eks.io/gpu-count": "1",
            "gpu-eks.io/node-group": "gpu",
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


def deployment_inputs(run: str, group: str) -> dict[str, Any]:
    app = f"timeslicing-check-{group}"
    labels = {"app.kubernetes.io/name": app}
    _, advertised, resource = CAPACITY[run][group]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": app,
            "namespace": VERIFY_NAMESPACE[run],
            "annotations": {"pulumi.com/timeoutSeconds": "1200"},
        },
        "spec": {
            "replicas": advertised,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": NODE_SELECTOR[run][group],
                    "tolerations": TOLERATIONS[run][group],
                    "affinity": {
                        "podAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
                            ]
                        }
                    },
                    "containers": [
                        {
                            "name": "vectoradd",
                            "image": IMAGE[run],
                            "command": ["/bin/sh", "-c"],
                            "args": ["while true; do /cuda-samples/vectorAdd || exit 1; sleep 60; done"],
                            "resources": {"limits": {resource: 1}},
                            "securityContext": {"allowPrivilegeEscalation": False},
                        }
                    ],
                    "terminationGracePeriodSeconds": 5,
                },
            },
        },
    }


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


# --- Verification -------------------------------------------------------------------------------


def test_which_groups_get_a_verification(run: tuple[str, Simulation]):
    """One Deployment per GPU group with nodes; none with verifyTimeSlicing off (prod) or for a
    group at desiredSize 0 (variant's "idle": waiting for it would only time out)."""
    name, sim = run
    assert [d.name for d in sim.by_type(DEPLOYMENT)] == [f"gpu-eks-verify-{g}" for g in VERIFIED_GROUPS[name]]


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
        "metadata": {"name": VERIFY_NAMESPACE[name], "labels": {"pod-security.kubernetes.io/enforce": "baseline"}},
    }


def test_verification_deployment_inputs(run: tuple[str, Simulation]):
    name, sim = run
    for group in VERIFIED_GROUPS[name]:
        assert sim.one(DEPLOYMENT, f"gpu-eks-verify-{group}").inputs == deployment_inputs(name, group)


def test_verification_replicas_are_one_nodes_advertised_gpus(run: tuple[str, Simulation]):
    name, sim = run
    replicas = {g: sim.one(DEPLOYMENT, f"gpu-eks-verify-{g}").inputs["spec"]["replicas"] for g in VERIFIED_GROUPS[name]}
    assert replicas == {"dev": {"t4": 4}, "prod": {}, VARIANT: {"big": 8}, DEFAULTS: {}}[name]


def test_verification_pods_land_on_the_groups_nodes_and_tolerate_its_taints(run: tuple[str, Simulation]):
    name, sim = run
    for group in VERIFIED_GROUPS[name]:
        pod = sim.one(DEPLOYMENT, f"gpu-eks-verify-{group}").inputs["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == NODE_SELECTOR[name][group]
        assert pod["tolerations"] == TOLERATIONS[name][group]


def test_verification_requests_one_share_of_the_groups_resource(run: tuple[str, Simulation]):
    name, sim = run
    limits = {
        g: sim.one(DEPLOYMENT, f"gpu-eks-verify-{g}").inputs["spec"]["template"]["spec"]["containers"][0]["resources"]
        for g in VERIFIED_GROUPS[name]
    }
    assert (
        limits
        == {
            "dev": {"t4": {"limits": {"nvidia.com/gpu": 1}}},
            "prod": {},
            VARIANT: {"big": {"limits": {"nvidia.com/gpu.shared": 1}}},
            DEFAULTS: {},
        }[name]
    )


# --- Stack outputs ------------------------------------------------------------------------------

OIDC_ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/00000000000000000000000000000000"


def test_stack_output_names(run: tuple[str, Simulation]):
    _, sim = run
    assert sorted(sim.outputs) == ["clusterName", "gpuNodeGroups", "kubeconfig", "oidcProviderArn", "oidcProviderUrl"]


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
        }
        for g in GPU_GROUPS[name]
    }
