"""Kubernetes objects the program creates validate against the Kubernetes OpenAPI schemas
(kubernetes-validate, strict: unknown fields fail) for the stack's Kubernetes version."""

from __future__ import annotations

import kubernetes_validate
import pytest

from components.check.loading import load_settings
from components.plan.group import plan_group
from components.verification import jobs
from tests.support.paths import ROOT
from tests.support.simulation import settings_for_stack
from tests.support.tokens import KINDS


def test_every_kubernetes_object_validates(stack_sim):
    stack, sim = stack_sim
    version = settings_for_stack(stack, ROOT).kubernetes_version + ".0"
    objects = [
        r for r in sim.resources if r.type.startswith("kubernetes:") and r.type != "kubernetes:helm.sh/v3:Release"
    ]
    assert {r.type for r in objects} <= set(KINDS), "a new Kubernetes kind needs a line in KINDS"
    assert len(objects) >= 1
    for r in objects:
        api_version, kind = KINDS[r.type]
        obj = {"apiVersion": api_version, "kind": kind, **r.inputs}
        kubernetes_validate.validate(obj, version, strict=True)


def test_validation_catches_a_broken_job():
    group = plan_group(load_settings({"clusterName": "c"}).gpu_node_groups[0])
    spec = jobs.concurrent_job_spec(group, "img", "probe")
    obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, "spec": spec}
    kubernetes_validate.validate(obj, "1.35.0", strict=True)
    spec["template"]["spec"]["containers"][0]["resource"] = spec["template"]["spec"]["containers"][0].pop("resources")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, "1.35.0", strict=True)
