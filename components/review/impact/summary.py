"""The change-impact engine: two renders in, an ``Impact`` out (what is created, deleted, updated
in place or replaced, which node groups roll, which device-plugin DaemonSets roll).

Judged by the rules of ``.rules``; put in words by ``.words``. Pure: no
Pulumi, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..urns import split_urn
from ..values import UNKNOWN
from . import isolation, nodes, repair, verification
from .rules import (
    LAUNCH_TEMPLATE_TYPE,
    NODE_GROUP_TYPE,
    NODEPOOL_REQUIREMENTS,
    NODEPOOL_TYPE,
    Effect,
    Rule,
    rules_for,
)

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
    #: Whether the nodes' GPUs are time-sliced (``nodes``): pods sharing one all go as it drains.
    time_sliced: bool = False
    #: The reserved capacity a managed node group runs on, in words (``nodes``), or None.
    reserved: str | None = None


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
    node_rolls = nodes.with_node_facts(_node_rolls(new_items, impacts, old_items, matched), new_items, old_items)
    plugin_rolls = [
        DevicePluginRoll(r.name, reasons_text([x for x in r.reasons if x.effect == Effect.ROLL_DEVICE_PLUGIN.value]))
        for r in impacts.values()
        if Effect.ROLL_DEVICE_PLUGIN.value in r.effects
    ]
    notes = _notes(new_items, impacts)
    repair.collapse(impacts)
    notes += repair.notes(new_items, matched, _key)
    notes += isolation.notes(new_items, matched, _key)
    notes += verification.notes(new.get("outputs"))
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
    rolls: list[NodeRoll] = _drifts(new_items, impacts)
    for item in new_items:
        if item["type"] != NODE_GROUP_TYPE or _ref(item) not in impacts:
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
        if item["type"] == NODE_GROUP_TYPE and ident not in {_key(m) for m in matched.values()}:
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


def _drifts(new_items: Sequence[Mapping[str, Any]], impacts: Mapping[str, ResourceImpact]) -> list[NodeRoll]:
    """Karpenter NodePools and EC2NodeClasses whose changes drift their nodes (``Effect.DRIFT_NODES``)."""
    pools = [i for i in new_items if i["type"] == NODEPOOL_TYPE]

    def spec(item: Mapping[str, Any]) -> Mapping[str, Any]:
        return (item.get("inputs") or {}).get("spec") or {}

    def gpu(pool: Mapping[str, Any]) -> bool:
        # The library's GPU pools label their nodes with the GPU count (catalog/labels.py).
        return "gpu-eks.io/gpu-count" in ((spec(pool).get("template") or {}).get("metadata") or {}).get("labels", {})

    rolls = []
    for item in new_items:
        impact = impacts.get(_ref(item))
        if impact is None or Effect.DRIFT_NODES.value not in impact.effects:
            continue
        hashed = [r.input for r in impact.reasons if r.effect == Effect.DRIFT_NODES.value]
        changed = [c for c in impact.changed if any(c == h or c.startswith(h + ".") for h in hashed)]
        because = ", ".join(f"`{c}`" for c in (changed or hashed))
        if item["type"] == NODEPOOL_TYPE:
            limit = str((spec(item).get("limits") or {}).get("nodes", ""))
            budgets = (spec(item).get("disruption") or {}).get("budgets") or [{}]
            at_a_time = str(budgets[0].get("nodes", "10% (Karpenter's default budget)"))
            rolls.append(
                NodeRoll(
                    f"NodePool {item['name']}",
                    int(limit) if limit.isdigit() else None,
                    at_a_time,
                    gpu(item),
                    "drifted",
                    f"{because} changes: Karpenter replaces only the nodes whose labels no longer meet the NodePool's "
                    "requirements (drift); nodes that still meet them stay"
                    if all(h == NODEPOOL_REQUIREMENTS for h in hashed)
                    else f"{because} changes: Karpenter replaces every node of the pool (drift)",
                )
            )
        else:
            class_name = ((item.get("inputs") or {}).get("metadata") or {}).get("name")
            users = [
                p
                for p in pools
                if (spec(p).get("template") or {}).get("spec", {}).get("nodeClassRef", {}).get("name") == class_name
            ]
            rolls.append(
                NodeRoll(
                    f"EC2NodeClass {item['name']}",
                    None,
                    "as each NodePool's disruption budget allows",
                    any(gpu(p) for p in users),
                    "drifted",
                    f"{because} changes: Karpenter replaces the nodes of every NodePool that uses it (drift)",
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
            if i["type"] == NODE_GROUP_TYPE
            and not {"version", "releaseVersion"} & set(i.get("inputs") or {})
            and "launchTemplate" in (i.get("inputs") or {})
        ]
        if pinned:
            notes.append(
                "node groups without a `version` input keep their Kubernetes version when the control plane "
                f"is upgraded (aws_eks_node_group: version is Optional+Computed): {', '.join(pinned)}"
            )
    return notes


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
