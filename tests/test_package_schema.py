"""The multi-language component package (components/multilang/, plugin/).

* The package schema Pulumi infers (pulumi.provider.experimental analyzer + schema) is golden-tested
  (tests/golden/schema.json) and valid against Pulumi's package metaschema.
* Its inputs mirror the settings model field for field (names = config keys, required-ness, kinds).
* The provider's construct path, under mocks, builds exactly the dev stack's resources from the dev
  stack's config sent as an engine would send it, and validates with the settings model.
* plugin/__main__.py serves the schema over gRPC from a checkout (what `pulumi package add` runs).

Refresh the golden file after an intended schema change: UPDATE_GOLDEN=1 pytest
tests/test_package_schema.py (the run rewrites it and fails; review the diff, run again).
"""

import functools
import json
import os
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import grpc
import jsonschema
import pulumi
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.util import camel_case
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
from pydantic import BaseModel

from components import multilang
from components.check.settings import Settings
from components.config import stackfile
from components.config.addons import (
    AlertThresholds,
    AutoscalerSettings,
    GpuOperatorSettings,
    NodeMonitoringAgentSettings,
    ObservabilitySettings,
    VerificationSettings,
)
from components.config.coldstart import ColdStart
from components.config.groups import GpuNodeGroupSettings, Scaling, Taint, TimeSlicing
from components.config.mig import Mig
from components.config.mps import Mps
from components.config.multinode import CapacityReservation
from components.config.network import NetworkSettings
from components.config.repair import Repair, RepairActions
from components.config.system_group import SystemNodeGroupSettings
from components.config.teams import TeamSettings
from tests.data.promised import DEFAULT_REPAIR_POLICY
from tests.support.commands import run_python
from tests.support.paths import ROOT
from tests.support.reference import reference_path
from tests.support.simulation import simulate
from tooling.simulation import run_program

GOLDEN = ROOT / "tests" / "golden" / "schema.json"
TOKEN = "gpu-eks:index:GpuCluster"


_SCHEMA_SCRIPT = (
    "import json; from components import multilang; "
    "print(json.dumps(json.loads(multilang.provider().schema), indent=2, sort_keys=True))"
)


def schema_text() -> str:
    """The schema the plugin serves, as the golden file stores it (sorted keys, 2-space indent).

    Inferred in a fresh interpreter, as the plugin does: Pulumi's analyzer reads property
    descriptions with inspect.getsource and caches them by class name, so inferring it inside a
    test session that already imported and ran other code gave order-dependent results.
    """
    done = run_python("-c", _SCHEMA_SCRIPT)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(schema_text())


def test_schema_matches_golden_file():
    actual = schema_text()
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(actual)
        pytest.fail(f"rewrote {GOLDEN.relative_to(ROOT)}: review the diff, run again without UPDATE_GOLDEN")
    assert GOLDEN.exists(), f"{GOLDEN} is missing: run with UPDATE_GOLDEN=1"
    assert actual == GOLDEN.read_text(), (
        "the package schema changed (a public API of every generated SDK): if intended, refresh it with "
        "UPDATE_GOLDEN=1 and say so in the changelog"
    )


def _metaschema() -> dict[str, Any]:
    """Pulumi's package metaschema, its regexes in Python syntax.

    Its patterns use ECMA-262 named groups, ``(?<major>...)``, which Python's ``re`` spells
    ``(?P<major>...)``; nothing else in them differs.
    """
    text = reference_path("pulumi", "package-metaschema.json").read_text()
    return json.loads(re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", text))


def test_schema_is_valid_against_pulumi_package_metaschema(schema):
    metaschema = _metaschema()
    jsonschema.Draft202012Validator.check_schema(metaschema)
    errors = sorted(jsonschema.Draft202012Validator(metaschema).iter_errors(schema), key=str)
    assert errors == [], [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def test_metaschema_check_can_fail(schema):
    """The metaschema really constrains what we check: a misspelled property type is refused."""
    metaschema = _metaschema()
    broken = json.loads(json.dumps(schema))
    broken["resources"][TOKEN]["inputProperties"]["clusterName"]["type"] = "text"
    assert list(jsonschema.Draft202012Validator(metaschema).iter_errors(broken)) != []


def test_schema_declares_gpu_cluster_with_its_python_token(schema):
    assert schema["name"] == "gpu-eks"
    assert schema["version"] == "0.4.0-dev.0"  # pyproject.toml's version 0.4.0.dev0, in SemVer's spelling
    assert list(schema["resources"]) == [TOKEN]
    resource = schema["resources"][TOKEN]
    assert resource["isComponent"] is True
    assert resource["requiredInputs"] == ["clusterName"]
    assert sorted(resource["properties"]) == [
        "clusterName",
        "gpuNodeGroups",
        "kubeconfig",
        "observability",
        "oidcProviderArn",
        "oidcProviderUrl",
    ]
    assert resource["required"] == ["clusterName", "gpuNodeGroups", "kubeconfig", "oidcProviderArn", "oidcProviderUrl"]
    assert resource["properties"]["gpuNodeGroups"]["additionalProperties"] == {
        "$ref": "#/types/gpu-eks:index:GpuNodeGroupOutputs",
        "description": "Per GPU node group (by name): node selector, tolerations, GPU counts, resource name.",
    }
    assert sorted(schema["types"]) == [
        "gpu-eks:index:AlertThresholds",
        "gpu-eks:index:AutoscalerSettings",
        "gpu-eks:index:CapacityReservation",
        "gpu-eks:index:ColdStart",
        "gpu-eks:index:GpuNodeGroupOutputs",
        "gpu-eks:index:GpuNodeGroupSettings",
        "gpu-eks:index:GpuOperatorSettings",
        "gpu-eks:index:Mig",
        "gpu-eks:index:Mps",
        "gpu-eks:index:NetworkSettings",
        "gpu-eks:index:NodeMonitoringAgentSettings",
        "gpu-eks:index:ObservabilityCloudWatch",
        "gpu-eks:index:ObservabilityExporter",
        "gpu-eks:index:ObservabilityOutputs",
        "gpu-eks:index:ObservabilitySettings",
        "gpu-eks:index:RepairActions",
        "gpu-eks:index:RepairSettings",
        "gpu-eks:index:Scaling",
        "gpu-eks:index:SystemNodeGroupSettings",
        "gpu-eks:index:TaintSpec",
        "gpu-eks:index:TeamSettings",
        "gpu-eks:index:TimeSlicing",
        "gpu-eks:index:Toleration",
        "gpu-eks:index:VerificationSettings",
    ]


def test_schema_input_names_are_the_config_keys(schema):
    resource = schema["resources"][TOKEN]
    assert sorted(resource["inputProperties"]) == [
        "adminPrincipalArns",
        "autoscaler",
        "clusterName",
        "controlPlaneLogTypes",
        "deletionProtection",
        "endpointPublicAccessCidrs",
        "gpuNodeGroups",
        "gpuOperator",
        "kubernetesVersion",
        "network",
        "nodeMonitoringAgent",
        "observability",
        "preflight",
        "systemNodeGroup",
        "tags",
        "teams",
        "verification",
        "verifyTimeSlicing",
    ]
    group = schema["types"]["gpu-eks:index:GpuNodeGroupSettings"]
    assert "diskSizeGiB" in group["properties"]  # the config key, not the analyzer's "diskSizeGib"
    assert group["required"] == ["name"]
    assert sorted(schema["types"]["gpu-eks:index:TimeSlicing"]["properties"]) == [
        "failRequestsGreaterThanOne",
        "profile",
        "renameByDefault",
        "replicas",
    ]


def test_only_the_ids_of_an_existing_vpc_accept_outputs(schema):
    """Everything that decides which resources exist is plain; an existing VPC's ids may be Outputs."""
    network = schema["types"]["gpu-eks:index:NetworkSettings"]["properties"]
    assert {k for k, p in network.items() if not p.get("plain")} == {"vpcId", "privateSubnetIds", "publicSubnetIds"}
    assert network["privateSubnetIds"]["items"] == {
        "description": network["privateSubnetIds"]["description"],
        "type": "string",
    }
    assert network["privateSubnetIds"]["description"].startswith(
        NetworkSettings.model_fields["private_subnet_ids"].description
    )
    inputs = schema["resources"][TOKEN]["inputProperties"]
    assert [k for k, p in inputs.items() if p.get("plain") is not True] == []


# ---------------------------------------------------------------------------------------------
# One schema: the multi-language inputs mirror the settings model
# ---------------------------------------------------------------------------------------------


def _kind(annotation: Any) -> str:
    """A coarse, comparable kind of a pydantic or TypedDict annotation."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated or origin in (typing.Required, typing.NotRequired):
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            # pulumi.Input[T] is a Union of T, Awaitable[T] and Output[T]: its plain member counts.
            plain = [a for a in args if typing.get_origin(a) is None or typing.get_origin(a) in (list, dict, tuple)]
            plain = [a for a in plain if not (isinstance(a, typing.ForwardRef) or a is pulumi.Output)]
            annotation = plain[0] if len(plain) == 1 else args[0]
        else:
            break
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "str"
    if origin in (list, tuple):
        return f"list[{_kind(typing.get_args(annotation)[0])}]"
    if origin is dict:
        return f"dict[{_kind(typing.get_args(annotation)[1])}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        # A settings model is known to other languages by its title (the schema's type name).
        return str(annotation.model_config.get("title") or annotation.__name__)
    return annotation.__name__


def _model_fields(model: type[BaseModel]) -> dict[str, tuple[bool, str]]:
    return {
        (f.alias or name): (f.is_required(), _kind(f.rebuild_annotation())) for name, f in model.model_fields.items()
    }


def _typeddict_fields(td: type) -> dict[str, tuple[bool, str]]:
    hints = td.__annotations__
    return {camel_case(k): (k in td.__required_keys__, _kind(v)) for k, v in hints.items()}


PAIRS = [
    (Settings, multilang.GpuClusterInputs),
    (NetworkSettings, multilang.NetworkSettings),
    (SystemNodeGroupSettings, multilang.SystemNodeGroupSettings),
    (GpuNodeGroupSettings, multilang.GpuNodeGroupSettings),
    (Scaling, multilang.Scaling),
    (Taint, multilang.TaintSpec),
    (TimeSlicing, multilang.TimeSlicing),
    (Mps, multilang.Mps),
    (ColdStart, multilang.ColdStart),
    (CapacityReservation, multilang.CapacityReservation),
    (Mig, multilang.Mig),
    (GpuOperatorSettings, multilang.GpuOperatorSettings),
    (VerificationSettings, multilang.VerificationSettings),
    (AutoscalerSettings, multilang.AutoscalerSettings),
    (ObservabilitySettings, multilang.ObservabilitySettings),
    (AlertThresholds, multilang.AlertThresholds),
    (TeamSettings, multilang.TeamSettings),
    (NodeMonitoringAgentSettings, multilang.NodeMonitoringAgentSettings),
    (Repair, multilang.RepairSettings),
    (RepairActions, multilang.RepairActions),
]


@pytest.mark.parametrize(("model", "typeddict"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_multilang_inputs_mirror_the_settings_model(model, typeddict):
    """Every settings field has an input of the same name, required-ness and kind, and vice versa."""
    assert _typeddict_fields(typeddict) == _model_fields(model)


def test_every_settings_model_has_a_multilang_type():
    """A new nested settings model needs its TypedDict (and a row in PAIRS)."""
    reachable: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel]) -> None:
        reachable.add(model)
        for f in model.model_fields.values():
            for arg in _flatten(f.rebuild_annotation()):
                if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in reachable:
                    walk(arg)

    walk(Settings)
    assert {m.__name__ for m in reachable} == {m.__name__ for m, _ in PAIRS}


def _flatten(annotation: Any) -> list[Any]:
    out = [annotation]
    for arg in typing.get_args(annotation):
        out += _flatten(arg)
    return out


def test_schema_descriptions_are_the_settings_fields_descriptions(schema):
    """One source: each input's description starts with its settings field's (python -m tooling docs)."""
    inputs = schema["resources"][TOKEN]["inputProperties"]
    for model, typeddict in PAIRS:
        properties = (
            inputs if model is Settings else schema["types"][f"gpu-eks:index:{typeddict.__name__}"]["properties"]
        )
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"
            assert properties[field.alias or name]["description"].startswith(field.description), (model, name)


def test_the_kind_check_can_fail():
    # (No postponed annotations in this file: these classes' annotations are real types.)
    class WrongKind(typing.TypedDict):
        min_size: str
        desired_size: int
        max_size: int

    class Missing(typing.TypedDict):
        min_size: int
        desired_size: int

    class Optional(typing.TypedDict, total=False):
        min_size: int
        desired_size: int
        max_size: int

    for wrong in (WrongKind, Missing, Optional):
        assert _typeddict_fields(wrong) != _model_fields(Scaling), wrong.__name__


def test_to_config_renames_schema_levels_only():
    inputs = {
        "cluster_name": "ml",
        "tags": {"cost_center": "42"},
        "gpu_node_groups": [{"name": "t4", "disk_size_gi_b": 200.0, "labels": {"team_name": "vision"}}],
    }
    assert multilang.to_config(inputs, multilang.GpuClusterInputs) == {
        "clusterName": "ml",
        "tags": {"cost_center": "42"},
        "gpuNodeGroups": [{"name": "t4", "diskSizeGiB": 200, "labels": {"team_name": "vision"}}],
    }


# ---------------------------------------------------------------------------------------------
# The provider's construct path, under mocks
# ---------------------------------------------------------------------------------------------


def _as_sent_by_engine(value: Any) -> Any:
    """Config values as a Construct request carries them: numbers are floats on the wire."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _as_sent_by_engine(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_sent_by_engine(v) for v in value]
    return value


@functools.cache
def serving_provider() -> Any:
    """One provider for the construct calls here, as the plugin serves them all from one
    (components/multilang/package.py ``serve``); building it infers the schema from the source."""
    return multilang.provider()


def _dev_inputs() -> tuple[dict[str, Any], dict[str, Any]]:
    config = stackfile.read_stack_config("dev", ROOT)
    inputs = {k.removeprefix("gpu-eks:"): v for k, v in config.items() if k.startswith("gpu-eks:")}
    inputs["clusterName"] = "gpu-eks-dev"  # the program's default: <project>-<stack>
    return config, _as_sent_by_engine(inputs)


def _construct(inputs: dict[str, Any], config: dict[str, Any], name: str = "gpu-eks"):
    result: dict[str, Any] = {}

    def program() -> None:
        constructed = serving_provider().construct(name, TOKEN, inputs, pulumi.ResourceOptions())
        for key, value in constructed.state.items():
            pulumi.export(key, value)
        result["urn"] = constructed.urn

    sim = run_program(program, stackfile.cli_config(config), project="gpu-eks", stack="dev")
    return sim


@pytest.fixture(scope="module")
def constructed_dev():
    config, inputs = _dev_inputs()
    return _construct(inputs, config)


def test_construct_builds_exactly_the_dev_stack(constructed_dev):
    """A TypeScript/YAML program declaring GpuCluster "gpu-eks" with the dev config gets the dev stack."""
    assert sorted(r.urn for r in constructed_dev.resources) == sorted(r.urn for r in simulate("dev").resources)
    top = constructed_dev.one(TOKEN)
    assert top.name == "gpu-eks"
    assert top.parent_urn == constructed_dev.stack_urn
    node_group = constructed_dev.one("aws:eks/nodeGroup:NodeGroup", "gpu-eks-t4")
    assert node_group.inputs["capacityType"] == "SPOT"
    assert node_group.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}


def test_construct_returns_the_stack_outputs(constructed_dev):
    outputs = constructed_dev.outputs
    assert outputs["clusterName"] == "gpu-eks-dev"
    assert outputs["oidcProviderUrl"] == "oidc.eks.us-west-2.amazonaws.com/id/00000000000000000000000000000000"
    assert json.loads(outputs["kubeconfig"])["clusters"][0]["name"] == "gpu-eks-dev"
    assert "kubeconfig" in constructed_dev.secret_outputs
    assert outputs["gpuNodeGroups"] == {
        "t4": {
            "nodeSelector": {
                "gpu-eks.io/gpu-count": "1",
                "gpu-eks.io/node-group": "t4",
                "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4",
                "nvidia.com/device-plugin.config": "timeslice-x4",
            },
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "gpusPerNode": 1,
            "advertisedGpusPerNode": 4,
            "resourceName": "nvidia.com/gpu",
            "sharedSlotsPerNode": 4,
            "sharedSlotsAtMaxSize": 4,
            "sharingMode": "timeSlicing",
            "memoryPerSlotGiB": 3.75,
            "repairPolicy": DEFAULT_REPAIR_POLICY,
            "autoscalingGroupName": "eks-gpu-eks-t4-00000000-0000-0000-0000-000000000000",
        }
    }
    # Names as the schema writes them (camelCase), not the TypedDict's Python names.
    assert outputs["observability"] == {
        "pipeline": "cloudwatch",
        "perPodGpuMetrics": False,
        "exporter": {"namespace": "gpu-operator", "service": "nvidia-dcgm-exporter", "port": 9400, "path": "/metrics"},
        "cloudwatch": {
            "addon": "amazon-cloudwatch-observability",
            "metricNamespace": "ContainerInsights",
            "performanceLogGroup": "/aws/containerinsights/gpu-eks-dev/performance",
        },
    }


def test_construct_returns_the_prometheus_observability_output():
    config, inputs = _dev_inputs()
    inputs["observability"] = {"enabled": True, "pipeline": "prometheus", "namespace": "monitoring"}
    outputs = _construct(inputs, config).outputs
    assert outputs["observability"] == {
        "pipeline": "prometheus",
        "perPodGpuMetrics": True,
        "exporter": {"namespace": "gpu-operator", "service": "nvidia-dcgm-exporter", "port": 9400, "path": "/metrics"},
        "dashboardConfigMap": "monitoring/gpu-eks-shared-gpus-dashboard",
        "prometheusRule": "monitoring/gpu-eks-shared-gpus",
    }


def _map_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    provider = serving_provider()
    return provider.map_inputs(inputs, provider._component_defs["GpuCluster"])


def test_invalid_inputs_are_input_property_errors_keyed_like_the_config():
    with pytest.raises(InputPropertiesError) as caught:
        _map_inputs(
            {
                "clusterName": "ml",
                "gpuNodeGroups": [{"name": "t4", "capacityType": "RESERVED", "diskSizeGiB": 20.5}],
                "network": {"availabilityZoneCount": 1.0},
            }
        )
    paths = [e["property_path"] for e in caught.value.errors]
    # In field order: the GPU keys (GpuCapacitySettings) come before the cluster's own keys.
    assert paths == ["gpuNodeGroups[0].capacityType", "gpuNodeGroups[0].diskSizeGiB", "network.availabilityZoneCount"]
    reasons = {e["property_path"]: e["reason"] for e in caught.value.errors}
    capacity = reasons["gpuNodeGroups[0].capacityType"]
    assert capacity.startswith('gpu-eks:gpuNodeGroups[0].capacityType: received "RESERVED"; expected ')
    assert reasons["gpuNodeGroups[0].diskSizeGiB"].startswith("gpu-eks:gpuNodeGroups[0].diskSizeGiB: received 20.5")
    assert caught.value.message.startswith("invalid stack configuration (3 problems):")


def test_a_whole_object_input_from_an_output_is_refused_not_replaced_by_defaults():
    """The SDK maps an Output given for `network` to {} (a new VPC): the provider refuses it, by key."""
    errors: dict[str, Any] = {}

    def program() -> None:
        network = pulumi.Output.from_input({"vpcId": "vpc-0123456789abcdef0"})
        try:
            _map_inputs({"clusterName": "ml", "network": network})
        except InputPropertiesError as err:
            errors["errors"] = err.errors

    run_program(program, {}, project="gpu-eks", stack="dev")
    assert errors["errors"] == [
        {
            "property_path": "network",
            "reason": 'gpu-eks:network: received "<a value computed from other resources, or a secret>"; '
            "expected a plain network value (Outputs go inside it, e.g. network.vpcId)",
        }
    ]


# ---------------------------------------------------------------------------------------------
# The plugin, as `pulumi package add` runs it
# ---------------------------------------------------------------------------------------------


def test_plugin_manifest_and_requirements():
    plugin = ROOT / "plugin"
    assert (plugin / "PulumiPlugin.yaml").read_text().splitlines()[-1] == "runtime: python"
    requirements = [
        line for line in (plugin / "requirements.txt").read_text().splitlines() if line and not line.startswith("#")
    ]
    assert requirements == ["-r ../requirements.txt"]


def test_plugin_entry_point_serves_the_golden_schema_from_a_checkout(tmp_path: Path):
    """Run plugin/__main__.py as the python language host does (`python <plugin dir> <engine>`).

    The process prints its gRPC port; GetSchema over loopback must answer the golden schema.
    The engine address is never dialled before a Construct call.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "plugin"), "127.0.0.1:1"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        port_line = process.stdout.readline().decode().strip()
        assert port_line.isdigit(), process.stderr.read().decode() if process.stderr else port_line
        with grpc.insecure_channel(f"127.0.0.1:{port_line}") as channel:
            stub = provider_pb2_grpc.ResourceProviderStub(channel)
            response = stub.GetSchema(provider_pb2.GetSchemaRequest(version=0), timeout=30)
            info = stub.GetPluginInfo(empty_pb2.Empty(), timeout=30)
        served = json.dumps(json.loads(response.schema), indent=2, sort_keys=True) + "\n"
        assert served == GOLDEN.read_text()
        assert info.version == "0.4.0-dev.0"
    finally:
        process.kill()
        process.wait(timeout=10)


# ---------------------------------------------------------------------------------------------
# The README's YAML example, through the construct path
# ---------------------------------------------------------------------------------------------


def test_readme_yaml_example_constructs_the_python_examples_cluster():
    readme = (ROOT / "docs" / "multilang.md").read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", readme, flags=re.S) if TOKEN in b]
    program = yaml.safe_load(block)
    resource = program["resources"]["gpu"]
    assert resource["type"] == TOKEN
    sim = _construct(_as_sent_by_engine(resource["properties"]), {}, name="gpu")
    assert sim.one("eks:index:Cluster").inputs["name"] == "ml-platform"
    node_group = sim.one("aws:eks/nodeGroup:NodeGroup", "gpu-t4")
    assert node_group.inputs["instanceTypes"] == ["g4dn.xlarge"]
    assert sim.outputs["gpuNodeGroups"]["t4"]["advertisedGpusPerNode"] == 4
    assert program["outputs"] == {
        "kubeconfig": "${gpu.kubeconfig}",
        "t4NodeSelector": '${gpu.gpuNodeGroups["t4"].nodeSelector}',
    }
    assert set(sim.outputs) == {"clusterName", "kubeconfig", "oidcProviderArn", "oidcProviderUrl", "gpuNodeGroups"}


def test_readme_typescript_example_uses_schema_names(schema):
    readme = (ROOT / "docs" / "multilang.md").read_text()
    (block,) = re.findall(r"```typescript\n(.*?)```", readme, flags=re.S)
    assert 'new gpueks.GpuCluster("ml", {' in block
    used = set(re.findall(r"(\w+): ", block))
    inputs = schema["resources"][TOKEN]["inputProperties"]
    group = schema["types"]["gpu-eks:index:GpuNodeGroupSettings"]["properties"]
    slicing = schema["types"]["gpu-eks:index:TimeSlicing"]["properties"]
    assert used <= set(inputs) | set(group) | set(slicing), used - set(inputs) - set(group) - set(slicing)
    for output in re.findall(r"gpu\.(\w+)", block):
        assert output in schema["resources"][TOKEN]["properties"]


def test_existing_vpc_ids_may_be_outputs():
    """network.vpcId and subnet ids from the caller's own resources reach the cluster unchanged."""
    captured: dict[str, Any] = {}

    def program() -> None:
        inputs = {
            "clusterName": "ml",
            "network": {
                "vpcId": pulumi.Output.from_input("vpc-0123456789abcdef0"),
                "privateSubnetIds": [
                    pulumi.Output.from_input("subnet-0aaaaaaaaaaaaaaa1"),
                    pulumi.Output.from_input("subnet-0aaaaaaaaaaaaaaa2"),
                ],
            },
        }
        captured["state"] = serving_provider().construct("ml", TOKEN, inputs, pulumi.ResourceOptions()).state

    sim = run_program(program, {}, project="gpu-eks", stack="dev")
    assert sim.one("eks:index:Cluster").inputs["vpcId"] == "vpc-0123456789abcdef0"
    assert sim.one("eks:index:Cluster").inputs["privateSubnetIds"] == [
        "subnet-0aaaaaaaaaaaaaaa1",
        "subnet-0aaaaaaaaaaaaaaa2",
    ]
