"""Review tools for a Pulumi program that uses these components: ``gpu-eks-review`` (``cli``).

Offline render of a stack (``render``, run by the simulated engine ``simulation``), the render diff
against a git ref or another stack (``diff``), the change-impact summary (``impact``: replacements,
node rolls, GPU pods rescheduled, device-plugin DaemonSet rolls) and the pull request comment.

Shipped in the wheel behind its own console entry point; the library never imports it (a test
checks), so ``import components`` stays as it was. It drives the Pulumi SDK's mocks and its
resource-monitor protocol, which are not a stable Pulumi API: it is tested at the exact ``pulumi``
version requirements.txt pins. This repository's ``python -m tooling render|diff`` use the same code
for its own stacks.
"""
