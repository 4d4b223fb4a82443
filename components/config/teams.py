"""Teams on the shared GPUs: a namespace per team, GPU quotas, per-container defaults and maxima, the
node groups the team may use and the IAM principals that administer its namespace. The rules across
teams and the groups' plans are ``check/teams.py``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from .errors import KeyedProblem, KeyedProblems
from .fields import RESERVED_NAMESPACES, Count, NamespaceName, PrincipalArn, ResourceName, _Model, _unique, doc

#: Pod Security Standards levels (Kubernetes docs, "Pod Security Admission": the label
#: ``pod-security.kubernetes.io/<mode>: privileged | baseline | restricted``).
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]

#: Namespaces the library creates or uses besides the settings' own (``gpuOperator.namespace``,
#: ``verification.namespace``, ``observability.namespace``): the CloudWatch add-on's
#: (observability/values.py CLOUDWATCH_NAMESPACE; repeated here, config/ imports no component).
LIBRARY_FIXED_NAMESPACES = ("amazon-cloudwatch",)


def _non_empty_groups(groups: list[str]) -> list[str]:
    if not groups:
        raise ValueError("at least one GPU node group name (a team's GPU pods must land somewhere)")
    return groups


class TeamSettings(_Model):
    """One team: its namespace, GPU quota, defaults, node groups and principals."""

    model_config = ConfigDict(title="TeamSettings")

    name: ResourceName = Field(
        **doc(
            "The team's name (1–40 lower-case alphanumerics or `-`): names its objects (`gpu-eks-team-<name>`). "
            "Changing it replaces them.",
            type="string",
            default="required",
        )
    )
    namespace: NamespaceName | None = Field(
        None,
        **doc(
            "The team's namespace, created by the library (a DNS label); one team per namespace, not one the "
            "library uses (`gpuOperator.namespace`, `verification.namespace`, `observability.namespace`, "
            "`amazon-cloudwatch`) nor one Kubernetes creates (`default`, `kube-system`, `kube-public`, "
            "`kube-node-lease`).",
            type="string",
            default="the team's `name`",
        ),
    )
    pod_security: PodSecurityLevel = Field(
        "baseline",
        **doc(
            "The namespace's Pod Security Standard, enforced (and warned and audited) by the API server's Pod "
            "Security admission: `privileged`, `baseline` or `restricted`. `baseline` by default: most CUDA images "
            "run as root, which `restricted` refuses.",
            type="`privileged` | `baseline` | `restricted`",
            default="`baseline`",
        ),
    )
    quota: dict[str, Annotated[Count, Field(ge=0)]] = Field(
        {},
        **doc(
            "GPU quota of the namespace per extended resource (`nvidia.com/gpu`, `nvidia.com/gpu.shared`, MIG "
            "resources, `vpc.amazonaws.com/efa` of EFA groups): the sum of the requests of the namespace's pods (a "
            "ResourceQuota `requests.<resource>`). Each resource must be one a node group of the team advertises "
            "(`gpuNodeGroups` stack output `resourceName`). Above the slots the team's groups have at their "
            "maxSize is a warning. A resource left out is not limited.",
            type="map of resource name: int ≥ 0",
            default="`{}` (no quota)",
        ),
    )
    default_per_container: dict[str, Annotated[Count, Field(ge=0)]] = Field(
        {},
        **doc(
            "GPU request (= limit) the LimitRange gives each container of the namespace that asks for none of "
            "the resource, per resource. Every container gets it, sidecars and init containers included: set it "
            "only where the namespace runs GPU pods alone. Each resource as for `quota`.",
            type="map of resource name: int ≥ 0",
            default="`{}` (none)",
        ),
    )
    max_per_container: dict[str, Annotated[Count, Field(ge=1)]] = Field(
        {},
        **doc(
            "Most of a resource one container may request (a LimitRange `max`). A container that asks for none "
            "gets `defaultPerContainer` or 0 (written out: the API server would otherwise default it to the max, "
            "giving every container GPUs). Each resource as for `quota`; at least `defaultPerContainer`.",
            type="map of resource name: int ≥ 1",
            default="`{}` (no maximum)",
        ),
    )
    node_groups: Annotated[list[str], AfterValidator(_non_empty_groups), AfterValidator(_unique)] = Field(
        **doc(
            "Names of the `gpuNodeGroups` the team's GPU pods may run on (each once): a ValidatingAdmissionPolicy "
            "refuses the namespace's GPU pods that do not select them by `gpu-eks.io/node-group`.",
            type="list of group names",
            default="required",
        )
    )
    principals: Annotated[list[PrincipalArn], AfterValidator(_unique)] = Field(
        [],
        **doc(
            "IAM roles or users that administer the namespace: an EKS access entry each, with "
            "`AmazonEKSAdminPolicy` scoped to the namespace (Kubernetes `admin` there: no quota, LimitRange or "
            "namespace changes). The rules of `adminPrincipalArns`; a principal in one team only, and not an "
            "`adminPrincipalArns` one (EKS keeps one access entry per principal).",
            type="list of IAM role/user ARNs",
            default="`[]`",
        ),
    )

    @property
    def namespace_name(self) -> str:
        """The namespace: ``namespace``, or the team's name."""
        return self.namespace or self.name

    @property
    def limited_resources(self) -> tuple[str, ...]:
        """The resources of the LimitRange (with a default or a maximum), sorted."""
        return tuple(sorted({*self.default_per_container, *self.max_per_container}))

    @model_validator(mode="after")
    def _default_within_max(self) -> TeamSettings:
        # Kubernetes ValidateLimitRange (pkg/apis/core/validation/validation.go, v1.35): "default value
        # %s is greater than max value %s" for a default above the max.
        problems: list[KeyedProblem] = [
            (("defaultPerContainer", resource), value, f"at most maxPerContainer.{resource} ({top})")
            for resource, value in self.default_per_container.items()
            if (top := self.max_per_container.get(resource)) is not None and value > top
        ]
        if problems:
            raise KeyedProblems(problems)
        return self


def own_namespaces(operator: str, verification: str, observability: str | None) -> tuple[str, ...]:
    """The namespaces no team may take: Kubernetes' own and the library's."""
    extra = (observability,) if observability else ()
    return (*RESERVED_NAMESPACES, operator, verification, *LIBRARY_FIXED_NAMESPACES, *extra)
