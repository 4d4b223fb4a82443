"""Values of the cluster-autoscaler chart: flags, placement and the IRSA service account.

Checked against the chart's values.yaml in tests (../shared/reference/cluster-autoscaler/<version>/).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..catalog import cluster_autoscaler, labels
from ..catalog.charts import CLUSTER_AUTOSCALER
from ..config.addons import AutoscalerSettings
from ..plan import boot
from ..plan.asg import discovery_tags
from ..plan.group import GroupPlan

#: Where CA runs: its chart's namespace, under a fixed service account name (the IRSA trust policy
#: names it).
NAMESPACE = CLUSTER_AUTOSCALER.namespace
SERVICE_ACCOUNT = "cluster-autoscaler"


def image_tag(kubernetes_version: str) -> str:
    """The Cluster Autoscaler image tag for the cluster's Kubernetes minor."""
    return cluster_autoscaler.AUTOSCALER_IMAGE_TAGS[kubernetes_version]


def max_node_provision_time(plans: Iterable[GroupPlan]) -> str | None:
    """CA's ``--max-node-provision-time`` where a group's stage may reboot a node before it registers
    (a managed MIG group: plan/boot.py ``reboot_once``), else None (CA's default, 15 minutes).

    CA deletes a node that has not registered within that time and backs off its group
    (kubernetes/autoscaler cluster-autoscaler-1.35.2 core/static_autoscaler.go
    ``removeOldUnregisteredNodes``, clusterstate/clusterstate.go ``ExpectedAddTime``), and the flag's
    15 minutes (config/flags/flags.go) are shorter than a p4d's launch, GPU reset, reboot and second
    boot: CA would terminate such a node in its reboot, and every replacement the same way. The
    per-group option ``k8s.io/cluster-autoscaler/node-template/autoscaling-options/maxnodeprovisiontime``
    is not read on AWS (cloudprovider/aws/aws_manager.go ``GetAsgOptions`` reads five options, not
    this one, at 1.32.7, 1.33.6, 1.34.5, 1.35.2 and 1.36.1; only the GCE and Cluster API providers
    do): the flag is the only lever, and it applies to every group CA scales. Its value covers two
    boots, each with the stage's own limit (``boot.minutes_to_register``: 60 minutes): longer than
    that, the stage has failed and the node never registers."""
    if not any(p.boot is not None and p.boot.reboots for p in plans):
        return None
    return f"{boot.minutes_to_register(reboots=True)}m"


def boot_stage_taints() -> dict[str, str]:
    """The boot stage's taints as CA's startup and status taints, so that neither stays on a template node.

    CA copies a running node of a group as its template (processors/nodeinfosprovider/
    mixed_nodeinfos_processor.go: a Ready node, stable and schedulable, first) with its taints, less
    those ``taints.SanitizeTaints`` drops: CA's own, node-condition taints, and the ``--startup-taint``
    and ``--status-taint`` keys (utils/taints/taints.go, kubernetes/autoscaler cluster-autoscaler-1.35.2;
    the flags in config/flags/flags.go at 1.32.7 to 1.36.1). A node of a ``mixed`` MIG group has no
    accelerator label, so CA's GPU readiness check (which holds a labelled node without GPUs unready)
    does not apply: a Ready node with ``gpu-eks.io/boot-stage=pending`` (its stage has not finished, or
    never ran) or ``gpu-eks.io/boot-stage-failed`` can be its group's template, and CA would then not
    grow the group for a pod that does not tolerate those taints, that is any GPU pod. As a startup
    taint the pending one also marks its node unready for CA (``FilterOutNodesWithStartupTaints``): a
    node still starting. The failure taint is a status taint: dropped from the template, its node
    not counted unready (it will not become ready, and would count against CA's unready limits)."""
    return {"startup-taint": boot.PENDING_TAINT.key, "status-taint": boot.FAILED_TAINT_KEY}


def extra_args(settings: AutoscalerSettings, plans: Iterable[GroupPlan] = ()) -> dict[str, Any]:
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
    * ``max-node-provision-time`` where a group of ``plans`` may reboot its nodes before they
      register (``max_node_provision_time``).
    * ``startup-taint`` / ``status-taint``: the boot stage's taints (``boot_stage_taints``).
    """
    args: dict[str, Any] = {
        "scale-down-unneeded-time": settings.scale_down_unneeded_time,
        "expander": "least-waste",
        "balance-similar-node-groups": True,
        "skip-nodes-with-local-storage": False,
        **boot_stage_taints(),
    }
    provision_time = max_node_provision_time(plans)
    if provision_time is not None:
        args["max-node-provision-time"] = provision_time
    return args


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
    plans: Iterable[GroupPlan] = (),
) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart (paths checked against its values.yaml in tests).

    ``region`` and ``role_arn`` may be Pulumi Outputs; everything else is plain data. Checked
    with ``helm template`` (helm v4.1.4, chart 9.59.0 at tag cluster-autoscaler-chart-9.59.0):
    the Deployment runs image ``registry.k8s.io/autoscaling/cluster-autoscaler:<image_tag>`` as
    service account ``cluster-autoscaler`` (annotated with the role ARN), env ``AWS_REGION``, and
    args ``--cloud-provider=aws --namespace=kube-system --node-group-auto-discovery=asg:tag=
    k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster>`` plus one
    ``--<flag>=<value>`` per ``extraArgs`` entry (the chart's logtostderr/stderrthreshold/v kept).
    ``plans``: the GPU groups' plans (the flags some of them need: ``extra_args``).
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
        "extraArgs": extra_args(settings, plans),
    }
