"""The plan: everything the library derives from a GPU node group's settings, pure (no Pulumi, no I/O).

``group`` (``plan_group`` -> the frozen ``GroupPlan``, the hub every component reads) and the pure
builders it calls: ``device_plugin`` (the device-plugin config file), ``boot`` (the node boot stage:
the toolkit isolation and the MIG layout, before kubelet), ``userdata`` (the user data each capacity
provider is sent), ``multinode`` (a managed multi-node group's launch template additions),
``placement`` (tolerations, affinity), ``asg`` (Cluster Autoscaler's ASG tags), ``repair`` (the
group's node repair policy); and ``karpenter`` (a Karpenter group's EC2NodeClass, NodePool and
NodeOverlay from its plan). It reads ``config/`` and ``catalog/`` only; the rules (``check/``) and
the components read it.
"""
