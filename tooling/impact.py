"""What deploying a change does to running infrastructure, from two renders: the change-impact summary.

A reviewer reading a render diff (or ``pulumi preview``) sees "update" on a node group whose launch
template got a new version, yet every node of the group is then replaced one at a time and its GPU
pods are evicted. This module turns two renders (old, new) into plain words, per resource:

* **created**, **deleted**, **updated in place**, **replaced** (and which input forces it);
* **nodes rolled**: which node group, how many nodes at most (its max size), how many at a time;
* **GPU pods rescheduled**: the pods on a GPU node group that rolls or is replaced;
* **device-plugin DaemonSets rolled**: a gpu-operator release whose device-plugin config name or
  chart version changes.

The provider facts live in ``RULES``, one table, each row with its upstream source. Rules are
written by resource type and input path, never by resource name, so new resources of a known type
are covered. Pure: no Pulumi, no I/O; the inputs are renders as ``render_values.load`` reads them.

What a render cannot show cannot be judged here either: values computed by the cloud are
``(known after apply)`` on both sides. Where such a value comes from a resource that is replaced
(or gets a new launch template version), the dependent resource is judged by the rule of the input
that holds the unknown value, and the reason says so.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from .render_urns import split_urn
from .render_values import UNKNOWN

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


_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
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
        Rule(_NODE_GROUP, path, Effect.REPLACE, _NG_FORCE_NEW, _NODE_GROUP_SRC)
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
            _NODE_GROUP,
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
    # gpu-operator: it mounts the device-plugin ConfigMap by name, so a new name rolls the
    # device-plugin DaemonSets; the plugin's config-manager never reloads a ConfigMap's content.
    # A new chart version brings a new device-plugin image (v0.17.2 / v0.18.1 / v0.20.0 behind
    # charts v25.3.1 / v25.10.1 / v26.7.0: see components/catalog.py): its DaemonSets roll too.
    Rule(
        "kubernetes:helm.sh/v3:Release",
        "values.devicePlugin.config.name",
        Effect.ROLL_DEVICE_PLUGIN,
        "the gpu-operator mounts the device-plugin ConfigMap by name: a new name rolls its DaemonSets",
        "NVIDIA/gpu-operator (controllers: devicePlugin.config.name mounted as a volume); "
        "NVIDIA/k8s-device-plugin config-manager (reacts to the node label only)",
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


# ---------------------------------------------------------------------------------------------
# The summary
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    """Why a resource is replaced or has an effect: the input, the rule's words and source."""

    input: str
    why: str
    source: str
    effect: str
    #: For a consequence of another resource's change: ``type name`` of that resource.
    via: str | None = None


@dataclass
class ResourceImpact:
    type: str
    name: str
    #: "create", "delete", "replace", "update"
    action: str
    #: Input paths that differ (dotted), for updates and replacements.
    changed: list[str] = field(default_factory=list)
    #: Why it is replaced (action "replace"), or why each effect happens.
    reasons: list[Reason] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.type} {self.name}"


@dataclass(frozen=True)
class NodeRoll:
    """A node group whose nodes are all replaced."""

    node_group: str
    #: The most nodes it can have (scalingConfig.maxSize); None when unknown.
    max_nodes: int | None
    #: How many are replaced at once: updateConfig.maxUnavailable (or "<n>%"); EKS's default is 1.
    at_a_time: str
    gpu: bool
    #: "replaced" (a new node group) or "rolled" (in place, node by node)
    how: str
    cause: str


@dataclass(frozen=True)
class DevicePluginRoll:
    release: str
    cause: str


@dataclass
class Impact:
    """The change-impact summary of one stack."""

    stack: str
    resources: list[ResourceImpact]
    node_rolls: list[NodeRoll]
    device_plugin_rolls: list[DevicePluginRoll]
    notes: list[str]
    unchanged: int

    @property
    def gpu_pods_rescheduled(self) -> list[str]:
        return [roll.node_group for roll in self.node_rolls if roll.gpu]

    def of(self, action: str) -> list[ResourceImpact]:
        return [r for r in self.resources if r.action == action]

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "created": [_resource_json(r) for r in self.of("create")],
            "deleted": [_resource_json(r) for r in self.of("delete")],
            "replaced": [_resource_json(r) for r in self.of("replace")],
            "updated": [_resource_json(r) for r in self.of("update")],
            "unchanged": self.unchanged,
            "nodesRolled": [
                {
                    "nodeGroup": n.node_group,
                    "maxNodes": n.max_nodes,
                    "atATime": n.at_a_time,
                    "gpu": n.gpu,
                    "how": n.how,
                    "cause": n.cause,
                }
                for n in self.node_rolls
            ],
            "gpuPodsRescheduled": self.gpu_pods_rescheduled,
            "devicePluginDaemonSetsRolled": [
                {"release": d.release, "cause": d.cause} for d in self.device_plugin_rolls
            ],
            "notes": list(self.notes),
        }


def _resource_json(r: ResourceImpact) -> dict[str, Any]:
    return {
        "type": r.type,
        "name": r.name,
        "changed": list(r.changed),
        "reasons": [{k: v for k, v in asdict(reason).items() if v is not None} for reason in r.reasons],
        "effects": list(r.effects),
    }


# ---------------------------------------------------------------------------------------------
# Comparing inputs
# ---------------------------------------------------------------------------------------------


def leaves(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, scalar) of a value; an empty map or list is a leaf of its own."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, str(key)))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def changed_paths(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str | int, ...]]:
    """Paths whose value differs (present on one side only counts), sorted as dotted text."""
    a, b = dict(leaves(dict(old))), dict(leaves(dict(new)))
    paths = [p for p in set(a) | set(b) if a.get(p, _MISSING) != b.get(p, _MISSING)]
    return sorted(paths, key=dotted)


_MISSING = object()


def dotted(path: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in path)


def _collapse(paths: Sequence[tuple[str | int, ...]], depth: int = 3) -> list[str]:
    """Changed paths for display: cut to ``depth`` components, without repeats, in order."""
    seen: dict[str, None] = {}
    for p in paths:
        seen.setdefault(dotted(p[:depth]), None)
    return list(seen)


def _rule_path_of(rule: Rule, path: Sequence[str | int]) -> str:
    """The changed input as the rule names it (``instanceTypes``, not ``instanceTypes.0``)."""
    return dotted(path[: len(rule.path.split("."))]) if rule.path else dotted(path[:2])


# ---------------------------------------------------------------------------------------------
# Two renders -> Impact
# ---------------------------------------------------------------------------------------------


def _identity(urn: str) -> str:
    """A URN without its stack: the same resource of two stacks compares equal."""
    _, project, qualified, name = split_urn(urn)
    return f"{project}::{qualified}::{name}"


def _key(item: Mapping[str, Any]) -> str:
    """What identifies a resource of a render: its URN (stack left out), else its type and name."""
    return _identity(str(item["urn"])) if item.get("urn") else _ref(item)


def _ref(item: Mapping[str, Any]) -> str:
    return f"{item['type']}::{item['name']}"


def _is_gpu_node_group(inputs: Mapping[str, Any]) -> bool:
    """An EKS managed node group on an accelerated AMI (AL2023_x86_64_NVIDIA, AL2_x86_64_GPU, ...)."""
    ami = str(inputs.get("amiType") or "")
    return "NVIDIA" in ami or "GPU" in ami or "NEURON" in ami


def _scaling(inputs: Mapping[str, Any]) -> tuple[int | None, str]:
    scaling = inputs.get("scalingConfig") or {}
    max_size = scaling.get("maxSize") if isinstance(scaling, Mapping) else None
    update = inputs.get("updateConfig") or {}
    at_a_time = "1 (EKS's default)"
    if isinstance(update, Mapping):
        if isinstance(update.get("maxUnavailable"), int):
            at_a_time = str(update["maxUnavailable"])
        elif isinstance(update.get("maxUnavailablePercentage"), int):
            at_a_time = f"{update['maxUnavailablePercentage']}%"
    return (max_size if isinstance(max_size, int) else None), at_a_time


def summarize(stack: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Impact:
    """The impact of deploying render ``new`` over a stack whose desired state was render ``old``."""
    old_items = {_key(i): i for i in old.get("resources") or []}
    new_items = list(new.get("resources") or [])
    # A new resource answers for an old one through its URN or any alias.
    matched: dict[str, Mapping[str, Any]] = {}  # new identity -> old item
    claimed: set[str] = set()
    for item in new_items:
        for ident in [_key(item), *(_identity(str(a)) for a in item.get("aliases") or [])]:
            if ident in old_items and ident not in claimed:
                matched[_key(item)] = old_items[ident]
                claimed.add(ident)
                break

    impacts: dict[str, ResourceImpact] = {}  # by new ref (type::name)
    unchanged = 0
    for item in new_items:
        before = matched.get(_key(item))
        if before is None:
            impacts[_ref(item)] = ResourceImpact(item["type"], item["name"], "create")
            continue
        paths = changed_paths(before.get("inputs") or {}, item.get("inputs") or {})
        if not paths:
            unchanged += 1
            continue
        impacts[_ref(item)] = _judge(item, paths)
    deleted = [ResourceImpact(i["type"], i["name"], "delete") for ident, i in old_items.items() if ident not in claimed]

    _propagate(new_items, impacts)
    for replaced in (r for r in impacts.values() if r.action == "replace"):
        # Replaced: whatever else a change would do in place is moot.
        replaced.reasons = [r for r in replaced.reasons if r.effect == Effect.REPLACE.value]
        replaced.effects = []
    node_rolls = _node_rolls(new_items, impacts, old_items, matched)
    plugin_rolls = [
        DevicePluginRoll(r.name, reasons_text([x for x in r.reasons if x.effect == Effect.ROLL_DEVICE_PLUGIN.value]))
        for r in impacts.values()
        if Effect.ROLL_DEVICE_PLUGIN.value in r.effects
    ]
    notes = _notes(new_items, impacts)
    # The project's own components (type ``<project>:...``) deploy nothing themselves: left out.
    project = str(new.get("project") or old.get("project") or "")
    own = {_ref(i) for i in [*new_items, *old_items.values()] if str(i["type"]).split(":", 1)[0] == project}
    ordered = [impacts[_ref(i)] for i in new_items if _ref(i) in impacts] + deleted
    ordered = [r for r in ordered if f"{r.type}::{r.name}" not in own]
    unchanged -= sum(1 for i in new_items if _ref(i) in own and _ref(i) not in impacts)
    return Impact(stack, ordered, node_rolls, plugin_rolls, notes, max(unchanged, 0))


def _judge(item: Mapping[str, Any], paths: Sequence[tuple[str | int, ...]]) -> ResourceImpact:
    inputs = item.get("inputs") or {}
    impact = ResourceImpact(item["type"], item["name"], "update", changed=_collapse(paths))
    for path in paths:
        for rule in rules_for(item["type"], path, inputs):
            _apply(impact, rule, _rule_path_of(rule, path))
    return impact


def _apply(impact: ResourceImpact, rule: Rule, input_path: str, via: str | None = None) -> None:
    reason = Reason(input_path, rule.why, rule.source, rule.effect.value, via)
    if reason in impact.reasons:
        return
    if rule.effect is Effect.REPLACE:
        impact.action = "replace"
    elif rule.effect.value not in impact.effects:
        impact.effects.append(rule.effect.value)
    impact.reasons.append(reason)


def _propagate(new_items: Sequence[Mapping[str, Any]], impacts: dict[str, ResourceImpact]) -> None:
    """Changes the render cannot show: an input ``(known after apply)`` computed from a resource
    that is replaced (its id and ARN change) or gets a new launch template version.

    Judged by the rule of the input holding the unknown, naming the resource it comes from. The
    render's ``inputDependencies`` say which resources each input comes from; a render without
    them (an older base) falls back to ``dependsOn`` for every input. Resources are in declaration
    order, so a dependency is judged before its dependants.
    """
    for item in new_items:
        ref = _ref(item)
        if ref in impacts and impacts[ref].action == "replace":
            continue  # replaced for its own inputs already: nothing more to learn
        inputs = item.get("inputs") or {}
        by_input: Mapping[str, Sequence[str]] | None = item.get("inputDependencies")
        for path, value in leaves(dict(inputs)):
            if value != UNKNOWN or not path:
                continue
            sources = by_input.get(str(path[0]), ()) if by_input is not None else item.get("dependsOn") or ()
            for source in sources:
                cause = impacts.get(source)
                if cause is None:
                    continue
                for rule in rules_for(item["type"], path, inputs):
                    # A replaced resource has a new id and ARN: any input computed from it changes.
                    # A new launch template version changes a launch template version, nothing else.
                    if rule.effect is Effect.ROLL_NODES:
                        relevant = cause.type == LAUNCH_TEMPLATE_TYPE and (
                            cause.action == "replace" or Effect.NEW_VERSION.value in cause.effects
                        )
                    else:
                        relevant = cause.action == "replace"
                    if not relevant:
                        continue
                    if ref not in impacts:
                        impacts[ref] = ResourceImpact(item["type"], item["name"], "update")
                    target = impacts[ref]
                    if dotted(path) not in target.changed:
                        target.changed.append(dotted(path))
                    _apply(target, rule, _rule_path_of(rule, path), via=cause.label)


def _node_rolls(
    new_items: Sequence[Mapping[str, Any]],
    impacts: Mapping[str, ResourceImpact],
    old_items: Mapping[str, Mapping[str, Any]],
    matched: Mapping[str, Mapping[str, Any]],
) -> list[NodeRoll]:
    rolls: list[NodeRoll] = []
    for item in new_items:
        if item["type"] != _NODE_GROUP or _ref(item) not in impacts:
            continue
        impact = impacts[_ref(item)]
        inputs = item.get("inputs") or {}
        max_nodes, at_a_time = _scaling(inputs)
        if impact.action == "replace":
            before = matched.get(_key(item)) or {}
            old_max, _ = _scaling(before.get("inputs") or {})
            because = "; ".join(sorted({f"`{r.input}`" for r in impact.reasons}))
            rolls.append(
                NodeRoll(
                    item["name"],
                    old_max if old_max is not None else max_nodes,
                    "all",
                    _is_gpu_node_group(before.get("inputs") or {}) or _is_gpu_node_group(inputs),
                    "replaced",
                    f"the node group is replaced ({because})",
                )
            )
        elif Effect.ROLL_NODES.value in impact.effects:
            causes = sorted(
                {
                    f"{r.via} changes" if r.via else f"`{r.input}` changes"
                    for r in impact.reasons
                    if r.effect == Effect.ROLL_NODES.value
                }
            )
            because = f"{', '.join(causes)}: EKS replaces every node (UpdateNodegroupVersion)"
            rolls.append(NodeRoll(item["name"], max_nodes, at_a_time, _is_gpu_node_group(inputs), "rolled", because))
        elif impact.action == "create":
            continue
    for ident, item in old_items.items():
        if item["type"] == _NODE_GROUP and ident not in {_key(m) for m in matched.values()}:
            max_nodes, _ = _scaling(item.get("inputs") or {})
            rolls.append(
                NodeRoll(
                    item["name"],
                    max_nodes,
                    "all",
                    _is_gpu_node_group(item.get("inputs") or {}),
                    "deleted",
                    "the node group is deleted",
                )
            )
    return rolls


def _notes(new_items: Sequence[Mapping[str, Any]], impacts: Mapping[str, ResourceImpact]) -> list[str]:
    notes: list[str] = []
    upgraded = [r for r in impacts.values() if Effect.UPGRADE_CONTROL_PLANE.value in r.effects]
    if upgraded:
        pinned = [
            i["name"]
            for i in new_items
            if i["type"] == _NODE_GROUP
            and not {"version", "releaseVersion"} & set(i.get("inputs") or {})
            and "launchTemplate" in (i.get("inputs") or {})
        ]
        if pinned:
            notes.append(
                "node groups without a `version` input keep their Kubernetes version when the control plane "
                f"is upgraded (aws_eks_node_group: version is Optional+Computed): {', '.join(pinned)}"
            )
    return notes


# ---------------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------------


_EFFECT_WORDS = {
    Effect.NEW_VERSION: "new launch template version",
    Effect.ROLL_NODES: "nodes rolled",
    Effect.UPGRADE_CONTROL_PLANE: "control plane upgraded in place",
    Effect.ROLL_DEVICE_PLUGIN: "device-plugin DaemonSets rolled",
    Effect.ROLL_PODS: "its pods replaced (rolling update)",
}


def reasons_text(reasons: Sequence[Reason]) -> str:
    """Reasons grouped by what they say: "`a`, `b`: why" once, not once per input."""
    grouped: dict[tuple[str, str | None], list[str]] = {}
    for r in reasons:
        grouped.setdefault((r.why, r.via), [])
        if r.input not in grouped[(r.why, r.via)]:
            grouped[(r.why, r.via)].append(r.input)
    parts = []
    for (why, via), inputs in grouped.items():
        where = ", ".join(f"`{i}`" for i in inputs)
        if via:
            where += f" (known after apply; depends on {via}, which changes)"
        parts.append(f"{where}: {why}")
    return "; ".join(parts)


def _nodes(n: int | None) -> str:
    if n is None:
        return "every node (max size unknown)"
    return f"up to {n} node{'s' if n != 1 else ''} (its max size)"


def _roll_words(roll: NodeRoll) -> str:
    if roll.how == "rolled":
        return f"node group {roll.node_group}: {_nodes(roll.max_nodes)}, {roll.at_a_time} at a time; {roll.cause}"
    if roll.how == "replaced":
        return (
            f"node group {roll.node_group}: a new node group is created, then the old one is deleted with its "
            f"nodes ({_nodes(roll.max_nodes)}); {roll.cause}"
        )
    return f"node group {roll.node_group}: deleted with its nodes ({_nodes(roll.max_nodes)})"


def lines(impact: Impact) -> list[tuple[str, str]]:
    """(heading, text) lines of the summary, most disruptive first; shared by text and Markdown."""
    out: list[tuple[str, str]] = []
    for r in impact.of("replace"):
        out.append(("replaced", f"{r.label}: " + reasons_text(r.reasons)))
    for roll in impact.node_rolls:
        out.append(("nodes rolled", _roll_words(roll)))
    for group in impact.gpu_pods_rescheduled:
        out.append(
            (
                "GPU pods rescheduled",
                f"node group {group}: its GPU pods are evicted as each node drains and start again on new nodes "
                "(time-slicing gives no isolation: every pod sharing a GPU goes at once)",
            )
        )
    for d in impact.device_plugin_rolls:
        out.append(
            (
                "device-plugin DaemonSets rolled",
                f"release {d.release}: {d.cause}; the plugin restarts on every GPU node, running GPU pods keep running",
            )
        )
    for r in impact.resources:
        if Effect.UPGRADE_CONTROL_PLANE.value in r.effects:
            upgrade = [x for x in r.reasons if x.effect == Effect.UPGRADE_CONTROL_PLANE.value]
            out.append(("control plane upgraded", f"{r.label}: {reasons_text(upgrade)}"))
    for r in impact.of("delete"):
        out.append(("deleted", r.label))
    for r in impact.of("create"):
        out.append(("created", r.label))
    for r in impact.of("update"):
        detail = ", ".join(f"`{p}`" for p in r.changed[:6])
        if len(r.changed) > 6:
            detail += f" and {len(r.changed) - 6} more"
        # The effects are explained in the lines above; here only named.
        effects = [_EFFECT_WORDS[Effect(e)] for e in r.effects]
        out.append(("updated in place", f"{r.label}: {detail}" + (f" -> {'; '.join(effects)}" if effects else "")))
    for note in impact.notes:
        out.append(("note", note))
    return out


def text(impact: Impact, title: str) -> str:
    """The plain-text summary that opens ``tooling diff`` output."""
    body = lines(impact)
    head = [f"== {title}: what deploying it does =="]
    if not body:
        return "\n".join([*head, "  no resource changes (only outputs or comments differ)", ""]) + "\n"
    width = max(len(h) for h, _ in body)
    rows = [f"  {h.ljust(width)}  {t}" for h, t in body]
    rows.append(f"  {'unchanged'.ljust(width)}  {impact.unchanged} resource{'s' if impact.unchanged != 1 else ''}")
    return "\n".join([*head, *rows, ""]) + "\n"


def markdown(impact: Impact) -> str:
    """The summary as a Markdown list (the pull request comment)."""
    body = lines(impact)
    if not body:
        return "No resource changes (only outputs or comments differ).\n"
    rows = [f"- **{h}**: {t}" for h, t in body]
    rows.append(f"- unchanged: {impact.unchanged} resource{'s' if impact.unchanged != 1 else ''}")
    return "\n".join(rows) + "\n"
