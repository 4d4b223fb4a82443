"""Cluster Autoscaler: the ASG tags of a GPU node group, the Helm values and the IAM documents.

Pure functions, no Pulumi. Every rule follows kubernetes/autoscaler at tag
``cluster-autoscaler-1.35.2``, ``cluster-autoscaler/cloudprovider/aws/``:

* Auto-discovery (README.md "Auto-discovery setup"): CA manages every ASG carrying all the tag
  keys it is given; the chart's default is ``k8s.io/cluster-autoscaler/enabled`` and
  ``k8s.io/cluster-autoscaler/<cluster-name>``.
* Scale from zero (aws_manager.go ``buildNodeFromTemplate``): with no node to copy, CA builds a
  template node from the instance type (CPU, memory, ``nvidia.com/gpu`` = physical GPUs) and the
  ASG tags: ``node-template/label/<key>`` = value (``extractLabelsFromAsg``),
  ``node-template/taint/<key>`` = ``<value>:<Effect>`` (``extractTaintsFromAsg``), and
  ``node-template/resources/<name>`` = quantity, which overrides the instance's own numbers
  (``extractAllocatableResourcesFromAsg``). Our labels and taints come from kubelet through
  nodeadm, which neither EKS (DescribeNodegroup) nor the ASG knows, and EKS does not copy node
  group tags to the ASG: so this library tags the ASG itself.
* Mixed sizes: the instance type of that template node is the first of the ASG's mixed instances
  policy (aws_wrapper.go ``getInstanceTypesForAsgs``: ``instanceTypesOverrides[0]``; EKS keeps the
  node group's order, EKS User Guide managed-node-groups.adoc at awsdocs 4d52b4d: On-Demand
  "use[s] the order of instance types passed in the API"), and CA's README ("Using Mixed Instances Policies and Spot
  Instances") asks for types of the same CPU and RAM. A group whose first type has more vCPUs or
  memory than another of its types gets ``resources/cpu`` and ``resources/memory`` at its
  smallest, which replace the first type's capacity (and allocatable, which CA sets equal to it)
  in ``buildNodeFromTemplate``: from zero, CA then never counts on a node bigger than the one EC2
  may launch. (A group whose first type is already its smallest, like prod's g4dn.xlarge +
  g4dn.2xlarge, needs no tag: CA's template is that type.) With nodes running, CA copies a
  running node instead (processors/nodeinfosprovider/mixed_nodeinfos_processor.go), whatever its
  size: no tag can steer that (docs/cluster-autoscaler.md). The settings warn
  only where the tags are written (check/warnings.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .. import catalog
from ..catalog import efa, labels
from ..config.groups import Taint
from .device_plugin import GPU_RESOURCE

TAG_PREFIX = "k8s.io/cluster-autoscaler"
DISCOVERY_TAG = f"{TAG_PREFIX}/enabled"
LABEL_TAG_PREFIX = f"{TAG_PREFIX}/node-template/label/"
TAINT_TAG_PREFIX = f"{TAG_PREFIX}/node-template/taint/"
RESOURCES_TAG_PREFIX = f"{TAG_PREFIX}/node-template/resources/"
#: The resource CA gives a template node from the instance type's GPU count.
NVIDIA_GPU = GPU_RESOURCE


def cluster_tag(cluster_name: str) -> str:
    return f"{TAG_PREFIX}/{cluster_name}"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The auto-discovery tags (CA only checks the keys; "owned" follows the README's examples).

    EKS documents tagging managed node group resources for CA itself; declaring the same keys
    and values here keeps discovery (and the IAM condition on the cluster tag) independent of it.
    """
    return {DISCOVERY_TAG: "true", cluster_tag(cluster_name): "owned"}


#: The template node's resources a mixed-size group tags at its smallest (see the module docstring).
CPU_TAG = RESOURCES_TAG_PREFIX + "cpu"
MEMORY_TAG = RESOURCES_TAG_PREFIX + "memory"


def smallest_size_tags(instances: Sequence[catalog.GpuInstanceType]) -> dict[str, str]:
    """``resources/cpu`` and ``resources/memory`` at the group's smallest vCPUs and memory (each
    its own minimum) when the first type, CA's template, has more of either; else nothing."""
    if not instances:
        return {}
    cpu, memory = min(t.vcpus for t in instances), min(t.memory_mib for t in instances)
    if (instances[0].vcpus, instances[0].memory_mib) == (cpu, memory):
        return {}
    # Values in a pod spec's units (CA README "Auto-Discovery Setup"; resource.ParseQuantity).
    return {CPU_TAG: str(cpu), MEMORY_TAG: f"{memory}Mi"}


#: Per-ASG scale-down options (aws_manager.go ``GetOptions`` reads ``node-template/autoscaling-options/<key>``
#: tags, keys in config/const.go, cluster-autoscaler-1.35.2).
OPTIONS_TAG_PREFIX = f"{TAG_PREFIX}/node-template/autoscaling-options/"

#: The options of a group whose nodes CA finds no GPU on: nodes of mixed MIG slices carry no
#: accelerator label (plan/group.py: it would hold them "GPU not ready" for good) and advertise no
#: ``nvidia.com/gpu``, so ``GetNodeGpuConfig`` is nil (utils/gpu/gpu.go ``GetNodeGPUFromCloudProvider``:
#: only the label makes a GPU config) and CA judges them by CPU and memory requests
#: (simulator/utilization/info.go ``Calculate``) against ``--scale-down-utilization-threshold``
#: (0.5): a node with every slice busy and small CPU requests would be "under-used" and drained
#: whenever its pods fit elsewhere. With DaemonSet pods left out of the utilisation and a threshold
#: of 0, a node is underutilised only at 0 (core/scaledown/eligibility/eligibility.go
#: ``isNodeAtOrBelowUtilizationThreshold``: removable iff utilisation <= threshold): a node with only
#: DaemonSet pods still scales down, a node running any pod that requests CPU or memory does not.
BUSY_NODE_PROTECTION: Mapping[str, str] = {
    OPTIONS_TAG_PREFIX + "ignoredaemonsetsutilization": "true",
    OPTIONS_TAG_PREFIX + "scaledownutilizationthreshold": "0",
}


def node_template_tags(
    node_labels: Mapping[str, str],
    taints: Sequence[Taint],
    resources: Mapping[str, int],
    instances: Sequence[catalog.GpuInstanceType] = (),
) -> dict[str, str]:
    """The scale-from-zero template tags of a GPU node group's ASG: its nodes' labels and taints
    (the same values as its NodeConfig), every extended resource the device plugin advertises per
    node (the plan's ``advertised_resources``: one, or one per MIG profile), and
    for a group of several sizes (``instances``) the smallest one's CPU and memory, so the
    template node CA imagines is the node that joins. Read from the group's plan."""
    tags = {LABEL_TAG_PREFIX + key: value for key, value in node_labels.items()}
    for taint in taints:
        tags[TAINT_TAG_PREFIX + taint.key] = f"{taint.value}:{taint.effect}"
    for name, count in resources.items():
        tags[RESOURCES_TAG_PREFIX + name] = str(count)
    if NVIDIA_GPU not in resources:
        # Renamed, or MIG slices under mixed: the node advertises no nvidia.com/gpu at all; without
        # this tag CA's template would still offer the instance's physical GPU count as nvidia.com/gpu.
        tags[RESOURCES_TAG_PREFIX + NVIDIA_GPU] = "0"
    if labels.ACCELERATOR_LABEL not in node_labels:
        tags.update(BUSY_NODE_PROTECTION)
    return {**tags, **smallest_size_tags(instances)}


def hugepages_tags(efa_devices: int) -> dict[str, str]:
    """An EFA group's template node offers its 2 MiB huge pages (``catalog.efa``), as its nodes do:
    from zero CA would otherwise find no node for a pod that requests them (the NCCL check's, AWS's
    NCCL test's), since its template carries no resource the tags do not name."""
    if not efa_devices:
        return {}
    return {RESOURCES_TAG_PREFIX + efa.HUGEPAGES_RESOURCE: f"{efa.HUGEPAGES_2MI_PER_NODE * 2}Mi"}


def asg_tags(node_template: Mapping[str, str], cluster_name: str) -> dict[str, str]:
    """Every tag a GPU node group's ASG needs so CA can discover it and scale it up from zero:
    the discovery tags of ``cluster_name``, then the group's node-template tags (its plan's
    ``node_template_tags``)."""
    return {**discovery_tags(cluster_name), **node_template}
