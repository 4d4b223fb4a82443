"""The shared blocks the components declare with, on one floor below them (docs/architecture.md):
``helm`` (how every chart is installed), ``iam`` (node roles, partitions, access entries),
``managed`` (a launch template and its EKS managed node group), ``coverage`` (one gpu-operator per
cluster covers every GPU node group), ``podsecurity`` (the restricted pods the library runs) and
``jobs`` (how long Pulumi waits for a Job).
"""
