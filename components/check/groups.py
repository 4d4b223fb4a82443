"""The rules across the GPU node groups of one cluster: what lets their plans share one gpu-operator
(names, profiles, one MIG strategy, user data size) and a node run the pods its slots ask for. Read by
the settings (``Settings``, ``GpuCapacitySettings``), their warnings and ``GpuOperator``, which may
cover groups declared elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import catalog
from ..config.capacity_provider import needs_karpenter
from ..config.errors import KeyedProblem
from ..config.names import reserved_group_name_problem
from ..plan.group import GroupPlan

#: EC2 launch template user data: "User data is limited to 16 KB" (botocore ec2 2016-11-15
#: RequestLaunchTemplateData.UserData; EC2 User Guide: "in raw form, before it is base64-encoded").
#: EKS merges its own NodeConfig part into a managed node group's user data ("the default NodeConfig
#: is being added by EKS MNG under the hood, appended directly to the EC2's userdata": eksctl User
#: Guide, "Node bootstrapping"): the cluster's name, API server endpoint, base64 CA certificate
#: (about 1.5 KiB alone) and service CIDR, in a MIME part of its own (awslabs.github.io/amazon-eks-ami
#: nodeadm: the minimum NodeConfig). So the group's own part may take at most
#: USER_DATA_OWN_MAX_BYTES: 4 KiB is left for EKS's part. Karpenter adds a NodeConfig part of its own
#: with the same cluster facts to a Karpenter group's, and the node's labels, which the group's size
#: counts (``GroupPlan.user_data_bytes``, plan/userdata.py).
USER_DATA_MAX_BYTES = 16 * 1024
USER_DATA_EKS_RESERVE_BYTES = 4 * 1024
USER_DATA_OWN_MAX_BYTES = USER_DATA_MAX_BYTES - USER_DATA_EKS_RESERVE_BYTES


def gpu_groups_problems(plans: Sequence[GroupPlan], verification: bool = False) -> list[KeyedProblem]:
    """Why GPU node groups (their plans) cannot share one cluster (one gpu-operator): keyed
    problems, or [].

    * Names are unique (resource names, the node-group label).
    * One profile name means one device-plugin config file (timeSlicing or mps): one key of the device-plugin
      ConfigMap and the value of the node label the config-manager reads.
    * One migStrategy: the chart's ``mig.strategy`` is one value for the whole cluster.
    * With the verification on, a node can run the pods its advertised shares ask for.

    Used by Settings, GpuCapacitySettings and GpuOperator (which may cover groups declared elsewhere).
    """
    problems: list[KeyedProblem] = []
    first_of: dict[str, int] = {}
    for i, p in enumerate(plans):
        if p.name in first_of:
            problems.append(
                (("gpuNodeGroups", i, "name"), p.name, f"a name of its own (gpuNodeGroups[{first_of[p.name]}] has it)")
            )
        first_of.setdefault(p.name, i)
        reserved = reserved_group_name_problem(p.name, needs_karpenter(q.settings for q in plans))
        if reserved:
            problems.append((("gpuNodeGroups", i, "name"), p.name, reserved))
    first: dict[str, int] = {}
    for i, p in enumerate(plans):
        j = first.setdefault(p.profile_name, i)
        # One profile name is one key of the device-plugin ConfigMap: one config file.
        if dict(plans[j].device_plugin_config) != dict(p.device_plugin_config):
            problems.append(
                (
                    # A MIG group's profile is its name (no timeSlicing key beside mig).
                    ("gpuNodeGroups", i, "name")
                    if p.mig_layout is not None
                    else ("gpuNodeGroups", i, p.sharing_key, "profile"),
                    p.profile_name,
                    f"a profile name not used by gpuNodeGroups[{j}] ({plans[j].name}), whose "
                    + (
                        f"{p.sharing_key} settings differ"
                        if plans[j].sharing_key == p.sharing_key
                        else "sharing mode differs"
                    )
                    + ": one set of settings per profile name (it is "
                    "one key of the device-plugin ConfigMap)",
                )
            )
    for i, p in enumerate(plans):
        # What is sent: the provider's user data (plan/userdata.py ``group_user_data``).
        size = p.user_data_bytes
        if size > USER_DATA_OWN_MAX_BYTES:
            what, theirs = (
                ("its boot stage and nodeadm NodeConfig, and the labels Karpenter writes", "Karpenter adds")
                if p.provider.writes_node_labels
                else ("its nodeadm NodeConfig and boot stage", "EKS merges")
            )
            problems.append(
                (
                    ("gpuNodeGroups", i, "labels"),
                    len(p.settings.labels),
                    f"fewer or shorter labels and taints: the group's user data ({what}) would be {size} bytes; at "
                    f"most {USER_DATA_OWN_MAX_BYTES}, since EC2 takes {USER_DATA_MAX_BYTES} in all and {theirs} its "
                    "own NodeConfig part (cluster endpoint and CA) into it",
                )
            )
    strategies = {p.mig_strategy for p in plans}
    if len(strategies) > 1:  # the chart's mig.strategy is one value for the whole cluster
        problems += [
            (("gpuNodeGroups", i, "migStrategy"), p.mig_strategy, "the same migStrategy in every GPU node group")
            for i, p in enumerate(plans)
        ]
    problems += karpenter_repair_gate_problems(plans)
    if verification:
        problems += [
            (
                ("gpuNodeGroups", i, p.sharing_key, "replicas"),
                p.replicas_setting,
                capacity_message(p, "at most") + " (the verification packs that many pods "
                "on one node, so it could never succeed)",
            )
            for i, p in enumerate(plans)
            if p.slots_per_node > p.usable_pod_slots
        ]
    return problems


def karpenter_repair_gate_problems(plans: Sequence[GroupPlan]) -> list[KeyedProblem]:
    """Karpenter's repair is one feature gate of its controller, for every NodePool
    (``settings.featureGates.nodeRepair``, chart 1.14.1): the Karpenter groups' ``repair.enabled``
    must agree (the first one's is the expected value)."""
    karpenter = [(i, p) for i, p in enumerate(plans) if p.provider.repair_gate]
    if not karpenter:
        return []
    first_i, first = karpenter[0]
    return [
        (
            ("gpuNodeGroups", i, "repair", "enabled"),
            p.repair.enabled,
            f"{str(first.repair.enabled).lower()}, as gpuNodeGroups[{first_i}] ({first.name}): Karpenter's repair "
            "is one feature gate for every NodePool (chart 1.14.1 settings.featureGates.nodeRepair), so its "
            "groups are repaired all or none",
        )
        for i, p in karpenter[1:]
        if p.repair.enabled != first.repair.enabled
    ]


def capacity_message(plan: GroupPlan, prefix: str) -> str:
    """Why a group advertises more slots per node than a node can run pods (``prefix`` the bound; a
    MIG group's message asks for fewer slots, its bound being a layout and its replicas)."""
    slots = plan.usable_pod_slots
    # The type that sets the group's max pods, and whether EKS's managed-node-group cap set it.
    row = min((catalog.GPU_INSTANCE_TYPES[t] for t in plan.instance_types), key=lambda r: r.max_pods)
    why = (
        f"{row.eni_max_pods} with the VPC CNI defaults, capped at {row.max_pods} by EKS managed node groups "
        f"({row.vcpus} vCPUs: 110 below 30, 250 from 30)"
        if row.max_pods < row.eni_max_pods
        else f"{plan.max_pods} with the VPC CNI defaults"
    )
    bound = f"{slots} pods besides its {plan.max_pods - slots} DaemonSet pods (max pods {why})"
    if plan.mig_layout is not None:
        per_gpu = plan.slots_per_node // plan.gpus_per_node
        return (
            f"fewer slots per GPU than {per_gpu} (slices x mig.replicas) for "
            f"{', '.join(plan.instance_types)}: {plan.gpus_per_node} GPU(s) x {per_gpu} = {plan.slots_per_node} "
            f"advertised, but a node runs at most {bound}"
        )
    return (
        f"{prefix} {slots // plan.gpus_per_node} for {', '.join(plan.instance_types)}: {plan.gpus_per_node} GPU(s) x "
        f"{plan.replicas} = {plan.slots_per_node} advertised, but a node runs at most {bound}"
    )
