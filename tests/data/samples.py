"""Settings samples several test modules share, as plain data (nothing here is computed; tests/
test_layout.py keeps it so): the configurations the promise tests run besides the stacks, what a
consumer's program gives ``GpuCapacity``, and the clusters of the teams' tests.

The expected values the library promises for them are in tests/data/promised.py.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# The runs of the promise tests besides dev and prod (tests/support/simulation.py simulate_run)
# ---------------------------------------------------------------------------------------------

#: The name the promise tests give the variant run (it is stack "dev" with VARIANT_OVERRIDES).
VARIANT = "variant"
#: The name of the autoscaler run (stack "dev" with AUTOSCALED_OVERRIDES).
AUTOSCALED = "autoscaled"
#: A stack named "defaults" whose config sets only the region: every gpu-eks key at its default.
DEFAULTS = "defaults"

#: A third configuration: what dev and prod leave at defaults (existing VPC, pinned AMI releases,
#: two GPU groups with a group at desired 0, extra labels and taints, an older chart, renamed
#: resource, custom namespaces). Run as stack "dev" with these overrides.
VARIANT_OVERRIDES: dict[str, object] = {
    "gpu-eks:clusterName": "ml-variant",
    "gpu-eks:kubernetesVersion": "1.34",
    "gpu-eks:network": {
        "vpcId": "vpc-0b10c000000000001",
        "privateSubnetIds": ["subnet-0aa00000000000001", "subnet-0aa00000000000002"],
        "publicSubnetIds": ["subnet-0bb00000000000001"],
    },
    "gpu-eks:endpointPublicAccessCidrs": [],
    "gpu-eks:adminPrincipalArns": ["arn:aws:iam::123456789012:role/Bob", "arn:aws:iam::123456789012:user/alice"],
    "gpu-eks:controlPlaneLogTypes": ["api", "audit"],
    "gpu-eks:deletionProtection": True,
    "gpu-eks:systemNodeGroup": {
        "instanceTypes": ["m6i.xlarge"],
        "scaling": {"minSize": 2, "desiredSize": 3, "maxSize": 5},
        "diskSizeGiB": 60,
        "amiReleaseVersion": "1.34.0-20260101",
    },
    "gpu-eks:gpuNodeGroups": [
        {
            "name": "big",
            "instanceTypes": ["g4dn.12xlarge"],
            "capacityType": "ON_DEMAND",
            "scaling": {"minSize": 1, "desiredSize": 2, "maxSize": 3},
            "diskSizeGiB": 200,
            "amiReleaseVersion": "1.34.0-20260115",
            "labels": {"team.example.com/owner": "ml"},
            "taints": [
                {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
            ],
            "timeSlicing": {"replicas": 2, "profile": "shared-2", "renameByDefault": True},
        },
        {
            "name": "idle",
            "instanceTypes": ["g4dn.2xlarge"],
            "capacityType": "SPOT",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "timeSlicing": {"replicas": 8, "failRequestsGreaterThanOne": False},
        },
    ],
    # cdiEnabled stays false: with v25.3.1 the settings refuse it (config/addons.py: its operator would
    # put the device list back into NVIDIA_VISIBLE_DEVICES, which the boot stage's toolkit refuses).
    "gpu-eks:gpuOperator": {"chartVersion": "v25.3.1", "namespace": "nvidia-gpu", "cdiEnabled": False},
    "gpu-eks:verification": {
        "enabled": True,
        "image": "registry.example.com/cuda-sample:vectoradd",
        "namespace": "gpu-check",
    },
    "gpu-eks:tags": {"team": "ml"},
    # No Cluster Autoscaler (it would be on by default: the groups have minSize < maxSize): the
    # path without ASG tags, where "big" may rename its resource and "idle" is not verified.
    "gpu-eks:autoscaler": {"enabled": False},
}
#: A fifth configuration for the Cluster Autoscaler: two GPU groups with extra labels, a taint
#: without value, a group of 4-GPU nodes and an unshared group (replicas 1) scaling from zero, an
#: older Kubernetes minor, a non-default scale-down time. Run as stack "dev" with these overrides.
AUTOSCALED_OVERRIDES: dict[str, object] = {
    "gpu-eks:clusterName": "ml-scaled",
    "gpu-eks:kubernetesVersion": "1.34",
    "gpu-eks:gpuNodeGroups": [
        {
            "name": "multi",
            "instanceTypes": ["g4dn.12xlarge"],
            "scaling": {"minSize": 1, "desiredSize": 1, "maxSize": 3},
            "labels": {"team.example.com/owner": "ml"},
            "taints": [
                {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
            ],
            "timeSlicing": {"replicas": 2},
        },
        {
            "name": "zero",
            "instanceTypes": ["g4dn.xlarge"],
            "capacityType": "SPOT",
            "scaling": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "timeSlicing": {"replicas": 1},
        },
    ],
    "gpu-eks:autoscaler": {"enabled": True, "chartVersion": "9.59.0", "scaleDownUnneededTime": "30m"},
    "gpu-eks:verification": {"enabled": True},
    "gpu-eks:tags": {"team": "ml"},
}

# ---------------------------------------------------------------------------------------------
# A consumer's own program composing GpuCapacity (tests/test_compose.py and the tests of what it declares)
# ---------------------------------------------------------------------------------------------

#: The kubeconfig of an existing cluster, as a consumer's program passes it (JSON text).
EXISTING_KUBECONFIG = '{"apiVersion": "v1", "kind": "Config", "clusters": []}'
#: A time-sliced T4 group (4 slots per GPU).
GROUP_T4 = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "timeSlicing": {"replicas": 4}}

# ---------------------------------------------------------------------------------------------
# The clusters of the teams' tests (tests/support/teams.py loads them)
# ---------------------------------------------------------------------------------------------

#: Groups that scale from zero.
SCALING_FROM_ZERO = {"minSize": 0, "desiredSize": 0, "maxSize": 2}

#: The teams' admission policy's cluster (tests/test_teams_policy.py, test_teams_device_rules.py and
#: the property tests): team ml on two T4 groups, cv on an A10G group with a taint of its own, and a
#: time-sliced group renamed to nvidia.com/gpu.shared that no team names.
POLICY_TEAMS = {
    "clusterName": "c",
    "autoscaler": {"enabled": False},
    "gpuNodeGroups": [
        # Both carry the default nvidia.com/gpu taint; a10g also its own "dedicated" taint.
        {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING_FROM_ZERO},
        {"name": "t4-b", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING_FROM_ZERO},
        {
            "name": "a10g",
            "instanceTypes": ["g5.xlarge"],
            "scaling": SCALING_FROM_ZERO,
            "timeSlicing": {"replicas": 1},
            "taints": [
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "cv", "effect": "NoSchedule"},
            ],
        },
        {
            "name": "shared",
            "instanceTypes": ["g4dn.xlarge"],
            "scaling": SCALING_FROM_ZERO,
            "timeSlicing": {"replicas": 2, "renameByDefault": True},
        },
    ],
    "teams": [
        {"name": "ml", "nodeGroups": ["t4", "t4-b"]},
        {"name": "cv", "nodeGroups": ["a10g"]},
    ],
}

#: The teams' check Job's cluster (tests/test_teams_check.py; tests/support/tools/checkov.py scans
#: team ml's objects): ml with a GPU quota and a per-container limit on the T4 group, cv in a
#: namespace of its own on the A10G group.
CHECKED_TEAMS = {
    "clusterName": "c",
    "autoscaler": {"enabled": False},
    "gpuNodeGroups": [
        {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "scaling": SCALING_FROM_ZERO},
        {"name": "a10g", "instanceTypes": ["g5.xlarge"], "scaling": SCALING_FROM_ZERO, "timeSlicing": {"replicas": 1}},
    ],
    "teams": [
        {
            "name": "ml",
            "quota": {"nvidia.com/gpu": 5},
            "maxPerContainer": {"nvidia.com/gpu": 2},
            "nodeGroups": ["t4"],
        },
        {"name": "cv", "namespace": "vision", "nodeGroups": ["a10g"]},
    ],
}
