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
import re
from typing import Any

import kubernetes_validate
import pytest

from components.teams import policy
from tests.support.teams import (
    CV,
    GPU_TOLERATION,
    ML,
    POLICY,
    SELECT_T4,
    SETTINGS,
    admitted,
    cpu,
    cpu_pod,
    debug,
    gpu,
    gpu_container,
    gpu_pod,
    pinned,
    pod,
    refused_by,
)


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
        ("no GPU", pod(containers=[{"name": "web", "image": "nginx"}])),
        ("a GPU count of 0 written by the LimitRange", pod(containers=[gpu_container(count="0")])),
        ("cpu only", pod(containers=[{"name": "c", "image": "x", "resources": {"limits": {"cpu": "2"}}}])),
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
        "resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["UPDATE"],
                "resources": ["pods/ephemeralcontainers"],
            },
        ]
    }
    assert "matchConditions" not in spec  # every pod of the namespace
    assert [v["name"] for v in spec["variables"]] == ["gpu"]
    assert [v["message"] for v in spec["validations"]] == [
        "team ml: rule device variables: no container may set NVIDIA_VISIBLE_DEVICES, NVIDIA_IMEX_CHANNELS, "
        "NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_MIG_MONITOR_DEVICES, NVIDIA_GDS, NVIDIA_MOFED, NVIDIA_NVSWITCH, "
        "NVIDIA_GDRCOPY (the NVIDIA container toolkit would give it GPUs the device plugin did not allocate)",
        "team ml: rule device variables from envFrom: in a GPU pod every envFrom needs a prefix that no NVIDIA "
        "device variable starts with (e.g. APP_): the policy cannot read the ConfigMap or Secret",
        "team ml: rule privileged: no container may be privileged or add CAP_SYS_ADMIN (or ALL): the NVIDIA "
        "container toolkit gives such a container the GPUs its NVIDIA_VISIBLE_DEVICES names",
        "team ml: rule device mounts: no container may mount a volume under /var/run/nvidia-container-devices (the "
        "NVIDIA container toolkit takes a /dev/null mount there as a request for GPUs)",
        "team ml: rule nodeName: a pod may not set spec.nodeName (it would skip the scheduler and the GPU nodes' "
        "taints); select nodes with nodeSelector or affinity",
        "team ml: rule GPU taints: a pod that requests no GPU may not tolerate a GPU node group's taint, nor every "
        "taint",
        "team ml: rule GPU labels: a pod that requests no GPU may not select GPU nodes (nodeSelector or required "
        "node affinity on a GPU node group's label); NotIn and DoesNotExist are allowed",
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


# ---------------------------------------------------------------------------------------------
# Issue 31 item 3: every pod of a team namespace, GPU or not
# ---------------------------------------------------------------------------------------------

DEVICE_VARIABLES = "team ml: rule device variables:"
ENV_FROM = "team ml: rule device variables from envFrom:"
NODE_NAME = "team ml: rule nodeName:"
GPU_TAINTS = "team ml: rule GPU taints:"
GPU_LABELS = "team ml: rule GPU labels:"
PLACEMENT = "team ml: a GPU pod must select its node groups"
FOREIGN = "team ml: a GPU pod may not tolerate every taint"


def env(name: str, value: str = "all") -> list[dict[str, Any]]:
    return [{"name": name, "value": value}]


def term(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


CONFIG_MAP = {"configMapRef": {"name": "settings"}}


@pytest.mark.parametrize(
    "variable",
    [
        # NVIDIA/nvidia-container-toolkit v1.20.0 internal/config/image/envvars.go, modifier/gated.go
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_IMEX_CHANNELS",
        "NVIDIA_MIG_CONFIG_DEVICES",
        "NVIDIA_MIG_MONITOR_DEVICES",
        "NVIDIA_GDS",
        "NVIDIA_MOFED",
        "NVIDIA_NVSWITCH",
        "NVIDIA_GDRCOPY",
    ],
)
def test_every_device_variable_is_refused_in_every_kind_of_container(variable):
    assert policy.DEVICE_VARIABLES.count(variable) == 1
    for obj in (
        gpu_pod(containers=[gpu(env=env(variable))]),
        cpu_pod(containers=[cpu(env=env(variable))]),
        cpu_pod(initContainers=[cpu(name="init", env=env(variable))]),
        gpu_pod(containers=[gpu(), cpu(name="side", env=env(variable, "0"))]),
    ):
        assert starts(refused_by(obj)) == [DEVICE_VARIABLES], obj


def starts(messages: list[str]) -> list[str]:
    """Each refusal by the rule it names (the literal starts above)."""
    known = (DEVICE_VARIABLES, ENV_FROM, NODE_NAME, GPU_TAINTS, GPU_LABELS, PLACEMENT, FOREIGN)
    out = []
    for m in messages:
        (rule,) = [k for k in known if m.startswith(k)]
        out.append(rule)
    return out


@pytest.mark.parametrize(
    ("name", "obj", "rules"),
    [
        # (a) device variables
        (
            "NVIDIA_VISIBLE_DEVICES from a ConfigMap key",
            cpu_pod(
                containers=[
                    cpu(
                        env=[
                            {
                                "name": "NVIDIA_VISIBLE_DEVICES",
                                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "gpus"}},
                            }
                        ]
                    )
                ]
            ),
            [DEVICE_VARIABLES],
        ),
        ("a GPU pod's envFrom without a prefix", gpu_pod(containers=[gpu(envFrom=[CONFIG_MAP])]), [ENV_FROM]),
        (
            "a GPU pod's envFrom of a Secret in an init container",
            gpu_pod(initContainers=[cpu(name="init", envFrom=[{"secretRef": {"name": "s"}}])]),
            [ENV_FROM],
        ),
        (
            "a GPU pod's envFrom with a prefix a device variable starts with",
            gpu_pod(containers=[gpu(envFrom=[{**CONFIG_MAP, "prefix": "NVIDIA_"}])]),
            [ENV_FROM],
        ),
        (
            "a GPU pod's envFrom prefixed NV",
            gpu_pod(containers=[gpu(envFrom=[{**CONFIG_MAP, "prefix": "NV"}])]),
            [ENV_FROM],
        ),
        # (b) nodeName
        ("a pod without a GPU naming a GPU node", cpu_pod(nodeName="ip-10-0-1-23.ec2.internal"), [NODE_NAME]),
        ("a pinned GPU pod naming its node", gpu_pod(nodeName="ip-10-0-1-23.ec2.internal"), [NODE_NAME]),
        (
            "the classic bypass: nodeName, the GPU toleration and NVIDIA_VISIBLE_DEVICES=all, no GPU request",
            cpu_pod(
                containers=[cpu(env=env("NVIDIA_VISIBLE_DEVICES"))],
                nodeName="ip-10-0-1-23.ec2.internal",
                tolerations=[GPU_TOLERATION],
            ),
            [DEVICE_VARIABLES, NODE_NAME, GPU_TAINTS],
        ),
        # (c) a GPU group tolerated or selected without a GPU request
        ("no GPU, the GPU taint tolerated", cpu_pod(tolerations=[GPU_TOLERATION]), [GPU_TAINTS]),
        (
            "no GPU, another group's own taint tolerated",
            cpu_pod(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "cv"}]),
            [GPU_TAINTS],
        ),
        ("no GPU, every taint tolerated", cpu_pod(tolerations=[{"operator": "Exists"}]), [GPU_TAINTS]),
        (
            "a GPU count of 0 (the LimitRange's) with every taint tolerated",
            pod(containers=[gpu_container(count="0")], tolerations=[{"operator": "Exists"}]),
            [GPU_TAINTS],
        ),
        ("no GPU, the team's own group selected", cpu_pod(nodeSelector=SELECT_T4), [GPU_LABELS]),
        (
            "no GPU, a GPU instance type selected",
            cpu_pod(nodeSelector={"node.kubernetes.io/instance-type": "g5.xlarge"}),
            [GPU_LABELS],
        ),
        (
            "no GPU, the accelerator label selected",
            cpu_pod(nodeSelector={"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}),
            [GPU_LABELS],
        ),
        ("no GPU, affinity gpu-count Gt 0", cpu_pod(affinity=term("gpu-eks.io/gpu-count", "Gt", "0")), [GPU_LABELS]),
        (
            "no GPU, affinity Exists on Karpenter's GPU count",
            cpu_pod(affinity=term("karpenter.k8s.aws/instance-gpu-count", "Exists")),
            [GPU_LABELS],
        ),
        (
            "no GPU, affinity In a GPU and a CPU instance type",
            cpu_pod(affinity=term("node.kubernetes.io/instance-type", "In", "m5.large", "g4dn.xlarge")),
            [GPU_LABELS],
        ),
        (
            "no GPU, in an init container only a GPU of 0, selecting and tolerating a group",
            pod(
                containers=[cpu()],
                initContainers=[{**gpu_container(count="0"), "name": "init"}],
                nodeSelector=SELECT_T4,
                tolerations=[GPU_TOLERATION],
            ),
            [GPU_TAINTS, GPU_LABELS],
        ),
    ],
)
def test_adversarial_pods_are_refused_by_the_rule_they_break(name, obj, rules):
    assert starts(refused_by(obj)) == rules, name


@pytest.mark.parametrize(
    ("name", "obj"),
    [
        ("a pinned GPU pod", gpu_pod()),
        (
            "the driver capabilities (no device)",
            gpu_pod(containers=[gpu(env=env("NVIDIA_DRIVER_CAPABILITIES", "compute"))]),
        ),
        (
            "CUDA_VISIBLE_DEVICES (CUDA's, within the allocated GPUs)",
            gpu_pod(containers=[gpu(env=env("CUDA_VISIBLE_DEVICES", "0"))]),
        ),
        (
            "a GPU pod's envFrom with a safe prefix",
            gpu_pod(containers=[gpu(envFrom=[{**CONFIG_MAP, "prefix": "APP_"}])]),
        ),
        (
            "a pod without a GPU with envFrom (it never reaches a GPU node)",
            cpu_pod(containers=[cpu(envFrom=[CONFIG_MAP])]),
        ),
        (
            "no GPU, a CPU instance type selected",
            cpu_pod(nodeSelector={"node.kubernetes.io/instance-type": "m5.large"}),
        ),
        ("no GPU, GPU nodes avoided with DoesNotExist", cpu_pod(affinity=term("gpu-eks.io/gpu-count", "DoesNotExist"))),
        (
            "no GPU, GPU groups avoided with NotIn",
            cpu_pod(affinity=term("gpu-eks.io/node-group", "NotIn", "t4", "a10g")),
        ),
        (
            "no GPU, the taints every pod gets (DefaultTolerationSeconds) and a system taint",
            cpu_pod(
                tolerations=[
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    },
                    {
                        "key": "node.kubernetes.io/unreachable",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    },
                    {"key": "CriticalAddonsOnly", "operator": "Exists"},
                ]
            ),
        ),
        ("a GPU pod whose init container asks for no GPU", gpu_pod(initContainers=[cpu(name="init")])),
    ],
)
def test_pods_that_must_still_be_admitted(name, obj):
    assert refused_by(obj) == [], name


def test_an_ephemeral_container_may_not_set_a_device_variable():
    running = gpu_pod()
    assert starts(
        refused_by(debug(running, env=env("NVIDIA_VISIBLE_DEVICES")), operation="UPDATE", sub="ephemeralcontainers")
    ) == [DEVICE_VARIABLES]
    assert starts(refused_by(debug(running, envFrom=[CONFIG_MAP]), operation="UPDATE", sub="ephemeralcontainers")) == [
        ENV_FROM
    ]
    # A plain debug container on a scheduled pod is admitted: the create-time rules (nodeName) do not apply.
    assert refused_by(debug(running), operation="UPDATE", sub="ephemeralcontainers") == []
    # Other updates of a pod are not checked (finalizers, labels: see admission_policy).
    assert refused_by(debug(running, env=env("NVIDIA_VISIBLE_DEVICES")), operation="UPDATE") == []


def test_the_gpu_labels_and_taints_come_from_every_group():
    assert policy.gpu_taint_keys(SETTINGS.plans) == ["dedicated", "nvidia.com/gpu"]
    assert policy.gpu_selectors(SETTINGS.plans) == {
        "eks.amazonaws.com/instance-gpu-count": [],
        "gpu-eks.io/gpu-count": ["1"],
        "gpu-eks.io/node-group": ["a10g", "shared", "t4", "t4-b"],
        "k8s.amazonaws.com/accelerator": ["nvidia-a10g", "nvidia-tesla-t4"],
        "karpenter.k8s.aws/instance-gpu-count": [],
        "node.kubernetes.io/instance-type": ["g4dn.xlarge", "g5.xlarge"],
        "nvidia.com/device-plugin.config": ["a10g", "shared", "t4", "t4-b"],
    }


MACRO = re.compile(r"(\]|[\w.]+)\.(exists|all|exists_one|map|filter)\((\w+),")


def comprehension_receivers(expression: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each comprehension's receiver with the iteration variables it is nested in (innermost last)."""
    out = []
    stack: list[tuple[str, int]] = []  # (variable, paren depth of its comprehension's "(")
    depth, i, quoted = 0, 0, ""
    while i < len(expression):
        ch = expression[i]
        if quoted:
            quoted = "" if ch == quoted and expression[i - 1] != "\\" else quoted
        elif ch in "'\"":
            quoted = ch
        elif ch == ")":
            depth -= 1
            while stack and stack[-1][1] > depth:
                stack.pop()
        elif ch == "(":
            depth += 1
            match = MACRO.match(expression, _receiver_start(expression, i))
            if match and match.end(2) == i:
                out.append((match.group(1), tuple(v for v, _ in stack)))
                stack.append((match.group(3), depth))
        i += 1
    return out


def _receiver_start(expression: str, paren: int) -> int:
    j = expression.rfind(".", 0, paren)
    k = j
    while k > 0 and (expression[k - 1].isalnum() or expression[k - 1] in "_.]"):
        k -= 1
        if expression[k] == "]":
            return k
    return k


def test_every_expression_is_linear_in_the_size_of_the_pod():
    """The API server bounds each expression's runtime cost (k8s.io/apiserver pkg/apis/cel
    PerCallLimit, 1,000,000; a pod over it fails the evaluation and failurePolicy Fail refuses it).
    Linear expressions keep any pod a workload sends far below it: every comprehension nested in
    another iterates a list of the enclosing element (containers -> env, terms -> expressions ->
    values) or a literal list, never a second list of the pod (containers x tolerations)."""
    spec = POLICY["spec"]
    expressions = [v["expression"] for v in (*spec["variables"], *spec["validations"])]
    receivers = [r for e in expressions for r in comprehension_receivers(e)]
    assert len(receivers) >= 20
    for receiver, enclosing in receivers:
        if enclosing and receiver != "]":
            assert receiver.split(".")[0] == enclosing[-1], (receiver, enclosing)
        if not enclosing:
            assert receiver.startswith("object.spec."), receiver
    # The check sees a quadratic expression.
    bad = comprehension_receivers("object.spec.containers.exists(c, object.spec.tolerations.exists(t, t.key == 'x'))")
    assert bad == [("object.spec.containers", ()), ("object.spec.tolerations", ("c",))]
