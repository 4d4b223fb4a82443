"""Settings of what the library installs into the cluster: the gpu-operator, the Cluster Autoscaler and
the verification Jobs.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..catalog.charts import CLUSTER_AUTOSCALER, GPU_OPERATOR
from .charts import pinned_chart_version
from .errors import KeyedProblems
from .fields import (
    ImageReference,
    LabelKey,
    LabelValue,
    NamespaceName,
    OwnNamespace,
    _Model,
    _scale_down_time,
    doc,
)
from .isolation import ENFORCED, IsolationName


class GpuOperatorSettings(_Model):
    """The NVIDIA gpu-operator Helm release."""

    model_config = ConfigDict(title="GpuOperatorSettings")

    # Declared before chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = Field(
        False,
        **doc(
            "Allow a `chartVersion` other than the validated ones: any `vX.Y.Z` (its values paths are unchecked; a "
            "warning is logged).",
            type="bool",
            default="`false`",
            listed_after="chartVersion",
        ),
    )
    chart_version: str = Field(
        GPU_OPERATOR.default,
        **doc(
            "gpu-operator chart version: `v25.3.1`, `v25.10.1` or `v26.7.0` (the versions validated here). Stacks "
            "pin it explicitly. NVIDIA no longer supports v25.3.x and v25.10.x (its platform-support page): "
            "they deploy, with a warning.",
            type="string",
            default="`v26.7.0`",
        ),
    )
    namespace: OwnNamespace = Field(
        "gpu-operator",
        **doc(
            "Namespace of the release (and of the device-plugin ConfigMap), created by the library: not `default`, "
            "`kube-system`, `kube-public` or `kube-node-lease`.",
            type="string",
            default="`gpu-operator`",
        ),
    )
    # With the operator's toolkit disabled, the AMI's own NVIDIA runtime injects the devices the
    # device plugin names (catalog/device_lists.py); cdi.enabled does not change the plugin's
    # strategy from v25.10.1 on (catalog/gpu_operator.py device_list_strategy).
    cdi_enabled: bool = Field(
        False,
        **doc(
            "The chart's `cdi.enabled`, pinned: the chart's default changed between versions (false in v25.3, true "
            "from v25.10), and upgrading the chart must not silently change how devices reach containers.",
            type="bool",
            default="`false`",
        ),
    )

    isolation: IsolationName = Field(
        ENFORCED,
        **doc(
            "How devices reach containers, cluster-wide: the device plugin's device-list strategy and every GPU "
            "node's container-toolkit settings, together. `enforced`: the plugin hands devices out as volume mounts "
            "and the nodes' toolkit refuses `NVIDIA_VISIBLE_DEVICES` from unprivileged containers (a pod without a "
            "GPU request sees none). `migrating`: the plugin sets `NVIDIA_VISIBLE_DEVICES` (as 0.2.0 did) and the "
            "nodes accept both, so GPU pods start on 0.2.0 nodes and new ones alike; nothing is isolated and the "
            "isolation Job is skipped. Upgrading from 0.2.0: `migrating` first, then `enforced` (UPGRADING.md). A "
            "change rolls every GPU node.",
            type="`enforced` | `migrating`",
            default="`enforced`",
        ),
    )

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return pinned_chart_version(value, info, GPU_OPERATOR.versions, "the", "v26.7.0")

    @model_validator(mode="after")
    def _cdi_keeps_the_device_list_strategy(self) -> GpuOperatorSettings:
        # gpu-operator v25.3.1 sets DEVICE_LIST_STRATEGY=envvar,cdi-annotations on the device plugin
        # after the chart's devicePlugin.env when CDI is on (catalog/gpu_operator.py
        # device_list_strategy): the plugin would not run the strategy gpuOperator.isolation chose
        # (under `enforced` it would pass devices through the variable the nodes' toolkit refuses,
        # and GPU pods would get none). v25.10.1+ apply the env last: ours holds, whatever cdiEnabled.
        if self.cdi_enabled and self.chart_version == "v25.3.1":
            raise KeyedProblems(
                [
                    (
                        ("cdiEnabled",),
                        True,
                        "false with chartVersion v25.3.1: its operator overrides the device plugin's device-list "
                        "strategy that gpuOperator.isolation chooses with its own (use v25.10.1 or later)",
                    )
                ]
            )
        return self


class AutoscalerSettings(_Model):
    """The Cluster Autoscaler (kubernetes/autoscaler) that scales the GPU node groups (from zero too)."""

    model_config = ConfigDict(title="AutoscalerSettings")

    # None: decided by the settings that hold it (Settings.autoscaler_enabled).
    enabled: bool | None = Field(
        None,
        **doc(
            "Install the Cluster Autoscaler and tag the GPU groups' ASGs for it. Needs a `kubernetesVersion` with a "
            "CA release in the table (1.32–1.36).",
            type="bool",
            default="`true` when any managed GPU group has `minSize < maxSize`",
        ),
    )
    # Declared before chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = Field(
        False,
        **doc(
            "Allow a `chartVersion` other than the validated one: any `X.Y.Z` (its values paths are unchecked; a "
            "warning is logged).",
            type="bool",
            default="`false`",
            listed_after="chartVersion",
        ),
    )
    chart_version: str = Field(
        CLUSTER_AUTOSCALER.default,
        **doc(
            "cluster-autoscaler chart version; `9.59.0` is the one validated here. Stacks pin it explicitly.",
            type="string",
            default="`9.59.0`",
        ),
    )
    scale_down_unneeded_time: Annotated[str, AfterValidator(_scale_down_time)] = Field(
        "10m",
        **doc(
            "CA `--scale-down-unneeded-time`: how long a node may sit unneeded before it is removed (a g4dn.xlarge "
            "costs about $0.53/h; CA's own default is also `10m`).",
            type="Go duration ≥ `1m` (e.g. `10m`, `1h30m`, `1.5h`)",
            default="`10m`",
        ),
    )

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return pinned_chart_version(value, info, CLUSTER_AUTOSCALER.versions, "the cluster-autoscaler chart", "9.59.0")


def _addon_version(value: str) -> str:
    # EKS add-on versions: v<major>.<minor>.<patch>-eksbuild.<n> (describe-addon-versions).
    if not re.fullmatch(r"v\d+\.\d+\.\d+-eksbuild\.\d+", value, re.ASCII):
        raise ValueError("an EKS add-on version such as v1.7.0-eksbuild.1 (aws eks describe-addon-versions)")
    return value


class NodeMonitoringAgentSettings(_Model):
    """The EKS node monitoring agent add-on (``eks-node-monitoring-agent``) on the cluster the library creates."""

    model_config = ConfigDict(title="NodeMonitoringAgentSettings")

    # None: decided by the settings that hold it (Settings.node_monitoring).
    enabled: bool | None = Field(
        None,
        **doc(
            "Install the `eks-node-monitoring-agent` EKS add-on: the node conditions GPU repair acts on "
            "(`AcceleratedHardwareReady` from NVIDIA XIDs and DCGM) and its own DCGM host engine on GPU nodes "
            'beside the gpu-operator\'s exporter (see "Node health"). Two DaemonSet pods more per GPU node (one on '
            "arm64), none on system nodes. Needs a `kubernetesVersion` with a pinned add-on version (1.32–1.36) or "
            "`addonVersion`.",
            type="bool",
            default="`true` when the cluster's minor has a pinned add-on version",
        ),
    )
    addon_version: Annotated[str, AfterValidator(_addon_version)] | None = Field(
        None,
        **doc(
            "The add-on version, instead of the library's pin for the cluster's minor (`v1.7.0-eksbuild.1` for "
            "1.32–1.36: the agent's v1.7.0).",
            type="`vX.Y.Z-eksbuild.N`",
            default="the pin for `kubernetesVersion`",
        ),
    )


class VerificationSettings(_Model):
    """The verification Jobs on ``pulumi up`` (``verification.enabled: true``)."""

    model_config = ConfigDict(title="VerificationSettings")

    enabled: bool = Field(
        False,
        **doc(
            'Run the verification Jobs on `pulumi up`: per GPU group a warm-up Job (it brings a node: see "Cluster '
            "Autoscaler and scale from zero\"), then all the slots of one node at once (MPS: each pod's memory "
            "limit; exclusive: one pod per GPU; MIG: a Job per advertised resource) and the isolation check; with "
            "`teams`, a Job per team; with `ncclAllReduce`, the NCCL check. Its name up to 0.3.0: `verifyTimeSlicing`.",
            type="bool",
            default="`false` (dev: `true`)",
        ),
    )

    image: ImageReference = Field(
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        **doc(
            "CUDA vectorAdd sample image the verification pods run (a valid `[registry/]name[:tag][@sha256:…]`).",
            type="image reference",
            default="`nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0`",
        ),
    )
    # The default image is a multi-arch manifest (linux/amd64 + linux/arm64): NVIDIA/k8s-samples
    # built vectoradd-cuda12.5.0 (commit 0cec502, 2024-06-26) with BUILD_MULTI_ARCH_IMAGES "true"
    # and docker buildx --platform=linux/amd64,linux/arm64 (.common-ci.yml), so arm64 groups (g5g)
    # pull the arm64 variant of the same tag unless an image is set here.
    image_arm64: ImageReference | None = Field(
        None,
        **doc(
            "Image for the pods on arm64 groups (g5g), when `image` has no linux/arm64 variant. The default "
            "`image` is multi-arch (amd64 and arm64).",
            type="image reference",
            default="`image`",
        ),
    )
    # The official Python image (Docker Official Images, mirrored on ECR Public so nodes pull it
    # without Docker Hub's anonymous rate limit), amd64 and arm64, ~50 MB. The probes need no CUDA
    # toolkit: they call the CUDA driver API through ctypes (verification/jobs.py).
    probe_image: ImageReference = Field(
        "public.ecr.aws/docker/library/python:3.12-slim",
        **doc(
            "Image with `python3` for the MPS memory-limit and exclusive-GPU probes (MPS and exclusive groups "
            "only; no CUDA needed: the NVIDIA runtime mounts the driver). Multi-arch when arm64 groups use MPS "
            "or exclusive GPUs; set it to a mirror where nodes cannot reach ECR Public.",
            type="image reference",
            default="`public.ecr.aws/docker/library/python:3.12-slim`",
        ),
    )
    teams: bool = Field(
        True,
        **doc(
            "With `teams`, a Job per team proves on `pulumi up` that its admission policy refuses a GPU pod outside "
            "its groups, a pod that sets `NVIDIA_VISIBLE_DEVICES`, names its node, or tolerates or selects its "
            "group without a GPU request, and its quota a pod over it (server-side dry runs: nothing is created; "
            "its only right is `create` on pods in the team's namespace). See docs/teams.md.",
            type="bool",
            default="`true`",
        ),
    )
    nccl_all_reduce: bool = Field(
        False,
        **doc(
            "Per exclusive `efa` group, a two-node NCCL all-reduce over EFA on `pulumi up` (it costs two nodes of the "
            "group for a few minutes): fails when NCCL falls back to sockets or its bus bandwidth is below half the "
            "network bandwidth of the type (p5: 200 GB/s, p4d: 25 GB/s). Needs `ncclImage`. See docs/multi-node.md.",
            type="bool",
            default="`false`",
        ),
    )
    nccl_image: ImageReference | None = Field(
        None,
        **doc(
            "Image of the NCCL check: PyTorch with NCCL, libfabric and the aws-ofi-nccl plugin (e.g. an AWS Deep "
            "Learning Container for PyTorch training on EC2); the AMI has the EFA driver only.",
            type="image reference",
            default="none",
        ),
    )
    nccl_advisory: bool = Field(
        False,
        **doc(
            "Declare the NCCL check without Pulumi's await (`pulumi.com/skipAwait`): it runs when its two nodes "
            "come and its verdict is in its log and Job status, but `pulumi up` does not wait for it. For groups "
            "on a reservation with fewer free instances than the check needs (preflight compares them).",
            type="bool",
            default="`false`",
        ),
    )
    capacity_blocks: Literal["skip", "verify"] = Field(
        "skip",
        **doc(
            "The verification Jobs of `CAPACITY_BLOCK` groups: `skip` (none: outside the block's window no node "
            "can launch, and `pulumi up` would wait for one until the Jobs' deadlines fail it; the stack outputs "
            "name the skipped groups) or `verify` (as any group, for an update made inside the window: preflight "
            "fails when the block is not active).",
            type="`skip` | `verify`",
            default="`skip`",
        ),
    )
    namespace: OwnNamespace = Field(
        "gpu-timeslicing-check",
        **doc(
            "Namespace of the verification Jobs, created by the library: not one of Kubernetes' own, and not "
            "`gpuOperator.namespace` when `enabled`.",
            type="string",
            default="`gpu-timeslicing-check`",
        ),
    )


#: A Prometheus duration (prometheus/common model/time.go ParseDuration, the parser of a rule's
#: ``for:``; Prometheus 3.x): units in this order, each at most once; y = 365d, w = 7d, d = 24h.
_PROMETHEUS_DURATION = re.compile(
    r"(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?", re.ASCII
)
_PROMETHEUS_UNIT_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)


def prometheus_duration_ms(value: str) -> int | None:
    """Milliseconds of ``value`` as Prometheus parses a duration, or None where it refuses it."""
    m = _PROMETHEUS_DURATION.fullmatch(value)
    if not value or m is None:
        return None
    return sum(int(n) * unit for n, unit in zip(m.groups(), _PROMETHEUS_UNIT_MS, strict=True) if n)


def _alert_duration(value: str) -> str:
    # A rule's `for:`. At least 1m: the exporter's series are scraped every 15 to 60 s, so a shorter
    # `for` fires on a single sample (the library's choice; Prometheus itself accepts 0).
    ms = prometheus_duration_ms(value)
    if ms is None or ms < 60_000:
        raise ValueError(
            "a Prometheus duration of at least 1m, such as 15m, 1h30m or 2d (units y w d h m s ms, in that "
            "order: prometheus/common model/time.go ParseDuration)"
        )
    return value


AlertDuration = Annotated[str, AfterValidator(_alert_duration)]
Percent = Annotated[int, Field(strict=True, ge=1, le=100)]


class AlertThresholds(_Model):
    """When the shared-GPU alerts fire (PrometheusRule ``gpu-eks-shared-gpus``)."""

    model_config = ConfigDict(title="AlertThresholds")

    memory_used_percent: Percent = Field(
        90,
        **doc(
            "`GpuMemoryNearFull`: a GPU's framebuffer used, in percent of its total, at or above which it fires (no "
            "memory isolation under time-slicing: the next allocation of any tenant fails).",
            type="int 1–100",
            default="`90`",
        ),
    )
    memory_for: AlertDuration = Field(
        "5m", **doc("How long memory stays that full first.", type="duration", default="`5m`")
    )
    contention_utilization_percent: Percent = Field(
        95,
        **doc(
            "`SharedGpuContended`: a GPU's utilisation, in percent, at or above which a GPU held by two or more pods "
            "counts as contended.",
            type="int 1–100",
            default="`95`",
        ),
    )
    contention_for: AlertDuration = Field(
        "30m", **doc("How long the contention lasts first.", type="duration", default="`30m`")
    )
    idle_utilization_percent: Percent = Field(
        5,
        **doc(
            "`GpuSlotIdle`: a pod's own utilisation of its GPU, in percent, at or below which its slot counts as idle.",
            type="int 1–100",
            default="`5`",
        ),
    )
    idle_for: AlertDuration = Field("2h", **doc("How long the slot stays idle first.", type="duration", default="`2h`"))
    advertised_for: AlertDuration = Field(
        "15m",
        **doc(
            "`GpuSlotsNotAdvertised`: how long a GPU node may advertise a count other than GPUs x replicas (the "
            "device plugin restarting with a new config takes a minute or two).",
            type="duration",
            default="`15m`",
        ),
    )
    exporter_missing_for: AlertDuration = Field(
        "10m",
        **doc(
            "`GpuExporterMissing`: how long a GPU node may have no dcgm-exporter series (its pod starting after the "
            "node joins).",
            type="duration",
            default="`10m`",
        ),
    )


class ObservabilitySettings(_Model):
    """GPU metrics, alerts and a dashboard for the shared GPUs (off unless `enabled: true`)."""

    model_config = ConfigDict(title="ObservabilitySettings")

    enabled: bool = Field(
        False,
        **doc(
            "Turn on the metrics pipeline and, with a Prometheus pipeline, the alerts, the dashboard and per-pod "
            "GPU metrics where the chart's exporter has them. Off by default: it installs things that cost money "
            "(CloudWatch) or runs the exporter with `hostPID` (per-pod metrics).",
            type="bool",
            default="`false`",
        ),
    )
    pipeline: Literal["cloudwatch", "prometheus", "both"] = Field(
        "cloudwatch",
        **doc(
            "Where metrics go. `cloudwatch`: the `amazon-cloudwatch-observability` EKS add-on (Container Insights; "
            "works on a fresh cluster). `prometheus`: a Prometheus operator already in the cluster: the exporter's "
            "ServiceMonitor and the PrometheusRule; `pulumi up` fails if its CRDs are absent. `both`: the two.",
            type="`cloudwatch` | `prometheus` | `both`",
            default="`cloudwatch`",
        ),
    )
    namespace: NamespaceName | None = Field(
        None,
        **doc(
            "An existing namespace for the PrometheusRule and the dashboard ConfigMap (your Prometheus must select "
            "rules there, your Grafana sidecar watch it).",
            type="string",
            default="`gpuOperator.namespace`",
        ),
    )
    prometheus_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        **doc(
            "Labels of the PrometheusRule and the exporter's ServiceMonitor, so your Prometheus selects them (e.g. "
            "`release: kube-prometheus-stack`).",
            type="map",
            default="`{}`",
        ),
    )
    per_pod_metrics: bool = Field(
        True,
        **doc(
            "Attribute GPU utilisation and memory to the pods sharing a GPU (dcgm-exporter `KUBERNETES_VIRTUAL_GPUS`, "
            "with `hostPID`), on groups that share GPUs, at chart versions whose exporter has it (v26.7.0; older "
            "ones report per GPU only), and only with `pipeline` `prometheus` or `both`: the `cloudwatch` add-on "
            "runs and reads its own exporter, so the operator's would get `hostPID` for nobody.",
            type="bool",
            default="`true`",
        ),
    )
    alerts: AlertThresholds = Field(AlertThresholds(), **doc("When the shared-GPU alerts fire."))

    @property
    def cloudwatch(self) -> bool:
        return self.pipeline in ("cloudwatch", "both")

    @property
    def prometheus(self) -> bool:
        return self.pipeline in ("prometheus", "both")
