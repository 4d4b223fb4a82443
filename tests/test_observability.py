"""Observability: the dcgm-exporter values per chart version (every path in the chart's values.yaml),
the dashboard (valid JSON, per node and per pod, the sidecar label), the pipelines each stack
declares, and the problems reported before anything is declared. Literal expectations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import gpu_operator as chart
from components.check.loading import load_settings
from components.config.addons import prometheus_duration_ms
from components.config.errors import ConfigError
from components.gpu_operator import values as operator_values
from components.observability import dashboard
from components.observability import values as obs_values
from tests.support.reference import CHART_VERSIONS, load_reference_yaml
from tests.support.simulation import settings_for_stack
from tooling.simulation import run_stack

#: What the chart renders into ClusterPolicy.spec.dcgmExporter from these values (hostPID, enablePodUID
#: and env as sent, serviceMonitor merged over the chart's, enablePodLabels false left out by the
#: template) is checked with a real helm template of each chart in tests/test_operator_chart.py
#: (test_the_exporter_gets_per_pod_metrics_where_its_chart_can). The ClusterPolicy CRD of v26.7.0 has
#: hostPID, enablePodUID, enablePodLabels, env, serviceMonitor.{honorLabels,additionalLabels};
#: v25.10.1's has hostPID, not enablePodUID; v25.3.1's neither (so they are sent at v26.7.0 only).
PER_POD = {
    "hostPID": True,
    "enablePodUID": True,
    "enablePodLabels": False,
}
CONFIG_MAP_ENV = {"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "gpu-operator:gpu-eks-dcgm-metrics"}
VIRTUAL_GPUS_ENV = {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}
#: The chart's own dcgmExporter.env at v25.3.1 (sent back: Helm replaces lists).
ENV_V25_3_1 = [
    {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
    {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
    {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
]
#: relabelings: the pod's node as ``node`` (the exporter's own label is Hostname or hostname by
#: version: dcgm-exporter d5e5f51); camelCase fields as in the ClusterPolicy CRD of v25.3.1, v25.10.1
#: and v26.7.0 (deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml), which the operator
#: copies into the ServiceMonitor endpoint (controllers/object_controls.go).
SERVICE_MONITOR = {
    "enabled": True,
    "honorLabels": True,
    "additionalLabels": {"release": "kps"},
    "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}],
}


def plans_for(replicas: int, version: str = "v26.7.0"):
    s = load_settings(
        {
            "clusterName": "c",
            "gpuOperator": {"chartVersion": version},
            "gpuNodeGroups": [{"name": "t4", "timeSlicing": {"replicas": replicas}}],
        }
    )
    return s.plans


def dcgm(replicas: int, version: str, options: Any) -> dict[str, Any]:
    return operator_values.dcgm_exporter_values(plans_for(replicas, version), version, options, "gpu-operator")


# ---------------------------------------------------------------------------------------------
# dcgm-exporter values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("v26.7.0", {**PER_POD, "env": [VIRTUAL_GPUS_ENV, CONFIG_MAP_ENV], "serviceMonitor": SERVICE_MONITOR}),
        # Exporter 4.4.2-4.7.0: no per-process metrics (PR #594): per GPU only.
        ("v25.10.1", {"env": [CONFIG_MAP_ENV], "serviceMonitor": SERVICE_MONITOR}),
        ("v25.3.1", {"env": [*ENV_V25_3_1, CONFIG_MAP_ENV], "serviceMonitor": SERVICE_MONITOR}),
    ],
)
def test_exporter_values_per_chart_version(version, expected):
    options = operator_values.ExporterOptions(per_pod_metrics=True, service_monitor_labels={"release": "kps"})
    assert dcgm(4, version, options) == expected


def test_no_per_pod_metrics_on_an_unshared_group_or_when_off():
    on = operator_values.ExporterOptions(per_pod_metrics=True)
    off = operator_values.ExporterOptions(per_pod_metrics=False)
    # T4: the profiling fields stay off either way.
    assert dcgm(1, "v26.7.0", on) == {"env": [CONFIG_MAP_ENV]}
    assert dcgm(4, "v26.7.0", off) == {"env": [CONFIG_MAP_ENV]}


@pytest.mark.parametrize(
    ("instance_type", "without_profiling"),
    [
        ("g4dn.xlarge", True),
        ("g5g.xlarge", True),
        ("g6f.large", True),
        ("gr6f.4xlarge", True),
        ("g5.xlarge", False),
        ("g6.xlarge", False),
    ],
)
def test_profiling_fields_are_off_on_turing_and_vgpu_guests(instance_type, without_profiling):
    # Turing (T4, T4G) needs exclusive access for DCGM_FI_PROF_* (dcgm-exporter#307); a fractional
    # vGPU guest (g6f, gr6f: L4 slices) has no hardware counters (dcgm-exporter#69, #661, PR #701);
    # whole Ampere and Ada GPUs have both.
    # One pod per GPU: a vGPU slice may not be time-sliced again (the settings refuse replicas > 1).
    group = {"name": "g", "instanceTypes": [instance_type], "timeSlicing": {"replicas": 1}}
    plans = load_settings({"clusterName": "c", "gpuNodeGroups": [group]}).plans
    values = operator_values.dcgm_exporter_values(
        plans, "v26.7.0", operator_values.ExporterOptions(per_pod_metrics=False), "gpu-operator"
    )
    assert values == ({"env": [CONFIG_MAP_ENV]} if without_profiling else {})


def test_without_observability_the_chart_defaults_stay():
    assert dcgm(4, "v26.7.0", None) == {}
    plans = plans_for(4)
    assert "dcgmExporter" not in operator_values.gpu_operator_values(plans, "v26.7.0")


def test_the_metrics_file_has_no_profiling_field():
    csv = operator_values.metrics_csv()
    assert "DCGM_FI_PROF_" not in csv
    assert csv.splitlines()[7] == "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)."
    assert len(csv.splitlines()) == 19


def leaves(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for key, value in tree.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value and key != "additionalLabels":
            out += leaves(value, path)
        else:
            out.append(path)
    return out


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_every_exporter_values_path_exists_in_the_chart(version):
    """Each dcgmExporter path we send, at the version we send it, is in that chart's values.yaml."""
    chart_values = load_reference_yaml("gpu-operator", version, "values.yaml")
    options = operator_values.ExporterOptions(per_pod_metrics=True, service_monitor_labels={"release": "kps"})
    sent = {"dcgmExporter": dcgm(4, version, options)}
    for path in leaves(sent):
        node: Any = chart_values
        for key in path:
            assert isinstance(node, dict) and key in node, f"{'.'.join(path)} missing in gpu-operator {version}"
            node = node[key]


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_chart_exporter_rows_match_upstream(version):
    upstream = load_reference_yaml("gpu-operator", version, "values.yaml")["dcgmExporter"]
    row = chart.SUPPORTED_CHART_VERSIONS[version]
    assert row.dcgm_exporter_version == upstream["version"]
    assert list(row.dcgm_exporter_env) == upstream["env"]


def test_per_pod_metrics_only_where_the_exporter_has_them():
    assert {v: c.per_pod_gpu_metrics for v, c in chart.SUPPORTED_CHART_VERSIONS.items()} == {
        "v25.3.1": False,
        "v25.10.1": False,
        "v26.7.0": True,
    }
    assert {v: c.dcgm_exporter_version for v, c in chart.SUPPORTED_CHART_VERSIONS.items()} == {
        "v25.3.1": "4.2.3-4.1.3-ubuntu22.04",
        "v25.10.1": "4.4.2-4.7.0-distroless",
        "v26.7.0": "4.6.0-4.8.3-distroless",
    }


# ---------------------------------------------------------------------------------------------
# Dashboard
# ---------------------------------------------------------------------------------------------


def test_dashboard_is_valid_json_with_panels_per_node_and_per_pod():
    model = json.loads(dashboard.dashboard_json(settings_for_stack("dev").plans))
    assert model["uid"] == "gpu-eks-shared-gpus"
    titles = [p["title"] for p in model["panels"]]
    assert titles == [
        "Per node",
        "GPU utilisation per GPU",
        "GPU memory used per GPU",
        "Last XID per GPU (0: none)",
        "Pods holding a slot per GPU",
        "Per pod",
        "GPU utilisation per pod",
        "GPU memory used per pod (red: a slot's share)",
        "Last XID of the GPU each pod runs on",
        "Each slot's share of its GPU's memory",
        "Node health (docs/node-health.md)",
        "Unhealthy node conditions per GPU group",
        "Karpenter repairs per hour (per NodePool)",
        "GPU fault changes per hour (AcceleratedHardwareReady False set or cleared)",
    ]
    ids = [p["id"] for p in model["panels"]]
    assert ids == sorted(set(ids))
    per_pod_memory = model["panels"][7]
    assert per_pod_memory["targets"][0]["expr"] == (
        'max by (namespace, pod, node, gpu) (DCGM_FI_DEV_FB_USED{pod_uid!="", node=~"$node"})'
    )
    # g4dn.xlarge: one T4 of 15,360 MiB as the driver reports it (catalog.DRIVER_MEMORY_MIB), 4 replicas.
    assert per_pod_memory["fieldConfig"]["defaults"]["thresholds"]["steps"] == [
        {"color": "green", "value": None},
        {"color": "red", "value": 3840},
    ]
    assert "| t4 | g4dn.xlarge | 1 x 4 | 3840 MiB |" in model["panels"][9]["options"]["content"]
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "node"]


def test_memory_per_slot_is_a_gpus_memory_over_its_replicas():
    (plan,) = plans_for(4)
    # EC2 says 16,384 MiB; the driver reports 15,360, and that is what the slots divide.
    assert (plan.instance.gpu_memory_mib_per_gpu, plan.memory_per_slot_mib) == (16384, 3840)
    (plan,) = plans_for(3)
    assert plan.memory_per_slot_mib == 5120


# ---------------------------------------------------------------------------------------------
# What each pipeline declares (mocked runs of the program)
# ---------------------------------------------------------------------------------------------

OBS = "gpu-eks:observability"


def run_with(observability: dict[str, Any] | None):
    overrides = {OBS: observability} if observability is not None else {}
    return run_stack("dev", config_overrides=overrides)


def declared(sim) -> list[tuple[str, str]]:
    return sorted((r.type, r.name) for r in sim.resources if r.name.startswith("gpu-eks-observability"))


@pytest.fixture(scope="module")
def runs():
    return {
        "off": run_with({"enabled": False}),
        "prometheus": run_with(
            {
                "enabled": True,
                "pipeline": "prometheus",
                "namespace": "monitoring",
                "prometheusLabels": {"release": "kps"},
            }
        ),
        "both": run_with({"enabled": True, "pipeline": "both"}),
    }


def test_dev_declares_the_cloudwatch_pipeline_without_the_prometheus_dashboard():
    sim = run_with(None)
    # No dashboard: it reads the operator's exporter through Prometheus, which cloudwatch does not run.
    assert declared(sim) == [
        ("aws:eks/addon:Addon", "gpu-eks-observability-cloudwatch"),
        ("aws:iam/role:Role", "gpu-eks-observability-cloudwatch-role"),
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "gpu-eks-observability-cloudwatch-policy"),
        ("gpu-eks:observability:GpuObservability", "gpu-eks-observability"),
    ]
    addon = sim.named("gpu-eks-observability-cloudwatch").inputs
    assert addon["addonName"] == "amazon-cloudwatch-observability"
    assert "configurationValues" not in addon
    assert sim.named("gpu-eks-observability-cloudwatch-policy").inputs["policyArn"] == (
        "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"
    )
    trust = json.loads(sim.named("gpu-eks-observability-cloudwatch-role").inputs["assumeRolePolicy"])
    (statement,) = trust["Statement"]
    subjects = [v for k, v in statement["Condition"]["StringEquals"].items() if k.endswith(":sub")]
    assert subjects == ["system:serviceaccount:amazon-cloudwatch:cloudwatch-agent"]
    # cloudwatch only: the add-on reads its own exporter, so the operator's gets no hostPID.
    assert sim.outputs["observability"] == {
        "pipeline": "cloudwatch",
        "perPodGpuMetrics": False,
        "exporter": {"namespace": "gpu-operator", "service": "nvidia-dcgm-exporter", "port": 9400, "path": "/metrics"},
        "cloudwatch": {
            "addon": "amazon-cloudwatch-observability",
            "metricNamespace": "ContainerInsights",
            "performanceLogGroup": "/aws/containerinsights/gpu-eks-dev/performance",
        },
    }
    values = sim.named("gpu-eks-gpu-operator-release").inputs["values"]["dcgmExporter"]
    assert values == {"env": [CONFIG_MAP_ENV]}
    metrics = sim.named("gpu-eks-gpu-operator-dcgm-metrics").inputs
    assert metrics["metadata"]["name"] == "gpu-eks-dcgm-metrics"
    assert "DCGM_FI_PROF_" not in metrics["data"]["metrics"]


def test_off_declares_nothing_and_keeps_the_chart_defaults(runs):
    sim = runs["off"]
    assert declared(sim) == []
    assert "dcgmExporter" not in sim.named("gpu-eks-gpu-operator-release").inputs["values"]
    assert [r.name for r in sim.resources if r.name == "gpu-eks-gpu-operator-dcgm-metrics"] == []
    assert "observability" not in sim.outputs


def test_prometheus_declares_the_rule_and_the_service_monitor(runs):
    sim = runs["prometheus"]
    assert declared(sim) == [
        ("gpu-eks:observability:GpuObservability", "gpu-eks-observability"),
        ("kubernetes:core/v1:ConfigMap", "gpu-eks-observability-dashboard"),
        ("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "gpu-eks-observability-rules"),
    ]
    rule = sim.named("gpu-eks-observability-rules").inputs
    assert rule["metadata"] == {"name": "gpu-eks-shared-gpus", "namespace": "monitoring", "labels": {"release": "kps"}}
    assert [r["alert"] for r in rule["spec"]["groups"][0]["rules"]] == [
        "GpuXidApplicationError",
        "GpuXidHardwareError",
        "GpuMemoryNearFull",
        "SharedGpuContended",
        "GpuSlotIdle",
        "GpuSlotsNotAdvertised",
        "GpuExporterMissing",
    ]
    values = sim.named("gpu-eks-gpu-operator-release").inputs["values"]["dcgmExporter"]
    assert values == {**PER_POD, "env": [VIRTUAL_GPUS_ENV, CONFIG_MAP_ENV], "serviceMonitor": SERVICE_MONITOR}
    assert sim.outputs["observability"]["perPodGpuMetrics"] is True
    assert sim.outputs["observability"]["prometheusRule"] == "monitoring/gpu-eks-shared-gpus"
    assert sim.outputs["observability"]["dashboardConfigMap"] == "monitoring/gpu-eks-shared-gpus-dashboard"
    assert "cloudwatch" not in sim.outputs["observability"]
    board = sim.named("gpu-eks-observability-dashboard")
    assert board.inputs["metadata"] == {
        "name": "gpu-eks-shared-gpus-dashboard",
        "namespace": "monitoring",
        "labels": {"grafana_dashboard": "1"},
    }
    # After the operator's namespace, like the rule (wait_for).
    operator_ns = sim.named("gpu-eks-gpu-operator-ns").urn
    assert operator_ns in board.dependencies
    assert operator_ns in sim.named("gpu-eks-observability-rules").dependencies


def test_both_declares_both(runs):
    names = {n for _, n in declared(runs["both"])}
    assert {"gpu-eks-observability-rules", "gpu-eks-observability-cloudwatch"} <= names


def test_settings_problems_are_reported_with_their_keys():
    with pytest.raises(ConfigError) as info:
        load_settings(
            {
                "clusterName": "c",
                "observability": {
                    "pipeline": "datadog",
                    "namespace": "Not_A_Name",
                    "alerts": {"memoryUsedPercent": 101, "idleFor": "59s"},
                },
            }
        )
    keys = sorted(str(p).split(":", 2)[1].split(":")[0] for p in info.value.problems)
    assert keys == [
        "observability.alerts.idleFor",
        "observability.alerts.memoryUsedPercent",
        "observability.namespace",
        "observability.pipeline",
    ]


def test_a_group_may_not_be_named_observability():
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "observability"}]})
    assert "gpuNodeGroups[0].name" in str(info.value)


def test_log_groups_name_the_cluster():
    assert obs_values.log_groups("ml")["performance"] == "/aws/containerinsights/ml/performance"


NODE_TYPES = (
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:eks/nodeGroup:NodeGroup",
    "aws:iam/role:Role",
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
)


def node_side(sim) -> dict[tuple[str, str], Any]:
    """Launch templates (user data included), node groups, the node role and its policies."""
    return {
        (r.type, r.name): r.inputs
        for r in sim.resources
        if r.type in NODE_TYPES and not r.name.startswith("gpu-eks-observability")
    }


def test_observability_never_touches_a_node(runs):
    """Turning observability on (dev) or changing its pipeline leaves every launch template, user
    data, node group and the node role as they are: nothing about a node changes."""
    on = node_side(run_with(None))
    assert on == node_side(runs["off"]) == node_side(runs["prometheus"]) == node_side(runs["both"])
    assert sorted(name for typ, name in on if typ == "aws:eks/nodeGroup:NodeGroup") == [
        "gpu-eks-cluster-system",
        "gpu-eks-t4",
    ]


# ---------------------------------------------------------------------------------------------
# GpuCapacity (an existing cluster)
# ---------------------------------------------------------------------------------------------


def capacity(observability: dict[str, Any], **extra: Any):
    import pulumi

    from components import GpuCapacity, GpuCapacityArgs, load_capacity_settings
    from tests.data.samples import EXISTING_KUBECONFIG, GROUP_T4

    def program() -> None:
        settings = load_capacity_settings(
            {"kubernetesVersion": "1.34", "gpuNodeGroups": [GROUP_T4], "observability": observability}
        )
        GpuCapacity(
            "ml-gpu",
            GpuCapacityArgs(
                cluster_name=pulumi.Output.from_input("platform-cluster"),
                subnet_ids=["subnet-0ccccccccccccccc1", "subnet-0ccccccccccccccc2"],
                kubeconfig=EXISTING_KUBECONFIG,
                settings=settings,
                **extra,
            ),
        )

    return program


def test_gpu_capacity_cloudwatch_needs_the_oidc_provider():
    with pytest.raises(ValueError) as err:
        capacity({"enabled": True})()
    assert str(err.value) == (
        "GpuCapacity 'ml-gpu': observability.pipeline 'cloudwatch' needs oidc_provider_arn and oidc_provider_url "
        "(the CloudWatch agent gets AWS access through IRSA)"
    )


def test_the_oidc_provider_rule_is_one_function():
    """One rule (observability.values), used by GpuCapacity's problems and GpuObservability."""
    expected = (
        "observability.pipeline 'cloudwatch' needs oidc_provider_arn and oidc_provider_url (the CloudWatch agent "
        "gets AWS access through IRSA)"
    )

    def obs(**kw: Any):
        return load_settings({"clusterName": "c", "observability": kw}).observability

    assert obs_values.oidc_provider_problem(obs(enabled=True), False) == expected
    assert obs_values.oidc_provider_problem(obs(enabled=True, pipeline="both"), False) == expected.replace(
        "'cloudwatch'", "'both'"
    )
    assert obs_values.oidc_provider_problem(obs(enabled=True), True) is None
    assert obs_values.oidc_provider_problem(obs(enabled=True, pipeline="prometheus"), False) is None
    assert obs_values.oidc_provider_problem(obs(enabled=False), False) is None


def test_gpu_observability_declared_alone_needs_the_oidc_provider():
    from components.observability.component import GpuObservability, GpuObservabilityArgs

    s = load_settings({"clusterName": "c", "observability": {"enabled": True}})
    with pytest.raises(ValueError) as err:
        GpuObservability(
            "obs",
            GpuObservabilityArgs(
                settings=s.observability,
                plans=s.plans,
                cluster_name="c",
                operator_namespace="gpu-operator",
                per_pod_metrics=False,
            ),
        )
    assert str(err.value) == (
        "GpuObservability 'obs': observability.pipeline 'cloudwatch' needs oidc_provider_arn and oidc_provider_url "
        "(the CloudWatch agent gets AWS access through IRSA)"
    )


def test_gpu_capacity_with_its_own_prometheus():
    from tests.support.simulation import run_consumer_program as run

    sim = run(capacity({"enabled": True, "pipeline": "prometheus"}))
    component = sim.one("gpu-eks:observability:GpuObservability")
    assert component.name == "ml-gpu-observability"
    assert sim.by_urn(component.parent_urn).name == "ml-gpu"
    children = sorted((r.type, r.name) for r in sim.resources if r.parent_urn == component.urn)
    assert children == [
        ("kubernetes:core/v1:ConfigMap", "ml-gpu-observability-dashboard"),
        ("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "ml-gpu-observability-rules"),
    ]
    assert sim.by_type("aws:eks/addon:Addon") == []


@pytest.mark.parametrize(
    ("value", "ms"),
    [("1m", 60_000), ("1h30m", 5_400_000), ("2d", 172_800_000), ("1w", 604_800_000), ("90s", 90_000)],
)
def test_alert_durations_in_prometheus_grammar_are_accepted(value, ms):
    # prometheus/common model/time.go ParseDuration: y w d h m s ms, in that order, integers only.
    assert prometheus_duration_ms(value) == ms
    s = load_settings({"clusterName": "c", "observability": {"alerts": {"idleFor": value}}})
    assert s.observability.alerts.idle_for == value


@pytest.mark.parametrize("value", ["59s", "30m1h", "1.5h", "", "10", "1H", "5min"])
def test_alert_durations_prometheus_refuses_or_below_a_minute_are_refused(value):
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "observability": {"alerts": {"idleFor": value}}})
    (line,) = (str(p) for p in info.value.problems)
    assert line.endswith(
        "expected a Prometheus duration of at least 1m, such as 15m, 1h30m or 2d (units y w d h m s ms, in that "
        "order: prometheus/common model/time.go ParseDuration)"
    )


def test_the_alerts_and_the_dashboard_read_the_label_the_relabeling_writes():
    """One label name in three places: the ServiceMonitor relabeling writes it, the rules group by it
    and join it with kube-state-metrics' ``node``, the dashboard filters on it."""
    from components.observability import rules

    assert operator_values.NODE_RELABELING["targetLabel"] == "node"
    assert rules._GPU.split(", ")[0] == "node"
    assert dashboard._NODE == 'node=~"$node"'
    board = json.loads(dashboard.dashboard_json(settings_for_stack("dev").plans))
    (node_variable,) = [v for v in board["templating"]["list"] if v["name"] == "node"]
    assert node_variable["query"]["query"] == "label_values(DCGM_FI_DEV_FB_FREE, node)"
