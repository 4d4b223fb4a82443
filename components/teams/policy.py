"""A team's placement policy, as plain dicts (no Pulumi): a ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) that refuse the team's GPU pods that could
land outside the team's node groups. The API server enforces it itself: no webhook, no controller.

What it checks, for pods created in the team's namespace (the binding's namespace
selector, on the ``kubernetes.io/metadata.name`` label the API server sets on every namespace):

* a *GPU pod* is one with a container or init container whose requests or limits name a GPU resource
  of the cluster (every resource a group advertises, ``GroupPlan.advertised_resources``) at a
  quantity other than 0 (the team's LimitRange writes 0 into containers that ask for none; the API
  server hands admission the canonical form of a quantity, so zero is ``"0"``:
  k8s.io/apimachinery pkg/api/resource Quantity MarshalJSON);
* such a pod pins the team's groups: its ``nodeSelector`` names one of them under
  ``gpu-eks.io/node-group``, or every term of its required node affinity has an ``In`` expression on
  that label whose values are all the team's groups (terms are ORed, so each must be pinned);
* it tolerates no taint that only other groups carry, and has no toleration of every taint (an
  empty key with ``Exists``): belt and braces, since the selector already keeps it off them.

What it cannot see: pods of other namespaces (teams are namespaces); a node's labels (a node that
relabels itself ``gpu-eks.io/node-group`` of a team's group gets its pods); GPUs requested through
Dynamic Resource Allocation (``resourceClaims``), which name no extended resource; preferred
(not required) affinity, which it ignores. The kubelet re-checks the node selector and required
affinity when a pod names its node directly (``spec.nodeName``), so that path is covered.

A DaemonSet's GPU pods must pin the team's groups with ``nodeSelector``: the DaemonSet controller
replaces every required node-affinity term of the pods it creates with one ``matchFields``
``metadata.name In [<node>]`` term (k8s.io/kubernetes pkg/controller/daemon/util/daemonset_util.go
ReplaceDaemonSetPodNodeNameNodeAffinity), which names no group, so a template pinned by affinity
alone gives pods the policy refuses.

The expressions are evaluated in tests with a CEL implementation (tests/test_teams_policy.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..catalog.labels import NODE_GROUP_LABEL
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from .objects import object_name, team_labels


def _list(values: Sequence[str]) -> str:
    """A CEL list literal of strings (JSON string syntax is CEL's for these)."""
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def gpu_resources(plans: Sequence[GroupPlan]) -> list[str]:
    """Every GPU resource a group of the cluster advertises, sorted."""
    return sorted({r for p in plans for r in p.advertised_resources})


def foreign_taint_keys(team: TeamSettings, plans: Sequence[GroupPlan]) -> list[str]:
    """Taint keys of other groups that none of the team's groups carries, sorted."""
    mine = {t.key for p in plans if p.name in team.node_groups for t in p.taints}
    return sorted({t.key for p in plans if p.name not in team.node_groups for t in p.taints} - mine)


def match_condition(resources: Sequence[str]) -> str:
    """CEL: the pod asks for a GPU resource (not 0) in a container or an init container."""
    resources_list = _list(resources)
    per_container = (
        f"has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r in {resources_list} && "
        "string(c.resources.limits[r]) != '0')) || (has(c.resources.requests) && c.resources.requests.exists(r, "
        f"r in {resources_list} && string(c.resources.requests[r]) != '0')))"
    )
    return (
        f"object.spec.containers.exists(c, {per_container}) || "
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {per_container}))"
    )


def placement_expression(team: TeamSettings) -> str:
    """CEL: the pod's node selector or required node affinity pins the team's groups."""
    groups = _list(team.node_groups)
    key = json.dumps(NODE_GROUP_LABEL)
    selector = (
        f"(has(object.spec.nodeSelector) && {key} in object.spec.nodeSelector && "
        f"object.spec.nodeSelector[{key}] in {groups})"
    )
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = (
        f"(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"size({required}.nodeSelectorTerms) > 0 && {required}.nodeSelectorTerms.all(t, has(t.matchExpressions) && "
        f"t.matchExpressions.exists(e, e.key == {key} && e.operator == 'In' && has(e.values) && size(e.values) > 0 "
        f"&& e.values.all(v, v in {groups}))))"
    )
    return f"{selector} || {affinity}"


def tolerations_expression(foreign_keys: Sequence[str]) -> str:
    """CEL: no toleration of every taint, nor of a taint only other groups carry."""
    everything = "(!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'"
    foreign = f" || (has(t.key) && t.key in {_list(foreign_keys)})" if foreign_keys else ""
    return f"!has(object.spec.tolerations) || !object.spec.tolerations.exists(t, ({everything}){foreign})"


def placement_message(team: TeamSettings) -> str:
    """The start of the placement refusal (plain characters: the API server's JSON escapes ``<``)."""
    return f"team {team.name}: a GPU pod must select its node groups"


def validations(team: TeamSettings, plans: Sequence[GroupPlan]) -> list[dict[str, str]]:
    groups = ", ".join(team.node_groups)
    return [
        {
            "expression": placement_expression(team),
            "message": f"{placement_message(team)} ({groups}) with nodeSelector "
            f"{NODE_GROUP_LABEL}: <group>, or with a required node affinity In on {NODE_GROUP_LABEL} in every term",
            "reason": "Forbidden",
        },
        {
            "expression": tolerations_expression(foreign_taint_keys(team, plans)),
            "message": f"team {team.name}: a GPU pod may not tolerate every taint, nor taints of node groups other "
            f"than its own ({groups})",
            "reason": "Forbidden",
        },
    ]


def admission_policy(team: TeamSettings, plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The team's ValidatingAdmissionPolicy (``plans``: every GPU group of the cluster)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": object_name(team), "labels": team_labels(team)},
        "spec": {
            # An error evaluating the policy refuses the pod: placement fails closed.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        # CREATE only: a pod's node selector and affinity cannot be loosened after
                        # it is created (k8s.io/kubernetes validation.go ValidatePodUpdate; a pod
                        # with scheduling gates may only narrow them, KEP-3838), and an
                        # UPDATE check would block removing the finalizers of pods admitted before
                        # the policy or a change of the team's groups (Jobs' job-tracking finalizer).
                        # Tolerations may be added by an update (ValidatePodUpdate), unchecked
                        # here: the node selector or affinity still keeps the pod on its groups.
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "matchConditions": [{"name": "requests-a-gpu", "expression": match_condition(gpu_resources(plans))}],
            "validations": validations(team, plans),
        },
    }


def admission_binding(team: TeamSettings) -> dict[str, Any]:
    """The binding of the team's policy to its namespace, denying what the policy refuses."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": object_name(team), "labels": team_labels(team)},
        "spec": {
            "policyName": object_name(team),
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": team.namespace_name},
                }
            },
        },
    }
