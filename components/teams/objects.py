"""A team's namespace objects, as plain dicts (no Pulumi): the Namespace with its Pod Security labels,
the ResourceQuota of its GPU resources and the LimitRange of its per-container defaults and maxima.

Each rule is the API server's (tests/test_teams_objects.py validates every object with
kubernetes-validate at the cluster's version and checks these rules with literal values).
"""

from __future__ import annotations

from typing import Any

from ..catalog.labels import QUOTA_REQUESTS_PREFIX
from ..config.teams import TeamSettings

#: The label every team object carries (and the namespace's), with the team's name.
TEAM_LABEL = "gpu-eks.io/team"
#: Pod Security admission's namespace labels (Kubernetes docs, "Enforce Pod Security Standards with
#: namespace labels": ``pod-security.kubernetes.io/<MODE>: <LEVEL>``, modes enforce, audit, warn).
POD_SECURITY_MODES = ("enforce", "audit", "warn")


def object_name(team: TeamSettings) -> str:
    """The name of the team's objects: ``gpu-eks-team-<name>``."""
    return f"gpu-eks-team-{team.name}"


def team_labels(team: TeamSettings) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "gpu-eks", TEAM_LABEL: team.name}


def namespace(team: TeamSettings) -> dict[str, Any]:
    """The team's Namespace: its Pod Security level enforced, audited and warned."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": team.namespace_name,
            "labels": {
                **team_labels(team),
                **{f"pod-security.kubernetes.io/{mode}": team.pod_security for mode in POD_SECURITY_MODES},
            },
        },
    }


def resource_quota(team: TeamSettings) -> dict[str, Any] | None:
    """The team's ResourceQuota (``requests.<resource>`` per quota), or None without a quota."""
    if not team.quota:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": object_name(team), "namespace": team.namespace_name, "labels": team_labels(team)},
        "spec": {"hard": {f"{QUOTA_REQUESTS_PREFIX}{r}": str(n) for r, n in sorted(team.quota.items())}},
    }


def limit_range(team: TeamSettings) -> dict[str, Any] | None:
    """The team's LimitRange (one ``Container`` item), or None without defaults and maxima.

    Extended resources are never overcommitted: a container's request must equal its limit
    (k8s.io/kubernetes pkg/apis/core/validation validation.go ValidateResourceRequirements: "must be
    equal to <resource> limit", IsOvercommitAllowed is false for them). So ``default`` (the limit a
    container gets) and ``defaultRequest`` are written equal. They are written for every resource
    with a maximum too (0 when the team set no default): the API server defaults a Container item's
    missing ``default`` to its ``max`` and a missing ``defaultRequest`` to its ``default``
    (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem), so a ``max`` alone would give every
    container of the namespace, sidecars included, the maximum of GPUs.
    """
    resources = team.limited_resources
    if not resources:
        return None
    defaults = {r: str(team.default_per_container.get(r, 0)) for r in resources}
    item: dict[str, Any] = {"type": "Container", "default": defaults, "defaultRequest": dict(defaults)}
    if team.max_per_container:
        item["max"] = {r: str(n) for r, n in sorted(team.max_per_container.items())}
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": object_name(team), "namespace": team.namespace_name, "labels": team_labels(team)},
        "spec": {"limits": [item]},
    }
