"""Loading settings: from a plain mapping of config keys, from the config map the Pulumi CLI passes
a program, or from the running program's config.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from ..config import stackfile
from ..config.errors import CONFIG_NAMESPACE, ConfigError, Problem, problems_from, settings_error
from ..config.fields import KEYS_ONLY
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

    Raises ConfigError listing every problem (``settings_error``: its report names the mapping's own
    keys, and a Pulumi program shows it without a traceback); each problem's key is prefixed with
    ``namespace``.
    """
    try:
        # by_name=False: only the documented camelCase keys (the stack file's, docs/configuration.md's, the
        # component package's). The Python field names (``cluster_name``) are for Python code that
        # builds the models directly; read from a mapping they would be a second, undocumented
        # spelling of a key, and both could be given at once. A snake_case key is refused naming
        # its camelCase key (problems_from).
        return model.model_validate(dict(raw), by_name=False, context={KEYS_ONLY: True})
    except ValidationError as err:
        raise settings_error(problems_from(err, namespace, model)) from None


def load_capacity_settings(raw: Mapping[str, Any], namespace: str = CONFIG_NAMESPACE) -> GpuCapacitySettings:
    """``load_settings(raw, namespace, model=GpuCapacitySettings)``: the GPU keys of the stack
    configuration (``kubernetesVersion``, ``gpuNodeGroups``, ``gpuOperator``, ``autoscaler``,
    ``verification``, ``observability``, ``teams``, ``tags``) for ``GpuCapacity``.

    ``kubernetesVersion`` is required: it must be the existing cluster's (see the field)."""
    try:
        return load_settings(raw, namespace, model=GpuCapacitySettings)
    except ConfigError as err:
        key = f"{namespace}:kubernetesVersion"
        raise settings_error(
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


def reads_every_key(project: str) -> bool:
    """Whether the program of ``project`` reads every key of its stack files: this repository's own
    program, the project whose own namespace is the library's (Pulumi.yaml ``name: gpu-eks``). Any
    other project is a consumer's: the library reads its ``gpu-eks:`` keys, and the other namespaces
    (the project's own, other providers') belong to the consumer's program, which the library leaves alone."""
    return project == CONFIG_NAMESPACE


@functools.cache
def provider_config_keys(namespace: str) -> frozenset[str] | None:
    """The config keys of the provider whose namespace is ``namespace``, as its installed Python SDK
    reads them (``pulumi_<namespace>/config/vars.py``, generated from the provider's schema: pulumi-aws
    7.51.1 reads ``aws:region`` as ``__config__.get('region')``); None when the SDK is not installed
    or ships no config module (pulumi-awsx, pulumi-eks, pulumi-kubernetes). Read as text: the SDK
    is not imported."""
    spec = importlib.util.find_spec(f"pulumi_{namespace}")
    if spec is None or spec.origin is None:
        return None
    variables = Path(spec.origin).parent.joinpath("config", "vars").with_suffix(".py")
    if not variables.is_file():
        return None
    return frozenset(re.findall(r"__config__\.get\w*\('([^']+)'", variables.read_text(encoding="utf-8")))


def unknown_config_problems(config: Mapping[str, Any], strict: bool = True) -> list[Problem]:
    """Keys that no code would read.

    ``strict`` (this repository's program, ``reads_every_key``): every key; a namespace typo
    (``gpueks:deletionProtection``) silently drops the setting, a provider key typo (``aws:regin``)
    too, and a bare key is not a Pulumi config key (the CLI parses ``<namespace>:<name>``,
    pulumi/pulumi sdk/go/common/resource/config/key.go ``ParseKey``). Otherwise (a consumer's
    program) only what is surely meant for the library: a near miss of its namespace holding one of
    its keys (``gpu_eks:gpuNodeGroups``)."""
    problems = []
    fields = {f.alias or name for name, f in Settings.model_fields.items()}
    for key in config:
        namespace, sep, name = str(key).partition(":")
        if not strict:
            near = sep and difflib.get_close_matches(namespace, [CONFIG_NAMESPACE], cutoff=0.8)
            if near and namespace != CONFIG_NAMESPACE and name.split(".")[0] in fields:
                meant = f"{CONFIG_NAMESPACE}:{name}"
                expected = f"a key in the library's namespace ({CONFIG_NAMESPACE}:): did you mean {meant}?"
                problems.append(Problem(key=str(key), received=config[key], expected=expected))
            continue
        if not sep:
            hint = f"{CONFIG_NAMESPACE}:{key}" if key in fields else f"<namespace>:{key}"
            problems.append(Problem(key=str(key), received=config[key], expected=f"a namespaced key such as {hint}"))
            continue
        if namespace in KNOWN_CONFIG_NAMESPACES:
            known = provider_config_keys(namespace) if namespace not in (CONFIG_NAMESPACE, "pulumi") else None
            if known is not None and name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
                expected = f"a key the {namespace} provider reads (pulumi_{namespace}/config/vars.py)" + (
                    f": did you mean {namespace}:{close[0]}?" if close else ""
                )
                problems.append(Problem(key=str(key), received=config[key], expected=expected))
            continue
        close = difflib.get_close_matches(namespace, KNOWN_CONFIG_NAMESPACES, n=1, cutoff=0.6)
        if not close and name.split(".")[0] in fields:
            close = [CONFIG_NAMESPACE]
        meant = f"{close[0]}:{name}" if close else None
        problems.append(_unread(str(key), config[key], f"no code reads {namespace}:", meant))
    return problems


def _unread(key: str, received: Any, why: str, meant: str | None) -> Problem:
    return Problem(
        key=key,
        received=received,
        expected=f"a key in a namespace the program reads ({', '.join(KNOWN_CONFIG_NAMESPACES)}): {why}"
        + (f"; did you mean {meant}?" if meant else ""),
    )


#: The partitions EKS runs in, and the name its endpoints have in botocore's data (the eks model's
#: ``endpointPrefix``, botocore 1.44.5 ``data/eks/2017-11-01/service-2.json``).
EKS_PARTITIONS = ("aws", "aws-us-gov", "aws-cn")
EKS_ENDPOINT_PREFIX = "eks"


@functools.cache
def eks_regions() -> frozenset[str]:
    """Regions with EKS, from the installed botocore's endpoint data (offline), for the partitions
    EKS runs in: what boto3's ``Session.get_available_regions("eks", partition)`` answers
    (botocore ``regions.EndpointResolver.get_available_endpoints``: the service's endpoints that
    are regions of the partition), read from botocore's own ``data/endpoints.json`` without
    importing boto3 or botocore (~0.2 s of a render, which never calls AWS). A data path of the
    user's (``AWS_DATA_PATH``, ``~/.aws/models``) is not read: the rule is the same on every
    machine. ``tests/test_settings_aws.py`` compares it with boto3's answer. Read once per process."""
    spec = importlib.util.find_spec("botocore")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'botocore'", name="botocore")
    data = json.loads(Path(spec.submodule_search_locations[0], "data", "endpoints.json").read_bytes())
    return frozenset(
        region
        for partition in data["partitions"]
        if partition["partition"] in EKS_PARTITIONS
        for region in partition["services"].get(EKS_ENDPOINT_PREFIX, {}).get("endpoints", {})
        if region in partition["regions"]
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

    Also checks the keys of other namespaces as ``unknown_config_problems`` does for ``project``'s
    program (``reads_every_key``), and an ``aws:region`` without EKS. Raises ConfigError listing
    every problem.
    """
    problems = unknown_config_problems(config, strict=reads_every_key(project)) + region_problems(config)
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
    """Settings from the running Pulumi program's config (its ``gpu-eks:*`` keys; in a consumer's
    project the other namespaces are the consumer's own, ``reads_every_key``); invalid config →
    ``pulumi.RunError``."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    # The CLI passes config in PULUMI_CONFIG; tests and mocks set it with set_all_config.
    config: dict[str, Any] = dict(runtime_config.get_config_env())
    config.update(runtime_config.CONFIG.get())
    try:
        return settings_from_config(config, pulumi.get_project(), pulumi.get_stack())
    except ConfigError as err:
        raise pulumi.RunError(err.report()) from None


def load_stack(stack: str, root: Path | None = None) -> tuple[dict[str, Any], Settings]:
    """The stack file's config map and its settings, validated exactly as the program would
    (raises ``stackfile.StackNotFound``, ConfigError), from one read of the file."""
    config = stackfile.read_stack_config(stack, root)
    return config, settings_from_config(stackfile.cli_config(config), stackfile.project_name(root), stack)
