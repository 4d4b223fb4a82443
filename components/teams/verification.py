"""The teams' verification, as plain dicts (no Pulumi): per team a Job in the verification namespace
that asks the API server to create pods in the team's namespace with ``dryRun=All`` (every admission
step runs, nothing is stored) and fails unless

* a GPU pod pinned to the team's group is not refused by the team's policy (the control: the policy
  lets a pinned pod through; any other refusal passes it, the quota's or a missing ServiceAccount's,
  so it does not prove the Job's rights: the refusals below do, since a 403 from RBAC carries none
  of the expected messages);
* each rule of the policy refuses the pod that breaks it, and only it (issue 31 item 3): a GPU pod
  that does not select the team's groups ("placement"); a pod that sets ``NVIDIA_VISIBLE_DEVICES``
  ("device variables"); a pinned GPU pod importing a ConfigMap with ``envFrom`` without a prefix
  (dry run: the ConfigMap need not exist); a pod that names its node ("nodeName"); a pod that requests no GPU and
  tolerates the team's group's taints ("GPU taints") or selects its group ("GPU labels"); a pod that
  mounts an emptyDir under ``/var/run/nvidia-container-devices`` ("device mounts"); in a namespace
  whose Pod Security level is ``privileged``, a pod adding ``SYS_ADMIN`` ("privileged": at the other
  levels Pod Security admission refuses it first);
* with a quota, a pod pinned to the team's group asking for one more than the quota (over as few
  containers as ``maxPerContainer`` allows) is refused with "exceeded quota" (a dry run goes
  through the whole admission chain, quota included, without storing or charging anything:
  kubernetes/enhancements KEP-576 "Kubernetes Dry-run"; the quota admission checks a dry-run
  request like any other and skips only the update of the quota's usage, k8s.io/apiserver
  pkg/admission/plugin/resourcequota/controller.go checkQuotas, "Don't update quota for
  admissionAttributes that correspond to dry-run requests", after checkRequest's "exceeded
  quota"; ResourceQuota runs after the policy; not run against a cluster here).

Least RBAC: a ServiceAccount in the verification namespace, bound by a Role in the team's namespace
to ``create`` on ``pods`` and nothing else (a dry run needs the verb of the real request); no read
access. A NetworkPolicy lets the check pods reach the API server (TCP 443), the verification
namespace's deny-all keeps everything else. Every pod meets the restricted Pod Security Standard
(``blocks.podsecurity``); the Job's pod mounts its token, the probe pods do not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from ..blocks.podsecurity import restricted_pod_spec
from ..catalog.device_lists import DEVICE_LIST_ROOT
from ..catalog.labels import NODE_GROUP_LABEL
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from . import policy
from .objects import team_labels

#: The label of the check pods (the NetworkPolicy that lets them reach the API server selects it).
CHECK_LABELS = {"app.kubernetes.io/managed-by": "gpu-eks", "app.kubernetes.io/component": "team-check"}
#: How long the Job may take: the policy reaches the API server's admission within seconds of its
#: creation; the script retries for up to RETRY_SECONDS.
DEADLINE_SECONDS = 300
RETRY_SECONDS = 180
#: Above this many containers (quota + 1 over maxPerContainer each) the over-quota pod is not tried.
MAX_PROBE_CONTAINERS = 20

SCRIPT = """
import json, os, ssl, sys, time, urllib.error, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
url = "https://%s:%s/api/v1/namespaces/%s/pods?dryRun=All" % (
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"], os.environ["TEAM_NAMESPACE"])
token = open(sa + "/token").read()
ctx = ssl.create_default_context(cafile=sa + "/ca.crt")

def create(pod):
    req = urllib.request.Request(url, data=json.dumps(pod).encode(), method="POST", headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, context=ctx, timeout=30)
        return 201, ""
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

failed = False
for case in json.loads(os.environ["CASES"]):
    end = time.time() + int(os.environ["RETRY_SECONDS"])
    while True:
        code, body = create(case["pod"])
        refused = code in (403, 422) and case["refusedWith"] and case["refusedWith"] in body
        ok = refused if case["refusedWith"] else (code == 201 or case["notRefusedWith"] not in body)
        if ok or time.time() > end:
            break
        time.sleep(5)
    print(("OK  " if ok else "FAIL") + " %s: HTTP %s %s" % (case["name"], code, body[:400]), flush=True)
    failed = failed or not ok
sys.exit(1 if failed else 0)
"""


def check_name(team: TeamSettings) -> str:
    return f"gpu-eks-team-check-{team.name}"


def service_account(team: TeamSettings, namespace: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": check_name(team), "namespace": namespace, "labels": team_labels(team)},
        "automountServiceAccountToken": False,
    }


def role(team: TeamSettings) -> dict[str, Any]:
    """The only right of the check: create (dry-run) pods in the team's namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": check_name(team), "namespace": team.namespace_name, "labels": team_labels(team)},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}],
    }


def role_binding(team: TeamSettings, namespace: Any) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": check_name(team), "namespace": team.namespace_name, "labels": team_labels(team)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": check_name(team)},
        "subjects": [{"kind": "ServiceAccount", "name": check_name(team), "namespace": namespace}],
    }


#: Egress to the API server for the check pods only (TCP 443; its address is the cluster's, not known here).
API_EGRESS_POLICY_SPEC: dict[str, Any] = {
    "podSelector": {"matchLabels": CHECK_LABELS},
    "policyTypes": ["Egress"],
    "egress": [{"ports": [{"protocol": "TCP", "port": 443}]}],
}


def _probe(
    team: TeamSettings,
    name: str,
    image: str,
    limits: Sequence[dict[str, int]],
    target: GroupPlan | None,
    **spec_fields: Any,
) -> dict[str, Any]:
    """A probe pod: one container per entry of ``limits``, pinned to ``target`` (its node selector and
    tolerations) when given, with ``spec_fields`` (``env`` and ``envFrom`` go to the first container)."""
    first = {k: spec_fields.pop(k) for k in ("env", "envFrom", "volumeMounts") if k in spec_fields}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": f"c{i}",
                "image": image,
                "command": ["sleep", "1"],
                **({"resources": {"limits": dict(lim)}} if lim else {}),
                **(first if i == 0 else {}),
            }
            for i, lim in enumerate(limits)
        ],
    }
    if target is not None:
        spec["nodeSelector"] = {NODE_GROUP_LABEL: target.name}
        spec["tolerations"] = [dict(t) for t in target.tolerations]
    spec.update(spec_fields)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{check_name(team)}-{name}",
            "namespace": team.namespace_name,
            "labels": dict(CHECK_LABELS),
        },
        "spec": restricted_pod_spec(spec),
    }


#: A node name for the nodeName probe: a dry run never binds, so no such node need exist.
PROBE_NODE = "gpu-eks-team-check.invalid"


#: Where the device-mount probe mounts its emptyDir (the device plugin's root, asking for every GPU).
DEVICE_ROOT_MOUNT = {"name": "device-root", "mountPath": f"{DEVICE_LIST_ROOT}/all"}


def _refused(name: str, pod: dict[str, Any], message: str) -> dict[str, Any]:
    """A case the policy must refuse, recognised by the start of the rule's message."""
    return {"name": name, "pod": pod, "refusedWith": message, "notRefusedWith": ""}


def cases(team: TeamSettings, plans: Sequence[GroupPlan], image: str) -> list[dict[str, Any]]:
    """The pods the check asks for, each with the refusal it expects (or the one it must not get).
    Each refused pod breaks one rule only: the API server names the first failed validation."""
    mine = [p for p in plans if p.name in team.node_groups]
    foreign = next((p for p in plans if p.name not in team.node_groups), None)
    home = mine[0]
    resource = sorted(home.advertised_resources)[0]
    # The group's own tolerations, or one of every taint for a group without taints: both are refused.
    tolerations = [dict(t) for t in home.tolerations] or [{"operator": "Exists"}]
    out = [
        {
            "name": "admitted",
            "pod": _probe(team, "admitted", image, [{resource: 1}], home),
            "refusedWith": "",
            "notRefusedWith": policy.message_prefix(team).strip(),
        },
        _refused(
            "outside-groups",
            _probe(team, "outside", image, [{resource: 1}], foreign),
            policy.placement_message(team),
        ),
        _refused(
            "device-variable",
            _probe(
                team, "device-variable", image, [{}], None, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
            ),
            _rule(policy.device_variables_message(team)),
        ),
        _refused(
            "env-from",
            _probe(
                team, "env-from", image, [{resource: 1}], home, envFrom=[{"configMapRef": {"name": check_name(team)}}]
            ),
            _rule(policy.env_from_message(team)),
        ),
        _refused(
            "node-name",
            _probe(team, "node-name", image, [{}], None, nodeName=PROBE_NODE),
            _rule(policy.node_name_message(team)),
        ),
        _refused(
            "gpu-taints",
            _probe(team, "gpu-taints", image, [{}], None, tolerations=tolerations),
            _rule(policy.gpu_taints_message(team)),
        ),
        _refused(
            "gpu-labels",
            _probe(team, "gpu-labels", image, [{}], None, nodeSelector={NODE_GROUP_LABEL: home.name}),
            _rule(policy.gpu_labels_message(team)),
        ),
    ]
    # An emptyDir at the device root: every Pod Security level admits it, only the policy refuses it.
    mount = _probe(team, "device-mounts", image, [{}], None, volumeMounts=[DEVICE_ROOT_MOUNT])
    mount["spec"]["volumes"].append({"name": DEVICE_ROOT_MOUNT["name"], "emptyDir": {}})
    out.append(_refused("device-mounts", mount, _rule(policy.device_mounts_message(team))))
    if team.pod_security == "privileged":
        # Elsewhere Pod Security admission refuses an added capability first (it runs before the policy).
        sysadmin = _probe(team, "privileged", image, [{}], None)
        sysadmin["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["SYS_ADMIN"]
        out.append(_refused("privileged", sysadmin, _rule(policy.privileged_message(team))))
    quota_resource = next((r for r in sorted(team.quota) if any(r in p.advertised_resources for p in mine)), None)
    if quota_resource is not None:
        over = team.quota[quota_resource] + 1
        per_container = team.max_per_container.get(quota_resource, over)
        count = math.ceil(over / per_container)
        if count <= MAX_PROBE_CONTAINERS:
            limits = [{quota_resource: min(per_container, over - i * per_container)} for i in range(count)]
            group = next(p for p in mine if quota_resource in p.advertised_resources)
            out.append(_refused("over-quota", _probe(team, "over-quota", image, limits, group), "exceeded quota"))
    return out


def _rule(message: str) -> str:
    """The start of a rule's message, up to the rule's name and its colon (plain characters)."""
    prefix, _, rest = message.partition(" rule ")
    return f"{prefix} rule {rest.split(':')[0]}:"


def job_spec(team: TeamSettings, plans: Sequence[GroupPlan], image: str) -> dict[str, Any]:
    """The team's check Job: one pod running ``SCRIPT`` with the team's cases."""
    pod = restricted_pod_spec(
        {
            "restartPolicy": "Never",
            "serviceAccountName": check_name(team),
            "containers": [
                {
                    "name": "check",
                    "image": image,
                    "command": ["python3", "-c", SCRIPT],
                    "env": [
                        {"name": "TEAM_NAMESPACE", "value": team.namespace_name},
                        {"name": "RETRY_SECONDS", "value": str(RETRY_SECONDS)},
                        {"name": "CASES", "value": json.dumps(cases(team, plans, image), sort_keys=True)},
                    ],
                }
            ],
        }
    )
    # The check talks to the API server with its own token (and nothing else: its Role).
    pod["automountServiceAccountToken"] = True
    return {
        "backoffLimit": 0,
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        "template": {"metadata": {"labels": dict(CHECK_LABELS)}, "spec": pod},
    }
