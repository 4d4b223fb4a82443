"""The shared-GPU alerts: checked and unit-tested by the real promtool (firing and non-firing
series per alert, tests/alerts/shared_gpus_test.yaml), and their expressions as literals."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.check.loading import load_settings
from components.observability import rules
from tests.support.paths import ROOT
from tests.support.simulation import settings_for_stack
from tests.support.tools.promtool import promtool

TEST_FILE = ROOT / "tests" / "alerts" / "shared_gpus_test.yaml"
TWO_GROUPS_TEST_FILE = ROOT / "tests" / "alerts" / "two_groups_test.yaml"


def rule_file(tmp_path: Path, spec: dict, name: str = "shared_gpus_rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, check=False)


def dev_spec() -> dict:
    s = settings_for_stack("dev")
    return rules.rule_spec(s.plans, s.observability.alerts)


def varied_settings():
    """Two profiles (one renamed resource, two GPUs per node), thresholds not the defaults."""
    return load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [
                {"name": "t4", "timeSlicing": {"replicas": 4, "profile": "timeslice-x4"}},
                {
                    "name": "big",
                    "instanceTypes": ["g4dn.12xlarge"],
                    "timeSlicing": {"replicas": 2, "renameByDefault": True},
                },
            ],
            "observability": {
                "enabled": True,
                "alerts": {
                    "memoryUsedPercent": 80,
                    "memoryFor": "2m",
                    "contentionUtilizationPercent": 70,
                    "contentionFor": "1h",
                    "idleUtilizationPercent": 10,
                    "idleFor": "4h",
                    "advertisedFor": "20m",
                    "exporterMissingFor": "30m",
                },
            },
        }
    )


def two_groups_settings():
    """Two groups sharing profile ts4 with different GPU counts: 1 x 4 = 4 and 4 x 4 = 16 slots."""
    return load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [
                {"name": "small", "instanceTypes": ["g4dn.xlarge"], "timeSlicing": {"replicas": 4, "profile": "ts4"}},
                {"name": "big", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 4, "profile": "ts4"}},
            ],
            "observability": {"enabled": True},
        }
    )


def by_name(spec: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in spec["groups"][0]["rules"]:
        out.setdefault(r["alert"], []).append(r)
    return out


# ---------------------------------------------------------------------------------------------
# The real tool
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["dev", "varied"])
def test_promtool_check_rules_accepts_the_rule_file(tmp_path, which):
    tool = promtool()
    s = varied_settings() if which == "varied" else settings_for_stack("dev")
    done = run(tool, "check", "rules", rule_file(tmp_path, rules.rule_spec(s.plans, s.observability.alerts)))
    assert done.returncode == 0, done.stdout + done.stderr
    expected = "8 rules found" if which == "varied" else "7 rules found"
    assert expected in done.stdout


def test_promtool_unit_tests_fire_and_do_not_fire_each_alert(tmp_path):
    tool = promtool()
    rule_file(tmp_path, dev_spec())
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_unit_tests_cover_every_alert_firing_and_not_firing():
    tests = yaml.safe_load(TEST_FILE.read_text())["tests"]
    fired: set[str] = set()
    silent: set[str] = set()
    for group in tests:
        for case in group["alert_rule_test"]:
            (fired if case["exp_alerts"] else silent).add(case["alertname"])
    alerts = set(by_name(dev_spec()))
    assert fired == alerts
    # XID: each of the two alerts is the other's non-firing case (the same series).
    assert silent | {"GpuXidApplicationError", "GpuXidHardwareError"} == alerts


def test_promtool_two_groups_of_one_profile_each_compared_with_their_own_count(tmp_path):
    tool = promtool()
    s = two_groups_settings()
    rule_file(tmp_path, rules.rule_spec(s.plans, s.observability.alerts), "two_groups_rules.yaml")
    shutil.copy(TWO_GROUPS_TEST_FILE, tmp_path / TWO_GROUPS_TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TWO_GROUPS_TEST_FILE.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_a_broken_rule_fails_the_unit_tests(tmp_path):
    """The promtool tests can fail: with the memory threshold off by one they do."""
    tool = promtool()
    spec = dev_spec()
    for r in spec["groups"][0]["rules"]:
        r["expr"] = r["expr"].replace("* 100 >= 90", "* 100 > 90")
    rule_file(tmp_path, spec)
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode != 0
    assert "alertname: GpuMemoryNearFull" in done.stdout + done.stderr


def test_an_xid_alert_on_the_last_value_alone_fails_the_unit_tests(tmp_path):
    """The last-XID field is sticky (dcgm-exporter#500): alerting on its value alone keeps firing on
    an old XID, which the unit tests catch."""
    tool = promtool()
    spec = dev_spec()
    for r in spec["groups"][0]["rules"]:
        if r["alert"] == "GpuXidApplicationError":
            r["expr"] = rules.application_xid_expr()
    rule_file(tmp_path, spec)
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode != 0
    assert 'node="n4"' in done.stdout + done.stderr


def test_counting_containers_as_pods_fails_the_unit_tests(tmp_path):
    """One pod of two containers on a busy GPU is not contention: the per-container count fails."""
    tool = promtool()
    spec = dev_spec()
    for r in spec["groups"][0]["rules"]:
        r["expr"] = r["expr"].replace(
            'max by (node, UUID, gpu, pod_uid) (DCGM_FI_DEV_GPU_UTIL{pod_uid!=""})', 'DCGM_FI_DEV_GPU_UTIL{pod_uid!=""}'
        )
    rule_file(tmp_path, spec)
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode != 0
    assert 'node="n4"' in done.stdout + done.stderr


# ---------------------------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------------------------


def test_application_xids_are_the_device_plugins():
    # k8s-device-plugin internal/rm/health.go ignoredXids (v0.17.2, v0.18.1, v0.20.0).
    assert rules.APPLICATION_XIDS == (13, 31, 43, 45, 68, 109)


def test_the_application_xid_alert_fires_only_on_a_change_within_15m():
    (xid,) = by_name(dev_spec())["GpuXidApplicationError"]
    last = "max by (node, UUID, gpu) (DCGM_FI_DEV_XID_ERRORS)"
    assert xid["expr"] == (
        f"({last} == 13 or {last} == 31 or {last} == 43 or {last} == 45 or {last} == 68 or {last} == 109) "
        f"unless on (node, UUID, gpu) ({last} == on (node, UUID, gpu) "
        # The last value up to 15m ago, bridging exporter restarts and scrape gaps.
        f"last_over_time(({last})[2h:1m] offset 15m))"
    )
    assert xid["for"] == "0m"


def test_kube_state_metrics_names():
    assert rules.kube_state_metrics_name("nvidia.com/gpu") == "nvidia_com_gpu"
    assert rules.kube_state_metrics_name("nvidia.com/gpu.shared") == "nvidia_com_gpu_shared"
    assert rules.kube_state_metrics_name("nvidia.com/device-plugin.config") == "nvidia_com_device_plugin_config"


def test_thresholds_are_the_settings():
    s = varied_settings()
    alerts = by_name(rules.rule_spec(s.plans, s.observability.alerts))
    memory = alerts["GpuMemoryNearFull"][0]
    assert memory["expr"].endswith("* 100 >= 80")
    assert memory["for"] == "2m"
    contended = alerts["SharedGpuContended"][0]
    assert contended["expr"].startswith('max by (node, UUID, gpu) (DCGM_FI_DEV_GPU_UTIL{pod_uid=""}) >= 70 and')
    # Pods, not containers: one series per container, each with its pod's value (dcgm-exporter
    # internal/pkg/transformation/kubernetes.go createPerProcessMetrics, 4.5.3-4.8.2).
    assert contended["expr"].endswith(
        "and on (node, UUID, gpu) count by (node, UUID, gpu) (max by (node, UUID, gpu, pod_uid) "
        '(DCGM_FI_DEV_GPU_UTIL{pod_uid!=""}) > 0) > 1'
    )
    assert contended["for"] == "1h"
    idle = alerts["GpuSlotIdle"][0]
    assert idle["expr"] == ('max by (namespace, pod, node, UUID, gpu) (DCGM_FI_DEV_GPU_UTIL{pod_uid!=""}) <= 10')
    assert idle["for"] == "4h"
    assert [r["for"] for r in alerts["GpuSlotsNotAdvertised"]] == ["20m", "20m"]
    assert alerts["GpuExporterMissing"][0]["for"] == "30m"


def test_default_thresholds():
    s = load_settings({"clusterName": "c"})
    t = s.observability.alerts
    assert (t.memory_used_percent, t.memory_for) == (90, "5m")
    assert (t.contention_utilization_percent, t.contention_for) == (95, "30m")
    assert (t.idle_utilization_percent, t.idle_for) == (5, "2h")
    assert (t.advertised_for, t.exporter_missing_for) == ("15m", "10m")


def test_one_advertised_rule_per_node_group_with_its_resource_and_count():
    s = varied_settings()
    advertised = by_name(rules.rule_spec(s.plans, s.observability.alerts))["GpuSlotsNotAdvertised"]
    assert [(r["labels"], r["expr"]) for r in advertised] == [
        (
            {"severity": "warning", "node_group": "t4", "profile": "timeslice-x4"},
            'max by (node) (kube_node_labels{label_gpu_eks_io_node_group=~"t4"}) unless on '
            '(node) (max by (node) (kube_node_status_capacity{resource="nvidia_com_gpu"}) == 4)',
        ),
        (
            # g4dn.12xlarge: 4 GPUs x 2 replicas, renamed to nvidia.com/gpu.shared.
            {"severity": "warning", "node_group": "big", "profile": "big"},
            'max by (node) (kube_node_labels{label_gpu_eks_io_node_group=~"big"}) unless on '
            '(node) (max by (node) (kube_node_status_capacity{resource="nvidia_com_gpu_shared"}) == 8)',
        ),
    ]


def test_groups_sharing_a_profile_get_one_rule_each_with_their_own_count():
    s = two_groups_settings()
    advertised = by_name(rules.rule_spec(s.plans, s.observability.alerts))["GpuSlotsNotAdvertised"]
    assert [(r["labels"]["node_group"], r["expr"].rsplit("== ", 1)[1]) for r in advertised] == [
        ("small", "4)"),
        ("big", "16)"),
    ]


def test_exporter_missing_covers_every_profile_and_resource():
    s = varied_settings()
    (missing,) = by_name(rules.rule_spec(s.plans, s.observability.alerts))["GpuExporterMissing"]
    assert missing["expr"] == (
        '(max by (node) (kube_node_labels{label_gpu_eks_io_node_group=~"t4|big"}) or '
        'max by (node) (kube_node_status_capacity{resource=~"nvidia_com_gpu|nvidia_com_gpu_shared"} > 0)) '
        "unless on (node) max by (node) (DCGM_FI_DEV_FB_FREE)"
    )


def test_every_alert_has_a_severity_and_a_runbook():
    for r in dev_spec()["groups"][0]["rules"]:
        assert r["labels"]["severity"] in ("critical", "warning", "info")
        assert set(r["annotations"]) == {"summary", "description", "runbook"}
        assert r["annotations"]["runbook"].endswith(f"(runbook: docs/observability.md, alert {r['alert']})")


def test_rules_use_only_fields_of_the_prometheus_rule_crd():
    """Checked once by hand: the dev rule object validates against the PrometheusRule CRD schema of
    prometheus-operator v0.93.0 (example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml,
    every object closed); a rule's fields there: alert, annotations, expr, for, keep_firing_for,
    labels, record. Durations are Prometheus durations ("0m", "5m", "1h30m")."""
    for r in dev_spec()["groups"][0]["rules"]:
        assert set(r) == {"alert", "expr", "for", "labels", "annotations"}
    assert set(dev_spec()) == {"groups"}
    assert set(dev_spec()["groups"][0]) == {"name", "rules"}


MIG_TEST_FILE = ROOT / "tests" / "alerts" / "mig_test.yaml"


def test_promtool_a_mig_node_is_checked_per_resource_and_its_memory_per_slice(tmp_path):
    """A p5 group under mixed (issue 24): each advertised resource, and each slice's memory."""
    tool = promtool()
    s = load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [
                {
                    "name": "h100",
                    "instanceTypes": ["p5.48xlarge"],
                    "migStrategy": "mixed",
                    "mig": {"migDevices": {"1g.10gb": 4, "3g.40gb": 1}},
                }
            ],
            "observability": {"enabled": True},
        }
    )
    rule_file(tmp_path, rules.rule_spec(s.plans, s.observability.alerts), "mig_rules.yaml")
    shutil.copy(MIG_TEST_FILE, tmp_path / MIG_TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / MIG_TEST_FILE.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
