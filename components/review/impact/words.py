"""The change-impact summary in words: the lines of plain text that open the render diff's output
and the Markdown list of the pull request comment, most disruptive first. Pure: no Pulumi, no I/O.
"""

from __future__ import annotations

from .rules import Effect
from .summary import Impact, NodeRoll, reasons_text

# ---------------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------------


_EFFECT_WORDS = {
    Effect.NEW_VERSION: "new launch template version",
    Effect.ROLL_NODES: "nodes rolled",
    Effect.UPGRADE_CONTROL_PLANE: "control plane upgraded in place",
    Effect.ROLL_DEVICE_PLUGIN: "device-plugin DaemonSets rolled",
    Effect.ROLL_PODS: "its pods replaced (rolling update)",
    Effect.DRIFT_NODES: "nodes drifted (Karpenter replaces them)",
}


def _nodes(n: int | None) -> str:
    if n is None:
        return "every node (max size unknown)"
    return f"up to {n} node{'s' if n != 1 else ''} (its max size)"


def _roll_words(roll: NodeRoll) -> str:
    if roll.how == "rolled":
        # EKS user guide, "Understand each phase of node updates", scale-up phase (awsdocs/amazon-eks-user-guide
        # 0bfeeaf latest/ug/nodes/managed-node-update-behavior.adoc): the ASG's maximum and desired size
        # grow by the larger of twice its zones and maxUnavailable before any node drains.
        surge = "EKS first launches up to 2 extra nodes per zone (maxUnavailable, if more) for their pods"
        if roll.reserved:
            surge += f", which on {roll.reserved} need free reserved instances: without them the update fails"
        at = f"{_nodes(roll.max_nodes)}, {roll.at_a_time} at a time"
        return f"node group {roll.node_group}: {at}; {roll.cause}; {surge}"
    if roll.how == "drifted":
        most = (
            _nodes(roll.max_nodes)
            .replace("max size", "node limit")
            .replace("every node (node limit unknown)", "every node")
        )
        return f"{roll.node_group}: {most}, {roll.at_a_time} at a time; {roll.cause}"
    if roll.how == "replaced":
        held = (
            f"; on {roll.reserved}, the new group's nodes need free reserved instances while the old ones hold theirs"
            if roll.reserved
            else ""
        )
        return (
            f"node group {roll.node_group}: a new node group is created, then the old one is deleted with its "
            f"nodes ({_nodes(roll.max_nodes)}); {roll.cause}{held}"
        )
    return f"node group {roll.node_group}: deleted with its nodes ({_nodes(roll.max_nodes)})"


def lines(impact: Impact) -> list[tuple[str, str]]:
    """(heading, text) lines of the summary, most disruptive first; shared by text and Markdown."""
    out: list[tuple[str, str]] = []
    for r in impact.of("replace"):
        out.append(("replaced", f"{r.label}: " + reasons_text(r.reasons)))
    for roll in impact.node_rolls:
        out.append(("nodes rolled", _roll_words(roll)))
    for roll in (r for r in impact.node_rolls if r.gpu):
        # Karpenter's rolls are named "NodePool <name>" / "EC2NodeClass <name>" already.
        group = roll.node_group
        what = group if group.startswith(("NodePool ", "EC2NodeClass ")) else f"node group {group}"
        # Only time-slicing shares a GPU among pods with nothing between them (MIG, MPS and whole GPUs don't).
        shared = " (time-slicing gives no isolation: every pod sharing a GPU goes at once)" if roll.time_sliced else ""
        out.append(
            (
                "GPU pods rescheduled",
                f"{what}: its GPU pods are evicted as each node drains and start again on new nodes{shared}",
            )
        )
    for d in impact.device_plugin_rolls:
        out.append(
            (
                "device-plugin DaemonSets rolled",
                f"release {d.release}: {d.cause}; the plugin restarts on every GPU node, running GPU pods keep "
                "running, nodes stay",
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
    """The plain-text summary that opens the render diff's output."""
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
