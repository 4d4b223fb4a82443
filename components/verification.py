"""Optional time-slicing verification: a Deployment that only becomes ready when one GPU node
really advertises (physical GPUs x replicas) of the shared GPU resource.

Pulumi waits for a Deployment to become available, so `pulumi up` fails (after the await
timeout) if the device plugin did not pick up the sharing profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from . import nodeconfig, placement
from .nodegroup import GpuNodeGroup
from .settings import GpuNodeGroupSettings, VerificationSettings

TYPE_NAME = "gpu-eks:verification:TimeSlicingVerification"

#: Run NVIDIA's vectorAdd sample in a loop, so the pod stays Running while it keeps proving
#: that CUDA works on its share of the GPU; a failing run restarts the container.
VECTOR_ADD_LOOP = "while true; do /cuda-samples/vectorAdd || exit 1; sleep 60; done"
#: Wait this long for the Deployment (GPU node boot + operator + image pulls).
AWAIT_TIMEOUT_SECONDS = 1200


def verification_deployment_spec(group: GpuNodeGroupSettings, image: str, app_label: str) -> dict[str, Any]:
    """The Deployment spec (pure data, validated with kubernetes-validate in tests).

    replicas = physical GPUs x time-slicing replicas of ONE node, and a required pod affinity to
    the Deployment's own pods on the same host packs them on one node: so availability proves
    that a single node advertises the full sliced capacity.
    """
    labels = {"app.kubernetes.io/name": app_label}
    return {
        "replicas": group.advertised_gpus_per_node,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "nodeSelector": nodeconfig.gpu_node_labels(group),
                "tolerations": placement.tolerations_for(group.taint_list),
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": labels},
                                "topologyKey": "kubernetes.io/hostname",
                            }
                        ]
                    }
                },
                "containers": [
                    {
                        "name": "vectoradd",
                        "image": image,
                        "command": ["/bin/sh", "-c"],
                        "args": [VECTOR_ADD_LOOP],
                        "resources": {"limits": {group.time_slicing.resource_name: 1}},
                        "securityContext": {"allowPrivilegeEscalation": False},
                    }
                ],
                "terminationGracePeriodSeconds": 5,
            },
        },
    }


@dataclass
class TimeSlicingVerificationArgs:
    settings: VerificationSettings
    #: The GPU node groups to verify (one Deployment each, unless scaled to zero); the Deployments
    #: also wait for them.
    gpu_node_groups: Sequence[GpuNodeGroup]
    #: Resources to finish first besides the groups: the operator. (A component's `depends_on`
    #: does not reach its children, so this is an explicit argument.)
    wait_for: Sequence[pulumi.Resource] = ()


class TimeSlicingVerification(pulumi.ComponentResource):
    """A namespace and one verification Deployment per GPU node group with nodes.

    Pass the cluster's Kubernetes provider with ``providers=``, and the operator as ``wait_for``.
    """

    def __init__(self, name: str, args: TimeSlicingVerificationArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE_NAME, name, None, opts)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.settings.namespace,
                labels={"pod-security.kubernetes.io/enforce": "baseline"},
            ),
            # The Deployments depend on the namespace through `namespace=`, hence on `wait_for`.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.wait_for, *args.gpu_node_groups]),
        )
        self.deployments: dict[str, k8s.apps.v1.Deployment] = {}
        for group in (g.settings for g in args.gpu_node_groups):
            if group.scaling.desired_size < 1:
                # Nothing to verify on a group scaled to zero; waiting would only time out.
                pulumi.log.warn(f"GPU node group {group.name!r} has desiredSize 0: not verified", resource=self)
                continue
            app = f"timeslicing-check-{group.name}"
            self.deployments[group.name] = k8s.apps.v1.Deployment(
                f"{name}-{group.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=app,
                    namespace=self.namespace.metadata.name,
                    annotations={"pulumi.com/timeoutSeconds": str(AWAIT_TIMEOUT_SECONDS)},
                ),
                spec=verification_deployment_spec(group, args.settings.image, app),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "deployments": {g: d.metadata.name for g, d in self.deployments.items()},
            }
        )
