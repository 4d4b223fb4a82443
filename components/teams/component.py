"""Teams: per team its Namespace, ResourceQuota, LimitRange, placement policy and binding (``objects``,
``policy``), and the EKS access entries of its principals (``access``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..blocks.iam import cluster_access_policy_arn, partition_of, principal_partition_problems
from ..blocks.jobs import await_annotations
from ..config.errors import CONFIG_NAMESPACE, ConfigError, Problem, deploy_time_error
from ..config.teams import TeamSettings
from ..plan.group import GroupPlan
from . import access, objects, policy, verification

TYPE_NAME = "gpu-eks:teams:Teams"


@dataclass
class TeamsArgs:
    teams: Sequence[TeamSettings]
    #: Every GPU group of the cluster (the policy's GPU resources and the taints of other groups).
    plans: Sequence[GroupPlan]
    cluster_name: pulumi.Input[str]
    #: The cluster's authentication mode when not known to allow access entries (an existing
    #: cluster's, looked up): checked before any entry is created. None: the cluster's is API.
    authentication_mode: pulumi.Input[str] | None = None
    #: Where the teams' check Jobs run (``verification``); None: no check.
    check: TeamsCheck | None = None


@dataclass
class TeamsCheck:
    #: The verification namespace (created by the verification component).
    namespace: k8s.core.v1.Namespace
    #: An image with python3 (``verification.probeImage``).
    image: str


class Teams(pulumi.ComponentResource):
    """The teams' namespaces and their objects (with the cluster's Kubernetes provider in
    ``providers=``), their principals' EKS access entries and, with ``check``, a check Job per team."""

    def __init__(self, name: str, args: TeamsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        self.namespaces: dict[str, k8s.core.v1.Namespace] = {}
        self.access_entries: dict[str, aws.eks.AccessEntry] = {}
        partition = partition_of(self) if any(t.principals for t in args.teams) else None
        # The check pods reach the API server through the verification namespace's deny-all.
        self._egress: list[pulumi.Resource] = []
        if args.check is not None:
            self._egress.append(
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-check-egress",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name="gpu-eks-team-check-api", namespace=args.check.namespace.metadata.name
                    ),
                    spec=verification.API_EGRESS_POLICY_SPEC,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        for i, team in enumerate(args.teams):
            prefix = f"{name}-{team.name}"
            ns = objects.namespace(team)
            namespace = k8s.core.v1.Namespace(
                f"{prefix}-ns", metadata=ns["metadata"], opts=pulumi.ResourceOptions(parent=self)
            )
            self.namespaces[team.name] = namespace
            in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
            # What the check proves: the namespace, its quota, LimitRange and policy binding.
            enforced: list[pulumi.Resource] = [namespace]
            quota = objects.resource_quota(team)
            if quota:
                enforced.append(
                    k8s.core.v1.ResourceQuota(
                        f"{prefix}-quota", metadata=quota["metadata"], spec=quota["spec"], opts=in_namespace
                    )
                )
            limits = objects.limit_range(team)
            if limits:
                enforced.append(
                    k8s.core.v1.LimitRange(
                        f"{prefix}-limits", metadata=limits["metadata"], spec=limits["spec"], opts=in_namespace
                    )
                )
            rule = policy.admission_policy(team, args.plans)
            vap = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{prefix}-policy",
                metadata=rule["metadata"],
                spec=rule["spec"],
                opts=pulumi.ResourceOptions(parent=self),
            )
            binding = policy.admission_binding(team)
            enforced.append(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    f"{prefix}-binding",
                    metadata=binding["metadata"],
                    spec=binding["spec"],
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[vap]),
                )
            )
            if args.check is not None:
                self._check(prefix, team, args.plans, args.check, enforced)
            if team.principals:
                bound = access.admin_role_binding(team)
                k8s.rbac.v1.RoleBinding(
                    f"{prefix}-admin",
                    metadata=bound["metadata"],
                    role_ref=bound["roleRef"],
                    subjects=bound["subjects"],
                    opts=in_namespace,
                )
            for k, (arn, key) in enumerate(access.principal_keys(team).items()):
                where = f"{CONFIG_NAMESPACE}:teams[{i}].principals[{k}]"
                self.access_entries[arn] = self._access(f"{prefix}-{key}", team, arn, where, args, partition)
        self.register_outputs({})

    def _check(
        self, prefix: str, team: TeamSettings, plans: Sequence[GroupPlan], check: TeamsCheck, after: list[Any]
    ) -> None:
        """The team's check Job (``verification``) with its ServiceAccount, Role and RoleBinding."""
        ns = check.namespace.metadata.name
        account = verification.service_account(team, ns)
        sa = k8s.core.v1.ServiceAccount(
            f"{prefix}-check",
            metadata=account["metadata"],
            automount_service_account_token=account["automountServiceAccountToken"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        rules = verification.role(team)
        role = k8s.rbac.v1.Role(
            f"{prefix}-check",
            metadata=rules["metadata"],
            rules=rules["rules"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=after[:1]),
        )
        bound = verification.role_binding(team, ns)
        role_binding = k8s.rbac.v1.RoleBinding(
            f"{prefix}-check",
            metadata=bound["metadata"],
            role_ref=bound["roleRef"],
            subjects=bound["subjects"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role, sa]),
        )
        spec = verification.job_spec(team, plans, check.image)
        k8s.batch.v1.Job(
            f"{prefix}-check",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=verification.check_name(team),
                namespace=ns,
                labels=dict(verification.CHECK_LABELS),
                annotations=await_annotations(verification.DEADLINE_SECONDS),
            ),
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*after, role_binding, *self._egress]),
        )

    def _access(
        self,
        name: str,
        team: TeamSettings,
        arn: str,
        where: str,
        args: TeamsArgs,
        partition: pulumi.Output[str] | None,
    ) -> aws.eks.AccessEntry:
        assert partition is not None
        # Checked when known, before EKS is asked: the principal's partition is the cluster's, and
        # the cluster takes access entries (an existing cluster's mode, looked up; GpuCluster's is API).
        principal = pulumi.Output.all(partition, args.authentication_mode).apply(
            lambda a: _checked(arn, where, a[0], a[1])
        )
        entry = aws.eks.AccessEntry(
            name,
            cluster_name=args.cluster_name,
            principal_arn=principal,
            type=access.ACCESS_ENTRY_TYPE,
            # Updated in place: an existing entry is kept (terraform-provider-aws
            # internal/service/eks/access_entry.go: kubernetes_groups is not ForceNew, Update calls
            # UpdateAccessEntry with them).
            kubernetes_groups=[access.team_group(team)],
            opts=pulumi.ResourceOptions(parent=self),
        )
        aws.eks.AccessPolicyAssociation(
            f"{name}-admin",
            cluster_name=entry.cluster_name,
            principal_arn=entry.principal_arn,
            policy_arn=partition.apply(lambda p: cluster_access_policy_arn(p, access.TEAM_ACCESS_POLICY)),
            access_scope=access.access_scope(team),
            # A new scope (the team's namespace changed) replaces the association, and EKS knows an
            # association by cluster, principal and policy only: created before the old one is
            # deleted, the new one would be removed by that delete (terraform-provider-aws
            # aws_eks_access_policy_association: every argument ForceNew, Delete is
            # DisassociateAccessPolicy(cluster, principal, policy)). So delete first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        return entry


def _checked(arn: str, where: str, partition: str, mode: str | None) -> str:
    """``arn`` once its partition is the cluster's and the cluster's authentication ``mode`` (None:
    API, the library's own cluster) takes access entries; else the deployment fails with its key."""
    problems = [Problem(where, arn, p.expected) for p in principal_partition_problems([arn], partition)]
    problem = access.authentication_mode_problem(mode or "API")
    if problem:
        problems.append(Problem(where, arn, problem))
    if problems:
        raise deploy_time_error(ConfigError(problems))
    return arn
