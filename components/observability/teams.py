"""Usage per team: the alert ``GpuTeamAtQuotaWithPendingPods`` (a rule group of its own, only with
teams) and the dashboard's "Per team" row. Pure: no Pulumi.

Series, from kube-state-metrics (v2.20.0):

* ``kube_resourcequota{namespace, resourcequota, resource, type="hard"|"used"}``
  (``internal/store/resourcequota.go``): ``resource`` is the quota's key as written,
  ``requests.nvidia.com/gpu`` (label values are not sanitized);
* ``kube_pod_container_resource_requests{namespace, pod, container, resource, unit}``
  (``internal/store/pod.go``): an extended resource's name sanitized (``nvidia_com_gpu``, unit
  ``integer``, ``SanitizeLabelName``);
* ``kube_pod_status_phase{namespace, pod, phase}`` (1 for the pod's phase).

Per-pod GPU use comes from dcgm-exporter's per-pod series (``namespace`` label; see ``rules``).

What the alert cannot see: a pod the quota refuses is never created (the API server answers
"exceeded quota"; its controller records a FailedCreate event), so it is never Pending. The alert
fires on the pods that exist and wait (created while the team was under its quota, or a team at its
quota whose own pods cannot be scheduled); the dashboard's used-against-hard panel shows the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..catalog.labels import QUOTA_REQUESTS_PREFIX
from ..config.teams import TeamSettings
from .rules import kube_state_metrics_name

#: Name of the teams' rule group (in the same PrometheusRule as the shared-GPU alerts).
GROUP_NAME = "gpu-eks-teams"
ALERT = "GpuTeamAtQuotaWithPendingPods"
#: Where the alert's runbook is: the teams page's section on usage.
RUNBOOK = "docs/teams.md#usage-per-team"


def _quota(namespace: str, resource: str, kind: str) -> str:
    quota_key = f"{QUOTA_REQUESTS_PREFIX}{resource}"
    return f'max(kube_resourcequota{{namespace="{namespace}", resource="{quota_key}", type="{kind}"}})'


def pending_pods_expr(namespace: str, resource: str) -> str:
    """Pods of ``namespace`` that are Pending and request ``resource``."""
    name = kube_state_metrics_name(resource)
    requests = f'kube_pod_container_resource_requests{{namespace="{namespace}", resource="{name}"}}'
    pending = f'kube_pod_status_phase{{namespace="{namespace}", phase="Pending"}} == 1'
    return f"count(({pending}) and on (namespace, pod) ({requests} > 0))"


def at_quota_expr(team: TeamSettings, resource: str) -> str:
    """The team's pods use all of its quota of ``resource`` and some of them requesting it are Pending."""
    ns = team.namespace_name
    return (
        f"({_quota(ns, resource, 'used')} >= {_quota(ns, resource, 'hard')} > 0) "
        f"and on () ({pending_pods_expr(ns, resource)} > 0)"
    )


def team_rules(teams: Sequence[TeamSettings]) -> list[dict[str, Any]]:
    """One alert per team and quota resource, in order."""
    out = []
    for team in teams:
        for resource in sorted(team.quota):
            out.append(
                {
                    "alert": ALERT,
                    "expr": at_quota_expr(team, resource),
                    "for": "15m",
                    "labels": {
                        "severity": "info",
                        "team": team.name,
                        "namespace": team.namespace_name,
                        "resource": resource,
                    },
                    "annotations": {
                        "summary": f"Team {team.name} is at its {resource} quota with GPU pods pending",
                        "description": f"Namespace {team.namespace_name} uses all {team.quota[resource]} {resource} of "
                        "its quota and GPU pods of it are Pending: its work waits on its quota or on capacity of its "
                        "node groups.",
                        "runbook": f"kubectl -n {team.namespace_name} describe resourcequota; kubectl -n "
                        f"{team.namespace_name} get pods --field-selector=status.phase=Pending; raise the team's quota "
                        "or its groups' maxSize, or finish idle pods "
                        f"(runbook: {RUNBOOK}, alert {ALERT})",
                    },
                }
            )
    return out


def rule_group(teams: Sequence[TeamSettings]) -> list[dict[str, Any]]:
    """The teams' rule group (a list of one), or [] when no team has a quota."""
    rules = team_rules(teams)
    return [{"name": GROUP_NAME, "rules": rules}] if rules else []


def used_expr(teams: Sequence[TeamSettings], kind: str) -> str:
    """GPU quota ``used`` or ``hard`` per team namespace and resource."""
    namespaces = "|".join(sorted(t.namespace_name for t in teams))
    return (
        f'max by (namespace, resource) (kube_resourcequota{{namespace=~"{namespaces}", '
        f'resource=~"{QUOTA_REQUESTS_PREFIX.replace(".", "[.]")}.*", type="{kind}"}})'
    )


def gpu_use_expr(teams: Sequence[TeamSettings]) -> str:
    """GPU utilisation summed per team namespace (percent of one GPU, per-pod series)."""
    namespaces = "|".join(sorted(t.namespace_name for t in teams))
    return (
        f'sum by (namespace) (max by (namespace, pod, node, gpu) (DCGM_FI_DEV_GPU_UTIL{{pod_uid!="", '
        f'namespace=~"{namespaces}"}}))'
    )
