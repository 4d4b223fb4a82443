"""The vision team's own Pulumi building blocks: a package named ``components``, as many Pulumi
projects have, beside the library (``gpu_eks``)."""
