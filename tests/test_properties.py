"""Property-based tests over the whole settings surface (issue 36; docs/property-tests.md).

The contract, for every configuration tests/support/strategies/settings.py draws from the settings models
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
import typing
from collections.abc import Mapping
from typing import Any

import pulumi
import pytest
from hypothesis import event, example, given, note, settings
from pydantic import BaseModel

from components import catalog
from components.catalog import DEFAULT_KUBERNETES_VERSION
from components.catalog import mig as mig_catalog
from components.check.loading import load_capacity_settings, load_settings
from components.check.settings import GpuCapacitySettings, Settings
from components.config import stackfile
from components.config.errors import CONFIG_NAMESPACE, ConfigError
from components.config.groups import GpuNodeGroupSettings
from components.nodegroups import component as nodegroup_component
from components.review.simulation import FakeCloud, program_from_file, run_program
from tests.support.contract import (
    check_karpenter,
    check_kubernetes,
    check_names_and_labels,
    check_operator_values,
    check_user_data,
    render_pure,
)
from tests.support.paths import ROOT
from tests.support.settings_keys import key_names_a_setting
from tests.support.strategies.settings import stack_settings
from tests.support.tokens import KINDS as KUBERNETES_KINDS

#: The thorough profile runs for minutes: no per-test timeout then (pyproject.toml's 120 s is the CI one).
pytestmark = [pytest.mark.timeout(0)] if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else []

#: The pure path runs the profile's budget; the mocked program (about 0.1-0.3 s a run) a tenth.
PURE_EXAMPLES = settings.default.max_examples
PROGRAM_EXAMPLES = max(settings.default.max_examples // 10, 4)


# ---------------------------------------------------------------------------------------------
# Refusals: every problem names a key of the stack file (tests/support/settings_keys.py)
# ---------------------------------------------------------------------------------------------


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
# (tests/support/contract.py)
# ---------------------------------------------------------------------------------------------


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
