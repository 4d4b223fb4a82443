"""Issue 32: the NCCL check of EFA groups (verification/nccl.py): its Job, Service and NetworkPolicy
as literals, its settings' rules, the example's render, and its shell script run against a
recording stand-in of torchrun (EFA at, below and above the floor; the socket fallback)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.check.loading import load_settings
from components.config import stackfile
from components.config.errors import ConfigError
from components.plan.group import plan_group
from components.program import main
from components.verification import nccl
from tests.support.paths import ROOT
from tests.support.simulation import example
from tooling.simulation import run_program

P5 = {
    "name": "h100",
    "instanceTypes": ["p5.48xlarge"],
    "timeSlicing": {"replicas": 1},
    "efa": True,
    "availabilityZone": "us-east-2a",
}
IMAGE = "example.com/pytorch:efa"


def settings(groups: list[dict[str, Any]], **extra: Any) -> Any:
    return load_settings({"clusterName": "c", "gpuNodeGroups": groups, **extra})


def problems(groups: list[dict[str, Any]], **extra: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        settings(groups, **extra)
    return [str(p) for p in info.value.problems]


def plan(**group: Any) -> Any:
    return plan_group(settings([{**P5, **group}]).gpu_node_groups[0])


# --- settings -----------------------------------------------------------------------------------


def test_the_check_needs_its_image_the_verification_and_an_exclusive_efa_group():
    assert problems([{"name": "t4"}], verification={"ncclAllReduce": True}) == [
        "gpu-eks:verification.ncclImage: received null; expected an image with PyTorch, NCCL, libfabric and "
        "aws-ofi-nccl",
        "gpu-eks:verification.enabled: received false; expected true with verification.ncclAllReduce (its Jobs "
        "run there)",
        "gpu-eks:verification.ncclAllReduce: received true; expected false, or a group with efa and exclusive GPUs "
        "(timeSlicing replicas 1): NCCL needs every GPU of its node whole (a shared slot or a MIG slice is no NCCL "
        "device of its own)",
    ]


def test_the_check_needs_two_nodes():
    found = problems(
        [{**P5, "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}],
        verification={"enabled": True, "ncclAllReduce": True, "ncclImage": IMAGE},
    )
    assert found == [
        "gpu-eks:gpuNodeGroups[0].scaling.maxSize: received 1; expected at least 2 with verification.ncclAllReduce: "
        "its all-reduce runs across two nodes"
    ]


def test_only_the_exclusive_efa_groups_need_two_nodes_beside_groups_that_differ():
    """One node is enough for the groups the check does not run on (time-sliced, MIG, an exclusive
    group without EFA, a time-sliced EFA group); the exclusive EFA group is refused at its own index."""
    one = {"scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}, "migStrategy": "mixed"}
    found = problems(
        [
            {"name": "t4", "timeSlicing": {"replicas": 4}, **one},
            {"name": "a100", "instanceTypes": ["p4d.24xlarge"], "mig": {"migDevices": {"1g.5gb": 7}}, **one},
            {"name": "l4", "instanceTypes": ["g6.xlarge"], "timeSlicing": {"replicas": 1}, **one},
            {**P5, "name": "h100-shared", "timeSlicing": {"replicas": 2}, **one},
            {**P5, **one},
        ],
        verification={"enabled": True, "ncclAllReduce": True, "ncclImage": IMAGE},
    )
    assert found == [
        "gpu-eks:gpuNodeGroups[4].scaling.maxSize: received 1; expected at least 2 with verification.ncclAllReduce: "
        "its all-reduce runs across two nodes"
    ]


# --- the objects --------------------------------------------------------------------------------


def test_the_job_is_indexed_across_two_nodes_with_every_gpu_and_efa_device():
    p = plan()
    name = nccl.nccl_name(p, IMAGE)
    # A new image or pod re-runs the check under a new name (a Job's pod template is immutable).
    assert nccl.nccl_name(p, "example.com/pytorch:other") != name
    assert name.startswith("nccl-h100-") and len(name) == len("nccl-h100-") + 8
    job = nccl.nccl_job_spec(p, IMAGE, name)
    assert (job["completionMode"], job["completions"], job["parallelism"], job["backoffLimit"]) == ("Indexed", 2, 2, 4)
    # The verdict fails the Job at once; any other failure is retried (a peer that came late).
    assert job["podFailurePolicy"] == {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "nccl", "operator": "In", "values": [3]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        ]
    }
    pod = job["template"]["spec"]
    assert pod["subdomain"] == name
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": name}},
            "topologyKey": "kubernetes.io/hostname",
        }
    ]
    (container,) = pod["containers"]
    # Huge pages for libfabric's buffers, as AWS's NCCL test on EKS asks (a managed group).
    assert container["resources"] == {
        "requests": {"cpu": "8", "memory": "64Gi", "hugepages-2Mi": "5120Mi"},
        "limits": {
            "cpu": "8",
            "memory": "64Gi",
            "hugepages-2Mi": "5120Mi",
            "nvidia.com/gpu": 8,
            "vpc.amazonaws.com/efa": 32,
        },
    }
    assert "FI_EFA_USE_HUGE_PAGE" not in {e["name"] for e in container["env"]}
    # The restricted profile of every verification pod: non-root, every capability dropped.
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}} in pod["volumes"]
    assert {"name": "shm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert "--nnodes 2 --nproc_per_node 8" in container["args"][0]
    assert (
        f"--rdzv_backend static --master_addr {name}-0.{name} --master_port 29500 --rdzv_conf timeout=1800"
        in container["args"][0]
    )


def test_a_karpenter_group_turns_libfabrics_huge_pages_off_instead():
    """Karpenter 1.14.1 knows no huge pages of an instance type: a pod requesting them would get no node."""
    p = plan(capacityProvider="karpenter", scaling={"minSize": 0, "desiredSize": 0, "maxSize": 2})
    (container,) = nccl.nccl_job_spec(p, IMAGE, "n")["template"]["spec"]["containers"]
    assert "hugepages-2Mi" not in container["resources"]["limits"]
    assert "hugepages-2Mi" not in container["resources"]["requests"]
    assert {"name": "FI_EFA_USE_HUGE_PAGE", "value": "0"} in container["env"]


def test_the_all_reduce_program_is_python():
    compile(nccl.ALL_REDUCE_PROGRAM, "allreduce.py", "exec")
    assert "busbw = 1073741824 / seconds * 2 * (world - 1) / world / 1e9" in nccl.ALL_REDUCE_PROGRAM


def test_the_service_and_policy_name_the_job_pods():
    assert nccl.nccl_service_spec("n") == {
        "clusterIP": "None",
        "selector": {"batch.kubernetes.io/job-name": "n"},
        "publishNotReadyAddresses": True,
        "ports": [{"name": "rendezvous", "port": 29500, "targetPort": 29500}],
    }
    pods = {"podSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "n"}}}
    assert nccl.nccl_network_policy_spec("n") == {
        "podSelector": pods["podSelector"],
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [pods]}],
        "egress": [{"to": [pods]}, {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}],
    }


def test_the_example_declares_a_check_per_exclusive_efa_group():
    sim = example("multinode")
    jobs = {r.name: r.inputs for r in sim.by_type("kubernetes:batch/v1:Job") if r.name.endswith("-nccl")}
    # The Capacity Block group gets none (verification.capacityBlocks: skip, issue 41).
    assert sorted(jobs) == [
        "gpu-eks-verify-a100-odcr-nccl",
        "gpu-eks-verify-h100-karpenter-nccl",
    ]
    limits = jobs["gpu-eks-verify-a100-odcr-nccl"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert (limits["nvidia.com/gpu"], limits["vpc.amazonaws.com/efa"]) == (8, 4)


def test_the_verification_names_each_check_and_its_floor():
    """What the verification component registers as its outputs (``ncclJobs``, ``ncclFloorsGBps``)."""
    config: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "Pulumi.multinode.yaml").read_text())["config"]
    clusters: list[Any] = []
    run_program(
        lambda: clusters.append(main()),
        stackfile.cli_config(config),
        project=stackfile.project_name(ROOT),
        stack="multinode",
    )
    verification = clusters[0].verification
    assert verification.nccl_floors == {"a100-odcr": 25.0, "h100-karpenter": 200.0}
    assert sorted(verification.nccl_jobs) == ["a100-odcr", "h100-karpenter"]


def test_no_check_without_the_setting():
    sim = example("mig-h100")
    assert [r.name for r in sim.by_type("kubernetes:batch/v1:Job") if r.name.endswith("-nccl")] == []


# --- the script against a stand-in torchrun --------------------------------------------------------


def stand_in(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def run_script(
    tmp_path: Path, index: int, log: str, rc: int = 0, resolves_after: int = 0, seconds_per_call: int = 1
) -> subprocess.CompletedProcess[str]:
    """The check's script with stand-ins of what it runs, each from that tool's own interface:
    ``torchrun`` records its arguments, prints what NCCL and the program would and exits with ``rc``;
    ``getent hosts NAME`` prints "ADDRESS NAME" and exits 0 once pod 0 has an address (after
    ``resolves_after`` calls), else exits 2 ("One or more supplied key could not be found in the
    database", getent(1)); ``date +%s`` a clock that moves ``seconds_per_call`` a call; ``sleep``
    returns at once."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in(bin_dir, "torchrun", f"echo \"$@\" > {tmp_path}/args\nprintf '{log}\\n'\nexit {rc}")
    stand_in(
        bin_dir,
        "getent",
        f"n=$(cat {tmp_path}/getent 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/getent\n"
        f'[ "$1" = hosts ] || exit 1\n[ "$n" -ge {resolves_after} ] || exit 2\necho "10.0.3.7 $2"',
    )
    stand_in(
        bin_dir,
        "date",
        f"t=$(cat {tmp_path}/clock 2>/dev/null || echo 1700000000); echo $((t + {seconds_per_call})) > "
        f"{tmp_path}/clock\necho $t",
    )
    stand_in(bin_dir, "sleep", "exit 0")
    p = plan()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "JOB_COMPLETION_INDEX": str(index),
    }
    return subprocess.run(
        ["/bin/bash", "-c", nccl.check_script(p, "nccl-x")], env=env, capture_output=True, text=True, check=False
    )


def test_efa_above_the_floor_passes(tmp_path):
    out = run_script(tmp_path, 0, "NCCL INFO Using network AWS Libfabric\\nnccl-busbw=352.4")
    assert out.returncode == 0
    assert out.stdout.splitlines()[0].startswith("nccl-check: locked memory ")
    assert (
        out.stdout.splitlines()[-1] == "nccl-check: h100 p5.48xlarge busbw=352.4 GB/s floor=200 GB/s transport=EFA PASS"
    )
    assert (
        (tmp_path / "args")
        .read_text()
        .startswith("--nnodes 2 --nproc_per_node 8 --node_rank 0 --rdzv_backend static --master_addr nccl-x-0.nccl-x")
    )


def test_efa_below_the_floor_fails_with_the_verdicts_exit_status(tmp_path):
    out = run_script(tmp_path, 0, "NCCL INFO Using network Libfabric\\nnccl-busbw=120.0")
    assert out.returncode == nccl.VERDICT_FAIL_EXIT == 3
    assert (
        out.stdout.splitlines()[-1] == "nccl-check: h100 p5.48xlarge busbw=120.0 GB/s floor=200 GB/s transport=EFA FAIL"
    )


def test_the_socket_fallback_fails_whatever_its_bandwidth(tmp_path):
    out = run_script(
        tmp_path, 0, "NCCL INFO NET/OFI aws-ofi-nccl failed\\nNCCL INFO Using network Socket\\nnccl-busbw=250.0"
    )
    assert out.returncode == 3
    assert (
        out.stdout.splitlines()[-1]
        == "nccl-check: h100 p5.48xlarge busbw=250.0 GB/s floor=200 GB/s transport=Socket FAIL"
    )


def test_the_second_node_fails_on_the_socket_fallback_too(tmp_path):
    out = run_script(tmp_path, 1, "NCCL INFO Using network Socket")
    assert out.returncode == 3
    assert out.stdout.splitlines()[-1] == "nccl-check: second node transport=Socket rc=0"


def test_a_failed_run_fails_with_torchruns_status_so_the_job_retries_it(tmp_path):
    out = run_script(tmp_path, 0, "NCCL WARN connect failed", rc=1)
    assert out.returncode == 1
    assert (
        out.stdout.splitlines()[-1]
        == "nccl-check: h100 p5.48xlarge busbw=none GB/s floor=200 GB/s transport=unknown FAIL"
    )


def test_a_peer_booting_minutes_later_is_waited_for(tmp_path):
    # Pod 0's name resolves only after 50 lookups (about 4 minutes at one lookup per 5 s).
    out = run_script(tmp_path, 1, "NCCL INFO Using network AWS Libfabric", resolves_after=50, seconds_per_call=5)
    assert out.returncode == 0
    assert (tmp_path / "getent").read_text().strip() == "51"
    assert out.stdout.splitlines()[-1] == "nccl-check: second node transport=EFA rc=0"


def test_a_peer_that_never_comes_fails_after_the_rendezvous_time(tmp_path):
    out = run_script(tmp_path, 1, "", resolves_after=10**6, seconds_per_call=600)
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1] == "nccl-check: nccl-x-0.nccl-x did not resolve"
    assert not (tmp_path / "args").exists()  # torchrun never ran


@pytest.mark.parametrize(
    "provider",
    [{}, {"capacityProvider": "karpenter", "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2}}],
    ids=["managed", "karpenter"],
)
def test_the_job_service_and_policy_validate_against_the_kubernetes_schemas(provider):
    """podFailurePolicy, hugepages and the rest through Kubernetes 1.35's OpenAPI schemas (strict)."""
    import kubernetes_validate

    p = plan(**provider)
    name = nccl.nccl_name(p, IMAGE)
    for api_version, kind, spec in (
        ("batch/v1", "Job", nccl.nccl_job_spec(p, IMAGE, name)),
        ("v1", "Service", nccl.nccl_service_spec(name)),
        ("networking.k8s.io/v1", "NetworkPolicy", nccl.nccl_network_policy_spec(name)),
    ):
        obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "v"}, "spec": spec}
        kubernetes_validate.validate(obj, "1.35.0", strict=True)
