"""The teams' placement policy (components/teams/policy.py), EVALUATED: its CEL match condition and
validations run in a CEL implementation (common-expression-language, the cel-rust bindings; pinned in
requirements-dev.txt) against pods that the API server must admit and pods it must refuse.

How the API server runs them (Kubernetes docs, "Validating Admission Policy"): a request is checked only
when every matchCondition is true; it is refused when any validation is false (validationActions
Deny). ``object`` is the pod as the API server decoded it: quantities in their canonical string form
(k8s.io/apimachinery pkg/api/resource Quantity MarshalJSON), optional fields absent, not null.
"""

from __future__ import annotations

import copy
from typing import Any

import cel
import kubernetes_validate
import pytest

from components.config.loading import load_settings
from components.teams import policy

SCALING = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
SETTINGS = load_settings(
    {
        "clusterName": "c",
        "autoscaler": {"enabled": False},
        "gpuNodeGroups": [
            # Both carry the default nvidia.com/gpu taint; a10g also its own "dedicated" taint.
            {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING},
            {"name": "t4-b", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING},
            {
                "name": "a10g",
                "instanceTypes": ["g5.xlarge"],
                "scaling": SCALING,
                "timeSlicing": {"replicas": 1},
                "taints": [
                    {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                    {"key": "dedicated", "value": "cv", "effect": "NoSchedule"},
                ],
            },
            {
                "name": "shared",
                "instanceTypes": ["g4dn.xlarge"],
                "scaling": SCALING,
                "timeSlicing": {"replicas": 2, "renameByDefault": True},
            },
        ],
        "teams": [
            {"name": "ml", "nodeGroups": ["t4", "t4-b"]},
            {"name": "cv", "nodeGroups": ["a10g"]},
        ],
    }
)
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


def admitted(obj: dict[str, Any], rule: dict[str, Any] = POLICY) -> bool:
    """What the API server decides: the pod is valid for Kubernetes itself (kubernetes-validate), and
    the policy's conditions and validations say yes (or it does not match)."""
    kubernetes_validate.validate(obj, "1.35.0", strict=True)
    ctx = {"object": obj}
    spec = rule["spec"]
    if not all(cel.evaluate(c["expression"], ctx) for c in spec["matchConditions"]):
        return True
    return all(cel.evaluate(v["expression"], ctx) for v in spec["validations"])


SELECT_T4 = {"gpu-eks.io/node-group": "t4"}


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        ("node selector on a team group", pod(nodeSelector=SELECT_T4)),
        ("node selector on the team's other group", pod(nodeSelector={"gpu-eks.io/node-group": "t4-b"})),
        ("required affinity In both team groups", pod(affinity=pinned("t4", "t4-b"))),
        ("selector plus unrelated labels", pod(nodeSelector={**SELECT_T4, "kubernetes.io/arch": "amd64"})),
        (
            "the toleration its groups need",
            pod(
                nodeSelector=SELECT_T4,
                tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            ),
        ),
        ("no GPU: not matched", pod(containers=[{"name": "web", "image": "nginx"}])),
        (
            "a GPU count of 0 written by the LimitRange: not matched",
            pod(containers=[gpu_container(count="0")], tolerations=[{"operator": "Exists"}]),
        ),
        ("cpu only: not matched", pod(containers=[{"name": "c", "image": "x", "resources": {"limits": {"cpu": "2"}}}])),
    ],
)
def test_pods_the_policy_admits(name, obj):
    assert admitted(obj), name


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        ("no placement at all", pod()),
        ("node selector on another team's group", pod(nodeSelector={"gpu-eks.io/node-group": "a10g"})),
        ("node selector on a label other than the group's", pod(nodeSelector={"nvidia.com/gpu.product": "Tesla-T4"})),
        ("affinity In a team group and another", pod(affinity=pinned("t4", "a10g"))),
        ("affinity NotIn another group", pod(affinity=pinned("a10g", operator="NotIn"))),
        (
            "affinity Exists on the label",
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "gpu-eks.io/node-group", "operator": "Exists"}]}
                            ]
                        }
                    }
                }
            ),
        ),
        (
            "one term pinned, an ORed term not",
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "gpu-eks.io/node-group", "operator": "In", "values": ["t4"]}
                                    ]
                                },
                                {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                                    ]
                                },
                            ]
                        }
                    }
                }
            ),
        ),
        (
            "preferred affinity only",
            pod(
                affinity={
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": "gpu-eks.io/node-group", "operator": "In", "values": ["t4"]}
                                    ]
                                },
                            }
                        ]
                    }
                }
            ),
        ),
        ("a toleration of every taint", pod(nodeSelector=SELECT_T4, tolerations=[{"operator": "Exists"}])),
        (
            "a toleration of another group's own taint",
            pod(nodeSelector=SELECT_T4, tolerations=[{"key": "dedicated", "operator": "Equal", "value": "cv"}]),
        ),
        (
            "the GPU in an init container",
            pod(containers=[{"name": "c", "image": "x"}], initContainers=[gpu_container()]),
        ),
        ("the renamed resource of another group", pod(containers=[gpu_container("nvidia.com/gpu.shared", "2")])),
    ],
)
def test_pods_the_policy_refuses(name, obj):
    assert not admitted(obj), name


def test_the_other_team_is_pinned_to_its_own_group():
    rule = policy.admission_policy(CV, SETTINGS.plans)
    assert admitted(pod(nodeSelector={"gpu-eks.io/node-group": "a10g"}), rule)
    assert not admitted(pod(nodeSelector=SELECT_T4), rule)
    # Its own group's taint is not another group's: cv may tolerate "dedicated".
    assert admitted(
        pod(nodeSelector={"gpu-eks.io/node-group": "a10g"}, tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        rule,
    )


def test_the_policy_reads_every_resource_and_foreign_taint_from_the_plans():
    assert policy.gpu_resources(SETTINGS.plans) == ["nvidia.com/gpu", "nvidia.com/gpu.shared"]
    assert policy.foreign_taint_keys(ML, SETTINGS.plans) == ["dedicated"]
    assert policy.foreign_taint_keys(CV, SETTINGS.plans) == []


def test_the_policy_and_binding_objects():
    binding = policy.admission_binding(ML)
    assert binding["spec"] == {
        "policyName": "gpu-eks-team-ml",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ml"}}},
    }
    spec = POLICY["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"] == {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    }
    assert [v["message"] for v in spec["validations"]] == [
        "team ml: a GPU pod must select its node groups (t4, t4-b) with nodeSelector gpu-eks.io/node-group: <group>, "
        "or with a required node affinity In on gpu-eks.io/node-group in every term",
        "team ml: a GPU pod may not tolerate every taint, nor taints of node groups other than its own (t4, t4-b)",
    ]
    for obj in (POLICY, binding):
        kubernetes_validate.validate(obj, "1.35.0", strict=True)


def test_a_broken_pod_fails_kubernetes_validation_before_the_policy():
    # The admitted() helper can fail on the pod itself: an unknown field is refused.
    obj = copy.deepcopy(pod(nodeSelector=SELECT_T4))
    obj["spec"]["nodeSelectors"] = obj["spec"].pop("nodeSelector")
    with pytest.raises(kubernetes_validate.ValidationError):
        admitted(obj)


def test_every_kubernetes_version_the_library_knows_has_admission_policies_v1():
    # ValidatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from Kubernetes 1.30
    # (Kubernetes docs, "Validating Admission Policy": "FEATURE STATE: Kubernetes v1.30 [stable]").
    from components import catalog

    assert min(int(v.split(".")[1]) for v in catalog.KUBERNETES_VERSIONS) >= 30
    for version in catalog.KUBERNETES_VERSIONS:
        kubernetes_validate.validate(POLICY, f"{version}.0", strict=True)
        kubernetes_validate.validate(policy.admission_binding(ML), f"{version}.0", strict=True)


def test_a_daemonsets_pods_are_pinned_by_their_node_selector_only():
    # The DaemonSet controller replaces every required node-affinity term of the pods it creates with
    # one matchFields term on the node's name (k8s.io/kubernetes pkg/controller/daemon/util
    # daemonset_util.go ReplaceDaemonSetPodNodeNameNodeAffinity): a template pinned by affinity gives
    # pods that name no group, a template with a nodeSelector keeps it.
    on_node = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ip-10-0-1-23"]}]}
                ]
            }
        }
    }
    assert admitted(pod(nodeSelector=SELECT_T4, affinity=on_node))
    assert not admitted(pod(affinity=on_node))
