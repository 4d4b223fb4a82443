"""Values of the cluster-autoscaler chart: flags, placement and the IRSA service account.

Checked against the chart's values.yaml in tests (../shared/reference/cluster-autoscaler/<version>/).
"""

from __future__ import annotations

from typing import Any

from ..catalog import cluster_autoscaler, labels
from ..catalog.charts import CLUSTER_AUTOSCALER
from ..config.addons import AutoscalerSettings
from ..plan.asg import discovery_tags

#: Where CA runs: its chart's namespace, under a fixed service account name (the IRSA trust policy
#: names it).
NAMESPACE = CLUSTER_AUTOSCALER.namespace
SERVICE_ACCOUNT = "cluster-autoscaler"


def image_tag(kubernetes_version: str) -> str:
    """The Cluster Autoscaler image tag for the cluster's Kubernetes minor."""
    return cluster_autoscaler.AUTOSCALER_IMAGE_TAGS[kubernetes_version]


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
                    {"matchExpressions": [{"key": key, "operator": "DoesNotExist"} for key in labels.GPU_COUNT_LABELS]}
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
        "fullnameOverride": CLUSTER_AUTOSCALER.release,
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
