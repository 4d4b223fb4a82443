"""The capacity providers' facts in one home (issue 43, item 3): each provider's description as
literals, and no module of ``components`` comparing a provider's name (they read the facts)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from components.catalog import efa
from components.config.capacity_provider import (
    KARPENTER,
    KARPENTER_UNREGISTERED,
    MANAGED_NODE_GROUP,
    PROVIDERS,
    CapacityProvider,
)
from components.config.groups import GpuNodeGroupSettings
from tests.support.paths import ROOT


def facts(provider: CapacityProvider) -> dict[str, object]:
    """Every fact of ``provider``, its derived ones too."""
    return {f.name: getattr(provider, f.name) for f in dataclasses.fields(provider)} | {
        "auto_scaling_group": provider.auto_scaling_group
    }


def test_each_provider_described():
    assert PROVIDERS == {"managedNodeGroup": MANAGED_NODE_GROUP, "karpenter": KARPENTER}
    assert facts(MANAGED_NODE_GROUP) == {
        "name": "managedNodeGroup",
        "node_pool": False,
        "auto_scaling_group": True,
        "writes_node_labels": False,
        "user_data_base64": True,
        "startup_taints": (),
        "reboots_before_registering": True,
        "picks_reserved_offerings": False,
        "reservation_by_id_only": False,
        "efa_interfaces": efa.efa_interfaces,
        "efa_enis_taken": 0,
        "huge_pages": True,
        "label_domains": (),
        "max_root_volume_gib": None,
        "repair_gate": False,
        "repair_by": "eks nodeRepairConfig",
    }
    assert facts(KARPENTER) == {
        "name": "karpenter",
        "node_pool": True,
        "auto_scaling_group": False,
        "writes_node_labels": True,
        "user_data_base64": False,
        "startup_taints": (KARPENTER_UNREGISTERED,),
        "reboots_before_registering": False,
        "picks_reserved_offerings": True,
        "reservation_by_id_only": True,
        "efa_interfaces": efa.karpenter_interfaces,
        "efa_enis_taken": 1,
        "huge_pages": False,
        "label_domains": ("karpenter.sh", "karpenter.k8s.aws"),
        "max_root_volume_gib": 59000,
        "repair_gate": True,
        "repair_by": "karpenter nodeRepair",
    }
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
