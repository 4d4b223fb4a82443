"""The facts the change-impact summary (``components.review.impact.summary``) relies on: one table, ``RULES``.

Each row says what a change of one input of one resource type does when deployed (replace the
resource, roll a node group's nodes, create a launch template version, upgrade the control plane,
roll the device-plugin DaemonSets, roll a Deployment's pods), in plain words, with the upstream
source that says so. Rules are written by resource type and input path, never by resource name,
so new resources of a known type are covered. A change matching no rule is an in-place update.
Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# ---------------------------------------------------------------------------------------------
# The rules: facts about the providers and Kubernetes, each with its source
# ---------------------------------------------------------------------------------------------


class Effect(StrEnum):
    """What a change of an input does when deployed."""

    #: The resource is deleted and created anew (the provider cannot change this input in place).
    REPLACE = "replace"
    #: Updated in place, and a managed node group replaces its nodes one batch at a time.
    ROLL_NODES = "roll-nodes"
    #: A launch template updated in place: a new version; node groups that use it roll their nodes.
    NEW_VERSION = "new-launch-template-version"
    #: The EKS control plane is upgraded in place to another Kubernetes version.
    UPGRADE_CONTROL_PLANE = "upgrade-control-plane"
    #: The gpu-operator rolls its device-plugin DaemonSets (the plugin restarts on every GPU node).
    ROLL_DEVICE_PLUGIN = "roll-device-plugin"
    #: A workload's pods are replaced by new ones (Deployment pod template).
    ROLL_PODS = "roll-pods"
    #: Karpenter marks a NodePool's nodes drifted and replaces them, within its disruption budget.
    DRIFT_NODES = "drift-nodes"


TF_AWS = "hashicorp/terraform-provider-aws (the provider bridged by pulumi-aws)"
PULUMI_K8S = "pulumi/pulumi-kubernetes"


@dataclass(frozen=True)
class Rule:
    """``effect`` when an input at or below ``path`` of a resource of type ``type`` changes.

    ``type`` is a resource type token or an fnmatch pattern (``kubernetes:*``); ``path`` is a
    dotted input path where ``*`` stands for any one key or list index, and "" for any input.
    ``chart`` limits a rule to Helm releases of that chart. ``why`` is the plain reason a reviewer
    reads; ``source`` the upstream file (or document) that says so.
    """

    type: str
    path: str
    effect: Effect
    why: str
    source: str
    chart: str | None = None

    def matches(self, typ: str, path: Sequence[str | int], inputs: Mapping[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(typ, self.type):
            return False
        if self.chart is not None and inputs.get("chart") != self.chart:
            return False
        if not self.path:
            return True
        want = self.path.split(".")
        if len(path) < len(want):
            return False
        return all(w == "*" or w == str(p) for w, p in zip(want, path, strict=False))


NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
#: Karpenter's kinds as pulumi-kubernetes types them (components/plan/karpenter.py).
NODEPOOL_TYPE = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS_TYPE = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
#: Not hashed for drift: a NodePool's nodes drift only where their labels no longer meet it.
NODEPOOL_REQUIREMENTS = "spec.template.spec.requirements"
_KARPENTER_DRIFT_SRC = (
    "kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go (NodePool.Hash: spec.template), "
    "pkg/controllers/nodeclaim/disruption/drift.go; aws/karpenter-provider-aws 1d927085 "
    "pkg/apis/v1/ec2nodeclass.go (EC2NodeClass.Hash: spec, kubelet included), pkg/cloudprovider/drift.go"
)
LAUNCH_TEMPLATE_TYPE = "aws:ec2/launchTemplate:LaunchTemplate"
_NODE_GROUP_SRC = f"{TF_AWS}: internal/service/eks/node_group.go, schema (ForceNew), resourceNodeGroupUpdate"
_NG_FORCE_NEW = "cannot change in place: aws_eks_node_group marks it ForceNew (EKS CreateNodegroup only)"

#: aws_launch_template arguments whose change creates a new template version (the provider's
#: ``updateKeys``, as Pulumi names them). ``tags`` is not one: a tag change only retags the template.
_LAUNCH_TEMPLATE_VERSIONED = (
    "blockDeviceMappings",
    "capacityReservationSpecification",
    "cpuOptions",
    "creditSpecification",
    "description",
    "disableApiStop",
    "disableApiTermination",
    "ebsOptimized",
    "elasticGpuSpecifications",
    "elasticInferenceAccelerator",
    "enclaveOptions",
    "hibernationOptions",
    "iamInstanceProfile",
    "imageId",
    "instanceInitiatedShutdownBehavior",
    "instanceMarketOptions",
    "instanceRequirements",
    "instanceType",
    "kernelId",
    "keyName",
    "licenseSpecifications",
    "metadataOptions",
    "monitoring",
    "networkInterfaces",
    "placement",
    "privateDnsNameOptions",
    "ramDiskId",
    "securityGroupNames",
    "tagSpecifications",
    "userData",
    "vpcSecurityGroupIds",
)

#: One table for every fact the summary relies on. A change matching no rule is an in-place update.
RULES: tuple[Rule, ...] = (
    # EKS managed node group (aws_eks_node_group): ForceNew arguments.
    *(
        Rule(NODE_GROUP_TYPE, path, Effect.REPLACE, _NG_FORCE_NEW, _NODE_GROUP_SRC)
        for path in (
            "amiType",
            "capacityType",
            "clusterName",
            "diskSize",
            "instanceTypes",
            "launchTemplate.id",
            "launchTemplate.name",
            "nodeGroupName",
            "nodeGroupNamePrefix",
            "nodeRoleArn",
            "remoteAccess",
            "subnetIds",
        )
    ),
    # In place, through UpdateNodegroupVersion: EKS replaces every node, honouring updateConfig.
    *(
        Rule(
            NODE_GROUP_TYPE,
            path,
            Effect.ROLL_NODES,
            "a node group version update (UpdateNodegroupVersion): EKS replaces every node",
            _NODE_GROUP_SRC,
        )
        for path in ("launchTemplate.version", "version", "releaseVersion")
    ),
    # EC2 launch template (aws_launch_template): the name is ForceNew; any other change is an
    # update that creates a new template version (and makes it the default).
    Rule(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "name",
        Effect.REPLACE,
        "a launch template's name cannot change (ForceNew)",
        f"{TF_AWS}: internal/service/ec2/ec2_launch_template.go",
    ),
    Rule(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "namePrefix",
        Effect.REPLACE,
        "a launch template's name cannot change (ForceNew)",
        f"{TF_AWS}: internal/service/ec2/ec2_launch_template.go",
    ),
    *(
        Rule(
            "aws:ec2/launchTemplate:LaunchTemplate",
            path,
            Effect.NEW_VERSION,
            "an update creates a new launch template version (tags alone do not)",
            f"{TF_AWS}: internal/service/ec2/ec2_launch_template.go (resourceLaunchTemplateUpdate: updateKeys "
            "-> CreateLaunchTemplateVersion)",
        )
        for path in _LAUNCH_TEMPLATE_VERSIONED
        if path != "userData"
    ),
    # The user data carries the group's labels and taints (nodeadm) and its boot stage (plan/boot.py:
    # the toolkit isolation and the MIG layout, applied before kubelet): a MIG layout change is a user
    # data change, so the group's nodes roll (the node group's rolling update drains them).
    Rule(
        "aws:ec2/launchTemplate:LaunchTemplate",
        "userData",
        Effect.NEW_VERSION,
        "new user data (labels, taints, the boot stage: a MIG layout or the toolkit isolation) is a new launch "
        "template version: the node group rolls its nodes onto it, draining each",
        f"{TF_AWS}: internal/service/ec2/ec2_launch_template.go (resourceLaunchTemplateUpdate: updateKeys "
        "-> CreateLaunchTemplateVersion); components/plan/boot.py",
    ),
    # Auto Scaling group tag (aws_autoscaling_group_tag): group name and tag key are ForceNew.
    *(
        Rule(
            "aws:autoscaling/tag:Tag",
            path,
            Effect.REPLACE,
            "an Auto Scaling group tag's group and key cannot change (ForceNew); its value can",
            f"{TF_AWS}: internal/service/autoscaling/group_tag.go",
        )
        for path in ("autoscalingGroupName", "tag.key")
    ),
    # IAM role (aws_iam_role): name, name_prefix and path are ForceNew.
    *(
        Rule(
            "aws:iam/role:Role",
            path,
            Effect.REPLACE,
            "an IAM role's name and path cannot change (ForceNew)",
            f"{TF_AWS}: internal/service/iam/role.go",
        )
        for path in ("name", "namePrefix", "path")
    ),
    # EKS add-on (aws_eks_addon): add-on name and cluster name are ForceNew.
    *(
        Rule(
            "aws:eks/addon:Addon",
            path,
            Effect.REPLACE,
            "an EKS add-on's name and cluster cannot change (ForceNew)",
            f"{TF_AWS}: internal/service/eks/addon.go",
        )
        for path in ("addonName", "clusterName")
    ),
    # EKS cluster: aws_eks_cluster marks name (and role_arn) ForceNew; version is an in-place
    # upgrade (UpdateClusterVersion). pulumi-eks's Cluster component passes name and version on.
    *(
        Rule(
            typ,
            "name",
            Effect.REPLACE,
            "an EKS cluster's name cannot change (ForceNew): a new control plane, every node group with it",
            f"{TF_AWS}: internal/service/eks/cluster.go",
        )
        for typ in ("eks:index:Cluster", "aws:eks/cluster:Cluster")
    ),
    Rule(
        "aws:eks/cluster:Cluster",
        "roleArn",
        Effect.REPLACE,
        "an EKS cluster's IAM role cannot change (ForceNew)",
        f"{TF_AWS}: internal/service/eks/cluster.go",
    ),
    *(
        Rule(
            typ,
            "version",
            Effect.UPGRADE_CONTROL_PLANE,
            "a Kubernetes version change upgrades the control plane in place (UpdateClusterVersion)",
            f"{TF_AWS}: internal/service/eks/cluster.go (version: Optional, not ForceNew)",
        )
        for typ in ("eks:index:Cluster", "aws:eks/cluster:Cluster")
    ),
    # Kubernetes objects: pulumi-kubernetes replaces an object whose name or namespace changes
    # (metadataForceNewProperties), and a Deployment whose selector changes (immutable in apps/v1).
    *(
        Rule(
            "kubernetes:*",
            path,
            Effect.REPLACE,
            "a Kubernetes object's name and namespace cannot change",
            f"{PULUMI_K8S}: provider/pkg/provider/forcenew.go (metadataForceNewProperties)",
        )
        for path in ("metadata.name", "metadata.namespace")
    ),
    Rule(
        "kubernetes:apps/v1:Deployment",
        "spec.selector",
        Effect.REPLACE,
        "a Deployment's selector is immutable",
        f"{PULUMI_K8S}: provider/pkg/provider/forcenew.go (apps/v1 Deployment .spec.selector)",
    ),
    Rule(
        "kubernetes:apps/v1:Deployment",
        "spec.template",
        Effect.ROLL_PODS,
        "a pod template change makes the Deployment replace its pods (rolling update)",
        "Kubernetes Deployment controller (a new ReplicaSet per pod template)",
    ),
    # Helm releases: pulumi-kubernetes forces a new release when its name or namespace changes.
    *(
        Rule(
            "kubernetes:helm.sh/v3:Release",
            path,
            Effect.REPLACE,
            "a Helm release's name and namespace cannot change (uninstall, then install)",
            f"{PULUMI_K8S}: provider/pkg/provider/helm_release.go (Diff: forceNewFields .name, .namespace)",
        )
        for path in ("name", "namespace")
    ),
    # Karpenter: a NodeClaim records the hashes of its NodePool's template and its EC2NodeClass's
    # spec; when either changes, Karpenter marks it drifted and replaces the node. The NodePool's
    # limits and disruption settings are not hashed; selector terms drift by what they resolve to.
    # The template's requirements are not hashed either (nodepool.go: ``hash:"ignore"``): a node
    # drifts only where its labels no longer meet them (drift.go areRequirementsDrifted).
    *(
        Rule(
            NODEPOOL_TYPE,
            path,
            Effect.DRIFT_NODES,
            "the NodePool's template hash changes: Karpenter marks every node of the pool drifted and replaces it",
            _KARPENTER_DRIFT_SRC,
        )
        for path in (
            "spec.template.metadata",
            "spec.template.spec.nodeClassRef",
            "spec.template.spec.taints",
            "spec.template.spec.startupTaints",
            "spec.template.spec.expireAfter",
            "spec.template.spec.terminationGracePeriod",
        )
    ),
    Rule(
        NODEPOOL_TYPE,
        NODEPOOL_REQUIREMENTS,
        Effect.DRIFT_NODES,
        "the NodePool's requirements are not in its template hash: Karpenter replaces only the nodes whose labels "
        "no longer meet them (a removed instance type, another capacity type); a widened requirement drifts none",
        "kubernetes-sigs/karpenter v1.14.0 pkg/apis/v1/nodepool.go (NodeClaimTemplateSpec.Requirements "
        'hash:"ignore"), pkg/controllers/nodeclaim/disruption/drift.go (areRequirementsDrifted)',
    ),
    Rule(
        NODECLASS_TYPE,
        "spec",
        Effect.DRIFT_NODES,
        "the EC2NodeClass's hash changes (or, for AMI, subnet and security group selectors, what they resolve "
        "to): Karpenter replaces the nodes of every NodePool that uses it",
        _KARPENTER_DRIFT_SRC,
    ),
    # gpu-operator: it mounts the device-plugin ConfigMap by name, so a new name rolls the
    # device-plugin DaemonSets; the plugin's config-manager never reloads a ConfigMap's content.
    # A new chart version brings a new device-plugin image (v0.17.2 / v0.18.1 / v0.20.0 behind
    # charts v25.3.1 / v25.10.1 / v26.7.0: see components/catalog/instances.py): its DaemonSets roll too.
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "values.devicePlugin.config.name",
        Effect.ROLL_DEVICE_PLUGIN,
        "the gpu-operator mounts the device-plugin ConfigMap by name: a new name rolls its DaemonSets (a group "
        "switched to or from MPS starts or stops its MPS control daemon, which switches the GPU's compute mode: "
        "GPU pods started under the old mode keep running, and new ones on that node may wait or fail until they "
        "end; drain the group's GPU pods to switch cleanly)",
        "NVIDIA/gpu-operator (controllers: devicePlugin.config.name mounted as a volume); "
        "NVIDIA/k8s-device-plugin config-manager (reacts to the node label only); MPS control daemon: "
        "gpu-operator assets/state-mps-control-daemon (nodeSelector nvidia.com/mps.capable, set by GFD), "
        "k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go Start/Stop (setComputeMode EXCLUSIVE_PROCESS, "
        "then DEFAULT; v0.17.2-v0.20.0)",
        chart="gpu-operator",
    ),
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "values.devicePlugin.env",
        Effect.ROLL_DEVICE_PLUGIN,
        "the operator sets devicePlugin.env on the device plugin's container (DEVICE_LIST_STRATEGY: how devices "
        "reach containers): its DaemonSet rolls",
        "NVIDIA/gpu-operator controllers/object_controls.go TransformDevicePlugin (config.DevicePlugin.Env), "
        "v25.3.1, v25.10.1, v26.7.0",
        chart="gpu-operator",
    ),
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "values.mig.strategy",
        Effect.ROLL_DEVICE_PLUGIN,
        "mig.strategy reaches the device plugin as MIG_STRATEGY env: its DaemonSets roll",
        "NVIDIA/gpu-operator (device-plugin DaemonSet env MIG_STRATEGY)",
        chart="gpu-operator",
    ),
    # mig-manager is off in a cluster with a MIG group (gpu_operator/values.py mig_manager_values): the
    # boot stage applies the layouts, and a layout change is new user data, which rolls the nodes.
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "values.migManager.enabled",
        Effect.ROLL_PODS,
        "mig-manager is switched on or off: its DaemonSet is created or removed; with a MIG group it stays off, the "
        "boot stage owns MIG mode and layouts, and a layout change rolls the group's nodes (new user data)",
        "NVIDIA/gpu-operator deployments/gpu-operator/templates/clusterpolicy.yaml (migManager.enabled); "
        "components/plan/boot.py",
        chart="gpu-operator",
    ),
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "version",
        Effect.ROLL_DEVICE_PLUGIN,
        "a gpu-operator chart upgrade brings a new device-plugin image: its DaemonSets roll",
        "NVIDIA/gpu-operator deployments/gpu-operator/values.yaml (devicePlugin.version per chart)",
        chart="gpu-operator",
    ),
)


def rules_for(typ: str, path: Sequence[str | int], inputs: Mapping[str, Any]) -> list[Rule]:
    return [r for r in RULES if r.matches(typ, path, inputs)]


def dig(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]...`` of a render's item, or None where a key or a mapping is missing."""
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value
