"""What the Cluster Autoscaler could not handle: rules the settings models run with their rules across
keys (``check/settings.py``) while the autoscaler is enabled, for a GpuCluster's settings and a
GpuCapacity's alike, loaded or built in Python."""

from __future__ import annotations

from collections.abc import Sequence

from ..catalog import cluster_autoscaler
from ..catalog.labels import ACCELERATOR_LABEL
from ..config.errors import KeyedProblem
from ..plan import asg
from ..plan.group import GroupPlan


def autoscaler_problems(kubernetes_version: str, plans: Sequence[GroupPlan]) -> list[KeyedProblem]:
    """What the Cluster Autoscaler could not handle on a cluster of ``kubernetes_version`` with the
    groups of ``plans`` (keys from the stack's root)."""
    problems: list[KeyedProblem] = []
    if kubernetes_version not in cluster_autoscaler.AUTOSCALER_IMAGE_TAGS:
        problems.append(
            (
                ("kubernetesVersion",),
                kubernetes_version,
                f"one of {', '.join(cluster_autoscaler.AUTOSCALER_IMAGE_TAGS)} while the Cluster Autoscaler is "
                "enabled (its release must match the cluster's minor), or autoscaler.enabled: false",
            )
        )
    for i, plan in enumerate(plans):
        group_key = ("gpuNodeGroups", i)
        if not plan.provider.auto_scaling_group:
            # No ASG: Karpenter launches the group's instances itself (nodegroups/component.py declares
            # no managed node group and no ASG tag for it), so only the rule on its nodes applies.
            problems += _renamed_gpu_problems(plan, group_key)
            continue
        problems += _asg_tag_problems(plan, group_key)
        problems += _renamed_gpu_problems(plan, group_key)
        problems += _taint_tag_problems(plan, group_key)
    return problems


def _asg_tag_problems(plan: GroupPlan, group_key: tuple[str | int, ...]) -> list[KeyedProblem]:
    """The group's ASG tags: how many, and each key's length."""
    problems: list[KeyedProblem] = []
    # How many tags, not their values: any cluster name gives the same count.
    count = len(asg.asg_tags(plan.node_template_tags, "cluster")) + cluster_autoscaler.EKS_OWN_ASG_TAGS
    if count > cluster_autoscaler.ASG_TAG_LIMIT:
        problems.append(
            (
                (*group_key, "labels"),
                plan.settings.labels,
                f"fewer labels and taints: the group's ASG would need {count} tags (the Cluster "
                "Autoscaler's template tags plus EKS's own), EC2 Auto Scaling allows "
                f"{cluster_autoscaler.ASG_TAG_LIMIT}",
            )
        )
    problems += _tag_key_problems(plan, group_key)
    return problems


def _taint_tag_problems(plan: GroupPlan, group_key: tuple[str | int, ...]) -> list[KeyedProblem]:
    """One ASG tag k8s.io/cluster-autoscaler/node-template/taint/<key> holds one value:effect
    (cloudprovider/aws/aws_manager.go extractTaintsFromAsg, cluster-autoscaler-1.35.2)."""
    problems: list[KeyedProblem] = []
    keys = [t.key for t in plan.taints]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        problems.append(
            (
                (*group_key, "taints"),
                [t.model_dump() for t in plan.taints],
                f"one taint per key while the Cluster Autoscaler is enabled (repeated: {repeated}): "
                "an ASG taint tag carries one value:effect per key",
            )
        )
    return problems


def _renamed_gpu_problems(plan: GroupPlan, group_key: tuple[str | int, ...]) -> list[KeyedProblem]:
    """Every GPU node carries k8s.amazonaws.com/accelerator (userdata.accelerator_labels); CA
    holds such a node as "GPU not ready" until it advertises nvidia.com/gpu, which a renamed
    profile never does (processors/customresources/gpu_processor.go, cluster-autoscaler-1.35.2):
    CA would count the node unready for good and eventually remove it. (Nodes of mixed MIG
    slices, which never advertise nvidia.com/gpu either, go without the label: sharing.plan.)
    CA reads every node of the cluster this way, a Karpenter group's too (its unready count)."""
    if ACCELERATOR_LABEL in plan.node_labels and asg.NVIDIA_GPU not in plan.advertised_resources:
        return [
            (
                (*group_key, "timeSlicing", "renameByDefault"),
                True,
                "false while the Cluster Autoscaler is enabled: CA treats a GPU node without "
                "allocatable nvidia.com/gpu as not ready (a renamed node advertises only nvidia.com/gpu.shared)",
            )
        ]
    return []


def _tag_key_problems(plan: GroupPlan, group_key: tuple[str | int, ...]) -> list[KeyedProblem]:
    """A label or taint key whose CA template tag (``asg.LABEL_TAG_PREFIX`` / ``TAINT_TAG_PREFIX``
    plus the key) is longer than an ASG tag key may be: EC2 Auto Scaling refuses the tag and the
    group's ASG tagging fails (so 128 - 46 = 82 characters at most)."""
    limit = cluster_autoscaler.ASG_TAG_KEY_MAX_LENGTH
    problems: list[KeyedProblem] = []
    for key in plan.settings.labels:
        if len(asg.LABEL_TAG_PREFIX + key) > limit:
            problems.append(
                (
                    (*group_key, "labels", key),
                    key,
                    f"a label key of at most {limit - len(asg.LABEL_TAG_PREFIX)} characters while the "
                    f"Cluster Autoscaler is enabled: its ASG tag {asg.LABEL_TAG_PREFIX}<key> may have at most "
                    f"{limit} (EC2 Auto Scaling TagKey)",
                )
            )
    for j, taint in enumerate(plan.taints):
        if len(asg.TAINT_TAG_PREFIX + taint.key) > limit:
            problems.append(
                (
                    (*group_key, "taints", j, "key"),
                    taint.key,
                    f"a taint key of at most {limit - len(asg.TAINT_TAG_PREFIX)} characters while the "
                    f"Cluster Autoscaler is enabled: its ASG tag {asg.TAINT_TAG_PREFIX}<key> may have at most "
                    f"{limit} (EC2 Auto Scaling TagKey)",
                )
            )
    return problems
