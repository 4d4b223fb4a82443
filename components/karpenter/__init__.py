"""Karpenter on a cluster (issue 26): the controller, its IAM, interruption queue and chart values. A
Karpenter group's own objects are built by ``plan/karpenter.py`` and declared by its ``GpuNodeGroup``."""
