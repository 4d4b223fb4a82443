"""Stand-ins for upstream software the tests cannot run here, each built from that software's own
source, grammar or recorded output (never from what the library expects), refusing what it refuses:
the node's ``nvidia-smi`` and boot (``nvidia_smi``, ``nvidia_smi_grammar``, ``boot_node``), the API
server's admission and CRD validation (``admission``, ``crds``), the scheduler's node affinity
(``scheduling``), Karpenter's provisioning (``karpenter``), Cluster Autoscaler's template node
(``autoscaler``), the device plugin's config file and a failed GPU (``device_plugin``, ``gpu_failure``)."""
