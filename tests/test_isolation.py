"""The isolation of GPUs from pods that do not request one (issue 31 item 1, issue 40): the device
plugin's strategy per ``gpuOperator.isolation`` at each pinned chart, the operands that still reach
their GPUs (every container of the operator's DaemonSets), the setting that would undo it refused, the
verification Job that proves it on a node (skipped, and said, while isolation is not enforced).
What each strategy does on each node: tests/test_device_lists.py."""

from __future__ import annotations

import re
import subprocess
import typing

import pytest
import yaml

from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.isolation import ISOLATIONS, IsolationName
from components.gpu_operator import values as operator_values
from components.verification import jobs
from tests.support.reference import CHART_VERSIONS, SAFE_LOADER, load_reference_yaml, reference_path

PLANS = load_settings({"clusterName": "c", "gpuNodeGroups": [{"name": "t4"}]}).plans


def settings_with(operator: dict):
    return load_settings({"clusterName": "c", "gpuOperator": operator, "gpuNodeGroups": [{"name": "t4"}]})


@pytest.mark.parametrize("version", CHART_VERSIONS)
@pytest.mark.parametrize(("isolation", "strategy"), [("enforced", "volume-mounts"), ("migrating", "envvar")])
def test_the_device_plugin_gets_the_isolations_strategy_at_every_chart(version, isolation, strategy):
    """Helm replaces lists: the chart's own devicePlugin.env comes back with DEVICE_LIST_STRATEGY
    changed (v25.3.1 lists six entries, the later charts none: the operator's asset holds them)."""
    chart_env = load_reference_yaml("gpu-operator", version, "values.yaml")["devicePlugin"]["env"] or []
    plans = settings_with({"isolation": isolation}).plans
    env = operator_values.gpu_operator_values(plans, version)["devicePlugin"]["env"]
    assert {e["name"]: e["value"] for e in env} == {
        **{e["name"]: e["value"] for e in chart_env},
        "DEVICE_LIST_STRATEGY": strategy,
    }
    assert env[-1] == {"name": "DEVICE_LIST_STRATEGY", "value": strategy}
    assert len(env) == {"v25.3.1": 6, "v25.10.1": 1, "v26.7.0": 1}[version]


def operand_containers(version: str) -> list[tuple[str, str, dict]]:
    """(DaemonSet asset, container name, container) of every operand DaemonSet of the chart version."""
    assets = reference_path("gpu-operator", version, "assets")
    out = []
    for path in sorted(assets.glob("*/*daemonset*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=SAFE_LOADER):
            if doc and doc.get("kind") == "DaemonSet":
                pod = doc["spec"]["template"]["spec"]
                for c in [*(pod.get("initContainers") or []), *pod["containers"]]:
                    out.append((path.parent.name, c["name"], c))
    return out


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_every_operand_container_is_in_the_table_as_its_daemonset_says(version):
    """Each container of each operand DaemonSet: ``privileged`` in the table iff privileged in the
    asset; the only unprivileged one sets no NVIDIA_VISIBLE_DEVICES and asks for no GPU resource."""
    containers = operand_containers(version)
    assert len(containers) == {"v25.3.1": 24, "v25.10.1": 25, "v26.7.0": 25}[version]
    for asset, name, c in containers:
        privileged = (c.get("securityContext") or {}).get("privileged") is True
        env = {e["name"] for e in c.get("env") or []}
        resources = {**(c.get("resources") or {}).get("limits", {}), **(c.get("resources") or {}).get("requests", {})}
        assert not [r for r in resources if "nvidia.com" in r], (asset, name)
        assert not ((c.get("securityContext") or {}).get("capabilities") or {}).get("add"), (asset, name)
        expected = operator_values.PRIVILEGED if privileged else operator_values.NO_GPU
        assert operator_values.OPERAND_GPU_ACCESS[name] == expected, (version, asset, name)
        if not privileged:
            assert "NVIDIA_VISIBLE_DEVICES" not in env, (asset, name)
    assert {n for _, n, _ in containers} <= set(operator_values.OPERAND_GPU_ACCESS)


def test_every_table_entry_names_a_container_of_some_chart():
    names = {n for v in CHART_VERSIONS for _, n, _ in operand_containers(v)}
    assert set(operator_values.OPERAND_GPU_ACCESS) == names
    assert dict(operator_values.VALIDATOR_WORKLOAD_GPU_ACCESS) == {
        "cuda-validation": "privileged",
        "plugin-validation": "device plugin",
    }


def test_cdi_with_the_v25_3_1_chart_is_refused():
    with pytest.raises(ConfigError) as info:
        settings_with({"chartVersion": "v25.3.1", "cdiEnabled": True})
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:gpuOperator.cdiEnabled: received true; expected false with chartVersion v25.3.1: its operator "
        "overrides the device plugin's device-list strategy that gpuOperator.isolation chooses with its own (use "
        "v25.10.1 or later)"
    ]
    # v25.10.1 and later apply devicePlugin.env after their CDI settings: accepted, either isolation.
    for isolation in ("enforced", "migrating"):
        assert settings_with({"chartVersion": "v25.10.1", "cdiEnabled": True, "isolation": isolation})


def test_an_unknown_isolation_is_refused_with_its_key():
    with pytest.raises(ConfigError) as info:
        settings_with({"isolation": "off"})
    assert [str(p) for p in info.value.problems] == [
        "gpu-eks:gpuOperator.isolation: received \"off\"; expected one of 'enforced' or 'migrating'"
    ]


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


def test_the_jobs_call_nvidia_smi_as_the_real_tool_accepts():
    """The isolation Job's and the MIG probe's ``nvidia-smi`` command lines, by the real tool's grammar
    (its recorded help: ../shared/observed/nvidia-smi), so the fake below answers a real command."""
    from components.verification import mig
    from tests.support.standins.nvidia_smi_grammar import grammar

    # A command, not the word in an echo's quoted text: after a separator, its options up to a redirection.
    lines = re.findall(r"(?:^|[;\s])nvidia-smi((?: -[^\s;|&]+)*)", jobs.ISOLATION_SCRIPT)
    assert lines == [" -L", " -L"]
    assert '["nvidia-smi", "-L"]' in mig.MIG_PROBE_PROGRAM
    for line in {*lines, " -L"}:  # the probe's argv is " -L" too
        grammar().parse(line.split())


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


def test_each_isolation_chooses_the_plugin_strategy_and_the_nodes_toolkit_settings():
    assert {name: (i.device_list_strategy, i.toolkit_settings, i.enforced) for name, i in ISOLATIONS.items()} == {
        "enforced": (
            "volume-mounts",
            (
                ("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),
                ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
            ),
            True,
        ),
        "migrating": (
            "envvar",
            (
                ("accept-nvidia-visible-devices-envvar-when-unprivileged", "true"),
                ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
            ),
            False,
        ),
    }
    assert typing.get_args(IsolationName) == tuple(ISOLATIONS)
