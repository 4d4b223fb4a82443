"""Pulumi type tokens of the resources the tests look up in a run or a render document."""

from __future__ import annotations

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG_TAG = "aws:autoscaling/tag:Tag"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"

#: The Kubernetes objects the program declares directly (not through a chart): each type token's
#: apiVersion and kind, for validating the object against Kubernetes' schemas.
KINDS = {
    "kubernetes:core/v1:Namespace": ("v1", "Namespace"),
    "kubernetes:batch/v1:Job": ("batch/v1", "Job"),
    "kubernetes:core/v1:ConfigMap": ("v1", "ConfigMap"),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": ("networking.k8s.io/v1", "NetworkPolicy"),
}
