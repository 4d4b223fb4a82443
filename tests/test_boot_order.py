"""The boot stage's systemd ordering (components/plan/boot.py) against the AMI's own units
(../shared/reference/amazon-eks-ami v20260724), and kubelet's drop-in."""

from __future__ import annotations

import configparser

from components.config.capacity_provider import MANAGED_NODE_GROUP
from components.plan import boot
from tests.support.reference import reference_path

# -- the order against the AMI's units --------------------------------------------------------------

AMI_UNITS = (
    "kubelet.service",
    "nodeadm-boot-hook.service",
    "nodeadm-config.service",
    "nodeadm-run.service",
    "nvidia-kmod-load.service",
    "set-nvidia-clocks.service",
)


def unit_edges(name: str, text: str) -> set[tuple[str, str]]:
    """(earlier, later) pairs of a unit file's After= and Before=."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    unit = parser["Unit"] if parser.has_section("Unit") else {}
    edges = {(other, name) for other in unit.get("After", "").split()}
    edges |= {(name, other) for other in unit.get("Before", "").split()}
    return edges


def ordering() -> set[tuple[str, str]]:
    edges: set[tuple[str, str]] = set()
    for unit in AMI_UNITS:
        edges |= unit_edges(unit, reference_path(f"amazon-eks-ami/v20260724/systemd/{unit}").read_text())
    stage = boot.boot_stage(8, None, None, (), MANAGED_NODE_GROUP)
    edges |= unit_edges(boot.UNIT_NAME, stage.unit)
    edges |= unit_edges("kubelet.service", stage.kubelet_drop_in)
    return edges


def precedes(edges: set[tuple[str, str]], first: str, then: str) -> bool:
    seen, todo = set(), [first]
    while todo:
        unit = todo.pop()
        for a, b in edges:
            if a == unit and b not in seen:
                if b == then:
                    return True
                seen.add(b)
                todo.append(b)
    return False


def test_the_stage_runs_after_the_driver_and_the_amis_gpu_units_and_before_nodeadm_run_and_kubelet():
    edges = ordering()
    assert precedes(edges, boot.UNIT_NAME, "nodeadm-run.service")
    assert precedes(edges, boot.UNIT_NAME, "kubelet.service")
    for unit in ("nvidia-kmod-load.service", "nvidia-persistenced.service", "nvidia-fabricmanager.service"):
        assert precedes(edges, unit, boot.UNIT_NAME), unit
    # set-nvidia-clocks (the AMI's, After= and Requires= persistenced) and the toolkit's
    # nvidia-cdi-refresh (v1.19.1 deployments/systemd, not in the AMI's reference units) call
    # nvidia-smi: both done before the stage changes MIG mode or resets a GPU.
    assert precedes(edges, "set-nvidia-clocks.service", boot.UNIT_NAME)
    assert ("nvidia-cdi-refresh.service", boot.UNIT_NAME) in edges
    # cloud-final's script starts the unit on the first boot: ordered after cloud-final it would
    # wait for the script that waits for it. And no cycle through it.
    assert not precedes(edges, "cloud-final.service", boot.UNIT_NAME)
    assert not precedes(edges, boot.UNIT_NAME, boot.UNIT_NAME)
    # The AMI's own order the stage relies on: nodeadm-run (which starts kubelet) follows cloud-final.
    assert ("cloud-final.service", "nodeadm-run.service") in edges


def test_kubelet_starts_only_after_a_stage_that_did_not_fail_and_the_unit_is_enabled_for_every_boot():
    """``Requisite=``: kubelet fails at once when the stage is not active; ``Requires=`` would start
    a failed stage again (systemd.unit(5))."""
    stage = boot.boot_stage(8, None, None, (), MANAGED_NODE_GROUP)
    assert stage.kubelet_drop_in == "[Unit]\nRequisite=gpu-eks-boot.service\nAfter=gpu-eks-boot.service\n"
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read_string(stage.unit)
    assert dict(parser["Service"]) == {
        "Type": "oneshot",
        "RemainAfterExit": "yes",
        "ExecStart": "/usr/local/sbin/gpu-eks-boot",
        "SuccessExitStatus": "3",
        "TimeoutStartSec": "20min",
        "SyslogIdentifier": "gpu-eks-boot",
        "StandardOutput": "journal+console",
        "StandardError": "journal+console",
    }
    assert dict(parser["Install"]) == {"WantedBy": "multi-user.target"}
    assert parser["Unit"]["After"] == (
        "nvidia-kmod-load.service nvidia-persistenced.service nvidia-fabricmanager.service "
        "set-nvidia-clocks.service nvidia-cdi-refresh.service"
    )
