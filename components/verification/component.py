"""GpuVerification: the namespace and, per GPU node group, the Jobs of ``jobs.py`` (two; three
for an exclusive group); none for a group whose nodes cannot launch by design (a Capacity Block:
config/verification.py). Named ``TimeSlicingVerification`` until issue 43 (item 7): ``OLD_NAMES``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..blocks.coverage import DeclaredGroup
from ..blocks.jobs import await_annotations
from ..blocks.podsecurity import DENY_ALL_NETWORK_POLICY_SPEC, NAMESPACE_LABELS
from ..catalog.efa import nccl_bus_bandwidth_floor_gbytes
from ..config import verification as verification_rules
from ..config.addons import VerificationSettings
from ..config.isolation import ISOLATIONS, NOT_ENFORCED
from ..plan.group import GroupPlan
from .jobs import (
    concurrent_job_spec,
    exclusive_job_spec,
    image_for,
    isolation_job_name,
    isolation_job_spec,
    job_name,
    warmup_job_spec,
)
from .mig import mig_job_specs
from .nccl import nccl_job_spec, nccl_name, nccl_network_policy_spec, nccl_service_spec

#: The type token keeps the class's first name: it is part of the URN of the component and of each
#: of its children (the namespace, the NetworkPolicies, every Job), so a new token would have Pulumi
#: replace them all on every stack, or carry an alias for good; renders and URNs stay as they were.
TYPE_NAME = "gpu-eks:verification:TimeSlicingVerification"

#: The classes' names until issue 43 (item 7), when the Jobs checked time-slicing alone; they verify
#: every sharing mode, MIG, isolation, the teams' policies and NCCL. Importable until 1.0, with a
#: DeprecationWarning (UPGRADING.md).
OLD_NAMES: dict[str, str] = {
    "TimeSlicingVerification": "GpuVerification",
    "TimeSlicingVerificationArgs": "GpuVerificationArgs",
}


@dataclass
class GpuVerificationArgs:
    settings: VerificationSettings
    #: The GPU node groups to verify (two Jobs each, three for exclusive groups); the Jobs also
    #: wait for them.
    gpu_node_groups: Sequence[DeclaredGroup]
    #: Resources to finish first besides the groups: the operator release and, when groups start
    #: at zero, the Cluster Autoscaler. (A component's `depends_on` does not reach its children,
    #: so this is an explicit argument.)
    wait_for: Sequence[pulumi.Resource] = ()
    #: A Cluster Autoscaler scales the groups: a group at desiredSize 0 is verified too (its
    #: warm-up Job is what brings its first node).
    autoscaling: bool = False


class GpuVerification(pulumi.ComponentResource):
    """A namespace and, per GPU node group, a warm-up Job and a concurrency Job (and, for an
    exclusive group, a one-pod-per-GPU Job).

    Pass the cluster's Kubernetes provider with ``providers=``, and the operator (and the
    autoscaler) as ``wait_for``.
    """

    def __init__(self, name: str, args: GpuVerificationArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.settings.namespace,
                labels=dict(NAMESPACE_LABELS),
            ),
            # The Jobs depend on the namespace through `namespace=`, hence on `wait_for`.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.wait_for, *args.gpu_node_groups]),
        )
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-deny-all",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="deny-all", namespace=self.namespace.metadata.name),
            spec=DENY_ALL_NETWORK_POLICY_SPEC,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.warmup_jobs: dict[str, k8s.batch.v1.Job] = {}
        self.jobs: dict[str, k8s.batch.v1.Job] = {}
        #: Per exclusive group the one-pod-per-GPU Job (jobs.exclusive_job_spec), after the group's
        #: concurrent Job. (On MPS groups the concurrent Job's pods prove the memory limit.)
        self.mode_jobs: dict[str, k8s.batch.v1.Job] = {}
        #: Per MIG group its Jobs, one per advertised resource (mig.mig_job_specs), instead of the
        #: concurrent Job (``jobs`` holds the first).
        self.mig_jobs: dict[str, list[k8s.batch.v1.Job]] = {}
        #: Per group the isolation Job (jobs.isolation_job_spec), after its warm-up.
        self.isolation_jobs: dict[str, k8s.batch.v1.Job] = {}
        #: Per group whose Jobs cannot run by design, why none targets it (config/verification.py).
        self.skipped: dict[str, str] = {}
        for plan in (g.plan for g in args.gpu_node_groups):
            skipped = verification_rules.skipped_reason(plan.settings, args.settings)
            if skipped is not None:
                self.skipped[plan.name] = skipped
                pulumi.log.info(f"GPU node group {plan.name!r}: not verified: {skipped}", resource=self)
                continue
            # Karpenter launches a group's first node for the warm-up Jobs' pending pods.
            launched = args.autoscaling or plan.provider.node_pool
            if plan.settings.scaling.desired_size < 1 and not launched:
                # Nothing would ever bring a node; waiting would only time out.
                pulumi.log.warn(
                    f"GPU node group {plan.name!r} has desiredSize 0 and no autoscaler: not verified", resource=self
                )
                continue
            image = image_for(plan, args.settings.image, args.settings.image_arm64)
            warmup = warmup_job_spec(plan, image)
            self.warmup_jobs[plan.name] = k8s.batch.v1.Job(
                f"{name}-{plan.name}-warmup",
                metadata=_job_metadata(job_name("ts-warmup", plan, warmup), self.namespace, warmup),
                spec=warmup,
                opts=pulumi.ResourceOptions(parent=self),
            )
            if ISOLATIONS[plan.isolation].enforced:
                isolation = isolation_job_spec(plan, image)
                self.isolation_jobs[plan.name] = k8s.batch.v1.Job(
                    f"{name}-{plan.name}-isolation",
                    metadata=_job_metadata(isolation_job_name(plan, isolation), self.namespace, isolation),
                    spec=isolation,
                    # On the node the warm-up brought: it requests no GPU, so it brings no node itself.
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.warmup_jobs[plan.name]]),
                )
            else:
                # Under `migrating` a pod without a GPU request sees the GPUs (config/isolation.py):
                # the check would fail by design, so it is not run; the outputs say so.
                pulumi.log.info(
                    f"GPU node group {plan.name!r}: isolation {NOT_ENFORCED}; the isolation Job is skipped",
                    resource=self,
                )
            if plan.sharing_mode == "mig":
                # One Job per advertised resource, every pod of them on one node at once (mig.py).
                mig_jobs = [
                    k8s.batch.v1.Job(
                        f"{name}-{plan.name}-{resource.rsplit('/', 1)[1]}",
                        metadata=_job_metadata(job_name("mig-check", plan, spec), self.namespace, spec),
                        spec=spec,
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[self.warmup_jobs[plan.name]]),
                    )
                    for resource, spec in mig_job_specs(plan, args.settings.probe_image).items()
                ]
                self.mig_jobs[plan.name] = mig_jobs
                self.jobs[plan.name] = mig_jobs[0]
                continue
            concurrent = concurrent_job_spec(plan, image, args.settings.probe_image)
            self.jobs[plan.name] = k8s.batch.v1.Job(
                f"{name}-{plan.name}-concurrent",
                metadata=_job_metadata(job_name("ts-check", plan, concurrent), self.namespace, concurrent),
                spec=concurrent,
                # Starts on the node the warm-up brought, so its short deadline covers no boot.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.warmup_jobs[plan.name]]),
            )
            if plan.sharing_mode == "exclusive":
                spec = exclusive_job_spec(plan, args.settings.probe_image)
                self.mode_jobs[plan.name] = k8s.batch.v1.Job(
                    f"{name}-{plan.name}-exclusive",
                    metadata=_job_metadata(job_name("exclusive", plan, spec), self.namespace, spec),
                    spec=spec,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.jobs[plan.name]]),
                )
        #: Per exclusive EFA group with ``ncclAllReduce``, its two-node NCCL Job (nccl.py).
        self.nccl_jobs: dict[str, k8s.batch.v1.Job] = {}
        #: Their bus bandwidth floors in GB/s (catalog.efa).
        self.nccl_floors: dict[str, float] = {}
        # verification.ncclAdvisory: pulumi up does not wait for the NCCL Jobs (config/verification.py).
        self._nccl_advisory = args.settings.nccl_advisory
        if args.settings.nccl_all_reduce and args.settings.nccl_image:
            for group in args.gpu_node_groups:
                self._declare_nccl(name, group.plan, args.settings.nccl_image)
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "jobs": {g: j.metadata.name for g, j in self.jobs.items()},
                # Only with ncclAllReduce (the outputs stay as they were without it).
                **(
                    {
                        "ncclJobs": {g: j.metadata.name for g, j in self.nccl_jobs.items()},
                        "ncclFloorsGBps": dict(self.nccl_floors),
                    }
                    if self.nccl_jobs
                    else {}
                ),
                # Only where a group's Jobs cannot run by design (issue 41).
                **({"skipped": dict(self.skipped)} if self.skipped else {}),
            }
        )

    def stack_outputs(self) -> dict[str, Any]:
        """The stack outputs' ``verification`` (nothing when every group's Jobs run and hold the update):
        ``skipped`` (group: why no Job targets it) and ``ncclAdvisory`` (the groups whose NCCL Job
        ``pulumi up`` does not wait for), of every group the verification covers."""
        out: dict[str, Any] = {}
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self._nccl_advisory and self.nccl_jobs:
            out["ncclAdvisory"] = list(self.nccl_jobs)
        return {"verification": out} if out else {}

    def _declare_nccl(self, name: str, plan: GroupPlan, image: str) -> None:
        """The group's NCCL check (nccl.py): a headless Service, the pods' NetworkPolicy, the Job."""
        # Exclusive EFA groups the verification reaches (a group nothing scales up is skipped above).
        if not verification_rules.is_nccl_group(plan.settings) or plan.name not in self.warmup_jobs:
            return
        self.nccl_floors[plan.name] = nccl_bus_bandwidth_floor_gbytes(plan.instance_types[0])
        job = nccl_name(plan, image)
        opts = pulumi.ResourceOptions(parent=self)
        metadata = k8s.meta.v1.ObjectMetaArgs(name=job, namespace=self.namespace.metadata.name)
        service = k8s.core.v1.Service(
            f"{name}-{plan.name}-nccl", metadata=metadata, spec=nccl_service_spec(job), opts=opts
        )
        policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-{plan.name}-nccl", metadata=metadata, spec=nccl_network_policy_spec(job), opts=opts
        )
        spec = nccl_job_spec(plan, image, job)
        after = [service, policy, *([self.warmup_jobs[plan.name]] if plan.name in self.warmup_jobs else [])]
        metadata = _job_metadata(job, self.namespace, spec, skip_await=self._nccl_advisory)
        self.nccl_jobs[plan.name] = k8s.batch.v1.Job(
            f"{name}-{plan.name}-nccl",
            metadata=metadata,
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )


def _job_metadata(
    name: str, namespace: k8s.core.v1.Namespace, spec: dict[str, Any], skip_await: bool = False
) -> k8s.meta.v1.ObjectMetaArgs:
    annotations = await_annotations(spec["activeDeadlineSeconds"], skip_await)
    return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace.metadata.name, annotations=annotations)


def old_name(name: str, stacklevel: int = 1) -> Any:
    """The class ``name`` of ``OLD_NAMES`` is now, with a DeprecationWarning on the line ``stacklevel``
    frames above the caller (as ``warnings.warn`` counts them: 1 is the caller's own line)."""
    new = OLD_NAMES[name]
    warnings.warn(
        f"{name} is {new} now (it verifies every sharing mode, MIG, isolation and NCCL); the old name goes in 1.0 "
        "(UPGRADING.md)",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return globals()[new]


def __getattr__(name: str) -> Any:
    if name in OLD_NAMES:
        return old_name(name, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
