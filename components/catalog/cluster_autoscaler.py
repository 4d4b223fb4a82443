"""Facts about Cluster Autoscaler (kubernetes/autoscaler) and its chart, and the EC2 Auto Scaling limits it meets."""

from __future__ import annotations

#: The chart is pinned in ``charts.CLUSTER_AUTOSCALER`` (its versions' values.yaml checked by
#: tests/test_autoscaler.py against ../shared/reference/cluster-autoscaler/<version>/values.yaml).

#: Cluster Autoscaler image tag per Kubernetes minor: the newest patch of the matching CA minor
#: (kubernetes/autoscaler tags ``cluster-autoscaler-1.xx.y``; CA's README asks for the CA minor
#: that matches the cluster's). Chart 9.59.0 defaults to v1.35.0 for every cluster, so the tag is
#: always set from this table. Tested against ../shared/reference/cluster-autoscaler/SOURCE.md.
AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    "1.32": "v1.32.7",
    "1.33": "v1.33.6",
    "1.34": "v1.34.5",
    "1.35": "v1.35.2",
    "1.36": "v1.36.1",
}

#: Tags per EC2 Auto Scaling group (Amazon EC2 Auto Scaling quota, "Tags per Auto Scaling group").
ASG_TAG_LIMIT = 50
#: Characters of an EC2 Auto Scaling tag key (botocore 1.44.5 ``autoscaling`` 2011-01-01, shape
#: ``TagKey``: max 128). CA's template tag of a label or taint is its prefix plus the key.
ASG_TAG_KEY_MAX_LENGTH = 128
#: Tags EKS puts on a managed node group's ASG besides CA's discovery tags: ``eks:cluster-name``,
#: ``eks:nodegroup-name`` and ``kubernetes.io/cluster/<cluster>`` (CA reads the ``eks:`` ones,
#: cloudprovider/aws/aws_manager.go ``extractLabelsFromAsg``).
EKS_OWN_ASG_TAGS = 3

#: Pods carrying this annotation are never evicted by a CA scale-down (CA FAQ, "What types of
#: pods can prevent CA from removing a node?").
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
