"""Loading settings: from a plain mapping of config keys, from the config map the Pulumi CLI passes
a program, or from the running program's config.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from ..autoscaler.rules import autoscaler_problems
from .errors import CONFIG_NAMESPACE, ConfigError, Problem, problems_from
from .settings import GpuCapacitySettings, Settings

_S = TypeVar("_S", bound=GpuCapacitySettings)


@overload
def load_settings(raw: Mapping[str, Any], namespace: str = ...) -> Settings: ...
@overload
def load_settings(raw: Mapping[str, Any], namespace: str = ..., *, model: type[_S]) -> _S: ...
def load_settings(
    raw: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE, *, model: type[GpuCapacitySettings] = Settings
) -> GpuCapacitySettings:
    """Parse ``raw`` (config keys without the namespace, values already decoded) into ``model``:
    ``Settings`` (a whole cluster, the default) or ``GpuCapacitySettings`` (GPU capacity for an
    existing cluster: only the GPU keys).

    The model's rules run first, then the autoscaler's (which need parsed settings). Raises
    ConfigError listing every problem, keys prefixed with ``namespace``.
    """
    try:
        # by_name=False: only the documented camelCase keys (the stack file's, docs/configuration.md's, the
        # component package's). The Python field names (``cluster_name``) are for Python code that
        # builds the models directly; read from a mapping they would be a second, undocumented
        # spelling of a key, and both could be given at once. A snake_case key is refused naming
        # its camelCase key (problems_from).
        settings = model.model_validate(dict(raw), by_name=False)
    except ValidationError as err:
        raise ConfigError(problems_from(err, namespace, model)) from None
    problems = autoscaler_problems(settings, namespace)
    if problems:
        raise ConfigError(problems)
    return settings


def load_capacity_settings(raw: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> GpuCapacitySettings:
    """``load_settings(raw, namespace, model=GpuCapacitySettings)``: the GPU keys of the stack
    configuration (``kubernetesVersion``, ``gpuNodeGroups``, ``gpuOperator``, ``autoscaler``,
    ``verifyTimeSlicing``, ``verification``, ``tags``) for ``GpuCapacity``.

    ``kubernetesVersion`` is required: it must be the existing cluster's (see the field)."""
    try:
        return load_settings(raw, namespace, model=GpuCapacitySettings)
    except ConfigError as err:
        key = f"{namespace}:kubernetesVersion"
        raise ConfigError(
            [
                Problem(p.key, p.received, _EXISTING_VERSION) if p.key == key and p.expected == "a value" else p
                for p in err.problems
            ]
        ) from None


_EXISTING_VERSION = (
    'the existing cluster\'s Kubernetes version, e.g. "1.35" (aws eks describe-cluster --query cluster.version): '
    "its node AMIs and autoscaler release follow it"
)


def decode_config_value(value: Any) -> Any:
    """Pulumi hands structured config values (lists, maps) to programs as JSON strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


#: Config namespaces the program reads: its own, Pulumi's (``pulumi:tags``, ``pulumi:template``,
#: ...) and those of the providers it uses (pulumi-aws ``aws:``, pulumi-awsx ``awsx:``, pulumi-eks
#: ``eks:``, pulumi-kubernetes ``kubernetes:``). A key in any other namespace reaches no code.
KNOWN_CONFIG_NAMESPACES = (CONFIG_NAMESPACE, "pulumi", "aws", "awsx", "eks", "kubernetes")


def unknown_config_problems(config: Mapping[str, Any]) -> list[Problem]:
    """Keys that no code would read: a namespace typo (``gpueks:deletionProtection``) silently drops
    the setting, and a bare key is not a Pulumi config key (the CLI parses ``<namespace>:<name>``,
    pulumi/pulumi sdk/go/common/resource/config/key.go ``ParseKey``)."""
    problems = []
    fields = {f.alias or name for name, f in Settings.model_fields.items()}
    for key in config:
        namespace, sep, name = str(key).partition(":")
        if not sep:
            hint = f"{CONFIG_NAMESPACE}:{key}" if key in fields else f"<namespace>:{key}"
            problems.append(Problem(key=str(key), received=config[key], expected=f"a namespaced key such as {hint}"))
            continue
        if namespace in KNOWN_CONFIG_NAMESPACES:
            continue
        close = difflib.get_close_matches(namespace, KNOWN_CONFIG_NAMESPACES, n=1, cutoff=0.6)
        if not close and name.split(".")[0] in fields:
            close = [CONFIG_NAMESPACE]
        hint = f"; did you mean {close[0]}:{name}?" if close else ""
        problems.append(
            Problem(
                key=str(key),
                received=config[key],
                expected=f"a key in a namespace the program reads ({', '.join(KNOWN_CONFIG_NAMESPACES)}): "
                f"no code reads {namespace}:{hint}",
            )
        )
    return problems


@functools.cache
def eks_regions() -> frozenset[str]:
    """Regions with EKS, from botocore's endpoint data (offline) for the partitions EKS runs in.

    Read once per process: the data is the installed botocore's, and reading it costs ~40 ms."""
    import boto3

    session = boto3.session.Session()
    return frozenset(
        region
        for partition in ("aws", "aws-us-gov", "aws-cn")
        for region in session.get_available_regions("eks", partition)
    )


def region_problems(config: Mapping[str, Any]) -> list[Problem]:
    region = config.get("aws:region")
    if not isinstance(region, str) or region in eks_regions():
        return []
    close = difflib.get_close_matches(region, sorted(eks_regions()), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    return [
        Problem(
            key="aws:region",
            received=region,
            expected=f"a region where EKS runs (botocore's endpoint data lists {len(eks_regions())}){hint}",
        )
    ]


def settings_from_config(config: Mapping[str, Any], project: str, stack: str) -> Settings:
    """Settings from a full config map as the Pulumi CLI passes it (``gpu-eks:key`` → string).

    Also checks the keys of other namespaces: unknown namespaces and an ``aws:region`` without EKS
    are problems. Raises ConfigError listing every problem.
    """
    problems = unknown_config_problems(config) + region_problems(config)
    prefix = f"{CONFIG_NAMESPACE}:"
    raw = {k[len(prefix) :]: decode_config_value(v) for k, v in config.items() if k.startswith(prefix)}
    raw.setdefault("clusterName", f"{project}-{stack}")
    try:
        settings = load_settings(raw)
    except ConfigError as err:
        problems += err.problems
    if problems:
        raise ConfigError(problems)
    return settings


def settings_from_pulumi_config() -> Settings:
    """Settings from the running Pulumi program's config; invalid config → ``pulumi.RunError``."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    # The CLI passes config in PULUMI_CONFIG; tests and mocks set it with set_all_config.
    config: dict[str, Any] = dict(runtime_config.get_config_env())
    config.update(runtime_config.CONFIG.get())
    try:
        return settings_from_config(config, pulumi.get_project(), pulumi.get_stack())
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None
