"""The teams' admission policy, as the API server applies it to the pods a team's users send: a
cluster with two teams (tests/data/samples.py ``POLICY_TEAMS``), the policy of team ml, pods and
containers to send it, and the decision (kubernetes-validate for the pod itself, then the policy's
CEL, evaluated by tests/support/standins/admission.py).

Read by tests/test_teams_policy.py, test_teams_device_rules.py and the property tests.
"""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate

from components.check.loading import load_settings
from components.teams import policy
from tests.data.samples import POLICY_TEAMS
from tests.support.standins.admission import refusals

#: The cluster of tests/data/samples.py POLICY_TEAMS: team ml on t4 and t4-b, cv on a10g.
SETTINGS = load_settings(POLICY_TEAMS)
ML, CV = SETTINGS.teams

POLICY = policy.admission_policy(ML, SETTINGS.plans)


def gpu_container(resource: str = "nvidia.com/gpu", count: str = "1") -> dict[str, Any]:
    return {"name": "main", "image": "cuda", "resources": {"limits": {resource: count}, "requests": {resource: count}}}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"containers": [gpu_container()], **spec},
    }


def pinned(*groups: str, key: str = "gpu-eks.io/node-group", operator: str = "In") -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": operator, "values": list(groups)}]}
                ]
            }
        }
    }


def admitted(obj: dict[str, Any], rule: dict[str, Any] = POLICY, operation: str = "CREATE", sub: str = "") -> bool:
    """What the API server decides: the pod is valid for Kubernetes itself (kubernetes-validate), and
    the policy's validations say yes (or it does not match)."""
    return not refused_by(obj, rule, operation, sub)


def refused_by(
    obj: dict[str, Any], rule: dict[str, Any] = POLICY, operation: str = "CREATE", sub: str = ""
) -> list[str]:
    """The policy's refusals of a valid pod (their messages)."""
    kubernetes_validate.validate(obj, "1.35.0", strict=True)
    return refusals(rule, obj, operation, sub)


SELECT_T4 = {"gpu-eks.io/node-group": "t4"}

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cpu(**extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "x", **extra}


def gpu(**extra: Any) -> dict[str, Any]:
    return {**gpu_container(), **extra}


def cpu_pod(**spec: Any) -> dict[str, Any]:
    return pod(**{"containers": [cpu()], **spec})


def gpu_pod(**spec: Any) -> dict[str, Any]:
    """A GPU pod that meets the placement rules (so only the rule under test can refuse it)."""
    return pod(nodeSelector=SELECT_T4, tolerations=[GPU_TOLERATION], **spec)


def debug(pod_: dict[str, Any], **container: Any) -> dict[str, Any]:
    """The pod as ``kubectl debug`` sends it: scheduled (nodeName set), an ephemeral container added."""
    out = copy.deepcopy(pod_)
    out["spec"]["nodeName"] = "ip-10-0-1-23.ec2.internal"
    out["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", **container}]
    return out
