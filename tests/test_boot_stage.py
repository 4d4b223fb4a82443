"""The boot stage (components/plan/boot.py): its bash script run against stand-ins of
``nvidia-smi``/``nvidia-ctk``/``systemctl`` (tests/support/standins/nvidia_smi.py) for each MIG GPU of the
catalog and its layouts, what it registers the node with, its failure path, its cloud-init part.
Its systemd ordering: tests/test_boot_order.py."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from components.catalog import mig as mig_catalog
from components.config.capacity_provider import KARPENTER, MANAGED_NODE_GROUP
from components.config.groups import Taint
from components.plan import boot
from tests.support.reference import observed_path
from tests.support.standins import nvidia_smi as standin
from tests.support.standins.boot_node import Node

ISOLATION = (
    "nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=false "
    "--set accept-nvidia-visible-devices-as-volume-mounts=true"
)
GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")
LIST_GPUS = "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader"
MODE = "nvidia-smi -i {i} --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader"


@pytest.fixture(scope="module", autouse=True)
def standin_port() -> Iterator[int]:
    """The stand-in, served by this process for every node of the module."""
    observed_path("nvidia-smi-h.txt")  # its grammar: skipped, or failed, where the recordings are missing
    with standin.served() as port:
        Node.port = port
        yield port


def script(
    model: str, layout: dict[str, int] | None, gpus: int = 2, karpenter: bool = False, taints=(GPU_TAINT,)
) -> str:
    gpu = mig_catalog.MIG_GPUS[model] if layout else None
    return boot.boot_stage(gpus, gpu, layout, taints, KARPENTER if karpenter else MANAGED_NODE_GROUP).script


# -- the layout on each GPU model -------------------------------------------------------------------

#: (GPU, layout) -> what the stage runs per GPU: literal placements (MIG user guide tables).
CREATION = {
    ("A100-SXM4-40GB", "all-balanced"): "3g.20gb:4,2g.10gb:0,1g.5gb:2,1g.5gb:3",
    ("A100-SXM4-40GB", "all-1g.5gb"): ",".join(f"1g.5gb:{i}" for i in range(7)),
    ("A100-SXM4-80GB", "all-3g.40gb"): "3g.40gb:0,3g.40gb:4",
    ("A100-SXM4-80GB", "all-balanced"): "3g.40gb:4,2g.20gb:0,1g.10gb:2,1g.10gb:3",
    ("H100-80GB-HBM3", "all-1g.20gb"): "1g.20gb:0,1g.20gb:2,1g.20gb:4,1g.20gb:6",
    ("H100-80GB-HBM3", "all-7g.80gb"): "7g.80gb:0",
    ("H200-141GB", "all-balanced"): "3g.71gb:4,2g.35gb:0,1g.18gb:2,1g.18gb:3",
    ("H200-141GB", "all-2g.35gb"): "2g.35gb:0,2g.35gb:2,2g.35gb:4",
}


@pytest.mark.parametrize(("model", "name"), sorted(CREATION))
def test_each_gpu_model_gets_its_layout_once_and_a_second_boot_changes_nothing(tmp_path, model, name):
    layout = dict(mig_catalog.named_layouts(model)[name])
    node = Node(tmp_path, model, gpus=2)
    rc, calls, err = node.run(script(model, layout))
    assert rc == 0, err
    create = CREATION[(model, name)]
    per_gpu = [MODE, "nvidia-smi -i {i} -mig 1", MODE]
    build = [
        "nvidia-smi mig -i {i} -dci",
        "nvidia-smi mig -i {i} -dgi",
        f"nvidia-smi mig -i {{i}} -cgi {create} -C",
        "nvidia-smi -L",
    ]
    assert calls == [
        ISOLATION,
        LIST_GPUS,
        *[c.format(i=i) for i in (0, 1) for c in per_gpu],
        "nvidia-smi -L",
        *[c.format(i=i) for i in (0, 1) for c in build],
    ]
    expected = sorted(p for p, n in layout.items() for _ in range(n))
    assert node.layouts() == [expected, expected]
    assert node.read()["toolkit"] == {
        "accept-nvidia-visible-devices-envvar-when-unprivileged": "false",
        "accept-nvidia-visible-devices-as-volume-mounts": "true",
    }
    before = node.read()
    rc, calls, err = node.run(script(model, layout))
    assert rc == 0, err
    assert node.read() == before
    assert calls == [ISOLATION, LIST_GPUS, MODE.format(i=0), MODE.format(i=1), "nvidia-smi -L"]


def test_every_layout_of_every_gpu_is_placed_by_the_stand_in():
    """Every named layout of every MIG GPU, created on one GPU at the stage's placements by the
    stand-in's own ``create`` (its table, not the catalog's): a start it does not allow or an
    overlap is refused. (The script's runs above show that ``MIG_CREATE`` is what the stage passes.)"""
    placed = 0
    for model in mig_catalog.MIG_GPUS:
        for name, layout in mig_catalog.named_layouts(model).items():
            creation = boot.mig_creation(mig_catalog.MIG_GPUS[model], layout)
            gpu = {"current": "Enabled", "pending": "Enabled", "instances": []}
            arg = ",".join(f"{p}:{start}" for p, start in creation)
            said: list[str] = []
            assert standin.create({"model": model, "fail": []}, gpu, arg, said) == 0, (model, name, arg, said)
            assert sorted(p for p, *_ in gpu["instances"]) == sorted(p for p, n in layout.items() for _ in range(n))
            placed += 1
    assert placed == 28  # 7 named layouts of each of the 4 GPUs


def test_a_custom_layout_that_first_fit_would_not_place_is_placed(tmp_path):
    """3g.40gb + 2 x 2g.20gb: the 3g at 0 leaves no start for the second 2g (2g starts at 0, 2, 4)."""
    layout = {"2g.20gb": 2, "3g.40gb": 1}
    assert boot.mig_creation(mig_catalog.MIG_GPUS["H100-80GB-HBM3"], layout) == (
        ("3g.40gb", 4),
        ("2g.20gb", 0),
        ("2g.20gb", 2),
    )
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=1)
    assert node.run(script("H100-80GB-HBM3", layout, gpus=1))[0] == 0
    assert node.layouts() == [["2g.20gb", "2g.20gb", "3g.40gb"]]


def test_placements_the_driver_refuses_fall_back_to_its_own_and_are_checked(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=1, fail=("placement",))
    rc, calls, err = node.run(script("H100-80GB-HBM3", {"3g.40gb": 2}, gpus=1))
    assert rc == 0, err
    assert calls[-4:] == [
        "nvidia-smi mig -i 0 -dci",
        "nvidia-smi mig -i 0 -dgi",
        "nvidia-smi mig -i 0 -cgi 3g.40gb,3g.40gb -C",
        "nvidia-smi -L",
    ]
    assert node.layouts() == [["3g.40gb", "3g.40gb"]]
    # A layout first fit cannot place (3g at 0 leaves no 2g start) ends in the failure path.
    other = tmp_path / "other"
    other.mkdir()
    node = Node(other, "H100-80GB-HBM3", gpus=1, fail=("placement",))
    rc, _, err = node.run(script("H100-80GB-HBM3", {"2g.20gb": 2, "3g.40gb": 1}, gpus=1))
    assert rc == 3
    assert "FAILED (mig-layout): nvidia-smi could not create 3g.40gb:4,2g.20gb:0,2g.20gb:2 on GPU 0" in err


def test_a_p5_node_applies_the_layout_on_all_eight_gpus(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=8)
    rc, calls, _ = node.run(script("H100-80GB-HBM3", {"3g.40gb": 2}, gpus=8))
    assert rc == 0
    assert node.layouts() == [["3g.40gb", "3g.40gb"]] * 8
    assert sum(" -cgi 3g.40gb:0,3g.40gb:4 -C" in c for c in calls) == 8


def test_a_wrong_layout_left_by_someone_is_replaced(tmp_path):
    node = Node(tmp_path, "A100-SXM4-80GB", gpus=1)
    state = node.read()
    state["gpus"][0].update(current="Enabled", pending="Enabled", instances=[["7g.80gb", 0]])
    node.write(state)
    rc, calls, _ = node.run(script("A100-SXM4-80GB", {"3g.40gb": 2}, gpus=1))
    assert rc == 0
    assert "nvidia-smi mig -i 0 -dgi" in calls
    assert node.layouts() == [["3g.40gb", "3g.40gb"]]


def test_a_gpu_instance_without_its_compute_instance_is_no_mig_device(tmp_path):
    """``-L`` lists MIG devices (a GPU instance with a compute instance): the layout's GPU instances
    without theirs are not the layout, and the stage cuts it again."""
    node = Node(tmp_path, "H200-141GB", gpus=1)
    state = node.read()
    state["gpus"][0].update(current="Enabled", pending="Enabled", instances=[["7g.141gb", 0, False]])
    node.write(state)
    rc, _, err = node.run(script("H200-141GB", {"7g.141gb": 1}, gpus=1))
    assert rc == 0, err
    assert "gpu-eks-boot: GPU 0: MIG devices '', creating '7g.141gb'" in err
    assert node.read()["gpus"][0]["instances"] == [["7g.141gb", 0, True]]


def test_without_mig_the_stage_only_isolates(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=8)
    rc, calls, _ = node.run(script("H100-80GB-HBM3", None, gpus=8))
    assert rc == 0
    assert calls == [ISOLATION]
    assert node.layouts() == [[]] * 8


# -- pending MIG mode -------------------------------------------------------------------------------


def test_a_pending_mode_is_applied_by_one_reset_of_every_gpu_by_bus_id(tmp_path):
    """NVIDIA mig-parted's recipe: every GPU at once by PCI bus id, persistenced and fabricmanager
    left running (nothing stops them, so the AMI's set-nvidia-clocks, which requires persistenced,
    is not stopped either)."""
    node = Node(tmp_path, "A100-SXM4-40GB", gpus=2, hold="until-reset")
    rc, calls, _ = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}))
    assert rc == 0
    reset = calls.index("nvidia-smi -r -i 00000000:00:06.0,00000000:00:07.0")
    assert calls[reset + 1 : reset + 3] == [MODE.format(i=0), MODE.format(i=1)]
    assert not any(c.startswith("systemctl") for c in calls), calls
    assert node.layouts() == [["3g.20gb", "3g.20gb"]] * 2


def test_a_mode_pending_after_the_reset_reboots_once_then_applies(tmp_path):
    node = Node(tmp_path, "A100-SXM4-40GB", gpus=2, hold="until-reboot")
    rc, calls, _ = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}))
    assert rc == 1
    assert calls[-2:] == ["systemctl reboot", "sleep 600"]
    assert not node.drop_in.exists()
    assert (node.state_dir / "rebooted-for-mig").exists()
    assert node.layouts() == [[], []]
    node.reboot()
    rc, calls, _ = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}))
    assert rc == 0
    assert "systemctl reboot" not in calls
    assert node.layouts() == [["3g.20gb", "3g.20gb"]] * 2
    assert not (node.state_dir / "rebooted-for-mig").exists()


def test_a_mode_pending_after_the_reboot_fails_and_does_not_reboot_again(tmp_path):
    node = Node(tmp_path, "A100-SXM4-40GB", gpus=1, hold="until-reboot")
    node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}, gpus=1))  # rebooted; the reboot did not apply it
    rc, calls, err = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}, gpus=1))
    assert rc == boot.FIRST_BOOT_FAILURE_STATUS == 3
    assert "systemctl reboot" not in calls
    assert "gpu-eks-boot: FAILED (mig-mode): MIG mode still pending on GPU(s) 0 after a GPU reset and a reboot" in err


def test_no_reboot_without_a_marker_that_survives_it(tmp_path):
    """A root volume that is full or read-only: the marker cannot be written, so a reboot would come
    back to the same place and reboot again, forever. The stage fails instead."""
    (tmp_path / "full").write_text("")  # a file: no folder can be made under it
    node = Node(tmp_path, "A100-SXM4-40GB", gpus=1, hold="until-reboot", state_dir=tmp_path / "full" / "gpu-eks")
    rc, calls, err = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}, gpus=1))
    assert "systemctl reboot" not in calls
    assert "FAILED (mig-mode): MIG mode still pending on GPU(s) 0; no reboot without the marker in" in err
    assert rc == 3
    assert any("gpu-eks.io/boot-stage-failed=mig-mode:NoSchedule" in f for f in node.drop_in_flags())


def test_a_karpenter_node_fails_closed_instead_of_rebooting(tmp_path):
    """A reboot before kubelet can outlast Karpenter's 15-minute registration limit (the instance is
    then terminated and another launched, which does the same): a Karpenter node registers failed."""
    node = Node(tmp_path, "A100-SXM4-40GB", gpus=1, hold="until-reboot")
    rc, calls, err = node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}, gpus=1, karpenter=True))
    assert rc == 3
    assert not any(c.startswith("systemctl") for c in calls), calls
    assert (
        "FAILED (mig-mode): MIG mode still pending on GPU(s) 0 after a GPU reset (a Karpenter node does not reboot)"
        in err
    )
    assert not (node.state_dir / "rebooted-for-mig").exists()
    # A mode the reset applies needs no reboot: a Karpenter node gets its layout.
    other = tmp_path / "other"
    other.mkdir()
    node = Node(other, "A100-SXM4-40GB", gpus=1, hold="until-reset")
    assert node.run(script("A100-SXM4-40GB", {"3g.20gb": 2}, gpus=1, karpenter=True))[0] == 0
    assert node.layouts() == [["3g.20gb", "3g.20gb"]]


# -- what kubelet registers the node with -----------------------------------------------------------


@pytest.mark.parametrize(
    ("karpenter", "taints", "flag"),
    [
        (False, (GPU_TAINT,), "--register-with-taints=nvidia.com/gpu=true:NoSchedule"),
        (
            True,
            (GPU_TAINT,),
            "--register-with-taints=nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute",
        ),
        (False, (), "--register-with-taints="),
        (True, (), "--register-with-taints=karpenter.sh/unregistered:NoExecute"),
    ],
)
def test_a_stage_that_succeeded_registers_the_node_without_the_pending_taint(tmp_path, karpenter, taints, flag):
    """The drop-in's flag comes after the user data's (which adds gpu-eks.io/boot-stage=pending), and
    kubelet keeps the last one; an empty one clears the list (RegisterWithTaintsVar.Set)."""
    node = Node(tmp_path, "H200-141GB", gpus=1)
    assert node.run(script("H200-141GB", {"7g.141gb": 1}, gpus=1, karpenter=karpenter, taints=taints))[0] == 0
    assert node.drop_in_flags() == [flag]
    assert (node.state_dir / "kubelet-started").exists()


@pytest.mark.parametrize(
    ("fail", "reason"),
    [("create", "mig-layout"), ("list", "mig-layout"), ("enable", "mig-mode"), ("toolkit", "isolation")],
)
def test_a_failed_stage_registers_the_node_tainted_and_logs_it(tmp_path, fail, reason):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=2, fail=(fail,))
    rc, calls, err = node.run(script("H100-80GB-HBM3", {"1g.10gb": 7}))
    assert rc == 3
    assert f"gpu-eks-boot: FAILED ({reason}):" in err
    assert any(c.startswith(f"logger -t gpu-eks-boot -p daemon.err FAILED ({reason}):") for c in calls)
    assert node.drop_in_flags() == [
        f"--register-with-taints=nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage-failed={reason}:NoSchedule",
        "--node-labels=gpu-eks.io/boot-stage=failed",
    ]
    # A later boot that fails again: the node registered already, kubelet must not start.
    rc, _, err = node.run(script("H100-80GB-HBM3", {"1g.10gb": 7}))
    assert rc == 1
    assert "kubelet does not start" in err


def test_a_later_success_replaces_the_failure_drop_in(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=1, fail=("create",))
    assert node.run(script("H100-80GB-HBM3", {"7g.80gb": 1}, gpus=1))[0] == 3
    assert "--node-labels=gpu-eks.io/boot-stage=failed" in node.drop_in_flags()
    state = node.read()
    state["fail"] = []
    node.write(state)
    assert node.run(script("H100-80GB-HBM3", {"7g.80gb": 1}, gpus=1))[0] == 0
    assert node.drop_in_flags() == ["--register-with-taints=nvidia.com/gpu=true:NoSchedule"]


def test_a_karpenter_node_keeps_karpenters_startup_taint_when_it_fails(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=1, fail=("create",))
    assert node.run(script("H100-80GB-HBM3", {"1g.10gb": 7}, gpus=1, karpenter=True))[0] == 3
    assert node.drop_in_flags()[0] == (
        "--register-with-taints=nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute,"
        "gpu-eks.io/boot-stage-failed=mig-layout:NoSchedule"
    )


def test_a_gpu_missing_from_the_node_fails_the_stage(tmp_path):
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=7)
    rc, _, err = node.run(script("H100-80GB-HBM3", {"7g.80gb": 1}, gpus=8))
    assert rc == 3
    assert "nvidia-smi lists 7 GPU(s), the instance type has 8" in err
    assert node.layouts() == [[]] * 7


def test_a_layout_that_does_not_fit_is_refused_by_the_builder():
    with pytest.raises(ValueError, match="does not fit"):
        boot.mig_creation(mig_catalog.MIG_GPUS["A100-SXM4-40GB"], {"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1})


# -- the cloud-init part ------------------------------------------------------------------------------


def test_the_user_data_part_writes_the_files_and_starts_the_unit(tmp_path):
    """The cloud-init part run with its paths under a temporary root and systemctl recorded."""
    stage = boot.boot_stage(8, mig_catalog.MIG_GPUS["H100-80GB-HBM3"], {"3g.40gb": 2}, (GPU_TAINT,), MANAGED_NODE_GROUP)
    part = stage.user_data_part
    assert part.startswith("#!/bin/bash\n")
    root = tmp_path / "root"
    rooted = part
    for path in (boot.SCRIPT_PATH, boot.UNIT_PATH, boot.KUBELET_DROP_IN_PATH):
        rooted = rooted.replace(f" {path} <<", f" {root}{path} <<")
    node = Node(tmp_path, "H100-80GB-HBM3", gpus=8)
    rc, calls, err = node.run(rooted)
    assert rc == 0, err
    assert (root / boot.SCRIPT_PATH.lstrip("/")).read_text() == stage.script
    assert os.access(root / boot.SCRIPT_PATH.lstrip("/"), os.X_OK)
    assert (root / boot.UNIT_PATH.lstrip("/")).read_text() == stage.unit
    assert (root / boot.KUBELET_DROP_IN_PATH.lstrip("/")).read_text() == stage.kubelet_drop_in
    assert calls == [
        "systemctl daemon-reload",
        "systemctl enable gpu-eks-boot.service",
        "systemctl start gpu-eks-boot.service",
    ]
