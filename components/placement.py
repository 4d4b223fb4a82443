"""Where pods land: node labels, taints, tolerations and the NFD worker's node affinity.

Pure functions, no Pulumi. Kubernetes syntax rules follow k8s.io/apimachinery validation
(qualified names, label values) and kubelet's own restriction on ``--node-labels``
(k8s.io/kubernetes pkg/kubelet/apis/well_known_labels.go).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------
# Well-known label keys
# ---------------------------------------------------------------------------------------------

#: This library's GPU-count label: the number of physical GPUs of the node's instance type.
GPU_COUNT_LABEL = "gpu-eks.io/gpu-count"
#: This library's node-group label, so workloads can pick one GPU node group.
NODE_GROUP_LABEL = "gpu-eks.io/node-group"
#: The label the NVIDIA device plugin's config-manager reads to pick a sharing profile.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
#: The label Cluster Autoscaler's AWS provider reads as "this node has a GPU" (``GPULabel`` in
#: cloudprovider/aws/aws_cloud_provider.go, cluster-autoscaler-1.35.2). While a labelled node
#: advertises no ``nvidia.com/gpu`` yet, CA treats it as still starting (processors/customresources/
#: gpu_processor.go FilterOutNodesWithUnreadyResources) instead of adding another node for the
#: same pending pods. Not under kubernetes.io/k8s.io, so kubelet accepts it in --node-labels.
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
#: GPU-count labels set by Karpenter and by EKS Auto Mode on the nodes they launch.
KARPENTER_GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
AUTO_MODE_GPU_COUNT_LABEL = "eks.amazonaws.com/instance-gpu-count"
#: Every label that marks a node as having GPUs; the NFD worker runs where any is > 0.
GPU_COUNT_LABELS: tuple[str, ...] = (
    GPU_COUNT_LABEL,
    KARPENTER_GPU_COUNT_LABEL,
    AUTO_MODE_GPU_COUNT_LABEL,
)

# ---------------------------------------------------------------------------------------------
# Syntax
# ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# kubelet accepts these keys in the kubernetes.io / k8s.io namespaces, and nothing else there
# except under node.kubernetes.io/ and kubelet.kubernetes.io/.
_KUBELET_ALLOWED_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)
_KUBELET_ALLOWED_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
_RESTRICTED_NAMESPACES = ("kubernetes.io", "k8s.io")


def _in_namespace(prefix: str, namespace: str) -> bool:
    return prefix == namespace or prefix.endswith("." + namespace)


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid Kubernetes qualified name (label or taint key), or None."""
    if not isinstance(key, str) or not key:
        return "a non-empty qualified name ([prefix/]name)"
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "a qualified name with at most one '/'"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return "a prefix that is a DNS subdomain (lower-case alphanumerics, '-' and '.')"
    if len(name) > 63 or not _NAME.match(name):
        return "a name of at most 63 characters: alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if not isinstance(value, str):
        return "a string"
    if value == "":
        return None
    if len(value) > 63 or not _NAME.match(value):
        return "at most 63 characters: alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


#: Labels kubelet accepts in ``--node-labels`` but that kubelet or the cloud controller manager
#: set themselves (k8s.io/api core/v1 well_known_labels.go): overriding one mislabels the node
#: (a wrong os/arch/zone misplaces every pod that selects on it).
SYSTEM_LABELS = frozenset(_KUBELET_ALLOWED_LABELS)


def kubelet_label_problem(key: str) -> str | None:
    """Why kubelet would refuse ``key`` in ``--node-labels`` (and the node never join), or None."""
    syntax = qualified_name_problem(key)
    if syntax:
        return syntax
    prefix = key.rpartition("/")[0]
    if not any(_in_namespace(prefix, ns) for ns in _RESTRICTED_NAMESPACES):
        return None
    if key in SYSTEM_LABELS:
        return "a key kubelet or the cloud controller manager does not set itself (an override mislabels the node)"
    if any(_in_namespace(prefix, ns) for ns in _KUBELET_ALLOWED_NAMESPACES):
        return None
    return (
        "a key outside the kubernetes.io and k8s.io namespaces (kubelet only accepts "
        "node.kubernetes.io/, kubelet.kubernetes.io/ and a few well-known keys there)"
    )


# ---------------------------------------------------------------------------------------------
# Taints and tolerations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""

    def kubelet_form(self) -> str:
        """``key=value:Effect`` (or ``key:Effect``), the syntax of ``--register-with-taints``."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


#: The taint every GPU node group carries unless its config says otherwise.
DEFAULT_GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")


def toleration_for(taint: Taint) -> dict[str, str]:
    """The toleration that tolerates exactly ``taint`` (key, value and effect)."""
    if taint.value:
        return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


def tolerates(toleration: Mapping[str, str], taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint (k8s.io/api/core/v1 toleration.go)."""
    if toleration.get("effect") and toleration["effect"] != taint.effect:
        return False
    if toleration.get("key") and toleration["key"] != taint.key:
        return False
    operator = toleration.get("operator", "Equal")
    if operator == "Exists":
        return True
    return operator == "Equal" and toleration.get("value", "") == taint.value


def extend_tolerations(base: Iterable[Mapping[str, str]], taints: Iterable[Taint]) -> list[dict[str, str]]:
    """``base`` (kept as is, in order) plus a toleration for each taint nothing in it tolerates.

    Helm replaces lists, so callers pass the chart's own defaults as ``base``.
    """
    out = [dict(t) for t in base]
    for taint in taints:
        if not any(tolerates(t, taint) for t in out):
            out.append(toleration_for(taint))
    return out


def tolerations_for(taints: Iterable[Taint]) -> list[dict[str, str]]:
    """One toleration per taint (none twice), in first-seen order."""
    return extend_tolerations([], taints)


# ---------------------------------------------------------------------------------------------
# Node affinity
# ---------------------------------------------------------------------------------------------


def gpu_node_affinity(label_keys: Sequence[str] = GPU_COUNT_LABELS) -> dict:
    """A required node affinity matching nodes where any GPU-count label is > 0.

    nodeSelectorTerms are ORed, matchExpressions inside one term are ANDed: so one term per
    label key, each with a single ``Gt 0`` expression.
    """
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "Gt", "values": ["0"]}]} for key in label_keys
                ]
            }
        }
    }


def node_matches_affinity(labels: Mapping[str, str], affinity: Mapping) -> bool:
    """Evaluate a required node affinity against a node's labels (In/NotIn/Exists/
    DoesNotExist/Gt/Lt), as the scheduler does. Used by tests and the verification checks."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return any(all(_matches(labels, e) for e in term.get("matchExpressions", [])) for term in terms)


def _matches(labels: Mapping[str, str], expr: Mapping) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    present = key in labels
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op in ("Gt", "Lt"):
        if not present:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    raise ValueError(f"unknown node selector operator {op!r}")
