"""Settings of what the library installs into the cluster: the gpu-operator, the Cluster Autoscaler and
the verification Jobs.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ValidationInfo, field_validator

from ..autoscaler import chart as ca_chart
from ..gpu_operator import chart
from .charts import pinned_chart_version
from .fields import ImageReference, OwnNamespace, _Model, _scale_down_time


class GpuOperatorSettings(_Model):
    #: Allow a chart version this library was not validated against (its values paths unchecked).
    #: Declared before chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = False
    chart_version: str = chart.DEFAULT_CHART_VERSION
    namespace: OwnNamespace = "gpu-operator"
    #: ``cdi.enabled``. Pinned false: with the operator's toolkit disabled, the AMI's own NVIDIA
    #: runtime injects devices from NVIDIA_VISIBLE_DEVICES. The chart default changed (false in
    #: v25.3, true from v25.10), so leaving it unset would change behaviour on upgrade.
    cdi_enabled: bool = False

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return pinned_chart_version(value, info, chart.SUPPORTED_CHART_VERSIONS, "the", "v26.7.0")


class AutoscalerSettings(_Model):
    """The Cluster Autoscaler (kubernetes/autoscaler) that scales the GPU node groups."""

    #: Install it. Default (None): when any GPU group's minSize < maxSize.
    enabled: bool | None = None
    #: Allow a chart version this library was not validated against. Declared before
    #: chart_version so the chart_version validator can read it.
    allow_unvalidated_chart_version: bool = False
    chart_version: str = ca_chart.DEFAULT_AUTOSCALER_CHART_VERSION
    #: ``--scale-down-unneeded-time``: how long a node (a GPU node costs ~$0.53/h) may sit
    #: unneeded before CA removes it. CA's own default is 10m.
    scale_down_unneeded_time: Annotated[str, AfterValidator(_scale_down_time)] = "10m"

    @field_validator("chart_version")
    @classmethod
    def _known_chart(cls, value: str, info: ValidationInfo) -> str:
        return pinned_chart_version(
            value, info, ca_chart.AUTOSCALER_CHART_VERSIONS, "the cluster-autoscaler chart", "9.59.0"
        )


class VerificationSettings(_Model):
    image: ImageReference = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    namespace: OwnNamespace = "gpu-timeslicing-check"
