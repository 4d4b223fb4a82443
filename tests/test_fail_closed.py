"""A GPU node takes no pod until its boot stage succeeded (issue 40): the taints kubelet registers a
node with, from the NodeConfig documents nodeadm reads in their order, when the stage's shell part
never ran, when the stage succeeded and when it failed, on managed node groups and on Karpenter; and
who tolerates the pending taint (no operator DaemonSet, no GPU pod of a group)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.catalog import mig as mig_catalog
from components.check.loading import load_settings
from components.cluster.node_monitoring import DCGM_TOLERATIONS
from components.config.groups import Taint
from components.gpu_operator.values import gpu_operator_values
from components.plan import boot, userdata
from components.plan import karpenter as objects
from components.plan.group import GroupPlan
from components.plan.placement import tolerates
from tests.support.reference import CHART_VERSIONS, observed_path
from tests.support.standins import nvidia_smi as standin
from tests.support.standins.boot_node import Node

ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 1}
#: Groups that differ in what the registration reads: provider, MIG or not, taints or none.
GROUPS = [
    {"name": "m-mig", "instanceTypes": ["p4d.24xlarge"], "migStrategy": "mixed", "mig": {"layout": "all-balanced"}},
    {
        "name": "k-mig",
        "capacityProvider": "karpenter",
        "instanceTypes": ["p5.48xlarge"],
        "migStrategy": "mixed",
        "taints": [],
        "mig": {"migDevices": {"1g.10gb": 4, "3g.40gb": 1}},
    },
    {
        "name": "m-ts",
        "instanceTypes": ["g5.xlarge"],
        "migStrategy": "mixed",
        "taints": [
            {"key": "team", "value": "ml", "effect": "NoExecute"},
            {"key": "spot", "effect": "PreferNoSchedule"},
        ],
        "timeSlicing": {"replicas": 2},
    },
    {"name": "k-ex", "capacityProvider": "karpenter", "instanceTypes": ["g6.xlarge"], "migStrategy": "mixed"},
]
PENDING = "gpu-eks.io/boot-stage=pending:NoSchedule"
UNREGISTERED = "karpenter.sh/unregistered:NoExecute"
#: What kubelet registers a node of each group with once its stage succeeded (literals).
WORKING = {
    "m-mig": ["nvidia.com/gpu=true:NoSchedule"],
    "k-mig": [UNREGISTERED],
    "m-ts": ["team=ml:NoExecute", "spot:PreferNoSchedule"],
    "k-ex": ["nvidia.com/gpu=true:NoSchedule", UNREGISTERED],
}
#: The stand-in's failure that fails each group's stage, and the reason it gives.
FAILURE = {"m-mig": ("create", "mig-layout"), "k-mig": ("enable", "mig-mode"), "m-ts": ("toolkit", "isolation")}
FAILURE["k-ex"] = FAILURE["m-ts"]


@pytest.fixture(scope="module")
def plans() -> dict[str, GroupPlan]:
    settings = load_settings(
        {
            "clusterName": "c",
            "autoscaler": {"enabled": False},
            "gpuNodeGroups": [{"scaling": ZERO, **g} for g in GROUPS],
        }
    )
    return {p.name: p for p in settings.plans}


@pytest.fixture(scope="module")
def standin_port() -> Iterator[int]:
    """The nvidia-smi stand-in, for the runs of the boot scripts (the recordings it needs may be absent)."""
    observed_path("nvidia-smi-h.txt")
    with standin.served() as port:
        Node.port = port
        yield port


def user_data_documents(plan: GroupPlan) -> list[dict[str, Any]]:
    """The NodeConfig documents nodeadm reads from the instance's user data, in order.

    Managed: EKS's own NodeConfig (cluster details, no kubelet taints) first, then the launch
    template's. Karpenter: the EC2NodeClass's parts, then Karpenter's NodeConfig, whose kubelet
    config registers the NodePool's taints and its startup taint (aws/karpenter-provider-aws v1.14.1
    pkg/providers/amifamily/resolver.go, bootstrap/nodeadm.go ``generateInlineKubeletConfiguration``).
    """
    eks = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": {"cluster": {"name": "c"}}}
    if plan.settings.capacity_provider != "karpenter":
        parts = userdata.parse_mime(base64.b64decode(plan.user_data).decode())
        return [eks, *(yaml.safe_load(body) for kind, body in parts if kind == userdata.NODECONFIG_CONTENT_TYPE)]
    node_class = objects.ec2_node_class(plan, role="r", discovery="c")
    parts = userdata.parse_mime(node_class["spec"]["userData"])
    pool_taints = objects.node_pool(plan)["spec"]["template"]["spec"].get("taints", [])
    karpenter = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "kubelet": {
                "config": {
                    "registerWithTaints": [*pool_taints, {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
                }
            }
        },
    }
    return [*(yaml.safe_load(body) for kind, body in parts if kind == userdata.NODECONFIG_CONTENT_TYPE), karpenter]


def registered_taints(documents: list[dict[str, Any]]) -> list[str]:
    """The taints kubelet registers the node with: nodeadm appends every document's kubelet flags in
    order (nodeadm/internal/api/merge.go ``mergeKubeletFlags``) and merges their kubelet config; a
    flag wins over the config file (kubernetes/kubernetes 293a53f2 cmd/kubelet/app/server.go
    ``kubeletConfigFlagPrecedence``), and of several ``--register-with-taints`` the last one
    (kubernetes/kubernetes ddd467a0 pkg/util/flag/flags.go ``RegisterWithTaintsVar.Set`` replaces
    the list; an empty value clears it)."""
    flags = [f for d in documents for f in d["spec"].get("kubelet", {}).get("flags", [])]
    values = [f.split("=", 1)[1] for f in flags if f.startswith("--register-with-taints=")]
    if values:
        return [t for t in values[-1].split(",") if t]
    config: dict[str, Any] = {}
    for d in documents:
        config.update(d["spec"].get("kubelet", {}).get("config", {}))
    return [Taint.model_validate(t).kubelet_form() for t in config.get("registerWithTaints", [])]


def stage_drop_in(tmp_path, plan: GroupPlan, fail: tuple[str, ...] = ()) -> dict[str, Any]:
    """The nodeadm drop-in the group's boot script writes on a node of its GPUs (the stand-in's)."""
    model = mig_catalog.FAMILY_MIG_GPU.get(plan.instance.family.name, "H100-80GB-HBM3")
    node = Node(tmp_path, model, plan.gpus_per_node, fail=fail)
    rc, _, err = node.run(plan.boot.script)
    assert rc == (3 if fail else 0), err
    return node.drop_in_document()


@pytest.mark.parametrize("group", [g["name"] for g in GROUPS])
def test_a_node_whose_shell_part_never_ran_registers_pending(plans, group):
    """cloud-init failed, the user data was cut: no drop-in, so the user data's taints hold."""
    assert registered_taints(user_data_documents(plans[group])) == [*WORKING[group], PENDING]


@pytest.mark.parametrize("group", [g["name"] for g in GROUPS])
def test_a_node_whose_stage_succeeded_registers_without_the_pending_taint(plans, group, tmp_path, standin_port):
    documents = [*user_data_documents(plans[group]), stage_drop_in(tmp_path, plans[group])]
    assert registered_taints(documents) == WORKING[group]


@pytest.mark.parametrize("group", [g["name"] for g in GROUPS])
def test_a_node_whose_stage_failed_registers_failed(plans, group, tmp_path, standin_port):
    fail, reason = FAILURE[group]
    documents = [*user_data_documents(plans[group]), stage_drop_in(tmp_path, plans[group], (fail,))]
    assert registered_taints(documents) == [*WORKING[group], f"gpu-eks.io/boot-stage-failed={reason}:NoSchedule"]


@pytest.mark.parametrize("group", [g["name"] for g in GROUPS])
def test_a_first_boot_that_cannot_write_the_drop_in_registers_pending(plans, group, tmp_path, standin_port):
    """The stage succeeds but its drop-in cannot be written (a full or read-only root volume): on the
    node's first boot it exits 3 (the unit's SuccessExitStatus: kubelet starts) and, with no drop-in,
    kubelet registers the user data's taints, the pending one among them (docs/node-boot-stage.md). A
    later boot that cannot write it fails the unit: kubelet does not start."""
    plan = plans[group]
    model = mig_catalog.FAMILY_MIG_GPU.get(plan.instance.family.name, "H100-80GB-HBM3")
    node = Node(tmp_path, model, plan.gpus_per_node)
    node.drop_in.parent.write_text("")  # a file where the drop-in's folder would be: nothing is written
    assert f"SuccessExitStatus={boot.FIRST_BOOT_FAILURE_STATUS}\n" in plan.boot.unit
    rc, _, err = node.run(plan.boot.script)
    assert rc == 3, err
    assert "gpu-eks-boot: FAILED (registration): cannot write" in err
    assert "the node registered before" not in err
    assert not node.drop_in.exists()
    assert registered_taints(user_data_documents(plan)) == [*WORKING[group], PENDING]
    assert (node.state_dir / "kubelet-started").exists()
    # A later boot: the node registered (pending), so a stage that cannot register keeps kubelet down.
    rc, _, err = node.run(plan.boot.script)
    assert rc == 1, err
    assert "the node registered before: its taints stay as they were, so kubelet does not start" in err


def test_only_the_node_monitoring_agent_tolerates_the_pending_and_the_failure_taints(plans):
    """No operator DaemonSet (device plugin, GFD, DCGM exporter, MPS, validator: ``daemonsets``; the
    NFD worker) tolerates them at any pinned chart, nor does a pod that tolerates a group's taints: so
    nothing advertises the node's GPUs and no GPU pod lands. The node monitoring agent's DCGM host
    engine tolerates every taint (cluster/node_monitoring.py): it watches the GPUs, it hands none out."""
    taints = [
        Taint(key="gpu-eks.io/boot-stage", value="pending", effect="NoSchedule"),
        Taint(key="gpu-eks.io/boot-stage-failed", value="mig-layout", effect="NoSchedule"),
    ]
    for version in CHART_VERSIONS:
        values = gpu_operator_values(list(plans.values()), version)
        for tolerations in (
            values["daemonsets"]["tolerations"],
            values["node-feature-discovery"]["worker"]["tolerations"],
        ):
            assert tolerations
            assert not any(tolerates(t, taint) for t in tolerations for taint in taints), (version, tolerations)
    for plan in plans.values():
        assert not any(tolerates(t, taint) for t in plan.tolerations for taint in taints), plan.name
    assert all(any(tolerates(t, taint) for t in DCGM_TOLERATIONS) for taint in taints)
