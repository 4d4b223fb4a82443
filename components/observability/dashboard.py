"""The Grafana dashboard of the shared GPUs: per node and per pod (utilisation, memory used against
the slot's share, XIDs). Pure: a dict that is the dashboard's JSON model.

Series: see ``rules`` (device-level series have no ``pod_uid``, per-pod ones have it; per-pod
panels stay empty at chart versions whose exporter has no per-pod metrics).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from ..catalog import node_health
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from . import teams as team_usage

#: The dashboard's uid and title (stable: Grafana links use the uid).
UID = "gpu-eks-shared-gpus"
TITLE = "Shared GPUs (gpu-eks)"
#: The label the Grafana sidecar loads dashboards from (kube-prometheus-stack's Grafana:
#: ``sidecar.dashboards.label``, value ``"1"``).
SIDECAR_LABEL = {"grafana_dashboard": "1"}
#: The ConfigMap key: one dashboard file.
FILE_NAME = f"{UID}.json"

_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_NODE = 'node=~"$node"'
_WIDTH = 12
_HEIGHT = 8


def _panel(
    panel_id: int, title: str, expr: str, legend: str, unit: str, x: int, y: int, thresholds: Sequence[int] = ()
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    steps += [{"color": "red", "value": v} for v in thresholds]
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": _DATASOURCE,
        "gridPos": {"h": _HEIGHT, "w": _WIDTH, "x": x, "y": y},
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "thresholds": {"mode": "absolute", "steps": steps},
                "custom": {"thresholdsStyle": {"mode": "line" if thresholds else "off"}},
            },
            "overrides": [],
        },
        "targets": [{"refId": "A", "datasource": _DATASOURCE, "expr": expr, "legendFormat": legend}],
    }


def _row(panel_id: int, title: str, y: int) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": "row",
        "title": title,
        "collapsed": False,
        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
        "panels": [],
    }


def slot_shares(plans: Sequence[GroupPlan]) -> list[tuple[str, int]]:
    """(group, GPU memory per slot in MiB) of each group, in order."""
    return [(p.name, p.memory_per_slot_mib) for p in plans]


def _slots_per_gpu(plan: GroupPlan) -> str:
    """A GPU's slots: its replicas, or on MIG its slices (profile x count, x replicas if shared)."""
    if plan.mig_layout is None:
        return str(plan.slots_per_node // plan.gpus_per_node)
    shared = plan.settings.mig.replicas if plan.settings.mig is not None else {}
    return " + ".join(
        f"{n} {profile}" + (f" x {shared[profile]}" if profile in shared else "")
        for profile, n in plan.mig_layout.items()
    )


def _slot_table(panel_id: int, plans: Sequence[GroupPlan], y: int) -> dict[str, Any]:
    lines = ["| group | instance types | GPUs x replicas | memory per slot |", "|---|---|---|---|"]
    lines += [
        f"| {p.name} | {', '.join(p.instance_types)} | {p.gpus_per_node} x {_slots_per_gpu(p)} "
        f"| {p.memory_per_slot_mib} MiB |"
        for p in plans
    ]
    return {
        "id": panel_id,
        "type": "text",
        "title": "Each slot's share of its GPU's memory",
        "gridPos": {"h": _HEIGHT, "w": _WIDTH, "x": _WIDTH, "y": y},
        "options": {
            "mode": "markdown",
            "content": "\n".join(lines)
            + "\n\nTime-slicing does not enforce the share: a pod above it takes memory from the others.",
        },
    }


def _team_panels(teams: Sequence[TeamSettings], y: int) -> list[dict[str, Any]]:
    """The "Per team" row (only with teams): GPU quota used against hard, GPU use per team."""
    quota = "{{namespace}} {{resource}}"
    return [
        _row(11, "Per team", y),
        _panel(12, "GPU quota used per team", team_usage.used_expr(teams, "used"), quota, "none", 0, y + 1),
        _panel(13, "GPU quota per team (hard)", team_usage.used_expr(teams, "hard"), quota, "none", _WIDTH, y + 1),
        _panel(
            14,
            "GPU utilisation per team (sum over its pods)",
            team_usage.gpu_use_expr(teams),
            "{{namespace}}",
            "percent",
            0,
            y + 1 + _HEIGHT,
        ),
    ]


#: The node conditions of the node monitoring agent (aws/eks-node-monitoring-agent v1.7.0
#: pkg/reasons/reasons.yaml) and kubelet's Ready, as kube-state-metrics writes them.
_CONDITIONS = "AcceleratedHardwareReady|ContainerRuntimeReady|KernelReady|NetworkingReady|StorageReady|Ready"
_GROUP = "label_gpu_eks_io_node_group"
#: Each node's GPU group (kube-state-metrics' kube_node_labels, the allowlisted group label: rules).
_NODE_GROUP = f'max by (node, {_GROUP}) (kube_node_labels{{{_GROUP}!=""}})'


def _node_health_panels(y: int) -> list[dict[str, Any]]:
    """The "Node health" row: the unhealthy conditions per GPU group, and repairs over time."""
    unhealthy = (
        f'sum by ({_GROUP}, condition) (kube_node_status_condition{{condition=~"{_CONDITIONS}", status="false"}} '
        f"* on (node) group_left ({_GROUP}) {_NODE_GROUP})"
    )
    # Karpenter counts its repairs (karpenter_nodeclaims_unhealthy_disrupted_total, per NodePool);
    # EKS publishes no metric for a managed node group's: a GPU fault that clears (a reboot) or
    # whose node goes (a replacement) shows as changes of its condition.
    karpenter = f"sum by (nodepool, condition) (increase({node_health.KARPENTER_REPAIR_METRIC}[1h]))"
    managed = (
        f'sum by ({_GROUP}) (changes(kube_node_status_condition{{condition="AcceleratedHardwareReady", '
        f'status="false"}}[1h]) * on (node) group_left ({_GROUP}) {_NODE_GROUP})'
    )
    return [
        _row(15, "Node health (docs/node-health.md)", y),
        _panel(
            16,
            "Unhealthy node conditions per GPU group",
            unhealthy,
            f"{{{{{_GROUP}}}}} {{{{condition}}}}",
            "none",
            0,
            y + 1,
        ),
        _panel(
            17,
            "Karpenter repairs per hour (per NodePool)",
            karpenter,
            "{{nodepool}} {{condition}}",
            "none",
            _WIDTH,
            y + 1,
        ),
        _panel(
            18,
            "GPU fault changes per hour (AcceleratedHardwareReady False set or cleared)",
            managed,
            f"{{{{{_GROUP}}}}}",
            "none",
            0,
            y + 1 + _HEIGHT,
        ),
    ]


def dashboard(plans: Sequence[GroupPlan], teams: Sequence[TeamSettings] = ()) -> dict[str, Any]:
    """The dashboard model: a "Per node" row, a "Per pod" row (the red line of its memory panel is
    the smallest slot share) and the slot table; with ``teams``, a "Per team" row below them; then
    the "Node health" row."""
    panels = [*_node_panels(plans), *_pod_panels(plans), _slot_table(10, plans, 2 + 3 * _HEIGHT)]
    if teams:
        panels += _team_panels(teams, 2 + 4 * _HEIGHT)
    panels += _node_health_panels(2 + 4 * _HEIGHT + (1 + 2 * _HEIGHT if teams else 0))
    return {
        "uid": UID,
        "title": TITLE,
        "tags": ["gpu", "gpu-eks"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": copy.deepcopy(_VARIABLES)},
        "panels": panels,
    }


#: The dashboard's variables: the Prometheus data source and the nodes (all by default).
_VARIABLES = [
    {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
    {
        "name": "node",
        "type": "query",
        "label": "Node",
        "datasource": _DATASOURCE,
        "query": {"query": "label_values(DCGM_FI_DEV_FB_FREE, node)", "refId": "node"},
        "definition": "label_values(DCGM_FI_DEV_FB_FREE, node)",
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
    },
]
#: The legend of a series per GPU.
_PER_GPU = "{{node}} GPU {{gpu}}"


def _node_panels(plans: Sequence[GroupPlan]) -> list[dict[str, Any]]:
    """The "Per node" row: utilisation, memory (per MIG slice too, with a MIG group), last XID and
    the pods holding a slot, per GPU."""
    # With a MIG group, memory per slice (dcgm-exporter's GPU_I_ID, GPU_I_PROFILE: rules._SLICE).
    mig = any(p.mig_layout is not None for p in plans)
    memory_by = "node, gpu, GPU_I_ID, GPU_I_PROFILE" if mig else "node, gpu"
    memory_legend = _PER_GPU + (" {{GPU_I_PROFILE}} {{GPU_I_ID}}" if mig else "")
    return [
        _row(1, "Per node", 0),
        _panel(
            2,
            "GPU utilisation per GPU",
            f'max by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{{pod_uid="", {_NODE}}})',
            _PER_GPU,
            "percent",
            0,
            1,
        ),
        _panel(
            3,
            "GPU memory used per GPU" + (" and MIG slice" if mig else ""),
            f'max by ({memory_by}) (DCGM_FI_DEV_FB_USED{{pod_uid="", {_NODE}}})',
            memory_legend,
            "decmbytes",
            _WIDTH,
            1,
        ),
        _panel(
            4,
            "Last XID per GPU (0: none)",
            f"max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS{{{_NODE}}})",
            _PER_GPU,
            "none",
            0,
            1 + _HEIGHT,
        ),
        _panel(
            5,
            "Pods holding a slot per GPU",
            # A series per container holding a slot: one per pod first (see rules.alert_rules).
            f'count by (node, gpu) (max by (node, gpu, pod_uid) (DCGM_FI_DEV_GPU_UTIL{{pod_uid!="", {_NODE}}}))',
            _PER_GPU,
            "none",
            _WIDTH,
            1 + _HEIGHT,
        ),
    ]


def _pod_panels(plans: Sequence[GroupPlan]) -> list[dict[str, Any]]:
    """The "Per pod" row: utilisation, memory (red: the smallest slot share of ``plans``) and the
    last XID of the GPU each pod runs on."""
    per_pod = "{{namespace}}/{{pod}} ({{node}} GPU {{gpu}})"
    return [
        _row(6, "Per pod", 1 + 2 * _HEIGHT),
        _panel(
            7,
            "GPU utilisation per pod",
            f'max by (namespace, pod, node, gpu) (DCGM_FI_DEV_GPU_UTIL{{pod_uid!="", {_NODE}}})',
            per_pod,
            "percent",
            0,
            2 + 2 * _HEIGHT,
        ),
        _panel(
            8,
            "GPU memory used per pod (red: a slot's share)",
            f'max by (namespace, pod, node, gpu) (DCGM_FI_DEV_FB_USED{{pod_uid!="", {_NODE}}})',
            per_pod,
            "decmbytes",
            _WIDTH,
            2 + 2 * _HEIGHT,
            thresholds=(min(p.memory_per_slot_mib for p in plans),),
        ),
        _panel(
            9,
            "Last XID of the GPU each pod runs on",
            f'max by (namespace, pod, node, gpu) (DCGM_FI_DEV_XID_ERRORS{{pod_uid!="", {_NODE}}})',
            per_pod,
            "none",
            0,
            2 + 3 * _HEIGHT,
        ),
    ]


def dashboard_json(plans: Sequence[GroupPlan], teams: Sequence[TeamSettings] = ()) -> str:
    """The dashboard as the ConfigMap carries it (stable key order)."""
    return json.dumps(dashboard(plans, teams), sort_keys=True)
