"""Node health proven without hardware: the node monitoring agent's own fault classes (its XID table and
reasons, aws/eks-node-monitoring-agent v1.7.0) through the settings, the plan and the declared objects,
per capacity provider: which faults reboot, which replace, which only alert; the repair settings
checked against the EKS API's model; what a Karpenter group cannot express."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from components.catalog import node_health as nh
from components.check.loading import load_settings
from components.config import stackfile
from components.config.errors import ConfigError
from components.plan.group import plan_group
from tests.support.paths import ROOT
from tooling.simulation import Simulation, program_from_file, run_program

NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"

#: dcgm_policies.go WellKnownXidCodes at v1.7.0 (c399089), as the agent writes it.
AGENT_WELL_KNOWN_XIDS = [46, 48, 54, 62, 63, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 142, 143, 151, 155, 156, 158]

#: Every reason, what the default actions do on a managed node group with ``repair.overrides: true``
#: and on a Karpenter group. "alertOnly": no repair (NoAction, or a Warning the agent only reports as
#: an event). XID 64 (a row remap that could not be recorded) replaces (issue 41).
DEFAULT_ACTIONS: dict[str, tuple[str, str]] = {
    "NvidiaXID46Error": ("Reboot", "Replace"),
    "NvidiaXID48Error": ("Reboot", "Replace"),
    "NvidiaXID54Error": ("Replace", "Replace"),
    "NvidiaXID62Error": ("Reboot", "Replace"),
    "NvidiaXID63Error": ("Replace", "Replace"),
    "NvidiaXID64Error": ("Replace", "Replace"),
    "NvidiaXID74Error": ("Reboot", "Replace"),
    "NvidiaXID79Error": ("Replace", "Replace"),
    "NvidiaXID95Error": ("Reboot", "Replace"),
    "NvidiaXID109Error": ("Reboot", "Replace"),
    "NvidiaXID110Error": ("Reboot", "Replace"),
    "NvidiaXID119Error": ("Reboot", "Replace"),
    "NvidiaXID120Error": ("Reboot", "Replace"),
    "NvidiaXID136Error": ("Reboot", "Replace"),
    "NvidiaXID140Error": ("Reboot", "Replace"),
    "NvidiaXID142Error": ("Replace", "Replace"),
    "NvidiaXID143Error": ("Reboot", "Replace"),
    "NvidiaXID151Error": ("Reboot", "Replace"),
    "NvidiaXID155Error": ("Reboot", "Replace"),
    "NvidiaXID156Error": ("Reboot", "Replace"),
    "NvidiaXID158Error": ("Reboot", "Replace"),
    "NvidiaDoubleBitError": ("Reboot", "Replace"),
    "NvidiaNVLinkError": ("Reboot", "Replace"),
    "FabricManagerNotRunning": ("Reboot", "Replace"),
    "NvidiaFabricError": ("Replace", "Replace"),
    "NvidiaDeviceCountMismatch": ("Replace", "Replace"),
    "DCGMDiagnosticFailure": ("Replace", "Replace"),
    # The agent lost its host engine: nothing says a GPU failed. Karpenter replaces on any reason.
    "DCGMError": ("alertOnly", "Replace"),
    # Warnings: a Kubernetes event, no condition (dcgm_policies.go handleXidFinding).
    "NvidiaXID13Warning": ("alertOnly", "alertOnly"),
    "NvidiaXID31Warning": ("alertOnly", "alertOnly"),
    "NvidiaPCIeError": ("alertOnly", "alertOnly"),
    "NvidiaThermalError": ("alertOnly", "alertOnly"),
    "NvidiaPageRetirement": ("alertOnly", "alertOnly"),
}

CONFIG = {
    "gpu-eks:clusterName": "nh",
    "gpu-eks:kubernetesVersion": "1.35",
    "gpu-eks:endpointPublicAccessCidrs": ["203.0.113.0/24"],
    "gpu-eks:systemNodeGroup": {
        "instanceTypes": ["m6i.large"],
        "scaling": {"minSize": 2, "desiredSize": 2, "maxSize": 3},
    },
    "gpu-eks:gpuNodeGroups": [
        {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4}},
        {
            "name": "tuned",
            "instanceTypes": ["g4dn.12xlarge"],
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 8},
            "repair": {
                "overrides": True,
                "actions": {"resetGpu": "Replace", "monitoring": "Reboot"},
                "waitMinutes": 5,
                "maxUnhealthyPercent": 25,
                "maxParallelPercent": 50,
            },
        },
        {
            "name": "l4",
            "capacityProvider": "karpenter",
            "instanceTypes": ["g6.xlarge"],
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        },
    ],
}


@pytest.fixture(scope="module")
def sim() -> Simulation:
    return run_program(
        program_from_file(ROOT / "__main__.py"),
        stackfile.cli_config({"aws:region": "us-west-2", **CONFIG}),
        project=stackfile.project_name(ROOT),
        stack="nh",
    )


def settings(*groups: dict[str, Any]):
    return load_settings({"clusterName": "c", "autoscaler": {"enabled": False}, "gpuNodeGroups": list(groups)})


def problems(*groups: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings(*groups)
    return [str(p) for p in info.value.problems]


def declared_actions(sim: Simulation, node_group: str) -> dict[str, str]:
    config = sim.one(NG, node_group).inputs["nodeRepairConfig"]
    return {o["nodeUnhealthyReason"]: o["repairAction"] for o in config["nodeRepairConfigOverrides"]}


# --- The agent's facts --------------------------------------------------------------------------


def test_the_catalog_has_the_agents_well_known_xids_and_nvidias_bucket_of_each():
    assert list(nh.WELL_KNOWN_XIDS) == AGENT_WELL_KNOWN_XIDS
    assert {x for x, b in nh.WELL_KNOWN_XIDS.items() if b != "RESET_GPU"} == {48, 54, 63, 74, 79, 142, 151}
    assert (nh.WELL_KNOWN_XIDS[79], nh.WELL_KNOWN_XIDS[151], nh.WELL_KNOWN_XIDS[142]) == (
        "RESTART_BM",
        "RESTART_VM",
        "CONTACT_SUPPORT",
    )


def test_every_fatal_reason_with_a_fixed_name_has_a_fault_class():
    fixed = {f.reason for f in nh.FAULTS}
    assert fixed == {r for r, (managed, _) in DEFAULT_ACTIONS.items() if not r.endswith("Warning")} - {
        "NvidiaPCIeError",
        "NvidiaThermalError",
        "NvidiaPageRetirement",
    }
    assert len(nh.FAULTS) == 28


# --- Through the settings and the plan ------------------------------------------------------------


@pytest.mark.parametrize("reason", list(DEFAULT_ACTIONS))
def test_each_fault_at_the_default_actions_per_capacity_provider(reason):
    managed, karpenter = settings(
        {"name": "m", "repair": {"overrides": True}},
        {"name": "k", "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}},
    ).plans
    assert (managed.repair.action(reason), karpenter.repair.action(reason)) == DEFAULT_ACTIONS[reason]


@pytest.mark.parametrize("reason", list(DEFAULT_ACTIONS))
def test_without_overrides_eks_acts_on_each_fault_its_own_way(reason):
    """The default form (issue 41): EKS reboots or replaces per reason, and repairs nothing on the two
    reasons its table says None for (EKS User Guide, node-health-nma)."""
    (managed,) = settings({"name": "m"}).plans
    expected = (
        "alertOnly"
        if DEFAULT_ACTIONS[reason][0] == "alertOnly" or reason in ("DCGMError", "DCGMDiagnosticFailure")
        else "eksDefault"
    )
    assert managed.repair.action(reason) == expected


def test_repair_off_only_alerts():
    (p,) = settings({"name": "m", "repair": {"enabled": False}}).plans
    assert {p.repair.action(r) for r in DEFAULT_ACTIONS} == {"alertOnly"}
    assert p.repair.node_repair_config() == {"enabled": False}
    assert p.repair.words() == "repair off"


def test_a_tuned_groups_policy_in_words_and_in_the_eks_api():
    (p,) = settings(
        {
            "name": "m",
            "repair": {
                "overrides": True,
                "actions": {"hardware": "Reboot"},
                "waitMinutes": 3,
                "maxUnhealthyCount": 2,
                "maxParallelPercent": 50,
            },
        }
    ).plans
    assert p.repair.words() == (
        "repair by eks nodeRepairConfig after 3m (resetGpu Reboot, restartInstance Reboot, hardware Reboot, "
        "monitoring NoAction); paused above 2 unhealthy nodes"
    )
    config = p.repair.node_repair_config()
    assert {k: v for k, v in config.items() if k != "nodeRepairConfigOverrides"} == {
        "enabled": True,
        "maxUnhealthyNodeThresholdCount": 2,
        "maxParallelNodesRepairedPercentage": 50,
    }
    assert {o["minRepairWaitTimeMins"] for o in config["nodeRepairConfigOverrides"]} == {3}
    assert p.repair.summary()["atOnce"] == "50%"


@pytest.mark.parametrize(
    "repair",
    [
        {},
        {"enabled": False},
        {"maxUnhealthyPercent": 100, "maxParallelCount": 7, "waitMinutes": 1, "overrides": True},
        {
            "maxUnhealthyCount": 1,
            "maxParallelPercent": 1,
            "overrides": True,
            "actions": {"resetGpu": "NoAction", "hardware": "Reboot"},
        },
    ],
)
def test_the_node_repair_config_is_valid_in_botocores_eks_model(repair):
    (p,) = settings({"name": "m", "repair": repair}).plans
    model = botocore.session.get_session().get_service_model("eks")
    for operation in ("CreateNodegroup", "UpdateNodegroupConfig"):
        params: dict[str, Any] = {
            "clusterName": "c",
            "nodegroupName": "m",
            "nodeRepairConfig": p.repair.node_repair_config(),
        }
        if operation == "CreateNodegroup":
            params |= {"subnets": ["s"], "nodeRole": "arn:aws:iam::123456789012:role/r"}
        report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
        assert not report.has_errors(), report.generate_report()


def test_the_enum_of_actions_is_the_eks_apis():
    shape = botocore.session.get_session().get_service_model("eks").shape_for("RepairAction")
    assert tuple(shape.enum) == nh.REPAIR_ACTIONS == ("Replace", "Reboot", "NoAction")


# --- Through the declared objects -------------------------------------------------------------------


def test_a_managed_group_sends_enabled_and_its_bounds_alone_by_default(sim):
    # Issue 41: the form EKS documents without overrides; EKS applies its own action per reason.
    assert sim.one(NG, "gpu-eks-t4").inputs["nodeRepairConfig"] == {
        "enabled": True,
        "maxParallelNodesRepairedCount": 1.0,
    }


def test_a_managed_group_with_overrides_declares_the_action_of_every_fixed_reason():
    (p,) = settings({"name": "m", "repair": {"overrides": True}}).plans
    config = p.repair.node_repair_config()
    declared = {o["nodeUnhealthyReason"]: o["repairAction"] for o in config["nodeRepairConfigOverrides"]}
    expected = {r: ("NoAction" if m == "alertOnly" else m) for r, (m, _) in DEFAULT_ACTIONS.items()}
    assert declared == {r: a for r, a in expected.items() if r in declared}
    assert len(declared) == 28
    assert declared["NvidiaXID64Error"] == "Replace"


def test_a_tuned_managed_group_declares_its_own_actions_wait_and_bounds(sim):
    declared = declared_actions(sim, "gpu-eks-tuned")
    assert (declared["NvidiaXID48Error"], declared["NvidiaXID79Error"], declared["DCGMError"]) == (
        "Replace",
        "Replace",
        "Reboot",
    )
    config = sim.one(NG, "gpu-eks-tuned").inputs["nodeRepairConfig"]
    assert {k: v for k, v in config.items() if k != "nodeRepairConfigOverrides"} == {
        "enabled": True,
        "maxUnhealthyNodeThresholdPercentage": 25.0,
        "maxParallelNodesRepairedPercentage": 50.0,
    }
    assert {o["minRepairWaitTimeMins"] for o in config["nodeRepairConfigOverrides"]} == {5.0}


def test_a_karpenter_group_turns_on_the_controllers_repair_gate_and_has_no_node_group(sim):
    values = sim.one(RELEASE, "gpu-eks-karpenter-release").inputs["values"]
    assert values["settings"]["featureGates"] == {"nodeOverlay": True, "nodeRepair": True}
    assert sorted(r.name for r in sim.by_type(NG)) == ["gpu-eks-cluster-system", "gpu-eks-t4", "gpu-eks-tuned"]


def test_the_system_node_group_has_no_repair(sim):
    assert "nodeRepairConfig" not in sim.one(NG, "gpu-eks-cluster-system").inputs


def test_the_outputs_name_each_groups_repair_policy(sim):
    policies = {g: out["repairPolicy"] for g, out in sim.outputs["gpuNodeGroups"].items()}
    assert policies == {
        "t4": "repair by eks nodeRepairConfig with EKS's own actions (reboot or replace per reason, after 10m; none "
        "on DCGMDiagnosticFailure, DCGMError); paused above 20% unhealthy once more than 5 nodes",
        "tuned": "repair by eks nodeRepairConfig after 5m (resetGpu Replace, restartInstance Reboot, hardware Replace, "
        "monitoring Reboot); paused above 25% unhealthy",
        "l4": "repair by karpenter nodeRepair after 10m (resetGpu Replace, restartInstance Replace, hardware Replace, "
        "monitoring Replace); paused above 20% unhealthy (rounded up)",
    }


def test_karpenter_repair_off_leaves_the_gate_off():
    from components.karpenter import values

    plans = settings(
        {
            "name": "k",
            "capacityProvider": "karpenter",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "repair": {"enabled": False},
        },
        {"name": "m"},
    ).plans
    assert values.node_repair_needed(plans) is False
    assert values.node_repair_needed(settings({"name": "m"}).plans) is False


# --- Refused, each with its key and why -----------------------------------------------------------


def test_each_bad_value_is_refused_against_the_eks_model():
    assert problems(
        {
            "name": "m",
            "repair": {
                "actions": {"resetGpu": "Restart"},
                "waitMinutes": 0,
                "maxUnhealthyPercent": 101,
                "maxParallelCount": 0,
            },
        }
    ) == [
        'gpu-eks:gpuNodeGroups[0].repair.actions.resetGpu: received "Restart"; expected Reboot, Replace or NoAction '
        "(the EKS API's RepairAction enum, botocore eks NodeRepairConfigOverrides.repairAction)",
        "gpu-eks:gpuNodeGroups[0].repair.waitMinutes: received 0; expected an integer ≥ 1 (the EKS API's "
        "NonZeroInteger: min 1, botocore eks NodeRepairConfig)",
        "gpu-eks:gpuNodeGroups[0].repair.maxUnhealthyPercent: received 101; expected an integer from 1 to 100 (the "
        "EKS API's PercentCapacity: min 1, max 100, botocore eks NodeRepairConfig)",
        "gpu-eks:gpuNodeGroups[0].repair.maxParallelCount: received 0; expected an integer ≥ 1 (the EKS API's "
        "NonZeroInteger: min 1, botocore eks NodeRepairConfig)",
    ]


def test_a_percent_and_a_count_of_one_bound_are_refused():
    assert problems({"name": "m", "repair": {"maxUnhealthyPercent": 20, "maxUnhealthyCount": 2}}) == [
        "gpu-eks:gpuNodeGroups[0].repair.maxUnhealthyCount: received 2; expected not with maxUnhealthyPercent: the "
        "EKS API takes maxUnhealthyNodeThresholdPercentage or maxUnhealthyNodeThresholdCount, not both (botocore eks "
        "NodeRepairConfig: 'you cannot also set ... at the same time')"
    ]


def test_what_karpenter_cannot_express_is_refused_per_key():
    lines = problems(
        {
            "name": "k",
            "capacityProvider": "karpenter",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "repair": {
                "actions": {"resetGpu": "Reboot"},
                "waitMinutes": 5,
                "maxUnhealthyCount": 1,
                "maxParallelPercent": 10,
            },
        }
    )
    assert [line.split(";")[0] for line in lines] == [
        'gpu-eks:gpuNodeGroups[0].repair.actions: received {"resetGpu": "Reboot"}',
        "gpu-eks:gpuNodeGroups[0].repair.waitMinutes: received 5",
        "gpu-eks:gpuNodeGroups[0].repair.maxUnhealthyCount: received 1",
        "gpu-eks:gpuNodeGroups[0].repair.maxParallelPercent: received 10",
    ]
    assert "Karpenter waits a fixed 10 minutes (RepairPolicies TolerationDuration)" in lines[1]
    assert "20% of the NodePool, rounded up" in lines[2]


def test_karpenter_groups_must_agree_on_repair():
    karpenter = {"capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}
    assert problems(
        {"name": "a", **karpenter}, {"name": "m"}, {"name": "b", **karpenter, "repair": {"enabled": False}}
    ) == [
        "gpu-eks:gpuNodeGroups[2].repair.enabled: received false; expected true, as gpuNodeGroups[0] (a): Karpenter's "
        "repair is one feature gate for every NodePool (chart 1.14.1 settings.featureGates.nodeRepair), so its groups "
        "are repaired all or none"
    ]


# --- The agent's add-on -------------------------------------------------------------------------------


def test_the_agent_is_pinned_per_minor_and_off_where_none_is_pinned():
    base = {"clusterName": "c", "autoscaler": {"enabled": False}}
    assert load_settings({**base, "kubernetesVersion": "1.35"}).node_monitoring_addon_version == "v1.7.0-eksbuild.1"
    assert load_settings({**base, "kubernetesVersion": "1.36"}).node_monitoring_addon_version == "v1.7.0-eksbuild.1"
    pinned = load_settings({**base, "nodeMonitoringAgent": {"addonVersion": "v1.6.7-eksbuild.2"}})
    assert pinned.node_monitoring_addon_version == "v1.6.7-eksbuild.2"
    assert load_settings({**base, "nodeMonitoringAgent": {"enabled": False}}).node_monitoring_addon_version is None


def test_the_agents_pods_count_on_gpu_nodes_not_on_system_nodes():
    on = settings({"name": "t4"}, {"name": "g", "instanceTypes": ["g5g.xlarge"]})
    off = load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "nodeMonitoringAgent": {"enabled": False},
            "gpuNodeGroups": [{"name": "t4"}, {"name": "g", "instanceTypes": ["g5g.xlarge"]}],
        }
    )
    # g4dn.xlarge: max pods 29, 7 DaemonSet pods + the agent and dcgm-server; g5g.xlarge: max pods
    # 58, the agent only (dcgm-server is amd64 only).
    assert [p.usable_pod_slots for p in on.plans] == [20, 50]
    assert [p.usable_pod_slots for p in off.plans] == [22, 51]
    assert plan_group(on.gpu_node_groups[0]).usable_pod_slots == 22  # a plan from the group alone counts no add-on


def test_an_addon_version_that_is_not_one_is_refused():
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", "nodeMonitoringAgent": {"addonVersion": "1.7.0"}})
    (line,) = [str(p) for p in info.value.problems]
    assert line == (
        'gpu-eks:nodeMonitoringAgent.addonVersion: received "1.7.0"; expected an EKS add-on version such as '
        "v1.7.0-eksbuild.1 (aws eks describe-addon-versions)"
    )


def _repair_warnings(s) -> list[str]:
    from components.check.warnings import settings_warnings

    return [str(w) for w in settings_warnings(s) if ".repair." in w.key]


def test_repair_with_the_agent_turned_off_is_warned_and_nothing_else_is():
    from components import load_capacity_settings

    off = load_settings(
        {
            "clusterName": "c",
            "nodeMonitoringAgent": {"enabled": False},
            "gpuNodeGroups": [{"name": "t4"}, {"name": "x", "repair": {"enabled": False}}],
        }
    )
    assert _repair_warnings(off) == [
        "gpu-eks:gpuNodeGroups[0].repair.enabled: received true; expected nodeMonitoringAgent on (the "
        "eks-node-monitoring-agent add-on): without it no GPU fault reaches repair, only Ready"
    ]
    # g5g (agent v1.7.0 skips arm64) and an existing cluster (its agent is its owner's): documented,
    # not warned (docs/node-health.md).
    assert _repair_warnings(settings({"name": "g", "instanceTypes": ["g5g.xlarge"]})) == []
    assert (
        _repair_warnings(load_capacity_settings({"kubernetesVersion": "1.35", "gpuNodeGroups": [{"name": "t4"}]})) == []
    )


# --- The change-impact summary ----------------------------------------------------------------------


def _item(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {"type": typ, "name": name, "urn": f"urn:pulumi:dev::p::{typ}::{name}", "inputs": inputs}


def test_the_impact_summary_names_a_groups_new_repair_policy_and_replaces_nothing():
    from components.review import impact

    (p,) = settings({"name": "t4", "repair": {"maxUnhealthyCount": 2}}).plans
    before = {"amiType": "AL2023_x86_64_NVIDIA", "scalingConfig": {"minSize": 0, "desiredSize": 0, "maxSize": 4}}
    old = {"project": "p", "resources": [_item(NG, "gpu-eks-t4", before)]}
    new = {
        "project": "p",
        "resources": [_item(NG, "gpu-eks-t4", {**before, "nodeRepairConfig": p.repair.node_repair_config()})],
    }
    summary = impact.summarize("dev", old, new)
    (ng,) = summary.resources
    assert (ng.action, ng.changed, summary.node_rolls) == ("update", ["nodeRepairConfig"], [])
    assert summary.notes == [
        "node group gpu-eks-t4: repair on (EKS's default actions); paused above 2 unhealthy; at most 1 at once (was: "
        "repair off); nodeRepairConfig is updated in place (EKS UpdateNodegroupConfig): no node is replaced by this "
        "change"
    ]


def test_the_impact_summary_says_that_dropped_overrides_may_stay_on_eks():
    """A group that stops sending its overrides (0.3.0's 28 -> the default): the note says it is not
    known whether EKS drops them, and how to check. Not said where overrides were never sent."""
    from components.review import impact

    (with_overrides,) = settings({"name": "t4", "repair": {"overrides": True}}).plans
    (default,) = settings({"name": "t4"}).plans
    assert len(with_overrides.repair.node_repair_config()["nodeRepairConfigOverrides"]) == 28

    def render(config: dict[str, Any]) -> dict[str, Any]:
        return {"project": "p", "resources": [_item(NG, "gpu-eks-t4", {"nodeRepairConfig": config})]}

    summary = impact.summarize(
        "dev", render(with_overrides.repair.node_repair_config()), render(default.repair.node_repair_config())
    )
    (note,) = summary.notes
    assert note.endswith(
        "nodeRepairConfig is updated in place (EKS UpdateNodegroupConfig): no node is replaced by this change; "
        "whether EKS drops the nodeRepairConfigOverrides no longer sent is not verified: check "
        "`aws eks describe-nodegroup` after the update (UPGRADING.md)"
    )
    back = impact.summarize(
        "dev", render(default.repair.node_repair_config()), render(with_overrides.repair.node_repair_config())
    )
    assert [n for n in back.notes if "not verified" in n] == []


def test_the_impact_summary_says_when_karpenters_repair_gate_turns_on():
    from components.review import impact

    def release(gate: bool) -> dict[str, Any]:
        values = {"settings": {"featureGates": {"nodeOverlay": True, "nodeRepair": gate}}}
        return _item(
            RELEASE,
            "gpu-eks-karpenter-release",
            {"chart": "oci://public.ecr.aws/karpenter/karpenter", "values": values},
        )

    summary = impact.summarize(
        "dev", {"project": "p", "resources": [release(False)]}, {"project": "p", "resources": [release(True)]}
    )
    assert summary.notes == [
        "Karpenter release gpu-eks-karpenter-release: node repair on for every NodePool "
        "(settings.featureGates.nodeRepair): the controller restarts, no node is replaced by this change"
    ]


#: aws/eks-node-monitoring-agent v1.7.0 charts/configuration.schema.json: the keys of NodeAgent and
#: DCGMAgent (each additionalProperties false), and their types (Tolerations: an array of objects).
AGENT_KEYS = {
    "additionalArgs": "array",
    "affinity": "object",
    "monitors": "object",
    "nodeSelector": "object",
    "podAnnotations": "object",
    "podLabels": "object",
    "priorityClassName": "string",
    "probePort": "integer",
    "resizePolicy": "array",
    "resources": "object",
    "tolerations": "array",
}
DCGM_KEYS = dict(AGENT_KEYS)
for _key in ("additionalArgs", "monitors", "probePort"):
    del DCGM_KEYS[_key]


def test_the_addon_configuration_is_one_its_configuration_schema_takes():
    """What EKS validates an add-on's configurationValues against (the schema above)."""
    import jsonschema

    from components.cluster import node_monitoring as values

    def level(keys: dict[str, str]) -> dict[str, Any]:
        props = {k: {"type": t} for k, t in keys.items()}
        props["tolerations"]["items"] = {"type": "object"}
        return {"type": "object", "additionalProperties": False, "properties": props}

    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "global": {"type": "object"},
            "extraObjects": {"type": "array"},
            "nodeAgent": level(AGENT_KEYS),
            "dcgmAgent": level(DCGM_KEYS),
        },
    }
    config = values.addon_configuration()
    jsonschema.validate(config, schema)
    assert sorted(config) == ["dcgmAgent", "nodeAgent"]
    assert config["dcgmAgent"] == {"tolerations": [{"operator": "Exists"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"dcgmAgent": {"toleration": []}}, schema)


def test_a_new_groups_policy_is_named_without_a_before():
    from components.review import impact

    (p,) = settings({"name": "t4", "repair": {"enabled": False}}).plans
    new = {"project": "p", "resources": [_item(NG, "gpu-eks-t4", {"nodeRepairConfig": p.repair.node_repair_config()})]}
    summary = impact.summarize("dev", {"project": "p", "resources": []}, new)
    assert summary.notes == ["node group gpu-eks-t4 (new): repair off"]


def test_the_docs_table_of_actions_is_what_the_defaults_do():
    """docs/node-health.md, "Which faults reboot, which replace, which only alert": one row per fault
    class, its managed-node-group and Karpenter columns as the plans say."""
    managed, karpenter = settings(
        {"name": "m"},
        {"name": "k", "capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}},
    ).plans
    words = {"Reboot": "Reboot", "Replace": "Replace", "NoAction": "alert only (`NoAction`)"}
    rows = {}
    for line in (ROOT / "docs" / "node-health.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].strip("`") in nh.FAULT_CLASSES:
            rows[cells[0].strip("`")] = (cells[2], cells[3])
    assert rows == {c: (words[managed.repair.actions[c]], words[karpenter.repair.actions[c]]) for c in nh.FAULT_CLASSES}


# --- Issue 41: the default form, and the per-fault overrides behind a setting --------------------------


def test_actions_or_a_wait_without_overrides_are_refused_with_their_keys():
    assert problems({"name": "m", "repair": {"actions": {"hardware": "Reboot"}, "waitMinutes": 3}}) == [
        'gpu-eks:gpuNodeGroups[0].repair.actions: received {"hardware": "Reboot"}; expected no actions without '
        "overrides: true: it is a value of the nodeRepairConfigOverrides, which are sent only with overrides (without "
        "them EKS applies its own action per reason)",
        "gpu-eks:gpuNodeGroups[0].repair.waitMinutes: received 3; expected no waitMinutes without overrides: true: it "
        "is a value of the nodeRepairConfigOverrides, which are sent only with overrides (without them EKS applies its "
        "own action per reason)",
    ]


def test_overrides_are_refused_on_a_karpenter_group():
    (line,) = problems(
        {
            "name": "k",
            "capacityProvider": "karpenter",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "repair": {"overrides": True},
        }
    )
    assert line.startswith(
        "gpu-eks:gpuNodeGroups[0].repair.overrides: received true; expected no overrides on a Karpenter group: "
        "Karpenter takes no per-reason overrides"
    )


def test_the_default_form_is_the_eks_models_and_names_no_action():
    (p,) = settings({"name": "m", "repair": {"maxUnhealthyPercent": 30}}).plans
    assert p.repair.node_repair_config() == {
        "enabled": True,
        "maxUnhealthyNodeThresholdPercentage": 30,
        "maxParallelNodesRepairedCount": 1,
    }
    assert p.repair.summary() == {
        "enabled": True,
        "by": "eks nodeRepairConfig",
        "actions": "eksDefault",
        "pausedAbove": "30% unhealthy",
        "atOnce": "1",
    }
    model = botocore.session.get_session().get_service_model("eks")
    shape = model.shape_for("NodeRepairConfig")
    # Every member optional: enabled and the bounds alone are a whole NodeRepairConfig.
    assert shape.required_members == []
    assert set(p.repair.node_repair_config()) < set(shape.members)
