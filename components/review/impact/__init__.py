"""What deploying a change does to running infrastructure, from two renders: the change-impact summary.

A reviewer reading a render diff (or ``pulumi preview``) sees "update" on a node group whose launch
template got a new version, yet every node of the group is then replaced one at a time and its GPU
pods are evicted. This package turns two renders (old, new) into plain words, per resource:

* **created**, **deleted**, **updated in place**, **replaced** (and which input forces it);
* **nodes rolled**: which node group, how many nodes at most (its max size), how many at a time,
  and the extra nodes a managed node group's rolling update launches first (which on reserved
  capacity need free reserved instances);
* **GPU pods rescheduled**: the pods on a GPU node group that rolls or is replaced (time-sliced
  GPUs: every pod sharing one goes at once);
* **device-plugin DaemonSets rolled**: a gpu-operator release whose device-plugin config name or
  chart version changes.

The provider facts live in ``RULES`` (``components.review.impact.rules``), one table, each row with its
upstream source. Rules are written by resource type and input path, never by resource name, so new
resources of a known type are covered. Pure: no Pulumi, no I/O; the inputs are renders as
``components.review.values.load`` reads them.

What a render cannot show cannot be judged here either: values computed by the cloud are
``(known after apply)`` on both sides. Where such a value comes from a resource that is replaced
(or gets a new launch template version), the dependent resource is judged by the rule of the input
that holds the unknown value, and the reason says so.

Four modules: ``rules`` (the facts: ``Effect``, ``Rule``, ``RULES``), ``summary`` (two renders
-> ``Impact``: ``summarize``), ``nodes`` (what a render says about a roll's nodes: time-sliced,
reserved) and ``words`` (``text`` and ``markdown``); ``repair``, ``isolation`` and ``verification``
put a group's repair policy, its isolation and what its verification proves into notes. Their public names are
importable from here (``from components.review import impact``; ``impact.summarize``, ``impact.RULES``).
"""

from __future__ import annotations

from .rules import LAUNCH_TEMPLATE_TYPE, NODE_GROUP_TYPE, PULUMI_K8S, RULES, TF_AWS, Effect, Rule, rules_for
from .summary import (
    DevicePluginRoll,
    Impact,
    NodeRoll,
    Reason,
    ResourceImpact,
    changed_paths,
    dotted,
    leaves,
    reasons_text,
    summarize,
)
from .words import lines, markdown, text

__all__ = [
    "LAUNCH_TEMPLATE_TYPE",
    "NODE_GROUP_TYPE",
    "PULUMI_K8S",
    "RULES",
    "TF_AWS",
    "DevicePluginRoll",
    "Effect",
    "Impact",
    "NodeRoll",
    "Reason",
    "ResourceImpact",
    "Rule",
    "changed_paths",
    "dotted",
    "leaves",
    "lines",
    "markdown",
    "reasons_text",
    "rules_for",
    "summarize",
    "text",
]
