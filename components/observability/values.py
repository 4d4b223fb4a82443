"""Facts of the metrics pipelines and the objects the observability component declares. Pure.

CloudWatch: the ``amazon-cloudwatch-observability`` EKS add-on (Container Insights with enhanced
observability). Its chart (aws-observability/helm-charts ``charts/amazon-cloudwatch-observability``)
runs the CloudWatch agent and Fluent Bit on every node (default ``tolerations: [{operator:
Exists}]``, so the GPU taints do not keep them off) and, on the GPU instance types of its
``gpuInstances`` list (g4dn.* among them), a dcgm-exporter of its own (``DcgmExporter``: no
``DCGM_FI_PROF_*`` fields) that the agent scrapes. The agent writes with the
``CloudWatchAgentServerPolicy`` managed policy, through IRSA on its service account
``amazon-cloudwatch/cloudwatch-agent``: no permission on the node role, so nothing about the nodes
changes.

Prometheus: the operator's dcgm-exporter ServiceMonitor (``gpu_operator.values``) and the
PrometheusRule (``rules``); the dashboard ConfigMap (``dashboard``) is declared with either.
"""

from __future__ import annotations

from typing import Any

from ..blocks import iam as cluster_iam
from ..config.addons import ObservabilitySettings

#: The EKS add-on.
CLOUDWATCH_ADDON = "amazon-cloudwatch-observability"
#: Namespace and service account of the add-on's CloudWatch agent (what IRSA trusts).
CLOUDWATCH_NAMESPACE = "amazon-cloudwatch"
CLOUDWATCH_SERVICE_ACCOUNT = "cloudwatch-agent"
#: The AWS managed policy the agent needs (PutMetricData, PutLogEvents, tag and EC2 reads).
CLOUDWATCH_POLICY = "CloudWatchAgentServerPolicy"
#: Where the metrics land: the CloudWatch metric namespace of Container Insights.
CLOUDWATCH_METRIC_NAMESPACE = "ContainerInsights"

#: The PrometheusRule's API (prometheus-operator ``monitoring.coreos.com/v1``).
PROMETHEUS_RULE_API = "monitoring.coreos.com/v1"
PROMETHEUS_RULE_KIND = "PrometheusRule"
#: Names of the PrometheusRule and the dashboard ConfigMap.
RULE_NAME = "gpu-eks-shared-gpus"
DASHBOARD_CONFIG_MAP = "gpu-eks-shared-gpus-dashboard"
#: The operator's exporter Service and ServiceMonitor (gpu-operator
#: ``assets/state-dcgm-exporter/0400_service.yaml``, ``0500_service_monitor.yaml``).
EXPORTER_SERVICE = "nvidia-dcgm-exporter"
EXPORTER_PORT = 9400


def oidc_provider_problem(settings: ObservabilitySettings, has_oidc_provider: bool) -> str | None:
    """The one rule on the OIDC provider: the ``cloudwatch`` pipeline needs it (IRSA of the
    CloudWatch agent). None when met. ``GpuCapacity`` reports it with its other problems before
    anything is declared; ``GpuObservability`` raises it for programs that declare it themselves
    (``GpuCluster`` always passes its cluster's provider)."""
    if settings.enabled and settings.cloudwatch and not has_oidc_provider:
        return (
            f"observability.pipeline {settings.pipeline!r} needs oidc_provider_arn and oidc_provider_url (the "
            "CloudWatch agent gets AWS access through IRSA)"
        )
    return None


def cloudwatch_trust_policy(oidc_provider_arn: str, oidc_provider_url: str) -> str:
    """Trust policy letting only the add-on's agent service account assume the role (IRSA)."""
    return cluster_iam.irsa_trust_policy(
        oidc_provider_arn, oidc_provider_url, CLOUDWATCH_NAMESPACE, CLOUDWATCH_SERVICE_ACCOUNT
    )


def log_groups(cluster_name: str) -> dict[str, str]:
    """The CloudWatch log groups Container Insights writes (performance events carry the metrics)."""
    base = f"/aws/containerinsights/{cluster_name}"
    return {kind: f"{base}/{kind}" for kind in ("performance", "application", "dataplane", "host")}


def rule_namespace(settings: ObservabilitySettings, operator_namespace: str) -> str:
    """Where the PrometheusRule and the dashboard ConfigMap go."""
    return settings.namespace or operator_namespace


def outputs(settings: ObservabilitySettings, operator_namespace: str, per_pod: bool) -> dict[str, Any]:
    """Where the metrics land (the ``observability`` stack output); the component adds the
    CloudWatch log group (it names the cluster, an Output)."""
    out: dict[str, Any] = {
        "pipeline": settings.pipeline,
        "perPodGpuMetrics": per_pod,
        "exporter": {
            "namespace": operator_namespace,
            "service": EXPORTER_SERVICE,
            "port": EXPORTER_PORT,
            "path": "/metrics",
        },
    }
    if settings.prometheus:
        out["dashboardConfigMap"] = f"{rule_namespace(settings, operator_namespace)}/{DASHBOARD_CONFIG_MAP}"
        out["prometheusRule"] = f"{rule_namespace(settings, operator_namespace)}/{RULE_NAME}"
    if settings.cloudwatch:
        out["cloudwatch"] = {"addon": CLOUDWATCH_ADDON, "metricNamespace": CLOUDWATCH_METRIC_NAMESPACE}
    return out
