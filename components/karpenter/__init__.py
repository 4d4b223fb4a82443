"""Karpenter as the capacity provider of GPU node groups (issue 26): the per-group objects
(``objects``: EC2NodeClass, NodePool, NodeOverlay from a group's plan)."""
