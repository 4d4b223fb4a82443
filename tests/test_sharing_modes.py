"""Sharing modes per GPU node group: time-slicing (the default), MPS, exclusive (issue 18).

Each rule names its upstream source, read at the versions the three charts pin (chart v25.3.1 →
k8s-device-plugin v0.17.2, v25.10.1 → v0.18.1, v26.7.0 → v0.20.0):

* replicas >= 2 inside ``sharing.mps`` ("number of replicas must be >= 2") and resources required:
  api/config/v1/replicas.go ReplicatedResource / ReplicatedResources UnmarshalJSON (all three).
* at most 48 clients per GPU of compute capability >= 7.5 (16 below): the MPS control daemon's
  cmd/mps-control-daemon/mps/device.go assertReplicas / maxClients (all three).
* MPS and ``--mig-strategy=mixed`` refused; MPS requires ``--mps-root``:
  cmd/nvidia-device-plugin/main.go validateFlags (all three). The operator sets ``MPS_ROOT`` on the
  device plugin (assets/state-device-plugin/0500_daemonset.yaml, gpu-operator v25.3.1, v25.10.1,
  v26.7.0: ``/run/nvidia/mps``) and mounts ``/run/nvidia/mps/shm`` at ``/dev/shm``.
* ``failRequestsGreaterThanOne``: forced true under MPS at v0.17.2 and v0.18.1, defaulted to true
  at v0.20.0 (api/config/v1/config.go). The docs (README "With CUDA MPS") do not mention it: the
  source wins, and the library writes ``true`` at every version.
* memory per client = total memory / replicas, set by the daemon
  (cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits).
* ``flags.plugin.sharedDevicesAllocationPolicy``: api/config/v1/flags.go from v0.20.0 only.
* the operator deploys the MPS control daemon (assets/state-mps-control-daemon/0400_daemonset.yaml)
  on nodes labelled ``nvidia.com/mps.capable=true``, which GFD sets only under an MPS config
  (internal/lm/nvml.go newSharingLabeler); the chart never copies ``devicePlugin.mps`` into the
  ClusterPolicy (templates/clusterpolicy.yaml; tests/test_operator_chart.py renders each chart with
  the karpenter example's MPS group): the library sets no MPS value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.catalog import gpu_operator as chart
from components.check.loading import load_settings
from components.config.errors import ConfigError
from components.config.groups import GpuNodeGroupSettings, TimeSlicing, sharing_problems
from components.config.mps import Mps
from components.gpu_operator import values as operator_values
from components.plan import device_plugin
from components.plan.group import GroupPlan, plan_groups
from components.verification import jobs
from tests.support.paths import ROOT
from tests.support.reference import CHART_VERSIONS, load_reference_yaml
from tests.support.standins.device_plugin import PLUGIN_FIELDS, RESOURCE_FIELDS, plugin_config_problems
from tooling.simulation import Simulation, run_stack


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_settings({"clusterName": "c", **raw})
    return [str(p) for p in info.value.problems]


def plans(*specs: dict, **top: Any) -> tuple[GroupPlan, ...]:
    return plan_groups(load_settings({"clusterName": "c", "gpuNodeGroups": list(specs), **top}).gpu_node_groups)


# ---------------------------------------------------------------------------------------------
# 1. The three modes in a group plan
# ---------------------------------------------------------------------------------------------


def test_an_mps_group_plan():
    (p,) = plans({"name": "t4", "mps": {"replicas": 4}})
    assert (p.sharing_mode, p.sharing_key, p.replicas, p.resource_name) == ("mps", "mps", 4, "nvidia.com/gpu")
    # A T4 reports 15,360 MiB to the driver: the MPS daemon gives each of 4 clients 3,840.
    assert (p.slots_per_node, p.slots_at_max_size, p.memory_per_slot_mib) == (4, 8, 3840)
    # max pods 29 - 7 DaemonSet pods - the MPS control daemon's pod
    assert (p.max_pods, p.usable_pod_slots) == (29, 21)
    assert p.profile_name == "t4"
    assert p.node_labels["nvidia.com/device-plugin.config"] == "t4"
    assert p.node_template_tags["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "4"
    assert dict(p.device_plugin_config) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "mps": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }


def test_time_slicing_stays_the_default_and_exclusive_is_replicas_one():
    default, whole, big = plans(
        {"name": "a"},
        {"name": "b", "timeSlicing": {"replicas": 1}},
        {"name": "c", "instanceTypes": ["g4dn.12xlarge"], "mps": {"replicas": 2}},
    )
    assert (default.sharing_mode, default.replicas, default.memory_per_slot_mib, default.usable_pod_slots) == (
        "timeSlicing",
        4,
        3840,
        22,
    )
    assert (whole.sharing_mode, whole.slots_per_node, whole.memory_per_slot_mib) == ("exclusive", 1, 15360)
    assert dict(whole.device_plugin_config) == {"version": "v1", "flags": {"migStrategy": "none"}}
    assert (big.sharing_mode, big.slots_per_node, big.memory_per_slot_mib, big.usable_pod_slots) == (
        "mps",
        8,
        7680,
        226,
    )


def test_modes_mix_in_one_cluster_with_one_profile_each():
    ts, mps, whole = plans(
        {"name": "ts"}, {"name": "mps", "mps": {"replicas": 4}}, {"name": "whole", "timeSlicing": {"replicas": 1}}
    )
    data = operator_values.gpu_operator_values([ts, mps, whole], "v26.7.0")["devicePlugin"]["config"]["data"]
    assert sorted(data) == ["mps", "ts", "whole"]
    assert "mps:" in data["mps"] and "timeSlicing:" in data["ts"] and "sharing" not in data["whole"]


def test_one_profile_name_cannot_hold_two_modes():
    assert problems(
        {
            "gpuNodeGroups": [
                {"name": "a", "timeSlicing": {"replicas": 4, "profile": "p"}},
                {"name": "b", "mps": {"replicas": 4, "profile": "p"}},
            ]
        }
    ) == [
        'gpu-eks:gpuNodeGroups[1].mps.profile: received "p"; expected a profile name not used by gpuNodeGroups[0] '
        "(a), whose sharing mode differs: one set of settings per profile name (it is one key of the device-plugin "
        "ConfigMap)"
    ]


# ---------------------------------------------------------------------------------------------
# 2. The rules, with key, value and source
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        (
            {"mps": {"replicas": 1}},
            "gpu-eks:gpuNodeGroups[0].mps.replicas: received 1; expected at least 2 (the device plugin refuses fewer: "
            "'number of replicas must be >= 2', NVIDIA/k8s-device-plugin api/config/v1/replicas.go (v0.17.2, v0.18.1, "
            "v0.20.0)); for whole, unshared GPUs write timeSlicing: {replicas: 1}",
        ),
        (
            {"mps": {"replicas": 49}, "instanceTypes": ["g4dn.12xlarge"]},
            "gpu-eks:gpuNodeGroups[0].mps.replicas: received 49; expected at most 48 (the MPS control daemon refuses "
            "more clients per GPU: 'maximum allowed replicas exceeded', NVIDIA/k8s-device-plugin "
            "cmd/mps-control-daemon/mps/device.go maxClients (v0.17.2-v0.20.0))",
        ),
        (
            {"mps": {"replicas": 16}},
            "gpu-eks:gpuNodeGroups[0].mps.replicas: received 16; expected at most 15 for T4 (15360 MiB per GPU as the "
            "driver reports it): each MPS client gets GPU memory / replicas = 960 MiB, below the library's floor of "
            "1024 MiB (a CUDA context "
            "and its libraries alone take several hundred MiB; the limit is set by the MPS control daemon, "
            "cmd/mps-control-daemon/mps/daemon.go perDevicePinnedDeviceMemoryLimits, v0.17.2-v0.20.0)",
        ),
        (
            {"mps": {"replicas": 4}, "timeSlicing": {"replicas": 4}},
            'gpu-eks:gpuNodeGroups[0].mps: received {"replicas": 4}; expected either mps or timeSlicing, not both: '
            "the device plugin shares a node's GPUs one way ('Time-slicing and MPS are mutually exclusive', "
            "NVIDIA/k8s-device-plugin README v0.20.0; api/config/v1/sharing.go SharingStrategy picks MPS and ignores "
            "timeSlicing)",
        ),
        (
            {"timeSlicing": {"replicas": 1}, "sharedDevicesAllocationPolicy": "packed"},
            'gpu-eks:gpuNodeGroups[0].sharedDevicesAllocationPolicy: received "packed"; expected no key: with '
            "timeSlicing replicas 1 no GPU is shared, so there is no shared slot to place",
        ),
    ],
    ids=["replicas-1", "replicas-49", "memory-floor", "both-modes", "policy-without-sharing"],
)
def test_mps_rules(group, expected):
    assert problems({"gpuNodeGroups": [{"name": "g", **group}]}) == [expected]


def test_mps_refuses_the_time_slicing_options_naming_the_source():
    lines = problems({"gpuNodeGroups": [{"name": "g", "mps": {"replicas": 4, "renameByDefault": True}}]})
    assert len(lines) == 1
    assert lines[0].startswith(
        "gpu-eks:gpuNodeGroups[0].mps.renameByDefault: received true; expected no key: MPS groups advertise "
        "nvidia.com/gpu, never renamed"
    )
    assert "api/config/v1/replicas.go" in lines[0]
    lines = problems({"gpuNodeGroups": [{"name": "g", "mps": {"replicas": 4, "failRequestsGreaterThanOne": False}}]})
    assert len(lines) == 1
    assert lines[0].startswith(
        "gpu-eks:gpuNodeGroups[0].mps.failRequestsGreaterThanOne: received false; expected no key: under MPS a pod "
        "requests exactly one slot, always"
    )
    assert "api/config/v1/config.go" in lines[0]


def test_mps_refuses_a_mixed_mig_strategy():
    # migStrategy is `none` only today (no MIG GPU in the catalog), so the rule is checked on a
    # group built without validation: it holds when MIG GPUs arrive.
    group = GpuNodeGroupSettings.model_construct(
        name="g", instance_types=["g4dn.xlarge"], mps=Mps(replicas=4), mig_strategy="mixed", time_slicing=TimeSlicing()
    )
    group.model_fields_set.discard("time_slicing")
    assert sharing_problems(group) == [
        (
            ("migStrategy",),
            "mixed",
            "none or single with mps: 'using --mig-strategy=mixed is not supported with MPS' "
            "(NVIDIA/k8s-device-plugin cmd/nvidia-device-plugin/main.go validateFlags (v0.17.2-v0.20.0))",
        )
    ]


def test_largest_mps_replicas_per_gpu_memory():
    # A T4 reports 15,360 MiB to the driver (EC2 says 16,384): 15 clients get 1,024 MiB each.
    (p,) = plans({"name": "g", "mps": {"replicas": 15}})
    assert p.memory_per_slot_mib == 1024
    # An H100 (81,559 MiB) reaches the daemon's 48-client limit first: 1,699 MiB each.
    (h,) = plans({"name": "h", "instanceTypes": ["p5.4xlarge"], "mps": {"replicas": 48}})
    assert h.memory_per_slot_mib == 1699


# ---------------------------------------------------------------------------------------------
# 3. The device-plugin file at every chart version; sharedDevicesAllocationPolicy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", CHART_VERSIONS)
@pytest.mark.parametrize("replicas", [2, 4, 15])
def test_every_mps_config_file_loads_in_the_device_plugin(version, replicas):
    (g,) = plans({"name": "t4", "mps": {"replicas": replicas}}, gpuOperator={"chartVersion": version})
    data = operator_values.gpu_operator_values([g], version)["devicePlugin"]["config"]["data"]
    assert plugin_config_problems(data["t4"]) == []
    config = yaml.safe_load(data["t4"])
    fields = {**PLUGIN_FIELDS, ("sharing", "mps"): {"renameByDefault", "failRequestsGreaterThanOne", "resources"}}
    for path, allowed in fields.items():
        node = config
        for key in path:
            node = node.get(key, {})
        assert set(node) <= allowed, (path, set(node) - allowed)
    assert {k for r in config["sharing"]["mps"]["resources"] for k in r} <= RESOURCE_FIELDS
    assert config["sharing"]["mps"]["failRequestsGreaterThanOne"] is True


def test_chart_facts_match_the_chart_values():
    assert {
        v: (c.device_plugin_version, c.shared_devices_allocation_policy)
        for v, c in chart.SUPPORTED_CHART_VERSIONS.items()
    } == {
        "v25.3.1": ("v0.17.2", False),
        "v25.10.1": ("v0.18.1", False),
        "v26.7.0": ("v0.20.0", True),
    }
    for version in CHART_VERSIONS:
        values = load_reference_yaml("gpu-operator", version, "values.yaml")
        assert values["devicePlugin"]["version"] == chart.SUPPORTED_CHART_VERSIONS[version].device_plugin_version


@pytest.mark.parametrize("version", CHART_VERSIONS)
def test_the_mps_root_is_the_charts_and_the_library_sets_no_mps_value(version):
    values = load_reference_yaml("gpu-operator", version, "values.yaml")
    assert values["devicePlugin"]["mps"] == {"root": "/run/nvidia/mps"}
    assert device_plugin.MPS_ROOT == "/run/nvidia/mps"
    (g,) = plans({"name": "t4", "mps": {"replicas": 4}}, gpuOperator={"chartVersion": version})
    assert "mps" not in operator_values.gpu_operator_values([g], version)["devicePlugin"]


@pytest.mark.parametrize("policy", ["distributed", "packed"])
def test_allocation_policy_reaches_the_file_at_v26_7_0(policy):
    ts, mps = plans(
        {"name": "ts", "instanceTypes": ["g4dn.12xlarge"], "sharedDevicesAllocationPolicy": policy},
        {
            "name": "mps",
            "instanceTypes": ["g4dn.12xlarge"],
            "mps": {"replicas": 4},
            "sharedDevicesAllocationPolicy": policy,
        },
    )
    for p in (ts, mps):
        assert p.device_plugin_config["flags"] == {
            "migStrategy": "none",
            "plugin": {"sharedDevicesAllocationPolicy": policy},
        }
    data = operator_values.gpu_operator_values([ts, mps], "v26.7.0")["devicePlugin"]["config"]["data"]
    assert yaml.safe_load(data["mps"])["flags"]["plugin"] == {"sharedDevicesAllocationPolicy": policy}
    # JSON names of PluginCommandLineFlags (api/config/v1/flags.go, v0.20.0); the plugin accepts
    # only these two values ("invalid --shared-devices-allocation-policy option",
    # cmd/nvidia-device-plugin/main.go validateFlags; api/config/v1/consts.go).
    assert set(yaml.safe_load(data["ts"])["flags"]["plugin"]) <= {
        "passDeviceSpecs",
        "deviceListStrategy",
        "deviceIDStrategy",
        "cdiAnnotationPrefix",
        "nvidiaCTKPath",
        "containerDriverRoot",
        "sharedDevicesAllocationPolicy",
    }


@pytest.mark.parametrize(("version", "plugin"), [("v25.3.1", "v0.17.2"), ("v25.10.1", "v0.18.1")])
def test_allocation_policy_is_refused_before_v26_7_0(version, plugin):
    raw = {
        "gpuOperator": {"chartVersion": version},
        "gpuNodeGroups": [{"name": "g", "instanceTypes": ["g4dn.12xlarge"], "sharedDevicesAllocationPolicy": "packed"}],
    }
    assert problems(raw) == [
        f'gpu-eks:gpuNodeGroups[0].sharedDevicesAllocationPolicy: received "packed"; expected no key with '
        f"gpuOperator.chartVersion {version} (device plugin {plugin}, which has no "
        "flags.plugin.sharedDevicesAllocationPolicy and would ignore it: NVIDIA/k8s-device-plugin "
        "api/config/v1/flags.go); chart v26.7.0 or newer reads it (device plugin v0.20.0)"
    ]
    # A group declared outside the settings meets the same rule in the operator's values.
    (g,) = plans({"name": "g", "instanceTypes": ["g4dn.12xlarge"], "sharedDevicesAllocationPolicy": "packed"})
    with pytest.raises(ValueError) as refused:
        operator_values.gpu_operator_values([g], version)
    assert str(refused.value) == (
        f"GPU node group 'g': sharedDevicesAllocationPolicy received 'packed'; expected no key with "
        f"gpuOperator.chartVersion {version} (device plugin {plugin}, which has no "
        "flags.plugin.sharedDevicesAllocationPolicy and would ignore it: NVIDIA/k8s-device-plugin "
        "api/config/v1/flags.go); chart v26.7.0 or newer reads it (device plugin v0.20.0)"
    )


# ---------------------------------------------------------------------------------------------
# 4. Verification: MPS clients prove their memory limit in the concurrent Job
# ---------------------------------------------------------------------------------------------

PROBE = "public.ecr.aws/docker/library/python:3.12-slim"


def test_the_mps_concurrent_job_runs_one_memory_probe_per_slot():
    (p,) = plans({"name": "t4", "mps": {"replicas": 4}})
    # 5,760 MiB above a 3,840 MiB share (15,360 / 4); 960 MiB (a quarter share) within, held.
    assert jobs.mps_probe_sizes(p) == (6039797760, 1006632960)
    spec = jobs.concurrent_job_spec(p, "vectoradd:img", PROBE)
    # Every slot of one node at once (4), the concurrent Job's deadline (180 s hold + 120 s to start).
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (
        4,
        4,
        0,
        300,
    )
    pod = spec["template"]["spec"]
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "timeslicing-check-t4"}},
            "topologyKey": "kubernetes.io/hostname",
        }
    ]
    (c,) = pod["containers"]
    assert (c["name"], c["image"]) == ("mps-probe", PROBE)
    # Exactly one slot (failRequestsGreaterThanOne), with the restricted profile's CPU and memory.
    assert c["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
        "requests": {"cpu": "10m", "memory": "128Mi"},
    }
    assert c["args"] == ['exec python3 -c "$MPS_PROBE" 6039797760 1006632960 180']
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env == {
        "MPS_PROBE": jobs.MPS_PROBE_PROGRAM,
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "HOME": "/tmp",  # the restricted profile's writable /tmp (podsecurity.py)
    }
    assert pod["nodeSelector"]["nvidia.com/device-plugin.config"] == "t4"


def test_time_slicing_and_exclusive_concurrent_jobs_run_vectoradd_not_the_probe():
    for sharing in ({"timeSlicing": {"replicas": 4}}, {"timeSlicing": {"replicas": 1}}):
        (p,) = plans({"name": "t4", **sharing})
        (c,) = jobs.concurrent_job_spec(p, "vectoradd:img", PROBE)["template"]["spec"]["containers"]
        assert (c["name"], c["image"], c["env"]) == ("vectoradd", "vectoradd:img", [{"name": "HOME", "value": "/tmp"}])
        assert c["args"][0].startswith("set -e; /cuda-samples/vectorAdd; ")


def test_the_probe_sizes_fit_the_gpu_for_every_replica_count():
    # Above the share, but the GPU has room for it even while every other client holds its quarter
    # share: only the MPS limit can refuse it (2 <= replicas <= 15 on a T4's 15,360 MiB).
    gpu = 15360 * 2**20
    for replicas in (2, 3, 15):
        (p,) = plans({"name": "t4", "mps": {"replicas": replicas}})
        above, within = jobs.mps_probe_sizes(p)
        share = gpu // replicas
        assert within < share < above
        assert above + (replicas - 1) * within <= gpu * 7 // 8


def test_the_exclusive_job_holds_more_than_half_of_each_gpu():
    (p,) = plans({"name": "big", "instanceTypes": ["g4dn.12xlarge"], "timeSlicing": {"replicas": 1}})
    spec = jobs.exclusive_job_spec(p, PROBE)
    # One pod per GPU, at once (the concurrent Job's deadline: 180 s hold + 120 s to start).
    assert (spec["parallelism"], spec["completions"], spec["activeDeadlineSeconds"]) == (4, 4, 300)
    pod = spec["template"]["spec"]
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == (
        "kubernetes.io/hostname"
    )
    (c,) = pod["containers"]
    assert c["image"] == PROBE
    # 60 % of the 15,360 MiB a T4 reports = 9,216 MiB: two pods on one T4 cannot both hold it.
    assert c["args"] == ['exec python3 -c "$GPU_PROBE" 9663676416 180']
    assert c["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
        "requests": {"cpu": "10m", "memory": "128Mi"},
    }
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env == {
        "GPU_PROBE": jobs.EXCLUSIVE_PROBE_PROGRAM,
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "HOME": "/tmp",
    }


# The probes cannot run on a GPU here: run them against a fake libcuda that behaves as the CUDA
# driver API documents (CUresult 0 = CUDA_SUCCESS, 2 = CUDA_ERROR_OUT_OF_MEMORY), with a GPU of
# `total` MiB and, under MPS, a per-client limit of `limit` MiB.

MIB = 2**20


class FakeCuda:
    def __init__(self, total_mib: int, limit_mib: int | None = None, gpus: int = 1, held_mib: int = 0):
        self.free = (total_mib - held_mib) * MIB
        self.limit = None if limit_mib is None else limit_mib * MIB
        self.gpus = gpus
        self.mine = 0

    def cuInit(self, flags: int) -> int:
        return 0

    def cuDeviceGetCount(self, count: Any) -> int:
        count._obj.value = self.gpus
        return 0

    def cuDeviceGet(self, dev: Any, ordinal: int) -> int:
        return 0

    def cuCtxCreate_v2(self, ctx: Any, flags: int, dev: Any) -> int:
        return 0

    def cuMemAlloc_v2(self, ptr: Any, size: Any) -> int:
        n = size.value
        if n > self.free or (self.limit is not None and self.mine + n > self.limit):
            return 2
        self.free -= n
        self.mine += n
        ptr._obj.value = n
        return 0

    def cuMemFree_v2(self, ptr: Any) -> int:
        self.free += ptr.value
        self.mine -= ptr.value
        return 0


def run_probe(
    monkeypatch: pytest.MonkeyPatch, program: str, args: list[str], cuda: FakeCuda, env: dict[str, str]
) -> tuple[object, str]:
    """(the exit code or message the program exits with, None on success; what it printed)."""
    import contextlib
    import ctypes
    import io
    import os
    import sys
    import time

    monkeypatch.setattr(ctypes, "CDLL", lambda name: cuda if name == "libcuda.so.1" else None)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    monkeypatch.setattr(sys, "argv", ["probe", *args])
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    for k, v in env.items():
        monkeypatch.setitem(os.environ, k, v)
    out = io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(program, "probe", "exec"), {"__name__": "__main__"})
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue()


MPS_ENV = {"CUDA_MPS_PIPE_DIRECTORY": "/mps/nvidia.com/gpu/pipe"}
# A T4 as NVML reports it (15,360 MiB), MPS replicas 4: the daemon's limit is 3,840 MiB per client.
T4_ARGS = ["6442450944", "1073741824", "180"]


def test_mps_probe_passes_when_the_daemon_limits_the_client(monkeypatch):
    code, out = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, T4_ARGS, FakeCuda(15360, limit_mib=3840), MPS_ENV)
    assert code is None
    assert out.splitlines() == [
        "above the share: 6144 MiB -> CUresult 2",
        "within the share: 1024 MiB -> CUresult 0",
        "MPS memory limit enforced; holding 1024 MiB and the slot for 180 s",
    ]


def test_mps_probe_passes_while_the_other_three_clients_hold_their_quarter_shares(monkeypatch):
    cuda = FakeCuda(15360, limit_mib=3840, held_mib=3 * 1024)
    code, _ = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, T4_ARGS, cuda, MPS_ENV)
    assert code is None


def test_mps_probe_fails_without_a_memory_limit(monkeypatch):
    code, out = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, T4_ARGS, FakeCuda(15360), MPS_ENV)
    assert code == "an allocation above the share did not fail with CUDA_ERROR_OUT_OF_MEMORY: no MPS memory limit"
    assert out.splitlines() == ["above the share: 6144 MiB -> CUresult 0"]


def test_mps_probe_fails_outside_mps(monkeypatch):
    code, out = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, T4_ARGS, FakeCuda(15360, limit_mib=3840), {})
    assert (code, out) == ("not an MPS client: CUDA_MPS_PIPE_DIRECTORY is unset", "")


def test_mps_probe_fails_when_the_share_cannot_be_allocated(monkeypatch):
    code, _ = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, T4_ARGS, FakeCuda(15360, limit_mib=512), MPS_ENV)
    assert code == "an allocation within the share failed"


@pytest.mark.parametrize(
    ("group", "total_mib", "limit_mib", "above", "within"),
    [
        # The daemon's limit is the driver-reported memory / replicas (T4 15,360 MiB, H100 81,559).
        ({"instanceTypes": ["g4dn.xlarge"], "mps": {"replicas": 2}}, 15360, 7680, 12079595520, 2013265920),
        ({"instanceTypes": ["g4dn.xlarge"], "mps": {"replicas": 15}}, 15360, 1024, 1610612736, 268435456),
        ({"instanceTypes": ["p5.4xlarge"], "mps": {"replicas": 48}}, 81559, 1699, 2672295936, 445382656),
    ],
    ids=["t4-x2", "t4-x15", "h100-x48"],
)
def test_the_probe_passes_with_its_real_sizes_while_every_other_client_holds_its_share(
    monkeypatch, group, total_mib, limit_mib, above, within
):
    (p,) = plans({"name": "g", **group})
    assert jobs.mps_probe_sizes(p) == (above, within)
    others = p.replicas - 1
    # Each other client holds its quarter share plus a CUDA context (300 MiB, a generous allowance).
    held = others * ((within >> 20) + 300)
    cuda = FakeCuda(total_mib, limit_mib=limit_mib, held_mib=held)
    code, out = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, [str(above), str(within), "180"], cuda, MPS_ENV)
    assert code is None, out
    # Without the daemon's limit the same allocation would succeed: only the limit refuses it.
    unlimited = FakeCuda(total_mib, held_mib=held)
    code, _ = run_probe(monkeypatch, jobs.MPS_PROBE_PROGRAM, [str(above), str(within), "180"], unlimited, MPS_ENV)
    assert code == "an allocation above the share did not fail with CUDA_ERROR_OUT_OF_MEMORY: no MPS memory limit"


EXCLUSIVE_ARGS = ["10307502080", "180"]  # 9,830 MiB of a T4


def test_exclusive_probe_holds_its_gpu(monkeypatch):
    code, out = run_probe(monkeypatch, jobs.EXCLUSIVE_PROBE_PROGRAM, EXCLUSIVE_ARGS, FakeCuda(15360), {})
    assert (code, out) == (None, "holding 9830 MiB of this pod's GPU for 180 s\n")


def test_exclusive_probe_fails_when_another_pod_holds_the_gpu(monkeypatch):
    code, _ = run_probe(monkeypatch, jobs.EXCLUSIVE_PROBE_PROGRAM, EXCLUSIVE_ARGS, FakeCuda(15360, held_mib=9830), {})
    assert code == "could not hold 9830 MiB (CUresult 2): another pod uses this GPU"


def test_exclusive_probe_fails_when_it_sees_more_than_one_gpu(monkeypatch):
    code, _ = run_probe(monkeypatch, jobs.EXCLUSIVE_PROBE_PROGRAM, EXCLUSIVE_ARGS, FakeCuda(15360, gpus=2), {})
    assert code == "2 GPUs visible, expected the 1 this pod requested"


def test_every_verification_pod_requests_one_slot():
    for spec in ({"mps": {"replicas": 4}}, {"timeSlicing": {"replicas": 1}}, {}):
        (p,) = plans({"name": "g", **spec})
        for job in (jobs.warmup_job_spec(p, "img"), jobs.concurrent_job_spec(p, "img", PROBE)):
            (c,) = job["template"]["spec"]["containers"]
            assert c["resources"]["limits"] == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}


# ---------------------------------------------------------------------------------------------
# 5. Day 2: switching modes touches no launch template or node group
# ---------------------------------------------------------------------------------------------

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
JOB = "kubernetes:batch/v1:Job"
GROUP = {"name": "t4", "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 2}}


def _dev(sharing: dict) -> Simulation:
    return run_stack("dev", ROOT, config_overrides={"gpu-eks:gpuNodeGroups": [{**GROUP, **sharing}]})


@pytest.fixture(scope="module")
def switched() -> dict[str, Simulation]:
    return {
        "ts": _dev({"timeSlicing": {"replicas": 4}}),
        "mps4": _dev({"mps": {"replicas": 4}}),
        "mps2": _dev({"mps": {"replicas": 2}}),
        "whole": _dev({"timeSlicing": {"replicas": 1}}),
    }


def _node_inputs(sim: Simulation) -> dict[str, str]:
    return {r.name: json.dumps(r.wire_inputs, sort_keys=True) for r in sim.by_type(LT) + sim.by_type(NG)}


def test_switching_modes_or_mps_replicas_keeps_every_node(switched):
    ts, mps4, mps2 = switched["ts"], switched["mps4"], switched["mps2"]
    assert len(_node_inputs(ts)) == 4
    assert _node_inputs(ts) == _node_inputs(mps4) == _node_inputs(mps2)
    names = {
        k: s.one(RELEASE, "gpu-eks-gpu-operator-release").inputs["values"]["devicePlugin"]["config"]["name"]
        for k, s in switched.items()
    }
    assert len(set(names.values())) == 4  # a new ConfigMap name each time: the DaemonSets roll
    assert _node_inputs(switched["whole"]) == _node_inputs(ts)


def test_each_mode_gets_its_verification_jobs(switched):
    mps_jobs = sorted(r.name for r in switched["mps4"].by_type(JOB))
    assert mps_jobs == ["gpu-eks-verify-t4-concurrent", "gpu-eks-verify-t4-isolation", "gpu-eks-verify-t4-warmup"]
    (c,) = switched["mps4"].one(JOB, "gpu-eks-verify-t4-concurrent").inputs["spec"]["template"]["spec"]["containers"]
    assert (c["name"], c["image"]) == ("mps-probe", PROBE)
    assert sorted(r.name for r in switched["ts"].by_type(JOB)) == [
        "gpu-eks-verify-t4-concurrent",
        "gpu-eks-verify-t4-isolation",
        "gpu-eks-verify-t4-warmup",
    ]
    assert sorted(r.name for r in switched["whole"].by_type(JOB)) == [
        "gpu-eks-verify-t4-concurrent",
        "gpu-eks-verify-t4-exclusive",
        "gpu-eks-verify-t4-isolation",
        "gpu-eks-verify-t4-warmup",
    ]
    out = switched["mps4"].outputs["gpuNodeGroups"]["t4"]
    assert (out["sharingMode"], out["sharedSlotsPerNode"], out["memoryPerSlotGiB"], out["resourceName"]) == (
        "mps",
        4,
        3.75,
        "nvidia.com/gpu",
    )
