"""The settings of GPU capacity on a cluster, and of a whole GPU-ready cluster, with the rules across
their keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from .. import catalog
from .addons import AutoscalerSettings, GpuOperatorSettings, VerificationSettings
from .errors import KeyedProblem, KeyedProblems
from .fields import (
    _LOG_TYPES,
    CONTROL_PLANE_LOG_TYPES,
    Cidr,
    PrincipalArn,
    Tags,
    _check,
    _cluster_name,
    _Model,
    _unique,
    kubernetes_version_problem,
)
from .groups import GpuNodeGroupSettings, SystemNodeGroupSettings
from .names import reserved_group_name_problem
from .network import NetworkSettings


def _non_empty(groups: tuple[GpuNodeGroupSettings, ...]) -> tuple[GpuNodeGroupSettings, ...]:
    if not groups:
        raise ValueError("at least one GPU node group")
    return groups


def _default_gpu_groups() -> tuple[GpuNodeGroupSettings, ...]:
    return (GpuNodeGroupSettings(name="gpu"),)


class Settings(_Model):
    """Everything a GPU-ready EKS cluster needs, validated."""

    #: EKS cluster name. Default: ``<project>-<stack>`` (filled in by the Pulumi loader).
    cluster_name: Annotated[str, AfterValidator(_cluster_name)]
    kubernetes_version: str = catalog.DEFAULT_KUBERNETES_VERSION
    #: IAM principals given cluster-admin through EKS access entries.
    admin_principal_arns: Annotated[list[PrincipalArn], AfterValidator(_unique)] = []
    #: CIDRs allowed to reach the public API endpoint; empty means no public endpoint at all.
    endpoint_public_access_cidrs: Annotated[list[Cidr], AfterValidator(_unique)] = []
    control_plane_log_types: Annotated[list[_LOG_TYPES], AfterValidator(_unique)] = list(CONTROL_PLANE_LOG_TYPES)
    #: Protect the cluster: EKS deletion protection plus Pulumi ``protect``.
    deletion_protection: bool = False
    network: NetworkSettings = NetworkSettings()
    system_node_group: SystemNodeGroupSettings = SystemNodeGroupSettings()
    gpu_node_groups: Annotated[tuple[GpuNodeGroupSettings, ...], AfterValidator(_non_empty)] = Field(
        default_factory=_default_gpu_groups
    )
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    #: Run the time-slicing verification Jobs (see README, "Cluster Autoscaler and scale from zero").
    verify_time_slicing: bool = False
    verification: VerificationSettings = VerificationSettings()
    #: Run the preflight checks (``python -m components preflight``) before declaring resources.
    preflight: bool = False
    #: Tags on every AWS resource the library creates (at most ``MAX_USER_TAGS``); a value may be
    #: a ``pulumi.Output[str]``.
    tags: Tags = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return _check(kubernetes_version_problem(value, catalog.today()), value)

    @model_validator(mode="after")
    def _consistent_groups(self) -> Settings:
        problems = gpu_groups_problems(self.gpu_node_groups, self.verify_time_slicing)
        minor = self.kubernetes_version.split(".")[1]
        pinned = [(("systemNodeGroup", "amiReleaseVersion"), self.system_node_group.ami_release_version)]
        pinned += [
            (("gpuNodeGroups", i, "amiReleaseVersion"), g.ami_release_version)
            for i, g in enumerate(self.gpu_node_groups)
        ]
        for loc, release in pinned:
            m = catalog.AMI_RELEASE_VERSION_PATTERN.match(release or "")
            if m and m.group(1) != minor:
                problems.append(
                    (
                        loc,
                        release,
                        f"an AMI release of Kubernetes {self.kubernetes_version} (1.{minor}.x-yyyymmdd): EKS "
                        "refuses a node group AMI of another minor than the cluster's",
                    )
                )
        if self.verify_time_slicing and self.verification.namespace == self.gpu_operator.namespace:
            problems.append(
                (
                    ("verification", "namespace"),
                    self.verification.namespace,
                    "a namespace other than gpuOperator.namespace: each component creates its namespace",
                )
            )
        if problems:
            raise KeyedProblems(problems)
        return self

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``, defaulting to: some GPU group can change size."""
        if self.autoscaler.enabled is not None:
            return self.autoscaler.enabled
        return any(g.scaling.min_size < g.scaling.max_size for g in self.gpu_node_groups)


def gpu_groups_problems(
    groups: Iterable[GpuNodeGroupSettings], verify_time_slicing: bool = False
) -> list[KeyedProblem]:
    """Why GPU node groups cannot share one cluster (one gpu-operator): keyed problems, or [].

    * Names are unique (resource names, the node-group label).
    * One profile name means one set of timeSlicing settings: it is one key of the device-plugin
      ConfigMap and the value of the node label the config-manager reads.
    * One migStrategy: the chart's ``mig.strategy`` is one value for the whole cluster.
    * With the verification on, a node can run the pods its advertised shares ask for.

    Used by Settings, GpuCapacitySettings and GpuOperator (which may cover groups declared elsewhere).
    """
    groups = list(groups)
    problems: list[KeyedProblem] = []
    first_of: dict[str, int] = {}
    for i, g in enumerate(groups):
        if g.name in first_of:
            problems.append(
                (("gpuNodeGroups", i, "name"), g.name, f"a name of its own (gpuNodeGroups[{first_of[g.name]}] has it)")
            )
        first_of.setdefault(g.name, i)
        reserved = reserved_group_name_problem(g.name)
        if reserved:
            problems.append((("gpuNodeGroups", i, "name"), g.name, reserved))
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        j = first.setdefault(g.profile_name, i)
        other = groups[j].time_slicing
        if other.model_dump(exclude={"profile"}) != g.time_slicing.model_dump(exclude={"profile"}):
            problems.append(
                (
                    ("gpuNodeGroups", i, "timeSlicing", "profile"),
                    g.profile_name,
                    f"a profile name not used by gpuNodeGroups[{j}] ({groups[j].name}), "
                    "whose timeSlicing settings differ: one set of settings per profile name (it is "
                    "one key of the device-plugin ConfigMap)",
                )
            )
    strategies = {g.mig_strategy for g in groups}
    if len(strategies) > 1:  # the chart's mig.strategy is one value for the whole cluster
        problems += [
            (("gpuNodeGroups", i, "migStrategy"), g.mig_strategy, "the same migStrategy in every GPU node group")
            for i, g in enumerate(groups)
        ]
    if verify_time_slicing:
        problems += [
            (
                ("gpuNodeGroups", i, "timeSlicing", "replicas"),
                g.time_slicing.replicas,
                _capacity_message(g, "at most") + " (the verification packs that many pods "
                "on one node, so it could never succeed)",
            )
            for i, g in enumerate(groups)
            if g.advertised_gpus_per_node > g.usable_pod_slots
        ]
    return problems


class GpuCapacitySettings(_Model):
    """GPU capacity for an existing EKS cluster (``GpuCapacity``): the GPU keys of ``Settings``.

    The same keys, defaults and rules as the stack configuration; ``kubernetesVersion`` is the
    existing cluster's version (EKS AMI releases are per Kubernetes version). ``gpuNodeGroups`` may
    be empty when every group is declared by the caller (``GpuCapacityArgs.node_groups``).
    """

    kubernetes_version: str = catalog.DEFAULT_KUBERNETES_VERSION
    gpu_node_groups: tuple[GpuNodeGroupSettings, ...] = Field(default_factory=_default_gpu_groups)
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    verify_time_slicing: bool = False
    verification: VerificationSettings = VerificationSettings()
    #: A Cluster Autoscaler for these groups. Off unless ``enabled: true``: an existing cluster
    #: may run its own (two autoscalers resizing the same groups fight).
    autoscaler: AutoscalerSettings = AutoscalerSettings()
    tags: Tags = {}

    @field_validator("kubernetes_version")
    @classmethod
    def _kubernetes_version(cls, value: str) -> str:
        return Settings._kubernetes_version(value)  # one rule for both models

    @property
    def autoscaler_enabled(self) -> bool:
        """``autoscaler.enabled``: off unless set to true (see the field)."""
        return self.autoscaler.enabled is True

    @model_validator(mode="after")
    def _consistent_groups(self) -> GpuCapacitySettings:
        problems = gpu_groups_problems(self.gpu_node_groups, self.verify_time_slicing)
        if problems:
            raise KeyedProblems(problems)
        return self


def _capacity_message(g: GpuNodeGroupSettings, prefix: str) -> str:
    slots = g.usable_pod_slots
    return (
        f"{prefix} {slots // g.gpus_per_node} for {', '.join(g.instance_types)}: {g.gpus_per_node} GPU(s) x "
        f"{g.time_slicing.replicas} = {g.advertised_gpus_per_node} advertised, but a node runs at most "
        f"{slots} pods besides its {len(catalog.GPU_NODE_DAEMONSET_PODS)} DaemonSet pods (max pods "
        f"{min(catalog.GPU_INSTANCE_TYPES[t].max_pods for t in g.instance_types)} with the VPC CNI defaults)"
    )
