"""The AWS EFA Kubernetes device plugin's chart, and what the AL2023 NVIDIA AMI already does for EFA.

Chart: ``aws-efa-k8s-device-plugin`` v0.5.30 (appVersion and image tag v0.5.20) of the ``eks-charts``
Helm repository (https://aws.github.io/eks-charts), aws/eks-charts 5239609242f3430be50fb0b714a24d3ef2b47983
``stable/aws-efa-k8s-device-plugin``. What the library relies on there (tests/test_efa_plugin.py
states each as a literal):

* ``templates/daemonset.yaml``: one DaemonSet (``hostNetwork``, privileged, ``system-node-critical``,
  tolerates ``CriticalAddonsOnly`` plus ``.Values.tolerations``), with a required node affinity built
  from ``supportedInstanceLabels``: one term per key, ``<key> In <values>``, the last term also
  ``eks.amazonaws.com/compute-type NotIn [auto]``. ``nodeSelector`` is added as given.
* ``values.yaml``: ``supportedInstanceLabels.keys: [node.kubernetes.io/instance-type]`` and the EFA
  instance types as values (every EFA type of our catalog is among them), ``tolerations: []``,
  ``nodeSelector: {}``; the image ``602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin``
  (``image.repository``; ``image.tag`` v0.5.20), one Region's registry: the library points it at
  the cluster's Region's (``image_repository``).
* The plugin advertises ``vpc.amazonaws.com/efa``, one per EFA device under ``/dev/infiniband``.

The AMI (awslabs/amazon-eks-ami v20260724): ``templates/al2023/variables-default.json`` sets
``enable_efa: "true"`` for every AL2023 build, NVIDIA included; ``templates/al2023/provisioners/
install-efa.sh`` then installs the EFA software with ``efa_installer.sh --minimal`` (the ``efa`` kernel
module and rdma-core: no libfabric, no Open MPI, so NCCL's libfabric and aws-ofi-nccl plugin come with
the workload's image) and keeps ``efa-nv-peermem`` on the NVIDIA AMI (GPUDirect RDMA between the GPUs
and EFA; it erases it only where ``ENABLE_ACCELERATOR`` is not ``nvidia``); ``limit-c-states.sh`` sets
``intel_idle.max_cstate=1 processor.max_cstate=1``. So an EFA node needs nothing in its user data:
the library adds none (tests/test_efa_plugin.py checks an EFA group's user data is the same group's
without EFA).
"""

from __future__ import annotations

CHART_REPOSITORY = "https://aws.github.io/eks-charts"
CHART_NAME = "aws-efa-k8s-device-plugin"
CHART_VERSION = "v0.5.30"
#: The release and its namespace (the chart's README installs it in kube-system).
RELEASE_NAME = "aws-efa-k8s-device-plugin"
NAMESPACE = "kube-system"
#: The chart's ``supportedInstanceLabels.keys`` default: its affinity's label.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

#: The chart's image, under each Region's Amazon EKS registry (the chart's default is us-west-2's).
IMAGE_PATH = "eks/aws-efa-k8s-device-plugin"
#: Amazon EKS's container image registry account per Region: "Amazon EKS replicates the images to a
#: repository in each Amazon EKS supported AWS Region. Your nodes can pull the container image over
#: the internet from any of the following registries. Alternatively, your nodes can pull the image
#: over Amazon's network if you created an interface VPC endpoint for Amazon ECR" (EKS User Guide,
#: add-ons-images, awsdocs/amazon-eks-user-guide 4d52b4d). The chart's default, us-west-2's registry,
#: is reached from another Region only over the internet: a private cluster (no NAT, ECR endpoints of
#: its own Region) cannot pull it. Every Region not named here uses 602401143452.
DEFAULT_REGISTRY_ACCOUNT = "602401143452"
REGISTRY_ACCOUNTS: dict[str, str] = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912",
    "ap-southeast-4": "491585149902",
    "ca-west-1": "761377655185",
    "cn-north-1": "918309763551",
    "cn-northwest-1": "961992271922",
    "eu-central-2": "900612956339",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "il-central-1": "066635153087",
    "me-central-1": "759879836304",
    "me-south-1": "558608220178",
    "us-gov-east-1": "151742754352",
    "us-gov-west-1": "013241004608",
}


def image_repository(region: str) -> str:
    """The plugin image's repository in ``region``'s Amazon EKS registry (``.amazonaws.com.cn`` in
    the China Regions, as the guide's table writes them)."""
    account = REGISTRY_ACCOUNTS.get(region, DEFAULT_REGISTRY_ACCOUNT)
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{domain}/{IMAGE_PATH}"
