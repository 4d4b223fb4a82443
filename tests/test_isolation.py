"""The isolation of GPUs from pods that do not request one (issue 31 item 1): the device plugin's
volume-mount device list at each pinned chart, the operands that still reach their GPUs, the
setting that would undo it refused, and the verification Job that proves it on a node."""

from __future__ import annotations

import subprocess

import pytest

from components.config.errors import ConfigError
from components.config.loading import load_settings
from components.gpu_operator import values as operator_values
from components.plan import boot
from components.verification import jobs
from tests.support import CHART_VERSIONS, load_reference_yaml

PLANS = load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "t4"}]}).plans


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_the_device_plugin_hands_out_devices_as_volume_mounts_at_every_chart(version):
    """Helm replaces lists: the chart's own devicePlugin.env comes back with DEVICE_LIST_STRATEGY
    changed (v25.3.1 lists six entries, the later charts none: the operator's asset holds them)."""
    chart_env = load_reference_yaml("gpu-operator", version, "values.yaml")["devicePlugin"]["env"] or []
    env = operator_values.gpu_operator_values(PLANS, version)["devicePlugin"]["env"]
    assert {e["name"]: e["value"] for e in env} == {
        **{e["name"]: e["value"] for e in chart_env},
        "DEVICE_LIST_STRATEGY": "envvar,volume-mounts",
    }
    assert env[-1] == {"name": "DEVICE_LIST_STRATEGY", "value": "envvar,volume-mounts"}
    assert len(env) == {"v25.3.1": 6, "v25.10.1": 1, "v26.7.0": 1}[version]


def test_every_operand_that_opens_a_gpu_is_privileged_or_asks_the_device_plugin():
    """gpu-operator assets/state-*/ DaemonSets and validator/manifests at v25.3.1, v25.10.1, v26.7.0
    (read from the fetched repository, the same at all three): the toolkit refuses the variable only
    from unprivileged containers, so these keep their GPUs."""
    assert dict(operator_values.OPERAND_GPU_ACCESS) == {
        "nvidia-device-plugin": "privileged",
        "gpu-feature-discovery": "privileged",
        "nvidia-dcgm-exporter": "privileged",
        "mps-control-daemon-ctr": "privileged",
        "nvidia-mig-manager": "privileged",
        "toolkit-validation": "privileged",
        "cuda-validation": "privileged",
        "plugin-validation": "device plugin (volume mounts)",
    }


def test_cdi_with_the_v25_3_1_chart_is_refused():
    with pytest.raises(ConfigError) as info:
        load_settings(
            {
                "clusterName": "c",
                "gpuOperator": {"chartVersion": "v25.3.1", "cdiEnabled": True},
                "gpuNodeGroups": [{"name": "t4"}],
            }
        )
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:gpuOperator.cdiEnabled: received true; expected false with chartVersion v25.3.1: its operator "
        "overrides the device plugin's volume-mount device list with the environment variable the node's toolkit "
        "refuses (use v25.10.1 or later)"
    ]
    # v25.10.1 and later apply devicePlugin.env after their CDI settings: accepted.
    assert load_settings(
        {
            "clusterName": "c",
            "gpuOperator": {"chartVersion": "v25.10.1", "cdiEnabled": True},
            "gpuNodeGroups": [{"name": "t4"}],
        }
    )


def test_the_isolation_job_asks_for_no_gpu_and_sets_the_variable():
    (plan,) = PLANS
    spec = jobs.isolation_job_spec(plan, "vectoradd:1")
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (
        1,
        1,
        0,
        300,
    )
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"] == {
        "requests": {"cpu": "10m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert container["env"][:2] == [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "all"},
    ]
    assert pod["nodeSelector"] == dict(plan.node_labels)
    assert pod["tolerations"] == [dict(t) for t in plan.tolerations]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert jobs.isolation_job_name(plan, spec).startswith("isolation-t4-")


def run_check(tmp_path, devices: bool, smi: str | None) -> subprocess.CompletedProcess:
    """The Job's script in a shell where /dev/nvidia* is (or is not) there and nvidia-smi prints ``smi``."""
    tmp_path.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if smi is not None:
        tool = bin_dir / "nvidia-smi"
        tool.write_text(f"#!/bin/sh\nprintf '%s\\n' '{smi}'\n")
        tool.chmod(0o755)
    script = jobs.ISOLATION_SCRIPT
    if devices:
        (tmp_path / "dev").mkdir(exist_ok=True)
        (tmp_path / "dev" / "nvidia0").write_text("")
    script = script.replace("/dev/nvidia*", f"{tmp_path}/dev/nvidia*")
    return subprocess.run(
        ["sh", "-c", script], env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=30
    )


def test_the_isolation_check_fails_on_a_visible_gpu(tmp_path):
    assert run_check(tmp_path / "a", devices=False, smi=None).returncode == 0
    assert run_check(tmp_path / "b", devices=False, smi="No devices were found").returncode == 0
    seen = run_check(tmp_path / "c", devices=False, smi="GPU 0: Tesla T4 (UUID: GPU-1)")
    assert seen.returncode == 1 and "nvidia-smi lists GPUs" in seen.stdout
    assert run_check(tmp_path / "d", devices=True, smi=None).returncode == 1


def test_the_boot_stage_sets_exactly_the_two_toolkit_keys():
    assert boot.TOOLKIT_SETTINGS == (
        ("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),
        ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
    )
