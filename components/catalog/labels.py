"""Node labels: the well-known keys the library sets and reads (and the API server's ResourceQuota
key of an extended resource), and the syntax kubelet and the API server accept for label and taint
keys and values.

Pure functions, no Pulumi. Kubernetes syntax rules follow k8s.io/apimachinery validation
(qualified names, label values) and kubelet's own restriction on ``--node-labels``
(k8s.io/kubernetes pkg/kubelet/apis/well_known_labels.go).
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Well-known label keys
# ---------------------------------------------------------------------------------------------

#: This library's GPU-count label: the GPUs the node's instance type gives the device plugin (its
#: physical GPUs, or 1 on a g6f/gr6f vGPU slice, for which EC2 reports 0: catalog.instances).
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
#: The node boot stage's key (plan/boot.py): the taint every GPU node registers with until its
#: stage succeeded (``=pending``), and the label of a node whose stage failed (``=failed``).
BOOT_STAGE_KEY = "gpu-eks.io/boot-stage"
#: The taint a node whose boot stage failed registers with (value: the reason).
BOOT_STAGE_FAILED_KEY = "gpu-eks.io/boot-stage-failed"
#: The label of a node's instance type (kubelet's well-known label, set on every node: k8s.io/api
#: core/v1 well_known_labels.go ``LabelInstanceTypeStable``).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: GPU-count labels set by Karpenter and by EKS Auto Mode on the nodes they launch.
KARPENTER_GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
AUTO_MODE_GPU_COUNT_LABEL = "eks.amazonaws.com/instance-gpu-count"
#: Every label that marks a node as having GPUs; the NFD worker runs where any is > 0.
GPU_COUNT_LABELS: tuple[str, ...] = (
    GPU_COUNT_LABEL,
    KARPENTER_GPU_COUNT_LABEL,
    AUTO_MODE_GPU_COUNT_LABEL,
)

#: ResourceQuota keys of extended resources: "Quota items for extended resources must have the prefix
#: requests." and "only quota items with prefix requests. is allowed for now", since overcommit is not
#: allowed for them (Kubernetes docs, "Resource Quotas", "Resource quota for extended resources").
#: The API server does not refuse a bare or ``limits.`` key (k8s.io/kubernetes pkg/apis/core/validation
#: validation.go ValidateResourceQuotaResourceName checks only names without a ``/`` against the
#: standard quota resources): it stores it, and the quota never charges it, since the pod evaluator
#: counts an extended resource only as ``requests.<resource>`` (pkg/quota/v1/evaluator/core/pods.go
#: isExtendedResourceNameForQuota, podComputeUsageHelper). So a key without the prefix would be a
#: quota that limits nothing.
QUOTA_REQUESTS_PREFIX = "requests."

# ---------------------------------------------------------------------------------------------
# Syntax
# ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)

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
    prefix, slash, name = key.rpartition("/")
    if "/" in prefix:
        return "a qualified name with at most one '/'"
    # k8s.io/apimachinery v0.35.7 pkg/api/validate/content/kube.go:54 (IsLabelKey, which
    # IsQualifiedName aliases): a '/' with nothing before it is "prefix part must be non-empty".
    if slash and not prefix:
        return "a non-empty prefix before '/' (a DNS subdomain such as example.com/team), or no '/' at all"
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "a prefix that is a DNS subdomain (lower-case alphanumerics, '-' and '.')"
    if len(name) > 63 or not _NAME.fullmatch(name):
        return "a name of at most 63 characters: alphanumerics, '-', '_' or '.', alphanumeric at both ends"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None."""
    if not isinstance(value, str):
        return "a string"
    if value == "":
        return None
    if len(value) > 63 or not _NAME.fullmatch(value):
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
