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

from components.config import stackfile
from components.config.errors import ConfigError
from components.config.loading import load_settings
from components.plan.group import plan_group
from components.program import main
from components.verification import nccl
from tests.support import ROOT
from tests.test_examples import example
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
        "gpu-eks:verifyTimeSlicing: received false; expected true with verification.ncclAllReduce (its Jobs run there)",
        "gpu-eks:verification.ncclAllReduce: received true; expected false, or a group with efa and exclusive GPUs "
        "(timeSlicing replicas 1): NCCL needs every GPU of its node whole (a shared slot or a MIG slice is no NCCL "
        "device of its own)",
    ]


def test_the_check_needs_two_nodes():
    found = problems(
        [{**P5, "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}],
        verifyTimeSlicing=True,
        verification={"ncclAllReduce": True, "ncclImage": IMAGE},
    )
    assert found == [
        "gpu-eks:gpuNodeGroups[0].scaling.maxSize: received 1; expected at least 2 with verification.ncclAllReduce: "
        "its all-reduce runs across two nodes"
    ]


# --- the objects --------------------------------------------------------------------------------


def test_the_job_is_indexed_across_two_nodes_with_every_gpu_and_efa_device():
    p = plan()
    name = nccl.nccl_name(p)
    assert name.startswith("nccl-h100-") and len(name) == len("nccl-h100-") + 8
    job = nccl.nccl_job_spec(p, IMAGE, name)
    assert (job["completionMode"], job["completions"], job["parallelism"], job["backoffLimit"]) == ("Indexed", 2, 2, 0)
    pod = job["template"]["spec"]
    assert pod["subdomain"] == name
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": name}},
            "topologyKey": "kubernetes.io/hostname",
        }
    ]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {
        "cpu": "8",
        "memory": "64Gi",
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
    }
    assert container["securityContext"]["runAsNonRoot"] is True
    assert {"name": "shm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert "--nnodes 2 --nproc_per_node 8" in container["args"][0]
    assert f"--master_addr {name}-0.{name} --master_port 29500" in container["args"][0]


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
    assert sorted(jobs) == [
        "gpu-eks-verify-a100-odcr-nccl",
        "gpu-eks-verify-h100-block-nccl",
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
    assert verification.nccl_floors == {"h100-block": 200.0, "a100-odcr": 25.0, "h100-karpenter": 200.0}
    assert sorted(verification.nccl_jobs) == ["a100-odcr", "h100-block", "h100-karpenter"]


def test_no_check_without_the_setting():
    sim = example("mig-h100")
    assert [r.name for r in sim.by_type("kubernetes:batch/v1:Job") if r.name.endswith("-nccl")] == []


# --- the script against a stand-in torchrun --------------------------------------------------------


def run_script(tmp_path: Path, index: int, log: str, rc: int = 0) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    torchrun = bin_dir / "torchrun"
    # Records its arguments, prints what NCCL and the program would, exits with rc.
    torchrun.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/args\nprintf '{log}\\n'\nexit {rc}\n")
    torchrun.chmod(torchrun.stat().st_mode | stat.S_IEXEC)
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
    assert (
        out.stdout.splitlines()[-1] == "nccl-check: h100 p5.48xlarge busbw=352.4 GB/s floor=200 GB/s transport=EFA PASS"
    )
    assert (
        (tmp_path / "args")
        .read_text()
        .startswith("--nnodes 2 --nproc_per_node 8 --node_rank 0 --master_addr nccl-x-0.nccl-x")
    )


def test_efa_below_the_floor_fails(tmp_path):
    out = run_script(tmp_path, 0, "NCCL INFO Using network Libfabric\\nnccl-busbw=120.0")
    assert out.returncode == 1
    assert (
        out.stdout.splitlines()[-1] == "nccl-check: h100 p5.48xlarge busbw=120.0 GB/s floor=200 GB/s transport=EFA FAIL"
    )


def test_the_socket_fallback_fails_whatever_its_bandwidth(tmp_path):
    out = run_script(
        tmp_path, 0, "NCCL INFO NET/OFI aws-ofi-nccl failed\\nNCCL INFO Using network Socket\\nnccl-busbw=250.0"
    )
    assert out.returncode == 1
    assert (
        out.stdout.splitlines()[-1]
        == "nccl-check: h100 p5.48xlarge busbw=250.0 GB/s floor=200 GB/s transport=Socket FAIL"
    )


def test_the_second_node_fails_on_the_socket_fallback_too(tmp_path):
    out = run_script(tmp_path, 1, "NCCL INFO Using network Socket")
    assert out.returncode == 1
    assert out.stdout.splitlines()[-1] == "nccl-check: second node transport=Socket rc=0"


def test_a_failed_run_fails(tmp_path):
    out = run_script(tmp_path, 0, "NCCL WARN connect failed", rc=1)
    assert out.returncode == 1
    assert (
        out.stdout.splitlines()[-1]
        == "nccl-check: h100 p5.48xlarge busbw=none GB/s floor=200 GB/s transport=unknown FAIL"
    )
