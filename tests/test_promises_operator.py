"""Promises about the gpu-operator: its namespace (Pod Security Admission) and the Helm release
(chart, repository, pinned version, flags, every value we send, down to each toleration field).
Literal expectations for dev, prod and the variant."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.data.promised import (
    CHART_CONTROL_PLANE,
    CHART_GPU_EXISTS,
    CHART_MASTER,
    CONFIG_MAP_NAME,
    DEDICATED_TOLERATION,
    DEFAULT_PROFILE,
    PROFILE,
    RUNS,
)
from tests.data.samples import DEFAULTS, VARIANT
from tests.support.simulation import simulate_run
from tooling.simulation import Simulation

RELEASE = "kubernetes:helm.sh/v3:Release"
OPERATOR_RELEASE = "gpu-eks-gpu-operator-release"
NAMESPACE = "kubernetes:core/v1:Namespace"

OPERATOR_NAMESPACE = {"dev": "gpu-operator", "prod": "gpu-operator", VARIANT: "nvidia-gpu", DEFAULTS: "gpu-operator"}
CHART_VERSION = {"dev": "v26.7.0", "prod": "v26.7.0", VARIANT: "v25.3.1", DEFAULTS: "v26.7.0"}

PRIVILEGED = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
}


def release_inputs(run: str) -> dict[str, Any]:
    """Every input of the Release but `values` (asserted separately)."""
    return {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": CHART_VERSION[run],
        "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        "namespace": OPERATOR_NAMESPACE[run],
        "createNamespace": False,
        "atomic": True,
        "cleanupOnFail": True,
        "timeout": 900,
        # Set by pulumi-kubernetes itself.
        "compat": "true",
    }


def plugin_config(replicas: int, rename: bool = False, fail_greater_than_one: bool = True) -> str:
    """A k8s-device-plugin config file as the ConfigMap carries it (written out, not computed)."""
    return (
        "version: v1\n"
        "flags:\n"
        "  migStrategy: none\n"
        "sharing:\n"
        "  timeSlicing:\n"
        f"    renameByDefault: {str(rename).lower()}\n"
        f"    failRequestsGreaterThanOne: {str(fail_greater_than_one).lower()}\n"
        "    resources:\n"
        "    - name: nvidia.com/gpu\n"
        f"      replicas: {replicas}\n"
    )


DEVICE_PLUGIN_DATA = {
    "dev": {PROFILE["dev"]["t4"]: plugin_config(4)},
    "prod": {PROFILE["prod"]["t4"]: plugin_config(4)},
    VARIANT: {
        PROFILE[VARIANT]["big"]: plugin_config(2, rename=True),
        PROFILE[VARIANT]["idle"]: plugin_config(8, fail_greater_than_one=False),
    },
    DEFAULTS: {PROFILE[DEFAULTS]["gpu"]: plugin_config(4)},
}

NFD_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu-eks.io/gpu-count", "operator": "Gt", "values": ["0"]}]},
                {
                    "matchExpressions": [
                        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}
                    ]
                },
                {
                    "matchExpressions": [
                        {"key": "eks.amazonaws.com/instance-gpu-count", "operator": "Gt", "values": ["0"]}
                    ]
                },
            ]
        }
    }
}

#: daemonsets.tolerations: the chart's entries, then one per GPU taint nothing tolerates yet.
DAEMONSET_TOLERATIONS = {
    "dev": [CHART_GPU_EXISTS],
    "prod": [CHART_GPU_EXISTS],
    VARIANT: [CHART_GPU_EXISTS, DEDICATED_TOLERATION],
    DEFAULTS: [CHART_GPU_EXISTS],
}
#: node-feature-discovery.worker.tolerations: v26.7.0's chart lists no `master` entry, v25.3.1 does.
NFD_WORKER_TOLERATIONS = {
    "dev": [CHART_CONTROL_PLANE, CHART_GPU_EXISTS],
    "prod": [CHART_CONTROL_PLANE, CHART_GPU_EXISTS],
    VARIANT: [CHART_MASTER, CHART_CONTROL_PLANE, CHART_GPU_EXISTS, DEDICATED_TOLERATION],
    DEFAULTS: [CHART_CONTROL_PLANE, CHART_GPU_EXISTS],
}
CDI = {"dev": False, "prod": False, VARIANT: False, DEFAULTS: False}


#: observability.enabled (dev, and the variant made from it): the dcgm-exporter values. dev
#: (chart v26.7.0, a shared T4 group, pipeline cloudwatch): the metrics ConfigMap without profiling
#: fields only; no per-pod metrics (no hostPID): the CloudWatch add-on reads its own exporter, not
#: this one. The variant (v25.3.1, whose exporter has no per-process metrics): the ConfigMap only,
#: the chart's env kept (Helm replaces lists).
DCGM_EXPORTER: dict[str, dict[str, Any]] = {
    "dev": {
        "env": [
            {"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "gpu-operator:gpu-eks-dcgm-metrics"},
        ],
    },
    VARIANT: {
        "env": [
            {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
            {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
            {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
            {"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "nvidia-gpu:gpu-eks-dcgm-metrics"},
        ],
    },
}


DEVICE_PLUGIN_ENV = {
    run: [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}] for run in ("dev", "prod", DEFAULTS)
} | {
    VARIANT: [
        {"name": "PASS_DEVICE_SPECS", "value": "true"},
        {"name": "FAIL_ON_INIT_ERROR", "value": "true"},
        {"name": "DEVICE_ID_STRATEGY", "value": "uuid"},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"},
        {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"},
    ]
}


def values(run: str) -> dict[str, Any]:
    return {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "cdi": {"enabled": CDI[run]},
        "devicePlugin": {
            # The device list as volume mounts (the boot stage's toolkit refuses the variable); at
            # v25.3.1 the chart's own env list, sent back (Helm replaces lists), with it changed.
            "env": DEVICE_PLUGIN_ENV[run],
            "config": {
                "create": True,
                "name": CONFIG_MAP_NAME[run],
                "default": DEFAULT_PROFILE[run],
                "data": DEVICE_PLUGIN_DATA[run],
            },
        },
        "daemonsets": {"tolerations": DAEMONSET_TOLERATIONS[run]},
        "node-feature-discovery": {
            "worker": {"affinity": NFD_AFFINITY, "tolerations": NFD_WORKER_TOLERATIONS[run]},
        },
        # The chart's mig.strategy reaches the device plugin and GFD as MIG_STRATEGY, which
        # overrides the config file: set from the groups' migStrategy (none: the T4 has no MIG).
        "mig": {"strategy": "none"},
        **({"dcgmExporter": DCGM_EXPORTER[run]} if run in DCGM_EXPORTER else {}),
    }


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> tuple[str, Simulation]:
    return request.param, simulate_run(request.param)


def release_values(sim: Simulation) -> dict[str, Any]:
    return sim.one(RELEASE, OPERATOR_RELEASE).inputs["values"]


# --- Namespace ----------------------------------------------------------------------------------


def test_operator_namespace_is_privileged_for_pod_security_admission(run: tuple[str, Simulation]):
    name, sim = run
    assert sim.one(NAMESPACE, "gpu-eks-gpu-operator-ns").inputs == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": OPERATOR_NAMESPACE[name], "labels": PRIVILEGED},
    }


# --- Release ------------------------------------------------------------------------------------


def test_release_inputs(run: tuple[str, Simulation]):
    name, sim = run
    inputs = dict(sim.one(RELEASE, OPERATOR_RELEASE).inputs)
    inputs.pop("values")
    assert inputs == release_inputs(name)


def test_release_is_atomic_cleans_up_on_failure_and_waits_900_seconds(run: tuple[str, Simulation]):
    _, sim = run
    i = sim.one(RELEASE, OPERATOR_RELEASE).inputs
    assert (i["atomic"], i["cleanupOnFail"], i["timeout"]) == (True, True, 900)


def test_chart_from_the_nvidia_repository_at_the_pinned_version(run: tuple[str, Simulation]):
    name, sim = run
    i = sim.one(RELEASE, OPERATOR_RELEASE).inputs
    assert (i["chart"], i["repositoryOpts"], i["version"]) == (
        "gpu-operator",
        {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        CHART_VERSION[name],
    )


def test_release_namespace_is_the_operator_namespace(run: tuple[str, Simulation]):
    name, sim = run
    i = sim.one(RELEASE, OPERATOR_RELEASE).inputs
    assert (i["name"], i["namespace"], i["createNamespace"]) == ("gpu-operator", OPERATOR_NAMESPACE[name], False)


def test_release_values(run: tuple[str, Simulation]):
    name, sim = run
    assert release_values(sim) == values(name)


def test_driver_and_toolkit_are_disabled_and_cdi_pinned(run: tuple[str, Simulation]):
    """The EKS AL2023 NVIDIA AMI ships both; two drivers on one node fight."""
    name, sim = run
    v = release_values(sim)
    assert v["driver"] == {"enabled": False}
    assert v["toolkit"] == {"enabled": False}
    assert v["cdi"] == {"enabled": CDI[name]}


def test_mig_strategy_is_none(run: tuple[str, Simulation]):
    """One cluster-wide setting (the T4 has no MIG); the profiles' flags.migStrategy agree."""
    _, sim = run
    v = release_values(sim)
    assert v["mig"] == {"strategy": "none"}
    for text in v["devicePlugin"]["config"]["data"].values():
        assert yaml.safe_load(text)["flags"] == {"migStrategy": "none"}


def test_device_plugin_config(run: tuple[str, Simulation]):
    name, sim = run
    config = release_values(sim)["devicePlugin"]["config"]
    assert config["create"] is True
    assert config["name"] == CONFIG_MAP_NAME[name]
    assert config["default"] == DEFAULT_PROFILE[name]
    assert config["data"] == DEVICE_PLUGIN_DATA[name]


def test_device_plugin_profiles_are_valid_yaml_with_replicas(run: tuple[str, Simulation]):
    name, sim = run
    data = release_values(sim)["devicePlugin"]["config"]["data"]
    replicas = {p: yaml.safe_load(text)["sharing"]["timeSlicing"]["resources"] for p, text in data.items()}
    assert (
        replicas
        == {
            "dev": {"timeslice-x4": [{"name": "nvidia.com/gpu", "replicas": 4}]},
            "prod": {"timeslice-x4": [{"name": "nvidia.com/gpu", "replicas": 4}]},
            VARIANT: {
                "shared-2": [{"name": "nvidia.com/gpu", "replicas": 2}],
                "idle": [{"name": "nvidia.com/gpu", "replicas": 8}],
            },
            DEFAULTS: {"gpu": [{"name": "nvidia.com/gpu", "replicas": 4}]},
        }[name]
    )


def test_daemonset_tolerations_keep_the_charts_and_add_ours(run: tuple[str, Simulation]):
    name, sim = run
    assert release_values(sim)["daemonsets"]["tolerations"] == DAEMONSET_TOLERATIONS[name]


def test_nfd_worker_tolerations_keep_the_charts_and_add_ours(run: tuple[str, Simulation]):
    name, sim = run
    assert release_values(sim)["node-feature-discovery"]["worker"]["tolerations"] == NFD_WORKER_TOLERATIONS[name]


def test_nfd_worker_runs_only_where_a_gpu_count_label_is_greater_than_zero(run: tuple[str, Simulation]):
    _, sim = run
    assert release_values(sim)["node-feature-discovery"]["worker"]["affinity"] == NFD_AFFINITY


def test_nfd_master_and_gc_and_the_operator_are_left_to_the_chart(run: tuple[str, Simulation]):
    """They must run on the untainted system nodes: we set no tolerations or affinity for them."""
    _, sim = run
    v = release_values(sim)
    assert set(v["node-feature-discovery"]) == {"worker"}
    assert "operator" not in v
