"""The untainted system node group: cluster services (CoreDNS, gpu-operator, NFD master/gc, the
Cluster Autoscaler) run only here."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from .. import catalog
from .errors import KeyedProblems
from .fields import AmiReleaseVersion, Count, SystemInstanceType, _Model, _unique, doc
from .groups import MAX_GP3_VOLUME_GIB, MAX_INSTANCE_TYPES, MIN_ROOT_VOLUME_GIB, Scaling

#: The pods of cluster services on the system nodes, each with a pod address (not host-network):
#: CoreDNS (2 replicas, the EKS add-on's default), the gpu-operator, NFD master and gc (the chart's
#: subchart); ``system_service_pods`` adds the Cluster Autoscaler and the CloudWatch add-on's
#: controller when they are installed.
SYSTEM_SERVICE_PODS = ("coredns", "coredns", "gpu-operator", "nfd-master", "nfd-gc")
AUTOSCALER_POD = "cluster-autoscaler"
#: The CloudWatch add-on's operator (aws-observability/helm-charts charts/amazon-cloudwatch-observability
#: 6.4.0 templates/operator-deployment.yaml: ``<chart>-controller-manager``, ``replicaCount: 1``).
CLOUDWATCH_CONTROLLER_POD = "amazon-cloudwatch-observability-controller-manager"


def system_service_pods(autoscaler: bool, cloudwatch: bool, karpenter: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The cluster-service pods the system nodes must hold (``karpenter``: the Karpenter controller's
    pods, ``capacity_provider.karpenter_pods``)."""
    return (
        SYSTEM_SERVICE_PODS
        + ((AUTOSCALER_POD,) if autoscaler else ())
        + ((CLOUDWATCH_CONTROLLER_POD,) if cloudwatch else ())
        + karpenter
    )


def _system_nodes_at_creation(scaling: Scaling) -> Scaling:
    # CoreDNS, the gpu-operator, NFD master/gc and the Cluster Autoscaler run on the system group
    # only (the autoscaler's affinity keeps it off GPU nodes, autoscaler/values.py). With no node
    # at creation none of them ever runs: the autoscaler that could add one is among them, and
    # EKS leaves desiredSize alone afterwards (it is in ignore_changes).
    if scaling.desired_size == 0:
        raise KeyedProblems(
            [
                (
                    ("desiredSize",),
                    0,
                    "at least 1: the system group runs CoreDNS, the gpu-operator, NFD and the Cluster Autoscaler, "
                    "so with no node none of them can ever schedule (nothing else would add the first node)",
                )
            ]
        )
    return scaling


class SystemNodeGroupSettings(_Model):
    """The untainted node group for cluster services (CoreDNS, gpu-operator, NFD master/gc)."""

    model_config = ConfigDict(title="SystemNodeGroupSettings")

    instance_types: Annotated[
        list[SystemInstanceType], Field(min_length=1, max_length=MAX_INSTANCE_TYPES), AfterValidator(_unique)
    ] = Field(
        ["m6i.large"],
        **doc(
            "Untainted on-demand nodes for cluster services, each type once. Graviton types (`m7g`, `c7g`, `t4g`, …) "
            "get the arm64 AMI (`AL2023_ARM_64_STANDARD`); mixing arm64 and x86_64 is an error (one AMI per group); "
            "GPU/accelerated types (`g*`, `p*`, `inf*`, `trn*`, `dl*`) are errors. Types whose nodes run only 4 pods "
            "(`t3.micro`, `t3.nano`, `t4g.micro`, …) are errors unless `desiredSize` nodes hold the cluster services "
            "(2 pods each; none with the CloudWatch pipeline, whose agent and Fluent Bit take the other 2).",
            type="list",
            default='`["m6i.large"]`',
        ),
    )
    scaling: Annotated[Scaling, AfterValidator(_system_nodes_at_creation)] = Field(
        Scaling(min_size=2, desired_size=2, max_size=3),
        **doc(
            "EKS scaling config (min ≤ desired ≤ max). `desiredSize: 0` is an error: CoreDNS, the gpu-operator, NFD "
            "and the Cluster Autoscaler run only here, so nothing could ever bring the first node.",
            type="`{minSize, desiredSize, maxSize}`",
            default="`{2, 2, 3}`",
        ),
    )
    disk_size_gib: Count = Field(
        default=50,
        ge=MIN_ROOT_VOLUME_GIB,
        le=MAX_GP3_VOLUME_GIB,
        alias="diskSizeGiB",
        **doc("Size in GiB of the encrypted gp3 root volume.", type="int 20–65536", default="`50`"),
    )
    ami_release_version: AmiReleaseVersion | None = Field(
        None,
        **doc(
            "Pin the EKS AMI release, `<x.y.z>-<yyyymmdd>` of the cluster's minor (e.g. `1.35.0-20260115`).",
            type="string",
            default="latest",
        ),
    )

    @field_validator("instance_types")
    @classmethod
    def _one_architecture(cls, types: list[str]) -> list[str]:
        # EKS CreateNodegroup: every instance type must fit the group's single amiType (an arm64
        # AMI cannot boot on x86_64 and vice versa).
        archs = {t: catalog.instance_architecture(t) for t in types}
        if len(set(archs.values())) > 1:
            detail = ", ".join(f"{t}={a}" for t, a in archs.items())
            raise ValueError(f"instance types of one CPU architecture, since a node group has one AMI (got {detail})")
        return types

    @property
    def architecture(self) -> str:
        return catalog.instance_architecture(self.instance_types[0])

    @property
    def ami_type(self) -> str:
        """``AL2023_x86_64_STANDARD``, or ``AL2023_ARM_64_STANDARD`` for Graviton instance types."""
        return catalog.SYSTEM_AMI_TYPES[self.architecture]
