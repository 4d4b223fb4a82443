"""Literal values the library promises, shared by several tests/test_promises_*.py files.

One home per value, so a deliberate change of behaviour is a one-line edit here (and the tests
then say everywhere it shows). Nothing here is computed by the code under test.
"""

from __future__ import annotations

from tests.data.samples import DEFAULTS, VARIANT

#: The runs the promise tests read: the two stacks, the variant configuration and a stack with
#: every gpu-eks key at its default (tests/data/samples.py).
RUNS = ("dev", "prod", VARIANT, DEFAULTS)

# --- Names (resource names are public API) ----------------------------------------------------
CLUSTER_NAME = {"dev": "gpu-eks-dev", "prod": "gpu-eks-prod", VARIANT: "ml-variant", DEFAULTS: "gpu-eks-defaults"}
GPU_GROUPS = {"dev": ("t4",), "prod": ("t4",), VARIANT: ("big", "idle"), DEFAULTS: ("gpu",)}
#: GPU groups that get the two verification Jobs (prod, defaults: verification off; variant: not
#: "idle", whose desiredSize is 0 with no autoscaler to bring a node; dev's t4 at desiredSize 0
#: is verified: its warm-up Job makes the autoscaler add the node).
VERIFIED_GROUPS = {"dev": ("t4",), "prod": (), VARIANT: ("big",), DEFAULTS: ()}
#: Runs with a Cluster Autoscaler (default: when some GPU group has minSize < maxSize; the
#: variant turns it off).
AUTOSCALED_RUNS = ("dev", "prod", DEFAULTS)

#: The cluster's Kubernetes minor, also sent to every managed node group (so nodes follow a
#: control-plane upgrade).
KUBERNETES_VERSION = {"dev": "1.35", "prod": "1.35", VARIANT: "1.34", DEFAULTS: "1.35"}

# --- Tags ------------------------------------------------------------------------------------
TAGS = {
    "dev": {"environment": "dev", "gpu-eks/cluster": "gpu-eks-dev"},
    "prod": {"environment": "prod", "gpu-eks/cluster": "gpu-eks-prod"},
    VARIANT: {"gpu-eks/cluster": "ml-variant", "team": "ml"},
    DEFAULTS: {"gpu-eks/cluster": "gpu-eks-defaults"},
}

# --- Network ---------------------------------------------------------------------------------
PRIVATE_SUBNETS = {
    "dev": ["subnet-0a00000000000000a", "subnet-0a00000000000000b"],
    "prod": ["subnet-0a00000000000000a", "subnet-0a00000000000000b", "subnet-0a00000000000000c"],
    VARIANT: ["subnet-0aa00000000000001", "subnet-0aa00000000000002"],
    DEFAULTS: ["subnet-0a00000000000000a", "subnet-0a00000000000000b"],
}
PUBLIC_SUBNETS = {
    "dev": ["subnet-0b00000000000000a", "subnet-0b00000000000000b"],
    "prod": ["subnet-0b00000000000000a", "subnet-0b00000000000000b", "subnet-0b00000000000000c"],
    VARIANT: ["subnet-0bb00000000000001"],
    DEFAULTS: ["subnet-0b00000000000000a", "subnet-0b00000000000000b"],
}
#: The fake cloud's VPC id (tooling/simulation.py FakeCloud) for created VPCs.
CREATED_VPC_ID = "vpc-0fa4e000000000000"

# --- IAM -------------------------------------------------------------------------------------
NODE_ROLE_ARN = "arn:aws:iam::123456789012:role/gpu-eks-cluster-node-role"
NODE_ROLE_POLICY_ARNS = {
    "gpu-eks-cluster-node-role-worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "gpu-eks-cluster-node-role-cni": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "gpu-eks-cluster-node-role-ecr": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "gpu-eks-cluster-node-role-ssm": "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
}
CLUSTER_ADMIN_POLICY_ARN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"

# --- Sharing profiles (device-plugin config label values and ConfigMap keys) ------------------
#: Default: the group's name. dev and prod pin 0.1.0's timeslice-x4 (their nodes keep their
#: label); the variant's "big" pins its own.
PROFILE = {
    "dev": {"t4": "timeslice-x4"},
    "prod": {"t4": "timeslice-x4"},
    VARIANT: {"big": "shared-2", "idle": "idle"},
    DEFAULTS: {"gpu": "gpu"},
}
#: devicePlugin.config.default: the first GPU group's profile.
DEFAULT_PROFILE = {"dev": "timeslice-x4", "prod": "timeslice-x4", VARIANT: "shared-2", DEFAULTS: "gpu"}
#: k8s.amazonaws.com/accelerator on every T4 node (Cluster Autoscaler's GPU label on AWS).
ACCELERATOR = "nvidia-tesla-t4"
#: devicePlugin.config.name: content-addressed (a change of any profile renames it).
CONFIG_MAP_NAME = {
    "dev": "time-slicing-config-906ef61cca",
    "prod": "time-slicing-config-906ef61cca",
    VARIANT: "time-slicing-config-eac0ebcfcc",
    DEFAULTS: "time-slicing-config-09ba5a80be",
}

# --- Tolerations (every field) ---------------------------------------------------------------
GPU_TAINT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
#: The chart's own entries (values.yaml of each version), which Helm would drop otherwise.
CHART_GPU_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CHART_MASTER = {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}
CHART_CONTROL_PLANE = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}


#: Every GPU node group's nodeRepairConfig at the default repair settings, as the EKS API takes it
#: (the fake cloud gives numbers back as floats): enabled and the bounds alone, without
#: nodeRepairConfigOverrides (issue 41: EKS's own action per reason; config/repair.py says why).
DEFAULT_REPAIR = {"enabled": True, "maxParallelNodesRepairedCount": 1.0}
#: The words of that policy in each group's stack outputs (``repairPolicy``).
DEFAULT_REPAIR_POLICY = (
    "repair by eks nodeRepairConfig with EKS's own actions (reboot or replace per reason, after 10m; none on "
    "DCGMDiagnosticFailure, DCGMError); paused above 20% unhealthy once more than 5 nodes"
)
