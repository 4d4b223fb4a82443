"""The verification of a MIG group: one pod per slot of one node, all at once, each proving its slice.

On a MIG group the concurrent Job of ``jobs.py`` becomes one Job per resource the node advertises
(the plan's ``advertised_resources``: ``nvidia.com/gpu`` under single, one
``nvidia.com/mig-<profile>`` per profile under mixed), as many pods as the node advertises of it.
Every pod of every Job of the group carries one label and a required pod affinity on it, so all of
them run on one node at the same time (the deadline of ``jobs.concurrent_job_spec`` makes them
overlap). The boot stage has cut the slices before kubelet started (plan/boot.py): nothing waits
for a label.
Each pod:

* lists its devices with ``nvidia-smi -L`` and exits 1 unless it sees exactly one MIG device, of
  the profile its resource stands for (``MIG <profile> Device <n>``: the line nvidia-smi prints
  for a MIG device; the NVIDIA runtime mounts nvidia-smi with the ``utility`` capability);
* allocates 90 % of the memory CUDA reports for its device (``cuMemGetInfo``: a MIG device's own
  memory) divided by the slice's time-slicing replicas, and holds it and its slot: two unshared
  pods on one slice could not both hold 90 % of it, so the Jobs complete only if each pod has a
  slice of its own and its neighbours' memory is out of its reach.

Not run on a GPU here: the probe is checked for its arguments and its Python syntax (tests).
"""

from __future__ import annotations

from typing import Any

from ..plan.group import GroupPlan
from .jobs import CONCURRENT_DEADLINE_SECONDS, CUDA_PREAMBLE, HOLD_SECONDS, _job_spec, _pod_spec, _probe_env

#: The share of its slice's memory (over the slice's replicas) each pod holds.
MIG_FILL_FRACTION = 0.9

#: argv: the MIG profile the pod must see, the slice's replicas, seconds to hold.
MIG_PROBE_PROGRAM = (
    """
import ctypes, re, subprocess, sys, time
profile, replicas, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True).stdout
print(listing)
seen = re.findall(r"^\\s*MIG (\\S+)\\s+Device\\s+\\d+:", listing, re.M)
if seen != [profile]:
    sys.exit(f"MIG devices visible: {seen}; expected exactly one {profile}")"""
    + CUDA_PREAMBLE
    + """count, ptr = ctypes.c_int(), ctypes.c_uint64()
check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
if count.value != 1:
    sys.exit(f"{count.value} CUDA devices visible, expected the 1 slice this pod requested")
free, total = ctypes.c_size_t(), ctypes.c_size_t()
check("cuMemGetInfo", cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)))
size = int(total.value * FRACTION) // replicas
rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size))
if rc != 0:
    sys.exit(f"could not hold {size >> 20} of {total.value >> 20} MiB (CUresult {rc}): another pod uses this slice")
print(f"{profile}: holding {size >> 20} of {total.value >> 20} MiB of this slice for {hold} s")
time.sleep(hold)
"""
).replace("FRACTION", str(MIG_FILL_FRACTION))


def _profile_of(plan: GroupPlan, resource: str) -> str:
    """The MIG profile a resource of the plan stands for (single: the layout's one profile)."""
    assert plan.mig_layout is not None
    if resource.startswith("nvidia.com/mig-"):
        return resource.removeprefix("nvidia.com/mig-")
    (profile,) = plan.mig_layout
    return profile


def mig_job_specs(plan: GroupPlan, image: str) -> dict[str, dict[str, Any]]:
    """Per resource of a MIG group's node, the Job of one pod per slot of it (see the module)."""
    shared = {"gpu-eks.io/mig-check": plan.name}
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": shared}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    replicas = plan.settings.mig.replicas if plan.settings.mig is not None else {}
    specs: dict[str, dict[str, Any]] = {}
    for resource, count in plan.advertised_resources.items():
        profile = _profile_of(plan, resource)
        script = f'exec python3 -c "$MIG_PROBE" {profile} {replicas.get(profile, 1)} {HOLD_SECONDS}'
        pod = _pod_spec(plan, image, script, affinity, "mig-probe", _probe_env("MIG_PROBE", MIG_PROBE_PROGRAM))
        pod["containers"][0]["resources"] = {"limits": {resource: 1}}
        labels = {"app.kubernetes.io/name": f"mig-check-{plan.name}-{profile}", **shared}
        specs[resource] = _job_spec(labels, count, CONCURRENT_DEADLINE_SECONDS, pod)
    return specs
