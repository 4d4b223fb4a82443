"""The NCCL check of an EFA group (``verification.ncclAllReduce``, issues 32, 41): a two-node all-reduce
over EFA on ``pulumi up`` that fails unless NCCL used EFA and reached a bus bandwidth floor. What it
declares, its verdict line and what keeps it failing on the fabric only: docs/multi-node.md ("The
NCCL check"), which leaves the sources here:

* Two pods, two nodes, no MPI: an Indexed Job (batch/v1 ``completionMode: Indexed``: pod ``i`` gets
  the hostname ``<job>-<i>`` and ``JOB_COMPLETION_INDEX``) and a headless Service of the same name as
  the pods' ``subdomain``, so pod 1 reaches pod 0 at ``<job>-0.<service>`` (Kubernetes docs, "Indexed
  Job for Parallel Processing with Static Work Assignment", "DNS for Services and Pods"); ``torchrun
  --nnodes 2 --node_rank $JOB_COMPLETION_INDEX``, rendezvous on PyTorch's c10d TCP store on pod 0
  (``RENDEZVOUS_PORT``); a required pod anti-affinity. Exclusive groups only: NCCL needs whole GPUs.
* The verdict: bus bandwidth as nccl-tests defines it for all-reduce, algbw x 2(n-1)/n (NVIDIA/
  nccl-tests doc/PERFORMANCE.md), against ``catalog.efa.nccl_bus_bandwidth_floor_gbytes``; the
  transport from NCCL's own log at ``NCCL_DEBUG=INFO`` ("Using network AWS Libfabric" with
  aws-ofi-nccl, "Using network Libfabric" in its newer releases, "Using network Socket" when it fell
  back; anything else is ``unknown`` and fails).
* Huge pages: libfabric's EFA provider backs its buffers with 2 MiB pages unless
  ``FI_EFA_USE_HUGE_PAGE=0`` (libfabric fi_efa(7)); a managed group's pod requests
  ``hugepages-2Mi: 5120Mi`` as AWS's two-node NCCL test does (EKS User Guide, node-efa); Karpenter
  1.14.1 models no huge pages in an instance type (aws/karpenter-provider-aws
  pkg/providers/instancetype/types.go), so a Karpenter group's pod asks for none and sets the variable.
* Memory registration: without ``CAP_IPC_LOCK`` pinned memory is bounded by ``RLIMIT_MEMLOCK``.
  containerd's default capabilities on the AL2023 AMI leave it out and its runtime spec sets only
  ``RLIMIT_NOFILE`` (awslabs/amazon-eks-ami v20260724 nodeadm/internal/containerd/
  base-runtime-spec.json): the pod runs as AWS's example worker does, in the restricted profile
  (``IPC_LOCK`` would need root, Kubernetes setting no ambient capabilities, and the ``privileged``
  level), and prints ``ulimit -l`` first.
* Nodes booting minutes apart: each pod waits for pod 0's name to resolve, then torchrun's static
  rendezvous waits ``RENDEZVOUS_SECONDS`` (``--rdzv_conf timeout``; pytorch/pytorch
  torch.distributed.elastic.rendezvous.static_tcp_rendezvous, default 600 s); ``backoffLimit``
  retries other failures, ``podFailurePolicy`` FailJob ends the Job at the verdict's exit
  (``VERDICT_FAIL_EXIT``) and ignores ``DisruptionTarget``.

``verification.ncclAdvisory`` declares the Job without Pulumi's await (config/verification.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..blocks.podsecurity import restricted_pod_spec
from ..catalog import efa
from ..plan.group import GroupPlan

#: The all-reduce: 1 GiB of float32 per rank, 5 warm-up and 20 timed iterations.
MESSAGE_BYTES = 1 << 30
WARMUP = 5
ITERATIONS = 20
RENDEZVOUS_PORT = 29500
#: Two nodes from zero (autoscaler, boot, operator, image pull of a multi-GiB image), then minutes.
DEADLINE_SECONDS = 2400
#: How long each pod waits for the other (its node may boot minutes later): pod 0's name, then
#: torchrun's rendezvous. Within the deadline.
RENDEZVOUS_SECONDS = 1800
#: The script's exit status when NCCL ran and the verdict is FAIL: the Job fails at once.
VERDICT_FAIL_EXIT = 3
#: Retries of pods that failed for another reason (a rendezvous timeout, a pod that lost its peer).
BACKOFF_LIMIT = 4
CPU = "8"
MEMORY = "64Gi"
SHM_SIZE = "16Gi"
TMP_SIZE = "1Gi"

ALL_REDUCE_PROGRAM = f"""
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
x = torch.ones({MESSAGE_BYTES} // 4, device="cuda")
for _ in range({WARMUP}):
    dist.all_reduce(x)
torch.cuda.synchronize(); dist.barrier()
start = time.perf_counter()
for _ in range({ITERATIONS}):
    dist.all_reduce(x)
torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / {ITERATIONS}
busbw = {MESSAGE_BYTES} / seconds * 2 * (world - 1) / world / 1e9
if rank == 0:
    print(f"nccl-busbw={{busbw:.1f}}", flush=True)
dist.destroy_process_group()
"""


def nccl_name(plan: GroupPlan, image: str) -> str:
    """The Job's and Service's name: the group and a hash of the check (a changed type, floor,
    image or pod re-runs it: a Job's pod template cannot change in place), at most 63 characters
    (a Service name is a DNS label). The pod is hashed with a placeholder for its own name."""
    pod = nccl_job_spec(plan, image, "<name>")
    digest = hashlib.sha256(json.dumps({**_facts(plan), "job": pod}, sort_keys=True).encode()).hexdigest()[:8]
    return f"nccl-{plan.name}-{digest}"[:63]


def _facts(plan: GroupPlan) -> dict[str, Any]:
    return {
        "type": plan.instance_types[0],
        "gpus": plan.gpus_per_node,
        "efa": plan.efa_devices,
        "bytes": MESSAGE_BYTES,
        "iterations": ITERATIONS,
        "floor": efa.nccl_bus_bandwidth_floor_gbytes(plan.instance_types[0]),
    }


def check_script(plan: GroupPlan, name: str) -> str:
    """The container's shell script: wait for pod 0's name, torchrun, then the verdict from NCCL's
    log and the bandwidth (exit ``VERDICT_FAIL_EXIT`` on FAIL, torchrun's status when it failed)."""
    instance_type = plan.instance_types[0]
    floor = efa.nccl_bus_bandwidth_floor_gbytes(instance_type)
    peer = f"{name}-0.{name}"
    return (
        "set -u; cat > $HOME/allreduce.py <<'EOF'\n"
        f"{ALL_REDUCE_PROGRAM.strip()}\n"
        "EOF\n"
        'echo "nccl-check: locked memory $(ulimit -l)"; '
        f"end=$(( $(date +%s) + {RENDEZVOUS_SECONDS} )); "
        f"until getent hosts {peer} >/dev/null; do "
        f'if [ "$(date +%s)" -ge "$end" ]; then echo "nccl-check: {peer} did not resolve"; exit 1; fi; sleep 5; done; '
        f'torchrun --nnodes 2 --nproc_per_node {plan.gpus_per_node} --node_rank "$JOB_COMPLETION_INDEX" '
        f"--rdzv_backend static --master_addr {peer} --master_port {RENDEZVOUS_PORT} "
        f"--rdzv_conf timeout={RENDEZVOUS_SECONDS} $HOME/allreduce.py > $HOME/nccl.log 2>&1; "
        "rc=$?; cat $HOME/nccl.log; "
        "if grep -q 'Using network Socket' $HOME/nccl.log; then transport=Socket; "
        "elif grep -Eq 'Using network (AWS )?Libfabric' $HOME/nccl.log; then transport=EFA; "
        "else transport=unknown; fi; "
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then echo "nccl-check: second node transport=$transport rc=$rc"; '
        f'[ "$rc" != 0 ] && exit "$rc"; [ "$transport" = EFA ] || exit {VERDICT_FAIL_EXIT}; exit 0; fi; '
        "busbw=$(sed -n 's/^nccl-busbw=//p' $HOME/nccl.log | tail -1); "
        f'verdict=$(awk -v b="${{busbw:-0}}" -v f={floor} -v t="$transport" -v r="$rc" '
        '\'BEGIN {print (r == 0 && t == "EFA" && b + 0 >= f) ? "PASS" : "FAIL"}\'); '
        f'echo "nccl-check: {plan.name} {instance_type} busbw=${{busbw:-none}} GB/s floor={floor:g} GB/s '
        'transport=$transport $verdict"; '
        f'[ "$rc" != 0 ] && exit "$rc"; [ "$verdict" = PASS ] || exit {VERDICT_FAIL_EXIT}'
    )


def nccl_service_spec(name: str) -> dict[str, Any]:
    """The headless Service that names the Job's pods (``<job>-<i>.<service>``)."""
    return {
        "clusterIP": "None",
        "selector": {"batch.kubernetes.io/job-name": name},
        # The rendezvous starts before any readiness: publish the pods' addresses at once.
        "publishNotReadyAddresses": True,
        "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}],
    }


def nccl_network_policy_spec(name: str) -> dict[str, Any]:
    """What the namespace's deny-all takes away from the two pods: traffic with each other (the
    rendezvous and NCCL's bootstrap, over TCP; EFA's RDMA does not pass the pod network) and DNS."""
    pods = {"podSelector": {"matchLabels": {"batch.kubernetes.io/job-name": name}}}
    dns = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    return {
        "podSelector": pods["podSelector"],
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [pods]}],
        "egress": [{"to": [pods]}, dns],
    }


def _huge_pages(plan: GroupPlan) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(resources, env) for libfabric's huge pages: a request where the provider counts them when it
    launches a node (a managed group's Cluster Autoscaler), none and ``FI_EFA_USE_HUGE_PAGE=0`` on a
    Karpenter group (the module docstring says why)."""
    if not plan.provider.huge_pages:
        return {}, [{"name": "FI_EFA_USE_HUGE_PAGE", "value": "0"}]
    return {efa.HUGEPAGES_RESOURCE: efa.HUGEPAGES_REQUEST}, []


def nccl_job_spec(plan: GroupPlan, image: str, name: str) -> dict[str, Any]:
    """The Indexed Job of two pods on two nodes of ``plan``'s group (an exclusive EFA group)."""
    huge_pages, huge_page_env = _huge_pages(plan)
    pod = {
        "restartPolicy": "Never",
        "subdomain": name,
        "nodeSelector": dict(plan.node_labels),
        "tolerations": [dict(t) for t in plan.tolerations],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": name}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "containers": [
            {
                "name": "nccl",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "-c"],
                "args": [check_script(plan, name)],
                "env": [
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                    {"name": "FI_PROVIDER", "value": "efa"},
                    *huge_page_env,
                ],
                "resources": {
                    # Huge pages: requests equal to limits (Kubernetes, "Manage HugePages").
                    "requests": {"cpu": CPU, "memory": MEMORY, **huge_pages},
                    "limits": {
                        "cpu": CPU,
                        "memory": MEMORY,
                        **huge_pages,
                        plan.resource_name: plan.gpus_per_node,
                        efa.EFA_RESOURCE: plan.efa_devices,
                    },
                },
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}],
        "terminationGracePeriodSeconds": 5,
    }
    return {
        "completionMode": "Indexed",
        "completions": 2,
        "parallelism": 2,
        "backoffLimit": BACKOFF_LIMIT,
        # The verdict fails the Job at once; a disruption (preemption, a drained node) is not a try.
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "nccl", "operator": "In", "values": [VERDICT_FAIL_EXIT]},
                },
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            ]
        },
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        "template": {
            "metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
            "spec": restricted_pod_spec(pod, tmp_size=TMP_SIZE),
        },
    }
