"""Clusters whose GPU node groups differ, by construction: one shared set for every decision that
reads several groups' plans (tests/test_cross_group.py runs each over all of them).

Each cluster mixes capacity providers (managed node groups, Karpenter), sharing modes (time-sliced,
exclusive, MPS, MIG) and GPU families (T4, T4g, A10G, L4, an L4 vGPU slice, A100), several groups
each, so that a decision taken with ``all`` where ``any`` was meant (or the first group's answer,
or the last one's) differs from its definition on at least one cluster. Every cluster is a valid
stack (``load_settings``: the rules across groups hold, e.g. one migStrategy). Plain data;
tests/support/clusters.py loads them (``settings_of``, ``plans_of``) and gives them teams (``teams_of``).
"""

from __future__ import annotations

from typing import Any

ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 2}

#: The groups the clusters are made of (capacity provider, sharing mode, family in the name).
GROUPS: dict[str, dict[str, Any]] = {
    # Karpenter, time-sliced L4 (4 slots per GPU): its NodeOverlay is needed.
    "karpenter-timesliced-l4": {
        "name": "k-ts-l4",
        "capacityProvider": "karpenter",
        "instanceTypes": ["g6.xlarge"],
        "scaling": ZERO,
        "taints": [{"key": "k-ts", "effect": "NoSchedule"}],
        "timeSlicing": {"replicas": 4},
    },
    # Karpenter, exclusive T4: EC2's GPU count is right, no NodeOverlay.
    "karpenter-exclusive-t4": {
        "name": "k-ex-t4",
        "capacityProvider": "karpenter",
        "instanceTypes": ["g4dn.xlarge"],
        "scaling": ZERO,
        "timeSlicing": {"replicas": 1},
    },
    # Karpenter, an exclusive L4 vGPU slice (g6f): EC2 reports 0 GPUs, so it needs its NodeOverlay.
    "karpenter-exclusive-vgpu": {
        "name": "k-ex-g6f",
        "capacityProvider": "karpenter",
        "instanceTypes": ["g6f.large"],
        "scaling": ZERO,
        "timeSlicing": {"replicas": 1},
    },
    # Managed, time-sliced 4 x T4 renamed to nvidia.com/gpu.shared, two taints.
    "managed-timesliced-t4-renamed": {
        "name": "m-ts-t4",
        "instanceTypes": ["g4dn.12xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 3},
        "taints": [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "ml", "effect": "NoExecute"},
        ],
        "timeSlicing": {"replicas": 2, "profile": "shared-2", "renameByDefault": True},
    },
    # Managed, exclusive A10G.
    "managed-exclusive-a10g": {
        "name": "m-ex-a10g",
        "instanceTypes": ["g5.xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 4},
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        "timeSlicing": {"replicas": 1},
    },
    # Managed, MPS on one T4 (4 clients), its node repair off (issue 33).
    "managed-mps-t4": {
        "name": "m-mps-t4",
        "instanceTypes": ["g4dn.xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        "mps": {"replicas": 4},
        "repair": {"enabled": False},
    },
    # Managed, time-sliced T4g (Graviton).
    "managed-timesliced-t4g": {
        "name": "m-ts-t4g",
        "instanceTypes": ["g5g.xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        "taints": [{"key": "arm", "effect": "NoSchedule"}],
        "timeSlicing": {"replicas": 2},
    },
    # Managed, MIG A100 (mixed strategy): 7 1g.5gb slices per GPU, 2 pods on each.
    "managed-mig-a100": {
        "name": "m-mig-a100",
        "instanceTypes": ["p4d.24xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 1},
        "migStrategy": "mixed",
        "mig": {"migDevices": {"1g.5gb": 7}, "replicas": {"1g.5gb": 2}},
    },
    # Managed, exclusive L4 under the mixed MIG strategy (a cluster with a MIG group has one strategy).
    "managed-exclusive-l4-mixed": {
        "name": "m-ex-l4",
        "instanceTypes": ["g6.xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        "migStrategy": "mixed",
        "timeSlicing": {"replicas": 1},
    },
    # Managed, time-sliced A10G under the mixed MIG strategy.
    "managed-timesliced-a10g-mixed": {
        "name": "m-ts-a10g",
        "instanceTypes": ["g5.xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        "migStrategy": "mixed",
        "timeSlicing": {"replicas": 3},
    },
    # Managed, exclusive A100s with EFA (issue 32): the EFA device plugin's values name this group.
    "managed-efa-a100": {
        "name": "m-efa-a100",
        "instanceTypes": ["p4d.24xlarge"],
        "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
        "taints": [{"key": "efa", "effect": "NoSchedule"}],
        "efa": True,
        "availabilityZone": "us-west-2a",
        "timeSlicing": {"replicas": 1},
    },
    # Managed, exclusive H100s with EFA on an EC2 Capacity Block (issue 41): nodes only inside the
    # block's window, so no verification Job targets it by default.
    "managed-block-h100": {
        "name": "m-blk-h100",
        "instanceTypes": ["p5.48xlarge"],
        "capacityType": "CAPACITY_BLOCK",
        "capacityReservation": {"id": "cr-0a1b2c3d4e5f60718"},
        "availabilityZone": "us-west-2b",
        "efa": True,
        "scaling": ZERO,
        "timeSlicing": {"replicas": 1},
    },
    # Karpenter, exclusive H100s in an On-Demand Capacity Reservation (the reservedCapacity gate).
    "karpenter-reserved-h100": {
        "name": "k-res-h100",
        "capacityProvider": "karpenter",
        "instanceTypes": ["p5.48xlarge"],
        "scaling": ZERO,
        "capacityReservation": {"id": "cr-0123456789abcdef0"},
        "timeSlicing": {"replicas": 1},
    },
}

#: The clusters: several groups each, the groups of one cluster differing in what a decision reads.
CLUSTERS: dict[str, tuple[str, ...]] = {
    # A time-sliced Karpenter group beside an exclusive one (the NodeOverlay gate of issue 35).
    "karpenter-shared-beside-exclusive": ("karpenter-exclusive-t4", "karpenter-timesliced-l4"),
    # A time-sliced Karpenter group beside a managed one, the shared group last.
    "karpenter-shared-beside-managed": ("managed-exclusive-a10g", "karpenter-timesliced-l4"),
    # An exclusive vGPU slice on Karpenter beside a shared managed group.
    "vgpu-beside-managed-shared": ("managed-timesliced-t4-renamed", "karpenter-exclusive-vgpu"),
    # Every sharing mode but MIG, managed, two families and two architectures; shared one first.
    "managed-modes": (
        "managed-timesliced-t4-renamed",
        "managed-exclusive-a10g",
        "managed-mps-t4",
        "managed-timesliced-t4g",
    ),
    # MIG beside an exclusive and a time-sliced group (one strategy: mixed), MIG in the middle.
    "mig-beside-others": ("managed-exclusive-l4-mixed", "managed-mig-a100", "managed-timesliced-a10g-mixed"),
    # Nothing shared anywhere: whole GPUs, one per pod, on both providers.
    "all-exclusive": ("managed-exclusive-a10g", "karpenter-exclusive-t4"),
    # Multi-node groups (issues 32, 41) beside a plain one: EFA on two managed groups, one of them on
    # a Capacity Block, an ODCR on the Karpenter group.
    "multinode-beside-plain": (
        "managed-exclusive-a10g",
        "managed-efa-a100",
        "managed-block-h100",
        "karpenter-reserved-h100",
    ),
}

#: Groups a cluster cannot have, each refused with its key (tests/test_cross_group.py): an EFA group
#: left to spread over every zone of its subnets (issue 41: EFA traffic stays in one zone).
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "multi-zone-efa": (
        {**GROUPS["managed-efa-a100"], "availabilityZone": None},
        "gpu-eks:gpuNodeGroups[1].availabilityZone",
    ),
    "multi-zone-efa-karpenter": (
        {**GROUPS["karpenter-reserved-h100"], "efa": True},
        "gpu-eks:gpuNodeGroups[1].availabilityZone",
    ),
}
