"""Property-based tests over the whole settings surface (issue 36; docs/property-tests.md).

The contract, for every configuration tests/settings_strategies.py draws from the settings models
and the catalog: it either renders, and every object declared from it passes the contract checks
the suite has for that object, or it is refused with the library's own ``ConfigError`` whose
every problem names a key of the stack file; never any other exception, never a half-declared
program. The expectation is never computed by the code under test: a property checks the
outcome against upstream schemas (../shared/reference) and literal limits only.

Two budgets (tests/conftest.py registers the Hypothesis profiles): the pure path (load, plan,
every pure builder) for many configurations; the real program under Pulumi mocks for a few.
"""

from __future__ import annotations

import base64
import json
import os
import re
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema
import pulumi
import pytest
import yaml
from hypothesis import event, example, given, note, settings
from pydantic import BaseModel

from components import catalog
from components.catalog import DEFAULT_KUBERNETES_VERSION
from components.catalog import mig as mig_catalog
from components.check.loading import load_capacity_settings, load_settings
from components.check.settings import GpuCapacitySettings, Settings
from components.coldstart.model import cold_start_model
from components.config import stackfile
from components.config.errors import CONFIG_NAMESPACE, ConfigError
from components.config.groups import GpuNodeGroupSettings
from components.gpu_operator import values as operator_values
from components.nodegroups import component as nodegroup_component
from components.observability import dashboard, rules
from components.plan import asg, userdata
from components.plan import karpenter as karpenter_objects
from components.review.simulation import FakeCloud, program_from_file, run_program
from components.teams import objects as team_objects
from components.teams import policy as team_policy
from components.teams import verification as team_verification
from components.verification import jobs
from tests.crd_cel import crd_problems, karpenter_schema
from tests.settings_strategies import stack_settings
from tests.support import CHART_VERSIONS, ROOT, load_reference_yaml
from tests.test_helm_values import NFD, leaf_paths
from tests.test_kubernetes_objects import KINDS as KUBERNETES_KINDS
from tests.test_nodeconfig import strict
from tests.test_teams_policy import admitted, pinned
from tests.test_teams_policy import pod as policy_pod

#: The thorough profile runs for minutes: no per-test timeout then (pyproject.toml's 120 s is the CI one).
pytestmark = [pytest.mark.timeout(0)] if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else []

#: The pure path runs the profile's budget; the mocked program (about 0.1-0.3 s a run) a tenth.
PURE_EXAMPLES = settings.default.max_examples
PROGRAM_EXAMPLES = max(settings.default.max_examples // 10, 4)

#: AWS limits on an Auto Scaling group's tags (EC2 Auto Scaling API reference, "CreateOrUpdateTags":
#: Key 1-128 characters, Value 0-256; "Auto Scaling quotas": 50 tags per Auto Scaling group).
ASG_TAG_KEY_MAX, ASG_TAG_VALUE_MAX, ASG_TAGS_MAX = 128, 256, 50


# ---------------------------------------------------------------------------------------------
# Refusals: every problem names a key of the stack file
# ---------------------------------------------------------------------------------------------


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {info.alias or name: info.annotation for name, info in model.model_fields.items()}


def _strip(annotation: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and ``X | None``."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = annotation.__origin__
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
            annotation = args[0]
            continue
        return annotation


def key_names_a_setting(key: str, model: type[BaseModel], raw: Mapping[str, Any]) -> bool:
    """Whether ``key`` (``gpu-eks:gpuNodeGroups[0].mig.migDevices``) is a path of ``model``'s
    stack-file keys, or ends at a key the input wrote (an unknown key is named as written). Read
    with the models' own field aliases, so dict keys with dots (``nvidia.com/gpu``) are read whole."""
    prefix = f"{CONFIG_NAMESPACE}:"
    if not key.startswith(prefix) or key == prefix:
        return False
    return _path_ok(key[len(prefix) :], model, raw)


def _path_ok(rest: str, annotation: Any, node: Any) -> bool:
    if not rest:
        return True
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        # A union of models (a key another branch may add): any of them.
        return any(_path_ok(rest, a, node) for a in typing.get_args(annotation) if a is not type(None))
    m = re.match(r"\[(\d+)\]", rest)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        rest = rest.removeprefix(".")
        aliases = _fields(annotation)
        name = next(
            (a for a in sorted(aliases, key=len, reverse=True) if re.match(rf"{re.escape(a)}(?=$|[.\[])", rest)),
            None,
        )
        if name is None:
            # An unknown key: named as the input wrote it, with nothing below it.
            return isinstance(node, Mapping) and rest in node
        below = node.get(name) if isinstance(node, Mapping) else None
        return _path_ok(rest[len(name) :], aliases[name], below)
    if origin in (list, tuple, set, frozenset) and m:
        index = int(m.group(1))
        below = node[index] if isinstance(node, list) and index < len(node) else None
        return _path_ok(rest[m.end() :], typing.get_args(annotation)[0], below)
    if origin is dict:
        # A dict's key may hold dots (nvidia.com/gpu): the input's keys say where it ends.
        rest = rest.removeprefix(".")
        if not isinstance(node, Mapping):
            return node is None
        value_type = typing.get_args(annotation)[1]
        return any(
            _path_ok(rest[len(k) :], value_type, node[k])
            for k in map(str, node)
            if rest == k or rest.startswith((f"{k}.", f"{k}["))
        )
    return False


def assert_clean_refusal(err: ConfigError, model: type[BaseModel], raw: Mapping[str, Any]) -> None:
    assert err.problems, "a ConfigError lists its problems"
    header, *lines = err.report().splitlines()
    assert header.startswith(("invalid stack configuration (", "invalid settings ("))
    if header.startswith("invalid settings"):  # a mapping given in Python: its own keys (issue 42)
        assert not [line for line in lines if line.startswith("  gpu-eks:")], err.report()
    for problem in err.problems:
        assert key_names_a_setting(problem.key, model, raw), f"{problem} names no key of the stack file"
        assert problem.expected.strip(), f"{problem.key}: says what is expected"


# ---------------------------------------------------------------------------------------------
# Renders: every object built from the settings passes the checks the suite has for it
# ---------------------------------------------------------------------------------------------


@cache
def nodeconfig_validator() -> jsonschema.Validator:
    crd = load_reference_yaml("nodeadm", "node.eks.aws_nodeconfigs.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = strict(version["schema"]["openAPIV3Schema"])
    return jsonschema.validators.validator_for(schema)(schema)


#: Each Karpenter CRD read once (tests/crd_cel.py reads the file on every call).
cached_karpenter_schema = cache(karpenter_schema)


def check_user_data(mime: str) -> None:
    """nodeadm's NodeConfig CRD (strict: a misspelt field fails), as test_nodeconfig checks it, on
    every NodeConfig part of the MIME text; the other part is the boot stage's shell script (issue 31),
    one at most."""
    parts = userdata.parse_mime(mime)
    configs = [body for content_type, body in parts if content_type == userdata.NODECONFIG_CONTENT_TYPE]
    scripts = [body for content_type, body in parts if content_type == "text/x-shellscript"]
    assert configs, "user data carries a NodeConfig"
    assert len(configs) + len(scripts) == len(parts) and len(scripts) <= 1, [c for c, _ in parts]
    assert all(s.startswith("#!/bin/bash") for s in scripts)
    for body in configs:
        nodeconfig_validator().validate(yaml.safe_load(body))


@cache
def chart_values(version: str, subchart: str | None = None) -> Any:
    if subchart:
        return load_reference_yaml("gpu-operator", version, "charts", subchart, "values.yaml")
    return load_reference_yaml("gpu-operator", version, "values.yaml")


def _in_chart(tree: Any, path: tuple[str, ...]) -> bool:
    """``path`` is a value of the chart: there, or below a map the chart leaves empty (``{}``: a
    free-form map such as ``serviceMonitor.additionalLabels``)."""
    for key in path:
        if isinstance(tree, Mapping) and not tree:
            return True
        if not isinstance(tree, Mapping) or key not in tree:
            return False
        tree = tree[key]
    return True


def check_operator_values(values: Mapping[str, Any], version: str) -> None:
    """Every values path is one of the chart's, or its NFD subchart's (test_helm_values). A version
    outside the validated ones (``allowUnvalidatedChartVersion``) is held to the newest validated
    chart, whose defaults the library assumes for it (gpu_operator/chart.py)."""
    if version not in CHART_VERSIONS:
        version = CHART_VERSIONS[-1]
    for path in leaf_paths(values):
        found = _in_chart(chart_values(version), path) or (
            path[0] == NFD and _in_chart(chart_values(version, NFD), path[1:])
        )
        assert found, f"{'.'.join(path)} is not a value of gpu-operator {version}"


def check_karpenter(obj: Mapping[str, Any]) -> None:
    assert crd_problems(obj, cached_karpenter_schema(obj["kind"])) == [], obj["kind"]


@cache
def kubernetes_validator(api_version: str, kind: str, kubernetes_version: str) -> jsonschema.Validator:
    """kubernetes-validate's strict schema of a kind (as ``kubernetes_validate.validate`` builds it,
    which reads and parses the schema files on every call: seconds over a property's examples)."""
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    version = [v for v in utils.all_versions() if utils.major_minor(v) <= kubernetes_version][-1]
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group}.json", version)
    definitions = utils.schema_contents(f"{folder}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def check_kubernetes(obj: Mapping[str, Any], kubernetes_version: str) -> None:
    """The Kubernetes OpenAPI schema of the object's kind, strict (test_kubernetes_objects)."""
    kubernetes_validator(obj["apiVersion"], obj["kind"], kubernetes_version).validate(dict(obj))


#: The API server's rules for names and labels (k8s.io/apimachinery pkg/util/validation/validation.go:
#: IsDNS1123Subdomain, at most 253; IsValidLabelValue, at most 63). A Job's name is also a label
#: value of its pods (``batch.kubernetes.io/job-name``), so at most 63.
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def check_names_and_labels(obj: Mapping[str, Any]) -> None:
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if isinstance(name, str):
        longest = 63 if obj.get("kind") in ("Job", "Namespace") else 253
        assert DNS1123_SUBDOMAIN.fullmatch(name) and len(name) <= longest, f"{obj.get('kind')} name {name!r}"
    for value in (metadata.get("labels") or {}).values():
        assert isinstance(value, str) and LABEL_VALUE.fullmatch(value) and len(value) <= 63, f"label value {value!r}"


def check_asg_tags(tags: Mapping[str, str]) -> None:
    assert len(tags) <= ASG_TAGS_MAX, f"{len(tags)} ASG tags"
    for key, value in tags.items():
        assert 1 <= len(key) <= ASG_TAG_KEY_MAX and len(value) <= ASG_TAG_VALUE_MAX, key


def render_pure(settings_: GpuCapacitySettings, cluster_name: str) -> None:
    """Plan every group and run every pure builder, checking each object it returns."""
    plans = settings_.plans
    assert len(plans) == len(settings_.gpu_node_groups)
    for plan in plans:
        # As sent: a launch template's base64, an EC2NodeClass's text (plan/userdata.py).
        check_user_data(base64.b64decode(plan.user_data).decode() if plan.provider.user_data_base64 else plan.user_data)
        yaml.safe_dump(dict(plan.device_plugin_config))
        if plan.settings.capacity_provider == "karpenter":
            check_karpenter(karpenter_objects.ec2_node_class(plan, role="r", discovery=cluster_name, tags={}))
            check_karpenter(karpenter_objects.node_pool(plan))
            if karpenter_objects.needs_overlay(plan):
                check_karpenter(karpenter_objects.node_overlay(plan))
        elif settings_.autoscaler_enabled:
            check_asg_tags(asg.asg_tags(plan.node_template_tags, cluster_name))
        cold_start_model(plan, image_gib=10.0)
        spec = jobs.concurrent_job_spec(plan, settings_.verification.image, settings_.verification.probe_image)
        check_kubernetes(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "check"}, "spec": spec},
            settings_.kubernetes_version,
        )
    if not plans:
        # GpuCapacitySettings may hold no group: the caller's own node groups then (GpuCapacityArgs.node_groups).
        return
    operator, obs = settings_.gpu_operator, settings_.observability
    exporter = operator_values.exporter_options(obs)
    values = operator_values.gpu_operator_values(plans, operator.chart_version, operator.cdi_enabled, exporter)
    check_operator_values(values, operator.chart_version)
    for plan in plans:
        # The boot stage (issue 31) and the repair policy (issue 33): part of every group's plan.
        assert plan.boot is None or plan.boot.user_data_part.startswith("#!/bin/bash")
        plan.repair.node_repair_config()
    thresholds = settings_.observability.alerts
    rules.rule_spec(plans, thresholds)
    json.loads(dashboard.dashboard_json(plans, settings_.teams))
    for team in settings_.teams:
        built = [
            team_objects.namespace(team),
            team_objects.resource_quota(team),
            team_objects.limit_range(team),
            team_policy.admission_policy(team, plans),
            team_policy.admission_binding(team),
        ]
        for obj in filter(None, built):
            check_kubernetes(obj, settings_.kubernetes_version)
            check_names_and_labels(obj)
        team_verification.job_spec(team, plans, settings_.verification.probe_image)
        # The policy's CEL evaluates (to a decision, not an error: the API server would refuse every
        # GPU pod of the namespace) on a GPU pod, unpinned and pinned to the team's groups.
        rule = team_policy.admission_policy(team, plans)
        for obj in (policy_pod(), policy_pod(affinity=pinned(*team.node_groups))):
            assert isinstance(admitted(obj, rule), bool)


def pure_contract(raw: dict[str, Any], model: type[GpuCapacitySettings]) -> None:
    note(f"stack settings: {json.dumps(raw, sort_keys=True, default=repr)}")
    try:
        loaded = load_settings(raw) if model is Settings else load_capacity_settings(raw)
    except ConfigError as err:
        note(err.report())
        event("refused")
        assert_clean_refusal(err, model, raw)
        return
    event("rendered")
    for g in loaded.plans:
        event(f"rendered a group: {g.sharing_mode}, {g.settings.capacity_provider}")
    if loaded.teams:
        event("rendered with teams")
    render_pure(loaded, getattr(loaded, "cluster_name", "existing"))


#: The input of issue 36 (a MIG group with an empty custom layout), kept on every profile.
EMPTY_MIG_LAYOUT = {
    "clusterName": "ml",
    "gpuNodeGroups": [
        {"name": "a", "instanceTypes": ["p4d.24xlarge"], "migStrategy": "mixed", "mig": {"migDevices": {}}}
    ],
}


@example(raw=EMPTY_MIG_LAYOUT)
@example(raw={"clusterName": "ml", "gpuOperator": {"chartVersion": "v99.0.0", "allowUnvalidatedChartVersion": True}})
@settings(max_examples=PURE_EXAMPLES)
@given(raw=stack_settings(Settings, miss=8))
def test_any_cluster_settings_render_or_are_refused_by_key(raw):
    pure_contract(raw, Settings)


def every_family_mode_and_provider() -> list[dict[str, Any]]:
    """One configuration per GPU family and sharing mode the family allows (catalog), the capacity
    providers (the model's choices) taken in turn: run on every profile, whatever Hypothesis draws."""
    providers = typing.get_args(GpuNodeGroupSettings.model_fields["capacity_provider"].annotation)
    first_type: dict[str, str] = {}
    for name, row in catalog.GPU_INSTANCE_TYPES.items():
        first_type.setdefault(row.family.name, name)
    out = []
    for family, instance_type in sorted(first_type.items()):
        row = catalog.GPU_INSTANCE_TYPES[instance_type].family
        modes: list[dict[str, Any]] = [{"timeSlicing": {"replicas": 1}}]
        if catalog.TIME_SLICING in row.sharing:
            modes.append({"timeSlicing": {"replicas": 2}})
        if catalog.MPS in row.sharing:
            modes.append({"mps": {"replicas": 2}})
        gpu = mig_catalog.FAMILY_MIG_GPU.get(family)
        if gpu:
            layouts = list(mig_catalog.named_layouts(gpu))
            modes += [
                {"mig": {"layout": layouts[0]}, "migStrategy": "single"},
                {"mig": {"layout": layouts[-1]}, "migStrategy": "mixed"},
            ]
        for mode in modes:
            provider = providers[len(out) % len(providers)]
            scaling = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
            group = {"name": "a", "instanceTypes": [instance_type], "capacityProvider": provider, "scaling": scaling}
            out.append({"clusterName": "ml", "gpuNodeGroups": [{**group, **mode}]})
    return out


#: Teams on a time-sliced managed group and a MIG Karpenter group, every observability pipeline on:
#: what crosses groups (quotas, admission policies, alerts, dashboard rows) on every profile.
TEAMS_ACROSS_GROUPS = {
    "clusterName": "ml",
    "observability": {"enabled": True, "pipeline": "both"},
    "autoscaler": {"enabled": True},
    "gpuNodeGroups": [
        {"name": "a", "migStrategy": "mixed", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}},
        {
            "name": "b",
            "instanceTypes": ["p4d.24xlarge"],
            "migStrategy": "mixed",
            "mig": {"layout": "all-1g.5gb", "replicas": {"1g.5gb": 2}},
            "capacityProvider": "karpenter",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1},
        },
    ],
    "teams": [
        {
            "name": "ml",
            "nodeGroups": ["a"],
            "quota": {"nvidia.com/gpu": 2},
            "principals": ["arn:aws:iam::123456789012:role/Ml"],
        },
        {"name": "cv", "nodeGroups": ["b"], "quota": {"nvidia.com/mig-1g.5gb": 4}, "podSecurity": "restricted"},
    ],
}


def _with_examples(test):
    test = example(raw=TEAMS_ACROSS_GROUPS)(test)
    for raw in every_family_mode_and_provider():
        test = example(raw=raw)(test)
    return test


@_with_examples
@settings(max_examples=PURE_EXAMPLES)
@given(raw=stack_settings(Settings, miss=0))
def test_well_formed_cluster_settings_render_or_are_refused_by_key(raw):
    # Every value well formed on its own: what is left are the rules across keys and groups.
    pure_contract(raw, Settings)


@settings(max_examples=PURE_EXAMPLES // 2)
@given(raw=stack_settings(GpuCapacitySettings, miss=8))
def test_any_capacity_settings_render_or_are_refused_by_key(raw):
    pure_contract(raw, GpuCapacitySettings)


# ---------------------------------------------------------------------------------------------
# The real program under Pulumi mocks: a whole declaration, or a refusal before any resource
# ---------------------------------------------------------------------------------------------


class CountingCloud(FakeCloud):
    """FakeCloud, counting the resources the program declared."""

    def __init__(self) -> None:
        super().__init__()
        self.declared: list[str] = []

    def new_resource(self, args):
        self.declared.append(args.typ)
        return super().new_resource(args)


def check_simulation(sim, raw: Mapping[str, Any]) -> None:
    node_groups = sim.by_type(f"{nodegroup_component.TYPE_PREFIX}:GpuNodeGroup")
    assert len(node_groups) == len(raw.get("gpuNodeGroups", [None])), "one GpuNodeGroup per group"
    for lt in sim.by_type("aws:ec2/launchTemplate:LaunchTemplate"):
        if lt.inputs.get("userData"):
            check_user_data(base64.b64decode(lt.inputs["userData"]).decode())
    kinds = {"EC2NodeClass", "NodePool", "NodeOverlay"}
    for r in sim.resources:
        if r.type.startswith("kubernetes:") and r.inputs.get("kind") in kinds:
            check_karpenter(r.inputs)
    releases = [r for r in sim.by_type("kubernetes:helm.sh/v3:Release") if r.inputs.get("chart") == "gpu-operator"]
    assert len(releases) == 1, "one gpu-operator release"
    check_operator_values(releases[0].inputs["values"], releases[0].inputs["version"])
    version = raw.get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION)
    for r in sim.resources:
        if r.type in KUBERNETES_KINDS:
            api_version, kind = KUBERNETES_KINDS[r.type]
            check_kubernetes({"apiVersion": api_version, "kind": kind, **r.inputs}, version)
        if r.type.startswith("kubernetes:") and r.type != "kubernetes:helm.sh/v3:Release":
            check_names_and_labels({"kind": r.type.rpartition(":")[2], **r.inputs})


@example(raw=TEAMS_ACROSS_GROUPS)
@settings(max_examples=PROGRAM_EXAMPLES)
@given(raw=stack_settings(Settings, miss=0))
def test_the_program_declares_everything_or_nothing(raw):
    # preflight: true asks AWS itself (read-only calls: tests/test_preflight_*.py run them under moto).
    raw = {k: v for k, v in raw.items() if k != "preflight"}
    note(f"stack settings: {json.dumps(raw, sort_keys=True, default=repr)}")
    config = {"aws:region": "us-west-2", **{f"{CONFIG_NAMESPACE}:{k}": v for k, v in raw.items()}}
    cloud = CountingCloud()
    try:
        sim = run_program(
            program_from_file(ROOT / "__main__.py"),
            stackfile.cli_config(config),
            project=stackfile.project_name(ROOT),
            stack="properties",
            mocks=cloud,
        )
    except pulumi.RunError as err:
        assert str(err).startswith("invalid stack configuration"), str(err)
        assert cloud.declared == [], f"refused after declaring {cloud.declared}"
        event("refused")
        return
    event("rendered")
    check_simulation(sim, raw)
