"""Every decision taken from several groups' plans, run over clusters whose groups differ
(tests/data/clusters.py) and asserted against its definition per group (issue 35, item 8).

``DECISIONS`` names each such function with its check; ``NOT_DECISIONS`` the functions that take
several groups but decide nothing across them, each with why. A scan of ``components`` finds every
function with a parameter that is a collection of ``GroupPlan`` or ``GpuNodeGroup``: a new one
fails ``test_every_function_over_several_groups_is_listed`` until it is listed here, with a check.

Where a decision is a yes/no or one value, its expected value per cluster is also written out
(``EXPECTED``), and it must not depend on the groups' order: a decision taken from the first or
the last group alone, or with ``all`` for ``any``, fails on at least one cluster.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from components.autoscaler import values as autoscaler_values
from components.check import groups as group_rules
from components.check.groups import gpu_groups_problems
from components.check.loading import load_settings
from components.check.teams import (
    _team_plans,
    oversubscribed_quotas,
    slots_at_max_size,
    teams_problems,
    unused_groups,
)
from components.config.addons import AlertThresholds
from components.config.errors import ConfigError
from components.efa import values as efa_values
from components.gpu_operator import values as operator_values
from components.karpenter import values as karpenter_values
from components.karpenter.values import node_overlay_needed
from components.observability import dashboard, rules
from components.observability import node_health as node_health_rules
from components.plan import karpenter as karpenter_objects
from components.plan import placement
from components.plan.group import GroupPlan, plan_groups
from components.teams import policy
from components.teams import verification as team_check
from tests.data.clusters import CLUSTERS, GROUPS, REFUSED
from tests.support.clusters import plans_of, settings_of, teams_of
from tests.support.paths import ROOT

Plans = tuple[GroupPlan, ...]
CHART = "v26.7.0"  # an operator chart whose exporter has per-pod metrics
PER_POD = operator_values.ExporterOptions(per_pod_metrics=True)
THRESHOLDS = AlertThresholds()


def is_shared(p: GroupPlan) -> bool:
    """A group shares its GPUs: more slots than GPUs."""
    return p.slots_per_node > p.gpus_per_node


def is_mig(p: GroupPlan) -> bool:
    return p.mig_layout is not None


def needs_node_overlay(p: GroupPlan) -> bool:
    """A Karpenter group whose nodes EC2's GPU count would misjudge (karpenter.objects.needs_overlay)."""
    return p.settings.capacity_provider == "karpenter" and karpenter_objects.needs_overlay(p)


#: The yes/no (or one-value) decisions, per cluster, written out.
EXPECTED: dict[str, dict[str, object]] = {
    "node_overlay_needed": {
        "karpenter-shared-beside-exclusive": True,
        "karpenter-shared-beside-managed": True,
        "vgpu-beside-managed-shared": True,
        "managed-modes": False,
        "mig-beside-others": False,
        "all-exclusive": False,
        "multinode-beside-plain": False,
    },
    # T4, T4g or a vGPU slice in the cluster.
    "needs_metrics_config_map": {
        "karpenter-shared-beside-exclusive": True,
        "karpenter-shared-beside-managed": False,
        "vgpu-beside-managed-shared": True,
        "managed-modes": True,
        "mig-beside-others": False,
        "all-exclusive": True,
        "multinode-beside-plain": False,
    },
    # Some group shares its GPUs.
    "per_pod_gpu_metrics": {
        "karpenter-shared-beside-exclusive": True,
        "karpenter-shared-beside-managed": True,
        "vgpu-beside-managed-shared": True,
        "managed-modes": True,
        "mig-beside-others": True,
        "all-exclusive": False,
        "multinode-beside-plain": False,
    },
    "mig_strategy": {
        "karpenter-shared-beside-exclusive": "none",
        "karpenter-shared-beside-managed": "none",
        "vgpu-beside-managed-shared": "none",
        "managed-modes": "none",
        "mig-beside-others": "mixed",
        "all-exclusive": "none",
        "multinode-beside-plain": "none",
    },
    # Some Karpenter group launches into a capacity reservation (issue 32).
    "reserved_capacity_needed": {
        "karpenter-shared-beside-exclusive": False,
        "karpenter-shared-beside-managed": False,
        "vgpu-beside-managed-shared": False,
        "managed-modes": False,
        "mig-beside-others": False,
        "all-exclusive": False,
        "multinode-beside-plain": True,
    },
    # Some Karpenter group's nodes are repaired (Karpenter's one nodeRepair gate; issue 33).
    "node_repair_needed": {
        "karpenter-shared-beside-exclusive": True,
        "karpenter-shared-beside-managed": True,
        "vgpu-beside-managed-shared": True,
        "managed-modes": False,
        "mig-beside-others": False,
        "all-exclusive": True,
        "multinode-beside-plain": True,
    },
    # A managed MIG group's stage may reboot its nodes before they register: CA waits longer.
    "max_node_provision_time": {
        "karpenter-shared-beside-exclusive": None,
        "karpenter-shared-beside-managed": None,
        "vgpu-beside-managed-shared": None,
        "managed-modes": None,
        "mig-beside-others": "60m",
        "all-exclusive": None,
        "multinode-beside-plain": None,
    },
    # The smallest slot's share of GPU memory (MiB): the dashboard's red line.
    "smallest_share": {
        "karpenter-shared-beside-exclusive": 5758,  # an L4 (23,034 MiB as its driver reports) / 4
        "karpenter-shared-beside-managed": 5758,
        "vgpu-beside-managed-shared": 2861,  # a g6f.large's L4 slice (2,861 MiB), unshared
        "managed-modes": 3840,  # a T4 (15,360 MiB) / 4 MPS clients
        "mig-beside-others": 2560,  # an A100 1g.5gb slice (5,120 MiB) / 2
        "all-exclusive": 15360,  # a whole T4
        "multinode-beside-plain": 23028,  # a whole A10G (23,028 MiB as its driver reports)
    },
}


def _both_orders(cluster: str) -> list[Plans]:
    plans = plans_of(cluster)
    return [plans, tuple(reversed(plans))]


def _expect(decision: str, cluster: str, value: object) -> None:
    assert value == EXPECTED[decision][cluster], f"{decision} on {cluster}"


# ---------------------------------------------------------------------------------------------
# The checks, one per decision: (cluster name) -> None, asserting against the per-group definition
# ---------------------------------------------------------------------------------------------


def check_node_overlay_needed(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = node_overlay_needed(plans)
        assert decided == any(needs_node_overlay(p) for p in plans)
        _expect("node_overlay_needed", cluster, decided)


def check_reserved_capacity_needed(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = karpenter_values.reserved_capacity_needed(plans)
        assert decided == any(
            p.settings.capacity_provider == "karpenter" and p.settings.capacity_reservation for p in plans
        )
        _expect("reserved_capacity_needed", cluster, decided)


def check_node_repair_needed(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = karpenter_values.node_repair_needed(plans)
        assert decided == any(p.settings.capacity_provider == "karpenter" and p.repair.enabled for p in plans)
        _expect("node_repair_needed", cluster, decided)


def check_max_node_provision_time(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = autoscaler_values.max_node_provision_time(plans)
        rebooting = any(is_mig(p) and p.provider.reboots_before_registering for p in plans)
        assert (decided is not None) == rebooting
        _expect("max_node_provision_time", cluster, decided)


def check_karpenter_repair_gate_problems(cluster: str) -> None:
    plans = plans_of(cluster)
    assert group_rules.karpenter_repair_gate_problems(plans) == [], cluster  # every mixed cluster is valid
    karpenter = [i for i, p in enumerate(plans) if p.settings.capacity_provider == "karpenter"]
    # Per group: turning one Karpenter group's repair off, when another Karpenter group keeps it on,
    # is reported on that group's key only; a managed group's repair is its own.
    for i, p in enumerate(plans):
        off = list(plans)
        repair_off = p.settings.repair.model_copy(update={"enabled": False})
        off[i] = dataclasses.replace(p, settings=p.settings.model_copy(update={"repair": repair_off}))
        keys = [k for k, *_ in group_rules.karpenter_repair_gate_problems(off)]
        others_on = [j for j in karpenter if j != i and plans[j].repair.enabled]
        if p.settings.capacity_provider == "karpenter" and p.repair.enabled and others_on:
            first = karpenter[0]
            expected = (
                [("gpuNodeGroups", j, "repair", "enabled") for j in karpenter if j != first]
                if i == first
                else [("gpuNodeGroups", i, "repair", "enabled")]
            )
            assert keys == expected, (cluster, p.name)
        else:
            assert keys == [], (cluster, p.name)


def check_rule_group(cluster: str) -> None:
    plans = plans_of(cluster)
    rules_of = node_health_rules.rule_group(plans)["rules"]
    # Per group: a paused-repair alert where its repair is on, a not-repaired alert for each.
    paused = [r for r in rules_of if r["alert"] == "GpuNodeRepairPaused"]
    not_repaired = [r for r in rules_of if r["alert"] == "GpuNodeNotRepaired"]
    assert len(paused) == sum(p.repair.enabled for p in plans)
    assert len(not_repaired) == len(plans)

    def names(r: dict) -> bool:
        # The group's name in the node-group label matcher (PromQL-escaped: drop the backslashes).
        return re.search(rf"(?<![\w-]){re.escape(p.name)}(?![\w-])", r["expr"].replace("\\", "")) is not None

    for p in plans:
        assert any(names(r) for r in not_repaired), p.name
        assert any(names(r) for r in paused) == p.repair.enabled, p.name


def check_efa_plans(cluster: str) -> None:
    plans = plans_of(cluster)
    chosen = [p.name for p in efa_values.efa_plans(plans)]
    # Per group: chosen iff its nodes have EFA devices.
    for p in plans:
        assert (p.name in chosen) == (p.efa_devices > 0), p.name
    assert chosen == ["m-efa-a100", "m-blk-h100"] if cluster == "multinode-beside-plain" else chosen == []


def check_efa_plugin_values(cluster: str) -> None:
    plans = plans_of(cluster)
    if not any(p.efa_devices for p in plans):
        with pytest.raises(ValueError, match="needs a group with efa"):
            efa_values.efa_plugin_values(plans)
        return
    values = efa_values.efa_plugin_values(plans)
    assert values["supportedInstanceLabels"]["values"] == [p.name for p in plans if p.efa_devices]
    # It tolerates the EFA groups' taints, and no taint only a group without EFA carries.
    efa_keys = {t.key for p in plans if p.efa_devices for t in p.taints}
    assert {t["key"] for t in values["tolerations"]} == efa_keys


def check_gpu_taints(cluster: str) -> None:
    plans = plans_of(cluster)
    taints = operator_values.gpu_taints(plans)
    assert len(taints) == len(set(taints)), "each taint once"
    assert set(taints) == {t for p in plans for t in p.taints}


def check_profile_configs(cluster: str) -> None:
    plans = plans_of(cluster)
    configs = operator_values.profile_configs(plans)
    assert set(configs) == {p.profile_name for p in plans}
    for p in plans:
        assert dict(configs[p.profile_name]) == dict(p.device_plugin_config), p.name


def check_mig_strategy(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = operator_values.mig_strategy(plans)
        assert all(decided == p.mig_strategy for p in plans)
        _expect("mig_strategy", cluster, decided)


def check_isolation(cluster: str) -> None:
    """The cluster's one gpuOperator.isolation; a group planned with another is refused."""
    for plans in _both_orders(cluster):
        assert operator_values.isolation(plans) == "enforced" == plans[0].isolation
    migrating = plan_groups(settings_of(cluster).gpu_node_groups, isolation="migrating")
    assert operator_values.isolation(migrating) == "migrating"
    for i in range(len(migrating)):
        mixed = [*plans_of(cluster)[:i], migrating[i], *plans_of(cluster)[i + 1 :]]
        with pytest.raises(ValueError, match=r"disagree on gpuOperator.isolation: \['enforced', 'migrating'\]"):
            operator_values.isolation(mixed)


def check_needs_metrics_config_map(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = operator_values.needs_metrics_config_map(plans)
        assert decided == any(operator_values.profiling_fields_unusable(p) for p in plans)
        _expect("needs_metrics_config_map", cluster, decided)


def check_per_pod_gpu_metrics(cluster: str) -> None:
    for plans in _both_orders(cluster):
        decided = operator_values.per_pod_gpu_metrics(plans, CHART, PER_POD)
        assert decided == any(is_shared(p) for p in plans)
        _expect("per_pod_gpu_metrics", cluster, decided)
        assert operator_values.per_pod_gpu_metrics(plans, CHART, None) is False


def check_dcgm_exporter_values(cluster: str) -> None:
    for plans in _both_orders(cluster):
        env = {e["name"] for e in operator_values.dcgm_exporter_values(plans, CHART, PER_POD, "gpu").get("env", [])}
        assert ("KUBERNETES_VIRTUAL_GPUS" in env) == any(is_shared(p) for p in plans)
        unusable = any(operator_values.profiling_fields_unusable(p) for p in plans)
        assert ("DCGM_EXPORTER_CONFIGMAP_DATA" in env) == unusable


def check_gpu_operator_values(cluster: str) -> None:
    for plans in _both_orders(cluster):
        values = operator_values.gpu_operator_values(plans, CHART)
        tolerations = values["daemonsets"]["tolerations"]
        for p in plans:
            for taint in p.taints:
                assert any(placement.tolerates(t, taint) for t in tolerations), (p.name, taint)
        assert set(values["devicePlugin"]["config"]["data"]) == {p.profile_name for p in plans}
        assert ("migManager" in values) == any(is_mig(p) for p in plans)


def check_mig_manager_values(cluster: str) -> None:
    for plans in _both_orders(cluster):
        # Off (the boot stage applies the layouts) where some group has MIG; the chart's own elsewhere.
        expected = {"enabled": False} if any(is_mig(p) for p in plans) else {}
        assert operator_values.mig_manager_values(plans) == expected


def _alert_checks(alerts: Sequence[dict], plans: Plans) -> None:
    per_group = [a["labels"]["node_group"] for a in alerts if "node_group" in a.get("labels", {})]
    assert per_group == [p.name for p in plans]
    (memory,) = [a for a in alerts if a["alert"] == "GpuMemoryNearFull"]
    assert ("GPU_I_ID" in memory["expr"]) == any(is_mig(p) for p in plans)
    (missing,) = [a for a in alerts if a["alert"] == "GpuExporterMissing"]
    for resource in {r for p in plans for r in p.advertised_resources}:
        assert resource.replace(".", "_").replace("/", "_").replace("-", "_") in missing["expr"], resource


def check_alert_rules(cluster: str) -> None:
    for plans in _both_orders(cluster):
        _alert_checks(rules.alert_rules(plans, THRESHOLDS), plans)


def check_rule_spec(cluster: str) -> None:
    for plans in _both_orders(cluster):
        _alert_checks(rules.rule_spec(plans, THRESHOLDS)["groups"][0]["rules"], plans)


def check_slot_shares(cluster: str) -> None:
    plans = plans_of(cluster)
    assert dashboard.slot_shares(plans) == [(p.name, p.memory_per_slot_mib) for p in plans]


def check__slot_table(cluster: str) -> None:
    plans = plans_of(cluster)
    rows = dashboard._slot_table(10, plans, 0)["options"]["content"].splitlines()[2 : 2 + len(plans)]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows] == [p.name for p in plans]
    assert [r.split(" | ")[3].removesuffix(" |") for r in rows] == [f"{p.memory_per_slot_mib} MiB" for p in plans]


def _dashboard_checks(cluster: str, panels: Sequence[dict], plans: Plans) -> None:
    by_title = {p["title"]: p for p in panels}
    (memory,) = [p for t, p in by_title.items() if t.startswith("GPU memory used per GPU")]
    assert ("GPU_I_ID" in memory["targets"][0]["expr"]) == any(is_mig(p) for p in plans)
    steps = by_title["GPU memory used per pod (red: a slot's share)"]["fieldConfig"]["defaults"]["thresholds"]["steps"]
    smallest = min(p.memory_per_slot_mib for p in plans)
    assert steps[-1]["value"] == smallest
    _expect("smallest_share", cluster, smallest)


def check_dashboard(cluster: str) -> None:
    for plans in _both_orders(cluster):
        _dashboard_checks(cluster, dashboard.dashboard(plans)["panels"], plans)


def check_dashboard_json(cluster: str) -> None:
    for plans in _both_orders(cluster):
        _dashboard_checks(cluster, json.loads(dashboard.dashboard_json(plans))["panels"], plans)


def check__node_panels(cluster: str) -> None:
    for plans in _both_orders(cluster):
        (memory,) = [p for p in dashboard._node_panels(plans) if p["title"].startswith("GPU memory used per GPU")]
        assert ("GPU_I_ID" in memory["targets"][0]["expr"]) == any(is_mig(p) for p in plans)


def check__pod_panels(cluster: str) -> None:
    for plans in _both_orders(cluster):
        (memory,) = [p for p in dashboard._pod_panels(plans) if p["title"].startswith("GPU memory used per pod")]
        steps = memory["fieldConfig"]["defaults"]["thresholds"]["steps"]
        assert steps[-1]["value"] == min(p.memory_per_slot_mib for p in plans)


def check_gpu_resources(cluster: str) -> None:
    plans = plans_of(cluster)
    assert policy.gpu_resources(plans) == sorted({r for p in plans for r in p.advertised_resources})


def _foreign(team, plans: Plans) -> set[str]:
    """Per group: the taint keys of the groups outside the team that no group of the team carries."""
    mine = {t.key for p in plans if p.name in team.node_groups for t in p.taints}
    return {t.key for p in plans if p.name not in team.node_groups for t in p.taints if t.key not in mine}


def check_foreign_taint_keys(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        assert set(policy.foreign_taint_keys(team, plans)) == _foreign(team, plans), team.name


def check_validations(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        expression = policy.validations(team, plans)[-1]["expression"]
        assert "may not tolerate every taint" in policy.validations(team, plans)[-1]["message"]
        for key in _foreign(team, plans):
            assert json.dumps(key) in expression, (team.name, key)


def check_gpu_taint_keys(cluster: str) -> None:
    plans = plans_of(cluster)
    # Per group: each of its taint keys is one a pod without a GPU may not tolerate.
    for p in plans:
        for t in p.taints:
            assert t.key in policy.gpu_taint_keys(plans), (p.name, t.key)
    assert len(policy.gpu_taint_keys(plans)) == len({t.key for p in plans for t in p.taints})


def check_gpu_taints_expression(cluster: str) -> None:
    plans = plans_of(cluster)
    expression = policy.gpu_taints_expression(plans)
    for p in plans:
        for t in p.taints:
            assert json.dumps(t.key) in expression, (p.name, t.key)


def check_gpu_selectors(cluster: str) -> None:
    plans = plans_of(cluster)
    selectors = policy.gpu_selectors(plans)
    # Per group: its node-group label value, every node label and every instance type select it.
    for p in plans:
        assert p.name in selectors["gpu-eks.io/node-group"], p.name
        for key, value in p.node_labels.items():
            assert value in selectors[key], (p.name, key)
        for instance_type in p.settings.instance_types:
            assert instance_type in selectors["node.kubernetes.io/instance-type"], (p.name, instance_type)


def check_gpu_labels_expression(cluster: str) -> None:
    plans = plans_of(cluster)
    expression = policy.gpu_labels_expression(plans)
    for p in plans:
        assert json.dumps(p.name) in expression, p.name
        for instance_type in p.settings.instance_types:
            assert json.dumps(instance_type) in expression, (p.name, instance_type)


def check_admission_policy(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        text = json.dumps(policy.admission_policy(team, plans))
        for resource in {r for p in plans for r in p.advertised_resources}:
            assert json.dumps(resource).replace('"', '\\"') in text, (team.name, resource)


def check_cases(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        selected = {}
        for case in team_check.cases(team, plans, "img"):
            selector = case["pod"]["spec"].get("nodeSelector", {})
            selected[case["name"]] = selector.get("gpu-eks.io/node-group")
        # Admitted on one of its own groups, refused on another team's.
        assert selected["admitted"] in team.node_groups
        assert selected["outside-groups"] not in team.node_groups


def check_job_spec(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        (container,) = team_check.job_spec(team, plans, "img")["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert json.loads(env["CASES"]) == json.loads(json.dumps(team_check.cases(team, plans, "img")))


def check_gpu_groups_problems(cluster: str) -> None:
    plans = plans_of(cluster)
    assert gpu_groups_problems(plans) == []
    # The rule across names, whichever group repeats a name: the last one named as the first.
    last = plans[-1]
    renamed = (
        *plans[:-1],
        dataclasses.replace(last, settings=last.settings.model_copy(update={"name": plans[0].name})),
    )
    ((key, value, _),) = gpu_groups_problems(renamed)
    assert (key, value) == (("gpuNodeGroups", len(plans) - 1, "name"), plans[0].name)


def check__team_plans(cluster: str) -> None:
    plans = plans_of(cluster)
    for team in teams_of(plans):
        assert [p.name for p in _team_plans(team, plans)] == [p.name for p in plans if p.name in team.node_groups]


def check_teams_problems(cluster: str) -> None:
    plans = plans_of(cluster)
    assert teams_problems(teams_of(plans), plans, reserved=()) == []


def check_unused_groups(cluster: str) -> None:
    plans = plans_of(cluster)
    alpha, beta = teams_of(plans)
    assert unused_groups([alpha, beta], plans) == []
    assert [p.name for _, p in unused_groups([alpha], plans)] == [p.name for p in plans[1:]]
    assert [p.name for _, p in unused_groups([beta], plans)] == [plans[0].name]


def check_slots_at_max_size(cluster: str) -> None:
    plans = plans_of(cluster)
    for resource in {r for p in plans for r in p.advertised_resources}:
        expected = sum(p.advertised_resources.get(resource, 0) * p.settings.scaling.max_size for p in plans)
        assert slots_at_max_size(plans, resource) == expected, resource


def check_oversubscribed_quotas(cluster: str) -> None:
    plans = plans_of(cluster)
    teams = teams_of(plans)
    assert oversubscribed_quotas(teams, plans) == []
    # A quota one above the slots of the team's groups at maxSize, on each team.
    for i, team in enumerate(teams):
        (resource, _), *_ = team.quota.items()
        slots = slots_at_max_size(_team_plans(team, plans), resource)
        over = team.model_copy(update={"quota": {resource: slots + 1}})
        found = oversubscribed_quotas([*teams[:i], over, *teams[i + 1 :]], plans)
        assert (i, resource, slots + 1, slots, "the team's node groups") in found, team.name


#: Each function deciding from several groups' plans ("module:function") and its check.
DECISIONS: dict[str, Callable[[str], None]] = {
    "components.karpenter.values:node_overlay_needed": check_node_overlay_needed,
    "components.karpenter.values:reserved_capacity_needed": check_reserved_capacity_needed,
    "components.efa.values:efa_plans": check_efa_plans,
    "components.karpenter.values:node_repair_needed": check_node_repair_needed,
    "components.autoscaler.values:max_node_provision_time": check_max_node_provision_time,
    "components.check.groups:karpenter_repair_gate_problems": check_karpenter_repair_gate_problems,
    "components.observability.node_health:rule_group": check_rule_group,
    "components.efa.values:efa_plugin_values": check_efa_plugin_values,
    "components.gpu_operator.values:gpu_taints": check_gpu_taints,
    "components.gpu_operator.values:profile_configs": check_profile_configs,
    "components.gpu_operator.values:mig_strategy": check_mig_strategy,
    "components.gpu_operator.values:isolation": check_isolation,
    "components.gpu_operator.values:needs_metrics_config_map": check_needs_metrics_config_map,
    "components.gpu_operator.values:per_pod_gpu_metrics": check_per_pod_gpu_metrics,
    "components.gpu_operator.values:dcgm_exporter_values": check_dcgm_exporter_values,
    "components.gpu_operator.values:gpu_operator_values": check_gpu_operator_values,
    "components.gpu_operator.values:mig_manager_values": check_mig_manager_values,
    "components.observability.rules:alert_rules": check_alert_rules,
    "components.observability.rules:rule_spec": check_rule_spec,
    "components.observability.dashboard:slot_shares": check_slot_shares,
    "components.observability.dashboard:_slot_table": check__slot_table,
    "components.observability.dashboard:dashboard": check_dashboard,
    "components.observability.dashboard:dashboard_json": check_dashboard_json,
    "components.observability.dashboard:_node_panels": check__node_panels,
    "components.observability.dashboard:_pod_panels": check__pod_panels,
    "components.teams.policy:gpu_resources": check_gpu_resources,
    "components.teams.policy:foreign_taint_keys": check_foreign_taint_keys,
    "components.teams.policy:validations": check_validations,
    "components.teams.policy:admission_policy": check_admission_policy,
    "components.teams.policy:gpu_taint_keys": check_gpu_taint_keys,
    "components.teams.policy:gpu_taints_expression": check_gpu_taints_expression,
    "components.teams.policy:gpu_selectors": check_gpu_selectors,
    "components.teams.policy:gpu_labels_expression": check_gpu_labels_expression,
    "components.teams.verification:cases": check_cases,
    "components.teams.verification:job_spec": check_job_spec,
    "components.check.groups:gpu_groups_problems": check_gpu_groups_problems,
    "components.check.teams:_team_plans": check__team_plans,
    "components.check.teams:teams_problems": check_teams_problems,
    "components.check.teams:unused_groups": check_unused_groups,
    "components.check.teams:slots_at_max_size": check_slots_at_max_size,
    "components.check.teams:oversubscribed_quotas": check_oversubscribed_quotas,
}

#: Functions over several groups that decide nothing across them, and why.
NOT_DECISIONS: dict[str, str] = {
    "components.autoscaler.values:extra_args": "hands the plans to max_node_provision_time (test_autoscaler.py)",
    "components.autoscaler.values:autoscaler_values": "hands the plans to extra_args (test_autoscaler.py)",
    "components.check.autoscaler:autoscaler_problems": "each group's own rules (test_autoscaler.py)",
    "components.coldstart.model:render_text": "prints each group's own cold-start model, one after the other",
    "components.composites.declare:declare_gpu_capacity": "declares; its decisions are the functions it calls",
    "components.composites.declare:group_outputs": "each group's outputs from its own plan (test_promises_*)",
    "components.composites.declare:_common_outputs": "each group's outputs from its own plan (test_promises_*)",
    "components.teams.component:_check": "declares a team's check Job; its decisions are cases and job_spec",
}

#: A parameter annotated as a collection of plans or of GPU node groups.
_SEVERAL_GROUPS = re.compile(r"\b(Sequence|Iterable|Collection|list|tuple|Mapping)\[[^\]]*\b(GroupPlan|GpuNodeGroup)\b")


def functions_over_several_groups(root: Path, package: str = "components") -> list[str]:
    """``module:function`` of every function under ``root/package`` with such a parameter."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                if any(a.annotation and _SEVERAL_GROUPS.search(ast.unparse(a.annotation)) for a in arguments):
                    found.append(f"{module}:{node.name}")
    return sorted(found)


def test_every_function_over_several_groups_is_listed():
    found = functions_over_several_groups(ROOT)
    assert "components.karpenter.values:node_overlay_needed" in found
    assert sorted(set(found) - set(DECISIONS) - set(NOT_DECISIONS)) == [], (
        "a new function takes several groups: add it to DECISIONS with a check over the mixed clusters "
        "(or to NOT_DECISIONS, saying why it decides nothing across groups)"
    )
    assert sorted((set(DECISIONS) | set(NOT_DECISIONS)) - set(found)) == [], "listed but gone: take it out"


def test_the_scan_finds_a_new_function_over_several_groups(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "def a(plans: Sequence[GroupPlan]) -> bool: ...\n"
        "def b(plan: GroupPlan) -> bool: ...\n"
        "def c(x: int, *, groups: 'tuple[GroupPlan, ...]') -> bool: ...\n"
        "def d(groups: Mapping[str, GpuNodeGroup]) -> None: ...\n"
        "def e(settings: Sequence[GpuNodeGroupSettings]) -> None: ...\n"
    )
    assert functions_over_several_groups(tmp_path, "pkg") == ["pkg.m:a", "pkg.m:c", "pkg.m:d"]


def test_the_mixed_clusters_differ_in_what_the_decisions_read():
    """Each yes/no decision is true on one cluster and false on another, and each cluster has
    groups on both sides of what a decision reads somewhere (else it could not catch any vs all)."""
    for decision, per_cluster in EXPECTED.items():
        assert len(set(per_cluster.values())) > 1, decision
        assert set(per_cluster) == set(CLUSTERS), decision
    for cluster in CLUSTERS:
        plans = plans_of(cluster)
        assert len(plans) >= 2
        readings = [
            is_shared,
            is_mig,
            needs_node_overlay,
            operator_values.profiling_fields_unusable,
            lambda p: p.efa_devices > 0,
            lambda p: p.settings.capacity_reservation is not None,
        ]
        assert any(len({read(p) for p in plans}) > 1 for read in readings), cluster


@pytest.mark.parametrize("decision", sorted(DECISIONS))
def test_each_decision_over_the_mixed_clusters(decision: str):
    for cluster in CLUSTERS:
        DECISIONS[decision](cluster)


@pytest.mark.parametrize("attempt", sorted(REFUSED))
def test_a_multi_zone_efa_group_is_refused_beside_the_others(attempt: str):
    """An EFA group without availabilityZone (its nodes would spread over every zone of its
    subnets, and EFA traffic does not cross zones) is refused with its key, beside a plain group."""
    group, key = REFUSED[attempt]
    with pytest.raises(ConfigError) as info:
        load_settings(
            {
                "clusterName": attempt,
                "gpuNodeGroups": [GROUPS["managed-exclusive-a10g"], {k: v for k, v in group.items() if v is not None}],
                "autoscaler": {"enabled": False},
            }
        )
    assert [(p.key, p.received) for p in info.value.problems] == [(key, None)]
    assert "EFA traffic stays in one Availability Zone" in info.value.problems[0].expected
