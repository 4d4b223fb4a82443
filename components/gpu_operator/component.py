"""The NVIDIA gpu-operator: its namespace and the Helm release with values computed from the
GPU node groups (see values.gpu_operator_values)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from ..blocks import coverage
from ..blocks.coverage import DeclaredGroup
from ..blocks.helm import helm_release
from ..catalog.charts import GPU_OPERATOR
from ..check.groups import gpu_groups_problems
from ..config.addons import GpuOperatorSettings
from ..config.errors import describe_problems
from . import values

TYPE_NAME = "gpu-eks:operator:GpuOperator"

#: Helm waits for the operator, NFD master/gc and workers to be ready. The GPU node groups the
#: library declares wait for the release (GpuNodeGroupArgs.wait_for), so on a fresh cluster it
#: installs before any GPU node joins; a later upgrade waits for the workers on every GPU node.
RELEASE_TIMEOUT_SECONDS = 900


@dataclass
class GpuOperatorArgs:
    settings: GpuOperatorSettings
    #: Every GPU node group of the cluster: the values (sharing profiles, tolerations for their
    #: taints, placement) are computed from them, so the operator covers exactly these. A group of
    #: the same cluster left out is an error at declaration (``coverage``).
    gpu_node_groups: Sequence[DeclaredGroup]
    #: Resources to finish first (e.g. the system node group: the operator needs a node). Pulumi
    #: does not pass a component's `depends_on` to its children, so this is an explicit argument.
    wait_for: Sequence[pulumi.Resource] = ()
    #: What observability asks of the dcgm-exporter (per-pod metrics, ServiceMonitor); None: the
    #: chart's defaults.
    exporter: values.ExporterOptions | None = None


class GpuOperator(pulumi.ComponentResource):
    """Namespace (Pod Security Admission ``privileged``) + gpu-operator Helm release.

    Pass the cluster's Kubernetes provider with ``opts=ResourceOptions(providers={"kubernetes": p})``.
    """

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    values: dict

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        plans = [g.plan for g in args.gpu_node_groups]
        if not plans:
            raise coverage.HalfWiredError(
                f"GpuOperator {name!r}: gpu_node_groups is empty; expected the GPU node groups"
            )
        problems = gpu_groups_problems(plans)
        if problems:
            raise coverage.HalfWiredError(
                f"GpuOperator {name!r}: its GPU node groups cannot share one operator: {describe_problems(problems)}"
            )
        s = args.settings
        # One isolation per cluster: the plugin's strategy must be one every covered node honours.
        differ = [g.plan.name for g in args.gpu_node_groups if g.plan.isolation != s.isolation]
        if differ:
            raise coverage.HalfWiredError(
                f"GpuOperator {name!r}: gpuOperator.isolation is {s.isolation!r}, GPU node group(s) {differ} were "
                f"declared with another (GpuNodeGroupArgs.isolation): their nodes would not honour the device "
                f"plugin's device lists; declare them with isolation={s.isolation!r}"
            )
        coverage.register_operator(name, args.gpu_node_groups)
        super().__init__(TYPE_NAME, name, None, opts)
        warning = GPU_OPERATOR.unvalidated_warning(s.chart_version)
        if warning:
            pulumi.log.warn(warning, resource=self)
        self.values = values.gpu_operator_values(plans, s.chart_version, s.cdi_enabled, args.exporter, s.namespace)

        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=s.namespace,
                # The operator's DaemonSets run privileged (device plugin, DCGM, validators).
                labels={
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                },
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        # The exporter's metrics file (no profiling fields): read at its start, so created first.
        release_after: list[pulumi.Resource] = []
        if args.exporter is not None and values.needs_metrics_config_map(plans):
            self.metrics_config_map = k8s.core.v1.ConfigMap(
                f"{name}-dcgm-metrics",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=values.METRICS_CONFIG_MAP, namespace=self.namespace.metadata.name
                ),
                data={"metrics": values.metrics_csv()},
                opts=pulumi.ResourceOptions(parent=self),
            )
            release_after.append(self.metrics_config_map)
        # The release depends on the namespace through `namespace=`, hence on `wait_for` too.
        self.release = helm_release(
            f"{name}-release",
            GPU_OPERATOR,
            version=s.chart_version,
            namespace=self.namespace.metadata.name,
            values=self.values,
            timeout_seconds=RELEASE_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self, depends_on=release_after),
        )
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "releaseName": self.release.name,
                "chartVersion": s.chart_version,
                "devicePluginConfigName": self.values["devicePlugin"]["config"]["name"],
            }
        )
