"""The whole gpu-operator chart, rendered by a real Helm, with the values the library produces for
every example stack and for dev/prod, at every chart version the library supports (issue 31 "Rules").

The charts are ../shared/reference/gpu-operator/<version>/chart (deployments/gpu-operator of
NVIDIA/gpu-operator at the commit of each tag: its SOURCE.md), Helm the pinned wheel's (tests/support/tools/helm.py).
What the chart makes of the values is checked where the operator reads it: the ClusterPolicy (valid
for the chart's own CRD, no field the API server would prune), the device plugin's config ConfigMap,
the MIG strategy and mig-manager's ConfigMap, the device plugin's device-list strategy, and which
operands are on.

The values: the simulated program's release values at each stack's own chart version (the stacks pin
v26.7.0), and ``gpu_operator_values`` with the stack's settings at the other versions (every stack is
valid at each: ``test_every_stack_is_valid_at_every_chart_version``), after
``test_the_values_are_the_programs`` proves the two agree where both exist.

``EXPECTED`` is one row per stack: what the chart must make of it. Two columns are marked CURRENT:
what today's code gives, which issue 31's ``boot`` stage changes (mig-manager off for groups whose
MIG layout is applied at boot; the device plugin handing devices out as volume mounts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from components.catalog import gpu_operator as operator_catalog
from components.check.loading import settings_from_config
from components.config import stackfile
from components.gpu_operator import values as operator_values
from components.plan.group import GroupPlan
from tests.support.paths import EXAMPLES, ROOT
from tests.support.reference import CHART_VERSIONS, reference_path
from tests.support.simulation import example, simulate
from tests.support.standins.crds import crd_problems, crd_schema, drop_nulls
from tests.support.tokens import RELEASE
from tests.support.tools import helm

OPERATOR_RELEASE = "gpu-eks-gpu-operator-release"


@dataclass(frozen=True)
class Expected:
    #: ClusterPolicy spec.mig.strategy (the device plugin's and GFD's MIG_STRATEGY).
    mig_strategy: str
    #: ClusterPolicy spec.devicePlugin.config.default: the profile of a node without the label.
    default_profile: str
    #: Each profile of the device plugin's ConfigMap: (flags.migStrategy, {sharing mode: [(resource, replicas)]}).
    profiles: dict[str, tuple[str, dict[str, list[tuple[str, int]]]]]
    #: spec.migManager.enabled: the chart's default (true) without a MIG group; false with one, whose
    #: layout the node's boot stage applies (issue 31, gpu_operator/values.py mig_manager_values).
    mig_manager_enabled: bool
    #: The device plugin's DEVICE_LIST_STRATEGY: "volume-mounts" everywhere (gpuOperator.isolation
    #: enforced, issue 40; "envvar,volume-mounts" in 0.3.0 sent the same): the toolkit the boot stage
    #: set reads the mounts and refuses the variable from unprivileged pods.
    device_list_strategy: str


TIME_SLICED_4 = ("none", {"timeSlicing": [("nvidia.com/gpu", 4)]})
WHOLE = ("none", {})
H100_MIXED = ("mixed", {"timeSlicing": [("nvidia.com/mig-1g.10gb", 2)]})

# fmt: off
EXPECTED: dict[str, Expected] = {
    #                        MIG strategy, default profile, profiles,
    #                        mig-manager, device list
    "ampere-ada": Expected("none", "a10g", {"a10g": TIME_SLICED_4, "l4": TIME_SLICED_4},
                           True, "volume-mounts"),
    "fractional": Expected("none", "l4-eighth", {"l4-eighth": WHOLE},
                           True, "volume-mounts"),
    "graviton": Expected("none", "t4g", {"t4g": TIME_SLICED_4},
                         True, "volume-mounts"),
    "karpenter": Expected("none", "l4-shared", {"l4-shared": TIME_SLICED_4, "l4-eighth": WHOLE,
                                                "l40s-mps": ("none", {"mps": [("nvidia.com/gpu", 2)]})},
                          True, "volume-mounts"),
    "mig-a100": Expected("single", "a100-1g", {"a100-1g": ("single", {})},
                         False, "volume-mounts"),
    "mig-h100": Expected("mixed", "h100-mixed", {"h100-mixed": H100_MIXED},
                         False, "volume-mounts"),
    "multinode": Expected("none", "h100-block", {"h100-block": WHOLE, "a100-odcr": WHOLE, "h100-karpenter": WHOLE},
                          True, "volume-mounts"),
    "teams": Expected("none", "t4", {"t4": TIME_SLICED_4, "a10g": WHOLE},
                      True, "volume-mounts"),
    "dev": Expected("none", "timeslice-x4", {"timeslice-x4": TIME_SLICED_4},
                    True, "volume-mounts"),
    "prod": Expected("none", "timeslice-x4", {"timeslice-x4": TIME_SLICED_4},
                     True, "volume-mounts"),
}
# fmt: on
STACKS_AND_EXAMPLES = tuple(EXPECTED)
CASES = [(stack, version) for stack in STACKS_AND_EXAMPLES for version in CHART_VERSIONS]

#: The k8s-device-plugin each chart ships (values.yaml devicePlugin.version): the sharing rules
#: (tests/test_sharing_modes.py, tests/test_device_plugin_rules.py) cite these versions.
DEVICE_PLUGIN = {"v25.3.1": "v0.17.2", "v25.10.1": "v0.18.1", "v26.7.0": "v0.20.0"}


def _stack_config(stack: str) -> dict[str, Any]:
    path = (ROOT / "stacks" if stack in ("dev", "prod") else EXAMPLES) / f"Pulumi.{stack}.yaml"
    return yaml.safe_load(path.read_text())["config"]


@functools.cache
def settings(stack: str, version: str):
    config = _stack_config(stack)
    config = {**config, "gpu-eks:gpuOperator": {**config.get("gpu-eks:gpuOperator", {}), "chartVersion": version}}
    return settings_from_config(stackfile.cli_config(config), stackfile.project_name(ROOT), stack)


def library_values(stack: str, version: str) -> dict[str, Any]:
    """``gpu_operator_values`` as GpuOperator calls it, from the stack's settings at ``version``."""
    s = settings(stack, version)
    operator = s.gpu_operator
    plans: list[GroupPlan] = list(s.plans)
    exporter = operator_values.exporter_options(s.observability)
    return operator_values.gpu_operator_values(plans, version, operator.cdi_enabled, exporter, operator.namespace)


def program_values(stack: str) -> dict[str, Any]:
    """The operator release's values in the simulated program (the stack's own chart version)."""
    sim = simulate(stack) if stack in ("dev", "prod") else example(stack)
    return sim.one(RELEASE, OPERATOR_RELEASE).inputs["values"]


@functools.cache
def rendered(stack: str, version: str) -> dict[str, dict[str, Any]]:
    """The chart's objects by "<kind>/<name>"."""
    chart = helm.chart_dir("gpu-operator", version, "chart")
    return helm.by_kind_and_name(helm.template(chart, "gpu-operator", "gpu-operator", library_values(stack, version)))


def cluster_policy(stack: str, version: str) -> dict[str, Any]:
    return rendered(stack, version)["ClusterPolicy/cluster-policy"]


@functools.cache
def policy_schema(version: str) -> dict[str, Any]:
    return dict(crd_schema("gpu-operator", version, "chart", "crds", "nvidia.com_clusterpolicies.yaml", version="v1"))


def device_list_strategy(spec: dict[str, Any], version: str) -> str:
    """The device plugin's DEVICE_LIST_STRATEGY as the operator sets it from the ClusterPolicy
    (catalog/gpu_operator.py ``device_list_strategy``: the asset, ``cdi.enabled``, the spec's env)."""
    cdi = spec.get("cdi", {}).get("enabled", False)
    return operator_catalog.device_list_strategy(spec["devicePlugin"].get("env"), cdi, version)


# ---------------------------------------------------------------------------------------------
# The values
# ---------------------------------------------------------------------------------------------


def test_the_table_covers_every_example_and_stack():
    assert sorted(EXPECTED) == sorted([p.name.split(".")[1] for p in EXAMPLES.iterdir()] + ["dev", "prod"])


@pytest.mark.parametrize("stack", STACKS_AND_EXAMPLES)
def test_the_values_are_the_programs(stack):
    pinned = settings(stack, "v26.7.0")
    assert _stack_config(stack)["gpu-eks:gpuOperator"]["chartVersion"] == pinned.gpu_operator.chart_version
    assert library_values(stack, "v26.7.0") == program_values(stack)


def test_every_stack_is_valid_at_every_chart_version():
    for stack, version in CASES:
        assert settings(stack, version).gpu_operator.chart_version == version


# ---------------------------------------------------------------------------------------------
# What the chart makes of them
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("stack", "version"), CASES)
def test_the_cluster_policy_is_valid_for_the_charts_crd(stack, version):
    schema = policy_schema(version)
    obj = drop_nulls(cluster_policy(stack, version), schema)
    assert crd_problems(obj, schema) == []  # schema, CEL rules, and no field the API server would prune


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_the_charts_crd_is_the_one_the_mig_tests_read(version):
    crd = "nvidia.com_clusterpolicies.yaml"
    chart = helm.chart_dir("gpu-operator", version, "chart") / "crds" / crd
    assert chart.read_bytes() == reference_path("gpu-operator", version, "crds", crd).read_bytes()


@pytest.mark.parametrize(("stack", "version"), CASES)
def test_the_device_plugin_gets_the_librarys_profiles(stack, version):
    expected = EXPECTED[stack]
    spec = cluster_policy(stack, version)["spec"]
    plugin = spec["devicePlugin"]
    assert plugin["enabled"] is True
    assert plugin["version"] == DEVICE_PLUGIN[version]
    assert plugin["config"]["default"] == expected.default_profile
    name = plugin["config"]["name"]
    assert name.startswith("time-slicing-config-")
    data = rendered(stack, version)[f"ConfigMap/{name}"]["data"]
    profiles = {}
    for profile, text in data.items():
        config = yaml.safe_load(text)
        assert config["version"] == "v1"
        sharing = {
            mode: [(r["name"], r["replicas"]) for r in cfg["resources"]]
            for mode, cfg in config.get("sharing", {}).items()
        }
        profiles[profile] = (config["flags"]["migStrategy"], sharing)
    assert profiles == expected.profiles
    # MPS is the operator's own (state-mps-control-daemon): the chart never copies devicePlugin.mps.
    assert "mps" not in plugin


@pytest.mark.parametrize(("stack", "version"), CASES)
def test_mig_strategy_and_mig_manager(stack, version):
    expected = EXPECTED[stack]
    spec = cluster_policy(stack, version)["spec"]
    assert spec["mig"] == {"strategy": expected.mig_strategy}
    manager = spec["migManager"]
    assert manager["enabled"] is expected.mig_manager_enabled
    # The chart's own mig-parted config (name unset), no ConfigMap of the library's: with a MIG group
    # mig-manager is off and the boot stage cuts the slices (issue 31).
    assert not manager["config"].get("name")
    assert not [k for k in rendered(stack, version) if k.startswith("ConfigMap/gpu-eks-mig-parted-")]


@pytest.mark.parametrize(("stack", "version"), CASES)
def test_the_device_list_strategy(stack, version):
    spec = cluster_policy(stack, version)["spec"]
    assert device_list_strategy(spec, version) == EXPECTED[stack].device_list_strategy


@pytest.mark.parametrize(("stack", "version"), CASES)
def test_the_operands_on_and_off(stack, version):
    """The AL2023 NVIDIA AMI ships the driver and the container toolkit: the operator installs
    neither; the device plugin, GFD, the exporter and NFD's workers (on GPU nodes only) run."""
    objects = rendered(stack, version)
    spec = objects["ClusterPolicy/cluster-policy"]["spec"]
    enabled = {k: spec[k]["enabled"] for k in ("driver", "toolkit", "cdi", "devicePlugin", "gfd", "dcgmExporter")}
    assert enabled == {
        "driver": False,
        "toolkit": False,
        "cdi": False,
        "devicePlugin": True,
        "gfd": True,
        "dcgmExporter": True,
    }
    assert (spec["sandboxWorkloads"]["enabled"], spec["vgpuManager"]["enabled"]) == (False, False)
    assert spec["daemonsets"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    worker = objects["DaemonSet/gpu-operator-node-feature-discovery-worker"]["spec"]["template"]["spec"]
    terms = worker["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"] for t in terms] == [
        [{"key": "gpu-eks.io/gpu-count", "operator": "Gt", "values": ["0"]}],
        [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}],
        [{"key": "eks.amazonaws.com/instance-gpu-count", "operator": "Gt", "values": ["0"]}],
    ]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker["tolerations"]


# ---------------------------------------------------------------------------------------------
# The exporter with per-pod metrics and a ServiceMonitor (tests/test_observability.py's values)
# ---------------------------------------------------------------------------------------------

SERVICE_MONITOR = {
    "enabled": True,
    "honorLabels": True,
    "additionalLabels": {"release": "kps"},
    "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}],
    "interval": "15s",  # the chart's, merged under ours
}
CONFIG_MAP_ENV = {"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "gpu-operator:gpu-eks-dcgm-metrics"}


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "v25.3.1",
            {
                "env": [
                    {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                    {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                    {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
                    CONFIG_MAP_ENV,
                ],
                "serviceMonitor": SERVICE_MONITOR,
            },
        ),
        ("v25.10.1", {"env": [CONFIG_MAP_ENV], "serviceMonitor": SERVICE_MONITOR}),
        (
            "v26.7.0",
            {
                "hostPID": True,
                "enablePodUID": True,
                "env": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}, CONFIG_MAP_ENV],
                "serviceMonitor": {**SERVICE_MONITOR, "scrapeTimeout": "10s"},
            },
        ),
    ],
)
def test_the_exporter_gets_per_pod_metrics_where_its_chart_can(version, expected):
    """A time-sliced T4 group with the prometheus pipeline: ClusterPolicy.spec.dcgmExporter as the
    chart renders it (templates/clusterpolicy.yaml). ``enablePodLabels: false`` is sent and left out
    by the template (``if .Values.dcgmExporter.enablePodLabels``; the operator's default is false)."""
    plans = settings_from_config(
        {
            "gpu-eks:clusterName": "c",
            "gpu-eks:gpuOperator": f'{{"chartVersion": "{version}"}}',
            "gpu-eks:gpuNodeGroups": '[{"name": "t4", "timeSlicing": {"replicas": 4}}]',
        },
        "p",
        "s",
    ).plans
    exporter = operator_values.ExporterOptions(per_pod_metrics=True, service_monitor_labels={"release": "kps"})
    values = operator_values.gpu_operator_values(list(plans), version, False, exporter, "gpu-operator")
    chart = helm.chart_dir("gpu-operator", version, "chart")
    spec = helm.by_kind_and_name(helm.template(chart, "gpu-operator", "gpu-operator", values))[
        "ClusterPolicy/cluster-policy"
    ]["spec"]["dcgmExporter"]
    keys = ("hostPID", "enablePodUID", "enablePodLabels", "env", "serviceMonitor")
    assert {k: spec[k] for k in keys if k in spec} == expected
