"""The Karpenter objects of one ``capacityProvider: karpenter`` GPU node group, from its plan.

Pure functions (no Pulumi, no I/O) from a ``GroupPlan`` to the manifests Karpenter 1.14.1 reads
(CRDs: aws/karpenter-provider-aws 1d927085 pkg/apis/crds; tests validate every object against
them, ``x-kubernetes-validations`` CEL rules included):

* ``ec2_node_class``: how a node boots: the AL2023 NVIDIA AMI of the group's architecture, the
  encrypted gp3 root volume, IMDSv2, kubelet ``maxPods`` as the plan counts it, the node role.
* ``node_pool``: which nodes may be launched and how they register: instance types, capacity type,
  architecture, the plan's labels and taints, a node limit from ``maxSize``, the disruption rules.
* ``node_overlay``: what a node of the group advertises (the plan's ``advertised_resources``), so
  Karpenter counts shared slots (kubernetes-sigs/karpenter#729). Only where EC2's GPU count is not
  what the device plugin advertises (``needs_overlay``).

Drift. Karpenter replaces a node when the hash of its NodePool's ``spec.template`` or of its
EC2NodeClass's ``spec`` changes (kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go
``NodePool.Hash``, pkg/controllers/nodeclaim/disruption/drift.go; the provider's
pkg/apis/v1/ec2nodeclass.go ``Hash``). The template's requirements are not hashed
(``hash:"ignore"``): a node drifts on them only when its labels no longer meet them
(drift.go ``areRequirementsDrifted``). Neither reads a sharing setting: the labels are the plan's
(the sharing-profile label is the profile's name, which replicas and renaming do not change), so
a sharing change rewrites only the NodeOverlay, which drift does not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..catalog import IMDS_HOP_LIMIT, ROOT_DEVICE, efa
from ..catalog.labels import INSTANCE_TYPE_LABEL
from . import device_plugin
from .group import GroupPlan

#: API versions of Karpenter 1.14.1's kinds (its CRDs' served versions).
NODEPOOL_API_VERSION = "karpenter.sh/v1"
NODECLASS_API_VERSION = "karpenter.k8s.aws/v1"
NODEOVERLAY_API_VERSION = "karpenter.sh/v1alpha1"
NODECLASS_GROUP = "karpenter.k8s.aws"

#: The tag Karpenter's EC2NodeClass selects subnets and security groups by (Karpenter's getting
#: started guide; cloudformation.yaml scopes nothing to it, the selector terms below do).
DISCOVERY_TAG = "karpenter.sh/discovery"
#: Well-known labels Karpenter's scheduler reads (kubernetes-sigs/karpenter v1.14.0
#: pkg/apis/v1/labels.go; k8s.io/api core/v1 well_known_labels.go).
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"

#: The group's ``capacityType`` as Karpenter spells it (labels.go CapacityTypeOnDemand/Spot/Reserved).
CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
RESERVED = "reserved"
ZONE_LABEL = "topology.kubernetes.io/zone"


def capacity_types(settings: Any) -> list[str]:
    """The NodePool's ``karpenter.sh/capacity-type`` values. A group with ``capacityReservation``
    launches into the reservations its EC2NodeClass selects (``reserved``, Karpenter's
    ``reservedCapacity`` feature gate, on by default in 1.14.1: chart values.yaml
    settings.featureGates.reservedCapacity): a Capacity Block only there (nothing else is
    launched), an On-Demand group there first and On-Demand when they are full: Karpenter prefers
    reserved offerings and, with ``on-demand`` allowed too, launches an On-Demand instance itself when
    none is left (kubernetes-sigs/karpenter v1.14.0 capacity-type offerings). That fallback is
    Karpenter's: EC2 never falls back from a reservation targeted by id (EC2 User Guide,
    capacity-reservations-launch)."""
    if settings.capacity_type == "CAPACITY_BLOCK":
        return [RESERVED]
    if settings.capacity_reservation is not None:
        return [RESERVED, CAPACITY_TYPES[settings.capacity_type]]
    return [CAPACITY_TYPES[settings.capacity_type]]


#: The catalog's EC2 architecture as ``kubernetes.io/arch`` spells it.
KUBERNETES_ARCH = {"x86_64": "amd64", "arm64": "arm64"}

#: Disruption for GPU workloads. ``WhenEmpty``: Karpenter never evicts running pods to repack
#: underused GPU nodes (a training step or a model server loses its GPU state); it removes a node
#: only once no pod runs there. ``consolidateAfter`` 10m: a GPU node takes minutes to become
#: useful (driver, toolkit, device plugin), so a short gap between jobs should not cost a new
#: launch. Budget of one node: drift (a new AMI with ``al2023@latest``) replaces one GPU node at a
#: time. ``expireAfter: Never``: no node is replaced on a timer mid-job; AMI updates arrive by drift.
CONSOLIDATION_POLICY = "WhenEmpty"
CONSOLIDATE_AFTER = "10m"
DISRUPTION_BUDGET_NODES = "1"
EXPIRE_AFTER = "Never"


def object_name(plan: GroupPlan) -> str:
    """The name of the group's NodePool, EC2NodeClass and NodeOverlay (cluster-scoped):
    ``gpu-eks-<group>``, as the group's other resources."""
    return f"gpu-eks-{plan.name}"


def ami_alias(plan: GroupPlan) -> str:
    """The EC2NodeClass AMI alias: ``al2023@latest``, or ``al2023@v<yyyymmdd>`` of a pinned
    ``amiReleaseVersion``. Karpenter resolves an al2023 alias through the SSM parameters of the
    standard, nvidia and neuron variants of both architectures and gives an instance type the
    variant that matches it: the nvidia AMI where the type has ``karpenter.k8s.aws/instance-gpu-count``
    (aws/karpenter-provider-aws 1d927085 pkg/providers/amifamily/al2023.go DescribeImageQuery,
    types.go Variant.Requirements). EC2 lists g6f/gr6f with one GPU entry of count 0, so the label
    exists (``"0"``: pkg/providers/instancetype/types.go) and they get the nvidia AMI too."""
    release = plan.settings.ami_release_version
    return "al2023@latest" if release is None else f"al2023@v{release.split('-')[1]}"


def advertised_capacity(plan: GroupPlan) -> dict[str, str]:
    """What a node advertises, as a NodeOverlay ``capacity``: the plan's ``advertised_resources``,
    and ``nvidia.com/gpu`` 0 where the device plugin does not advertise it (a renamed profile), so
    Karpenter does not count the GPUs EC2 reports as a second resource. A NodeOverlay's capacity
    is merged over the instance type's (pkg/cloudprovider/types.go ApplyCapacityOverlay,
    ``lo.Assign``): a resource it does not name keeps EC2's count."""
    capacity = {device_plugin.GPU_RESOURCE: 0, **plan.advertised_resources}
    return {name: str(count) for name, count in sorted(capacity.items())}


def needs_overlay(plan: GroupPlan) -> bool:
    """Whether Karpenter, from EC2's GPU count alone, would count the group's nodes wrongly: every
    sharing profile (GPUs x replicas), a renamed resource, a vGPU slice (EC2 reports 0 GPUs). An
    exclusive group of whole GPUs advertises exactly EC2's count (instancetype/types.go nvidiaGPUs)."""
    return dict(plan.advertised_resources) != {device_plugin.GPU_RESOURCE: plan.instance.ec2_gpus}


def ec2_node_class(
    plan: GroupPlan,
    *,
    role: Any,
    discovery: Any,
    tags: Mapping[str, Any] | None = None,
    placement_group: Any = None,
    security_groups: Sequence[Any] = (),
) -> dict[str, Any]:
    """The group's EC2NodeClass. ``role``: the node IAM role's name (Karpenter makes the instance
    profile); ``discovery``: the ``karpenter.sh/discovery`` tag value of the subnets and security
    groups (the cluster's name); ``placement_group``: the name of a ``placement: cluster`` group's
    placement group (``placementGroupSelector``); ``security_groups``: an ``efa`` group's EFA
    security group (an ``id`` term of ``securityGroupSelectorTerms``). Plain values or Pulumi
    Inputs. A group's ``capacityReservation.id`` is its ``capacityReservationSelectorTerms`` (CRD:
    ``id`` alone in its term); an ``efa`` group's ``networkInterfaces`` come from the catalog
    (``catalog.efa.karpenter_interfaces``).

    ``userData`` is the plan's (``GroupPlan.user_data``): no labels, Karpenter writes the nodeadm
    NodeConfig itself (cluster endpoint, CA and CIDR; ``--node-labels`` from the NodePool's labels;
    kubelet ``registerWithTaints`` from its taints plus ``karpenter.sh/unregistered``; ``maxPods``)
    in a part of its own beside the user's (pkg/providers/amifamily/bootstrap/nodeadm.go Script,
    getNodeConfigYAML). The labels and taints reach kubelet through the NodePool. The group's
    cold-start levers map to the EC2NodeClass's own fields (root volume IOPS and throughput,
    ``instanceStorePolicy``), and FastImagePull to the user data's NodeConfig part, with only its gate.
    """
    cold = plan.cold_start
    ebs: dict[str, Any] = {
        "volumeSize": f"{plan.settings.disk_size_gib}Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "deleteOnTermination": True,
    }
    # The cold-start levers (config/coldstart.py), as the EC2NodeClass spells them.
    if cold.root_volume_iops is not None:
        ebs["iops"] = cold.root_volume_iops
    if cold.root_volume_throughput is not None:
        ebs["throughput"] = cold.root_volume_throughput
    spec: dict[str, Any] = {
        "role": role,
        "amiSelectorTerms": [{"alias": ami_alias(plan)}],
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: discovery}}],
        # An EFA group's own security group by id beside the discovery tag's (terms are ORed).
        "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG: discovery}}, *({"id": g} for g in security_groups)],
        "blockDeviceMappings": [
            {
                "deviceName": ROOT_DEVICE,
                "rootVolume": True,
                "ebs": ebs,
            }
        ],
        # As the managed node groups' launch template (blocks/managed.py): IMDSv2 only, hop limit 1.
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
            "httpTokens": "required",
        },
        # The plan's max pods (EKS managed node groups' cap): the pod count the settings' rules
        # checked. Karpenter's own default is the ENI limit, without the cap.
        "kubelet": {"maxPods": plan.max_pods},
    }
    if cold.local_storage is not None:
        # Karpenter's own NodeConfig then sets nodeadm's instance.localStorage.strategy
        # (pkg/providers/amifamily/bootstrap/nodeadm.go getNodeConfigYAML).
        spec["instanceStorePolicy"] = cold.local_storage
    # The group's user data (plan/userdata.py ``group_user_data``): the boot stage's part, and a
    # NodeConfig part with only what Karpenter does not write itself. Karpenter keeps the user's MIME
    # parts beside its own NodeConfig (mime.NewArchive; bootstrap/nodeadm.go Script, v1.14.1).
    spec["userData"] = plan.user_data
    reservation = plan.settings.capacity_reservation
    if reservation is not None and reservation.id is not None:
        spec["capacityReservationSelectorTerms"] = [{"id": reservation.id}]
    if placement_group is not None:
        spec["placementGroupSelector"] = {"name": placement_group}
    if plan.efa_devices:
        # Every EFA device on every node, as efa-only interfaces (no subnet address each), whatever
        # the node's pods request (catalog.efa.karpenter_interfaces, issue 41).
        spec["networkInterfaces"] = [
            {"networkCardIndex": i.network_card_index, "deviceIndex": i.device_index, "interfaceType": i.interface_type}
            for i in efa.karpenter_interfaces(plan.instance_types[0])
        ]
    if tags:
        spec["tags"] = dict(tags)
    return {
        "apiVersion": NODECLASS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": object_name(plan)},
        "spec": spec,
    }


def _taint(plan_taint: Any) -> dict[str, str]:
    taint = {"key": plan_taint.key, "effect": plan_taint.effect}
    if plan_taint.value:
        taint["value"] = plan_taint.value
    return taint


def node_pool(plan: GroupPlan) -> dict[str, Any]:
    """The group's NodePool (its EC2NodeClass has the same name)."""
    requirements = [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(plan.instance_types)},
        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": capacity_types(plan.settings)},
        {"key": ARCH_LABEL, "operator": "In", "values": [KUBERNETES_ARCH[plan.architecture]]},
        {"key": OS_LABEL, "operator": "In", "values": ["linux"]},
    ]
    if plan.settings.availability_zone is not None:
        # The group's one zone (its reservation's, its placement group's).
        requirements.append({"key": ZONE_LABEL, "operator": "In", "values": [plan.settings.availability_zone]})
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": object_name(plan)},
        "requirements": requirements,
        "expireAfter": EXPIRE_AFTER,
    }
    if plan.taints:
        template_spec["taints"] = [_taint(t) for t in plan.taints]
    return {
        "apiVersion": NODEPOOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": object_name(plan)},
        "spec": {
            "template": {"metadata": {"labels": dict(sorted(plan.node_labels.items()))}, "spec": template_spec},
            # Node limits are enforced before launch (kubernetes-sigs/karpenter v1.14.0
            # pkg/controllers/provisioning/scheduling/scheduler.go, resources.Node).
            "limits": {"nodes": str(plan.settings.scaling.max_size)},
            "disruption": {
                "consolidationPolicy": CONSOLIDATION_POLICY,
                "consolidateAfter": CONSOLIDATE_AFTER,
                "budgets": [{"nodes": DISRUPTION_BUDGET_NODES}],
            },
        },
    }


def node_overlay(plan: GroupPlan) -> dict[str, Any]:
    """The group's NodeOverlay: its NodePool's instance types advertise ``advertised_capacity``.

    Karpenter applies an overlay to an instance type of a NodePool when the overlay's requirements
    are compatible with the NodePool's name and labels and the type's own requirements
    (pkg/controllers/nodeoverlay/controller.go getOverlaidOfferings); this one names the NodePool
    and the group's types, so no other pool is touched and two groups' overlays never conflict.
    """
    return {
        "apiVersion": NODEOVERLAY_API_VERSION,
        "kind": "NodeOverlay",
        "metadata": {"name": object_name(plan)},
        "spec": {
            "requirements": [
                {"key": NODEPOOL_LABEL, "operator": "In", "values": [object_name(plan)]},
                {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(plan.instance_types)},
            ],
            "capacity": advertised_capacity(plan),
        },
    }
