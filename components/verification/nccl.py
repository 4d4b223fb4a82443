"""The NCCL check of an EFA group (``verification.ncclAllReduce``, issue 32): a two-node all-reduce
over EFA, on ``pulumi up``, that fails unless NCCL used EFA and reached a bus bandwidth floor.

Design, without an MPI operator: an Indexed Job (batch/v1 ``completionMode: Indexed``, completions =
parallelism = 2: the Job controller gives pod ``i`` the hostname ``<job>-<i>`` and the env
``JOB_COMPLETION_INDEX``) and a headless Service of the same name that is the pods' ``subdomain``,
so pod 1 reaches pod 0 at ``<job>-0.<service>`` (Kubernetes docs, "Indexed Job for Parallel
Processing with Static Work Assignment" and "DNS for Services and Pods": a pod with hostname and
subdomain matching a headless Service gets that FQDN). Each pod runs ``torchrun`` with
``--nnodes 2 --node_rank $JOB_COMPLETION_INDEX`` and one process per GPU; the rendezvous is
PyTorch's c10d TCP store on pod 0 (port ``RENDEZVOUS_PORT``). A required pod anti-affinity puts the
two pods on two nodes; each asks for all GPUs and all EFA devices of its node
(``vpc.amazonaws.com/efa``: the EFA device plugin mounts them). Only on exclusive groups: NCCL needs
whole GPUs (the device plugin refuses more than one shared slot per pod by default, and a MIG slice
is no NCCL peer). Why no MPI: torchrun needs no SSH between pods nor an operator; the check is an
all-reduce, not nccl-tests' binary.

Each rank all-reduces a ``MESSAGE_BYTES`` float32 tensor ``ITERATIONS`` times after ``WARMUP``
iterations and rank 0 prints, in the Job's log (container ``nccl``, pod index 0):

    nccl-check: <group> <type> busbw=<x> GB/s floor=<y> GB/s transport=<EFA|Socket> PASS|FAIL

Bus bandwidth is nccl-tests' definition for all-reduce: algbw x 2(n-1)/n over n ranks
(NVIDIA/nccl-tests doc/PERFORMANCE.md). The floor is ``catalog.efa.nccl_bus_bandwidth_floor_gbytes``.
The transport comes from NCCL's own log (``NCCL_DEBUG=INFO``: "Using network AWS Libfabric" with
aws-ofi-nccl, "Using network Libfabric" in its newer releases, "Using network Socket" when it fell
back; anything else is ``unknown`` and fails too): a socket fallback prints
``transport=Socket ... FAIL`` and the Job fails, whatever its bandwidth. The image brings PyTorch,
NCCL, libfabric and aws-ofi-nccl (the AMI has the EFA driver only: efa/chart.py).

Security: the verification namespace enforces the restricted Pod Security Standard; this pod meets it
(podsecurity.py) and adds memory for the tensors and a ``/dev/shm`` (NCCL's intra-node buffers). Not
run on EFA hardware here: whether the image's NCCL registers EFA memory as a non-root user with the
container runtime's default locked-memory limit is the first thing to look at if the check fails
with an ``ibv_reg_mr`` error in its log.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..catalog import efa as efa_catalog
from ..plan.group import GroupPlan
from .podsecurity import restricted_pod_spec

#: The all-reduce: 1 GiB of float32 per rank, 5 warm-up and 20 timed iterations.
MESSAGE_BYTES = 1 << 30
WARMUP = 5
ITERATIONS = 20
RENDEZVOUS_PORT = 29500
#: Two nodes from zero (autoscaler, boot, operator, image pull of a multi-GiB image), then minutes.
DEADLINE_SECONDS = 2400
CPU = "8"
MEMORY = "64Gi"
SHM_SIZE = "16Gi"

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


def nccl_name(plan: GroupPlan) -> str:
    """The Job's and Service's name: the group and a hash of the check (a changed check, type or
    floor re-runs it), at most 63 characters (a Service name is a DNS label)."""
    digest = hashlib.sha256(json.dumps(_facts(plan), sort_keys=True).encode()).hexdigest()[:8]
    return f"nccl-{plan.name}-{digest}"[:63]


def _facts(plan: GroupPlan) -> dict[str, Any]:
    return {
        "type": plan.instance_types[0],
        "gpus": plan.gpus_per_node,
        "efa": plan.efa_devices,
        "bytes": MESSAGE_BYTES,
        "iterations": ITERATIONS,
        "floor": efa_catalog.nccl_bus_bandwidth_floor_gbytes(plan.instance_types[0]),
    }


def check_script(plan: GroupPlan, name: str) -> str:
    """The container's shell script: torchrun, then the verdict from NCCL's log and the bandwidth."""
    instance_type = plan.instance_types[0]
    floor = efa_catalog.nccl_bus_bandwidth_floor_gbytes(instance_type)
    return (
        "set -u; cat > $HOME/allreduce.py <<'EOF'\n"
        f"{ALL_REDUCE_PROGRAM.strip()}\n"
        "EOF\n"
        f'torchrun --nnodes 2 --nproc_per_node {plan.gpus_per_node} --node_rank "$JOB_COMPLETION_INDEX" '
        f"--master_addr {name}-0.{name} --master_port {RENDEZVOUS_PORT} $HOME/allreduce.py > $HOME/nccl.log 2>&1; "
        "rc=$?; cat $HOME/nccl.log; "
        "if grep -q 'Using network Socket' $HOME/nccl.log; then transport=Socket; "
        "elif grep -Eq 'Using network (AWS )?Libfabric' $HOME/nccl.log; then transport=EFA; "
        "else transport=unknown; fi; "
        'if [ "$JOB_COMPLETION_INDEX" != 0 ]; then echo "nccl-check: second node transport=$transport rc=$rc"; '
        '[ "$rc" = 0 ] && [ "$transport" = EFA ]; exit $?; fi; '
        "busbw=$(sed -n 's/^nccl-busbw=//p' $HOME/nccl.log | tail -1); "
        f'verdict=$(awk -v b="${{busbw:-0}}" -v f={floor} -v t="$transport" -v r="$rc" '
        '\'BEGIN {print (r == 0 && t == "EFA" && b + 0 >= f) ? "PASS" : "FAIL"}\'); '
        f'echo "nccl-check: {plan.name} {instance_type} busbw=${{busbw:-none}} GB/s floor={floor:g} GB/s '
        'transport=$transport $verdict"; '
        '[ "$verdict" = PASS ]'
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


def nccl_job_spec(plan: GroupPlan, image: str, name: str) -> dict[str, Any]:
    """The Indexed Job of two pods on two nodes of ``plan``'s group (an exclusive EFA group)."""
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
                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "FI_PROVIDER", "value": "efa"}],
                "resources": {
                    "requests": {"cpu": CPU, "memory": MEMORY},
                    "limits": {
                        "cpu": CPU,
                        "memory": MEMORY,
                        plan.resource_name: plan.gpus_per_node,
                        efa_catalog.EFA_RESOURCE: plan.efa_devices,
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
        "backoffLimit": 0,
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        "template": {
            "metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
            "spec": restricted_pod_spec(pod),
        },
    }
