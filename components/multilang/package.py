"""The multi-language face of GpuCluster: a Pulumi component package for TypeScript, Go, C#, Java, YAML.

Other Pulumi languages reach this library through a plugin (``plugin/`` in the repository: its
``PulumiPlugin.yaml`` says ``runtime: python`` and its ``__main__.py`` calls ``serve()``). Pulumi's
component analyzer (``pulumi.provider.experimental.analyzer``) infers the package schema from the type
annotations: the inputs of ``GpuCluster`` (``GpuClusterInputs``, inputs.py) and its outputs (the
annotated class attributes below). Every input mirrors a stack config key (``gpu-eks:<key>``, same
camelCase name, same nesting) and is validated by the SAME settings model (``settings.load_settings``)
as the stack config files and Python importers: one schema, one set of rules, one error format
(``gpu-eks:gpuNodeGroups[0].timeSlicing.replicas: received 1; expected ...``).
tests/test_package_schema.py fails when a settings field has no input, or the other way round.

Python programs keep using ``components.GpuCluster`` with ``GpuClusterArgs(settings=...)``: the
class here is a thin subclass with the same type token (``gpu-eks:index:GpuCluster``) and the same
children, so a stack declares the same resources whichever language declared the cluster.

Only GpuCluster is exposed. The component host derives every token as ``gpu-eks:index:<ClassName>``,
so the pieces (``gpu-eks:nodegroup:GpuNodeGroup``, ...) cannot keep their tokens behind it, and a
token is public API (a changed token replaces resources).

No ``from __future__ import annotations`` in this module: the analyzer evaluates these annotations
at run time and cannot read them as strings.
"""

import json
import sys
import typing
from typing import Any, NotRequired, Required, TypedDict

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider import main as provider_main
from pulumi.provider.experimental.analyzer import ComponentDefinition
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case
from pulumi.resource import ComponentResource

from ..check.loading import load_settings
from ..check.settings import Settings
from ..composites import gpu_cluster
from ..config.errors import CONFIG_NAMESPACE, ConfigError, Problem
from ..config.verification import NEW_ENABLED_KEY, OLD_ENABLED_KEY
from ..version import package_version, semver
from .inputs import GpuClusterInputs

#: The package name other languages see (``pulumi package add`` → ``@<sdk>/gpu-eks``); also the
#: config namespace and the first part of every type token.
PACKAGE_NAME = CONFIG_NAMESPACE

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
    sharing_mode: str
    """How the group shares a GPU: timeSlicing, mps, exclusive or mig."""
    memory_per_slot_gi_b: float
    """GPU memory per slot in GiB (GPU memory / replicas): a limit under MPS, a fair share under time-slicing."""
    repair_policy: str
    """How the group's unhealthy nodes are repaired: by whom, after how long, the action per fault class, when
    repair pauses (docs/node-health.md)."""
    autoscaling_group_name: str
    """Name of the Auto Scaling group EKS created for the node group (empty for a Karpenter group)."""
    node_pool_name: NotRequired[str]
    """Name of the group's Karpenter NodePool (capacityProvider karpenter), instead of an Auto Scaling group."""
    mig_layout: NotRequired[dict[str, int]]
    """MIG groups only: the MIG profile to count of slices on each GPU."""
    advertised_resources: NotRequired[dict[str, int]]
    """MIG groups only: every extended resource a node advertises, with its count per node."""
    isolation: NotRequired[str]
    """Only while gpuOperator.isolation is migrating: that GPU isolation is not enforced, in words."""


class ObservabilityExporter(TypedDict):
    """The dcgm-exporter Service to scrape."""

    namespace: str
    """Namespace of the exporter (the gpu-operator's)."""
    service: str
    """Service name (nvidia-dcgm-exporter)."""
    port: int
    """Metrics port (9400)."""
    path: str
    """Metrics path (/metrics)."""


class ObservabilityCloudWatch(TypedDict):
    """Where the CloudWatch pipeline puts the GPU metrics."""

    addon: str
    """The EKS add-on (amazon-cloudwatch-observability)."""
    metric_namespace: str
    """CloudWatch metric namespace (ContainerInsights)."""
    performance_log_group: str
    """Container Insights performance log group (/aws/containerinsights/<cluster>/performance)."""


class ObservabilityOutputs(TypedDict, total=False):
    """Where the GPU metrics land (observability.enabled only)."""

    pipeline: Required[str]
    """cloudwatch, prometheus or both."""
    per_pod_gpu_metrics: Required[bool]
    """Whether the operator's exporter attributes GPU use to the pods sharing a GPU (chart v26.7.0, a
    Prometheus pipeline)."""
    exporter: Required[ObservabilityExporter]
    """The dcgm-exporter Service to scrape."""
    dashboard_config_map: str
    """<namespace>/<name> of the Grafana dashboard ConfigMap (prometheus and both)."""
    prometheus_rule: str
    """<namespace>/<name> of the PrometheusRule (prometheus and both)."""
    cloudwatch: ObservabilityCloudWatch
    """Where the CloudWatch pipeline puts the metrics (cloudwatch and both)."""


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
    if origin is dict and isinstance(value, dict):  # a user map (a team's quota): its keys are data
        return {k: to_config(v, args[1]) for k, v in value.items()}
    return value


def from_output_names(value: Any, typ: Any) -> Any:
    """``value`` (stack output names, camelCase) with its TypedDict keys renamed to ``typ``'s Python names.

    The inverse of ``to_config`` for outputs: the component host (``ComponentProvider.get_state``)
    reads a complex output by its Python names and writes the schema's names.
    """
    if typing.is_typeddict(typ) and isinstance(value, dict):
        hints = typ.__annotations__
        return {
            k: from_output_names(value[camel_case(k)], _strip_required(hint))
            for k, hint in hints.items()
            if camel_case(k) in value
        }
    return value


def _strip_required(typ: Any) -> Any:
    while typing.get_origin(typ) in (Required, NotRequired):
        typ = typing.get_args(typ)[0]
    return typ


# ---------------------------------------------------------------------------------------------
# The component
# ---------------------------------------------------------------------------------------------


class GpuCluster(gpu_cluster.GpuCluster):
    """A GPU-ready EKS cluster: AL2023 NVIDIA node groups and the gpu-operator sharing their GPUs."""

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
    observability: pulumi.Output[ObservabilityOutputs] | None  # type: ignore[assignment]
    """Where the GPU metrics land (observability.enabled only): pipeline, exporter, dashboard, rule, CloudWatch."""

    def __init__(self, name: str, args: GpuClusterInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        try:
            settings = settings_from_inputs(args)
        except ConfigError as err:
            raise pulumi.RunError(err.report()) from None
        from ..program import run_preflight

        run_preflight(settings)
        super().__init__(name, gpu_cluster.GpuClusterArgs(settings=settings), opts)
        # The stack outputs (README, "Stack outputs") are this component's outputs, under the same
        # names. ``gpu_node_groups`` and ``observability`` hold components in the Python class; here
        # they hold those components' outputs, which is what a program in another language can use.
        self._outputs = super().stack_outputs()
        self.cluster_name = self._outputs["clusterName"]
        self.kubeconfig = self._outputs["kubeconfig"]
        self.oidc_provider_arn = self._outputs["oidcProviderArn"]
        self.oidc_provider_url = self._outputs["oidcProviderUrl"]
        self.gpu_node_groups = pulumi.Output.from_input(self._outputs["gpuNodeGroups"])  # type: ignore[assignment]
        observability = self._outputs.get("observability")
        self.observability = (  # type: ignore[assignment]
            None
            if observability is None
            else pulumi.Output.from_input(observability).apply(lambda v: from_output_names(v, ObservabilityOutputs))
        )

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schema = with_deprecated_inputs(self.schema or "{}")

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


def with_deprecated_inputs(schema: str) -> str:
    """The package schema (JSON) with a ``deprecationMessage`` on each input that is an old name of
    another (``verifyTimeSlicing``: config/verification.py): the analyzer infers none, and Pulumi's
    package schema has one per property, which the generated SDKs turn into their language's
    deprecation (a compiler or editor warning). The input itself still works until 1.0."""
    package = json.loads(schema)
    inputs = package["resources"][f"{PACKAGE_NAME}:index:GpuCluster"]["inputProperties"]
    inputs[OLD_ENABLED_KEY]["deprecationMessage"] = (
        f"Use {NEW_ENABLED_KEY}: {OLD_ENABLED_KEY} is its old name, read until 1.0."
    )
    return json.dumps(package)


def _input_properties_error(problems: list[Problem]) -> InputPropertiesError:
    prefix = f"{CONFIG_NAMESPACE}:"
    return InputPropertiesError(
        ConfigError(problems).report(),
        [{"property_path": p.key.removeprefix(prefix), "reason": str(p)} for p in problems],
    )


def provider(version: str | None = None) -> GpuEksProvider:
    """The component provider (its schema is inferred here, at construction). Its version is the
    package's in SemVer's spelling: Pulumi's package schema accepts SemVer only (its metaschema)."""
    return GpuEksProvider(COMPONENTS, PACKAGE_NAME, version=version or semver(package_version()))


def serve(args: list[str] | None = None) -> None:
    """Run the provider plugin: the gRPC server the Pulumi engine talks to (plugin/__main__.py).

    What ``pulumi.provider.experimental.component_provider_host`` does, with ``GpuEksProvider``.
    """
    provider_main(provider(), sys.argv[1:] if args is None else args)
