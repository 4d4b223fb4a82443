"""The capacity providers' facts in one home (issue 43, item 3): each provider's description as
literals, and no module of ``components`` comparing a provider's name (they read the facts)."""

from __future__ import annotations

import ast
from pathlib import Path

from components.catalog import efa
from components.config.capacity_provider import (
    KARPENTER,
    KARPENTER_UNREGISTERED,
    MANAGED_NODE_GROUP,
    PROVIDERS,
)
from components.config.groups import GpuNodeGroupSettings
from tests.support import ROOT


def test_each_provider_described():
    assert PROVIDERS == {"managedNodeGroup": MANAGED_NODE_GROUP, "karpenter": KARPENTER}
    assert (
        MANAGED_NODE_GROUP.node_pool,
        MANAGED_NODE_GROUP.auto_scaling_group,
        MANAGED_NODE_GROUP.writes_node_labels,
        MANAGED_NODE_GROUP.startup_taints,
        MANAGED_NODE_GROUP.reboots_before_registering,
        MANAGED_NODE_GROUP.picks_reserved_offerings,
        MANAGED_NODE_GROUP.reservation_by_id_only,
        MANAGED_NODE_GROUP.efa_interfaces,
        MANAGED_NODE_GROUP.efa_enis_taken,
        MANAGED_NODE_GROUP.huge_pages,
        MANAGED_NODE_GROUP.label_domains,
        MANAGED_NODE_GROUP.max_root_volume_gib,
        MANAGED_NODE_GROUP.repair_gate,
        MANAGED_NODE_GROUP.repair_by,
    ) == (
        False,
        True,
        False,
        (),
        True,
        False,
        False,
        efa.efa_interfaces,
        0,
        True,
        (),
        None,
        False,
        "eks nodeRepairConfig",
    )
    assert (
        KARPENTER.node_pool,
        KARPENTER.auto_scaling_group,
        KARPENTER.writes_node_labels,
        KARPENTER.startup_taints,
        KARPENTER.reboots_before_registering,
        KARPENTER.picks_reserved_offerings,
        KARPENTER.reservation_by_id_only,
        KARPENTER.efa_interfaces,
        KARPENTER.efa_enis_taken,
        KARPENTER.huge_pages,
        KARPENTER.label_domains,
        KARPENTER.max_root_volume_gib,
        KARPENTER.repair_gate,
        KARPENTER.repair_by,
    ) == (
        True,
        False,
        True,
        (KARPENTER_UNREGISTERED,),
        False,
        True,
        True,
        efa.karpenter_interfaces,
        1,
        False,
        ("karpenter.sh", "karpenter.k8s.aws"),
        59000,
        True,
        "karpenter nodeRepair",
    )
    assert KARPENTER_UNREGISTERED.kubelet_form() == "karpenter.sh/unregistered:NoExecute"


def test_a_group_and_its_plan_carry_their_providers_description():
    from components.plan.group import plan_group

    for name, provider in PROVIDERS.items():
        scaling = {"minSize": 0, "desiredSize": 0, "maxSize": 2}
        group = GpuNodeGroupSettings.model_validate({"name": "g", "capacityProvider": name, "scaling": scaling})
        assert group.provider is provider
        assert plan_group(group).provider is provider


#: The settings values of the providers, as a comparison would spell them.
_NAMES = {"karpenter", "managedNodeGroup"}


def provider_name_comparisons(folder: Path) -> list[str]:
    """``path:line`` of every comparison under ``folder`` with a provider's name, or with a
    ``capacity_provider`` attribute (the settings' string): code reads the provider's facts instead."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            operands += [e for o in operands if isinstance(o, ast.Tuple | ast.List | ast.Set) for e in o.elts]
            if any(
                (isinstance(o, ast.Constant) and o.value in _NAMES)
                or (isinstance(o, ast.Attribute) and o.attr == "capacity_provider")
                for o in operands
            ):
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno}")
    return found


def test_no_module_compares_a_providers_name():
    assert provider_name_comparisons(ROOT / "components") == []


def test_the_scan_finds_a_comparison_of_a_providers_name(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        'a = g.capacity_provider == "x"\n'
        'b = "karpenter" != name\n'
        "c = g.provider.node_pool\n"
        'd = name in ("managedNodeGroup",)\n'
        'e = PROVIDERS["karpenter"]\n'
    )
    assert provider_name_comparisons(tmp_path / "pkg") == ["pkg/m.py:1", "pkg/m.py:2", "pkg/m.py:4"]
