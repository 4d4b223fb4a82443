"""The multi-language face of GpuCluster: a Pulumi component package for TypeScript, Go, C#, Java, YAML.

* inputs.py: the component's inputs (the stack config keys), GENERATED from the settings models by
  ``python -m tooling docs``.
* package.py: its outputs, the component class, the provider and ``serve()`` (plugin/__main__.py).
"""

from .inputs import (
    AlertThresholds,
    AutoscalerSettings,
    CapacityReservation,
    ColdStart,
    GpuClusterInputs,
    GpuNodeGroupSettings,
    GpuOperatorSettings,
    Mig,
    Mps,
    NetworkSettings,
    ObservabilitySettings,
    Scaling,
    SystemNodeGroupSettings,
    TaintSpec,
    TeamSettings,
    TimeSlicing,
    VerificationSettings,
)
from .package import (
    COMPONENTS,
    PACKAGE_NAME,
    GpuCluster,
    GpuEksProvider,
    GpuNodeGroupOutputs,
    Toleration,
    package_version,
    provider,
    serve,
    settings_from_inputs,
    to_config,
    whole_output_problems,
)

__all__ = [
    "COMPONENTS",
    "PACKAGE_NAME",
    "AlertThresholds",
    "AutoscalerSettings",
    "CapacityReservation",
    "ColdStart",
    "GpuCluster",
    "GpuClusterInputs",
    "GpuEksProvider",
    "GpuNodeGroupOutputs",
    "GpuNodeGroupSettings",
    "GpuOperatorSettings",
    "Mig",
    "Mps",
    "NetworkSettings",
    "ObservabilitySettings",
    "Scaling",
    "SystemNodeGroupSettings",
    "TaintSpec",
    "TeamSettings",
    "TimeSlicing",
    "Toleration",
    "VerificationSettings",
    "package_version",
    "provider",
    "serve",
    "settings_from_inputs",
    "to_config",
    "whole_output_problems",
]
