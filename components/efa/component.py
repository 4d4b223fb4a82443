"""``EfaDevicePlugin``: the AWS EFA Kubernetes device plugin (catalog/efa.py) on the EFA groups' nodes, so
pods request ``vpc.amazonaws.com/efa``. Declared by ``composites/declare.py`` only when a group has
``efa: true``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..blocks.helm import helm_release
from ..catalog import efa
from ..catalog.charts import EFA_DEVICE_PLUGIN
from ..plan.group import GroupPlan
from . import values

#: How long Helm waits for the DaemonSet (``helm.helm_release``: atomic, cleanup on failure).
RELEASE_TIMEOUT_SECONDS = 600


@dataclass
class EfaDevicePluginArgs:
    #: Every GPU group's plan (the EFA ones are picked here).
    plans: Sequence[GroupPlan]
    wait_for: Sequence[pulumi.Resource] = ()


class EfaDevicePlugin(pulumi.ComponentResource):
    """The EFA device plugin's Helm release in kube-system."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-eks:efa:EfaDevicePlugin", name, None, opts)
        # The image from the cluster's Region's EKS registry, not the chart's us-west-2 (catalog/efa.py);
        # in a Region the catalog does not name, the chart's default image and a warning.
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        self.values = {
            **values.efa_plugin_values(args.plans),
            "image": region.apply(self._image_values),
        }
        self.release = helm_release(
            f"{name}-release",
            EFA_DEVICE_PLUGIN,
            values=self.values,
            timeout_seconds=RELEASE_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        self.register_outputs({"releaseName": self.release.name, "chartVersion": EFA_DEVICE_PLUGIN.default})

    def _image_values(self, region: str) -> dict[str, str]:
        image = efa.image_values(region)
        if not image:
            pulumi.log.warn(efa.unknown_region_warning(region), resource=self)
        return image
