"""Settings of what the library installs into the cluster: the gpu-operator, the Cluster Autoscaler and
the verification Jobs.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, ValidationInfo, field_validator

from ..autoscaler import chart as ca_chart
from ..gpu_operator import chart
from .charts import pinned_chart_version
from .fields import ImageReference, OwnNamespace, _Model, _scale_down_time, doc


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
        chart.DEFAULT_CHART_VERSION,
        **doc(
            "gpu-operator chart version: `v25.3.1`, `v25.10.1` or `v26.7.0` (the versions validated here). Stacks "
            "pin it explicitly.",
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
    # With the operator's toolkit disabled, the AMI's own NVIDIA runtime injects devices from
    # NVIDIA_VISIBLE_DEVICES.
    cdi_enabled: bool = Field(
        False,
        **doc(
            "The chart's `cdi.enabled`, pinned: the chart's default changed between versions (false in v25.3, true "
            "from v25.10), and upgrading the chart must not silently change how devices reach containers.",
            type="bool",
            default="`false`",
        ),
    )

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return pinned_chart_version(value, info, chart.SUPPORTED_CHART_VERSIONS, "the", "v26.7.0")


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
            default="`true` when any GPU group has `minSize < maxSize`",
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
        ca_chart.DEFAULT_AUTOSCALER_CHART_VERSION,
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
        return pinned_chart_version(
            value, info, ca_chart.AUTOSCALER_CHART_VERSIONS, "the cluster-autoscaler chart", "9.59.0"
        )


class VerificationSettings(_Model):
    """The time-slicing verification Jobs (``verifyTimeSlicing: true``)."""

    model_config = ConfigDict(title="VerificationSettings")

    image: ImageReference = Field(
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        **doc(
            "CUDA vectorAdd sample image the verification pods run (a valid `[registry/]name[:tag][@sha256:…]`).",
            type="image reference",
            default="`nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0`",
        ),
    )
    namespace: OwnNamespace = Field(
        "gpu-timeslicing-check",
        **doc(
            "Namespace of the verification Jobs, created by the library: not one of Kubernetes' own, and not "
            "`gpuOperator.namespace` when `verifyTimeSlicing` is on.",
            type="string",
            default="`gpu-timeslicing-check`",
        ),
    )
