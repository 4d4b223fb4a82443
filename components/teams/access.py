"""A team's EKS access entries, as plain facts (no Pulumi): one STANDARD access entry per principal, in
the team's Kubernetes group, with one access-policy association scoped to the team's namespace; and
the RoleBinding of that group to the ``admin`` ClusterRole in the namespace.

Why both. The access policy alone lets a team's principals run workloads, Roles included, but not
create a RoleBinding: the API server's RBAC storage admits a binding only for a user who may ``bind``
its role or already holds every permission in it as RBAC sees them
(k8s.io/kubernetes pkg/registry/rbac/rolebinding/policybased/storage.go, ``ConfirmNoEscalation`` with
the RBAC rule resolver), and ``AmazonEKSAdminPolicy`` grants no ``bind`` while EKS's authorizer is
not RBAC (aws/containers-roadmap#2682). The group's RoleBinding puts ``admin`` in RBAC itself, so a
team can grant its own ServiceAccounts what ``admin`` holds in its namespace, and no more.

botocore ``eks`` 2017-11-01 (tests/test_teams_objects.py checks every value against the model):
CreateAccessEntryRequest ``type`` STANDARD (the default; EC2_LINUX and the like are for nodes);
AssociateAccessPolicyRequest ``accessScope`` (AccessScope: ``type`` of AccessScopeType ``cluster`` |
``namespace``, ``namespaces`` a list of strings). The policy is ``AmazonEKSAdminPolicy``: with a
namespace scope EKS grants the Kubernetes ``admin`` ClusterRole in those namespaces only (EKS User
Guide, "Review access policy permissions"), which "does not allow write access to resource quota or
to the namespace itself" (Kubernetes docs, "Using RBAC Authorization", user-facing roles; LimitRanges
are among its read-only resources, k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy
policy.go), so a team cannot lift its own quota or Pod Security level.
"""

from __future__ import annotations

from typing import Any

from ..blocks.iam import access_entry_keys
from ..config.teams import TeamSettings

#: The access policy of a team's principals (see the module docstring).
TEAM_ACCESS_POLICY = "AmazonEKSAdminPolicy"
ACCESS_ENTRY_TYPE = "STANDARD"
#: EKS cluster authentication modes (botocore eks AuthenticationMode): access entries need the API.
ACCESS_ENTRY_MODES = ("API", "API_AND_CONFIG_MAP")


#: The ClusterRole a team's group is bound to in its namespace (a Kubernetes user-facing role).
TEAM_CLUSTER_ROLE = "admin"


def team_group(team: TeamSettings) -> str:
    """The Kubernetes group of the team's principals (their access entries' ``kubernetesGroups``)."""
    return f"gpu-eks-team-{team.name}"


def admin_role_binding(team: TeamSettings) -> dict[str, Any]:
    """The RoleBinding of the team's group to ``admin`` in its namespace (see the module docstring)."""
    return {
        "metadata": {"name": f"gpu-eks-team-{team.name}-admin", "namespace": team.namespace_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TEAM_CLUSTER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team_group(team)}],
    }


def access_scope(team: TeamSettings) -> dict[str, Any]:
    """``accessScope`` of the team's policy association: its namespace only."""
    return {"type": "namespace", "namespaces": [team.namespace_name]}


def principal_keys(team: TeamSettings) -> dict[str, str]:
    """A stable key per principal of ``team`` (``cluster.iam.access_entry_keys``: ``role-<name>``),
    which names its resources: reordering the list renames nothing."""
    return access_entry_keys(team.principals)


def authentication_mode_problem(mode: str | None) -> str | None:
    """Why a cluster of authentication ``mode`` cannot take access entries, or None. EKS refuses
    CreateAccessEntry on a ``CONFIG_MAP`` cluster (EKS User Guide, "Grant IAM users access to
    Kubernetes with EKS access entries": the cluster's authentication mode must include the API)."""
    if mode in ACCESS_ENTRY_MODES:
        return None
    return (
        f"an EKS cluster whose authentication mode is {' or '.join(ACCESS_ENTRY_MODES)} for teams[].principals (access "
        f"entries): the cluster's is {mode}; change it (aws eks update-cluster-config --access-config "
        "authenticationMode=API_AND_CONFIG_MAP) or leave principals out"
    )
