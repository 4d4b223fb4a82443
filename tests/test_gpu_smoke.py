"""scripts/gpu-smoke: its prepare step (tooling/gpu_smoke.py) writes the boot scripts the library
generates; its run step, with the nvidia-smi stand-in as "the real tool", runs them with every command
that would change a GPU refused: the stand-in's GPUs are as before, and it was only asked read-only
questions (by the real tool's grammar)."""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.catalog import mig as mig_catalog
from components.config.capacity_provider import KARPENTER, MANAGED_NODE_GROUP
from components.config.groups import DEFAULT_GPU_TAINT
from components.plan import boot
from tests.support.paths import ROOT
from tests.support.reference import observed_path
from tests.support.standins import nvidia_smi as standin
from tests.support.standins.nvidia_smi_grammar import grammar
from tooling import gpu_smoke

SMOKE = ROOT / "scripts" / "gpu-smoke"
#: What the smoke asks first, for its report's header.
FACTS = "nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,mig.mode.current,mig.mode.pending --format=csv"


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    observed_path("nvidia-smi-h.txt")
    with standin.served() as served:
        yield served


def prepare(folder: Path, *options: str) -> list[str]:
    parser = argparse.ArgumentParser()
    gpu_smoke.configure(parser)
    assert gpu_smoke.run(parser.parse_args([str(folder), *options])) == 0
    return sorted(p.name for p in folder.iterdir())


class Machine:
    """A machine whose "real" nvidia-smi is the stand-in (one H200 by default, MIG disabled: the
    machine the recordings were made on)."""

    def __init__(self, tmp: Path, port: int, gpus: list[dict] | None = None) -> None:
        self.tmp = tmp
        (tmp / "bin").mkdir()
        standin.install(tmp / "bin", ("nvidia-smi",), port)
        self.state = tmp / "gpus.json"
        self.log = tmp / "standin.log"
        gpus = gpus or [{"current": "Disabled", "pending": "Disabled", "instances": []}]
        self.state.write_text(
            json.dumps({"model": "H200-141GB", "gpus": gpus, "hold": "none", "fail": [], "toolkit": {}})
        )
        self.log.write_text("")

    def smoke(self, folder: Path) -> tuple[int, str]:
        env = {
            "PATH": "/usr/bin:/bin",
            "GPU_SMOKE_NVIDIA_SMI": str(self.tmp / "bin" / "nvidia-smi"),
            "STANDIN_STATE": str(self.state),
            "STANDIN_LOG": str(self.log),
        }
        done = subprocess.run(
            ["bash", str(SMOKE), "run", str(folder)], env=env, capture_output=True, text=True, timeout=120
        )
        return done.returncode, done.stdout + done.stderr

    def asked(self) -> list[str]:
        """What the stand-in was asked, every one a read-only command by the real tool's grammar."""
        calls = self.log.read_text().splitlines()
        assert calls
        for call in calls:
            assert grammar().parse(call.split()[1:]).read_only, call
        return calls


def test_prepare_writes_the_library_s_boot_scripts(tmp_path):
    names = prepare(
        tmp_path / "smoke",
        "--layout",
        "all-balanced",
        "--layout",
        "none",
        "--provider",
        "managed",
        "--provider",
        "karpenter",
    )
    assert names == [
        "h200-141gb-x1-all-balanced-karpenter.sh",
        "h200-141gb-x1-all-balanced-managed.sh",
        "h200-141gb-x1-none-karpenter.sh",
        "h200-141gb-x1-none-managed.sh",
    ]
    gpu = mig_catalog.MIG_GPUS["H200-141GB"]
    layout = dict(mig_catalog.named_layouts("H200-141GB")["all-balanced"])
    assert (tmp_path / "smoke" / names[1]).read_text() == boot.boot_stage(
        1, gpu, layout, (DEFAULT_GPU_TAINT,), MANAGED_NODE_GROUP
    ).script
    assert prepare(tmp_path / "custom", "--gpu", "A100-SXM4-40GB", "--gpus", "8", "--layout", "3g.20gb=1,1g.5gb=4") == [
        "a100-sxm4-40gb-x8-3g.20gb1-1g.5gb4-managed.sh"
    ]
    with pytest.raises(SystemExit, match=r"7g\.40gb"):
        prepare(tmp_path / "bad", "--gpu", "A100-SXM4-40GB", "--layout", "7g.40gb=2")


def test_the_smoke_cuts_the_scripts_where_the_library_marks_their_main_part():
    """scripts/gpu-smoke sources a boot script up to its main part, by the line boot.MAIN_MARKER."""
    assert f'MAIN_MARKER="{boot.MAIN_MARKER}"' in SMOKE.read_text()
    for provider in (MANAGED_NODE_GROUP, KARPENTER):
        script = boot.boot_stage(1, None, None, (DEFAULT_GPU_TAINT,), provider).script
        (marker,) = [line for line in script.splitlines() if line.startswith(boot.MAIN_MARKER)]
        assert script.split(marker + "\n")[1] == 'isolate\n[ -z "$MIG_CREATE" ] || apply_mig\ndone_ok\n'


def test_on_the_recorded_h200_the_stage_is_refused_mig_mode_and_says_so(tmp_path, port):
    """MIG disabled: ``-mig 1`` is refused (recorded, not run), so the stage fails as a node whose
    driver keeps MIG off would: the report shows the calls, the stage's log, the outcome, the
    drop-in, and the stage's own listing functions run against the (stand-in) real tool."""
    prepare(tmp_path / "smoke")
    machine = Machine(tmp_path, port)
    rc, out = machine.smoke(tmp_path / "smoke")
    assert rc == 0, out
    assert (
        "[passed rc=0] nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader\n    stdout| 0, 00000000:00:06.0\n"
        in out
    )
    assert (
        "[passed rc=0] nvidia-smi -i 0 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader\n"
        "    stdout| Disabled, Disabled\n"
    ) in out
    assert "[REFUSED] nvidia-smi -i 0 -mig 1\n" in out
    assert (
        "[stubbed] nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=false"
        in out
    )
    assert "gpu-eks-boot: FAILED (mig-mode): nvidia-smi could not enable MIG mode on GPU 0" in out
    assert "[stubbed] logger -t gpu-eks-boot -p daemon.err FAILED (mig-mode)" in out
    assert "-- outcome: exit status 3: FAILED on a first boot" in out
    failed = "nvidia.com/gpu=true:NoSchedule,gpu-eks.io/boot-stage-failed=mig-mode:NoSchedule"
    assert f"      - --register-with-taints={failed}\n" in out
    # The stage's functions against the tool: -L (no -i) and its parse.
    assert "GPU 0: mig_mode: 'Disabled,Disabled'" in out
    assert (
        "[passed rc=0] nvidia-smi -L\n    stdout| GPU 0: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)\n"
        in out
    )
    assert "GPU 0: mig_devices: '' (the layout: '1g.18gb 1g.18gb 2g.35gb 3g.71gb')" in out
    assert "gpu-smoke: 7 call(s) went to the real nvidia-smi (read-only forms only), 1 refused" in out
    assert json.loads(machine.state.read_text())["gpus"][0]["current"] == "Disabled"
    assert "nvidia-smi -i 0 -mig 1" not in machine.asked()


def test_with_mig_on_and_no_instances_creating_them_is_refused(tmp_path, port):
    prepare(tmp_path / "smoke")
    gpus = [{"current": "Enabled", "pending": "Enabled", "instances": []}]
    machine = Machine(tmp_path, port, gpus)
    rc, out = machine.smoke(tmp_path / "smoke")
    assert rc == 0, out
    for refused in ("mig -i 0 -dci", "mig -i 0 -dgi", "mig -i 0 -cgi 3g.71gb:4,2g.35gb:0,1g.18gb:2,1g.18gb:3 -C"):
        assert f"[REFUSED] nvidia-smi {refused}\n" in out
    assert "FAILED (mig-layout): nvidia-smi could not create 3g.71gb:4,2g.35gb:0,1g.18gb:2,1g.18gb:3 on GPU 0" in out
    assert json.loads(machine.state.read_text())["gpus"] == gpus
    machine.asked()


def test_with_the_layout_in_place_the_stage_passes_read_only(tmp_path, port):
    prepare(tmp_path / "smoke", "--provider", "karpenter")
    instances = [["3g.71gb", 4, True], ["2g.35gb", 0, True], ["1g.18gb", 2, True], ["1g.18gb", 3, True]]
    machine = Machine(tmp_path, port, [{"current": "Enabled", "pending": "Enabled", "instances": instances}])
    rc, out = machine.smoke(tmp_path / "smoke")
    assert rc == 0, out
    assert "\n[REFUSED]" not in out
    assert "-- outcome: exit status 0: done" in out
    assert "      - --register-with-taints=nvidia.com/gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute\n" in out
    assert machine.asked() == [
        FACTS,  # the smoke's own header
        "nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader",
        "nvidia-smi -i 0 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader",
        "nvidia-smi -L",
        # the stage's functions, run by the smoke itself
        "nvidia-smi --query-gpu=index --format=csv,noheader",
        "nvidia-smi -i 0 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader",
        "nvidia-smi -L",
        "nvidia-smi --query-gpu=index --format=csv,noheader",
    ]


def test_a_script_that_calls_a_tool_by_its_path_is_not_run(tmp_path, port):
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "x.sh").write_text("#!/bin/bash\n/usr/bin/nvidia-smi -i 0 -mig 1\n")
    machine = Machine(tmp_path, port)
    rc, out = machine.smoke(tmp_path / "smoke")
    assert rc == 1
    assert "calls a tool by its path (above): not running it" in out
    assert machine.asked() == [FACTS]
