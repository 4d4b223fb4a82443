"""The checks the suite has for each kind of object a configuration renders, one call per kind, and
``render_pure``: every pure builder of a configuration, each object it returns through its check
(tests/test_properties.py; the defects it found, tests/test_property_regressions.py).

Each check is the contract of the object's consumer, read from upstream, never computed by the code
under test: nodeadm's NodeConfig CRD (strict), the gpu-operator chart's values, Karpenter's CRDs
with their CEL rules, Kubernetes' OpenAPI schemas, the API server's rules for names and labels,
EC2 Auto Scaling's limits on an ASG's tags.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema
import yaml

from components.check.settings import GpuCapacitySettings
from components.coldstart.model import cold_start_model
from components.gpu_operator import values as operator_values
from components.observability import dashboard, rules
from components.plan import asg, userdata
from components.plan import karpenter as karpenter_objects
from components.teams import objects as team_objects
from components.teams import policy as team_policy
from components.teams import verification as team_verification
from components.verification import jobs
from tests.support.chart_values import NFD, leaf_paths
from tests.support.reference import CHART_VERSIONS, load_reference_yaml
from tests.support.standins.crds import crd_problems, karpenter_schema, strict
from tests.support.teams import admitted, pinned
from tests.support.teams import pod as policy_pod

#: AWS limits on an Auto Scaling group's tags (EC2 Auto Scaling API reference, "CreateOrUpdateTags":
#: Key 1-128 characters, Value 0-256; "Auto Scaling quotas": 50 tags per Auto Scaling group).
ASG_TAG_KEY_MAX, ASG_TAG_VALUE_MAX, ASG_TAGS_MAX = 128, 256, 50


@cache
def nodeconfig_validator() -> jsonschema.Validator:
    crd = load_reference_yaml("nodeadm", "node.eks.aws_nodeconfigs.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = strict(version["schema"]["openAPIV3Schema"])
    return jsonschema.validators.validator_for(schema)(schema)


#: Each Karpenter CRD read once (tests/support/standins/crds.py reads the file on every call).
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
