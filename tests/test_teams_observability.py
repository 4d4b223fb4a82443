"""Usage per team (issue 25): the alert GpuTeamAtQuotaWithPendingPods, checked and unit-tested by the real
promtool (tests/alerts/teams_test.yaml: firing and silent cases), and the dashboard's "Per team" row;
both only with teams (dev and prod, without, render as before: tests/test_snapshots.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml

from components.check.loading import load_settings
from components.observability import dashboard, rules
from components.observability import teams as team_usage
from tests.support.paths import ROOT
from tests.support.tools.promtool import promtool

TEST_FILE = ROOT / "tests" / "alerts" / "teams_test.yaml"
SETTINGS = load_settings(
    {
        "clusterName": "c",
        "autoscaler": {"enabled": False},
        "gpuNodeGroups": [{"name": "t4"}, {"name": "shared", "timeSlicing": {"replicas": 2, "renameByDefault": True}}],
        "teams": [
            {"name": "ml", "quota": {"nvidia.com/gpu": 2}, "nodeGroups": ["t4"]},
            {"name": "cv", "namespace": "vision", "quota": {"nvidia.com/gpu.shared": 4}, "nodeGroups": ["shared"]},
            {"name": "ops", "nodeGroups": ["t4"]},
        ],
        "observability": {"enabled": True, "pipeline": "prometheus"},
    }
)


def spec() -> dict:
    return rules.rule_spec(SETTINGS.plans, SETTINGS.observability.alerts, team_usage.rule_group(SETTINGS.teams))


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, check=False)


def test_promtool_checks_and_unit_tests_the_team_alert(tmp_path):
    tool = promtool()
    (tmp_path / "teams_rules.yaml").write_text(yaml.safe_dump(spec(), sort_keys=False))
    checked = run(tool, "check", "rules", tmp_path / "teams_rules.yaml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "10 rules found" in checked.stdout  # 8 shared-GPU alerts (2 groups: 2 GpuSlotsNotAdvertised), 2 teams
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_unit_tests_fail_when_the_pending_pods_are_not_the_gpu_resources(tmp_path):
    # Reading pods of any resource (the condition broken) fires for cv's CPU pod: the unit test fails.
    tool = promtool()
    broken = spec()
    for r in broken["groups"][1]["rules"]:
        r["expr"] = (
            r["expr"]
            .replace('resource="nvidia_com_gpu_shared"', 'resource=~".+"')
            .replace('resource="nvidia_com_gpu"', 'resource=~".+"')
        )
    (tmp_path / "teams_rules.yaml").write_text(yaml.safe_dump(broken, sort_keys=False))
    shutil.copy(TEST_FILE, tmp_path / TEST_FILE.name)
    done = run(tool, "test", "rules", tmp_path / TEST_FILE.name)
    assert done.returncode != 0


def test_one_alert_per_team_quota_reading_kube_state_metrics():
    groups = spec()["groups"]
    assert [g["name"] for g in groups] == ["gpu-eks-shared-gpus", "gpu-eks-teams"]
    team_rules = groups[1]["rules"]
    assert [(r["labels"]["team"], r["labels"]["resource"]) for r in team_rules] == [
        ("ml", "nvidia.com/gpu"),
        ("cv", "nvidia.com/gpu.shared"),
    ]
    assert team_rules[1]["expr"] == (
        '(max(kube_resourcequota{namespace="vision", resource="requests.nvidia.com/gpu.shared", type="used"}) >= '
        'max(kube_resourcequota{namespace="vision", resource="requests.nvidia.com/gpu.shared", type="hard"}) > 0) '
        'and on () (count((kube_pod_status_phase{namespace="vision", phase="Pending"} == 1) and on (namespace, pod) '
        '(kube_pod_container_resource_requests{namespace="vision", resource="nvidia_com_gpu_shared"} > 0)) > 0)'
    )


def test_no_teams_no_team_group_and_no_team_panels():
    assert team_usage.rule_group(()) == []
    assert team_usage.rule_group([SETTINGS.teams[2]]) == []  # ops has no quota
    panels = dashboard.dashboard(SETTINGS.plans)["panels"]
    # The node health row (ids 15-18) follows the per-pod row directly.
    assert [p["id"] for p in panels] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 17, 18]


def test_the_dashboard_has_a_per_team_row():
    model = json.loads(dashboard.dashboard_json(SETTINGS.plans, SETTINGS.teams))
    team_panels = [p for p in model["panels"] if 10 < p["id"] < 15]
    assert [(p["title"], p["gridPos"]) for p in team_panels] == [
        ("Per team", {"h": 1, "w": 24, "x": 0, "y": 34}),
        ("GPU quota used per team", {"h": 8, "w": 12, "x": 0, "y": 35}),
        ("GPU quota per team (hard)", {"h": 8, "w": 12, "x": 12, "y": 35}),
        ("GPU utilisation per team (sum over its pods)", {"h": 8, "w": 12, "x": 0, "y": 43}),
    ]
    assert [p["targets"][0]["expr"] for p in team_panels[1:]] == [
        'max by (namespace, resource) (kube_resourcequota{namespace=~"ml|ops|vision", resource=~"requests[.].*", '
        'type="used"})',
        'max by (namespace, resource) (kube_resourcequota{namespace=~"ml|ops|vision", resource=~"requests[.].*", '
        'type="hard"})',
        'sum by (namespace) (max by (namespace, pod, node, gpu) (DCGM_FI_DEV_GPU_UTIL{pod_uid!="", '
        'namespace=~"ml|ops|vision"}))',
    ]
