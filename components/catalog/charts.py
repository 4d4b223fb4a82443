"""The Helm charts the library installs, pinned: where each comes from, the versions its values are
validated against, and its release. One type for the four (``ChartPin``); the facts of a chart's
versions stay beside the chart's other facts (``gpu_operator.SUPPORTED_CHART_VERSIONS``). Every
chart is installed the same way (``blocks/helm.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .gpu_operator import DEFAULT_CHART_VERSION, SUPPORTED_CHART_VERSIONS


@dataclass(frozen=True)
class ChartPin:
    """A chart the library installs."""

    #: The chart's name in its repository, or its ``oci://`` reference (then no repository).
    chart: str
    repository: str | None
    #: The versions the library's values are checked against (tests render each against its
    #: values.yaml in ../shared/reference); another is refused unless ``allowUnvalidatedChartVersion``.
    versions: tuple[str, ...]
    #: The version installed unless the settings choose another.
    default: str
    #: The release's name, fixed so the release's objects have predictable names.
    release: str
    #: Its namespace; None: the settings' (``gpuOperator.namespace``).
    namespace: str | None = None

    def unvalidated_warning(self, version: str) -> str | None:
        """The warning for a ``version`` outside ``versions`` (allowed only with
        ``allowUnvalidatedChartVersion``), or None. The components log it on their resource."""
        if version in self.versions:
            return None
        return (
            f"{self.chart} chart {version} is not one this library was validated against "
            f"({', '.join(self.versions)}); its values paths are unchecked."
        )


#: NVIDIA's gpu-operator (``helm repo add nvidia https://helm.ngc.nvidia.com/nvidia``).
GPU_OPERATOR = ChartPin(
    chart="gpu-operator",
    repository="https://helm.ngc.nvidia.com/nvidia",
    versions=tuple(SUPPORTED_CHART_VERSIONS),
    default=DEFAULT_CHART_VERSION,
    release="gpu-operator",
)
#: Cluster Autoscaler (``helm repo add autoscaler https://kubernetes.github.io/autoscaler``), in
#: kube-system under a fixed name (its IRSA trust policy names the service account).
CLUSTER_AUTOSCALER = ChartPin(
    chart="cluster-autoscaler",
    repository="https://kubernetes.github.io/autoscaler",
    versions=("9.59.0",),
    default="9.59.0",
    release="cluster-autoscaler",
    namespace="kube-system",
)
#: Karpenter 1.14.1, published from aws/karpenter-provider-aws 1d927085dd81a9df9301e613f371dac5b4d16bfe
#: (charts/karpenter; its values.yaml and CRDs are in ../shared/reference/karpenter/1.14.1). Installed in
#: kube-system as Karpenter's getting-started guide does (KARPENTER_NAMESPACE=kube-system). Helm installs
#: the chart's CRDs on install; upgrading them is the karpenter-crd chart's job, so a later version is a
#: documented, manual step (UPGRADING.md) rather than a silent one.
KARPENTER = ChartPin(
    chart="oci://public.ecr.aws/karpenter/karpenter",
    repository=None,
    versions=("1.14.1",),
    default="1.14.1",
    release="karpenter",
    namespace="kube-system",
)
#: The AWS EFA Kubernetes device plugin: ``aws-efa-k8s-device-plugin`` v0.5.30 (appVersion and image tag
#: v0.5.20) of the ``eks-charts`` repository, aws/eks-charts 5239609242f3430be50fb0b714a24d3ef2b47983
#: ``stable/aws-efa-k8s-device-plugin`` (what the library relies on there: ``catalog/efa.py``), in
#: kube-system as the chart's README installs it.
EFA_DEVICE_PLUGIN = ChartPin(
    chart="aws-efa-k8s-device-plugin",
    repository="https://aws.github.io/eks-charts",
    versions=("v0.5.30",),
    default="v0.5.30",
    release="aws-efa-k8s-device-plugin",
    namespace="kube-system",
)
