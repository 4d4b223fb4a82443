"""How devices reach containers, through the upgrade (issue 40, section 2), proved with the real code.

* What the device plugin sends per strategy (catalog/device_lists.py ``allocate_response``) is checked
  against the text of its ``internal/plugin/server.go`` at each pinned tag (it cannot be built from
  what ../shared holds): a tag that sends otherwise fails here.
* What a container gets is asked of the container toolkit's own decision, compiled from its source
  (tests/support/tools/toolkit.py: ``internal/config/image`` of v1.19.1), for every node (0.2.0: no boot stage, the
  toolkit's defaults; ``migrating`` and ``enforced``: the settings their generated boot script sets)
  x every strategy the library renders (each isolation, chart version, ``cdiEnabled``) x a pod that
  requests GPUs, one that requests none but sets ``NVIDIA_VISIBLE_DEVICES=all``, a privileged
  operand, a ``CAP_SYS_ADMIN``-only container and one that mounts ``/dev/null`` under
  ``/var/run/nvidia-container-devices``. Expected values are literals.
* The upgrade from 0.2.0 in two steps keeps GPU pods starting at every step on every node; the direct
  jump does not; the impact summary says so from the renders.
* The operand table (gpu_operator/values.py ``OPERAND_GPU_ACCESS``) against every container of the
  operator's operand DaemonSets at each chart version.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.catalog import device_lists as dl
from components.catalog import gpu_operator as operator_catalog
from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.gpu_operator import values as operator_values
from tests.support.reference import CHART_VERSIONS, load_reference_yaml, reference_path
from tests.support.simulation import example, simulate
from tests.support.tokens import NODECLASS, NODEPOOL
from tests.support.tools import toolkit

UUID_A = "GPU-8f3c2a1e-5b6d-4c7e-9f10-1a2b3c4d5e6f"
UUID_B = "GPU-0e9d8c7b-6a5f-4e3d-2c1b-0a9f8e7d6c5b"
MIG_A = "MIG-4d1c2b3a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
ROOT_PATH = "/var/run/nvidia-container-devices"
ENVVAR_KEY, MOUNTS_KEY = dl.ENVVAR_WHEN_UNPRIVILEGED, dl.VOLUME_MOUNTS_ACCEPTED
PLUGIN_TAGS = ("v0.17.2", "v0.18.1", "v0.20.0")


def settings_for(isolation: str, version: str = "v26.7.0", cdi: bool = False):
    return load_settings(
        {
            "clusterName": "c",
            "gpuOperator": {"chartVersion": version, "cdiEnabled": cdi, "isolation": isolation},
            "gpuNodeGroups": [{"name": "t4", "timeSlicing": {"replicas": 4}}],
        }
    )


# ---------------------------------------------------------------------------------------------
# The nodes: the toolkit settings each kind really has
# ---------------------------------------------------------------------------------------------


def node_settings(kind: str) -> dict[str, bool]:
    """0.2.0: no boot stage (its user data held the NodeConfig only: 19061e2 tests/snapshots), so the
    toolkit's defaults; otherwise what the generated boot script sets."""
    if kind == "0.2.0":
        return dl.toolkit_settings(())
    (plan,) = settings_for(kind).plans
    assert plan.boot is not None
    return dl.toolkit_settings(dl.toolkit_sets_in(plan.boot.script))


NODES = ("0.2.0", "migrating", "enforced")


def test_without_go_the_decision_fails_under_require_reference_and_skips_elsewhere(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_EKS_GO", str(tmp_path / "no-go"))
    assert toolkit.go_binary() is None
    build = toolkit.decision_binary.__wrapped__
    monkeypatch.setenv("GPU_EKS_REQUIRE_REFERENCE", "1")
    with pytest.raises(pytest.fail.Exception, match="Go is unavailable"):
        build()
    monkeypatch.delenv("GPU_EKS_REQUIRE_REFERENCE")
    with pytest.raises(pytest.skip.Exception, match="Go is unavailable"):
        build()


def test_each_node_has_the_settings_its_user_data_gives_it():
    assert {kind: node_settings(kind) for kind in NODES} == {
        "0.2.0": {ENVVAR_KEY: True, MOUNTS_KEY: False},
        "migrating": {ENVVAR_KEY: True, MOUNTS_KEY: True},
        "enforced": {ENVVAR_KEY: False, MOUNTS_KEY: True},
    }


def test_the_enforced_boot_script_sets_the_toolkit_as_0_3_0_did():
    """The isolate() line of 0.3.0's user data, byte for byte (its tests/snapshots/dev.yaml): an
    enforced node's user data does not change, so no node rolls from 0.3.0."""
    (plan,) = settings_for("enforced").plans
    assert plan.boot is not None
    assert (
        "  nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=false "
        "--set accept-nvidia-visible-devices-as-volume-mounts=true \\\n" in plan.boot.script
    )
    (migrating,) = settings_for("migrating").plans
    assert migrating.boot is not None
    assert (
        "  nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=true "
        "--set accept-nvidia-visible-devices-as-volume-mounts=true \\\n" in migrating.boot.script
    )


def test_the_toolkit_defaults_are_the_sources():
    """api/config/v1/config.go GetDefault is not in the reference tree; the image builder's own default
    (builder.go ``New``: acceptEnvvarUnprivileged true, mounts unset) says the same."""
    builder = reference_path("nvidia-container-toolkit", "v1.19.1", "src", "internal", "config", "image", "builder.go")
    text = builder.read_text()
    assert re.search(r"CUDA: CUDA\{\s*acceptEnvvarUnprivileged: true,\s*\}", text)
    assert "acceptDeviceListAsVolumeMounts:" not in text.split("func New(")[1].split("\n}\n")[0]
    assert dict(dl.TOOLKIT_DEFAULTS) == {ENVVAR_KEY: True, MOUNTS_KEY: False}


# ---------------------------------------------------------------------------------------------
# The device plugin: what it sends, against its source at each tag
# ---------------------------------------------------------------------------------------------


def _func(text: str, signature: str) -> str:
    start = text.index(signature)
    return " ".join(text[start : text.index("\n}\n", start)].split())


@pytest.mark.parametrize("tag", PLUGIN_TAGS)
def test_the_plugins_source_sends_what_is_encoded(tag):
    text = reference_path("k8s-device-plugin", tag, "internal", "plugin", "server.go").read_text()
    flat = " ".join(text.split())
    assert 'deviceListEnvVar = "NVIDIA_VISIBLE_DEVICES"' in flat
    assert f'deviceListAsVolumeMountsHostPath = "{dl.DEVICE_LIST_HOST_PATH}"' in flat
    assert f'deviceListAsVolumeMountsContainerPathRoot = "{dl.DEVICE_LIST_ROOT}"' in flat
    allocate = _func(text, "func (plugin *nvidiaDevicePlugin) getAllocateResponse(")
    steps = [
        "if plugin.deviceListStrategies.AllCDIEnabled() { return response, nil }",
        "if plugin.deviceListStrategies.Includes(spec.DeviceListStrategyEnvVar) { "
        "plugin.updateResponseForDeviceListEnvVar(response, deviceIDs...) "
        "plugin.updateResponseForImexChannelsEnvVar(response) }",
        "if plugin.deviceListStrategies.Includes(spec.DeviceListStrategyVolumeMounts) { "
        "plugin.updateResponseForDeviceMounts(response, deviceIDs...) }",
    ]
    at = [allocate.index(step) for step in steps]
    assert at == sorted(at), "the envvar step, then the volume-mounts step that overwrites it"
    assert _func(text, "func (plugin *nvidiaDevicePlugin) updateResponseForDeviceListEnvVar(").endswith(
        '{ response.Envs[deviceListEnvVar] = strings.Join(deviceIDs, ",")'
    )
    mounts = _func(text, "func (plugin *nvidiaDevicePlugin) updateResponseForDeviceMounts(")
    assert "{ plugin.updateResponseForDeviceListEnvVar(response, deviceListAsVolumeMountsContainerPathRoot) " in mounts
    assert (
        "for _, id := range deviceIDs { mount := &pluginapi.Mount{ HostPath: deviceListAsVolumeMountsHostPath, "
        "ContainerPath: filepath.Join(deviceListAsVolumeMountsContainerPathRoot, id), }" in mounts
    )
    # The envvar step's other write: IMEX channels, of which the library configures none.
    assert "plugin.imexChannels" in _func(
        text, "func (plugin *nvidiaDevicePlugin) updateResponseForImexChannelsEnvVar("
    )


def test_what_the_plugin_sends_per_strategy():
    ids = [UUID_A, UUID_B]
    assert dl.allocate_response("envvar", ids) == dl.Allocation({"NVIDIA_VISIBLE_DEVICES": f"{UUID_A},{UUID_B}"}, ())
    mounted = dl.Allocation(
        {"NVIDIA_VISIBLE_DEVICES": ROOT_PATH},
        (("/dev/null", f"{ROOT_PATH}/{UUID_A}"), ("/dev/null", f"{ROOT_PATH}/{UUID_B}")),
    )
    assert dl.allocate_response("volume-mounts", ids) == mounted
    # 0.3.0's strategy: the envvar member is overwritten; the response is the same, byte for byte.
    assert dl.allocate_response("envvar,volume-mounts", ids) == mounted
    with pytest.raises(ValueError, match="only envvar and volume-mounts"):
        dl.allocate_response("cdi-annotations,cdi-cri", ids)


# ---------------------------------------------------------------------------------------------
# Every combination through the toolkit's compiled decision
# ---------------------------------------------------------------------------------------------

NVD_ALL = {"NVIDIA_VISIBLE_DEVICES": "all"}
#: Pods without a device-plugin allocation: (image env, pod env, mounts, privileged, added caps).
OTHER_PODS: dict[str, tuple[dict[str, str], dict[str, str], tuple[tuple[str, str], ...], bool, tuple[str, ...]]] = {
    "no request, NVIDIA_VISIBLE_DEVICES=all from the image": (NVD_ALL, {}, (), False, ()),
    "privileged operand, NVIDIA_VISIBLE_DEVICES=all": ({}, NVD_ALL, (), True, ()),
    "CAP_SYS_ADMIN only, NVIDIA_VISIBLE_DEVICES=all": (NVD_ALL, {}, (), False, ("CAP_SYS_ADMIN",)),
    "hostPath /dev/null at /var/run/nvidia-container-devices/all": (
        {},
        {},
        (("/dev/null", f"{ROOT_PATH}/all"),),
        False,
        (),
    ),
}
#: Pods that request GPUs: the device ids the plugin allocates (CUDA images set the variable to all).
GPU_PODS = {"one GPU": [UUID_A], "two GPUs": [UUID_A, UUID_B], "a MIG slice": [MIG_A]}
STRATEGIES = ("envvar", "volume-mounts", "envvar,volume-mounts")

# fmt: off
#: What the decision returns for the pods without an allocation, by node (the strategy plays no part).
EXPECTED_OTHER = {
    ("0.2.0", "no request, NVIDIA_VISIBLE_DEVICES=all from the image"): ["all"],
    ("migrating", "no request, NVIDIA_VISIBLE_DEVICES=all from the image"): ["all"],
    ("enforced", "no request, NVIDIA_VISIBLE_DEVICES=all from the image"): [],
    ("0.2.0", "privileged operand, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("migrating", "privileged operand, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("enforced", "privileged operand, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("0.2.0", "CAP_SYS_ADMIN only, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("migrating", "CAP_SYS_ADMIN only, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("enforced", "CAP_SYS_ADMIN only, NVIDIA_VISIBLE_DEVICES=all"): ["all"],
    ("0.2.0", "hostPath /dev/null at /var/run/nvidia-container-devices/all"): [],
    ("migrating", "hostPath /dev/null at /var/run/nvidia-container-devices/all"): ["all"],
    ("enforced", "hostPath /dev/null at /var/run/nvidia-container-devices/all"): ["all"],
}
#: What a GPU pod gets, by node and strategy (the same for one GPU, two and a MIG slice).
EXPECTED_GPU = {
    ("0.2.0", "envvar"): dl.ITS_DEVICES,
    ("0.2.0", "volume-mounts"): dl.NOT_CREATED,
    ("0.2.0", "envvar,volume-mounts"): dl.NOT_CREATED,
    ("migrating", "envvar"): dl.ITS_DEVICES,
    ("migrating", "volume-mounts"): dl.ITS_DEVICES,
    ("migrating", "envvar,volume-mounts"): dl.ITS_DEVICES,
    ("enforced", "envvar"): dl.NO_DEVICES,
    ("enforced", "volume-mounts"): dl.ITS_DEVICES,
    ("enforced", "envvar,volume-mounts"): dl.ITS_DEVICES,
}
# fmt: on


def gpu_pod_spec(strategy: str, ids: list[str]) -> dict[str, Any]:
    sent = dl.allocate_response(strategy, ids)
    return toolkit.oci_spec(image_env=NVD_ALL, env=sent.envs, mounts=sent.mounts)


def classify(devices: list[str], ids: list[str]) -> str:
    """A device list as the container's fate: the toolkit refuses a name no GPU has (nvcdi)."""
    if any(not dl.valid_device_name(d) for d in devices):
        return dl.NOT_CREATED
    if devices == ids:
        return dl.ITS_DEVICES
    return dl.NO_DEVICES if devices == [] else f"other: {devices}"


@pytest.fixture(scope="module")
def decisions() -> dict[tuple[str, str, str], list[str]]:
    """Every (node, strategy, pod) through the compiled decision, in one run."""
    cases: list[tuple[tuple[str, str, str], dict[str, bool], dict[str, Any]]] = []
    for node in NODES:
        settings = node_settings(node)
        for strategy in STRATEGIES:
            for pod, ids in GPU_PODS.items():
                cases.append(((node, strategy, pod), settings, gpu_pod_spec(strategy, ids)))
        for pod, (image_env, env, mounts, privileged, caps) in OTHER_PODS.items():
            spec = toolkit.oci_spec(image_env, env, mounts, privileged, caps)
            cases.append(((node, "-", pod), settings, spec))
    answers = toolkit.visible_devices([(settings, spec) for _, settings, spec in cases])
    return {key: answer for (key, _, _), answer in zip(cases, answers, strict=True)}


def test_the_decision_runs_the_real_code(decisions):
    """The strings only the compiled decision can produce: the refused variable's value as a device."""
    assert decisions[("0.2.0", "volume-mounts", "one GPU")] == [ROOT_PATH]
    assert decisions[("enforced", "volume-mounts", "two GPUs")] == [UUID_A, UUID_B]


def test_every_node_strategy_and_pod(decisions):
    got_other = {(node, pod): decisions[(node, "-", pod)] for node in NODES for pod in OTHER_PODS}
    assert got_other == EXPECTED_OTHER
    for pod, ids in GPU_PODS.items():
        got = {(node, s): classify(decisions[(node, s, pod)], ids) for node in NODES for s in STRATEGIES}
        assert got == EXPECTED_GPU, pod


def test_the_outcome_model_agrees_with_the_decision(decisions):
    """catalog/device_lists.py gpu_pod_outcome and isolated (the impact summary's) against the real code."""
    for node in NODES:
        settings = node_settings(node)
        for strategy in STRATEGIES:
            real = classify(decisions[(node, strategy, "one GPU")], [UUID_A])
            assert dl.gpu_pod_outcome(strategy, settings) == real, (node, strategy)
        no_request = decisions[(node, "-", "no request, NVIDIA_VISIBLE_DEVICES=all from the image")]
        assert dl.isolated(settings) == (no_request == []), node


def test_device_names_the_toolkit_resolves():
    assert [dl.valid_device_name(n) for n in ("all", "0", "1:2", UUID_A, MIG_A, ROOT_PATH, "", "cdi/x")] == [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]


# ---------------------------------------------------------------------------------------------
# The strategies the library renders
# ---------------------------------------------------------------------------------------------


def rendered_strategy(isolation: str, version: str, cdi: bool) -> str:
    """DEVICE_LIST_STRATEGY as the operator sets it from the library's values."""
    values = operator_values.gpu_operator_values(list(settings_for(isolation, version, cdi).plans), version, cdi)
    return operator_catalog.device_list_strategy(values["devicePlugin"]["env"], cdi, version)


def test_each_isolation_renders_one_strategy_at_every_chart_and_cdi_setting():
    got = {
        (isolation, version, cdi): rendered_strategy(isolation, version, cdi)
        for isolation in ("enforced", "migrating")
        for version in CHART_VERSIONS
        for cdi in (False, True)
        if not (cdi and version == "v25.3.1")
    }
    assert got == {
        **{
            ("enforced", v, c): "volume-mounts"
            for v in CHART_VERSIONS
            for c in (False, True)
            if (v, c) != ("v25.3.1", True)
        },
        **{("migrating", v, c): "envvar" for v in CHART_VERSIONS for c in (False, True) if (v, c) != ("v25.3.1", True)},
    }
    for isolation in ("enforced", "migrating"):
        with pytest.raises(ConfigError, match=r"cdiEnabled: received true; expected false with chartVersion v25\.3\.1"):
            settings_for(isolation, "v25.3.1", cdi=True)


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_the_operator_model_reads_the_assets_strategy(version):
    """0.2.0 sent no devicePlugin.env (19061e2 components/gpu_operator/values.py): its plugin ran the
    asset's strategy. The model's CDI branches, as literals (object_controls.go, cited there)."""
    asset = load_reference_yaml("gpu-operator", version, "assets", "state-device-plugin", "0500_daemonset.yaml")
    (plugin,) = [c for c in asset["spec"]["template"]["spec"]["containers"] if c["name"] == "nvidia-device-plugin"]
    env = {e["name"]: e.get("value") for e in plugin["env"]}
    assert env["DEVICE_LIST_STRATEGY"] == operator_catalog.ASSET_DEVICE_LIST_STRATEGY == "envvar"
    assert env["DEVICE_ID_STRATEGY"] == "uuid"
    assert operator_catalog.device_list_strategy(None, False, version) == "envvar"
    ours = [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
    assert operator_catalog.device_list_strategy(ours, False, version) == "volume-mounts"
    cdi = {"v25.3.1": "envvar,cdi-annotations", "v25.10.1": "volume-mounts", "v26.7.0": "volume-mounts"}
    assert operator_catalog.device_list_strategy(ours, True, version) == cdi[version]
    assert (
        operator_catalog.device_list_strategy(None, True, version)
        == {
            "v25.3.1": "envvar,cdi-annotations",
            "v25.10.1": "cdi-annotations,cdi-cri",
            "v26.7.0": "cdi-annotations,cdi-cri",
        }[version]
    )


# ---------------------------------------------------------------------------------------------
# The upgrade, step by step
# ---------------------------------------------------------------------------------------------

PLUGIN_0_2_0 = operator_catalog.device_list_strategy(None, False, "v26.7.0")
PLUGIN_0_3_0 = "envvar,volume-mounts"
#: A new node between the operator's release and the operator's update of the plugin's DaemonSet.
EARLY_NODE = "an enforced node registered before the operator updates the plugin (until its pod is replaced)"


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_gpu_pods_start_on_every_node_at_every_step_of_the_upgrade(version):
    """Each step: (plugin strategy, node) pairs that meet while it deploys. The library updates the
    operator's release before what launches nodes (test_new_nodes_wait_for_the_operators_release),
    so the new strategy meets the old nodes and the new ones. The operator writes the release's
    strategy into the plugin's DaemonSet shortly after the release, on its own: a new node that
    registers in between meets the old strategy until its plugin pod is replaced (the last case;
    docs/node-boot-stage.md says how an operator rules it out)."""
    migrating, enforced = rendered_strategy("migrating", version, False), rendered_strategy("enforced", version, False)
    steps = {
        "0.2.0 -> migrating": [(PLUGIN_0_2_0, "0.2.0"), (migrating, "0.2.0"), (migrating, "migrating")],
        "migrating -> enforced": [(migrating, "migrating"), (enforced, "migrating"), (enforced, "enforced")],
        "0.3.0 -> enforced": [(PLUGIN_0_3_0, "enforced"), (enforced, "enforced")],
        "direct 0.2.0 -> enforced": [(PLUGIN_0_2_0, "0.2.0"), (enforced, "0.2.0"), (enforced, "enforced")],
        EARLY_NODE: [(migrating, "enforced")],
    }
    cases = [(step, strategy, node) for step, pairs in steps.items() for strategy, node in pairs]
    answers = toolkit.visible_devices([(node_settings(n), gpu_pod_spec(s, [UUID_A])) for _, s, n in cases])
    got: dict[str, list[str]] = {}
    for (step, strategy, node), devices in zip(cases, answers, strict=True):
        got.setdefault(step, []).append(f"{strategy} on {node}: {classify(devices, [UUID_A])}")
    assert got == {
        "0.2.0 -> migrating": [
            "envvar on 0.2.0: its devices",
            "envvar on 0.2.0: its devices",
            "envvar on migrating: its devices",
        ],
        "migrating -> enforced": [
            "envvar on migrating: its devices",
            "volume-mounts on migrating: its devices",
            "volume-mounts on enforced: its devices",
        ],
        "0.3.0 -> enforced": [
            "envvar,volume-mounts on enforced: its devices",
            "volume-mounts on enforced: its devices",
        ],
        "direct 0.2.0 -> enforced": [
            "envvar on 0.2.0: its devices",
            f"volume-mounts on 0.2.0: {dl.NOT_CREATED}",
            "volume-mounts on enforced: its devices",
        ],
        EARLY_NODE: ["envvar on enforced: no GPU"],
    }


def test_new_nodes_wait_for_the_operators_release():
    """What launches GPU nodes (a managed node group; a Karpenter EC2NodeClass and NodePool) depends
    on the gpu-operator release: nodes with new settings launch after the release (the operator
    applies its strategy to the plugin's DaemonSet shortly after it, on its own)."""
    for sim in (simulate("dev"), example("karpenter"), example("multinode")):
        release = sim.one("kubernetes:helm.sh/v3:Release", "gpu-eks-gpu-operator-release").urn
        waiting = {(r.type.rsplit(":", 1)[1], r.name) for r in sim.resources if release in r.dependencies}
        launching = {
            (r.type.rsplit(":", 1)[1], r.name)
            for r in sim.resources
            if r.type in ("aws:eks/nodeGroup:NodeGroup", NODECLASS, NODEPOOL) and "system" not in r.name
        }
        assert launching and launching <= waiting, sorted(launching - waiting)
    assert {n for _, n in waiting} >= {"gpu-eks-h100-karpenter-nodeclass", "gpu-eks-h100-karpenter-nodepool"}
