"""The plan: everything the library derives from a GPU node group's settings, pure (no Pulumi, no I/O).

``group`` (``plan_group`` -> the frozen ``GroupPlan``, the hub every component reads) and the pure
builders it calls: ``device_plugin`` (the device-plugin config file), ``boot`` (the node boot stage:
the toolkit isolation and the MIG layout, before kubelet), ``userdata`` (nodeadm NodeConfig, MIME),
``placement`` (tolerations, affinity), ``asg`` (Cluster Autoscaler's ASG tags), ``repair`` (the
group's node repair policy). It reads ``config/`` and ``catalog/`` only; the components read it and
declare.
"""
