"""A team's admission policy, as plain dicts (no Pulumi): a ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) that keep every pod of the team's
namespace inside the team's boundary, enforced by the API server itself (no webhook, no controller).
What each rule refuses, why, and what the policy cannot see: docs/teams.md ("What a team's pods can
and cannot do"); each rule is one validation whose message starts ``team <name>:`` and names it.

What the expressions rest on, with their sources:

* Scope: pod CREATE in the namespace (the binding selects it by ``kubernetes.io/metadata.name``, which
  the API server sets on every namespace), and the UPDATE of ``pods/ephemeralcontainers`` (``kubectl
  debug``), whose object is the whole pod.
* A *GPU pod* names a resource of ``GroupPlan.advertised_resources`` in a container's or init
  container's requests or limits at a quantity other than ``"0"``: the team's LimitRange writes 0 into
  containers that ask for none, and admission sees a quantity's canonical form (k8s.io/apimachinery
  pkg/api/resource Quantity MarshalJSON).
* The toolkit's device variables (``DEVICE_VARIABLES``), its privileged test (nvidia-container-toolkit
  v1.19.1 internal/config/image/privileged.go ``IsPrivileged``: ``CAP_SYS_ADMIN`` in the bounding set;
  containerd's CRI ``WithCapabilities`` adds ``CAP_<NAME>`` upper-cased, every capability for ``ALL``:
  containerd/containerd d93d18c8 internal/cri/opts/spec_opts.go)
  and its mount requests (cuda_image.go ``requestsFromMounts``: a string prefix of the cleaned
  destination, so one rule on the path covers every spelling of the ``/dev/null`` source).
* ``nodeName``: the kubelet admits a pod against its node selector, affinity and ``NoExecute`` taints
  only (k8s.io/kubernetes pkg/kubelet/lifecycle predicate.go). A DaemonSet's pods keep their
  ``nodeSelector`` but lose their required affinity terms (pkg/controller/daemon/util/daemonset_util.go
  ReplaceDaemonSetPodNodeNameNodeAffinity), and set no ``nodeName``. No team role grants ``create``
  on ``pods/binding`` (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go
  system:aggregate-to-edit).
* Cost: each expression is linear in the pod's entries, far below the per-call limit (k8s.io/apiserver
  pkg/apis/cel PerCallLimit, 1,000,000); a pod past it fails the evaluation, and ``failurePolicy:
  Fail`` refuses it.

The expressions are evaluated in tests with a CEL implementation (tests/test_teams_policy.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..catalog.device_lists import DEVICE_LIST_ROOT
from ..catalog.labels import GPU_COUNT_LABELS, INSTANCE_TYPE_LABEL, NODE_GROUP_LABEL
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from .objects import object_name, team_labels

#: The environment variables the NVIDIA container toolkit reads to pick a container's devices
#: (NVIDIA/nvidia-container-toolkit v1.20.0, the toolkit the AL2023 NVIDIA AMI installs from
#: NVIDIA's repository; the names are unchanged since v1.14):
#:
#: * ``NVIDIA_VISIBLE_DEVICES``: the device list (internal/config/image/envvars.go;
#:   cuda_image.go ``VisibleDevices``), honoured from unprivileged containers while
#:   ``accept-nvidia-visible-devices-envvar-when-unprivileged`` keeps its default ``true``
#:   (api/config/v1/toml.go);
#: * ``NVIDIA_IMEX_CHANNELS``: IMEX channels (envvars.go; cuda_image.go ``imexChannelsFromEnvVar``);
#: * ``NVIDIA_MIG_CONFIG_DEVICES``, ``NVIDIA_MIG_MONITOR_DEVICES``: the MIG configuration and
#:   monitoring capabilities (cmd/nvidia-container-runtime-hook/container_config.go ``getMigDevices``);
#: * ``NVIDIA_GDS``, ``NVIDIA_MOFED``, ``NVIDIA_NVSWITCH``, ``NVIDIA_GDRCOPY`` (``=enabled``): add
#:   the GPUDirect Storage, InfiniBand, NVSwitch and GDRCopy devices to a container that has GPUs
#:   (internal/modifier/gated.go, cdi.go).
#:
#: Not here: ``NVIDIA_DRIVER_CAPABILITIES`` and ``NVIDIA_REQUIRE_*`` (which libraries, which driver:
#: no device; the verification pods set the first), and the swarm variable ``DOCKER_RESOURCE_*``,
#: read only when ``swarm-resource`` is configured (it is commented out by default, toml.go).
DEVICE_VARIABLES: tuple[str, ...] = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_GDS",
    "NVIDIA_MOFED",
    "NVIDIA_NVSWITCH",
    "NVIDIA_GDRCOPY",
)
#: The one UPDATE the policy checks (``kubectl debug`` adds an ephemeral container through it).
EPHEMERAL = "ephemeralcontainers"


def _list(values: Sequence[str]) -> str:
    """A CEL list literal of strings (JSON string syntax is CEL's for these)."""
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _map(values: Mapping[str, Sequence[str]]) -> str:
    """A CEL map literal of string lists."""
    return "{" + ", ".join(f"{json.dumps(k)}: {_list(v)}" for k, v in values.items()) + "}"


def gpu_resources(plans: Sequence[GroupPlan]) -> list[str]:
    """Every GPU resource a group of the cluster advertises, sorted."""
    return sorted({r for p in plans for r in p.advertised_resources})


def foreign_taint_keys(team: TeamSettings, plans: Sequence[GroupPlan]) -> list[str]:
    """Taint keys of other groups that none of the team's groups carries, sorted."""
    mine = {t.key for p in plans if p.name in team.node_groups for t in p.taints}
    return sorted({t.key for p in plans if p.name not in team.node_groups for t in p.taints} - mine)


def gpu_taint_keys(plans: Sequence[GroupPlan]) -> list[str]:
    """Every taint key of every GPU group, sorted."""
    return sorted({t.key for p in plans for t in p.taints})


def gpu_selectors(plans: Sequence[GroupPlan]) -> dict[str, list[str]]:
    """The labels that select GPU groups, each with the values the groups give it (sorted): the
    groups' node labels, their instance types, and the GPU-count labels (no values known for those
    the library does not set: ``Exists``/``Gt`` on them still select)."""
    out: dict[str, set[str]] = {label: set() for label in GPU_COUNT_LABELS}
    for p in plans:
        for key, value in p.node_labels.items():
            out.setdefault(key, set()).add(value)
        out.setdefault(INSTANCE_TYPE_LABEL, set()).update(p.settings.instance_types)
    return {k: sorted(out[k]) for k in sorted(out)}


def _gpu_request(resources: Sequence[str]) -> str:
    """CEL: the pod asks for a GPU resource (not 0) in a container or an init container."""
    resources_list = _list(resources)
    per_container = (
        f"has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(r, r in {resources_list} && "
        "string(c.resources.limits[r]) != '0')) || (has(c.resources.requests) && c.resources.requests.exists(r, "
        f"r in {resources_list} && string(c.resources.requests[r]) != '0')))"
    )
    return (
        f"object.spec.containers.exists(c, {per_container}) || "
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {per_container}))"
    )


def _any_container(per_container: str) -> str:
    """CEL: ``per_container`` (on ``c``) holds for a container, init container or ephemeral
    container (separate lists: Container and EphemeralContainer are different types)."""
    return (
        f"object.spec.containers.exists(c, {per_container}) || "
        f"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, {per_container})) || "
        f"(has(object.spec.ephemeralContainers) && object.spec.ephemeralContainers.exists(c, {per_container}))"
    )


def device_variables_expression() -> str:
    """CEL: no container sets a device variable in ``env``."""
    return "!(" + _any_container(f"has(c.env) && c.env.exists(e, e.name in {_list(DEVICE_VARIABLES)})") + ")"


#: What a container may not add (containerd upper-cases an entry and prefixes ``CAP_``; ``ALL``, in
#: any case, adds every capability: containerd d93d18c8 internal/cri/opts/spec_opts.go
#: ``WithCapabilities``): RE2, as the API server's CEL ``matches`` reads it.
PRIVILEGED_CAPABILITY = "(?i)^(cap_)?(sys_admin|all)$"
#: The device plugin's volume-mount root's last element (k8s-device-plugin server.go
#: ``deviceListAsVolumeMountsContainerPathRoot``; catalog/device_lists.py ``DEVICE_LIST_ROOT``).
DEVICE_MOUNT_NAME = DEVICE_LIST_ROOT.rsplit("/", 1)[1]


def privileged_expression() -> str:
    """CEL: no container is privileged or adds CAP_SYS_ADMIN (or ALL)."""
    context = "c.securityContext"
    privileged = f"(has({context}.privileged) && {context}.privileged)"
    adds = (
        f"(has({context}.capabilities) && has({context}.capabilities.add) && "
        f"{context}.capabilities.add.exists(a, a.matches({json.dumps(PRIVILEGED_CAPABILITY)})))"
    )
    return "!(" + _any_container(f"has({context}) && ({privileged} || {adds})") + ")"


def device_mounts_expression() -> str:
    """CEL: no container mounts a volume at a path holding the device plugin's mount root's name."""
    return (
        "!("
        + _any_container(
            f"has(c.volumeMounts) && c.volumeMounts.exists(m, m.mountPath.contains({json.dumps(DEVICE_MOUNT_NAME)}))"
        )
        + ")"
    )


def env_from_expression() -> str:
    """CEL: a GPU pod's every ``envFrom`` has a prefix no device variable starts with."""
    unsafe = f"!has(f.prefix) || {_list(DEVICE_VARIABLES)}.exists(n, n.startsWith(f.prefix))"
    return "!variables.gpu || !(" + _any_container(f"has(c.envFrom) && c.envFrom.exists(f, {unsafe})") + ")"


def _on_create(expression: str) -> str:
    """CEL: ``expression`` on pod creation; an ephemeral-container update passes."""
    return f"request.operation != 'CREATE' || ({expression})"


def node_name_expression() -> str:
    return _on_create("!has(object.spec.nodeName)")


def _tolerates(keys: Sequence[str]) -> str:
    """CEL: a toleration of every taint, or of a taint key in ``keys``."""
    everything = "((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')"
    named = f" || (has(t.key) && t.key in {_list(keys)})" if keys else ""
    return f"(has(object.spec.tolerations) && object.spec.tolerations.exists(t, {everything}{named}))"


def gpu_taints_expression(plans: Sequence[GroupPlan]) -> str:
    """CEL: a pod without a GPU request tolerates no GPU group's taint (nor every taint)."""
    return _on_create(f"variables.gpu || !{_tolerates(gpu_taint_keys(plans))}")


def gpu_labels_expression(plans: Sequence[GroupPlan]) -> str:
    """CEL: a pod without a GPU request selects no GPU group's label."""
    sel = _map(gpu_selectors(plans))
    selector = (
        f"(has(object.spec.nodeSelector) && object.spec.nodeSelector.exists(k, k in {sel} && "
        f"object.spec.nodeSelector[k] in {sel}[k]))"
    )
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    selecting = (
        f"e.key in {sel} && (e.operator in ['Exists', 'Gt', 'Lt'] || "
        f"(e.operator == 'In' && has(e.values) && e.values.exists(v, v in {sel}[e.key])))"
    )
    affinity = (
        f"(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"{required}.nodeSelectorTerms.exists(t, has(t.matchExpressions) && t.matchExpressions.exists(e, {selecting})))"
    )
    return _on_create(f"variables.gpu || !({selector} || {affinity})")


def placement_expression(team: TeamSettings) -> str:
    """CEL: a GPU pod's node selector or required node affinity pins the team's groups."""
    groups = _list(team.node_groups)
    key = json.dumps(NODE_GROUP_LABEL)
    selector = (
        f"(has(object.spec.nodeSelector) && {key} in object.spec.nodeSelector && "
        f"object.spec.nodeSelector[{key}] in {groups})"
    )
    required = "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = (
        f"(has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has({required}) && "
        f"size({required}.nodeSelectorTerms) > 0 && {required}.nodeSelectorTerms.all(t, has(t.matchExpressions) && "
        f"t.matchExpressions.exists(e, e.key == {key} && e.operator == 'In' && has(e.values) && size(e.values) > 0 "
        f"&& e.values.all(v, v in {groups}))))"
    )
    return _on_create(f"!variables.gpu || {selector} || {affinity}")


def tolerations_expression(foreign_keys: Sequence[str]) -> str:
    """CEL: a GPU pod tolerates no taint only other groups carry, nor every taint."""
    return _on_create(f"!variables.gpu || !{_tolerates(foreign_keys)}")


def message_prefix(team: TeamSettings) -> str:
    """How every refusal of the team's policy starts (plain characters: the API server's JSON escapes ``<``)."""
    return f"team {team.name}: "


def placement_message(team: TeamSettings) -> str:
    """The start of the placement refusal."""
    return f"{message_prefix(team)}a GPU pod must select its node groups"


def device_variables_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule device variables: no container may set {', '.join(DEVICE_VARIABLES)} "
        "(the NVIDIA container toolkit would give it GPUs the device plugin did not allocate)"
    )


def env_from_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule device variables from envFrom: in a GPU pod every envFrom needs a prefix "
        "that no NVIDIA device variable starts with (e.g. APP_): the policy cannot read the ConfigMap or Secret"
    )


def privileged_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule privileged: no container may be privileged or add CAP_SYS_ADMIN (or ALL): "
        "the NVIDIA container toolkit gives such a container the GPUs its NVIDIA_VISIBLE_DEVICES names"
    )


def device_mounts_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule device mounts: no container may mount a volume under {DEVICE_LIST_ROOT} "
        "(the NVIDIA container toolkit takes a /dev/null mount there as a request for GPUs)"
    )


def node_name_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule nodeName: a pod may not set spec.nodeName (it would skip the scheduler "
        "and the GPU nodes' taints); select nodes with nodeSelector or affinity"
    )


def gpu_taints_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule GPU taints: a pod that requests no GPU may not tolerate a GPU node group's "
        "taint, nor every taint"
    )


def gpu_labels_message(team: TeamSettings) -> str:
    return (
        f"{message_prefix(team)}rule GPU labels: a pod that requests no GPU may not select GPU nodes (nodeSelector "
        "or required node affinity on a GPU node group's label); NotIn and DoesNotExist are allowed"
    )


def validations(team: TeamSettings, plans: Sequence[GroupPlan]) -> list[dict[str, str]]:
    groups = ", ".join(team.node_groups)
    rules = [
        (device_variables_expression(), device_variables_message(team)),
        (env_from_expression(), env_from_message(team)),
        (privileged_expression(), privileged_message(team)),
        (device_mounts_expression(), device_mounts_message(team)),
        (node_name_expression(), node_name_message(team)),
        (gpu_taints_expression(plans), gpu_taints_message(team)),
        (gpu_labels_expression(plans), gpu_labels_message(team)),
        (
            placement_expression(team),
            f"{placement_message(team)} ({groups}) with nodeSelector {NODE_GROUP_LABEL}: <group>, "
            f"or with a required node affinity In on {NODE_GROUP_LABEL} in every term",
        ),
        (
            tolerations_expression(foreign_taint_keys(team, plans)),
            f"{message_prefix(team)}a GPU pod may not tolerate every taint, nor taints of node groups other "
            f"than its own ({groups})",
        ),
    ]
    return [{"expression": e, "message": m, "reason": "Forbidden"} for e, m in rules]


def admission_policy(team: TeamSettings, plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The team's ValidatingAdmissionPolicy (``plans``: every GPU group of the cluster)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": object_name(team), "labels": team_labels(team)},
        "spec": {
            # An error evaluating the policy refuses the pod: the boundary fails closed.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        # CREATE only: a pod's node selector, affinity and nodeName cannot be
                        # loosened after it is created (k8s.io/kubernetes validation.go
                        # ValidatePodUpdate; a pod with scheduling gates may only narrow them,
                        # KEP-3838), nor its containers' env, and an UPDATE check would block
                        # removing the finalizers of pods admitted before the policy or a change
                        # of the team's groups (Jobs' job-tracking finalizer). Tolerations may be
                        # added by an update (ValidatePodUpdate), unchecked here: the node selector
                        # or affinity still keeps the pod on its groups.
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    },
                    {
                        # kubectl debug: an ephemeral container is added by an UPDATE of this
                        # subresource (its object is the whole pod); only the container rules
                        # apply (env, privileged, device mounts).
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": [f"pods/{EPHEMERAL}"],
                    },
                ]
            },
            # Evaluated once per request, read by the rules that differ for GPU pods.
            "variables": [{"name": "gpu", "expression": _gpu_request(gpu_resources(plans))}],
            "validations": validations(team, plans),
        },
    }


def admission_binding(team: TeamSettings) -> dict[str, Any]:
    """The binding of the team's policy to its namespace, denying what the policy refuses."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": object_name(team), "labels": team_labels(team)},
        "spec": {
            "policyName": object_name(team),
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": team.namespace_name},
                }
            },
        },
    }
