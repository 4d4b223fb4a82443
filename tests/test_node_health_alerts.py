"""The node-health alerts (components/observability/node_health.py): run by the real promtool over
five groups that differ in capacity provider and repair bound (tests/alerts/node_health_test.yaml),
and their expressions as literals."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from components.check.loading import load_settings
from components.observability import node_health
from tests.support.paths import ROOT
from tests.support.simulation import settings_for_stack
from tests.support.tools.promtool import promtool

TEST_FILE = ROOT / "tests" / "alerts" / "node_health_test.yaml"

GROUP_NODES = 'max by (node) (kube_node_labels{label_gpu_eks_io_node_group=~"%s"})'
UNHEALTHY = (
    'count(max by (node) ((kube_node_status_condition{condition="AcceleratedHardwareReady", status="false"} == 1) '
    'or (kube_node_status_condition{condition="Ready", status!="true"} == 1)) and on (node) ' + GROUP_NODES + ")"
)


def five_groups():
    return load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [
                {"name": "big", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 10}},
                {"name": "few", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}},
                {
                    "name": "counted",
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
                    "repair": {"maxUnhealthyCount": 1, "waitMinutes": 5, "overrides": True},
                },
                {
                    "name": "kp",
                    "capacityProvider": "karpenter",
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
                },
                {
                    "name": "off",
                    "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
                    "repair": {"enabled": False},
                },
            ],
        }
    )


def test_promtool_fires_when_repair_is_paused_by_each_kind_of_bound(tmp_path):
    tool = promtool()
    spec = {"groups": [node_health.rule_group(five_groups().plans)]}
    (tmp_path / "node_health_rules.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    check = subprocess.run(
        [str(tool), "check", "rules", str(tmp_path / "node_health_rules.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "9 rules found" in check.stdout
    done = subprocess.run(
        [str(tool), "test", "rules", str(tmp_path / TEST_FILE.name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_each_bound_is_the_groups_own():
    by_group = {
        r["labels"]["node_group"]: r["expr"]
        for r in node_health.rule_group(five_groups().plans)["rules"]
        if r["alert"] == "GpuNodeRepairPaused"
    }
    nodes = "count(" + GROUP_NODES + ")"
    assert by_group == {
        # EKS's default: more than 20% once the group has more than 5 nodes (EKS user guide, node-repair).
        "big": f"{UNHEALTHY % 'big'} > {nodes % 'big'} * 0.2 and {nodes % 'big'} > 5",
        "few": f"{UNHEALTHY % 'few'} > {nodes % 'few'} * 0.2 and {nodes % 'few'} > 5",
        "counted": f"{UNHEALTHY % 'counted'} > 1",
        # Karpenter 1.14.1: 20% of the NodePool, rounded up (node/health controller.go isNodePoolHealthy).
        "kp": f"{UNHEALTHY % 'kp'} > ceil({nodes % 'kp'} * 0.2)",
    }


def test_a_fault_that_stands_past_the_wait_reaches_a_person_in_every_group():
    rules = {
        r["labels"]["node_group"]: r["for"]
        for r in node_health.rule_group(five_groups().plans)["rules"]
        if r["alert"] == "GpuNodeNotRepaired"
    }
    assert rules == {"big": "30m", "few": "30m", "counted": "25m", "kp": "30m", "off": "30m"}


def test_the_dev_stack_has_the_rule_group_beside_the_shared_gpu_alerts():
    plans = settings_for_stack("dev").plans
    group = node_health.rule_group(plans)
    assert group["name"] == "gpu-eks-node-health"
    assert [(r["alert"], r["labels"]) for r in group["rules"]] == [
        ("GpuNodeRepairPaused", {"severity": "critical", "node_group": "t4"}),
        ("GpuNodeNotRepaired", {"severity": "critical", "node_group": "t4"}),
    ]
    assert all(
        r["annotations"]["runbook"].endswith(f"(runbook: docs/node-health.md, alert {r['alert']})")
        for r in group["rules"]
    )


def test_the_dashboards_node_health_panels_are_promql_that_promtool_accepts(tmp_path):
    from components.observability import dashboard

    tool = promtool()
    panels = [p for p in dashboard.dashboard(five_groups().plans)["panels"] if p["id"] in (16, 17, 18)]
    assert [p["title"] for p in panels] == [
        "Unhealthy node conditions per GPU group",
        "Karpenter repairs per hour (per NodePool)",
        "GPU fault changes per hour (AcceleratedHardwareReady False set or cleared)",
    ]
    spec = {
        "groups": [
            {"name": "d", "rules": [{"record": f"panel_{p['id']}", "expr": p["targets"][0]["expr"]} for p in panels]}
        ]
    }
    (tmp_path / "panels.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    check = subprocess.run(
        [str(tool), "check", "rules", str(tmp_path / "panels.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert panels[1]["targets"][0]["expr"] == (
        "sum by (nodepool, condition) (increase(karpenter_nodeclaims_unhealthy_disrupted_total[1h]))"
    )
