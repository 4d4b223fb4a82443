"""GPU capacity on a cluster: the GPU node groups, the gpu-operator and the verification.

``declare_gpu_capacity`` is the one declaration of these pieces. ``GpuCluster`` calls it for the
cluster it creates; ``GpuCapacity`` calls it for an existing cluster (created elsewhere: another
stack, another tool), given by name plus the few facts that cannot be looked up::

    from components import GpuCapacity, GpuCapacityArgs, load_capacity_settings
    gpu = GpuCapacity("ml-gpu", GpuCapacityArgs(
        cluster_name="ml-platform",
        subnet_ids=["subnet-0a...", "subnet-0b..."],
        kubeconfig=platform.get_output("kubeconfig"),
        settings=load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": [{"name": "t4"}]}),
    ))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from ..autoscaler.component import ClusterAutoscaler, ClusterAutoscalerArgs
from ..check.settings import GpuCapacitySettings
from ..config.isolation import ISOLATIONS, NOT_ENFORCED
from ..config.names import (
    AUTOSCALER_CHILD,
    EFA_CHILD,
    OBSERVABILITY_CHILD,
    OPERATOR_CHILD,
    TEAMS_CHILD,
    VERIFICATION_CHILD,
)
from ..efa.component import EfaDevicePlugin, EfaDevicePluginArgs
from ..gpu_operator.component import GpuOperator, GpuOperatorArgs
from ..gpu_operator.values import ExporterOptions, exporter_options, per_pod_gpu_metrics
from ..nodegroups.component import GpuNodeGroup, GpuNodeGroupArgs
from ..nodegroups.node_pool import KarpenterTarget
from ..observability.component import GpuObservability, GpuObservabilityArgs
from ..plan import karpenter as karpenter_objects
from ..teams.component import Teams, TeamsArgs, TeamsCheck
from ..verification.component import GpuVerification, GpuVerificationArgs


@dataclass
class ClusterTarget:
    """The cluster GPU capacity goes to: what node groups, the operator and the autoscaler need."""

    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    #: Private subnets of the GPU nodes.
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    #: A Kubernetes provider for the cluster (the operator and the verification use it).
    provider: k8s.Provider
    #: The cluster's IAM OIDC provider, for IRSA roles (the cluster autoscaler's).
    oidc_provider_arn: pulumi.Input[str] | None = None
    oidc_provider_url: pulumi.Input[str] | None = None
    #: What the operator waits for: an untainted node to run on (e.g. the system node group).
    ready: Sequence[pulumi.Resource] = ()
    #: The cluster's EKS authentication mode, where it may not allow access entries (an existing
    #: cluster's, looked up): the teams' access entries check it first. None: API (GpuCluster's).
    authentication_mode: pulumi.Input[str] | None = None


@dataclass
class GpuCapacityParts:
    gpu_node_groups: dict[str, GpuNodeGroup]
    operator: GpuOperator
    autoscaler: ClusterAutoscaler | None
    verification: GpuVerification | None
    observability: GpuObservability | None = None
    teams: Teams | None = None
    efa_plugin: EfaDevicePlugin | None = None


def declare_gpu_capacity(
    name: str,
    *,
    parent: pulumi.Resource,
    target: ClusterTarget,
    settings: GpuCapacitySettings,
    tags: Mapping[str, pulumi.Input[str]],
    autoscaler_cluster_name: str | None,
    node_groups: Sequence[GpuNodeGroup] = (),
    karpenter: KarpenterTarget | None = None,
) -> GpuCapacityParts:
    """Declare ``{name}-<group>`` per group of ``settings``, ``{name}-gpu-operator``, with the
    autoscaler enabled ``{name}-autoscaler`` (and the groups' ASG tags), and with
    ``verification.enabled`` ``{name}-verify``, with ``observability.enabled`` ``{name}-observability``,
    with ``teams`` ``{name}-teams``, all children of ``parent``.

    ``settings`` is a ``GpuCapacitySettings`` or a ``Settings`` (which extends it).
    ``autoscaler_cluster_name`` is the cluster's plain name as the Cluster Autoscaler knows it (its
    ASG discovery tag ``k8s.io/cluster-autoscaler/<name>``, its IAM policy), needed when the
    settings enable the autoscaler; None when the caller has only an Output. ``node_groups`` are GPU node groups
    declared by the caller for the same cluster: the operator covers them too (and the
    verification checks them). ``karpenter``: the cluster's Karpenter, which the settings'
    ``capacityProvider: karpenter`` groups need.
    """
    # Checked before anything is declared. The cluster name the autoscaler discovers the groups
    # by; None: no autoscaler.
    ca_cluster_name = _autoscaler_cluster_name(name, target, settings, autoscaler_cluster_name)
    # What launches the groups' nodes waits for the operator's release (GpuNodeGroupArgs.wait_for):
    # a change of gpuOperator.isolation reaches the release before any node with the new toolkit
    # settings launches (the operator applies it to the plugin's DaemonSet shortly after, on its own).
    # The release is declared after the groups it covers: an Output.
    release, resolve_release = pulumi.deferred_output()
    try:
        # Each group's one plan, made with the cluster's inputs (``settings.plans``): every part reads it.
        gpu_node_groups = {
            plan.name: GpuNodeGroup(
                f"{name}-{plan.name}",
                GpuNodeGroupArgs(
                    plan=plan,
                    cluster_name=target.cluster_name,
                    node_role_arn=target.node_role_arn,
                    subnet_ids=target.subnet_ids,
                    tags=tags,
                    # Scale-from-zero template tags on each group's ASG (asg.asg_tags).
                    autoscaler_cluster_name=ca_cluster_name,
                    kubernetes_version=settings.kubernetes_version,
                    karpenter=karpenter,
                    wait_for=release,
                ),
                opts=pulumi.ResourceOptions(parent=parent),
            )
            for plan in settings.plans
        }
        covered = [*gpu_node_groups.values(), *node_groups]
        on_cluster = _OnCluster(name, parent, target, settings, tags, covered=covered)
        # What observability asks of the operator's dcgm-exporter; None: the chart's defaults. (The OIDC
        # provider the cloudwatch pipeline needs: GpuCapacity checks it with its other problems,
        # observability.values.oidc_provider_problem; GpuCluster always passes its own.)
        exporter = exporter_options(settings.observability)
        gpu_operator = on_cluster.operator(exporter)
    except BaseException:
        # Declaration failed: the groups' registrations must not wait forever for a release.
        resolve_release(pulumi.Output.from_input([]))
        raise
    resolve_release(pulumi.Output.from_input([gpu_operator.release]))
    cluster_autoscaler = on_cluster.autoscaler(ca_cluster_name) if ca_cluster_name is not None else None
    check = on_cluster.verification(gpu_operator, cluster_autoscaler) if settings.verification.enabled else None
    # The EFA device plugin: only when a group has efa (issue 32).
    efa_plugin = on_cluster.efa_plugin() if any(g.plan.efa_devices for g in on_cluster.covered) else None
    observability = on_cluster.observability(gpu_operator, exporter) if settings.observability.enabled else None
    teams = on_cluster.teams(check) if settings.teams else None
    return GpuCapacityParts(
        gpu_node_groups=gpu_node_groups,
        operator=gpu_operator,
        autoscaler=cluster_autoscaler,
        verification=check,
        observability=observability,
        teams=teams,
        efa_plugin=efa_plugin,
    )


def _autoscaler_cluster_name(
    name: str, target: ClusterTarget, settings: GpuCapacitySettings, autoscaler_cluster_name: str | None
) -> str | None:
    """The cluster name the Cluster Autoscaler discovers the groups by, None without an autoscaler;
    a ValueError where the autoscaler is enabled without what it needs of the cluster."""
    if not settings.autoscaler_enabled:
        return None
    if autoscaler_cluster_name is None:
        raise ValueError(
            f"{name}: the Cluster Autoscaler needs the cluster's name as a plain string (it names the ASG "
            "discovery tag): received none"
        )
    if target.oidc_provider_arn is None or target.oidc_provider_url is None:
        raise ValueError(
            f"{name}: the Cluster Autoscaler needs the cluster's IAM OIDC provider (IRSA): "
            "received no oidc_provider_arn/oidc_provider_url"
        )
    return autoscaler_cluster_name


@dataclass
class _OnCluster:
    """The cluster-side parts of GPU capacity, each a child of ``parent`` on the cluster's
    Kubernetes provider, for the ``covered`` GPU node groups (the settings' and the caller's)."""

    name: str
    parent: pulumi.Resource
    target: ClusterTarget
    settings: GpuCapacitySettings
    tags: Mapping[str, pulumi.Input[str]]
    covered: list[GpuNodeGroup]

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent, providers={"kubernetes": self.target.provider})

    def operator(self, exporter: ExporterOptions | None) -> GpuOperator:
        return GpuOperator(
            f"{self.name}-{OPERATOR_CHILD}",
            GpuOperatorArgs(
                settings=self.settings.gpu_operator,
                gpu_node_groups=self.covered,
                # The operator, NFD master and gc need an untainted node to run on.
                wait_for=list(self.target.ready),
                exporter=exporter,
            ),
            opts=self._opts(),
        )

    def autoscaler(self, cluster_name: str) -> ClusterAutoscaler:
        """Cluster Autoscaler: scales the GPU groups, from zero too (issue 9)."""
        return ClusterAutoscaler(
            f"{self.name}-{AUTOSCALER_CHILD}",
            ClusterAutoscalerArgs(
                settings=self.settings.autoscaler,
                cluster_name=cluster_name,
                kubernetes_version=self.settings.kubernetes_version,
                oidc_provider_arn=self.target.oidc_provider_arn,
                oidc_provider_url=self.target.oidc_provider_url,
                # CA runs on an untainted node (the system node group).
                wait_for=list(self.target.ready),
                tags=self.tags,
                plans=[g.plan for g in self.covered],
            ),
            opts=self._opts(),
        )

    def verification(self, gpu_operator: GpuOperator, cluster_autoscaler: ClusterAutoscaler | None) -> GpuVerification:
        return GpuVerification(
            f"{self.name}-{VERIFICATION_CHILD}",
            GpuVerificationArgs(
                settings=self.settings.verification,
                gpu_node_groups=self.covered,
                # With an autoscaler, the warm-up Jobs are what bring a group's first node.
                wait_for=[gpu_operator, *([cluster_autoscaler] if cluster_autoscaler else [])],
                autoscaling=cluster_autoscaler is not None,
            ),
            opts=self._opts(),
        )

    def efa_plugin(self) -> EfaDevicePlugin:
        return EfaDevicePlugin(
            f"{self.name}-{EFA_CHILD}",
            EfaDevicePluginArgs(plans=[g.plan for g in self.covered], wait_for=list(self.target.ready)),
            opts=self._opts(),
        )

    def observability(self, gpu_operator: GpuOperator, exporter: ExporterOptions | None) -> GpuObservability:
        plans = [g.plan for g in self.covered]
        return GpuObservability(
            f"{self.name}-{OBSERVABILITY_CHILD}",
            GpuObservabilityArgs(
                settings=self.settings.observability,
                plans=plans,
                cluster_name=self.target.cluster_name,
                operator_namespace=self.settings.gpu_operator.namespace,
                per_pod_metrics=per_pod_gpu_metrics(plans, self.settings.gpu_operator.chart_version, exporter),
                oidc_provider_arn=self.target.oidc_provider_arn,
                oidc_provider_url=self.target.oidc_provider_url,
                tags=self.tags,
                # The operator creates the namespace the rule and the dashboard default to.
                wait_for=[gpu_operator.namespace],
                teams=self.settings.teams,
            ),
            opts=self._opts(),
        )

    def teams(self, check: GpuVerification | None) -> Teams:
        settings = self.settings
        return Teams(
            f"{self.name}-{TEAMS_CHILD}",
            TeamsArgs(
                teams=settings.teams,
                plans=[g.plan for g in self.covered],
                cluster_name=self.target.cluster_name,
                authentication_mode=self.target.authentication_mode,
                # With the verification, a Job per team proves its policy and quota (verification.teams).
                check=TeamsCheck(namespace=check.namespace, image=settings.verification.probe_image)
                if check is not None and settings.verification.teams
                else None,
            ),
            opts=self._opts(),
        )


def group_outputs(groups: Mapping[str, GpuNodeGroup]) -> dict[str, dict[str, object]]:
    """What workloads need to land on each group (README, "Stack outputs"); a Karpenter group
    names its NodePool instead of an Auto Scaling group."""
    return {
        group_name: {**outputs, **_provider_outputs(groups[group_name])}
        for group_name, outputs in _common_outputs(groups).items()
    }


def _provider_outputs(group: GpuNodeGroup) -> dict[str, object]:
    if group.plan.provider.node_pool:
        # autoscalingGroupName stays (empty): the component package's schema requires it.
        return {"autoscalingGroupName": "", "nodePoolName": karpenter_objects.object_name(group.plan)}
    return {"autoscalingGroupName": group.autoscaling_group_name}


def _common_outputs(groups: Mapping[str, GpuNodeGroup]) -> dict[str, dict[str, object]]:
    return {
        group_name: {
            "nodeSelector": dict(g.plan.node_labels),
            "tolerations": [dict(t) for t in g.plan.tolerations],
            "gpusPerNode": g.plan.gpus_per_node,
            "advertisedGpusPerNode": g.plan.slots_per_node,
            "resourceName": g.plan.resource_name,
            "sharedSlotsPerNode": g.plan.slots_per_node,
            "sharedSlotsAtMaxSize": g.plan.slots_at_max_size,
            "sharingMode": g.plan.sharing_mode,
            "memoryPerSlotGiB": round(g.plan.memory_per_slot_mib / 1024, 2),
            # docs/node-health.md: by whom, after how long, the action per fault class, when it pauses.
            "repairPolicy": g.plan.repair.words(),
            # MIG groups only (other groups' outputs stay as they were): the slices of each GPU
            # and every resource a node advertises (one per profile under mixed).
            **(
                {"migLayout": dict(g.plan.mig_layout), "advertisedResources": dict(g.plan.advertised_resources)}
                if g.plan.mig_layout is not None
                else {}
            ),
            # Only while isolation is not enforced (other groups' outputs stay as they were).
            **({} if ISOLATIONS[g.plan.isolation].enforced else {"isolation": NOT_ENFORCED}),
        }
        for group_name, g in groups.items()
    }
