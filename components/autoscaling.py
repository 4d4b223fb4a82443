"""Cluster Autoscaler: the ASG tags of a GPU node group, the Helm values and the IAM documents.

Pure functions, no Pulumi. Every rule follows kubernetes/autoscaler at tag
``cluster-autoscaler-1.35.2``, ``cluster-autoscaler/cloudprovider/aws/``:

* Auto-discovery (README.md "Auto-discovery setup"): CA manages every ASG carrying all the tag
  keys it is given; the chart's default is ``k8s.io/cluster-autoscaler/enabled`` and
  ``k8s.io/cluster-autoscaler/<cluster-name>``.
* Scale from zero (aws_manager.go ``buildNodeFromTemplate``): with no node to copy, CA builds a
  template node from the instance type (CPU, memory, ``nvidia.com/gpu`` = physical GPUs) and the
  ASG tags: ``node-template/label/<key>`` = value (``extractLabelsFromAsg``),
  ``node-template/taint/<key>`` = ``<value>:<Effect>`` (``extractTaintsFromAsg``), and
  ``node-template/resources/<name>`` = quantity, which overrides the instance's own numbers
  (``extractAllocatableResourcesFromAsg``). Our labels and taints come from kubelet through
  nodeadm, which neither EKS (DescribeNodegroup) nor the ASG knows, and EKS does not copy node
  group tags to the ASG: so this library tags the ASG itself.
"""

from __future__ import annotations

import json
from typing import Any

from . import catalog, nodeconfig, placement
from .settings import AutoscalerSettings, GpuNodeGroupSettings

TAG_PREFIX = "k8s.io/cluster-autoscaler"
DISCOVERY_TAG = f"{TAG_PREFIX}/enabled"
LABEL_TAG_PREFIX = f"{TAG_PREFIX}/node-template/label/"
TAINT_TAG_PREFIX = f"{TAG_PREFIX}/node-template/taint/"
RESOURCES_TAG_PREFIX = f"{TAG_PREFIX}/node-template/resources/"
#: The resource CA gives a template node from the instance type's GPU count.
NVIDIA_GPU = "nvidia.com/gpu"

#: Where CA runs: kube-system, under a fixed service account name (the IRSA trust policy names it).
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
RELEASE_NAME = "cluster-autoscaler"
#: Pods carrying this annotation are never evicted by a CA scale-down (CA FAQ, "What types of
#: pods can prevent CA from removing a node?").
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def cluster_tag(cluster_name: str) -> str:
    return f"{TAG_PREFIX}/{cluster_name}"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The auto-discovery tags (CA only checks the keys; "owned" follows the README's examples).

    EKS documents tagging managed node group resources for CA itself; declaring the same keys
    and values here keeps discovery (and the IAM condition on the cluster tag) independent of it.
    """
    return {DISCOVERY_TAG: "true", cluster_tag(cluster_name): "owned"}


def asg_tags(group: GpuNodeGroupSettings, cluster_name: str) -> dict[str, str]:
    """Every tag the ASG of ``group`` needs so CA can discover it and scale it up from zero.

    Built from the same functions as the group's NodeConfig (labels, taints) and the device
    plugin's advertised count, so the template node CA imagines is the node that joins.
    """
    tags = discovery_tags(cluster_name)
    for key, value in nodeconfig.gpu_node_labels(group).items():
        tags[LABEL_TAG_PREFIX + key] = value
    for taint in group.taint_list:
        tags[TAINT_TAG_PREFIX + taint.key] = f"{taint.value}:{taint.effect}"
    resource = group.time_slicing.resource_name
    tags[RESOURCES_TAG_PREFIX + resource] = str(group.advertised_gpus_per_node)
    if resource != NVIDIA_GPU:
        # Renamed: the node advertises no nvidia.com/gpu at all; without this tag CA's template
        # would still offer the instance's physical GPU count as nvidia.com/gpu.
        tags[RESOURCES_TAG_PREFIX + NVIDIA_GPU] = "0"
    return tags


def image_tag(kubernetes_version: str) -> str:
    """The Cluster Autoscaler image tag for the cluster's Kubernetes minor."""
    return catalog.AUTOSCALER_IMAGE_TAGS[kubernetes_version]


def extra_args(settings: AutoscalerSettings) -> dict[str, Any]:
    """CA flags (chart ``extraArgs``; Helm merges maps, so the chart's logging flags stay).

    * ``scale-down-unneeded-time``: how long a node may be unneeded before it is removed.
    * ``expander: least-waste``: among groups that fit the pending pods, the one leaving the
      least CPU/memory idle, so a pod wanting one T4 slot gets a g4dn.xlarge, not a 12xlarge
      (CA 1.35's default too, config/flags/flags.go; explicit so a chart or CA change cannot flip it).
    * ``balance-similar-node-groups``: spread scale-ups over groups of the same shape (e.g. one
      group per zone). GPU groups of this library differ by ``gpu-eks.io/node-group``, so two
      named groups are never treated as one.
    * ``skip-nodes-with-local-storage: false``: GPU pods keep model caches and scratch in
      emptyDir; with CA's default (true) such a node could never scale down.
    """
    return {
        "scale-down-unneeded-time": settings.scale_down_unneeded_time,
        "expander": "least-waste",
        "balance-similar-node-groups": True,
        "skip-nodes-with-local-storage": False,
    }


def system_node_affinity() -> dict[str, Any]:
    """Keep CA off GPU nodes: it belongs on the untainted system node group. (CA does not remove
    the node it runs on: a node with non-DaemonSet kube-system pods is kept while
    ``skip-nodes-with-system-pods`` is at its default, true.)"""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": key, "operator": "DoesNotExist"} for key in placement.GPU_COUNT_LABELS
                        ]
                    }
                ]
            }
        }
    }


def autoscaler_values(
    settings: AutoscalerSettings,
    *,
    cluster_name: str,
    kubernetes_version: str,
    region: Any,
    role_arn: Any,
) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart (paths checked against its values.yaml in tests).

    ``region`` and ``role_arn`` may be Pulumi Outputs; everything else is plain data. Checked
    with ``helm template`` (helm v4.1.4, chart 9.59.0 at tag cluster-autoscaler-chart-9.59.0):
    the Deployment runs image ``registry.k8s.io/autoscaling/cluster-autoscaler:<image_tag>`` as
    service account ``cluster-autoscaler`` (annotated with the role ARN), env ``AWS_REGION``, and
    args ``--cloud-provider=aws --namespace=kube-system --node-group-auto-discovery=asg:tag=
    k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster>`` plus one
    ``--<flag>=<value>`` per ``extraArgs`` entry (the chart's logtostderr/stderrthreshold/v kept).
    """
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {
            "clusterName": cluster_name,
            "tags": list(discovery_tags(cluster_name)),
        },
        "image": {"tag": image_tag(kubernetes_version)},
        "fullnameOverride": RELEASE_NAME,
        "rbac": {
            "serviceAccount": {
                "create": True,
                "name": SERVICE_ACCOUNT,
                "annotations": {"eks.amazonaws.com/role-arn": role_arn},
            }
        },
        "affinity": system_node_affinity(),
        "extraArgs": extra_args(settings),
    }


# ---------------------------------------------------------------------------------------------
# IAM (IRSA)
# ---------------------------------------------------------------------------------------------

#: Read actions CA needs (cloudprovider/aws/README.md, "Full Cluster Autoscaler Features Policy").
READ_ACTIONS: tuple[str, ...] = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
)
#: The only actions that change anything; allowed only on ASGs tagged for this cluster.
MUTATING_ACTIONS: tuple[str, ...] = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)


def autoscaler_policy(cluster_name: str, partition: str, region: str, account_id: str) -> str:
    """The least-privilege policy document (JSON) of CA's role."""
    asg_arns = f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/*"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Sid": "Read", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"},
                {
                    # Labels and taints of managed node groups, this cluster's only.
                    "Sid": "DescribeNodegroups",
                    "Effect": "Allow",
                    "Action": "eks:DescribeNodegroup",
                    "Resource": f"arn:{partition}:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*",
                },
                {
                    "Sid": "ScaleThisClustersGroups",
                    "Effect": "Allow",
                    "Action": list(MUTATING_ACTIONS),
                    "Resource": asg_arns,
                    "Condition": {"StringEquals": {f"aws:ResourceTag/{cluster_tag(cluster_name)}": "owned"}},
                },
            ],
        },
        sort_keys=False,
    )


def irsa_trust_policy(oidc_provider_arn: str, oidc_provider_url: str) -> str:
    """Trust policy letting only kube-system/cluster-autoscaler assume the role (IRSA)."""
    issuer = oidc_provider_url.removeprefix("https://")
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": oidc_provider_arn},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {
                            f"{issuer}:sub": f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}",
                            f"{issuer}:aud": "sts.amazonaws.com",
                        }
                    },
                }
            ],
        }
    )
