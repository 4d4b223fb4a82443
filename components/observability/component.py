"""GpuObservability: the metrics pipeline, the shared-GPU alerts and the dashboard (thin: the
objects come from ``rules``, ``dashboard`` and ``values``).

* ``cloudwatch``: an IRSA role with ``CloudWatchAgentServerPolicy`` and the
  ``amazon-cloudwatch-observability`` EKS add-on.
* ``prometheus``: the PrometheusRule (needs the prometheus-operator CRDs: ``pulumi up`` fails on
  it when they are absent, by choice: alerts asked for must not silently be missing) and the
  dashboard ConfigMap (a plain ConfigMap: harmless without Grafana). The dashboard reads the
  Prometheus series the operator's ServiceMonitor collects, keyed by the ``node`` label its
  relabeling adds: without a Prometheus pipeline it would show nothing, so it is not created.

The per-pod exporter settings and the ServiceMonitor are the operator's values
(``gpu_operator.values.dcgm_exporter_values``); ``composites.declare`` passes them on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..blocks.iam import managed_policy_arn, partition_of
from ..config.addons import ObservabilitySettings
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from . import dashboard, node_health, rules, values
from . import teams as team_usage

TYPE_NAME = "gpu-eks:observability:GpuObservability"


@dataclass
class GpuObservabilityArgs:
    settings: ObservabilitySettings
    #: The plans of every GPU node group the operator covers.
    plans: Sequence[GroupPlan]
    cluster_name: pulumi.Input[str]
    #: The gpu-operator's namespace (the exporter's; the default for the rule and the dashboard).
    operator_namespace: str
    #: Whether the exporter attributes utilisation and memory to pods (``gpu_operator.values``).
    per_pod_metrics: bool
    #: The cluster's IAM OIDC provider (IRSA of the CloudWatch agent); needed for ``cloudwatch``.
    oidc_provider_arn: pulumi.Input[str] | None = None
    oidc_provider_url: pulumi.Input[str] | None = None
    tags: Mapping[str, pulumi.Input[str]] | None = None
    #: What the objects wait for (e.g. the operator: the namespace it creates).
    wait_for: Sequence[pulumi.Resource] = ()
    #: The teams (``teams``): their alert and the dashboard's "Per team" row.
    teams: Sequence[TeamSettings] = ()


class GpuObservability(pulumi.ComponentResource):
    """Pass the cluster's Kubernetes provider with ``opts=ResourceOptions(providers={"kubernetes": p})``."""

    outputs: pulumi.Output

    def __init__(self, name: str, args: GpuObservabilityArgs, opts: pulumi.ResourceOptions | None = None):
        s = args.settings
        problem = values.oidc_provider_problem(
            s, args.oidc_provider_arn is not None and args.oidc_provider_url is not None
        )
        if problem:
            raise ValueError(f"GpuObservability {name!r}: {problem}")
        super().__init__(TYPE_NAME, name, None, opts)
        after = pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for))
        namespace = values.rule_namespace(s, args.operator_namespace)
        self.dashboard = None
        self.rule = None
        if s.prometheus:
            self.dashboard = k8s.core.v1.ConfigMap(
                f"{name}-dashboard",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=values.DASHBOARD_CONFIG_MAP, namespace=namespace, labels=dict(dashboard.SIDECAR_LABEL)
                ),
                data={dashboard.FILE_NAME: dashboard.dashboard_json(args.plans, args.teams)},
                opts=after,
            )
            self.rule = k8s.apiextensions.CustomResource(
                f"{name}-rules",
                api_version=values.PROMETHEUS_RULE_API,
                kind=values.PROMETHEUS_RULE_KIND,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=values.RULE_NAME, namespace=namespace, labels=dict(s.prometheus_labels)
                ),
                # The teams' usage, then the GPU groups' node health (node_health.rule_group).
                spec=rules.rule_spec(
                    args.plans, s.alerts, [*team_usage.rule_group(args.teams), node_health.rule_group(args.plans)]
                ),
                opts=after,
            )
        out = values.outputs(s, args.operator_namespace, args.per_pod_metrics)
        self.role = None
        self.addon = None
        if s.cloudwatch:
            self.role = aws.iam.Role(
                f"{name}-cloudwatch-role",
                description=pulumi.Output.concat("CloudWatch agent of EKS cluster ", args.cluster_name, " (IRSA)"),
                assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_provider_url).apply(
                    lambda a: values.cloudwatch_trust_policy(a[0], a[1])
                ),
                tags=dict(args.tags or {}),
                opts=pulumi.ResourceOptions(parent=self),
            )
            attachment = aws.iam.RolePolicyAttachment(
                f"{name}-cloudwatch-policy",
                role=self.role.name,
                policy_arn=partition_of(self).apply(lambda p: managed_policy_arn(p, values.CLOUDWATCH_POLICY)),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.addon = aws.eks.Addon(
                f"{name}-cloudwatch",
                cluster_name=args.cluster_name,
                addon_name=values.CLOUDWATCH_ADDON,
                service_account_role_arn=pulumi.Output.all(self.role.arn, attachment.id).apply(lambda a: a[0]),
                tags=dict(args.tags or {}),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
            )
            out["cloudwatch"]["performanceLogGroup"] = pulumi.Output.from_input(args.cluster_name).apply(
                lambda n: values.log_groups(n)["performance"]
            )
        self.outputs = pulumi.Output.from_input(out)
        self.register_outputs({"observability": self.outputs})
