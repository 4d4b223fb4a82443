"""The multi-language face of GpuCluster: a Pulumi component package for TypeScript, Go, C#, Java, YAML.

Other Pulumi languages reach this library through a plugin (``plugin/`` in the repository: its
``PulumiPlugin.yaml`` says ``runtime: python`` and its ``__main__.py`` calls ``serve()``). Pulumi's
component analyzer (``pulumi.provider.experimental.analyzer``) infers the package schema from the type
annotations below: the inputs of ``GpuCluster`` (``GpuClusterInputs``) and its outputs (the annotated
class attributes). Every input mirrors a stack config key (``gpu-eks:<key>``, same camelCase name,
same nesting) and is validated by the SAME settings model (``settings.load_settings``) as the stack
config files and Python importers: one schema, one set of rules, one error format
(``gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 1; expected ...``).
tests/test_package_schema.py fails when a settings field has no input here, or the other way round.

Python programs keep using ``components.GpuCluster`` with ``GpuClusterArgs(settings=...)``: the
class here is a thin subclass with the same type token (``gpu-eks:index:GpuCluster``) and the same
children, so a stack declares the same resources whichever language declared the cluster.

Only GpuCluster is exposed. The component host derives every token as ``gpu-eks:index:<ClassName>``,
so the pieces (``gpu-eks:nodegroup:GpuNodeGroup``, ...) cannot keep their tokens behind it, and a
token is public API (a changed token replaces resources).

No ``from __future__ import annotations`` in this module: the analyzer evaluates these annotations
at run time and cannot read them as strings.
"""

import importlib.metadata
import sys
import tomllib
import typing
from pathlib import Path
from typing import Any, NotRequired, Required, TypedDict

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider import main as provider_main
from pulumi.provider.experimental.analyzer import ComponentDefinition
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case
from pulumi.resource import ComponentResource

from .composites import gpu_cluster
from .config.errors import CONFIG_NAMESPACE, ConfigError, Problem
from .config.loading import load_settings
from .config.settings import Settings
from .config.warnings import settings_warnings

#: The package name other languages see (``pulumi package add`` → ``@<sdk>/gpu-eks``); also the
#: config namespace and the first part of every type token.
PACKAGE_NAME = CONFIG_NAMESPACE

# ---------------------------------------------------------------------------------------------
# Inputs: one TypedDict per settings model, named after it (the schema's type names), with the
# model's fields as keys. Python names are chosen so that the schema name (camelCase of the Python
# name, the analyzer's rule) is the config key: ``disk_size_gi_b`` → ``diskSizeGiB``.
# ---------------------------------------------------------------------------------------------


class Scaling(TypedDict):
    """EKS `scalingConfig` of a managed node group (minSize <= desiredSize <= maxSize)."""

    min_size: int
    """Minimum number of nodes (>= 0)."""
    desired_size: int
    """Desired number of nodes (>= 0)."""
    max_size: int
    """Maximum number of nodes (>= 1)."""


class TaintSpec(TypedDict, total=False):
    """A node taint, applied by kubelet (`--register-with-taints`) through nodeadm."""

    key: Required[str]
    """Taint key (a Kubernetes qualified name)."""
    value: str
    """Taint value (a label value; default empty)."""
    effect: Required[str]
    """NoSchedule, PreferNoSchedule or NoExecute."""


class TimeSlicing(TypedDict, total=False):
    """One device-plugin sharing profile (k8s-device-plugin `sharing.timeSlicing`)."""

    replicas: int
    """How many pods share one physical GPU (default 4)."""
    rename_by_default: bool
    """Advertise nvidia.com/gpu.shared instead of nvidia.com/gpu (default false)."""
    fail_requests_greater_than_one: bool
    """Refuse pods that request more than one replica (default true)."""
    profile: str
    """Profile name: ConfigMap key and value of the node label nvidia.com/device-plugin.config."""


class GpuNodeGroupSettings(TypedDict, total=False):
    """One EKS managed node group on the AL2023 NVIDIA AMI."""

    name: Required[str]
    """Node group name (1-40 lower-case alphanumerics or '-')."""
    instance_types: list[str]
    """g4dn sizes with the same GPU count (default [g4dn.xlarge])."""
    capacity_type: str
    """ON_DEMAND (default) or SPOT."""
    scaling: Scaling
    """Node counts (default 1/1/2)."""
    disk_size_gi_b: int
    """Root volume size in GiB (default 100)."""
    labels: dict[str, str]
    """Extra node labels, applied by kubelet through nodeadm."""
    taints: list[TaintSpec]
    """Node taints; replaces the default nvidia.com/gpu=true:NoSchedule."""
    time_slicing: TimeSlicing
    """GPU time-slicing profile of this group."""
    mig_strategy: str
    """k8s-device-plugin migStrategy: only none (the T4 has no MIG)."""
    ami_release_version: str
    """Pin the EKS AMI release (e.g. 1.35.0-20260115); default: EKS's latest for the version."""


class SystemNodeGroupSettings(TypedDict, total=False):
    """The untainted node group for cluster services (CoreDNS, gpu-operator, NFD master/gc)."""

    instance_types: list[str]
    """EC2 instance types (default [m6i.large])."""
    scaling: Scaling
    """Node counts (default 2/2/3)."""
    disk_size_gi_b: int
    """Root volume size in GiB (default 50)."""
    ami_release_version: str
    """Pin the EKS AMI release; default: EKS's latest for the version."""


class NetworkSettings(TypedDict, total=False):
    """Use an existing VPC (vpcId + subnets) or create one (the other keys)."""

    # The ids of an existing VPC may come from other resources (Outputs); every other input is
    # plain, since it decides which resources exist.

    vpc_id: pulumi.Input[str]
    """An existing VPC; then privateSubnetIds names at least 2 subnets."""
    private_subnet_ids: pulumi.Input[list[pulumi.Input[str]]]
    """Private subnets of the existing VPC (nodes and the control plane's interfaces)."""
    public_subnet_ids: pulumi.Input[list[pulumi.Input[str]]]
    """Public subnets of the existing VPC (public load balancers)."""
    cidr_block: str
    """CIDR of a new VPC (default 10.0.0.0/16)."""
    availability_zone_count: int
    """Zones of a new VPC, 2-6 (default 2)."""
    nat_gateways: str
    """NAT gateways of a new VPC: Single (default) or OnePerAz."""


class GpuOperatorSettings(TypedDict, total=False):
    """The NVIDIA gpu-operator Helm release."""

    allow_unvalidated_chart_version: bool
    """Allow a chart version this library was not validated against (default false)."""
    chart_version: str
    """gpu-operator chart version, one of the validated versions (see the README)."""
    namespace: str
    """Namespace of the release (default gpu-operator)."""
    cdi_enabled: bool
    """Chart value cdi.enabled (default false: the AMI's NVIDIA runtime injects devices)."""


class VerificationSettings(TypedDict, total=False):
    """The time-slicing verification Jobs (verifyTimeSlicing: true)."""

    image: str
    """CUDA sample image the verification pods run."""
    namespace: str
    """Namespace of the verification (default gpu-timeslicing-check)."""


class AutoscalerSettings(TypedDict, total=False):
    """The Cluster Autoscaler that scales the GPU node groups (from zero too)."""

    enabled: bool
    """Install it (default: when any GPU group's minSize < maxSize)."""
    allow_unvalidated_chart_version: bool
    """Allow a cluster-autoscaler chart version this library was not validated against (default false)."""
    chart_version: str
    """cluster-autoscaler chart version, one of the validated versions (see the README)."""
    scale_down_unneeded_time: str
    """How long a node may sit unneeded before it is removed, e.g. 10m (default 10m)."""


class GpuClusterInputs(TypedDict, total=False):
    """The inputs of GpuCluster: the stack config keys (``gpu-eks:<key>``), same names and shapes."""

    cluster_name: Required[str]
    """EKS cluster name."""
    kubernetes_version: str
    """Kubernetes minor version, e.g. "1.35" (a string)."""
    admin_principal_arns: list[str]
    """IAM roles/users given cluster-admin through EKS access entries."""
    endpoint_public_access_cidrs: list[str]
    """CIDRs allowed to reach the public API endpoint; empty: no public endpoint."""
    control_plane_log_types: list[str]
    """EKS control-plane logs: api, audit, authenticator, controllerManager, scheduler (default all)."""
    deletion_protection: bool
    """EKS deletion protection plus Pulumi protect (default false)."""
    network: NetworkSettings
    """The VPC: an existing one or a new one."""
    system_node_group: SystemNodeGroupSettings
    """The untainted node group for cluster services."""
    gpu_node_groups: list[GpuNodeGroupSettings]
    """GPU node groups (default one g4dn.xlarge group named gpu)."""
    gpu_operator: GpuOperatorSettings
    """The gpu-operator Helm release."""
    autoscaler: AutoscalerSettings
    """The Cluster Autoscaler."""
    verify_time_slicing: bool
    """Run the time-slicing verification Jobs (default false)."""
    verification: VerificationSettings
    """Settings of the verification Jobs."""
    preflight: bool
    """Run the read-only account checks before declaring resources (default false)."""
    tags: dict[str, str]
    """AWS tags for every taggable resource."""


# ---------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------


class Toleration(TypedDict, total=False):
    """A Kubernetes toleration (core/v1 Toleration)."""

    key: Required[str]
    operator: Required[str]
    value: str
    effect: Required[str]


class GpuNodeGroupOutputs(TypedDict):
    """What a workload needs to land on a GPU node group."""

    node_selector: dict[str, str]
    """Labels that select the group's nodes."""
    tolerations: list[Toleration]
    """Tolerations for the group's taints."""
    gpus_per_node: int
    """Physical GPUs per node."""
    advertised_gpus_per_node: int
    """GPUs the device plugin advertises per node (physical x replicas)."""
    resource_name: str
    """The extended resource to request: nvidia.com/gpu, or nvidia.com/gpu.shared when renamed."""
    shared_slots_per_node: int
    """Shared GPU slots per node (physical GPUs x replicas)."""
    shared_slots_at_max_size: int
    """Shared GPU slots of the whole group at its maxSize."""
    autoscaling_group_name: str
    """Name of the Auto Scaling group EKS created for the node group."""


def settings_from_inputs(inputs: GpuClusterInputs) -> Settings:
    """Settings from the component's inputs (Python names, as the component host passes them).

    Raises ConfigError listing every problem, keyed like the stack config (``gpu-eks:...``).
    """
    whole_outputs = whole_output_problems(inputs)
    if whole_outputs:
        raise ConfigError(whole_outputs)
    return load_settings(to_config(inputs, GpuClusterInputs))


def whole_output_problems(inputs: dict[str, Any]) -> list[Problem]:
    """One problem per top-level input that is an Output as a whole (its content is unknown here)."""
    return [
        Problem(
            key=f"{CONFIG_NAMESPACE}:{camel_case(key)}",
            received="<a value computed from other resources, or a secret>",
            expected=f"a plain {camel_case(key)} value (Outputs go inside it, e.g. network.vpcId)",
        )
        for key, value in sorted(inputs.items())
        if isinstance(value, pulumi.Output)
    ]


def to_config(value: Any, typ: Any) -> Any:
    """``value`` (Python names, shaped like ``typ``) with its TypedDict keys renamed to config keys.

    Only keys of TypedDict levels are renamed: the keys of user maps (``labels``, ``tags``) are data.
    Numbers cross the wire as floats, and ``ComponentProvider.map_inputs`` (pulumi 3.272) converts
    integer properties with ``int()`` but then stores the float anyway: a whole float becomes an int
    again here; any other (2.5) stays a float, which the settings model refuses for that key.
    """
    if typ is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if typing.is_typeddict(typ) and isinstance(value, dict):
        hints = typ.__annotations__  # evaluated already (no postponed annotations here)
        return {camel_case(k): to_config(v, _strip_required(hints.get(k, Any))) for k, v in value.items()}
    origin, args = typing.get_origin(typ), typing.get_args(typ)
    if origin is list and isinstance(value, list):
        return [to_config(v, args[0]) for v in value]
    return value


def _strip_required(typ: Any) -> Any:
    while typing.get_origin(typ) in (Required, NotRequired):
        typ = typing.get_args(typ)[0]
    return typ


# ---------------------------------------------------------------------------------------------
# The component
# ---------------------------------------------------------------------------------------------


class GpuCluster(gpu_cluster.GpuCluster):
    """A GPU-ready EKS cluster: AL2023 NVIDIA node groups and the gpu-operator with GPU time-slicing."""

    cluster_name: pulumi.Output[str]
    """EKS cluster name."""
    kubeconfig: pulumi.Output[str]
    """kubeconfig JSON (secret), authenticating with aws eks get-token."""
    oidc_provider_arn: pulumi.Output[str]
    """ARN of the cluster's IAM OIDC provider (for IRSA roles)."""
    oidc_provider_url: pulumi.Output[str]
    """URL of the cluster's IAM OIDC provider."""
    gpu_node_groups: pulumi.Output[dict[str, GpuNodeGroupOutputs]]  # type: ignore[assignment]
    """Per GPU node group (by name): node selector, tolerations, GPU counts, resource name."""

    def __init__(self, name: str, args: GpuClusterInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        try:
            settings = settings_from_inputs(args)
        except ConfigError as err:
            raise pulumi.RunError(err.report()) from None
        for warning in settings_warnings(settings):
            pulumi.log.warn(f"gpu-eks config: {warning}")
        from .program import run_preflight

        run_preflight(settings)
        super().__init__(name, gpu_cluster.GpuClusterArgs(settings=settings), opts)
        # The stack outputs (README, "Stack outputs") are this component's outputs, under the same
        # names. ``gpu_node_groups`` holds the GpuNodeGroup components in the Python class; here it
        # holds their outputs, which is what a program in another language can use.
        self._outputs = super().stack_outputs()
        self.cluster_name = self._outputs["clusterName"]
        self.kubeconfig = self._outputs["kubeconfig"]
        self.oidc_provider_arn = self._outputs["oidcProviderArn"]
        self.oidc_provider_url = self._outputs["oidcProviderUrl"]
        self.gpu_node_groups = pulumi.Output.from_input(self._outputs["gpuNodeGroups"])  # type: ignore[assignment]

    def stack_outputs(self) -> dict[str, Any]:
        # GpuCluster.__init__ calls this (register_outputs) while gpu_node_groups still holds the
        # components; afterwards the outputs computed then are the answer.
        return self.__dict__.get("_outputs") or super().stack_outputs()


#: The components the package exposes (their tokens: ``gpu-eks:index:<ClassName>``).
COMPONENTS: list[type[ComponentResource]] = [GpuCluster]


# ---------------------------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------------------------


class GpuEksProvider(ComponentProvider):
    """The SDK's component provider, validating inputs before the component is constructed.

    * ``ComponentProvider.map_inputs`` turns an object-typed input that arrives as an Output as a
      whole (a ``network`` from a StackReference, a secret ``gpuOperator``) into ``{}``: the
      defaults, e.g. a new VPC instead of the caller's. Such inputs are refused here, by key.
    * Invalid settings are reported as input property errors (every problem at once, each with
      its key), which the engine shows against the resource; errors raised by a component's
      constructor reach the user as a stack trace instead.
    """

    def map_inputs(self, inputs: dict[str, Any], component_def: ComponentDefinition) -> dict[str, Any]:
        problems = whole_output_problems(inputs)
        if problems:
            raise _input_properties_error(problems)
        mapped = super().map_inputs(inputs, component_def)
        try:
            settings_from_inputs(mapped)
        except ConfigError as err:
            raise _input_properties_error(err.problems) from None
        return mapped


def _input_properties_error(problems: list[Problem]) -> InputPropertiesError:
    prefix = f"{CONFIG_NAMESPACE}:"
    return InputPropertiesError(
        ConfigError(problems).report(),
        [{"property_path": p.key.removeprefix(prefix), "reason": str(p)} for p in problems],
    )


def package_version(root: Path | None = None) -> str:
    """The version the package reports: pyproject.toml's in a checkout, else the installed one."""
    pyproject = (root or Path(__file__).resolve().parent.parent) / "pyproject.toml"
    if pyproject.exists():
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    return importlib.metadata.version("gpu-eks-components")


def provider(version: str | None = None) -> GpuEksProvider:
    """The component provider (its schema is inferred here, at construction)."""
    return GpuEksProvider(COMPONENTS, PACKAGE_NAME, version=version or package_version())


def serve(args: list[str] | None = None) -> None:
    """Run the provider plugin: the gRPC server the Pulumi engine talks to (plugin/__main__.py).

    What ``pulumi.provider.experimental.component_provider_host`` does, with ``GpuEksProvider``.
    """
    provider_main(provider(), sys.argv[1:] if args is None else args)
