"""A team's admission policy, as plain dicts (no Pulumi): a ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) that keep every pod of the team's namespace
inside the team's boundary. The API server enforces it itself: no webhook, no controller.

It checks every pod created in the team's namespace (the binding's namespace selector, on the
``kubernetes.io/metadata.name`` label the API server sets on every namespace), and every ephemeral
container added to one (``kubectl debug``: an UPDATE of the ``pods/ephemeralcontainers``
subresource, whose object is the whole pod). Each rule is one validation with its own message,
which starts with ``team <name>:`` and names the rule:

* **device variables** (every pod, every container, init container and ephemeral container): no
  ``env`` entry named one of ``DEVICE_VARIABLES``, the variables the NVIDIA container toolkit reads
  to pick devices for a container (a GPU pod would get more GPUs than it was allocated; a pod
  without a GPU request would get GPUs no quota counts);
* **device variables from envFrom** (GPU pods): every ``envFrom`` has a ``prefix`` that no device
  variable starts with. CEL sees the reference (ConfigMap or Secret name, prefix), never the keys
  of the ConfigMap or Secret it names, which may change after admission: only a prefix proves that
  no imported name is a device variable. Pods that ask for no GPU are not held to it: the rules
  below keep them off GPU nodes, where the variable means nothing;
* **privileged** (every pod, every container, init container and ephemeral container): no
  ``securityContext.privileged: true``, no ``capabilities.add`` of ``SYS_ADMIN`` (any case, with or
  without ``CAP_``) or ``ALL``. The toolkit treats a container whose bounding set holds
  ``CAP_SYS_ADMIN`` as privileged and honours its ``NVIDIA_VISIBLE_DEVICES`` whatever the node's
  isolation (nvidia-container-toolkit v1.19.1 ``internal/config/image/privileged.go``
  ``IsPrivileged``, ``cuda_image.go`` ``VisibleDevices``): a sidecar of a GPU pod whose image sets
  ``all`` would see every GPU of the node. containerd adds ``CAP_<NAME>`` upper-cased for each
  entry and every capability for ``ALL`` or ``privileged`` (its CRI ``WithCapabilities``);
* **device mounts** (every pod, every kind of container): no ``volumeMounts`` entry whose
  ``mountPath`` contains ``nvidia-container-devices``. The toolkit takes a ``/dev/null`` mount whose
  cleaned destination starts with ``/var/run/nvidia-container-devices`` as a request for the device
  named by the rest of the path (``cuda_image.go`` ``requestsFromMounts``: a string prefix, so
  ``/var/run/nvidia-container-devicesall`` asks for ``all``), wherever volume mounts are accepted
  (every node since 0.3.0). Any path that cleans to such a destination holds that name, whatever the
  spelling of the ``/dev/null`` source (``/dev//null``, ``/dev/./null``): one rule on the
  destination covers them all. Only the device plugin mounts there (through the CRI, not the pod);
* **nodeName** (every pod, on create): ``spec.nodeName`` unset. A pod that names its node skips the
  scheduler, hence the GPU groups' ``NoSchedule`` taints (the kubelet admits a pod against its node
  selector, affinity and ``NoExecute`` taints only: k8s.io/kubernetes pkg/kubelet/lifecycle
  predicate.go);
* **GPU taints** (pods that ask for no GPU): no toleration of a GPU group's taint key
  (``gpu_taint_keys``), nor of every taint (an empty key with ``Exists``);
* **GPU labels** (pods that ask for no GPU): no ``nodeSelector`` entry, and no required node
  affinity expression (``In`` on a value of a GPU group, ``Exists``, ``Gt``, ``Lt``), on a label
  that GPU groups carry (``gpu_selectors``: their node labels, instance types and GPU-count
  labels). ``NotIn`` and ``DoesNotExist`` stay allowed: they keep a pod off GPU nodes;
* **placement** (GPU pods): the pod pins the team's groups: its ``nodeSelector`` names one of them
  under ``gpu-eks.io/node-group``, or every term of its required node affinity has an ``In``
  expression on that label whose values are all the team's groups (terms are ORed, so each must be
  pinned);
* **foreign taints** (GPU pods): no toleration of a taint only other groups carry, nor of every taint.

A *GPU pod* has a container or init container whose requests or limits name a GPU resource of the
cluster (every resource a group advertises, ``GroupPlan.advertised_resources``) at a quantity other
than 0 (the team's LimitRange writes 0 into containers that ask for none; the API server hands
admission the canonical form of a quantity, so zero is ``"0"``: k8s.io/apimachinery
pkg/api/resource Quantity MarshalJSON).

What it cannot see: pods of other namespaces (teams are namespaces); a node's labels (a node that
relabels itself ``gpu-eks.io/node-group`` of a team's group gets its pods); the environment of the
container *image* (most CUDA images set ``NVIDIA_VISIBLE_DEVICES=all``): only the node's toolkit
can ignore that one, and a pod that asks for no GPU never reaches a tainted GPU node to use it; the
keys of a ConfigMap or Secret imported by ``envFrom``; a GPU group without taints (its nodes take
any pod the scheduler sends them); GPUs requested through Dynamic Resource Allocation
(``resourceClaims``), which name no extended resource; preferred (not required) affinity, which it
ignores; ``pods/binding`` (the scheduler's subresource: Kubernetes' ``admin`` and ``edit`` roles, which
the team's namespace-scoped AmazonEKSAdminPolicy mirrors, grant no ``create`` on it:
k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go system:aggregate-to-edit).

Cost: each expression is linear in the pod's entries (containers x env entries x the 8 device
variables, tolerations, selector terms x expressions), far below the API server's runtime limit per
expression (k8s.io/apiserver pkg/apis/cel PerCallLimit, 1,000,000) for any pod a workload sends;
a pod large enough to exceed it fails the evaluation, and ``failurePolicy: Fail`` refuses it.

A DaemonSet's GPU pods must pin the team's groups with ``nodeSelector``: the DaemonSet controller
replaces every required node-affinity term of the pods it creates with one ``matchFields``
``metadata.name In [<node>]`` term (k8s.io/kubernetes pkg/controller/daemon/util/daemonset_util.go
ReplaceDaemonSetPodNodeNameNodeAffinity), which names no group, so a template pinned by affinity
alone gives pods the policy refuses. It sets no ``nodeName`` (DaemonSet pods go through the
scheduler since Kubernetes 1.17).

The expressions are evaluated in tests with a CEL implementation (tests/test_teams_policy.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..catalog.device_lists import DEVICE_LIST_ROOT
from ..catalog.labels import GPU_COUNT_LABELS, NODE_GROUP_LABEL
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
#: The label of a node's instance type (kubelet's well-known label, set on every node).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
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


#: What a container may not add (containerd upper-cases an entry and prefixes ``CAP_``; ``ALL``
#: adds every capability): RE2, as the API server's CEL ``matches`` reads it.
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
